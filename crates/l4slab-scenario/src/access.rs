//! `[hosts.NAME.access]` -> [`AccessLinks`]: a host's own access link, per
//! direction, read exactly as `[bottleneck]` is (`crate::link`): keys under
//! `[hosts.NAME.access]` apply to both directions, keys under
//! `[hosts.NAME.access.down]` / `.up` replace them for one. The keys are the
//! bottleneck's but `delay`: the link's propagation delay is the host's
//! `access_delay` (`l4slab_link::config::ACCESS_PARAMS`).
//!
//! A direction has an access link when a `rate` applies to it. A direction
//! table written without one, or an `access` table that gives neither
//! direction a rate, is an error (a buffer or a qdisc would otherwise be
//! silently ignored).

use l4slab_core::Dur;
use l4slab_link::config::{ACCESS_PARAMS, RATE};

use crate::error::ScenarioError;
use crate::link::{check_link_table, link_keys, resolve_link};
use crate::model::{AccessLinks, Flow, Host};
use crate::raw::RawHost;
use crate::values::join;

/// The path of host `host`'s access table: `hosts.<host>.access`.
fn access_path(host: &str) -> String {
    join(&join("hosts", host), "access")
}

/// Resolve host `host`'s `access` table (`None`: no access link), whose
/// links propagate for `delay` (the host's `access_delay`).
pub(crate) fn resolve_access(
    host: &str,
    raw: Option<&toml::Table>,
    delay: Dur,
    trace_dirs: &[std::path::PathBuf],
) -> Result<AccessLinks, ScenarioError> {
    match raw {
        Some(raw) => resolve_access_at(&access_path(host), raw, delay, trace_dirs),
        None => Ok(AccessLinks::default()),
    }
}

/// The access table `raw` written at key path `path` (a host's
/// `hosts.<host>.access`, a path's `hosts.<host>.paths[<i>].access`).
pub(crate) fn resolve_access_at(
    path: &str,
    raw: &toml::Table,
    delay: Dur,
    trace_dirs: &[std::path::PathBuf],
) -> Result<AccessLinks, ScenarioError> {
    let path = path.to_string();
    check_link_table(raw, &path, ACCESS_PARAMS)?;
    let mut links = [None, None];
    for (dir, link) in links.iter_mut().enumerate() {
        let m = link_keys(raw, &path, dir);
        if m.get(RATE.name).is_some() || m.dir.is_some() {
            *link = Some(resolve_link(&m, Some(delay), trace_dirs)?);
        }
    }
    let [down, up] = links;
    if down.is_none() && up.is_none() {
        return Err(ScenarioError::missing_with(
            &join(&path, RATE.name),
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
        let Some(r) = raw.get(&h.name) else {
            continue;
        };
        if let Some(access) = &r.access {
            flow_classes(access, &access_path(&h.name), &mut h.access, flows)?;
        }
        for (i, (p, rp)) in h.paths.iter_mut().zip(r.paths.iter().flatten()).enumerate() {
            if let Some(access) = &rp.access {
                let path = join(&crate::paths::path_key(&h.name, i), "access");
                flow_classes(access, &path, &mut p.access, flows)?;
            }
        }
    }
    Ok(())
}

/// The dualpi2 `l_flows` of one access table's links, as flow ids.
fn flow_classes(
    access: &toml::Table,
    path: &str,
    links: &mut AccessLinks,
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    for (dir, link) in [&mut links.down, &mut links.up].into_iter().enumerate() {
        if let Some(spec) = link {
            crate::qdisc::resolve_flow_classes(&link_keys(access, path, dir), spec, flows)?;
        }
    }
    Ok(())
}
