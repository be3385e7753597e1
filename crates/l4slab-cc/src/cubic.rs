//! CUBIC congestion control (RFC 9438) with Linux's HyStart slow-start exit
//! (or RFC 9406 HyStart++), shaped after Linux `net/ipv4/tcp_cubic.c` defaults.
//!
//! Windows are bytes at the interface and segments (`f64`) inside the cubic
//! arithmetic, which RFC 9438 §4.1.1 states in segments and seconds. Time is
//! integer [`Time`] everywhere; only `t`, `K` and the RTT in the window
//! function are converted to `f64` seconds (the function is specified over
//! real numbers). `cbrt` is `libm::cbrt` (DESIGN §4.5).
//!
//! * start: `cwnd = IW * SMSS` (RFC 6928), `ssthresh` unset; slow start with
//!   HyStart unless `hystart = false`: Linux's (`hystart_kind = "linux"`, the
//!   default; [`crate::hystart_linux`]) or HyStart++ (`"hystart++"`, RFC 9406).
//! * slow start: `cwnd += acked` per ACK (with HyStart++: at most `L*SMSS`,
//!   RFC 9406 §4.2), capped at `ssthresh` (Linux `tcp_slow_start`).
//! * Linux HyStart (`cubictcp_acked` → `hystart_update`, before the ACK grows
//!   cwnd): an ACK train spanning half the minimum RTT, or a round's minimum
//!   RTT `clamp(delay_min/8, 4 ms, 16 ms)` above `delay_min`, from cwnd >= 16
//!   segments: `ssthresh = cwnd`, straight to congestion avoidance with
//!   `K = 0`, `W_max = cwnd_prior = cwnd`. Again after an RTO (Linux
//!   `cubictcp_state(TCP_CA_Loss)` resets it).
//! * HyStart++ (initial slow start only): an RTT rise of `RttThresh` over the
//!   previous round enters Conservative Slow Start (growth / 4); an RTT back
//!   below the CSS baseline resumes slow start; after `CSS_ROUNDS` rounds,
//!   `ssthresh = cwnd` and congestion avoidance starts with `K = 0`,
//!   `W_max = cwnd_prior = cwnd` (RFC 9438 §4.10). See [`crate::hystart`].
//! * congestion avoidance (RFC 9438 §4.2–§4.5): on the first ACK of an epoch,
//!   `K = cbrt((W_max − cwnd_epoch)/C)`, `W_est = cwnd_epoch`. Per ACK,
//!   `target = clamp(W_cubic(t + RTT), cwnd, 1.5·cwnd)`,
//!   `W_est += α·segments_acked/cwnd` (α = 3(1−β)/(1+β), as Linux: the
//!   RFC's α = 1 once `W_est >= cwnd_prior` is not applied; the `alpha`
//!   option sets α independent of β, as lsquic's 0.8); if
//!   `W_cubic(t) < W_est` then `cwnd = W_est`
//!   (Reno-friendly region), else `cwnd += (target − cwnd)/cwnd` per acked segment.
//! * `grow_in_recovery` (lsquic): a loss cuts as below but goes straight to
//!   congestion avoidance (a new epoch), so ACKs during recovery grow cwnd.
//! * loss (first of an episode) and classic ECN-Echo (RFC 9438 §4.6, §4.7):
//!   `W_max = cwnd·(1+β)/2` if `cwnd < W_max` (fast convergence) else `cwnd`;
//!   `cwnd_prior = cwnd`; `ssthresh = max(⌊cwnd·β⌋, 2)` segments, cwnd in
//!   whole segments (Linux; see below);
//!   `cwnd = ssthresh`; the epoch ends. A loss freezes cwnd until
//!   `RecoveryEnd` (RFC 6675, as Reno); ECN-Echo goes straight to congestion
//!   avoidance and is ignored during loss recovery (one cut per episode).
//! * RTO (RFC 9438 §4.8): `ssthresh` as above (kept for a backed-off repeat
//!   or inside fast recovery, as Reno), `cwnd = 1 SMSS`, slow start without
//!   HyStart++; the next epoch has `K = 0`, `W_max = W_est = cwnd_epoch`.
//! * application limits (RFC 9438 §5.8): app-limited ACKs do not grow cwnd,
//!   and the epoch clock `t` does not run while the sender is app-limited or
//!   idle: each app-limited ACK moves `epoch_start` forward by the time since
//!   the previous ACK, and the first send after the pipe drained moves it by
//!   the idle time (Linux `bictcp_cwnd_event(CA_EVENT_TX_START)`).
//!
//! **Not implemented.** PRR (the transport runs it from our
//! `ssthresh`); restart
//! after idle (RFC 5681 §4.1 / RFC 7661); pacing (the transport's default).
//!
//! **Deviations from Linux `tcp_cubic.c` and why.**
//! * Slow-start exit: Linux HyStart by default, as the kernel (measured
//!   against it in docs/models/cubic.md, "Slow-start exit"); RFC 9406
//!   HyStart++ (which RFC 9438 §4.10 recommends) with `hystart_kind =
//!   "hystart++"`: the delay threshold against the *previous round's*
//!   minimum, no ACK-train test, no low-window floor, and Conservative Slow
//!   Start in between, which can undo a spurious exit.
//! * `β = 0.7` (RFC 9438 §4.6). Linux uses `beta = 717/1024 = 0.7002`; it is
//!   configurable. `C = 0.4`; Linux's `bic_scale = 41` gives `41·10/1024 = 0.4004`.
//! * `ssthresh` from cwnd, as Linux `cubictcp_recalc_ssthresh` (RFC 9438
//!   §4.6 Figure 5 says flight_size and allows cwnd): FlightSize counts the
//!   SACKed data behind a hole (docs/models/transport.md, "Reduction base").
//!   `W_max` and `cwnd_prior` use `cwnd`, as both do. An undo restores
//!   `max(cwnd, prior_cwnd)` (Linux `tcp_reno_undo_cwnd`, which CUBIC uses);
//!   `W_max` stays as the reduction set it.
//! * The RTT in `W_cubic(t + RTT)` is the path's minimum RTT, as Linux
//!   (`t += delay_min`); RFC 9438 §4.2 says the smoothed RTT. They differ only
//!   with a standing queue, where the RFC's choice looks further ahead.
//! * Growth per ACK is scaled by the segments it acks (byte counting, like
//!   Linux's per-segment `cnt`), so delayed ACKs do not slow cwnd growth; the
//!   RFC text says "for each received ACK".
//! * Reno-friendly region as RFC 9438 §4.3: `cwnd = W_est` (never lowering
//!   cwnd), with Linux's α = 3(1−β)/(1+β) throughout (the RFC switches α to
//!   1 at `cwnd_prior`; Linux `tcp_friendliness` does not, and steers `cnt`
//!   instead of setting cwnd). At 1 % loss and 25 ms (the LiteSpeed study)
//!   the RFC's switch made transfers ~10 % faster than Linux's.
//! * Reductions in whole segments, truncated, as Linux (`snd_cwnd` is a
//!   packet count): `ssthresh = ⌊⌊cwnd⌋·β⌋`, `W_max = ⌊cwnd⌋` (or
//!   `⌊⌊cwnd⌋·(1+β)/2⌋`). At windows of 7-14 segments the fraction the byte
//!   arithmetic kept was worth another ~10 % of throughput.
//! * First epoch after a loss-free slow-start exit or an RTO: Linux has
//!   `last_max_cwnd = 0` there and forces at least 5 % growth per RTT
//!   (`cnt <= 20`); we follow RFC 9438 §4.8/§4.10 (`K = 0`, plain curve), so
//!   growth starts slower, bounded below by the Reno-friendly region.
//! * `W_max < cwnd_epoch` (possible after an undo or fast convergence): `K = 0` and
//!   `W_max = cwnd_epoch`, as Linux `bictcp_update`; the RFC formula would
//!   take the cube root of a negative number.
//! * After ECN-Echo, congestion avoidance resumes at once; Linux holds cwnd
//!   in `TCP_CA_CWR` for one RTT (the epoch then starts one RTT later).
//! * The epoch clock also stops on app-limited (not only idle) periods:
//!   RFC 9438 §5.8 requires it ("t MUST NOT include these periods"); Linux
//!   only shifts the epoch after an idle period.

use serde::{Deserialize, Serialize};

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{Dur, Time};

use crate::cong::{self, UndoPoint, WindowConfigError};
use crate::hystart::{self, HyStartPp};
use crate::hystart_linux::{self, HyStart};
use crate::param::{Kind, Param, ParamError, ParamValue};
use crate::{AckEvent, CcCtx, CcMetrics, CongestionControl, CongestionEvent};

/// `β_cubic`, the multiplicative decrease factor.
pub const BETA: Param = Param::new(
    "beta",
    Kind::Fraction {
        min: 0.0,
        max: 1.0,
        min_open: true,
        max_open: true,
        linux_scale: Some(1024),
    },
    ParamValue::Num(0.7),
    "RFC 9438 §4.6; Linux `beta = 717` (of 1024) = 0.7002",
    "multiplicative decrease factor β_cubic",
);

/// `C`, the cubic scaling constant.
pub const C: Param = Param::new(
    "c",
    Kind::Number { above: 0.0 },
    ParamValue::Num(0.4),
    "RFC 9438 §5.1; Linux `bic_scale = 41` → 41·10/1024 = 0.4004",
    "cubic scaling constant C, segments/s³",
)
.linux_name("bic_scale");

/// Fast convergence.
pub const FAST_CONVERGENCE: Param = Param::new(
    "fast_convergence",
    Kind::Flag,
    ParamValue::Flag(true),
    "RFC 9438 §4.7 (SHOULD); Linux `fast_convergence = 1`",
    "lower W_max when a loss comes below the previous one",
);

/// The Reno-friendly region (config field `reno_friendly`).
pub const TCP_FRIENDLINESS: Param = Param::new(
    "tcp_friendliness",
    Kind::Flag,
    ParamValue::Flag(true),
    "RFC 9438 §4.3 (SHOULD); Linux `tcp_friendliness = 1`",
    "the Reno-friendly region (RFC 9438 §4.3)",
);

/// A slow-start exit before the first loss ([`HYSTART_KIND`] says which).
pub const HYSTART: Param = Param::new(
    "hystart",
    Kind::Flag,
    ParamValue::Flag(true),
    "Linux `hystart = 1`; RFC 9406",
    "leave slow start on delay signals (HyStart) before the first loss",
);

/// Which HyStart: Linux's (ACK train and delay, `tcp_cubic.c`) or RFC 9406
/// HyStart++.
pub const HYSTART_KIND: Param = Param::new(
    "hystart_kind",
    Kind::Choice(HyStartKind::NAMES),
    ParamValue::Choice("linux"),
    "Linux `hystart_detect = 3` (ACK train and delay); RFC 9406 for `hystart++`",
    "`linux`: kernel Cubic's HyStart (ACK train + delay, straight to congestion avoidance); `hystart++`: RFC 9406 with Conservative Slow Start",
)
.linux_name("hystart_detect");

/// The slow-start exit [`HYSTART_KIND`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HyStartKind {
    /// Linux HyStart ([`crate::hystart_linux`]).
    Linux,
    /// RFC 9406 HyStart++ ([`crate::hystart`]).
    HyStartPp,
}

impl HyStartKind {
    /// Their names (as in scenarios), in declaration order.
    pub const NAMES: &'static [&'static str] = &["linux", "hystart++"];
}

impl crate::param::FromParam for HyStartKind {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "linux" => HyStartKind::Linux,
            "hystart++" => HyStartKind::HyStartPp,
            other => panic!("{other} is not a HyStart kind"),
        }
    }
}

/// `α_cubic`, the Reno-friendly region's increase in segments per RTT.
/// Unset: RFC 9438 §4.3's `3(1 − β)/(1 + β)`, which Linux also derives from
/// β. Set: that many segments per RTT whatever β is, as lsquic
/// (`src/liblsquic/lsquic_cubic.c`, `cubic_update`: `cu_tcp_cwnd +=
/// n_bytes × TCP_MSS × ONE_MINUS_BETA / 1024 / cu_tcp_cwnd`, i.e. 819/1024 =
/// 0.8 segment per window acknowledged, with its β of 0.8 where the formula
/// gives 0.33).
pub const ALPHA: Param = Param::new(
    "alpha",
    Kind::Number { above: 0.0 },
    ParamValue::Unset { example: "0.8" },
    "RFC 9438 §4.3 `3(1−β)/(1+β)` (Linux `tcp_friendliness`); lsquic `cubic_update`: 0.8 (`ONE_MINUS_BETA`)",
    "Reno-friendly increase α_cubic, segments per RTT; unset: 3(1−β)/(1+β) from `beta`",
)
.linux_name("α_cubic");

/// Growth during loss recovery. Off (RFC 9438 §4.6, RFC 9002 §7.3.2 and
/// App. B.5, Linux `tcp_in_cwnd_reduction`): cwnd stays at `ssthresh` until
/// `RecoveryEnd`. On, as lsquic: `lsquic_send_ctl.c` calls `cci_ack` for
/// every newly acknowledged packet with no recovery test, and
/// `lsquic_cubic_ack` grows cwnd on each one (a loss only restarts the epoch,
/// `lsquic_cubic_loss`), so congestion avoidance resumes at the cut.
pub const GROW_IN_RECOVERY: Param = Param::new(
    "grow_in_recovery",
    Kind::Flag,
    ParamValue::Flag(false),
    "RFC 9438 §4.6, RFC 9002 §7.3.2; lsquic `lsquic_cubic_ack` (no recovery state): true",
    "grow cwnd on ACKs during loss recovery, as lsquic (the transport's PRR still governs TCP's recovery)",
)
.linux_name("InCongestionRecovery (RFC 9002 B.5)");

/// The parameters a scenario can set (`cc = { kind = "cubic", ... }`).
pub const PARAMS: &[Param] = &[
    BETA,
    C,
    FAST_CONVERGENCE,
    TCP_FRIENDLINESS,
    HYSTART,
    HYSTART_KIND,
    ALPHA,
    GROW_IN_RECOVERY,
];

crate::registry::cc_config! {
    CubicConfig => Cubic {
        BETA => beta,
        C => c,
        FAST_CONVERGENCE => fast_convergence,
        TCP_FRIENDLINESS => reno_friendly,
        HYSTART => hystart,
        HYSTART_KIND => hystart_kind,
        ALPHA => alpha,
        GROW_IN_RECOVERY => grow_in_recovery,
    }
}

/// Parameters of [`Cubic`]. The ones in [`PARAMS`] take their default and
/// range from there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// Sender maximum segment size (SMSS), in bytes: 1500 B MTU − 20 B IPv4 −
    /// 20 B TCP − 12 B timestamps (Linux with timestamps).
    pub mss: u64,
    /// Initial window in segments. RFC 6928 §2: 10 (Linux `TCP_INIT_CWND`).
    pub initial_window_segments: u64,
    /// [`C`], segments/s³.
    pub c: f64,
    /// [`BETA`].
    pub beta: f64,
    /// [`FAST_CONVERGENCE`].
    pub fast_convergence: bool,
    /// [`TCP_FRIENDLINESS`].
    pub reno_friendly: bool,
    /// [`HYSTART`] (see the module documentation).
    pub hystart: bool,
    /// [`HYSTART_KIND`].
    pub hystart_kind: HyStartKind,
    /// [`ALPHA`]: `None` derives α from β (RFC 9438 §4.3, Linux).
    pub alpha: Option<f64>,
    /// [`GROW_IN_RECOVERY`].
    pub grow_in_recovery: bool,
    /// `L`: at most `L*SMSS` of one ACK counts towards slow-start (and CSS)
    /// growth, with `hystart_kind = "hystart++"`. RFC 9406 §4.3: 8 for a
    /// non-paced sender (the transport does not pace by default). Linux has
    /// no limit, nor has `hystart_kind = "linux"`.
    pub ack_limit_segments: u64,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            mss: 1448,                   // 1500 - 20 - 20 - 12
            initial_window_segments: 10, // RFC 6928 §2
            c: C.default.num(),
            beta: BETA.default.num(),
            fast_convergence: FAST_CONVERGENCE.default.flag(),
            reno_friendly: TCP_FRIENDLINESS.default.flag(),
            hystart: HYSTART.default.flag(),
            hystart_kind: crate::param::FromParam::from_param(HYSTART_KIND.default),
            alpha: None, // ALPHA's default: derived from β
            grow_in_recovery: GROW_IN_RECOVERY.default.flag(),
            ack_limit_segments: hystart::NON_PACED_L, // RFC 9406 §4.3
        }
    }
}

/// Why a [`CubicConfig`] is unusable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CubicConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
    /// A parameter of [`PARAMS`] is out of its declared range.
    #[error(transparent)]
    Param(ParamError),
    /// `ack_limit_segments` is zero.
    #[error("ack_limit_segments: must be at least 1 segment")]
    ZeroAckLimit,
}

impl CubicConfig {
    pub fn validate(&self) -> Result<(), CubicConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
        C.check(ParamValue::Num(self.c))
            .and(BETA.check(ParamValue::Num(self.beta)))
            .and(
                self.alpha
                    .map_or(Ok(()), |a| ALPHA.check(ParamValue::Num(a))),
            )
            .map_err(CubicConfigError::Param)?;
        if self.ack_limit_segments == 0 {
            return Err(CubicConfigError::ZeroAckLimit);
        }
        Ok(())
    }

    /// RFC 9438 §4.3: `α_cubic = 3(1 − β)/(1 + β)` (0.529 for β = 0.7), or
    /// the [`ALPHA`] option when set (lsquic: 0.8 whatever β is).
    pub fn alpha_cubic(&self) -> f64 {
        self.alpha
            .unwrap_or(3.0 * (1.0 - self.beta) / (1.0 + self.beta))
    }

    /// RFC 9438 §4.2 Figure 2: `K = cbrt((W_max − cwnd_epoch)/C)`, seconds,
    /// windows in segments.
    pub fn k(&self, w_max: f64, cwnd_epoch: f64) -> f64 {
        libm::cbrt((w_max - cwnd_epoch) / self.c)
    }
}

/// One congestion-avoidance stage ("epoch") of RFC 9438 §4.2; windows in
/// segments, times in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    /// `epoch_start`, moved forward over app-limited and idle time (§5.8).
    start: Time,
    /// `K`.
    k: f64,
    /// The plateau of this epoch's curve, `W_max` (RFC 9438 §4.2 Figure 1).
    w_max: f64,
    /// `W_est`, the Reno-friendly estimate (§4.3).
    w_est: f64,
}

/// Where CUBIC is. The epoch exists only in congestion avoidance and the CSS
/// bookkeeping only in CSS, so they live in those variants.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// `cwnd < ssthresh` (RFC 5681 §3.1), HyStart++ watching the RTT if active.
    SlowStart,
    /// RFC 9406 §4.2 Conservative Slow Start: `baseline` is
    /// `cssBaselineMinRtt`, `rounds` the CSS rounds started so far.
    ConservativeSlowStart { baseline: Dur, rounds: u32 },
    /// `cwnd >= ssthresh`; `epoch` starts on the first ACK (RFC 9438 §4.2).
    CongestionAvoidance { epoch: Option<Epoch> },
    /// Between the first loss of an episode and `RecoveryEnd`: cwnd frozen
    /// at `ssthresh` (RFC 9438 §4.6 "reduce immediately"; RFC 6675 §5).
    Recovery,
}

impl Machine for State {
    const NAME: &'static str = "CUBIC";

    /// Stable names used in traces, series and [`CcMetrics::state`].
    fn name(self) -> &'static str {
        match self {
            State::SlowStart => "SlowStart",
            State::ConservativeSlowStart { .. } => "ConservativeSlowStart",
            State::CongestionAvoidance { .. } => "CongestionAvoidance",
            State::Recovery => "Recovery",
        }
    }

    /// Is `self -> to` an edge of the state machine? Everything may reach
    /// slow start (RTO) and recovery (loss); only slow start enters CSS
    /// (RFC 9406 §4.2) and only in the initial slow start.
    fn may_enter(self, to: State) -> bool {
        match to {
            State::ConservativeSlowStart { .. } => {
                matches!(self, State::SlowStart | State::ConservativeSlowStart { .. })
            }
            State::SlowStart | State::CongestionAvoidance { .. } | State::Recovery => true,
        }
    }
}

/// Public counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CubicStats {
    /// Window reductions caused by loss (one per episode).
    pub loss_reductions: u64,
    /// Window reductions caused by ECN-Echo.
    pub ecn_reductions: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Reductions where fast convergence lowered `W_max` (RFC 9438 §4.7).
    pub fast_convergence: u64,
    /// Congestion-avoidance ACKs that set cwnd from `W_est` (§4.3).
    pub reno_friendly_acks: u64,
    /// Congestion-avoidance ACKs that followed the cubic curve (§4.4, §4.5).
    pub cubic_acks: u64,
    /// HyStart++ entries into CSS (RFC 9406 §4.2).
    pub css_entries: u64,
    /// CSS exits back to slow start: the RTT rise was spurious.
    pub css_spurious_exits: u64,
    /// Slow start left for congestion avoidance before any loss: by
    /// HyStart++ after CSS_ROUNDS, or by Linux HyStart (one of the two below).
    pub hystart_exits: u64,
    /// Linux HyStart exits by the ACK-train test (`TCPHystartTrainDetect`).
    pub hystart_train_exits: u64,
    /// Linux HyStart exits by the delay test (`TCPHystartDelayDetect`).
    pub hystart_delay_exits: u64,
}

/// CUBIC (see the module documentation).
#[derive(Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    cwnd: u64,
    /// Fractional bytes of cwnd in `[0, 1)`, so sub-byte increments add up.
    cwnd_frac: f64,
    /// `u64::MAX` until set (RFC 5681 §3.1: "arbitrarily high").
    ssthresh: u64,
    state: Checked<State>,
    /// `W_max`, segments: cwnd just before the last reduction (§4.6, after
    /// §4.7 fast convergence). `None` until the first congestion event and
    /// after an RTO (§4.8): the next epoch then uses `K = 0`, `W_max = cwnd`.
    w_max: Option<f64>,
    /// `cwnd_prior`, segments (§4.6): cwnd at the last reduction (or at the
    /// HyStart++ exit, §4.10). Switches α to 1 in the Reno-friendly region.
    cwnd_prior: f64,
    /// HyStart++ bookkeeping while the initial slow start lasts.
    hystart: Option<HyStartPp>,
    /// Linux HyStart while slow start lasts (`hystart_kind = "linux"`):
    /// until it fires or a loss; again after an RTO (`cubictcp_state`).
    hystart_linux: Option<HyStart>,
    /// Up to when the epoch clock has been accounted for (last ACK or
    /// restart after idle); the gap to the next app-limited ACK or idle
    /// restart is excluded from `t` (RFC 9438 §5.8).
    accounted_until: Time,
    /// An RTO happened and no new data has been acknowledged since (see Reno).
    rto_backoff: bool,
    /// Window and threshold before the last loss reduction, for `Undo`
    /// (Linux `tcp_reno_undo_cwnd`, which CUBIC uses).
    undo: Option<UndoPoint>,
    stats: CubicStats,
}

impl Cubic {
    /// # Panics
    /// If `cfg` is invalid (see [`CubicConfig::validate`]); scenario input is
    /// validated before it gets here, so this is a bug, not bad input.
    pub fn new(cfg: CubicConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("invalid CubicConfig: {e}"))
    }

    pub fn try_new(cfg: CubicConfig) -> Result<Self, CubicConfigError> {
        cfg.validate()?;
        Ok(Cubic {
            // RFC 6928 §2 / Linux TCP_INIT_CWND, taken literally.
            cwnd: cfg.mss.saturating_mul(cfg.initial_window_segments),
            cwnd_frac: 0.0,
            ssthresh: u64::MAX,
            state: Checked::new(State::SlowStart),
            w_max: None,
            cwnd_prior: 0.0,
            // RFC 9406 §4.2: HyStart++ for the initial slow start.
            hystart: (cfg.hystart && cfg.hystart_kind == HyStartKind::HyStartPp)
                .then(HyStartPp::new),
            // Linux cubictcp_init: bictcp_hystart_reset.
            hystart_linux: (cfg.hystart && cfg.hystart_kind == HyStartKind::Linux)
                .then(|| HyStart::new(Time::ZERO)),
            accounted_until: Time::ZERO,
            rto_backoff: false,
            undo: None,
            stats: CubicStats::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &CubicConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &CubicStats {
        &self.stats
    }

    /// `W_max` in segments as remembered from the last congestion event
    /// (after fast convergence), or set at the start of an epoch that had none.
    pub fn w_max_segments(&self) -> Option<f64> {
        self.w_max
    }

    /// `cwnd_prior` in segments (RFC 9438 §4.6).
    pub fn cwnd_prior_segments(&self) -> f64 {
        self.cwnd_prior
    }

    /// `K` of the running epoch, seconds.
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch().map(|e| e.k)
    }

    /// `epoch_start` of the running epoch (after §5.8 shifts).
    pub fn epoch_start(&self) -> Option<Time> {
        self.epoch().map(|e| e.start)
    }

    /// The plateau of the running epoch's curve (its `W_max`), segments:
    /// the remembered `W_max`, or `cwnd_epoch` when that is higher (K = 0).
    pub fn epoch_w_max_segments(&self) -> Option<f64> {
        self.epoch().map(|e| e.w_max)
    }

    /// `W_est` of the running epoch, segments.
    pub fn w_est_segments(&self) -> Option<f64> {
        self.epoch().map(|e| e.w_est)
    }

    /// Whether HyStart (either kind) still watches the ACKs.
    pub fn hystart_active(&self) -> bool {
        self.hystart.is_some() || self.hystart_linux.is_some()
    }

    fn epoch(&self) -> Option<Epoch> {
        match self.state.get() {
            State::CongestionAvoidance { epoch } => epoch,
            _ => None,
        }
    }

    fn mss_f(&self) -> f64 {
        self.cfg.mss as f64
    }

    /// cwnd in segments, with its fractional bytes.
    fn cwnd_segments(&self) -> f64 {
        (self.cwnd as f64 + self.cwnd_frac) / self.mss_f()
    }

    /// Raise cwnd to `segments` (never lowers it; the caller guarantees growth).
    fn grow_to_segments(&mut self, segments: f64) {
        let bytes = (segments * self.mss_f()).min(1e18);
        let have = self.cwnd as f64 + self.cwnd_frac;
        if bytes > have {
            let whole = libm::floor(bytes);
            self.cwnd = whole as u64;
            self.cwnd_frac = bytes - whole;
        }
    }

    /// Add `bytes` (possibly fractional) to cwnd.
    fn grow_bytes(&mut self, bytes: f64) {
        let segs = self.cwnd_segments() + bytes / self.mss_f();
        self.grow_to_segments(segs);
    }

    fn set_cwnd(&mut self, bytes: u64) {
        self.cwnd = bytes;
        self.cwnd_frac = 0.0;
    }

    /// Linux `cubictcp_recalc_ssthresh`: `ssthresh = max(cwnd·β, 2)` segments
    /// (RFC 9438 §4.6 Figure 5 with cwnd for flight_size, which the RFC
    /// allows; see `docs/models/cubic.md` "Reduction base").
    fn beta_ssthresh(&self) -> u64 {
        // Linux counts cwnd in whole segments and truncates:
        // (snd_cwnd * beta) / BICTCP_BETA_SCALE (the epsilon keeps 10 * 0.7 at 7).
        let pkts = self.cwnd_packets() as f64;
        let s = libm::floor(pkts * self.cfg.beta + 1e-9).min(1e15) as u64;
        s.max(2) * self.cfg.mss
    }

    /// cwnd in whole segments, as Linux keeps it (`tcp_snd_cwnd`) and as the
    /// transport's send loop counts it.
    fn cwnd_packets(&self) -> u64 {
        self.cwnd / self.cfg.mss
    }

    /// The one place the state changes: checks the edge and that the windows
    /// agree with the new state; a real change emits a trace event.
    fn transition_to(&mut self, now: Time, next: State, ctx: &mut CcCtx<'_>) {
        match next {
            State::SlowStart => cong::assert_slow_start(self.cwnd, self.ssthresh),
            State::ConservativeSlowStart { .. } => assert!(
                self.ssthresh == u64::MAX && self.hystart.is_some(),
                "CSS only in the initial slow start (ssthresh {})",
                self.ssthresh
            ),
            State::CongestionAvoidance { .. } => {
                cong::assert_congestion_avoidance(self.cwnd, self.ssthresh)
            }
            State::Recovery => cong::assert_recovery(self.cwnd, self.ssthresh),
        }
        cong::enter(&mut self.state, now, next, ctx.flow, ctx.tracer);
    }

    /// The multiplicative decrease shared by loss and ECN-Echo (RFC 9438
    /// §4.6 with §4.7 fast convergence). Ends HyStart++ for good (RFC 9406
    /// §4.2: on loss or ECN "exit slow start and enter congestion avoidance").
    fn reduce(&mut self) {
        // Whole segments, as Linux's last_max_cwnd and ssthresh.
        let cwnd = self.cwnd_packets() as f64;
        // RFC 9438 §4.7: "if cwnd < W_max and fast convergence enabled:
        // W_max = cwnd * (1 + β)/2, else W_max = cwnd" (before the reduction;
        // Linux truncates: (snd_cwnd * (1024 + beta)) / (2 * 1024)).
        self.w_max = Some(match self.w_max {
            Some(w) if self.cfg.fast_convergence && cwnd < w => {
                self.stats.fast_convergence += 1;
                libm::floor(cwnd * (1.0 + self.cfg.beta) / 2.0 + 1e-9)
            }
            _ => cwnd,
        });
        // RFC 9438 §4.6: cwnd_prior = cwnd.
        self.cwnd_prior = cwnd;
        // RFC 9438 §4.6: ssthresh = max(cwnd * β, 2) (Linux); cwnd = ssthresh.
        self.ssthresh = self.beta_ssthresh();
        self.set_cwnd(self.ssthresh);
        self.hystart = None;
        self.hystart_linux = None;
    }

    /// Slow start: `cwnd += min(acked, L*SMSS)` (RFC 9406 §4.2), capped at
    /// `ssthresh` (Linux `tcp_slow_start`, [`cong::slow_start`]). Returns the
    /// acked bytes left over for congestion avoidance.
    fn slow_start(&mut self, acked: u64) -> u64 {
        let limit = match self.cfg.hystart_kind {
            HyStartKind::HyStartPp => self.cfg.ack_limit_segments.saturating_mul(self.cfg.mss),
            // Linux tcp_slow_start: no per-ACK limit.
            HyStartKind::Linux => u64::MAX,
        };
        let left;
        (self.cwnd, left) = cong::slow_start(self.cwnd, self.ssthresh, acked, limit);
        left
    }

    /// Congestion avoidance for one ACK of `acked` bytes (RFC 9438 §4.2–§4.5).
    fn congestion_avoidance(&mut self, now: Time, acked: u64, ack: &AckEvent) {
        let cwnd = self.cwnd_segments();
        let State::CongestionAvoidance { epoch } = self.state.get() else {
            unreachable!("congestion_avoidance outside CongestionAvoidance");
        };
        let mut e = epoch.unwrap_or_else(|| {
            // A new epoch (RFC 9438 §4.2): epoch_start = now, cwnd_epoch = cwnd.
            // No W_max (first CA after a loss-free HyStart++ exit or after an
            // RTO, §4.8/§4.10) or W_max below cwnd (Linux bictcp_update):
            // K = 0 and W_max = cwnd_epoch.
            let (k, w_max) = match self.w_max {
                Some(w) if w > cwnd => (self.cfg.k(w, cwnd), w),
                _ => (0.0, cwnd),
            };
            Epoch {
                start: now,
                k,
                w_max,
                // RFC 9438 §4.3: "W_est is set equal to cwnd_epoch".
                w_est: cwnd,
            }
        });
        if self.w_max.is_none() {
            // §4.8/§4.10: W_max "is set to the congestion window size at the
            // beginning of the current congestion avoidance stage".
            self.w_max = Some(e.w_max);
        }
        let c = self.cfg.c;
        let t = now.saturating_since(e.start).as_secs_f64();
        // Linux bictcp_update: t += delay_min (RFC 9438 §4.2: + RTT).
        let rtt = if !ack.min_rtt.is_zero() {
            ack.min_rtt
        } else {
            ack.srtt
        }
        .as_secs_f64();
        let (k, w_max) = (e.k, e.w_max);
        // RFC 9438 §4.2 Figure 1: W_cubic(t) = C (t - K)^3 + W_max.
        let w_cubic = |t: f64| {
            let d = t - k;
            c * d * d * d + w_max
        };
        // RFC 9438 §4.2: target = W_cubic(t + RTT) bounded to [cwnd, 1.5 cwnd].
        let target = w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        let segments_acked = acked as f64 / self.cfg.mss as f64;
        // RFC 9438 §4.3: α_cubic = 3(1-β)/(1+β). Linux keeps it (tcp_friendliness:
        // tcp_cwnd += 1 per (cwnd * beta_scale) >> 3 acked segments, beta_scale
        // = 8(1024+beta)/3/(1024-beta)); the RFC's switch to 1 once W_est >=
        // cwnd_prior is not applied (docs/models/cubic.md). With the `alpha`
        // option, that constant instead (lsquic_cubic.c cubic_update: 0.8).
        let alpha = self.cfg.alpha_cubic();
        // RFC 9438 §4.3 Figure 4: W_est += α_cubic * segments_acked / cwnd.
        e.w_est += alpha * segments_acked / cwnd;
        let w_est = e.w_est;
        self.state
            .update(|s| *s = State::CongestionAvoidance { epoch: Some(e) });
        let next = if self.cfg.reno_friendly && w_cubic(t) < w_est {
            // RFC 9438 §4.3: "if W_cubic(t) < W_est ... cwnd SHOULD be set to
            // W_est at each reception of a new ACK" (never lowering it).
            self.stats.reno_friendly_acks += 1;
            w_est.max(cwnd)
        } else {
            // RFC 9438 §4.4 (concave) and §4.5 (convex): cwnd += (target -
            // cwnd)/cwnd per ACK; here per acked segment (byte counting).
            self.stats.cubic_acks += 1;
            cwnd + (target - cwnd) / cwnd * segments_acked
        };
        self.grow_to_segments(next);
    }

    /// Leave slow start for congestion avoidance without a loss (RFC 9406
    /// §4.2 "enter congestion avoidance by setting the ssthresh to the current
    /// cwnd"; RFC 9438 §4.10: `cwnd_prior = cwnd`, `K = 0`, `W_max = cwnd`;
    /// Linux `hystart_update`: `snd_ssthresh = snd_cwnd`, and the epoch that
    /// follows has `bic_K = 0`, origin `cwnd`).
    fn hystart_exit(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        self.ssthresh = self.cwnd;
        self.cwnd_frac = 0.0;
        let cwnd = self.cwnd_segments();
        self.cwnd_prior = cwnd;
        self.w_max = Some(cwnd);
        self.hystart = None;
        self.hystart_linux = None;
        self.stats.hystart_exits += 1;
        self.transition_to(now, State::CongestionAvoidance { epoch: None }, ctx);
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn states(&self) -> &'static [&'static str] {
        const STATES: [&str; 4] = [
            "SlowStart",
            "ConservativeSlowStart",
            "CongestionAvoidance",
            "Recovery",
        ];
        &STATES
    }

    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, _ctx: &mut CcCtx<'_>) {
        if let Some(h) = &mut self.hystart {
            h.on_packet_sent(in_flight);
        }
        if let Some(h) = &mut self.hystart_linux {
            h.on_packet_sent(in_flight);
        }
        // Linux bictcp_cwnd_event(CA_EVENT_TX_START): the first send with
        // nothing in flight ends an idle period, which must not count in the
        // epoch's t (RFC 9438 §5.8): epoch_start += idle, at most up to now.
        if in_flight <= bytes {
            let idle = now.saturating_since(self.accounted_until);
            self.state.update(|s| {
                if let State::CongestionAvoidance { epoch: Some(e) } = s {
                    e.start = (e.start + idle).min(now);
                }
            });
            self.accounted_until = self.accounted_until.max(now);
        }
    }

    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        if ack.acked_bytes > 0 {
            // New data acknowledged: a later RTO is a fresh one.
            self.rto_backoff = false;
        }
        // RFC 9406 §4.2 round and RTT bookkeeping (also for ACKs that do not grow cwnd).
        let new_round = match &mut self.hystart {
            Some(h) => h.on_ack(ack.delivered, ack.in_flight, ack.rtt_sample),
            None => false,
        };
        // RFC 9438 §5.8: time spent application-limited does not count in t.
        if ack.app_limited {
            let gap = now.saturating_since(self.accounted_until);
            self.state.update(|s| {
                if let State::CongestionAvoidance { epoch: Some(e) } = s {
                    e.start = (e.start + gap).min(now);
                }
            });
        }
        self.accounted_until = self.accounted_until.max(now);
        // Linux cubictcp_acked runs before cong_avoid, for every ACK in slow
        // start (cwnd-limited or not): a detection sets ssthresh = cwnd, and
        // this ACK's growth is already congestion avoidance's.
        if self.state.get() == State::SlowStart {
            let cwnd_packets = self.cwnd_packets();
            if let Some(h) = &mut self.hystart_linux {
                let found = h.on_ack(
                    now,
                    ack.delivered,
                    ack.in_flight,
                    ack.rtt_sample,
                    self.cwnd,
                    cwnd_packets,
                    ack.srtt,
                );
                if let Some(found) = found {
                    match found {
                        hystart_linux::Found::AckTrain => self.stats.hystart_train_exits += 1,
                        hystart_linux::Found::Delay => self.stats.hystart_delay_exits += 1,
                    }
                    self.hystart_exit(now, ctx);
                }
            }
        }

        // RFC 9438 §4.6 / RFC 6675 §5: no growth in fast recovery (Linux
        // tcp_in_cwnd_reduction() skips cong_avoid in CWR/Recovery).
        if self.state.get() == State::Recovery {
            return;
        }
        // RFC 9438 §5.8: "CUBIC does not increase cwnd when a flow is
        // application limited" (Linux tcp_is_cwnd_limited()).
        if !ack.cwnd_limited || ack.acked_bytes == 0 {
            return;
        }
        let mut acked = ack.acked_bytes;
        match self.state.get() {
            State::SlowStart => {
                acked = self.slow_start(acked);
                if let Some(baseline) = self.hystart.as_ref().and_then(|h| h.delay_increase()) {
                    // RFC 9406 §4.2: "if currentRoundMinRTT >= lastRoundMinRTT +
                    // RttThresh: cssBaselineMinRtt = currentRoundMinRTT; exit
                    // slow start and enter CSS".
                    self.stats.css_entries += 1;
                    let css = State::ConservativeSlowStart {
                        baseline,
                        rounds: 0,
                    };
                    self.transition_to(now, css, ctx);
                    return;
                }
                if self.cwnd < self.ssthresh {
                    return;
                }
                self.transition_to(now, State::CongestionAvoidance { epoch: None }, ctx);
            }
            State::ConservativeSlowStart { baseline, rounds } => {
                let rounds = rounds + u32::from(new_round);
                // RFC 9406 §4.2 CSS: cwnd += min(N, L*SMSS) / CSS_GROWTH_DIVISOR.
                let limit = self.cfg.ack_limit_segments.saturating_mul(self.cfg.mss);
                self.grow_bytes(acked.min(limit) as f64 / hystart::CSS_GROWTH_DIVISOR as f64);
                let spurious = self
                    .hystart
                    .as_ref()
                    .is_some_and(|h| h.rtt_fell_below(baseline));
                if spurious {
                    // RFC 9406 §4.2: "If currentRoundMinRTT < cssBaselineMinRtt:
                    // cssBaselineMinRtt = infinity; resume slow start".
                    self.stats.css_spurious_exits += 1;
                    self.transition_to(now, State::SlowStart, ctx);
                } else if rounds >= hystart::CSS_ROUNDS {
                    // RFC 9406 §4.2: "If CSS_ROUNDS rounds are complete, enter
                    // congestion avoidance by setting the ssthresh to the current cwnd".
                    self.hystart_exit(now, ctx);
                } else {
                    self.state
                        .update(|s| *s = State::ConservativeSlowStart { baseline, rounds });
                }
                return;
            }
            State::CongestionAvoidance { .. } => {}
            State::Recovery => unreachable!("handled above"),
        }
        if acked > 0 {
            self.congestion_avoidance(now, acked, ack);
        }
    }

    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>) {
        match *ev {
            // RFC 6582 §3.2: only the first loss of a window of data reduces.
            CongestionEvent::Loss {
                first_in_episode: false,
                ..
            } => {}
            CongestionEvent::Loss {
                first_in_episode: true,
                ..
            } => {
                self.undo = Some(UndoPoint::save(self.cwnd, self.ssthresh));
                self.reduce();
                self.stats.loss_reductions += 1;
                let next = if self.cfg.grow_in_recovery {
                    // lsquic_cubic_loss: the epoch restarts and the next
                    // ACK grows cwnd again (lsquic_cubic_ack has no recovery).
                    State::CongestionAvoidance { epoch: None }
                } else {
                    State::Recovery
                };
                self.transition_to(now, next, ctx);
            }
            CongestionEvent::Rto { .. } => {
                self.stats.rtos += 1;
                // RFC 9438 §4.8: "sets ssthresh using β_cubic (same as in
                // Section 4.6)" — kept for a backed-off repeat (RFC 5681 §3.1
                // note) and inside fast recovery (Linux tcp_enter_loss), as Reno.
                if !self.rto_backoff && self.state.get() != State::Recovery {
                    self.undo = Some(UndoPoint::save(self.cwnd, self.ssthresh));
                    self.cwnd_prior = self.cwnd_packets() as f64;
                    self.ssthresh = self.beta_ssthresh();
                }
                self.rto_backoff = true;
                // RFC 9438 §4.8: the next epoch uses K = 0 and W_max = cwnd at
                // its start (Linux bictcp_state(TCP_CA_Loss) -> bictcp_reset).
                self.w_max = None;
                // RFC 9406 §4.2: HyStart++ only for the initial slow start;
                // Linux HyStart starts afresh (cubictcp_state(TCP_CA_Loss):
                // bictcp_reset, bictcp_hystart_reset).
                self.hystart = None;
                self.hystart_linux = (self.cfg.hystart
                    && self.cfg.hystart_kind == HyStartKind::Linux)
                    .then(|| HyStart::new(now));
                // RFC 5681 §3.1: loss window = 1 SMSS.
                self.set_cwnd(self.cfg.mss);
                self.transition_to(now, State::SlowStart, ctx);
            }
            CongestionEvent::EcnEcho { .. } => {
                // RFC 3168 §6.1.2 / RFC 9438 §4.6: ECE reduces like a loss, at
                // most once per episode (ignored during loss recovery).
                if self.state.get() == State::Recovery {
                    return;
                }
                self.reduce();
                self.stats.ecn_reductions += 1;
                self.transition_to(now, State::CongestionAvoidance { epoch: None }, ctx);
            }
            CongestionEvent::Undo => {
                // Linux tcp_undo_cwnd_reduction with tcp_reno_undo_cwnd; W_max
                // stays as the reduction set it, the next epoch starts afresh.
                if let Some(u) = self.undo.take() {
                    let (cwnd, ssthresh) = u.restore(self.cwnd, self.ssthresh);
                    self.set_cwnd(cwnd);
                    self.ssthresh = ssthresh;
                }
                self.rto_backoff = false;
                let next = if self.cwnd < self.ssthresh {
                    State::SlowStart
                } else {
                    State::CongestionAvoidance { epoch: None }
                };
                self.transition_to(now, next, ctx);
            }
            CongestionEvent::RecoveryEnd => {
                if self.state.get() == State::Recovery {
                    // RFC 6582 §3.2 step 3 (second option): cwnd = ssthresh;
                    // the epoch starts with the next ACK (RFC 9438 §4.2).
                    self.set_cwnd(self.ssthresh);
                    self.transition_to(now, State::CongestionAvoidance { epoch: None }, ctx);
                }
            }
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then_some(self.ssthresh)
    }

    fn metrics(&self) -> CcMetrics {
        let e = self.epoch();
        CcMetrics {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh(),
            pacing_rate: None,
            state: self.state.get().name(),
            extra: vec![
                ("w_max_segments", self.w_max.unwrap_or(0.0)),
                ("k_s", e.map_or(0.0, |e| e.k)),
                ("w_est_segments", e.map_or(0.0, |e| e.w_est)),
                ("cwnd_prior_segments", self.cwnd_prior),
            ],
        }
    }
}
