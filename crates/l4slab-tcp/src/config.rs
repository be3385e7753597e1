//! Endpoint parameters. Every default is the Linux default (or the RFC value
//! where Linux follows it), with its source next to it.
//!
//! The keys a scenario sets (`[flows.transport]`) are declared once, as
//! [`Param`]s in [`PARAMS`] (l4slab_core::param): name, kind and range,
//! default and its source, doc. [`TransportConfig::default`] takes their
//! defaults, `Configure` sets them by name, the scenario reads them with its
//! generic reader, and the table of `docs/scenarios.md#flowstransport` is
//! rendered from them (`tests/docs_params.rs`). `header_bytes`, `ecn`,
//! `accecn_option` and `ecn_fallback` are not scenario keys (the flow's
//! `ecn` sets `ecn`).

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_cc::EcnCodepoint;
use l4slab_core::param::{FromParam, Kind, Param, ParamValue, ECN_CODEPOINTS};
use l4slab_core::Dur;

/// ECN negotiation and feedback mode (RFC 3168 classic, RFC 9768 AccECN).
///
/// On a client this is what the SYN asks for; on a server the most it
/// accepts. The negotiated mode ([`crate::EndpointStats::ecn_mode`]) is the
/// lower of the two (RFC 9768 §3.1.1 Table 2 / Linux `tcp_ecn_rcv_synack`,
/// `tcp_ecn_rcv_syn`). See `docs/models/ecn.md`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum EcnMode {
    /// No ECN: SYN without ECE/CWR/AE, Not-ECT packets (Linux `tcp_ecn = 0`).
    #[default]
    #[serde(rename = "off")]
    Off,
    /// RFC 3168: SYN with ECE|CWR, SYN/ACK with ECE; ECE on ACKs from a CE
    /// arrival until a CWR arrives (Linux `tcp_ecn = 1`).
    #[serde(rename = "classic")]
    Classic,
    /// RFC 9768 Accurate ECN: SYN with AE|CWR|ECE, the ACE counter on every
    /// segment and the AccECN option with byte counters (Linux `tcp_ecn = 3`,
    /// `tcp_ecn_option = 2`).
    #[serde(rename = "accecn")]
    AccEcn,
}

impl EcnMode {
    /// Name as used in scenarios and results: `off`, `classic`, `accecn`.
    pub const fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "off",
            EcnMode::Classic => "classic",
            EcnMode::AccEcn => "accecn",
        }
    }
}

impl FromParam for RtoFormula {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "rfc6298" => RtoFormula::Rfc6298,
            "linux" => RtoFormula::Linux,
            other => panic!("{other} is not an RTO formula"),
        }
    }
}

/// Bounds on `mss` over TCP: RFC 879's minimum (576 - 40) to a 9000-byte
/// jumbo frame's payload.
pub const MSS_RANGE: (i64, i64) = (536, 9000);

pub const MSS: Param = Param {
    name: "mss",
    aliases: &[],
    linux: "mss_cache",
    // Read by the scenario's own code: its range depends on `protocol`.
    kind: Kind::Custom(
        "bytes 536..=9000: an integer or a size (`\"1448B\"`); over QUIC the maximum datagram size",
    ),
    default: ParamValue::Int(1448),
    source: "1500 MTU − 20 IPv4 − 20 TCP − 12 timestamps (Linux `mss_cache`)",
    doc: "payload bytes per segment",
};

pub const INITIAL_WINDOW: Param = Param {
    name: "initial_window",
    aliases: &[],
    linux: "TCP_INIT_CWND",
    kind: Kind::Int {
        min: 1,
        max: u32::MAX as i64,
    },
    default: ParamValue::Int(10),
    source: "RFC 6928 §2, Linux `TCP_INIT_CWND`",
    doc: "initial congestion window in segments (given to the controller)",
};

pub const DELAYED_ACK: Param = Param {
    name: "delayed_ack",
    aliases: &[],
    linux: "TCP_QUICKACK",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "RFC 5681 §4.2 SHOULD; Linux default (no `TCP_QUICKACK`)",
    doc:
        "delayed ACKs (RFC 1122 §4.2.3.2): every second full segment or after `delayed_ack_timeout`",
};

pub const DELAYED_ACK_TIMEOUT: Param = Param {
    name: "delayed_ack_timeout",
    aliases: &[],
    linux: "TCP_DELACK_MIN",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Dur(Dur::from_millis(40)),
    source: "Linux `TCP_DELACK_MIN` (HZ/25)",
    doc: "longest ACK delay",
};

pub const MIN_RTO: Param = Param {
    name: "min_rto",
    aliases: &[],
    linux: "TCP_RTO_MIN",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Dur(Dur::from_millis(200)),
    source: "Linux `TCP_RTO_MIN` (RFC 6298 §2.4 says 1 s)",
    doc: "minimum retransmission timeout",
};

pub const RTO_FORMULA: Param = Param {
    name: "rto_formula",
    aliases: &[],
    linux: "__tcp_set_rto",
    kind: Kind::Choice(&["rfc6298", "linux"]),
    default: ParamValue::Choice("linux"),
    source: "Linux `__tcp_set_rto`",
    doc: "how the RTO follows the RTT: `\"linux\"` = `SRTT + max(min_rto, 4·RTTVAR)`, never closer than `min_rto` to the RTT, the timer restarted when the first unacknowledged segment is retransmitted; `\"rfc6298\"` = RFC 6298 §2 `max(min_rto, SRTT + 4·RTTVAR)` and §5's timer rules",
};

pub const TLP: Param = Param {
    name: "tlp",
    aliases: &[],
    linux: "tcp_early_retrans",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "Linux `tcp_early_retrans = 3`",
    doc: "tail loss probe (RFC 8985 §7): about 2·SRTT after the last send, one segment goes out to reveal a tail loss without waiting for the RTO",
};

pub const FRTO: Param = Param {
    name: "frto",
    aliases: &[],
    linux: "tcp_frto",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "Linux `tcp_frto = 2`",
    doc: "F-RTO (RFC 5682 §3, SACK-enhanced): after a timeout, new data before more retransmissions, and the timeout undone if it was spurious",
};

pub const UNDO: Param = Param {
    name: "undo",
    aliases: &[],
    linux: "tcp_try_undo_*",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "Linux: always on (`tcp_try_undo_*`)",
    doc: "undo window reductions found spurious by D-SACK (RFC 3708) or the timestamp echo (RFC 3522)",
};

pub const DSACK: Param = Param {
    name: "dsack",
    aliases: &[],
    linux: "tcp_dsack",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "Linux `tcp_dsack = 1`",
    doc: "the receiver reports duplicate segments with D-SACK (RFC 2883)",
};

pub const PACING: Param = Param {
    name: "pacing",
    aliases: &[],
    linux: "sch_fq",
    kind: Kind::Flag,
    default: ParamValue::Flag(false),
    source: "Linux paces only with `sch_fq` or a controller that asks (BBR)",
    doc: "pace transmissions (Linux internal pacing: 200 % of cwnd/srtt in slow start, 120 % after) when the controller sets no rate",
};

/// A socket buffer's kind: a size with its unit, at least 1 B (the scenario
/// then asks for at least one segment).
const BUFFER: Kind = Kind::Size {
    min: 1,
    max: u64::MAX,
};

pub const SEND_BUFFER: Param = Param {
    name: "send_buffer",
    aliases: &[],
    linux: "tcp_wmem",
    kind: BUFFER,
    default: ParamValue::Int(4 << 20),
    source: "Linux `tcp_wmem[2]` (the autotuning ceiling)",
    doc: "send buffer (`SO_SNDBUF`): bytes written but not yet acknowledged; at least one segment",
};

pub const NOTSENT_LOWAT: Param = Param {
    name: "notsent_lowat",
    aliases: &[],
    linux: "tcp_notsent_lowat",
    kind: BUFFER,
    default: ParamValue::Unset {
        example: "\"128KiB\"",
    },
    source: "Linux `tcp_notsent_lowat` = UINT_MAX (off)",
    doc: "not-sent low-water mark (`TCP_NOTSENT_LOWAT`): writable only while fewer unsent bytes are queued; at most `send_buffer`",
};

pub const RECEIVE_BUFFER: Param = Param {
    name: "receive_buffer",
    aliases: &[],
    linux: "tcp_rmem",
    kind: BUFFER,
    default: ParamValue::Int(32 << 20),
    source: "Linux `tcp_rmem[2]` (the autotuning ceiling: 32 MiB on Linux 6.18)",
    doc: "receive buffer (`SO_RCVBUF`), which bounds the advertised window; at least one segment",
};

pub const ECN_CODEPOINT: Param = Param {
    name: "ecn_codepoint",
    aliases: &[],
    linux: "TCP_CONG_ECT_1_NEGOTIATION",
    kind: Kind::Choice(ECN_CODEPOINTS),
    default: ParamValue::Unset {
        example: "\"ect1\"",
    },
    source: "the controller's codepoint (Linux `TCP_CONG_ECT_1_NEGOTIATION`)",
    doc: "IP-ECN field of data once ECN is negotiated, instead of the controller's (e.g. a classic controller sending ECT(1))",
};

pub const FASTOPEN: Param = Param {
    name: "fastopen",
    aliases: &[],
    linux: "tcp_fastopen",
    kind: Kind::Flag,
    default: ParamValue::Flag(false),
    source: "Linux `tcp_fastopen = 1`: the client side, and only for an app that asks",
    doc: "TCP Fast Open (RFC 7413; [models/transport.md](models/transport.md#tcp-fast-open-rfc-7413)): the client's first SYN asks for a cookie, later SYNs carry the first write; the server accepts it",
};

/// The scenario keys of [`TransportConfig`] (`[flows.transport]`), in the
/// order the resolved scenario records them.
pub const PARAMS: &[Param] = &[
    MSS,
    INITIAL_WINDOW,
    DELAYED_ACK,
    DELAYED_ACK_TIMEOUT,
    MIN_RTO,
    RTO_FORMULA,
    TLP,
    FRTO,
    UNDO,
    DSACK,
    PACING,
    SEND_BUFFER,
    NOTSENT_LOWAT,
    RECEIVE_BUFFER,
    ECN_CODEPOINT,
    FASTOPEN,
];

/// How the retransmission timeout is computed from SRTT and RTTVAR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoFormula {
    /// RFC 6298 §2.3-§2.4: `RTO = max(min_rto, SRTT + max(G, 4*RTTVAR))`;
    /// the timer restarts only as RFC 6298 §5.1 and §5.3 say (a send with no
    /// timer running, an ACK of new data).
    Rfc6298,
    /// Linux `__tcp_set_rto`: `RTO = SRTT + max(min_rto, 4*RTTVAR)` — the
    /// variance term itself is floored at `min_rto` (Linux keeps `rttvar_us >=
    /// tcp_rto_min` through `mdev_max_us`), so the RTO is never closer than
    /// `min_rto` to SRTT. Approximation: Linux uses the per-RTT maximum of
    /// its mean deviation, decayed; this uses RFC 6298's RTTVAR. With it,
    /// Linux's timer rules: retransmitting the first unacknowledged segment
    /// restarts the timer (`tcp_xmit_retransmit_queue` → `tcp_reset_xmit_timer`).
    #[default]
    Linux,
}

/// Parameters of one [`crate::Endpoint`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    /// Sender maximum segment size (payload bytes per segment).
    pub mss: u32,
    /// Initial congestion window in segments. The controller owns cwnd; this
    /// is the value whoever builds the controller should give it (e.g.
    /// `RenoConfig::initial_window_segments`).
    pub initial_window: u32,
    /// Delay ACKs (RFC 5681 §4.2); `false` ACKs every segment.
    pub delayed_ack: bool,
    /// Longest an ACK is delayed.
    pub delayed_ack_timeout: Dur,
    /// Lower bound on the retransmission timeout (see `rto_formula`).
    pub min_rto: Dur,
    /// RFC 6298 or Linux RTO arithmetic and timer rules.
    pub rto_formula: RtoFormula,
    /// Tail loss probe (RFC 8985 §7; Linux `tcp_early_retrans = 3`): 2·SRTT
    /// after the last send with nothing acknowledged, send one new segment or
    /// resend the last one, so a tail loss is repaired by SACK recovery
    /// instead of a timeout.
    pub tlp: bool,
    /// F-RTO (RFC 5682 §3, SACK-enhanced; Linux `tcp_frto = 2`): after a
    /// timeout, send new data before retransmitting more, and undo the
    /// reduction if never-retransmitted data is acknowledged.
    pub frto: bool,
    /// Undo spurious reductions (Linux `tcp_try_undo_*`): by D-SACK (every
    /// retransmission of the episode reported as a duplicate, RFC 2883 /
    /// RFC 3708) or by the timestamp echo (Eifel, RFC 3522).
    pub undo: bool,
    /// The receiver reports duplicate segments with D-SACK (RFC 2883;
    /// Linux `tcp_dsack = 1`).
    pub dsack: bool,
    /// Pace data at the default rate (see [`crate::Endpoint::pacing_rate`])
    /// when the controller does not set one; a controller rate is always used.
    pub pacing: bool,
    /// Send buffer: bytes written but not yet acknowledged, at most.
    pub send_buffer: u64,
    /// `TCP_NOTSENT_LOWAT`: the socket is writable only while fewer unsent
    /// bytes than this are queued; `None` = off.
    pub notsent_lowat: Option<u64>,
    /// Receive buffer. The app reads in-order data at once, so the advertised
    /// window is this minus the out-of-order bytes held for reassembly.
    pub receive_buffer: u64,
    /// IP + TCP header bytes of every segment, options except SACK included.
    pub header_bytes: u32,
    /// ECN mode requested (client) or accepted (server).
    pub ecn: EcnMode,
    /// IP-ECN codepoint of data packets once ECN is negotiated, instead of
    /// the controller's [`CongestionControl::ecn_codepoint`]
    /// (`Some(NotEct)` negotiates feedback but sends Not-ECT).
    ///
    /// [`CongestionControl::ecn_codepoint`]: l4slab_cc::CongestionControl::ecn_codepoint
    pub ecn_codepoint: Option<EcnCodepoint>,
    /// Send the AccECN option with the byte counters on pure ACKs (Linux
    /// `tcp_ecn_option = 2`, "full"); `false` feeds back the ACE field only
    /// (`tcp_ecn_option = 0`).
    pub accecn_option: bool,
    /// Detect broken ECN paths and fall back (Linux `tcp_ecn_fallback = 1`):
    /// RFC 3168 §6.1.1.1 SYN fallback, validation of the feedback (bleaching,
    /// re-marking, black hole). `false` keeps ECN on whatever happens.
    pub ecn_fallback: bool,
    /// TCP Fast Open (RFC 7413; `crate::fastopen`, docs/models/transport.md).
    /// A client asks for a cookie on its first SYN and, once it holds one,
    /// sends its first write in the SYN (Linux `TCP_FASTOPEN_CONNECT` or
    /// `sendto(MSG_FASTOPEN)` with sysctl `net.ipv4.tcp_fastopen` bit 0x1);
    /// a server issues cookies and accepts data in a SYN with a valid one
    /// (the `TCP_FASTOPEN` listen option with bit 0x2). Off: a plain SYN;
    /// a server ignores the option, so the client falls back.
    pub fastopen: bool,
}

impl Default for TransportConfig {
    fn default() -> Self {
        let d = |p: &Param| p.default;
        TransportConfig {
            mss: FromParam::from_param(d(&MSS)),
            initial_window: FromParam::from_param(d(&INITIAL_WINDOW)),
            delayed_ack: d(&DELAYED_ACK).flag(),
            delayed_ack_timeout: d(&DELAYED_ACK_TIMEOUT).dur(),
            min_rto: d(&MIN_RTO).dur(),
            rto_formula: FromParam::from_param(d(&RTO_FORMULA)),
            tlp: d(&TLP).flag(),
            frto: d(&FRTO).flag(),
            undo: d(&UNDO).flag(),
            dsack: d(&DSACK).flag(),
            pacing: d(&PACING).flag(),
            send_buffer: FromParam::from_param(d(&SEND_BUFFER)),
            notsent_lowat: FromParam::from_param(d(&NOTSENT_LOWAT)),
            receive_buffer: FromParam::from_param(d(&RECEIVE_BUFFER)),
            header_bytes: 52, // IPv4 20 + TCP 20 + timestamps option 12 (RFC 7323 §3, aligned)
            ecn: EcnMode::Off, // Linux tcp_ecn = 2 answers but never asks; see docs/models/ecn.md
            ecn_codepoint: FromParam::from_param(d(&ECN_CODEPOINT)),
            accecn_option: true, // Linux tcp_ecn_option = 2 (TCP_ACCECN_OPTION_FULL)
            ecn_fallback: true,  // Linux tcp_ecn_fallback = 1
            fastopen: d(&FASTOPEN).flag(),
        }
    }
}

l4slab_core::param_fields!(TransportConfig {
    mss = MSS,
    initial_window = INITIAL_WINDOW,
    delayed_ack = DELAYED_ACK,
    delayed_ack_timeout = DELAYED_ACK_TIMEOUT,
    min_rto = MIN_RTO,
    rto_formula = RTO_FORMULA,
    tlp = TLP,
    frto = FRTO,
    undo = UNDO,
    dsack = DSACK,
    pacing = PACING,
    send_buffer = SEND_BUFFER,
    notsent_lowat = NOTSENT_LOWAT,
    receive_buffer = RECEIVE_BUFFER,
    ecn_codepoint = ECN_CODEPOINT,
    fastopen = FASTOPEN,
});

/// Why a [`TransportConfig`] is unusable (a key path for the scenario layer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportConfigError {
    ZeroMss,
    ZeroInitialWindow,
    /// `receive_buffer` must hold at least two full segments, or the delayed
    /// ACK rule ("every second full-sized segment") could never fire.
    ReceiveBufferTooSmall {
        min: u64,
    },
    /// `send_buffer` must hold at least one full segment.
    SendBufferTooSmall {
        min: u64,
    },
    ZeroDelayedAckTimeout,
    ZeroMinRto,
}

impl fmt::Display for TransportConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroMss => write!(f, "mss: must be at least 1 byte"),
            Self::ZeroInitialWindow => write!(f, "initial_window: must be at least 1 segment"),
            Self::ReceiveBufferTooSmall { min } => {
                write!(
                    f,
                    "receive_buffer: must be at least 2 segments ({min} bytes)"
                )
            }
            Self::SendBufferTooSmall { min } => {
                write!(f, "send_buffer: must be at least 1 segment ({min} bytes)")
            }
            Self::ZeroDelayedAckTimeout => write!(f, "delayed_ack_timeout: must be positive"),
            Self::ZeroMinRto => write!(f, "min_rto: must be positive"),
        }
    }
}

impl std::error::Error for TransportConfigError {}

impl TransportConfig {
    pub fn validate(&self) -> Result<(), TransportConfigError> {
        let mss = u64::from(self.mss);
        if mss == 0 {
            return Err(TransportConfigError::ZeroMss);
        }
        if self.initial_window == 0 {
            return Err(TransportConfigError::ZeroInitialWindow);
        }
        if self.receive_buffer < 2 * mss {
            return Err(TransportConfigError::ReceiveBufferTooSmall { min: 2 * mss });
        }
        if self.send_buffer < mss {
            return Err(TransportConfigError::SendBufferTooSmall { min: mss });
        }
        if self.delayed_ack && self.delayed_ack_timeout.is_zero() {
            return Err(TransportConfigError::ZeroDelayedAckTimeout);
        }
        if self.min_rto.is_zero() {
            return Err(TransportConfigError::ZeroMinRto);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_a_full_segment_is_1500_bytes() {
        let c = TransportConfig::default();
        c.validate().unwrap();
        assert_eq!(c.mss + c.header_bytes, 1500);
    }

    #[test]
    fn every_declared_default_is_in_range_and_settable_by_name() {
        use l4slab_core::param::Configure;
        let mut c = TransportConfig::default();
        for p in PARAMS {
            p.check(p.default).unwrap();
            assert!(c.set(p.name, p.default), "{}", p.name);
        }
        assert_eq!(c, TransportConfig::default());
        assert!(c.set("rto_formula", ParamValue::Choice("rfc6298")));
        assert!(c.set("ecn_codepoint", ParamValue::Choice("ect1")));
        assert_eq!(c.rto_formula, RtoFormula::Rfc6298);
        assert_eq!(c.ecn_codepoint, Some(EcnCodepoint::Ect1));
        assert!(!c.set("header_bytes", ParamValue::Int(40)));
    }

    #[test]
    fn bad_values_name_their_key() {
        let c = TransportConfig {
            receive_buffer: 100,
            ..TransportConfig::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "receive_buffer: must be at least 2 segments (2896 bytes)"
        );
    }
}
