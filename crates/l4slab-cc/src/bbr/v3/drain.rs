//! BBRv3 Drain (draft-ietf-ccwg-bbr-06 §5.3.2; Linux `bbr_check_drain`):
//! pacing gain 1/2.885 until the queue Startup built is gone (in-flight at
//! most one BDP with its quantization budget), then ProbeBW_DOWN.

use l4slab_core::Time;

use super::{Bbr3, Mode};
use crate::CcCtx;

impl Bbr3 {
    /// §5.3.2 `EnterDrain()`.
    pub(super) fn enter_drain(&mut self, now: Time, ctx: &mut CcCtx<'_>) {
        let next = Mode::Drain {
            start_round: self.round_count,
        };
        self.transition_to(now, next, ctx.flow, ctx.tracer);
        // Linux bbr_check_drain, on entering Drain: "bbr_reset_congestion_signals(sk)"
        self.bounds.reset_congestion_signals();
    }

    /// §5.3.2 `CheckDrainDone()`.
    pub(super) fn check_drain_done(&mut self, now: Time, in_flight: u64, ctx: &mut CcCtx<'_>) {
        if let Mode::Drain { .. } = self.mode.get() {
            // Linux bbr_check_drain uses max_bw here (BBR.bw equals it in Drain
            // unless a lossy round has already set bw_shortterm).
            // No cap on Drain's length: Linux leaves Drain only on in-flight.
            if in_flight <= self.inflight(self.max_bw(), 1.0) {
                // §5.3.3.9 EnterProbeBW(): cwnd_gain = DefaultCwndGain; StartProbeBW_DOWN()
                self.start_probe_bw_down(now, ctx.flow, ctx.rng, ctx.tracer);
            }
        }
    }
}
