//! `cloud_gaming`: a game-streaming server sends rendered frames to the
//! player at a fixed frame rate over the flow's congestion-controlled
//! connection, adapting its encoder bitrate to what the connection delivers
//! (the TCP-based, adaptive, up-to-40 Mbit/s cloud-gaming flow of the
//! Excentis Wi-Fi 6 L4S tests, the Excentis / Nokia Bell Labs measurements).
//!
//! Every `1/fps` the sender reads its socket (`TCP_INFO`, unsent bytes) and
//! either captures a frame of `target / fps` bytes or, when more than a
//! frame is still unsent, skips it; the target follows the GCC-style AIMD of
//! [`crate::rate_control`], between `min_bitrate` and `max_bitrate`, from
//! `start_bitrate`. The player displays a frame when its last byte arrives
//! in order; latency is capture → display. A frame later than
//! `late_threshold` is late (default 50 ms: three frame intervals at 60 fps,
//! the part of a cloud game's ~100 ms input-to-photon budget that the
//! network may take — a choice, documented in docs/apps.md).
//!
//! Not modelled: the player's input stream (upstream, a few kbit/s), frame
//! size variation (I-frames), forward error correction, the UDP transports
//! most commercial services use (this is the TCP variant the Excentis test
//! ran), decoder and display delay.

use serde_json::Value;

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{Dur, Rate, Time};

use crate::adaptive::{AdaptiveConfig, CLOUD_GAMING};
use crate::framed::{with_transport, Framed};
use crate::rate_control::{AdaptiveFrames, SeriesNames};
use crate::registry::{AppKind, BuildContext};
use crate::rtp::{self, RtpMedia};
use crate::{FlowApp, FlowIo, Role, SampleSink};

pub const FPS: Param = Param::new(
    "fps",
    Kind::Int { min: 1, max: 1000 },
    ParamValue::Int(60),
    "a choice: a 60 fps game stream",
    "frames per second",
);

/// The Excentis flow's ceiling (the Excentis / Nokia Bell Labs measurements).
const MAX: Rate = Rate::from_mbps(40);

pub const START_BITRATE: Param = Param::new(
    "start_bitrate",
    Kind::Rate,
    ParamValue::Rate(MAX),
    "a choice: `max_bitrate`, backing off",
    "target at the start; within `min_bitrate..max_bitrate` (the default is clamped to them)",
);

pub const MIN_BITRATE: Param = Param::new(
    "min_bitrate",
    Kind::Rate,
    ParamValue::Rate(Rate::from_mbps(1)),
    "a choice",
    "lowest target",
);

pub const MAX_BITRATE: Param = Param::new(
    "max_bitrate",
    Kind::Rate,
    ParamValue::Rate(MAX),
    "the Excentis Wi-Fi 6 L4S tests' up-to-40 Mbit/s flow (the Excentis / Nokia Bell Labs measurements)",
    "highest target",
);

pub const LATE_THRESHOLD: Param = Param::new(
    "late_threshold",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(50)),
    "a choice: three frame intervals at 60 fps, the network's part of a ~100 ms input-to-photon budget",
    "a frame displayed later than this after capture is late",
);

pub const STALL_THRESHOLD: Param = Param {
    doc: "inter-frame gap counted as a stall",
    ..crate::screen_share::STALL_THRESHOLD
};

/// `app = { kind = "cloud_gaming", ... }` (docs/apps.md#cloud_gaming): the
/// six keys of [`AdaptiveConfig`] first, in its order.
pub const PARAMS: &[Param] = &with_transport::<6, 12>([
    FPS,
    START_BITRATE,
    MIN_BITRATE,
    MAX_BITRATE,
    LATE_THRESHOLD,
    STALL_THRESHOLD,
]);

/// Cloud-gaming parameters (scenario `app = { kind = "cloud_gaming", ... }`;
/// [`PARAMS`]).
pub type CloudGamingConfig = AdaptiveConfig<CLOUD_GAMING>;

impl AppKind for Framed<CloudGamingConfig> {
    const NAME: &'static str = "cloud_gaming";
    const WHAT: &'static str = "rate-adapted frames, server to player";
    const EXAMPLE: &'static str = r#"app = "cloud_gaming""#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        if !self.is_rtp() {
            return Box::new(CloudGaming::new(self.app, cx.sender));
        }
        let cfg = self.app.rtp().with_transport(self.transport);
        Box::new(RtpMedia::new(
            "cloud_gaming",
            cfg,
            &[(cx.sender, SERIES, rtp::RTT)],
        ))
    }
}

pub const SERIES: SeriesNames = SeriesNames {
    frame_rate: "frame_rate_fps",
    bitrate: "app_bitrate_bps",
    target: "target_bitrate_bps",
    latency: "frame_latency_ms",
};

#[derive(Debug)]
pub struct CloudGaming {
    cfg: CloudGamingConfig,
    /// The game server's side (the flow's sender).
    sender: Role,
    stream: AdaptiveFrames,
}

impl CloudGaming {
    pub fn new(cfg: CloudGamingConfig, sender: Role) -> Self {
        CloudGaming {
            cfg,
            sender,
            stream: cfg.frames(),
        }
    }

    pub fn stream(&self) -> &AdaptiveFrames {
        &self.stream
    }
}

impl FlowApp for CloudGaming {
    fn kind(&self) -> &'static str {
        "cloud_gaming"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.stream.start(now, io);
        }
    }
    fn on_writable(&mut self, _now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.stream.on_writable(io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.stream.on_timer(now, io);
        }
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, _io: &mut dyn FlowIo) {
        if side != self.sender {
            self.stream.on_delivered(now, bytes);
        }
    }
    fn report(&self, end: Time) -> Value {
        let mut r = self.stream.report(end);
        r["fps"] = self.cfg.fps.into();
        r
    }
    fn sample(&mut self, _now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        self.stream.sample(interval, &SERIES, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    fn game() -> CloudGaming {
        CloudGaming::new(
            CloudGamingConfig {
                fps: 50,
                start_bitrate: Rate::from_mbps(10),
                ..CloudGamingConfig::default()
            },
            Role::Server,
        )
    }

    #[test]
    fn frames_go_out_every_interval_and_are_displayed_when_complete() {
        let mut g = game();
        let mut s = Script::new();
        s.connected(&mut g, ms(0), Role::Server);
        // One 25,000 B frame (10 Mbit/s / 50 fps) is written at once; the next tick is 20 ms later.
        assert_eq!(s.written(Role::Server), 25_000);
        assert_eq!(s.wake(Role::Server), Some(ms(20)));
        s.deliver(&mut g, ms(15), Role::Client, 25_000);
        s.timer(&mut g, ms(20), Role::Server);
        // The target grew by 1.08^(1/50) in between: the second frame is a little larger.
        let second = s.written(Role::Server) - 25_000;
        assert_eq!(second, 25_038);
        s.deliver(&mut g, ms(35), Role::Client, second);
        assert_eq!(g.stream().frames().displayed(), 2);
        let r = g.report(ms(40));
        assert_eq!(r["frame_latency_ms"]["max"], 15.0);
        assert_eq!(r["frames_late"], 0);
        assert_eq!(r["frames_skipped"], 0);
    }

    #[test]
    fn a_backed_up_socket_skips_frames_and_cuts_the_bitrate() {
        let mut g = game();
        let mut s = Script::new();
        s.connected(&mut g, ms(0), Role::Server);
        // The network took nothing: 25,000 B unsent is one frame, not more.
        s.set_unsent(Role::Server, 25_000);
        s.timer(&mut g, ms(20), Role::Server);
        assert_eq!(g.stream().frames().captured(), 2);
        // Now 50,000 B unsent: the next two frames are skipped, the target cut once (RTT 100 ms).
        s.set_unsent(Role::Server, 50_000);
        s.set_srtt(Role::Server, Dur::from_millis(100));
        s.timer(&mut g, ms(40), Role::Server);
        s.timer(&mut g, ms(60), Role::Server);
        assert_eq!(g.stream().frames().skipped(), 2);
        assert_eq!(g.stream().rate().decreases(), 1);
        let after_cut = g.stream().rate().target();
        assert!(after_cut < Rate::from_mbps(10), "{after_cut}");
        // The backlog clears: frames are captured again and the target grows after the hold.
        s.set_unsent(Role::Server, 0);
        s.timer(&mut g, ms(140), Role::Server);
        assert_eq!(g.stream().frames().captured(), 3);
        assert!(g.stream().rate().target() > after_cut);
    }

    #[test]
    fn bytes_the_send_buffer_refused_count_as_backlog_and_go_out_when_writable() {
        let mut g = game();
        let mut s = Script::new();
        s.sock(Role::Server).room = 10_000;
        s.connected(&mut g, ms(0), Role::Server);
        assert_eq!(s.written(Role::Server), 10_000);
        // At 20 ms the app still holds 15,000 B, less than a frame: the next
        // frame (25,038 B) is captured and held too.
        s.timer(&mut g, ms(20), Role::Server);
        assert_eq!(g.stream().frames().captured(), 2);
        // At 40 ms it holds 40,038 B, more than a frame: skipped.
        s.timer(&mut g, ms(40), Role::Server);
        assert_eq!(g.stream().frames().skipped(), 1);
        // Room again: everything held goes out.
        s.writable(&mut g, ms(50), Role::Server, 1_000_000);
        assert_eq!(s.written(Role::Server), 25_000 + 25_038);
    }

    #[test]
    fn the_client_side_sends_nothing() {
        let mut g = game();
        let mut s = Script::new();
        s.connected(&mut g, ms(0), Role::Client);
        assert_eq!(s.written(Role::Client), 0);
        assert_eq!(s.wake(Role::Client), None);
    }
}
