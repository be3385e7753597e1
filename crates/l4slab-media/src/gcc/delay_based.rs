//! The delay-based estimator: inter-arrival grouping → trendline →
//! over-use detector → AIMD, once per feedback report.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/delay_based_bwe.cc`
//! (`DelayBasedBwe::IncomingPacketFeedbackVector`, `IncomingPacketFeedback`,
//! `MaybeUpdateEstimate`); draft-ietf-rmcat-gcc-02 §5 (the whole
//! delay-based controller, which the draft places at the receiver — here,
//! as in libwebrtc since 2017, it runs at the sender on per-packet
//! feedback).

use l4slab_core::{Dur, Rate, Time};

use super::aimd::{AimdRateControl, RateChange};
use super::inter_arrival::InterArrival;
use super::overuse::{BandwidthUsage, OveruseDetector};
use super::trendline::TrendlineEstimator;

/// libwebrtc `kStreamTimeOut`: no packet for this long resets the
/// inter-arrival and trendline state.
pub const STREAM_TIMEOUT: Dur = Dur::from_secs(2);

/// What one report did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayBasedResult {
    /// Whether the estimate was (re)computed (libwebrtc `result.updated`).
    pub updated: bool,
    pub change: RateChange,
    /// The decrease was the halving used before any throughput is known.
    pub halved: bool,
}

/// libwebrtc `DelayBasedBwe` (video detector only).
#[derive(Clone, Debug)]
pub struct DelayBasedBwe {
    window_size: usize,
    inter_arrival: InterArrival,
    trendline: TrendlineEstimator,
    detector: OveruseDetector,
    aimd: AimdRateControl,
    last_seen: Option<Time>,
    last_trend: f64,
    smoothed_delay_ms: f64,
    // counters
    pub overuse_signals: u64,
    pub underuse_signals: u64,
    pub deltas: u64,
}

impl DelayBasedBwe {
    pub fn new(aimd: AimdRateControl, window_size: usize) -> Self {
        Self {
            window_size,
            inter_arrival: InterArrival::default(),
            trendline: TrendlineEstimator::new(window_size),
            detector: OveruseDetector::new(),
            aimd,
            last_seen: None,
            last_trend: 0.0,
            smoothed_delay_ms: 0.0,
            overuse_signals: 0,
            underuse_signals: 0,
            deltas: 0,
        }
    }

    pub fn aimd(&self) -> &AimdRateControl {
        &self.aimd
    }
    pub fn aimd_mut(&mut self) -> &mut AimdRateControl {
        &mut self.aimd
    }
    pub fn detector(&self) -> &OveruseDetector {
        &self.detector
    }
    pub fn state(&self) -> BandwidthUsage {
        self.detector.state()
    }
    pub fn estimate(&self) -> Rate {
        self.aimd.estimate()
    }
    /// The last raw trendline slope.
    pub fn trend(&self) -> f64 {
        self.last_trend
    }
    pub fn smoothed_delay_ms(&self) -> f64 {
        self.smoothed_delay_ms
    }
    pub fn groups(&self) -> u64 {
        self.inter_arrival.groups_started()
    }

    /// libwebrtc `IncomingPacketFeedback`: one received packet, in arrival
    /// order; `now` is when the report reached the sender.
    pub fn incoming_packet(&mut self, now: Time, sent: Time, arrival: Time, size: u32) {
        // "Reset if the stream has timed out."
        if self
            .last_seen
            .is_none_or(|t| now.saturating_since(t) > STREAM_TIMEOUT)
        {
            self.inter_arrival.reset();
            self.trendline = TrendlineEstimator::new(self.window_size);
            self.detector = OveruseDetector::new();
        }
        self.last_seen = Some(now);
        let Some(d) = self.inter_arrival.compute_deltas(sent, arrival, now, size) else {
            return;
        };
        self.deltas += 1;
        // TrendlineEstimator::Update(recv_delta_ms, send_delta_ms, send_time_ms, arrival_time_ms, ...)
        let arrival_ms = arrival.as_nanos() as f64 * 1e-6;
        let s = self
            .trendline
            .update(d.arrival_delta_ms, d.send_delta_ms, arrival_ms);
        self.last_trend = s.trend;
        self.smoothed_delay_ms = s.smoothed_delay_ms;
        let before = self.detector.state();
        let after = self
            .detector
            .detect(s.trend, s.num_deltas, d.send_delta_ms, arrival_ms);
        if after != before {
            match after {
                BandwidthUsage::Overusing => self.overuse_signals += 1,
                BandwidthUsage::Underusing => self.underuse_signals += 1,
                BandwidthUsage::Normal => {}
            }
        }
    }

    /// libwebrtc `MaybeUpdateEstimate`, after all packets of a report with
    /// at least one received packet.
    pub fn maybe_update_estimate(&mut self, now: Time, acked: Option<Rate>) -> DelayBasedResult {
        let none = DelayBasedResult {
            updated: false,
            change: RateChange::None,
            halved: false,
        };
        if self.detector.state() == BandwidthUsage::Overusing {
            match acked {
                Some(a) if self.aimd.time_to_reduce_further(now, a) => DelayBasedResult {
                    updated: true,
                    change: self.aimd.update(now, BandwidthUsage::Overusing, Some(a)),
                    halved: false,
                },
                None if self.aimd.initial_time_to_reduce_further(now) => {
                    // "Overusing before we have a measured acknowledged
                    // bitrate. Reduce send rate by 50% every 200 ms."
                    let half = Rate::from_bps(self.aimd.estimate().as_bps() / 2);
                    DelayBasedResult {
                        updated: true,
                        change: self.aimd.set_estimate(now, half),
                        halved: true,
                    }
                }
                _ => none,
            }
        } else {
            DelayBasedResult {
                updated: true,
                change: self.aimd.update(now, self.detector.state(), acked),
                halved: false,
            }
        }
    }
}
