//! What a Wi-Fi cell counts: airtime per station, collisions, retries,
//! access delay per AC, aggregate sizes, scan gaps.

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::Dur;
use serde_json::{json, Map, Value};

use super::edca::Ac;
use super::phy::Phy;

/// Per link (channel).
#[derive(Clone, Debug, Default)]
pub struct LinkCounters {
    /// Time the medium was busy (PPDUs, responses, collisions, timeouts).
    pub busy: Dur,
    /// Channel accesses won (TXOPs, collided ones included).
    pub txops: u64,
    pub ppdus: u64,
    /// Accesses where two or more transmitters started in the same slot.
    pub collisions: u64,
    /// Accesses where two ACs of one transmitter counted down together
    /// (802.11-2020 §10.23.2.4: the higher priority one sends).
    pub internal_collisions: u64,
}

/// Per station (its uplink and the AP's downlink to it).
#[derive(Clone, Debug, Default)]
pub struct StationCounters {
    /// Airtime of the exchanges to and from the station (PPDU + SIFS +
    /// response, or PPDU + ACK timeout when it failed).
    pub airtime: Dur,
    /// MPDU transmissions, first attempts and retries.
    pub mpdu_attempts: u64,
    /// Failed MPDU transmissions (lost to noise or a collision).
    pub mpdu_failures: u64,
    /// MPDUs dropped at the retry limit.
    pub mpdu_drops: u64,
    /// Collided exchanges it took part in (as transmitter or receiver).
    pub collisions: u64,
    /// Times it left the channel to scan, and the time away.
    pub scans: u64,
    pub scan_time: Dur,
    /// The longest gap in service: a scan.
    pub longest_scan: Dur,
}

pub struct CellStats {
    pub links: Vec<LinkCounters>,
    pub stations: Vec<StationCounters>,
    /// From the moment an AC has something to send (on a link) to the start
    /// of its transmission there, per AC (IEEE 802.11 "MAC access delay").
    pub access_delay: [DurStats; 4],
    /// `ampdu_mpdus[k]`: PPDUs that carried k MPDUs.
    pub ampdu_mpdus: Vec<u64>,
}

impl CellStats {
    pub fn new(links: usize, stations: usize, max_ampdu: usize) -> Self {
        // 1 us resolution up to 10 s.
        let hist = || DurStats::with_precision(1_000, 10_000_000, 2);
        CellStats {
            links: vec![LinkCounters::default(); links],
            stations: vec![StationCounters::default(); stations],
            access_delay: [hist(), hist(), hist(), hist()],
            ampdu_mpdus: vec![0; max_ampdu + 1],
        }
    }

    /// Forget everything counted so far (the measurement window starts).
    pub fn clear(&mut self) {
        self.links
            .iter_mut()
            .for_each(|l| *l = LinkCounters::default());
        self.stations
            .iter_mut()
            .for_each(|s| *s = StationCounters::default());
        self.access_delay
            .iter_mut()
            .for_each(DurStats::clear_totals);
        self.ampdu_mpdus.iter_mut().for_each(|c| *c = 0);
    }

    /// `summary.json`'s `wifi` object: stations by name, links by index
    /// with their PHY (`span` = the measured time, for airtime fractions).
    pub fn summary(&self, stations: &[&str], links: &[Phy], span: Dur) -> Value {
        let span_s = span.as_secs_f64().max(1e-12);
        let total_air: f64 = self.stations.iter().map(|s| s.airtime.as_secs_f64()).sum();
        let mut st = Map::new();
        for (name, s) in stations.iter().zip(&self.stations) {
            let air = s.airtime.as_secs_f64();
            st.insert(
                (*name).to_string(),
                json!({
                    "airtime_s": round6(air),
                    "airtime_fraction": round6(air / span_s),
                    "airtime_share": ratio(air, total_air),
                    "mpdu_attempts": s.mpdu_attempts,
                    "mpdu_failures": s.mpdu_failures,
                    "mpdu_retry_fraction": ratio(s.mpdu_failures as f64, s.mpdu_attempts as f64),
                    "mpdu_drops": s.mpdu_drops,
                    "collisions": s.collisions,
                    "scans": s.scans,
                    "scan_time_s": round6(s.scan_time.as_secs_f64()),
                    "longest_scan_ms": round6(s.longest_scan.as_millis_f64()),
                }),
            );
        }
        let mut ln = Vec::new();
        for (phy, l) in links.iter().zip(&self.links) {
            ln.push(json!({
                    "phy": phy,
                    "busy_fraction": round6(l.busy.as_secs_f64() / span_s),
                    "txops": l.txops,
                    "ppdus": l.ppdus,
                    "collisions": l.collisions,
                    "collision_fraction": ratio(l.collisions as f64, l.txops as f64),
                    "internal_collisions": l.internal_collisions,
            }));
        }
        let mut ad = Map::new();
        for ac in Ac::ALL {
            let d = &self.access_delay[ac.index()];
            if d.count() > 0 {
                ad.insert(ac.name().to_string(), d.summary_ms());
            }
        }
        let ppdus: u64 = self.ampdu_mpdus.iter().sum();
        let mpdus: u64 = self
            .ampdu_mpdus
            .iter()
            .enumerate()
            .map(|(k, c)| k as u64 * c)
            .sum();
        let sizes: Map<String, Value> = self
            .ampdu_mpdus
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (k.to_string(), json!(c)))
            .collect();
        json!({
            "stations": st,
            "links": ln,
            "access_delay_ms": ad,
            "ampdu": {
                "ppdus": ppdus,
                "mean_mpdus": ratio(mpdus as f64, ppdus as f64),
                "mpdus_histogram": sizes,
            },
        })
    }
}

/// `num / den` rounded for the summary; 0 when nothing was counted.
fn ratio(num: f64, den: f64) -> f64 {
    round6(if den > 0.0 { num / den } else { 0.0 })
}
