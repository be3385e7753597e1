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
//! Also [`pie_gain`], shared with [`super::fq_pie`].

use serde::Deserialize;
use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::PieConfig;

use super::params::{bad_value, flag, gain, limit, packets_of, positive_time, time};
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{deserialize_at, join};

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
pub(super) fn pie_gain(
    v: &Value,
    path: &str,
    example: &str,
    tc: i64,
) -> Result<f64, ScenarioError> {
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
