//! The emulator's pcap capture (`pcap = true`; the files: [`l4slab_pcap`]):
//! the real packets the forwarder carries, IPv4 or IPv6 as the kernels sent
//! them, at the bottleneck's ingress (as read from the TUN, after GSO
//! splitting: the segments the queue sees) and egress (as written to the
//! other TUN, with the ECN field the queue and the path left, before write
//! coalescing). A record keeps the IP header and the TCP or UDP header
//! with its options; a packet that is not understood keeps at most
//! [`OTHER_CAPLEN`] bytes. Timestamps are the emulated time since the run's
//! origin, the clock of the packet trace.

use crate::packet::IpInfo;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::parse;

    #[test]
    fn headers_only_tcp_udp_and_the_rest() {
        // IPv4 + TCP with 12 B of options (data offset 8) + 100 B payload.
        let mut p = vec![0u8; 20 + 32 + 100];
        p[0] = 0x45;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[32] = 8 << 4;
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
}
