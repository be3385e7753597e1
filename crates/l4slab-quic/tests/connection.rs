//! Side-to-end tests of the connection: two endpoints wired through a small
//! deterministic in-memory network, [`l4slab_core::testing::TestPath`]
//! (one-way delay, serialization rate, a loss pattern on the client's
//! datagrams, CE marking above a queue threshold, ECN bleaching).

use std::net::SocketAddr;

use l4slab_core::datagram::DatagramEndpoint;
// The path's ends are the connection's sides.
use l4slab_core::testing::{End as Side, Loss, TestLink, TestPath};
use l4slab_core::{Dur, Ecn, Rate, Time};
use l4slab_quic::connection::EcnFailure;
use l4slab_quic::wire::{Frame, Header, LongType, Packet, RetryPacket};
use l4slab_quic::{Connection, ConnectionConfig, EcnState, Event, ResumptionTicket, StreamId};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A link of one-way `delay_ms` at `mbps`.
fn link(delay_ms: u64, mbps: u64) -> TestLink {
    TestLink::new(Dur::from_millis(delay_ms)).rate(Rate::from_mbps(mbps))
}

/// Client to server over `c2s`, back over 10 ms at 100 Mbit/s.
fn path(c2s: TestLink) -> TestPath<Vec<u8>> {
    TestPath::asymmetric(c2s, link(10, 100))
}

/// Loses the client's datagrams `rule` picks (it sees only those).
fn client_loss(mut rule: impl FnMut(&[u8]) -> bool + 'static) -> Loss<Vec<u8>> {
    Loss::<Vec<u8>>::when(move |d| d.from == Side::Client && rule(d.payload))
}

/// (time, side, datagram length, ECN) of every datagram sent.
type Trace = Vec<(Time, Side, usize, Ecn)>;

struct Sim {
    now: Time,
    c: Connection,
    s: Connection,
    path: TestPath<Vec<u8>>,
    trace: Trace,
}

impl Sim {
    fn new(
        ccfg: ConnectionConfig,
        scfg: ConnectionConfig,
        ticket: Option<ResumptionTicket>,
        path: TestPath<Vec<u8>>,
    ) -> Self {
        Sim {
            now: Time::ZERO,
            c: Connection::client(ccfg, Time::ZERO, addr("10.0.0.2:443"), ticket).unwrap(),
            s: Connection::server(scfg, Time::ZERO).unwrap(),
            path,
            trace: Vec::new(),
        }
    }

    fn flush(&mut self) {
        let mut buf = [0u8; 2048];
        loop {
            let mut any = false;
            while let Some((n, _, ecn)) = self.c.poll_transmit(self.now, &mut buf) {
                self.trace.push((self.now, Side::Client, n, ecn));
                self.path
                    .send(self.now, Side::Client, buf[..n].to_vec(), ecn);
                any = true;
            }
            while let Some((n, _, ecn)) = self.s.poll_transmit(self.now, &mut buf) {
                self.trace.push((self.now, Side::Server, n, ecn));
                self.path
                    .send(self.now, Side::Server, buf[..n].to_vec(), ecn);
                any = true;
            }
            if !any {
                break;
            }
        }
    }

    /// Run until `until` or both are done; `app` sees every event (and a
    /// `None` tick each step) and may act on the connection.
    fn run(
        &mut self,
        until: Time,
        mut app: impl FnMut(Time, Side, Option<Event>, &mut Connection),
    ) {
        loop {
            for side in [Side::Client, Side::Server] {
                let conn = if side == Side::Client {
                    &mut self.c
                } else {
                    &mut self.s
                };
                while let Some(ev) = conn.poll_event() {
                    app(self.now, side, Some(ev), conn);
                }
                app(self.now, side, None, conn);
            }
            self.flush();
            let next = [
                self.path.next_arrival(),
                self.c.poll_timeout(),
                self.s.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else { break };
            if next > until || (self.c.is_done() && self.s.is_done()) {
                break;
            }
            self.now = self.now.max(next);
            let now = self.now;
            while let Some(a) = self.path.pop_due(Side::Server, now) {
                self.s
                    .handle_datagram(now, addr("10.0.0.1:1000"), &a.payload, a.ecn);
            }
            while let Some(a) = self.path.pop_due(Side::Client, now) {
                self.c
                    .handle_datagram(now, addr("10.0.0.2:443"), &a.payload, a.ecn);
            }
            if self.c.poll_timeout().is_some_and(|t| t <= now) {
                self.c.handle_timeout(now);
            }
            if self.s.poll_timeout().is_some_and(|t| t <= now) {
                self.s.handle_timeout(now);
            }
        }
    }
}

fn cfg(cc: &str) -> ConnectionConfig {
    ConnectionConfig {
        cc: cc.into(),
        ..ConnectionConfig::default()
    }
}

/// A deterministic pseudo-random loss pattern (xorshift), probability `p`.
fn random_loss(seed: u64, p: f64) -> impl FnMut(&[u8]) -> bool {
    let mut x = seed | 1;
    move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Whether a datagram carries a STREAM frame for `id` at `offset`.
fn has_stream(d: &[u8], id: u64, offset: u64) -> bool {
    let mut rest = d;
    while let Ok((p, r)) = Packet::decode(rest, 8) {
        for f in p.frames().flatten() {
            if let Frame::Stream(s) = f {
                if s.stream_id == id && s.offset == offset {
                    return true;
                }
            }
        }
        rest = r;
    }
    false
}

// ------------------------------------------------------------- handshake

/// The Destination and Source CIDs, the token and the packet number of the
/// Initial at the start of `d`.
fn initial_fields(d: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>, u32) {
    let (p, _) = Packet::decode(d, 8).unwrap();
    let Header::Long(h) = *p.header() else {
        panic!("not a long header")
    };
    let LongType::Initial { token } = h.ty else {
        panic!("not an Initial")
    };
    (
        h.dcid.to_vec(),
        h.scid.to_vec(),
        token.to_vec(),
        h.pn.value(),
    )
}

#[test]
fn a_close_after_the_handshake_reaches_the_peer_which_drains() {
    let mut sim = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        None,
        TestPath::new(link(10, 100)),
    );
    let mut closed_at = None;
    sim.run(Time::from_millis(500), |now, side, ev, conn| {
        if let (Side::Client, Some(Event::Connected)) = (side, ev) {
            let id = conn.open_stream().unwrap();
            conn.write(id, 2_000_000).unwrap();
        }
        if side == Side::Client && closed_at.is_none() && now >= Time::from_millis(100) {
            conn.close(now, 7);
            closed_at = Some(now);
        }
        if let (Side::Server, Some(Event::Closed(r))) = (side, ev) {
            assert_eq!(
                r,
                l4slab_quic::CloseReason::Peer {
                    error_code: 7,
                    application: true
                }
            );
        }
    });
    assert!(closed_at.is_some());
    // RFC 9000 §10.2: the client's CONNECTION_CLOSE (1-RTT, still keyed
    // while closing) arrived; both are done after their 3-PTO periods.
    assert!(sim.s.is_done() && sim.c.is_done());
    assert_eq!(sim.s.state(), l4slab_quic::HandshakeState::Closed);
}

#[test]
fn an_app_request_reaches_a_server_that_takes_it_and_an_older_one_says_nothing() {
    let request: [u8; l4slab_quic::APP_REQUEST_LEN] = core::array::from_fn(|i| 100 + i as u8);
    for accepts in [true, false] {
        let ccfg = ConnectionConfig {
            app_request: Some(request),
            ..cfg("cubic")
        };
        let scfg = ConnectionConfig {
            accept_app_request: accepts,
            ..cfg("cubic")
        };
        let mut sim = Sim::new(ccfg, scfg, None, TestPath::new(link(10, 100)));
        sim.run(Time::from_millis(200), |_, _, _, _| {});
        assert!(sim.c.is_established() && sim.s.is_established());
        // The server sees the request either way; only one that takes
        // requests says so, and the client tells the difference.
        assert_eq!(sim.s.peer_app_request(), Some(request));
        assert_eq!(sim.c.app_request_accepted(), accepts);
    }
    // Without a request nothing is said, even by a server that takes them.
    let scfg = ConnectionConfig {
        accept_app_request: true,
        ..cfg("cubic")
    };
    let mut sim = Sim::new(cfg("cubic"), scfg, None, TestPath::new(link(10, 100)));
    sim.run(Time::from_millis(200), |_, _, _, _| {});
    assert!(sim.c.is_established());
    assert_eq!(sim.s.peer_app_request(), None);
    assert!(!sim.c.app_request_accepted());
}

#[test]
fn a_client_follows_one_retry_and_the_handshake_completes_through_it() {
    let server = addr("10.0.0.2:443");
    let mut c = Connection::client(cfg("cubic"), Time::ZERO, server, None).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _, _) = c.poll_transmit(Time::ZERO, &mut buf).unwrap();
    let (odcid, client_cid, token, pn0) = initial_fields(&buf[..n]);
    assert!(token.is_empty(), "no token before a Retry");
    let retry_cid = [0xab; 8];
    let mut r = [0u8; 256];
    let rn = RetryPacket {
        dcid: &client_cid,
        scid: &retry_cid,
        token: b"opaque-token",
    }
    .encode(&odcid, &mut r)
    .unwrap();
    // RFC 9001 §5.8: a damaged integrity tag is discarded.
    let mut bad = r;
    bad[rn - 1] ^= 1;
    let t = Time::from_millis(10);
    c.handle_datagram(t, server, &bad[..rn], Ecn::NotEct);
    assert_eq!((c.stats().retries, c.stats().retries_discarded), (0, 1));
    c.handle_datagram(t, server, &r[..rn], Ecn::NotEct);
    assert_eq!(c.stats().retries, 1);
    assert!(c.retried());
    // §17.2.5.2: the next Initial goes to the Retry's SCID with the token,
    // the ClientHello again from offset 0, and the packet number goes on.
    let (n2, _, ecn) = c.poll_transmit(t, &mut buf).unwrap();
    assert!(n2 >= 1200, "padded Initial");
    let (dcid2, scid2, token2, pn1) = initial_fields(&buf[..n2]);
    assert_eq!(dcid2, retry_cid);
    assert_eq!(scid2, client_cid);
    assert_eq!(token2, b"opaque-token");
    assert!(pn1 > pn0);
    let (p, _) = Packet::decode(&buf[..n2], 8).unwrap();
    assert!(p
        .frames()
        .flatten()
        .any(|f| matches!(f, Frame::Crypto { offset: 0, .. })));
    let second = buf[..n2].to_vec();
    // §17.2.5.2: at most one Retry per connection attempt.
    c.handle_datagram(t, server, &r[..rn], Ecn::NotEct);
    assert_eq!((c.stats().retries, c.stats().retries_discarded), (1, 2));

    // The server made for the token's Initial (stateless before it): its
    // CID is the Retry's, the address counts as validated (no 3x limit).
    let mut local = [0u8; 8];
    local.copy_from_slice(&retry_cid);
    let mut orig = [0u8; 8];
    orig.copy_from_slice(&odcid);
    let mut sim = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        None,
        TestPath::new(link(10, 100)),
    );
    sim.now = t;
    sim.c = c;
    sim.s = Connection::server_after_retry(cfg("cubic"), t, local, orig).unwrap();
    sim.path.send(t, Side::Client, second.to_vec(), ecn);
    let mut connected = [None, None];
    let mut delivered = 0;
    sim.run(Time::from_millis(300), |now, side, ev, conn| match ev {
        Some(Event::Connected) => {
            connected[usize::from(side == Side::Server)] = Some(now);
            if side == Side::Client {
                let id = conn.open_stream().unwrap();
                conn.write(id, 50_000).unwrap();
                conn.finish(id).unwrap();
            }
        }
        Some(Event::StreamData {
            new_in_order_bytes, ..
        }) if side == Side::Server => delivered += new_in_order_bytes,
        _ => {}
    });
    // One RTT (20 ms) after the second Initial left at 10 ms.
    let tc = connected[0].expect("client connected");
    assert!(
        tc >= Time::from_millis(30) && tc < Time::from_millis(32),
        "{tc}"
    );
    assert!(connected[1].is_some(), "server connected");
    assert_eq!(delivered, 50_000);
    assert_eq!(sim.s.stats().retries, 0);
    assert_eq!(sim.s.local_cid(), local);
    assert_eq!(sim.s.stats().unvalidated_sent, 0, "validated by the token");
}

#[test]
fn handshake_completes_in_one_rtt_within_the_amplification_limit() {
    // 10 ms each way, 100 Mbit/s: RTT ≈ 20 ms.
    let mut sim = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        None,
        TestPath::new(link(10, 100)),
    );
    let mut t_client = None;
    let mut t_server = None;
    let mut t_data = None;
    let mut amp_ok = true;
    sim.run(Time::from_millis(200), |now, side, ev, conn| {
        let st = conn.stats();
        amp_ok &= st.unvalidated_sent <= 3 * st.unvalidated_received;
        match (side, ev) {
            (Side::Client, Some(Event::Connected)) => {
                t_client = Some(now);
                let id = conn.open_stream().unwrap();
                assert_eq!(conn.write(id, 1000).unwrap(), 1000);
                conn.finish(id).unwrap();
            }
            (Side::Server, Some(Event::Connected)) => t_server = Some(now),
            (Side::Server, Some(Event::StreamData { .. })) => t_data = Some(now),
            _ => {}
        }
    });
    let (tc, ts, td) = (t_client.unwrap(), t_server.unwrap(), t_data.unwrap());
    // One round trip plus serialization of ~4 datagrams at 100 Mbit/s.
    assert!(
        tc >= Time::from_millis(20) && tc < Time::from_millis(21),
        "client connected at {tc}"
    );
    assert!(
        ts >= Time::from_millis(30) && ts < Time::from_millis(31),
        "server connected at {ts}"
    );
    // The client's 1-RTT data left at 1 RTT and arrives at 1.5 RTT.
    assert!(td < Time::from_millis(31), "first stream data at {td}");
    assert!(amp_ok, "amplification limit exceeded");
    // §14.1: the client's Initial datagram is padded to 1200 bytes.
    let first = sim.trace.iter().find(|x| x.1 == Side::Client).unwrap();
    assert!(first.2 >= 1200);
    // The server's first flight was within 3 × 1200.
    let server_first: usize = sim
        .trace
        .iter()
        .filter(|x| x.1 == Side::Server && x.0 < Time::from_millis(11))
        .map(|x| x.2)
        .sum();
    assert!(
        server_first <= 3600 && server_first > 1200,
        "server first flight {server_first} B"
    );
    let s = sim.s.stats();
    assert!(s.handshake_time.is_some());
    assert!(
        sim.c.resumption_ticket().is_some(),
        "NEW_TOKEN ticket received"
    );
}

#[test]
fn zero_rtt_data_arrives_in_the_first_rtt() {
    let mut first = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        None,
        TestPath::new(link(10, 100)),
    );
    first.run(Time::from_millis(100), |_, _, _, _| {});
    let ticket = first.c.resumption_ticket().expect("ticket");
    let mut sim = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        Some(ticket),
        TestPath::new(link(10, 100)),
    );
    let id = sim
        .c
        .open_stream()
        .expect("0-RTT stream from the remembered limits");
    assert_eq!(sim.c.write(id, 5000).unwrap(), 5000);
    sim.c.finish(id).unwrap();
    let mut got = 0;
    let mut t_done = None;
    let mut accepted = false;
    sim.run(Time::from_millis(200), |now, side, ev, _| {
        match (side, ev) {
            (
                Side::Server,
                Some(Event::StreamData {
                    new_in_order_bytes, ..
                }),
            ) => got += new_in_order_bytes,
            (Side::Server, Some(Event::StreamFinished(_))) => t_done = Some(now),
            (Side::Client, Some(Event::ZeroRttAccepted)) => accepted = true,
            _ => {}
        }
    });
    assert!(accepted);
    assert_eq!(got, 5000);
    let t = t_done.unwrap();
    assert!(
        t < Time::from_millis(12),
        "0-RTT data complete at {t} (one-way delay 10 ms)"
    );
    assert_eq!(sim.s.stats().zero_rtt_bytes_accepted, 5000);
}

// ------------------------------------------------------------- bulk + loss

fn bulk(cc: &str, total: u64, path: TestPath<Vec<u8>>, until_ms: u64) -> (Sim, u64, Option<Time>) {
    let mut sim = Sim::new(cfg(cc), cfg(cc), None, path);
    let mut stream = None;
    let mut written = 0u64;
    let mut delivered = 0u64;
    let mut done = None;
    sim.run(Time::from_millis(until_ms), |now, side, ev, conn| {
        match (side, ev) {
            (Side::Client, Some(Event::Connected)) => stream = Some(conn.open_stream().unwrap()),
            (Side::Client, None) => {
                if let Some(id) = stream {
                    if written < total {
                        written += conn.write(id, total - written).unwrap();
                        if written == total {
                            conn.finish(id).unwrap();
                        }
                    }
                }
            }
            (
                Side::Server,
                Some(Event::StreamData {
                    new_in_order_bytes, ..
                }),
            ) => delivered += new_in_order_bytes,
            (Side::Server, Some(Event::StreamFinished(_))) => done = Some(now),
            _ => {}
        }
    });
    (sim, delivered, done)
}

#[test]
fn bulk_transfer_under_one_percent_loss_delivers_exactly() {
    let total = 2 << 20;
    let path = path(link(10, 20)).with_loss(client_loss(random_loss(7, 0.01)));
    let (sim, delivered, done) = bulk("cubic", total, path, 20_000);
    let c = sim.c.stats();
    eprintln!("{}", c.report());
    assert_eq!(delivered, total);
    assert!(done.is_some());
    assert!(
        c.packets_lost > 0 && c.lost_by_packet_threshold > 0,
        "{c:?}"
    );
    assert!(c.retransmitted_bytes > 0);
    assert_eq!(sim.s.stats().stream_bytes_delivered, total);
}

#[test]
fn tail_loss_is_recovered_by_pto() {
    // Drop the first transmission of every datagram carrying the last 3000
    // bytes of a short transfer: no later packet reveals them, only a PTO does.
    let total = 20_000;
    let mut seen = std::collections::BTreeSet::new();
    let loss = client_loss(move |d| {
        let mut drop = false;
        let mut rest = d;
        while let Ok((p, r)) = Packet::decode(rest, 8) {
            for f in p.frames().flatten() {
                if let Frame::Stream(s) = f {
                    if s.offset + s.data.len() as u64 > total - 3000 && seen.insert(s.offset) {
                        drop = true;
                    }
                }
            }
            rest = r;
        }
        drop
    });
    let (sim, delivered, done) = bulk("reno", total, path(link(10, 20)).with_loss(loss), 5_000);
    let c = sim.c.stats();
    eprintln!("{}", c.report());
    assert_eq!(delivered, total);
    assert!(done.is_some());
    assert!(c.pto_count > 0 && c.packets_lost > 0, "{c:?}");
}

#[test]
fn a_loss_on_one_stream_does_not_delay_another() {
    let run = |lose: bool| {
        let mut path = path(link(10, 100));
        let mut dropped = false;
        if lose {
            path = path.with_loss(client_loss(move |d| {
                if !dropped && has_stream(d, 0, 0) {
                    dropped = true;
                    return true;
                }
                false
            }));
        }
        let mut sim = Sim::new(cfg("cubic"), cfg("cubic"), None, path);
        let mut fin = [None, None];
        sim.run(Time::from_millis(1000), |now, side, ev, conn| {
            match (side, ev) {
                (Side::Client, Some(Event::Connected)) => {
                    for _ in 0..2 {
                        let id = conn.open_stream().unwrap();
                        conn.write(id, 4000).unwrap();
                        conn.finish(id).unwrap();
                    }
                }
                (Side::Server, Some(Event::StreamFinished(StreamId(id)))) => {
                    fin[(id / 4) as usize] = Some(now)
                }
                _ => {}
            }
        });
        (fin[0].unwrap(), fin[1].unwrap())
    };
    let (a0, b0) = run(false);
    let (a1, b1) = run(true);
    // B completes no later than without the loss (a little earlier: the
    // dropped datagram no longer occupies the link ahead of B's).
    assert!(
        b1 <= b0,
        "stream B is not delayed by stream A's loss: {b0} -> {b1}"
    );
    assert!(
        a1 > a0 + Dur::from_millis(5),
        "stream A waits for its retransmission: {a0} -> {a1}"
    );
    assert!(b1 < a1);
}

// ------------------------------------------------------------- ECN

#[test]
fn bleaching_fails_validation_and_later_packets_are_not_ect() {
    let (sim, delivered, _) = bulk("prague", 200_000, path(link(10, 20).bleach()), 3_000);
    assert_eq!(delivered, 200_000);
    assert_eq!(
        sim.c.ecn_state(),
        EcnState::Failed(EcnFailure::CountsMissing)
    );
    let client: Vec<_> = sim.trace.iter().filter(|x| x.1 == Side::Client).collect();
    assert_eq!(client[0].3, Ecn::Ect1, "prague marks ECT(1)");
    let marked = client.iter().filter(|x| x.3 != Ecn::NotEct).count();
    assert!(
        marked <= 10,
        "at most the testing period is marked: {marked}"
    );
    assert!(client.iter().rev().take(50).all(|x| x.3 == Ecn::NotEct));
}

/// cwnd samples (time, bytes) of the client during a marked bulk transfer.
fn marked_bulk(cc: &str) -> (Sim, Vec<(Time, u64)>) {
    let total = 3 << 20;
    // CE above ~5 packets of backlog (a step AQM at 20 Mbit/s ≈ 2.4 ms).
    let mut sim = Sim::new(
        cfg(cc),
        cfg(cc),
        None,
        path(link(10, 20).mark_ce_above(6000)),
    );
    let mut stream = None;
    let mut written = 0u64;
    let mut samples = Vec::new();
    sim.run(Time::from_millis(3_000), |now, side, ev, conn| {
        if side != Side::Client {
            return;
        }
        if let Some(Event::Connected) = ev {
            stream = Some(conn.open_stream().unwrap());
        }
        if let Some(id) = stream {
            if written < total {
                written += conn.write(id, total - written).unwrap();
            }
        }
        if samples.last().is_none_or(|&(_, c)| c != conn.cwnd()) {
            samples.push((now, conn.cwnd()));
        }
    });
    (sim, samples)
}

#[test]
fn prague_shrinks_in_proportion_to_marking_cubic_once_per_rtt() {
    let (p, ps) = marked_bulk("prague");
    let pst = p.c.stats();
    eprintln!("prague: {}", pst.report());
    assert_eq!(pst.ecn_state, EcnState::Capable);
    assert!(pst.ce_reported > 0);
    assert_eq!(pst.packets_lost, 0);
    assert_eq!(
        pst.congestion_events_ce, 0,
        "no classic reductions for a scalable controller"
    );
    // Reductions happen, and none halves the window.
    let drops: Vec<f64> = ps
        .windows(2)
        .filter(|w| w[1].1 < w[0].1)
        .map(|w| w[1].1 as f64 / w[0].1 as f64)
        .collect();
    assert!(!drops.is_empty());
    assert!(drops.iter().all(|&r| r > 0.6), "prague drops {drops:?}");

    let (c, cs) = marked_bulk("cubic");
    let cst = c.c.stats();
    eprintln!("cubic: {}", cst.report());
    assert_eq!(cst.ecn_state, EcnState::Capable);
    assert!(cst.congestion_events_ce > 0);
    assert_eq!(cst.packets_lost, 0);
    // One reduction per round trip: successive reductions at least min_rtt apart.
    let times: Vec<Time> = cs
        .windows(2)
        .filter(|w| (w[1].1 as f64) < 0.9 * w[0].1 as f64)
        .map(|w| w[1].0)
        .collect();
    assert_eq!(times.len() as u64, cst.congestion_events_ce, "{times:?}");
    assert!(
        times
            .windows(2)
            .all(|w| w[1].saturating_since(w[0]) >= cst.min_rtt),
        "{times:?}"
    );
}

// ------------------------------------------------------------- determinism

#[test]
fn same_inputs_give_identical_outputs() {
    let go = || {
        let path = path(link(10, 20)).with_loss(client_loss(random_loss(3, 0.02)));
        let (sim, delivered, done) = bulk("bbr", 300_000, path, 10_000);
        (sim.trace, delivered, done, sim.c.report(), sim.s.report())
    };
    let a = go();
    let b = go();
    assert_eq!(a.1, 300_000);
    assert!(a == b);
}

// ------------------------------------------------------------- fuzz

fn recorded_datagrams() -> Vec<(Side, Vec<u8>)> {
    let mut sim = Sim::new(
        cfg("cubic"),
        cfg("cubic"),
        None,
        TestPath::new(link(5, 100)),
    );
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    // Capture the first exchanges by hand.
    for _ in 0..6 {
        while let Some((n, _, _)) = sim.c.poll_transmit(sim.now, &mut buf) {
            out.push((Side::Client, buf[..n].to_vec()));
            sim.s
                .handle_datagram(sim.now, addr("10.0.0.1:1000"), &buf[..n], Ecn::Ect0);
        }
        while let Some((n, _, _)) = sim.s.poll_transmit(sim.now, &mut buf) {
            out.push((Side::Server, buf[..n].to_vec()));
            sim.c
                .handle_datagram(sim.now, addr("10.0.0.2:443"), &buf[..n], Ecn::Ect0);
        }
        if sim.c.is_established() {
            if let Ok(id) = sim.c.open_stream() {
                let _ = sim.c.write(id, 3000);
            }
        }
        sim.now += Dur::from_nanos(5 * MS);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_datagrams_never_panic(data in proptest::collection::vec(any::<u8>(), 0..1500), ecn in 0u8..4) {
        for mut conn in [
            Connection::server(cfg("cubic"), Time::ZERO).unwrap(),
            Connection::client(cfg("prague"), Time::ZERO, addr("10.0.0.2:443"), None).unwrap(),
        ] {
            conn.handle_datagram(Time::from_millis(1), addr("10.0.0.9:9"), &data, Ecn::from_bits(ecn));
            let mut buf = [0u8; 1500];
            while conn.poll_transmit(Time::from_millis(1), &mut buf).is_some() {}
            if let Some(t) = conn.poll_timeout() { conn.handle_timeout(t); }
        }
    }

    #[test]
    fn mutated_datagrams_never_panic(idx in 0usize..64, flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..8), trunc in any::<u16>()) {
        thread_local! { static REC: Vec<(Side, Vec<u8>)> = recorded_datagrams(); }
        REC.with(|rec| {
            // Replay the exchange up to `idx`, mutating that datagram.
            let mut c = Connection::client(cfg("cubic"), Time::ZERO, addr("10.0.0.2:443"), None).unwrap();
            let mut s = Connection::server(cfg("cubic"), Time::ZERO).unwrap();
            let mut buf = [0u8; 2048];
            let _ = c.poll_transmit(Time::ZERO, &mut buf);
            let k = idx % rec.len();
            for (i, (side, d)) in rec.iter().enumerate().take(k + 1) {
                let mut d = d.clone();
                if i == k {
                    for &(pos, b) in &flips {
                        if !d.is_empty() { let p = pos as usize % d.len(); d[p] ^= b; }
                    }
                    d.truncate(trunc as usize % (d.len() + 1));
                }
                let t = Time::from_millis(i as u64);
                match side {
                    Side::Client => s.handle_datagram(t, addr("10.0.0.1:1000"), &d, Ecn::Ect0),
                    Side::Server => c.handle_datagram(t, addr("10.0.0.2:443"), &d, Ecn::Ce),
                }
                while c.poll_transmit(t, &mut buf).is_some() {}
                while s.poll_transmit(t, &mut buf).is_some() {}
            }
            for conn in [&mut c, &mut s] {
                if let Some(t) = conn.poll_timeout() { conn.handle_timeout(t); }
                let _ = conn.report();
            }
        });
    }
}
