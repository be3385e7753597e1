//! What the viewer of a frame stream sees, measured from display times:
//! frames shown, capture → display latency, late frames and stalls. One
//! rule for every frame-based app: `l4slab-app`'s `FrameStream` (frames
//! over a byte stream) and the RTP [`crate::playout::Playout`] buffer both
//! keep a [`Viewer`] and report its keys.
//!
//! * **Stall** (the usual video-freeze definition, e.g. WebRTC's
//!   `freezeCount`/`totalFreezesDuration`, which use an inter-frame gap
//!   threshold): a gap between two displayed frames — or between the start
//!   and the first frame, or the last frame and the end — longer than
//!   `stall_threshold` is a stall, and the whole gap counts as stalled time.
//! * **Late**: with a `late_threshold`, a frame displayed more than that
//!   after its capture is late.
//! * **Per second**: rates in the report are over the active time, from the
//!   start to the end of the run (0 when there is none).
//!
//! O(1) state however long the run: counters and a latency histogram.

use serde_json::Value;

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Time};

/// Wrapper so `Debug` does not dump histogram buckets.
/// Frames as the receiving side displays them (see the module documentation).
#[derive(Debug)]
pub struct Viewer {
    stall_threshold: Dur,
    late_threshold: Option<Dur>,
    /// When the receiver starts expecting frames.
    started: Option<Time>,
    last_display: Option<Time>,
    stalls: u64,
    stalled: Dur,
    latency: DurStats,
    displayed: u64,
    late: u64,
    /// Frames displayed since the last [`Viewer::take_displayed`].
    int_displayed: u64,
}

impl Viewer {
    pub fn new(stall_threshold: Dur) -> Self {
        Viewer {
            stall_threshold,
            late_threshold: None,
            started: None,
            last_display: None,
            stalls: 0,
            stalled: Dur::ZERO,
            // Frame latency in µs up to 1000 s.
            latency: DurStats::new(1_000, 1_000_000_000),
            displayed: 0,
            late: 0,
            int_displayed: 0,
        }
    }

    /// Also count frames whose capture → display latency exceeds `d`.
    pub fn with_late_threshold(mut self, d: Dur) -> Self {
        self.late_threshold = Some(d);
        self
    }

    /// The receiver starts expecting frames at `now` (first call wins).
    pub fn start(&mut self, now: Time) {
        self.started.get_or_insert(now);
    }

    pub fn started(&self) -> Option<Time> {
        self.started
    }

    /// A frame captured at `captured` is displayed at `now`. Its gap runs
    /// from the previous display, else from the start (else, if the viewer
    /// never started, from its capture).
    pub fn on_display(&mut self, now: Time, captured: Time) {
        let latency = now.saturating_since(captured);
        self.latency.record(latency);
        if self.late_threshold.is_some_and(|t| latency > t) {
            self.late += 1;
        }
        let since = self.last_display.or(self.started).unwrap_or(captured);
        let gap = now.saturating_since(since);
        if gap > self.stall_threshold {
            self.stalls += 1;
            self.stalled += gap;
        }
        self.last_display = Some(now);
        self.displayed += 1;
        self.int_displayed += 1;
    }

    pub fn displayed(&self) -> u64 {
        self.displayed
    }

    /// Frames displayed later than the late threshold.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Frames displayed since the last call.
    pub fn take_displayed(&mut self) -> u64 {
        core::mem::take(&mut self.int_displayed)
    }

    /// Mean latency in ms of the frames displayed since the last call
    /// (`None` when none was).
    pub fn take_latency_ms(&mut self) -> Option<f64> {
        self.latency.take_interval().map(|(mean, _)| mean)
    }

    /// Stalls and stalled time up to `end`, counting a trailing gap; none
    /// before the start.
    pub fn stalls_until(&self, end: Time) -> (u64, Dur) {
        let Some(start) = self.started else {
            return (0, Dur::ZERO);
        };
        let tail = end.saturating_since(self.last_display.unwrap_or(start));
        if tail > self.stall_threshold {
            (self.stalls + 1, self.stalled + tail)
        } else {
            (self.stalls, self.stalled)
        }
    }

    /// Seconds from the start to `end` (0 if not started).
    fn active_secs(&self, end: Time) -> f64 {
        self.started
            .map_or(Dur::ZERO, |s| end.saturating_since(s))
            .as_secs_f64()
    }

    /// `x` per second of the active time up to `end`, to 6 decimals (0 when
    /// there is none).
    pub fn per_s(&self, end: Time, x: f64) -> f64 {
        let active = self.active_secs(end);
        if active > 0.0 {
            round6(x / active)
        } else {
            0.0
        }
    }

    /// Adds the viewer's keys for `summary.json` to the object `r`:
    /// `frames_displayed`, `frame_rate_fps`, `frame_latency_ms`, `stalls`,
    /// `stall_time_s`, `stall_pct`, `stall_threshold_ms`, and with a late
    /// threshold `frames_late`, `late_pct`, `late_threshold_ms`.
    pub fn report_into(&self, end: Time, r: &mut Value) {
        let (stalls, stalled) = self.stalls_until(end);
        let active = self.active_secs(end);
        r["frames_displayed"] = self.displayed.into();
        r["frame_rate_fps"] = self.per_s(end, self.displayed as f64).into();
        r["frame_latency_ms"] = self.latency.summary_ms();
        r["stalls"] = stalls.into();
        r["stall_time_s"] = round6(stalled.as_secs_f64()).into();
        r["stall_pct"] = if active > 0.0 {
            round6(100.0 * stalled.as_secs_f64() / active)
        } else {
            0.0
        }
        .into();
        r["stall_threshold_ms"] = round6(self.stall_threshold.as_millis_f64()).into();
        if let Some(t) = self.late_threshold {
            r["frames_late"] = self.late.into();
            r["late_pct"] = if self.displayed > 0 {
                round6(100.0 * self.late as f64 / self.displayed as f64)
            } else {
                0.0
            }
            .into();
            r["late_threshold_ms"] = round6(t.as_millis_f64()).into();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    fn report(v: &Viewer, end: Time) -> Value {
        let mut r = json!({});
        v.report_into(end, &mut r);
        r
    }

    #[test]
    fn gaps_over_the_threshold_are_stalls_including_the_start_and_the_tail() {
        let mut v = Viewer::new(Dur::from_millis(200));
        v.start(ms(0));
        for (captured, shown) in [(0, 100), (100, 150), (200, 600)] {
            v.on_display(ms(shown), ms(captured));
        }
        // Gaps: 100 (start→first), 50, 450 (stall); tail 600→1000 = 400 (stall).
        assert_eq!(v.stalls_until(ms(1000)), (2, Dur::from_millis(850)));
        // A tail of exactly the threshold is not a stall.
        assert_eq!(v.stalls_until(ms(800)), (1, Dur::from_millis(450)));
        let r = report(&v, ms(1000));
        assert_eq!(r["stalls"], 2);
        assert_eq!(r["stall_time_s"], 0.85);
        assert_eq!(r["stall_pct"], 85.0);
        assert_eq!(r["stall_threshold_ms"], 200.0);
        assert_eq!(r["frame_rate_fps"], 3.0);
        assert_eq!(r["frames_displayed"], 3);
    }

    #[test]
    fn nothing_displayed_is_one_stall_from_the_start_and_before_it_none() {
        let mut v = Viewer::new(Dur::from_millis(200));
        assert_eq!(v.stalls_until(ms(1000)), (0, Dur::ZERO));
        assert_eq!(report(&v, ms(1000))["frame_rate_fps"], 0.0);
        v.start(ms(500));
        v.start(ms(600)); // the first call wins
        assert_eq!(v.stalls_until(ms(1000)), (1, Dur::from_millis(500)));
        assert_eq!(report(&v, ms(1000))["stall_pct"], 100.0);
    }

    #[test]
    fn without_a_start_the_first_gap_runs_from_the_capture() {
        let mut v = Viewer::new(Dur::from_millis(200));
        v.on_display(ms(300), ms(0));
        v.on_display(ms(350), ms(340));
        v.start(ms(0));
        // 300 ms from capture to the first display; 650 ms of tail.
        assert_eq!(v.stalls_until(ms(1000)), (2, Dur::from_millis(950)));
    }

    #[test]
    fn frames_later_than_the_late_threshold_are_late() {
        let mut v = Viewer::new(Dur::from_millis(200)).with_late_threshold(Dur::from_millis(50));
        v.start(ms(0));
        // Latencies 50 ms (on time: not more than the threshold), 51 ms (late), 10 ms.
        for (captured, shown) in [(0, 50), (20, 71), (40, 50)] {
            v.on_display(ms(shown), ms(captured));
        }
        assert_eq!(v.late(), 1);
        let r = report(&v, ms(100));
        assert_eq!(r["frames_late"], 1);
        assert_eq!(r["late_pct"], 33.333333);
        assert_eq!(r["late_threshold_ms"], 50.0);
        assert_eq!(r["frame_latency_ms"]["max"], 51.0);
        // Without a threshold the keys are absent.
        let plain = report(&Viewer::new(Dur::from_millis(200)), ms(100));
        assert!(plain.get("frames_late").is_none());
    }

    #[test]
    fn intervals_count_frames_and_their_mean_latency_since_the_last_call() {
        let mut v = Viewer::new(Dur::from_millis(200));
        v.start(ms(0));
        v.on_display(ms(30), ms(0));
        v.on_display(ms(50), ms(40));
        assert_eq!((v.take_displayed(), v.take_latency_ms()), (2, Some(20.0)));
        assert_eq!((v.take_displayed(), v.take_latency_ms()), (0, None));
        assert_eq!(v.displayed(), 2);
        assert_eq!(v.per_s(ms(2000), 5.0), 2.5);
    }
}
