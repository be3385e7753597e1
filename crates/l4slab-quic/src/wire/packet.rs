//! Whole packets: a decoded [`Packet`] view (header + lazy frame iterator)
//! and a [`PacketBuilder`] that writes header, frames and tag into a
//! caller's buffer.
//!
//! A packet on the wire is `header | frames | tag`, where the tag is
//! [`TAG_LEN`] zero bytes standing in for the AEAD tag (RFC 9001 §5.3), so
//! [`packet_overhead`] is QUIC's. The builder pads with PADDING so that
//! packet number + frames are at least 4 bytes, as RFC 9001 §5.4.2 requires
//! for the header-protection sample, and the decoder rejects shorter packets
//! as a QUIC endpoint would; there is no header protection otherwise.
//!
//! Coalescing (§12.2): [`Packet::decode`] returns the bytes after a
//! long-header packet, which may hold further packets; a short-header packet
//! takes the rest of the datagram.

use super::frame::{Frame, FrameKind};
use super::header::{Header, PacketType, LENGTH_FIELD_LEN};
use super::varint::{encode_varint_with_len, Writer};
use super::{Field, WireError};

/// Bytes of the AEAD-tag-sized trailer (AEAD_AES_128_GCM's tag, RFC 9001 §5.3).
pub const TAG_LEN: usize = 16;

/// §14.1: "A client MUST expand the payload of all UDP datagrams carrying
/// Initial packets to at least the smallest allowed maximum datagram size of
/// 1200 bytes". For [`PacketBuilder::pad_to`].
pub const MIN_INITIAL_DATAGRAM: usize = 1200;

/// RFC 9001 §5.4.2: the sample starts 4 bytes after the start of the packet
/// number, so packet number + frames (+ 16-byte tag) must cover 4 + 16.
const MIN_PN_AND_FRAMES: usize = 4;

/// The largest Length a 2-byte varint holds (§16): pn + frames + tag.
const MAX_LONG_LENGTH: usize = (1 << 14) - 1;

/// Bytes a packet with this header spends besides its frames: the header
/// (long-header Length counted as 2 bytes) plus the 16-byte tag.
pub fn packet_overhead(header: &Header<'_>) -> usize {
    header.encoded_len() + TAG_LEN
}

/// A decoded packet: its header and its frames, borrowed from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    header: Header<'a>,
    frames: &'a [u8],
    wire_len: usize,
}

impl<'a> Packet<'a> {
    /// Decode the packet at the start of `datagram`. `short_dcid_len` is the
    /// length of the connection IDs this endpoint issued (a short header
    /// does not carry it). Returns the packet and the rest of the datagram
    /// (empty after a short-header packet).
    ///
    /// This checks the header, the tag and the payload's size; frames are
    /// decoded lazily by [`frames`](Self::frames).
    pub fn decode(
        datagram: &'a [u8],
        short_dcid_len: usize,
    ) -> Result<(Packet<'a>, &'a [u8]), WireError> {
        let (header, body, wire_len) = Header::decode(datagram, short_dcid_len)?;
        if body.len() < TAG_LEN {
            return Err(WireError::Truncated(Field::Tag));
        }
        let (frames, tag) = body.split_at(body.len() - TAG_LEN);
        // The stand-in for AEAD authentication: a damaged trailer fails.
        if tag.iter().any(|&b| b != 0) {
            return Err(WireError::BadTag);
        }
        // §12.4: "An endpoint MUST treat receipt of a packet containing no
        // frames as a connection error of type PROTOCOL_VIOLATION."
        if frames.is_empty() {
            return Err(WireError::EmptyPayload);
        }
        // RFC 9001 §5.4.2: "An endpoint MUST discard packets that are not
        // long enough to contain a complete sample."
        let pn_and_frames = header.pn().byte_len() + frames.len();
        if pn_and_frames < MIN_PN_AND_FRAMES {
            return Err(WireError::PayloadTooShort(pn_and_frames));
        }
        let packet = Packet {
            header,
            frames,
            wire_len,
        };
        Ok((packet, &datagram[wire_len..]))
    }

    pub fn header(&self) -> &Header<'a> {
        &self.header
    }

    pub fn packet_type(&self) -> PacketType {
        self.header.packet_type()
    }

    /// The encoded frames (no header, no tag).
    pub fn payload(&self) -> &'a [u8] {
        self.frames
    }

    /// Bytes this packet takes in its datagram, header and tag included.
    pub fn wire_len(&self) -> usize {
        self.wire_len
    }

    /// The frames, in order. Yields an error (and then stops) at the first
    /// malformed frame or one its packet type does not permit (§12.4).
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            rest: self.frames,
            packet: self.packet_type(),
            failed: false,
        }
    }
}

/// Iterator over a packet's frames; see [`Packet::frames`].
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    rest: &'a [u8],
    packet: PacketType,
    failed: bool,
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        let item = Frame::decode(self.rest).and_then(|(frame, n)| {
            // §12.4: "An endpoint MUST treat receipt of a frame in a packet
            // type that is not permitted as a connection error of type
            // PROTOCOL_VIOLATION."
            if !frame.allowed_in(self.packet) {
                return Err(not_allowed(frame.kind(), self.packet));
            }
            self.rest = &self.rest[n..];
            Ok(frame)
        });
        self.failed = item.is_err();
        Some(item)
    }
}

fn not_allowed(frame: FrameKind, packet: PacketType) -> WireError {
    WireError::FrameNotAllowed { frame, packet }
}

/// Writes one packet into a caller's buffer: the header at
/// [`new`](Self::new), frames with [`push`](Self::push), then
/// [`finish`](Self::finish) adds padding if needed, the tag and the long
/// header's Length. A push that fails leaves the packet as it was.
#[derive(Debug)]
pub struct PacketBuilder<'b> {
    buf: &'b mut [u8],
    packet: PacketType,
    /// Where the long header's 2-byte Length goes.
    length_at: Option<usize>,
    /// Start of the packet number.
    pn_at: usize,
    /// Start of the frames.
    frames_at: usize,
    /// End of the frames written so far.
    pos: usize,
    /// Frames may not extend past this (room for the tag, and the long
    /// header's Length limit).
    limit: usize,
    /// Start of a STREAM frame without Length, which must stay last.
    open_at: Option<usize>,
}

impl<'b> PacketBuilder<'b> {
    /// Write `header` at the start of `buf`. Fails if the header is invalid
    /// (a connection ID over 20 bytes, a token length above 2^62-1) or if
    /// `buf` cannot hold the header, the smallest payload and the tag.
    pub fn new(buf: &'b mut [u8], header: &Header<'_>) -> Result<Self, WireError> {
        let mut w = Writer::new(&mut *buf);
        let length_at = header.encode(&mut w)?;
        let frames_at = w.pos();
        let pn_len = header.pn().byte_len();
        let pn_at = frames_at - pn_len;
        let end = match length_at {
            Some(_) => buf.len().min(pn_at + MAX_LONG_LENGTH),
            None => buf.len(),
        };
        let needed = frames_at + (MIN_PN_AND_FRAMES - pn_len).max(1) + TAG_LEN;
        if end < needed {
            return Err(WireError::BufferTooSmall {
                needed,
                available: end,
            });
        }
        Ok(PacketBuilder {
            buf,
            packet: header.packet_type(),
            length_at,
            pn_at,
            frames_at,
            pos: frames_at,
            limit: end - TAG_LEN,
            open_at: None,
        })
    }

    pub fn packet_type(&self) -> PacketType {
        self.packet
    }

    /// Bytes still free for frames (0 after a STREAM frame without Length).
    pub fn remaining(&self) -> usize {
        if self.open_at.is_some() {
            0
        } else {
            self.limit - self.pos
        }
    }

    /// The packet's size on the wire if finished now (tag included).
    pub fn packet_len(&self) -> usize {
        self.pos + TAG_LEN
    }

    /// Whether a frame (or padding) has been written.
    pub fn has_frames(&self) -> bool {
        self.pos > self.frames_at
    }

    /// Append a frame. Fails, leaving the packet unchanged, if it does not
    /// fit, is invalid, follows a STREAM frame without Length, or is not
    /// permitted in this packet type (§12.4 Table 3).
    pub fn push(&mut self, frame: &Frame<'_>) -> Result<(), WireError> {
        if self.open_at.is_some() {
            return Err(WireError::FrameAfterImplicitLength);
        }
        if !frame.allowed_in(self.packet) {
            return Err(not_allowed(frame.kind(), self.packet));
        }
        let n = frame.encode(&mut self.buf[self.pos..self.limit])?;
        if let Frame::Stream(s) = frame {
            if !s.has_length {
                self.open_at = Some(self.pos);
            }
        }
        self.pos += n;
        Ok(())
    }

    /// Add `n` PADDING bytes. They go before a STREAM frame without Length
    /// (which must stay last), otherwise at the end.
    pub fn pad(&mut self, n: usize) -> Result<(), WireError> {
        if n > self.limit - self.pos {
            return Err(WireError::BufferTooSmall {
                needed: self.pos + n + TAG_LEN,
                available: self.limit + TAG_LEN,
            });
        }
        let at = match self.open_at {
            Some(at) => {
                self.buf.copy_within(at..self.pos, at + n);
                self.open_at = Some(at + n);
                at
            }
            None => self.pos,
        };
        // §19.1: PADDING is a single 0x00 byte per frame.
        self.buf[at..at + n].fill(0);
        self.pos += n;
        Ok(())
    }

    /// Pad until the packet (tag included) is `len` bytes; nothing if it
    /// already is (e.g. `MIN_INITIAL_DATAGRAM` minus what else the datagram
    /// carries, for a client Initial, §14.1).
    pub fn pad_to(&mut self, len: usize) -> Result<(), WireError> {
        match len.checked_sub(self.packet_len()) {
            Some(n) if n > 0 => self.pad(n),
            _ => Ok(()),
        }
    }

    /// Complete the packet; returns its size on the wire. Fails if no frame
    /// was written (§12.4).
    pub fn finish(mut self) -> Result<usize, WireError> {
        if !self.has_frames() {
            return Err(WireError::EmptyPayload);
        }
        // RFC 9001 §5.4.2: "packets are padded so that the combined lengths
        // of the encoded packet number and protected payload is at least 4
        // bytes longer than the sample required for header protection".
        let pn_and_frames = self.pos - self.pn_at;
        if pn_and_frames < MIN_PN_AND_FRAMES {
            self.pad(MIN_PN_AND_FRAMES - pn_and_frames)?;
        }
        let end = self.pos + TAG_LEN;
        self.buf[self.pos..end].fill(0);
        if let Some(at) = self.length_at {
            // §17.2: Length covers the Packet Number and Payload fields (the
            // tag is part of the protected payload). `limit` keeps it <= 16383.
            let length = (end - self.pn_at) as u64;
            encode_varint_with_len(
                length,
                LENGTH_FIELD_LEN,
                &mut self.buf[at..at + LENGTH_FIELD_LEN],
            )?;
        }
        Ok(end)
    }
}

/// Encode a whole packet: `header`, then `frames` in order, then the tag.
/// Returns the bytes written.
pub fn encode_packet(
    header: &Header<'_>,
    frames: &[Frame<'_>],
    out: &mut [u8],
) -> Result<usize, WireError> {
    let mut b = PacketBuilder::new(out, header)?;
    for f in frames {
        b.push(f)?;
    }
    b.finish()
}
