//! The delay-based rate controller: a Hold / Increase / Decrease state
//! machine driven by the detector's signal.
//!
//! libwebrtc `modules/remote_bitrate_estimator/aimd_rate_control.cc`
//! (`AimdRateControl::ChangeState`, `ChangeBitrate`,
//! `MultiplicativeRateIncrease`, `AdditiveRateIncrease`,
//! `GetNearMaxIncreaseRateBpsPerSecond`, `TimeToReduceFurther`) and
//! `goog_cc/link_capacity_estimator.cc`; draft-ietf-rmcat-gcc-02 §5.5
//! ("Rate control"). libwebrtc's defaults are used where they differ
//! (REFERENCES §6.C3): response time ×2, a 4 kbit/s/s additive floor,
//! `β·R − 5 kbit/s`, and the near-max region from the link-capacity
//! estimate.

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{Dur, Rate, Time};

use super::overuse::BandwidthUsage;

/// libwebrtc `kDefaultBackoffFactor`; draft-02 §5.5 β = 0.85.
pub const DEFAULT_BETA: f64 = 0.85;
/// libwebrtc `kDefaultRtt` (before any RTT sample).
pub const DEFAULT_RTT: Dur = Dur::from_millis(200);
/// libwebrtc `MultiplicativeRateIncrease`: `alpha = 1.08`; draft-02 §5.5 η.
pub const MULTIPLICATIVE_GAIN: f64 = 1.08;
/// libwebrtc: at least 1000 bit/s per multiplicative step.
pub const MIN_MULTIPLICATIVE_STEP_BPS: f64 = 1000.0;
/// libwebrtc `GetNearMaxIncreaseRateBpsPerSecond`: `kMinIncreaseRateBpsPerSecond`.
pub const MIN_ADDITIVE_RATE_BPS_PER_S: f64 = 4000.0;
/// libwebrtc: "Approximate the over-use estimator delay to 100 ms."
pub const DETECTOR_DELAY: Dur = Dur::from_millis(100);
/// libwebrtc `subtract_additional_backoff_term_` (on unless disabled):
/// `decreased -= 5 kbit/s` when above 5 kbit/s.
pub const ADDITIONAL_BACKOFF_BPS: f64 = 5000.0;

/// The rate controller's state (draft-02 §5.5 Figure 2; libwebrtc
/// `RateControlState`). `Decrease` is transient: the decrease is applied in
/// the same update and the controller holds afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateControlState {
    Hold,
    Increase,
    Decrease,
}

impl RateControlState {
    fn index(self) -> usize {
        self as usize
    }
}

impl Machine for RateControlState {
    const NAME: &'static str = "GCC rate-control";

    fn name(self) -> &'static str {
        match self {
            RateControlState::Hold => "hold",
            RateControlState::Increase => "increase",
            RateControlState::Decrease => "decrease",
        }
    }

    /// The legal edges (libwebrtc `ChangeState` plus the "Stay on hold
    /// until the pipes are cleared" after a decrease):
    /// Hold → Increase (normal), any → Decrease (over-use) except from
    /// Decrease, Increase → Hold (under-use), Decrease → Hold (after the
    /// decrease). Draft-02 Figure 2 would also let Decrease go straight to
    /// Increase; libwebrtc never does.
    fn may_enter(self, next: RateControlState) -> bool {
        use RateControlState::*;
        matches!(
            (self, next),
            (Hold, Increase)
                | (Hold, Decrease)
                | (Increase, Decrease)
                | (Increase, Hold)
                | (Decrease, Hold)
        )
    }
}

/// libwebrtc `LinkCapacityEstimator`: an EWMA of the throughput at
/// over-use, with a normalized deviation; "near max" is within 3 deviations.
#[derive(Clone, Debug)]
pub struct LinkCapacityEstimator {
    estimate_kbps: Option<f64>,
    deviation_kbps: f64,
}

impl Default for LinkCapacityEstimator {
    fn default() -> Self {
        Self {
            estimate_kbps: None,
            // link_capacity_estimator.h: deviation_kbps_ = 0.4
            deviation_kbps: 0.4,
        }
    }
}

impl LinkCapacityEstimator {
    pub fn estimate(&self) -> Option<Rate> {
        self.estimate_kbps.map(kbps_to_rate)
    }
    fn deviation_estimate_kbps(&self, est: f64) -> f64 {
        libm::sqrt(self.deviation_kbps * est)
    }
    /// `estimate + 3·deviation`, or unbounded.
    fn upper_bound_bps(&self) -> f64 {
        match self.estimate_kbps {
            Some(e) => (e + 3.0 * self.deviation_estimate_kbps(e)) * 1000.0,
            None => f64::INFINITY,
        }
    }
    /// `max(0, estimate − 3·deviation)`, or zero.
    fn lower_bound_bps(&self) -> f64 {
        match self.estimate_kbps {
            Some(e) => (e - 3.0 * self.deviation_estimate_kbps(e)).max(0.0) * 1000.0,
            None => 0.0,
        }
    }
    fn reset(&mut self) {
        self.estimate_kbps = None;
    }
    /// `OnOveruseDetected`: `Update(acknowledged_rate, 0.05)`.
    fn on_overuse_detected(&mut self, throughput_bps: f64) {
        let alpha = 0.05;
        let sample = throughput_bps / 1000.0;
        let est = match self.estimate_kbps {
            None => sample,
            Some(e) => (1.0 - alpha) * e + alpha * sample,
        };
        self.estimate_kbps = Some(est);
        // "Estimate the variance of the link capacity estimate and normalize
        // the variance with the link capacity estimate."
        let norm = est.max(1.0);
        let err = est - sample;
        self.deviation_kbps = (1.0 - alpha) * self.deviation_kbps + alpha * err * err / norm;
        // "0.4 ~= 14 kbit/s at 500 kbit/s; 2.5f ~= 35 kbit/s at 500 kbit/s"
        self.deviation_kbps = self.deviation_kbps.clamp(0.4, 2.5);
    }
}

fn kbps_to_rate(kbps: f64) -> Rate {
    bps_to_rate(kbps * 1000.0)
}

fn bps_to_rate(bps: f64) -> Rate {
    Rate::from_bps(bps.max(0.0).round() as u64)
}

/// What one update did to the estimate (for the controller's counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateChange {
    None,
    Increased,
    Decreased,
}

/// libwebrtc `AimdRateControl` (send side).
#[derive(Clone, Debug)]
pub struct AimdRateControl {
    min: Rate,
    max: Rate,
    beta: f64,
    current: Rate,
    latest_throughput: Rate,
    link_capacity: LinkCapacityEstimator,
    state: Checked<RateControlState>,
    time_last_change: Option<Time>,
    time_last_decrease: Option<Time>,
    rtt: Dur,
    last_decrease: Option<Rate>,
    // accounting
    state_since: Option<Time>,
    time_in: [Dur; 3],
    transitions: u64,
}

impl AimdRateControl {
    /// Starts at `start` (libwebrtc `SetStartBitrate`: the estimate is
    /// valid from the start).
    pub fn new(start: Rate, min: Rate, max: Rate, beta: f64) -> Self {
        assert!(min <= max, "GCC min rate {min} above max rate {max}");
        assert!(beta > 0.0 && beta < 1.0, "GCC beta {beta} outside (0, 1)");
        let current = start.clamp(min, max);
        Self {
            min,
            max,
            beta,
            current,
            latest_throughput: current,
            link_capacity: LinkCapacityEstimator::default(),
            state: Checked::new(RateControlState::Hold),
            time_last_change: None,
            time_last_decrease: None,
            rtt: DEFAULT_RTT,
            last_decrease: None,
            state_since: None,
            time_in: [Dur::ZERO; 3],
            transitions: 0,
        }
    }

    pub fn state(&self) -> RateControlState {
        self.state.get()
    }
    /// The delay-based estimate A (libwebrtc `LatestEstimate`).
    pub fn estimate(&self) -> Rate {
        self.current
    }
    pub fn link_capacity(&self) -> Option<Rate> {
        self.link_capacity.estimate()
    }
    pub fn rtt(&self) -> Dur {
        self.rtt
    }
    pub fn last_decrease(&self) -> Option<Rate> {
        self.last_decrease
    }
    pub fn time_last_decrease(&self) -> Option<Time> {
        self.time_last_decrease
    }
    /// Time spent in each state up to `now`: (hold, increase, decrease).
    pub fn time_in_states(&self, now: Time) -> [Dur; 3] {
        let mut t = self.time_in;
        if let Some(since) = self.state_since {
            t[self.state.get().index()] += now.saturating_since(since);
        }
        t
    }
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    /// libwebrtc `SetRtt`.
    pub fn set_rtt(&mut self, rtt: Dur) {
        self.rtt = rtt;
    }

    /// The one place the state changes: the checked transition of
    /// `l4slab_core::state` ([`RateControlState`]'s `may_enter`), counted and
    /// timed per state.
    ///
    /// # Panics
    /// On an illegal edge (a bug).
    pub fn transition_to(&mut self, now: Time, next: RateControlState) {
        let from = self.state.get();
        self.state.transition(next);
        let since = self.state_since.unwrap_or(now);
        self.time_in[from.index()] += now.saturating_since(since);
        self.state_since = Some(now);
        self.transitions += 1;
    }

    /// libwebrtc `TimeToReduceFurther`: a decrease is allowed once per
    /// `clamp(rtt, 10 ms, 200 ms)` since the last change, or at once if
    /// the throughput fell below half the estimate.
    pub fn time_to_reduce_further(&self, now: Time, throughput: Rate) -> bool {
        let interval = self.rtt.clamp(Dur::from_millis(10), Dur::from_millis(200));
        match self.time_last_change {
            None => true,
            Some(t) if now.saturating_since(t) >= interval => true,
            // "threshold = 0.5 * LatestEstimate()"
            Some(_) => throughput.as_bps() * 2 < self.current.as_bps(),
        }
    }

    /// libwebrtc `InitialTimeToReduceFurther` (over-use before any
    /// acknowledged bitrate exists).
    pub fn initial_time_to_reduce_further(&self, now: Time) -> bool {
        let half_minus_one = Rate::from_bps((self.current.as_bps() / 2).saturating_sub(1));
        self.time_to_reduce_further(now, half_minus_one)
    }

    /// libwebrtc `SetEstimate` (used for the halving before any throughput
    /// is known).
    pub fn set_estimate(&mut self, now: Time, rate: Rate) -> RateChange {
        let prev = self.current;
        self.current = self.clamp(rate);
        self.time_last_change = Some(now);
        if self.current < prev {
            self.time_last_decrease = Some(now);
            RateChange::Decreased
        } else {
            RateChange::None
        }
    }

    /// libwebrtc `Update` → `ChangeBitrate`: one detector signal with the
    /// acknowledged bitrate (if known) at `now`.
    pub fn update(
        &mut self,
        now: Time,
        signal: BandwidthUsage,
        throughput: Option<Rate>,
    ) -> RateChange {
        let thr = throughput.unwrap_or(self.latest_throughput);
        if let Some(t) = throughput {
            self.latest_throughput = t;
        }
        let thr_bps = thr.as_bps() as f64;
        let cur_bps = self.current.as_bps() as f64;
        self.change_state(now, signal);
        let mut new_bps: Option<f64> = None;
        match self.state.get() {
            RateControlState::Hold => {}
            RateControlState::Increase => {
                // "estimated_throughput > link_capacity_.UpperBound()" → Reset
                if thr_bps > self.link_capacity.upper_bound_bps() {
                    self.link_capacity.reset();
                }
                // draft-02 §5.5 "A < 1.5·R"; libwebrtc: increase_limit = 1.5 * estimated_throughput + 10 kbps
                let limit = 1.5 * thr_bps + 10_000.0;
                if cur_bps < limit {
                    let inc = if self.link_capacity.estimate_kbps.is_some() {
                        // Near the link capacity: additive increase (draft-02 §5.5
                        // "close to convergence"; libwebrtc AdditiveRateIncrease).
                        self.additive_increase(now)
                    } else {
                        // "If we don't have an estimate of the link capacity, use
                        // faster ramp up to discover the capacity."
                        self.multiplicative_increase(now, cur_bps)
                    };
                    new_bps = Some((cur_bps + inc).min(limit));
                }
                self.time_last_change = Some(now);
            }
            RateControlState::Decrease => {
                // draft-02 §5.5 A = β·R; libwebrtc decreased_bitrate = estimated_throughput * beta_
                let mut dec = thr_bps * self.beta;
                // subtract_additional_backoff_term_: "- 5 kbps"
                if dec > ADDITIONAL_BACKOFF_BPS {
                    dec -= ADDITIONAL_BACKOFF_BPS;
                }
                if dec > cur_bps {
                    if let Some(cap) = self.link_capacity.estimate_kbps {
                        // "decreased_bitrate = beta_ * link_capacity_.estimate()"
                        dec = self.beta * cap * 1000.0;
                    }
                }
                // "Avoid increasing the rate when over-using."
                if dec < cur_bps {
                    new_bps = Some(dec);
                }
                if thr_bps < cur_bps {
                    self.last_decrease = Some(bps_to_rate(new_bps.map_or(0.0, |n| cur_bps - n)));
                }
                if thr_bps < self.link_capacity.lower_bound_bps() {
                    // "The current throughput is far from the estimated link
                    // capacity. Clear the estimate ..."
                    self.link_capacity.reset();
                }
                self.link_capacity.on_overuse_detected(thr_bps);
                // "Stay on hold until the pipes are cleared."
                self.transition_to(now, RateControlState::Hold);
                self.time_last_change = Some(now);
                self.time_last_decrease = Some(now);
            }
        }
        let prev = self.current;
        self.current = self.clamp(new_bps.map_or(self.current, bps_to_rate));
        match self.current.cmp(&prev) {
            core::cmp::Ordering::Less => RateChange::Decreased,
            core::cmp::Ordering::Greater => RateChange::Increased,
            core::cmp::Ordering::Equal => RateChange::None,
        }
    }

    /// libwebrtc `ChangeState`; draft-02 §5.5 state table.
    fn change_state(&mut self, now: Time, signal: BandwidthUsage) {
        match signal {
            BandwidthUsage::Normal => {
                if self.state.get() == RateControlState::Hold {
                    self.time_last_change = Some(now);
                    self.transition_to(now, RateControlState::Increase);
                }
            }
            BandwidthUsage::Overusing => {
                if self.state.get() != RateControlState::Decrease {
                    self.transition_to(now, RateControlState::Decrease);
                }
            }
            BandwidthUsage::Underusing => {
                if self.state.get() != RateControlState::Hold {
                    self.transition_to(now, RateControlState::Hold);
                }
            }
        }
    }

    /// libwebrtc `MultiplicativeRateIncrease`; draft-02 §5.5
    /// `η = 1.08^min(Δt, 1 s)`, at least 1000 bit/s.
    fn multiplicative_increase(&self, now: Time, cur_bps: f64) -> f64 {
        let mut alpha = MULTIPLICATIVE_GAIN;
        if let Some(last) = self.time_last_change {
            let dt = now.saturating_since(last).as_secs_f64().min(1.0);
            alpha = libm::pow(MULTIPLICATIVE_GAIN, dt);
        }
        (cur_bps * (alpha - 1.0)).max(MIN_MULTIPLICATIVE_STEP_BPS)
    }

    /// libwebrtc `AdditiveRateIncrease`: near-max rate × time since the
    /// last change.
    fn additive_increase(&self, now: Time) -> f64 {
        let dt = self
            .time_last_change
            .map_or(0.0, |last| now.saturating_since(last).as_secs_f64());
        self.near_max_increase_rate_bps_per_s() * dt
    }

    /// libwebrtc `GetNearMaxIncreaseRateBpsPerSecond`: one average packet
    /// (1200 B packets, 30 frames/s) per 2·(RTT + 100 ms), at least
    /// 4000 bit/s per second. draft-02 §5.5: "half a packet per
    /// response_time interval" with response_time = RTT + 100 ms; the
    /// version read doubles the response time instead.
    pub fn near_max_increase_rate_bps_per_s(&self) -> f64 {
        let frame_bits = self.current.as_bps() as f64 / 30.0;
        let packets_per_frame = libm::ceil(frame_bits / (1200.0 * 8.0)).max(1.0);
        let avg_packet_bits = frame_bits / packets_per_frame;
        let response_s = ((self.rtt + DETECTOR_DELAY) * 2).as_secs_f64();
        (avg_packet_bits / response_s).max(MIN_ADDITIVE_RATE_BPS_PER_S)
    }

    /// libwebrtc `ClampBitrate` (minimum); the maximum as well here.
    fn clamp(&self, r: Rate) -> Rate {
        r.clamp(self.min, self.max)
    }
}
