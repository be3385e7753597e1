//! Raw IP packets as the TUN devices hand them over: parsing, the ECN field,
//! checksums, flow hashing and user-space GSO splitting.
//!
//! Everything here is pure (no I/O) and total: any byte string, however
//! malformed, gives either a parse or a typed [`Malformed`] reason, never a
//! panic (`tests/fuzz_packet.rs` feeds random and mutated packets).
//!
//! * ECN (RFC 3168 §5): IPv4 keeps it in the two low bits of the TOS byte,
//!   IPv6 in the two low bits of the Traffic Class. Setting it on IPv4 updates
//!   the header checksum incrementally (RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`)
//!   so the DSCP and every other byte are kept; IPv6 has no header checksum.
//! * GSO: with `IFF_VNET_HDR` each read starts with a 10-byte
//!   `struct virtio_net_hdr` (`include/uapi/linux/virtio_net.h`) and may carry
//!   a TCP "super-packet" of up to 64 KB. [`split_gso`] cuts it into
//!   `gso_size` segments the way the kernel's `tcp_gso_segment` does: each
//!   segment gets a copy of the headers, the IPv4 total length, ID (+1 per
//!   segment) and header checksum, or the IPv6 payload length, are rewritten,
//!   the TCP sequence number advances by the payload before it, CWR stays on
//!   the first segment only (RFC 3168 semantics; Linux keeps it on every
//!   segment only for AccECN, which this kernel cannot negotiate,
//!   emulator-probe.md §4) and FIN/PSH on the last only. The TCP checksum is
//!   left *partial* (pseudo-header sum, `VIRTIO_NET_HDR_F_NEEDS_CSUM`) for the
//!   receiving kernel to complete, exactly as the sending kernel left it.
//!
//! Not handled: UDP GSO (`gso_type` 5) is never offered to us because the
//! emulator does not enable `TUN_F_USO*`; IPv6 extension headers inside a GSO
//! packet (the kernel does not build those for TCP).

use l4slab_core::Ecn;

/// Size of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: checksum from `csum_start` still to be done.
pub const VNET_F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_ECN`: flag bit on `gso_type`.
pub const GSO_ECN: u8 = 0x80;

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// Why a packet could not be understood. Counted by name in the emulator's
/// statistics; the packet is then passed unchanged or dropped, never "fixed".
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("shorter than an IP header")]
    TooShort,
    #[error("IP version is neither 4 nor 6")]
    BadVersion,
    #[error("IPv4 header length field is invalid")]
    BadHeaderLength,
    #[error("IP length field disagrees with the packet size")]
    BadTotalLength,
    #[error("virtio-net header is invalid")]
    BadVnetHeader,
    #[error("GSO packet is not a well-formed TCP packet")]
    BadGso,
    #[error("packet does not fit in a buffer slot")]
    Oversize,
}

impl Malformed {
    pub const ALL: [Malformed; 7] = [
        Malformed::TooShort,
        Malformed::BadVersion,
        Malformed::BadHeaderLength,
        Malformed::BadTotalLength,
        Malformed::BadVnetHeader,
        Malformed::BadGso,
        Malformed::Oversize,
    ];
    /// Stable key in statistics.
    pub const fn name(self) -> &'static str {
        match self {
            Malformed::TooShort => "too_short",
            Malformed::BadVersion => "bad_version",
            Malformed::BadHeaderLength => "bad_header_length",
            Malformed::BadTotalLength => "bad_total_length",
            Malformed::BadVnetHeader => "bad_vnet_header",
            Malformed::BadGso => "bad_gso",
            Malformed::Oversize => "oversize",
        }
    }
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// What the forwarder needs to know about an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    /// 4 or 6.
    pub version: u8,
    pub ecn: Ecn,
    /// IPv4 protocol / IPv6 next header after the extension headers we skip.
    pub proto: u8,
    /// Offset of the transport header, when it could be found.
    pub l4: Option<usize>,
    /// Source and destination ports for TCP and UDP (when the header is there).
    pub ports: Option<(u16, u16)>,
    /// A hash of (addresses, protocol, ports): the flow a qdisc sees.
    pub flow_hash: u32,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// Parse the IP header (and the transport ports if present).
///
/// # Errors
/// A [`Malformed`] reason for anything that is not a consistent IPv4/IPv6 packet.
pub fn parse(p: &[u8]) -> Result<IpInfo, Malformed> {
    let Some(&b0) = p.first() else {
        return Err(Malformed::TooShort);
    };
    match b0 >> 4 {
        4 => parse_v4(p),
        6 => parse_v6(p),
        _ => Err(Malformed::BadVersion),
    }
}

fn parse_v4(p: &[u8]) -> Result<IpInfo, Malformed> {
    if p.len() < 20 {
        return Err(Malformed::TooShort);
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    if ihl < 20 || ihl > p.len() {
        return Err(Malformed::BadHeaderLength);
    }
    let total = usize::from(be16(p, 2));
    if total < ihl || total > p.len() {
        return Err(Malformed::BadTotalLength);
    }
    let proto = p[9];
    // Only the first fragment carries the transport header.
    let frag_offset = be16(p, 6) & 0x1fff;
    let l4 = (frag_offset == 0).then_some(ihl);
    let ports = l4.and_then(|o| ports_at(&p[..total], proto, o));
    let mut h = Fnv::new();
    h.bytes(&p[12..20]);
    Ok(IpInfo {
        version: 4,
        ecn: Ecn::from_bits(p[1]),
        proto,
        l4,
        ports,
        flow_hash: h.proto_ports(proto, ports),
    })
}

fn parse_v6(p: &[u8]) -> Result<IpInfo, Malformed> {
    if p.len() < 40 {
        return Err(Malformed::TooShort);
    }
    let payload = usize::from(be16(p, 4));
    // A jumbogram (payload length 0 with a hop-by-hop option) never reaches a 1500-byte TUN.
    if 40 + payload > p.len() {
        return Err(Malformed::BadTotalLength);
    }
    let end = 40 + payload;
    // Skip hop-by-hop (0), routing (43), fragment (44) and destination options (60).
    let mut next = p[6];
    let mut off = 40usize;
    let mut l4 = None;
    for _ in 0..8 {
        match next {
            0 | 43 | 60 => {
                if off + 2 > end {
                    break;
                }
                next = p[off];
                off += (usize::from(p[off + 1]) + 1) * 8;
            }
            44 => {
                if off + 8 > end {
                    break;
                }
                let first = be16(p, off + 2) & 0xfff8 == 0;
                next = p[off];
                off += 8;
                if !first {
                    break;
                }
            }
            _ => {
                l4 = (off <= end).then_some(off);
                break;
            }
        }
    }
    let ports = l4.and_then(|o| ports_at(&p[..end], next, o));
    let mut h = Fnv::new();
    h.bytes(&p[8..40]);
    Ok(IpInfo {
        version: 6,
        ecn: Ecn::from_bits(p[1] >> 4),
        proto: next,
        l4,
        ports,
        flow_hash: h.proto_ports(next, ports),
    })
}

fn ports_at(p: &[u8], proto: u8, l4: usize) -> Option<(u16, u16)> {
    ((proto == PROTO_TCP || proto == PROTO_UDP) && l4 + 4 <= p.len())
        .then(|| (be16(p, l4), be16(p, l4 + 2)))
}

/// FNV-1a 32 for flow hashes (stable, so a flow keeps its queue).
struct Fnv(u32);
impl Fnv {
    fn new() -> Self {
        Fnv(0x811c_9dc5)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u32::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
    fn proto_ports(mut self, proto: u8, ports: Option<(u16, u16)>) -> u32 {
        self.bytes(&[proto]);
        if let Some((s, d)) = ports {
            self.bytes(&s.to_be_bytes());
            self.bytes(&d.to_be_bytes());
        }
        self.0
    }
}

/// Rewrite the ECN field of a parsed packet to `ecn`, keeping every other
/// bit; for IPv4 the header checksum is updated incrementally (RFC 1624).
/// Returns whether anything changed.
///
/// # Errors
/// [`Malformed`] if `p` does not parse (nothing is written then).
pub fn set_ecn(p: &mut [u8], ecn: Ecn) -> Result<bool, Malformed> {
    let info = parse(p)?;
    Ok(put_ecn(p, &info, ecn))
}

/// [`set_ecn`] of a packet already parsed as `info`, in `p`: the packet or
/// any part of it that holds its whole IP header (a capture record's copy).
/// Returns whether anything changed.
pub fn put_ecn(p: &mut [u8], info: &IpInfo, ecn: Ecn) -> bool {
    if info.ecn == ecn {
        return false;
    }
    if info.version == 4 {
        let old = be16(p, 0);
        p[1] = (p[1] & !0b11) | ecn.bits();
        let new = be16(p, 0);
        // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')
        let hc = be16(p, 10);
        let sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
        put16(p, 10, !fold(sum));
    } else {
        // Traffic class bits 1..0 are bits 5..4 of byte 1.
        p[1] = (p[1] & !0b0011_0000) | (ecn.bits() << 4);
    }
    true
}

/// One's-complement sum of `b` (odd length padded with a zero byte), not folded.
fn sum16(b: &[u8], mut acc: u32) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        acc = acc.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        // Fold early so the accumulator never overflows on 64 KB inputs.
        if acc > 0xffff_0000 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
    }
    if let [last] = chunks.remainder() {
        acc = acc.wrapping_add(u32::from(*last) << 8);
    }
    acc
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The IPv4 header checksum of `p` (which must hold a header of `ihl` bytes)
/// computed with the checksum field taken as zero.
pub fn ipv4_header_checksum(p: &[u8], ihl: usize) -> u16 {
    let s = sum16(&p[..10], 0);
    let s = sum16(&p[12..ihl], s);
    !fold(s)
}

/// Is the IPv4 header checksum of `p` valid? (`false` for anything else.)
pub fn ipv4_header_ok(p: &[u8]) -> bool {
    let Ok(info) = parse(p) else { return false };
    if info.version != 4 {
        return false;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    fold(sum16(&p[..ihl], 0)) == 0xffff
}

/// The pseudo-header sum (RFC 793 / RFC 8200 §8.1) for a transport segment
/// of `l4_len` bytes, folded but not inverted: what Linux leaves in the
/// checksum field of a `CHECKSUM_PARTIAL` packet.
fn pseudo_sum(p: &[u8], version: u8, proto: u8, l4_len: usize) -> u16 {
    let s = if version == 4 {
        sum16(&p[12..20], 0)
    } else {
        sum16(&p[8..40], 0)
    };
    let s = s + u32::from(proto) + (l4_len as u32 & 0xffff) + (l4_len as u32 >> 16);
    fold(s)
}

/// Put the pseudo-header sum of the TCP segment at `l4` (to the end of `p`)
/// in its checksum field: the `CHECKSUM_PARTIAL` form the kernel builds.
pub fn set_pseudo_checksum(p: &mut [u8], l4: usize) {
    let version = p[0] >> 4;
    let ps = pseudo_sum(p, version, PROTO_TCP, p.len() - l4);
    put16(p, l4 + 16, ps);
}

/// Complete a partial checksum in place, as a NIC would: the one's-complement
/// sum from `csum_start` to the end, stored inverted at `csum_start + csum_offset`.
///
/// # Errors
/// [`Malformed::BadVnetHeader`] if the offsets do not fit in `p`.
pub fn complete_checksum(
    p: &mut [u8],
    csum_start: usize,
    csum_offset: usize,
) -> Result<(), Malformed> {
    let at = csum_start
        .checked_add(csum_offset)
        .filter(|&a| a + 2 <= p.len() && csum_start <= p.len())
        .ok_or(Malformed::BadVnetHeader)?;
    let c = !fold(sum16(&p[csum_start..], 0));
    put16(p, at, c);
    Ok(())
}

/// Verify the TCP or UDP checksum of a complete (non-partial) packet.
pub fn transport_checksum_ok(p: &[u8]) -> bool {
    let Ok(info) = parse(p) else { return false };
    let Some(l4) = info.l4 else { return false };
    let end = if info.version == 4 {
        usize::from(be16(p, 2))
    } else {
        40 + usize::from(be16(p, 4))
    };
    if l4 > end {
        return false;
    }
    let s = u32::from(pseudo_sum(p, info.version, info.proto, end - l4));
    fold(sum16(&p[l4..end], s)) == 0xffff
}

/// The decoded `struct virtio_net_hdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Decode the first [`VNET_HDR_LEN`] bytes (little-endian fields, as TUN
    /// uses on little-endian hosts without `TUNSETVNETBE`).
    pub fn read(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        })
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    /// Is this a GSO super-packet?
    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }
}

/// Split one read (`frame` = virtio-net header + IP packet) into MTU-sized
/// packets. Each output is handed to `emit` as one slot of `out_cap` bytes
/// holding its own virtio-net header followed by the packet; `emit` gets
/// the slot's used length. Non-GSO frames are emitted as they are.
///
/// `scratch` must be at least `out_cap` bytes; the emitted slice borrows it.
/// Returns the number of packets emitted.
///
/// # Errors
/// A [`Malformed`] reason, in which case nothing was emitted.
pub fn split_gso(
    frame: &[u8],
    scratch: &mut [u8],
    mut emit: impl FnMut(&[u8]),
) -> Result<usize, Malformed> {
    let hdr = VnetHdr::read(frame).ok_or(Malformed::BadVnetHeader)?;
    let pkt = &frame[VNET_HDR_LEN..];
    let cap = scratch.len();
    if !hdr.is_gso() {
        if frame.len() > cap {
            return Err(Malformed::Oversize);
        }
        emit(frame);
        return Ok(1);
    }
    let info = parse(pkt)?;
    let kind = hdr.gso_type & !GSO_ECN;
    let ok_kind =
        (kind == GSO_TCPV4 && info.version == 4) || (kind == GSO_TCPV6 && info.version == 6);
    let l4 = info.l4.ok_or(Malformed::BadGso)?;
    if !ok_kind || info.proto != PROTO_TCP || hdr.gso_size == 0 || l4 + 20 > pkt.len() {
        return Err(Malformed::BadGso);
    }
    let thl = usize::from(pkt[l4 + 12] >> 4) * 4;
    let hlen = l4 + thl;
    let ip_end = if info.version == 4 {
        usize::from(be16(pkt, 2))
    } else {
        40 + usize::from(be16(pkt, 4))
    };
    if thl < 20 || hlen > ip_end {
        return Err(Malformed::BadGso);
    }
    let mss = usize::from(hdr.gso_size);
    if VNET_HDR_LEN + hlen + mss > cap {
        return Err(Malformed::Oversize);
    }
    let payload = &pkt[hlen..ip_end];
    let n = payload.len().div_ceil(mss).max(1);
    let seq0 = u32::from_be_bytes([pkt[l4 + 4], pkt[l4 + 5], pkt[l4 + 6], pkt[l4 + 7]]);
    let flags0 = pkt[l4 + 13];
    let id0 = if info.version == 4 { be16(pkt, 4) } else { 0 };
    for i in 0..n {
        let chunk = &payload[(i * mss).min(payload.len())..((i + 1) * mss).min(payload.len())];
        let len = hlen + chunk.len();
        let out = &mut scratch[..VNET_HDR_LEN + len];
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: GSO_NONE,
            hdr_len: 0,
            gso_size: 0,
            csum_start: l4 as u16,
            csum_offset: 16,
        }
        .write(out);
        let s = &mut out[VNET_HDR_LEN..];
        s[..hlen].copy_from_slice(&pkt[..hlen]);
        s[hlen..].copy_from_slice(chunk);
        if info.version == 4 {
            put16(s, 2, len as u16);
            put16(s, 4, id0.wrapping_add(i as u16));
            put16(s, 10, 0);
            let ihl = usize::from(s[0] & 0x0f) * 4;
            let c = ipv4_header_checksum(s, ihl);
            put16(s, 10, c);
        } else {
            put16(s, 4, (len - 40) as u16);
        }
        let seq = seq0.wrapping_add((i * mss) as u32);
        s[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i + 1 < n {
            flags &= !(TCP_FIN | TCP_PSH);
        }
        if i > 0 {
            flags &= !TCP_CWR;
        }
        s[l4 + 13] = flags;
        let ps = pseudo_sum(s, info.version, PROTO_TCP, len - l4);
        put16(s, l4 + 16, ps);
        emit(out);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal IPv4/TCP packet with a valid header checksum.
    pub(crate) fn v4_tcp(tos: u8, payload: usize) -> Vec<u8> {
        let total = 40 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[1] = tos;
        put16(&mut p, 2, total as u16);
        put16(&mut p, 4, 0x1234);
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 77, 0, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let c = ipv4_header_checksum(&p, 20);
        put16(&mut p, 10, c);
        put16(&mut p, 20, 40000);
        put16(&mut p, 22, 5001);
        p[32] = 0x50;
        p[33] = 0x18;
        for (i, b) in p[40..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn ipv4_ce_mark_keeps_dscp_and_checksum() {
        // DSCP EF (0xb8) + ECT(0): 0xba -> CE 0xbb.
        let mut p = v4_tcp(0xba, 100);
        assert!(ipv4_header_ok(&p));
        assert_eq!(parse(&p).unwrap().ecn, Ecn::Ect0);
        assert_eq!(set_ecn(&mut p, Ecn::Ce), Ok(true));
        assert_eq!(p[1], 0xbb);
        assert!(ipv4_header_ok(&p));
        // The incremental update equals a recomputation.
        assert_eq!(be16(&p, 10), ipv4_header_checksum(&p, 20));
        assert_eq!(set_ecn(&mut p, Ecn::Ce), Ok(false));
        assert_eq!(set_ecn(&mut p, Ecn::NotEct), Ok(true));
        assert_eq!(p[1], 0xb8);
        assert!(ipv4_header_ok(&p));
    }

    #[test]
    fn ipv6_ecn_lives_in_the_traffic_class() {
        let mut p = vec![0u8; 48];
        // Version 6, traffic class 0xb9 (DSCP 46 + ECT(1)), flow label 0x12345.
        p[0] = 0x6b;
        p[1] = 0x91;
        p[2] = 0x23;
        p[3] = 0x45;
        put16(&mut p, 4, 8);
        p[6] = PROTO_UDP;
        put16(&mut p, 40, 1234);
        put16(&mut p, 42, 4321);
        let i = parse(&p).unwrap();
        assert_eq!(
            (i.version, i.ecn, i.ports),
            (6, Ecn::Ect1, Some((1234, 4321)))
        );
        set_ecn(&mut p, Ecn::Ce).unwrap();
        assert_eq!(&p[..4], &[0x6b, 0xb1, 0x23, 0x45]);
    }

    #[test]
    fn malformed_inputs_are_named() {
        assert_eq!(parse(&[]), Err(Malformed::TooShort));
        assert_eq!(parse(&[0x45; 10]), Err(Malformed::TooShort));
        assert_eq!(parse(&[0x25; 40]), Err(Malformed::BadVersion));
        let mut p = v4_tcp(0, 0);
        p[0] = 0x44;
        assert_eq!(parse(&p), Err(Malformed::BadHeaderLength));
        let mut p = v4_tcp(0, 0);
        put16(&mut p, 2, 41);
        assert_eq!(parse(&p), Err(Malformed::BadTotalLength));
    }

    #[test]
    fn gso_split_makes_valid_mss_segments() {
        // 3 segments of 1000 + one of 500 payload bytes, with FIN|PSH|CWR set.
        let mut p = v4_tcp(0x02, 3500);
        p[33] = 0x80 | 0x18 | 0x01;
        let mut frame = vec![0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 40,
            gso_size: 1000,
            csum_start: 20,
            csum_offset: 16,
        }
        .write(&mut frame);
        frame.extend_from_slice(&p);
        let mut scratch = vec![0u8; 2048];
        let mut segs: Vec<Vec<u8>> = Vec::new();
        let n = split_gso(&frame, &mut scratch, |s| segs.push(s.to_vec())).unwrap();
        assert_eq!(n, 4);
        let mut payload = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let h = VnetHdr::read(s).unwrap();
            assert!(!h.is_gso());
            let mut pkt = s[VNET_HDR_LEN..].to_vec();
            assert!(ipv4_header_ok(&pkt), "segment {i}");
            assert_eq!(be16(&pkt, 4), 0x1234 + i as u16);
            complete_checksum(&mut pkt, h.csum_start.into(), h.csum_offset.into()).unwrap();
            assert!(transport_checksum_ok(&pkt), "segment {i}");
            let seq = u32::from_be_bytes([pkt[24], pkt[25], pkt[26], pkt[27]]);
            assert_eq!(seq, (i * 1000) as u32);
            let flags = pkt[33];
            assert_eq!(flags & TCP_CWR != 0, i == 0);
            assert_eq!(flags & (TCP_FIN | TCP_PSH) != 0, i == 3);
            payload.extend_from_slice(&pkt[40..]);
        }
        assert_eq!(payload, &p[40..]);
    }

    #[test]
    fn checksum_completion_matches_a_full_computation() {
        let mut p = v4_tcp(0, 333);
        // Put the pseudo-header sum in the field, as CHECKSUM_PARTIAL does.
        let ps = pseudo_sum(&p, 4, PROTO_TCP, p.len() - 20);
        put16(&mut p, 36, ps);
        complete_checksum(&mut p, 20, 16).unwrap();
        assert!(transport_checksum_ok(&p));
        assert_eq!(
            complete_checksum(&mut p, 20, 400),
            Err(Malformed::BadVnetHeader)
        );
    }
}
