//! Delivery-rate estimation, draft-cheng-iccrg-delivery-rate-estimation-02
//! (and Linux `net/ipv4/tcp_rate.c`, which it describes).
//!
//! Each transmission snapshots the connection's delivery state into the
//! segment ([`TxSnapshot`]); each ACK turns the newest delivered segment's
//! snapshot into a [`RateSample`]: bytes delivered between that segment's
//! send and its ACK, over the longer of the send and the ACK phases.
//!
//! Counted in bytes (the draft and Linux count packets). Not implemented:
//! SACK-reneging invalidation (the receiver never reneges), the
//! `rate_delivered`/`rate_interval` "last non-app-limited sample" cache.

use l4slab_core::{Dur, Rate, Time};

/// Connection delivery state copied into a segment at each (re)transmission
/// (draft §3.2 "Upon transmitting or retransmitting a data packet").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxSnapshot {
    /// `P.delivered`.
    pub delivered: u64,
    /// `P.delivered_time`.
    pub delivered_time: Time,
    /// `P.first_sent_time`.
    pub first_sent_time: Time,
    /// `P.is_app_limited`.
    pub app_limited: bool,
    /// Bytes marked lost on the connection so far (BBRv3's `P.lost`).
    pub lost: u64,
    /// Bytes in flight just after this transmission (BBRv3's `P.tx_in_flight`).
    pub tx_in_flight: u64,
}

/// One rate sample (draft §3.3 `rs`), public for controllers and traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (`rs.delivered`).
    pub delivered: u64,
    /// `max(send_elapsed, ack_elapsed)` (`rs.interval`).
    pub interval: Dur,
    /// `delivered / interval`; `None` if the interval was shorter than min RTT.
    pub delivery_rate: Option<Rate>,
    /// The newest delivered segment was sent while application-limited.
    pub is_app_limited: bool,
    /// Send time of the newest delivered segment.
    pub newest_sent_time: Time,
    /// Bytes in flight when the newest delivered segment was sent.
    pub tx_in_flight: u64,
    /// Bytes the connection had marked lost when it was sent.
    pub prior_lost: u64,
}

/// Per-ACK accumulation (draft `UpdateRateSample` state).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SampleBuilder {
    has_data: bool,
    prior_delivered: u64,
    prior_time: Time,
    send_elapsed: Dur,
    last_order: u64,
    snapshot: TxSnapshot,
    newest_sent: Time,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct RateEstimator {
    /// `C.delivered`: bytes delivered (cumulatively or selectively acked).
    delivered: u64,
    /// `C.delivered_time`.
    delivered_time: Time,
    /// `C.first_sent_time`.
    first_sent_time: Time,
    /// `C.app_limited`: 0, or the `delivered` mark after which the app-limited
    /// bubble has left the network.
    app_limited: u64,
    /// Bytes marked lost so far.
    lost: u64,
}

impl RateEstimator {
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// `C.app_limited != 0`: an app-limited bubble is still in the network.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// `C.lost`: bytes marked lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
    }

    /// Snapshot for a segment being (re)transmitted now. `nothing_outstanding`
    /// is true when no data was outstanding before this one.
    pub fn on_send(
        &mut self,
        now: Time,
        nothing_outstanding: bool,
        tx_in_flight: u64,
    ) -> TxSnapshot {
        // draft §3.2: "if (SND.NXT == SND.UNA) /* no packets in flight yet? */
        //   C.first_sent_time = C.delivered_time = Now()" (Linux: !packets_out)
        if nothing_outstanding {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
            lost: self.lost,
            tx_in_flight,
        }
    }

    /// One segment newly delivered by this ACK (draft §3.3 `UpdateRateSample`).
    /// `bytes` is its payload; each segment is passed at most once. `order` is
    /// its transmission order, the tie-breaker for equal send times (the draft
    /// and Linux use `end_seq`; see `rack.rs` for why the order is better here).
    pub fn on_delivered(
        &mut self,
        now: Time,
        bytes: u64,
        sent: Time,
        order: u64,
        p: &TxSnapshot,
        rs: &mut SampleBuilder,
    ) {
        // draft §3.3: C.delivered += P.data_length; C.delivered_time = Now()
        self.delivered += bytes;
        self.delivered_time = now;
        // draft §3.3: update using the newest packet (Linux tcp_rate_skb_delivered:
        // `!rs->prior_delivered || tcp_skb_sent_after(...)`).
        let newest = !rs.has_data
            || sent > self.first_sent_time
            || (sent == self.first_sent_time && order > rs.last_order);
        if newest {
            rs.has_data = true;
            rs.prior_delivered = p.delivered;
            rs.prior_time = p.delivered_time;
            rs.send_elapsed = sent.saturating_since(p.first_sent_time);
            rs.last_order = order;
            rs.snapshot = *p;
            rs.newest_sent = sent;
            // draft §3.3: C.first_sent_time = P.sent_time
            self.first_sent_time = sent;
        }
    }

    /// Close the sample for this ACK (draft §3.3 `GenerateRateSample`).
    pub fn finish(
        &mut self,
        now: Time,
        rs: &SampleBuilder,
        min_rtt: Option<Dur>,
    ) -> Option<RateSample> {
        // draft §3.3: "Clear app-limited field if bubble is ACKed and gone."
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if !rs.has_data {
            return None;
        }
        let ack_elapsed = now.saturating_since(rs.prior_time);
        // draft §3.3: rs.interval = max(rs.send_elapsed, rs.ack_elapsed)
        let interval = rs.send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - rs.prior_delivered;
        // draft §3.3: "if (rs.interval < MinRTT(tp)) ... return false" (no reliable sample)
        let valid = !interval.is_zero() && min_rtt.is_none_or(|m| interval >= m);
        Some(RateSample {
            delivered,
            interval,
            delivery_rate: if valid {
                Rate::from_bytes_per(delivered, interval)
            } else {
                None
            },
            is_app_limited: rs.snapshot.app_limited,
            newest_sent_time: rs.newest_sent,
            tx_in_flight: rs.snapshot.tx_in_flight,
            prior_lost: rs.snapshot.lost,
        })
    }

    /// draft §3.4 / Linux `tcp_rate_check_app_limited`: called when the sender
    /// stops for lack of data. The caller checks "less than one segment to
    /// send", "not cwnd-limited" and "all lost segments retransmitted".
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        // draft §3.4: C.app_limited = (C.delivered + C.inflight) ? : 1
        self.app_limited = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_window_gives_the_bottleneck_rate() {
        // 10 segments of 1000 B sent back to back at t=0, ACKed one per ms
        // from t=100 ms: the last ACK's sample covers 10 000 B in 109 ms...
        // but the newest segment was sent at 0 with first_sent_time 0, so
        // send_elapsed = 0 and the ACK phase rules: interval = 109 ms.
        let mut r = RateEstimator::default();
        let snaps: Vec<TxSnapshot> = (0..10)
            .map(|i| r.on_send(Time::ZERO, i == 0, 1000 * (i + 1)))
            .collect();
        let mut last = None;
        for (i, p) in snaps.iter().enumerate() {
            let now = Time::from_millis(100 + i as u64);
            let mut b = SampleBuilder::default();
            r.on_delivered(now, 1000, Time::ZERO, i as u64, p, &mut b);
            last = r.finish(now, &b, Some(Dur::from_millis(100)));
        }
        let s = last.unwrap();
        assert_eq!(s.delivered, 10_000);
        assert_eq!(s.interval, Dur::from_millis(109));
        assert_eq!(
            s.delivery_rate,
            Rate::from_bytes_per(10_000, Dur::from_millis(109))
        );
        assert_eq!(r.delivered(), 10_000);
    }

    #[test]
    fn short_intervals_and_app_limited_bubbles() {
        let mut r = RateEstimator::default();
        r.mark_app_limited(5000);
        let p = r.on_send(Time::ZERO, true, 1000);
        assert!(p.app_limited);
        let mut b = SampleBuilder::default();
        let now = Time::from_millis(10);
        r.on_delivered(now, 1000, Time::ZERO, 0, &p, &mut b);
        // 10 ms < min RTT 20 ms: no rate, but the sample (and its flag) exist.
        let s = r.finish(now, &b, Some(Dur::from_millis(20))).unwrap();
        assert_eq!(s.delivery_rate, None);
        assert!(s.is_app_limited);
        // The bubble (5000 B) has not been delivered yet.
        assert!(r.on_send(now, false, 0).app_limited);
    }
}
