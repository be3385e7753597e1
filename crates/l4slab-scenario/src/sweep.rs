//! `[sweep]`: the grid of runs `l4slab sweep` makes of a scenario file
//! (docs/sweeps.md).
//!
//! ```toml
//! [sweep]
//! grid = { "bottleneck.qdisc" = ["dualpi2", "fq_codel"], "flows[0].cc" = ["prague", "cubic"] }
//! seeds = 3            # seeds 1, 2, 3; or a list: seeds = [1, 7, 42]
//! ```
//!
//! Each grid key is a key path, as `--set` takes it; each value is one
//! override of that key. The table is not part of the resolved scenario: the
//! file's base scenario (what `l4slab run` runs) is the same with or without
//! it, and so is every cell's, whether its grid came from the file or from
//! `l4slab sweep --grid`. The Python sweep reads the table itself, expands
//! the grid and checks every cell by resolving it; this module checks the
//! table's shape, so a typo in it is an error with its key path wherever the
//! file is read.

use std::collections::BTreeSet;

use serde::Deserialize;
use toml::{Table, Value};

use crate::error::{Problem, ScenarioError};
use crate::overrides;
use crate::values::describe;

/// `[sweep]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawSweep {
    /// Key path -> the values it takes, one cell per combination.
    pub grid: Option<Table>,
    /// A number of seeds (1..=N) or the list of seeds.
    pub seeds: Option<Value>,
}

const GRID_EXAMPLE: &str = r#"grid = { "bottleneck.qdisc" = ["dualpi2", "fq_codel"] }"#;
const SEEDS_EXAMPLE: &str = "seeds = 3 (seeds 1, 2, 3) or seeds = [1, 7, 42]";

/// Check the shape of `[sweep]`: grid keys are key paths (not `seed`, not
/// `sweep`), each with a non-empty list of distinct values; `seeds` is a
/// positive count or a non-empty list of distinct seeds.
pub(crate) fn check(sweep: Option<&RawSweep>) -> Result<(), ScenarioError> {
    let Some(sweep) = sweep else { return Ok(()) };
    if let Some(grid) = &sweep.grid {
        for (key, values) in grid {
            check_key(key, values)?;
        }
    }
    if let Some(seeds) = &sweep.seeds {
        check_seeds(seeds)?;
    }
    Ok(())
}

fn check_key(key: &str, values: &Value) -> Result<(), ScenarioError> {
    let path = format!("sweep.grid.{}", quoted(key));
    let invalid = |path: &str, message: String, example: Option<String>| {
        ScenarioError::invalid(path, Problem::BadValue, message, example)
    };
    if let Err(message) = overrides::check_path(key) {
        return Err(invalid(&path, message, Some(GRID_EXAMPLE.into())));
    }
    let first = key.split(['.', '[']).next().unwrap_or("");
    if first == "seed" {
        return Err(invalid(
            &path,
            "seeds are not a grid key".into(),
            Some("seeds = 3 under [sweep]".into()),
        ));
    }
    if first == "sweep" {
        return Err(invalid(
            &path,
            "a sweep cannot vary its own table".into(),
            Some(GRID_EXAMPLE.into()),
        ));
    }
    let Value::Array(list) = values else {
        return Err(ScenarioError::invalid(
            &path,
            Problem::WrongType,
            format!("expected a list of values, found {}", describe(values)),
            Some(format!("{} = [...] inside grid = {{ ... }}", quoted(key))),
        ));
    };
    if list.is_empty() {
        return Err(invalid(
            &path,
            "the list is empty; give at least one value".into(),
            Some(GRID_EXAMPLE.into()),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if let Value::Datetime(_) = v {
            return Err(ScenarioError::wrong_type(&at, "a value", &describe(v)));
        }
        if !seen.insert(v.to_string()) {
            return Err(invalid(
                &at,
                format!("{v} is listed twice; each value makes its own cells"),
                None,
            ));
        }
    }
    Ok(())
}

fn check_seeds(seeds: &Value) -> Result<(), ScenarioError> {
    let invalid = |path: &str, message: String| {
        ScenarioError::invalid(path, Problem::BadValue, message, Some(SEEDS_EXAMPLE.into()))
    };
    match seeds {
        Value::Integer(n) if *n >= 1 => Ok(()),
        Value::Integer(n) => Err(invalid(
            "sweep.seeds",
            format!("{n} seeds: give at least 1"),
        )),
        Value::Array(list) if list.is_empty() => {
            Err(invalid("sweep.seeds", "the list is empty".into()))
        }
        Value::Array(list) => {
            let mut seen = BTreeSet::new();
            for (i, v) in list.iter().enumerate() {
                let at = format!("sweep.seeds[{i}]");
                match v {
                    Value::Integer(s) if *s >= 0 => {
                        if !seen.insert(*s) {
                            return Err(invalid(&at, format!("seed {s} is listed twice")));
                        }
                    }
                    Value::Integer(s) => {
                        return Err(invalid(
                            &at,
                            format!("{s} is out of range; a seed is an integer from 0 to 2^63-1"),
                        ))
                    }
                    other => {
                        return Err(ScenarioError::invalid(
                            &at,
                            Problem::WrongType,
                            format!("expected an integer, found {}", describe(other)),
                            Some(SEEDS_EXAMPLE.into()),
                        ))
                    }
                }
            }
            Ok(())
        }
        other => Err(ScenarioError::invalid(
            "sweep.seeds",
            Problem::WrongType,
            format!(
                "expected a number of seeds or a list of seeds, found {}",
                describe(other)
            ),
            Some(SEEDS_EXAMPLE.into()),
        )),
    }
}

/// A key as TOML writes it in a path: bare if it can be, else quoted
/// (`"bottleneck.qdisc"`).
fn quoted(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse_with, ParseOptions};

    const BASE: &str = "format = 1\nduration = '1s'\n[bottleneck]\nrate = '10Mbit'\n\
                        delay = '5ms'\nbuffer = '50pkt'\n[[flows]]\ncc = 'reno'\n";

    fn parse(sweep: &str) -> Result<crate::Scenario, String> {
        let opts = ParseOptions {
            known_cc: vec!["reno", "cubic"],
            trace_dirs: vec![],
        };
        // A table goes after the base scenario, a top-level key before it.
        let text = if sweep.starts_with('[') || sweep.is_empty() {
            format!("{BASE}{sweep}")
        } else {
            format!("{sweep}{BASE}")
        };
        parse_with(&text, "s.toml", &[], &opts).map_err(|e| e.to_string())
    }

    #[test]
    fn a_sweep_table_leaves_the_scenario_as_it_is() {
        let with = parse(
            "[sweep]\ngrid = { \"bottleneck.qdisc\" = [\"fifo\", \"dualpi2\"], \
             \"flows[0].cc\" = [\"reno\", \"cubic\"] }\nseeds = 3\n",
        )
        .unwrap();
        let without = parse("").unwrap();
        assert_eq!(
            serde_json::to_string(&with).unwrap(),
            serde_json::to_string(&without).unwrap()
        );
        parse("[sweep]\nseeds = [1, 7, 42]\n").unwrap();
        parse("[sweep]\n").unwrap();
    }

    #[test]
    fn mistakes_name_their_key_path() {
        let cases = [
            ("[sweep]\ngird = {}\n", "sweep.gird: unknown key; valid keys here: grid, seeds"),
            (
                "[sweep]\ngrid = { \"bottleneck.qdisc\" = \"fifo\" }\n",
                "sweep.grid.\"bottleneck.qdisc\": expected a list of values, found a string (\"fifo\")",
            ),
            (
                "[sweep]\ngrid = { \"bottleneck.qdisc\" = [] }\n",
                "sweep.grid.\"bottleneck.qdisc\": the list is empty",
            ),
            (
                "[sweep]\ngrid = { \"bottleneck.qdisc\" = [\"fifo\", \"fifo\"] }\n",
                "sweep.grid.\"bottleneck.qdisc\"[1]: \"fifo\" is listed twice",
            ),
            (
                "[sweep]\ngrid = { \"flows[x].cc\" = [\"reno\"] }\n",
                "sweep.grid.\"flows[x].cc\": bad index in 'flows[x]'",
            ),
            (
                "[sweep]\ngrid = { seed = [1, 2] }\n",
                "sweep.grid.seed: seeds are not a grid key; write e.g. seeds = 3 under [sweep]",
            ),
            ("[sweep]\nseeds = 0\n", "sweep.seeds: 0 seeds: give at least 1"),
            ("[sweep]\nseeds = [1, 1]\n", "sweep.seeds[1]: seed 1 is listed twice"),
            (
                "[sweep]\nseeds = \"3\"\n",
                "sweep.seeds: expected a number of seeds or a list of seeds, found a string",
            ),
            ("sweep = 3\n", "sweep: expected a table, found an integer (3)"),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err();
            assert!(
                e.starts_with(expected),
                "{text}\n  got: {e}\n want: {expected}"
            );
        }
    }
}
