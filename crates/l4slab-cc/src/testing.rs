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

use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, TraceEvent, VecTracer};

use crate::{AckEvent, CcCtx, CongestionControl, CongestionEvent};

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
        self
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
            let rate = Rate::from_bytes_per(window, self.rtt);
            let mut left = window;
            while left > 0 {
                let bytes = left.min(mss * self.segments_per_ack);
                left -= bytes;
                let ce = self.ce_bytes_for(bytes);
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
            if ((i + 1.0) * f).floor() > (i * f).floor() {
                ce += self.mss;
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
            min_rtt: self.rtt,
            delivery_rate: rate,
            delivered: self.delivered,
            app_limited: self.app_limited,
            in_recovery: self.in_recovery,
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
}
