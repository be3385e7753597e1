//! `video_stream`: an adaptive-bitrate video player as DASH and HLS players
//! work. The video is a ladder of bitrates cut into segments of a set
//! duration; the player fetches them one after another by HTTP request and
//! response on the flow's persistent connection, each at the rung its ABR
//! rule picks ([`crate::abr`]), keeps a buffer up to a target, starts
//! playing once `startup` is buffered and stalls when the buffer runs dry
//! ([`player`]). The on/off traffic of a player at its buffer target comes
//! out of these rules, not from a drawn schedule.
//!
//! Transport: the segments are the objects of the web app's request and
//! response model, asked for as the player decides — over TCP
//! [`crate::web::Web`] (HTTP/1.1 on one persistent connection, RFC 9112
//! §9.3), over the QUIC-style transport [`crate::web_quic::WebStreams`]
//! (one stream per segment, as HTTP/3). The requesting side is the one that
//! receives the flow's data (the client for `direction = "down"`).
//!
//! Not modelled: audio (a separate track in DASH), variable segment sizes
//! (VBR: each segment is bitrate x duration), manifests and DNS/TLS,
//! abandoning a slow download, seeking, live edges.

use serde::Serialize;
use serde_json::Value;

use l4slab_core::param::{FromParam, Kind, Param, ParamValue};
use l4slab_core::{Dur, Time};
use l4slab_quic::{Connection, Event};

use crate::abr::AbrKind;
use crate::quic::QuicStreams;
use crate::registry::{AppKind, BuildContext};
use crate::web::{Web, WebConfig};
use crate::web_quic::WebStreams;
use crate::{FlowApp, FlowIo, Role, SampleSink};

pub mod player;

use player::{Player, PlayerConfig, State};

/// Apple's HLS Authoring Specification for Apple Devices, the recommended
/// 16:9 H.264 variants ("Video average bit rate (kb/s)": 416x234 145,
/// 480x270 365, 640x360 730, 768x432 1100, 960x540 2000, 1280x720 3000,
/// then 4500, 6000, 7800 at the source's resolution), in bit/s.
pub const APPLE_HLS_LADDER: [u64; 9] = [
    145_000, 365_000, 730_000, 1_100_000, 2_000_000, 3_000_000, 4_500_000, 6_000_000, 7_800_000,
];

/// The ladders a scenario may name.
pub const LADDERS: &[&str] = &["apple_hls"];

pub const ABR: Param = Param::new(
    "abr",
    Kind::Choice(AbrKind::NAMES),
    ParamValue::Choice("throughput"),
    "hls.js's default and dash.js's ThroughputRule (dash.js's own default, `abrDynamic`, switches between it and BOLA)",
    "the ABR rule: `\"throughput\"` (EWMA x 0.9), `\"bba\"` (BBA-0) or `\"bola\"` (BOLA)",
);

pub const LADDER: Param = Param::new(
    "ladder",
    Kind::Custom(
        "`\"apple_hls\"` or an array of rates, lowest first, strictly increasing (`[\"500kbit\", \"2Mbit\"]`)",
    ),
    ParamValue::Choice("apple_hls"),
    "Apple HLS Authoring Specification, recommended 16:9 variants: 145 365 730 1100 2000 3000 4500 6000 7800 kbit/s",
    "the bitrate ladder",
);

pub const SEGMENT: Param = Param::new(
    "segment",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_secs(6)),
    "Apple HLS Authoring Specification: target durations SHOULD be 6 s",
    "media duration of each segment",
);

pub const BUFFER_TARGET: Param = Param::new(
    "buffer_target",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_secs(30)),
    "hls.js `maxBufferLength: 30` s (dash.js `bufferTimeAtTopQuality: 30` s)",
    "the player fetches the next segment while at most `buffer_target − segment` is buffered (at least one segment)",
);

pub const STARTUP: Param = Param::new(
    "startup",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(2_500)),
    "ExoPlayer DefaultLoadControl `DEFAULT_BUFFER_FOR_PLAYBACK_MS = 2500`",
    "media buffered before playback starts, and resumes after a stall (segments arrive whole: at least one)",
);

pub const LENGTH: Param = Param::new(
    "length",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_secs(2 * 3600)),
    "a choice: a feature film, longer than a run",
    "the video's duration (its segment count: `length / segment`, rounded up)",
);

/// `app = { kind = "video_stream", ... }` (docs/apps.md#video_stream).
pub const PARAMS: &[Param] = &[
    ABR,
    LADDER,
    SEGMENT,
    BUFFER_TARGET,
    STARTUP,
    LENGTH,
    crate::web::REQUEST_SIZE,
];

impl FromParam for AbrKind {
    fn from_param(v: ParamValue) -> Self {
        AbrKind::from_name(v.choice()).expect("a declared choice")
    }
}

/// `app = { kind = "video_stream" }` as a scenario resolves it ([`PARAMS`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VideoStreamConfig {
    pub abr: AbrKind,
    /// [`LADDER`] in bit/s, read by the scenario.
    pub ladder: Vec<u64>,
    pub segment: Dur,
    pub buffer_target: Dur,
    pub startup: Dur,
    pub length: Dur,
    pub request_size: u64,
}

l4slab_core::param_config!(VideoStreamConfig {
    abr = ABR,
    segment = SEGMENT,
    buffer_target = BUFFER_TARGET,
    startup = STARTUP,
    length = LENGTH,
    request_size = crate::web::REQUEST_SIZE,
} + { ladder: APPLE_HLS_LADDER.to_vec() });

impl VideoStreamConfig {
    /// Segments in the video.
    pub fn segments(&self) -> u64 {
        self.length
            .as_nanos()
            .div_ceil(self.segment.as_nanos().max(1))
            .max(1)
    }

    fn player(&self, start: Time) -> Player {
        Player::new(
            PlayerConfig {
                ladder: self.ladder.clone(),
                segment: self.segment,
                buffer_target: self.buffer_target,
                startup: self.startup,
                segments: self.segments(),
            },
            self.abr.build(),
            start,
        )
    }

    /// The web model's config for a flow whose objects are pushed as the
    /// player asks for them.
    fn web(&self, cx: &BuildContext<'_>) -> WebConfig {
        WebConfig {
            request_size: self.request_size,
            page_start: cx.start,
            objects: Vec::new(),
            flow: cx.flow.to_string(),
        }
    }

    /// Both ends over the QUIC-style transport: one stream per segment.
    pub fn quic_streams(&self, cx: &BuildContext<'_>) -> VideoStreams {
        VideoStreams {
            player: self.player(cx.start),
            web: WebStreams::new(self.web(cx), cx.receiver()),
            requester: cx.receiver(),
            seen: 0,
        }
    }
}

impl AppKind for VideoStreamConfig {
    const NAME: &'static str = "video_stream";
    const WHAT: &'static str = "an adaptive-bitrate video player (DASH/HLS)";
    const EXAMPLE: &'static str = r#"app = { kind = "video_stream", abr = "bola" }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(VideoStream {
            player: self.player(cx.start),
            web: Web::new(self.web(cx), cx.receiver()),
            requester: cx.receiver(),
            seen: 0,
        })
    }
}

/// The series a player adds to `series.parquet` (docs/apps.md#video_stream).
fn sample(player: &Player, now: Time, out: &mut SampleSink<'_>) {
    out("video_buffer_s", player.buffer(now).as_secs_f64());
    if let Some(b) = player.bitrate() {
        out("video_bitrate_bps", b as f64);
    }
    let stalled = matches!(player.state(now), State::Stalled { .. });
    out("video_stalled", f64::from(u8::from(stalled)));
}

/// Both ends of a video over one TCP connection.
#[derive(Debug)]
pub struct VideoStream {
    player: Player,
    web: Web,
    requester: Role,
    /// Segments the web model completed that the player was told of.
    seen: usize,
}

impl VideoStream {
    pub fn player(&self) -> &Player {
        &self.player
    }

    /// Tell the player of completed segments, then ask for the next one if
    /// it wants it, and wake up when it will.
    fn step(&mut self, now: Time, io: &mut dyn FlowIo) {
        while self.seen < self.web.completed() {
            self.player.segment_done(now);
            self.seen += 1;
        }
        if let Some(bytes) = self.player.next_request(now) {
            self.web.push(now, bytes, io);
        }
        if let Some(t) = self.player.wake() {
            io.wake_at(t);
        }
    }
}

impl FlowApp for VideoStream {
    fn kind(&self) -> &'static str {
        VideoStreamConfig::NAME
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.web.on_connected(now, side, io);
        if side == self.requester {
            self.step(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.web.on_timer(now, side, io);
        if side == self.requester {
            self.step(now, io);
        }
    }
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.web.on_writable(now, side, io);
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, io: &mut dyn FlowIo) {
        self.web.on_receive(now, side, bytes, io);
        if side == self.requester {
            self.step(now, io);
        }
    }
    fn report(&self, end: Time) -> Value {
        let mut r = self.player.report(end);
        r["request_size_bytes"] = self.web.objects().request_size().into();
        r
    }
    fn sample(&mut self, now: Time, _interval: Dur, out: &mut SampleSink<'_>) {
        sample(&self.player, now, out);
    }
}

/// Both ends of a video over one QUIC connection (what [`crate::quic::QuicFlow`] runs).
#[derive(Debug)]
pub struct VideoStreams {
    player: Player,
    web: WebStreams,
    requester: Role,
    seen: usize,
}

impl VideoStreams {
    pub fn player(&self) -> &Player {
        &self.player
    }
}

impl QuicStreams for VideoStreams {
    fn kind(&self) -> &'static str {
        VideoStreamConfig::NAME
    }

    fn drive(&mut self, now: Time, side: Role, conn: &mut Connection, io: &mut dyn FlowIo) {
        if side == self.requester {
            while self.seen < self.web.completed() {
                self.player.segment_done(now);
                self.seen += 1;
            }
            if let Some(bytes) = self.player.next_request(now) {
                self.web.push(now, bytes);
            }
            if let Some(t) = self.player.wake() {
                io.wake_at(t);
            }
        }
        self.web.drive(now, side, conn, io);
    }

    fn on_event(&mut self, now: Time, side: Role, ev: Event) {
        self.web.on_event(now, side, ev);
    }

    fn delivered(&self) -> u64 {
        self.web.delivered()
    }

    fn completion(&self) -> Option<Time> {
        None
    }

    fn report(&self, _start: Time, end: Time) -> Value {
        let mut r = self.player.report(end);
        r["request_size_bytes"] = self.web.objects().request_size().into();
        r
    }

    fn sample(&mut self, now: Time, _interval: Dur, out: &mut SampleSink<'_>) {
        sample(&self.player, now, out);
    }
}
