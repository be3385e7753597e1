//! The server demultiplexer and the client, without sockets: datagrams go
//! straight from one endpoint to the other (a zero-delay path), time moves
//! to the next timeout when nothing is in flight.

use std::net::SocketAddr;

use l4slab_app::quic::QuicApp;
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::wire::{is_retry, Header, LongHeader, LongType, PacketBuilder, TruncatedPn};
use l4slab_quic::{Connection, ConnectionConfig};
use l4slab_sendserve::client::{Client, Failure};
use l4slab_sendserve::parallel::Clients;
use l4slab_sendserve::request::{Request, REFUSED};
use l4slab_sendserve::server::{source_key, Server, ServerConfig};
use l4slab_sendserve::token::TokenKey;

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
                    self.now += Dur::from_micros(10);
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

/// The client's first Initial (no token) and, after the server's Retry,
/// its second (with the token), as they were sent from `addr`.
fn two_initials(addr: &str) -> (Vec<u8>, Vec<u8>, Server) {
    let mut s = server(4);
    let mut c = client("cubic", Time::ZERO, 3, 1);
    let mut buf = vec![0u8; 65_535];
    let (n, _, _) = c.poll_transmit(Time::ZERO, &mut buf).unwrap();
    let first = buf[..n].to_vec();
    s.handle_datagram(Time::ZERO, a(addr), &first, Ecn::Ect0);
    assert_eq!(s.sessions(), 0, "no session for an Initial without a token");
    let (rn, to, _) = s.poll_transmit(Time::ZERO, &mut buf).expect("a Retry");
    assert_eq!(to, a(addr));
    assert!(is_retry(&buf[..rn]));
    // §8.1: the Retry is smaller than what it answers.
    assert!(rn < first.len(), "{rn} >= {}", first.len());
    c.handle_datagram(Time::ZERO, a(SERVER), &buf[..rn], Ecn::NotEct);
    let (n, _, _) = c.poll_transmit(Time::ZERO, &mut buf).unwrap();
    (first, buf[..n].to_vec(), s)
}

#[test]
fn only_a_valid_unexpired_token_from_its_own_address_creates_a_session() {
    let from = "198.51.100.7:50000";
    let (_, second, s0) = two_initials(from);
    // From another address or port: forged (the MAC covers them).
    let mut s = s0;
    for other in ["198.51.100.8:50000", "198.51.100.7:50001"] {
        s.handle_datagram(Time::ZERO, a(other), &second, Ecn::Ect0);
    }
    assert_eq!(s.sessions(), 0);
    assert_eq!(s.stats().invalid_tokens, 2);
    // Expired: 10 s lifetime.
    s.handle_datagram(Time::from_millis(10_001), a(from), &second, Ecn::Ect0);
    assert_eq!((s.sessions(), s.stats().expired_tokens), (0, 1));
    // A server with another key (a restarted server) refuses it.
    let mut other = Server::new(
        ServerConfig::default(),
        TokenKey::from_keys([1; 16], [8; 16], Dur::from_secs(10)),
    );
    other.handle_datagram(Time::ZERO, a(from), &second, Ecn::Ect0);
    assert_eq!((other.sessions(), other.stats().invalid_tokens), (0, 1));
    // Any single changed token byte is refused.
    let (_, t) = token_span(&second);
    for i in t.clone() {
        let mut d = second.clone();
        d[i] ^= 0x01;
        s.handle_datagram(Time::ZERO, a(from), &d, Ecn::Ect0);
    }
    assert_eq!(s.sessions(), 0);
    assert_eq!(s.stats().invalid_tokens, 2 + t.len() as u64);
    // The genuine one, in time, from its address: a session.
    s.handle_datagram(Time::from_secs(9), a(from), &second, Ecn::Ect0);
    assert_eq!((s.sessions(), s.stats().sessions_accepted), (1, 1));
}

/// Where the token is in an Initial: (token length, byte range).
fn token_span(d: &[u8]) -> (usize, std::ops::Range<usize>) {
    // first byte, version (4), DCID len + 8, SCID len + 8, token length (1 byte varint).
    let at = 1 + 4 + 1 + 8 + 1 + 8;
    let len = usize::from(d[at]);
    assert!(len < 64);
    (len, at + 1..at + 1 + len)
}

#[test]
fn sessions_beyond_the_limit_are_refused() {
    let mut net = Net::new(server(2));
    for (i, addr) in ["198.51.100.1:1", "198.51.100.2:2", "198.51.100.3:3"]
        .into_iter()
        .enumerate()
    {
        net.add(addr, client("cubic", Time::ZERO, 10 + i as u64, 2));
    }
    net.run(Time::from_millis(500));
    let st = net.server.stats().clone();
    assert_eq!(st.retries_sent, 3, "{st:?}");
    assert_eq!(st.sessions_accepted, 2, "{st:?}");
    assert!(st.sessions_refused >= 1, "{st:?}");
    assert_eq!(net.server.sessions(), 2);
    let connected = net
        .clients
        .iter()
        .filter(|(_, c)| c.connected_at().is_some())
        .count();
    assert_eq!(connected, 2);
}

#[test]
fn malformed_and_unknown_datagrams_are_counted_and_ignored() {
    let mut s = server(4);
    let from = a("203.0.113.9:999");
    let cases: [&[u8]; 6] = [
        &[],
        &[0x00; 40],         // fixed bit 0
        &[0x41; 40],         // a short header for no session
        &[0xc0, 0, 0, 0, 1], // a long header of another version, cut short
        &[0xff; 3],
        b"GET / HTTP/1.1\r\n\r\n",
    ];
    for d in cases {
        s.handle_datagram(Time::ZERO, from, d, Ecn::NotEct);
    }
    let st = s.stats();
    assert_eq!(st.datagrams, 6);
    assert_eq!(st.malformed + st.unknown_connection, 6, "{st:?}");
    assert!(st.malformed >= 4, "{st:?}");
    assert_eq!(s.sessions(), 0);
    let mut buf = [0u8; 2048];
    assert!(s.poll_transmit(Time::ZERO, &mut buf).is_none(), "no answer");
    // A token-less Initial under 1200 bytes gets no Retry (§14.1).
    let (first, _, _) = two_initials("198.51.100.7:50000");
    let mut short = first.clone();
    short.truncate(600);
    // Fix up the Length field? No: a cut packet is malformed; use the count.
    s.handle_datagram(Time::ZERO, from, &short, Ecn::NotEct);
    assert!(s.poll_transmit(Time::ZERO, &mut buf).is_none());
}

/// A small xorshift generator (deterministic fuzzing).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_and_mutated_datagrams_never_panic_and_never_create_a_session() {
    let from = "198.51.100.7:50000";
    let attacker = a("203.0.113.66:4444");
    let (first, second, mut s) = two_initials(from);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = vec![0u8; 65_535];
    let mut retries = 0;
    for i in 0..20_000u64 {
        let d: Vec<u8> = match i % 4 {
            // Random bytes of random length.
            0 => (0..rng.next() % 1500).map(|_| rng.next() as u8).collect(),
            // The token-less Initial with 1-8 bytes changed.
            1 => mutate(&first, &mut rng),
            // The token Initial from its own address with bytes of what the
            // token authenticates changed (the DCID, the token). Changes
            // elsewhere (padding) leave a valid Initial from a validated
            // address, which rightly gets a session.
            2 => {
                let mut m = second.clone();
                let (_, t) = token_span(&second);
                for _ in 0..=rng.next() % 4 {
                    let spots = 8 + t.len();
                    let k = (rng.next() as usize) % spots;
                    let i = if k < 8 { 6 + k } else { t.start + k - 8 };
                    m[i] ^= 1 << (rng.next() % 8);
                }
                if m == second {
                    continue; // two flips of one bit: the genuine datagram
                }
                m
            }
            // The genuine token Initial from another address.
            _ => second.clone(),
        };
        let src = if i % 4 == 2 { a(from) } else { attacker };
        s.handle_datagram(Time::from_micros(i), src, &d, Ecn::NotEct);
        while let Some((n, to, _)) = s.poll_transmit(Time::from_micros(i), &mut buf) {
            // Stateless answers only, never larger than what they answer.
            assert!(is_retry(&buf[..n]) && n < 1200, "{n} bytes to {to}");
            retries += 1;
        }
        assert_eq!(s.sessions(), 0, "datagram {i} created a session: {d:02x?}");
    }
    let st = s.stats();
    assert_eq!(st.sessions_accepted, 0, "{st:?}");
    assert!(st.malformed > 1000, "{st:?}");
    assert!(st.invalid_tokens > 1000, "{st:?}");
    assert!(retries > 0, "mutated token-less Initials still get Retries");
}

/// `d` with 1 to 8 random bytes (after the first 5) flipped.
fn mutate(d: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut m = d.to_vec();
    for _ in 0..=rng.next() % 8 {
        // Mostly the header and token; sometimes anywhere.
        let span = if rng.next().is_multiple_of(4) {
            m.len()
        } else {
            64
        };
        let i = 5 + (rng.next() as usize) % (span - 5);
        m[i] ^= 1 << (rng.next() % 8);
    }
    m
}

/// An Initial from `addr` carrying a valid token: the client's Initial
/// after `s`'s Retry, as sent at `now`. With it, `addr` owns a session.
fn validated_initial(s: &mut Server, addr: &str, now: Time, seed: u64) -> Vec<u8> {
    let mut c = client("cubic", now, seed, 1);
    let mut buf = vec![0u8; 65_535];
    let (n, _, _) = c.poll_transmit(now, &mut buf).unwrap();
    s.handle_datagram(now, a(addr), &buf[..n], Ecn::NotEct);
    let (rn, _, _) = s.poll_transmit(now, &mut buf).expect("a Retry");
    let retry = buf[..rn].to_vec();
    c.handle_datagram(now, a(SERVER), &retry, Ecn::NotEct);
    let (n, _, _) = c.poll_transmit(now, &mut buf).unwrap();
    buf[..n].to_vec()
}

/// A 1200-byte Initial of PADDING only, to the connection ID and with the
/// token of `validated` (an Initial from [`validated_initial`]), numbered `pn`.
fn padding_initial(validated: &[u8], pn: u32) -> Vec<u8> {
    let (_, t) = token_span(validated);
    let h = Header::Long(LongHeader {
        ty: LongType::Initial {
            token: &validated[t],
        },
        dcid: &validated[6..14],
        scid: &validated[15..23],
        pn: TruncatedPn::new(pn, 4).unwrap(),
    });
    let mut buf = vec![0u8; 1500];
    let mut b = PacketBuilder::new(&mut buf, &h).unwrap();
    b.pad_to(1200).unwrap();
    let n = b.finish().unwrap();
    buf.truncate(n);
    buf
}

/// Advance `s` to `now`: its due timers, then its answers (discarded).
fn tick(s: &mut Server, now: Time) {
    if s.poll_timeout().is_some_and(|t| t <= now) {
        s.handle_timeout(now);
    }
    let mut buf = vec![0u8; 65_535];
    while s.poll_transmit(now, &mut buf).is_some() {}
}

#[test]
fn a_session_without_a_handshake_is_dropped_at_the_handshake_timeout_and_not_reported() {
    // `--once`: a session that never completes its handshake must not end the server either.
    let mut s = Server::new(
        ServerConfig {
            stop_after: Some(1),
            ..ServerConfig::default()
        },
        TokenKey::from_keys([7; 16], [8; 16], Dur::from_secs(10)),
    );
    let attacker = "203.0.113.66:4444";
    let first = validated_initial(&mut s, attacker, Time::ZERO, 21);
    s.handle_datagram(Time::ZERO, a(attacker), &first, Ecn::NotEct);
    assert_eq!((s.sessions(), s.stats().sessions_accepted), (1, 1));
    // Padding-only Initials every 500 ms keep the connection from idling
    // out (10 s); only the handshake timeout (5 s) ends it.
    let mut dropped_at = None;
    for i in 1..=60u32 {
        let now = Time::from_millis(u64::from(i) * 500);
        tick(&mut s, now);
        if s.sessions() == 0 {
            dropped_at.get_or_insert(now);
            continue;
        }
        s.handle_datagram(now, a(attacker), &padding_initial(&first, i), Ecn::NotEct);
        tick(&mut s, now);
    }
    assert_eq!(dropped_at, Some(Time::from_secs(5)), "{:?}", s.stats());
    let st = s.stats().clone();
    assert_eq!(st.handshake_timeouts, 1, "{st:?}");
    assert_eq!((st.sessions_connected, st.sessions_ended), (0, 0), "{st:?}");
    assert!(
        s.take_finished().is_empty(),
        "no report of a session that never was one"
    );
    assert!(s.take_connected().is_empty());
    assert!(!s.is_done(), "--once waits for a real session");
    assert_eq!(
        s.sessions_from(a(attacker)),
        0,
        "its per-address count is released"
    );
    // A real client is served after it, and is session 1.
    let mut net = Net::new(s);
    net.now = Time::from_secs(31);
    net.add("198.51.100.7:50000", client("cubic", net.now, 1, 1));
    net.run(Time::from_secs(35));
    let st = net.server.stats().clone();
    assert_eq!((st.sessions_connected, st.sessions_ended), (1, 1), "{st:?}");
    assert_eq!(
        net.server.take_connected(),
        vec![(1, a("198.51.100.7:50000"))]
    );
    let f = net.server.take_finished();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].number, 1);
    assert!(f[0].summary["bytes_delivered"].as_u64().unwrap() > 100_000);
    assert!(net.server.is_done());
}

#[test]
fn one_source_holds_at_most_its_per_address_limit_and_others_are_still_served() {
    let mut s = Server::new(
        ServerConfig {
            max_sessions: 8,
            max_sessions_per_address: 2,
            ..ServerConfig::default()
        },
        TokenKey::from_keys([7; 16], [8; 16], Dur::from_secs(10)),
    );
    // One host, five ports, each with a valid token.
    for port in 0..5u64 {
        let from = format!("203.0.113.66:{}", 4000 + port);
        let d = validated_initial(&mut s, &from, Time::ZERO, 30 + port);
        s.handle_datagram(Time::ZERO, a(&from), &d, Ecn::NotEct);
    }
    let st = s.stats().clone();
    assert_eq!(
        (st.sessions_accepted, st.sessions_refused_per_address),
        (2, 3),
        "{st:?}"
    );
    assert_eq!(st.sessions_refused, 0, "{st:?}");
    assert_eq!(s.last_refused(), Some(a("203.0.113.66:4004")));
    assert_eq!(s.sessions_from(a("203.0.113.66:1")), 2);
    // Another host still gets a session, and completes it.
    let mut net = Net::new(s);
    net.add("198.51.100.7:50000", client("cubic", Time::ZERO, 1, 1));
    net.run(Time::from_secs(3));
    let st = net.server.stats().clone();
    assert_eq!((st.sessions_connected, st.sessions_ended), (1, 1), "{st:?}");
    assert!(net.clients[0].1.acked() > 100_000);
}

#[test]
fn the_per_address_limit_counts_an_ipv4_address_and_an_ipv6_64() {
    let key = |s: &str| source_key(s.parse().unwrap());
    assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:1:2:3"));
    assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
    assert_eq!(
        key("::ffff:192.0.2.7"),
        key("192.0.2.7"),
        "IPv4-mapped is IPv4"
    );
    assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
}

#[test]
fn a_client_that_gets_no_answer_before_its_duration_ends_fails() {
    // `send -t 2` to nobody: the duration (2 s) comes before the connect
    // timeout (5 s); the run must still fail, not end as a 0-byte success.
    let mut c = client("cubic", Time::ZERO, 1, 2);
    let mut buf = vec![0u8; 65_535];
    let mut now = Time::ZERO;
    while !c.is_done() {
        while c.poll_transmit(now, &mut buf).is_some() {}
        let Some(t) = c.poll_timeout() else { break };
        now = now.max(t);
        c.handle_timeout(now);
    }
    assert_eq!(now, Time::from_secs(2));
    assert_eq!(
        c.failure(),
        Some(Failure::NoAnswer {
            waited: Dur::from_secs(2)
        })
    );
}

#[test]
fn a_client_whose_data_is_never_acknowledged_fails_as_nothing_delivered() {
    // The server completes the handshake, then hears nothing more: every
    // datagram after the handshake is lost.
    let mut net = Net::new(server(4));
    net.add("198.51.100.7:50000", client("cubic", Time::ZERO, 1, 2));
    // Up to the handshake.
    while net.clients[0].1.connected_at().is_none() {
        let before = net.now;
        net.run(net.now);
        if net.now == before {
            net.now += Dur::from_micros(10);
        }
    }
    let mut c = net.clients.remove(0).1;
    let mut buf = vec![0u8; 65_535];
    let mut now = net.now;
    while !c.is_done() {
        while c.poll_transmit(now, &mut buf).is_some() {}
        let Some(t) = c.poll_timeout() else { break };
        now = now.max(t);
        c.handle_timeout(now);
    }
    assert_eq!(c.acked(), 0);
    assert_eq!(c.failure(), Some(Failure::NothingDelivered));
}

// ---------------------------------------------------------------- -R, -P

/// `send -R`: a client asking the server to send `app` with `cc`.
fn reverse_client(
    cc: &str,
    app: QuicApp,
    seed: u64,
    secs: u64,
    request: Option<[u8; 24]>,
) -> Client {
    let req = Request {
        reverse: true,
        cc: cc.into(),
        ecn: true,
        codepoint: None,
        ecn_validation: true,
        app,
    };
    let cfg = ConnectionConfig {
        seed,
        app_request: Some(request.unwrap_or_else(|| req.encode())),
        ..ConnectionConfig::default()
    };
    let flow = ("send".to_string(), app, true);
    Client::with_flow(
        cfg,
        Time::ZERO,
        a(SERVER),
        flow,
        Dur::from_secs(secs),
        Dur::from_secs(5),
    )
    .unwrap()
}

#[test]
fn with_reverse_the_server_sends_with_the_clients_controller_and_the_client_receives() {
    let mut net = Net::new(server(4));
    let file = QuicApp::File { size: 300_000 };
    net.add(
        "198.51.100.7:50000",
        reverse_client("prague", file, 1, 5, None),
    );
    net.run(Time::from_secs(5));
    let c = &net.clients[0].1;
    assert!(c.conn.app_request_accepted());
    assert_eq!(c.acked(), 300_000, "the whole file arrived here");
    assert!(
        c.completed_at().is_some(),
        "and its FIN: the client stopped"
    );
    assert_eq!(c.failure(), None);
    let st = net.server.stats().clone();
    assert_eq!((st.reverse_sessions, st.requests_refused), (1, 0), "{st:?}");
    let f = net.server.take_finished();
    let flow = &f[0].summary;
    assert_eq!(
        flow["cc"], "prague",
        "the server ran the client's controller: {flow}"
    );
    assert_eq!(flow["direction"], "down");
    assert_eq!(flow["reverse"], true);
    // The server's sender counts what the client acknowledged in order.
    assert_eq!(flow["bytes_delivered"], 300_000);
    assert!(
        flow["app_metrics"]["client"]["ecn"]["ect1_sent"]
            .as_u64()
            .unwrap()
            > 0,
        "{flow}"
    );
}

#[test]
fn a_request_the_server_cannot_read_is_refused_by_a_close_the_client_reports() {
    let mut bytes = Request {
        reverse: true,
        cc: "cubic".into(),
        ecn: true,
        codepoint: None,
        ecn_validation: true,
        app: QuicApp::Bulk,
    }
    .encode();
    bytes[0] = 9; // a later layout
    let mut net = Net::new(server(4));
    net.add(
        "198.51.100.7:50000",
        reverse_client("cubic", QuicApp::Bulk, 1, 5, Some(bytes)),
    );
    net.run(Time::from_secs(5));
    let c = &net.clients[0].1;
    assert!(c.is_done());
    assert!(
        matches!(c.failure(), Some(Failure::ClosedByPeer { error_code }) if error_code == REFUSED),
        "{:?}",
        c.failure()
    );
    let st = net.server.stats().clone();
    assert_eq!(
        (st.requests_refused, st.sessions_connected),
        (1, 0),
        "{st:?}"
    );
}

#[test]
fn an_older_server_that_ignores_the_request_is_left_at_once_not_waited_for() {
    // A server without requests (an older l4slab serve): a plain
    // connection that completes the handshake and never sends.
    let mut old = Connection::server(ConnectionConfig::default(), Time::ZERO).unwrap();
    let mut c = reverse_client("cubic", QuicApp::Bulk, 1, 10, None);
    let mut buf = vec![0u8; 65_535];
    let mut now = Time::ZERO;
    while !c.is_done() && now < Time::from_secs(10) {
        while let Some((n, _, ecn)) = c.poll_transmit(now, &mut buf) {
            old.handle_datagram(now, a("198.51.100.7:50000"), &buf[..n], ecn);
        }
        while let Some((n, _, ecn)) = old.poll_transmit(now, &mut buf) {
            c.handle_datagram(now, a(SERVER), &buf[..n], ecn);
        }
        let Some(t) = [c.poll_timeout(), old.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        now = now.max(t) + Dur::from_micros(10);
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
        }
        if old.poll_timeout().is_some_and(|t| t <= now) {
            old.handle_timeout(now);
        }
    }
    assert!(c.connected_at().is_some());
    assert!(!c.conn.app_request_accepted());
    assert_eq!(c.failure(), Some(Failure::RequestNotTaken));
    // Closed at the handshake, done after the closing period: not -t 10.
    assert!(c.is_done() && now < Time::from_secs(2), "{now:?}");
}

#[test]
fn parallel_clients_on_one_socket_are_each_served_their_own_datagrams() {
    // -P 3: three connections from one address and port; the server sees
    // three sessions (its per-address limit counts connections).
    let mut net = Net::new(server(8));
    let clients: Vec<Client> = (1..=3)
        .map(|i| {
            let cfg = ConnectionConfig {
                seed: i,
                ..ConnectionConfig::default()
            };
            let flow = (format!("send-{i}"), QuicApp::Bulk, false);
            Client::with_flow(
                cfg,
                Time::ZERO,
                a(SERVER),
                flow,
                Dur::from_secs(1),
                Dur::from_secs(5),
            )
            .unwrap()
        })
        .collect();
    let mut group = Clients::new(clients);
    let mut buf = vec![0u8; 65_535];
    let mut now = Time::ZERO;
    let from = a("198.51.100.7:50000");
    while !group.is_done() && now < Time::from_secs(5) {
        if group.poll_timeout().is_some_and(|t| t <= now) {
            group.handle_timeout(now);
        }
        if net.server.poll_timeout().is_some_and(|t| t <= now) {
            net.server.handle_timeout(now);
        }
        let mut moved = false;
        while let Some((n, _, ecn)) = group.poll_transmit(now, &mut buf) {
            now += Dur::from_micros(10);
            net.server.handle_datagram(now, from, &buf[..n], ecn);
            moved = true;
        }
        while let Some((n, to, ecn)) = net.server.poll_transmit(now, &mut buf) {
            assert_eq!(to, from);
            group.handle_datagram(now, a(SERVER), &buf[..n], ecn);
            moved = true;
        }
        let next = [group.poll_timeout(), net.server.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            _ if moved => {}
            Some(t) => now = now.max(t),
            None => break,
        }
    }
    assert!(group.is_done());
    for c in &group.clients {
        assert_eq!(c.failure(), None, "{}", c.record.name);
        assert!(c.acked() > 50_000, "{}: {}", c.record.name, c.acked());
    }
    let st = net.server.stats().clone();
    assert_eq!(st.sessions_connected, 3, "{st:?}");
    net.server.end_all(now); // any still in its closing period
    let mut got: Vec<u64> = net
        .server
        .take_finished()
        .iter()
        .map(|f| f.summary["bytes_delivered"].as_u64().unwrap())
        .collect();
    assert_eq!(got.len(), 3);
    let mut sent: Vec<u64> = group.clients.iter().map(Client::acked).collect();
    got.sort_unstable();
    sent.sort_unstable();
    // Each session received at least what its own client saw acknowledged.
    assert!(
        got.iter().zip(&sent).all(|(g, s)| g >= s),
        "{got:?} {sent:?}"
    );
}
