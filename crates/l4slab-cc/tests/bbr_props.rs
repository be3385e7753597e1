//! Property tests for BBR v1 and BBRv3: random event sequences (ACKs of any
//! size, losses, RTOs, ECN-Echo, recovery ends, flight overrides, idle time
//! long enough to expire the min-RTT filter, RTT changes, app-limited phases,
//! rounds under a delivery-rate cap that lets Startup find the pipe full)
//! through the scripted [`Driver`] keep these invariants after every event.
//!
//! Both versions:
//! * `cwnd >= 1 SMSS` (the RTO window, `tcp_enter_loss` / §5.6.4.4
//!   `OnEnterRTO`: `inflight + 1` with nothing in flight);
//! * the pacing rate is positive once the controller has seen an event
//!   (`InitPacingRate` at start-up, never lowered before the pipe is full,
//!   then `pacing_gain * bw` with `bw` from positive samples only);
//! * every traced state change is an edge of the state diagram (v1: the
//!   `tcp_bbr.c` diagram; v3: draft-ietf-ccwg-bbr-06 §5.1.1), written out
//!   here independently of the controllers' own `may_enter`, and starts
//!   where the previous one ended;
//! * an ACK raises cwnd by at most the bytes it acknowledged, from the
//!   minimum window if it was below it (v1 `bbr_set_cwnd`: `cwnd + acked` capped by the target;
//!   v3 §5.6.4.6 `SetCwnd`: `cwnd + newly_acked`), except when it ends
//!   ProbeRTT or a recovery, which restore the saved cwnd (never above the
//!   largest cwnd seen); so a round (one window of ACKs) at most doubles it.
//!   (v1 in loss recovery: packet conservation may also set it to the
//!   reported in-flight plus the acked bytes.)
//!
//! BBR v1 (`bbr_set_cwnd`):
//! * after an ACK of data outside loss recovery, `cwnd >= cwnd_min_target`
//!   (4 packets); during recovery packet conservation may go lower;
//! * after any ACK in ProbeRTT, `cwnd <= cwnd_min_target` packets;
//! * after any ACK, the gains are the mode's (`bbr_update_gains`): Startup 2/ln 2, Drain
//!   ln 2/2 (pacing) with cwnd gain 2/ln 2, ProbeBW one of the cycle's
//!   pacing gains with cwnd gain 2, ProbeRTT 1 and 1.
//!
//! BBRv3 (§5.6.4):
//! * once an ACK of data has been processed, and until an RTO, `cwnd >=
//!   MinPipeCwnd` (4 segments): `SetCwnd` floors it there, loss events do
//!   not touch it and `RestoreCwnd` only raises it;
//! * after an ACK of data in ProbeRTT, `cwnd <= ProbeRTTCwnd()` (§5.6.4.5);
//! * after an ACK of data, `cwnd <= max(inflight_shortterm, MinPipeCwnd)`,
//!   and in ProbeBW DOWN / REFILL / UP `cwnd <= max(inflight_longterm,
//!   MinPipeCwnd)` (§5.6.4.7 `BoundCwndForModel`);
//! * the gains are always the §5.6.1 table's for the state (checked after
//!   every event and every ACK).

use l4slab_cc::testing::Driver;
use l4slab_cc::{
    AckEvent, Bbr, Bbr3, Bbr3Config, BbrConfig, CcCtx, CcMetrics, CongestionControl,
    CongestionEvent,
};
use l4slab_core::{Dur, Rate, Time, TraceEvent};
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
    /// Idle time, up to 12 s: long enough to expire the min-RTT filter
    /// (v1: 10 s; v3: ProbeRTTInterval 5 s) and enter ProbeRTT.
    Advance(u64),
    SetRttMs(u64),
    /// Cap the delivery rate rounds report, in Mbit/s (`None` = window/RTT).
    RateCap(Option<u64>),
    /// This many full rounds, each only taken while the window is small
    /// (bounded work).
    Rounds(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u64..200_000).prop_map(|bytes| Op::Ack { bytes }),
        1 => any::<bool>().prop_map(Op::AppLimited),
        2 => (1u64..20_000, any::<bool>()).prop_map(|(bytes, first)| Op::Lose { bytes, first }),
        1 => Just(Op::Rto),
        1 => Just(Op::EcnEcho),
        2 => Just(Op::RecoveryEnd),
        1 => proptest::option::of(0u64..1_000_000).prop_map(Op::SetFlight),
        1 => (0u64..12_000_000_000).prop_map(Op::Advance),
        1 => (1u64..300).prop_map(Op::SetRttMs),
        1 => proptest::option::of(1u64..100).prop_map(Op::RateCap),
        5 => (1usize..6).prop_map(Op::Rounds),
    ]
}

/// Applies `op`; returns the bytes it acknowledged (0 for non-ACK events).
fn apply<C: CongestionControl>(d: &mut Driver<C>, op: &Op, mss: u64) -> u64 {
    let before = d.delivered();
    match *op {
        Op::Ack { bytes } => {
            d.ack(bytes);
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
        Op::SetRttMs(ms) => {
            d.rtt = Dur::from_millis(ms);
        }
        Op::RateCap(mbit) => {
            d.delivery_rate_cap(mbit.map(|m| Rate::from_bps(m * 1_000_000)));
        }
        Op::Rounds(n) => {
            for _ in 0..n {
                if d.cc.cwnd() / mss <= 256 {
                    d.send_and_ack_rounds(1);
                }
            }
        }
    }
    d.delivered() - before
}

/// A controller that records its metrics after every ACK, with what the ACK
/// reported, so that the per-ACK invariants are checked inside rounds too.
#[derive(Debug)]
struct PerAck<C> {
    cc: C,
    acks: Vec<Acked>,
}

/// One ACK as the controller saw it and its metrics after it.
#[derive(Debug)]
struct Acked {
    bytes: u64,
    in_flight: u64,
    m: CcMetrics,
}

impl<C: CongestionControl> PerAck<C> {
    fn new(cc: C) -> Self {
        PerAck {
            cc,
            acks: Vec::new(),
        }
    }
}

impl<C: CongestionControl> CongestionControl for PerAck<C> {
    fn name(&self) -> &'static str {
        self.cc.name()
    }
    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, ctx: &mut CcCtx<'_>) {
        self.cc.on_packet_sent(now, bytes, in_flight, ctx);
    }
    fn on_ack(&mut self, now: Time, ack: &AckEvent, ctx: &mut CcCtx<'_>) {
        self.cc.on_ack(now, ack, ctx);
        self.acks.push(Acked {
            bytes: ack.acked_bytes,
            in_flight: ack.in_flight,
            m: self.cc.metrics(),
        });
    }
    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, ctx: &mut CcCtx<'_>) {
        self.cc.on_congestion(now, ev, ctx);
    }
    fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    fn pacing_rate(&self) -> Option<Rate> {
        self.cc.pacing_rate()
    }
    fn states(&self) -> &'static [&'static str] {
        self.cc.states()
    }
    fn metrics(&self) -> CcMetrics {
        self.cc.metrics()
    }
}

/// Whether `op` reaches the controller (which then starts: `ensure_started`).
fn calls_controller(op: &Op) -> bool {
    matches!(
        op,
        Op::Ack { .. } | Op::Lose { .. } | Op::Rto | Op::EcnEcho | Op::RecoveryEnd | Op::Rounds(_)
    )
}

/// The traced changes since index `from`, as `(from, to)` pairs.
fn changes_since<C>(d: &Driver<C>, from: usize) -> Vec<(&'static str, &'static str)> {
    d.tracer.0[from..]
        .iter()
        .filter_map(|(_, ev)| match ev {
            TraceEvent::CcStateChanged { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

/// `tcp_bbr.c`: STARTUP → DRAIN → PROBE_BW, any other mode → PROBE_RTT,
/// PROBE_RTT → PROBE_BW or STARTUP (`bbr_reset_mode`).
fn v1_edge(from: &str, to: &str) -> bool {
    matches!(
        (from, to),
        ("Startup", "Drain")
            | ("Drain", "ProbeBW")
            | ("Startup" | "Drain" | "ProbeBW", "ProbeRTT")
            | ("ProbeRTT", "ProbeBW" | "Startup")
    )
}

/// draft-ietf-ccwg-bbr-06 §5.1.1.
fn v3_edge(from: &str, to: &str) -> bool {
    matches!(
        (from, to),
        ("Startup", "Drain")
            | ("Drain", "ProbeBW_DOWN")
            | ("ProbeBW_DOWN", "ProbeBW_CRUISE" | "ProbeBW_REFILL")
            | ("ProbeBW_CRUISE", "ProbeBW_REFILL")
            | ("ProbeBW_REFILL", "ProbeBW_UP")
            | ("ProbeBW_UP", "ProbeBW_DOWN")
            | ("ProbeRTT", "ProbeBW_DOWN" | "Startup")
    ) || (to == "ProbeRTT" && from != "ProbeRTT")
}

fn extra(m: &CcMetrics, key: &str) -> f64 {
    m.extra
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("metric {key}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bbr_v1_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(536), 100u64..9000],
        iw in 1u64..20,
        rtt_ms in 1u64..200,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let cfg = BbrConfig { mss, initial_window_segments: iw, ..BbrConfig::default() };
        let (min_cwnd, unit) = (cfg.cwnd_min_target * mss, 256.0);
        let high = f64::from(cfg.high_gain) / unit;
        let drain = f64::from(cfg.drain_gain) / unit;
        let cycle: Vec<f64> = cfg.pacing_gain_cycle.iter().map(|g| f64::from(*g) / unit).collect();
        let probe_bw_cwnd_gain = f64::from(cfg.cwnd_gain) / unit;
        let mut d = Driver::new(PerAck::new(Bbr::new(cfg))).mss(mss).rtt(Dur::from_millis(rtt_ms));
        // Linux icsk_ca_state as BBR sees it: Recovery from the first loss of
        // an episode (if Open), Loss from an RTO, Open again at RecoveryEnd.
        let mut open = true;
        // Open at the last ACK of data (BBR's prev_ca): no restore pending.
        let mut open_at_last_ack = true;
        let mut started = false;
        let mut peak = d.cc.cwnd();
        let (mut state, mut traced) = (d.cc.metrics().state, 0);
        for op in &ops {
            let (before, state_before) = (d.cc.cwnd(), state);
            let no_restore = open && open_at_last_ack;
            apply(&mut d, op, mss);
            let changes = changes_since(&d, traced);
            traced = d.tracer.0.len();
            match op {
                Op::Lose { first: true, .. } => open = false,
                Op::Rto => { open = false; open_at_last_ack = false; }
                Op::RecoveryEnd => open = true,
                _ => {}
            }
            started |= calls_controller(op);
            let m = d.cc.metrics();
            prop_assert_eq!(m.cwnd, d.cc.cwnd());
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 SMSS", m.cwnd);
            if started {
                let rate = d.cc.pacing_rate().expect("BBR paces");
                prop_assert!(rate.as_bps() > 0, "pacing rate 0 after {:?}", op);
            }
            for (from, to) in &changes {
                prop_assert_eq!(*from, state);
                prop_assert!(v1_edge(from, to), "illegal edge {} -> {}", from, to);
                state = to;
            }
            prop_assert_eq!(state, m.state);
            // After every ACK (data or not, inside rounds too), in order.
            let (mut prev, mut prev_state, mut no_restore) = (before, state_before, no_restore);
            for a in d.cc.acks.drain(..) {
                if a.bytes > 0 {
                    let left_probe_rtt = prev_state == "ProbeRTT" && a.m.state != "ProbeRTT";
                    let from = if left_probe_rtt || !no_restore { peak.max(prev) } else { prev };
                    let mut cap = from.max(min_cwnd) + a.bytes;
                    if !open || !no_restore {
                        // Packet conservation in the first round of recovery:
                        // cwnd = in_flight + acked (what the ACK reported).
                        cap = cap.max(a.in_flight + a.bytes);
                    }
                    prop_assert!(
                        a.m.cwnd <= cap,
                        "cwnd {} -> {} on an ACK of {} bytes ({:?})", prev, a.m.cwnd, a.bytes, op
                    );
                    if open {
                        prop_assert!(a.m.cwnd >= min_cwnd, "cwnd {} < {} after {:?}", a.m.cwnd, min_cwnd, op);
                    }
                    open_at_last_ack = open;
                    no_restore = open;
                }
                if a.m.state == "ProbeRTT" {
                    prop_assert!(a.m.cwnd <= min_cwnd, "ProbeRTT cwnd {}", a.m.cwnd);
                }
                let (pg, cg) = (extra(&a.m, "pacing_gain"), extra(&a.m, "cwnd_gain"));
                match a.m.state {
                    "Startup" => prop_assert_eq!((pg, cg), (high, high)),
                    "Drain" => prop_assert_eq!((pg, cg), (drain, high)),
                    "ProbeBW" => {
                        prop_assert!(cycle.contains(&pg), "ProbeBW pacing gain {}", pg);
                        prop_assert_eq!(cg, probe_bw_cwnd_gain);
                    }
                    "ProbeRTT" => prop_assert_eq!((pg, cg), (1.0, 1.0)),
                    other => prop_assert!(false, "unknown state {}", other),
                }
                peak = peak.max(a.m.cwnd);
                (prev, prev_state) = (a.m.cwnd, a.m.state);
            }
            peak = peak.max(m.cwnd);
        }
    }

    #[test]
    fn bbr_v3_invariants_hold(
        mss in prop_oneof![Just(1448u64), Just(536), 100u64..9000],
        iw in 1u64..20,
        rtt_ms in 1u64..200,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let cfg = Bbr3Config { mss, initial_window_segments: iw, ..Bbr3Config::default() };
        let min_pipe = cfg.min_pipe_cwnd_segments * mss;
        let gains = cfg.clone();
        let mut d = Driver::new(PerAck::new(Bbr3::new(cfg))).mss(mss).rtt(Dur::from_millis(rtt_ms));
        // An ACK of data has set the MinPipeCwnd floor, and no RTO came since.
        let mut floored = false;
        let mut started = false;
        let mut peak = d.cc.cwnd();
        let (mut state, mut traced) = (d.cc.metrics().state, 0);
        for op in &ops {
            let (before, state_before) = (d.cc.cwnd(), state);
            let acked = apply(&mut d, op, mss);
            let changes = changes_since(&d, traced);
            traced = d.tracer.0.len();
            let is_ack = matches!(op, Op::Ack { .. } | Op::Rounds(_)) && acked > 0;
            floored = (floored || is_ack) && !matches!(op, Op::Rto);
            started |= calls_controller(op);
            let m = d.cc.metrics();
            prop_assert_eq!(m.cwnd, d.cc.cwnd());
            prop_assert!(m.cwnd >= mss, "cwnd {} < 1 SMSS", m.cwnd);
            if floored {
                prop_assert!(m.cwnd >= min_pipe, "cwnd {} < MinPipeCwnd {} after {:?}", m.cwnd, min_pipe, op);
            }
            if started {
                let rate = d.cc.pacing_rate().expect("BBR paces");
                prop_assert!(rate.as_bps() > 0, "pacing rate 0 after {:?}", op);
            }
            for (from, to) in &changes {
                prop_assert_eq!(*from, state);
                prop_assert!(v3_edge(from, to), "illegal edge {} -> {}", from, to);
                state = to;
            }
            prop_assert_eq!(state, m.state);
            prop_assert_eq!(state, d.cc.cc.mode_name());
            let acks: Vec<Acked> = d.cc.acks.drain(..).collect();
            for a in acks.iter().map(|a| &a.m).chain([&m]) {
                let (pg, cg) = (extra(a, "pacing_gain"), extra(a, "cwnd_gain"));
                let want = match a.state {
                    "Startup" => (gains.startup_pacing_gain, gains.default_cwnd_gain),
                    "Drain" => (gains.drain_pacing_gain, gains.default_cwnd_gain),
                    "ProbeBW_DOWN" => (gains.probe_down_pacing_gain, gains.default_cwnd_gain),
                    "ProbeBW_CRUISE" | "ProbeBW_REFILL" => (1.0, gains.default_cwnd_gain),
                    "ProbeBW_UP" => (gains.probe_up_pacing_gain, gains.probe_up_cwnd_gain),
                    "ProbeRTT" => (1.0, gains.probe_rtt_cwnd_gain),
                    other => { prop_assert!(false, "unknown state {}", other); unreachable!() }
                };
                prop_assert_eq!((pg, cg), want, "gains in {}", a.state);
            }
            // Each ACK of data raises cwnd by at most what it acknowledged,
            // except the one that ends ProbeRTT (RestoreCwnd: back to the
            // saved cwnd, which was seen before, possibly inside this op).
            let (mut prev, mut prev_state) = (before, state_before);
            for a in &acks {
                if a.bytes > 0 {
                    let left_probe_rtt = prev_state == "ProbeRTT" && a.m.state != "ProbeRTT";
                    let from = if left_probe_rtt { peak.max(prev) } else { prev };
                    prop_assert!(
                        a.m.cwnd <= from.max(min_pipe) + a.bytes,
                        "cwnd {} -> {} on an ACK of {} bytes ({:?})", prev, a.m.cwnd, a.bytes, op
                    );
                }
                peak = peak.max(a.m.cwnd);
                (prev, prev_state) = (a.m.cwnd, a.m.state);
            }
            if is_ack {
                if m.state == "ProbeRTT" {
                    prop_assert!(m.cwnd <= d.cc.cc.probe_rtt_cwnd(), "ProbeRTT cwnd {} > {}", m.cwnd, d.cc.cc.probe_rtt_cwnd());
                }
                if let Some(lo) = d.cc.cc.inflight_shortterm() {
                    prop_assert!(m.cwnd <= lo.max(min_pipe), "cwnd {} > inflight_shortterm {}", m.cwnd, lo);
                }
                if let (Some(hi), Some(phase)) = (d.cc.cc.inflight_longterm(), d.cc.cc.probe_bw_phase()) {
                    if phase != l4slab_cc::bbr::ProbeBwPhase::Cruise {
                        prop_assert!(m.cwnd <= hi.max(min_pipe), "cwnd {} > inflight_longterm {} in {}", m.cwnd, hi, m.state);
                    }
                }
            }
            peak = peak.max(m.cwnd);
        }
    }
}
