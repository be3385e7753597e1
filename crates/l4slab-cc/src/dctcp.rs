//! DCTCP: Data Center TCP — RFC 8257 (Informational) and Linux
//! `net/ipv4/tcp_dctcp.c`.
//!
//! DCTCP is Reno whose ECN response is proportional to the *extent* of
//! congestion: the sender keeps `alpha`, an EWMA of the fraction of bytes
//! that were CE-marked over each observation window (about one RTT), and on
//! congestion it cuts the window by `alpha/2` instead of halving it.
//!
//! * **alpha** (RFC 8257 §3.3 steps 1–8; Linux `dctcp_update_alpha`): over
//!   each observation window the sender adds up acked bytes and CE-marked
//!   bytes; when the window ends, `F = marked / acked` and
//!   `alpha = (1 - g) * alpha + g * F` with `g = 1/2^shift_g = 1/16`
//!   (Linux `dctcp_shift_g = 4`). The first `alpha` is 1 (Linux
//!   `dctcp_alpha_on_init = 1024` of 1024). `alpha` decays in every window,
//!   marked or not, as in Linux.
//! * **Observation window** (RFC 8257 §3.3 step 4/7 "`SND.UNA >
//!   DCTCP.WindowEnd`", `DCTCP.WindowEnd = SND.NXT`; Linux
//!   `!before(snd_una, next_seq)`): measured in delivered bytes, see
//!   `RoundTracker`.
//! * **CE response** (RFC 8257 §3.3 last step; Linux `dctcp_ssthresh`): on an
//!   ACK reporting newly CE-marked bytes ([`AckEvent::ce_bytes`], i.e. exact
//!   AccECN feedback), `ssthresh = max(cwnd - cwnd*alpha/2, 2*SMSS)` and
//!   `cwnd = ssthresh`, then the window is held for one round (Linux
//!   `TCP_CA_CWR`: no growth until data sent after the reduction is
//!   acknowledged). That is "at most once per window of data"
//!   (RFC 8257 §3.3, as RFC 3168 §6.1.2). As Linux `tcp_init_cwnd_reduction`,
//!   entering the reduction clears the congestion-avoidance byte counter.
//! * **Growth** (RFC 8257 §3.4: "in the same way as conventional TCP"): the
//!   same slow start and congestion avoidance as [`crate::Reno`] (RFC 5681
//!   with RFC 3465 byte counting, `L = 2*SMSS`).
//! * **Loss** (RFC 8257 §3.5: "MUST react to loss episodes in the same way as
//!   conventional TCP"): exactly Reno's rules — `ssthresh = max(cwnd/2,
//!   2*SMSS)` (Linux `dctcp_react_to_loss`), one reduction per episode,
//!   `cwnd = 1 SMSS` after an RTO, and Reno's undo (Linux `dctcp_cwnd_undo`).
//! * **Codepoint**: ECT(0), as Linux (`dctcp_ect = 0`); `ect1 = true` selects
//!   ECT(1) like `dctcp_ect = 1`. With ECT(0) a DualPI2 bottleneck puts DCTCP
//!   in the Classic queue unless its `any_ect` option classifies every ECT
//!   packet as L4S (RFC 9332 §2.5.1.1; Linux `sch_dualpi2 any_ect`).
//!
//! **Built on Reno, as Linux builds it.** Linux `tcp_dctcp.c` sets
//! `.cong_avoid = tcp_reno_cong_avoid`, reacts to loss with Reno's halving
//! (`dctcp_react_to_loss`) and undoes as Reno (`dctcp_cwnd_undo`); here
//! [`Dctcp`] holds Reno's core (`reno::RenoCore`: windows, states, growth,
//! loss, RTO, undo) and adds only what DCTCP adds: alpha
//! ([`Dctcp::alpha`], `dctcp_update_alpha`), the CE cut (`dctcp_ssthresh`)
//! and the CWR round it holds. Alpha's counters and EWMA are shared with
//! Prague (`MarkedFraction`, `ewma`).
//!
//! **Classic ECN feedback.** DCTCP needs the number of CE-marked bytes per
//! ACK. When the transport only has RFC 3168 feedback it reports a
//! [`CongestionEvent::EcnEcho`] instead (at most once per RTT) and
//! `ce_bytes` stays 0; DCTCP then cannot estimate `F`, so it responds
//! conservatively as a classic sender: the same once-per-round reduction with
//! `alpha` taken as 1 (a halving), leaving the estimate itself untouched.
//! (Linux DCTCP gets per-packet information even over RFC 3168 negotiation
//! because its receiver echoes CE exactly, `dctcp_ece_ack_update`; our
//! transport puts that exact feedback in `ce_bytes` when AccECN is on.)
//!
//! **Not implemented.** The receiver side (`dctcp_ece_ack_update`: the
//! transport's AccECN receiver does that job), `dctcp-reno` fallback when ECN
//! is not negotiated (the transport simply delivers no CE bytes; DCTCP then
//! behaves exactly as Reno because `alpha` only matters on CE).
//!
//! **Deviations from Linux and why.**
//! * `alpha` is an `f64`, not 10-bit fixed point. Linux's `alpha -= alpha >>
//!   4` stops decaying below 16/1024 (an unmarked flow keeps `alpha` ≈ 1.5 %)
//!   and truncates `F` to 1/1024 units; the exact EWMA has neither artefact.
//! * `F` is computed from bytes (RFC 8257) rather than from segments (Linux
//!   `delivered_ce / delivered`); identical for full-sized segments.
//! * The window drops to `ssthresh` at once and is held for the round; Linux
//!   walks down to it with PRR over that round. Same window after one RTT.
//! * The observation window is counted in delivered bytes (`delivered +
//!   in_flight` stands for `SND.NXT`), see `RoundTracker`.

use serde::{Deserialize, Serialize};

use l4slab_core::Time;

use crate::cong::{self, WindowConfigError};
use crate::param::{Kind, Param, ParamError, ParamValue};
use crate::reno::{RenoCore, State};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent, EcnCodepoint};

/// Rounds ("observation windows", "RTTs") counted in delivered bytes.
///
/// RFC 8257 §3.3 ends a window when an ACK moves `SND.UNA` past
/// `DCTCP.WindowEnd` and then sets `DCTCP.WindowEnd = SND.NXT`; Linux DCTCP
/// and Prague test `!before(snd_una, next_seq)` and set `next_seq = snd_nxt`.
/// The controller sees no sequence numbers, so the same idea is expressed in
/// the transport's delivered-byte count ([`AckEvent::delivered`]): at the ACK
/// that starts a round, everything sent so far and not yet delivered is
/// `in_flight`, so `SND.NXT` corresponds to `delivered + in_flight`; the
/// round ends at the ACK whose `delivered` reaches that mark.
///
/// When a round ends with nothing in flight (an idle or app-limited sender,
/// or the scripted [`crate::testing::Driver`], which sends a whole window
/// after the last ACK of the previous one), the next round starts with the
/// next ACK and covers what was in flight then — rather than ending at once
/// on an ACK for data sent after the mark, which would make every second
/// round a single ACK long.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoundTracker {
    /// Delivered-byte mark that ends the current round; `None` = the next
    /// ACK starts one.
    end: Option<u64>,
}

impl RoundTracker {
    /// Whether this ACK (already counted in `ack.delivered`) completes the
    /// current round; starts a round first if none is running.
    pub(crate) fn is_complete(&mut self, ack: &AckEvent) -> bool {
        // Start of a round: DCTCP.WindowEnd = SND.NXT (RFC 8257 §3.3 step 7).
        let end = *self
            .end
            .get_or_insert(ack.delivered.saturating_add(ack.in_flight));
        // RFC 8257 §3.3 step 4 / Linux `!before(snd_una, next_seq)`.
        ack.delivered >= end
    }

    /// Start the next round at this ACK (RFC 8257 §3.3 step 7).
    pub(crate) fn restart(&mut self, ack: &AckEvent) {
        self.end = (ack.in_flight > 0).then(|| ack.delivered.saturating_add(ack.in_flight));
    }
}

/// `g = 1/2^shift_g`, the EWMA gain of `alpha`; shared with Prague
/// (`prague::PARAMS` reuses the range, with Prague's source).
pub const SHIFT_G: Param = Param::new(
    "shift_g",
    Kind::Int { min: 1, max: 16 },
    ParamValue::Int(4),
    "Linux `tcp_dctcp` `dctcp_shift_g = 4`; RFC 8257's recommended g = 1/16",
    "EWMA gain g = 1/2^shift_g of alpha (0 would mean no averaging)",
)
.linux_name("dctcp_shift_g");

/// The first `alpha`.
pub const ALPHA_ON_INIT: Param = Param::new(
    "alpha_on_init",
    Kind::Fraction {
        min: 0.0,
        max: 1.0,
        min_open: false,
        max_open: false,
        linux_scale: Some(1024),
    },
    ParamValue::Num(1.0),
    "Linux `dctcp_alpha_on_init = 1024` (of 1024)",
    "initial alpha: 1.0 makes the first CE response a halving",
)
.linux_name("dctcp_alpha_on_init");

/// ECT(1) instead of ECT(0).
pub const ECT1: Param = Param::new(
    "ect1",
    Kind::Flag,
    ParamValue::Flag(false),
    "L4STeam Linux `dctcp_ect = 0` (ECT(0))",
    "send ECT(1) instead of ECT(0)",
)
.linux_name("dctcp_ect");

/// The parameters a scenario can set (`cc = { kind = "dctcp", ... }`).
pub const PARAMS: &[Param] = &[SHIFT_G, ALPHA_ON_INIT, ECT1];

crate::registry::cc_config! {
    DctcpConfig => Dctcp {
        SHIFT_G => shift_g,
        ALPHA_ON_INIT => alpha_on_init,
        ECT1 => ect1,
    }
}

/// Parameters of [`Dctcp`]. The ones in [`PARAMS`] take their default and
/// range from there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DctcpConfig {
    /// Sender maximum segment size (SMSS), in bytes. 1448 = 1500 B MTU minus
    /// IPv4, TCP and timestamp headers (Linux default with timestamps).
    pub mss: u64,
    /// Initial window in segments. RFC 6928 §2: 10 (Linux `TCP_INIT_CWND`).
    pub initial_window_segments: u64,
    /// [`SHIFT_G`].
    pub shift_g: u32,
    /// [`ALPHA_ON_INIT`], in `[0, 1]`.
    pub alpha_on_init: f64,
    /// [`ECT1`].
    pub ect1: bool,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            mss: 1448,                   // 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps)
            initial_window_segments: 10, // RFC 6928 §2, Linux TCP_INIT_CWND
            shift_g: SHIFT_G.default.int() as u32,
            alpha_on_init: ALPHA_ON_INIT.default.num(),
            ect1: ECT1.default.flag(),
        }
    }
}

/// Why a [`DctcpConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DctcpConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
    /// A parameter of [`PARAMS`] is out of its declared range.
    #[error(transparent)]
    Param(ParamError),
}

impl DctcpConfig {
    pub fn validate(&self) -> Result<(), DctcpConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
        SHIFT_G
            .check(ParamValue::Int(self.shift_g.into()))
            .and(ALPHA_ON_INIT.check(ParamValue::Num(self.alpha_on_init)))
            .map_err(DctcpConfigError::Param)
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DctcpStats {
    /// Window reductions caused by CE-marked bytes (at most one per round).
    pub ce_reductions: u64,
    /// Window reductions caused by classic ECN-Echo (halving).
    pub ecn_echo_reductions: u64,
    /// Window reductions caused by loss (one per episode).
    pub loss_reductions: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Completed observation windows (`alpha` updates).
    pub alpha_updates: u64,
    /// Bytes acknowledged, and of those CE-marked, over the whole flow.
    pub acked_bytes: u64,
    pub ce_bytes: u64,
}

/// RFC 8257 `DCTCP.BytesAcked` / `DCTCP.BytesMarked` of one observation
/// window and the EWMA they feed (Linux `dctcp_update_alpha`; Prague's
/// `prague_update_alpha` is the same rule).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct MarkedFraction {
    acked: u64,
    marked: u64,
}

impl MarkedFraction {
    /// Count an ACK: RFC 8257 §3.3 steps 2 and 3 (AccECN gives the marked
    /// bytes exactly). Returns the marked bytes counted.
    pub fn add(&mut self, ack: &AckEvent) -> u64 {
        let marked = ack.ce_bytes.min(ack.acked_bytes);
        self.acked += ack.acked_bytes;
        self.marked += marked;
        marked
    }

    /// Step 5: `F = BytesMarked / BytesAcked` (0 when nothing was acked);
    /// steps 7–8 reset the counters.
    pub fn take(&mut self) -> f64 {
        let f = if self.acked == 0 {
            0.0
        } else {
            self.marked as f64 / self.acked as f64
        };
        *self = MarkedFraction::default();
        f
    }
}

/// Step 6: `alpha = alpha * (1 - g) + g * F`, `g = 1/2^shift_g`, in `[0, 1]`.
pub(crate) fn ewma(alpha: f64, shift_g: u32, f: f64) -> f64 {
    let g = 1.0 / f64::from(1u32 << shift_g);
    (alpha * (1.0 - g) + g * f).clamp(0.0, 1.0)
}

/// DCTCP (see the module documentation): Reno's core plus alpha.
#[derive(Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    /// Reno's window, states and loss rules (Linux `tcp_reno_cong_avoid`).
    core: RenoCore,
    /// RFC 8257 `DCTCP.Alpha`, in `[0, 1]`.
    alpha: f64,
    /// `F` of the last completed observation window.
    last_fraction: f64,
    /// The observation window (RFC 8257 `DCTCP.WindowEnd`).
    round: RoundTracker,
    /// The open window's acked and marked bytes.
    window: MarkedFraction,
    /// `delivered` of the latest ACK: a classic ECN-Echo's round ends when
    /// the flight it reports has been delivered on top of this.
    delivered: u64,
    stats: DctcpStats,
}

impl Dctcp {
    /// # Panics
    /// If `cfg` is invalid (see [`DctcpConfig::validate`]); scenario input is
    /// validated before it gets here, so this is a bug, not bad input.
    pub fn new(cfg: DctcpConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid DctcpConfig: {e}"))
    }

    pub fn try_new(cfg: DctcpConfig) -> Result<Self, DctcpConfigError> {
        cfg.validate()?;
        Ok(Dctcp {
            core: RenoCore::new(cfg.mss, cfg.initial_window_segments),
            // Linux dctcp_init: dctcp_alpha = min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA).
            alpha: cfg.alpha_on_init,
            last_fraction: 0.0,
            round: RoundTracker::default(),
            window: MarkedFraction::default(),
            delivered: 0,
            stats: DctcpStats::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &DctcpConfig {
        &self.cfg
    }

    pub fn stats(&self) -> DctcpStats {
        // Loss reductions and timeouts are counted by Reno's core.
        DctcpStats {
            loss_reductions: self.core.loss_reductions(),
            rtos: self.core.rtos(),
            ..self.stats.clone()
        }
    }

    /// RFC 8257 `DCTCP.Alpha`: the estimated fraction of marked bytes.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// RFC 8257 §3.3 steps 1–8 for one ACK; Linux `dctcp_update_alpha`.
    fn update_alpha(&mut self, ack: &AckEvent) {
        let marked = self.window.add(ack);
        self.stats.acked_bytes += ack.acked_bytes;
        self.stats.ce_bytes += marked;
        // Step 4: stop unless the ACK passed DCTCP.WindowEnd.
        if !self.round.is_complete(ack) {
            return;
        }
        // Steps 5 and 6 (Linux decays alpha in every window, marked or not).
        let f = self.window.take();
        self.alpha = ewma(self.alpha, self.cfg.shift_g, f);
        self.last_fraction = f;
        self.stats.alpha_updates += 1;
        // Step 7: DCTCP.WindowEnd = SND.NXT.
        self.round.restart(ack);
    }

    /// The ECN cut (Linux `tcp_enter_cwr` with `dctcp_ssthresh`), entered
    /// from slow start or congestion avoidance. `alpha = 1` is the classic
    /// halving.
    fn ecn_reduce(&mut self, alpha: f64, end: u64, now: Time, ctx: &mut CcCtx<'_>) {
        // RFC 8257 §3.3: cwnd = cwnd * (1 - DCTCP.Alpha / 2);
        // Linux dctcp_ssthresh: max(cwnd - ((cwnd * alpha) >> 11), 2).
        let cwnd = self.core.cwnd();
        let cut = (cwnd as f64 * alpha / 2.0) as u64;
        self.core
            .cut_to((cwnd - cut.min(cwnd)).max(2 * self.cfg.mss));
        // Linux tcp_init_cwnd_reduction: high_seq = snd_nxt; snd_cwnd_cnt = 0;
        // the CA byte counter restarts when CWR ends.
        self.core.transition_to(now, State::Cwr { end }, ctx);
    }

    /// Not in a reduction (Linux `tcp_enter_cwr` acts only below
    /// `TCP_CA_CWR`: not in CWR or Recovery).
    fn is_open(&self) -> bool {
        matches!(
            self.core.state(),
            State::SlowStart | State::CongestionAvoidance { .. }
        )
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 4] = ["SlowStart", "CongestionAvoidance", "Cwr", "Recovery"];
        &STATES
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        // Linux: ECT(0) unless dctcp_ect = 1 (TCP_CONG_WANTS_ECT_1).
        if self.cfg.ect1 {
            EcnCodepoint::Ect1
        } else {
            EcnCodepoint::Ect0
        }
    }

    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        self.core.on_ack_received(ack);
        self.delivered = ack.delivered;
        // Linux calls dctcp_update_alpha (in_ack_event) before any cwnd
        // decision of this ACK, so a cut uses the freshest alpha.
        self.update_alpha(ack);

        // Linux tcp_fastretrans_alert: CWR ends once data sent after the cut
        // is acknowledged ("CWR is to be held something *above* high_seq is
        // ACKed"), i.e. delivered passes the flight at the cut.
        if let State::Cwr { end } = self.core.state() {
            if ack.delivered > end {
                self.core
                    .transition_to(now, State::CongestionAvoidance { acked: 0 }, ctx);
            }
        }

        // RFC 8257 §3.3: react to CE at most once per window of data.
        if ack.ce_bytes > 0 && self.is_open() {
            let end = ack.delivered.saturating_add(ack.in_flight);
            self.ecn_reduce(self.alpha, end, now, ctx);
            self.stats.ce_reductions += 1;
        }

        // Growth (RFC 8257 §3.4 "in the same way as conventional TCP"): Linux
        // `.cong_avoid = tcp_reno_cong_avoid`.
        self.core.cong_avoid(now, ack, ctx);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>) {
        // RFC 8257 §3.5 "MUST react to loss episodes in the same way as
        // conventional TCP": Reno's core — one reduction per episode, Linux
        // dctcp_react_to_loss's max(cwnd/2, 2) (first timeout only, as
        // tcp_enter_loss), 1 SMSS after an RTO, dctcp_cwnd_undo's
        // max(cwnd, loss_cwnd).
        let Some(in_flight) = self.core.on_congestion(now, ev, ctx) else {
            return;
        };
        // Classic RFC 3168 feedback carries no marked-byte count: respond as
        // RFC 3168 §6.1.2 (alpha taken as 1, i.e. halve), once per round and
        // not during recovery (module docs).
        if self.is_open() {
            let end = self.delivered.saturating_add(in_flight);
            self.ecn_reduce(1.0, end, now, ctx);
            self.stats.ecn_echo_reductions += 1;
        }
    }

    fn cwnd(&self) -> u64 {
        self.core.cwnd()
    }

    fn ssthresh(&self) -> Option<u64> {
        self.core.ssthresh()
    }

    fn metrics(&self) -> CcMetrics {
        self.core.metrics(vec![
            ("alpha", self.alpha),
            ("ce_fraction", self.last_fraction),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Driver;

    const MSS: u64 = 1448;

    fn dctcp() -> Driver<Dctcp> {
        Driver::new(Dctcp::new(DctcpConfig::default()))
    }

    #[test]
    fn round_tracker_follows_snd_nxt_in_delivered_bytes() {
        let mut r = RoundTracker::default();
        let ack = |delivered, in_flight| AckEvent {
            delivered,
            in_flight,
            ..AckEvent::default()
        };
        // First ACK: the round covers what is in flight (end = 100 + 900).
        assert!(!r.is_complete(&ack(100, 900)));
        assert!(!r.is_complete(&ack(999, 400)));
        assert!(r.is_complete(&ack(1000, 500)));
        r.restart(&ack(1000, 500));
        assert!(!r.is_complete(&ack(1400, 600)));
        assert!(r.is_complete(&ack(1500, 0)));
        // Nothing in flight: the next ACK starts the round.
        r.restart(&ack(1500, 0));
        assert!(!r.is_complete(&ack(1600, 300)));
        assert!(r.is_complete(&ack(1900, 0)));
    }

    #[test]
    fn ecn_codepoint_is_ect0_unless_configured() {
        assert_eq!(dctcp().cc.ecn_codepoint(), EcnCodepoint::Ect0);
        let cc = Dctcp::new(DctcpConfig {
            ect1: true,
            ..DctcpConfig::default()
        });
        assert_eq!(cc.ecn_codepoint(), EcnCodepoint::Ect1);
    }

    #[test]
    fn invalid_config_is_a_typed_error() {
        let bad = DctcpConfig {
            shift_g: 0,
            ..DctcpConfig::default()
        };
        assert_eq!(
            Dctcp::try_new(bad).unwrap_err().to_string(),
            "shift_g: 0 is out of range; must be between 1 and 16"
        );
        let bad = DctcpConfig {
            alpha_on_init: 1.5,
            ..DctcpConfig::default()
        };
        assert_eq!(
            Dctcp::try_new(bad).unwrap_err().to_string(),
            "alpha_on_init: 1.5 is out of range; must be between 0 and 1"
        );
        let bad = DctcpConfig {
            mss: 0,
            ..DctcpConfig::default()
        };
        assert_eq!(
            Dctcp::try_new(bad).unwrap_err(),
            DctcpConfigError::Window(WindowConfigError::ZeroMss)
        );
    }

    #[test]
    fn unmarked_flow_grows_like_reno() {
        let mut d = dctcp();
        d.send_and_ack_rounds(3);
        assert_eq!(d.cc.cwnd(), 80 * MSS);
        // alpha decays by (15/16) per round even without marks.
        let expect = (15.0f64 / 16.0).powi(3);
        assert!((d.cc.alpha() - expect).abs() < 1e-12, "{}", d.cc.alpha());
        assert_eq!(d.cc.stats().alpha_updates, 3);
    }
}
