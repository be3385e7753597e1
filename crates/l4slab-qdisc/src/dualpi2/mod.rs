//! `dualpi2`: the DualQ Coupled AQM of RFC 9332 with a PI2 base AQM, as
//! Linux runs it in `net/sched/sch_dualpi2.c` (merged for Linux 6.17).
//!
//! Two FIFOs: L (ECT(1) and CE, or any ECT with `any_ect`, plus flows a
//! "filter" puts there) and C (everything else). A PI2 controller
//! ([`crate::pi::pi_delta`], shared with PIE) updates a base probability `p'`
//! every `tupdate` from the queue delay. C packets are dropped (Not-ECT) or
//! marked with `p_C = p'^2`; L packets are marked with `p_CL = min(k p', 1)`
//! and, natively, above a step threshold on their sojourn time. A scheduler
//! gives L priority without starving C.
//!
//! Files: [`config`] (knobs, defaults, iproute2 auto-configuration),
//! [`scheduler`] (WRR credit and time-shifted FIFO), [`aqm`] (per-packet
//! decisions), this file (the queues, the PI2 update, `Qdisc`).
//!
//! Follows Linux by default; RFC 9332 App. A variants are options:
//! `LAqm::Ramp` (RFC ramp instead of the 1 ms step), `Scheduler::TsFifo`
//! (instead of WRR), `PiInput::C` (C delay only instead of `max(L, C)`).
//! For an AP on a medium that serves in bursts, `LSojourn::Service`
//! ([`service`]) counts the L sojourn from the first burst that could carry
//! the packet instead of from enqueue.
//!
//! Deviations, and why:
//! * `p'` is an `f64` (Linux: `u32` with `MAX_PROB = 2^32 - 1`, and
//!   alpha/beta rounded to 1/256 Hz at the tc interface and to internal
//!   fixed point); the update arithmetic is the same up to rounding.
//! * Marking uses random rolls from the qdisc's `SimRng` like Linux, not the
//!   RFC's deterministic `recur()` accumulator.
//! * The memory limit counts packet lengths (Linux: `skb->truesize`), and the
//!   MTU is the 1500-byte IP MTU (Linux `psched_mtu()`: 1514).
//! * A packet marked by the coupled probability is not marked again by the
//!   step in the same pass (Linux counts it in both `ecn_mark` and
//!   `step_marks`); its CE codepoint is the same either way.
//! * With the ramp option, the coupled and native L probabilities are
//!   combined as `max(p'_L, p_CL)` in one roll at dequeue (RFC 9332 App. A),
//!   even with `drop_enqueue`; overload handling stays where `drop_enqueue`
//!   puts it.
//! * `split_gso` is accepted and ignored: packets are never aggregated here.
//! * `xstats()` reports the queue delays sampled by the last PI update
//!   (Linux samples them when `tc -s` asks); there is no `now` in `xstats()`.
//!
//! Not implemented: tc filter actions that steal or drop packets
//! (`TC_ACT_STOLEN`/`SHOT`), and `skb->priority` classification; flows are
//! classified into L by `l_flows`/`llll_flows` instead.

pub mod aqm;
pub mod config;
pub mod scheduler;
pub mod service;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use crate::pi::{pi_delta, PiGains};
use crate::{Backlog, Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::{DropReason, Dur, Ecn, MarkReason, Packet, Time};

use aqm::{Class, Coupling, Verdict};
pub use config::{
    auto_config, memory_limit_for, AutoConfigError, DualPi2Config, EcnMask, LAqm, LSojourn,
    PiInput, PiParams, Scheduler, StepThresh, PARAMS,
};
use scheduler::{Sched, Sub};
use service::ServiceClock;

/// A packet in the L queue and what was decided about it at enqueue.
#[derive(Clone, Copy, Debug)]
struct LEntry {
    pkt: Packet,
    /// `L4s` or `Llll`.
    class: Class,
    /// Linux `skb_apply_step`: L4S and the L queue held `min_qlen_step` packets on arrival.
    apply_step: bool,
    /// [`ServiceClock::stamp`] at arrival (with `LSojourn::Service`).
    stamp: u64,
}

#[derive(Debug)]
pub struct DualPi2 {
    cfg: DualPi2Config,
    gains: PiGains,
    c: VecDeque<Packet>,
    l: VecDeque<LEntry>,
    c_bytes: u64,
    l_bytes: u64,
    /// `p'`, the base probability.
    prob: f64,
    /// The PI input at the previous update (`last_qdelay`, RFC `prevq`).
    last_qdelay: Dur,
    /// Head delays of C and L at the last update (for `xstats`).
    delay_c: Dur,
    delay_l: Dur,
    sched: Sched,
    /// The dequeue bursts, with `LSojourn::Service`.
    clock: ServiceClock,
    next_update: Time,
    // Linux xstats counters.
    packets_in_c: u64,
    packets_in_l: u64,
    maxq: u32,
    ecn_marks: u64,
    step_marks: u64,
    stats: QdiscStats,
}

impl DualPi2 {
    pub fn new(cfg: DualPi2Config) -> Self {
        assert!(cfg.limit > 0, "dualpi2 limit must be positive");
        assert!(!cfg.tupdate.is_zero(), "dualpi2 tupdate must be positive");
        assert!(
            cfg.coupling_factor > 0.0,
            "dualpi2 coupling_factor must be positive"
        );
        assert!(cfg.mtu > 0, "dualpi2 mtu must be positive");
        let cap = (cfg.limit as usize).min(1 << 14);
        DualPi2 {
            gains: PiGains {
                alpha: cfg.alpha,
                beta: cfg.beta,
                target: cfg.target,
            },
            c: VecDeque::with_capacity(cap),
            l: VecDeque::with_capacity(cap),
            c_bytes: 0,
            l_bytes: 0,
            prob: 0.0,
            last_qdelay: Dur::ZERO,
            delay_c: Dur::ZERO,
            delay_l: Dur::ZERO,
            sched: Sched::new(cfg.scheduler, cfg.mtu),
            clock: ServiceClock::default(),
            next_update: Time::ZERO + cfg.tupdate,
            packets_in_c: 0,
            packets_in_l: 0,
            maxq: 0,
            ecn_marks: 0,
            step_marks: 0,
            stats: QdiscStats::default(),
            cfg,
        }
    }

    /// The base probability `p'`.
    pub fn prob(&self) -> f64 {
        self.prob
    }

    fn coupling(&self) -> Coupling {
        Coupling {
            prob: self.prob,
            k: self.cfg.coupling_factor,
            drop_on_overload: self.cfg.drop_on_overload,
        }
    }

    /// Linux `dualpi2_skb_classify`: the ECN field against `ecn_mask` first,
    /// then the "filters" (`l_flows`, `llll_flows`).
    fn classify(&self, pkt: &Packet) -> Class {
        if self.cfg.ecn_mask.matches(pkt.ecn) || self.cfg.l_flows.contains(&pkt.flow) {
            Class::L4s
        } else if self.cfg.llll_flows.contains(&pkt.flow) {
            Class::Llll
        } else {
            Class::Classic
        }
    }

    fn qlen(&self) -> u32 {
        (self.c.len() + self.l.len()) as u32
    }

    fn bytes(&self) -> u64 {
        self.c_bytes + self.l_bytes
    }

    /// Linux `must_drop`: "Never mark/drop if we have a standing queue of
    /// less than 2 MTUs" (the backlog *other* than `pkt`), then the coupled
    /// decision. With the ramp, L4S marking outside overload is left to
    /// [`DualPi2::l_aqm`].
    fn must_drop(&self, class: Class, pkt: &Packet, ctx: &mut QdiscCtx<'_>) -> Verdict {
        if self.bytes() < 2 * u64::from(self.cfg.mtu) {
            return Verdict::Pass;
        }
        let coupled_in_l = matches!(self.cfg.l_aqm, LAqm::Step { .. });
        self.coupling()
            .verdict(class, pkt.ecn, coupled_in_l, ctx.rng)
    }

    /// The native L4S AQM at dequeue (`pkt` already removed from L). The
    /// step is Linux `do_step_aqm`; the ramp is RFC 9332 App. A lines 5-8.
    fn l_aqm(&self, now: Time, e: &LEntry, ctx: &mut QdiscCtx<'_>) -> Verdict {
        let sojourn = match self.cfg.l_sojourn {
            LSojourn::Enqueue => now.saturating_since(e.pkt.enqueued_at),
            LSojourn::Service => self.clock.sojourn(e.stamp, now),
        };
        let l_after = self.l.len() as u32;
        match self.cfg.l_aqm {
            LAqm::Step { thresh, .. } => {
                if !(e.apply_step && aqm::step_exceeded(thresh, sojourn, l_after)) {
                    Verdict::Pass
                } else if e.pkt.ecn == Ecn::NotEct {
                    // do_step_aqm: "Drop this non-ECT packet".
                    Verdict::Drop(DropReason::StepNonEct)
                } else {
                    Verdict::Mark(MarkReason::Step)
                }
            }
            LAqm::Ramp {
                min_th,
                range,
                th_len,
            } => {
                let cp = self.coupling();
                if e.class != Class::L4s || cp.overload() {
                    return Verdict::Pass; // LLLL, or overload already handled by must_drop
                }
                // RFC 9332 App. A: no native marking while the L queue holds <= Th_len.
                let native = if l_after >= th_len {
                    aqm::ramp(sojourn, min_th, range)
                } else {
                    0.0
                };
                // The coupled part obeys the same 2-MTU rule as must_drop.
                let p_cl = if self.bytes() < 2 * u64::from(self.cfg.mtu) {
                    0.0
                } else {
                    cp.p_cl()
                };
                aqm::ramp_verdict(native, p_cl, e.pkt.ecn, ctx.rng)
            }
        }
    }

    /// RFC 9332 App. A `dualpi2_update()` / Linux `calculate_probability()`.
    fn update(&mut self, now: Time) {
        let head =
            |p: Option<&Packet>| p.map_or(Dur::ZERO, |p| now.saturating_since(p.enqueued_at));
        self.delay_c = head(self.c.front());
        self.delay_l = head(self.l.front().map(|e| &e.pkt));
        let qdelay = match self.cfg.pi_input {
            // Linux: "qdelay = max(qdelay_l, qdelay_c)".
            PiInput::Max => self.delay_c.max(self.delay_l),
            // RFC: "curq = cq.time() % use queuing time of first-in Classic packet".
            PiInput::C => self.delay_c,
        };
        // RFC 9332 App. A: p' = p' + alpha * (curq - target) + beta * (curq - prevq), in [0, 1].
        let mut p = (self.prob + pi_delta(&self.gains, qdelay, self.last_qdelay)).clamp(0.0, 1.0);
        if !self.cfg.drop_on_overload {
            // Linux: "If we do not drop on overload, ensure we cap the L4S
            // probability to 100% to keep window fairness when overflowing."
            p = p.min(1.0 / self.cfg.coupling_factor);
        }
        self.prob = p;
        self.last_qdelay = qdelay;
    }

    /// Carry out a `Mark` verdict: set CE, count it, trace it. `false` for
    /// any other verdict, or when the packet is Not-ECT and cannot be marked.
    fn mark(
        &mut self,
        now: Time,
        pkt: &mut Packet,
        verdict: Verdict,
        ctx: &mut QdiscCtx<'_>,
    ) -> bool {
        let Verdict::Mark(reason) = verdict else {
            return false;
        };
        if !ctx.try_mark(now, pkt, reason) {
            return false;
        }
        self.ecn_marks += 1;
        if reason == MarkReason::Step {
            self.step_marks += 1;
        }
        true
    }
}

impl Qdisc for DualPi2 {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.stats.offered += 1;
        let class = self.classify(&pkt);
        // dualpi2_enqueue_skb: "qdisc_qlen(sch) >= sch->limit || memory_used + truesize > memory_limit".
        if self.qlen() >= self.cfg.limit
            || self.bytes() + u64::from(pkt.len) > self.cfg.memory_limit
        {
            ctx.refused(now, pkt, DropReason::Overlimit, &mut self.stats);
            return;
        }
        if self.cfg.drop_enqueue {
            match self.must_drop(class, &pkt, ctx) {
                Verdict::Drop(reason) => {
                    ctx.refused(now, pkt, reason, &mut self.stats);
                    return;
                }
                v => {
                    self.mark(now, &mut pkt, v, ctx);
                }
            }
        }
        self.maxq = self.maxq.max(self.qlen());
        pkt.enqueued_at = now;
        let sub = if class == Class::Classic {
            Sub::C
        } else {
            Sub::L
        };
        if class == Class::Classic {
            self.c_bytes += u64::from(pkt.len);
            self.c.push_back(pkt);
            self.packets_in_c += 1;
        } else {
            // skb_apply_step: "skb_is_l4s(skb) && qdisc_qlen(q->l_queue) >= q->min_qlen_step".
            let min_qlen = match self.cfg.l_aqm {
                LAqm::Step { min_qlen_step, .. } => min_qlen_step,
                LAqm::Ramp { .. } => 0,
            };
            let apply_step = class == Class::L4s && self.l.len() as u32 >= min_qlen;
            self.l_bytes += u64::from(pkt.len);
            self.l.push_back(LEntry {
                pkt,
                class,
                apply_step,
                stamp: self.clock.stamp(),
            });
            self.packets_in_l += 1;
        }
        ctx.admitted(now, &pkt, sub as u8, &mut self.stats);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        if self.cfg.l_sojourn == LSojourn::Service && self.qlen() > 0 {
            self.clock.on_dequeue(now);
        }
        // __dualpi2_qdisc_dequeue: pick, AQM, and "drop_and_retry" until a packet goes out.
        loop {
            let choice = self
                .sched
                .choose(self.l.front().map(|e| &e.pkt), self.c.front())?;
            let entry = match choice.sub {
                Sub::L => {
                    let e = self.l.pop_front().expect("scheduler chose a non-empty L");
                    self.l_bytes -= u64::from(e.pkt.len);
                    e
                }
                Sub::C => {
                    let p = self.c.pop_front().expect("scheduler chose a non-empty C");
                    self.c_bytes -= u64::from(p.len);
                    LEntry {
                        pkt: p,
                        class: Class::Classic,
                        apply_step: false,
                        stamp: 0,
                    }
                }
            };
            self.stats.dequeued += 1;
            let mut pkt = entry.pkt;
            let mut marked = false;
            if !self.cfg.drop_enqueue {
                match self.must_drop(entry.class, &pkt, ctx) {
                    Verdict::Drop(reason) => {
                        ctx.discarded(now, pkt, reason, &mut self.stats);
                        continue;
                    }
                    v => marked = self.mark(now, &mut pkt, v, ctx),
                }
            }
            if choice.sub == Sub::L && !marked {
                match self.l_aqm(now, &entry, ctx) {
                    Verdict::Drop(reason) => {
                        ctx.discarded(now, pkt, reason, &mut self.stats);
                        continue;
                    }
                    v => {
                        self.mark(now, &mut pkt, v, ctx);
                    }
                }
            }
            self.sched.commit(choice);
            // Subqueue numbers of `subqueue_names()`: 0 = C, 1 = L.
            ctx.sent(now, &pkt, choice.sub as u8, &mut self.stats);
            return Some(pkt);
        }
    }

    fn backlog(&self) -> Backlog {
        Backlog {
            packets: self.qlen(),
            bytes: self.bytes(),
        }
    }

    fn subqueue_names(&self) -> &'static [&'static str] {
        &["c", "l"]
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.next_update)
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<'_>) {
        if now < self.next_update {
            return;
        }
        self.update(now);
        // dualpi2_timer: re-armed tupdate after now; a late timer skips the missed updates.
        self.next_update = self
            .next_update
            .saturating_add(self.cfg.tupdate)
            .max(now.saturating_add(self.cfg.tupdate));
    }

    fn xstats(&self) -> Vec<(&'static str, f64)> {
        let cp = self.coupling();
        vec![
            ("prob", self.prob),
            ("p_c", cp.p_c()),
            ("p_cl", cp.p_cl()),
            ("delay_c_ms", self.delay_c.as_millis_f64()),
            ("delay_l_ms", self.delay_l.as_millis_f64()),
            ("packets_in_c", self.packets_in_c as f64),
            ("packets_in_l", self.packets_in_l as f64),
            ("credit", self.sched.credit() as f64),
            ("step_marks", self.step_marks as f64),
            ("ecn_mark", self.ecn_marks as f64),
            ("maxq", f64::from(self.maxq)),
        ]
    }
}
