//! Scenario-facing options of each controller: the knobs a user of the Linux
//! module would reach for (`/sys/module/tcp_<name>/parameters/...`, the
//! scenario's `cc = { kind = "...", ... }`), and the one builder that turns a
//! controller name plus its options into a [`CongestionControl`].
//!
//! Every option is an override: `None` keeps the controller's default (its
//! `<Algo>Config::default()`, the Linux or RFC value documented there), so
//! the defaults live in one place and a resolved scenario records only what
//! it changed. The option names are the Linux module parameters without the
//! module prefix (`prague_rtt_scaling` → `rtt_scaling`, `dctcp_shift_g` →
//! `shift_g`), or the config field where Linux has no parameter (BBR's
//! constants, CUBIC's `c`). Values are in the units of the config structs
//! (fractions, gains as factors, [`Dur`]), not Linux's fixed-point integers.
//!
//! The values are assumed valid: the scenario crate checks ranges with key
//! paths; [`CcOptions::build`] panics on an invalid combination (a bug).

use serde::Serialize;

use l4slab_core::Dur;

use crate::bbr::{Bbr, Bbr3, Bbr3Config, BbrConfig};
use crate::cubic::{Cubic, CubicConfig};
use crate::dctcp::{Dctcp, DctcpConfig};
use crate::prague::{EcnFallback, Prague, PragueConfig, RttScaling};
use crate::reno::{Reno, RenoConfig};
use crate::CongestionControl;

/// BBR v1 gains are fixed point with 8 fractional bits (Linux `BBR_UNIT`).
const BBR_UNIT: f64 = 256.0;

/// `cc = "cubic"` options (Linux `tcp_cubic` module parameters).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CubicOptions {
    /// `β_cubic` in (0, 1): Linux `beta` (717/1024), RFC 9438 0.7.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// `C` in segments/s³: RFC 9438 0.4 (Linux `bic_scale = 41` ≈ 0.4004).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
    /// Linux `fast_convergence` (RFC 9438 §4.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_convergence: Option<bool>,
    /// Linux `tcp_friendliness`: the Reno-friendly region (RFC 9438 §4.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_friendliness: Option<bool>,
    /// Linux `hystart`: HyStart++ (RFC 9406) in the initial slow start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
}

impl CubicOptions {
    pub fn apply(&self, cfg: &mut CubicConfig) {
        set(&mut cfg.beta, self.beta);
        set(&mut cfg.c, self.c);
        set(&mut cfg.fast_convergence, self.fast_convergence);
        set(&mut cfg.reno_friendly, self.tcp_friendliness);
        set(&mut cfg.hystart, self.hystart);
    }
}

/// `cc = "dctcp"` options (Linux `tcp_dctcp` module parameters).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DctcpOptions {
    /// EWMA gain `g = 1/2^shift_g`, 1..=16: Linux `dctcp_shift_g` (4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shift_g: Option<u32>,
    /// Initial alpha in [0, 1]: Linux `dctcp_alpha_on_init` (1024/1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha_on_init: Option<f64>,
    /// Send ECT(1) instead of ECT(0) (L4STeam `dctcp_ect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ect1: Option<bool>,
}

impl DctcpOptions {
    pub fn apply(&self, cfg: &mut DctcpConfig) {
        set(&mut cfg.shift_g, self.shift_g);
        set(&mut cfg.alpha_on_init, self.alpha_on_init);
        set(&mut cfg.ect1, self.ect1);
    }
}

/// `cc = "prague"` options (Linux `tcp_prague` module parameters).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PragueOptions {
    /// RTT-independence heuristic: `prague_rtt_scaling` (`rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_scaling: Option<RttScaling>,
    /// Target RTT of the heuristic, zero disables it: `prague_rtt_target` (25 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_target: Option<Dur>,
    /// Rounds after slow start before RTT independence: `prague_rtt_transition` (500).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_transition: Option<u64>,
    /// Classic-ECN bottleneck detection: `prague_ecn_fallback` (off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_fallback: Option<EcnFallback>,
    /// Burst of `2^-burst_shift` s at the pacing rate, 0..=40: `prague_burst_shift` (12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_shift: Option<u32>,
    /// Cap on the burst in segments, 0 = none: `prague_max_tso_segs` (0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tso_segs: Option<u64>,
}

impl PragueOptions {
    pub fn apply(&self, cfg: &mut PragueConfig) {
        set(&mut cfg.rtt_scaling, self.rtt_scaling);
        set(&mut cfg.rtt_target, self.rtt_target);
        set(&mut cfg.rtt_transition_rounds, self.rtt_transition);
        set(&mut cfg.ecn_fallback, self.ecn_fallback);
        set(&mut cfg.burst_shift, self.burst_shift);
        set(&mut cfg.max_tso_segs, self.max_tso_segs);
    }
}

/// `cc = "bbr"` options. Linux `tcp_bbr` has no module parameters (its knobs
/// are `static const`); these are the ones experiments change, named as the
/// constants without `bbr_` and the unit suffix.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BbrOptions {
    /// Startup pacing and cwnd gain: `bbr_high_gain` (2/ln 2 ≈ 2.885).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_gain: Option<f64>,
    /// ProbeBW cwnd gain: `bbr_cwnd_gain` (2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd_gain: Option<f64>,
    /// Aggregation allowance gain, 0 disables: `bbr_extra_acked_gain` (1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_acked_gain: Option<f64>,
    /// RTprop filter window: `bbr_min_rtt_win_sec` (10 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_win: Option<Dur>,
    /// Time at the ProbeRTT window: `bbr_probe_rtt_mode_ms` (200 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_rtt_mode: Option<Dur>,
}

impl BbrOptions {
    pub fn apply(&self, cfg: &mut BbrConfig) {
        let fixed = |g: f64| (g * BBR_UNIT).round() as u32;
        set(&mut cfg.high_gain, self.high_gain.map(fixed));
        set(&mut cfg.cwnd_gain, self.cwnd_gain.map(fixed));
        set(&mut cfg.extra_acked_gain, self.extra_acked_gain.map(fixed));
        set(&mut cfg.min_rtt_win, self.min_rtt_win);
        set(&mut cfg.probe_rtt_mode, self.probe_rtt_mode);
    }
}

/// `cc = "bbr3"` options (draft-ietf-ccwg-bbr constants that experiments
/// change; names as in [`Bbr3Config`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bbr3Options {
    /// `BBR.LossThresh` in [0, 1): 2 % per round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_thresh: Option<f64>,
    /// `BBR.Beta` in [0, 1): 0.7.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// `BBR.Headroom` in [0, 1): 0.15.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom: Option<f64>,
    /// `BBR.ProbeRTTInterval`: 5 s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_rtt_interval: Option<Dur>,
}

impl Bbr3Options {
    pub fn apply(&self, cfg: &mut Bbr3Config) {
        set(&mut cfg.loss_thresh, self.loss_thresh);
        set(&mut cfg.beta, self.beta);
        set(&mut cfg.headroom, self.headroom);
        set(&mut cfg.probe_rtt_interval, self.probe_rtt_interval);
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// A controller, by its Linux name, and the options set over its defaults.
/// Serializes as the options alone (the name is the variant; see
/// [`CcOptions::name`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CcOptions {
    /// `reno`: no options (Linux `tcp_reno` has none).
    Reno,
    Cubic(CubicOptions),
    Dctcp(DctcpOptions),
    Prague(PragueOptions),
    Bbr(BbrOptions),
    Bbr3(Bbr3Options),
}

impl CcOptions {
    /// The controller `name` (one of [`crate::CC_NAMES`]) with its defaults.
    pub fn defaults(name: &str) -> Option<Self> {
        Some(match name {
            "reno" => CcOptions::Reno,
            "cubic" => CcOptions::Cubic(CubicOptions::default()),
            "dctcp" => CcOptions::Dctcp(DctcpOptions::default()),
            "prague" => CcOptions::Prague(PragueOptions::default()),
            "bbr" => CcOptions::Bbr(BbrOptions::default()),
            "bbr3" => CcOptions::Bbr3(Bbr3Options::default()),
            _ => return None,
        })
    }

    /// The Linux name (`tcp_congestion_control`), as in [`crate::CC_NAMES`].
    pub fn name(&self) -> &'static str {
        match self {
            CcOptions::Reno => "reno",
            CcOptions::Cubic(_) => "cubic",
            CcOptions::Dctcp(_) => "dctcp",
            CcOptions::Prague(_) => "prague",
            CcOptions::Bbr(_) => "bbr",
            CcOptions::Bbr3(_) => "bbr3",
        }
    }

    /// No option set: the controller runs with its defaults.
    pub fn is_default(&self) -> bool {
        Self::defaults(self.name()).as_ref() == Some(self)
    }

    /// The controller with these options. `mss` (bytes) and `initial_window`
    /// (segments) come from the transport config.
    ///
    /// # Panics
    /// If `mss` or `initial_window` is zero, or an option is out of range
    /// (the scenario crate rejects those with a key path).
    pub fn build(&self, mss: u64, initial_window: u64) -> Box<dyn CongestionControl> {
        match self {
            CcOptions::Reno => Box::new(Reno::new(RenoConfig {
                mss,
                initial_window_segments: initial_window,
            })),
            CcOptions::Cubic(o) => {
                let mut cfg = CubicConfig {
                    mss,
                    initial_window_segments: initial_window,
                    ..CubicConfig::default()
                };
                o.apply(&mut cfg);
                Box::new(Cubic::new(cfg))
            }
            CcOptions::Dctcp(o) => {
                let mut cfg = DctcpConfig {
                    mss,
                    initial_window_segments: initial_window,
                    ..DctcpConfig::default()
                };
                o.apply(&mut cfg);
                Box::new(Dctcp::new(cfg))
            }
            CcOptions::Prague(o) => {
                let mut cfg = PragueConfig {
                    mss,
                    initial_window_segments: initial_window,
                    ..PragueConfig::default()
                };
                o.apply(&mut cfg);
                Box::new(Prague::new(cfg))
            }
            CcOptions::Bbr(o) => {
                let mut cfg = BbrConfig {
                    mss,
                    initial_window_segments: initial_window,
                    ..BbrConfig::default()
                };
                o.apply(&mut cfg);
                Box::new(Bbr::new(cfg))
            }
            CcOptions::Bbr3(o) => {
                let mut cfg = Bbr3Config {
                    mss,
                    initial_window_segments: initial_window,
                    ..Bbr3Config::default()
                };
                o.apply(&mut cfg);
                Box::new(Bbr3::new(cfg))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_exist_for_every_name_and_are_default() {
        for &name in crate::CC_NAMES {
            let o = CcOptions::defaults(name).expect(name);
            assert_eq!(o.name(), name);
            assert!(o.is_default(), "{name}");
            assert_eq!(o.build(1448, 10).name(), name);
        }
        assert!(CcOptions::defaults("vegas").is_none());
    }

    #[test]
    fn options_override_only_what_they_set() {
        let mut cfg = CubicConfig::default();
        CubicOptions {
            hystart: Some(false),
            beta: Some(0.5),
            ..CubicOptions::default()
        }
        .apply(&mut cfg);
        assert_eq!(
            cfg,
            CubicConfig {
                hystart: false,
                beta: 0.5,
                ..CubicConfig::default()
            }
        );
        let mut cfg = PragueConfig::default();
        PragueOptions {
            rtt_scaling: Some(RttScaling::None),
            rtt_transition: Some(4),
            ..PragueOptions::default()
        }
        .apply(&mut cfg);
        assert_eq!(cfg.rtt_scaling, RttScaling::None);
        assert_eq!(cfg.rtt_transition_rounds, 4);
        assert_eq!(cfg.rtt_target, Dur::from_millis(25));
        // BBR gains are factors here and 1/256 fixed point in the config.
        let mut cfg = BbrConfig::default();
        BbrOptions {
            cwnd_gain: Some(2.5),
            extra_acked_gain: Some(0.0),
            ..BbrOptions::default()
        }
        .apply(&mut cfg);
        assert_eq!((cfg.cwnd_gain, cfg.extra_acked_gain), (640, 0));
        assert_eq!(cfg.high_gain, BbrConfig::default().high_gain);
        let o = CcOptions::Dctcp(DctcpOptions {
            ect1: Some(true),
            ..DctcpOptions::default()
        });
        assert!(!o.is_default());
        assert_eq!(o.build(1448, 10).ecn_codepoint(), crate::EcnCodepoint::Ect1);
    }

    #[test]
    fn serializes_only_what_was_set() {
        let o = CcOptions::Prague(PragueOptions {
            rtt_target: Some(Dur::from_millis(10)),
            ecn_fallback: Some(EcnFallback::DetectOnly),
            ..PragueOptions::default()
        });
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"rtt_target":10000000,"ecn_fallback":"detect_only"}"#
        );
    }
}
