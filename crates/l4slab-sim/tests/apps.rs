//! Applications end to end: what each measures agrees with the path it runs
//! over (docs/apps.md).

mod common;

use common::{f64_of, flow, run_toml};

const PATH: &str = r#"
format = 1
duration = "10s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
"#;

fn with_flows(flows: &str) -> String {
    format!("{PATH}{flows}")
}

#[test]
fn ping_on_an_idle_path_measures_the_base_rtt_and_loses_nothing() {
    let out = run_toml(
        &with_flows(
            r#"
[[flows]]
name = "ping"
app = { kind = "ping", interval = "100ms", size = "64B" }
"#,
        ),
        &[],
    );
    let m = &flow(&out, "ping")["app_metrics"];
    // Probes at 0, 100 ms, ..., 10 s (the run includes its end): 101; the
    // last one's echo is still due at the end, so it is pending, not lost.
    assert_eq!(m["probes_sent"], 101);
    assert_eq!(m["lost"], 0);
    assert_eq!(m["replies"], 100);
    assert_eq!(m["pending_at_end"], 1);
    // The flow counts packets per direction: 101 probes up, and 100 echoes
    // down (the last probe reaches the server after the end).
    let f = flow(&out, "ping");
    assert_eq!(f["packets_sent"]["up"], 101);
    assert_eq!(f["packets_sent"]["down"], 100);
    assert_eq!(f["packet_loss_pct"]["up"], 0.0);
    // RTT = 2 x 10 ms + serialization of 92 B at 20 Mbit/s each way (36.8 µs).
    let base = 20.0 + 2.0 * 92.0 * 8.0 / 20e6 * 1e3;
    for k in ["min", "max"] {
        let rtt = f64_of(&m["rtt_ms"][k]);
        assert!((rtt - base).abs() < 0.01, "rtt {k} {rtt} vs {base}");
    }
    // One-way delays split the RTT evenly on a symmetric path.
    let up = f64_of(&m["owd_up_ms"]["mean"]);
    let down = f64_of(&m["owd_down_ms"]["mean"]);
    assert!(
        (up - down).abs() < 0.01 && (up + down - base).abs() < 0.01,
        "{up} + {down}"
    );
}

#[test]
fn ping_sees_the_queue_a_bulk_flow_builds_in_a_fifo() {
    let out = run_toml(
        &with_flows(
            r#"
[[flows]]
name = "download"
cc = "cubic"
app = "bulk"
[[flows]]
name = "ping"
app = { kind = "ping", interval = "50ms" }
"#,
        ),
        &[],
    );
    let m = &flow(&out, "ping")["app_metrics"];
    // Cubic keeps the 100 ms FIFO mostly full: the echoes' median RTT is well
    // above the 20 ms base, and the downstream one-way delay carries it.
    let p50 = f64_of(&m["rtt_ms"]["p50"]);
    assert!(p50 > 20.0 + 50.0, "ping p50 {p50} ms");
    let down = f64_of(&m["owd_down_ms"]["p50"]);
    let up = f64_of(&m["owd_up_ms"]["p50"]);
    assert!(down > 50.0 && up < 11.0, "down {down} up {up}");
}

#[test]
fn an_ect1_ping_rides_the_dualpi2_l_queue_and_a_not_ect_one_the_c_queue() {
    let toml = with_flows(
        r#"
[[flows]]
name = "classic"
cc = "cubic"
app = "bulk"
[[flows]]
name = "l4s"
cc = "prague"
app = "bulk"
[[flows]]
name = "ping_l"
app = { kind = "ping", interval = "20ms", ecn = "ect1" }
[[flows]]
name = "ping_c"
app = { kind = "ping", interval = "20ms" }
"#,
    );
    let out = run_toml(&toml, &["bottleneck.qdisc=dualpi2", "duration=8s"]);
    let l = f64_of(&flow(&out, "ping_l")["app_metrics"]["owd_down_ms"]["p50"]);
    let c = f64_of(&flow(&out, "ping_c")["app_metrics"]["owd_down_ms"]["p50"]);
    // 10 ms propagation + queueing: L near 1 ms at most, C near the 15 ms target.
    assert!(l < 10.0 + 2.0, "L-queue ping one-way {l} ms");
    assert!(c > 10.0 + 5.0, "C-queue ping one-way {c} ms");
}

#[test]
fn notsent_lowat_takes_the_send_buffer_out_of_screen_sharing_latency() {
    // Stuart Cheshire's example: ~50 KB/s upstream, 35 ms RTT, 120 KB send buffer.
    let toml = r#"
format = 1
duration = "30s"
[bottleneck]
rate = "400kbit"
delay = "17ms"
buffer = "100ms"
[[flows]]
name = "share"
cc = "cubic"
direction = "up"
app = { kind = "screen_share", frame_size = "10KB" }
transport = { send_buffer = "120KB" }
"#;
    let big = run_toml(toml, &[]);
    let low = run_toml(toml, &["flows[0].transport.notsent_lowat=16KB"]);
    let lat = |o: &l4slab_sim::RunOutput| {
        f64_of(&flow(o, "share")["app_metrics"]["frame_latency_ms"]["p50"])
    };
    let rate = |o: &l4slab_sim::RunOutput| f64_of(&flow(o, "share")["goodput_bps"]);
    let (lb, ll) = (lat(&big), lat(&low));
    // 120 KB at 50 KB/s is ~2.4 s of waiting in the sender.
    assert!(lb > 2000.0, "latency with a 120 KB buffer {lb} ms");
    // With the low-water mark: at most lowat + frame (26 KB, ~0.5 s) ahead of a frame, plus the RTT.
    assert!(
        ll < 800.0 && ll * 3.0 < lb,
        "latency with notsent_lowat {ll} ms vs {lb} ms"
    );
    // ... without costing throughput.
    let (rb, rl) = (rate(&big), rate(&low));
    assert!(rl > 0.95 * rb, "goodput {rl} vs {rb}");
}

#[test]
fn a_thin_flow_does_not_grow_a_window_it_never_uses() {
    // 1 KB frames, 10 per second: a few packets per RTT, far below the
    // initial window of 10 segments. Linux grows cwnd only when it was the
    // limit in the last window (tcp_is_cwnd_limited); so must we.
    let toml = r#"
format = 1
duration = "10s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "thin"
cc = "cubic"
app = { kind = "screen_share", frame_size = "1KB", max_fps = 10 }
"#;
    let out = run_toml(toml, &[]);
    let f = flow(&out, "thin");
    assert!(f64_of(&f["app_metrics"]["frames_displayed"]) > 90.0);
    assert_eq!(
        f["cwnd_final_bytes"],
        10 * 1448,
        "cwnd grew while app-limited"
    );
}
