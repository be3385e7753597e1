//! The `cbr` application end to end (docs/apps.md#cbr): an unresponsive
//! stream delivers its rate when the link has room, loses what the link
//! cannot carry (and fills the buffer doing so), and with ECT(1) rides
//! DualPI2's L queue next to a Classic flow.

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// 10 Mbit/s, 10 ms one way, a 100-packet tail-drop FIFO, 10 s.
const PATH: &str = r#"
format = 1
duration = "10s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "100pkt"
"#;

/// Wire bytes of a 1200 B datagram: IPv4 (20) + UDP (8) headers.
const WIRE: f64 = 1228.0;

fn cbr(rate: &str, ecn: &str) -> String {
    format!(
        r#"{PATH}
[[flows]]
name = "cbr"
app = {{ kind = "cbr", rate = "{rate}", size = "1200B", ecn = "{ecn}" }}
"#
    )
}

/// The values of series `key` of flow `name`, in time order.
fn series(out: &RunOutput, name: &str, key: &str) -> Vec<f64> {
    let s = &out.series;
    let flow = format!("flow/{name}");
    (0..s.len())
        .filter(|&i| s.name(s.series[i]) == flow && s.name(s.key[i]) == key)
        .map(|i| s.value[i])
        .collect()
}

#[test]
fn half_the_link_is_delivered_whole_with_a_constant_delay() {
    let out = run_toml(&cbr("5Mbit", "not_ect"), &[]);
    let m = &flow(&out, "cbr")["app_metrics"];
    // Datagrams at 0, 1.92 ms, ..., 9.99936 s: 5209.
    assert_eq!(m["datagrams_sent"], 5209);
    assert_eq!(m["lost"], 0);
    assert_eq!(m["loss_pct"], 0.0);
    // Arrived: all but those still on the 10.98 ms path at the end.
    let received = m["datagrams_received"].as_u64().unwrap();
    assert_eq!(received + m["pending_at_end"].as_u64().unwrap(), 5209);
    assert!((5200..5209).contains(&received), "{received}");
    // 5 Mbit/s of payload, less the ~11 ms still in flight at the end.
    let goodput = f64_of(&m["goodput_bps"]);
    assert!((4.98e6..=5.0e6).contains(&goodput), "goodput {goodput}");
    // Every datagram finds the queue empty: one way = 10 ms + 1228 B at
    // 10 Mbit/s (0.9824 ms), the same for all, so no jitter.
    let base = 10.0 + WIRE * 8.0 / 10e6 * 1e3;
    for k in ["min", "p50", "p99", "max"] {
        let owd = f64_of(&m["owd_ms"][k]);
        assert!((owd - base).abs() < 0.01, "owd {k} {owd} vs {base}");
    }
    assert_eq!(m["jitter_ms"], 0.0);
    assert_eq!(m["ce_marked"], 0);
    // The queue never drops.
    let f = flow(&out, "cbr");
    assert_eq!(f["transport"], "udp");
    assert_eq!(f["lost_packets"], 0);
    assert_eq!(f["packets_sent"]["down"], 5209);
    // No connection: the flow's own byte counters stay at zero.
    assert_eq!(f["bytes_delivered"], 0);
    // The goodput series reads 5 Mbit/s once the first datagrams arrived.
    let g = series(&out, "cbr", "cbr_goodput_bps");
    assert_eq!(g.len(), 100, "one a sample");
    for v in &g[1..] {
        assert!((4.8e6..=5.2e6).contains(v), "interval goodput {v}");
    }
    let owd = series(&out, "cbr", "owd_ms");
    assert!(owd.iter().all(|v| (v - base).abs() < 0.01), "{owd:?}");
}

#[test]
fn one_and_a_half_times_the_link_loses_a_third_and_fills_the_buffer() {
    let out = run_toml(&cbr("15Mbit", "not_ect"), &[]);
    let m = &flow(&out, "cbr")["app_metrics"];
    // On the wire 15 Mbit/s x 1228/1200 = 15.35 Mbit/s into 10: the link
    // carries 10/15.35 and drops the rest, 34.9 %.
    let expected_loss = 100.0 * (1.0 - 10.0 / (15.0 * WIRE / 1200.0));
    let loss = f64_of(&m["loss_pct"]);
    assert!(
        (loss - expected_loss).abs() < 1.0,
        "loss {loss} % vs {expected_loss}"
    );
    // What arrives is the link's rate, less headers: 9.77 Mbit/s of payload.
    let goodput = f64_of(&m["goodput_bps"]);
    let link_payload = 10e6 * 1200.0 / WIRE;
    assert!(
        (goodput - link_payload).abs() < 0.02 * link_payload,
        "goodput {goodput} vs {link_payload}"
    );
    // The buffer stays full: once it filled, every datagram that gets in
    // waits for the 100 packets ahead of it (the one on the wire and 99
    // queued) and its own serialization, 101 x 0.9824 ms, after the 10 ms
    // of propagation.
    let full = 10.0 + 101.0 * WIRE * 8.0 / 10e6 * 1e3;
    for k in ["p50", "p99", "max"] {
        let owd = f64_of(&m["owd_ms"][k]);
        assert!(
            (owd - full).abs() < 0.5,
            "owd {k} {owd} vs a full buffer's {full}"
        );
    }
    let min = f64_of(&m["owd_ms"]["min"]);
    assert!(
        min < 11.0,
        "the first datagram found the queue empty: {min}"
    );
    // The queue's drops are the stream's: the losses counted from sequence
    // gaps, and some of the datagrams sent after the last one received.
    let lost = m["lost"].as_u64().unwrap();
    let pending = m["pending_at_end"].as_u64().unwrap();
    let drops = out.summary["queues"]["bottleneck.down"]["drops"]["total"]
        .as_u64()
        .unwrap();
    assert!(
        (lost..=lost + pending).contains(&drops),
        "{drops} drops, {lost} lost, {pending} pending"
    );
    assert_eq!(flow(&out, "cbr")["lost_packets"], drops);
}

#[test]
fn an_ect1_cbr_rides_the_dualpi2_l_queue_next_to_cubic() {
    let toml = format!(
        r#"{PATH}
[[flows]]
name = "cubic"
cc = "cubic"
app = "bulk"
[[flows]]
name = "cbr_l"
app = {{ kind = "cbr", rate = "2Mbit", ecn = "ect1" }}
[[flows]]
name = "cbr_c"
app = {{ kind = "cbr", rate = "2Mbit" }}
"#
    );
    let out = run_toml(
        &toml,
        &["bottleneck.qdisc=dualpi2", "bottleneck.buffer=1000pkt"],
    );
    let l = &flow(&out, "cbr_l")["app_metrics"];
    let c = &flow(&out, "cbr_c")["app_metrics"];
    eprintln!("{l:#}\n{c:#}");
}
