//! `rate = { trace = "TMobile-LTE-short.down" }`: a link that replays a
//! mahimahi delivery trace (docs/models/trace.md).
//!
//! The value is one of the traces l4slab ships, by name, or an explicit
//! path. A name (no `/`) is looked up in each directory of `$L4SLAB_TRACES`
//! (colon-separated), then in the shipped traces ([`ParseOptions::trace_dirs`],
//! which the Python package points at its `data/traces`; a cargo build uses
//! the source tree's copy, [`SOURCE_TRACE_DIR`]). A value with a `/` is a
//! path, used as written (relative to the working directory). The file is
//! read and checked here, so a bad trace is an error naming the key path
//! before anything runs, and the resolved link's `rate` is the trace's mean
//! rate (for buffers given as a time).
//!
//! Whatever a user points at, reading it is bounded: only a regular file of
//! at most [`MAX_TRACE_BYTES`] is read (`/dev/zero` or a FIFO is refused
//! without reading), and an error names the line, never quotes the file.
//!
//! [`ParseOptions::trace_dirs`]: crate::ParseOptions::trace_dirs

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml::value::Table;
use toml::Value;

use l4slab_core::Rate;
use l4slab_link::trace;
use l4slab_link::Trace;

use crate::error::{Problem, ScenarioError};
use crate::model::RateTrace;
use crate::param::read_keys;
use crate::qdisc::params::wrong_type;
use crate::values::join;

/// The shipped traces in the source tree (`python/l4slab/data/traces`).
pub const SOURCE_TRACE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../python/l4slab/data/traces"
);

/// The largest trace file read, in bytes: 64 MiB, about 9 million delivery
/// opportunities (the largest shipped trace, TMobile-LTE-driving.down, is
/// 3.4 MB). A larger file, or anything that is not a regular file, is refused.
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// The directories searched for a bare trace name, in order: `$L4SLAB_TRACES`,
/// then `shipped` (or the source tree's traces when `shipped` is empty).
pub fn search_dirs(shipped: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("L4SLAB_TRACES")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    if shipped.is_empty() {
        dirs.push(PathBuf::from(SOURCE_TRACE_DIR));
    } else {
        dirs.extend(shipped.iter().cloned());
    }
    dirs
}

/// The trace names available in `dirs` (files ending in `.up` or `.down`), sorted.
fn available(dirs: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".up") || n.ends_with(".down"))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `rate = { trace = NAME }` at `path` -> (mean rate, the trace); the
/// table's keys are read by their declarations (`l4slab_link::trace::PARAMS`).
pub(crate) fn resolve(
    table: &Table,
    path: &str,
    shipped: &[PathBuf],
) -> Result<(Rate, Option<RateTrace>), ScenarioError> {
    let values = read_keys(table, path, trace::PARAMS, None, &[])?;
    let tpath = join(path, trace::TRACE.name);
    let name = match values.raw(&trace::TRACE) {
        Some((_, Value::String(name))) => name.clone(),
        Some((_, other)) => {
            return Err(wrong_type(
                &tpath,
                "a string",
                other,
                &trace::TRACE.example(),
            ))
        }
        None => {
            return Err(ScenarioError::invalid(
                &tpath,
                Problem::Missing,
                "missing: a rate table names a mahimahi trace file",
                Some(format!("rate = {{ trace = {} }}", trace::TRACE.example())),
            ))
        }
    };
    let file = if name.contains('/') {
        PathBuf::from(&name)
    } else {
        let dirs = search_dirs(shipped);
        let found = (name != "." && name != "..")
            .then(|| dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()))
            .flatten();
        match found {
            Some(p) => p,
            None => {
                let names = available(&dirs);
                let shown = if names.is_empty() {
                    "none found".to_string()
                } else {
                    names.join(", ")
                };
                return Err(ScenarioError::bad_value(
                    &tpath,
                    format!(
                        "no trace named '{name}'; the traces are: {shown} (a path with a '/' \
                         names any other file, e.g. trace = \"./my-link.down\"; \
                         $L4SLAB_TRACES adds directories)"
                    ),
                ));
            }
        }
    };
    let text = read_bounded(&file).map_err(|why| {
        ScenarioError::bad_value(&tpath, format!("cannot read {}: {why}", file.display()))
    })?;
    let trace = Trace::parse(&text).map_err(|e| {
        ScenarioError::bad_value(
            &tpath,
            format!("{} is not a mahimahi trace: {e}", file.display()),
        )
    })?;
    let path = name.contains('/').then(|| canonical(&file));
    Ok((
        trace.mean_rate(),
        Some(RateTrace {
            name,
            path,
            trace: Arc::new(trace),
        }),
    ))
}

/// The text of a regular file of at most [`MAX_TRACE_BYTES`], or why not.
fn read_bounded(file: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a trace is a text file of timestamps)".into());
    }
    if meta.len() > MAX_TRACE_BYTES {
        return Err(format!(
            "{} bytes is more than a trace may be ({} MiB)",
            meta.len(),
            MAX_TRACE_BYTES >> 20
        ));
    }
    let mut bytes = Vec::new();
    // The file may grow after the check: read one byte past the limit at most.
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_TRACE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TRACE_BYTES {
        return Err(format!(
            "it grew past {} MiB while being read",
            MAX_TRACE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not a text file (it is not UTF-8)".into())
}

fn canonical(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}
