//! The L queue's sojourn counted from a packet's first service opportunity
//! (`l_sojourn = "service"`): a Wi-Fi-aware input to the native L4S AQM.
//!
//! **Why.** Linux `do_step_aqm` compares the packet's sojourn, from enqueue
//! to dequeue, with a 1 ms step. A wired link dequeues packet by packet, so
//! that sojourn is the queue. A Wi-Fi AP dequeues a station's queue in bursts,
//! when it builds an A-MPDU at the start of a TXOP (mac80211's intermediate
//! queues; REFERENCES.md §4.3): a packet that arrives while an A-MPDU of its
//! station is on the air (up to aPPDUMaxTime, 5.484 ms, the HT-mixed/VHT/HE
//! L-SIG limit), or while other stations hold the medium, waits for
//! the next TXOP however short the queue is. That wait is the medium's grain,
//! not a queue the L4S sender built, and a 1 ms step marks nearly every such
//! packet.
//!
//! DOCSIS meets the same grain on its upstream (a cable modem sends only in
//! the grants of a MAP interval) by not measuring sojourn at all: the Immediate
//! AQM of the low-latency service flow estimates the L queue's delay from its
//! backlog at the configured rate, `qdelay = 8 × (bytes queued + packet) /
//! MAX_RATE` (CableLabs MULPI Annex N/O, as `QDelayCoupledL` in CableLabs'
//! docsis-ns3 `model/dual-queue-coupled-aqm.cc`), with a ramp from
//! `MINTH = max(MAXTH − 2^LG_RANGE ns, FLOOR)` (LG_RANGE 19: 524 µs),
//! `FLOOR = 2 × MAX_FRAME_SIZE (2000 B) × 8 / MAX_RATE`. A Wi-Fi station has no
//! configured rate (its share of the air varies with the others), so this
//! policy keeps the measured time but starts counting at the first instant
//! the packet could have left: the first service burst (A-MPDU build) of
//! its queue after it arrived. A packet carried by that burst counts 0; one
//! the burst left behind (the A-MPDU or the Block Ack window was full)
//! counts from that burst on. So the L AQM marks what exceeds one aggregate,
//! as a queue, and not the wait for the air.
//!
//! **Bursts.** A burst is a run of dequeues at one instant: the cell takes an
//! A-MPDU's packets at the TXOP's start (or SIFS after a Block Ack within a
//! TXOP), one call per packet, at the same `now`. On a link that dequeues
//! packet by packet every dequeue is a burst, and the sojourn is the classic
//! one less the wait for the packet ahead in service.
//!
//! **State.** The number of bursts so far and the start times of the last
//! [`RING`] bursts; each L packet keeps the burst count at its arrival. A
//! packet left behind by more than `RING` bursts counts from the oldest one
//! kept (an underestimate by at most the bursts forgotten; `RING` bursts
//! take at least `RING` × (SIFS + Block Ack) ≈ 1 ms on any PHY, so such a
//! packet is above any sane threshold already). O(1), no allocation.

use l4slab_core::{Dur, Time};

/// Bursts remembered.
pub const RING: usize = 16;

/// The service bursts of one qdisc, for [`ServiceClock::sojourn`].
#[derive(Clone, Debug)]
pub struct ServiceClock {
    /// Bursts begun so far.
    bursts: u64,
    /// When the last burst began (`None`: none yet).
    last: Option<Time>,
    /// `starts[n % RING]`: when burst `n` began, for the last `RING` bursts.
    starts: [Time; RING],
}

impl Default for ServiceClock {
    fn default() -> Self {
        ServiceClock {
            bursts: 0,
            last: None,
            starts: [Time::ZERO; RING],
        }
    }
}

impl ServiceClock {
    /// What a packet arriving now keeps: the number of the first burst that
    /// can carry it.
    pub fn stamp(&self) -> u64 {
        self.bursts
    }

    /// A dequeue at `now` (before it takes its packet): the first one at a
    /// new instant begins a burst.
    pub fn on_dequeue(&mut self, now: Time) {
        if self.last != Some(now) {
            self.starts[(self.bursts % RING as u64) as usize] = now;
            self.bursts += 1;
            self.last = Some(now);
        }
    }

    /// The sojourn of a packet stamped `stamp`, dequeued now (after
    /// [`ServiceClock::on_dequeue`]): zero if the burst under way is the
    /// first that could carry it, else the time since the first that could.
    pub fn sojourn(&self, stamp: u64, now: Time) -> Dur {
        // It arrived during the burst under way (stamp = bursts), or this
        // burst is its first (stamp = bursts - 1).
        if stamp + 1 >= self.bursts {
            return Dur::ZERO;
        }
        // Forgotten bursts: count from the oldest kept, burst `bursts - RING`.
        let first = stamp.max(self.bursts.saturating_sub(RING as u64));
        now.saturating_since(self.starts[(first % RING as u64) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Time {
        Time::ZERO + Dur::from_micros(us)
    }

    #[test]
    fn a_packet_the_next_burst_carries_counts_nothing() {
        let mut c = ServiceClock::default();
        // Arrives at 100 us while an A-MPDU is on the air; the next TXOP
        // starts at 5600 us and takes it: 5.5 ms of wait, none of it counted.
        let s = c.stamp();
        c.on_dequeue(at(5600));
        assert_eq!(c.sojourn(s, at(5600)), Dur::ZERO);
    }

    #[test]
    fn a_packet_left_behind_counts_from_the_burst_that_left_it() {
        let mut c = ServiceClock::default();
        let s = c.stamp(); // arrives at 0
        c.on_dequeue(at(1000)); // burst 0 at 1 ms: the A-MPDU fills without it
        c.on_dequeue(at(1000)); // same instant: the same burst
        c.on_dequeue(at(7500)); // burst 1 at 7.5 ms carries it
        assert_eq!(c.sojourn(s, at(7500)), Dur::from_micros(6500));
        // Another arriving between the bursts (stamp 1) counts nothing.
        let mut c2 = ServiceClock::default();
        c2.on_dequeue(at(1000));
        let s2 = c2.stamp();
        c2.on_dequeue(at(7500));
        assert_eq!(c2.sojourn(s2, at(7500)), Dur::ZERO);
    }

    #[test]
    fn arrival_during_a_burst_waits_for_the_next() {
        let mut c = ServiceClock::default();
        c.on_dequeue(at(1000));
        let s = c.stamp(); // enqueued at 1 ms, after burst 0's first dequeue
        c.on_dequeue(at(1000)); // still burst 0: it may even be taken now
        assert_eq!(c.sojourn(s, at(1000)), Dur::ZERO);
        c.on_dequeue(at(3000)); // or by burst 1, its first chance
        assert_eq!(c.sojourn(s, at(3000)), Dur::ZERO);
    }

    #[test]
    fn packet_by_packet_service_is_the_sojourn_less_the_packet_ahead() {
        // A wired link: one dequeue per 120 us (1500 B at 100 Mbit/s). A
        // packet that arrives at 50 us behind 9 others is first servable
        // at 120 us (the first dequeue after it) and leaves at 1200 us.
        let mut c = ServiceClock::default();
        c.on_dequeue(at(0));
        let s = c.stamp();
        for k in 1..=10 {
            c.on_dequeue(at(120 * k));
        }
        assert_eq!(c.sojourn(s, at(1200)), Dur::from_micros(1080));
    }

    #[test]
    fn more_bursts_than_remembered_count_from_the_oldest_kept() {
        let mut c = ServiceClock::default();
        let s = c.stamp();
        for k in 0..(RING as u64 + 4) {
            c.on_dequeue(at(1000 * (k + 1)));
        }
        // Burst 0 (1 ms) is forgotten; the oldest kept is burst 4 (5 ms).
        let now = at(1000 * (RING as u64 + 4));
        assert_eq!(c.sojourn(s, now), now.saturating_since(at(5000)));
    }
}
