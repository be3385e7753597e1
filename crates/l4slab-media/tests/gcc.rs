//! GCC mechanics, pinned (docs/models/gcc.md "Validation").
//!
//! Component tests drive `InterArrival`, `OveruseDetector`,
//! `AimdRateControl` and `LossBasedControl` with hand-made inputs and check
//! the libwebrtc arithmetic exactly. Controller tests drive [`Gcc`] through
//! a tiny synthetic path: a sender that paces 1200-byte packets at the
//! target rate (or at a fixed spacing), a one-way delay with an optional
//! FIFO bottleneck and a loss pattern, and a receiver that reports every
//! 50 ms on a clock 1000 s ahead of the sender's.

use l4slab_core::{Dur, Ecn, Rate, Time};
use l4slab_media::gcc::{
    consts, AimdRateControl, BandwidthUsage, Gcc, GccConfig, InterArrival, LossAction,
    LossBasedControl, OveruseDetector, RateControlState,
};
use l4slab_media::{Feedback, MediaCc, PacketReport};
use proptest::prelude::*;

fn ms(n: u64) -> Dur {
    Dur::from_millis(n)
}
const RX_CLOCK_OFFSET: Dur = Dur::from_secs(1000);

fn t_ms(ms: u64) -> Time {
    Time::from_millis(ms)
}

// ---------------------------------------------------------------------------
// A synthetic sender / path / receiver.

/// How the sender spaces packets.
#[derive(Clone, Copy, Debug)]
enum Sending {
    /// Paced at the controller's target rate.
    AtTarget,
    /// One packet every this long, whatever the target.
    Every(Dur),
}

#[derive(Clone, Debug)]
struct Path {
    sending: Sending,
    size: u32,
    /// One-way propagation delay, both directions.
    delay: Dur,
    /// Bottleneck rate (FIFO, unlimited buffer); `None`: no queue.
    capacity: Option<Rate>,
    /// Capacity from this time on, if it changes.
    capacity_change: Option<(Time, Option<Rate>)>,
    /// Extra one-way delay added per packet from `ramp_from` on (a
    /// linearly growing queue independent of the rate).
    ramp_from: Option<Time>,
    ramp_per_packet: Dur,
    /// Packets with `seq % period` in `lost` are lost.
    loss_period: u64,
    loss_first_n: u64,
    feedback_interval: Dur,
}

impl Default for Path {
    fn default() -> Self {
        Self {
            sending: Sending::AtTarget,
            size: 1200,
            delay: Dur::from_millis(20),
            capacity: None,
            capacity_change: None,
            ramp_from: None,
            ramp_per_packet: Dur::ZERO,
            loss_period: 1,
            loss_first_n: 0,
            feedback_interval: Dur::from_millis(50),
        }
    }
}

/// What the test sees after each feedback.
#[derive(Clone, Copy, Debug)]
struct Step {
    now: Time,
    target: Rate,
    delay_based: Rate,
    acked: Option<Rate>,
    state: BandwidthUsage,
    delay_decreases: u64,
    loss_q8: u8,
    /// The loss-based estimate just before and just after the report.
    loss_before: Rate,
    loss_after: Rate,
    loss_decreases: u64,
    queue: Dur,
}

struct Sim {
    gcc: Gcc,
    path: Path,
    now: Time,
    seq: u64,
    next_send: Time,
    busy_until: Time,
    ramp: Dur,
    /// Packets the receiver knows about (arrived, or known lost), by the
    /// receiver-side time it learns of them (sender clock).
    at_receiver: Vec<(Time, PacketReport)>,
    next_report: Time,
    /// Reports on their way back: (delivery time, report time, packets).
    returning: Vec<(Time, Time, Vec<PacketReport>)>,
    steps: Vec<Step>,
}

impl Sim {
    fn new(cfg: GccConfig, path: Path) -> Self {
        let start = t_ms(0);
        Self {
            gcc: Gcc::new(cfg),
            next_report: start + path.feedback_interval,
            path,
            now: start,
            seq: 0,
            next_send: start,
            busy_until: start,
            ramp: Dur::ZERO,
            at_receiver: Vec::new(),
            returning: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn capacity(&self) -> Option<Rate> {
        match self.path.capacity_change {
            Some((t, c)) if self.now >= t => c,
            _ => self.path.capacity,
        }
    }

    fn send_one(&mut self) {
        let now = self.now;
        let size = self.path.size;
        self.gcc.on_sent(now, self.seq, size);
        let mut depart = now;
        if let Some(c) = self.capacity() {
            depart = depart.max(self.busy_until) + c.tx_time(u64::from(size));
            self.busy_until = depart;
        }
        if self.path.ramp_from.is_some_and(|t| now >= t) {
            self.ramp += self.path.ramp_per_packet;
        }
        let arrival = depart + self.path.delay + self.ramp;
        let lost = self.seq % self.path.loss_period < self.path.loss_first_n;
        let report = PacketReport {
            seq: self.seq,
            size,
            sent: now,
            arrival: (!lost).then_some(arrival + RX_CLOCK_OFFSET),
            ecn: Ecn::NotEct,
        };
        self.at_receiver.push((arrival, report));
        self.seq += 1;
        let gap = match self.path.sending {
            Sending::AtTarget => self.gcc.target_rate().tx_time(u64::from(size)),
            Sending::Every(d) => d,
        };
        self.next_send = now + gap;
    }

    fn make_report(&mut self) {
        let now = self.now;
        let mut pkts: Vec<PacketReport> = Vec::new();
        self.at_receiver.retain(|&(t, p)| {
            if t <= now {
                pkts.push(p);
                false
            } else {
                true
            }
        });
        pkts.sort_by_key(|p| p.seq);
        self.returning
            .push((now + self.path.delay, now + RX_CLOCK_OFFSET, pkts));
        self.next_report = now + self.path.feedback_interval;
    }

    fn deliver_report(&mut self) {
        let now = self.now;
        let i = self
            .returning
            .iter()
            .position(|r| r.0 <= now)
            .expect("a due report");
        let (_, report_time, pkts) = self.returning.remove(i);
        let loss_before = self.gcc.loss_based_rate();
        self.gcc.on_feedback(
            now,
            &Feedback {
                report_time,
                packets: &pkts,
            },
        );
        self.steps.push(Step {
            now,
            target: self.gcc.target_rate(),
            delay_based: self.gcc.delay_based_rate(),
            acked: self.gcc.acked_rate(),
            state: self.gcc.detector_state(),
            delay_decreases: self.gcc.delay_decreases(),
            loss_q8: self.gcc.fraction_loss_q8(),
            loss_before,
            loss_after: self.gcc.loss_based_rate(),
            loss_decreases: self.gcc.loss_decreases(),
            queue: self.busy_until.saturating_since(now) + self.ramp,
        });
    }

    /// Runs until `end` (sender clock), processing events in time order.
    fn run_until(&mut self, end: Time) {
        loop {
            let due_report = self
                .returning
                .iter()
                .map(|r| r.0)
                .min()
                .unwrap_or(Time::MAX);
            let timer = self.gcc.next_timer().unwrap_or(Time::MAX);
            let next = self
                .next_send
                .min(self.next_report)
                .min(due_report)
                .min(timer);
            if next > end {
                self.now = end;
                return;
            }
            self.now = next;
            if due_report == next {
                self.deliver_report();
            } else if timer == next {
                self.gcc.on_timer(next);
            } else if self.next_report == next {
                self.make_report();
            } else {
                self.send_one();
            }
            assert_rate_in_bounds(&self.gcc);
        }
    }

    fn target_at(&self, t: Time) -> Rate {
        self.steps
            .iter()
            .rev()
            .find(|s| s.now <= t)
            .expect("a step before t")
            .target
    }
}

fn assert_rate_in_bounds(gcc: &Gcc) {
    let c = gcc.config();
    let min = c.min_rate.max(consts::MIN_BITRATE);
    let t = gcc.target_rate();
    assert!(
        t >= min && t <= c.max_rate,
        "target {t} outside [{min}, {}]",
        c.max_rate
    );
    assert!(gcc.delay_based_rate() >= min && gcc.delay_based_rate() <= c.max_rate);
    assert_eq!(gcc.pacing_rate(), t.scale(c.pacing_factor));
}

fn report_u64(gcc: &Gcc, key: &str) -> u64 {
    gcc.report()[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in report"))
}

// ---------------------------------------------------------------------------
// (1) Constant one-way delay: no over-use, multiplicative increase 8 %/s.

#[test]
fn constant_delay_never_overuses_and_grows_eight_percent_per_second() {
    let cfg = GccConfig {
        start_rate: Rate::from_kbps(300),
        ..GccConfig::default()
    };
    let mut sim = Sim::new(cfg, Path::default());
    sim.run_until(Time::from_secs(8));
    let g = &sim.gcc;
    assert_eq!(g.overuse_events(), 0);
    assert_eq!(g.delay_decreases(), 0);
    assert_eq!(report_u64(g, "loss_decreases"), 0);
    assert!(sim.steps.iter().all(|s| s.state == BandwidthUsage::Normal));
    // No over-use ever: no link-capacity estimate, so the increase stays
    // multiplicative: 1.08^Δt per update compounds to 1.08 per second.
    assert_eq!(g.link_capacity(), None);
    let (a, b) = (
        sim.target_at(Time::from_secs(3)),
        sim.target_at(Time::from_secs(7)),
    );
    let per_second = (b.as_bps() as f64 / a.as_bps() as f64).powf(0.25);
    assert!(
        (1.078..=1.082).contains(&per_second),
        "growth per second {per_second} (targets {a} → {b})"
    );
    // The target is the delay-based estimate (the loss-based one, 1.08 ×
    // its minimum over the last second + 1 kbit/s, is not the binding one).
    assert_eq!(g.target_rate(), g.delay_based_rate());
    // The RTT is the two 20 ms legs (hold time removed).
    let rtt = g.rtt().expect("rtt");
    assert!(
        (Dur::from_millis(39)..=Dur::from_millis(41)).contains(&rtt),
        "{rtt}"
    );
}

// ---------------------------------------------------------------------------
// (2) A growing queue: over-use, then A = 0.85 × acked − 5 kbit/s.

#[test]
fn growing_queue_is_detected_and_cut_to_beta_times_received_rate() {
    // The target ramps 8 %/s from 800 kbit/s and crosses the 1 Mbit/s
    // bottleneck after ~2.9 s; from then on the queue grows linearly and
    // the received rate is the capacity.
    let capacity = Rate::from_mbps(1);
    let cfg = GccConfig {
        start_rate: Rate::from_kbps(800),
        ..GccConfig::default()
    };
    let path = Path {
        capacity: Some(capacity),
        ..Path::default()
    };
    let mut sim = Sim::new(cfg, path);
    sim.run_until(Time::from_secs(6));
    let i = sim
        .steps
        .iter()
        .position(|s| s.delay_decreases == 1)
        .expect("a decrease");
    let (before, at) = (sim.steps[i - 1], sim.steps[i]);
    assert_eq!(at.state, BandwidthUsage::Overusing);
    assert_eq!(sim.gcc.report()["delay_halvings"], 0);
    // Detected while a queue was building (not on the ramp below capacity).
    assert!(
        before.target > capacity,
        "target {} at detection",
        before.target
    );
    assert!(at.queue > Dur::from_millis(2), "queue {}", at.queue);
    assert!(at.now > Time::from_secs(2), "detected at {}", at.now);
    // The acknowledged rate is the bottleneck's.
    let acked = at.acked.expect("acked bitrate known");
    let err = (acked.as_bps() as f64 / capacity.as_bps() as f64 - 1.0).abs();
    assert!(err < 0.07, "acked {acked} vs capacity {capacity}");
    // libwebrtc AimdRateControl: decreased = beta * throughput - 5 kbps.
    let expect = 0.85 * acked.as_bps() as f64 - 5000.0;
    assert!(
        (at.delay_based.as_bps() as f64 - expect).abs() <= 1.0,
        "A = {} vs 0.85 × {acked} − 5k = {expect}",
        at.delay_based
    );
    assert!(at.target <= at.delay_based);
    // After the cut the controller holds, then increases additively near
    // the link capacity (one over-use sample became the estimate).
    assert!(sim.gcc.link_capacity().is_some());
}

#[test]
fn an_open_loop_linear_queue_halves_before_any_throughput_is_known() {
    // Arrival spacing 11 ms for a send spacing of 10 ms: the queue grows
    // 1 ms per packet from the start, before the acknowledged-bitrate
    // estimator has its first 500 ms window; libwebrtc then halves.
    let cfg = GccConfig {
        start_rate: Rate::from_kbps(960),
        ..GccConfig::default()
    };
    let path = Path {
        sending: Sending::Every(ms(10)),
        ramp_from: Some(Time::ZERO),
        ramp_per_packet: ms(1),
        ..Path::default()
    };
    let mut sim = Sim::new(cfg, path);
    sim.run_until(Time::from_millis(450));
    let i = sim
        .steps
        .iter()
        .position(|s| s.delay_decreases == 1)
        .expect("over-use within 450 ms");
    let (before, first) = (sim.steps[i - 1], sim.steps[i]);
    assert_eq!(first.acked, None);
    assert_eq!(first.state, BandwidthUsage::Overusing);
    assert_eq!(first.delay_based.as_bps(), before.delay_based.as_bps() / 2);
    // Every decrease so far was a halving (one per over-used report).
    let r = sim.gcc.report();
    assert!(r["delay_halvings"].as_u64().unwrap() >= 1);
    assert_eq!(r["delay_halvings"], r["delay_decreases"]);
}

#[test]
fn overuse_needs_more_than_10ms_and_two_samples_and_a_rising_trend() {
    // modified_trend = 60 · 0.1 · 4 = 24 ms > γ = 12.5 ms throughout.
    let over = 0.1;
    // 8 ms groups: 4 ms (half the first delta), then 12 ms > 10 ms with the
    // second sample → over-use on the second.
    let mut d = OveruseDetector::new();
    assert_eq!(d.detect(over, 60, 8.0, 0.0), BandwidthUsage::Normal);
    assert_eq!(d.detect(over, 60, 8.0, 8.0), BandwidthUsage::Overusing);
    // 30 ms groups: 15 ms > 10 ms on the first sample, but one sample is
    // not enough.
    let mut d = OveruseDetector::new();
    assert_eq!(d.detect(over, 60, 30.0, 0.0), BandwidthUsage::Normal);
    assert_eq!(d.detect(over, 60, 30.0, 30.0), BandwidthUsage::Overusing);
    // 2 ms groups: 1, 3, 5, 7, 9 ms are not > 10 ms; 11 ms is.
    let mut d = OveruseDetector::new();
    for k in 0..5 {
        assert_eq!(
            d.detect(over, 60, 2.0, 2.0 * k as f64),
            BandwidthUsage::Normal,
            "sample {k}"
        );
    }
    assert_eq!(d.detect(over, 60, 2.0, 10.0), BandwidthUsage::Overusing);
    // A falling trend (still above γ) does not signal over-use.
    let mut d = OveruseDetector::new();
    d.detect(0.12, 60, 8.0, 0.0);
    assert_eq!(d.detect(0.11, 60, 8.0, 8.0), BandwidthUsage::Normal);
    assert_eq!(d.detect(0.11, 60, 8.0, 16.0), BandwidthUsage::Overusing);
    // Under-use below −γ; fewer than 2 deltas is always normal.
    let mut d = OveruseDetector::new();
    assert_eq!(d.detect(-0.1, 60, 8.0, 0.0), BandwidthUsage::Underusing);
    assert_eq!(d.detect(1.0, 1, 8.0, 8.0), BandwidthUsage::Normal);
    // The gain grows with the number of deltas up to 60: 0.1 · 4 · 20 = 8 < 12.5.
    let mut d = OveruseDetector::new();
    d.detect(over, 20, 30.0, 0.0);
    assert_eq!(d.detect(over, 20, 30.0, 30.0), BandwidthUsage::Normal);
    assert!((d.modified_trend() - 8.0).abs() < 1e-12);
}

// ---------------------------------------------------------------------------
// (3) The adaptive threshold.

#[test]
fn threshold_adapts_up_with_k_up_and_down_with_k_down() {
    let mut d = OveruseDetector::new();
    let th0 = consts::INITIAL_THRESHOLD_MS;
    assert_eq!(d.threshold_ms(), 12.5);
    // trend such that modified_trend = 240 · trend.
    let m = |x: f64| x / 240.0;
    // First call only stamps the time (Δt = 0).
    d.detect(m(20.0), 60, 5.0, 0.0);
    assert_eq!(d.threshold_ms(), th0);
    // |m| = 20 > γ (and < γ + 15): γ += 0.0087 · (20 − 12.5) · 10.
    d.detect(m(20.0), 60, 5.0, 10.0);
    let th1 = th0 + 0.0087 * (20.0 - th0) * 10.0;
    assert!(
        (d.threshold_ms() - th1).abs() < 1e-12,
        "{}",
        d.threshold_ms()
    );
    // |m| = 5 < γ: γ += 0.039 · (5 − γ) · 10 (negative trends count by |m|).
    d.detect(m(-5.0), 60, 5.0, 20.0);
    let th2 = th1 + 0.039 * (5.0 - th1) * 10.0;
    assert!(
        (d.threshold_ms() - th2).abs() < 1e-12,
        "{}",
        d.threshold_ms()
    );
    // |m| > γ + 15: no adaptation (but the clock moves on).
    d.detect(m(th2 + 15.5), 60, 5.0, 30.0);
    assert!((d.threshold_ms() - th2).abs() < 1e-12);
    // Δt is capped at 100 ms: a 1 s gap counts as 100 ms.
    d.detect(m(10.0), 60, 5.0, 1030.0);
    let th3 = th2 + 0.0087 * (10.0 - th2) * 100.0;
    assert!(10.0 > th2);
    assert!(
        (d.threshold_ms() - th3).abs() < 1e-12,
        "{} vs {th3}",
        d.threshold_ms()
    );
    // Clamped to [6, 600].
    for k in 0..50 {
        d.detect(0.0, 60, 5.0, 1130.0 + 100.0 * f64::from(k));
    }
    assert_eq!(d.threshold_ms(), 6.0);
    let mut now = 7000.0;
    for _ in 0..2000 {
        let th = d.threshold_ms();
        d.detect(m(th + 14.0), 60, 5.0, now);
        now += 100.0;
    }
    assert_eq!(d.threshold_ms(), 600.0);
}

// ---------------------------------------------------------------------------
// (4) Loss-based control.

#[test]
fn loss_rules_follow_send_side_bandwidth_estimation() {
    let start = Rate::from_kbps(1000);
    // Past the 2 s start phase; a delay-based limit far above.
    let mut l = LossBasedControl::new(start, Rate::from_kbps(5), Rate::from_mbps(30));
    l.update_delay_based_estimate(t_ms(0), Rate::from_mbps(20));
    assert_eq!(
        l.update_packets_lost(t_ms(0), 0, 10),
        None,
        "fewer than 20 packets: no fraction"
    );
    // 15 lost of 100 more (110 with the 10 held back): q8 = (15 << 8)/110
    // = 34 → rate · (512 − 34)/512.
    let now = t_ms(3000);
    assert_eq!(
        l.update_packets_lost(now, 15, 100),
        Some(LossAction::Decrease)
    );
    assert_eq!(l.fraction_loss_q8(), 34);
    let cut = (1_000_000.0_f64 * 478.0 / 512.0) as u64;
    assert_eq!(l.target(), Rate::from_bps(cut));
    // At most once per loss report, and once per 300 ms + RTT.
    l.update_rtt(Dur::from_millis(100));
    assert_eq!(l.update_estimate(now + ms(25)), LossAction::Hold);
    assert_eq!(
        l.update_packets_lost(now + ms(300), 15, 100),
        Some(LossAction::Hold)
    );
    assert_eq!(l.target(), Rate::from_bps(cut));
    assert_eq!(
        l.update_packets_lost(now + ms(400), 15, 100),
        Some(LossAction::Decrease)
    );
    let cut2 = (cut as f64 * 474.0 / 512.0) as u64;
    assert_eq!(l.target(), Rate::from_bps(cut2));
    // 5 %: hold.
    for k in 1..=10 {
        let r = l.update_packets_lost(now + ms(400) + Dur::from_millis(1000 * k), 5, 100);
        assert_eq!(r, Some(LossAction::Hold));
    }
    assert_eq!(l.target(), Rate::from_bps(cut2));
    // 1 %: 1.08 × (minimum over the last second) + 1 kbit/s, every update.
    let t0 = now + Dur::from_secs(20);
    assert_eq!(
        l.update_packets_lost(t0, 1, 100),
        Some(LossAction::Increase)
    );
    let up1 = (cut2 as f64 * 1.08 + 0.5) as u64 + 1000;
    assert_eq!(l.target(), Rate::from_bps(up1));
    // Within the same second the minimum is still the old rate: no compounding.
    assert_eq!(l.update_estimate(t0 + ms(500)), LossAction::Increase);
    assert_eq!(l.target(), Rate::from_bps(up1));
    // A second later the minimum has moved up.
    assert_eq!(l.update_estimate(t0 + ms(1000)), LossAction::Increase);
    assert_eq!(
        l.target(),
        Rate::from_bps((up1 as f64 * 1.08 + 0.5) as u64 + 1000)
    );
    // Capped by the delay-based estimate, floored at 5 kbit/s.
    l.update_delay_based_estimate(t0 + ms(1100), Rate::from_kbps(700));
    assert_eq!(l.target(), Rate::from_kbps(700));
    let mut l = LossBasedControl::new(Rate::from_kbps(6), Rate::from_bps(1), Rate::from_mbps(1));
    l.update_packets_lost(t_ms(0), 0, 1);
    assert_eq!(
        l.update_packets_lost(t_ms(3000), 100, 100),
        Some(LossAction::Decrease)
    );
    assert_eq!(l.target(), consts::MIN_BITRATE);
}

fn run_with_loss(lost_of_20: u64) -> Sim {
    let cfg = GccConfig {
        start_rate: Rate::from_kbps(500),
        ..GccConfig::default()
    };
    let path = Path {
        sending: Sending::Every(ms(10)),
        loss_period: 20,
        loss_first_n: lost_of_20,
        ..Path::default()
    };
    let mut sim = Sim::new(cfg, path);
    sim.run_until(Time::from_secs(6));
    sim
}

#[test]
fn through_the_controller_5_percent_holds_15_percent_cuts_1_percent_grows() {
    // 5 %: the first loss fraction (after 1 s) stops the start phase's
    // following of the delay-based estimate; from then on the target holds
    // while the delay-based estimate keeps growing.
    let sim = run_with_loss(1);
    assert!(
        (12..=13).contains(&sim.gcc.fraction_loss_q8()),
        "q8 {}",
        sim.gcc.fraction_loss_q8()
    );
    let (a, b) = (
        sim.target_at(Time::from_secs(2)),
        sim.target_at(Time::from_secs(6)),
    );
    assert_eq!(a, b, "held at 5 % loss");
    assert!(sim.gcc.delay_based_rate() > b);
    assert_eq!(sim.gcc.loss_decreases(), 0);

    // 15 %: one cut per loss report (every second), by (512 − q8)/512.
    let sim = run_with_loss(3);
    let q8 = u64::from(sim.gcc.fraction_loss_q8());
    assert!((36..=40).contains(&q8), "q8 {q8}");
    assert!(
        sim.gcc.loss_decreases() >= 4,
        "{}",
        sim.gcc.loss_decreases()
    );
    // Each cut happens at a loss report (once a second, more than
    // 300 ms + RTT apart): compare the loss-based estimate across it.
    let cuts: Vec<(Rate, Rate, u8)> = sim
        .steps
        .windows(2)
        .filter(|w| w[1].loss_decreases > w[0].loss_decreases)
        .map(|w| (w[1].loss_before, w[1].loss_after, w[1].loss_q8))
        .collect();
    assert_eq!(cuts.len() as u64, sim.gcc.loss_decreases());
    // And the target never rises under 15 % loss once the first fraction is in.
    let first_cut = sim
        .steps
        .iter()
        .position(|s| s.loss_decreases == 1)
        .expect("a cut");
    assert!(sim.steps[first_cut..]
        .windows(2)
        .all(|w| w[1].target <= w[0].target));
    for &(before, after, q8) in &cuts {
        let expect = (before.as_bps() as f64 * (512.0 - f64::from(q8)) / 512.0) as u64;
        assert!(
            after.as_bps().abs_diff(expect) <= 1,
            "cut {before} → {after}, q8 {q8}: expected {expect}"
        );
    }

    // 1 %: grows (≤ 2 % counts as no loss).
    let sim = run_with_loss(0);
    let base = sim.target_at(Time::from_secs(2));
    assert!(sim.gcc.target_rate().as_bps() as f64 > 1.3 * base.as_bps() as f64);
    let path = Path {
        sending: Sending::Every(ms(10)),
        loss_period: 100,
        loss_first_n: 1,
        ..Path::default()
    };
    let mut sim = Sim::new(
        GccConfig {
            start_rate: Rate::from_kbps(500),
            ..GccConfig::default()
        },
        path,
    );
    sim.run_until(Time::from_secs(6));
    assert_eq!(sim.gcc.fraction_loss_q8(), 2);
    let (a, b) = (
        sim.target_at(Time::from_secs(2)),
        sim.target_at(Time::from_secs(6)),
    );
    assert!(
        b.as_bps() as f64 > 1.3 * a.as_bps() as f64,
        "{a} → {b} at 1 %"
    );
}

// ---------------------------------------------------------------------------
// (5) Grouping.

#[test]
fn packets_sent_within_5ms_form_one_group() {
    let mut ia = InterArrival::default();
    let arr = |send_ms: u64| t_ms(send_ms) + ms(10) + RX_CLOCK_OFFSET;
    // Sent at 0..=5 ms: one group (5 ms after the first is still inside).
    for s in 0..=5 {
        assert_eq!(ia.compute_deltas(t_ms(s), arr(s), t_ms(100), 100), None);
    }
    assert_eq!(ia.groups_started(), 1);
    // 6 ms: a new group, but no deltas until a third group starts.
    for s in 6..=11 {
        assert_eq!(ia.compute_deltas(t_ms(s), arr(s), t_ms(100), 100), None);
    }
    assert_eq!(ia.groups_started(), 2);
    let d = ia
        .compute_deltas(t_ms(12), arr(12), t_ms(100), 100)
        .expect("deltas of the first two groups");
    // Latest send of each group (5, 11) and last arrival (15, 21).
    assert_eq!(d.send_delta_ms, 6.0);
    assert_eq!(d.arrival_delta_ms, 6.0);
    assert_eq!(d.size_delta, 0);
}

#[test]
fn bursts_join_a_group_for_at_most_100ms() {
    // Sent 10 ms apart, arriving 4 ms apart (a queue draining): one burst
    // per 100 ms of arrivals (kMaxBurstDuration).
    let mut ia = InterArrival::default();
    let mut out = Vec::new();
    for k in 0..=50u64 {
        let sent = t_ms(10 * k);
        let arrival = t_ms(100 + 4 * k) + RX_CLOCK_OFFSET;
        if let Some(d) = ia.compute_deltas(sent, arrival, t_ms(1000), 1000) {
            out.push((k, d));
        }
    }
    // Groups: k = 0..=24 (arrivals 100..196), 25..=49 (200..296), 50.
    assert_eq!(ia.groups_started(), 3);
    assert_eq!(out.len(), 1);
    let (k, d) = out[0];
    assert_eq!(k, 50);
    assert_eq!(d.send_delta_ms, 250.0);
    assert_eq!(d.arrival_delta_ms, 100.0);
    // Arriving later than the send spacing predicts: not a burst.
    let mut ia = InterArrival::default();
    for k in 0..3u64 {
        ia.compute_deltas(t_ms(10 * k), t_ms(100 + 12 * k), t_ms(1000), 1000);
    }
    assert_eq!(ia.groups_started(), 3);
}

// ---------------------------------------------------------------------------
// (6) Bounds.

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn target_never_leaves_min_max(
        min_kbps in 5u64..400,
        span_kbps in 0u64..3000,
        start_kbps in 1u64..5000,
        cap_kbps in prop::option::of(50u64..4000),
        drop_to_kbps in prop::option::of(20u64..1000),
        lost_of_20 in 0u64..10,
        delay_ms in 1u64..150,
        ramp_us in 0u64..3000,
    ) {
        let cfg = GccConfig {
            start_rate: Rate::from_kbps(start_kbps),
            min_rate: Rate::from_kbps(min_kbps),
            max_rate: Rate::from_kbps(min_kbps + span_kbps),
            ..GccConfig::default()
        };
        let path = Path {
            delay: Dur::from_millis(delay_ms),
            capacity: cap_kbps.map(Rate::from_kbps),
            capacity_change: drop_to_kbps.map(|k| (Time::from_secs(3), Some(Rate::from_kbps(k)))),
            ramp_from: Some(Time::from_secs(2)),
            ramp_per_packet: Dur::from_micros(ramp_us),
            loss_period: 20,
            loss_first_n: lost_of_20,
            ..Path::default()
        };
        let mut sim = Sim::new(cfg, path);
        // run_until checks the bounds after every event.
        sim.run_until(Time::from_secs(6));
        prop_assert!(!sim.steps.is_empty());
    }
}

// ---------------------------------------------------------------------------
// (7) The state machine.

#[test]
#[should_panic(expected = "illegal GCC rate-control transition decrease -> increase")]
fn illegal_rate_control_transition_panics() {
    let mut a = AimdRateControl::new(
        Rate::from_kbps(300),
        Rate::from_kbps(5),
        Rate::from_mbps(30),
        0.85,
    );
    a.transition_to(t_ms(0), RateControlState::Decrease);
    a.transition_to(t_ms(1), RateControlState::Increase);
}

#[test]
fn rate_control_follows_the_state_table() {
    let mut a = AimdRateControl::new(
        Rate::from_kbps(300),
        Rate::from_kbps(5),
        Rate::from_mbps(30),
        0.85,
    );
    assert_eq!(a.state(), RateControlState::Hold);
    // normal: Hold → Increase; the first update only starts the clock.
    a.update(t_ms(0), BandwidthUsage::Normal, Some(Rate::from_kbps(300)));
    assert_eq!(a.state(), RateControlState::Increase);
    // Δt = 0 there: 1.08^0 − 1 = 0, so the 1000 bit/s floor of a step.
    assert_eq!(a.estimate(), Rate::from_kbps(301));
    // 1 s later: ×1.08 (multiplicative, no link-capacity estimate yet).
    a.update(
        t_ms(1000),
        BandwidthUsage::Normal,
        Some(Rate::from_kbps(300)),
    );
    assert_eq!(a.estimate(), Rate::from_bps(325_080));
    // The increase is capped at 1.5 × throughput + 10 kbit/s: 1.5 · 200k
    // + 10k = 310k is below the estimate, so no increase ...
    a.update(
        t_ms(2000),
        BandwidthUsage::Normal,
        Some(Rate::from_kbps(200)),
    );
    assert_eq!(
        a.estimate(),
        Rate::from_bps(325_080),
        "above 1.5·200k + 10k: no increase"
    );
    // ... and with 1.5 · 210.5k + 10k = 325.75k the 50 ms step (×1.08^0.05
    // → 326 333 bit/s) is cut there.
    a.update(
        t_ms(2050),
        BandwidthUsage::Normal,
        Some(Rate::from_bps(210_500)),
    );
    assert_eq!(a.estimate(), Rate::from_bps(325_750));
    // under-use: Increase → Hold, no change.
    a.update(
        t_ms(2100),
        BandwidthUsage::Underusing,
        Some(Rate::from_kbps(300)),
    );
    assert_eq!(a.state(), RateControlState::Hold);
    assert_eq!(a.estimate(), Rate::from_bps(325_750));
    // over-use: Hold → Decrease → Hold, A = 0.85·R − 5 kbit/s.
    a.update(
        t_ms(2400),
        BandwidthUsage::Overusing,
        Some(Rate::from_kbps(300)),
    );
    assert_eq!(a.state(), RateControlState::Hold);
    assert_eq!(a.estimate(), Rate::from_kbps(250));
    assert_eq!(a.link_capacity(), Some(Rate::from_kbps(300)));
    // Within one RTT (default 200 ms) no second decrease, unless the
    // throughput is below half the estimate.
    assert!(!a.time_to_reduce_further(t_ms(2500), Rate::from_kbps(200)));
    assert!(a.time_to_reduce_further(t_ms(2500), Rate::from_kbps(124)));
    assert!(a.time_to_reduce_further(t_ms(2600), Rate::from_kbps(200)));
    // Near the link capacity: additive, one average packet per
    // 2·(RTT + 100 ms). At 250 kbit/s: 1041.67 B frames in one packet,
    // 8333 bit / 0.6 s = 13 889 bit/s per second.
    a.update(
        t_ms(3000),
        BandwidthUsage::Normal,
        Some(Rate::from_kbps(250)),
    );
    assert_eq!(a.state(), RateControlState::Increase);
    let rate = a.near_max_increase_rate_bps_per_s();
    assert!((rate - 250_000.0 / 30.0 / 0.6).abs() < 1e-6, "{rate}");
    a.update(
        t_ms(3500),
        BandwidthUsage::Normal,
        Some(Rate::from_kbps(250)),
    );
    let expect = 250_000.0 + rate * 0.5;
    assert!(
        (a.estimate().as_bps() as f64 - expect).abs() <= 1.0,
        "{}",
        a.estimate()
    );
}

#[test]
fn classic_controller_sends_not_ect_and_ignores_ce() {
    let mut g = Gcc::default();
    assert_eq!(g.name(), "gcc");
    assert_eq!(g.ecn(), Ecn::NotEct);
    assert_eq!(g.window(), u64::MAX);
    assert_eq!(g.target_rate(), Rate::from_kbps(300));
    assert_eq!(g.pacing_rate(), Rate::from_kbps(750));
    let mut pkts = Vec::new();
    for k in 0..40u64 {
        g.on_sent(t_ms(10 * k), k, 1200);
        pkts.push(PacketReport {
            seq: k,
            size: 1200,
            sent: t_ms(10 * k),
            arrival: Some(t_ms(10 * k + 20)),
            ecn: Ecn::Ce,
        });
    }
    g.on_feedback(
        t_ms(440),
        &Feedback {
            report_time: t_ms(420),
            packets: &pkts,
        },
    );
    assert_eq!(g.report()["ce_marks_ignored"], 40);
    assert_eq!(g.delay_decreases(), 0);
    assert_eq!(g.loss_decreases(), 0);
    let mut names = Vec::new();
    g.sample(t_ms(440), &mut |n, _| names.push(n));
    for n in [
        "gcc_target_mbps",
        "gcc_trend_ms",
        "gcc_threshold_ms",
        "gcc_loss_pct",
    ] {
        assert!(names.contains(&n), "{n}");
    }
}
