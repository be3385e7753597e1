//! The scenario file as written: serde input structs, one per TOML table.
//!
//! Every struct denies unknown keys, so a typo is an error naming its key path
//! and listing the valid keys. Every field is optional here: defaults and
//! "missing" errors are decided in [`crate::resolve`], which knows the key
//! path and a good example. Values with units (`"20Mbit"`), and values that
//! may be a string *or* a table (`qdisc`, `loss`, `app`, `cc`), are kept as
//! [`toml::Value`] and interpreted there, so their errors can say what a valid
//! value looks like instead of what serde expected.
//!
//! A per-kind table (`loss = { kind = "bernoulli", ... }`, an app, a qdisc)
//! is read in a second step, once `kind` has been read, by that kind's
//! declarations (`crate::param`), so that each kind rejects keys that belong
//! to another; so are the link tables (`[bottleneck]`, a host's `access`),
//! kept here as tables and checked against `l4slab_link::config`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Value;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawScenario {
    pub format: Option<i64>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub duration: Option<Value>,
    /// The start of the summary's measurement window.
    pub warmup: Option<Value>,
    pub seed: Option<i64>,
    pub sample_interval: Option<Value>,
    pub packet_trace: Option<bool>,
    /// Capture the packets of every queue in pcap files.
    pub pcap: Option<bool>,
    /// `[bottleneck]`: read by the link's declarations
    /// (`l4slab_link::config::PARAMS`, `crate::link`).
    pub bottleneck: Option<toml::Table>,
    /// `[wifi]`: a Wi-Fi cell as the client hosts' access network.
    pub wifi: Option<RawWifi>,
    /// Host name -> host; `BTreeMap` so iteration is in name order.
    pub hosts: Option<BTreeMap<String, RawHost>>,
    pub flows: Option<Vec<RawFlow>>,
    /// `[[households]]`: preset mixes of flows (`crate::household`).
    pub households: Option<Vec<crate::household::RawHousehold>>,
    /// `[sweep]`: the grid `l4slab sweep` makes of this file; its shape is
    /// checked ([`crate::sweep`]), and it is not part of the resolved scenario.
    pub sweep: Option<crate::sweep::RawSweep>,
}

/// `[hosts.<name>]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawHost {
    pub side: Option<String>,
    pub access_delay: Option<Value>,
    /// `[hosts.<name>.access]`: the host's own access link, read by the
    /// link's declarations (`l4slab_link::config::ACCESS_PARAMS`, `crate::access`).
    pub access: Option<toml::Table>,
    /// `[hosts.<name>.wifi]`: this station's overrides of `[wifi.stations]`.
    pub wifi: Option<RawStation>,
    /// `[[hosts.<name>.paths]]`: a multi-homed host's ways out, in
    /// preference order (`crate::paths`).
    pub paths: Option<Vec<RawPath>>,
    /// `racing = "250ms"` or `false`: connection racing over `paths`.
    pub racing: Option<Value>,
}

/// One `[[hosts.<name>.paths]]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawPath {
    pub name: Option<String>,
    pub access_delay: Option<Value>,
    /// Read as `[hosts.<name>.access]` is (`crate::access`).
    pub access: Option<toml::Table>,
    /// `wifi = true`: the path is the host's station in the `[wifi]` cell.
    pub wifi: Option<Value>,
    /// `[{ start = "2s", end = "5s" }]`: windows in which the path is down.
    pub outages: Option<Vec<RawOutage>>,
    /// `[{ at = "3s", rate = "2Mbit" }]`: the path's rate from then on.
    pub rate_changes: Option<Vec<RawRateChange>>,
}

/// One rate change of a path.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawRateChange {
    pub at: Option<Value>,
    pub rate: Option<Value>,
}

/// One outage window of a path.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawOutage {
    pub start: Option<Value>,
    pub end: Option<Value>,
}

/// One `[[flows]]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawFlow {
    pub name: Option<String>,
    pub client: Option<String>,
    pub server: Option<String>,
    pub direction: Option<String>,
    /// A name (`"prague"`) or a table with `kind` and options.
    pub cc: Option<Value>,
    pub start: Option<Value>,
    pub count: Option<i64>,
    /// With `count`: copy `j` starts `j × stagger` after `start`.
    pub stagger: Option<Value>,
    pub app: Option<Value>,
    /// Read by the declarations of `l4slab_tcp::config::PARAMS` (`crate::flows`).
    pub transport: Option<Value>,
    pub ecn: Option<Value>,
    /// The Wi-Fi access category of the flow's packets (`"vi"`).
    pub wifi_ac: Option<Value>,
}

/// `[wifi]`: the cell's PHY (one link by the top-level keys, or several
/// in `links`), its retry limit, the AP and the stations' defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawWifi {
    /// The PHY keys, each read by its declaration (`l4slab_wifi::phy::PARAMS`).
    pub standard: Option<Value>,
    pub band: Option<Value>,
    /// `"80MHz"` or `80`.
    pub width: Option<Value>,
    pub nss: Option<Value>,
    /// Read by its declaration (`l4slab_wifi::config::RETRY_LIMIT_PARAM`).
    pub retry_limit: Option<Value>,
    /// Multi-link operation: one table per link, with the four PHY keys
    /// above (exclusive with them), read by `l4slab_wifi::phy::PARAMS`.
    pub links: Option<Vec<toml::Table>>,
    pub ap: Option<RawWifiAp>,
    pub stations: Option<RawStation>,
}

impl RawWifi {
    /// The single-link PHY keys as written, in `l4slab_wifi::phy::PARAMS` order.
    pub fn phy_keys(&self) -> [Option<&Value>; 4] {
        [&self.standard, &self.band, &self.width, &self.nss].map(Option::as_ref)
    }
}

/// `[wifi.ap]`: the AP's queues (one per station and AC) and its EDCA.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawWifiAp {
    pub qdisc: Option<Value>,
    pub buffer: Option<Value>,
    pub edca: Option<RawEdcaSet>,
    pub l4s_ppdu_max: Option<Value>,
}

/// `edca = { vo = {...}, be = {...} }`: overrides per access category.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawEdcaSet {
    pub vo: Option<RawEdcaParams>,
    pub vi: Option<RawEdcaParams>,
    pub be: Option<RawEdcaParams>,
    pub bk: Option<RawEdcaParams>,
}

impl RawEdcaSet {
    /// The overrides of access category `ac`.
    pub fn ac(&self, ac: l4slab_wifi::edca::Ac) -> Option<&RawEdcaParams> {
        use l4slab_wifi::edca::Ac;
        match ac {
            Ac::Vo => self.vo.as_ref(),
            Ac::Vi => self.vi.as_ref(),
            Ac::Be => self.be.as_ref(),
            Ac::Bk => self.bk.as_ref(),
        }
    }
}

/// One access category's EDCA overrides, each read by its declaration
/// (`l4slab_wifi::edca::PARAMS`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawEdcaParams {
    pub aifsn: Option<Value>,
    pub cw_min: Option<Value>,
    pub cw_max: Option<Value>,
    pub txop: Option<Value>,
}

impl RawEdcaParams {
    /// The value written for `l4slab_wifi::edca::PARAMS[k]`.
    pub fn get(&self, k: usize) -> Option<&Value> {
        [&self.aifsn, &self.cw_min, &self.cw_max, &self.txop][k].as_ref()
    }
}

/// `[wifi.stations]` (every station's defaults) and `[hosts.<name>.wifi]`
/// (one station's overrides; `qdisc` and `buffer` are rejected there).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawStation {
    pub qdisc: Option<Value>,
    pub buffer: Option<Value>,
    pub edca: Option<RawEdcaSet>,
    /// The station's generation (read by `l4slab_wifi::config::STATION_STANDARD`).
    pub standard: Option<Value>,
    /// A number, or an array of one per link.
    pub snr_db: Option<Value>,
    /// An integer, or an array of one per link.
    pub mcs: Option<Value>,
    pub links: Option<Vec<i64>>,
    /// A table (read by `l4slab_wifi::config::SCAN_PARAMS`), or `false`.
    pub scan: Option<Value>,
}
