//! BBRv3 as draft-ietf-ccwg-bbr-06 specifies it (REFERENCES §3.7). Section
//! numbers below are the draft's; function names are its pseudocode names.
//!
//! States (§5.1.1): Startup (pacing 2.77, cwnd gain 2) → Drain (0.5) →
//! ProbeBW_DOWN (0.90) → ProbeBW_CRUISE (1.0) → ProbeBW_REFILL (1.0, one
//! round) → ProbeBW_UP (1.25, cwnd gain 2.25) → DOWN …, and ProbeRTT (cwnd
//! 0.5 BDP for 200 ms and a round, at most every 5 s) from any state. The
//! model: `max_bw` = max delivery rate over the current and previous ProbeBW
//! cycle, `min_rtt` over 10 s, `extra_acked` over 10 rounds, and the loss
//! bounds in `v3_bounds.rs` (LossThresh 2 %, Beta 0.7, Headroom 0.15).
//! Bandwidth probes start after 2 s + U(0, 1) s or after
//! `min(target_inflight, 63)` rounds (Reno coexistence), whichever is first.
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
//! * Spurious-recovery undo (§5.5.11): the transport never declares a
//!   recovery spurious. `SaveStateUponLoss` therefore only saves cwnd.
//! * `HandleLostPacket`'s per-packet `InflightAtLoss` refinement (§5.5.10.2):
//!   the transport reports losses as byte counts without the lost packet's
//!   send-time snapshot, so `IsInflightTooHigh` is evaluated on each ACK with
//!   the acked packet's `tx_in_flight` and `RS.lost = C.lost - P.lost`, as
//!   Linux BBRv3 also does in `bbr_adapt_upper_bounds`.
//!
//! **Approximations (documented in docs/models/bbr3.md).**
//! * Startup exit on loss (§5.3.1.3): "≥ 6 discontiguous lost ranges in a
//!   round" is counted as ≥ 6 ACKs in the loss round that newly marked data
//!   lost (Linux `loss_events_in_round` does the same); the round's loss
//!   rate is `lost / (lost + delivered)` over that loss round; "in fast
//!   recovery for a full round" means the loss round that just ended began
//!   (at a round boundary or at its first loss, `NoteLoss`) after recovery
//!   did. Linux BBRv3 instead tests `IsInflightTooHigh` on the round's last
//!   ACK and only that recovery is still on.
//! * `C.is_cwnd_limited`: a send left less than one segment of cwnd free at
//!   some point since the start of the previous round.
//! * Restart from idle (§5.4): the pipe was empty when a packet was sent,
//!   outside loss recovery, after data had been delivered.
//! * `InitPacingRate` is redone at the first RTT sample (Linux
//!   `bbr_init_pacing_rate_from_rtt`), since the controller is created
//!   before the handshake measures one.
//! * The TCP offload budget is `3 * send_quantum` (§5.5.8.1) although the
//!   transport paces every segment individually.

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, TraceEvent, Tracer};

use super::filters::{CycleMaxFilter, MaxFilter};
use super::v3_bounds::Bounds;
use super::{AppLimitedMark, CaState, LossCounter, RateSample};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent};

/// Parameters of [`Bbr3`]; defaults are the draft-ietf-ccwg-bbr-06 constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr3Config {
    /// `C.SMSS` in bytes (TCP payload, §2.2): 1448.
    pub mss: u64,
    /// `C.InitialCwnd` in segments: 10 (RFC 6928).
    pub initial_window_segments: u64,
    /// §2.5 `BBR.StartupPacingGain` = 4 ln 2 ≈ 2.77.
    pub startup_pacing_gain: f64,
    /// §2.5 `BBR.DrainPacingGain` = 0.5.
    pub drain_pacing_gain: f64,
    /// §2.6 `BBR.DefaultCwndGain` = 2.
    pub default_cwnd_gain: f64,
    /// §5.3.3.1 ProbeBW_DOWN pacing gain = 0.90.
    pub probe_down_pacing_gain: f64,
    /// §5.3.3.5 ProbeBW_UP pacing gain = 1.25.
    pub probe_up_pacing_gain: f64,
    /// §5.3.3.5 ProbeBW_UP cwnd gain = 2.25.
    pub probe_up_cwnd_gain: f64,
    /// §2.16.2 `BBR.ProbeRTTCwndGain` = 0.5.
    pub probe_rtt_cwnd_gain: f64,
    /// §2.5 `BBR.PacingMarginPercent` = 1.
    pub pacing_margin_percent: f64,
    /// §2.8 `BBR.LossThresh` = 2 % per round.
    pub loss_thresh: f64,
    /// §2.8 `BBR.Beta` = 0.7.
    pub beta: f64,
    /// §2.8 `BBR.Headroom` = 0.15.
    pub headroom: f64,
    /// §2.8 `BBR.MinPipeCwnd` = 4 segments.
    pub min_pipe_cwnd_segments: u64,
    /// §5.3.1.2 full pipe: growth below this factor (1.25) ...
    pub full_bw_growth: f64,
    /// ... for this many rounds (3).
    pub full_bw_count: u32,
    /// §5.3.1.3 `BBRStartupFullLossCnt` = 6 lost ranges in a round.
    pub startup_full_loss_count: u32,
    /// §5.3.2 Drain ends after at most this many rounds (3).
    pub drain_max_rounds: u64,
    /// §2.12 `BBR.ExtraAckedFilterLen` = 10 rounds.
    pub extra_acked_filter_len: u64,
    /// §2.16.1 `BBR.MinRTTFilterLen` = 10 s.
    pub min_rtt_filter_len: Dur,
    /// §5.3.4 `BBR.ProbeRTTInterval` = 5 s (-06; see the module docs).
    pub probe_rtt_interval: Dur,
    /// §2.16.2 `BBR.ProbeRTTDuration` = 200 ms.
    pub probe_rtt_duration: Dur,
    /// §5.3.3.8 `PickProbeWait`: `bw_probe_wait = 2 s + U(0, 1) s` — the 2 s ...
    pub bw_probe_wait_base: Dur,
    /// ... and the 1 s of uniform randomness.
    pub bw_probe_wait_rand: Dur,
    /// §5.3.3.8 `IsRenoCoexistenceProbeTime`: at most 63 rounds between probes.
    pub bw_probe_max_rounds: u64,
    /// §5.6.3 `SetSendQuantum`: `pacing_rate * 1 ms` ...
    pub send_quantum_interval: Dur,
    /// ... at most 64 KBytes.
    pub send_quantum_max: u64,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            mss: 1448,
            initial_window_segments: 10,
            startup_pacing_gain: 2.77,
            drain_pacing_gain: 0.5,
            default_cwnd_gain: 2.0,
            probe_down_pacing_gain: 0.90,
            probe_up_pacing_gain: 1.25,
            probe_up_cwnd_gain: 2.25,
            probe_rtt_cwnd_gain: 0.5,
            pacing_margin_percent: 1.0,
            loss_thresh: 0.02,
            beta: 0.7,
            headroom: 0.15,
            min_pipe_cwnd_segments: 4,
            full_bw_growth: 1.25,
            full_bw_count: 3,
            startup_full_loss_count: 6,
            drain_max_rounds: 3,
            extra_acked_filter_len: 10,
            min_rtt_filter_len: Dur::from_secs(10),
            probe_rtt_interval: Dur::from_secs(5),
            probe_rtt_duration: Dur::from_millis(200),
            bw_probe_wait_base: Dur::from_secs(2),
            bw_probe_wait_rand: Dur::from_secs(1),
            bw_probe_max_rounds: 63,
            send_quantum_interval: Dur::from_millis(1),
            send_quantum_max: 64 * 1024,
        }
    }
}

/// Why a [`Bbr3Config`] is unusable.
#[derive(Clone, Debug, PartialEq)]
pub enum Bbr3ConfigError {
    /// `mss` is zero.
    ZeroMss,
    /// `initial_window_segments` is zero.
    ZeroInitialWindow,
    /// A gain or factor is not a positive finite number, or a fraction is not in `[0, 1)`.
    BadFactor(&'static str, f64),
    /// A count or duration is zero.
    Zero(&'static str),
}

impl fmt::Display for Bbr3ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bbr3ConfigError::ZeroMss => write!(f, "mss: must be at least 1 byte"),
            Bbr3ConfigError::ZeroInitialWindow => {
                write!(f, "initial_window_segments: must be at least 1 segment")
            }
            Bbr3ConfigError::BadFactor(k, v) => write!(f, "{k}: {v} is out of range"),
            Bbr3ConfigError::Zero(k) => write!(f, "{k}: must be positive"),
        }
    }
}

impl std::error::Error for Bbr3ConfigError {}

impl Bbr3Config {
    pub fn validate(&self) -> Result<(), Bbr3ConfigError> {
        if self.mss == 0 {
            return Err(Bbr3ConfigError::ZeroMss);
        }
        if self.initial_window_segments == 0 {
            return Err(Bbr3ConfigError::ZeroInitialWindow);
        }
        for (k, v) in [
            ("startup_pacing_gain", self.startup_pacing_gain),
            ("drain_pacing_gain", self.drain_pacing_gain),
            ("default_cwnd_gain", self.default_cwnd_gain),
            ("probe_down_pacing_gain", self.probe_down_pacing_gain),
            ("probe_up_pacing_gain", self.probe_up_pacing_gain),
            ("probe_up_cwnd_gain", self.probe_up_cwnd_gain),
            ("probe_rtt_cwnd_gain", self.probe_rtt_cwnd_gain),
            ("full_bw_growth", self.full_bw_growth),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Bbr3ConfigError::BadFactor(k, v));
            }
        }
        for (k, v) in [
            ("pacing_margin_percent", self.pacing_margin_percent / 100.0),
            ("loss_thresh", self.loss_thresh),
            ("beta", self.beta),
            ("headroom", self.headroom),
        ] {
            if !(0.0..1.0).contains(&v) {
                return Err(Bbr3ConfigError::BadFactor(k, v));
            }
        }
        for (k, zero) in [
            ("min_pipe_cwnd_segments", self.min_pipe_cwnd_segments == 0),
            ("full_bw_count", self.full_bw_count == 0),
            ("extra_acked_filter_len", self.extra_acked_filter_len == 0),
            ("min_rtt_filter_len", self.min_rtt_filter_len.is_zero()),
            ("probe_rtt_interval", self.probe_rtt_interval.is_zero()),
            ("bw_probe_max_rounds", self.bw_probe_max_rounds == 0),
            (
                "send_quantum_interval",
                self.send_quantum_interval.is_zero(),
            ),
            ("send_quantum_max", self.send_quantum_max == 0),
        ] {
            if zero {
                return Err(Bbr3ConfigError::Zero(k));
            }
        }
        Ok(())
    }
}

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
    /// `done_at` = `BBR.probe_rtt_done_stamp` (unset until in-flight is at
    /// the ProbeRTT cwnd); `round_done` = `BBR.probe_rtt_round_done`.
    ProbeRtt {
        done_at: Option<Time>,
        round_done: bool,
    },
}

impl Mode {
    /// Names used in traces and plots; stable.
    const fn name(self) -> &'static str {
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
            Mode::ProbeRtt { .. } => "ProbeRTT",
        }
    }

    fn phase(self) -> Option<ProbeBwPhase> {
        match self {
            Mode::ProbeBw { phase, .. } => Some(phase),
            _ => None,
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
            (Startup | Drain { .. } | ProbeBw { .. }, ProbeRtt { .. })
                | (Startup, Drain { .. })
                | (ProbeRtt { .. }, Startup)
        ) || [
            (Drain { start_round: 0 }, bw(Down)),
            (bw(Down), bw(Cruise)),
            (bw(Down), bw(Refill)),
            (bw(Cruise), bw(Refill)),
            (bw(Refill), bw(Up)),
            (bw(Up), bw(Down)),
            (
                ProbeRtt {
                    done_at: None,
                    round_done: false,
                },
                bw(Down),
            ),
        ]
        .contains(&(from, to))
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
            Mode::ProbeRtt { .. } => Mode::ProbeRtt {
                done_at: None,
                round_done: false,
            },
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
    mode: Mode,
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
    extra_acked: MaxFilter,
    extra_acked_interval_start: Time,
    extra_acked_delivered: u64,
    bounds: Bounds,
    // --- Startup (§5.3.1) ---
    full_bw: Rate,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    /// ACKs with newly lost data in the current loss round (Linux `loss_events_in_round`).
    loss_events_in_round: u32,
    /// Bytes newly lost in the current loss round.
    lost_in_round: u64,
    /// `C.delivered` when the current loss round began (a round boundary,
    /// or its first loss: §5.5.10.2 `NoteLoss` restarts the loss round).
    loss_round_began: u64,
    /// `C.delivered` when the current fast recovery began.
    recovery_began: u64,
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
            mode: Mode::Startup,
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
            extra_acked: MaxFilter::new(0, 0),
            extra_acked_interval_start: Time::ZERO,
            extra_acked_delivered: 0,
            bounds: Bounds::default(),
            full_bw: Rate::ZERO,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            loss_events_in_round: 0,
            lost_in_round: 0,
            loss_round_began: 0,
            recovery_began: 0,
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
        self.mode.name()
    }

    /// The ProbeBW sub-state, in ProbeBW.
    pub fn probe_bw_phase(&self) -> Option<ProbeBwPhase> {
        self.mode.phase()
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
        match self.mode {
            Mode::ProbeRtt { done_at, .. } => done_at,
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

    /// §5.3.3.8 `TargetInflight()`: `min(BBR.bdp, C.cwnd)`, bytes.
    pub fn target_inflight(&self) -> u64 {
        self.bdp(self.bw).min(self.cwnd)
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
        matches!(self.mode, Mode::ProbeBw { .. })
    }

    /// §5.3.3.9 `IsProbingBW()`.
    fn is_probing_bw(&self) -> bool {
        matches!(
            self.mode.phase(),
            Some(ProbeBwPhase::Refill | ProbeBwPhase::Up)
        ) || self.mode == Mode::Startup
    }

    /// `C.is_cwnd_limited`, approximated (module docs).
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_now || self.cwnd_limited_prev
    }

    /// The one place the state changes: checks the §5.1.1 edge, sets the
    /// gains of the new state (§5.6.1 table) and traces it.
    fn transition_to(&mut self, now: Time, next: Mode, flow: FlowId, tracer: &mut dyn Tracer) {
        assert!(
            self.mode.may_enter(next),
            "illegal BBR transition {} -> {}",
            self.mode.name(),
            next.name()
        );
        let from = self.mode.name();
        self.mode = next;
        let c = &self.cfg;
        (self.pacing_gain, self.cwnd_gain) = match next {
            Mode::Startup => (c.startup_pacing_gain, c.default_cwnd_gain),
            Mode::Drain { .. } => (c.drain_pacing_gain, c.default_cwnd_gain),
            Mode::ProbeBw { phase, .. } => match phase {
                ProbeBwPhase::Down => (c.probe_down_pacing_gain, c.default_cwnd_gain),
                ProbeBwPhase::Cruise | ProbeBwPhase::Refill => (1.0, c.default_cwnd_gain),
                ProbeBwPhase::Up => (c.probe_up_pacing_gain, c.probe_up_cwnd_gain),
            },
            Mode::ProbeRtt { .. } => (1.0, c.probe_rtt_cwnd_gain),
        };
        tracer.event(
            now,
            TraceEvent::CcStateChanged {
                flow,
                from,
                to: next.name(),
            },
        );
    }

    /// The time-dependent parts of §5.2.1 `OnInit()`, at the first event.
    fn ensure_started(&mut self, now: Time) {
        if self.started {
            return;
        }
        self.started = true;
        self.min_rtt_stamp = now;
        self.probe_rtt_min_stamp = now;
        self.extra_acked_interval_start = now;
        self.init_pacing_rate(Dur::ZERO);
    }

    // ----- volumes ----------------------------------------------------------------

    /// `BBR.bdp = bw * min_rtt`; `C.InitialCwnd` before any RTT sample.
    fn bdp(&self, bw: Rate) -> u64 {
        match self.min_rtt {
            Some(rtt) => bw.bytes_in(rtt),
            None => self.initial_cwnd(),
        }
    }

    /// §5.6.4.2 `BDPMultiple(gain)`.
    fn bdp_multiple(&self, bw: Rate, gain: f64) -> u64 {
        match self.min_rtt {
            // "no valid RTT samples yet"
            None => self.initial_cwnd(),
            Some(_) => (gain * self.bdp(bw) as f64) as u64,
        }
    }

    /// §5.6.4.2 `QuantizationBudget(inflight_cap)`.
    fn quantization_budget(&self, inflight_cap: u64) -> u64 {
        // §5.5.8.1 UpdateOffloadBudget() for TCP: 3 * C.send_quantum.
        let offload_budget = 3 * self.send_quantum;
        let mut cap = inflight_cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.mode.phase() == Some(ProbeBwPhase::Up) {
            cap += 2 * self.smss();
        }
        cap
    }

    /// §5.6.4.2 `Inflight(gain)` for a given bandwidth.
    fn inflight(&self, bw: Rate, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    // ----- per-ACK model updates (§5.2.3 UpdateModelAndState) ------------------------

    /// §5.5.1 `UpdateRound()`.
    fn update_round(&mut self, rs: &RateSample) {
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.stats.rounds = self.round_count;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited_prev = self.cwnd_limited_now;
            self.cwnd_limited_now = false;
        } else {
            self.round_start = false;
        }
    }

    /// §5.5.1 `StartRound()`.
    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// §5.5.5 `UpdateMaxBw()`.
    fn update_max_bw(&mut self, rs: &RateSample) {
        self.update_round(rs);
        if let Some(rate) = rs.delivery_rate {
            // "RS.delivery_rate >= BBR.max_bw || !RS.is_app_limited"
            if rate.as_bps() >= self.max_bw.get() || !rs.is_app_limited {
                self.max_bw.update(rate.as_bps());
            }
        }
    }

    /// §5.5.10.3 `UpdateCongestionSignals()`.
    fn update_congestion_signals(&mut self, rs: &RateSample) {
        self.update_max_bw(rs);
        if !self.bounds.loss_round_start {
            return; // "wait until end of round trip"
        }
        let probing = self.is_probing_bw();
        if self.bounds.adapt_lower_bounds_from_congestion(
            probing,
            self.max_bw(),
            self.cwnd,
            self.cfg.beta,
        ) {
            self.stats.short_term_cuts += 1;
        }
        self.bounds.is_loss_in_round = false;
    }

    /// §5.5.9 `UpdateACKAggregation()`.
    fn update_ack_aggregation(&mut self, now: Time, rs: &RateSample) {
        // "Find excess ACKed beyond expected amount over this interval"
        let interval = now.saturating_since(self.extra_acked_interval_start);
        let mut expected = self.bw.bytes_in(interval);
        // "Reset interval if ACK rate is below expected rate"
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = now;
            expected = 0;
        }
        self.extra_acked_delivered += rs.newly_acked;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd);
        // "in Startup, just remember 1 round"
        let filter_len = if self.full_bw_reached {
            self.cfg.extra_acked_filter_len
        } else {
            1
        };
        self.extra_acked.update(filter_len, self.round_count, extra);
    }

    /// §5.3.1.2 `ResetFullBW()`.
    fn reset_full_bw(&mut self) {
        self.full_bw = Rate::ZERO;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.1.2 `CheckFullBWReached()`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return; // "no need to check for a full pipe now"
        }
        let rate = rs.delivery_rate.unwrap_or(Rate::ZERO);
        if rate.as_bps() as f64 >= self.full_bw.as_bps() as f64 * self.cfg.full_bw_growth {
            self.reset_full_bw(); // "bw is still growing, so reset"
            self.full_bw = rate; // "record new baseline bw"
            return;
        }
        self.full_bw_count += 1; // "another round w/o much growth"
        self.full_bw_now = self.full_bw_count >= self.cfg.full_bw_count;
        if self.full_bw_now && !self.full_bw_reached {
            self.full_bw_reached = true;
            if self.mode == Mode::Startup {
                self.stats.startup_exit = Some(StartupExit::BandwidthPlateau);
            }
        }
    }

    /// §5.3.1.3 `CheckStartupHighLoss()` (see the module docs for the approximation).
    fn check_startup_high_loss(&mut self) {
        if self.full_bw_reached || self.mode != Mode::Startup || !self.bounds.loss_round_start {
            return;
        }
        // "The loss rate over the time scale of a single full round trip"
        let delivered = self.delivered.saturating_sub(self.loss_round_began);
        let total = delivered + self.lost_in_round;
        let loss_rate = if total == 0 {
            0.0
        } else {
            self.lost_in_round as f64 / total as f64
        };
        // "The connection has been in fast recovery for at least one full
        // packet-timed round trip": the loss round now ending began after
        // recovery did.
        let full_round_in_recovery =
            self.ca == CaState::Recovery && self.loss_round_began >= self.recovery_began;
        if full_round_in_recovery
            && loss_rate > self.cfg.loss_thresh
            && self.loss_events_in_round >= self.cfg.startup_full_loss_count
        {
            // "sets BBR.full_bw_reached = true. Then it sets
            // BBR.inflight_longterm to ... max(BBR.bdp, BBR.inflight_latest)"
            self.full_bw_reached = true;
            self.full_bw_now = true;
            self.stats.startup_exit = Some(StartupExit::Loss);
            let hi = self.bdp(self.bw).max(self.bounds.inflight_latest);
            self.bounds.inflight_longterm = Some(hi);
        }
    }

    /// §5.3.1 `CheckStartupDone()`.
    fn check_startup_done(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        self.check_startup_high_loss();
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.enter_drain(now, ctx);
        }
    }

    /// §5.3.2 `EnterDrain()`.
    fn enter_drain(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        let next = Mode::Drain {
            start_round: self.round_count,
        };
        self.transition_to(now, next, ctx.flow, ctx.tracer);
    }

    /// §5.3.2 `CheckDrainDone()`.
    fn check_drain_done(&mut self, now: Time, in_flight: u64, ctx: &mut CcCtx<'_>) {
        if let Mode::Drain { start_round } = self.mode {
            // Linux bbr_check_drain uses max_bw here (BBR.bw equals it in Drain
            // unless a lossy round has already set bw_shortterm).
            if in_flight <= self.inflight(self.max_bw(), 1.0)
                || self.round_count > start_round + self.cfg.drain_max_rounds
            {
                // §5.3.3.9 EnterProbeBW(): cwnd_gain = DefaultCwndGain; StartProbeBW_DOWN()
                self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
            }
        }
    }

    /// §5.3.3.8 `PickProbeWait()`.
    fn pick_probe_wait(&mut self, rng: &mut SimRng) {
        // "Decide random round-trip bound for wait": 0 or 1.
        self.rounds_since_probe_up = rng.below(2);
        // "Decide the random wall clock bound for wait": 2 + U(0, 1) s.
        let rand_ns = (rng.uniform() * self.cfg.bw_probe_wait_rand.as_nanos() as f64) as u64;
        self.bw_probe_wait = self.cfg.bw_probe_wait_base + Dur::from_nanos(rand_ns);
    }

    /// §5.3.3.9 `StartProbeBW_DOWN()`.
    fn start_probe_bw_down(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        self.bounds.reset_congestion_signals();
        self.bounds.probe_up_acked_per_inc = None; // "not growing BBR.inflight_longterm"
        self.pick_probe_wait(rng);
        self.cycle_stamp = now; // "start wall clock"
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Down,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_CRUISE()`.
    fn start_probe_bw_cruise(&mut self, now: Time, flow: FlowId, tracer: &mut dyn Tracer) {
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Cruise,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_REFILL()`.
    fn start_probe_bw_refill(&mut self, now: Time, flow: FlowId, tracer: &mut dyn Tracer) {
        self.bounds.reset_short_term_model();
        self.bounds.bw_probe_up_rounds = 0;
        self.bounds.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Refill,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_UP()`.
    fn start_probe_bw_up(
        &mut self,
        now: Time,
        rs: &RateSample,
        flow: FlowId,
        tracer: &mut dyn Tracer,
    ) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate.unwrap_or(Rate::ZERO);
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Up,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
        self.stats.bw_probes += 1;
        let (cwnd, smss) = (self.cwnd, self.smss());
        self.bounds.raise_inflight_longterm_slope(cwnd, smss);
    }

    /// §5.3.3.8 `IsTimeToProbeBW()` (starts REFILL when it is).
    fn is_time_to_probe_bw(&mut self, now: Time, flow: FlowId, tracer: &mut dyn Tracer) -> bool {
        // HasElapsedInPhase(bw_probe_wait): Now() > cycle_stamp + interval.
        let elapsed = now > self.cycle_stamp + self.bw_probe_wait;
        // IsRenoCoexistenceProbeTime(): rounds >= min(TargetInflight(), 63),
        // TargetInflight counted in packets as Linux bbr_target_inflight does.
        let reno_rounds = (self.target_inflight() / self.smss()).min(self.cfg.bw_probe_max_rounds);
        if elapsed || self.rounds_since_probe_up >= reno_rounds {
            self.start_probe_bw_refill(now, flow, tracer);
            return true;
        }
        false
    }

    /// §5.3.3.9 `IsTimeToCruise()`.
    fn is_time_to_cruise(&self, in_flight: u64) -> bool {
        let headroom = self.bounds.inflight_with_headroom(
            self.cfg.headroom,
            self.smss(),
            self.min_pipe_cwnd(),
        );
        if headroom.is_some_and(|h| in_flight > h) {
            return false; // "not enough headroom"
        }
        // "C.inflight > estimated BDP"
        in_flight <= self.inflight(self.max_bw(), 1.0)
    }

    /// §5.3.3.9 `IsTimeToGoDown()`.
    fn is_time_to_go_down(&mut self, in_flight: u64, rs: &RateSample) -> bool {
        let hi = self.bounds.inflight_longterm;
        // "Precautionary Bandwidth Probing: Deceleration"
        if self.bounds.prev_probe_too_high && hi.is_some_and(|h| in_flight >= h) {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && hi.is_some_and(|h| self.cwnd >= h) {
            // "bw is limited by BBR.inflight_longterm"
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate.unwrap_or(Rate::ZERO);
        } else if self.full_bw_now {
            return true; // "we estimate we've fully used path bw"
        }
        false
    }

    /// §5.5.10.2 `HandleInflightTooHigh()`.
    fn handle_inflight_too_high(&mut self, now: Time, rs: &RateSample, ctx: &mut CcCtx<'_>) {
        let target = self.target_inflight();
        self.bounds
            .handle_inflight_too_high(rs, target, self.cfg.beta);
        self.stats.inflight_too_high += 1;
        if self.mode.phase() == Some(ProbeBwPhase::Up) {
            self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
        }
    }

    /// §5.3.3.9 `AdaptLongTermModel()`: returns true if it decided a transition.
    fn adapt_long_term_model(&mut self, now: Time, rs: &RateSample, ctx: &mut CcCtx<'_>) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // "starting to get bw probing samples"
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // "end of samples from bw probing phase"
            self.bounds.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.in_probe_bw() && !rs.is_app_limited {
                // §5.5.6 AdvanceMaxBwFilter()
                self.cycle_count += 1;
                self.max_bw.advance();
            }
            // "Precautionary Bandwidth Probing: Acceleration"
            if self.in_probe_bw()
                && self.prev_probe_precautionary
                && !self.bounds.prev_probe_too_high
            {
                self.start_probe_bw_refill(now, ctx.flow, ctx.tracer);
                return true;
            }
        }
        if Bounds::is_inflight_too_high(rs, self.cfg.loss_thresh) {
            // §5.5.10.2 HandleLostPacket -> HandleInflightTooHigh, on the ACK
            // path (module docs); "only react once per bw probe".
            if self.bounds.is_bw_probe_sample {
                self.handle_inflight_too_high(now, rs, ctx);
            }
            return false;
        }
        // "Loss rate is safe. Adjust upper bounds upward."
        let Some(hi) = self.bounds.inflight_longterm else {
            return false; // "no upper bounds to raise"
        };
        if rs.tx_in_flight > hi {
            self.bounds.inflight_longterm = Some(rs.tx_in_flight);
        }
        if self.mode.phase() == Some(ProbeBwPhase::Up) {
            let limited = self.is_cwnd_limited();
            let (cwnd, round_start, smss) = (self.cwnd, self.round_start, self.smss());
            self.bounds.probe_inflight_longterm_upward(
                limited,
                cwnd,
                rs.newly_acked,
                round_start,
                smss,
            );
        }
        false
    }

    /// §5.3.3.9 `UpdateProbeBWCyclePhase()`.
    fn update_probe_bw_cycle_phase(
        &mut self,
        now: Time,
        in_flight: u64,
        rs: &RateSample,
        ctx: &mut CcCtx<'_>,
    ) {
        if !self.full_bw_reached {
            return; // "only handling steady-state behavior here"
        }
        if self.adapt_long_term_model(now, rs, ctx) {
            return; // "already decided state transition"
        }
        let Some(phase) = self.mode.phase() else {
            return; // "only handling ProbeBW states here"
        };
        match phase {
            ProbeBwPhase::Down => {
                if self.is_time_to_probe_bw(now, ctx.flow, ctx.tracer) {
                    return;
                }
                if self.is_time_to_cruise(in_flight) {
                    self.start_probe_bw_cruise(now, ctx.flow, ctx.tracer);
                }
            }
            ProbeBwPhase::Cruise => {
                self.is_time_to_probe_bw(now, ctx.flow, ctx.tracer);
            }
            ProbeBwPhase::Refill => {
                // "After one round of REFILL, start UP"
                if self.round_start {
                    self.bounds.is_bw_probe_sample = true;
                    self.start_probe_bw_up(now, rs, ctx.flow, ctx.tracer);
                }
            }
            ProbeBwPhase::Up => {
                if self.is_time_to_go_down(in_flight, rs) {
                    self.bounds.prev_probe_too_high = false; // "no high loss (yet)"
                    self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
                }
            }
        }
    }

    /// §5.3.4.3 `UpdateMinRTT()` (-06: ProbeRTT scheduled by its own 5 s filter).
    fn update_min_rtt(&mut self, now: Time, rs: &RateSample) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.cfg.probe_rtt_interval;
        if let Some(rtt) = rs.rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.cfg.min_rtt_filter_len;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.6.4.4 `SaveCwnd()`.
    fn save_cwnd(&mut self) {
        if self.ca == CaState::Open && !matches!(self.mode, Mode::ProbeRtt { .. }) {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// §5.6.4.4 `RestoreCwnd()`.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §5.3.4.3 `CheckProbeRTT()`.
    fn check_probe_rtt(&mut self, now: Time, ack: &AckEvent, rs: &RateSample, ctx: &mut CcCtx<'_>) {
        if !matches!(self.mode, Mode::ProbeRtt { .. })
            && self.probe_rtt_expired
            && !self.idle_restart
        {
            // EnterProbeRTT(); SaveCwnd(); probe_rtt_done_stamp = 0
            let next = Mode::ProbeRtt {
                done_at: None,
                round_done: false,
            };
            self.transition_to(now, next, ctx.flow, ctx.tracer);
            self.save_cwnd();
            self.stats.probe_rtt_entries += 1;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if matches!(self.mode, Mode::ProbeRtt { .. }) {
            self.handle_probe_rtt(now, ack, ctx);
        }
        if rs.has_data() {
            self.idle_restart = false;
        }
    }

    /// §5.3.4.3 `HandleProbeRTT()`.
    fn handle_probe_rtt(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        let Mode::ProbeRtt {
            done_at,
            round_done,
        } = self.mode
        else {
            return;
        };
        // "Ignore low rate samples during ProbeRTT: MarkConnectionAppLimited()"
        self.app_mark.mark(ack.delivered, ack.in_flight);
        if done_at.is_none() && ack.in_flight <= self.probe_rtt_cwnd() {
            // "Wait for at least BBR.ProbeRTTDuration to elapse" and "for at
            // least one round to elapse"
            self.mode = Mode::ProbeRtt {
                done_at: Some(now + self.cfg.probe_rtt_duration),
                round_done: false,
            };
            self.start_round();
        } else if done_at.is_some() {
            let round_done = round_done || self.round_start;
            self.mode = Mode::ProbeRtt {
                done_at,
                round_done,
            };
            if round_done {
                self.check_probe_rtt_done(now, ctx.flow, ctx.rng, ctx.tracer);
            }
        }
    }

    /// §5.3.4.3 `CheckProbeRTTDone()`.
    fn check_probe_rtt_done(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        let Mode::ProbeRtt {
            done_at: Some(done),
            ..
        } = self.mode
        else {
            return;
        };
        if now > done {
            self.probe_rtt_min_stamp = now; // "schedule next ProbeRTT"
            self.restore_cwnd();
            self.exit_probe_rtt(now, flow, rng, tracer);
        }
    }

    /// §5.3.4.4 `ExitProbeRTT()`.
    fn exit_probe_rtt(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        self.bounds.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down(now, flow, rng, tracer);
            self.start_probe_bw_cruise(now, flow, tracer);
        } else {
            self.transition_to(now, Mode::Startup, flow, tracer);
        }
    }

    // ----- control parameters (§5.6) --------------------------------------------------

    /// §5.6.2 `InitPacingRate()`.
    fn init_pacing_rate(&mut self, srtt: Dur) {
        let rtt = if srtt.is_zero() {
            Dur::from_millis(1)
        } else {
            self.has_seen_rtt = true;
            srtt
        };
        let nominal = Rate::from_bytes_per(self.initial_cwnd(), rtt).unwrap_or(Rate::ZERO);
        self.pacing_rate = nominal.scale(self.cfg.startup_pacing_gain);
    }

    /// §5.6.2 `SetPacingRateWithGain()`.
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = self
            .bw
            .scale(gain * (100.0 - self.cfg.pacing_margin_percent) / 100.0);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §5.6.3 `SetSendQuantum()`.
    fn set_send_quantum(&mut self) {
        let q = self.pacing_rate.bytes_in(self.cfg.send_quantum_interval);
        self.send_quantum = q.min(self.cfg.send_quantum_max).max(2 * self.smss());
    }

    /// §5.6.4.6 `SetCwnd()`, with `UpdateMaxInflight()` (§5.6.4.2),
    /// `BoundCwndForProbeRTT()` (§5.6.4.5) and `BoundCwndForModel()` (§5.6.4.7).
    fn set_cwnd(&mut self, rs: &RateSample) {
        // UpdateMaxInflight(): BDPMultiple(cwnd_gain) + extra_acked, quantized.
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked.get();
        let max_inflight = self.quantization_budget(cap);
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + rs.newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.delivered < self.initial_cwnd() {
            self.cwnd += rs.newly_acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        // BoundCwndForProbeRTT()
        if matches!(self.mode, Mode::ProbeRtt { .. }) {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    /// §5.6.4.7 `BoundCwndForModel()`: the "Volume Cap" column of §5.6.1.
    fn bound_cwnd_for_model(&mut self) {
        let phase = self.mode.phase();
        let mut cap = if phase.is_some() && phase != Some(ProbeBwPhase::Cruise) {
            self.bounds.inflight_longterm
        } else if phase == Some(ProbeBwPhase::Cruise) || matches!(self.mode, Mode::ProbeRtt { .. })
        {
            self.bounds
                .inflight_with_headroom(self.cfg.headroom, self.smss(), self.min_pipe_cwnd())
        } else {
            None
        };
        // "apply BBR.inflight_shortterm (possibly infinite)"
        if let Some(lo) = self.bounds.inflight_shortterm {
            cap = Some(cap.map_or(lo, |c| c.min(lo)));
        }
        if let Some(c) = cap {
            self.cwnd = self.cwnd.min(c.max(self.min_pipe_cwnd()));
        }
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
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
        self.extra_acked_interval_start = now;
        if self.in_probe_bw() {
            self.set_pacing_rate_with_gain(1.0);
        } else if matches!(self.mode, Mode::ProbeRtt { .. }) {
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
                self.loss_round_began = self.delivered;
                self.lost_in_round = 0;
            }
            self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
            self.lost_in_round += rs.newly_lost;
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
        self.check_full_bw_reached(&rs);
        self.check_startup_done(now, ctx);
        self.check_drain_done(now, ack.in_flight, ctx);
        self.update_probe_bw_cycle_phase(now, ack.in_flight, &rs, ctx);
        self.update_min_rtt(now, &rs);
        self.check_probe_rtt(now, ack, &rs, ctx);
        self.bounds.advance_latest_delivery_signals(&rs);
        if self.bounds.loss_round_start {
            // The Startup loss-exit counters run on the same loss rounds.
            self.loss_events_in_round = 0;
            self.lost_in_round = 0;
            self.loss_round_began = self.delivered;
        }
        // BoundBWForModel(): BBR.bw = min(BBR.max_bw, BBR.bw_shortterm)
        let max_bw = self.max_bw();
        self.bw = self.bounds.bw_shortterm.map_or(max_bw, |lo| lo.min(max_bw));
        // UpdateControlParameters()
        self.set_pacing_rate_with_gain(self.pacing_gain);
        self.set_send_quantum();
        self.set_cwnd(&rs);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, _ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        match *ev {
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } if self.ca == CaState::Open => {
                // §5.6.4.4 OnEnterFastRecovery(): SaveCwnd(); SaveStateUponLoss()
                self.save_cwnd();
                self.ca = CaState::Recovery;
                self.recovery_began = self.delivered;
                self.stats.recovery_episodes += 1;
            }
            // Lost bytes reach the model through `total_lost` on the next ACK.
            CongestionEvent::Loss { .. } => {}
            CongestionEvent::Rto { .. } => {
                // §5.6.4.4 OnEnterRTO(): SaveCwnd(); SaveStateUponLoss();
                // C.cwnd = C.inflight + 1 — every outstanding segment has
                // just been marked lost, so in flight is 0: one segment.
                self.save_cwnd();
                self.ca = CaState::Loss;
                self.cwnd = self.smss();
                self.stats.rtos += 1;
            }
            // §3.7: no specified ECN response; data is Not-ECT.
            CongestionEvent::EcnEcho { .. } => {}
            CongestionEvent::RecoveryEnd => {
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
            state: self.mode.name(),
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
                ("extra_acked_bytes", self.extra_acked.get() as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Driver;

    fn bw(phase: ProbeBwPhase) -> Mode {
        Mode::ProbeBw {
            phase,
            phase_start: Time::from_millis(7),
        }
    }

    #[test]
    fn draft_constants() {
        let c = Bbr3Config::default();
        assert_eq!(c.startup_pacing_gain, 2.77);
        assert!((c.startup_pacing_gain - 4.0 * libm::log(2.0)).abs() < 0.005);
        assert_eq!((c.drain_pacing_gain, c.probe_down_pacing_gain), (0.5, 0.9));
        assert_eq!((c.probe_up_pacing_gain, c.probe_up_cwnd_gain), (1.25, 2.25));
        assert_eq!((c.loss_thresh, c.beta, c.headroom), (0.02, 0.7, 0.15));
        assert_eq!(c.probe_rtt_interval, Dur::from_secs(5));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn legal_edges_follow_the_diagram() {
        use Mode::*;
        use ProbeBwPhase::*;
        let rtt = ProbeRtt {
            done_at: Some(Time::from_millis(3)),
            round_done: true,
        };
        let drain = Drain { start_round: 9 };
        for (from, to) in [
            (Startup, drain),
            (drain, bw(Down)),
            (bw(Down), bw(Cruise)),
            (bw(Down), bw(Refill)),
            (bw(Cruise), bw(Refill)),
            (bw(Refill), bw(Up)),
            (bw(Up), bw(Down)),
            (Startup, rtt),
            (drain, rtt),
            (bw(Up), rtt),
            (rtt, bw(Down)),
            (rtt, Startup),
        ] {
            assert!(from.may_enter(to), "{} -> {}", from.name(), to.name());
        }
        for (from, to) in [
            (Startup, bw(Down)),
            (drain, bw(Cruise)),
            (bw(Cruise), bw(Up)),
            (bw(Refill), bw(Down)),
            (bw(Up), bw(Cruise)),
            (bw(Cruise), bw(Down)),
            (rtt, rtt),
            (rtt, bw(Cruise)),
            (bw(Down), Startup),
            (Startup, Startup),
        ] {
            assert!(!from.may_enter(to), "{} -> {}", from.name(), to.name());
        }
    }

    #[test]
    #[should_panic(expected = "illegal BBR transition Startup -> ProbeBW_UP")]
    fn startup_cannot_jump_to_up() {
        let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
        d.cc.transition_to(Time::ZERO, bw(ProbeBwPhase::Up), 1, &mut d.tracer);
    }

    #[test]
    #[should_panic(expected = "illegal BBR transition ProbeBW_CRUISE -> ProbeBW_UP")]
    fn cruise_must_refill_before_up() {
        let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
        d.cc.mode = bw(ProbeBwPhase::Cruise);
        d.cc.transition_to(Time::ZERO, bw(ProbeBwPhase::Up), 1, &mut d.tracer);
    }

    #[test]
    fn transitions_set_the_table_gains() {
        let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
        let mut gains = Vec::new();
        for next in [
            Mode::Drain { start_round: 0 },
            bw(ProbeBwPhase::Down),
            bw(ProbeBwPhase::Cruise),
            bw(ProbeBwPhase::Refill),
            bw(ProbeBwPhase::Up),
            Mode::ProbeRtt {
                done_at: None,
                round_done: false,
            },
        ] {
            d.cc.transition_to(Time::ZERO, next, 1, &mut d.tracer);
            gains.push((d.cc.pacing_gain, d.cc.cwnd_gain));
        }
        assert_eq!(
            gains,
            [
                (0.5, 2.0),
                (0.9, 2.0),
                (1.0, 2.0),
                (1.0, 2.0),
                (1.25, 2.25),
                (1.0, 0.5)
            ]
        );
    }

    #[test]
    fn quantization_budget_and_headroom() {
        let mut b = Bbr3::new(Bbr3Config::default());
        b.min_rtt = Some(Dur::from_millis(50));
        b.bw = Rate::from_mbps(20);
        // BDP = 20 Mbit/s * 50 ms = 125 000 B.
        assert_eq!(b.bdp(b.bw), 125_000);
        assert_eq!(b.bdp_multiple(b.bw, 2.0), 250_000);
        // Send quantum at 20 Mbit/s: 2500 B in 1 ms, at least 2 * 1448.
        b.pacing_rate = Rate::from_mbps(20);
        b.set_send_quantum();
        assert_eq!(b.send_quantum, 2896);
        // A tiny BDP is raised to the offload budget 3 * 2896.
        b.bw = Rate::from_kbps(100);
        assert_eq!(b.inflight(b.bw, 1.0), 3 * 2896);
        // ProbeRTT cwnd: half the BDP, at least 4 segments.
        b.bw = Rate::from_mbps(20);
        assert_eq!(b.probe_rtt_cwnd(), 62_500);
        b.bw = Rate::from_kbps(100);
        assert_eq!(b.probe_rtt_cwnd(), 4 * 1448);
    }

    #[test]
    fn probe_wait_is_two_to_three_seconds() {
        let mut b = Bbr3::new(Bbr3Config::default());
        let mut rng = SimRng::derive(3, "probe-wait");
        let mut rounds = [0u32; 2];
        for _ in 0..1000 {
            b.pick_probe_wait(&mut rng);
            assert!(b.bw_probe_wait >= Dur::from_secs(2) && b.bw_probe_wait < Dur::from_secs(3));
            rounds[b.rounds_since_probe_up as usize] += 1;
        }
        // rounds_since_probe_up starts at 0 or 1, about evenly.
        assert!(rounds[0] > 400 && rounds[1] > 400, "{rounds:?}");
    }
}
