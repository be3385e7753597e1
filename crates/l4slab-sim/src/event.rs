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
//! Two queues hold the events, each entry ordered by one 128-bit key (time
//! in the high half, `seq` in the low; one comparison per child): one for
//! the network's events (a queue's transmitter, a delay line's head: a
//! handful, whatever the number of flows) and a 4-ary heap (`dary_heap`)
//! for the per-flow events (endpoint and application timers, flow starts:
//! about two per endpoint). `pop` takes the earlier of the two heads; `seq`
//! is shared, so the order is exactly that of one heap. Most events are the
//! network's, so most pops stay in the small queue. One `std` binary heap of `(time, seq)`
//! pairs (~5,000 pending events with 1,000 flows) took 16–27 % of a run with
//! 1 to 1,000 flows (docs/PERFORMANCE.md).
//!
//! The network's events are few on most runs (about four on a dumbbell:
//! each direction's transmitter and delay line), so they start in a vector
//! kept sorted latest first ([`NetEvents`]): a pop is the vector's last
//! entry, and a push, usually for the near future, finds its place a few
//! steps from the end. Past [`NetEvents::SORTED_MAX`] pending events (many access
//! queues or Wi-Fi stations) they move into a heap for good, so the cost
//! stays logarithmic. The keys are unique, so either holds the one order.
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
        Self::time_of(self.key)
    }

    fn time_of(key: u128) -> Time {
        Time::from_nanos((key >> 64) as u64)
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

/// The network's pending events: a vector sorted by key, latest first,
/// while there are few; a heap once there were many.
enum NetEvents<E> {
    Sorted(Vec<Entry<E>>),
    Heap(QuaternaryHeap<Entry<E>>),
}

impl<E> NetEvents<E> {
    /// The most pending events kept sorted: an insertion moves at most this
    /// many entries.
    const SORTED_MAX: usize = 32;

    fn push(&mut self, entry: Entry<E>) {
        match self {
            NetEvents::Sorted(v) if v.len() < Self::SORTED_MAX => {
                // Latest first: it moves back past the entries due before
                // it (usually none or one: a push is mostly for the near future).
                v.push(entry);
                let mut i = v.len() - 1;
                while i > 0 && v[i - 1].key < v[i].key {
                    v.swap(i - 1, i);
                    i -= 1;
                }
            }
            NetEvents::Sorted(v) => {
                let mut heap = QuaternaryHeap::with_capacity(4 * Self::SORTED_MAX);
                heap.extend(v.drain(..));
                heap.push(entry);
                *self = NetEvents::Heap(heap);
            }
            NetEvents::Heap(h) => h.push(entry),
        }
    }

    /// The earliest key (`u128::MAX` when empty: no event has it, as `seq`
    /// never reaches `u64::MAX`).
    #[inline]
    fn head_key(&self) -> u128 {
        match self {
            NetEvents::Sorted(v) => v.last().map_or(u128::MAX, |e| e.key),
            NetEvents::Heap(h) => h.peek().map_or(u128::MAX, |e| e.key),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        match self {
            NetEvents::Sorted(v) => v.pop(),
            NetEvents::Heap(h) => h.pop(),
        }
    }

    fn len(&self) -> usize {
        match self {
            NetEvents::Sorted(v) => v.len(),
            NetEvents::Heap(h) => h.len(),
        }
    }
}

pub struct EventQueue<E> {
    /// The network's events ([`EventQueue::schedule`]).
    net: NetEvents<E>,
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
            net: NetEvents::Sorted(Vec::with_capacity(NetEvents::<E>::SORTED_MAX)),
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
            self.net.push(entry);
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

    /// Pop the next event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_until(Time::MAX)
    }

    /// Pop the next event if it is due at or before `end`; a later one stays
    /// on the calendar (and the clock where it is).
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, E)> {
        let net = self.net.head_key();
        let flow = self.flows.peek().map_or(u128::MAX, |e| e.key);
        // `due_now` holds nothing but events at `now`, each after the heads
        // scheduled before it at `now`.
        if let Some(d) = self.due_now.front() {
            if d.key < net && d.key < flow {
                if self.now > end {
                    return None;
                }
                let e = self.due_now.pop_front().expect("a front");
                return Some((self.now, e.event));
            }
        }
        let e = if net < flow {
            if Entry::<E>::time_of(net) > end {
                return None;
            }
            self.net.pop()
        } else {
            if flow == u128::MAX || Entry::<E>::time_of(flow) > end {
                return None;
            }
            self.flows.pop()
        }
        .expect("a head");
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
        self.net.len() + self.flows.len() + self.due_now.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    fn many_network_events_move_to_the_heap_in_order() {
        let mut q = EventQueue::default();
        // More than `SORTED_MAX` pending, out of order and with ties.
        let n = 3 * NetEvents::<u64>::SORTED_MAX as u64;
        for i in 0..n {
            q.schedule(Time::from_nanos(1 + (i * 7919) % 50), i);
        }
        assert!(matches!(q.net, NetEvents::Heap(_)));
        let got: Vec<(u64, u64)> =
            std::iter::from_fn(|| q.pop().map(|(t, e)| (t.as_nanos(), e))).collect();
        let mut want: Vec<(u64, u64)> = (0..n).map(|i| (1 + (i * 7919) % 50, i)).collect();
        want.sort_unstable();
        assert_eq!(got, want);
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
