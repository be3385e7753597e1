//! The wire format: RFC 9000's packet and frame layouts and codes, without
//! TLS.
//!
//! * [`varint`]: variable-length integers (RFC 9000 §16).
//! * [`header`]: long headers (Initial, 0-RTT, Handshake) and the short
//!   (1-RTT) header (§17.2, §17.3.1); packet-number truncation and recovery
//!   (§17.1, App. A.2/A.3).
//! * [`frame`]: the frames of §19 this transport uses, with their exact type
//!   codes, and [`AckFrame`] with a fixed capacity of ranges.
//! * [`packet`]: a decoded [`Packet`] view (header + frame iterator) and a
//!   [`PacketBuilder`] that encodes into a caller's buffer.
//! * [`retry`]: the Retry packet (§17.2.5) and its integrity tag (RFC 9001
//!   §5.8, with a SipHash stand-in for AES-GCM under a public key).
//!
//! **No allocation, no panics on input.** Encoding writes into a caller's
//! `&mut [u8]` and returns the bytes written, or an error if they do not fit.
//! Decoding reads from `&[u8]`; STREAM, CRYPTO, token, connection-ID and
//! reason-phrase bytes are borrowed slices. Any input decodes to a value or
//! to a [`WireError`] that names what was malformed.
//!
//! **Without TLS.** There is no packet or header protection. Each packet ends
//! in [`TAG_LEN`] zero bytes where QUIC's AEAD tag would be, so sizes are
//! QUIC's; a decoder that finds non-zero bytes there rejects the packet
//! ([`WireError::BadTag`]) as an AEAD would. The version field carries
//! [`L4SLAB_VERSION`], not QUIC v1's `0x00000001`, so a real QUIC stack
//! never mistakes an l4slab packet for its own.
//!
//! **Not implemented** (decoding reports them as errors, never misparses):
//! Version Negotiation packets, header protection, key updates
//! (key phase is always 0), coalescing helpers beyond the `rest` slice that
//! [`Packet::decode`] returns, and the frames NEW_CONNECTION_ID,
//! RETIRE_CONNECTION_ID, PATH_CHALLENGE, PATH_RESPONSE (0x18–0x1b) and
//! DATAGRAM (RFC 9221; 0x30/0x31): [`WireError::UnsupportedFrameType`].
//!
//! **Deviations, each allowed by RFC 9000:** the long header's Length field
//! is always written as a 2-byte varint (as quiche and quinn do; §16 lets any
//! encoding stand) so [`packet_overhead`] does not depend on the payload and
//! a long-header packet holds at most 16383 bytes after the Length field;
//! decoding accepts any encoding. A frame type that is not in its shortest
//! encoding is rejected (§12.4 allows it).

pub mod frame;
pub mod header;
pub mod packet;
pub mod retry;
pub mod varint;

use std::fmt;

pub use frame::{
    AckFrame, CloseKind, ConnectionClose, EcnCounts, Frame, FrameEncodingReason, FrameKind,
    StreamDir, StreamFrame,
};
pub use header::{
    decode_packet_number, encode_packet_number, Header, LongHeader, LongType, PacketType, PnSpace,
    ShortHeader, TruncatedPn, L4SLAB_VERSION, MAX_CID_LEN,
};
pub use packet::{
    encode_packet, packet_overhead, Frames, Packet, PacketBuilder, MIN_INITIAL_DATAGRAM, TAG_LEN,
};
pub use retry::{is_retry, retry_integrity_tag, RetryPacket, RETRY_TAG_LEN};
pub use varint::{decode_varint, encode_varint, encode_varint_with_len, varint_len, VARINT_MAX};

/// What went wrong while decoding or encoding. Decoding errors name the field
/// that was malformed; RFC 9000 would close the connection with
/// FRAME_ENCODING_ERROR or PROTOCOL_VIOLATION (or, for a packet it cannot
/// authenticate, silently drop it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    // ---- decoding: the input is malformed ----
    /// The input ends inside `0`.
    #[error("truncated: the input ends inside {0}")]
    Truncated(Field),
    /// A varint's 2-bit prefix announces more bytes than remain.
    #[error("bad varint in {field}: its prefix announces {needed} bytes, {available} remain")]
    BadVarint {
        field: Field,
        needed: usize,
        available: usize,
    },
    /// A length field (Length, Token Length, a data or reason length)
    /// exceeds the bytes that remain.
    #[error("length overflow: {field} is {length}, but only {available} bytes remain")]
    LengthOverflow {
        field: Field,
        length: u64,
        available: usize,
    },
    /// A frame type RFC 9000 does not define (§12.4: FRAME_ENCODING_ERROR).
    #[error("unknown frame type 0x{0:x}")]
    UnknownFrameType(u64),
    /// A frame type RFC 9000 (or RFC 9221) defines that l4slab does not implement.
    #[error("frame type 0x{0:x} is defined for QUIC but not implemented by l4slab")]
    UnsupportedFrameType(u64),
    /// §12.4: "a frame type MUST use the shortest possible encoding".
    #[error("frame type 0x{0:x} is not in its shortest encoding")]
    NonMinimalFrameType(u64),
    /// A frame whose fields parse but contradict each other (FRAME_ENCODING_ERROR).
    #[error("frame encoding error in {frame}: {reason}")]
    FrameEncoding {
        frame: FrameKind,
        reason: FrameEncodingReason,
    },
    /// §12.4: a frame in a packet type Table 3 does not permit (PROTOCOL_VIOLATION).
    #[error("{frame} frame is not allowed in a {packet} packet (RFC 9000 §12.4, Table 3)")]
    FrameNotAllowed {
        frame: FrameKind,
        packet: PacketType,
    },
    /// §17.2/§17.3.1: packets with a zero fixed bit "MUST be discarded".
    #[error("the fixed bit is 0")]
    FixedBitZero,
    /// §17.2/§17.3.1: non-zero reserved bits are a PROTOCOL_VIOLATION.
    #[error("reserved header bits are 0b{0:02b}, must be 0")]
    ReservedBits(u8),
    /// A short header with key phase 1: without TLS there are no key updates.
    #[error("key phase is 1, but l4slab has no key updates")]
    KeyPhase,
    /// A long header whose version is not [`L4SLAB_VERSION`] (0 would be
    /// Version Negotiation, which is not implemented).
    #[error("unsupported version 0x{0:08x}")]
    UnsupportedVersion(u32),
    /// A Retry packet (long packet type 0x3): it has no packet number or
    /// frames; decode it with [`RetryPacket::decode`].
    #[error("a Retry packet (decode it with RetryPacket::decode)")]
    Retry,
    /// §17.2: a connection ID longer than 20 bytes.
    #[error("{field} is {length} bytes, more than 20")]
    ConnectionIdTooLong { field: Field, length: usize },
    /// §12.4: a packet containing no frames is a PROTOCOL_VIOLATION.
    #[error("the packet contains no frames")]
    EmptyPayload,
    /// RFC 9001 §5.4.2: the packet number and payload (without the tag)
    /// must total at least 4 bytes so a header-protection sample exists.
    #[error("packet number and frames are {0} bytes, fewer than the 4 RFC 9001 §5.4.2 needs")]
    PayloadTooShort(usize),
    /// The AEAD-tag-sized trailer is not all zeros.
    #[error("the 16-byte tag is not all zeros")]
    BadTag,

    // ---- encoding: the value or the buffer does not fit ----
    /// The output buffer is too small.
    #[error("buffer too small: {needed} bytes needed, {available} available")]
    BufferTooSmall { needed: usize, available: usize },
    /// A value above 2^62-1 where a varint is required.
    #[error("{field} is {value}, more than 2^62-1, the largest varint")]
    VarintRange { field: Field, value: u64 },
    /// [`encode_varint_with_len`] asked for a length that is not 1, 2, 4
    /// or 8, or that cannot hold the value.
    #[error("{value} cannot be written as a {len}-byte varint")]
    VarintLength { value: u64, len: usize },
    /// A truncated packet number of a length outside 1..=4 or a value that
    /// does not fit its length.
    #[error("packet number 0x{value:x} does not fit {len} bytes (1..=4)")]
    PacketNumberLength { value: u32, len: u8 },
    /// App. A.2: `full_pn` is not above `largest_acked`, is above 2^62-1, or
    /// is so far ahead that 4 bytes cannot disambiguate it.
    #[error(
        "packet number {full_pn} cannot be encoded with largest acknowledged {largest_acked:?}"
    )]
    PacketNumberRange {
        full_pn: u64,
        largest_acked: Option<u64>,
    },
    /// A frame pushed after a STREAM frame without a Length field, which
    /// must be the last frame of its packet (§19.8).
    #[error("no frame may follow a STREAM frame without a Length field")]
    FrameAfterImplicitLength,
}

/// The field being read or written when a [`WireError`] happened, named as
/// in RFC 9000's packet and frame diagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// A varint read or written on its own ([`decode_varint`], [`encode_varint`]).
    Varint,
    FirstByte,
    Version,
    DcidLength,
    Dcid,
    ScidLength,
    Scid,
    TokenLength,
    Token,
    Length,
    PacketNumber,
    Tag,
    FrameType,
    LargestAcknowledged,
    AckDelay,
    AckRangeCount,
    FirstAckRange,
    Gap,
    AckRangeLength,
    Ect0Count,
    Ect1Count,
    CeCount,
    StreamId,
    ErrorCode,
    FinalSize,
    Offset,
    DataLength,
    Data,
    MaximumData,
    MaximumStreamData,
    MaximumStreams,
    TriggeringFrameType,
    ReasonPhraseLength,
    ReasonPhrase,
}

impl Field {
    /// The field's name in RFC 9000's diagrams.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Varint => "a variable-length integer",
            Field::FirstByte => "the first byte",
            Field::Version => "Version",
            Field::DcidLength => "Destination Connection ID Length",
            Field::Dcid => "Destination Connection ID",
            Field::ScidLength => "Source Connection ID Length",
            Field::Scid => "Source Connection ID",
            Field::TokenLength => "Token Length",
            Field::Token => "Token",
            Field::Length => "Length",
            Field::PacketNumber => "Packet Number",
            Field::Tag => "the 16-byte tag",
            Field::FrameType => "Frame Type",
            Field::LargestAcknowledged => "Largest Acknowledged",
            Field::AckDelay => "ACK Delay",
            Field::AckRangeCount => "ACK Range Count",
            Field::FirstAckRange => "First ACK Range",
            Field::Gap => "Gap",
            Field::AckRangeLength => "ACK Range Length",
            Field::Ect0Count => "ECT0 Count",
            Field::Ect1Count => "ECT1 Count",
            Field::CeCount => "ECN-CE Count",
            Field::StreamId => "Stream ID",
            Field::ErrorCode => "Error Code",
            Field::FinalSize => "Final Size",
            Field::Offset => "Offset",
            Field::DataLength => "Length (of data)",
            Field::Data => "Data",
            Field::MaximumData => "Maximum Data",
            Field::MaximumStreamData => "Maximum Stream Data",
            Field::MaximumStreams => "Maximum Streams",
            Field::TriggeringFrameType => "Frame Type (of CONNECTION_CLOSE)",
            Field::ReasonPhraseLength => "Reason Phrase Length",
            Field::ReasonPhrase => "Reason Phrase",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
