//! `qdisc = "fq_codel"` or `{ kind = "fq_codel", limit = 10240, flows = 1024,
//! target = "5ms", interval = "100ms", quantum = 1514, ecn = true,
//! ce_threshold = "1ms", ce_threshold_selector = "ect1", memory_limit =
//! "32MiB", drop_batch = 64 }`: Linux `fq_codel` with the `tc-fq_codel(8)`
//! parameter names and Linux defaults ([`l4slab_qdisc::FqCodelConfig::default`]).
//!
//! `limit` works as for `codel` (packets; the direction's `buffer` by
//! default). Ranges are Linux's (`fq_codel_change`), except that Linux
//! silently raises a `quantum` below 256, a `drop_batch` of 0 and caps
//! `memory_limit` at 2 GiB, where l4slab rejects the value.
//!
//! `ce_threshold_selector` takes tc's `VALUE/MASK` over the IP DS field
//! (`"0x1/0x3"`) or the name `"ect1"` (= `0x1/0x3`, ECT(1) only). Our packets
//! carry no DSCP (it reads as 0). l4slab extension: `hash_seed` (integer), the
//! seed of the flow hash, which stands in for Linux's per-boot random seed.

use serde::Deserialize;
use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::fq_codel::{MAX_FLOWS, MAX_QUANTUM, MIN_QUANTUM};
use l4slab_qdisc::{CeSelector, FqCodelConfig};

use super::codel::{limit, positive_time, time, with_example};
use super::params::packets_of;
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{self, deserialize_at, join};

/// Largest `memory_limit` Linux keeps (`min(1U << 31, ...)` in `fq_codel_change`).
const MAX_MEMORY_LIMIT: u64 = 1 << 31;

/// `qdisc = { kind = "fq_codel", ... }`: the `tc-fq_codel(8)` knobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct FqCodelTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    limit: Option<Value>,
    flows: Option<i64>,
    target: Option<Value>,
    interval: Option<Value>,
    quantum: Option<Value>,
    ecn: Option<bool>,
    ce_threshold: Option<Value>,
    ce_threshold_selector: Option<String>,
    memory_limit: Option<Value>,
    drop_batch: Option<i64>,
    hash_seed: Option<i64>,
}

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = FqCodelConfig {
        limit: packets_of(buffer),
        ..FqCodelConfig::default()
    };
    let Value::Table(_) = value else {
        return Ok(QdiscSpec::FqCodel(cfg));
    };
    let t: FqCodelTable = deserialize_at(value.clone(), path).map_err(with_example)?;
    let p = |key: &str| join(path, key);
    if let Some(v) = &t.limit {
        cfg.limit = limit(v, &p("limit"), rate)?;
    }
    if let Some(n) = t.flows {
        // fq_codel_change: `if (!q->flows_cnt || q->flows_cnt > 65536) return -EINVAL;`
        cfg.flows = int_in(n, &p("flows"), 1, i64::from(MAX_FLOWS))? as u32;
    }
    if let Some(v) = &t.target {
        cfg.target = positive_time(v, &p("target"))?;
    }
    if let Some(v) = &t.interval {
        cfg.interval = positive_time(v, &p("interval"))?;
    }
    if let Some(v) = &t.quantum {
        let qp = p("quantum");
        let bytes = match v {
            // Always bytes, so a bare integer is not ambiguous.
            Value::Integer(i) => *i,
            v => i64::try_from(values::size(v, &qp).map_err(with_example)?).unwrap_or(i64::MAX),
        };
        cfg.quantum = int_in(bytes, &qp, i64::from(MIN_QUANTUM), i64::from(MAX_QUANTUM))? as u32;
    }
    if let Some(b) = t.ecn {
        cfg.ecn = b;
    }
    if let Some(v) = &t.ce_threshold {
        cfg.ce_threshold = Some(time(v, &p("ce_threshold"))?);
    }
    if let Some(s) = &t.ce_threshold_selector {
        let sp = p("ce_threshold_selector");
        if cfg.ce_threshold.is_none() {
            return Err(with_example(ScenarioError::conflict(
                &sp,
                "has no effect without ce_threshold; add e.g. ce_threshold = \"1ms\"",
            )));
        }
        cfg.ce_threshold_selector = Some(selector(s, &sp)?);
    }
    if let Some(v) = &t.memory_limit {
        let mp = p("memory_limit");
        let bytes = match v {
            Value::Integer(i) => u64::try_from(*i).unwrap_or(0),
            v => values::size(v, &mp).map_err(with_example)?,
        };
        if bytes == 0 || bytes > MAX_MEMORY_LIMIT {
            return Err(with_example(ScenarioError::bad_value(
                &mp,
                format!("{bytes} B is out of range; must be between 1 B and 2GiB (Linux's cap)"),
            )));
        }
        cfg.memory_limit = bytes;
    }
    if let Some(n) = t.drop_batch {
        cfg.drop_batch = int_in(n, &p("drop_batch"), 1, i64::from(u32::MAX))? as u32;
    }
    if let Some(n) = t.hash_seed {
        cfg.hash_seed = int_in(n, &p("hash_seed"), 0, i64::from(u32::MAX))? as u32;
    }
    Ok(QdiscSpec::FqCodel(cfg))
}

fn int_in(v: i64, path: &str, lo: i64, hi: i64) -> Result<u64, ScenarioError> {
    values::int_in(v, path, lo, hi).map_err(with_example)
}

/// `"ect1"` or tc's `VALUE/MASK` (each hex `0x..` or decimal, at most 0xff).
fn selector(text: &str, path: &str) -> Result<CeSelector, ScenarioError> {
    let bad = |msg: String| with_example(ScenarioError::bad_value(path, msg));
    if text.eq_ignore_ascii_case("ect1") {
        return Ok(CeSelector::ECT1);
    }
    let Some((v, m)) = text.split_once('/') else {
        return Err(bad(format!(
            "{text:?} is not a selector; use \"ect1\" or tc's VALUE/MASK such as \"0x1/0x3\""
        )));
    };
    let byte = |s: &str| -> Option<u8> {
        let s = s.trim();
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u8::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        }
    };
    let (Some(value), Some(mask)) = (byte(v), byte(m)) else {
        return Err(bad(format!(
            "{text:?} is not VALUE/MASK with two numbers from 0 to 0xff"
        )));
    };
    if mask == 0 {
        return Err(bad(format!(
            "{text:?}: a zero mask selects nothing (Linux: disabled)"
        )));
    }
    if value & !mask != 0 {
        return Err(bad(format!(
            "{text:?}: VALUE has bits outside MASK, so no packet can match"
        )));
    }
    Ok(CeSelector { value, mask })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_like_tc() {
        assert_eq!(selector("ect1", "p"), Ok(CeSelector::ECT1));
        assert_eq!(selector("0x1/0x3", "p"), Ok(CeSelector::ECT1));
        assert_eq!(
            selector("0x50/0xfc", "p"),
            Ok(CeSelector {
                value: 0x50,
                mask: 0xfc
            })
        );
        assert_eq!(selector("1/1", "p"), Ok(CeSelector { value: 1, mask: 1 }));
        assert!(selector("l4s", "p").is_err());
        assert!(selector("0x100/0x3", "p").is_err());
        assert!(selector("0x1/0x0", "p").is_err());
        assert!(selector("0x3/0x1", "p").is_err());
    }
}
