//! `[[flows]] cc` -> [`CcSpec`]: the one dispatch on the congestion-control
//! name (a Linux `tcp_congestion_control` name), then one generic reader for
//! its options table (`crate::param`, shared with the qdiscs), driven by the
//! controller's declarations ([`l4slab_cc::param::params`]): which keys the
//! kind accepts (the Linux module parameters without the module prefix), how
//! each is read and checked (its `Kind` and range), and the example in its
//! errors (its default). A key of another kind is an unknown key.
//!
//! ```toml
//! cc = "prague"                                        # defaults
//! cc = { kind = "prague", rtt_scaling = "none" }       # one option set
//! cc = { kind = "cubic", hystart = false, beta = 0.5 }
//! ```
//!
//! Options are overrides: what is not written keeps the controller's
//! default and is not recorded. Values are in scenario units — fractions as
//! `0.7` or `"70%"`, durations as `"25ms"`, gains as factors — never Linux's
//! fixed-point integers; an integer where Linux takes a scaled one (`beta =
//! 717`, `alpha_on_init = 1024`) is refused as ambiguous, like tc-pie's gains.

use toml::Value;

use l4slab_cc::{CcOptions, SCENARIO_DEFAULT_CC};

use crate::error::ScenarioError;
use crate::model::CcSpec;
use crate::param::read_table;
use crate::values::kind_of;

/// `cc` at `path` (`flows[0].cc`); absent = [`SCENARIO_DEFAULT_CC`] (reno).
/// `known` are the names the backend accepts (`ParseOptions::known_cc`).
pub(crate) fn resolve(
    value: Option<&Value>,
    path: &str,
    known: &[&str],
) -> Result<CcSpec, ScenarioError> {
    let default = Value::String(SCENARIO_DEFAULT_CC.into());
    let value = value.unwrap_or(&default);
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(mut options) = CcOptions::defaults(kind).filter(|_| known.contains(&kind)) else {
        return Err(ScenarioError::unknown_name(
            &kind_path,
            "congestion control",
            kind,
            known,
        ));
    };
    let Value::Table(table) = value else {
        return Ok(CcSpec::new(options));
    };
    let params = options.params();
    let values = read_table(table, path, params, None)?;
    for p in params {
        if let Some(value) = values.get(p) {
            assert!(options.set(p.name, value), "{kind} declares {}", p.name);
        }
    }
    Ok(CcSpec::new(options))
}
