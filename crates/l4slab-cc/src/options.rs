//! Scenario-facing options of a controller: the knobs a user of the Linux
//! module would reach for (`/sys/module/tcp_<name>/parameters/...`, the
//! scenario's `cc = { kind = "...", ... }`), and the one builder that turns a
//! controller kind plus its options into a [`CongestionControl`].
//!
//! [`CcOptions`] is generic: a kind of the registry ([`crate::registry`])
//! and the values of its declared parameters ([`Param`]) that the scenario
//! set, so nothing here names a controller. Every option is an override:
//! what is not set keeps the controller's default (its config's `Default`,
//! taken from the declaration), and a resolved scenario records only what
//! it changed. Values are in scenario units (fractions, gains as factors,
//! [`l4slab_core::Dur`]), not Linux's fixed-point integers.
//!
//! The values are assumed valid: the scenario crate reads and checks them by
//! their declarations, with key paths; [`CcOptions::build`] panics on an
//! invalid value (a bug).

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::param::{Param, ParamValue};
use crate::registry::{self, CcKind};
use crate::CongestionControl;

/// A controller, by its Linux name, and the options set over its defaults.
/// Serializes as the options alone, in declaration order (the name is
/// [`CcOptions::name`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CcOptions {
    kind: &'static CcKind,
    /// The options set, each once, in the order of `kind.params`.
    set: Vec<(&'static str, ParamValue)>,
}

impl CcOptions {
    /// The controller `name` (one of [`crate::CC_NAMES`]) with its defaults.
    pub fn defaults(name: &str) -> Option<Self> {
        registry::kind(name).map(|kind| CcOptions {
            kind,
            set: Vec::new(),
        })
    }

    /// The Linux name (`tcp_congestion_control`), as in [`crate::CC_NAMES`].
    pub fn name(&self) -> &'static str {
        self.kind.name
    }

    /// The declarations of this controller's options ([`crate::param::params`]).
    pub fn params(&self) -> &'static [Param] {
        self.kind.params
    }

    /// Set the option `name` to `v` (a valid value of its [`Param`]); false
    /// if this controller has no such option.
    ///
    /// # Panics
    /// If `v` is not of the declared kind or out of range (the scenario
    /// crate checks values first, with key paths: this is a bug).
    pub fn set(&mut self, name: &str, v: ParamValue) -> bool {
        let Some(i) = self.params().iter().position(|p| p.name == name) else {
            return false;
        };
        let p = &self.params()[i];
        if let Err(e) = p.check(v) {
            panic!("{}.{e}", self.name());
        }
        let at = |n: &str| self.params().iter().position(|q| q.name == n);
        match self.set.iter().position(|&(n, _)| at(n) >= Some(i)) {
            Some(j) if self.set[j].0 == p.name => self.set[j].1 = v,
            Some(j) => self.set.insert(j, (p.name, v)),
            None => self.set.push((p.name, v)),
        }
        true
    }

    /// [`CcOptions::set`] by value, for building options in one expression.
    ///
    /// # Panics
    /// If this controller has no option `name`.
    pub fn with(mut self, name: &str, v: ParamValue) -> Self {
        assert!(self.set(name, v), "{} has no option {name}", self.name());
        self
    }

    /// The value set for the option `name`, if any.
    pub fn get(&self, name: &str) -> Option<ParamValue> {
        self.set.iter().find(|&&(n, _)| n == name).map(|&(_, v)| v)
    }

    /// No option set: the controller runs with its defaults.
    pub fn is_default(&self) -> bool {
        self.set.is_empty()
    }

    /// The controller with these options. `mss` (bytes) and `initial_window`
    /// (segments) come from the transport config.
    ///
    /// # Panics
    /// If `mss` or `initial_window` is zero, or an option is out of range
    /// (the scenario crate rejects those with a key path).
    pub fn build(&self, mss: u64, initial_window: u64) -> Box<dyn CongestionControl> {
        self.kind.build(mss, initial_window, &self.set)
    }
}

/// A value as the scenario's own type would serialize it: integers, numbers,
/// flags, choices by name, durations as [`l4slab_core::Dur`] does.
struct Value(ParamValue);

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ParamValue::Int(i) => s.serialize_i64(i),
            ParamValue::Num(x) => s.serialize_f64(x),
            ParamValue::Dur(d) => d.serialize(s),
            ParamValue::Rate(r) => r.serialize(s),
            ParamValue::Flag(b) => s.serialize_bool(b),
            ParamValue::Choice(c) => s.serialize_str(c),
            ParamValue::Unset { .. } => s.serialize_none(),
        }
    }
}

impl Serialize for CcOptions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.set.len()))?;
        for &(name, v) in &self.set {
            m.serialize_entry(name, &Value(v))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prague::{EcnFallback, RttScaling};
    use crate::{BbrConfig, CubicConfig, PragueConfig};
    use l4slab_core::Dur;

    fn built(o: &CcOptions) -> String {
        format!("{:?}", o.build(1448, 10))
    }

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
        let o = CcOptions::defaults("cubic")
            .unwrap()
            .with("hystart", ParamValue::Flag(false))
            .with("beta", ParamValue::Num(0.5));
        let cfg = CubicConfig {
            hystart: false,
            beta: 0.5,
            ..CubicConfig::default()
        };
        assert_eq!(built(&o), format!("{:?}", crate::Cubic::new(cfg)));
        let o = CcOptions::defaults("prague")
            .unwrap()
            .with("rtt_scaling", ParamValue::Choice("none"))
            .with("rtt_transition", ParamValue::Int(4));
        let cfg = PragueConfig {
            rtt_scaling: RttScaling::None,
            rtt_transition_rounds: 4,
            ..PragueConfig::default()
        };
        assert_eq!(built(&o), format!("{:?}", crate::Prague::new(cfg)));
        // BBR gains are factors here and 1/256 fixed point in the config.
        let o = CcOptions::defaults("bbr")
            .unwrap()
            .with("cwnd_gain", ParamValue::Num(2.5))
            .with("extra_acked_gain", ParamValue::Num(0.0));
        let cfg = BbrConfig {
            cwnd_gain: 640,
            extra_acked_gain: 0,
            ..BbrConfig::default()
        };
        assert_eq!(built(&o), format!("{:?}", crate::Bbr::new(cfg)));
        let o = CcOptions::defaults("dctcp")
            .unwrap()
            .with("ect1", ParamValue::Flag(true));
        assert!(!o.is_default());
        assert_eq!(o.get("ect1"), Some(ParamValue::Flag(true)));
        assert_eq!(o.build(1448, 10).ecn_codepoint(), crate::EcnCodepoint::Ect1);
    }

    #[test]
    fn every_default_set_as_an_option_leaves_the_controller_unchanged() {
        // Each declaration's default is the config's default: setting every
        // option to it changes nothing that `build` sees.
        for &name in crate::CC_NAMES {
            let mut o = CcOptions::defaults(name).unwrap();
            for p in o.params().iter().rev() {
                assert!(o.set(p.name, p.default), "{name}.{}", p.name);
            }
            assert!(!o.set("no_such_option", ParamValue::Flag(true)));
            let json = serde_json::to_value(&o).unwrap();
            let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
            let declared: Vec<_> = o.params().iter().map(|p| p.name.to_string()).collect();
            let mut sorted = declared.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "{name}: {json}");
            assert_eq!(
                built(&o),
                built(&CcOptions::defaults(name).unwrap()),
                "{name}"
            );
        }
    }

    #[test]
    fn serializes_only_what_was_set_in_declaration_order() {
        let o = CcOptions::defaults("prague")
            .unwrap()
            .with("ecn_fallback", ParamValue::Choice("detect_only"))
            .with("rtt_target", ParamValue::Dur(Dur::from_millis(10)))
            .with("ecn_fallback", ParamValue::Choice("detect_only"));
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"rtt_target":10000000,"ecn_fallback":"detect_only"}"#
        );
        assert_eq!(
            EcnFallback::from_name("detect_only"),
            Some(EcnFallback::DetectOnly)
        );
        let o = CcOptions::defaults("dctcp")
            .unwrap()
            .with("shift_g", ParamValue::Int(5))
            .with("alpha_on_init", ParamValue::Num(0.5));
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"shift_g":5,"alpha_on_init":0.5}"#
        );
    }

    #[test]
    #[should_panic(expected = "reno has no option beta")]
    fn an_option_of_another_kind_is_a_bug() {
        let _ = CcOptions::defaults("reno")
            .unwrap()
            .with("beta", ParamValue::Num(0.5));
    }
}
