//! What a Wi-Fi cell is made of: its links (channels), its stations and the
//! queues that feed the air. Built by the scenario layer, validated here.

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::Dur;
use serde::Serialize;

use super::edca::{Ac, EdcaSet};
use super::phy::{Phy, PhyError, Standard};

/// MPDU overhead on top of the IP packet: QoS data header 26 B (24 + QoS
/// Control 2), LLC/SNAP 8 B, FCS 4 B (802.11-2020 §9.3.2.1; no HT Control,
/// no security).
pub const MAC_OVERHEAD: u32 = 38;

/// `[wifi] retry_limit`: failed attempts of one MPDU before it is dropped.
pub const RETRY_LIMIT_PARAM: Param = Param {
    name: "retry_limit",
    aliases: &[],
    linux: "dot11ShortRetryLimit",
    kind: Kind::Int { min: 1, max: 255 },
    default: ParamValue::Int(7),
    source: "dot11ShortRetryLimit's default, 802.11-2020 Annex C",
    doc: "failed attempts of one MPDU before it is dropped",
};

/// `[wifi.ap] l4s_ppdu_max`: the airtime bound of the AP's A-MPDUs to a
/// station with L4S traffic ([`crate::l4s_aggregate`]).
pub const L4S_PPDU_MAX: Param = Param {
    name: "l4s_ppdu_max",
    aliases: &[],
    linux: "A-MPDU duration limit (ath9k `ath_update_max_aggr_framelen`, iwlwifi `low_latency_agg_frame_limit`)",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Unset {
        example: "\"1ms\"",
    },
    source: "no bound beyond aPPDUMaxTime and the TXOP limit, as mac80211 and an AP without L4S (docs/models/wifi.md, \"An L4S AP's aggregates\")",
    doc: "an A-MPDU the AP sends a station that carries an L4S packet (ECT(1) or CE), or follows one that did, lasts at most this on the air",
};

/// The AP's keys of `[wifi.ap]` a declaration describes (its `qdisc`,
/// `buffer` and `edca` are the scenario's), in the docs' order.
pub const AP_PARAMS: &[Param] = &[L4S_PPDU_MAX];

/// The cell's keys of `[wifi]` a declaration describes (the PHY's
/// `standard`, `band`, `width`, `nss` depend on each other: the scenario
/// layer checks them with `phy::Phy::new`).
pub const CELL_PARAMS: &[Param] = &[RETRY_LIMIT_PARAM];

/// dot11ShortRetryLimit's default (802.11-2020 Annex C): attempts of one MPDU
/// after the first before it is discarded ([`RETRY_LIMIT_PARAM`]).
pub const RETRY_LIMIT: u32 = match RETRY_LIMIT_PARAM.default {
    ParamValue::Int(n) => n as u32,
    _ => panic!("retry_limit is an integer"),
};

/// `snr_db` of a station: per link, or one for all its links.
pub const SNR_DB: Param = Param {
    name: "snr_db",
    aliases: &[],
    linux: "SNR",
    kind: Kind::Custom("a number (dB), or an array of one per link"),
    default: ParamValue::Num(40.0),
    source: "a good link close to the AP: every PHY picks its highest MCS at 20..80 MHz",
    doc: "signal-to-noise ratio in dB (over the noise of a 20 MHz channel), both directions",
};

/// `mcs` of a station: each value is read as this integer, then checked
/// against its link's PHY (`phy::Phy::check_mcs`).
pub const MCS: Param = Param {
    name: "mcs",
    aliases: &[],
    linux: "MCS index",
    kind: Kind::Int { min: 0, max: 255 },
    default: ParamValue::Unset { example: "7" },
    source: "ideal rate control: the best MCS at the link's SNR (`Phy::best_mcs`)",
    doc: "a fixed MCS index, one for all links or an array of one per link; it must exist on its link",
};

/// `links` of a station.
pub const LINKS: Param = Param {
    name: "links",
    aliases: &[],
    linux: "MLO links",
    kind: Kind::Custom("indices of the cell's links, in the station's order (`[1, 0]`)"),
    default: ParamValue::Unset { example: "[0, 1]" },
    source: "the cell's first link, `[0]`",
    doc: "which links of the cell the station uses (Wi-Fi 7 multi-link operation with two or more)",
};

/// `standard` of a station: its Wi-Fi generation ([`Phy::for_station`]).
pub const STATION_STANDARD: Param = Param {
    name: "standard",
    aliases: &[],
    linux: "the station's HT/VHT/HE/EHT Capabilities",
    kind: Kind::Choice(&["a", "n", "ac", "ax", "be"]),
    default: ParamValue::Unset { example: "\"ax\"" },
    source: "the generation of each of its links",
    doc: "the station's generation: on a newer link both ends speak this one (a Wi-Fi 6 client on a Wi-Fi 7 AP: HE rates, a 256-MPDU window, at most 160 MHz); on an older link, the link's",
};

/// `scan` of a station: a table of [`SCAN_PARAMS`], or `false`.
pub const SCAN: Param = Param {
    name: "scan",
    aliases: &[],
    linux: "background scan",
    kind: Kind::Custom("a table of the scan keys, or `false`"),
    default: ParamValue::Flag(false),
    source: "no scan",
    doc: "the station leaves its channel to visit others: the scan keys below; `false`: no scan",
};

/// The keys of a station (`[wifi.stations]`, `[hosts.NAME.wifi]`) this
/// crate models (the queues' `qdisc` and `buffer`, and `edca`, are the
/// scenario's), in the docs' order.
pub const STATION_PARAMS: &[Param] = &[STATION_STANDARD, SNR_DB, MCS, LINKS, SCAN];

/// [`SNR_DB`]'s default.
pub const DEFAULT_SNR_DB: f64 = match SNR_DB.default {
    ParamValue::Num(x) => x,
    _ => panic!("snr_db is a number"),
};

/// `scan.every`: required.
pub const SCAN_EVERY: Param = Param {
    name: "every",
    aliases: &[],
    linux: "bgscan interval",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Unset { example: "\"30s\"" },
    source: "required",
    doc: "time from one scan's start to the next's",
};

/// `scan.duration`: required.
pub const SCAN_DURATION: Param = Param {
    name: "duration",
    aliases: &[],
    linux: "dwell time",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Unset {
        example: "\"100ms\"",
    },
    source: "required",
    doc: "time away on each channel visited",
};

/// `scan.first`.
pub const SCAN_FIRST: Param = Param {
    name: "first",
    aliases: &[],
    linux: "first scan",
    kind: Kind::Duration { zero_ok: true },
    default: ParamValue::Unset { example: "\"10s\"" },
    source: "`every`",
    doc: "when the first scan starts",
};

/// `scan.visits`.
pub const SCAN_VISITS: Param = Param {
    name: "visits",
    aliases: &[],
    linux: "channels per scan",
    kind: Kind::Int { min: 1, max: 1000 },
    default: ParamValue::Int(1),
    source: "one absence per scan",
    doc: "channels visited per scan, one after another",
};

/// `scan.gap`.
pub const SCAN_GAP: Param = Param {
    name: "gap",
    aliases: &[],
    linux: "return to the operating channel",
    kind: Kind::Duration { zero_ok: true },
    default: ParamValue::Dur(Dur::ZERO),
    source: "back-to-back visits",
    doc: "time back on the station's own channel between two visits",
};

/// The keys of `scan = { ... }` ([`Scan`]), in the docs' order; a whole
/// scan (`visits × duration + gaps`) must end before the next.
pub const SCAN_PARAMS: &[Param] = &[SCAN_EVERY, SCAN_DURATION, SCAN_FIRST, SCAN_VISITS, SCAN_GAP];

/// One station's attachment to one link of the cell.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StationLink {
    /// Index into [`CellConfig::links`].
    pub link: usize,
    /// Signal-to-noise ratio at the receiver (both directions).
    pub snr_db: f64,
    /// The MCS both ends use on this link (ideal rate control picks the
    /// best for `snr_db` unless the scenario fixes it).
    pub mcs: u8,
}

/// A station leaving the channel to scan, every `every` from `first`: a
/// scan visits `visits` other channels one after another, away for
/// `duration` on each and back on its own channel for `gap` between two
/// (how drivers scan channel by channel while associated; `visits = 1`:
/// one absence of `duration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Scan {
    pub every: Dur,
    pub duration: Dur,
    pub first: Dur,
    pub visits: u32,
    pub gap: Dur,
}

impl Scan {
    /// From the first absence to the end of the last.
    pub fn span(&self) -> Dur {
        self.duration.saturating_mul(u64::from(self.visits))
            + self
                .gap
                .saturating_mul(u64::from(self.visits.saturating_sub(1)))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StationConfig {
    /// The host's name.
    pub name: String,
    /// The EDCA parameters the station actually uses (the advertised set
    /// unless it ignores them).
    pub edca: EdcaSet,
    /// One link, or two for Wi-Fi 7 multi-link operation.
    pub links: Vec<StationLink>,
    pub scan: Option<Scan>,
    /// The station's generation (None: the same as each link's).
    pub standard: Option<Standard>,
}

impl StationConfig {
    /// What `link` (one of the cell's links) is for this station: the
    /// link itself, or what it becomes for an older station ([`Phy::for_station`]).
    pub fn phy(&self, link: &Phy) -> Result<Phy, PhyError> {
        match self.standard {
            Some(s) => link.for_station(s),
            None => Ok(*link),
        }
    }
}

/// Which way a queue sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AirDir {
    /// The AP's queue for one station (downlink).
    ApToStation,
    /// A station's queue (uplink).
    StationToAp,
}

/// One queue feeding the air: its qdisc lives in the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QueueSpec {
    /// Index into [`CellConfig::stations`].
    pub station: usize,
    pub ac: Ac,
    pub dir: AirDir,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellConfig {
    /// The cell's channels; an AP with several is a multi-link AP.
    pub links: Vec<Phy>,
    /// The AP's own EDCA parameters.
    pub ap_edca: EdcaSet,
    /// Failed attempts of one MPDU before it is dropped.
    pub retry_limit: u32,
    /// The AP's airtime bound on the A-MPDUs of a station with L4S traffic
    /// ([`L4S_PPDU_MAX`]; None: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l4s_ppdu_max: Option<Dur>,
    pub stations: Vec<StationConfig>,
    pub queues: Vec<QueueSpec>,
}

/// Why a cell cannot be built (the scenario layer adds the key path).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CellError {
    #[error("links: a cell needs at least one link")]
    NoLinks,
    #[error(
        "stations.{station}.links: a station needs one or more links of the cell (0..{links})"
    )]
    BadLink { station: String, links: usize },
    #[error("stations.{station}.links: link {link} listed twice")]
    DuplicateLink { station: String, link: usize },
    #[error("stations.{station}.standard: on link {link}: {error}")]
    Standard {
        station: String,
        link: usize,
        error: PhyError,
    },
    #[error("stations.{station}.standard: an {standard} station cannot use {links} links: multi-link operation needs 802.11be")]
    MultiLink {
        station: String,
        standard: Standard,
        links: usize,
    },
    #[error("stations.{station}.mcs: {mcs} is above the link's highest MCS {max}")]
    Mcs { station: String, mcs: u8, max: u8 },
    #[error("stations.{station}.scan: a scan (visits x duration + gaps = {span}) must end before the next (every {every}), with at least one visit")]
    Scan {
        station: String,
        span: Dur,
        every: Dur,
    },
    #[error("queues: queue {0} names a station that does not exist")]
    QueueStation(usize),
    #[error("queues: two queues for station {station}, {ac}, {dir:?}")]
    DuplicateQueue {
        station: String,
        ac: &'static str,
        dir: AirDir,
    },
    #[error("retry_limit: must be at least 1")]
    RetryLimit,
    #[error("ap.l4s_ppdu_max: must be more than 0")]
    L4sPpduMax,
}

impl CellConfig {
    pub fn validate(&self) -> Result<(), CellError> {
        if self.links.is_empty() {
            return Err(CellError::NoLinks);
        }
        if self.retry_limit == 0 {
            return Err(CellError::RetryLimit);
        }
        if self.l4s_ppdu_max.is_some_and(|d| d.is_zero()) {
            return Err(CellError::L4sPpduMax);
        }
        for s in &self.stations {
            if s.links.is_empty() {
                return Err(CellError::BadLink {
                    station: s.name.clone(),
                    links: self.links.len(),
                });
            }
            // Multi-link operation is 802.11be's (802.11be §35.3).
            if let Some(standard) = s.standard.filter(|&st| st < Standard::Be) {
                if s.links.len() > 1 {
                    return Err(CellError::MultiLink {
                        station: s.name.clone(),
                        standard,
                        links: s.links.len(),
                    });
                }
            }
            for (i, l) in s.links.iter().enumerate() {
                let Some(phy) = self.links.get(l.link) else {
                    return Err(CellError::BadLink {
                        station: s.name.clone(),
                        links: self.links.len(),
                    });
                };
                if s.links[..i].iter().any(|o| o.link == l.link) {
                    return Err(CellError::DuplicateLink {
                        station: s.name.clone(),
                        link: l.link,
                    });
                }
                let phy = s.phy(phy).map_err(|error| CellError::Standard {
                    station: s.name.clone(),
                    link: l.link,
                    error,
                })?;
                if l.mcs >= phy.mcs_count() {
                    return Err(CellError::Mcs {
                        station: s.name.clone(),
                        mcs: l.mcs,
                        max: phy.mcs_count() - 1,
                    });
                }
            }
            if let Some(sc) = s.scan {
                if sc.span() >= sc.every || sc.visits == 0 || sc.duration.is_zero() {
                    return Err(CellError::Scan {
                        station: s.name.clone(),
                        span: sc.span(),
                        every: sc.every,
                    });
                }
            }
        }
        for (i, q) in self.queues.iter().enumerate() {
            let Some(st) = self.stations.get(q.station) else {
                return Err(CellError::QueueStation(i));
            };
            if self.queues[..i].contains(q) {
                return Err(CellError::DuplicateQueue {
                    station: st.name.clone(),
                    ac: q.ac.name(),
                    dir: q.dir,
                });
            }
        }
        Ok(())
    }
}
