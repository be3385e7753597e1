//! `qdisc = "codel"` or `{ kind = "codel", limit = 1000, target = "5ms",
//! interval = "100ms", ecn = true, ce_threshold = "1ms" }`: Linux `codel`
//! with the `tc-codel(8)` parameter names and Linux defaults, read by the
//! declarations [`l4slab_qdisc::codel::PARAMS`] ([`crate::param`]).
//!
//! `limit` is in packets, as in tc. Without a `limit` key the direction's
//! `buffer` is the limit: a buffer in packets as is, one in bytes or time
//! converted at 1500 B per packet (at least 1). A `limit` key accepts the same
//! forms: an integer (packets) or a buffer string (`"100pkt"`, `"150KB"`,
//! `"50ms"` at the link rate).

use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::codel::{CE_THRESHOLD, ECN, INTERVAL, LIMIT, PARAMS, TARGET};
use l4slab_qdisc::CodelConfig;

use super::params::packets_of;
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::param::read_table;

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = CodelConfig {
        limit: packets_of(buffer),
        ..CodelConfig::default()
    };
    if let Value::Table(table) = value {
        let v = read_table(table, path, PARAMS, Some(rate))?;
        if let Some(x) = v.get(&LIMIT) {
            cfg.limit = x.int() as u32;
        }
        if let Some(x) = v.get(&TARGET) {
            cfg.target = x.dur();
        }
        if let Some(x) = v.get(&INTERVAL) {
            cfg.interval = x.dur();
        }
        if let Some(x) = v.get(&ECN) {
            cfg.ecn = x.flag();
        }
        if let Some(x) = v.get(&CE_THRESHOLD) {
            cfg.ce_threshold = x.opt_dur();
        }
    }
    Ok(QdiscSpec::Codel(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Dur;

    #[test]
    fn byte_and_time_buffers_become_packets() {
        assert_eq!(packets_of(BufferLimit::Packets(7)), 7);
        assert_eq!(packets_of(BufferLimit::Bytes(150_000)), 100);
        assert_eq!(packets_of(BufferLimit::Bytes(1_400)), 1);
        assert_eq!(
            packets_of(BufferLimit::Time {
                time: Dur::from_millis(50),
                bytes: 125_000
            }),
            83
        );
    }
}
