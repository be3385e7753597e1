//! `[wifi]` -> [`WifiSpec`]: a Wi-Fi cell as the client hosts' access
//! network (docs/scenarios.md, "Wi-Fi cell"; the model: `l4slab_wifi`).
//!
//! * The cell's PHY: one link from `standard`, `band`, `width`, `nss`, or
//!   several (Wi-Fi 7 multi-link operation) from `links = [{...}, ...]`;
//!   never both. Each link is checked by [`Phy::new`].
//! * `[wifi.ap]`: the qdisc and buffer of each AP queue (one per station and
//!   access category), the AP's EDCA parameters over [`EdcaSet::AP`] and
//!   its `l4s_ppdu_max` (`config::AP_PARAMS`).
//! * `[wifi.stations]`: every station's defaults (its uplink queues' qdisc
//!   and buffer, EDCA over the advertised [`EdcaSet::STATION`], SNR, MCS,
//!   links, scan); `[hosts.NAME.wifi]` overrides them for one station
//!   (not the qdisc and buffer, which are the cell's). Every client-side
//!   host is a station, written in `[hosts]` or not; a multi-homed one
//!   only through its path with `wifi = true` (`crate::paths`).
//!
//! Merging: `edca` merges key by key (the host's over `[wifi.stations]`'s
//! over the advertised defaults); `snr_db`, `mcs`, `links` and `scan` are
//! replaced whole. `snr_db` and `mcs` are one value for all of a station's
//! links or an array with one per link, in the order of its `links`. No
//! `mcs`: ideal rate control, [`Phy::best_mcs`] at the link's SNR.
//!
//! The keys the Wi-Fi model defines are read by their declarations (range,
//! default, source, example): the PHY's `standard`, `band`, `width`, `nss`
//! (`l4slab_wifi::phy::PARAMS`), `retry_limit` (`config::CELL_PARAMS`), a
//! station's `snr_db`, `mcs`, `links`, `scan` (`config::STATION_PARAMS`),
//! the scan's keys (`config::SCAN_PARAMS`) and the EDCA keys (`aifsn`,
//! `cw_min`, `cw_max`, `txop`: `edca::PARAMS`).
//!
//! A buffer written as time is converted at one reference rate: the PHY
//! rate of the default station (the `[wifi.stations]` keys alone) on its
//! first link. Errors name the key where the value was written: a station
//! error caused by a `[wifi.stations]` key names `wifi.stations.<key>`.

use std::collections::BTreeMap;

use toml::Value;

use l4slab_core::param::Param;
use l4slab_core::Rate;
use l4slab_wifi::config::{
    self as cell, Scan, StationLink, DEFAULT_SNR_DB, L4S_PPDU_MAX, RETRY_LIMIT, RETRY_LIMIT_PARAM,
};
use l4slab_wifi::edca::{self, Ac, EdcaError, EdcaSet};
use l4slab_wifi::phy::{self, Band, Phy, PhyError, Standard};

use crate::error::{Problem, ScenarioError};
use crate::link::buffer_limit;
use crate::model::{BufferLimit, Flow, Host, QdiscSpec, Side, WifiSpec, WifiStation};
use crate::param::{read, read_keys};
use crate::qdisc::params::{choice, number, with_example};
use crate::raw::{RawEdcaSet, RawHost, RawStation, RawWifi};
use crate::values::{self, describe, join};

/// `wifi_ac` values (highest priority first).
pub const ACS: &[&str] = &["vo", "vi", "be", "bk"];
/// An AP or station queue's buffer when the scenario gives none: Linux's
/// default `txqueuelen`, 1000 packets.
pub const DEFAULT_BUFFER_PACKETS: u32 = 1000;

/// Resolve `[wifi]` (`None`: no cell) and check the hosts' `wifi` and
/// `access` tables against it. `hosts` and `flows` are resolved.
pub(crate) fn resolve(
    raw: Option<&RawWifi>,
    raw_hosts: Option<&BTreeMap<String, RawHost>>,
    hosts: &[Host],
    flows: &[Flow],
) -> Result<Option<WifiSpec>, ScenarioError> {
    check_hosts(raw.is_some(), raw_hosts, hosts)?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let links = resolve_links(raw)?;
    let retry_limit = match &raw.retry_limit {
        Some(v) => read(&RETRY_LIMIT_PARAM, v, "wifi.retry_limit", None)?.int() as u32,
        None => RETRY_LIMIT,
    };
    let no_defaults = RawStation::default();
    let defaults = raw.stations.as_ref().unwrap_or(&no_defaults);
    let keys = |host: Option<&str>| StationKeys {
        defaults,
        host: host.and_then(|name| {
            let r = raw_hosts?.get(name)?.wifi.as_ref()?;
            Some((r, join(&join("hosts", name), "wifi")))
        }),
    };

    // The reference rate of time buffers: the default station's first link.
    let reference = resolve_station(&keys(None), &links)?;
    let first = reference.links[0];
    let rate = match reference.standard {
        Some(s) => links[first.link]
            .for_station(s)
            .expect("checked by resolve_station"),
        None => links[first.link],
    }
    .data_rate(first.mcs);

    let ap = raw.ap.as_ref();
    let ap_qdisc = resolve_queue(
        ap.and_then(|a| a.qdisc.as_ref()),
        ap.and_then(|a| a.buffer.as_ref()),
        "wifi.ap",
        rate,
    )?;
    let station_qdisc = resolve_queue(
        defaults.qdisc.as_ref(),
        defaults.buffer.as_ref(),
        "wifi.stations",
        rate,
    )?;
    let ap_edca = resolve_edca(
        EdcaSet::AP,
        &[(ap.and_then(|a| a.edca.as_ref()), "wifi.ap.edca".into())],
    )?;

    let mut stations = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        if !h.in_cell() {
            continue;
        }
        let s = resolve_station(&keys(Some(&h.name)), &links)?;
        stations.push(WifiStation { host: i, ..s });
    }

    let ap_l4s_ppdu_max = match ap.and_then(|a| a.l4s_ppdu_max.as_ref()) {
        Some(v) => Some(read(&L4S_PPDU_MAX, v, "wifi.ap.l4s_ppdu_max", None)?.dur()),
        None => None,
    };

    let mut spec = WifiSpec {
        links,
        retry_limit,
        ap_edca,
        ap_l4s_ppdu_max,
        ap_qdisc,
        station_qdisc,
        stations,
    };
    // dualpi2's `l_flows` name flows: map them to ids, as the bottleneck's.
    for (written, qdisc, path) in [
        (
            ap.and_then(|a| a.qdisc.as_ref()),
            &mut spec.ap_qdisc,
            "wifi.ap.qdisc",
        ),
        (
            defaults.qdisc.as_ref(),
            &mut spec.station_qdisc,
            "wifi.stations.qdisc",
        ),
    ] {
        let written = written.map(|v| (v, path.to_string()));
        crate::qdisc::resolve_qdisc_flow_classes(written, qdisc, flows)?;
    }
    Ok(Some(spec))
}

/// `[hosts.X.wifi]` needs `[wifi]` and a client-side host; a client-side
/// host has no `[hosts.X.access]` when the cell is its access network.
fn check_hosts(
    wifi: bool,
    raw_hosts: Option<&BTreeMap<String, RawHost>>,
    hosts: &[Host],
) -> Result<(), ScenarioError> {
    for (name, h) in raw_hosts.into_iter().flatten() {
        let path = join("hosts", name);
        let client = hosts
            .iter()
            .any(|x| x.name == *name && x.side == Side::Client);
        if h.wifi.is_some() && !wifi {
            return Err(ScenarioError::invalid(
                &join(&path, "wifi"),
                Problem::Conflict,
                "there is no cell for this station: add a [wifi] table (every client-side \
                 host becomes a station) or remove this one",
                Some(r#"[wifi] with standard = "ax", band = "5GHz""#.into()),
            ));
        }
        if h.wifi.is_some() && !client {
            return Err(ScenarioError::invalid(
                &join(&path, "wifi"),
                Problem::Conflict,
                format!(
                    "host '{name}' is on the server side; only client-side hosts are \
                     stations of the cell"
                ),
                None,
            ));
        }
        let multi_homed = hosts
            .iter()
            .find(|x| x.name == *name && !x.paths.is_empty());
        if let (true, Some(x)) = (h.wifi.is_some(), multi_homed) {
            if x.cell_path().is_none() {
                return Err(ScenarioError::invalid(
                    &join(&path, "wifi"),
                    Problem::Conflict,
                    format!(
                        "host '{name}' is multi-homed and none of its paths is its station: \
                         write wifi = true in the [[{path}.paths]] entry that goes through \
                         the cell, or remove this table"
                    ),
                    None,
                ));
            }
        }
        if wifi && client && h.access.is_some() {
            return Err(ScenarioError::invalid(
                &join(&path, "access"),
                Problem::Conflict,
                format!(
                    "with [wifi] the cell is every client-side host's access network; \
                     remove [{path}.access] (station settings go in [{path}.wifi])"
                ),
                None,
            ));
        }
        if let Some(w) = &h.wifi {
            for (key, v) in [("qdisc", &w.qdisc), ("buffer", &w.buffer)] {
                if v.is_some() {
                    return Err(ScenarioError::invalid(
                        &join(&join(&path, "wifi"), key),
                        Problem::Conflict,
                        "the stations' uplink queues are the same for every station; \
                         set it under [wifi.stations]",
                        Some(format!("{key} = {} under [wifi.stations]", example(key))),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The valid example of a `[wifi]` key (`crate::error::example_value`).
fn example(key: &str) -> String {
    crate::error::example_value(&join("wifi.stations", key)).unwrap_or_default()
}

/// The cell's links: the single-link keys, or `links`.
fn resolve_links(raw: &RawWifi) -> Result<Vec<Phy>, ScenarioError> {
    let Some(list) = &raw.links else {
        return Ok(vec![resolve_phy(raw.phy_keys(), "wifi")?]);
    };
    let written = phy::PARAMS.iter().zip(raw.phy_keys());
    if let Some((p, _)) = written.into_iter().find(|(_, v)| v.is_some()) {
        return Err(ScenarioError::invalid(
            &join("wifi", p.name),
            Problem::Conflict,
            "conflicts with wifi.links: give the PHY either by the single-link keys \
             (standard, band, width, nss) or per link in wifi.links, not both",
            Some(format!(
                "{} = {} inside each entry of wifi.links",
                p.name,
                p.example()
            )),
        ));
    }
    if list.is_empty() {
        return Err(ScenarioError::bad_value(
            "wifi.links",
            "must list at least one link",
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let path = format!("wifi.links[{i}]");
            read_keys(t, &path, phy::PARAMS, None, &[])?;
            resolve_phy([0, 1, 2, 3].map(|k| t.get(phy::PARAMS[k].name)), &path)
        })
        .collect()
}

/// One link's PHY from its keys (in [`phy::PARAMS`] order) under `path`
/// (`wifi`, `wifi.links[1]`), each read by its declaration. Defaults: `ax`,
/// `5GHz`, the standard's usual width there ([`default_width`]), 2 streams
/// (1 for `a`).
fn resolve_phy(keys: [Option<&Value>; 4], path: &str) -> Result<Phy, ScenarioError> {
    let [standard, band, width, nss] = keys;
    let declared = |p: &Param, v: Option<&Value>| match v {
        Some(v) => read(p, v, &join(path, p.name), None),
        None => Ok(p.default),
    };
    let standard = standard_named(declared(&phy::STANDARD, standard)?.choice());
    let band = match declared(&phy::BAND, band)?.choice() {
        "2.4GHz" => Band::G2_4,
        "5GHz" => Band::G5,
        _ => Band::G6,
    };
    let width = match width {
        Some(v) => channel_width(v, &join(path, "width"))?,
        None => default_width(standard, band),
    };
    let nss = match nss {
        Some(v) => read(&phy::NSS, v, &join(path, "nss"), None)?.int() as u32,
        None if standard == Standard::A => 1,
        None => 2,
    };
    Phy::new(standard, band, width, nss).map_err(|e| {
        let (key, example) = match e {
            PhyError::Band { .. } => ("band", phy::BAND.example()),
            PhyError::Width { .. } => {
                ("width", format!("\"{}MHz\"", default_width(standard, band)))
            }
            PhyError::Nss { .. } => (
                "nss",
                if standard == Standard::A { "1" } else { "2" }.into(),
            ),
            PhyError::Mcs { .. } | PhyError::McsNotDefined { .. } => ("mcs", "0".into()),
        };
        let p = join(path, key);
        ScenarioError::invalid(
            &p,
            Problem::BadValue,
            strip_key(&e.to_string(), key),
            Some(example),
        )
    })
}

/// A `standard` choice (declared by `phy::STANDARD` and
/// `config::STATION_STANDARD`, so one of these).
fn standard_named(name: &str) -> Standard {
    match name {
        "a" => Standard::A,
        "n" => Standard::N,
        "ac" => Standard::Ac,
        "ax" => Standard::Ax,
        _ => Standard::Be,
    }
}

/// The width a standard usually runs at in a band: 20 MHz at 2.4 GHz and
/// for `a`, 40 MHz for `n`, 80 MHz for `ac`, `ax`, `be`.
pub fn default_width(standard: Standard, band: Band) -> u32 {
    match (standard, band) {
        (_, Band::G2_4) | (Standard::A, _) => 20,
        (Standard::N, _) => 40,
        _ => 80,
    }
}

/// `"80MHz"` (also `"80 MHz"`, `"80mhz"`) or the integer `80`
/// ([`phy::WIDTH`], whose example the errors carry).
fn channel_width(v: &Value, path: &str) -> Result<u32, ScenarioError> {
    let example = phy::WIDTH.example();
    let bad = || {
        ScenarioError::invalid(
            path,
            Problem::BadValue,
            format!("{v} is not a channel width in MHz (20, 40, 80, 160 or 320)"),
            Some(example.clone()),
        )
    };
    match v {
        Value::Integer(i) => u32::try_from(*i).map_err(|_| bad()),
        Value::String(s) => {
            let t = s.trim();
            let digits = t
                .strip_suffix("MHz")
                .or_else(|| t.strip_suffix("mhz"))
                .unwrap_or(t)
                .trim();
            digits.parse::<u32>().map_err(|_| bad())
        }
        other => Err(with_example(
            ScenarioError::wrong_type(path, "a width such as \"80MHz\"", &describe(other)),
            &example,
        )),
    }
}

/// A model error's message without its leading `key: ` (the path names it).
fn strip_key(message: &str, key: &str) -> String {
    message
        .strip_prefix(key)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(message)
        .to_string()
}

/// A queue's buffer and qdisc under `path` (`wifi.ap`, `wifi.stations`):
/// a FIFO of [`DEFAULT_BUFFER_PACKETS`] unless written; a time buffer
/// converts at `rate`.
fn resolve_queue(
    qdisc: Option<&Value>,
    buffer: Option<&Value>,
    path: &str,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let limit = match buffer {
        Some(v) => {
            let p = join(path, "buffer");
            buffer_limit(values::buffer(v, &p)?, rate, &p)?
        }
        None => BufferLimit::Packets(DEFAULT_BUFFER_PACKETS),
    };
    match qdisc {
        Some(v) => crate::qdisc::resolve(v, &join(path, "qdisc"), limit, rate),
        None => Ok(crate::qdisc::fifo(limit)),
    }
}

/// A station's keys: its own (`[hosts.X.wifi]`, and that table's path)
/// over `[wifi.stations]`.
struct StationKeys<'a> {
    defaults: &'a RawStation,
    host: Option<(&'a RawStation, String)>,
}

impl<'a> StationKeys<'a> {
    /// The value of a key and its path: the host's if written, else the default's.
    fn get<T>(
        &self,
        key: &str,
        field: impl Fn(&'a RawStation) -> Option<&'a T>,
    ) -> Option<(&'a T, String)> {
        if let Some((h, path)) = &self.host {
            if let Some(v) = field(h) {
                return Some((v, join(path, key)));
            }
        }
        field(self.defaults).map(|v| (v, join("wifi.stations", key)))
    }
}

/// One station from its keys (its `host` index is set by the caller).
fn resolve_station(keys: &StationKeys<'_>, cell: &[Phy]) -> Result<WifiStation, ScenarioError> {
    // links: which of the cell's links, in the station's order.
    let (links, links_path) = match keys.get("links", |r| r.links.as_ref()) {
        Some((l, p)) => (l.clone(), p),
        None => (vec![0], "wifi.stations.links".to_string()),
    };
    if links.is_empty() {
        return Err(ScenarioError::bad_value(
            &links_path,
            "must list at least one link of the cell",
        ));
    }
    let mut idx: Vec<usize> = Vec::with_capacity(links.len());
    for (i, &l) in links.iter().enumerate() {
        let p = format!("{links_path}[{i}]");
        let n = cell.len();
        let Some(l) = usize::try_from(l).ok().filter(|&l| l < n) else {
            return Err(ScenarioError::bad_value(
                &p,
                format!(
                    "{l} is not a link of the cell: [wifi] has {n} link{}, numbered 0..={}",
                    if n == 1 { "" } else { "s" },
                    n - 1
                ),
            ));
        };
        if idx.contains(&l) {
            return Err(ScenarioError::conflict(
                &p,
                format!("link {l} is listed twice"),
            ));
        }
        idx.push(l);
    }
    let shown = format!("{links_path} = {links:?}");

    let snr = match keys.get("snr_db", |r| r.snr_db.as_ref()) {
        Some((v, p)) => per_link(v, &p, idx.len(), &shown, &cell::SNR_DB, |v, p| {
            number(v, p, &cell::SNR_DB.example())
        })?,
        None => vec![(DEFAULT_SNR_DB, String::new()); idx.len()],
    };
    let mcs = match keys.get("mcs", |r| r.mcs.as_ref()) {
        Some((v, p)) => Some(per_link(v, &p, idx.len(), &shown, &cell::MCS, |v, p| {
            Ok(read(&cell::MCS, v, p, None)?.int() as u8)
        })?),
        None => None,
    };
    let standard = match keys.get("standard", |r| r.standard.as_ref()) {
        Some((v, p)) => Some((
            standard_named(read(&cell::STATION_STANDARD, v, &p, None)?.choice()),
            p,
        )),
        None => None,
    };
    // Multi-link operation is 802.11be's (§35.3): an older station has one link.
    if let Some((s, p)) = &standard {
        if *s < Standard::Be && idx.len() > 1 {
            return Err(ScenarioError::invalid(
                p,
                Problem::Conflict,
                format!(
                    "an {s} station cannot use {} links ({shown}): multi-link operation needs 802.11be",
                    idx.len()
                ),
                Some("\"be\"".into()),
            ));
        }
    }
    let mut station_links = Vec::with_capacity(idx.len());
    for (i, &l) in idx.iter().enumerate() {
        // The link as the station speaks it: its own generation, if older.
        let phy = &match &standard {
            None => cell[l],
            Some((s, p)) => cell[l].for_station(*s).map_err(|e| {
                ScenarioError::invalid(
                    p,
                    Problem::Conflict,
                    format!("link {l} ({}): {e}", describe_phy(&cell[l])),
                    Some(format!("\"{}\"", cell[l].standard.key())),
                )
            })?,
        };
        let snr_db = snr[i].0;
        let mcs = match &mcs {
            None => phy.best_mcs(snr_db),
            Some(m) => {
                let (mcs, p) = (m[i].0, &m[i].1);
                phy.check_mcs(mcs).map_err(|e| {
                    ScenarioError::invalid(
                        p,
                        Problem::BadValue,
                        format!(
                            "on link {l} ({}): {}",
                            describe_phy(phy),
                            strip_key(&e.to_string(), "mcs")
                        ),
                        Some(phy.best_mcs(snr_db).to_string()),
                    )
                })?;
                mcs
            }
        };
        station_links.push(StationLink {
            link: l,
            snr_db,
            mcs,
        });
    }

    let edca = resolve_edca(
        EdcaSet::STATION,
        &[
            (keys.defaults.edca.as_ref(), "wifi.stations.edca".into()),
            (
                keys.host.as_ref().and_then(|(h, _)| h.edca.as_ref()),
                keys.host
                    .as_ref()
                    .map_or_else(String::new, |(_, p)| join(p, "edca")),
            ),
        ],
    )?;
    let scan = match keys.get("scan", |r| r.scan.as_ref()) {
        Some((v, p)) => resolve_scan(v, &p)?,
        None => None,
    };
    Ok(WifiStation {
        host: usize::MAX,
        edca,
        links: station_links,
        scan,
        // A station at least as new as each of its links changes nothing
        // (`Phy::for_station` keeps the link): kept unset, so that such a
        // scenario is the same cell (and the same sweep or study cell key).
        standard: standard
            .map(|(s, _)| s)
            .filter(|&s| idx.iter().any(|&l| s < cell[l].standard)),
    })
}

/// `802.11ax 80 MHz 2 SS at 5GHz`.
pub fn describe_phy(phy: &Phy) -> String {
    format!(
        "{} {} MHz {} SS at {}",
        phy.standard, phy.width_mhz, phy.nss, phy.band
    )
}

/// One value for all `n` links or an array of one per link, of the
/// parameter `param`; each with the path it was read at.
fn per_link<T: Copy>(
    v: &Value,
    path: &str,
    n: usize,
    links: &str,
    param: &Param,
    one: impl Fn(&Value, &str) -> Result<T, ScenarioError>,
) -> Result<Vec<(T, String)>, ScenarioError> {
    let Value::Array(items) = v else {
        let x = one(v, path)?;
        return Ok(vec![(x, path.to_string()); n]);
    };
    if items.len() != n {
        return Err(ScenarioError::invalid(
            path,
            Problem::Conflict,
            format!(
                "{} values for {n} link{} ({links}); give one value for all links or one per \
                 link, in the order of links",
                items.len(),
                if n == 1 { "" } else { "s" }
            ),
            Some(param.example()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let p = format!("{path}[{i}]");
            one(item, &p).map(|x| (x, p))
        })
        .collect()
}

/// `scan = { every, duration, first, visits, gap }` or `false`.
fn resolve_scan(v: &Value, path: &str) -> Result<Option<Scan>, ScenarioError> {
    let t = match v {
        Value::Boolean(false) => return Ok(None),
        Value::Table(t) => t,
        Value::Boolean(true) => {
            return Err(ScenarioError::bad_value(
                path,
                "true does not say how often or how long; give a table, or false for no scan",
            ))
        }
        other => {
            return Err(ScenarioError::wrong_type(
                path,
                "a table or false",
                &describe(other),
            ))
        }
    };
    let values = read_keys(t, path, cell::SCAN_PARAMS, None, &[])?;
    let required = |p: &Param| match values.get(p) {
        Some(v) => Ok(v.dur()),
        None => Err(ScenarioError::missing_with(
            &join(path, p.name),
            format!("{} = {}", p.name, p.example()),
        )),
    };
    let optional = |p: &Param| values.get(p).unwrap_or(p.default);
    let every = required(&cell::SCAN_EVERY)?;
    let duration = required(&cell::SCAN_DURATION)?;
    let visits = optional(&cell::SCAN_VISITS).int() as u32;
    let gap = optional(&cell::SCAN_GAP).dur();
    let span =
        duration.saturating_mul(u64::from(visits)) + gap.saturating_mul(u64::from(visits - 1));
    if span >= every {
        return Err(ScenarioError::invalid(
            &join(path, cell::SCAN_DURATION.name),
            Problem::Conflict,
            format!(
                "a scan takes {} (visits x duration + gaps), which must be shorter than every = {} \
                 (the station returns between scans)",
                values::show_dur(span),
                values::show_dur(every)
            ),
            Some(cell::SCAN_DURATION.example()),
        ));
    }
    let first = values.get(&cell::SCAN_FIRST).map_or(every, |v| v.dur());
    Ok(Some(Scan {
        every,
        duration,
        first,
        visits,
        gap,
    }))
}

/// `base` with the overrides of each layer in turn (a later layer wins,
/// key by key); each layer's `edca` table and its path.
fn resolve_edca(
    base: EdcaSet,
    layers: &[(Option<&RawEdcaSet>, String)],
) -> Result<EdcaSet, ScenarioError> {
    let mut set = base;
    for ac in Ac::ALL {
        let p = set.get_mut(ac);
        // Per parameter: the layer and the path its value was written at.
        let mut from: [Option<(usize, String)>; 4] = Default::default();
        for (rank, (raw, path)) in layers.iter().enumerate() {
            let Some(r) = raw.and_then(|r| r.ac(ac)) else {
                continue;
            };
            for (k, param) in edca::PARAMS.iter().enumerate() {
                let Some(v) = r.get(k) else { continue };
                let at = join(&join(path, ac.name()), param.name);
                let v = read(param, v, &at, None)?;
                match k {
                    0 => p.aifsn = v.int() as u32,
                    1 => p.cw_min = v.int() as u32,
                    2 => p.cw_max = v.int() as u32,
                    _ => p.txop = v.dur(),
                }
                from[k] = Some((rank, at));
            }
        }
        p.validate().map_err(|e| edca_error(&e, &from))?;
    }
    Ok(set)
}

/// An [`EdcaError`] at the key that was written (the defaults are valid,
/// so one was): for `cw_max` below `cw_min`, the one written at the most
/// specific layer (`cw_max` on a tie).
fn edca_error(e: &EdcaError, from: &[Option<(usize, String)>; 4]) -> ScenarioError {
    let path = |k: usize| from[k].as_ref().map_or("wifi", |(_, p)| p.as_str());
    let (k, message) = match e {
        EdcaError::Aifsn(_) => (0, strip_key(&e.to_string(), "aifsn")),
        EdcaError::Cw { param, .. } => {
            let k = if *param == "cw_min" { 1 } else { 2 };
            (k, strip_key(&e.to_string(), param))
        }
        EdcaError::CwOrder { min, max } => {
            let rank = |k: usize| from[k].as_ref().map(|(r, _)| *r);
            if rank(1) > rank(2) {
                (1, format!("{min} is above cw_max {max}"))
            } else {
                (2, format!("{max} is below cw_min {min}"))
            }
        }
        EdcaError::Txop(_) => (3, strip_key(&e.to_string(), "txop")),
    };
    ScenarioError::invalid(
        path(k),
        Problem::BadValue,
        message,
        Some(edca::PARAMS[k].example()),
    )
}

/// `wifi_ac = "vi"`.
pub(crate) fn access_category(v: &Value, path: &str) -> Result<Ac, ScenarioError> {
    choice(v, path, "access category", ACS).map(|s| Ac::parse(s).expect("listed in ACS"))
}
