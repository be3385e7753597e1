//! Congestion controllers.
//!
//! One module per algorithm, named after the Linux `tcp_congestion_control`
//! name (`reno`, `cubic`, `dctcp`, `prague`, `bbr`, `bbr3`), registered by
//! one line of [`registry::KINDS`]; what they share is in `cong` (Linux
//! `tcp_cong.c`: slow start, additive increase, Reno's halving and undo, the
//! checked state transition). Controllers are pure state machines: the
//! transport calls them with events and a [`CcCtx`]; they never read clocks,
//! sockets or global RNGs. All windows are in **bytes**.

pub mod bbr;
pub(crate) mod cong;
pub mod cubic;
pub mod dctcp;
pub mod hystart;
pub mod hystart_linux;
pub mod options;
pub mod pacing;
pub mod param;
pub mod prague;
pub mod rate;
pub mod registry;
pub mod reno;
pub mod testing;

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, Tracer};

pub use bbr::{Bbr, Bbr3, Bbr3Config, BbrConfig};
pub use cong::WindowConfigError;
pub use cubic::{Cubic, CubicConfig, CubicConfigError, CubicStats, HyStartKind};
pub use dctcp::{Dctcp, DctcpConfig, DctcpConfigError, DctcpStats};
pub use options::CcOptions;
pub use param::{Param, ParamError, ParamValue};
pub use prague::{EcnFallback, Prague, PragueConfig, PragueConfigError, PragueStats, RttScaling};
pub use registry::{CcKind, LINUX_DEFAULT_CC, SCENARIO_DEFAULT_CC};
pub use reno::{Reno, RenoConfig, RenoConfigError, RenoStats};

/// Which ECN codepoint a controller wants on its data packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnCodepoint {
    /// Not-ECT: the controller does not understand ECN.
    #[default]
    NotEct,
    /// ECT(0): classic RFC 3168 response (one reduction per RTT).
    Ect0,
    /// ECT(1): L4S scalable response (RFC 9331); needs accurate feedback.
    Ect1,
}

/// A codepoint declared as a [`l4slab_core::param::Kind::Choice`] of
/// [`l4slab_core::param::ECN_CODEPOINTS`] (a transport's `ecn_codepoint`).
impl l4slab_core::param::FromParam for EcnCodepoint {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "not_ect" => EcnCodepoint::NotEct,
            "ect0" => EcnCodepoint::Ect0,
            "ect1" => EcnCodepoint::Ect1,
            other => panic!("{other} is not a codepoint a sender chooses"),
        }
    }
}

/// One ACK, as seen by the sender after SACK/loss processing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckEvent {
    /// Bytes newly delivered by this ACK (cumulatively or by SACK).
    pub acked_bytes: u64,
    /// Of those, bytes newly reported CE-marked (AccECN / DCTCP feedback).
    pub ce_bytes: u64,
    /// Bytes still in flight after processing this ACK.
    pub in_flight: u64,
    /// Latest RTT sample, if this ACK produced one.
    pub rtt_sample: Option<Dur>,
    /// Smoothed RTT (RFC 6298) after this ACK; zero before the first sample.
    pub srtt: Dur,
    /// Smallest RTT observed on the path so far.
    pub min_rtt: Dur,
    /// Delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation).
    pub delivery_rate: Option<Rate>,
    /// Total bytes delivered on the connection so far (for round counting).
    pub delivered: u64,
    /// The sample was taken while the sender was application-limited.
    pub app_limited: bool,
    /// The congestion window was the limit on sending in the current window
    /// (Linux `tcp_is_cwnd_limited`): window-based controllers grow only then
    /// (RFC 7661 spirit, RFC 9438 §5.8).
    pub cwnd_limited: bool,
    /// The sender is in loss recovery (fast recovery or after an RTO).
    pub in_recovery: bool,
    /// `RS.prior_delivered` (draft-ietf-ccwg-bbr §4.1.2): [`AckEvent::delivered`]
    /// when the newest packet this ACK delivered was sent. BBR counts
    /// packet-timed rounds with it. 0 when nothing was delivered.
    pub rs_prior_delivered: u64,
    /// `RS.delivered`: bytes delivered between that packet's send and this
    /// ACK (the numerator of `delivery_rate`).
    pub rs_delivered: u64,
    /// `RS.tx_in_flight` / `P.tx_in_flight`: bytes in flight just after that
    /// packet was sent.
    pub rs_tx_in_flight: u64,
    /// `P.lost`: [`AckEvent::total_lost`] when that packet was sent.
    pub rs_prior_lost: u64,
    /// `C.lost`: payload bytes marked lost on the connection so far.
    pub total_lost: u64,
}

/// One packet the transport has just marked lost, with the delivery state
/// it was sent with (Linux `tcp_mark_skb_lost` → `tcp_notify_skb_loss_event`,
/// which adds the skb to `tp->lost` and then calls the congestion control's
/// `skb_marked_lost` with the skb and its `TCP_SKB_CB(skb)->tx` snapshot;
/// draft-ietf-ccwg-bbr-06 §5.5.10.2 `HandleLostPacket(packet)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostPacket {
    /// Its payload bytes (Linux `tcp_skb_pcount`), now counted in
    /// [`LostPacket::total_lost`].
    pub bytes: u64,
    /// `P.tx_in_flight`: bytes in flight just after it was (last) sent, itself
    /// included (Linux `scb->tx.in_flight`).
    pub tx_in_flight: u64,
    /// `P.lost`: the connection's lost bytes when it was sent (`scb->tx.lost`).
    pub prior_lost: u64,
    /// `P.delivered`: the connection's delivered bytes when it was sent
    /// (`scb->tx.delivered`).
    pub prior_delivered: u64,
    /// `P.is_app_limited` (`scb->tx.is_app_limited`).
    pub app_limited: bool,
    /// `C.lost`: payload bytes marked lost on the connection so far, this
    /// packet included (`tp->lost`, already incremented when Linux calls
    /// `skb_marked_lost`).
    pub total_lost: u64,
    /// `C.delivered` now.
    pub delivered: u64,
}

/// A congestion signal other than an ordinary ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by SACK/dupACKs or RACK. `first_in_episode` is false for
    /// further losses of the same recovery episode (NewReno: one reduction per
    /// window of data, RFC 6582). `in_flight` (here and below) is RFC 5681's
    /// FlightSize, `SND.NXT − SND.UNA` (SACKed data included): a reference
    /// for round ends, not the base of a reduction — Reno, CUBIC and DCTCP
    /// reduce from cwnd as Linux's `ssthresh` operations do.
    Loss {
        lost_bytes: u64,
        in_flight: u64,
        first_in_episode: bool,
    },
    /// Retransmission timeout (RFC 6298 §5, RFC 5681 §3.1 eq. 4).
    Rto { in_flight: u64 },
    /// Classic ECN echo (RFC 3168 §6.1.2): at most one per RTT, decided by the transport.
    EcnEcho { in_flight: u64 },
    /// The recovery episode ended (the cumulative ACK passed `recover`).
    RecoveryEnd,
    /// The transport found the last loss reduction spurious (D-SACK, the
    /// timestamp echo or F-RTO; Linux `tcp_undo_cwnd_reduction`): restore the
    /// window saved when it was made (`undo_cwnd`) and leave recovery. Also
    /// ends a recovery episode, in place of [`CongestionEvent::RecoveryEnd`].
    Undo,
}

/// Side channels a controller may use.
pub struct CcCtx<'a> {
    pub flow: FlowId,
    /// Sender maximum segment size, in bytes.
    pub mss: u64,
    pub rng: &'a mut SimRng,
    pub tracer: &'a mut dyn Tracer,
}

/// Snapshot of controller internals for series and plots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcMetrics {
    pub cwnd: u64,
    pub ssthresh: Option<u64>,
    pub pacing_rate: Option<Rate>,
    /// Algorithm-specific state name, e.g. `"SlowStart"`, `"ProbeBW_UP"`.
    pub state: &'static str,
    /// Algorithm-specific scalars (e.g. DCTCP/Prague `alpha`), fixed order.
    pub extra: Vec<(&'static str, f64)>,
}

pub trait CongestionControl: fmt::Debug + Send {
    /// Stable identifier, identical to the scenario-file `cc` value.
    fn name(&self) -> &'static str;

    /// Codepoint for data packets when ECN is negotiated.
    fn ecn_codepoint(&self) -> EcnCodepoint {
        EcnCodepoint::NotEct
    }

    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, ctx: &mut CcCtx<'_>) {
        let _ = (now, bytes, in_flight, ctx);
    }

    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>);

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>);

    /// The transport has just marked one packet lost (Linux cong ops
    /// `skb_marked_lost`, called from `tcp_mark_skb_lost` for each segment
    /// as loss detection — DupThresh, RACK, the RTO — marks it, before the
    /// ACK's `on_ack`). Only BBRv3 uses it; the byte counts of the loss also
    /// reach every controller through [`CongestionEvent::Loss`] and
    /// [`AckEvent::total_lost`].
    fn on_packet_lost(&mut self, now: Time, lost: &LostPacket, ctx: &mut CcCtx<'_>) {
        let _ = (now, lost, ctx);
    }

    /// Congestion window, in bytes.
    fn cwnd(&self) -> u64;

    /// Pacing rate the controller asks for; `None` lets the transport apply its
    /// default (Linux: 200 % of cwnd/srtt in slow start, 120 % after).
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }

    /// Every value [`CcMetrics::state`] can take, in a fixed order: the
    /// series' `cc_state` is an index into it (summary `cc_states`).
    fn states(&self) -> &'static [&'static str] {
        &[]
    }

    /// Slow-start threshold, if the controller has one.
    fn ssthresh(&self) -> Option<u64> {
        None
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: self.cwnd(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.pacing_rate(),
            ..CcMetrics::default()
        }
    }
}

/// Names accepted by [`build`] (the Linux `tcp_congestion_control` names), in
/// the order `--help` lists them: the names of [`registry::KINDS`].
pub const CC_NAMES: &[&str] = &registry::NAMES;

/// The one dispatch point from a scenario's `cc = "..."` to a controller
/// with its defaults ([`registry::KINDS`]); [`CcOptions::build`] is the same
/// with options.
/// `mss` (bytes) and `initial_window` (segments) come from the transport
/// config. Returns `None` for a name not in [`CC_NAMES`].
///
/// # Panics
/// If `mss` or `initial_window` is zero (the scenario crate rejects those).
pub fn build(name: &str, mss: u64, initial_window: u64) -> Option<Box<dyn CongestionControl>> {
    registry::kind(name).map(|k| k.build(mss, initial_window, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_builds_under_its_own_name() {
        for &name in CC_NAMES {
            let cc = build(name, 1448, 10).expect(name);
            assert_eq!(cc.name(), name);
            assert_eq!(cc.cwnd(), 14_480);
        }
        assert!(build("vegas", 1448, 10).is_none());
    }
}
