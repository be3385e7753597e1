//! ECN timelines over the test wire (docs/models/ecn.md): negotiation
//! (RFC 3168 §6.1.1, RFC 9768 §3.1), classic ECE/CWR feedback (RFC 3168
//! §6.1.2-§6.1.3), AccECN ACE and option feedback (RFC 9768 §3.2) with the
//! exact CE bytes the controller receives, and the sender's validation with
//! its fallbacks (bleaching, re-marking, ECT black hole).

mod common;

use common::cc::{Fixed, Log};
use common::{dms, ms, seg_seq, Dir, Net, Sent, Writes};
use l4slab_cc::{CongestionEvent, EcnCodepoint};
use l4slab_core::{Ecn, Time};
use l4slab_tcp::{AccEcnOption, ConnState, EcnMode, EcnValidation, File, Flags, TransportConfig};

const MSS: u32 = 1448;

fn cfg(mode: EcnMode) -> TransportConfig {
    TransportConfig {
        ecn: mode,
        ..TransportConfig::default()
    }
}

/// Client sending `app` with controller `cc` (codepoint `cp`), server with a
/// fixed window and the same codepoint; 10 ms one way.
fn net_with(
    client: TransportConfig,
    server: TransportConfig,
    cp: EcnCodepoint,
    window: u64,
    app: Box<dyn l4slab_tcp::App>,
) -> (Net, Log) {
    let cc = Fixed::segments(window, MSS).with_ecn(cp);
    let log = cc.log.clone();
    let server_cc = Fixed::segments(10, MSS).with_ecn(cp);
    let n = Net::new(
        client,
        Box::new(cc),
        app,
        server,
        Box::new(server_cc),
        dms(10),
    );
    (n, log)
}

fn file_net(mode: EcnMode, cp: EcnCodepoint, size: u64) -> (Net, Log) {
    net_with(cfg(mode), cfg(mode), cp, 10, Box::new(File::new(size)))
}

fn syn_of(n: &Net) -> Sent {
    *n.sent(Dir::C2S)
        .find(|s| s.seg.flags.contains(Flags::SYN))
        .expect("a SYN")
}

fn syn_ack_of(n: &Net) -> Sent {
    *n.sent(Dir::S2C)
        .find(|s| s.seg.flags.contains(Flags::SYN))
        .expect("a SYN/ACK")
}

/// The client's first pure ACK (the third packet of the handshake).
fn third_ack_of(n: &Net) -> Sent {
    *n.sent(Dir::C2S)
        .find(|s| !s.seg.flags.contains(Flags::SYN) && s.seg.len == 0)
        .expect("a third ACK")
}

/// Pure ACKs from the server (no SYN, no FIN, no data).
fn server_pure_acks(n: &Net) -> Vec<Sent> {
    n.sent(Dir::S2C)
        .filter(|s| s.seg.len == 0 && !s.seg.flags.intersects(Flags::SYN | Flags::FIN))
        .copied()
        .collect()
}

fn client_data(n: &Net) -> Vec<Sent> {
    n.sent(Dir::C2S)
        .filter(|s| s.seg.len > 0)
        .copied()
        .collect()
}

fn echoes(log: &Log) -> Vec<Time> {
    log.congestion()
        .into_iter()
        .filter(|(_, e)| matches!(e, CongestionEvent::EcnEcho { .. }))
        .map(|(t, _)| t)
        .collect()
}

/// CE-mark the first transmission of the client's data segments with these
/// sequence numbers (an AQM marking them).
fn mark_ce(n: &mut Net, seqs: Vec<u64>) {
    n.set_ecn_rule(move |dir, seg, e, _| {
        if dir == Dir::C2S
            && seg.len > 0
            && !seg.retransmission
            && seqs.contains(&seg.seq)
            && e.is_ect()
        {
            Some(Ecn::Ce)
        } else {
            Some(e)
        }
    });
}

// ----- negotiation ---------------------------------------------------------------

#[test]
fn negotiation_matrix_follows_rfc_9768_table_2() {
    use EcnMode::*;
    // (client asks, server accepts) -> negotiated mode on both sides; the
    // SYN's and SYN/ACK's ECN flags (AE, CWR, ECE as the ACE bits).
    let cases = [
        (Off, Off, Off, 0b000, 0b000),
        (Off, Classic, Off, 0b000, 0b000),
        (Off, AccEcn, Off, 0b000, 0b000),
        (Classic, Off, Off, 0b011, 0b000),
        (Classic, Classic, Classic, 0b011, 0b001),
        (Classic, AccEcn, Classic, 0b011, 0b001),
        (AccEcn, Off, Off, 0b111, 0b000),
        // RFC 9768 §3.1.1: an RFC 3168 server answers an AccECN SYN with ECE.
        (AccEcn, Classic, Classic, 0b111, 0b001),
        // The SYN was Not-ECT: the SYN/ACK reflects 0b010.
        (AccEcn, AccEcn, AccEcn, 0b111, 0b010),
    ];
    for (c, s, want, syn_ace, synack_ace) in cases {
        let (mut n, _) = net_with(
            cfg(c),
            cfg(s),
            EcnCodepoint::NotEct,
            10,
            Box::new(File::new(3000)),
        );
        n.connect();
        n.run_until(ms(100));
        let ctx = format!("client {c:?} server {s:?}");
        assert_eq!(n.client.ep.ecn_mode(), want, "{ctx}");
        assert_eq!(n.server.ep.ecn_mode(), want, "{ctx}");
        assert_eq!(n.client.ep.stats().ecn_mode, want, "{ctx}");
        assert_eq!(syn_of(&n).seg.ace(), syn_ace, "{ctx}");
        assert_eq!(syn_ack_of(&n).seg.ace(), synack_ace, "{ctx}");
        // A Reno-like controller (Not-ECT codepoint) sends the SYN Not-ECT
        // (Linux tcp_ecn_send_syn) but its data ECT(0) once ECN is on.
        assert_eq!(syn_of(&n).ecn, Ecn::NotEct, "{ctx}");
        let data_ecn = if want == Off { Ecn::NotEct } else { Ecn::Ect0 };
        assert!(client_data(&n).iter().all(|d| d.ecn == data_ecn), "{ctx}");
        let v = if want == Off {
            EcnValidation::NotNegotiated
        } else {
            EcnValidation::Unknown // 3 segments: fewer than 10 ECT packets
        };
        assert_eq!(n.client.ep.ecn_validation(), v, "{ctx}");
        assert_eq!(n.server.delivered(), 3000, "{ctx}");
    }
}

#[test]
fn l4s_controller_does_not_fall_back_to_classic_feedback() {
    // Linux TCP_CONG_NO_FALLBACK_RFC3168 (Prague): an ECT(1) sender meeting
    // a classic-only peer runs without ECN rather than with RFC 3168 feedback.
    let (mut n, _) = net_with(
        cfg(EcnMode::AccEcn),
        cfg(EcnMode::Classic),
        EcnCodepoint::Ect1,
        10,
        Box::new(File::new(3000)),
    );
    n.connect();
    n.run_until(ms(100));
    assert_eq!(n.client.ep.ecn_mode(), EcnMode::Off);
    assert_eq!(n.server.ep.ecn_mode(), EcnMode::Off);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::NotEct));
    // Likewise when only the client is L4S and the classic server answers ECE.
    let cc = Fixed::segments(10, MSS).with_ecn(EcnCodepoint::Ect1);
    let server_cc = Fixed::segments(10, MSS);
    let mut n = Net::new(
        cfg(EcnMode::AccEcn),
        Box::new(cc),
        Box::new(File::new(3000)),
        cfg(EcnMode::Classic),
        Box::new(server_cc),
        dms(10),
    );
    n.connect();
    n.run_until(ms(100));
    assert_eq!(syn_ack_of(&n).seg.ace(), 0b001);
    assert_eq!(n.client.ep.ecn_mode(), EcnMode::Off);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::NotEct));
}

#[test]
fn accecn_handshake_reflects_the_ip_ecn_fields() {
    // An L4S controller sends its SYN and SYN/ACK ECT(1) (Linux
    // tcp_ecn_send_syn with a controller that needs ECN). The SYN/ACK's ACE
    // reflects the SYN's field (ECT(1) -> 0b011) and the third ACK the
    // SYN/ACK's; here the wire CE-marks the SYN/ACK: 0b110.
    let size = 30 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, seg, e, _| {
        Some(if dir == Dir::S2C && seg.flags.contains(Flags::SYN) {
            Ecn::Ce
        } else {
            e
        })
    });
    n.connect();
    n.run_until(ms(200));
    let (syn, synack, third) = (syn_of(&n), syn_ack_of(&n), third_ack_of(&n));
    assert_eq!((syn.seg.ace(), syn.ecn), (0b111, Ecn::Ect1));
    assert_eq!((synack.seg.ace(), synack.ecn), (0b011, Ecn::Ect1));
    assert_eq!(third.seg.ace(), 0b110);
    // Linux: a CE SYN/ACK counts in the client's r.cep (its segments carry
    // ACE 5+1), and the server starts s.cep at 1 when the reflection says CE,
    // so they agree and the client's later segments are not a new CE mark.
    assert_eq!(n.client.ep.stats().ce_marks_received, 1);
    assert!(client_data(&n).iter().all(|d| d.seg.ace() == 6));
    assert!(client_data(&n).iter().any(|d| d.t > ms(20)));
    assert_eq!(n.server.ep.stats().ce_packets_fed_back, 0);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Capable);
    // Data after the handshake: ECT(1); the server's ACKs carry ACE = r.cep + 5.
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::Ect1));
    assert!(server_pure_acks(&n).iter().all(|a| a.seg.ace() == 5));
    assert_eq!(n.server.delivered(), size);
}

// ----- classic ECN (RFC 3168) -----------------------------------------------------

#[test]
fn classic_ece_until_cwr_and_one_reduction_per_rtt() {
    // 30 segments, a fixed window of 10: windows leave at 0+20, 40, 60 ms
    // (handshake at 20 ms). The 2nd and 5th segment of the first window and
    // the 3rd of the second are CE-marked.
    let size = 30 * u64::from(MSS);
    let (mut n, log) = net_with(
        cfg(EcnMode::Classic),
        cfg(EcnMode::Classic),
        EcnCodepoint::NotEct,
        10,
        Box::new(File::new(size)),
    );
    n.client.ep.check_invariants();
    let marked = vec![seg_seq(1, MSS), seg_seq(4, MSS), seg_seq(12, MSS)];
    mark_ce(&mut n, marked);
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);

    // The receiver echoes ECE from the first CE arrival on, on every ACK,
    // until a data segment with CWR arrives (RFC 3168 §6.1.3).
    let acks = server_pure_acks(&n);
    let first_ece = acks
        .iter()
        .position(|a| a.seg.flags.contains(Flags::ECE))
        .unwrap();
    let cwr = client_data(&n)
        .into_iter()
        .filter(|d| d.seg.flags.contains(Flags::CWR))
        .collect::<Vec<_>>();
    // CWR on the first new data after each reduction, and only there.
    assert_eq!(cwr.len(), 2, "{cwr:?}");
    assert!(cwr.iter().all(|d| !d.seg.retransmission));
    // Segments 2 and 5 (one window): one reduction; segment 13 is in a later
    // window (sent after the first reduction): a second one.
    let e = echoes(&log);
    assert_eq!(e.len(), 2, "{e:?}");
    // The second one answers segment 13's mark, a window after the first
    // (not the first mark's ECE on the ACK for exactly the reduction point).
    assert!(e[1] >= e[0] + dms(20), "{e:?}");
    assert_eq!(n.client.ep.stats().ecn_echo_events, 2);
    // ECE is on every ACK from the first CE until the CWR got through.
    let cwr_arrival = cwr[0].t + dms(10);
    for a in &acks[first_ece..] {
        if a.t < cwr_arrival {
            assert!(a.seg.flags.contains(Flags::ECE), "ACK at {} lacks ECE", a.t);
        }
    }
    // And the ACK that immediately follows the CWR segment has no ECE
    // (unless another CE arrived, which is the third mark, later).
    let after = acks.iter().find(|a| a.t >= cwr_arrival).unwrap();
    assert!(!after.seg.flags.contains(Flags::ECE), "{after:?}");
    // Classic feedback reaches the controller as EcnEcho only, never as CE
    // bytes; the ECE ACKs' packets are counted (Linux tcp_count_delivered).
    assert!(log.acks().iter().all(|(_, a)| a.ce_bytes == 0));
    assert!(n.client.ep.stats().ce_packets_fed_back >= 2);
    // Retransmissions and pure ACKs are Not-ECT for a controller that does
    // not need ECN (RFC 3168 §6.1.5, Linux tcp_ecn_send).
    assert!(acks.iter().all(|a| a.ecn == Ecn::NotEct));
}

#[test]
fn an_ece_ack_for_exactly_the_reduction_point_does_not_reduce_again() {
    // One CE mark (segment 1 of the first window of 10). The reduction
    // happens on the first ECE ACK with SND.NXT = segment 10, and the CWR
    // goes out on segment 10. The receiver keeps ECE on until that segment
    // arrives, so the delayed ACK for segments 8-9 acknowledges exactly
    // segment 10's sequence number *with* ECE: data sent before the
    // reduction, no new congestion (RFC 3168 §6.1.2; Linux holds CWR until
    // something above high_seq is acknowledged). One mark, one reduction.
    let size = 40 * u64::from(MSS);
    let (mut n, log) = net_with(
        cfg(EcnMode::Classic),
        cfg(EcnMode::Classic),
        EcnCodepoint::NotEct,
        10,
        Box::new(File::new(size)),
    );
    mark_ce(&mut n, vec![seg_seq(1, MSS)]);
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    let cwr: Vec<Sent> = client_data(&n)
        .into_iter()
        .filter(|d| d.seg.flags.contains(Flags::CWR))
        .collect();
    assert_eq!(cwr.len(), 1, "{cwr:?}");
    assert_eq!(cwr[0].seg.seq, seg_seq(10, MSS));
    // The case this test is about is on the wire: an ECE ACK for exactly
    // the reduction point.
    assert!(server_pure_acks(&n)
        .iter()
        .any(|a| a.seg.ack == cwr[0].seg.seq && a.seg.flags.contains(Flags::ECE)));
    assert_eq!(echoes(&log).len(), 1, "{:?}", echoes(&log));
    assert_eq!(n.client.ep.stats().ecn_echo_events, 1);
}

// ----- AccECN (RFC 9768) -------------------------------------------------------------

#[test]
fn ace_counts_ce_packets_mod_8_on_every_ack() {
    // 30 segments from an L4S sender, ten of them CE-marked: the server's ACE
    // field is (5 + CE packets received) mod 8 on every ACK, so it wraps
    // (RFC 9768 §3.2.2.1); the sender's s.cep follows it exactly.
    let size = 30 * u64::from(MSS);
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    let marked: Vec<u64> = [0, 2, 3, 7, 11, 12, 13, 19, 25, 29]
        .iter()
        .map(|&i| seg_seq(i, MSS))
        .collect();
    mark_ce(&mut n, marked.clone());
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    // No loss: an ACK for `ack` was sent after every segment below `ack`
    // arrived and before any other (in-order arrival).
    let acks = server_pure_acks(&n);
    assert!(acks.len() >= 15);
    let mut wrapped = false;
    for a in &acks {
        let ce = marked.iter().filter(|&&s| s < a.seg.ack).count() as u64;
        assert_eq!(
            u64::from(a.seg.ace()),
            (5 + ce) % 8,
            "ACK {} at {}",
            a.seg.ack,
            a.t
        );
        wrapped |= ce >= 3;
    }
    assert!(wrapped);
    assert_eq!(n.server.ep.stats().ce_marks_received, 10);
    assert_eq!(n.client.ep.stats().ce_packets_fed_back, 10);
    // Exact CE bytes to the controller, and no classic EcnEcho for an L4S sender.
    let ce: u64 = log.acks().iter().map(|(_, a)| a.ce_bytes).sum();
    assert_eq!(ce, 10 * u64::from(MSS));
    assert_eq!(n.client.ep.stats().ce_bytes_fed_back, ce);
    assert!(echoes(&log).is_empty());
}

#[test]
fn an_ack_is_forced_before_the_ace_field_could_wrap() {
    // 12 writes of 100 B leave as 100 B segments (no Nagle), all CE-marked.
    // With delayed ACKs the receiver would wait for a full MSS (15 segments)
    // or 40 ms; instead it ACKs at the change of the IP-ECN field (ECT(1) ->
    // CE, RFC 9768 §3.2.2.5.1) and whenever 6 CE packets are unreported
    // (Linux TCP_ACCECN_ACE_MAX_DELTA), so no ACE delta reaches 8.
    // One write every 10 µs from 21 ms (the handshake completes at 20 ms).
    let plan: Vec<(Time, u64)> = (0..12)
        .map(|i| (ms(21) + l4slab_core::Dur::from_micros(10 * i), 100))
        .collect();
    let (mut n, log) = net_with(
        cfg(EcnMode::AccEcn),
        cfg(EcnMode::AccEcn),
        EcnCodepoint::Ect1,
        20,
        Box::new(Writes::new(&plan, true)),
    );
    n.set_ecn_rule(|dir, seg, e, _| {
        Some(if dir == Dir::C2S && seg.len > 0 {
            Ecn::Ce
        } else {
            e
        })
    });
    n.connect();
    n.run_while(ms(1000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), 1200);
    let acks: Vec<(u64, u8)> = server_pure_acks(&n)
        .iter()
        .map(|a| (a.seg.ack, a.seg.ace()))
        .collect();
    // ACKs after the 1st segment (the IP-ECN field changed ECT(1) -> CE:
    // ACE 5+1), the 7th (6 CE pending: 5+7 = 4 mod 8), and the FIN after the
    // 12th (5+12 = 1 mod 8); nothing else (less than an MSS unacknowledged).
    assert_eq!(acks, [(101, 6), (701, 4), (1202, 1)]);
    assert_eq!(n.client.ep.stats().ce_packets_fed_back, 12);
    let ce: u64 = log.acks().iter().map(|(_, a)| a.ce_bytes).sum();
    assert_eq!(ce, 1200);
}

#[test]
fn option_carries_the_byte_counters_on_pure_acks() {
    // RFC 9768 §3.2.3: e1b, ceb, e0b (order 1, as Linux sends) with initial
    // values 1, 0, 1, on every pure ACK (Linux tcp_ecn_option = 2); 12 B on
    // the wire. Three of ten segments are CE-marked.
    let size = 10 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    mark_ce(
        &mut n,
        vec![seg_seq(1, MSS), seg_seq(2, MSS), seg_seq(8, MSS)],
    );
    n.connect();
    n.run_while(ms(1000), |n| n.client.ep.state() == ConnState::FinWait2);
    let acks = server_pure_acks(&n);
    assert!(!acks.is_empty());
    let marked = [seg_seq(1, MSS), seg_seq(2, MSS), seg_seq(8, MSS)];
    for a in &acks {
        // No loss: everything below the ACK arrived, in order.
        let received = (a.seg.ack - 1).min(size);
        let ce = marked.iter().filter(|&&s| s < a.seg.ack).count() as u64 * u64::from(MSS);
        let o = a.seg.accecn.expect("option on every pure ACK");
        assert_eq!(
            o,
            AccEcnOption {
                fields: 3,
                e1b: (1 + received - ce) as u32,
                ceb: ce as u32,
                e0b: 1,
            },
            "ACK {} at {}",
            a.seg.ack,
            a.t
        );
        // 52 B header + 12 B option (no SACK blocks here).
        assert_eq!(a.wire_len, 64);
    }
    let st = n.client.ep.stats();
    assert_eq!(
        (st.fb_ce_bytes, st.fb_ect1_bytes, st.fb_ect0_bytes),
        (3 * 1448, 7 * 1448, 0)
    );
    // Data segments carry the ACE field but no option: they stay 1500 B.
    assert!(client_data(&n)
        .iter()
        .all(|d| d.seg.accecn.is_none() && d.wire_len == 1500));
    // With the option switched off (Linux tcp_ecn_option = 0), the ACE field
    // alone: no option, 52 B ACKs, and the CE bytes estimated as packets × MSS.
    let off = TransportConfig {
        accecn_option: false,
        ..cfg(EcnMode::AccEcn)
    };
    let (mut n, log) = net_with(
        cfg(EcnMode::AccEcn),
        off,
        EcnCodepoint::Ect1,
        10,
        Box::new(File::new(size)),
    );
    mark_ce(&mut n, vec![seg_seq(1, MSS)]);
    n.connect();
    n.run_while(ms(1000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert!(server_pure_acks(&n)
        .iter()
        .all(|a| a.seg.accecn.is_none() && a.wire_len == 52));
    let ce: u64 = log.acks().iter().map(|(_, a)| a.ce_bytes).sum();
    assert_eq!(ce, u64::from(MSS));
}

#[test]
fn option_makes_room_next_to_sack_blocks_like_linux() {
    // Linux tcp_options_fit_accecn: with timestamps (12 B) and 3 SACK blocks
    // (28 B) the 40 B option space is full; a changed counter needs the
    // option, so one SACK block gives way (never below 2) and a 2-counter
    // option (8 B) fits: 52 + 20 + 8 = 80 B.
    let size = 20 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.drop_data_once(&[seg_seq(1, MSS), seg_seq(3, MSS), seg_seq(5, MSS)]);
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    let acks = server_pure_acks(&n);
    let most = acks.iter().map(|a| a.seg.sack_count).max().unwrap();
    assert_eq!(
        most, 2,
        "three holes, but at most two SACK blocks with the option"
    );
    let a = acks.iter().find(|a| a.seg.sack_count == 2).unwrap();
    let o = a.seg.accecn.unwrap();
    assert_eq!((o.fields, a.wire_len), (2, 80));
    // One hole: one SACK block and the full option: 52 + 12 + 12 = 76 B.
    let a = acks.iter().find(|a| a.seg.sack_count == 1).unwrap();
    assert_eq!((a.seg.accecn.unwrap().fields, a.wire_len), (3, 76));
}

#[test]
fn exact_ce_bytes_reach_the_controller_on_the_acks_that_cover_them() {
    // Each AckEvent's ce_bytes is the payload of the CE-marked segments that
    // ACK newly acknowledges (no carry-over needed in order).
    let size = 20 * u64::from(MSS) + 700;
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    let marked = [3u64, 4, 9, 20];
    mark_ce(&mut n, marked.iter().map(|&i| seg_seq(i, MSS)).collect());
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    // Server segments with an ACK, in arrival order = the controller's on_ack calls.
    let server_acks: Vec<u64> = n
        .sent(Dir::S2C)
        .filter(|s| !s.dropped && !s.seg.flags.contains(Flags::SYN))
        .map(|s| s.seg.ack)
        .collect();
    let events = log.acks();
    assert_eq!(events.len(), server_acks.len());
    let seg_len = |i: u64| if i == 20 { 700 } else { u64::from(MSS) };
    let mut prev = 1;
    let mut seen = 0;
    for (ack, (_, ev)) in server_acks.iter().zip(&events) {
        let want: u64 = marked
            .iter()
            .filter(|&&i| seg_seq(i, MSS) >= prev && seg_seq(i, MSS) < *ack)
            .map(|&i| seg_len(i))
            .sum();
        assert_eq!(ev.ce_bytes, want, "ACK {ack} (previous {prev})");
        assert!(ev.ce_bytes <= ev.acked_bytes);
        seen += ev.ce_bytes;
        prev = prev.max(*ack);
    }
    assert_eq!(seen, 3 * u64::from(MSS) + 700);
}

#[test]
fn ce_bytes_estimated_without_the_option_are_not_counted_twice() {
    // A DCTCP-like sender (ECT(0): its e0b changes with every packet, so the
    // option needs all 3 counters) behind two holes: ACKs with 2+ SACK blocks
    // have no room for it (Linux tcp_options_fit_accecn), so the CE packet
    // counted from ACE is estimated as 1 MSS; the next ACK with the option
    // shows the same bytes in ceb, and only the difference is passed on.
    let size = 30 * u64::from(MSS);
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect0, size);
    n.drop_data_once(&[seg_seq(2, MSS), seg_seq(5, MSS)]);
    n.set_ecn_rule(move |dir, seg, e, _| {
        let ce = dir == Dir::C2S
            && !seg.retransmission
            && (seg.seq == seg_seq(7, MSS) || seg.seq == seg_seq(8, MSS));
        Some(if ce { Ecn::Ce } else { e })
    });
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    let acks = server_pure_acks(&n);
    assert!(
        acks.iter()
            .any(|a| a.seg.sack_count >= 2 && a.seg.accecn.is_none()),
        "some ACK had no room for the option"
    );
    let ce: u64 = log.acks().iter().map(|(_, a)| a.ce_bytes).sum();
    assert_eq!(ce, 2 * u64::from(MSS));
    assert_eq!(n.client.ep.stats().fb_ce_bytes, 2 * u64::from(MSS));
}

#[test]
fn ce_bytes_never_exceed_the_acked_bytes_of_an_ack() {
    // The first flight's ACKs are lost; the RTO resends all 10 segments and
    // the wire CE-marks the resent copies. The receiver counts them (they are
    // duplicates), so the CE feedback exceeds what those ACKs newly
    // acknowledge: the controller gets at most acked_bytes per ACK. Without
    // the loss probe and F-RTO, which would find the timeout spurious after
    // one retransmission (tests/undo.rs).
    let size = 10 * u64::from(MSS);
    let rfc = TransportConfig {
        tlp: false,
        frto: false,
        ..cfg(EcnMode::AccEcn)
    };
    let app = Box::new(File::new(size));
    let (mut n, log) = net_with(rfc.clone(), rfc, EcnCodepoint::Ect1, 10, app);
    n.set_drop(|dir, seg, _| {
        dir == Dir::S2C && !seg.flags.contains(Flags::SYN) && seg.ts_val < ms(100)
    });
    n.set_ecn_rule(|dir, seg, e, _| {
        Some(if dir == Dir::C2S && seg.retransmission {
            Ecn::Ce
        } else {
            e
        })
    });
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    assert_eq!(n.server.ep.stats().ce_marks_received, 10);
    assert_eq!(n.client.ep.stats().fb_ce_bytes, 10 * u64::from(MSS));
    let events = log.acks();
    assert!(
        events.iter().all(|(_, a)| a.ce_bytes <= a.acked_bytes),
        "{events:?}"
    );
    let ce: u64 = events.iter().map(|(_, a)| a.ce_bytes).sum();
    assert!(ce > 0 && ce <= size, "{ce}");
    // The RTO found no ECT packet acknowledged and retransmitted Not-ECT as a
    // black-hole probe; the option's e1b (ECT(1) bytes did arrive) cleared
    // it: lost ACKs are not a black hole.
    let rtx: Vec<Sent> = client_data(&n)
        .into_iter()
        .filter(|d| d.seg.retransmission)
        .collect();
    assert!(!rtx.is_empty() && rtx.iter().all(|d| d.ecn == Ecn::NotEct));
    assert_ne!(n.client.ep.ecn_validation(), EcnValidation::Blackholed);
    // One round of duplicates does not switch the receiver's ACKs to Not-ECT.
    assert!(server_pure_acks(&n).iter().all(|a| a.ecn == Ecn::Ect1));
}

/// One window of 10 segments (the FIN follows once the window opens); the
/// server's ACKs are dropped except the one for all the data, which covers 10
/// packets: more than the ACE
/// field can count unambiguously. `ce` segments are CE-marked.
fn one_ack_for_ten(ce: &[u64], option: bool) -> (u64, u64) {
    let size = 10 * u64::from(MSS);
    let server = TransportConfig {
        accecn_option: option,
        ..cfg(EcnMode::AccEcn)
    };
    let (mut n, log) = net_with(
        cfg(EcnMode::AccEcn),
        server,
        EcnCodepoint::Ect1,
        10,
        Box::new(File::new(size)),
    );
    mark_ce(&mut n, ce.iter().map(|&i| seg_seq(i, MSS)).collect());
    let all = seg_seq(10, MSS);
    n.set_drop(move |dir, seg, _| {
        dir == Dir::S2C && !seg.flags.contains(Flags::SYN) && seg.ack < all
    });
    n.connect();
    n.run_while(ms(1000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.client.ep.state(), ConnState::FinWait2);
    let ce_bytes = log.acks().iter().map(|(_, a)| a.ce_bytes).sum();
    (n.client.ep.stats().ce_packets_fed_back, ce_bytes)
}

#[test]
fn ace_wrap_safety_for_acks_covering_more_than_7_packets() {
    let m = u64::from(MSS);
    // All 10 CE: ACE delta 10 mod 8 = 2. RFC 9768 Appendix A.2.1 safe_delta =
    // 10 - ((10 - 2) mod 8) = 10: exact, with or without the option.
    let all: Vec<u64> = (0..10).collect();
    assert_eq!(one_ack_for_ten(&all, false), (10, 10 * m));
    assert_eq!(one_ack_for_ten(&all, true), (10, 10 * m));
    // 2 CE: delta 2. Without the option the sender must assume the worst,
    // safe_delta = 10 packets (and 10 × MSS bytes); with it, Linux's test
    // d_ceb < safe_delta × MSS / 2 shows the delta was not wrapped: 2.
    assert_eq!(one_ack_for_ten(&[3, 6], false), (10, 10 * m));
    assert_eq!(one_ack_for_ten(&[3, 6], true), (2, 2 * m));
}

#[test]
fn classic_controller_under_accecn_reduces_once_per_rtt() {
    // A controller with no codepoint (Reno, Cubic) gets AccECN feedback as
    // at most one EcnEcho per window and no ce_bytes; its data is ECT(0).
    let size = 40 * u64::from(MSS);
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::NotEct, size);
    // Windows of 10: marks in the 1st window (2), the 3rd (1).
    mark_ce(
        &mut n,
        [2u64, 6, 25].iter().map(|&i| seg_seq(i, MSS)).collect(),
    );
    n.connect();
    n.run_while(ms(2000), |n| n.client.ep.state() == ConnState::FinWait2);
    assert_eq!(n.server.delivered(), size);
    assert_eq!(echoes(&log).len(), 2, "{:?}", log.congestion());
    assert!(log.acks().iter().all(|(_, a)| a.ce_bytes == 0));
    assert_eq!(n.client.ep.stats().ce_packets_fed_back, 3);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::Ect0));
    // No CWR flag under AccECN (Linux tcp_ecn_queue_cwr: "Do not set CWR if
    // in AccECN mode"): the bit belongs to the ACE field.
    assert!(echoes(&log).iter().all(|t| *t > ms(20)));
}

// ----- validation and fallbacks ---------------------------------------------------

fn run_file(n: &mut Net, size: u64) {
    n.connect();
    n.run_while(Time::from_secs(60), |n| {
        n.client.ep.state() == ConnState::FinWait2
    });
    assert_eq!(
        n.server.delivered(),
        size,
        "transfer incomplete at {}",
        n.now
    );
}

#[test]
fn clean_path_is_capable_after_ten_ect_packets() {
    let size = 30 * u64::from(MSS);
    for (mode, cp) in [
        (EcnMode::AccEcn, EcnCodepoint::Ect1),
        (EcnMode::AccEcn, EcnCodepoint::NotEct),
        (EcnMode::Classic, EcnCodepoint::NotEct),
    ] {
        let (mut n, _) = file_net(mode, cp, size);
        run_file(&mut n, size);
        assert_eq!(
            n.client.ep.ecn_validation(),
            EcnValidation::Capable,
            "{mode:?} {cp:?}"
        );
        assert_eq!(n.client.ep.stats().ecn_validation, EcnValidation::Capable);
        assert!(client_data(&n).iter().all(|d| d.ecn.is_ect()));
    }
}

#[test]
fn bleaching_is_detected_from_the_byte_counters_and_ecn_stops() {
    // ECT -> Not-ECT on the data path. A Reno-like sender's SYN is Not-ECT,
    // so the handshake cannot tell; the first ACK with the option shows ECT
    // bytes acknowledged but no ECT/CE bytes received (RFC 9000 §13.4.2.1
    // applied to the byte counters): Bleached, and the sender goes Not-ECT
    // (loss-based only, Linux "MUST NOT set ECT").
    let size = 30 * u64::from(MSS);
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::NotEct, size);
    n.set_ecn_rule(|dir, _, e, _| {
        Some(if dir == Dir::C2S && e.is_ect() {
            Ecn::NotEct
        } else {
            e
        })
    });
    run_file(&mut n, size);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Bleached);
    let data = client_data(&n);
    // The first window went ECT(0) before the first ACK came back at 40 ms;
    // everything after is Not-ECT.
    assert!(data
        .iter()
        .filter(|d| d.t < ms(40))
        .all(|d| d.ecn == Ecn::Ect0));
    assert!(data
        .iter()
        .filter(|d| d.t >= ms(40))
        .all(|d| d.ecn == Ecn::NotEct));
    assert!(echoes(&log).is_empty());
    // The receiver counted the bleached bytes as Not-ECT.
    assert_eq!(n.server.ep.stats().not_ect_bytes_received, size);
}

#[test]
fn bleaching_of_an_ect_syn_is_seen_in_the_syn_ack_reflection() {
    let size = 10 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, _, e, _| {
        Some(if dir == Dir::C2S && e.is_ect() {
            Ecn::NotEct
        } else {
            e
        })
    });
    run_file(&mut n, size);
    assert_eq!(syn_ack_of(&n).seg.ace(), 0b010); // "your SYN arrived Not-ECT"
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Bleached);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::NotEct));
}

#[test]
fn remarking_ect1_to_ect0_makes_an_l4s_sender_classic() {
    // ECT(1) -> ECT(0) on data only (the SYN passes): the option's e0b grows
    // although the sender never sent ECT(0) (RFC 9000 §13.4.2.1: a count
    // above what was sent with that codepoint). The L4S sender falls back:
    // ECT(0), classic EcnEcho once per RTT, no more ce_bytes.
    let size = 60 * u64::from(MSS);
    let (mut n, log) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, seg, e, _| {
        if dir != Dir::C2S || seg.len == 0 {
            return Some(e);
        }
        // An AQM CE-marks segments 35 and 45; the rest is re-marked.
        if !seg.retransmission && (seg.seq == seg_seq(35, MSS) || seg.seq == seg_seq(45, MSS)) {
            return Some(Ecn::Ce);
        }
        Some(if e == Ecn::Ect1 { Ecn::Ect0 } else { e })
    });
    run_file(&mut n, size);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Remarked);
    let data = client_data(&n);
    assert!(data
        .iter()
        .filter(|d| d.t < ms(40))
        .all(|d| d.ecn == Ecn::Ect1));
    assert!(data
        .iter()
        .filter(|d| d.t >= ms(40))
        .all(|d| d.ecn == Ecn::Ect0));
    assert_eq!(echoes(&log).len(), 2);
    assert!(log.acks().iter().all(|(_, a)| a.ce_bytes == 0));
    assert!(n.client.ep.stats().fb_ect0_bytes > 0);

    // A re-marked SYN is already visible in the SYN/ACK's reflection (0b100).
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, _, e, _| {
        Some(if dir == Dir::C2S && e == Ecn::Ect1 {
            Ecn::Ect0
        } else {
            e
        })
    });
    run_file(&mut n, size);
    assert_eq!(syn_ack_of(&n).seg.ace(), 0b100);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Remarked);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::Ect0));
}

#[test]
fn an_ect_black_hole_is_left_after_the_first_rto() {
    // ECT packets vanish on the data path. The Reno-like sender's SYN is
    // Not-ECT and passes; the first window (ECT(0)) is lost. The RTO finds no
    // ECT packet ever delivered (RFC 9000 §13.4.2.2): Blackholed, and the
    // retransmissions and all later data go Not-ECT.
    let size = 30 * u64::from(MSS);
    for mode in [EcnMode::AccEcn, EcnMode::Classic] {
        let (mut n, _) = file_net(mode, EcnCodepoint::NotEct, size);
        n.set_ecn_rule(|dir, _, e, _| {
            if dir == Dir::C2S && e.is_ect() {
                None
            } else {
                Some(e)
            }
        });
        run_file(&mut n, size);
        assert_eq!(
            n.client.ep.ecn_validation(),
            EcnValidation::Blackholed,
            "{mode:?}"
        );
        assert_eq!(n.client.ep.stats().rto_count, 1, "{mode:?}");
        let data = client_data(&n);
        let first_rtx = data.iter().find(|d| d.seg.retransmission).unwrap();
        assert_eq!(first_rtx.ecn, Ecn::NotEct);
        assert!(data
            .iter()
            .filter(|d| d.t >= first_rtx.t)
            .all(|d| d.ecn == Ecn::NotEct));
    }
}

#[test]
fn a_lost_ecn_syn_is_retried_without_ecn() {
    // An L4S sender's SYN is ECT(1) and is dropped: after the initial RTO
    // (1 s) the SYN goes again without ECN flags and Not-ECT (RFC 3168
    // §6.1.1.1); the connection runs without ECN, flagged Blackholed.
    let size = 10 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, _, e, _| {
        if dir == Dir::C2S && e.is_ect() {
            None
        } else {
            Some(e)
        }
    });
    run_file(&mut n, size);
    let syns: Vec<Sent> = n
        .sent(Dir::C2S)
        .filter(|s| s.seg.flags.contains(Flags::SYN))
        .copied()
        .collect();
    assert_eq!(syns.len(), 2);
    assert_eq!(
        (syns[0].seg.ace(), syns[0].ecn, syns[0].t),
        (0b111, Ecn::Ect1, ms(0))
    );
    assert_eq!(
        (syns[1].seg.ace(), syns[1].ecn, syns[1].t),
        (0b000, Ecn::NotEct, ms(1000))
    );
    assert_eq!(n.client.ep.ecn_mode(), EcnMode::Off);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Blackholed);
    assert_eq!(n.server.ep.ecn_mode(), EcnMode::Off);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::NotEct));
}

#[test]
fn a_lost_ect_syn_ack_ends_with_both_sides_off() {
    // The server's ECT(1) SYN/ACK is dropped: the client retries its SYN
    // without ECN at 1 s; the server, seeing the client give up ECN, answers
    // without ECN at once (see docs/models/ecn.md: Linux keeps its first
    // decision and relies on the third ACK's zero ACE instead).
    let size = 10 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::Ect1, size);
    n.set_ecn_rule(|dir, _, e, _| {
        if dir == Dir::S2C && e.is_ect() {
            None
        } else {
            Some(e)
        }
    });
    run_file(&mut n, size);
    assert_eq!(n.client.ep.ecn_mode(), EcnMode::Off);
    assert_eq!(n.server.ep.ecn_mode(), EcnMode::Off);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Blackholed);
    assert_eq!(n.server.ep.ecn_validation(), EcnValidation::NotNegotiated);
    assert!(n.client.time_of(l4slab_tcp::AppEvent::Connected).unwrap() < ms(1100));
}

#[test]
fn ect_pure_acks_dropped_on_the_return_path_are_sent_not_ect() {
    // Under AccECN pure ACKs are ECT (Linux). If the return path drops ECT,
    // the sender sees nothing but timeouts; the receiver, getting the same
    // data twice, stops setting ECT on its pure ACKs (after 2 duplicates).
    let size = 20 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::AccEcn, EcnCodepoint::NotEct, size);
    n.set_ecn_rule(|dir, _, e, _| {
        if dir == Dir::S2C && e.is_ect() {
            None
        } else {
            Some(e)
        }
    });
    run_file(&mut n, size);
    let acks = server_pure_acks(&n);
    assert!(acks.iter().any(|a| a.ecn.is_ect()));
    assert!(acks.last().unwrap().ecn == Ecn::NotEct);
}

#[test]
fn classic_ecn_cannot_see_bleaching() {
    // RFC 3168 feedback has no counter of ECT arrivals: a bleached path looks
    // clean (pinned here so a change shows up; AccECN is the cure).
    let size = 30 * u64::from(MSS);
    let (mut n, _) = file_net(EcnMode::Classic, EcnCodepoint::NotEct, size);
    n.set_ecn_rule(|dir, _, e, _| {
        Some(if dir == Dir::C2S && e.is_ect() {
            Ecn::NotEct
        } else {
            e
        })
    });
    run_file(&mut n, size);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Capable);
}

#[test]
fn without_fallback_a_bleached_path_is_reported_but_ecn_stays_on() {
    let size = 30 * u64::from(MSS);
    let c = TransportConfig {
        ecn_fallback: false,
        ..cfg(EcnMode::AccEcn)
    };
    let (mut n, _) = net_with(
        c.clone(),
        c,
        EcnCodepoint::NotEct,
        10,
        Box::new(File::new(size)),
    );
    n.set_ecn_rule(|dir, _, e, _| {
        Some(if dir == Dir::C2S && e.is_ect() {
            Ecn::NotEct
        } else {
            e
        })
    });
    run_file(&mut n, size);
    assert_eq!(n.client.ep.ecn_validation(), EcnValidation::Bleached);
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::Ect0));
}

#[test]
fn codepoint_override_and_explicit_classic_fallback() {
    // TransportConfig::ecn_codepoint replaces the controller's choice.
    let size = 12 * u64::from(MSS);
    let c = TransportConfig {
        ecn_codepoint: Some(EcnCodepoint::Ect1),
        ..cfg(EcnMode::AccEcn)
    };
    let (mut n, _) = net_with(
        c.clone(),
        c,
        EcnCodepoint::NotEct,
        10,
        Box::new(File::new(size)),
    );
    n.connect();
    n.run_until(ms(25));
    assert!(client_data(&n).iter().all(|d| d.ecn == Ecn::Ect1));
    // Endpoint::fall_back_to_classic_ecn: ECT(0) from now on.
    n.client.ep.fall_back_to_classic_ecn();
    n.run_while(ms(1000), |n| n.client.ep.state() == ConnState::FinWait2);
    let data = client_data(&n);
    assert!(data
        .iter()
        .filter(|d| d.t > ms(25))
        .all(|d| d.ecn == Ecn::Ect0));
    assert!(data.iter().any(|d| d.t > ms(25)));
}
