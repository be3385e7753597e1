//! The reference window `ref_wnd` (S2 §"Reference Window Update"): the CE
//! fraction `l4s_alpha` (S2 §"Receiving ECN-CE for L4S"), then per report a
//! reduction on loss, CE or queue delay and an increase per acknowledged
//! unmarked byte.

use l4slab_core::Time;

use super::{Scream, L4S_ALPHA_INTERVAL, L4S_AVG_G_DOWN, L4S_AVG_G_UP};

/// Why `ref_wnd` was cut (S2 §"Reference Window Reduction": `is_loss_t`,
/// `is_ce_t`, `is_virtual_ce_t`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CutKind {
    /// `ref_wnd *= BETA_LOSS`.
    Loss,
    /// L4S: `ref_wnd *= 1 − backoff`, `backoff` from `l4s_alpha`.
    L4sCe { backoff: f64 },
    /// Classic ECN: `ref_wnd *= BETA_ECN`.
    ClassicCe,
    /// Queue delay as pseudo-L4S: `ref_wnd *= 1 − backoff`, `backoff` from
    /// `alpha_v`.
    Delay { alpha_v: f64, backoff: f64 },
}

/// The last reduction: `ref_wnd` just before and just after it (before the
/// same update's increase).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cut {
    pub at: Time,
    pub kind: CutKind,
    pub before: f64,
    pub after: f64,
}

impl Scream {
    /// S2 §"Receiving ECN-CE for L4S": `if (now - last_update_l4s_alpha_time
    /// >= min(0.01, s_rtt))`.
    pub(super) fn maybe_update_alpha(&mut self, now: Time) {
        let interval = L4S_ALPHA_INTERVAL.min(self.srtt());
        if !Self::elapsed(now, self.last_alpha_update, interval) || self.delivered_this_rtt == 0 {
            // SC: only "if (bytesDeliveredThisRtt > 0)".
            return;
        }
        // fraction_marked_t = data_units_marked_this_rtt / data_units_delivered_this_rtt
        let f = self.marked_this_rtt as f64 / self.delivered_this_rtt as f64;
        if f >= self.l4s_alpha {
            // l4s_alpha = L4S_AVG_G_UP * fraction_marked_t + (1 - L4S_AVG_G_UP) * l4s_alpha
            self.l4s_alpha = (L4S_AVG_G_UP * f + (1.0 - L4S_AVG_G_UP) * self.l4s_alpha).min(1.0);
        } else {
            // l4s_alpha = (1.0 - L4S_AVG_G_DOWN) * l4s_alpha
            self.l4s_alpha *= 1.0 - L4S_AVG_G_DOWN;
        }
        self.last_alpha_update = Some(now);
        self.delivered_this_rtt = 0;
        self.marked_this_rtt = 0;
        self.last_fraction_marked = f;
        self.stats.alpha_updates += 1;
    }

    /// S2 §"Reference Window Update": reduction, then increase.
    pub(super) fn update_ref_wnd(&mut self, now: Time) {
        let mss = self.mss();
        let s_rtt = self.srtt();
        let s_rtt_s = self.srtt_secs();
        let vrtt_s = self.cfg.virtual_rtt.as_secs_f64();
        let target_q = self.cfg.qdelay_target.as_secs_f64();
        // ref_wnd_ratio = min(1.0, MSS / ref_wnd), taken before the cut
        // (SC `cwndRatio` at the top of `updateCwnd`).
        let ref_wnd_ratio = (mss / self.ref_wnd).min(1.0);

        // ---- S2 §"Reference Window Reduction" ----
        // scl_t = clamp((8 * (ref_wnd - ref_wnd_i) / ref_wnd_i)^2, 0.1, 1.0)
        let scl = {
            let t = 8.0 * (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i;
            (t * t).clamp(0.1, 1.0)
        };
        // if (loss_detected || data_units_marked) last_congestion_detected_time = now
        if self.loss_detected || self.data_units_marked {
            self.last_congestion_detected = Some(now);
        }
        // if (now - last_reaction_to_congestion_time >= min(VIRTUAL_RTT, s_rtt))
        let mut kind: Option<CutKind> = None;
        if Self::elapsed(now, self.last_reaction, self.cfg.virtual_rtt.min(s_rtt)) {
            let half = target_q / 2.0;
            if self.loss_detected {
                kind = Some(CutKind::Loss);
            } else if self.data_units_marked {
                kind = Some(if self.cfg.l4s {
                    CutKind::L4sCe { backoff: 0.0 }
                } else {
                    CutKind::ClassicCe
                });
            } else if self.qdelay_avg > half {
                // l4s_alpha_v_t = min(1.0, max(0.0, (qdelay_avg - qdelay_target/2) / (qdelay_target/2)))
                let alpha_v = ((self.qdelay_avg - half) / half).clamp(0.0, 1.0);
                kind = Some(CutKind::Delay {
                    alpha_v,
                    backoff: 0.0,
                });
            }
        }
        if kind.is_some() && self.ref_wnd_i_update_allowed {
            // "Update ref_wnd_i": ref_wnd_i = ref_wnd
            self.ref_wnd_i = self.ref_wnd;
            self.ref_wnd_i_update_allowed = false;
        }
        let before = self.ref_wnd;
        // backoff_t /= max(1.0, s_rtt / VIRTUAL_RTT)
        let rtt_scale = (s_rtt_s / vrtt_s).max(1.0);
        match &mut kind {
            None => {}
            Some(CutKind::Loss) => {
                // ref_wnd = ref_wnd * BETA_LOSS
                self.ref_wnd *= self.cfg.beta_loss;
                self.stats.loss_backoffs += 1;
                self.last_loss_reaction = Some(now);
            }
            Some(CutKind::L4sCe { backoff }) => {
                // backoff_t = l4s_alpha / 2
                let mut b = self.l4s_alpha / 2.0 / rtt_scale;
                if self.qdelay < target_q * 0.25 {
                    // backoff_t *= max(0.25, scl_t); backoff_t *= max(0.25, ref_wnd_delay_scale)
                    b *= scl.max(0.25);
                    b *= self.ref_wnd_delay_scale.max(0.25);
                }
                // if (now - last_reaction_to_congestion_time > 100 * max(VIRTUAL_RTT, s_rtt))
                //   ref_wnd = min(ref_wnd, max_bytes_in_flight_prev)
                let long = self.cfg.virtual_rtt.max(s_rtt).saturating_mul(100);
                if self
                    .last_reaction
                    .is_none_or(|t| now.saturating_since(t) > long)
                    && self.max_bytes_in_flight_prev > 0
                {
                    self.ref_wnd = self.ref_wnd.min(self.max_bytes_in_flight_prev as f64);
                }
                // ref_wnd = (1.0 - backoff_t) * ref_wnd
                self.ref_wnd *= 1.0 - b;
                *backoff = b;
                self.stats.ce_backoffs += 1;
            }
            Some(CutKind::ClassicCe) => {
                // ref_wnd = ref_wnd * BETA_ECN
                self.ref_wnd *= self.cfg.beta_ecn;
                self.stats.classic_ce_backoffs += 1;
            }
            Some(CutKind::Delay { alpha_v, backoff }) => {
                // backoff_t = l4s_alpha_v_t / 2; backoff_t /= max(1.0, s_rtt/VIRTUAL_RTT)
                let b = *alpha_v / 2.0 / rtt_scale;
                self.ref_wnd *= 1.0 - b;
                *backoff = b;
                self.last_alpha_v = *alpha_v;
                self.stats.delay_backoffs += 1;
            }
        }
        // ref_wnd = max(MIN_REF_WND, ref_wnd)
        self.ref_wnd = self.ref_wnd.max(f64::from(self.cfg.min_ref_wnd));
        if let Some(kind) = kind {
            // last_reaction_to_congestion_time = now; the flags cover the
            // time since then.
            self.last_reaction = Some(now);
            self.loss_detected = false;
            self.data_units_marked = false;
            self.last_cut = Some(Cut {
                at: now,
                kind,
                before,
                after: self.ref_wnd,
            });
        }

        // ---- S2 §"Reference Window Increase" ----
        // post_congestion_scale_t = clamp((now - last_congestion_detected_time) /
        //   (POST_CONGESTION_DELAY_RTTS * max(VIRTUAL_RTT, s_rtt)), 0, 1)
        let post = match self.last_congestion_detected {
            None => 1.0,
            Some(t) => {
                let span = self.cfg.post_congestion_delay_rtts * vrtt_s.max(s_rtt_s);
                (now.saturating_since(t).as_secs_f64() / span).clamp(0.0, 1.0)
            }
        };
        // ref_wnd_scale_factor_t = 1.0 + (MUL_INCREASE_FACTOR * ref_wnd) / MSS
        let scale_factor = 1.0 + self.cfg.mul_increase_factor * self.ref_wnd / mss;
        // bytes_newly_acked_minus_ce_t = bytes_newly_acked - bytes_newly_acked_ce
        let acked = self
            .bytes_newly_acked
            .saturating_sub(self.bytes_newly_acked_ce) as f64;
        // increment_t = bytes_newly_acked_minus_ce_t * ref_wnd_ratio
        let mut inc = acked * ref_wnd_ratio;
        // "Reduce increment for small RTTs": increment_t *= min(1.0, s_rtt / VIRTUAL_RTT)
        inc *= (s_rtt_s / vrtt_s).min(1.0);
        // increment_t *= max(0.25, scl_t)
        inc *= scl.max(0.25);
        // increment_t *= max(0.1, ref_wnd_delay_scale)  (1.0 unless REDUCE_JITTER)
        inc *= self.ref_wnd_delay_scale.max(0.1);
        // if (tmp_t > 1.0) tmp_t = 1.0 + (tmp_t - 1.0) * post_congestion_scale_t * scl_t
        let mut mult = scale_factor;
        if mult > 1.0 {
            mult = 1.0 + (mult - 1.0) * post * scl;
        }
        inc *= mult;
        let prev = self.ref_wnd;
        // max_allowed_t = MSS + max(max_bytes_in_flight, max_bytes_in_flight_prev)
        //   * BYTES_IN_FLIGHT_HEAD_ROOM
        let max_allowed = mss
            + self.max_bytes_in_flight.max(self.max_bytes_in_flight_prev) as f64
                * self.cfg.bytes_in_flight_head_room;
        // if (ref_wnd_t <= max_allowed_t && target_bitrate < TARGET_BITRATE_MAX)
        if self.ref_wnd + inc <= max_allowed && self.target_bps < self.cfg.max_rate.as_bps() as f64
        {
            self.ref_wnd += inc;
        }
        if self.ref_wnd > prev {
            self.ref_wnd_i_update_allowed = true;
        }
        // "bytes_newly_acked and bytes_newly_acked_ce are reset to zero after
        // a ref_wnd update"
        self.bytes_newly_acked = 0;
        self.bytes_newly_acked_ce = 0;
    }
}
