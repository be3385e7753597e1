//! Behaviour: the PI-controlled AQMs hold a Reno bulk flow's queue delay at
//! their target (RFC 8033 / RFC 9332: 15 ms), and DualPI2's classifier rule
//! puts a chosen non-ECN flow in the L queue. Reno does not negotiate ECN
//! yet, so its packets are Not-ECT: PIE drops, and DualPI2 serves them from
//! the C queue and drops with `p' ^ 2`.
//! The numbers this prints are recorded in docs/models/pie.md and dualpi2.md.

mod common;

use common::f64_of;

/// Reno bulk flows at 20 Mbit/s, 40 ms base RTT, a buffer far larger than
/// the target delay (1000 packets = 600 ms at 20 Mbit/s).
const BULK: &str = r#"
format = 1
duration = "60s"
[bottleneck]
rate = "20Mbit"
delay = "20ms"
buffer = "1000pkt"
[[flows]]
name = "bulk"
cc = "reno"
"#;

/// After the slow-start transient.
const STEADY_FROM_S: f64 = 20.0;

/// Mean of the 100 ms interval means of `key` (`sojourn_ms`, `sojourn_ms.c`)
/// of the downlink queue after [`STEADY_FROM_S`].
fn steady_mean(out: &l4slab_sim::RunOutput, key: &str) -> f64 {
    let s = &out.series;
    let v: Vec<f64> = (0..s.len())
        .filter(|&i| {
            s.t_s[i] > STEADY_FROM_S
                && s.name(s.series[i]) == "queue/bottleneck.down"
                && s.name(s.key[i]) == key
        })
        .map(|i| s.value[i])
        .collect();
    assert!(v.len() > 100, "{key}: {} samples", v.len());
    v.iter().sum::<f64>() / v.len() as f64
}

/// Run `flows` Reno bulk flows through `qdisc`; print and return the steady
/// mean sojourn of `key` and the whole-run median of `sub` (or the queue).
fn run(qdisc: &str, flows: u32, key: &str, sub: Option<&str>) -> (f64, f64) {
    let out = common::run_toml(
        BULK,
        &[
            &format!("bottleneck.qdisc={qdisc}"),
            &format!("flows[0].count={flows}"),
        ],
    );
    let q = &out.summary["queues"]["bottleneck.down"];
    let s = match sub {
        Some(sub) => &q["subqueues"][sub]["sojourn_ms"],
        None => &q["sojourn_ms"],
    };
    let steady = steady_mean(&out, key);
    let p50 = f64_of(&s["p50"]);
    println!(
        "{qdisc}, {flows} Reno: steady mean sojourn {steady:.2} ms; whole run mean {:.2}, \
         p50 {p50:.2}, p99 {:.2} ms; utilization {:.3}; drops {}; final xstats {}",
        f64_of(&s["mean"]),
        f64_of(&s["p99"]),
        f64_of(&q["utilization"]),
        q["drops"],
        q["xstats_final"],
    );
    assert_eq!(q["drops"]["overlimit"], 0, "the AQM, not the buffer, drops");
    assert!(f64_of(&q["drops"]["aqm"]) > 0.0);
    assert!(f64_of(&q["utilization"]) > 0.9);
    (steady, p50)
}

/// Several flows: one halving does not drain the queue, so the PI
/// controller holds the delay at its 15 ms target.
fn near_target(steady: f64, p50: f64) {
    assert!((13.0..17.0).contains(&steady), "steady mean {steady} ms");
    assert!((13.0..17.0).contains(&p50), "median {p50} ms");
}

/// One flow: its BDP (100 packets) exceeds the 25-packet target queue, so
/// each halving drains the queue and the delay saws between 0 and a little
/// above the target; the controller cannot push the average up (p' stops at
/// 0), so the mean sits below the target.
fn below_target(steady: f64) {
    assert!((7.0..15.0).contains(&steady), "steady mean {steady} ms");
}

#[test]
fn pie_holds_reno_near_the_15ms_target() {
    let (steady, p50) = run("pie", 4, "sojourn_ms", None);
    near_target(steady, p50);
    let (steady, _) = run("pie", 1, "sojourn_ms", None);
    below_target(steady);
}

#[test]
fn dualpi2_holds_classic_reno_near_the_15ms_target() {
    // Reno sends Not-ECT: every packet is classic, served from the C queue.
    let (steady, p50) = run("dualpi2", 4, "sojourn_ms.c", Some("c"));
    near_target(steady, p50);
    let (steady, _) = run("dualpi2", 1, "sojourn_ms.c", Some("c"));
    below_target(steady);
    let out = common::run_toml(BULK, &["bottleneck.qdisc=dualpi2"]);
    let q = &out.summary["queues"]["bottleneck.down"];
    assert!(q["subqueues"]["l"]["sojourn_ms"].is_null(), "nothing in L");
    assert_eq!(q["xstats_final"]["packets_in_l"], 0.0);
}

#[test]
fn dualpi2_l_flows_put_a_non_ecn_flow_in_the_l_queue() {
    // Four Reno bulk flows hold the C queue near 15 ms; a fifth, small and
    // Not-ECT like DNS, is classified into L by name.
    let scn = format!(
        "{BULK}count = 4\n\n[[flows]]\nname = \"dns\"\ncc = \"reno\"\nstart = \"30s\"\n\
         app = {{ kind = \"file\", size = \"20KB\" }}\n"
    );
    let out = common::run_toml(
        &scn,
        &[r#"bottleneck.qdisc={ kind = "dualpi2", l_flows = ["dns"] }"#],
    );
    let q = &out.summary["queues"]["bottleneck.down"];
    let l = &q["subqueues"]["l"]["sojourn_ms"];
    let c = &q["subqueues"]["c"]["sojourn_ms"];
    let dns = &q["sojourn_ms_by_flow"]["dns"];
    println!(
        "l_flows: dns sojourn mean {:.3} ms, max {:.3} ms over {} packets (L: {} samples); \
         bulk C mean {:.2} ms; dns completion {} s",
        f64_of(&dns["mean"]),
        f64_of(&dns["max"]),
        dns["samples"],
        l["samples"],
        f64_of(&c["mean"]),
        common::flow(&out, "dns")["completion_s"],
    );
    // Every dns data packet went through L, and only those.
    assert_eq!(l["samples"], dns["samples"]);
    // L has priority: the dns packets skip the bulk flows' standing queue.
    assert!(f64_of(&dns["mean"]) < 2.0, "dns waited {} ms", dns["mean"]);
    assert!(f64_of(&c["mean"]) > 10.0);
    // Without the rule the same flow waits in C behind the bulk flows.
    let out = common::run_toml(&scn, &["bottleneck.qdisc=dualpi2"]);
    let q = &out.summary["queues"]["bottleneck.down"];
    let dns = &q["sojourn_ms_by_flow"]["dns"];
    println!(
        "without l_flows: dns sojourn mean {:.3} ms",
        f64_of(&dns["mean"])
    );
    assert!(
        f64_of(&dns["mean"]) > 10.0,
        "dns in C waited {} ms",
        dns["mean"]
    );
    assert!(q["subqueues"]["l"]["sojourn_ms"].is_null());
}
