//! FQ-CoDel, the Flow Queue CoDel scheduler and AQM: RFC 8290 §4, as Linux
//! `net/sched/sch_fq_codel.c` implements it, including `ce_threshold` and
//! `ce_threshold_selector`.
//!
//! Packets are hashed by flow into `flows` buckets; each bucket is a FIFO with
//! its own CoDel control variables ([`CodelState`], the core of
//! [`crate::codel`]). A deficit round robin with quantum `quantum` bytes serves
//! the buckets from two lists: *new* flows (which arrived while idle) are
//! served before *old* ones (RFC 8290 §4.2). On overflow (`limit` packets or
//! `memory_limit` bytes) the fattest bucket loses packets from its head
//! (RFC 8290 §4.1, Linux `fq_codel_drop`).
//!
//! The scheduler (hashing, the two lists, DRR, limits, the fattest-flow
//! drop) is the generic [`FlowQueues`] of [`crate::fq`], shared with
//! `fq_pie`; this file plugs CoDel into it as the per-flow AQM
//! ([`CodelAqm`]: no enqueue-time hook, `codel_dequeue` as the dequeue hook).
//!
//! **Flow hashing.** Linux hashes the 5-tuple (`skb_get_hash`, a jhash seeded
//! once per boot) and scales it to `flows` with `reciprocal_scale`. Our
//! [`Packet`] has no 5-tuple but a [`FlowId`](l4slab_core::FlowId) that names the transport
//! connection (data and ACKs of one connection share it, and each direction
//! has its own queue), which is what the 5-tuple identifies. We hash the
//! FlowId with a fixed bijective mixer (multiply by an odd constant, XOR the
//! `hash_seed`, then murmur3's `fmix32`) and scale it the same way. The seed
//! plays the role of Linux's per-boot random seed: change it to move hash
//! collisions (two flows sharing a bucket) around. With the default seed,
//! FlowIds 0..16 occupy distinct buckets of 1024 (unit-tested).
//!
//! **Cost.** Enqueue and dequeue are O(1) per packet amortized, independent
//! of queue depth and number of flows: buckets are preallocated, the two
//! lists are `VecDeque`s of bucket indices preallocated to `flows`, and a
//! bucket's packet `VecDeque` only allocates while it grows to its largest
//! depth. A dequeue may rotate several deficit-exhausted buckets to the old
//! list first (at most `ceil(max packet / quantum)` rotations per bucket).
//! The exception, as in Linux, is overflow: finding the fattest bucket scans
//! all `flows` backlogs (O(flows)), amortized by dropping up to `drop_batch`
//! packets per scan.
//!
//! Not implemented: external classifiers (`tc filter` on fq_codel, and
//! `skb->priority` selecting a bucket); the per-class dump (`tc class show`).
//!
//! Deviations from Linux (see `docs/models/fq_codel.md`):
//! * `memory_usage` counts `Packet::len`; Linux counts `skb->truesize`
//!   (buffer overhead included, ~2–4 KB per full-size packet), so the 32 MB
//!   `memory_limit` binds later here.
//! * None in scheduling: DRR deficits and the fattest-flow backlogs are
//!   charged [`crate::codel::qdisc_pkt_len`] (IP length + 14-byte Ethernet header) as in
//!   Linux, so the default quantum 1514 is exactly one full-size packet per
//!   turn and byte fairness is over frame bytes, as in Linux.
//! * Overflow drops are counted as `DropReason::Overlimit` but, since they
//!   remove queued packets from the head of a bucket, as `dequeued` +
//!   `dropped_after_dequeue` in the accounting identities.
//! * The CoDel deviations of [`crate::codel`] apply per bucket.

use serde::{Deserialize, Serialize};

use crate::codel::{
    assert_params, CeSelector, CodelParams, CodelQueue, CodelState, CodelStats, Loop,
    ETH_PSCHED_MTU,
};
pub use crate::fq::FlowList;
use crate::fq::{qdisc_by_flow_queues, Admit, FlowAqm, FlowQueue, FlowQueues, FqParams, Overflow};
use crate::registry::QdiscKind;
use crate::{Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{Dur, Packet, Time};

/// Largest `flows` Linux accepts (`fq_codel_change`: `flows_cnt > 65536` is `-EINVAL`).
pub const MAX_FLOWS: u32 = 65536;
/// Smallest `quantum` Linux uses (`fq_codel_change`: `max(256U, quantum)`).
pub const MIN_QUANTUM: u32 = 256;
/// Largest `quantum` Linux accepts (`FQ_CODEL_QUANTUM_MAX`, 1 << 20).
pub const MAX_QUANTUM: u32 = 1 << 20;

/// tc `limit`.
pub const LIMIT: Param = Param::new(
    "limit",
    Kind::Limit,
    ParamValue::Int(10 * 1024),
    "Linux `fq_codel_init`: `sch->limit = 10*1024`; a scenario's default is the direction's `buffer`",
    "packets over all buckets (bytes and times at 1500 B per packet, at least 1)",
);

/// tc `flows`.
pub const FLOWS: Param = Param::new(
    "flows",
    Kind::Int {
        min: 1,
        max: MAX_FLOWS as i64,
    },
    ParamValue::Int(1024),
    "Linux `fq_codel_init`; RFC 8290 §5.2; range `fq_codel_change`",
    "number of hash buckets",
);

/// tc `target`.
pub const TARGET: Param = Param {
    source: "Linux `codel_params_init`; RFC 8290 §5.2",
    doc: "each bucket's CoDel target",
    ..crate::codel::TARGET
};

/// tc `interval`.
pub const INTERVAL: Param = Param {
    source: "Linux `codel_params_init`; RFC 8290 §5.2",
    doc: "each bucket's CoDel interval",
    ..crate::codel::INTERVAL
};

/// tc `quantum`.
pub const QUANTUM: Param = Param::new(
    "quantum",
    Kind::Bytes {
        min: MIN_QUANTUM as u64,
        max: MAX_QUANTUM as u64,
    },
    ParamValue::Int(ETH_PSCHED_MTU as i64),
    "Linux `fq_codel_init`: `psched_mtu(dev)` = 1514; RFC 8290 §5.2; Linux raises a smaller one to 256, l4slab refuses it",
    "DRR quantum: bytes a bucket may send per round",
);

/// tc `ecn` / `noecn`.
pub const ECN: Param = Param {
    default: ParamValue::Flag(true),
    source: "Linux `fq_codel_init`: `cparams.ecn = true`; RFC 8290 §5.2",
    ..crate::codel::ECN
};

/// tc `ce_threshold`.
pub const CE_THRESHOLD: Param = Param {
    source: "Linux `codel_params_init`: off; RFC 8290 §5.2",
    doc: "CE-mark every ECN-capable packet whose sojourn is above this",
    ..crate::codel::CE_THRESHOLD
};

/// tc `ce_threshold_selector` (read by the scenario's own code: a name or
/// tc's `VALUE/MASK`, which no generic kind describes).
pub const CE_THRESHOLD_SELECTOR: Param = Param::new(
    "ce_threshold_selector",
    Kind::Custom(
        "`\"ect1\"` (= `0x1/0x3`) or tc's `VALUE/MASK` over the DS field, mask ≠ 0; needs `ce_threshold`",
    ),
    ParamValue::Unset {
        example: r#""ect1""#,
    },
    "Linux ≥ 5.16; default none: `ce_threshold` applies to all packets",
    "which packets `ce_threshold` applies to (our packets carry no DSCP)",
);

/// tc `memory_limit`.
pub const MEMORY_LIMIT: Param = Param::new(
    "memory_limit",
    Kind::Bytes {
        min: 1,
        max: 1 << 31,
    },
    ParamValue::Int(32 << 20),
    "Linux `fq_codel_init`: `32 << 20`; Linux caps it at 2 GiB, l4slab refuses more",
    "bytes over all buckets before the fattest bucket is trimmed",
);

/// tc `drop_batch`.
pub const DROP_BATCH: Param = Param::new(
    "drop_batch",
    Kind::up_to_u32(1),
    ParamValue::Int(64),
    "Linux `fq_codel_init`: `drop_batch_size = 64`",
    "most packets dropped from the fattest bucket per overflow",
);

/// l4slab's `hash_seed`.
pub const HASH_SEED: Param = Param::new(
    "hash_seed",
    Kind::up_to_u32(0),
    ParamValue::Int(0),
    "l4slab extension (Linux: a random per-boot seed)",
    "seed of the flow hash",
);

/// The parameters a scenario can set (`qdisc = { kind = "fq_codel", ... }`).
pub const PARAMS: &[Param] = &[
    LIMIT,
    FLOWS,
    TARGET,
    INTERVAL,
    QUANTUM,
    ECN,
    CE_THRESHOLD,
    CE_THRESHOLD_SELECTOR,
    MEMORY_LIMIT,
    DROP_BATCH,
    HASH_SEED,
];

/// Configuration of the `fq_codel` qdisc: `tc qdisc add ... fq_codel [limit
/// PACKETS] [flows NUMBER] [target TIME] [interval TIME] [quantum BYTES]
/// [ecn | noecn] [ce_threshold TIME] [ce_threshold_selector VALUE/MASK]
/// [memory_limit BYTES] [drop_batch SIZE]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FqCodelConfig {
    /// Packets over all buckets. Linux `fq_codel_init`: `sch->limit = 10*1024`.
    pub limit: u32,
    /// Buckets. Linux `fq_codel_init`: 1024; RFC 8290 §5.2 (1024 in Linux).
    pub flows: u32,
    /// RFC 8290 §5.2 / `codel_params_init`: 5 ms.
    pub target: Dur,
    /// RFC 8290 §5.2 / `codel_params_init`: 100 ms.
    pub interval: Dur,
    /// DRR quantum, bytes. Linux `fq_codel_init`: `psched_mtu(dev)` = 1514
    /// (RFC 8290 §5.2).
    pub quantum: u32,
    /// Linux `fq_codel_init`: `cparams.ecn = true` (RFC 8290 §5.2).
    pub ecn: bool,
    /// RFC 8290 §5.2 / `codel_params_init`: disabled.
    pub ce_threshold: Option<Dur>,
    /// Linux ≥ 5.16 `ce_threshold_selector`/`mask`: default none (all packets).
    pub ce_threshold_selector: Option<CeSelector>,
    /// Bytes over all buckets. Linux `fq_codel_init`: `32 << 20`.
    pub memory_limit: u64,
    /// Most packets dropped per overflow. Linux `fq_codel_init`: 64.
    pub drop_batch: u32,
    /// CoDel's "one MTU of backlog". Linux: `psched_mtu(dev)` = 1514. Not a tc knob.
    pub mtu: u32,
    /// Seed of the flow hash (Linux: a random per-boot seed). l4slab extension.
    pub hash_seed: u32,
}

l4slab_core::param_config!(FqCodelConfig {
    limit = LIMIT,
    flows = FLOWS,
    target = TARGET,
    interval = INTERVAL,
    quantum = QUANTUM,
    ecn = ECN,
    ce_threshold = CE_THRESHOLD,
    memory_limit = MEMORY_LIMIT,
    drop_batch = DROP_BATCH,
    hash_seed = HASH_SEED,
} + {
    ce_threshold_selector: None, // CE_THRESHOLD_SELECTOR: codel_params_init mask = 0
    mtu: ETH_PSCHED_MTU, // fq_codel_init: cparams.mtu = psched_mtu
});

impl QdiscKind for FqCodelConfig {
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(FqCodel::new(self.clone()))
    }
}

impl FqCodelConfig {
    pub fn params(&self) -> CodelParams {
        CodelParams {
            target: self.target,
            interval: self.interval,
            mtu: self.mtu,
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: self.ce_threshold_selector,
        }
    }
}

/// CoDel as the per-flow AQM of [`FlowQueues`]: parameters and counters
/// shared by all buckets, one [`CodelState`] per bucket. CoDel acts at
/// dequeue only.
#[derive(Debug)]
pub struct CodelAqm {
    params: CodelParams,
    cstats: CodelStats,
}

/// `codel_dequeue(sch, &sch->qstats.backlog, ...)`: the one-MTU rule reads
/// the *whole qdisc's* backlog.
impl CodelQueue for FlowQueue<'_> {
    /// sch_fq_codel.c `dequeue_func`.
    fn pop(&mut self) -> Option<Packet> {
        FlowQueue::pop(self)
    }
    fn backlog_bytes(&self) -> u64 {
        self.qdisc_backlog()
    }
}

impl FlowAqm for CodelAqm {
    type Vars = CodelState;

    /// `codel_vars_init`.
    fn new_vars(&self) -> CodelState {
        CodelState::default()
    }

    /// `fq_codel_enqueue` has no enqueue-time AQM: every arrival is queued.
    fn on_enqueue(
        &mut self,
        _now: Time,
        _vars: &mut CodelState,
        _flow_backlog: u64,
        _pkt: &mut Packet,
        _qstats: &mut QdiscStats,
        _ctx: &mut QdiscCtx<'_>,
    ) -> Admit {
        Admit::Enqueue
    }

    /// `fq_codel_dequeue`: `codel_dequeue(...)` on the bucket.
    fn dequeue(
        &mut self,
        now: Time,
        vars: &mut CodelState,
        queue: &mut FlowQueue<'_>,
        qstats: &mut QdiscStats,
        ctx: &mut QdiscCtx<'_>,
    ) -> Option<Packet> {
        vars.dequeue(
            now,
            &mut Loop {
                params: &self.params,
                cstats: &mut self.cstats,
                qstats,
                queue,
                ctx,
            },
        )
    }

    /// `fq_codel_drop`: "Tell codel to increase its signal strength also".
    fn on_overflow_drop(&mut self, vars: &mut CodelState, dropped: u32) {
        vars.add_count(dropped);
    }
}

/// The `fq_codel` qdisc: the [`FlowQueues`] scheduler with CoDel per bucket.
#[derive(Debug)]
pub struct FqCodel {
    cfg: FqCodelConfig,
    sched: FlowQueues<CodelAqm>,
}

impl FqCodel {
    /// # Panics
    /// On parameters outside Linux's accepted ranges (rejected earlier, with
    /// a key path, by the scenario layer; reaching this is a bug).
    pub fn new(cfg: FqCodelConfig) -> Self {
        assert!(cfg.limit > 0, "fq_codel limit must be positive");
        assert!(
            (1..=MAX_FLOWS).contains(&cfg.flows),
            "fq_codel flows must be in 1..={MAX_FLOWS}"
        );
        assert!(
            (MIN_QUANTUM..=MAX_QUANTUM).contains(&cfg.quantum),
            "fq_codel quantum must be in {MIN_QUANTUM}..={MAX_QUANTUM}"
        );
        assert!(cfg.drop_batch > 0, "fq_codel drop_batch must be positive");
        assert!(
            cfg.memory_limit > 0,
            "fq_codel memory_limit must be positive"
        );
        let params = cfg.params();
        assert_params(&params);
        let sched = FlowQueues::new(
            FqParams {
                limit: cfg.limit,
                flows: cfg.flows,
                quantum: cfg.quantum,
                memory_limit: cfg.memory_limit,
                overflow: Overflow::DropFattest {
                    drop_batch: cfg.drop_batch,
                },
                hash_seed: cfg.hash_seed,
            },
            CodelAqm {
                params,
                cstats: CodelStats::default(),
            },
        );
        FqCodel { cfg, sched }
    }

    pub fn config(&self) -> &FqCodelConfig {
        &self.cfg
    }

    /// The flow-queue scheduler: a flow's bucket ([`FlowQueues::bucket_of`]),
    /// each bucket's CoDel variables ([`FlowQueues::vars`]), deficit, bytes
    /// and list, and the scheduler's counters ([`FlowQueues::fq_stats`]).
    pub fn flows(&self) -> &FlowQueues<CodelAqm> {
        &self.sched
    }
    pub fn codel_stats(&self) -> &CodelStats {
        &self.sched.aqm().cstats
    }
}

impl Qdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    qdisc_by_flow_queues!();

    /// The fields of `tc -s qdisc show` for fq_codel (`fq_codel_dump_stats`),
    /// plus `dropping_flows`: scheduled buckets whose CoDel is in the
    /// dropping state.
    fn xstats(&self) -> Vec<(&'static str, f64)> {
        let dropping = self.sched.scheduled_vars().filter(|v| v.dropping()).count();
        let cstats = self.codel_stats();
        let fstats = self.sched.fq_stats();
        vec![
            ("maxpacket", f64::from(cstats.maxpacket)),
            ("drop_overlimit", fstats.drop_overlimit as f64),
            ("new_flow_count", fstats.new_flow_count as f64),
            ("ecn_mark", cstats.ecn_mark as f64),
            ("ce_mark", cstats.ce_mark as f64),
            ("memory_usage", self.sched.memory_usage() as f64),
            ("drop_overmemory", fstats.drop_overmemory as f64),
            ("new_flows_len", self.sched.new_flows_len() as f64),
            ("old_flows_len", self.sched.old_flows_len() as f64),
            ("dropping_flows", dropping as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Timelines for each RFC 8290 / Linux mechanic. Flow *f* is FlowId *f*;
    //! with the default hash seed, flows 0..16 have distinct buckets.
    use super::*;
    use crate::codel::qdisc_pkt_len;
    use crate::testing::Harness;
    use l4slab_core::{DropReason, TraceEvent};
    use l4slab_core::{Ecn, FlowId, MarkReason};

    fn fq(cfg: FqCodelConfig) -> Harness<FqCodel> {
        Harness::new(FqCodel::new(cfg))
    }

    fn offer(h: &mut Harness<FqCodel>, id: u64, flow: FlowId, len: u32) {
        h.offer_pkt(Packet::new(id, flow, len, Ecn::NotEct));
    }

    fn at(h: &mut Harness<FqCodel>, t: Time) {
        h.advance(t - h.now);
    }

    #[test]
    fn small_flow_ids_get_distinct_buckets() {
        let q = FqCodel::new(FqCodelConfig::default());
        let mut b: Vec<usize> = (0..16).map(|f| q.flows().bucket_of(f)).collect();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 16);
        assert!(b.iter().all(|&i| i < 1024));
        // One bucket: everything collides (a single CoDel queue with DRR).
        let one = FqCodel::new(FqCodelConfig {
            flows: 1,
            ..FqCodelConfig::default()
        });
        assert!((0..100).all(|f| one.flows().bucket_of(f) == 0));
        // The seed moves flows between buckets.
        let seeded = FqCodel::new(FqCodelConfig {
            hash_seed: 12345,
            ..FqCodelConfig::default()
        });
        assert!((0..16).any(|f| seeded.flows().bucket_of(f) != q.flows().bucket_of(f)));
    }

    /// RFC 8290 §4.2: new flows are served before old ones, so a sparse flow's
    /// packet overtakes a backlogged flow's queue.
    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        let mut h = fq(FqCodelConfig::default());
        for id in 0..20 {
            offer(&mut h, id, 1, 1500);
        }
        // Flow 1 uses its first quantum (1514 B: one 1500 B packet + 14 B
        // header) on the new list, then moves to the old list.
        assert_eq!(h.dequeue().map(|p| p.id), Some(0));
        assert_eq!(h.dequeue().map(|p| p.id), Some(1));
        assert_eq!(h.dequeue().map(|p| p.id), Some(2));
        let b1 = h.q.flows().bucket_of(1);
        assert_eq!(h.q.flows().list(b1), Some(FlowList::Old));
        offer(&mut h, 100, 2, 100);
        assert_eq!(
            h.q.flows().list(h.q.flows().bucket_of(2)),
            Some(FlowList::New)
        );
        let p = h.dequeue().unwrap();
        assert_eq!((p.id, p.flow), (100, 2), "the new flow goes first");
        assert_eq!(h.dequeue().map(|p| p.flow), Some(1));
        assert_eq!(h.q.flows().fq_stats().new_flow_count, 2);
        h.check_accounting();
    }

    /// Deficit round robin: backlogged flows get equal *bytes*, whatever their
    /// packet sizes (quantum 1514).
    #[test]
    fn drr_shares_bytes_equally_between_packet_sizes() {
        let mut h = fq(FqCodelConfig::default());
        let mut id = 0;
        for _ in 0..400 {
            offer(&mut h, id, 1, 1500);
            id += 1;
        }
        for _ in 0..2000 {
            offer(&mut h, id, 2, 300);
            id += 1;
        }
        for _ in 0..600 {
            h.dequeue().expect("backlogged");
        }
        // DRR charges frame bytes (qdisc_pkt_len), as Linux does.
        let bytes = |f: FlowId| -> u64 {
            h.sent
                .iter()
                .filter(|p| p.flow == f)
                .map(|p| qdisc_pkt_len(p.len))
                .sum()
        };
        let (a, b) = (bytes(1), bytes(2));
        // Both stay backlogged: each has had the same number of quanta give or
        // take one, minus a deficit in (-1514, 1514].
        assert!(a.abs_diff(b) <= 3 * 1514, "flow 1 {a} B vs flow 2 {b} B");
        assert!(a > 100_000 && b > 100_000);
        h.check_accounting();
    }

    /// RFC 8290 §4.2: a new flow that empties moves to the old list instead of
    /// being forgotten, so its next packet gets no new-flow priority.
    #[test]
    fn an_emptied_new_flow_moves_to_the_old_list() {
        let mut h = fq(FqCodelConfig::default());
        for id in 0..20 {
            offer(&mut h, id, 1, 300);
        }
        // Flow 1 (300 B packets, charged 314): five packets on its first
        // quantum (1514 -> -56), a fresh quantum on the old list (1458), two
        // more (830 left).
        for id in 0..7 {
            assert_eq!(h.dequeue().map(|p| p.id), Some(id));
        }
        let (b1, b2) = (h.q.flows().bucket_of(1), h.q.flows().bucket_of(2));
        assert_eq!(h.q.flows().list(b1), Some(FlowList::Old));
        assert_eq!(h.q.flows().deficit(b1), 830);
        offer(&mut h, 100, 2, 100);
        assert_eq!(h.dequeue().map(|p| p.id), Some(100));
        // Flow 2 is empty but still at the head of the new list; the next
        // dequeue finds it empty and moves it to the end of the old list.
        assert_eq!(
            (h.q.flows().new_flows_len(), h.q.flows().old_flows_len()),
            (1, 1)
        );
        assert_eq!(h.dequeue().map(|p| p.id), Some(7));
        assert_eq!(h.q.flows().list(b2), Some(FlowList::Old));
        assert_eq!(
            (h.q.flows().new_flows_len(), h.q.flows().old_flows_len()),
            (0, 2)
        );
        // A packet of flow 2 now waits for flow 1 to use up its quantum
        // (516 -> 202 -> -112) instead of going first.
        offer(&mut h, 101, 2, 100);
        assert_eq!(
            h.q.flows().fq_stats().new_flow_count,
            2,
            "not a new flow again"
        );
        assert_eq!(h.drain_ids()[..3], [8, 9, 101]);
        h.check_accounting();
    }

    /// An old flow that empties leaves the lists; a new flow that empties
    /// while the old list is empty is removed too (Linux `list_del_init`).
    #[test]
    fn emptied_flows_leave_the_lists() {
        let mut h = fq(FqCodelConfig::default());
        offer(&mut h, 0, 1, 1500);
        assert_eq!(h.dequeue().map(|p| p.id), Some(0));
        assert_eq!(h.dequeue(), None);
        assert_eq!(
            (h.q.flows().new_flows_len(), h.q.flows().old_flows_len()),
            (0, 0)
        );
        assert_eq!(h.q.flows().list(h.q.flows().bucket_of(1)), None);
        // Again as a new flow, with a fresh quantum.
        offer(&mut h, 1, 1, 1500);
        assert_eq!(
            h.q.flows().list(h.q.flows().bucket_of(1)),
            Some(FlowList::New)
        );
        assert_eq!(h.q.flows().deficit(h.q.flows().bucket_of(1)), 1514);
        // Old flow emptying: flows 1 and 2 both old, drain.
        for id in 2..10 {
            offer(&mut h, id, 1 + (id % 2) as FlowId, 1500);
        }
        while h.dequeue().is_some() {}
        assert_eq!(
            (h.q.flows().new_flows_len(), h.q.flows().old_flows_len()),
            (0, 0)
        );
        h.check_accounting();
    }

    /// RFC 8290 §4.1 / Linux `fq_codel_drop`: over the limit, drop from the
    /// head of the fattest flow until half its bytes are gone.
    #[test]
    fn overflow_drops_half_of_the_fattest_flow() {
        let mut h = fq(FqCodelConfig {
            limit: 20,
            ..FqCodelConfig::default()
        });
        for id in 0..16 {
            offer(&mut h, id, 1, 1500); // 24000 B
        }
        for id in 16..20 {
            offer(&mut h, id, 2, 1500);
        }
        assert!(h.dropped.is_empty(), "20 packets fit");
        offer(&mut h, 20, 2, 1500); // 21 > 20: flow 1 (fattest) loses 12000 B
        assert_eq!(h.dropped_ids(), (0..8).collect::<Vec<_>>());
        assert!(h.dropped.iter().all(|(_, r)| *r == DropReason::Overlimit));
        let b1 = h.q.flows().bucket_of(1);
        assert_eq!(h.q.flows().bucket_bytes(b1), 8 * 1500);
        assert_eq!(h.q.flows().vars(b1).count(), 8, "codel count += dropped");
        assert_eq!(h.q.flows().fq_stats().drop_overlimit, 8);
        assert_eq!(h.q.backlog().packets, 13);
        h.check_accounting();
    }

    #[test]
    fn overflow_drops_at_most_drop_batch() {
        let mut h = fq(FqCodelConfig {
            limit: 20,
            drop_batch: 3,
            ..FqCodelConfig::default()
        });
        for id in 0..21 {
            offer(&mut h, id, 1, 1500);
        }
        assert_eq!(h.dropped_ids(), [0, 1, 2]);
        h.check_accounting();
    }

    /// Over `memory_limit`, the same drop from the fattest bucket; among equal
    /// backlogs the lowest bucket index loses (Linux: strict `>` in the scan).
    #[test]
    fn memory_limit_overflow_counts_overmemory() {
        let mut h = fq(FqCodelConfig {
            memory_limit: 4000,
            ..FqCodelConfig::default()
        });
        offer(&mut h, 0, 1, 1500);
        offer(&mut h, 1, 2, 1500);
        offer(&mut h, 2, 3, 1500); // 4500 B > 4000
        let first = (1..=3).min_by_key(|&f| h.q.flows().bucket_of(f)).unwrap();
        assert_eq!(h.dropped_ids(), [u64::from(first) - 1]);
        assert_eq!(h.q.backlog().bytes, 3000);
        assert_eq!(h.q.flows().fq_stats().drop_overmemory, 1);
        assert_eq!(h.q.flows().fq_stats().drop_overlimit, 1);
        h.check_accounting();
    }

    /// Each flow has its own CoDel: a standing queue in flow 1 is dropped
    /// while flow 2's packets (sparse) are not, and ECN (on by default) marks
    /// ECT packets instead.
    #[test]
    fn per_flow_codel_with_ecn_on_by_default() {
        let mut h = fq(FqCodelConfig::default());
        let ms = Time::from_millis;
        let mut id = 0;
        for _ in 0..200 {
            h.offer_pkt(Packet::new(id, 1, 1500, Ecn::NotEct));
            id += 1;
            h.offer_pkt(Packet::new(id, 3, 1500, Ecn::Ect0));
            id += 1;
        }
        for t in 1..=300 {
            at(&mut h, ms(t));
            if t % 50 == 0 {
                h.offer_pkt(Packet::new(id, 2, 100, Ecn::NotEct));
                id += 1;
            }
            h.dequeue();
        }
        let b1 = h.q.flows().bucket_of(1);
        let b3 = h.q.flows().bucket_of(3);
        assert!(h.q.flows().vars(b1).count() >= 2);
        assert!(h.q.flows().vars(b3).count() >= 2);
        assert!(
            h.dropped.iter().all(|(p, _)| p.flow == 1),
            "only Not-ECT flow 1 dropped"
        );
        assert!(!h.dropped.is_empty());
        assert_eq!(h.marks(MarkReason::Aqm), h.q.codel_stats().ecn_mark);
        assert!(h.q.codel_stats().ecn_mark >= 2);
        assert_eq!(h.sent.iter().filter(|p| p.flow == 2).count(), 6);
        h.check_accounting();
    }

    /// Linux `ce_threshold_selector 0x1/0x3`: ce_threshold marks only ECT(1).
    #[test]
    fn ce_threshold_selector_restricts_marking_to_ect1() {
        let run = |sel: Option<CeSelector>| {
            let mut h = fq(FqCodelConfig {
                ce_threshold: Some(Dur::from_millis(1)),
                ce_threshold_selector: sel,
                ..FqCodelConfig::default()
            });
            h.offer_pkt(Packet::new(0, 1, 1500, Ecn::Ect0));
            h.offer_pkt(Packet::new(1, 2, 1500, Ecn::Ect1));
            at(&mut h, Time::from_millis(2));
            let mut out: Vec<(u64, Ecn)> = std::iter::from_fn(|| h.dequeue())
                .map(|p| (p.id, p.ecn))
                .collect();
            out.sort_unstable();
            h.check_accounting();
            (out, h.marks(MarkReason::CeThreshold))
        };
        assert_eq!(
            run(Some(CeSelector::ECT1)),
            (vec![(0, Ecn::Ect0), (1, Ecn::Ce)], 1)
        );
        assert_eq!(run(None), (vec![(0, Ecn::Ce), (1, Ecn::Ce)], 2));
    }

    #[test]
    fn dequeued_events_carry_the_flow() {
        let mut h = fq(FqCodelConfig::default());
        offer(&mut h, 0, 7, 1000);
        at(&mut h, Time::from_millis(3));
        h.dequeue();
        assert!(h.tracer.0.iter().any(|(_, e)| matches!(
            e,
            TraceEvent::Dequeued {
                queue: 0,
                subqueue: 0,
                pkt: Packet { flow: 7, len: 1000, .. },
                sojourn,
            } if *sojourn == Dur::from_millis(3)
        )));
        // Its admission was traced too, with the same packet.
        assert!(h.tracer.0.iter().any(|(t, e)| *t == Time::ZERO
            && matches!(
                e,
                TraceEvent::Enqueued {
                    pkt: Packet { flow: 7, .. },
                    ..
                }
            )));
    }

    #[test]
    fn xstats_names_are_fixed() {
        let mut h = fq(FqCodelConfig::default());
        offer(&mut h, 0, 1, 1500);
        offer(&mut h, 1, 2, 1500);
        let x: Vec<_> = h.q.xstats();
        let names: Vec<_> = x.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "maxpacket",
                "drop_overlimit",
                "new_flow_count",
                "ecn_mark",
                "ce_mark",
                "memory_usage",
                "drop_overmemory",
                "new_flows_len",
                "old_flows_len",
                "dropping_flows"
            ]
        );
        let get = |k: &str| x.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!(get("new_flows_len"), 2.0);
        assert_eq!(get("memory_usage"), 3000.0);
    }
}
