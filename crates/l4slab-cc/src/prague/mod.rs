//! TCP Prague: the L4S scalable congestion control —
//! draft-briscoe-iccrg-prague-congestion-control-04 (expired, Experimental
//! track) and the reference Linux `net/ipv4/tcp_prague.c` of the L4STeam
//! tree (MODULE_VERSION 0.6, the version with `prague_rtt_scaling`); the
//! Prague L4S requirements are RFC 9331 §4.
//!
//! Prague is DCTCP adapted to the Internet:
//!
//! * **Codepoint** ECT(1), the L4S identifier (RFC 9331 §4 req. 1).
//! * **alpha** (Linux `prague_update_alpha`): EWMA of the CE-marked fraction
//!   `F` of the bytes delivered in a round, `alpha = (1 - g)·alpha + g·F`,
//!   `g = 1/16` (`PRAGUE_SHIFT_G = 4`), starting at 1 (`PRAGUE_MAX_ALPHA`)
//!   and only updated once the first CE has been seen (`saw_ce`: "proof that
//!   there's an AQM on the path"). A round ends when the data in flight at its
//!   start has been delivered (`RoundTracker`, Linux
//!   `prague_e2e_rtt_elapsed`) and, once RTT-independent, at least one target
//!   RTT after the previous update (`prague_target_rtt_elapsed`).
//! * **CE response** (draft §2.4.2; Linux `prague_enter_cwr`): on the first
//!   ACK reporting CE-marked bytes outside a reduction, `frac_cwnd -=
//!   alpha·frac_cwnd/2`, at most once per round (Linux `TCP_CA_CWR` lasts
//!   until data sent after the cut is acknowledged) and, once
//!   RTT-independent, at most once per target RTT (`cwr_stamp`).
//! * **Fractional window**: the window is `frac_cwnd`, an `f64` in bytes
//!   (Linux: 20-bit fixed point in segments, `CWND_UNIT`). The window the
//!   transport sees, [`CongestionControl::cwnd`], is whole segments that
//!   follow `ceil(frac_cwnd)` one segment per ACK, never below `MIN_CWND = 2`
//!   on the way down (Linux "step-wise cwnd decrement/increment" in
//!   `prague_update_cwnd`).
//! * **Additive increase** (Linux `prague_update_cwnd`): every ACK adds
//!   `acked_non_ce · ai_per_rtt / frac_cwnd` — about `ai_per_rtt` MSS per
//!   RTT, counted only on bytes that were *not* CE-marked and applied in every
//!   state but loss recovery, including during CWR ("Additive Increase uses
//!   unsaturated marking": the total increase per RTT is ∝ (1 − p)).
//! * **RTT independence** (draft §2.4.4; [`RttScaling`], default `RATE`
//!   with a 25 ms target): after `rtt_transition_rounds` rounds outside slow
//!   start (Linux `prague_rtt_transition = 500`), a flow with RTT below the
//!   target grows by `(RTT/target)^2` MSS per RTT, so its rate grows as fast as
//!   a 25 ms flow's, and spaces alpha updates and reductions by the target.
//! * **Slow start** as Linux `tcp_slow_start` (`cwnd += acked`, capped at
//!   `ssthresh`, remainder to additive increase), the window following it
//!   exactly (as v0.7: `frac_cwnd = snd_cwnd` in slow start).
//! * **Loss** (RFC 9331 §4 req. 4, Reno-friendly fallback; Linux
//!   `prague_enter_loss`): `frac_cwnd` halves once per episode, no growth
//!   until the episode ends. **RTO**: see deviations.
//! * **Pacing** (Linux `prague_update_pacing_rate`): `frac_cwnd / srtt`,
//!   doubled while `cwnd < ssthresh/2` (slow start), floored at
//!   `min_pacing_rate`. The maximum burst (Linux `max_tso_burst =
//!   pacing_rate / MTU >> prague_burst_shift`, ≈ 250 µs of data) is computed
//!   and exposed ([`Prague::max_burst_segments`], metric
//!   `max_burst_segments`); the transport paces every segment individually,
//!   so its bursts never exceed one segment after the initial window anyway.
//! * **Scaling below the minimum window** (RFC 9331 §4 req. 7): the
//!   transport counts whole segments and the window never drops below 2, but
//!   `frac_cwnd` does, and the pacing rate follows `frac_cwnd`, so the
//!   *rate* keeps scaling down (to `min_pacing_rate`) while two segments
//!   stay allowed in flight — as Linux does. What we cannot do: send smaller
//!   packets (Linux v0.7 shrinks the MSS down to 150 B below 1 Mbit/s); the
//!   transport's MSS is fixed.
//! * **Classic-ECN bottleneck detection** (RFC 9331 §4 req. 5;
//!   `prague_ecn_fallback`, default off): implemented as Linux does it, see
//!   [`classic_ecn`].
//!
//! **Classic ECN feedback.** Prague requires accurate ECN (Linux
//! `TCP_CONG_NEEDS_ACCECN`, RFC 9331 §4 req. 2) and reacts to
//! [`AckEvent::ce_bytes`]. If the transport nevertheless reports an RFC 3168
//! [`CongestionEvent::EcnEcho`], Prague answers conservatively with the
//! classic response: the same once-per-round CWR reduction with alpha taken
//! as 1 (a halving); alpha itself is untouched.
//!
//! **Not implemented.** cwnd undo (`prague_cwnd_undo` restores `max(cwnd,
//! loss_cwnd)`): [`CongestionEvent::Undo`] only ends loss recovery as
//! `RecoveryEnd` does, and after a timeout does nothing; the `prague-reno`
//! switch when ECN is not negotiated (the transport delivers no CE bytes then,
//! and Prague's response to loss is already Reno's halving; growth stays
//! Prague's); TSO/GSO sizing itself (`prague_tso_segs`: the transport has no
//! TSO); v0.7 features (rate-based mode for small windows, ±3 % pacing
//! oscillation, MSS reduction, `prague_alpha_mode`).
//!
//! **Deviations from Linux v0.6 and why.**
//! * `f64` instead of 20-bit fixed point for alpha, `frac_cwnd` and the
//!   increase; RTTs in nanoseconds instead of 128 µs units.
//! * In slow start `frac_cwnd` follows the window (the v0.7 fix; v0.6 leaves
//!   `frac_cwnd` at the initial window during slow start and then walks the
//!   window back down to it).
//! * A reduction (CE or loss) sets `ssthresh` to the reduced window at once,
//!   so the flow leaves slow start on the first CE even when the marked ACK
//!   also acknowledged unmarked bytes (Linux lowers `ssthresh` only as the
//!   window steps down, and slow start on the same ACK can undo the cut).
//!   The transport's PRR also needs the target `ssthresh` at the loss.
//! * The additive increase divides by `frac_cwnd` (v0.7) rather than by
//!   the rounded-up window (v0.6), floored at 1 MSS.
//! * RTO: `ssthresh` = half the window, `frac_cwnd = cwnd = 1 MSS`, then slow
//!   start (RFC 5681), like Reno. Linux halves `frac_cwnd` and lets the window
//!   climb one segment per ACK back to it — the same doubling per RTT with
//!   one ACK per segment.
//! * At the end of fast recovery the window is set to `ceil(frac_cwnd)` at
//!   once (RFC 6582 §3.2 step 3 analogue) in case the per-ACK steps have not
//!   reached it.
//! * `MAX_SCALED_RTT` is 100 ms as intended (v0.6 compares 128 µs units with
//!   microseconds, i.e. 12.8 s; v0.7 fixed it).
//! * The pacing rate is in payload bytes (the transport's pacer charges each
//!   segment's payload), Linux's in MTU-sized packets.
//! * `min_pacing_rate` (100 kbit/s) is v0.7's `MINIMUM_RATE`; v0.6 has no
//!   floor (a window of a few bytes would pace at nearly zero).

pub mod classic_ecn;
pub mod rtt_scaling;

use serde::{Deserialize, Serialize};

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{Dur, Rate, Time};

use crate::cong::{self, WindowConfigError};
use crate::dctcp::{self, MarkedFraction, RoundTracker};
use crate::param::{Kind, Param, ParamError, ParamValue};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent, EcnCodepoint};
use l4slab_core::param::FromParam;

use classic_ecn::ClassicEcnDetector;
pub use rtt_scaling::RttScaling;

/// Linux `prague_ecn_fallback`: what to do about Classic-ECN bottlenecks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnFallback {
    /// 0 (Linux default): no detection.
    #[default]
    Off,
    /// 1: detect, and floor alpha on reductions once the path looks Classic.
    DetectAndFallback,
    /// 2: detect only (the score is reported, the response is unchanged).
    DetectOnly,
}

impl EcnFallback {
    /// Every mode in Linux's order (`prague_ecn_fallback` 0..=2).
    pub const ALL: [EcnFallback; 3] = [
        EcnFallback::Off,
        EcnFallback::DetectAndFallback,
        EcnFallback::DetectOnly,
    ];
    /// Their names (as serialized), in the same order.
    pub const NAMES: &'static [&'static str] = &["off", "detect_and_fallback", "detect_only"];

    /// The mode named `name` (one of [`EcnFallback::NAMES`]).
    pub fn from_name(name: &str) -> Option<Self> {
        let i = Self::NAMES.iter().position(|&n| n == name)?;
        Some(Self::ALL[i])
    }
}

/// The RTT-independence heuristic.
pub const RTT_SCALING: Param = Param::new(
    "rtt_scaling",
    Kind::Choice(RttScaling::NAMES),
    ParamValue::Choice("rate"),
    "Linux `prague_rtt_scaling = RTT_CONTROL_RATE`",
    "RTT independence below `rtt_target`: none, rate, scalable or additive",
)
.linux_name("prague_rtt_scaling");

/// The target RTT of the heuristic.
pub const RTT_TARGET: Param = Param::new(
    "rtt_target",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_millis(25)),
    "Linux `prague_rtt_target` (the file header says 10 ms; the code is 25 ms)",
    "target RTT of the heuristic; `\"0s\"` turns RTT independence off",
)
.linux_name("prague_rtt_target");

/// Rounds after slow start before RTT independence (config field
/// `rtt_transition_rounds`).
pub const RTT_TRANSITION: Param = Param::new(
    "rtt_transition",
    Kind::Int {
        min: 0,
        max: u32::MAX as i64,
    },
    ParamValue::Int(500),
    "Linux `prague_rtt_transition = DEFAULT_RTT_TRANSITION` (v0.7: 4)",
    "rounds after slow start before RTT independence starts",
)
.linux_name("prague_rtt_transition");

/// Classic-ECN bottleneck detection.
pub const ECN_FALLBACK: Param = Param::new(
    "ecn_fallback",
    Kind::Choice(EcnFallback::NAMES),
    ParamValue::Choice("off"),
    "Linux `prague_ecn_fallback = 0` (1 = `detect_and_fallback`, 2 = `detect_only`)",
    "classic-ECN bottleneck detection, and whether to fall back on it",
)
.linux_name("prague_ecn_fallback");

/// The burst at the pacing rate.
pub const BURST_SHIFT: Param = Param::new(
    "burst_shift",
    Kind::Int { min: 0, max: 40 },
    ParamValue::Int(12),
    "Linux `prague_burst_shift = 12` (≈ 244 µs)",
    "maximum burst 2^-burst_shift s at the pacing rate",
)
.linux_name("prague_burst_shift");

/// A cap on the burst.
pub const MAX_TSO_SEGS: Param = Param::new(
    "max_tso_segs",
    Kind::Int {
        min: 0,
        max: u32::MAX as i64,
    },
    ParamValue::Int(0),
    "Linux `prague_max_tso_segs = 0`",
    "cap on that burst in segments, 0 = none",
)
.linux_name("prague_max_tso_segs");

/// The EWMA gain: DCTCP's [`dctcp::SHIFT_G`] (same meaning and range), a
/// compile-time constant in Linux Prague, so not in [`PARAMS`].
pub const SHIFT_G: Param = Param {
    aliases: &[],
    linux: "PRAGUE_SHIFT_G",
    source: "Linux `PRAGUE_SHIFT_G = 4` (compile-time)",
    ..dctcp::SHIFT_G
};

/// The parameters a scenario can set (`cc = { kind = "prague", ... }`).
pub const PARAMS: &[Param] = &[
    RTT_SCALING,
    RTT_TARGET,
    RTT_TRANSITION,
    ECN_FALLBACK,
    BURST_SHIFT,
    MAX_TSO_SEGS,
];

crate::registry::cc_config! {
    PragueConfig => Prague {
        RTT_SCALING => rtt_scaling,
        RTT_TARGET => rtt_target,
        RTT_TRANSITION => rtt_transition_rounds,
        ECN_FALLBACK => ecn_fallback,
        BURST_SHIFT => burst_shift,
        MAX_TSO_SEGS => max_tso_segs,
    }
}

impl FromParam for EcnFallback {
    fn from_param(v: ParamValue) -> Self {
        EcnFallback::from_name(v.choice()).expect("declared choice")
    }
}

impl FromParam for RttScaling {
    fn from_param(v: ParamValue) -> Self {
        RttScaling::from_name(v.choice()).expect("declared choice")
    }
}

/// Parameters of [`Prague`]. Every Linux module parameter of `tcp_prague.c`
/// v0.6 has a field here (except `prague_max_tso_segs`'s TSO use, which only
/// caps the reported burst).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PragueConfig {
    /// Sender maximum segment size, bytes. 1448 = 1500 B MTU minus IPv4, TCP
    /// and timestamp headers (Linux default with timestamps).
    pub mss: u64,
    /// Initial window in segments. RFC 6928 §2: 10 (Linux `TCP_INIT_CWND`).
    pub initial_window_segments: u64,
    /// [`RTT_SCALING`].
    pub rtt_scaling: RttScaling,
    /// [`RTT_TARGET`]. Zero disables RTT independence (Linux: `rtt_indep =
    /// rtt_target ? prague_rtt_scaling : NONE`).
    pub rtt_target: Dur,
    /// [`RTT_TRANSITION`]. Tests use 0 to see the scaling at once.
    pub rtt_transition_rounds: u64,
    /// [`ECN_FALLBACK`].
    pub ecn_fallback: EcnFallback,
    /// [`BURST_SHIFT`].
    pub burst_shift: u32,
    /// [`MAX_TSO_SEGS`].
    pub max_tso_segs: u64,
    /// [`SHIFT_G`] (DCTCP's declaration; compile-time in Linux).
    pub shift_g: u32,
    /// Smallest window the per-ACK steps go down to, segments. Linux
    /// `MIN_CWND` = 2.
    pub min_cwnd_segments: u64,
    /// Floor of the pacing rate. Linux v0.7 `MINIMUM_RATE` = 12500 B/s =
    /// 100 kbit/s (v0.6 has none).
    pub min_pacing_rate: Rate,
}

impl Default for PragueConfig {
    fn default() -> Self {
        let choice = |p: &Param| p.default.choice();
        PragueConfig {
            mss: 1448,                   // 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps)
            initial_window_segments: 10, // RFC 6928 §2, Linux TCP_INIT_CWND
            rtt_scaling: RttScaling::from_name(choice(&RTT_SCALING)).expect("declared"),
            rtt_target: RTT_TARGET.default.dur(),
            rtt_transition_rounds: RTT_TRANSITION.default.int() as u64,
            ecn_fallback: EcnFallback::from_name(choice(&ECN_FALLBACK)).expect("declared"),
            burst_shift: BURST_SHIFT.default.int() as u32,
            max_tso_segs: MAX_TSO_SEGS.default.int() as u64,
            shift_g: SHIFT_G.default.int() as u32,
            min_cwnd_segments: 2,                  // MIN_CWND
            min_pacing_rate: Rate::from_kbps(100), // v0.7 MINIMUM_RATE = 12500 B/s
        }
    }
}

/// Why a [`PragueConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PragueConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
    /// A parameter of [`PARAMS`] or [`SHIFT_G`] is out of its declared range.
    #[error(transparent)]
    Param(ParamError),
    /// `min_cwnd_segments` is zero.
    #[error("min_cwnd_segments: must be at least 1 segment")]
    ZeroMinCwnd,
}

impl PragueConfig {
    pub fn validate(&self) -> Result<(), PragueConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
        let int = |v: u64| ParamValue::Int(i64::try_from(v).unwrap_or(i64::MAX));
        RTT_TRANSITION
            .check(int(self.rtt_transition_rounds))
            .and(BURST_SHIFT.check(int(self.burst_shift.into())))
            .and(MAX_TSO_SEGS.check(int(self.max_tso_segs)))
            .and(SHIFT_G.check(int(self.shift_g.into())))
            .map_err(PragueConfigError::Param)?;
        if self.min_cwnd_segments == 0 {
            return Err(PragueConfigError::ZeroMinCwnd);
        }
        Ok(())
    }
}

/// Where Prague is (Linux `icsk_ca_state`, with Open split by slow start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Open, `cwnd < ssthresh`.
    SlowStart,
    /// Open, `cwnd >= ssthresh`.
    CongestionAvoidance,
    /// ECN reduction round (Linux `TCP_CA_CWR`) until `delivered` passes
    /// `end` (the flight at the cut); additive increase continues on
    /// unmarked bytes.
    Cwr { end: u64 },
    /// Loss recovery (Linux `TCP_CA_Recovery`, `in_loss`): no growth until
    /// `RecoveryEnd`.
    Recovery,
}

impl Machine for State {
    const NAME: &'static str = "Prague";

    fn name(self) -> &'static str {
        match self {
            State::SlowStart => "SlowStart",
            State::CongestionAvoidance => "CongestionAvoidance",
            State::Cwr { .. } => "Cwr",
            State::Recovery => "Recovery",
        }
    }

    /// Loss, RTO and the end of a reduction may interrupt anything; CWR
    /// (Linux `tcp_enter_cwr`) starts only from Open.
    fn may_enter(self, next: State) -> bool {
        !matches!(next, State::Cwr { .. })
            || matches!(self, State::SlowStart | State::CongestionAvoidance)
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PragueStats {
    /// Window reductions caused by CE-marked bytes.
    pub ce_reductions: u64,
    /// CWR episodes whose reduction was skipped because the previous one was
    /// less than a target RTT ago (RTT-independent mode).
    pub ce_reductions_skipped: u64,
    /// Halvings caused by classic ECN-Echo.
    pub ecn_echo_reductions: u64,
    /// Halvings caused by loss (one per episode).
    pub loss_reductions: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// alpha updates (rounds completed after the first CE).
    pub alpha_updates: u64,
    /// Rounds completed outside slow start (Linux `ca->round`).
    pub rounds: u64,
}

/// TCP Prague (see the module documentation).
#[derive(Debug)]
pub struct Prague {
    cfg: PragueConfig,
    /// Effective heuristic (`None` when `rtt_target` is zero).
    scaling: RttScaling,
    /// Linux `frac_cwnd`, in bytes.
    frac: f64,
    /// Linux `snd_cwnd`, in segments.
    snd_cwnd: u64,
    /// Linux `snd_ssthresh`, in segments; `u64::MAX` = unset.
    ssthresh: u64,
    state: Checked<State>,
    /// alpha in `[0, 1]` (Linux `upscaled_alpha >> PRAGUE_SHIFT_G`).
    alpha: f64,
    /// Linux `saw_ce`.
    saw_ce: bool,
    /// Linux `next_seq`: the current round.
    round: RoundTracker,
    /// Bytes delivered / CE-marked in the current round (Linux `delivered -
    /// old_delivered`, `delivered_ce - old_delivered_ce`), as DCTCP's.
    round_marks: MarkedFraction,
    /// Linux `alpha_stamp` (`None` = init: the target has elapsed).
    alpha_stamp: Option<Time>,
    /// Linux `cwr_stamp`.
    cwr_stamp: Option<Time>,
    /// Latest smoothed RTT from the transport (zero before a sample).
    srtt: Dur,
    /// `delivered` of the latest ACK (for ECN-Echo rounds).
    delivered: u64,
    /// A backed-off RTO with no new data acked since (RFC 5681 §3.1 note).
    rto_backoff: bool,
    classic: ClassicEcnDetector,
    stats: PragueStats,
}

impl Prague {
    /// # Panics
    /// If `cfg` is invalid (see [`PragueConfig::validate`]).
    pub fn new(cfg: PragueConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid PragueConfig: {e}"))
    }

    pub fn try_new(cfg: PragueConfig) -> Result<Self, PragueConfigError> {
        cfg.validate()?;
        // Linux prague_init: rtt_indep = rtt_target ? prague_rtt_scaling : NONE.
        let scaling = if cfg.rtt_target.is_zero() {
            RttScaling::None
        } else {
            cfg.rtt_scaling
        };
        Ok(Prague {
            scaling,
            // Linux prague_init: frac_cwnd = snd_cwnd << CWND_UNIT.
            frac: (cfg.initial_window_segments * cfg.mss) as f64,
            snd_cwnd: cfg.initial_window_segments,
            ssthresh: u64::MAX,
            state: Checked::new(State::SlowStart),
            // Linux prague_init: upscaled_alpha = PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G.
            alpha: 1.0,
            saw_ce: false,
            round: RoundTracker::default(),
            round_marks: MarkedFraction::default(),
            alpha_stamp: None,
            cwr_stamp: None,
            srtt: Dur::ZERO,
            delivered: 0,
            rto_backoff: false,
            classic: ClassicEcnDetector::default(),
            stats: PragueStats::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &PragueConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &PragueStats {
        &self.stats
    }

    /// The congestion estimate alpha, `[0, 1]`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The fractional window (Linux `frac_cwnd`), in bytes.
    pub fn frac_cwnd(&self) -> f64 {
        self.frac
    }

    /// Whether the RTT-independence heuristic is in force (Linux
    /// `prague_is_rtt_indep`).
    pub fn is_rtt_independent(&self) -> bool {
        self.scaling != RttScaling::None
            && !self.in_slow_start()
            && self.stats.rounds >= self.cfg.rtt_transition_rounds
    }

    /// Additive increase per RTT in MSS currently in force (Linux
    /// `prague_ai_ack_increase`, divided by `ONE_CWND`).
    pub fn ai_per_rtt(&self) -> f64 {
        let srtt = self.srtt;
        if self.scaling == RttScaling::None
            || self.stats.rounds < self.cfg.rtt_transition_rounds
            || srtt.is_zero()
            || srtt > rtt_scaling::MAX_SCALED_RTT
        {
            return 1.0;
        }
        self.scaling.scaled_ai_per_rtt(srtt, self.cfg.rtt_target)
    }

    /// Linux `max_tso_burst`: segments in `2^-burst_shift` s at the pacing
    /// rate (at least 1), capped by `max_tso_segs` when set.
    pub fn max_burst_segments(&self) -> u64 {
        let Some(rate) = self.pacing_rate() else {
            return 1;
        };
        let pkts_per_s = rate.as_bps() / 8 / self.cfg.mss;
        let mut burst = (pkts_per_s >> self.cfg.burst_shift).max(1);
        if self.cfg.max_tso_segs > 0 {
            burst = burst.min(self.cfg.max_tso_segs);
        }
        burst
    }

    /// Classic-ECN score (Linux `tp->classic_ecn`), alpha units `[0, 17]`.
    pub fn classic_ecn_score(&self) -> f64 {
        self.classic.score()
    }

    fn mss(&self) -> u64 {
        self.cfg.mss
    }

    /// Linux `tcp_in_slow_start`: `snd_cwnd < snd_ssthresh`.
    fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.ssthresh
    }

    /// Linux `prague_frac_cwnd_to_snd_cwnd`: `max(ceil(frac_cwnd), 1)` segments.
    fn frac_segments(&self) -> u64 {
        ((self.frac / self.mss() as f64).ceil() as u64).max(1)
    }

    /// Target RTT in force (Linux `prague_target_rtt`).
    fn target_rtt(&self) -> Dur {
        self.scaling.target(self.cfg.rtt_target, self.srtt)
    }

    fn transition_to(&mut self, now: Time, next: State, ctx: &mut CcCtx<'_>) {
        match next {
            State::SlowStart => assert!(
                self.in_slow_start(),
                "SlowStart needs cwnd < ssthresh ({} >= {})",
                self.snd_cwnd,
                self.ssthresh
            ),
            State::CongestionAvoidance => assert!(
                !self.in_slow_start(),
                "CongestionAvoidance needs cwnd >= ssthresh ({} < {})",
                self.snd_cwnd,
                self.ssthresh
            ),
            // A reduction always sets ssthresh. (The window may still be below
            // it in CWR right after an RTO: Linux slow-starts inside CWR then.)
            State::Cwr { .. } | State::Recovery => assert!(
                self.ssthresh != u64::MAX,
                "{} needs a reduced window (ssthresh unset)",
                next.name()
            ),
        }
        cong::enter(&mut self.state, now, next, ctx.flow, ctx.tracer);
    }

    /// The Open state that agrees with the windows.
    fn open_state(&self) -> State {
        if self.in_slow_start() {
            State::SlowStart
        } else {
            State::CongestionAvoidance
        }
    }

    /// After a cut of `frac_cwnd`: the new `ssthresh` (segments), so that the
    /// flow leaves slow start and the transport's PRR has its target.
    fn set_ssthresh_to_window(&mut self) {
        let target = self.frac_segments().max(self.cfg.min_cwnd_segments);
        // Never above the current window: cwnd >= ssthresh outside slow start.
        self.ssthresh = target.min(self.snd_cwnd.max(self.cfg.min_cwnd_segments));
    }

    /// Entering CWR (Linux `tcp_enter_cwr` → `prague_ssthresh` +
    /// `prague_enter_cwr`) on CE feedback, or on a classic ECN-Echo with
    /// `classic = true` (alpha taken as 1).
    fn enter_cwr(&mut self, now: Time, end: u64, classic: bool, ctx: &mut CcCtx<'_>) {
        // Linux prague_ssthresh -> prague_update_rtt_scaling(snd_ssthresh).
        self.classic.on_ssthresh(self.ssthresh);
        // draft §2.4.4 / Linux prague_enter_cwr: once RTT-independent, at most
        // one reduction per target RTT.
        let gated = self.is_rtt_independent()
            && self
                .cwr_stamp
                .is_some_and(|t| now.saturating_since(t) < self.target_rtt());
        if gated {
            self.stats.ce_reductions_skipped += 1;
        } else {
            self.cwr_stamp = Some(now);
            let alpha = if classic {
                1.0
            } else {
                match (self.cfg.ecn_fallback, self.classic.alpha_floor()) {
                    // Linux prague_classic_ecn_fallback: "clamp alpha no lower than c".
                    (EcnFallback::DetectAndFallback, Some(c)) => self.alpha.max(c),
                    _ => self.alpha,
                }
            };
            // draft §2.4.2 / Linux prague_enter_cwr: frac_cwnd -= alpha * frac_cwnd / 2.
            self.frac -= alpha * self.frac / 2.0;
            self.set_ssthresh_to_window();
            if classic {
                self.stats.ecn_echo_reductions += 1;
            } else {
                self.stats.ce_reductions += 1;
            }
        }
        self.transition_to(now, State::Cwr { end }, ctx);
    }

    /// Linux `prague_update_cwnd` (growth part); returns whether the
    /// step-wise adjustment should run (Linux returns early when slow start
    /// used every acked byte).
    fn grow(&mut self, ack: &AckEvent) -> bool {
        let ce = ack.ce_bytes.min(ack.acked_bytes);
        // "acked -= rs->ece_delta": only unmarked bytes grow the window.
        let acked = ack.acked_bytes - ce;
        // Linux: if (acked <= 0 || ca->in_loss || !tcp_is_cwnd_limited(sk)) goto adjust.
        if acked == 0 || self.state.get() == State::Recovery || !ack.cwnd_limited {
            return true;
        }
        let mut acked = acked as f64;
        let mss = self.mss() as f64;
        if self.in_slow_start() {
            // Linux tcp_slow_start: cwnd = min(cwnd + acked, ssthresh); the
            // window follows (v0.7: frac_cwnd = snd_cwnd << CWND_UNIT).
            let cap = self.ssthresh.saturating_mul(self.mss()) as f64;
            (self.frac, acked) = cong::slow_start(self.frac, cap, acked, f64::INFINITY);
            self.snd_cwnd = self.snd_cwnd.max(self.frac_segments());
            if acked <= 0.0 {
                return false;
            }
        }
        // Linux: increase = acked * ai_ack_increase / cwnd (per MSS acked):
        // ai_per_rtt MSS per window of acked bytes.
        let ai = self.ai_per_rtt();
        self.frac += acked * ai * mss / self.frac.max(mss);
        true
    }

    /// Linux `prague_update_cwnd` "adjust": the segment window moves one
    /// segment per ACK towards `ceil(frac_cwnd)`, never stepping below
    /// `MIN_CWND`.
    fn step_window(&mut self) {
        let target = self.frac_segments();
        if self.snd_cwnd > target && self.snd_cwnd > self.cfg.min_cwnd_segments {
            // "Reuse the step-wise cwnd decrement"; Linux also sets ssthresh =
            // snd_cwnd here, which only matters for leaving slow start, done
            // at the cut already.
            self.snd_cwnd -= 1;
            self.ssthresh = self.ssthresh.min(self.snd_cwnd);
        } else if self.snd_cwnd < target {
            // "Reuse the step-wise cwnd increment".
            self.snd_cwnd += 1;
        }
    }

    /// Linux `prague_should_update_ewma` + `prague_update_alpha` +
    /// `prague_new_round`.
    fn end_of_round(&mut self, now: Time, ack: &AckEvent) {
        self.round_marks.add(ack);
        if !self.round.is_complete(ack) {
            return;
        }
        // Linux prague_should_update_ewma: "RTT independence on a step AQM
        // requires the competing flows to converge to the same alpha" — once
        // RTT-independent (never under NONE, whose should_update_ewma is
        // NULL), at most one update per target RTT.
        if self.is_rtt_independent()
            && self
                .alpha_stamp
                .is_some_and(|t| now.saturating_since(t) < self.target_rtt())
        {
            return;
        }
        // "Do not update alpha before we have proof that there's an AQM on the path."
        if self.saw_ce {
            if self.cfg.ecn_fallback != EcnFallback::Off {
                self.classic.on_round(ack.min_rtt);
            }
            // F = marked / delivered; alpha = (1 - g) * alpha + g * F (DCTCP's rule).
            let f = self.round_marks.take();
            self.alpha = dctcp::ewma(self.alpha, self.cfg.shift_g, f);
            self.alpha_stamp = Some(now);
            self.stats.alpha_updates += 1;
        }
        // prague_new_round: next_seq = snd_nxt; old_delivered(_ce) = ...;
        // ++round outside slow start.
        self.round.restart(ack);
        self.round_marks = MarkedFraction::default();
        if !self.in_slow_start() {
            self.stats.rounds += 1;
        }
    }
}

impl CongestionControl for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 4] = ["SlowStart", "CongestionAvoidance", "Cwr", "Recovery"];
        &STATES
    }

    fn ecn_codepoint(&self) -> EcnCodepoint {
        // RFC 9331 §4 req. 1; Linux prague_init: tp->ecn_flags |= TCP_ECN_ECT_1.
        EcnCodepoint::Ect1
    }

    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        if ack.acked_bytes > 0 {
            self.rto_backoff = false;
        }
        self.delivered = ack.delivered;
        if !ack.srtt.is_zero() {
            self.srtt = ack.srtt;
        }
        if self.cfg.ecn_fallback != EcnFallback::Off {
            if let Some(rtt) = ack.rtt_sample {
                // Linux prague_pkts_acked -> prague_rtt_estimator.
                self.classic.on_rtt_sample(rtt);
            }
        }

        // Linux tcp_fastretrans_alert: CWR ends once data sent after the cut
        // is acknowledged ("held something *above* high_seq is ACKed").
        if let State::Cwr { end } = self.state.get() {
            if ack.delivered > end {
                let open = self.open_state();
                self.transition_to(now, open, ctx);
            }
        }
        // Linux tcp_enter_cwr (only from Open) before cong_control: the cut
        // uses the alpha of the previous round.
        if ack.ce_bytes > 0
            && matches!(
                self.state.get(),
                State::SlowStart | State::CongestionAvoidance
            )
        {
            let end = ack.delivered.saturating_add(ack.in_flight);
            self.enter_cwr(now, end, false, ctx);
        }
        if ack.ce_bytes > 0 {
            self.saw_ce = true;
        }

        // Linux prague_cong_control: update_cwnd, then alpha.
        if self.grow(ack) {
            self.step_window();
        }
        if self.state.get() == State::SlowStart && !self.in_slow_start() {
            self.transition_to(now, State::CongestionAvoidance, ctx);
        }
        self.end_of_round(now, ack);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>) {
        match *ev {
            CongestionEvent::Loss {
                first_in_episode: false,
                ..
            } => {}
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } => {
                // RFC 9331 §4 req. 4 (Reno-friendly on loss); Linux
                // prague_ssthresh + prague_enter_loss: frac_cwnd -= frac_cwnd/2.
                self.classic.on_ssthresh(self.ssthresh);
                self.frac -= self.frac / 2.0;
                self.set_ssthresh_to_window();
                self.stats.loss_reductions += 1;
                self.transition_to(now, State::Recovery, ctx);
            }
            CongestionEvent::Rto { .. } => {
                self.stats.rtos += 1;
                // First timeout outside fast recovery: halve (Linux
                // tcp_enter_loss -> CA_EVENT_LOSS -> prague_enter_loss only
                // then); a backed-off repeat keeps ssthresh (RFC 5681 §3.1).
                if !self.rto_backoff && self.state.get() != State::Recovery {
                    self.classic.on_ssthresh(self.ssthresh);
                    let half = ((self.frac / 2.0 / self.mss() as f64).ceil() as u64)
                        .max(self.cfg.min_cwnd_segments);
                    self.ssthresh = half;
                }
                self.rto_backoff = true;
                // RFC 5681 §3.1: the loss window is one segment.
                self.frac = self.mss() as f64;
                self.snd_cwnd = 1;
                let open = self.open_state();
                self.transition_to(now, open, ctx);
            }
            CongestionEvent::EcnEcho { in_flight } => {
                if matches!(
                    self.state.get(),
                    State::SlowStart | State::CongestionAvoidance
                ) {
                    let end = self.delivered.saturating_add(in_flight);
                    self.enter_cwr(now, end, true, ctx);
                }
            }
            // Deviation: Linux prague_cwnd_undo restores max(cwnd, loss_cwnd);
            // here an undo only ends recovery as below.
            CongestionEvent::RecoveryEnd | CongestionEvent::Undo => {
                if self.state.get() == State::Recovery {
                    // Linux prague_ca_open: in_loss = 0. The window is where the
                    // steps were heading (RFC 6582 §3.2 step 3 analogue).
                    self.snd_cwnd = self
                        .snd_cwnd
                        .min(self.frac_segments().max(self.cfg.min_cwnd_segments));
                    self.ssthresh = self.ssthresh.min(self.snd_cwnd);
                    let open = self.open_state();
                    self.transition_to(now, open, ctx);
                }
            }
        }
    }

    fn cwnd(&self) -> u64 {
        self.snd_cwnd.saturating_mul(self.mss())
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then(|| self.ssthresh.saturating_mul(self.mss()))
    }

    /// Linux `prague_update_pacing_rate`: `frac_cwnd / srtt`, ×2 while
    /// `cwnd < ssthresh / 2`; `None` before the first RTT sample.
    fn pacing_rate(&self) -> Option<Rate> {
        if self.srtt.is_zero() {
            return None;
        }
        let mut bytes_per_s = self.frac / self.srtt.as_secs_f64();
        // "We keep the 200% pacing rate during SS".
        if self.snd_cwnd < self.ssthresh / 2 {
            bytes_per_s *= 2.0;
        }
        let bps = (bytes_per_s * 8.0).round();
        let bps = if bps >= u64::MAX as f64 {
            u64::MAX
        } else {
            bps as u64
        };
        Some(Rate::from_bps(bps).max(self.cfg.min_pacing_rate))
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics {
            cwnd: self.cwnd(),
            ssthresh: self.ssthresh(),
            pacing_rate: self.pacing_rate(),
            state: self.state.get().name(),
            extra: vec![
                ("alpha", self.alpha),
                ("frac_cwnd", self.frac),
                ("ai_per_rtt", self.ai_per_rtt()),
                (
                    "rtt_independent",
                    f64::from(u8::from(self.is_rtt_independent())),
                ),
                ("round", self.stats.rounds as f64),
                ("max_burst_segments", self.max_burst_segments() as f64),
                ("classic_ecn", self.classic.score()),
            ],
        }
    }
}

#[cfg(test)]
mod param_tests {
    use super::*;

    #[test]
    fn choice_names_are_the_serialized_names() {
        for (m, name) in RttScaling::ALL.iter().zip(RttScaling::NAMES) {
            let json = format!("{:?}", name);
            assert_eq!(serde_json::to_string(m).unwrap(), json);
            assert_eq!(RttScaling::from_name(name), Some(*m));
        }
        for (m, name) in EcnFallback::ALL.iter().zip(EcnFallback::NAMES) {
            let json = format!("{:?}", name);
            assert_eq!(serde_json::to_string(m).unwrap(), json);
            assert_eq!(EcnFallback::from_name(name), Some(*m));
        }
        assert_eq!(RttScaling::from_name("fast"), None);
        let d = PragueConfig::default();
        assert_eq!(
            (d.rtt_scaling, d.ecn_fallback),
            (RttScaling::Rate, EcnFallback::Off)
        );
        assert_eq!(
            (d.shift_g, d.rtt_transition_rounds, d.burst_shift),
            (4, 500, 12)
        );
    }
}
