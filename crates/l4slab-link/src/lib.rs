//! A unidirectional link: egress qdisc -> serializer -> loss -> propagation.
//!
//! [`Link`] is one concrete struct; its variation points are small traits:
//! how fast bits leave ([`RateModel`]: [`ConstantRate`], a mahimahi trace
//! [`TraceRate`]; Wi-Fi later) and whether the wire loses a packet ([`LossModel`]: [`NoLoss`],
//! [`Bernoulli`], [`GilbertElliott`]). Propagation is a fixed one-way delay.
//! An optional [`EcnRewrite`] (bleach, re-mark, drop ECT, CE-mark all) is
//! applied to each packet before the queue ([`Link::with_ecn_rewrite`]).
//! With [`Link::with_loss_ecn`] (netem's `loss ... ecn`) a packet the loss
//! model chooses is CE-marked instead of dropped if it is ECN-capable
//! ([`MarkReason::LinkMark`]); a Not-ECT one is still dropped.
//!
//! **Sans-IO and O(1) per event.** The link never reads a clock and keeps no
//! queue of packets in propagation: [`Link::on_tx_done`] hands the surviving
//! packet back with its arrival time at the far end and the caller (the
//! simulator's event queue, or the emulator's timer wheel) schedules the
//! arrival itself. The caller's protocol:
//!
//! 1. [`Link::enqueue`] at each arrival from upstream;
//! 2. call [`Link::on_tx_done`] at [`Link::tx_done_at`] and
//!    [`Link::on_timer`] at [`Link::next_timer`];
//! 3. after *every* call, re-read `tx_done_at()` and `next_timer()`;
//! 4. drain `ctx.dropped` after every call (qdisc drops and [`DropReason::LinkLoss`]).
//!
//! **Accounting.** Every offered packet ends exactly once: dropped by the ECN
//! rewrite (`EcnBlackhole`, before the queue), dropped by the qdisc (with the
//! qdisc's reason), lost on the wire (`LinkLoss`), or returned by
//! `on_tx_done`; until then it is in the qdisc backlog or on the wire.
//! [`LinkStats`] counts each outcome; the property test in
//! `tests/conservation.rs` checks the identity after every call. A packet
//! the loss model chose and the link CE-marked instead (`loss_ecn`) is
//! delivered: `loss_marked_packets <= delivered_packets`, and the loss
//! model's choices are `lost_packets + loss_marked_packets`.
//!
//! **Randomness.** The link owns its loss stream (`loss_rng`, given at
//! construction), separate from the qdisc's `ctx.rng`, so changing the AQM
//! never changes which packets the wire loses (DESIGN.md §4.2). The loss
//! model is asked exactly once per serialized packet whether or not
//! `loss_ecn` is set, so the option changes what happens to a chosen packet,
//! never which packets are chosen or how many numbers the stream yields.
//!
//! **Utilization.** The link is busy from the moment it starts serializing a
//! packet until the packet's last bit leaves; [`LinkStats::busy_time`] sums
//! those intervals for completed packets and [`Link::busy_time_at`] adds the
//! part of the current one, so `busy_time_at(t) / t` is the utilization.
//!
//! Deviations from a Linux bottleneck (netem/tbf + qdisc): serialization
//! starts the instant the qdisc yields a packet (no driver ring, no BQL, no
//! TSO/GSO bursts), no layer-2 overhead is added to the rate, and loss is
//! applied after serialization (see `docs/models/loss.md`). So with
//! `loss_ecn` a packet is CE-marked as it leaves the wire, after the qdisc
//! classified it by its original codepoint (netem marks at its own enqueue),
//! and the mark counts as a mark (`link_mark`), where netem's `qstats` count
//! it as a drop.
//!
//! A scenario's link table (`[bottleneck]`, a host's `access`) is declared
//! in [`config`]: its keys, kinds, defaults and docs.

pub mod config;
pub mod delay_line;
pub mod ecn;
pub mod loss;
pub mod rate;
pub mod trace;

use l4slab_core::{DropReason, Dur, MarkReason, Packet, SimRng, Time};
use l4slab_qdisc::{Qdisc, QdiscCtx};

pub use delay_line::DelayLine;
pub use ecn::{EcnRewrite, Rewritten};
pub use loss::{Bernoulli, GeState, GilbertElliott, LossModel, NoLoss};
pub use rate::{ConstantRate, RateModel, StepRate};
pub use trace::{Trace, TraceError, TraceRate};

/// Bad link parameters. Messages name the parameter; the scenario layer
/// prefixes the key path (`links.bottleneck.loss.p`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinkError {
    #[error("rate: a link needs a positive rate")]
    ZeroRate,
    #[error("{param}: {value} is not a probability (expected 0 <= {param} <= 1)")]
    NotAProbability { param: &'static str, value: f64 },
}

/// Counters of a [`Link`] (the qdisc keeps its own [`l4slab_qdisc::QdiscStats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets passed to [`Link::enqueue`].
    pub offered_packets: u64,
    pub offered_bytes: u64,
    /// Packets whose serialization finished (delivered or lost on the wire).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Serialized packets lost by the [`LossModel`] ([`DropReason::LinkLoss`]).
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// Serialized packets the [`LossModel`] chose that the link CE-marked
    /// instead of dropping ([`Link::with_loss_ecn`], [`MarkReason::LinkMark`]);
    /// they are also counted as delivered.
    pub loss_marked_packets: u64,
    pub loss_marked_bytes: u64,
    /// Serialized packets handed back for delivery at the far end.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Total time spent serializing completed packets.
    pub busy_time: Dur,
    /// Packets whose IP-ECN field the [`EcnRewrite`] changed (bleached,
    /// re-marked or CE-marked).
    pub ecn_rewritten_packets: u64,
    /// Packets the [`EcnRewrite`] dropped ([`DropReason::EcnBlackhole`]),
    /// before the queue.
    pub ecn_dropped_packets: u64,
    pub ecn_dropped_bytes: u64,
    /// On a shared medium ([`Link::for_air`]): packets dropped after too
    /// many failed attempts ([`DropReason::WifiRetries`]).
    pub retry_dropped_packets: u64,
    pub retry_dropped_bytes: u64,
}

/// The packet being serialized.
#[derive(Clone, Copy, Debug)]
struct OnWire {
    start: Time,
    done: Time,
    pkt: Packet,
}

/// Egress qdisc + rate model + loss model + one-way propagation delay.
#[derive(Debug)]
pub struct Link {
    qdisc: Box<dyn Qdisc>,
    rate: Box<dyn RateModel>,
    loss: Box<dyn LossModel>,
    loss_rng: SimRng,
    /// netem's `ecn` flag for `loss`: CE-mark a chosen ECN-capable packet.
    loss_ecn: bool,
    delay: Dur,
    ecn_rewrite: EcnRewrite,
    /// Windows `[start, end)` in which the wire is down ([`Link::with_outages`]).
    outages: Vec<(Time, Time)>,
    on_wire: Option<OnWire>,
    /// A queue of a shared medium ([`Link::for_air`]): packets taken by the
    /// medium and not yet resolved.
    air: Option<u64>,
    stats: LinkStats,
}

/// The rate model of a link whose medium decides when packets leave
/// ([`Link::for_air`]): it is never asked.
#[derive(Clone, Copy, Debug)]
pub struct SharedMedium;

impl RateModel for SharedMedium {
    fn tx_done(&mut self, _: Time, _: u32) -> Time {
        unreachable!("a queue of a shared medium never serializes by itself")
    }
}

impl Link {
    /// `loss_rng` is the link's own loss stream, e.g.
    /// `SimRng::derive(seed, "link/bottleneck/loss")`.
    pub fn new(
        qdisc: Box<dyn Qdisc>,
        rate: Box<dyn RateModel>,
        loss: Box<dyn LossModel>,
        loss_rng: SimRng,
        delay: Dur,
    ) -> Self {
        Link {
            qdisc,
            rate,
            loss,
            loss_rng,
            loss_ecn: false,
            delay,
            ecn_rewrite: EcnRewrite::None,
            outages: Vec::new(),
            on_wire: None,
            air: None,
            stats: LinkStats::default(),
        }
    }

    /// A queue of a shared medium (a Wi-Fi cell): the qdisc, the ECN path
    /// rewrite and a propagation `delay` after the medium, but no
    /// serializer of its own. The medium takes packets with
    /// [`Link::take_for_air`] and reports each one's fate with
    /// [`Link::air_delivered`] or [`Link::air_dropped`]; loss on the air is
    /// the medium's business (retries), so the link has no loss model.
    pub fn for_air(qdisc: Box<dyn Qdisc>, delay: Dur) -> Self {
        let mut link = Link::new(
            qdisc,
            Box::new(SharedMedium),
            Box::new(NoLoss),
            SimRng::derive(0, "unused"),
            delay,
        );
        link.air = Some(0);
        link
    }

    /// Whether this is a queue of a shared medium ([`Link::for_air`]).
    pub fn is_air(&self) -> bool {
        self.air.is_some()
    }

    /// Packets the medium took and has not resolved (0 for other links).
    pub fn in_air(&self) -> u64 {
        self.air.unwrap_or(0)
    }

    /// The medium takes the next packet from the qdisc at `now`.
    pub fn take_for_air(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        let air = self
            .air
            .as_mut()
            .expect("take_for_air on a link with its own serializer");
        let pkt = self.qdisc.dequeue(now, ctx)?;
        *air += 1;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += u64::from(pkt.len);
        Some(pkt)
    }

    /// A packet the medium took reached the far side at `now`: it arrives
    /// at the end of the link `delay` later.
    pub fn air_delivered(&mut self, now: Time, pkt: Packet) -> (Time, Packet) {
        let air = self
            .air
            .as_mut()
            .expect("air_delivered on a link with its own serializer");
        *air -= 1;
        self.stats.delivered_packets += 1;
        self.stats.delivered_bytes += u64::from(pkt.len);
        (now + self.delay, pkt)
    }

    /// A packet the medium took reached the far side at `now` while its
    /// station is out of the cell (an outage window, [`Link::with_outages`]):
    /// nobody there takes it, it is lost ([`DropReason::LinkLoss`]).
    pub fn air_lost(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        let air = self
            .air
            .as_mut()
            .expect("air_lost on a link with its own serializer");
        *air -= 1;
        self.stats.lost_packets += 1;
        self.stats.lost_bytes += u64::from(pkt.len);
        ctx.drop_packet(now, pkt, DropReason::LinkLoss);
    }

    /// A packet the medium took was dropped at `now` (retry limit).
    pub fn air_dropped(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        let air = self
            .air
            .as_mut()
            .expect("air_dropped on a link with its own serializer");
        *air -= 1;
        self.stats.retry_dropped_packets += 1;
        self.stats.retry_dropped_bytes += u64::from(pkt.len);
        ctx.drop_packet(now, pkt, DropReason::WifiRetries);
    }

    /// Airtime spent on this queue's packets (its busy time).
    pub fn add_airtime(&mut self, d: Dur) {
        self.stats.busy_time += d;
    }

    /// Rewrite the IP-ECN field of the packets offered to this link (before
    /// the queue; see [`ecn`]).
    pub fn with_ecn_rewrite(mut self, rewrite: EcnRewrite) -> Self {
        self.ecn_rewrite = rewrite;
        self
    }

    pub fn ecn_rewrite(&self) -> EcnRewrite {
        self.ecn_rewrite
    }

    /// netem's `loss ... ecn`: a packet the [`LossModel`] chooses is CE-marked
    /// through the context ([`MarkReason::LinkMark`]) and delivered if it is
    /// ECN-capable (ECT(0), ECT(1) or already CE), and dropped
    /// ([`DropReason::LinkLoss`]) if it is Not-ECT. Off by default: every
    /// chosen packet is dropped. Either way the loss model draws the same
    /// numbers for the same packets.
    pub fn with_loss_ecn(mut self, ecn: bool) -> Self {
        self.loss_ecn = ecn;
        self
    }

    pub fn loss_ecn(&self) -> bool {
        self.loss_ecn
    }

    /// The wire is down in each window `[start, end)` (sorted, disjoint):
    /// a packet that finishes serializing then is lost
    /// ([`DropReason::LinkLoss`], counted in `lost_packets`), whatever the
    /// loss model says (it still draws, so its stream is the same with or
    /// without outages). A path that fails at set times (an access point
    /// vanishing, a radio losing coverage; docs/models/racing.md).
    /// On a queue of a shared medium ([`Link::for_air`]) the windows are
    /// its station's absences from the cell: a packet offered then is
    /// dropped at once, and one the medium delivers then is lost
    /// ([`Link::air_lost`]).
    pub fn with_outages(mut self, outages: Vec<(Time, Time)>) -> Self {
        debug_assert!(outages.windows(2).all(|w| w[0].1 <= w[1].0));
        self.outages = outages;
        self
    }

    /// Whether the wire is down at `now` (in an outage window).
    pub fn is_down(&self, now: Time) -> bool {
        self.outages.iter().any(|&(s, e)| s <= now && now < e)
    }

    /// Enqueue `pkt` at `now`; if the transmitter is idle, start serializing.
    /// Drops (the arrival or, for head drop, another packet) go through `ctx`.
    pub fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        // A station out of its cell: Linux turns the carrier off
        // (mac80211 `ieee80211_set_disassoc` -> `netif_carrier_off`), and
        // `dev_deactivate` swaps in `noop_qdisc`, whose `noop_enqueue`
        // drops every packet offered; the AP drops what it holds for a
        // station it no longer knows. Lost on the way (`lost_packets`),
        // never offered to the queue.
        if self.air.is_some() && !self.outages.is_empty() && self.is_down(now) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += u64::from(pkt.len);
            ctx.drop_packet(now, pkt, DropReason::LinkLoss);
            return;
        }
        self.stats.offered_packets += 1;
        self.stats.offered_bytes += u64::from(pkt.len);
        match self.ecn_rewrite.apply(pkt.ecn) {
            Rewritten::Keep(e) => {
                if e != pkt.ecn {
                    self.stats.ecn_rewritten_packets += 1;
                    pkt.ecn = e;
                }
            }
            Rewritten::Drop => {
                self.stats.ecn_dropped_packets += 1;
                self.stats.ecn_dropped_bytes += u64::from(pkt.len);
                ctx.drop_packet(now, pkt, DropReason::EcnBlackhole);
                return;
            }
        }
        self.qdisc.enqueue(now, pkt, ctx);
        self.start_next(now, ctx);
    }

    /// When the packet now being serialized finishes, if any. The caller
    /// schedules [`Link::on_tx_done`] then.
    pub fn tx_done_at(&self) -> Option<Time> {
        self.on_wire.map(|w| w.done)
    }

    /// Finish the current serialization at `now` (= [`Link::tx_done_at`]).
    /// Applies the loss model: a lost packet is dropped through `ctx` with
    /// [`DropReason::LinkLoss`] and `None` is returned (with
    /// [`Link::with_loss_ecn`], an ECN-capable one is CE-marked through `ctx`
    /// instead and survives); a surviving one is returned with its arrival
    /// time at the far end, `now + delay`. Then the next packet is dequeued
    /// and starts serializing.
    ///
    /// # Panics
    /// If nothing is being serialized or `now` is before it finishes: both
    /// mean the caller's event bookkeeping is wrong.
    pub fn on_tx_done(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<(Time, Packet)> {
        let w = self
            .on_wire
            .take()
            .expect("Link::on_tx_done with nothing being serialized");
        assert!(
            now >= w.done,
            "Link::on_tx_done at {now} before the packet finishes at {}",
            w.done
        );
        let len = u64::from(w.pkt.len);
        self.stats.busy_time += w.done - w.start;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += len;
        let mut pkt = w.pkt;
        // One draw decision per serialized packet, whatever `loss_ecn` says:
        // the option must not move the stream (seeds keep their losses).
        let chosen = self.loss.is_lost(&mut self.loss_rng);
        // An outage loses the packet whatever the loss model chose.
        let down = !self.outages.is_empty() && self.is_down(now);
        let chosen = chosen || down;
        // netem_enqueue: `if (loss_event(q)) { if (q->ecn && INET_ECN_set_ce(skb))
        // qdisc_qstats_drop(sch); /* mark packet */ else --count; }` --
        // INET_ECN_set_ce succeeds for ECT(0), ECT(1) and CE, fails for Not-ECT,
        // exactly as `try_mark` does.
        let marked =
            chosen && !down && self.loss_ecn && ctx.try_mark(now, &mut pkt, MarkReason::LinkMark);
        let out = if chosen && !marked {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += len;
            ctx.drop_packet(now, pkt, DropReason::LinkLoss);
            None
        } else {
            if marked {
                self.stats.loss_marked_packets += 1;
                self.stats.loss_marked_bytes += len;
            }
            self.stats.delivered_packets += 1;
            self.stats.delivered_bytes += len;
            Some((now + self.delay, pkt))
        };
        self.start_next(now, ctx);
        out
    }

    /// Earliest time the qdisc wants [`Link::on_timer`] (e.g. PI2's `tupdate`).
    pub fn next_timer(&self) -> Option<Time> {
        self.qdisc.next_timer()
    }

    /// Forward a qdisc timer; if the transmitter is idle afterwards and the
    /// qdisc now yields a packet, start serializing it.
    pub fn on_timer(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) {
        self.qdisc.on_timer(now, ctx);
        self.start_next(now, ctx);
    }

    pub fn qdisc(&self) -> &dyn Qdisc {
        self.qdisc.as_ref()
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Numbers drawn from the link's loss stream so far ([`SimRng::draws`]).
    pub fn random_draws(&self) -> u64 {
        self.loss_rng.draws()
    }

    pub fn delay(&self) -> Dur {
        self.delay
    }

    pub fn rate_model(&self) -> &dyn RateModel {
        self.rate.as_ref()
    }

    pub fn loss_model(&self) -> &dyn LossModel {
        self.loss.as_ref()
    }

    /// The packet being serialized, if any.
    pub fn in_transmission(&self) -> Option<&Packet> {
        self.on_wire.as_ref().map(|w| &w.pkt)
    }

    /// Busy time up to `now`, including the elapsed part of the packet being
    /// serialized. `busy_time_at(now) / (now - start)` is the utilization.
    pub fn busy_time_at(&self, now: Time) -> Dur {
        let partial = self
            .on_wire
            .map_or(Dur::ZERO, |w| now.min(w.done).saturating_since(w.start));
        self.stats.busy_time + partial
    }

    /// If idle, take the next packet from the qdisc and put it on the wire.
    fn start_next(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) {
        if self.on_wire.is_some() || self.air.is_some() {
            return;
        }
        if let Some(pkt) = self.qdisc.dequeue(now, ctx) {
            let done = self.rate.tx_done(now, pkt.len);
            assert!(done >= now, "rate model finished before it started");
            self.on_wire = Some(OnWire {
                start: now,
                done,
                pkt,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use l4slab_core::{Ecn, MarkReason, Rate, TraceEvent, VecTracer};
    use l4slab_qdisc::{Backlog, Fifo, FifoConfig, QdiscStats};

    struct Env {
        rng: SimRng,
        tracer: VecTracer,
        dropped: Vec<(Packet, DropReason)>,
    }

    impl Env {
        fn new() -> Self {
            Env {
                rng: SimRng::derive(1, "qdisc"),
                tracer: VecTracer::default(),
                dropped: Vec::new(),
            }
        }
        fn ctx(&mut self) -> QdiscCtx<'_> {
            QdiscCtx {
                queue: 3,
                rng: &mut self.rng,
                tracer: &mut self.tracer,
                dropped: &mut self.dropped,
            }
        }
    }

    fn link(q: Box<dyn Qdisc>, mbps: u64, loss: Box<dyn LossModel>, delay_ms: u64) -> Link {
        Link::new(
            q,
            Box::new(ConstantRate::new(Rate::from_mbps(mbps)).unwrap()),
            loss,
            SimRng::derive(1, "link/test/loss"),
            Dur::from_millis(delay_ms),
        )
    }

    fn fifo() -> Box<dyn Qdisc> {
        Box::new(Fifo::new(FifoConfig::default()))
    }

    fn pkt(id: u64, len: u32) -> Packet {
        Packet::new(id, 1, len, Ecn::NotEct)
    }

    /// Run the link's own events until it is idle; `(arrival ns, id)` pairs.
    fn drain(l: &mut Link, env: &mut Env) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.tx_done_at() {
            if let Some((at, p)) = l.on_tx_done(t, &mut env.ctx()) {
                out.push((at.as_nanos(), p.id));
            }
        }
        out
    }

    #[test]
    fn back_to_back_packets_are_serialized_then_delayed() {
        // 1500 B at 12 Mbit/s = 1 ms each; 10 ms propagation.
        let mut l = link(fifo(), 12, Box::new(NoLoss), 10);
        let mut env = Env::new();
        for id in 0..3 {
            l.enqueue(Time::ZERO, pkt(id, 1500), &mut env.ctx());
        }
        assert_eq!(l.tx_done_at(), Some(Time::from_millis(1)));
        assert_eq!(l.qdisc().backlog().packets, 2);
        assert_eq!(
            drain(&mut l, &mut env),
            [(11_000_000, 0), (12_000_000, 1), (13_000_000, 2)]
        );
        assert_eq!(l.tx_done_at(), None);
        assert_eq!(l.stats().busy_time, Dur::from_millis(3));
        assert_eq!(l.stats().delivered_bytes, 4500);
    }

    #[test]
    fn an_idle_link_starts_at_once_and_idles_between_packets() {
        let mut l = link(fifo(), 12, Box::new(NoLoss), 10);
        let mut env = Env::new();
        l.enqueue(Time::from_millis(5), pkt(0, 1500), &mut env.ctx());
        assert_eq!(l.tx_done_at(), Some(Time::from_millis(6)));
        let got = l.on_tx_done(Time::from_millis(6), &mut env.ctx());
        assert_eq!(
            got.map(|(t, p)| (t, p.id)),
            Some((Time::from_millis(16), 0))
        );
        // Idle for 4 ms, then a 750 B packet: 0.5 ms.
        l.enqueue(Time::from_millis(10), pkt(1, 750), &mut env.ctx());
        assert_eq!(l.tx_done_at(), Some(Time::from_micros(10_500)));
        // Utilization over [0, 10.25 ms]: 1 ms + 0.25 ms busy.
        assert_eq!(
            l.busy_time_at(Time::from_micros(10_250)),
            Dur::from_micros(1_250)
        );
        assert_eq!(l.in_transmission().map(|p| p.id), Some(1));
    }

    #[test]
    fn an_outage_loses_what_finishes_inside_its_window_only() {
        // 1 ms per packet; the wire is down in [2 ms, 4 ms).
        let mut l = link(fifo(), 12, Box::new(NoLoss), 10)
            .with_outages(vec![(Time::from_millis(2), Time::from_millis(4))]);
        let mut env = Env::new();
        for id in 0..5 {
            l.enqueue(Time::ZERO, pkt(id, 1500), &mut env.ctx());
        }
        // Packets done at 1, 2, 3, 4, 5 ms: those done at 2 and 3 ms are lost.
        assert_eq!(
            drain(&mut l, &mut env),
            [(11_000_000, 0), (14_000_000, 3), (15_000_000, 4)]
        );
        let lost: Vec<_> = env.dropped.iter().map(|(p, r)| (p.id, *r)).collect();
        assert_eq!(lost, [(1, DropReason::LinkLoss), (2, DropReason::LinkLoss)]);
        assert_eq!(l.stats().lost_packets, 2);
        assert!(l.is_down(Time::from_millis(2)) && !l.is_down(Time::from_millis(4)));
    }

    #[test]
    fn wire_loss_goes_through_ctx_after_using_the_capacity() {
        let mut l = link(fifo(), 12, Box::new(Bernoulli::new(1.0).unwrap()), 10);
        let mut env = Env::new();
        l.enqueue(Time::ZERO, pkt(0, 1500), &mut env.ctx());
        l.enqueue(Time::ZERO, pkt(1, 1500), &mut env.ctx());
        assert!(drain(&mut l, &mut env).is_empty());
        assert_eq!(
            env.dropped
                .iter()
                .map(|(p, r)| (p.id, *r))
                .collect::<Vec<_>>(),
            [(0, DropReason::LinkLoss), (1, DropReason::LinkLoss)]
        );
        // The lost packets were still serialized: 2 ms busy.
        assert_eq!(l.stats().busy_time, Dur::from_millis(2));
        assert_eq!(l.stats().lost_packets, 2);
        // Traced as drops of this queue, at the end of serialization.
        let drops: Vec<_> = env
            .tracer
            .0
            .iter()
            .filter(|(_, e)| matches!(e, TraceEvent::Dropped { .. }))
            .collect();
        assert_eq!(drops.len(), 2);
        assert_eq!(drops[0].0, Time::from_millis(1));
        assert!(matches!(
            drops[0].1,
            TraceEvent::Dropped {
                queue: 3,
                reason: DropReason::LinkLoss,
                ..
            }
        ));
    }

    #[test]
    fn loss_stream_is_the_links_own() {
        // Same loss stream, different qdisc RNG streams: identical losses.
        let losses = |qdisc_seed: u64| {
            let mut l = link(fifo(), 100, Box::new(Bernoulli::new(0.3).unwrap()), 1);
            let mut env = Env::new();
            env.rng = SimRng::derive(qdisc_seed, "qdisc");
            for id in 0..200 {
                l.enqueue(Time::ZERO, pkt(id, 1000), &mut env.ctx());
            }
            drain(&mut l, &mut env);
            env.dropped.iter().map(|(p, _)| p.id).collect::<Vec<_>>()
        };
        let a = losses(1);
        assert!(!a.is_empty());
        assert_eq!(a, losses(2));
    }

    /// A qdisc that holds everything until `open_at`, to check timer forwarding.
    #[derive(Debug)]
    struct Gate {
        open_at: Time,
        q: VecDeque<Packet>,
        open: bool,
        stats: QdiscStats,
    }

    impl Qdisc for Gate {
        fn kind(&self) -> &'static str {
            "gate"
        }
        fn enqueue(&mut self, _now: Time, pkt: Packet, _ctx: &mut QdiscCtx<'_>) {
            self.stats.offered += 1;
            self.stats.enqueued += 1;
            self.q.push_back(pkt);
        }
        fn dequeue(&mut self, _now: Time, _ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
            if !self.open {
                return None;
            }
            let p = self.q.pop_front()?;
            self.stats.dequeued += 1;
            self.stats.sent += 1;
            Some(p)
        }
        fn backlog(&self) -> Backlog {
            Backlog {
                packets: self.q.len() as u32,
                bytes: self.q.iter().map(|p| u64::from(p.len)).sum(),
            }
        }
        fn stats(&self) -> &QdiscStats {
            &self.stats
        }
        fn next_timer(&self) -> Option<Time> {
            (!self.open).then_some(self.open_at)
        }
        fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<'_>) {
            if now >= self.open_at {
                self.open = true;
            }
        }
    }

    #[test]
    fn qdisc_timers_are_forwarded_and_restart_an_idle_link() {
        let gate = Gate {
            open_at: Time::from_millis(7),
            q: VecDeque::new(),
            open: false,
            stats: QdiscStats::default(),
        };
        let mut l = link(Box::new(gate), 12, Box::new(NoLoss), 10);
        let mut env = Env::new();
        l.enqueue(Time::ZERO, pkt(0, 1500), &mut env.ctx());
        assert_eq!(l.tx_done_at(), None);
        assert_eq!(l.next_timer(), Some(Time::from_millis(7)));
        l.on_timer(Time::from_millis(7), &mut env.ctx());
        assert_eq!(l.next_timer(), None);
        assert_eq!(l.tx_done_at(), Some(Time::from_millis(8)));
        assert_eq!(drain(&mut l, &mut env), [(18_000_000, 0)]);
    }

    #[test]
    fn ecn_rewrite_applies_before_the_queue_and_drops_through_ctx() {
        let mut env = Env::new();
        // Re-mark: ECT(1) arrives as ECT(0); others unchanged.
        let mut l =
            link(fifo(), 12, Box::new(NoLoss), 10).with_ecn_rewrite(EcnRewrite::RemarkEct1ToEct0);
        assert_eq!(l.ecn_rewrite(), EcnRewrite::RemarkEct1ToEct0);
        for (id, e) in [(0, Ecn::Ect1), (1, Ecn::Ect0), (2, Ecn::NotEct)] {
            l.enqueue(Time::ZERO, Packet::new(id, 1, 1500, e), &mut env.ctx());
        }
        let mut got = Vec::new();
        while let Some(t) = l.tx_done_at() {
            got.extend(l.on_tx_done(t, &mut env.ctx()).map(|(_, p)| p.ecn));
        }
        assert_eq!(got, [Ecn::Ect0, Ecn::Ect0, Ecn::NotEct]);
        assert_eq!(l.stats().ecn_rewritten_packets, 1);
        // Drop ECT: the ECT packet never reaches the qdisc, uses no capacity,
        // and is dropped through ctx with EcnBlackhole.
        let mut l = link(fifo(), 12, Box::new(NoLoss), 10).with_ecn_rewrite(EcnRewrite::DropEct);
        l.enqueue(
            Time::ZERO,
            Packet::new(7, 1, 1500, Ecn::Ect0),
            &mut env.ctx(),
        );
        l.enqueue(
            Time::ZERO,
            Packet::new(8, 1, 1500, Ecn::NotEct),
            &mut env.ctx(),
        );
        assert_eq!(env.dropped.len(), 1);
        assert_eq!(
            (env.dropped[0].0.id, env.dropped[0].1),
            (7, DropReason::EcnBlackhole)
        );
        assert_eq!(l.qdisc().stats().offered, 1);
        assert_eq!(l.tx_done_at(), Some(Time::from_millis(1)));
        assert_eq!(
            (l.stats().ecn_dropped_packets, l.stats().ecn_dropped_bytes),
            (1, 1500)
        );
        assert_eq!(l.stats().offered_packets, 2);
    }

    /// netem `loss ... ecn` with every packet chosen (p = 1): ECN-capable
    /// packets leave CE (an arriving CE stays CE, as `INET_ECN_set_ce`
    /// succeeds on it), Not-ECT ones are dropped as `LinkLoss`.
    #[test]
    fn loss_ecn_marks_ect_and_drops_not_ect() {
        let mut env = Env::new();
        let mut l =
            link(fifo(), 12, Box::new(Bernoulli::new(1.0).unwrap()), 10).with_loss_ecn(true);
        assert!(l.loss_ecn());
        let sent = [
            (0, Ecn::Ect0),
            (1, Ecn::NotEct),
            (2, Ecn::Ect1),
            (3, Ecn::Ce),
        ];
        for (id, e) in sent {
            l.enqueue(Time::ZERO, Packet::new(id, 1, 1000, e), &mut env.ctx());
        }
        let mut got = Vec::new();
        while let Some(t) = l.tx_done_at() {
            got.extend(l.on_tx_done(t, &mut env.ctx()).map(|(_, p)| (p.id, p.ecn)));
        }
        assert_eq!(got, [(0, Ecn::Ce), (2, Ecn::Ce), (3, Ecn::Ce)]);
        assert_eq!(
            env.dropped
                .iter()
                .map(|(p, r)| (p.id, *r))
                .collect::<Vec<_>>(),
            [(1, DropReason::LinkLoss)]
        );
        // The dropped Not-ECT packet was serialized too: 4 on the wire.
        let s = l.stats();
        assert_eq!(
            (
                s.tx_packets,
                s.delivered_packets,
                s.lost_packets,
                s.lost_bytes
            ),
            (4, 3, 1, 1000)
        );
        assert_eq!((s.loss_marked_packets, s.loss_marked_bytes), (3, 3000));
        // Each mark traced through the context, for this queue, as LinkMark.
        let marks: Vec<_> = env
            .tracer
            .0
            .iter()
            .filter_map(|(_, e)| match e {
                TraceEvent::Marked { queue, pkt, reason } => Some((*queue, pkt.id, *reason)),
                _ => None,
            })
            .collect();
        assert_eq!(
            marks,
            [
                (3, 0, MarkReason::LinkMark),
                (3, 2, MarkReason::LinkMark),
                (3, 3, MarkReason::LinkMark)
            ]
        );
    }

    /// The option changes what happens to a chosen packet, not which packets
    /// are chosen: same draws, same choices, for both loss models.
    #[test]
    fn loss_ecn_keeps_the_loss_stream_and_its_choices() {
        let models: [fn() -> Box<dyn LossModel>; 2] = [
            || Box::new(Bernoulli::new(0.3).unwrap()),
            || Box::new(GilbertElliott::new(0.1, 0.3, 0.95, 0.2).unwrap()),
        ];
        for model in models {
            // (ids dropped, ids marked, draws); odd ids Not-ECT.
            let run = |ecn: bool| {
                let mut l = link(fifo(), 100, model(), 1).with_loss_ecn(ecn);
                let mut env = Env::new();
                for id in 0..400 {
                    let e = if id % 2 == 1 { Ecn::NotEct } else { Ecn::Ect1 };
                    l.enqueue(Time::ZERO, Packet::new(id, 1, 1000, e), &mut env.ctx());
                }
                drain(&mut l, &mut env);
                let dropped: Vec<u64> = env.dropped.iter().map(|(p, _)| p.id).collect();
                let marked: Vec<u64> = env
                    .tracer
                    .0
                    .iter()
                    .filter_map(|(_, e)| match e {
                        TraceEvent::Marked { pkt, .. } => Some(pkt.id),
                        _ => None,
                    })
                    .collect();
                assert_eq!(l.stats().loss_marked_packets, marked.len() as u64);
                (dropped, marked, l.random_draws())
            };
            let (plain, none_marked, draws) = run(false);
            assert!(none_marked.is_empty());
            let (dropped, marked, draws_ecn) = run(true);
            assert_eq!(draws, draws_ecn);
            assert!(!marked.is_empty() && !dropped.is_empty());
            assert!(dropped.iter().all(|id| id % 2 == 1));
            assert!(marked.iter().all(|id| id % 2 == 0));
            let mut chosen = [dropped, marked].concat();
            chosen.sort_unstable();
            assert_eq!(chosen, plain);
        }
    }

    #[test]
    #[should_panic(expected = "before the packet finishes")]
    fn finishing_early_is_a_bug() {
        let mut l = link(fifo(), 12, Box::new(NoLoss), 10);
        let mut env = Env::new();
        l.enqueue(Time::ZERO, pkt(0, 1500), &mut env.ctx());
        l.on_tx_done(Time::from_micros(999), &mut env.ctx());
    }
}
