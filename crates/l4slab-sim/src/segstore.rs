//! Headers of packets in flight, kept out of [`Packet`] so queues move small
//! `Copy` values. A slab with a free list: after warm-up, storing a segment
//! never allocates (DESIGN.md §7, performance by construction).

use l4slab_transport::Segment;

#[derive(Default)]
pub struct SegStore {
    slots: Vec<Segment>,
    free: Vec<u32>,
    live: usize,
}

impl SegStore {
    pub fn insert(&mut self, seg: Segment) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = seg;
            i
        } else {
            self.slots.push(seg);
            u32::try_from(self.slots.len() - 1).expect("more than 2^32 packets in flight")
        }
    }

    /// Take the segment out; the handle becomes invalid.
    pub fn remove(&mut self, handle: u32) -> Segment {
        assert!(self.live > 0, "remove from an empty segment store");
        self.live -= 1;
        self.free.push(handle);
        self.slots[handle as usize]
    }

    /// Segments currently stored (packets in the network).
    pub fn live(&self) -> usize {
        self.live
    }
}
