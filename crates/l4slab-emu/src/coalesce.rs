//! Re-coalescing on write: consecutive TCP segments of one flow that leave
//! the emulated link at the same wake-up are written to the TUN device as one
//! GSO super-packet, as a NIC's GRO would hand them to the stack.
//!
//! Why: a `write()` into a TUN runs the receiving host's whole TCP input path
//! in the forwarder's context (emulator-probe.md §2), so per-packet writes
//! cap the forwarder near 2 Gbit/s and cost most of its CPU at 500 Mbit/s.
//! Emulation is unchanged: every segment went through the queue, the rate
//! model and the delay line on its own and is released at (or after) its own
//! intended time; only segments due at the same instant of the loop share a
//! write, and the receiver sees them at that same instant either way.
//!
//! The rules are those of Linux `tcp_gro_receive`/`inet_gro_receive`, made
//! stricter: same addresses, ports, IP TOS byte (so CE and non-CE segments
//! are never merged), TTL/hop limit, DF, ACK number, window, flags (no
//! SYN/FIN/RST/URG/CWR), TCP header and options byte for byte; the sequence
//! number continues the previous segment; every segment but the last has the
//! first one's payload size; at most [`MAX_SEGS`] segments and 64 KB. Only
//! segments the sending kernel left with a partial checksum
//! (`VIRTIO_NET_HDR_F_NEEDS_CSUM` at the TCP checksum) are merged, and the
//! super-packet keeps that form: IPv4 total length, ID and header checksum,
//! or IPv6 payload length, are set for the whole packet and the TCP checksum
//! field holds the pseudo-header sum over its full length, as the kernel
//! builds its own GSO packets. IPv4 options and IPv6 extension headers are
//! never merged.

use crate::packet::{self, VnetHdr, GSO_TCPV4, GSO_TCPV6, VNET_F_NEEDS_CSUM, VNET_HDR_LEN};

/// Most segments in one super-packet (Linux `MAX_GSO_SEGS`-like bound, and
/// what the kernel itself puts in a 64 KB TSO packet of 1448-byte segments).
pub const MAX_SEGS: u32 = 44;
const MAX_LEN: usize = 65_000;
const TCP_BAD_FLAGS: u8 = 0x01 | 0x02 | 0x04 | 0x20 | 0x80; // FIN SYN RST URG CWR

/// Header facts of a mergeable segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    v6: bool,
    l4: usize,
    hlen: usize,
    seq: u32,
    payload: usize,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `frame` = virtio-net header + IP packet; `Some` if it may be merged.
fn mergeable(frame: &[u8]) -> Option<Seg> {
    let h = VnetHdr::read(frame)?;
    let p = &frame[VNET_HDR_LEN..];
    if h.is_gso() || h.flags & VNET_F_NEEDS_CSUM == 0 || h.csum_offset != 16 {
        return None;
    }
    let info = packet::parse(p).ok()?;
    let l4 = info.l4?;
    let v6 = info.version == 6;
    let plain = if v6 {
        l4 == 40
    } else {
        l4 == 20 && p[6] & 0x3f == 0 && p[7] == 0
    };
    if info.proto != 6 || !plain || usize::from(h.csum_start) != l4 || l4 + 20 > p.len() {
        return None;
    }
    let hlen = l4 + usize::from(p[l4 + 12] >> 4) * 4;
    let end = if v6 {
        40 + usize::from(u16::from_be_bytes([p[4], p[5]]))
    } else {
        usize::from(u16::from_be_bytes([p[2], p[3]]))
    };
    if hlen < l4 + 20 || hlen >= end || end != p.len() || p[l4 + 13] & TCP_BAD_FLAGS != 0 {
        return None;
    }
    Some(Seg {
        v6,
        l4,
        hlen,
        seq: be32(p, l4 + 4),
        payload: end - hlen,
    })
}

/// Do the headers of `a` and `b` (IP packets) allow merging `b` after `a`?
fn same_headers(a: &[u8], b: &[u8], s: &Seg) -> bool {
    let l4 = s.l4;
    let ip_same = if s.v6 {
        // Version, traffic class, flow label; next header; hop limit; addresses.
        a[..4] == b[..4] && a[6..40] == b[6..40]
    } else {
        // Version/IHL, TOS (with ECN), DF, TTL, protocol, addresses.
        a[..2] == b[..2]
            && a[6] & 0x40 == b[6] & 0x40
            && a[8..10] == b[8..10]
            && a[12..20] == b[12..20]
    };
    // Ports; ACK number, data offset, flags, window; options.
    ip_same
        && a[l4..l4 + 4] == b[l4..l4 + 4]
        && a[l4 + 8..l4 + 16] == b[l4 + 8..l4 + 16]
        && a[l4 + 20..s.hlen] == b[l4 + 20..s.hlen]
}

/// Builds one write out of consecutive mergeable segments.
pub struct Coalescer {
    buf: Vec<u8>,
    /// Bytes used in `buf` (header of the first segment, then payloads).
    len: usize,
    segs: u32,
    first: Option<Seg>,
    next_seq: u32,
    /// A short segment was added: nothing may follow it.
    closed: bool,
    /// Statistics: super-packets written and the segments they held.
    pub merged_writes: u64,
    pub merged_segments: u64,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer {
            buf: vec![0; VNET_HDR_LEN + MAX_LEN + 1600],
            len: 0,
            segs: 0,
            first: None,
            next_seq: 0,
            closed: false,
            merged_writes: 0,
            merged_segments: 0,
        }
    }
}

impl Coalescer {
    /// Offer a frame for writing. Frames that cannot join the pending
    /// super-packet flush it through `write` first; frames that cannot be
    /// merged at all are written as they are.
    pub fn push(&mut self, frame: &[u8], write: &mut dyn FnMut(&[u8])) {
        let Some(seg) = mergeable(frame) else {
            self.flush(write);
            write(frame);
            return;
        };
        let p = &frame[VNET_HDR_LEN..];
        if let Some(f) = self.first {
            let joins = !self.closed
                && seg.v6 == f.v6
                && seg.hlen == f.hlen
                && seg.seq == self.next_seq
                && seg.payload <= f.payload
                && self.segs < MAX_SEGS
                && self.len + seg.payload <= VNET_HDR_LEN + MAX_LEN
                && same_headers(&self.buf[VNET_HDR_LEN..], p, &f);
            if joins {
                self.buf[self.len..self.len + seg.payload].copy_from_slice(&p[seg.hlen..]);
                self.len += seg.payload;
                self.segs += 1;
                self.next_seq = seg.seq.wrapping_add(seg.payload as u32);
                self.closed = seg.payload < f.payload;
                return;
            }
            self.flush(write);
        }
        self.buf[..frame.len()].copy_from_slice(frame);
        self.len = frame.len();
        self.segs = 1;
        self.first = Some(seg);
        self.next_seq = seg.seq.wrapping_add(seg.payload as u32);
        self.closed = false;
    }

    /// Write what is pending.
    pub fn flush(&mut self, write: &mut dyn FnMut(&[u8])) {
        let Some(f) = self.first.take() else {
            return;
        };
        if self.segs > 1 {
            let total = self.len - VNET_HDR_LEN;
            VnetHdr {
                flags: VNET_F_NEEDS_CSUM,
                gso_type: if f.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: f.hlen as u16,
                gso_size: f.payload as u16,
                csum_start: f.l4 as u16,
                csum_offset: 16,
            }
            .write(&mut self.buf);
            let p = &mut self.buf[VNET_HDR_LEN..self.len];
            if f.v6 {
                p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
            } else {
                p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                p[10..12].copy_from_slice(&[0, 0]);
                let c = packet::ipv4_header_checksum(p, 20);
                p[10..12].copy_from_slice(&c.to_be_bytes());
            }
            packet::set_pseudo_checksum(p, f.l4);
            self.merged_writes += 1;
            self.merged_segments += u64::from(self.segs);
        }
        write(&self.buf[..self.len]);
        self.len = 0;
        self.segs = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{complete_checksum, ipv4_header_ok, split_gso, transport_checksum_ok};

    /// An IPv4 TCP GSO frame of `payload` bytes with `mss` segments, split.
    fn segments(payload: usize, mss: u16, tos: u8) -> Vec<Vec<u8>> {
        let total = 52 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[1] = tos;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[6] = 0x40;
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 77, 0, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let c = packet::ipv4_header_checksum(&p, 20);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&40000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p[24..28].copy_from_slice(&1000u32.to_be_bytes());
        p[32] = 0x80; // 32-byte TCP header (timestamps)
        p[33] = 0x10; // ACK
        p[40..52].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]);
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let mut frame = vec![0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 52,
            gso_size: mss,
            csum_start: 20,
            csum_offset: 16,
        }
        .write(&mut frame);
        frame.extend_from_slice(&p);
        let mut scratch = vec![0u8; 2000];
        let mut out = Vec::new();
        split_gso(&frame, &mut scratch, |s| out.push(s.to_vec())).unwrap();
        out
    }

    fn run(frames: &[Vec<u8>]) -> (Vec<Vec<u8>>, Coalescer) {
        let mut c = Coalescer::default();
        let mut out = Vec::new();
        for f in frames {
            c.push(f, &mut |w| out.push(w.to_vec()));
        }
        c.flush(&mut |w| out.push(w.to_vec()));
        (out, c)
    }

    #[test]
    fn split_then_merge_gives_back_the_super_packet() {
        let segs = segments(5000, 1448, 0x02);
        assert_eq!(segs.len(), 4);
        let (out, c) = run(&segs);
        assert_eq!(out.len(), 1);
        assert_eq!((c.merged_writes, c.merged_segments), (1, 4));
        let h = VnetHdr::read(&out[0]).unwrap();
        assert_eq!((h.gso_type, h.gso_size, h.hdr_len), (GSO_TCPV4, 1448, 52));
        // Splitting the merged packet again gives the same segments, byte for byte.
        let mut scratch = vec![0u8; 2000];
        let mut again = Vec::new();
        split_gso(&out[0], &mut scratch, |s| again.push(s.to_vec())).unwrap();
        assert_eq!(again, segs);
        let mut whole = out[0][VNET_HDR_LEN..].to_vec();
        assert!(ipv4_header_ok(&whole));
        complete_checksum(&mut whole, 20, 16).unwrap();
        assert!(transport_checksum_ok(&whole));
    }

    #[test]
    fn different_ecn_gaps_and_non_tcp_are_not_merged() {
        let mut segs = segments(4000, 1000, 0x02);
        // A CE mark on the third segment (IPv4 checksum kept valid).
        packet::set_ecn(&mut segs[2][VNET_HDR_LEN..], l4slab_core::Ecn::Ce).unwrap();
        let (out, _) = run(&segs);
        assert_eq!(
            out.len(),
            3,
            "[0,1] merged, [2] alone (CE), [3] alone (ECT(0) after CE)"
        );
        // A sequence gap (a lost segment) splits too.
        let segs = segments(4000, 1000, 0x02);
        let (out, _) = run(&[segs[0].clone(), segs[1].clone(), segs[3].clone()]);
        assert_eq!(out.len(), 2);
        // Not mergeable at all: passed through unchanged.
        let junk = vec![0u8; 30];
        let (out, c) = run(std::slice::from_ref(&junk));
        assert_eq!(out, vec![junk]);
        assert_eq!(c.merged_writes, 0);
    }
}
