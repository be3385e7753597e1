//! Linux's loss recovery, the default: tail loss probe (RFC 8985 §7), F-RTO
//! (RFC 5682), undo by D-SACK (RFC 2883) and the timestamp echo, and the
//! retransmission timer's rules — each against the RFC-only behaviour it
//! replaces (`common::rfc_recovery`).

mod common;

use common::cc::{Fixed, MiniReno};
use common::{dms, ms, seg_seq, Dir, Net, Writes};
use l4slab_cc::CongestionEvent;
use l4slab_core::Dur;
use l4slab_tcp::TransportConfig;

const MSS: u32 = 1448;

fn s(i: u64) -> u64 {
    seg_seq(i, MSS)
}

/// Ten segments written at 20 ms through a fixed window of ten, 10 ms each
/// way, with `cfg` on the sender.
fn ten(cfg: TransportConfig) -> (Net, common::cc::Log) {
    let fixed = Fixed::segments(10, MSS);
    let log = fixed.log.clone();
    (ten_with(cfg, Box::new(fixed)), log)
}

fn ten_with(cfg: TransportConfig, cc: Box<dyn l4slab_cc::CongestionControl>) -> Net {
    let plan = [(ms(20), 10 * u64::from(MSS))];
    Net::simple(cfg, cc, Box::new(Writes::new(&plan, false)), dms(10))
}

#[test]
fn a_tail_loss_is_repaired_by_the_probe_instead_of_a_timeout() {
    // The last two segments are lost. Nothing above them can be SACKed, so
    // only a timeout (RFC) or a probe (Linux) can reveal the loss.
    let run = |cfg| {
        let (mut n, _) = ten(cfg);
        n.drop_data_once(&[s(8), s(9)]);
        n.connect();
        n.run_until(ms(2000));
        assert_eq!(n.server.delivered(), 10 * u64::from(MSS));
        n
    };
    let linux = run(TransportConfig::default());
    let st = linux.client.ep.stats();
    // SRTT 20 ms: PTO = 2·20 + 2 ms after the last ACK of new data (40 ms).
    let probe = linux
        .client_data()
        .into_iter()
        .find(|d| d.2)
        .expect("a retransmission");
    assert_eq!(
        probe,
        (ms(82), s(9), true),
        "the probe resends the last segment"
    );
    // Its SACK lets RACK find segment 8 lost: fast recovery, no timeout.
    assert_eq!((st.tlp_probes, st.rto_count), (1, 0));
    assert_eq!((st.fast_recovery_episodes, st.retransmits), (1, 2));
    let rfc = run(common::rfc_recovery());
    let st = rfc.client.ep.stats();
    assert_eq!((st.tlp_probes, st.rto_count), (0, 1));
    // RFC 6298 §5.3: restarted by the last ACK of new data (40 ms).
    let first_rtx = rfc.client_data().into_iter().find(|d| d.2).unwrap();
    assert_eq!(first_rtx.0, ms(240));
}

#[test]
fn a_spurious_timeout_is_undone_without_resending_the_window() {
    // Every ACK of the first flight is held up 247 ms on the return path
    // (a delay spike): the RTO fires at 282 ms (after the probe at 62 ms)
    // while all ten segments are safely received, and the ACKs arrive 5 ms
    // after the timeout's retransmission. A window that collapses to one
    // segment on the timeout (MiniReno), as F-RTO assumes.
    let run = |cfg| {
        let cc = MiniReno::new(10, MSS);
        let log = cc.log.clone();
        let mut n = ten_with(cfg, Box::new(cc));
        n.set_jitter(|dir, seg, _| {
            if dir == Dir::S2C && seg.len == 0 && seg.ack > s(0) && seg.ack <= s(10) {
                dms(247)
            } else {
                Dur::ZERO
            }
        });
        n.connect();
        n.run_until(ms(3000));
        assert_eq!(n.server.delivered(), 10 * u64::from(MSS));
        (n, log)
    };
    let (linux, log) = run(TransportConfig::default());
    let st = linux.client.ep.stats();
    // The first late ACK echoes the original's timestamp, older than the
    // retransmission (Eifel): the timeout is undone, nothing more is sent
    // again (the probe and the timeout's one retransmission).
    assert_eq!((st.rto_count, st.spurious_rtos, st.undos), (1, 1, 1));
    assert_eq!(st.retransmits, 2);
    let undo = log
        .congestion()
        .into_iter()
        .find(|(_, e)| *e == CongestionEvent::Undo)
        .expect("an undo");
    assert_eq!(undo.0, ms(287));
    // Without undo the timeout goes back N: the window is resent.
    let (rfc, log) = run(common::rfc_recovery());
    let st = rfc.client.ep.stats();
    assert_eq!((st.rto_count, st.undos), (1, 0));
    assert!(log
        .congestion()
        .iter()
        .all(|(_, e)| *e != CongestionEvent::Undo));
    assert!(
        st.retransmits >= 5,
        "RFC: {} retransmissions",
        st.retransmits
    );
}

#[test]
fn a_duplicate_retransmission_is_d_sacked_and_the_reduction_undone() {
    // Segment 2 is delayed 15 ms: three SACKs mark it lost and it is
    // retransmitted; the original then fills the hole and the
    // retransmission arrives as a duplicate, which the receiver reports
    // with a D-SACK block below its cumulative ACK (RFC 2883 §4.1.1).
    let run = |cfg: TransportConfig| {
        let (mut n, log) = ten(cfg);
        n.set_jitter(|dir, seg, _| {
            if dir == Dir::C2S && seg.seq == s(2) && seg.len > 0 && !seg.retransmission {
                dms(15)
            } else {
                Dur::ZERO
            }
        });
        n.connect();
        n.run_until(ms(500));
        (n, log)
    };
    // Timestamps alone (Eifel) would also undo this one; switch D-SACK off
    // on the receiver and the sender's undo needs the echo.
    let (n, _) = run(TransportConfig::default());
    let (_, _, sacks) = n
        .server_acks()
        .into_iter()
        .find(|(_, ack, b)| b.first().is_some_and(|d| d.1 <= *ack))
        .expect("an ACK with a D-SACK block");
    assert_eq!(sacks[0], (s(2), s(3)), "the duplicate is reported");
    let st = n.client.ep.stats();
    assert_eq!((st.dsacks_received, st.undos), (1, 1));
    let off = TransportConfig {
        dsack: false,
        ..TransportConfig::default()
    };
    let (n, _) = run(off);
    assert!(n
        .server_acks()
        .iter()
        .all(|(_, ack, b)| b.first().is_none_or(|d| d.1 > *ack)));
    assert_eq!(n.client.ep.stats().dsacks_received, 0);
}

#[test]
fn retransmitting_the_first_segment_restarts_the_linux_timer() {
    // Segment 0 and its first retransmission are lost. Linux restarts the
    // timer when it retransmits the head (fast retransmit at ~40 ms), so
    // the RTO comes an RTO after that retransmission, not after the
    // original send (RFC 6298 §5.1: the timer keeps running).
    let run = |cfg: TransportConfig| {
        let (mut n, _) = ten(cfg);
        let mut first_two = 0;
        n.set_drop(move |dir, seg, _| {
            if dir == Dir::C2S && seg.seq == s(0) && seg.len > 0 && first_two < 2 {
                first_two += 1;
                return true;
            }
            false
        });
        n.connect();
        n.run_until(ms(3000));
        let rtx: Vec<_> = n
            .client_data()
            .into_iter()
            .filter(|d| d.2 && d.1 == s(0))
            .map(|d| d.0)
            .collect();
        (n, rtx)
    };
    let (_, linux) = run(TransportConfig {
        tlp: false,
        ..TransportConfig::default()
    });
    let (_, rfc) = run(common::rfc_recovery());
    assert_eq!(linux.len(), 2);
    assert_eq!(rfc.len(), 2);
    // Linux RTO = SRTT + max(min_rto, 4·RTTVAR) = 20 + 200 ms after the
    // fast retransmit; RFC: max(200, 60) ms after the first send at 20 ms.
    assert_eq!(linux[1] - linux[0], dms(220));
    assert_eq!(rfc[1], ms(220));
}
