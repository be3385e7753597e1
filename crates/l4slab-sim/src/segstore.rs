//! Headers of packets in flight, kept out of [`Packet`] so queues move small
//! `Copy` values. A slab with a free list: after warm-up, storing a header
//! never allocates (DESIGN.md §7, performance by construction).
//!
//! [`Packet`]: l4slab_core::Packet

use l4slab_app::Datagram;
use l4slab_transport::Segment;

/// What a packet carries: a segment of a flow's connection, or an app's datagram.
#[derive(Clone, Copy, Debug)]
pub enum Carried {
    Seg(Segment),
    Dgram(Datagram),
}

#[derive(Default)]
pub struct SegStore {
    slots: Vec<Carried>,
    free: Vec<u32>,
    live: usize,
}

impl SegStore {
    pub fn insert(&mut self, c: Carried) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = c;
            i
        } else {
            self.slots.push(c);
            u32::try_from(self.slots.len() - 1).expect("more than 2^32 packets in flight")
        }
    }

    /// Take the header out; the handle becomes invalid.
    pub fn remove(&mut self, handle: u32) -> Carried {
        assert!(self.live > 0, "remove from an empty segment store");
        self.live -= 1;
        self.free.push(handle);
        self.slots[handle as usize]
    }

    /// The header of a packet still in the network.
    pub fn get(&self, handle: u32) -> &Carried {
        &self.slots[handle as usize]
    }

    /// Headers currently stored (packets in the network).
    pub fn live(&self) -> usize {
        self.live
    }
}
