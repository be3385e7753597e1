//! `qdisc = "pie"` or `{ kind = "pie", limit = 1000, target = "15ms",
//! tupdate = "15ms", alpha = 0.125, beta = 1.25, ecn = true, bytemode = false,
//! dq_rate_estimator = false, max_burst = "150ms" }`: Linux `pie` with the
//! `tc-pie(8)` parameter names and Linux defaults
//! ([`l4slab_qdisc::PieConfig::default`]).
//!
//! * `limit` is in packets, as in tc. Without a `limit` key the direction's
//!   `buffer` is the limit: packets as is, bytes or time at 1500 B per packet
//!   (at least 1). A `limit` key takes an integer or a buffer string.
//! * `alpha` and `beta` are in Hz, as floats: tc's integers are in units of
//!   1/16 Hz (tc `alpha 2` = 0.125 Hz), a wire detail that an integer here
//!   would make ambiguous, so integers are refused.
//! * `max_burst` (alias `burst`) is RFC 8033's MAX_BURST; Linux fixes it at 150 ms.
//!
//! Also the helpers shared with [`super::dualpi2`]: limits, typed values
//! with the examples attached to their errors.

use serde::Deserialize;
use toml::Value;

use l4slab_core::{Dur, Rate};
use l4slab_qdisc::PieConfig;

use crate::error::{Problem, ScenarioError};
use crate::link::buffer_limit;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{self, describe, deserialize_at, join};

/// Bytes per packet when a byte or time buffer becomes a tc packet limit
/// (REFERENCES.md: 1 packet = 1500 B on the wire).
pub(super) const PACKET_BYTES: u64 = 1500;

/// `qdisc = { kind = "pie", ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct PieTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    limit: Option<Value>,
    target: Option<Value>,
    tupdate: Option<Value>,
    alpha: Option<Value>,
    beta: Option<Value>,
    ecn: Option<Value>,
    bytemode: Option<Value>,
    dq_rate_estimator: Option<Value>,
    #[serde(alias = "burst")]
    max_burst: Option<Value>,
}

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = PieConfig {
        limit: packets_of(buffer),
        ..PieConfig::default()
    };
    if let Value::Table(_) = value {
        let t: PieTable = deserialize_at(value.clone(), path)?;
        let p = |key: &str| join(path, key);
        if let Some(v) = &t.limit {
            cfg.limit = limit(v, &p("limit"), rate, "1000")?;
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
    }
    Ok(QdiscSpec::Pie(cfg))
}

/// A tc-pie gain: a non-negative float in Hz. `tc` is the tc integer for the
/// same default, quoted in the error for an integer.
fn pie_gain(v: &Value, path: &str, example: &str, tc: i64) -> Result<f64, ScenarioError> {
    if let Value::Integer(i) = v {
        return Err(bad_value(
            path,
            format!(
                "{i} is ambiguous: tc-pie's integer gains are in 1/16 Hz (tc {tc} = {example} Hz); \
                 give the gain in Hz as a float"
            ),
            example,
        ));
    }
    gain(v, path, example, true)
}

/// A gain in Hz: a finite number, above zero unless `allow_zero`.
pub(super) fn gain(
    v: &Value,
    path: &str,
    example: &str,
    allow_zero: bool,
) -> Result<f64, ScenarioError> {
    let x = number(v, path, example)?;
    if x < 0.0 || (x == 0.0 && !allow_zero) {
        let bound = if allow_zero { "at least 0" } else { "above 0" };
        return Err(bad_value(path, format!("{x} Hz: must be {bound}"), example));
    }
    Ok(x)
}

/// A finite number, integer or float.
pub(super) fn number(v: &Value, path: &str, example: &str) -> Result<f64, ScenarioError> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Float(f) if f.is_finite() => Ok(*f),
        Value::Float(f) => Err(bad_value(path, format!("{f} is not a number"), example)),
        other => Err(wrong_type(path, "a number", other, example)),
    }
}

/// `true` or `false`.
pub(super) fn flag(v: &Value, path: &str) -> Result<bool, ScenarioError> {
    match v {
        Value::Boolean(b) => Ok(*b),
        other => Err(wrong_type(path, "true or false", other, "true")),
    }
}

/// A string naming one of `choices`.
pub(super) fn choice<'v>(
    v: &'v Value,
    path: &str,
    what: &str,
    choices: &[&str],
) -> Result<&'v str, ScenarioError> {
    match v {
        Value::String(s) if choices.contains(&s.as_str()) => Ok(s),
        Value::String(s) => Err(ScenarioError::unknown_name(path, what, s, choices)),
        other => Err(wrong_type(
            path,
            "a string",
            other,
            &format!("{:?}", choices[0]),
        )),
    }
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

/// `limit`: an integer number of packets, or a buffer string at the link rate.
pub(super) fn limit(
    v: &Value,
    path: &str,
    rate: Rate,
    example: &str,
) -> Result<u32, ScenarioError> {
    match v {
        Value::Integer(i) => values::int_in(*i, path, 1, i64::from(u32::MAX)).map(|n| n as u32),
        v => values::buffer(v, path)
            .and_then(|b| buffer_limit(b, rate, path))
            .map(packets_of),
    }
    .map_err(|e| with_example(e, example))
}

/// A duration; zero allowed.
pub(super) fn time(v: &Value, path: &str, example: &str) -> Result<Dur, ScenarioError> {
    values::duration(v, path).map_err(|e| with_example(e, example))
}

/// A duration above zero.
pub(super) fn positive_time(v: &Value, path: &str, example: &str) -> Result<Dur, ScenarioError> {
    values::positive_duration(v, path).map_err(|e| with_example(e, example))
}

pub(super) fn bad_value(path: &str, message: impl Into<String>, example: &str) -> ScenarioError {
    ScenarioError::invalid(path, Problem::BadValue, message, Some(example.to_string()))
}

pub(super) fn wrong_type(
    path: &str,
    expected: &str,
    found: &Value,
    example: &str,
) -> ScenarioError {
    ScenarioError::invalid(
        path,
        Problem::WrongType,
        format!("expected {expected}, found {}", describe(found)),
        Some(example.to_string()),
    )
}

/// Give a bad value or wrong type from the generic helpers (whose examples do
/// not know these keys) the example for this key.
pub(super) fn with_example(e: ScenarioError, example: &str) -> ScenarioError {
    match e {
        ScenarioError::Invalid {
            path,
            problem: problem @ (Problem::BadValue | Problem::WrongType),
            message,
            example: None,
        } => ScenarioError::Invalid {
            path,
            problem,
            message,
            example: Some(example.to_string()),
        },
        other => other,
    }
}
