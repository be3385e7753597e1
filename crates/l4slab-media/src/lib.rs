//! Real-time media as it travels: RTP-style packets over datagrams, the
//! receiver's congestion-control feedback (RFC 8888), media congestion
//! controllers, and the receiver's playout buffer.
//!
//! Everything here is sans-IO: `now` is passed in, nothing reads a clock or
//! owns a socket. The simulator's apps (`l4slab-app`) drive it today; a
//! real-time driver over UDP sockets can drive the same code.
//!
//! * [`MediaCc`]: what a media congestion controller is to the sender — it
//!   sees each packet leave and each feedback report arrive, and answers
//!   with an encoder target rate, a pacing rate and (optionally) a window.
//!   [`gcc`] (Google Congestion Control, draft-ietf-rmcat-gcc-02 and
//!   libwebrtc) and [`scream`] (SCReAM v2 with L4S, RFC 8298 and
//!   draft-ietf-ccwg-rfc8298bis-screamv2) implement it; [`fixed`] is a
//!   sender without congestion control (a constant bitrate).
//! * [`PacketReport`] / [`Feedback`]: one report as the sender decodes it —
//!   per packet: arrival time (receiver clock) or lost, and the ECN field it
//!   arrived with (RFC 8888 §3.1).
//! * [`rtp`]: packet sizes and headers; [`ccfb`]: the RFC 8888 report
//!   generator (receiver) and send history (sender).
//! * [`playout`]: the receiver's frame buffer — which frames play, when,
//!   and which freeze or are skipped; NACK and keyframe requests.
//! * [`viewer`]: what the viewer sees of the displayed frames (latency,
//!   stalls, late frames) — one rule for RTP playout and for frames over a
//!   byte stream (`l4slab-app`'s `FrameStream`).
//!
//! Clocks: the sender's and receiver's clocks may differ by a constant
//! offset. Controllers use only differences of arrival times, or one-way
//! delays relative to their own minimum, never an arrival time against a
//! send time directly (as real senders must).

use core::fmt;

use serde_json::Value;

use l4slab_core::{Ecn, Rate, Time};

pub mod ccfb;
pub mod fixed;
pub mod gcc;
pub mod playout;
pub mod rtp;
pub mod scream;
pub mod viewer;

/// What the sender learns about one media packet from a feedback report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketReport {
    /// Transport-wide sequence number: one per packet the session sends
    /// (media, retransmissions and padding alike), increasing by one, never
    /// reused (RFC 8888's per-SSRC sequence number extended to 64 bits).
    pub seq: u64,
    /// Bytes on the wire (IP + UDP + RTP headers + payload).
    pub size: u32,
    /// When the sender sent it (sender clock).
    pub sent: Time,
    /// When it arrived (receiver clock, at the feedback format's resolution:
    /// RFC 8888 carries 1/1024 s), or `None` if the report says it was not
    /// received although a later packet was (the sender's loss verdict).
    pub arrival: Option<Time>,
    /// The IP-ECN field it arrived with; `NotEct` when lost.
    pub ecn: Ecn,
}

impl PacketReport {
    pub fn lost(&self) -> bool {
        self.arrival.is_none()
    }
}

/// One feedback report as it reaches the sender.
#[derive(Clone, Copy, Debug)]
pub struct Feedback<'a> {
    /// When the receiver generated the report (receiver clock; RFC 8888's
    /// Report Timestamp). `now - sent` of the newest packet minus
    /// `report_time - arrival` of that packet is an RTT sample.
    pub report_time: Time,
    /// Packets newly reported, in increasing `seq`. Each packet appears in
    /// at most one report as received and at most once as lost; a packet
    /// reported lost never reappears (a late arrival is not re-reported).
    pub packets: &'a [PacketReport],
}

/// Receives the values a controller reports for one sampling interval, as
/// `(series name, value)` pairs (the flow's series in `series.parquet`).
pub type SampleSink<'a> = dyn FnMut(&'static str, f64) + 'a;

/// A media congestion controller, as the sender uses it.
///
/// Protocol: the sender calls [`MediaCc::on_sent`] for every packet as it
/// leaves (after the pacer), [`MediaCc::on_feedback`] for every report that
/// arrives, and [`MediaCc::on_timer`] when [`MediaCc::next_timer`] is due.
/// Between calls it reads [`MediaCc::target_rate`] when it encodes a frame,
/// [`MediaCc::pacing_rate`] to space packets, and [`MediaCc::window`] to
/// hold packets back while that many bytes are in flight.
pub trait MediaCc: fmt::Debug + Send {
    /// Stable identifier, as the scenario names it (`"gcc"`, `"scream"`).
    fn name(&self) -> &'static str;
    /// A packet of `size` wire bytes with transport-wide number `seq` left.
    fn on_sent(&mut self, now: Time, seq: u64, size: u32);
    /// A feedback report arrived.
    fn on_feedback(&mut self, now: Time, fb: &Feedback<'_>);
    /// A wake-up the controller asked for with [`MediaCc::next_timer`].
    fn on_timer(&mut self, now: Time) {
        let _ = now;
    }
    /// When the controller next needs [`MediaCc::on_timer`]; `None`: never.
    fn next_timer(&self) -> Option<Time> {
        None
    }
    /// The rate the encoder should produce now (media payload bits/s).
    fn target_rate(&self) -> Rate;
    /// The rate the pacer may send at now (wire bits/s).
    fn pacing_rate(&self) -> Rate;
    /// Bytes that may be in flight; `u64::MAX` for a purely rate-based
    /// controller. The sender counts as in flight the packets no report has
    /// passed yet ([`ccfb::History::in_flight`]); a packet whose report was
    /// lost leaves the flight without a verdict when a later report passes
    /// it, and is never given to [`MediaCc::on_feedback`].
    fn window(&self) -> u64 {
        u64::MAX
    }
    /// Whether packets should be sent ECN-capable, and with which codepoint
    /// (`Ect1` for an L4S controller, `NotEct` for a classic one).
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    /// Counters and final state for `summary.json`.
    fn report(&self) -> Value {
        Value::Null
    }
    /// Values for the interval ending at `now`.
    fn sample(&mut self, now: Time, out: &mut SampleSink<'_>) {
        let _ = (now, out);
    }
}
