//! `qdisc = "fifo"` or `{ kind = "fifo", head_drop = true }`: Linux
//! `pfifo`/`bfifo` (tail drop) or `pfifo_head_drop`, with the direction's
//! buffer; the key is read by its declaration ([`l4slab_qdisc::fifo::PARAMS`]).

use toml::Value;

use l4slab_qdisc::fifo::{HEAD_DROP, PARAMS};

use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::param::read_table;

pub(super) fn resolve(
    value: &Value,
    path: &str,
    limit: BufferLimit,
) -> Result<QdiscSpec, ScenarioError> {
    let head_drop = match value {
        Value::Table(table) => read_table(table, path, PARAMS, None)?.get(&HEAD_DROP),
        _ => None,
    };
    Ok(QdiscSpec::Fifo {
        limit,
        head_drop: head_drop.unwrap_or(HEAD_DROP.default).flag(),
    })
}
