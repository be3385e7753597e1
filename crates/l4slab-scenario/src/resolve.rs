//! Raw file structs -> the resolved [`Scenario`]: defaults filled in, units
//! converted, names and references checked. The bottleneck lives in
//! [`crate::link`], flows in [`crate::flows`]; this file has the top level
//! and the hosts.
//!
//! Hosts: a host's access link (`[hosts.NAME.access]`) is resolved in
//! [`crate::access`], the Wi-Fi cell (`[wifi]`, `[hosts.NAME.wifi]`) in
//! [`crate::wifi`] once the hosts and flows are known. If the file defines
//! no client-side host, a host `client` is added; if none on the server side, a host `server` (both with zero access delay).
//! Hosts are ordered client side first, then server side, each by name
//! (byte order), so host indices do not depend on how the file is written.

use std::collections::BTreeMap;

use l4slab_core::{Dur, Time};

use crate::access::{resolve_access, resolve_access_flow_classes};
use crate::error::{Problem, ScenarioError};
use crate::flows::resolve_flows;
use crate::link::{link_keys, resolve_bottleneck};
use crate::model::{AccessLinks, Entry, Host, Scenario, Side, FORMAT_VERSION};
use crate::parse::ParseOptions;
use crate::raw::{RawFlow, RawHost, RawScenario};
use crate::values;

/// Default `sample_interval`.
pub const DEFAULT_SAMPLE_INTERVAL: Dur = Dur::from_millis(100);
/// Default `seed`.
pub const DEFAULT_SEED: u64 = 1;

pub(crate) fn resolve(
    raw: RawScenario,
    default_name: &str,
    opts: &ParseOptions<'_>,
) -> Result<Scenario, ScenarioError> {
    match raw.format {
        None => return Err(ScenarioError::missing("format")),
        Some(v) if v == i64::from(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(ScenarioError::invalid(
                "format",
                Problem::Unsupported,
                format!("unsupported version {v}; this l4slab reads format = {FORMAT_VERSION}"),
                None,
            ))
        }
    }
    crate::sweep::check(raw.sweep.as_ref())?;
    let name = match raw.name {
        Some(n) if n.trim().is_empty() => {
            return Err(ScenarioError::bad_value("name", "must not be empty"))
        }
        Some(n) => n,
        None => default_name.to_string(),
    };
    let duration = match &raw.duration {
        Some(v) => values::positive_duration(v, "duration")?,
        None => return Err(ScenarioError::missing("duration")),
    };
    let warmup = match &raw.warmup {
        Some(v) => values::duration(v, "warmup")?,
        None => Dur::ZERO,
    };
    if warmup >= duration {
        return Err(ScenarioError::conflict(
            "warmup",
            format!(
                "{} leaves no window to measure: it must be shorter than the run (duration = {})",
                values::show_dur(warmup),
                values::show_dur(duration)
            ),
        ));
    }
    let seed = match raw.seed {
        Some(s) => values::int_in(s, "seed", 0, i64::MAX)?,
        None => DEFAULT_SEED,
    };
    let sample_interval = match &raw.sample_interval {
        Some(v) => values::positive_duration(v, "sample_interval")?,
        None => DEFAULT_SAMPLE_INTERVAL,
    };
    if sample_interval > duration {
        return Err(ScenarioError::conflict(
            "sample_interval",
            format!(
                "{} is longer than the run (duration = {})",
                values::show_dur(sample_interval),
                values::show_dur(duration)
            ),
        ));
    }
    let mut bottleneck = resolve_bottleneck(raw.bottleneck.as_ref(), &opts.trace_dirs)?;
    let mut hosts = resolve_hosts(raw.hosts.as_ref(), raw.wifi.is_some(), &opts.trace_dirs)?;
    let end = Time::ZERO + duration;
    let households = crate::household::expand(raw.households.as_deref())?;
    let entries: Vec<(Entry, &RawFlow)> = raw
        .flows
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, f)| (Entry::Flow(i), f))
        .chain(households.iter().map(|(e, f)| (*e, f)))
        .collect();
    let flows = resolve_flows(&entries, &hosts, end, opts)?;
    // Qdisc classifier rules name flows (dualpi2 `l_flows`): map them to ids.
    if let Some(b) = raw.bottleneck.as_ref() {
        for (dir, spec) in [&mut bottleneck.down, &mut bottleneck.up]
            .into_iter()
            .enumerate()
        {
            crate::qdisc::resolve_flow_classes(&link_keys(b, "bottleneck", dir), spec, &flows)?;
        }
    }
    if let Some(raw_hosts) = &raw.hosts {
        resolve_access_flow_classes(raw_hosts, &mut hosts, &flows)?;
    }
    let wifi = crate::wifi::resolve(raw.wifi.as_ref(), raw.hosts.as_ref(), &hosts, &flows)?;
    Ok(Scenario {
        format: FORMAT_VERSION,
        name,
        description: raw.description.unwrap_or_default(),
        duration: end,
        warmup,
        seed,
        sample_interval,
        packet_trace: raw.packet_trace.unwrap_or(false),
        pcap: raw.pcap.unwrap_or(false),
        bottleneck,
        wifi,
        hosts,
        flows,
    })
}

/// Host and flow names: letters, digits, `-`, `_`, `.`; they end up in file
/// names and series keys.
pub(crate) fn check_name(name: &str, path: &str) -> Result<(), ScenarioError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ScenarioError::bad_value(
            path,
            format!("{name:?} is not a valid name; use letters, digits, '-', '_' or '.'"),
        ))
    }
}

fn resolve_hosts(
    raw: Option<&BTreeMap<String, RawHost>>,
    cell: bool,
    trace_dirs: &[std::path::PathBuf],
) -> Result<Vec<Host>, ScenarioError> {
    let mut hosts = Vec::new();
    for (name, h) in raw.into_iter().flatten() {
        let path = values::join("hosts", name);
        check_name(name, &path)?;
        let side_path = values::join(&path, "side");
        let side = match h.side.as_deref() {
            Some("client") => Side::Client,
            Some("server") => Side::Server,
            Some(other) => {
                return Err(ScenarioError::unknown_name(
                    &side_path,
                    "side",
                    other,
                    &["client", "server"],
                ))
            }
            None => return Err(ScenarioError::missing(&side_path)),
        };
        let access_delay = match &h.access_delay {
            Some(v) => values::duration(v, &values::join(&path, "access_delay"))?,
            None => Dur::ZERO,
        };
        let access = resolve_access(name, h.access.as_ref(), access_delay, trace_dirs)?;
        let (paths, racing) = crate::paths::resolve(name, side, h, cell, trace_dirs)?;
        hosts.push(Host {
            paths,
            racing,
            ..Host::single(name, side, access_delay, access)
        });
    }
    for (side, default) in [(Side::Client, "client"), (Side::Server, "server")] {
        if hosts.iter().any(|h| h.side == side) {
            continue;
        }
        if hosts.iter().any(|h| h.name == default) {
            let path = format!("hosts.{default}");
            return Err(ScenarioError::invalid(
                &path,
                Problem::Conflict,
                format!(
                    "there is no {default}-side host, and the default one cannot be added \
                     because host '{default}' is on the other side"
                ),
                Some(format!("[hosts.{default}2] with side = \"{default}\"")),
            ));
        }
        hosts.push(Host::single(
            default,
            side,
            Dur::ZERO,
            AccessLinks::default(),
        ));
    }
    hosts.sort_by(|a, b| (a.side == Side::Server, &a.name).cmp(&(b.side == Side::Server, &b.name)));
    Ok(hosts)
}
