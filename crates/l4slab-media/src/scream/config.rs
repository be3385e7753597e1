//! SCReAM v2 constants and parameters: the values S2 fixes (`pub const`),
//! the ones it recommends ([`ScreamConfig`]'s `Default`) and what a sender
//! must not configure.

use l4slab_core::{Dur, Rate};

/// S2 §"Receiving ECN-CE for L4S": `L4S_AVG_G_UP (1.0/8)`; SC `kL4sGUp`.
pub const L4S_AVG_G_UP: f64 = 1.0 / 8.0;
/// S2 §"Receiving ECN-CE for L4S": `L4S_AVG_G_DOWN (1.0/128)`; SC `kL4sGDown`.
pub const L4S_AVG_G_DOWN: f64 = 1.0 / 128.0;
/// S2: "l4s_alpha is updated at least every 10ms" (`min(0.01, s_rtt)`).
pub const L4S_ALPHA_INTERVAL: Dur = Dur::from_millis(10);
/// S2 §"Detecting Increased Queue Delay": `QDELAY_AVG_G (1.0/4)`; SC
/// `kQueueDelayAvgAlpha`.
pub const QDELAY_AVG_G: f64 = 1.0 / 4.0;
/// S2: `QDELAY_MIN_MAX_AVG_G (1.0/16)`; SC `kQueueDelayMinMaxAlpha`.
pub const QDELAY_MIN_MAX_AVG_G: f64 = 1.0 / 16.0;
/// S2: `QDELAY_DEV_AVG_G (1.0/32)`; SC `kLatencyDiffAlpha`.
pub const QDELAY_DEV_AVG_G: f64 = 1.0 / 32.0;
/// S2: `QDELAY_DEV_THRESHOLD (0.01)` s; SC `kLatencyDiffThreshold`.
pub const QDELAY_DEV_THRESHOLD: f64 = 0.01;
/// S2 §"Media Rate Control": `PACKET_OVERHEAD (20)` bytes; SC
/// `kPacketOverhead = 12 + 8`.
pub const PACKET_OVERHEAD: f64 = 20.0;
/// S2 §"Media Rate Control": "tmp_t /= 1.2 + rate_adjust_factor +
/// frame_size_dev" (the two adjustments are the sender app's, 0 here).
pub const TARGET_RATE_DIVISOR: f64 = 1.2;
/// RFC 6298 §2 `alpha = 1/8`, the gain S2 points to for `s_rtt`.
pub const S_RTT_GAIN: f64 = 1.0 / 8.0;
/// `s_rtt` before the first sample: SC `sRtt(0.05f)`.
pub const S_RTT_INIT: Dur = Dur::from_millis(50);
/// Base delay history: SC `kBaseOwdHistSize = 50` slots ...
pub const BASE_DELAY_SLOTS: usize = 50;
/// ... of SC `kBaseDelayUpdateInterval_ntp` = 10 s each.
pub const BASE_DELAY_INTERVAL: Dur = Dur::from_secs(10);
/// Sent packets remembered for the bytes-in-flight edge (preallocated).
/// A report about a packet older than this falls back to the sizes it
/// carries.
pub const SENT_RING: usize = 8192;

/// SCReAM v2 parameters. `Default` is S2's recommended values (constants
/// section of S2 §"Reference Window Update", §"Send Window Calculation",
/// §"Packet Pacing"); the rates are the application's.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreamConfig {
    /// Target before the first RTT sample, and what the first `ref_wnd` is
    /// sized for (SC `registerNewStream(startBitrate)`).
    pub start_rate: Rate,
    /// `TARGET_BITRATE_MIN` (S2 §"Media Rate Control"), from the encoder.
    pub min_rate: Rate,
    /// `TARGET_BITRATE_MAX`; growth stops once the target reaches it.
    pub max_rate: Rate,
    /// `IS_L4S` (S2): send ECT(1) and answer CE with the scalable backoff.
    pub l4s: bool,
    /// Without `l4s`: send ECT(0) and answer CE with `BETA_ECN` (S2
    /// §"Receiving ECN-CE with classic ECN"). Both false: Not-ECT, CE is
    /// ignored; loss and delay only.
    pub classic_ecn: bool,
    /// `qdelay_target`, S2 `QDELAY_TARGET_LO (0.06)` (SC
    /// `kQueueDelayTargetMin = 0.1`).
    pub qdelay_target: Dur,
    /// `MSS (1000)` bytes, S2.
    pub mss: u32,
    /// `MIN_REF_WND (3000)` bytes, S2 (SC: 3 MSS, `kMinCwndMss`).
    pub min_ref_wnd: u32,
    /// `BETA_LOSS (0.7)`, S2; SC `kLossBeta = 0.7`.
    pub beta_loss: f64,
    /// `BETA_ECN (0.8)`, S2 (SC `kEcnCeBeta = 0.9`).
    pub beta_ecn: f64,
    /// `VIRTUAL_RTT (0.025)` s, S2; SC `kSrttVirtual`.
    pub virtual_rtt: Dur,
    /// `MUL_INCREASE_FACTOR (0.02)`, S2 (SC default 0.05).
    pub mul_increase_factor: f64,
    /// `POST_CONGESTION_DELAY_RTT (100)`, S2 (SC `kPostCongestionDelayRtts
    /// = 200`).
    pub post_congestion_delay_rtts: f64,
    /// `BYTES_IN_FLIGHT_HEAD_ROOM (1.5)`, S2 (SC default 2.0): how far
    /// `ref_wnd` may grow beyond the bytes in flight.
    pub bytes_in_flight_head_room: f64,
    /// `REF_WND_OVERHEAD_MIN (1.5)`, S2; SC `kMinWindowHeadroom`.
    pub ref_wnd_overhead_min: f64,
    /// `REF_WND_OVERHEAD_MAX (3.0)`, S2; SC `maxWindowHeadroom = 3.0`.
    pub ref_wnd_overhead_max: f64,
    /// `PACKET_PACING_HEADROOM (1.5)`, S2; SC `kPacketPacingHeadRoom`.
    pub packet_pacing_headroom: f64,
    /// `RATE_PACE_MIN (50000)` bit/s, S2; SC `50e3f`.
    pub rate_pace_min: Rate,
    /// `REDUCE_JITTER (false)`, S2 (SC always on): damp growth and backoff
    /// when the queue delay jitters.
    pub reduce_jitter: bool,
}

impl Default for ScreamConfig {
    fn default() -> Self {
        ScreamConfig {
            // SC scream_sender.cpp `initRate = 1000` kbit/s.
            start_rate: Rate::from_mbps(1),
            // S2 leaves TARGET_BITRATE_MIN to the app; l4slab choice.
            min_rate: Rate::from_kbps(100),
            // SC scream_sender.cpp `maxRate = 500000` kbit/s.
            max_rate: Rate::from_mbps(500),
            l4s: true,
            classic_ecn: false,
            qdelay_target: Dur::from_millis(60),
            mss: 1000,
            min_ref_wnd: 3000,
            beta_loss: 0.7,
            beta_ecn: 0.8,
            virtual_rtt: Dur::from_millis(25),
            mul_increase_factor: 0.02,
            post_congestion_delay_rtts: 100.0,
            bytes_in_flight_head_room: 1.5,
            ref_wnd_overhead_min: 1.5,
            ref_wnd_overhead_max: 3.0,
            packet_pacing_headroom: 1.5,
            rate_pace_min: Rate::from_kbps(50),
            reduce_jitter: false,
        }
    }
}

impl ScreamConfig {
    /// Panics on a configuration no sender could use (see [`Scream::new`]).
    ///
    /// [`Scream::new`]: super::Scream::new
    pub(super) fn assert_valid(&self) {
        assert!(self.max_rate > Rate::ZERO, "scream: max_rate must be > 0");
        assert!(
            self.min_rate <= self.max_rate,
            "scream: min_rate {} > max_rate {}",
            self.min_rate,
            self.max_rate
        );
        assert!(
            self.mss > 0 && self.min_ref_wnd > 0,
            "scream: mss and min_ref_wnd must be > 0"
        );
        assert!(
            !self.virtual_rtt.is_zero() && !self.qdelay_target.is_zero(),
            "scream: virtual_rtt and qdelay_target must be > 0"
        );
        assert!(
            self.beta_loss > 0.0
                && self.beta_loss <= 1.0
                && self.beta_ecn > 0.0
                && self.beta_ecn <= 1.0,
            "scream: beta_loss and beta_ecn must be in (0, 1]"
        );
        assert!(
            self.ref_wnd_overhead_min > 0.0
                && self.ref_wnd_overhead_min <= self.ref_wnd_overhead_max,
            "scream: need 0 < ref_wnd_overhead_min <= ref_wnd_overhead_max"
        );
    }
}
