//! Applications: both ends of one flow, and what their users would measure.
//!
//! A [`FlowApp`] is one conversation — a file download, a video call, a ping —
//! and sees events from both ends of its flow: each callback names the
//! `side` ([`Role::Client`] or [`Role::Server`]) it happened on, and the
//! [`FlowIo`] it gets acts on that side's socket. Seeing both ends is what
//! lets an app measure end-to-end quality (a frame's latency from capture at
//! the sender to display at the receiver) without carrying headers in the
//! simulated byte stream.
//!
//! Apps never touch an endpoint: they write to a socket, ask for a wake-up,
//! read [`SocketInfo`] (`TCP_INFO`), and send [`Datagram`]s (UDP) outside the
//! connection. The backend (the simulator's engine) delivers the events.
//!
//! * [`OneWay`] adapts a one-ended [`l4slab_tcp::App`] ([`Bulk`],
//!   [`File`]) that runs on the sending side.
//! * [`ping::Ping`]: periodic UDP echo probes.
//! * [`cbr::Cbr`]: an unresponsive constant-bit-rate UDP stream.
//! * [`screen_share::ScreenShare`]: frames written whenever the socket is writable.
//! * [`web::Web`]: objects fetched by request and response.
//! * [`web_browse::WebBrowse`]: a person browsing, page after page
//!   ([`web_browse_model`]: the pages they ask for), over one multiplexed
//!   connection, or over parallel HTTP/1.1 connections ([`web_browse_h1`]).
//! * [`cloud_gaming::CloudGaming`]: rate-adapted frames, server to player.
//! * [`video_call::VideoCall`]: rate-adapted frames both ways.
//! * [`video_stream::VideoStream`]: an adaptive-bitrate video player
//!   (segments by request and response, ABR rules in [`abr`]).
//! * [`download::Part`]: one connection's part of a download split over
//!   parallel connections (the scenario makes the parts).
//! * [`quic`]: bulk and file over the QUIC-style transport, and what runs
//!   other apps there ([`web_quic`]: a stream per object;
//!   [`quic_stream_app`]: a TCP app's byte stream on one stream each way).
//! * [`frames`]: frame bookkeeping shared by the frame-based apps;
//!   [`rate_control`]: the bitrate adaptation cloud gaming and video calls share;
//!   [`adaptive`]: their config (the same keys, each kind's defaults);
//!   [`framed`]: how a frame app's frames travel (TCP, or RTP: [`rtp`]).
//! * [`registry`]: the app kinds by scenario name, each config with its
//!   declared parameters ([`registry::AppSpec`]), and how each is built.

use core::fmt;

use serde_json::Value;

use l4slab_core::{Dur, Ecn, Time};
pub use l4slab_tcp::{AppIo, Bulk, File, Role, SocketInfo};
pub use registry::{AppKind, AppSpec, BuildContext, APP_NAMES};

pub mod abr;
pub mod adaptive;
pub mod cbr;
pub mod cloud_gaming;
pub mod download;
pub mod framed;
pub mod frames;
pub mod oneway;
pub mod ping;
pub mod quic;
pub mod quic_stream_app;
pub mod rate_control;
pub mod registry;
pub mod rtp;
pub mod screen_share;
#[cfg(test)]
mod stray_tests;
#[cfg(test)]
pub(crate) mod testing;
pub mod video_call;
pub mod video_stream;
pub mod web;
pub mod web_browse;
pub mod web_browse_h1;
pub mod web_browse_model;
pub mod web_quic;

/// A UDP datagram an app sends outside its connection. The payload is not
/// simulated; `tag` is what the app needs to recognise it (e.g. a probe's
/// sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// Payload bytes.
    pub payload: u32,
    /// The IP-ECN field it is sent with.
    pub ecn: Ecn,
    pub tag: u64,
}

impl Datagram {
    /// IPv4 (20 B) + UDP (8 B) headers.
    pub const HEADER_BYTES: u32 = 28;

    /// Size on the wire, as queues and links see it.
    pub fn wire_len(&self) -> u32 {
        self.payload + Self::HEADER_BYTES
    }
}

/// Datagrams a flow's receivers ignored because nothing the flow sent could
/// be them: a backend that reads real sockets (the emulator) can be sent
/// anything. Never panics, never acts on them; counted here, reported in
/// the flow's summary (`datagrams_ignored`). The simulator delivers only
/// what the app sent, so there they stay zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DatagramsIgnored {
    /// A tag the app never sent, or a kind the receiving side never gets
    /// (an echo at the echo server, media at the media's sender).
    pub unknown: u64,
    /// A second copy of one the app already took.
    pub duplicate: u64,
    /// Shorter than the backend's framing (the emulator's 8-byte tag).
    pub truncated: u64,
    /// From an address that is not the flow's other end.
    pub foreign: u64,
}

impl core::ops::Add for DatagramsIgnored {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        DatagramsIgnored {
            unknown: self.unknown + o.unknown,
            duplicate: self.duplicate + o.duplicate,
            truncated: self.truncated + o.truncated,
            foreign: self.foreign + o.foreign,
        }
    }
}

impl DatagramsIgnored {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.unknown + self.duplicate + self.truncated + self.foreign
    }
}

/// What an app may do on one side of its flow: the socket ([`AppIo`]) and
/// datagrams.
pub trait FlowIo: AppIo {
    /// Send a datagram from this side to the other.
    fn send_datagram(&mut self, dg: Datagram);
    /// Send a UDP datagram whose payload is `data` (bytes the backend
    /// carries to the other side's [`FlowApp::on_bytes`]), with IP-ECN `ecn`.
    fn send_bytes(&mut self, data: &[u8], ecn: Ecn) {
        let _ = (data, ecn);
        unimplemented!("this backend does not carry byte datagrams")
    }
}

/// Receives the values an app reports for one sampling interval.
pub type SampleSink<'a> = dyn FnMut(&'static str, f64) + 'a;

/// Both ends of one flow's application.
pub trait FlowApp: fmt::Debug + Send {
    /// Stable identifier, identical to the scenario-file `app.kind`.
    fn kind(&self) -> &'static str;
    /// Whether the flow opens a connection. Datagram-only apps (ping) do not:
    /// the backend then calls [`FlowApp::on_connected`] for both sides at the
    /// flow's start time.
    fn uses_connection(&self) -> bool {
        true
    }
    /// The connection is established on `side` (called once per side).
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo);
    /// `side`'s socket became writable again.
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let _ = (now, side, io);
    }
    /// `bytes` more were delivered in order to `side`.
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, io: &mut dyn FlowIo) {
        let _ = (now, side, bytes, io);
    }
    /// The peer of `side` finished sending and all its data arrived.
    fn on_peer_finished(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let _ = (now, side, io);
    }
    /// A wake-up `side` asked for with [`AppIo::wake_at`].
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let _ = (now, side, io);
    }
    /// A datagram arrived at `side`.
    fn on_datagram(&mut self, now: Time, side: Role, dg: Datagram, io: &mut dyn FlowIo) {
        let _ = (now, side, dg, io);
    }
    /// A datagram sent with [`FlowIo::send_bytes`] arrived at `side` with
    /// IP-ECN field `ecn` (as the network left it).
    fn on_bytes(&mut self, now: Time, side: Role, data: &[u8], ecn: Ecn, io: &mut dyn FlowIo) {
        let _ = (now, side, data, ecn, io);
    }
    /// Bytes delivered in order to the receiving side so far, for an app
    /// that runs its own transport over datagrams (QUIC): the flow's
    /// `bytes_delivered` and goodput then count these. `None`: the backend
    /// counts the connection's bytes (or none, for datagram apps).
    fn delivered_bytes(&self) -> Option<u64> {
        None
    }
    /// When such an app's transfer completed (a file's last byte arrived).
    fn completed_at(&self) -> Option<Time> {
        None
    }
    /// What the app measured, for `summary.json` (`flows.<name>.app_metrics`);
    /// `Null` when it has nothing beyond the transport's own figures.
    fn report(&self, end: Time) -> Value {
        let _ = end;
        Value::Null
    }
    /// Values for the interval that ends at `now` (`interval` long), as
    /// `(series name, value)` pairs for `series.parquet`.
    fn sample(&mut self, now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        let _ = (now, interval, out);
    }
    /// For an app that carries its data over its own transport (QUIC): the
    /// sending side's transport, which the flow's series (`cwnd_bytes`,
    /// `srtt_ms`, ...) come from instead of the flow's unused TCP endpoint.
    /// `None` before that side's connection exists, and for other apps.
    fn own_transport(&self) -> Option<OwnTransport<'_>> {
        None
    }
    /// An app with its own transport (QUIC): whether its client's handshake
    /// has completed (connection racing, docs/models/racing.md). `false` for
    /// the others.
    fn client_established(&self) -> bool {
        false
    }
    /// The same app's transport counters (`cwnd_final_bytes`,
    /// `ecn_validation`, `losses_detected`, ...), which replace the TCP
    /// endpoint's in `summary.json` (TCP-only ones are `None`: `null`).
    fn own_transport_summary(&self) -> Option<l4slab_bottleneck::flow::TransportCounts> {
        None
    }
    /// The datagrams the app ignored as unexpected (unknown tag, duplicate;
    /// the backend adds what it dropped before the app).
    fn datagrams_ignored(&self) -> DatagramsIgnored {
        DatagramsIgnored::default()
    }
    /// The RTT samples the sending side's own transport took since the last
    /// call (one per ACK that gave one), for the flow's `rtt_ms` statistics.
    fn take_rtt_samples(&mut self, out: &mut dyn FnMut(Dur)) {
        let _ = out;
    }
    /// Numbers the app drew from a seeded stream of its own (a browsing
    /// person's pages), for the run's `random_draws`.
    fn random_draws(&self) -> u64 {
        0
    }
    /// For an app whose flows work together (a browser's HTTP/1.1
    /// connections, [`web_browse_h1`]): what it asks of its other flows
    /// since the last call. The backend drains this after every callback.
    fn take_flow_requests(&mut self, out: &mut dyn FnMut(FlowRequest)) {
        let _ = out;
    }
    /// Whether the flow's connection opens only when another flow of the
    /// same app asks for it ([`FlowRequest::Open`]) instead of at the
    /// flow's start.
    fn opens_on_request(&self) -> bool {
        false
    }
}

/// What one flow's app asks of another flow of the same app
/// ([`FlowApp::take_flow_requests`]); `flow` is that flow's index in the
/// scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowRequest {
    /// Open the flow's connection now (one that [`FlowApp::opens_on_request`]).
    Open { flow: usize },
    /// Call the flow's app back on `side` ([`FlowApp::on_timer`]) at `at`,
    /// as its own [`AppIo::wake_at`] would.
    Wake { flow: usize, side: Role, at: Time },
}

/// The sending side's own transport ([`FlowApp::own_transport`]).
pub struct OwnTransport<'a> {
    pub cc: &'a dyn l4slab_cc::CongestionControl,
    pub bytes_in_flight: u64,
    pub pacing_rate: Option<l4slab_core::Rate>,
    pub srtt: Option<Dur>,
}

/// A one-ended [`l4slab_tcp::App`] running on the sending side of a
/// flow; the receiving side only reads (the backend counts what it gets).
#[derive(Debug)]
pub struct OneWay<A> {
    sender: Role,
    app: A,
}

impl<A: l4slab_tcp::App> OneWay<A> {
    pub fn new(sender: Role, app: A) -> Self {
        OneWay { sender, app }
    }

    pub fn inner(&self) -> &A {
        &self.app
    }
}

impl<A: l4slab_tcp::App> FlowApp for OneWay<A> {
    fn kind(&self) -> &'static str {
        self.app.kind()
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.app.start(now, io);
        }
    }
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.app.on_writable(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.app.on_timer(now, io);
        }
    }
}
