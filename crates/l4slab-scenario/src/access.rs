//! `[hosts.NAME.access]` -> [`AccessLinks`]: a host's own access link, per
//! direction, read exactly as `[bottleneck]` is (`crate::link`): keys under
//! `[hosts.NAME.access]` apply to both directions, keys under
//! `[hosts.NAME.access.down]` / `.up` replace them for one. The keys are the
//! bottleneck's but `delay`: the link's propagation delay is the host's
//! `access_delay`.
//!
//! A direction has an access link when a `rate` applies to it. A direction
//! table written without one, or an `access` table that gives neither
//! direction a rate, is an error (a buffer or a qdisc would otherwise be
//! silently ignored).

use l4slab_core::Dur;

use crate::error::ScenarioError;
use crate::link::{resolve_link, Merged};
use crate::model::{AccessLinks, Flow, Host};
use crate::raw::{LinkKeys, RawAccess, RawHost};
use crate::values::join;

/// Direction names, in the order of [`AccessLinks::dir`].
const DIRS: [&str; 2] = ["down", "up"];

/// The keys of direction `dir` of host `host`'s access table.
fn keys<'a>(host: &str, raw: &'a RawAccess, dir: usize) -> Merged<'a> {
    let shared_path = join(&join("hosts", host), "access");
    let d = [&raw.down, &raw.up][dir]
        .as_ref()
        .map(|d| d as &dyn LinkKeys);
    Merged {
        shared: raw,
        dir_path: join(&shared_path, DIRS[dir]),
        shared_path,
        dir: d,
    }
}

/// Resolve host `host`'s `access` table (`None`: no access link), whose
/// links propagate for `delay` (the host's `access_delay`).
pub(crate) fn resolve_access(
    host: &str,
    raw: Option<&RawAccess>,
    delay: Dur,
    trace_dirs: &[std::path::PathBuf],
) -> Result<AccessLinks, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(AccessLinks::default());
    };
    let mut links = [None, None];
    for (dir, link) in links.iter_mut().enumerate() {
        let m = keys(host, raw, dir);
        let written = [&raw.down, &raw.up][dir].is_some();
        if m.get("rate").is_some() || written {
            *link = Some(resolve_link(&m, Some(delay), trace_dirs)?);
        }
    }
    let [down, up] = links;
    if down.is_none() && up.is_none() {
        let path = join(&join("hosts", host), "access");
        return Err(ScenarioError::missing_with(
            &join(&path, "rate"),
            format!(
                "rate = \"50Mbit\" under [{path}] (both directions), [{path}.down] or [{path}.up]; \
                 an access link needs a rate"
            ),
        ));
    }
    Ok(AccessLinks { down, up })
}

/// Map the flow names of each access link's dualpi2 (`l_flows`) to flow
/// ids, once the flows are resolved (as for the bottleneck).
pub(crate) fn resolve_access_flow_classes(
    raw: &std::collections::BTreeMap<String, RawHost>,
    hosts: &mut [Host],
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    for h in hosts {
        let Some(access) = raw.get(&h.name).and_then(|r| r.access.as_ref()) else {
            continue;
        };
        for (dir, link) in [&mut h.access.down, &mut h.access.up]
            .into_iter()
            .enumerate()
        {
            if let Some(spec) = link {
                crate::qdisc::resolve_flow_classes(&keys(&h.name, access, dir), spec, flows)?;
            }
        }
    }
    Ok(())
}
