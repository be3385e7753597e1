//! `qdisc = "codel"` or `{ kind = "codel", limit = 1000, target = "5ms",
//! interval = "100ms", ecn = true, ce_threshold = "1ms" }`: Linux `codel`
//! with the `tc-codel(8)` parameter names and Linux defaults
//! ([`l4slab_qdisc::CodelConfig::default`]).
//!
//! `limit` is in packets, as in tc. Without a `limit` key the direction's
//! `buffer` is the limit: a buffer in packets as is, one in bytes or time
//! converted at 1500 B per packet (at least 1). A `limit` key accepts the same
//! forms: an integer (packets) or a buffer string (`"100pkt"`, `"150KB"`,
//! `"50ms"` at the link rate).
//!
//! Also the shared helpers of [`super::fq_codel`]: limits, durations and
//! the examples attached to errors.

use serde::Deserialize;
use toml::Value;

use l4slab_core::{Dur, Rate};
use l4slab_qdisc::CodelConfig;

use super::params::{self, packets_of};
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{deserialize_at, join};

/// `qdisc = { kind = "codel", ... }`: the `tc-codel(8)` knobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct CodelTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    limit: Option<Value>,
    target: Option<Value>,
    interval: Option<Value>,
    ecn: Option<bool>,
    ce_threshold: Option<Value>,
}

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = CodelConfig {
        limit: packets_of(buffer),
        ..CodelConfig::default()
    };
    if let Value::Table(_) = value {
        let t: CodelTable = deserialize_at(value.clone(), path).map_err(with_example)?;
        let p = |key: &str| join(path, key);
        if let Some(v) = &t.limit {
            cfg.limit = limit(v, &p("limit"), rate)?;
        }
        if let Some(v) = &t.target {
            cfg.target = positive_time(v, &p("target"))?;
        }
        if let Some(v) = &t.interval {
            cfg.interval = positive_time(v, &p("interval"))?;
        }
        if let Some(b) = t.ecn {
            cfg.ecn = b;
        }
        if let Some(v) = &t.ce_threshold {
            cfg.ce_threshold = Some(time(v, &p("ce_threshold"))?);
        }
    }
    Ok(QdiscSpec::Codel(cfg))
}

/// `limit`: an integer number of packets or a buffer string.
pub(super) fn limit(v: &Value, path: &str, rate: Rate) -> Result<u32, ScenarioError> {
    params::limit(v, path, rate, example_for(path))
}

/// A duration (`"5ms"`); zero allowed.
pub(super) fn time(v: &Value, path: &str) -> Result<Dur, ScenarioError> {
    params::time(v, path, example_for(path))
}

/// A duration above zero.
pub(super) fn positive_time(v: &Value, path: &str) -> Result<Dur, ScenarioError> {
    params::positive_time(v, path, example_for(path))
}

/// The example for the codel / fq_codel key at the end of `path`.
fn example_for(path: &str) -> &'static str {
    example(path.rsplit('.').next().unwrap_or("")).unwrap_or(r#""5ms""#)
}

/// A valid value for a codel / fq_codel key, for error messages.
fn example(key: &str) -> Option<&'static str> {
    Some(match key {
        "limit" => "1000",
        "target" => r#""5ms""#,
        "interval" => r#""100ms""#,
        "ecn" => "true",
        "ce_threshold" => r#""1ms""#,
        "flows" => "1024",
        "quantum" => "1514",
        "ce_threshold_selector" => r#""ect1""#,
        "memory_limit" => r#""32MiB""#,
        "drop_batch" => "64",
        "hash_seed" => "1",
        _ => return None,
    })
}

/// Attach the example for the key at the end of the error's path to a bad
/// value or a wrong type that has none yet (the generic examples do not know
/// these keys).
pub(super) fn with_example(e: ScenarioError) -> ScenarioError {
    let key = match &e {
        ScenarioError::Invalid { path, .. } => path.rsplit('.').next().unwrap_or(""),
        _ => return e,
    };
    match example(key) {
        Some(ex) => params::with_example(e, ex),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_and_time_buffers_become_packets() {
        assert_eq!(packets_of(BufferLimit::Packets(7)), 7);
        assert_eq!(packets_of(BufferLimit::Bytes(150_000)), 100);
        assert_eq!(packets_of(BufferLimit::Bytes(1_400)), 1);
        assert_eq!(
            packets_of(BufferLimit::Time {
                time: Dur::from_millis(50),
                bytes: 125_000
            }),
            83
        );
    }
}
