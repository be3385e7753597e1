//! The registry of queue disciplines: one line per kind ([`registry!`] at
//! the bottom), which declares its `tc` name and its config type and thereby
//! [`QdiscConfig`] (the one enum of configs the scenario resolves, records
//! and builds), [`QDISC_NAMES`] and [`params`].
//!
//! What a kind is beyond its line lives next to its algorithm, as an
//! implementation of [`QdiscKind`] on its config:
//!
//! * its `tc` parameters ([`QdiscKind::PARAMS`], [`Param`] declarations),
//! * how a declared value sets its config, and its `Default` from the
//!   declared defaults ([`l4slab_core::param_config!`]: parameter -> field,
//!   converted by the field's type, [`l4slab_core::param::FromParam`]),
//! * how the direction's buffer becomes its limit ([`QdiscKind::for_buffer`]:
//!   by default through its `limit` parameter, in packets or bytes as
//!   declared),
//! * how it is built ([`QdiscKind::build`]).
//!
//! Adding a discipline is then its algorithm file (with that impl), one
//! registry line, its docs page and its tests. The scenario crate keeps only
//! what no declaration describes (DualPI2's step forms, flow classes and
//! auto-configuration; fq_codel's `ce_threshold_selector`).

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::param::{Configure, Kind, Param, ParamValue};
use l4slab_core::Dur;

use crate::{CodelConfig, DualPi2Config, FifoConfig, FqCodelConfig, FqPieConfig, PieConfig, Qdisc};

/// Bytes per packet where a buffer in bytes or time becomes a packet limit,
/// or a buffer in packets a byte limit (REFERENCES.md: 1 packet = 1500 B on
/// the wire).
pub const PACKET_BYTES: u64 = 1500;

/// A link direction's buffer as the user wrote it, and its resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferLimit {
    Packets(u32),
    Bytes(u64),
    /// Written as a time ("50ms"); resolved to bytes at the link rate.
    Time {
        time: Dur,
        bytes: u64,
    },
}

impl BufferLimit {
    /// As a tc packet limit: packets as is, bytes at [`PACKET_BYTES`] per
    /// packet, at least 1.
    pub fn packets(self) -> u32 {
        match self {
            BufferLimit::Packets(n) => n,
            BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => {
                u32::try_from(b / PACKET_BYTES).unwrap_or(u32::MAX).max(1)
            }
        }
    }

    /// As a tc byte limit: bytes as is, packets at [`PACKET_BYTES`] each.
    pub fn bytes(self) -> u64 {
        match self {
            BufferLimit::Packets(n) => u64::from(n) * PACKET_BYTES,
            BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => b,
        }
    }
}

/// A config its kind refuses (a combination `tc` or the kernel rejects):
/// the parameter to blame and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The [`Param::name`] of the parameter to blame.
    pub param: &'static str,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// What the registry needs of a discipline, implemented on its config.
pub trait QdiscKind: Clone + Default + Configure {
    /// Its `tc` parameters in docs order (`<kind>::PARAMS`).
    const PARAMS: &'static [Param];

    /// Set the parameter named `name` to `v` (of its declared kind, checked);
    /// false if the kind has no field for it (a custom parameter its
    /// resolver reads). By default the field setter ([`Configure`], what
    /// [`l4slab_core::param_fields!`] generates); a kind whose parameters
    /// interact overrides it.
    fn set(&mut self, name: &str, v: ParamValue) -> bool {
        Configure::set(self, name, v)
    }

    /// The config for a direction whose buffer is `buffer`, every other
    /// parameter at its default: the buffer sets the `limit` parameter, in
    /// packets ([`Kind::Limit`]: bytes and times at [`PACKET_BYTES`] per
    /// packet, at least 1) or bytes ([`Kind::Bytes`]: packets at
    /// [`PACKET_BYTES`] each), as declared. A kind without a `limit`
    /// parameter overrides this.
    fn for_buffer(buffer: BufferLimit) -> Self {
        let mut cfg = Self::default();
        let limit = Self::PARAMS
            .iter()
            .find(|p| p.name == "limit")
            .expect("a kind without a `limit` parameter maps the buffer itself");
        let n = match limit.kind {
            Kind::Limit => i64::from(buffer.packets()),
            Kind::Bytes { .. } => i64::try_from(buffer.bytes()).unwrap_or(i64::MAX),
            other => panic!("`limit` of kind {other:?} cannot take a buffer"),
        };
        assert!(
            QdiscKind::set(&mut cfg, limit.name, ParamValue::Int(n)),
            "`limit` has a field"
        );
        cfg
    }

    /// Whether the values set make a config the kind accepts (the checks
    /// `tc` and the kernel make beyond each parameter's range). `build`
    /// may panic on a config this refuses.
    fn check(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The discipline.
    fn build(&self) -> Box<dyn Qdisc>;
}

/// The registry: one line per discipline, `Variant(Config) = "tc name"`, in
/// the order the docs list them.
macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident($cfg:ty) = $name:literal,)*) => {
        /// A discipline's config, tagged by its `tc` name (`kind`): what a
        /// scenario resolves to and records in its summary.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum QdiscConfig {
            $($(#[$doc])* #[serde(rename = $name)] $variant($cfg),)*
        }

        /// The queue disciplines, by their Linux `tc` names, in the order the
        /// docs list them.
        pub const QDISC_NAMES: &[&str] = &[$($name),*];

        /// The parameters of the discipline `name` (one of [`QDISC_NAMES`]),
        /// in the order the docs list them; `None` for an unknown name.
        pub fn params(name: &str) -> Option<&'static [Param]> {
            match name {
                $($name => Some(<$cfg as QdiscKind>::PARAMS),)*
                _ => None,
            }
        }

        impl QdiscConfig {
            /// The config of the discipline `name` for a direction's
            /// `buffer` ([`QdiscKind::for_buffer`]); `None` for an unknown name.
            pub fn for_buffer(name: &str, buffer: BufferLimit) -> Option<Self> {
                match name {
                    $($name => Some(QdiscConfig::$variant(<$cfg as QdiscKind>::for_buffer(buffer))),)*
                    _ => None,
                }
            }

            /// Its `tc` name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(QdiscConfig::$variant(_) => $name,)*
                }
            }

            /// Its parameter declarations.
            pub fn params(&self) -> &'static [Param] {
                match self {
                    $(QdiscConfig::$variant(_) => <$cfg as QdiscKind>::PARAMS,)*
                }
            }

            /// Set a declared parameter ([`QdiscKind::set`]).
            pub fn set(&mut self, name: &str, v: ParamValue) -> bool {
                match self {
                    $(QdiscConfig::$variant(c) => QdiscKind::set(c, name, v),)*
                }
            }

            /// Whether its kind accepts it ([`QdiscKind::check`]).
            pub fn check(&self) -> Result<(), ConfigError> {
                match self {
                    $(QdiscConfig::$variant(c) => c.check(),)*
                }
            }

            /// The discipline it configures.
            pub fn build(&self) -> Box<dyn Qdisc> {
                match self {
                    $(QdiscConfig::$variant(c) => c.build(),)*
                }
            }
        }
    };
}

registry! {
    /// `pfifo`/`bfifo` (tail drop) or `pfifo_head_drop`, with the buffer as limit.
    Fifo(FifoConfig) = "fifo",
    /// Linux `codel` (RFC 8289); `limit` in packets.
    Codel(CodelConfig) = "codel",
    /// Linux `fq_codel` (RFC 8290); `limit` in packets.
    FqCodel(FqCodelConfig) = "fq_codel",
    /// Linux `pie` (RFC 8033); `limit` in packets.
    Pie(PieConfig) = "pie",
    /// Linux `fq_pie` (RFC 8290 scheduler, RFC 8033 PIE per flow); `limit` in packets.
    FqPie(FqPieConfig) = "fq_pie",
    /// Linux `dualpi2` (RFC 9332); `limit` in packets; `l_flows` are flow indices.
    Dualpi2(DualPi2Config) = "dualpi2",
    /// Linux `red` (Floyd & Jacobson 1993, Adaptive RED); `limit` in bytes.
    Red(crate::red::RedConfig) = "red",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_become_packet_or_byte_limits() {
        assert_eq!(BufferLimit::Packets(7).packets(), 7);
        assert_eq!(BufferLimit::Bytes(150_000).packets(), 100);
        assert_eq!(BufferLimit::Bytes(1_400).packets(), 1);
        let time = BufferLimit::Time {
            time: Dur::from_millis(50),
            bytes: 125_000,
        };
        assert_eq!((time.packets(), time.bytes()), (83, 125_000));
        assert_eq!(BufferLimit::Packets(7).bytes(), 10_500);
    }

    /// Every declared, non-custom parameter sets a field, except those a
    /// resolver composes itself (listed here, so a new one is a decision).
    #[test]
    fn every_declared_parameter_sets_a_field_or_is_listed_as_composed() {
        const COMPOSED: &[(&str, &[&str])] = &[(
            "dualpi2",
            &[
                "max_rtt",
                "typical_rtt",
                "min_qlen_step",
                "classic_protection",
                "l_aqm",
                "min_th",
                "range",
                "th_len",
                "scheduler",
                "tshift",
            ],
        )];
        for &name in QDISC_NAMES {
            let mut cfg = QdiscConfig::for_buffer(name, BufferLimit::Packets(10)).expect(name);
            assert_eq!(cfg.name(), name);
            let composed = COMPOSED
                .iter()
                .find(|(k, _)| *k == name)
                .map_or(&[][..], |(_, c)| c);
            for p in cfg.params() {
                if !matches!(p.kind, Kind::Custom(_)) {
                    let set = cfg.set(p.name, p.default);
                    assert_eq!(set, !composed.contains(&p.name), "{name}.{}", p.name);
                }
            }
        }
    }

    #[test]
    fn the_buffer_sets_the_limit_and_the_rest_is_default() {
        let QdiscConfig::Pie(p) =
            QdiscConfig::for_buffer("pie", BufferLimit::Bytes(30_000)).unwrap()
        else {
            panic!("pie")
        };
        assert_eq!(
            p,
            PieConfig {
                limit: 20,
                ..PieConfig::default()
            }
        );
        let QdiscConfig::Dualpi2(d) =
            QdiscConfig::for_buffer("dualpi2", BufferLimit::Packets(100)).unwrap()
        else {
            panic!("dualpi2")
        };
        assert_eq!((d.limit, d.memory_limit), (100, 300_000));
        let fifo = QdiscConfig::for_buffer("fifo", BufferLimit::Bytes(9000)).unwrap();
        assert_eq!(
            fifo,
            QdiscConfig::Fifo(FifoConfig {
                limit: BufferLimit::Bytes(9000),
                head_drop: false
            })
        );
        assert!(QdiscConfig::for_buffer("sfq", BufferLimit::Packets(1)).is_none());
    }
}
