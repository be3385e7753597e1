//! SACK generation, fast retransmit and recovery episodes, RTO timing
//! (RFC 2018, RFC 6675, RFC 8985, RFC 6582, RFC 6298).

mod common;

use common::cc::{Fixed, MiniReno};
use common::{dms, ms, seg_seq, Dir, Net, Writes};
use l4slab_cc::CongestionEvent;
use l4slab_core::trace::RetransmitReason;
use l4slab_core::{Dur, TraceEvent};
use l4slab_tcp::{AppEvent, TransportConfig};

const MSS: u32 = 1448;

fn s(i: u64) -> u64 {
    seg_seq(i, MSS)
}

/// Ten segments at 20 ms, one-way delay 10 ms, fixed window of ten; the
/// segments in `lose` are lost once.
fn ten_segments(lose: &[u64]) -> (Net, common::cc::Log) {
    let fixed = Fixed::segments(10, MSS);
    let log = fixed.log.clone();
    let plan = [(ms(20), 10 * u64::from(MSS))];
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(fixed),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    let seqs: Vec<u64> = lose.iter().map(|&i| s(i)).collect();
    n.drop_data_once(&seqs);
    n.connect();
    (n, log)
}

#[test]
fn receiver_sacks_most_recent_block_first() {
    let (mut n, _) = ten_segments(&[2, 5]);
    n.run_until(ms(35));
    // At 30 ms segments 0,1,3,4,6,7,8,9 arrive in order of sending.
    assert_eq!(
        n.server_acks(),
        [
            // 0 and 1: in order, the second triggers the (non-delayed) ACK.
            (ms(30), s(2), vec![]),
            // 3: out of order -> immediate duplicate ACK with a SACK block.
            (ms(30), s(2), vec![(s(3), s(4))]),
            (ms(30), s(2), vec![(s(3), s(5))]),
            // 6: a second hole; its block comes first (RFC 2018 §4).
            (ms(30), s(2), vec![(s(6), s(7)), (s(3), s(5))]),
            (ms(30), s(2), vec![(s(6), s(8)), (s(3), s(5))]),
            (ms(30), s(2), vec![(s(6), s(9)), (s(3), s(5))]),
            (ms(30), s(2), vec![(s(6), s(10)), (s(3), s(5))]),
        ]
    );
    // Out-of-order bytes take buffer space, but the right edge offered by
    // the first ACK (s(2) + buffer) stands (Linux tcp_select_window).
    assert_eq!(n.server.ep.reassembly_bytes(), 6 * u64::from(MSS));
    let last = n.sent(Dir::S2C).last().unwrap().seg;
    assert_eq!(last.wnd, TransportConfig::default().receive_buffer);
    // Two SACK blocks on a pure ACK: 52 + 4 + 16 = 72 B.
    assert_eq!(n.sent(Dir::S2C).last().unwrap().wire_len, 72);
}

#[test]
fn each_segment_marked_lost_reaches_the_controller_with_its_send_snapshot() {
    // Linux tcp_mark_skb_lost -> tcp_notify_skb_loss_event: tp->lost grows
    // by the segment, then cong ops skb_marked_lost(sk, skb) sees it with its
    // TCP_SKB_CB(skb)->tx snapshot. Segments 2 and 5 of ten sent back to back
    // (segment k left with k + 1 in flight) are marked lost at 40 ms.
    let (mut n, log) = ten_segments(&[2, 5]);
    n.run_until(ms(200));
    let m = u64::from(MSS);
    let lost = log.lost();
    assert_eq!(lost.len(), 2, "{lost:?}");
    for (i, (k, (t, p))) in [2u64, 5].iter().zip(&lost).enumerate() {
        assert_eq!(*t, ms(40));
        assert_eq!(p.bytes, m);
        assert_eq!(p.tx_in_flight, (k + 1) * m, "segment {k}");
        assert_eq!((p.prior_lost, p.prior_delivered), (0, 0));
        // The connection sat idle until the write at 20 ms: its first
        // flight carries the app-limited mark (draft-cheng-iccrg-delivery-
        // rate-estimation §3.4), and so do these two.
        assert!(p.app_limited);
        // C.lost includes the segment just marked.
        assert_eq!(p.total_lost, (i as u64 + 1) * m);
    }
    // Both before the congestion event and the ACK of that moment, which
    // carries the same C.lost.
    let calls = log.calls();
    let last_lost = calls
        .iter()
        .rposition(|c| matches!(c, common::cc::Call::Lost { .. }))
        .unwrap();
    let loss_ev = calls
        .iter()
        .position(|c| matches!(c, common::cc::Call::Congestion { .. }))
        .unwrap();
    assert!(last_lost < loss_ev);
    let ack = log
        .acks()
        .into_iter()
        .find(|(_, a)| a.total_lost > 0)
        .unwrap();
    assert_eq!((ack.0, ack.1.total_lost), (ms(40), 2 * m));
}

#[test]
fn fast_retransmit_once_dupthresh_segments_are_sacked() {
    let (mut n, log) = ten_segments(&[2]);
    n.run_until(ms(200));
    // The ACKs of 30 ms reach the client at 40 ms. The third SACKed segment
    // above the hole (segment 5) makes segment 2 lost (RFC 6675 IsLost) and it
    // is retransmitted at once (RFC 6675 §5 (4.3)).
    assert_eq!(
        n.client_data()
            .into_iter()
            .filter(|d| d.2)
            .collect::<Vec<_>>(),
        [(ms(40), s(2), true)]
    );
    let rtx = n
        .client
        .traces(|e| matches!(e, TraceEvent::Retransmit { .. }));
    assert_eq!(
        rtx,
        [(
            ms(40),
            TraceEvent::Retransmit {
                flow: 1,
                seq: s(2),
                bytes: MSS,
                reason: RetransmitReason::Fast
            }
        )]
    );
    // It was detected while processing the ACK that SACKed the third segment.
    let acks_before: Vec<_> = log
        .acks()
        .into_iter()
        .take_while(|(_, a)| !a.in_recovery)
        .collect();
    assert_eq!(acks_before.len(), 3); // ACK for 0-1, SACK of 3, SACK of 4
                                      // One reduction for the episode, ended by the ACK covering the recovery point.
    assert_eq!(
        log.congestion(),
        [
            (
                ms(40),
                CongestionEvent::Loss {
                    lost_bytes: u64::from(MSS),
                    // RFC 5681 FlightSize after this ACK: segments 2-9.
                    in_flight: 8 * u64::from(MSS),
                    first_in_episode: true
                }
            ),
            (ms(60), CongestionEvent::RecoveryEnd),
        ]
    );
    assert_eq!(n.server.delivered(), 10 * u64::from(MSS));
    let st = n.client.ep.stats();
    assert_eq!(
        (st.retransmits, st.lost_segments, st.fast_recovery_episodes),
        (1, 1, 1)
    );
    assert_eq!(st.rto_count, 0);
}

#[test]
fn several_losses_in_one_window_are_one_episode() {
    let cc = MiniReno::new(10, MSS);
    let log = cc.log.clone();
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(cc),
        Box::new(l4slab_tcp::File::new(60 * u64::from(MSS))),
        dms(10),
    );
    // Lose 5 segments spread over the second flight (segments 10-29).
    n.drop_data_once(&[s(11), s(14), s(18), s(22), s(27)]);
    n.connect();
    n.run_until(ms(2000));
    assert_eq!(n.server.delivered(), 60 * u64::from(MSS));
    let losses: Vec<_> = log
        .congestion()
        .into_iter()
        .filter_map(|(_, e)| match e {
            CongestionEvent::Loss {
                first_in_episode, ..
            } => Some(first_in_episode),
            _ => None,
        })
        .collect();
    // Exactly one reduction (the first), however the losses were detected.
    assert_eq!(losses.iter().filter(|&&f| f).count(), 1, "{losses:?}");
    let ends = log
        .congestion()
        .iter()
        .filter(|(_, e)| *e == CongestionEvent::RecoveryEnd)
        .count();
    assert_eq!(ends, 1);
    let st = n.client.ep.stats();
    assert_eq!(st.fast_recovery_episodes, 1);
    assert_eq!(st.retransmits, 5);
    assert_eq!(st.rto_count, 0);
}

#[test]
fn rto_fires_at_min_rto_and_backs_off_1x_2x_4x() {
    // The RFC 6298 timer (the Linux default adds a probe and another RTO
    // formula: tests/linux_recovery.rs).
    let fixed = Fixed::segments(10, MSS);
    let log = fixed.log.clone();
    let plan = [(ms(20), u64::from(MSS))];
    let mut n = Net::simple(
        common::rfc_recovery(),
        Box::new(fixed),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    // Lose the segment and its first two retransmissions.
    let mut tx = 0;
    n.set_drop(move |dir, seg, _| {
        if dir == Dir::C2S && seg.len > 0 {
            tx += 1;
            return tx <= 3;
        }
        false
    });
    n.connect();
    n.run_until(ms(25));
    // Handshake sample 20 ms: SRTT 20, RTTVAR 10 -> 20 + 40 = 60 ms < min_rto.
    assert_eq!(n.client.ep.rto(), dms(200));
    assert_eq!(n.client.ep.next_timer(), Some(ms(220)));
    n.run_until(ms(3000));
    let times: Vec<_> = n.client_data().iter().map(|d| (d.0, d.2)).collect();
    // RFC 6298 §5.5: 200 ms, then 400 ms, then 800 ms.
    assert_eq!(
        times,
        [
            (ms(20), false),
            (ms(220), true),
            (ms(620), true),
            (ms(1420), true)
        ]
    );
    let rtos: Vec<_> = log
        .congestion()
        .into_iter()
        .map(|(t, e)| (t, matches!(e, CongestionEvent::Rto { .. })))
        .collect();
    // The single segment is ACKed by the delayed-ACK timer (1430 + 40 ms).
    assert_eq!(
        rtos,
        [
            (ms(220), true),
            (ms(620), true),
            (ms(1420), true),
            (ms(1480), false)
        ]
    );
    assert_eq!(n.client.ep.stats().rto_count, 3);
    // The ACK at 1480 ms gives a valid (60 ms) sample: back-off cleared.
    assert_eq!(n.client.ep.rto_backoff(), 0);
    assert_eq!(n.client.ep.rto(), dms(200));
    assert_eq!(n.server.delivered(), u64::from(MSS));
    let reasons: Vec<_> = n
        .client
        .traces(|e| matches!(e, TraceEvent::Retransmit { .. }))
        .into_iter()
        .map(|(_, e)| match e {
            TraceEvent::Retransmit { reason, .. } => reason,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(reasons, [RetransmitReason::Rto; 3]);
}

#[test]
fn rto_value_follows_rfc6298_after_samples() {
    let cfg = TransportConfig {
        min_rto: Dur::from_nanos(1), // expose the raw RFC 6298 value
        delayed_ack: false,
        ..TransportConfig::default()
    };
    let plan = [(ms(20), 1000), (ms(100), 1000)];
    let mut n = Net::simple(
        cfg,
        Box::new(Fixed::segments(10, MSS)),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    n.connect();
    n.run_until(ms(25));
    // §2.2 first sample R = 20: SRTT = 20, RTTVAR = 10, RTO = 20 + 4*10 = 60.
    assert_eq!(
        (n.client.ep.srtt(), n.client.ep.rttvar()),
        (Some(dms(20)), dms(10))
    );
    assert_eq!(n.client.ep.rto(), dms(60));
    // Second sample R' = 20: RTTVAR = 3/4*10 + 1/4*0 = 7.5; SRTT = 20; RTO = 50.
    n.run_until(ms(45));
    assert_eq!(n.client.ep.rttvar(), Dur::from_micros(7_500));
    assert_eq!(n.client.ep.rto(), dms(50));
    // Now the path gets slower: one-way 25 ms, R' = 50:
    // RTTVAR = 3/4*7.5 + 1/4*30 = 13.125; SRTT = 7/8*20 + 1/8*50 = 23.75;
    // RTO = 23.75 + 4*13.125 = 76.25 ms.
    n.delay = [dms(25), dms(25)];
    n.run_until(ms(200));
    assert_eq!(n.client.ep.latest_rtt(), Some(dms(50)));
    assert_eq!(n.client.ep.srtt(), Some(Dur::from_micros(23_750)));
    assert_eq!(n.client.ep.rttvar(), Dur::from_micros(13_125));
    assert_eq!(n.client.ep.rto(), Dur::from_micros(76_250));
}

#[test]
fn rack_detects_a_lost_retransmission() {
    // Segment 2 is lost, then its fast retransmission is lost too: RACK sees
    // later segments (sent after the retransmission) delivered and marks the
    // retransmission lost one RTT (+ reo_wnd = 0 in recovery) after it was sent,
    // long before the 200 ms RTO.
    let fixed = Fixed::segments(10, MSS);
    let plan = [(ms(20), 10 * u64::from(MSS)), (ms(40), 10 * u64::from(MSS))];
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(fixed),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    let mut copies = 0;
    n.set_drop(move |dir, seg, _| {
        if dir == Dir::C2S && seg.seq == s(2) && seg.len > 0 {
            copies += 1;
            return copies <= 2;
        }
        false
    });
    n.connect();
    n.run_until(ms(1000));
    let rtx: Vec<_> = n
        .client_data()
        .into_iter()
        .filter(|d| d.1 == s(2))
        .collect();
    assert_eq!(rtx[0], (ms(20), s(2), false));
    assert_eq!(rtx[1], (ms(40), s(2), true));
    assert!(
        rtx[2].0 < ms(100),
        "second retransmission by RACK, not RTO: {rtx:?}"
    );
    assert_eq!(n.client.ep.stats().rto_count, 0);
    assert_eq!(n.server.delivered(), 20 * u64::from(MSS));
    assert_eq!(n.server.count(AppEvent::PeerFinished), 0);
}

#[test]
fn reordering_within_reo_wnd_is_not_a_loss() {
    // 10 Mbit/s: segments 1.2 ms apart. Segment 2 is delayed by 2 ms and
    // arrives after segment 3: one SACK, below DupThresh, and RACK waits
    // min_rtt/4 = 5 ms (RFC 8985 §6.2 step 4) — long enough.
    let (mut n, log) = ten_segments(&[]);
    n.rate[0] = Some(l4slab_core::Rate::from_mbps(10));
    n.set_jitter(|dir, seg, _| {
        if dir == Dir::C2S && seg.seq == s(2) && seg.len > 0 {
            dms(2)
        } else {
            Dur::ZERO
        }
    });
    n.run_until(ms(500));
    assert_eq!(n.client.ep.stats().retransmits, 0);
    assert!(log.congestion().is_empty());
    let sacked_once = n.server_acks().iter().any(|a| !a.2.is_empty());
    assert!(sacked_once, "segment 3 was SACKed before segment 2 arrived");
}

#[test]
fn spurious_fast_retransmit_is_detected_by_the_timestamp_echo() {
    // Segment 2 arrives 15 ms late, after three SACKs made it "lost": it is
    // retransmitted at 40 ms, but the original fills the hole at 45 ms and its
    // ACK echoes the original's timestamp (RFC 3522 §2, Eifel).
    let (mut n, log) = ten_segments(&[]);
    n.set_jitter(|dir, seg, _| {
        if dir == Dir::C2S && seg.seq == s(2) && seg.len > 0 && !seg.retransmission {
            dms(15)
        } else {
            Dur::ZERO
        }
    });
    n.run_until(ms(500));
    let st = n.client.ep.stats();
    assert_eq!((st.retransmits, st.spurious_retransmits), (1, 1));
    assert_eq!(n.server.delivered(), 10 * u64::from(MSS));
    // The episode ends with that echo older than the retransmission: Linux
    // tcp_try_undo_recovery undoes the reduction (tests/linux_recovery.rs).
    assert_eq!(st.undos, 1);
    assert!(log
        .congestion()
        .iter()
        .any(|(_, e)| *e == CongestionEvent::Undo));
}
