//! Reno / NewReno congestion control: RFC 5681 windows, RFC 6582 episodes
//! (signalled by the transport), RFC 3168 §6.1.2 classic ECN response.
//!
//! Window arithmetic is in bytes:
//!
//! * initial window: `initial_window_segments * SMSS` (RFC 6928: 10 segments);
//!   `ssthresh` starts "arbitrarily high" (RFC 5681 §3.1), i.e. unset.
//! * slow start: `cwnd += min(acked, 2*SMSS)` per ACK — RFC 3465 §2.3
//!   Appropriate Byte Counting with `L = 2*SMSS`, which RFC 5681 §3.1 allows.
//!   With delayed ACKs (one ACK per two segments, the scenario default) this
//!   still doubles cwnd per RTT, as Linux does (Linux counts every newly acked
//!   segment, `tcp_slow_start`). Like Linux, growth stops exactly at
//!   `ssthresh` and the remainder of that ACK is counted in congestion avoidance.
//! * congestion avoidance: byte counting (RFC 3465 §2.1; RFC 5681 §3.1 eq. 3
//!   alternative): `+1 SMSS` each time a full cwnd of bytes has been acked.
//! * loss (first of an episode): `ssthresh = max(cwnd/2, 2*SMSS)` (Linux
//!   `tcp_reno_ssthresh`; RFC 5681 §3.1 eq. 4 with cwnd for FlightSize, see
//!   "Deviations") and `cwnd = ssthresh` — RFC 6675 §5 step (4.2). Later losses of the same episode (RFC 6582: one reduction per
//!   window of data) change nothing. No growth until `RecoveryEnd`.
//! * RTO: `ssthresh = max(cwnd/2, 2*SMSS)`, `cwnd = 1 SMSS` (RFC 5681
//!   §3.1 eq. 4 and the line after it), then slow start.
//! * Undo (the transport found the reduction spurious): `cwnd = max(cwnd,
//!   prior_cwnd)`, `ssthresh = max(ssthresh, prior_ssthresh)` (Linux
//!   `tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd`), see [`UndoPoint`].
//! * ECN-Echo: the same reduction as a loss (RFC 3168 §6.1.2), ignored during
//!   loss recovery; the transport limits it to once per RTT.
//!
//! **Shared core.** These rules are `RenoCore` — Linux `tcp_reno_cong_avoid`,
//! `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd` — which DCTCP reuses as Linux's
//! `tcp_dctcp` does (`crate::dctcp`); [`Reno`] adds only its ECN-Echo
//! response. The arithmetic is `crate::cong`'s (Linux `tcp_cong.c`).
//!
//! **Who does what.** Loss detection, retransmission, the NewReno `recover`
//! point and the RFC 6582 partial/full ACK logic live in the transport, which
//! reports them as [`CongestionEvent::Loss`] (`first_in_episode`) and
//! [`CongestionEvent::RecoveryEnd`]. The RFC 5681 §3.2 window *inflation*
//! (`cwnd = ssthresh + 3*SMSS`, `+SMSS` per dupACK, deflate on full ACK) is
//! replaced by RFC 6675 "pipe" accounting in the transport: the transport
//! sends while `pipe < cwnd`, so cwnd itself is simply `ssthresh` for the whole
//! episode. Linux likewise never inflates cwnd (it uses PRR, RFC 6937, to move
//! from the old window to `ssthresh` over one RTT); PRR is not implemented
//! here, see "Deviations".
//!
//! **Not implemented.** Restart after idle (RFC 5681 §4.1), RFC 6582 §3.2
//! step 3 "`cwnd = min(ssthresh, FlightSize + SMSS)`" on a full ACK (we use the
//! other option the RFC gives, `cwnd = ssthresh`), HyStart (Reno has none in
//! Linux either).
//!
//! **Deviations from Linux `tcp_cong.c` Reno and why.**
//! * None in the reduction: `ssthresh` is computed from cwnd as Linux does,
//!   not from RFC 5681's FlightSize (`SND.NXT − SND.UNA`), which in
//!   back-to-back recovery episodes counts a window of SACKed data behind
//!   the hole and exceeds cwnd, so a "halving" can raise the window
//!   (docs/models/transport.md, "Reduction base"). RFC 5681 and RFC 6675
//!   §5 (4.2) say FlightSize; RFC 9438 §4.6 allows cwnd (for CUBIC).
//! * The window drops to `ssthresh` at once (RFC 6675) instead of gradually
//!   by PRR. The difference lasts one RTT; the transport's pipe accounting
//!   prevents the burst PRR is meant to smooth because it sends nothing until
//!   `pipe` falls below the new cwnd.
//! * After an ECN-Echo, growth resumes at once in congestion avoidance; Linux
//!   holds the window in `TCP_CA_CWR` for one RTT. In congestion avoidance that
//!   is at most one SMSS of difference.
//! * [`AckEvent::in_recovery`] is not consulted: the controller's own state,
//!   driven by congestion events, is authoritative. The flag is also true after
//!   an RTO, where RFC 5681 §3.1 requires slow start (Linux grows cwnd in
//!   `TCP_CA_Loss`; only `CWR`/`Recovery` freeze it, `tcp_in_cwnd_reduction`).

use serde::{Deserialize, Serialize};

use l4slab_core::state::{Checked, Machine};
use l4slab_core::Time;

use crate::cong::{self, UndoPoint, WindowConfigError};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent};

/// Parameters of [`Reno`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenoConfig {
    /// Sender maximum segment size (SMSS), in bytes. 1448 = a 1500 B MTU
    /// minus 20 B IPv4, 20 B TCP and 12 B of timestamp option (Linux default
    /// with timestamps on).
    pub mss: u64,
    /// Initial window in segments. RFC 6928 §2: 10 (Linux `TCP_INIT_CWND`).
    pub initial_window_segments: u64,
}

/// The parameters a scenario can set: none (Linux `tcp_reno` has no module
/// parameters).
pub const PARAMS: &[crate::param::Param] = &[];

crate::registry::cc_config! { RenoConfig => Reno {} }

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            mss: 1448,                   // 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps)
            initial_window_segments: 10, // RFC 6928 §2, Linux TCP_INIT_CWND
        }
    }
}

/// Why a [`RenoConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenoConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
}

impl RenoConfig {
    pub fn validate(&self) -> Result<(), RenoConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
        Ok(())
    }
}

/// Where a Reno-core controller is in its cycle (Linux `icsk_ca_state`
/// with Open split by slow start). Reno uses three states; DCTCP adds `Cwr`.
/// The congestion-avoidance byte counter exists only in congestion
/// avoidance, so it lives in that variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// `cwnd < ssthresh` (RFC 5681 §3.1).
    SlowStart,
    /// `cwnd >= ssthresh`; `acked` counts bytes towards the next `+SMSS`
    /// (RFC 3465 §2.1 `bytes_acked`, Linux `snd_cwnd_cnt`).
    CongestionAvoidance { acked: u64 },
    /// ECN reduction in progress (Linux `TCP_CA_CWR`, DCTCP only): the window
    /// was cut and is held until `delivered` passes `end` (the data in flight
    /// at the cut).
    Cwr { end: u64 },
    /// Between the first loss of an episode and `RecoveryEnd`: cwnd is frozen
    /// at `ssthresh` (RFC 6675 §5; RFC 6582 one reduction per window).
    Recovery,
}

impl Machine for State {
    const NAME: &'static str = "Reno";

    /// Stable names used in traces, series and [`CcMetrics::state`].
    fn name(self) -> &'static str {
        match self {
            State::SlowStart => "SlowStart",
            State::CongestionAvoidance { .. } => "CongestionAvoidance",
            State::Cwr { .. } => "Cwr",
            State::Recovery => "Recovery",
        }
    }

    /// An RTO, a loss, an undo or the end of a reduction may interrupt
    /// anything; an ECN reduction (Linux `tcp_enter_cwr`) starts only from
    /// Open (slow start or congestion avoidance).
    fn may_enter(self, next: State) -> bool {
        !matches!(next, State::Cwr { .. })
            || matches!(self, State::SlowStart | State::CongestionAvoidance { .. })
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenoStats {
    /// Window reductions caused by loss (one per episode).
    pub loss_reductions: u64,
    /// Window reductions caused by ECN-Echo.
    pub ecn_reductions: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
}

/// Reno's window and its rules — Linux `tcp_reno_cong_avoid`,
/// `tcp_reno_ssthresh` and `tcp_reno_undo_cwnd` — on which [`Reno`] and
/// DCTCP are built (Linux `tcp_dctcp.c` uses `tcp_reno_cong_avoid` and
/// reacts to loss as `tcp_reno_ssthresh`; see `crate::dctcp`). What differs
/// between the two is their ECN response, which each keeps.
#[derive(Debug)]
pub(crate) struct RenoCore {
    mss: u64,
    cwnd: u64,
    /// `u64::MAX` until the first reduction (RFC 5681 §3.1: "arbitrarily high").
    ssthresh: u64,
    state: Checked<State>,
    /// An RTO happened and no new data has been acknowledged since: a
    /// further RTO (a backed-off retransmission of the same data) keeps
    /// `ssthresh` (RFC 5681 §3.1 implementation note to eq. 4; Linux
    /// `tcp_enter_loss` only recomputes it when `icsk_retransmits == 0`).
    rto_backoff: bool,
    /// Window and threshold before the last loss reduction, for `Undo`.
    undo: Option<UndoPoint>,
    /// Loss reductions (one per episode) and timeouts, for the controller's
    /// stats.
    loss_reductions: u64,
    rtos: u64,
}

impl RenoCore {
    /// `initial_window` segments of `mss` bytes, slow start.
    pub fn new(mss: u64, initial_window: u64) -> Self {
        RenoCore {
            mss,
            // RFC 6928 §2: IW = min(10*MSS, max(2*MSS, 14600)) for IW10; we take
            // the configured segment count literally, as Linux does.
            cwnd: mss.saturating_mul(initial_window),
            ssthresh: u64::MAX,
            state: Checked::new(State::SlowStart),
            rto_backoff: false,
            undo: None,
            loss_reductions: 0,
            rtos: 0,
        }
    }

    /// Window reductions caused by loss (one per episode).
    pub fn loss_reductions(&self) -> u64 {
        self.loss_reductions
    }

    /// Retransmission timeouts.
    pub fn rtos(&self) -> u64 {
        self.rtos
    }

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    pub fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then_some(self.ssthresh)
    }

    pub fn state(&self) -> State {
        self.state.get()
    }

    /// The controller's [`CcMetrics`]: the window, the state, no pacing
    /// rate of its own, and the controller's `extra` scalars.
    pub fn metrics(&self, extra: Vec<(&'static str, f64)>) -> CcMetrics {
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh(),
            pacing_rate: None,
            state: self.state().name(),
            extra,
        }
    }

    /// The one place the state changes: checks the edge
    /// ([`Machine::may_enter`]) and that the new state agrees with the
    /// windows; a real change emits a trace event.
    pub fn transition_to(&mut self, now: Time, next: State, ctx: &mut CcCtx<'_>) {
        match next {
            State::SlowStart => cong::assert_slow_start(self.cwnd, self.ssthresh),
            State::CongestionAvoidance { .. } => {
                cong::assert_congestion_avoidance(self.cwnd, self.ssthresh)
            }
            State::Cwr { .. } => assert!(
                self.cwnd == self.ssthresh,
                "Cwr holds cwnd at ssthresh (cwnd {}, ssthresh {})",
                self.cwnd,
                self.ssthresh
            ),
            State::Recovery => cong::assert_recovery(self.cwnd, self.ssthresh),
        }
        cong::enter(&mut self.state, now, next, ctx.flow, ctx.tracer);
    }

    /// Every ACK, before anything else: new data acknowledged makes a later
    /// RTO a fresh one.
    pub fn on_ack_received(&mut self, ack: &AckEvent) {
        if ack.acked_bytes > 0 {
            self.rto_backoff = false;
        }
    }

    /// Linux `tcp_reno_cong_avoid`: growth only in Open states (Linux
    /// `tcp_in_cwnd_reduction()` skips `tcp_cong_avoid` in CWR and
    /// Recovery; RFC 6675 §5 / RFC 6582: no growth during fast recovery),
    /// only when the window is in use (RFC 7661 spirit / Linux
    /// `tcp_is_cwnd_limited`: a window that is not being used is not validated
    /// by an ACK); slow start, then congestion avoidance with what is left.
    pub fn cong_avoid(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        if !ack.cwnd_limited || ack.acked_bytes == 0 {
            return;
        }
        let mut acked = ack.acked_bytes;
        if self.state() == State::SlowStart {
            // RFC 5681 §3.1 with RFC 3465 §2.3 ABC (`L = 2*SMSS`).
            (self.cwnd, acked) = cong::slow_start(self.cwnd, self.ssthresh, acked, 2 * self.mss);
            if self.cwnd < self.ssthresh {
                return;
            }
            self.transition_to(now, State::CongestionAvoidance { acked: 0 }, ctx);
        }
        let (cwnd, mss) = (&mut self.cwnd, self.mss);
        self.state.update(|s| {
            if let State::CongestionAvoidance { acked: counter } = s {
                cong::cong_avoid_ai(cwnd, counter, acked, mss);
            }
        });
    }

    /// A multiplicative decrease to `ssthresh` (RFC 6675 §5 (4.2): "cwnd =
    /// ssthresh" — no inflation, the transport's pipe accounting does that
    /// job). The caller then enters the reduction's state.
    pub fn cut_to(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh;
        self.cwnd = ssthresh;
    }

    /// Linux `tcp_reno_ssthresh`: `max(cwnd/2, 2)` segments (see
    /// [`cong::reno_ssthresh`]).
    pub fn halved(&self) -> u64 {
        cong::reno_ssthresh(self.cwnd, self.mss)
    }

    /// Loss, RTO, undo and the end of recovery, as Reno; an ECN-Echo is
    /// each controller's own response, so it is left to the caller: returns
    /// its `in_flight`, else `None`.
    pub fn on_congestion(
        &mut self,
        now: Time,
        ev: &CongestionEvent,
        ctx: &mut CcCtx<'_>,
    ) -> Option<u64> {
        match *ev {
            // RFC 6582 §3.2: only the first loss of a window of data reduces.
            CongestionEvent::Loss {
                first_in_episode: false,
                ..
            } => {}
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } => self.on_loss(now, ctx),
            CongestionEvent::Rto { .. } => self.on_rto(now, ctx),
            CongestionEvent::Undo => self.on_undo(now, ctx),
            CongestionEvent::RecoveryEnd => self.on_recovery_end(now, ctx),
            CongestionEvent::EcnEcho { in_flight } => return Some(in_flight),
        }
        None
    }

    /// The first loss of an episode (RFC 6582 §3.2: only the first loss of
    /// a window of data reduces): save the undo point, halve (Linux
    /// `tcp_reno_ssthresh`, RFC 5681 §3.1 eq. (4) with cwnd for FlightSize),
    /// enter recovery.
    fn on_loss(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        self.loss_reductions += 1;
        self.undo = Some(UndoPoint::save(self.cwnd, self.ssthresh));
        self.cut_to(self.halved());
        self.transition_to(now, State::Recovery, ctx);
    }

    /// A retransmission timeout: RFC 5681 §3.1 eq. (4) — but held constant
    /// for a backed-off retransmission of the same data (implementation note
    /// after eq. 4), and during fast recovery the episode has already reduced
    /// it (Linux `tcp_enter_loss` recomputes ssthresh only from Open/Disorder
    /// or on the first timeout); then one segment and slow start.
    fn on_rto(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        self.rtos += 1;
        if !self.rto_backoff && self.state() != State::Recovery {
            self.undo = Some(UndoPoint::save(self.cwnd, self.ssthresh));
            self.ssthresh = self.halved();
        }
        self.rto_backoff = true;
        // RFC 5681 §3.1: "cwnd MUST be set to no more than the loss window,
        // LW, which equals 1 full-sized segment".
        self.cwnd = self.mss;
        self.transition_to(now, State::SlowStart, ctx);
    }

    /// The last loss reduction was spurious (Linux `tcp_undo_cwnd_reduction`
    /// with `tcp_reno_undo_cwnd`): restore the saved window, leave recovery.
    fn on_undo(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        if let Some(u) = self.undo.take() {
            (self.cwnd, self.ssthresh) = u.restore(self.cwnd, self.ssthresh);
        }
        self.rto_backoff = false;
        let next = if self.cwnd < self.ssthresh {
            State::SlowStart
        } else {
            State::CongestionAvoidance { acked: 0 }
        };
        self.transition_to(now, next, ctx);
    }

    /// The recovery episode ended. Only meaningful for fast recovery; after
    /// an RTO the controller is already slow-starting.
    fn on_recovery_end(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        if self.state() == State::Recovery {
            // RFC 6582 §3.2 step 3 (second option): cwnd = ssthresh.
            self.cwnd = self.ssthresh;
            self.transition_to(now, State::CongestionAvoidance { acked: 0 }, ctx);
        }
    }
}

/// Reno / NewReno (see the module documentation).
#[derive(Debug)]
pub struct Reno {
    cfg: RenoConfig,
    core: RenoCore,
    /// Window reductions caused by ECN-Echo.
    ecn_reductions: u64,
}

impl Reno {
    /// # Panics
    /// If `cfg` is invalid (see [`RenoConfig::validate`]); scenario input is
    /// validated before it gets here, so this is a bug, not bad input.
    pub fn new(cfg: RenoConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid RenoConfig: {e}"))
    }

    pub fn try_new(cfg: RenoConfig) -> Result<Self, RenoConfigError> {
        cfg.validate()?;
        Ok(Reno {
            core: RenoCore::new(cfg.mss, cfg.initial_window_segments),
            ecn_reductions: 0,
            cfg,
        })
    }

    pub fn config(&self) -> &RenoConfig {
        &self.cfg
    }

    pub fn stats(&self) -> RenoStats {
        RenoStats {
            loss_reductions: self.core.loss_reductions(),
            ecn_reductions: self.ecn_reductions,
            rtos: self.core.rtos(),
        }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 3] = ["SlowStart", "CongestionAvoidance", "Recovery"];
        &STATES
    }

    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        self.core.on_ack_received(ack);
        self.core.cong_avoid(now, ack, ctx);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>) {
        // Everything but ECN-Echo is the core's.
        if self.core.on_congestion(now, ev, ctx).is_none() {
            return;
        }
        // RFC 3168 §6.1.2: react at most once per window; during loss
        // recovery the window has already been reduced (Linux tcp_enter_cwr
        // only acts below TCP_CA_CWR).
        if self.core.state() == State::Recovery {
            return;
        }
        // Linux tcp_reno_ssthresh; RFC 3168 §6.1.2 "halve cwnd, reduce
        // ssthresh".
        self.core.cut_to(self.core.halved());
        self.ecn_reductions += 1;
        self.core
            .transition_to(now, State::CongestionAvoidance { acked: 0 }, ctx);
    }

    fn cwnd(&self) -> u64 {
        self.core.cwnd()
    }

    fn ssthresh(&self) -> Option<u64> {
        self.core.ssthresh()
    }

    fn metrics(&self) -> CcMetrics {
        self.core.metrics(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Driver;
    use l4slab_core::Dur;

    const MSS: u64 = 1448;

    fn reno() -> Driver<Reno> {
        Driver::new(Reno::new(RenoConfig::default()))
    }

    fn segs(bytes: u64) -> u64 {
        assert_eq!(bytes % MSS, 0, "{bytes} is not a whole number of segments");
        bytes / MSS
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut d = reno();
        assert_eq!(segs(d.cc.cwnd()), 10); // RFC 6928 IW10
        let mut seen = Vec::new();
        for _ in 0..3 {
            d.send_and_ack_rounds(1);
            seen.push(segs(d.cc.cwnd()));
        }
        assert_eq!(seen, [20, 40, 80]);
        assert_eq!(d.cc.metrics().state, "SlowStart");
        assert_eq!(d.cc.ssthresh(), None);
        assert_eq!(d.now, Time::ZERO + Dur::from_millis(150));
    }

    #[test]
    fn slow_start_doubles_with_delayed_acks_too() {
        // One ACK per two segments: RFC 3465 L = 2*SMSS keeps doubling
        // (with L = 1*SMSS it would grow only 1.5x per RTT).
        let mut d = reno().segments_per_ack(2);
        d.send_and_ack_rounds(2);
        assert_eq!(segs(d.cc.cwnd()), 40);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_rtt() {
        let mut d = reno();
        d.send_and_ack_rounds(2); // 40 segments
        d.lose(MSS, true); // flight 40 -> ssthresh = cwnd = 20
        d.recovery_end();
        assert_eq!(segs(d.cc.cwnd()), 20);
        assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
        let mut seen = Vec::new();
        for _ in 0..5 {
            d.send_and_ack_rounds(1);
            seen.push(segs(d.cc.cwnd()));
        }
        // Byte counting: acking exactly one cwnd of bytes adds exactly one SMSS.
        assert_eq!(seen, [21, 22, 23, 24, 25]);
    }

    #[test]
    fn halves_once_per_loss_episode() {
        let mut d = reno();
        d.send_and_ack_rounds(3); // 80 segments
        d.lose(MSS, true);
        assert_eq!(segs(d.cc.cwnd()), 40);
        assert_eq!(d.cc.ssthresh(), Some(40 * MSS));
        assert_eq!(d.cc.metrics().state, "Recovery");
        // Same episode: the second loss is not a new congestion signal.
        d.lose(MSS, false);
        assert_eq!(segs(d.cc.cwnd()), 40);
        // No growth while recovering.
        d.ack(10 * MSS);
        assert_eq!(segs(d.cc.cwnd()), 40);
        d.recovery_end();
        assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
        // A new episode cuts again.
        d.lose(MSS, true);
        assert_eq!(segs(d.cc.cwnd()), 20);
        assert_eq!(d.cc.stats().loss_reductions, 2);
    }

    #[test]
    fn reduction_uses_cwnd_not_flight_size() {
        // Linux tcp_reno_ssthresh halves cwnd, whatever FlightSize is: a
        // sender using half its window, or one whose FlightSize includes a
        // window of SACKed data behind a hole (docs/models/reno.md).
        for flight in [20, 60] {
            let mut d = reno();
            d.send_and_ack_rounds(2); // 40 segments
            d.set_flight(Some(flight * MSS));
            d.lose(MSS, true);
            assert_eq!(segs(d.cc.cwnd()), 20, "flight {flight}");
        }
    }

    #[test]
    fn rto_collapses_to_one_segment_then_slow_starts_to_ssthresh() {
        let mut d = reno();
        d.send_and_ack_rounds(2); // 40 segments
        d.lose(MSS, true); // 20
        d.recovery_end();
        d.send_and_ack_rounds(4); // 24 in CA
        assert_eq!(segs(d.cc.cwnd()), 24);
        d.rto();
        assert_eq!(d.cc.cwnd(), MSS);
        assert_eq!(d.cc.ssthresh(), Some(12 * MSS)); // cwnd 24 / 2
        assert_eq!(d.cc.metrics().state, "SlowStart");
        // 1 -> 2 -> 4 -> 8 -> 12 (capped at ssthresh, rest counted in CA).
        let mut seen = Vec::new();
        for _ in 0..4 {
            d.send_and_ack_rounds(1);
            seen.push(d.cc.cwnd() as f64 / MSS as f64);
        }
        assert_eq!(seen, [2.0, 4.0, 8.0, 12.0]);
        assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
        assert_eq!(d.cc.stats().rtos, 1);
    }

    #[test]
    fn repeated_rto_keeps_ssthresh() {
        let mut d = reno();
        d.send_and_ack_rounds(2); // 40 segments
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(20 * MSS));
        // The retransmission times out again; cwnd is now one segment.
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(20 * MSS));
        assert_eq!(d.cc.cwnd(), MSS);
        // After new data is acked, a fresh timeout halves cwnd again.
        d.send_and_ack_rounds(3); // 1 -> 2 -> 4 -> 8
        assert_eq!(segs(d.cc.cwnd()), 8);
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(4 * MSS));
    }

    #[test]
    fn floor_is_two_segments() {
        let mut d = reno();
        // 10 -> 5 -> 2 (5/2 truncated, as Linux) -> max(1, 2) segments.
        for _ in 0..2 {
            d.lose(MSS, true);
            d.recovery_end();
        }
        assert_eq!(d.cc.cwnd(), 2 * MSS);
        d.lose(MSS, true);
        assert_eq!(d.cc.ssthresh(), Some(2 * MSS));
        assert_eq!(d.cc.cwnd(), 2 * MSS);
        d.recovery_end();
        d.ecn_echo();
        assert_eq!(d.cc.cwnd(), 2 * MSS);
        d.rto();
        assert_eq!(d.cc.ssthresh(), Some(2 * MSS));
        assert_eq!(d.cc.cwnd(), MSS); // RTO loss window is 1 SMSS, below the floor
    }

    #[test]
    fn ecn_echo_halves_like_loss_without_recovery() {
        let mut d = reno();
        d.send_and_ack_rounds(2); // 40
        d.ecn_echo();
        assert_eq!(segs(d.cc.cwnd()), 20);
        assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
        // Growth continues at once in congestion avoidance.
        d.send_and_ack_rounds(1);
        assert_eq!(segs(d.cc.cwnd()), 21);
        // During loss recovery an ECN-Echo is not a second signal.
        d.lose(MSS, true); // cwnd 21 -> 10 (truncated, as Linux)
        d.ecn_echo();
        assert_eq!(d.cc.cwnd(), 10 * MSS);
        assert_eq!(d.cc.stats().ecn_reductions, 1);
    }

    #[test]
    fn app_limited_acks_do_not_grow_the_window() {
        let mut d = reno();
        d.app_limited(true);
        d.send_and_ack_rounds(3);
        assert_eq!(segs(d.cc.cwnd()), 10);
        d.app_limited(false);
        d.send_and_ack_rounds(1);
        assert_eq!(segs(d.cc.cwnd()), 20);
    }

    #[test]
    fn rto_during_recovery_keeps_the_episode_ssthresh() {
        let mut d = reno();
        d.send_and_ack_rounds(2); // 40
        d.lose(MSS, true); // ssthresh 20
        d.rto(); // flight reported as cwnd = 20: ssthresh would be 10 by eq. 4
        assert_eq!(d.cc.ssthresh(), Some(20 * MSS));
        assert_eq!(d.cc.cwnd(), MSS);
        // in_recovery stays true on ACKs after an RTO, yet slow start runs.
        d.send_and_ack_rounds(1);
        assert_eq!(segs(d.cc.cwnd()), 2);
        // The episode's end does not disturb slow start.
        d.recovery_end();
        assert_eq!(d.cc.metrics().state, "SlowStart");
    }

    #[test]
    fn state_changes_are_traced() {
        let mut d = reno();
        d.send_and_ack_rounds(1);
        d.lose(MSS, true);
        d.recovery_end();
        d.rto();
        d.send_and_ack_rounds(4);
        assert_eq!(
            d.state_changes(),
            [
                ("SlowStart", "Recovery"),
                ("Recovery", "CongestionAvoidance"),
                ("CongestionAvoidance", "SlowStart"),
                ("SlowStart", "CongestionAvoidance"),
            ]
        );
    }

    #[test]
    fn invalid_config_is_a_typed_error() {
        let bad = RenoConfig {
            mss: 0,
            ..RenoConfig::default()
        };
        assert_eq!(
            Reno::try_new(bad).unwrap_err(),
            RenoConfigError::Window(WindowConfigError::ZeroMss)
        );
        let bad = RenoConfig {
            initial_window_segments: 0,
            ..RenoConfig::default()
        };
        assert_eq!(
            Reno::try_new(bad).unwrap_err().to_string(),
            "initial_window_segments: must be at least 1 segment"
        );
    }
}
