//! An L4S AP's airtime bound on a station's A-MPDUs (`l4s_ppdu_max`,
//! `l4slab_wifi::l4s_aggregate`): an A-MPDU carrying an L4S packet (or
//! following one that did) respects the bound, an L4S packet's wait for the
//! air shrinks with it, and classic-only traffic and the stations' own
//! uplinks are untouched.

use std::collections::VecDeque;

use l4slab_core::{Dur, Ecn, Packet, SimRng, Time};
use l4slab_wifi::cell::{AirQueues, Cell};
use l4slab_wifi::config::{
    AirDir, CellConfig, QueueSpec, StationConfig, StationLink, MAC_OVERHEAD, RETRY_LIMIT,
};
use l4slab_wifi::edca::{Ac, EdcaSet};
use l4slab_wifi::phy::{Band, Phy, Standard};

/// Per queue: L4S packets pushed at given times (served first, as a DualQ
/// serves its L queue), then, if `classic`, an endless Not-ECT backlog, or
/// endless packets of ECN `saturated`. Records each delivery.
struct Queues {
    l: Vec<VecDeque<(Time, Packet)>>,
    saturated: Vec<Option<Ecn>>,
    /// Per queue: (enqueued, delivered, ECN) of each packet, in delivery order.
    delivered: Vec<Vec<(Time, Time, Ecn)>>,
    enqueued: std::collections::HashMap<u64, Time>,
    next_id: u64,
}

const LEN: u32 = 1500;

impl Queues {
    fn new(n: usize) -> Self {
        Queues {
            l: vec![VecDeque::new(); n],
            saturated: vec![None; n],
            delivered: vec![Vec::new(); n],
            enqueued: Default::default(),
            next_id: 0,
        }
    }

    fn packet(&mut self, q: usize, ecn: Ecn, at: Time) -> Packet {
        self.next_id += 1;
        self.enqueued.insert(self.next_id, at);
        Packet::new(self.next_id, q as u32, LEN, ecn)
    }

    /// The delivery bursts of queue `q` (one per PPDU): their MPDU counts.
    fn bursts(&self, q: usize) -> Vec<u64> {
        let mut out: Vec<(Time, u64)> = Vec::new();
        for &(_, at, _) in &self.delivered[q] {
            match out.last_mut() {
                Some((t, n)) if *t == at => *n += 1,
                _ => out.push((at, 1)),
            }
        }
        out.into_iter().map(|(_, n)| n).collect()
    }
}

impl AirQueues for Queues {
    fn backlogged(&self, q: usize) -> bool {
        self.saturated[q].is_some() || !self.l[q].is_empty()
    }
    fn dequeue(&mut self, q: usize, now: Time) -> Option<Packet> {
        if let Some((_, p)) = self.l[q].pop_front() {
            return Some(p);
        }
        let ecn = self.saturated[q]?;
        Some(self.packet(q, ecn, now))
    }
    fn delivered(&mut self, q: usize, at: Time, pkt: Packet) {
        let enq = self.enqueued[&pkt.id];
        self.delivered[q].push((enq, at, pkt.ecn));
    }
    fn dropped(&mut self, _: usize, _: Time, _: Packet) {}
    fn airtime(&mut self, _: usize, _: Dur) {}
}

fn phy() -> Phy {
    Phy::new(Standard::Ax, Band::G5, 80, 2).unwrap()
}

/// HE-MCS 3 (the study's distant PC) with a perfect signal: no losses, so
/// one delivery burst is one A-MPDU.
const MCS: u8 = 3;

fn cell(stations: usize, queues: Vec<QueueSpec>, bound: Option<Dur>) -> Cell {
    let cfg = CellConfig {
        links: vec![phy()],
        ap_edca: EdcaSet::AP,
        retry_limit: RETRY_LIMIT,
        l4s_ppdu_max: bound,
        stations: (0..stations)
            .map(|i| StationConfig {
                name: format!("s{i}"),
                edca: EdcaSet::STATION,
                links: vec![StationLink {
                    link: 0,
                    snr_db: 60.0,
                    mcs: MCS,
                }],
                scan: None,
                standard: None,
            })
            .collect(),
        queues,
    };
    Cell::new(cfg, SimRng::derive(1, "wifi/cell"))
}

fn q(station: usize, dir: AirDir) -> QueueSpec {
    QueueSpec {
        station,
        ac: Ac::Be,
        dir,
    }
}

/// Run to `end`; the L4S packets of `arrivals` (queue, time) are pushed at
/// their times and saturated queues start at 0.
fn run(cell: &mut Cell, h: &mut Queues, arrivals: &[(usize, Time)], end: Time) {
    for q in (0..h.saturated.len()).filter(|&q| h.saturated[q].is_some()) {
        cell.on_arrival(q, Time::ZERO, h);
    }
    let mut next = arrivals.iter().peekable();
    loop {
        let ev = cell.next_event();
        let arr = next.peek().map(|a| a.1);
        let t = match (ev, arr) {
            (Some(e), Some(a)) => e.min(a),
            (Some(e), None) => e,
            (None, Some(a)) => a,
            (None, None) => break,
        };
        if t > end {
            break;
        }
        cell.advance(t, h);
        while let Some(&&(q, at)) = next.peek().filter(|a| a.1 == t) {
            let p = h.packet(q, Ecn::Ect1, at);
            h.l[q].push_back((at, p));
            cell.on_arrival(q, t, h);
            next.next();
        }
    }
    cell.advance(end, h);
}

/// The airtime of an A-MPDU of `n` 1500 B MPDUs at [`MCS`].
fn airtime(n: u64) -> Dur {
    let sub = 4 + (u64::from(LEN) + u64::from(MAC_OVERHEAD)).div_ceil(4) * 4;
    phy().ppdu_duration(MCS, n * sub)
}

fn largest(h: &Queues, q: usize) -> u64 {
    h.bursts(q).into_iter().max().expect("something delivered")
}

#[test]
fn an_l4s_aggregate_respects_the_airtime_bound() {
    let bound = Dur::from_millis(1);
    let end = Time::from_secs(1);
    // A saturated L4S download: every A-MPDU within the bound, and one
    // more MPDU would not fit it.
    let mut c = cell(1, vec![q(0, AirDir::ApToStation)], Some(bound));
    let mut h = Queues::new(1);
    h.saturated[0] = Some(Ecn::Ect1);
    run(&mut c, &mut h, &[], end);
    let n = largest(&h, 0);
    assert!(airtime(n) <= bound, "{n} MPDUs: {}", airtime(n));
    assert!(airtime(n + 1) > bound);
    // Without the bound the same download fills aPPDUMaxTime (5.484 ms).
    let mut c = cell(1, vec![q(0, AirDir::ApToStation)], None);
    let mut h = Queues::new(1);
    h.saturated[0] = Some(Ecn::Ect1);
    run(&mut c, &mut h, &[], end);
    let n = largest(&h, 0);
    assert!(airtime(n) <= phy().ppdu_max_time() && airtime(n + 1) > phy().ppdu_max_time());
    assert!(airtime(n) > bound * 5, "{}", airtime(n));
    // CE counts as L4S (RFC 9331 §5.1), ECT(0) does not.
    for (ecn, bounded) in [(Ecn::Ce, true), (Ecn::Ect0, false)] {
        let mut c = cell(1, vec![q(0, AirDir::ApToStation)], Some(bound));
        let mut h = Queues::new(1);
        h.saturated[0] = Some(ecn);
        run(&mut c, &mut h, &[], end);
        assert_eq!(airtime(largest(&h, 0)) <= bound, bounded, "{ecn:?}");
    }
}

#[test]
fn an_l4s_packet_waits_for_the_air_at_most_about_two_bounds() {
    // An L4S game (ECT(1), one packet every 333 us: 36 Mbit/s) and a
    // classic update (an endless Not-ECT backlog) to one station at
    // HE-MCS 3; the AP serves the L packets first, as a DualQ.
    let end = Time::from_secs(2);
    let arrivals: Vec<(usize, Time)> = (1..6000)
        .map(|i| (0, Time::ZERO + Dur::from_micros(333 * i)))
        .collect();
    let wait = |bound: Option<Dur>| {
        let mut c = cell(1, vec![q(0, AirDir::ApToStation)], bound);
        let mut h = Queues::new(1);
        h.saturated[0] = Some(Ecn::NotEct);
        run(&mut c, &mut h, &arrivals, end);
        // From 10 ms: the first A-MPDU, built before any L4S packet was
        // seen, is the update's alone and unbounded.
        let mut waits: Vec<Dur> = h.delivered[0]
            .iter()
            .filter(|d| d.2 == Ecn::Ect1 && d.0 >= Time::ZERO + Dur::from_millis(10))
            .map(|&(enq, at, _)| at - enq)
            .collect();
        waits.sort();
        assert!(waits.len() > 5000, "{} L4S packets delivered", waits.len());
        (waits[waits.len() * 99 / 100], *waits.last().unwrap())
    };
    let bound = Dur::from_millis(1);
    let (p99, max) = wait(Some(bound));
    eprintln!("bound 1 ms: L4S wait p99 {p99}, max {max}");
    // The PPDU on the air when it arrives (at most the bound: it carries L
    // packets, or follows one that did), SIFS + Block Ack, AIFS + backoff
    // (CWmin 15: at most 178 us), then its own PPDU (at most the bound).
    assert!(max <= bound * 2 + Dur::from_micros(500), "max {max}");
    // Without the bound: the classic update's A-MPDUs fill aPPDUMaxTime.
    let (p99_free, max_free) = wait(None);
    eprintln!("no bound: L4S wait p99 {p99_free}, max {max_free}");
    assert!(max_free > phy().ppdu_max_time(), "max {max_free}");
    assert!(p99_free > p99 * 2, "p99 {p99_free} vs {p99}");
}

#[test]
fn classic_only_stations_and_the_stations_uplinks_are_unaffected() {
    let bound = Some(Dur::from_millis(1));
    let end = Time::from_secs(1);
    // Station 0: an L4S download; station 1: a classic download; station 2
    // sends L4S upward (its own queue, not the AP's).
    let queues = vec![
        q(0, AirDir::ApToStation),
        q(1, AirDir::ApToStation),
        q(2, AirDir::StationToAp),
    ];
    let history = |bound: Option<Dur>| {
        let mut c = cell(3, queues.clone(), bound);
        let mut h = Queues::new(3);
        h.saturated = vec![Some(Ecn::Ect1), Some(Ecn::NotEct), Some(Ecn::Ect1)];
        run(&mut c, &mut h, &[], end);
        h
    };
    let (with, without) = (history(bound), history(None));
    assert!(airtime(largest(&with, 0)) <= Dur::from_millis(1));
    for q in [1, 2] {
        let n = largest(&with, q);
        assert!(
            airtime(n + 1) > phy().ppdu_max_time(),
            "queue {q}: {n} MPDUs"
        );
        assert_eq!(n, largest(&without, q), "queue {q}");
    }
    // A cell with no L4S packet at all: the same history, packet for
    // packet, with the bound or without.
    let classic = |bound: Option<Dur>| {
        let mut c = cell(2, queues[..2].to_vec(), bound);
        let mut h = Queues::new(2);
        h.saturated = vec![Some(Ecn::NotEct), Some(Ecn::Ect0)];
        run(&mut c, &mut h, &[], end);
        h.delivered
    };
    let (a, b) = (classic(bound), classic(None));
    assert!(a[0].len() > 1000 && a[1].len() > 1000);
    assert_eq!(a, b);
}
