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
//! **Files.** This file: [`Scream`], its state and the [`MediaCc`] calls
//! (per report: loss and CE counts, RTT, then the steps below in order).
//! `config.rs`: the constants and [`ScreamConfig`]. `flight.rs`: the
//! bytes-in-flight edge. `delay.rs`: base delay, queue delay, jitter scale.
//! `window.rs`: `l4s_alpha` and the `ref_wnd` reduction and increase.
//! `rate.rs`: target bitrate and pacing. `report.rs`: accessors, counters,
//! `summary.json` and the series.
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

mod config;
mod delay;
mod flight;
mod rate;
mod report;
mod window;

use serde_json::Value;

use l4slab_core::{Dur, Ecn, Rate, Time};

use crate::{Feedback, MediaCc, SampleSink};

use delay::BaseDelay;

pub use config::{
    ScreamConfig, BASE_DELAY_INTERVAL, BASE_DELAY_SLOTS, L4S_ALPHA_INTERVAL, L4S_AVG_G_DOWN,
    L4S_AVG_G_UP, PACKET_OVERHEAD, QDELAY_AVG_G, QDELAY_DEV_AVG_G, QDELAY_DEV_THRESHOLD,
    QDELAY_MIN_MAX_AVG_G, SENT_RING, S_RTT_GAIN, S_RTT_INIT, TARGET_RATE_DIVISOR,
};
pub use report::ScreamStats;
pub use window::{Cut, CutKind};

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
        cfg.assert_valid();
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
        self.report_value()
    }

    fn sample(&mut self, _now: Time, out: &mut SampleSink<'_>) {
        self.sample_series(out);
    }
}
