//! Real IPv4 + TCP/UDP headers for a simulated packet, built with
//! `etherparse` from what the transport put in the segment: the IP-ECN
//! field as the packet carries it at the capture point, the flags (ECE, CWR,
//! AE), the window, and the options in Linux's layout (RFC 9293 §3.1, RFC
//! 7323 §3, RFC 2018 §3, RFC 9768 §3.2.3):
//!
//! * SYN, SYN-ACK: MSS, SACK-permitted, timestamps, NOP, window scale (20 B);
//! * any other segment: NOP, NOP, timestamps (12 B);
//! * then the TCP Fast Open option when present (RFC 7413 §4.1.1: kind 34,
//!   length, the cookie; NOPs after it pad it to 4 bytes, as Linux's
//!   `tcp_options_write` puts them: 4 B for a cookie request, 12 B with an
//!   8-byte cookie);
//! * then the AccECN option when present (kind 174, order 1: EE1B, ECEB,
//!   EE0B; NOPs in front pad it to 4 bytes), then the SACK blocks (NOP,
//!   NOP, kind 5, 8 B a block).
//!
//! That is the layout [`l4slab_tcp::Segment::wire_len`] counts, so the
//! IP total length is the packet's wire length (checked). Sequence and ACK
//! numbers are the segment's plus each side's initial sequence number,
//! modulo 2^32; TSval and TSecr are the segment's timestamps in ms (Linux's
//! 1 kHz TCP timestamp clock); the window field is the advertised window
//! shifted right by the connection's window scale (none on SYNs). The
//! payload is not simulated: only the headers are built, and the TCP/UDP
//! checksum is that of an all-zero payload of the right length (zeros add
//! nothing to the one's-complement sum, only the length counts).

use etherparse::{IpEcn, IpNumber, Ipv4Header, TcpHeader, TcpOptionElement, TcpOptions, UdpHeader};
use l4slab_core::{Ecn, Time};
use l4slab_tcp::fastopen::TCPOPT_FASTOPEN;
use l4slab_tcp::{Flags, Segment};

/// Linux's initial TTL (`ip_default_ttl`).
const TTL: u8 = 64;
/// AccECN option kind, order 1 (RFC 9768 §3.2.3: EE1B, ECEB, EE0B).
const ACCECN1: u8 = 174;
/// A zero payload for the checksums, as long as the longest IPv4 packet.
static ZEROS: [u8; 65_536] = [0; 65_536];

/// One direction of a connection on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    /// The sender's initial sequence number.
    pub isn: u32,
    /// The receiver's (what the ACK and SACK numbers count from).
    pub peer_isn: u32,
    /// The sender's MSS option (SYNs).
    pub mss: u16,
    /// The sender's window scale (its SYN's option; applied to other segments).
    pub wscale: u8,
}

/// The IPv4 header of a `payload`-byte packet (after the IP header).
fn ip(e: &Ends, proto: IpNumber, payload: usize, id: u16, ecn: Ecn) -> Ipv4Header {
    let len = u16::try_from(payload).expect("an IPv4 packet is below 64 KiB");
    let mut h = Ipv4Header::new(len, TTL, proto, e.src, e.dst).expect("below 64 KiB");
    h.identification = id;
    h.ecn = IpEcn::try_new(ecn.bits()).expect("two bits");
    h
}

fn ms(t: Time) -> u32 {
    // The TCP timestamp clock wraps (RFC 7323 §5.1).
    (t.as_nanos() / 1_000_000) as u32
}

/// The TCP options of `seg`, as raw bytes (module documentation).
fn tcp_options(e: &Ends, seg: &Segment) -> TcpOptions {
    let syn = seg.flags.contains(Flags::SYN);
    let ts = TcpOptionElement::Timestamp(ms(seg.ts_val), ms(seg.ts_ecr));
    let head = if syn {
        TcpOptions::try_from_elements(&[
            TcpOptionElement::MaximumSegmentSize(e.mss),
            TcpOptionElement::SelectiveAcknowledgementPermitted,
            ts,
            TcpOptionElement::Noop,
            TcpOptionElement::WindowScale(e.wscale),
        ])
    } else {
        TcpOptions::try_from_elements(&[TcpOptionElement::Noop, TcpOptionElement::Noop, ts])
    }
    .expect("fits in 40 B");
    let mut raw = [0u8; TcpOptions::MAX_LEN];
    let mut n = head.len();
    raw[..n].copy_from_slice(head.as_slice());
    if let Some(fo) = seg.fastopen {
        // RFC 7413 §4.1.1: kind 34, length 2 + cookie; NOPs to 4 B.
        let cookie = fo.cookie_bytes();
        let len = 2 + cookie.len();
        raw[n] = TCPOPT_FASTOPEN;
        raw[n + 1] = len as u8;
        raw[n + 2..n + len].copy_from_slice(cookie);
        let padded = fo.wire_bytes() as usize;
        raw[n + len..n + padded].fill(1); // NOP
        n += padded;
    }
    if let Some(a) = seg.accecn {
        // RFC 9768 §3.2.3: kind, length 2 + 3 B per field, 24-bit counters.
        let len = 2 + 3 * usize::from(a.fields);
        let pad = len.next_multiple_of(4) - len;
        raw[n..n + pad].fill(1); // NOP
        n += pad;
        raw[n] = ACCECN1;
        raw[n + 1] = len as u8;
        for (i, v) in [a.e1b, a.ceb, a.e0b][..usize::from(a.fields)]
            .iter()
            .enumerate()
        {
            raw[n + 2 + 3 * i..n + 5 + 3 * i].copy_from_slice(&v.to_be_bytes()[1..]);
        }
        n += len;
    }
    if seg.sack_count > 0 {
        let rel = |v: u64| e.peer_isn.wrapping_add(v as u32);
        let b = seg.sacks();
        let block = |i: usize| b.get(i).map(|b| (rel(b.start), rel(b.end)));
        let sack = TcpOptionElement::SelectiveAcknowledgement(
            block(0).expect("one block at least"),
            [block(1), block(2), None],
        );
        let opts = [TcpOptionElement::Noop, TcpOptionElement::Noop, sack];
        let tail = TcpOptions::try_from_elements(&opts).expect("fits in 40 B");
        raw[n..n + tail.len()].copy_from_slice(tail.as_slice());
        n += tail.len();
    }
    TcpOptions::try_from_slice(&raw[..n]).expect("a multiple of 4 B, at most 40 B")
}

/// Write the IPv4 and TCP headers of `seg` (sent along `e`, IP-ECN `ecn`,
/// IP identification `id`) into `out` (cleared first); `wire_len` is the
/// packet's length on the wire, which the headers must account for.
///
/// # Panics
/// If the headers and the payload do not add up to `wire_len`: the
/// transport's wire length and this layout disagree (a bug).
pub fn tcp(out: &mut Vec<u8>, e: &Ends, id: u16, ecn: Ecn, seg: &Segment, wire_len: u32) {
    let f = seg.flags;
    let syn = f.contains(Flags::SYN);
    let window = if syn {
        seg.wnd.min(0xffff)
    } else {
        (seg.wnd >> e.wscale).min(0xffff)
    };
    let mut t = TcpHeader::new(
        e.sport,
        e.dport,
        e.isn.wrapping_add(seg.seq as u32),
        window as u16,
    );
    t.acknowledgment_number = if f.contains(Flags::ACK) {
        e.peer_isn.wrapping_add(seg.ack as u32)
    } else {
        0
    };
    t.syn = syn;
    t.fin = f.contains(Flags::FIN);
    t.ack = f.contains(Flags::ACK);
    t.ece = f.contains(Flags::ECE);
    t.cwr = f.contains(Flags::CWR);
    // AE is the former NS bit (RFC 9768 §3.2.2).
    t.ns = f.contains(Flags::AE);
    // PSH (the end of an application write) is not modelled: clear.
    t.options = tcp_options(e, seg);
    let payload = &ZEROS[..seg.len as usize];
    let iph = ip(e, IpNumber::TCP, t.header_len() + payload.len(), id, ecn);
    t.checksum = t.calc_checksum_ipv4(&iph, payload).expect("below 64 KiB");
    let mut iph = iph;
    iph.header_checksum = iph.calc_header_checksum();
    assert_eq!(
        u32::from(iph.total_len),
        wire_len,
        "headers {} + {} + payload {} vs wire length {wire_len} of {seg:?}",
        iph.header_len(),
        t.header_len(),
        seg.len
    );
    out.clear();
    iph.write(out).expect("a Vec grows");
    t.write(out).expect("a Vec grows");
}

/// Write the IPv4 and UDP headers of a `payload`-byte datagram into `out`.
pub fn udp(out: &mut Vec<u8>, e: &Ends, id: u16, ecn: Ecn, payload: u32) {
    udp_payload(out, e, id, ecn, &ZEROS[..payload as usize]);
    // The payload of a datagram record is not simulated: headers only.
    out.truncate(Ipv4Header::MIN_LEN + UdpHeader::LEN);
}

/// IPv4 and UDP headers followed by the datagram's own bytes (a byte
/// datagram: the capture shows what the protocol wrote).
pub fn udp_payload(out: &mut Vec<u8>, e: &Ends, id: u16, ecn: Ecn, payload: &[u8]) {
    let mut iph = ip(e, IpNumber::UDP, UdpHeader::LEN + payload.len(), id, ecn);
    let u = UdpHeader::with_ipv4_checksum(e.sport, e.dport, &iph, payload).expect("below 64 KiB");
    iph.header_checksum = iph.calc_header_checksum();
    out.clear();
    iph.write(out).expect("a Vec grows");
    u.write(out).expect("a Vec grows");
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    use l4slab_tcp::{AccEcnOption, SackBlock};

    const E: Ends = Ends {
        src: [10, 2, 0, 2],
        dst: [10, 1, 0, 1],
        sport: 5000,
        dport: 32768,
        isn: 0xffff_fff0,
        peer_isn: 1000,
        mss: 1448,
        wscale: 7,
    };

    /// The headers, checked to parse, with the IP total length and checksum.
    fn built(seg: &Segment, ecn: Ecn) -> Vec<u8> {
        let mut out = Vec::new();
        tcp(&mut out, &E, 7, ecn, seg, seg.wire_len(52));
        let ip = Ipv4Header::from_slice(&out).unwrap().0;
        assert_eq!(ip.calc_header_checksum(), ip.header_checksum);
        assert_eq!(u32::from(ip.total_len), seg.wire_len(52));
        out
    }

    #[test]
    fn a_syn_ack_asking_for_accecn_in_linux_layout() {
        // RFC 9768 §3.1.1: the SYN-ACK's ACE field answers the AccECN SYN.
        let seg = Segment {
            flags: Flags::SYN | Flags::ACK | Flags::AE,
            ack: 1,
            wnd: 65_535,
            ts_val: Time::from_millis(25),
            ts_ecr: Time::from_millis(3),
            ..Segment::default()
        };
        let b = built(&seg, Ecn::NotEct);
        assert_eq!(b.len(), 60, "IPv4 20 + TCP 20 + options 20");
        assert_eq!(b[1] & 0b11, 0, "Not-ECT");
        assert_eq!(b[9], 6, "TCP");
        assert_eq!(b[12..20], [10, 2, 0, 2, 10, 1, 0, 1]);
        let t = &b[20..];
        assert_eq!(t[..4], [0x13, 0x88, 0x80, 0x00], "ports 5000 -> 32768");
        assert_eq!(t[4..8], 0xffff_fff0u32.to_be_bytes(), "the ISN");
        assert_eq!(t[8..12], 1001u32.to_be_bytes(), "the peer's ISN + 1");
        // Data offset 10 words, AE (former NS) set; SYN and ACK.
        assert_eq!((t[12], t[13]), (0xa1, 0x12));
        assert_eq!(t[14..16], [0xff, 0xff], "a SYN's window is not scaled");
        assert_eq!(
            t[20..40],
            [
                2, 4, 0x05, 0xa8, // MSS 1448
                4, 2, // SACK permitted
                8, 10, 0, 0, 0, 25, 0, 0, 0, 3, // TSval 25 ms, TSecr 3 ms
                1, 3, 3, 7, // NOP, window scale 7
            ]
        );
    }

    #[test]
    fn an_ack_with_accecn_option_and_sack_blocks() {
        let mut sack = [SackBlock::default(); 3];
        sack[0] = SackBlock {
            start: 2001,
            end: 3001,
        };
        let seg = Segment {
            flags: Flags::ACK.with_ace(0b101),
            seq: 1,
            ack: 1001,
            wnd: 128 * 300,
            sack,
            sack_count: 1,
            ts_val: Time::from_millis(70_000),
            ts_ecr: Time::from_millis(69_990),
            accecn: Some(AccEcnOption {
                fields: 2,
                e1b: 0x01_0203,
                ceb: 0x0a_0b0c,
                e0b: 1,
            }),
            ..Segment::default()
        };
        let b = built(&seg, Ecn::Ect1);
        // 52 + AccECN 8 + SACK 12.
        assert_eq!(b.len(), 72);
        assert_eq!(b[1] & 0b11, 0b01, "ECT(1)");
        let t = &b[20..];
        assert_eq!(t[4..8], 0xffff_fff1u32.to_be_bytes());
        assert_eq!(t[8..12], 2001u32.to_be_bytes());
        // ACE 0b101 = AE and ECE: AE in byte 12, ECE (0x40) with ACK (0x10).
        assert_eq!((t[12] & 0x0f, t[13]), (0x01, 0x50));
        assert_eq!(t[14..16], 300u16.to_be_bytes(), "window >> 7");
        assert_eq!(t[20..24], [1, 1, 8, 10]);
        assert_eq!(t[24..28], 70_000u32.to_be_bytes());
        assert_eq!(
            t[32..40],
            [174, 8, 0x01, 0x02, 0x03, 0x0a, 0x0b, 0x0c],
            "order 1: EE1B, ECEB"
        );
        assert_eq!(t[40..44], [1, 1, 5, 10]);
        assert_eq!(t[44..48], 3001u32.to_be_bytes(), "SACK from the peer's ISN");
        assert_eq!(t[48..52], 4001u32.to_be_bytes());
        // etherparse reads back what it wrote, checksum included.
        let p = SlicedPacket::from_ip(&b).unwrap();
        let Some(TransportSlice::Tcp(tcp)) = p.transport else {
            panic!("TCP")
        };
        assert!(tcp.ns() && tcp.ece() && !tcp.cwr() && tcp.ack());
        let Some(NetSlice::Ipv4(ip)) = p.net else {
            panic!("IPv4")
        };
        let zeros = vec![0u8; seg.len as usize];
        let hdr = tcp.to_header();
        let sum = hdr
            .calc_checksum_ipv4(&ip.header().to_header(), &zeros)
            .unwrap();
        assert_eq!(sum, hdr.checksum);
    }

    #[test]
    fn a_fast_open_syn_shows_its_cookie_and_its_data() {
        use l4slab_tcp::{FastOpenCookie, FastOpenOption};
        let cookie = FastOpenCookie([1, 2, 3, 4, 5, 6, 7, 8]);
        // RFC 7413 §4.2.2: SYN with the cookie and 500 B of data.
        let seg = Segment {
            flags: Flags::SYN,
            len: 500,
            wnd: 65_535,
            fastopen: Some(FastOpenOption::Cookie(cookie)),
            ..Segment::default()
        };
        let b = built(&seg, Ecn::NotEct);
        assert_eq!(b.len(), 72, "IPv4 20 + TCP 20 + options 20 + Fast Open 12");
        assert_eq!(
            b[2..4],
            572u16.to_be_bytes(),
            "IP total length with the data"
        );
        let t = &b[20..];
        assert_eq!(t[12] >> 4, 13, "data offset: 52 B of TCP header");
        assert_eq!(t[40..52], [34, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1]);
        // A cookie request: the empty option and two NOPs.
        let req = Segment {
            len: 0,
            fastopen: Some(FastOpenOption::Request),
            ..seg
        };
        let b = built(&req, Ecn::NotEct);
        assert_eq!(b.len(), 64);
        assert_eq!(b[60..64], [34, 2, 1, 1]);
        // etherparse reads it back (a data-less one: only headers are kept).
        let p = SlicedPacket::from_ip(&b).unwrap();
        let Some(TransportSlice::Tcp(tcp)) = p.transport else {
            panic!("TCP")
        };
        assert!(tcp.syn() && !tcp.ack());
    }

    #[test]
    fn a_full_data_segment_and_a_datagram_have_their_wire_length() {
        let seg = Segment {
            flags: Flags::ACK | Flags::CWR,
            seq: 1,
            len: 1448,
            ack: 1,
            wnd: 1 << 20,
            ..Segment::default()
        };
        let b = built(&seg, Ecn::Ce);
        assert_eq!(b.len(), 52, "headers only");
        assert_eq!(b[1] & 0b11, 0b11, "CE");
        assert_eq!(b[2..4], 1500u16.to_be_bytes(), "IP total length");
        assert_eq!(b[33], 0x90, "CWR and ACK");
        let mut out = Vec::new();
        udp(&mut out, &E, 3, Ecn::Ect0, 172);
        assert_eq!(out.len(), 28);
        assert_eq!((out[1] & 0b11, out[9]), (0b10, 17), "ECT(0), UDP");
        assert_eq!(out[2..4], 200u16.to_be_bytes());
        assert_eq!(out[24..26], 180u16.to_be_bytes(), "UDP length");
    }
}
