//! The ACK clock: slow-start growth and the delayed-ACK policy (RFC 5681 §3.1, §4.2).

mod common;

use std::collections::BTreeMap;

use common::cc::{Fixed, MiniReno};
use common::{dms, ms, seg_seq, Dir, Net, Writes};
use l4slab_core::Time;
use l4slab_tcp::{Bulk, File, Flags, TransportConfig};

const MSS: u32 = 1448;

/// Data segments the client sent, counted per send time.
fn per_time(n: &Net) -> BTreeMap<Time, usize> {
    let mut m = BTreeMap::new();
    for (t, _, _) in n.client_data() {
        *m.entry(t).or_insert(0) += 1;
    }
    m
}

fn slow_start(delayed_ack: bool) -> BTreeMap<Time, usize> {
    let cfg = TransportConfig {
        delayed_ack,
        ..TransportConfig::default()
    };
    let mut n = Net::simple(
        cfg,
        Box::new(MiniReno::new(10, MSS)),
        Box::new(Bulk::new()),
        dms(10),
    );
    n.check = false; // windows grow large; invariants are checked elsewhere
    n.connect();
    n.run_until(ms(85));
    per_time(&n)
}

#[test]
fn slow_start_doubles_every_rtt_through_the_ack_clock() {
    // RTT 20 ms, no bottleneck: each flight's ACKs arrive together one RTT
    // later and each ACKed segment releases two (cwnd += acked, pipe -= acked).
    let expect: BTreeMap<Time, usize> =
        [(ms(20), 10), (ms(40), 20), (ms(60), 40), (ms(80), 80)].into();
    assert_eq!(slow_start(false), expect);
    // With delayed ACKs (one ACK per two segments) a controller that counts
    // acked bytes (as Linux does) still doubles.
    assert_eq!(slow_start(true), expect);
}

#[test]
fn delayed_ack_every_second_segment_or_after_40ms() {
    let plan = [(ms(20), 3 * u64::from(MSS))];
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(Fixed::segments(10, MSS)),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    n.connect();
    n.run_until(ms(200));
    // Three segments arrive at 30 ms: the second one triggers an ACK at once
    // (two full segments unacknowledged), the third waits for the 40 ms timer.
    let acks: Vec<_> = n.server_acks().iter().map(|a| (a.0, a.1)).collect();
    assert_eq!(acks, [(ms(30), seg_seq(2, MSS)), (ms(70), seg_seq(3, MSS))]);
    // The delayed ACK echoes the timestamp of the segment it acknowledges, so
    // the client's sample includes the 40 ms delay (as in Linux).
    assert_eq!(n.client.ep.latest_rtt(), Some(dms(60)));
}

#[test]
fn without_delayed_acks_every_segment_is_acked() {
    let plan = [(ms(20), 3 * u64::from(MSS))];
    let cfg = TransportConfig {
        delayed_ack: false,
        ..TransportConfig::default()
    };
    let mut n = Net::simple(
        cfg,
        Box::new(Fixed::segments(10, MSS)),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    n.connect();
    n.run_until(ms(200));
    let acks: Vec<_> = n.server_acks().iter().map(|a| (a.0, a.1)).collect();
    assert_eq!(
        acks,
        [
            (ms(30), seg_seq(1, MSS)),
            (ms(30), seg_seq(2, MSS)),
            (ms(30), seg_seq(3, MSS))
        ]
    );
}

#[test]
fn sub_mss_tail_and_piggybacked_fin() {
    // cwnd of two segments: the 104 B tail is still queued when the app
    // closes, so the FIN rides on it one RTT later.
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(Fixed::segments(2, MSS)),
        Box::new(File::new(3000)),
        dms(10),
    );
    n.connect();
    n.run_until(ms(200));
    let data: Vec<_> = n
        .sent(Dir::C2S)
        .filter(|s| s.seg.len > 0 || s.seg.flags.contains(Flags::FIN))
        .map(|s| {
            (
                s.t,
                s.seg.seq,
                s.seg.len,
                s.seg.flags.contains(Flags::FIN),
                s.wire_len,
            )
        })
        .collect();
    assert_eq!(
        data,
        [
            (ms(20), 1, 1448, false, 1500),
            (ms(20), 1449, 1448, false, 1500),
            (ms(40), 2897, 104, true, 156),
        ]
    );
    assert_eq!(n.server.delivered(), 3000);
}
