//! BBRv3 Startup (draft-ietf-ccwg-bbr-06 §5.3.1): pacing gain 2.77 until the
//! pipe is full — three rounds with less than 25 % delivery-rate growth
//! (§5.3.1.2 `CheckFullBWReached`) or a full round of fast recovery with high
//! loss (§5.3.1.3 `CheckStartupHighLoss`; the approximation is in the module
//! docs of `mod.rs`) — then Drain.

use l4slab_core::{Rate, Time};

use super::{Bbr3, Mode, StartupExit};
use crate::bbr::{CaState, RateSample};
use crate::CcCtx;

impl Bbr3 {
    /// §5.3.1.2 `ResetFullBW()`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = Rate::ZERO;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.1.2 `CheckFullBWReached()`.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return; // "no need to check for a full pipe now"
        }
        let rate = rs.delivery_rate.unwrap_or(Rate::ZERO);
        if rate.as_bps() as f64 >= self.full_bw.as_bps() as f64 * self.cfg.full_bw_growth {
            self.reset_full_bw(); // "bw is still growing, so reset"
            self.full_bw = rate; // "record new baseline bw"
            return;
        }
        self.full_bw_count += 1; // "another round w/o much growth"
        self.full_bw_now = self.full_bw_count >= self.cfg.full_bw_count;
        if self.full_bw_now && !self.full_bw_reached {
            self.full_bw_reached = true;
            if self.mode.get() == Mode::Startup {
                self.stats.startup_exit = Some(StartupExit::BandwidthPlateau);
            }
        }
    }

    /// §5.3.1.3 `CheckStartupHighLoss()` (see the module docs for the approximation).
    pub(super) fn check_startup_high_loss(&mut self) {
        if self.full_bw_reached || self.mode.get() != Mode::Startup || !self.bounds.loss_round_start
        {
            return;
        }
        // "The loss rate over the time scale of a single full round trip"
        let delivered = self.delivered.saturating_sub(self.loss_round_began);
        let total = delivered + self.lost_in_round;
        let loss_rate = if total == 0 {
            0.0
        } else {
            self.lost_in_round as f64 / total as f64
        };
        // "The connection has been in fast recovery for at least one full
        // packet-timed round trip": the loss round now ending began after
        // recovery did.
        let full_round_in_recovery =
            self.ca == CaState::Recovery && self.loss_round_began >= self.recovery_began;
        if full_round_in_recovery
            && loss_rate > self.cfg.loss_thresh
            && self.loss_events_in_round >= self.cfg.startup_full_loss_count
        {
            // "sets BBR.full_bw_reached = true. Then it sets
            // BBR.inflight_longterm to ... max(BBR.bdp, BBR.inflight_latest)"
            self.full_bw_reached = true;
            self.full_bw_now = true;
            self.stats.startup_exit = Some(StartupExit::Loss);
            let hi = self.bdp(self.bw).max(self.bounds.inflight_latest);
            self.bounds.inflight_longterm = Some(hi);
        }
    }

    /// §5.3.1 `CheckStartupDone()`.
    pub(super) fn check_startup_done(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        self.check_startup_high_loss();
        if self.mode.get() == Mode::Startup && self.full_bw_reached {
            self.enter_drain(now, ctx);
        }
    }
}
