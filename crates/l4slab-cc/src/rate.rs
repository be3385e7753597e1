//! Delivery-rate estimation, draft-cheng-iccrg-delivery-rate-estimation-02
//! (and Linux `net/ipv4/tcp_rate.c`, which it describes): the one estimator
//! both transports use, TCP per segment (`l4slab-tcp`) and QUIC per
//! packet (`l4slab-quic`). What a "packet" is stays the transport's: it
//! implements [`RatePacket`] for its sent-packet record.
//!
//! Each transmission snapshots the connection's delivery state into the
//! packet ([`TxSnapshot`]); each ACK turns the newest delivered packet's
//! snapshot into a [`RateSample`]: bytes delivered between that packet's
//! send and its ACK, over the longer of the send and the ACK phases. The
//! controllers (BBR) read the sample from the [`crate::AckEvent`] the
//! transport fills from it.
//!
//! Counted in bytes (the draft and Linux count packets). Not implemented:
//! SACK-reneging invalidation (the receiver never reneges), the
//! `rate_delivered`/`rate_interval` "last non-app-limited sample" cache.
//! The caller passes each packet to [`RateEstimator::on_delivered`] at most
//! once (the draft's `P.delivered_time = 0` "already SACKed" mark is the
//! transport's scoreboard), and decides when the sender is app-limited
//! (draft §3.4's conditions depend on the transport's queues).

use l4slab_core::{Dur, Rate, Time};

/// A sent packet (TCP: a segment; QUIC: a packet) as the estimator sees it.
pub trait RatePacket {
    /// `P.send_time` of its latest (re)transmission.
    fn sent_time(&self) -> Time;
    /// Transmission order, the tie-breaker for equal send times (draft §3.3
    /// `IsNewestPacket` uses `P.end_seq`; TCP passes the order of
    /// transmission, which also orders retransmissions, QUIC the packet
    /// number).
    fn tx_order(&self) -> u64;
    /// The snapshot [`RateEstimator::on_send`] returned when it was sent.
    fn tx_snapshot(&self) -> &TxSnapshot;
}

/// Connection delivery state copied into a packet at each (re)transmission
/// (draft §3.2 "Upon transmitting or retransmitting a data packet").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSnapshot {
    /// `P.delivered`.
    pub delivered: u64,
    /// `P.delivered_time`.
    pub delivered_time: Time,
    /// `P.first_send_time`.
    pub first_sent_time: Time,
    /// `P.is_app_limited`.
    pub app_limited: bool,
    /// Bytes marked lost on the connection so far (BBRv3's `P.lost`).
    pub lost: u64,
    /// Bytes in flight just after this transmission (BBRv3's `P.tx_in_flight`).
    pub tx_in_flight: u64,
}

/// One rate sample (draft §3.3 `rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (`rs.delivered`).
    pub delivered: u64,
    /// `C.delivered` when the newest delivered packet was sent
    /// (`rs.prior_delivered`).
    pub prior_delivered: u64,
    /// `max(send_elapsed, ack_elapsed)` (`rs.interval`).
    pub interval: Dur,
    /// `delivered / interval`; `None` if the interval was shorter than min RTT.
    pub delivery_rate: Option<Rate>,
    /// The newest delivered packet was sent while application-limited.
    pub is_app_limited: bool,
    /// Send time of the newest delivered packet.
    pub newest_sent_time: Time,
    /// Bytes in flight when the newest delivered packet was sent.
    pub tx_in_flight: u64,
    /// Bytes the connection had marked lost when it was sent.
    pub prior_lost: u64,
}

/// Per-ACK accumulation (draft §3.3 `UpdateRateSample` state): one per ACK,
/// on the caller's stack.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleBuilder {
    has_data: bool,
    prior_delivered: u64,
    prior_time: Time,
    send_elapsed: Dur,
    last_order: u64,
    snapshot: TxSnapshot,
    newest_sent: Time,
}

/// The connection's delivery state (draft §3.1 `C.*`).
#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    /// `C.delivered`: bytes delivered (cumulatively or selectively acked).
    delivered: u64,
    /// `C.delivered_time`.
    delivered_time: Time,
    /// `C.first_send_time`.
    first_sent_time: Time,
    /// `C.app_limited`: 0, or the `delivered` mark after which the app-limited
    /// bubble has left the network.
    app_limited: u64,
    /// Bytes marked lost so far.
    lost: u64,
}

impl RateEstimator {
    /// `C.delivered`.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// `C.app_limited != 0`: an app-limited bubble is still in the network.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// Bytes marked lost so far (BBRv3's `C.lost`).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// `bytes` newly marked lost.
    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
    }

    /// Snapshot for a packet being (re)transmitted now. `nothing_outstanding`
    /// is true when no data was outstanding before this one; `tx_in_flight`
    /// is the bytes in flight including it.
    pub fn on_send(
        &mut self,
        now: Time,
        nothing_outstanding: bool,
        tx_in_flight: u64,
    ) -> TxSnapshot {
        // draft §3.2: "if (SND.NXT == SND.UNA) /* no packets in flight yet? */
        //   C.first_send_time = C.delivered_time = Now()" (Linux: !packets_out)
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

    /// One packet newly delivered by this ACK (draft §3.3 `UpdateRateSample`).
    /// `bytes` is its payload newly delivered; each packet is passed at most
    /// once.
    pub fn on_delivered<P: RatePacket + ?Sized>(
        &mut self,
        now: Time,
        bytes: u64,
        p: &P,
        rs: &mut SampleBuilder,
    ) {
        let (sent, order) = (p.sent_time(), p.tx_order());
        // draft §3.3: C.delivered += P.data_length; C.delivered_time = Now()
        self.delivered += bytes;
        self.delivered_time = now;
        // draft §3.3: "if (!rs.has_data or IsNewestPacket(P))", IsNewestPacket:
        // "P.send_time > C.first_send_time or (P.send_time == C.first_send_time
        // and after(P.end_seq, rs.last_end_seq))" (Linux tcp_rate_skb_delivered:
        // `!rs->prior_delivered || tcp_skb_sent_after(...)`).
        let newest = !rs.has_data
            || sent > self.first_sent_time
            || (sent == self.first_sent_time && order > rs.last_order);
        if newest {
            let snap = p.tx_snapshot();
            rs.has_data = true;
            rs.prior_delivered = snap.delivered;
            rs.prior_time = snap.delivered_time;
            // draft §3.3: rs.send_elapsed = P.send_time - P.first_send_time
            rs.send_elapsed = sent.saturating_since(snap.first_sent_time);
            rs.last_order = order;
            rs.snapshot = *snap;
            rs.newest_sent = sent;
            // draft §3.3: C.first_send_time = P.send_time
            self.first_sent_time = sent;
        }
    }

    /// Close the sample for this ACK (draft §3.3 `GenerateRateSample`).
    /// `None` if nothing was delivered.
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
        // draft §3.3: "if (rs.prior_time == 0) return false /* nothing delivered on this ACK */"
        if !rs.has_data {
            return None;
        }
        // draft §3.3: rs.ack_elapsed = C.delivered_time - P.delivered_time
        let ack_elapsed = now.saturating_since(rs.prior_time);
        // draft §3.3: rs.interval = max(rs.send_elapsed, rs.ack_elapsed)
        let interval = rs.send_elapsed.max(ack_elapsed);
        // draft §3.3: rs.delivered = C.delivered - rs.prior_delivered
        let delivered = self.delivered - rs.prior_delivered;
        // draft §3.3: "if (rs.interval < MinRTT(tp)) ... return false" (no reliable sample)
        let valid = !interval.is_zero() && min_rtt.is_none_or(|m| interval >= m);
        Some(RateSample {
            delivered,
            prior_delivered: rs.prior_delivered,
            interval,
            // draft §3.3: rs.delivery_rate = rs.delivered / rs.interval
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

    struct Pkt {
        sent: Time,
        order: u64,
        tx: TxSnapshot,
    }

    impl RatePacket for Pkt {
        fn sent_time(&self) -> Time {
            self.sent
        }
        fn tx_order(&self) -> u64 {
            self.order
        }
        fn tx_snapshot(&self) -> &TxSnapshot {
            &self.tx
        }
    }

    #[test]
    fn a_full_window_gives_the_bottleneck_rate() {
        // 10 packets of 1000 B sent back to back at t=0, ACKed one per ms
        // from t=100 ms: the last ACK's sample covers 10 000 B in 109 ms...
        // but the newest packet was sent at 0 with first_sent_time 0, so
        // send_elapsed = 0 and the ACK phase rules: interval = 109 ms.
        let mut r = RateEstimator::default();
        let pkts: Vec<Pkt> = (0..10)
            .map(|i| Pkt {
                sent: Time::ZERO,
                order: i,
                tx: r.on_send(Time::ZERO, i == 0, 1000 * (i + 1)),
            })
            .collect();
        let mut last = None;
        for (i, p) in pkts.iter().enumerate() {
            let now = Time::from_millis(100 + i as u64);
            let mut b = SampleBuilder::default();
            r.on_delivered(now, 1000, p, &mut b);
            last = r.finish(now, &b, Some(Dur::from_millis(100)));
        }
        let s = last.unwrap();
        assert_eq!(s.delivered, 10_000);
        assert_eq!(s.prior_delivered, 0);
        assert_eq!(s.interval, Dur::from_millis(109));
        assert_eq!(
            s.delivery_rate,
            Rate::from_bytes_per(10_000, Dur::from_millis(109))
        );
        assert_eq!(r.delivered(), 10_000);
    }

    #[test]
    fn one_ack_samples_its_newest_packet_whatever_the_order_met() {
        // Three packets sent at 0, 1, 1 ms (the last two tie on time, broken
        // by order), all ACKed at once: walked oldest or newest first, the
        // sample is the newest's (draft §3.3 IsNewestPacket).
        for rev in [false, true] {
            let mut r = RateEstimator::default();
            let mut pkts: Vec<Pkt> = [(0, 0), (1, 1), (1, 2)]
                .iter()
                .map(|&(ms, order)| {
                    let sent = Time::from_millis(ms);
                    Pkt {
                        sent,
                        order,
                        tx: r.on_send(sent, order == 0, 1000 * (order + 1)),
                    }
                })
                .collect();
            if rev {
                pkts.reverse();
            }
            let now = Time::from_millis(50);
            let mut b = SampleBuilder::default();
            for p in &pkts {
                r.on_delivered(now, 1000, p, &mut b);
            }
            let s = r.finish(now, &b, None).unwrap();
            assert_eq!(s.newest_sent_time, Time::from_millis(1));
            assert_eq!(s.tx_in_flight, 3000, "rev {rev}");
            assert_eq!(s.delivered, 3000);
        }
    }

    #[test]
    fn short_intervals_and_app_limited_bubbles() {
        let mut r = RateEstimator::default();
        r.mark_app_limited(5000);
        let p = Pkt {
            sent: Time::ZERO,
            order: 0,
            tx: r.on_send(Time::ZERO, true, 1000),
        };
        assert!(p.tx.app_limited);
        let mut b = SampleBuilder::default();
        let now = Time::from_millis(10);
        r.on_delivered(now, 1000, &p, &mut b);
        // 10 ms < min RTT 20 ms: no rate, but the sample (and its flag) exist.
        let s = r.finish(now, &b, Some(Dur::from_millis(20))).unwrap();
        assert_eq!(s.delivery_rate, None);
        assert!(s.is_app_limited);
        // The bubble (5000 B) has not been delivered yet.
        assert!(r.on_send(now, false, 0).app_limited);
    }
}
