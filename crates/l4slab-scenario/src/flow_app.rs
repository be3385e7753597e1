//! A flow's application as an object, from its scenario entry: where
//! `app = "file"`, `transport = { protocol = "quic" }` or `media_cc = "gcc"`
//! become a [`FlowApp`]. Both backends build their flows' apps here, so the
//! simulator and the emulator run the same app code (docs/apps.md).

use l4slab_app::cbr::{Cbr, CbrConfig};
use l4slab_app::cloud_gaming::{self, CloudGaming, CloudGamingConfig};
use l4slab_app::ping::{Ping, PingConfig};
use l4slab_app::quic::{QuicApp, QuicFlow};
use l4slab_app::rtp::{self, MediaCcKind, RtpConfig, RtpMedia};
use l4slab_app::screen_share::{self, ScreenShare, ScreenShareConfig};
use l4slab_app::video_call::{self, VideoCall, VideoCallConfig};
use l4slab_app::web::{Web, WebConfig, WebObject};
use l4slab_app::web_quic::WebStreams;
use l4slab_app::{Bulk, File, FlowApp, OneWay, Role};
use l4slab_core::{Rate, SimRng};

use crate::{
    AppSpec, Direction, EcnSpec, Flow, FrameAppSpec, FrameTransport, MediaCcSpec, Protocol,
    ScreenShareSpec, WebConnection, WebSpec,
};

/// The side flow `f`'s main data goes from: the server for `down`.
pub fn sender(f: &Flow) -> Role {
    match f.direction {
        Direction::Down => Role::Server,
        Direction::Up => Role::Client,
    }
}

/// Flow `f`'s application (both ends), over the transport its
/// `transport.protocol` names; `seed` is the run's (a QUIC connection draws
/// its connection IDs from a stream derived from it and the flow's name).
pub fn flow_app(f: &Flow, seed: u64) -> Box<dyn FlowApp> {
    match f.transport.protocol {
        Protocol::Tcp => build_app(f, sender(f)),
        Protocol::Quic => quic_app(f, sender(f), seed),
    }
}

/// A `bulk`, `file` or `web` flow over the QUIC-style transport: the
/// flow's controller with its options, ECN unless the flow turns it off
/// (RFC 9000 §13.4: QUIC endpoints use and validate ECN), and the transport
/// keys QUIC applies ([`crate::quic::connection_config`]). A web page opens
/// one stream per object and the connection issues no MAX_STREAMS, so the
/// peer allows at least as many streams as objects.
fn quic_app(f: &Flow, sender: Role, seed: u64) -> Box<dyn FlowApp> {
    let mut cfg = crate::quic::connection_config(
        &f.cc,
        &f.transport,
        f.ecn != Some(EcnSpec::Off),
        SimRng::derive(seed, &format!("quic/{}", f.name)).next_u64(),
    );
    match &f.app {
        AppSpec::Bulk => Box::new(QuicFlow::new(QuicApp::Bulk, cfg, sender)),
        AppSpec::File { size } => {
            Box::new(QuicFlow::new(QuicApp::File { size: *size }, cfg, sender))
        }
        AppSpec::Web(w) => {
            let web = web_config(f, w);
            cfg.max_streams_bidi = cfg.max_streams_bidi.max(web.objects.len() as u64);
            Box::new(QuicFlow::with_streams(
                WebStreams::new(web, peer_of(sender)),
                cfg,
                sender,
            ))
        }
        _ => unreachable!("the scenario allows bulk, file and web over QUIC only"),
    }
}

/// The other side.
fn peer_of(side: Role) -> Role {
    match side {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

/// A web flow's objects and request size, whatever carries them.
fn web_config(f: &Flow, w: &WebSpec) -> WebConfig {
    WebConfig {
        request_size: w.request_size,
        // A split-off object's flow starts at its time; `at` counts from the page's start.
        page_start: w.page.as_ref().map_or(f.start, |p| p.start),
        objects: w
            .objects
            .iter()
            .map(|o| WebObject {
                index: o.index,
                size: o.size,
                at: o.at,
                new_connection: o.connection == WebConnection::New,
            })
            .collect(),
        flow: f.name.clone(),
    }
}

/// The application of flow `f`, whose main data goes from `sender`.
fn build_app(f: &Flow, sender: Role) -> Box<dyn FlowApp> {
    match &f.app {
        AppSpec::Bulk => Box::new(OneWay::new(sender, Bulk::new())),
        AppSpec::File { size } => Box::new(OneWay::new(sender, File::new(*size))),
        AppSpec::Ping(p) => Box::new(Ping::new(PingConfig {
            interval: p.interval,
            size: p.size,
            ecn: p.ecn,
            timeout: p.timeout,
        })),
        AppSpec::Cbr(c) => Box::new(Cbr::new(
            CbrConfig {
                rate: c.rate,
                size: c.size,
                ecn: c.ecn,
            },
            sender,
        )),
        AppSpec::ScreenShare(p) if matches!(p.transport, FrameTransport::Rtp { .. }) => {
            screen_share_rtp(p, sender)
        }
        AppSpec::ScreenShare(p) => Box::new(ScreenShare::new(
            ScreenShareConfig {
                frame_size: p.frame_size,
                max_fps: p.max_fps,
                stall_threshold: p.stall_threshold,
            },
            sender,
        )),
        AppSpec::Web(w) => Box::new(Web::new(web_config(f, w), peer_of(sender))),
        AppSpec::CloudGaming(p) | AppSpec::VideoCall(p)
            if matches!(p.transport, FrameTransport::Rtp { .. }) =>
        {
            rtp_app(&f.app, p, sender)
        }
        AppSpec::CloudGaming(p) => Box::new(CloudGaming::new(
            CloudGamingConfig {
                fps: p.fps,
                start_bitrate: p.start_bitrate,
                min_bitrate: p.min_bitrate,
                max_bitrate: p.max_bitrate,
                late_threshold: p.late_threshold,
                stall_threshold: p.stall_threshold,
            },
            sender,
        )),
        AppSpec::VideoCall(p) => Box::new(VideoCall::new(VideoCallConfig {
            fps: p.fps,
            start_bitrate: p.start_bitrate,
            min_bitrate: p.min_bitrate,
            max_bitrate: p.max_bitrate,
            stall_threshold: p.stall_threshold,
            late_threshold: p.late_threshold,
        })),
    }
}

/// A frame app over RTP: one stream from the sender (cloud gaming) or one
/// each way (a video call), with the series names of the TCP variant.
fn rtp_app(app: &AppSpec, p: &FrameAppSpec, sender: Role) -> Box<dyn FlowApp> {
    let mut cfg = RtpConfig::new(
        p.fps,
        p.start_bitrate,
        p.min_bitrate,
        p.max_bitrate,
        p.stall_threshold,
        Some(p.late_threshold),
    );
    with_transport(&mut cfg, p.transport);
    match app {
        AppSpec::VideoCall(_) => Box::new(RtpMedia::new(
            "video_call",
            cfg,
            &[
                (Role::Client, video_call::UP, rtp::RTT_UP),
                (Role::Server, video_call::DOWN, rtp::RTT_DOWN),
            ],
        )),
        _ => Box::new(RtpMedia::new(
            "cloud_gaming",
            cfg,
            &[(sender, cloud_gaming::SERIES, rtp::RTT)],
        )),
    }
}

/// The media controller and playout delay an RTP app's `transport` names.
fn with_transport(cfg: &mut RtpConfig, t: FrameTransport) {
    let FrameTransport::Rtp {
        media_cc,
        playout_delay,
    } = t
    else {
        unreachable!("called for RTP apps only")
    };
    cfg.cc = match media_cc {
        MediaCcSpec::Gcc => MediaCcKind::Gcc,
        MediaCcSpec::Scream { l4s } => MediaCcKind::Scream { l4s },
    };
    cfg.min_playout_delay = playout_delay;
}

/// A screen share over RTP: frames at `max_fps`, at most `frame_size` each
/// (the encoder's ceiling is `frame_size · 8 · max_fps`), adapting down to a
/// tenth of that, starting at the ceiling (docs/apps.md#screen_share).
fn screen_share_rtp(p: &ScreenShareSpec, sender: Role) -> Box<dyn FlowApp> {
    let max = Rate::from_bps(p.frame_size * 8 * u64::from(p.max_fps));
    let mut cfg = RtpConfig::new(
        p.max_fps,
        max,
        Rate::from_bps((max.as_bps() / 10).max(1)),
        max,
        p.stall_threshold,
        None,
    );
    with_transport(&mut cfg, p.transport);
    Box::new(RtpMedia::new(
        "screen_share",
        cfg,
        &[(sender, screen_share::SERIES, rtp::RTT)],
    ))
}
