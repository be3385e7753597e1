//! BBR v1 (Linux `tcp_bbr.c`) mechanics, as timelines on the scripted
//! driver and on its simulated bottleneck ([`Path`]).

use l4slab_cc::bbr::BBR_UNIT;
use l4slab_cc::testing::{Driver, Path};
use l4slab_cc::{Bbr, BbrConfig, CongestionControl};
use l4slab_core::{Dur, Rate, Time};

const MSS: u64 = 1448;

fn bbr() -> Bbr {
    Bbr::new(BbrConfig::default())
}

/// 20 Mbit/s, 50 ms base RTT, unlimited buffer.
fn path() -> Path {
    Path::new(Rate::from_mbps(20), Dur::from_millis(50))
}

/// Run `d` over `path` in 1 ms steps until `done(&cc)` or `limit` passes.
fn run_until(d: &mut Driver<Bbr>, path: &mut Path, limit: Dur, done: impl Fn(&Bbr) -> bool) {
    let end = d.now + limit;
    while !done(&d.cc) {
        assert!(d.now < end, "condition not reached within {limit}");
        d.run_path(path, Dur::from_millis(1));
    }
}

#[test]
fn startup_drain_probe_bw_with_linux_gains() {
    let mut d = Driver::new(bbr());
    let mut p = path();
    let mut seen: Vec<(&'static str, u32, u32)> = Vec::new();
    let mut probe_bw_rates_ok = true;
    d.run_path_observe(&mut p, Dur::from_secs(3), |_, cc| {
        let key = (cc.mode_name(), cc.pacing_gain(), cc.cwnd_gain());
        if seen.last() != Some(&key) {
            seen.push(key);
        }
        if cc.mode_name() == "ProbeBW" {
            // Pipe full: pacing_rate = pacing_gain * BtlBw * 99 %, exactly.
            let bw = u128::from(cc.max_bw().as_bps());
            let want = bw * u128::from(cc.pacing_gain()) / 256 * 99 / 100;
            probe_bw_rates_ok &= u128::from(cc.pacing_rate().unwrap().as_bps()) == want;
        }
    });
    assert_eq!(
        d.state_changes(),
        [("Startup", "Drain"), ("Drain", "ProbeBW")],
        "no ProbeRTT within 3 s"
    );
    // Linux gains in 1/256: high_gain 739 (2/ln 2), drain 88 (ln 2/2), cwnd 2.
    assert_eq!(seen[0], ("Startup", 739, 739));
    assert_eq!(seen[1], ("Drain", 88, 739));
    assert!(seen[1..].iter().all(|&(m, _, _)| m != "Startup"));
    let probe_bw: Vec<u32> = seen
        .iter()
        .filter(|s| s.0 == "ProbeBW")
        .map(|&(_, pg, cg)| {
            assert_eq!(cg, 2 * BBR_UNIT);
            pg
        })
        .collect();
    assert!(
        probe_bw.contains(&320) && probe_bw.contains(&192),
        "{probe_bw:?}"
    );
    assert!(probe_bw.iter().all(|g| [320, 192, 256].contains(g)));
    assert!(probe_bw_rates_ok, "ProbeBW pacing rate != gain * bw * 0.99");
    // The model converged on the path: BtlBw = 20 Mbit/s, RTprop = 50 ms + one
    // serialization (0.58 ms).
    assert_eq!(d.cc.max_bw(), Rate::from_mbps(20));
    let rtprop = d.cc.min_rtt().unwrap();
    assert_eq!(
        rtprop,
        Dur::from_millis(50) + Rate::from_mbps(20).tx_time(MSS)
    );
}

#[test]
fn full_pipe_after_three_rounds_without_25_percent_growth() {
    // Scripted rounds: 10 -> 20 -> 40 -> 80 ... segments per 50 ms, the
    // delivery rate capped at 60 segments per RTT from round 4 on.
    let cap = Rate::from_bytes_per(60 * MSS, Dur::from_millis(50)).unwrap();
    let mut d = Driver::new(bbr());
    d.delivery_rate_cap(Some(cap));
    let mut rows = Vec::new();
    while d.cc.mode_name() == "Startup" {
        d.send_and_ack_rounds(1);
        rows.push((d.cc.stats().rounds, d.cc.max_bw(), d.cc.mode_name()));
        assert!(rows.len() < 20, "Startup never ended: {rows:?}");
    }
    let plateau = rows
        .iter()
        .find(|r| r.1 == cap)
        .expect("bw reached the cap")
        .0;
    // Round 4 grew 50 % (40 -> 60 segments): a new baseline. Rounds 5, 6, 7
    // do not grow: full pipe at the third.
    assert_eq!(plateau, 4, "{rows:?}");
    assert_eq!(d.cc.stats().full_bw_round, Some(plateau + 3), "{rows:?}");
    assert!(rows.iter().all(|r| r.0 >= plateau + 3 || r.2 == "Startup"));
}

#[test]
fn slow_growth_counts_as_no_growth() {
    // The delivery rate keeps growing by 7 % per round: 1.07^3 = 1.225 is
    // below the 25 % threshold, so three such rounds end Startup anyway.
    let mut d = Driver::new(bbr());
    let base = Rate::from_bytes_per(40 * MSS, Dur::from_millis(50)).unwrap();
    let mut cap = base;
    d.send_and_ack_rounds(3); // 10, 20, 40 segments: still doubling
    let start = d.cc.stats().rounds;
    while d.cc.mode_name() == "Startup" {
        cap = cap.scale(1.07);
        d.delivery_rate_cap(Some(cap));
        d.send_and_ack_rounds(1);
        assert!(d.cc.stats().rounds < start + 10, "Startup never ended");
    }
    assert_eq!(d.cc.stats().full_bw_round, Some(start + 3));
    assert!(d.cc.max_bw() > base.scale(1.2), "bw was still growing");
}

#[test]
fn probe_bw_gain_cycle_order_and_phase_length() {
    let mut d = Driver::new(bbr());
    let mut p = path();
    run_until(&mut d, &mut p, Dur::from_secs(2), |cc| {
        cc.mode_name() == "ProbeBW"
    });
    // (phase index, start time) of every phase for 4 s.
    let mut phases: Vec<(usize, Time)> = vec![(d.cc.cycle_index().unwrap(), d.now)];
    d.run_path_observe(&mut p, Dur::from_secs(4), |t, cc| {
        let idx = cc.cycle_index().expect("still in ProbeBW");
        if idx != phases.last().unwrap().0 {
            phases.push((idx, t));
        }
    });
    let min_rtt = d.cc.min_rtt().unwrap();
    let ack_gap = Rate::from_mbps(20).tx_time(MSS); // one ACK per segment
    assert!(phases.len() > 40, "{} phases", phases.len());
    for w in phases.windows(3) {
        let ((_, _), (idx, start), (next, end)) = (w[0], w[1], w[2]);
        // The cycle order [1.25, 0.75, 1, 1, 1, 1, 1, 1], one step at a time.
        assert_eq!(next, (idx + 1) % 8, "{phases:?}");
        let len = end.saturating_since(start);
        match idx {
            // 1.25: at least min_rtt and until in flight reaches 1.25 BDP.
            0 => assert!(len > min_rtt, "probe phase {len} <= min_rtt"),
            // 0.75: at most min_rtt (earlier if in flight falls to the BDP).
            1 => assert!(len <= min_rtt + ack_gap * 2, "drain phase {len}"),
            // 1.0: wall clock, min_rtt (to the next ACK).
            _ => assert!(
                len > min_rtt && len <= min_rtt + ack_gap * 2,
                "cruise phase {idx} lasted {len}, min_rtt {min_rtt}"
            ),
        }
    }
}

#[test]
fn probe_bw_starts_at_a_random_phase_but_never_the_drain_phase() {
    let mut starts = [0u32; 8];
    for seed in 0..100 {
        let mut d = Driver::new(bbr()).seed(seed);
        let mut p = path();
        let mut first = None;
        d.run_path_observe(&mut p, Dur::from_millis(1500), |_, cc| {
            if first.is_none() {
                first = cc.cycle_index();
            }
        });
        starts[first.expect("reached ProbeBW")] += 1;
    }
    // Linux: cycle_idx = CYCLE_LEN - 1 - random(7), then advanced: 2..7 or 0.
    assert_eq!(starts[1], 0, "started in the 0.75 phase: {starts:?}");
    assert!(
        starts.iter().enumerate().all(|(i, &n)| i == 1 || n >= 5),
        "every other phase is a possible start: {starts:?}"
    );
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
    let mut d = Driver::new(bbr());
    let mut p = path();
    d.run_path(&mut p, Dur::from_millis(100));
    // The first sample set RTprop; an unloaded path never beats it strictly.
    let stamp = d.cc.min_rtt_stamp();
    let mut entered = None;
    let mut done_at = None;
    let mut cwnds = Vec::new();
    let mut rounds_after_done = (0, 0);
    d.run_path_observe(&mut p, Dur::from_secs(11), |t, cc| {
        if cc.mode_name() == "ProbeRTT" {
            entered.get_or_insert(t);
            cwnds.push(cc.cwnd());
            if let Some(at) = cc.probe_rtt_done_at() {
                if done_at.is_none() {
                    done_at = Some(at);
                    rounds_after_done.0 = cc.stats().rounds;
                }
            }
        } else if done_at.is_some() && rounds_after_done.1 == 0 {
            rounds_after_done.1 = cc.stats().rounds;
        }
    });
    let changes = d.state_changes_at();
    let (t_in, _, _) = *changes
        .iter()
        .find(|c| c.2 == "ProbeRTT")
        .expect("ProbeRTT");
    let (t_out, _, to) = *changes
        .iter()
        .find(|c| c.1 == "ProbeRTT")
        .expect("left ProbeRTT");
    // Entered on the first ACK more than 10 s after RTprop was measured.
    assert!(t_in > stamp + Dur::from_secs(10), "{t_in} vs {stamp}");
    assert!(
        t_in <= stamp + Dur::from_secs(10) + Dur::from_millis(1),
        "{t_in}"
    );
    assert_eq!(entered, Some(t_in));
    // cwnd 4 packets throughout.
    assert!(cwnds.iter().all(|&c| c == 4 * MSS), "{cwnds:?}");
    // At least 200 ms once in flight was down to 4 packets, and a round.
    let done_at = done_at.expect("in flight fell to 4 packets");
    assert!(t_out > done_at, "left at {t_out}, before {done_at}");
    assert!(t_out.saturating_since(t_in) >= Dur::from_millis(200));
    assert!(
        rounds_after_done.1 > rounds_after_done.0,
        "{rounds_after_done:?}"
    );
    // Back to ProbeBW with the old window, RTprop refreshed.
    assert_eq!(to, "ProbeBW");
    assert!(d.cc.cwnd() > 150 * MSS, "cwnd restored: {}", d.cc.cwnd());
    assert!(d.cc.min_rtt_stamp() >= t_out);
    assert_eq!(d.cc.stats().probe_rtt_entries, 1);
}

#[test]
fn probe_rtt_waits_for_a_round_as_well_as_200_ms() {
    // Scripted ACKs report a 51 ms RTT: no new minimum.
    let mut d = Driver::new(bbr()).rtt(Dur::from_millis(51));
    let mut p = path();
    run_until(&mut d, &mut p, Dur::from_secs(11), |cc| {
        cc.probe_rtt_done_at().is_some()
    });
    let done = d.cc.probe_rtt_done_at().unwrap();
    // 250 ms later an ACK for data sent before the ProbeRTT round began
    // (scripted, the path frozen meanwhile): 200 ms have passed but no
    // packet-timed round, so ProbeRTT goes on at 4 packets.
    d.advance(Dur::from_millis(250));
    assert!(d.now > done);
    d.ack(MSS);
    assert_eq!(d.cc.mode_name(), "ProbeRTT");
    assert_eq!(d.cc.cwnd(), 4 * MSS);
    // The path resumes; the round completes and ProbeRTT ends.
    run_until(&mut d, &mut p, Dur::from_millis(200), |cc| {
        cc.mode_name() == "ProbeBW"
    });
    assert!(d.cc.cwnd() > 100 * MSS, "cwnd restored");
}

#[test]
fn btl_bw_filter_remembers_ten_rounds() {
    // Scripted rounds whose delivery rate is capped at 20 Mbit/s, then at
    // 10 Mbit/s: the 20 Mbit/s estimate must last exactly 10 more rounds.
    let hi = Rate::from_mbps(20);
    let mut d = Driver::new(bbr());
    d.delivery_rate_cap(Some(hi));
    d.send_and_ack_rounds(15);
    assert_eq!(d.cc.mode_name(), "ProbeBW");
    assert_eq!(d.cc.max_bw(), hi);
    let last_hi_round = d.cc.stats().rounds;
    d.delivery_rate_cap(Some(Rate::from_mbps(10)));
    let mut kept = 0;
    while d.cc.max_bw() == hi {
        d.send_and_ack_rounds(1);
        kept += 1;
        assert!(kept < 30);
    }
    // Rounds last_hi + 1 ..= last_hi + 10 still report 20 Mbit/s; round
    // last_hi + 11 is the first without it (Linux bbr_bw_rtts = 10).
    assert_eq!(kept, 11);
    assert_eq!(d.cc.stats().rounds, last_hi_round + 11);
    assert_eq!(d.cc.max_bw(), Rate::from_mbps(10));
}

#[test]
fn app_limited_samples_only_raise_btl_bw() {
    let hi = Rate::from_mbps(20);
    let mut d = Driver::new(bbr());
    d.delivery_rate_cap(Some(hi));
    d.send_and_ack_rounds(15);
    // 20 rounds of app-limited low samples: the estimate does not age out.
    d.delivery_rate_cap(Some(Rate::from_mbps(5)))
        .app_limited(true);
    d.send_and_ack_rounds(20);
    assert_eq!(d.cc.max_bw(), hi);
    // An app-limited sample above the estimate is taken.
    d.delivery_rate_cap(Some(Rate::from_mbps(25)));
    d.send_and_ack_rounds(1);
    assert_eq!(d.cc.max_bw(), Rate::from_mbps(25));
}

#[test]
fn packet_conservation_in_the_first_round_of_recovery() {
    let mut d = Driver::new(bbr());
    d.delivery_rate_cap(Some(Rate::from_mbps(20)));
    d.send_and_ack_rounds(15);
    let before = d.cc.cwnd();
    assert!(before > 100 * MSS);
    // Fast recovery starts with 50 segments in flight.
    d.set_flight(Some(50 * MSS));
    d.lose(MSS, true);
    d.ack(MSS); // first ACK of recovery: cwnd = in flight after it (49) + acked (1)
    assert_eq!(d.cc.cwnd(), 50 * MSS);
    d.set_flight(Some(60 * MSS));
    d.ack(MSS); // still conserving: max(cwnd, in flight + acked)
    assert_eq!(d.cc.cwnd(), 60 * MSS);
    assert_eq!(d.cc.stats().conservation_rounds, 1);
    // The next round ends conservation: cwnd grows by what is acked.
    d.set_flight(None);
    d.send_and_ack_rounds(1);
    assert!(d.cc.cwnd() > 2 * 60 * MSS - MSS, "{}", d.cc.cwnd());
    // Leaving recovery restores the window saved when it began.
    // (The target differs by 2 packets between gain-cycle phases.)
    d.recovery_end();
    d.ack(MSS);
    assert!(
        d.cc.cwnd() + 2 * MSS >= before,
        "{} < {before}",
        d.cc.cwnd()
    );
}

#[test]
fn loss_outside_recovery_does_not_change_the_model() {
    let mut d = Driver::new(bbr());
    d.delivery_rate_cap(Some(Rate::from_mbps(20)));
    d.send_and_ack_rounds(15);
    let (bw, cwnd, gain) = (d.cc.max_bw(), d.cc.cwnd(), d.cc.pacing_gain());
    // An RTO collapses cwnd to one segment (Linux tcp_enter_loss) ...
    d.rto();
    assert_eq!(d.cc.cwnd(), MSS);
    // ... but BtlBw, the mode and the gains are untouched, and recovery
    // ends with the saved window.
    assert_eq!((d.cc.max_bw(), d.cc.pacing_gain()), (bw, gain));
    d.send_and_ack_rounds(2);
    d.recovery_end();
    d.ack(MSS);
    assert!(d.cc.cwnd() + 2 * MSS >= cwnd, "{} vs {cwnd}", d.cc.cwnd());
    // ECN-Echo: BBR v1 has no ECN response.
    let c = d.cc.cwnd();
    d.ecn_echo();
    assert_eq!(d.cc.cwnd(), c);
}

#[test]
fn near_full_throughput_under_three_percent_random_loss() {
    // Deliveries in the 7 s after a 3 s warm-up (in Startup, packet
    // conservation slows the first bandwidth estimate under loss).
    let steady = |loss: f64| {
        let mut d = Driver::new(bbr());
        let mut p = path().loss(loss, 7);
        d.run_path(&mut p, Dur::from_secs(3));
        let warm = p.stats.delivered;
        d.run_path(&mut p, Dur::from_secs(7));
        assert_eq!(p.stats.rtos, 0);
        (p.stats.delivered - warm, d.cc.max_bw())
    };
    let (clean, _) = steady(0.0);
    let (lossy, bw) = steady(0.03);
    // Loss is not a congestion signal: 97 % of the packets arrive and the
    // sender keeps pacing at the bottleneck rate (packet conservation in
    // the first round of each recovery costs a little more).
    assert!(lossy as f64 > 0.93 * clean as f64, "{lossy} vs {clean}");
    assert!(bw.as_bps() >= 19_500_000, "{bw}");
}

#[test]
fn extra_acked_covers_ack_aggregation() {
    // ACKs released every 10 ms in a batch (Wi-Fi-like aggregation): BBR
    // must allow about bw * 10 ms more in flight to keep sending between
    // batches (Linux bbr_update_ack_aggregation).
    let run = |aggregation: Dur, cfg: BbrConfig| {
        let mut d = Driver::new(Bbr::new(cfg));
        let mut p = path().ack_aggregation(aggregation);
        d.run_path(&mut p, Dur::from_secs(5));
        (d.cc.extra_acked(), d.cc.cwnd(), p.stats.delivered)
    };
    let (smooth, _, _) = run(Dur::ZERO, BbrConfig::default());
    let (aggr, cwnd, delivered) = run(Dur::from_millis(10), BbrConfig::default());
    let batch = Rate::from_mbps(20).bytes_in(Dur::from_millis(10)); // 25 000 B
    assert!(smooth <= 2 * MSS, "smooth ACKs: extra_acked {smooth}");
    assert!(
        aggr as f64 > 0.8 * batch as f64 && aggr as f64 <= 2.2 * batch as f64,
        "extra_acked {aggr} vs one batch {batch}"
    );
    // Without the allowance (gain 0) cwnd is smaller by about that much.
    let off = BbrConfig {
        extra_acked_gain: 0,
        ..BbrConfig::default()
    };
    let (zero, cwnd_off, delivered_off) = run(Dur::from_millis(10), off);
    assert_eq!(zero, 0);
    assert!(
        cwnd >= cwnd_off + aggr / MSS * MSS - 2 * MSS,
        "{cwnd} vs {cwnd_off}"
    );
    assert!(delivered >= delivered_off);
}
