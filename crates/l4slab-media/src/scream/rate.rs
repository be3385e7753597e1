//! The media rate control (S2 §"Media Rate Control"): the encoder's target
//! bitrate from `ref_wnd / s_rtt`, and the pacing rate derived from it
//! (S2 §"Packet Pacing").

use super::{Scream, PACKET_OVERHEAD, TARGET_RATE_DIVISOR};

impl Scream {
    /// S2 §"Media Rate Control": the factor between `8·ref_wnd/s_rtt` and the
    /// target.
    pub(super) fn rate_factor(&self, ref_wnd: f64) -> f64 {
        let mss = self.mss();
        let ratio = (mss / ref_wnd).min(1.0);
        // "Scale down rate slightly when the reference window is very small
        // compared to MSS": tmp_t *= 1.0 - min(0.2, max(0.0, ref_wnd_ratio - 0.1))
        let mut tmp = 1.0 - (ratio - 0.1).clamp(0.0, 0.2);
        // "compensation for packetization overhead": tmp_t *= MSS / (MSS + PACKET_OVERHEAD)
        tmp *= mss / (mss + PACKET_OVERHEAD);
        // tmp_t /= 1.2 + rate_adjust_factor + frame_size_dev (both 0: app's)
        tmp / TARGET_RATE_DIVISOR
    }

    /// S2 §"Packet Pacing": `pace_bitrate = max(RATE_PACE_MIN,
    /// target_bitrate) * PACKET_PACING_HEADROOM` (relaxed pacing off, as SC's
    /// default `isEnableRelaxedPacing = false`).
    pub(super) fn pacing_for(&self, target_bps: f64) -> f64 {
        target_bps.max(self.cfg.rate_pace_min.as_bps() as f64) * self.cfg.packet_pacing_headroom
    }

    /// S2 §"Media Rate Control": `target_bitrate = tmp_t * 8 * ref_wnd /
    /// s_rtt`, clamped to `[TARGET_BITRATE_MIN, TARGET_BITRATE_MAX]`.
    pub(super) fn update_target(&mut self) {
        if self.s_rtt.is_none() {
            return; // start_rate until the first RTT sample
        }
        let raw = self.rate_factor(self.ref_wnd) * 8.0 * self.ref_wnd / self.srtt_secs();
        let lo = self.cfg.min_rate.as_bps() as f64;
        let hi = self.cfg.max_rate.as_bps() as f64;
        self.target_bps = raw.clamp(lo, hi);
        self.pacing_bps = self.pacing_for(self.target_bps);
    }
}
