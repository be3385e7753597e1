//! The driver in real time over loopback: a paced ping-pong between two
//! drivers on two threads, a timeout asked for in the past, the deadline,
//! and datagrams the kernel refuses.
//!
//! **Timer tolerance.** Measured on the development VM (Linux 6.18,
//! 2 vCPUs, normal scheduling, 5000 wake-ups 1 ms apart, release build):
//! a bare `ppoll` fires 77 µs late at p50 with the default 50 µs timer
//! slack and 29 µs late with 1 ns slack (never less than 16 µs); the
//! driver's default at real-time priority (1 ns slack, poll the last
//! 50 µs) fires 0.15 µs late at p50, 20-100 µs at p99; a normal thread (as
//! this test's) does not spin and gets the 1 ns-slack figures. Every setting also sees a few wake-ups 1-9 ms
//! late (the VM's vCPU not running), which move the mean: 7-8 µs over
//! 5000 wake-ups, up to 33 µs in a noisy 2000-wake-up run, and 3-36 µs in
//! this test with two busy loops hogging both vCPUs. The test asserts only
//! mean < 250 µs, a quarter of the pacing period: several times what
//! scheduling noise did to the mean in any run, and half of what a
//! millisecond-granular timer (~500 µs) would give. Timer accuracy itself
//! (the p50 the spin buys) is a benchmark figure, not a CI assertion.

use std::collections::VecDeque;
use std::net::SocketAddr;

use l4slab_core::{Dur, Ecn, Time};
use l4slab_udp_driver::{Clock, DatagramEndpoint, Driver, DriverConfig, RunOutcome, UdpSocket};

const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];

/// Sends ping `i` at `(i + 1) * period` with codepoint `i % 4`, and expects each
/// pong to report the codepoint its ping arrived with.
struct Pinger {
    peer: SocketAddr,
    period: Dur,
    count: u32,
    sent: u32,
    pongs: u32,
    /// The latest a ping went after it was due.
    send_error: Dur,
    rtt_max: Dur,
    sent_at: Vec<Time>,
}

impl DatagramEndpoint for Pinger {
    fn handle_datagram(&mut self, now: Time, _: SocketAddr, data: &[u8], ecn: Ecn) {
        let seq = u32::from_be_bytes(data[..4].try_into().unwrap());
        let seen = Ecn::from_bits(data[4]);
        assert_eq!(seen, CODEPOINTS[seq as usize % 4], "ping {seq}'s codepoint");
        assert_eq!(ecn, seen, "the pong carries it back");
        self.rtt_max = self.rtt_max.max(now - self.sent_at[seq as usize]);
        self.pongs += 1;
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        let due = self.poll_timeout()?;
        if now < due {
            return None;
        }
        self.send_error = self.send_error.max(now - due);
        let seq = self.sent;
        self.sent += 1;
        self.sent_at.push(now);
        buf[..4].copy_from_slice(&seq.to_be_bytes());
        buf[4..100].fill(0xab);
        Some((100, self.peer, CODEPOINTS[seq as usize % 4]))
    }

    fn poll_timeout(&self) -> Option<Time> {
        (self.sent < self.count).then(|| Time::ZERO + self.period * u64::from(self.sent + 1))
    }

    fn handle_timeout(&mut self, _: Time) {}

    fn is_done(&self) -> bool {
        self.pongs == self.count
    }
}

/// Answers each ping with its sequence number and the codepoint it
/// arrived with, sent with that codepoint.
struct Ponger {
    count: u32,
    answered: u32,
    queue: VecDeque<(SocketAddr, u32, Ecn)>,
}

impl DatagramEndpoint for Ponger {
    fn handle_datagram(&mut self, _: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        let seq = u32::from_be_bytes(data[..4].try_into().unwrap());
        self.queue.push_back((from, seq, ecn));
    }

    fn poll_transmit(&mut self, _: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        let (to, seq, ecn) = self.queue.pop_front()?;
        buf[..4].copy_from_slice(&seq.to_be_bytes());
        buf[4] = ecn.bits();
        self.answered += 1;
        Some((5, to, ecn))
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn handle_timeout(&mut self, _: Time) {}

    fn is_done(&self) -> bool {
        self.answered == self.count && self.queue.is_empty()
    }
}

fn ping_pong(local: &str) {
    const N: u32 = 400;
    let period = Dur::from_millis(1);
    let a = UdpSocket::bind(local.parse().unwrap()).unwrap();
    let b = UdpSocket::bind(local.parse().unwrap()).unwrap();
    let peer = b.local_addr().unwrap();
    let clock = Clock::start();
    let deadline = Time::from_secs(3);
    let ponger = std::thread::spawn(move || {
        let mut d = Driver::with_clock(DriverConfig::default(), clock);
        let mut p = Ponger {
            count: N,
            answered: 0,
            queue: VecDeque::with_capacity(N as usize),
        };
        let out = d.run(&b, &mut p, deadline).unwrap();
        (out, d.stats().datagrams_received, d.stats().datagrams_sent)
    });
    let mut d = Driver::with_clock(DriverConfig::default(), clock);
    let mut p = Pinger {
        peer,
        period,
        count: N,
        sent: 0,
        pongs: 0,
        send_error: Dur::ZERO,
        rtt_max: Dur::ZERO,
        sent_at: Vec::with_capacity(N as usize),
    };
    let out = d.run(&a, &mut p, deadline).unwrap();
    let (pong_out, pong_rx, pong_tx) = ponger.join().unwrap();
    assert_eq!((out, pong_out), (RunOutcome::Done, RunOutcome::Done));
    let s = d.stats();
    assert_eq!(
        (s.datagrams_sent, s.datagrams_received),
        (N.into(), N.into())
    );
    assert_eq!(
        (s.bytes_sent, s.bytes_received),
        (100 * u64::from(N), 5 * u64::from(N))
    );
    assert_eq!((pong_rx, pong_tx), (N.into(), N.into()));
    assert_eq!(s.send_dropped + s.send_would_block + s.send_no_buffers, 0);
    // The whole exchange took N periods (plus a last round trip).
    assert!(d.now() >= Time::ZERO + period * u64::from(N));
    let l = s.lateness().expect("timed wake-ups");
    eprintln!(
        "{local}: {} wake-ups, lateness min {} mean {} p50 {} p99 {} max {}; \
         worst ping {} late, worst rtt {}",
        l.wakeups, l.min, l.mean, l.p50, l.p99, l.max, p.send_error, p.rtt_max
    );
    // One timed wake-up per ping (some are cut short by a pong arriving
    // during the spin; none are expected twice).
    assert!(
        l.wakeups >= u64::from(N) / 2 && l.wakeups <= u64::from(N) + 1,
        "{l:?}"
    );
    // Tolerances: see the module header.
    assert!(l.mean < Dur::from_micros(250), "{l:?}");
    // Every timed wake-up is a wait that returned; the thread ran for some
    // of the N periods, and far less than all of them (it sleeps).
    assert!(s.wakeups >= l.wakeups, "{s:?}");
    let span = (period * u64::from(N)).as_nanos();
    if s.cpu_ns > 0 {
        // (zero: no /proc/thread-self/schedstat on this kernel)
        assert!(s.cpu_ns < span, "{s:?}");
    }
}

#[test]
fn paced_ping_pong_over_ipv4() {
    ping_pong("127.0.0.1:0");
}

#[test]
fn paced_ping_pong_over_ipv6() {
    ping_pong("[::1]:0");
}

/// Asks for timeouts that are already in the past, `left` times.
struct Stale {
    at: Time,
    left: u32,
    seen: Vec<Time>,
    late: Vec<Time>,
}

impl DatagramEndpoint for Stale {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {}
    fn poll_transmit(&mut self, _: Time, _: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        (self.left > 0).then_some(self.at)
    }
    fn handle_timeout(&mut self, now: Time) {
        self.seen.push(now);
        self.left -= 1;
    }
    fn handle_late_timeout(&mut self, now: Time) {
        self.late.push(now);
    }
    fn is_done(&self) -> bool {
        false
    }
}

#[test]
fn a_timeout_in_the_past_is_handled_at_once() {
    let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    // The clock started a second ago; the endpoint wants 0.5 s, three times.
    let clock = Clock::from_epoch(l4slab_sys::monotonic_ns() - 1_000_000_000);
    let mut d = Driver::with_clock(DriverConfig::default(), clock);
    let mut e = Stale {
        at: Time::from_millis(500),
        left: 3,
        seen: Vec::new(),
        late: Vec::new(),
    };
    // After the stale timeouts the endpoint has none: the run ends at the deadline.
    let out = d.run(&s, &mut e, Time::from_millis(1_020)).unwrap();
    assert_eq!(out, RunOutcome::Deadline);
    assert_eq!(e.seen.len(), 3);
    assert!(
        e.seen.iter().all(|&t| t >= Time::from_secs(1)),
        "{:?}",
        e.seen
    );
    assert!(
        e.seen[2] - e.seen[0] < Dur::from_millis(5),
        "handled at once: {:?}",
        e.seen
    );
    assert!(d.now() < Time::from_millis(1_100), "{}", d.now());
    assert_eq!(d.stats().timeouts, 3);
    // Each was past: the endpoint heard so first, at the same time.
    assert_eq!(e.late, e.seen);
    assert_eq!(d.stats().late_timeouts, 3);
    // Only the wait for the deadline was a timed wake-up.
    assert_eq!(d.stats().lateness().map(|l| l.wakeups), Some(1));
}

#[test]
fn a_deadline_already_passed_returns_at_once() {
    let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut d = Driver::new(DriverConfig::default());
    let mut e = Stale {
        at: Time::ZERO,
        left: 1,
        seen: Vec::new(),
        late: Vec::new(),
    };
    assert_eq!(d.run(&s, &mut e, Time::ZERO).unwrap(), RunOutcome::Deadline);
    assert!(e.seen.is_empty(), "nothing runs after the deadline");
}

/// Sends one datagram to each of `to`, then is done.
struct Burst {
    to: Vec<SocketAddr>,
}

impl DatagramEndpoint for Burst {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {}
    fn poll_transmit(&mut self, _: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        let to = self.to.pop()?;
        buf[0] = 1;
        Some((1, to, Ecn::Ect1))
    }
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    fn handle_timeout(&mut self, _: Time) {}
    fn is_done(&self) -> bool {
        self.to.is_empty()
    }
}

#[test]
fn refused_datagrams_are_dropped_and_counted() {
    let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let sink = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut d = Driver::new(DriverConfig::default());
    let mut e = Burst {
        to: vec![
            sink.local_addr().unwrap(),
            // An IPv6 peer from an IPv4 socket.
            "[::1]:9".parse().unwrap(),
            // Port 0: the kernel says EINVAL.
            "127.0.0.1:0".parse().unwrap(),
        ],
    };
    let out = d.run(&s, &mut e, Time::from_secs(1)).unwrap();
    assert_eq!(out, RunOutcome::Done);
    assert_eq!((d.stats().datagrams_sent, d.stats().send_dropped), (1, 2));
    // The EINVAL of port 0 is not taken for a kernel refusing the ECN cmsg.
    assert_eq!(s.ecn_send_mode(), l4slab_udp_driver::EcnSendMode::Cmsg);
    let mut buf = [0u8; 4];
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(
        sink.recv_from(&mut buf).unwrap().map(|r| r.2),
        Some(Ecn::Ect1)
    );
}

/// Its thread is held (it sleeps in its first `poll_transmit`) past its
/// timeout while a datagram queues; records the order of the calls.
struct Held {
    at: Time,
    held: bool,
    done: bool,
    calls: Vec<&'static str>,
}

impl DatagramEndpoint for Held {
    fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {
        self.calls.push("datagram");
    }
    fn poll_transmit(&mut self, _: Time, _: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        if !self.held {
            self.held = true;
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        (!self.done).then_some(self.at)
    }
    fn handle_timeout(&mut self, _: Time) {
        self.calls.push("timeout");
        self.done = true;
    }
    fn handle_late_timeout(&mut self, _: Time) {
        self.calls.push("late");
    }
    fn is_done(&self) -> bool {
        self.done
    }
}

#[test]
fn a_timeout_that_passed_while_held_is_said_late_before_the_datagrams() {
    // The ACKs that queued while the thread waited for a CPU would refill a
    // pacer as if it had been on time (issue 25): the endpoint hears that
    // its timeout is late first, once.
    let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let peer = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    peer.send_to(&[1], s.local_addr().unwrap(), Ecn::NotEct)
        .unwrap();
    let mut d = Driver::new(DriverConfig::default());
    let mut e = Held {
        at: d.now() + Dur::from_millis(10),
        held: false,
        done: false,
        calls: Vec::new(),
    };
    let out = d.run(&s, &mut e, d.now() + Dur::from_secs(1)).unwrap();
    assert_eq!(out, RunOutcome::Done);
    assert_eq!(e.calls, ["late", "datagram", "timeout"]);
    assert_eq!(d.stats().late_timeouts, 1);
    assert_eq!(d.stats().timeouts, 1);
}
