//! An indexed binary min-heap of one timer per session slot: set, move or
//! clear a slot's deadline in O(log n), read the earliest in O(1). The
//! server's cost per event therefore grows as log(sessions), never with a
//! scan; its arrays are allocated once, for the session limit.

use l4slab_core::Time;

const NONE: u32 = u32::MAX;

/// One optional deadline per slot `0..slots`.
#[derive(Debug, Clone)]
pub struct TimerHeap {
    /// `(deadline, slot)`, a binary min-heap on the deadline.
    heap: Vec<(Time, u32)>,
    /// Where each slot's entry is in `heap`, or `NONE`.
    pos: Vec<u32>,
}

impl TimerHeap {
    pub fn new(slots: usize) -> Self {
        assert!(slots < NONE as usize, "too many slots");
        TimerHeap {
            heap: Vec::with_capacity(slots),
            pos: vec![NONE; slots],
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The earliest deadline and its slot.
    pub fn peek(&self) -> Option<(Time, usize)> {
        self.heap.first().map(|&(t, s)| (t, s as usize))
    }

    /// The deadline of `slot`.
    pub fn get(&self, slot: usize) -> Option<Time> {
        let p = self.pos[slot];
        (p != NONE).then(|| self.heap[p as usize].0)
    }

    /// Set (`Some`) or clear (`None`) the deadline of `slot`.
    pub fn set(&mut self, slot: usize, at: Option<Time>) {
        let p = self.pos[slot];
        match (p == NONE, at) {
            (true, None) => {}
            (true, Some(t)) => {
                self.heap.push((t, slot as u32));
                let i = self.heap.len() - 1;
                self.pos[slot] = i as u32;
                self.up(i);
            }
            (false, Some(t)) => {
                let i = p as usize;
                let old = self.heap[i].0;
                self.heap[i].0 = t;
                if t < old {
                    self.up(i);
                } else {
                    self.down(i);
                }
            }
            (false, None) => {
                let i = p as usize;
                let last = self.heap.len() - 1;
                self.swap(i, last);
                self.heap.pop();
                self.pos[slot] = NONE;
                if i < self.heap.len() {
                    self.up(i);
                    self.down(i);
                }
            }
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i].1 as usize] = i as u32;
        self.pos[self.heap[j].1 as usize] = j as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].0 <= self.heap[i].0 {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap[l].0 < self.heap[m].0 {
                m = l;
            }
            if r < n && self.heap[r].0 < self.heap[m].0 {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(i, m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Random sets and clears agree with a plain array scanned for its minimum.
        #[test]
        fn agrees_with_a_scan(ops in proptest::collection::vec((0usize..16, proptest::option::of(0u64..50)), 0..300)) {
            let mut h = TimerHeap::new(16);
            let mut plain: [Option<Time>; 16] = [None; 16];
            for (slot, at) in ops {
                let at = at.map(Time::from_nanos);
                h.set(slot, at);
                plain[slot] = at;
                let min = plain.iter().flatten().min().copied();
                prop_assert_eq!(h.peek().map(|p| p.0), min);
                if let Some((t, s)) = h.peek() {
                    prop_assert_eq!(plain[s], Some(t));
                }
                prop_assert_eq!(h.len(), plain.iter().flatten().count());
                for (s, p) in plain.iter().enumerate() {
                    prop_assert_eq!(h.get(s), *p);
                }
            }
        }
    }
}
