//! Frames (RFC 9000 §19) with their exact type codes, encoded into and
//! decoded from caller buffers without allocation.
//!
//! Implemented: PADDING, PING, ACK/ACK_ECN, RESET_STREAM, STOP_SENDING,
//! CRYPTO, NEW_TOKEN, STREAM (all eight 0x08–0x0f variants), MAX_DATA,
//! MAX_STREAM_DATA, MAX_STREAMS, DATA_BLOCKED, STREAM_DATA_BLOCKED,
//! STREAMS_BLOCKED, CONNECTION_CLOSE (0x1c/0x1d), HANDSHAKE_DONE. Not
//! implemented: NEW_CONNECTION_ID, RETIRE_CONNECTION_ID, PATH_CHALLENGE,
//! PATH_RESPONSE and DATAGRAM, which decode to
//! [`WireError::UnsupportedFrameType`].
//!
//! Decoded frames borrow their bytes (STREAM and CRYPTO data, tokens,
//! reason phrases). Consecutive PADDING bytes decode as one
//! [`Frame::Padding`] with their count. A STREAM frame's OFF bit is written
//! only for a non-zero offset, so a decoded 0x0c–0x0f frame with offset 0
//! re-encodes without it (the same frame, §19.8).
//!
//! [`AckFrame`] keeps at most [`AckFrame::MAX_RANGES`] ranges inline, so no
//! frame allocates; more are dropped oldest-first (lowest packet numbers)
//! both when it is built and when a peer's frame is decoded. Acknowledging
//! fewer packets than were received is always safe: they are acknowledged
//! again later or declared lost.

use std::fmt;
use std::ops::RangeInclusive;

use l4slab_core::Ecn;

use super::header::PacketType;
use super::varint::{varint_len, Reader, Writer, VARINT_MAX};
use super::{Field, WireError};

/// Frame type codes, RFC 9000 §12.4 Table 3 and §19.
pub mod frame_type {
    pub const PADDING: u64 = 0x00;
    pub const PING: u64 = 0x01;
    pub const ACK: u64 = 0x02;
    pub const ACK_ECN: u64 = 0x03;
    pub const RESET_STREAM: u64 = 0x04;
    pub const STOP_SENDING: u64 = 0x05;
    pub const CRYPTO: u64 = 0x06;
    pub const NEW_TOKEN: u64 = 0x07;
    /// STREAM is 0x08–0x0f: 0x08 | OFF | LEN | FIN.
    pub const STREAM: u64 = 0x08;
    /// §19.8: "The OFF bit (0x04) ... indicates that there is an Offset field".
    pub const STREAM_OFF: u64 = 0x04;
    /// §19.8: "The LEN bit (0x02) ... indicates that there is a Length field".
    pub const STREAM_LEN: u64 = 0x02;
    /// §19.8: "The FIN bit (0x01) indicates that the frame marks the end of the stream".
    pub const STREAM_FIN: u64 = 0x01;
    pub const MAX_DATA: u64 = 0x10;
    pub const MAX_STREAM_DATA: u64 = 0x11;
    pub const MAX_STREAMS_BIDI: u64 = 0x12;
    pub const MAX_STREAMS_UNI: u64 = 0x13;
    pub const DATA_BLOCKED: u64 = 0x14;
    pub const STREAM_DATA_BLOCKED: u64 = 0x15;
    pub const STREAMS_BLOCKED_BIDI: u64 = 0x16;
    pub const STREAMS_BLOCKED_UNI: u64 = 0x17;
    pub const NEW_CONNECTION_ID: u64 = 0x18;
    pub const RETIRE_CONNECTION_ID: u64 = 0x19;
    pub const PATH_CHALLENGE: u64 = 0x1a;
    pub const PATH_RESPONSE: u64 = 0x1b;
    pub const CONNECTION_CLOSE: u64 = 0x1c;
    pub const CONNECTION_CLOSE_APP: u64 = 0x1d;
    pub const HANDSHAKE_DONE: u64 = 0x1e;
    /// RFC 9221.
    pub const DATAGRAM: u64 = 0x30;
    pub const DATAGRAM_LEN: u64 = 0x31;
}

use frame_type as ft;

/// §19.11, §19.14: "This value cannot exceed 2^60".
const MAX_STREAM_COUNT: u64 = 1 << 60;

/// Which frame, for errors and dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    Padding,
    Ping,
    Ack,
    ResetStream,
    StopSending,
    Crypto,
    NewToken,
    Stream,
    MaxData,
    MaxStreamData,
    MaxStreams,
    DataBlocked,
    StreamDataBlocked,
    StreamsBlocked,
    ConnectionClose,
    HandshakeDone,
}

impl FrameKind {
    pub const fn name(self) -> &'static str {
        match self {
            FrameKind::Padding => "PADDING",
            FrameKind::Ping => "PING",
            FrameKind::Ack => "ACK",
            FrameKind::ResetStream => "RESET_STREAM",
            FrameKind::StopSending => "STOP_SENDING",
            FrameKind::Crypto => "CRYPTO",
            FrameKind::NewToken => "NEW_TOKEN",
            FrameKind::Stream => "STREAM",
            FrameKind::MaxData => "MAX_DATA",
            FrameKind::MaxStreamData => "MAX_STREAM_DATA",
            FrameKind::MaxStreams => "MAX_STREAMS",
            FrameKind::DataBlocked => "DATA_BLOCKED",
            FrameKind::StreamDataBlocked => "STREAM_DATA_BLOCKED",
            FrameKind::StreamsBlocked => "STREAMS_BLOCKED",
            FrameKind::ConnectionClose => "CONNECTION_CLOSE",
            FrameKind::HandshakeDone => "HANDSHAKE_DONE",
        }
    }
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a frame whose fields parse is still malformed (FRAME_ENCODING_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameEncodingReason {
    /// §19.3.1: "If any computed packet number is negative, an endpoint
    /// MUST generate a connection error of type FRAME_ENCODING_ERROR."
    NegativePacketNumber,
    /// §19.6, §19.8: offset + data length above 2^62-1.
    OffsetOverflow,
    /// §19.11, §19.14: a stream count above 2^60.
    StreamCountTooLarge,
    /// §19.7: "A client MUST treat receipt of a NEW_TOKEN frame with an
    /// empty Token field as a connection error of type FRAME_ENCODING_ERROR."
    EmptyToken,
}

impl fmt::Display for FrameEncodingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameEncodingReason::NegativePacketNumber => "an ACK range reaches below packet 0",
            FrameEncodingReason::OffsetOverflow => "offset + length exceeds 2^62-1",
            FrameEncodingReason::StreamCountTooLarge => "stream count exceeds 2^60",
            FrameEncodingReason::EmptyToken => "empty token",
        })
    }
}

fn encoding_error(frame: FrameKind, reason: FrameEncodingReason) -> WireError {
    WireError::FrameEncoding { frame, reason }
}

/// Stream direction for MAX_STREAMS and STREAMS_BLOCKED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamDir {
    Bidi,
    Uni,
}

/// §19.3.2: cumulative ECN counts for a packet number space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EcnCounts {
    pub ect0: u64,
    pub ect1: u64,
    pub ce: u64,
}

impl EcnCounts {
    /// Count one received packet with IP ECN field `ecn` (Not-ECT is not counted).
    pub fn record(&mut self, ecn: Ecn) {
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
        }
    }
}

/// ACK / ACK_ECN (§19.3): acknowledged ranges, newest first, held inline.
///
/// Invariants (kept by the constructors, relied on by the encoder): at
/// least one range; ranges descending and separated by at least one
/// unacknowledged packet number.
#[derive(Debug, Clone, Copy)]
pub struct AckFrame {
    /// ACK Delay as on the wire, in units of 2^ack_delay_exponent µs
    /// (§19.3; the exponent is a transport parameter, default 3).
    pub ack_delay: u64,
    /// `Some` makes it an ACK_ECN frame (type 0x03).
    pub ecn: Option<EcnCounts>,
    /// `(smallest, largest)`, newest first; only `..len` is meaningful.
    ranges: [(u64, u64); AckFrame::MAX_RANGES],
    len: u8,
}

impl PartialEq for AckFrame {
    fn eq(&self, other: &Self) -> bool {
        self.ack_delay == other.ack_delay
            && self.ecn == other.ecn
            && self.ranges[..self.len as usize] == other.ranges[..other.len as usize]
    }
}

impl Eq for AckFrame {}

impl AckFrame {
    /// Ranges kept per frame; older ones are dropped.
    pub const MAX_RANGES: usize = 32;

    fn empty(ack_delay: u64) -> Self {
        AckFrame {
            ack_delay,
            ecn: None,
            ranges: [(0, 0); Self::MAX_RANGES],
            len: 0,
        }
    }

    /// Append `smallest..=largest`, below every range held; merges with the
    /// last range if adjacent. Returns false (and drops it) when full.
    ///
    /// # Panics
    /// If the range is empty or not below the ones already held.
    fn push_descending(&mut self, smallest: u64, largest: u64) -> bool {
        assert!(
            smallest <= largest,
            "empty ACK range {smallest}..={largest}"
        );
        if let Some(last) = self.ranges[..self.len as usize].last_mut() {
            assert!(
                largest < last.0,
                "ACK ranges must be descending and disjoint: {smallest}..={largest} after {}..={}",
                last.0,
                last.1
            );
            if largest + 1 == last.0 {
                last.0 = smallest;
                return true;
            }
        }
        if self.len as usize == Self::MAX_RANGES {
            return false;
        }
        self.ranges[self.len as usize] = (smallest, largest);
        self.len += 1;
        true
    }

    /// From received packet numbers in strictly descending order (e.g.
    /// `set.iter().rev().copied()`). Keeps the newest
    /// [`MAX_RANGES`](Self::MAX_RANGES) ranges; `None` if there are none.
    ///
    /// # Panics
    /// If the packet numbers are not strictly descending.
    pub fn from_packet_numbers(
        descending: impl IntoIterator<Item = u64>,
        ack_delay: u64,
    ) -> Option<Self> {
        let mut ack = Self::empty(ack_delay);
        for pn in descending {
            if !ack.push_descending(pn, pn) {
                break;
            }
        }
        (ack.len > 0).then_some(ack)
    }

    /// From non-empty ranges in descending order, disjoint (adjacent ones
    /// are merged). Keeps the newest [`MAX_RANGES`](Self::MAX_RANGES);
    /// `None` if there are none.
    ///
    /// # Panics
    /// If a range is empty or the ranges overlap or ascend.
    pub fn from_ranges(
        descending: impl IntoIterator<Item = RangeInclusive<u64>>,
        ack_delay: u64,
    ) -> Option<Self> {
        let mut ack = Self::empty(ack_delay);
        for r in descending {
            if !ack.push_descending(*r.start(), *r.end()) {
                break;
            }
        }
        (ack.len > 0).then_some(ack)
    }

    /// The same frame as ACK_ECN with these counts.
    pub fn with_ecn(mut self, counts: EcnCounts) -> Self {
        self.ecn = Some(counts);
        self
    }

    /// Largest Acknowledged.
    pub fn largest(&self) -> u64 {
        self.ranges[0].1
    }

    /// The smallest packet number acknowledged.
    pub fn smallest(&self) -> u64 {
        self.ranges[self.len as usize - 1].0
    }

    /// Number of ranges held (ACK Range Count + 1).
    pub fn range_count(&self) -> usize {
        self.len as usize
    }

    /// The acknowledged ranges, newest first.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = RangeInclusive<u64>> + '_ {
        self.ranges[..self.len as usize]
            .iter()
            .map(|&(lo, hi)| lo..=hi)
    }

    /// Whether `pn` is acknowledged by this frame.
    pub fn contains(&self, pn: u64) -> bool {
        self.ranges().any(|r| r.contains(&pn))
    }

    fn type_code(&self) -> u64 {
        if self.ecn.is_some() {
            ft::ACK_ECN
        } else {
            ft::ACK
        }
    }

    /// The (Gap, ACK Range Length) pairs after the first range (§19.3.1).
    fn gaps(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges[..self.len as usize]
            .windows(2)
            // §19.3.1: "largest = previous_smallest - gap - 2" and
            // "smallest = largest - ack_range", solved for gap and ack_range.
            .map(|w| (w[0].0 - w[1].1 - 2, w[1].1 - w[1].0))
    }

    fn encoded_len(&self) -> usize {
        let (lo, hi) = self.ranges[0];
        let mut n = varint_len(self.type_code())
            + varint_len(hi)
            + varint_len(self.ack_delay)
            + varint_len(self.len as u64 - 1)
            + varint_len(hi - lo);
        n += self
            .gaps()
            .map(|(gap, len)| varint_len(gap) + varint_len(len))
            .sum::<usize>();
        if let Some(e) = self.ecn {
            n += varint_len(e.ect0) + varint_len(e.ect1) + varint_len(e.ce);
        }
        n
    }

    fn encode(&self, w: &mut Writer<'_>) -> Result<(), WireError> {
        let (lo, hi) = self.ranges[0];
        // §19.3: Type, Largest Acknowledged, ACK Delay, ACK Range Count,
        // First ACK Range, ACK Range (..) ..., [ECN Counts].
        w.varint(Field::FrameType, self.type_code())?;
        w.varint(Field::LargestAcknowledged, hi)?;
        w.varint(Field::AckDelay, self.ack_delay)?;
        // §19.3: "ACK Range Count: ... the number of ACK Range fields", not
        // counting the First ACK Range.
        w.varint(Field::AckRangeCount, self.len as u64 - 1)?;
        // §19.3: "the smallest packet acknowledged in the range is determined
        // by subtracting the First ACK Range value from the Largest Acknowledged".
        w.varint(Field::FirstAckRange, hi - lo)?;
        for (gap, len) in self.gaps() {
            w.varint(Field::Gap, gap)?;
            w.varint(Field::AckRangeLength, len)?;
        }
        if let Some(e) = self.ecn {
            // §19.3.2: ECT0 Count (i), ECT1 Count (i), ECN-CE Count (i).
            w.varint(Field::Ect0Count, e.ect0)?;
            w.varint(Field::Ect1Count, e.ect1)?;
            w.varint(Field::CeCount, e.ce)?;
        }
        Ok(())
    }

    /// Decode after the type byte; `ecn` for type 0x03.
    fn decode(r: &mut Reader<'_>, ecn: bool) -> Result<Self, WireError> {
        let negative = || encoding_error(FrameKind::Ack, FrameEncodingReason::NegativePacketNumber);
        let largest = r.varint(Field::LargestAcknowledged)?;
        let mut ack = Self::empty(r.varint(Field::AckDelay)?);
        let count = r.varint(Field::AckRangeCount)?;
        let first = r.varint(Field::FirstAckRange)?;
        let mut smallest = largest.checked_sub(first).ok_or_else(negative)?;
        ack.ranges[0] = (smallest, largest);
        ack.len = 1;
        // Each pair takes at least 2 bytes, so a huge count ends in
        // `Truncated` after at most len/2 rounds.
        for _ in 0..count {
            let gap = r.varint(Field::Gap)?;
            let len = r.varint(Field::AckRangeLength)?;
            // §19.3.1: "largest = previous_smallest - gap - 2"
            let next_largest = smallest
                .checked_sub(gap)
                .and_then(|v| v.checked_sub(2))
                .ok_or_else(negative)?;
            // §19.3.1: "smallest = largest - ack_range"
            smallest = next_largest.checked_sub(len).ok_or_else(negative)?;
            // Keep the newest MAX_RANGES; parse (and check) the rest.
            if (ack.len as usize) < Self::MAX_RANGES {
                ack.ranges[ack.len as usize] = (smallest, next_largest);
                ack.len += 1;
            }
        }
        if ecn {
            ack.ecn = Some(EcnCounts {
                ect0: r.varint(Field::Ect0Count)?,
                ect1: r.varint(Field::Ect1Count)?,
                ce: r.varint(Field::CeCount)?,
            });
        }
        Ok(ack)
    }
}

/// STREAM (§19.8), types 0x08–0x0f.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamFrame<'a> {
    pub stream_id: u64,
    /// Written (OFF bit) only when non-zero.
    pub offset: u64,
    pub data: &'a [u8],
    /// FIN bit: this frame ends the stream.
    pub fin: bool,
    /// LEN bit. Without it the data runs to the end of the packet, so such
    /// a frame must be the last in its packet.
    pub has_length: bool,
}

impl StreamFrame<'_> {
    /// The type code, 0x08 | OFF | LEN | FIN.
    pub fn type_code(&self) -> u64 {
        let mut ty = ft::STREAM;
        if self.offset != 0 {
            ty |= ft::STREAM_OFF;
        }
        if self.has_length {
            ty |= ft::STREAM_LEN;
        }
        if self.fin {
            ty |= ft::STREAM_FIN;
        }
        ty
    }
}

/// Which CONNECTION_CLOSE (§19.19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseKind {
    /// 0x1c: a transport error, naming the frame type that caused it (0 if unknown).
    Transport { frame_type: u64 },
    /// 0x1d: an application error.
    Application,
}

/// CONNECTION_CLOSE (§19.19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionClose<'a> {
    pub kind: CloseKind,
    pub error_code: u64,
    /// "SHOULD be a UTF-8 encoded string"; kept as bytes.
    pub reason: &'a [u8],
}

/// A frame, borrowing its bytes from the packet it was decoded from (or
/// from the caller that builds it).
// `AckFrame` holds its ranges inline (about 0.5 KiB) so that no frame
// allocates; the size gap between variants is the price.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// PADDING (0x00, §19.1): `len` consecutive zero bytes.
    Padding { len: usize },
    /// PING (0x01, §19.2).
    Ping,
    /// ACK / ACK_ECN (0x02/0x03, §19.3).
    Ack(AckFrame),
    /// RESET_STREAM (0x04, §19.4).
    ResetStream {
        stream_id: u64,
        error_code: u64,
        final_size: u64,
    },
    /// STOP_SENDING (0x05, §19.5).
    StopSending { stream_id: u64, error_code: u64 },
    /// CRYPTO (0x06, §19.6): l4slab's handshake messages.
    Crypto { offset: u64, data: &'a [u8] },
    /// NEW_TOKEN (0x07, §19.7); the token is never empty.
    NewToken { token: &'a [u8] },
    /// STREAM (0x08–0x0f, §19.8).
    Stream(StreamFrame<'a>),
    /// MAX_DATA (0x10, §19.9): Maximum Data.
    MaxData(u64),
    /// MAX_STREAM_DATA (0x11, §19.10).
    MaxStreamData { stream_id: u64, maximum: u64 },
    /// MAX_STREAMS (0x12 bidi, 0x13 uni, §19.11); `maximum <= 2^60`.
    MaxStreams { dir: StreamDir, maximum: u64 },
    /// DATA_BLOCKED (0x14, §19.12): the connection limit at which the sender is blocked.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED (0x15, §19.13).
    StreamDataBlocked { stream_id: u64, maximum: u64 },
    /// STREAMS_BLOCKED (0x16 bidi, 0x17 uni, §19.14); `maximum <= 2^60`.
    StreamsBlocked { dir: StreamDir, maximum: u64 },
    /// CONNECTION_CLOSE (0x1c/0x1d, §19.19).
    ConnectionClose(ConnectionClose<'a>),
    /// HANDSHAKE_DONE (0x1e, §19.20).
    HandshakeDone,
}

impl<'a> Frame<'a> {
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Padding { .. } => FrameKind::Padding,
            Frame::Ping => FrameKind::Ping,
            Frame::Ack(_) => FrameKind::Ack,
            Frame::ResetStream { .. } => FrameKind::ResetStream,
            Frame::StopSending { .. } => FrameKind::StopSending,
            Frame::Crypto { .. } => FrameKind::Crypto,
            Frame::NewToken { .. } => FrameKind::NewToken,
            Frame::Stream(_) => FrameKind::Stream,
            Frame::MaxData(_) => FrameKind::MaxData,
            Frame::MaxStreamData { .. } => FrameKind::MaxStreamData,
            Frame::MaxStreams { .. } => FrameKind::MaxStreams,
            Frame::DataBlocked(_) => FrameKind::DataBlocked,
            Frame::StreamDataBlocked { .. } => FrameKind::StreamDataBlocked,
            Frame::StreamsBlocked { .. } => FrameKind::StreamsBlocked,
            Frame::ConnectionClose(_) => FrameKind::ConnectionClose,
            Frame::HandshakeDone => FrameKind::HandshakeDone,
        }
    }

    /// The type code this frame is written with.
    pub fn type_code(&self) -> u64 {
        match self {
            Frame::Padding { .. } => ft::PADDING,
            Frame::Ping => ft::PING,
            Frame::Ack(a) => a.type_code(),
            Frame::ResetStream { .. } => ft::RESET_STREAM,
            Frame::StopSending { .. } => ft::STOP_SENDING,
            Frame::Crypto { .. } => ft::CRYPTO,
            Frame::NewToken { .. } => ft::NEW_TOKEN,
            Frame::Stream(s) => s.type_code(),
            Frame::MaxData(_) => ft::MAX_DATA,
            Frame::MaxStreamData { .. } => ft::MAX_STREAM_DATA,
            Frame::MaxStreams {
                dir: StreamDir::Bidi,
                ..
            } => ft::MAX_STREAMS_BIDI,
            Frame::MaxStreams {
                dir: StreamDir::Uni,
                ..
            } => ft::MAX_STREAMS_UNI,
            Frame::DataBlocked(_) => ft::DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => ft::STREAM_DATA_BLOCKED,
            Frame::StreamsBlocked {
                dir: StreamDir::Bidi,
                ..
            } => ft::STREAMS_BLOCKED_BIDI,
            Frame::StreamsBlocked {
                dir: StreamDir::Uni,
                ..
            } => ft::STREAMS_BLOCKED_UNI,
            Frame::ConnectionClose(c) => match c.kind {
                CloseKind::Transport { .. } => ft::CONNECTION_CLOSE,
                CloseKind::Application => ft::CONNECTION_CLOSE_APP,
            },
            Frame::HandshakeDone => ft::HANDSHAKE_DONE,
        }
    }

    /// §13.2 / Table 3 "N": every frame but PADDING, ACK and
    /// CONNECTION_CLOSE makes its packet ack-eliciting.
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding { .. } | Frame::Ack(_) | Frame::ConnectionClose(_)
        )
    }

    /// §12.4 Table 3, "Pkts" column: whether this frame may be sent in a
    /// packet of type `packet`.
    pub fn allowed_in(&self, packet: PacketType) -> bool {
        let app = matches!(packet, PacketType::ZeroRtt | PacketType::OneRtt);
        match self {
            // IH01
            Frame::Padding { .. } | Frame::Ping => true,
            // IH_1
            Frame::Ack(_) | Frame::Crypto { .. } => packet != PacketType::ZeroRtt,
            // ___1
            Frame::NewToken { .. } | Frame::HandshakeDone => packet == PacketType::OneRtt,
            // ih01: "Only a CONNECTION_CLOSE frame of type 0x1c can appear in
            // Initial or Handshake packets."
            Frame::ConnectionClose(c) => match c.kind {
                CloseKind::Transport { .. } => true,
                CloseKind::Application => app,
            },
            // __01
            Frame::ResetStream { .. }
            | Frame::StopSending { .. }
            | Frame::Stream(_)
            | Frame::MaxData(_)
            | Frame::MaxStreamData { .. }
            | Frame::MaxStreams { .. }
            | Frame::DataBlocked(_)
            | Frame::StreamDataBlocked { .. }
            | Frame::StreamsBlocked { .. } => app,
        }
    }

    /// Bytes [`encode`](Self::encode) writes.
    pub fn encoded_len(&self) -> usize {
        let v = varint_len;
        let ty = v(self.type_code());
        match self {
            Frame::Padding { len } => *len,
            Frame::Ping | Frame::HandshakeDone => ty,
            Frame::Ack(a) => a.encoded_len(),
            Frame::ResetStream {
                stream_id,
                error_code,
                final_size,
            } => ty + v(*stream_id) + v(*error_code) + v(*final_size),
            Frame::StopSending {
                stream_id,
                error_code,
            } => ty + v(*stream_id) + v(*error_code),
            Frame::Crypto { offset, data } => ty + v(*offset) + v(data.len() as u64) + data.len(),
            Frame::NewToken { token } => ty + v(token.len() as u64) + token.len(),
            Frame::Stream(s) => {
                let off = if s.offset != 0 { v(s.offset) } else { 0 };
                let len = if s.has_length {
                    v(s.data.len() as u64)
                } else {
                    0
                };
                ty + v(s.stream_id) + off + len + s.data.len()
            }
            Frame::MaxData(m) | Frame::DataBlocked(m) => ty + v(*m),
            Frame::MaxStreamData { stream_id, maximum }
            | Frame::StreamDataBlocked { stream_id, maximum } => ty + v(*stream_id) + v(*maximum),
            Frame::MaxStreams { maximum, .. } | Frame::StreamsBlocked { maximum, .. } => {
                ty + v(*maximum)
            }
            Frame::ConnectionClose(c) => {
                let trigger = match c.kind {
                    CloseKind::Transport { frame_type } => v(frame_type),
                    CloseKind::Application => 0,
                };
                ty + v(c.error_code) + trigger + v(c.reason.len() as u64) + c.reason.len()
            }
        }
    }

    /// The checks decoding applies, applied before encoding, so that
    /// whatever encodes also decodes.
    fn check(&self) -> Result<(), WireError> {
        let kind = self.kind();
        match self {
            Frame::Crypto { offset, data } | Frame::Stream(StreamFrame { offset, data, .. }) => {
                check_offset(kind, *offset, data.len())
            }
            Frame::NewToken { token: &[] } => {
                Err(encoding_error(kind, FrameEncodingReason::EmptyToken))
            }
            Frame::MaxStreams { maximum, .. } | Frame::StreamsBlocked { maximum, .. } => {
                check_stream_count(kind, *maximum)
            }
            _ => Ok(()),
        }
    }

    /// Write the frame at the start of `out`; returns the bytes written. On
    /// an error (a frame that does not fit, a field above 2^62-1, a frame
    /// the decoder would reject) some of `out` may have been overwritten,
    /// but nothing counts as written.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, WireError> {
        self.check()?;
        let needed = self.encoded_len();
        if needed > out.len() {
            return Err(WireError::BufferTooSmall {
                needed,
                available: out.len(),
            });
        }
        let mut w = Writer::new(&mut out[..needed]);
        let f = Field::FrameType;
        match self {
            // §19.1: "PADDING Frame { Type (i) = 0x00 }", once per byte.
            Frame::Padding { len } => w.zeros(*len)?,
            Frame::Ping | Frame::HandshakeDone => {
                w.varint(f, self.type_code())?;
            }
            Frame::Ack(a) => a.encode(&mut w)?,
            Frame::ResetStream {
                stream_id,
                error_code,
                final_size,
            } => {
                // §19.4: Stream ID (i), Application Protocol Error Code (i), Final Size (i).
                w.varint(f, ft::RESET_STREAM)?;
                w.varint(Field::StreamId, *stream_id)?;
                w.varint(Field::ErrorCode, *error_code)?;
                w.varint(Field::FinalSize, *final_size)?;
            }
            Frame::StopSending {
                stream_id,
                error_code,
            } => {
                // §19.5: Stream ID (i), Application Protocol Error Code (i).
                w.varint(f, ft::STOP_SENDING)?;
                w.varint(Field::StreamId, *stream_id)?;
                w.varint(Field::ErrorCode, *error_code)?;
            }
            Frame::Crypto { offset, data } => {
                // §19.6: Offset (i), Length (i), Crypto Data (..).
                w.varint(f, ft::CRYPTO)?;
                w.varint(Field::Offset, *offset)?;
                w.varint(Field::DataLength, data.len() as u64)?;
                w.bytes(data)?;
            }
            Frame::NewToken { token } => {
                // §19.7: Token Length (i), Token (..).
                w.varint(f, ft::NEW_TOKEN)?;
                w.varint(Field::TokenLength, token.len() as u64)?;
                w.bytes(token)?;
            }
            Frame::Stream(s) => {
                // §19.8: Stream ID (i), [Offset (i)], [Length (i)], Stream Data (..).
                w.varint(f, s.type_code())?;
                w.varint(Field::StreamId, s.stream_id)?;
                if s.offset != 0 {
                    w.varint(Field::Offset, s.offset)?;
                }
                if s.has_length {
                    w.varint(Field::DataLength, s.data.len() as u64)?;
                }
                w.bytes(s.data)?;
            }
            // §19.9 Maximum Data (i); §19.12 Maximum Data (i).
            Frame::MaxData(m) | Frame::DataBlocked(m) => {
                w.varint(f, self.type_code())?;
                w.varint(Field::MaximumData, *m)?;
            }
            // §19.10 and §19.13: Stream ID (i), Maximum Stream Data (i).
            Frame::MaxStreamData { stream_id, maximum }
            | Frame::StreamDataBlocked { stream_id, maximum } => {
                w.varint(f, self.type_code())?;
                w.varint(Field::StreamId, *stream_id)?;
                w.varint(Field::MaximumStreamData, *maximum)?;
            }
            // §19.11 and §19.14: Maximum Streams (i).
            Frame::MaxStreams { maximum, .. } | Frame::StreamsBlocked { maximum, .. } => {
                w.varint(f, self.type_code())?;
                w.varint(Field::MaximumStreams, *maximum)?;
            }
            Frame::ConnectionClose(c) => {
                // §19.19: Error Code (i), [Frame Type (i)], Reason Phrase
                // Length (i), Reason Phrase (..).
                w.varint(f, self.type_code())?;
                w.varint(Field::ErrorCode, c.error_code)?;
                if let CloseKind::Transport { frame_type } = c.kind {
                    w.varint(Field::TriggeringFrameType, frame_type)?;
                }
                w.varint(Field::ReasonPhraseLength, c.reason.len() as u64)?;
                w.bytes(c.reason)?;
            }
        }
        debug_assert_eq!(w.pos(), needed);
        Ok(needed)
    }

    /// Read one frame from the start of `buf` (a packet's frames, without
    /// the tag). Returns the frame and the bytes it took. A STREAM frame
    /// without a Length field takes the rest of `buf`.
    pub fn decode(buf: &'a [u8]) -> Result<(Frame<'a>, usize), WireError> {
        let mut r = Reader::new(buf);
        let ty = r.varint(Field::FrameType)?;
        // §12.4: "a frame type MUST use the shortest possible encoding ...
        // An endpoint MAY treat the receipt of a frame type that uses a
        // longer encoding than necessary as a connection error".
        if r.pos() != varint_len(ty) {
            return Err(WireError::NonMinimalFrameType(ty));
        }
        let frame = match ty {
            ft::PADDING => {
                let mut len = 1;
                while r.peek_u8() == Some(0) {
                    r.u8(Field::FrameType)?;
                    len += 1;
                }
                Frame::Padding { len }
            }
            ft::PING => Frame::Ping,
            ft::ACK | ft::ACK_ECN => Frame::Ack(AckFrame::decode(&mut r, ty == ft::ACK_ECN)?),
            ft::RESET_STREAM => Frame::ResetStream {
                stream_id: r.varint(Field::StreamId)?,
                error_code: r.varint(Field::ErrorCode)?,
                final_size: r.varint(Field::FinalSize)?,
            },
            ft::STOP_SENDING => Frame::StopSending {
                stream_id: r.varint(Field::StreamId)?,
                error_code: r.varint(Field::ErrorCode)?,
            },
            ft::CRYPTO => {
                let offset = r.varint(Field::Offset)?;
                let data = r.length_prefixed(Field::DataLength, Field::Data)?;
                // §19.6: "The largest offset delivered on a stream -- the sum
                // of the offset and data length -- cannot exceed 2^62-1."
                check_offset(FrameKind::Crypto, offset, data.len())?;
                Frame::Crypto { offset, data }
            }
            ft::NEW_TOKEN => {
                let token = r.length_prefixed(Field::TokenLength, Field::Token)?;
                if token.is_empty() {
                    return Err(encoding_error(
                        FrameKind::NewToken,
                        FrameEncodingReason::EmptyToken,
                    ));
                }
                Frame::NewToken { token }
            }
            0x08..=0x0f => {
                let stream_id = r.varint(Field::StreamId)?;
                // §19.8: "When the OFF bit is set to 0, the Offset field is
                // absent and the stream data starts at an offset of 0".
                let offset = if ty & ft::STREAM_OFF != 0 {
                    r.varint(Field::Offset)?
                } else {
                    0
                };
                // §19.8: "When the LEN bit is set to 0, the Length field is
                // absent and the Stream Data field extends to the end of the packet."
                let has_length = ty & ft::STREAM_LEN != 0;
                let data = if has_length {
                    r.length_prefixed(Field::DataLength, Field::Data)?
                } else {
                    r.take_rest()
                };
                // §19.8: offset + length "cannot exceed 2^62-1".
                check_offset(FrameKind::Stream, offset, data.len())?;
                Frame::Stream(StreamFrame {
                    stream_id,
                    offset,
                    data,
                    fin: ty & ft::STREAM_FIN != 0,
                    has_length,
                })
            }
            ft::MAX_DATA => Frame::MaxData(r.varint(Field::MaximumData)?),
            ft::MAX_STREAM_DATA => Frame::MaxStreamData {
                stream_id: r.varint(Field::StreamId)?,
                maximum: r.varint(Field::MaximumStreamData)?,
            },
            ft::MAX_STREAMS_BIDI | ft::MAX_STREAMS_UNI => {
                let (dir, maximum) =
                    stream_count(&mut r, ty, ft::MAX_STREAMS_BIDI, FrameKind::MaxStreams)?;
                Frame::MaxStreams { dir, maximum }
            }
            ft::DATA_BLOCKED => Frame::DataBlocked(r.varint(Field::MaximumData)?),
            ft::STREAM_DATA_BLOCKED => Frame::StreamDataBlocked {
                stream_id: r.varint(Field::StreamId)?,
                maximum: r.varint(Field::MaximumStreamData)?,
            },
            ft::STREAMS_BLOCKED_BIDI | ft::STREAMS_BLOCKED_UNI => {
                let (dir, maximum) = stream_count(
                    &mut r,
                    ty,
                    ft::STREAMS_BLOCKED_BIDI,
                    FrameKind::StreamsBlocked,
                )?;
                Frame::StreamsBlocked { dir, maximum }
            }
            ft::CONNECTION_CLOSE | ft::CONNECTION_CLOSE_APP => {
                let error_code = r.varint(Field::ErrorCode)?;
                // §19.19: the Frame Type field is present only in 0x1c.
                let kind = if ty == ft::CONNECTION_CLOSE {
                    CloseKind::Transport {
                        frame_type: r.varint(Field::TriggeringFrameType)?,
                    }
                } else {
                    CloseKind::Application
                };
                let reason = r.length_prefixed(Field::ReasonPhraseLength, Field::ReasonPhrase)?;
                Frame::ConnectionClose(ConnectionClose {
                    kind,
                    error_code,
                    reason,
                })
            }
            ft::HANDSHAKE_DONE => Frame::HandshakeDone,
            ft::NEW_CONNECTION_ID
            | ft::RETIRE_CONNECTION_ID
            | ft::PATH_CHALLENGE
            | ft::PATH_RESPONSE
            | ft::DATAGRAM
            | ft::DATAGRAM_LEN => return Err(WireError::UnsupportedFrameType(ty)),
            // §12.4: "An endpoint MUST treat the receipt of a frame of
            // unknown type as a connection error of type FRAME_ENCODING_ERROR."
            _ => return Err(WireError::UnknownFrameType(ty)),
        };
        Ok((frame, r.pos()))
    }
}

/// The body MAX_STREAMS (§19.11) and STREAMS_BLOCKED (§19.14) share: the
/// direction is the frame type (`bidi` or the one after it), then "Maximum
/// Streams", which "cannot exceed 2^60".
fn stream_count(
    r: &mut Reader<'_>,
    ty: u64,
    bidi: u64,
    kind: FrameKind,
) -> Result<(StreamDir, u64), WireError> {
    let maximum = r.varint(Field::MaximumStreams)?;
    check_stream_count(kind, maximum)?;
    Ok((stream_dir(ty, bidi), maximum))
}

fn stream_dir(ty: u64, bidi: u64) -> StreamDir {
    if ty == bidi {
        StreamDir::Bidi
    } else {
        StreamDir::Uni
    }
}

fn check_varint(field: Field, value: u64) -> Result<(), WireError> {
    if value > VARINT_MAX {
        return Err(WireError::VarintRange { field, value });
    }
    Ok(())
}

fn check_offset(kind: FrameKind, offset: u64, len: usize) -> Result<(), WireError> {
    check_varint(Field::Offset, offset)?;
    match offset.checked_add(len as u64) {
        Some(end) if end <= VARINT_MAX => Ok(()),
        _ => Err(encoding_error(kind, FrameEncodingReason::OffsetOverflow)),
    }
}

fn check_stream_count(kind: FrameKind, maximum: u64) -> Result<(), WireError> {
    if maximum > MAX_STREAM_COUNT {
        return Err(encoding_error(
            kind,
            FrameEncodingReason::StreamCountTooLarge,
        ));
    }
    Ok(())
}
