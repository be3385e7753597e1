//! A TCP app over l4slab's QUIC-style transport: the app's byte stream in
//! each direction is one bidirectional QUIC stream, opened by the side that
//! writes on it (RFC 9000 §2.1: client-initiated for what the client sends,
//! server-initiated for what the server sends), so the same [`FlowApp`]
//! object that runs over a simulated TCP connection runs unchanged over a
//! QUIC connection — in the simulator (`transport.protocol = "quic"`) and
//! on the emulator's own endpoints, which carry `web_browse` and `download`
//! this way.
//!
//! [`StreamApp`] maps the app's socket calls onto its side's stream:
//! `write` is [`Connection::write`] (the stream's send buffer takes what it
//! has room for; a short write makes the side blocked, and the app is told
//! [`FlowApp::on_writable`] at the next chance, as a TCP endpoint does when
//! room returns), `finish` is the stream's FIN ([`Connection::finish`]),
//! `wake_at` a wake-up of the flow. What the peer's stream delivers in
//! order is handed to [`FlowApp::on_receive`], its FIN to
//! [`FlowApp::on_peer_finished`]. A side is connected (the app's
//! [`FlowApp::on_connected`]) once its connection is established and its
//! stream is open: the client after its handshake round trip, the server
//! when the client's Finished arrived — the points where a TCP client and
//! server see their connection established.
//!
//! Each direction is one ordered byte stream, as over TCP: what an
//! HTTP/2-style app writes in order arrives in order (head-of-line blocking
//! included); only the transport under it differs (QUIC's recovery, ACK
//! frames' ECN counts, its pacing). `web` and `video_stream` over QUIC use a
//! stream per object instead ([`crate::web_quic`], HTTP/3 style).
//!
//! Not carried: datagrams ([`FlowIo::send_datagram`]; the scenario allows
//! this for apps that send none), and the TCP-only [`SocketInfo`] fields
//! (delivery-rate samples, unsent bytes): an app that adapts to them (the
//! frame apps) is not run this way.

use serde_json::Value;

use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::{Connection, Event, StreamId};

use crate::quic::QuicStreams;
use crate::{AppIo, Datagram, FlowApp, FlowIo, Role, SampleSink, SocketInfo};

fn ix(side: Role) -> usize {
    usize::from(side == Role::Server)
}

/// One side's end of the byte streams.
#[derive(Debug, Default)]
struct End {
    /// The stream this side writes on.
    stream: Option<StreamId>,
    connected: bool,
    /// In-order bytes from the peer's stream not yet handed to the app.
    unread: u64,
    /// The peer's FIN arrived; `told` once the app heard of it.
    peer_finished: bool,
    told_finished: bool,
    /// The last write was short: tell the app when it may write again.
    blocked: bool,
    /// The app's own wake-up ([`AppIo::wake_at`]).
    wake: Option<Time>,
}

/// A TCP [`FlowApp`] over a QUIC connection (see the module documentation).
#[derive(Debug)]
pub struct StreamApp {
    app: Box<dyn FlowApp>,
    /// The side the flow's main data goes from.
    sender: Role,
    ends: [End; 2],
    /// Bytes delivered in order to the receiving side.
    delivered: u64,
}

impl StreamApp {
    /// `app` (built for TCP) whose main data goes from `sender`.
    pub fn new(app: Box<dyn FlowApp>, sender: Role) -> Self {
        StreamApp {
            app,
            sender,
            ends: [End::default(), End::default()],
            delivered: 0,
        }
    }

    /// The app it carries.
    pub fn app(&self) -> &dyn FlowApp {
        self.app.as_ref()
    }
}

/// The socket the carried app sees on one side: its stream.
struct StreamIo<'a> {
    conn: &'a mut Connection,
    end: &'a mut End,
    io: &'a mut dyn FlowIo,
}

impl AppIo for StreamIo<'_> {
    fn write(&mut self, bytes: u64) -> u64 {
        let Some(id) = self.end.stream else {
            return 0;
        };
        // A finished stream (or a closed connection) takes nothing, as a
        // TCP socket after shutdown.
        let n = self.conn.write(id, bytes).unwrap_or(0);
        if n < bytes {
            self.end.blocked = true;
        }
        n
    }
    fn wake_at(&mut self, at: Time) {
        if self.end.wake.is_none_or(|w| at < w) {
            self.end.wake = Some(at);
        }
        self.io.wake_at(at);
    }
    fn finish(&mut self) {
        if let Some(id) = self.end.stream {
            // Already finished: nothing more to do.
            let _ = self.conn.finish(id);
        }
    }
    fn info(&self) -> SocketInfo {
        SocketInfo {
            in_flight_bytes: self.conn.bytes_in_flight(),
            srtt: self.conn.srtt(),
            cwnd_bytes: self.conn.cwnd(),
            writable: !self.end.blocked,
            ..SocketInfo::default()
        }
    }
}

impl FlowIo for StreamIo<'_> {
    fn send_datagram(&mut self, dg: Datagram) {
        // The flow's datagrams are its connection's packets.
        unreachable!("an app carried on a QUIC stream sends no datagrams ({dg:?})")
    }
    fn send_bytes(&mut self, _data: &[u8], _ecn: Ecn) {
        unreachable!("an app carried on a QUIC stream sends no datagrams")
    }
}

impl QuicStreams for StreamApp {
    fn kind(&self) -> &'static str {
        self.app.kind()
    }

    fn drive(&mut self, now: Time, side: Role, conn: &mut Connection, io: &mut dyn FlowIo) {
        if !conn.is_established() {
            return;
        }
        let end = &mut self.ends[ix(side)];
        if end.stream.is_none() {
            match conn.open_stream() {
                Ok(id) => end.stream = Some(id),
                // The peer's limits are not known yet: the next datagram.
                Err(_) => return,
            }
        }
        let app = self.app.as_mut();
        let mut sio = StreamIo { conn, end, io };
        if !sio.end.connected {
            sio.end.connected = true;
            app.on_connected(now, side, &mut sio);
        }
        let unread = core::mem::take(&mut sio.end.unread);
        if unread > 0 {
            app.on_receive(now, side, unread, &mut sio);
        }
        if sio.end.peer_finished && !sio.end.told_finished {
            sio.end.told_finished = true;
            app.on_peer_finished(now, side, &mut sio);
        }
        if sio.end.wake.is_some_and(|w| w <= now) {
            sio.end.wake = None;
            app.on_timer(now, side, &mut sio);
        }
        // Acknowledgements may have made room (a write that finds none
        // blocks the side again).
        if sio.end.blocked {
            sio.end.blocked = false;
            app.on_writable(now, side, &mut sio);
        }
        // The flow has one wake-up per side, and a firing clears it: ask
        // again for the app's until it is due.
        if let Some(w) = sio.end.wake {
            sio.io.wake_at(w);
        }
    }

    fn on_event(&mut self, _now: Time, side: Role, ev: Event) {
        // Only the peer's stream carries data to this side.
        let from_peer = |id: StreamId| id.is_client_initiated() != (side == Role::Client);
        let end = &mut self.ends[ix(side)];
        match ev {
            Event::StreamData {
                id,
                new_in_order_bytes,
            } if from_peer(id) => {
                end.unread += new_in_order_bytes;
                if side != self.sender {
                    self.delivered += new_in_order_bytes;
                }
            }
            Event::StreamFinished(id) if from_peer(id) => end.peer_finished = true,
            _ => {}
        }
    }

    fn delivered(&self) -> u64 {
        self.delivered
    }

    fn completion(&self) -> Option<Time> {
        self.app.completed_at()
    }

    fn report(&self, _start: Time, end: Time) -> Value {
        match self.app.report(end) {
            Value::Null => Value::Object(serde_json::Map::new()),
            r => r,
        }
    }

    fn sample(&mut self, now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        self.app.sample(now, interval, out);
    }

    fn random_draws(&self) -> u64 {
        self.app.random_draws()
    }
}

#[cfg(test)]
mod tests {
    use l4slab_core::SimRng;

    use super::*;
    use crate::download::DownloadConfig;
    use crate::quic::tests::{cfg, run};
    use crate::quic::QuicFlow;
    use crate::registry::{AppKind, BuildContext};
    use crate::web_browse::{WebBrowse, WebBrowseConfig};

    fn cx(sender: Role) -> BuildContext<'static> {
        BuildContext {
            sender,
            flow: "f",
            start: Time::ZERO,
            seed: 1,
        }
    }

    #[test]
    fn a_download_part_arrives_whole_over_its_stream() {
        let d = DownloadConfig {
            size: 1_000_000,
            connections: 1,
            ..DownloadConfig::default()
        };
        let app = StreamApp::new(d.build(&cx(Role::Server)), Role::Server);
        let mut f = QuicFlow::with_streams(app, cfg(), Role::Server);
        let until = Time::from_secs(10);
        // Every 41st datagram lost: the stream repairs it.
        run(&mut f, until, Dur::from_millis(10), 20_000_000, 41);
        assert_eq!(f.delivered(), 1_000_000);
        // 0.4 s of serialization plus the handshake, slow start and the
        // repairs; how long the repairs take depends on which packets the
        // every-41st rule hits (1.2-4.5 s over moduli 29 to 71).
        let done = f.completion().expect("completed").as_secs_f64();
        assert!(done > 0.43 && done < 5.0, "{done}");
        let r = f.report(until);
        assert_eq!(r["transport"], "quic");
        assert_eq!(r["stopped"], false);
        assert!(r["server"]["packets_lost"].as_u64().unwrap() > 0, "{r}");
    }

    #[test]
    fn a_stopped_part_sends_its_fin_at_stop_and_never_completes() {
        // 10 MB cannot arrive over 10 Mbit/s by 2 s: the stop cuts it.
        let d = DownloadConfig {
            size: 10_000_000,
            connections: 1,
            stop: Dur::from_secs(2),
            ..DownloadConfig::default()
        };
        let app = StreamApp::new(d.build(&cx(Role::Server)), Role::Server);
        let mut f = QuicFlow::with_streams(app, cfg(), Role::Server);
        let until = Time::from_secs(12);
        run(&mut f, until, Dur::from_millis(10), 10_000_000, 0);
        assert!(f.completion().is_none());
        let r = f.report(until);
        assert_eq!(r["stopped"], true);
        // What the stream took by 2 s (at most 2 s of the link plus its
        // 4 MB send buffer) arrives; nothing is written after.
        let got = f.delivered();
        let sent = f.end(Role::Server).unwrap().stats().stream_bytes_sent;
        assert!(got > 500_000 && got < 2_500_000 + (4 << 20), "{got}");
        assert_eq!(got, sent);
        let fin = f.streams().ends[ix(Role::Client)].peer_finished;
        assert!(fin, "the FIN arrived");
    }

    #[test]
    fn a_browsing_person_loads_the_same_pages_as_over_tcp() {
        let c = WebBrowseConfig {
            reading_time: Dur::from_secs(1),
            ..WebBrowseConfig::default()
        };
        let rng = SimRng::derive(3, "web_browse/b");
        let mut copy = rng.clone();
        let pages: Vec<_> = (0..4).map(|_| c.model().draw(&mut copy)).collect();
        let app = StreamApp::new(
            Box::new(WebBrowse::new(c, Role::Client, rng, "b")),
            Role::Server,
        );
        let mut f = QuicFlow::with_streams(app, cfg(), Role::Server);
        let until = Time::from_secs(12);
        run(&mut f, until, Dur::from_millis(10), 20_000_000, 0);
        let r = f.report(until);
        let loaded = r["pages_loaded"].as_u64().unwrap();
        assert!(loaded >= 3, "{r}");
        for (i, p) in pages.iter().take(loaded as usize).enumerate() {
            let got = &r["pages"][i];
            assert_eq!(got["bytes"], p.bytes(), "page {i}: {got}");
            // At least one round trip (request, response) plus parsing.
            let load = got["load_s"].as_f64().unwrap();
            let floor = 0.02 + if p.objects.is_empty() { 0.0 } else { 0.02 };
            assert!(load >= floor && load < 2.0, "page {i}: {got}");
        }
        // What arrived: the loaded pages, and part of one under way.
        let loaded_bytes = r["bytes_loaded"].as_u64().unwrap();
        if r["pages_started"].as_u64().unwrap() == loaded {
            assert_eq!(f.delivered(), loaded_bytes);
        } else {
            assert!(f.delivered() >= loaded_bytes);
        }
        assert!(f.random_draws() > 0);
    }
}
