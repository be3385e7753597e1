//! Entry points: scenario text or file (plus `--set` overrides) -> [`Scenario`].
//!
//! Pipeline: TOML syntax ([`toml`], errors with line and column) -> apply
//! overrides on the value tree (`overrides.rs`) -> the raw structs
//! (`raw.rs`: unknown keys and wrong types with key paths) -> resolve
//! and validate (`resolve.rs`).

use std::path::Path;

use toml::{Table, Value};

use crate::error::ScenarioError;
use crate::model::Scenario;
use crate::raw::RawScenario;
use crate::{overrides, resolve, values};

/// What the parser needs from the rest of l4slab.
///
/// ```
/// # use l4slab_scenario::ParseOptions;
/// let opts = ParseOptions { known_cc: vec!["reno"], trace_dirs: vec![] };
/// ```
#[derive(Clone, Debug)]
pub struct ParseOptions<'a> {
    /// Congestion control names a flow may use: the backend's list (e.g.
    /// `l4slab_sim::cc_names().to_vec()`; the emulator's kernel has fewer).
    /// A name not in the list, or not in `l4slab_cc::CC_NAMES` (whose
    /// options this crate resolves), is an error, so an empty list rejects
    /// every flow.
    pub known_cc: Vec<&'a str>,
    /// Directories of the traces l4slab ships, where a bare trace name
    /// (`rate = { trace = "TMobile-LTE-short.down" }`) is looked up after
    /// `$L4SLAB_TRACES` (the Python package passes its own `data/traces`).
    /// Empty: the source tree's [`crate::SOURCE_TRACE_DIR`], for cargo builds.
    pub trace_dirs: Vec<std::path::PathBuf>,
}

/// Parse and resolve scenario `text`, after applying `overrides`
/// (`key.path=value` strings, in order; later ones win).
///
/// `source_name` is used in syntax errors and, when it names a `.toml` file,
/// its stem is the default scenario `name` (otherwise `"scenario"`).
pub fn parse_with(
    text: &str,
    source_name: &str,
    overrides: &[String],
    opts: &ParseOptions<'_>,
) -> Result<Scenario, ScenarioError> {
    let mut table: Table = toml::from_str(text).map_err(|e| syntax_error(text, source_name, &e))?;
    for o in overrides {
        overrides::apply(&mut table, o)?;
    }
    let raw: RawScenario = values::deserialize_at(Value::Table(table), "")?;
    resolve::resolve(raw, &default_name(source_name), opts)
}

/// Read, parse and resolve the scenario file at `path`.
pub fn parse_file(
    path: &Path,
    overrides: &[String],
    opts: &ParseOptions<'_>,
) -> Result<Scenario, ScenarioError> {
    let source_name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Io {
        source_name: source_name.clone(),
        message: e.to_string(),
    })?;
    parse_with(&text, &source_name, overrides, opts)
}

/// The file stem of a `.toml` source, else `"scenario"`.
fn default_name(source_name: &str) -> String {
    let p = Path::new(source_name);
    match (p.extension(), p.file_stem()) {
        (Some(ext), Some(stem)) if ext == "toml" => stem.to_string_lossy().into_owned(),
        _ => "scenario".to_string(),
    }
}

/// A TOML syntax error with a 1-based line and column (in characters).
fn syntax_error(text: &str, source_name: &str, e: &toml::de::Error) -> ScenarioError {
    let offset = e.span().map_or(0, |s| s.start).min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    ScenarioError::Syntax {
        source_name: source_name.to_string(),
        line,
        column,
        message: e.message().trim().replace('\n', "; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_name_is_the_file_stem() {
        assert_eq!(
            default_name("scenarios/examples/reno-20mbit.toml"),
            "reno-20mbit"
        );
        assert_eq!(default_name("<string>"), "scenario");
        assert_eq!(default_name("notes.txt"), "scenario");
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let text = "format = 1\nduration = \"30s\nseed = 1\n";
        let e = parse_with(
            text,
            "x.toml",
            &[],
            &ParseOptions {
                known_cc: vec!["reno"],
                trace_dirs: vec![],
            },
        )
        .unwrap_err();
        let ScenarioError::Syntax { line, column, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!((*line, *column), (2, 16), "{e}");
        assert!(
            e.to_string()
                .starts_with("x.toml:2:16: TOML syntax error: "),
            "{e}"
        );
    }
}
