//! Bulk and file transfers over l4slab's QUIC-style transport
//! (`[flows.transport] protocol = "quic"`, docs/models/quic.md): the flow's
//! two ends are [`Connection`]s, the backend carries their datagrams' bytes
//! (queues, links, loss, ECN marks) and calls back with what arrives — the
//! same connection code the real UDP driver runs.
//!
//! [`QuicFlow`] drives the two connections; what runs over them is a
//! [`QuicStreams`]. [`Transfer`] (bulk and file): the sending side (the
//! flow's `direction`) opens one bidirectional stream once its end is
//! connected (a server-initiated stream for `down`) and writes: without end
//! for `bulk`, `size` bytes then FIN for `file`. The receiving side counts
//! the bytes that become readable in order; a file completes when its FIN
//! and everything before it arrived. `web` and `video_stream` run one stream per object
//! ([`crate::web_quic`]); `web_browse` and `download` run their TCP app
//! over one stream each way ([`crate::quic_stream_app`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use serde_json::{json, Value};

use l4slab_bottleneck::flow::TransportCounts;
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::stats::round6;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::{Connection, ConnectionConfig, Event, StreamId};

use crate::{FlowApp, FlowIo, OwnTransport, Role};

/// The largest UDP payload a connection may send (IPv4: 65,535 − 20 − 8).
const MAX_DATAGRAM: usize = 65_507;

/// What a QUIC flow transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuicApp {
    /// Bytes without end.
    Bulk,
    /// `size` bytes, then FIN.
    File { size: u64 },
    /// A frame of `frame_bytes` every `interval` (a call or a game at a
    /// constant rate), from the moment the stream opens, without end. A
    /// frame the send buffer cannot take at once is written as room
    /// returns, before the next.
    Frames { frame_bytes: u64, interval: Dur },
}

/// The address a side's peer sees it at (the simulator has no addresses;
/// the connection's path checks want a stable one).
pub fn address(side: Role) -> SocketAddr {
    match side {
        Role::Client => SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 50_000),
        Role::Server => SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 443),
    }
}

fn ix(side: Role) -> usize {
    usize::from(side == Role::Server)
}

/// What runs over a QUIC flow's connection: the streams each side opens,
/// writes and reads ([`Transfer`] for bulk and file, and
/// [`crate::web_quic::WebStreams`] for web). [`QuicFlow`] drives the
/// connections and calls these.
pub trait QuicStreams: core::fmt::Debug + Send {
    /// The scenario's `app.kind`.
    fn kind(&self) -> &'static str;
    /// Write what `side` has to send on its connection (which may not be
    /// established yet); ask for wake-ups through `io`.
    fn drive(&mut self, now: Time, side: Role, conn: &mut Connection, io: &mut dyn FlowIo);
    /// `side`'s connection reported `ev`.
    fn on_event(&mut self, now: Time, side: Role, ev: Event);
    /// The flow's data bytes delivered in order to the receiving side.
    fn delivered(&self) -> u64;
    /// When the flow's transfer completed, if it has an end.
    fn completion(&self) -> Option<Time>;
    /// The app's figures for `app_metrics` (a JSON object); the flow adds
    /// `transport` and each end's connection counters.
    fn report(&self, start: Time, end: Time) -> Value;
    /// The app's series for the interval that ends at `now`
    /// ([`FlowApp::sample`]).
    fn sample(&mut self, now: Time, interval: Dur, out: &mut crate::SampleSink<'_>) {
        let _ = (now, interval, out);
    }
    /// Numbers the app drew from its own stream ([`FlowApp::random_draws`]).
    fn random_draws(&self) -> u64 {
        0
    }
}

/// One stream from the sending side (the flow's `direction`), opened once
/// its end is connected (a server-initiated stream for `down`): without end
/// for `bulk`, `size` bytes then FIN for `file`.
#[derive(Debug)]
pub struct Transfer {
    app: QuicApp,
    /// The side that sends the data.
    sender: Role,
    stream: Option<StreamId>,
    written: u64,
    /// Frames: when the first was captured, and how many so far.
    frames_start: Option<Time>,
    frames: u64,
    finished: bool,
    delivered: u64,
    completion: Option<Time>,
}

impl Transfer {
    pub fn new(app: QuicApp, sender: Role) -> Self {
        Transfer {
            app,
            sender,
            stream: None,
            written: 0,
            frames_start: None,
            frames: 0,
            finished: false,
            delivered: 0,
            completion: None,
        }
    }
}

impl QuicStreams for Transfer {
    fn kind(&self) -> &'static str {
        match self.app {
            QuicApp::Bulk => "bulk",
            QuicApp::File { .. } => "file",
            QuicApp::Frames { .. } => "frames",
        }
    }

    fn drive(&mut self, now: Time, side: Role, conn: &mut Connection, io: &mut dyn FlowIo) {
        if side != self.sender || !conn.is_established() || self.finished {
            return;
        }
        let id = match self.stream {
            Some(id) => id,
            None => match conn.open_stream() {
                Ok(id) => *self.stream.insert(id),
                Err(_) => return, // limits not known yet
            },
        };
        let want = match self.app {
            QuicApp::Bulk => u64::MAX,
            QuicApp::File { size } => size - self.written,
            QuicApp::Frames {
                frame_bytes,
                interval,
            } => {
                let start = *self.frames_start.get_or_insert(now);
                // Frames captured by now: one at the start, one each interval.
                let step = interval.as_nanos().max(1);
                self.frames = now.saturating_since(start).as_nanos() / step + 1;
                io.wake_at(start + Dur::from_nanos(step * self.frames));
                (self.frames * frame_bytes).saturating_sub(self.written)
            }
        };
        if want > 0 {
            self.written += conn.write(id, want).unwrap_or(0);
        }
        if let QuicApp::File { size } = self.app {
            if self.written == size && conn.finish(id).is_ok() {
                self.finished = true;
            }
        }
    }

    fn on_event(&mut self, now: Time, side: Role, ev: Event) {
        match ev {
            Event::StreamData {
                new_in_order_bytes, ..
            } if side != self.sender => self.delivered += new_in_order_bytes,
            Event::StreamFinished(_) if side != self.sender => {
                self.completion.get_or_insert(now);
            }
            _ => {}
        }
    }

    fn delivered(&self) -> u64 {
        self.delivered
    }

    fn completion(&self) -> Option<Time> {
        self.completion
    }

    fn report(&self, start: Time, end: Time) -> Value {
        let until = self.completion.unwrap_or(end);
        let active = until.saturating_since(start).as_secs_f64();
        let mut r = json!({
            "bytes_delivered": self.delivered,
            "completion_s": self.completion.map(|t| round6(t.saturating_since(start).as_secs_f64())),
            "goodput_bps": if active > 0.0 { (self.delivered as f64 * 8.0 / active).round() } else { 0.0 },
        });
        if let QuicApp::Frames { .. } = self.app {
            r["frames_captured"] = self.frames.into();
        }
        r
    }
}

/// Both ends of a QUIC flow (see the module documentation) running `S`.
pub struct QuicFlow<S = Transfer> {
    streams: S,
    cfg: ConnectionConfig,
    ends: [Option<Connection>; 2],
    buf: Vec<u8>,
    start: Option<Time>,
    /// The side whose transport the flow's metrics describe.
    sender: Role,
    /// The sender's RTT samples not yet taken ([`FlowApp::take_rtt_samples`]),
    /// and how many its connection had taken when last looked at.
    rtt_samples: Vec<Dur>,
    rtt_seen: u64,
}

impl<S: QuicStreams> core::fmt::Debug for QuicFlow<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QuicFlow")
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl QuicFlow<Transfer> {
    /// A bulk or file flow whose data goes from `sender`.
    pub fn new(app: QuicApp, cfg: ConnectionConfig, sender: Role) -> Self {
        QuicFlow::with_streams(Transfer::new(app, sender), cfg, sender)
    }
}

impl<S: QuicStreams> QuicFlow<S> {
    /// `streams` over one connection; `sender` is the side whose transport
    /// the flow's metrics describe (the one the main data goes from).
    pub fn with_streams(streams: S, cfg: ConnectionConfig, sender: Role) -> Self {
        QuicFlow {
            streams,
            cfg,
            ends: [None, None],
            buf: vec![0; MAX_DATAGRAM],
            start: None,
            sender,
            rtt_samples: Vec::with_capacity(64),
            rtt_seen: 0,
        }
    }

    /// What runs over the connection.
    pub fn streams(&self) -> &S {
        &self.streams
    }

    /// The connection on `side` (after the flow started).
    pub fn end(&self, side: Role) -> Option<&Connection> {
        self.ends[ix(side)].as_ref()
    }

    /// Bytes readable in order at the receiving side so far.
    pub fn delivered(&self) -> u64 {
        self.streams.delivered()
    }

    /// When the transfer's last byte (and FIN) arrived.
    pub fn completion(&self) -> Option<Time> {
        self.streams.completion()
    }

    /// Everything due on `side` at `now`, its datagrams, its next wake-up.
    fn run(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let Some(conn) = self.ends[ix(side)].as_mut() else {
            return;
        };
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(ev) = conn.poll_event() {
            self.streams.on_event(now, side, ev);
        }
        self.streams.drive(now, side, conn, io);
        while let Some((len, _to, ecn)) = conn.poll_transmit(now, &mut self.buf) {
            io.send_bytes(&self.buf[..len], ecn);
        }
        if let Some(t) = conn.poll_timeout() {
            io.wake_at(t.max(now));
        }
    }
}

impl<S: QuicStreams> FlowApp for QuicFlow<S> {
    fn kind(&self) -> &'static str {
        self.streams.kind()
    }

    fn uses_connection(&self) -> bool {
        false
    }

    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.start.get_or_insert(now);
        let conn = match side {
            Role::Client => Connection::client(self.cfg.clone(), now, address(Role::Server), None),
            Role::Server => Connection::server(self.cfg.clone(), now),
        }
        .expect("the scenario validated the transport config");
        self.ends[ix(side)] = Some(conn);
        self.run(now, side, io);
    }

    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.run(now, side, io);
    }

    fn on_bytes(&mut self, now: Time, side: Role, data: &[u8], ecn: Ecn, io: &mut dyn FlowIo) {
        let from = address(match side {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        });
        if let Some(conn) = self.ends[ix(side)].as_mut() {
            conn.handle_datagram(now, from, data, ecn);
            if side == self.sender {
                // At most one RTT sample per datagram (an ACK frame gives one).
                let (rtt, n) = conn.latest_rtt();
                if n != self.rtt_seen {
                    self.rtt_seen = n;
                    self.rtt_samples.push(rtt);
                }
            }
        }
        self.run(now, side, io);
    }

    fn delivered_bytes(&self) -> Option<u64> {
        Some(self.streams.delivered())
    }

    fn completed_at(&self) -> Option<Time> {
        self.streams.completion()
    }

    fn own_transport(&self) -> Option<OwnTransport<'_>> {
        let c = self.end(self.sender)?;
        Some(OwnTransport {
            cc: c.cc(),
            bytes_in_flight: c.bytes_in_flight(),
            pacing_rate: c.pacing_rate(),
            srtt: c.srtt(),
        })
    }

    fn client_established(&self) -> bool {
        self.end(Role::Client)
            .is_some_and(Connection::is_established)
    }

    fn own_transport_summary(&self) -> Option<TransportCounts> {
        let receiver = match self.sender {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        Some(flow_metrics(self.end(self.sender)?, self.end(receiver)))
    }

    fn take_rtt_samples(&mut self, out: &mut dyn FnMut(Dur)) {
        for d in self.rtt_samples.drain(..) {
            out(d);
        }
    }

    fn sample(&mut self, now: Time, interval: Dur, out: &mut crate::SampleSink<'_>) {
        self.streams.sample(now, interval, out);
    }

    /// The app's draws and both connections' (their controllers': BBR).
    fn random_draws(&self) -> u64 {
        let conns: u64 = self
            .ends
            .iter()
            .flatten()
            .map(Connection::random_draws)
            .sum();
        self.streams.random_draws() + conns
    }

    fn report(&self, end: Time) -> Value {
        let mut r = self.streams.report(self.start.unwrap_or(end), end);
        let side = |s: Role| self.end(s).map_or(Value::Null, |c| stats_json(&c.stats()));
        r["transport"] = "quic".into();
        r["client"] = side(Role::Client);
        r["server"] = side(Role::Server);
        r
    }
}

/// A QUIC flow's flow-level keys of `summary.json` (docs/results.md), from
/// its sending connection (and the receiving one's CE count): what the TCP
/// model reports under the same names, with QUIC's meaning where it differs
/// (`retransmitted_bytes`: stream bytes sent again in new packets;
/// `losses_detected`: packets declared lost, RFC 9002 §6.1; `rto_count`:
/// probe timeouts, §6.2; `ecn`: `quic`, ACK frames' ECN counts, RFC 9000
/// §13.4), and `null` for what only TCP has (TLP, DSACK, undo, SACK-based
/// recovery, data segments). Both backends report a QUIC flow through this.
pub fn flow_metrics(sender: &Connection, receiver: Option<&Connection>) -> TransportCounts {
    let st = sender.stats();
    let ecn_on = !matches!(
        st.ecn_state,
        l4slab_quic::EcnState::Failed(l4slab_quic::EcnFailure::Disabled)
    );
    TransportCounts {
        retransmitted_bytes: Some(st.retransmitted_bytes),
        losses_detected: Some(st.packets_lost),
        rto_count: Some(st.pto_count),
        ce_marks_received: receiver.map(|r| r.stats().ce_received),
        ce_packets_fed_back: Some(st.ce_reported),
        ecn_echo_events: Some(st.congestion_events_ce),
        ecn: Some(if ecn_on { "quic" } else { "off" }),
        ecn_validation: Some(st.ecn_state.result_name()),
        segments_sent: Some(st.packets_sent),
        recovery_episodes: Some(st.congestion_events_loss),
        spurious_retransmits: Some(st.spurious_losses),
        cwnd_final_bytes: Some(sender.cwnd()),
        cc_states: Some(sender.cc().states()),
        // What only TCP has: retransmitted segments, AccECN byte feedback,
        // data segments, TLP, D-SACK, undo.
        ..TransportCounts::default()
    }
}

/// A connection's counters for `summary.json` (also the real endpoints',
/// `l4slab-sendserve`).
pub fn stats_json(st: &l4slab_quic::ConnectionStats) -> Value {
    let ms = |d: l4slab_core::Dur| round6(d.as_millis_f64());
    json!({
        "datagrams_sent": st.datagrams_sent,
        "datagrams_received": st.datagrams_received,
        "packets_sent": st.packets_sent,
        "packets_lost": st.packets_lost,
        "lost_by_packet_threshold": st.lost_by_packet_threshold,
        "lost_by_time_threshold": st.lost_by_time_threshold,
        "spurious_losses": st.spurious_losses,
        "retransmitted_bytes": st.retransmitted_bytes,
        "stream_bytes_sent": st.stream_bytes_sent,
        "pto_count": st.pto_count,
        "congestion_events": { "loss": st.congestion_events_loss, "ce": st.congestion_events_ce },
        "malformed": st.malformed,
        "srtt_ms": ms(st.srtt),
        "min_rtt_ms": ms(st.min_rtt),
        "cwnd_bytes": st.cwnd,
        "ecn": {
            "validation": format!("{:?}", st.ecn_state),
            "ect0_sent": st.ect0_sent,
            "ect1_sent": st.ect1_sent,
            "ce_reported": st.ce_reported,
        },
        "handshake_ms": st.handshake_time.map(ms),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use l4slab_core::testing::{Loss, TestLink, TestPath};
    use l4slab_core::Rate;

    use super::*;
    use crate::testing::Script;

    /// `flow` over a path of one-way `delay` and `rate` (serialized FIFO,
    /// no queue limit, datagrams counted with their IPv4 and UDP headers)
    /// that loses every `lose_every`-th datagram (0: none), until `until`.
    pub(crate) fn run<S: QuicStreams>(
        flow: &mut QuicFlow<S>,
        until: Time,
        delay: Dur,
        rate_bps: u64,
        lose_every: u64,
    ) {
        let link = TestLink::new(delay).rate(Rate::from_bps(rate_bps));
        let mut path = TestPath::new(link).with_loss(Loss::EveryNth(lose_every));
        Script::new().run(flow, &mut path, until);
    }

    pub(crate) fn cfg() -> ConnectionConfig {
        ConnectionConfig {
            cc: "cubic".into(),
            ..ConnectionConfig::default()
        }
    }

    #[test]
    fn a_file_arrives_whole_after_one_handshake_round_trip() {
        // 1 MB from the server over 20 Mbit/s, 20 ms RTT: at least the 1.5
        // RTT handshake plus the serialization (0.4 s of payload).
        let mut f = QuicFlow::new(QuicApp::File { size: 1_000_000 }, cfg(), Role::Server);
        run(
            &mut f,
            Time::from_secs(10),
            Dur::from_millis(10),
            20_000_000,
            0,
        );
        assert_eq!(f.delivered(), 1_000_000);
        let done = f.completion().expect("the file completed").as_secs_f64();
        assert!(done > 0.4 + 0.03, "{done}");
        assert!(done < 2.0, "{done}");
        let r = f.report(Time::from_secs(10));
        assert_eq!(r["transport"], "quic");
        assert_eq!(r["server"]["packets_lost"], 0);
    }

    #[test]
    fn losses_are_repaired_in_new_packets_and_the_file_is_exact() {
        let mut f = QuicFlow::new(QuicApp::File { size: 500_000 }, cfg(), Role::Client);
        run(
            &mut f,
            Time::from_secs(20),
            Dur::from_millis(10),
            20_000_000,
            37,
        );
        assert_eq!(f.delivered(), 500_000);
        assert!(f.completion().is_some());
        let r = f.report(Time::from_secs(20));
        assert!(r["client"]["packets_lost"].as_u64().unwrap() > 0, "{r}");
        assert!(
            r["client"]["retransmitted_bytes"].as_u64().unwrap() > 0,
            "{r}"
        );
    }

    #[test]
    fn bulk_keeps_sending_until_the_end() {
        let mut f = QuicFlow::new(QuicApp::Bulk, cfg(), Role::Server);
        run(
            &mut f,
            Time::from_secs(3),
            Dur::from_millis(10),
            10_000_000,
            0,
        );
        // 3 s at 10 Mbit/s less the handshake and slow start: well over half.
        assert!(f.delivered() > 1_500_000, "{}", f.delivered());
        assert!(f.completion().is_none());
    }
}
