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

use crate::error::{Problem, ScenarioError};
use crate::link::buffer_limit;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{self, deserialize_at, join};

/// Bytes per packet when a byte or time buffer becomes a tc packet limit
/// (REFERENCES.md: 1 packet = 1500 B on the wire).
pub(super) const PACKET_BYTES: u64 = 1500;

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

/// A resolved buffer as a tc packet limit: packets as is, bytes at
/// [`PACKET_BYTES`] per packet, at least 1.
pub(super) fn packets_of(buffer: BufferLimit) -> u32 {
    match buffer {
        BufferLimit::Packets(n) => n,
        BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => {
            u32::try_from(b / PACKET_BYTES).unwrap_or(u32::MAX).max(1)
        }
    }
}

/// `limit`: an integer number of packets or a buffer string.
pub(super) fn limit(v: &Value, path: &str, rate: Rate) -> Result<u32, ScenarioError> {
    match v {
        Value::Integer(i) => values::int_in(*i, path, 1, i64::from(u32::MAX)).map(|n| n as u32),
        v => values::buffer(v, path)
            .and_then(|b| buffer_limit(b, rate, path))
            .map(packets_of),
    }
    .map_err(with_example)
}

/// A duration (`"5ms"`); zero allowed.
pub(super) fn time(v: &Value, path: &str) -> Result<Dur, ScenarioError> {
    values::duration(v, path).map_err(with_example)
}

/// A duration above zero.
pub(super) fn positive_time(v: &Value, path: &str) -> Result<Dur, ScenarioError> {
    values::positive_duration(v, path).map_err(with_example)
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
    match e {
        ScenarioError::Invalid {
            path,
            problem: problem @ (Problem::BadValue | Problem::WrongType),
            message,
            example: None,
        } => {
            let key = path.rsplit('.').next().unwrap_or("");
            let example = example(key).map(str::to_string);
            ScenarioError::Invalid {
                path,
                problem,
                message,
                example,
            }
        }
        other => other,
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
