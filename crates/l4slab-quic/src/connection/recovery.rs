//! Loss detection and congestion control glue, RFC 9002 §6–§7 (pseudocode
//! of Appendices A and B, per packet number space).
//!
//! * §6.1 loss detection: packet threshold 3, time threshold
//!   `9/8 * max(smoothed_rtt, latest_rtt)` (at least 1 ms).
//! * §6.2 PTO with exponential backoff, no Application Data PTO before the
//!   handshake is confirmed, the client's anti-deadlock probe, and probes
//!   not blocked by the congestion window (they retransmit the oldest
//!   outstanding data, or PING).
//! * §7.6 persistent congestion: the controller gets `Rto` and the window
//!   falls to kMinimumWindow (2 datagrams; [`Connection::cwnd`] floors the
//!   controller's loss window there).
//! * §7.3.2 one reduction per recovery period: `Loss { first_in_episode }`
//!   is true only for a loss of a packet sent after the period began, and
//!   `RecoveryEnd` when a packet sent during it is acknowledged.
//! * ECN-CE (§7.1, §13.4.1): a classic controller (one without an ECN
//!   codepoint of its own) gets `EcnEcho`, starting a recovery period as
//!   a loss would; a scalable one (Prague, DCTCP) gets the CE feedback in
//!   `AckEvent::ce_bytes` as the TCP model gives it with AccECN: newly CE
//!   packets × the average size of the packets this ACK newly acknowledged,
//!   capped by the acked bytes and carried over.
//!
//! Deviation: persistent congestion is checked among the packets one ACK or
//! timer declares lost, in one space (§7.6.2 allows any two spaces' packets).

use l4slab_cc::rate::SampleBuilder;
use l4slab_cc::{AckEvent, CcCtx, CongestionEvent, LostPacket};
use l4slab_core::{Dur, Ecn, Time};

use super::handshake::{space_idx, HandshakeState};
use super::spaces::{ctrl, Chunk, SentPacket, SentState};
use super::{Connection, Role};
use crate::wire::{AckFrame, PnSpace};

/// RFC 9002 §6.1.1: "kPacketThreshold: 3".
const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §7.6.1: "kPersistentCongestionThreshold: 3".
const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;

const SPACES: [PnSpace; 3] = [
    PnSpace::Initial,
    PnSpace::Handshake,
    PnSpace::ApplicationData,
];

/// What one round of loss detection found.
#[derive(Debug, Default, Clone, Copy)]
struct Lost {
    bytes: u64,
    packets: u64,
    newest_sent: Option<Time>,
    /// Send times of the earliest and latest lost ack-eliciting packets
    /// sent after the first RTT sample (§7.6.2).
    pc_first: Option<Time>,
    pc_last: Option<Time>,
    /// A packet between those two was acknowledged (§7.6.2).
    acked_between: bool,
}

/// What the packets one ACK frame newly acknowledges add up to.
#[derive(Debug, Default, Clone, Copy)]
struct AckedNow {
    acked_bytes: u64,
    acked_packets: u64,
    /// ECT(0) and ECT(1) packets among them (§13.4.2.1).
    e0: u64,
    e1: u64,
    largest_newly: Option<SentPacket>,
    any_eliciting: bool,
    ends_recovery: bool,
    /// The delivery-rate sample being built (`l4slab_cc::rate`).
    rs: SampleBuilder,
}

/// What became of a packet whose content [`Connection::settle_chunks`] settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Acked,
    /// Lost (§13.3) or to be repeated in a PTO probe (§6.2.4).
    Repeat,
}

impl Connection {
    pub(super) fn cc_congestion(&mut self, now: Time, ev: CongestionEvent) {
        let mut ctx = CcCtx {
            flow: 0,
            mss: self.mds(),
            rng: &mut self.rng,
            tracer: &mut self.tracer,
        };
        self.cc.on_congestion(now, &ev, &mut ctx);
    }

    fn in_congestion_recovery(&self, sent: Time) -> bool {
        // RFC 9002 B.5: "return sent_time <= congestion_recovery_start_time".
        self.recovery_start.is_some_and(|r| sent <= r)
    }

    pub(super) fn max_ack_delay_for(&self, space: usize) -> Dur {
        // §6.2.1: "When the PTO is armed for Initial or Handshake packet
        // number spaces, the max_ack_delay in the PTO period computation is set to 0".
        if space == 2 {
            self.cfg.max_ack_delay
        } else {
            Dur::ZERO
        }
    }

    /// An ACK frame arrived in `sp` (RFC 9002 A.7 OnAckReceived).
    pub(super) fn on_ack_frame(&mut self, now: Time, sp: usize, ack: &AckFrame) {
        let space = &mut self.spaces[sp];
        if space.discarded {
            return;
        }
        if ack.largest() >= space.next_pn {
            // §13.1: acknowledging an unsent packet is a PROTOCOL_VIOLATION; ignored.
            self.stats.protocol_violations += 1;
            return;
        }
        let prev_largest = space.largest_acked;
        space.largest_acked = Some(prev_largest.map_or(ack.largest(), |l| l.max(ack.largest())));
        let (Some(front), Some(back)) = (
            space.sent.front().map(|p| p.pn),
            space.sent.back().map(|p| p.pn),
        ) else {
            return;
        };
        // Only entries not yet acknowledged matter: the outstanding ones, at
        // or above the oldest outstanding packet number, and those declared
        // lost (a late ACK of one is a spurious loss, RFC 9002 §6.1). Each
        // range is walked from its top down to the oldest outstanding, and
        // below that only the lost entries it covers are visited. After every
        // ACK, §6.1.1's packet threshold has declared lost whatever was still
        // outstanding more than kPacketThreshold below the largest
        // acknowledged, so the walk passes at most that many entries acked
        // before: the work is the newly acknowledged packets, not the ranges'
        // length (every ACK repeats the ranges acknowledged before).
        let (oldest_outstanding, _) = self.spaces[sp].first_outstanding();
        let mut acc = AckedNow::default();
        for r in ack.ranges() {
            let (lo, hi) = ((*r.start()).max(front), (*r.end()).min(back));
            if lo > hi {
                continue;
            }
            // Highest first, as RFC 9002 A.7's newly_acked_packets are met.
            for pn in (lo.max(oldest_outstanding)..=hi).rev() {
                self.ack_packet(now, sp, pn, ack.largest(), &mut acc);
            }
            if lo < oldest_outstanding {
                let top = hi.min(oldest_outstanding - 1);
                let lost = &self.spaces[sp].lost;
                let mut i = lost.partition_point(|&pn| pn <= top);
                while i > 0 {
                    i -= 1;
                    let pn = self.spaces[sp].lost[i];
                    if pn < lo {
                        break;
                    }
                    self.spaces[sp].lost.remove(i);
                    self.ack_packet(now, sp, pn, ack.largest(), &mut acc);
                }
            }
        }
        let AckedNow {
            acked_bytes,
            acked_packets,
            e0,
            e1,
            largest_newly,
            any_eliciting,
            mut ends_recovery,
            rs,
        } = acc;
        if largest_newly.is_none() && acked_packets == 0 && !any_eliciting {
            // Nothing new (or only lost packets reacked without the largest).
            if e0 + e1 == 0 {
                return;
            }
        }
        // §5.1: an RTT sample "if the largest acknowledged packet number is
        // newly acknowledged, and at least one of the newly acknowledged
        // packets was ack-eliciting".
        let mut rtt_sample = None;
        if let Some(lp) = largest_newly.filter(|_| any_eliciting) {
            let latest = now.saturating_since(lp.time_sent);
            let mut ack_delay = Dur::from_micros(
                ack.ack_delay
                    .saturating_mul(1 << super::ack::ACK_DELAY_EXPONENT)
                    .min(1 << 40),
            );
            if sp != 2 {
                // §5.3: "MAY ignore the acknowledgment delay for Initial packets"
                // (and Handshake ones: the peer does not delay them).
                ack_delay = Dur::ZERO;
            }
            if self.state.get() == HandshakeState::Confirmed {
                // §5.3: "MUST use the lesser of the acknowledgment delay and the
                // peer's max_ack_delay after the handshake is confirmed".
                ack_delay = ack_delay.min(self.cfg.max_ack_delay);
            }
            self.rtt.update(latest, ack_delay);
            self.stats.rtt_samples += 1;
            self.first_rtt_sample.get_or_insert(now);
            rtt_sample = Some(latest);
        }
        // ECN (§13.4.2.1): only ACKs that raise the largest acknowledged.
        let mut new_ce = 0;
        if prev_largest.is_none_or(|l| ack.largest() > l) {
            let fb = self.ecn.on_ack(SPACES[sp], e0, e1, ack.ecn);
            new_ce = fb.new_ce;
            self.stats.ce_reported += new_ce;
            self.stats.ecn_reported += fb.new_marked;
        }
        // §6.2.1: "The PTO backoff factor is reset when an acknowledgment is
        // received, except ... a client that is not yet certain that the
        // server has finished validating the client's address".
        if sp == 1 && self.role == Role::Client {
            self.handshake_acked = true;
        }
        if self.role == Role::Server
            || self.handshake_acked
            || self.state.get() == HandshakeState::Confirmed
        {
            self.pto_count = 0;
        }
        let lost = self.detect_lost(now, sp);
        self.on_lost(now, lost);
        let mut ce_bytes = 0;
        if new_ce > 0 {
            let largest_sent = largest_newly.map_or(now, |p| p.time_sent);
            if self.scalable_ecn {
                let avg = acked_bytes
                    .checked_div(acked_packets)
                    .unwrap_or_else(|| self.mds());
                self.ce_carry += new_ce * avg;
            } else if !self.in_congestion_recovery(largest_sent) {
                // RFC 9002 B.7 OnCongestionEvent via ProcessECN: a new period.
                self.recovery_start = Some(now);
                self.in_recovery = true;
                self.stats.congestion_events_ce += 1;
                let in_flight = self.bytes_in_flight();
                self.cc_congestion(now, CongestionEvent::EcnEcho { in_flight });
                ends_recovery = false;
            }
        }
        if self.scalable_ecn {
            ce_bytes = self.ce_carry.min(acked_bytes);
            self.ce_carry -= ce_bytes;
        }
        if ends_recovery && self.in_recovery {
            // §7.3.2: "The recovery period ends ... when a packet sent during
            // the recovery period is acknowledged."
            self.in_recovery = false;
            self.cc_congestion(now, CongestionEvent::RecoveryEnd);
        }
        if acked_bytes > 0 {
            let sample = self.rate.finish(now, &rs, Some(self.rtt.min()));
            let ev = AckEvent {
                acked_bytes,
                ce_bytes,
                in_flight: self.bytes_in_flight(),
                rtt_sample,
                srtt: self.srtt().unwrap_or_default(),
                min_rtt: self.rtt.min(),
                delivery_rate: sample.and_then(|s| s.delivery_rate),
                delivered: self.rate.delivered(),
                app_limited: sample.is_some_and(|s| s.is_app_limited),
                cwnd_limited: self.cwnd_limited,
                in_recovery: self.in_recovery,
                rs_prior_delivered: sample.map_or(0, |s| s.prior_delivered),
                rs_delivered: sample.map_or(0, |s| s.delivered),
                rs_tx_in_flight: sample.map_or(0, |s| s.tx_in_flight),
                rs_prior_lost: sample.map_or(0, |s| s.prior_lost),
                total_lost: self.rate.lost(),
            };
            let mut ctx = CcCtx {
                flow: 0,
                mss: self.mds(),
                rng: &mut self.rng,
                tracer: &mut self.tracer,
            };
            self.cc.on_ack(now, &ev, &mut ctx);
            // Cleared at the next chance to send (Connection::cwnd_limited_stale).
            self.cwnd_limited_stale = true;
            self.update_pacing_rate(now);
        }
        let horizon = now - (self.rtt.pto_base() * 4).min(Dur::from_nanos(now.as_nanos()));
        self.spaces[sp].trim(horizon);
    }

    /// Entry `pn` is covered by the ACK frame being processed (RFC 9002 A.7
    /// OnAckReceived's loop over newly acknowledged packets); nothing
    /// happens if it was acknowledged before.
    fn ack_packet(&mut self, now: Time, sp: usize, pn: u64, largest: u64, acc: &mut AckedNow) {
        let Some(p) = self.spaces[sp].get_mut(pn) else {
            return;
        };
        let prev = p.state;
        if prev == SentState::Acked {
            return;
        }
        p.state = SentState::Acked;
        let p = *p;
        if let SentState::Lost { .. } = prev {
            // §6.1: a packet declared lost and then acknowledged.
            self.stats.spurious_losses += 1;
        }
        match p.ecn {
            Ecn::Ect0 => acc.e0 += 1,
            Ecn::Ect1 => acc.e1 += 1,
            _ => {}
        }
        acc.any_eliciting |= p.ack_eliciting;
        if pn == largest {
            acc.largest_newly = Some(p);
        }
        if self.spaces[sp].leave_flight(pn).is_some() {
            acc.acked_bytes += u64::from(p.size);
            acc.acked_packets += 1;
            self.rate
                .on_delivered(now, u64::from(p.size), &p, &mut acc.rs);
            if self.in_recovery && !self.in_congestion_recovery(p.time_sent) {
                acc.ends_recovery = true;
            }
        }
        self.settle_chunks(sp, &p, Fate::Acked);
    }

    pub(super) fn update_pacing_rate(&mut self, now: Time) {
        let rate = super::pacing::rate_for(
            self.cc.pacing_rate(),
            self.cwnd(),
            self.srtt(),
            self.cfg.pacing,
        );
        self.pacer.set_rate(now, rate);
    }

    /// RFC 9002 A.10 DetectAndRemoveLostPackets.
    ///
    /// Both thresholds of §6.1 hold for every packet sent before one they
    /// hold for (packet numbers and send times grow together), so the lost
    /// packets are the oldest outstanding ones: walk from the oldest
    /// outstanding packet and stop at the first that is not lost. Its send
    /// time is the earliest of those left, so it alone sets `loss_time`. The
    /// work is the packets declared lost, plus acknowledged or lost entries
    /// passed on the way, each passed once.
    fn detect_lost(&mut self, now: Time, sp: usize) -> Lost {
        let mut out = Lost::default();
        self.spaces[sp].loss_time = None;
        let Some(largest_acked) = self.spaces[sp].largest_acked else {
            return out;
        };
        // §6.1.2: "max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity)".
        let loss_delay = self.rtt.loss_delay();
        let lost_send_time = Time::from_nanos(now.as_nanos().saturating_sub(loss_delay.as_nanos()));
        // An acknowledged entry passed since the last lost packet counted
        // for persistent congestion (§7.6.2).
        let mut acked_since_pc_last = false;
        loop {
            let (pn, passed_acked) = self.spaces[sp].first_outstanding();
            acked_since_pc_last |= passed_acked && out.pc_last.is_some();
            if pn > largest_acked {
                break;
            }
            let Some(&p) = self.spaces[sp].get(pn) else {
                break;
            };
            // §6.1.2: "sent ... before the largest acknowledged packet" and
            // "sent longer ago than" the loss delay.
            let by_time = p.time_sent <= lost_send_time;
            // §6.1.1: "kPacketThreshold" packets "sent ... after it" acknowledged.
            let by_count = largest_acked >= p.pn + PACKET_THRESHOLD;
            if !(by_time || by_count) {
                // A.10: "loss_time = min(loss_time, unacked.time_sent + loss_delay)".
                self.spaces[sp].loss_time = Some(p.time_sent + loss_delay);
                break;
            }
            self.spaces[sp].mark_lost(pn, now);
            if self.spaces[sp].leave_flight(pn).is_none() {
                continue; // an ACK-only packet: nothing to repeat
            }
            if by_count {
                self.stats.lost_by_packet_threshold += 1;
            } else {
                self.stats.lost_by_time_threshold += 1;
            }
            self.declare_lost(now, sp, &p);
            out.bytes += u64::from(p.size);
            out.packets += 1;
            out.newest_sent = Some(out.newest_sent.map_or(p.time_sent, |t| t.max(p.time_sent)));
            if self.first_rtt_sample.is_some_and(|f| p.time_sent > f) {
                out.pc_first.get_or_insert(p.time_sent);
                out.pc_last = Some(p.time_sent);
                out.acked_between |= acked_since_pc_last;
                acked_since_pc_last = false;
            }
        }
        out
    }

    /// Queue a lost packet's content again (§13.3), count it, and tell the
    /// controller with the packet's send-time snapshot (as the TCP transport
    /// does, after Linux `tcp_notify_skb_loss_event` → `skb_marked_lost`;
    /// RFC 9002 B.8 `OnPacketsLost` gets the lost packets themselves).
    fn declare_lost(&mut self, now: Time, sp: usize, p: &SentPacket) {
        self.stats.packets_lost += 1;
        self.stats.bytes_lost += u64::from(p.size);
        self.rate.on_lost(u64::from(p.size));
        self.ecn.on_lost(p.ecn);
        self.requeue(sp, p);
        let lost = LostPacket {
            bytes: u64::from(p.size),
            tx_in_flight: p.rate.tx_in_flight,
            prior_lost: p.rate.lost,
            prior_delivered: p.rate.delivered,
            app_limited: p.rate.app_limited,
            total_lost: self.rate.lost(),
            delivered: self.rate.delivered(),
        };
        let mut ctx = CcCtx {
            flow: 0,
            mss: self.mds(),
            rng: &mut self.rng,
            tracer: &mut self.tracer,
        };
        self.cc.on_packet_lost(now, &lost, &mut ctx);
    }

    /// Put what `p` carried back in the send queues.
    pub(super) fn requeue(&mut self, sp: usize, p: &SentPacket) {
        self.settle_chunks(sp, p, Fate::Repeat);
    }

    /// What a packet carried, once it is acknowledged (delivered) or must be
    /// repeated (RFC 9000 §13.3: the information is sent again in new
    /// frames, not the packet).
    fn settle_chunks(&mut self, sp: usize, p: &SentPacket, fate: Fate) {
        let acked = fate == Fate::Acked;
        for c in p.chunks() {
            match c {
                Chunk::Crypto { offset, len } => {
                    let buf = &mut self.spaces[sp].crypto_send;
                    if acked {
                        buf.on_acked(offset, u64::from(len), false)
                    } else {
                        buf.on_lost(offset, u64::from(len), false)
                    }
                }
                Chunk::Stream {
                    id,
                    offset,
                    len,
                    fin,
                } => {
                    if let Some(s) = self.streams.get_mut(&id) {
                        if acked {
                            s.send.on_acked(offset, u64::from(len), fin);
                        } else {
                            s.send.on_lost(offset, u64::from(len), fin);
                        }
                    }
                    if acked {
                        self.maybe_reap_stream(id);
                    } else {
                        self.sched_touch(id);
                    }
                }
                // §13.3: "The most recent set of flow control frames is sent
                // again"; an acknowledged one needs nothing.
                Chunk::MaxStreamData { id } if !acked => {
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.window.update_pending = true;
                    }
                    self.sched_touch(id);
                }
                Chunk::StreamDataBlocked { id } if !acked => {
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.credit.blocked_at = None;
                    }
                    self.sched_touch(id);
                }
                Chunk::MaxStreamData { .. } | Chunk::StreamDataBlocked { .. } | Chunk::None => {}
            }
        }
        if acked {
            if p.ctrl & ctrl::NEW_TOKEN != 0 {
                self.new_token_pending = false;
            }
            return;
        }
        if p.ctrl & ctrl::HANDSHAKE_DONE != 0 {
            self.handshake_done_pending = true;
        }
        if p.ctrl & ctrl::NEW_TOKEN != 0 {
            self.new_token_pending = true;
        }
        if p.ctrl & ctrl::MAX_DATA != 0 {
            self.conn_window.update_pending = true;
        }
        if p.ctrl & ctrl::MAX_STREAMS != 0 {
            self.max_streams_pending = true;
        }
        if p.ctrl & ctrl::DATA_BLOCKED != 0 {
            self.conn_credit.blocked_at = None;
        }
    }

    /// RFC 9002 B.8 OnPacketsLost: one congestion event per recovery period,
    /// and persistent congestion (§7.6).
    fn on_lost(&mut self, now: Time, lost: Lost) {
        if lost.packets == 0 {
            return;
        }
        let in_flight = self.bytes_in_flight();
        let newest = lost.newest_sent.unwrap_or(now);
        let first = !self.in_congestion_recovery(newest);
        if first {
            self.recovery_start = Some(now);
            self.in_recovery = true;
            self.stats.congestion_events_loss += 1;
        }
        self.cc_congestion(
            now,
            CongestionEvent::Loss {
                lost_bytes: lost.bytes,
                in_flight,
                first_in_episode: first,
            },
        );
        if let (Some(t0), Some(t1)) = (lost.pc_first, lost.pc_last) {
            // §7.6.1: "(smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay)
            // * kPersistentCongestionThreshold".
            let duration =
                (self.rtt.pto_base() + self.cfg.max_ack_delay) * PERSISTENT_CONGESTION_THRESHOLD;
            if t1.saturating_since(t0) > duration {
                // §7.6.2: "none of the packets sent between the send times of
                // these two packets are acknowledged".
                if !lost.acked_between {
                    self.stats.persistent_congestion += 1;
                    self.cc_congestion(now, CongestionEvent::Rto { in_flight });
                    self.recovery_start = Some(now);
                }
            }
        }
        self.update_pacing_rate(now);
    }

    /// RFC 9002 A.8 GetLossTimeAndSpace.
    fn loss_time_and_space(&self) -> Option<(Time, usize)> {
        (0..3)
            .filter(|&i| !self.spaces[i].discarded)
            .filter_map(|i| self.spaces[i].loss_time.map(|t| (t, i)))
            .min()
    }

    fn no_ack_eliciting_in_flight(&self) -> bool {
        self.spaces.iter().all(|s| s.ack_eliciting_in_flight == 0)
    }

    /// The client has not yet seen its address validated (§6.2.2.1).
    fn peer_awaiting_address_validation(&self) -> bool {
        self.role == Role::Client
            && !self.handshake_acked
            && self.state.get() != HandshakeState::Confirmed
    }

    /// RFC 9002 A.8 GetPtoTimeAndSpace.
    fn pto_time_and_space(&self) -> Option<(Time, usize)> {
        let backoff = 1u64 << self.pto_count.min(20);
        let duration = self.rtt.pto_base() * backoff;
        if self.no_ack_eliciting_in_flight() {
            if !self.peer_awaiting_address_validation() || self.close.is_some() {
                return None;
            }
            // §6.2.2.1 anti-deadlock: arm from the last send.
            let sp = if self.handshake_keys && !self.spaces[1].discarded {
                1
            } else {
                0
            };
            let base = self.spaces[sp]
                .time_of_last_ack_eliciting
                .unwrap_or(self.start);
            return Some((base + duration, sp));
        }
        let mut best: Option<(Time, usize)> = None;
        for sp in 0..3 {
            let s = &self.spaces[sp];
            if s.discarded || s.ack_eliciting_in_flight == 0 {
                continue;
            }
            if sp == 2
                && self.state.get() != HandshakeState::Confirmed
                && !(self.role == Role::Client && self.is_established())
            {
                // §6.2.1: "An endpoint MUST NOT set its PTO timer for the
                // Application Data packet number space until the handshake is
                // confirmed." (A completed client arms it too: see the docs.)
                continue;
            }
            let t = s.time_of_last_ack_eliciting.unwrap_or(self.start)
                + duration
                + self.max_ack_delay_for(sp) * backoff;
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, sp));
            }
        }
        best
    }

    /// RFC 9002 A.8 SetLossDetectionTimer, as a pure function of the state.
    pub(super) fn loss_detection_timer(&self) -> Option<Time> {
        if self.close.is_some() {
            return None;
        }
        if let Some((t, _)) = self.loss_time_and_space() {
            return Some(t);
        }
        if self.role == Role::Server && self.amplification_budget() == 0 {
            // "The server's timer is not set if nothing can be sent."
            return None;
        }
        self.pto_time_and_space().map(|(t, _)| t)
    }

    /// RFC 9002 A.9 OnLossDetectionTimeout.
    pub(super) fn on_loss_detection_timeout(&mut self, now: Time) {
        if let Some((t, sp)) = self.loss_time_and_space() {
            if t <= now {
                let lost = self.detect_lost(now, sp);
                self.on_lost(now, lost);
            }
            return;
        }
        let Some((_, sp)) = self.pto_time_and_space() else {
            return;
        };
        if self.no_ack_eliciting_in_flight() {
            // §6.2.2.1: "the client MUST send an Initial packet in a UDP datagram
            // that contains at least 1200 bytes" or a Handshake packet.
            self.spaces[sp].probes = 1;
        } else {
            // §6.2.4: "send one or two ack-eliciting packets"; retransmit the
            // oldest outstanding data in them.
            // Outstanding packets are at or above the oldest outstanding one.
            let mut queued = 0;
            let (mut pn, _) = self.spaces[sp].first_outstanding();
            while let Some(&p) = self.spaces[sp].get(pn) {
                if p.state == SentState::Outstanding && p.in_flight {
                    self.requeue(sp, &p);
                    queued += 1;
                    if queued == 2 {
                        break;
                    }
                }
                pn += 1;
            }
            self.spaces[sp].probes = 2;
        }
        self.pto_count += 1;
        self.stats.pto_count += 1;
        // RFC 9000 §13.4.2.1: the testing period ends after three PTO periods.
        self.ecn.on_probe_timeout(self.pto_count);
    }

    /// RFC 9002 A.11 OnPacketNumberSpaceDiscarded (RFC 9001 §4.9).
    pub(super) fn discard_space(&mut self, space: PnSpace) {
        let s = &mut self.spaces[space_idx(space)];
        if s.discarded {
            return;
        }
        s.discarded = true;
        s.reset_recovery();
        s.crypto_send.retx.clear();
        // A.11: "Reset the loss detection and PTO timer" (pto_count = 0).
        self.pto_count = 0;
    }
}
