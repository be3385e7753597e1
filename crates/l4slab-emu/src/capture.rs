//! The emulator's pcap capture (`pcap = true`; the files: [`l4slab_pcap`]):
//! the real packets the forwarder carries, IPv4 or IPv6 as the kernels sent
//! them, at the capture points of every queue they pass (the bottleneck's
//! direction, the hosts' access links), which the runtime logs
//! (`l4slab_bottleneck::QueueEventKind::{Arrive, Leave}`): a packet
//! read from the TUN (after GSO splitting: the segments the queue sees)
//! reaches its first queue when it is read, each next queue at its intended
//! exit time from the one before, and leaves each at its intended exit time
//! (the write to the other TUN, before write coalescing, follows by the
//! forwarder's timing error). Each record carries the ECN field the packet
//! has at that point (the queues' CE marks, the path's rewrites), as the
//! forwarder will write it. A record keeps the IP header and the TCP or UDP
//! header with its options; a packet that is not understood keeps at most
//! [`OTHER_CAPLEN`] bytes. Timestamps are the emulated time since the run's
//! origin, the clock of the packet trace.

use l4slab_core::Ecn;

use crate::packet::{self, IpInfo};

/// Bytes kept of a packet whose transport header is not found.
pub const OTHER_CAPLEN: usize = 128;

/// How many bytes of `ip` (parsed as `info`) a headers-only record keeps:
/// up to the end of its TCP header (options included) or UDP header.
pub fn caplen(ip: &[u8], info: Option<&IpInfo>) -> usize {
    let end = info.and_then(|i| {
        let l4 = i.l4?;
        match i.proto {
            6 => ip.get(l4 + 12).map(|&off| l4 + usize::from(off >> 4) * 4),
            17 => Some(l4 + 8),
            _ => None,
        }
    });
    end.unwrap_or(OTHER_CAPLEN).min(ip.len())
}

/// The record of packet `ip` whose ECN field is now `ecn` (the queues' and
/// the path's, not yet written into the packet): its kept bytes
/// ([`caplen`]) in `buf`, with `ecn` in the copy's IP header (and, for
/// IPv4, its checksum). A packet that does not parse is kept as it is.
pub fn record<'b>(buf: &'b mut Vec<u8>, ip: &[u8], ecn: Ecn) -> &'b [u8] {
    let info = packet::parse(ip).ok();
    buf.clear();
    buf.extend_from_slice(&ip[..caplen(ip, info.as_ref())]);
    if let Some(i) = &info {
        packet::put_ecn(buf, i, ecn);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::parse;

    /// IPv4 + TCP with 12 B of options (data offset 8) + 100 B payload,
    /// with a valid header checksum.
    fn tcp4() -> Vec<u8> {
        let mut p = vec![0u8; 20 + 32 + 100];
        p[0] = 0x45;
        p[1] = 0x01; // ECT(1)
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[32] = 8 << 4;
        let sum: u32 = p[..20]
            .chunks_exact(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        let sum = (sum & 0xffff) + (sum >> 16);
        p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        p
    }

    #[test]
    fn headers_only_tcp_udp_and_the_rest() {
        let mut p = tcp4();
        let info = parse(&p).unwrap();
        assert_eq!(caplen(&p, Some(&info)), 52);
        // UDP: IP + 8.
        p[9] = 17;
        let info = parse(&p).unwrap();
        assert_eq!(caplen(&p, Some(&info)), 28);
        // Not understood: the first 128 bytes, or all of a shorter packet.
        assert_eq!(caplen(&p, None), 128);
        assert_eq!(caplen(&p[..40], None), 40);
    }

    #[test]
    fn a_record_carries_the_ecn_the_packet_has_now_not_what_it_was_read_with() {
        let p = tcp4();
        let mut buf = Vec::new();
        let rec = record(&mut buf, &p, Ecn::Ce).to_vec();
        assert_eq!(rec.len(), 52);
        assert_eq!(rec[1] & 0b11, 0b11, "CE in the copy");
        assert_eq!(p[1] & 0b11, 0b01, "the packet itself is untouched");
        // The copy's header checksum is the one set_ecn gives the packet.
        let mut marked = p.clone();
        assert_eq!(packet::set_ecn(&mut marked, Ecn::Ce), Ok(true));
        assert_eq!(rec[..], marked[..52]);
        // Unchanged ECN: the bytes as read.
        assert_eq!(record(&mut buf, &p, Ecn::Ect1), &p[..52]);
        // Not a packet: kept as it is.
        assert_eq!(record(&mut buf, &[0xff; 30], Ecn::Ce), &[0xff; 30]);
    }
}
