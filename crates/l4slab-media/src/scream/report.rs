//! What a [`Scream`] shows of itself: read-only accessors, the counters
//! and final state for `summary.json`, and the sampled series.

use serde_json::{json, Value};

use l4slab_core::Dur;

use crate::{MediaCc, SampleSink};

use super::{Cut, Scream, ScreamConfig};

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

impl Scream {
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

    /// [`MediaCc::report`]: counters and final state for `summary.json`.
    pub(super) fn report_value(&self) -> Value {
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

    /// [`MediaCc::sample`]: the values for the interval just ended.
    pub(super) fn sample_series(&self, out: &mut SampleSink<'_>) {
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
