//! Frames carried over a byte stream, seen from both ends.
//!
//! A frame-based app (screen sharing, cloud gaming, a video call) captures a
//! frame, writes it to its socket — possibly over several writes, as the send
//! buffer takes it — and the receiver displays it once its last byte has been
//! delivered in order. A [`FrameStream`] is one direction of that: it keeps
//! each frame's end offset in the stream and its capture time, so the
//! receiving side can tell which frames completed and how long each took
//! (capture → display), without frame headers in the simulated bytes.
//!
//! What the receiver sees of the displayed frames — latency, stalls (a gap
//! between displays longer than `stall_threshold`, counted whole) and, with
//! a `late_threshold` ([`FrameStream::with_late_threshold`]), late frames —
//! is [`l4slab_media::viewer::Viewer`]'s rule, the one the RTP playout
//! buffer reports by too.

use std::collections::VecDeque;

use serde_json::{json, Value};

use l4slab_core::{Dur, Time};
use l4slab_media::viewer::Viewer;
use l4slab_tcp::AppIo;

#[derive(Clone, Copy, Debug)]
struct InFlight {
    captured: Time,
    /// Stream offset just past the frame's last byte.
    end: u64,
}

/// One direction of frames over a stream (see the module documentation).
#[derive(Debug)]
pub struct FrameStream {
    /// The receiving side's displays.
    viewer: Viewer,
    /// Stream offset past the last frame captured.
    queued: u64,
    /// Bytes the socket accepted.
    accepted: u64,
    /// Bytes delivered in order at the receiver.
    delivered: u64,
    in_flight: VecDeque<InFlight>,
    captured: u64,
    captured_bytes: u64,
    skipped: u64,
    /// Bytes captured since the last [`Self::take_interval`].
    int_captured_bytes: u64,
}

impl FrameStream {
    pub fn new(stall_threshold: Dur) -> Self {
        FrameStream {
            viewer: Viewer::new(stall_threshold),
            queued: 0,
            accepted: 0,
            delivered: 0,
            in_flight: VecDeque::new(),
            captured: 0,
            captured_bytes: 0,
            skipped: 0,
            int_captured_bytes: 0,
        }
    }

    /// Also count frames whose capture → display latency exceeds `d`.
    pub fn with_late_threshold(mut self, d: Dur) -> Self {
        self.viewer = self.viewer.with_late_threshold(d);
        self
    }

    /// The receiver starts expecting frames (the connection is up) at `now`
    /// (first call wins).
    pub fn start(&mut self, now: Time) {
        self.viewer.start(now);
    }

    /// Capture a frame of `size` bytes at `now`; write it with [`Self::write`].
    pub fn capture(&mut self, now: Time, size: u64) {
        assert!(size > 0, "a frame has at least one byte");
        self.queued += size;
        self.in_flight.push_back(InFlight {
            captured: now,
            end: self.queued,
        });
        self.captured += 1;
        self.captured_bytes += size;
        self.int_captured_bytes += size;
    }

    /// A frame the sender chose not to capture (e.g. its socket was backed up).
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Captured bytes the socket has not accepted yet.
    pub fn unwritten(&self) -> u64 {
        self.queued - self.accepted
    }

    /// Write what the socket takes; true when every captured byte is in.
    pub fn write(&mut self, io: &mut dyn AppIo) -> bool {
        while self.unwritten() > 0 {
            let n = io.write(self.unwritten());
            if n == 0 {
                break;
            }
            self.accepted += n;
        }
        self.unwritten() == 0
    }

    /// `bytes` more arrived in order at the receiver; displays every frame
    /// that is now complete. Returns how many were.
    pub fn on_delivered(&mut self, now: Time, bytes: u64) -> u64 {
        self.delivered += bytes;
        assert!(
            self.delivered <= self.accepted,
            "delivered {} B of a stream whose sender wrote {} B",
            self.delivered,
            self.accepted
        );
        let mut n = 0;
        while let Some(f) = self.in_flight.front().copied() {
            if f.end > self.delivered {
                break;
            }
            self.in_flight.pop_front();
            self.viewer.on_display(now, f.captured);
            n += 1;
        }
        n
    }

    pub fn displayed(&self) -> u64 {
        self.viewer.displayed()
    }

    pub fn captured(&self) -> u64 {
        self.captured
    }

    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Frames displayed later than the late threshold.
    pub fn late(&self) -> u64 {
        self.viewer.late()
    }

    /// Frames displayed and bytes captured since the last call.
    pub fn take_interval(&mut self) -> (u64, u64) {
        let bytes = core::mem::take(&mut self.int_captured_bytes);
        (self.viewer.take_displayed(), bytes)
    }

    /// Mean frame latency over the interval since the last call, in ms.
    pub fn take_latency_interval(&mut self) -> Option<f64> {
        self.viewer.take_latency_ms()
    }

    /// Metrics for `summary.json`: the sender's and the [`Viewer`]'s.
    pub fn report(&self, end: Time) -> Value {
        let mut r = json!({
            "frames_captured": self.captured,
            "frames_skipped": self.skipped,
            "frames_in_flight_at_end": self.in_flight.len(),
            "bitrate_bps": self.viewer.per_s(end, self.captured_bytes as f64 * 8.0).round(),
        });
        self.viewer.report_into(end, &mut r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sock {
        room: u64,
        took: u64,
    }
    impl AppIo for Sock {
        fn write(&mut self, bytes: u64) -> u64 {
            let n = bytes.min(self.room);
            self.room -= n;
            self.took += n;
            n
        }
        fn wake_at(&mut self, _at: Time) {}
        fn finish(&mut self) {}
    }

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    #[test]
    fn frames_complete_at_their_last_byte_with_capture_to_display_latency() {
        let mut s = FrameStream::new(Dur::from_millis(200));
        s.start(ms(0));
        let mut sock = Sock {
            room: 1500,
            took: 0,
        };
        s.capture(ms(0), 1000);
        s.capture(ms(10), 1000);
        assert!(!s.write(&mut sock), "only 1500 of 2000 B fit");
        assert_eq!((sock.took, s.unwritten()), (1500, 500));
        assert_eq!(s.on_delivered(ms(30), 999), 0);
        assert_eq!(s.on_delivered(ms(31), 1), 1, "frame 1 ends at byte 1000");
        sock.room = 10_000;
        assert!(s.write(&mut sock));
        assert_eq!(s.on_delivered(ms(60), 1000), 1);
        let r = s.report(ms(100));
        assert_eq!(r["frames_displayed"], 2);
        // Latencies 31 ms and 50 ms.
        assert_eq!(r["frame_latency_ms"]["min"], 31.0);
        assert_eq!(r["frame_latency_ms"]["max"], 50.0);
        assert_eq!(r["stalls"], 0);
    }

    #[test]
    fn gaps_over_the_threshold_are_stalls_including_the_start_and_the_tail() {
        let mut s = FrameStream::new(Dur::from_millis(200));
        let mut sock = Sock {
            room: u64::MAX,
            took: 0,
        };
        s.start(ms(0));
        for (t, shown) in [(0, 100), (100, 150), (200, 600)] {
            s.capture(ms(t), 100);
            s.write(&mut sock);
            s.on_delivered(ms(shown), 100);
        }
        // Gaps: 100 (start→first), 50, 450 (stall); tail 600→1000 = 400 (stall).
        let r = s.report(ms(1000));
        assert_eq!(r["stalls"], 2);
        assert_eq!(r["stall_time_s"], 0.85);
        assert_eq!(r["stall_pct"], 85.0);
        assert_eq!(r["frame_rate_fps"], 3.0);
    }

    #[test]
    fn frames_later_than_the_late_threshold_are_late() {
        let mut s =
            FrameStream::new(Dur::from_millis(200)).with_late_threshold(Dur::from_millis(50));
        let mut sock = Sock {
            room: u64::MAX,
            took: 0,
        };
        s.start(ms(0));
        // Latencies 50 ms (on time: not more than the threshold), 51 ms (late), 10 ms.
        for (t, shown) in [(0, 50), (20, 71), (40, 50)] {
            s.capture(ms(t), 100);
            s.write(&mut sock);
            s.on_delivered(ms(shown), 100);
        }
        s.skip();
        let r = s.report(ms(100));
        assert_eq!(s.late(), 1);
        assert_eq!(r["frames_late"], 1);
        assert_eq!(r["late_threshold_ms"], 50.0);
        assert_eq!(r["frames_skipped"], 1);
        // Without a threshold the keys are absent (screen_share's report is unchanged).
        let plain = FrameStream::new(Dur::from_millis(200)).report(ms(100));
        assert!(plain.get("frames_late").is_none());
    }

    #[test]
    #[should_panic(expected = "delivered")]
    fn delivering_more_than_was_written_is_a_bug() {
        let mut s = FrameStream::new(Dur::from_millis(200));
        s.capture(ms(0), 10);
        s.on_delivered(ms(1), 11);
    }
}
