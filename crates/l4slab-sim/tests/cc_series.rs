//! The controller's state in the series: its mode (`cc_state`, an index into
//! summary `cc_states`) and its own variables (`cc.<name>`: BBR's bandwidth
//! and min-RTT estimates, DCTCP's alpha, CUBIC's W_max and K).

mod common;

use l4slab_sim::RunOutput;

const PATH: &str = r#"
format = 1
duration = "8s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"
[[flows]]
name = "f"
app = "bulk"
"#;

/// `(t, value)` of `key` in `flow/f`.
fn series(out: &RunOutput, key: &str) -> Vec<(f64, f64)> {
    let s = &out.series;
    (0..s.len())
        .filter(|&i| s.name(s.series[i]) == "flow/f" && s.name(s.key[i]) == key)
        .map(|i| (s.t_s[i], s.value[i]))
        .collect()
}

fn states(out: &RunOutput) -> Vec<String> {
    out.summary["flows"]["f"]["cc_states"]
        .as_array()
        .expect("cc_states")
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn bbr_reports_its_mode_bandwidth_and_min_rtt() {
    let out = common::run_toml(PATH, &["flows[0].cc=bbr"]);
    let names = states(&out);
    assert_eq!(names, ["Startup", "Drain", "ProbeBW", "ProbeRTT"]);
    let modes: Vec<usize> = series(&out, "cc_state")
        .iter()
        .map(|&(_, v)| v as usize)
        .collect();
    assert_eq!(modes.first(), Some(&0), "starts in Startup");
    let probe_bw = names.iter().position(|n| n == "ProbeBW").unwrap();
    assert_eq!(modes.last(), Some(&probe_bw), "ends in ProbeBW");
    let (_, bw) = *series(&out, "cc.btl_bw_bps").last().unwrap();
    assert!(
        (bw / 20e6 - 1.0).abs() < 0.1,
        "bandwidth estimate {bw} vs 20 Mbit/s"
    );
    let (_, min_rtt) = *series(&out, "cc.min_rtt_ms").last().unwrap();
    assert!(
        (20.0..22.0).contains(&min_rtt),
        "min RTT {min_rtt} ms vs the 20 ms base RTT"
    );
}

#[test]
fn dctcp_reports_alpha_and_cubic_its_w_max() {
    let out = common::run_toml(PATH, &["flows[0].cc=dctcp", "bottleneck.qdisc=dualpi2"]);
    let alpha = series(&out, "cc.alpha");
    assert!(alpha.len() > 50);
    assert!(alpha.iter().all(|&(_, a)| (0.0..=1.0).contains(&a)));
    // Marked every round trip at the step threshold: alpha settles well below 1.
    let (_, last) = *alpha.last().unwrap();
    assert!(last < 0.5, "alpha {last}");
    assert_eq!(
        states(&out),
        ["SlowStart", "CongestionAvoidance", "Cwr", "Recovery"]
    );

    let out = common::run_toml(PATH, &["flows[0].cc=cubic"]);
    let w_max = series(&out, "cc.w_max_segments");
    // The 100-packet FIFO overflows: after the first loss W_max is set, above
    // the BDP (about 33 segments) and below BDP + buffer plus slow start's overshoot.
    let (_, w) = *w_max.last().unwrap();
    assert!((33.0..300.0).contains(&w), "W_max {w} segments");
    assert!(
        series(&out, "cc.k_s").iter().any(|&(_, k)| k > 0.0),
        "K is set"
    );
}
