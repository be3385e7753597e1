//! Prague's RTT dependence without its RTT-independence heuristic
//! (`rtt_scaling = "none"`): two Prague flows of different base RTT share
//! DualPI2 (Linux defaults, 10000-packet limit) at 50 Mbit/s, against the
//! published testbed measurements of Heist & Morton (heistp/l4s-tests
//! `s1_table.md`, runs of 2020-11-11, DualPI2 at 50 Mbit/s, steady-state
//! delivery rate, Prague vs Prague):
//!
//! | base RTTs | published short/long rate | ratio |
//! |---|---|---|
//! | 10 vs 20 ms | 30.77 / 15.84 Mbit/s | 1.94 |
//! | 20 vs 80 ms | 41.48 / 5.80 Mbit/s | 7.15 |
//!
//! plus 10 vs 50 ms, which the testbed did not run. The published pairs are
//! checked within a factor of 1.5 either way (fixed before the runs: one
//! testbed run per pair, a 2020 Prague); 10 vs 50 ms is only printed and
//! recorded in docs/models/prague.md.
//!
//! ```text
//! cargo test --release -p l4slab-sim --test prague_rtt_dependence -- --nocapture
//! ```

mod common;

use common::run_toml;
use l4slab_sim::RunOutput;

/// Two Prague flows at `short_ms` and `long_ms` base RTT (a 1 ms bottleneck
/// delay each way plus each client's access delay each way), 60 s.
fn scenario(short_ms: f64, long_ms: f64) -> String {
    let access = |rtt_ms: f64| rtt_ms / 2.0 - 1.0;
    format!(
        r#"
format = 1
duration = "60s"
[bottleneck]
rate = "50Mbit"
delay = "1ms"
buffer = "10000pkt"
qdisc = "dualpi2"
[hosts.short]
side = "client"
access_delay = "{}us"
[hosts.long]
side = "client"
access_delay = "{}us"
[[flows]]
name = "short"
client = "short"
cc = {{ kind = "prague", rtt_scaling = "none" }}
[[flows]]
name = "long"
client = "long"
cc = {{ kind = "prague", rtt_scaling = "none" }}
"#,
        (access(short_ms) * 1000.0).round(),
        (access(long_ms) * 1000.0).round()
    )
}

/// Mean goodput after `from_s` from the 100 ms series, bit/s.
fn goodput_after(out: &RunOutput, name: &str, from_s: f64) -> f64 {
    let s = &out.series;
    let key = format!("flow/{name}");
    let v: Vec<f64> = (0..s.len())
        .filter(|&i| {
            s.t_s[i] > from_s && s.name(s.series[i]) == key && s.name(s.key[i]) == "goodput_bps"
        })
        .map(|i| s.value[i])
        .collect();
    assert!(!v.is_empty(), "no goodput samples for {name}");
    v.iter().sum::<f64>() / v.len() as f64
}

/// Median over seeds 1-3 of the short/long goodput ratio after 20 s.
fn ratio(short_ms: f64, long_ms: f64) -> f64 {
    let mut r: Vec<f64> = (1..=3)
        .map(|seed| {
            let seed_set = format!("seed={seed}");
            let out = run_toml(&scenario(short_ms, long_ms), &[seed_set.as_str()]);
            let (a, b) = (
                goodput_after(&out, "short", 20.0),
                goodput_after(&out, "long", 20.0),
            );
            assert_eq!(
                out.summary["flows"]["short"]["cc_options"],
                serde_json::json!({ "rtt_scaling": "none" })
            );
            println!(
                "{short_ms} vs {long_ms} ms, seed {seed}: {:.2} / {:.2} Mbit/s (ratio {:.2}); marks {}",
                a / 1e6,
                b / 1e6,
                a / b,
                out.summary["queues"]["bottleneck.down"]["marks"]
            );
            a / b
        })
        .collect();
    r.sort_by(|a, b| a.total_cmp(b));
    println!("{short_ms} vs {long_ms} ms: median ratio {:.2}", r[1]);
    r[1]
}

#[test]
fn prague_without_rtt_scaling_against_the_published_rtt_dependence() {
    let r10_20 = ratio(10.0, 20.0);
    let r20_80 = ratio(20.0, 80.0);
    let r10_50 = ratio(10.0, 50.0);
    for (pair, got, published) in [("10/20", r10_20, 1.94), ("20/80", r20_80, 7.15)] {
        assert!(
            (published / 1.5..=published * 1.5).contains(&got),
            "{pair} ms: {got:.2} against the published {published}"
        );
    }
    // Without RTT independence the shorter flow always gets more.
    assert!(r10_50 > 1.0, "{r10_50}");
}
