//! Scripted driver for controller tests: a tiny fake transport with a virtual
//! clock, so a test reads as a timeline —
//!
//! ```
//! use l4slab_cc::{testing::Driver, CongestionControl, Reno, RenoConfig};
//! let mut d = Driver::new(Reno::new(RenoConfig::default()));
//! d.send_and_ack_rounds(3); // 10 -> 20 -> 40 -> 80 segments
//! d.lose(1448, true);       // first loss of an episode: halve
//! d.lose(1448, false);      // same episode: nothing more
//! d.recovery_end();
//! assert_eq!(d.cc.cwnd(), 40 * 1448);
//! ```
//!
//! The driver models a cwnd-limited sender on a path with a fixed RTT and no
//! queue: a *round* sends one full window at once, waits one RTT and then
//! receives one ACK per `segments_per_ack` segments. Congestion events report
//! the window as the flight size (a cwnd-limited sender keeps it full) unless
//! [`Driver::set_flight`] says otherwise. Public so that every controller's
//! tests (and the property tests in `tests/`) use the same script.

use std::collections::VecDeque;

use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, TraceEvent, VecTracer};

use crate::{AckEvent, CcCtx, CongestionControl, CongestionEvent, LostPacket};

/// A fake transport around a controller `C`.
pub struct Driver<C> {
    pub cc: C,
    /// Virtual clock; only the driver's methods advance it.
    pub now: Time,
    /// Path round-trip time (every ACK carries it as its RTT sample).
    pub rtt: Dur,
    /// Segment size used to cut windows into packets and ACKs.
    pub mss: u64,
    pub flow: FlowId,
    /// Everything the controller traced, with timestamps.
    pub tracer: VecTracer,
    rng: SimRng,
    segments_per_ack: u64,
    app_limited: bool,
    /// Set by a loss or RTO, cleared by [`Driver::recovery_end`]; reported in
    /// [`AckEvent::in_recovery`].
    in_recovery: bool,
    /// Fraction of segments reported CE-marked in rounds, in `[0, 1]`.
    ce_fraction: f64,
    /// Segments acked so far in rounds (for deterministic CE spacing).
    acked_segments: u64,
    flight_override: Option<u64>,
    delivered: u64,
    /// `delivered` when the data now being acknowledged was sent (the
    /// start of the last round): reported as [`AckEvent::rs_prior_delivered`].
    sent_delivered: u64,
    /// Bytes declared lost so far ([`AckEvent::total_lost`]).
    lost_total: u64,
    /// `lost_total` when the data now being acknowledged was sent.
    sent_lost: u64,
    /// `rs_tx_in_flight` of the next delivery (set by rounds).
    next_tx_in_flight: Option<u64>,
    /// Cap on the delivery rate rounds report ([`Driver::delivery_rate_cap`]).
    rate_cap: Option<Rate>,
    /// `Some` = CE marks are independent Bernoulli draws ([`Driver::mark_ce_random`])
    /// from this stream, kept apart from the controller's stream.
    ce_rng: Option<SimRng>,
    /// CE-marked segments reported so far by rounds.
    ce_marked_segments: u64,
    /// Reported as [`AckEvent::min_rtt`] instead of the path RTT.
    min_rtt_override: Option<Dur>,
}

impl<C: CongestionControl> Driver<C> {
    /// Flow 1, RTT 50 ms, MSS 1448 B, one ACK per segment, no CE marks.
    pub fn new(cc: C) -> Self {
        Driver {
            cc,
            now: Time::ZERO,
            rtt: Dur::from_millis(50),
            mss: 1448,
            flow: 1,
            tracer: VecTracer::default(),
            rng: SimRng::derive(0, "cc-test"),
            segments_per_ack: 1,
            app_limited: false,
            in_recovery: false,
            ce_fraction: 0.0,
            acked_segments: 0,
            flight_override: None,
            delivered: 0,
            sent_delivered: 0,
            lost_total: 0,
            sent_lost: 0,
            next_tx_in_flight: None,
            rate_cap: None,
            ce_rng: None,
            ce_marked_segments: 0,
            min_rtt_override: None,
        }
    }

    /// Builder: path RTT.
    pub fn rtt(mut self, rtt: Dur) -> Self {
        assert!(!rtt.is_zero(), "the driver needs a positive RTT");
        self.rtt = rtt;
        self
    }

    /// Builder: segment size the driver cuts windows into.
    pub fn mss(mut self, mss: u64) -> Self {
        assert!(mss > 0, "mss must be positive");
        self.mss = mss;
        self
    }

    /// Builder: segments covered by one ACK (2 = delayed ACKs, RFC 5681 §4.2).
    pub fn segments_per_ack(mut self, n: u64) -> Self {
        assert!(n > 0, "segments_per_ack must be positive");
        self.segments_per_ack = n;
        self
    }

    /// Builder: seed of the controller's random stream ([`CcCtx::rng`]),
    /// `SimRng::derive(seed, "cc-test")`; the default is seed 0.
    pub fn seed(mut self, seed: u64) -> Self {
        self.rng = SimRng::derive(seed, "cc-test");
        self
    }

    /// Report at most this delivery rate in rounds (a bottleneck the
    /// window outgrew); `None`, the default, reports `window / rtt`.
    pub fn delivery_rate_cap(&mut self, cap: Option<Rate>) -> &mut Self {
        self.rate_cap = cap;
        self
    }

    /// From now on, mark ACKs app-limited (the sender had nothing to send).
    pub fn app_limited(&mut self, on: bool) -> &mut Self {
        self.app_limited = on;
        self
    }

    /// From now on, report this fraction of the segments of each round as
    /// CE-marked (evenly spaced, deterministic).
    pub fn mark_ce(&mut self, fraction: f64) -> &mut Self {
        assert!((0.0..=1.0).contains(&fraction), "CE fraction {fraction}");
        self.ce_fraction = fraction;
        self.ce_rng = None;
        self
    }

    /// From now on, report each segment of a round CE-marked independently
    /// with probability `p` (what a probabilistic AQM such as the DualPI2 L
    /// queue's coupled marking does). Draws come from the driver's own
    /// stream `"cc-test/ce"`, so the controller's RNG stream is untouched
    /// and runs are reproducible.
    pub fn mark_ce_random(&mut self, p: f64) -> &mut Self {
        assert!((0.0..=1.0).contains(&p), "CE probability {p}");
        self.ce_fraction = p;
        self.ce_rng = Some(SimRng::derive(0, "cc-test/ce"));
        self
    }

    /// Report `min_rtt` as the path's minimum RTT (`None`: the current
    /// [`Driver::rtt`], the default), e.g. to model a standing queue.
    pub fn set_min_rtt(&mut self, min_rtt: Option<Dur>) -> &mut Self {
        self.min_rtt_override = min_rtt;
        self
    }

    /// Bytes delivered so far (the value of [`AckEvent::delivered`]).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// CE-marked segments reported so far by [`Driver::send_and_ack_rounds`].
    pub fn ce_marked_segments(&self) -> u64 {
        self.ce_marked_segments
    }

    /// Flight size reported by congestion events; `None` = the current cwnd.
    pub fn set_flight(&mut self, bytes: Option<u64>) -> &mut Self {
        self.flight_override = bytes;
        self
    }

    /// The flight size the next congestion event will report.
    pub fn flight(&self) -> u64 {
        self.flight_override.unwrap_or_else(|| self.cc.cwnd())
    }

    fn ctx(&mut self) -> (&mut C, CcCtx<'_>) {
        (
            &mut self.cc,
            CcCtx {
                flow: self.flow,
                mss: self.mss,
                rng: &mut self.rng,
                tracer: &mut self.tracer,
            },
        )
    }

    /// `n` rounds: send one full cwnd, advance one RTT, ACK it all.
    pub fn send_and_ack_rounds(&mut self, n: usize) -> &mut Self {
        for _ in 0..n {
            let window = self.cc.cwnd();
            let mss = self.mss;
            let now = self.now;
            self.sent_delivered = self.delivered;
            self.sent_lost = self.lost_total;
            let mut in_flight = 0;
            let mut left = window;
            while left > 0 {
                let seg = left.min(mss);
                left -= seg;
                in_flight += seg;
                let (cc, mut ctx) = self.ctx();
                cc.on_packet_sent(now, seg, in_flight, &mut ctx);
            }
            self.now += self.rtt;
            let rate = Rate::from_bytes_per(window, self.rtt)
                .map(|r| self.rate_cap.map_or(r, |cap| r.min(cap)));
            let mut left = window;
            while left > 0 {
                let bytes = left.min(mss * self.segments_per_ack);
                left -= bytes;
                let ce = self.ce_bytes_for(bytes);
                // The newest acked segment left with `window - left` in flight.
                self.next_tx_in_flight = Some(window - left);
                self.deliver(bytes, ce, left, rate);
            }
        }
        self
    }

    /// CE-marked bytes among the next `bytes` acked: segment `i` (counted over
    /// the whole run) is marked when `floor((i+1)f) > floor(i f)`.
    fn ce_bytes_for(&mut self, bytes: u64) -> u64 {
        let segs = bytes.div_ceil(self.mss);
        let f = self.ce_fraction;
        let mut ce = 0;
        for _ in 0..segs {
            let i = self.acked_segments as f64;
            let marked = match &mut self.ce_rng {
                Some(rng) => rng.chance(f),
                None => ((i + 1.0) * f).floor() > (i * f).floor(),
            };
            if marked {
                ce += self.mss;
                self.ce_marked_segments += 1;
            }
            self.acked_segments += 1;
        }
        ce.min(bytes)
    }

    fn deliver(&mut self, bytes: u64, ce_bytes: u64, in_flight: u64, rate: Option<Rate>) {
        self.delivered += bytes;
        let ack = AckEvent {
            acked_bytes: bytes,
            ce_bytes,
            in_flight,
            rtt_sample: Some(self.rtt),
            srtt: self.rtt,
            min_rtt: self.min_rtt_override.unwrap_or(self.rtt),
            delivery_rate: rate,
            delivered: self.delivered,
            app_limited: self.app_limited,
            // The scripted sender keeps its window full unless told it is app-limited.
            cwnd_limited: !self.app_limited,
            in_recovery: self.in_recovery,
            // The acknowledged data was sent at the start of the last round.
            rs_prior_delivered: self.sent_delivered,
            rs_delivered: self.delivered - self.sent_delivered,
            rs_tx_in_flight: self.next_tx_in_flight.take().unwrap_or(in_flight + bytes),
            rs_prior_lost: self.sent_lost,
            total_lost: self.lost_total,
        };
        let now = self.now;
        let (cc, mut ctx) = self.ctx();
        cc.on_ack(now, &ack, &mut ctx);
    }

    /// One ACK of `bytes` at the current time (no clock advance); the flight
    /// after it is the reported flight minus `bytes`.
    pub fn ack(&mut self, bytes: u64) -> &mut Self {
        let in_flight = self.flight().saturating_sub(bytes);
        let rate = Rate::from_bytes_per(self.cc.cwnd(), self.rtt);
        self.deliver(bytes, 0, in_flight, rate);
        self
    }

    /// One ACK of `bytes` of which `ce_bytes` were CE-marked.
    pub fn ack_ce(&mut self, bytes: u64, ce_bytes: u64) -> &mut Self {
        assert!(ce_bytes <= bytes);
        let in_flight = self.flight().saturating_sub(bytes);
        let rate = Rate::from_bytes_per(self.cc.cwnd(), self.rtt);
        self.deliver(bytes, ce_bytes, in_flight, rate);
        self
    }

    fn congestion(&mut self, ev: CongestionEvent) {
        let now = self.now;
        let (cc, mut ctx) = self.ctx();
        cc.on_congestion(now, &ev, &mut ctx);
    }

    /// The transport declares `bytes` lost (SACK/RACK); `first_in_episode`
    /// starts a new recovery episode (RFC 6582).
    pub fn lose(&mut self, bytes: u64, first_in_episode: bool) -> &mut Self {
        let in_flight = self.flight();
        self.lost_total += bytes;
        self.in_recovery = true;
        self.congestion(CongestionEvent::Loss {
            lost_bytes: bytes,
            in_flight,
            first_in_episode,
        });
        self
    }

    /// Retransmission timeout.
    pub fn rto(&mut self) -> &mut Self {
        let in_flight = self.flight();
        self.in_recovery = true;
        self.congestion(CongestionEvent::Rto { in_flight });
        self
    }

    /// Classic ECN-Echo (the transport's once-per-RTT decision, RFC 3168 §6.1.2).
    pub fn ecn_echo(&mut self) -> &mut Self {
        let in_flight = self.flight();
        self.congestion(CongestionEvent::EcnEcho { in_flight });
        self
    }

    /// The cumulative ACK passed the recovery point.
    pub fn recovery_end(&mut self) -> &mut Self {
        self.in_recovery = false;
        self.congestion(CongestionEvent::RecoveryEnd);
        self
    }

    /// Let time pass with nothing sent or received.
    pub fn advance(&mut self, d: Dur) -> &mut Self {
        self.now += d;
        self
    }

    /// Congestion window in segments of the driver's MSS.
    pub fn cwnd_segments(&self) -> f64 {
        self.cc.cwnd() as f64 / self.mss as f64
    }

    /// Hand the controller an arbitrary ACK at the current time, for
    /// details the scripted methods do not produce (e.g. a rate sample whose
    /// packet saw losses). Bytes it delivers or loses are not added to the
    /// driver's counters.
    pub fn ack_event(&mut self, ack: &AckEvent) -> &mut Self {
        let now = self.now;
        let (cc, mut ctx) = self.ctx();
        cc.on_ack(now, ack, &mut ctx);
        self
    }

    /// `(time, from, to)` of every traced state change, in order.
    pub fn state_changes_at(&self) -> Vec<(Time, &'static str, &'static str)> {
        self.tracer
            .0
            .iter()
            .filter_map(|(t, ev)| match ev {
                TraceEvent::CcStateChanged { from, to, .. } => Some((*t, *from, *to)),
                _ => None,
            })
            .collect()
    }

    /// Run the controller over a simulated bottleneck `path` for `dur`
    /// (see [`Path`]). The driver's clock, delivered and lost counters carry
    /// on from (and into) the scripted methods.
    pub fn run_path(&mut self, path: &mut Path, dur: Dur) -> &mut Self {
        self.run_path_observe(path, dur, |_, _| {})
    }

    /// [`Driver::run_path`], calling `observe(now, &cc)` after every ACK.
    pub fn run_path_observe(
        &mut self,
        path: &mut Path,
        dur: Dur,
        mut observe: impl FnMut(Time, &C),
    ) -> &mut Self {
        let end = self.now + dur;
        loop {
            // Send everything cwnd and the pacer allow now (the transport's
            // segment-counted cwnd test, Linux tcp_cwnd_test).
            while self.path_may_send(path) && path.next_send <= self.now {
                self.path_send(path);
            }
            let t_send = self.path_may_send(path).then_some(path.next_send);
            let t_ack = path.sent.iter().find_map(|p| p.ack_at);
            let t_rto = path.rto_deadline(t_ack);
            let next = [t_send, t_ack, t_rto].into_iter().flatten().min();
            match next {
                Some(t) if t <= end => self.now = self.now.max(t),
                _ => {
                    self.now = end;
                    return self;
                }
            }
            if t_rto.is_some_and(|t| t <= self.now) {
                self.path_rto(path);
                continue;
            }
            while path
                .sent
                .iter()
                .find_map(|p| p.ack_at)
                .is_some_and(|t| t <= self.now)
            {
                self.path_ack(path);
                observe(self.now, &self.cc);
            }
        }
    }

    fn path_may_send(&self, path: &Path) -> bool {
        let cwnd_segs = (self.cc.cwnd() / self.mss).max(1);
        path.pipe.div_ceil(self.mss) < cwnd_segs
    }

    /// One full-sized segment leaves now.
    fn path_send(&mut self, path: &mut Path) {
        let (now, mss) = (self.now, self.mss);
        let rate = self.cc.pacing_rate().filter(|r| r.as_bps() > 0);
        // draft-ietf-ccwg-bbr §4.1.2 OnPacketSent: "if (C.inflight == 0)
        // C.first_send_time = C.delivered_time = P.send_time".
        if path.pipe == 0 {
            path.first_sent_time = now;
            path.delivered_time = now;
            path.last_progress = now;
        }
        path.pipe += mss;
        path.next_id += 1;
        let ack_at = if path.loss_rng.chance(path.loss) {
            path.stats.random_drops += 1;
            None
        } else {
            let backlog = path.rate.bytes_in(path.link_free.saturating_since(now));
            if backlog + mss > path.buffer {
                path.stats.queue_drops += 1;
                None
            } else {
                let depart = path.link_free.max(now) + path.rate.tx_time(mss);
                path.link_free = depart;
                Some(path.ack_release(depart + path.base_rtt))
            }
        };
        path.sent.push_back(PathPacket {
            id: path.next_id,
            sent: now,
            delivered: self.delivered,
            delivered_time: path.delivered_time,
            first_sent_time: path.first_sent_time,
            tx_in_flight: path.pipe,
            lost: self.lost_total,
            ack_at,
        });
        path.stats.sent += 1;
        let in_flight = path.pipe;
        let (cc, mut ctx) = self.ctx();
        cc.on_packet_sent(now, mss, in_flight, &mut ctx);
        path.next_send = match rate {
            Some(r) => path.next_send.max(now) + r.tx_time(mss),
            None => now,
        };
    }

    /// The ACK of the oldest segment that was not dropped; the dropped ones
    /// before it are declared lost (FIFO: no reordering, so a later
    /// delivery proves them lost, as RACK would conclude).
    fn path_ack(&mut self, path: &mut Path) {
        let mss = self.mss;
        let mut newly_lost = 0;
        let (mut lost_below_recover, mut lost_above_recover) = (false, false);
        let now = self.now;
        while path.sent.front().is_some_and(|p| p.ack_at.is_none()) {
            let lost = path.sent.pop_front().expect("front exists");
            path.pipe -= mss;
            newly_lost += mss;
            match path.recover {
                Some(r) if lost.id > r => lost_above_recover = true,
                _ => lost_below_recover = true,
            }
            // Marked lost one by one, before the congestion event and the
            // ACK (Linux tcp_mark_skb_lost -> skb_marked_lost).
            self.lost_total += mss;
            self.packet_lost(&lost);
        }
        let p = path.sent.pop_front().expect("an ACK is due");
        path.pipe -= mss;
        path.last_progress = now;
        // Transport order: end the episode, detect losses, then on_ack.
        if path.recover.is_some_and(|_| p.id >= path.repair) {
            path.recover = None;
            self.in_recovery = false;
            self.congestion(CongestionEvent::RecoveryEnd);
        }
        if newly_lost > 0 || path.pending_loss {
            // A lost segment is repaired by the next transmission: the
            // episode lasts until that one is acknowledged (RFC 6582: the
            // cumulative ACK passes the recovery point once every hole
            // below it is filled). Losses above the recovery point are the
            // next window's: they start a new episode when this one ends
            // (Linux tcp_time_to_recover: lost_out > 0).
            let first = path.recover.is_none();
            if first {
                path.recover = Some(path.next_id);
                path.repair = path.next_id + 1;
                path.pending_loss = false;
            } else if lost_below_recover {
                path.repair = path.next_id + 1;
            }
            path.pending_loss |= !first && lost_above_recover;
            self.in_recovery = true;
            let in_flight = path.pipe + mss + newly_lost;
            self.congestion(CongestionEvent::Loss {
                lost_bytes: newly_lost.max(mss),
                in_flight,
                first_in_episode: first,
            });
        }
        // RTT (RFC 6298 smoothing) and the lifetime minimum.
        let rtt = now.saturating_since(p.sent);
        path.srtt = Some(match path.srtt {
            None => rtt,
            Some(s) => Dur::from_nanos((7 * s.as_nanos() + rtt.as_nanos()) / 8),
        });
        let min_rtt = path.min_rtt.map_or(rtt, |m| m.min(rtt));
        path.min_rtt = Some(min_rtt);
        // draft-ietf-ccwg-bbr §4.1.2 UpdateRateSample / GenerateRateSample.
        self.delivered += mss;
        path.delivered_time = now;
        path.first_sent_time = p.sent;
        let send_elapsed = p.sent.saturating_since(p.first_sent_time);
        let ack_elapsed = now.saturating_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let rs_delivered = self.delivered - p.delivered;
        let delivery_rate = if interval < min_rtt {
            None // "no reliable rate sample"
        } else {
            Rate::from_bytes_per(rs_delivered, interval)
        };
        path.stats.delivered += 1;
        let ack = AckEvent {
            acked_bytes: mss,
            in_flight: path.pipe,
            rtt_sample: Some(rtt),
            srtt: path.srtt.unwrap_or(rtt),
            min_rtt,
            delivery_rate,
            delivered: self.delivered,
            app_limited: false,
            // The path model always sends a full window.
            cwnd_limited: true,
            in_recovery: path.recover.is_some(),
            rs_prior_delivered: p.delivered,
            rs_delivered,
            rs_tx_in_flight: p.tx_in_flight,
            rs_prior_lost: p.lost,
            total_lost: self.lost_total,
            ..AckEvent::default()
        };
        let (cc, mut ctx) = self.ctx();
        cc.on_ack(now, &ack, &mut ctx);
    }

    /// Nothing outstanding will be acknowledged: a retransmission timeout
    /// declares everything lost (RFC 6298 §5.5-§5.7, without retransmission).
    fn path_rto(&mut self, path: &mut Path) {
        let in_flight = path.pipe;
        for lost in std::mem::take(&mut path.sent) {
            self.lost_total += self.mss;
            self.packet_lost(&lost);
        }
        path.pipe = 0;
        path.recover = Some(path.next_id);
        path.repair = path.next_id + 1;
        path.pending_loss = false;
        path.last_progress = self.now;
        path.stats.rtos += 1;
        self.in_recovery = true;
        self.congestion(CongestionEvent::Rto { in_flight });
    }

    /// The path packet `p`, just added to the lost counter, is marked lost.
    fn packet_lost(&mut self, p: &PathPacket) {
        let lost = LostPacket {
            bytes: self.mss,
            tx_in_flight: p.tx_in_flight,
            prior_lost: p.lost,
            prior_delivered: p.delivered,
            app_limited: false,
            total_lost: self.lost_total,
            delivered: self.delivered,
        };
        self.lost_packet(&lost);
    }

    /// The transport marks one packet lost ([`CongestionControl::on_packet_lost`])
    /// at the current time. The driver's lost counter is not changed: pass
    /// `total_lost` as the transport would have counted it.
    pub fn lost_packet(&mut self, lost: &LostPacket) -> &mut Self {
        let now = self.now;
        let (cc, mut ctx) = self.ctx();
        cc.on_packet_lost(now, lost, &mut ctx);
        self
    }

    /// `(from, to)` of every traced state change, in order.
    pub fn state_changes(&self) -> Vec<(&'static str, &'static str)> {
        self.tracer
            .0
            .iter()
            .filter_map(|(_, ev)| match ev {
                TraceEvent::CcStateChanged { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }
}

/// A simulated bottleneck for [`Driver::run_path`]: the sender sends
/// full-sized segments whenever cwnd (counted in segments, as the transport
/// does) and the controller's pacing rate allow; each segment may be dropped
/// at random (probability `loss`) or by a full drop-tail buffer, else it
/// waits in a FIFO served at `rate` and is acknowledged `base_rtt` after it
/// leaves the bottleneck, one ACK per segment. ACKs carry the delivery-rate
/// sample of draft-ietf-ccwg-bbr §4.1 (`rs_*` fields). A delivery proves the
/// dropped segments before it lost (no reordering). Lost data is not
/// retransmitted (the sender always has new data), but the next segment
/// stands in for the repair: a recovery episode (RFC 6582) ends when the
/// segment sent after its last loss below the recovery point is
/// acknowledged, and losses above that point start the next. If nothing
/// outstanding can be acknowledged, an RTO of `max(2 srtt, 200 ms)` after
/// the last progress declares it all lost.
#[derive(Clone, Debug)]
pub struct Path {
    /// Bottleneck service rate (payload bytes).
    pub rate: Rate,
    /// Two-way propagation delay, without serialization or queueing.
    pub base_rtt: Dur,
    /// Drop-tail buffer in bytes; `u64::MAX` = unlimited.
    pub buffer: u64,
    /// Probability that a segment is lost before the queue.
    pub loss: f64,
    /// ACKs are held and released together at multiples of this interval
    /// (ACK aggregation, as on Wi-Fi or cellular links); zero = none.
    pub ack_aggregation: Dur,
    /// Counters.
    pub stats: PathStats,
    loss_rng: SimRng,
    sent: VecDeque<PathPacket>,
    link_free: Time,
    next_send: Time,
    pipe: u64,
    delivered_time: Time,
    first_sent_time: Time,
    last_progress: Time,
    recover: Option<u64>,
    /// The episode ends with the ACK of this segment (the last repair).
    repair: u64,
    /// Segments above the recovery point were lost: a new episode follows.
    pending_loss: bool,
    next_id: u64,
    srtt: Option<Dur>,
    min_rtt: Option<Dur>,
}

/// What happened on a [`Path`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    pub sent: u64,
    pub delivered: u64,
    pub random_drops: u64,
    pub queue_drops: u64,
    pub rtos: u64,
}

/// A segment in flight on a [`Path`], with its draft §4.1.2 `P.*` snapshot.
#[derive(Clone, Copy, Debug)]
struct PathPacket {
    id: u64,
    sent: Time,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    tx_in_flight: u64,
    lost: u64,
    /// `None`: dropped.
    ack_at: Option<Time>,
}

impl Path {
    /// A lossless path with an unlimited buffer.
    pub fn new(rate: Rate, base_rtt: Dur) -> Self {
        assert!(
            rate.as_bps() > 0 && !base_rtt.is_zero(),
            "path needs a rate and an RTT"
        );
        Path {
            rate,
            base_rtt,
            buffer: u64::MAX,
            loss: 0.0,
            ack_aggregation: Dur::ZERO,
            stats: PathStats::default(),
            loss_rng: SimRng::derive(0, "cc-test/path-loss"),
            sent: VecDeque::new(),
            link_free: Time::ZERO,
            next_send: Time::ZERO,
            pipe: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            last_progress: Time::ZERO,
            recover: None,
            repair: 0,
            pending_loss: false,
            next_id: 0,
            srtt: None,
            min_rtt: None,
        }
    }

    /// Builder: drop-tail buffer in bytes.
    pub fn buffer(mut self, bytes: u64) -> Self {
        self.buffer = bytes;
        self
    }

    /// Builder: random loss probability, drawn from stream
    /// `SimRng::derive(seed, "cc-test/path-loss")`.
    pub fn loss(mut self, p: f64, seed: u64) -> Self {
        assert!((0.0..=1.0).contains(&p), "loss probability {p}");
        self.loss = p;
        self.loss_rng = SimRng::derive(seed, "cc-test/path-loss");
        self
    }

    /// Builder: release ACKs in batches every `every` ([`Path::ack_aggregation`]).
    pub fn ack_aggregation(mut self, every: Dur) -> Self {
        self.ack_aggregation = every;
        self
    }

    /// When an ACK due at `t` reaches the sender.
    fn ack_release(&self, t: Time) -> Time {
        let g = self.ack_aggregation.as_nanos();
        if g == 0 {
            return t;
        }
        Time::from_nanos(t.as_nanos().div_ceil(g) * g)
    }

    /// Bytes in flight (sent, not acknowledged, not declared lost).
    pub fn in_flight(&self) -> u64 {
        self.pipe
    }

    /// Bytes queued at the bottleneck at `now`.
    pub fn backlog(&self, now: Time) -> u64 {
        self.rate.bytes_in(self.link_free.saturating_since(now))
    }

    /// The bandwidth-delay product, bytes.
    pub fn bdp(&self) -> u64 {
        self.rate.bytes_in(self.base_rtt)
    }

    fn rto_deadline(&self, next_ack: Option<Time>) -> Option<Time> {
        if self.pipe == 0 || next_ack.is_some() {
            return None;
        }
        let rto = self
            .srtt
            .map_or(Dur::from_secs(1), |s| (s * 2).max(Dur::from_millis(200)));
        Some(self.last_progress + rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reno, RenoConfig};

    #[test]
    fn rounds_advance_the_clock_and_count_delivery() {
        let mut d = Driver::new(Reno::new(RenoConfig::default())).rtt(Dur::from_millis(20));
        d.send_and_ack_rounds(2).advance(Dur::from_millis(5));
        assert_eq!(d.now, Time::from_millis(45));
        // 10 + 20 segments delivered.
        assert_eq!(d.delivered, 30 * 1448);
    }

    #[test]
    fn ce_marks_are_evenly_spaced() {
        let mut d = Driver::new(Reno::new(RenoConfig::default()));
        d.mark_ce(0.25);
        // 8 segments at 25 %: exactly 2 marked.
        assert_eq!(d.ce_bytes_for(8 * 1448), 2 * 1448);
        d.mark_ce(0.0);
        assert_eq!(d.ce_bytes_for(8 * 1448), 0);
    }

    #[test]
    fn random_ce_marks_are_bernoulli_and_reproducible() {
        let run = || {
            let mut d = Driver::new(Reno::new(RenoConfig::default()));
            d.mark_ce_random(0.1);
            let ce = d.ce_bytes_for(10_000 * 1448) / 1448;
            (ce, d.ce_marked_segments())
        };
        let (ce, counted) = run();
        assert_eq!(ce, counted);
        // Binomial(10000, 0.1): mean 1000, sd 30; 4 sd either side.
        assert!((880..=1120).contains(&ce), "{ce}");
        assert_eq!(run(), (ce, counted), "same stream, same marks");
        // Not evenly spaced: some gaps differ from 10 segments.
        let mut d = Driver::new(Reno::new(RenoConfig::default()));
        d.mark_ce_random(0.1);
        let pattern: Vec<u64> = (0..50).map(|_| d.ce_bytes_for(1448) / 1448).collect();
        let mut e = Driver::new(Reno::new(RenoConfig::default()));
        e.mark_ce(0.1);
        let even: Vec<u64> = (0..50).map(|_| e.ce_bytes_for(1448) / 1448).collect();
        assert_ne!(pattern, even);
    }

    /// Records the ACKs it is given; fixed 4-segment window.
    #[derive(Debug, Default)]
    struct Recorder(Vec<AckEvent>);

    impl CongestionControl for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn on_ack(&mut self, _: Time, ack: &AckEvent, _: &mut CcCtx<'_>) {
            self.0.push(*ack);
        }
        fn on_congestion(&mut self, _: Time, _: &CongestionEvent, _: &mut CcCtx<'_>) {}
        fn cwnd(&self) -> u64 {
            4 * 1448
        }
    }

    #[test]
    fn min_rtt_can_be_set_apart_from_the_path_rtt() {
        let mut d = Driver::new(Recorder::default());
        d.send_and_ack_rounds(1);
        d.set_min_rtt(Some(Dur::from_millis(10)));
        d.send_and_ack_rounds(1);
        let (path, min) = (Dur::from_millis(50), Dur::from_millis(10));
        let reported: Vec<Dur> = d.cc.0.iter().map(|a| a.min_rtt).collect();
        assert_eq!(reported, [path, path, path, path, min, min, min, min]);
        assert!(d.cc.0.iter().all(|a| a.rtt_sample == Some(path)));
        assert_eq!(d.delivered(), 8 * 1448);
    }
}
