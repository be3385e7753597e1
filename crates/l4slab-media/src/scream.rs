//! SCReAM v2: Self-Clocked Rate Adaptation for Multimedia, with its L4S
//! extension — draft-ietf-ccwg-rfc8298bis-screamv2 (`S2`, the working copy
//! in IngJohEricsson/draft-johansson-ccwg-scream-bis) and the Ericsson
//! reference code (`SC`: EricssonResearch/scream `code/ScreamV2Tx.cpp`,
//! `code/ScreamTx.h`). RFC 8298 (`S1`, SCReAM v1) only for background.
//!
//! SCReAM is window-based. The network congestion control keeps a reference
//! window `ref_wnd` (bytes), cut on loss, on CE marks and on queue delay, and
//! grown per acknowledged unmarked byte; the media rate control derives the
//! encoder's target bitrate from `ref_wnd / s_rtt`; the sender transmission
//! control lets `ref_wnd · ref_wnd_overhead` bytes be in flight and paces at
//! `1.5 ×` the target. Everything here runs on `on_sent` and `on_feedback`;
//! there is no timer.
//!
//! What each step does, and where it comes from:
//!
//! * **Bytes in flight** (S2 §"Status Update When Sending Data"): the bytes
//!   sent after the highest reported sequence number, lost ones included.
//!   Kept as a cumulative byte count per sent packet in a preallocated ring
//!   (`SENT_RING` packets), so a report advances it in O(1).
//!   `bytes_newly_acked` is the growth of that acked edge (S2 §"Status Update
//!   on Receiving Feedback", lost packets included).
//! * **RTT** (S2 §"Detecting Increased Queue Delay", `s_rtt` "similar to
//!   RFC 6298"): one sample per report from its newest received packet,
//!   `now − sent − (report_time − arrival)`, smoothed with gain 1/8.
//! * **Queue delay** (S2 §"Detecting Increased Queue Delay", RFC 6817; SC
//!   `estimateOwd`, `markAcked`): `qdelay = (arrival − sent) − base`, `base`
//!   the minimum one-way delay over a history of 50 slots of 10 s (SC
//!   `kBaseOwdHistSize`, `kBaseDelayUpdateInterval_ntp`). `qdelay_avg`, at most
//!   every `min(VIRTUAL_RTT, s_rtt)`, follows a drop at once and a rise with
//!   gain 1/4.
//! * **l4s_alpha** (S2 §"Receiving ECN-CE for L4S"; SC
//!   `incomingStandardizedFeedback`): the fraction of delivered packets that
//!   were CE-marked, counted since the last update, at most every
//!   `min(10 ms, s_rtt)`; fast attack `G_UP = 1/8` when the fraction is at or
//!   above alpha, otherwise slow decay `alpha ·= 1 − 1/128`.
//! * **Reduction** (S2 §"Reference Window Reduction"): at most once per
//!   `min(VIRTUAL_RTT, s_rtt)` since the last reaction, one of: loss
//!   (`× BETA_LOSS`), L4S CE (`backoff = l4s_alpha/2 / max(1, s_rtt/VIRTUAL_RTT)`,
//!   `× max(0.25, scl)` and `× max(0.25, ref_wnd_delay_scale)` when
//!   `qdelay < target/4`), classic CE (`× BETA_ECN`), or delay
//!   (`alpha_v = clamp((qdelay_avg − target/2)/(target/2), 0, 1)`, backoff
//!   `alpha_v/2 / max(1, s_rtt/VIRTUAL_RTT)`). Floor `MIN_REF_WND`.
//! * **Increase** (S2 §"Reference Window Increase"): non-CE acked bytes ×
//!   `MSS/ref_wnd` × `min(1, s_rtt/VIRTUAL_RTT)` × `max(0.25, scl)`, times
//!   the multiplicative factor `1 + MUL_INCREASE_FACTOR·ref_wnd/MSS` damped
//!   by `post_congestion_scale · scl`; only while `ref_wnd` stays below
//!   `MSS + max_bytes_in_flight · BYTES_IN_FLIGHT_HEAD_ROOM` and the target
//!   is below the maximum.
//! * **Target bitrate** (S2 §"Media Rate Control"): `8·ref_wnd/s_rtt ·
//!   (1 − min(0.2, max(0, MSS/ref_wnd − 0.1))) · MSS/(MSS+20) / 1.2`, clamped
//!   to `[min_rate, max_rate]`. There is no separate ramp-up speed limit in
//!   v2 (v1's `RAMP_UP_SPEED`; SC keeps `kRampUpSpeed` in `ScreamTx.h` but
//!   `ScreamV2Tx` never reads it): ramp-up is limited by the window growth
//!   rule and its bytes-in-flight cap.
//! * **Pacing** (S2 §"Packet Pacing"): `max(RATE_PACE_MIN, target) ·
//!   PACKET_PACING_HEADROOM` = `max(50 kbit/s, target) · 1.5` (wire bits/s).
//! * **Window** (S2 §"Send Window Calculation"): `ref_wnd · ref_wnd_overhead`,
//!   `ref_wnd_overhead = 1.5 + (3.0 − 1.5) · ref_wnd_delay_scale` (3.0 unless
//!   `reduce_jitter` finds jitter).
//!
//! **Not implemented** (the sender application's, or optional):
//! * the RTP (data unit) queue, its discard on excessive delay, frame
//!   skipping, multi-stream priorities and rate sharing (SC `Stream`,
//!   `getPrioritizedStream`) — the sender app owns its queue;
//! * `rate_adjust_factor` and `frame_size_dev` of the media rate control
//!   (they need the media queue delay and frame sizes; taken as 0);
//! * loss detection with a reordering window (S2 §"Detecting Lost Data
//!   Units"): the feedback decoder gives the loss verdicts;
//! * the optional parts of S2 §"Additional functions": clock drift
//!   compensation and base delay reset, conditional loss backoff and rate
//!   policer detection, the acked-bitrate undershoot guard, competing-flows
//!   `qdelay_target` adaptation (the target stays `qdelay_target`, i.e.
//!   QDELAY_TARGET_LO); relaxed pacing; SC's `ceDensity` (packet pacing off
//!   only), its `cwnd` cap near the maximum bitrate, its MSS tracking
//!   (`mss` is a fixed configuration value here) and its shared bottleneck
//!   detection.
//!
//! **Deviations** (where S2 and SC differ, S2 is followed unless said; see
//! docs/models/scream.md):
//! * loss cuts at most once per `s_rtt` (SC `detectLoss`: `time −
//!   lastLossEventT > sRtt`), as S2 §"Network Congestion Control" says in
//!   prose ("at most once per RTT"); S2's pseudo-code gates losses like
//!   marks, at `min(VIRTUAL_RTT, s_rtt)`;
//! * CE backoff scaled by `s_rtt/25 ms` (S2) not `s_rtt/30 ms` (SC
//!   `kMinCongestionBackOffInterval_ntp`); the virtual alpha is divided by
//!   the RTT factor once (S2), not twice (SC divides `virtualL4sAlpha` and
//!   then the backoff);
//! * `s_rtt` is one RFC 6298 EWMA (gain 1/8) of report-delay-corrected
//!   samples; SC filters twice (`sRttSh`, then `sRtt` once per `sRttSh`) and
//!   measures `now − sent` without removing the receiver's hold time;
//! * constants and initial values from S2 (`l4s_alpha` 0, not SC's 0.1;
//!   target divisor 1.2, not SC's 1.1 with `s_rtt + 1 ms`);
//! * `ref_wnd` starts at `start_rate · 100 ms` as SC's sender app sets it
//!   (`scream_sender.cpp`: `cwnd = initRate · 100 / 8`; S2 starts at
//!   `MIN_REF_WND`, with which a keyframe of a few times a frame needs
//!   several round trips and meets the app's 100 ms RTP queue discard), and
//!   is set, at the first RTT sample, to the window whose target equals
//!   `start_rate`; before that sample the target is `start_rate`;
//! * `max_bytes_in_flight` rolls over once per `s_rtt` (S2: "current round
//!   trip"; SC: every 50 ms).
//!
//! Deterministic: `f64` arithmetic only, no randomness, no clock reads. No
//! heap allocation after construction.

use serde_json::{json, Value};

use l4slab_core::{Dur, Ecn, Rate, Time};

use crate::{Feedback, MediaCc, SampleSink};

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

/// Why `ref_wnd` was cut (S2 §"Reference Window Reduction": `is_loss_t`,
/// `is_ce_t`, `is_virtual_ce_t`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CutKind {
    /// `ref_wnd *= BETA_LOSS`.
    Loss,
    /// L4S: `ref_wnd *= 1 − backoff`, `backoff` from `l4s_alpha`.
    L4sCe { backoff: f64 },
    /// Classic ECN: `ref_wnd *= BETA_ECN`.
    ClassicCe,
    /// Queue delay as pseudo-L4S: `ref_wnd *= 1 − backoff`, `backoff` from
    /// `alpha_v`.
    Delay { alpha_v: f64, backoff: f64 },
}

/// The last reduction: `ref_wnd` just before and just after it (before the
/// same update's increase).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cut {
    pub at: Time,
    pub kind: CutKind,
    pub before: f64,
    pub after: f64,
}

/// Counters for `summary.json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScreamStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub feedbacks: u64,
    pub packets_acked: u64,
    pub packets_ce: u64,
    pub packets_lost: u64,
    pub ce_backoffs: u64,
    pub classic_ce_backoffs: u64,
    pub loss_backoffs: u64,
    pub delay_backoffs: u64,
    pub alpha_updates: u64,
}

/// Minimum one-way delay over a history of slots (SC `estimateOwd`,
/// `getBaseOwd`; RFC 6817 §2.4.2 base delays). One-way delays are signed
/// nanoseconds: the clocks may be offset.
#[derive(Clone, Debug)]
struct BaseDelay {
    current: i64,
    slots: [i64; BASE_DELAY_SLOTS],
    next: usize,
    slots_min: i64,
    last_roll: Option<Time>,
}

impl BaseDelay {
    fn new() -> Self {
        BaseDelay {
            current: i64::MAX,
            slots: [i64::MAX; BASE_DELAY_SLOTS],
            next: 0,
            slots_min: i64::MAX,
            last_roll: None,
        }
    }

    /// SC `estimateOwd`: `baseOwd = min(baseOwd, ackedOwd)`; every 10 s the
    /// current minimum goes into the history and a new one starts.
    fn update(&mut self, now: Time, owd: i64) {
        self.current = self.current.min(owd);
        let last = *self.last_roll.get_or_insert(now);
        if now.saturating_since(last) >= BASE_DELAY_INTERVAL {
            self.slots[self.next] = self.current;
            self.next = (self.next + 1) % BASE_DELAY_SLOTS;
            self.current = i64::MAX;
            self.slots_min = self.slots.iter().copied().min().unwrap_or(i64::MAX);
            self.last_roll = Some(now);
        }
    }

    /// SC `getBaseOwd`: `min(baseOwd, baseOwdHistMin)`.
    fn base(&self) -> i64 {
        self.current.min(self.slots_min)
    }
}

/// SCReAM v2 sender congestion control (see the module header).
#[derive(Clone, Debug)]
pub struct Scream {
    cfg: ScreamConfig,

    // --- bytes in flight (S2 §"Status Update When Sending Data") ---
    /// `(seq, cumulative bytes sent through seq)`, indexed `seq % SENT_RING`.
    sent: Vec<(u64, u64)>,
    bytes_sent: u64,
    highest_acked: Option<u64>,
    bytes_acked_edge: u64,
    bytes_in_flight: u64,
    max_bytes_in_flight: u64,
    max_bytes_in_flight_prev: u64,
    last_bif_roll: Option<Time>,
    bytes_newly_acked: u64,
    bytes_newly_acked_ce: u64,

    // --- RTT and queue delay ---
    s_rtt: Option<Dur>,
    base: BaseDelay,
    qdelay: f64,
    qdelay_avg: f64,
    last_qdelay_avg_update: Option<Time>,
    qdelay_max_avg: f64,
    qdelay_min_avg: f64,
    qdelay_dev_avg: f64,
    ref_wnd_delay_scale: f64,

    // --- L4S ---
    l4s_alpha: f64,
    delivered_this_rtt: u64,
    marked_this_rtt: u64,
    last_alpha_update: Option<Time>,
    last_fraction_marked: f64,

    // --- reference window (S2 §"Reference Window Update") ---
    ref_wnd: f64,
    ref_wnd_i: f64,
    ref_wnd_i_update_allowed: bool,
    loss_detected: bool,
    data_units_marked: bool,
    last_congestion_detected: Option<Time>,
    last_reaction: Option<Time>,
    last_loss_reaction: Option<Time>,
    last_alpha_v: f64,

    // --- media rate control ---
    target_bps: f64,
    pacing_bps: f64,

    stats: ScreamStats,
    last_cut: Option<Cut>,
}

impl Scream {
    /// # Panics
    /// On a configuration no sender could use: `min_rate > max_rate`, a zero
    /// `max_rate`, `mss`, `min_ref_wnd`, `virtual_rtt` or `qdelay_target`,
    /// betas outside (0, 1], or an overhead range with `min > max`.
    pub fn new(cfg: ScreamConfig) -> Self {
        assert!(cfg.max_rate > Rate::ZERO, "scream: max_rate must be > 0");
        assert!(
            cfg.min_rate <= cfg.max_rate,
            "scream: min_rate {} > max_rate {}",
            cfg.min_rate,
            cfg.max_rate
        );
        assert!(
            cfg.mss > 0 && cfg.min_ref_wnd > 0,
            "scream: mss and min_ref_wnd must be > 0"
        );
        assert!(
            !cfg.virtual_rtt.is_zero() && !cfg.qdelay_target.is_zero(),
            "scream: virtual_rtt and qdelay_target must be > 0"
        );
        assert!(
            cfg.beta_loss > 0.0
                && cfg.beta_loss <= 1.0
                && cfg.beta_ecn > 0.0
                && cfg.beta_ecn <= 1.0,
            "scream: beta_loss and beta_ecn must be in (0, 1]"
        );
        assert!(
            cfg.ref_wnd_overhead_min > 0.0 && cfg.ref_wnd_overhead_min <= cfg.ref_wnd_overhead_max,
            "scream: need 0 < ref_wnd_overhead_min <= ref_wnd_overhead_max"
        );
        let start = (cfg.start_rate.max(cfg.min_rate).min(cfg.max_rate)).as_bps() as f64;
        let mut s = Scream {
            sent: vec![(u64::MAX, 0); SENT_RING],
            bytes_sent: 0,
            highest_acked: None,
            bytes_acked_edge: 0,
            bytes_in_flight: 0,
            max_bytes_in_flight: 0,
            max_bytes_in_flight_prev: 0,
            last_bif_roll: None,
            bytes_newly_acked: 0,
            bytes_newly_acked_ce: 0,
            s_rtt: None,
            base: BaseDelay::new(),
            qdelay: 0.0,
            qdelay_avg: 0.0,
            last_qdelay_avg_update: None,
            // SC initial values (S2's `qdelay_max_avg (qdelay_target)` would
            // read as jitter at start).
            qdelay_max_avg: 0.0,
            qdelay_min_avg: f64::MAX,
            qdelay_dev_avg: 0.0,
            ref_wnd_delay_scale: 1.0,
            // S2: `l4s_alpha (0.0)` (SC 0.1).
            l4s_alpha: 0.0,
            delivered_this_rtt: 0,
            marked_this_rtt: 0,
            last_alpha_update: None,
            last_fraction_marked: 0.0,
            // SC `scream_sender.cpp`: `cwnd = initRate * 100 / 8` (100 ms
            // at the start rate; S2: `ref_wnd (MIN_REF_WND)`). S2:
            // `ref_wnd_i (1)`, `ref_wnd_i_update_allowed (true)`.
            ref_wnd: (cfg.start_rate.as_bps() as f64 * 0.1 / 8.0).max(f64::from(cfg.min_ref_wnd)),
            ref_wnd_i: 1.0,
            ref_wnd_i_update_allowed: true,
            loss_detected: false,
            data_units_marked: false,
            last_congestion_detected: None,
            last_reaction: None,
            last_loss_reaction: None,
            last_alpha_v: 0.0,
            target_bps: start,
            pacing_bps: 0.0,
            stats: ScreamStats::default(),
            last_cut: None,
            cfg,
        };
        s.pacing_bps = s.pacing_for(start);
        s
    }

    pub fn config(&self) -> &ScreamConfig {
        &self.cfg
    }
    /// Reference window, bytes.
    pub fn ref_wnd(&self) -> f64 {
        self.ref_wnd
    }
    /// Reference window inflection point (last `ref_wnd` before a cut).
    pub fn ref_wnd_i(&self) -> f64 {
        self.ref_wnd_i
    }
    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }
    /// The fraction of packets marked in the last `l4s_alpha` update.
    pub fn last_fraction_marked(&self) -> f64 {
        self.last_fraction_marked
    }
    /// Smoothed RTT, `None` before the first sample.
    pub fn s_rtt(&self) -> Option<Dur> {
        self.s_rtt
    }
    /// Last queue delay sample, seconds.
    pub fn qdelay(&self) -> f64 {
        self.qdelay
    }
    /// `qdelay_avg`, seconds.
    pub fn qdelay_avg(&self) -> f64 {
        self.qdelay_avg
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }
    pub fn stats(&self) -> &ScreamStats {
        &self.stats
    }
    pub fn last_cut(&self) -> Option<Cut> {
        self.last_cut
    }
    /// `ref_wnd_delay_scale` (1 unless `reduce_jitter` sees jitter).
    pub fn ref_wnd_delay_scale(&self) -> f64 {
        self.ref_wnd_delay_scale
    }

    fn srtt(&self) -> Dur {
        self.s_rtt.unwrap_or(S_RTT_INIT)
    }

    fn srtt_secs(&self) -> f64 {
        self.srtt().as_secs_f64().max(1e-6)
    }

    fn mss(&self) -> f64 {
        f64::from(self.cfg.mss)
    }

    /// `now − then >= d`, true when `then` never happened.
    fn elapsed(now: Time, then: Option<Time>, d: Dur) -> bool {
        then.is_none_or(|t| now.saturating_since(t) >= d)
    }

    /// Reacts to CE at all (L4S or classic ECN mode).
    fn ce_capable(&self) -> bool {
        self.cfg.l4s || self.cfg.classic_ecn
    }

    /// S2 §"Media Rate Control": the factor between `8·ref_wnd/s_rtt` and the
    /// target.
    fn rate_factor(&self, ref_wnd: f64) -> f64 {
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
    fn pacing_for(&self, target_bps: f64) -> f64 {
        target_bps.max(self.cfg.rate_pace_min.as_bps() as f64) * self.cfg.packet_pacing_headroom
    }

    /// S2 §"Media Rate Control": `target_bitrate = tmp_t * 8 * ref_wnd /
    /// s_rtt`, clamped to `[TARGET_BITRATE_MIN, TARGET_BITRATE_MAX]`.
    fn update_target(&mut self) {
        if self.s_rtt.is_none() {
            return; // start_rate until the first RTT sample
        }
        let raw = self.rate_factor(self.ref_wnd) * 8.0 * self.ref_wnd / self.srtt_secs();
        let lo = self.cfg.min_rate.as_bps() as f64;
        let hi = self.cfg.max_rate.as_bps() as f64;
        self.target_bps = raw.clamp(lo, hi);
        self.pacing_bps = self.pacing_for(self.target_bps);
    }

    /// Bytes-in-flight edge: the report's highest sequence number is
    /// acknowledged together with everything below it (S2 §"Status Update
    /// on Receiving Feedback"; SC `detectLoss` "treated as received even
    /// though they are not ... similar to what SACK does").
    fn advance_acked_edge(&mut self, fb: &Feedback<'_>) {
        let Some(hi) = fb.packets.iter().map(|p| p.seq).max() else {
            return;
        };
        if self.highest_acked.is_some_and(|h| hi <= h) {
            return;
        }
        let slot = self.sent[(hi % SENT_RING as u64) as usize];
        let newly = if slot.0 == hi {
            let n = slot.1.saturating_sub(self.bytes_acked_edge);
            self.bytes_acked_edge = slot.1;
            n
        } else {
            // Not in the ring (too old, or never passed to on_sent): count
            // the report's own sizes above the old edge.
            let n: u64 = fb
                .packets
                .iter()
                .filter(|p| self.highest_acked.is_none_or(|h| p.seq > h))
                .map(|p| u64::from(p.size))
                .sum();
            self.bytes_acked_edge = (self.bytes_acked_edge + n).min(self.bytes_sent);
            n
        };
        self.highest_acked = Some(hi);
        self.bytes_newly_acked += newly;
        self.bytes_in_flight = self.bytes_sent.saturating_sub(self.bytes_acked_edge);
    }

    /// S2 §"Detecting Increased Queue Delay", per acknowledged packet.
    fn on_owd_sample(&mut self, now: Time, sent: Time, arrival: Time) {
        let owd = arrival.as_nanos() as i64 - sent.as_nanos() as i64;
        self.base.update(now, owd);
        // qdelay as RFC 6817: one-way delay minus the base delay.
        self.qdelay = (owd - self.base.base()).max(0) as f64 * 1e-9;
        if self.cfg.reduce_jitter {
            // qdelay_max_avg = min(qdelay_target, max(qdelay, qdelay_max_avg))
            // qdelay_min_avg = min(qdelay, qdelay_min_avg)
            let target = self.cfg.qdelay_target.as_secs_f64();
            self.qdelay_max_avg = target.min(self.qdelay.max(self.qdelay_max_avg));
            self.qdelay_min_avg = self.qdelay.min(self.qdelay_min_avg);
        }
    }

    /// S2 `calculate_ref_wnd_delay_scale()`.
    fn update_delay_scale(&mut self) {
        self.qdelay_max_avg *= 1.0 - QDELAY_MIN_MAX_AVG_G;
        if self.qdelay_min_avg == f64::MAX {
            self.qdelay_min_avg = self.qdelay_max_avg;
        }
        self.qdelay_min_avg = self.qdelay_min_avg * (1.0 - QDELAY_MIN_MAX_AVG_G)
            + self.qdelay_max_avg * QDELAY_MIN_MAX_AVG_G;
        self.qdelay_dev_avg = (1.0 - QDELAY_DEV_AVG_G) * self.qdelay_dev_avg
            + QDELAY_DEV_AVG_G * (self.qdelay_max_avg - self.qdelay_min_avg);
        self.ref_wnd_delay_scale =
            (1.0 - self.qdelay_dev_avg / QDELAY_DEV_THRESHOLD).clamp(0.0, 1.0);
    }

    /// S2 §"Receiving ECN-CE for L4S": `if (now - last_update_l4s_alpha_time
    /// >= min(0.01, s_rtt))`.
    fn maybe_update_alpha(&mut self, now: Time) {
        let interval = L4S_ALPHA_INTERVAL.min(self.srtt());
        if !Self::elapsed(now, self.last_alpha_update, interval) || self.delivered_this_rtt == 0 {
            // SC: only "if (bytesDeliveredThisRtt > 0)".
            return;
        }
        // fraction_marked_t = data_units_marked_this_rtt / data_units_delivered_this_rtt
        let f = self.marked_this_rtt as f64 / self.delivered_this_rtt as f64;
        if f >= self.l4s_alpha {
            // l4s_alpha = L4S_AVG_G_UP * fraction_marked_t + (1 - L4S_AVG_G_UP) * l4s_alpha
            self.l4s_alpha = (L4S_AVG_G_UP * f + (1.0 - L4S_AVG_G_UP) * self.l4s_alpha).min(1.0);
        } else {
            // l4s_alpha = (1.0 - L4S_AVG_G_DOWN) * l4s_alpha
            self.l4s_alpha *= 1.0 - L4S_AVG_G_DOWN;
        }
        self.last_alpha_update = Some(now);
        self.delivered_this_rtt = 0;
        self.marked_this_rtt = 0;
        self.last_fraction_marked = f;
        self.stats.alpha_updates += 1;
    }

    /// S2 §"Detecting Increased Queue Delay": `if (now -
    /// last_update_qdelay_avg_time >= min(virtual_rtt, s_rtt))`.
    fn maybe_update_qdelay_avg(&mut self, now: Time) {
        let interval = self.cfg.virtual_rtt.min(self.srtt());
        if !Self::elapsed(now, self.last_qdelay_avg_update, interval) {
            return;
        }
        if self.qdelay < self.qdelay_avg {
            // "if (qdelay < qdelay_avg) qdelay_avg = qdelay"
            self.qdelay_avg = self.qdelay;
        } else {
            // qdelay_avg = QDELAY_AVG_G * qdelay + (1.0 - QDELAY_AVG_G) * qdelay_avg
            self.qdelay_avg = QDELAY_AVG_G * self.qdelay + (1.0 - QDELAY_AVG_G) * self.qdelay_avg;
        }
        if self.cfg.reduce_jitter {
            self.update_delay_scale();
        }
        self.last_qdelay_avg_update = Some(now);
    }

    /// S2 §"Reference Window Update": reduction, then increase.
    fn update_ref_wnd(&mut self, now: Time) {
        let mss = self.mss();
        let s_rtt = self.srtt();
        let s_rtt_s = self.srtt_secs();
        let vrtt_s = self.cfg.virtual_rtt.as_secs_f64();
        let target_q = self.cfg.qdelay_target.as_secs_f64();
        // ref_wnd_ratio = min(1.0, MSS / ref_wnd), taken before the cut
        // (SC `cwndRatio` at the top of `updateCwnd`).
        let ref_wnd_ratio = (mss / self.ref_wnd).min(1.0);

        // ---- S2 §"Reference Window Reduction" ----
        // scl_t = clamp((8 * (ref_wnd - ref_wnd_i) / ref_wnd_i)^2, 0.1, 1.0)
        let scl = {
            let t = 8.0 * (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i;
            (t * t).clamp(0.1, 1.0)
        };
        // if (loss_detected || data_units_marked) last_congestion_detected_time = now
        if self.loss_detected || self.data_units_marked {
            self.last_congestion_detected = Some(now);
        }
        // if (now - last_reaction_to_congestion_time >= min(VIRTUAL_RTT, s_rtt))
        let mut kind: Option<CutKind> = None;
        if Self::elapsed(now, self.last_reaction, self.cfg.virtual_rtt.min(s_rtt)) {
            let half = target_q / 2.0;
            if self.loss_detected {
                kind = Some(CutKind::Loss);
            } else if self.data_units_marked {
                kind = Some(if self.cfg.l4s {
                    CutKind::L4sCe { backoff: 0.0 }
                } else {
                    CutKind::ClassicCe
                });
            } else if self.qdelay_avg > half {
                // l4s_alpha_v_t = min(1.0, max(0.0, (qdelay_avg - qdelay_target/2) / (qdelay_target/2)))
                let alpha_v = ((self.qdelay_avg - half) / half).clamp(0.0, 1.0);
                kind = Some(CutKind::Delay {
                    alpha_v,
                    backoff: 0.0,
                });
            }
        }
        if kind.is_some() && self.ref_wnd_i_update_allowed {
            // "Update ref_wnd_i": ref_wnd_i = ref_wnd
            self.ref_wnd_i = self.ref_wnd;
            self.ref_wnd_i_update_allowed = false;
        }
        let before = self.ref_wnd;
        // backoff_t /= max(1.0, s_rtt / VIRTUAL_RTT)
        let rtt_scale = (s_rtt_s / vrtt_s).max(1.0);
        match &mut kind {
            None => {}
            Some(CutKind::Loss) => {
                // ref_wnd = ref_wnd * BETA_LOSS
                self.ref_wnd *= self.cfg.beta_loss;
                self.stats.loss_backoffs += 1;
                self.last_loss_reaction = Some(now);
            }
            Some(CutKind::L4sCe { backoff }) => {
                // backoff_t = l4s_alpha / 2
                let mut b = self.l4s_alpha / 2.0 / rtt_scale;
                if self.qdelay < target_q * 0.25 {
                    // backoff_t *= max(0.25, scl_t); backoff_t *= max(0.25, ref_wnd_delay_scale)
                    b *= scl.max(0.25);
                    b *= self.ref_wnd_delay_scale.max(0.25);
                }
                // if (now - last_reaction_to_congestion_time > 100 * max(VIRTUAL_RTT, s_rtt))
                //   ref_wnd = min(ref_wnd, max_bytes_in_flight_prev)
                let long = self.cfg.virtual_rtt.max(s_rtt).saturating_mul(100);
                if self
                    .last_reaction
                    .is_none_or(|t| now.saturating_since(t) > long)
                    && self.max_bytes_in_flight_prev > 0
                {
                    self.ref_wnd = self.ref_wnd.min(self.max_bytes_in_flight_prev as f64);
                }
                // ref_wnd = (1.0 - backoff_t) * ref_wnd
                self.ref_wnd *= 1.0 - b;
                *backoff = b;
                self.stats.ce_backoffs += 1;
            }
            Some(CutKind::ClassicCe) => {
                // ref_wnd = ref_wnd * BETA_ECN
                self.ref_wnd *= self.cfg.beta_ecn;
                self.stats.classic_ce_backoffs += 1;
            }
            Some(CutKind::Delay { alpha_v, backoff }) => {
                // backoff_t = l4s_alpha_v_t / 2; backoff_t /= max(1.0, s_rtt/VIRTUAL_RTT)
                let b = *alpha_v / 2.0 / rtt_scale;
                self.ref_wnd *= 1.0 - b;
                *backoff = b;
                self.last_alpha_v = *alpha_v;
                self.stats.delay_backoffs += 1;
            }
        }
        // ref_wnd = max(MIN_REF_WND, ref_wnd)
        self.ref_wnd = self.ref_wnd.max(f64::from(self.cfg.min_ref_wnd));
        if let Some(kind) = kind {
            // last_reaction_to_congestion_time = now; the flags cover the
            // time since then.
            self.last_reaction = Some(now);
            self.loss_detected = false;
            self.data_units_marked = false;
            self.last_cut = Some(Cut {
                at: now,
                kind,
                before,
                after: self.ref_wnd,
            });
        }

        // ---- S2 §"Reference Window Increase" ----
        // post_congestion_scale_t = clamp((now - last_congestion_detected_time) /
        //   (POST_CONGESTION_DELAY_RTTS * max(VIRTUAL_RTT, s_rtt)), 0, 1)
        let post = match self.last_congestion_detected {
            None => 1.0,
            Some(t) => {
                let span = self.cfg.post_congestion_delay_rtts * vrtt_s.max(s_rtt_s);
                (now.saturating_since(t).as_secs_f64() / span).clamp(0.0, 1.0)
            }
        };
        // ref_wnd_scale_factor_t = 1.0 + (MUL_INCREASE_FACTOR * ref_wnd) / MSS
        let scale_factor = 1.0 + self.cfg.mul_increase_factor * self.ref_wnd / mss;
        // bytes_newly_acked_minus_ce_t = bytes_newly_acked - bytes_newly_acked_ce
        let acked = self
            .bytes_newly_acked
            .saturating_sub(self.bytes_newly_acked_ce) as f64;
        // increment_t = bytes_newly_acked_minus_ce_t * ref_wnd_ratio
        let mut inc = acked * ref_wnd_ratio;
        // "Reduce increment for small RTTs": increment_t *= min(1.0, s_rtt / VIRTUAL_RTT)
        inc *= (s_rtt_s / vrtt_s).min(1.0);
        // increment_t *= max(0.25, scl_t)
        inc *= scl.max(0.25);
        // increment_t *= max(0.1, ref_wnd_delay_scale)  (1.0 unless REDUCE_JITTER)
        inc *= self.ref_wnd_delay_scale.max(0.1);
        // if (tmp_t > 1.0) tmp_t = 1.0 + (tmp_t - 1.0) * post_congestion_scale_t * scl_t
        let mut mult = scale_factor;
        if mult > 1.0 {
            mult = 1.0 + (mult - 1.0) * post * scl;
        }
        inc *= mult;
        let prev = self.ref_wnd;
        // max_allowed_t = MSS + max(max_bytes_in_flight, max_bytes_in_flight_prev)
        //   * BYTES_IN_FLIGHT_HEAD_ROOM
        let max_allowed = mss
            + self.max_bytes_in_flight.max(self.max_bytes_in_flight_prev) as f64
                * self.cfg.bytes_in_flight_head_room;
        // if (ref_wnd_t <= max_allowed_t && target_bitrate < TARGET_BITRATE_MAX)
        if self.ref_wnd + inc <= max_allowed && self.target_bps < self.cfg.max_rate.as_bps() as f64
        {
            self.ref_wnd += inc;
        }
        if self.ref_wnd > prev {
            self.ref_wnd_i_update_allowed = true;
        }
        // "bytes_newly_acked and bytes_newly_acked_ce are reset to zero after
        // a ref_wnd update"
        self.bytes_newly_acked = 0;
        self.bytes_newly_acked_ce = 0;
    }
}

impl MediaCc for Scream {
    fn name(&self) -> &'static str {
        "scream"
    }

    fn on_sent(&mut self, _now: Time, seq: u64, size: u32) {
        // S2: bytes_in_flight counts every data unit sent after the acked edge.
        self.bytes_sent += u64::from(size);
        self.sent[(seq % SENT_RING as u64) as usize] = (seq, self.bytes_sent);
        self.bytes_in_flight = self.bytes_sent.saturating_sub(self.bytes_acked_edge);
        // max_bytes_in_flight: "maximum number of bytes in flight in the
        // current round trip".
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(self.bytes_in_flight);
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += u64::from(size);
    }

    fn on_feedback(&mut self, now: Time, fb: &Feedback<'_>) {
        if fb.packets.is_empty() {
            return;
        }
        self.stats.feedbacks += 1;
        // SC `incomingStandardizedFeedback`: maxBytesInFlight = max(bytesInFlight, ...)
        // before the report's acks are applied.
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(self.bytes_in_flight);

        let ce_capable = self.ce_capable();
        let mut newest: Option<(u64, Time, Time)> = None;
        for p in fb.packets {
            match p.arrival {
                Some(arrival) => {
                    self.stats.packets_acked += 1;
                    // data_units_delivered_this_rtt += data_units_acked
                    self.delivered_this_rtt += 1;
                    if p.ecn == Ecn::Ce {
                        self.stats.packets_ce += 1;
                        // data_units_marked_this_rtt += data_units_acked_ce
                        self.marked_this_rtt += 1;
                        if ce_capable {
                            self.bytes_newly_acked_ce += u64::from(p.size);
                            self.data_units_marked = true;
                        }
                    }
                    self.on_owd_sample(now, p.sent, arrival);
                    if newest.is_none_or(|(s, _, _)| p.seq > s) {
                        newest = Some((p.seq, p.sent, arrival));
                    }
                }
                None => {
                    self.stats.packets_lost += 1;
                    // SC `detectLoss`: a loss event only if `time -
                    // lastLossEventT > sRtt` (once per RTT).
                    let s_rtt = self.srtt();
                    if self
                        .last_loss_reaction
                        .is_none_or(|t| now.saturating_since(t) > s_rtt)
                    {
                        self.loss_detected = true;
                    }
                }
            }
        }

        // RTT sample from the newest received packet, minus the time it
        // waited at the receiver for this report.
        if let Some((_, sent, arrival)) = newest {
            let hold = fb.report_time.saturating_since(arrival);
            let sample = now.saturating_since(sent).saturating_sub(hold);
            let sample = sample.max(Dur::from_micros(1));
            match self.s_rtt {
                None => {
                    self.s_rtt = Some(sample);
                    // Size the first window for start_rate at this RTT
                    // (deviation: S2 starts at MIN_REF_WND).
                    let start = self.target_bps;
                    let w = start * sample.as_secs_f64() / 8.0 / self.rate_factor(1e12);
                    self.ref_wnd = w.max(f64::from(self.cfg.min_ref_wnd));
                }
                Some(s) => {
                    let s =
                        s.as_secs_f64() * (1.0 - S_RTT_GAIN) + sample.as_secs_f64() * S_RTT_GAIN;
                    self.s_rtt = Some(Dur::from_secs_f64(s));
                }
            }
        }

        self.advance_acked_edge(fb);

        // max_bytes_in_flight_prev: the previous round trip's maximum.
        if Self::elapsed(now, self.last_bif_roll, self.srtt()) {
            if self.last_bif_roll.is_some() {
                self.max_bytes_in_flight_prev = self.max_bytes_in_flight;
                self.max_bytes_in_flight = self.bytes_in_flight;
            }
            self.last_bif_roll = Some(now);
        }

        self.maybe_update_alpha(now);
        self.maybe_update_qdelay_avg(now);
        self.update_ref_wnd(now);
        self.update_target();
    }

    fn target_rate(&self) -> Rate {
        Rate::from_bps(self.target_bps.round() as u64)
    }

    fn pacing_rate(&self) -> Rate {
        Rate::from_bps(self.pacing_bps.round() as u64)
    }

    /// S2 §"Send Window Calculation": `send_wnd = ref_wnd * ref_wnd_overhead
    /// - bytes_in_flight`, i.e. `ref_wnd * ref_wnd_overhead` may be in flight.
    fn window(&self) -> u64 {
        let overhead = self.cfg.ref_wnd_overhead_min
            + (self.cfg.ref_wnd_overhead_max - self.cfg.ref_wnd_overhead_min)
                * self.ref_wnd_delay_scale;
        (self.ref_wnd * overhead).round() as u64
    }

    fn ecn(&self) -> Ecn {
        if self.cfg.l4s {
            Ecn::Ect1
        } else if self.cfg.classic_ecn {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }

    fn report(&self) -> Value {
        let s = &self.stats;
        json!({
            "cc": "scream",
            "l4s": self.cfg.l4s,
            "classic_ecn": self.cfg.classic_ecn,
            "packets_sent": s.packets_sent,
            "bytes_sent": s.bytes_sent,
            "feedbacks": s.feedbacks,
            "packets_acked": s.packets_acked,
            "packets_ce": s.packets_ce,
            "packets_lost": s.packets_lost,
            "ce_backoffs": s.ce_backoffs,
            "classic_ce_backoffs": s.classic_ce_backoffs,
            "loss_backoffs": s.loss_backoffs,
            "delay_backoffs": s.delay_backoffs,
            "alpha_updates": s.alpha_updates,
            "ref_wnd_bytes": self.ref_wnd,
            "ref_wnd_i_bytes": self.ref_wnd_i,
            "l4s_alpha": self.l4s_alpha,
            "last_virtual_alpha": self.last_alpha_v,
            "s_rtt_ms": self.s_rtt.map(|d| d.as_millis_f64()),
            "qdelay_avg_ms": self.qdelay_avg * 1e3,
            "target_bps": self.target_rate().as_bps(),
            "pacing_bps": self.pacing_rate().as_bps(),
            "window_bytes": self.window(),
            "bytes_in_flight": self.bytes_in_flight,
        })
    }

    fn sample(&mut self, _now: Time, out: &mut SampleSink<'_>) {
        out("scream_target_mbps", self.target_bps * 1e-6);
        out("scream_pacing_mbps", self.pacing_bps * 1e-6);
        out("scream_ref_wnd_kb", self.ref_wnd * 1e-3);
        out(
            "scream_bytes_in_flight_kb",
            self.bytes_in_flight as f64 * 1e-3,
        );
        out("scream_l4s_alpha", self.l4s_alpha);
        out("scream_qdelay_ms", self.qdelay * 1e3);
        out("scream_qdelay_avg_ms", self.qdelay_avg * 1e3);
        out("scream_srtt_ms", self.srtt().as_millis_f64());
    }
}
