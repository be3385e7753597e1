//! Constant-delay lines: propagation, in both backends.
//!
//! Every packet entering a line leaves it exactly `delay` later, so a line is
//! a FIFO and only its *head* needs a timer: the simulator puts the head on
//! its event calendar, the emulator sleeps until it. Packets in flight live
//! here, not on a calendar, so the cost of an event does not grow with the
//! bandwidth-delay product (DESIGN.md §7).

use std::collections::VecDeque;

use l4slab_core::{Dur, Packet, Time};

#[derive(Debug)]
pub struct DelayLine {
    delay: Dur,
    q: VecDeque<(Time, Packet)>,
}

impl DelayLine {
    pub fn new(delay: Dur) -> Self {
        DelayLine {
            delay,
            q: VecDeque::new(),
        }
    }

    pub fn delay(&self) -> Dur {
        self.delay
    }

    /// Add a packet that entered at `now`; returns its exit time.
    #[inline]
    pub fn push(&mut self, now: Time, pkt: Packet) -> Time {
        self.push_until(now + self.delay, pkt);
        now + self.delay
    }

    /// Add a packet that leaves at `at` (which no earlier packet may follow:
    /// the line is a FIFO).
    #[inline]
    pub fn push_until(&mut self, at: Time, pkt: Packet) {
        assert!(
            self.q.back().is_none_or(|(t, _)| *t <= at),
            "delay line out of order: {at} after {:?}",
            self.q.back().map(|(t, _)| *t)
        );
        self.q.push_back((at, pkt));
    }

    /// The head packet and its exit time, if it is due at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, Packet)> {
        if self.q.front().is_some_and(|(t, _)| *t <= now) {
            self.q.pop_front()
        } else {
            None
        }
    }

    /// When the head packet leaves.
    #[inline]
    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|(t, _)| *t)
    }

    /// Packets in the line.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Ecn;

    #[test]
    fn packets_leave_in_order_after_the_delay() {
        let mut l = DelayLine::new(Dur::from_millis(10));
        assert_eq!(
            l.push(Time::from_millis(1), Packet::new(1, 0, 100, Ecn::NotEct)),
            Time::from_millis(11)
        );
        l.push(Time::from_millis(2), Packet::new(2, 0, 100, Ecn::NotEct));
        assert_eq!(l.head_time(), Some(Time::from_millis(11)));
        assert!(l.pop_due(Time::from_millis(10)).is_none());
        let (at, p) = l.pop_due(Time::from_millis(12)).unwrap();
        assert_eq!((at, p.id), (Time::from_millis(11), 1));
        assert!(l.pop_due(Time::from_millis(11)).is_none());
        assert_eq!(l.len(), 1);
    }

    #[test]
    #[should_panic(expected = "out of order")]
    fn a_packet_may_not_overtake() {
        let mut l = DelayLine::new(Dur::ZERO);
        l.push_until(Time::from_millis(5), Packet::new(1, 0, 1, Ecn::NotEct));
        l.push_until(Time::from_millis(4), Packet::new(2, 0, 1, Ecn::NotEct));
    }
}
