//! The RTP sender's mechanics with a fixed controller, and whole streams
//! through a scripted network (a fixed delay, chosen packets lost:
//! [`l4slab_core::testing::TestPath`]).

use l4slab_core::testing::{Loss, Offer, TestLink, TestPath};
use l4slab_core::{Dur, Ecn, Rate, Time};
use l4slab_media::ccfb::{Entry, Report};
use l4slab_media::{Feedback, MediaCc};

use super::sender::{Sender, SenderConfig};
use super::*;
use crate::testing::{Script, Sent};

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// A controller with a fixed target, pacing rate and window.
#[derive(Debug)]
struct Fixed {
    target: Rate,
    pacing: Rate,
    window: u64,
    reports: usize,
}

impl MediaCc for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn on_sent(&mut self, _: Time, _: u64, _: u32) {}
    fn on_feedback(&mut self, _: Time, fb: &Feedback<'_>) {
        self.reports += fb.packets.len();
    }
    fn target_rate(&self) -> Rate {
        self.target
    }
    fn pacing_rate(&self) -> Rate {
        self.pacing
    }
    fn window(&self) -> u64 {
        self.window
    }
}

fn sender(target_kbps: u64, pacing_kbps: u64, window: u64) -> Sender {
    sender_paced(target_kbps, pacing_kbps, window, true)
}

fn sender_paced(target_kbps: u64, pacing_kbps: u64, window: u64, pacing: bool) -> Sender {
    Sender::new(
        SenderConfig {
            fps: 10,
            min_bitrate: Rate::from_kbps(10),
            max_bitrate: Rate::from_mbps(100),
            keyframe_ratio: 4,
            queue_discard: Dur::from_millis(100),
            history: Dur::from_secs(1),
            pacing,
        },
        Box::new(Fixed {
            target: Rate::from_kbps(target_kbps),
            pacing: Rate::from_kbps(pacing_kbps),
            window,
            reports: 0,
        }),
    )
}

/// Everything the sender lets out from `now` on, following its pacer.
fn drain(s: &mut Sender, now: Time) -> Vec<sender::Outgoing> {
    let mut v = Vec::new();
    let mut t = now;
    loop {
        match s.poll_send(t) {
            Ok(o) => v.push(o),
            Err(Some(next)) => t = next,
            Err(None) => return v,
        }
    }
}

#[test]
fn a_keyframe_first_then_delta_frames_split_into_marked_packets() {
    // 960 kbit/s at 10 fps: 12,000 B frames, the first a 48,000 B keyframe.
    let mut s = sender(960, 1_000_000, u64::MAX);
    s.on_frame(ms(0));
    let key = drain(&mut s, ms(0));
    assert_eq!(
        key.iter().map(|o| o.header.media.payload).sum::<u32>(),
        48_000
    );
    assert!(key
        .iter()
        .all(|o| o.header.media.keyframe && o.header.media.frame == 0));
    assert_eq!(key.iter().filter(|o| o.header.media.last).count(), 1);
    assert!(key.last().unwrap().header.media.last && key[0].header.media.first);
    // Transport-wide and media sequence numbers count up from 0.
    assert!(key
        .iter()
        .enumerate()
        .all(|(i, o)| o.header.transport_seq == i as u64 && o.header.media.seq == i as u64));
    s.on_frame(ms(100));
    let delta = drain(&mut s, ms(100));
    assert_eq!(
        delta.iter().map(|o| o.header.media.payload).sum::<u32>(),
        12_000
    );
    assert!(delta
        .iter()
        .all(|o| !o.header.media.keyframe && o.header.media.frame == 1));
    assert!(delta
        .iter()
        .all(|o| o.wire == o.header.wire_bytes() && o.wire <= l4slab_media::rtp::MAX_PACKET_BYTES));
}

#[test]
fn the_pacer_spaces_packets_at_the_pacing_rate_and_the_window_holds_them() {
    let mut s = sender(960, 8_000, u64::MAX);
    s.on_frame(ms(0));
    let first = s.poll_send(ms(0)).expect("the first packet leaves at once");
    // 8 Mbit/s: the next may leave wire*8/8e6 s later.
    let gap = Dur::from_nanos(u64::from(first.wire) * 1_000);
    assert_eq!(s.poll_send(ms(0)).err(), Some(Some(ms(0) + gap)));
    assert!(s.poll_send(ms(0) + gap).is_ok());
    // A window of one packet: the next waits for feedback.
    let mut w = sender(960, 1_000_000, 1_500);
    w.on_frame(ms(0));
    assert!(w.poll_send(ms(0)).is_ok());
    assert_eq!(w.poll_send(ms(1)).err(), Some(None));
    let r = Report {
        report_time: ms(30),
        begin: 0,
        entries: vec![Entry {
            arrival: Some(ms(25)),
            ecn: Ecn::NotEct,
        }],
    };
    w.on_report(ms(40), &r);
    assert!(w.poll_send(ms(40)).is_ok());
    // RTT = 40 - 0 - (30 - 25) ms.
    assert_eq!(w.srtt(), Some(Dur::from_millis(35)));
}

#[test]
fn a_stale_queue_is_discarded_and_the_next_frame_is_a_keyframe() {
    // Pacing at 100 kbit/s cannot keep up with 960 kbit/s.
    let mut s = sender(960, 100, u64::MAX);
    s.on_frame(ms(0));
    assert!(s.poll_send(ms(0)).is_ok());
    s.on_frame(ms(100)); // the head waited 100 ms: not more than the limit
    s.on_frame(ms(200)); // now it has: discard, keyframe
    let r = s.report(1.0);
    assert_eq!(r["queue_discards"], 1);
    assert_eq!(r["keyframes"], 2);
    // A NACK for a packet sent before the discard still finds it; one for a
    // discarded (never sent) packet finds nothing.
    s.on_nack(ms(200), 0);
    s.on_nack(ms(200), 3);
    let next = s.poll_send(ms(10_000)).unwrap();
    assert!(next.header.retransmission && next.header.media.seq == 0 && next.header.media.rtx);
    assert!(!s.poll_send(ms(10_200)).unwrap().header.retransmission);
}

#[test]
fn retransmissions_are_limited_to_the_target_rate_per_second() {
    // 96 kbit/s target: 12,000 B of retransmissions per second.
    let mut s = sender(96, 1_000_000, u64::MAX);
    for f in 0..20 {
        s.on_frame(ms(f * 100));
        drain(&mut s, ms(f * 100));
    }
    let sent = s.report(2.0)["packets_sent"].as_u64().unwrap();
    for seq in 0..sent {
        s.on_nack(ms(2_000), seq);
    }
    let rtx: u32 = drain(&mut s, ms(2_000))
        .iter()
        .filter(|o| o.header.retransmission)
        .map(|o| o.wire)
        .sum();
    assert!(
        rtx <= 12_000 && rtx > 12_000 - l4slab_media::rtp::MAX_PACKET_BYTES,
        "{rtx}"
    );
    assert!(
        s.report(2.0)["retransmissions_rate_limited"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// Both ends of `app` through a network of fixed one-way `delay` in which
/// the datagrams `lose` picks are lost; returns how many were.
fn run(app: &mut RtpMedia, until: Time, delay: Dur, lose: Loss<Sent>) -> u64 {
    let mut path = TestPath::new(TestLink::new(delay)).with_loss(lose);
    Script::new().run(app, &mut path, until);
    path.lost()
}

fn game(cc: MediaCcKind) -> RtpMedia {
    let mut cfg = RtpConfig::new(
        30,
        Rate::from_mbps(2),
        Rate::from_kbps(100),
        Rate::from_mbps(2),
        Dur::from_millis(200),
        Some(Dur::from_millis(100)),
    );
    cfg.cc = cc;
    RtpMedia::new(
        "cloud_gaming",
        cfg,
        &[(Role::Server, crate::cloud_gaming::SERIES, RTT)],
    )
}

#[test]
fn a_lost_packet_is_nacked_and_repaired_without_a_stall() {
    for cc in [MediaCcKind::Gcc, MediaCcKind::Scream { l4s: true }] {
        let mut app = game(cc);
        // Lose one media packet: the first sent after the 40th datagram.
        let mut done = false;
        let lose = Loss::when(move |d: &Offer<'_, Sent>| {
            let media = d.payload.record().is_some_and(|dg| dg.tag >> 62 == MEDIA);
            let hit = d.index >= 40 && media && !done;
            done |= hit;
            hit
        });
        let lost = run(&mut app, ms(3_000), Dur::from_millis(20), lose);
        assert_eq!(lost, 1);
        let r = app.report(ms(3_000));
        assert!(
            r["sender"]["retransmissions"].as_u64().unwrap() >= 1,
            "{cc:?}: {r}"
        );
        assert_eq!(r["packets_unrepaired"], 0, "{cc:?}: {r}");
        assert_eq!(r["stalls"], 0, "{cc:?}: {r}");
        assert_eq!(r["frames_dropped"], 0, "{cc:?}: {r}");
        // Every frame captured 60+ ms before the end was shown.
        let shown = r["frames_displayed"].as_u64().unwrap();
        let captured = r["frames_captured"].as_u64().unwrap();
        assert!(shown + 3 >= captured, "{cc:?}: {shown} of {captured}");
        // The RTT from the reports is the path's 40 ms (to the ATO's ~1 ms).
        let rtt = r["sender"]["rtt_ms"]["p50"].as_f64().unwrap();
        assert!((40.0..42.0).contains(&rtt), "{cc:?}: {rtt}");
        assert_eq!(
            app.streams[0].tx.cc().ecn(),
            if cc == MediaCcKind::Gcc {
                Ecn::NotEct
            } else {
                Ecn::Ect1
            }
        );
    }
}

#[test]
fn an_outage_shows_as_a_stall_and_a_bad_second_and_the_stream_recovers() {
    let mut app = game(MediaCcKind::Gcc);
    // Nothing gets through between 1.0 and 1.5 s, either way.
    let lose = Loss::when(|d: &Offer<'_, Sent>| (ms(1_000)..ms(1_500)).contains(&d.at));
    let lost = run(&mut app, ms(4_000), Dur::from_millis(20), lose);
    assert!(lost > 0);
    let r = app.report(ms(4_000));
    // One stall covering the outage (no frame for over 200 ms), and the
    // worst whole second shows fewer than half the 30 frames.
    assert_eq!(r["stalls"], 1, "{r}");
    let stalled = r["stall_time_s"].as_f64().unwrap();
    assert!((0.5..1.0).contains(&stalled), "{r}");
    assert!(r["worst_second_fps"].as_u64().unwrap() < 15, "{r}");
    // After it, frames play again: most of the last two seconds' 60.
    let shown = r["frames_displayed"].as_u64().unwrap();
    assert!(shown > 30 + 50, "{r}");
}

#[test]
fn without_pacing_a_frame_leaves_as_one_burst() {
    // 960 kbit/s at 10 fps: a 48,000 B keyframe, every packet at once.
    let mut s = sender_paced(960, 8_000, u64::MAX, false);
    s.on_frame(ms(0));
    let mut n = 0;
    while s.poll_send(ms(0)).is_ok() {
        n += 1;
    }
    assert_eq!(n, l4slab_media::rtp::split(48_000).0);
    assert_eq!(s.poll_send(ms(0)).err(), Some(None), "nothing left queued");
    // Paced at 8 Mbit/s, only the first leaves at 0.
    let mut paced = sender(960, 8_000, u64::MAX);
    paced.on_frame(ms(0));
    assert!(paced.poll_send(ms(0)).is_ok());
    assert!(paced.poll_send(ms(0)).is_err());
}

/// `game` with the receiver's playout deadline, unpaced (every frame,
/// keyframes too, arrives whole after the path's delay).
fn game_with_deadline(cc: MediaCcKind, deadline: Dur) -> RtpMedia {
    let mut cfg = RtpConfig::new(
        30,
        Rate::from_mbps(2),
        Rate::from_kbps(100),
        Rate::from_mbps(2),
        Dur::from_millis(200),
        Some(Dur::from_millis(100)),
    );
    cfg.cc = cc;
    cfg.playout_deadline = Some(deadline);
    cfg.pacing = false;
    RtpMedia::new(
        "cloud_gaming",
        cfg,
        &[(Role::Server, crate::cloud_gaming::SERIES, RTT)],
    )
}

#[test]
fn a_repair_later_than_the_playout_deadline_is_a_loss_for_the_viewer() {
    // One media packet lost on a 40 ms RTT path: its NACK repair arrives
    // 40 ms after its frame's playout time. A 10 ms deadline gives the frame
    // up (the chain breaks until a keyframe); a 100 ms deadline waits for it.
    let lose_one = || {
        let mut done = false;
        Loss::when(move |d: &Offer<'_, Sent>| {
            let media = d.payload.record().is_some_and(|dg| dg.tag >> 62 == MEDIA);
            let hit = d.index >= 40 && media && !done;
            done |= hit;
            hit
        })
    };
    let mut tight = game_with_deadline(MediaCcKind::Fixed { l4s: false }, Dur::from_millis(10));
    assert_eq!(
        run(&mut tight, ms(3_000), Dur::from_millis(20), lose_one()),
        1
    );
    let r = tight.report(ms(3_000));
    assert_eq!(r["frames_given_up_late"], 1, "{r}");
    // The frame and the delta frames until the requested keyframe (one RTT
    // and a frame interval: 2-3 frames) are dropped; the stream recovers.
    let dropped = r["frames_dropped"].as_u64().unwrap();
    assert!((2..=4).contains(&dropped), "{r}");
    assert_eq!(r["keyframe_requests"], 1, "{r}");
    assert_eq!(r["stalls"], 0, "{r}");
    assert!(r["packets_missed_playout"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["playout_loss_pct"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(r["playout_deadline_ms"], 10.0);

    let mut loose = game_with_deadline(MediaCcKind::Fixed { l4s: false }, Dur::from_millis(100));
    assert_eq!(
        run(&mut loose, ms(3_000), Dur::from_millis(20), lose_one()),
        1
    );
    let r = loose.report(ms(3_000));
    assert_eq!(r["frames_given_up_late"], 0, "{r}");
    assert_eq!(r["frames_dropped"], 0, "{r}");
    assert_eq!(r["playout_loss_pct"], 0.0, "{r}");
    // Without a deadline the keys are absent.
    let mut plain = game(MediaCcKind::Fixed { l4s: false });
    run(&mut plain, ms(500), Dur::from_millis(20), Loss::None);
    assert!(plain.report(ms(500)).get("playout_loss_pct").is_none());
}

#[test]
fn a_fixed_rate_sender_keeps_its_rate_through_loss() {
    let mut app = game(MediaCcKind::Fixed { l4s: false });
    // Every 5th datagram lost, both ways.
    let lose = Loss::EveryNth(5);
    assert!(run(&mut app, ms(3_000), Dur::from_millis(20), lose) > 0);
    let r = app.report(ms(3_000));
    assert_eq!(r["sender"]["target_bps_at_end"], 2_000_000, "{r}");
    assert_eq!(r["sender"]["cc"], "fixed");
    // GCC under the same 20 % loss has come down.
    let mut gcc = game(MediaCcKind::Gcc);
    let lose = Loss::EveryNth(5);
    run(&mut gcc, ms(3_000), Dur::from_millis(20), lose);
    let t = gcc.report(ms(3_000))["sender"]["target_bps_at_end"]
        .as_u64()
        .unwrap();
    assert!(t < 2_000_000, "{t}");
}

#[test]
fn feedback_goes_out_not_ect_unless_it_follows_the_media() {
    use std::cell::RefCell;
    use std::rc::Rc;
    for media_codepoint in [false, true] {
        let mut cfg = RtpConfig::new(
            30,
            Rate::from_mbps(1),
            Rate::from_kbps(100),
            Rate::from_mbps(2),
            Dur::from_millis(200),
            None,
        );
        cfg.cc = MediaCcKind::Scream { l4s: true };
        cfg.feedback_ecn_media = media_codepoint;
        let mut app = RtpMedia::new(
            "cloud_gaming",
            cfg,
            &[(Role::Server, crate::cloud_gaming::SERIES, RTT)],
        );
        // (kind, ECN) of every datagram offered; none is lost.
        let seen = Rc::new(RefCell::new(Vec::new()));
        let log = Rc::clone(&seen);
        let lose = Loss::when(move |d: &Offer<'_, Sent>| {
            if let Some(dg) = d.payload.record() {
                log.borrow_mut().push((dg.tag >> 62, dg.ecn));
            }
            false
        });
        run(&mut app, ms(1_000), Dur::from_millis(10), lose);
        let seen = seen.borrow();
        let feedback: Vec<Ecn> = seen
            .iter()
            .filter(|(k, _)| *k == REPORT)
            .map(|&(_, e)| e)
            .collect();
        assert!(feedback.len() > 10, "{} reports", feedback.len());
        let want = if media_codepoint {
            Ecn::Ect1
        } else {
            Ecn::NotEct
        };
        assert!(feedback.iter().all(|&e| e == want), "{feedback:?}");
        assert!(seen
            .iter()
            .filter(|(k, _)| *k == MEDIA)
            .all(|&(_, e)| e == Ecn::Ect1));
    }
}
