//! Test harness: two endpoints joined by an in-memory wire, so that tests read
//! as timelines ("the client sends 10 segments at 20 ms; the 3rd is lost; ...").
//!
//! The wire has a one-way delay per direction, an optional serialization rate
//! (an infinite FIFO per direction), a drop rule and an optional jitter rule.
//! Every segment put on the wire is logged with its send time, so assertions
//! can look at exactly what was sent when.

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod cc;

use std::collections::BTreeMap;

use l4slab_core::{Dur, Ecn, Rate, SimRng, Time, TraceEvent, VecTracer};
use l4slab_tcp::app::{self, App};
use l4slab_tcp::{
    AppEvent, Endpoint, EndpointCtx, FastOpenCache, Flags, Role, Segment, Sink, Transmit,
    TransportConfig,
};

/// The RFC-only loss recovery, for tests that pin RFC timelines: the RFC
/// 6298 timer, no tail loss probe, no F-RTO, no undo.
pub fn rfc_recovery() -> TransportConfig {
    TransportConfig {
        rto_formula: l4slab_tcp::RtoFormula::Rfc6298,
        tlp: false,
        frto: false,
        undo: false,
        ..TransportConfig::default()
    }
}

/// Direction on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    /// Client to server.
    C2S,
    /// Server to client.
    S2C,
}

/// One segment put on the wire.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub t: Time,
    pub dir: Dir,
    pub seg: Segment,
    pub wire_len: u32,
    pub dropped: bool,
    /// IP-ECN field as sent.
    pub ecn: Ecn,
    /// IP-ECN field as delivered (after the wire's ECN rule), if delivered.
    pub ecn_out: Option<Ecn>,
}

impl Sent {
    pub fn is_data(&self) -> bool {
        self.seg.len > 0
    }
}

pub struct Side {
    pub ep: Endpoint,
    pub app: Box<dyn App>,
    /// Every app event with its time.
    pub events: Vec<(Time, AppEvent)>,
    pub tracer: VecTracer,
    pub wake: Option<Time>,
    rng: SimRng,
    out: Vec<Transmit>,
    evbuf: Vec<AppEvent>,
    scratch: Vec<AppEvent>,
}

impl Side {
    fn new(ep: Endpoint, app: Box<dyn App>) -> Self {
        Side {
            ep,
            app,
            events: Vec::new(),
            tracer: VecTracer::default(),
            wake: None,
            rng: SimRng::derive(1, "test"),
            out: Vec::new(),
            evbuf: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Call `f` with the endpoint and a context, then let the app react to
    /// every event; returns what was transmitted.
    fn call(
        &mut self,
        now: Time,
        fastopen: &mut FastOpenCache,
        f: impl FnOnce(&mut Endpoint, &mut dyn App, &mut EndpointCtx<'_>) -> Option<Time>,
    ) -> Vec<Transmit> {
        let Side {
            ep,
            app,
            events,
            tracer,
            wake,
            rng,
            out,
            evbuf,
            scratch,
        } = self;
        let mut ctx = EndpointCtx {
            rng,
            tracer,
            out,
            events: evbuf,
            fastopen: Some(fastopen),
        };
        let w0 = f(ep, app.as_mut(), &mut ctx);
        let w = app::pump(app.as_mut(), ep, now, &mut ctx, scratch, &mut |ev| {
            events.push((now, *ev))
        });
        for w in [w0, w].into_iter().flatten() {
            *wake = Some(wake.map_or(w, |x| x.min(w)));
        }
        std::mem::take(out)
    }

    /// Trace events of one kind, e.g. `side.traces(|e| matches!(e, TraceEvent::Retransmit{..}))`.
    pub fn traces(&self, f: impl Fn(&TraceEvent) -> bool) -> Vec<(Time, TraceEvent)> {
        self.tracer
            .0
            .iter()
            .filter(|(_, e)| f(e))
            .cloned()
            .collect()
    }

    pub fn delivered(&self) -> u64 {
        self.events
            .iter()
            .map(|(_, e)| match e {
                AppEvent::Delivered { bytes } => *bytes,
                _ => 0,
            })
            .sum()
    }

    pub fn count(&self, ev: AppEvent) -> usize {
        self.events.iter().filter(|(_, e)| *e == ev).count()
    }

    pub fn time_of(&self, ev: AppEvent) -> Option<Time> {
        self.events.iter().find(|(_, e)| *e == ev).map(|(t, _)| *t)
    }
}

/// A pure ACK seen on the wire: `(time, ack, SACK blocks)`.
pub type AckSeen = (Time, u64, Vec<(u64, u64)>);

type DropRule = Box<dyn FnMut(Dir, &Segment, &mut SimRng) -> bool>;
/// The wire's ECN rule: the IP-ECN field a segment arrives with, or `None`
/// to drop it (an ECN black hole).
type EcnRule = Box<dyn FnMut(Dir, &Segment, Ecn, &mut SimRng) -> Option<Ecn>>;
type JitterRule = Box<dyn FnMut(Dir, &Segment, &mut SimRng) -> Dur>;

pub struct Net {
    pub now: Time,
    pub client: Side,
    pub server: Side,
    /// One-way propagation delay per direction.
    pub delay: [Dur; 2],
    /// Serialization rate per direction (`None` = infinitely fast).
    pub rate: [Option<Rate>; 2],
    busy_until: [Time; 2],
    pub log: Vec<Sent>,
    /// The TCP Fast Open cache the two hosts share. It outlives the
    /// connection: a test moves it to the next `Net` for a second one.
    pub fastopen: FastOpenCache,
    drop: DropRule,
    ecn_rule: EcnRule,
    jitter: JitterRule,
    rng: SimRng,
    queue: BTreeMap<(Time, u64), (Dir, Segment, Ecn)>,
    order: u64,
    /// Actions performed by `step` (a livelock guard for long runs).
    pub steps: u64,
    /// Check every endpoint invariant after each step (O(window)).
    pub check: bool,
}

fn idx(d: Dir) -> usize {
    match d {
        Dir::C2S => 0,
        Dir::S2C => 1,
    }
}

impl Net {
    /// A client running `app` and a server running a [`Sink`], one-way delay `delay`.
    pub fn new(
        client_cfg: TransportConfig,
        client_cc: Box<dyn l4slab_cc::CongestionControl>,
        app: Box<dyn App>,
        server_cfg: TransportConfig,
        server_cc: Box<dyn l4slab_cc::CongestionControl>,
        delay: Dur,
    ) -> Self {
        Net {
            now: Time::ZERO,
            client: Side::new(Endpoint::new(1, Role::Client, client_cfg, client_cc), app),
            server: Side::new(
                Endpoint::new(1, Role::Server, server_cfg, server_cc),
                Box::new(Sink::new()),
            ),
            delay: [delay, delay],
            rate: [None, None],
            busy_until: [Time::ZERO; 2],
            log: Vec::new(),
            fastopen: FastOpenCache::default(),
            drop: Box::new(|_, _, _| false),
            ecn_rule: Box::new(|_, _, e, _| Some(e)),
            jitter: Box::new(|_, _, _| Dur::ZERO),
            rng: SimRng::derive(7, "wire"),
            queue: BTreeMap::new(),
            order: 0,
            steps: 0,
            check: true,
        }
    }

    /// Same config and a fixed-window controller on both sides.
    pub fn simple(
        cfg: TransportConfig,
        cc: Box<dyn l4slab_cc::CongestionControl>,
        app: Box<dyn App>,
        delay: Dur,
    ) -> Self {
        let server_cc = Box::new(cc::Fixed::segments(10, cfg.mss));
        Net::new(cfg.clone(), cc, app, cfg, server_cc, delay)
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = SimRng::derive(seed, "wire");
        self
    }

    pub fn set_drop(&mut self, f: impl FnMut(Dir, &Segment, &mut SimRng) -> bool + 'static) {
        self.drop = Box::new(f);
    }

    /// Rewrite (or drop, with `None`) each segment's IP-ECN field on the wire.
    pub fn set_ecn_rule(
        &mut self,
        f: impl FnMut(Dir, &Segment, Ecn, &mut SimRng) -> Option<Ecn> + 'static,
    ) {
        self.ecn_rule = Box::new(f);
    }

    pub fn set_jitter(&mut self, f: impl FnMut(Dir, &Segment, &mut SimRng) -> Dur + 'static) {
        self.jitter = Box::new(f);
    }

    /// Drop the first transmission of the client's data segments starting at these sequence numbers.
    pub fn drop_data_once(&mut self, seqs: &[u64]) {
        let mut left: Vec<u64> = seqs.to_vec();
        self.set_drop(move |dir, seg, _| {
            if dir == Dir::C2S && seg.len > 0 && !seg.retransmission {
                if let Some(i) = left.iter().position(|&s| s == seg.seq) {
                    left.swap_remove(i);
                    return true;
                }
            }
            false
        });
    }

    /// The side a segment travelling in `d` arrives at, and the cache.
    fn side(&mut self, d: Dir) -> (&mut Side, &mut FastOpenCache) {
        match d {
            Dir::C2S => (&mut self.server, &mut self.fastopen),
            Dir::S2C => (&mut self.client, &mut self.fastopen),
        }
    }

    fn put_on_wire(&mut self, dir: Dir, txs: Vec<Transmit>) {
        for tx in txs {
            let mut dropped = (self.drop)(dir, &tx.seg, &mut self.rng);
            let ecn_out = if dropped {
                None
            } else {
                (self.ecn_rule)(dir, &tx.seg, tx.ecn, &mut self.rng)
            };
            dropped |= ecn_out.is_none();
            self.log.push(Sent {
                t: self.now,
                dir,
                seg: tx.seg,
                wire_len: tx.wire_len,
                dropped,
                ecn: tx.ecn,
                ecn_out,
            });
            let i = idx(dir);
            let depart = match self.rate[i] {
                Some(r) => {
                    let d = self.busy_until[i].max(self.now) + r.tx_time(u64::from(tx.wire_len));
                    self.busy_until[i] = d;
                    d
                }
                None => self.now,
            };
            if dropped {
                continue;
            }
            let arrive = depart + self.delay[i] + (self.jitter)(dir, &tx.seg, &mut self.rng);
            self.order += 1;
            self.queue.insert(
                (arrive, self.order),
                (dir, tx.seg, ecn_out.expect("not dropped")),
            );
        }
    }

    /// The client connects now.
    pub fn connect(&mut self) {
        let now = self.now;
        let txs = self.client.call(now, &mut self.fastopen, |ep, _, ctx| {
            ep.connect(now, ctx);
            None
        });
        self.put_on_wire(Dir::C2S, txs);
    }

    /// When the next thing happens, if anything is pending.
    pub fn next_event(&self) -> Option<Time> {
        [
            self.queue.keys().next().map(|k| k.0),
            self.client.ep.next_timer(),
            self.server.ep.next_timer(),
            self.client.wake,
            self.server.wake,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Perform the next action (a delivery or a timer). Returns false if idle.
    pub fn step(&mut self) -> bool {
        let Some(t) = self.next_event() else {
            return false;
        };
        assert!(t >= self.now, "time went backwards");
        self.now = t;
        self.steps += 1;
        let now = t;
        if let Some((&(at, o), _)) = self.queue.iter().next() {
            if at == now {
                let (dir, seg, ecn) = self.queue.remove(&(at, o)).expect("head");
                let back = match dir {
                    Dir::C2S => Dir::S2C,
                    Dir::S2C => Dir::C2S,
                };
                let (side, cache) = self.side(dir);
                let txs = side.call(now, cache, |ep, _, ctx| {
                    ep.on_segment(now, &seg, ecn, ctx);
                    None
                });
                self.put_on_wire(back, txs);
                self.after_step();
                return true;
            }
        }
        for d in [Dir::S2C, Dir::C2S] {
            // S2C side() is the client, C2S side() the server.
            let out_dir = match d {
                Dir::S2C => Dir::C2S,
                Dir::C2S => Dir::S2C,
            };
            let (side, cache) = self.side(d);
            if side.ep.next_timer().is_some_and(|x| x <= now) {
                let txs = side.call(now, cache, |ep, _, ctx| {
                    ep.on_timer(now, ctx);
                    None
                });
                self.put_on_wire(out_dir, txs);
                self.after_step();
                return true;
            }
            if side.wake.is_some_and(|x| x <= now) {
                side.wake = None;
                let txs = side.call(now, cache, |ep, app, ctx| {
                    let mut io = l4slab_tcp::EndpointIo {
                        ep,
                        now,
                        ctx,
                        wake: None,
                    };
                    app.on_timer(now, &mut io);
                    io.wake
                });
                self.put_on_wire(out_dir, txs);
                self.after_step();
                return true;
            }
        }
        unreachable!("next_event promised something at {now}")
    }

    fn after_step(&mut self) {
        if self.check {
            self.client.ep.check_invariants();
            self.server.ep.check_invariants();
        }
    }

    /// Run until `t` (inclusive) or until idle.
    pub fn run_until(&mut self, t: Time) {
        while self.next_event().is_some_and(|n| n <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Run until `done` holds, at most until `limit`; returns whether it held.
    pub fn run_while(&mut self, limit: Time, mut done: impl FnMut(&Net) -> bool) -> bool {
        while !done(self) {
            match self.next_event() {
                Some(n) if n <= limit => {
                    self.step();
                }
                _ => return done(self),
            }
        }
        true
    }

    /// Segments sent in `dir` (dropped ones included).
    pub fn sent(&self, dir: Dir) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(move |s| s.dir == dir)
    }

    /// Data segments the client sent, as `(time, seq, retransmission)`.
    pub fn client_data(&self) -> Vec<(Time, u64, bool)> {
        self.sent(Dir::C2S)
            .filter(|s| s.is_data())
            .map(|s| (s.t, s.seg.seq, s.seg.retransmission))
            .collect()
    }

    /// Pure ACKs the server sent (`(time, ack, sack blocks)`).
    pub fn server_acks(&self) -> Vec<AckSeen> {
        self.sent(Dir::S2C)
            .filter(|s| s.seg.len == 0 && !s.seg.flags.intersects(Flags::SYN | Flags::FIN))
            .map(|s| {
                (
                    s.t,
                    s.seg.ack,
                    s.seg.sacks().iter().map(|b| (b.start, b.end)).collect(),
                )
            })
            .collect()
    }
}

pub fn ms(v: u64) -> Time {
    Time::from_millis(v)
}

pub fn dms(v: u64) -> Dur {
    Dur::from_millis(v)
}

/// Sequence number of the `i`-th (0-based) full data segment: data starts at 1.
pub fn seg_seq(i: u64, mss: u32) -> u64 {
    1 + i * u64::from(mss)
}

/// Test app: writes `bytes` at each scheduled time (the first entries due at
/// connection time are written at once), then optionally closes.
#[derive(Debug)]
pub struct Writes {
    plan: Vec<(Time, u64)>,
    next: usize,
    pending: u64,
    close_after: bool,
    closed: bool,
}

impl Writes {
    pub fn new(plan: &[(Time, u64)], close_after: bool) -> Self {
        Writes {
            plan: plan.to_vec(),
            next: 0,
            pending: 0,
            close_after,
            closed: false,
        }
    }

    fn run(&mut self, now: Time, io: &mut dyn l4slab_tcp::AppIo) {
        while self.next < self.plan.len() && self.plan[self.next].0 <= now {
            self.pending += self.plan[self.next].1;
            self.next += 1;
        }
        while self.pending > 0 {
            let n = io.write(self.pending);
            if n == 0 {
                break;
            }
            self.pending -= n;
        }
        if self.next < self.plan.len() {
            io.wake_at(self.plan[self.next].0);
        } else if self.pending == 0 && self.close_after && !self.closed {
            self.closed = true;
            io.finish();
        }
    }
}

impl App for Writes {
    fn kind(&self) -> &'static str {
        "writes"
    }
    fn start(&mut self, now: Time, io: &mut dyn l4slab_tcp::AppIo) {
        self.run(now, io);
    }
    fn on_writable(&mut self, now: Time, io: &mut dyn l4slab_tcp::AppIo) {
        self.run(now, io);
    }
    fn on_timer(&mut self, now: Time, io: &mut dyn l4slab_tcp::AppIo) {
        self.run(now, io);
    }
}

impl Net {
    /// Close the server's sending direction now.
    pub fn server_close(&mut self) {
        let now = self.now;
        let txs = self.server.call(now, &mut self.fastopen, |ep, _, ctx| {
            ep.close(now, ctx);
            None
        });
        self.put_on_wire(Dir::S2C, txs);
    }
}

impl Net {
    /// Replace the server's application (a [`Sink`] by default).
    pub fn set_server_app(&mut self, app: Box<dyn App>) {
        self.server.app = app;
    }
}
