//! A multi-homed client's flows: which of its paths carries each packet,
//! and connection racing (docs/models/racing.md).
//!
//! A flow whose client host has `paths` keeps a [`Race`]: its first
//! attempt (the flow's own endpoints, `FlowState::eps`) goes out on the
//! preferred path. With racing on (RFC 8305 §5, Connection Attempt Delay:
//! the next attempt starts after the delay and the earlier ones go on in
//! parallel): at `start + delay` ([`Ev::RaceStart`]), if the client has not
//! completed its handshake, a second pair of endpoints opens a connection
//! on the other path, and both go on. RFC 8305 §6: once one attempt
//! succeeds (generally when its TCP handshake completes), the others are
//! cancelled. The first client to complete its handshake wins:
//! its endpoints become the flow's, the app is told `Connected` once, and
//! the other attempt's endpoints are dropped at once (closed without a
//! RST: Linux `tcp_close` sends nothing from SYN-SENT, `tcp_close_state`);
//! its packets still in the network are discarded where they arrive.
//!
//! A QUIC flow's handshake is inside its app (both ends of its
//! connection): its second attempt is a second copy of the app, swapped in
//! for its calls, and the first app whose client connection is established
//! (RFC 9001 §4.1.1: the handshake is complete) wins.
//!
//! Each packet of such a flow is tagged with its path (`Sim::way_of`,
//! by the packet's store handle), which routes it through that path's
//! links both ways and to the attempt it belongs to. The bytes sent into
//! each path, the loser's included, are counted per direction.
//!
//! Better route: a flow whose handshake was won on a path other than the
//! preferred one is told of a better route when the preferred path is
//! usable again: the first instant from its connection on outside every
//! outage window of the preferred path (Apple, `URLSession(_:betterRouteDiscoveredFor:)`:
//! "called when the URL loading system determines that a better route to
//! the endpoint host is available. For example, this method may be called
//! when a Wi-Fi interface becomes available."). The app acts on it as Apple
//! advises first ("consider completing pending work"): it finishes on the
//! path it has; its later connections start on the preferred path anyway.
//! The signal's time and the bytes the flow still sent over its path after
//! it (what reconnecting could have saved) are reported.

use l4slab_core::{Dur, Time};
use l4slab_scenario::Scenario;
use l4slab_tcp::{AppEvent, ConnState, Endpoint, EndpointCtx};

use crate::engine::{EpState, Ev, Sim, CLIENT, DOWN, SERVER, UP};

/// A call of an app's callback (`on_connected`, `on_timer`, `on_bytes`).
type AppCall<'a> = dyn FnMut(&mut dyn l4slab_app::FlowApp, Time, l4slab_tcp::Role, &mut dyn l4slab_app::FlowIo)
    + 'a;

/// A multi-homed client's flow: its paths, the attempts, what each path carried.
pub struct Race {
    /// Per path (the host's `paths` order), per direction: the access
    /// queues a packet passes (`[before the bottleneck, after it]`).
    pub ways: Vec<[[Option<usize>; 2]; 2]>,
    /// The Connection Attempt Delay; `None`: no racing.
    pub delay: Option<Dur>,
    /// The path of the flow's own endpoints (`FlowState::eps`).
    pub main: usize,
    /// The second attempt (client, server) on path `other_way`, while it runs.
    pub other: Option<[EpState; 2]>,
    pub other_way: usize,
    /// When the flow started, the second attempt started, the client's
    /// handshake completed, the receiving app got its first byte.
    pub started: Option<Time>,
    pub fired: Option<Time>,
    pub connected: Option<Time>,
    pub first_byte: Option<Time>,
    /// The flow runs over TCP or over QUIC (its handshake decides the path).
    pub tcp: bool,
    pub quic: bool,
    /// A QUIC flow's second attempt: a second app (both ends of its own
    /// connection), and its wake-ups per side, while it runs.
    pub other_app: Option<Box<dyn l4slab_app::FlowApp>>,
    pub other_app_timer: [Option<Time>; 2],
    /// Attempts dropped unfinished.
    pub abandoned: u32,
    /// Per path, per direction (`[DOWN, UP]`): bytes sent into it.
    pub bytes: Vec<[u64; 2]>,
    /// Per path, per direction: packets sent into it.
    pub packets: Vec<[u64; 2]>,
    /// The better-route signal (module doc), for a flow won on a path
    /// other than the preferred one, and its path's bytes (both
    /// directions) when it came.
    pub better_route: Option<Time>,
    pub bytes_at_better_route: Option<u64>,
    /// The preferred path's outage windows (sorted, not overlapping).
    pub preferred_outages: Vec<(Time, Time)>,
}

impl Race {
    /// Flow `f` of `scn` as a race, if its client is multi-homed.
    pub fn of(
        scn: &Scenario,
        f: usize,
        access: &l4slab_scenario::build::AccessQueues,
        tcp: bool,
        quic: bool,
    ) -> Option<Box<Race>> {
        let flow = &scn.flows[f];
        let host = &scn.hosts[flow.client];
        if host.paths.is_empty() {
            return None;
        }
        let n = host.paths.len();
        Some(Box::new(Race {
            ways: (0..n)
                .map(|w| [DOWN, UP].map(|dir| access.path_via(flow, dir, w)))
                .collect(),
            // Racing is in the connection setup (TCP's or QUIC's; not for a
            // TCP flow with Fast Open, told `Connected` before its handshake).
            delay: host
                .racing
                .filter(|_| quic || tcp && !flow.transport.fastopen),
            main: 0,
            other: None,
            other_way: 1,
            started: None,
            fired: None,
            connected: None,
            first_byte: None,
            tcp,
            quic,
            other_app: None,
            other_app_timer: [None; 2],
            abandoned: 0,
            bytes: vec![[0; 2]; n],
            packets: vec![[0; 2]; n],
            better_route: None,
            bytes_at_better_route: None,
            preferred_outages: host.paths[0]
                .outages
                .iter()
                .map(|o| (o.start, o.end))
                .collect(),
        }))
    }

    /// summary.json's `multipath` entry of the flow (docs/results.md):
    /// times from the flow's start, in seconds.
    pub fn json(
        &self,
        host: &l4slab_scenario::Host,
        completion: Option<Time>,
    ) -> serde_json::Value {
        let since = |t: Option<Time>| {
            t.zip(self.started)
                .map(|(t, s)| crate::recorder::round6(t.saturating_since(s).as_secs_f64()))
        };
        let paths: serde_json::Map<_, _> = host
            .paths
            .iter()
            .enumerate()
            .map(|(w, p)| {
                let [down, up] = self.bytes[w];
                let [pd, pu] = self.packets[w];
                let v = serde_json::json!({
                    "bytes_down": down,
                    "bytes_up": up,
                    "bytes": down + up,
                    "packets_down": pd,
                    "packets_up": pu,
                });
                (p.name.clone(), v)
            })
            .collect();
        serde_json::json!({
            // A flow over TCP or QUIC has a path once its handshake
            // completed; a datagram app's (ping, cbr) is the preferred one.
            "path": (self.connected.is_some() || !(self.tcp || self.quic)).then(|| host.paths[self.main].name.clone()),
            "racing": self.delay.is_some(),
            "racing_delay_s": self.delay.map(|d| crate::recorder::round6(d.as_secs_f64())),
            "racing_fired": self.fired.is_some(),
            "second_attempt_s": since(self.fired),
            "connected_s": since(self.connected),
            "time_to_first_byte_s": since(self.first_byte),
            "time_to_completion_s": since(completion),
            "attempts_abandoned": self.abandoned,
            // The signal within the run (its bytes were noted then).
            "better_route_s": self.bytes_at_better_route.and(since(self.better_route)),
            "bytes_after_better_route": self.bytes_at_better_route.map(|at| {
                let [down, up] = self.bytes[self.main];
                (down + up).saturating_sub(at)
            }),
            "paths": paths,
        })
    }

    /// The first instant from `t` on at which the preferred path is
    /// outside every outage window (windows sorted and disjoint).
    fn preferred_usable_from(&self, t: Time) -> Time {
        let mut at = t;
        for &(start, end) in &self.preferred_outages {
            if start <= at && at < end {
                at = end;
            }
        }
        at
    }

    /// The flow's connection was won on path `main` at `now`: if that is
    /// not the preferred path, when the better-route signal comes.
    fn better_route_at(&self, now: Time) -> Option<Time> {
        (self.main != 0).then(|| self.preferred_usable_from(now))
    }

    /// Whether the client's handshake has completed on some path.
    fn decided(&self) -> bool {
        self.connected.is_some()
    }
}

impl Sim<'_> {
    /// The path the packet with store handle `handle` travels (a
    /// multi-homed client's flow's packet; tagged by [`Sim::send_on_way`]).
    pub(crate) fn way_of(&self, handle: u32) -> usize {
        usize::from(self.way_tags[handle as usize])
    }

    /// Tag the packet with handle `handle` of flow `f` with the path it is
    /// sent on and count it there; returns its access queues in `dir`.
    pub(crate) fn send_on_way(
        &mut self,
        f: usize,
        handle: u32,
        dir: usize,
        len: u32,
    ) -> Option<[Option<usize>; 2]> {
        let race = self.flows[f].race.as_mut()?;
        let way = if self.other_sending {
            race.other_way
        } else {
            race.main
        };
        race.bytes[way][dir] += u64::from(len);
        race.packets[way][dir] += 1;
        let h = handle as usize;
        if self.way_tags.len() <= h {
            self.way_tags.resize(h + 1, 0);
        }
        self.way_tags[h] = way as u8;
        Some(race.ways[way][dir])
    }

    /// The flow started: note when, and put its racing deadline on the calendar.
    pub(crate) fn race_start(&mut self, now: Time, f: usize) {
        if let Some(race) = self.flows[f].race.as_mut() {
            race.started = Some(now);
            if let Some(d) = race.delay {
                self.q
                    .schedule_flow(now + d, Ev::RaceStart { flow: f as u32 });
            }
        }
    }

    /// The Connection Attempt Delay passed: start the second attempt unless
    /// the first completed its handshake.
    pub(crate) fn race_fire(&mut self, now: Time, f: usize) {
        let fl = &mut self.flows[f];
        let Some(race) = fl.race.as_mut() else {
            return;
        };
        if race.decided() {
            // The same event, scheduled by `race_won_elsewhere`: the
            // better-route signal (module doc).
            if race.better_route == Some(now) && race.bytes_at_better_route.is_none() {
                let [down, up] = race.bytes[race.main];
                race.bytes_at_better_route = Some(down + up);
            }
            return;
        }
        if race.quic {
            if race.decided() || fl.app.client_established() {
                return;
            }
            race.fired = Some(now);
            race.other_way = 1 - race.main;
            race.other_app = Some(l4slab_scenario::flow_app::flow_app(
                &self.scn.flows[f],
                self.seed,
            ));
            race.other_app_timer = [None; 2];
            // Both ends start at once, as a datagram app's do at its start.
            for side in [CLIENT, SERVER] {
                self.with_other_app(now, f, side, &mut |app, now, r, io| {
                    app.on_connected(now, r, io)
                });
            }
            return;
        }
        if race.decided() || fl.eps[CLIENT].ep.state() != ConnState::SynSent {
            return;
        }
        race.fired = Some(now);
        race.other_way = 1 - race.main;
        let [client, server] = crate::setup::endpoints(self.scn, f);
        race.other = Some([client, server].map(|ep| EpState {
            ep,
            timer_armed: None,
        }));
        self.with_other_ep(now, f, CLIENT, |ep, now, ctx| ep.connect(now, ctx));
    }

    /// A packet of the second attempt (path `way`) reached `side`: its
    /// endpoint, if that attempt still runs. Returns false if the packet
    /// belongs to no running attempt (it is discarded).
    pub(crate) fn race_deliver_other(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        way: usize,
        seg: &l4slab_tcp::Segment,
        ecn: l4slab_core::Ecn,
    ) -> bool {
        let runs = self.flows[f]
            .race
            .as_ref()
            .is_some_and(|r| r.other.is_some() && r.other_way == way);
        if runs {
            self.with_other_ep(now, f, side, |ep, now, ctx| {
                ep.on_segment(now, seg, ecn, ctx)
            });
        }
        runs
    }

    /// A timer of the second attempt's endpoint on `side`, armed for `at`.
    pub(crate) fn race_timer(&mut self, now: Time, f: usize, side: usize, at: Time) {
        let Some(other) = self.flows[f].race.as_mut().and_then(|r| r.other.as_mut()) else {
            return;
        };
        let st = &mut other[side];
        if st.timer_armed != Some(at) {
            return;
        }
        st.timer_armed = None;
        if st.ep.next_timer().is_some_and(|t| t <= now) {
            self.with_other_ep(now, f, side, |ep, now, ctx| ep.on_timer(now, ctx));
        } else {
            self.arm_other_timer(now, f, side);
        }
    }

    /// The flow's own client completed its handshake first: it wins, the
    /// second attempt (if any) is dropped.
    pub(crate) fn race_main_connected(&mut self, now: Time, f: usize) {
        if let Some(race) = self.flows[f].race.as_mut() {
            if !race.decided() {
                race.connected = Some(now);
                if race.other.take().is_some() {
                    race.abandoned += 1;
                }
            }
        }
    }

    /// After a callback of a QUIC flow's own app: if its client completed
    /// the handshake first, it wins and the second attempt is dropped.
    pub(crate) fn race_check_app(&mut self, now: Time, f: usize) {
        if self.other_sending {
            return; // the second attempt's app, swapped in (`with_other_app`)
        }
        let fl = &mut self.flows[f];
        if let Some(race) = fl.race.as_mut() {
            if race.quic && !race.decided() && fl.app.client_established() {
                race.connected = Some(now);
                if race.other_app.take().is_some() {
                    race.abandoned += 1;
                }
            }
        }
    }

    /// A QUIC flow's second attempt: a timer of its app on `side` fired at
    /// `at` (the flow's `AppTimer`; returns false if it was not this app's).
    pub(crate) fn race_app_timer(&mut self, now: Time, f: usize, side: usize, at: Time) -> bool {
        let Some(race) = self.flows[f].race.as_mut() else {
            return false;
        };
        if race.other_app.is_none() || race.other_app_timer[side] != Some(at) {
            return false;
        }
        race.other_app_timer[side] = None;
        self.with_other_app(now, f, side, &mut |app, now, r, io| {
            app.on_timer(now, r, io)
        });
        true
    }

    /// A datagram of a QUIC flow's second attempt (path `way`) reached `side`.
    pub(crate) fn race_deliver_other_bytes(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        way: usize,
        data: &[u8],
        ecn: l4slab_core::Ecn,
    ) {
        let runs = self.flows[f]
            .race
            .as_ref()
            .is_some_and(|r| r.other_app.is_some() && r.other_way == way);
        if runs {
            self.with_other_app(now, f, side, &mut |app, now, r, io| {
                app.on_bytes(now, r, data, ecn, io)
            });
        }
    }

    /// Run `cb` on a QUIC flow's second attempt's app: it is swapped in as
    /// the flow's app (with its wake-ups) for the call, so the engine's one
    /// app callback runs it and sends what it queued on its path; then, if
    /// its client completed the handshake first, it stays: it wins.
    fn with_other_app(&mut self, now: Time, f: usize, side: usize, cb: &mut AppCall<'_>) {
        let fl = &mut self.flows[f];
        let Some(race) = fl.race.as_mut() else {
            return;
        };
        let Some(mut app) = race.other_app.take() else {
            return;
        };
        std::mem::swap(&mut fl.app, &mut app);
        std::mem::swap(&mut fl.app_timer, &mut race.other_app_timer);
        self.other_sending = true;
        self.app_callback(now, f, side, |a, now, r, io| cb(a, now, r, io));
        self.other_sending = false;
        let fl = &mut self.flows[f];
        let race = fl.race.as_mut().expect("a race");
        if fl.app.client_established() && !race.decided() {
            // The second attempt wins: its app stays, the first's is dropped.
            race.main = race.other_way;
            race.connected = Some(now);
            race.abandoned += 1;
            self.race_won_elsewhere(now, f);
            return;
        }
        std::mem::swap(&mut fl.app, &mut app);
        std::mem::swap(&mut fl.app_timer, &mut race.other_app_timer);
        race.other_app = Some(app);
    }

    /// The receiving side's app got bytes.
    pub(crate) fn race_delivered(&mut self, now: Time, f: usize) {
        if let Some(race) = self.flows[f].race.as_mut() {
            race.first_byte.get_or_insert(now);
        }
    }

    /// Run `op` on the second attempt's endpoint on `side`, send what it
    /// queued on its path, and if its client completed the handshake, make
    /// it the flow's connection.
    fn with_other_ep(
        &mut self,
        now: Time,
        f: usize,
        side: usize,
        op: impl FnOnce(&mut Endpoint, Time, &mut EndpointCtx<'_>),
    ) {
        let fl = &mut self.flows[f];
        let Some(other) = fl.race.as_mut().and_then(|r| r.other.as_mut()) else {
            return;
        };
        let mut events = std::mem::take(&mut self.race_events);
        {
            let mut ctx = EndpointCtx {
                rng: &mut fl.rng,
                tracer: &mut self.rec,
                out: &mut self.out,
                events: &mut events,
                fastopen: None,
            };
            op(&mut other[side].ep, now, &mut ctx);
        }
        self.other_sending = true;
        for i in 0..self.out.len() {
            let tx = self.out[i];
            self.transmit_segment(now, f, side, tx);
        }
        self.out.clear();
        self.other_sending = false;
        // Before it wins the app hears nothing from this attempt: only its
        // client's `Connected` matters.
        let won = side == CLIENT && events.contains(&AppEvent::Connected);
        events.clear();
        self.race_events = events;
        if won {
            self.race_other_won(now, f);
        } else {
            self.arm_other_timer(now, f, side);
        }
    }

    /// The second attempt's client completed its handshake first: its
    /// endpoints become the flow's, the first attempt's are dropped, and the
    /// app is told `Connected`.
    fn race_other_won(&mut self, now: Time, f: usize) {
        let fl = &mut self.flows[f];
        let race = fl.race.as_mut().expect("a race");
        let mut other = race.other.take().expect("the second attempt runs");
        std::mem::swap(&mut fl.eps, &mut other);
        race.main = race.other_way;
        race.connected = Some(now);
        race.abandoned += 1;
        self.race_won_elsewhere(now, f);
        // The winner's timers were on the calendar as the second attempt's.
        for side in [CLIENT, SERVER] {
            self.flows[f].eps[side].timer_armed = None;
            self.arm_ep_timer(now, f, side);
        }
        self.app_events.push(AppEvent::Connected);
        self.flush(now, f, CLIENT);
    }

    /// The second attempt won at `now`: put the better-route signal on the
    /// calendar (as an [`Ev::RaceStart`] of the decided flow: `race_fire`).
    fn race_won_elsewhere(&mut self, now: Time, f: usize) {
        let Some(race) = self.flows[f].race.as_mut() else {
            return;
        };
        race.better_route = race.better_route_at(now);
        if let Some(at) = race.better_route {
            self.q.schedule_flow(at, Ev::RaceStart { flow: f as u32 });
        }
    }

    fn arm_other_timer(&mut self, now: Time, f: usize, side: usize) {
        let Some(other) = self.flows[f].race.as_mut().and_then(|r| r.other.as_mut()) else {
            return;
        };
        other[side].arm_timer(&mut self.q, now, |at| Ev::RaceTimer {
            flow: f as u32,
            side: side as u8,
            at,
        });
    }
}
