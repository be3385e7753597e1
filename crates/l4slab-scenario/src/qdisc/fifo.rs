//! `qdisc = "fifo"` or `{ kind = "fifo", head_drop = true }`: Linux
//! `pfifo`/`bfifo` (tail drop) or `pfifo_head_drop`, with the direction's buffer.

use toml::Value;

use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::raw::FifoTable;
use crate::values::deserialize_at;

pub(super) fn resolve(
    value: &Value,
    path: &str,
    limit: BufferLimit,
) -> Result<QdiscSpec, ScenarioError> {
    let head_drop = match value {
        Value::Table(_) => deserialize_at::<FifoTable>(value.clone(), path)?.head_drop,
        _ => None,
    };
    Ok(QdiscSpec::Fifo {
        limit,
        head_drop: head_drop.unwrap_or(false),
    })
}
