//! RED's mechanics, each against the rule it implements (`red.h`,
//! `sch_red.c`, iproute2's `q_red.c`/`tc_red.c`, Floyd & Jacobson 1993).

use super::*;
use crate::testing::Harness;
use l4slab_core::{Ecn, SimRng};

/// `tc-red(8)`'s example: `limit 400000 min 30000 max 90000 avpkt 1000
/// burst 55`, with `probability`.
fn example(probability: f64) -> RedConfig {
    RedConfig {
        min: Some(30_000),
        max: Some(90_000),
        burst: Some(55),
        probability,
        ..RedConfig::default()
    }
}

/// Thresholds of a few packets (min 3000 B, max 9000 B; tc derives burst 5
/// and Wlog 2) in a queue large enough never to tail-drop.
fn small(ecn: bool, harddrop: bool) -> Red {
    Red::new(RedConfig {
        limit: 1_000_000,
        min: Some(3000),
        max: Some(9000),
        probability: 0.5,
        ecn,
        harddrop,
        ..RedConfig::default()
    })
}

fn ect(id: u64) -> Packet {
    Packet::new(id, 1, 1000, Ecn::Ect0)
}

#[test]
fn tc_derives_thresholds_burst_wlog_and_the_idle_table() {
    // red_parse_opt: max = limit/4, min = max/3, burst = (2 min + max)/(3 avpkt).
    let p = RedConfig::default().parms().unwrap();
    assert_eq!(
        (p.qth_min >> p.wlog, p.qth_max >> p.wlog),
        (33_333, 100_000)
    );
    // burst (66666 + 100000)/3000 = 55; a = 56 - 33.3 = 22.7 <= 32·(1-(31/32)^55) = 26.4.
    assert_eq!(p.wlog, 5);
    // The man page's example: a = 55 + 1 - 30 = 26 <= 26.4 (and > 16·(1-(15/16)^55) = 15.5).
    assert_eq!(eval_ewma(30_000, 55, 1000), Ok(5));
    let e = eval_ewma(30_000, 20, 1000).unwrap_err();
    assert!(e.contains("tc suggests burst 31"), "{e}");
    // Idle table at 10 Mbit/s, avpkt 1000 B: xmit 800 µs, lW = -ln(31/32)/800 per µs,
    // 31/lW = 781 ms -> Scell_log 11 (781130/2^11 < 512); Stab[i] = i·2048·lW = 0.0813·i.
    assert_eq!(p.scell_log, 11);
    assert_eq!(
        (p.stab[0], p.stab[12], p.stab[13], p.stab[254]),
        (0, 0, 1, 20)
    );
    assert_eq!(p.stab[255], 31);
    // max_P = 0.02·2^32; max_p_delta = max_P / (max - min); target band at 40 %..60 %.
    assert_eq!(p.max_p, 85_899_345);
    assert_eq!(p.max_p_delta, 85_899_345 / 66_667);
    assert_eq!(
        (p.target_min, p.target_max),
        (33_333 + 26_666, 33_333 + 39_999)
    );
}

#[test]
fn impossible_configs_name_the_parameter() {
    let bad = |cfg: RedConfig| cfg.parms().unwrap_err().param;
    assert_eq!(
        bad(RedConfig {
            min: Some(9000),
            max: Some(9000),
            ..RedConfig::default()
        }),
        "max"
    );
    // A tiny limit derives burst 0 (tc: "burst 0 is too small").
    assert_eq!(
        bad(RedConfig {
            limit: 6000,
            ..RedConfig::default()
        }),
        "burst"
    );
    // red_check_params: fls(qth_min) + Wlog >= 32.
    assert_eq!(
        bad(RedConfig {
            limit: u64::from(u32::MAX),
            min: Some(1 << 29),
            max: Some(3 << 29),
            burst: Some(1 << 20),
            ..RedConfig::default()
        }),
        "min"
    );
}

#[test]
fn the_average_is_an_ewma_of_the_backlog_at_each_arrival() {
    let mut h = Harness::new(small(false, false));
    let w = h.q.parms().wlog;
    assert_eq!(w, 2);
    let mut want = Vec::new();
    let mut qavg = 0u64;
    for id in 0..6 {
        let backlog = h.q.backlog().bytes;
        h.offer(id, 1000);
        // red_calc_qavg_no_idle_time: qavg = qavg·(1-W) + backlog·W, point at Wlog.
        // (The first arrival ends the idle period the empty queue started in.)
        if id > 0 {
            qavg = qavg - (qavg >> w) + backlog;
        }
        want.push(qavg);
        assert_eq!(h.q.vars().qavg, qavg, "arrival {id}");
    }
    // In bytes (÷ 2^Wlog): 0, 250, 687.5, 1265.75, 1949.5, 2712.25 (W = 1/4).
    assert_eq!(want, [0, 1000, 2750, 5063, 7798, 10849]);
    assert_eq!(h.total_drops(), 0, "the average stayed below min = 3000 B");
}

#[test]
fn between_the_thresholds_marks_follow_the_count_correction() {
    // p_b = max_P·(avg - min)/(max - min) = 0.1·1/2 = 0.05 halfway up.
    let p = example(0.1).parms().unwrap();
    let mut v = RedVars::new(Time::ZERO);
    v.idle_since = None;
    v.qavg = ((30_000 + 90_000) / 2) << p.wlog;
    let mut rng = SimRng::derive(7, "red-count");
    let (mut marks, mut gap, mut max_gap) = (0u64, 0u64, 0u64);
    let n = 200_000;
    for _ in 0..n {
        gap += 1;
        if v.action(&p, || (rng.next_u64() >> 32) as u32) == RedAction::ProbMark {
            if marks > 0 {
                max_gap = max_gap.max(gap);
            }
            marks += 1;
            gap = 0;
        }
    }
    // Floyd & Jacobson §7: with the count, marks are spaced uniformly in
    // 1..=1/p_b (20; Linux's integer max_p_delta can add one), so the
    // marked fraction is 2·p_b/(1 + p_b) = 0.0952, not p_b = 0.05.
    assert!(max_gap <= 21, "gap {max_gap}");
    let frac = marks as f64 / n as f64;
    assert!((frac - 0.1 / 1.05).abs() < 0.003, "{frac}");
}

#[test]
fn outside_the_thresholds_the_verdict_is_fixed() {
    let p = example(0.02).parms().unwrap();
    let mut v = RedVars::new(Time::ZERO);
    let never = || -> u32 { panic!("no random number is drawn") };
    v.qavg = p.qth_min - 1;
    assert_eq!(v.action(&p, never), RedAction::DontMark);
    v.qavg = p.qth_max;
    assert_eq!(v.action(&p, never), RedAction::HardMark);
    assert_eq!(v.qcount, -1);
}

/// Offer ECT(0) packets without dequeuing until the average is at or above
/// `max`; returns the next packet id.
fn fill_above_max(h: &mut Harness<Red>) -> u64 {
    let mut id = 0;
    while h.q.vars().qavg < h.q.parms().qth_max {
        h.offer_pkt(ect(id));
        id += 1;
    }
    id
}

#[test]
fn above_max_ecn_marks_harddrop_drops_and_not_ect_is_dropped() {
    // ecn: forced mark for ECT, forced drop for Not-ECT (INET_ECN_set_ce fails).
    let mut h = Harness::new(small(true, false));
    let id = fill_above_max(&mut h);
    let before = *h.q.red_stats();
    h.offer_pkt(ect(id));
    h.offer(id + 1, 1000);
    let s = *h.q.red_stats();
    assert_eq!(s.forced_mark, before.forced_mark + 1);
    assert_eq!(s.forced_drop, before.forced_drop + 1);
    assert_eq!(h.dropped_ids().last(), Some(&(id + 1)));
    assert_eq!(s.prob_drop, 0, "ECT packets are marked, not dropped");

    // harddrop: an ECT packet above max is dropped anyway.
    let mut h = Harness::new(small(true, true));
    let id = fill_above_max(&mut h);
    let before = *h.q.red_stats();
    h.offer_pkt(ect(id));
    let s = *h.q.red_stats();
    assert_eq!(
        (s.forced_drop, s.forced_mark),
        (before.forced_drop + 1, before.forced_mark)
    );
    assert_eq!(h.drops(DropReason::AqmDrop), s.forced_drop + s.prob_drop);

    // No ecn: every early decision is a drop.
    let mut h = Harness::new(small(false, false));
    let id = fill_above_max(&mut h);
    h.offer_pkt(ect(id));
    assert_eq!(h.total_marks(), 0);
    assert!(h.q.red_stats().forced_drop >= 1);
    h.check_accounting();
}

/// Hold the backlog at 6 packets (between min 3000 B and max 9000 B) for
/// 3000 arrivals of `pkt`.
fn hold_between(h: &mut Harness<Red>, pkt: fn(u64) -> Packet) {
    for id in 0..6 {
        h.offer_pkt(pkt(id));
    }
    for id in 6..3006 {
        while h.q.backlog().bytes > 5000 {
            h.dequeue();
        }
        h.offer_pkt(pkt(id));
    }
}

#[test]
fn between_the_thresholds_ecn_marks_and_not_ect_is_dropped() {
    let mut h = Harness::new(small(true, false));
    hold_between(&mut h, ect);
    let s = *h.q.red_stats();
    assert!(s.prob_mark > 100, "{s:?}");
    assert_eq!((s.prob_drop, s.forced_drop, s.forced_mark), (0, 0, 0));
    assert_eq!(h.marks(MarkReason::Aqm), s.prob_mark);

    let mut h = Harness::new(small(true, false));
    hold_between(&mut h, |id| Packet::new(id, 1, 1000, Ecn::NotEct));
    let s = *h.q.red_stats();
    assert!(s.prob_drop > 100, "{s:?}");
    assert_eq!((s.prob_mark, s.forced_drop), (0, 0));
    h.check_accounting();
}

#[test]
fn idle_time_decays_the_average() {
    let p = RedConfig::default().parms().unwrap();
    let mut v = RedVars::new(Time::ZERO);
    v.qavg = 1 << 32;
    let at = |us| Time::ZERO + Dur::from_micros(us);
    // Stab[700 >> 11] = 0: the linear part, qavg - (qavg·us_idle >> Scell_log).
    assert_eq!(v.qavg_from_idle_time(&p, at(700)), (1 << 32) - (700 << 21));
    // A decrement past half the average: halved.
    assert_eq!(v.qavg_from_idle_time(&p, at(1500)), 1 << 31);
    // The table: Stab[13] = 1, Stab[254] = 20.
    assert_eq!(v.qavg_from_idle_time(&p, at(13 << 11)), 1 << 31);
    assert_eq!(v.qavg_from_idle_time(&p, at(254 << 11)), 1 << 12);
    // Beyond Scell_max = 255 << 11 µs: the last entry, 31.
    assert_eq!(v.qavg_from_idle_time(&p, at(10_000_000)), 2);

    // In the qdisc: the queue drains, idles a second, and the next arrival's
    // average is the decayed one (no backlog term), then the EWMA resumes.
    let mut h = Harness::new(small(false, false));
    for id in 0..4 {
        h.offer(id, 1000);
    }
    assert!(h.q.vars().qavg > 0);
    h.drain_ids();
    h.advance(Dur::from_secs(1));
    h.offer(10, 1000);
    assert_eq!(h.q.vars().qavg, 0);
    h.offer(11, 1000);
    assert_eq!(h.q.vars().qavg, 1000);
}

#[test]
fn adaptive_max_p_moves_toward_the_target_within_its_bounds() {
    let mut p = example(0.02).parms().unwrap();
    let mut v = RedVars::new(Time::ZERO);
    v.idle_since = None;
    // Above min + 0.6·(max - min): max_P += min(1 %, max_P/4) while <= 50 %.
    v.qavg = u64::from(p.target_max + 1) << p.wlog;
    let mut last = p.max_p;
    for _ in 0..100 {
        v.adapt(&mut p, Time::ZERO);
        assert!(p.max_p >= last);
        last = p.max_p;
    }
    assert!(
        p.max_p > MAX_P_MAX && p.max_p <= MAX_P_MAX + MAX_P_MIN,
        "{}",
        p.max_p
    );
    assert_eq!(p.max_p_delta, (p.max_p + 30_000) / 60_000);
    // Below min + 0.4·(max - min): max_P ·= 0.9 while >= 1 %.
    v.qavg = u64::from(p.target_min - 1) << p.wlog;
    for _ in 0..100 {
        v.adapt(&mut p, Time::ZERO);
        assert!(p.max_p <= last);
        last = p.max_p;
    }
    assert!(
        p.max_p < MAX_P_MIN && p.max_p >= MAX_P_MIN / 10 * 9,
        "{}",
        p.max_p
    );

    // The qdisc runs it every 500 ms: an idle queue (average 0) lowers max_P
    // 0.02 -> 0.018 -> 0.0162 -> 0.01458 by 1.6 s (`(max_P/10)*9` in Q0.32).
    let mut h = Harness::new(Red::new(RedConfig {
        adaptive: true,
        ..example(0.02)
    }));
    assert_eq!(h.q.next_timer(), Some(Time::ZERO + ADAPT_INTERVAL));
    h.advance(Dur::from_millis(1600));
    assert_eq!(h.q.parms().max_p, 62_620_614);
    assert_eq!(h.q.next_timer(), Some(Time::ZERO + Dur::from_millis(2000)));
}

#[test]
fn the_byte_limit_tail_drops_like_the_bfifo_child() {
    let mut h = Harness::new(Red::new(RedConfig {
        limit: 3000,
        min: Some(10_000),
        max: Some(30_000),
        ..RedConfig::default()
    }));
    for id in 0..4 {
        h.offer(id, 1000);
    }
    assert_eq!(h.dropped_ids(), [3]);
    assert_eq!(h.drops(DropReason::Overlimit), 1);
    assert_eq!(h.q.red_stats().pdrop, 1);
    assert_eq!(h.drain_ids(), [0, 1, 2]);
    h.check_accounting();
}
