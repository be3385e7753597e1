//! The discrete-event calendar (DESIGN.md §4.1).
//!
//! Events are ordered by `(time, seq)`, where `seq` is a global insertion
//! counter. Ties at the same nanosecond are therefore broken by scheduling
//! order, never by heap internals, so a run is a pure function of
//! (scenario, seed). A binary heap gives O(log n) per event in the number of
//! *pending events*, which does not grow with window size or queue depth:
//! queued packets live in the qdisc, not in the calendar.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use l4slab_core::Time;

struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Time,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            next_seq: 0,
            now: Time::ZERO,
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedule `event` at `at`.
    ///
    /// # Panics
    /// If `at` is in the past: a causality violation is a bug, not an input error.
    pub fn schedule(&mut self, at: Time, event: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past ({at} < {})",
            self.now
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// Pop the next event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.event))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.at)
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Events scheduled so far (the `seq` counter).
    pub fn scheduled(&self) -> u64 {
        self.next_seq
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    #[should_panic(expected = "scheduled in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::default();
        q.schedule(Time::from_nanos(10), ());
        q.pop();
        q.schedule(Time::from_nanos(9), ());
    }
}
