//! BBRv3's loss-driven bounds on its path model (draft-ietf-ccwg-bbr-06):
//!
//! * the long-term volume bound `inflight_longterm` (Linux `inflight_hi`),
//!   set when a bandwidth probe drives the per-round loss rate above
//!   `LossThresh` (§5.5.10.2 `IsInflightTooHigh`, `HandleInflightTooHigh`)
//!   and raised again, slowly then exponentially, while probing in
//!   ProbeBW_UP without excess loss (§5.3.3.9 `ProbeInflightLongtermUpward`);
//! * the short-term bounds `bw_shortterm` and `inflight_shortterm` (Linux
//!   `bw_lo`, `inflight_lo`), cut once per round that saw loss while not
//!   probing: `max(latest, Beta * bound)` (§5.5.10.3);
//! * the per-round delivery signals `bw_latest` / `inflight_latest` and the
//!   loss-round clock they are measured on.
//!
//! `None` stands for the draft's "Infinity" (no bound). The state machine
//! (`mod.rs` and a file per state) decides when each rule runs; this file
//! only holds the rules.

use l4slab_core::Rate;

use crate::bbr::RateSample;
use crate::LostPacket;

/// The bounds and the signals that drive them.
#[derive(Clone, Debug, Default)]
pub(super) struct Bounds {
    /// `BBR.inflight_longterm`, bytes.
    pub inflight_longterm: Option<u64>,
    /// `BBR.inflight_shortterm`, bytes.
    pub inflight_shortterm: Option<u64>,
    /// `BBR.bw_shortterm`.
    pub bw_shortterm: Option<Rate>,
    /// `BBR.bw_latest`: 1-round max of `RS.delivery_rate`.
    pub bw_latest: Rate,
    /// `BBR.inflight_latest`: 1-round max of `RS.delivered`, bytes.
    pub inflight_latest: u64,
    /// `BBR.loss_round_delivered`: `C.delivered` marking the end of the loss round.
    pub loss_round_delivered: u64,
    /// `BBR.loss_round_start`: this ACK started a new loss round.
    pub loss_round_start: bool,
    /// `BBR.is_loss_in_round`.
    pub is_loss_in_round: bool,
    /// `BBR.is_bw_probe_sample`: ACKs now carry feedback from REFILL/UP.
    pub is_bw_probe_sample: bool,
    /// `BBR.prev_probe_too_high`.
    pub prev_probe_too_high: bool,
    /// `BBR.bw_probe_up_acked`, bytes.
    pub bw_probe_up_acked: u64,
    /// `BBR.probe_up_acked_per_inc`, bytes; `None` = Infinity (not growing).
    pub probe_up_acked_per_inc: Option<u64>,
    /// `BBR.bw_probe_up_rounds`.
    pub bw_probe_up_rounds: u32,
    /// Linux `undo_bw_lo`, `undo_inflight_lo`, `undo_inflight_hi`: the
    /// bounds when the current loss recovery began.
    undo: (Option<Rate>, Option<u64>, Option<u64>),
}

/// The larger of two bounds, `None` (Infinity) being the largest.
fn max_bound<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    Some(a?.max(b?))
}

impl Bounds {
    /// §5.5.10.2 `NoteLoss()`: returns true for the first loss of the round
    /// (the caller then runs `SaveStateUponLoss`).
    pub fn note_loss(&mut self, c_delivered: u64) -> bool {
        let first = !self.is_loss_in_round;
        if first {
            self.loss_round_delivered = c_delivered;
        }
        self.is_loss_in_round = true;
        first
    }

    /// §5.5.10.3 `UpdateLatestDeliverySignals()`, near the start of ACK processing.
    pub fn update_latest_delivery_signals(&mut self, rs: &RateSample, c_delivered: u64) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate.unwrap_or(Rate::ZERO));
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = c_delivered;
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 `AdvanceLatestDeliverySignals()`, near the end of ACK processing.
    pub fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate.unwrap_or(Rate::ZERO);
            self.inflight_latest = rs.delivered;
        }
    }

    /// Linux `bbr_ssthresh` (entering fast recovery or RTO): "For undo,
    /// save state that adapts based on loss signal."
    pub fn save_for_undo(&mut self) {
        self.undo = (
            self.bw_shortterm,
            self.inflight_shortterm,
            self.inflight_longterm,
        );
    }

    /// Linux `bbr_undo_cwnd`: the recovery was spurious, so "revert to ...
    /// state saved before loss episode" — each bound back to at least its
    /// saved value — and forget this round's loss.
    pub fn undo(&mut self) {
        let (bw_lo, inflight_lo, inflight_hi) = self.undo;
        self.bw_shortterm = max_bound(self.bw_shortterm, bw_lo);
        self.inflight_shortterm = max_bound(self.inflight_shortterm, inflight_lo);
        self.inflight_longterm = max_bound(self.inflight_longterm, inflight_hi);
        self.is_loss_in_round = false;
    }

    /// §5.5.10.3 `ResetCongestionSignals()`.
    pub fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = Rate::ZERO;
        self.inflight_latest = 0;
    }

    /// §5.5.10.3 `ResetShortTermModel()`.
    pub fn reset_short_term_model(&mut self) {
        self.bw_shortterm = None;
        self.inflight_shortterm = None;
    }

    /// §5.5.10.3 `AdaptLowerBoundsFromCongestion()`, once per loss round:
    /// returns true when a lossy round cut the short-term bounds.
    pub fn adapt_lower_bounds_from_congestion(
        &mut self,
        probing_bw: bool,
        max_bw: Rate,
        cwnd: u64,
        beta: f64,
    ) -> bool {
        if probing_bw || !self.is_loss_in_round {
            return false;
        }
        // InitLowerBounds(): "Handle the first congestion episode in this cycle"
        let bw_lo = self.bw_shortterm.unwrap_or(max_bw);
        let inflight_lo = self.inflight_shortterm.unwrap_or(cwnd);
        // LossLowerBounds():
        //   bw_shortterm       = max(bw_latest,       Beta * bw_shortterm)
        //   inflight_shortterm = max(inflight_latest, Beta * inflight_shortterm)
        self.bw_shortterm = Some(self.bw_latest.max(bw_lo.scale(beta)));
        self.inflight_shortterm =
            Some(self.inflight_latest.max((inflight_lo as f64 * beta) as u64));
        true
    }

    /// §5.5.10.2 `IsInflightTooHigh()`: "RS.lost > RS.tx_in_flight *
    /// BBR.LossThresh". The transport always has SACK
    /// (`C.has_selective_acks`), so the single-loss rule never applies.
    pub fn is_inflight_too_high(rs: &RateSample, loss_thresh: f64) -> bool {
        rs.lost as f64 > rs.tx_in_flight as f64 * loss_thresh
    }

    /// Linux `bbr_inflight_hi_from_lost_skb` (draft-ietf-ccwg-bbr-06
    /// §5.5.10.2 `InflightAtLoss`): the in-flight at which the loss rate of
    /// the flight leading up to the lost packet `p` crossed `loss_thresh`.
    /// Linux solves `(lost_prev + lost_prefix) / (inflight_prev +
    /// lost_prefix) >= loss_thresh` for the prefix of the lost skb where
    /// that happened, in whole packets: the loss budget rounded up, the
    /// prefix rounded down (`do_div`). Here a packet is `smss` bytes (the
    /// draft's version is the same equation in bytes, unrounded). Bytes.
    pub fn inflight_at_loss(p: &LostPacket, loss_thresh: f64, smss: u64) -> u64 {
        // "How much data was in flight before this skb?" The transport's
        // snapshot includes the packet itself, and C.lost includes it now,
        // so neither difference can go below zero (Linux WARNs if they do).
        let inflight_prev = p.tx_in_flight.saturating_sub(p.bytes);
        // "How much inflight data was marked lost before this skb?"
        let lost_prev = p
            .total_lost
            .saturating_sub(p.prior_lost)
            .saturating_sub(p.bytes);
        // "loss_budget = (u64)inflight_prev * loss_thresh + BBR_UNIT - 1;
        // loss_budget >>= BBR_SCALE;" — rounded up to a whole packet.
        let seg = smss as f64;
        let budget = (inflight_prev as f64 * loss_thresh / seg).ceil() as u64 * smss;
        let prefix = if lost_prev >= budget {
            0 // "previous losses crossed loss_thresh"
        } else {
            // "lost_prefix = loss_budget - lost_prev; lost_prefix <<=
            // BBR_SCALE; do_div(lost_prefix, BBR_UNIT - loss_thresh)"
            ((budget - lost_prev) as f64 / (1.0 - loss_thresh) / seg).floor() as u64 * smss
        };
        // "inflight_hi = inflight_prev + lost_prefix"
        inflight_prev + prefix
    }

    /// §5.5.10.2 `HandleInflightTooHigh()`, minus the state change the caller
    /// makes: "BBR.inflight_longterm = max(RS.tx_in_flight, TargetInflight()
    /// * BBR.Beta)" unless the sample is app-limited.
    pub fn handle_inflight_too_high(&mut self, rs: &RateSample, target_inflight: u64, beta: f64) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false; // "only react once per bw probe"
        if !rs.is_app_limited {
            self.inflight_longterm =
                Some(rs.tx_in_flight.max((target_inflight as f64 * beta) as u64));
        }
    }

    /// §5.3.3.9 `InflightWithHeadroom()`: leave `Headroom` of
    /// `inflight_longterm` free for other flows; `None` = Infinity.
    pub fn inflight_with_headroom(&self, headroom: f64, smss: u64, min_pipe: u64) -> Option<u64> {
        let hi = self.inflight_longterm?;
        let room = smss.max((headroom * hi as f64) as u64);
        Some(hi.saturating_sub(room).max(min_pipe))
    }

    /// §5.3.3.9 `RaiseInflightLongtermSlope()`: the growth of
    /// `inflight_longterm` doubles every round of ProbeBW_UP.
    pub fn raise_inflight_longterm_slope(&mut self, cwnd: u64, smss: u64) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = Some((cwnd / growth_this_round).max(smss));
    }

    /// §5.3.3.9 `ProbeInflightLongtermUpward()`.
    pub fn probe_inflight_longterm_upward(
        &mut self,
        is_cwnd_limited: bool,
        cwnd: u64,
        newly_acked: u64,
        round_start: bool,
        smss: u64,
    ) {
        let Some(hi) = self.inflight_longterm else {
            return;
        };
        if !is_cwnd_limited || cwnd < hi {
            return; // "not fully using BBR.inflight_longterm, so don't grow it"
        }
        self.bw_probe_up_acked += newly_acked;
        if let Some(per_inc) = self.probe_up_acked_per_inc.filter(|&p| p > 0) {
            if self.bw_probe_up_acked >= per_inc {
                let delta = self.bw_probe_up_acked / per_inc;
                self.bw_probe_up_acked -= delta * per_inc;
                self.inflight_longterm = Some(hi + delta * smss);
            }
        }
        if round_start {
            self.raise_inflight_longterm_slope(cwnd, smss);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn loss_rounds_cut_short_term_bounds_by_beta() {
        let mut b = Bounds::default();
        assert!(!b.adapt_lower_bounds_from_congestion(false, Rate::from_mbps(10), 100 * MSS, 0.7));
        b.note_loss(0);
        // First lossy round: the bounds start from max_bw / cwnd, then
        // max(latest, 0.7 * bound): latest is small here, so Beta rules.
        b.bw_latest = Rate::from_mbps(1);
        b.inflight_latest = 10 * MSS;
        assert!(b.adapt_lower_bounds_from_congestion(false, Rate::from_mbps(10), 100 * MSS, 0.7));
        assert_eq!(b.bw_shortterm, Some(Rate::from_mbps(7)));
        assert_eq!(b.inflight_shortterm, Some(70 * MSS));
        // Second round: 0.7 * 70 = 49 segments, but the latest delivery was 60.
        b.inflight_latest = 60 * MSS;
        b.adapt_lower_bounds_from_congestion(false, Rate::from_mbps(10), 100 * MSS, 0.7);
        assert_eq!(b.inflight_shortterm, Some(60 * MSS));
        // While probing, nothing changes.
        assert!(!b.adapt_lower_bounds_from_congestion(true, Rate::from_mbps(10), 100 * MSS, 0.7));
    }

    #[test]
    fn too_high_means_more_than_two_percent_of_tx_in_flight() {
        let rs = |lost, tx| RateSample {
            lost,
            tx_in_flight: tx,
            ..RateSample::default()
        };
        assert!(!Bounds::is_inflight_too_high(&rs(2_000, 100_000), 0.02));
        assert!(Bounds::is_inflight_too_high(&rs(2_001, 100_000), 0.02));
    }

    #[test]
    fn inflight_at_loss_is_where_loss_crossed_the_threshold() {
        // Packet k left with k segments in flight (itself included); C.lost
        // counts it once marked. Linux bbr_inflight_hi_from_lost_skb in
        // packets: budget = ceil(inflight_prev * thresh), prefix =
        // floor((budget - lost_prev) / (1 - thresh)).
        let lost = |k: u64, prior: u64, total: u64| LostPacket {
            bytes: MSS,
            tx_in_flight: k * MSS,
            prior_lost: prior * MSS,
            total_lost: total * MSS,
            ..LostPacket::default()
        };
        // The first loss of a 40-packet flight: budget ceil(0.78) = 1,
        // prefix floor(1 / 0.98) = 1: loss crossed 2 % at this packet.
        assert_eq!(
            Bounds::inflight_at_loss(&lost(40, 0, 1), 0.02, MSS),
            40 * MSS
        );
        // The second loss at packet 95 (one before it since it was sent):
        // 2 > 1.9, budget ceil(1.88) = 2, prefix 1: again this packet.
        assert_eq!(
            Bounds::inflight_at_loss(&lost(95, 0, 2), 0.02, MSS),
            95 * MSS
        );
        // Two losses before it already used the budget of 94 packets: the
        // threshold was crossed before this packet, at its inflight_prev.
        assert_eq!(
            Bounds::inflight_at_loss(&lost(95, 0, 3), 0.02, MSS),
            94 * MSS
        );
        // Losses marked before the packet was sent do not count (P.lost).
        assert_eq!(
            Bounds::inflight_at_loss(&lost(95, 7, 9), 0.02, MSS),
            95 * MSS
        );
        // loss_thresh 5 %: 200 packets, 10 lost before: budget ceil(9.95) =
        // 10, used up: 199.
        assert_eq!(
            Bounds::inflight_at_loss(&lost(200, 0, 11), 0.05, MSS),
            199 * MSS
        );
    }

    #[test]
    fn inflight_too_high_sets_the_long_term_bound() {
        let mut b = Bounds {
            is_bw_probe_sample: true,
            ..Bounds::default()
        };
        let rs = RateSample {
            tx_in_flight: 50 * MSS,
            lost: 5 * MSS,
            ..RateSample::default()
        };
        // max(tx_in_flight = 50, 0.7 * target 100 = 70) segments.
        b.handle_inflight_too_high(&rs, 100 * MSS, 0.7);
        assert_eq!(b.inflight_longterm, Some(70 * MSS));
        assert!(b.prev_probe_too_high && !b.is_bw_probe_sample);
        // Headroom: 70 - max(1 MSS, 0.15 * 70) = 59.5 segments.
        assert_eq!(b.inflight_with_headroom(0.15, MSS, 4 * MSS), Some(59_500));
    }

    #[test]
    fn long_term_bound_grows_one_two_four_segments_per_round() {
        let mut b = Bounds {
            inflight_longterm: Some(100 * MSS),
            ..Bounds::default()
        };
        // cwnd at least the bound (it is capped by it in ProbeBW_UP); one
        // round = one cwnd of ACKs.
        let cwnd = 1000 * MSS;
        b.raise_inflight_longterm_slope(cwnd, MSS); // round 1: +1 MSS per cwnd acked
        let mut grown = Vec::new();
        for _round in 0..3 {
            let before = b.inflight_longterm.unwrap();
            for i in 0..1000 {
                // The last ACK of each round starts the next one.
                b.probe_inflight_longterm_upward(true, cwnd, MSS, i == 999, MSS);
            }
            grown.push((b.inflight_longterm.unwrap() - before) / MSS);
        }
        assert_eq!(grown, [1, 2, 4]);
        // Not cwnd-limited: no growth.
        let before = b.inflight_longterm;
        b.probe_inflight_longterm_upward(false, cwnd, 50 * MSS, false, MSS);
        assert_eq!(b.inflight_longterm, before);
    }

    #[test]
    fn latest_signals_follow_loss_rounds() {
        let mut b = Bounds::default();
        let rs = |prior, delivered, mbps| RateSample {
            newly_acked: MSS,
            prior_delivered: prior,
            delivered,
            delivery_rate: Some(Rate::from_mbps(mbps)),
            ..RateSample::default()
        };
        b.update_latest_delivery_signals(&rs(0, 10 * MSS, 5), 10 * MSS);
        assert!(b.loss_round_start);
        b.advance_latest_delivery_signals(&rs(0, 10 * MSS, 5));
        b.update_latest_delivery_signals(&rs(5 * MSS, 7 * MSS, 8), 12 * MSS);
        assert!(!b.loss_round_start);
        assert_eq!(
            (b.bw_latest, b.inflight_latest),
            (Rate::from_mbps(8), 10 * MSS)
        );
    }

    #[test]
    fn undo_restores_the_bounds_saved_at_recovery_start() {
        let mut b = Bounds {
            inflight_shortterm: Some(80 * MSS),
            inflight_longterm: Some(100 * MSS),
            ..Bounds::default()
        };
        b.save_for_undo();
        b.inflight_shortterm = Some(56 * MSS);
        b.inflight_longterm = Some(70 * MSS);
        b.bw_shortterm = Some(Rate::from_mbps(7));
        b.is_loss_in_round = true;
        b.undo();
        // Linux bbr_undo_cwnd: max(now, saved); a saved Infinity wins.
        assert_eq!(b.inflight_shortterm, Some(80 * MSS));
        assert_eq!(b.inflight_longterm, Some(100 * MSS));
        assert_eq!(b.bw_shortterm, None);
        assert!(!b.is_loss_in_round);
    }
}
