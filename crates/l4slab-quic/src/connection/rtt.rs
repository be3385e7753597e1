//! RTT estimation, RFC 9002 §5 (and Appendix A.7's `UpdateRtt`).
//!
//! Not implemented: nothing of §5 is left out. The first sample resets
//! smoothed_rtt and rttvar (§5.3); ack_delay is subtracted only when that
//! keeps the sample at or above min_rtt and is capped by max_ack_delay once
//! the handshake is confirmed (§5.3).

use l4slab_core::Dur;

/// RFC 9002 §6.2.2: "kInitialRtt: 333 milliseconds".
pub const INITIAL_RTT: Dur = Dur::from_millis(333);
/// RFC 9002 §6.1.2: "kGranularity: 1 millisecond".
pub const GRANULARITY: Dur = Dur::from_millis(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    latest: Dur,
    smoothed: Dur,
    rttvar: Dur,
    min: Dur,
    has_sample: bool,
}

impl Default for RttEstimator {
    fn default() -> Self {
        // §5.3: "smoothed_rtt = kInitialRtt; rttvar = kInitialRtt / 2".
        RttEstimator {
            latest: Dur::ZERO,
            smoothed: INITIAL_RTT,
            rttvar: Dur::from_nanos(INITIAL_RTT.as_nanos() / 2),
            min: Dur::ZERO,
            has_sample: false,
        }
    }
}

impl RttEstimator {
    /// One sample: `latest_rtt = ack_time - send_time_of_largest_acked`.
    /// `ack_delay` is already capped (or zero) as §5.3 asks of the caller.
    pub fn update(&mut self, latest: Dur, ack_delay: Dur) {
        self.latest = latest;
        if !self.has_sample {
            // §5.3: "min_rtt = latest_rtt; smoothed_rtt = latest_rtt;
            // rttvar = latest_rtt / 2".
            self.has_sample = true;
            self.min = latest;
            self.smoothed = latest;
            self.rttvar = Dur::from_nanos(latest.as_nanos() / 2);
            return;
        }
        // §5.2: "min_rtt = min(min_rtt, latest_rtt)", ignoring ack delay.
        self.min = self.min.min(latest);
        // §5.3: "if (latest_rtt >= min_rtt + ack_delay):
        //   adjusted_rtt = latest_rtt - ack_delay".
        let adjusted = if latest >= self.min + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        // §5.3: "rttvar = 3/4 * rttvar + 1/4 * abs(smoothed_rtt - adjusted_rtt);
        // smoothed_rtt = 7/8 * smoothed_rtt + 1/8 * adjusted_rtt".
        let s = self.smoothed.as_nanos();
        let a = adjusted.as_nanos();
        let diff = s.abs_diff(a);
        self.rttvar = Dur::from_nanos((3 * self.rttvar.as_nanos() + diff) / 4);
        self.smoothed = Dur::from_nanos((7 * s + a) / 8);
    }

    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    pub fn smoothed(&self) -> Dur {
        self.smoothed
    }

    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }

    pub fn latest(&self) -> Dur {
        self.latest
    }

    /// Zero before the first sample.
    pub fn min(&self) -> Dur {
        self.min
    }

    /// §6.2.1: `PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay`,
    /// without the max_ack_delay term (the caller adds it for Application Data).
    pub fn pto_base(&self) -> Dur {
        self.smoothed + (self.rttvar * 4).max(GRANULARITY)
    }

    /// §6.1.2: `max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity)`
    /// with kTimeThreshold = 9/8.
    pub fn loss_delay(&self) -> Dur {
        let base = self.smoothed.max(self.latest).as_nanos();
        Dur::from_nanos(base + base / 8).max(GRANULARITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_resets_then_ewma() {
        let mut r = RttEstimator::default();
        assert_eq!(r.smoothed(), INITIAL_RTT);
        // §6.2.2: 333 ms gives a 1 s first PTO (333 + 4*166.5).
        assert_eq!(r.pto_base(), Dur::from_millis(999));
        r.update(Dur::from_millis(100), Dur::from_millis(10));
        assert_eq!(
            (r.smoothed(), r.rttvar(), r.min()),
            (
                Dur::from_millis(100),
                Dur::from_millis(50),
                Dur::from_millis(100)
            )
        );
        // 120 - 10 = 110 >= min: adjusted.
        r.update(Dur::from_millis(120), Dur::from_millis(10));
        assert_eq!(r.smoothed(), Dur::from_micros(101_250));
        assert_eq!(r.rttvar(), Dur::from_micros(40_000));
        assert_eq!(r.loss_delay(), Dur::from_micros(135_000));
    }
}
