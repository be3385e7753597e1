//! The congestion controls, one line each ([`KINDS`]): the Linux name (the
//! scenario's `cc = "..."`), the declared parameters ([`Param`], next to the
//! algorithm's config) and the config type that sets them and builds the
//! controller ([`CcConfig`], implemented in the algorithm's file).
//!
//! Everything by kind derives from this table: [`crate::CC_NAMES`],
//! [`crate::build`], [`crate::param::params`], the scenario options
//! ([`crate::CcOptions`], read by `l4slab-scenario`'s `cc.rs`), the Python
//! `_native.cc_names()` / `cc_params(kind)` and the docs tables
//! (`tests/docs_params.rs`). Adding a controller is its algorithm file (with
//! `PARAMS` and an `impl CcConfig`), one line here and its
//! `docs/models/<name>.md`.

use crate::param::{Param, ParamValue};
use crate::CongestionControl;

/// A controller's config as the registry sets and builds it.
pub trait CcConfig: Sized {
    /// The Linux defaults with the transport's segment size (bytes; QUIC
    /// passes its max datagram size) and initial window (segments).
    fn with_window(mss: u64, initial_window: u64) -> Self;

    /// Set the declared parameter `name` (a [`Param::name`] of the kind's
    /// `PARAMS`) to `v`, in scenario units (the config may keep Linux's):
    /// false if the kind declares no such parameter.
    ///
    /// # Panics
    /// If `v` is not of the declared kind or is out of the field's type (the
    /// scenario crate checks values against the declaration first).
    fn set(&mut self, name: &str, v: ParamValue) -> bool;

    /// The controller.
    ///
    /// # Panics
    /// If the config is invalid (the scenario crate rejects that earlier).
    fn build(self) -> Box<dyn CongestionControl>;
}

/// `impl CcConfig for $cfg`, building `$cc`, in the algorithm's file: each
/// declared parameter onto its config field, through a conversion where the
/// config keeps Linux's units (`HIGH_GAIN => high_gain (gain_to_fixed)`).
/// The config has `mss` and `initial_window_segments` fields and a `Default`.
macro_rules! cc_config {
    ($cfg:ty => $cc:ty { $($param:path => $field:ident $(($conv:path))?),* $(,)? }) => {
        impl $crate::registry::CcConfig for $cfg {
            #[allow(clippy::needless_update)] // a config of `mss` and the window alone (Reno)
            fn with_window(mss: u64, initial_window: u64) -> Self {
                Self {
                    mss,
                    initial_window_segments: initial_window,
                    ..Self::default()
                }
            }

            fn set(&mut self, name: &str, v: $crate::param::ParamValue) -> bool {
                let _ = (&name, &v);
                $(
                    if name == $param.name {
                        self.$field = $($conv)?(l4slab_core::param::FromParam::from_param(v));
                        return true;
                    }
                )*
                false
            }

            fn build(self) -> Box<dyn $crate::CongestionControl> {
                Box::new(<$cc>::new(self))
            }
        }
    };
}
pub(crate) use cc_config;

/// One congestion-control kind.
#[derive(Debug)]
pub struct CcKind {
    /// The Linux `tcp_congestion_control` name.
    pub name: &'static str,
    /// The parameters a scenario can set, in the order the docs list them.
    pub params: &'static [Param],
    build: BuildFn,
}

/// `(mss, initial_window, options) -> controller`.
type BuildFn = fn(u64, u64, &[(&'static str, ParamValue)]) -> Box<dyn CongestionControl>;

impl CcKind {
    /// The kind whose config is `C`.
    pub const fn of<C: CcConfig>(name: &'static str, params: &'static [Param]) -> Self {
        CcKind {
            name,
            params,
            build: build_with::<C>,
        }
    }

    /// The controller with `options` (declared names, valid values) set over
    /// the defaults; `mss` bytes, `initial_window` segments.
    ///
    /// # Panics
    /// If `mss` or `initial_window` is zero, or an option is not declared or
    /// out of range (the scenario crate rejects those with a key path).
    pub fn build(
        &self,
        mss: u64,
        initial_window: u64,
        options: &[(&'static str, ParamValue)],
    ) -> Box<dyn CongestionControl> {
        (self.build)(mss, initial_window, options)
    }

    /// The declaration named `name`.
    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

impl PartialEq for CcKind {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

fn build_with<C: CcConfig>(
    mss: u64,
    initial_window: u64,
    options: &[(&'static str, ParamValue)],
) -> Box<dyn CongestionControl> {
    let mut cfg = C::with_window(mss, initial_window);
    for &(name, v) in options {
        assert!(cfg.set(name, v), "no option {name}");
    }
    cfg.build()
}

/// The controllers, in the order `--help` and the docs list them.
pub const KINDS: &[CcKind] = &[
    CcKind::of::<crate::RenoConfig>("reno", crate::reno::PARAMS),
    CcKind::of::<crate::CubicConfig>("cubic", crate::cubic::PARAMS),
    CcKind::of::<crate::DctcpConfig>("dctcp", crate::dctcp::PARAMS),
    CcKind::of::<crate::PragueConfig>("prague", crate::prague::PARAMS),
    CcKind::of::<crate::BbrConfig>("bbr", crate::bbr::v1::PARAMS),
    CcKind::of::<crate::Bbr3Config>("bbr3", crate::bbr::v3::PARAMS),
];

/// The kind named `name`.
pub fn kind(name: &str) -> Option<&'static CcKind> {
    KINDS.iter().find(|k| k.name == name)
}

/// [`KINDS`]' names, in order (`crate::CC_NAMES`).
pub(crate) const NAMES: [&str; KINDS.len()] = {
    let mut names = [""; KINDS.len()];
    let mut i = 0;
    while i < KINDS.len() {
        names[i] = KINDS[i].name;
        i += 1;
    }
    names
};

/// The flow's controller when a scenario names none (`[[flows]]` without
/// `cc`): Reno, the scenario format's default since its first version.
pub const SCENARIO_DEFAULT_CC: &str = "reno";

/// The controller of a connection that names none (`l4slab send`/`serve`,
/// a QUIC `ConnectionConfig`, the emulator's kernel flows): CUBIC, Linux's
/// default `net.ipv4.tcp_congestion_control`.
pub const LINUX_DEFAULT_CC: &str = "cubic";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_builds_under_its_own_name_with_unique_names() {
        for (i, k) in KINDS.iter().enumerate() {
            let cc = k.build(1448, 10, &[]);
            assert_eq!(cc.name(), k.name);
            assert_eq!(cc.cwnd(), 14_480);
            assert!(KINDS[..i].iter().all(|o| o.name != k.name), "{}", k.name);
            assert_eq!(kind(k.name), Some(k));
        }
        assert_eq!(kind("vegas"), None);
        assert!(NAMES.contains(&SCENARIO_DEFAULT_CC));
        assert!(NAMES.contains(&LINUX_DEFAULT_CC));
    }

    #[test]
    fn every_declared_parameter_is_settable_and_nothing_else() {
        for k in KINDS {
            for p in k.params {
                let built = k.build(1448, 10, &[(p.name, p.default)]);
                // Its default changes nothing.
                assert_eq!(
                    format!("{built:?}"),
                    format!("{:?}", k.build(1448, 10, &[])),
                    "{}.{}",
                    k.name,
                    p.name
                );
                assert_eq!(k.param(p.name), Some(p));
            }
        }
    }

    #[test]
    #[should_panic(expected = "no option hystart")]
    fn an_undeclared_option_is_a_bug() {
        kind("reno")
            .unwrap()
            .build(1448, 10, &[("hystart", ParamValue::Flag(false))]);
    }
}
