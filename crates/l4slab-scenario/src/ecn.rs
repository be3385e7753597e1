//! The ECN keys of a scenario (docs/models/ecn.md):
//!
//! * `[[flows]] ecn = "off" | "classic" | "accecn"` — the flow's ECN mode
//!   (Linux `tcp_ecn`); absent = the congestion control's default, which the
//!   backend resolves (this crate does not know the controllers);
//! * `[flows.transport] ecn_codepoint = "ect0" | "ect1" | "not_ect"` — the
//!   IP-ECN field of data packets instead of the controller's (declared
//!   with the TCP model's config, `l4slab_tcp::config::ECN_CODEPOINT`, and
//!   read by `crate::param`);
//! * `[bottleneck] ecn_rewrite = "none" | "bleach" | "remark" | "drop_ect" |
//!   "ce_all"` (or per direction) — what the path does to ECT packets.

use l4slab_link::EcnRewrite;
use toml::Value;

use crate::error::{Problem, ScenarioError};
use crate::model::EcnSpec;
use crate::qdisc::params;

/// ECN modes, as written.
pub const ECN_MODES: &[&str] = &["off", "classic", "accecn"];

/// One of `choices`, or an error naming them ([`params::choice`]); a wrong
/// type's example is `choices[1]`, the first that turns something on.
fn choice<'v>(
    v: &'v Value,
    path: &str,
    what: &str,
    choices: &[&str],
) -> Result<&'v str, ScenarioError> {
    params::choice(v, path, what, choices).map_err(|e| match e.problem() {
        Some(Problem::WrongType) => e.with_example(&format!("{:?}", choices[1])),
        _ => e,
    })
}

/// `ecn = "accecn"`.
pub(crate) fn mode(v: &Value, path: &str) -> Result<EcnSpec, ScenarioError> {
    Ok(match choice(v, path, "ECN mode", ECN_MODES)? {
        "off" => EcnSpec::Off,
        "classic" => EcnSpec::Classic,
        _ => EcnSpec::AccEcn,
    })
}

/// `ecn_rewrite = "bleach"`: one of the choices its declaration lists
/// (`l4slab_link::config::ECN_REWRITE`, [`EcnRewrite::NAMES`]).
pub(crate) fn rewrite(v: &Value, path: &str) -> Result<EcnRewrite, ScenarioError> {
    let s = choice(v, path, "ECN rewrite", &EcnRewrite::NAMES)?;
    Ok(EcnRewrite::from_name(s).expect("listed"))
}
