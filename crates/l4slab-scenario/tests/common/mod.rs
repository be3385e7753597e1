//! Shared helpers for the integration tests.
#![allow(dead_code)]

use l4slab_scenario::{parse_with, ParseOptions, Scenario, ScenarioError};

/// The congestion controls the tests pretend exist.
pub const CC: &[&str] = &["reno", "cubic"];

pub fn opts() -> ParseOptions<'static> {
    ParseOptions {
        known_cc: CC.to_vec(),
        trace_dirs: vec![],
    }
}

/// The smallest valid scenario: one default flow over a 20 Mbit/s bottleneck.
pub const BASE: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"

[[flows]]
"#;

pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_with(text, "test.toml", &[], &opts())
}

/// `text` with `--set` overrides.
pub fn parse_set(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_with(text, "test.toml", &sets, &opts())
}

/// BASE with `--set` overrides, expected to parse.
pub fn base_with(sets: &[&str]) -> Scenario {
    parse_set(BASE, sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"))
}

/// The repository's `scenarios/` folder.
pub fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}
