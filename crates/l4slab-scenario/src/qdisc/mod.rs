//! `bottleneck[.dir].qdisc` -> [`QdiscSpec`]: the one dispatch on the qdisc
//! `kind` (a Linux `tc` name). Each kind resolves its own table in its own
//! file, reading the keys its discipline declares (`l4slab_qdisc::<kind>::PARAMS`:
//! `tc` names, ranges, Linux defaults) with the generic reader
//! (`crate::param`), and rejects keys that belong to another kind.
//!
//! The direction's `buffer` is the discipline's `limit` (tc's `limit`); each
//! kind says how a buffer written in bytes or time maps to its limit.

mod codel;
mod dualpi2;
mod fifo;
mod fq_codel;
mod fq_pie;
pub(crate) mod params;
mod pie;

pub(crate) use dualpi2::{resolve_flow_classes, resolve_qdisc_flow_classes};

use l4slab_core::Rate;
use toml::Value;

use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::values::kind_of;

/// Queue disciplines this build implements (their declarations:
/// [`l4slab_qdisc::param::params`]).
pub const QDISCS: &[&str] = l4slab_qdisc::param::QDISC_NAMES;

/// Resolve `qdisc = "kind"` or `qdisc = { kind = "...", ... }` at `path`.
pub(crate) fn resolve(
    value: &Value,
    path: &str,
    limit: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let (kind, kind_path) = kind_of(value, path)?;
    match kind {
        "fifo" => fifo::resolve(value, path, limit),
        "codel" => codel::resolve(value, path, limit, rate),
        "fq_codel" => fq_codel::resolve(value, path, limit, rate),
        "pie" => pie::resolve(value, path, limit, rate),
        "fq_pie" => fq_pie::resolve(value, path, limit, rate),
        "dualpi2" => dualpi2::resolve(value, path, limit, rate),
        k => Err(ScenarioError::unknown_name(&kind_path, "qdisc", k, QDISCS)),
    }
}
