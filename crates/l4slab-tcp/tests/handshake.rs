//! Handshake, close and handshake-loss timelines (RFC 9293 §3.5-§3.6, RFC 6298 §5).

mod common;

use common::cc::Fixed;
use common::{dms, ms, Dir, Net};
use l4slab_tcp::{AppEvent, ConnState, File, Flags, Sink, TransportConfig};

fn net(app: Box<dyn l4slab_tcp::App>) -> Net {
    let cfg = TransportConfig::default();
    Net::simple(cfg, Box::new(Fixed::segments(10, 1448)), app, dms(10))
}

#[test]
fn three_way_handshake_timeline() {
    let mut n = net(Box::new(Sink::new()));
    n.connect();
    assert_eq!(n.client.ep.state(), ConnState::SynSent);
    n.run_until(ms(100));

    let log: Vec<_> = n
        .log
        .iter()
        .map(|s| (s.t, s.dir, s.seg.flags, s.seg.seq, s.seg.ack, s.wire_len))
        .collect();
    assert_eq!(
        log,
        [
            // t=0: SYN, ISN 0; 60 B with MSS/SACK-permitted/WS/timestamps options.
            (ms(0), Dir::C2S, Flags::SYN, 0, 0, 60),
            // t=10 ms: SYN/ACK acknowledges the SYN (ack = ISN + 1).
            (ms(10), Dir::S2C, Flags::SYN | Flags::ACK, 0, 1, 60),
            // t=20 ms: the third ACK, at once (52 B: headers + timestamps).
            (ms(20), Dir::C2S, Flags::ACK, 1, 1, 52),
        ]
    );
    // No ECN negotiation yet (EcnMode::Off): no ECE/CWR/AE on the SYN.
    assert_eq!(n.log[0].seg.ace(), 0);
    assert_eq!(n.client.time_of(AppEvent::Connected), Some(ms(20)));
    assert_eq!(n.server.time_of(AppEvent::Connected), Some(ms(30)));
    assert_eq!(n.client.ep.state(), ConnState::Established);
    assert_eq!(n.server.ep.state(), ConnState::Established);
    // Both sides took an RTT sample from the timestamp echo of the handshake.
    assert_eq!(n.client.ep.srtt(), Some(dms(20)));
    assert_eq!(n.server.ep.srtt(), Some(dms(20)));
    // Nothing pending: no timers left running.
    assert_eq!(n.client.ep.next_timer(), None);
    assert_eq!(n.server.ep.next_timer(), None);
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto_and_backs_off() {
    let mut n = net(Box::new(Sink::new()));
    let mut syns = 0;
    // Lose the first two SYNs.
    n.set_drop(move |dir, seg, _| {
        if dir == Dir::C2S && seg.flags.contains(Flags::SYN) {
            syns += 1;
            return syns <= 2;
        }
        false
    });
    n.connect();
    n.run_until(ms(5000));
    let syn_times: Vec<_> = n
        .sent(Dir::C2S)
        .filter(|s| s.seg.flags.contains(Flags::SYN))
        .map(|s| (s.t, s.seg.retransmission))
        .collect();
    // RFC 6298 §2.1: initial RTO 1 s; §5.5: doubled after each expiry.
    assert_eq!(
        syn_times,
        [(ms(0), false), (ms(1000), true), (ms(3000), true)]
    );
    assert_eq!(n.client.time_of(AppEvent::Connected), Some(ms(3020)));
    assert_eq!(n.client.ep.stats().rto_count, 2);
    // The timestamp echo identifies the retransmission: the sample is 20 ms
    // (Karn's rule would have discarded it without timestamps).
    assert_eq!(n.client.ep.srtt(), Some(dms(20)));
    assert_eq!(n.client.ep.rto_backoff(), 0);
}

#[test]
fn lost_syn_ack_and_lost_third_ack_recover() {
    let mut n = net(Box::new(File::new(1000)));
    let mut dropped_synack = false;
    let mut dropped_ack = false;
    n.set_drop(move |dir, seg, _| {
        if dir == Dir::S2C && seg.flags.contains(Flags::SYN) && !dropped_synack {
            dropped_synack = true;
            return true;
        }
        if dir == Dir::C2S && seg.flags == Flags::ACK && seg.len == 0 && !dropped_ack {
            dropped_ack = true;
            return true;
        }
        false
    });
    n.connect();
    n.run_until(ms(5000));
    // The server retransmitted its SYN/ACK when its RTO fired (1 s after 10 ms),
    // and also answered the client's retransmitted SYN (at 1 s + 10 ms).
    let synacks: Vec<_> = n
        .sent(Dir::S2C)
        .filter(|s| s.seg.flags.contains(Flags::SYN))
        .map(|s| s.t)
        .collect();
    assert_eq!(synacks, [ms(10), ms(1010), ms(1010)]);
    // The third ACK was lost; the data segment (which carries the ACK) completes the
    // server's handshake.
    assert_eq!(n.server.delivered(), 1000);
    assert_eq!(n.server.count(AppEvent::PeerFinished), 1);
    assert_eq!(
        n.server.time_of(AppEvent::Connected),
        n.server.time_of(AppEvent::PeerFinished)
    );
}

#[test]
fn close_with_fin_after_the_data() {
    let mut n = net(Box::new(File::new(3000)));
    n.connect();
    n.run_until(ms(200));
    let data: Vec<_> = n
        .sent(Dir::C2S)
        .filter(|s| s.seg.len > 0 || s.seg.flags.contains(Flags::FIN))
        .map(|s| (s.t, s.seg.seq, s.seg.len, s.seg.flags.contains(Flags::FIN)))
        .collect();
    // 3000 B = 1448 + 1448 + 104. The app writes, the data leaves at once (no
    // Nagle, as with TCP_NODELAY), then it closes: the FIN follows in its own
    // segment and takes sequence number 3001.
    assert_eq!(
        data,
        [
            (ms(20), 1, 1448, false),
            (ms(20), 1449, 1448, false),
            (ms(20), 2897, 104, false),
            (ms(20), 3001, 0, true)
        ]
    );
    assert_eq!(n.server.delivered(), 3000);
    assert_eq!(n.server.time_of(AppEvent::PeerFinished), Some(ms(30)));
    // The FIN is ACKed at once (ack = 3002).
    let last_ack = n.server_acks().last().cloned().unwrap();
    assert_eq!((last_ack.0, last_ack.1), (ms(30), 3002));
    assert_eq!(n.client.ep.state(), ConnState::FinWait2);
    assert_eq!(n.server.ep.state(), ConnState::CloseWait);
    assert!(
        !n.client.ep.is_writable(),
        "nothing may be written after close"
    );

    n.server_close();
    n.run_until(ms(400));
    assert_eq!(n.server.ep.state(), ConnState::Closed);
    assert_eq!(n.client.ep.state(), ConnState::TimeWait);
    assert_eq!(n.client.count(AppEvent::PeerFinished), 1);
    assert_eq!(n.client.ep.next_timer(), None);
    assert_eq!(n.server.ep.next_timer(), None);
    assert_eq!(n.client.ep.stats().bytes_acked, 3000);
}
