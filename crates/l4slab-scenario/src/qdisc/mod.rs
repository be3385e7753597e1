//! `bottleneck[.dir].qdisc` -> [`QdiscSpec`]: one generic resolver for every
//! kind of the qdisc registry ([`l4slab_qdisc::registry`]). The `kind` (a
//! Linux `tc` name) chooses the registry entry, whose config starts from the
//! direction's `buffer` as its limit ([`QdiscSpec::for_buffer`]: each kind
//! declares how a buffer in bytes or time maps); the table is read by the
//! kind's declarations (`l4slab_qdisc::<kind>::PARAMS`: `tc` names, ranges,
//! Linux defaults; the generic reader `crate::param`, which rejects keys of
//! another kind), and each value written sets its field
//! ([`QdiscSpec::set`]).
//!
//! A kind may refuse a combination of values (`QdiscSpec::check`: the
//! checks `tc` and the kernel make); the error names the key to blame.
//!
//! What no declaration describes is read by the kind's own file here:
//! fq_codel's `ce_threshold_selector` ([`fq_codel`]) and DualPI2's step
//! forms, auto-configuration, conflicts and flow classes ([`dualpi2`]).
//!
//! ```toml
//! qdisc = "pie"                                              # Linux defaults
//! qdisc = { kind = "fq_codel", ecn = false, target = "2ms" } # some tc knobs
//! ```

mod dualpi2;
mod fq_codel;
pub(crate) mod params;

pub(crate) use dualpi2::{resolve_flow_classes, resolve_qdisc_flow_classes};

use l4slab_core::param::Kind;
use l4slab_core::Rate;
use toml::Value;

use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::param::{read_table, Values};
use crate::values::{join, kind_of};
use params::bad_value;

/// Queue disciplines this build implements (the registry's
/// [`l4slab_qdisc::QDISC_NAMES`]).
pub const QDISCS: &[&str] = l4slab_qdisc::QDISC_NAMES;

/// The qdisc of a direction that names none: a tail-drop FIFO of its buffer.
pub(crate) fn fifo(limit: BufferLimit) -> QdiscSpec {
    QdiscSpec::for_buffer("fifo", limit).expect("fifo is registered")
}

/// Resolve `qdisc = "kind"` or `qdisc = { kind = "...", ... }` at `path`;
/// `rate` converts a `limit` written as a time.
pub(crate) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    if let Value::Table(table) = value {
        if !table.contains_key("kind") {
            return Err(missing_kind(table, path));
        }
    }
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(mut spec) = QdiscSpec::for_buffer(kind, buffer) else {
        return Err(ScenarioError::unknown_name(
            &kind_path, "qdisc", kind, QDISCS,
        ));
    };
    let Value::Table(table) = value else {
        return checked(spec, path, None);
    };
    let params = spec.params();
    let v = read_table(table, path, params, Some(rate))?;
    // In declaration order (dualpi2: `limit` resets `memlimit`, which follows).
    for p in params.iter().filter(|p| !matches!(p.kind, Kind::Custom(_))) {
        if let Some(x) = v.get(p) {
            // false: a parameter the kind's own reader below composes.
            spec.set(p.name, x);
        }
    }
    match &mut spec {
        QdiscSpec::FqCodel(cfg) => fq_codel::resolve_custom(cfg, &v)?,
        QdiscSpec::Dualpi2(cfg) => dualpi2::resolve_custom(cfg, &v)?,
        _ => {}
    }
    checked(spec, path, Some(&v))
}

/// `kind: missing` for a qdisc table without one, suggesting the first kind
/// that takes every key written (`{ target = "5ms" }`: codel, not fifo,
/// whose example would then be refused for `target`).
fn missing_kind(table: &toml::value::Table, path: &str) -> ScenarioError {
    let takes_all = |kind: &str| {
        let params = l4slab_qdisc::registry::params(kind).unwrap_or_default();
        table.keys().all(|k| params.iter().any(|p| p.is_named(k)))
    };
    let kind = QDISCS.iter().find(|k| takes_all(k)).unwrap_or(&"fifo");
    ScenarioError::missing_with(&join(path, "kind"), format!("kind = \"{kind}\""))
}

/// `spec` if its kind accepts it ([`QdiscSpec::check`]); otherwise the error
/// at the key to blame (where written, else at the qdisc).
fn checked(spec: QdiscSpec, path: &str, v: Option<&Values>) -> Result<QdiscSpec, ScenarioError> {
    let Err(e) = spec.check() else {
        return Ok(spec);
    };
    let p = spec
        .params()
        .iter()
        .find(|p| p.name == e.param)
        .expect("a kind blames one of its parameters");
    let at = match v {
        Some(v) if v.has(p) => v.path_of(p),
        _ => path.to_string(),
    };
    Err(bad_value(
        &at,
        e.message,
        &format!("{} = {}", p.name, p.example()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::{Dur, Rate};
    use l4slab_qdisc::FqPieConfig;

    const PATH: &str = "bottleneck.qdisc";

    fn table(text: &str) -> Value {
        let v: toml::Table = toml::from_str(&format!("q = {text}")).expect("toml");
        v["q"].clone()
    }

    fn cfg(text: &str) -> FqPieConfig {
        let v = table(text);
        match resolve(&v, PATH, BufferLimit::Packets(500), Rate::from_mbps(10)).expect("valid") {
            QdiscSpec::FqPie(c) => c,
            other => panic!("not fq_pie: {other:?}"),
        }
    }

    fn err(text: &str) -> String {
        let v = table(text);
        resolve(&v, PATH, BufferLimit::Packets(500), Rate::from_mbps(10))
            .expect_err("invalid")
            .to_string()
    }

    #[test]
    fn defaults_are_linux_with_the_buffer_as_limit() {
        let want = FqPieConfig {
            limit: 500,
            ..FqPieConfig::default()
        };
        assert_eq!(cfg(r#""fq_pie""#), want);
        assert_eq!(cfg(r#"{ kind = "fq_pie" }"#), want);
    }

    #[test]
    fn takes_every_tc_knob() {
        let c = cfg(concat!(
            r#"{ kind = "fq_pie", limit = 2000, flows = 64, target = "5ms", tupdate = "30ms", "#,
            r#"alpha = 0.25, beta = 2.5, quantum = 300, memory_limit = "4MiB", ecn_prob = 25, "#,
            r#"ecn = true, bytemode = true, dq_rate_estimator = true, burst = "0ms", hash_seed = 9 }"#,
        ));
        assert_eq!(
            c,
            FqPieConfig {
                limit: 2000,
                flows: 64,
                target: Dur::from_millis(5),
                tupdate: Dur::from_millis(30),
                alpha: 0.25,
                beta: 2.5,
                quantum: 300,
                memory_limit: 4 << 20,
                ecn_prob: 25,
                ecn: true,
                bytemode: true,
                dq_rate_estimator: true,
                max_burst: Dur::ZERO,
                hash_seed: 9,
                ..FqPieConfig::default()
            }
        );
        let c = cfg(r#"{ kind = "fq_pie", ecn_prob = "40%", quantum = "1KB", limit = "30KB" }"#);
        assert_eq!((c.ecn_prob, c.quantum, c.limit), (40, 1000, 20));
    }

    #[test]
    fn bad_values_name_the_key_and_show_an_example() {
        let cases = [
            (
                r#"{ kind = "fq_pie", flws = 5 }"#,
                "bottleneck.qdisc.flws: unknown key",
            ),
            (
                r#"{ kind = "fq_pie", flows = 0 }"#,
                "bottleneck.qdisc.flows: 0 is out of range",
            ),
            (r#"{ kind = "fq_pie", flows = 65537 }"#, "write e.g. 1024"),
            (
                r#"{ kind = "fq_pie", flows = "many" }"#,
                "bottleneck.qdisc.flows: expected an integer",
            ),
            (
                r#"{ kind = "fq_pie", quantum = 0 }"#,
                "bottleneck.qdisc.quantum: 0 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", quantum = "2MiB" }"#,
                "bottleneck.qdisc.quantum: 2097152 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", memory_limit = "8GiB" }"#,
                "bottleneck.qdisc.memory_limit: 8589934592 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", ecn_prob = 101 }"#,
                "bottleneck.qdisc.ecn_prob: 101 is out of range",
            ),
            (
                r#"{ kind = "fq_pie", ecn_prob = "12.5%" }"#,
                "not a whole percentage",
            ),
            (
                r#"{ kind = "fq_pie", alpha = 2 }"#,
                "bottleneck.qdisc.alpha: 2 is ambiguous",
            ),
            (
                r#"{ kind = "fq_pie", tupdate = "0ms" }"#,
                "bottleneck.qdisc.tupdate: must be greater than zero",
            ),
            (
                r#"{ kind = "fq_pie", target = 15 }"#,
                "bottleneck.qdisc.target: 15 has no unit",
            ),
            (
                r#"{ kind = "fq_pie", ecn = "yes" }"#,
                "bottleneck.qdisc.ecn: expected true or false",
            ),
            (
                r#"{ kind = "fq_pie", limit = 0 }"#,
                "bottleneck.qdisc.limit: 0 is out of range",
            ),
        ];
        for (text, want) in cases {
            let got = err(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}
