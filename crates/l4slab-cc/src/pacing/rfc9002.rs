//! QUIC pacing, the [`super::Rule::TokenBucket`] release rule, RFC 9002
//! §7.7: a token bucket whose rate is the controller's pacing rate when it
//! has one, else `N * cwnd / smoothed_rtt` with N = 1.25 ([`rate_for`]), and
//! whose depth (the largest burst) is the initial window. With the
//! connection's `pacing` off only a controller with a rate of its own (BBR)
//! paces, as the TCP model's `pacing = false` (§7.7 says SHOULD pace, so off
//! is a deviation a scenario asks for).
//!
//! §7.7: "Senders SHOULD limit bursts to the initial congestion window".
//! Only ack-eliciting Application Data packets are paced; ACK-only packets,
//! handshake packets and PTO probes are not (§7.7: "acknowledgments... SHOULD
//! NOT be paced"; probes must not be blocked). No pacing before the first
//! RTT sample (the initial window bounds that burst). Used by `l4slab-quic`
//! (`connection/pacing.rs`) through [`super::Pacer`].

use l4slab_core::{Dur, Rate, Time};

/// §7.7: "N = 1.25" (as a ratio 5/4).
const N_NUM: u64 = 5;
const N_DEN: u64 = 4;

/// The rate §7.7 asks for, given the controller's own rate if any; without
/// one, the §7.7 default rate if `default_rate`, else none.
pub fn rate_for(
    cc_rate: Option<Rate>,
    cwnd: u64,
    srtt: Option<Dur>,
    default_rate: bool,
) -> Option<Rate> {
    cc_rate.filter(|r| r.as_bps() > 0).or_else(|| {
        if !default_rate {
            return None;
        }
        let srtt = srtt?;
        // §7.7: "rate = N * congestion_window / smoothed_rtt".
        Rate::from_bytes_per(cwnd * N_NUM / N_DEN, srtt)
    })
}

/// The token bucket of one QUIC connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bucket {
    /// Bucket depth in bytes (the initial window).
    capacity: u64,
    /// Tokens, in bytes × 1e9 (nanosecond-exact refill).
    tokens_nb: u128,
    last: Time,
}

impl Bucket {
    /// A full bucket of `capacity` bytes (the initial window) at `now`.
    pub(super) fn full(capacity: u64, now: Time) -> Self {
        Bucket {
            capacity,
            tokens_nb: u128::from(capacity) * 1_000_000_000,
            last: now,
        }
    }

    /// Tokens earned at `rate` until `now`, up to the depth; unpaced, the
    /// bucket is full.
    pub(super) fn refill(&mut self, now: Time, rate: Option<Rate>) {
        let cap = u128::from(self.capacity) * 1_000_000_000;
        let dt = u128::from(now.saturating_since(self.last).as_nanos());
        self.last = self.last.max(now);
        match rate {
            None => self.tokens_nb = cap,
            Some(r) => {
                let add = dt.saturating_mul(u128::from(r.as_bps()) / 8);
                self.tokens_nb = (self.tokens_nb.saturating_add(add)).min(cap);
            }
        }
    }

    /// When a packet of `bytes` may leave: `now` or later (once the bucket
    /// holds its size, at most the depth).
    pub(super) fn release_time(&mut self, now: Time, bytes: u64, rate: Option<Rate>) -> Time {
        self.refill(now, rate);
        let need = u128::from(bytes.min(self.capacity)) * 1_000_000_000;
        match rate {
            _ if self.tokens_nb >= need => now,
            None => now,
            Some(r) => {
                let bps = (u128::from(r.as_bps()) / 8).max(1);
                let ns = (need - self.tokens_nb).div_ceil(bps);
                now + Dur::from_nanos(ns.min(u128::from(u64::MAX / 4)) as u64)
            }
        }
    }

    /// A packet of `bytes` left at `now`: its size leaves the bucket.
    pub(super) fn on_sent(&mut self, now: Time, bytes: u64, rate: Option<Rate>) {
        self.refill(now, rate);
        self.tokens_nb = self
            .tokens_nb
            .saturating_sub(u128::from(bytes) * 1_000_000_000);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Pacer, Rule};
    use super::*;

    #[test]
    fn burst_then_paced() {
        let mut p = Pacer::new(Rule::TokenBucket { burst: 3000 }, Time::ZERO);
        p.set_rate(Time::ZERO, Some(Rate::from_mbps(8))); // 1 byte/µs
        p.on_sent(Time::ZERO, 1500);
        p.on_sent(Time::ZERO, 1500);
        assert_eq!(p.release_time(Time::ZERO, 1500), Time::from_micros(1500));
        assert_eq!(
            p.release_time(Time::from_micros(1500), 1500),
            Time::from_micros(1500)
        );
        // Unpaced: the bucket is full again.
        p.on_sent(Time::from_micros(1500), 1500);
        p.set_rate(Time::from_micros(1500), None);
        assert_eq!(
            p.release_time(Time::from_micros(1500), 1500),
            Time::from_micros(1500)
        );
    }

    #[test]
    fn rate_is_the_controllers_else_five_quarters_of_cwnd_per_srtt() {
        let srtt = Some(Dur::from_millis(10));
        let r = rate_for(None, 10_000, srtt, true).unwrap();
        assert_eq!(r, Rate::from_bps(10_000_000)); // 12500 B / 10 ms
                                                   // Pacing off: only a controller's own rate paces.
        assert_eq!(rate_for(None, 10_000, srtt, false), None);
        let bbr = Some(Rate::from_mbps(3));
        assert_eq!(rate_for(bbr, 10_000, srtt, false), bbr);
    }
}
