//! Frame apps over RTP (`transport = "rtp"`): media as real calls and game
//! streams send it — frames packetized into RTP packets over UDP, a media
//! congestion controller ([`l4slab_media::gcc`] or [`l4slab_media::scream`])
//! fed by RFC 8888 reports, NACK retransmissions and keyframe requests, and
//! a playout buffer at the receiver that decides what the user sees.
//!
//! One [`RtpMedia`] is the whole flow: one media stream (cloud gaming,
//! screen sharing: from the flow's sender) or two (a video call: one each
//! way), each a [`sender::Sender`] on one side and a
//! [`receiver::Receiver`] on the other. Datagrams carry a tag: the top two
//! bits say what it is (media, CCFB report, NACK, PLI), the rest its
//! transport-wide sequence number or message id; the receiving half reads a
//! packet's RTP header from the sending half ([`sender::Sender::header`]),
//! as a real receiver parses it (no header bytes are simulated; sizes on
//! the wire are real).
//!
//! Metrics are what the playout buffer played (frame rate, the worst
//! second's frame rate, freezes, stalls, frame latency, late frames) and
//! what the sender saw (loss from the reports, RTT from the reports,
//! retransmissions, queue discards, the controller's state).

pub mod receiver;
pub mod sender;
#[cfg(test)]
mod tests;

use serde_json::Value;

use l4slab_core::{Dur, Rate, Time};
use l4slab_media::ccfb::CcfbConfig;
use l4slab_media::fixed::FixedRate;
use l4slab_media::gcc::{Gcc, GccConfig};
use l4slab_media::playout::PlayoutConfig;
use l4slab_media::scream::{Scream, ScreamConfig};
use l4slab_media::MediaCc;

use crate::framed::FrameTransport;
use crate::rate_control::SeriesNames;
use crate::{Datagram, DatagramsIgnored, FlowApp, FlowIo, Role, SampleSink};
use receiver::{playout_config, Receiver, Rtcp};
use sender::{Sender, SenderConfig};

/// The media congestion controller of an RTP stream (`app.media_cc`,
/// serialized as the scenario writes it: `{ kind = "scream", l4s = true }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MediaCcKind {
    /// Google Congestion Control (classic: delay and loss; Not-ECT).
    Gcc,
    /// SCReAM v2; `l4s`: ECT(1) and the scalable response to CE marks.
    Scream { l4s: bool },
    /// No congestion control: the start rate throughout; `l4s`: ECT(1)
    /// (without a response to CE).
    Fixed { l4s: bool },
}

impl MediaCcKind {
    fn build(self, start: Rate, min: Rate, max: Rate) -> Box<dyn MediaCc> {
        match self {
            MediaCcKind::Gcc => Box::new(Gcc::new(GccConfig {
                start_rate: start,
                min_rate: min,
                max_rate: max,
                ..GccConfig::default()
            })),
            MediaCcKind::Scream { l4s } => Box::new(Scream::new(ScreamConfig {
                start_rate: start,
                min_rate: min,
                max_rate: max,
                l4s,
                ..ScreamConfig::default()
            })),
            MediaCcKind::Fixed { l4s } => Box::new(FixedRate::new(start.clamp(min, max), l4s)),
        }
    }

    /// The report cadence the controller's reference implementation asks for.
    fn ccfb(self) -> CcfbConfig {
        match self {
            MediaCcKind::Gcc | MediaCcKind::Fixed { .. } => CcfbConfig::webrtc(),
            MediaCcKind::Scream { .. } => CcfbConfig::scream(),
        }
    }
}

/// Parameters of a frame app over RTP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtpConfig {
    pub fps: u32,
    pub start_bitrate: Rate,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    pub stall_threshold: Dur,
    /// A frame shown later than this after capture is late (`None`: no such
    /// count, as screen sharing has none).
    pub late_threshold: Option<Dur>,
    pub cc: MediaCcKind,
    /// Playout delay on top of the smallest transit seen (0: play a frame as
    /// soon as it is decodable, as cloud gaming and WebRTC's low-latency
    /// rendering do).
    pub min_playout_delay: Dur,
    /// A keyframe's size in delta frames. Default 4.
    pub keyframe_ratio: u32,
    /// Discard the sender's RTP queue when its head waited this long. Default 100 ms.
    pub queue_discard: Dur,
    /// Pace packets at the controller's pacing rate (`false`: each frame a burst).
    pub pacing: bool,
    /// The receiver gives up a frame this long after its playout time.
    pub playout_deadline: Option<Dur>,
    /// RTCP goes out with the media's ECN codepoint (else Not-ECT).
    pub feedback_ecn_media: bool,
}

impl RtpConfig {
    /// Defaults for a frame app with these encoder limits.
    pub fn new(fps: u32, start: Rate, min: Rate, max: Rate, stall: Dur, late: Option<Dur>) -> Self {
        RtpConfig {
            fps,
            start_bitrate: start,
            min_bitrate: min,
            max_bitrate: max,
            stall_threshold: stall,
            late_threshold: late,
            cc: MediaCcKind::Gcc,
            min_playout_delay: Dur::ZERO,
            keyframe_ratio: 4,
            queue_discard: Dur::from_millis(100),
            pacing: true,
            playout_deadline: None,
            feedback_ecn_media: false,
        }
    }

    /// With the media controller and playout delay of an RTP frame app's
    /// `transport`.
    ///
    /// # Panics
    /// On [`FrameTransport::Tcp`] (a frame app over TCP is not RTP).
    pub fn with_transport(mut self, t: FrameTransport) -> Self {
        let FrameTransport::Rtp {
            media_cc,
            playout_delay,
            pacing,
            playout_deadline,
            feedback_ecn_media,
        } = t
        else {
            panic!("an RTP config for a frame app over TCP")
        };
        self.cc = media_cc;
        self.min_playout_delay = playout_delay;
        self.pacing = pacing;
        self.playout_deadline = playout_deadline;
        self.feedback_ecn_media = feedback_ecn_media;
        self
    }
}

/// Datagram kinds, in the tag's top two bits.
const KIND_SHIFT: u32 = 62;
const MEDIA: u64 = 0;
const REPORT: u64 = 1;
const NACK: u64 = 2;
const PLI: u64 = 3;

fn tag(kind: u64, id: u64) -> u64 {
    debug_assert!(id < 1 << KIND_SHIFT);
    kind << KIND_SHIFT | id
}

fn untag(t: u64) -> (u64, u64) {
    (t >> KIND_SHIFT, t & ((1 << KIND_SHIFT) - 1))
}

/// The RTP-only series of a stream: RTT (mean and max per interval, from
/// its reports) and, with a playout deadline, the fraction of the
/// interval's packets that missed their frame's playout.
#[derive(Clone, Copy, Debug)]
pub struct RttSeries {
    pub mean: &'static str,
    pub max: &'static str,
    pub playout_loss: &'static str,
}

/// RTT series names of a one-stream app and of a call's two directions.
pub const RTT: RttSeries = RttSeries {
    // The flow recorder's key: an RTP flow's RTT is its app's.
    mean: l4slab_bottleneck::flow::FlowKey::RttMs.name(),
    max: "rtt_max_ms",
    playout_loss: "playout_loss_fraction",
};
pub const RTT_UP: RttSeries = RttSeries {
    mean: "rtt_ms.up",
    max: "rtt_max_ms.up",
    playout_loss: "playout_loss_fraction.up",
};
pub const RTT_DOWN: RttSeries = RttSeries {
    mean: "rtt_ms.down",
    max: "rtt_max_ms.down",
    playout_loss: "playout_loss_fraction.down",
};

#[derive(Debug)]
struct Stream {
    /// The side that sends the media.
    from: Role,
    tx: Sender,
    rx: Receiver,
    names: SeriesNames,
    rtt_names: RttSeries,
    next_frame: Option<Time>,
    started: Option<Time>,
}

/// A frame app over RTP (see the module documentation).
#[derive(Debug)]
pub struct RtpMedia {
    kind: &'static str,
    cfg: RtpConfig,
    streams: Vec<Stream>,
    ignored: DatagramsIgnored,
}

impl RtpMedia {
    /// `streams`: the sending side of each media stream with its series names.
    pub fn new(
        kind: &'static str,
        cfg: RtpConfig,
        streams: &[(Role, SeriesNames, RttSeries)],
    ) -> Self {
        let streams = streams
            .iter()
            .map(|&(from, names, rtt_names)| Stream {
                from,
                tx: Sender::new(
                    SenderConfig {
                        fps: cfg.fps,
                        min_bitrate: cfg.min_bitrate,
                        max_bitrate: cfg.max_bitrate,
                        keyframe_ratio: cfg.keyframe_ratio,
                        queue_discard: cfg.queue_discard,
                        history: Dur::from_secs(1),
                        pacing: cfg.pacing,
                    },
                    cfg.cc
                        .build(cfg.start_bitrate, cfg.min_bitrate, cfg.max_bitrate),
                ),
                rx: Receiver::new(
                    cfg.cc.ccfb(),
                    PlayoutConfig {
                        deadline: cfg.playout_deadline,
                        ..playout_config(
                            cfg.stall_threshold,
                            cfg.late_threshold,
                            cfg.min_playout_delay,
                        )
                    },
                ),
                names,
                rtt_names,
                next_frame: None,
                started: None,
            })
            .collect();
        RtpMedia {
            kind,
            cfg,
            streams,
            ignored: DatagramsIgnored::default(),
        }
    }

    fn frame_interval(&self) -> Dur {
        Dur::from_nanos(1_000_000_000 / u64::from(self.cfg.fps))
    }

    /// Everything due on `side` at `now`, then the side's next wake-up.
    fn run(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let iv = self.frame_interval();
        let mut wake: Option<Time> = None;
        let mut want = |t: Option<Time>| {
            if let Some(t) = t {
                wake = Some(wake.map_or(t, |w: Time| w.min(t)));
            }
        };
        for s in &mut self.streams {
            if s.from == side {
                if s.started.is_none() {
                    continue;
                }
                s.tx.on_timer(now);
                while let Some(t) = s.next_frame.filter(|t| *t <= now) {
                    s.tx.on_frame(now);
                    s.next_frame = Some(t + iv);
                }
                let ecn = s.tx.cc().ecn();
                let pending = loop {
                    match s.tx.poll_send(now) {
                        Ok(out) => io.send_datagram(Datagram {
                            payload: out.wire - Datagram::HEADER_BYTES,
                            ecn,
                            tag: tag(MEDIA, out.header.transport_seq),
                        }),
                        Err(next) => break next,
                    }
                };
                want(pending);
                want(s.next_frame);
                want(s.tx.next_timer());
            } else {
                if let Some(rtt) = s.tx.srtt() {
                    s.rx.set_rtt(rtt);
                }
                // SCReAM's reference receiver and libwebrtc send RTCP Not-ECT.
                let fb_ecn = if self.cfg.feedback_ecn_media {
                    s.tx.cc().ecn()
                } else {
                    l4slab_core::Ecn::NotEct
                };
                s.rx.poll(now, &mut |m, bytes| {
                    let t = match m {
                        Rtcp::Report(id) => tag(REPORT, id),
                        Rtcp::Nack(id) => tag(NACK, id),
                        Rtcp::Pli => tag(PLI, 0),
                    };
                    io.send_datagram(Datagram {
                        payload: bytes - Datagram::HEADER_BYTES,
                        ecn: fb_ecn,
                        tag: t,
                    });
                });
                want(s.rx.next_wake());
            }
        }
        if let Some(t) = wake {
            io.wake_at(t.max(now));
        }
    }
}

impl FlowApp for RtpMedia {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn uses_connection(&self) -> bool {
        false
    }

    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        for s in &mut self.streams {
            if s.from == side {
                s.started = Some(now);
                s.next_frame = Some(now);
            } else {
                s.rx.start(now);
            }
        }
        self.run(now, side, io);
    }

    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.run(now, side, io);
    }

    fn on_datagram(&mut self, now: Time, side: Role, dg: Datagram, io: &mut dyn FlowIo) {
        let (kind, id) = untag(dg.tag);
        // Network input: a kind this side never receives, or a message the
        // other side never sent, is counted and ignored (`datagrams_ignored`).
        let mut known = false;
        for i in 0..self.streams.len() {
            let s = &mut self.streams[i];
            match kind {
                MEDIA if s.from != side => {
                    // A packet older than the sender's header ring (2^16
                    // packets, RTP's sequence space) is too late to use; a
                    // duplicate is counted by the report generator and the
                    // playout buffer (`duplicate_packets`).
                    known = id < s.tx.packets_numbered();
                    if let Some(h) = s.tx.header(id) {
                        s.rx.on_packet(now, id, dg.ecn, h.media);
                    }
                }
                REPORT if s.from == side => {
                    // A report id not yet used would recycle every kept report.
                    known = s.rx.sent_rtcp(id);
                    if let Some(r) = known.then(|| s.rx.take_report(id)).flatten() {
                        s.tx.on_report(now, &r);
                        s.rx.recycle(r);
                    }
                }
                NACK if s.from == side => {
                    known = s.rx.sent_rtcp(id);
                    if let Some(list) = s.rx.nack_list(id) {
                        for &seq in list {
                            s.tx.on_nack(now, seq);
                        }
                    }
                }
                PLI if s.from == side && id == 0 => {
                    known = true;
                    s.tx.on_keyframe_request();
                }
                _ => continue,
            }
            break;
        }
        if !known {
            self.ignored.unknown += 1;
        }
        self.run(now, side, io);
    }

    fn datagrams_ignored(&self) -> DatagramsIgnored {
        self.ignored
    }

    fn report(&self, end: Time) -> Value {
        let one = |s: &Stream| {
            let active = s
                .started
                .map_or(0.0, |t| end.saturating_since(t).as_secs_f64());
            let mut r = s.rx.report(end);
            let tx = s.tx.report(active);
            // The frame metrics' sender-side keys (docs/apps.md), as over TCP.
            r["frames_captured"] = tx["frames_encoded"].clone();
            r["bitrate_bps"] = tx["bitrate_bps"].clone();
            r["sender"] = tx;
            r
        };
        let mut r = if self.streams.len() == 1 {
            one(&self.streams[0])
        } else {
            let mut m = serde_json::Map::new();
            for s in &self.streams {
                let dir = if s.from == Role::Client { "up" } else { "down" };
                m.insert(dir.into(), one(s));
            }
            Value::Object(m)
        };
        r["fps"] = self.cfg.fps.into();
        r["transport"] = "rtp".into();
        r
    }

    fn sample(&mut self, now: Time, interval: Dur, out: &mut SampleSink<'_>) {
        let iv = interval.as_secs_f64();
        for s in &mut self.streams {
            let played = s.rx.playout_mut().take_interval();
            let (shown, latency) = (played.frames_displayed, played.latency_mean_ms);
            let bytes = s.tx.take_interval_bytes();
            if s.started.is_none() {
                continue;
            }
            out(s.names.frame_rate, shown as f64 / iv);
            out(s.names.bitrate, bytes as f64 * 8.0 / iv);
            out(s.names.target, s.tx.target().as_bps() as f64);
            if let Some(ms) = latency {
                out(s.names.latency, ms);
            }
            if let Some((mean, max)) = s.tx.take_rtt_interval() {
                out(s.rtt_names.mean, mean);
                out(s.rtt_names.max, max);
            }
            if self.cfg.playout_deadline.is_some() {
                if let Some(f) = played.missed_fraction() {
                    out(s.rtt_names.playout_loss, f);
                }
            }
        }
        if let [s] = self.streams.as_mut_slice() {
            s.tx_cc_sample(now, out);
        }
    }
}

impl Stream {
    fn tx_cc_sample(&mut self, now: Time, out: &mut SampleSink<'_>) {
        self.tx.cc_mut().sample(now, out);
    }
}
