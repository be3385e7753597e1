//! Google Congestion Control as libwebrtc's send-side `GoogCcNetworkController`
//! runs it, on RFC 8888 per-packet feedback; draft-ietf-rmcat-gcc-02 is the
//! specification, libwebrtc is followed where the two differ (it is what
//! real calls run; REFERENCES §6.C3). Each rule cites both at the line
//! that implements it.
//!
//! **Files.** One per component, as libwebrtc splits them:
//! `inter_arrival.rs` (5 ms send-time groups and bursts), `trendline.rs`
//! (the least-squares delay trend), `overuse.rs` (the detector and its
//! adaptive threshold), `aimd.rs` (the Hold / Increase / Decrease rate
//! controller with one checked transition, and the link-capacity
//! estimate), `acked_bitrate.rs` (the received-rate estimate the decrease
//! uses), `delay_based.rs` (the pipeline per report), `loss_based.rs` (the
//! classic loss controller). This file: the controller, RTT, loss
//! aggregation, target and pacing.
//!
//! **Per report** (libwebrtc `OnTransportPacketsFeedback`, in its order):
//! RTT sample → loss counts (a loss fraction every second,
//! `kLossUpdateInterval`) → acknowledged bitrate over the received packets
//! in arrival order → the delay-based pipeline → the loss-based estimate
//! is capped by the delay-based one. Every 25 ms (`on_timer`, libwebrtc's
//! process interval) the loss-based estimate is re-evaluated.
//! `target = min(delay-based, loss-based)` clamped to `[min, max]`;
//! `pacing = 2.5 × target` (libwebrtc `kDefaultPaceMultiplier`).
//!
//! **ECN.** Packets go out Not-ECT and CE marks in the reports are
//! ignored: libwebrtc's GCC has no ECN response (draft-02 neither).
//!
//! **Not implemented** (docs/models/gcc.md "Deviations"): probing
//! (`ProbeController`), the ALR detector, `LossBasedBweV2` (the default in
//! recent libwebrtc; the classic rules are used), the congestion window
//! and encoder pushback, the RTT-based backoff, the network-state
//! predictor, the separate audio detector.

mod acked_bitrate;
mod aimd;
mod delay_based;
mod inter_arrival;
mod loss_based;
mod overuse;
mod trendline;

pub use acked_bitrate::AckedBitrateEstimator;
pub use aimd::{AimdRateControl, LinkCapacityEstimator, RateChange, RateControlState};
pub use delay_based::{DelayBasedBwe, DelayBasedResult};
pub use inter_arrival::{GroupDeltas, InterArrival};
pub use loss_based::{LossAction, LossBasedControl};
pub use overuse::{BandwidthUsage, OveruseDetector};
pub use trendline::{TrendSample, TrendlineEstimator};

/// The constants of each component, with their sources.
pub mod consts {
    pub use super::acked_bitrate::{INITIAL_WINDOW_MS, UNCERTAINTY_SCALE, WINDOW_MS};
    pub use super::aimd::{
        ADDITIONAL_BACKOFF_BPS, DEFAULT_BETA, DEFAULT_RTT, DETECTOR_DELAY,
        MIN_ADDITIVE_RATE_BPS_PER_S, MULTIPLICATIVE_GAIN,
    };
    pub use super::delay_based::STREAM_TIMEOUT;
    pub use super::inter_arrival::{
        BURST_DELTA_THRESHOLD, MAX_BURST_DURATION, SEND_TIME_GROUP_LENGTH,
    };
    pub use super::loss_based::{
        DECREASE_INTERVAL, HIGH_LOSS_THRESHOLD, INCREASE_INTERVAL, LIMIT_NUM_PACKETS,
        LOW_LOSS_THRESHOLD, MIN_BITRATE, START_PHASE,
    };
    pub use super::overuse::{
        INITIAL_THRESHOLD_MS, K_DOWN, K_UP, MAX_ADAPT_OFFSET_MS, MAX_TIME_DELTA_MS, MIN_NUM_DELTAS,
        OVERUSING_TIME_THRESHOLD_MS, THRESHOLD_GAIN, THRESHOLD_MAX_MS, THRESHOLD_MIN_MS,
    };
    pub use super::trendline::{DEFAULT_WINDOW_SIZE, SMOOTHING_COEF};
}

use serde_json::{json, Value};

use l4slab_core::state::Machine;
use l4slab_core::{Dur, Ecn, Rate, Time};

use crate::{Feedback, MediaCc, PacketReport, SampleSink};

/// libwebrtc `kDefaultPaceMultiplier`.
pub const DEFAULT_PACING_FACTOR: f64 = 2.5;
/// libwebrtc `kLossUpdateInterval` ("From RTCPSender video report
/// interval"): with transport feedback only, losses are turned into a
/// fraction once per this interval.
pub const LOSS_UPDATE_INTERVAL: Dur = Dur::from_millis(1000);
/// libwebrtc's controller process interval (`RtpTransportControllerSend`,
/// 25 ms): `OnProcessInterval` re-evaluates the loss-based estimate.
pub const PROCESS_INTERVAL: Dur = Dur::from_millis(25);
/// libwebrtc `kMaxFeedbackRttWindow`: the RTT handed to the rate
/// controller is the mean of the last 32 report samples.
pub const RTT_WINDOW: usize = 32;

/// GCC's parameters. `Default` is libwebrtc's.
#[derive(Clone, Debug, PartialEq)]
pub struct GccConfig {
    /// Estimate before any feedback (libwebrtc `kDefaultStartBitrateBps`,
    /// `BitrateConstraints::start_bitrate_bps` = 300 kbit/s).
    pub start_rate: Rate,
    /// Floor of every estimate (libwebrtc `kCongestionControllerMinBitrate`
    /// = 5 kbit/s, which is also the floor of any configured value).
    pub min_rate: Rate,
    /// Ceiling (libwebrtc `AimdRateControl` `max_configured_bitrate_` =
    /// 30 Mbit/s).
    pub max_rate: Rate,
    /// `pacing_rate = pacing_factor × target` (libwebrtc
    /// `kDefaultPaceMultiplier` = 2.5).
    pub pacing_factor: f64,
    /// Multiplicative decrease (libwebrtc `kDefaultBackoffFactor`; draft-02
    /// §5.5 β = 0.85).
    pub beta: f64,
    /// Trendline window in groups (libwebrtc `kDefaultTrendlineWindowSize`
    /// = 20).
    pub trendline_window: usize,
    /// Loss-fraction interval (libwebrtc `kLossUpdateInterval` = 1 s).
    pub loss_update_interval: Dur,
}

impl Default for GccConfig {
    fn default() -> Self {
        Self {
            start_rate: Rate::from_kbps(300),
            min_rate: loss_based::MIN_BITRATE,
            max_rate: Rate::from_mbps(30),
            pacing_factor: DEFAULT_PACING_FACTOR,
            beta: aimd::DEFAULT_BETA,
            trendline_window: trendline::DEFAULT_WINDOW_SIZE,
            loss_update_interval: LOSS_UPDATE_INTERVAL,
        }
    }
}

/// The RTT: mean of the last [`RTT_WINDOW`] report samples (a fixed ring).
#[derive(Clone, Debug)]
struct RttFilter {
    ring: [u64; RTT_WINDOW],
    len: usize,
    next: usize,
    sum: u128,
    last: Option<Dur>,
}

impl RttFilter {
    fn new() -> Self {
        Self {
            ring: [0; RTT_WINDOW],
            len: 0,
            next: 0,
            sum: 0,
            last: None,
        }
    }
    fn push(&mut self, d: Dur) -> Dur {
        if self.len == RTT_WINDOW {
            self.sum -= u128::from(self.ring[self.next]);
        } else {
            self.len += 1;
        }
        self.ring[self.next] = d.as_nanos();
        self.sum += u128::from(d.as_nanos());
        self.next = (self.next + 1) % RTT_WINDOW;
        self.last = Some(d);
        self.mean().expect("just pushed")
    }
    fn mean(&self) -> Option<Dur> {
        (self.len > 0).then(|| Dur::from_nanos((self.sum / self.len as u128) as u64))
    }
}

/// Google Congestion Control (`cc = "gcc"`).
#[derive(Clone, Debug)]
pub struct Gcc {
    cfg: GccConfig,
    delay: DelayBasedBwe,
    loss: LossBasedControl,
    acked: AckedBitrateEstimator,
    rtt: RttFilter,
    /// Received packets of the current report, sorted by arrival
    /// (libwebrtc `SortedByReceiveTime`); reused, grows to the largest report.
    scratch: Vec<PacketReport>,
    // loss aggregation (GoogCcNetworkController, packet_feedback_only_)
    next_loss_update: Option<Time>,
    lost_since_update: u64,
    expected_since_update: u64,
    next_tick: Option<Time>,
    last_now: Time,
    // counters
    packets_sent: u64,
    bytes_sent: u64,
    feedbacks: u64,
    packets_reported: u64,
    packets_lost: u64,
    ce_ignored: u64,
    delay_decreases: u64,
    halvings: u64,
    delay_increases: u64,
    last_loss_pct: f64,
}

impl Default for Gcc {
    fn default() -> Self {
        Self::new(GccConfig::default())
    }
}

impl Gcc {
    /// # Panics
    /// If `min_rate > max_rate`, `beta` is outside (0, 1), the pacing
    /// factor is not positive or the trendline window is below 2.
    pub fn new(cfg: GccConfig) -> Self {
        assert!(
            cfg.min_rate <= cfg.max_rate,
            "GCC min_rate {} above max_rate {}",
            cfg.min_rate,
            cfg.max_rate
        );
        assert!(
            cfg.pacing_factor > 0.0,
            "GCC pacing_factor must be positive"
        );
        let loss = LossBasedControl::new(cfg.start_rate, cfg.min_rate, cfg.max_rate);
        // AIMD and SSBE share the effective floor (min at least 5 kbit/s).
        let aimd = AimdRateControl::new(cfg.start_rate, loss.min_rate(), loss.max_rate(), cfg.beta);
        Self {
            delay: DelayBasedBwe::new(aimd, cfg.trendline_window),
            loss,
            acked: AckedBitrateEstimator::new(),
            rtt: RttFilter::new(),
            scratch: Vec::with_capacity(64),
            next_loss_update: None,
            lost_since_update: 0,
            expected_since_update: 0,
            next_tick: None,
            last_now: Time::ZERO,
            packets_sent: 0,
            bytes_sent: 0,
            feedbacks: 0,
            packets_reported: 0,
            packets_lost: 0,
            ce_ignored: 0,
            delay_decreases: 0,
            halvings: 0,
            delay_increases: 0,
            last_loss_pct: 0.0,
            cfg,
        }
    }

    pub fn config(&self) -> &GccConfig {
        &self.cfg
    }
    /// The delay-based estimate A (AIMD).
    pub fn delay_based_rate(&self) -> Rate {
        self.delay.estimate()
    }
    /// The loss-based estimate (already ≤ the delay-based one).
    pub fn loss_based_rate(&self) -> Rate {
        self.loss.target()
    }
    /// The acknowledged bitrate, once known.
    pub fn acked_rate(&self) -> Option<Rate> {
        self.acked.bitrate()
    }
    /// The RTT the controller uses (mean of the last 32 samples).
    pub fn rtt(&self) -> Option<Dur> {
        self.rtt.mean()
    }
    pub fn detector_state(&self) -> BandwidthUsage {
        self.delay.state()
    }
    pub fn rate_control_state(&self) -> RateControlState {
        self.delay.aimd().state()
    }
    pub fn threshold_ms(&self) -> f64 {
        self.delay.detector().threshold_ms()
    }
    pub fn modified_trend_ms(&self) -> f64 {
        self.delay.detector().modified_trend()
    }
    pub fn fraction_loss_q8(&self) -> u8 {
        self.loss.fraction_loss_q8()
    }
    /// Transitions of the detector into over-use.
    pub fn overuse_events(&self) -> u64 {
        self.delay.overuse_signals
    }
    /// Delay-based decreases (β rule and halvings).
    pub fn delay_decreases(&self) -> u64 {
        self.delay_decreases
    }
    pub fn loss_decreases(&self) -> u64 {
        self.loss.decreases
    }
    pub fn link_capacity(&self) -> Option<Rate> {
        self.delay.aimd().link_capacity()
    }

    fn target(&self) -> Rate {
        // target = min(delay-based, loss-based), clamped to [min, max]
        // (libwebrtc: SSBE caps its estimate by the delay-based one in
        // UpdateTargetBitrate; draft-02 §6: "send at min(As, Ar)").
        self.loss
            .target()
            .min(self.delay.estimate())
            .clamp(self.loss.min_rate(), self.loss.max_rate())
    }

    fn start_ticking(&mut self, now: Time) {
        if self.next_tick.is_none() {
            self.next_tick = Some(now + PROCESS_INTERVAL);
        }
    }

    /// RTT from one report: the packet that arrived last,
    /// `now − sent − (report_time − arrival)` (the receiver's hold time
    /// removed).
    fn rtt_sample(now: Time, fb: &Feedback<'_>) -> Option<Dur> {
        let newest = fb
            .packets
            .iter()
            .filter_map(|p| p.arrival.map(|a| (a, p.seq, p.sent)))
            .max()?;
        let (arrival, _, sent) = newest;
        let flight = now.saturating_since(sent);
        let hold = fb.report_time.saturating_since(arrival);
        Some(flight.saturating_sub(hold))
    }
}

impl MediaCc for Gcc {
    fn name(&self) -> &'static str {
        "gcc"
    }

    fn on_sent(&mut self, now: Time, _seq: u64, size: u32) {
        // The reports carry send times and sizes; nothing to keep per packet.
        self.packets_sent += 1;
        self.bytes_sent += u64::from(size);
        self.last_now = self.last_now.max(now);
        self.start_ticking(now);
    }

    fn on_feedback(&mut self, now: Time, fb: &Feedback<'_>) {
        self.last_now = self.last_now.max(now);
        self.start_ticking(now);
        // "if (report.packet_feedbacks.empty()) return"
        if fb.packets.is_empty() {
            return;
        }
        self.feedbacks += 1;

        // RTT (GoogCcNetworkController: feedback RTTs → OnRttUpdate,
        // UpdateRtt); see docs for how the sample differs.
        if let Some(sample) = Self::rtt_sample(now, fb) {
            let mean = self.rtt.push(sample);
            self.delay.aimd_mut().set_rtt(mean);
            self.loss.update_rtt(mean);
        }

        // Loss: counted per report, turned into a fraction once per
        // kLossUpdateInterval ("if (report.feedback_time > next_loss_update_)").
        let lost = fb.packets.iter().filter(|p| p.lost()).count() as u64;
        let total = fb.packets.len() as u64;
        self.packets_reported += total;
        self.packets_lost += lost;
        self.ce_ignored += fb.packets.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64;
        self.lost_since_update += lost;
        self.expected_since_update += total;
        if self.next_loss_update.is_none_or(|t| now > t) {
            self.next_loss_update = Some(now + self.cfg.loss_update_interval);
            if self.expected_since_update > 0 {
                self.last_loss_pct =
                    100.0 * self.lost_since_update as f64 / self.expected_since_update as f64;
            }
            self.loss
                .update_packets_lost(now, self.lost_since_update, self.expected_since_update);
            self.lost_since_update = 0;
            self.expected_since_update = 0;
        }

        // Received packets in arrival order (libwebrtc SortedByReceiveTime).
        self.scratch.clear();
        self.scratch
            .extend(fb.packets.iter().filter(|p| p.arrival.is_some()).copied());
        if self.scratch.is_empty() {
            // DelayBasedBwe: "delayed_feedback" — no received packet, no update.
            return;
        }
        self.scratch.sort_by_key(|p| p.arrival);

        // AcknowledgedBitrateEstimator::IncomingPacketFeedbackVector
        for p in &self.scratch {
            self.acked.update(p.arrival.expect("received"), p.size);
        }
        let acked = self.acked.bitrate();

        // DelayBasedBwe::IncomingPacketFeedbackVector
        for p in &self.scratch {
            self.delay
                .incoming_packet(now, p.sent, p.arrival.expect("received"), p.size);
        }
        let res = self.delay.maybe_update_estimate(now, acked);
        match res.change {
            RateChange::Decreased => {
                self.delay_decreases += 1;
                self.halvings += u64::from(res.halved);
            }
            RateChange::Increased => self.delay_increases += 1,
            RateChange::None => {}
        }
        if res.updated {
            // bandwidth_estimation_->UpdateDelayBasedEstimate(feedback_time, target)
            self.loss
                .update_delay_based_estimate(now, self.delay.estimate());
        }
    }

    fn on_timer(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        // OnProcessInterval → bandwidth_estimation_->UpdateEstimate(at_time)
        self.loss.update_estimate(now);
        self.next_tick = Some(now + PROCESS_INTERVAL);
    }

    fn next_timer(&self) -> Option<Time> {
        self.next_tick
    }

    fn target_rate(&self) -> Rate {
        self.target()
    }

    fn pacing_rate(&self) -> Rate {
        // libwebrtc: pacing_rate = target * pacing_factor_ (kDefaultPaceMultiplier 2.5)
        self.target().scale(self.cfg.pacing_factor)
    }

    fn ecn(&self) -> Ecn {
        // libwebrtc's GCC does not react to ECN; packets go out Not-ECT.
        Ecn::NotEct
    }

    fn report(&self) -> Value {
        let aimd = self.delay.aimd();
        let [hold, inc, dec] = aimd.time_in_states(self.last_now);
        json!({
            "packets_sent": self.packets_sent,
            "bytes_sent": self.bytes_sent,
            "feedbacks": self.feedbacks,
            "packets_reported": self.packets_reported,
            "packets_lost": self.packets_lost,
            "ce_marks_ignored": self.ce_ignored,
            "groups": self.delay.groups(),
            "group_deltas": self.delay.deltas,
            "overuse_events": self.delay.overuse_signals,
            "underuse_events": self.delay.underuse_signals,
            "delay_decreases": self.delay_decreases,
            "delay_halvings": self.halvings,
            "delay_increases": self.delay_increases,
            "loss_decreases": self.loss.decreases,
            "loss_increases": self.loss.increases,
            "state_transitions": aimd.transitions(),
            "state_time_s": {
                "hold": hold.as_secs_f64(),
                "increase": inc.as_secs_f64(),
                "decrease": dec.as_secs_f64(),
            },
            "final": {
                "target_bps": self.target().as_bps(),
                "pacing_bps": self.pacing_rate().as_bps(),
                "delay_based_bps": self.delay.estimate().as_bps(),
                "loss_based_bps": self.loss.target().as_bps(),
                "acked_bps": self.acked.bitrate().map(|r| r.as_bps()),
                "link_capacity_bps": aimd.link_capacity().map(|r| r.as_bps()),
                "rtt_ms": self.rtt.mean().map(|d| d.as_millis_f64()),
                "threshold_ms": self.delay.detector().threshold_ms(),
                "fraction_loss_q8": self.loss.fraction_loss_q8(),
                "state": aimd.state().name(),
                "detector": self.delay.state().name(),
            },
        })
    }

    fn sample(&mut self, _now: Time, out: &mut SampleSink<'_>) {
        out("gcc_target_mbps", self.target().as_mbps_f64());
        out("gcc_delay_based_mbps", self.delay.estimate().as_mbps_f64());
        out("gcc_loss_based_mbps", self.loss.target().as_mbps_f64());
        if let Some(a) = self.acked.bitrate() {
            out("gcc_acked_mbps", a.as_mbps_f64());
        }
        out("gcc_trend_ms", self.delay.detector().modified_trend());
        out("gcc_threshold_ms", self.delay.detector().threshold_ms());
        out("gcc_loss_pct", self.last_loss_pct);
        if let Some(r) = self.rtt.mean() {
            out("gcc_rtt_ms", r.as_millis_f64());
        }
        let state = match self.delay.aimd().state() {
            RateControlState::Hold => 0.0,
            RateControlState::Increase => 1.0,
            RateControlState::Decrease => -1.0,
        };
        out("gcc_state", state);
        let signal = match self.delay.state() {
            BandwidthUsage::Normal => 0.0,
            BandwidthUsage::Overusing => 1.0,
            BandwidthUsage::Underusing => -1.0,
        };
        out("gcc_signal", signal);
    }
}
