//! Property tests for the accounting identities of DESIGN.md §3, for every
//! discipline: random sequences of enqueue / dequeue / advance through
//! [`Harness`], with [`Harness::check_accounting`] and the checks below after
//! every call.
//!
//! To cover a new discipline, add one line to [`CASES`].

use l4slab_core::{Dur, Ecn, Packet, TraceEvent};
use l4slab_qdisc::testing::Harness;
use l4slab_qdisc::{Backlog, BufferLimit, Fifo, FifoConfig, Qdisc, QdiscCtx, QdiscStats};
use proptest::prelude::*;

/// Whether a discipline must preserve arrival order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// A single FIFO queue: packets leave in arrival order.
    Fifo,
    /// Any order (schedulers such as FQ-CoDel or DualPI2).
    #[allow(dead_code)]
    Any,
}

/// One configured discipline under test: name, constructor, order guarantee.
type Case = (&'static str, fn() -> Box<dyn Qdisc>, Order);

/// `pfifo`/`bfifo` (tail drop).
fn tail(limit: BufferLimit) -> Box<dyn Qdisc> {
    Box::new(Fifo::new(FifoConfig {
        limit,
        head_drop: false,
    }))
}

/// `pfifo_head_drop` (and its byte-limited variant).
fn head(limit: BufferLimit) -> Box<dyn Qdisc> {
    Box::new(Fifo::new(FifoConfig {
        limit,
        head_drop: true,
    }))
}

/// `codel`; the short target/interval cases reach the dropping state often
/// within a random sequence.
fn codel(cfg: CodelConfig) -> Box<dyn Qdisc> {
    Box::new(Codel::new(cfg))
}

/// `fq_codel`; 2 buckets make flows collide, small limits make overflow drops.
fn fq_codel(cfg: FqCodelConfig) -> Box<dyn Qdisc> {
    Box::new(FqCodel::new(cfg))
}

const fn ms(n: u64) -> Dur {
    Dur::from_millis(n)
}

/// `pie` with a 1 ms target, hot gains and no burst allowance, so that
/// random sequences reach the early-drop paths; 16 packets hold more than
/// one 16 KB departure-rate sample.
fn pie(ecn: bool, bytemode: bool, dq_rate_estimator: bool) -> Box<dyn Qdisc> {
    Box::new(Pie::new(PieConfig {
        limit: 16,
        target: ms(1),
        tupdate: ms(1),
        alpha: 20.0,
        beta: 200.0,
        ecn,
        bytemode,
        dq_rate_estimator,
        max_burst: Dur::ZERO,
        ..PieConfig::default()
    }))
}

/// `pie` with ECN and milder gains: `p` spends more time below the 10 %
/// marking threshold, so some sequences mark instead of dropping.
fn pie_ecn_mild() -> Box<dyn Qdisc> {
    Box::new(Pie::new(PieConfig {
        limit: 16,
        target: ms(5),
        alpha: 2.0,
        beta: 20.0,
        ecn: true,
        max_burst: Dur::ZERO,
        ..PieConfig::default()
    }))
}

/// `fq_pie` with 2 buckets (the 4 random flows collide), a small limit, a
/// 1 ms target, hot gains and no burst allowance, so random sequences reach
/// the early drops and marks of each flow's PIE and the tail drop at `limit`.
fn fq_pie(ecn: bool, bytemode: bool, dq_rate_estimator: bool) -> Box<dyn Qdisc> {
    Box::new(FqPie::new(FqPieConfig {
        limit: 12,
        flows: 2,
        quantum: 300,
        memory_limit: 6000,
        target: ms(1),
        tupdate: ms(1),
        alpha: 20.0,
        beta: 200.0,
        ecn,
        ecn_prob: 50,
        bytemode,
        dq_rate_estimator,
        max_burst: Dur::ZERO,
        ..FqPieConfig::default()
    }))
}

/// `dualpi2` with a 1 ms target and hot gains (p' reaches overload within a
/// sequence), small limits, flow 2 filtered into L and flow 3 into LLLL.
fn hot_dualpi2() -> DualPi2Config {
    DualPi2Config {
        limit: 8,
        target: ms(1),
        tupdate: ms(1),
        alpha: 20.0,
        beta: 200.0,
        l_flows: vec![2],
        llll_flows: vec![3],
        ..DualPi2Config::default()
    }
}

/// `red` with thresholds of a few packets (min 2000 B, max 6000 B) over a
/// byte limit of `limit` B.
fn red(limit: u64, ecn: bool, harddrop: bool, adaptive: bool) -> Box<dyn Qdisc> {
    Box::new(Red::new(RedConfig {
        limit,
        min: Some(2000),
        max: Some(6000),
        probability: 0.5,
        ecn,
        harddrop,
        adaptive,
        ..RedConfig::default()
    }))
}

fn dualpi2(cfg: DualPi2Config) -> Box<dyn Qdisc> {
    Box::new(DualPi2::new(cfg))
}

use l4slab_qdisc::dualpi2::{EcnMask, LAqm, PiInput, Scheduler, StepThresh};
use l4slab_qdisc::red::{Red, RedConfig};
use l4slab_qdisc::{CeSelector, Codel, CodelConfig, FqCodel, FqCodelConfig};
use l4slab_qdisc::{DualPi2, DualPi2Config, FqPie, FqPieConfig, Pie, PieConfig};
use BufferLimit::{Bytes, Packets};

/// Small limits so that drops are frequent; `Bytes(1000)` is smaller than the
/// largest packet (1500 B), which must be refused even by head drop.
const CASES: &[Case] = &[
    ("pfifo limit 1", || tail(Packets(1)), Order::Fifo),
    (
        "red ecn, 9000 B",
        || red(9000, true, false, false),
        Order::Fifo,
    ),
    (
        "red harddrop adaptive, 4000 B",
        || red(4000, true, true, true),
        Order::Fifo,
    ),
    (
        "red no ecn, 1 MB",
        || red(1_000_000, false, false, false),
        Order::Fifo,
    ),
    ("pfifo limit 5", || tail(Packets(5)), Order::Fifo),
    ("bfifo 4000 B", || tail(Bytes(4000)), Order::Fifo),
    ("bfifo 1000 B", || tail(Bytes(1000)), Order::Fifo),
    ("pfifo_head_drop 1", || head(Packets(1)), Order::Fifo),
    ("pfifo_head_drop 5", || head(Packets(5)), Order::Fifo),
    ("head drop 4000 B", || head(Bytes(4000)), Order::Fifo),
    ("head drop 1000 B", || head(Bytes(1000)), Order::Fifo),
    (
        "codel limit 6",
        || {
            codel(CodelConfig {
                limit: 6,
                ..Default::default()
            })
        },
        Order::Fifo,
    ),
    (
        "codel ecn, ce_threshold, short",
        || {
            codel(CodelConfig {
                limit: 6,
                ecn: true,
                ce_threshold: Some(ms(1)),
                target: ms(1),
                interval: ms(5),
                ..Default::default()
            })
        },
        Order::Fifo,
    ),
    (
        "fq_codel 2 buckets, small, ect1 ce_threshold, short",
        || {
            fq_codel(FqCodelConfig {
                flows: 2,
                limit: 6,
                drop_batch: 2,
                memory_limit: 6000,
                quantum: 256,
                ce_threshold: Some(ms(1)),
                ce_threshold_selector: Some(CeSelector::ECT1),
                target: ms(1),
                interval: ms(5),
                ..Default::default()
            })
        },
        Order::Any,
    ),
    (
        "fq_codel limit 8 noecn",
        || {
            fq_codel(FqCodelConfig {
                limit: 8,
                ecn: false,
                ..Default::default()
            })
        },
        Order::Any,
    ),
    ("pie no ecn", || pie(false, false, false), Order::Fifo),
    ("pie ecn", || pie(true, false, false), Order::Fifo),
    ("pie ecn, mild", pie_ecn_mild, Order::Fifo),
    ("pie ecn bytemode", || pie(true, true, false), Order::Fifo),
    (
        "pie dq_rate_estimator",
        || pie(false, false, true),
        Order::Fifo,
    ),
    (
        "fq_pie 2 buckets, hot, no ecn",
        || fq_pie(false, false, false),
        Order::Any,
    ),
    (
        "fq_pie 2 buckets, hot, ecn bytemode",
        || fq_pie(true, true, false),
        Order::Any,
    ),
    (
        "fq_pie 2 buckets, hot, ecn dq_rate_estimator",
        || fq_pie(true, false, true),
        Order::Any,
    ),
    (
        "fq_pie defaults, limit 8",
        || {
            Box::new(FqPie::new(FqPieConfig {
                limit: 8,
                ..FqPieConfig::default()
            }))
        },
        Order::Any,
    ),
    (
        "dualpi2 defaults, limit 8",
        || {
            dualpi2(DualPi2Config {
                limit: 8,
                ..DualPi2Config::default()
            })
        },
        Order::Any,
    ),
    (
        "dualpi2 hot, drop_dequeue",
        || dualpi2(hot_dualpi2()),
        Order::Any,
    ),
    (
        "dualpi2 hot, drop_enqueue",
        || {
            dualpi2(DualPi2Config {
                drop_enqueue: true,
                ..hot_dualpi2()
            })
        },
        Order::Any,
    ),
    (
        "dualpi2 hot, ts_fifo",
        || {
            dualpi2(DualPi2Config {
                scheduler: Scheduler::TsFifo { tshift: ms(5) },
                ..hot_dualpi2()
            })
        },
        Order::Any,
    ),
    (
        "dualpi2 hot, rfc ramp",
        || {
            dualpi2(DualPi2Config {
                l_aqm: LAqm::RFC_RAMP,
                ..hot_dualpi2()
            })
        },
        Order::Any,
    ),
    (
        "dualpi2 hot, overflow, step 2 pkt, min_qlen_step 1",
        || {
            dualpi2(DualPi2Config {
                drop_on_overload: false,
                l_aqm: LAqm::Step {
                    thresh: StepThresh::Packets(2),
                    min_qlen_step: 1,
                },
                ..hot_dualpi2()
            })
        },
        Order::Any,
    ),
    (
        "dualpi2 hot, any_ect, pi_input c, memlimit 4000 B, enqueue drop",
        || {
            dualpi2(DualPi2Config {
                ecn_mask: EcnMask::AnyEct,
                pi_input: PiInput::C,
                memory_limit: 4000,
                drop_enqueue: true,
                ..hot_dualpi2()
            })
        },
        Order::Any,
    ),
];

/// Lets [`Harness`] (generic over a sized `Q: Qdisc`) drive a boxed discipline.
#[derive(Debug)]
struct Dyn(Box<dyn Qdisc>);

impl Qdisc for Dyn {
    fn kind(&self) -> &'static str {
        self.0.kind()
    }
    fn enqueue(&mut self, now: l4slab_core::Time, pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.0.enqueue(now, pkt, ctx)
    }
    fn dequeue(&mut self, now: l4slab_core::Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        self.0.dequeue(now, ctx)
    }
    fn backlog(&self) -> Backlog {
        self.0.backlog()
    }
    fn stats(&self) -> &QdiscStats {
        self.0.stats()
    }
    fn next_timer(&self) -> Option<l4slab_core::Time> {
        self.0.next_timer()
    }
    fn on_timer(&mut self, now: l4slab_core::Time, ctx: &mut QdiscCtx<'_>) {
        self.0.on_timer(now, ctx)
    }
    fn xstats(&self) -> Vec<(&'static str, f64)> {
        self.0.xstats()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Offer { len: u32, ecn: u8, flow: u32 },
    Dequeue,
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (40u32..=1500, 0u8..4, 0u32..4).prop_map(|(len, ecn, flow)| Op::Offer { len, ecn, flow }),
        4 => Just(Op::Dequeue),
        2 => (0u64..50_000_000).prop_map(Op::Advance),
    ]
}

/// Checks beyond [`Harness::check_accounting`], after every call.
fn check_extra(name: &str, h: &Harness<Dyn>, offered_bytes: u64) {
    let s = h.q.stats();
    let b = h.q.backlog();
    // Bytes are conserved: offered = sent + dropped + queued.
    let sent_bytes: u64 = h.sent.iter().map(|p| u64::from(p.len)).sum();
    let dropped_bytes: u64 = h.dropped.iter().map(|(p, _)| u64::from(p.len)).sum();
    assert_eq!(s.sent_bytes, sent_bytes, "{}: sent_bytes", name);
    assert_eq!(
        offered_bytes,
        sent_bytes + dropped_bytes + b.bytes,
        "{}: byte conservation",
        name
    );
    // Every drop went through the context, so it is in the identities once;
    // every mark too, on a packet that was ECN-capable; every dequeue traced once.
    assert_eq!(
        s.dropped_at_enqueue + s.dropped_after_dequeue,
        h.total_drops(),
        "{}: drops in the identities",
        name
    );
    // A packet marked through the context leaves CE-marked, is dropped later,
    // or is still queued.
    for (_, e) in &h.tracer.0 {
        if let TraceEvent::Marked {
            pkt: Packet { id: packet, .. },
            ..
        } = e
        {
            let sent = h.sent.iter().find(|p| p.id == *packet);
            let dropped = h.dropped.iter().any(|(p, _)| p.id == *packet);
            assert!(
                sent.map_or(dropped || b.packets > 0, |p| p.ecn == Ecn::Ce),
                "{}: packet {} was marked, then left as {:?}",
                name,
                packet,
                sent.map(|p| p.ecn)
            );
        }
    }
    let traced_dequeues = h
        .tracer
        .0
        .iter()
        .filter(|(_, e)| matches!(e, TraceEvent::Dequeued { .. }))
        .count() as u64;
    assert_eq!(traced_dequeues, s.sent, "{}: Dequeued trace events", name);
    let traced_enqueues = h
        .tracer
        .0
        .iter()
        .filter(|(_, e)| matches!(e, TraceEvent::Enqueued { .. }))
        .count() as u64;
    assert_eq!(
        traced_enqueues, s.enqueued,
        "{}: Enqueued trace events",
        name
    );
    let traced_drops = h
        .tracer
        .0
        .iter()
        .filter(|(_, e)| matches!(e, TraceEvent::Dropped { .. }))
        .count();
    assert_eq!(
        traced_drops,
        h.dropped.len(),
        "{}: Dropped trace events",
        name
    );
}

fn run(&(name, make, order): &Case, ops: &[Op]) {
    let mut h = Harness::new(Dyn(make()));
    let mut offered_bytes = 0;
    let mut next_id = 0;
    for op in ops {
        match *op {
            Op::Offer { len, ecn, flow } => {
                h.offer_pkt(Packet::new(next_id, flow, len, Ecn::from_bits(ecn)));
                next_id += 1;
                offered_bytes += u64::from(len);
            }
            Op::Dequeue => {
                if let Some(p) = h.dequeue() {
                    assert!(p.enqueued_at <= h.now, "{}: dequeued from the future", name);
                }
            }
            Op::Advance(ns) => h.advance(Dur::from_nanos(ns)),
        }
        h.check_accounting();
        check_extra(name, &h, offered_bytes);
    }
    // Drain: every packet ends exactly once, sent or dropped.
    while h.dequeue().is_some() {
        h.check_accounting();
    }
    check_extra(name, &h, offered_bytes);
    assert_eq!(
        h.q.backlog(),
        Backlog::default(),
        "{}: not empty after draining",
        name
    );
    let mut ids: Vec<u64> = h.sent.iter().map(|p| p.id).chain(h.dropped_ids()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..next_id).collect::<Vec<_>>(),
        "{}: each packet exactly once",
        name
    );
    if order == Order::Fifo {
        assert!(
            h.sent.windows(2).all(|w| w[0].id < w[1].id),
            "{}: FIFO order",
            name
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn accounting_identities_hold_after_every_call(ops in proptest::collection::vec(op(), 0..200)) {
        for case in CASES {
            run(case, &ops);
        }
    }
}

#[test]
fn every_case_builds_an_empty_discipline() {
    for (name, make, _) in CASES {
        let q = make();
        assert!(!q.kind().is_empty(), "{name}");
        assert_eq!(q.backlog(), Backlog::default(), "{name}");
    }
}
