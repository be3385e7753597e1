//! A Wi-Fi cell: one AP and its stations sharing the airtime of one or more
//! channels with EDCA (IEEE 802.11-2020 §10.23.2), A-MPDU aggregation with
//! Block Ack (§10.12, §10.25), per-MPDU loss from each station's signal,
//! retries, scanning and multi-link operation (802.11be §35.3).
//!
//! **Sans-IO.** The cell owns no qdisc and reads no clock: the queues that
//! feed it live in the bottleneck runtime and are reached through
//! [`AirQueues`]; the clock calls [`Cell::advance`] up to `now` (events run
//! at their intended times), tells it of arrivals with [`Cell::on_arrival`]
//! and sleeps until [`Cell::next_event`].
//!
//! **Contention** (§10.23.2.2). Each transmitter (the AP, every station) has
//! one EDCA function per AC and per link. An AC *contends* on a link while
//! it has something to send there (a pending retry, or a packet in its
//! qdisc and room in its Block Ack window; the AP per station, skipping
//! stations away scanning). A contender that started at `since` wins access
//! at `max(idle_since, since) + SIFS + (AIFSN + counter)·slot`; the earliest
//! wins; contenders within aCCATime (4 µs, Table 17-21) of it start too and
//! collide. Losers freeze their counters, less the whole slots they counted
//! while the medium was idle. Two ACs of one transmitter winning together is
//! an internal collision: the higher priority AC sends and the other backs
//! off as after a failure (§10.23.2.4).
//!
//! **A TXOP.** The winner builds an A-MPDU for one receiver (the AP picks
//! its stations round robin per AC): pending retries first, then packets
//! dequeued from the qdisc (the qdisc decides, marks and drops as they
//! leave), while the PPDU stays within aPPDUMaxTime, the TXOP limit (with
//! its response), the maximum A-MPDU length and the Block Ack window. A
//! dequeued packet that does not fit waits, pending, for the next PPDU. Each
//! MPDU is lost independently with the PER of the receiver's MCS and SNR;
//! the recipient hands received MPDUs up in order (the reorder buffer,
//! [`super::window`]). A PPDU with at least one MPDU received gets a Block
//! Ack after SIFS (a success: CW back to CWmin); with none it gets nothing
//! and the transmitter waits for the ACK timeout (a failure: CW doubles).
//! With a TXOP limit the transmitter goes on, SIFS after each Block Ack,
//! while the next PPDU and its response fit. A collision is a failure for
//! every transmitter in it and lasts its longest PPDU plus the ACK timeout.
//! Failed MPDUs are retried up to the retry limit, then dropped
//! ([`DropReason::WifiRetries`](l4slab_core::DropReason)).
//!
//! **Scanning.** A station with a scan schedule leaves its channel every
//! `every`, `visits` times for `duration` with `gap` back home between two:
//! away, it does not contend and the AP does not send to it; what arrives
//! meanwhile waits. An exchange already under way finishes.
//!
//! **Multi-link.** A station on two links contends on each independently;
//! both take from the same queues and Block Ack window, so frames leave on
//! the first link to win access (as an MLD does; no per-link TID mapping).
//!
//! Cost: an event is O(contenders of the link) = O(stations); nothing is
//! allocated per packet (the window rings and the exchange buffers are
//! reused).
//!
//! Not modelled: RTS/CTS, hidden stations, capture, OFDMA/MU-MIMO, rate
//! control dynamics (each station keeps one MCS per link), A-MSDU, power
//! save beyond scanning, post-backoff without data and EIFS (see
//! [`super::edca`]).

use l4slab_core::{Dur, Packet, SimRng, Time};

use super::config::{AirDir, CellConfig, StationConfig, MAC_OVERHEAD};
use super::edca::{Ac, Backoff, EdcaParams};
use super::l4s_aggregate;
use super::phy::{PerCurve, Phy, PpduTime};
use super::stats::CellStats;
use super::window::BaWindow;

/// aCCATime (802.11-2020 Table 17-21): two transmitters whose access times
/// are closer than this cannot hear each other in time and collide.
const CCA_TIME: Dur = Dur::from_micros(4);

/// Control response sizes: ACK 14 B (§9.3.1.3).
const ACK_BYTES: u64 = 14;

/// The runtime's side of the cell: the queues (indexed as
/// [`CellConfig::queues`]) and where resolved packets go.
pub trait AirQueues {
    /// Whether queue `q`'s qdisc holds a packet.
    fn backlogged(&self, q: usize) -> bool;
    /// Dequeue from `q`'s qdisc at `now` (its AQM may drop or mark).
    fn dequeue(&mut self, q: usize, now: Time) -> Option<Packet>;
    /// `pkt` of queue `q` reached its receiver at `at`.
    fn delivered(&mut self, q: usize, at: Time, pkt: Packet);
    /// `pkt` of queue `q` was dropped at the retry limit at `at`.
    fn dropped(&mut self, q: usize, at: Time, pkt: Packet);
    /// Airtime spent on queue `q`'s packets (exchanges, collisions).
    fn airtime(&mut self, q: usize, d: Dur);
}

/// One EDCA function: an AC of a transmitter on a link.
#[derive(Clone, Copy, Debug)]
struct Edca {
    params: EdcaParams,
    bo: Backoff,
    /// Contending since (None: nothing to send on this link).
    since: Option<Time>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// A PPDU is on the air.
    Ppdu,
    /// After the PPDU: the response (`ok`) or the ACK timeout.
    Response { ok: bool },
    /// Several PPDUs collided; the medium is busy until the ACK timeout.
    Collision,
}

#[derive(Clone, Copy, Debug)]
enum Medium {
    Idle { since: Time },
    Busy { until: Time, phase: Phase },
}

/// One transmitter's exchange on a link.
#[derive(Debug, Default)]
struct Exchange {
    tx: usize,
    ac: usize,
    q: usize,
    station: usize,
    mcs: u8,
    snr_db: f64,
    /// Since when the AC contended for this TXOP, when the TXOP started,
    /// the current PPDU's start and the TXOP's limit.
    since: Time,
    txop_start: Time,
    start: Time,
    txop_end: Time,
    /// The current PPDU's MPDUs: sequence number and MPDU length.
    mpdus: Vec<(u64, u32)>,
}

struct LinkState {
    phy: Phy,
    medium: Medium,
    /// Per transmitter (0 = AP, 1 + s = station s), per AC.
    edca: Vec<[Edca; 4]>,
    /// The AP's round-robin position per AC.
    ap_rr: [usize; 4],
    /// `exch[..n_exch]` are on the air (more than one: a collision).
    exch: Vec<Exchange>,
    n_exch: usize,
    /// When the next access happens (idle medium with contenders).
    next_access: Option<Time>,
    /// When the medium last went busy.
    busy_from: Time,
}

struct QueueState {
    station: usize,
    window: BaWindow,
    /// The AP's bound on this queue's A-MPDUs while it has L4S traffic
    /// (`l4s_ppdu_max`, AP queues only; [`l4s_aggregate`]), and whether its
    /// last A-MPDU carried an L4S packet.
    l4s_bound: Option<Dur>,
    l4s_last: bool,
}

struct StationState {
    away: bool,
    /// Next scan event: an absence starts (or ends, while away).
    next_scan: Option<Time>,
    /// Absences of the scan under way so far, and when it started.
    visit: u32,
    scan_start: Time,
    /// Per link of the cell: (the link as the station speaks it, mcs, snr)
    /// if the station is on it.
    on_link: Vec<Option<(Phy, u8, f64)>>,
    /// Per link, the same: its PPDUs' airtime and MPDU error rate at that
    /// MCS and SNR, worked out once (they are asked for every MPDU).
    air: Vec<Option<(PpduTime, PerCurve)>>,
}

/// What is due next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    Link(usize),
    Scan(usize),
}

pub struct Cell {
    cfg: CellConfig,
    links: Vec<LinkState>,
    queues: Vec<QueueState>,
    /// Per station, per AC: its uplink queue and the AP's queue for it.
    up_q: Vec<[Option<usize>; 4]>,
    down_q: Vec<[Option<usize>; 4]>,
    stations: Vec<StationState>,
    /// The earliest scan event of any station (kept, so that finding the
    /// next event does not cost a pass over the stations).
    next_scan: Option<(Time, usize)>,
    /// The next event ([`Cell::next_due`]), kept: the clock asks for it
    /// after every call, and it changes only when an event runs or an
    /// arrival recomputes contention.
    due: Option<(Time, Due)>,
    rng: SimRng,
    clock: Time,
    stats: CellStats,
    /// Scratch, reused: the access winners (transmitter, AC) and the
    /// transmitters whose TXOP ended (transmitter, AC, success).
    won: Vec<(usize, usize)>,
    ended: Vec<(usize, usize, bool)>,
}

impl Cell {
    /// A cell from a validated `cfg` ([`CellConfig::validate`]) with its
    /// random stream (backoff draws and MPDU losses).
    pub fn new(cfg: CellConfig, mut rng: SimRng) -> Self {
        cfg.validate().expect("a validated cell configuration");
        let n = cfg.stations.len();
        let mut up_q = vec![[None; 4]; n];
        let mut down_q = vec![[None; 4]; n];
        let mut queues = Vec::with_capacity(cfg.queues.len());
        for (i, q) in cfg.queues.iter().enumerate() {
            let slot = match q.dir {
                AirDir::StationToAp => &mut up_q[q.station],
                AirDir::ApToStation => &mut down_q[q.station],
            };
            slot[q.ac.index()] = Some(i);
            let st = &cfg.stations[q.station];
            let ba = st
                .links
                .iter()
                .map(|l| station_phy(st, &cfg.links[l.link]).ba_window())
                .max()
                .unwrap_or(1);
            queues.push(QueueState {
                station: q.station,
                window: BaWindow::new(ba),
                l4s_bound: cfg.l4s_ppdu_max.filter(|_| q.dir == AirDir::ApToStation),
                l4s_last: false,
            });
        }
        let mut draw = |cw: u32| rng.below(u64::from(cw) + 1) as u32;
        let links = cfg
            .links
            .iter()
            .map(|phy| {
                let mut edca = Vec::with_capacity(n + 1);
                for tx in 0..=n {
                    let set = if tx == 0 {
                        cfg.ap_edca
                    } else {
                        cfg.stations[tx - 1].edca
                    };
                    edca.push(Ac::ALL.map(|ac| {
                        let params = *set.get(ac);
                        Edca {
                            params,
                            bo: Backoff::new(&params, &mut draw),
                            since: None,
                        }
                    }));
                }
                LinkState {
                    phy: *phy,
                    medium: Medium::Idle { since: Time::ZERO },
                    edca,
                    ap_rr: [0; 4],
                    exch: Vec::new(),
                    n_exch: 0,
                    next_access: None,
                    busy_from: Time::ZERO,
                }
            })
            .collect();
        let stations: Vec<StationState> = cfg
            .stations
            .iter()
            .map(|s| {
                let mut on_link = vec![None; cfg.links.len()];
                let mut air = vec![None; cfg.links.len()];
                for l in &s.links {
                    let phy = station_phy(s, &cfg.links[l.link]);
                    on_link[l.link] = Some((phy, l.mcs, l.snr_db));
                    air[l.link] = Some((phy.ppdu_time(l.mcs), phy.per_curve(l.mcs, l.snr_db)));
                }
                StationState {
                    away: false,
                    next_scan: s.scan.map(|sc| Time::ZERO + sc.first),
                    visit: 0,
                    scan_start: Time::ZERO,
                    on_link,
                    air,
                }
            })
            .collect();
        let next_scan = earliest_scan(&stations);
        let max_ba = cfg.links.iter().map(|p| usize::from(p.ba_window())).max();
        let stats = CellStats::new(cfg.links.len(), n, max_ba.unwrap_or(1));
        let mut cell = Cell {
            next_scan,
            due: None,
            cfg,
            links,
            queues,
            up_q,
            down_q,
            stations,
            rng,
            clock: Time::ZERO,
            stats,
            won: Vec::with_capacity(n + 1),
            ended: Vec::with_capacity(n + 1),
        };
        cell.due = cell.next_due();
        cell
    }

    pub fn config(&self) -> &CellConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &CellStats {
        &self.stats
    }

    /// Restart the counters (the measurement window starts).
    pub fn clear_stats(&mut self) {
        self.stats.clear();
    }

    /// Packets taken from the qdiscs and not yet handed up or dropped.
    pub fn in_air(&self, q: usize) -> usize {
        self.queues[q].window.len()
    }

    /// Numbers drawn from the cell's random stream.
    pub fn random_draws(&self) -> u64 {
        self.rng.draws()
    }

    /// When the cell next needs [`Cell::advance`].
    pub fn next_event(&self) -> Option<Time> {
        debug_assert_eq!(self.due, self.next_due(), "the kept next event is stale");
        self.due.map(|(t, _)| t)
    }

    fn next_due(&self) -> Option<(Time, Due)> {
        let links = self.links.iter().enumerate().filter_map(|(i, l)| {
            let t = match l.medium {
                Medium::Busy { until, .. } => Some(until),
                Medium::Idle { .. } => l.next_access,
            };
            t.map(|t| (t, Due::Link(i)))
        });
        let scan = self.next_scan.map(|(t, s)| (t, Due::Scan(s)));
        // Ties: links in order, then scans (a fixed order, for determinism).
        links.chain(scan).min_by_key(|(t, _)| *t)
    }

    /// Run every event due by `now`, each at its own time.
    pub fn advance(&mut self, now: Time, qs: &mut impl AirQueues) {
        while let Some((t, due)) = self.due.filter(|(t, _)| *t <= now) {
            assert!(t >= self.clock, "cell time went back");
            self.clock = t;
            match due {
                Due::Link(l) => self.link_event(l, t, qs),
                Due::Scan(s) => self.scan_event(s, t, qs),
            }
            self.due = self.next_due();
        }
        self.clock = self.clock.max(now);
    }

    /// Queue `q` received a packet at `now` (after [`Cell::advance`] to `now`).
    pub fn on_arrival(&mut self, q: usize, now: Time, qs: &impl AirQueues) {
        debug_assert!(now >= self.clock);
        let s = self.queues[q].station;
        for l in 0..self.links.len() {
            if self.stations[s].on_link[l].is_some() {
                self.refresh(l, now, qs);
            }
        }
        self.due = self.next_due();
    }

    /// Whether queue `q` has something to put in a PPDU.
    fn sendable(&self, q: usize, qs: &impl AirQueues) -> bool {
        let w = &self.queues[q].window;
        w.pending() > 0 || (w.has_room() && qs.backlogged(q))
    }

    /// Whether station `s` can take part on link `l` now.
    fn present(&self, s: usize, l: usize) -> bool {
        !self.stations[s].away && self.stations[s].on_link[l].is_some()
    }

    /// The queue transmitter `tx` would send from for AC `ac` on link `l`
    /// (the AP: the next station round robin with something to send).
    fn pick_queue(&self, l: usize, tx: usize, ac: usize, qs: &impl AirQueues) -> Option<usize> {
        if tx > 0 {
            let s = tx - 1;
            return self.up_q[s][ac].filter(|&q| self.present(s, l) && self.sendable(q, qs));
        }
        let n = self.stations.len();
        let start = self.links[l].ap_rr[ac];
        (0..n).map(|k| (start + k) % n).find_map(|s| {
            self.down_q[s][ac].filter(|&q| self.present(s, l) && self.sendable(q, qs))
        })
    }

    /// Recompute link `l`'s contenders at `now` and its next access time.
    fn refresh(&mut self, l: usize, now: Time, qs: &impl AirQueues) {
        let idle_since = match self.links[l].medium {
            Medium::Busy { .. } => {
                self.links[l].next_access = None;
                return;
            }
            Medium::Idle { since } => since,
        };
        let (sifs, slot) = (self.links[l].phy.sifs(), self.links[l].phy.slot());
        let mut next: Option<Time> = None;
        for tx in 0..self.links[l].edca.len() {
            for ac in 0..4 {
                let wants = self.pick_queue(l, tx, ac, qs).is_some();
                let e = &mut self.links[l].edca[tx][ac];
                if !wants {
                    e.since = None;
                    continue;
                }
                let since = *e.since.get_or_insert(now);
                let at = access_time(e, idle_since, since, sifs, slot);
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        self.links[l].next_access = next;
    }

    fn link_event(&mut self, l: usize, t: Time, qs: &mut impl AirQueues) {
        match self.links[l].medium {
            Medium::Idle { since } => self.access(l, since, t, qs),
            Medium::Busy { phase, .. } => match phase {
                Phase::Ppdu => self.ppdu_end(l, t, qs),
                Phase::Response { ok } => self.response_end(l, t, ok, qs),
                Phase::Collision => self.collision_end(l, t, qs),
            },
        }
    }

    /// The earliest contender's access time `t` has come.
    fn access(&mut self, l: usize, idle_since: Time, t: Time, qs: &mut impl AirQueues) {
        let (sifs, slot) = (self.links[l].phy.sifs(), self.links[l].phy.slot());
        let retry_limit = self.cfg.retry_limit;
        // Winners: per transmitter, its highest-priority AC due within CCA.
        let mut won = std::mem::take(&mut self.won);
        won.clear();
        for tx in 0..self.links[l].edca.len() {
            let mut first: Option<usize> = None;
            for ac in 0..4 {
                let e = self.links[l].edca[tx][ac];
                let Some(since) = e.since else { continue };
                let at = access_time(&e, idle_since, since, sifs, slot);
                if at >= t + CCA_TIME {
                    // §10.23.2.2: it lost; its counter froze when the medium
                    // went busy, less the idle slots it counted after AIFS.
                    let aifs = sifs + slot.saturating_mul(u64::from(e.params.aifsn));
                    let counted = t.saturating_since(idle_since.max(since) + aifs).as_nanos()
                        / slot.as_nanos();
                    let e = &mut self.links[l].edca[tx][ac];
                    e.bo.counter -= (counted as u32).min(e.bo.counter);
                } else if first.is_none() {
                    first = Some(ac);
                } else {
                    // §10.23.2.4: the lower-priority AC "shall invoke the
                    // backoff procedure" as after a collision.
                    self.stats.links[l].internal_collisions += 1;
                    let rng = &mut self.rng;
                    let e = &mut self.links[l].edca[tx][ac];
                    e.bo.failure(&e.params, retry_limit, |cw| {
                        rng.below(u64::from(cw) + 1) as u32
                    });
                }
            }
            if let Some(ac) = first {
                won.push((tx, ac));
            }
        }
        debug_assert!(!won.is_empty(), "an access event without a winner");
        let mut n = 0;
        for &(tx, ac) in &won {
            // Its backoff is spent: if it has nothing to send after all, the
            // next frame goes after AIFS alone (§10.23.2.2).
            self.links[l].edca[tx][ac].bo.counter = 0;
            let Some(q) = self.pick_queue(l, tx, ac, qs) else {
                continue;
            };
            let e = self.links[l].edca[tx][ac];
            let since = e.since.expect("a winner contends");
            if self.start_ppdu(l, n, q, t, t, t + e.params.txop, true, qs) {
                let ex = &mut self.links[l].exch[n];
                (ex.tx, ex.ac, ex.since, ex.txop_start) = (tx, ac, since, t);
                if tx == 0 {
                    self.links[l].ap_rr[ac] = (self.queues[q].station + 1) % self.stations.len();
                }
                n += 1;
            }
        }
        self.won = won;
        self.links[l].n_exch = n;
        self.links[l].next_access = None;
        self.links[l].busy_from = t;
        let ack_timeout = self.links[l].phy.ack_timeout();
        match n {
            // Nobody transmits after all: every winner's qdisc yielded
            // nothing (its AQM dropped what it held), or another link of a
            // multi-link station took it first. The counters froze at `t`
            // as if the medium had gone busy, so everyone counts again from
            // `t` (an AIFS more than strictly needed; rare).
            0 => {
                self.links[l].medium = Medium::Idle { since: t };
                self.refresh(l, t, qs);
            }
            1 => {
                self.stats.links[l].txops += 1;
                let until = t + self.ppdu_duration(l, 0);
                self.links[l].medium = Medium::Busy {
                    until,
                    phase: Phase::Ppdu,
                };
            }
            _ => {
                self.stats.links[l].txops += 1;
                self.stats.links[l].collisions += 1;
                let mut longest = Dur::ZERO;
                for i in 0..n {
                    let d = self.ppdu_duration(l, i);
                    longest = longest.max(d);
                    let (station, q) = (self.links[l].exch[i].station, self.links[l].exch[i].q);
                    let st = &mut self.stats.stations[station];
                    st.collisions += 1;
                    st.airtime += d + ack_timeout;
                    qs.airtime(q, d + ack_timeout);
                }
                self.links[l].medium = Medium::Busy {
                    until: t + longest + ack_timeout,
                    phase: Phase::Collision,
                };
            }
        }
    }

    /// Link `l` as `station` speaks it (its generation, [`Phy::for_station`]).
    fn station_phy(&self, station: usize, l: usize) -> Phy {
        self.stations[station].on_link[l]
            .expect("present on the link")
            .0
    }

    /// The PPDU duration of exchange `i` on link `l`.
    fn ppdu_duration(&self, l: usize, i: usize) -> Dur {
        let e = &self.links[l].exch[i];
        let phy = &self.station_phy(e.station, l);
        let (ppdu, _) = self.stations[e.station].air[l].expect("present on the link");
        debug_assert_eq!(ppdu, phy.ppdu_time(e.mcs));
        ppdu.duration(psdu_bytes(phy, &e.mpdus))
    }

    /// Build exchange slot `i` of link `l`: a PPDU from queue `q` starting
    /// at `start`, its packets dequeued at `now` (the cell's clock; `start`
    /// may be a SIFS later). The first PPDU of a TXOP (`first`) may exceed
    /// the TXOP limit with one MPDU. Returns whether it carries anything.
    #[allow(clippy::too_many_arguments)]
    fn start_ppdu(
        &mut self,
        l: usize,
        i: usize,
        q: usize,
        now: Time,
        start: Time,
        txop_end: Time,
        first: bool,
        qs: &mut impl AirQueues,
    ) -> bool {
        let station = self.queues[q].station;
        let (phy, mcs, snr_db) = self.stations[station].on_link[l].expect("present on the link");
        let (ppdu, _) = self.stations[station].air[l].expect("present on the link");
        let agg = phy.ba_window() > 1;
        let resp = phy.sifs()
            + phy.ack_duration(if agg {
                phy.block_ack_bytes()
            } else {
                ACK_BYTES
            });
        let limit = if txop_end > start {
            (txop_end - start)
                .saturating_sub(resp)
                .min(phy.ppdu_max_time())
        } else {
            phy.ppdu_max_time()
        };
        let (max_count, max_bytes) = if agg {
            (usize::from(phy.ba_window()), phy.max_ampdu_bytes())
        } else {
            (1, u64::MAX)
        };
        let links = &mut self.links[l];
        if links.exch.len() <= i {
            links.exch.resize_with(i + 1, Exchange::default);
        }
        let ex = &mut links.exch[i];
        ex.mpdus.clear();
        (ex.q, ex.station, ex.mcs, ex.snr_db) = (q, station, mcs, snr_db);
        (ex.start, ex.txop_end) = (start, txop_end);
        let QueueState {
            window: w,
            l4s_bound,
            l4s_last,
            ..
        } = &mut self.queues[q];
        // An L4S AP's bound (l4s_aggregate): on while this A-MPDU or the
        // last one carries an L4S packet.
        let mut l4s = false;
        let (mut bytes, mut cursor) = (0u64, 0u64);
        while ex.mpdus.len() < max_count {
            let seq = match w.next_pending(cursor) {
                Some(seq) => seq,
                None if w.has_room() => match qs.dequeue(q, now) {
                    Some(pkt) => w.push(pkt),
                    None => break,
                },
                None => break,
            };
            cursor = seq + 1;
            let mpdu = w.get(seq).pkt.len + MAC_OVERHEAD;
            let sub = if agg {
                4 + u64::from(mpdu.div_ceil(4) * 4)
            } else {
                u64::from(mpdu)
            };
            let pkt_l4s = l4s_bound.is_some() && l4s_aggregate::is_l4s(w.get(seq).pkt.ecn);
            let limit = l4s_aggregate::ppdu_limit(limit, *l4s_bound, *l4s_last || l4s || pkt_l4s);
            let fits = bytes + sub <= max_bytes && ppdu.duration(bytes + sub) <= limit;
            if !fits && (!first || !ex.mpdus.is_empty()) {
                break;
            }
            l4s |= pkt_l4s;
            w.send(seq);
            ex.mpdus.push((seq, mpdu));
            bytes += sub;
        }
        let n = ex.mpdus.len();
        if n == 0 {
            return false;
        }
        *l4s_last = l4s;
        self.stats.links[l].ppdus += 1;
        let top = self.stats.ampdu_mpdus.len() - 1;
        self.stats.ampdu_mpdus[n.min(top)] += 1;
        self.stats.stations[station].mpdu_attempts += n as u64;
        true
    }

    /// The single exchange's PPDU ended at `t`: draw each MPDU's fate.
    fn ppdu_end(&mut self, l: usize, t: Time, qs: &mut impl AirQueues) {
        let retry_limit = self.cfg.retry_limit;
        let ex = &self.links[l].exch[0];
        let (q, station, mcs, snr, start) = (ex.q, ex.station, ex.mcs, ex.snr_db, ex.start);
        let phy = self.station_phy(station, l);
        let (_, curve) = self.stations[station].air[l].expect("present on the link");
        debug_assert_eq!(curve, phy.per_curve(mcs, snr));
        // The MPDUs of a PPDU mostly share a length: its PER is kept.
        let mut last: Option<(u32, f64)> = None;
        let mut ok = 0;
        for k in 0..self.links[l].exch[0].mpdus.len() {
            let (seq, len) = self.links[l].exch[0].mpdus[k];
            let per = match last {
                Some((n, p)) if n == len => p,
                _ => {
                    let p = curve.per(u64::from(len));
                    last = Some((len, p));
                    p
                }
            };
            let lost = self.rng.chance(per);
            if lost {
                self.fail_mpdu(q, seq, retry_limit, t, qs);
            } else {
                self.queues[q].window.delivered(seq);
                ok += 1;
            }
        }
        self.queues[q].window.release(|p| qs.delivered(q, t, p));
        let agg = phy.ba_window() > 1;
        let until = if ok > 0 {
            t + phy.sifs()
                + phy.ack_duration(if agg {
                    phy.block_ack_bytes()
                } else {
                    ACK_BYTES
                })
        } else {
            t + phy.ack_timeout()
        };
        self.stats.stations[station].airtime += until - start;
        qs.airtime(q, until - start);
        self.links[l].medium = Medium::Busy {
            until,
            phase: Phase::Response { ok: ok > 0 },
        };
    }

    fn fail_mpdu(
        &mut self,
        q: usize,
        seq: u64,
        retry_limit: u32,
        t: Time,
        qs: &mut impl AirQueues,
    ) {
        let station = self.queues[q].station;
        self.stats.stations[station].mpdu_failures += 1;
        let (_, pkt, dropped) = self.queues[q].window.failed(seq, retry_limit);
        if dropped {
            self.stats.stations[station].mpdu_drops += 1;
            qs.dropped(q, t, pkt);
        }
    }

    /// The response (or its timeout) ended at `t`: go on within the TXOP,
    /// or end it.
    fn response_end(&mut self, l: usize, t: Time, ok: bool, qs: &mut impl AirQueues) {
        let ex = &self.links[l].exch[0];
        let (tx, ac, q, txop_end) = (ex.tx, ex.ac, ex.q, ex.txop_end);
        let sifs = self.links[l].phy.sifs();
        // §10.23.2.9: within the TXOP limit, the next frame SIFS after the response.
        let more = ok
            && txop_end > t + sifs
            && self.present(self.queues[q].station, l)
            && self.sendable(q, qs)
            && self.start_ppdu(l, 0, q, t, t + sifs, txop_end, false, qs);
        if more {
            let until = t + sifs + self.ppdu_duration(l, 0);
            self.links[l].medium = Medium::Busy {
                until,
                phase: Phase::Ppdu,
            };
            return;
        }
        let mut ended = std::mem::take(&mut self.ended);
        ended.clear();
        ended.push((tx, ac, ok));
        self.end_txop(l, t, &ended, qs);
        self.ended = ended;
    }

    fn collision_end(&mut self, l: usize, t: Time, qs: &mut impl AirQueues) {
        let retry_limit = self.cfg.retry_limit;
        let mut ended = std::mem::take(&mut self.ended);
        ended.clear();
        for i in 0..self.links[l].n_exch {
            let (tx, ac, q) = {
                let e = &self.links[l].exch[i];
                (e.tx, e.ac, e.q)
            };
            for k in 0..self.links[l].exch[i].mpdus.len() {
                let seq = self.links[l].exch[i].mpdus[k].0;
                self.fail_mpdu(q, seq, retry_limit, t, qs);
            }
            self.queues[q].window.release(|p| qs.delivered(q, t, p));
            ended.push((tx, ac, false));
        }
        self.end_txop(l, t, &ended, qs);
        self.ended = ended;
    }

    /// The medium is idle again at `t`; each transmitter that had it backs
    /// off (a success or a failure) and contends again if it still has data.
    fn end_txop(
        &mut self,
        l: usize,
        t: Time,
        who: &[(usize, usize, bool)],
        qs: &mut impl AirQueues,
    ) {
        let retry_limit = self.cfg.retry_limit;
        for (i, &(tx, ac, ok)) in who.iter().enumerate() {
            let (since, txop_start) = {
                let ex = &self.links[l].exch[i];
                (ex.since, ex.txop_start)
            };
            let rng = &mut self.rng;
            let e = &mut self.links[l].edca[tx][ac];
            let draw = |cw: u32| rng.below(u64::from(cw) + 1) as u32;
            if ok {
                e.bo.success(&e.params, draw);
                // The access delay of what it sent: from contending to the
                // start of the TXOP that succeeded. After a failure it goes
                // on contending from the same instant.
                e.since = None;
                self.stats.access_delay[ac].record(txop_start - since);
            } else {
                e.bo.failure(&e.params, retry_limit, draw);
            }
        }
        self.links[l].n_exch = 0;
        self.stats.links[l].busy += t - self.links[l].busy_from;
        self.links[l].medium = Medium::Idle { since: t };
        self.refresh(l, t, qs);
    }

    fn scan_event(&mut self, s: usize, t: Time, qs: &mut impl AirQueues) {
        let sc = self.cfg.stations[s].scan.expect("a scan schedule");
        let st = &mut self.stations[s];
        if st.away {
            // Back on its channel: the next channel after `gap`, or the
            // next scan `every` after this one started.
            st.away = false;
            st.visit += 1;
            st.next_scan = Some(if st.visit < sc.visits {
                t + sc.gap
            } else {
                st.visit = 0;
                st.scan_start + sc.every
            });
            let stats = &mut self.stats.stations[s];
            stats.scan_time += sc.duration;
            stats.longest_scan = stats.longest_scan.max(sc.duration);
        } else {
            if st.visit == 0 {
                st.scan_start = t;
                self.stats.stations[s].scans += 1;
            }
            st.away = true;
            st.next_scan = Some(t + sc.duration);
        }
        self.next_scan = earliest_scan(&self.stations);
        for l in 0..self.links.len() {
            if self.stations[s].on_link[l].is_some() {
                self.refresh(l, t, qs);
            }
        }
    }
}

/// The earliest scan start or end of any station (ties: the first station).
fn earliest_scan(stations: &[StationState]) -> Option<(Time, usize)> {
    stations
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.next_scan.map(|t| (t, i)))
        .min()
}

/// When EDCA function `e`, contending since `since`, gets the medium that
/// has been idle since `idle_since`.
fn access_time(e: &Edca, idle_since: Time, since: Time, sifs: Dur, slot: Dur) -> Time {
    idle_since.max(since) + sifs + slot.saturating_mul(u64::from(e.params.aifsn + e.bo.counter))
}

/// The PSDU length of an A-MPDU of `mpdus` (4 B delimiter + padding to 4 B
/// per subframe, §10.12.2), or of one MPDU without aggregation.
/// Link `link` as station `s` of a validated configuration speaks it.
fn station_phy(s: &StationConfig, link: &Phy) -> Phy {
    s.phy(link).expect("a validated station generation")
}

fn psdu_bytes(phy: &Phy, mpdus: &[(u64, u32)]) -> u64 {
    if phy.ba_window() > 1 {
        mpdus
            .iter()
            .map(|&(_, m)| 4 + u64::from(m.div_ceil(4) * 4))
            .sum()
    } else {
        mpdus.iter().map(|&(_, m)| u64::from(m)).sum()
    }
}
