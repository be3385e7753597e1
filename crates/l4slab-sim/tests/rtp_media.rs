//! RTP media end to end (docs/models/rtp.md, gcc.md, scream.md): each media
//! controller through a FIFO and through DualPI2, alone and next to a
//! download. Bounds come from the path (rates, delays, buffers) and the
//! controllers' specs, not from measured runs.

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// A cloud game over RTP, 20 Mbit/s, 20 ms base RTT, a 100 ms FIFO (the
/// runs set the qdisc and the controller), starting at 5 Mbit/s.
const GAME: &str = r#"
format = 1
duration = "30s"
warmup = "10s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
qdisc = "fifo"
[[flows]]
name = "game"
app = { kind = "cloud_gaming", transport = "rtp", media_cc = "gcc", start_bitrate = "5Mbit" }
"#;

fn game(media_cc: &str, sets: &[&str]) -> RunOutput {
    let app = format!(
        r#"flows[0].app={{ kind = "cloud_gaming", transport = "rtp", media_cc = {media_cc}, start_bitrate = "5Mbit" }}"#
    );
    let mut all = vec![app.as_str()];
    all.extend_from_slice(sets);
    run_toml(GAME, &all)
}

fn m<'a>(out: &'a RunOutput, name: &str) -> &'a serde_json::Value {
    &flow(out, name)["app_metrics"]
}

#[test]
fn alone_on_the_link_each_controller_delivers_without_loss_and_within_its_delay_target() {
    // GCC: delay-based, Not-ECT. The 100 ms FIFO never overflows: its
    // delay detector backs off as soon as the queue grows (well before
    // 100 ms), so nothing is lost and the RTT stays far below 20 + 100 ms.
    let gcc = game(r#""gcc""#, &[]);
    let a = m(&gcc, "game");
    assert_eq!(a["sender"]["cc"], "gcc");
    assert_eq!(a["sender"]["packets_lost"], 0, "{a}");
    assert!(f64_of(&a["sender"]["rtt_ms"]["p99"]) < 20.0 + 50.0, "{a}");
    assert_eq!(a["stalls"], 0);
    assert!(f64_of(&a["frame_rate_fps"]) > 59.0);
    // SCReAM without L4S: its queue-delay target is 60 ms (S2
    // QDELAY_TARGET_LO), so the RTT stays under 20 + 60 ms, and it uses
    // most of the link (over half of 20 Mbit/s after the warm-up).
    let scream = game(r#"{ kind = "scream", l4s = false }"#, &[]);
    let a = m(&scream, "game");
    assert_eq!(a["sender"]["packets_lost"], 0, "{a}");
    assert!(f64_of(&a["sender"]["rtt_ms"]["p99"]) < 20.0 + 60.0, "{a}");
    assert!(f64_of(&a["bitrate_bps"]) > 10e6, "{a}");
    assert_eq!(a["stalls"], 0);
}

#[test]
fn through_dualpi2_scream_l4s_rides_the_l_queue_and_gcc_the_c_queue() {
    // SCReAM with L4S sends ECT(1): DualPI2's L queue marks above 1 ms of
    // sojourn, so the RTT stays within a few ms of 20 ms and nothing is lost.
    let l4s = game(
        r#""scream""#,
        &["bottleneck.qdisc=dualpi2", "bottleneck.buffer=10000pkt"],
    );
    let a = m(&l4s, "game");
    assert_eq!(a["sender"]["packets_lost"], 0, "{a}");
    assert!(
        a["sender"]["cc_state"]["ce_backoffs"].as_u64().unwrap() > 0,
        "{a}"
    );
    assert!(f64_of(&a["sender"]["rtt_ms"]["p99"]) < 20.0 + 5.0, "{a}");
    assert!(f64_of(&a["bitrate_bps"]) > 10e6, "{a}");
    // Every packet of the game went through the L queue, and was marked there.
    let q = &l4s.summary["queues"]["bottleneck.down"];
    assert_eq!(q["xstats_final"]["packets_in_c"], 0.0, "{q}");
    assert!(q["marks"]["step"].as_u64().unwrap() > 0, "{q}");
    // GCC sends Not-ECT: DualPI2's classic queue (PI2 target 15 ms) takes it.
    let c = game(
        r#""gcc""#,
        &["bottleneck.qdisc=dualpi2", "bottleneck.buffer=10000pkt"],
    );
    let a = m(&c, "game");
    let q = &c.summary["queues"]["bottleneck.down"];
    assert_eq!(q["xstats_final"]["packets_in_l"], 0.0, "{q}");
    assert_eq!(a["sender"]["cc_state"]["ce_marks_ignored"], 0, "{a}");
    // PI2 drops (Not-ECT) rather than marks; what it drops, NACK repairs.
    assert!(f64_of(&a["sender"]["packet_loss_pct"]) < 1.0, "{a}");
    assert_eq!(a["packets_unrepaired"], 0, "{a}");
    assert!(f64_of(&a["sender"]["rtt_ms"]["p99"]) < 20.0 + 50.0, "{a}");
}

/// Apple's setting in small (Apple WWDC23 session 10004): a two-way call and a download
/// through 10 Mbit/s, 20 ms base RTT.
const CALL: &str = r#"
format = 1
duration = "20s"
warmup = "5s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "25ms"
qdisc = "fifo"
[[flows]]
name = "call"
app = { kind = "video_call", transport = "rtp", media_cc = "gcc" }
[[flows]]
name = "download"
cc = "cubic"
start = "1s"
app = "bulk"
"#;

#[test]
fn a_call_next_to_a_download_loses_packets_in_a_fifo_and_none_in_the_l_queue() {
    // Legacy: Cubic keeps the 25 ms FIFO full; the call's packets meet a
    // full queue now and then and are dropped (and repaired by NACK). Its
    // RTT can never exceed 20 ms + 25 ms of queue + one packet's
    // serialization at each end.
    let legacy = run_toml(CALL, &[]);
    let d = &m(&legacy, "call")["down"];
    assert!(f64_of(&d["sender"]["packet_loss_pct"]) > 0.0, "{d}");
    assert!(d["sender"]["retransmissions"].as_u64().unwrap() > 0, "{d}");
    assert!(
        f64_of(&d["sender"]["rtt_ms"]["max"]) < 20.0 + 25.0 + 3.0,
        "{d}"
    );
    assert!(f64_of(&d["sender"]["rtt_ms"]["p50"]) > 20.0 + 15.0, "{d}");
    // L4S: the call on SCReAM (ECT(1)) and the download on Prague share
    // DualPI2's L queue: marks instead of drops, and a queue of a few ms.
    let l4s = run_toml(
        CALL,
        &[
            "bottleneck.qdisc=dualpi2",
            "bottleneck.buffer=10000pkt",
            r#"flows[0].app={ kind = "video_call", transport = "rtp", media_cc = "scream" }"#,
            "flows[1].cc=prague",
        ],
    );
    let d = &m(&l4s, "call")["down"];
    assert_eq!(d["sender"]["packets_lost"], 0, "{d}");
    assert!(f64_of(&d["sender"]["rtt_ms"]["p99"]) < 25.0, "{d}");
    assert_eq!(d["stalls"], 0, "{d}");
    assert!(f64_of(&d["frame_rate_fps"]) > 29.0, "{d}");
    // The series of an RTP call: per direction, as over TCP, plus its RTT.
    let s = &l4s.series;
    let keys: Vec<&str> = (0..s.len())
        .filter(|&i| s.name(s.series[i]) == "flow/call")
        .map(|i| s.name(s.key[i]))
        .collect();
    for key in [
        "frame_rate_fps.down",
        "rtt_ms.down",
        "rtt_max_ms.up",
        "target_bitrate_bps.up",
    ] {
        assert!(keys.contains(&key), "no series {key}: {keys:?}");
    }
}

#[test]
fn a_screen_share_over_rtp_sends_frames_at_its_rate_up_to_its_frame_size() {
    // 10 KB frames at 30 fps: a ceiling of 2.4 Mbit/s, far below the link.
    let out = run_toml(
        GAME,
        &[
            r#"flows[0].app={ kind = "screen_share", transport = "rtp", frame_size = "10KB", max_fps = 30 }"#,
        ],
    );
    let f = flow(&out, "game");
    assert_eq!(
        (f["app"].as_str(), f["transport"].as_str(), f["cc"].as_str()),
        (Some("screen_share"), Some("rtp"), Some("gcc"))
    );
    let a = &f["app_metrics"];
    assert!(f64_of(&a["frame_rate_fps"]) > 29.0, "{a}");
    let bitrate = f64_of(&a["bitrate_bps"]);
    assert!(bitrate <= 2.4e6 * 1.05 && bitrate > 2.0e6, "{a}");
    assert_eq!(a["sender"]["packets_lost"], 0, "{a}");
    assert!(a.get("late_pct").is_none(), "{a}");
}
