//! Headers of packets in flight, kept out of [`Packet`] so queues move small
//! `Copy` values. A slab with a free list: after warm-up, storing a header
//! never allocates (DESIGN.md §7, performance by construction).
//!
//! [`Packet`]: l4slab_core::Packet

use l4slab_app::Datagram;
use l4slab_tcp::Segment;

/// What a packet carries: a segment of a flow's connection, an app's
/// datagram, or a UDP datagram's bytes (in [`BytePool`] slot `buf`).
#[derive(Clone, Copy, Debug)]
pub enum Carried {
    Seg(Segment),
    Dgram(Datagram),
    Bytes { buf: u32, len: u32 },
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

/// The payloads of byte datagrams in flight ([`Carried::Bytes`]). A slab of
/// buffers with a free list: a freed buffer keeps its capacity, so after
/// warm-up storing a payload never allocates.
#[derive(Default)]
pub struct BytePool {
    bufs: Vec<Vec<u8>>,
    free: Vec<u32>,
}

impl BytePool {
    /// Copy `data` into a buffer; its slot.
    pub fn store(&mut self, data: &[u8]) -> u32 {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.bufs.push(Vec::new());
                u32::try_from(self.bufs.len() - 1).expect("more than 2^32 datagrams in flight")
            }
        };
        let b = &mut self.bufs[i as usize];
        b.clear();
        b.extend_from_slice(data);
        i
    }

    /// Move slot `i`'s bytes out (to hand them to an app); give them back
    /// with [`BytePool::give_back`].
    pub fn take(&mut self, i: u32) -> Vec<u8> {
        std::mem::take(&mut self.bufs[i as usize])
    }

    /// Return a buffer taken from slot `i` and free the slot.
    pub fn give_back(&mut self, i: u32, buf: Vec<u8>) {
        self.bufs[i as usize] = buf;
        self.free.push(i);
    }

    /// Free slot `i` (its packet was dropped).
    pub fn free(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Slot `i`'s bytes.
    pub fn get(&self, i: u32) -> &[u8] {
        &self.bufs[i as usize]
    }
}
