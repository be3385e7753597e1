//! Congestion-control options from the scenario reach the controller
//! (`cc = { kind = "cubic", hystart = false }`; docs/scenarios.md): one
//! option that visibly changes a run, and what the summary records. The
//! Prague and DCTCP options are exercised end to end in `l4s_dualq.rs`.

mod common;

use common::{flow, run_toml};
use l4slab_sim::RunOutput;

/// One CUBIC download, 20 Mbit/s, 40 ms base RTT, a 1000-packet FIFO: far
/// more buffer than the 69-packet BDP, so slow start can either leave on
/// the delay signal (HyStart++, RFC 9406) well before the buffer fills, or
/// double until it overflows.
const CUBIC: &str = r#"
format = 1
duration = "3s"
[bottleneck]
rate = "20Mbit"
delay = "20ms"
buffer = "1000pkt"
[[flows]]
name = "dl"
cc = { kind = "cubic" }
"#;

/// The sender's last recorded slow-start threshold, in segments.
fn last_ssthresh_segments(out: &RunOutput) -> Option<f64> {
    let s = &out.series;
    (0..s.len())
        .filter(|&i| s.name(s.series[i]) == "flow/dl" && s.name(s.key[i]) == "ssthresh_bytes")
        .map(|i| s.value[i] / 1448.0)
        .next_back()
}

#[test]
fn hystart_off_makes_cubic_slow_start_overflow_the_buffer() {
    let on = run_toml(CUBIC, &["flows[0].cc.hystart=true"]);
    let off = run_toml(CUBIC, &["flows[0].cc.hystart=false"]);
    let (f_on, f_off) = (flow(&on, "dl"), flow(&off, "dl"));
    let lost = |f: &serde_json::Value| f["lost_packets"].as_u64().unwrap();
    println!(
        "hystart on: {} lost, ssthresh {:?} segments; off: {} lost, ssthresh {:?}",
        lost(f_on),
        last_ssthresh_segments(&on),
        lost(f_off),
        last_ssthresh_segments(&off)
    );
    // HyStart (Linux's, the default) leaves slow start before the queue
    // overflows: a threshold is set although nothing was lost.
    assert_eq!(lost(f_on), 0);
    assert_eq!(f_on["recovery_episodes"], 0);
    let exit = last_ssthresh_segments(&on).expect("slow start ended");
    assert!(exit > 69.0 && exit < 1069.0, "{exit}");
    // Without it, slow start doubles until the 1000-packet queue overflows.
    assert!(lost(f_off) >= 100, "{}", lost(f_off));
    assert!(f_off["recovery_episodes"].as_u64().unwrap() >= 1);
    // The summary records what was set, next to the name.
    assert_eq!(f_off["cc"], "cubic");
    assert_eq!(f_off["cc_options"], serde_json::json!({ "hystart": false }));
    assert_eq!(
        off.summary["scenario"]["flows"][0]["cc_options"],
        serde_json::json!({ "hystart": false })
    );
}

#[test]
fn a_flow_without_options_records_none() {
    // Written as a name: summary and resolved scenario as before options existed.
    let out = run_toml(CUBIC, &["flows[0].cc=cubic", "duration=200ms"]);
    let f = flow(&out, "dl");
    assert_eq!(f["cc"], "cubic");
    assert!(f.get("cc_options").is_none(), "{f}");
    let scn = &out.summary["scenario"]["flows"][0];
    assert_eq!(scn["cc"], "cubic");
    assert!(scn.get("cc_options").is_none(), "{scn}");
}
