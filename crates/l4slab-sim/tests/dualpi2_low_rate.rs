//! DualPI2's step marking at low link rates (REFERENCES §6 B3): one Prague
//! (ECT(1), AccECN) and one CUBIC (Not-ECT) download share DualPI2 with
//! Linux's upstream defaults (1 ms time step) at 80 ms base RTT, at 10 and
//! at 50 Mbit/s, with the upstream step rule (`min_qlen_step = 0`: every L4S
//! packet may be step-marked) and the L4STeam rule (`min_qlen_step = 2`: only
//! packets that found at least 2 packets in the L queue).
//!
//! The mechanism: at 10 Mbit/s one 1500 B packet takes 1.2 ms to serialize,
//! so an L packet that arrives while a CUBIC packet is on the wire waits
//! longer than the 1 ms step even with an empty L queue. Linux measures the
//! sojourn from enqueue to dequeue, so that wait counts; with
//! `min_qlen_step = 0` such packets are step-marked. At 50 Mbit/s a packet
//! takes 0.24 ms and one packet ahead cannot trip the step.
//!
//! Setup fixed from the issue text before any run (10 Mbit/s, 80 ms, Linux
//! defaults; 50 Mbit/s for contrast); the buffer is sch_dualpi2's default
//! limit (10000 packets), as in the l4s-building-blocks study.
//!
//! Seeds 1-6, and the assertions are on the median over them. The first
//! run (seed 1 alone) showed a second, separate effect: in some seeds,
//! with either rule (at 10 Mbit/s seed 1 with `0` for the whole run, seed
//! 3 with `2` for part of it), CUBIC's slow-start overshoot
//! drives PI2 above overload (k p' > 1) and it stays there; Prague's ECT
//! packets are then dropped with p'^2 and it dies in RTO backoff (ratio
//! ~0.001). That start-up lock-in is not the step mechanism, so one seed
//! would measure the wrong thing; it is printed (`overload` drops, RTOs)
//! and documented in docs/models/dualpi2.md, not asserted. (No seed has
//! shown it since Linux loss recovery, commit 6fc7ef7.) Published
//! comparison (Heist & Morton's testbed, L4STeam sch_dualpi2): Prague at
//! about 1.7 x CUBIC's rate. Measured figures are printed and recorded in
//! docs/models/dualpi2.md ("Step marking at low rates"):
//!
//! ```text
//! cargo test --release -p l4slab-sim --test dualpi2_low_rate -- --nocapture
//! ```

mod common;

use common::{f64_of, run_toml};
use l4slab_sim::RunOutput;

/// Prague + CUBIC through DualPI2 at `rate`, 80 ms base RTT, `min_qlen_step`.
/// 90 s: at 80 ms a CUBIC congestion epoch lasts seconds, so the 60 s after
/// a 30 s warm-up average several of them.
fn scenario(rate: &str, min_qlen_step: u32) -> String {
    format!(
        r#"
format = 1
duration = "90s"
[bottleneck]
rate = "{rate}"
delay = "40ms"
buffer = "10000pkt"
qdisc = {{ kind = "dualpi2", min_qlen_step = {min_qlen_step} }}
[[flows]]
name = "prague"
cc = "prague"
[[flows]]
name = "cubic"
cc = "cubic"
"#
    )
}

const WARM_S: f64 = 30.0;

/// Mean of a flow's 100 ms goodput samples after the warm-up, bit/s.
fn goodput_after(out: &RunOutput, name: &str) -> f64 {
    let s = &out.series;
    let key = format!("flow/{name}");
    let v: Vec<f64> = (0..s.len())
        .filter(|&i| {
            s.t_s[i] > WARM_S && s.name(s.series[i]) == key && s.name(s.key[i]) == "goodput_bps"
        })
        .map(|i| s.value[i])
        .collect();
    assert!(!v.is_empty(), "no goodput samples for {name}");
    v.iter().sum::<f64>() / v.len() as f64
}

struct Measured {
    ratio: f64,
    step_share: f64,
}

fn measure(rate: &str, min_qlen_step: u32, seed: u64) -> Measured {
    let seed_set = format!("seed={seed}");
    let out = run_toml(&scenario(rate, min_qlen_step), &[seed_set.as_str()]);
    let q = &out.summary["queues"]["bottleneck.down"];
    let marks = &q["marks"];
    let n = |k: &str| marks[k].as_u64().unwrap_or(0);
    // CUBIC is Not-ECT (dropped, never marked), so every mark is on a
    // Prague packet: the L queue's step and coupled marks.
    assert_eq!(n("aqm"), 0, "{marks}");
    let (step, coupled) = (n("step"), n("coupled"));
    assert_eq!(step + coupled, n("total"), "{marks}");
    assert!(step + coupled > 0, "no marks: {marks}");
    let (p, c) = (goodput_after(&out, "prague"), goodput_after(&out, "cubic"));
    let l = &q["subqueues"]["l"]["sojourn_ms"];
    let m = Measured {
        ratio: p / c,
        step_share: step as f64 / (step + coupled) as f64,
    };
    println!(
        "{rate} min_qlen_step={min_qlen_step} seed {seed}: after {WARM_S} s prague {:.2} cubic {:.2} Mbit/s \
         (ratio {:.3}); marks step {step} coupled {coupled} (step share {:.3}); L sojourn p50 {:.3} \
         p99 {:.3} ms; drops aqm {} overload {}; RTOs prague {} cubic {}",
        p / 1e6,
        c / 1e6,
        m.ratio,
        m.step_share,
        f64_of(&l["p50"]),
        f64_of(&l["p99"]),
        q["drops"]["aqm"],
        q["drops"]["overload"],
        out.summary["flows"]["prague"]["rto_count"],
        out.summary["flows"]["cubic"]["rto_count"],
    );
    m
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median Prague/CUBIC ratio and median step-mark share over seeds 1-6.
fn medians(rate: &str, min_qlen_step: u32) -> (f64, f64) {
    let runs: Vec<Measured> = (1..=6).map(|s| measure(rate, min_qlen_step, s)).collect();
    let (r, st) = (
        median(runs.iter().map(|m| m.ratio).collect()),
        median(runs.iter().map(|m| m.step_share).collect()),
    );
    println!(
        "{rate} min_qlen_step={min_qlen_step}: median ratio {r:.3}, median step share {st:.3}"
    );
    (r, st)
}

#[test]
fn upstream_step_rule_starves_prague_at_10mbit_and_the_l4steam_rule_does_not() {
    let (up10, up10_step) = medians("10Mbit", 0);
    let (l4t10, l4t10_step) = medians("10Mbit", 2);
    let (up50, up50_step) = medians("50Mbit", 0);
    let (l4t50, _) = medians("50Mbit", 2);

    // 10 Mbit/s, upstream rule: nearly all of Prague's marks are step marks
    // (the step, not the coupling, sets its rate) and it gets far less than
    // CUBIC (the issue: about an eighth; accepted below a quarter).
    assert!(up10_step > 0.8, "step share {up10_step}");
    assert!(up10 < 0.25, "ratio {up10}");

    // 10 Mbit/s, L4STeam rule: the coupling marks again, and the ratio is
    // near the published ~1.7 (accepted 1.7/1.5 .. 1.7x1.5, fixed before the
    // runs: a testbed's ratio is not a simulator's).
    assert!(l4t10_step < 0.05, "step share {l4t10_step}");
    assert!((1.7 / 1.5..=1.7 * 1.5).contains(&l4t10), "ratio {l4t10}");

    // 50 Mbit/s: one packet on the wire (0.24 ms) cannot trip the 1 ms
    // step, so the rule hardly matters: few step marks, and the two rules
    // within 30 % of each other.
    assert!(up50_step < 0.1, "step share at 50 Mbit/s {up50_step}");
    let rel = up50 / l4t50;
    assert!((0.7..=1.3).contains(&rel), "{up50} vs {l4t50}");
    assert!(up50 > 4.0 * up10, "{up50} vs {up10}");
}
