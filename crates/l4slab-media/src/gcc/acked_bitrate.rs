//! The acknowledged (received) bitrate: what the decrease multiplies by β
//! and what caps the increase.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/bitrate_estimator.cc`
//! (`BitrateEstimator::Update`, `UpdateWindow`) as fed by
//! `acknowledged_bitrate_estimator.cc` (every received packet, in arrival
//! order, at its arrival time). draft-ietf-rmcat-gcc-02 §5.5 only says "R
//! is the incoming rate measured over a T seconds window" (0.5–1 s).
//!
//! Simplifications (docs/models/gcc.md "Deviations"): the field-trial
//! defaults are fixed (150 ms window, 500 ms for the first sample,
//! uncertainty scale 10, symmetry cap 0, floor 0, no small-sample rule);
//! no application-limited-region scaling and no `ExpectFastRateChange`
//! (there is no ALR detector); `f64` instead of `float`; the packet's
//! own size only (no `prior_unacked_data`).

use l4slab_core::{Rate, Time};

/// libwebrtc `kInitialRateWindowMs`.
pub const INITIAL_WINDOW_MS: i64 = 500;
/// libwebrtc `kRateWindowMs`.
pub const WINDOW_MS: i64 = 150;
/// libwebrtc `uncertainty_scale_` default.
pub const UNCERTAINTY_SCALE: f64 = 10.0;
/// libwebrtc `bitrate_estimate_var_(50.0f)`.
pub const INITIAL_VARIANCE: f64 = 50.0;
/// libwebrtc: "The bitrate estimate uncertainty is increased with each
/// update to model that the bitrate changes over time" (`+ 5.f`).
pub const VARIANCE_GROWTH: f64 = 5.0;

/// libwebrtc `BitrateEstimator` behind `AcknowledgedBitrateEstimator`.
#[derive(Clone, Debug)]
pub struct AckedBitrateEstimator {
    sum: i64,
    current_window_ms: i64,
    prev_time_ms: Option<i64>,
    estimate_kbps: Option<f64>,
    estimate_var: f64,
}

impl Default for AckedBitrateEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl AckedBitrateEstimator {
    pub fn new() -> Self {
        Self {
            sum: 0,
            current_window_ms: 0,
            prev_time_ms: None,
            estimate_kbps: None,
            estimate_var: INITIAL_VARIANCE,
        }
    }

    /// The estimate; `None` until the first 500 ms of arrivals.
    pub fn bitrate(&self) -> Option<Rate> {
        self.estimate_kbps
            .map(|k| Rate::from_bps((k * 1000.0).max(0.0).round() as u64))
    }

    /// One received packet of `bytes` that arrived at `arrival` (receiver
    /// clock; libwebrtc uses integer milliseconds).
    pub fn update(&mut self, arrival: Time, bytes: u32) {
        let now_ms = (arrival.as_nanos() / 1_000_000) as i64;
        // "We use a larger window at the beginning to get a more stable
        // sample that we can use to initialize the estimate."
        let window = if self.estimate_kbps.is_none() {
            INITIAL_WINDOW_MS
        } else {
            WINDOW_MS
        };
        let Some(sample) = self.update_window(now_ms, i64::from(bytes), window) else {
            return;
        };
        let Some(est) = self.estimate_kbps else {
            // "This is the very first sample we get. Use it to initialize the estimate."
            self.estimate_kbps = Some(sample);
            return;
        };
        // sample_uncertainty = scale * |estimate - sample| / (estimate + min(sample, symmetry_cap = 0))
        let uncertainty = UNCERTAINTY_SCALE * (est - sample).abs() / est;
        let sample_var = uncertainty * uncertainty;
        // "Update a bayesian estimate of the rate, weighting it lower if the
        // sample uncertainty is large."
        let pred_var = self.estimate_var + VARIANCE_GROWTH;
        let new = (sample_var * est + pred_var * sample) / (sample_var + pred_var);
        self.estimate_kbps = Some(new.max(0.0));
        self.estimate_var = sample_var * pred_var / (sample_var + pred_var);
    }

    /// libwebrtc `UpdateWindow`: bytes per `window` ms of arrival time;
    /// `None` until a window is complete. The window's bytes are those that
    /// arrived before the packet that completes it.
    fn update_window(&mut self, now_ms: i64, bytes: i64, window: i64) -> Option<f64> {
        // "Reset if time moves backwards."
        if self.prev_time_ms.is_some_and(|p| now_ms < p) {
            self.prev_time_ms = None;
            self.sum = 0;
            self.current_window_ms = 0;
        }
        if let Some(prev) = self.prev_time_ms {
            self.current_window_ms += now_ms - prev;
            // "Reset if nothing has been received for more than a full window."
            if now_ms - prev > window {
                self.sum = 0;
                self.current_window_ms %= window;
            }
        }
        self.prev_time_ms = Some(now_ms);
        let mut sample = None;
        if self.current_window_ms >= window {
            // bitrate_sample = 8.0f * sum_ / rate_window_ms (kbit/s)
            sample = Some(8.0 * self.sum as f64 / window as f64);
            self.current_window_ms -= window;
            self.sum = 0;
        }
        self.sum += bytes;
        sample
    }
}
