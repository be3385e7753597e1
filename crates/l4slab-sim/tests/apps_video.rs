//! `video_stream` through the simulator: an HD stream (Apple's HLS ladder,
//! 6 s segments, a 30 s buffer target) on a link that carries its top rung
//! and on one that does not; the scenario's checks of its keys.

mod common;

use common::{f64_of, flow, run_toml, series};
use l4slab_scenario::{parse_with, ParseOptions};

fn video(rate: &str, abr: &str, protocol: &str, secs: u32) -> String {
    format!(
        r#"
format = 1
duration = "{secs}s"
[bottleneck]
rate = "{rate}"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "tv"
cc = "cubic"
transport = {{ protocol = "{protocol}" }}
app = {{ kind = "video_stream", abr = "{abr}" }}
"#
    )
}

#[test]
fn an_hd_stream_on_10_mbit_starts_climbs_to_a_high_rung_and_never_stalls() {
    for abr in ["throughput", "bba", "bola"] {
        let out = run_toml(&video("10Mbit", abr, "tcp", 180), &[]);
        let m = &flow(&out, "tv")["app_metrics"];
        // The first segment (730 kbit/s x 6 s = 548 KB at the initial rung,
        // 145 kbit/s for BBA) takes well under a second at 10 Mbit/s.
        let startup = f64_of(&m["startup_delay_s"]);
        assert!(startup > 0.02 && startup < 1.5, "{abr}: {m}");
        assert_eq!(m["rebuffer_events"], 0, "{abr}: {m}");
        let top = m["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["bitrate_bps"].as_u64().unwrap())
            .max()
            .unwrap();
        // 7800 kbit/s fits 10 Mbit/s (with the safety factor: 0.9 x ~9.5).
        assert!(top >= 6_000_000, "{abr}: top {top}: {m}");
        // At the target the player is on/off: one segment per segment
        // played, so in 180 s at most (180 + 30) / 6 = 35 segments.
        let fetched = m["segments_fetched"].as_u64().unwrap();
        assert!((25..=35).contains(&fetched), "{abr}: {fetched}: {m}");
        let buf = series(&out, "flow/tv", "video_buffer_s");
        let max = buf.iter().copied().fold(0.0, f64::max);
        // It fills up to the target (30 s) and no further.
        assert!((24.0..=30.0).contains(&max), "{abr}: max buffer {max} s");
    }
}

#[test]
fn on_1_mbit_the_throughput_rule_stays_on_a_low_rung() {
    let out = run_toml(&video("1Mbit", "throughput", "tcp", 60), &[]);
    let m = &flow(&out, "tv")["app_metrics"];
    let segs = m["segments"].as_array().unwrap();
    assert!(segs.len() >= 5, "{m}");
    // After the first (730 kbit/s, the initial guess) every segment is below
    // 0.9 x 1 Mbit/s: 730 kbit/s at most.
    for s in &segs[1..] {
        assert!(s["bitrate_bps"].as_u64().unwrap() <= 730_000, "{m}");
    }
    assert!(f64_of(&m["mean_bitrate_bps"]) < 1_000_000.0, "{m}");
}

#[test]
fn over_quic_each_segment_is_a_stream_and_the_player_is_the_same() {
    let out = run_toml(&video("10Mbit", "bola", "quic", 60), &[]);
    let f = flow(&out, "tv");
    let m = &f["app_metrics"];
    assert_eq!(m["transport"], "quic", "{m}");
    assert_eq!(m["rebuffer_events"], 0, "{m}");
    assert!(m["segments_fetched"].as_u64().unwrap() >= 10, "{m}");
    assert!(!series(&out, "flow/tv", "video_bitrate_bps").is_empty());
}

fn parse_err(app: &str) -> String {
    let toml = format!(
        "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"10Mbit\"\ndelay = \"10ms\"\nbuffer = \"100ms\"\n[[flows]]\napp = {app}\n"
    );
    let opts = ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    match parse_with(&toml, "test", &[], &opts) {
        Ok(_) => panic!("{app} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_video_keys_are_errors_at_their_key_path() {
    let e = parse_err(r#"{ kind = "video_stream", ladder = [] }"#);
    assert!(
        e.contains("flows[0].app.ladder") && e.contains("at least one rung"),
        "{e}"
    );
    let e = parse_err(r#"{ kind = "video_stream", ladder = ["2Mbit", "1Mbit"] }"#);
    assert!(e.contains("flows[0].app.ladder[1]"), "{e}");
    let e = parse_err(r#"{ kind = "video_stream", ladder = "netflix" }"#);
    assert!(
        e.contains("flows[0].app.ladder") && e.contains("apple_hls"),
        "{e}"
    );
    let e = parse_err(r#"{ kind = "video_stream", segment = "6s", buffer_target = "4s" }"#);
    assert!(
        e.contains("flows[0].app.buffer_target") && e.contains("below one segment"),
        "{e}"
    );
    let e = parse_err(r#"{ kind = "video_stream", abr = "mpc" }"#);
    assert!(e.contains("flows[0].app.abr") && e.contains("bola"), "{e}");
    let e = parse_err(r#"{ kind = "video_stream", startup = "40s" }"#);
    assert!(e.contains("flows[0].app.startup"), "{e}");
}

#[test]
fn the_example_runs_and_the_stream_plays_beside_the_download() {
    let toml = include_str!("../../../scenarios/examples/video-stream.toml");
    let out = run_toml(toml, &[]);
    let m = &flow(&out, "tv")["app_metrics"];
    println!("{}", serde_json::to_string(&m["segment_fetch_ms"]).unwrap());
    for k in [
        "startup_delay_s",
        "rebuffer_events",
        "rebuffer_s",
        "mean_bitrate_bps",
        "bitrate_switches",
        "segments_fetched",
    ] {
        println!("{k} = {}", m[k]);
    }
    assert!(f64_of(&m["startup_delay_s"]) < 2.0, "{m}");
    assert!(m["segments_fetched"].as_u64().unwrap() >= 15, "{m}");
}
