//! The receiver's playout (frame) buffer for RTP video: which frames render,
//! when, and which are dropped; the NACKs and keyframe requests it sends.
//!
//! Sources: libwebrtc, as summarised in REFERENCES §6.C6 (`WRTC`:
//! `video_quality_observer2.cc`, `video_receive_stream2.{h,cc}`, the frame
//! buffer's decodability rule), plus `modules/video_coding/nack_requester.cc`
//! read from a stored copy of the source (see `nack.rs`).
//!
//! # Protocol
//!
//! The receiver calls [`Playout::start`] when it starts expecting frames
//! (otherwise the first packet's arrival starts it), [`Playout::on_packet`]
//! for every media packet that arrives (retransmissions included),
//! [`Playout::set_rtt`] when its RTT estimate changes, and
//! [`Playout::poll`] after each of those and whenever
//! [`Playout::next_wake`] is due. `poll` hands out, in order, the NACKs due,
//! the frames to render (`at` is the `now` of that call), and a keyframe
//! request. Everything is sans-IO: no clock is read.
//!
//! Clocks: `capture` is on the sender's clock, arrivals on the receiver's;
//! they may differ by a constant offset, which the smallest transit absorbs
//! (frame latency = render − capture is meaningful only when they agree, as
//! in the simulator).
//!
//! # Rules
//!
//! * **Complete**: a frame is complete when every sequence number from its
//!   `first` packet to its `last` (marker) packet has arrived, in any order.
//!   Duplicates (same `seq`) are counted and ignored.
//! * **Decodable** (C6 frame buffer: "decodable only when complete and its
//!   references are decoded"): complete, and a keyframe or its predecessor
//!   was decoded — an IPPP chain where each delta frame references the one
//!   before. The first frame must be a keyframe.
//! * **Render time** of a decodable frame: `max(now, capture + delay)`, with
//!   `delay = smallest transit + min_delay + jitter allowance`. The transit
//!   of a frame is `completion − capture` (clock offset plus base delay plus
//!   the frame's own transmission); the smallest over the run is kept.
//!   `min_delay = 0` renders as soon as decodable after the fastest frame's
//!   transit, as cloud gaming and WebRTC's low-latency mode do. The jitter
//!   allowance (off by default) is the 95th percentile (nearest rank) of
//!   the last [`JITTER_WINDOW`] complete frames' transit above the smallest
//!   — NetEq's target level uses the 0.95 quantile of arrival delay (C6,
//!   `delay_manager.h`, second-hand); libwebrtc video's Kalman jitter
//!   estimator is not modelled. Retransmitted frames count, so frequent
//!   repairs raise the allowance.
//! * **Order**: frames render in frame order, every decodable frame, so a
//!   backlog released by a repair renders in one burst at the repair's
//!   arrival. A frame that can never be decoded is dropped at once: a delta
//!   frame after a dropped frame ([`FrameDrop::Undecodable`]) or a frame
//!   whose missing packets are all given up ([`FrameDrop::Incomplete`]).
//!   When the oldest frame waits for a repair and a later **keyframe** is
//!   complete and due, the frames before the keyframe are dropped
//!   (complete ones as undecodable, the rest as incomplete) — in an IPPP
//!   chain only a keyframe can be decodable past an undecoded frame.
//! * **Loss and NACK** (`nack_requester.cc`, see `nack.rs`): a gap in `seq`
//!   NACKs each missing number at once (one [`PlayoutEvent::Nack`] each),
//!   again after each RTT (initially `kDefaultRtt` = 100 ms, then
//!   [`Playout::set_rtt`]), at most `nack_max_retries` (= `kMaxNackRetries`
//!   = 10) times; after the last NACK a retransmission may still arrive for
//!   one RTT, then the packet is given up. Without NACK a missing packet is
//!   given up after `reorder_wait`. A frame can never complete when no
//!   packet that may be its own is still awaited: its range is
//!   `first..=last` where known, else bounded by its neighbours' packets.
//!   Numbers of rendered or dropped frames are forgotten (`ClearUpTo`).
//!   Numbers below the first packet received are unknown (libwebrtc never
//!   NACKs them): a frame reaching below it may complete for `reorder_wait`
//!   after the first arrival; one that arrives below it NACKs the numbers
//!   between.
//! * **Playout deadline** (`deadline`, off by default: libwebrtc waits for
//!   every repair): an incomplete head frame is given up (dropped as
//!   incomplete, its missing numbers no longer NACKed) once `now` passes its
//!   due time plus the deadline — late is lost, as in a fixed jitter buffer.
//!   With a deadline the report adds `playout_loss_pct`: of the sequence
//!   numbers whose frame was rendered or dropped, the share that had not
//!   arrived by then (lost, or later than the deadline).
//! * **Keyframe request**: when the chain is broken (a frame was dropped and
//!   no keyframe has decoded since) and no keyframe is on its way (none in
//!   the buffer that may still complete), send [`PlayoutEvent::KeyframeRequest`],
//!   then again at most every `max(RTT, keyframe_retry)` while that holds.
//!   `keyframe_retry` defaults to libwebrtc's `kMaxWaitForKeyFrame` = 200 ms
//!   (`video_receive_stream2`, C6: re-request when no keyframe came within
//!   it); the RTT floor because no keyframe can answer a request sooner, so
//!   asking faster only duplicates. A repair that is still pending (NACKs
//!   outstanding for the blocking frame) defers the request.
//! * **Freeze** (`video_quality_observer2.cc: OnRenderedFrame`, C6): the
//!   render interval in integer ms enters a 30-frame moving average first;
//!   with ≥ 5 intervals, an interval `≥ max(3·avg, avg + 150 ms)` (average
//!   rounded down) is a freeze and counts whole → `freezes`,
//!   `freeze_time_s`. Only intervals between two renders count (as in
//!   libwebrtc); the start and the tail are covered by stalls.
//! * **Stall** and **late** ([`crate::viewer`]'s rule, which `l4slab-app`'s
//!   `FrameStream` reports by too, same keys): a gap longer than
//!   `stall_threshold` between renders, or from the start to the first
//!   render, or from the last render to the end, counts whole; with
//!   `late_threshold`, a frame whose render − capture exceeds it is late.
//! * **Worst second**: the fewest frames rendered in any whole 1-s bin from
//!   the start (`worst_second_fps`; a 1-s outage reads 0). A partial last
//!   bin is not counted.
//!
//! # Memory
//!
//! Frames from the oldest undecided to the newest seen sit in a ring of at
//! most [`MAX_FRAMES`] (`video_stream_buffer_controller.cc`:
//! `kMaxFramesBuffered` = 800); a packet for a frame beyond that drops the
//! oldest ([`FrameDrop::Overflow`]). Missing packets: at most 1000
//! (`kMaxNackPackets`). Duplicate detection: a bitmap of the last
//! [`SEQ_WINDOW`] numbers; an older packet counts as late. Freezes keep 30
//! intervals, the worst second a running minimum. Only the
//! counters and the latency histogram outlive that.
//!
//! # Not implemented
//!
//! libwebrtc's low-latency frame dropping (`frame_decode_timing.cc`, seen
//! in a source excerpt, not in REFERENCES: with a zero maximum playout
//! delay, all but the newest of several decodable frames are dropped, which
//! breaks an IPPP chain); FEC and RTX-recovered
//! bookkeeping; reordering statistics for the first NACK's delay; the
//! 3-s `kMaxWaitForFrame` keyframe request when nothing arrives at all;
//! pauses (`OnStreamInactive`); decode time; audio (NetEq). No trace events.
//!
//! # Files
//!
//! This file: the public types and [`Playout`]'s protocol (`on_packet`,
//! `poll`, `next_wake`). `config.rs`: [`PlayoutConfig`]. `seqs.rs`: the
//! duplicate-detection bitmap. `frames.rs`: the frame table, completeness
//! and the reference chain. `render.rs`: due times and the render / drop
//! walk. `nack.rs`: the missing-packet list. `metrics.rs`: freezes and the
//! worst second (latency, stalls and late frames: [`crate::viewer::Viewer`]).
//! `report.rs`: counters, series and `summary.json`.

mod config;
mod frames;
mod metrics;
mod nack;
mod render;
mod report;
mod seqs;

use std::collections::VecDeque;

use l4slab_core::{Dur, Time};

use crate::viewer::Viewer;
use frames::{Chain, Slot};
use metrics::{Freezes, WorstSecond};
use nack::MissingList;
use seqs::{Arrival, SeqWindow};

pub use config::{FreezeRule, PlayoutConfig};
pub use report::{PlayoutInterval, PlayoutSeries};

/// Most frames held, from the oldest undecided to the newest seen
/// (libwebrtc `kMaxFramesBuffered`).
pub const MAX_FRAMES: usize = 800;
/// Sequence numbers remembered for duplicate detection (more than
/// `kMaxPacketAge`).
pub const SEQ_WINDOW: u64 = 1 << 14;
/// Complete frames whose transit feeds the jitter allowance.
pub const JITTER_WINDOW: usize = 128;

/// What the receiver reads from one media packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaPacket {
    /// The media packet's RTP sequence number, extended to 64 bits; a
    /// retransmission carries the original's.
    pub seq: u64,
    /// Frame number, consecutive from 0 (from the RTP timestamp).
    pub frame: u64,
    /// First packet of its frame (codec payload descriptor).
    pub first: bool,
    /// RTP marker bit: last packet of its frame.
    pub last: bool,
    /// Every packet of a keyframe says so.
    pub keyframe: bool,
    /// The frame's capture time (sender clock, from the RTP timestamp).
    pub capture: Time,
    /// Payload bytes.
    pub payload: u32,
    /// It came as a retransmission (RFC 4588 RTX: the receiver knows from
    /// its SSRC / payload type).
    pub rtx: bool,
}

/// What [`Playout::poll`] tells the receiver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayoutEvent {
    /// Frame `frame`, captured at `capture`, renders at `at` (the poll's `now`).
    Rendered { frame: u64, capture: Time, at: Time },
    /// Send a NACK for media packet `seq` (RFC 4585 generic NACK).
    Nack { seq: u64 },
    /// Send a keyframe request (PLI, RFC 4585 §6.3.1).
    KeyframeRequest,
}

/// Why a frame was never rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameDrop {
    /// Some of its packets never arrived (or it was passed over for a
    /// keyframe while its repair was pending).
    Incomplete,
    /// Complete, but the frame it references was not decoded.
    Undecodable,
    /// Pushed out of a full buffer ([`MAX_FRAMES`]).
    Overflow,
}

/// The receiver's playout buffer (see the module documentation).
#[derive(Debug)]
pub struct Playout {
    cfg: PlayoutConfig,
    rtt: Dur,
    /// Renders as the viewer sees them; knows when the receiver started.
    viewer: Viewer,
    /// The latest `now` seen (by `on_packet` or `poll`).
    now: Time,
    /// Until then, numbers below the first packet received may still come.
    start_grace: Option<Time>,
    /// Frames `next_frame ..`, oldest first.
    frames: VecDeque<Slot>,
    next_frame: u64,
    chain: Chain,
    seqs: SeqWindow,
    missing: MissingList,
    /// The largest sequence number of a rendered or dropped frame.
    decided_max_seq: Option<u64>,
    /// The largest sequence number counted in `packets_decided`.
    settled_through: Option<u64>,
    /// Slots with a keyframe packet, and complete keyframes, in `frames`.
    key_slots: u32,
    complete_keys: u32,
    /// Smallest completion − capture, ns (may be negative across clocks).
    min_transit: Option<i64>,
    transits: [i64; JITTER_WINDOW],
    transit_n: usize,
    transit_pos: usize,
    jitter_ns: i64,
    last_keyframe_request: Option<Time>,
    freezes: Freezes,
    worst: WorstSecond,
    // Counters.
    frames_received: u64,
    dropped: [u64; 3],
    chain_breaks: u64,
    packets_received: u64,
    packets_duplicate: u64,
    packets_retransmitted: u64,
    packets_late: u64,
    received_bytes: u64,
    keyframe_requests: u64,
    /// Frames given up at their playout deadline.
    late_drops: u64,
    /// Sequence numbers of decided frames, and how many of them arrived
    /// before their frame was decided (rendered or dropped).
    packets_decided: u64,
    packets_in_time: u64,
    // Per sampling interval.
    int_dropped: u64,
    int_decided: u64,
    int_in_time: u64,
    int_bytes: u64,
    int_nacks_base: u64,
    int_keyframe_requests: u64,
}

impl Playout {
    pub fn new(cfg: PlayoutConfig) -> Self {
        let mut viewer = Viewer::new(cfg.stall_threshold);
        if let Some(t) = cfg.late_threshold {
            viewer = viewer.with_late_threshold(t);
        }
        Playout {
            cfg,
            rtt: cfg.initial_rtt,
            viewer,
            now: Time::ZERO,
            start_grace: None,
            frames: VecDeque::with_capacity(MAX_FRAMES),
            next_frame: 0,
            chain: Chain::Start,
            seqs: SeqWindow::new(),
            missing: MissingList::new(cfg.nack, cfg.nack_max_retries, cfg.reorder_wait),
            decided_max_seq: None,
            settled_through: None,
            key_slots: 0,
            complete_keys: 0,
            min_transit: None,
            transits: [0; JITTER_WINDOW],
            transit_n: 0,
            transit_pos: 0,
            jitter_ns: 0,
            last_keyframe_request: None,
            freezes: Freezes::new(cfg.freeze),
            worst: WorstSecond::default(),
            frames_received: 0,
            dropped: [0; 3],
            chain_breaks: 0,
            packets_received: 0,
            packets_duplicate: 0,
            packets_retransmitted: 0,
            packets_late: 0,
            received_bytes: 0,
            keyframe_requests: 0,
            late_drops: 0,
            packets_decided: 0,
            packets_in_time: 0,
            int_dropped: 0,
            int_decided: 0,
            int_in_time: 0,
            int_bytes: 0,
            int_nacks_base: 0,
            int_keyframe_requests: 0,
        }
    }

    /// The receiver starts expecting frames at `now` (first call wins; the
    /// first packet's arrival otherwise).
    pub fn start(&mut self, now: Time) {
        self.viewer.start(now);
    }

    /// The session's RTT estimate (NACK and keyframe-request timing).
    pub fn set_rtt(&mut self, rtt: Dur) {
        self.rtt = rtt;
        self.missing.rtt_changed(rtt);
    }

    /// A media packet arrived at `now`. Call [`Playout::poll`] after it.
    pub fn on_packet(&mut self, now: Time, p: MediaPacket) {
        self.start(now);
        self.now = self.now.max(now);
        self.start_grace
            .get_or_insert(now.saturating_add(self.cfg.reorder_wait));
        self.packets_received += 1;
        if p.rtx {
            self.packets_retransmitted += 1;
        }
        match self.seqs.insert(p.seq) {
            Arrival::First => {}
            Arrival::Newer { from } => {
                if from < p.seq {
                    self.missing.add_gap(now, from, p.seq);
                }
            }
            Arrival::Older => {
                self.missing.arrived(p.seq);
            }
            Arrival::Oldest { to } => {
                if p.seq + 1 < to {
                    self.missing.add_gap_below(now, p.seq + 1, to);
                }
            }
            Arrival::Duplicate => {
                self.packets_duplicate += 1;
                return;
            }
            Arrival::TooOld => {
                self.packets_late += 1;
                return;
            }
        }
        self.received_bytes += u64::from(p.payload);
        self.int_bytes += u64::from(p.payload);
        if p.frame < self.next_frame {
            // Its frame was rendered or dropped already.
            self.packets_late += 1;
            return;
        }
        self.add_to_frame(now, p);
    }

    /// Send what is due at `now`: NACKs, renders, a keyframe request.
    pub fn poll(&mut self, now: Time, out: &mut dyn FnMut(PlayoutEvent)) {
        self.now = self.now.max(now);
        self.missing
            .poll(now, self.rtt, &mut |seq| out(PlayoutEvent::Nack { seq }));
        self.play(now, out);
        if self.keyframe_wanted() {
            let every = self.rtt.max(self.cfg.keyframe_retry);
            if self
                .last_keyframe_request
                .is_none_or(|t| now >= t.saturating_add(every))
            {
                self.last_keyframe_request = Some(now);
                self.keyframe_requests += 1;
                self.int_keyframe_requests += 1;
                out(PlayoutEvent::KeyframeRequest);
            }
        }
    }

    /// When [`Playout::poll`] next has something to do; `None`: only after
    /// another packet.
    pub fn next_wake(&self) -> Option<Time> {
        let mut wake = self.missing.next_due();
        let mut at = |t: Time| wake = Some(wake.map_or(t, |w| w.min(t)));
        if let Some(g) = self.start_grace.filter(|&g| g > self.now) {
            at(g);
        }
        if let Some(head) = self.frames.front() {
            if head.complete && (head.keyframe || self.chain.continues_to(self.next_frame)) {
                at(self.due(head));
            } else if let Some(k) = self.first_complete_keyframe() {
                at(self.due(&self.frames[k]));
            }
            if !head.complete && head.packets > 0 {
                if let Some(t) = self.deadline_of(head) {
                    at(t);
                }
            }
        }
        if self.keyframe_wanted() {
            let every = self.rtt.max(self.cfg.keyframe_retry);
            at(self
                .last_keyframe_request
                .map_or(Time::ZERO, |t| t.saturating_add(every)));
        }
        wake
    }

    /// Frames held, from the oldest undecided to the newest seen.
    pub fn buffered_frames(&self) -> usize {
        self.frames.len()
    }

    /// Missing packets still awaited (NACKed or waiting).
    pub fn nack_list_len(&self) -> usize {
        self.missing.len()
    }
}
