//! Parameters of BBRv3 ([`Bbr3Config`]): the draft-ietf-ccwg-bbr-06 constants
//! as defaults, and their validation.

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::Dur;

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
