//! Unit tests of the BBRv3 controller: draft constants, the §5.1.1 edges
//! (legal ones pass, illegal ones panic), the §5.6.1 gains each transition
//! sets, and the volume arithmetic.

use super::*;
use crate::testing::Driver;
use crate::CcCtx;

fn bw(phase: ProbeBwPhase) -> Mode {
    Mode::ProbeBw {
        phase,
        phase_start: Time::from_millis(7),
    }
}

#[test]
fn draft_constants_at_linux_v3_values() {
    let c = Bbr3Config::default();
    // Linux BBRv3 (google/bbr v3, tcp_bbr.c) gains in BBR_UNIT = 256:
    // bbr_startup_pacing_gain = 256 * 277 / 100 + 1 = 710,
    // bbr_drain_gain = 256 * 1000 / 2885 = 88,
    // bbr_pacing_gain[DOWN] = 256 * 91 / 100 = 232.
    assert_eq!(c.startup_pacing_gain * 256.0, 710.0);
    assert!((c.startup_pacing_gain - 4.0 * libm::log(2.0)).abs() < 0.005);
    assert_eq!(
        (
            c.drain_pacing_gain * 256.0,
            c.probe_down_pacing_gain * 256.0
        ),
        (88.0, 232.0)
    );
    assert_eq!((c.probe_up_pacing_gain, c.probe_up_cwnd_gain), (1.25, 2.25));
    assert_eq!((c.loss_thresh, c.beta, c.headroom), (0.02, 0.7, 0.15));
    assert_eq!(c.probe_rtt_interval, Dur::from_secs(5));
    assert!(c.validate().is_ok());
}

#[test]
fn legal_edges_follow_the_diagram() {
    use Mode::*;
    use ProbeBwPhase::*;
    let rtt = ProbeRtt(ProbeRttDwell {
        done_at: Some(Time::from_millis(3)),
        round_done: true,
    });
    let drain = Drain { start_round: 9 };
    for (from, to) in [
        (Startup, drain),
        (drain, bw(Down)),
        (bw(Down), bw(Cruise)),
        (bw(Down), bw(Refill)),
        (bw(Cruise), bw(Refill)),
        (bw(Refill), bw(Up)),
        (bw(Up), bw(Down)),
        (Startup, rtt),
        (drain, rtt),
        (bw(Up), rtt),
        (rtt, bw(Down)),
        (rtt, Startup),
    ] {
        assert!(from.may_enter(to), "{} -> {}", from.name(), to.name());
    }
    for (from, to) in [
        (Startup, bw(Down)),
        (drain, bw(Cruise)),
        (bw(Cruise), bw(Up)),
        (bw(Refill), bw(Down)),
        (bw(Up), bw(Cruise)),
        (bw(Cruise), bw(Down)),
        (rtt, rtt),
        (rtt, bw(Cruise)),
        (bw(Down), Startup),
        (Startup, Startup),
    ] {
        assert!(!from.may_enter(to), "{} -> {}", from.name(), to.name());
    }
}

#[test]
#[should_panic(expected = "illegal BBR transition Startup -> ProbeBW_UP")]
fn startup_cannot_jump_to_up() {
    let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
    d.cc.transition_to(Time::ZERO, bw(ProbeBwPhase::Up), 1, &mut d.tracer);
}

#[test]
#[should_panic(expected = "illegal BBR transition ProbeBW_CRUISE -> ProbeBW_UP")]
fn cruise_must_refill_before_up() {
    let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
    d.cc.mode = Checked::new(bw(ProbeBwPhase::Cruise));
    d.cc.transition_to(Time::ZERO, bw(ProbeBwPhase::Up), 1, &mut d.tracer);
}

#[test]
fn transitions_set_the_table_gains() {
    let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
    let mut gains = Vec::new();
    for next in [
        Mode::Drain { start_round: 0 },
        bw(ProbeBwPhase::Down),
        bw(ProbeBwPhase::Cruise),
        bw(ProbeBwPhase::Refill),
        bw(ProbeBwPhase::Up),
        Mode::ProbeRtt(ProbeRttDwell::ENTER),
    ] {
        d.cc.transition_to(Time::ZERO, next, 1, &mut d.tracer);
        gains.push((d.cc.pacing_gain, d.cc.cwnd_gain));
    }
    assert_eq!(
        gains,
        [
            (88.0 / 256.0, 2.0),
            (232.0 / 256.0, 2.0),
            (1.0, 2.0),
            (1.0, 2.0),
            (1.25, 2.25),
            (1.0, 0.5)
        ]
    );
}

#[test]
fn quantization_budget_and_headroom() {
    let mut b = Bbr3::new(Bbr3Config::default());
    b.min_rtt = Some(Dur::from_millis(50));
    b.bw = Rate::from_mbps(20);
    // BDP = 20 Mbit/s * 50 ms = 125 000 B.
    assert_eq!(b.bdp(b.bw), 125_000);
    assert_eq!(b.bdp_multiple(b.bw, 2.0), 250_000);
    // Send quantum at 20 Mbit/s: 2500 B in 1 ms, at least 2 * 1448.
    b.pacing_rate = Rate::from_mbps(20);
    b.set_send_quantum();
    assert_eq!(b.send_quantum, 2896);
    // A tiny BDP is raised to the offload budget 3 * 2896.
    b.bw = Rate::from_kbps(100);
    assert_eq!(b.inflight(b.bw, 1.0), 3 * 2896);
    // ProbeRTT cwnd: half the BDP, at least 4 segments.
    b.bw = Rate::from_mbps(20);
    assert_eq!(b.probe_rtt_cwnd(), 62_500);
    b.bw = Rate::from_kbps(100);
    assert_eq!(b.probe_rtt_cwnd(), 4 * 1448);
}

/// A Startup controller with a 20 Mbit/s, 25 ms model, in fast recovery.
fn startup_in_recovery() -> Bbr3 {
    let mut b = Bbr3::new(Bbr3Config::default());
    b.min_rtt = Some(Dur::from_millis(25));
    b.max_bw.update(Rate::from_mbps(20).as_bps());
    b.bw = Rate::from_mbps(20);
    b.ca = CaState::Recovery;
    b
}

fn lossy_sample(lost: u64, tx_in_flight: u64) -> RateSample {
    RateSample {
        newly_acked: 1448,
        lost,
        tx_in_flight,
        delivery_rate: Some(Rate::from_mbps(20)),
        ..RateSample::default()
    }
}

#[test]
fn startup_loss_exit_is_linux_check_loss_too_high_in_startup() {
    // Linux bbr_check_loss_too_high_in_startup: at a loss round start, in
    // Recovery, >= 6 loss events in the round and this sample's lost >
    // 2 % of its tx_in_flight. No full round in recovery is needed.
    let mut b = startup_in_recovery();
    b.bounds.loss_round_start = true;
    b.loss_events_in_round = 6;
    b.bounds.inflight_latest = 10 * 1448;
    b.check_startup_high_loss(&lossy_sample(2001, 100_000));
    assert!(b.full_bw_reached);
    assert_eq!(b.stats.startup_exit, Some(StartupExit::Loss));
    // inflight_hi = max(bbr_inflight(max_bw, 1.0), inflight_latest): BDP =
    // 20 Mbit/s * 25 ms = 62 500 B, above the 3-quantum budget.
    assert_eq!(b.inflight_longterm(), Some(62_500));
    assert!(!b.full_bw_now, "Linux leaves full_bw_now alone");

    // Each condition is needed.
    for (events, lost, round_start, ca) in [
        (5, 2001, true, CaState::Recovery),
        (6, 2000, true, CaState::Recovery),
        (6, 2001, false, CaState::Recovery),
        (6, 2001, true, CaState::Open),
    ] {
        let mut b = startup_in_recovery();
        b.ca = ca;
        b.bounds.loss_round_start = round_start;
        b.loss_events_in_round = events;
        b.check_startup_high_loss(&lossy_sample(lost, 100_000));
        assert!(!b.full_bw_reached, "{events} {lost} {round_start} {ca:?}");
    }
}

#[test]
fn full_bw_growth_is_tested_on_every_ack_and_counted_at_round_starts() {
    // Linux bbr_check_full_bw_reached: a sample >= 1.25 * full_bw resets the
    // count on any ACK; flat samples count only at a round start.
    let mut b = Bbr3::new(Bbr3Config::default());
    let at = |mbps| RateSample {
        newly_acked: 1448,
        delivery_rate: Some(Rate::from_mbps(mbps)),
        ..RateSample::default()
    };
    b.round_start = true;
    b.check_full_bw_reached(&at(10));
    b.check_full_bw_reached(&at(10));
    b.check_full_bw_reached(&at(10));
    assert_eq!((b.full_bw, b.full_bw_count), (Rate::from_mbps(10), 2));
    b.round_start = false;
    b.check_full_bw_reached(&at(13)); // mid-round, 30 % up: reset
    assert_eq!((b.full_bw, b.full_bw_count), (Rate::from_mbps(13), 0));
    b.check_full_bw_reached(&at(13)); // mid-round, flat: not counted
    assert_eq!(b.full_bw_count, 0);
    b.round_start = true;
    for _ in 0..3 {
        b.check_full_bw_reached(&at(13));
    }
    assert!(b.full_bw_now && b.full_bw_reached);
}

#[test]
fn startup_cwnd_grows_to_twice_the_initial_window_then_to_target() {
    // Linux bbr_set_cwnd before full bw: "cwnd < target_cwnd || cwnd < 2 * init_cwnd".
    let mut b = Bbr3::new(Bbr3Config::default());
    b.min_rtt = Some(Dur::from_millis(25));
    b.bw = Rate::from_kbps(100); // target = the 4-segment floor / 3 quanta
    b.delivered = 1_000_000; // v1's "delivered < init cwnd" rule no longer applies
    let init = 10 * 1448;
    b.cwnd = 2 * init - 1448;
    let ack = RateSample {
        newly_acked: 1448,
        ..RateSample::default()
    };
    b.set_cwnd(&ack);
    assert_eq!(b.cwnd, 2 * init);
    b.set_cwnd(&ack);
    assert_eq!(b.cwnd, 2 * init, "at 2 x init cwnd and above target: held");
}

#[test]
fn drain_resets_congestion_signals_and_cruise_caps_inflight_lo_by_hi() {
    let mut d = Driver::new(Bbr3::new(Bbr3Config::default()));
    // Linux bbr_check_drain: entering Drain resets the congestion signals.
    d.cc.bounds.is_loss_in_round = true;
    d.cc.bounds.inflight_latest = 5000;
    d.cc.full_bw_reached = true;
    let mut rng = l4slab_core::SimRng::derive(1, "drain");
    let mut ctx = CcCtx {
        flow: 1,
        mss: 1448,
        rng: &mut rng,
        tracer: &mut d.tracer,
    };
    d.cc.check_startup_done(Time::ZERO, &mut ctx);
    assert_eq!(d.cc.mode_name(), "Drain");
    assert!(!d.cc.bounds.is_loss_in_round);
    assert_eq!(d.cc.bounds.inflight_latest, 0);
    // Linux bbr_start_bw_probe_cruise: inflight_lo = min(inflight_lo, inflight_hi).
    d.cc.mode = Checked::new(bw(ProbeBwPhase::Down));
    d.cc.bounds.inflight_shortterm = Some(90_000);
    d.cc.bounds.inflight_longterm = Some(60_000);
    d.cc.start_probe_bw_cruise(Time::ZERO, 1, &mut d.tracer);
    assert_eq!(d.cc.inflight_shortterm(), Some(60_000));
}
