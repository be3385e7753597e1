//! `video_call`: a two-way video call over one connection (the FaceTime
//! call of Apple's L4S demonstration, Apple WWDC23 session 10004). Each side captures
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

use l4slab_core::param::{Param, ParamValue};
use l4slab_core::{Dur, Rate, Time};

use crate::adaptive::{AdaptiveConfig, VIDEO_CALL};
use crate::cloud_gaming as game;
use crate::framed::{with_transport, Framed};
use crate::rate_control::{AdaptiveFrames, SeriesNames};
use crate::registry::{AppKind, BuildContext};
use crate::rtp::{self, RtpMedia};
use crate::{FlowApp, FlowIo, Role, SampleSink};

pub const FPS: Param = Param {
    default: ParamValue::Int(30),
    source: "an HD call's 30 fps",
    doc: "frames per second, each way",
    ..game::FPS
};

pub const START_BITRATE: Param = Param {
    default: ParamValue::Rate(Rate::from_kbps(1_500)),
    source: "a choice between the 720p and 180p simulcast layers",
    doc: "target at the start (clamped to the limits when not written)",
    ..game::START_BITRATE
};

pub const MIN_BITRATE: Param = Param {
    default: ParamValue::Rate(Rate::from_kbps(150)),
    source: "WebRTC `simulcast.cc`: the 320×180 layer's target",
    ..game::MIN_BITRATE
};

pub const MAX_BITRATE: Param = Param {
    default: ParamValue::Rate(Rate::from_kbps(2_500)),
    source: "WebRTC `simulcast.cc`: the 1280×720 layer's maximum",
    ..game::MAX_BITRATE
};

pub const STALL_THRESHOLD: Param = Param {
    source: "a choice; WebRTC's freeze rule gives 183 ms at 30 fps",
    ..game::STALL_THRESHOLD
};

pub const LATE_THRESHOLD: Param = Param {
    default: ParamValue::Dur(Dur::from_millis(150)),
    source: "ITU-T G.114's 150 ms one-way bound for conversation",
    ..game::LATE_THRESHOLD
};

/// `app = { kind = "video_call", ... }` (docs/apps.md#video_call): the six
/// keys of [`AdaptiveConfig`] first, in its order.
pub const PARAMS: &[Param] = &with_transport::<6, 12>([
    FPS,
    START_BITRATE,
    MIN_BITRATE,
    MAX_BITRATE,
    LATE_THRESHOLD,
    STALL_THRESHOLD,
]);

/// Video-call parameters (scenario `app = { kind = "video_call", ... }`;
/// [`PARAMS`]), the same for both directions.
pub type VideoCallConfig = AdaptiveConfig<VIDEO_CALL>;

impl AppKind for Framed<VideoCallConfig> {
    const NAME: &'static str = "video_call";
    const WHAT: &'static str = "rate-adapted frames both ways";
    const EXAMPLE: &'static str = r#"app = "video_call""#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, _: &BuildContext<'_>) -> Box<dyn FlowApp> {
        if !self.is_rtp() {
            return Box::new(VideoCall::new(self.app));
        }
        let cfg = self.app.rtp().with_transport(self.transport);
        Box::new(RtpMedia::new(
            "video_call",
            cfg,
            &[
                (Role::Client, UP, rtp::RTT_UP),
                (Role::Server, DOWN, rtp::RTT_DOWN),
            ],
        ))
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
        VideoCall {
            cfg,
            streams: [cfg.frames(), cfg.frames()],
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
