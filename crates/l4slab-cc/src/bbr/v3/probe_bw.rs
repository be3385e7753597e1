//! BBRv3 ProbeBW (draft-ietf-ccwg-bbr-06 §5.3.3) and its four phases: DOWN
//! (pacing 0.91, drain the queue), CRUISE (1.0, hold in-flight under the
//! headroom), REFILL (1.0, one round to refill the pipe), UP (1.25, cwnd gain
//! 2.25, probe for bandwidth), and the long-term model they adapt (§5.3.3.9
//! `AdaptLongTermModel`, the loss bounds of `bounds.rs`).

use l4slab_core::{Dur, FlowId, Rate, SimRng, Time, Tracer};

use super::bounds::Bounds;
use super::{AckPhase, Bbr3, Mode, ProbeBwPhase};
use crate::bbr::RateSample;
use crate::{CcCtx, LostPacket};

impl Bbr3 {
    /// §5.3.3.8 `PickProbeWait()`.
    pub(super) fn pick_probe_wait(&mut self, rng: &mut SimRng) {
        // "Decide random round-trip bound for wait": 0 or 1.
        self.rounds_since_probe_up = rng.below(2);
        // "Decide the random wall clock bound for wait": 2 + U(0, 1) s.
        let rand_ns = (rng.uniform() * self.cfg.bw_probe_wait_rand.as_nanos() as f64) as u64;
        self.bw_probe_wait = self.cfg.bw_probe_wait_base + Dur::from_nanos(rand_ns);
    }

    /// §5.3.3.9 `StartProbeBW_DOWN()`.
    pub(super) fn start_probe_bw_down(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        self.bounds.reset_congestion_signals();
        self.bounds.probe_up_acked_per_inc = None; // "not growing BBR.inflight_longterm"
        self.pick_probe_wait(rng);
        self.cycle_stamp = now; // "start wall clock"
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Down,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_CRUISE()`.
    pub(super) fn start_probe_bw_cruise(
        &mut self,
        now: Time,
        flow: FlowId,
        tracer: &mut dyn Tracer,
    ) {
        // Linux bbr_start_bw_probe_cruise: "if (bbr->inflight_lo != ~0U)
        // bbr->inflight_lo = min(bbr->inflight_lo, bbr->inflight_hi);"
        if let (Some(lo), Some(hi)) = (
            self.bounds.inflight_shortterm,
            self.bounds.inflight_longterm,
        ) {
            self.bounds.inflight_shortterm = Some(lo.min(hi));
        }
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Cruise,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_REFILL()`.
    pub(super) fn start_probe_bw_refill(
        &mut self,
        now: Time,
        flow: FlowId,
        tracer: &mut dyn Tracer,
    ) {
        self.bounds.reset_short_term_model();
        self.bounds.bw_probe_up_rounds = 0;
        self.bounds.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Refill,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
    }

    /// §5.3.3.9 `StartProbeBW_UP()`.
    pub(super) fn start_probe_bw_up(
        &mut self,
        now: Time,
        rs: &RateSample,
        flow: FlowId,
        tracer: &mut dyn Tracer,
    ) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate.unwrap_or(Rate::ZERO);
        let next = Mode::ProbeBw {
            phase: ProbeBwPhase::Up,
            phase_start: now,
        };
        self.transition_to(now, next, flow, tracer);
        self.stats.bw_probes += 1;
        let (cwnd, smss) = (self.cwnd, self.smss());
        self.bounds.raise_inflight_longterm_slope(cwnd, smss);
    }

    /// §5.3.3.8 `IsTimeToProbeBW()` (starts REFILL when it is).
    pub(super) fn is_time_to_probe_bw(
        &mut self,
        now: Time,
        flow: FlowId,
        tracer: &mut dyn Tracer,
    ) -> bool {
        // HasElapsedInPhase(bw_probe_wait): Now() > cycle_stamp + interval.
        let elapsed = now > self.cycle_stamp + self.bw_probe_wait;
        // IsRenoCoexistenceProbeTime(): rounds >= min(TargetInflight(), 63),
        // TargetInflight counted in packets as Linux bbr_target_inflight does.
        let reno_rounds = (self.target_inflight() / self.smss()).min(self.cfg.bw_probe_max_rounds);
        if elapsed || self.rounds_since_probe_up >= reno_rounds {
            self.start_probe_bw_refill(now, flow, tracer);
            return true;
        }
        false
    }

    /// §5.3.3.9 `IsTimeToCruise()`.
    pub(super) fn is_time_to_cruise(&self, in_flight: u64) -> bool {
        let headroom = self.bounds.inflight_with_headroom(
            self.cfg.headroom,
            self.smss(),
            self.min_pipe_cwnd(),
        );
        if headroom.is_some_and(|h| in_flight > h) {
            return false; // "not enough headroom"
        }
        // "C.inflight > estimated BDP"
        in_flight <= self.inflight(self.max_bw(), 1.0)
    }

    /// §5.3.3.9 `IsTimeToGoDown()`.
    pub(super) fn is_time_to_go_down(&mut self, in_flight: u64, rs: &RateSample) -> bool {
        let hi = self.bounds.inflight_longterm;
        // "Precautionary Bandwidth Probing: Deceleration"
        if self.bounds.prev_probe_too_high && hi.is_some_and(|h| in_flight >= h) {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && hi.is_some_and(|h| self.cwnd >= h) {
            // "bw is limited by BBR.inflight_longterm"
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate.unwrap_or(Rate::ZERO);
        } else if self.full_bw_now {
            return true; // "we estimate we've fully used path bw"
        }
        false
    }

    /// §5.5.10.2 `HandleInflightTooHigh()`.
    pub(super) fn handle_inflight_too_high(
        &mut self,
        now: Time,
        rs: &RateSample,
        ctx: &mut CcCtx<'_>,
    ) {
        let target = self.target_inflight();
        self.bounds
            .handle_inflight_too_high(rs, target, self.cfg.beta);
        self.stats.inflight_too_high += 1;
        if self.mode.get().phase() == Some(ProbeBwPhase::Up) {
            self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
        }
    }

    /// Linux `bbr_skb_marked_lost` (draft-ietf-ccwg-bbr-06 §5.5.10.2
    /// `HandleLostPacket`): each packet is tested as the transport marks it
    /// lost. While ACKs carry feedback from a bandwidth probe, "construct a
    /// rate sample that estimates what happened in the flight leading up to
    /// this lost skb, then see if the loss rate went too high, and if so at
    /// which packet": `RS.tx_in_flight = P.tx_in_flight`, `RS.lost = C.lost
    /// - P.lost`; if that is more than `loss_thresh` of it, the bound is set
    /// from the in-flight at which loss crossed the threshold
    /// ([`Bounds::inflight_at_loss`]). The ACK path
    /// ([`Bbr3::adapt_long_term_model`]) still makes the same test on each
    /// ACK's sample, as `bbr_adapt_upper_bounds` does.
    pub(super) fn handle_lost_packet(&mut self, now: Time, lost: &LostPacket, ctx: &mut CcCtx<'_>) {
        // bbr_note_loss (draft NoteLoss), as on the ACK path.
        if self.bounds.note_loss(lost.delivered) {
            self.save_cwnd();
        }
        if !self.bounds.is_bw_probe_sample {
            return; // "not an skb sent while probing for bandwidth"
        }
        let mut rs = RateSample {
            tx_in_flight: lost.tx_in_flight,
            lost: lost.total_lost.saturating_sub(lost.prior_lost),
            // scb->tx.is_app_limited, which includes BBR's own ProbeRTT mark.
            is_app_limited: lost.app_limited || self.app_mark.covers(lost.prior_delivered),
            ..RateSample::default()
        };
        if Bounds::is_inflight_too_high(&rs, self.cfg.loss_thresh) {
            rs.tx_in_flight = Bounds::inflight_at_loss(lost, self.cfg.loss_thresh, self.smss());
            self.stats.inflight_too_high_at_loss += 1;
            self.handle_inflight_too_high(now, &rs, ctx);
        }
    }

    /// §5.3.3.9 `AdaptLongTermModel()`: returns true if it decided a transition.
    pub(super) fn adapt_long_term_model(
        &mut self,
        now: Time,
        rs: &RateSample,
        ctx: &mut CcCtx<'_>,
    ) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // "starting to get bw probing samples"
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // "end of samples from bw probing phase"
            self.bounds.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.in_probe_bw() && !rs.is_app_limited {
                // §5.5.6 AdvanceMaxBwFilter()
                self.cycle_count += 1;
                self.max_bw.advance();
            }
            // "Precautionary Bandwidth Probing: Acceleration"
            if self.in_probe_bw()
                && self.prev_probe_precautionary
                && !self.bounds.prev_probe_too_high
            {
                self.start_probe_bw_refill(now, ctx.flow, ctx.tracer);
                return true;
            }
        }
        if Bounds::is_inflight_too_high(rs, self.cfg.loss_thresh) {
            // Linux bbr_adapt_upper_bounds: the ACK's own sample (each lost
            // packet was tested as it was marked, `handle_lost_packet`);
            // "only react once per bw probe".
            if self.bounds.is_bw_probe_sample {
                self.handle_inflight_too_high(now, rs, ctx);
            }
            return false;
        }
        // "Loss rate is safe. Adjust upper bounds upward."
        let Some(hi) = self.bounds.inflight_longterm else {
            return false; // "no upper bounds to raise"
        };
        if rs.tx_in_flight > hi {
            self.bounds.inflight_longterm = Some(rs.tx_in_flight);
        }
        if self.mode.get().phase() == Some(ProbeBwPhase::Up) {
            let limited = self.is_cwnd_limited();
            let (cwnd, round_start, smss) = (self.cwnd, self.round_start, self.smss());
            self.bounds.probe_inflight_longterm_upward(
                limited,
                cwnd,
                rs.newly_acked,
                round_start,
                smss,
            );
        }
        false
    }

    /// §5.3.3.9 `UpdateProbeBWCyclePhase()`.
    pub(super) fn update_probe_bw_cycle_phase(
        &mut self,
        now: Time,
        in_flight: u64,
        rs: &RateSample,
        ctx: &mut CcCtx<'_>,
    ) {
        if !self.full_bw_reached {
            return; // "only handling steady-state behavior here"
        }
        if self.adapt_long_term_model(now, rs, ctx) {
            return; // "already decided state transition"
        }
        let Some(phase) = self.mode.get().phase() else {
            return; // "only handling ProbeBW states here"
        };
        match phase {
            ProbeBwPhase::Down => {
                if self.is_time_to_probe_bw(now, ctx.flow, ctx.tracer) {
                    return;
                }
                if self.is_time_to_cruise(in_flight) {
                    self.start_probe_bw_cruise(now, ctx.flow, ctx.tracer);
                }
            }
            ProbeBwPhase::Cruise => {
                self.is_time_to_probe_bw(now, ctx.flow, ctx.tracer);
            }
            ProbeBwPhase::Refill => {
                // "After one round of REFILL, start UP"
                if self.round_start {
                    self.bounds.is_bw_probe_sample = true;
                    self.start_probe_bw_up(now, rs, ctx.flow, ctx.tracer);
                }
            }
            ProbeBwPhase::Up => {
                if self.is_time_to_go_down(in_flight, rs) {
                    self.bounds.prev_probe_too_high = false; // "no high loss (yet)"
                    self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bbr::v3::Bbr3Config;

    #[test]
    fn probe_wait_is_two_to_three_seconds() {
        let mut b = Bbr3::new(Bbr3Config::default());
        let mut rng = SimRng::derive(3, "probe-wait");
        let mut rounds = [0u32; 2];
        for _ in 0..1000 {
            b.pick_probe_wait(&mut rng);
            assert!(b.bw_probe_wait >= Dur::from_secs(2) && b.bw_probe_wait < Dur::from_secs(3));
            rounds[b.rounds_since_probe_up as usize] += 1;
        }
        // rounds_since_probe_up starts at 0 or 1, about evenly.
        assert!(rounds[0] > 400 && rounds[1] > 400, "{rounds:?}");
    }
}
