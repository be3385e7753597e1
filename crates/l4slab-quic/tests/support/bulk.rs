//! A bulk transfer between two [`Connection`]s over an in-memory path, for
//! the allocation test (`tests/alloc.rs`) and the bench
//! (`examples/quic_bench.rs`).
//!
//! The client opens `streams` streams once the handshake is done and writes
//! its share of an endless transfer on each; the server reads. Client to
//! server is the bottleneck: a serialization rate, a drop-tail buffer of
//! `buffer_pkts` datagrams, optional random loss; the way back has the same
//! one-way delay and no rate limit. Both lanes are rings of fixed-size
//! slots, so once they have grown to the largest backlog the path itself
//! allocates nothing (the allocation test counts the connections only).
//! Deterministic: the same config gives the same datagrams.

#![allow(dead_code)]

use std::net::SocketAddr;

use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Dur, Ecn, Rate, Time};
use l4slab_quic::{Connection, ConnectionConfig, Event, StreamId};

/// Bytes a slot holds (the connections send at most `max_datagram_size`).
const SLOT: usize = 1500;

#[derive(Debug, Clone)]
pub struct BulkConfig {
    pub cc: String,
    /// Bottleneck rate, client to server.
    pub rate: Rate,
    /// One-way delay, each way.
    pub one_way: Dur,
    /// Drop-tail buffer at the bottleneck, in datagrams.
    pub buffer_pkts: u64,
    /// Random loss on the bottleneck, parts per million.
    pub loss_ppm: u32,
    pub streams: usize,
    pub seed: u64,
    /// The server's receive windows (RFC 9000 §18.2 initial_max_data and
    /// initial_max_stream_data_bidi_*): small ones make the client wait
    /// for MAX_DATA / MAX_STREAM_DATA.
    pub max_data: u64,
    pub max_stream_data: u64,
}

impl BulkConfig {
    /// A path whose bandwidth-delay product is `bdp_pkts` 1,200-byte
    /// datagrams at a 100 ms RTT, with a buffer of one BDP.
    pub fn with_bdp(bdp_pkts: u64, streams: usize) -> Self {
        // bdp * 1200 B * 8 / 0.1 s
        let bps = bdp_pkts * 1200 * 8 * 10;
        BulkConfig {
            cc: "cubic".into(),
            rate: Rate::from_bps(bps),
            one_way: Dur::from_millis(50),
            buffer_pkts: bdp_pkts,
            loss_ppm: 0,
            streams,
            seed: 7,
            max_data: 1 << 40,
            max_stream_data: 1 << 40,
        }
    }
}

struct Slot {
    at: Time,
    len: u16,
    ecn: Ecn,
    data: [u8; SLOT],
}

/// One direction: FIFO with a constant delay after serialization, a ring
/// of slots written and read in place.
struct Lane {
    slots: Vec<Slot>,
    head: usize,
    len: usize,
    rate: Option<Rate>,
    delay: Dur,
    free_at: Time,
    cap_pkts: u64,
    dropped: u64,
}

impl Lane {
    fn new(rate: Option<Rate>, delay: Dur, cap_pkts: u64, reserve: u64) -> Self {
        let mut l = Lane {
            slots: Vec::new(),
            head: 0,
            len: 0,
            rate,
            delay,
            free_at: Time::ZERO,
            cap_pkts,
            dropped: 0,
        };
        l.grow(reserve.max(16) as usize);
        l
    }

    fn grow(&mut self, n: usize) {
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || Slot {
            at: Time::ZERO,
            len: 0,
            ecn: Ecn::NotEct,
            data: [0; SLOT],
        });
        for (i, slot) in slots.iter_mut().take(self.len).enumerate() {
            let k = (self.head + i) % self.slots.len();
            std::mem::swap(slot, &mut self.slots[k]);
        }
        self.slots = slots;
        self.head = 0;
    }

    /// Returns false if the datagram was dropped at the buffer.
    fn send(&mut self, now: Time, data: &[u8], ecn: Ecn) -> bool {
        let depart = match self.rate {
            Some(r) => {
                let backlog = r.bytes_in(self.free_at.saturating_since(now));
                if backlog / 1200 >= self.cap_pkts {
                    self.dropped += 1;
                    return false;
                }
                let d = if self.free_at > now {
                    self.free_at
                } else {
                    now
                } + r.tx_time(data.len() as u64);
                self.free_at = d;
                d
            }
            None => now,
        };
        if self.len == self.slots.len() {
            self.grow(2 * self.len);
        }
        let k = (self.head + self.len) % self.slots.len();
        self.len += 1;
        let s = &mut self.slots[k];
        s.at = depart + self.delay;
        s.len = data.len() as u16;
        s.ecn = ecn;
        s.data[..data.len()].copy_from_slice(data);
        true
    }

    fn head(&self) -> Option<&Slot> {
        (self.len > 0).then(|| &self.slots[self.head])
    }

    fn pop(&mut self) {
        self.head = (self.head + 1) % self.slots.len();
        self.len -= 1;
    }
}

/// FNV-1a over everything sent, to compare runs.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

pub struct Bulk {
    pub client: Connection,
    pub server: Connection,
    pub now: Time,
    up: Lane,
    down: Lane,
    rng: u64,
    loss_ppm: u32,
    buf: Box<[u8; SLOT]>,
    pub streams: Vec<StreamId>,
    n_streams: usize,
    /// Datagrams each way that left an endpoint.
    pub sent_up: u64,
    pub sent_down: u64,
    pub random_losses: u64,
    /// `Some` hashes every datagram (time, direction, ECN, bytes).
    pub fingerprint: Option<Fingerprint>,
}

const CLIENT: &str = "10.0.0.1:4433";
const SERVER: &str = "10.0.0.2:443";

impl Bulk {
    pub fn new(cfg: &BulkConfig) -> Self {
        // Datagrams in flight on the path at most (1,200 bytes each; the
        // reverse lane holds ACKs); the lanes never grow past this.
        let bdp = cfg.rate.bytes_in(cfg.one_way * 2) / 1200 + 64;
        let conn = ConnectionConfig {
            cc: cfg.cc.clone(),
            max_data: cfg.max_data,
            max_stream_data: cfg.max_stream_data,
            send_buffer: 1 << 40,
            max_streams_bidi: cfg.streams as u64 + 10,
            seed: cfg.seed,
            ..ConnectionConfig::default()
        };
        let server_addr: SocketAddr = SERVER.parse().expect("addr");
        let client =
            Connection::client(conn.clone(), Time::ZERO, server_addr, None).expect("client");
        let server = Connection::server(
            ConnectionConfig {
                seed: cfg.seed + 1,
                ..conn
            },
            Time::ZERO,
        )
        .expect("server");
        Bulk {
            client,
            server,
            now: Time::ZERO,
            up: Lane::new(
                Some(cfg.rate),
                cfg.one_way,
                cfg.buffer_pkts,
                bdp + cfg.buffer_pkts,
            ),
            down: Lane::new(None, cfg.one_way, u64::MAX, 2 * bdp),
            rng: cfg.seed | 1,
            loss_ppm: cfg.loss_ppm,
            buf: Box::new([0; SLOT]),
            streams: Vec::with_capacity(cfg.streams),
            n_streams: cfg.streams,
            sent_up: 0,
            sent_down: 0,
            random_losses: 0,
            fingerprint: None,
        }
    }

    fn random_loss(&mut self) -> bool {
        if self.loss_ppm == 0 {
            return false;
        }
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % 1_000_000 < u64::from(self.loss_ppm)
    }

    fn flush(&mut self) {
        let now = self.now;
        while let Some((n, _, ecn)) = self.client.poll_transmit(now, &mut self.buf[..]) {
            self.sent_up += 1;
            if let Some(f) = self.fingerprint.as_mut() {
                f.add(&now.as_nanos().to_le_bytes());
                f.add(&[0, ecn as u8]);
                f.add(&self.buf[..n]);
            }
            if self.random_loss() {
                self.random_losses += 1;
                continue;
            }
            self.up.send(now, &self.buf[..n], ecn);
        }
        while let Some((n, _, ecn)) = self.server.poll_transmit(now, &mut self.buf[..]) {
            self.sent_down += 1;
            if let Some(f) = self.fingerprint.as_mut() {
                f.add(&now.as_nanos().to_le_bytes());
                f.add(&[1, ecn as u8]);
                f.add(&self.buf[..n]);
            }
            self.down.send(now, &self.buf[..n], ecn);
        }
    }

    fn drain_events(&mut self) {
        while let Some(ev) = self.client.poll_event() {
            if ev == Event::Connected && self.streams.is_empty() {
                for _ in 0..self.n_streams {
                    let id = self.client.open_stream().expect("stream limit");
                    // Endless: far more than any run sends.
                    self.client.write(id, 1 << 40).expect("write");
                    self.streams.push(id);
                }
            }
        }
        while self.server.poll_event().is_some() {}
    }

    /// Run until the clock passes `until`.
    pub fn run_until(&mut self, until: Time) {
        let from: SocketAddr = CLIENT.parse().expect("addr");
        let to: SocketAddr = SERVER.parse().expect("addr");
        while self.now < until {
            self.flush();
            let t = [
                self.client.poll_timeout(),
                self.server.poll_timeout(),
                self.up.head().map(|s| s.at),
                self.down.head().map(|s| s.at),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("something is pending");
            self.now = t.max(self.now);
            while let Some(s) = self.up.head().filter(|s| s.at <= self.now) {
                self.server
                    .handle_datagram(self.now, from, &s.data[..s.len as usize], s.ecn);
                self.up.pop();
            }
            while let Some(s) = self.down.head().filter(|s| s.at <= self.now) {
                self.client
                    .handle_datagram(self.now, to, &s.data[..s.len as usize], s.ecn);
                self.down.pop();
            }
            if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
                self.client.handle_timeout(self.now);
            }
            if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                self.server.handle_timeout(self.now);
            }
            self.drain_events();
        }
    }

    pub fn buffer_drops(&self) -> u64 {
        self.up.dropped
    }
}
