//! `qdisc = "pie"` or `{ kind = "pie", limit = 1000, target = "15ms",
//! tupdate = "15ms", alpha = 0.125, beta = 1.25, ecn = true, bytemode = false,
//! dq_rate_estimator = false, max_burst = "150ms" }`: Linux `pie` with the
//! `tc-pie(8)` parameter names and Linux defaults, read by the declarations
//! [`l4slab_qdisc::pie::PARAMS`] ([`crate::param`]).
//!
//! * `limit` is in packets, as in tc. Without a `limit` key the direction's
//!   `buffer` is the limit: packets as is, bytes or time at 1500 B per packet
//!   (at least 1). A `limit` key takes an integer or a buffer string.
//! * `alpha` and `beta` are in Hz, as floats: tc's integers are in units of
//!   1/16 Hz (tc `alpha 2` = 0.125 Hz), a wire detail that an integer here
//!   would make ambiguous, so integers are refused.
//! * `max_burst` (alias `burst`) is RFC 8033's MAX_BURST; Linux fixes it at 150 ms.

use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::pie::{
    ALPHA, BETA, BYTEMODE, DQ_RATE_ESTIMATOR, ECN, LIMIT, MAX_BURST, PARAMS, TARGET, TUPDATE,
};
use l4slab_qdisc::PieConfig;

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
    let mut cfg = PieConfig {
        limit: packets_of(buffer),
        ..PieConfig::default()
    };
    if let Value::Table(table) = value {
        let v = read_table(table, path, PARAMS, Some(rate))?;
        if let Some(x) = v.get(&LIMIT) {
            cfg.limit = x.int() as u32;
        }
        if let Some(x) = v.get(&TARGET) {
            cfg.target = x.dur();
        }
        if let Some(x) = v.get(&TUPDATE) {
            cfg.tupdate = x.dur();
        }
        if let Some(x) = v.get(&ALPHA) {
            cfg.alpha = x.num();
        }
        if let Some(x) = v.get(&BETA) {
            cfg.beta = x.num();
        }
        if let Some(x) = v.get(&ECN) {
            cfg.ecn = x.flag();
        }
        if let Some(x) = v.get(&BYTEMODE) {
            cfg.bytemode = x.flag();
        }
        if let Some(x) = v.get(&DQ_RATE_ESTIMATOR) {
            cfg.dq_rate_estimator = x.flag();
        }
        if let Some(x) = v.get(&MAX_BURST) {
            cfg.max_burst = x.dur();
        }
    }
    Ok(QdiscSpec::Pie(cfg))
}
