//! Property test: every packet offered to a [`Link`] is accounted for exactly
//! once — delivered (returned by `on_tx_done`), or dropped through the ctx
//! with a reason (qdisc reasons, or `LinkLoss` on the wire) — and until then
//! it is in the qdisc backlog or on the wire. Checked after every call, with
//! random traffic, queue limits, drop modes, rates, delays and loss models,
//! driven by a minimal event loop like the simulator's.
//!
//! With netem's `loss ... ecn` ([`Link::with_loss_ecn`]) a chosen ECN-capable
//! packet is CE-marked and delivered instead: each run is repeated with the
//! option on, and the packets the loss model chose must be the same (the
//! option never moves the loss stream), split into Not-ECT drops and marks.

use std::collections::BTreeMap;

use l4slab_core::{
    DropReason, Dur, Ecn, MarkReason, Packet, Rate, SimRng, Time, TraceEvent, VecTracer,
};
use l4slab_link::{Bernoulli, ConstantRate, GilbertElliott, Link, LossModel, NoLoss};
use l4slab_qdisc::{BufferLimit, Fifo, FifoConfig, Qdisc, QdiscCtx};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum LossChoice {
    None,
    Bernoulli(f64),
    Ge(f64, f64, f64, f64),
}

fn loss_choice() -> impl Strategy<Value = LossChoice> {
    prop_oneof![
        Just(LossChoice::None),
        (0.0f64..=1.0).prop_map(LossChoice::Bernoulli),
        (0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0)
            .prop_map(|(p, r, k, h)| LossChoice::Ge(p, r, k, h)),
    ]
}

fn qdisc(limit_kind: u8, limit: u32, head: bool) -> Box<dyn Qdisc> {
    let limit = if limit_kind == 0 {
        BufferLimit::Packets(limit.max(1))
    } else {
        BufferLimit::Bytes(u64::from(limit) * 500)
    };
    Box::new(Fifo::new(FifoConfig {
        limit,
        head_drop: head,
    }))
}

struct Env {
    rng: SimRng,
    tracer: VecTracer,
    dropped: Vec<(Packet, DropReason)>,
}

impl Env {
    fn ctx(&mut self) -> QdiscCtx<'_> {
        QdiscCtx {
            queue: 0,
            rng: &mut self.rng,
            tracer: &mut self.tracer,
            dropped: &mut self.dropped,
        }
    }
}

/// Outcome of each packet id.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Delivered(Time),
    Dropped(DropReason),
}

struct Check {
    offered_at: BTreeMap<u64, (Time, u32)>,
    offered_ecn: BTreeMap<u64, Ecn>,
    loss_ecn: bool,
    fates: BTreeMap<u64, Fate>,
    last_arrival: Time,
    tx_time_sum: Dur,
    rate: Rate,
    delay: Dur,
}

impl Check {
    /// Record what the call just produced and check the identities.
    fn after_call(&mut self, l: &Link, env: &mut Env, delivered: Option<(Time, Packet)>) {
        for (p, reason) in env.dropped.drain(..) {
            let prev = self.fates.insert(p.id, Fate::Dropped(reason));
            assert!(prev.is_none(), "packet {} accounted twice", p.id);
            assert!(
                self.offered_at.contains_key(&p.id),
                "unknown packet {}",
                p.id
            );
            // With `loss ... ecn` the wire drops only what it cannot mark.
            if reason == DropReason::LinkLoss && self.loss_ecn {
                assert_eq!(p.ecn, Ecn::NotEct, "packet {}", p.id);
            }
        }
        if let Some((at, p)) = delivered {
            let prev = self.fates.insert(p.id, Fate::Delivered(at));
            assert!(prev.is_none(), "packet {} accounted twice", p.id);
            let (offered, len) = self.offered_at[&p.id];
            assert_eq!(len, p.len);
            // A FIFO never marks: a changed codepoint is the link's mark.
            let sent_ecn = self.offered_ecn[&p.id];
            if p.ecn != sent_ecn {
                assert!(self.loss_ecn, "packet {} re-marked without loss_ecn", p.id);
                assert_eq!((sent_ecn == Ecn::NotEct, p.ecn), (false, Ecn::Ce));
            }
            // Never faster than serialization plus propagation.
            assert!(at >= offered + self.rate.tx_time(u64::from(len)) + self.delay);
            // One FIFO wire, one delay: arrivals in order.
            assert!(at >= self.last_arrival);
            self.last_arrival = at;
        }
        let s = l.stats();
        let b = l.qdisc().backlog();
        let on_wire = l.in_transmission();
        let qdisc_drops = self
            .fates
            .iter()
            .filter(|(_, f)| matches!(f, Fate::Dropped(r) if *r != DropReason::LinkLoss))
            .count() as u64;
        let qdisc_drop_bytes: u64 = self
            .fates
            .iter()
            .filter(|(_, f)| matches!(f, Fate::Dropped(r) if *r != DropReason::LinkLoss))
            .map(|(id, _)| u64::from(self.offered_at[id].1))
            .sum();
        assert_eq!(
            s.offered_packets,
            s.delivered_packets
                + s.lost_packets
                + qdisc_drops
                + u64::from(b.packets)
                + u64::from(on_wire.is_some()),
            "packet conservation: {s:?} {b:?}"
        );
        assert_eq!(
            s.offered_bytes,
            s.delivered_bytes
                + s.lost_bytes
                + qdisc_drop_bytes
                + b.bytes
                + on_wire.map_or(0, |p| u64::from(p.len)),
            "byte conservation: {s:?} {b:?}"
        );
        assert_eq!(s.offered_packets, self.offered_at.len() as u64);
        assert_eq!(s.tx_packets, s.delivered_packets + s.lost_packets);
        // Marks are delivered packets, each traced once through the context.
        assert!(s.loss_marked_packets <= s.delivered_packets);
        assert!(s.loss_marked_bytes <= s.delivered_bytes);
        assert!(self.loss_ecn || s.loss_marked_packets == 0);
        assert_eq!(
            link_marks(&env.tracer).len() as u64,
            s.loss_marked_packets,
            "marks through the context vs the link's count: {s:?}"
        );
        // What left the qdisc is on the wire or has finished.
        assert_eq!(
            l.qdisc().stats().sent,
            s.tx_packets + u64::from(on_wire.is_some())
        );
        assert_eq!(s.busy_time, self.tx_time_sum);
    }
}

/// The ids of the packets CE-marked by the link (`MarkReason::LinkMark`).
fn link_marks(t: &VecTracer) -> Vec<u64> {
    t.0.iter()
        .filter_map(|(_, e)| match e {
            TraceEvent::Marked {
                pkt,
                reason: MarkReason::LinkMark,
                ..
            } => Some(pkt.id),
            _ => None,
        })
        .collect()
}

#[derive(Clone, Debug)]
struct Params {
    mbps: u64,
    delay_us: u64,
    limit_kind: u8,
    limit: u32,
    head: bool,
    loss: LossChoice,
    seed: u64,
    traffic: Vec<(u64, u32, u8)>,
}

/// What one run left behind.
struct Outcome {
    link: Link,
    env: Env,
    check: Check,
}

/// Run `p` through a link (with netem's `ecn` flag if `loss_ecn`), checking
/// the identities after every call.
fn simulate(p: &Params, loss_ecn: bool) -> Outcome {
    let rate = Rate::from_mbps(p.mbps);
    let delay = Dur::from_micros(p.delay_us);
    let loss: Box<dyn LossModel> = match p.loss {
        LossChoice::None => Box::new(NoLoss),
        LossChoice::Bernoulli(pr) => Box::new(Bernoulli::new(pr).unwrap()),
        LossChoice::Ge(pr, r, k, h) => Box::new(GilbertElliott::new(pr, r, k, h).unwrap()),
    };
    let mut l = Link::new(
        qdisc(p.limit_kind, p.limit, p.head),
        Box::new(ConstantRate::new(rate).unwrap()),
        loss,
        SimRng::derive(p.seed, "link/test/loss"),
        delay,
    )
    .with_loss_ecn(loss_ecn);
    let mut env = Env {
        rng: SimRng::derive(p.seed, "qdisc"),
        tracer: VecTracer::default(),
        dropped: Vec::new(),
    };
    let mut check = Check {
        offered_at: BTreeMap::new(),
        offered_ecn: BTreeMap::new(),
        loss_ecn,
        fates: BTreeMap::new(),
        last_arrival: Time::ZERO,
        tx_time_sum: Dur::ZERO,
        rate,
        delay,
    };

    // Process the link's own events up to and including `until`.
    let run_until = |l: &mut Link, env: &mut Env, check: &mut Check, until: Time| loop {
        let next = [l.tx_done_at(), l.next_timer()].into_iter().flatten().min();
        match next {
            Some(t) if t <= until => {
                if l.tx_done_at() == Some(t) {
                    let len = l.in_transmission().unwrap().len;
                    check.tx_time_sum += rate.tx_time(u64::from(len));
                    let out = l.on_tx_done(t, &mut env.ctx());
                    check.after_call(l, env, out);
                } else {
                    l.on_timer(t, &mut env.ctx());
                    check.after_call(l, env, None);
                }
            }
            _ => break,
        }
    };

    let mut now = Time::ZERO;
    for (id, &(gap_ns, len, ecn)) in p.traffic.iter().enumerate() {
        now += Dur::from_nanos(gap_ns);
        run_until(&mut l, &mut env, &mut check, now);
        let pkt = Packet::new(id as u64, (id % 3) as u32, len, Ecn::from_bits(ecn));
        check.offered_at.insert(pkt.id, (now, len));
        check.offered_ecn.insert(pkt.id, pkt.ecn);
        l.enqueue(now, pkt, &mut env.ctx());
        check.after_call(&l, &mut env, None);
    }
    run_until(&mut l, &mut env, &mut check, Time::MAX);
    Outcome {
        link: l,
        env,
        check,
    }
}

fn params() -> impl Strategy<Value = Params> {
    (
        (1u64..200, 0u64..50_000, 0u8..2, 1u32..40, any::<bool>()),
        loss_choice(),
        any::<u64>(),
        proptest::collection::vec((0u64..2_000_000, 40u32..=1500, 0u8..4), 1..300),
    )
        .prop_map(
            |((mbps, delay_us, limit_kind, limit, head), loss, seed, traffic)| Params {
                mbps,
                delay_us,
                limit_kind,
                limit,
                head,
                loss,
                seed,
                traffic,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_offered_packet_is_accounted_exactly_once(p in params()) {
        for loss_ecn in [false, true] {
            let Outcome { link: l, check, .. } = simulate(&p, loss_ecn);
            // Idle and empty at the end: every packet has exactly one fate.
            prop_assert_eq!(l.tx_done_at(), None);
            prop_assert_eq!(l.qdisc().backlog().packets, 0);
            prop_assert_eq!(check.fates.len(), check.offered_at.len());
            prop_assert!(check.fates.keys().eq(check.offered_at.keys()));
            let lost = check.fates.values().filter(|f| **f == Fate::Dropped(DropReason::LinkLoss)).count();
            prop_assert_eq!(lost as u64, l.stats().lost_packets);
        }
    }

    /// netem `loss ... ecn`: the same packets are chosen with and without the
    /// option (same loss-stream draws; loss after serialization leaves the
    /// queue untouched); with it, the chosen ECN-capable ones are marked and
    /// delivered, the chosen Not-ECT ones dropped.
    #[test]
    fn loss_ecn_marks_the_packets_plain_loss_would_drop(p in params()) {
        let plain = simulate(&p, false);
        let ecn = simulate(&p, true);
        let link_lost = |o: &Outcome| -> Vec<u64> {
            o.check.fates.iter()
                .filter(|(_, f)| **f == Fate::Dropped(DropReason::LinkLoss))
                .map(|(id, _)| *id)
                .collect()
        };
        let mut chosen_with_ecn = link_lost(&ecn);
        let marks = link_marks(&ecn.env.tracer);
        chosen_with_ecn.extend(&marks);
        chosen_with_ecn.sort_unstable();
        prop_assert_eq!(link_lost(&plain), chosen_with_ecn);
        prop_assert_eq!(plain.link.random_draws(), ecn.link.random_draws());
        for id in &marks {
            prop_assert!(matches!(ecn.check.fates[id], Fate::Delivered(_)));
            prop_assert_ne!(ecn.check.offered_ecn[id], Ecn::NotEct);
        }
        let s = ecn.link.stats();
        prop_assert_eq!(s.lost_packets + s.loss_marked_packets, plain.link.stats().lost_packets);
    }
}
