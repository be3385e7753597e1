//! The flow-queue scheduler of RFC 8290 §4 (Linux `sch_fq_codel.c`,
//! `sch_fq_pie.c`), generic over the AQM that manages each flow queue.
//!
//! Packets are hashed by flow into `flows` buckets; each bucket is a FIFO
//! with its own AQM control variables ([`FlowAqm::Vars`]). A deficit round
//! robin with quantum `quantum` bytes serves the buckets from two lists: *new*
//! flows (which arrived while idle) before *old* ones (RFC 8290 §4.2). The
//! AQM hooks in at enqueue ([`FlowAqm::on_enqueue`]: admit, mark or refuse
//! the arrival, as PIE does) and at dequeue ([`FlowAqm::dequeue`]: take the
//! next packet of the bucket, possibly dropping some first, as CoDel does).
//!
//! Overflow ([`Overflow`]) is the scheduler's, as the two Linux qdiscs differ:
//! `fq_codel` admits the arrival and then drops from the head of the fattest
//! bucket (RFC 8290 §4.1, `fq_codel_drop`); `fq_pie` refuses the arrival at
//! `limit` and only counts arrivals over `memory_limit`
//! (`fq_pie_qdisc_enqueue`).
//!
//! **Flow hashing.** Linux hashes the 5-tuple (`skb_get_hash`, a jhash seeded
//! once per boot) and scales it to `flows` with `reciprocal_scale`. Our
//! [`Packet`] has no 5-tuple but a [`FlowId`] that names the transport
//! connection (data and ACKs of one connection share it, and each direction
//! has its own queue), which is what the 5-tuple identifies. We hash the
//! FlowId with a fixed bijective mixer (multiply by an odd constant, XOR the
//! `hash_seed`, then murmur3's `fmix32`) and scale it the same way. The seed
//! plays the role of Linux's per-boot random seed.
//!
//! **Cost.** Enqueue and dequeue are O(1) per packet amortized, independent
//! of queue depth and number of flows: buckets are preallocated, the two
//! lists are `VecDeque`s of bucket indices preallocated to `flows`, and a
//! bucket's packet `VecDeque` only allocates while it grows to its largest
//! depth. The exception, as in Linux, is the fattest-bucket scan of
//! [`Overflow::DropFattest`] (O(flows), amortized over `drop_batch` drops).
//!
//! Lengths: DRR deficits and fattest-bucket backlogs are charged
//! [`qdisc_pkt_len`] (IP length + 14-byte Ethernet header) as in Linux;
//! `memory_usage` and the [`Backlog`] count [`Packet::len`].

use std::collections::VecDeque;
use std::fmt;

use crate::codel::{qdisc_pkt_len, ETH_HLEN};
use crate::{Backlog, PacketFifo, QdiscCtx, QdiscStats};
use l4slab_core::{DropReason, FlowId, Packet, Time};

/// The [`Qdisc`](crate::Qdisc) methods a flow-queue qdisc hands straight to
/// its scheduler, the [`FlowQueues`] in its field `sched`: `enqueue` (RFC 8290
/// §4.1; Linux `fq_codel_enqueue`, `fq_pie_qdisc_enqueue`), `dequeue` (§4.2;
/// `fq_codel_dequeue`, `fq_pie_qdisc_dequeue`), `backlog` and `stats`.
/// Expanded inside the qdisc's `impl Qdisc`.
macro_rules! qdisc_by_flow_queues {
    () => {
        fn enqueue(
            &mut self,
            now: l4slab_core::Time,
            pkt: l4slab_core::Packet,
            ctx: &mut $crate::QdiscCtx<'_>,
        ) {
            self.sched.enqueue(now, pkt, ctx);
        }

        fn dequeue(
            &mut self,
            now: l4slab_core::Time,
            ctx: &mut $crate::QdiscCtx<'_>,
        ) -> Option<l4slab_core::Packet> {
            self.sched.dequeue(now, ctx)
        }

        fn backlog(&self) -> $crate::Backlog {
            self.sched.backlog()
        }

        fn stats(&self) -> &$crate::QdiscStats {
            self.sched.stats()
        }
    };
}
pub(crate) use qdisc_by_flow_queues;

/// What an AQM says about an arrival ([`FlowAqm::on_enqueue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queue it (possibly CE-marked by the hook).
    Enqueue,
    /// Refuse it with this reason.
    Drop(DropReason),
}

/// The AQM that manages each flow queue of a [`FlowQueues`] scheduler. `self`
/// holds what the flows share (parameters, counters); [`FlowAqm::Vars`] is
/// one flow's control state (Linux: `codel_vars` / `pie_vars` in each flow).
pub trait FlowAqm: fmt::Debug + Send {
    type Vars: fmt::Debug + Send;

    /// The control state of an idle flow (Linux `codel_vars_init`, `pie_vars_init`).
    fn new_vars(&self) -> Self::Vars;

    /// Enqueue-time hook: decide on `pkt` arriving at a flow whose queue holds
    /// `flow_backlog` bytes ([`qdisc_pkt_len`] terms). A hook that CE-marks
    /// the packet does it through `ctx.try_mark` (which counts the mark).
    fn on_enqueue(
        &mut self,
        now: Time,
        vars: &mut Self::Vars,
        flow_backlog: u64,
        pkt: &mut Packet,
        qstats: &mut QdiscStats,
        ctx: &mut QdiscCtx<'_>,
    ) -> Admit;

    /// The scheduler refused an arrival to this flow (limit or hook).
    fn on_refused(&mut self, vars: &mut Self::Vars) {
        let _ = vars;
    }

    /// Dequeue-time hook: take the next packet of `queue`, applying the
    /// AQM. Counts `qstats.dequeued` for every packet popped and drops
    /// through `ctx` (with `dropped_after_dequeue`); the scheduler counts the
    /// packet returned as sent. `None` only when the queue is empty.
    fn dequeue(
        &mut self,
        now: Time,
        vars: &mut Self::Vars,
        queue: &mut FlowQueue<'_>,
        qstats: &mut QdiscStats,
        ctx: &mut QdiscCtx<'_>,
    ) -> Option<Packet>;

    /// [`Overflow::DropFattest`] removed `dropped` packets from this flow.
    fn on_overflow_drop(&mut self, vars: &mut Self::Vars, dropped: u32) {
        let _ = (vars, dropped);
    }
}

/// How the scheduler enforces `limit` and `memory_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// RFC 8290 §4.1 / Linux `fq_codel_drop`: admit, then while over either
    /// limit drop up to `drop_batch` packets from the head of the fattest
    /// bucket (until half its backlog is gone).
    DropFattest { drop_batch: u32 },
    /// Linux `fq_pie_qdisc_enqueue`: refuse the arrival when `limit` packets
    /// are queued; over `memory_limit` only count it (`overmemory`).
    TailDrop,
}

/// Scheduler parameters (the `fq_*` tc knobs that are not the AQM's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqParams {
    /// Packets over all buckets.
    pub limit: u32,
    /// Buckets.
    pub flows: u32,
    /// DRR quantum, bytes ([`qdisc_pkt_len`] terms).
    pub quantum: u32,
    /// Bytes over all buckets.
    pub memory_limit: u64,
    pub overflow: Overflow,
    /// Seed of the flow hash (Linux: a random per-boot seed).
    pub hash_seed: u32,
}

/// Counters of the scheduler (Linux `fq_codel_sched_data` / `fq_pie_sched_data`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FqStats {
    /// Packets dropped because the qdisc was over `limit` or `memory_limit`.
    pub drop_overlimit: u64,
    /// [`Overflow::DropFattest`]: the part of `drop_overlimit` that happened
    /// while over `memory_limit`. [`Overflow::TailDrop`]: arrivals admitted
    /// while over `memory_limit` (Linux fq_pie `overmemory`, not drops).
    pub drop_overmemory: u64,
    /// Times a bucket joined the new list.
    pub new_flow_count: u64,
}

/// Which scheduling list a bucket is on (Linux: the list `flowchain` is linked into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowList {
    New,
    Old,
}

/// One bucket (Linux `struct fq_codel_flow` / `struct fq_pie_flow`).
#[derive(Debug)]
struct Bucket<V> {
    queue: PacketFifo,
    /// DRR deficit, bytes.
    deficit: i64,
    vars: V,
    /// `None`: not scheduled (Linux: `list_empty(&flow->flowchain)`).
    list: Option<FlowList>,
}

/// One bucket's queue as a [`FlowAqm::dequeue`] hook sees it: pops update
/// the bucket's and the qdisc's counters.
pub struct FlowQueue<'a> {
    queue: &'a mut PacketFifo,
    total: &'a mut Backlog,
    memory_usage: &'a mut u64,
}

impl FlowQueue<'_> {
    /// Remove the head packet (Linux `dequeue_head` / `dequeue_func`).
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.queue.pop()?;
        let len = u64::from(p.len);
        self.total.packets -= 1;
        self.total.bytes -= len;
        *self.memory_usage -= len;
        Some(p)
    }

    /// This flow's backlog, [`qdisc_pkt_len`] bytes (Linux `flow->backlog`).
    pub fn flow_backlog(&self) -> u64 {
        self.queue.frame_bytes()
    }

    /// The whole qdisc's backlog, [`qdisc_pkt_len`] bytes (Linux `sch->qstats.backlog`).
    pub fn qdisc_backlog(&self) -> u64 {
        self.total.bytes + u64::from(ETH_HLEN) * u64::from(self.total.packets)
    }
}

/// murmur3's 32-bit finalizer: a bijection with full avalanche.
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// The flow-queue scheduler with the per-flow AQM `A`.
#[derive(Debug)]
pub struct FlowQueues<A: FlowAqm> {
    params: FqParams,
    aqm: A,
    buckets: Vec<Bucket<A::Vars>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    total: Backlog,
    memory_usage: u64,
    fstats: FqStats,
    stats: QdiscStats,
}

impl<A: FlowAqm> FlowQueues<A> {
    /// # Panics
    /// On a zero `limit`, `flows`, `quantum` or `memory_limit` (each qdisc
    /// checks its Linux ranges first, with its own message).
    pub fn new(params: FqParams, aqm: A) -> Self {
        assert!(params.limit > 0 && params.flows > 0 && params.quantum > 0);
        assert!(params.memory_limit > 0);
        if let Overflow::DropFattest { drop_batch } = params.overflow {
            assert!(drop_batch > 0);
        }
        let n = params.flows as usize;
        FlowQueues {
            buckets: (0..n)
                .map(|_| Bucket {
                    queue: PacketFifo::default(),
                    deficit: 0,
                    vars: aqm.new_vars(),
                    list: None,
                })
                .collect(),
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
            params,
            aqm,
            total: Backlog::default(),
            memory_usage: 0,
            fstats: FqStats::default(),
            stats: QdiscStats::default(),
        }
    }

    /// The bucket a flow hashes to (Linux `fq_codel_hash` / `fq_pie_hash`:
    /// `reciprocal_scale(hash, flows_cnt)`).
    pub fn bucket_of(&self, flow: FlowId) -> usize {
        let h = fmix32(flow.wrapping_mul(0x9e37_79b1) ^ self.params.hash_seed);
        ((u64::from(h) * u64::from(self.params.flows)) >> 32) as usize
    }

    pub fn aqm(&self) -> &A {
        &self.aqm
    }
    /// AQM variables of a bucket.
    pub fn vars(&self, bucket: usize) -> &A::Vars {
        &self.buckets[bucket].vars
    }
    /// AQM variables of a bucket, to set up a test.
    #[cfg(test)]
    pub(crate) fn vars_mut(&mut self, bucket: usize) -> &mut A::Vars {
        &mut self.buckets[bucket].vars
    }
    /// DRR deficit of a bucket, bytes.
    pub fn deficit(&self, bucket: usize) -> i64 {
        self.buckets[bucket].deficit
    }
    /// Bytes ([`Packet::len`]) queued in a bucket.
    pub fn bucket_bytes(&self, bucket: usize) -> u64 {
        self.buckets[bucket].queue.bytes()
    }
    /// Packets queued in a bucket.
    pub fn bucket_packets(&self, bucket: usize) -> usize {
        self.buckets[bucket].queue.len() as usize
    }
    /// The list a bucket is scheduled on, if any.
    pub fn list(&self, bucket: usize) -> Option<FlowList> {
        self.buckets[bucket].list
    }
    pub fn new_flows_len(&self) -> usize {
        self.new_flows.len()
    }
    pub fn old_flows_len(&self) -> usize {
        self.old_flows.len()
    }
    pub fn memory_usage(&self) -> u64 {
        self.memory_usage
    }
    pub fn fq_stats(&self) -> &FqStats {
        &self.fstats
    }
    pub fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    pub fn backlog(&self) -> Backlog {
        self.total
    }

    /// The variables of the scheduled buckets, new list first.
    pub fn scheduled_vars(&self) -> impl Iterator<Item = &A::Vars> {
        self.new_flows
            .iter()
            .chain(&self.old_flows)
            .map(|&i| &self.buckets[i as usize].vars)
    }

    /// Run `f` over every bucket's variables with its backlog in
    /// [`qdisc_pkt_len`] bytes, in bucket order (Linux `fq_pie_timer`'s loop
    /// over all flows).
    pub fn for_each_flow(&mut self, mut f: impl FnMut(&mut A, &mut A::Vars, u64)) {
        for b in &mut self.buckets {
            let backlog = b.queue.frame_bytes();
            f(&mut self.aqm, &mut b.vars, backlog);
        }
    }

    /// Remove the head of `list` (Linux `list_del_init` / `list_move_tail`).
    fn pop_list(&mut self, list: FlowList) {
        match list {
            FlowList::New => self.new_flows.pop_front(),
            FlowList::Old => self.old_flows.pop_front(),
        };
    }

    /// Refuse an arrival to bucket `idx`.
    fn refuse(
        &mut self,
        now: Time,
        idx: usize,
        pkt: Packet,
        reason: DropReason,
        ctx: &mut QdiscCtx<'_>,
    ) {
        self.aqm.on_refused(&mut self.buckets[idx].vars);
        ctx.refused(now, pkt, reason, &mut self.stats);
    }

    /// RFC 8290 §4.1: classify, let the AQM decide, append, schedule; then
    /// enforce the limits per [`Overflow`].
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.stats.offered += 1;
        let idx = self.bucket_of(pkt.flow);
        let len = u64::from(pkt.len);
        if self.params.overflow == Overflow::TailDrop {
            // fq_pie_qdisc_enqueue: `memory_limited = q->memory_usage > q->memory_limit + skb->truesize`
            let memory_limited = self.memory_usage > self.params.memory_limit + len;
            // fq_pie_qdisc_enqueue: `if (unlikely(qdisc_qlen(sch) >= sch->limit))` -> drop
            if self.total.packets >= self.params.limit {
                self.fstats.drop_overlimit += 1;
                self.refuse(now, idx, pkt, DropReason::Overlimit, ctx);
                return;
            }
            if memory_limited {
                // `else if (unlikely(memory_limited)) q->overmemory++;` (and admitted)
                self.fstats.drop_overmemory += 1;
            }
        }
        let b = &mut self.buckets[idx];
        let backlog = b.queue.frame_bytes();
        let admit = self
            .aqm
            .on_enqueue(now, &mut b.vars, backlog, &mut pkt, &mut self.stats, ctx);
        if let Admit::Drop(reason) = admit {
            self.refuse(now, idx, pkt, reason, ctx);
            return;
        }
        // codel_set_enqueue_time(skb) / pie_set_enqueue_time(skb); flow_queue_add(flow, skb)
        let b = &mut self.buckets[idx];
        let pkt = b.queue.push(now, pkt);
        self.total.packets += 1;
        self.total.bytes += len;
        ctx.admitted(now, &pkt, 0, &mut self.stats);
        if b.list.is_none() {
            // RFC 8290 §4.1: a queue that is not active "is added to the end
            // of the list of new queues" with a deficit of one quantum.
            self.new_flows.push_back(idx as u32);
            b.list = Some(FlowList::New);
            b.deficit = i64::from(self.params.quantum);
            self.fstats.new_flow_count += 1;
        }
        self.memory_usage += len;
        let Overflow::DropFattest { drop_batch } = self.params.overflow else {
            return;
        };
        let memory_limited = self.memory_usage > self.params.memory_limit;
        // `if (++sch->q.qlen <= sch->limit && !memory_limited) return NET_XMIT_SUCCESS;`
        if self.total.packets <= self.params.limit && !memory_limited {
            return;
        }
        let dropped = u64::from(self.drop_from_fattest(now, drop_batch, ctx));
        self.fstats.drop_overlimit += dropped;
        if memory_limited {
            self.fstats.drop_overmemory += dropped;
        }
    }

    /// RFC 8290 §4.1 / Linux `fq_codel_drop`: find the bucket with the largest
    /// backlog (O(flows), as in Linux; backlogs in [`qdisc_pkt_len`] bytes) and
    /// drop packets from its head until half its backlog is gone or
    /// `drop_batch` packets are dropped. Returns the number dropped.
    fn drop_from_fattest(&mut self, now: Time, drop_batch: u32, ctx: &mut QdiscCtx<'_>) -> u32 {
        let mut fattest = 0;
        let mut max_bytes = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            let backlog = b.queue.frame_bytes();
            // `if (q->backlogs[i] > maxbacklog)`: the first of equals wins.
            if backlog > max_bytes {
                max_bytes = backlog;
                fattest = i;
            }
        }
        // "Our goal is to drop half of this fat flow backlog"
        let threshold = max_bytes / 2;
        let b = &mut self.buckets[fattest];
        let mut dropped = 0u32;
        let mut len = 0u64;
        // `do { ... } while (++i < max_packets && len < threshold);`
        while let Some(p) = b.queue.pop() {
            let plen = u64::from(p.len);
            len += qdisc_pkt_len(p.len);
            self.total.packets -= 1;
            self.total.bytes -= plen;
            self.memory_usage -= plen;
            self.stats.dequeued += 1;
            ctx.discarded(now, p, DropReason::Overlimit, &mut self.stats);
            dropped += 1;
            if dropped >= drop_batch || len >= threshold {
                break;
            }
        }
        // "Tell codel to increase its signal strength also"
        self.aqm.on_overflow_drop(&mut b.vars, dropped);
        dropped
    }

    /// RFC 8290 §4.2 / Linux `fq_codel_dequeue`, `fq_pie_qdisc_dequeue`.
    pub fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        let quantum = i64::from(self.params.quantum);
        loop {
            // "new flows first, then old flows"
            let (list, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (FlowList::New, i),
                (None, Some(&i)) => (FlowList::Old, i),
                (None, None) => return None,
            };
            let b = &mut self.buckets[idx as usize];
            debug_assert_eq!(b.list, Some(list), "bucket {idx} on the wrong list");
            if b.deficit <= 0 {
                // RFC 8290 §4.2: a queue out of deficit gets another quantum
                // and goes to the end of the old list.
                b.deficit += quantum;
                b.list = Some(FlowList::Old);
                self.pop_list(list);
                self.old_flows.push_back(idx);
                continue;
            }
            let Bucket { queue, vars, .. } = b;
            let pkt = self.aqm.dequeue(
                now,
                vars,
                &mut FlowQueue {
                    queue,
                    total: &mut self.total,
                    memory_usage: &mut self.memory_usage,
                },
                &mut self.stats,
                ctx,
            );
            let Some(pkt) = pkt else {
                // RFC 8290 §4.2: an empty queue from the new list moves to
                // the end of the old list (so a flow cannot stay "new" by
                // trickling packets); one from the old list is removed.
                // Linux: `if ((head == &q->new_flows) && !list_empty(&q->old_flows))`.
                self.pop_list(list);
                let b = &mut self.buckets[idx as usize];
                if list == FlowList::New && !self.old_flows.is_empty() {
                    b.list = Some(FlowList::Old);
                    self.old_flows.push_back(idx);
                } else {
                    b.list = None;
                }
                continue;
            };
            // `flow->deficit -= qdisc_pkt_len(skb)`
            self.buckets[idx as usize].deficit -= qdisc_pkt_len(pkt.len) as i64;
            ctx.sent(now, &pkt, 0, &mut self.stats);
            return Some(pkt);
        }
    }
}
