//! BBRv3 ProbeRTT (draft-ietf-ccwg-bbr-06 §5.3.4): the min-RTT filters
//! (§5.3.4.3 `UpdateMinRTT`; -06 schedules ProbeRTT by its own 5 s filter) and
//! the episode itself — cwnd at 0.5 BDP for 200 ms and a round, the
//! connection marked app-limited — then back to ProbeBW or Startup (§5.3.4.4).

use l4slab_core::{FlowId, SimRng, Time, Tracer};

use super::{AckPhase, Bbr3, Mode};
use crate::bbr::{DwellStep, ProbeRttDwell, RateSample};
use crate::{AckEvent, CcCtx};

impl Bbr3 {
    /// §5.3.4.3 `UpdateMinRTT()` (-06: ProbeRTT scheduled by its own 5 s filter).
    pub(super) fn update_min_rtt(&mut self, now: Time, rs: &RateSample) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.cfg.probe_rtt_interval;
        if let Some(rtt) = rs.rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.cfg.min_rtt_filter_len;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.3.4.3 `CheckProbeRTT()`.
    pub(super) fn check_probe_rtt(
        &mut self,
        now: Time,
        ack: &AckEvent,
        rs: &RateSample,
        ctx: &mut CcCtx<'_>,
    ) {
        if !matches!(self.mode.get(), Mode::ProbeRtt(_))
            && self.probe_rtt_expired
            && !self.idle_restart
        {
            // EnterProbeRTT(); SaveCwnd(); probe_rtt_done_stamp = 0
            let next = Mode::ProbeRtt(ProbeRttDwell::ENTER);
            self.transition_to(now, next, ctx.flow, ctx.tracer);
            self.save_cwnd();
            self.stats.probe_rtt_entries += 1;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if matches!(self.mode.get(), Mode::ProbeRtt(_)) {
            self.handle_probe_rtt(now, ack, ctx);
        }
        if rs.has_data() {
            self.idle_restart = false;
        }
    }

    /// §5.3.4.3 `HandleProbeRTT()`.
    pub(super) fn handle_probe_rtt(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        let Mode::ProbeRtt(mut dwell) = self.mode.get() else {
            return;
        };
        // "Ignore low rate samples during ProbeRTT: MarkConnectionAppLimited()"
        self.app_mark.mark(ack.delivered, ack.in_flight);
        // "Wait for at least BBR.ProbeRTTDuration to elapse" and "for at
        // least one round to elapse"
        let cwnd = self.probe_rtt_cwnd();
        let step = dwell.on_ack(
            now,
            ack.in_flight,
            cwnd,
            self.cfg.probe_rtt_duration,
            self.round_start,
        );
        self.mode.update(|m| *m = Mode::ProbeRtt(dwell));
        match step {
            DwellStep::Began => self.start_round(),
            DwellStep::RoundDone => self.check_probe_rtt_done(now, ctx.flow, ctx.rng, ctx.tracer),
            DwellStep::Waiting => {}
        }
    }

    /// §5.3.4.3 `CheckProbeRTTDone()`.
    pub(super) fn check_probe_rtt_done(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        if matches!(self.mode.get(), Mode::ProbeRtt(dwell) if dwell.is_over(now)) {
            self.probe_rtt_min_stamp = now; // "schedule next ProbeRTT"
            self.restore_cwnd();
            self.exit_probe_rtt(now, flow, rng, tracer);
        }
    }

    /// §5.3.4.4 `ExitProbeRTT()`.
    pub(super) fn exit_probe_rtt(
        &mut self,
        now: Time,
        flow: FlowId,
        rng: &mut SimRng,
        tracer: &mut dyn Tracer,
    ) {
        self.bounds.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down(now, flow, rng, tracer);
            self.start_probe_bw_cruise(now, flow, tracer);
        } else {
            self.transition_to(now, Mode::Startup, flow, tracer);
        }
    }
}
