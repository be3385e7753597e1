//! Reading one TOML value at a key path as a rate, duration, size, buffer or
//! fraction: the bridge between [`crate::units`] (pure text parsers) and
//! [`ScenarioError`] (which adds the key path and an example).

use serde::de::DeserializeOwned;
use toml::Value;

use l4slab_core::{Dur, Rate};

use crate::error::ScenarioError;
use crate::units::{self, Buffer, UnitError};

/// `base.key`, or `key` at the top level.
pub(crate) fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// A duration for messages, exactly: `30s`, `1500ms`, `250us`, `7ns`.
/// (`Dur`'s `Display` goes through `f64` and can print `30.000000000000004s`.)
pub(crate) use l4slab_core::param::show_dur;

/// `value` described for an error message: `a table`, `an integer (20)`.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("a string ({s:?})"),
        Value::Integer(i) => format!("an integer ({i})"),
        Value::Float(f) => format!("a float ({f})"),
        Value::Boolean(b) => format!("a boolean ({b})"),
        Value::Datetime(d) => format!("a date-time ({d})"),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

/// The text of a value that must carry a unit, or the error for a bare
/// number or a non-string.
fn unit_text<'v>(value: &'v Value, path: &str, what: &str) -> Result<&'v str, ScenarioError> {
    match value {
        Value::String(s) => Ok(s),
        Value::Integer(_) | Value::Float(_) => Err(ScenarioError::bad_value(
            path,
            format!("{value} has no unit (a bare number is ambiguous)"),
        )),
        other => Err(ScenarioError::wrong_type(
            path,
            &format!("{what} as a string"),
            &describe(other),
        )),
    }
}

fn unit_err(path: &str, e: UnitError) -> ScenarioError {
    ScenarioError::bad_value(path, e.to_string())
}

/// A rate: `"20Mbit"`.
pub(crate) fn rate(value: &Value, path: &str) -> Result<Rate, ScenarioError> {
    let text = unit_text(value, path, "a rate")?;
    units::parse_rate(text).map_err(|e| unit_err(path, e))
}

/// A rate that must be above zero.
pub(crate) fn positive_rate(value: &Value, path: &str) -> Result<Rate, ScenarioError> {
    let r = rate(value, path)?;
    if r.as_bps() == 0 {
        return Err(ScenarioError::bad_value(path, "must be greater than zero"));
    }
    Ok(r)
}

/// A duration: `"25ms"`.
pub(crate) fn duration(value: &Value, path: &str) -> Result<Dur, ScenarioError> {
    let text = unit_text(value, path, "a duration")?;
    units::parse_duration(text).map_err(|e| unit_err(path, e))
}

/// A duration that must be above zero.
pub(crate) fn positive_duration(value: &Value, path: &str) -> Result<Dur, ScenarioError> {
    let d = duration(value, path)?;
    if d.is_zero() {
        return Err(ScenarioError::bad_value(path, "must be greater than zero"));
    }
    Ok(d)
}

/// A size in bytes: `"10MB"`.
pub(crate) fn size(value: &Value, path: &str) -> Result<u64, ScenarioError> {
    let text = unit_text(value, path, "a size")?;
    units::parse_size(text).map_err(|e| unit_err(path, e))
}

/// A buffer limit: `"100pkt"`, `"150KB"`, `"50ms"`.
pub(crate) fn buffer(value: &Value, path: &str) -> Result<Buffer, ScenarioError> {
    let text = unit_text(value, path, "a buffer size")?;
    units::parse_buffer(text).map_err(|e| unit_err(path, e))
}

/// A fraction in [0, 1]: `"1%"` or a float such as `0.01`. The integer `0`
/// is accepted; other integers are ambiguous (`1` could mean 1 % or 100 %).
pub(crate) fn fraction(value: &Value, path: &str) -> Result<f64, ScenarioError> {
    match value {
        Value::String(s) => units::parse_fraction(s).map_err(|e| unit_err(path, e)),
        Value::Float(f) => units::fraction_from_number(*f).map_err(|e| unit_err(path, e)),
        Value::Integer(0) => Ok(0.0),
        Value::Integer(i) => Err(ScenarioError::bad_value(
            path,
            format!(
                "{i} is ambiguous (percent or fraction?); use a string with % or a float in [0, 1]"
            ),
        )),
        other => Err(ScenarioError::wrong_type(
            path,
            "a percentage such as \"1%\" or a fraction such as 0.01",
            &describe(other),
        )),
    }
}

/// An integer in `lo..=hi`.
pub(crate) fn int_in(value: i64, path: &str, lo: i64, hi: i64) -> Result<u64, ScenarioError> {
    if value < lo || value > hi {
        let range = if hi == i64::MAX {
            format!("at least {lo}")
        } else {
            format!("between {lo} and {hi}")
        };
        return Err(ScenarioError::bad_value(
            path,
            format!("{value} is out of range; must be {range}"),
        ));
    }
    Ok(value as u64)
}

/// A string naming a kind, from `value` (a bare string) or `value.kind`
/// (a table). Returns the kind and the path it was read from.
pub(crate) fn kind_of<'v>(
    value: &'v Value,
    path: &str,
) -> Result<(&'v str, String), ScenarioError> {
    match value {
        Value::String(s) => Ok((s, path.to_string())),
        Value::Table(t) => {
            let kind_path = join(path, "kind");
            match t.get("kind") {
                None => Err(ScenarioError::missing(&kind_path)),
                Some(Value::String(s)) => Ok((s, kind_path)),
                Some(other) => Err(ScenarioError::wrong_type(
                    &kind_path,
                    "a string",
                    &describe(other),
                )),
            }
        }
        other => Err(ScenarioError::wrong_type(
            path,
            "a name or a table with `kind`",
            &describe(other),
        )),
    }
}

/// Deserialize `value` into `T`, reporting errors under `prefix`.
pub(crate) fn deserialize_at<T: DeserializeOwned>(
    value: Value,
    prefix: &str,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match inner.as_str() {
            "." => prefix.to_string(),
            p if p.starts_with('[') => format!("{prefix}{p}"),
            p => join(prefix, p),
        };
        ScenarioError::from_serde(&path, e.inner().message())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_show_exactly() {
        assert_eq!(show_dur(Dur::from_secs(30)), "30s");
        assert_eq!(show_dur(Dur::from_millis(1500)), "1500ms");
        assert_eq!(show_dur(Dur::from_micros(250)), "250us");
        assert_eq!(show_dur(Dur::from_nanos(7)), "7ns");
        assert_eq!(show_dur(Dur::ZERO), "0s");
    }

    #[test]
    fn bare_numbers_need_units() {
        let e = rate(&Value::Integer(20), "bottleneck.rate").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"bottleneck.rate: 20 has no unit (a bare number is ambiguous); write e.g. "20Mbit""#
        );
        let e = duration(&Value::Float(1.5), "duration").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"duration: 1.5 has no unit (a bare number is ambiguous); write e.g. "30s""#
        );
    }

    #[test]
    fn fractions_from_strings_and_numbers() {
        assert_eq!(fraction(&Value::String("1%".into()), "loss"), Ok(0.01));
        assert_eq!(fraction(&Value::Float(0.25), "loss"), Ok(0.25));
        assert_eq!(fraction(&Value::Integer(0), "loss"), Ok(0.0));
        let e = fraction(&Value::Integer(1), "bottleneck.loss").unwrap_err();
        assert!(e.to_string().contains("ambiguous"), "{e}");
    }

    #[test]
    fn deserialize_at_prefixes_paths() {
        let v: Value = toml::from_str("aifsn = 2\nlimit = 3").unwrap();
        let e = deserialize_at::<crate::raw::RawEdcaParams>(v, "wifi.ap.edca.vo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "wifi.ap.edca.vo.limit: unknown key; valid keys here: aifsn, cw_min, cw_max, txop"
        );
    }
}
