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
//! * **Stall** (the rule of `l4slab-app`'s `FrameStream`, same keys): a gap
//!   longer than `stall_threshold` between renders, or from the start to the
//!   first render, or from the last render to the end, counts whole.
//! * **Late**: with `late_threshold`, a frame whose render − capture exceeds
//!   it is late (same keys as `FrameStream`).
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

mod metrics;
mod nack;

use std::collections::VecDeque;

use serde_json::{json, Value};

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Time};

use metrics::{Freezes, Stalls, WorstSecond};
use nack::MissingList;

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

/// libwebrtc's freeze rule (`video_quality_observer2.cc`, REFERENCES C6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreezeRule {
    /// Render intervals in the moving average (`kAvgInterframeDelaysWindowSizeFrames`).
    pub window: usize,
    /// Intervals needed before a freeze can be declared (`kMinFrameSamplesToDetectFreeze`).
    pub min_samples: usize,
    /// A freeze is at least this many times the average ...
    pub factor: u64,
    /// ... and at least this much above it (`kMinIncreaseForFreezeMs`).
    pub min_increase: Dur,
}

impl FreezeRule {
    pub const WEBRTC: FreezeRule = FreezeRule {
        window: 30,
        min_samples: 5,
        factor: 3,
        min_increase: Dur::from_millis(150),
    };
}

impl Default for FreezeRule {
    fn default() -> Self {
        FreezeRule::WEBRTC
    }
}

/// How the buffer plays out (see the module documentation for each rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayoutConfig {
    /// Extra delay above the smallest transit. 0: render as soon as
    /// decodable (cloud gaming, WebRTC's low-latency mode).
    pub min_delay: Dur,
    /// Add the 95th-percentile transit excess over the last
    /// [`JITTER_WINDOW`] frames to the delay. Off: low latency.
    pub jitter_allowance: bool,
    /// Ask for retransmissions of missing packets.
    pub nack: bool,
    /// NACKs per missing packet (`kMaxNackRetries`).
    pub nack_max_retries: u32,
    /// The RTT assumed before [`Playout::set_rtt`] (`kDefaultRtt`).
    pub initial_rtt: Dur,
    /// Without NACK: how long a missing packet may still arrive (reordered)
    /// before it is given up. 20 ms is this model's guess: libwebrtc without
    /// NACK does not give up on a packet, it waits for a keyframe.
    pub reorder_wait: Dur,
    /// Least time between keyframe requests, floored at the RTT
    /// (`kMaxWaitForKeyFrame`).
    pub keyframe_retry: Dur,
    /// A render gap longer than this is a stall (as `FrameStream`).
    pub stall_threshold: Dur,
    /// A frame rendered more than this after capture is late.
    pub late_threshold: Option<Dur>,
    pub freeze: FreezeRule,
}

impl Default for PlayoutConfig {
    fn default() -> Self {
        PlayoutConfig {
            min_delay: Dur::ZERO,
            jitter_allowance: false,
            nack: true,
            nack_max_retries: 10,
            initial_rtt: Dur::from_millis(100),
            reorder_wait: Dur::from_millis(20),
            keyframe_retry: Dur::from_millis(200),
            stall_threshold: Dur::from_millis(200),
            late_threshold: None,
            freeze: FreezeRule::WEBRTC,
        }
    }
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

impl FrameDrop {
    const ALL: [FrameDrop; 3] = [
        FrameDrop::Incomplete,
        FrameDrop::Undecodable,
        FrameDrop::Overflow,
    ];

    fn key(self) -> &'static str {
        match self {
            FrameDrop::Incomplete => "frames_dropped_incomplete",
            FrameDrop::Undecodable => "frames_dropped_undecodable",
            FrameDrop::Overflow => "frames_dropped_overflow",
        }
    }
}

/// The reference chain as the decoder sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chain {
    /// Nothing decoded or dropped yet: the first frame must be a keyframe.
    Start,
    /// Frame `last` was the last decided and it was decoded.
    Intact { last: u64 },
    /// A frame was dropped: delta frames are undecodable until a keyframe.
    Broken,
}

impl Chain {
    /// Whether delta frame `frame` may be decoded.
    fn continues_to(self, frame: u64) -> bool {
        matches!(self, Chain::Intact { last } if last + 1 == frame)
    }

    /// Frame `frame` was decoded. Legal from any state for a keyframe, and
    /// for a delta frame only right after its predecessor.
    fn decoded(&mut self, frame: u64, keyframe: bool) {
        assert!(
            keyframe || self.continues_to(frame),
            "delta frame {frame} decoded after {self:?}"
        );
        *self = Chain::Intact { last: frame };
    }

    /// A frame was dropped; true if that broke the chain (it was not broken).
    fn dropped(&mut self) -> bool {
        let broke = *self != Chain::Broken;
        *self = Chain::Broken;
        broke
    }
}

/// One frame from its first packet to its render or drop.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Distinct packets received; 0: none yet.
    packets: u32,
    keyframe: bool,
    capture: Time,
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    min_seq: u64,
    max_seq: u64,
    complete: bool,
}

/// Whether a frame may still complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Complete,
    /// A packet that may be its own may still arrive.
    Pending,
    /// It can never complete.
    Lost,
}

/// Where an arriving sequence number stands.
enum Arrival {
    /// The first packet of the session.
    First,
    /// Newer than any before; `from..seq` were skipped.
    Newer {
        from: u64,
    },
    /// Older than the newest, not seen before.
    Older,
    /// Older than any seen before; `seq + 1..to` were skipped.
    Oldest {
        to: u64,
    },
    Duplicate,
    /// Older than the duplicate-detection window.
    TooOld,
}

/// The last [`SEQ_WINDOW`] sequence numbers: which arrived.
#[derive(Debug)]
struct SeqWindow {
    bits: Vec<u64>,
    newest: Option<u64>,
    oldest: u64,
}

impl SeqWindow {
    fn new() -> Self {
        SeqWindow {
            bits: vec![0; (SEQ_WINDOW / 64) as usize],
            newest: None,
            oldest: 0,
        }
    }

    fn word(seq: u64) -> (usize, u64) {
        let i = seq % SEQ_WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    fn set(&mut self, seq: u64) {
        let (w, b) = Self::word(seq);
        self.bits[w] |= b;
    }

    fn insert(&mut self, seq: u64) -> Arrival {
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            self.oldest = seq;
            self.set(seq);
            return Arrival::First;
        };
        if seq > newest {
            if seq - newest >= SEQ_WINDOW {
                self.bits.fill(0);
            } else {
                for s in newest + 1..seq {
                    let (w, b) = Self::word(s);
                    self.bits[w] &= !b;
                }
            }
            self.newest = Some(seq);
            self.set(seq);
            return Arrival::Newer { from: newest + 1 };
        }
        if newest - seq >= SEQ_WINDOW {
            return Arrival::TooOld;
        }
        let (w, b) = Self::word(seq);
        if self.bits[w] & b != 0 {
            return Arrival::Duplicate;
        }
        self.bits[w] |= b;
        if seq < self.oldest {
            let to = std::mem::replace(&mut self.oldest, seq);
            return Arrival::Oldest { to };
        }
        Arrival::Older
    }
}

/// Wrapper so `Debug` does not dump histogram buckets.
struct LatencyStats(DurStats);

impl core::fmt::Debug for LatencyStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "LatencyStats({} samples)", self.0.count())
    }
}

/// One sampling interval's worth of playout, from [`Playout::take_interval`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlayoutInterval {
    pub frames_displayed: u64,
    pub frames_dropped: u64,
    /// Mean render − capture of the frames rendered, in ms.
    pub latency_mean_ms: Option<f64>,
    /// Payload bytes of distinct packets received.
    pub received_bytes: u64,
    pub nacks: u64,
    pub keyframe_requests: u64,
}

/// Series names for [`Playout::sample`] (one set per stream direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayoutSeries {
    /// Frames rendered per second.
    pub frame_rate: &'static str,
    /// Mean frame latency (ms), only for intervals with a render.
    pub latency: &'static str,
    /// Frames dropped per second.
    pub drop_rate: &'static str,
    /// Received payload bits per second.
    pub bitrate: &'static str,
    /// NACKs per second.
    pub nack_rate: &'static str,
    /// Keyframe requests per second.
    pub keyframe_request_rate: &'static str,
}

impl PlayoutSeries {
    pub const DEFAULT: PlayoutSeries = PlayoutSeries {
        frame_rate: "frame_rate_fps",
        latency: "frame_latency_ms",
        drop_rate: "frame_drop_rate_fps",
        bitrate: "received_bitrate_bps",
        nack_rate: "nack_rate_per_s",
        keyframe_request_rate: "keyframe_request_rate_per_s",
    };
}

/// The receiver's playout buffer (see the module documentation).
#[derive(Debug)]
pub struct Playout {
    cfg: PlayoutConfig,
    rtt: Dur,
    started: Option<Time>,
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
    latency: LatencyStats,
    stalls: Stalls,
    freezes: Freezes,
    worst: WorstSecond,
    // Counters.
    frames_received: u64,
    displayed: u64,
    dropped: [u64; 3],
    late: u64,
    chain_breaks: u64,
    packets_received: u64,
    packets_duplicate: u64,
    packets_retransmitted: u64,
    packets_late: u64,
    received_bytes: u64,
    keyframe_requests: u64,
    // Per sampling interval.
    int_displayed: u64,
    int_dropped: u64,
    int_bytes: u64,
    int_nacks_base: u64,
    int_keyframe_requests: u64,
}

impl Playout {
    pub fn new(cfg: PlayoutConfig) -> Self {
        Playout {
            cfg,
            rtt: cfg.initial_rtt,
            started: None,
            now: Time::ZERO,
            start_grace: None,
            frames: VecDeque::with_capacity(MAX_FRAMES),
            next_frame: 0,
            chain: Chain::Start,
            seqs: SeqWindow::new(),
            missing: MissingList::new(cfg.nack, cfg.nack_max_retries, cfg.reorder_wait),
            decided_max_seq: None,
            key_slots: 0,
            complete_keys: 0,
            min_transit: None,
            transits: [0; JITTER_WINDOW],
            transit_n: 0,
            transit_pos: 0,
            jitter_ns: 0,
            last_keyframe_request: None,
            // Frame latency in µs up to 1000 s, as FrameStream.
            latency: LatencyStats(DurStats::new(1_000, 1_000_000_000)),
            stalls: Stalls::new(cfg.stall_threshold),
            freezes: Freezes::new(cfg.freeze),
            worst: WorstSecond::default(),
            frames_received: 0,
            displayed: 0,
            dropped: [0; 3],
            late: 0,
            chain_breaks: 0,
            packets_received: 0,
            packets_duplicate: 0,
            packets_retransmitted: 0,
            packets_late: 0,
            received_bytes: 0,
            keyframe_requests: 0,
            int_displayed: 0,
            int_dropped: 0,
            int_bytes: 0,
            int_nacks_base: 0,
            int_keyframe_requests: 0,
        }
    }

    /// The receiver starts expecting frames at `now` (first call wins; the
    /// first packet's arrival otherwise).
    pub fn start(&mut self, now: Time) {
        self.started.get_or_insert(now);
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
        if p.frame - self.next_frame >= MAX_FRAMES as u64 {
            self.make_room(p.frame + 1 - MAX_FRAMES as u64);
        }
        let idx = (p.frame - self.next_frame) as usize;
        while self.frames.len() <= idx {
            self.frames.push_back(Slot::default());
        }
        let s = &mut self.frames[idx];
        if s.packets == 0 {
            *s = Slot {
                keyframe: p.keyframe,
                capture: p.capture,
                min_seq: p.seq,
                max_seq: p.seq,
                ..Slot::default()
            };
            self.frames_received += 1;
            if p.keyframe {
                self.key_slots += 1;
            }
        } else {
            assert!(
                s.keyframe == p.keyframe && s.capture == p.capture,
                "packet {} of frame {} disagrees with the frame's keyframe flag or capture time",
                p.seq,
                p.frame
            );
        }
        s.packets += 1;
        s.min_seq = s.min_seq.min(p.seq);
        s.max_seq = s.max_seq.max(p.seq);
        if p.first {
            s.first_seq = Some(p.seq);
        }
        if p.last {
            s.last_seq = Some(p.seq);
        }
        if let (Some(a), Some(b)) = (s.first_seq, s.last_seq) {
            assert!(
                a <= s.min_seq && s.max_seq <= b,
                "frame {}: packets {}..={} outside its first..=last {a}..={b}",
                p.frame,
                s.min_seq,
                s.max_seq
            );
            // Complete: every number from `first` to `last` arrived.
            if u64::from(s.packets) == b - a + 1 {
                s.complete = true;
                let keyframe = s.keyframe;
                self.on_complete(now, p.capture, keyframe);
            }
        }
    }

    fn on_complete(&mut self, now: Time, capture: Time, keyframe: bool) {
        if keyframe {
            self.complete_keys += 1;
        }
        let transit = now.as_nanos() as i64 - capture.as_nanos() as i64;
        let min = self.min_transit.map_or(transit, |m| m.min(transit));
        self.min_transit = Some(min);
        self.transits[self.transit_pos] = transit;
        self.transit_pos = (self.transit_pos + 1) % JITTER_WINDOW;
        self.transit_n = (self.transit_n + 1).min(JITTER_WINDOW);
        if self.cfg.jitter_allowance {
            // 95th percentile, nearest rank: the ceil(0.95 n)-th smallest.
            let n = self.transit_n;
            let mut buf = self.transits;
            let rank = (95 * n).div_ceil(100) - 1;
            let (_, p95, _) = buf[..n].select_nth_unstable(rank);
            self.jitter_ns = *p95 - min;
        }
    }

    /// Drop the oldest frames until `first` is the oldest (a full buffer).
    fn make_room(&mut self, first: u64) {
        while self.next_frame < first {
            if self.frames.is_empty() {
                let n = first - self.next_frame;
                self.note_drop(FrameDrop::Overflow, n);
                self.next_frame = first;
                return;
            }
            self.drop_head(FrameDrop::Overflow);
        }
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

    fn play(&mut self, now: Time, out: &mut dyn FnMut(PlayoutEvent)) {
        while let Some(head) = self.frames.front().copied() {
            if head.packets > 0 && !head.keyframe && !self.chain.continues_to(self.next_frame) {
                // A delta frame whose reference was not decoded: never decodable.
                self.drop_head(FrameDrop::Undecodable);
                continue;
            }
            match self.status(0) {
                Status::Complete => {
                    // Decodable: render at max(now, capture + delay).
                    if self.due(&head) > now {
                        break;
                    }
                    self.render_head(now, out);
                }
                Status::Lost => self.drop_head(FrameDrop::Incomplete),
                Status::Pending => {
                    // A newer keyframe that is decodable and due supersedes
                    // the frames waiting before it.
                    let Some(k) = self.first_complete_keyframe() else {
                        break;
                    };
                    if self.due(&self.frames[k]) > now {
                        break;
                    }
                    for _ in 0..k {
                        let why = if self.frames[0].complete {
                            FrameDrop::Undecodable
                        } else {
                            FrameDrop::Incomplete
                        };
                        self.drop_head(why);
                    }
                }
            }
        }
    }

    /// Whether frame `idx` (in `frames`) is complete, may still be, or never will.
    fn status(&self, idx: usize) -> Status {
        let s = &self.frames[idx];
        if s.complete {
            return Status::Complete;
        }
        // The numbers that may be its packets: first..=last where known, else
        // bounded by the packets of the frames around it.
        let lo = match s.first_seq {
            Some(a) => a,
            None => self.max_seq_before(idx).map_or(0, |m| m + 1),
        };
        let hi = match s.last_seq {
            Some(b) => b,
            None => match self.min_seq_after(idx) {
                // Its last packet may simply not have been sent yet.
                None => return Status::Pending,
                Some(0) => return Status::Lost,
                Some(m) => m - 1,
            },
        };
        // Numbers below the first packet received were never found missing
        // (nor NACKed): they may still come, reordered, for `reorder_wait`.
        if lo < self.seqs.oldest && self.start_grace.is_some_and(|g| self.now < g) {
            return Status::Pending;
        }
        if lo <= hi && self.missing.pending_in(lo, hi) {
            Status::Pending
        } else {
            Status::Lost
        }
    }

    fn max_seq_before(&self, idx: usize) -> Option<u64> {
        self.frames
            .range(..idx)
            .rev()
            .find(|s| s.packets > 0)
            .map(|s| s.max_seq)
            .or(self.decided_max_seq)
    }

    fn min_seq_after(&self, idx: usize) -> Option<u64> {
        self.frames
            .range(idx + 1..)
            .find(|s| s.packets > 0)
            .map(|s| s.min_seq)
    }

    /// The oldest complete keyframe after the head, as an index in `frames`.
    fn first_complete_keyframe(&self) -> Option<usize> {
        if self.complete_keys == 0 {
            return None;
        }
        self.frames
            .iter()
            .skip(1)
            .position(|s| s.complete && s.keyframe)
            .map(|i| i + 1)
    }

    /// The chain is broken and no keyframe that may still complete is in
    /// the buffer.
    fn keyframe_wanted(&self) -> bool {
        if self.chain != Chain::Broken {
            return false;
        }
        let on_its_way = self.key_slots > 0
            && (0..self.frames.len()).any(|i| {
                let s = &self.frames[i];
                s.packets > 0 && s.keyframe && self.status(i) != Status::Lost
            });
        !on_its_way
    }

    /// When frame `s` is due: capture + smallest transit + min_delay + jitter.
    fn due(&self, s: &Slot) -> Time {
        let transit = self.min_transit.expect("a frame completed");
        let t = i128::from(s.capture.as_nanos())
            + i128::from(transit)
            + i128::from(self.extra_delay().as_nanos());
        Time::from_nanos(t.clamp(0, i128::from(u64::MAX)) as u64)
    }

    /// The delay above the smallest transit: `min_delay` + jitter allowance.
    fn extra_delay(&self) -> Dur {
        self.cfg.min_delay + Dur::from_nanos(self.jitter_ns.max(0) as u64)
    }

    /// Remove the head slot, keeping the per-slot counts right.
    fn pop_head(&mut self) -> Slot {
        let s = self.frames.pop_front().expect("a head frame");
        self.next_frame += 1;
        if s.packets > 0 {
            if s.keyframe {
                self.key_slots -= 1;
                if s.complete {
                    self.complete_keys -= 1;
                }
            }
            self.decided_max_seq =
                Some(self.decided_max_seq.map_or(s.max_seq, |m| m.max(s.max_seq)));
            // nack_requester.cc ClearUpTo: its numbers need no more NACKs.
            self.missing.clear_through(s.last_seq.unwrap_or(s.max_seq));
        }
        s
    }

    fn drop_head(&mut self, why: FrameDrop) {
        self.pop_head();
        self.note_drop(why, 1);
    }

    fn note_drop(&mut self, why: FrameDrop, n: u64) {
        self.dropped[why as usize] += n;
        self.int_dropped += n;
        if self.chain.dropped() {
            self.chain_breaks += 1;
        }
    }

    fn render_head(&mut self, now: Time, out: &mut dyn FnMut(PlayoutEvent)) {
        let frame = self.next_frame;
        let s = self.pop_head();
        self.chain.decoded(frame, s.keyframe);
        let latency = now.saturating_since(s.capture);
        self.latency.0.record(latency);
        if self.cfg.late_threshold.is_some_and(|t| latency > t) {
            self.late += 1;
        }
        let start = self.started.expect("started by the first packet");
        self.stalls.on_render(start, now);
        self.freezes.on_render(now);
        self.worst.on_render(start, now);
        self.displayed += 1;
        self.int_displayed += 1;
        out(PlayoutEvent::Rendered {
            frame,
            capture: s.capture,
            at: now,
        });
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
        }
        if self.keyframe_wanted() {
            let every = self.rtt.max(self.cfg.keyframe_retry);
            at(self
                .last_keyframe_request
                .map_or(Time::ZERO, |t| t.saturating_add(every)));
        }
        wake
    }

    pub fn displayed(&self) -> u64 {
        self.displayed
    }

    /// Frames never rendered, for any reason.
    pub fn dropped(&self) -> u64 {
        self.dropped.iter().sum()
    }

    pub fn dropped_for(&self, why: FrameDrop) -> u64 {
        self.dropped[why as usize]
    }

    /// Frames held, from the oldest undecided to the newest seen.
    pub fn buffered_frames(&self) -> usize {
        self.frames.len()
    }

    /// Missing packets still awaited (NACKed or waiting).
    pub fn nack_list_len(&self) -> usize {
        self.missing.len()
    }

    /// What happened since the last call.
    pub fn take_interval(&mut self) -> PlayoutInterval {
        let r = PlayoutInterval {
            frames_displayed: self.int_displayed,
            frames_dropped: self.int_dropped,
            latency_mean_ms: self.latency.0.take_interval().map(|(mean, _)| mean),
            received_bytes: self.int_bytes,
            nacks: self.missing.nacks_sent - self.int_nacks_base,
            keyframe_requests: self.int_keyframe_requests,
        };
        self.int_displayed = 0;
        self.int_dropped = 0;
        self.int_bytes = 0;
        self.int_nacks_base = self.missing.nacks_sent;
        self.int_keyframe_requests = 0;
        r
    }

    /// Values for the `interval` just ended, as rates per second (latency
    /// in ms, only when a frame rendered), under `names`.
    pub fn sample(
        &mut self,
        interval: Dur,
        names: &PlayoutSeries,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        let i = self.take_interval();
        let secs = interval.as_secs_f64();
        if secs <= 0.0 {
            return;
        }
        out(names.frame_rate, i.frames_displayed as f64 / secs);
        out(names.drop_rate, i.frames_dropped as f64 / secs);
        if let Some(ms) = i.latency_mean_ms {
            out(names.latency, ms);
        }
        out(names.bitrate, i.received_bytes as f64 * 8.0 / secs);
        out(names.nack_rate, i.nacks as f64 / secs);
        out(
            names.keyframe_request_rate,
            i.keyframe_requests as f64 / secs,
        );
    }

    /// Metrics for `summary.json`: `FrameStream`'s receiver-side keys with
    /// the same meanings (`frames_displayed`, `frame_rate_fps`,
    /// `frame_latency_ms`, `stalls`, `stall_time_s`, `stall_pct`,
    /// `stall_threshold_ms`, and with a late threshold `frames_late`,
    /// `late_pct`, `late_threshold_ms`), plus the RTP receiver's own. The
    /// sender-side keys (`frames_captured`, `frames_skipped`,
    /// `bitrate_bps`) are the sender's to add.
    pub fn report(&self, end: Time) -> Value {
        let (stalls, stalled) = self
            .started
            .map_or((0, Dur::ZERO), |s| self.stalls.until(s, end));
        let active = self
            .started
            .map_or(Dur::ZERO, |s| end.saturating_since(s))
            .as_secs_f64();
        let per_s = |x: f64| {
            if active > 0.0 {
                round6(x / active)
            } else {
                0.0
            }
        };
        let worst = self.started.and_then(|s| self.worst.until(s, end));
        let mut r = json!({
            "frames_expected": self.next_frame + self.frames.len() as u64,
            "frames_received": self.frames_received,
            "frames_displayed": self.displayed,
            "frames_dropped": self.dropped(),
            "frames_buffered_at_end": self.frames.len(),
            "frame_rate_fps": per_s(self.displayed as f64),
            "worst_second_fps": worst,
            "frame_latency_ms": self.latency.0.summary_ms(),
            "stalls": stalls,
            "stall_time_s": round6(stalled.as_secs_f64()),
            "stall_pct": if active > 0.0 { round6(100.0 * stalled.as_secs_f64() / active) } else { 0.0 },
            "stall_threshold_ms": round6(self.stalls.threshold().as_millis_f64()),
            "freezes": self.freezes.freezes,
            "freeze_time_s": round6(self.freezes.frozen_ms as f64 / 1e3),
            "chain_breaks": self.chain_breaks,
            "packets_received": self.packets_received,
            "packets_duplicate": self.packets_duplicate,
            "packets_retransmitted": self.packets_retransmitted,
            "packets_late": self.packets_late,
            "packets_unrepaired": self.missing.given_up,
            "received_bitrate_bps": per_s(self.received_bytes as f64 * 8.0).round(),
            "nacks_sent": self.missing.nacks_sent,
            "nack_list_overflows": self.missing.overflows,
            "keyframe_requests": self.keyframe_requests,
            "playout_delay_ms": round6(self.extra_delay().as_millis_f64()),
        });
        for why in FrameDrop::ALL {
            r[why.key()] = self.dropped[why as usize].into();
        }
        if let Some(t) = self.cfg.late_threshold {
            r["frames_late"] = self.late.into();
            r["late_pct"] = if self.displayed > 0 {
                round6(100.0 * self.late as f64 / self.displayed as f64)
            } else {
                0.0
            }
            .into();
            r["late_threshold_ms"] = round6(t.as_millis_f64()).into();
        }
        r
    }
}
