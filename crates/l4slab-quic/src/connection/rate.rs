//! Delivery-rate samples for the controller (BBR needs them):
//! draft-cheng-iccrg-delivery-rate-estimation §3, per packet instead of per
//! TCP segment. A trimmed copy of `l4slab-transport/src/rate.rs`'s idea
//! (that crate is not a dependency); candidate for a shared crate.

use l4slab_core::{Rate, Time};

/// `P.delivered`, `P.delivered_time`, `P.first_sent_time`, `P.is_app_limited`,
/// `P.tx_in_flight`, `P.lost` at send time (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSnapshot {
    pub delivered: u64,
    pub delivered_time: Time,
    pub first_sent_time: Time,
    pub app_limited: bool,
    pub tx_in_flight: u64,
    pub lost: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSample {
    pub delivery_rate: Option<Rate>,
    pub prior_delivered: u64,
    pub delivered: u64,
    pub tx_in_flight: u64,
    pub prior_lost: u64,
    pub app_limited: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateEstimator {
    /// `C.delivered`.
    pub delivered: u64,
    pub delivered_time: Time,
    pub first_sent_time: Time,
    /// `C.app_limited`: 0 or the `delivered` mark that ends the app-limited phase.
    pub app_limited_until: u64,
    /// Bytes declared lost so far.
    pub lost: u64,
    /// The newest acked packet's snapshot in the current ACK.
    best: Option<(RateSnapshot, Time)>,
}

impl RateEstimator {
    /// §3.2 `OnPacketSent`.
    pub fn snapshot(&mut self, now: Time, in_flight_before: u64, size: u64) -> RateSnapshot {
        if in_flight_before == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        RateSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
            tx_in_flight: in_flight_before + size,
            lost: self.lost,
        }
    }

    /// §3.3 `OnPacketAcked` for one packet of `size` sent at `sent`.
    pub fn on_acked(&mut self, now: Time, size: u64, sent: Time, s: &RateSnapshot) {
        self.delivered += size;
        self.delivered_time = now;
        if self.best.is_none_or(|(b, _)| s.delivered >= b.delivered) {
            self.best = Some((*s, sent));
            self.first_sent_time = sent;
        }
    }

    /// §3.3 `GenerateRateSample`, at the end of an ACK.
    pub fn finish(&mut self, now: Time) -> Option<RateSample> {
        let (p, sent) = self.best.take()?;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let delivered = self.delivered - p.delivered;
        let send_elapsed = sent.saturating_since(p.first_sent_time);
        let ack_elapsed = now.saturating_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        Some(RateSample {
            delivery_rate: Rate::from_bytes_per(delivered, interval),
            prior_delivered: p.delivered,
            delivered,
            tx_in_flight: p.tx_in_flight,
            prior_lost: p.lost,
            app_limited: p.app_limited,
        })
    }

    /// §3.4: the sender had nothing to send while the window was open.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }
}
