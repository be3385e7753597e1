//! Property tests for DCTCP and Prague: random event sequences (ACKs with
//! and without CE, losses, RTOs, ECN-Echo, rounds under random marking)
//! through the scripted [`Driver`] keep the invariants after every event.
//!
//! * DCTCP: `cwnd >= 1 SMSS`; once set, `ssthresh >= 2 SMSS`; `alpha` in
//!   `[0, 1]`; CE never *raises* the window above what it was before the ACK
//!   (except the 2-segment floor).
//! * Prague: the segment window is at least 1 segment and, outside an RTO's
//!   slow start, at least `MIN_CWND`; `frac_cwnd > 0`; `alpha` in `[0, 1]`;
//!   the pacing rate, once there is an RTT, is at least the floor; only
//!   unmarked bytes grow the window (an ACK whose bytes are all CE-marked
//!   never raises `frac_cwnd`), there is no growth in loss recovery, a CE
//!   reduction never cuts `frac_cwnd` by more than half (`alpha <= 1`), and
//!   outside slow start an ACK moves the segment window by at most one
//!   segment (Linux "step-wise cwnd decrement/increment").
//! * Both: every traced state change starts from the state reported before
//!   it (the controllers' own `transition_to` asserts the window/state
//!   agreement and would panic otherwise).

use l4slab_cc::testing::Driver;
use l4slab_cc::{
    CongestionControl, Dctcp, DctcpConfig, EcnFallback, Prague, PragueConfig, RttScaling,
};
use l4slab_core::{Dur, TraceEvent};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Ack {
        bytes: u64,
    },
    AckCe {
        bytes: u64,
        ce_percent: u64,
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
    Rtt(u64),
    /// A full round under random marking with this probability (percent),
    /// only taken while the window is small (bounded work).
    Round {
        p_percent: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u64..200_000).prop_map(|bytes| Op::Ack { bytes }),
        4 => (1u64..200_000, 0u64..=100).prop_map(|(bytes, ce_percent)| Op::AckCe { bytes, ce_percent }),
        1 => any::<bool>().prop_map(Op::AppLimited),
        2 => (1u64..20_000, any::<bool>()).prop_map(|(bytes, first)| Op::Lose { bytes, first }),
        1 => Just(Op::Rto),
        1 => Just(Op::EcnEcho),
        2 => Just(Op::RecoveryEnd),
        1 => proptest::option::of(0u64..1_000_000).prop_map(Op::SetFlight),
        1 => (0u64..100_000_000).prop_map(Op::Advance),
        1 => (1u64..200).prop_map(Op::Rtt),
        3 => (0u64..=100).prop_map(|p_percent| Op::Round { p_percent }),
    ]
}

fn apply<C: CongestionControl>(d: &mut Driver<C>, op: &Op, mss: u64) {
    match *op {
        Op::Ack { bytes } => {
            d.ack(bytes);
        }
        Op::AckCe { bytes, ce_percent } => {
            d.ack_ce(bytes, bytes * ce_percent / 100);
        }
        Op::AppLimited(on) => {
            d.app_limited(on);
        }
        Op::Lose { bytes, first } => {
            d.lose(bytes, first);
        }
        Op::Rto => {
            d.rto();
        }
        Op::EcnEcho => {
            d.ecn_echo();
        }
        Op::RecoveryEnd => {
            d.recovery_end();
        }
        Op::SetFlight(f) => {
            d.set_flight(f);
        }
        Op::Advance(ns) => {
            d.advance(Dur::from_nanos(ns));
        }
        Op::Rtt(ms) => {
            d.rtt = Dur::from_millis(ms);
        }
        Op::Round { p_percent } => {
            if d.cc.cwnd() / mss <= 256 {
                d.mark_ce_random(p_percent as f64 / 100.0);
                d.send_and_ack_rounds(1);
                d.mark_ce(0.0);
            }
        }
    }
}

/// Every traced change starts where the previous one ended.
fn trace_is_a_path<C: CongestionControl>(d: &Driver<C>, initial: &'static str) -> bool {
    let mut at = initial;
    for (_, ev) in &d.tracer.0 {
        if let TraceEvent::CcStateChanged { from, to, .. } = ev {
            if *from != at {
                return false;
            }
            at = to;
        }
    }
    at == d.cc.metrics().state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn dctcp_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(536), 100u64..9000],
        iw in 1u64..20,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let cc = Dctcp::new(DctcpConfig { mss, initial_window_segments: iw, ..DctcpConfig::default() });
        let mut d = Driver::new(cc).mss(mss);
        for op in &ops {
            let before = d.cc.cwnd();
            apply(&mut d, op, mss);
            let m = d.cc.metrics();
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 SMSS", m.cwnd);
            if let Some(s) = m.ssthresh {
                prop_assert!(s >= 2 * mss, "ssthresh {} < 2 SMSS", s);
            }
            let alpha = d.cc.alpha();
            prop_assert!((0.0..=1.0).contains(&alpha), "alpha {}", alpha);
            if let Op::AckCe { ce_percent, bytes } = op {
                if *ce_percent > 0 && bytes * ce_percent / 100 > 0 {
                    prop_assert!(m.cwnd <= before.max(2 * mss), "CE grew {} -> {}", before, m.cwnd);
                }
            }
        }
        prop_assert!(trace_is_a_path(&d, "SlowStart"));
    }

    #[test]
    fn prague_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(536), 100u64..9000],
        iw in 1u64..20,
        scaling in prop_oneof![Just(RttScaling::None), Just(RttScaling::Rate), Just(RttScaling::Scalable), Just(RttScaling::Additive)],
        transition in 0u64..5,
        fallback in prop_oneof![Just(EcnFallback::Off), Just(EcnFallback::DetectAndFallback), Just(EcnFallback::DetectOnly)],
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let cfg = PragueConfig {
            mss,
            initial_window_segments: iw,
            rtt_scaling: scaling,
            rtt_transition_rounds: transition,
            ecn_fallback: fallback,
            ..PragueConfig::default()
        };
        let floor = cfg.min_pacing_rate;
        let mut d = Driver::new(Prague::new(cfg)).mss(mss);
        // After an RTO the window restarts at 1 segment (RFC 5681 loss window).
        let mut rto_seen = false;
        for op in &ops {
            let (frac_before, before) = (d.cc.frac_cwnd(), d.cc.metrics());
            apply(&mut d, op, mss);
            rto_seen |= matches!(op, Op::Rto);
            let m = d.cc.metrics();
            if let Op::Ack { bytes } | Op::AckCe { bytes, .. } = *op {
                let ce = match *op { Op::AckCe { ce_percent, .. } => bytes * ce_percent / 100, _ => 0 };
                let frac = d.cc.frac_cwnd();
                if ce == bytes || before.state == "Recovery" {
                    prop_assert!(frac <= frac_before, "frac_cwnd grew {} -> {} ({:?} in {})", frac_before, frac, op, before.state);
                }
                if ce > 0 && matches!(before.state, "SlowStart" | "CongestionAvoidance") {
                    prop_assert!(frac >= frac_before / 2.0, "CE cut {} -> {}", frac_before, frac);
                }
                // (From a window below MIN_CWND, possible only with an
                // initial window of 1, a cut sets ssthresh to MIN_CWND and
                // slow start resumes: not checked.)
                if before.ssthresh.is_some_and(|s| before.cwnd >= s) && before.cwnd >= 2 * mss {
                    prop_assert!(
                        m.cwnd.abs_diff(before.cwnd) <= mss,
                        "an ACK outside slow start moved cwnd {} -> {}", before.cwnd, m.cwnd
                    );
                }
            }
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 segment", m.cwnd);
            prop_assert_eq!(m.cwnd % mss, 0, "whole segments");
            if !rto_seen && iw >= 2 {
                prop_assert!(m.cwnd >= 2 * mss, "cwnd {} < MIN_CWND", m.cwnd);
            }
            prop_assert!(d.cc.frac_cwnd() > 0.0);
            let alpha = d.cc.alpha();
            prop_assert!((0.0..=1.0).contains(&alpha), "alpha {}", alpha);
            if let Some(rate) = m.pacing_rate {
                prop_assert!(rate >= floor);
            }
            let score = d.cc.classic_ecn_score();
            prop_assert!((0.0..=17.0).contains(&score));
            if fallback == EcnFallback::Off {
                prop_assert_eq!(score, 0.0);
            }
        }
        prop_assert!(trace_is_a_path(&d, "SlowStart"));
    }
}
