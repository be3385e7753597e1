//! Variable-length integers (RFC 9000 §16) and the byte cursors the rest of
//! the codec reads and writes with.
//!
//! Encoding picks the shortest form; decoding accepts every valid encoding,
//! minimal or not, as RFC 9000 does ("values do not need to be encoded on
//! the minimum number of bytes necessary", §16). A varint can only be
//! malformed by being cut short ([`WireError::BadVarint`]).

use super::{Field, WireError};

/// RFC 9000 §16: a varint holds values up to 2^62-1.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Bytes the shortest encoding of `v` takes: 1, 2, 4 or 8. Values above
/// [`VARINT_MAX`] report 8; encoding them fails with
/// [`WireError::VarintRange`].
pub const fn varint_len(v: u64) -> usize {
    // RFC 9000 §16, Table 4: prefix 00 -> 1 byte, 6 bits; 01 -> 2, 14;
    // 10 -> 4, 30; 11 -> 8, 62.
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Write `v` in its shortest encoding at the start of `out`; returns the
/// bytes written.
pub fn encode_varint(v: u64, out: &mut [u8]) -> Result<usize, WireError> {
    encode_varint_with_len(v, varint_len(v), out)
}

/// Write `v` as a varint of exactly `len` bytes (1, 2, 4 or 8), which may
/// be longer than needed (§16 allows it; the long header's Length uses it).
pub fn encode_varint_with_len(v: u64, len: usize, out: &mut [u8]) -> Result<usize, WireError> {
    Writer::new(out).varint_with_len(Field::Varint, v, len)
}

/// Read a varint from the start of `buf`; returns the value and the bytes
/// it took.
pub fn decode_varint(buf: &[u8]) -> Result<(u64, usize), WireError> {
    let mut r = Reader::new(buf);
    let v = r.varint(Field::Varint)?;
    Ok((v, r.pos()))
}

/// A read cursor over borrowed bytes. Every read is bounds-checked and
/// returns a [`WireError`] naming the field instead of panicking.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes not yet read, consuming them.
    pub(crate) fn take_rest(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        self.pos = self.buf.len();
        rest
    }

    pub(crate) fn peek_u8(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    pub(crate) fn u8(&mut self, field: Field) -> Result<u8, WireError> {
        let b = self.peek_u8().ok_or(WireError::Truncated(field))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, field: Field, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated(field));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A big-endian unsigned integer of `n <= 8` bytes.
    pub(crate) fn uint(&mut self, field: Field, n: usize) -> Result<u64, WireError> {
        debug_assert!(n <= 8);
        Ok(self
            .bytes(field, n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    pub(crate) fn varint(&mut self, field: Field) -> Result<u64, WireError> {
        let first = self.peek_u8().ok_or(WireError::Truncated(field))?;
        // RFC 9000 §16: "The length of a variable-length integer is encoded
        // in the first two bits of the first byte."
        let len = 1usize << (first >> 6);
        if len > self.remaining() {
            return Err(WireError::BadVarint {
                field,
                needed: len,
                available: self.remaining(),
            });
        }
        let raw = self.uint(field, len)?;
        // §16 (App. A.1): the rest of the bits are the value, network byte order.
        Ok(raw & (u64::MAX >> (64 - (8 * len - 2))))
    }

    /// A varint length followed by that many bytes: `len_field` then
    /// `data_field`. A length beyond the input is a
    /// [`WireError::LengthOverflow`].
    pub(crate) fn length_prefixed(
        &mut self,
        len_field: Field,
        data_field: Field,
    ) -> Result<&'a [u8], WireError> {
        let length = self.varint(len_field)?;
        let available = self.remaining();
        if length > available as u64 {
            return Err(WireError::LengthOverflow {
                field: len_field,
                length,
                available,
            });
        }
        self.bytes(data_field, length as usize)
    }
}

/// A write cursor over a caller's buffer. Every write is bounds-checked and
/// returns [`WireError::BufferTooSmall`] instead of panicking.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn reserve(&mut self, n: usize) -> Result<&mut [u8], WireError> {
        let available = self.buf.len() - self.pos;
        if n > available {
            return Err(WireError::BufferTooSmall {
                needed: self.pos + n,
                available: self.buf.len(),
            });
        }
        let s = &mut self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self, b: u8) -> Result<(), WireError> {
        self.reserve(1)?[0] = b;
        Ok(())
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), WireError> {
        self.reserve(b.len())?.copy_from_slice(b);
        Ok(())
    }

    pub(crate) fn zeros(&mut self, n: usize) -> Result<(), WireError> {
        self.reserve(n)?.fill(0);
        Ok(())
    }

    /// The low `n <= 8` bytes of `v`, big-endian.
    pub(crate) fn uint(&mut self, v: u64, n: usize) -> Result<(), WireError> {
        debug_assert!(n <= 8);
        self.bytes(&v.to_be_bytes()[8 - n..])
    }

    pub(crate) fn varint(&mut self, field: Field, v: u64) -> Result<usize, WireError> {
        self.varint_with_len(field, v, varint_len(v))
    }

    pub(crate) fn varint_with_len(
        &mut self,
        field: Field,
        v: u64,
        len: usize,
    ) -> Result<usize, WireError> {
        if v > VARINT_MAX {
            return Err(WireError::VarintRange { field, value: v });
        }
        // §16 Table 4: the 2-bit prefix is log2 of the length.
        let prefix: u8 = match len {
            1 => 0,
            2 => 1,
            4 => 2,
            8 => 3,
            _ => return Err(WireError::VarintLength { value: v, len }),
        };
        if len < 8 && v >= 1 << (8 * len - 2) {
            return Err(WireError::VarintLength { value: v, len });
        }
        let out = self.reserve(len)?;
        out.copy_from_slice(&v.to_be_bytes()[8 - len..]);
        out[0] |= prefix << 6;
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 9000 App. A.1 examples: the 8-byte 0xc2197c5eff14e88c decodes to
    // 151288809941952652; the 4-byte 0x9d7f3e7d to 494878333; the 2-byte
    // 0x7bbd to 15293; the 1-byte 0x25 to 37, as does the 2-byte 0x4025.
    #[test]
    fn rfc9000_appendix_a1_examples() {
        let cases: [(&[u8], u64); 5] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(decode_varint(bytes), Ok((value, bytes.len())));
        }
        // Encoding picks the shortest form, so 37 is one byte, not 0x4025.
        for (bytes, value) in &cases[..4] {
            let mut out = [0u8; 8];
            let n = encode_varint(*value, &mut out).unwrap();
            assert_eq!(&out[..n], *bytes);
        }
    }

    #[test]
    fn boundaries() {
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(16_383), 2);
        assert_eq!(varint_len(16_384), 4);
        assert_eq!(varint_len((1 << 30) - 1), 4);
        assert_eq!(varint_len(1 << 30), 8);
        let mut out = [0u8; 8];
        assert_eq!(encode_varint(VARINT_MAX, &mut out), Ok(8));
        assert_eq!(out, [0xff; 8]);
        assert_eq!(
            encode_varint(VARINT_MAX + 1, &mut out),
            Err(WireError::VarintRange {
                field: Field::Varint,
                value: VARINT_MAX + 1
            })
        );
        assert_eq!(
            encode_varint_with_len(64, 1, &mut out),
            Err(WireError::VarintLength { value: 64, len: 1 })
        );
        assert_eq!(
            decode_varint(&[0x80, 0, 0]),
            Err(WireError::BadVarint {
                field: Field::Varint,
                needed: 4,
                available: 3
            })
        );
        assert_eq!(decode_varint(&[]), Err(WireError::Truncated(Field::Varint)));
    }
}
