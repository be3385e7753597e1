//! Endpoint parameters. Every default is the Linux default (or the RFC value
//! where Linux follows it), with its source next to it.

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_cc::EcnCodepoint;
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
        TransportConfig {
            mss: 1448,          // 1500 MTU - 20 IPv4 - 20 TCP - 12 timestamps (Linux mss_cache)
            initial_window: 10, // RFC 6928 §2, Linux TCP_INIT_CWND
            delayed_ack: true,  // RFC 5681 §4.2 SHOULD; Linux default (no TCP_QUICKACK)
            delayed_ack_timeout: Dur::from_millis(40), // Linux TCP_DELACK_MIN (HZ/25)
            min_rto: Dur::from_millis(200), // Linux TCP_RTO_MIN (RFC 6298 §2.4 says 1 s)
            rto_formula: RtoFormula::Linux, // Linux __tcp_set_rto (RFC 6298 selectable)
            tlp: true,          // Linux tcp_early_retrans = 3 (RFC 8985 §7 TLP on)
            frto: true,         // Linux tcp_frto = 2
            undo: true,         // Linux: undo is always on (tcp_try_undo_*)
            dsack: true,        // Linux tcp_dsack = 1
            pacing: false,      // Linux paces only with sch_fq or a CC that asks (BBR)
            send_buffer: 4 << 20, // Linux tcp_wmem[2] = 4 MiB (autotuning ceiling)
            notsent_lowat: None, // Linux tcp_notsent_lowat = UINT_MAX (off)
            receive_buffer: 6 << 20, // Linux tcp_rmem[2] = 6 MiB (autotuning ceiling)
            header_bytes: 52,   // IPv4 20 + TCP 20 + timestamps option 12 (RFC 7323 §3, aligned)
            ecn: EcnMode::Off,  // Linux tcp_ecn = 2 answers but never asks; see docs/models/ecn.md
            ecn_codepoint: None, // the controller's choice (Linux TCP_CONG_ECT_1_NEGOTIATION)
            accecn_option: true, // Linux tcp_ecn_option = 2 (TCP_ACCECN_OPTION_FULL)
            ecn_fallback: true, // Linux tcp_ecn_fallback = 1
            fastopen: false, // Linux tcp_fastopen = 1: client only, and only for an app that asks
        }
    }
}

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
