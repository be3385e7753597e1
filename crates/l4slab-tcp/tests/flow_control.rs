//! Receive window, send buffer / TCP_NOTSENT_LOWAT, and pacing.

mod common;

use common::cc::{Fixed, MiniReno};
use common::{dms, ms, Dir, Net};
use l4slab_core::{Dur, Rate};
use l4slab_tcp::{AppEvent, Bulk, File, TransportConfig};

const MSS: u32 = 1448;

#[test]
fn receive_window_limits_the_sender() {
    let rwnd = 4 * u64::from(MSS);
    let server = TransportConfig {
        receive_buffer: rwnd,
        ..TransportConfig::default()
    };
    // A window of 100 segments, but the receiver offers 4.
    let mut n = Net::new(
        TransportConfig::default(),
        Box::new(Fixed::segments(100, MSS)),
        Box::new(File::new(40 * u64::from(MSS))),
        server,
        Box::new(Fixed::segments(10, MSS)),
        dms(10),
    );
    n.connect();
    let mut max_outstanding = 0;
    while n.now <= ms(2000) && n.step() {
        max_outstanding = max_outstanding.max(n.client.ep.bytes_in_flight());
        assert!(n.client.ep.peer_window() <= rwnd);
    }
    assert_eq!(max_outstanding, rwnd);
    // 4 segments per round trip of 20 ms.
    let first_flight = n.client_data().iter().filter(|d| d.0 == ms(20)).count();
    assert_eq!(first_flight, 4);
    assert_eq!(n.server.delivered(), 40 * u64::from(MSS));
    // The last segment carries the FIN, which needs one more byte of window
    // (Linux tcp_snd_wnd_test checks end_seq): it waits one round, 230 ms
    // instead of 210 ms.
    assert_eq!(n.server.time_of(AppEvent::PeerFinished), Some(ms(230)));
}

#[test]
fn the_default_receive_window_is_linux_6_18s_ceiling() {
    // Linux 6.18's tcp_rmem[2] is 32 MiB (6 MiB before, and l4slab's default
    // until issue 28 checked it): a window of 8000 segments (11.6 MB) is not
    // bounded by a receiver left at its default. The sender's own buffer is
    // raised past the window (its default, tcp_wmem[2], is 4 MiB).
    let client = TransportConfig {
        send_buffer: 64 << 20,
        ..TransportConfig::default()
    };
    assert_eq!(TransportConfig::default().receive_buffer, 32 << 20);
    let segments = 8000;
    let mut n = Net::new(
        client,
        Box::new(Fixed::segments(segments, MSS)),
        Box::new(File::new(2 * segments * u64::from(MSS))),
        TransportConfig::default(),
        Box::new(Fixed::segments(10, MSS)),
        dms(10),
    );
    n.connect();
    let mut max_outstanding = 0;
    while n.now <= ms(2000) && n.step() {
        max_outstanding = max_outstanding.max(n.client.ep.bytes_in_flight());
    }
    // The whole window in flight (plus the FIN's sequence byte on the last flight).
    let window = segments * u64::from(MSS);
    assert!(
        (window..=window + 1).contains(&max_outstanding),
        "{max_outstanding}"
    );
    assert!(max_outstanding > 6 << 20);
    assert_eq!(n.server.delivered(), 2 * segments * u64::from(MSS));
}

#[test]
fn out_of_order_data_never_retracts_the_right_edge() {
    // Receive buffer of 6 segments; the first segment of a flight is lost, so
    // the other 5 wait in reassembly. The free buffer drops to one segment,
    // but the window offered before the hole stands (Linux
    // tcp_select_window never shrinks it): every ACK's right edge (ack + wnd)
    // is at or beyond the previous one, and the transfer completes.
    let server = TransportConfig {
        receive_buffer: 6 * u64::from(MSS),
        ..TransportConfig::default()
    };
    let mut n = Net::new(
        TransportConfig::default(),
        Box::new(MiniReno::new(10, MSS)),
        Box::new(File::new(60 * u64::from(MSS))),
        server,
        Box::new(Fixed::segments(10, MSS)),
        dms(10),
    );
    n.drop_data_once(&[1]);
    n.connect();
    n.run_until(ms(5000));
    let edges: Vec<(u64, u64)> = n
        .sent(Dir::S2C)
        .filter(|s| s.seg.ack > 0)
        .map(|s| (s.seg.ack, s.seg.ack + s.seg.wnd))
        .collect();
    assert!(
        edges.windows(2).all(|w| w[1].1 >= w[0].1),
        "right edge retracted: {edges:?}"
    );
    // Behind the hole (the same ACK repeated with SACK blocks) the window
    // stays at the full buffer it was offered before the loss.
    let first_ack = edges
        .iter()
        .map(|e| e.0)
        .find(|&a| edges.iter().filter(|e| e.0 == a).count() > 1);
    let dup = first_ack.expect("duplicate ACKs behind the hole");
    assert!(edges
        .iter()
        .filter(|e| e.0 == dup)
        .all(|e| e.1 - e.0 == 6 * u64::from(MSS)));
    assert_eq!(n.server.delivered(), 60 * u64::from(MSS));
    assert_eq!(n.server.count(AppEvent::PeerFinished), 1);
}

#[test]
fn notsent_lowat_gates_writable_and_bounds_unsent_data() {
    let lowat = 3000;
    let cfg = TransportConfig {
        notsent_lowat: Some(lowat),
        ..TransportConfig::default()
    };
    let mut n = Net::simple(
        cfg,
        Box::new(Fixed::segments(2, MSS)),
        Box::new(Bulk::new()),
        dms(10),
    );
    // Like Linux (which checks the mark before each new skb), the queue is
    // filled up to the mark rounded up to whole segments: 3 segments.
    let cap = 3 * u64::from(MSS);
    n.connect();
    n.run_until(ms(20));
    // At connection the app writes up to the cap: 2 segments leave (cwnd),
    // and the app tops the queue back up.
    assert_eq!(n.client.ep.unsent_bytes(), cap);
    assert!(!n.client.ep.is_writable());
    while n.now <= ms(500) && n.step() {
        let ep = &n.client.ep;
        assert!(ep.unsent_bytes() <= cap, "unsent {}", ep.unsent_bytes());
        // Writable exactly while below the mark (and the buffer has room).
        assert_eq!(ep.is_writable(), ep.unsent_bytes() < lowat);
    }
    let writes = n
        .client
        .events
        .iter()
        .filter(|e| e.1 == AppEvent::Writable)
        .count();
    assert!(
        writes >= 20,
        "the app is woken as the queue drains ({writes})"
    );
    // Everything the app wrote is either acknowledged, in flight or queued below the cap.
    let st = n.client.ep.stats();
    assert!(st.bytes_written <= st.bytes_acked + n.client.ep.bytes_in_flight() + cap);
    // Without the mark a bulk writer fills the whole 4 MiB send buffer.
    let mut m = Net::simple(
        TransportConfig::default(),
        Box::new(Fixed::segments(2, MSS)),
        Box::new(Bulk::new()),
        dms(10),
    );
    m.connect();
    m.run_until(ms(100));
    assert_eq!(
        m.client.ep.stats().bytes_written - m.client.ep.stats().bytes_acked,
        4 << 20
    );
    assert!(!m.client.ep.is_writable());
}

#[test]
fn writable_is_reported_on_transitions_only() {
    let cfg = TransportConfig {
        notsent_lowat: Some(1),
        delayed_ack: false,
        ..TransportConfig::default()
    };
    let mut n = Net::simple(
        cfg,
        Box::new(Fixed::segments(1, MSS)),
        Box::new(Bulk::new()),
        dms(10),
    );
    n.connect();
    n.run_until(ms(20));
    // Connected at 20 ms: with a 1-byte mark Bulk may still write a whole
    // segment (Linux fills the skb before checking the mark), which leaves at
    // once; then one more segment, which stays queued (a window of one
    // segment): not writable until the next ACK.
    assert!(!n.client.ep.is_writable());
    assert_eq!(n.client.ep.unsent_bytes(), u64::from(MSS));
    n.run_until(ms(40));
    // The ACK at 40 ms releases the queued segment: writable again, reported once.
    let w: Vec<_> = n
        .client
        .events
        .iter()
        .filter(|e| e.1 == AppEvent::Writable)
        .map(|e| e.0)
        .collect();
    assert_eq!(w, [ms(40)]);
}

#[test]
fn pacing_spaces_segments_at_size_over_rate() {
    // 1448 B at 11.584 Mbit/s = exactly 1 ms per segment.
    let mut cc = Fixed::segments(100, MSS);
    cc.pacing = Some(Rate::from_bps(u64::from(MSS) * 8 * 1000));
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(cc),
        Box::new(Bulk::new()),
        dms(10),
    );
    n.connect();
    n.run_until(ms(45));
    let times: Vec<_> = n.client_data().iter().map(|d| d.0).collect();
    // Linux paces from the 10th segment on: ten leave at 20 ms, then one per ms.
    assert!(times[..10].iter().all(|&t| t == ms(20)));
    for (i, &t) in times[10..].iter().enumerate() {
        assert_eq!(t, ms(21 + i as u64), "segment {}", 10 + i);
    }
    // The pacing release is a timer, not a sleep.
    assert!(n.client.ep.next_timer().is_some());
}

#[test]
fn default_pacing_uses_linux_ratios_of_cwnd_over_srtt() {
    let cfg = TransportConfig {
        pacing: true,
        ..TransportConfig::default()
    };
    let mut n = Net::simple(
        cfg,
        Box::new(Fixed::segments(20, MSS)),
        Box::new(Bulk::new()),
        dms(10),
    );
    n.connect();
    n.run_until(ms(30));
    // No ssthresh: "slow start", 200% of 20 * 1448 B per 20 ms = 23.168 Mbit/s.
    let rate = n.client.ep.pacing_rate().unwrap();
    assert_eq!(rate, Rate::from_bps(23_168_000));
    let times: Vec<_> = n.client_data().iter().map(|d| d.0).collect();
    let gap = rate.tx_time(u64::from(MSS));
    assert_eq!(gap, Dur::from_nanos(500_000));
    assert_eq!(times[10] - times[9], gap);
    assert_eq!(times[11] - times[10], gap);
}
