//! The loss-based controller.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/send_side_bandwidth_estimation.cc`
//! (`SendSideBandwidthEstimation::UpdatePacketsLost`, `UpdateEstimate`,
//! `UpdateMinHistory`, `UpdateTargetBitrate`, `UpdateDelayBasedEstimate`),
//! the classic rules that run when `LossBasedBweV2` is off; draft-ietf-
//! rmcat-gcc-02 §6 ("Loss-based control"). libwebrtc is followed where
//! they differ (REFERENCES §6.C3):
//! * loss ≤ 2 %: `1.08 × (minimum target of the last second) + 1 kbit/s`
//!   (draft: `As = 1.05·As`);
//! * loss > 10 %: `rate · (512 − loss_q8)/512` (the draft's `1 − 0.5p` in
//!   Q8), at most once per `300 ms + RTT` and once per loss report;
//! * a loss fraction only from ≥ 20 packets; the first 2 s without loss
//!   follow the delay-based estimate up;
//! * the estimate is itself capped by the delay-based one
//!   (`UpdateTargetBitrate`), so the target is `min(loss, delay)`.

use std::collections::VecDeque;

use l4slab_core::{Dur, Rate, Time};

/// libwebrtc `kBweIncreaseInterval`.
pub const INCREASE_INTERVAL: Dur = Dur::from_millis(1000);
/// libwebrtc `kBweDecreaseInterval`.
pub const DECREASE_INTERVAL: Dur = Dur::from_millis(300);
/// libwebrtc `kStartPhase`.
pub const START_PHASE: Dur = Dur::from_millis(2000);
/// libwebrtc `kLimitNumPackets`.
pub const LIMIT_NUM_PACKETS: u64 = 20;
/// libwebrtc `kMaxRtcpFeedbackInterval`: loss reports older than 1.2× this
/// are not acted on.
pub const MAX_RTCP_FEEDBACK_INTERVAL: Dur = Dur::from_millis(5000);
/// libwebrtc `kDefaultLowLossThreshold` (0.02) in Q8 terms: `loss <= 0.02`.
pub const LOW_LOSS_THRESHOLD: f64 = 0.02;
/// libwebrtc `kDefaultHighLossThreshold`.
pub const HIGH_LOSS_THRESHOLD: f64 = 0.1;
/// libwebrtc `kCongestionControllerMinBitrate`.
pub const MIN_BITRATE: Rate = Rate::from_kbps(5);
/// Capacity reserved for the minimum-rate history (entries are pushed at
/// most once per `update_estimate` call and expire after 1 s).
const HISTORY_CAPACITY: usize = 64;

/// What an `update_estimate` did (for counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossAction {
    /// Start phase: followed the delay-based estimate.
    StartPhase,
    /// Loss ≤ 2 %: increased.
    Increase,
    /// 2–10 %, or > 10 % but a decrease was too recent.
    Hold,
    /// Loss > 10 %: decreased.
    Decrease,
    /// No loss report yet, or too old: limits only.
    Limits,
}

/// libwebrtc `SendSideBandwidthEstimation` (classic loss-based part).
#[derive(Clone, Debug)]
pub struct LossBasedControl {
    current: Rate,
    min: Rate,
    max: Rate,
    delay_based_limit: Option<Rate>,
    min_history: VecDeque<(Time, Rate)>,
    lost_since_update: u64,
    expected_since_update: u64,
    last_fraction_loss: u8,
    has_decreased_since_last_fraction_loss: bool,
    last_loss_packet_report: Option<Time>,
    first_report_time: Option<Time>,
    time_last_decrease: Option<Time>,
    last_rtt: Dur,
    pub increases: u64,
    pub decreases: u64,
}

impl LossBasedControl {
    /// `SetBitrates(start, min, max)`: min is at least 5 kbit/s.
    pub fn new(start: Rate, min: Rate, max: Rate) -> Self {
        let min = min.max(MIN_BITRATE);
        let max = max.max(min);
        Self {
            current: start.clamp(min, max),
            min,
            max,
            delay_based_limit: None,
            min_history: VecDeque::with_capacity(HISTORY_CAPACITY),
            lost_since_update: 0,
            expected_since_update: 0,
            last_fraction_loss: 0,
            has_decreased_since_last_fraction_loss: false,
            last_loss_packet_report: None,
            first_report_time: None,
            time_last_decrease: None,
            last_rtt: Dur::ZERO,
            increases: 0,
            decreases: 0,
        }
    }

    /// The loss-based target (already capped by the delay-based estimate
    /// and clamped to [min, max]; libwebrtc `target_rate`).
    pub fn target(&self) -> Rate {
        self.current.max(self.min)
    }
    /// The last loss fraction in Q8 (`last_fraction_loss_`, 0–255).
    pub fn fraction_loss_q8(&self) -> u8 {
        self.last_fraction_loss
    }
    pub fn min_rate(&self) -> Rate {
        self.min
    }
    pub fn max_rate(&self) -> Rate {
        self.max
    }

    /// libwebrtc `UpdateRtt` (`last_round_trip_time_`).
    pub fn update_rtt(&mut self, rtt: Dur) {
        if !rtt.is_zero() {
            self.last_rtt = rtt;
        }
    }

    /// libwebrtc `UpdateDelayBasedEstimate`: the delay-based estimate caps
    /// this one from now on.
    pub fn update_delay_based_estimate(&mut self, now: Time, rate: Rate) {
        self.delay_based_limit = (rate > Rate::ZERO).then_some(rate);
        self.apply_target_limits(now);
    }

    /// libwebrtc `UpdatePacketsLost`: `lost` of `total` packets reported
    /// since the previous call.
    pub fn update_packets_lost(&mut self, now: Time, lost: u64, total: u64) -> Option<LossAction> {
        self.first_report_time.get_or_insert(now);
        if total == 0 {
            return None;
        }
        let expected = self.expected_since_update + total;
        // "Don't generate a loss rate until it can be based on enough packets."
        if expected < LIMIT_NUM_PACKETS {
            self.expected_since_update = expected;
            self.lost_since_update += lost;
            return None;
        }
        self.has_decreased_since_last_fraction_loss = false;
        // lost_q8 = (lost << 8); last_fraction_loss_ = min(lost_q8 / expected, 255)
        let lost_q8 = (self.lost_since_update + lost) << 8;
        self.last_fraction_loss = (lost_q8 / expected).min(255) as u8;
        self.lost_since_update = 0;
        self.expected_since_update = 0;
        self.last_loss_packet_report = Some(now);
        Some(self.update_estimate(now))
    }

    fn is_in_start_phase(&self, now: Time) -> bool {
        self.first_report_time
            .is_none_or(|t| now.saturating_since(t) < START_PHASE)
    }

    /// libwebrtc `UpdateEstimate`: on each loss report and on the periodic
    /// process tick.
    pub fn update_estimate(&mut self, now: Time) -> LossAction {
        // "We trust the REMB and/or delay-based estimate during the first 2
        // seconds if we haven't had any packet loss reported"
        if self.last_fraction_loss == 0 && self.is_in_start_phase(now) {
            let mut new = self.current;
            if let Some(d) = self.delay_based_limit {
                new = new.max(d);
            }
            if new != self.current {
                self.min_history.clear();
                self.min_history.push_back((now, self.current));
                self.update_target(now, new);
                return LossAction::StartPhase;
            }
        }
        self.update_min_history(now);
        let Some(last_report) = self.last_loss_packet_report else {
            // "No feedback received."
            self.apply_target_limits(now);
            return LossAction::Limits;
        };
        // time_since_loss_packet_report < 1.2 * kMaxRtcpFeedbackInterval
        if now.saturating_since(last_report).as_secs_f64()
            < 1.2 * MAX_RTCP_FEEDBACK_INTERVAL.as_secs_f64()
        {
            let loss = f64::from(self.last_fraction_loss) / 256.0;
            if loss <= LOW_LOSS_THRESHOLD {
                // "Loss < 2%: Increase rate by 8% of the min bitrate in the
                // last kBweIncreaseInterval." + "Add 1 kbps extra"
                let base = self.min_history.front().map_or(self.current, |&(_, r)| r);
                let new = Rate::from_bps((base.as_bps() as f64 * 1.08 + 0.5) as u64 + 1000);
                self.update_target(now, new);
                self.increases += 1;
                return LossAction::Increase;
            } else if loss > HIGH_LOSS_THRESHOLD {
                // "Loss > 10%: Limit the rate decreases to once a
                // kBweDecreaseInterval + rtt."
                let due = self
                    .time_last_decrease
                    .is_none_or(|t| now.saturating_since(t) >= DECREASE_INTERVAL + self.last_rtt);
                if !self.has_decreased_since_last_fraction_loss && due {
                    self.time_last_decrease = Some(now);
                    // newRate = rate * (1 - 0.5*lossRate), lossRate = loss_q8/256:
                    // rate * (512 - last_fraction_loss_) / 512
                    let new = Rate::from_bps(
                        (self.current.as_bps() as f64
                            * f64::from(512 - u32::from(self.last_fraction_loss))
                            / 512.0) as u64,
                    );
                    self.has_decreased_since_last_fraction_loss = true;
                    self.update_target(now, new);
                    self.decreases += 1;
                    return LossAction::Decrease;
                }
            }
            // "Loss between 2% - 10%: Do nothing."
            self.apply_target_limits(now);
            return LossAction::Hold;
        }
        self.apply_target_limits(now);
        LossAction::Limits
    }

    /// libwebrtc `UpdateMinHistory`: a sliding minimum over the last second.
    fn update_min_history(&mut self, now: Time) {
        // "Since history precision is in ms, add one so it is able to
        // increase bitrate if it is off by as little as 0.5ms."
        while let Some(&(t, _)) = self.min_history.front() {
            if now.saturating_since(t) + Dur::from_millis(1) > INCREASE_INTERVAL {
                self.min_history.pop_front();
            } else {
                break;
            }
        }
        // "Pop values higher than current bitrate before pushing it."
        while let Some(&(_, r)) = self.min_history.back() {
            if self.current <= r {
                self.min_history.pop_back();
            } else {
                break;
            }
        }
        self.min_history.push_back((now, self.current));
    }

    /// libwebrtc `UpdateTargetBitrate`: capped by min(delay-based, max),
    /// floored at min.
    fn update_target(&mut self, _now: Time, new: Rate) {
        let mut upper = self.max;
        if let Some(d) = self.delay_based_limit {
            upper = upper.min(d);
        }
        self.current = new.min(upper).max(self.min);
    }

    /// libwebrtc `ApplyTargetLimits`.
    fn apply_target_limits(&mut self, now: Time) {
        self.update_target(now, self.current);
    }
}
