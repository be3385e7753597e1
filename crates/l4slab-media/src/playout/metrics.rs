//! The RTP receiver's own figures from render times, beside the
//! [`crate::viewer::Viewer`]'s (latency, stalls, late frames): freezes
//! (WebRTC's rule) and the worst whole second's frame rate. Each keeps O(1)
//! state however long the run.

use std::collections::VecDeque;

use l4slab_core::Time;

use super::FreezeRule;

/// Freezes by libwebrtc `video/video_quality_observer2.cc`
/// (`OnRenderedFrame`, REFERENCES C6): the render interval, in integer ms,
/// is added to a moving average over the last `window` intervals first;
/// once `min_samples` intervals are in, the interval is a freeze if it is
/// `>= max(factor * avg, avg + min_increase)` with the average rounded
/// down, and the whole interval counts as frozen time.
#[derive(Debug)]
pub(crate) struct Freezes {
    rule: FreezeRule,
    /// The last render time, in whole ms (libwebrtc's clock resolution).
    last_ms: Option<u64>,
    intervals: VecDeque<u64>,
    sum: u64,
    pub(crate) freezes: u64,
    pub(crate) frozen_ms: u64,
}

impl Freezes {
    pub(crate) fn new(rule: FreezeRule) -> Self {
        assert!(
            rule.window > 0,
            "the freeze rule's window holds at least one interval"
        );
        Freezes {
            rule,
            last_ms: None,
            intervals: VecDeque::with_capacity(rule.window),
            sum: 0,
            freezes: 0,
            frozen_ms: 0,
        }
    }

    pub(crate) fn on_render(&mut self, at: Time) {
        let now_ms = at.as_nanos() / 1_000_000;
        let Some(last_ms) = self.last_ms.replace(now_ms) else {
            return;
        };
        let interval = now_ms - last_ms;
        // "render_interframe_delays_.AddSample(interframe_delay_ms)" -- first.
        if self.intervals.len() == self.rule.window {
            self.sum -= self.intervals.pop_front().expect("full window");
        }
        self.intervals.push_back(interval);
        self.sum += interval;
        // "if (render_interframe_delays_.Size() >= kMinFrameSamplesToDetectFreeze)"
        if self.intervals.len() >= self.rule.min_samples {
            // "GetAverageRoundedDown()"
            let avg = self.sum / self.intervals.len() as u64;
            let min_increase = self.rule.min_increase.as_nanos() / 1_000_000;
            // "interframe_delay_ms >= std::max(3 * avg, avg + kMinIncreaseForFreezeMs)"
            if interval >= (self.rule.factor * avg).max(avg + min_increase) {
                self.freezes += 1;
                self.frozen_ms += interval;
            }
        }
    }
}

/// The fewest frames rendered in any whole 1-s bin `[start + i s,
/// start + (i+1) s)`: a running minimum over closed bins, so no per-second
/// history is kept.
#[derive(Debug, Default)]
pub(crate) struct WorstSecond {
    bin: u64,
    count: u64,
    /// Minimum over the bins before `bin`.
    closed_min: Option<u64>,
}

const SECOND_NS: u64 = 1_000_000_000;

impl WorstSecond {
    pub(crate) fn on_render(&mut self, start: Time, at: Time) {
        let bin = at.saturating_since(start).as_nanos() / SECOND_NS;
        if bin > self.bin {
            // Bins strictly between the current one and `bin` saw nothing.
            let closed = if bin > self.bin + 1 { 0 } else { self.count };
            self.closed_min = Some(self.closed_min.map_or(closed, |m| m.min(closed)));
            self.bin = bin;
            self.count = 0;
        }
        self.count += 1;
    }

    /// Frames in the worst whole second up to `end`; `None` if the run is
    /// shorter than one second. Assumes no render after `end`.
    pub(crate) fn until(&self, start: Time, end: Time) -> Option<u64> {
        let whole = end.saturating_since(start).as_nanos() / SECOND_NS;
        if whole == 0 {
            return None;
        }
        let mut worst = self.closed_min.unwrap_or(u64::MAX);
        if self.bin < whole {
            worst = worst.min(self.count);
            if self.bin + 1 < whole {
                worst = 0;
            }
        }
        Some(worst)
    }
}
