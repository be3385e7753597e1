//! TCP Fast Open (RFC 7413, Experimental): data in the SYN, delivered by the
//! server before the 3-way handshake completes, for a client that holds a
//! cookie the server gave it on an earlier connection. The protocol steps are
//! in `endpoint/handshake.rs`; this file holds the option, the cookie, the
//! cache the connections between two hosts share, and the per-connection
//! state machine (`docs/models/transport.md`, "TCP Fast Open").
//!
//! * Option (RFC 7413 §4.1.1, Linux `TCPOPT_FASTOPEN`): kind 34, length,
//!   cookie. An empty option is a cookie request. Cookies are
//!   [`FASTOPEN_COOKIE_BYTES`] = 8 B as Linux generates them
//!   (`TCP_FASTOPEN_COOKIE_SIZE`; the RFC allows 4-16). On the wire the option
//!   is padded with NOPs to 4 bytes as Linux writes it (`tcp_options_write`:
//!   4 B for a request, 12 B with a cookie).
//! * Cookie (RFC 7413 §4.1.2): the server's MAC of the client's address. Here
//!   a deterministic value per (server host, client host) that whoever owns
//!   the [`FastOpenCache`] chooses ([`FastOpenCookie::derive`]): validating
//!   it is an equality test, no key rotation.
//! * Cache (RFC 7413 §4.1.3: "the client should cache at most one (most
//!   recently received) cookie per client and server IP address pair"; Linux
//!   keeps it in the `tcp_metrics` entry of the destination,
//!   `tcp_fastopen_cache_get` / `tcp_fastopen_cache_set`): one
//!   [`FastOpenCache`] per (client host, server host) pair, owned by the
//!   driver and lent to the endpoint in [`crate::EndpointCtx::fastopen`],
//!   because it outlives the connection (the endpoint keeps no reference
//!   between calls, so it stays `Send` and sans-IO). The same entry holds
//!   the cookie the server issues to that client (its "key"), so that a
//!   driver with one cache per host pair needs nothing else.
//!
//! Not modelled: the cached MSS (the model's MSS is fixed per flow), the
//! experimental option (kind 254, magic 0xF989), cookie-less TFO (sysctl
//! flags 0x4 / 0x200), the server's pending-TFO limit (`fastopenq.max_qlen`),
//! replay protection (there are no duplicate SYNs from old connections in a
//! run), Linux's active-side blackhole detection
//! (`tcp_fastopen_active_should_disable`) and its negative caching of SYN
//! losses (`syn_loss` in `tcp_fastopen_cache_set`).

use core::fmt;

use l4slab_core::Time;

/// TCP option kind of Fast Open (RFC 7413 §4.1.1, Linux `TCPOPT_FASTOPEN`).
pub const TCPOPT_FASTOPEN: u8 = 34;
/// Bytes of a cookie as Linux generates it (`TCP_FASTOPEN_COOKIE_SIZE`;
/// RFC 7413 §4.1.1 allows `TCP_FASTOPEN_COOKIE_MIN` = 4 to `..._MAX` = 16).
pub const FASTOPEN_COOKIE_BYTES: usize = 8;
/// Linux `MAX_TCP_OPTION_SPACE`: the option space `tcp_send_syn_data`
/// reserves out of the SYN's data room.
pub const MAX_TCP_OPTION_SPACE: u32 = 40;

/// A Fast Open cookie ([`FASTOPEN_COOKIE_BYTES`] bytes, as on the wire).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FastOpenCookie(pub [u8; FASTOPEN_COOKIE_BYTES]);

impl FastOpenCookie {
    /// A deterministic stand-in for the server's MAC of the client address
    /// (RFC 7413 §4.1.2, Linux `tcp_fastopen_cookie_gen` with SipHash): a
    /// fixed mix (SplitMix64's finalizer) of the two hosts' identifiers. The
    /// same pair always gets the same cookie; no random draw is consumed.
    pub fn derive(server: u64, client: u64) -> Self {
        let mut z = server
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(client)
            .wrapping_add(0x6A09_E667_F3BC_C909);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        FastOpenCookie((z ^ (z >> 31)).to_be_bytes())
    }
}

impl fmt::Debug for FastOpenCookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The Fast Open option of a SYN or SYN/ACK (RFC 7413 §4.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastOpenOption {
    /// An empty option: the client asks for a cookie (RFC 7413 §4.2.1).
    Request,
    /// A cookie: on a SYN the client's, on a SYN/ACK the one the server
    /// issues.
    Cookie(FastOpenCookie),
}

impl FastOpenOption {
    /// The cookie bytes (none for a request).
    pub fn cookie_bytes(&self) -> &[u8] {
        match self {
            FastOpenOption::Request => &[],
            FastOpenOption::Cookie(c) => &c.0,
        }
    }

    /// Bytes on the wire: kind, length, cookie, then NOPs to a multiple of 4
    /// (Linux `tcp_syn_options`: `need = (TCPOLEN_FASTOPEN_BASE + len + 3) & ~3`):
    /// 4 B for a request, 12 B with an 8-byte cookie.
    pub fn wire_bytes(&self) -> u32 {
        (2 + self.cookie_bytes().len() as u32).div_ceil(4) * 4
    }
}

/// What the connections between one client host and one server host share
/// (module documentation): the client's cached cookie and the cookie the
/// server issues to this client. Deterministic; a new run starts with a new
/// cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FastOpenCache {
    cached: Option<FastOpenCookie>,
    issued: FastOpenCookie,
}

impl FastOpenCache {
    /// An empty client cache; the server of the pair issues `issued`.
    pub fn new(issued: FastOpenCookie) -> Self {
        FastOpenCache {
            cached: None,
            issued,
        }
    }

    /// Client: the cookie cached for this server (Linux `tcp_fastopen_cache_get`).
    pub fn cookie(&self) -> Option<FastOpenCookie> {
        self.cached
    }

    /// Client: remember (or, with `None`, forget) the server's cookie. The
    /// endpoint stores the cookie of every SYN/ACK that carries one (Linux
    /// `tcp_fastopen_cache_set`: only a cookie replaces the cached one); a
    /// test may plant a stale one.
    pub fn set_cookie(&mut self, cookie: Option<FastOpenCookie>) {
        self.cached = cookie;
    }

    /// Server: the cookie it issues to, and accepts from, this client
    /// (Linux `tcp_fastopen_cookie_gen`, `tcp_fastopen_cookie_gen_check`).
    pub fn issued(&self) -> FastOpenCookie {
        self.issued
    }
}

impl Default for FastOpenCache {
    fn default() -> Self {
        FastOpenCache::new(FastOpenCookie::derive(0, 0))
    }
}

/// What Fast Open did on a connection (in [`crate::EndpointStats::fastopen`];
/// the Linux MIB counter in brackets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FastOpenOutcome {
    /// Fast Open not used (off, or a server that got no Fast Open option).
    #[default]
    NotUsed,
    /// Client: the SYN asked for a cookie; none came back (a server
    /// without Fast Open, or the SYN/ACK that carried it was a retransmission).
    CookieRequested,
    /// Client: the SYN asked for a cookie and the SYN/ACK brought one.
    CookieReceived,
    /// Client: the SYN carried a cookie and its data was acknowledged by the
    /// SYN/ACK (`TCPFastOpenActive`).
    SynDataAcked,
    /// Client: the SYN carried a cookie but the SYN/ACK acknowledged only the
    /// SYN (a server without Fast Open, a rejected cookie, or a lost SYN):
    /// the data was sent again after the handshake (`TCPFastOpenActiveFail`).
    SynDataNotAcked,
    /// Server: answered a cookie request with a cookie (`TCPFastOpenCookieReqd`).
    CookieIssued,
    /// Server: the SYN's cookie was valid: its data went to the application
    /// before the handshake completed (`TCPFastOpenPassive`).
    Accepted,
    /// Server: the SYN's cookie was invalid: its data was dropped and the
    /// SYN/ACK carried a valid cookie (`TCPFastOpenPassiveFail`).
    Rejected,
}

impl FastOpenOutcome {
    /// Name in results: `not_used`, `cookie_requested`, ...
    pub const fn name(self) -> &'static str {
        match self {
            FastOpenOutcome::NotUsed => "not_used",
            FastOpenOutcome::CookieRequested => "cookie_requested",
            FastOpenOutcome::CookieReceived => "cookie_received",
            FastOpenOutcome::SynDataAcked => "syn_data_acked",
            FastOpenOutcome::SynDataNotAcked => "syn_data_not_acked",
            FastOpenOutcome::CookieIssued => "cookie_issued",
            FastOpenOutcome::Accepted => "accepted",
            FastOpenOutcome::Rejected => "rejected",
        }
    }
}

/// One connection's Fast Open state: the handshake steps of RFC 7413 §4.2,
/// each variant with what it needs. Changed only through
/// [`FastOpen::transition`], which asserts the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FastOpen {
    /// Not (or no longer) taking part.
    Off,
    /// Client with a cached cookie: `connect` returned at once and the SYN
    /// waits for the first write (Linux `tcp_fastopen_defer_connect`), at
    /// the latest until `until` (the same instant: see `handshake.rs`).
    Deferred { cookie: FastOpenCookie, until: Time },
    /// Client: the first SYN left with `option` and `data` payload bytes.
    SynSent { option: FastOpenOption, data: u32 },
    /// Server: the first SYN/ACK offers `cookie` (a cookie request, or an
    /// invalid cookie).
    Offer { cookie: FastOpenCookie },
    /// Server: the SYN's cookie was valid; data may be sent in SYN-RECEIVED.
    Accepted,
    /// Client after the SYN/ACK: new data below `resend_until` was already
    /// sent in the SYN and not acknowledged (it is sent again, counted as a
    /// retransmission). Server after the handshake.
    Done { resend_until: u64 },
}

impl FastOpen {
    const fn name(self) -> &'static str {
        match self {
            FastOpen::Off => "off",
            FastOpen::Deferred { .. } => "deferred",
            FastOpen::SynSent { .. } => "syn_sent",
            FastOpen::Offer { .. } => "offer",
            FastOpen::Accepted => "accepted",
            FastOpen::Done { .. } => "done",
        }
    }

    fn may_enter(self, next: FastOpen) -> bool {
        use FastOpen::*;
        matches!(
            (self, next),
            (Off, Deferred { .. })
                | (Off, SynSent { .. })
                | (Deferred { .. }, SynSent { .. })
                | (SynSent { .. }, Done { .. })
                | (Off, Offer { .. })
                | (Off, Accepted)
                | (Offer { .. }, Done { .. })
                | (Accepted, Done { .. })
        )
    }

    /// The one place the state changes (a wrong edge is a bug).
    pub fn transition(&mut self, next: FastOpen) {
        assert!(
            self.may_enter(next),
            "illegal Fast Open transition {} -> {}",
            self.name(),
            next.name()
        );
        *self = next;
    }
}

/// Payload bytes a SYN may carry (Linux `tcp_send_syn_data`): the MSS of
/// the path MTU without options (`__tcp_mtu_to_mss`: MTU - IP - 20 B TCP,
/// here `mss` plus the timestamps' share of `header_bytes`), less
/// [`MAX_TCP_OPTION_SPACE`] "for middleboxes that add private TCP options":
/// 1460 - 40 = 1420 B on a 1500 B path.
pub(crate) fn syn_data_space(mss: u32, header_bytes: u32) -> u64 {
    // header_bytes = IP 20 + TCP 20 + options; mss + header_bytes = the MTU.
    let mtu = u64::from(mss) + u64::from(header_bytes);
    mtu.saturating_sub(40 + u64::from(MAX_TCP_OPTION_SPACE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_sizes_as_linux_pads_them() {
        assert_eq!(FastOpenOption::Request.wire_bytes(), 4);
        let c = FastOpenCookie::derive(1, 2);
        assert_eq!(FastOpenOption::Cookie(c).wire_bytes(), 12);
        assert_eq!(FastOpenOption::Cookie(c).cookie_bytes().len(), 8);
        // 1500 B MTU: 1460 - 40.
        assert_eq!(syn_data_space(1448, 52), 1420);
    }

    #[test]
    fn cookies_are_per_pair_and_deterministic() {
        assert_eq!(FastOpenCookie::derive(1, 2), FastOpenCookie::derive(1, 2));
        assert_ne!(FastOpenCookie::derive(1, 2), FastOpenCookie::derive(2, 1));
        assert_ne!(FastOpenCookie::derive(0, 1), FastOpenCookie::derive(0, 2));
    }

    #[test]
    #[should_panic(expected = "illegal Fast Open transition done -> accepted")]
    fn an_illegal_edge_panics() {
        let mut s = FastOpen::Done { resend_until: 1 };
        s.transition(FastOpen::Accepted);
    }
}
