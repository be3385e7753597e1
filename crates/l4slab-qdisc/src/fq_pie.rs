//! `fq_pie`: Flow Queue PIE, as Linux `net/sched/sch_fq_pie.c` runs it — the
//! RFC 8290 flow-queue scheduler with one RFC 8033 PIE per flow queue.
//!
//! Packets are hashed into `flows` buckets and served by the deficit round
//! robin of [`crate::fq`] (new flows before old, quantum `quantum` bytes).
//! Each bucket has its own [`PieVars`] (drop probability, delay estimate,
//! burst allowance, derandomization accumulator), driven by the functions of
//! [`crate::pie`] with one shared [`PieParams`]:
//!
//! * at enqueue, `pie_drop_early` on the arrival's bucket decides; an
//!   ECN-capable packet is CE-marked instead of dropped while that bucket's
//!   `p <= ecn_prob` (with `ecn`), as `fq_pie_qdisc_enqueue` does;
//! * at dequeue, `pie_process_dequeue` samples the bucket's delay (or its
//!   departure rate); Linux fq_pie never drops at dequeue;
//! * every `tupdate`, `pie_calculate_probability` runs on every bucket
//!   (`fq_pie_timer`), idle ones included.
//!
//! Limits are Linux's, which differ from `fq_codel`'s: an arrival that finds
//! `limit` packets queued is refused (no drop from the fattest flow), and
//! `memory_limit` is only counted (`overmemory`), never enforced.
//!
//! Lengths are Linux's frame lengths: the per-flow backlog PIE sees, the
//! "2 MTU" safeguard (`mtu` = `psched_mtu` = 1514), byte mode and the
//! departure rate use [`qdisc_pkt_len`] (IP length + 14 B), as do DRR
//! deficits. (`pie` keeps IP lengths with a 1500 B MTU; see `pie.rs`.)
//!
//! Not implemented: external classifiers (`tc filter` on fq_pie) and
//! `skb->priority` naming a bucket; Linux's batching of the timer loop over
//! more than 2048 flows into consecutive jiffies (here one timer call updates
//! every flow).
//!
//! Deviations from Linux (see `docs/models/fq_pie.md`):
//! * The PIE deviations of [`crate::pie`] apply per flow (f64 probability,
//!   burst allowance spent per `tupdate`, RFC decay, `qdelay_old` in the
//!   enqueue safeguard, first update after `tupdate` rather than 500 ms).
//! * `memory_usage` counts `Packet::len`; Linux counts `skb->truesize`.
//! * Flows are hashed from [`l4slab_core::FlowId`] (see [`crate::fq`]).

use serde::{Deserialize, Serialize};

use crate::codel::{qdisc_pkt_len, ETH_PSCHED_MTU};
use crate::fq::{qdisc_by_flow_queues, Admit, FlowAqm, FlowQueue, FlowQueues, FqParams, Overflow};
use crate::pie::{
    next_update, pie_calculate_probability, pie_drop_early, pie_process_dequeue, PieParams,
    PieStats, PieVars,
};
// The declarations fq_pie shares with pie and fq_codel word for word.
pub use crate::fq_codel::HASH_SEED;
pub use crate::pie::{BYTEMODE, DQ_RATE_ESTIMATOR, MAX_BURST, TARGET, TUPDATE};
use crate::registry::QdiscKind;
use crate::{Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{DropReason, Dur, MarkReason, Packet, Time};

/// Largest `flows` Linux accepts (`fq_pie_change`: "Number of flows must range in [1..65536]").
pub const MAX_FLOWS: u32 = 65536;
/// Largest `quantum` Linux accepts (`fq_pie_q_range`: 1..=1 << 20).
pub const MAX_QUANTUM: u32 = 1 << 20;

/// tc `limit`.
pub const LIMIT: Param = Param {
    source: "Linux `fq_pie_init`: `sch->limit = 10 * 1024`; a scenario's default is the direction's `buffer`",
    ..crate::fq_codel::LIMIT
};

/// tc `flows`.
pub const FLOWS: Param = Param {
    source: "Linux `fq_pie_init`; range `fq_pie_change`",
    ..crate::fq_codel::FLOWS
};

/// tc `alpha`, in Hz.
pub const ALPHA: Param = Param {
    source: "Linux `pie_params_init` `alpha = 2` (1/16 Hz)",
    ..crate::pie::ALPHA
};

/// tc `beta`, in Hz.
pub const BETA: Param = Param {
    source: "Linux `pie_params_init` `beta = 20` (1/16 Hz)",
    ..crate::pie::BETA
};

/// tc `quantum`.
pub const QUANTUM: Param = Param::new(
    "quantum",
    Kind::Bytes {
        min: 1,
        max: MAX_QUANTUM as u64,
    },
    ParamValue::Int(ETH_PSCHED_MTU as i64),
    "Linux `fq_pie_init`: `psched_mtu(dev)` = 1514; range `fq_pie_q_range`",
    "DRR quantum: bytes a bucket may send per round",
);

/// tc `memory_limit`.
pub const MEMORY_LIMIT: Param = Param::new(
    "memory_limit",
    Kind::bytes_up_to_u32(1),
    ParamValue::Int(32 << 20),
    "Linux `fq_pie_init`: `SZ_32M`; a u32 in netlink",
    "bytes over all buckets (counted in `overmemory`, not enforced, as Linux)",
);

/// tc `ecn_prob`.
pub const ECN_PROB: Param = Param::new(
    "ecn_prob",
    Kind::Percent { min: 0, max: 100 },
    ParamValue::Int(10),
    "Linux `fq_pie_init`: `ecn_prob = 10`",
    "CE-mark instead of dropping while the bucket's drop probability is at most this",
);

/// tc `ecn` / `noecn`.
pub const ECN: Param = Param {
    source: "Linux `pie_params_init` (\"ECN capability is off by default\")",
    doc: "CE-mark ECN-capable packets instead of dropping them while p ≤ `ecn_prob`",
    ..crate::pie::ECN
};

/// The parameters a scenario can set (`qdisc = { kind = "fq_pie", ... }`).
pub const PARAMS: &[Param] = &[
    LIMIT,
    FLOWS,
    TARGET,
    TUPDATE,
    ALPHA,
    BETA,
    QUANTUM,
    MEMORY_LIMIT,
    ECN_PROB,
    ECN,
    BYTEMODE,
    DQ_RATE_ESTIMATOR,
    MAX_BURST,
    HASH_SEED,
];

/// Configuration of the `fq_pie` qdisc: `tc qdisc add ... fq_pie [limit
/// PACKETS] [flows NUMBER] [target TIME] [tupdate TIME] [alpha NUMBER] [beta
/// NUMBER] [quantum BYTES] [memory_limit BYTES] [ecn_prob PERCENTAGE]
/// [[no]ecn] [[no]bytemode] [dq_rate_estimator]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FqPieConfig {
    /// Packets over all buckets. Linux `fq_pie_init`: `sch->limit = 10 * 1024`.
    pub limit: u32,
    /// Buckets. Linux `fq_pie_init`: `flows_cnt = 1024`.
    pub flows: u32,
    /// `QDELAY_REF`. `pie_params_init`: 15 ms (RFC 8033 §4).
    pub target: Dur,
    /// `T_UPDATE`. `pie_params_init`: 15 ms (RFC 8033 §4).
    pub tupdate: Dur,
    /// Integral gain in Hz. `pie_params_init`: alpha 2 (units of 1/16 Hz) = 0.125.
    pub alpha: f64,
    /// Proportional gain in Hz. `pie_params_init`: beta 20 (1/16 Hz) = 1.25.
    pub beta: f64,
    /// DRR quantum, bytes. Linux `fq_pie_init`: `psched_mtu(dev)` = 1514.
    pub quantum: u32,
    /// Bytes over all buckets (counted, not enforced). Linux `fq_pie_init`: `SZ_32M`.
    pub memory_limit: u64,
    /// Mark instead of drop while the flow's `p <= ecn_prob` percent.
    /// Linux `fq_pie_init`: `ecn_prob = 10`.
    pub ecn_prob: u32,
    /// CE-mark ECN-capable packets (tc `ecn`). `pie_params_init`: off.
    pub ecn: bool,
    /// Scale `p` by packet size / MTU (RFC 8033 §5.2). `pie_params_init`: off.
    pub bytemode: bool,
    /// Departure-rate delay estimate (RFC 8033 §4.3). `pie_params_init`: off.
    pub dq_rate_estimator: bool,
    /// `MAX_BURST` (RFC 8033 §4.4; Linux `pie_vars_init` hard-codes 150 ms).
    pub max_burst: Dur,
    /// `psched_mtu(dev)` = 1514: the "2 MTU" safeguard and byte-mode unit. Not a tc knob.
    pub mtu: u32,
    /// Seed of the flow hash (Linux: a random per-boot seed). l4slab extension.
    pub hash_seed: u32,
}

l4slab_core::param_config!(FqPieConfig {
    limit = LIMIT,
    flows = FLOWS,
    target = TARGET,
    tupdate = TUPDATE,
    alpha = ALPHA,
    beta = BETA,
    quantum = QUANTUM,
    memory_limit = MEMORY_LIMIT,
    ecn_prob = ECN_PROB,
    ecn = ECN,
    bytemode = BYTEMODE,
    dq_rate_estimator = DQ_RATE_ESTIMATOR,
    max_burst = MAX_BURST,
    hash_seed = HASH_SEED,
} + {
    mtu: ETH_PSCHED_MTU, // psched_mtu(qdisc_dev(sch))
});

impl QdiscKind for FqPieConfig {
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(FqPie::new(self.clone()))
    }
}

impl FqPieConfig {
    /// The PIE parameters shared by all flows (Linux `q->p_params`).
    pub fn params(&self) -> PieParams {
        PieParams {
            target: self.target,
            tupdate: self.tupdate,
            alpha: self.alpha,
            beta: self.beta,
            bytemode: self.bytemode,
            dq_rate_estimator: self.dq_rate_estimator,
            max_burst: self.max_burst,
            mtu: self.mtu,
        }
    }
}

/// PIE as the per-flow AQM of [`FlowQueues`]: parameters, the ECN policy and
/// the counters shared by all buckets, one [`PieVars`] per bucket. PIE acts
/// at enqueue; at dequeue it only measures.
#[derive(Debug)]
pub struct PieAqm {
    params: PieParams,
    ecn: bool,
    /// `ecn_prob` as a probability.
    ecn_threshold: f64,
    stats: PieStats,
}

impl FlowAqm for PieAqm {
    type Vars = PieVars;

    /// `fq_pie_init`: `pie_vars_init(&flow->vars)` for every flow.
    fn new_vars(&self) -> PieVars {
        PieVars::new(&self.params)
    }

    /// `fq_pie_qdisc_enqueue` after the limit check.
    fn on_enqueue(
        &mut self,
        now: Time,
        vars: &mut PieVars,
        flow_backlog: u64,
        pkt: &mut Packet,
        _qstats: &mut QdiscStats,
        ctx: &mut QdiscCtx<'_>,
    ) -> Admit {
        // `pie_drop_early(sch, &q->p_params, &sel_flow->vars, sel_flow->backlog, skb->len)`
        let len = u32::try_from(qdisc_pkt_len(pkt.len)).unwrap_or(u32::MAX);
        if pie_drop_early(&self.params, vars, flow_backlog, len, ctx.rng) {
            // "If packet is ecn capable, mark it if drop probability is lower
            // than the parameter ecn_prob, else drop it":
            // `q->p_params.ecn && sel_flow->vars.prob <= (MAX_PROB / 100) * q->ecn_prob && INET_ECN_set_ce(skb)`
            let marked = self.ecn
                && vars.prob() <= self.ecn_threshold
                && ctx.try_mark(now, pkt, MarkReason::Aqm);
            if !marked {
                return Admit::Drop(DropReason::AqmDrop);
            }
            self.stats.ecn_mark += 1;
        }
        // `q->stats.packets_in++`
        self.stats.packets_in += 1;
        Admit::Enqueue
    }

    /// `fq_pie_qdisc_enqueue` `out:`: `q->stats.dropped++; sel_flow->vars.accu_prob = 0;`
    fn on_refused(&mut self, vars: &mut PieVars) {
        self.stats.dropped += 1;
        vars.reset_accu();
    }

    /// `fq_pie_qdisc_dequeue`: `dequeue_head(flow)`, then
    /// `pie_process_dequeue(skb, &q->p_params, &flow->vars, flow->backlog)`.
    fn dequeue(
        &mut self,
        now: Time,
        vars: &mut PieVars,
        queue: &mut FlowQueue<'_>,
        qstats: &mut QdiscStats,
        _ctx: &mut QdiscCtx<'_>,
    ) -> Option<Packet> {
        let pkt = queue.pop()?;
        qstats.dequeued += 1;
        pie_process_dequeue(
            vars,
            now,
            qdisc_pkt_len(pkt.len),
            pkt.enqueued_at,
            queue.flow_backlog(),
        );
        Some(pkt)
    }
}

/// The `fq_pie` qdisc.
#[derive(Debug)]
pub struct FqPie {
    cfg: FqPieConfig,
    sched: FlowQueues<PieAqm>,
    next_update: Time,
}

impl FqPie {
    /// # Panics
    /// On parameters outside Linux's accepted ranges (rejected earlier, with
    /// a key path, by the scenario layer; reaching this is a bug).
    pub fn new(cfg: FqPieConfig) -> Self {
        assert!(cfg.limit > 0, "fq_pie limit must be positive");
        assert!(
            (1..=MAX_FLOWS).contains(&cfg.flows),
            "fq_pie flows must be in 1..={MAX_FLOWS}"
        );
        assert!(
            (1..=MAX_QUANTUM).contains(&cfg.quantum),
            "fq_pie quantum must be in 1..={MAX_QUANTUM}"
        );
        assert!(cfg.memory_limit > 0, "fq_pie memory_limit must be positive");
        let params = cfg.params();
        params.assert_valid("fq_pie");
        let sched = FlowQueues::new(
            FqParams {
                limit: cfg.limit,
                flows: cfg.flows,
                quantum: cfg.quantum,
                memory_limit: cfg.memory_limit,
                overflow: Overflow::TailDrop,
                hash_seed: cfg.hash_seed,
            },
            PieAqm {
                params,
                ecn: cfg.ecn,
                ecn_threshold: f64::from(cfg.ecn_prob) / 100.0,
                stats: PieStats::default(),
            },
        );
        FqPie {
            next_update: Time::ZERO + cfg.tupdate,
            cfg,
            sched,
        }
    }

    pub fn config(&self) -> &FqPieConfig {
        &self.cfg
    }
    /// The flow-queue scheduler: a flow's bucket ([`FlowQueues::bucket_of`]),
    /// each bucket's PIE variables ([`FlowQueues::vars`]), deficit, bytes
    /// and list, and the scheduler's counters ([`FlowQueues::fq_stats`]).
    pub fn flows(&self) -> &FlowQueues<PieAqm> {
        &self.sched
    }
    pub fn pie_stats(&self) -> &PieStats {
        &self.sched.aqm().stats
    }
}

impl Qdisc for FqPie {
    fn kind(&self) -> &'static str {
        "fq_pie"
    }

    qdisc_by_flow_queues!();

    fn next_timer(&self) -> Option<Time> {
        Some(self.next_update)
    }

    /// Linux `fq_pie_timer`: `pie_calculate_probability(&q->p_params,
    /// &q->flows[i].vars, q->flows[i].backlog)` for every flow, every `tupdate`.
    fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<'_>) {
        if now < self.next_update {
            return;
        }
        self.sched.for_each_flow(|aqm, vars, backlog| {
            pie_calculate_probability(&aqm.params, vars, backlog);
        });
        self.next_update = next_update(self.next_update, now, self.cfg.tupdate);
    }

    /// The fields of `tc -s qdisc show` for fq_pie (`fq_pie_dump_stats`),
    /// plus `max_prob`: the largest drop probability among scheduled flows.
    fn xstats(&self) -> Vec<(&'static str, f64)> {
        let ps = self.pie_stats();
        let fs = self.sched.fq_stats();
        let max_prob = self
            .sched
            .scheduled_vars()
            .map(PieVars::prob)
            .fold(0.0, f64::max);
        vec![
            ("packets_in", ps.packets_in as f64),
            ("overlimit", fs.drop_overlimit as f64),
            ("overmemory", fs.drop_overmemory as f64),
            ("dropped", ps.dropped as f64),
            ("ecn_mark", ps.ecn_mark as f64),
            ("new_flow_count", fs.new_flow_count as f64),
            ("memory_usage", self.sched.memory_usage() as f64),
            ("new_flows_len", self.sched.new_flows_len() as f64),
            ("old_flows_len", self.sched.old_flows_len() as f64),
            ("max_prob", max_prob),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Timelines for each fq_pie mechanic. Flow *f* is FlowId *f*; with the
    //! default hash seed, flows 0..16 have distinct buckets.
    use super::*;
    use crate::fq::FlowList;
    use crate::pi::PiGains;
    use crate::pie::next_prob;
    use crate::testing::Harness;
    use l4slab_core::{Ecn, FlowId};

    fn ms(n: u64) -> Dur {
        Dur::from_millis(n)
    }

    fn fq(cfg: FqPieConfig) -> Harness<FqPie> {
        Harness::new(FqPie::new(cfg))
    }

    fn offer(h: &mut Harness<FqPie>, id: u64, flow: FlowId, len: u32, ecn: Ecn) {
        h.offer_pkt(Packet::new(id, flow, len, ecn));
    }

    /// Flow `flow` holding 4 full-size packets (4 x 1514 B >= 2 MTU), past
    /// its burst allowance, with the given `p` and a full accumulator (the
    /// next early-drop decision is a hit).
    fn congested(cfg: FqPieConfig, flow: FlowId, prob: f64) -> Harness<FqPie> {
        let mut h = fq(cfg);
        for i in 0..4 {
            offer(&mut h, 1000 + i, flow, 1500, Ecn::NotEct);
        }
        let b = h.q.flows().bucket_of(flow);
        h.q.sched
            .vars_mut(b)
            .set_for_test(prob, ms(20), Dur::ZERO, 8.5);
        h
    }

    fn set_accu(h: &mut Harness<FqPie>, flow: FlowId, prob: f64, accu: f64) {
        let b = h.q.flows().bucket_of(flow);
        h.q.sched
            .vars_mut(b)
            .set_for_test(prob, ms(20), Dur::ZERO, accu);
    }

    #[test]
    fn defaults_are_linux() {
        let c = FqPieConfig::default();
        assert_eq!(
            (c.limit, c.flows, c.quantum, c.mtu),
            (10240, 1024, 1514, 1514)
        );
        assert_eq!(
            (c.target, c.tupdate, c.max_burst),
            (ms(15), ms(15), ms(150))
        );
        assert_eq!((c.alpha, c.beta), (0.125, 1.25));
        assert_eq!((c.memory_limit, c.ecn_prob), (32 << 20, 10));
        assert!(!c.ecn && !c.bytemode && !c.dq_rate_estimator);
    }

    /// `fq_pie_timer` updates each flow's PIE from that flow's own delay:
    /// the exact RFC 8033 §4.2 arithmetic for the busy flow, nothing for the
    /// idle one.
    #[test]
    fn each_flow_has_its_own_probability() {
        let mut h = fq(FqPieConfig::default());
        for i in 0..20 {
            offer(&mut h, i, 1, 1500, Ecn::NotEct);
        }
        offer(&mut h, 100, 2, 100, Ecn::NotEct);
        h.advance(ms(10));
        // New flows first: flow 1's head (waited 10 ms), then flow 2's only packet.
        assert_eq!(h.dequeue().map(|p| p.id), Some(0));
        assert_eq!(h.dequeue().map(|p| p.id), Some(100));
        let (b1, b2) = (h.q.flows().bucket_of(1), h.q.flows().bucket_of(2));
        assert_eq!(h.q.flows().vars(b1).qdelay(), ms(10));
        assert_eq!(h.q.flows().vars(b2).qdelay(), Dur::ZERO, "emptied: 0");
        h.advance(ms(5)); // t = 15 ms: first update
        let g = PiGains {
            alpha: 0.125,
            beta: 1.25,
            target: ms(15),
        };
        let want = next_prob(&g, 0.0, ms(10), Dur::ZERO, false);
        assert_eq!(want, (0.125 * -0.005 + 1.25 * 0.010) / 2048.0);
        assert_eq!(h.q.flows().vars(b1).prob(), want);
        assert_eq!(h.q.flows().vars(b1).burst_allowance(), ms(135));
        // The idle flow: p stays 0 and its burst allowance is restored.
        assert_eq!(h.q.flows().vars(b2).prob(), 0.0);
        assert_eq!(h.q.flows().vars(b2).burst_allowance(), ms(150));
        assert_eq!(h.q.next_timer(), Some(Time::from_millis(30)));
        h.check_accounting();
    }

    /// A fat flow (twice what the link drains) and a thin one (one packet per
    /// 20 ms) through one fq_pie: the fat flow's PIE holds its own queue near
    /// the target by dropping; the thin flow is never dropped, keeps p = 0
    /// and waits at most until the next departure.
    #[test]
    fn a_thin_flow_keeps_low_delay_beside_a_fat_one() {
        let mut h = fq(FqPieConfig::default());
        let (b1, b2) = (h.q.flows().bucket_of(1), h.q.flows().bucket_of(2));
        let mut id = 0;
        let mut fat_sojourn = Vec::new();
        let mut thin_max = Dur::ZERO;
        let mut fat_max_p: f64 = 0.0;
        // Every 500 us: a fat arrival; every 1 ms: one departure (12 Mbit/s).
        for step in 0..8000u64 {
            offer(&mut h, id, 1, 1500, Ecn::NotEct);
            id += 1;
            if step % 40 == 0 {
                offer(&mut h, id, 2, 200, Ecn::NotEct);
                id += 1;
            }
            if step % 2 == 0 {
                if let Some(p) = h.dequeue() {
                    let s = h.now.saturating_since(p.enqueued_at);
                    match p.flow {
                        1 if h.now > Time::from_secs(2) => fat_sojourn.push(s.as_millis_f64()),
                        2 => thin_max = thin_max.max(s),
                        _ => {}
                    }
                }
            }
            h.advance(Dur::from_micros(500));
            fat_max_p = fat_max_p.max(h.q.flows().vars(b1).prob());
            assert_eq!(
                h.q.flows().vars(b2).prob(),
                0.0,
                "thin flow's p at {:?}",
                h.now
            );
        }
        let mean = fat_sojourn.iter().sum::<f64>() / fat_sojourn.len() as f64;
        // Seen: fat mean 18.2 ms after 2 s with half its arrivals dropped
        // (p peaked at 1 while the initial burst drained); thin flow at most
        // 1 ms, the time to the next departure.
        assert!(
            (12.0..22.0).contains(&mean),
            "fat flow mean sojourn {mean} ms"
        );
        assert!(fat_max_p > 0.3, "fat flow p reached {fat_max_p}");
        assert!(thin_max <= ms(1), "thin flow waited {thin_max:?}");
        assert!(!h.dropped.is_empty());
        assert!(h
            .dropped
            .iter()
            .all(|(p, r)| p.flow == 1 && *r == DropReason::AqmDrop));
        assert_eq!(h.sent.iter().filter(|p| p.flow == 2).count(), 200);
        h.check_accounting();
    }

    /// `fq_pie_qdisc_enqueue`: with `ecn`, an early-drop decision marks an
    /// ECN-capable packet while the flow's `p <= ecn_prob` and drops it above.
    #[test]
    fn ecn_marks_up_to_ecn_prob_and_drops_above() {
        let cfg = FqPieConfig {
            ecn: true,
            ..FqPieConfig::default()
        };
        // p = 10 % = ecn_prob: marked and queued.
        let mut h = congested(cfg.clone(), 1, 0.10);
        offer(&mut h, 1, 1, 1500, Ecn::Ect0);
        assert!(h.dropped.is_empty());
        assert_eq!(h.marks(MarkReason::Aqm), 1);
        assert_eq!(h.q.pie_stats().ecn_mark, 1);
        // Not-ECT at the same p: dropped.
        set_accu(&mut h, 1, 0.10, 8.5);
        offer(&mut h, 2, 1, 1500, Ecn::NotEct);
        assert_eq!(h.dropped_ids(), [2]);
        // Above ecn_prob: ECN-capable packets are dropped too.
        set_accu(&mut h, 1, 0.11, 8.5);
        offer(&mut h, 3, 1, 1500, Ecn::Ect1);
        assert_eq!(h.dropped_ids(), [2, 3]);
        assert!(h.dropped.iter().all(|(_, r)| *r == DropReason::AqmDrop));
        assert_eq!(h.q.pie_stats().dropped, 2);
        // ecn_prob is a knob: 50 % marks at p = 0.3.
        let mut h = congested(
            FqPieConfig {
                ecn_prob: 50,
                ..cfg
            },
            1,
            0.3,
        );
        offer(&mut h, 4, 1, 1500, Ecn::Ect0);
        assert!(h.dropped.is_empty());
        // Without ecn: dropped at any p.
        let mut h = congested(FqPieConfig::default(), 1, 0.01);
        offer(&mut h, 5, 1, 1500, Ecn::Ect0);
        assert_eq!(h.dropped_ids(), [5]);
        assert_eq!(h.total_marks(), 0);
        h.check_accounting();
    }

    /// The decision is per flow: the same arrival pattern on another flow,
    /// whose PIE is calm, is admitted.
    #[test]
    fn early_drop_uses_the_arrivals_flow_state() {
        let mut h = congested(FqPieConfig::default(), 1, 0.5);
        for i in 0..4 {
            offer(&mut h, 2000 + i, 2, 1500, Ecn::NotEct);
        }
        let b2 = h.q.flows().bucket_of(2);
        assert!(h.dropped.is_empty(), "flow 2 has burst allowance and p = 0");
        assert_eq!(h.q.flows().vars(b2).accu_prob(), 0.0);
        offer(&mut h, 7, 1, 1500, Ecn::NotEct);
        assert_eq!(h.dropped_ids(), [7]);
        h.check_accounting();
    }

    /// Linux `fq_pie_qdisc_enqueue`: at `limit` the *arrival* is refused
    /// (fq_codel would drop from the fattest flow instead), and the arrival's
    /// flow loses its derandomization accumulator.
    #[test]
    fn the_arrival_is_refused_at_the_limit() {
        let mut h = fq(FqPieConfig {
            limit: 3,
            ..FqPieConfig::default()
        });
        for i in 0..3 {
            offer(&mut h, i, 1, 1500, Ecn::NotEct);
        }
        set_accu(&mut h, 2, 0.0, 0.5);
        offer(&mut h, 3, 2, 100, Ecn::NotEct);
        assert_eq!(h.dropped_ids(), [3]);
        assert_eq!(h.dropped[0].1, DropReason::Overlimit);
        assert_eq!(h.q.flows().vars(h.q.flows().bucket_of(2)).accu_prob(), 0.0);
        assert_eq!(h.q.flows().fq_stats().drop_overlimit, 1);
        assert_eq!(h.q.pie_stats().dropped, 1);
        assert_eq!(h.q.backlog().packets, 3);
        assert_eq!(h.drain_ids(), [0, 1, 2]);
        h.check_accounting();
    }

    /// Linux counts arrivals while `memory_usage > memory_limit + size`
    /// (`overmemory`) but admits them.
    #[test]
    fn memory_limit_is_counted_not_enforced() {
        let mut h = fq(FqPieConfig {
            memory_limit: 3000,
            ..FqPieConfig::default()
        });
        for i in 0..5 {
            offer(&mut h, i, 1 + (i % 2) as FlowId, 1500, Ecn::NotEct);
        }
        // Usage before each arrival: 0, 1500, 3000, 4500 (not > 4500), 6000 (> 4500).
        assert!(h.dropped.is_empty());
        assert_eq!(h.q.flows().fq_stats().drop_overmemory, 1);
        assert_eq!(h.q.backlog().bytes, 7500);
        h.check_accounting();
    }

    /// The scheduler is fq_codel's: a new flow's packet overtakes a
    /// backlogged flow, DRR charges frame bytes.
    #[test]
    fn new_flows_go_first_and_drr_charges_frames() {
        let mut h = fq(FqPieConfig::default());
        for i in 0..10 {
            offer(&mut h, i, 1, 1500, Ecn::NotEct);
        }
        assert_eq!(h.dequeue().map(|p| p.id), Some(0));
        let b1 = h.q.flows().bucket_of(1);
        assert_eq!(h.q.flows().deficit(b1), 0, "1514 - (1500 + 14)");
        assert_eq!(h.dequeue().map(|p| p.id), Some(1));
        assert_eq!(h.q.flows().list(b1), Some(FlowList::Old));
        offer(&mut h, 50, 3, 300, Ecn::NotEct);
        assert_eq!(h.dequeue().map(|p| p.id), Some(50));
        assert_eq!(h.q.flows().fq_stats().new_flow_count, 2);
        h.check_accounting();
    }

    #[test]
    fn xstats_names_are_fixed() {
        let mut h = congested(FqPieConfig::default(), 1, 0.25);
        let x = h.q.xstats();
        let names: Vec<_> = x.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "packets_in",
                "overlimit",
                "overmemory",
                "dropped",
                "ecn_mark",
                "new_flow_count",
                "memory_usage",
                "new_flows_len",
                "old_flows_len",
                "max_prob"
            ]
        );
        let get = |k: &str| x.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!(get("packets_in"), 4.0);
        assert_eq!(get("memory_usage"), 6000.0);
        assert_eq!(get("max_prob"), 0.25);
        assert_eq!(get("new_flows_len"), 1.0);
        h.dequeue();
        h.check_accounting();
    }
}
