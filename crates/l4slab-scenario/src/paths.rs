//! `[[hosts.NAME.paths]]` and `racing`: a multi-homed client host (a phone
//! on Wi-Fi and cellular at once) and its connection racing
//! (docs/models/racing.md).
//!
//! Each path is an access link in both directions, read exactly as a
//! host's `access` table (`crate::access`), with its own `access_delay` and
//! outage windows; or, with `wifi = true`, the host's station in the
//! scenario's `[wifi]` cell (its settings in `[hosts.NAME.wifi]`, its
//! queues the cell's, contending for airtime with the other stations).
//! The order written is the preference order: a flow's
//! first attempt goes out on `paths[0]`. A multi-homed host has exactly
//! two paths, no `access` or `access_delay` of its own, and is on the
//! client side. A path can degrade at set times: `outages` (every packet
//! lost; through the cell: the station is out of it) and `rate_changes`
//! (a new rate, both directions; not for the cell path, whose rate is its
//! station's MCS).

use l4slab_core::{Dur, Time};

use crate::access::resolve_access_at;
use crate::error::ScenarioError;
use crate::model::{HostPath, Outage, RateChange, Side};
use crate::raw::{RawHost, RawPath};
use crate::values::{self, join};

/// RFC 8305 §5 (Connection Attempt Delay): a simple implementation waits a
/// fixed delay before starting the next connection attempt, 250 ms by
/// default as recommended there.
pub const DEFAULT_RACING_DELAY: Dur = Dur::from_millis(250);

/// The key path of host `host`'s path `i`: `hosts.<host>.paths[<i>]`.
pub(crate) fn path_key(host: &str, i: usize) -> String {
    format!("{}[{i}]", join(&join("hosts", host), "paths"))
}

/// Host `name`'s paths and racing delay (both empty / `None` for a host
/// without `paths`).
pub(crate) fn resolve(
    name: &str,
    side: Side,
    raw: &RawHost,
    cell: bool,
    trace_dirs: &[std::path::PathBuf],
) -> Result<(Vec<HostPath>, Option<Dur>), ScenarioError> {
    let host = join("hosts", name);
    let Some(paths) = &raw.paths else {
        if raw.racing.is_some() {
            return Err(ScenarioError::invalid(
                &join(&host, "racing"),
                crate::error::Problem::Conflict,
                format!("racing needs two ways out: give the host two [[{host}.paths]] entries"),
                None,
            ));
        }
        return Ok((Vec::new(), None));
    };
    let key = join(&host, "paths");
    if side != Side::Client {
        return Err(ScenarioError::conflict(
            &key,
            "only a client-side host may be multi-homed (it opens the connections)",
        ));
    }
    for (k, written) in [
        ("access", raw.access.is_some()),
        ("access_delay", raw.access_delay.is_some()),
    ] {
        if written {
            return Err(ScenarioError::conflict(
                &join(&host, k),
                format!(
                    "a multi-homed host's access is its paths: write {k} inside each \
                     [[{key}]] entry"
                ),
            ));
        }
    }
    if paths.len() != 2 {
        return Err(ScenarioError::bad_value(
            &key,
            format!(
                "{} paths; a multi-homed host has exactly two (the preferred first)",
                paths.len()
            ),
        ));
    }
    let mut out: Vec<HostPath> = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        let hp = resolve_path(&path_key(name, i), p, cell, trace_dirs)?;
        if let Some(j) = out.iter().position(|o| o.wifi && hp.wifi) {
            return Err(ScenarioError::conflict(
                &join(&path_key(name, i), "wifi"),
                format!(
                    "paths[{j}] is already host '{name}''s station in the cell (a host is one \
                     station); give this path its own access link"
                ),
            ));
        }
        if let Some(j) = out.iter().position(|o| o.name == hp.name) {
            return Err(ScenarioError::conflict(
                &join(&path_key(name, i), "name"),
                format!(
                    "'{}' is also the name of paths[{j}]; two paths must differ",
                    hp.name
                ),
            ));
        }
        out.push(hp);
    }
    let racing = match &raw.racing {
        None | Some(toml::Value::Boolean(true)) => Some(DEFAULT_RACING_DELAY),
        Some(toml::Value::Boolean(false)) => None,
        Some(v) => Some(values::positive_duration(v, &join(&host, "racing"))?),
    };
    Ok((out, racing))
}

fn resolve_path(
    key: &str,
    raw: &RawPath,
    cell: bool,
    trace_dirs: &[std::path::PathBuf],
) -> Result<HostPath, ScenarioError> {
    let name_key = join(key, "name");
    let name = raw
        .name
        .clone()
        .ok_or_else(|| ScenarioError::missing_with(&name_key, "name = \"wifi\""))?;
    crate::resolve::check_name(&name, &name_key)?;
    let access_delay = match &raw.access_delay {
        Some(v) => values::duration(v, &join(key, "access_delay"))?,
        None => Dur::ZERO,
    };
    let access_key = join(key, "access");
    let wifi = through_cell(key, raw, cell)?;
    let outages = outages(key, raw)?;
    if wifi {
        return Ok(HostPath {
            name,
            access_delay,
            access: Default::default(),
            wifi,
            outages,
            rate_changes: Vec::new(),
        });
    }
    let table = raw.access.as_ref().ok_or_else(|| {
        ScenarioError::missing_with(
            &access_key,
            "access = { rate = \"50Mbit\", buffer = \"100pkt\" }",
        )
    })?;
    let access = resolve_access_at(&access_key, table, access_delay, trace_dirs)?;
    for (dir, d) in ["down", "up"].into_iter().enumerate() {
        if access.dir(dir).is_none() {
            return Err(ScenarioError::missing_with(
                &join(&join(&access_key, d), "rate"),
                format!(
                    "rate = \"50Mbit\" under [{access_key}]: a path carries both directions, \
                     so both need a link"
                ),
            ));
        }
    }
    Ok(HostPath {
        name,
        access_delay,
        access,
        wifi,
        outages,
        rate_changes: rate_changes(key, raw)?,
    })
}

/// A path's `wifi`: `true` makes it the host's station in the `[wifi]`
/// cell, which must exist; such a path has no `access` or `rate_changes`.
fn through_cell(key: &str, raw: &RawPath, cell: bool) -> Result<bool, ScenarioError> {
    let wifi_key = join(key, "wifi");
    let wifi = match &raw.wifi {
        None | Some(toml::Value::Boolean(false)) => return Ok(false),
        Some(toml::Value::Boolean(true)) => true,
        Some(v) => {
            return Err(ScenarioError::invalid(
                &wifi_key,
                crate::error::Problem::WrongType,
                format!(
                    "expected a boolean (true: the path is the host's station in the [wifi] \
                     cell), found {}",
                    values::describe(v)
                ),
                Some("wifi = true".into()),
            ))
        }
    };
    if !cell {
        return Err(ScenarioError::invalid(
            &wifi_key,
            crate::error::Problem::Conflict,
            "there is no Wi-Fi cell for this path: add a [wifi] table, or give the path an \
             access link",
            Some(r#"[wifi] with standard = "ax", band = "5GHz""#.into()),
        ));
    }
    // The host's key (`hosts.phone`), for its station table.
    let host = key.rsplit_once(".paths[").map_or(key, |(h, _)| h);
    for (k, written, why) in [
        (
            "access",
            raw.access.is_some(),
            format!(
                "the cell is this path's access: its rate is the station's MCS, its queues \
                 the cell's (station settings go in [{host}.wifi])"
            ),
        ),
        (
            "rate_changes",
            raw.rate_changes.is_some(),
            format!(
                "a path through the cell runs at its station's MCS; its degradation is its \
                 signal (snr_db, mcs in [{host}.wifi]) or an outage (the station out of the \
                 cell)"
            ),
        ),
    ] {
        if written {
            let problem = crate::error::Problem::Conflict;
            return Err(ScenarioError::invalid(&join(key, k), problem, why, None));
        }
    }
    Ok(wifi)
}

/// A path's `outages`, sorted; overlapping windows are an error.
fn outages(key: &str, raw: &RawPath) -> Result<Vec<Outage>, ScenarioError> {
    let mut outages = Vec::new();
    for (j, o) in raw.outages.iter().flatten().enumerate() {
        let ok = format!("{}[{j}]", join(key, "outages"));
        let at = |v: &Option<toml::Value>, k: &str| -> Result<Time, ScenarioError> {
            let p = join(&ok, k);
            let v = v
                .as_ref()
                .ok_or_else(|| ScenarioError::missing_with(&p, format!("{k} = \"2s\"")))?;
            Ok(Time::ZERO + values::duration(v, &p)?)
        };
        let (start, end) = (at(&o.start, "start")?, at(&o.end, "end")?);
        if end <= start {
            return Err(ScenarioError::conflict(
                &join(&ok, "end"),
                format!(
                    "{} is not after start = {}",
                    values::show_dur(end - Time::ZERO),
                    values::show_dur(start - Time::ZERO)
                ),
            ));
        }
        outages.push((j, Outage { start, end }));
    }
    outages.sort_by_key(|(_, o)| o.start);
    for w in outages.windows(2) {
        if w[1].1.start < w[0].1.end {
            return Err(ScenarioError::conflict(
                &format!("{}[{}]", join(key, "outages"), w[1].0),
                format!("overlaps outages[{}]; merge the two windows", w[0].0),
            ));
        }
    }
    Ok(outages.into_iter().map(|(_, o)| o).collect())
}

/// A path's `rate_changes`, sorted by time; two at one time are an error.
fn rate_changes(key: &str, raw: &RawPath) -> Result<Vec<RateChange>, ScenarioError> {
    let mut out: Vec<(usize, RateChange)> = Vec::new();
    for (j, c) in raw.rate_changes.iter().flatten().enumerate() {
        let ck = format!("{}[{j}]", join(key, "rate_changes"));
        let (at_key, rate_key) = (join(&ck, "at"), join(&ck, "rate"));
        let at =
            c.at.as_ref()
                .ok_or_else(|| ScenarioError::missing_with(&at_key, "at = \"3s\""))?;
        let at = Time::ZERO + values::duration(at, &at_key)?;
        let rate = c
            .rate
            .as_ref()
            .ok_or_else(|| ScenarioError::missing_with(&rate_key, "rate = \"2Mbit\""))?;
        let rate = values::positive_rate(rate, &rate_key)?;
        if let Some((i, _)) = out.iter().find(|(_, o)| o.at == at) {
            return Err(ScenarioError::conflict(
                &at_key,
                format!("rate_changes[{i}] is at the same time; keep one"),
            ));
        }
        out.push((j, RateChange { at, rate }));
    }
    out.sort_by_key(|(_, c)| c.at);
    Ok(out.into_iter().map(|(_, c)| c).collect())
}
