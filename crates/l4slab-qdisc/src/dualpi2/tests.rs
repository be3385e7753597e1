//! DualPI2 timelines through [`Harness`]: classifier, PI2 update, coupling,
//! the 2-MTU rule, step/ramp, overload, drop placement, PI input, scheduling.

use super::*;
use crate::testing::Harness;
use l4slab_core::{Ecn, MarkReason, TraceEvent};

const MS: Dur = Dur::from_millis(1);

fn ms(n: u64) -> Dur {
    Dur::from_millis(n)
}

fn dualpi2(cfg: DualPi2Config) -> Harness<DualPi2> {
    Harness::new(DualPi2::new(cfg))
}

fn pkt(id: u64, flow: u32, ecn: Ecn) -> Packet {
    Packet::new(id, flow, 1500, ecn)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-12)
}

/// (packet id, subqueue) of every packet sent so far.
fn served(h: &Harness<DualPi2>) -> Vec<(u64, u8)> {
    let subs = h.tracer.0.iter().filter_map(|(_, e)| match e {
        TraceEvent::Dequeued { subqueue, .. } => Some(*subqueue),
        _ => None,
    });
    h.sent.iter().map(|p| p.id).zip(subs).collect()
}

fn xstat(h: &Harness<DualPi2>, key: &str) -> f64 {
    h.q.xstats()
        .into_iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no xstat {key}"))
        .1
}

#[test]
fn classifier_l4s_codepoints_to_l_the_rest_to_c() {
    let mut h = dualpi2(DualPi2Config::default());
    assert_eq!(h.q.subqueue_names(), ["c", "l"]);
    for (id, ecn) in [
        (0, Ecn::NotEct),
        (1, Ecn::Ect1),
        (2, Ecn::Ect0),
        (3, Ecn::Ce),
    ] {
        h.offer_pkt(pkt(id, 1, ecn));
    }
    h.drain_ids();
    // WRR starts with L (negative credit): ECT(1) and CE first, on subqueue 1.
    assert_eq!(served(&h), [(1, 1), (3, 1), (0, 0), (2, 0)]);
    assert_eq!(xstat(&h, "packets_in_l"), 2.0);
    assert_eq!(xstat(&h, "packets_in_c"), 2.0);
    h.check_accounting();
}

#[test]
fn any_ect_sends_ect0_to_l() {
    let mut h = dualpi2(DualPi2Config {
        ecn_mask: EcnMask::AnyEct,
        ..DualPi2Config::default()
    });
    h.offer_pkt(pkt(0, 1, Ecn::NotEct));
    h.offer_pkt(pkt(1, 1, Ecn::Ect0));
    h.drain_ids();
    assert_eq!(served(&h), [(1, 1), (0, 0)]);
}

#[test]
fn l_flows_put_chosen_non_ecn_flows_in_l() {
    let mut h = dualpi2(DualPi2Config {
        l_flows: vec![7],
        llll_flows: vec![8],
        ..DualPi2Config::default()
    });
    h.offer_pkt(pkt(0, 1, Ecn::NotEct));
    h.offer_pkt(pkt(1, 7, Ecn::NotEct)); // e.g. DNS
    h.offer_pkt(pkt(2, 8, Ecn::NotEct));
    h.drain_ids();
    assert_eq!(served(&h), [(1, 1), (2, 1), (0, 0)]);
}

#[test]
fn pi_update_arithmetic_with_linux_defaults() {
    let mut h = dualpi2(DualPi2Config::default());
    let (alpha, beta) = (41.0 / 256.0, 819.0 / 256.0);
    h.offer_pkt(pkt(0, 1, Ecn::NotEct)); // C head from t = 0
    assert_eq!(h.q.next_timer(), Some(Time::from_millis(16)));
    h.advance(ms(16));
    // qdelay 16 ms, previous 0: alpha * (0.016 - 0.015) + beta * 0.016.
    let p1 = alpha * 0.001 + beta * 0.016;
    assert!(close(h.q.prob, p1), "{} vs {p1}", h.q.prob);
    h.advance(ms(16));
    // qdelay 32 ms, previous 16 ms.
    let p2 = p1 + alpha * 0.017 + beta * 0.016;
    assert!(close(h.q.prob, p2));
    assert_eq!(xstat(&h, "delay_c_ms"), 32.0);
    // Queue empty from now: the proportional term takes back beta * 0.032,
    // the integral term alpha * target per update (p3 = 4.8e-4).
    h.drain_ids();
    h.advance(ms(16));
    let p3 = p2 + alpha * -0.015 + beta * -0.032;
    assert!(close(h.q.prob, p3));
    // p3 - alpha * target < 0: clamped at zero.
    h.advance(ms(16));
    assert_eq!(h.q.prob, 0.0);
}

#[test]
fn coupled_probabilities_in_xstats() {
    let mut h = dualpi2(DualPi2Config::default());
    h.q.prob = 0.3;
    assert!(close(xstat(&h, "p_c"), 0.09)); // p_C = p'^2
    assert!(close(xstat(&h, "p_cl"), 0.6)); // p_CL = k p'
    h.q.prob = 0.7;
    assert_eq!(xstat(&h, "p_cl"), 1.0); // min(k p', 1)
    let keys: Vec<_> = h.q.xstats().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "prob",
            "p_c",
            "p_cl",
            "delay_c_ms",
            "delay_l_ms",
            "packets_in_c",
            "packets_in_l",
            "credit",
            "step_marks",
            "ecn_mark",
            "maxq"
        ]
    );
}

#[test]
fn no_aqm_action_below_two_mtu_of_backlog() {
    let mut h = dualpi2(DualPi2Config::default());
    h.q.prob = 1.0;
    // Two packets: on each dequeue the rest of the backlog is < 3000 B.
    h.offer(0, 1500);
    h.offer(1, 1500);
    assert_eq!(h.drain_ids(), [0, 1]);
    assert!(h.dropped.is_empty());
    // Three: the first leaves 3000 B behind and is dropped at p' = 1.
    for i in 2..5 {
        h.offer(i, 1500);
    }
    assert_eq!(h.drain_ids(), [3, 4]);
    assert_eq!(h.dropped_ids(), [2]);
    assert_eq!(h.drops(DropReason::AqmDrop), 1);
    // The 2-MTU rule counts both queues: one C packet behind an L packet.
    let mut h = dualpi2(DualPi2Config::default());
    h.q.prob = 0.4; // k p' = 0.8 < 1: no overload
    h.offer_pkt(pkt(0, 1, Ecn::Ect1));
    h.offer_pkt(pkt(1, 1, Ecn::Ect1));
    h.offer(2, 1500);
    h.offer(3, 1500);
    let mut rng_probe = h.rng.clone();
    h.dequeue(); // L packet 0; 4500 B left: coupled roll
    assert_ne!(h.rng.next_u64(), rng_probe.next_u64(), "rolled");
    h.check_accounting();
}

#[test]
fn step_marks_above_the_time_threshold() {
    let mut h = dualpi2(DualPi2Config::default());
    for i in 0..4 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.advance(MS);
    h.dequeue(); // sojourn exactly 1 ms: not above
    h.advance(Dur::from_micros(1));
    h.dequeue(); // 1.001 ms: marked
    h.dequeue();
    assert_eq!(h.sent[0].ecn, Ecn::Ect1);
    assert_eq!(h.sent[1].ecn, Ecn::Ce);
    assert_eq!(h.sent[2].ecn, Ecn::Ce);
    assert_eq!(h.marks(MarkReason::Step), 2);
    assert_eq!(xstat(&h, "step_marks"), 2.0);
    assert_eq!(xstat(&h, "ecn_mark"), 2.0);
    h.check_accounting();
}

/// `l_sojourn = "service"`: an A-MPDU's wait for the air is not marked; a
/// packet a full burst left behind is, from that burst on.
#[test]
fn service_sojourn_marks_what_a_burst_left_behind() {
    let service = || {
        dualpi2(DualPi2Config {
            l_sojourn: LSojourn::Service,
            ..DualPi2Config::default()
        })
    };
    // Linux: a packet that waited 5 ms for the air is step-marked.
    let mut h = dualpi2(DualPi2Config::default());
    h.offer_pkt(pkt(0, 1, Ecn::Ect1));
    h.advance(ms(5));
    h.dequeue();
    assert_eq!(h.sent[0].ecn, Ecn::Ce);
    // Service: the same packet, carried by the first burst after it, is not.
    let mut h = service();
    h.offer_pkt(pkt(0, 1, Ecn::Ect1));
    h.advance(ms(5));
    h.dequeue();
    assert_eq!(h.sent[0].ecn, Ecn::Ect1);
    // Three at 0; the burst at 5 ms takes one (its A-MPDU is full); packet 3
    // arrives at 6 ms; the burst at 10 ms takes the rest: packets 1 and 2
    // count 5 ms (from the burst that left them: marked), packet 3 nothing.
    let mut h = service();
    for i in 0..3 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.advance(ms(5));
    h.dequeue();
    h.advance(ms(1));
    h.offer_pkt(pkt(3, 1, Ecn::Ect1));
    h.advance(ms(4));
    assert_eq!(h.drain_ids(), [1, 2, 3]);
    let ce: Vec<bool> = h.sent.iter().map(|p| p.ecn == Ecn::Ce).collect();
    assert_eq!(ce, [false, true, true, false]);
    assert_eq!(h.marks(MarkReason::Step), 2);
    // The onset is the threshold: left behind by a burst 1 ms before the
    // next, not marked (1 ms is not above 1 ms); 1.001 ms, marked.
    for (gap_us, marked) in [(1000, false), (1001, true)] {
        let mut h = service();
        h.offer_pkt(pkt(0, 1, Ecn::Ect1));
        h.offer_pkt(pkt(1, 1, Ecn::Ect1));
        h.advance(ms(3));
        h.dequeue();
        h.advance(Dur::from_micros(gap_us));
        h.dequeue();
        assert_eq!(h.sent[1].ecn == Ecn::Ce, marked, "{gap_us} us");
    }
    h.check_accounting();
}

#[test]
fn step_in_packets_and_min_qlen_step() {
    let mut h = dualpi2(DualPi2Config {
        l_aqm: LAqm::Step {
            thresh: StepThresh::Packets(2),
            min_qlen_step: 0,
        },
        ..DualPi2Config::default()
    });
    for i in 0..5 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.drain_ids();
    // L lengths left behind: 4, 3, 2, 1, 0 -> marked while > 2.
    let ce: Vec<bool> = h.sent.iter().map(|p| p.ecn == Ecn::Ce).collect();
    assert_eq!(ce, [true, true, false, false, false]);

    // min_qlen_step 3: only packets that found >= 3 in L are stepped.
    let mut h = dualpi2(DualPi2Config {
        l_aqm: LAqm::Step {
            thresh: StepThresh::Time(MS),
            min_qlen_step: 3,
        },
        ..DualPi2Config::default()
    });
    for i in 0..5 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.advance(ms(5));
    h.drain_ids();
    let ce: Vec<bool> = h.sent.iter().map(|p| p.ecn == Ecn::Ce).collect();
    assert_eq!(ce, [false, false, false, true, true]);
}

#[test]
fn not_ect_in_l_above_the_step_is_dropped() {
    let mut h = dualpi2(DualPi2Config {
        l_flows: vec![7],
        ..DualPi2Config::default()
    });
    h.offer_pkt(pkt(0, 7, Ecn::NotEct));
    h.offer_pkt(pkt(1, 7, Ecn::NotEct));
    h.advance(ms(2));
    assert_eq!(h.drain_ids(), Vec::<u64>::new());
    assert_eq!(h.drops(DropReason::StepNonEct), 2);
    // The LLLL class is never stepped.
    let mut h = dualpi2(DualPi2Config {
        llll_flows: vec![8],
        ..DualPi2Config::default()
    });
    h.offer_pkt(pkt(0, 8, Ecn::NotEct));
    h.advance(ms(2));
    assert_eq!(h.drain_ids(), [0]);
    h.check_accounting();
}

#[test]
fn rfc_ramp_marks_in_proportion() {
    let mut h = dualpi2(DualPi2Config {
        l_aqm: LAqm::RFC_RAMP,
        ..DualPi2Config::default()
    });
    for i in 0..2001 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    // Every packet leaves after 1.0 ms: halfway up the 0.8..1.2 ms ramp.
    h.q.next_update = Time::MAX;
    h.advance(MS);
    for _ in 0..2000 {
        h.dequeue();
    }
    let marks = h.marks(MarkReason::Step);
    assert!((900..1100).contains(&marks), "{marks} of 2000");
    // Th_len: the last packet is alone in L: not marked however late.
    h.advance(ms(5));
    let last = h.dequeue().unwrap();
    assert_eq!(last.ecn, Ecn::Ect1);
    // At maxTh and above (with company): always.
    for i in 0..3 {
        h.offer_pkt(pkt(10_000 + i, 1, Ecn::Ect1));
    }
    h.advance(Dur::from_micros(1200));
    assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce);
    assert_eq!(h.dequeue().unwrap().ecn, Ecn::Ce);
    h.check_accounting();
}

#[test]
fn overload_drops_ecn_capable_classic_packets() {
    let mut h = dualpi2(DualPi2Config::default());
    h.q.prob = 0.6; // k p' = 1.2 > 1
    h.q.next_update = Time::MAX;
    for i in 0..2000 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect0));
    }
    h.drain_ids();
    assert_eq!(h.total_marks(), 0, "overload disables ECN in C");
    let drops = h.drops(DropReason::Overload);
    // p_C = 0.36, while at least 2 MTU remain.
    assert!((640..800).contains(&drops), "{drops}");
    h.check_accounting();

    // L4S packets: the same p'^2 drops, every survivor marked.
    let mut h = dualpi2(DualPi2Config::default());
    h.q.prob = 0.6;
    h.q.next_update = Time::MAX;
    for i in 0..2000 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.drain_ids();
    let s = h.q.stats();
    assert!((640..800).contains(&h.drops(DropReason::Overload)));
    // All but the last two (under 2 MTU) are marked.
    assert_eq!(h.marks(MarkReason::Coupled), s.sent - 2);
}

#[test]
fn overflow_mode_caps_p_at_one_over_k() {
    let mut h = dualpi2(DualPi2Config {
        drop_on_overload: false,
        ..DualPi2Config::default()
    });
    for i in 0..100 {
        h.offer_pkt(pkt(i, 1, Ecn::Ect1));
    }
    h.advance(Dur::from_secs(2)); // a 2 s standing queue
    assert_eq!(h.q.prob, 0.5);
    // k p' = 1: every L packet marked, none dropped.
    h.drain_ids();
    assert!(h.dropped.is_empty());
    assert_eq!(h.marks(MarkReason::Coupled), 98);
}

#[test]
fn drop_enqueue_moves_the_pi_drop_to_enqueue() {
    let mut h = dualpi2(DualPi2Config {
        drop_enqueue: true,
        ..DualPi2Config::default()
    });
    h.q.prob = 1.0;
    h.offer(0, 1500);
    h.offer(1, 1500);
    h.offer(2, 1500); // 3000 B queued: p' = 1 drops it
    assert_eq!(h.dropped_ids(), [2]);
    assert_eq!(h.q.stats().dropped_at_enqueue, 1);
    assert_eq!(h.drain_ids(), [0, 1]);
    assert_eq!(h.q.stats().dropped_after_dequeue, 0);
    h.check_accounting();
}

#[test]
fn pi_input_max_of_both_or_classic_only() {
    for (input, rises) in [(PiInput::Max, true), (PiInput::C, false)] {
        let mut h = dualpi2(DualPi2Config {
            pi_input: input,
            ..DualPi2Config::default()
        });
        h.offer_pkt(pkt(0, 1, Ecn::Ect1)); // only the L queue holds a packet
        h.advance(ms(16));
        assert_eq!(h.q.prob > 0.0, rises, "{input:?}");
        assert_eq!(xstat(&h, "delay_l_ms"), 16.0);
    }
}

#[test]
fn wrr_long_run_byte_shares_under_saturation() {
    let mut h = dualpi2(DualPi2Config::default());
    h.q.next_update = Time::MAX; // p' stays 0: pure scheduling
    let mut id = 0;
    let (mut l_bytes, mut c_bytes) = (0u64, 0u64);
    for _ in 0..20_000 {
        // Keep both queues backlogged.
        while h.q.l.len() < 10 {
            h.offer_pkt(pkt(id, 1, Ecn::Ect1));
            id += 1;
        }
        while h.q.c.len() < 10 {
            h.offer_pkt(Packet::new(id, 2, 1000, Ecn::NotEct));
            id += 1;
        }
        let before = h.tracer.0.len();
        let p = h.dequeue().unwrap();
        let sub = h.tracer.0[before..].iter().find_map(|(_, e)| match e {
            TraceEvent::Dequeued { subqueue, .. } => Some(*subqueue),
            _ => None,
        });
        match sub {
            Some(1) => l_bytes += u64::from(p.len),
            _ => c_bytes += u64::from(p.len),
        }
    }
    let c_share = c_bytes as f64 / (l_bytes + c_bytes) as f64;
    assert!((c_share - 0.10).abs() < 0.002, "C byte share {c_share}");
    assert!(h.dropped.is_empty());
    h.check_accounting();
}

#[test]
fn ts_fifo_option_serves_by_shifted_age() {
    let cfg = DualPi2Config {
        scheduler: Scheduler::TsFifo {
            tshift: Scheduler::DEFAULT_TSHIFT,
        },
        ..DualPi2Config::default()
    };
    let mut h = dualpi2(cfg.clone());
    h.q.next_update = Time::MAX;
    h.offer(0, 1500); // C at 0 ms
    h.advance(ms(40));
    h.offer_pkt(pkt(1, 1, Ecn::Ect1)); // L at 40 ms: within 50 ms
    h.advance(MS);
    assert_eq!(h.dequeue().unwrap().id, 1);
    let mut h = dualpi2(cfg);
    h.q.next_update = Time::MAX;
    h.offer(0, 1500);
    h.advance(ms(60));
    h.offer_pkt(pkt(1, 1, Ecn::Ect1)); // L at 60 ms: C has waited > 50 ms longer
    assert_eq!(h.dequeue().unwrap().id, 0);
    assert_eq!(xstat(&h, "credit"), 0.0);
}

#[test]
fn limits_in_packets_and_memory() {
    let mut h = dualpi2(DualPi2Config {
        limit: 3,
        ..DualPi2Config::default()
    });
    h.offer(0, 100);
    h.offer_pkt(pkt(1, 1, Ecn::Ect1));
    h.offer(2, 100);
    h.offer_pkt(pkt(3, 1, Ecn::Ect1)); // 3 queued across both: tail drop
    assert_eq!(h.dropped_ids(), [3]);
    assert_eq!(xstat(&h, "maxq"), 2.0);
    let mut h = dualpi2(DualPi2Config {
        memory_limit: 3000,
        ..DualPi2Config::default()
    });
    h.offer(0, 1500);
    h.offer(1, 1500);
    h.offer(2, 1);
    assert_eq!(h.dropped_ids(), [2]);
    assert_eq!(h.drops(DropReason::Overlimit), 1);
    h.check_accounting();
}
