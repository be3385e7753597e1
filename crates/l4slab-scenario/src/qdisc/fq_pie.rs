//! `qdisc = "fq_pie"` or `{ kind = "fq_pie", limit = 10240, flows = 1024,
//! target = "15ms", tupdate = "15ms", alpha = 0.125, beta = 1.25, quantum =
//! 1514, memory_limit = "32MiB", ecn_prob = 10, ecn = true, bytemode = false,
//! dq_rate_estimator = false }`: Linux `fq_pie` with the `tc-fq_pie(8)`
//! parameter names and Linux defaults ([`l4slab_qdisc::FqPieConfig::default`]).
//!
//! * `limit` works as for `pie` (packets; the direction's `buffer` by default).
//! * `alpha` and `beta` are in Hz, as floats, as for `pie` (tc's integers are
//!   in 1/16 Hz; integers are refused as ambiguous).
//! * `ecn_prob` is tc's integer percentage (0..=100) or a string `"10%"`.
//! * Ranges are Linux's (`fq_pie_change`, `fq_pie_policy`): `flows` 1..=65536,
//!   `quantum` 1..=1048576 bytes, `memory_limit` a u32 of bytes (at least 1).
//! * l4slab extensions, as for `pie` and `fq_codel`: `max_burst` (alias
//!   `burst`; Linux fixes it at 150 ms) and `hash_seed`.

use serde::Deserialize;
use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::fq_pie::{MAX_FLOWS, MAX_QUANTUM};
use l4slab_qdisc::FqPieConfig;

use super::params::{bad_value, flag, limit, packets_of, positive_time, time, with_example};
use super::pie::pie_gain;
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{self, deserialize_at, join};

/// `qdisc = { kind = "fq_pie", ... }`: the `tc-fq_pie(8)` knobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct FqPieTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    limit: Option<Value>,
    flows: Option<Value>,
    target: Option<Value>,
    tupdate: Option<Value>,
    alpha: Option<Value>,
    beta: Option<Value>,
    quantum: Option<Value>,
    memory_limit: Option<Value>,
    ecn_prob: Option<Value>,
    ecn: Option<Value>,
    bytemode: Option<Value>,
    dq_rate_estimator: Option<Value>,
    #[serde(alias = "burst")]
    max_burst: Option<Value>,
    hash_seed: Option<Value>,
}

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = FqPieConfig {
        limit: packets_of(buffer),
        ..FqPieConfig::default()
    };
    let Value::Table(_) = value else {
        return Ok(QdiscSpec::FqPie(cfg));
    };
    let t: FqPieTable = deserialize_at(value.clone(), path)?;
    let p = |key: &str| join(path, key);
    if let Some(v) = &t.limit {
        cfg.limit = limit(v, &p("limit"), rate, "10240")?;
    }
    if let Some(v) = &t.flows {
        // fq_pie_change: "Number of flows must range in [1..65536]"
        cfg.flows = int(v, &p("flows"), 1, u64::from(MAX_FLOWS), "1024")? as u32;
    }
    if let Some(v) = &t.target {
        cfg.target = time(v, &p("target"), r#""15ms""#)?;
    }
    if let Some(v) = &t.tupdate {
        cfg.tupdate = positive_time(v, &p("tupdate"), r#""15ms""#)?;
    }
    if let Some(v) = &t.alpha {
        cfg.alpha = pie_gain(v, &p("alpha"), "0.125", 2)?;
    }
    if let Some(v) = &t.beta {
        cfg.beta = pie_gain(v, &p("beta"), "1.25", 20)?;
    }
    if let Some(v) = &t.quantum {
        // fq_pie_q_range: 1 ..= 1 << 20
        cfg.quantum = bytes(v, &p("quantum"), u64::from(MAX_QUANTUM), "1514")? as u32;
    }
    if let Some(v) = &t.memory_limit {
        // TCA_FQ_PIE_MEMORY_LIMIT is a u32 of bytes.
        cfg.memory_limit = bytes(v, &p("memory_limit"), u64::from(u32::MAX), r#""32MiB""#)?;
    }
    if let Some(v) = &t.ecn_prob {
        cfg.ecn_prob = percent(v, &p("ecn_prob"))?;
    }
    if let Some(v) = &t.ecn {
        cfg.ecn = flag(v, &p("ecn"))?;
    }
    if let Some(v) = &t.bytemode {
        cfg.bytemode = flag(v, &p("bytemode"))?;
    }
    if let Some(v) = &t.dq_rate_estimator {
        cfg.dq_rate_estimator = flag(v, &p("dq_rate_estimator"))?;
    }
    if let Some(v) = &t.max_burst {
        cfg.max_burst = time(v, &p("max_burst"), r#""150ms""#)?;
    }
    if let Some(v) = &t.hash_seed {
        cfg.hash_seed = int(v, &p("hash_seed"), 0, u64::from(u32::MAX), "1")? as u32;
    }
    Ok(QdiscSpec::FqPie(cfg))
}

/// An integer in `lo..=hi`.
fn int(v: &Value, path: &str, lo: u64, hi: u64, example: &str) -> Result<u64, ScenarioError> {
    match v {
        Value::Integer(i) => {
            values::int_in(*i, path, lo as i64, hi as i64).map_err(|e| with_example(e, example))
        }
        other => Err(super::params::wrong_type(
            path,
            "an integer",
            other,
            example,
        )),
    }
}

/// Bytes in `1..=hi`: an integer or a size string (`"32MiB"`).
fn bytes(v: &Value, path: &str, hi: u64, example: &str) -> Result<u64, ScenarioError> {
    let n = match v {
        Value::Integer(_) => return int(v, path, 1, hi, example),
        v => values::size(v, path).map_err(|e| with_example(e, example))?,
    };
    if n == 0 || n > hi {
        return Err(bad_value(
            path,
            format!("{n} B is out of range; must be between 1 B and {hi} B"),
            example,
        ));
    }
    Ok(n)
}

/// tc's `ecn_prob PERCENTAGE`: an integer 0..=100, or `"10%"` (whole percent).
fn percent(v: &Value, path: &str) -> Result<u32, ScenarioError> {
    const EXAMPLE: &str = "10";
    if let Value::Integer(_) = v {
        return int(v, path, 0, 100, EXAMPLE).map(|n| n as u32);
    }
    let f = values::fraction(v, path).map_err(|e| with_example(e, EXAMPLE))?;
    let pct = f * 100.0;
    if (pct - pct.round()).abs() > 1e-9 {
        return Err(bad_value(
            path,
            format!("{pct}% is not a whole percentage (tc's ecn_prob is an integer)"),
            EXAMPLE,
        ));
    }
    Ok(pct.round() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::{Dur, Rate};

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
                "bottleneck.qdisc.quantum: 0 is out of range",
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
