//! Packet headers (RFC 9000 §17.2 long, §17.3.1 short) and packet-number
//! truncation (§17.1, App. A.2/A.3).
//!
//! Long headers carry Initial (with its token), 0-RTT and Handshake
//! packets; the short header carries 1-RTT packets, whose Destination
//! Connection ID has no length byte, so the decoder is told the length the
//! endpoint chose. The spin bit is carried as a flag (l4slab sends 0); the
//! key phase must be 0 (no key updates without TLS).
//!
//! A Retry packet has a layout of its own ([`super::retry`]); this decoder
//! reports one as [`WireError::Retry`]. Not implemented: Version
//! Negotiation, header protection (the packet number and first-byte bits are in the
//! clear), and greasing of the fixed bit (RFC 9287).

use std::fmt;

use super::varint::{varint_len, Reader, Writer, VARINT_MAX};
use super::{Field, WireError};

/// The long header's Version: "L4" and 0x0001. Not QUIC v1 (`0x00000001`)
/// and not of the reserved `0x?a?a?a?a` form (§15).
pub const L4SLAB_VERSION: u32 = 0x4c34_0001;

/// §17.2: "In QUIC version 1, this value MUST NOT exceed 20 bytes."
pub const MAX_CID_LEN: usize = 20;

/// Bytes of the long header's Length field as l4slab writes it (see the
/// module header of [`super`]).
pub(crate) const LENGTH_FIELD_LEN: usize = 2;

/// The four packet types that carry frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Initial,
    ZeroRtt,
    Handshake,
    OneRtt,
}

impl PacketType {
    /// §12.3: "0-RTT and 1-RTT data" share the application data space.
    pub const fn space(self) -> PnSpace {
        match self {
            PacketType::Initial => PnSpace::Initial,
            PacketType::Handshake => PnSpace::Handshake,
            PacketType::ZeroRtt | PacketType::OneRtt => PnSpace::ApplicationData,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            PacketType::Initial => "Initial",
            PacketType::ZeroRtt => "0-RTT",
            PacketType::Handshake => "Handshake",
            PacketType::OneRtt => "1-RTT",
        }
    }
}

impl fmt::Display for PacketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// §12.3: the three packet number spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PnSpace {
    Initial,
    Handshake,
    ApplicationData,
}

/// A packet number as it is on the wire: its low `byte_len()` bytes (1–4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TruncatedPn {
    value: u32,
    len: u8,
}

impl TruncatedPn {
    /// `value` must fit `len` bytes, `len` in 1..=4.
    pub fn new(value: u32, len: u8) -> Result<Self, WireError> {
        if !(1..=4).contains(&len) || u64::from(value) >= 1u64 << (8 * u32::from(len)) {
            return Err(WireError::PacketNumberLength { value, len });
        }
        Ok(TruncatedPn { value, len })
    }

    /// The truncated value.
    pub const fn value(self) -> u32 {
        self.value
    }

    /// Its length in bytes, 1..=4.
    pub const fn byte_len(self) -> usize {
        self.len as usize
    }

    /// The full packet number, given the largest received so far in the
    /// space ([`decode_packet_number`]).
    pub fn recover(self, largest_pn: Option<u64>) -> u64 {
        decode_packet_number(largest_pn, self)
    }
}

/// RFC 9000 App. A.2 (`EncodePacketNumber`): truncate `full_pn` to the
/// fewest bytes that let the peer recover it, given the largest packet
/// number it acknowledged in this space (`None` before any).
///
/// Errors if `full_pn` is above 2^62-1, not above `largest_acked`, or more
/// than 2^31 ahead of it (4 bytes cannot disambiguate that).
pub fn encode_packet_number(
    full_pn: u64,
    largest_acked: Option<u64>,
) -> Result<TruncatedPn, WireError> {
    let err = WireError::PacketNumberRange {
        full_pn,
        largest_acked,
    };
    if full_pn > VARINT_MAX {
        return Err(err);
    }
    // A.2: "if largest_acked is None: num_unacked = full_pn + 1
    //       else: num_unacked = full_pn - largest_acked"
    let num_unacked = match largest_acked {
        None => full_pn + 1,
        Some(acked) if acked < full_pn => full_pn - acked,
        Some(_) => return Err(err),
    };
    // A.2: "min_bits = log(num_unacked, 2) + 1; num_bytes = ceil(min_bits / 8)"
    // with a real-valued log: num_bytes <= b  <=>  log2(n) + 1 <= 8b
    // <=>  n <= 2^(8b - 1). So the fewest b with n <= 2^(8b-1).
    let len = (1u8..=4)
        .find(|&b| num_unacked <= 1u64 << (8 * u32::from(b) - 1))
        .ok_or(err)?;
    // A.2: "return encode(full_pn, num_bytes)": the num_bytes least significant bytes.
    let value = (full_pn & ((1u64 << (8 * u32::from(len))) - 1)) as u32;
    Ok(TruncatedPn { value, len })
}

/// RFC 9000 App. A.3 (`DecodePacketNumber`): the packet number closest to
/// `largest_pn + 1` whose low bytes are `truncated` (`largest_pn` is the
/// largest packet number received in this space, `None` before any).
///
/// # Panics
/// If `largest_pn` is above 2^62-1 (no packet number is).
pub fn decode_packet_number(largest_pn: Option<u64>, truncated: TruncatedPn) -> u64 {
    if let Some(largest) = largest_pn {
        assert!(
            largest <= VARINT_MAX,
            "packet number {largest} above 2^62-1"
        );
    }
    // Signed 128-bit arithmetic so "expected_pn - pn_hwin" cannot wrap.
    let largest = largest_pn.map_or(-1, i128::from);
    let pn_nbits = 8 * truncated.byte_len() as u32;
    // A.3: expected_pn = largest_pn + 1; pn_win = 1 << pn_nbits;
    //      pn_hwin = pn_win / 2; pn_mask = pn_win - 1
    let expected_pn = largest + 1;
    let pn_win: i128 = 1 << pn_nbits;
    let pn_hwin = pn_win / 2;
    let pn_mask = pn_win - 1;
    // A.3: "candidate_pn = (expected_pn & ~pn_mask) | truncated_pn"
    let candidate_pn = (expected_pn & !pn_mask) | i128::from(truncated.value);
    // A.3: "if candidate_pn <= expected_pn - pn_hwin and
    //          candidate_pn < (1 << 62) - pn_win: return candidate_pn + pn_win"
    let pn = if candidate_pn <= expected_pn - pn_hwin && candidate_pn < (1 << 62) - pn_win {
        candidate_pn + pn_win
    // A.3: "if candidate_pn > expected_pn + pn_hwin and
    //          candidate_pn >= pn_win: return candidate_pn - pn_win"
    } else if candidate_pn > expected_pn + pn_hwin && candidate_pn >= pn_win {
        candidate_pn - pn_win
    } else {
        candidate_pn
    };
    pn as u64
}

/// A long header's packet type and its type-specific fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LongType<'a> {
    /// §17.2.2; `token` may be empty (a client with no token).
    Initial { token: &'a [u8] },
    /// §17.2.3.
    ZeroRtt,
    /// §17.2.4.
    Handshake,
}

/// §17.2: a long header (the version is always [`L4SLAB_VERSION`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LongHeader<'a> {
    pub ty: LongType<'a>,
    pub dcid: &'a [u8],
    pub scid: &'a [u8],
    pub pn: TruncatedPn,
}

/// §17.3.1: the 1-RTT header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortHeader<'a> {
    /// Its length is fixed by the endpoint that chose it; the decoder is
    /// told it.
    pub dcid: &'a [u8],
    /// §17.4 latency spin bit. l4slab does not spin and sends 0; a decoded
    /// value is kept as received.
    pub spin: bool,
    pub pn: TruncatedPn,
}

/// A packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Header<'a> {
    Long(LongHeader<'a>),
    Short(ShortHeader<'a>),
}

// First-byte bits, §17.2 and §17.3.1.
const FORM_LONG: u8 = 0x80;
const FIXED_BIT: u8 = 0x40;
const LONG_TYPE_MASK: u8 = 0x30;
const LONG_RESERVED_MASK: u8 = 0x0c;
const SHORT_SPIN_BIT: u8 = 0x20;
const SHORT_RESERVED_MASK: u8 = 0x18;
const SHORT_KEY_PHASE: u8 = 0x04;
const PN_LEN_MASK: u8 = 0x03;

impl<'a> Header<'a> {
    pub const fn packet_type(&self) -> PacketType {
        match self {
            Header::Long(h) => match h.ty {
                LongType::Initial { .. } => PacketType::Initial,
                LongType::ZeroRtt => PacketType::ZeroRtt,
                LongType::Handshake => PacketType::Handshake,
            },
            Header::Short(_) => PacketType::OneRtt,
        }
    }

    pub const fn dcid(&self) -> &'a [u8] {
        match self {
            Header::Long(h) => h.dcid,
            Header::Short(h) => h.dcid,
        }
    }

    pub const fn pn(&self) -> TruncatedPn {
        match self {
            Header::Long(h) => h.pn,
            Header::Short(h) => h.pn,
        }
    }

    /// Bytes this header takes on the wire when l4slab writes it, from the
    /// first byte through the packet number (the long header's Length field
    /// counted as 2 bytes).
    pub fn encoded_len(&self) -> usize {
        match self {
            Header::Long(h) => {
                let token = match h.ty {
                    LongType::Initial { token } => varint_len(token.len() as u64) + token.len(),
                    _ => 0,
                };
                // first byte + Version + DCID Len + DCID + SCID Len + SCID
                // + [Token Length + Token] + Length + Packet Number
                1 + 4
                    + 1
                    + h.dcid.len()
                    + 1
                    + h.scid.len()
                    + token
                    + LENGTH_FIELD_LEN
                    + h.pn.byte_len()
            }
            // first byte + DCID + Packet Number
            Header::Short(h) => 1 + h.dcid.len() + h.pn.byte_len(),
        }
    }

    /// Write the header; returns where the long header's Length field is
    /// (written as a 2-byte placeholder for the caller to fill) or `None`
    /// for a short header.
    pub(crate) fn encode(&self, w: &mut Writer<'_>) -> Result<Option<usize>, WireError> {
        match self {
            Header::Long(h) => {
                check_cid(Field::Dcid, h.dcid)?;
                check_cid(Field::Scid, h.scid)?;
                // §17.2: Header Form (1) = 1, Fixed Bit (1) = 1, Long Packet
                // Type (2), Reserved Bits (2) = 0, Packet Number Length (2).
                // §17.2 Table 5: Initial 0x00, 0-RTT 0x01, Handshake 0x02.
                let ty_bits: u8 = match h.ty {
                    LongType::Initial { .. } => 0x00,
                    LongType::ZeroRtt => 0x01,
                    LongType::Handshake => 0x02,
                };
                w.u8(FORM_LONG | FIXED_BIT | (ty_bits << 4) | (h.pn.len - 1))?;
                w.uint(u64::from(L4SLAB_VERSION), 4)?;
                w.u8(h.dcid.len() as u8)?;
                w.bytes(h.dcid)?;
                w.u8(h.scid.len() as u8)?;
                w.bytes(h.scid)?;
                if let LongType::Initial { token } = h.ty {
                    // §17.2.2: Token Length (i), Token (..).
                    w.varint(Field::TokenLength, token.len() as u64)?;
                    w.bytes(token)?;
                }
                let length_at = w.pos();
                // §17.2: Length (i); filled in once the payload is known.
                w.varint_with_len(Field::Length, 0, LENGTH_FIELD_LEN)?;
                w.uint(u64::from(h.pn.value), h.pn.byte_len())?;
                Ok(Some(length_at))
            }
            Header::Short(h) => {
                check_cid(Field::Dcid, h.dcid)?;
                // §17.3.1: Header Form (1) = 0, Fixed Bit (1) = 1, Spin Bit (1),
                // Reserved Bits (2) = 0, Key Phase (1) = 0, Packet Number Length (2).
                let spin = if h.spin { SHORT_SPIN_BIT } else { 0 };
                w.u8(FIXED_BIT | spin | (h.pn.len - 1))?;
                w.bytes(h.dcid)?;
                w.uint(u64::from(h.pn.value), h.pn.byte_len())?;
                Ok(None)
            }
        }
    }

    /// Read a header from the start of a datagram. Returns the header and
    /// the bytes that belong to this packet after it (the packet number's
    /// successors: payload and tag), plus how many bytes of `buf` the whole
    /// packet takes. A long header's packet ends where its Length says; a
    /// short header's packet runs to the end of the datagram.
    pub(crate) fn decode(
        buf: &'a [u8],
        short_dcid_len: usize,
    ) -> Result<(Header<'a>, &'a [u8], usize), WireError> {
        let mut r = Reader::new(buf);
        let first = r.u8(Field::FirstByte)?;
        if first & FORM_LONG != 0 {
            // §17.2: the version comes first; a packet of another version
            // cannot be interpreted further.
            let version = r.uint(Field::Version, 4)? as u32;
            if version != L4SLAB_VERSION {
                return Err(WireError::UnsupportedVersion(version));
            }
            // §17.2: "Packets containing a zero value for this bit are not
            // valid packets in this version and MUST be discarded."
            if first & FIXED_BIT == 0 {
                return Err(WireError::FixedBitZero);
            }
            let ty_bits = (first & LONG_TYPE_MASK) >> 4;
            // §17.2.5: a Retry has no packet number or Length and its low
            // bits are Unused: it is decoded by `RetryPacket::decode`.
            if ty_bits == 0x03 {
                return Err(WireError::Retry);
            }
            // §17.2: "An endpoint MUST treat receipt of a packet that has a
            // non-zero value for these bits ... as a connection error of type
            // PROTOCOL_VIOLATION."
            if first & LONG_RESERVED_MASK != 0 {
                return Err(WireError::ReservedBits((first & LONG_RESERVED_MASK) >> 2));
            }
            let pn_len = (first & PN_LEN_MASK) + 1;
            let dcid = read_cid(&mut r, Field::DcidLength, Field::Dcid)?;
            let scid = read_cid(&mut r, Field::ScidLength, Field::Scid)?;
            let ty = match ty_bits {
                0x00 => LongType::Initial {
                    token: r.length_prefixed(Field::TokenLength, Field::Token)?,
                },
                0x01 => LongType::ZeroRtt,
                0x02 => LongType::Handshake,
                _ => unreachable!("Retry returned above"),
            };
            // §17.2: "Length: This is the length of the remainder of the
            // packet (that is, the Packet Number and Payload fields) in bytes".
            let rest = r.length_prefixed(Field::Length, Field::Length)?;
            let total = r.pos();
            let mut pr = Reader::new(rest);
            let pn = read_pn(&mut pr, pn_len)?;
            let header = Header::Long(LongHeader { ty, dcid, scid, pn });
            Ok((header, pr.take_rest(), total))
        } else {
            // §17.3.1: fixed bit, as for the long header.
            if first & FIXED_BIT == 0 {
                return Err(WireError::FixedBitZero);
            }
            if first & SHORT_RESERVED_MASK != 0 {
                return Err(WireError::ReservedBits((first & SHORT_RESERVED_MASK) >> 3));
            }
            if first & SHORT_KEY_PHASE != 0 {
                return Err(WireError::KeyPhase);
            }
            if short_dcid_len > MAX_CID_LEN {
                return Err(WireError::ConnectionIdTooLong {
                    field: Field::Dcid,
                    length: short_dcid_len,
                });
            }
            let spin = first & SHORT_SPIN_BIT != 0;
            let pn_len = (first & PN_LEN_MASK) + 1;
            let dcid = r.bytes(Field::Dcid, short_dcid_len)?;
            let pn = read_pn(&mut r, pn_len)?;
            let header = Header::Short(ShortHeader { dcid, spin, pn });
            Ok((header, r.take_rest(), buf.len()))
        }
    }
}

fn check_cid(field: Field, cid: &[u8]) -> Result<(), WireError> {
    if cid.len() > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong {
            field,
            length: cid.len(),
        });
    }
    Ok(())
}

fn read_cid<'a>(r: &mut Reader<'a>, len_field: Field, field: Field) -> Result<&'a [u8], WireError> {
    let len = usize::from(r.u8(len_field)?);
    // §17.2: "Endpoints that receive a version 1 long header with a value
    // larger than 20 MUST drop the packet."
    if len > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong { field, length: len });
    }
    r.bytes(field, len)
}

fn read_pn(r: &mut Reader<'_>, pn_len: u8) -> Result<TruncatedPn, WireError> {
    let value = r.uint(Field::PacketNumber, usize::from(pn_len))? as u32;
    Ok(TruncatedPn { value, len: pn_len })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pn(value: u32, len: u8) -> TruncatedPn {
        TruncatedPn::new(value, len).unwrap()
    }

    // RFC 9000 §17.1 / App. A.2: acked 0xabe8b3, sending 0xac5c02 -> 29,519
    // outstanding -> 16 bits; sending 0xace8fe -> 24 bits.
    #[test]
    fn appendix_a2_examples() {
        assert_eq!(
            encode_packet_number(0xac5c02, Some(0xabe8b3)),
            Ok(pn(0x5c02, 2))
        );
        assert_eq!(
            encode_packet_number(0xace8fe, Some(0xabe8b3)),
            Ok(pn(0xace8fe, 3))
        );
    }

    // RFC 9000 App. A.3: largest 0xa82f30ea, 16-bit 0x9b32 -> 0xa82f9b32.
    #[test]
    fn appendix_a3_example() {
        assert_eq!(
            decode_packet_number(Some(0xa82f30ea), pn(0x9b32, 2)),
            0xa82f9b32
        );
    }
}
