//! BBRv3 as draft-ietf-ccwg-bbr-06 specifies it (REFERENCES §3.7), checked
//! function by function against Linux BBRv3 (google/bbr v3, tcp_bbr.c) and
//! following it where the two differ (listed below). Section numbers are the
//! draft's; function names are its pseudocode names or Linux's.
//!
//! States (§5.1.1): Startup (pacing 2.77, cwnd gain 2) → Drain (0.34) →
//! ProbeBW_DOWN (0.91) → ProbeBW_CRUISE (1.0) → ProbeBW_REFILL (1.0, one
//! round) → ProbeBW_UP (1.25, cwnd gain 2.25) → DOWN …, and ProbeRTT (cwnd
//! 0.5 BDP for 200 ms and a round, at most every 5 s) from any state. The
//! model: `max_bw` = max delivery rate over the current and previous ProbeBW
//! cycle, `min_rtt` over 10 s, `extra_acked` over 5-10 rounds, and the loss
//! bounds in `bounds.rs` (LossThresh 2 %, Beta 0.7, Headroom 0.15).
//! Bandwidth probes start after 2 s + U(0, 1) s or after
//! `min(target_inflight, 63)` rounds (Reno coexistence), whichever is first.
//!
//! **Files.** One per state of §5.1.1, as the draft describes them:
//! `startup.rs` (§5.3.1), `drain.rs` (§5.3.2), `probe_bw.rs` (§5.3.3, with its
//! DOWN / CRUISE / REFILL / UP phases), `probe_rtt.rs` (§5.3.4). Shared by all
//! states: this file (the controller, the state enum and its one checked
//! transition, the per-ACK sequence of §5.2), `model.rs` (rounds, `max_bw`,
//! ACK aggregation, the volumes of §5.6.4.2), `bounds.rs` (the loss-driven
//! bounds of §5.5.10), `control.rs` (pacing rate, send quantum and cwnd,
//! §5.6) and `config.rs` (the parameters).
//!
//! **Which draft.** The ProbeRTT schedule follows draft-ietf-ccwg-bbr-06
//! (and Linux BBRv3, `bbr_probe_rtt_win_ms = 5000`): `ProbeRTTInterval = 5 s`
//! with its own `probe_rtt_min_delay` filter, `MinRTTFilterLen = 10 s`. The
//! working group's editor's copy after -06 merges the two into one 10 s
//! interval; `probe_rtt_interval` can be set to 10 s for that.
//!
//! **Not implemented.**
//! * ECN: the draft specifies no ECN response (§3.7, future work). The
//!   controller sends Not-ECT, so no CE mark or ECN-Echo ever reaches it;
//!   an `EcnEcho` event is ignored.
//!
//! **Loss, per packet and per ACK.** Each packet the transport marks lost
//! reaches `on_packet_lost` with its send-time snapshot (Linux
//! `bbr_skb_marked_lost`, draft §5.5.10.2 `HandleLostPacket`): it notes the
//! loss round and, while ACKs carry bandwidth-probe feedback, tests that
//! packet's flight (`RS.lost = C.lost - P.lost > 2 % * P.tx_in_flight`) and
//! sets `inflight_longterm` from the in-flight at which loss crossed 2 %
//! (`bbr_inflight_hi_from_lost_skb`, `InflightAtLoss`; `probe_bw.rs`). Each
//! ACK's sample is tested too (`bbr_adapt_upper_bounds`), reacting once per
//! probe whichever comes first.
//!
//! **Where it follows Linux BBRv3 rather than the draft** (google/bbr,
//! branch v3, net/ipv4/tcp_bbr.c; docs/models/bbr3.md lists each):
//! * Startup's loss exit is `bbr_check_loss_too_high_in_startup`: on the
//!   ACK that starts a loss round, in fast recovery, with at least 6 ACKs
//!   that marked data lost in the round (`loss_events_in_round`) and this
//!   sample's `RS.lost > 2 % * RS.tx_in_flight`; then
//!   `inflight_longterm = max(Inflight(max_bw, 1.0), inflight_latest)`
//!   (`bbr_handle_queue_too_high_in_startup`).
//! * `bbr_check_full_bw_reached` tests growth on every ACK and counts flat
//!   rounds at round starts; Startup's cwnd grows while below its target or
//!   below twice the initial window (`bbr_set_cwnd`).
//! * Gains in BBR_UNIT = 256: Startup 710/256, Drain 88/256 (1/2.885),
//!   ProbeBW_DOWN 232/256 (0.91); Drain has no round limit and its entry
//!   resets the congestion signals (`bbr_check_drain`); CRUISE caps
//!   `inflight_shortterm` by `inflight_longterm`
//!   (`bbr_start_bw_probe_cruise`); `TargetInflight` includes the
//!   quantization budget (`bbr_target_inflight`); the `max_bw` filter keeps
//!   its old window across a cycle without samples
//!   (`bbr_advance_max_bw_filter`).
//! * An RTO resets the full-bandwidth detector and, outside a bandwidth
//!   probe, starts `inflight_shortterm` at the cwnd before the RTO
//!   (`bbr_set_state`); a spurious-recovery undo resets the detector and
//!   raises the three bounds back to their values when recovery began
//!   (`bbr_undo_cwnd`, saved in `bbr_ssthresh`).
//!
//! **Approximations.**
//! * `C.is_cwnd_limited`: a send left less than one segment of cwnd free at
//!   some point since the start of the previous round.
//! * Restart from idle (§5.4): the pipe was empty when a packet was sent,
//!   outside loss recovery, after data had been delivered.
//! * `InitPacingRate` is redone at the first RTT sample (Linux
//!   `bbr_init_pacing_rate_from_rtt`), since the controller is created
//!   before the handshake measures one.
//! * The TCP offload budget is `3 * send_quantum` (§5.5.8.1) although the
//!   transport paces every segment individually.

mod bounds;
mod config;
mod control;
mod drain;
mod model;
mod probe_bw;
mod probe_rtt;
mod startup;

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{Dur, FlowId, Rate, Time, Tracer};

use self::bounds::Bounds;
use super::filters::{AckAggregation, CycleMaxFilter};
use super::{AppLimitedMark, CaState, LossCounter, ProbeRttDwell, RateSample};
use crate::cong;
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent, LostPacket};

pub use self::config::{
    Bbr3Config, Bbr3ConfigError, BETA, HEADROOM, LOSS_THRESH, PARAMS, PROBE_RTT_INTERVAL,
};

/// Sub-states of ProbeBW (§5.3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeBwPhase {
    Down,
    Cruise,
    Refill,
    Up,
}

/// How Startup ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupExit {
    /// §5.3.1.2: three rounds with less than 25 % delivery-rate growth.
    BandwidthPlateau,
    /// §5.3.1.3: a full round of fast recovery with > 2 % loss in ≥ 6 events.
    Loss,
}

/// §2.14 `BBR.ack_phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The state machine of §5.1.1, each state with the data only it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    /// `start_round` = §2.7 `BBR.drain_start_round`.
    Drain {
        start_round: u64,
    },
    /// `phase_start` = when this sub-state was entered.
    ProbeBw {
        phase: ProbeBwPhase,
        phase_start: Time,
    },
    /// `BBR.probe_rtt_done_stamp` and `BBR.probe_rtt_round_done` (the
    /// dwell, shared with BBR v1).
    ProbeRtt(ProbeRttDwell),
}

impl Machine for Mode {
    const NAME: &'static str = "BBR";

    /// Names used in traces and plots; stable.
    fn name(self) -> &'static str {
        match self {
            Mode::Startup => "Startup",
            Mode::Drain { .. } => "Drain",
            Mode::ProbeBw {
                phase: ProbeBwPhase::Down,
                ..
            } => "ProbeBW_DOWN",
            Mode::ProbeBw {
                phase: ProbeBwPhase::Cruise,
                ..
            } => "ProbeBW_CRUISE",
            Mode::ProbeBw {
                phase: ProbeBwPhase::Refill,
                ..
            } => "ProbeBW_REFILL",
            Mode::ProbeBw {
                phase: ProbeBwPhase::Up,
                ..
            } => "ProbeBW_UP",
            Mode::ProbeRtt(_) => "ProbeRTT",
        }
    }

    /// §5.1.1 state transition diagram: every state may enter ProbeRTT;
    /// Startup → Drain → DOWN → CRUISE → REFILL → UP → DOWN; DOWN → REFILL
    /// (`IsTimeToProbeBW` from DOWN, or precautionary acceleration);
    /// ProbeRTT → DOWN (then CRUISE) or Startup (§5.3.4.4 `ExitProbeRTT`).
    fn may_enter(self, next: Mode) -> bool {
        use Mode::*;
        use ProbeBwPhase::*;
        let bw = |p| ProbeBw {
            phase: p,
            phase_start: Time::ZERO,
        };
        let (from, to) = (self.strip(), next.strip());
        matches!(
            (from, to),
            (Startup | Drain { .. } | ProbeBw { .. }, ProbeRtt(_))
                | (Startup, Drain { .. })
                | (ProbeRtt(_), Startup)
        ) || [
            (Drain { start_round: 0 }, bw(Down)),
            (bw(Down), bw(Cruise)),
            (bw(Down), bw(Refill)),
            (bw(Cruise), bw(Refill)),
            (bw(Refill), bw(Up)),
            (bw(Up), bw(Down)),
            (ProbeRtt(ProbeRttDwell::ENTER), bw(Down)),
        ]
        .contains(&(from, to))
    }
}

impl Mode {
    fn phase(self) -> Option<ProbeBwPhase> {
        match self {
            Mode::ProbeBw { phase, .. } => Some(phase),
            _ => None,
        }
    }

    /// The state without its data, for edge checks.
    fn strip(self) -> Mode {
        match self {
            Mode::Startup => Mode::Startup,
            Mode::Drain { .. } => Mode::Drain { start_round: 0 },
            Mode::ProbeBw { phase, .. } => Mode::ProbeBw {
                phase,
                phase_start: Time::ZERO,
            },
            Mode::ProbeRtt(_) => Mode::ProbeRtt(ProbeRttDwell::ENTER),
        }
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bbr3Stats {
    /// Packet-timed rounds (`BBR.round_count`).
    pub rounds: u64,
    /// How Startup ended, once it has.
    pub startup_exit: Option<StartupExit>,
    /// ProbeRTT episodes entered.
    pub probe_rtt_entries: u64,
    /// Bandwidth probes (ProbeBW_UP entries).
    pub bw_probes: u64,
    /// `HandleInflightTooHigh` reactions (each sets `inflight_longterm`).
    pub inflight_too_high: u64,
    /// Of those, the ones made as a packet was marked lost
    /// (`bbr_skb_marked_lost`), not on an ACK.
    pub inflight_too_high_at_loss: u64,
    /// Loss rounds that cut `bw_shortterm`/`inflight_shortterm`.
    pub short_term_cuts: u64,
    /// Fast-recovery episodes.
    pub recovery_episodes: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
}

/// BBRv3 (see the module documentation).
#[derive(Debug)]
pub struct Bbr3 {
    cfg: Bbr3Config,
    mode: Checked<Mode>,
    started: bool,
    // --- control parameters ---
    cwnd: u64,
    pacing_rate: Rate,
    send_quantum: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    has_seen_rtt: bool,
    // --- rounds (§5.5.1) ---
    round_count: u64,
    round_start: bool,
    next_round_delivered: u64,
    rounds_since_probe_up: u64,
    delivered: u64,
    // --- model ---
    max_bw: CycleMaxFilter,
    cycle_count: u64,
    bw: Rate,
    min_rtt: Option<Dur>,
    min_rtt_stamp: Time,
    probe_rtt_min_delay: Option<Dur>,
    probe_rtt_min_stamp: Time,
    probe_rtt_expired: bool,
    extra_acked: AckAggregation,
    bounds: Bounds,
    // --- Startup (§5.3.1) ---
    full_bw: Rate,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    /// ACKs with newly lost data in the current loss round (Linux `loss_events_in_round`).
    loss_events_in_round: u32,
    // --- ProbeBW (§5.3.3) ---
    ack_phase: AckPhase,
    bw_probe_wait: Dur,
    cycle_stamp: Time,
    prev_probe_precautionary: bool,
    /// Sends found cwnd full in this round / the previous round.
    cwnd_limited_now: bool,
    cwnd_limited_prev: bool,
    // --- recovery, ProbeRTT, idle ---
    ca: CaState,
    prior_cwnd: u64,
    idle_restart: bool,
    losses: LossCounter,
    app_mark: AppLimitedMark,
    stats: Bbr3Stats,
}

impl Bbr3 {
    /// # Panics
    /// If `cfg` is invalid ([`Bbr3Config::validate`]).
    pub fn new(cfg: Bbr3Config) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid Bbr3Config: {e}"))
    }

    /// §5.2.1 `OnInit()` (the time-dependent parts run at the first event).
    pub fn try_new(cfg: Bbr3Config) -> Result<Self, Bbr3ConfigError> {
        cfg.validate()?;
        let cwnd = cfg.mss.saturating_mul(cfg.initial_window_segments);
        Ok(Bbr3 {
            mode: Checked::new(Mode::Startup),
            started: false,
            cwnd,
            pacing_rate: Rate::ZERO,
            send_quantum: 2 * cfg.mss,
            pacing_gain: cfg.startup_pacing_gain,
            cwnd_gain: cfg.default_cwnd_gain,
            has_seen_rtt: false,
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            rounds_since_probe_up: 0,
            delivered: 0,
            max_bw: CycleMaxFilter::default(),
            cycle_count: 0,
            bw: Rate::ZERO,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: Time::ZERO,
            probe_rtt_expired: false,
            extra_acked: AckAggregation::default(),
            bounds: Bounds::default(),
            full_bw: Rate::ZERO,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            loss_events_in_round: 0,
            ack_phase: AckPhase::Init,
            bw_probe_wait: Dur::ZERO,
            cycle_stamp: Time::ZERO,
            prev_probe_precautionary: false,
            cwnd_limited_now: false,
            cwnd_limited_prev: false,
            ca: CaState::Open,
            prior_cwnd: 0,
            idle_restart: false,
            losses: LossCounter::default(),
            app_mark: AppLimitedMark::default(),
            stats: Bbr3Stats::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &Bbr3Config {
        &self.cfg
    }

    pub fn stats(&self) -> &Bbr3Stats {
        &self.stats
    }

    /// State name (`"Startup"`, `"Drain"`, `"ProbeBW_DOWN"`, ... `"ProbeRTT"`).
    pub fn mode_name(&self) -> &'static str {
        self.mode.get().name()
    }

    /// The ProbeBW sub-state, in ProbeBW.
    pub fn probe_bw_phase(&self) -> Option<ProbeBwPhase> {
        self.mode.get().phase()
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    /// `BBR.max_bw`.
    pub fn max_bw(&self) -> Rate {
        Rate::from_bps(self.max_bw.get())
    }

    /// `BBR.bw = min(max_bw, bw_shortterm)`.
    pub fn bw(&self) -> Rate {
        self.bw
    }

    /// `BBR.min_rtt`.
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }

    /// `BBR.inflight_longterm` in bytes (`None` = no bound).
    pub fn inflight_longterm(&self) -> Option<u64> {
        self.bounds.inflight_longterm
    }

    /// `BBR.inflight_shortterm` in bytes (`None` = no bound).
    pub fn inflight_shortterm(&self) -> Option<u64> {
        self.bounds.inflight_shortterm
    }

    /// `BBR.bw_shortterm` (`None` = no bound).
    pub fn bw_shortterm(&self) -> Option<Rate> {
        self.bounds.bw_shortterm
    }

    /// `BBR.round_count`.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// `BBR.cycle_count`: ProbeBW cycles completed (max-filter time).
    pub fn cycle_count(&self) -> u64 {
        self.cycle_count
    }

    /// In ProbeRTT: `BBR.probe_rtt_done_stamp`, once in-flight is at the
    /// ProbeRTT cwnd.
    pub fn probe_rtt_done_at(&self) -> Option<Time> {
        match self.mode.get() {
            Mode::ProbeRtt(dwell) => dwell.done_at,
            _ => None,
        }
    }

    /// `BBR.rounds_since_probe_up`.
    pub fn rounds_since_probe_up(&self) -> u64 {
        self.rounds_since_probe_up
    }

    /// `BBR.bw_probe_wait` of the current cycle.
    pub fn bw_probe_wait(&self) -> Dur {
        self.bw_probe_wait
    }

    /// §5.3.3.8 `TargetInflight()`, as Linux `bbr_target_inflight`:
    /// `min(bbr_inflight(bw, 1.0), cwnd)` — the BDP with its quantization
    /// budget (the draft: `min(BBR.bdp, C.cwnd)`), bytes.
    pub fn target_inflight(&self) -> u64 {
        self.inflight(self.bw, 1.0).min(self.cwnd)
    }

    /// §5.6.4.5 `ProbeRTTCwnd()`: `max(0.5 * BDP, MinPipeCwnd)`, bytes.
    pub fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, self.cfg.probe_rtt_cwnd_gain)
            .max(self.min_pipe_cwnd())
    }

    /// `BBR.extra_acked`, bytes.
    pub fn extra_acked(&self) -> u64 {
        self.extra_acked.get()
    }

    /// Linux `bbr_ack_aggregation_cwnd`: `extra_acked`, at most
    /// `bw * bbr_extra_acked_max_us` (100 ms), bytes.
    fn ack_aggregation_cwnd(&self) -> u64 {
        self.extra_acked
            .get()
            .min(self.bw.bytes_in(self.cfg.extra_acked_max))
    }

    fn smss(&self) -> u64 {
        self.cfg.mss
    }

    fn min_pipe_cwnd(&self) -> u64 {
        self.cfg.min_pipe_cwnd_segments * self.cfg.mss
    }

    fn initial_cwnd(&self) -> u64 {
        self.cfg.initial_window_segments * self.cfg.mss
    }

    fn in_probe_bw(&self) -> bool {
        matches!(self.mode.get(), Mode::ProbeBw { .. })
    }

    /// §5.3.3.9 `IsProbingBW()`.
    fn is_probing_bw(&self) -> bool {
        matches!(
            self.mode.get().phase(),
            Some(ProbeBwPhase::Refill | ProbeBwPhase::Up)
        ) || self.mode.get() == Mode::Startup
    }

    /// `C.is_cwnd_limited`, approximated (module docs).
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_now || self.cwnd_limited_prev
    }

    /// The one place the state changes: checks the §5.1.1 edge, sets the
    /// gains of the new state (§5.6.1 table) and traces it.
    fn transition_to(&mut self, now: Time, next: Mode, flow: FlowId, tracer: &mut dyn Tracer) {
        cong::enter(&mut self.mode, now, next, flow, tracer);
        let c = &self.cfg;
        (self.pacing_gain, self.cwnd_gain) = match next {
            Mode::Startup => (c.startup_pacing_gain, c.default_cwnd_gain),
            Mode::Drain { .. } => (c.drain_pacing_gain, c.default_cwnd_gain),
            Mode::ProbeBw { phase, .. } => match phase {
                ProbeBwPhase::Down => (c.probe_down_pacing_gain, c.default_cwnd_gain),
                ProbeBwPhase::Cruise | ProbeBwPhase::Refill => (1.0, c.default_cwnd_gain),
                ProbeBwPhase::Up => (c.probe_up_pacing_gain, c.probe_up_cwnd_gain),
            },
            Mode::ProbeRtt(_) => (1.0, c.probe_rtt_cwnd_gain),
        };
    }

    /// The time-dependent parts of §5.2.1 `OnInit()`, at the first event.
    fn ensure_started(&mut self, now: Time) {
        if self.started {
            return;
        }
        self.started = true;
        self.min_rtt_stamp = now;
        self.probe_rtt_min_stamp = now;
        self.extra_acked.restart_epoch(now);
        self.init_pacing_rate(Dur::ZERO);
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 7] = [
            "Startup",
            "Drain",
            "ProbeBW_DOWN",
            "ProbeBW_CRUISE",
            "ProbeBW_REFILL",
            "ProbeBW_UP",
            "ProbeRTT",
        ];
        &STATES
    }

    /// §5.2.2 `OnTransmit()` → `HandleRestartFromIdle()` (§5.4.1), plus the
    /// cwnd-limited bookkeeping.
    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        if in_flight + self.smss() > self.cwnd {
            self.cwnd_limited_now = true;
        }
        // "if (C.inflight == 0 && C.app_limited)" (module docs: inferred).
        let idle = in_flight <= bytes && self.ca == CaState::Open && self.delivered > 0;
        if !idle {
            return;
        }
        self.idle_restart = true;
        self.extra_acked.restart_epoch(now);
        if self.in_probe_bw() {
            self.set_pacing_rate_with_gain(1.0);
        } else if matches!(self.mode.get(), Mode::ProbeRtt(_)) {
            self.check_probe_rtt_done(now, ctx.flow, ctx.rng, ctx.tracer);
        }
    }

    /// §5.2.3 `UpdateOnACK()`.
    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        self.delivered = ack.delivered;
        let rs = RateSample::from_ack(ack, &mut self.losses, &self.app_mark);
        if rs.newly_lost > 0 {
            // §5.2.4 per-loss steps: HandleLostPacket() -> NoteLoss().
            if self.bounds.note_loss(self.delivered) {
                self.save_cwnd(); // SaveStateUponLoss()
            }
            // Linux bbr_check_loss_too_high_in_startup: "if (rs->losses ...)
            // bbr->loss_events_in_round++"
            self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
        }
        if !self.has_seen_rtt && !ack.srtt.is_zero() {
            self.init_pacing_rate(ack.srtt);
        }
        if !rs.has_data() {
            return; // no rate sample: nothing to update
        }
        // UpdateModelAndState()
        self.bounds
            .update_latest_delivery_signals(&rs, self.delivered);
        self.update_congestion_signals(&rs);
        self.update_ack_aggregation(now, &rs);
        // Linux bbr_update_model order: loss exit, plateau, then Drain.
        self.check_startup_high_loss(&rs);
        self.check_full_bw_reached(&rs);
        self.check_startup_done(now, ctx);
        self.check_drain_done(now, ack.in_flight, ctx);
        self.update_probe_bw_cycle_phase(now, ack.in_flight, &rs, ctx);
        self.update_min_rtt(now, &rs);
        self.check_probe_rtt(now, ack, &rs, ctx);
        self.bounds.advance_latest_delivery_signals(&rs);
        if self.bounds.loss_round_start {
            // Linux: "if (bbr->loss_round_start) bbr->loss_events_in_round = 0;"
            self.loss_events_in_round = 0;
        }
        // BoundBWForModel(): BBR.bw = min(BBR.max_bw, BBR.bw_shortterm)
        let max_bw = self.max_bw();
        self.bw = self.bounds.bw_shortterm.map_or(max_bw, |lo| lo.min(max_bw));
        // UpdateControlParameters()
        self.set_pacing_rate_with_gain(self.pacing_gain);
        self.set_send_quantum();
        self.set_cwnd(&rs);
    }

    /// Linux `bbr_skb_marked_lost` (`Bbr3::handle_lost_packet`).
    fn on_packet_lost(&mut self, now: Time, lost: &LostPacket, ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        self.handle_lost_packet(now, lost, ctx);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, _ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        match *ev {
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } if self.ca == CaState::Open => {
                // §5.6.4.4 OnEnterFastRecovery(): SaveCwnd(); SaveStateUponLoss()
                // (Linux bbr_ssthresh: bbr_save_cwnd and the undo state)
                self.save_cwnd();
                self.bounds.save_for_undo();
                self.ca = CaState::Recovery;
                self.stats.recovery_episodes += 1;
            }
            // Lost bytes reach the model through `total_lost` on the next ACK.
            CongestionEvent::Loss { .. } => {}
            CongestionEvent::Rto { .. } => {
                // §5.6.4.4 OnEnterRTO(): SaveCwnd(); SaveStateUponLoss();
                // C.cwnd = C.inflight + 1 — every outstanding segment has
                // just been marked lost, so in flight is 0: one segment.
                self.save_cwnd();
                self.bounds.save_for_undo();
                self.ca = CaState::Loss;
                self.cwnd = self.smss();
                self.stats.rtos += 1;
                // Linux bbr_set_state(TCP_CA_Loss): "bbr_reset_full_bw(sk);
                // if (!bbr_is_probing_bandwidth(sk) && bbr->inflight_lo == ~0U)
                // bbr->inflight_lo = max(tcp_snd_cwnd(tp), bbr->prior_cwnd);"
                self.reset_full_bw();
                if !self.is_probing_bw() && self.bounds.inflight_shortterm.is_none() {
                    self.bounds.inflight_shortterm = Some(self.cwnd.max(self.prior_cwnd));
                }
            }
            // §3.7: no specified ECN response; data is Not-ECT.
            CongestionEvent::EcnEcho { .. } => {}
            CongestionEvent::RecoveryEnd | CongestionEvent::Undo => {
                if *ev == CongestionEvent::Undo {
                    // Linux bbr_undo_cwnd: "spurious slow-down; reset full
                    // bw detector", bounds back to their saved values.
                    self.reset_full_bw();
                    self.bounds.undo();
                }
                // §5.6.4.4: "Upon exiting loss recovery ... RestoreCwnd()";
                // BoundCwndForModel() follows at the end of this ACK.
                if self.ca != CaState::Open {
                    self.ca = CaState::Open;
                    self.restore_cwnd();
                }
            }
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<Rate> {
        Some(self.pacing_rate)
    }

    fn metrics(&self) -> CcMetrics {
        let opt = |v: Option<u64>| v.map_or(f64::INFINITY, |x| x as f64);
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: None,
            pacing_rate: Some(self.pacing_rate),
            state: self.mode.get().name(),
            extra: vec![
                ("pacing_gain", self.pacing_gain),
                ("cwnd_gain", self.cwnd_gain),
                ("max_bw_bps", self.max_bw.get() as f64),
                ("bw_bps", self.bw.as_bps() as f64),
                (
                    "min_rtt_ms",
                    self.min_rtt.map_or(f64::NAN, |d| d.as_millis_f64()),
                ),
                (
                    "inflight_longterm_bytes",
                    opt(self.bounds.inflight_longterm),
                ),
                (
                    "inflight_shortterm_bytes",
                    opt(self.bounds.inflight_shortterm),
                ),
                (
                    "bw_shortterm_bps",
                    opt(self.bounds.bw_shortterm.map(Rate::as_bps)),
                ),
                ("extra_acked_bytes", self.ack_aggregation_cwnd() as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests;
