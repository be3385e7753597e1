//! BBR v1 as Linux `net/ipv4/tcp_bbr.c` implements it (REFERENCES §3.6;
//! draft-cardwell-iccrg-bbr-congestion-control-00 describes the same
//! algorithm). Function names in the comments are the Linux ones.
//!
//! Per ACK (`bbr_main`): update the model — BtlBw (windowed max of delivery
//! rate over 10 packet-timed rounds), ACK aggregation (`extra_acked`), the
//! ProbeBW gain cycle, full-pipe detection, Drain, RTprop (min RTT over 10 s)
//! and ProbeRTT — then set `pacing_rate = pacing_gain * BtlBw * 99 %` and
//! move cwnd toward `cwnd_gain * BDP + extra_acked + 3 send quanta`.
//! Modes: Startup (gains 2/ln 2) → Drain (pacing ln 2/2) → ProbeBW
//! (`[1.25, 0.75, 1 x 6]`, cwnd gain 2) ⇄ ProbeRTT (cwnd 4 packets for
//! 200 ms and a round). Loss is ignored except for packet conservation in
//! the first round of fast recovery and the RTO window (Linux
//! `bbr_set_cwnd_to_recover_or_restore`, `tcp_enter_loss`).
//!
//! **Units.** Like Linux, BDP, the quantization budget and the cwnd floor
//! are whole packets of `mss` bytes; cwnd itself is kept in bytes (the
//! transport counts it in packets, `cwnd / mss`). Bandwidth is bits/s.
//! Gains are Linux's fixed-point values in 1/256 ([`BBR_UNIT`]).
//!
//! **Not implemented.**
//! * The long-term "policer" bandwidth mode (`lt_bw`, `bbr_lt_bw_sampling`):
//!   it only engages after two 4-to-16-round intervals with ≥ 20 % loss and
//!   a consistent delivery rate, i.e. under token-bucket policers, which no
//!   scenario models. Without it, a policed path makes BBR v1 lose ~20 %+
//!   of its packets (its published failure mode).
//! * The part of `bbr_undo_cwnd` that resets the long-term sampling (there is
//!   no `lt_bw` mode); its reset of the full-bandwidth detector is done on
//!   [`CongestionEvent::Undo`], which also ends recovery.
//! * `tp->snd_ssthresh` bookkeeping: [`CongestionControl::ssthresh`] stays
//!   `None`, as it must: a controller with an ssthresh gets PRR from the
//!   transport, and Linux BBR (a `cong_control` module) bypasses PRR.
//!
//! **Deviations from Linux, and why.**
//! * `bbr_packets_in_net_at_edt`: the "in flight at the earliest departure
//!   time" correction needs the pacer's release time, which the controller
//!   does not see; raw in-flight is used (the correction is at most one
//!   pacing gap of data). `rs->prior_in_flight` is reconstructed as
//!   `in_flight + acked + newly lost`.
//! * `is_ack_delayed` (delayed-ACK RTT samples may not refresh an expired
//!   min RTT) is not reported by the transport and is treated as false.
//! * In ProbeRTT Linux marks the *transport* app-limited so that samples of
//!   the tiny ProbeRTT flight are ignored; here the controller marks the
//!   samples itself (`AppLimitedMark`).
//! * `CA_EVENT_TX_START` with `tp->app_limited` (restart after idle) is
//!   inferred in `on_packet_sent`: the pipe was empty, nothing is in loss
//!   recovery and something was delivered before — a sender that is not
//!   application-limited never drains its pipe outside recovery.
//! * `bbr_tso_segs_goal` is computed as Linux does (≈ 1 ms of data, at least
//!   2 segments above 1.2 Mbit/s) although the transport has no TSO, so that
//!   cwnd matches Linux's at the same rate.

use serde::{Deserialize, Serialize};

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, Tracer};

use super::filters::{AckAggregation, MaxFilter};
use super::{AppLimitedMark, CaState, DwellStep, LossCounter, ProbeRttDwell, RateSample};
use crate::cong::{self, WindowConfigError};
use crate::param::{Kind, Param, ParamError, ParamValue};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent};

/// Linux `BBR_UNIT = 1 << BBR_SCALE` (8): gains are fixed point in 1/256.
pub const BBR_UNIT: u32 = 1 << 8;

/// Linux `CYCLE_LEN`: phases in the ProbeBW pacing-gain cycle.
const CYCLE_LEN: usize = 8;

/// Linux `TCP_INIT_CWND` (packets): the BDP before any RTT sample, and the
/// delivered count below which Startup grows cwnd unconditionally.
const TCP_INIT_CWND: u64 = 10;

/// Linux `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (65536 - 1 - 320 on x86-64):
/// the largest TSO burst `bbr_tso_segs_goal` considers.
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

/// Linux `sk_pacing_shift` default (10): TSO bursts hold ~1 ms (2^-10 s) of data.
const PACING_SHIFT: u32 = 10;

/// A BBR gain in Linux's kind: a factor in 1/256 steps, at most 100 (a bound
/// that catches typos; Linux's largest default gain is 2.885).
const fn gain(zero_ok: bool) -> Kind {
    Kind::Gain {
        scale: BBR_UNIT,
        max: 100.0,
        zero_ok,
    }
}

/// A factor as Linux's `BBR_UNIT` fixed point (the nearest 1/256).
pub fn gain_to_fixed(g: f64) -> u32 {
    (g * f64::from(BBR_UNIT)).round() as u32
}

/// Startup pacing and cwnd gain.
pub const HIGH_GAIN: Param = Param::new(
    "high_gain",
    gain(false),
    ParamValue::Num(739.0 / 256.0),
    "Linux `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` = 739/256 (2/ln 2)",
    "Startup pacing and cwnd gain",
)
.linux_name("bbr_high_gain");

/// ProbeBW cwnd gain.
pub const CWND_GAIN: Param = Param::new(
    "cwnd_gain",
    gain(false),
    ParamValue::Num(2.0),
    "Linux `bbr_cwnd_gain = BBR_UNIT * 2`",
    "ProbeBW cwnd gain",
)
.linux_name("bbr_cwnd_gain");

/// Gain on the aggregation allowance.
pub const EXTRA_ACKED_GAIN: Param = Param::new(
    "extra_acked_gain",
    gain(true),
    ParamValue::Num(1.0),
    "Linux `bbr_extra_acked_gain = BBR_UNIT`",
    "aggregation allowance gain, 0 disables `extra_acked`",
)
.linux_name("bbr_extra_acked_gain");

/// RTprop filter window.
pub const MIN_RTT_WIN: Param = Param::new(
    "min_rtt_win",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_secs(10)),
    "Linux `bbr_min_rtt_win_sec = 10`",
    "RTprop min-filter window",
)
.linux_name("bbr_min_rtt_win_sec");

/// Minimum time at the ProbeRTT window.
pub const PROBE_RTT_MODE: Param = Param::new(
    "probe_rtt_mode",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(200)),
    "Linux `bbr_probe_rtt_mode_ms = 200`",
    "minimum time at the ProbeRTT window",
)
.linux_name("bbr_probe_rtt_mode_ms");

/// The parameters a scenario can set (`cc = { kind = "bbr", ... }`). Linux
/// `tcp_bbr` has no module parameters (its knobs are `static const`); these
/// are the ones experiments change, named as the constants without `bbr_`
/// and the unit suffix.
pub const PARAMS: &[Param] = &[
    HIGH_GAIN,
    CWND_GAIN,
    EXTRA_ACKED_GAIN,
    MIN_RTT_WIN,
    PROBE_RTT_MODE,
];

// Gains are factors in the scenario, 1/256 fixed point in the config.
crate::registry::cc_config! {
    BbrConfig => Bbr {
        HIGH_GAIN => high_gain (gain_to_fixed),
        CWND_GAIN => cwnd_gain (gain_to_fixed),
        EXTRA_ACKED_GAIN => extra_acked_gain (gain_to_fixed),
        MIN_RTT_WIN => min_rtt_win,
        PROBE_RTT_MODE => probe_rtt_mode,
    }
}

/// Parameters of [`Bbr`]. Defaults are the Linux `tcp_bbr.c` constants;
/// those in [`PARAMS`] (gains there as factors, here in 1/256) take their
/// default and range from there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrConfig {
    /// Sender maximum segment size in bytes (1448 = 1500 MTU - IPv4 - TCP - timestamps).
    pub mss: u64,
    /// Initial window in segments (RFC 6928, Linux `TCP_INIT_CWND` = 10).
    pub initial_window_segments: u64,
    /// [`HIGH_GAIN`], in 1/256 units.
    pub high_gain: u32,
    /// Drain pacing gain: `bbr_drain_gain = BBR_UNIT * 1000 / 2885` = 88 (ln 2/2).
    pub drain_gain: u32,
    /// [`CWND_GAIN`], in 1/256 units.
    pub cwnd_gain: u32,
    /// ProbeBW pacing gains: `bbr_pacing_gain[] = {5/4, 3/4, 1, 1, 1, 1, 1, 1}`.
    pub pacing_gain_cycle: [u32; CYCLE_LEN],
    /// ProbeBW starts at a random one of this many phases, never the 3/4
    /// phase (`bbr_cycle_rand` = 7).
    pub cycle_rand: u32,
    /// BtlBw max-filter window in packet-timed rounds: `bbr_bw_rtts = CYCLE_LEN + 2` = 10.
    pub bw_rtts: u64,
    /// [`MIN_RTT_WIN`].
    pub min_rtt_win: Dur,
    /// [`PROBE_RTT_MODE`].
    pub probe_rtt_mode: Dur,
    /// Minimum cwnd and the ProbeRTT window, packets: `bbr_cwnd_min_target` = 4.
    pub cwnd_min_target: u64,
    /// Full-pipe growth threshold, 1/256: `bbr_full_bw_thresh = BBR_UNIT * 5 / 4` = 320.
    pub full_bw_thresh: u32,
    /// Rounds without that growth before the pipe is full: `bbr_full_bw_cnt` = 3.
    pub full_bw_cnt: u32,
    /// Pace this many percent below the estimate: `bbr_pacing_margin_percent` = 1.
    pub pacing_margin_percent: u32,
    /// [`EXTRA_ACKED_GAIN`], in 1/256 units (0 disables `extra_acked`).
    pub extra_acked_gain: u32,
    /// Half-window of the `extra_acked` max filter, rounds: `bbr_extra_acked_win_rtts` = 5.
    pub extra_acked_win_rtts: u32,
    /// Cap on the aggregation allowance as time at BtlBw: `bbr_extra_acked_max_us` = 100 ms.
    pub extra_acked_max: Dur,
    /// Below this pacing rate TSO bursts are one segment: `bbr_min_tso_rate` = 1.2 Mbit/s.
    pub min_tso_rate: Rate,
}

impl Default for BbrConfig {
    fn default() -> Self {
        let unit = BBR_UNIT;
        BbrConfig {
            mss: 1448,                              // 1500 - 20 - 20 - 12
            initial_window_segments: TCP_INIT_CWND, // RFC 6928
            high_gain: gain_to_fixed(HIGH_GAIN.default.num()),
            drain_gain: unit * 1000 / 2885, // bbr_drain_gain
            cwnd_gain: gain_to_fixed(CWND_GAIN.default.num()),
            pacing_gain_cycle: [
                unit * 5 / 4, // probe for more bandwidth
                unit * 3 / 4, // drain the queue / yield
                unit,
                unit,
                unit,
                unit,
                unit,
                unit,
            ], // bbr_pacing_gain[]
            cycle_rand: 7,                 // bbr_cycle_rand
            bw_rtts: CYCLE_LEN as u64 + 2, // bbr_bw_rtts
            min_rtt_win: MIN_RTT_WIN.default.dur(),
            probe_rtt_mode: PROBE_RTT_MODE.default.dur(),
            cwnd_min_target: 4,           // bbr_cwnd_min_target
            full_bw_thresh: unit * 5 / 4, // bbr_full_bw_thresh
            full_bw_cnt: 3,               // bbr_full_bw_cnt
            pacing_margin_percent: 1,     // bbr_pacing_margin_percent
            extra_acked_gain: gain_to_fixed(EXTRA_ACKED_GAIN.default.num()),
            extra_acked_win_rtts: 5, // bbr_extra_acked_win_rtts
            extra_acked_max: Dur::from_millis(100), // bbr_extra_acked_max_us
            min_tso_rate: Rate::from_bps(1_200_000), // bbr_min_tso_rate
        }
    }
}

/// Why a [`BbrConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BbrConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
    /// `cycle_rand` must be in `1..=7` (the random start must avoid phase 1).
    #[error("cycle_rand: {0} is not in 1..=7")]
    CycleRand(u32),
    /// A window (`bw_rtts`, `cwnd_min_target`,
    /// `extra_acked_win_rtts`, `full_bw_cnt`) is zero.
    #[error("{0}: must be positive")]
    ZeroWindow(&'static str),
    /// `pacing_margin_percent` must be below 100.
    #[error("pacing_margin_percent: {0} is not below 100")]
    PacingMargin(u32),
    /// A parameter of [`PARAMS`] is out of its declared range.
    #[error(transparent)]
    Param(ParamError),
}

impl BbrConfig {
    pub fn validate(&self) -> Result<(), BbrConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
        if !(1..CYCLE_LEN as u32).contains(&self.cycle_rand) {
            return Err(BbrConfigError::CycleRand(self.cycle_rand));
        }
        let factor = |g: u32| ParamValue::Num(f64::from(g) / f64::from(BBR_UNIT));
        HIGH_GAIN
            .check(factor(self.high_gain))
            .and(CWND_GAIN.check(factor(self.cwnd_gain)))
            .and(EXTRA_ACKED_GAIN.check(factor(self.extra_acked_gain)))
            .and(MIN_RTT_WIN.check(ParamValue::Dur(self.min_rtt_win)))
            .and(PROBE_RTT_MODE.check(ParamValue::Dur(self.probe_rtt_mode)))
            .map_err(BbrConfigError::Param)?;
        for (key, zero) in [
            ("bw_rtts", self.bw_rtts == 0),
            ("cwnd_min_target", self.cwnd_min_target == 0),
            ("extra_acked_win_rtts", self.extra_acked_win_rtts == 0),
            ("full_bw_cnt", self.full_bw_cnt == 0),
        ] {
            if zero {
                return Err(BbrConfigError::ZeroWindow(key));
            }
        }
        if self.pacing_margin_percent >= 100 {
            return Err(BbrConfigError::PacingMargin(self.pacing_margin_percent));
        }
        Ok(())
    }
}

/// Linux `enum bbr_mode`, each variant with the state that exists only in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Ramp up: pacing and cwnd gain `high_gain`.
    Startup,
    /// Drain the Startup queue: pacing gain `drain_gain`.
    Drain,
    /// Gain cycling. `cycle_idx` indexes `pacing_gain_cycle`; `cycle_start`
    /// is when the phase began (Linux `cycle_mstamp`).
    ProbeBw { cycle_idx: usize, cycle_start: Time },
    /// cwnd held at `cwnd_min_target` for the dwell (shared with BBRv3).
    ProbeRtt(ProbeRttDwell),
}

impl Machine for Mode {
    const NAME: &'static str = "BBR";

    /// Stable names for traces, series and [`CcMetrics::state`].
    fn name(self) -> &'static str {
        match self {
            Mode::Startup => "Startup",
            Mode::Drain => "Drain",
            Mode::ProbeBw { .. } => "ProbeBW",
            Mode::ProbeRtt(_) => "ProbeRTT",
        }
    }

    /// The edges of the `tcp_bbr.c` state diagram: STARTUP → DRAIN →
    /// PROBE_BW, any non-ProbeRTT mode → PROBE_RTT, PROBE_RTT → PROBE_BW
    /// (pipe filled) or STARTUP (not filled; `bbr_reset_mode`).
    fn may_enter(self, next: Mode) -> bool {
        use Mode::*;
        matches!(
            (self, next),
            (Startup, Drain)
                | (Drain, ProbeBw { .. })
                | (Startup | Drain | ProbeBw { .. }, ProbeRtt(_))
                | (ProbeRtt(_), ProbeBw { .. } | Startup)
        )
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BbrStats {
    /// Packet-timed rounds counted (Linux `rtt_cnt`).
    pub rounds: u64,
    /// The round in which full-pipe detection fired, if it has.
    pub full_bw_round: Option<u64>,
    /// ProbeRTT episodes entered.
    pub probe_rtt_entries: u64,
    /// Fast-recovery episodes (one `Loss { first_in_episode: true }` each).
    pub recovery_episodes: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Rounds that started in packet conservation.
    pub conservation_rounds: u64,
}

/// BBR v1 (see the module documentation).
#[derive(Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    mode: Checked<Mode>,
    /// The first event seen: Linux `bbr_init` runs when the connection is
    /// set up; here when the transport first calls the controller.
    started: bool,
    /// Bytes.
    cwnd: u64,
    pacing_rate: Rate,
    pacing_gain: u32,
    cwnd_gain: u32,
    // --- round counting (bbr_update_bw) ---
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    /// Latest `C.delivered` seen.
    delivered: u64,
    // --- model ---
    /// BtlBw filter over `rtt_cnt`, values in bits/s.
    bw: MaxFilter,
    min_rtt: Option<Dur>,
    min_rtt_stamp: Time,
    has_seen_rtt: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    // --- ACK aggregation (bbr_update_ack_aggregation), bytes ---
    extra_acked: AckAggregation,
    // --- loss recovery ---
    ca: CaState,
    prev_ca: CaState,
    packet_conservation: bool,
    prior_cwnd: u64,
    idle_restart: bool,
    losses: LossCounter,
    app_mark: AppLimitedMark,
    stats: BbrStats,
}

impl Bbr {
    /// # Panics
    /// If `cfg` is invalid ([`BbrConfig::validate`]); scenario input is
    /// validated before it gets here, so this is a bug.
    pub fn new(cfg: BbrConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid BbrConfig: {e}"))
    }

    pub fn try_new(cfg: BbrConfig) -> Result<Self, BbrConfigError> {
        cfg.validate()?;
        let cwnd = cfg.mss.saturating_mul(cfg.initial_window_segments);
        Ok(Bbr {
            mode: Checked::new(Mode::Startup),
            started: false,
            cwnd,
            pacing_rate: Rate::ZERO,
            pacing_gain: cfg.high_gain,
            cwnd_gain: cfg.high_gain,
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            delivered: 0,
            bw: MaxFilter::new(0, 0),
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            has_seen_rtt: false,
            full_bw: 0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            extra_acked: AckAggregation::default(),
            ca: CaState::Open,
            prev_ca: CaState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
            idle_restart: false,
            losses: LossCounter::default(),
            app_mark: AppLimitedMark::default(),
            stats: BbrStats::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &BbrConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &BbrStats {
        &self.stats
    }

    /// Current pacing gain in 1/256 ([`BBR_UNIT`]).
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    /// Current cwnd gain in 1/256.
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    /// BtlBw: the windowed-max delivery rate (Linux `bbr_max_bw`).
    pub fn max_bw(&self) -> Rate {
        Rate::from_bps(self.bw.get())
    }

    /// RTprop, once measured.
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }

    /// When RTprop was last refreshed (Linux `min_rtt_stamp`).
    pub fn min_rtt_stamp(&self) -> Time {
        self.min_rtt_stamp
    }

    /// Index into the ProbeBW gain cycle, in ProbeBW.
    pub fn cycle_index(&self) -> Option<usize> {
        match self.mode.get() {
            Mode::ProbeBw { cycle_idx, .. } => Some(cycle_idx),
            _ => None,
        }
    }

    /// In ProbeRTT: when the 200 ms at the minimum window end (Linux
    /// `probe_rtt_done_stamp`), once in-flight has fallen to it.
    pub fn probe_rtt_done_at(&self) -> Option<Time> {
        match self.mode.get() {
            Mode::ProbeRtt(dwell) => dwell.done_at,
            _ => None,
        }
    }

    /// The aggregation allowance currently added to the cwnd target, bytes
    /// (Linux `bbr_ack_aggregation_cwnd`).
    pub fn extra_acked(&self) -> u64 {
        self.ack_aggregation_cwnd()
    }

    /// Mode name (`"Startup"`, `"Drain"`, `"ProbeBW"`, `"ProbeRTT"`).
    pub fn mode_name(&self) -> &'static str {
        self.mode.get().name()
    }

    /// The one place the mode changes: checks the edge, traces it.
    fn transition_to(&mut self, now: Time, next: Mode, flow: FlowId, tracer: &mut dyn Tracer) {
        cong::enter(&mut self.mode, now, next, flow, tracer);
    }

    /// `bbr_init`, at the first event (when the connection starts).
    fn ensure_started(&mut self, now: Time) {
        if self.started {
            return;
        }
        self.started = true;
        self.min_rtt_stamp = now;
        self.extra_acked.restart_epoch(now);
        self.init_pacing_rate_from_rtt(Dur::ZERO);
    }

    fn mss(&self) -> u64 {
        self.cfg.mss
    }

    // ----- rates and volumes ---------------------------------------------------

    /// `bbr_rate_bytes_per_sec`: `bw * gain` less the pacing margin.
    fn rate_with_gain(&self, bw: u64, gain: u32) -> Rate {
        let r = u128::from(bw) * u128::from(gain) / u128::from(BBR_UNIT);
        let r = r * u128::from(100 - self.cfg.pacing_margin_percent) / 100;
        Rate::from_bps(r.min(u128::from(u64::MAX)) as u64)
    }

    /// `bbr_init_pacing_rate_from_rtt`: `high_gain * cwnd / RTT`, with a
    /// nominal 1 ms before the first RTT sample.
    fn init_pacing_rate_from_rtt(&mut self, srtt: Dur) {
        let rtt = if srtt.is_zero() {
            Dur::from_millis(1) // "use nominal default RTT"
        } else {
            self.has_seen_rtt = true;
            srtt
        };
        let bw = Rate::from_bytes_per(self.cwnd, rtt).unwrap_or(Rate::ZERO);
        self.pacing_rate = self.rate_with_gain(bw.as_bps(), self.cfg.high_gain);
    }

    /// `bbr_bdp`: `ceil(bw * min_rtt * gain)` in packets; `TCP_INIT_CWND`
    /// before any RTT sample.
    fn bdp_pkts(&self, bw: u64, gain: u32) -> u64 {
        let Some(rtt) = self.min_rtt else {
            return TCP_INIT_CWND;
        };
        // bits/s * ns * gain / (8e9 * 256 * mss) packets, rounded up.
        let num = u128::from(bw) * u128::from(rtt.as_nanos()) * u128::from(gain);
        let den = 8_000_000_000u128 * u128::from(BBR_UNIT) * u128::from(self.mss());
        num.div_ceil(den).min(u128::from(u32::MAX)) as u64
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate, at least
    /// `bbr_min_tso_segs` (2 above `min_tso_rate`), at most 127 segments.
    fn tso_segs_goal(&self) -> u64 {
        let bytes_per_sec = self.pacing_rate.as_bps() / 8;
        let bytes = (bytes_per_sec >> PACING_SHIFT).min(GSO_MAX_BYTES);
        let min_segs = if bytes_per_sec < self.cfg.min_tso_rate.as_bps() / 8 {
            1
        } else {
            2
        };
        (bytes / self.mss()).max(min_segs).min(0x7f)
    }

    /// `bbr_quantization_budget`, in packets.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        // "Allow enough full-sized skbs in flight to utilize end systems."
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        // "Reduce delayed ACKs by rounding up cwnd to the next even number."
        cwnd = (cwnd + 1) & !1;
        // "Ensure gain cycling gets inflight above BDP even for small BDPs."
        if let Mode::ProbeBw { cycle_idx: 0, .. } = self.mode.get() {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: BDP times `gain` plus the quantization budget, packets.
    fn inflight_pkts(&self, bw: u64, gain: u32) -> u64 {
        self.quantization_budget(self.bdp_pkts(bw, gain))
    }

    /// `bbr_ack_aggregation_cwnd`, bytes.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if self.cfg.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = Rate::from_bps(self.bw.get()).bytes_in(self.cfg.extra_acked_max);
        let extra = self.extra_acked.get();
        let aggr = extra * u64::from(self.cfg.extra_acked_gain) / u64::from(BBR_UNIT);
        aggr.min(max_aggr)
    }

    // ----- the model (bbr_update_model) ------------------------------------------

    /// `bbr_update_bw`: count rounds and feed the BtlBw filter.
    fn update_bw(&mut self, ack: &AckEvent, rs: &RateSample) {
        self.round_start = false;
        // "Not a valid observation"
        let Some(rate) = rs.delivery_rate.filter(|_| rs.has_data()) else {
            return;
        };
        // "See if we've reached the next RTT": !before(prior_delivered, next_rtt_delivered)
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = ack.delivered;
            self.rtt_cnt += 1;
            self.stats.rounds = self.rtt_cnt;
            self.round_start = true;
            self.packet_conservation = false;
        }
        // "we filter out app-limited samples unless they describe the path bw
        // at least as well as our bw model"
        let bw = rate.as_bps();
        if !rs.is_app_limited || bw >= self.bw.get() {
            self.bw.update(self.cfg.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the windowed max of data ACKed beyond
    /// what BtlBw predicts since the start of the current ACK epoch.
    fn update_ack_aggregation(&mut self, now: Time, rs: &RateSample) {
        if self.cfg.extra_acked_gain == 0 || !rs.has_data() || rs.delivery_rate.is_none() {
            return;
        }
        let bw = Rate::from_bps(self.bw.get());
        let (win, mss) = (self.cfg.extra_acked_win_rtts, self.mss());
        self.extra_acked.update(
            now,
            self.round_start,
            win,
            bw,
            rs.newly_acked,
            self.cwnd,
            mss,
        );
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(
        &self,
        now: Time,
        cycle_start: Time,
        rs: &RateSample,
        in_flight: u64,
    ) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Dur::ZERO);
        let is_full_length = now.saturating_since(cycle_start) > min_rtt;
        // "The pacing_gain of 1.0 paces at the estimated bw ... just use wall clock time"
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        // rs->prior_in_flight (EDT correction omitted, see module docs).
        let prior_in_flight = in_flight + rs.newly_acked + rs.newly_lost;
        let bw = self.bw.get();
        if self.pacing_gain > BBR_UNIT {
            // "We do not persist if packets are lost, since a path with small
            // buffers may not hold that much."
            return is_full_length
                && (rs.newly_lost > 0
                    || prior_in_flight >= self.inflight_pkts(bw, self.pacing_gain) * self.mss());
        }
        // "If inflight falls to match BDP then we estimate queue is drained"
        is_full_length || prior_in_flight <= self.inflight_pkts(bw, BBR_UNIT) * self.mss()
    }

    /// `bbr_update_cycle_phase` / `bbr_advance_cycle_phase`.
    fn update_cycle_phase(&mut self, now: Time, rs: &RateSample, in_flight: u64) {
        if let Mode::ProbeBw {
            cycle_idx,
            cycle_start,
        } = self.mode.get()
        {
            if self.is_next_cycle_phase(now, cycle_start, rs, in_flight) {
                // A phase change is not a mode change: not traced.
                self.mode.update(|m| {
                    *m = Mode::ProbeBw {
                        cycle_idx: (cycle_idx + 1) % CYCLE_LEN,
                        cycle_start: now,
                    }
                });
            }
        }
    }

    /// `bbr_check_full_bw_reached`: three rounds without 25 % growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh =
            u128::from(self.full_bw) * u128::from(self.cfg.full_bw_thresh) / u128::from(BBR_UNIT);
        if u128::from(self.bw.get()) >= bw_thresh {
            self.full_bw = self.bw.get();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.cfg.full_bw_cnt;
        if self.full_bw_reached {
            self.stats.full_bw_round = Some(self.rtt_cnt);
        }
    }

    /// `bbr_reset_probe_bw_mode`: a random phase other than the 3/4 one.
    fn reset_probe_bw_mode(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        // cycle_idx = CYCLE_LEN - 1 - get_random_u32_below(bbr_cycle_rand),
        // then bbr_advance_cycle_phase: the start is one of 2..=7, 0 — never 1.
        let r = rng.below(u64::from(self.cfg.cycle_rand)) as usize;
        let idx = (CYCLE_LEN - 1 - r + 1) % CYCLE_LEN;
        self.transition_to(
            now,
            Mode::ProbeBw {
                cycle_idx: idx,
                cycle_start: now,
            },
            flow,
            tracer,
        );
    }

    /// `bbr_reset_mode`: ProbeBW if the pipe was filled, else Startup.
    fn reset_mode(&mut self, now: Time, flow: FlowId, rng: &mut SimRng, tracer: &mut dyn Tracer) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now, flow, rng, tracer);
        } else {
            self.transition_to(now, Mode::Startup, flow, tracer);
        }
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, now: Time, in_flight: u64, ctx: &mut CcCtx<'_>) {
        if self.mode.get() == Mode::Startup && self.full_bw_reached {
            // "drain queue we created"
            self.transition_to(now, Mode::Drain, ctx.flow, ctx.tracer);
        }
        // "fall through to check if in-flight is already small"
        if self.mode.get() == Mode::Drain
            && in_flight <= self.inflight_pkts(self.bw.get(), BBR_UNIT) * self.mss()
        {
            // "we estimate queue is drained"
            self.reset_probe_bw_mode(now, ctx.flow, ctx.rng, ctx.tracer);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        if !matches!(self.mode.get(), Mode::ProbeRtt(dwell) if dwell.is_over(now)) {
            return;
        }
        self.min_rtt_stamp = now; // "wait a while until PROBE_RTT"
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(now, flow, rng, tracer);
    }

    /// `bbr_save_cwnd`: the last good cwnd, to restore after recovery or ProbeRTT.
    fn save_cwnd(&mut self) {
        if self.prev_ca < CaState::Recovery && !matches!(self.mode.get(), Mode::ProbeRtt(_)) {
            self.prior_cwnd = self.cwnd; // "this cwnd is good enough"
        } else {
            // "loss recovery or BBR_PROBE_RTT have temporarily cut cwnd"
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// `bbr_update_min_rtt`: RTprop and ProbeRTT.
    fn update_min_rtt(&mut self, now: Time, ack: &AckEvent, rs: &RateSample, ctx: &mut CcCtx<'_>) {
        // after(tcp_jiffies32, min_rtt_stamp + bbr_min_rtt_win_sec * HZ)
        let filter_expired = now > self.min_rtt_stamp + self.cfg.min_rtt_win;
        if let Some(rtt) = rs.rtt {
            // rs->rtt_us < min_rtt_us || (filter_expired && !rs->is_ack_delayed)
            if self.min_rtt.is_none_or(|m| rtt < m) || filter_expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if !self.cfg.probe_rtt_mode.is_zero()
            && filter_expired
            && !self.idle_restart
            && !matches!(self.mode.get(), Mode::ProbeRtt(_))
        {
            // "dip, drain queue"
            self.transition_to(
                now,
                Mode::ProbeRtt(ProbeRttDwell::ENTER),
                ctx.flow,
                ctx.tracer,
            );
            self.stats.probe_rtt_entries += 1;
            self.save_cwnd(); // "note cwnd so we can restore it"
        }
        if let Mode::ProbeRtt(mut dwell) = self.mode.get() {
            // "Ignore low rate samples during this mode."
            self.app_mark.mark(ack.delivered, ack.in_flight);
            // "Maintain min packets in flight for max(200 ms, 1 round)."
            let min_target = self.cfg.cwnd_min_target * self.mss();
            let step = dwell.on_ack(
                now,
                ack.in_flight,
                min_target,
                self.cfg.probe_rtt_mode,
                self.round_start,
            );
            self.mode.update(|m| *m = Mode::ProbeRtt(dwell));
            match step {
                DwellStep::Began => self.next_rtt_delivered = ack.delivered,
                DwellStep::RoundDone => {
                    self.check_probe_rtt_done(now, ctx.flow, ctx.rng, ctx.tracer)
                }
                DwellStep::Waiting => {}
            }
        }
        // "Restart after idle ends only once we process a new S/ACK for data"
        if rs.has_data() {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let c = &self.cfg;
        (self.pacing_gain, self.cwnd_gain) = match self.mode.get() {
            Mode::Startup => (c.high_gain, c.high_gain),
            Mode::Drain => (c.drain_gain, c.high_gain), // "slow, to drain" / "keep cwnd"
            Mode::ProbeBw { cycle_idx, .. } => (c.pacing_gain_cycle[cycle_idx], c.cwnd_gain),
            Mode::ProbeRtt(_) => (BBR_UNIT, BBR_UNIT),
        };
    }

    // ----- control (bbr_set_pacing_rate, bbr_set_cwnd) -----------------------------

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, bw: u64, gain: u32, srtt: Dur) {
        let rate = self.rate_with_gain(bw, gain);
        if !self.has_seen_rtt && !srtt.is_zero() {
            self.init_pacing_rate_from_rtt(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: returns the new cwnd and
    /// whether packet conservation decides it.
    fn recover_or_restore(&mut self, rs: &RateSample, in_flight: u64) -> (u64, bool) {
        let acked = rs.newly_acked;
        let (prev, state) = (self.prev_ca, self.ca);
        let mut cwnd = self.cwnd;
        // "An ACK for P pkts should release at most 2*P packets. ... First,
        // here we deduct the number of lost packets."
        if rs.newly_lost > 0 {
            cwnd = cwnd.saturating_sub(rs.newly_lost).max(self.mss());
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // "Starting 1st round of Recovery, so do packet conservation."
            self.packet_conservation = true;
            self.stats.conservation_rounds += 1;
            self.next_rtt_delivered = self.delivered; // "start round now"
                                                      // "Cut unused cwnd from app behavior, TSQ, or TSO deferral"
            cwnd = in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // "Exiting loss recovery; restore cwnd saved before recovery."
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca = state;
        if self.packet_conservation {
            // "yes, using packet conservation". Linux counts whole packets, so
            // an ACK of data releases at least one: never below 1 SMSS here
            // (a partial-segment ACK with nothing else in flight).
            return (cwnd.max(in_flight + acked).max(self.mss()), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start toward the target, or snap down to it.
    fn set_cwnd(&mut self, ack: &AckEvent, rs: &RateSample, bw: u64) {
        let mss = self.mss();
        let acked = rs.newly_acked;
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(rs, ack.in_flight);
            cwnd = c;
            if !conserving {
                let target_pkts = self.bdp_pkts(bw, self.cwnd_gain)
                    // "excess ACKed data that seems due to aggregation"
                    + self.ack_aggregation_cwnd() / mss;
                let target = self.quantization_budget(target_pkts) * mss;
                if self.full_bw_reached {
                    // "only cut cwnd if we filled the pipe"
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ack.delivered < TCP_INIT_CWND * mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.cfg.cwnd_min_target * mss);
            }
        }
        // done: "drain queue, refresh min_rtt"
        if let Mode::ProbeRtt(_) = self.mode.get() {
            cwnd = cwnd.min(self.cfg.cwnd_min_target * mss);
        }
        self.cwnd = cwnd;
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 4] = ["Startup", "Drain", "ProbeBW", "ProbeRTT"];
        &STATES
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)` with an app-limited connection:
    /// restart after idle (see the module docs for how idle is inferred).
    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        let was_idle = in_flight <= bytes && self.ca == CaState::Open && self.delivered > 0;
        if !was_idle {
            return;
        }
        self.idle_restart = true;
        self.extra_acked.restart_epoch(now);
        match self.mode.get() {
            // "pace at est. bw if we don't need more speed"
            Mode::ProbeBw { .. } => {
                let bw = self.bw.get();
                self.pacing_rate = self.rate_with_gain(bw, BBR_UNIT);
            }
            Mode::ProbeRtt(_) => self.check_probe_rtt_done(now, ctx.flow, ctx.rng, ctx.tracer),
            _ => {}
        }
    }

    /// `bbr_main`.
    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        self.delivered = ack.delivered;
        let rs = RateSample::from_ack(ack, &mut self.losses, &self.app_mark);
        // bbr_update_model
        self.update_bw(ack, &rs);
        self.update_ack_aggregation(now, &rs);
        self.update_cycle_phase(now, &rs, ack.in_flight);
        self.check_full_bw_reached(&rs);
        self.check_drain(now, ack.in_flight, ctx);
        self.update_min_rtt(now, ack, &rs, ctx);
        self.update_gains();
        // bbr_main
        let bw = self.bw.get();
        self.set_pacing_rate(bw, self.pacing_gain, ack.srtt);
        self.set_cwnd(ack, &rs, bw);
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, _ctx: &mut CcCtx<'_>) {
        self.ensure_started(now);
        match *ev {
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } => {
                if self.ca == CaState::Open {
                    // tcp_enter_recovery -> bbr_ssthresh -> bbr_save_cwnd
                    self.save_cwnd();
                    self.ca = CaState::Recovery;
                    self.stats.recovery_episodes += 1;
                }
            }
            // Later losses of an episode: counted through `total_lost` on the
            // next ACK (Linux `rs->losses`).
            CongestionEvent::Loss { .. } => {}
            CongestionEvent::Rto { .. } => {
                self.stats.rtos += 1;
                // tcp_enter_loss: ssthresh (bbr_save_cwnd) only from Open.
                if self.ca == CaState::Open {
                    self.save_cwnd();
                }
                self.ca = CaState::Loss;
                // bbr_set_state(TCP_CA_Loss)
                self.prev_ca = CaState::Loss;
                self.full_bw = 0;
                // tcp_enter_loss: cwnd = tcp_packets_in_flight + 1, and every
                // outstanding segment has just been marked lost.
                self.cwnd = self.mss();
            }
            // BBR v1 has no ECN response; its data is Not-ECT, so no echo comes.
            CongestionEvent::EcnEcho { .. } => {}
            // The cwnd restore happens on the next ACK (bbr_set_cwnd_to_recover_or_restore).
            CongestionEvent::RecoveryEnd => self.ca = CaState::Open,
            // bbr_undo_cwnd: "spurious slow-down; reset full bw detector"
            // (the lt sampling it also resets is not modelled), cwnd kept.
            CongestionEvent::Undo => {
                self.full_bw = 0;
                self.full_bw_cnt = 0;
                self.ca = CaState::Open;
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
        let unit = f64::from(BBR_UNIT);
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: None,
            pacing_rate: Some(self.pacing_rate),
            state: self.mode.get().name(),
            extra: vec![
                ("pacing_gain", f64::from(self.pacing_gain) / unit),
                ("cwnd_gain", f64::from(self.cwnd_gain) / unit),
                ("btl_bw_bps", self.bw.get() as f64),
                (
                    "min_rtt_ms",
                    self.min_rtt.map_or(f64::NAN, |d| d.as_millis_f64()),
                ),
                ("extra_acked_bytes", self.ack_aggregation_cwnd() as f64),
                ("rounds", self.rtt_cnt as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Driver;

    #[test]
    fn linux_gain_constants() {
        let c = BbrConfig::default();
        // 256 * 2885 / 1000 + 1 = 738 + 1; 256 * 1000 / 2885 = 88.
        assert_eq!((c.high_gain, c.drain_gain, c.cwnd_gain), (739, 88, 512));
        assert_eq!(
            c.pacing_gain_cycle,
            [320, 192, 256, 256, 256, 256, 256, 256]
        );
        assert_eq!(c.bw_rtts, 10);
    }

    #[test]
    fn legal_edges() {
        use Mode::*;
        let bw = ProbeBw {
            cycle_idx: 0,
            cycle_start: Time::ZERO,
        };
        let rtt = ProbeRtt(ProbeRttDwell::ENTER);
        for (from, to) in [
            (Startup, Drain),
            (Drain, bw),
            (Startup, rtt),
            (Drain, rtt),
            (bw, rtt),
            (rtt, bw),
            (rtt, Startup),
        ] {
            assert!(from.may_enter(to), "{} -> {}", from.name(), to.name());
        }
        for (from, to) in [
            (Startup, bw),
            (Drain, Startup),
            (bw, Drain),
            (bw, Startup),
            (rtt, rtt),
            (rtt, Drain),
            (Startup, Startup),
        ] {
            assert!(!from.may_enter(to), "{} -> {}", from.name(), to.name());
        }
    }

    #[test]
    #[should_panic(expected = "illegal BBR transition Startup -> ProbeBW")]
    fn illegal_transition_panics() {
        let mut d = Driver::new(Bbr::new(BbrConfig::default()));
        let next = Mode::ProbeBw {
            cycle_idx: 0,
            cycle_start: Time::ZERO,
        };
        d.cc.transition_to(Time::ZERO, next, 1, &mut d.tracer);
    }

    #[test]
    #[should_panic(expected = "illegal BBR transition ProbeRTT -> ProbeRTT")]
    fn probe_rtt_is_not_reentered() {
        let mut d = Driver::new(Bbr::new(BbrConfig::default()));
        let rtt = Mode::ProbeRtt(ProbeRttDwell::ENTER);
        d.cc.transition_to(Time::ZERO, rtt, 1, &mut d.tracer);
        d.cc.transition_to(Time::ZERO, rtt, 1, &mut d.tracer);
    }

    #[test]
    fn bdp_and_budget_in_packets() {
        let mut b = Bbr::new(BbrConfig::default());
        b.min_rtt = Some(Dur::from_millis(50));
        // 20 Mbit/s * 50 ms = 125 000 B = 86.3 packets -> 87 (rounded up).
        assert_eq!(b.bdp_pkts(20_000_000, BBR_UNIT), 87);
        // With gain 2: 172.65 -> 173.
        assert_eq!(b.bdp_pkts(20_000_000, 2 * BBR_UNIT), 173);
        // Pacing ~20 Mbit/s = 2.5 MB/s: 2.5e6 >> 10 = 2441 B = 1 segment,
        // at least 2 above 1.2 Mbit/s: budget 87 + 6 = 93 -> even: 94.
        b.pacing_rate = Rate::from_mbps(20);
        assert_eq!(b.tso_segs_goal(), 2);
        assert_eq!(b.inflight_pkts(20_000_000, BBR_UNIT), 94);
        // Phase 0 of ProbeBW adds 2 packets.
        b.mode = Checked::new(Mode::ProbeBw {
            cycle_idx: 0,
            cycle_start: Time::ZERO,
        });
        assert_eq!(b.inflight_pkts(20_000_000, BBR_UNIT), 96);
        // Before any RTT sample the BDP is TCP_INIT_CWND.
        b.min_rtt = None;
        assert_eq!(b.bdp_pkts(20_000_000, BBR_UNIT), 10);
    }

    #[test]
    fn pacing_rate_has_the_one_percent_margin() {
        let b = Bbr::new(BbrConfig::default());
        // 10 Mbit/s * 739/256 * 0.99.
        let expect = 10_000_000u128 * 739 / 256 * 99 / 100;
        assert_eq!(
            u128::from(b.rate_with_gain(10_000_000, 739).as_bps()),
            expect
        );
        assert_eq!(
            b.rate_with_gain(10_000_000, BBR_UNIT),
            Rate::from_bps(9_900_000)
        );
    }
}
