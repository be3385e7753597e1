//! Property tests for CUBIC: random event sequences through the scripted
//! [`Driver`] (ACKs of any size, losses, RTOs, ECN echoes, recovery ends,
//! flight overrides, idle time, app-limited phases, RTT changes that drive
//! HyStart++) keep these invariants after every event:
//!
//! * `cwnd >= 1 SMSS` (RFC 5681 §3.1: the RTO loss window is the floor);
//! * once set, `ssthresh >= 2 SMSS` (RFC 9438 §4.6) and it stays set;
//! * an ACK never shrinks cwnd; in slow start it grows it by at most
//!   `min(acked, L*SMSS)`, in CSS by at most a quarter of that (RFC 9406 §4.2);
//! * the reported state agrees with the windows: `SlowStart` below
//!   `ssthresh`, `ConservativeSlowStart` only while `ssthresh` is unset
//!   (initial slow start), `CongestionAvoidance` at or above it, `Recovery`
//!   at or below it;
//! * `W_max`, `K`, `W_est` and `cwnd_prior` are finite and non-negative, and
//!   a new epoch's `K` satisfies RFC 9438 Figure 2 (`C K³ = W_max −
//!   cwnd_epoch`, with `K = 0` when `cwnd_epoch >= W_max`);
//! * every traced state change starts from the state reported before it.

use l4slab_cc::testing::Driver;
use l4slab_cc::{CongestionControl, Cubic, CubicConfig, HyStartKind};
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
    SetRttMs(u64),
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
        1 => (0u64..20_000_000_000).prop_map(Op::Advance),
        2 => (1u64..300).prop_map(Op::SetRttMs),
        4 => Just(Op::Round),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cubic_window_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(1460), Just(536), 1u64..9000],
        iw in 1u64..20,
        beta in 0.05f64..0.95,
        c in 0.05f64..4.0,
        fast_convergence in any::<bool>(),
        reno_friendly in any::<bool>(),
        hystart in any::<bool>(),
        hystart_kind in prop_oneof![Just(HyStartKind::Linux), Just(HyStartKind::HyStartPp)],
        alpha in proptest::option::of(0.05f64..2.0),
        grow_in_recovery in any::<bool>(),
        l in 1u64..16,
        ops in proptest::collection::vec(op(), 1..100),
    ) {
        let cfg = CubicConfig {
            mss,
            initial_window_segments: iw,
            c,
            beta,
            fast_convergence,
            reno_friendly,
            hystart,
            hystart_kind,
            alpha,
            grow_in_recovery,
            ack_limit_segments: l,
        };
        let mut d = Driver::new(Cubic::new(cfg)).mss(mss);
        let mut had_ssthresh = false;
        let mut state = d.cc.metrics().state;
        let mut traced = 0;
        for op in ops {
            let before = d.cc.cwnd();
            let before_state = d.cc.metrics().state;
            let epoch_before = d.cc.k_seconds().is_some();
            let mut acked = None;
            match op {
                Op::Ack { bytes } => { d.ack(bytes); acked = Some(bytes); }
                Op::AppLimited(on) => { d.app_limited(on); }
                Op::Lose { bytes, first } => { d.lose(bytes, first); }
                Op::Rto => { d.rto(); }
                Op::EcnEcho => { d.ecn_echo(); }
                Op::RecoveryEnd => { d.recovery_end(); }
                Op::SetFlight(f) => { d.set_flight(f); }
                Op::Advance(ns) => { d.advance(Dur::from_nanos(ns)); }
                Op::SetRttMs(ms) => { d.rtt = Dur::from_millis(ms); }
                Op::Round => {
                    if d.cc.cwnd() / mss <= 256 {
                        d.send_and_ack_rounds(1);
                    }
                }
            }
            let m = d.cc.metrics();
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 SMSS {}", m.cwnd, mss);
            prop_assert_eq!(m.cwnd, d.cc.cwnd());
            if let Some(bytes) = acked {
                prop_assert!(m.cwnd >= before, "an ACK shrank cwnd {} -> {}", before, m.cwnd);
                let grown = m.cwnd - before;
                // RFC 9406's L applies with HyStart++ only (Linux has none).
                let counted = match hystart_kind {
                    HyStartKind::HyStartPp => bytes.min(l * mss),
                    HyStartKind::Linux => bytes,
                };
                // (An ACK that reaches ssthresh hands its rest to congestion
                // avoidance, as Linux tcp_slow_start; not checked here.)
                if before_state == "SlowStart" && m.state != "CongestionAvoidance" {
                    prop_assert!(grown <= counted, "slow start grew {} on an ACK of {}", grown, bytes);
                }
                if before_state == "ConservativeSlowStart" {
                    prop_assert!(
                        grown <= counted / 4 + 1,
                        "CSS grew {} on an ACK of {}", grown, bytes
                    );
                }
            }
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
                "ConservativeSlowStart" => {
                    prop_assert!(hystart && hystart_kind == HyStartKind::HyStartPp);
                    prop_assert!(m.ssthresh.is_none());
                }
                "CongestionAvoidance" => prop_assert!(m.cwnd >= ss),
                "Recovery" => prop_assert!(m.cwnd <= ss),
                other => prop_assert!(false, "unknown state {}", other),
            }
            for (name, v) in &m.extra {
                prop_assert!(v.is_finite() && *v >= 0.0, "{} = {}", name, v);
            }
            if let (false, Some(k), "CongestionAvoidance") =
                (epoch_before, d.cc.k_seconds(), before_state)
            {
                // A new epoch started on this ACK with cwnd_epoch = the window
                // before it: C K^3 = W_max - cwnd_epoch (Figure 2), or K = 0
                // and W_max = cwnd_epoch when there was no W_max above it.
                let plateau = d.cc.epoch_w_max_segments().unwrap();
                let cwnd_epoch = before as f64 / mss as f64; // up to 1 byte short
                prop_assert!(k >= 0.0 && k.is_finite());
                prop_assert!(plateau.is_finite() && plateau > 0.0);
                let err = c * k * k * k - (plateau - cwnd_epoch);
                prop_assert!(
                    err <= 1e-9 * plateau && err >= -1.0 / mss as f64 - 1e-9 * plateau,
                    "K {} vs W_max {} cwnd_epoch {}", k, plateau, cwnd_epoch
                );
                prop_assert!(d.cc.w_est_segments().unwrap().is_finite());
            }
            // Each traced change starts where the last one ended.
            for (_, ev) in &d.tracer.0[traced..] {
                if let TraceEvent::CcStateChanged { from, to, .. } = ev {
                    prop_assert_eq!(*from, state);
                    prop_assert_ne!(from, to);
                    prop_assert!(
                        *to != "ConservativeSlowStart" || *from == "SlowStart",
                        "CSS entered from {}", from
                    );
                    state = to;
                }
            }
            traced = d.tracer.0.len();
            prop_assert_eq!(state, m.state);
        }
    }
}
