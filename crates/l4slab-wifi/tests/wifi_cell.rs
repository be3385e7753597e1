//! The Wi-Fi cell against the analytic models and its own mechanics, driven
//! through [`AirQueues`] by a small harness (no qdisc, no transport):
//! saturation throughput and collision probability versus Bianchi, the
//! airtime arithmetic of one station, EDCA priority, aggregation limits,
//! scanning, multi-link operation, retries, in-order delivery, determinism.

use std::collections::VecDeque;

use l4slab_core::{Dur, Ecn, Packet, SimRng, Time};
use l4slab_wifi::bianchi::{self, BianchiParams};
use l4slab_wifi::cell::{AirQueues, Cell};
use l4slab_wifi::config::{
    AirDir, CellConfig, QueueSpec, Scan, StationConfig, StationLink, MAC_OVERHEAD, RETRY_LIMIT,
};
use l4slab_wifi::edca::{Ac, EdcaSet};
use l4slab_wifi::phy::{Band, Phy, Standard};

/// Queues that are either saturated (always a packet) or hold what was
/// pushed; records deliveries and drops.
struct Harness {
    saturated: Vec<bool>,
    queued: Vec<VecDeque<Packet>>,
    delivered: Vec<Vec<(Time, Packet)>>,
    dropped: Vec<u64>,
    airtime: Vec<Dur>,
    next_id: u64,
    len: u32,
}

impl Harness {
    fn new(queues: usize, len: u32) -> Self {
        Harness {
            saturated: vec![false; queues],
            queued: vec![VecDeque::new(); queues],
            delivered: vec![Vec::new(); queues],
            dropped: vec![0; queues],
            airtime: vec![Dur::ZERO; queues],
            next_id: 0,
            len,
        }
    }

    fn packet(&mut self, q: usize) -> Packet {
        self.next_id += 1;
        Packet::new(self.next_id, q as u32, self.len, Ecn::NotEct)
    }

    fn push(&mut self, q: usize) {
        let p = self.packet(q);
        self.queued[q].push_back(p);
    }

    fn bytes(&self, q: usize) -> u64 {
        self.delivered[q]
            .iter()
            .map(|(_, p)| u64::from(p.len))
            .sum()
    }
}

impl AirQueues for Harness {
    fn backlogged(&self, q: usize) -> bool {
        self.saturated[q] || !self.queued[q].is_empty()
    }
    fn dequeue(&mut self, q: usize, _: Time) -> Option<Packet> {
        if self.saturated[q] {
            return Some(self.packet(q));
        }
        self.queued[q].pop_front()
    }
    fn delivered(&mut self, q: usize, at: Time, pkt: Packet) {
        self.delivered[q].push((at, pkt));
    }
    fn dropped(&mut self, q: usize, _: Time, _: Packet) {
        self.dropped[q] += 1;
    }
    fn airtime(&mut self, q: usize, d: Dur) {
        self.airtime[q] += d;
    }
}

fn phy_a() -> Phy {
    Phy::new(Standard::A, Band::G5, 20, 1).unwrap()
}

fn phy_ax() -> Phy {
    Phy::new(Standard::Ax, Band::G5, 80, 2).unwrap()
}

fn station(name: &str, links: &[(usize, u8, f64)]) -> StationConfig {
    StationConfig {
        name: name.into(),
        edca: EdcaSet::STATION,
        links: links
            .iter()
            .map(|&(link, mcs, snr_db)| StationLink { link, snr_db, mcs })
            .collect(),
        scan: None,
        standard: None,
    }
}

fn up(station: usize, ac: Ac) -> QueueSpec {
    QueueSpec {
        station,
        ac,
        dir: AirDir::StationToAp,
    }
}

fn down(station: usize, ac: Ac) -> QueueSpec {
    QueueSpec {
        station,
        ac,
        dir: AirDir::ApToStation,
    }
}

/// A cell with the AP's default EDCA and the default retry limit.
fn config(links: Vec<Phy>, stations: Vec<StationConfig>, queues: Vec<QueueSpec>) -> CellConfig {
    CellConfig {
        links,
        ap_edca: EdcaSet::AP,
        retry_limit: RETRY_LIMIT,
        l4s_ppdu_max: None,
        stations,
        queues,
    }
}

/// Run `cell` to `end`, as a clock would (event by event); saturated
/// queues have their first packet at 0.
fn run(cell: &mut Cell, h: &mut Harness, end: Time) {
    if cell.next_event().is_none() {
        for q in (0..h.saturated.len()).filter(|&q| h.saturated[q]) {
            cell.on_arrival(q, Time::ZERO, h);
        }
    }
    while let Some(t) = cell.next_event().filter(|&t| t <= end) {
        cell.advance(t, h);
    }
    cell.advance(end, h);
}

/// `n` saturated BE uplinks at 802.11a 54 Mbit/s (MCS 7), 1500 B packets,
/// perfect signal: the cell Bianchi's model describes.
fn saturated_cell(n: usize, retry_limit: u32, seed: u64) -> (Cell, Harness) {
    let stations = (0..n)
        .map(|i| station(&format!("s{i}"), &[(0, 7, 60.0)]))
        .collect();
    let cfg = CellConfig {
        links: vec![phy_a()],
        ap_edca: EdcaSet::AP,
        retry_limit,
        l4s_ppdu_max: None,
        stations,
        queues: (0..n).map(|i| up(i, Ac::Be)).collect(),
    };
    let cell = Cell::new(cfg, SimRng::derive(seed, "wifi/cell"));
    let mut h = Harness::new(n, 1500);
    h.saturated.iter_mut().for_each(|s| *s = true);
    (cell, h)
}

#[test]
fn saturation_throughput_and_collisions_match_bianchi() {
    // Bianchi assumes no retry limit: a large one here. 20 s of air each.
    let phy = phy_a();
    let mpdu = 1500 + u64::from(MAC_OVERHEAD);
    let (t_s, t_c) = bianchi::basic_access_times(&phy, 7, mpdu, 3);
    let end = Time::from_secs(20);
    for n in [1usize, 2, 5, 10, 20] {
        let (mut cell, mut h) = saturated_cell(n, 1000, 7);
        run(&mut cell, &mut h, end);
        let model = bianchi::solve(&BianchiParams {
            n: n as u32,
            cw_min: 15,
            cw_max: 1023,
            slot: phy.slot(),
            t_success: t_s,
            t_collision: t_c,
            payload_bits: 1500 * 8,
        });
        let bytes: u64 = (0..n).map(|q| h.bytes(q)).sum();
        let s = bytes as f64 * 8.0 / end.as_secs_f64();
        let st = cell.stats();
        let attempts: u64 = st.stations.iter().map(|s| s.mpdu_attempts).sum();
        let failures: u64 = st.stations.iter().map(|s| s.mpdu_failures).sum();
        let p = failures as f64 / attempts as f64;
        eprintln!(
            "n={n}: S {:.2} Mbit/s (model {:.2}), p {p:.4} (model {:.4})",
            s / 1e6,
            model.throughput_bps / 1e6,
            model.p
        );
        // Bianchi's own validation against simulation is within ~1-2 %
        // for S (his Fig. 6); p is an approximation (independence), within
        // 0.03 absolute here. 20 s holds ~60,000 transmissions.
        assert!(
            (s / model.throughput_bps - 1.0).abs() < 0.02,
            "n={n}: S {s} vs {}",
            model.throughput_bps
        );
        assert!((p - model.p).abs() < 0.03, "n={n}: p {p} vs {}", model.p);
    }
}

#[test]
fn one_station_gets_the_airtime_arithmetic() {
    // One saturated station, no contention: each MPDU costs AIFS + the mean
    // backoff (CWmin/2 slots) + DATA + SIFS + ACK (REFERENCES.md §4.4).
    let phy = phy_a();
    let (mut cell, mut h) = saturated_cell(1, 7, 1);
    let end = Time::from_secs(10);
    run(&mut cell, &mut h, end);
    let (t_s, _) = bianchi::basic_access_times(&phy, 7, 1538, 3);
    let per = t_s.as_secs_f64() + 7.5 * phy.slot().as_secs_f64();
    let expect = 1500.0 * 8.0 / per;
    let got = h.bytes(0) as f64 * 8.0 / end.as_secs_f64();
    assert!((got / expect - 1.0).abs() < 0.01, "{got} vs {expect}");
    assert_eq!(cell.stats().links[0].collisions, 0);
}

#[test]
fn voice_gets_the_medium_before_best_effort() {
    // Two stations, one saturated in VO and one in BE: VO's shorter AIFS
    // and CW give it the shorter access delay and most of the airtime.
    let cfg = config(
        vec![phy_ax()],
        vec![station("v", &[(0, 9, 60.0)]), station("b", &[(0, 9, 60.0)])],
        vec![up(0, Ac::Vo), up(1, Ac::Be)],
    );
    let mut cell = Cell::new(cfg, SimRng::derive(3, "wifi/cell"));
    let mut h = Harness::new(2, 1500);
    h.saturated = vec![true, true];
    run(&mut cell, &mut h, Time::from_secs(5));
    let st = cell.stats();
    let vo = st.access_delay[Ac::Vo.index()].summary_ms();
    let be = st.access_delay[Ac::Be.index()].summary_ms();
    let (vo50, be50) = (vo["p50"].as_f64().unwrap(), be["p50"].as_f64().unwrap());
    assert!(vo50 < be50, "VO p50 {vo50} ms, BE p50 {be50} ms");
    assert!(st.stations[0].airtime > st.stations[1].airtime);
}

#[test]
fn aggregates_respect_the_ppdu_time_the_txop_and_the_block_ack_window() {
    // HE, a saturated BE download: A-MPDUs up to aPPDUMaxTime (5.484 ms).
    let phy = phy_ax();
    let cfg = config(
        vec![phy],
        vec![station("s", &[(0, 4, 60.0)])],
        vec![down(0, Ac::Be)],
    );
    let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
    let mut h = Harness::new(1, 1500);
    h.saturated[0] = true;
    run(&mut cell, &mut h, Time::from_secs(2));
    let sizes = &cell.stats().ampdu_mpdus;
    let largest = sizes.iter().rposition(|&c| c > 0).unwrap() as u64;
    let sub = 4 + (1500 + u64::from(MAC_OVERHEAD)).div_ceil(4) * 4;
    // The largest aggregate fits the PPDU time; one more MPDU would not.
    assert!(phy.ppdu_duration(4, largest * sub) <= phy.ppdu_max_time());
    assert!(phy.ppdu_duration(4, (largest + 1) * sub) > phy.ppdu_max_time());
    assert!(largest <= u64::from(phy.ba_window()));
    // Deliveries come in bursts: one per PPDU, all MPDUs at its end.
    let d = &h.delivered[0];
    let distinct = d.windows(2).filter(|w| w[0].0 != w[1].0).count() + 1;
    assert!(
        d.len() > 10 * distinct,
        "{} packets in {distinct} bursts",
        d.len()
    );

    // VO with a 1.504 ms TXOP: every PPDU (with its Block Ack) inside it.
    let cfg = config(
        vec![phy],
        vec![station("s", &[(0, 4, 60.0)])],
        vec![down(0, Ac::Vo)],
    );
    let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
    let mut h = Harness::new(1, 1500);
    h.saturated[0] = true;
    run(&mut cell, &mut h, Time::from_secs(1));
    let largest = cell
        .stats()
        .ampdu_mpdus
        .iter()
        .rposition(|&c| c > 0)
        .unwrap() as u64;
    let resp = phy.sifs() + phy.ack_duration(phy.block_ack_bytes());
    assert!(phy.ppdu_duration(4, largest * sub) + resp <= EdcaSet::AP.get(Ac::Vo).txop);
}

#[test]
fn a_scanning_station_receives_nothing_while_away() {
    let scan = Scan {
        every: Dur::from_secs(1),
        duration: Dur::from_millis(200),
        first: Dur::from_millis(500),
        visits: 1,
        gap: Dur::ZERO,
    };
    let mut s = station("s", &[(0, 7, 60.0)]);
    s.scan = Some(scan);
    let cfg = config(vec![phy_ax()], vec![s], vec![down(0, Ac::Be)]);
    let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
    let mut h = Harness::new(1, 1200);
    h.saturated[0] = true;
    run(&mut cell, &mut h, Time::from_millis(2900));
    for k in 0..3u64 {
        let from = Time::from_millis(500 + 1000 * k);
        // An exchange under way when the scan starts finishes (< 6 ms).
        let away = h.delivered[0]
            .iter()
            .filter(|(t, _)| *t > from + Dur::from_millis(6) && *t < from + Dur::from_millis(200))
            .count();
        assert_eq!(away, 0, "scan {k}");
    }
    let st = &cell.stats().stations[0];
    assert_eq!((st.scans, st.scan_time), (3, Dur::from_millis(600)));
    assert!(!h.delivered[0].is_empty());
}

#[test]
fn a_scan_visits_channel_after_channel_and_comes_back_between() {
    // Every 2 s from 0.5 s: 4 channels of 50 ms, 100 ms home between.
    let scan = Scan {
        every: Dur::from_secs(2),
        duration: Dur::from_millis(50),
        first: Dur::from_millis(500),
        visits: 4,
        gap: Dur::from_millis(100),
    };
    let mut s = station("s", &[(0, 7, 60.0)]);
    s.scan = Some(scan);
    let cfg = config(vec![phy_ax()], vec![s], vec![down(0, Ac::Be)]);
    let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
    let mut h = Harness::new(1, 1200);
    h.saturated[0] = true;
    run(&mut cell, &mut h, Time::from_millis(4400));
    let got = |from: u64, to: u64| {
        h.delivered[0]
            .iter()
            .filter(|(t, _)| *t > Time::from_millis(from) && *t < Time::from_millis(to))
            .count()
    };
    for start in [500, 2500] {
        for k in 0..4 {
            let away = start + 150 * k;
            assert_eq!(got(away + 6, away + 50), 0, "away from {away} ms");
            assert!(got(away + 56, away + 150) > 0, "home after {away} ms");
        }
    }
    let st = &cell.stats().stations[0];
    assert_eq!((st.scans, st.scan_time), (2, Dur::from_millis(400)));
    assert_eq!(st.longest_scan, Dur::from_millis(50));
}

#[test]
fn a_multi_link_station_sends_on_both_links() {
    // Wi-Fi 7: MLO, and a Block Ack window (1024) one PPDU cannot fill.
    let links = vec![
        Phy::new(Standard::Be, Band::G5, 80, 2).unwrap(),
        Phy::new(Standard::Be, Band::G6, 160, 2).unwrap(),
    ];
    let one = config(
        links.clone(),
        vec![station("s", &[(0, 7, 60.0)])],
        vec![down(0, Ac::Be)],
    );
    let mut two = one.clone();
    two.stations[0] = station("s", &[(0, 7, 60.0), (1, 7, 60.0)]);
    let mut got = Vec::new();
    for cfg in [one, two] {
        let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
        let mut h = Harness::new(1, 1500);
        h.saturated[0] = true;
        run(&mut cell, &mut h, Time::from_secs(1));
        let l = &cell.stats().links;
        got.push((h.bytes(0), l[0].txops, l[1].txops));
    }
    assert_eq!(got[0].2, 0, "a single-link station never uses link 1");
    assert!(got[1].1 > 0 && got[1].2 > 0, "{got:?}");
    assert!(got[1].0 as f64 > 1.8 * got[0].0 as f64, "{got:?}");
}

#[test]
fn weak_signal_means_retries_drops_and_in_order_delivery() {
    // A station near its MCS's threshold: many MPDUs need retries, a few
    // exhaust the limit; what arrives arrives in order.
    let phy = phy_ax();
    let snr = phy.min_snr_db(7);
    let cfg = CellConfig {
        links: vec![phy],
        ap_edca: EdcaSet::AP,
        retry_limit: 2,
        l4s_ppdu_max: None,
        stations: vec![station("s", &[(0, 7, snr)])],
        queues: vec![down(0, Ac::Be)],
    };
    let mut cell = Cell::new(cfg, SimRng::derive(5, "wifi/cell"));
    let mut h = Harness::new(1, 1500);
    h.saturated[0] = true;
    run(&mut cell, &mut h, Time::from_secs(2));
    let st = &cell.stats().stations[0];
    let frac = st.mpdu_failures as f64 / st.mpdu_attempts as f64;
    assert!(frac > 0.05, "failure fraction {frac}");
    assert!(st.mpdu_drops > 0 && st.mpdu_drops == h.dropped[0]);
    let ids: Vec<u64> = h.delivered[0].iter().map(|(_, p)| p.id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "delivered out of order"
    );
    // Accounting: every packet taken is delivered, dropped or still in the air.
    assert_eq!(
        h.next_id,
        ids.len() as u64 + h.dropped[0] + cell.in_air(0) as u64
    );
}

#[test]
fn an_idle_queue_that_gets_a_packet_sends_it_after_aifs_and_its_backoff() {
    let cfg = config(
        vec![phy_a()],
        vec![station("s", &[(0, 7, 60.0)])],
        vec![up(0, Ac::Vo)],
    );
    let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
    let mut h = Harness::new(1, 100);
    assert_eq!(cell.next_event(), None, "nothing to send, nothing to do");
    let t0 = Time::from_millis(3);
    cell.advance(t0, &mut h);
    h.push(0);
    cell.on_arrival(0, t0, &h);
    run(&mut cell, &mut h, Time::from_millis(4));
    let (at, _) = h.delivered[0][0];
    let phy = phy_a();
    let aifs = phy.sifs() + phy.slot() * 2;
    let data = phy.ppdu_duration(7, 100 + u64::from(MAC_OVERHEAD));
    // VO's CWmin is 3: at most 3 slots of backoff.
    let earliest = t0 + aifs + data;
    assert!(at >= earliest && at <= earliest + phy.slot() * 3, "{at}");
    assert_eq!(cell.next_event(), None);
}

#[test]
fn same_seed_same_history() {
    let go = |seed| {
        let (mut cell, mut h) = saturated_cell(5, 7, seed);
        run(&mut cell, &mut h, Time::from_secs(1));
        let d: Vec<(Time, u64)> = h
            .delivered
            .iter()
            .flatten()
            .map(|(t, p)| (*t, p.id))
            .collect();
        (d, cell.random_draws())
    };
    assert_eq!(go(9), go(9));
    assert_ne!(go(9), go(10));
}

#[test]
fn an_access_with_nothing_left_to_send_does_not_turn_time_back() {
    // HE on two links: one A-MPDU fills the 256-MPDU Block Ack window, so the
    // AP often wins the second link with nothing it may send, while the
    // station's uplink contends there too (frozen, then counting again).
    let links = vec![phy_ax(), Phy::new(Standard::Ax, Band::G6, 160, 2).unwrap()];
    let cfg = config(
        links,
        vec![station("s", &[(0, 7, 60.0), (1, 7, 60.0)])],
        vec![down(0, Ac::Be), up(0, Ac::Be)],
    );
    let mut cell = Cell::new(cfg, SimRng::derive(4, "wifi/cell"));
    let mut h = Harness::new(2, 1500);
    h.saturated = vec![true, true];
    run(&mut cell, &mut h, Time::from_secs(2));
    assert!(h.bytes(0) > 0 && h.bytes(1) > 0);
    assert!(cell.stats().links.iter().all(|l| l.txops > 0));
}

#[test]
fn a_station_speaks_the_older_of_its_and_the_links_generation() {
    // A saturated BE download on one 6 GHz 320 MHz EHT link, 2 SS, perfect
    // signal, to a Wi-Fi 7 station (EHT-MCS 13) or a Wi-Fi 6 one (HE-MCS 11
    // at 160 MHz: `Phy::for_station`).
    let eht = Phy::new(Standard::Be, Band::G6, 320, 2).unwrap();
    let download = |standard: Option<Standard>, mcs: u8, link: Phy| {
        let mut s = station("pc", &[(0, mcs, 60.0)]);
        s.standard = standard;
        let cfg = config(vec![link], vec![s], vec![down(0, Ac::Be)]);
        let mut cell = Cell::new(cfg, SimRng::derive(1, "wifi/cell"));
        let mut h = Harness::new(1, 1500);
        h.saturated[0] = true;
        run(&mut cell, &mut h, Time::from_secs(1));
        let sizes = &cell.stats().ampdu_mpdus;
        let largest = sizes.iter().rposition(|&c| c > 0).unwrap() as u64;
        (h.bytes(0), largest, h.delivered[0].clone())
    };
    let (w7, w7_largest, _) = download(Some(Standard::Be), 13, eht);
    let (w6, w6_largest, _) = download(Some(Standard::Ax), 11, eht);
    // The Block Ack window bounds the aggregates: 1024 MPDUs for EHT, 256 for
    // HE (both PPDUs would hold more within aPPDUMaxTime).
    assert_eq!((w7_largest, w6_largest), (1024, 256));
    // EHT320 MCS 13 is 5764.7 Mbit/s, HE160 MCS 11 2401.9: the Wi-Fi 7
    // station gets more than twice the Wi-Fi 6 one's goodput.
    assert!(w7 > 2 * w6, "{w7} vs {w6} bytes");
    // HE-MCS 12 does not exist: the Wi-Fi 6 station's MCS is checked against HE.
    let mut s = station("pc", &[(0, 12, 60.0)]);
    s.standard = Some(Standard::Ax);
    let err = config(vec![eht], vec![s], vec![down(0, Ac::Be)]).validate();
    assert_eq!(
        err.unwrap_err().to_string(),
        "stations.pc.mcs: 12 is above the link's highest MCS 11"
    );
    // Multi-link operation is 802.11be's: a Wi-Fi 6 station has one link.
    let mut s = station("pc", &[(0, 11, 60.0), (1, 11, 60.0)]);
    s.standard = Some(Standard::Ax);
    let err = config(vec![eht, phy_ax()], vec![s], vec![down(0, Ac::Be)]).validate();
    assert_eq!(
        err.unwrap_err().to_string(),
        "stations.pc.standard: an 802.11ax station cannot use 2 links: multi-link operation needs 802.11be"
    );
    // A Wi-Fi 7 station on a Wi-Fi 6 AP's link is a Wi-Fi 6 station: the
    // same history, packet for packet.
    let he = phy_ax();
    let (_, _, as_w7) = download(Some(Standard::Be), 9, he);
    let (_, _, as_w6) = download(None, 9, he);
    assert!(!as_w7.is_empty());
    assert_eq!(as_w7, as_w6);
}
