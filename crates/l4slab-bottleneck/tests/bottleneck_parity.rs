//! Parity of the two clocks around the bottleneck runtime.
//!
//! One recorded arrival sequence (times, sizes, ECN codepoints, flows, both
//! directions) is driven through a [`Bottleneck`] twice:
//!
//! * as the simulator's engine drives it: an event calendar that runs each
//!   direction exactly at its deadline, `advance` before every arrival and
//!   before every sample (`l4slab-sim/src/engine.rs`);
//! * as the emulator's forwarder drives it: a loop that sleeps until the
//!   earliest deadline and wakes up *late* (a fake clock adds up to 400 µs
//!   of scheduling delay), woken at once by a packet arriving (a fake TUN
//!   becoming readable); on each wake-up it advances both directions to
//!   `now`, samples when a sample is due (advancing to the sample's instant
//!   first), and enqueues the arrivals (`l4slab-emu/src/forwarder.rs`).
//!
//! Both must give identical per-packet decisions (drop with time and reason,
//! or departure with intended time and ECN field), identical queue
//! summaries and identical queue series, for qdiscs with timers and random
//! draws, sub-queues, flow queues, wire loss and an ECN path rewrite.

use std::collections::BTreeMap;

use l4slab_bottleneck::Bottleneck;
use l4slab_bottleneck::{DOWN, UP};
use l4slab_core::Rate;
use l4slab_core::{DropReason, Dur, Ecn, Packet, SeriesStore, SimRng, Time};
use l4slab_link::{Bernoulli, ConstantRate, EcnRewrite, Link, LossModel, NoLoss};
use l4slab_qdisc::{
    DualPi2, DualPi2Config, FqCodel, FqCodelConfig, FqPie, FqPieConfig, Pie, PieConfig, Qdisc,
};

/// One arrival: when, which direction, the packet.
#[derive(Clone, Copy)]
struct Arrival {
    at: Time,
    dir: usize,
    pkt: Packet,
}

/// What happened to a packet.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Dropped(Time, DropReason),
    Departed(Time, Ecn),
}

/// A bursty, overloaded mix: four flows, every ECN codepoint, sizes from
/// ACKs to full frames; 20 Mbit/s offered against a 10 Mbit/s link down.
fn arrivals(seed: u64) -> Vec<Arrival> {
    let mut rng = SimRng::derive(seed, "arrivals");
    let mut out = Vec::new();
    let mut t = [Time::ZERO; 2];
    let codepoints = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
    for id in 0..6_000u64 {
        let dir = if rng.chance(0.8) { DOWN } else { UP };
        // Bursts: most gaps short, some long.
        let gap_us = if rng.chance(0.1) {
            2_000 + rng.below(8_000)
        } else {
            rng.below(700)
        };
        t[dir] += Dur::from_micros(gap_us);
        let flow = rng.below(4) as u32;
        let len = if rng.chance(0.2) { 52 } else { 1_500 };
        let ecn = codepoints[rng.below(4) as usize];
        out.push(Arrival {
            at: t[dir],
            dir,
            pkt: Packet::new(id, flow, len, ecn),
        });
    }
    out.sort_by_key(|a| (a.at, a.pkt.id));
    out
}

fn bottleneck(qdisc: &dyn Fn() -> Box<dyn Qdisc>, loss: f64, rewrite: EcnRewrite) -> Bottleneck {
    let link = |mbps, name: &str| {
        let l: Box<dyn LossModel> = if loss > 0.0 {
            Box::new(Bernoulli::new(loss).unwrap())
        } else {
            Box::new(NoLoss)
        };
        let link = Link::new(
            qdisc(),
            Box::new(ConstantRate::new(Rate::from_mbps(mbps)).unwrap()),
            l,
            SimRng::derive(7, &format!("link/{name}/loss")),
            Dur::from_millis(10),
        )
        .with_ecn_rewrite(rewrite);
        (link, SimRng::derive(7, &format!("link/{name}/qdisc")))
    };
    Bottleneck::new([link(10, "down"), link(5, "up")], 4)
}

const SAMPLE: Dur = Dur::from_millis(50);

/// Builds a fresh qdisc for each direction and run.
type MakeQdisc = Box<dyn Fn() -> Box<dyn Qdisc>>;

struct Outcome {
    fates: BTreeMap<u64, Fate>,
    summary: serde_json::Value,
    series: Vec<(u64, String, String, u64)>,
}

fn collect(
    bn: &mut Bottleneck,
    dir: usize,
    departed: &mut Vec<(Time, Packet)>,
    fates: &mut BTreeMap<u64, Fate>,
) {
    for &(t, p, r) in bn.dropped(dir) {
        assert!(
            fates.insert(p.id, Fate::Dropped(t, r)).is_none(),
            "packet {} ended twice",
            p.id
        );
    }
    bn.clear_dropped(dir);
    for (at, p) in departed.drain(..) {
        assert!(
            fates.insert(p.id, Fate::Departed(at, p.ecn)).is_none(),
            "packet {} ended twice",
            p.id
        );
    }
}

fn finish(
    mut bn: Bottleneck,
    end: Time,
    mut fates: BTreeMap<u64, Fate>,
    store: SeriesStore,
) -> Outcome {
    let mut departed = Vec::new();
    for dir in [DOWN, UP] {
        bn.advance(dir, end, &mut departed);
        collect(&mut bn, dir, &mut departed, &mut fates);
    }
    bn.check_accounting();
    let series = (0..store.len())
        .map(|i| {
            (
                store.t_s[i].to_bits(),
                store.name(store.series[i]).to_owned(),
                store.name(store.key[i]).to_owned(),
                store.value[i].to_bits(),
            )
        })
        .collect();
    Outcome {
        fates,
        summary: bn.queues_json(end.saturating_since(Time::ZERO), &["a", "b", "c", "d"]),
        series,
    }
}

/// The simulator's way: a calendar, each direction run exactly at its deadline.
fn by_calendar(mut bn: Bottleneck, arrivals: &[Arrival], end: Time) -> Outcome {
    let mut fates = BTreeMap::new();
    let mut store = SeriesStore::default();
    let mut departed = Vec::new();
    let mut next = 0;
    let mut sample_at = Time::ZERO + SAMPLE;
    loop {
        let deadline = [DOWN, UP].map(|d| bn.next_deadline(d));
        let arrival = arrivals.get(next).map(|a| a.at);
        let t = [deadline[0], deadline[1], arrival, Some(sample_at)]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if t > end {
            break;
        }
        // At one instant: the sample (after everything due by then), then
        // the deadlines, then the arrival (after its direction ran to `t`).
        if sample_at == t {
            for d in [DOWN, UP] {
                bn.advance(d, t, &mut departed);
                collect(&mut bn, d, &mut departed, &mut fates);
            }
            bn.sample(t, t.as_secs_f64(), SAMPLE, &mut store);
            sample_at = t + SAMPLE;
            continue;
        }
        for d in [DOWN, UP] {
            if deadline[d] == Some(t) {
                bn.advance(d, t, &mut departed);
                collect(&mut bn, d, &mut departed, &mut fates);
            }
        }
        if arrival == Some(t) {
            let a = arrivals[next];
            next += 1;
            bn.advance(a.dir, t, &mut departed);
            collect(&mut bn, a.dir, &mut departed, &mut fates);
            bn.enqueue(a.dir, t, a.pkt);
            collect(&mut bn, a.dir, &mut departed, &mut fates);
        }
    }
    finish(bn, end, fates, store)
}

/// The emulator's way: sleep to the earliest deadline, wake up late (or at
/// once when a packet arrives), advance both directions to `now`.
fn by_late_loop(mut bn: Bottleneck, arrivals: &[Arrival], end: Time, seed: u64) -> Outcome {
    let mut fates = BTreeMap::new();
    let mut store = SeriesStore::default();
    let mut departed = Vec::new();
    let mut jitter = SimRng::derive(seed, "scheduler");
    let mut next = 0;
    let mut sample_at = Time::ZERO + SAMPLE;
    let mut now = Time::ZERO;
    while now <= end {
        // As Forwarder::run: the sample first (everything due by its instant),
        while now >= sample_at {
            for d in [DOWN, UP] {
                bn.advance(d, sample_at, &mut departed);
                collect(&mut bn, d, &mut departed, &mut fates);
            }
            bn.sample(sample_at, sample_at.as_secs_f64(), SAMPLE, &mut store);
            sample_at += SAMPLE;
        }
        // then both directions to `now`, then what the TUNs had to read.
        for d in [DOWN, UP] {
            bn.advance(d, now, &mut departed);
            collect(&mut bn, d, &mut departed, &mut fates);
        }
        while arrivals.get(next).is_some_and(|a| a.at == now) {
            let a = arrivals[next];
            next += 1;
            bn.enqueue(a.dir, now, a.pkt);
            collect(&mut bn, a.dir, &mut departed, &mut fates);
        }
        // Sleep: to the earliest deadline plus scheduling delay, unless a
        // packet arrives first (the TUN becomes readable).
        let deadline = [
            bn.next_deadline(DOWN),
            bn.next_deadline(UP),
            Some(sample_at),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        let woke = deadline.max(now) + Dur::from_micros(jitter.below(400));
        now = match arrivals.get(next) {
            Some(a) if a.at <= woke => a.at,
            _ => woke,
        };
    }
    finish(bn, end, fates, store)
}

#[test]
fn the_simulators_clock_and_the_emulators_loop_give_the_same_results() {
    let qdiscs: [(&str, MakeQdisc); 4] = [
        (
            "dualpi2",
            Box::new(|| Box::new(DualPi2::new(DualPi2Config::default()))),
        ),
        (
            "pie",
            Box::new(|| {
                Box::new(Pie::new(PieConfig {
                    ecn: true,
                    ..PieConfig::default()
                }))
            }),
        ),
        (
            "fq_codel",
            Box::new(|| Box::new(FqCodel::new(FqCodelConfig::default()))),
        ),
        (
            "fq_pie",
            Box::new(|| {
                Box::new(FqPie::new(FqPieConfig {
                    ecn: true,
                    ..FqPieConfig::default()
                }))
            }),
        ),
    ];
    for (name, qdisc) in &qdiscs {
        for (loss, rewrite) in [
            (0.0, EcnRewrite::None),
            (0.02, EcnRewrite::RemarkEct1ToEct0),
        ] {
            let arrivals = arrivals(3);
            // Long enough for every packet to end.
            let end = arrivals.last().unwrap().at + Dur::from_secs(5);
            let a = by_calendar(bottleneck(qdisc.as_ref(), loss, rewrite), &arrivals, end);
            let b = by_late_loop(
                bottleneck(qdisc.as_ref(), loss, rewrite),
                &arrivals,
                end,
                11,
            );
            let what = format!("{name}, loss {loss}, {rewrite:?}");
            let drops = a
                .fates
                .values()
                .filter(|f| matches!(f, Fate::Dropped(..)))
                .count();
            assert!(
                drops > 50,
                "{what}: the mix must overload the queue ({drops} drops)"
            );
            assert!(
                a.fates.len() > 5_000,
                "{what}: {} packets ended",
                a.fates.len()
            );
            let first_difference = a
                .fates
                .iter()
                .find(|(id, f)| b.fates.get(id) != Some(f))
                .map(|(id, f)| (id, f, b.fates.get(id)));
            assert_eq!(
                first_difference, None,
                "{what}: the same packet, another fate"
            );
            assert_eq!(a.fates.len(), b.fates.len(), "{what}");
            assert_eq!(a.summary, b.summary, "{what}: queue summaries");
            assert!(a.series.len() > 100, "{what}");
            let first = a.series.iter().zip(&b.series).position(|(x, y)| x != y);
            assert_eq!(
                first, None,
                "{what}: queue series differ from row {first:?}"
            );
            assert_eq!(a.series.len(), b.series.len(), "{what}: queue series rows");
        }
    }
}
