//! The one generic reader of declared parameters ([`l4slab_core::param`]),
//! shared by the congestion-control options (`crate::cc`), the queue
//! disciplines (`crate::qdisc`), the apps (`crate::app`), `[flows.transport]`
//! (`crate::flows`, by `l4slab_tcp::config::PARAMS`) and the link tables
//! (`crate::link`, by `l4slab_link::config::PARAMS`): which keys a table
//! accepts (the declared names and aliases, plus `kind`), how each value is
//! read and checked (its
//! [`Kind`] and range), and the example in its errors (its default, or an
//! unset default's example).
//!
//! [`Kind::Custom`] parameters are only accepted as keys here; their
//! resolver reads them ([`Values::raw`]).

use toml::value::Table;
use toml::Value;

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::Rate;

use crate::error::{Problem, ScenarioError};
use crate::link::buffer_limit;
use crate::model::BufferLimit;
use crate::qdisc::params::{
    bad_value, choice, flag, number, positive_time, time, with_example, wrong_type,
};
use crate::values::{self, join};

/// A table's declared values, read and checked.
pub(crate) struct Values<'t> {
    table: &'t Table,
    path: String,
    params: &'static [Param],
    read: Vec<(&'static str, ParamValue)>,
}

impl<'t> Values<'t> {
    /// The value written for `p`, if any; panics if `p` is not one of the
    /// table's declarations or is custom (a resolver bug).
    pub(crate) fn get(&self, p: &Param) -> Option<ParamValue> {
        self.check_declared(p);
        assert!(
            !matches!(p.kind, Kind::Custom(_)),
            "{} is custom: read it with raw()",
            p.name
        );
        self.read
            .iter()
            .find(|(n, _)| *n == p.name)
            .map(|(_, v)| *v)
    }

    /// The key as written for `p` (its name or an alias) and its raw value.
    pub(crate) fn raw(&self, p: &Param) -> Option<(&'t str, &'t Value)> {
        self.check_declared(p);
        self.table
            .iter()
            .find(|(k, _)| p.is_named(k))
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Whether the table has a key for `p`.
    pub(crate) fn has(&self, p: &Param) -> bool {
        self.raw(p).is_some()
    }

    /// The path of `p`'s key as written (`bottleneck.qdisc.c_protection`),
    /// or under its name.
    pub(crate) fn path_of(&self, p: &Param) -> String {
        join(&self.path, self.raw(p).map_or(p.name, |(k, _)| k))
    }

    fn check_declared(&self, p: &Param) {
        assert!(
            self.params.iter().any(|q| q.name == p.name),
            "{} is not declared here",
            p.name
        );
    }
}

/// Read `table` (at `path`) by the declarations `params`: unknown keys first
/// (as serde's `deny_unknown_fields` would), listing `kind` and the declared
/// names in declaration order; a parameter written under two of its names
/// is a conflict; then each value by its kind. `rate` converts a
/// [`Kind::Limit`] written as a time; `None` where no limit is declared.
pub(crate) fn read_table<'t>(
    table: &'t Table,
    path: &str,
    params: &'static [Param],
    rate: Option<Rate>,
) -> Result<Values<'t>, ScenarioError> {
    read_keys(table, path, params, rate, &["kind"])
}

/// [`read_table`] for a table whose undeclared keys are `own` (read by the
/// resolver: `kind`, or `[flows.transport]`'s `protocol`), listed first in
/// the unknown-key error when `own` is `kind`, last otherwise.
pub(crate) fn read_keys<'t>(
    table: &'t Table,
    path: &str,
    params: &'static [Param],
    rate: Option<Rate>,
    own: &[&'static str],
) -> Result<Values<'t>, ScenarioError> {
    check_keys(table, path, params, own)?;
    let mut values = Vec::new();
    for p in params {
        let mut keys = table.iter().filter(|(k, _)| p.is_named(k));
        let Some((key, v)) = keys.next() else {
            continue;
        };
        if let Some((other, _)) = keys.next() {
            return Err(ScenarioError::invalid(
                &join(path, other),
                Problem::Conflict,
                format!("{key} and {other} are the same parameter; give one"),
                Some(format!("{} = {}", p.name, p.example())),
            ));
        }
        if !matches!(p.kind, Kind::Custom(_)) {
            values.push((p.name, read(p, v, &join(path, key), rate)?));
        }
    }
    Ok(Values {
        table,
        path: path.to_string(),
        params,
        read: values,
    })
}

/// The first key of `table` (at `path`) that is neither declared in
/// `params` (a name or an alias) nor one of `own`, as an error listing the
/// valid keys (as serde's `deny_unknown_fields` would): `own` first when it
/// is `kind`, last otherwise.
pub(crate) fn check_keys(
    table: &Table,
    path: &str,
    params: &[Param],
    own: &[&'static str],
) -> Result<(), ScenarioError> {
    if let Some(key) = table
        .keys()
        .find(|k| !own.contains(&k.as_str()) && !params.iter().any(|p| p.is_named(k)))
    {
        let declared = params.iter().map(|p| p.name);
        let valid: Vec<&str> = if own == ["kind"] {
            own.iter().copied().chain(declared).collect()
        } else {
            declared.chain(own.iter().copied()).collect()
        };
        return Err(ScenarioError::invalid(
            &join(path, key),
            Problem::UnknownKey,
            format!("unknown key; valid keys here: {}", valid.join(", ")),
            None,
        ));
    }
    Ok(())
}

/// The value of the parameter declared by `p`, written `v` at `path`: read
/// by its kind, checked against its range, errors with its example.
pub(crate) fn read(
    p: &Param,
    v: &Value,
    path: &str,
    rate: Option<Rate>,
) -> Result<ParamValue, ScenarioError> {
    let ex = &p.example();
    let int = |what: &str| match v {
        Value::Integer(i) => Ok(ParamValue::Int(*i)),
        other => Err(wrong_type(path, what, other, ex)),
    };
    let value = match p.kind {
        Kind::Int { .. } => int("an integer")?,
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
        Kind::Hz { .. } => {
            if let (Value::Integer(i), Some(units)) = (v, p.linux_units()) {
                return Err(bad_value(
                    path,
                    format!("{i} is ambiguous: {units}; give the gain in Hz as a float"),
                    ex,
                ));
            }
            ParamValue::Num(number(v, path, ex)?)
        }
        Kind::Number { .. } | Kind::Gain { .. } => ParamValue::Num(number(v, path, ex)?),
        Kind::Duration { zero_ok: true } => ParamValue::Dur(time(v, path, ex)?),
        Kind::Duration { zero_ok: false } => ParamValue::Dur(positive_time(v, path, ex)?),
        Kind::Limit => match v {
            Value::Integer(i) => ParamValue::Int(*i),
            v => {
                let rate = rate.unwrap_or_else(|| panic!("{}: a limit needs the rate", p.name));
                let packets = values::buffer(v, path)
                    .and_then(|b| buffer_limit(b, rate, path))
                    .map(BufferLimit::packets)
                    .map_err(|e| with_example(e, ex))?;
                ParamValue::Int(packets.into())
            }
        },
        Kind::Bytes { .. } => match v {
            Value::Integer(i) => ParamValue::Int(*i),
            v => {
                let n = values::size(v, path).map_err(|e| with_example(e, ex))?;
                ParamValue::Int(i64::try_from(n).unwrap_or(i64::MAX))
            }
        },
        // An app's size or rate: the unit is required; the example is the
        // parameter's, whatever the generic one for the key.
        Kind::Size { .. } => {
            let n = values::size(v, path).map_err(|e| with_example(e, ex).with_example(ex))?;
            ParamValue::Int(i64::try_from(n).unwrap_or(i64::MAX))
        }
        Kind::Rate => ParamValue::Rate(
            values::positive_rate(v, path).map_err(|e| with_example(e, ex).with_example(ex))?,
        ),
        Kind::Percent { .. } => match v {
            Value::Integer(i) => ParamValue::Int(*i),
            v => {
                let pct = values::fraction(v, path).map_err(|e| with_example(e, ex))? * 100.0;
                if (pct - pct.round()).abs() > 1e-9 {
                    return Err(bad_value(
                        path,
                        format!(
                            "{pct}% is not a whole percentage (tc's {} is an integer)",
                            p.linux
                        ),
                        ex,
                    ));
                }
                ParamValue::Int(pct.round() as i64)
            }
        },
        Kind::Flag => ParamValue::Flag(flag(v, path)?),
        Kind::Choice(names) => {
            let name = choice(v, path, p.name, names)?;
            let i = names.iter().position(|n| *n == name).expect("a choice");
            ParamValue::Choice(names[i])
        }
        Kind::Custom(_) => panic!("{}: a custom parameter is read by its resolver", p.name),
    };
    p.check(value)
        .map_err(|e| bad_value(path, e.message(), ex))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use l4slab_core::Dur;

    use crate::error::Problem;
    use crate::model::{BufferLimit, QdiscSpec};

    fn resolve(text: &str) -> Result<QdiscSpec, crate::error::ScenarioError> {
        let v: toml::Table = toml::from_str(&format!("q = {text}")).expect("toml");
        crate::qdisc::resolve(
            &v["q"],
            "bottleneck.qdisc",
            BufferLimit::Packets(100),
            l4slab_core::Rate::from_mbps(10),
        )
    }

    #[test]
    fn an_alias_is_read_as_its_parameter_and_named_as_written() {
        let QdiscSpec::Pie(c) = resolve(r#"{ kind = "pie", burst = "20ms" }"#).unwrap() else {
            panic!("pie")
        };
        assert_eq!(c.max_burst, Dur::from_millis(20));
        let e = resolve(r#"{ kind = "dualpi2", scheduler = "ts_fifo", c_protection = "5%" }"#)
            .unwrap_err();
        assert_eq!(e.path(), Some("bottleneck.qdisc.c_protection"));
        assert_eq!(e.problem(), Some(Problem::Conflict));
    }

    #[test]
    fn a_parameter_under_two_names_is_a_conflict() {
        let e =
            resolve(r#"{ kind = "dualpi2", memlimit = "1MB", memory_limit = "2MB" }"#).unwrap_err();
        assert_eq!(e.problem(), Some(Problem::Conflict));
        assert_eq!(
            e.to_string(),
            "bottleneck.qdisc.memory_limit: memlimit and memory_limit are the same parameter; \
             give one; write e.g. memlimit = \"30MB\""
        );
    }

    #[test]
    fn percentages_and_sizes_take_both_forms() {
        let QdiscSpec::FqPie(c) =
            resolve(r#"{ kind = "fq_pie", ecn_prob = "30%", memory_limit = 2048 }"#).unwrap()
        else {
            panic!("fq_pie")
        };
        assert_eq!((c.ecn_prob, c.memory_limit), (30, 2048));
        let e = resolve(r#"{ kind = "fq_pie", ecn_prob = "12.5%" }"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("12.5% is not a whole percentage (tc's ecn_prob is an integer)"),
            "{e}"
        );
    }
}
