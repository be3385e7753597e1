//! Throughput-based ABR as dash.js's default `ThroughputRule`: the next
//! segment at the highest rung below a safe estimate of the throughput
//! past segments were downloaded at.
//!
//! Estimator: dash.js `ThroughputHistory` with its EWMA averaging
//! (`abr.movingAverageMethod = "ewma"`): two exponentially weighted moving
//! averages of per-segment throughput, each sample weighted by its
//! download time in seconds, with half-lives of 3 s (fast) and 8 s (slow);
//! the estimate is the lower of the two (react to drops fast, to rises
//! slowly). hls.js's `EwmaBandWidthEstimator` is the same shape (half-lives
//! 3 s and 9 s for VoD). The rule multiplies the estimate by dash.js's
//! `abr.bandwidthSafetyFactor = 0.9` and picks the highest rung at or
//! below it (`AbrController.getQualityForBitrate`).
//!
//! Not modelled: dash.js's latency correction of the estimate, its
//! abandonment of a slow download, and the other rules it combines this
//! one with (`InsufficientBufferRule`, `SwitchHistoryRule`, ...).

use l4slab_core::Dur;

use super::{highest_at_most, Abr, AbrInput};

/// dash.js Settings `abr.ewma.throughputFastHalfLifeSeconds: 3`.
pub const FAST_HALF_LIFE_S: f64 = 3.0;
/// dash.js Settings `abr.ewma.throughputSlowHalfLifeSeconds: 8`.
pub const SLOW_HALF_LIFE_S: f64 = 8.0;
/// dash.js Settings `abr.bandwidthSafetyFactor: 0.9`.
pub const SAFETY_FACTOR: f64 = 0.9;
/// Before any download: dash.js `AbrController`'s `DEFAULT_VIDEO_BITRATE`
/// (1000 kbit/s) as the initial bitrate.
pub const INITIAL_BPS: f64 = 1_000_000.0;
/// hls.js `EwmaBandWidthEstimator.minDelayMs_`: a download counts as at
/// least 50 ms (a cached or tiny segment says nothing about the path).
pub const MIN_DOWNLOAD_S: f64 = 0.05;

/// dash.js `ThroughputHistory`'s pair of EWMAs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EwmaThroughput {
    fast: f64,
    slow: f64,
    total_weight: f64,
}

impl EwmaThroughput {
    /// A segment of `bytes` downloaded in `download`.
    pub fn sample(&mut self, bytes: u64, download: Dur) {
        let secs = download.as_secs_f64().max(MIN_DOWNLOAD_S);
        let bps = bytes as f64 * 8.0 / secs;
        // dash.js ThroughputHistory.updateEwmaEstimate:
        // alpha = 0.5^(weight / halfLife); estimate = (1 - alpha) * value + alpha * estimate
        let fast = libm::pow(0.5, secs / FAST_HALF_LIFE_S);
        let slow = libm::pow(0.5, secs / SLOW_HALF_LIFE_S);
        self.fast = (1.0 - fast) * bps + fast * self.fast;
        self.slow = (1.0 - slow) * bps + slow * self.slow;
        self.total_weight += secs;
    }

    /// The estimate in bit/s, `None` before the first sample.
    pub fn estimate(&self) -> Option<f64> {
        if self.total_weight <= 0.0 {
            return None;
        }
        // dash.js ThroughputHistory.getAverageEwma: the estimates start at 0,
        // so each is divided by 1 - 0.5^(totalWeight / halfLife); the lower counts.
        let fast = self.fast / (1.0 - libm::pow(0.5, self.total_weight / FAST_HALF_LIFE_S));
        let slow = self.slow / (1.0 - libm::pow(0.5, self.total_weight / SLOW_HALF_LIFE_S));
        Some(fast.min(slow))
    }

    /// The safe estimate a rule compares rungs with: the estimate times
    /// [`SAFETY_FACTOR`], [`INITIAL_BPS`] before any sample.
    pub fn safe(&self) -> f64 {
        self.estimate().map_or(INITIAL_BPS, |e| e * SAFETY_FACTOR)
    }
}

/// The throughput rule (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct ThroughputRule {
    history: EwmaThroughput,
}

impl ThroughputRule {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Abr for ThroughputRule {
    fn on_download(&mut self, bytes: u64, download: Dur) {
        self.history.sample(bytes, download);
    }

    fn choose(&mut self, input: &AbrInput<'_>) -> usize {
        // dash.js ThroughputRule.getMaxIndex:
        // quality = getQualityForBitrate(mediaInfo, getSafeAverageThroughput())
        highest_at_most(input.ladder, self.history.safe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video_stream::APPLE_HLS_LADDER;

    fn input(last: Option<usize>) -> AbrInput<'static> {
        AbrInput {
            ladder: &APPLE_HLS_LADDER,
            buffer: Dur::from_secs(10),
            last,
            segment: Dur::from_secs(6),
            buffer_target: Dur::from_secs(30),
        }
    }

    #[test]
    fn each_step_picks_the_highest_rung_below_0_9_of_the_ewma_estimate() {
        // Ladder (kbit/s): 145 365 730 1100 2000 3000 4500 6000 7800.
        let mut r = ThroughputRule::new();
        // No download yet: dash.js's 1000 kbit/s initial bitrate -> 730 (rung 2).
        assert_eq!(r.choose(&input(None)), 2);
        // 6 s of 730 kbit/s = 547,500 B in 1 s: 4.38 Mbit/s. One sample: both
        // corrected EWMAs equal it; 0.9 x 4.38 = 3.942 Mbit/s -> 3000 (rung 5).
        r.on_download(547_500, Dur::from_secs(1));
        assert!((r.history.estimate().unwrap() - 4_380_000.0).abs() < 1e-6);
        assert_eq!(r.choose(&input(Some(2))), 5);
        // 6 s of 3000 kbit/s = 2,250,000 B in 6 s: 3 Mbit/s, weight 6 s.
        // fast: a1 = 0.5^(1/3) = 0.793701, f1 = 0.206299 x 4.38e6 = 903,592;
        //       a2 = 0.5^(6/3) = 0.25, f2 = 0.75 x 3e6 + 0.25 x f1 = 2,475,898;
        //       corrected: f2 / (1 - 0.5^(7/3)) = 2,475,898 / 0.801575 = 3,088,792.
        // slow: a1 = 0.5^(1/8) = 0.917004, s1 = 0.082996 x 4.38e6 = 363,522;
        //       a2 = 0.5^(6/8) = 0.594604, s2 = 0.405396 x 3e6 + 0.594604 x s1 = 1,432,341;
        //       corrected: s2 / (1 - 0.5^(7/8)) = 1,432,341 / 0.454746 = 3,149,760.
        // min = 3,088,792; x 0.9 = 2,779,913 -> 2000 (rung 4).
        r.on_download(2_250_000, Dur::from_secs(6));
        let e = r.history.estimate().unwrap();
        assert!((e - 3_088_792.0).abs() < 1.0, "{e}");
        assert_eq!(r.choose(&input(Some(5))), 4);
        // A collapse: 6 s of 2000 kbit/s = 1,500,000 B in 12 s: 1 Mbit/s.
        // fast: a3 = 0.5^4 = 0.0625, f3 = 0.9375 x 1e6 + 0.0625 x f2 = 1,092,244;
        //       corrected: / (1 - 0.5^(19/3)) = / 0.987597 -> 1,105,959
        // (slow: 1,428,174, higher). 0.9 x 1,105,959 = 995,363 -> 730 (rung 2).
        r.on_download(1_500_000, Dur::from_secs(12));
        let e = r.history.estimate().unwrap();
        assert!((e - 1_105_959.0).abs() < 1.0, "{e}");
        assert_eq!(r.choose(&input(Some(4))), 2);
    }

    #[test]
    fn below_the_lowest_rung_the_lowest_is_fetched() {
        let mut r = ThroughputRule::new();
        r.on_download(10_000, Dur::from_secs(1)); // 80 kbit/s
        assert_eq!(r.choose(&input(Some(0))), 0);
    }

    #[test]
    fn a_tiny_download_counts_as_at_least_50_ms() {
        let mut h = EwmaThroughput::default();
        h.sample(1_000, Dur::from_millis(1));
        assert!((h.estimate().unwrap() - 160_000.0).abs() < 1e-6);
    }
}
