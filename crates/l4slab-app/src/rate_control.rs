//! Encoder rate adaptation for a frame sender over a congestion-controlled
//! connection (shared by `cloud_gaming` and `video_call`).
//!
//! Model: an AIMD on the encoder's target bitrate, driven by what a sender
//! can read from its own socket — the send backlog (`SIOCOUTQNSD`, the
//! unsent bytes of `TCP_INFO`'s socket) and the smoothed RTT (`tcpi_rtt`).
//! The shape and constants are those of Google Congestion Control's rate
//! controller (draft-ietf-rmcat-gcc-02 §5.5; WebRTC `AimdRateControl`):
//! multiplicative increase of at most 8 % per second while the path keeps
//! up, multiplicative decrease by β = 0.85 on over-use, no further change
//! for one RTT after a decrease. The over-use signal is the one a TCP-based
//! streamer has (Cheshire, "Reducing network delay", WWDC 2015 — write a
//! frame only when the socket has next to nothing unsent; the same test
//! game-streaming senders over TCP make before encoding a frame): at a frame
//! tick, more than one frame's worth of bytes still unsent means the
//! connection delivers less than the encoder produces.
//!
//! At every frame tick ([`RateControl::on_frame`]):
//!
//! * **over-use** — unsent bytes (in the socket plus any the app still holds)
//!   exceed one frame at the current target: the frame is *skipped* (not
//!   captured: encoding it would only queue it behind the backlog), and, at
//!   most once per smoothed RTT, `target ← max(min, β · target)`. One cut per
//!   RTT because a cut shows in the backlog only after the data ahead of it
//!   drains (as TCP reduces its window once per RTT, RFC 5681 §3.2).
//! * **normal** — the frame is captured at `target / fps` bytes, then
//!   `target ← min(max, target · (1 + increase)^(1/fps))`: 8 %/s by default.
//!
//! Deviations from GCC: no delay-gradient over-use detector and no loss
//! controller (the transport retransmits; loss shows as backlog); the
//! decrease is relative to the current target, not to a measured receive
//! rate — TCP's delivery-rate samples are app-limited while the encoder
//! keeps up, and during TCP slow start they are far below the path's
//! capacity, so anchoring a cut to them would collapse the target at every
//! connection start. No additive-increase phase near a remembered capacity,
//! no probing. Frames have a constant size (no I-frames, no encoder
//! overshoot).
//!
//! [`AdaptiveFrames`] is one direction of such a stream: the frame clock,
//! the controller and the [`FrameStream`] bookkeeping, as both apps use it.

use serde_json::{json, Value};

use l4slab_core::stats::round6;
use l4slab_core::{Dur, Rate, Time};
use l4slab_tcp::{AppIo, SocketInfo};

use crate::frames::FrameStream;
use crate::SampleSink;

/// Rate adaptation parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateControlConfig {
    /// Target bitrate when the stream starts.
    pub start: Rate,
    /// Floor of the target.
    pub min: Rate,
    /// Ceiling of the target (the encoder's best quality).
    pub max: Rate,
    /// Multiplicative decrease factor on over-use (GCC β = 0.85).
    pub decrease: f64,
    /// Multiplicative increase per second while the socket keeps up (GCC: 8 %/s).
    pub increase_per_s: f64,
}

impl RateControlConfig {
    /// GCC's β and increase with the given bitrates.
    pub fn gcc(start: Rate, min: Rate, max: Rate) -> Self {
        RateControlConfig {
            start,
            min,
            max,
            decrease: 0.85,
            increase_per_s: 0.08,
        }
    }
}

/// What to do at a frame tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Capture (encode) a frame of this many bytes.
    Capture { bytes: u64 },
    /// The socket is backed up: do not capture this frame.
    Skip,
}

/// The controller of one sending direction (see the module documentation).
#[derive(Debug)]
pub struct RateControl {
    cfg: RateControlConfig,
    fps: u32,
    target: Rate,
    /// Growth factor per captured frame: `(1 + increase_per_s)^(1/fps)`.
    step_up: f64,
    /// No change before this (one RTT after a decrease).
    hold_until: Option<Time>,
    decreases: u64,
    // Time-weighted statistics of the target.
    first: Option<Time>,
    last_change: Time,
    bit_seconds: f64,
    lowest: Rate,
    highest: Rate,
}

impl RateControl {
    pub fn new(cfg: RateControlConfig, fps: u32) -> Self {
        assert!(fps > 0, "fps must be positive");
        assert!(
            cfg.min.as_bps() > 0 && cfg.min <= cfg.start && cfg.start <= cfg.max,
            "need 0 < min <= start <= max: {cfg:?}"
        );
        assert!(
            cfg.decrease > 0.0 && cfg.decrease < 1.0 && cfg.increase_per_s >= 0.0,
            "{cfg:?}"
        );
        RateControl {
            cfg,
            fps,
            target: cfg.start,
            // libm for a platform-independent result (DESIGN.md §4).
            step_up: libm::pow(1.0 + cfg.increase_per_s, 1.0 / f64::from(fps)),
            hold_until: None,
            decreases: 0,
            first: None,
            last_change: Time::ZERO,
            bit_seconds: 0.0,
            lowest: cfg.start,
            highest: cfg.start,
        }
    }

    /// The encoder's current target bitrate.
    pub fn target(&self) -> Rate {
        self.target
    }

    pub fn fps(&self) -> u32 {
        self.fps
    }

    /// Time between frames.
    pub fn frame_interval(&self) -> Dur {
        Dur::from_nanos(1_000_000_000 / u64::from(self.fps))
    }

    /// Bytes of one frame at the current target (at least one).
    pub fn frame_bytes(&self) -> u64 {
        (self.target.as_bps() / (8 * u64::from(self.fps))).max(1)
    }

    /// How many times the target was cut.
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    /// A frame is due at `now`: decide from the socket's state (`info`) and
    /// the bytes of earlier frames the app still holds (`held`), and adapt.
    pub fn on_frame(&mut self, now: Time, info: &SocketInfo, held: u64) -> Decision {
        if self.first.is_none() {
            self.first = Some(now);
            self.last_change = now;
        }
        let may_change = self.hold_until.is_none_or(|t| now >= t);
        let frame = self.frame_bytes();
        if info.unsent_bytes + held > frame {
            // Over-use: the previous frames have not left the host.
            if may_change {
                let cut = self.target.scale(self.cfg.decrease).max(self.cfg.min);
                self.set_target(now, cut);
                self.decreases += 1;
                // GCC: no change for one RTT after a decrease.
                let rtt = info.srtt.unwrap_or(Dur::ZERO).max(self.frame_interval());
                self.hold_until = Some(now + rtt);
            }
            return Decision::Skip;
        }
        if may_change {
            let up = self.target.scale(self.step_up).min(self.cfg.max);
            self.set_target(now, up);
        }
        Decision::Capture { bytes: frame }
    }

    fn set_target(&mut self, now: Time, r: Rate) {
        self.bit_seconds +=
            self.target.as_bps() as f64 * now.saturating_since(self.last_change).as_secs_f64();
        self.last_change = now;
        self.target = r;
        self.lowest = self.lowest.min(r);
        self.highest = self.highest.max(r);
    }

    /// The target's statistics up to `end`, for `summary.json`.
    pub fn report(&self, end: Time) -> Value {
        let mean = self.first.map(|first| {
            let total = end.saturating_since(first).as_secs_f64();
            let tail =
                self.target.as_bps() as f64 * end.saturating_since(self.last_change).as_secs_f64();
            if total > 0.0 {
                ((self.bit_seconds + tail) / total).round()
            } else {
                self.target.as_bps() as f64
            }
        });
        json!({
            "start": self.cfg.start.as_bps(),
            "min": self.lowest.as_bps(),
            "max": self.highest.as_bps(),
            "mean": mean,
            "final": self.target.as_bps(),
            "decreases": self.decreases,
            "limits": { "min": self.cfg.min.as_bps(), "max": self.cfg.max.as_bps() },
            "increase_per_s": round6(self.cfg.increase_per_s),
            "decrease_factor": round6(self.cfg.decrease),
        })
    }
}

/// Series names of one direction of an [`AdaptiveFrames`] stream.
#[derive(Clone, Copy, Debug)]
pub struct SeriesNames {
    /// Frames displayed per second over the interval.
    pub frame_rate: &'static str,
    /// Bits captured per second over the interval.
    pub bitrate: &'static str,
    /// The encoder's target at the sample.
    pub target: &'static str,
    /// Mean capture → display latency of the frames displayed in the interval.
    pub latency: &'static str,
}

/// One direction of rate-adapted frames: a frame clock at `fps` on the
/// sending side, a [`RateControl`] deciding each frame, and the
/// [`FrameStream`] that follows the frames to the receiver.
#[derive(Debug)]
pub struct AdaptiveFrames {
    frames: FrameStream,
    rate: RateControl,
    /// The first frame tick (the connection came up on the sending side).
    first_tick: Option<Time>,
    ticks: u64,
}

impl AdaptiveFrames {
    pub fn new(rate: RateControlConfig, fps: u32, frames: FrameStream) -> Self {
        AdaptiveFrames {
            frames,
            rate: RateControl::new(rate, fps),
            first_tick: None,
            ticks: 0,
        }
    }

    pub fn frames(&self) -> &FrameStream {
        &self.frames
    }

    pub fn rate(&self) -> &RateControl {
        &self.rate
    }

    /// The connection is up on the sending side: the first frame is due now.
    pub fn start(&mut self, now: Time, io: &mut dyn AppIo) {
        assert!(self.first_tick.is_none(), "frame clock started twice");
        self.first_tick = Some(now);
        self.frames.start(now);
        self.tick(now, io);
    }

    /// Frame tick `k` is at `first + k · 10⁹ / fps` ns (no drift).
    fn tick_time(&self, k: u64) -> Option<Time> {
        let fps = u64::from(self.rate.fps());
        self.first_tick
            .map(|t0| t0 + Dur::from_nanos(k * 1_000_000_000 / fps))
    }

    /// A wake-up on the sending side: run the frame tick if it is due.
    pub fn on_timer(&mut self, now: Time, io: &mut dyn AppIo) {
        let Some(next) = self.tick_time(self.ticks) else {
            return; // not started
        };
        if now < next {
            io.wake_at(next);
            return;
        }
        self.tick(now, io);
    }

    fn tick(&mut self, now: Time, io: &mut dyn AppIo) {
        // Bytes of earlier frames the send buffer had no room for go first.
        self.frames.write(io);
        match self.rate.on_frame(now, &io.info(), self.frames.unwritten()) {
            Decision::Capture { bytes } => {
                self.frames.capture(now, bytes);
                self.frames.write(io);
            }
            Decision::Skip => self.frames.skip(),
        }
        self.ticks += 1;
        let next = self.tick_time(self.ticks).expect("started");
        io.wake_at(next);
    }

    /// The sending side's socket has room again.
    pub fn on_writable(&mut self, io: &mut dyn AppIo) {
        self.frames.write(io);
    }

    /// `bytes` more of this direction arrived in order at the receiver.
    pub fn on_delivered(&mut self, now: Time, bytes: u64) {
        self.frames.on_delivered(now, bytes);
    }

    /// Frame metrics plus the target bitrate's (`target_bitrate_bps`).
    pub fn report(&self, end: Time) -> Value {
        let mut r = self.frames.report(end);
        r["target_bitrate_bps"] = self.rate.report(end);
        r
    }

    /// Values for the interval ending now, under `names`.
    pub fn sample(&mut self, interval: Dur, names: &SeriesNames, out: &mut SampleSink<'_>) {
        let (shown, bytes) = self.frames.take_interval();
        let iv = interval.as_secs_f64();
        let latency = self.frames.take_latency_interval();
        if self.first_tick.is_none() {
            return;
        }
        out(names.frame_rate, shown as f64 / iv);
        out(names.bitrate, bytes as f64 * 8.0 / iv);
        out(names.target, self.rate.target().as_bps() as f64);
        if let Some(ms) = latency {
            out(names.latency, ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    fn sock(unsent: u64, srtt_ms: u64) -> SocketInfo {
        SocketInfo {
            unsent_bytes: unsent,
            srtt: Some(Dur::from_millis(srtt_ms)),
            writable: true,
            ..SocketInfo::default()
        }
    }

    fn rc(start_mbit: u64) -> RateControl {
        RateControl::new(
            RateControlConfig::gcc(
                Rate::from_mbps(start_mbit),
                Rate::from_mbps(1),
                Rate::from_mbps(40),
            ),
            50,
        )
    }

    #[test]
    fn frames_are_target_over_fps() {
        // 10 Mbit/s at 50 fps: 200 kbit = 25,000 B per frame.
        let r = rc(10);
        assert_eq!(r.frame_bytes(), 25_000);
        assert_eq!(r.frame_interval(), Dur::from_millis(20));
    }

    #[test]
    fn a_clear_socket_captures_and_grows_eight_percent_per_second() {
        let mut r = rc(10);
        for k in 0..50 {
            let d = r.on_frame(ms(20 * k), &sock(0, 20), 0);
            assert!(matches!(d, Decision::Capture { .. }), "{d:?}");
        }
        // 50 frames = one second of ticks: × 1.08 (to rounding of each step).
        let t = r.target().as_bps() as f64;
        assert!((t / 10e6 - 1.08).abs() < 1e-5, "{t}");
        // Never above max.
        let mut r = rc(40);
        r.on_frame(ms(0), &sock(0, 20), 0);
        assert_eq!(r.target(), Rate::from_mbps(40));
    }

    #[test]
    fn a_backed_up_socket_skips_and_cuts_once_per_rtt() {
        let mut r = rc(10);
        // 25,001 unsent > one 25,000 B frame: over-use.
        assert_eq!(r.on_frame(ms(0), &sock(25_001, 50), 0), Decision::Skip);
        assert_eq!(r.target(), Rate::from_mbps(10).scale(0.85));
        // Still backed up 20 and 40 ms later: skipped, but no second cut within the 50 ms RTT.
        assert_eq!(r.on_frame(ms(20), &sock(30_000, 50), 0), Decision::Skip);
        assert_eq!(r.on_frame(ms(40), &sock(30_000, 50), 0), Decision::Skip);
        assert_eq!(r.decreases(), 1);
        // One RTT later: cut again.
        assert_eq!(r.on_frame(ms(60), &sock(30_000, 50), 0), Decision::Skip);
        assert_eq!(r.decreases(), 2);
        assert_eq!(r.target(), Rate::from_bps(7_225_000));
        // Bytes the app holds count as backlog too.
        let mut r = rc(10);
        assert_eq!(r.on_frame(ms(0), &sock(0, 50), 25_001), Decision::Skip);
    }

    #[test]
    fn up_to_one_frame_unsent_is_not_over_use() {
        let mut r = rc(10);
        assert_eq!(
            r.on_frame(ms(0), &sock(25_000, 20), 0),
            Decision::Capture { bytes: 25_000 }
        );
    }

    #[test]
    fn the_target_stays_within_min_and_max() {
        let mut r = rc(1);
        for k in 0..100 {
            r.on_frame(ms(1000 * k), &sock(1_000_000, 20), 0);
        }
        assert_eq!(r.target(), Rate::from_mbps(1));
        assert_eq!(r.report(ms(100_000))["min"], 1_000_000);
    }

    #[test]
    fn report_has_the_time_weighted_mean() {
        let mut r = rc(10);
        r.on_frame(ms(0), &sock(1_000_000, 20), 0); // 10 -> 8.5 at t = 0
        let v = r.report(ms(1000));
        assert_eq!(v["mean"], 8_500_000.0);
        assert_eq!(v["start"], 10_000_000);
        assert_eq!(v["final"], 8_500_000);
        assert_eq!(v["decreases"], 1);
    }
}
