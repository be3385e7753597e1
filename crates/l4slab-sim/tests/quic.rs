//! Flows over the QUIC-style transport (`[flows.transport] protocol =
//! "quic"`, docs/models/quic.md) through the simulator: the connection's
//! datagrams are carried as bytes through the same queues and links as TCP
//! segments. Bounds come from the path and the specs, not from measured runs.

mod common;

use common::{f64_of, flow, run_toml};

const FILE: &str = r#"
format = 1
duration = "10s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "q"
cc = "cubic"
transport = { protocol = "quic" }
app = { kind = "file", size = "2MB" }
"#;

#[test]
fn a_file_over_quic_arrives_whole_after_the_handshake() {
    let out = run_toml(FILE, &[]);
    let f = flow(&out, "q");
    assert_eq!(f["transport"], "quic");
    assert_eq!(f["bytes_delivered"], 2_000_000);
    // 2 MB at 20 Mbit/s is 0.8 s of payload; the handshake takes 1.5 RTT
    // (30 ms) before the server may send; slow start adds round trips.
    let done = f64_of(&f["completion_s"]);
    assert!(done > 0.8 + 0.03, "{done}");
    assert!(done < 3.0, "{done}");
    let server = &f["app_metrics"]["server"];
    // Every datagram went through the bottleneck as a packet of its size.
    assert!(server["datagrams_sent"].as_u64().unwrap() > 2_000_000 / 1200);
    assert_eq!(server["ecn"]["validation"], "Capable", "{server}");
    // The packet accounting covers QUIC datagrams: sent = delivered + dropped.
    let q = &out.summary["queues"]["bottleneck.down"];
    assert_eq!(
        q["offered_packets"].as_u64().unwrap(),
        q["sent_packets"].as_u64().unwrap() + q["drops"]["total"].as_u64().unwrap(),
        "{q}"
    );
}

#[test]
fn losses_on_the_path_are_repaired_and_counted_in_new_packets() {
    let out = run_toml(FILE, &["bottleneck.loss=1%"]);
    let f = flow(&out, "q");
    assert_eq!(f["bytes_delivered"], 2_000_000);
    let server = &f["app_metrics"]["server"];
    assert!(server["packets_lost"].as_u64().unwrap() > 0, "{server}");
    assert!(
        server["retransmitted_bytes"].as_u64().unwrap() > 0,
        "{server}"
    );
    assert!(f["lost_packets"].as_u64().unwrap() > 0);
}

/// Prague over QUIC next to Cubic over TCP, through DualPI2 at 50 Mbit/s.
const L4S: &str = r#"
format = 1
duration = "20s"
warmup = "5s"
[bottleneck]
rate = "50Mbit"
delay = "10ms"
buffer = "10000pkt"
qdisc = "dualpi2"
[[flows]]
name = "prague_quic"
cc = "prague"
transport = { protocol = "quic" }
app = "bulk"
[[flows]]
name = "cubic_tcp"
cc = "cubic"
app = "bulk"
"#;

#[test]
fn prague_over_quic_sends_ect1_into_the_l_queue_next_to_cubic() {
    let out = run_toml(L4S, &[]);
    let q = &out.summary["queues"]["bottleneck.down"];
    // The L queue holds only the QUIC flow's ECT(1) packets and keeps them
    // near the 1 ms step; the C queue holds Cubic's standing queue.
    let l = &q["subqueues"]["l"]["sojourn_ms"];
    assert!(f64_of(&l["p99"]) < 2.0, "{q}");
    assert!(l["samples"].as_u64().unwrap() > 10_000, "{q}");
    let prague = flow(&out, "prague_quic");
    let cubic = flow(&out, "cubic_tcp");
    let server = &prague["app_metrics"]["server"];
    assert_eq!(server["ecn"]["validation"], "Capable", "{server}");
    assert!(server["ecn"]["ect1_sent"].as_u64().unwrap() > 0);
    assert!(server["ecn"]["ce_reported"].as_u64().unwrap() > 0);
    // Both get a real share of the link (the coupling, RFC 9332).
    let (p, c) = (
        f64_of(&prague["goodput_bps"]),
        f64_of(&cubic["goodput_bps"]),
    );
    assert!(p > 10e6 && c > 10e6, "prague {p} cubic {c}");
    assert!(
        p + c > 0.9 * 50e6 * 1448.0 / 1500.0 * 0.9,
        "prague {p} cubic {c}"
    );
    // The flow-level keys describe the QUIC sender, not an idle TCP endpoint.
    assert_eq!(prague["ecn"], "quic");
    assert_eq!(prague["ecn_validation"], "capable");
    assert_eq!(prague["ce_packets_fed_back"], server["ecn"]["ce_reported"]);
    assert!(
        prague["ce_marks_received"].as_u64().unwrap() > 0,
        "{prague}"
    );
    assert_eq!(prague["cwnd_final_bytes"], server["cwnd_bytes"]);
    assert_eq!(prague["segments_sent"], server["packets_sent"]);
    assert!(prague["tlp_probes"].is_null());
    // One RTT sample per ACK that gave one: base RTT 20 ms, L queue ~1 ms.
    let rtt = &prague["rtt_ms"];
    assert!(rtt["samples"].as_u64().unwrap() > 1_000, "{rtt}");
    assert!(f64_of(&rtt["min"]) >= 20.0, "{rtt}");
    assert!(f64_of(&rtt["p99"]) < 25.0, "{rtt}");
}

#[test]
fn a_quic_flows_series_are_its_connections() {
    let out = run_toml(L4S, &["duration=3s", "warmup=0s"]);
    let cwnd: Vec<f64> = common::series(&out, "flow/prague_quic", "cwnd_bytes");
    let srtt: Vec<f64> = common::series(&out, "flow/prague_quic", "srtt_ms");
    assert!(!cwnd.is_empty() && !srtt.is_empty());
    // Prague's window moves (slow start, CE responses); an idle TCP endpoint's
    // would stay at its initial 10 segments.
    assert!(cwnd.iter().any(|&c| c != cwnd[0]), "{cwnd:?}");
    assert!(srtt.iter().all(|&r| (20.0..40.0).contains(&r)), "{srtt:?}");
}

#[test]
fn a_bleaching_path_fails_ecn_validation_and_the_flow_goes_on_without_ecn() {
    let out = run_toml(L4S, &["bottleneck.down.ecn_rewrite=bleach"]);
    let server = &flow(&out, "prague_quic")["app_metrics"]["server"];
    let validation = server["ecn"]["validation"].as_str().unwrap();
    assert!(validation.starts_with("Failed"), "{server}");
    assert_eq!(flow(&out, "prague_quic")["ecn_validation"], "bleached");
    // RFC 9000 §13.4.2: at most the testing period's packets were marked.
    assert!(
        server["ecn"]["ect1_sent"].as_u64().unwrap() <= 10,
        "{server}"
    );
    assert!(f64_of(&flow(&out, "prague_quic")["goodput_bps"]) > 5e6);
}

#[test]
fn an_ecn_black_hole_ends_testing_after_three_ptos_and_the_flow_goes_on_without_ecn() {
    // Every ECT packet dropped, both ways: the client's marked Initials never
    // arrive. RFC 9000 §13.4.2.1 ends the testing period after three PTO
    // periods (1 s initial PTO: about 3 s), then the Initial goes Not-ECT.
    // Before, the handshake repeated marked Initials and never connected.
    let prague_alone = L4S
        .split("[[flows]]")
        .take(2)
        .collect::<Vec<_>>()
        .join("[[flows]]");
    let out = run_toml(
        &prague_alone,
        &["bottleneck.ecn_rewrite=drop_ect", "warmup=0s"],
    );
    let f = flow(&out, "prague_quic");
    let server = &f["app_metrics"]["server"];
    // 17 of the 20 s at up to 50 Mbit/s, without ECN (the C queue's drops).
    assert!(f64_of(&f["goodput_bps"]) > 15e6, "{f}");
    assert!(
        server["ecn"]["ect1_sent"].as_u64().unwrap() <= 10,
        "{server}"
    );
    assert_ne!(f["ecn_validation"], "capable", "{f}");
    let drops = &out.summary["queues"]["bottleneck.up"]["drops"];
    assert!(drops["ecn_blackhole"].as_u64().unwrap() >= 1, "{drops}");
}

/// A page over 20 Mbit/s and a 20 ms RTT with a one-RTT buffer: 2 MB asked
/// for at 0 s and 1 KB at 0.2 s, on the page's connection.
const PAGE: &str = r#"
format = 1
duration = "5s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "20ms"
[[flows]]
name = "page"
cc = "cubic"
transport = { protocol = "quic" }
app = { kind = "web", objects = [{ size = "2MB", at = "0s" }, { size = "1KB", at = "0.2s" }] }
"#;

/// Completion of object `i` of the page (seconds from when it was asked for).
fn object_done(out: &l4slab_sim::RunOutput, i: usize) -> f64 {
    f64_of(&flow(out, "page")["app_metrics"]["objects"][i]["completion_s"])
}

#[test]
fn over_quic_a_small_object_is_not_blocked_behind_a_large_one() {
    let out = run_toml(PAGE, &[]);
    let f = flow(&out, "page");
    assert_eq!(f["transport"], "quic");
    assert_eq!(f["bytes_delivered"], 2_001_000);
    let m = &f["app_metrics"];
    assert_eq!(m["objects_completed"], 2, "{m}");
    // The 2 MB need 0.8 s of the link. The 1 KB object's own stream: its
    // request takes half an RTT to the server (the uplink carries only
    // ACKs), the response's one or two datagrams go out with the next
    // packets the round-robin sends, wait behind at most the buffer (one
    // RTT) and take half an RTT back: 2 RTTs. Allow 3 more for one loss of
    // the response in the large stream's slow-start overshoot (detection
    // after about an RTT, the repair's RTT, the ACK delay): 5 × 20 ms.
    let (large, small) = (object_done(&out, 0), object_done(&out, 1));
    assert!(large > 0.8, "{m}");
    assert!(small < 5.0 * 0.020, "{m}");
    assert!(0.2 + small < large, "{m}");
    // Per object, exactly the keys the TCP web app reports.
    let tcp = run_toml(PAGE, &[r#"flows[0].transport={ protocol = "tcp" }"#]);
    let keys = |v: &serde_json::Value| {
        v["app_metrics"]["objects"][0]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(f), keys(flow(&tcp, "page")));
}

#[test]
fn over_tcp_the_small_object_waits_for_the_large_response() {
    let out = run_toml(PAGE, &[r#"flows[0].transport={ protocol = "tcp" }"#]);
    let m = &flow(&out, "page")["app_metrics"];
    assert_eq!(m["objects_completed"], 2, "{m}");
    // HTTP/1.1 answers in request order on the one byte stream: the 1 KB
    // come after the 2 MB, which need 0.8 s of the link.
    let (large, small) = (object_done(&out, 0), object_done(&out, 1));
    assert!(0.2 + small >= large, "{m}");
    assert!(0.2 + small > 0.8, "{m}");
}

#[test]
fn a_page_over_quic_is_reproducible_and_its_new_connection_objects_are_quic_flows() {
    let sets = [
        "bottleneck.loss=1%",
        r#"flows[0].app={ kind = "web", objects = [{ size = "500KB" }, { size = "1KB", at = "0.2s" }, { size = "30KB", at = "0.3s", connection = "new" }] }"#,
    ];
    let a = run_toml(PAGE, &sets);
    let b = run_toml(PAGE, &sets);
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
    let part = flow(&a, "page.obj2");
    assert_eq!(part["transport"], "quic");
    let m = &flow(&a, "page")["app_metrics"];
    assert_eq!(m["objects_total"], 3, "{m}");
    assert_eq!(m["objects_completed"], 3, "{m}");
    assert_eq!(m["objects"][2]["flow"], "page.obj2");
    assert_eq!(m["objects"][2]["connection"], "new");
}

/// One Cubic bulk flow over QUIC, 20 Mbit/s, 20 ms base RTT, a 50-packet
/// FIFO (about 1.4 BDP of 1200-byte datagrams): slow start overflows it,
/// and the controller's state is sampled every millisecond.
const CUBIC_LOSS: &str = r#"
format = 1
duration = "2s"
sample_interval = "1ms"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "50pkt"
[[flows]]
name = "q"
cc = "cubic"
transport = { protocol = "quic" }
app = "bulk"
"#;

/// At the first sample in Recovery (the first loss's reduction): the
/// reduction's base (`cwnd_prior`, in datagrams), the slow-start threshold
/// and cwnd (bytes), and the largest cwnd sampled before it.
fn first_reduction(out: &l4slab_sim::RunOutput) -> (f64, f64, f64, f64) {
    let states = flow(out, "q")["cc_states"].as_array().unwrap().clone();
    let recovery = states.iter().position(|s| s == "Recovery").unwrap() as f64;
    let key = |k: &str| common::series(out, "flow/q", k);
    let (state, cwnd, ssthresh, prior) = (
        key("cc_state"),
        key("cwnd_bytes"),
        key("ssthresh_bytes"),
        key("cc.cwnd_prior_segments"),
    );
    let i = state
        .iter()
        .position(|&s| s == recovery)
        .expect("a loss reduction");
    // ssthresh is recorded from when it is first set (a HyStart++ exit or
    // the first reduction) to the end, every sample: align from the end.
    let j = ssthresh.len() - (state.len() - i);
    let before = cwnd[..i].iter().copied().fold(0.0, f64::max);
    (prior[i], ssthresh[j], cwnd[i], before)
}

#[test]
fn cubics_beta_over_quic_sets_the_reduction_after_a_loss() {
    let default = run_toml(CUBIC_LOSS, &[]);
    let half = run_toml(
        CUBIC_LOSS,
        &[r#"flows[0].cc={ kind = "cubic", beta = 0.5 }"#],
    );
    assert_eq!(
        flow(&half, "q")["cc_options"],
        serde_json::json!({ "beta": 0.5 })
    );
    let mds = 1200.0;
    let mut windows = Vec::new();
    for (out, beta) in [(&default, 0.7), (&half, 0.5)] {
        let (prior, ssthresh, cwnd, before) = first_reduction(out);
        println!("beta {beta}: cwnd_prior {prior} datagrams, ssthresh {ssthresh} B, cwnd {cwnd} B, max cwnd before {before} B");
        // RFC 9438 §4.6: ssthresh = cwnd_prior · β_cubic (whole segments,
        // as Linux), cwnd = ssthresh (RFC 9002 §7.3.2: the window drops at
        // once); in QUIC's unit, 1200-byte datagrams, not TCP's 1448 B.
        assert_eq!(ssthresh, (prior * beta + 1e-9).floor().max(2.0) * mds);
        assert_eq!(cwnd, ssthresh);
        // The base is the window at the loss in datagrams: at least what was
        // sampled before it (less the rounding down), at most double it
        // (slow start at most doubles per RTT, RFC 9002 §7.3.1; the last
        // sample is 1 ms, under one RTT, before the loss).
        assert!(prior * mds > before - mds, "{prior} {before}");
        assert!(prior * mds <= 2.0 * before, "{prior} {before}");
        assert!(f64_of(&flow(out, "q")["recovery_episodes"]) >= 1.0);
        windows.push((prior, cwnd));
    }
    // The runs are identical up to the first loss (β acts only at a
    // reduction), so the same window is cut to 70 % and to 50 %.
    assert_eq!(windows[0].0, windows[1].0);
    assert!(windows[1].1 < windows[0].1);
}

/// A 40 kB file over 100 Mbit/s and a 100 ms base RTT, in 1472-byte
/// datagrams (a 1500-byte MTU's UDP payload).
const SMALL_FILE: &str = r#"
format = 1
duration = "2s"
[bottleneck]
rate = "100Mbit"
delay = "50ms"
buffer = "1000pkt"
[[flows]]
name = "f"
cc = "cubic"
transport = { protocol = "quic", mss = 1472 }
app = { kind = "file", size = "40kB" }
"#;

#[test]
fn an_initial_window_of_32_datagrams_saves_a_round_trip_on_a_40_kb_file() {
    let rtt = 0.100;
    let default = run_toml(SMALL_FILE, &[]);
    let iw32 = run_toml(SMALL_FILE, &["flows[0].transport.initial_window=32"]);
    let done = |out: &l4slab_sim::RunOutput| {
        let f = flow(out, "f");
        assert_eq!(f["bytes_delivered"], 40_000);
        f64_of(&f["completion_s"])
    };
    let (d, w) = (done(&default), done(&iw32));
    println!("completion: default {d} s, initial_window = 32: {w} s");
    // The server sends once the client's Finished arrives, 1.5 RTT after
    // the flow starts (docs/models/quic.md); the data takes half an RTT more.
    // 32 datagrams of 1472 B carry the 40 kB (and their ~30 B of headers
    // each): one flight, done at 2 RTT plus its serialization (3.8 ms of
    // 48 kB at 100 Mbit/s).
    assert!(w >= 2.0 * rtt && w < 2.0 * rtt + 0.010, "{w}");
    // RFC 9002 §7.2's 10 datagrams (plus the handshake bytes acknowledged
    // in slow start, under 3 datagrams) carry under 18 kB: a second flight,
    // sent on the first's ACKs, arrives at least an RTT later; it is done
    // within that RTT plus the pacing of a window (at most 0.8 srtt, RFC
    // 9002 §7.7's 1.25·cwnd/srtt) and max_ack_delay (25 ms).
    assert!(d >= 3.0 * rtt, "{d}");
    assert!(d < 3.0 * rtt + 0.8 * rtt + 0.025 + 0.010, "{d}");
    // One flight fewer.
    assert!(d - w > rtt - 0.010, "{d} {w}");
}
