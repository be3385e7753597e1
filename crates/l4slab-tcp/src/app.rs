//! Applications: traffic sources and sinks sitting on an endpoint.
//!
//! An [`App`] never touches the endpoint directly: it acts through an
//! [`AppIo`] (write, finish, wake me at), and is driven by the endpoint's
//! [`AppEvent`]s via [`dispatch`] — [`pump`] does the whole loop for one
//! endpoint. The simulator records completion times itself (from
//! [`AppEvent::PeerFinished`] on the receiving side).

use core::fmt;

use l4slab_core::{Dur, Rate, Time};

use crate::endpoint::{AppEvent, Endpoint, EndpointCtx};

/// What a socket tells its application (a `TCP_INFO` subset plus
/// `SIOCOUTQNSD`): what rate-adaptive apps base their decisions on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SocketInfo {
    /// Written but not yet sent (Linux `SIOCOUTQNSD`).
    pub unsent_bytes: u64,
    /// Sent and not yet acknowledged.
    pub in_flight_bytes: u64,
    /// Smoothed RTT (`tcpi_rtt`), once measured.
    pub srtt: Option<Dur>,
    /// Minimum RTT seen (`tcpi_min_rtt`).
    pub min_rtt: Option<Dur>,
    /// The latest delivery-rate sample (`tcpi_delivery_rate`).
    pub delivery_rate: Option<Rate>,
    /// Whether that sample was application-limited (`tcpi_delivery_rate_app_limited`).
    pub delivery_rate_app_limited: bool,
    /// Congestion window in bytes (`tcpi_snd_cwnd` × mss).
    pub cwnd_bytes: u64,
    /// The write side accepts data (send-buffer room, below `notsent_lowat`).
    pub writable: bool,
}

/// What an application may do to its endpoint.
pub trait AppIo {
    /// Offer `bytes` to the send buffer; returns how many were accepted.
    fn write(&mut self, bytes: u64) -> u64;
    /// Ask to be called back via [`App::on_timer`] at `at`.
    fn wake_at(&mut self, at: Time);
    /// Close the sending direction after the queued data (FIN).
    fn finish(&mut self);
    /// The socket's state as `getsockopt(TCP_INFO)` would report it.
    fn info(&self) -> SocketInfo {
        SocketInfo::default()
    }
}

pub trait App: fmt::Debug + Send {
    /// Stable identifier, identical to the scenario-file `app.kind`.
    fn kind(&self) -> &'static str;
    /// The connection is established.
    fn start(&mut self, now: Time, io: &mut dyn AppIo);
    /// The send buffer has room again.
    fn on_writable(&mut self, now: Time, io: &mut dyn AppIo) {
        let _ = (now, io);
    }
    /// `bytes` more were delivered in order to this side.
    fn on_receive(&mut self, now: Time, bytes: u64, io: &mut dyn AppIo) {
        let _ = (now, bytes, io);
    }
    /// The peer finished sending; everything it sent was delivered.
    fn on_peer_finished(&mut self, now: Time, io: &mut dyn AppIo) {
        let _ = (now, io);
    }
    /// A wake-up requested with [`AppIo::wake_at`].
    fn on_timer(&mut self, now: Time, io: &mut dyn AppIo) {
        let _ = (now, io);
    }
}

/// Greedy sender that never finishes: keeps the send buffer full.
#[derive(Debug, Default)]
pub struct Bulk {
    written: u64,
}

impl Bulk {
    pub fn new() -> Self {
        Bulk::default()
    }

    /// Bytes accepted by the endpoint so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

impl Bulk {
    /// Write until the endpoint takes nothing more: a write may send data
    /// and so make room again (like a non-blocking writer that loops until
    /// `EAGAIN`, which edge-triggered readiness requires).
    fn fill(&mut self, io: &mut dyn AppIo) {
        loop {
            let n = io.write(u64::MAX);
            if n == 0 {
                break;
            }
            self.written += n;
        }
    }
}

impl App for Bulk {
    fn kind(&self) -> &'static str {
        "bulk"
    }
    fn start(&mut self, _now: Time, io: &mut dyn AppIo) {
        self.fill(io);
    }
    fn on_writable(&mut self, _now: Time, io: &mut dyn AppIo) {
        self.fill(io);
    }
}

/// Writes `size` bytes as fast as the send buffer takes them, then closes.
#[derive(Debug)]
pub struct File {
    size: u64,
    written: u64,
    finished: bool,
}

impl File {
    pub fn new(size: u64) -> Self {
        File {
            size,
            written: 0,
            finished: false,
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// All bytes were accepted and the FIN was requested.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Write until done or the endpoint takes nothing more (see [`Bulk`]).
    fn fill(&mut self, io: &mut dyn AppIo) {
        while !self.finished {
            let n = io.write(self.size - self.written);
            self.written += n;
            if self.written == self.size {
                self.finished = true;
                io.finish();
            } else if n == 0 {
                break;
            }
        }
    }
}

impl App for File {
    fn kind(&self) -> &'static str {
        "file"
    }
    fn start(&mut self, _now: Time, io: &mut dyn AppIo) {
        self.fill(io);
    }
    fn on_writable(&mut self, _now: Time, io: &mut dyn AppIo) {
        self.fill(io);
    }
}

/// Receiver that only counts (the usual peer of [`Bulk`] and [`File`]).
#[derive(Debug, Default)]
pub struct Sink {
    received: u64,
    finished_at: Option<Time>,
}

impl Sink {
    pub fn new() -> Self {
        Sink::default()
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    /// When the peer's FIN arrived (all its data delivered).
    pub fn finished_at(&self) -> Option<Time> {
        self.finished_at
    }
}

impl App for Sink {
    fn kind(&self) -> &'static str {
        "sink"
    }
    fn start(&mut self, _now: Time, _io: &mut dyn AppIo) {}
    fn on_receive(&mut self, _now: Time, bytes: u64, _io: &mut dyn AppIo) {
        self.received += bytes;
    }
    fn on_peer_finished(&mut self, now: Time, _io: &mut dyn AppIo) {
        self.finished_at.get_or_insert(now);
    }
}

/// [`AppIo`] on an endpoint at a fixed `now`.
pub struct EndpointIo<'e, 'c> {
    pub ep: &'e mut Endpoint,
    pub now: Time,
    pub ctx: &'e mut EndpointCtx<'c>,
    /// Earliest wake-up requested through this handle.
    pub wake: Option<Time>,
}

impl AppIo for EndpointIo<'_, '_> {
    fn write(&mut self, bytes: u64) -> u64 {
        self.ep.write(self.now, bytes, self.ctx)
    }
    fn wake_at(&mut self, at: Time) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
    fn finish(&mut self) {
        self.ep.close(self.now, self.ctx);
    }
    fn info(&self) -> SocketInfo {
        socket_info(self.ep)
    }
}

/// [`SocketInfo`] of an endpoint.
pub fn socket_info(ep: &Endpoint) -> SocketInfo {
    let rs = ep.last_rate_sample();
    SocketInfo {
        unsent_bytes: ep.unsent_bytes(),
        in_flight_bytes: ep.bytes_in_flight(),
        srtt: ep.srtt(),
        min_rtt: ep.min_rtt(),
        delivery_rate: rs.and_then(|r| r.delivery_rate),
        delivery_rate_app_limited: rs.is_some_and(|r| r.is_app_limited),
        cwnd_bytes: ep.cc_metrics().cwnd,
        writable: ep.is_writable(),
    }
}

/// Hand one endpoint event to the matching [`App`] callback.
pub fn dispatch(app: &mut dyn App, ev: AppEvent, now: Time, io: &mut dyn AppIo) {
    match ev {
        AppEvent::Connected => app.start(now, io),
        AppEvent::Writable => app.on_writable(now, io),
        AppEvent::Delivered { bytes } => app.on_receive(now, bytes, io),
        AppEvent::PeerFinished => app.on_peer_finished(now, io),
    }
}

/// Deliver every event pending in `ctx.events` to `app` — including events
/// its own calls cause — until none is left. `observe` sees each event first
/// (e.g. to record deliveries). `scratch` is reused (no allocation once it has
/// grown). Returns the earliest wake-up the app asked for.
pub fn pump(
    app: &mut dyn App,
    ep: &mut Endpoint,
    now: Time,
    ctx: &mut EndpointCtx<'_>,
    scratch: &mut Vec<AppEvent>,
    observe: &mut dyn FnMut(&AppEvent),
) -> Option<Time> {
    let mut wake: Option<Time> = None;
    scratch.clear();
    while !ctx.events.is_empty() {
        core::mem::swap(&mut *ctx.events, scratch);
        for ev in scratch.drain(..) {
            observe(&ev);
            let mut io = EndpointIo {
                ep: &mut *ep,
                now,
                ctx: &mut *ctx,
                wake: None,
            };
            dispatch(app, ev, now, &mut io);
            if let Some(w) = io.wake {
                wake = Some(wake.map_or(w, |x: Time| x.min(w)));
            }
        }
    }
    wake
}
