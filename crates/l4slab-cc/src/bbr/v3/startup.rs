//! BBRv3 Startup (draft-ietf-ccwg-bbr-06 §5.3.1; Linux BBRv3, google/bbr
//! branch v3, net/ipv4/tcp_bbr.c): pacing gain 2.77 until the pipe is full —
//! three rounds with less than 25 % delivery-rate growth
//! (`bbr_check_full_bw_reached`) or, at the end of a loss round in fast
//! recovery, at least 6 loss events in the round and a rate sample whose loss
//! exceeds 2 % of its `tx_in_flight` (`bbr_check_loss_too_high_in_startup`)
//! — then Drain.

use l4slab_core::{Rate, Time};

use super::bounds::Bounds;
use super::{Bbr3, Mode, StartupExit};
use crate::bbr::{CaState, RateSample};
use crate::CcCtx;

impl Bbr3 {
    /// §5.3.1.2 `ResetFullBW()` (Linux `bbr_reset_full_bw`).
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = Rate::ZERO;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// Linux `bbr_check_full_bw_reached` (§5.3.1.2 `CheckFullBWReached()`).
    /// As in Linux, and unlike the draft's pseudocode, growth is tested on
    /// every ACK — any sample 25 % above the baseline resets it — and only
    /// the count of flat rounds waits for a round start.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let rate = rs.delivery_rate.unwrap_or(Rate::ZERO);
        // "if (ctx->sample_bw >= bw_thresh) { bbr_reset_full_bw(sk); bbr->full_bw = ctx->sample_bw; return; }"
        if rate.as_bps() as f64 >= self.full_bw.as_bps() as f64 * self.cfg.full_bw_growth {
            self.reset_full_bw();
            self.full_bw = rate;
            return;
        }
        if !self.round_start {
            return; // "if (!bbr->round_start) return;"
        }
        self.full_bw_count += 1; // "++bbr->full_bw_cnt"
        self.full_bw_now = self.full_bw_count >= self.cfg.full_bw_count;
        if self.full_bw_now && !self.full_bw_reached {
            self.full_bw_reached = true; // "bbr->full_bw_reached |= bbr->full_bw_now"
            if self.mode.get() == Mode::Startup {
                self.stats.startup_exit = Some(StartupExit::BandwidthPlateau);
            }
        }
    }

    /// Linux `bbr_check_loss_too_high_in_startup` (§5.3.1.3
    /// `CheckStartupHighLoss()`): on the ACK that starts a new loss round,
    /// in fast recovery, with at least `BBRStartupFullLossCnt` (6) ACKs that
    /// marked data lost in the round that ends, and this ACK's rate sample
    /// "inflight too high" (`RS.lost > RS.tx_in_flight * LossThresh`).
    /// The caller counts `loss_events_in_round` ("if (rs->losses ...)
    /// bbr->loss_events_in_round++") and resets it at the loss round start.
    pub(super) fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if self.bounds.loss_round_start
            && self.ca == CaState::Recovery
            && self.loss_events_in_round >= self.cfg.startup_full_loss_count
            && Bounds::is_inflight_too_high(rs, self.cfg.loss_thresh)
        {
            self.handle_queue_too_high_in_startup();
        }
    }

    /// Linux `bbr_handle_queue_too_high_in_startup`: "full_bw_reached = 1;
    /// bdp = bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT); inflight_hi =
    /// max(bdp, inflight_latest)" (the BDP with its quantization budget;
    /// `full_bw_now` stays as it is).
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        self.stats.startup_exit = Some(StartupExit::Loss);
        let bdp = self.inflight(self.max_bw(), 1.0);
        self.bounds.inflight_longterm = Some(bdp.max(self.bounds.inflight_latest));
    }

    /// §5.3.1 `CheckStartupDone()` (Linux `bbr_check_drain`, first half).
    pub(super) fn check_startup_done(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        if self.mode.get() == Mode::Startup && self.full_bw_reached {
            self.enter_drain(now, ctx);
        }
    }
}
