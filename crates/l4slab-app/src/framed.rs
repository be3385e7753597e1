//! A frame app and how its frames travel: `transport = "tcp"` (the flow's
//! congestion-controlled connection) or `"rtp"` (RTP over UDP with a media
//! congestion controller, `media_cc`, and a playout buffer,
//! `playout_delay`; [`crate::rtp`]). `screen_share`, `cloud_gaming` and
//! `video_call` are [`Framed`] configs; their parameter lists end with
//! [`TRANSPORT_PARAMS`] (docs/apps.md#rtp-transport).

use serde::Serialize;

use l4slab_core::param::{Configure, Kind, Param, ParamValue};
use l4slab_core::Dur;

use crate::rtp::MediaCcKind;

/// `transport`: how the frames travel.
pub const TRANSPORT: Param = Param::new(
    "transport",
    Kind::Choice(&["tcp", "rtp"]),
    ParamValue::Choice("tcp"),
    "l4slab: the apps' TCP variants came first",
    "`\"tcp\"`: the flow's connection; `\"rtp\"`: RTP over UDP with a media congestion controller and a playout buffer",
);

/// `media_cc`: the media controller of an RTP frame app.
pub const MEDIA_CC: Param = Param::new(
    "media_cc",
    Kind::Custom(
        "`\"gcc\"`, `\"scream\"`, `{ kind = \"scream\", l4s = false }` or `{ kind = \"fixed\", l4s = false }`",
    ),
    ParamValue::Choice("gcc"),
    "WebRTC's controller, GCC",
    "with `\"rtp\"`: GCC (delay gradient and loss, Not-ECT; [gcc.md](models/gcc.md)), SCReAM v2 with L4S (ECT(1), a scalable response to CE; [scream.md](models/scream.md)), or SCReAM on delay and loss (`l4s = false`, Not-ECT); `\"fixed\"`: no congestion control, the encoder at `start_bitrate` throughout (Not-ECT; `l4s = true`: ECT(1) without a response to CE, a sensitivity only; [rtp.md](models/rtp.md#variants-for-senders-and-receivers-that-are-not-webrtcs))",
);

/// `playout_delay`: the receiver's playout delay over the smallest transit.
pub const PLAYOUT_DELAY: Param = Param::new(
    "playout_delay",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::ZERO),
    "WebRTC's low-latency rendering (play as soon as decodable)",
    "with `\"rtp\"`: the receiver plays a frame this long after the earliest it could (the smallest transit seen); 0 plays each frame as soon as it is decodable",
)
.linux_name("playout-delay");

/// `pacing`: whether the RTP sender paces its packets.
pub const PACING: Param = Param::new(
    "pacing",
    Kind::Flag,
    ParamValue::Flag(true),
    "libwebrtc's pacer (`PacingController`), SCReAM's packet pacing (RFC 8298 §4.1.2.3)",
    "with `\"rtp\"`: `true` spaces packets at the media controller's pacing rate; `false` sends each frame's packets back to back as the encoder emits them (a sender without a pacer: every frame a burst at the sender's line rate)",
);

/// `playout_deadline`: how late past its playout time a frame may complete.
pub const PLAYOUT_DEADLINE: Param = Param::new(
    "playout_deadline",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::ZERO),
    "libwebrtc's frame buffer waits for every repair (0); a fixed jitter buffer gives up at the playout time",
    "with `\"rtp\"`: a frame still incomplete this long after its playout time is given up (late = lost: its missing packets count as lost, the decoding chain breaks until a keyframe), reported as `playout_loss_pct` and the series `playout_loss_fraction`; 0: no deadline, wait for every repair",
)
.linux_name("playout-deadline");

/// `feedback_ecn`: the IP-ECN field of the receiver's RTCP messages.
pub const FEEDBACK_ECN: Param = Param::new(
    "feedback_ecn",
    Kind::Choice(&["not_ect", "media"]),
    ParamValue::Choice("not_ect"),
    "SCReAM's reference receiver and libwebrtc send RTCP Not-ECT",
    "with `\"rtp\"`: `\"not_ect\"`: feedback, NACKs and keyframe requests go out Not-ECT (in DualPI2 they wait in the C queue); `\"media\"`: with the media's codepoint (ECT(1) for an L4S call: the L queue)",
)
.linux_name("feedback-ecn");

/// The keys every frame app takes after its own.
pub const TRANSPORT_PARAMS: [Param; 6] = [
    TRANSPORT,
    MEDIA_CC,
    PLAYOUT_DELAY,
    PACING,
    PLAYOUT_DEADLINE,
    FEEDBACK_ECN,
];

/// A frame app's parameter list: its `own` keys, then [`TRANSPORT_PARAMS`]
/// (`N` must be `M + 6`; a wrong `N` fails the build).
pub const fn with_transport<const M: usize, const N: usize>(own: [Param; M]) -> [Param; N] {
    assert!(N == M + TRANSPORT_PARAMS.len());
    let mut all = [TRANSPORT; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < M {
            own[i]
        } else {
            TRANSPORT_PARAMS[i - M]
        };
        i += 1;
    }
    all
}

/// The `kind` names of [`MEDIA_CC`].
pub const MEDIA_CCS: &[&str] = &["gcc", "scream", "fixed"];

/// How a frame app's frames travel (`app.transport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FrameTransport {
    /// Over the flow's congestion-controlled TCP connection.
    #[default]
    Tcp,
    /// RTP over UDP with a media congestion controller (`app.media_cc`) and
    /// a playout buffer (`app.playout_delay`).
    Rtp {
        media_cc: MediaCcKind,
        playout_delay: Dur,
        /// `app.pacing` (serialized only when off).
        #[serde(skip_serializing_if = "is_true")]
        pacing: bool,
        /// `app.playout_deadline` (serialized only when set).
        #[serde(skip_serializing_if = "Option::is_none")]
        playout_deadline: Option<Dur>,
        /// `app.feedback_ecn = "media"` (serialized only when set).
        #[serde(skip_serializing_if = "is_false")]
        feedback_ecn_media: bool,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

impl FrameTransport {
    /// RTP with `media_cc`, `playout_delay` and the defaults of the other keys
    /// (paced, no playout deadline).
    pub fn rtp(media_cc: MediaCcKind, playout_delay: Dur) -> Self {
        FrameTransport::Rtp {
            media_cc,
            playout_delay,
            pacing: true,
            playout_deadline: None,
            feedback_ecn_media: false,
        }
    }
}

/// A frame app's own config and its [`FrameTransport`], serialized as one
/// table (the app's keys and `transport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Framed<C> {
    #[serde(flatten)]
    pub app: C,
    pub transport: FrameTransport,
}

impl<C> Framed<C> {
    /// Whether the frames travel as RTP over UDP.
    pub fn is_rtp(&self) -> bool {
        matches!(self.transport, FrameTransport::Rtp { .. })
    }
}

/// The app's own parameters; the [`TRANSPORT_PARAMS`] go together (a
/// `media_cc` needs `transport = "rtp"`), so the scenario resolver sets
/// [`Framed::transport`] itself.
impl<C: Configure> Configure for Framed<C> {
    fn set(&mut self, name: &str, v: ParamValue) -> bool {
        self.app.set(name, v)
    }
}
