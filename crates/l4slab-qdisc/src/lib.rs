//! Queue disciplines.
//!
//! One file per discipline, named after its Linux `tc` kind. Every discipline
//! is *sans-IO*: it never reads a clock or a global RNG; `now` and a
//! [`QdiscCtx`] are passed in, so the same code runs under the discrete-event
//! engine and the real-time emulator.
//!
//! Accounting (DESIGN.md §3), checked by property tests after every call:
//! `offered = enqueued + dropped_at_enqueue`, `enqueued = dequeued + backlog`,
//! `dequeued = sent + dropped_after_dequeue`.

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod param;
pub mod pi;
pub mod pie;
pub mod red;
pub mod registry;
pub mod testing;

use core::fmt;
use std::collections::VecDeque;

use l4slab_core::{DropReason, Ecn, MarkReason, Packet, QueueId, SimRng, Time, TraceEvent, Tracer};

pub use codel::{CeSelector, Codel, CodelConfig};
pub use dualpi2::{DualPi2, DualPi2Config};
pub use fifo::{Fifo, FifoConfig};
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use fq_pie::{FqPie, FqPieConfig};
pub use pie::{Pie, PieConfig};
pub use registry::{BufferLimit, QdiscConfig, QdiscKind, QDISC_NAMES};

/// Current occupancy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub packets: u32,
    pub bytes: u64,
}

/// Everything a qdisc may touch besides its own state.
pub struct QdiscCtx<'a> {
    /// Which queue this is (for traces).
    pub queue: QueueId,
    pub rng: &'a mut SimRng,
    pub tracer: &'a mut dyn Tracer,
    /// Packets discarded during this call, drained by the caller (who owns
    /// their headers and must account for them).
    pub dropped: &'a mut Vec<(Packet, DropReason)>,
}

impl QdiscCtx<'_> {
    /// Discard `pkt`. The only way a qdisc may lose a packet; the context's
    /// owner counts it under `reason` (its tracer sees `Dropped`).
    pub fn drop_packet(&mut self, now: Time, pkt: Packet, reason: DropReason) {
        self.tracer.event(
            now,
            TraceEvent::Dropped {
                queue: self.queue,
                pkt,
                reason,
            },
        );
        self.dropped.push((pkt, reason));
    }

    /// Book-keeping for a packet `enqueue` admits into (sub-)queue
    /// `subqueue` (numbered as in [`Qdisc::subqueue_names`], 0 for single
    /// queues): counts it as enqueued in `stats` and traces it. `pkt` is the
    /// packet as queued (its `enqueued_at` set).
    pub fn admitted(&mut self, now: Time, pkt: &Packet, subqueue: u8, stats: &mut QdiscStats) {
        stats.enqueued += 1;
        self.tracer.event(
            now,
            TraceEvent::Enqueued {
                queue: self.queue,
                subqueue,
                pkt: *pkt,
            },
        );
    }

    /// Book-keeping for an offered packet `enqueue` refuses (Linux
    /// `qdisc_drop` of the arrival): counts it in `stats.dropped_at_enqueue`
    /// and discards it under `reason`.
    pub fn refused(&mut self, now: Time, pkt: Packet, reason: DropReason, stats: &mut QdiscStats) {
        stats.dropped_at_enqueue += 1;
        self.drop_packet(now, pkt, reason);
    }

    /// Book-keeping for a queued packet removed and then discarded (an AQM
    /// drop at dequeue, a head drop, an overflow drop from a bucket): counts
    /// it in `stats.dropped_after_dequeue` and discards it under `reason`.
    pub fn discarded(
        &mut self,
        now: Time,
        pkt: Packet,
        reason: DropReason,
        stats: &mut QdiscStats,
    ) {
        stats.dropped_after_dequeue += 1;
        self.drop_packet(now, pkt, reason);
    }

    /// Book-keeping for a packet `dequeue` hands to the link: counts it as
    /// sent in `stats` and traces its sojourn (from `pkt.enqueued_at`).
    pub fn sent(&mut self, now: Time, pkt: &Packet, subqueue: u8, stats: &mut QdiscStats) {
        stats.sent += 1;
        stats.sent_bytes += u64::from(pkt.len);
        self.tracer.event(
            now,
            TraceEvent::Dequeued {
                queue: self.queue,
                subqueue,
                pkt: *pkt,
                sojourn: now.saturating_since(pkt.enqueued_at),
            },
        );
    }

    /// Set CE on `pkt` if it is ECN-capable, counted under `reason` by the
    /// context's owner (its tracer sees `Marked`). Returns `false` for
    /// Not-ECT packets, which the caller must then drop instead.
    pub fn try_mark(&mut self, now: Time, pkt: &mut Packet, reason: MarkReason) -> bool {
        if pkt.ecn == Ecn::NotEct {
            return false;
        }
        pkt.ecn = Ecn::Ce;
        self.tracer.event(
            now,
            TraceEvent::Marked {
                queue: self.queue,
                pkt: *pkt,
                reason,
            },
        );
        true
    }
}

/// Counters every discipline keeps, in the terms of the accounting identities.
///
/// Drops and marks by reason are not here: they are counted where they pass
/// through the context ([`QdiscCtx::drop_packet`], [`QdiscCtx::try_mark`]),
/// by whoever owns it (the bottleneck runtime's queue recorder, a test
/// harness), as Linux counts `qstats.drops` in `qdisc_drop`. A discipline
/// cannot forget to count a drop or count one twice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    /// Packets passed to `enqueue`.
    pub offered: u64,
    /// Packets admitted into the queue.
    pub enqueued: u64,
    /// Offered packets refused at enqueue (tail drop, early AQM drop).
    pub dropped_at_enqueue: u64,
    /// Packets removed from the queue (by `dequeue` or by a head drop).
    pub dequeued: u64,
    /// Packets returned by `dequeue` to the link.
    pub sent: u64,
    /// Removed packets that were then discarded (AQM at dequeue, head drop).
    pub dropped_after_dequeue: u64,
    pub sent_bytes: u64,
}

/// A FIFO of packets and the bytes it holds: Linux's `sch->q` with
/// `sch->qstats.backlog`, as `qdisc_enqueue_tail` and `qdisc_dequeue_head`
/// (`include/net/sch_generic.h`) keep them. The queue of `fifo`, `codel`,
/// `pie` and `red`, and of each `fq_codel`/`fq_pie` bucket.
#[derive(Debug, Default)]
pub struct PacketFifo {
    packets: VecDeque<Packet>,
    /// Sum of [`Packet::len`] over `packets`.
    bytes: u64,
}

impl PacketFifo {
    /// An empty queue with room for `limit` packets preallocated (at most 65536).
    pub fn with_capacity(limit: u64) -> Self {
        PacketFifo {
            packets: VecDeque::with_capacity(limit.min(1 << 16) as usize),
            bytes: 0,
        }
    }

    /// Packets queued (`qdisc_qlen`).
    pub fn len(&self) -> u32 {
        self.packets.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Bytes queued, [`Packet::len`] terms.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes queued as Linux counts them: [`codel::qdisc_pkt_len`] (IP length
    /// + the 14-byte Ethernet header) per packet.
    pub fn frame_bytes(&self) -> u64 {
        self.bytes + u64::from(codel::ETH_HLEN) * self.packets.len() as u64
    }

    pub fn backlog(&self) -> Backlog {
        Backlog {
            packets: self.len(),
            bytes: self.bytes,
        }
    }

    /// Append `pkt` stamped with its enqueue time (`codel_set_enqueue_time`,
    /// `pie_set_enqueue_time`; `__qdisc_enqueue_tail`); returns it as queued.
    pub fn push(&mut self, now: Time, mut pkt: Packet) -> Packet {
        pkt.enqueued_at = now;
        self.bytes += u64::from(pkt.len);
        self.packets.push_back(pkt);
        pkt
    }

    /// Remove the head packet (`__qdisc_dequeue_head`).
    pub fn pop(&mut self) -> Option<Packet> {
        let pkt = self.packets.pop_front()?;
        self.bytes -= u64::from(pkt.len);
        Some(pkt)
    }
}

/// A queueing discipline attached to the egress of a link.
///
/// Implementations keep [`Qdisc::backlog`] and [`Qdisc::stats`] exact after
/// every call; the engine relies on them and property tests check them.
pub trait Qdisc: fmt::Debug + Send {
    /// Stable identifier, identical to the scenario-file `kind` (e.g. `"fq_codel"`).
    fn kind(&self) -> &'static str;

    /// Offer a packet. A full or congested queue reports drops via
    /// [`QdiscCtx::drop_packet`] (possibly of *other* packets).
    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx<'_>);

    /// Take the next packet to transmit, applying dequeue-time AQM.
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet>;

    fn backlog(&self) -> Backlog;

    /// Names of the sub-queues a composite discipline reports sojourn times
    /// for, indexed by `TraceEvent::Dequeued::subqueue` (DualPI2: `["c", "l"]`).
    /// Empty for single queues, which always report `subqueue: 0`.
    fn subqueue_names(&self) -> &'static [&'static str] {
        &[]
    }

    fn stats(&self) -> &QdiscStats;

    /// Earliest time this qdisc wants [`Qdisc::on_timer`] called (e.g. PI2's
    /// `tupdate`). `None` means no timer.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    fn on_timer(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) {
        let _ = (now, ctx);
    }

    /// Discipline-specific control variables, in a fixed order, for sampling
    /// into series and summaries (e.g. CoDel `count`, PI2 `prob`).
    fn xstats(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}
