//! What a Wi-Fi cell is made of: its links (channels), its stations and the
//! queues that feed the air. Built by the scenario layer, validated here.

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::Dur;
use serde::Serialize;

use super::edca::{Ac, EdcaSet};
use super::phy::Phy;

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
}

impl CellConfig {
    pub fn validate(&self) -> Result<(), CellError> {
        if self.links.is_empty() {
            return Err(CellError::NoLinks);
        }
        if self.retry_limit == 0 {
            return Err(CellError::RetryLimit);
        }
        for s in &self.stations {
            if s.links.is_empty() {
                return Err(CellError::BadLink {
                    station: s.name.clone(),
                    links: self.links.len(),
                });
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
