//! The part of BBRv3's path model every state shares (draft-ietf-ccwg-bbr-06
//! §5.5, §5.6.4.2): packet-timed rounds, the `max_bw` filter, the congestion
//! signals that feed `bounds.rs`, ACK aggregation, and the volumes derived
//! from `bw` and `min_rtt` (BDP, `BDPMultiple`, `QuantizationBudget`).

use l4slab_core::{Rate, Time};

use super::{Bbr3, ProbeBwPhase};
use crate::bbr::RateSample;

impl Bbr3 {
    /// `BBR.bdp = bw * min_rtt`; `C.InitialCwnd` before any RTT sample.
    pub(super) fn bdp(&self, bw: Rate) -> u64 {
        match self.min_rtt {
            Some(rtt) => bw.bytes_in(rtt),
            None => self.initial_cwnd(),
        }
    }

    /// §5.6.4.2 `BDPMultiple(gain)`.
    pub(super) fn bdp_multiple(&self, bw: Rate, gain: f64) -> u64 {
        match self.min_rtt {
            // "no valid RTT samples yet"
            None => self.initial_cwnd(),
            Some(_) => (gain * self.bdp(bw) as f64) as u64,
        }
    }

    /// §5.6.4.2 `QuantizationBudget(inflight_cap)`.
    pub(super) fn quantization_budget(&self, inflight_cap: u64) -> u64 {
        // §5.5.8.1 UpdateOffloadBudget() for TCP: 3 * C.send_quantum.
        let offload_budget = 3 * self.send_quantum;
        let mut cap = inflight_cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.mode.get().phase() == Some(ProbeBwPhase::Up) {
            cap += 2 * self.smss();
        }
        cap
    }

    /// §5.6.4.2 `Inflight(gain)` for a given bandwidth.
    pub(super) fn inflight(&self, bw: Rate, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// §5.5.1 `UpdateRound()`.
    pub(super) fn update_round(&mut self, rs: &RateSample) {
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.stats.rounds = self.round_count;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited_prev = self.cwnd_limited_now;
            self.cwnd_limited_now = false;
        } else {
            self.round_start = false;
        }
    }

    /// §5.5.1 `StartRound()`.
    pub(super) fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// §5.5.5 `UpdateMaxBw()`.
    pub(super) fn update_max_bw(&mut self, rs: &RateSample) {
        self.update_round(rs);
        if let Some(rate) = rs.delivery_rate {
            // "RS.delivery_rate >= BBR.max_bw || !RS.is_app_limited"
            if rate.as_bps() >= self.max_bw.get() || !rs.is_app_limited {
                self.max_bw.update(rate.as_bps());
            }
        }
    }

    /// §5.5.10.3 `UpdateCongestionSignals()`.
    pub(super) fn update_congestion_signals(&mut self, rs: &RateSample) {
        self.update_max_bw(rs);
        if !self.bounds.loss_round_start {
            return; // "wait until end of round trip"
        }
        let probing = self.is_probing_bw();
        if self.bounds.adapt_lower_bounds_from_congestion(
            probing,
            self.max_bw(),
            self.cwnd,
            self.cfg.beta,
        ) {
            self.stats.short_term_cuts += 1;
        }
        self.bounds.is_loss_in_round = false;
    }

    /// §5.5.9 `UpdateACKAggregation()`, as Linux BBRv3
    /// `bbr_update_ack_aggregation`: two slots of `bbr_extra_acked_win_rtts`
    /// (5) rounds, "1-2 round trips for startup" (the draft: a 10-round
    /// windowed max, 1 round in Startup).
    pub(super) fn update_ack_aggregation(&mut self, now: Time, rs: &RateSample) {
        // "rs->acked_sacked <= 0 || rs->delivered < 0 || rs->interval_us <= 0"
        if rs.delivery_rate.is_none() {
            return;
        }
        let win = if self.full_bw_reached {
            self.cfg.extra_acked_win_rtts
        } else {
            1 // "if (!bbr_full_bw_reached(sk)) extra_acked_win_rtts_thresh = 1"
        };
        let (bw, cwnd, mss) = (self.bw, self.cwnd, self.smss());
        self.extra_acked
            .update(now, self.round_start, win, bw, rs.newly_acked, cwnd, mss);
    }
}
