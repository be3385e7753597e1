//! The steady-state window (`warmup`): the summary's rates, delays and queue
//! counts describe `[warmup, end]`, and agree with the series (which are
//! whole-run) summed over the window; the whole-run counters do not change.

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// One Reno download through a 50-packet FIFO: slow start's overshoot in the
/// first seconds, then the sawtooth with a drop per cycle.
const SCN: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "50pkt"
[[flows]]
name = "reno"
cc = "reno"
app = "bulk"
"#;

const WARMUP_S: f64 = 5.0;
const END_S: f64 = 20.0;
const IV_S: f64 = 0.1;

/// The values of series `series`, key `key`, sampled after `after` seconds
/// (a sample at `t` covers `(t - interval, t]`).
fn after(out: &RunOutput, series: &str, key: &str, after: f64) -> Vec<f64> {
    let s = &out.series;
    (0..s.len())
        .filter(|&i| {
            s.name(s.series[i]) == series && s.name(s.key[i]) == key && s.t_s[i] > after + 1e-9
        })
        .map(|i| s.value[i])
        .collect()
}

#[test]
fn the_summary_describes_the_window_after_warmup() {
    let whole = run_toml(SCN, &[]);
    let out = run_toml(SCN, &["warmup=\"5s\""]);
    assert_eq!(
        out.summary["window_s"],
        serde_json::json!([WARMUP_S, END_S])
    );
    assert_eq!(whole.summary["window_s"], serde_json::json!([0.0, END_S]));
    assert_eq!(out.summary["scenario"]["warmup"], 5_000_000_000u64);
    let (f, f0) = (flow(&out, "reno"), flow(&whole, "reno"));

    // The window changes what is reported, not what happens: the whole-run
    // counters and the series are those of the run without it.
    for k in [
        "bytes_delivered",
        "retransmits",
        "lost_packets",
        "segments_sent",
    ] {
        assert_eq!(f[k], f0[k], "{k}");
    }
    assert_eq!(out.series.value, whole.series.value);
    assert!(f0["retransmits"].as_u64().unwrap() > 0, "{f0}");

    // Goodput: the bytes delivered in [5 s, 20 s] (from the goodput series)
    // over those 15 s; slow start's seconds are left out.
    let bytes: f64 = after(&out, "flow/reno", "goodput_bps", WARMUP_S)
        .iter()
        .map(|bps| bps * IV_S / 8.0)
        .sum();
    let goodput = f64_of(&f["goodput_bps"]);
    let expect = bytes * 8.0 / (END_S - WARMUP_S);
    assert!(
        (goodput - expect).abs() <= 1500.0 * 8.0 / (END_S - WARMUP_S),
        "window goodput {goodput} vs {expect} from the series"
    );
    let before = f64_of(&f["bytes_delivered"]) - bytes;
    assert!(before > 1e6, "{before} bytes before the window");
    let whole_goodput = f64_of(&f0["goodput_bps"]);
    assert!(
        (goodput - whole_goodput).abs() > 1_000.0,
        "window {goodput} vs whole run {whole_goodput}"
    );

    // RTT: only the samples after warmup.
    let (n, n0) = (
        f["rtt_ms"]["samples"].as_u64().unwrap(),
        f0["rtt_ms"]["samples"].as_u64().unwrap(),
    );
    assert!(n > 0 && n < n0, "{n} of {n0} RTT samples in the window");

    // The queue: drops in the window are the drops series summed after
    // warmup (and fewer than the run's), utilization its mean there.
    let q = &out.summary["queues"]["bottleneck.down"];
    let q0 = &whole.summary["queues"]["bottleneck.down"];
    let drops: f64 = after(&out, "queue/bottleneck.down", "drops", WARMUP_S)
        .iter()
        .sum();
    assert_eq!(f64_of(&q["drops"]["total"]), drops, "{q}");
    assert!(drops > 0.0, "a sawtooth drops in the window");
    assert!(
        q["drops"]["total"].as_u64() < q0["drops"]["total"].as_u64(),
        "{q0}"
    );
    let util: f64 = after(&out, "queue/bottleneck.down", "utilization", WARMUP_S)
        .iter()
        .sum::<f64>()
        * IV_S
        / (END_S - WARMUP_S);
    // (The summary counts finished packets, the series the one on the wire
    // at the sample too: they differ by at most one packet's 1.2 ms.)
    assert!(
        (f64_of(&q["utilization"]) - util).abs() <= 1.2e-3 / (END_S - WARMUP_S),
        "{} vs {util} from the series",
        q["utilization"]
    );
    // Every packet the FIFO sent in the window has its sojourn there.
    assert_eq!(q["sojourn_ms"]["samples"], q["sent_packets"], "{q}");
    assert!(q["sent_packets"].as_u64() < q0["sent_packets"].as_u64());
    assert_eq!(
        q["sojourn_ms_by_flow"]["reno"]["samples"], q["sent_packets"],
        "{q}"
    );
    // `xstats_final` and `ecn_rewrite` are whole-run.
    assert_eq!(q["ecn_rewrite"], q0["ecn_rewrite"]);
}
