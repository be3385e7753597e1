//! The playout buffer's rules, one test each (see `src/playout/mod.rs`).

use l4slab_core::{Dur, Time};
use l4slab_media::playout::{
    FrameDrop, MediaPacket, Playout, PlayoutConfig, PlayoutEvent, PlayoutSeries, MAX_FRAMES,
};

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// Packet `seq` of frame `frame`, captured at `capture` ms.
fn pkt(seq: u64, frame: u64, first: bool, last: bool, key: bool, capture: u64) -> MediaPacket {
    MediaPacket {
        seq,
        frame,
        first,
        last,
        keyframe: key,
        capture: ms(capture),
        payload: 1000,
        rtx: false,
    }
}

fn rtx(p: MediaPacket) -> MediaPacket {
    MediaPacket { rtx: true, ..p }
}

/// A one-packet frame.
fn single(seq: u64, key: bool, capture: u64) -> MediaPacket {
    pkt(seq, seq, true, true, key, capture)
}

/// The receiver as a driver runs it: packets at their arrival times
/// (`arrivals` sorted by time), `poll` after each and at every
/// `next_wake`, until `end`. Returns every event with the poll's time.
fn run(p: &mut Playout, arrivals: &[(u64, MediaPacket)], end: u64) -> Vec<(u64, PlayoutEvent)> {
    let mut events = Vec::new();
    let mut i = 0;
    let mut cursor = Time::ZERO;
    for step in 0.. {
        assert!(step < 1_000_000, "the driver loops");
        let next_pkt = arrivals.get(i).map(|a| ms(a.0));
        let wake = p.next_wake().map(|w| w.max(cursor));
        let now = match (wake, next_pkt) {
            (Some(w), Some(a)) if w < a => w,
            (_, Some(a)) => a,
            (Some(w), None) => w,
            (None, None) => break,
        };
        if now > ms(end) {
            break;
        }
        if next_pkt == Some(now) {
            p.on_packet(now, arrivals[i].1);
            i += 1;
        } else {
            let before = p.next_wake();
            p.poll(now, &mut |e| events.push((now.as_nanos() / 1_000_000, e)));
            assert!(
                p.next_wake() != before || p.next_wake().is_none_or(|w| w > now),
                "no progress at {now}"
            );
            cursor = now;
            continue;
        }
        p.poll(now, &mut |e| events.push((now.as_nanos() / 1_000_000, e)));
        cursor = now;
    }
    events
}

fn renders(ev: &[(u64, PlayoutEvent)]) -> Vec<(u64, u64)> {
    ev.iter()
        .filter_map(|(t, e)| match e {
            PlayoutEvent::Rendered { frame, at, .. } => {
                assert_eq!(at.as_nanos() / 1_000_000, *t);
                Some((*frame, *t))
            }
            _ => None,
        })
        .collect()
}

fn nacks(ev: &[(u64, PlayoutEvent)]) -> Vec<(u64, u64)> {
    ev.iter()
        .filter_map(|(t, e)| match e {
            PlayoutEvent::Nack { seq } => Some((*seq, *t)),
            _ => None,
        })
        .collect()
}

fn keyframe_requests(ev: &[(u64, PlayoutEvent)]) -> Vec<u64> {
    ev.iter()
        .filter_map(|(t, e)| matches!(e, PlayoutEvent::KeyframeRequest).then_some(*t))
        .collect()
}

/// Two-packet frames every 33 ms; frame `f` has seqs 2f, 2f+1.
fn pair(f: u64, key: bool) -> [MediaPacket; 2] {
    [
        pkt(2 * f, f, true, false, key, 33 * f),
        pkt(2 * f + 1, f, false, true, key, 33 * f),
    ]
}

#[test]
fn in_order_complete_frames_render_at_capture_plus_delay() {
    let mut p = Playout::new(PlayoutConfig {
        min_delay: Dur::from_millis(10),
        ..PlayoutConfig::default()
    });
    p.start(ms(0));
    let [a0, b0] = pair(0, true);
    let [a1, b1] = pair(1, false);
    let [a2, b2] = pair(2, false);
    let [a3, b3] = pair(3, false);
    let arrivals = [
        (15, a0),
        (20, b0), // transit 20 -> delay 20 + 10: due 30
        (50, a1),
        (73, b1), // transit 40: due 33 + 30 = 63 < 73 -> renders on completion
        (75, a2),
        (81, b2), // transit 15, the new smallest: due 66 + 25 = 91
        (110, a3),
        (114, b3), // due 99 + 25 = 124
    ];
    let ev = run(&mut p, &arrivals, 500);
    assert_eq!(renders(&ev), [(0, 30), (1, 73), (2, 91), (3, 124)]);
    assert!(nacks(&ev).is_empty() && keyframe_requests(&ev).is_empty());
    let r = p.report(ms(500));
    assert_eq!(r["frames_displayed"], 4);
    assert_eq!(r["frame_latency_ms"]["min"], 25.0);
    assert_eq!(r["frame_latency_ms"]["max"], 40.0);
    assert_eq!(r["playout_delay_ms"], 10.0);
    assert_eq!(r["packets_received"], 8);
    let i = p.take_interval();
    assert_eq!(i.frames_displayed, 4);
    assert_eq!(i.latency_mean_ms, Some(30.0)); // (30 + 40 + 25 + 25) / 4
    assert_eq!(i.received_bytes, 8000);
    let mut series = Vec::new();
    p.sample(Dur::from_secs(1), &PlayoutSeries::DEFAULT, &mut |k, v| {
        series.push((k, v))
    });
    assert!(series.contains(&("frame_rate_fps", 0.0)));
}

#[test]
fn a_frame_completes_only_when_every_packet_arrived_in_any_order() {
    let mut p = Playout::new(PlayoutConfig::default());
    p.start(ms(0));
    // Frame 0: seqs 0..=2, the last first (reordered at the session start).
    let f0 = |seq: u64| pkt(seq, 0, seq == 0, seq == 2, true, 0);
    // Frame 1: seqs 3..=6.
    let f1 = |seq: u64| pkt(seq, 1, seq == 3, seq == 6, false, 33);
    let arrivals = [
        (10, f0(2)),
        (11, f0(0)), // 1 is found missing below the first packet: NACK it
        (12, f0(1)), // complete
        (40, f1(6)), // 3, 4, 5 missing
        (41, f1(4)),
        (42, f1(3)), // first and last in, 5 still missing: not complete
        (43, f1(4)), // duplicate
        (60, f1(5)), // complete
    ];
    let ev = run(&mut p, &arrivals, 59);
    assert_eq!(renders(&ev), [(0, 12)]);
    assert_eq!(nacks(&ev), [(1, 11), (3, 40), (4, 40), (5, 40)]);
    let ev = run(&mut p, &arrivals[7..], 200);
    assert_eq!(renders(&ev), [(1, 60)]);
    let r = p.report(ms(200));
    assert_eq!(r["packets_duplicate"], 1);
    assert_eq!(r["packets_received"], 8);
    assert_eq!(r["frames_dropped"], 0);
    assert_eq!(p.nack_list_len(), 0);
}

#[test]
fn a_lost_packet_is_nacked_each_rtt_and_its_retransmission_renders_the_frame_late() {
    let mut p = Playout::new(PlayoutConfig::default());
    p.set_rtt(Dur::from_millis(50));
    p.start(ms(0));
    let mut arrivals = Vec::new();
    for f in 0..4 {
        for q in pair(f, f == 0) {
            if q.seq != 3 {
                arrivals.push((33 * f + 20, q));
            }
        }
    }
    // Seq 3 (frame 1's last) is lost; the gap shows at 86 (seq 4). The
    // first retransmission is lost too; the second arrives at 170.
    arrivals.push((170, rtx(pair(1, false)[1])));
    let ev = run(&mut p, &arrivals, 500);
    assert_eq!(nacks(&ev), [(3, 86), (3, 136)]);
    // Frames 1..=3 waited for the repair and render in order at once.
    assert_eq!(renders(&ev), [(0, 20), (1, 170), (2, 170), (3, 170)]);
    let r = p.report(ms(500));
    assert_eq!(r["nacks_sent"], 2);
    assert_eq!(r["packets_retransmitted"], 1);
    assert_eq!(r["frame_latency_ms"]["max"], 137.0); // 170 - 33
    assert_eq!(r["keyframe_requests"], 0);
    assert_eq!(r["frames_dropped"], 0);
}

#[test]
fn nacks_stop_after_the_retry_limit_then_the_chain_breaks_until_a_keyframe() {
    let mut p = Playout::new(PlayoutConfig::default());
    p.set_rtt(Dur::from_millis(50));
    p.start(ms(0));
    let mut arrivals = Vec::new();
    for f in 0..3 {
        for q in pair(f, f == 0) {
            if q.seq != 3 {
                arrivals.push((33 * f + 20, q));
            }
        }
    }
    for q in pair(3, true) {
        arrivals.push((700, q));
    }
    let ev = run(&mut p, &arrivals, 1000);
    let sent: Vec<u64> = nacks(&ev).iter().map(|n| n.1).collect();
    // kMaxNackRetries = 10, one RTT apart.
    assert_eq!(sent, (0..10).map(|k| 86 + 50 * k).collect::<Vec<_>>());
    // One RTT after the last NACK the packet is given up: frame 1 can never
    // complete, frame 2 (complete) cannot be decoded, a keyframe is asked
    // for, and not again before max(RTT, 200 ms).
    assert_eq!(keyframe_requests(&ev), [586]);
    assert_eq!(renders(&ev), [(0, 20), (3, 700)]);
    assert_eq!(p.dropped_for(FrameDrop::Incomplete), 1);
    assert_eq!(p.dropped_for(FrameDrop::Undecodable), 1);
    let r = p.report(ms(1000));
    assert_eq!(r["packets_unrepaired"], 1);
    assert_eq!(r["chain_breaks"], 1);
}

#[test]
fn without_nack_a_loss_breaks_the_chain_until_the_requested_keyframe() {
    let mut p = Playout::new(PlayoutConfig {
        nack: false,
        ..PlayoutConfig::default()
    });
    p.start(ms(0));
    let mut arrivals = Vec::new();
    for f in 0..12 {
        for q in pair(f, f == 0 || f == 10) {
            // Seq 4, frame 2's first packet, is lost.
            if q.seq != 4 {
                arrivals.push((33 * f + 20, q));
            }
        }
    }
    let ev = run(&mut p, &arrivals, 1000);
    assert!(nacks(&ev).is_empty());
    // Seq 5 at 86 shows the gap; after reorder_wait (20 ms) frame 2 is lost,
    // the chain is broken: request at once, again after 200 ms (the default
    // RTT is 100 ms), and not after the keyframe (frame 10) decoded.
    assert_eq!(keyframe_requests(&ev), [106, 306]);
    assert_eq!(
        renders(&ev),
        [(0, 20), (1, 53), (10, 350), (11, 383)],
        "deltas 3..=9 are undecodable; the keyframe restarts the chain"
    );
    let r = p.report(ms(1000));
    assert_eq!(r["frames_dropped_incomplete"], 1);
    assert_eq!(r["frames_dropped_undecodable"], 7);
    assert_eq!(r["frames_dropped"], 8);
    assert_eq!(r["chain_breaks"], 1);
    assert_eq!(r["keyframe_requests"], 2);
    assert_eq!(r["nacks_sent"], 0);
}

#[test]
fn a_due_keyframe_supersedes_frames_waiting_for_a_repair() {
    let mut p = Playout::new(PlayoutConfig::default());
    p.set_rtt(Dur::from_millis(200));
    p.start(ms(0));
    let mut arrivals = Vec::new();
    for f in 0..4 {
        for q in pair(f, f == 0 || f == 3) {
            if q.seq != 3 {
                arrivals.push((33 * f + 20, q));
            }
        }
    }
    arrivals.push((300, rtx(pair(1, false)[1])));
    let ev = run(&mut p, &arrivals, 600);
    assert_eq!(renders(&ev), [(0, 20), (3, 119)]);
    // Frame 1's repair is abandoned with it: no re-NACK at 286.
    assert_eq!(nacks(&ev), [(3, 86)]);
    assert!(keyframe_requests(&ev).is_empty());
    assert_eq!(p.dropped_for(FrameDrop::Incomplete), 1);
    assert_eq!(p.dropped_for(FrameDrop::Undecodable), 1);
    assert_eq!(p.report(ms(600))["packets_late"], 1);
}

/// Renders at exactly `times` (ms): one-packet frames arriving then, all
/// with the same 10 ms transit.
fn render_at(times: &[u64]) -> Playout {
    let mut p = Playout::new(PlayoutConfig::default());
    p.start(ms(0));
    let arrivals: Vec<_> = times
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, single(i as u64, i == 0, t - 10)))
        .collect();
    let ev = run(&mut p, &arrivals, times[times.len() - 1]);
    let got: Vec<u64> = renders(&ev).iter().map(|r| r.1).collect();
    assert_eq!(got, times);
    p
}

#[test]
fn freezes_follow_webrtcs_moving_average_rule() {
    let base = [100, 133, 166, 199, 232];
    // Intervals 33 x4, then X: the average includes X (added first) and is
    // rounded down; a freeze needs X >= max(3 avg, avg + 150).
    // X = 219: avg = 351/5 = 70, threshold 220: no freeze (with the average
    // taken before adding X, 33, the threshold would be 183).
    let p = render_at(&[&base[..], &[232 + 219]].concat());
    assert_eq!(p.report(ms(500))["freezes"], 0);
    // X = 220: avg 70, 220 >= 220: a freeze of the whole interval.
    let p = render_at(&[&base[..], &[232 + 220]].concat());
    let r = p.report(ms(500));
    assert_eq!(r["freezes"], 1);
    assert_eq!(r["freeze_time_s"], 0.22);
    // Fewer than 5 intervals: even 1 s is not a freeze.
    let p = render_at(&[100, 133, 166, 199, 1199]);
    assert_eq!(p.report(ms(1200))["freezes"], 0);
    // The average covers the last 30 intervals: 31 x 100 ms, 40 x 33 ms,
    // then 200 ms. The window holds 29 x 33 and the 200: avg =
    // (957 + 200) / 30 = 38, threshold 188: a freeze. Over all 72
    // intervals the average would be 64 and the threshold 214: none.
    let mut t = vec![100];
    t.extend((1..=31).map(|k| 100 + 100 * k));
    let last = *t.last().unwrap();
    t.extend((1..=40).map(|k| last + 33 * k));
    let last = *t.last().unwrap();
    t.push(last + 200);
    let p = render_at(&t);
    let r = p.report(ms(last + 200));
    assert_eq!(r["freezes"], 1);
    assert_eq!(r["freeze_time_s"], 0.2);
}

#[test]
fn worst_second_fps_reads_zero_for_a_one_second_outage() {
    // 20 fps over [0, 1 s) and [2 s, 3 s), nothing in between.
    let mut times: Vec<u64> = (0..20).map(|k| 10 + 50 * k).collect();
    times.extend((0..20).map(|k| 2010 + 50 * k));
    let p = render_at(&times);
    let r = p.report(ms(3000));
    assert_eq!(r["worst_second_fps"], 0);
    assert_eq!(r["stalls"], 1); // 960 -> 2010
                                // The same rate without the outage: 20; the partial last bin
                                // [3 s, 3.5 s), empty, does not count.
    let times: Vec<u64> = (0..60).map(|k| 10 + 50 * k).collect();
    let p = render_at(&times);
    assert_eq!(p.report(ms(3500))["worst_second_fps"], 20);
    // Whole empty seconds after the last render count.
    let times: Vec<u64> = (0..20).map(|k| 10 + 50 * k).collect();
    let p = render_at(&times);
    assert_eq!(p.report(ms(3000))["worst_second_fps"], 0);
    assert_eq!(p.report(ms(1999))["worst_second_fps"], 20);
    // Shorter than a second: no whole bin.
    assert!(p.report(ms(999))["worst_second_fps"].is_null());
}

#[test]
fn stalls_and_late_frames_count_as_frame_stream_counts_them() {
    // FrameStream's own test: start 0, displays at 100, 150, 600, end 1000.
    // Gaps 100, 50, 450 (stall), tail 400 (stall).
    let p = render_at(&[100, 150, 600]);
    let r = p.report(ms(1000));
    assert_eq!(r["stalls"], 2);
    assert_eq!(r["stall_time_s"], 0.85);
    assert_eq!(r["stall_pct"], 85.0);
    assert_eq!(r["frame_rate_fps"], 3.0);
    assert_eq!(r["stall_threshold_ms"], 200.0);
    assert!(r.get("frames_late").is_none());
    // A gap of exactly the threshold is not a stall.
    let p = render_at(&[100, 300]);
    assert_eq!(p.report(ms(500))["stalls"], 0);
    assert_eq!(p.report(ms(501))["stalls"], 1);
    // Late: latency above the threshold (50 ms is on time, 51 ms late).
    let mut p = Playout::new(PlayoutConfig {
        late_threshold: Some(Dur::from_millis(50)),
        ..PlayoutConfig::default()
    });
    p.start(ms(0));
    let arrivals = [
        (50, single(0, true, 0)),
        (71, single(1, false, 20)),
        (50 + 40, single(2, false, 80)),
    ];
    let ev = run(&mut p, &arrivals, 100);
    assert_eq!(renders(&ev), [(0, 50), (1, 71), (2, 90)]);
    let r = p.report(ms(100));
    assert_eq!(r["frames_late"], 1);
    assert_eq!(r["late_pct"], 33.333333);
    assert_eq!(r["late_threshold_ms"], 50.0);
}

#[test]
fn the_jitter_allowance_adds_the_95th_percentile_transit_excess() {
    let arrivals = [
        (10, single(0, true, 0)),   // transit 10
        (63, single(1, false, 33)), // transit 30
        (76, single(2, false, 66)), // transit 10
    ];
    let mut plain = Playout::new(PlayoutConfig::default());
    let ev = run(&mut plain, &arrivals, 200);
    assert_eq!(renders(&ev), [(0, 10), (1, 63), (2, 76)]);
    let mut jit = Playout::new(PlayoutConfig {
        jitter_allowance: true,
        ..PlayoutConfig::default()
    });
    let ev = run(&mut jit, &arrivals, 200);
    // p95 (nearest rank) of {10, 30, 10} is 30: 20 ms above the smallest.
    assert_eq!(renders(&ev), [(0, 10), (1, 63), (2, 96)]);
    assert_eq!(jit.report(ms(200))["playout_delay_ms"], 20.0);
}

#[test]
fn state_stays_bounded_under_a_long_run_of_losses() {
    // 3-packet frames at 30 fps, every 7th packet lost, no retransmission
    // ever comes, keyframes every 100 frames.
    let mut p = Playout::new(PlayoutConfig::default());
    p.start(ms(0));
    let (mut max_frames, mut max_missing) = (0, 0);
    let frames = 20_000u64;
    for f in 0..frames {
        let now = ms(33 * f + 20);
        let poll_due = |p: &mut Playout| {
            while let Some(w) = p.next_wake().filter(|&w| w < now) {
                p.poll(w, &mut |_| {});
            }
        };
        poll_due(&mut p);
        for k in 0..3 {
            let seq = 3 * f + k;
            if seq % 7 != 3 {
                p.on_packet(now, pkt(seq, f, k == 0, k == 2, f % 100 == 0, 33 * f));
                p.poll(now, &mut |_| {});
            }
        }
        max_frames = max_frames.max(p.buffered_frames());
        max_missing = max_missing.max(p.nack_list_len());
    }
    // At most ~10 RTTs of frames wait for repairs (1 s at 30 fps).
    assert!(max_frames <= 40, "{max_frames} frames buffered");
    assert!(max_missing <= 20, "{max_missing} packets awaited");
    let r = p.report(ms(33 * frames + 20));
    let accounted = r["frames_displayed"].as_u64().unwrap()
        + r["frames_dropped"].as_u64().unwrap()
        + r["frames_buffered_at_end"].as_u64().unwrap();
    assert_eq!(accounted, frames);
    assert_eq!(r["frames_expected"], frames);
    assert!(r["frames_displayed"].as_u64().unwrap() > 0);

    // Complete frames (keyframes, so each stays decodable) held by a long
    // delay fill the buffer only up to MAX_FRAMES.
    let mut p = Playout::new(PlayoutConfig {
        min_delay: Dur::from_secs(1_000),
        ..PlayoutConfig::default()
    });
    for f in 0..2_000 {
        p.on_packet(ms(33 * f + 20), single(f, true, 33 * f));
        p.poll(ms(33 * f + 20), &mut |_| {});
        assert!(p.buffered_frames() <= MAX_FRAMES);
    }
    assert_eq!(
        p.dropped_for(FrameDrop::Overflow),
        2_000 - MAX_FRAMES as u64
    );

    // A wild sequence jump does not fill the NACK list: it clears it
    // (kMaxNackPackets).
    let mut p = Playout::new(PlayoutConfig::default());
    p.on_packet(ms(0), single(0, true, 0));
    p.on_packet(ms(0), single(2, false, 66));
    assert_eq!(p.nack_list_len(), 1);
    p.on_packet(ms(1), pkt(2_000, 3, true, true, false, 99));
    p.poll(ms(1), &mut |_| {});
    assert_eq!(p.nack_list_len(), 0);
    assert_eq!(p.report(ms(1))["nack_list_overflows"], 1);
}

#[test]
fn a_lost_first_packet_is_waited_for_briefly_then_a_keyframe_is_requested() {
    // Seq 0 (frame 0's first) never comes; nothing below the first packet
    // received can be NACKed, so frame 0 waits reorder_wait (20 ms) from the
    // first arrival and is then given up.
    let mut p = Playout::new(PlayoutConfig::default());
    p.start(ms(0));
    let arrivals = [
        (20, pkt(1, 0, false, true, true, 0)),
        (53, pkt(2, 1, true, true, false, 33)),
    ];
    let ev = run(&mut p, &arrivals, 100);
    assert!(nacks(&ev).is_empty());
    assert!(renders(&ev).is_empty());
    assert_eq!(keyframe_requests(&ev), [40]);
    assert_eq!(p.dropped_for(FrameDrop::Incomplete), 1);
    assert_eq!(p.dropped_for(FrameDrop::Undecodable), 1);
}
