//! `[[flows]] cc` -> [`CcSpec`]: the one dispatch on the congestion-control
//! name (a Linux `tcp_congestion_control` name), then one generic reader for
//! its options table, driven by the controller's declarations
//! ([`l4slab_cc::param::params`]): which keys the kind accepts (the Linux
//! module parameters without the module prefix), how each is read and
//! checked (its [`Kind`] and range), and the example in its errors (its
//! default). A key of another kind is an unknown key.
//!
//! ```toml
//! cc = "prague"                                        # defaults
//! cc = { kind = "prague", rtt_scaling = "none" }       # one option set
//! cc = { kind = "cubic", hystart = false, beta = 0.5 }
//! ```
//!
//! Options are overrides: what is not written keeps the controller's
//! default and is not recorded. Values are in scenario units — fractions as
//! `0.7` or `"70%"`, durations as `"25ms"`, gains as factors — never Linux's
//! fixed-point integers; an integer where Linux takes a scaled one (`beta =
//! 717`, `alpha_on_init = 1024`) is refused as ambiguous, like tc-pie's gains.

use toml::Value;

use l4slab_cc::options::CcOptions;
use l4slab_cc::param::{Kind, Param, ParamValue};

use crate::error::{Problem, ScenarioError};
use crate::model::CcSpec;
use crate::qdisc::params::{bad_value, choice, flag, number, positive_time, time, with_example};
use crate::values::{self, join, kind_of};

/// `cc` at `path` (`flows[0].cc`); absent = `reno`. `known` are the names
/// the backend accepts (`ParseOptions::known_cc`).
pub(crate) fn resolve(
    value: Option<&Value>,
    path: &str,
    known: &[&str],
) -> Result<CcSpec, ScenarioError> {
    let default = Value::String("reno".into());
    let value = value.unwrap_or(&default);
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(mut options) = CcOptions::defaults(kind).filter(|_| known.contains(&kind)) else {
        return Err(ScenarioError::unknown_name(
            &kind_path,
            "congestion control",
            kind,
            known,
        ));
    };
    let Value::Table(table) = value else {
        return Ok(CcSpec::new(options));
    };
    let params = options.params();
    // Unknown keys first (as serde's `deny_unknown_fields` would), listing
    // the kind's keys in declaration order.
    if let Some(key) = table
        .keys()
        .find(|k| *k != "kind" && !params.iter().any(|p| p.name == k.as_str()))
    {
        let valid: Vec<&str> = std::iter::once("kind")
            .chain(params.iter().map(|p| p.name))
            .collect();
        return Err(ScenarioError::invalid(
            &join(path, key),
            Problem::UnknownKey,
            format!("unknown key; valid keys here: {}", valid.join(", ")),
            None,
        ));
    }
    for p in params {
        if let Some(v) = table.get(p.name) {
            let value = read(p, v, &join(path, p.name))?;
            assert!(options.set(p.name, value), "{kind} declares {}", p.name);
        }
    }
    Ok(CcSpec::new(options))
}

/// The value of the option declared by `p`, written `v` at `path`: read by
/// its kind, checked against its range, errors with its example.
fn read(p: &Param, v: &Value, path: &str) -> Result<ParamValue, ScenarioError> {
    let ex = &p.example();
    let value = match p.kind {
        Kind::Int { .. } => match v {
            Value::Integer(i) => ParamValue::Int(*i),
            other => {
                return Err(crate::qdisc::params::wrong_type(
                    path,
                    "an integer",
                    other,
                    ex,
                ))
            }
        },
        Kind::Fraction { .. } => {
            // An integer where Linux takes a scaled one (`beta = 717`) is
            // ambiguous, like tc-pie's gains.
            if let (Value::Integer(i), Some(units)) = (v, p.linux_units()) {
                if *i != 0 {
                    return Err(bad_value(
                        path,
                        format!("{i} is ambiguous: {units}; give a fraction"),
                        ex,
                    ));
                }
            }
            ParamValue::Num(values::fraction(v, path).map_err(|e| with_example(e, ex))?)
        }
        Kind::Number { .. } | Kind::Gain { .. } => ParamValue::Num(number(v, path, ex)?),
        Kind::Duration { zero_ok: true } => ParamValue::Dur(time(v, path, ex)?),
        Kind::Duration { zero_ok: false } => ParamValue::Dur(positive_time(v, path, ex)?),
        Kind::Flag => ParamValue::Flag(flag(v, path)?),
        Kind::Choice(names) => {
            let name = choice(v, path, p.name, names)?;
            let i = names.iter().position(|n| *n == name).expect("a choice");
            ParamValue::Choice(names[i])
        }
    };
    p.check(value)
        .map_err(|e| bad_value(path, e.message(), ex))?;
    Ok(value)
}
