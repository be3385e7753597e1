//! Benchmark of the real-time UDP driver (docs/PERFORMANCE.md): timer
//! accuracy (how late wake-ups fire) and the throughput ceiling (1200-byte
//! datagrams, one sender, loopback).
//!
//!     cargo run --release -p l4slab-udp-driver --example udp_bench [-- WAKEUPS SECONDS]

use std::net::SocketAddr;

use l4slab_core::{Dur, Ecn, Time};
use l4slab_udp_driver::{Clock, DatagramEndpoint, Driver, DriverConfig, UdpSocket};

/// Asks for a wake-up every `period`, `count` times; sends nothing.
struct Ticker {
    period: Dur,
    count: u64,
    fired: u64,
}

impl DatagramEndpoint for Ticker {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {}
    fn poll_transmit(&mut self, _: Time, _: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        (self.fired < self.count).then(|| Time::ZERO + self.period * (self.fired + 1))
    }
    fn handle_timeout(&mut self, _: Time) {
        self.fired += 1;
    }
    fn is_done(&self) -> bool {
        self.fired == self.count
    }
}

/// Sends 1200-byte ECT(1) datagrams to `peer` as fast as the socket takes them.
struct Blaster {
    peer: SocketAddr,
    until: Time,
    done: bool,
}

impl DatagramEndpoint for Blaster {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {}
    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        if now >= self.until {
            self.done = true;
            return None;
        }
        buf[..1200].fill(0x5a);
        Some((1200, self.peer, Ecn::Ect1))
    }
    fn poll_timeout(&self) -> Option<Time> {
        Some(self.until)
    }
    fn handle_timeout(&mut self, now: Time) {
        self.done |= now >= self.until;
    }
    fn is_done(&self) -> bool {
        self.done
    }
}

/// Counts what arrives.
struct Sink {
    received: u64,
    ect1: u64,
    until: Time,
}

impl DatagramEndpoint for Sink {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], ecn: Ecn) {
        self.received += 1;
        self.ect1 += u64::from(ecn == Ecn::Ect1);
    }
    fn poll_transmit(&mut self, _: Time, _: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        Some(self.until)
    }
    fn handle_timeout(&mut self, _: Time) {}
    fn is_done(&self) -> bool {
        false
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let wakeups: u64 = args.next().map_or(5000, |a| a.parse().expect("WAKEUPS"));
    let seconds: u64 = args.next().map_or(2, |a| a.parse().expect("SECONDS"));

    // Timer accuracy: one wake-up per millisecond.
    let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut d = Driver::new(DriverConfig::default());
    let mut t = Ticker {
        period: Dur::from_millis(1),
        count: wakeups,
        fired: 0,
    };
    d.run(&s, &mut t, Time::MAX).unwrap();
    let l = d.stats().lateness().expect("wake-ups");
    let us = |d: Dur| d.as_nanos() as f64 / 1e3;
    println!(
        "timer: {} timed wake-ups 1 ms apart: late p50 {:.2} µs, p99 {:.1} µs, max {:.0} µs, mean {:.1} µs",
        l.wakeups,
        us(l.p50),
        us(l.p99),
        us(l.max),
        us(l.mean)
    );

    // Throughput ceiling, IPv4 and IPv6 loopback.
    for local in ["127.0.0.1:0", "[::1]:0"] {
        let tx = UdpSocket::bind(local.parse().unwrap()).unwrap();
        let rx = UdpSocket::bind(local.parse().unwrap()).unwrap();
        tx.set_buffer_sizes(8 << 20, 8 << 20).ok();
        rx.set_buffer_sizes(8 << 20, 8 << 20).ok();
        let peer = rx.local_addr().unwrap();
        let clock = Clock::start();
        let until = Time::from_secs(seconds);
        let sink = std::thread::spawn(move || {
            let mut d = Driver::with_clock(DriverConfig::default(), clock);
            let mut s = Sink {
                received: 0,
                ect1: 0,
                until: until + Dur::from_millis(200),
            };
            d.run(&rx, &mut s, until + Dur::from_millis(200)).unwrap();
            (s.received, s.ect1)
        });
        let mut d = Driver::with_clock(DriverConfig::default(), clock);
        let mut b = Blaster {
            peer,
            until,
            done: false,
        };
        d.run(&tx, &mut b, Time::MAX).unwrap();
        let sent = d.stats().datagrams_sent;
        let (received, ect1) = sink.join().unwrap();
        let per_s = received as f64 / seconds as f64;
        println!(
            "throughput {local}: sent {sent}, received {received} ({ect1} ECT(1)): {:.0} datagrams/s, {:.2} Gbit/s of 1200 B payload",
            per_s,
            per_s * 1200.0 * 8.0 / 1e9
        );
    }
}
