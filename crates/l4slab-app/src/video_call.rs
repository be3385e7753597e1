//! `video_call`: a two-way video call over one connection (the FaceTime
//! call of Apple's L4S demonstration, STUDIES.md §3). Each side captures
//! frames at `fps` on its own clock and adapts its own encoder bitrate to
//! what its direction of the connection delivers (the GCC-style AIMD of
//! [`crate::rate_control`], one controller per direction); the other side
//! displays each frame when its last byte arrives in order.
//!
//! Defaults are those of an HD call: 30 fps; at most 2.5 Mbit/s (WebRTC's
//! 1280×720 simulcast layer, `simulcast.cc`), at least 150 kbit/s (its
//! 320×180 layer's target), starting at 1.5 Mbit/s (a choice between the
//! two). A gap of more than `stall_threshold` (200 ms) between displayed
//! frames is a stall (WebRTC's freeze rule gives 183 ms at 30 fps); a frame
//! displayed more than `late_threshold` (150 ms, the one-way mouth-to-ear
//! bound of ITU-T G.114) after capture is late.
//!
//! Directions are named by where the data goes: `down` is server → client,
//! `up` is client → server. Packet loss per direction and the connection's
//! RTT are the flow's own metrics (`packet_loss_pct`, `rtt_ms`).
//!
//! Not modelled: audio (a few tens of kbit/s, usually a separate stream),
//! frame size variation, FEC and retransmission-free media transport (real
//! calls run over RTP/UDP; over TCP a loss delays every later frame until
//! it is repaired — which is what this app measures).

use serde_json::{json, Value};

use l4slab_core::{Dur, Rate, Time};

use crate::frames::FrameStream;
use crate::rate_control::{AdaptiveFrames, RateControlConfig, SeriesNames};
use crate::{FlowApp, FlowIo, Role, SampleSink};

/// Video-call parameters (scenario `app = { kind = "video_call", ... }`),
/// the same for both directions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoCallConfig {
    /// Frames per second. Default 30.
    pub fps: u32,
    /// Encoder bitrate at the start. Default 1.5 Mbit/s.
    pub start_bitrate: Rate,
    /// Lowest encoder bitrate. Default 150 kbit/s.
    pub min_bitrate: Rate,
    /// Highest encoder bitrate. Default 2.5 Mbit/s.
    pub max_bitrate: Rate,
    /// A gap between displayed frames longer than this is a stall. Default 200 ms.
    pub stall_threshold: Dur,
    /// A frame displayed later than this after capture is late. Default 150 ms.
    pub late_threshold: Dur,
}

impl Default for VideoCallConfig {
    fn default() -> Self {
        VideoCallConfig {
            fps: 30,
            start_bitrate: Rate::from_kbps(1_500),
            min_bitrate: Rate::from_kbps(150),
            max_bitrate: Rate::from_kbps(2_500),
            stall_threshold: Dur::from_millis(200),
            late_threshold: Dur::from_millis(150),
        }
    }
}

/// Series of the frames the client sends (client → server).
pub const UP: SeriesNames = SeriesNames {
    frame_rate: "frame_rate_fps.up",
    bitrate: "app_bitrate_bps.up",
    target: "target_bitrate_bps.up",
    latency: "frame_latency_ms.up",
};
/// Series of the frames the server sends (server → client).
pub const DOWN: SeriesNames = SeriesNames {
    frame_rate: "frame_rate_fps.down",
    bitrate: "app_bitrate_bps.down",
    target: "target_bitrate_bps.down",
    latency: "frame_latency_ms.down",
};

#[derive(Debug)]
pub struct VideoCall {
    cfg: VideoCallConfig,
    /// Indexed by the sending side: `[up (client sends), down (server sends)]`.
    streams: [AdaptiveFrames; 2],
}

/// The stream `side` sends.
fn sent_by(side: Role) -> usize {
    match side {
        Role::Client => 0,
        Role::Server => 1,
    }
}

impl VideoCall {
    pub fn new(cfg: VideoCallConfig) -> Self {
        let stream = || {
            AdaptiveFrames::new(
                RateControlConfig::gcc(cfg.start_bitrate, cfg.min_bitrate, cfg.max_bitrate),
                cfg.fps,
                FrameStream::new(cfg.stall_threshold).with_late_threshold(cfg.late_threshold),
            )
        };
        VideoCall {
            cfg,
            streams: [stream(), stream()],
        }
    }

    /// The frames `side` sends.
    pub fn stream(&self, side: Role) -> &AdaptiveFrames {
        &self.streams[sent_by(side)]
    }
}

impl FlowApp for VideoCall {
    fn kind(&self) -> &'static str {
        "video_call"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.streams[sent_by(side)].start(now, io);
    }
    fn on_writable(&mut self, _now: Time, side: Role, io: &mut dyn FlowIo) {
        self.streams[sent_by(side)].on_writable(io);
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.streams[sent_by(side)].on_timer(now, io);
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, _io: &mut dyn FlowIo) {
        // What `side` receives is what the other side sends.
        self.streams[1 - sent_by(side)].on_delivered(now, bytes);
    }
    fn report(&self, end: Time) -> Value {
        json!({
            "up": self.streams[0].report(end),
            "down": self.streams[1].report(end),
            "fps": self.cfg.fps,
        })
    }
    fn sample(&mut self, _now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        self.streams[0].sample(interval, &UP, out);
        self.streams[1].sample(interval, &DOWN, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    #[test]
    fn both_sides_send_frames_on_their_own_clocks() {
        let mut call = VideoCall::new(VideoCallConfig::default());
        let mut s = Script::new();
        // The server learns of the connection half an RTT after the client.
        s.connected(&mut call, ms(0), Role::Client);
        s.connected(&mut call, ms(10), Role::Server);
        // 1.5 Mbit/s at 30 fps: 6,250 B per frame.
        assert_eq!(s.written(Role::Client), 6_250);
        assert_eq!(s.written(Role::Server), 6_250);
        assert_eq!(
            s.wake(Role::Client),
            Some(ms(0) + Dur::from_nanos(33_333_333))
        );
        assert_eq!(
            s.wake(Role::Server),
            Some(ms(10) + Dur::from_nanos(33_333_333))
        );
        // The server receives the client's frame, the client the server's.
        s.deliver(&mut call, ms(20), Role::Server, 6_250);
        s.deliver(&mut call, ms(45), Role::Client, 6_250);
        assert_eq!(call.stream(Role::Client).frames().displayed(), 1);
        assert_eq!(call.stream(Role::Server).frames().displayed(), 1);
        let r = call.report(ms(50));
        assert_eq!(r["up"]["frame_latency_ms"]["max"], 20.0);
        assert_eq!(r["down"]["frame_latency_ms"]["max"], 35.0);
    }

    #[test]
    fn each_direction_adapts_on_its_own_backlog() {
        let mut call = VideoCall::new(VideoCallConfig::default());
        let mut s = Script::new();
        s.connected(&mut call, ms(0), Role::Client);
        s.connected(&mut call, ms(0), Role::Server);
        // The uplink is backed up, the downlink is not.
        s.set_unsent(Role::Client, 20_000);
        let tick = Time::ZERO + Dur::from_nanos(33_333_333);
        s.timer(&mut call, tick, Role::Client);
        s.timer(&mut call, tick, Role::Server);
        let up = call.stream(Role::Client);
        let down = call.stream(Role::Server);
        assert_eq!((up.frames().skipped(), up.rate().decreases()), (1, 1));
        assert_eq!((down.frames().skipped(), down.rate().decreases()), (0, 0));
        assert!(up.rate().target() < Rate::from_kbps(1_500));
        assert!(down.rate().target() > Rate::from_kbps(1_500));
    }
}
