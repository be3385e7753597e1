//! ACK processing on the sending half: window update, RTT sample, cumulative
//! and selective acknowledgment, loss detection (RFC 6675 DupThresh + RFC 8985
//! RACK), the recovery episode (RFC 6582 / RFC 6675 §5) and the
//! congestion-control hooks.
//!
//! Order per ACK, as Linux `tcp_ack` does it: acknowledge (cumulative, then
//! SACK blocks in ascending order so RACK sees deliveries in sequence order;
//! a D-SACK block first, RFC 2883), the tail loss probe's outcome (`tlp.rs`),
//! end or undo a recovery episode the ACK completed (`undo.rs`), detect
//! losses (possibly starting a new episode), then `cc.on_ack` — so the ACK
//! that triggers a reduction does not also grow the window — and last the
//! probe or retransmission timer.

use l4slab_cc::rate::{RateEstimator, SampleBuilder};
use l4slab_cc::{AckEvent, CongestionControl, CongestionEvent, LostPacket};
use l4slab_core::{Dur, FlowId, Time, TraceEvent};

use super::tlp::TlpAck;
use super::undo::AckFacts;
use super::{Endpoint, EndpointCtx, ISS};
use crate::ecn::Delivered;
use crate::prr::Prr;
use crate::rack::Rack;
use crate::scoreboard::SentSeg;
use crate::segment::{SackBlock, Segment, MAX_SACK_BLOCKS};
use crate::state::Recovery;
use crate::stats::EndpointStats;

/// What one ACK delivered, segment by segment, whether cumulatively or by
/// SACK: Linux counts both alike (`tcp_clean_rtx_queue` and the SACK
/// tagging of `tcp_sacktag_walk`/`tcp_sacktag_one` each feed
/// `tcp_rate_skb_delivered` and `tcp_rack_advance`, and count delivered
/// segments for PRR and ECN).
struct Deliveries {
    now: Time,
    min_rtt: Option<Dur>,
    /// The delivery-rate sample the ACK builds (`l4slab_cc::rate`).
    rs: SampleBuilder,
    /// Segments delivered.
    segs: u64,
    /// Linux FLAG_ORIG_SACK_ACKED: data never retransmitted newly (S)ACKed.
    orig_acked: bool,
    /// Delivered segments (and their payload) sent with ECT, for ECN validation.
    ect_segs: u64,
    ect_bytes: u64,
}

impl Deliveries {
    fn new(now: Time, min_rtt: Option<Dur>) -> Self {
        Deliveries {
            now,
            min_rtt,
            rs: SampleBuilder::default(),
            segs: 0,
            orig_acked: false,
            ect_segs: 0,
            ect_bytes: 0,
        }
    }

    /// Segment `s` (`bytes` of payload) is delivered.
    fn count(&mut self, s: &SentSeg, bytes: u64, rate: &mut RateEstimator, rack: &mut Rack) {
        self.orig_acked |= s.tx_count == 1;
        self.segs += 1;
        if s.ecn.is_ect() {
            self.ect_segs += 1;
            self.ect_bytes += bytes;
        }
        rate.on_delivered(self.now, bytes, s, &mut self.rs);
        rack.on_delivered(s, self.now, self.min_rtt);
    }
}

/// Where a segment marked lost is reported: the endpoint's counters, its
/// delivery-rate estimator and its controller (disjoint fields of the
/// endpoint, borrowed while the scoreboard walks its segments).
struct LossSink<'e> {
    flow: FlowId,
    mss: u32,
    stats: &'e mut EndpointStats,
    rate: &'e mut RateEstimator,
    cc: &'e mut dyn CongestionControl,
}

impl LossSink<'_> {
    /// Segment `s` is marked lost, by whichever detector (RFC 6675
    /// DupThresh, RACK or the RTO; Linux marks them all through
    /// `tcp_mark_skb_lost`): counted, added to the rate estimator's lost
    /// bytes (`C.lost`), traced, and then told to the controller with the
    /// segment's send-time snapshot — Linux `tcp_notify_skb_loss_event`:
    /// "tp->lost += tcp_skb_pcount(skb); if (ca_ops->skb_marked_lost)
    /// ca_ops->skb_marked_lost(sk, skb);".
    fn count(&mut self, now: Time, s: &SentSeg, ctx: &mut EndpointCtx<'_>) {
        self.stats.lost_segments += 1;
        self.rate.on_lost(u64::from(s.len));
        ctx.tracer.event(
            now,
            TraceEvent::LossDetected {
                flow: self.flow,
                seq: s.seq,
                bytes: s.len,
            },
        );
        let lost = LostPacket {
            bytes: u64::from(s.len),
            tx_in_flight: s.tx.tx_in_flight,
            prior_lost: s.tx.lost,
            prior_delivered: s.tx.delivered,
            app_limited: s.tx.app_limited,
            total_lost: self.rate.lost(),
            delivered: self.rate.delivered(),
        };
        let mut c = Endpoint::cc_ctx(self.flow, self.mss, ctx);
        self.cc.on_packet_lost(now, &lost, &mut c);
    }
}

impl Endpoint {
    /// RFC 9293 §3.10.7.4 window update: "If SND.UNA =< SEG.ACK =< SND.NXT ...
    /// If (SND.WL1 < SEG.SEQ or (SND.WL1 = SEG.SEQ and SND.WL2 =< SEG.ACK)),
    /// set SND.WND <- SEG.WND, set SND.WL1 <- SEG.SEQ, and set SND.WL2 <- SEG.ACK."
    pub(super) fn update_window(&mut self, seg: &Segment) {
        if seg.ack >= self.snd_una
            && seg.ack <= self.snd_nxt
            && (self.snd_wl1 < seg.seq || (self.snd_wl1 == seg.seq && self.snd_wl2 <= seg.ack))
        {
            self.snd_wnd = seg.wnd;
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = seg.ack;
        }
    }

    /// The ACK field of a segment in a synchronized state.
    pub(super) fn on_ack(&mut self, now: Time, seg: &Segment, ctx: &mut EndpointCtx<'_>) {
        let ack = seg.ack;
        if ack > self.snd_nxt {
            // RFC 9293 §3.10.7.4: "If the ACK acks something not yet sent
            // (SEG.ACK > SND.NXT), then send an ACK, drop the segment".
            self.rcv.request_ack();
            return;
        }
        self.update_window(seg);
        let prior_una = self.snd_una;

        // RFC 7323 §4.2 / Linux tcp_ack_update_rtt: sample only ACKs that
        // acknowledge new data; the echo is exact even for retransmissions.
        let rtt_sample = (ack > prior_una).then(|| self.take_rtt_sample(now, seg.ts_ecr, ctx));
        let min_rtt = self.rtt.min_rtt();

        let mut d = Deliveries::new(now, min_rtt);
        let mut acked = 0u64;
        let mut sacked = 0u64;
        if ack > prior_una {
            let (rate, rack, stats) = (&mut self.rate, &mut self.rack, &mut self.stats);
            let mut first = true;
            self.sb.cum_ack(ack, |_, s, bytes| {
                // RFC 3522 §2 (Eifel): the ACK for a retransmitted segment echoes
                // a timestamp older than the retransmission: the original arrived.
                if first && s.tx_count > 1 && seg.ts_ecr < s.xmit_time {
                    stats.spurious_retransmits += 1;
                }
                first = false;
                acked += bytes;
                d.count(s, bytes, rate, rack);
            });
            self.snd_una = ack;
            // Payload below SND.UNA (data starts after the SYN; the FIN is not payload).
            self.stats.bytes_acked = self.snd_una.min(self.write_end).saturating_sub(ISS + 1);
        }

        // RFC 2883 §4: the first block is a D-SACK if it lies below the
        // cumulative ACK or inside the second block (Linux tcp_check_dsack).
        let sacks = seg.sacks();
        let dsack = sacks.first().copied().filter(|d| {
            d.end <= ack
                || sacks
                    .get(1)
                    .is_some_and(|b| b.start <= d.start && d.end <= b.end)
        });
        if let Some(d) = dsack {
            self.on_dsack(d.start, d.end);
        }
        // SACK blocks (RFC 2018), ascending; blocks at or below SND.UNA
        // (D-SACK) or beyond SND.NXT are ignored.
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let n = sacks.len();
        blocks[..n].copy_from_slice(sacks);
        blocks[..n].sort_unstable_by_key(|b| b.start);
        for b in &blocks[..n] {
            let (start, end) = (b.start.max(self.snd_una), b.end.min(self.snd_nxt));
            if start >= end {
                continue;
            }
            let (rate, rack) = (&mut self.rate, &mut self.rack);
            self.sb.sack(start, end, |_, s, bytes| {
                sacked += bytes;
                d.count(s, bytes, rate, rack);
            });
        }

        // ECN feedback (crate::ecn): CE bytes for the controller; an echo
        // during an episode forbids undoing its reduction (Linux FLAG_ECE).
        let cp = self.cc.ecn_codepoint();
        let delivered = Delivered {
            pkts: d.segs,
            bytes: acked + sacked,
            ect_pkts: d.ect_segs,
            ect_bytes: d.ect_bytes,
        };
        let mss = u64::from(self.cfg.mss);
        let fb = self.ecn.on_ack(seg, &delivered, mss, cp, &mut self.stats);
        self.undo.ece |= fb.congestion;

        let una_advanced = self.snd_una > prior_una;
        let tlp = TlpAck {
            ack,
            dsack_of_probe: dsack.is_some_and(|d| self.tlp_high_seq == Some(d.end)),
            not_pure_dupack: una_advanced || seg.len > 0 || sacked > 0,
        };
        self.process_tlp_ack(now, tlp, ctx);
        // RFC 6582 §3.2 step 3 / RFC 6675 §5 (A): a cumulative ACK beyond the
        // recovery point ends the episode — or undoes it (`undo.rs`).
        let facts = AckFacts {
            una_advanced,
            orig_acked: d.orig_acked,
            data_sacked: sacked > 0,
            dupack: !una_advanced && seg.len == 0,
            ts_ecr: seg.ts_ecr,
        };
        self.recovery_on_ack(now, facts, ctx);

        let (lost, lost_segs) = self.detect_losses(now, ctx);
        self.on_loss(now, lost, ctx);
        self.undo.ece |= fb.congestion; // also for an episode this ACK began
        self.prr_update(d.segs, lost_segs, una_advanced);

        // Classic ECN response: at most one EcnEcho per window (RFC 3168
        // §6.1.2: not during loss recovery, Linux tcp_enter_cwr only from
        // Open), sent before on_ack so the reducing ACK does not also grow
        // the window.
        if fb.congestion
            && self.ecn.classic_response(cp)
            && self.recovery == Recovery::Open
            && self.ecn.may_echo(self.snd_una)
        {
            let flight = self.snd_nxt - self.snd_una;
            self.ecn.on_reduction(self.snd_nxt, true, &mut self.stats);
            self.cc_congestion(now, CongestionEvent::EcnEcho { in_flight: flight }, ctx);
        }

        let sample = self.rate.finish(now, &d.rs, self.rtt.min_rtt());
        if sample.is_some() {
            self.last_rate_sample = sample;
        }
        let ev = AckEvent {
            acked_bytes: acked + sacked,
            ce_bytes: fb.ce_bytes,
            in_flight: self.sb.in_flight(),
            rtt_sample,
            srtt: self.rtt.srtt().unwrap_or_default(),
            min_rtt: self.rtt.min_rtt().unwrap_or_default(),
            delivery_rate: sample.and_then(|s| s.delivery_rate),
            delivered: self.rate.delivered(),
            app_limited: sample.map_or_else(|| self.rate.is_app_limited(), |s| s.is_app_limited),
            cwnd_limited: self.is_cwnd_limited(),
            in_recovery: self.recovery != Recovery::Open,
            // draft-ietf-ccwg-bbr §4.1.2: RS.prior_delivered = C.delivered - RS.delivered.
            rs_prior_delivered: sample.map_or(0, |s| s.prior_delivered),
            rs_delivered: sample.map_or(0, |s| s.delivered),
            rs_tx_in_flight: sample.map_or(0, |s| s.tx_in_flight),
            rs_prior_lost: sample.map_or(0, |s| s.prior_lost),
            total_lost: self.rate.lost(),
        };
        let mut c = Self::cc_ctx(self.flow, self.cfg.mss, ctx);
        self.cc.on_ack(now, &ev, &mut c);

        if self.sb.is_empty() {
            // RFC 6298 §5.2: "When all outstanding data has been acknowledged,
            // turn off the retransmission timer."
            self.rto_deadline = None;
            self.tlp_deadline = None;
        } else if una_advanced && !self.schedule_loss_probe(now, true) {
            // RFC 6298 §5.3: "When an ACK is received that acknowledges new
            // data, restart the retransmission timer" (Linux tcp_set_xmit_timer:
            // a loss probe instead when one may be sent, else tcp_rearm_rto).
            self.rearm_rto(now);
        }
        if self
            .fin_seq
            .is_some_and(|f| prior_una <= f && self.snd_una > f)
        {
            self.on_fin_acked();
        }
    }

    /// Run both loss detectors; returns the sequence bytes and the segments
    /// newly marked lost.
    pub(super) fn detect_losses(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) -> (u64, u64) {
        let mut lost = 0u64;
        let mut segs = 0u64;
        let mut sink = LossSink {
            flow: self.flow,
            mss: self.cfg.mss,
            stats: &mut self.stats,
            rate: &mut self.rate,
            cc: &mut *self.cc,
        };
        let mut note = |s: &SentSeg| {
            lost += s.seq_len();
            segs += 1;
            sink.count(now, s, ctx);
        };
        // RFC 6675 §4 IsLost (DupThresh SACKed segments above). Once reordering
        // has been seen, RACK decides alone (Linux raises tp->reordering, and
        // with RACK on does not use the DupThresh heuristic at all).
        if !self.rack.reordering_seen() {
            self.sb.mark_lost_dupthresh(|_, s| note(s));
        }
        let reo_wnd = self.rack.reo_wnd(
            self.recovery != Recovery::Open,
            self.sb.sacked_segs(),
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        self.rack_deadline = self
            .rack
            .detect_loss(now, &mut self.sb, reo_wnd, |_, s| note(s));
        (lost, segs)
    }

    /// RFC 6298 §5 after a timeout: every outstanding un-SACKed segment is lost.
    pub(super) fn mark_all_lost(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        let mut sink = LossSink {
            flow: self.flow,
            mss: self.cfg.mss,
            stats: &mut self.stats,
            rate: &mut self.rate,
            cc: &mut *self.cc,
        };
        self.sb.mark_all_lost(|_, s| sink.count(now, s, ctx));
    }

    /// After loss detection (`lost` bytes newly declared lost): start a
    /// recovery episode, or report a further loss of the current one.
    ///
    /// An episode also starts when segments are still marked lost with no
    /// episode running (Linux `tcp_time_to_recover`: "if (tp->lost_out) return
    /// true"): data sent after the previous recovery point and lost during that
    /// episode is a new congestion signal once the episode ends (RFC 6582: one
    /// reduction per window of data — this is the next window).
    pub(super) fn on_loss(&mut self, now: Time, lost: u64, ctx: &mut EndpointCtx<'_>) {
        let first = self.recovery == Recovery::Open;
        let lost = if first { self.sb.lost_bytes() } else { lost };
        if lost == 0 {
            return;
        }
        // RFC 5681 §3.1 FlightSize: sent but not cumulatively acknowledged.
        let flight = self.snd_nxt - self.snd_una;
        let prior_cwnd = self.cc.cwnd();
        if first {
            // RFC 6582 §3.2 step 2 / RFC 6675 §5 (4.1): "RecoveryPoint = HighData".
            let next = Recovery::Fast {
                recover: self.snd_nxt,
                prr: None,
            };
            self.set_recovery(next);
            self.stats.fast_recovery_episodes += 1;
            // Linux tcp_enter_recovery: tcp_init_undo; tcp_init_cwnd_reduction
            // ends a pending loss probe (tlp_high_seq = 0).
            self.init_undo();
            self.tlp_high_seq = None;
            // Linux tcp_enter_recovery -> tcp_init_cwnd_reduction ->
            // tcp_ecn_queue_cwr: a loss reduction also sends CWR (RFC 3168 §6.1.2).
            self.ecn.on_reduction(self.snd_nxt, false, &mut self.stats);
            // RFC 6675 §5 (4.3): retransmit the first lost segment now.
            self.force_retransmit = true;
        }
        // RFC 6582: one window reduction per episode; later losses of the same
        // episode (and of an RTO recovery) are reported with first = false.
        self.cc_congestion(
            now,
            CongestionEvent::Loss {
                lost_bytes: lost,
                in_flight: flight,
                first_in_episode: first,
            },
            ctx,
        );
        if first {
            // RFC 6937 §3 "On entering recovery" (Linux tcp_init_cwnd_reduction),
            // for controllers that set an ssthresh.
            let mss = u64::from(self.cfg.mss);
            let pipe = self.sb.in_flight_segs();
            if let (Recovery::Fast { prr, .. }, Some(ssthresh)) =
                (&mut self.recovery, self.cc.ssthresh())
            {
                *prr = Some(Prr::new(prior_cwnd / mss, ssthresh / mss, pipe));
            }
        }
    }

    /// RFC 6937 per-ACK update during fast recovery (Linux `tcp_cwnd_reduction`).
    pub(super) fn prr_update(&mut self, delivered_segs: u64, lost_segs: u64, una_advanced: bool) {
        let pipe = self.sb.in_flight_segs();
        if let Recovery::Fast { prr: Some(p), .. } = &mut self.recovery {
            p.on_ack(delivered_segs, lost_segs, una_advanced, pipe);
        }
    }

    /// The congestion window for the send loop, in segments (Linux counts
    /// cwnd in packets): PRR's during fast recovery, else the controller's.
    pub(super) fn cwnd_segs(&self) -> u64 {
        match self.recovery {
            Recovery::Fast { prr: Some(p), .. } => p.cwnd(),
            _ => (self.cc.cwnd() / u64::from(self.cfg.mss)).max(1),
        }
    }
}
