//! BBRv3's control parameters (draft-ietf-ccwg-bbr-06 §5.6): pacing rate,
//! send quantum and cwnd, with the cwnd bounds of ProbeRTT (§5.6.4.5) and of
//! the model (§5.6.4.7), and cwnd saved and restored around loss recovery and
//! ProbeRTT (§5.6.4.4).

use l4slab_core::{Dur, Rate};

use super::{Bbr3, Mode, ProbeBwPhase};
use crate::bbr::{CaState, RateSample};

impl Bbr3 {
    /// §5.6.2 `InitPacingRate()`.
    pub(super) fn init_pacing_rate(&mut self, srtt: Dur) {
        let rtt = if srtt.is_zero() {
            Dur::from_millis(1)
        } else {
            self.has_seen_rtt = true;
            srtt
        };
        let nominal = Rate::from_bytes_per(self.initial_cwnd(), rtt).unwrap_or(Rate::ZERO);
        self.pacing_rate = nominal.scale(self.cfg.startup_pacing_gain);
    }

    /// §5.6.2 `SetPacingRateWithGain()`.
    pub(super) fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = self
            .bw
            .scale(gain * (100.0 - self.cfg.pacing_margin_percent) / 100.0);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §5.6.3 `SetSendQuantum()`.
    pub(super) fn set_send_quantum(&mut self) {
        let q = self.pacing_rate.bytes_in(self.cfg.send_quantum_interval);
        self.send_quantum = q.min(self.cfg.send_quantum_max).max(2 * self.smss());
    }

    /// §5.6.4.4 `SaveCwnd()`.
    pub(super) fn save_cwnd(&mut self) {
        if self.ca == CaState::Open && !matches!(self.mode.get(), Mode::ProbeRtt(_)) {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// §5.6.4.4 `RestoreCwnd()`.
    pub(super) fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §5.6.4.6 `SetCwnd()`, with `UpdateMaxInflight()` (§5.6.4.2),
    /// `BoundCwndForProbeRTT()` (§5.6.4.5) and `BoundCwndForModel()` (§5.6.4.7).
    pub(super) fn set_cwnd(&mut self, rs: &RateSample) {
        // UpdateMaxInflight(): BDPMultiple(cwnd_gain) + extra_acked, quantized
        // (Linux bbr_set_cwnd: + bbr_ack_aggregation_cwnd, capped at 100 ms of bw).
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain) + self.ack_aggregation_cwnd();
        let max_inflight = self.quantization_budget(cap);
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + rs.newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.cwnd < 2 * self.initial_cwnd() {
            // Linux bbr_set_cwnd: "else if (cwnd < target_cwnd || cwnd < 2 * bbr->init_cwnd)"
            self.cwnd += rs.newly_acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        // BoundCwndForProbeRTT()
        if matches!(self.mode.get(), Mode::ProbeRtt(_)) {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    /// §5.6.4.7 `BoundCwndForModel()`: the "Volume Cap" column of §5.6.1.
    pub(super) fn bound_cwnd_for_model(&mut self) {
        let phase = self.mode.get().phase();
        let mut cap = if phase.is_some() && phase != Some(ProbeBwPhase::Cruise) {
            self.bounds.inflight_longterm
        } else if phase == Some(ProbeBwPhase::Cruise)
            || matches!(self.mode.get(), Mode::ProbeRtt(_))
        {
            self.bounds
                .inflight_with_headroom(self.cfg.headroom, self.smss(), self.min_pipe_cwnd())
        } else {
            None
        };
        // "apply BBR.inflight_shortterm (possibly infinite)"
        if let Some(lo) = self.bounds.inflight_shortterm {
            cap = Some(cap.map_or(lo, |c| c.min(lo)));
        }
        if let Some(c) = cap {
            self.cwnd = self.cwnd.min(c.max(self.min_pipe_cwnd()));
        }
    }
}
