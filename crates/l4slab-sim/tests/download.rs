//! `download` and `[[households]]` through the simulator: a download split
//! over 8 connections finishes on every one, and its summary under
//! `downloads` gives the completion time of the last part; the household
//! example runs with the flows its preset documents.

mod common;

const EVENING: &str = include_str!("../../../scenarios/examples/household-evening.toml");

const EIGHT: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "game"
cc = "cubic"
start = "1s"
app = { kind = "download", size = "10MB", connections = 8 }
"#;

#[test]
fn eight_connections_finish_and_the_download_reports_its_last_one() {
    let out = common::run_toml(EIGHT, &[]);
    let d = &out.summary["downloads"]["game"];
    assert_eq!(d["connections"], 8, "{d}");
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(d["parts_completed"], 8);
    assert_eq!(d["bytes_delivered"], 10_000_000);
    assert_eq!(d["start_s"], 1.0);
    let mut last = 0.0f64;
    for j in 0..8 {
        let f = common::flow(&out, &format!("game.{j}"));
        // 10 MB / 8
        assert_eq!(f["bytes_delivered"], 1_250_000, "game.{j}");
        last = last.max(common::f64_of(&f["completion_s"]));
    }
    let completion = common::f64_of(&d["completion_s"]);
    assert_eq!(completion, last);
    // 10 MB at 20 Mbit/s takes 4 s on the wire; slow start and the
    // handshake add a little.
    assert!((4.0..6.0).contains(&completion), "{completion}");
    let goodput = common::f64_of(&d["goodput_bps"]);
    assert!((goodput - 80e6 / completion).abs() < 1.0, "{goodput}");
}

/// Over the QUIC-style transport (the emulator's carrier for downloads):
/// the same parts, each its own connection, and a completion near TCP's.
#[test]
fn over_quic_each_part_is_a_connection_and_the_download_completes_alike() {
    let tcp = common::run_toml(EIGHT, &[]);
    let out = common::run_toml(EIGHT, &["flows[0].transport.protocol=quic"]);
    let d = &out.summary["downloads"]["game"];
    assert_eq!(d["complete"], true, "{d}");
    assert_eq!(d["bytes_delivered"], 10_000_000);
    for j in 0..8 {
        let f = common::flow(&out, &format!("game.{j}"));
        assert_eq!(f["transport"], "quic", "game.{j}");
        assert_eq!(f["bytes_delivered"], 1_250_000, "game.{j}");
        // Its own handshake: a connection per part.
        assert!(f["app_metrics"]["client"]["handshake_ms"].as_f64().unwrap() > 0.0);
    }
    let (q, t) = (
        common::f64_of(&d["completion_s"]),
        common::f64_of(&tcp.summary["downloads"]["game"]["completion_s"]),
    );
    assert!((q - t).abs() < 0.25 * t, "quic {q} s, tcp {t} s");
}

/// A stop ends the writing: what the socket holds (up to
/// `transport.send_buffer`, 4 MiB) still goes, so the parts here are larger.
#[test]
fn a_stopped_download_is_not_complete() {
    let out = common::run_toml(EIGHT, &["flows[0].app.stop=2s", "flows[0].app.size=100MB"]);
    let d = &out.summary["downloads"]["game"];
    assert_eq!(d["complete"], false, "{d}");
    assert_eq!(d["parts_stopped"], 8, "{d}");
    assert_eq!(d["completion_s"], serde_json::Value::Null);
    let got = d["bytes_delivered"].as_u64().unwrap();
    assert!(got > 1_000_000 && got < 100_000_000, "{got}");
}

#[test]
fn the_evening_household_runs_its_documented_flows() {
    let out = common::run_toml(EVENING, &[]);
    let names: Vec<&str> = out.summary["scenario"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = Vec::new();
    for j in 0..8 {
        want.push(Box::leak(format!("update.{j}").into_boxed_str()));
    }
    want.extend(["home.video", "home.browse"]);
    for j in 0..8 {
        want.push(Box::leak(format!("home.game.{j}").into_boxed_str()));
    }
    want.push("home.photos");
    assert_eq!(names, want);
    let downloads = out.summary["downloads"].as_object().unwrap();
    assert_eq!(
        downloads.keys().collect::<Vec<_>>(),
        ["home.game", "home.photos", "update"]
    );
    // The 40 MB update finishes beside the household; the 20 GB game does not.
    assert_eq!(downloads["update"]["complete"], true);
    assert_eq!(downloads["home.game"]["complete"], false);
    // The photo backup goes up.
    assert_eq!(common::flow(&out, "home.photos")["direction"], "up");
    let video = &common::flow(&out, "home.video")["app_metrics"];
    assert!(video.is_object(), "{video}");
    eprintln!(
        "update {} | video {} | browse {}",
        downloads["update"],
        video,
        common::flow(&out, "home.browse")["app_metrics"]["page_load_ms"]
    );
}

#[test]
fn household_copies_draw_their_own_random_streams_the_same_every_run() {
    let text = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "50Mbit"
delay = "10ms"
buffer = "100ms"
[[households]]
preset = "evening"
name = "h"
count = 2
"#;
    let a = common::run_toml(text, &[]);
    let pages = |out: &l4slab_sim::RunOutput, k: u32| {
        common::flow(out, &format!("h.{k}.browse"))["app_metrics"].clone()
    };
    // Each copy's browser reads its pages and thinks for its own times (its
    // stream is derived from its flow's name).
    assert_ne!(pages(&a, 0), pages(&a, 1));
    // The same scenario and seed: the same results.
    let b = common::run_toml(text, &[]);
    assert_eq!(a.summary, b.summary);
}
