//! `qdisc = { kind = "fq_codel", ..., ce_threshold_selector = "ect1" }`: the
//! one `fq_codel` key no declaration describes; the others are declared in
//! [`l4slab_qdisc::fq_codel::PARAMS`] and set by the generic resolver
//! ([`super::resolve`]). Ranges are Linux's (`fq_codel_change`), except that
//! Linux silently raises a `quantum` below 256, a `drop_batch` of 0 and caps
//! `memory_limit` at 2 GiB, where l4slab rejects the value.
//!
//! `ce_threshold_selector` takes tc's `VALUE/MASK` over the IP DS field
//! (`"0x1/0x3"`) or the name `"ect1"` (= `0x1/0x3`, ECT(1) only). Our packets
//! carry no DSCP (it reads as 0). l4slab extension: `hash_seed` (integer), the
//! seed of the flow hash, which stands in for Linux's per-boot random seed.

use toml::Value;

use l4slab_qdisc::fq_codel::{CE_THRESHOLD, CE_THRESHOLD_SELECTOR};
use l4slab_qdisc::{CeSelector, FqCodelConfig};

use super::params::{with_example, wrong_type};
use crate::error::ScenarioError;
use crate::param::Values;

/// `ce_threshold_selector`, after the declared keys were set.
pub(super) fn resolve_custom(cfg: &mut FqCodelConfig, v: &Values) -> Result<(), ScenarioError> {
    // A custom reader: tc's VALUE/MASK or a name (no generic kind).
    if let Some((_, x)) = v.raw(&CE_THRESHOLD_SELECTOR) {
        let sp = v.path_of(&CE_THRESHOLD_SELECTOR);
        let example = CE_THRESHOLD_SELECTOR.example();
        if cfg.ce_threshold.is_none() {
            return Err(with_example(
                ScenarioError::conflict(
                    &sp,
                    format!(
                        "has no effect without ce_threshold; add e.g. ce_threshold = {}",
                        CE_THRESHOLD.example()
                    ),
                ),
                &example,
            ));
        }
        let Value::String(s) = x else {
            return Err(wrong_type(&sp, "a string", x, &example));
        };
        cfg.ce_threshold_selector = Some(selector(s, &sp)?);
    }
    Ok(())
}

/// `"ect1"` or tc's `VALUE/MASK` (each hex `0x..` or decimal, at most 0xff).
fn selector(text: &str, path: &str) -> Result<CeSelector, ScenarioError> {
    let bad = |msg: String| {
        with_example(
            ScenarioError::bad_value(path, msg),
            &CE_THRESHOLD_SELECTOR.example(),
        )
    };
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
