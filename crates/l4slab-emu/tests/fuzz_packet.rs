//! Fuzzing the packet code with proptest: random bytes, and valid packets
//! with random mutations, through parsing, ECN rewriting and GSO splitting.
//! Nothing may panic, and a rewrite may touch only the ECN bits (and the
//! IPv4 header checksum, which must stay valid); and GSO splitting plus
//! re-coalescing of well-formed frames, checked packet by packet.

use l4slab_core::Ecn;
use l4slab_emu::coalesce::{Coalescer, MAX_SEGS};
use l4slab_emu::packet::{
    self, ipv4_header_ok, VnetHdr, GSO_TCPV4, GSO_TCPV6, VNET_F_NEEDS_CSUM, VNET_HDR_LEN,
};
use proptest::prelude::*;

fn ecn() -> impl Strategy<Value = Ecn> {
    prop_oneof![
        Just(Ecn::NotEct),
        Just(Ecn::Ect0),
        Just(Ecn::Ect1),
        Just(Ecn::Ce)
    ]
}

/// A well-formed IPv4 or IPv6 TCP packet with `payload` bytes.
fn tcp_packet(v6: bool, tos: u8, payload: usize) -> Vec<u8> {
    if v6 {
        let mut p = vec![0u8; 40 + 20 + payload];
        p[0] = 0x60 | (tos >> 4);
        p[1] = tos << 4;
        p[4..6].copy_from_slice(&((20 + payload) as u16).to_be_bytes());
        p[6] = 6;
        p[7] = 64;
        p[8] = 0xfd;
        p[39] = 2;
        p[40 + 12] = 0x50;
        p
    } else {
        let total = 40 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[1] = tos;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 77, 0, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let c = packet::ipv4_header_checksum(&p, 20);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[32] = 0x50;
        p
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), e in ecn()) {
        let _ = packet::parse(&bytes);
        let mut b = bytes.clone();
        let _ = packet::set_ecn(&mut b, e);
        let _ = packet::transport_checksum_ok(&b);
        let mut scratch = vec![0u8; 1600];
        let _ = packet::split_gso(&bytes, &mut scratch, |s| assert!(s.len() <= 1600));
    }

    #[test]
    fn ecn_rewrite_changes_only_the_ecn_bits(
        v6 in any::<bool>(), tos in any::<u8>(), payload in 0usize..100, e in ecn(),
        mutate in proptest::collection::vec((0usize..160, any::<u8>()), 0..3),
    ) {
        let mut p = tcp_packet(v6, tos, payload);
        for (i, b) in mutate {
            if i < p.len() { p[i] = b; }
        }
        let before = p.clone();
        let v4_ok = !v6 && ipv4_header_ok(&before);
        match packet::set_ecn(&mut p, e) {
            Err(_) => prop_assert_eq!(&p, &before),
            Ok(changed) => {
                prop_assert_eq!(packet::parse(&p).unwrap().ecn, e);
                prop_assert_eq!(changed, p != before);
                let v = before[0] >> 4;
                for (i, (a, b)) in before.iter().zip(&p).enumerate() {
                    let allowed = match (v, i) {
                        (4, 1) => 0b11,
                        (4, 10 | 11) => 0xff,
                        (6, 1) => 0b0011_0000,
                        _ => 0,
                    };
                    prop_assert_eq!(a & !allowed, b & !allowed, "byte {} changed", i);
                }
                if v4_ok {
                    prop_assert!(ipv4_header_ok(&p), "checksum kept valid");
                }
            }
        }
    }

    #[test]
    fn gso_frames_split_or_fail_cleanly(
        v6 in any::<bool>(), payload in 1usize..6000, mss in 1u16..1500,
        mutate in proptest::collection::vec((0usize..120, any::<u8>()), 0..4),
        hdr_noise in any::<[u8; 10]>(), use_noise in any::<bool>(),
    ) {
        let p = tcp_packet(v6, 0x02, payload);
        let mut frame = vec![0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: if v6 { 60 } else { 40 },
            gso_size: mss,
            csum_start: if v6 { 40 } else { 20 },
            csum_offset: 16,
        }
        .write(&mut frame);
        if use_noise {
            frame.copy_from_slice(&hdr_noise);
        }
        frame.extend_from_slice(&p);
        let unmutated = mutate.is_empty() && !use_noise;
        for (i, b) in mutate {
            if i < frame.len() { frame[i] = b; }
        }
        let mut scratch = vec![0u8; 1600];
        let mut total = 0usize;
        let r = packet::split_gso(&frame, &mut scratch, |s| {
            assert!(s.len() <= 1600);
            total += s.len() - VNET_HDR_LEN;
        });
        if unmutated {
            let hlen = if v6 { 60 } else { 40 };
            match r {
                Ok(n) => {
                    prop_assert_eq!(n, payload.div_ceil(usize::from(mss)));
                    prop_assert_eq!(total, payload + n * hlen);
                }
                Err(e) => prop_assert_eq!(e, packet::Malformed::Oversize),
            }
        }
    }
}

/// `payload` bytes of `v6`/v4 TCP as one GSO frame of `mss` segments.
fn gso_frame(v6: bool, tos: u8, payload: usize, mss: u16) -> Vec<u8> {
    let mut p = tcp_packet(v6, tos, payload);
    let l4 = if v6 { 40 } else { 20 };
    p[l4 + 13] = 0x10; // ACK
    for (i, b) in p[l4 + 20..].iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    let mut frame = vec![0u8; VNET_HDR_LEN];
    VnetHdr {
        flags: VNET_F_NEEDS_CSUM,
        gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: (l4 + 20) as u16,
        gso_size: mss,
        csum_start: l4 as u16,
        csum_offset: 16,
    }
    .write(&mut frame);
    frame.extend_from_slice(&p);
    frame
}

fn split(frame: &[u8]) -> Vec<Vec<u8>> {
    let mut scratch = vec![0u8; 1600];
    let mut out = Vec::new();
    packet::split_gso(frame, &mut scratch, |s| out.push(s.to_vec())).expect("splits");
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// GSO splitting (IPv4 and IPv6) gives packets a receiver accepts: valid
    /// IP lengths and header checksum, a TCP checksum that completes to a
    /// valid one, consecutive sequence numbers, and the payload in order;
    /// re-coalescing them and splitting again gives the same packets.
    #[test]
    fn gso_split_is_valid_and_coalescing_round_trips(
        v6 in any::<bool>(), ecn_bits in 0u8..4, payload in 1usize..20_000, mss in 200u16..1440,
    ) {
        let frame = gso_frame(v6, 0xb8 | ecn_bits, payload, mss);
        let segs = split(&frame);
        let l4 = if v6 { 40 } else { 20 };
        prop_assert_eq!(segs.len(), payload.div_ceil(usize::from(mss)));
        let mut data = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let h = VnetHdr::read(s).unwrap();
            let mut ip = s[VNET_HDR_LEN..].to_vec();
            let info = packet::parse(&ip).unwrap();
            prop_assert_eq!(info.ecn, Ecn::from_bits(ecn_bits));
            if !v6 {
                prop_assert!(ipv4_header_ok(&ip), "segment {}", i);
            }
            packet::complete_checksum(&mut ip, h.csum_start.into(), h.csum_offset.into()).unwrap();
            prop_assert!(packet::transport_checksum_ok(&ip), "segment {}", i);
            let seq = u32::from_be_bytes([ip[l4 + 4], ip[l4 + 5], ip[l4 + 6], ip[l4 + 7]]);
            prop_assert_eq!(seq as usize, data.len());
            data.extend_from_slice(&ip[l4 + 20..]);
        }
        prop_assert_eq!(&data[..], &frame[VNET_HDR_LEN + l4 + 20..]);
        // Coalesce everything (as if released at one wake-up), split again.
        let mut c = Coalescer::default();
        let mut writes = Vec::new();
        for s in &segs {
            c.push(s, &mut |w| writes.push(w.to_vec()));
        }
        c.flush(&mut |w| writes.push(w.to_vec()));
        prop_assert!(writes.len() <= segs.len().div_ceil(MAX_SEGS as usize) + 1);
        let again: Vec<Vec<u8>> = writes.iter().flat_map(|w| split(w)).collect();
        prop_assert_eq!(again, segs);
    }
}
