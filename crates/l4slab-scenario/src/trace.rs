//! `rate = { trace = "TMobile-LTE-short.down" }`: a link that replays a
//! mahimahi delivery trace (docs/models/trace.md).
//!
//! The value names a file. A name without a `/` is looked up in each
//! directory of `$L4SLAB_TRACES` (colon-separated), then in the traces that
//! come with l4slab's source tree (`../shared/traces` beside the
//! repository); a path with a `/` is used as written (relative to the
//! working directory). The file is read and checked here, so a bad trace is
//! an error naming the key path before anything runs, and the resolved
//! link's `rate` is the trace's mean rate (for buffers given as a time).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use toml::Value;

use l4slab_core::Rate;
use l4slab_link::Trace;

use crate::error::{Problem, ScenarioError};
use crate::model::RateTrace;
use crate::values::{deserialize_at, join};

/// Traces that come with the source tree: `<repository>/../shared/traces`.
pub const BUILTIN_TRACE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/traces");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct TraceTable {
    trace: Option<String>,
}

/// The directories searched for a bare trace name, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("L4SLAB_TRACES")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    dirs.push(PathBuf::from(BUILTIN_TRACE_DIR));
    dirs
}

/// `rate = { trace = NAME }` at `path` -> (mean rate, the trace).
pub(crate) fn resolve(
    value: &Value,
    path: &str,
) -> Result<(Rate, Option<RateTrace>), ScenarioError> {
    let t: TraceTable = deserialize_at(value.clone(), path)?;
    let tpath = join(path, "trace");
    let Some(name) = t.trace else {
        return Err(ScenarioError::invalid(
            &tpath,
            Problem::Missing,
            "missing: a rate table names a mahimahi trace file",
            Some(r#"rate = { trace = "TMobile-LTE-short.down" }"#.into()),
        ));
    };
    let file = if name.contains('/') {
        PathBuf::from(&name)
    } else {
        let dirs = search_dirs();
        match dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()) {
            Some(p) => p,
            None => {
                let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                return Err(ScenarioError::bad_value(
                    &tpath,
                    format!(
                        "no trace file '{name}' in {} (set L4SLAB_TRACES to add directories, \
                         or give a path)",
                        shown.join(", ")
                    ),
                ));
            }
        }
    };
    let text = std::fs::read_to_string(&file).map_err(|e| {
        ScenarioError::bad_value(&tpath, format!("cannot read {}: {e}", file.display()))
    })?;
    let trace = Trace::parse(&text).map_err(|e| {
        ScenarioError::bad_value(
            &tpath,
            format!("{} is not a mahimahi trace: {e}", file.display()),
        )
    })?;
    let file = canonical(&file);
    Ok((
        trace.mean_rate(),
        Some(RateTrace {
            name,
            path: file,
            trace: Arc::new(trace),
        }),
    ))
}

fn canonical(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}
