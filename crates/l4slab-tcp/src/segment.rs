//! Segments: what one endpoint hands the other, and their size on the wire.
//!
//! A [`Segment`] carries the TCP header fields the model uses (RFC 9293 §3.1)
//! plus the timestamps option (RFC 7323 §3) and the SACK option (RFC 2018 §3).
//! Payload bytes are not simulated: `len` counts them.
//!
//! **Sequence numbers** are absolute `u64` byte offsets starting at the
//! initial sequence number 0 (the SYN occupies 0, the first data byte is 1).
//! Wrap-around (RFC 9293 §3.4 modular arithmetic) and PAWS (RFC 7323 §5) are
//! not modelled: 2^64 bytes is more than any run sends, so plain `<` is exact.
//!
//! **Wire length** (what queues and links see), see [`Segment::wire_len`]:
//! `header_bytes` (52 B by default = IPv4 20 + TCP 20 + timestamps option 12,
//! as every Linux segment carries timestamps) + payload + SACK option
//! (`4 + 8*n` B for `n` blocks: 2 NOPs, kind, length and 8 B per block, the
//! aligned layout Linux writes, `TCPOLEN_SACK_BASE_ALIGNED`) + on SYN and
//! SYN/ACK 8 B more for MSS (4), SACK-permitted (2) and window scale (3) with
//! padding, as Linux lays out its SYN options (60 B SYN in total) + the AccECN
//! option when present ([`AccEcnOption::wire_bytes`]: 12 B with three
//! counters) + the TCP Fast Open option on a SYN or SYN/ACK that carries one
//! ([`FastOpenOption::wire_bytes`], RFC 7413 §4.1.1: kind 34, length, cookie,
//! padded with NOPs to 4 B as Linux writes it: 4 B for a cookie request, 12 B
//! with Linux's 8-byte cookie). A full data segment is therefore 1448 + 52 =
//! 1500 B and a pure ACK 52 B (64 B with a full AccECN option); a Fast Open
//! SYN with a cookie and its most data, 1420 B, is 1420 + 60 + 12 = 1492 B.
//!
//! **SYN data** (RFC 7413): a SYN's payload occupies the sequence numbers
//! after the SYN's own (`seq + 1 .. seq + 1 + len`), as any segment's
//! payload follows its SYN (RFC 9293 §3.4); [`Segment::seq_len`] counts both.

use core::fmt;
use core::ops::{BitOr, BitOrAssign};

use l4slab_core::{Ecn, Time};

pub use crate::fastopen::FastOpenOption;

/// TCP header flags that the model uses, at their header bit positions
/// (RFC 9293 §3.1; AE is the former NS bit, RFC 9768 §3.2.2).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags(u16);

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const FIN: Flags = Flags(0x001);
    pub const SYN: Flags = Flags(0x002);
    pub const ACK: Flags = Flags(0x010);
    /// ECN-Echo (RFC 3168 §6.1); the low bit of AccECN's ACE field.
    pub const ECE: Flags = Flags(0x040);
    /// Congestion Window Reduced (RFC 3168 §6.1); the middle bit of ACE.
    pub const CWR: Flags = Flags(0x080);
    /// Accurate ECN (RFC 9768 §3.2.2); the high bit of ACE.
    pub const AE: Flags = Flags(0x100);

    pub const fn bits(self) -> u16 {
        self.0
    }

    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn intersects(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }

    /// The 3-bit AccECN ACE field, `AE|CWR|ECE` (RFC 9768 §3.2.2).
    pub const fn ace(self) -> u8 {
        (((self.0 & 0x100) >> 6) | ((self.0 & 0x080) >> 6) | ((self.0 & 0x040) >> 6)) as u8
    }

    /// These flags with the ACE field replaced by `ace & 0b111`.
    pub const fn with_ace(self, ace: u8) -> Flags {
        let keep = self.0 & !(0x100 | 0x080 | 0x040);
        Flags(keep | ((ace as u16 & 0b111) << 6))
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, o: Flags) {
        self.0 |= o.0;
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(Flags, &str); 6] = [
            (Flags::SYN, "SYN"),
            (Flags::FIN, "FIN"),
            (Flags::ACK, "ACK"),
            (Flags::ECE, "ECE"),
            (Flags::CWR, "CWR"),
            (Flags::AE, "AE"),
        ];
        let mut first = true;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// One SACK block (RFC 2018 §3): `start` is the first sequence number of the
/// block, `end` the one immediately after its last byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// SACK blocks that fit next to the timestamps option (RFC 2018 §3: "a SACK
/// option that specifies n blocks will have a length of 8*n+2 bytes, so the
/// 40 bytes available for TCP options can specify a maximum of 4 blocks ... 3
/// if the Timestamp option is used").
pub const MAX_SACK_BLOCKS: usize = 3;

/// Extra option bytes on SYN and SYN/ACK beyond the timestamps option: MSS 4,
/// SACK-permitted 2, window scale 3, one NOP (Linux `tcp_syn_options`).
pub const SYN_OPTION_BYTES: u32 = 8;

/// Bytes of an `n`-block SACK option as Linux aligns it: NOP, NOP, kind,
/// length, then 8 B per block (`TCPOLEN_SACK_BASE_ALIGNED + n * TCPOLEN_SACK_PERBLOCK`).
pub const fn sack_option_bytes(n: u8) -> u32 {
    if n == 0 {
        0
    } else {
        4 + 8 * n as u32
    }
}

/// Bytes of an AccECN option with `fields` 24-bit counters (RFC 9768 §3.2.3:
/// kind, length, 3 B per counter = 2, 5, 8 or 11 B), padded to 4-byte
/// alignment with NOPs: 4, 8, 8 or 12 B. (Linux can sometimes save the
/// padding by sharing the SACK option's NOPs; not modelled.)
pub const fn accecn_option_bytes(fields: u8) -> u32 {
    (2 + 3 * fields as u32).div_ceil(4) * 4
}

/// The AccECN option (RFC 9768 §3.2.3), as the receiver of the data writes
/// it in "order 1" (kind 174, `TCPOPT_ACCECN1`: EE1B, ECEB, EE0B), the order
/// Linux sends. `fields` counters are present, in that order: 1 = e1b only,
/// 2 = e1b and ceb, 3 = all three. Values are the 24-bit wire values (the
/// counters include the initial offsets, RFC 9768 §3.2.1: e0b and e1b start
/// at 1, ceb at 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnOption {
    pub fields: u8,
    /// Payload bytes received marked ECT(1), + 1, mod 2^24.
    pub e1b: u32,
    /// Payload bytes received marked CE, mod 2^24.
    pub ceb: u32,
    /// Payload bytes received marked ECT(0), + 1, mod 2^24.
    pub e0b: u32,
}

impl AccEcnOption {
    /// Size on the wire, alignment included.
    pub const fn wire_bytes(&self) -> u32 {
        accecn_option_bytes(self.fields)
    }
}

/// One TCP segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub flags: Flags,
    /// Sequence number of the first byte (or of the SYN/FIN if `len == 0`).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgment: next byte expected (valid if `ACK` is set).
    pub ack: u64,
    /// Receive window in bytes (no window scaling is modelled: it is exact).
    pub wnd: u64,
    /// SACK blocks, the most recent first (RFC 2018 §4); `sack_count` are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_count: u8,
    /// Timestamps option TSval: the sender's clock when this was sent (RFC 7323 §3).
    pub ts_val: Time,
    /// Timestamps option TSecr: the echoed `TS.Recent` (valid if `ACK` is set).
    pub ts_ecr: Time,
    /// The AccECN option, if present (RFC 9768 §3.2.3).
    pub accecn: Option<AccEcnOption>,
    /// The TCP Fast Open option (RFC 7413 §4.1.1), SYN and SYN/ACK only.
    pub fastopen: Option<FastOpenOption>,
    /// Not on the wire: this data segment is a retransmission (for packet traces).
    pub retransmission: bool,
}

impl Segment {
    /// The valid SACK blocks, most recent first.
    pub fn sacks(&self) -> &[SackBlock] {
        &self.sack[..usize::from(self.sack_count)]
    }

    /// Sequence space this segment occupies: payload, plus one for SYN and FIN
    /// (RFC 9293 §3.4).
    pub fn seq_len(&self) -> u64 {
        u64::from(self.len)
            + u64::from(self.flags.contains(Flags::SYN))
            + u64::from(self.flags.contains(Flags::FIN))
    }

    /// First sequence number after this segment.
    pub fn end(&self) -> u64 {
        self.seq + self.seq_len()
    }

    /// The 3-bit AccECN ACE field of the header (RFC 9768 §3.2.2).
    pub fn ace(&self) -> u8 {
        self.flags.ace()
    }

    /// Size on the wire with `header_bytes` of IP + TCP + timestamps headers
    /// (see the module documentation for the layout).
    pub fn wire_len(&self, header_bytes: u32) -> u32 {
        let syn = if self.flags.contains(Flags::SYN) {
            SYN_OPTION_BYTES
        } else {
            0
        };
        let accecn = self.accecn.map_or(0, |o| o.wire_bytes());
        let fastopen = self.fastopen.map_or(0, |o| o.wire_bytes());
        header_bytes + self.len + sack_option_bytes(self.sack_count) + syn + accecn + fastopen
    }
}

/// A segment handed to the network, with its IP ECN field and wire length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub seg: Segment,
    pub ecn: Ecn,
    pub wire_len: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_lengths_match_linux_layout() {
        let mut s = Segment {
            flags: Flags::ACK,
            len: 1448,
            ..Segment::default()
        };
        // Full data segment: 1448 + 20 IPv4 + 20 TCP + 12 timestamps = 1500.
        assert_eq!(s.wire_len(52), 1500);
        s.len = 0;
        assert_eq!(s.wire_len(52), 52);
        // One SACK block: 52 + 4 + 8 = 64; three: 52 + 28 = 80 (12 + 28 = 40 B of options, the maximum).
        s.sack_count = 1;
        assert_eq!(s.wire_len(52), 64);
        s.sack_count = 3;
        assert_eq!(s.wire_len(52), 80);
        let syn = Segment {
            flags: Flags::SYN,
            ..Segment::default()
        };
        assert_eq!(syn.wire_len(52), 60);
        assert_eq!(syn.seq_len(), 1);
        // AccECN option (RFC 9768 §3.2.3): 2 + 3n B, padded to 4: 4, 8, 8, 12.
        let sizes: Vec<u32> = (0..4).map(accecn_option_bytes).collect();
        assert_eq!(sizes, [4, 8, 8, 12]);
        // A pure ACK with a full option and one SACK block: 52 + 12 + 12 = 76.
        let ack = Segment {
            flags: Flags::ACK,
            sack_count: 1,
            accecn: Some(AccEcnOption {
                fields: 3,
                ..AccEcnOption::default()
            }),
            ..Segment::default()
        };
        assert_eq!(ack.wire_len(52), 76);
        // TCP Fast Open (RFC 7413 §4.1.1): a cookie request adds 4 B (kind,
        // length, 2 NOPs), an 8-byte cookie 12 B; SYN data counts once in
        // the wire length and once in the sequence space, after the SYN.
        let request = Segment {
            fastopen: Some(FastOpenOption::Request),
            ..syn
        };
        assert_eq!(request.wire_len(52), 64);
        let cookie = crate::fastopen::FastOpenCookie::derive(1, 2);
        let syn_data = Segment {
            len: 1420,
            fastopen: Some(FastOpenOption::Cookie(cookie)),
            ..syn
        };
        assert_eq!(syn_data.wire_len(52), 1492);
        assert_eq!(syn_data.seq_len(), 1421);
        assert_eq!(syn_data.end(), 1421);
    }

    #[test]
    fn ace_field_round_trips_and_keeps_other_flags() {
        let f = Flags::SYN | Flags::AE | Flags::CWR | Flags::ECE;
        assert_eq!(f.ace(), 0b111);
        for v in 0..8 {
            let g = (Flags::ACK | Flags::FIN).with_ace(v);
            assert_eq!(g.ace(), v);
            assert!(g.contains(Flags::ACK | Flags::FIN));
        }
        assert_eq!(Flags::CWR.ace(), 0b010);
        assert_eq!(format!("{:?}", Flags::SYN | Flags::ACK), "SYN|ACK");
    }
}
