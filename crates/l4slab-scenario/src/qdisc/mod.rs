//! `bottleneck[.dir].qdisc` -> [`QdiscSpec`]: the one dispatch on the qdisc
//! `kind` (a Linux `tc` name). Each kind resolves its own table in its own
//! file, with the `tc` parameter names and Linux defaults, and rejects keys
//! that belong to another kind.
//!
//! The direction's `buffer` is the discipline's `limit` (tc's `limit`); each
//! kind says how a buffer written in bytes or time maps to its limit.

mod fifo;

use l4slab_core::Rate;
use toml::Value;

use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::{kind_of, not_implemented};

/// Queue disciplines this build implements.
pub const QDISCS: &[&str] = &["fifo"];
/// Queue disciplines the design names that do not exist yet.
const QDISCS_LATER: &[&str] = &["codel", "pie", "fq_codel", "dualpi2"];

/// Resolve `qdisc = "kind"` or `qdisc = { kind = "...", ... }` at `path`.
pub(crate) fn resolve(
    value: &Value,
    path: &str,
    limit: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let (kind, kind_path) = kind_of(value, path)?;
    let _ = rate;
    match kind {
        "fifo" => fifo::resolve(value, path, limit),
        k if QDISCS_LATER.contains(&k) => Err(not_implemented(&kind_path, "qdisc", k, QDISCS)),
        k => Err(ScenarioError::unknown_name(&kind_path, "qdisc", k, QDISCS)),
    }
}
