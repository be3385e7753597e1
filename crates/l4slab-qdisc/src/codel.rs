//! CoDel, the Controlled Delay AQM: RFC 8289 §5 (pseudocode), as Linux
//! `net/sched/sch_codel.c` and `include/net/codel_impl.h` implement it,
//! including the Linux extensions `ecn` and `ce_threshold`.
//!
//! The control loop is split the way Linux splits it, so that `fq_codel`
//! reuses it with one [`CodelState`] per flow:
//!
//! * [`CodelParams`] — immutable parameters (`struct codel_params`);
//! * [`CodelState`] — the control variables of one queue (`struct codel_vars`):
//!   `count`, `lastcount`, `dropping`, `first_above_time`, `drop_next`, `ldelay`;
//! * [`CodelStats`] — counters shared by all queues of a qdisc (`struct codel_stats`
//!   plus the qdisc's `drop_overlimit`);
//! * [`CodelState::dequeue`] — `codel_dequeue()`, generic over the queue it
//!   takes packets from ([`CodelQueue`]).
//!
//! Not implemented: nothing of RFC 8289 or of the Linux `codel` knobs is
//! missing. (`ce_threshold_selector` is an `fq_codel`-only knob in Linux; the
//! shared core implements it for `fq_codel`.)
//!
//! Deviations from Linux (all documented in `docs/models/codel.md`):
//! * Time is exact nanoseconds; Linux quantizes CoDel time to 1.024 µs
//!   (`CODEL_SHIFT = 10`).
//! * The control law `t + interval/√count` uses an exact `f64` square root
//!   (IEEE 754 requires `sqrt` to be correctly rounded, so it is identical on
//!   every platform), truncated to whole nanoseconds. Linux keeps a Q0.32
//!   `rec_inv_sqrt` refined by one Newton step per `count` change, which is
//!   within a fraction of a percent after the first few drops.
//! * "OK to drop" starts when `now >= first_above_time` (RFC 8289 §5.6
//!   `dodequeue`); Linux uses a strict `codel_time_after`. The difference is one
//!   1.024 µs tick.
//! * A packet that the control law has just CE-marked is not marked (and not
//!   counted) a second time by `ce_threshold`; Linux increments both
//!   `ecn_mark` and `ce_mark` for it. Here every mark is one packet.
//!
//! Packet lengths: [`Packet::len`] is the IP packet. Where Linux uses
//! `qdisc_pkt_len()` — the "one MTU of backlog" rule and `maxpacket` here,
//! DRR deficits and fattest-flow backlogs in `fq_codel` — we add the 14-byte
//! Ethernet header Linux counts ([`qdisc_pkt_len`]), so the Linux defaults
//! (`mtu` = `quantum` = 1514 = one full-size frame) mean what they mean in
//! Linux. Queue byte counters ([`Backlog`], [`QdiscStats`]) stay in IP bytes.

use serde::{Deserialize, Serialize};

use crate::registry::QdiscKind;
use crate::{Backlog, PacketFifo, Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{DropReason, Dur, Ecn, MarkReason, Packet, Time};

/// Linux `psched_mtu()` of an Ethernet device: MTU 1500 + 14 B header. The
/// default `fq_codel` quantum and the CoDel "one MTU of backlog" threshold.
pub const ETH_PSCHED_MTU: u32 = 1514;

/// The Ethernet (MAC) header that Linux's `qdisc_pkt_len()` includes and our
/// IP-level [`Packet::len`] does not.
pub const ETH_HLEN: u32 = 14;

/// Linux `qdisc_pkt_len()` of a packet of IP length `len` on an Ethernet
/// device: `len + 14`.
pub fn qdisc_pkt_len(len: u32) -> u64 {
    u64::from(len) + u64::from(ETH_HLEN)
}

/// `ce_threshold_selector VALUE/MASK` (Linux ≥ 5.16, `fq_codel` only): apply
/// `ce_threshold` only to packets whose DS field satisfies
/// `dsfield & mask == value`.
///
/// Our [`Packet`] carries only the two ECN bits of the DS field; the six DSCP
/// bits are taken as zero (best effort), so a selector that tests DSCP bits
/// only matches packets of DSCP 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CeSelector {
    pub value: u8,
    pub mask: u8,
}

impl CeSelector {
    /// `ce_threshold_selector 0x1/0x3`: ECT(1) only, the L4S identifier
    /// (the example of Linux commit dfcb63ce1de6, "fq_codel: generalise
    /// ce_threshold marking for subset of traffic").
    pub const ECT1: CeSelector = CeSelector {
        value: 0x01,
        mask: 0x03,
    };

    /// Does a packet with this ECN field (and DSCP 0) match?
    pub fn matches(self, ecn: Ecn) -> bool {
        // codel_impl.h codel_dequeue: `((u8)dsfield & params->ce_threshold_mask) == params->ce_threshold_selector`
        ecn.bits() & self.mask == self.value
    }
}

/// CoDel parameters (Linux `struct codel_params`), shared by `codel` and
/// `fq_codel`. Built from [`CodelConfig`] or `FqCodelConfig`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// `TARGET`: acceptable standing queue delay.
    pub target: Dur,
    /// `INTERVAL`: the window over which the sojourn time must stay above target.
    pub interval: Dur,
    /// Never drop while the qdisc backlog (after removing the head) is at most
    /// this many bytes (RFC 8289 `MAXPACKET`; Linux `params->mtu`).
    pub mtu: u32,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Mark ECN-capable packets whose sojourn exceeds this, regardless of the
    /// control law. `None` = Linux `CODEL_DISABLED_THRESHOLD`.
    pub ce_threshold: Option<Dur>,
    /// Restrict `ce_threshold` to matching packets (`fq_codel` only).
    pub ce_threshold_selector: Option<CeSelector>,
}

/// tc `limit`.
pub const LIMIT: Param = Param::new(
    "limit",
    Kind::Limit,
    ParamValue::Int(1000),
    "Linux `sch_codel.c` `DEFAULT_CODEL_LIMIT` = 1000; a scenario's default is the direction's `buffer`",
    "tail-drop limit in packets (bytes and times at 1500 B per packet, at least 1)",
);

/// tc `target`.
pub const TARGET: Param = Param::new(
    "target",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(5)),
    "RFC 8289 §4.3; Linux `codel_params_init` `MS2TIME(5)`",
    "acceptable standing queue delay (sojourn time)",
);

/// tc `interval`.
pub const INTERVAL: Param = Param::new(
    "interval",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(100)),
    "RFC 8289 §4.2; Linux `codel_params_init` `MS2TIME(100)`",
    "sliding window over which the minimum sojourn must exceed `target`; about a worst-case RTT",
);

/// tc `ecn` / `noecn`.
pub const ECN: Param = Param::new(
    "ecn",
    Kind::Flag,
    ParamValue::Flag(false),
    "Linux `codel_params_init` (`codel` has ECN off)",
    "CE-mark ECN-capable packets instead of dropping them",
);

/// tc `ce_threshold`.
pub const CE_THRESHOLD: Param = Param::new(
    "ce_threshold",
    Kind::Duration { zero_ok: true },
    ParamValue::Unset {
        example: r#""1ms""#,
    },
    "Linux `codel_params_init`: `CODEL_DISABLED_THRESHOLD` (off)",
    "CE-mark every ECN-capable packet whose sojourn is above this, whatever the control law decides",
);

/// The parameters a scenario can set (`qdisc = { kind = "codel", ... }`).
pub const PARAMS: &[Param] = &[LIMIT, TARGET, INTERVAL, ECN, CE_THRESHOLD];

/// Configuration of the `codel` qdisc: `tc qdisc add ... codel [limit PACKETS]
/// [target TIME] [interval TIME] [ecn | noecn] [ce_threshold TIME]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodelConfig {
    /// Tail-drop limit in packets. Linux `sch_codel.c` `DEFAULT_CODEL_LIMIT` = 1000.
    pub limit: u32,
    /// RFC 8289 §4.3 and Linux `codel_params_init`: 5 ms.
    pub target: Dur,
    /// RFC 8289 §4.2 and Linux `codel_params_init`: 100 ms.
    pub interval: Dur,
    /// Linux `codel_params_init`: `ecn = false` for `codel`.
    pub ecn: bool,
    /// Linux `codel_params_init`: disabled.
    pub ce_threshold: Option<Dur>,
    /// Linux `codel_init`: `params.mtu = psched_mtu(dev)` (1514 on Ethernet).
    /// Not a `tc` knob.
    pub mtu: u32,
}

l4slab_core::param_config!(CodelConfig {
    limit = LIMIT,
    target = TARGET,
    interval = INTERVAL,
    ecn = ECN,
    ce_threshold = CE_THRESHOLD,
} + {
    mtu: ETH_PSCHED_MTU, // codel_init: psched_mtu(qdisc_dev(sch))
});

impl QdiscKind for CodelConfig {
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(Codel::new(self.clone()))
    }
}

impl CodelConfig {
    pub fn params(&self) -> CodelParams {
        CodelParams {
            target: self.target,
            interval: self.interval,
            mtu: self.mtu,
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: None,
        }
    }
}

/// Check parameters that would make the control law meaningless. Invalid
/// input is rejected earlier, with a key path, by `l4slab-scenario`; reaching
/// this with bad values is a bug.
pub(crate) fn assert_params(p: &CodelParams) {
    assert!(!p.interval.is_zero(), "codel interval must be positive");
    assert!(!p.target.is_zero(), "codel target must be positive");
}

/// The control variables of one CoDel-managed queue (Linux `struct codel_vars`,
/// RFC 8289 §5.2). `fq_codel` keeps one per flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodelState {
    /// Drops (or marks) since entering the dropping state, seeded by the
    /// re-entry rule.
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    /// In the dropping state.
    dropping: bool,
    /// When the sojourn time will have been above target for a whole
    /// interval; `None` while it is below (RFC/Linux use 0 for "unset").
    first_above_time: Option<Time>,
    /// When the next drop is due while dropping (kept after leaving, for the
    /// re-entry rule).
    drop_next: Time,
    /// Sojourn time of the last packet examined (Linux `ldelay`).
    ldelay: Dur,
}

impl CodelState {
    pub fn count(&self) -> u32 {
        self.count
    }
    pub fn lastcount(&self) -> u32 {
        self.lastcount
    }
    pub fn dropping(&self) -> bool {
        self.dropping
    }
    pub fn first_above_time(&self) -> Option<Time> {
        self.first_above_time
    }
    pub fn drop_next(&self) -> Time {
        self.drop_next
    }
    pub fn ldelay(&self) -> Dur {
        self.ldelay
    }

    /// `fq_codel_drop`: "Tell codel to increase its signal strength also".
    pub(crate) fn add_count(&mut self, n: u32) {
        self.count = self.count.wrapping_add(n);
    }
}

/// Counters of the CoDel control loop (Linux `struct codel_stats`) and of the
/// `codel` qdisc. Drops and marks are also counted by reason in
/// [`QdiscStats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue, bytes, as Linux reports it
    /// ([`qdisc_pkt_len`]: 1514 for a full-size packet).
    pub maxpacket: u32,
    /// Packets CE-marked by the control law instead of dropped.
    pub ecn_mark: u64,
    /// Packets CE-marked by `ce_threshold`.
    pub ce_mark: u64,
    /// Packets dropped by the control law.
    pub drop_count: u64,
    /// Packets refused because the qdisc was at its limit.
    pub drop_overlimit: u64,
}

/// Where [`CodelState::dequeue`] takes packets from (Linux `dequeue_func`):
/// the single FIFO of `codel`, or one flow's queue in `fq_codel`.
pub(crate) trait CodelQueue {
    /// Remove the head packet, updating the owner's backlog counters.
    fn pop(&mut self) -> Option<Packet>;
    /// The backlog the "one MTU" rule compares, after the pop, in
    /// [`qdisc_pkt_len`] terms (IP bytes + 14 per packet). Linux passes
    /// `&sch->qstats.backlog`, the *whole qdisc's* backlog, in both `codel`
    /// and `fq_codel`.
    fn backlog_bytes(&self) -> u64;
}

/// RFC 8289 §5.6 `control_law`: `t + interval / sqrt(count)`.
///
/// `f64::sqrt` is correctly rounded (IEEE 754), so the result is identical on
/// every platform; the step is truncated to whole nanoseconds.
pub fn control_law(t: Time, interval: Dur, count: u32) -> Time {
    let step = interval.as_nanos() as f64 / f64::from(count.max(1)).sqrt();
    t.saturating_add(Dur::from_nanos(step as u64))
}

/// The collaborators of one [`CodelState::dequeue`] call.
pub(crate) struct Loop<'a, 'c, Q: CodelQueue> {
    pub params: &'a CodelParams,
    pub cstats: &'a mut CodelStats,
    pub qstats: &'a mut QdiscStats,
    pub queue: &'a mut Q,
    pub ctx: &'a mut QdiscCtx<'c>,
}

impl<Q: CodelQueue> Loop<'_, '_, Q> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.queue.pop()?;
        self.qstats.dequeued += 1;
        Some(p)
    }

    /// Linux `drop_func` + `stats->drop_count++`.
    fn drop(&mut self, now: Time, pkt: Packet) {
        self.cstats.drop_count += 1;
        self.ctx
            .discarded(now, pkt, DropReason::AqmDrop, self.qstats);
    }

    /// `params->ecn && INET_ECN_set_ce(skb)`: true if the packet was marked
    /// (it is ECN-capable and ECN is on) and must not be dropped.
    fn mark(&mut self, now: Time, pkt: &mut Packet) -> bool {
        if self.params.ecn && self.ctx.try_mark(now, pkt, MarkReason::Aqm) {
            self.cstats.ecn_mark += 1;
            true
        } else {
            false
        }
    }
}

impl CodelState {
    /// RFC 8289 §5.6 `dodequeue` / Linux `codel_should_drop`: examine the
    /// packet just removed (`None`: the queue is empty) and say whether it is
    /// OK to drop it.
    fn should_drop<Q: CodelQueue>(
        &mut self,
        now: Time,
        pkt: Option<&Packet>,
        lp: &mut Loop<'_, '_, Q>,
    ) -> bool {
        let Some(pkt) = pkt else {
            // "queue is empty - we can't be above TARGET"
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.saturating_since(pkt.enqueued_at);
        let len = u32::try_from(qdisc_pkt_len(pkt.len)).unwrap_or(u32::MAX);
        lp.cstats.maxpacket = lp.cstats.maxpacket.max(len);
        // RFC 8289 §5.6: `if (sojourn_time < TARGET || bytes() <= MAXPACKET)`
        if self.ldelay < lp.params.target || lp.queue.backlog_bytes() <= u64::from(lp.params.mtu) {
            // "went below - stay below for at least INTERVAL"
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                // "just went above from below. if still above at
                // first_above_time, will say it's ok to drop."
                self.first_above_time = Some(now.saturating_add(lp.params.interval));
                false
            }
            // RFC 8289 §5.6: `else if (now >= first_above_time) ok_to_drop = true`
            Some(t) => now >= t,
        }
    }

    /// RFC 8289 §5.5 `dequeue` / Linux `codel_dequeue`: take the next packet
    /// from `lp.queue`, dropping (or ECN-marking) per the control law, then
    /// apply `ce_threshold`. `None` only when the queue is empty.
    pub(crate) fn dequeue<Q: CodelQueue>(
        &mut self,
        now: Time,
        lp: &mut Loop<'_, '_, Q>,
    ) -> Option<Packet> {
        let Some(first) = lp.pop() else {
            // RFC 8289 §5.5: an empty queue is not ok_to_drop -> leave dropping.
            self.first_above_time = None;
            self.dropping = false;
            return None;
        };
        let mut pkt = Some(first);
        let ok_to_drop = self.should_drop(now, pkt.as_ref(), lp);
        let mut marked_by_law = false;
        if self.dropping {
            if !ok_to_drop {
                // "sojourn time below TARGET - leave drop state"
                self.dropping = false;
            } else {
                // "Time for the next drop. Drop current packet and dequeue
                // next. [...] A large backlog might result in drop rates so
                // high that the next drop should happen now, hence the
                // 'while' loop."
                while self.dropping && now >= self.drop_next {
                    let Some(mut p) = pkt.take() else { break };
                    self.count = self.count.wrapping_add(1);
                    if lp.mark(now, &mut p) {
                        // Linux: mark instead of drop, schedule the next signal, `goto end`.
                        self.drop_next =
                            control_law(self.drop_next, lp.params.interval, self.count);
                        marked_by_law = true;
                        pkt = Some(p);
                        break;
                    }
                    lp.drop(now, p);
                    pkt = lp.pop();
                    if !self.should_drop(now, pkt.as_ref(), lp) {
                        // "leave drop state"
                        self.dropping = false;
                    } else {
                        // RFC 8289 §5.5: `drop_next = control_law(drop_next, count)`
                        self.drop_next =
                            control_law(self.drop_next, lp.params.interval, self.count);
                    }
                }
            }
        } else if ok_to_drop {
            // Entering the dropping state (RFC 8289 §5.5 "else if (r.ok_to_drop)").
            let mut p = pkt.take().expect("examined a packet");
            if lp.mark(now, &mut p) {
                marked_by_law = true;
                pkt = Some(p);
            } else {
                lp.drop(now, p);
                pkt = lp.pop();
                self.should_drop(now, pkt.as_ref(), lp);
            }
            self.dropping = true;
            // RFC 8289 §5.5 (the Linux rule): "If min went above TARGET close
            // to when it last went below, assume that the drop rate that
            // controlled the queue on the last cycle is a good starting point":
            // `delta = count - lastcount; count = 1;
            //  if ((delta > 1) && (now - drop_next < 16 * INTERVAL)) count = delta;`
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent =
                now.saturating_since(self.drop_next) < lp.params.interval.saturating_mul(16);
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, lp.params.interval, self.count);
        }
        debug_assert!(
            !self.dropping || (self.count >= 1 && self.lastcount >= 1),
            "dropping with count {} lastcount {}",
            self.count,
            self.lastcount
        );
        let mut pkt = pkt?;
        // Linux codel_dequeue `end:`: `if (skb && codel_time_after(vars->ldelay,
        // params->ce_threshold)) ... INET_ECN_set_ce(skb) -> stats->ce_mark++`,
        // restricted by `ce_threshold_selector/mask` when set.
        if let Some(threshold) = lp.params.ce_threshold {
            let selected = lp
                .params
                .ce_threshold_selector
                .is_none_or(|s| s.matches(pkt.ecn));
            if !marked_by_law
                && self.ldelay > threshold
                && selected
                && lp.ctx.try_mark(now, &mut pkt, MarkReason::CeThreshold)
            {
                lp.cstats.ce_mark += 1;
            }
        }
        Some(pkt)
    }
}

/// `codel`'s single FIFO as a [`CodelQueue`].
impl CodelQueue for PacketFifo {
    /// sch_codel.c `dequeue_func`: `__qdisc_dequeue_head(&sch->q)`.
    fn pop(&mut self) -> Option<Packet> {
        PacketFifo::pop(self)
    }
    fn backlog_bytes(&self) -> u64 {
        self.frame_bytes()
    }
}

/// The `codel` qdisc: one FIFO with a packet limit, managed by CoDel at dequeue.
#[derive(Debug)]
pub struct Codel {
    cfg: CodelConfig,
    params: CodelParams,
    state: CodelState,
    cstats: CodelStats,
    stats: QdiscStats,
    queue: PacketFifo,
}

impl Codel {
    /// # Panics
    /// On a zero `limit`, `target` or `interval` (rejected earlier by the
    /// scenario layer, so reaching this is a bug).
    pub fn new(cfg: CodelConfig) -> Self {
        assert!(cfg.limit > 0, "codel limit must be positive");
        let params = cfg.params();
        assert_params(&params);
        Codel {
            queue: PacketFifo::with_capacity(u64::from(cfg.limit)),
            params,
            cfg,
            state: CodelState::default(),
            cstats: CodelStats::default(),
            stats: QdiscStats::default(),
        }
    }

    pub fn config(&self) -> &CodelConfig {
        &self.cfg
    }
    /// The control variables (for tests and inspection).
    pub fn state(&self) -> &CodelState {
        &self.state
    }
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }
}

impl Qdisc for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.stats.offered += 1;
        // sch_codel.c codel_qdisc_enqueue: `if (likely(qdisc_qlen(sch) < sch->limit))`
        if self.queue.len() >= self.cfg.limit {
            self.cstats.drop_overlimit += 1;
            ctx.refused(now, pkt, DropReason::Overlimit, &mut self.stats);
            return;
        }
        // codel_set_enqueue_time(skb); qdisc_enqueue_tail(skb, sch)
        let pkt = self.queue.push(now, pkt);
        ctx.admitted(now, &pkt, 0, &mut self.stats);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        let Codel {
            params,
            state,
            cstats,
            stats,
            queue,
            ..
        } = self;
        let pkt = state.dequeue(
            now,
            &mut Loop {
                params,
                cstats,
                qstats: stats,
                queue,
                ctx,
            },
        )?;
        ctx.sent(now, &pkt, 0, &mut self.stats);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        self.queue.backlog()
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// The fields of `tc -s qdisc show` for codel. `drop_next_ms` is the
    /// absolute time of the next scheduled drop (Linux prints it relative to
    /// now); `ldelay_ms` the sojourn of the last packet examined.
    fn xstats(&self) -> Vec<(&'static str, f64)> {
        let s = &self.state;
        vec![
            ("count", f64::from(s.count)),
            ("lastcount", f64::from(s.lastcount)),
            ("dropping", f64::from(u8::from(s.dropping))),
            ("drop_next_ms", s.drop_next.as_nanos() as f64 * 1e-6),
            ("ldelay_ms", s.ldelay.as_millis_f64()),
            ("maxpacket", f64::from(self.cstats.maxpacket)),
            ("ecn_mark", self.cstats.ecn_mark as f64),
            ("ce_mark", self.cstats.ce_mark as f64),
            ("drop_overlimit", self.cstats.drop_overlimit as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    //! Timelines for each RFC 8289 mechanic. Packets are 1500 B and Not-ECT
    //! unless a test says otherwise; `t` is the harness clock.
    use super::*;
    use crate::testing::Harness;
    use l4slab_core::TraceEvent;

    const MS: u64 = 1_000_000;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn codel(cfg: CodelConfig) -> Harness<Codel> {
        Harness::new(Codel::new(cfg))
    }

    fn deep() -> CodelConfig {
        CodelConfig {
            limit: 100_000,
            ..CodelConfig::default()
        }
    }

    /// Advance the harness clock to `t`.
    fn at(h: &mut Harness<Codel>, t: Time) {
        assert!(t >= h.now, "timeline goes backwards");
        h.advance(t - h.now);
    }

    /// Offer `n` packets now, with ids from `first`.
    fn burst(h: &mut Harness<Codel>, first: u64, n: u64, ecn: Ecn) {
        for id in first..first + n {
            h.offer_pkt(Packet::new(id, 1, 1500, ecn));
        }
    }

    /// Times of the traced drops, in ns.
    fn drop_times(h: &Harness<Codel>) -> Vec<u64> {
        h.tracer
            .0
            .iter()
            .filter(|(_, e)| matches!(e, TraceEvent::Dropped { .. }))
            .map(|(t, _)| t.as_nanos())
            .collect()
    }

    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        let iv = Dur::from_millis(100);
        let t0 = Time::from_nanos(7);
        let step = |c| control_law(t0, iv, c) - t0;
        assert_eq!(step(1), Dur::from_millis(100));
        assert_eq!(step(2), Dur::from_nanos(70_710_678)); // 100 ms / 1.41421356
        assert_eq!(step(3), Dur::from_nanos(57_735_026)); // 100 ms / 1.73205081
        assert_eq!(step(4), Dur::from_millis(50));
        assert_eq!(step(100), Dur::from_millis(10));
    }

    /// RFC 8289 §5.6: the first drop happens one INTERVAL after the first
    /// dequeue whose sojourn is at or above TARGET (with more than one MTU
    /// queued), provided it stays above in between.
    ///
    /// Timeline: one arrival per 1 ms (ids = arrival ms), one departure per
    /// 1.25 ms, so the j-th departure (at 1.25·j ms) has sojourn 0.25·j ms.
    /// j = 20 at t = 25 ms is the first with sojourn >= 5 ms (backlog 5
    /// packets), so `first_above_time` = 125 ms and the first drop is the
    /// departure at exactly t = 125 ms (j = 100, packet 100).
    #[test]
    fn first_drop_is_one_interval_after_sojourn_first_exceeds_target() {
        let mut h = codel(deep());
        let mut next_arrival = 0u64;
        let mut first_above_seen = None;
        for j in 0..=100u64 {
            let t = j * 1_250_000;
            while next_arrival * MS <= t {
                at(&mut h, Time::from_nanos(next_arrival * MS));
                burst(&mut h, next_arrival, 1, Ecn::NotEct);
                next_arrival += 1;
            }
            at(&mut h, Time::from_nanos(t));
            let before = h.dropped.len();
            let p = h.dequeue().expect("backlogged");
            if first_above_seen.is_none() && h.q.state().first_above_time().is_some() {
                first_above_seen = Some(t);
            }
            if j < 100 {
                assert_eq!(h.dropped.len(), before, "no drop before 125 ms (j = {j})");
            } else {
                assert_eq!(h.dropped_ids(), [100], "packet 100 is the first drop");
                assert_eq!(p.id, 101);
            }
        }
        assert_eq!(first_above_seen, Some(25 * MS));
        assert_eq!(drop_times(&h), [125 * MS]);
        let s = h.q.state();
        assert!(s.dropping());
        assert_eq!((s.count(), s.lastcount()), (1, 1));
        assert_eq!(s.drop_next(), ms(225));
        h.check_accounting();
    }

    /// A standing queue (dequeue every 1 ms from a deep backlog, so sojourn
    /// only grows): drops at 110 ms, then every interval/√count after the
    /// previous *scheduled* time: +100, +70.71, +57.74, +50, +44.72 ms.
    /// Departures happen on a 1 ms grid, so each drop is at the first
    /// millisecond at or after `drop_next`.
    #[test]
    fn drop_schedule_is_interval_over_sqrt_count() {
        let mut h = codel(deep());
        burst(&mut h, 0, 2000, Ecn::NotEct);
        at(&mut h, ms(10));
        h.dequeue(); // sojourn 10 ms: arms first_above_time = 110 ms
        assert_eq!(h.q.state().first_above_time(), Some(ms(110)));
        let mut next = Vec::new();
        for t in 11..=500 {
            at(&mut h, ms(t));
            let before = h.dropped.len();
            h.dequeue();
            if h.dropped.len() > before {
                next.push(h.q.state().drop_next().as_nanos());
            }
        }
        assert_eq!(
            drop_times(&h),
            [110, 210, 281, 339, 389, 434, 474].map(|t| t * MS)
        );
        // drop_next after each drop: 110 ms + 100, then += 100/√2, 100/√3, ...
        let steps: Vec<u64> = std::iter::once(next[0] - 110 * MS)
            .chain(next.windows(2).map(|w| w[1] - w[0]))
            .collect();
        assert_eq!(
            steps,
            [
                100_000_000,
                70_710_678,
                57_735_026,
                50_000_000,
                44_721_359,
                40_824_829,
                37_796_447
            ]
        );
        assert_eq!(h.q.state().count(), 7);
        h.check_accounting();
    }

    /// RFC 8289 §5.5: "sojourn time below TARGET - leave drop state".
    #[test]
    fn leaves_dropping_when_sojourn_falls_below_target() {
        let mut h = codel(deep());
        burst(&mut h, 0, 10, Ecn::NotEct); // t = 0: ids 0..10
        at(&mut h, ms(10));
        h.dequeue(); // 0: arms
        at(&mut h, ms(110));
        assert_eq!(h.dequeue().map(|p| p.id), Some(2)); // 1 dropped: dropping
        assert!(h.q.state().dropping());
        at(&mut h, ms(150));
        burst(&mut h, 10, 10, Ecn::NotEct); // ids 10..20 at 150 ms
        at(&mut h, ms(151));
        for id in 3..10 {
            // Old packets (sojourn 151 ms) before drop_next = 210 ms: kept.
            assert_eq!(h.dequeue().map(|p| p.id), Some(id));
            assert!(h.q.state().dropping());
        }
        // Packet 10 waited 1 ms < 5 ms: leave the dropping state.
        assert_eq!(h.dequeue().map(|p| p.id), Some(10));
        assert!(!h.q.state().dropping());
        assert_eq!(h.q.state().first_above_time(), None);
        assert_eq!(h.q.state().count(), 1, "count is kept for re-entry");
        assert_eq!(h.dropped_ids(), [1]);
        h.check_accounting();
    }

    /// Drive a standing queue: `n` packets at `t0`, then one arrival and one
    /// departure per millisecond until `count` reaches `until_count`; then
    /// drain the queue in one instant (leaving the dropping state through the
    /// one-MTU rule). Returns the next free packet id.
    fn episode(h: &mut Harness<Codel>, t0: Time, first_id: u64, until_count: u32) -> u64 {
        at(h, t0);
        burst(h, first_id, 20, Ecn::NotEct);
        let mut id = first_id + 20;
        let mut t = t0;
        while !(h.q.state().dropping() && h.q.state().count() >= until_count) {
            t += Dur::from_millis(1);
            at(h, t);
            burst(h, id, 1, Ecn::NotEct);
            id += 1;
            h.dequeue();
            assert!(
                t < t0 + Dur::from_secs(2),
                "episode never reached count {until_count}"
            );
        }
        while h.dequeue().is_some() {}
        assert!(!h.q.state().dropping());
        id
    }

    /// RFC 8289 §5.5 / Linux: re-entering soon after the last episode starts
    /// from `count - lastcount` drops' worth of signal.
    #[test]
    fn reentry_soon_after_resumes_with_count_minus_lastcount() {
        let mut h = codel(deep());
        let id = episode(&mut h, ms(0), 0, 4); // count 4, lastcount 1
        assert_eq!((h.q.state().count(), h.q.state().lastcount()), (4, 1));
        let last_drop_next = h.q.state().drop_next();
        let t1 = h.now + Dur::from_millis(50);
        episode(&mut h, t1, id, 1);
        let s = h.q.state();
        let entered = Time::from_nanos(*drop_times(&h).last().unwrap());
        assert!(entered.saturating_since(last_drop_next) < Dur::from_millis(1600));
        assert_eq!((s.count(), s.lastcount()), (3, 3), "delta = 4 - 1 = 3");
        assert_eq!(s.drop_next(), entered + Dur::from_nanos(57_735_026));
        h.check_accounting();
    }

    #[test]
    fn reentry_long_after_restarts_at_count_one() {
        let mut h = codel(deep());
        let id = episode(&mut h, ms(0), 0, 4);
        let last_drop_next = h.q.state().drop_next();
        // Re-enter more than 16 intervals after drop_next.
        let t1 = last_drop_next + Dur::from_millis(1700);
        episode(&mut h, t1, id, 1);
        let s = h.q.state();
        assert_eq!((s.count(), s.lastcount()), (1, 1));
        h.check_accounting();
    }

    #[test]
    fn reentry_after_a_single_extra_drop_restarts_at_count_one() {
        let mut h = codel(deep());
        let id = episode(&mut h, ms(0), 0, 2); // delta = 2 - 1 = 1: not > 1
        let t1 = h.now + Dur::from_millis(50);
        episode(&mut h, t1, id, 1);
        assert_eq!(h.q.state().count(), 1);
        h.check_accounting();
    }

    /// RFC 8289 §5.6 `bytes() <= MAXPACKET` / Linux `*backlog <= params->mtu`:
    /// with at most one MTU queued behind the head, CoDel never drops, however
    /// long packets wait.
    #[test]
    fn never_drops_with_at_most_one_mtu_queued() {
        let mut h = codel(deep());
        burst(&mut h, 0, 1, Ecn::NotEct);
        for k in 1..100u64 {
            at(&mut h, ms(200 * k));
            burst(&mut h, k, 1, Ecn::NotEct); // two queued, head waited 200 ms
            assert_eq!(h.dequeue().map(|p| p.id), Some(k - 1));
            assert_eq!(h.q.state().first_above_time(), None);
        }
        assert!(h.dropped.is_empty());
        // With two packets behind the head the rule no longer holds: armed.
        burst(&mut h, 1000, 2, Ecn::NotEct);
        h.advance(Dur::from_millis(200));
        h.dequeue();
        assert!(h.q.state().first_above_time().is_some());
        h.check_accounting();
    }

    /// Linux `ecn`: the control law marks ECT packets instead of dropping them,
    /// and still drops Not-ECT ones.
    #[test]
    fn ecn_marks_ect_and_still_drops_not_ect() {
        let mut h = codel(CodelConfig {
            ecn: true,
            ..deep()
        });
        burst(&mut h, 0, 2, Ecn::Ect0); // ids 0, 1
        burst(&mut h, 2, 20, Ecn::NotEct); // ids 2..22
        at(&mut h, ms(10));
        h.dequeue(); // 0: arms
        at(&mut h, ms(110));
        let p = h.dequeue().unwrap();
        assert_eq!((p.id, p.ecn), (1, Ecn::Ce), "entering: marked, not dropped");
        assert!(h.q.state().dropping());
        assert_eq!(h.q.state().drop_next(), ms(210));
        at(&mut h, ms(210));
        let p = h.dequeue().unwrap();
        assert_eq!((p.id, p.ecn), (3, Ecn::NotEct), "Not-ECT 2 dropped");
        assert_eq!(h.dropped_ids(), [2]);
        assert_eq!(h.marks(MarkReason::Aqm), 1);
        assert_eq!(h.drops(DropReason::AqmDrop), 1);
        assert_eq!(h.q.codel_stats().ecn_mark, 1);
        assert!(h.tracer.0.iter().any(|(t, e)| *t == ms(110)
            && matches!(
                e,
                TraceEvent::Marked {
                    pkt: Packet { id: 1, .. },
                    reason: MarkReason::Aqm,
                    ..
                }
            )));
        h.check_accounting();
    }

    /// Linux `ce_threshold`: ECT packets whose sojourn is strictly above the
    /// threshold are marked (`MarkReason::CeThreshold`), independent of the
    /// control law (which here never acts: sojourn < target).
    #[test]
    fn ce_threshold_marks_ect_above_threshold_only() {
        let mut h = codel(CodelConfig {
            ce_threshold: Some(Dur::from_millis(1)),
            ..deep()
        });
        h.offer_pkt(Packet::new(0, 1, 1500, Ecn::Ect0));
        h.offer_pkt(Packet::new(1, 1, 1500, Ecn::Ect1));
        h.offer_pkt(Packet::new(2, 1, 1500, Ecn::NotEct));
        h.offer_pkt(Packet::new(3, 1, 1500, Ecn::Ect0));
        at(&mut h, ms(1));
        assert_eq!(
            h.dequeue().unwrap().ecn,
            Ecn::Ect0,
            "sojourn = threshold: not above"
        );
        at(&mut h, ms(2));
        assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce);
        assert_eq!(
            h.dequeue().unwrap().ecn,
            Ecn::NotEct,
            "Not-ECT: neither marked nor dropped"
        );
        assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce);
        assert!(h.dropped.is_empty());
        assert_eq!(h.marks(MarkReason::CeThreshold), 2);
        assert_eq!(h.q.codel_stats().ce_mark, 2);
        assert_eq!(h.q.state().count(), 0, "control law untouched");
        h.check_accounting();
    }

    /// ce_threshold also marks while the control law is dropping, and a packet
    /// marked by the control law is not counted twice.
    #[test]
    fn ce_threshold_is_independent_of_the_control_law() {
        let mut h = codel(CodelConfig {
            ce_threshold: Some(Dur::from_millis(1)),
            ..deep()
        });
        burst(&mut h, 0, 1, Ecn::NotEct);
        burst(&mut h, 1, 1, Ecn::NotEct);
        burst(&mut h, 2, 20, Ecn::Ect0);
        at(&mut h, ms(10));
        h.dequeue(); // 0 arms (Not-ECT: no CE mark)
        at(&mut h, ms(110));
        // ecn off: 1 dropped by the law, 2 returned and CE-marked by ce_threshold.
        let p = h.dequeue().unwrap();
        assert_eq!((p.id, p.ecn), (2, Ecn::Ce));
        assert_eq!(h.dropped_ids(), [1]);
        assert_eq!(h.marks(MarkReason::CeThreshold), 1);
        assert_eq!(h.marks(MarkReason::Aqm), 0);

        let mut h = codel(CodelConfig {
            ce_threshold: Some(Dur::from_millis(1)),
            ecn: true,
            ..deep()
        });
        burst(&mut h, 0, 20, Ecn::Ect0);
        at(&mut h, ms(10));
        assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce); // ce_threshold
        at(&mut h, ms(110));
        assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce); // control law, not twice
        assert_eq!(h.marks(MarkReason::CeThreshold), 1);
        assert_eq!(h.marks(MarkReason::Aqm), 1);
        assert_eq!(h.total_marks(), 2);
        h.check_accounting();
    }

    #[test]
    fn tail_drops_at_the_packet_limit() {
        let mut h = codel(CodelConfig {
            limit: 3,
            ..CodelConfig::default()
        });
        burst(&mut h, 0, 5, Ecn::NotEct);
        assert_eq!(h.dropped_ids(), [3, 4]);
        assert_eq!(h.drops(DropReason::Overlimit), 2);
        assert_eq!(h.q.codel_stats().drop_overlimit, 2);
        assert_eq!(h.drain_ids(), [0, 1, 2]);
        h.check_accounting();
    }

    #[test]
    fn an_empty_queue_leaves_the_dropping_state() {
        let mut h = codel(deep());
        burst(&mut h, 0, 10, Ecn::NotEct);
        at(&mut h, ms(10));
        h.dequeue();
        at(&mut h, ms(110));
        h.dequeue();
        assert!(h.q.state().dropping());
        while h.dequeue().is_some() {}
        assert!(h.dequeue().is_none());
        assert!(!h.q.state().dropping());
        assert_eq!(h.q.backlog(), Backlog::default());
        h.check_accounting();
    }

    #[test]
    fn xstats_report_the_control_variables() {
        let mut h = codel(deep());
        burst(&mut h, 0, 10, Ecn::NotEct);
        at(&mut h, ms(10));
        h.dequeue();
        at(&mut h, ms(110));
        h.dequeue();
        let x: std::collections::BTreeMap<_, _> = h.q.xstats().into_iter().collect();
        assert_eq!(x["count"], 1.0);
        assert_eq!(x["lastcount"], 1.0);
        assert_eq!(x["dropping"], 1.0);
        assert_eq!(x["drop_next_ms"], 210.0);
        assert_eq!(x["maxpacket"], 1514.0, "qdisc_pkt_len of a 1500 B packet");
        assert_eq!(x["ldelay_ms"], 110.0);
        assert_eq!(x["drop_overlimit"], 0.0);
        let names: Vec<_> = h.q.xstats().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            [
                "count",
                "lastcount",
                "dropping",
                "drop_next_ms",
                "ldelay_ms",
                "maxpacket",
                "ecn_mark",
                "ce_mark",
                "drop_overlimit"
            ]
        );
    }

    #[test]
    fn ect1_selector_matches_only_ect1() {
        let s = CeSelector::ECT1;
        assert!(s.matches(Ecn::Ect1));
        assert!(!s.matches(Ecn::Ect0));
        assert!(!s.matches(Ecn::Ce));
        assert!(!s.matches(Ecn::NotEct));
        // `0x1/0x1`: the low ECN bit, i.e. ECT(1) or CE.
        let low = CeSelector { value: 1, mask: 1 };
        assert!(low.matches(Ecn::Ect1) && low.matches(Ecn::Ce) && !low.matches(Ecn::Ect0));
    }
}
