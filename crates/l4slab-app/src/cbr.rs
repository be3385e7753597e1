//! `cbr`: an unresponsive constant-bit-rate UDP stream (like `iperf -u -b 5M
//! -l 1200`, or a legacy media or gaming stream that ignores congestion).
//!
//! The sender (the flow's `direction` names it) sends datagrams of `size`
//! payload bytes, evenly spaced so that the payload moves at exactly `rate`
//! (as `iperf -b` counts it: UDP payload, not headers), with the configured
//! IP-ECN codepoint, from the flow's start to the end of the run. It never
//! reacts to loss or marks. The receiver counts what arrives.
//!
//! Datagram `k` leaves at `start + floor(k · size · 8 / rate)` (in ns), so the
//! spacing never drifts from the rate however it rounds. Each datagram
//! carries its sequence number `k` (the `tag`, which is also the packet
//! trace's `seq`); the receiver reads its send timestamp from it, as `iperf`
//! and `irtt` read a timestamp written into the payload.
//!
//! Loss is counted as `iperf` does: from the gaps in the sequence numbers
//! received, so datagrams sent after the last one to arrive (still in flight
//! at the end, or lost in the last instants) count neither way.
//!
//! Jitter is RFC 3550 §6.4.1's interarrival jitter estimate, on the one-way
//! transit times (the send timestamp is exact, not an RTP clock).
//!
//! Not implemented: IP fragmentation (a datagram larger than the path MTU is
//! one packet here), the receiver's socket buffer (nothing is dropped at the
//! receiving host).

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_bottleneck::flow::FlowKey;
use l4slab_core::param::{FromParam, Kind, Param, ParamValue, ECN_CODEPOINTS};
use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Ecn, Rate, Time};

use crate::registry::{AppKind, BuildContext};
use crate::{Datagram, DatagramsIgnored, FlowApp, FlowIo, Role, SampleSink};

pub const RATE: Param = Param::new(
    "rate",
    Kind::Rate,
    ParamValue::Rate(Rate::from_mbps(1)),
    "`iperf -u`'s default `-b 1M`",
    "UDP payload bit rate (as `iperf -b` counts it: payload, not headers)",
)
.linux_name("iperf -b");

/// The largest UDP payload over IPv4: 65535 - 20 (IP) - 8 (UDP).
const MAX_UDP_PAYLOAD: u64 = 65_507;

pub const SIZE: Param = Param::new(
    "size",
    Kind::Size {
        min: 1,
        max: MAX_UDP_PAYLOAD,
    },
    ParamValue::Int(1200),
    "a choice: a 1228 B IPv4 packet, below any common path MTU",
    "UDP payload per datagram (at most the largest UDP payload over IPv4)",
)
.linux_name("iperf -l");

pub const ECN: Param = Param::new(
    "ecn",
    Kind::Choice(ECN_CODEPOINTS),
    ParamValue::Choice("not_ect"),
    "`iperf` sends Not-ECT unless `-S` sets the TOS",
    "codepoint of every datagram (e.g. `\"ect1\"` to ride DualPI2's L queue)",
)
.linux_name("iperf -S");

/// `app = { kind = "cbr", ... }` (docs/apps.md#cbr).
pub const PARAMS: &[Param] = &[RATE, SIZE, ECN];

/// CBR parameters (scenario `app = { kind = "cbr", ... }`; [`PARAMS`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CbrConfig {
    /// [`RATE`].
    pub rate: Rate,
    /// [`SIZE`]: UDP payload bytes per datagram.
    pub size: u32,
    /// [`ECN`].
    pub ecn: Ecn,
}

impl Default for CbrConfig {
    fn default() -> Self {
        CbrConfig {
            rate: RATE.default.rate(),
            size: FromParam::from_param(SIZE.default),
            ecn: FromParam::from_param(ECN.default),
        }
    }
}

l4slab_core::param_fields!(CbrConfig {
    rate = RATE,
    size = SIZE,
    ecn = ECN,
});

impl AppKind for CbrConfig {
    const NAME: &'static str = "cbr";
    const WHAT: &'static str = "unresponsive constant-bit-rate UDP";
    const EXAMPLE: &'static str = r#"app = { kind = "cbr", rate = "5Mbit" }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(Cbr::new(*self, cx.sender))
    }
}

/// RFC 3550 §6.4.1 interarrival jitter, in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
struct Jitter {
    /// `J`, the running estimate.
    j: f64,
    /// The previous arrival's transit time `R - S`.
    prev_transit: Option<u64>,
}

impl Jitter {
    fn on_arrival(&mut self, transit: Dur) {
        let t = transit.as_nanos();
        if let Some(prev) = self.prev_transit {
            // RFC 3550 §6.4.1: D(i,j) = (Rj - Ri) - (Sj - Si) = (Rj - Sj) - (Ri - Si)
            let d = t.abs_diff(prev) as f64;
            // RFC 3550 §6.4.1: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16
            self.j += (d - self.j) / 16.0;
        }
        self.prev_transit = Some(t);
    }
}

#[derive(Debug)]
pub struct Cbr {
    cfg: CbrConfig,
    sender: Role,
    /// When the sender started (the flow's start).
    start: Option<Time>,
    /// Datagrams sent; the next one's sequence number.
    sent: u64,
    received: u64,
    bytes_received: u64,
    /// Highest sequence number received.
    highest: Option<u64>,
    ce_received: u64,
    owd: DurStats,
    jitter: Jitter,
    // Since the last sample.
    int_bytes: u64,
    int_received: u64,
    int_ce: u64,
    /// The sequence numbers received (a duplicate is not counted twice).
    seen: Seen,
    ignored: DatagramsIgnored,
}

/// A set of sequence numbers below the datagrams sent: one bit each.
#[derive(Debug, Default)]
struct Seen(Vec<u64>);

impl Seen {
    /// Adds `k`; false if it was there.
    fn insert(&mut self, k: u64) -> bool {
        let (word, bit) = ((k / 64) as usize, k % 64);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let had = self.0[word] >> bit & 1 == 1;
        self.0[word] |= 1 << bit;
        !had
    }
}

impl Cbr {
    /// A stream sent from `sender`'s side.
    pub fn new(cfg: CbrConfig, sender: Role) -> Self {
        assert!(cfg.rate > Rate::ZERO, "cbr rate must be positive");
        assert!(cfg.size > 0, "cbr datagrams carry at least one byte");
        Cbr {
            cfg,
            sender,
            start: None,
            sent: 0,
            received: 0,
            bytes_received: 0,
            highest: None,
            ce_received: 0,
            // µs resolution up to 1000 s.
            owd: DurStats::new(1_000, 1_000_000_000),
            jitter: Jitter::default(),
            int_bytes: 0,
            int_received: 0,
            int_ce: 0,
            seen: Seen::default(),
            ignored: DatagramsIgnored::default(),
        }
    }

    /// When datagram `k` is sent: `start + floor(k · size · 8 · 10⁹ / rate)` ns.
    fn send_time(&self, start: Time, k: u64) -> Time {
        let bits = u128::from(k) * u128::from(self.cfg.size) * 8;
        let ns = bits * 1_000_000_000 / u128::from(self.cfg.rate.as_bps());
        start.saturating_add(Dur::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }

    /// Send every datagram due by `now`, then wake for the next.
    fn send_due(&mut self, now: Time, io: &mut dyn FlowIo) {
        let start = self.start.expect("the sender started");
        let mut next = self.send_time(start, self.sent);
        while next <= now {
            io.send_datagram(Datagram {
                payload: self.cfg.size,
                ecn: self.cfg.ecn,
                tag: self.sent,
            });
            self.sent += 1;
            next = self.send_time(start, self.sent);
        }
        io.wake_at(next);
    }

    /// Datagrams counted (up to the highest received) and lost among them.
    fn counted_lost(&self) -> (u64, u64) {
        let counted = self.highest.map_or(0, |h| h + 1);
        (counted, counted.saturating_sub(self.received))
    }
}

impl FlowApp for Cbr {
    fn kind(&self) -> &'static str {
        "cbr"
    }
    fn uses_connection(&self) -> bool {
        false
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            assert!(self.start.is_none(), "cbr started twice");
            self.start = Some(now);
            self.send_due(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.send_due(now, io);
        }
    }
    fn on_datagram(&mut self, now: Time, side: Role, dg: Datagram, _io: &mut dyn FlowIo) {
        // Network input: what the sender did not send (a datagram at the
        // sender, a sequence number not yet used) or sent once and already
        // arrived is counted and ignored (`datagrams_ignored`).
        let start = match self.start {
            Some(s) if side != self.sender && dg.tag < self.sent => s,
            _ => {
                self.ignored.unknown += 1;
                return;
            }
        };
        if !self.seen.insert(dg.tag) {
            self.ignored.duplicate += 1;
            return;
        }
        // The send timestamp the datagram carries.
        let transit = now.saturating_since(self.send_time(start, dg.tag));
        self.owd.record(transit);
        self.jitter.on_arrival(transit);
        let ce = u64::from(dg.ecn == Ecn::Ce);
        self.received += 1;
        self.bytes_received += u64::from(dg.payload);
        self.ce_received += ce;
        self.highest = Some(self.highest.map_or(dg.tag, |h| h.max(dg.tag)));
        self.int_bytes += u64::from(dg.payload);
        self.int_received += 1;
        self.int_ce += ce;
    }
    fn datagrams_ignored(&self) -> DatagramsIgnored {
        self.ignored
    }
    fn report(&self, end: Time) -> Value {
        let (counted, lost) = self.counted_lost();
        let active = self
            .start
            .map_or(Dur::ZERO, |s| end.saturating_since(s))
            .as_secs_f64();
        json!({
            "datagrams_sent": self.sent,
            "datagrams_received": self.received,
            "lost": lost,
            "pending_at_end": self.sent - counted,
            "loss_pct": if counted > 0 { round6(100.0 * lost as f64 / counted as f64) } else { 0.0 },
            "bytes_received": self.bytes_received,
            "goodput_bps": if active > 0.0 { (self.bytes_received as f64 * 8.0 / active).round() } else { 0.0 },
            "owd_ms": self.owd.summary_ms(),
            "jitter_ms": round6(self.jitter.j * 1e-6),
            "ce_marked": self.ce_received,
            "ce_fraction": if self.received > 0 { round6(self.ce_received as f64 / self.received as f64) } else { 0.0 },
            "rate_bps": self.cfg.rate.as_bps(),
            "size_bytes": self.cfg.size,
        })
    }
    fn sample(&mut self, _now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        if self.start.is_some() && !interval.is_zero() {
            out(
                "cbr_goodput_bps",
                self.int_bytes as f64 * 8.0 / interval.as_secs_f64(),
            );
        }
        if let Some((mean, _)) = self.owd.take_interval() {
            out("owd_ms", mean);
        }
        if self.int_received > 0 {
            // The flow's own series name (the flow recorder's), not a second copy.
            out(
                FlowKey::CeFraction.name(),
                self.int_ce as f64 / self.int_received as f64,
            );
        }
        self.int_bytes = 0;
        self.int_received = 0;
        self.int_ce = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    const MS: u64 = 1_000_000;

    fn t(ns: u64) -> Time {
        Time::from_nanos(ns)
    }

    /// Run the sender's timers until `until`; returns each datagram's send time.
    fn send_until(app: &mut Cbr, s: &mut Script, start: Time, until: Time) -> Vec<(u64, Time)> {
        let side = app.sender;
        let mut sent = Vec::new();
        s.connected(app, start, side);
        let mut now = start;
        loop {
            for dg in s.sock(side).datagrams.drain(..) {
                sent.push((dg.tag, now));
            }
            let next = s.wake(side).expect("the sender always has a next datagram");
            assert!(next > now, "a wake-up in the past");
            if next > until {
                return sent;
            }
            now = next;
            s.timer(app, now, side);
        }
    }

    fn dg(tag: u64, ecn: Ecn) -> Datagram {
        Datagram {
            payload: 1200,
            ecn,
            tag,
        }
    }

    #[test]
    fn datagrams_are_evenly_spaced_at_exactly_the_rate() {
        // 5 Mbit/s of 1200 B: 9600 bits every 1.92 ms.
        let cfg = CbrConfig {
            rate: Rate::from_mbps(5),
            size: 1200,
            ecn: Ecn::Ect1,
        };
        let mut app = Cbr::new(cfg, Role::Server);
        let mut s = Script::new();
        let start = Time::from_millis(500);
        let sent = send_until(&mut app, &mut s, start, start + Dur::from_secs(1));
        // 0, 1.92 ms, ..., 998.4 ms: 521 datagrams, sequence numbers in order.
        assert_eq!(sent.len(), 521);
        for (i, &(tag, at)) in sent.iter().enumerate() {
            assert_eq!(tag, i as u64);
            assert_eq!(at, start + Dur::from_nanos(1_920_000 * i as u64));
        }
        assert_eq!(app.sent, 521);
        // The client (the receiver) sent nothing and asked for no wake-up.
        assert!(s.sock(Role::Client).datagrams.is_empty());
        assert_eq!(s.wake(Role::Client), None);
    }

    #[test]
    fn a_spacing_that_is_not_whole_nanoseconds_keeps_the_rate_exact() {
        // 3 Mbit/s of 1000 B: 8000/3e6 s = 2666666.67 ns. The k-th send is
        // floor(k · 8e12 / 3e6) ns, so 3 datagrams take exactly 8 ms.
        let cfg = CbrConfig {
            rate: Rate::from_mbps(3),
            size: 1000,
            ecn: Ecn::NotEct,
        };
        let mut app = Cbr::new(cfg, Role::Client);
        let mut s = Script::new();
        s.connected(&mut app, Time::ZERO, Role::Client);
        assert_eq!(s.wake(Role::Client), Some(t(2_666_666)));
        s.timer(&mut app, t(2_666_666), Role::Client);
        assert_eq!(s.wake(Role::Client), Some(t(5_333_333)));
        s.timer(&mut app, t(5_333_333), Role::Client);
        assert_eq!(s.wake(Role::Client), Some(t(8 * MS)));
        // Over 3 s, 9 Mbit in 1125 datagrams (the 1126th leaves at 3 s).
        let mut app = Cbr::new(cfg, Role::Client);
        let mut s = Script::new();
        s.connected(&mut app, Time::ZERO, Role::Client);
        while let Some(w) = s.wake(Role::Client).filter(|&w| w < Time::from_secs(3)) {
            s.timer(&mut app, w, Role::Client);
        }
        assert_eq!(app.sent, 1125);
        assert_eq!(s.wake(Role::Client), Some(Time::from_secs(3)));
        let dgs = &s.sock(Role::Client).datagrams;
        assert!(dgs
            .iter()
            .all(|d| d.payload == 1000 && d.ecn == Ecn::NotEct));
    }

    #[test]
    fn a_late_wake_up_sends_every_datagram_due_and_not_more() {
        // 1 Mbit/s of 125 B: one every 1 ms. Woken 3.5 ms late, the sender
        // catches up on the four due (1, 2, 3, 4 ms) and asks for 5 ms.
        let cfg = CbrConfig {
            rate: Rate::from_mbps(1),
            size: 125,
            ecn: Ecn::NotEct,
        };
        let mut app = Cbr::new(cfg, Role::Server);
        let mut s = Script::new();
        s.connected(&mut app, Time::ZERO, Role::Server);
        s.timer(&mut app, t(4 * MS + MS / 2), Role::Server);
        let tags: Vec<u64> = s
            .sock(Role::Server)
            .datagrams
            .iter()
            .map(|d| d.tag)
            .collect();
        assert_eq!(tags, [0, 1, 2, 3, 4]);
        assert_eq!(s.wake(Role::Server), Some(t(5 * MS)));
    }

    #[test]
    fn counts_losses_from_sequence_gaps_and_ce_marks() {
        // 1.2 kB every 1.92 ms (5 Mbit/s), from 0.
        let cfg = CbrConfig {
            rate: Rate::from_mbps(5),
            ..CbrConfig::default()
        };
        let mut app = Cbr::new(cfg, Role::Server);
        let mut s = Script::new();
        let end = Time::from_millis(20);
        let sent = send_until(&mut app, &mut s, Time::ZERO, end);
        assert_eq!(sent.len(), 11); // 0, 1.92, ..., 19.2 ms
                                    // Datagrams 0..=7 arrive 10 ms after they left, except 3 and 5
                                    // (lost); 1 and 6 carry CE; 8, 9, 10 are still on their way.
        for &(tag, at) in &sent[..8] {
            if tag == 3 || tag == 5 {
                continue;
            }
            let ecn = if tag == 1 || tag == 6 {
                Ecn::Ce
            } else {
                Ecn::Ect0
            };
            app.on_datagram(
                at + Dur::from_millis(10),
                Role::Client,
                dg(tag, ecn),
                s.sock(Role::Client),
            );
        }
        let r = app.report(end);
        assert_eq!(r["datagrams_sent"], 11);
        assert_eq!(r["datagrams_received"], 6);
        assert_eq!(r["lost"], 2);
        assert_eq!(r["pending_at_end"], 3);
        assert_eq!(r["loss_pct"], 25.0); // 2 of the 8 counted
        assert_eq!(r["bytes_received"], 7200);
        // 7200 B over the 20 ms the flow was active.
        assert_eq!(r["goodput_bps"], 2_880_000.0);
        assert_eq!(r["ce_marked"], 2);
        assert_eq!(r["ce_fraction"], round6(2.0 / 6.0));
        assert_eq!(r["owd_ms"]["min"], 10.0);
        assert_eq!(r["owd_ms"]["max"], 10.0);
        assert_eq!(r["owd_ms"]["samples"], 6);
        // A constant transit time has no jitter.
        assert_eq!(r["jitter_ms"], 0.0);
        assert_eq!(r["rate_bps"], 5_000_000);
        assert_eq!(r["size_bytes"], 1200);
    }

    #[test]
    fn one_way_delay_reads_the_send_timestamp_of_the_datagram() {
        // 1 Mbit/s of 1250 B: one every 10 ms, from 100 ms.
        let cfg = CbrConfig {
            rate: Rate::from_mbps(1),
            size: 1250,
            ecn: Ecn::NotEct,
        };
        let mut app = Cbr::new(cfg, Role::Client);
        let mut s = Script::new();
        let start = Time::from_millis(100);
        send_until(&mut app, &mut s, start, Time::from_millis(200));
        // Datagram 4 (sent at 140 ms) arrives at 175 ms, reordered ahead of 2
        // (sent at 120 ms, arriving at 176 ms): 35 ms and 56 ms one way.
        app.on_datagram(
            Time::from_millis(175),
            Role::Server,
            Datagram {
                payload: 1250,
                ..dg(4, Ecn::NotEct)
            },
            s.sock(Role::Server),
        );
        app.on_datagram(
            Time::from_millis(176),
            Role::Server,
            Datagram {
                payload: 1250,
                ..dg(2, Ecn::NotEct)
            },
            s.sock(Role::Server),
        );
        let r = app.report(Time::from_millis(200));
        assert_eq!(r["owd_ms"]["min"], 35.0);
        assert_eq!(r["owd_ms"]["max"], 56.0);
        assert_eq!(r["owd_ms"]["mean"], 45.5);
        // 0..=4 counted, 0, 1 and 3 lost; 5..=10 pending.
        assert_eq!(r["lost"], 3);
        assert_eq!(r["pending_at_end"], 6);
        // Over the 100 ms active: 2500 B.
        assert_eq!(r["goodput_bps"], 200_000.0);
    }

    #[test]
    fn jitter_follows_rfc3550_on_a_known_arrival_pattern() {
        // 1 Mbit/s of 125 B: one every 1 ms. Transit times alternate
        // 10, 12, 10, 12 ms: |D| = 2 ms from the second arrival on, so
        // J = 2/16 = 0.125 ms, then 0.125 + (2 - 0.125)/16 = 0.2421875 ms,
        // then 0.2421875 + (2 - 0.2421875)/16 = 0.35205078125 ms (all exact
        // in binary; the summary rounds to 6 decimals).
        let cfg = CbrConfig {
            rate: Rate::from_mbps(1),
            size: 125,
            ecn: Ecn::NotEct,
        };
        let mut app = Cbr::new(cfg, Role::Server);
        let mut s = Script::new();
        send_until(&mut app, &mut s, Time::ZERO, Time::from_millis(10));
        let transit = [10, 12, 10, 12];
        let expect_ns = [0.0, 125_000.0, 242_187.5, 352_050.781_25];
        for (k, (&tr, &j)) in transit.iter().zip(&expect_ns).enumerate() {
            let k = k as u64;
            let d = Datagram {
                payload: 125,
                ..dg(k, Ecn::NotEct)
            };
            app.on_datagram(t(k * MS + tr * MS), Role::Client, d, s.sock(Role::Client));
            assert_eq!(app.jitter.j, j, "after {}", k + 1);
            assert_eq!(
                app.report(Time::from_millis(10))["jitter_ms"],
                round6(j * 1e-6)
            );
        }
        // A constant shift of the transit time adds no jitter: 12, 12 keeps
        // J decaying by 15/16.
        let d = Datagram {
            payload: 125,
            ..dg(4, Ecn::NotEct)
        };
        app.on_datagram(t(4 * MS + 12 * MS), Role::Client, d, s.sock(Role::Client));
        assert_eq!(
            app.report(Time::from_millis(20))["jitter_ms"],
            round6(0.35205078125 * 15.0 / 16.0)
        );
        assert_eq!(app.jitter.j, 352_050.781_25 * 15.0 / 16.0);
    }

    #[test]
    fn series_cover_each_interval_then_reset() {
        let cfg = CbrConfig {
            rate: Rate::from_mbps(1),
            size: 125,
            ecn: Ecn::Ect1,
        };
        let mut app = Cbr::new(cfg, Role::Server);
        let mut s = Script::new();
        let mut series = Vec::new();
        // Before the flow starts: nothing.
        app.sample(
            Time::from_millis(100),
            Dur::from_millis(100),
            &mut |k, v| series.push((k, v)),
        );
        assert!(series.is_empty());
        send_until(&mut app, &mut s, Time::ZERO, Time::from_millis(10));
        // Four arrive in a 100 ms interval, 2 and 4 ms one way, one CE-marked.
        for (k, owd, ecn) in [
            (0, 2, Ecn::Ect1),
            (1, 4, Ecn::Ce),
            (2, 2, Ecn::Ect1),
            (3, 4, Ecn::Ect1),
        ] {
            let d = Datagram {
                payload: 125,
                ..dg(k, ecn)
            };
            app.on_datagram(t(k * MS + owd * MS), Role::Client, d, s.sock(Role::Client));
        }
        app.sample(
            Time::from_millis(100),
            Dur::from_millis(100),
            &mut |k, v| series.push((k, v)),
        );
        // 500 B in 100 ms = 40 kbit/s.
        assert_eq!(
            series,
            [
                ("cbr_goodput_bps", 40_000.0),
                ("owd_ms", 3.0),
                ("ce_fraction", 0.25)
            ]
        );
        // An interval with nothing received: zero goodput, no delay or CE values.
        series.clear();
        app.sample(
            Time::from_millis(200),
            Dur::from_millis(100),
            &mut |k, v| series.push((k, v)),
        );
        assert_eq!(series, [("cbr_goodput_bps", 0.0)]);
    }

    #[test]
    #[should_panic(expected = "cbr rate must be positive")]
    fn a_zero_rate_is_a_bug() {
        Cbr::new(
            CbrConfig {
                rate: Rate::ZERO,
                ..CbrConfig::default()
            },
            Role::Client,
        );
    }
}
