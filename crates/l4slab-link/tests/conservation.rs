//! Property test: every packet offered to a [`Link`] is accounted for exactly
//! once — delivered (returned by `on_tx_done`), or dropped through the ctx
//! with a reason (qdisc reasons, or `LinkLoss` on the wire) — and until then
//! it is in the qdisc backlog or on the wire. Checked after every call, with
//! random traffic, queue limits, drop modes, rates, delays and loss models,
//! driven by a minimal event loop like the simulator's.

use std::collections::BTreeMap;

use l4slab_core::{DropReason, Dur, Ecn, Packet, Rate, SimRng, Time, VecTracer};
use l4slab_link::{Bernoulli, ConstantRate, GilbertElliott, Link, LossModel, NoLoss};
use l4slab_qdisc::{Fifo, FifoConfig, FifoLimit, FifoMode, Qdisc, QdiscCtx};
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
        FifoLimit::Packets(limit.max(1))
    } else {
        FifoLimit::Bytes(u64::from(limit) * 500)
    };
    let mode = if head {
        FifoMode::HeadDrop
    } else {
        FifoMode::TailDrop
    };
    Box::new(Fifo::new(FifoConfig { limit, mode }))
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
        }
        if let Some((at, p)) = delivered {
            let prev = self.fates.insert(p.id, Fate::Delivered(at));
            assert!(prev.is_none(), "packet {} accounted twice", p.id);
            let (offered, len) = self.offered_at[&p.id];
            assert_eq!(len, p.len);
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
        // What left the qdisc is on the wire or has finished.
        assert_eq!(
            l.qdisc().stats().sent,
            s.tx_packets + u64::from(on_wire.is_some())
        );
        assert_eq!(s.busy_time, self.tx_time_sum);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_offered_packet_is_accounted_exactly_once(
        mbps in 1u64..200,
        delay_us in 0u64..50_000,
        limit_kind in 0u8..2,
        limit in 1u32..40,
        head in any::<bool>(),
        loss in loss_choice(),
        seed in any::<u64>(),
        traffic in proptest::collection::vec((0u64..2_000_000, 40u32..=1500, 0u8..4), 1..300),
    ) {
        let rate = Rate::from_mbps(mbps);
        let delay = Dur::from_micros(delay_us);
        let loss: Box<dyn LossModel> = match loss {
            LossChoice::None => Box::new(NoLoss),
            LossChoice::Bernoulli(p) => Box::new(Bernoulli::new(p).unwrap()),
            LossChoice::Ge(p, r, k, h) => Box::new(GilbertElliott::new(p, r, k, h).unwrap()),
        };
        let mut l = Link::new(
            qdisc(limit_kind, limit, head),
            Box::new(ConstantRate::new(rate).unwrap()),
            loss,
            SimRng::derive(seed, "link/test/loss"),
            delay,
        );
        let mut env = Env {
            rng: SimRng::derive(seed, "qdisc"),
            tracer: VecTracer::default(),
            dropped: Vec::new(),
        };
        let mut check = Check {
            offered_at: BTreeMap::new(),
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
        for (id, (gap_ns, len, ecn)) in traffic.into_iter().enumerate() {
            now += Dur::from_nanos(gap_ns);
            run_until(&mut l, &mut env, &mut check, now);
            let pkt = Packet::new(id as u64, (id % 3) as u32, len, Ecn::from_bits(ecn));
            check.offered_at.insert(pkt.id, (now, len));
            l.enqueue(now, pkt, &mut env.ctx());
            check.after_call(&l, &mut env, None);
        }
        run_until(&mut l, &mut env, &mut check, Time::MAX);

        // Idle and empty at the end: every packet has exactly one fate.
        prop_assert_eq!(l.tx_done_at(), None);
        prop_assert_eq!(l.qdisc().backlog().packets, 0);
        prop_assert_eq!(check.fates.len(), check.offered_at.len());
        prop_assert!(check.fates.keys().eq(check.offered_at.keys()));
        let lost = check.fates.values().filter(|f| **f == Fate::Dropped(DropReason::LinkLoss)).count();
        prop_assert_eq!(lost as u64, l.stats().lost_packets);
    }
}
