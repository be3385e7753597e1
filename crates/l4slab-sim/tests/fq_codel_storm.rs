//! Issue "fq_codel storm": ten CUBIC flows (HyStart++ off) through fq_codel
//! at 1 Gbit/s, 20 ms, with 16 MiB socket buffers and Linux's default
//! fq_codel limit (10240 packets). The slow-start overshoot fills the buckets;
//! after that every flow should shrink its window by β per recovery episode
//! until the per-flow CoDel holds its bucket near the 5 ms target (ns-3:
//! every flow near 20 ms + a few ms, 123 drops).
//!
//! Measured before the fix (10 s): queue sojourn mean 46.2 ms, p90 82.0 ms,
//! p99 106 ms; 27,456 drops (26,944 CoDel, 512 overlimit); flows' mean RTT
//! 34-51 ms; each flow in back-to-back recovery episodes (62-97 per flow)
//! from 0.4 s to ~8.5 s. RTOs: 2 (one flow), spurious retransmissions: 20 —
//! not a timeout storm. Cause: each episode reduced from FlightSize, which
//! counts the SACKed data behind the hole and exceeded cwnd, so the window
//! never shrank; fixed by reducing from cwnd as Linux does
//! (docs/models/transport.md, "Reduction base"). This test failed before.

mod common;

const STORM: &str = r#"
format = 1
duration = "10s"
sample_interval = "100ms"
[bottleneck]
rate = "1Gbit"
delay = "10ms"
buffer = "20ms"
qdisc = { kind = "fq_codel", limit = 10240 }
[[flows]]
name = "bulk"
count = 10
cc = { kind = "cubic", hystart = false }
app = "bulk"
[flows.transport]
send_buffer = "16MiB"
receive_buffer = "16MiB"
"#;

#[test]
fn cubic_flows_through_fq_codel_drain_the_slow_start_overshoot() {
    let out = common::run_toml(STORM, &[]);
    let q = &out.summary["queues"]["bottleneck.down"];
    let mean = common::f64_of(&q["sojourn_ms"]["mean"]);
    let p90 = common::f64_of(&q["sojourn_ms"]["p90"]);
    let drops = common::f64_of(&q["drops"]["total"]);
    for i in 0..10 {
        let f = common::flow(&out, &format!("bulk.{i}"));
        let rtt = common::f64_of(&f["rtt_ms"]["mean"]);
        assert!(rtt < 30.0, "bulk.{i}: mean RTT {rtt} ms (base 20 ms)");
    }
    assert!(mean < 15.0, "sojourn mean {mean} ms");
    assert!(p90 < 15.0, "sojourn p90 {p90} ms");
    assert!(drops < 5000.0, "{drops} drops");
}
