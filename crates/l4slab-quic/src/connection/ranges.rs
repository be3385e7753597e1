//! A sorted set of disjoint half-open byte or packet-number ranges, used for
//! stream/CRYPTO reassembly, retransmission queues, acknowledged stream
//! data and received packet numbers. Bounded by its callers (flow-control
//! windows, the ACK range cap); it allocates only when it grows past its
//! high-water mark.
//!
//! A ring (`VecDeque`) rather than a `Vec`: its callers work at the ends, so
//! an insertion or removal moves few entries whatever the number of ranges.
//! New data is acknowledged, received or lost at the high end; holes are
//! filled, retransmissions taken and in-order data delivered at the low end.
//! With a `Vec`, taking the lowest range moved every other one: with a
//! 10,000-packet window and a loss every other packet that was thousands
//! of entries per packet.

use std::collections::VecDeque;

/// Disjoint, non-adjacent `[start, end)` ranges in ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    r: VecDeque<(u64, u64)>,
}

impl RangeSet {
    /// Room for `n` ranges before the first allocation on the hot path.
    pub fn with_capacity(n: usize) -> Self {
        RangeSet {
            r: VecDeque::with_capacity(n),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    pub fn len(&self) -> usize {
        self.r.len()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.r.iter().copied()
    }

    pub fn first(&self) -> Option<(u64, u64)> {
        self.r.front().copied()
    }

    /// Start of the first range that starts above `v`.
    pub fn next_start_after(&self, v: u64) -> Option<u64> {
        let i = self.r.partition_point(|&(s, _)| s <= v);
        self.r.get(i).map(|&(s, _)| s)
    }

    /// Whether `[start, end)` overlaps or adjoins a range (inserting it
    /// would not add one).
    pub fn touches(&self, start: u64, end: u64) -> bool {
        let i = self.r.partition_point(|&(_, e)| e < start);
        i < self.r.len() && self.r[i].0 <= end
    }

    /// Add `[start, end)`, merging with overlapping or adjacent ranges.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // First range whose end reaches start (adjacent counts).
        let i = self.r.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.r.len() && self.r[j].0 <= e {
            s = s.min(self.r[j].0);
            e = e.max(self.r[j].1);
            j += 1;
        }
        if i == j {
            self.r.insert(i, (s, e));
        } else {
            self.r[i] = (s, e);
            self.r.drain(i + 1..j);
        }
    }

    /// Remove `[start, end)`.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let mut i = self.r.partition_point(|&(_, e)| e <= start);
        while i < self.r.len() && self.r[i].0 < end {
            let (s, e) = self.r[i];
            if s < start && e > end {
                self.r[i] = (s, start);
                self.r.insert(i + 1, (end, e));
                return;
            } else if s < start {
                self.r[i].1 = start;
                i += 1;
            } else if e > end {
                self.r[i].0 = end;
                return;
            } else {
                self.r.remove(i);
            }
        }
    }

    /// Whether every byte of `[start, end)` is in the set.
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        let i = self.r.partition_point(|&(_, e)| e <= start);
        i < self.r.len() && self.r[i].0 <= start && self.r[i].1 >= end
    }

    pub fn contains(&self, v: u64) -> bool {
        self.contains_range(v, v + 1)
    }

    /// End of the range starting at `from` (`from` if `from` is not covered).
    pub fn contiguous_end(&self, from: u64) -> u64 {
        let i = self.r.partition_point(|&(_, e)| e <= from);
        match self.r.get(i) {
            Some(&(s, e)) if s <= from => e,
            _ => from,
        }
    }

    /// Drop the oldest (lowest) ranges until at most `n` remain.
    pub fn keep_newest(&mut self, n: usize) {
        if self.r.len() > n {
            let k = self.r.len() - n;
            self.r.drain(..k);
        }
    }

    /// Take up to `max` bytes from the lowest range.
    pub fn pop_front(&mut self, max: u64) -> Option<(u64, u64)> {
        let (s, e) = *self.r.front()?;
        let end = e.min(s + max);
        if end == e {
            self.r.pop_front();
        } else {
            self.r[0].0 = end;
        }
        Some((s, end))
    }

    pub fn clear(&mut self) {
        self.r.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_remove_splits() {
        let mut s = RangeSet::default();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 30);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        s.remove(15, 25);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 15), (25, 40)]);
        assert!(s.contains_range(25, 40));
        assert!(!s.contains_range(14, 16));
        assert_eq!(s.contiguous_end(10), 15);
        s.insert(0, 100);
        assert_eq!(s.len(), 1);
        assert_eq!(s.pop_front(30), Some((0, 30)));
        s.remove(0, 1000);
        assert!(s.is_empty());
    }
}
