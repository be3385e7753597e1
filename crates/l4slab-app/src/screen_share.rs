//! `screen_share`: a remote-desktop sender that captures a new frame whenever
//! its socket becomes writable (Stuart Cheshire, "Reducing network delay",
//! WWDC 2015 / the `TCP_NOTSENT_LOWAT` advice): with a large send buffer the
//! frames wait in the sending host; with a not-sent low-water mark the socket
//! reports writable only when little is left unsent, so each frame is
//! captured just before the network can take it.
//!
//! The sender captures at most `max_fps` frames per second (a screen does
//! not change faster than it refreshes), each `frame_size` bytes; a frame is
//! only captured when the previous one is fully in the socket and the socket
//! is writable. Latency is capture → display (last byte delivered in order).

use serde::Serialize;
use serde_json::Value;

use l4slab_core::param::{FromParam, Kind, Param, ParamValue};
use l4slab_core::{Dur, Rate, Time};

use crate::framed::{with_transport, Framed};
use crate::frames::FrameStream;
use crate::rate_control::SeriesNames;
use crate::registry::{AppKind, BuildContext};
use crate::rtp::{self, RtpConfig, RtpMedia};
use crate::{FlowApp, FlowIo, Role, SampleSink};

/// Series of a screen share (over TCP the encoder has no target: that name
/// is used over RTP only).
pub const SERIES: SeriesNames = SeriesNames {
    frame_rate: "frame_rate_fps",
    bitrate: "app_bitrate_bps",
    target: "target_bitrate_bps",
    latency: "frame_latency_ms",
};

pub const FRAME_SIZE: Param = Param::new(
    "frame_size",
    Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    ParamValue::Int(10_000),
    "a choice",
    "bytes per captured frame",
);

pub const MAX_FPS: Param = Param::new(
    "max_fps",
    Kind::Int { min: 1, max: 1000 },
    ParamValue::Int(30),
    "a choice: a 30 Hz capture",
    "capture-rate ceiling, frames per second",
);

pub const STALL_THRESHOLD: Param = Param::new(
    "stall_threshold",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(200)),
    "a choice, near WebRTC's freeze rule (183 ms at 30 fps)",
    "a gap between displayed frames longer than this is a stall",
);

/// `app = { kind = "screen_share", ... }` (docs/apps.md#screen_share).
pub const PARAMS: &[Param] = &with_transport::<3, 9>([FRAME_SIZE, MAX_FPS, STALL_THRESHOLD]);

/// Screen-sharing parameters (scenario `app = { kind = "screen_share", ... }`;
/// [`PARAMS`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScreenShareConfig {
    /// [`FRAME_SIZE`].
    pub frame_size: u64,
    /// [`MAX_FPS`].
    pub max_fps: u32,
    /// [`STALL_THRESHOLD`].
    pub stall_threshold: Dur,
}

impl Default for ScreenShareConfig {
    fn default() -> Self {
        ScreenShareConfig {
            frame_size: FromParam::from_param(FRAME_SIZE.default),
            max_fps: FromParam::from_param(MAX_FPS.default),
            stall_threshold: STALL_THRESHOLD.default.dur(),
        }
    }
}

l4slab_core::param_fields!(ScreenShareConfig {
    frame_size = FRAME_SIZE,
    max_fps = MAX_FPS,
    stall_threshold = STALL_THRESHOLD,
});

impl AppKind for Framed<ScreenShareConfig> {
    const NAME: &'static str = "screen_share";
    const WHAT: &'static str = "frames whenever the socket is writable";
    const EXAMPLE: &'static str = r#"app = { kind = "screen_share" }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        if !self.is_rtp() {
            return Box::new(ScreenShare::new(self.app, cx.sender));
        }
        // Over RTP: frames at `max_fps`, at most `frame_size` each (the
        // encoder's ceiling is `frame_size · 8 · max_fps`), adapting down to
        // a tenth of that, starting at the ceiling (docs/apps.md#screen_share).
        let p = self.app;
        let max = Rate::from_bps(p.frame_size * 8 * u64::from(p.max_fps));
        let cfg = RtpConfig::new(
            p.max_fps,
            max,
            Rate::from_bps((max.as_bps() / 10).max(1)),
            max,
            p.stall_threshold,
            None,
        )
        .with_transport(self.transport);
        Box::new(RtpMedia::new(
            "screen_share",
            cfg,
            &[(cx.sender, SERIES, rtp::RTT)],
        ))
    }
}

#[derive(Debug)]
pub struct ScreenShare {
    cfg: ScreenShareConfig,
    sender: Role,
    frames: FrameStream,
    next_capture: Time,
}

impl ScreenShare {
    pub fn new(cfg: ScreenShareConfig, sender: Role) -> Self {
        assert!(cfg.frame_size > 0 && cfg.max_fps > 0, "{cfg:?}");
        ScreenShare {
            cfg,
            sender,
            frames: FrameStream::new(cfg.stall_threshold),
            next_capture: Time::ZERO,
        }
    }

    fn frame_interval(&self) -> Dur {
        Dur::from_nanos(1_000_000_000 / u64::from(self.cfg.max_fps))
    }

    /// Finish writing the current frame; then capture the next one if the
    /// socket is writable and the capture rate allows, else wait.
    fn pump(&mut self, now: Time, io: &mut dyn FlowIo) {
        if !self.frames.write(io) {
            return; // the rest goes when the socket is writable again
        }
        if !io.info().writable {
            return;
        }
        if now < self.next_capture {
            io.wake_at(self.next_capture);
            return;
        }
        self.frames.capture(now, self.cfg.frame_size);
        self.next_capture = now + self.frame_interval();
        // Still writable with the frame in: capture again at the next slot.
        // Otherwise the socket's next writable event brings us back.
        if self.frames.write(io) && io.info().writable {
            io.wake_at(self.next_capture);
        }
    }
}

impl FlowApp for ScreenShare {
    fn kind(&self) -> &'static str {
        "screen_share"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.frames.start(now);
            self.pump(now, io);
        }
    }
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.pump(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.pump(now, io);
        }
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, _io: &mut dyn FlowIo) {
        if side != self.sender {
            self.frames.on_delivered(now, bytes);
        }
    }
    fn report(&self, end: Time) -> Value {
        let mut r = self.frames.report(end);
        r["frame_size_bytes"] = self.cfg.frame_size.into();
        r["max_fps"] = self.cfg.max_fps.into();
        r
    }
    fn sample(&mut self, _now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        let (shown, bytes) = self.frames.take_interval();
        let iv = interval.as_secs_f64();
        out(SERIES.frame_rate, shown as f64 / iv);
        out(SERIES.bitrate, bytes as f64 * 8.0 / iv);
        if let Some(ms) = self.frames.take_latency_interval() {
            out(SERIES.latency, ms);
        }
    }
}
