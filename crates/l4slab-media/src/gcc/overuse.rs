//! The over-use detector with its adaptive threshold.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/trendline_estimator.cc`
//! (`TrendlineEstimator::Detect`, `UpdateThreshold`); draft-ietf-rmcat-
//! gcc-02 §5.4 (over-use detector) and §5.5 (adaptive threshold). Where the
//! two differ (REFERENCES §6.C3) libwebrtc is followed:
//! * the signal is `modified_trend = min(n, 60) · slope · 4`, not the
//!   Kalman estimate m(i);
//! * over-use needs `time_over_using > 10 ms` **and** `overuse_counter > 1`
//!   **and** `trend ≥ prev_trend` (draft: held ≥ 10 ms and not m(i) <
//!   m(i−1));
//! * gains `k_up = 0.0087`, `k_down = 0.039` (draft: 0.01 / 0.00018).

/// libwebrtc `kDefaultTrendlineThresholdGain`.
pub const THRESHOLD_GAIN: f64 = 4.0;
/// libwebrtc `kMinNumDeltas`: the gain grows with the sample count up to this.
pub const MIN_NUM_DELTAS: u32 = 60;
/// libwebrtc `kOverUsingTimeThreshold` (ms); draft-02 §5.4 `overuse_time_th`.
pub const OVERUSING_TIME_THRESHOLD_MS: f64 = 10.0;
/// libwebrtc `k_up_` (draft-02 §5.5 K_u = 0.01).
pub const K_UP: f64 = 0.0087;
/// libwebrtc `k_down_` (draft-02 §5.5 K_d = 0.00018).
pub const K_DOWN: f64 = 0.039;
/// libwebrtc `threshold_(12.5)`; draft-02 §5.5 `del_var_th(0)`.
pub const INITIAL_THRESHOLD_MS: f64 = 12.5;
/// libwebrtc `kMaxAdaptOffsetMs`; draft-02 §5.5 "15 ms".
pub const MAX_ADAPT_OFFSET_MS: f64 = 15.0;
/// libwebrtc `kMaxTimeDeltaMs` in `UpdateThreshold`.
pub const MAX_TIME_DELTA_MS: f64 = 100.0;
/// libwebrtc `SafeClamp(threshold_, 6.f, 600.f)`; draft-02 §5.5.
pub const THRESHOLD_MIN_MS: f64 = 6.0;
pub const THRESHOLD_MAX_MS: f64 = 600.0;

/// The detector's hypothesis (libwebrtc `BandwidthUsage`; draft-02 §5.4
/// "signal").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BandwidthUsage {
    #[default]
    Normal,
    Underusing,
    Overusing,
}

impl BandwidthUsage {
    pub fn name(self) -> &'static str {
        match self {
            BandwidthUsage::Normal => "normal",
            BandwidthUsage::Underusing => "underusing",
            BandwidthUsage::Overusing => "overusing",
        }
    }
}

/// libwebrtc `TrendlineEstimator` (the detector half).
#[derive(Clone, Debug)]
pub struct OveruseDetector {
    k_up: f64,
    k_down: f64,
    threshold: f64,
    /// ms above the threshold; `None` is libwebrtc's `-1`.
    time_over_using: Option<f64>,
    overuse_counter: u32,
    prev_trend: f64,
    last_update_ms: Option<f64>,
    hypothesis: BandwidthUsage,
    modified_trend: f64,
}

impl Default for OveruseDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl OveruseDetector {
    pub fn new() -> Self {
        Self {
            k_up: K_UP,
            k_down: K_DOWN,
            threshold: INITIAL_THRESHOLD_MS,
            time_over_using: None,
            overuse_counter: 0,
            prev_trend: 0.0,
            last_update_ms: None,
            hypothesis: BandwidthUsage::Normal,
            modified_trend: 0.0,
        }
    }

    pub fn state(&self) -> BandwidthUsage {
        self.hypothesis
    }
    /// The adaptive threshold γ (ms).
    pub fn threshold_ms(&self) -> f64 {
        self.threshold
    }
    /// The last `min(n, 60) · trend · 4` (ms).
    pub fn modified_trend(&self) -> f64 {
        self.modified_trend
    }

    /// libwebrtc `Detect(trend, ts_delta, now_ms)`: `send_delta_ms` is the
    /// send-time delta of the group pair, `now_ms` its arrival time.
    pub fn detect(
        &mut self,
        trend: f64,
        num_deltas: u32,
        send_delta_ms: f64,
        now_ms: f64,
    ) -> BandwidthUsage {
        if num_deltas < 2 {
            self.hypothesis = BandwidthUsage::Normal;
            return self.hypothesis;
        }
        // modified_trend = min(num_of_deltas_, kMinNumDeltas) * trend * threshold_gain_
        let modified_trend = f64::from(num_deltas.min(MIN_NUM_DELTAS)) * trend * THRESHOLD_GAIN;
        self.modified_trend = modified_trend;
        if modified_trend > self.threshold {
            // "Initialize the timer. Assume that we've been over-using half
            // of the time since the previous sample."
            let t = match self.time_over_using {
                None => send_delta_ms / 2.0,
                Some(t) => t + send_delta_ms,
            };
            self.time_over_using = Some(t);
            self.overuse_counter += 1;
            // time_over_using_ > overusing_time_threshold_ && overuse_counter_ > 1
            if t > OVERUSING_TIME_THRESHOLD_MS && self.overuse_counter > 1 {
                // draft-02 §5.4: not when m(i) < m(i-1); libwebrtc: trend >= prev_trend_
                if trend >= self.prev_trend {
                    self.time_over_using = Some(0.0);
                    self.overuse_counter = 0;
                    self.hypothesis = BandwidthUsage::Overusing;
                }
            }
        } else if modified_trend < -self.threshold {
            // draft-02 §5.4 / libwebrtc: under-use below −γ
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.hypothesis = BandwidthUsage::Underusing;
        } else {
            self.time_over_using = None;
            self.overuse_counter = 0;
            self.hypothesis = BandwidthUsage::Normal;
        }
        self.prev_trend = trend;
        self.update_threshold(modified_trend, now_ms);
        self.hypothesis
    }

    /// libwebrtc `UpdateThreshold`; draft-02 §5.5
    /// `γ(i) = γ(i−1) + Δt·K(i)·(|m(i)| − γ(i−1))`.
    fn update_threshold(&mut self, modified_trend: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        let abs = modified_trend.abs();
        // "Avoid adapting the threshold to big latency spikes": skip if
        // |m| > γ + 15 (draft-02 §5.5: |m| − γ > 15).
        if abs > self.threshold + MAX_ADAPT_OFFSET_MS {
            self.last_update_ms = Some(now_ms);
            return;
        }
        // k = |m| < γ ? k_down : k_up
        let k = if abs < self.threshold {
            self.k_down
        } else {
            self.k_up
        };
        // time_delta_ms = min(now_ms - last_update_ms_, kMaxTimeDeltaMs)
        let dt = (now_ms - last).min(MAX_TIME_DELTA_MS);
        self.threshold += k * (abs - self.threshold) * dt;
        // SafeClamp(threshold_, 6, 600)
        self.threshold = self.threshold.clamp(THRESHOLD_MIN_MS, THRESHOLD_MAX_MS);
        self.last_update_ms = Some(now_ms);
    }
}
