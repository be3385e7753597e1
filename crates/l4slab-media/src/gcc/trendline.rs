//! The trendline filter: a least-squares slope over the last 20 smoothed
//! accumulated delay variations.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/trendline_estimator.cc`
//! (`TrendlineEstimator::UpdateTrendline`, `LinearFitSlope`). draft-ietf-
//! rmcat-gcc-02 §5.3 specifies a Kalman filter instead (q = 10⁻³, e(0) =
//! 0.1); libwebrtc replaced it with this filter and that is what runs in
//! real calls, so this is what is implemented (REFERENCES §6.C3).
//!
//! The over-use detector that consumes the slope is in `overuse.rs`
//! (libwebrtc keeps both in one class).

use std::collections::VecDeque;

/// libwebrtc `kDefaultTrendlineWindowSize` (field trial range 10–200).
pub const DEFAULT_WINDOW_SIZE: usize = 20;
/// libwebrtc `kDefaultTrendlineSmoothingCoeff`.
pub const SMOOTHING_COEF: f64 = 0.9;
/// libwebrtc `kDeltaCounterMax`.
pub const DELTA_COUNTER_MAX: u32 = 1000;

/// One filter output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendSample {
    /// Slope of smoothed accumulated delay against arrival time (ms/ms):
    /// an estimate of `(send rate − capacity)/capacity`.
    pub trend: f64,
    /// Deltas seen so far, at most 1000 (libwebrtc `num_of_deltas_`).
    pub num_deltas: u32,
    /// The smoothed accumulated delay (ms), for plots.
    pub smoothed_delay_ms: f64,
}

/// libwebrtc `TrendlineEstimator` (the filter half).
#[derive(Clone, Debug)]
pub struct TrendlineEstimator {
    window_size: usize,
    smoothing_coef: f64,
    num_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated_delay: f64,
    smoothed_delay: f64,
    /// (arrival ms since the first, smoothed delay ms); bounded by
    /// `window_size`, allocated once.
    delay_hist: VecDeque<(f64, f64)>,
    prev_trend: f64,
}

impl Default for TrendlineEstimator {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW_SIZE)
    }
}

impl TrendlineEstimator {
    /// # Panics
    /// If `window_size < 2` (libwebrtc: "Window size must be greater than 1").
    pub fn new(window_size: usize) -> Self {
        assert!(window_size > 1, "trendline window must be greater than 1");
        Self {
            window_size,
            smoothing_coef: SMOOTHING_COEF,
            num_deltas: 0,
            first_arrival_ms: None,
            accumulated_delay: 0.0,
            smoothed_delay: 0.0,
            delay_hist: VecDeque::with_capacity(window_size + 1),
            prev_trend: 0.0,
        }
    }

    /// One group delta. `arrival_ms` is the arrival time (receiver clock,
    /// ms) of the packet that completed the delta.
    pub fn update(
        &mut self,
        recv_delta_ms: f64,
        send_delta_ms: f64,
        arrival_ms: f64,
    ) -> TrendSample {
        // trendline_estimator.cc: delta_ms = recv_delta_ms - send_delta_ms
        let delta_ms = recv_delta_ms - send_delta_ms;
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        // "Exponential backoff filter."
        self.accumulated_delay += delta_ms;
        // smoothed_delay_ = smoothing_coef_ * smoothed_delay_ + (1 - smoothing_coef_) * accumulated_delay_
        self.smoothed_delay = self.smoothing_coef * self.smoothed_delay
            + (1.0 - self.smoothing_coef) * self.accumulated_delay;
        // "Simple linear regression." over the last window_size points.
        self.delay_hist
            .push_back((arrival_ms - first, self.smoothed_delay));
        if self.delay_hist.len() > self.window_size {
            self.delay_hist.pop_front();
        }
        let mut trend = self.prev_trend;
        if self.delay_hist.len() == self.window_size {
            // Only a full window gives a slope; otherwise the previous one stays.
            trend = linear_fit_slope(&self.delay_hist).unwrap_or(trend);
        }
        self.prev_trend = trend;
        TrendSample {
            trend,
            num_deltas: self.num_deltas,
            smoothed_delay_ms: self.smoothed_delay,
        }
    }
}

/// libwebrtc `LinearFitSlope`: `k = Σ(x−x̄)(y−ȳ) / Σ(x−x̄)²`, `None` when
/// all x are equal.
pub fn linear_fit_slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    debug_assert!(points.len() >= 2);
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x, sy + y));
    let (x_avg, y_avg) = (sx / n, sy / n);
    let (mut num, mut den) = (0.0, 0.0);
    for &(x, y) in points {
        num += (x - x_avg) * (y - y_avg);
        den += (x - x_avg) * (x - x_avg);
    }
    (den != 0.0).then(|| num / den)
}
