//! The engine: event handlers that move packets through the dumbbell and
//! drive the endpoints and applications.
//!
//! Path of a packet from a client-side endpoint:
//! `transmit` → the host's ingress [`Line`] (access delay) → the bottleneck
//! runtime's `Up` direction ([`Bottleneck`]: qdisc, serializer, loss,
//! propagation) → the server host's egress line (its access delay; none
//! when it is zero) → endpoint.
//! A host's access without a rate is pure delay (a line). A host with an
//! access link in a direction (`[hosts.NAME.access]`) has a queue of the
//! same runtime there instead of the line (`access.<host>.<dir>`: qdisc,
//! serializer, loss, then its access delay): between the endpoint and the
//! bottleneck when the host sends in that direction, between the bottleneck
//! and the endpoint when it receives ([`QueueExit`]). A Wi-Fi cell's
//! queues (`wifi.<host>.<dir>.<ac>`) sit where a client host's access links
//! would, chosen per flow by its access category; the cell's medium has a
//! calendar event of its own ([`Ev::Cell`]), and every queue the cell
//! touches is drained and re-armed after it runs.
//! The engine is the clock of every queue: calendar events at a queue's
//! deadlines ([`Ev::BnTx`], [`Ev::BnTimer`], [`Ev::BnDepart`]) run
//! [`Bottleneck::advance`] for it, and so does every arrival first, as the
//! emulator's forwarder does. Packets in flight sit in delay lines, not on the calendar, so the
//! calendar stays small and the cost of an event does not grow with the
//! window or the queue depth.

use l4slab_app::{Datagram, FlowApp, FlowIo, FlowRequest};
use l4slab_bottleneck::flow::{CcSample, FlowSample};
use l4slab_bottleneck::Bottleneck;
use l4slab_bottleneck::QueueEventKind;
use l4slab_core::pkttrace::{AtQueue, PacketChunk, PktEvent, CHUNK_ROWS};
use l4slab_core::{DropReason, Ecn, Packet, SimRng, Time};
use l4slab_link::DelayLine;
use l4slab_pcap::Point;
use l4slab_scenario::Scenario;
use l4slab_tcp::app::{AppIo, EndpointIo};
use l4slab_tcp::{AppEvent, Endpoint, EndpointCtx, FastOpenCache, Role, SocketInfo, Transmit};

use crate::capture::Capture;
use crate::event::EventQueue;
use crate::pkttrace;
use crate::recorder::Recorder;
use crate::segstore::{BytePool, Carried, SegStore};
use crate::{PacketTrace, SimError};
use l4slab_core::SeriesStore;

/// Bottleneck directions; the value is the queue's [`l4slab_core::QueueId`]
/// (the hosts' access queues follow, [`l4slab_scenario::build::AccessQueues`]).
pub const DOWN: usize = 0;
pub const UP: usize = 1;
/// Endpoint sides of a flow.
pub const CLIENT: usize = 0;
pub const SERVER: usize = 1;

/// Calls `progress` every this many events.
const PROGRESS_EVERY: u64 = 1 << 14;

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    FlowStart {
        flow: u32,
    },
    /// The head of a delay line is due.
    Line {
        line: u32,
    },
    /// Queue `queue` (a bottleneck direction or an access link): the packet
    /// on the wire finished serializing (one such event at a time).
    BnTx {
        queue: u32,
    },
    /// Its qdisc timer, armed for `at` (superseded when re-armed earlier).
    BnTimer {
        queue: u32,
        at: Time,
    },
    /// The head of its delay line leaves (one such event at a time).
    BnDepart {
        queue: u32,
    },
    EpTimer {
        flow: u32,
        side: u8,
        at: Time,
    },
    AppTimer {
        flow: u32,
        side: u8,
        at: Time,
    },
    Sample,
    /// The scenario's `warmup`: the summary's measurement window starts.
    Warmup,
    /// Wi-Fi cell `cell`'s medium, armed for `at` (superseded when re-armed).
    Cell {
        cell: u32,
        at: Time,
    },
    /// A multi-homed client's flow: the Connection Attempt Delay passed
    /// (`crate::race`).
    RaceStart {
        flow: u32,
    },
    /// A timer of a flow's second connection attempt (`crate::race`).
    RaceTimer {
        flow: u32,
        side: u8,
        at: Time,
    },
}

/// Where a line's packets go when they come out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineExit {
    /// Into the bottleneck in direction `dir`.
    Bottleneck { dir: usize },
    /// To the endpoint on `side` of the packet's flow.
    Endpoint { side: usize },
}

/// Where a queue's departures go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueExit {
    /// A bottleneck direction: to the far side's host (its access link, or
    /// its egress line, or its endpoint).
    FarSide,
    /// A sending host's access link: into the bottleneck.
    Bottleneck,
    /// A receiving host's access link: to the endpoint on `side`.
    Endpoint { side: usize },
}

/// A queue of the runtime as the engine routes it.
#[derive(Clone, Copy, Debug)]
pub struct QueueRoute {
    /// The bottleneck direction its packets travel (`DOWN`, `UP`).
    pub dir: usize,
    pub exit: QueueExit,
}

/// The deadlines of one queue on the calendar: one timer per
/// kind, so a deadline moving earlier (an arrival at an idle link) never
/// leaves a stale event behind, as a single "next deadline" timer would.
#[derive(Clone, Copy, Debug, Default)]
pub struct BnArmed {
    pub tx: bool,
    pub timer: Option<Time>,
    pub depart: bool,
}

/// An access line: a [`DelayLine`] with its exit, and whether its head is on
/// the calendar.
pub struct Line {
    pub line: DelayLine,
    pub exit: LineExit,
    pub armed: bool,
}

pub struct EpState {
    pub ep: Endpoint,
    pub timer_armed: Option<Time>,
}

impl EpState {
    /// Put the endpoint's next timer on the calendar as `event(at)` unless an
    /// earlier wake-up for it is already there (one armed event at a time;
    /// a later one that fires early finds nothing due and re-arms).
    pub(crate) fn arm_timer(
        &mut self,
        q: &mut EventQueue<Ev>,
        now: Time,
        event: impl FnOnce(Time) -> Ev,
    ) {
        if let Some(t) = self.ep.next_timer() {
            let t = t.max(now);
            if self.timer_armed.is_none_or(|a| t < a) {
                self.timer_armed = Some(t);
                q.schedule_flow(t, event(t));
            }
        }
    }
}

pub struct FlowState {
    pub eps: [EpState; 2],
    /// Which side sends the application's (main) data.
    pub sender: usize,
    pub app: Box<dyn FlowApp>,
    /// The app's wake-up per side.
    pub app_timer: [Option<Time>; 2],
    pub rng: SimRng,
    pub file_size: Option<u64>,
    pub delivered: u64,
    pub completion: Option<Time>,
    /// Packets sent and dropped, by the side that sent them.
    pub sent_pkts: [u64; 2],
    pub lost_pkts: [u64; 2],
    /// A multi-homed client's flow: its paths and attempts (`crate::race`).
    pub race: Option<Box<crate::race::Race>>,
}

impl FlowState {
    /// For an app with its own transport over datagrams (QUIC), take its
    /// delivered bytes and completion as the flow's.
    pub fn sync_app_delivery(&mut self) {
        if let Some(d) = self.app.delivered_bytes() {
            self.delivered = d;
        }
        if self.completion.is_none() {
            self.completion = self.app.completed_at();
        }
    }
}

/// The endpoint side index (`CLIENT`/`SERVER`) as the app's [`Role`].
pub fn role_of(side: usize) -> Role {
    if side == CLIENT {
        Role::Client
    } else {
        Role::Server
    }
}

/// Packet conservation counters: created = delivered + dropped + in the network.
#[derive(Default, Debug)]
pub struct PacketCounts {
    pub created: u64,
    pub delivered: u64,
    pub dropped: [u64; DropReason::ALL.len()],
}

pub struct Sim<'s> {
    pub scn: &'s Scenario,
    pub seed: u64,
    pub q: EventQueue<Ev>,
    /// Both directions of the bottleneck and the hosts' access links (the
    /// runtime the emulator runs too).
    pub bn: Bottleneck,
    /// Per queue: which of its deadlines are on the calendar.
    pub bn_armed: Vec<BnArmed>,
    /// Per queue: its direction and where its departures go.
    pub routes: Vec<QueueRoute>,
    /// Per flow, per direction: the access queues its packets pass
    /// (`[before the bottleneck, after it]`: access links, Wi-Fi queues).
    pub paths: Vec<[[Option<usize>; 2]; 2]>,
    /// Per Wi-Fi cell: the deadline on the calendar.
    pub cell_armed: Vec<Option<Time>>,
    /// Scratch: queues a cell touched.
    pub touched: Vec<usize>,
    pub flows: Vec<FlowState>,
    /// Access lines: `lines[h]` carries host `h`'s packets to the bottleneck;
    /// `lines[n_hosts + h]` carries packets from the bottleneck to host `h`.
    pub lines: Vec<Line>,
    /// Per flow: host index of (client, server).
    pub hosts_of: Vec<[usize; 2]>,
    /// TCP Fast Open caches, one per (client host, server host) pair that
    /// some flow connects (`l4slab_tcp::fastopen`): the client's cached
    /// cookie outlives the connection, so a later flow between the same
    /// hosts (a web page's `connection = "new"` object) finds it. Built
    /// fresh for every run; lent to the endpoints in their `EndpointCtx`.
    pub fastopen: Vec<FastOpenCache>,
    /// Per flow: its index in `fastopen`.
    pub fastopen_of: Vec<usize>,
    pub segs: SegStore,
    /// Payloads of byte datagrams in flight.
    pub bytes: BytePool,
    /// Byte datagrams an app callback sent: (slot, length, IP-ECN).
    pub byte_out: Vec<(u32, u32, Ecn)>,
    pub rec: Recorder,
    pub series: SeriesStore,
    pub trace: Option<PacketTrace>,
    /// The pcap capture of every queue (`pcap = true` and a results folder).
    pub pcap: Option<Capture>,
    pub counts: PacketCounts,
    pub events: u64,
    // Scratch buffers, reused so the hot path never allocates.
    pub out: Vec<Transmit>,
    pub dgrams: Vec<Datagram>,
    pub app_events: Vec<AppEvent>,
    /// What an app callback asked of other flows of its app.
    pub flow_requests: Vec<FlowRequest>,
    /// Per packet store handle: the path a multi-homed client's packet
    /// travels (`crate::race`; read only for such flows).
    pub way_tags: Vec<u8>,
    /// The segments being sent are a second connection attempt's.
    pub other_sending: bool,
    /// Scratch: a second attempt's app events.
    pub race_events: Vec<AppEvent>,
}

impl Sim<'_> {
    /// Advance to the scenario's end. `progress(now)` is called every
    /// [`PROGRESS_EVERY`] events; with a packet trace, `packets` receives
    /// every [`CHUNK_ROWS`] rows as they fill and the rest (possibly none) at
    /// the end. Either returning `false` cancels the run.
    pub fn run(
        &mut self,
        progress: &mut dyn FnMut(Time) -> bool,
        packets: &mut dyn FnMut(&PacketChunk<'_>) -> bool,
    ) -> Result<(), SimError> {
        let end = self.scn.duration;
        while let Some((now, ev)) = self.q.pop_until(end) {
            self.events += 1;
            if self.events.is_multiple_of(PROGRESS_EVERY) && !progress(now) {
                return Err(SimError::Cancelled(now));
            }
            self.dispatch(now, ev);
            if !self.hand_over_chunks(packets, false) {
                return Err(SimError::Cancelled(now));
            }
        }
        progress(end);
        if !self.hand_over_chunks(packets, true) {
            return Err(SimError::Cancelled(end));
        }
        Ok(())
    }

    /// Give `packets` each full chunk of the trace (and with `last`, the
    /// rest), then drop those rows; the buffers keep their capacity.
    fn hand_over_chunks(
        &mut self,
        packets: &mut dyn FnMut(&PacketChunk<'_>) -> bool,
        last: bool,
    ) -> bool {
        let Some(tr) = &mut self.trace else {
            return true;
        };
        while tr.rows() >= CHUNK_ROWS {
            if !packets(&tr.chunk(0..CHUNK_ROWS)) {
                return false;
            }
            tr.drain_front(CHUNK_ROWS);
        }
        if last {
            let rows = tr.rows();
            if !packets(&tr.chunk(0..rows)) {
                return false;
            }
            tr.drain_front(rows);
        }
        true
    }

    fn dispatch(&mut self, now: Time, ev: Ev) {
        match ev {
            Ev::FlowStart { flow } => {
                let f = flow as usize;
                self.race_start(now, f);
                if self.flows[f].app.uses_connection() {
                    self.with_ep(now, f, CLIENT, |ep, now, ctx| ep.connect(now, ctx));
                } else {
                    // Datagram-only apps: both ends are ready at once.
                    for side in [CLIENT, SERVER] {
                        self.app_callback(now, f, side, |app, now, r, io| {
                            app.on_connected(now, r, io)
                        });
                    }
                }
            }
            Ev::Line { line } => self.line_due(now, line as usize),
            Ev::BnTx { queue } => {
                let q = queue as usize;
                self.bn_armed[q].tx = false;
                self.advance_queue(now, q);
                self.arm_queue(q);
            }
            Ev::BnTimer { queue, at } => {
                let q = queue as usize;
                if self.bn_armed[q].timer == Some(at) {
                    self.bn_armed[q].timer = None;
                    self.advance_queue(now, q);
                    self.arm_queue(q);
                }
            }
            Ev::BnDepart { queue } => {
                let q = queue as usize;
                self.bn_armed[q].depart = false;
                self.advance_queue(now, q);
                self.arm_queue(q);
            }
            Ev::EpTimer { flow, side, at } => {
                let (f, s) = (flow as usize, usize::from(side));
                let st = &mut self.flows[f].eps[s];
                if st.timer_armed != Some(at) {
                    return; // superseded by an earlier arming
                }
                st.timer_armed = None;
                if st.ep.next_timer().is_some_and(|t| t <= now) {
                    self.with_ep(now, f, s, |ep, now, ctx| ep.on_timer(now, ctx));
                } else {
                    self.arm_ep_timer(now, f, s);
                }
            }
            Ev::AppTimer { flow, side, at } => {
                let (f, side) = (flow as usize, usize::from(side));
                if self.flows[f].app_timer[side] == Some(at) {
                    self.flows[f].app_timer[side] = None;
                    self.app_callback(now, f, side, |app, now, r, io| app.on_timer(now, r, io));
                }
                // A QUIC flow's second connection attempt has wake-ups too.
                if self.flows[f].race.is_some() {
                    self.race_app_timer(now, f, side, at);
                }
            }
            Ev::Warmup => self.start_window(now),
            Ev::RaceStart { flow } => self.race_fire(now, flow as usize),
            Ev::RaceTimer { flow, side, at } => {
                self.race_timer(now, flow as usize, usize::from(side), at);
            }
            Ev::Cell { cell, at } => {
                let c = cell as usize;
                if self.cell_armed[c] == Some(at) {
                    self.cell_armed[c] = None;
                    self.bn.run_cell(c, now);
                    self.flush_cell(c);
                }
            }
            Ev::Sample => {
                self.sample(now);
                let next = now + self.scn.sample_interval;
                if next <= self.scn.duration {
                    self.q.schedule(next, Ev::Sample);
                }
            }
        }
    }

    // ---- network -------------------------------------------------------

    fn arrive_at_queue(&mut self, now: Time, q: usize, pkt: Packet) {
        // The runtime's protocol: run the queue up to `now`, then enqueue.
        self.advance_queue(now, q);
        self.bn.enqueue(q, now, pkt);
        self.take_events(q);
        self.arm_queue(q);
        if let Some(c) = self.bn.cell_of(q) {
            self.flush_cell(c);
        }
    }

    /// After a runtime call that ran Wi-Fi cell `c` (or told it of an
    /// arrival): drain and re-arm every queue it touched (their delay lines,
    /// drops and events), then put the medium's next deadline on the calendar.
    fn flush_cell(&mut self, c: usize) {
        loop {
            let mut touched = std::mem::take(&mut self.touched);
            self.bn.take_touched(&mut touched);
            if touched.is_empty() {
                self.touched = touched;
                break;
            }
            for &q in &touched {
                self.take_events(q);
                self.arm_queue(q);
            }
            touched.clear();
            self.touched = touched;
        }
        let now = self.q.now();
        match self.bn.cell_deadline(c).map(|t| t.max(now)) {
            Some(t) if self.cell_armed[c] != Some(t) => {
                self.cell_armed[c] = Some(t);
                self.q.schedule(
                    t,
                    Ev::Cell {
                        cell: c as u32,
                        at: t,
                    },
                );
            }
            Some(_) => {}
            None => self.cell_armed[c] = None,
        }
    }

    /// Run queue `q` to `now`; hand its departures on ([`QueueExit`]) and
    /// account for its drops.
    fn advance_queue(&mut self, now: Time, q: usize) {
        self.bn.run_link(q, now);
        self.take_events(q);
        let QueueRoute { dir, exit } = self.routes[q];
        while let Some((at, pkt)) = self.bn.pop_departure(q, now) {
            debug_assert_eq!(at, now, "the simulator runs a queue at its deadlines");
            // Its capture at the link's far end, before it moves on.
            self.take_events(q);
            match exit {
                QueueExit::Bottleneck => self.arrive_at_queue(now, dir, pkt),
                QueueExit::Endpoint { side } => self.deliver(now, side, pkt),
                QueueExit::FarSide => self.reach_far_side(now, dir, pkt),
            }
        }
        if let Some(c) = self.bn.cell_of(q) {
            self.flush_cell(c);
        }
    }

    /// A packet leaving bottleneck direction `dir` reaches the far side's
    /// host: its access queue in `dir` (an access link, a Wi-Fi queue), else
    /// its access delay line, else (no delay) its endpoint.
    fn reach_far_side(&mut self, now: Time, dir: usize, pkt: Packet) {
        // Packets going down arrive at the client side, going up at the server side.
        let side = if dir == DOWN { CLIENT } else { SERVER };
        let f = pkt.flow as usize;
        let host = self.hosts_of[f][side];
        let to = match &self.flows[f].race {
            Some(r) => r.ways[self.way_of(pkt.handle)][dir][1],
            None => self.paths[f][dir][1],
        };
        if let Some(q) = to {
            self.arrive_at_queue(now, q, pkt);
            return;
        }
        let line = self.lines.len() / 2 + host;
        if self.lines[line].line.delay().is_zero() {
            self.deliver(now, side, pkt);
        } else {
            self.enter_line(now, line, pkt);
        }
    }

    /// Put queue `q`'s deadlines on the calendar: its serialization
    /// and its delay line's head (each once), its qdisc timer (unless an
    /// earlier one is there). Every event runs [`Bottleneck::advance`].
    fn arm_queue(&mut self, q: usize) {
        let now = self.q.now();
        let armed = &mut self.bn_armed[q];
        let queue = q as u32;
        if !armed.tx {
            if let Some(t) = self.bn.tx_done_at(q) {
                armed.tx = true;
                self.q.schedule(t.max(now), Ev::BnTx { queue });
            }
        }
        if !armed.depart {
            if let Some(t) = self.bn.next_departure(q) {
                armed.depart = true;
                self.q.schedule(t.max(now), Ev::BnDepart { queue });
            }
        }
        if let Some(t) = self.bn.next_timer(q) {
            let t = t.max(now);
            if armed.timer.is_none_or(|a| t < a) {
                armed.timer = Some(t);
                self.q.schedule(t, Ev::BnTimer { queue, at: t });
            }
        }
    }

    /// After every runtime call on queue `q`: its packet events into the
    /// packet trace and the pcap capture (while the packets' headers are
    /// still stored), then its drops.
    #[inline(always)]
    fn take_events(&mut self, q: usize) {
        if self.bn.has_output(q) {
            self.drain_output(q);
        }
    }

    /// The slow path of [`Sim::take_events`].
    fn drain_output(&mut self, q: usize) {
        if !self.bn.packet_events(q).is_empty() {
            self.log_packet_events(q);
        }
        if !self.bn.dropped(q).is_empty() {
            self.account_drops(q);
        }
    }

    /// Queue `q`'s events ([`l4slab_bottleneck::QueueEvent`]): a
    /// queue event is a trace row, a capture point a pcap record.
    fn log_packet_events(&mut self, q: usize) {
        let dir = self.routes[q].dir;
        // Packets going down were sent by the server side.
        let sent_by = if dir == DOWN { SERVER } else { CLIENT };
        for e in self.bn.packet_events(q) {
            let carried = self.segs.get(e.pkt.handle);
            let point = match e.kind {
                QueueEventKind::Arrive => Point::In,
                QueueEventKind::Leave => Point::Out,
                QueueEventKind::Enqueue { .. }
                | QueueEventKind::Dequeue { .. }
                | QueueEventKind::Mark(_)
                | QueueEventKind::Drop(_) => {
                    if let Some(tr) = &mut self.trace {
                        let (event, at) = e.trace_columns(&tr.names, q).expect("a queue event");
                        let from_sender = sent_by == self.flows[e.pkt.flow as usize].sender;
                        pkttrace::row(tr, e.t, event, at, &e.pkt, carried, from_sender);
                    }
                    continue;
                }
            };
            if let Some(c) = &mut self.pcap {
                c.packet(e.t, q, dir, point, &e.pkt, (carried, &self.bytes));
            }
        }
        self.bn.clear_packet_events(q);
    }

    fn account_drops(&mut self, q: usize) {
        let dir = self.routes[q].dir;
        for i in 0..self.bn.dropped(q).len() {
            // Traced with the queue events (`log_packet_events`).
            let (_, pkt, reason) = self.bn.dropped(q)[i];
            if let Carried::Bytes { buf, .. } = self.segs.remove(pkt.handle) {
                self.bytes.free(buf);
            }
            self.counts.dropped[reason.index()] += 1;
            // Packets going down were sent by the server side.
            let sent_by = if dir == DOWN { SERVER } else { CLIENT };
            self.flows[pkt.flow as usize].lost_pkts[sent_by] += 1;
        }
        self.bn.clear_dropped(q);
    }

    fn deliver(&mut self, now: Time, side: usize, pkt: Packet) {
        let f = pkt.flow as usize;
        let way = self.flows[f]
            .race
            .as_ref()
            .map(|r| (self.way_of(pkt.handle), r.main));
        let carried = self.segs.remove(pkt.handle);
        self.counts.delivered += 1;
        if let Some(tr) = &mut self.trace {
            let from_sender = side != self.flows[f].sender;
            let ev = PktEvent::Deliver;
            pkttrace::row(tr, now, ev, AtQueue::NONE, &pkt, &carried, from_sender);
        }
        let ecn = pkt.ecn;
        if let Some((way, main)) = way {
            if way != main {
                // Another attempt's packet: its endpoint, or nobody.
                match carried {
                    Carried::Seg(seg) => {
                        self.race_deliver_other(now, f, side, way, &seg, ecn);
                    }
                    Carried::Bytes { buf, .. } => {
                        let data = self.bytes.take(buf);
                        self.race_deliver_other_bytes(now, f, side, way, &data, ecn);
                        self.bytes.give_back(buf, data);
                    }
                    Carried::Dgram(_) => {}
                }
                return;
            }
        }
        match carried {
            Carried::Seg(seg) => self.with_ep(now, f, side, |ep, now, ctx| {
                ep.on_segment(now, &seg, ecn, ctx)
            }),
            Carried::Dgram(dg) => {
                // The network may have marked it: the app sees the IP-ECN field as it arrived.
                let dg = Datagram { ecn, ..dg };
                self.app_callback(now, f, side, |app, now, r, io| {
                    app.on_datagram(now, r, dg, io)
                });
            }
            Carried::Bytes { buf, .. } => {
                let data = self.bytes.take(buf);
                self.app_callback(now, f, side, |app, now, r, io| {
                    app.on_bytes(now, r, &data, ecn, io)
                });
                self.bytes.give_back(buf, data);
                // An app's own transport (QUIC) takes its RTT samples from datagrams.
                let rec = &mut self.rec.flows[f];
                self.flows[f]
                    .app
                    .take_rtt_samples(&mut |d| rec.record_rtt(d));
            }
        }
    }

    fn transmit_datagram(&mut self, now: Time, f: usize, side: usize, dg: Datagram) {
        self.send_packet(now, f, side, Carried::Dgram(dg), dg.wire_len(), dg.ecn);
    }

    pub(crate) fn transmit_segment(&mut self, now: Time, f: usize, side: usize, tx: Transmit) {
        self.send_packet(now, f, side, Carried::Seg(tx.seg), tx.wire_len, tx.ecn);
    }

    fn send_packet(&mut self, now: Time, f: usize, side: usize, c: Carried, len: u32, ecn: Ecn) {
        let handle = self.segs.insert(c);
        let pkt = Packet {
            id: self.counts.created,
            flow: f as u32,
            len,
            ecn,
            enqueued_at: Time::ZERO,
            handle,
        };
        self.counts.created += 1;
        self.flows[f].sent_pkts[side] += 1;
        if let Some(tr) = &mut self.trace {
            let from_sender = side == self.flows[f].sender;
            pkttrace::row(
                tr,
                now,
                PktEvent::Send,
                AtQueue::NONE,
                &pkt,
                &c,
                from_sender,
            );
        }
        let host = self.hosts_of[f][side];
        // Clients send up, servers down: through the host's access queue
        // in that direction if it has one, else its access delay.
        let dir = if side == CLIENT { UP } else { DOWN };
        let via = match self.send_on_way(f, handle, dir, len) {
            Some(via) => via,
            None => self.paths[f][dir],
        };
        match via[0] {
            Some(q) => self.arrive_at_queue(now, q, pkt),
            None => self.enter_line(now, host, pkt),
        }
    }

    fn enter_line(&mut self, now: Time, line: usize, pkt: Packet) {
        let l = &mut self.lines[line];
        let at = l.line.push(now, pkt);
        if !l.armed {
            l.armed = true;
            self.q.schedule(at, Ev::Line { line: line as u32 });
        }
    }

    /// Hand every packet due at the head of `line` to its exit, then re-arm.
    fn line_due(&mut self, now: Time, line: usize) {
        self.lines[line].armed = false;
        while let Some((_, pkt)) = self.lines[line].line.pop_due(now) {
            match self.lines[line].exit {
                LineExit::Bottleneck { dir } => self.arrive_at_queue(now, dir, pkt),
                LineExit::Endpoint { side } => self.deliver(now, side, pkt),
            }
        }
        let l = &mut self.lines[line];
        if let Some(at) = l.line.head_time() {
            if !l.armed {
                l.armed = true;
                self.q.schedule(at, Ev::Line { line: line as u32 });
            }
        }
    }

    // ---- endpoints and applications -----------------------------------

    /// Run `op` on an endpoint, then transmit what it queued, feed its
    /// application events to the app (which may write more), and re-arm its timer.
    pub(crate) fn with_ep(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        op: impl FnOnce(&mut Endpoint, Time, &mut EndpointCtx<'_>),
    ) {
        {
            let fl = &mut self.flows[f];
            let mut ctx = EndpointCtx {
                rng: &mut fl.rng,
                tracer: &mut self.rec,
                out: &mut self.out,
                events: &mut self.app_events,
                fastopen: Some(&mut self.fastopen[self.fastopen_of[f]]),
            };
            op(&mut fl.eps[side].ep, now, &mut ctx);
        }
        self.flush(now, f, side);
    }

    pub(crate) fn flush(&mut self, now: Time, f: usize, side: usize) {
        loop {
            for i in 0..self.out.len() {
                let tx = self.out[i];
                self.transmit_segment(now, f, side, tx);
            }
            self.out.clear();
            for i in 0..self.dgrams.len() {
                let dg = self.dgrams[i];
                self.transmit_datagram(now, f, side, dg);
            }
            self.dgrams.clear();
            for i in 0..self.byte_out.len() {
                let (buf, len, ecn) = self.byte_out[i];
                let c = Carried::Bytes { buf, len };
                self.send_packet(now, f, side, c, len + Datagram::HEADER_BYTES, ecn);
            }
            self.byte_out.clear();
            if self.app_events.is_empty() {
                break;
            }
            // App callbacks may queue more segments and events: take the current batch.
            let n = self.app_events.len();
            for i in 0..n {
                let ev = self.app_events[i];
                self.app_event(now, f, side, ev);
            }
            self.app_events.drain(..n);
        }
        self.arm_ep_timer(now, f, side);
    }

    pub(crate) fn arm_ep_timer(&mut self, now: Time, f: usize, side: usize) {
        self.flows[f].eps[side].arm_timer(&mut self.q, now, |at| Ev::EpTimer {
            flow: f as u32,
            side: side as u8,
            at,
        });
    }

    fn app_event(&mut self, now: Time, f: usize, side: usize, ev: AppEvent) {
        if ev == AppEvent::Connected && side == CLIENT {
            self.race_main_connected(now, f);
        }
        if let AppEvent::Delivered { bytes } = ev {
            if side != self.flows[f].sender {
                self.race_delivered(now, f);
            }
            let fl = &mut self.flows[f];
            if side != fl.sender {
                fl.delivered += bytes;
                if fl.completion.is_none() && fl.file_size.is_some_and(|s| fl.delivered >= s) {
                    fl.completion = Some(now);
                }
            }
        }
        self.app_callback_inner(now, f, side, |app, now, r, io| match ev {
            AppEvent::Connected => app.on_connected(now, r, io),
            AppEvent::Writable => app.on_writable(now, r, io),
            AppEvent::Delivered { bytes } => app.on_receive(now, r, bytes, io),
            AppEvent::PeerFinished => app.on_peer_finished(now, r, io),
        });
    }

    /// An app callback from outside an endpoint interaction (a timer, a datagram).
    pub(crate) fn app_callback(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        cb: impl FnOnce(&mut dyn FlowApp, Time, Role, &mut dyn FlowIo),
    ) {
        self.app_callback_inner(now, f, side, cb);
        self.flush(now, f, side);
        if self.flows[f].race.is_some() {
            self.race_check_app(now, f);
        }
    }

    /// Call the app with a [`FlowIo`] bound to `side`'s endpoint. Segments,
    /// datagrams and events it causes land in the scratch buffers for `flush`.
    fn app_callback_inner(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        cb: impl FnOnce(&mut dyn FlowApp, Time, Role, &mut dyn FlowIo),
    ) {
        let fl = &mut self.flows[f];
        let wake = {
            let mut ctx = EndpointCtx {
                rng: &mut fl.rng,
                tracer: &mut self.rec,
                out: &mut self.out,
                events: &mut self.app_events,
                fastopen: Some(&mut self.fastopen[self.fastopen_of[f]]),
            };
            let mut io = SimIo {
                sock: EndpointIo {
                    now,
                    ep: &mut fl.eps[side].ep,
                    ctx: &mut ctx,
                    wake: None,
                },
                dgrams: &mut self.dgrams,
                bytes: &mut self.bytes,
                byte_out: &mut self.byte_out,
            };
            cb(fl.app.as_mut(), now, role_of(side), &mut io);
            io.sock.wake
        };
        let reqs = &mut self.flow_requests;
        fl.app.take_flow_requests(&mut |r| reqs.push(r));
        if let Some(at) = wake {
            self.arm_app_timer(now, f, side, at);
        }
        for i in 0..self.flow_requests.len() {
            match self.flow_requests[i] {
                FlowRequest::Open { flow } => self
                    .q
                    .schedule_flow(now, Ev::FlowStart { flow: flow as u32 }),
                FlowRequest::Wake { flow, side, at } => {
                    let side = if side == Role::Client { CLIENT } else { SERVER };
                    self.arm_app_timer(now, flow, side, at);
                }
            }
        }
        self.flow_requests.clear();
    }

    /// The app of flow `f` asked to be called back on `side` at `at` (not
    /// before `now`); the earliest wake-up asked for is kept.
    fn arm_app_timer(&mut self, now: Time, f: usize, side: usize, at: Time) {
        let at = at.max(now);
        let fl = &mut self.flows[f];
        if fl.app_timer[side].is_none_or(|a| at < a) {
            fl.app_timer[side] = Some(at);
            self.q.schedule_flow(
                at,
                Ev::AppTimer {
                    flow: f as u32,
                    side: side as u8,
                    at,
                },
            );
        }
    }

    // ---- sampling -------------------------------------------------------

    /// The scenario's `warmup` (an event before anything else due then):
    /// every queue runs to `now`, then the summary's
    /// window starts there: the queues' totals ([`Bottleneck::start_window`]),
    /// each flow's delivered bytes and RTT distribution. The series and the
    /// whole-run counters go on.
    fn start_window(&mut self, now: Time) {
        self.advance_all(now);
        self.bn.start_window(now);
        for (fl, rec) in self.flows.iter_mut().zip(&mut self.rec.flows) {
            fl.sync_app_delivery();
            rec.start_window(fl.delivered);
        }
    }

    /// Run every queue to `now` (bottleneck first, then the access links).
    fn advance_all(&mut self, now: Time) {
        for q in 0..self.bn.queues() {
            self.advance_queue(now, q);
            self.arm_queue(q);
        }
    }

    fn sample(&mut self, now: Time) {
        // Everything due by the sample's instant happens before it (as in the
        // emulator): every queue runs to `now` first.
        self.advance_all(now);
        let t = now.as_secs_f64();
        let iv = self.scn.sample_interval;
        for (fl, rec) in self.flows.iter_mut().zip(&mut self.rec.flows) {
            fl.sync_app_delivery();
            let ep = &fl.eps[fl.sender].ep;
            // An app with its own transport (QUIC): its sender's, not the idle TCP endpoint's.
            let own = fl.app.own_transport();
            let cc = own.as_ref().map_or(ep.cc(), |o| o.cc);
            let m = cc.metrics();
            let (pacing, inflight, srtt) = match &own {
                Some(o) => (o.pacing_rate, o.bytes_in_flight, o.srtt),
                None => (ep.pacing_rate(), ep.bytes_in_flight(), ep.srtt()),
            };
            let d = fl.sender;
            let snap = FlowSample {
                delivered: fl.delivered,
                cc: Some(CcSample::of(&m, cc.states())),
                pacing,
                inflight: Some(inflight),
                // Written but not yet sent: the wait inside the sending host.
                unsent: own.is_none().then(|| ep.unsent_bytes()),
                srtt,
                // Packet loss of the main data direction.
                data_packets: Some((fl.sent_pkts[d], fl.lost_pkts[d])),
                ..FlowSample::default()
            };
            let ss = &mut self.series;
            if rec.sample(ss, now, t, iv, &snap).is_none() {
                continue;
            }
            fl.app
                .sample(now, iv, &mut |name, v| rec.push_app(ss, t, name, v));
        }
        self.bn
            .sample(now, t, self.scn.sample_interval, &mut self.series);
    }
}

/// The [`FlowIo`] the simulator hands an app: one endpoint's socket, plus
/// datagrams collected for sending from the same side.
struct SimIo<'e, 'c> {
    sock: EndpointIo<'e, 'c>,
    dgrams: &'e mut Vec<Datagram>,
    bytes: &'e mut BytePool,
    byte_out: &'e mut Vec<(u32, u32, Ecn)>,
}

impl AppIo for SimIo<'_, '_> {
    fn write(&mut self, bytes: u64) -> u64 {
        self.sock.write(bytes)
    }
    fn wake_at(&mut self, at: Time) {
        self.sock.wake_at(at);
    }
    fn finish(&mut self) {
        self.sock.finish();
    }
    fn info(&self) -> SocketInfo {
        self.sock.info()
    }
}

impl FlowIo for SimIo<'_, '_> {
    fn send_datagram(&mut self, dg: Datagram) {
        self.dgrams.push(dg);
    }
    fn send_bytes(&mut self, data: &[u8], ecn: Ecn) {
        let len = u32::try_from(data.len()).expect("a UDP payload fits 64 KiB");
        let buf = self.bytes.store(data);
        self.byte_out.push((buf, len, ecn));
    }
}
