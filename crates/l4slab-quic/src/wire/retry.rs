//! The Retry packet (RFC 9000 §17.2.5) and its integrity tag (RFC 9001 §5.8).
//!
//! ```text
//! Retry Packet {
//!   Header Form (1) = 1, Fixed Bit (1) = 1, Long Packet Type (2) = 3, Unused (4),
//!   Version (32), DCID Length (8), DCID (0..160), SCID Length (8), SCID (0..160),
//!   Retry Token (..), Retry Integrity Tag (128),
//! }
//! ```
//!
//! **Integrity tag.** RFC 9001 §5.8 computes it with AES-128-GCM under a
//! key and nonce that the RFC publishes, over a *Retry pseudo-packet*: the
//! client's Original Destination Connection ID (with its length) followed by
//! the Retry packet without the tag. It is not secret: it proves that
//! whoever sent the Retry saw the client's Initial (an off-path attacker
//! does not know the ODCID) and that the packet was not damaged. Without
//! TLS, l4slab computes the same kind of public-key tag with SipHash-2-4
//! (128-bit output) under the fixed key [`RETRY_INTEGRITY_KEY`] over the
//! same pseudo-packet, so a Retry is exactly QUIC's size and the client's
//! check means what QUIC's means.
//!
//! The Unused bits are written as 0 and ignored on reading (§17.2.5: "Unused:
//! ... set to an arbitrary value by the server; a client MUST ignore").

use std::hash::Hasher;

use siphasher::sip128::{Hasher128, SipHasher24};

use super::header::{L4SLAB_VERSION, MAX_CID_LEN};
use super::varint::{Reader, Writer};
use super::{Field, WireError};

/// Bytes of the Retry Integrity Tag (§17.2.5: 128 bits).
pub const RETRY_TAG_LEN: usize = 16;

/// The public key of the integrity tag's stand-in MAC (RFC 9001 §5.8
/// publishes its AES key the same way): ASCII "l4slab retry tag".
pub const RETRY_INTEGRITY_KEY: [u8; 16] = *b"l4slab retry tag";

/// §17.2.5, first byte: long header, fixed bit, type 0x3 (Table 5).
const RETRY_FIRST_BYTE: u8 = 0x80 | 0x40 | (0x03 << 4);

/// A decoded Retry packet, borrowing from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryPacket<'a> {
    /// The client's Source Connection ID (§17.2.5.1: the server copies it).
    pub dcid: &'a [u8],
    /// The connection ID the server chose; the client's next Initial goes to it.
    pub scid: &'a [u8],
    /// Opaque token for the client's next Initial packets (§17.2.5.2).
    pub token: &'a [u8],
}

/// Whether `datagram` starts with a Retry packet of l4slab's version
/// (long header, type 0x3); says nothing about its validity.
pub fn is_retry(datagram: &[u8]) -> bool {
    datagram.len() >= 5
        && datagram[0] & 0xf0 == RETRY_FIRST_BYTE
        && datagram[1..5] == L4SLAB_VERSION.to_be_bytes()
}

/// The tag over the pseudo-packet `odcid_len | odcid | retry_without_tag`
/// (RFC 9001 §5.8, Figure 8).
pub fn retry_integrity_tag(odcid: &[u8], retry_without_tag: &[u8]) -> [u8; RETRY_TAG_LEN] {
    let mut h = SipHasher24::new_with_key(&RETRY_INTEGRITY_KEY);
    h.write_u8(odcid.len() as u8);
    h.write(odcid);
    h.write(retry_without_tag);
    h.finish128().as_bytes()
}

impl<'a> RetryPacket<'a> {
    /// Encode into `out` with the integrity tag for the client's original
    /// Destination Connection ID `odcid`; returns the bytes written.
    ///
    /// Fails if a connection ID is longer than 20 bytes, the token is empty
    /// (§17.2.5.2: a client discards such a Retry) or `out` is too small.
    pub fn encode(&self, odcid: &[u8], out: &mut [u8]) -> Result<usize, WireError> {
        for (field, cid) in [
            (Field::Dcid, self.dcid),
            (Field::Scid, self.scid),
            (Field::Dcid, odcid),
        ] {
            if cid.len() > MAX_CID_LEN {
                return Err(WireError::ConnectionIdTooLong {
                    field,
                    length: cid.len(),
                });
            }
        }
        if self.token.is_empty() {
            return Err(WireError::Truncated(Field::Token));
        }
        let mut w = Writer::new(out);
        w.u8(RETRY_FIRST_BYTE)?;
        w.uint(u64::from(L4SLAB_VERSION), 4)?;
        w.u8(self.dcid.len() as u8)?;
        w.bytes(self.dcid)?;
        w.u8(self.scid.len() as u8)?;
        w.bytes(self.scid)?;
        w.bytes(self.token)?;
        let body = w.pos();
        w.zeros(RETRY_TAG_LEN)?;
        let tag = retry_integrity_tag(odcid, &out[..body]);
        out[body..body + RETRY_TAG_LEN].copy_from_slice(&tag);
        Ok(body + RETRY_TAG_LEN)
    }

    /// Decode a Retry that makes up all of `datagram` and check its
    /// integrity tag against the client's original Destination Connection
    /// ID `odcid` ([`WireError::BadTag`] if it does not match).
    pub fn decode(datagram: &'a [u8], odcid: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(datagram);
        let first = r.u8(Field::FirstByte)?;
        let version = r.uint(Field::Version, 4)? as u32;
        if version != L4SLAB_VERSION {
            return Err(WireError::UnsupportedVersion(version));
        }
        if first & 0x40 == 0 {
            return Err(WireError::FixedBitZero);
        }
        if first & 0xf0 != RETRY_FIRST_BYTE {
            // A long header of another type: not a Retry.
            return Err(WireError::Truncated(Field::FirstByte));
        }
        let dcid = read_cid(&mut r, Field::DcidLength, Field::Dcid)?;
        let scid = read_cid(&mut r, Field::ScidLength, Field::Scid)?;
        let rest = r.take_rest();
        if rest.len() <= RETRY_TAG_LEN {
            // §17.2.5.2: "A client MUST discard a Retry packet with a
            // zero-length Retry Token field."
            return Err(WireError::Truncated(Field::Token));
        }
        let (token, tag) = rest.split_at(rest.len() - RETRY_TAG_LEN);
        let body = datagram.len() - RETRY_TAG_LEN;
        // RFC 9001 §5.8: "clients MUST discard Retry packets that have a
        // Retry Integrity Tag that cannot be validated".
        if retry_integrity_tag(odcid, &datagram[..body]) != tag {
            return Err(WireError::BadTag);
        }
        Ok(RetryPacket { dcid, scid, token })
    }
}

fn read_cid<'a>(r: &mut Reader<'a>, len_field: Field, field: Field) -> Result<&'a [u8], WireError> {
    let len = usize::from(r.u8(len_field)?);
    if len > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong { field, length: len });
    }
    r.bytes(field, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    const ODCID: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

    fn retry() -> RetryPacket<'static> {
        RetryPacket {
            dcid: &[9; 8],
            scid: &[7; 8],
            token: b"a token of some bytes",
        }
    }

    #[test]
    fn round_trip_with_the_tag_checked() {
        let mut buf = [0u8; 128];
        let n = retry().encode(&ODCID, &mut buf).unwrap();
        // first byte + version + 1+8 + 1+8 + token + tag
        assert_eq!(n, 1 + 4 + 9 + 9 + 21 + RETRY_TAG_LEN);
        assert!(is_retry(&buf[..n]));
        assert_eq!(RetryPacket::decode(&buf[..n], &ODCID), Ok(retry()));
        // Another connection's ODCID: the tag does not verify.
        assert_eq!(
            RetryPacket::decode(&buf[..n], &[0; 8]),
            Err(WireError::BadTag)
        );
    }

    #[test]
    fn any_damaged_byte_fails_the_tag_or_the_header() {
        let mut buf = [0u8; 128];
        let n = retry().encode(&ODCID, &mut buf).unwrap();
        for i in 0..n {
            let mut b = buf;
            b[i] ^= 0x40;
            if i == 0 {
                continue; // the unused bits aside, the first byte changes the type
            }
            assert!(RetryPacket::decode(&b[..n], &ODCID).is_err(), "byte {i}");
        }
        // The Unused bits are ignored only by their meaning, not by the tag.
        let mut b = buf;
        b[0] |= 0x0f;
        assert!(is_retry(&b[..n]));
        assert_eq!(RetryPacket::decode(&b[..n], &ODCID), Err(WireError::BadTag));
    }

    #[test]
    fn an_empty_token_is_refused_both_ways() {
        let mut buf = [0u8; 128];
        let empty = RetryPacket {
            token: b"",
            ..retry()
        };
        assert!(empty.encode(&ODCID, &mut buf).is_err());
        // Hand-made: header then only a tag.
        let n = retry().encode(&ODCID, &mut buf).unwrap();
        let header_len = 1 + 4 + 9 + 9;
        let mut short = [0u8; 64];
        short[..header_len].copy_from_slice(&buf[..header_len]);
        assert_eq!(
            RetryPacket::decode(&short[..header_len + RETRY_TAG_LEN], &ODCID),
            Err(WireError::Truncated(Field::Token))
        );
        let _ = n;
    }

    #[test]
    fn the_packet_decoder_reports_a_retry_as_such() {
        let mut buf = [0u8; 128];
        let n = retry().encode(&ODCID, &mut buf).unwrap();
        assert_eq!(Packet::decode(&buf[..n], 8), Err(WireError::Retry));
    }

    #[test]
    fn truncations_never_panic() {
        let mut buf = [0u8; 128];
        let n = retry().encode(&ODCID, &mut buf).unwrap();
        for len in 0..n {
            assert!(RetryPacket::decode(&buf[..len], &ODCID).is_err());
        }
    }
}
