//! What the buffer reports: counters, per-interval values for the series
//! and the metrics for `summary.json`.

use serde_json::{json, Value};

use l4slab_core::stats::round6;
use l4slab_core::{Dur, Time};

use super::{FrameDrop, Playout};

impl FrameDrop {
    const ALL: [FrameDrop; 3] = [
        FrameDrop::Incomplete,
        FrameDrop::Undecodable,
        FrameDrop::Overflow,
    ];

    fn key(self) -> &'static str {
        match self {
            FrameDrop::Incomplete => "frames_dropped_incomplete",
            FrameDrop::Undecodable => "frames_dropped_undecodable",
            FrameDrop::Overflow => "frames_dropped_overflow",
        }
    }
}

/// One sampling interval's worth of playout, from [`Playout::take_interval`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlayoutInterval {
    pub frames_displayed: u64,
    pub frames_dropped: u64,
    /// Mean render − capture of the frames rendered, in ms.
    pub latency_mean_ms: Option<f64>,
    /// Payload bytes of distinct packets received.
    pub received_bytes: u64,
    pub nacks: u64,
    pub keyframe_requests: u64,
    /// Sequence numbers whose frame was decided (rendered or dropped) in
    /// the interval, and how many of those packets had arrived by then.
    pub packets_settled: u64,
    pub packets_in_time: u64,
}

impl PlayoutInterval {
    /// The fraction of the interval's settled packets that missed their
    /// frame's decision (lost, or later than the playout deadline).
    pub fn missed_fraction(&self) -> Option<f64> {
        (self.packets_settled > 0).then(|| {
            self.packets_settled.saturating_sub(self.packets_in_time) as f64
                / self.packets_settled as f64
        })
    }
}

/// Series names for [`Playout::sample`] (one set per stream direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayoutSeries {
    /// Frames rendered per second.
    pub frame_rate: &'static str,
    /// Mean frame latency (ms), only for intervals with a render.
    pub latency: &'static str,
    /// Frames dropped per second.
    pub drop_rate: &'static str,
    /// Received payload bits per second.
    pub bitrate: &'static str,
    /// NACKs per second.
    pub nack_rate: &'static str,
    /// Keyframe requests per second.
    pub keyframe_request_rate: &'static str,
}

impl PlayoutSeries {
    pub const DEFAULT: PlayoutSeries = PlayoutSeries {
        frame_rate: "frame_rate_fps",
        latency: "frame_latency_ms",
        drop_rate: "frame_drop_rate_fps",
        bitrate: "received_bitrate_bps",
        nack_rate: "nack_rate_per_s",
        keyframe_request_rate: "keyframe_request_rate_per_s",
    };
}

impl Playout {
    pub fn displayed(&self) -> u64 {
        self.viewer.displayed()
    }

    /// Frames never rendered, for any reason.
    pub fn dropped(&self) -> u64 {
        self.dropped.iter().sum()
    }

    pub fn dropped_for(&self, why: FrameDrop) -> u64 {
        self.dropped[why as usize]
    }

    /// What happened since the last call.
    pub fn take_interval(&mut self) -> PlayoutInterval {
        let r = PlayoutInterval {
            frames_displayed: self.viewer.take_displayed(),
            frames_dropped: self.int_dropped,
            latency_mean_ms: self.viewer.take_latency_ms(),
            received_bytes: self.int_bytes,
            nacks: self.missing.nacks_sent - self.int_nacks_base,
            keyframe_requests: self.int_keyframe_requests,
            packets_settled: self.int_decided,
            packets_in_time: self.int_in_time,
        };
        self.int_decided = 0;
        self.int_in_time = 0;
        self.int_dropped = 0;
        self.int_bytes = 0;
        self.int_nacks_base = self.missing.nacks_sent;
        self.int_keyframe_requests = 0;
        r
    }

    /// Values for the `interval` just ended, as rates per second (latency
    /// in ms, only when a frame rendered), under `names`.
    pub fn sample(
        &mut self,
        interval: Dur,
        names: &PlayoutSeries,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        let i = self.take_interval();
        let secs = interval.as_secs_f64();
        if secs <= 0.0 {
            return;
        }
        out(names.frame_rate, i.frames_displayed as f64 / secs);
        out(names.drop_rate, i.frames_dropped as f64 / secs);
        if let Some(ms) = i.latency_mean_ms {
            out(names.latency, ms);
        }
        out(names.bitrate, i.received_bytes as f64 * 8.0 / secs);
        out(names.nack_rate, i.nacks as f64 / secs);
        out(
            names.keyframe_request_rate,
            i.keyframe_requests as f64 / secs,
        );
    }

    /// Metrics for `summary.json`: the [`crate::viewer::Viewer`]'s keys,
    /// as `FrameStream` reports them (`frames_displayed`, `frame_rate_fps`,
    /// `frame_latency_ms`, `stalls`, ..., with a late threshold
    /// `frames_late`, ...), plus the RTP receiver's own. The sender-side
    /// keys (`frames_captured`, `frames_skipped`, `bitrate_bps`) are the
    /// sender's to add.
    pub fn report(&self, end: Time) -> Value {
        let worst = self.viewer.started().and_then(|s| self.worst.until(s, end));
        let mut r = json!({
            "frames_expected": self.next_frame + self.frames.len() as u64,
            "frames_received": self.frames_received,
            "frames_dropped": self.dropped(),
            "frames_buffered_at_end": self.frames.len(),
            "worst_second_fps": worst,
            "freezes": self.freezes.freezes,
            "freeze_time_s": round6(self.freezes.frozen_ms as f64 / 1e3),
            "chain_breaks": self.chain_breaks,
            "packets_received": self.packets_received,
            "packets_duplicate": self.packets_duplicate,
            "packets_retransmitted": self.packets_retransmitted,
            "packets_late": self.packets_late,
            "packets_unrepaired": self.missing.given_up,
            "received_bitrate_bps": self.viewer.per_s(end, self.received_bytes as f64 * 8.0).round(),
            "nacks_sent": self.missing.nacks_sent,
            "nack_list_overflows": self.missing.overflows,
            "keyframe_requests": self.keyframe_requests,
            "playout_delay_ms": round6(self.extra_delay().as_millis_f64()),
        });
        if let Some(d) = self.cfg.deadline {
            // Only with a deadline (the keys of runs without one unchanged).
            let missed = self.packets_decided.saturating_sub(self.packets_in_time);
            r["playout_deadline_ms"] = round6(d.as_millis_f64()).into();
            r["frames_given_up_late"] = self.late_drops.into();
            r["packets_missed_playout"] = missed.into();
            r["playout_loss_pct"] = if self.packets_decided > 0 {
                round6(100.0 * missed as f64 / self.packets_decided as f64)
            } else {
                0.0
            }
            .into();
        }
        self.viewer.report_into(end, &mut r);
        for why in FrameDrop::ALL {
            r[why.key()] = self.dropped[why as usize].into();
        }
        r
    }
}
