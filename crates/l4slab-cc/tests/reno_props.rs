//! Property tests for Reno: random event sequences through the scripted
//! [`Driver`] keep the window invariants after every event.
//!
//! * `cwnd >= 1 SMSS` always (RFC 5681 §3.1: the RTO loss window is the floor);
//! * once set, `ssthresh >= 2 SMSS` (RFC 5681 eq. 4) and it stays set;
//! * the reported state agrees with the windows, and every traced state
//!   change starts from the state reported before it.

use l4slab_cc::testing::Driver;
use l4slab_cc::{CongestionControl, Reno, RenoConfig};
use l4slab_core::{Dur, TraceEvent};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Ack {
        bytes: u64,
    },
    AppLimited(bool),
    Lose {
        bytes: u64,
        first: bool,
    },
    Rto,
    EcnEcho,
    RecoveryEnd,
    SetFlight(Option<u64>),
    Advance(u64),
    /// A full round, only taken while the window is small (bounded work).
    Round,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..200_000).prop_map(|bytes| Op::Ack { bytes }),
        1 => any::<bool>().prop_map(Op::AppLimited),
        3 => (1u64..20_000, any::<bool>()).prop_map(|(bytes, first)| Op::Lose { bytes, first }),
        1 => Just(Op::Rto),
        2 => Just(Op::EcnEcho),
        2 => Just(Op::RecoveryEnd),
        1 => proptest::option::of(0u64..1_000_000).prop_map(Op::SetFlight),
        1 => (0u64..1_000_000_000).prop_map(Op::Advance),
        2 => Just(Op::Round),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reno_window_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(1460), Just(536), 1u64..9000],
        iw in 1u64..20,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let cc = Reno::new(RenoConfig { mss, initial_window_segments: iw });
        let mut d = Driver::new(cc).mss(mss);
        let mut had_ssthresh = false;
        let mut state = d.cc.metrics().state;
        let mut traced = 0;
        for op in ops {
            match op {
                Op::Ack { bytes } => { d.ack(bytes); }
                Op::AppLimited(on) => { d.app_limited(on); }
                Op::Lose { bytes, first } => { d.lose(bytes, first); }
                Op::Rto => { d.rto(); }
                Op::EcnEcho => { d.ecn_echo(); }
                Op::RecoveryEnd => { d.recovery_end(); }
                Op::SetFlight(f) => { d.set_flight(f); }
                Op::Advance(ns) => { d.advance(Dur::from_nanos(ns)); }
                Op::Round => {
                    if d.cc.cwnd() / mss <= 256 {
                        d.send_and_ack_rounds(1);
                    }
                }
            }
            let m = d.cc.metrics();
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 SMSS {}", m.cwnd, mss);
            prop_assert_eq!(m.cwnd, d.cc.cwnd());
            match m.ssthresh {
                Some(s) => {
                    prop_assert!(s >= 2 * mss, "ssthresh {} < 2 SMSS", s);
                    had_ssthresh = true;
                }
                None => prop_assert!(!had_ssthresh, "ssthresh was unset again"),
            }
            let ss = m.ssthresh.unwrap_or(u64::MAX);
            match m.state {
                "SlowStart" => prop_assert!(m.cwnd < ss),
                "CongestionAvoidance" => prop_assert!(m.cwnd >= ss),
                "Recovery" => prop_assert!(m.cwnd <= ss),
                other => prop_assert!(false, "unknown state {}", other),
            }
            // Each traced change starts where the last one ended.
            for (_, ev) in &d.tracer.0[traced..] {
                if let TraceEvent::CcStateChanged { from, to, .. } = ev {
                    prop_assert_eq!(*from, state);
                    prop_assert_ne!(from, to);
                    state = to;
                }
            }
            traced = d.tracer.0.len();
            prop_assert_eq!(state, m.state);
        }
    }
}
