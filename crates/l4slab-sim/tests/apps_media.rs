//! Web, cloud gaming and video calls end to end (docs/apps.md): what each
//! app measures follows from the path it runs over. Bounds come from the
//! path (rates, delays, buffer sizes), not from measured runs.

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// `flows.<name>.app_metrics.<path...>`; a number in the path indexes an array.
fn app_metric<'a>(out: &'a RunOutput, name: &str, path: &[&str]) -> &'a serde_json::Value {
    path.iter().fold(&flow(out, name)["app_metrics"], |v, k| {
        match k.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[*k],
        }
    })
}

// ---- web -------------------------------------------------------------------

/// 20 Mbit/s, 20 ms base RTT, a deep (200 ms, 500 KB) FIFO; one page whose
/// first object is a 10 MB download on the page's connection and whose second
/// is a 20 KB object on a new connection 3 s later (the LiteSpeed BBR post).
const SMALL_BEHIND_LARGE: &str = r#"
format = 1
duration = "6s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "200ms"
[[flows]]
name = "page"
app = { kind = "web", objects = [
    { size = "10MB" },
    { size = "20KB", at = "3s", connection = "new" },
] }
"#;

#[test]
fn a_small_object_on_a_new_connection_waits_for_cubics_queue_not_for_bbrs() {
    // Without HyStart the download's slow start fills the FIFO before 3 s;
    // with it (Linux's, the default) Cubic leaves slow start near the BDP
    // and its congestion avoidance needs about 10 s to fill 500 KB.
    let cubic = run_toml(
        SMALL_BEHIND_LARGE,
        &[r#"flows[0].cc={ kind = "cubic", hystart = false }"#],
    );
    let bbr = run_toml(SMALL_BEHIND_LARGE, &["flows[0].cc=bbr"]);
    // The small object ran on a flow of its own, and is listed with its page.
    let tiny = |o: &RunOutput| {
        let page = app_metric(o, "page", &["objects", "1"]);
        let own = app_metric(o, "page.obj1", &["objects", "0"]);
        assert!(page.is_object());
        assert_eq!(page, own);
        assert_eq!(page["flow"], "page.obj1");
        assert_eq!(page["connection"], "new");
        f64_of(&page["completion_s"])
    };
    let (c, b) = (tiny(&cubic), tiny(&bbr));
    // A new connection needs three round trips for 20 KB (handshake, request
    // plus the initial window of 14.5 KB, the rest). Cubic keeps the FIFO
    // mostly full (after a loss it still holds 0.7 x (BDP + buffer) - BDP =
    // 335 KB, 134 ms), so each round trip takes over 100 ms; BBR keeps about
    // one BDP in flight, each round trip under 2 x the base RTT.
    assert!(c > 3.0 * 0.1, "cubic: small object in {c} s");
    assert!(b < 3.0 * 0.04 + 0.05, "bbr: small object in {b} s");
    assert!(c > 2.5 * b, "cubic {c} s vs bbr {b} s");
}

#[test]
fn on_the_existing_connection_a_small_object_waits_behind_a_large_response() {
    let toml = r#"
format = 1
duration = "3s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "50ms"
[[flows]]
name = "page"
cc = "cubic"
app = { kind = "web", request_size = "400B", objects = [
    { size = "2MB" },
    { size = "1KB", at = "200ms" },
] }
"#;
    let out = run_toml(toml, &[]);
    let objects = app_metric(&out, "page", &["objects"]);
    let big = f64_of(&objects[0]["completion_s"]);
    let small = f64_of(&objects[1]["completion_s"]);
    // Responses come back in order: the 1 KB object's bytes follow 2 MB,
    // which take at least 2 MB / 20 Mbit/s = 0.8 s from the page's start.
    assert!(big >= 0.8, "2 MB in {big} s");
    // (Both may complete on the same delivery; the figures have 6 decimals.)
    assert!(
        0.2 + small >= big - 1e-6,
        "small done at {} s, big at {big} s",
        0.2 + small
    );
    // Both on the page's connection: no extra flow.
    assert!(flow(&out, "page.obj1").is_null());
    assert_eq!(app_metric(&out, "page", &["objects_completed"]), 2);
    // Bytes delivered are exactly the two responses.
    assert_eq!(flow(&out, "page")["bytes_delivered"], 2_001_000);
}

// ---- cloud gaming ----------------------------------------------------------

const GAME_PATH: &str = r#"
format = 1
duration = "10s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "game"
app = "cloud_gaming"
"#;

#[test]
fn cloud_gaming_adapts_down_to_a_20_mbit_link_and_uses_most_of_it() {
    let out = run_toml(GAME_PATH, &["flows[0].cc=cubic"]);
    let g = flow(&out, "game");
    let m = &g["app_metrics"];
    let target = &m["target_bitrate_bps"];
    // It starts at 40 Mbit/s, twice the link: it must have cut its bitrate.
    assert_eq!(target["start"], 40_000_000);
    assert!(target["decreases"].as_u64().unwrap() >= 1, "{target}");
    assert!(f64_of(&target["final"]) < 40e6, "{target}");
    // AIMD with a 0.85 cut oscillates between 85 % and 100 % of what the
    // connection delivers; the link is the limit.
    let goodput = f64_of(&g["goodput_bps"]);
    assert!(goodput > 0.8 * 20e6 && goodput <= 20e6, "goodput {goodput}");
    // Nearly every frame is shown: skips happen only while the socket is backed up.
    let fps = f64_of(&m["frame_rate_fps"]);
    assert!(fps > 0.9 * 60.0, "{fps} fps");
}

#[test]
fn cloud_gaming_next_to_a_download_is_fast_through_dualpi2_with_prague_and_late_in_a_bloated_fifo()
{
    let with_download = format!("{GAME_PATH}[[flows]]\nname = \"download\"\n");
    let fifo = run_toml(&with_download, &["flows[0].cc=cubic", "flows[1].cc=cubic"]);
    let l4s = run_toml(
        &with_download,
        &[
            "flows[0].cc=prague",
            "flows[1].cc=prague",
            "bottleneck.qdisc=dualpi2",
        ],
    );
    let p50 = |o: &RunOutput| f64_of(app_metric(o, "game", &["frame_latency_ms", "p50"]));
    let late = |o: &RunOutput| f64_of(app_metric(o, "game", &["late_pct"]));
    let (f, l) = (p50(&fifo), p50(&l4s));
    // FIFO: Cubic keeps at least 0.7 x (BDP + buffer) - BDP = 160 KB (64 ms)
    // queued; a frame waits behind it plus the 10 ms one-way delay.
    assert!(f > 10.0 + 50.0, "fifo frame latency p50 {f} ms");
    // DualPI2 + Prague: the L queue holds ~1 ms; a frame takes the one-way
    // delay plus its own transmission (at most one frame interval, 16.7 ms,
    // while the game sends no faster than it is delivered).
    assert!(l < 10.0 + 16.7 + 10.0, "dualpi2 frame latency p50 {l} ms");
    // With a 50 ms deadline: nearly every frame late in the FIFO, few through DualPI2.
    let (fl, ll) = (late(&fifo), late(&l4s));
    assert!(
        fl > 90.0 && ll < 10.0,
        "late frames: fifo {fl} %, dualpi2 {ll} %"
    );
}

// ---- video call ------------------------------------------------------------

/// Apple's demo (Apple WWDC23 session 10004): a 10 Mbit/s bottleneck, 20 ms minimum RTT,
/// a video call while two downloads start a second later.
const CALL_PATH: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "250ms"
[[flows]]
name = "call"
app = "video_call"
[[flows]]
name = "download"
count = 2
start = "1s"
"#;

#[test]
fn a_video_call_stalls_in_a_bloated_fifo_and_not_through_dualpi2_with_prague() {
    let legacy = run_toml(CALL_PATH, &["flows[0].cc=cubic", "flows[1].cc=cubic"]);
    let l4s = run_toml(
        CALL_PATH,
        &[
            "flows[0].cc=prague",
            "flows[1].cc=prague",
            "bottleneck.qdisc=dualpi2",
        ],
    );
    let down = |o: &RunOutput, k: &str| f64_of(app_metric(o, "call", &["down", k]));
    let loss = |o: &RunOutput| f64_of(&flow(o, "call")["packet_loss_pct"]["down"]);
    let rtt_p99 = |o: &RunOutput| f64_of(&flow(o, "call")["rtt_ms"]["p99"]);
    // Tail drop in a full FIFO hits the call too; over TCP each lost packet
    // holds every later frame until it is repaired, at least one RTT — which
    // the 250 ms queue makes longer than the 200 ms stall threshold.
    assert!(loss(&legacy) > 0.0, "legacy call lost nothing");
    let (ls, ss) = (down(&legacy, "stall_pct"), down(&l4s, "stall_pct"));
    assert!(down(&legacy, "stalls") >= 1.0, "no stall in the FIFO");
    // L4S: CE marks instead of drops, and a queue of about 1 ms.
    assert_eq!(loss(&l4s), 0.0);
    assert!(
        ss < 1.0 && ls > ss + 1.0,
        "stall %: fifo {ls}, dualpi2 {ss}"
    );
    let (lr, sr) = (rtt_p99(&legacy), rtt_p99(&l4s));
    assert!(
        lr > 20.0 + 100.0 && sr < 20.0 + 30.0,
        "rtt p99: fifo {lr} ms, dualpi2 {sr} ms"
    );
    // The received frame rate holds up (the claim: above 25 fps), in both directions.
    for dir in ["down", "up"] {
        let fps = f64_of(app_metric(&l4s, "call", &[dir, "frame_rate_fps"]));
        assert!(fps > 25.0, "{dir}: {fps} fps");
    }
    // The uplink carries only the call and ACKs: no stall there in either case.
    assert_eq!(f64_of(app_metric(&legacy, "call", &["up", "stalls"])), 0.0);
}

#[test]
fn a_video_call_reports_both_directions_and_their_series() {
    let out = run_toml(CALL_PATH, &["duration=3s", "flows[1].count=1"]);
    let m = &flow(&out, "call")["app_metrics"];
    for dir in ["down", "up"] {
        assert!(m[dir]["frames_displayed"].as_u64().unwrap() > 0, "{dir}");
        assert!(m[dir]["target_bitrate_bps"]["mean"].is_number(), "{dir}");
    }
    let keys: Vec<&str> = (0..out.series.len())
        .filter(|&i| out.series.name(out.series.series[i]) == "flow/call")
        .map(|i| out.series.name(out.series.key[i]))
        .collect();
    for k in [
        "frame_rate_fps.down",
        "frame_rate_fps.up",
        "target_bitrate_bps.down",
        "app_bitrate_bps.up",
        "frame_latency_ms.down",
    ] {
        assert!(keys.contains(&k), "series {k} missing");
    }
}
