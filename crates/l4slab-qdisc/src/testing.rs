//! Test support shared by every discipline's tests and property tests: a
//! harness that owns the context, records drops and checks the accounting
//! identities of DESIGN.md §3. Public so downstream crates (link, sim) and the
//! property tests in `tests/` can use it too.

use l4slab_core::{DropReason, Ecn, MarkReason, Packet, SimRng, Time, TraceEvent, VecTracer};

use crate::{Qdisc, QdiscCtx};

pub struct Harness<Q: Qdisc> {
    pub q: Q,
    pub now: Time,
    pub rng: SimRng,
    pub tracer: VecTracer,
    pub dropped: Vec<(Packet, DropReason)>,
    /// Every packet returned by `dequeue`, in order.
    pub sent: Vec<Packet>,
}

impl<Q: Qdisc> Harness<Q> {
    pub fn new(q: Q) -> Self {
        Harness {
            q,
            now: Time::ZERO,
            rng: SimRng::derive(1, "qdisc-test"),
            tracer: VecTracer::default(),
            dropped: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn ctx(&mut self) -> (&mut Q, QdiscCtx<'_>) {
        (
            &mut self.q,
            QdiscCtx {
                queue: 0,
                rng: &mut self.rng,
                tracer: &mut self.tracer,
                dropped: &mut self.dropped,
            },
        )
    }

    pub fn offer_pkt(&mut self, pkt: Packet) {
        let now = self.now;
        let (q, mut ctx) = self.ctx();
        q.enqueue(now, pkt, &mut ctx);
    }

    /// Offer a Not-ECT packet of flow 1.
    pub fn offer(&mut self, id: u64, len: u32) {
        self.offer_pkt(Packet::new(id, 1, len, Ecn::NotEct));
    }

    pub fn dequeue(&mut self) -> Option<Packet> {
        let now = self.now;
        let (q, mut ctx) = self.ctx();
        let p = q.dequeue(now, &mut ctx);
        if let Some(p) = p {
            self.sent.push(p);
        }
        p
    }

    pub fn advance(&mut self, d: l4slab_core::Dur) {
        self.now += d;
        while let Some(t) = self.q.next_timer() {
            if t > self.now {
                break;
            }
            let (q, mut ctx) = self.ctx();
            q.on_timer(t, &mut ctx);
        }
    }

    pub fn drain_ids(&mut self) -> Vec<u64> {
        std::iter::from_fn(|| self.dequeue())
            .map(|p| p.id)
            .collect()
    }

    pub fn dropped_ids(&self) -> Vec<u64> {
        self.dropped.iter().map(|(p, _)| p.id).collect()
    }

    /// Drops that went through the context with `reason` (the harness is the
    /// context's owner: it counts them, as the bottleneck runtime does).
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.dropped.iter().filter(|(_, r)| *r == reason).count() as u64
    }

    pub fn total_drops(&self) -> u64 {
        self.dropped.len() as u64
    }

    /// CE marks that went through the context with `reason`.
    pub fn marks(&self, reason: MarkReason) -> u64 {
        self.tracer
            .0
            .iter()
            .filter(|(_, e)| matches!(e, TraceEvent::Marked { reason: r, .. } if *r == reason))
            .count() as u64
    }

    pub fn total_marks(&self) -> u64 {
        MarkReason::ALL.iter().map(|&r| self.marks(r)).sum()
    }

    /// The identities of DESIGN.md §3, plus: every drop went through the ctx
    /// with a counted reason, and the backlog matches the counters.
    pub fn check_accounting(&self) {
        let s = self.q.stats();
        let b = self.q.backlog();
        assert_eq!(
            s.offered,
            s.enqueued + s.dropped_at_enqueue,
            "offered != enqueued + dropped_at_enqueue: {s:?}"
        );
        assert_eq!(
            s.enqueued,
            s.dequeued + u64::from(b.packets),
            "enqueued != dequeued + backlog: {s:?} {b:?}"
        );
        assert_eq!(
            s.dequeued,
            s.sent + s.dropped_after_dequeue,
            "dequeued != sent + dropped_after_dequeue: {s:?}"
        );
        assert_eq!(s.sent, self.sent.len() as u64);
        assert_eq!(
            s.dropped_at_enqueue + s.dropped_after_dequeue,
            self.total_drops(),
            "drops in the identities != drops through the context: {s:?}"
        );
        if b.packets == 0 {
            assert_eq!(b.bytes, 0, "empty queue with bytes");
        }
    }
}
