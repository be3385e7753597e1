//! Parameters of BBRv3 ([`Bbr3Config`]): the draft-ietf-ccwg-bbr-06 constants
//! as defaults, and their validation.

use serde::{Deserialize, Serialize};

use l4slab_core::Dur;

use crate::cong::{self, WindowConfigError};
use crate::param::{Kind, Param, ParamError, ParamValue};

/// A fraction in `[0, 1)`.
const BELOW_ONE: Kind = Kind::Fraction {
    min: 0.0,
    max: 1.0,
    min_open: false,
    max_open: true,
    linux_scale: None,
};

/// `BBR.LossThresh`.
pub const LOSS_THRESH: Param = Param {
    name: "loss_thresh",
    aliases: &[],
    linux: "BBR.LossThresh",
    kind: BELOW_ONE,
    default: ParamValue::Num(0.02),
    source: "draft-ietf-ccwg-bbr-06 §2.8 `BBR.LossThresh` = 2 %",
    doc: "loss rate per round above which inflight is bounded",
};

/// `BBR.Beta`.
pub const BETA: Param = Param {
    name: "beta",
    aliases: &[],
    linux: "BBR.Beta",
    kind: BELOW_ONE,
    default: ParamValue::Num(0.7),
    source: "draft-ietf-ccwg-bbr-06 §2.8 `BBR.Beta` = 0.7",
    doc: "multiplicative decrease per round with loss",
};

/// `BBR.Headroom`.
pub const HEADROOM: Param = Param {
    name: "headroom",
    aliases: &[],
    linux: "BBR.Headroom",
    kind: BELOW_ONE,
    default: ParamValue::Num(0.15),
    source: "draft-ietf-ccwg-bbr-06 §2.8 `BBR.Headroom` = 0.15",
    doc: "share of `inflight_longterm` left free in ProbeBW_CRUISE",
};

/// `BBR.ProbeRTTInterval`.
pub const PROBE_RTT_INTERVAL: Param = Param {
    name: "probe_rtt_interval",
    aliases: &[],
    linux: "BBR.ProbeRTTInterval",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Dur(Dur::from_secs(5)),
    source: "draft-ietf-ccwg-bbr-06 §5.3.4 `BBR.ProbeRTTInterval` = 5 s (see below)",
    doc: "time between ProbeRTTs",
};

/// The parameters a scenario can set (`cc = { kind = "bbr3", ... }`): the
/// draft's constants that experiments change.
pub const PARAMS: &[Param] = &[LOSS_THRESH, BETA, HEADROOM, PROBE_RTT_INTERVAL];

crate::registry::cc_config! {
    Bbr3Config => super::Bbr3 {
        LOSS_THRESH => loss_thresh,
        BETA => beta,
        HEADROOM => headroom,
        PROBE_RTT_INTERVAL => probe_rtt_interval,
    }
}

/// Parameters of [`Bbr3`](super::Bbr3); defaults are the draft-ietf-ccwg-bbr-06 constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr3Config {
    /// `C.SMSS` in bytes (TCP payload, §2.2): 1448.
    pub mss: u64,
    /// `C.InitialCwnd` in segments: 10 (RFC 6928).
    pub initial_window_segments: u64,
    /// §2.5 `BBR.StartupPacingGain` = 4 ln 2 ≈ 2.77; Linux
    /// `bbr_startup_pacing_gain = BBR_UNIT * 277 / 100 + 1` = 710/256.
    pub startup_pacing_gain: f64,
    /// Linux `bbr_drain_gain = BBR_UNIT * 1000 / 2885` = 88/256 ≈ 0.344
    /// (1 / 2.885, "to typically drain the queue created in BBR_STARTUP in a
    /// single round"); draft-ietf-ccwg-bbr-06 §2.5 says 0.5.
    pub drain_pacing_gain: f64,
    /// §2.6 `BBR.DefaultCwndGain` = 2.
    pub default_cwnd_gain: f64,
    /// ProbeBW_DOWN pacing gain: Linux `bbr_pacing_gain[BBR_BW_PROBE_DOWN] =
    /// BBR_UNIT * 91 / 100` = 232/256 ≈ 0.906 (draft §5.3.3.1: 0.90).
    pub probe_down_pacing_gain: f64,
    /// §5.3.3.5 ProbeBW_UP pacing gain = 1.25.
    pub probe_up_pacing_gain: f64,
    /// §5.3.3.5 ProbeBW_UP cwnd gain = 2.25.
    pub probe_up_cwnd_gain: f64,
    /// §2.16.2 `BBR.ProbeRTTCwndGain` = 0.5.
    pub probe_rtt_cwnd_gain: f64,
    /// §2.5 `BBR.PacingMarginPercent` = 1.
    pub pacing_margin_percent: f64,
    /// [`LOSS_THRESH`], per round.
    pub loss_thresh: f64,
    /// [`BETA`].
    pub beta: f64,
    /// [`HEADROOM`].
    pub headroom: f64,
    /// §2.8 `BBR.MinPipeCwnd` = 4 segments.
    pub min_pipe_cwnd_segments: u64,
    /// §5.3.1.2 full pipe: growth below this factor (1.25) ...
    pub full_bw_growth: f64,
    /// ... for this many rounds (3).
    pub full_bw_count: u32,
    /// §5.3.1.3 `BBRStartupFullLossCnt` = 6 lost ranges in a round.
    pub startup_full_loss_count: u32,
    /// Linux `bbr_extra_acked_win_rtts` = 5: `extra_acked` is the max over
    /// the last 5-10 rounds (draft §2.12 `BBR.ExtraAckedFilterLen` = 10).
    pub extra_acked_win_rtts: u32,
    /// Linux `bbr_extra_acked_max_us` = 100 ms: the aggregation allowance is
    /// at most this long at `bw`.
    pub extra_acked_max: Dur,
    /// §2.16.1 `BBR.MinRTTFilterLen` = 10 s.
    pub min_rtt_filter_len: Dur,
    /// [`PROBE_RTT_INTERVAL`] (-06; see the module docs).
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
            startup_pacing_gain: 710.0 / 256.0,
            drain_pacing_gain: 88.0 / 256.0,
            default_cwnd_gain: 2.0,
            probe_down_pacing_gain: 232.0 / 256.0,
            probe_up_pacing_gain: 1.25,
            probe_up_cwnd_gain: 2.25,
            probe_rtt_cwnd_gain: 0.5,
            pacing_margin_percent: 1.0,
            loss_thresh: LOSS_THRESH.default.num(),
            beta: BETA.default.num(),
            headroom: HEADROOM.default.num(),
            min_pipe_cwnd_segments: 4,
            full_bw_growth: 1.25,
            full_bw_count: 3,
            startup_full_loss_count: 6,
            extra_acked_win_rtts: 5,
            extra_acked_max: Dur::from_millis(100),
            min_rtt_filter_len: Dur::from_secs(10),
            probe_rtt_interval: PROBE_RTT_INTERVAL.default.dur(),
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
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Bbr3ConfigError {
    /// `mss` or `initial_window_segments` is zero.
    #[error(transparent)]
    Window(#[from] WindowConfigError),
    /// A gain or factor is not a positive finite number, or a fraction is not in `[0, 1)`.
    #[error("{0}: {1} is out of range")]
    BadFactor(&'static str, f64),
    /// A count or duration is zero.
    #[error("{0}: must be positive")]
    Zero(&'static str),
    /// A parameter of [`PARAMS`] is out of its declared range.
    #[error(transparent)]
    Param(ParamError),
}

impl Bbr3Config {
    pub fn validate(&self) -> Result<(), Bbr3ConfigError> {
        cong::check_window(self.mss, self.initial_window_segments)?;
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
        LOSS_THRESH
            .check(ParamValue::Num(self.loss_thresh))
            .and(BETA.check(ParamValue::Num(self.beta)))
            .and(HEADROOM.check(ParamValue::Num(self.headroom)))
            .and(PROBE_RTT_INTERVAL.check(ParamValue::Dur(self.probe_rtt_interval)))
            .map_err(Bbr3ConfigError::Param)?;
        for (k, v) in [("pacing_margin_percent", self.pacing_margin_percent / 100.0)] {
            if !(0.0..1.0).contains(&v) {
                return Err(Bbr3ConfigError::BadFactor(k, v));
            }
        }
        for (k, zero) in [
            ("min_pipe_cwnd_segments", self.min_pipe_cwnd_segments == 0),
            ("full_bw_count", self.full_bw_count == 0),
            ("extra_acked_win_rtts", self.extra_acked_win_rtts == 0),
            ("min_rtt_filter_len", self.min_rtt_filter_len.is_zero()),
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
