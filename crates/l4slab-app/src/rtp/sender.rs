//! The sending half of one RTP media stream: frame clock and encoder,
//! packetizer, RTP queue and pacer, retransmissions, and the congestion
//! controller it all answers to.
//!
//! * **Encoder.** Every `1/fps` a frame of `target / fps` bytes is captured
//!   (`keyframe_ratio` times that for a keyframe: the first frame and the
//!   one after a keyframe request or a queue discard), at the controller's
//!   [`MediaCc::target_rate`] clamped to the configured limits.
//! * **Packetizer** ([`l4slab_media::rtp::split`]): equal packets of at most
//!   1,200 B of UDP payload; the last carries the marker bit.
//! * **RTP queue and pacer.** Packets wait in a FIFO (retransmissions go to
//!   its head, as libwebrtc's pacer sends them first) and leave at the
//!   controller's pacing rate, never with more than
//!   [`MediaCc::window`] bytes in flight (`pacing = false`: no pacer, a
//!   frame's packets leave back to back as the window allows — a sender
//!   that writes each encoded frame to its socket at once). When the oldest queued packet has
//!   waited longer than `queue_discard` at a frame tick, the queue is
//!   discarded and the next frame is a keyframe (RFC 8298 §4.1.3: a sender
//!   SHOULD discard RTP packets that are excessively delayed when the
//!   throughput becomes very low; the 100 ms default is a choice. libwebrtc
//!   instead drops frames in the encoder — one rule for both controllers
//!   here, stated in docs/models/rtp.md).
//! * **Retransmission** (RFC 4585 generic NACK, RFC 4588 RTX): a NACKed
//!   packet still in the history (the last `history` of media packets) is
//!   resent unless it was sent less than one RTT ago (libwebrtc
//!   `RTPSender::ReSendPacket`'s minimum resend time), and only while the
//!   retransmissions of the last second stay within the controller's target
//!   rate (libwebrtc's `retransmission_rate_limiter_`, a 1 s window whose
//!   maximum `RtpTransportControllerSend` sets to the bandwidth estimate).

use std::collections::VecDeque;

use serde_json::{json, Value};

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Rate, Time};
use l4slab_media::ccfb::{History, Report};
use l4slab_media::playout::MediaPacket;
use l4slab_media::rtp::{self, RtpHeader};
use l4slab_media::{Feedback, MediaCc, PacketReport};

/// Headers kept for packets in the network (the receiving side reads a
/// packet's header here when it arrives): enough for 2^16 packets, the RTP
/// sequence number space, far more than any path in l4slab holds.
const HEADER_RING: usize = 1 << 16;

/// The sending half's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderConfig {
    pub fps: u32,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    /// A keyframe's size in delta frames at the same target.
    pub keyframe_ratio: u32,
    /// Discard the RTP queue when its head has waited this long.
    pub queue_discard: Dur,
    /// How long sent media packets stay available for retransmission.
    pub history: Dur,
    /// Space packets at the controller's pacing rate; `false`: send what the
    /// window allows at once (each frame a burst at the sender's line rate).
    pub pacing: bool,
}

#[derive(Clone, Copy, Debug)]
struct Stored {
    media: MediaPacket,
    sent: Time,
    last_resent: Option<Time>,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    header: RtpHeader,
    since: Time,
}

/// One packet ready to go on the wire.
#[derive(Clone, Copy, Debug)]
pub struct Outgoing {
    pub header: RtpHeader,
    pub wire: u32,
}

/// The sending half (see the module documentation).
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    cc: Box<dyn MediaCc>,
    history: History,
    headers: VecDeque<RtpHeader>,
    queue: VecDeque<Queued>,
    store: VecDeque<Stored>,
    reports: Vec<PacketReport>,
    /// Retransmissions of the last second: (when, wire bytes).
    rtx_window: VecDeque<(Time, u32)>,
    rtx_window_bytes: u64,
    next_transport: u64,
    next_media: u64,
    frame: u64,
    keyframe_due: bool,
    next_send: Time,
    srtt: Option<Dur>,
    rtt: DurStats,
    // Counters.
    frames_encoded: u64,
    keyframes: u64,
    bytes_encoded: u64,
    packets_sent: u64,
    retransmissions: u64,
    nacks_received: u64,
    rtx_rate_limited: u64,
    keyframe_requests: u64,
    discards: u64,
    packets_discarded: u64,
    int_bytes_encoded: u64,
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc: Box<dyn MediaCc>) -> Self {
        Sender {
            cfg,
            cc,
            history: History::new(),
            headers: VecDeque::with_capacity(1024),
            queue: VecDeque::with_capacity(256),
            store: VecDeque::with_capacity(1024),
            reports: Vec::with_capacity(256),
            rtx_window: VecDeque::with_capacity(256),
            rtx_window_bytes: 0,
            next_transport: 0,
            next_media: 0,
            frame: 0,
            keyframe_due: true,
            next_send: Time::ZERO,
            srtt: None,
            rtt: DurStats::new(1_000, 1_000_000_000),
            frames_encoded: 0,
            keyframes: 0,
            bytes_encoded: 0,
            packets_sent: 0,
            retransmissions: 0,
            nacks_received: 0,
            rtx_rate_limited: 0,
            keyframe_requests: 0,
            discards: 0,
            packets_discarded: 0,
            int_bytes_encoded: 0,
        }
    }

    pub fn cc(&self) -> &dyn MediaCc {
        self.cc.as_ref()
    }

    pub fn cc_mut(&mut self) -> &mut dyn MediaCc {
        self.cc.as_mut()
    }

    /// The encoder's current target.
    pub fn target(&self) -> Rate {
        self.cc
            .target_rate()
            .clamp(self.cfg.min_bitrate, self.cfg.max_bitrate)
    }

    /// Transport-wide sequence numbers used so far (the next packet's).
    pub fn packets_numbered(&self) -> u64 {
        self.next_transport
    }

    /// The header of packet `transport_seq`, for the receiving side.
    pub fn header(&self, transport_seq: u64) -> Option<RtpHeader> {
        let first = self.headers.front()?.transport_seq;
        self.headers
            .get(transport_seq.checked_sub(first)? as usize)
            .copied()
    }

    /// Frame tick: capture and packetize one frame.
    pub fn on_frame(&mut self, now: Time) {
        if let Some(head) = self.queue.front() {
            if now.saturating_since(head.since) > self.cfg.queue_discard {
                self.discards += 1;
                self.packets_discarded += self.queue.len() as u64;
                self.queue.clear();
                self.keyframe_due = true;
            }
        }
        let keyframe = std::mem::take(&mut self.keyframe_due);
        let per_frame = self.target().as_bps() / 8 / u64::from(self.cfg.fps);
        let bytes = (per_frame
            * if keyframe {
                u64::from(self.cfg.keyframe_ratio)
            } else {
                1
            })
        .clamp(1, u64::from(u32::MAX / 2)) as u32;
        let capture = rtp::rtp_clock(now);
        let (n, size) = rtp::split(bytes);
        for i in 0..n {
            let media = MediaPacket {
                seq: self.next_media,
                frame: self.frame,
                first: i == 0,
                last: i + 1 == n,
                keyframe,
                capture,
                payload: size(i),
                rtx: false,
            };
            self.next_media += 1;
            self.queue.push_back(Queued {
                header: RtpHeader {
                    transport_seq: 0,
                    media,
                    retransmission: false,
                },
                since: now,
            });
        }
        self.frame += 1;
        self.frames_encoded += 1;
        self.keyframes += u64::from(keyframe);
        self.bytes_encoded += u64::from(bytes);
        self.int_bytes_encoded += u64::from(bytes);
    }

    /// The next packet the pacer and window allow at `now`, or when to ask
    /// again (`Err(Some(t))`; `Err(None)`: wait for feedback or a frame).
    pub fn poll_send(&mut self, now: Time) -> Result<Outgoing, Option<Time>> {
        let Some(q) = self.queue.front() else {
            return Err(None);
        };
        if self.cfg.pacing && now < self.next_send {
            return Err(Some(self.next_send));
        }
        let wire = q.header.wire_bytes();
        if self.history.in_flight() + u64::from(wire) > self.cc.window()
            && self.history.in_flight() > 0
        {
            return Err(None);
        }
        let mut header = self.queue.pop_front().expect("checked").header;
        header.transport_seq = self.next_transport;
        self.next_transport += 1;
        self.history.on_sent(now, header.transport_seq, wire);
        self.cc.on_sent(now, header.transport_seq, wire);
        self.headers.push_back(header);
        if self.headers.len() > HEADER_RING {
            self.headers.pop_front();
        }
        if header.retransmission {
            self.retransmissions += 1;
        } else {
            self.store.push_back(Stored {
                media: header.media,
                sent: now,
                last_resent: None,
            });
            while self
                .store
                .front()
                .is_some_and(|s| now.saturating_since(s.sent) > self.cfg.history)
            {
                self.store.pop_front();
            }
        }
        self.packets_sent += 1;
        // Leaky-bucket pacing at the controller's rate.
        let pace = self.cc.pacing_rate().max(Rate::from_kbps(10));
        self.next_send = self.next_send.max(now) + pace.tx_time(u64::from(wire));
        Ok(Outgoing { header, wire })
    }

    /// A feedback report arrived.
    pub fn on_report(&mut self, now: Time, report: &Report) {
        let mut reports = std::mem::take(&mut self.reports);
        self.history.on_report(report, &mut reports);
        // RTT from the newest packet received: now − sent − (RTS − arrival).
        if let Some(p) = reports.iter().rev().find(|p| !p.lost()) {
            let hold = report
                .report_time
                .saturating_since(p.arrival.expect("received"));
            let rtt = now.saturating_since(p.sent).saturating_sub(hold);
            self.rtt.record(rtt);
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(s) => Dur::from_nanos((s.as_nanos() * 7 + rtt.as_nanos()) / 8),
            });
        }
        self.cc.on_feedback(
            now,
            &Feedback {
                report_time: report.report_time,
                packets: &reports,
            },
        );
        self.reports = reports;
    }

    /// A generic NACK for media packet `seq`.
    pub fn on_nack(&mut self, now: Time, seq: u64) {
        self.nacks_received += 1;
        let rtt = self.srtt.unwrap_or(Dur::from_millis(100));
        // The history is in sequence order with gaps where a queue discard
        // dropped packets that were never sent.
        let Ok(i) = self.store.binary_search_by_key(&seq, |s| s.media.seq) else {
            return;
        };
        let s = &mut self.store[i];
        if s.last_resent.is_some_and(|t| now.saturating_since(t) < rtt) {
            return;
        }
        // The retransmission rate limiter: at most the target's worth of
        // retransmitted bytes in any second.
        while self
            .rtx_window
            .front()
            .is_some_and(|&(t, _)| now.saturating_since(t) >= Dur::from_secs(1))
        {
            let (_, b) = self.rtx_window.pop_front().expect("non-empty");
            self.rtx_window_bytes -= u64::from(b);
        }
        let wire = rtp::OVERHEAD_BYTES + s.media.payload + rtp::RTX_OSN_BYTES;
        let budget = self.cc.target_rate().as_bps() / 8;
        if self.rtx_window_bytes + u64::from(wire) > budget {
            self.rtx_rate_limited += 1;
            return;
        }
        self.rtx_window.push_back((now, wire));
        self.rtx_window_bytes += u64::from(wire);
        s.last_resent = Some(now);
        let header = RtpHeader {
            transport_seq: 0,
            media: MediaPacket {
                rtx: true,
                ..s.media
            },
            retransmission: true,
        };
        self.queue.push_front(Queued { header, since: now });
    }

    /// A picture loss indication: the next frame is a keyframe.
    pub fn on_keyframe_request(&mut self) {
        self.keyframe_requests += 1;
        self.keyframe_due = true;
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    pub fn next_timer(&self) -> Option<Time> {
        self.cc.next_timer()
    }

    pub fn on_timer(&mut self, now: Time) {
        if self.cc.next_timer().is_some_and(|t| t <= now) {
            self.cc.on_timer(now);
        }
    }

    /// Mean and max RTT (ms) of the reports since the last call.
    pub fn take_rtt_interval(&mut self) -> Option<(f64, f64)> {
        self.rtt.take_interval()
    }

    /// Bits encoded per second over the interval.
    pub fn take_interval_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.int_bytes_encoded)
    }

    pub fn report(&self, active: f64) -> Value {
        json!({
            "frames_encoded": self.frames_encoded,
            "keyframes": self.keyframes,
            "bitrate_bps": if active > 0.0 { (self.bytes_encoded as f64 * 8.0 / active).round() } else { 0.0 },
            "packets_sent": self.packets_sent,
            "retransmissions": self.retransmissions,
            "nacks_received": self.nacks_received,
            "retransmissions_rate_limited": self.rtx_rate_limited,
            "keyframe_requests_received": self.keyframe_requests,
            "queue_discards": self.discards,
            "packets_discarded": self.packets_discarded,
            "packets_acked": self.history.acked,
            "packets_lost": self.history.lost,
            "packet_loss_pct": if self.history.acked + self.history.lost > 0 {
                round6(100.0 * self.history.lost as f64 / (self.history.acked + self.history.lost) as f64)
            } else { 0.0 },
            "packets_unreported": self.history.take_unreported(),
            "rtt_ms": self.rtt.summary_ms(),
            "target_bps_at_end": self.target().as_bps(),
            "cc": self.cc.name(),
            "cc_state": self.cc.report(),
        })
    }
}
