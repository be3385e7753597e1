//! Unit tests of the BBRv3 controller: draft constants, the §5.1.1 edges
//! (legal ones pass, illegal ones panic), the §5.6.1 gains each transition
//! sets, and the volume arithmetic.

use super::*;
use crate::testing::Driver;

fn bw(phase: ProbeBwPhase) -> Mode {
    Mode::ProbeBw {
        phase,
        phase_start: Time::from_millis(7),
    }
}

#[test]
fn draft_constants() {
    let c = Bbr3Config::default();
    assert_eq!(c.startup_pacing_gain, 2.77);
    assert!((c.startup_pacing_gain - 4.0 * libm::log(2.0)).abs() < 0.005);
    assert_eq!((c.drain_pacing_gain, c.probe_down_pacing_gain), (0.5, 0.9));
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
            (0.5, 2.0),
            (0.9, 2.0),
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
