//! The server demultiplexer and the client, without sockets: datagrams go
//! straight from one endpoint to the other (a zero-delay path), time moves
//! to the next timeout when nothing is in flight.

use std::net::SocketAddr;

use l4slab_app::quic::QuicApp;
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Dur, Time};
use l4slab_endpoint::client::Client;
use l4slab_endpoint::server::{Server, ServerConfig};
use l4slab_endpoint::token::TokenKey;
use l4slab_quic::wire::is_retry;
use l4slab_quic::ConnectionConfig;

const SERVER: &str = "192.0.2.1:4433";

fn a(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn server(max_sessions: usize) -> Server {
    Server::new(
        ServerConfig {
            max_sessions,
            ..ServerConfig::default()
        },
        TokenKey::from_keys([7; 16], [8; 16], Dur::from_secs(10)),
    )
}

fn client(cc: &str, now: Time, seed: u64, secs: u64) -> Client {
    let cfg = ConnectionConfig {
        cc: cc.into(),
        seed,
        ..ConnectionConfig::default()
    };
    Client::new(
        cfg,
        now,
        a(SERVER),
        QuicApp::Bulk,
        Dur::from_secs(secs),
        Dur::from_secs(5),
    )
    .unwrap()
}

/// Clients (each at its address) and the server, run until `until`.
/// Returns the datagrams the server sent to each client.
struct Net {
    now: Time,
    server: Server,
    clients: Vec<(SocketAddr, Client)>,
    to_clients: Vec<Vec<Vec<u8>>>,
}

impl Net {
    fn new(server: Server) -> Self {
        Net {
            now: Time::ZERO,
            server,
            clients: Vec::new(),
            to_clients: Vec::new(),
        }
    }

    fn add(&mut self, addr: &str, c: Client) {
        self.clients.push((a(addr), c));
        self.to_clients.push(Vec::new());
    }

    fn run(&mut self, until: Time) {
        let mut buf = vec![0u8; 65_535];
        while self.now <= until && !self.server.is_done() {
            for (_, c) in &mut self.clients {
                if c.poll_timeout().is_some_and(|t| t <= self.now) {
                    c.handle_timeout(self.now);
                }
            }
            if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                self.server.handle_timeout(self.now);
            }
            let mut moved = false;
            for (addr, c) in &mut self.clients {
                while let Some((n, _, ecn)) = c.poll_transmit(self.now, &mut buf) {
                    // A 1 Gbit/s path without delay: 10 µs a datagram.
                    self.now = self.now + Dur::from_micros(10);
                    self.server.handle_datagram(self.now, *addr, &buf[..n], ecn);
                    moved = true;
                }
            }
            while let Some((n, to, ecn)) = self.server.poll_transmit(self.now, &mut buf) {
                if let Some(i) = self.clients.iter().position(|(ad, _)| *ad == to) {
                    self.to_clients[i].push(buf[..n].to_vec());
                    let c = &mut self.clients[i].1;
                    c.handle_datagram(self.now, a(SERVER), &buf[..n], ecn);
                }
                moved = true;
            }
            if moved {
                continue;
            }
            let next = self
                .clients
                .iter()
                .filter_map(|(_, c)| c.poll_timeout())
                .chain(self.server.poll_timeout())
                .min();
            match next {
                Some(t) if t <= until => self.now = self.now.max(t),
                _ => break,
            }
        }
    }
}

#[test]
fn a_client_is_retried_then_served_and_the_session_ends_with_its_close() {
    let mut net = Net::new(server(4));
    net.add("198.51.100.7:50000", client("prague", Time::ZERO, 1, 1));
    net.run(Time::from_secs(3));
    let st = net.server.stats().clone();
    assert_eq!(st.retries_sent, 1, "{st:?}");
    assert_eq!(st.sessions_accepted, 1, "{st:?}");
    assert!(
        is_retry(&net.to_clients[0][0]),
        "the first answer is a Retry"
    );
    let c = &net.clients[0].1;
    assert!(c.conn.retried());
    assert!(c.acked() > 100_000, "{}", c.acked());
    assert_eq!(st.sessions_ended, 1, "the client's close ended it: {st:?}");
    let f = net.server.take_finished();
    assert_eq!(f.len(), 1);
    let flow = &f[0].summary;
    assert!(flow["bytes_delivered"].as_u64().unwrap() >= c.acked());
    assert_eq!(net.server.sessions(), 0);
}
