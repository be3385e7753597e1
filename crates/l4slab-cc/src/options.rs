//! Scenario-facing options of each controller: the knobs a user of the Linux
//! module would reach for (`/sys/module/tcp_<name>/parameters/...`, the
//! scenario's `cc = { kind = "...", ... }`), and the one builder that turns a
//! controller name plus its options into a [`CongestionControl`].
//!
//! Each options struct has one field per parameter the controller declares
//! ([`crate::param::Param`], `<algo>::PARAMS`), named as the parameter, so
//! the name, kind, range, default and docs live in the declaration alone.
//! Every option is an override: `None` keeps the controller's default (its
//! `<Algo>Config::default()`, taken from the declaration), and a resolved
//! scenario records only what it changed. Values are in scenario units
//! (fractions, gains as factors, [`Dur`]), not Linux's fixed-point integers.
//!
//! The values are assumed valid: the scenario crate reads and checks them by
//! their declarations, with key paths; [`CcOptions::build`] panics on an
//! invalid value (a bug).

use serde::Serialize;

use l4slab_core::Dur;

use crate::bbr::{self, Bbr, Bbr3, Bbr3Config, BbrConfig};
use crate::cubic::{self, Cubic, CubicConfig};
use crate::dctcp::{self, Dctcp, DctcpConfig};
use crate::param::{Param, ParamValue};
use crate::prague::{self, EcnFallback, Prague, PragueConfig, RttScaling};
use crate::reno::{Reno, RenoConfig};
use crate::CongestionControl;

/// A config field's type from a [`ParamValue`] of its declared kind.
///
/// # Panics
/// On a value of another kind or out of the type's range: the caller (the
/// scenario resolver) reads values by their declaration, so that is a bug.
pub trait FromParam: Sized {
    fn from_param(v: ParamValue) -> Self;
}

impl FromParam for u32 {
    fn from_param(v: ParamValue) -> Self {
        u32::try_from(v.int()).expect("declared range fits u32")
    }
}

impl FromParam for u64 {
    fn from_param(v: ParamValue) -> Self {
        u64::try_from(v.int()).expect("declared range fits u64")
    }
}

impl FromParam for f64 {
    fn from_param(v: ParamValue) -> Self {
        v.num()
    }
}

impl FromParam for bool {
    fn from_param(v: ParamValue) -> Self {
        v.flag()
    }
}

impl FromParam for Dur {
    fn from_param(v: ParamValue) -> Self {
        v.dur()
    }
}

impl FromParam for RttScaling {
    fn from_param(v: ParamValue) -> Self {
        RttScaling::from_name(v.choice()).expect("declared choice")
    }
}

impl FromParam for EcnFallback {
    fn from_param(v: ParamValue) -> Self {
        EcnFallback::from_name(v.choice()).expect("declared choice")
    }
}

/// One options struct per controller: an `Option` per declared parameter
/// (named as its [`Param::name`], which `tests` checks), `apply` onto the
/// config field (through a conversion where the config keeps Linux's
/// units), and `set` by name for the scenario resolver.
macro_rules! cc_options {
    (
        $(#[$meta:meta])*
        pub struct $name:ident for $cfg:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident: $ty:ty = $param:path => $cfgfield:ident $(($conv:path))?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }

        impl $name {
            /// The declarations of the fields, in field order.
            pub const PARAMS: &'static [Param] = &[$($param),*];
            /// The field names, in field order (each its parameter's name).
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Write the options that are set over `cfg`.
            pub fn apply(&self, cfg: &mut $cfg) {
                $(
                    if let Some(v) = self.$field {
                        cfg.$cfgfield = $($conv)?(v);
                    }
                )*
            }

            /// Set the option named `name` (a [`Param::name`] of
            /// [`Self::PARAMS`]) to `v`; false if there is none.
            ///
            /// # Panics
            /// If `v` is not of the parameter's kind (see [`FromParam`]).
            pub fn set(&mut self, name: &str, v: ParamValue) -> bool {
                $(
                    if name == $param.name {
                        self.$field = Some(<$ty as FromParam>::from_param(v));
                        return true;
                    }
                )*
                false
            }
        }
    };
}

cc_options! {
    /// `cc = "cubic"` options ([`cubic::PARAMS`], Linux `tcp_cubic` module
    /// parameters).
    pub struct CubicOptions for CubicConfig {
        beta: f64 = cubic::BETA => beta,
        c: f64 = cubic::C => c,
        fast_convergence: bool = cubic::FAST_CONVERGENCE => fast_convergence,
        tcp_friendliness: bool = cubic::TCP_FRIENDLINESS => reno_friendly,
        hystart: bool = cubic::HYSTART => hystart,
    }
}

cc_options! {
    /// `cc = "dctcp"` options ([`dctcp::PARAMS`], Linux `tcp_dctcp` module
    /// parameters).
    pub struct DctcpOptions for DctcpConfig {
        shift_g: u32 = dctcp::SHIFT_G => shift_g,
        alpha_on_init: f64 = dctcp::ALPHA_ON_INIT => alpha_on_init,
        ect1: bool = dctcp::ECT1 => ect1,
    }
}

cc_options! {
    /// `cc = "prague"` options ([`prague::PARAMS`], Linux `tcp_prague` module
    /// parameters).
    pub struct PragueOptions for PragueConfig {
        rtt_scaling: RttScaling = prague::RTT_SCALING => rtt_scaling,
        rtt_target: Dur = prague::RTT_TARGET => rtt_target,
        rtt_transition: u64 = prague::RTT_TRANSITION => rtt_transition_rounds,
        ecn_fallback: EcnFallback = prague::ECN_FALLBACK => ecn_fallback,
        burst_shift: u32 = prague::BURST_SHIFT => burst_shift,
        max_tso_segs: u64 = prague::MAX_TSO_SEGS => max_tso_segs,
    }
}

cc_options! {
    /// `cc = "bbr"` options ([`bbr::v1::PARAMS`]): gains as factors here,
    /// 1/256 fixed point in [`BbrConfig`].
    pub struct BbrOptions for BbrConfig {
        high_gain: f64 = bbr::v1::HIGH_GAIN => high_gain (bbr::v1::gain_to_fixed),
        cwnd_gain: f64 = bbr::v1::CWND_GAIN => cwnd_gain (bbr::v1::gain_to_fixed),
        extra_acked_gain: f64 = bbr::v1::EXTRA_ACKED_GAIN => extra_acked_gain (bbr::v1::gain_to_fixed),
        min_rtt_win: Dur = bbr::v1::MIN_RTT_WIN => min_rtt_win,
        probe_rtt_mode: Dur = bbr::v1::PROBE_RTT_MODE => probe_rtt_mode,
    }
}

cc_options! {
    /// `cc = "bbr3"` options ([`bbr::v3::PARAMS`], draft-ietf-ccwg-bbr
    /// constants that experiments change).
    pub struct Bbr3Options for Bbr3Config {
        loss_thresh: f64 = bbr::v3::LOSS_THRESH => loss_thresh,
        beta: f64 = bbr::v3::BETA => beta,
        headroom: f64 = bbr::v3::HEADROOM => headroom,
        probe_rtt_interval: Dur = bbr::v3::PROBE_RTT_INTERVAL => probe_rtt_interval,
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

    /// The declarations of this controller's options ([`crate::param::params`]).
    pub fn params(&self) -> &'static [Param] {
        match self {
            CcOptions::Reno => &[],
            CcOptions::Cubic(_) => CubicOptions::PARAMS,
            CcOptions::Dctcp(_) => DctcpOptions::PARAMS,
            CcOptions::Prague(_) => PragueOptions::PARAMS,
            CcOptions::Bbr(_) => BbrOptions::PARAMS,
            CcOptions::Bbr3(_) => Bbr3Options::PARAMS,
        }
    }

    /// Set the option `name` to `v` (of the kind its [`Param`] declares);
    /// false if this controller has no such option.
    ///
    /// # Panics
    /// If `v` is not of the declared kind (a bug in the caller).
    pub fn set(&mut self, name: &str, v: ParamValue) -> bool {
        match self {
            CcOptions::Reno => false,
            CcOptions::Cubic(o) => o.set(name, v),
            CcOptions::Dctcp(o) => o.set(name, v),
            CcOptions::Prague(o) => o.set(name, v),
            CcOptions::Bbr(o) => o.set(name, v),
            CcOptions::Bbr3(o) => o.set(name, v),
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
    fn options_are_the_declared_parameters_by_name() {
        for &name in crate::CC_NAMES {
            let o = CcOptions::defaults(name).unwrap();
            let declared = crate::param::params(name).unwrap();
            assert_eq!(o.params(), declared, "{name}");
        }
        for (params, fields) in [
            (CubicOptions::PARAMS, CubicOptions::FIELDS),
            (DctcpOptions::PARAMS, DctcpOptions::FIELDS),
            (PragueOptions::PARAMS, PragueOptions::FIELDS),
            (BbrOptions::PARAMS, BbrOptions::FIELDS),
            (Bbr3Options::PARAMS, Bbr3Options::FIELDS),
        ] {
            let names: Vec<_> = params.iter().map(|p| p.name).collect();
            assert_eq!(&names, fields);
        }
    }

    #[test]
    fn every_default_set_as_an_option_leaves_the_config_unchanged() {
        // Each declaration's default is the config's default: setting every
        // option to it changes nothing that `build` sees.
        for &name in crate::CC_NAMES {
            let mut o = CcOptions::defaults(name).unwrap();
            for p in o.params() {
                assert!(o.set(p.name, p.default), "{name}.{}", p.name);
            }
            assert!(!o.set("no_such_option", ParamValue::Flag(true)));
            let json = serde_json::to_value(&o).unwrap();
            let set = json.as_object().map_or(0, |m| m.len());
            assert_eq!(set, o.params().len(), "{name}: {json}");
            let (built, default) = (o.build(1448, 10), build_default(name));
            assert_eq!(format!("{built:?}"), format!("{default:?}"), "{name}");
        }
    }

    fn build_default(name: &str) -> Box<dyn CongestionControl> {
        crate::build(name, 1448, 10).unwrap()
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
