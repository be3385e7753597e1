//! How fast bits leave the link: the [`RateModel`] variation point.
//!
//! A model answers one question — "a packet of `bytes` starts serializing at
//! `start`; when has its last bit left?" — which covers a constant-rate
//! wire ([`ConstantRate`], now), a cellular delivery-opportunity trace and a
//! contended Wi-Fi cell (later) without a new link type.
//!
//! Not modelled: layer-2 framing overhead. A rate is applied to
//! [`Packet::len`](l4slab_core::Packet::len), the IP packet, like Linux netem's
//! `rate` with its default `packet_overhead 0` and like `tbf`/`htb` without
//! `overhead`/`linklayer` options.

use core::fmt;

use l4slab_core::{Rate, Time};

use crate::LinkError;

/// When does a transmission finish?
pub trait RateModel: fmt::Debug + Send {
    /// The instant the last bit of a `bytes`-long packet whose first bit
    /// leaves at `start` has left. Must not be earlier than `start`.
    /// Called once per packet, in transmission order, with non-decreasing
    /// `start`, so a model may keep state (a trace cursor, a contention timer).
    fn tx_done(&mut self, start: Time, bytes: u32) -> Time;

    /// The configured average rate, when the model has one (for reports and
    /// for sizing buffers given in time).
    fn nominal_rate(&self) -> Option<Rate> {
        None
    }
}

/// A wire of fixed capacity: `tx_done = start + ceil(8 * bytes / rate)`
/// nanoseconds ([`Rate::tx_time`]). Rounding each packet up to a whole
/// nanosecond makes the link at most 1 ns per packet slower than nominal
/// (a relative error below 1e-6 for any packet of 125 B or more at up to
/// 1 Tbit/s) and guarantees back-to-back packets never overlap.
///
/// `ConstantRate(rate)` may be built directly when the rate is known to be
/// positive (validated scenario input); [`ConstantRate::new`] checks it. A
/// zero rate reaching [`RateModel::tx_done`] is a bug and panics
/// ([`Rate::tx_time`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantRate(pub Rate);

impl ConstantRate {
    /// # Errors
    /// [`LinkError::ZeroRate`] for a zero rate (nothing would ever finish).
    pub fn new(rate: Rate) -> Result<Self, LinkError> {
        if rate == Rate::ZERO {
            return Err(LinkError::ZeroRate);
        }
        Ok(ConstantRate(rate))
    }

    pub fn rate(&self) -> Rate {
        self.0
    }
}

impl RateModel for ConstantRate {
    fn tx_done(&mut self, start: Time, bytes: u32) -> Time {
        start + self.0.tx_time(u64::from(bytes))
    }

    fn nominal_rate(&self) -> Option<Rate> {
        Some(self.0)
    }
}

/// A link whose rate changes at set times (a path degrading: a weaker
/// signal, a slower cell): `base` until the first step, then each step's
/// constant rate from its time on. A packet serializes at the rate in
/// force when its first bit leaves (docs/models/racing.md).
#[derive(Debug)]
pub struct StepRate {
    base: Box<dyn RateModel>,
    /// `(from, rate)`, sorted by time; every rate > 0.
    steps: Vec<(Time, Rate)>,
    /// Steps already in force.
    passed: usize,
}

impl StepRate {
    /// # Panics
    /// If `steps` are not sorted by time or a rate is zero (scenario input
    /// is validated before it gets here).
    pub fn new(base: Box<dyn RateModel>, steps: Vec<(Time, Rate)>) -> Self {
        assert!(steps.windows(2).all(|w| w[0].0 < w[1].0), "steps sorted");
        assert!(steps.iter().all(|s| s.1.as_bps() > 0), "rates > 0");
        StepRate {
            base,
            steps,
            passed: 0,
        }
    }
}

impl RateModel for StepRate {
    fn tx_done(&mut self, start: Time, bytes: u32) -> Time {
        while self.steps.get(self.passed).is_some_and(|s| s.0 <= start) {
            self.passed += 1;
        }
        match self.passed.checked_sub(1) {
            Some(i) => start + self.steps[i].1.tx_time(u64::from(bytes)),
            None => self.base.tx_done(start, bytes),
        }
    }

    fn nominal_rate(&self) -> Option<Rate> {
        self.base.nominal_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Dur;

    #[test]
    fn constant_rate_is_exact_in_nanoseconds() {
        let mut r = ConstantRate::new(Rate::from_mbps(12)).unwrap();
        // 1500 B = 12,000 bit at 12 Mbit/s = 1 ms.
        assert_eq!(r.tx_done(Time::ZERO, 1500), Time::from_millis(1));
        // 64 B = 512 bit at 12 Mbit/s = 42,666.67 ns, rounded up.
        assert_eq!(
            r.tx_done(Time::from_millis(5), 64),
            Time::from_millis(5) + Dur::from_nanos(42_667)
        );
        assert_eq!(r.nominal_rate(), Some(Rate::from_mbps(12)));
    }

    #[test]
    fn zero_rate_is_rejected() {
        assert_eq!(ConstantRate::new(Rate::ZERO), Err(LinkError::ZeroRate));
    }

    #[test]
    fn a_step_rate_changes_at_its_times_and_keeps_the_base_before() {
        // 12 Mbit/s (1 ms per 1500 B), 1.2 Mbit/s from 2 ms, 120 Mbit/s from 30 ms.
        let mut r = StepRate::new(
            Box::new(ConstantRate(Rate::from_mbps(12))),
            vec![
                (Time::from_millis(2), Rate::from_kbps(1200)),
                (Time::from_millis(30), Rate::from_mbps(120)),
            ],
        );
        assert_eq!(r.tx_done(Time::ZERO, 1500), Time::from_millis(1));
        assert_eq!(r.tx_done(Time::from_millis(1), 1500), Time::from_millis(2));
        assert_eq!(r.tx_done(Time::from_millis(2), 1500), Time::from_millis(12));
        assert_eq!(
            r.tx_done(Time::from_millis(30), 1500),
            Time::from_micros(30_100)
        );
        assert_eq!(r.nominal_rate(), Some(Rate::from_mbps(12)));
    }
}
