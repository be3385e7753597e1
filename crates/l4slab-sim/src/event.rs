//! The discrete-event calendar (DESIGN.md §4.1).
//!
//! Events are ordered by `(time, seq)`, where `seq` is a global insertion
//! counter. Ties at the same nanosecond are therefore broken by scheduling
//! order, never by heap internals, so a run is a pure function of
//! (scenario, seed). A heap gives O(log n) per event in the number of
//! *pending events*, which does not grow with window size or queue depth:
//! queued packets live in the qdisc, not in the calendar; it grows with the
//! number of endpoints (about two timers each).
//!
//! Two 4-ary heaps (`dary_heap`) hold the events, each entry ordered by one
//! 128-bit key (time in the high half, `seq` in the low; one comparison per
//! child): one for the network's events (a queue's transmitter, a delay
//! line's head: a handful, whatever the number of flows) and one for the
//! per-flow events (endpoint and application timers, flow starts: about two
//! per endpoint). `pop` takes the earlier of the two heads; `seq` is shared,
//! so the order is exactly that of one heap. Most events are the network's,
//! so most pops stay in the small heap. One `std` binary heap of `(time, seq)`
//! pairs (~5,000 pending events with 1,000 flows) took 16–27 % of a run with
//! 1 to 1,000 flows (docs/PERFORMANCE.md).
//!
//! An event scheduled for the current instant (a packet entering an access
//! line without delay, a timer already due: about a quarter of the events on
//! a dumbbell) skips the heaps: it goes to the back of a FIFO, `due_now`.
//! Everything there is due at `now` and was scheduled after everything
//! before it, so the FIFO is in key order and its head is the earliest of
//! its entries; `pop` takes the smallest of the three heads, so the order is
//! still exactly that of one heap, and the clock cannot move past `now`
//! while the FIFO holds anything.

use std::cmp::Ordering;
use std::collections::VecDeque;

use dary_heap::QuaternaryHeap;

use l4slab_core::Time;

struct Entry<E> {
    /// `time_ns << 64 | seq`.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn at(&self) -> Time {
        Time::from_nanos((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed so that the (max-)heap pops the earliest entry.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

pub struct EventQueue<E> {
    /// The network's events ([`EventQueue::schedule`]).
    heap: QuaternaryHeap<Entry<E>>,
    /// Per-flow events ([`EventQueue::schedule_flow`]).
    flows: QuaternaryHeap<Entry<E>>,
    /// Events scheduled at `now` (either kind), in scheduling order.
    due_now: VecDeque<Entry<E>>,
    next_seq: u64,
    now: Time,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: QuaternaryHeap::with_capacity(64),
            flows: QuaternaryHeap::with_capacity(1024),
            due_now: VecDeque::with_capacity(64),
            next_seq: 0,
            now: Time::ZERO,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedule a network event (a queue's, a delay line's, the sampler's) at `at`.
    ///
    /// # Panics
    /// If `at` is in the past: a causality violation is a bug, not an input error.
    pub fn schedule(&mut self, at: Time, event: E) {
        let entry = self.entry(at, event);
        if at == self.now {
            self.due_now.push_back(entry);
        } else {
            self.heap.push(entry);
        }
    }

    /// Schedule a per-flow event (a timer, a flow's start) at `at`: the same
    /// order as [`EventQueue::schedule`], kept apart so that the network's
    /// events do not pay for the number of flows.
    ///
    /// # Panics
    /// As [`EventQueue::schedule`].
    pub fn schedule_flow(&mut self, at: Time, event: E) {
        let entry = self.entry(at, event);
        if at == self.now {
            self.due_now.push_back(entry);
        } else {
            self.flows.push(entry);
        }
    }

    fn entry(&mut self, at: Time, event: E) -> Entry<E> {
        assert!(
            at >= self.now,
            "event scheduled in the past ({at} < {})",
            self.now
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = (u128::from(at.as_nanos()) << 64) | u128::from(seq);
        Entry { key, event }
    }

    /// The heap whose head is the next event.
    fn next_heap(&mut self) -> Option<&mut QuaternaryHeap<Entry<E>>> {
        match (self.heap.peek(), self.flows.peek()) {
            (None, None) => None,
            (Some(n), Some(f)) if f.key < n.key => Some(&mut self.flows),
            (Some(_), _) => Some(&mut self.heap),
            (None, Some(_)) => Some(&mut self.flows),
        }
    }

    /// The head of `due_now` if it is the next event: no heap's head was
    /// scheduled before it at the same instant.
    #[inline]
    fn pop_due_now(&mut self) -> Option<E> {
        let key = self.due_now.front()?.key;
        let first = |h: &QuaternaryHeap<Entry<E>>| h.peek().is_none_or(|e| e.key > key);
        if first(&self.heap) && first(&self.flows) {
            self.due_now.pop_front().map(|e| e.event)
        } else {
            None
        }
    }

    /// Pop the next event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if let Some(ev) = self.pop_due_now() {
            return Some((self.now, ev));
        }
        let e = self.next_heap()?.pop().expect("peeked");
        let at = e.at();
        self.now = at;
        Some((at, e.event))
    }

    /// Pop the next event if it is due at or before `end`; a later one stays
    /// on the calendar (and the clock where it is).
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, E)> {
        // `due_now` holds nothing but events at `now`.
        if self.now <= end {
            if let Some(ev) = self.pop_due_now() {
                return Some((self.now, ev));
            }
        }
        let heap = self.next_heap()?;
        if heap.peek().expect("peeked").at() > end {
            return None;
        }
        let e = heap.pop().expect("peeked");
        let at = e.at();
        self.now = at;
        Some((at, e.event))
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Events scheduled so far (the `seq` counter).
    pub fn scheduled(&self) -> u64 {
        self.next_seq
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.flows.len() + self.due_now.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.flows.is_empty() && self.due_now.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_pop_in_scheduling_order() {
        let mut q = EventQueue::default();
        let t = Time::from_nanos(5);
        for name in ["a", "b", "c"] {
            q.schedule(t, name);
        }
        q.schedule(Time::from_nanos(1), "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["first", "a", "b", "c"]);
        assert_eq!(q.now(), t);
    }

    #[test]
    fn an_event_for_now_waits_for_those_scheduled_before_it_at_now() {
        let mut q = EventQueue::default();
        let t = Time::from_nanos(5);
        q.schedule(t, "a");
        q.schedule_flow(t, "b");
        assert_eq!(q.pop(), Some((t, "a")));
        // At `now` = 5: into `due_now`, behind "b" (scheduled earlier, in a heap).
        q.schedule(t, "c");
        q.schedule_flow(t, "d");
        q.schedule(Time::from_nanos(7), "late");
        assert_eq!(q.len(), 4);
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(t).map(|(_, e)| e)).collect();
        assert_eq!(order, ["b", "c", "d"]);
        assert_eq!(q.pop(), Some((Time::from_nanos(7), "late")));
        assert!(q.is_empty());
    }

    #[test]
    #[should_panic(expected = "scheduled in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::default();
        q.schedule(Time::from_nanos(10), ());
        q.pop();
        q.schedule(Time::from_nanos(9), ());
    }

    proptest::proptest! {
        /// Against a reference (a sorted list of `(time, seq)`): any
        /// interleaving of schedules (network and per-flow) and pops pops the
        /// earliest event, ties in scheduling order, and `pop_until` stops at
        /// its end.
        #[test]
        fn pops_in_time_then_scheduling_order(
            ops in proptest::collection::vec((0u64..6, 0u64..1_000_000, proptest::bool::ANY), 1..400),
        ) {
            let mut q = EventQueue::default();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let mut seq = 0;
            for (op, delay, coarse) in ops {
                // Coarse delays make many ties at the same nanosecond.
                let delay = if coarse { delay / 100_000 * 100_000 } else { delay };
                if op < 4 {
                    let at = q.now().as_nanos() + delay;
                    // Both heaps: one order.
                    if op < 2 {
                        q.schedule(Time::from_nanos(at), seq);
                    } else {
                        q.schedule_flow(Time::from_nanos(at), seq);
                    }
                    model.push((at, seq));
                    seq += 1;
                } else {
                    model.sort_unstable();
                    let end = q.now().as_nanos() + delay;
                    let want = model.first().copied().filter(|&(at, _)| at <= end);
                    let got = q.pop_until(Time::from_nanos(end));
                    proptest::prop_assert_eq!(got.map(|(t, e)| (t.as_nanos(), e)), want);
                    if want.is_some() {
                        model.remove(0);
                    }
                }
            }
            model.sort_unstable();
            let rest: Vec<(u64, u64)> =
                std::iter::from_fn(|| q.pop().map(|(t, e)| (t.as_nanos(), e))).collect();
            proptest::prop_assert_eq!(rest, model);
        }
    }
}
