//! The socket over loopback: every ECN codepoint set per datagram arrives
//! as sent (IPv4, IPv6, IPv4 through a dual-stack IPv6 socket, and with
//! the `setsockopt` fallback), and bad input gives typed errors.

use std::net::SocketAddr;
use std::time::Duration;

use l4slab_core::Ecn;
use l4slab_core::Time;
use l4slab_udp_driver::{Clock, EcnSendMode, Family, UdpError, UdpSocket};

const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];

fn bind(a: &str) -> UdpSocket {
    UdpSocket::bind(a.parse().unwrap()).unwrap()
}

/// The next datagram on `s`, waiting up to a second for it.
fn recv(s: &UdpSocket, buf: &mut [u8]) -> (usize, SocketAddr, Ecn) {
    let t0 = Clock::start();
    loop {
        if let Some(r) = s.recv_from(buf).unwrap() {
            return r;
        }
        assert!(t0.now() < Time::from_secs(1), "no datagram within 1 s");
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Send each codepoint twice, in an order where every datagram differs
/// from the one before, and check each arrives with its own.
fn round_trip(tx: &UdpSocket, rx: &UdpSocket, to: SocketAddr) {
    let from = tx.local_addr().unwrap();
    let mut buf = [0u8; 2048];
    let order = [0, 1, 2, 3, 2, 0, 3, 1];
    for (seq, &i) in order.iter().enumerate() {
        let payload = [seq as u8; 1200];
        assert_eq!(tx.send_to(&payload, to, CODEPOINTS[i]).unwrap(), 1200);
        let (len, src, ecn) = recv(rx, &mut buf);
        assert_eq!(len, 1200);
        assert_eq!(buf[0], seq as u8, "datagrams in order");
        assert_eq!(
            ecn, CODEPOINTS[i],
            "datagram {seq} sent as {:?}",
            CODEPOINTS[i]
        );
        assert_eq!(src.port(), from.port());
    }
}

#[test]
fn ipv4_loopback_carries_each_codepoint() {
    let (a, b) = (bind("127.0.0.1:0"), bind("127.0.0.1:0"));
    assert_eq!(a.family(), Family::V4);
    round_trip(&a, &b, b.local_addr().unwrap());
    round_trip(&b, &a, a.local_addr().unwrap());
    assert_eq!(
        a.ecn_send_mode(),
        EcnSendMode::Cmsg,
        "the kernel takes the cmsg"
    );
}

#[test]
fn ipv6_loopback_carries_each_codepoint() {
    let (a, b) = (bind("[::1]:0"), bind("[::1]:0"));
    assert_eq!(a.family(), Family::V6);
    round_trip(&a, &b, b.local_addr().unwrap());
    round_trip(&b, &a, a.local_addr().unwrap());
    assert_eq!(a.ecn_send_mode(), EcnSendMode::Cmsg);
}

#[test]
fn a_dual_stack_socket_carries_each_codepoint_to_and_from_ipv4() {
    let v6 = bind("[::]:0");
    let v4 = bind("127.0.0.1:0");
    // IPv6 socket -> IPv4 peer, addressed plainly (sent IPv4-mapped).
    round_trip(&v6, &v4, v4.local_addr().unwrap());
    // IPv4 peer -> IPv6 socket: the TOS arrives as IP_TOS.
    let to: SocketAddr = format!("127.0.0.1:{}", v6.local_addr().unwrap().port())
        .parse()
        .unwrap();
    round_trip(&v4, &v6, to);
    // The IPv4 peer appears IPv4-mapped, and answering that address works.
    v4.send_to(b"x", to, Ecn::Ect1).unwrap();
    let mut buf = [0u8; 16];
    let (_, from, _) = recv(&v6, &mut buf);
    let SocketAddr::V6(m) = from else {
        panic!("{from} is not IPv4-mapped")
    };
    assert_eq!(m.ip().to_ipv4_mapped(), Some("127.0.0.1".parse().unwrap()));
    v6.send_to(b"y", from, Ecn::Ce).unwrap();
    assert_eq!(recv(&v4, &mut buf).2, Ecn::Ce);
}

#[test]
fn the_setsockopt_fallback_still_sets_each_datagram() {
    for (a, b) in [
        (bind("127.0.0.1:0"), bind("127.0.0.1:0")),
        (bind("[::1]:0"), bind("[::1]:0")),
    ] {
        a.set_ecn_send_mode(EcnSendMode::SockOpt);
        round_trip(&a, &b, b.local_addr().unwrap());
        assert_eq!(a.ecn_send_mode(), EcnSendMode::SockOpt);
    }
}

#[test]
fn an_empty_socket_reads_none() {
    let s = bind("127.0.0.1:0");
    let mut buf = [0u8; 64];
    assert!(s.recv_from(&mut buf).unwrap().is_none());
}

#[test]
fn binding_a_used_port_is_a_typed_error() {
    for any in ["127.0.0.1:0", "[::1]:0"] {
        let held = bind(any);
        let addr = held.local_addr().unwrap();
        match UdpSocket::bind(addr) {
            Err(UdpError::AddrInUse { addr: a }) => assert_eq!(a, addr),
            other => panic!("binding {addr} twice gave {other:?}"),
        }
        let msg = UdpSocket::bind(addr).unwrap_err().to_string();
        assert!(
            msg.contains(&addr.to_string()) && msg.contains("in use"),
            "{msg}"
        );
    }
}

#[test]
fn binding_a_foreign_address_is_a_typed_error() {
    // TEST-NET-1 (RFC 5737) is never local.
    let addr: SocketAddr = "192.0.2.1:0".parse().unwrap();
    match UdpSocket::bind(addr) {
        Err(UdpError::Bind { addr: a, source }) => {
            assert_eq!(a, addr);
            assert_eq!(
                source.raw_os_error(),
                Some(l4slab_sys::errno::EADDRNOTAVAIL)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_ipv6_peer_from_an_ipv4_socket_is_a_typed_error() {
    let s = bind("127.0.0.1:0");
    let to: SocketAddr = "[::1]:9".parse().unwrap();
    match s.send_to(b"x", to, Ecn::Ect0) {
        Err(e @ UdpError::FamilyMismatch { .. }) => assert!(!e.is_transient()),
        other => panic!("{other:?}"),
    }
    // An IPv4-mapped IPv6 address is an IPv4 peer.
    let peer = bind("127.0.0.1:0");
    let mapped: SocketAddr = format!("[::ffff:127.0.0.1]:{}", peer.local_addr().unwrap().port())
        .parse()
        .unwrap();
    s.send_to(b"x", mapped, Ecn::Ect1).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(recv(&peer, &mut buf).2, Ecn::Ect1);
}

#[test]
fn a_datagram_larger_than_the_buffer_is_reported_and_consumed() {
    let (a, b) = (bind("127.0.0.1:0"), bind("127.0.0.1:0"));
    let to = b.local_addr().unwrap();
    a.send_to(&[1; 100], to, Ecn::NotEct).unwrap();
    a.send_to(&[2; 8], to, Ecn::Ect1).unwrap();
    let mut small = [0u8; 10];
    let t0 = Clock::start();
    let err = loop {
        match b.recv_from(&mut small) {
            Ok(None) if t0.now() < Time::from_secs(1) => std::thread::yield_now(),
            r => break r.unwrap_err(),
        }
    };
    match err {
        UdpError::Truncated { len, cap, from } => {
            assert_eq!((len, cap, from), (100, 10, a.local_addr().unwrap()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        recv(&b, &mut small),
        (8, a.local_addr().unwrap(), Ecn::Ect1)
    );
}
