//! Value helpers of the generic parameter reader (`crate::param`) and the
//! qdiscs' custom readers: numbers, durations, flags and choices, each error
//! carrying the example for its key.

use toml::Value;

use l4slab_core::Dur;

use crate::error::{Problem, ScenarioError};
use crate::values::{self, describe};

/// A finite number, integer or float.
pub(crate) fn number(v: &Value, path: &str, example: &str) -> Result<f64, ScenarioError> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Float(f) if f.is_finite() => Ok(*f),
        Value::Float(f) => Err(bad_value(path, format!("{f} is not a number"), example)),
        other => Err(wrong_type(path, "a number", other, example)),
    }
}

/// `true` or `false`.
pub(crate) fn flag(v: &Value, path: &str) -> Result<bool, ScenarioError> {
    match v {
        Value::Boolean(b) => Ok(*b),
        other => Err(wrong_type(path, "true or false", other, "true")),
    }
}

/// A string naming one of `choices`.
pub(crate) fn choice<'v>(
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

/// A duration; zero allowed.
pub(crate) fn time(v: &Value, path: &str, example: &str) -> Result<Dur, ScenarioError> {
    values::duration(v, path).map_err(|e| with_example(e, example))
}

/// A duration above zero.
pub(crate) fn positive_time(v: &Value, path: &str, example: &str) -> Result<Dur, ScenarioError> {
    values::positive_duration(v, path).map_err(|e| with_example(e, example))
}

pub(crate) fn bad_value(path: &str, message: impl Into<String>, example: &str) -> ScenarioError {
    ScenarioError::invalid(path, Problem::BadValue, message, Some(example.to_string()))
}

pub(crate) fn wrong_type(
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
pub(crate) fn with_example(e: ScenarioError, example: &str) -> ScenarioError {
    e.example_if(example, |problem, had| {
        !had && matches!(problem, Problem::BadValue | Problem::WrongType)
    })
}
