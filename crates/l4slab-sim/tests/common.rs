//! Helpers shared by the behaviour tests: build a scenario from TOML text and run it.
#![allow(dead_code)]

use l4slab_scenario::{parse_with, ParseOptions, Scenario};
use l4slab_sim::{run, RunOptions, RunOutput};

pub fn scenario(toml: &str, overrides: &[&str]) -> Scenario {
    let opts = ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    parse_with(toml, "test", &ov, &opts).unwrap_or_else(|e| panic!("bad test scenario: {e}"))
}

pub fn run_toml(toml: &str, overrides: &[&str]) -> RunOutput {
    let scn = scenario(toml, overrides);
    run(&scn, &RunOptions::default(), &mut |_| true).expect("run")
}

pub fn flow<'a>(out: &'a RunOutput, name: &str) -> &'a serde_json::Value {
    &out.summary["flows"][name]
}

pub fn f64_of(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The values of series `series` (e.g. `flow/f`), key `key`, in time order.
pub fn series(out: &RunOutput, series: &str, key: &str) -> Vec<f64> {
    let s = &out.series;
    (0..s.len())
        .filter(|&i| s.name(s.series[i]) == series && s.name(s.key[i]) == key)
        .map(|i| s.value[i])
        .collect()
}
