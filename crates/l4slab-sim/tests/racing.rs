//! A multi-homed client (`[[hosts.NAME.paths]]`) and connection racing
//! (`racing`, RFC 8305 §5; docs/models/racing.md): a 100 KB fetch over a
//! phone with a Wi-Fi path (5 ms, 50 Mbit/s) and a cellular path (30 ms,
//! 10 Mbit/s) to a server 10 ms beyond a 100 Mbit/s bottleneck.

mod common;

use common::{f64_of, flow, run_toml};

const PHONE: &str = r#"
format = 1
duration = "20s"

[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"

[hosts.phone]
side = "client"

[[hosts.phone.paths]]
name = "wifi"
access_delay = "5ms"
access = { rate = "50Mbit", buffer = "100pkt" }

[[hosts.phone.paths]]
name = "lte"
access_delay = "30ms"
access = { rate = "10Mbit", buffer = "100pkt" }

[[flows]]
name = "get"
cc = "cubic"
app = { kind = "file", size = "100KB" }
"#;

/// The flow's `multipath` entry.
fn mp(out: &l4slab_sim::RunOutput) -> serde_json::Value {
    flow(out, "get")["multipath"].clone()
}

/// Wi-Fi down from the start for `until` (in TOML), racing as written.
fn wifi_out(until: &str, racing: &str) -> l4slab_sim::RunOutput {
    let outage = format!("hosts.phone.paths[0].outages=[{{ start = \"0s\", end = \"{until}\" }}]");
    let racing = format!("hosts.phone.racing={racing}");
    run_toml(PHONE, &[&outage, &racing])
}

fn secs(v: &serde_json::Value, key: &str) -> f64 {
    assert!(v[key].is_number(), "{key}: {v}");
    f64_of(&v[key])
}

#[test]
fn both_paths_good_the_preferred_carries_everything() {
    let out = run_toml(PHONE, &[]);
    let m = mp(&out);
    assert_eq!(m["path"], "wifi", "{m}");
    assert_eq!(m["racing"], true);
    assert_eq!(m["racing_fired"], false, "{m}");
    assert_eq!(m["attempts_abandoned"], 0);
    // The racing cost: nothing (the handshake took 2 x 15 ms < 250 ms).
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    // 100 KB over the 50 Mbit/s Wi-Fi: 100,000 B of payload and headers down.
    let down = m["paths"]["wifi"]["bytes_down"].as_u64().unwrap();
    assert!((100_000..110_000).contains(&down), "{m}");
    // The handshake is one RTT over Wi-Fi: 2 x (5 + 10) ms plus serialization.
    let c = secs(&m, "connected_s");
    assert!((0.030..0.031).contains(&c), "{m}");
    assert!(secs(&m, "time_to_completion_s") < 0.2, "{m}");
}

#[test]
fn wifi_out_with_racing_the_second_attempt_goes_at_the_delay_and_wins() {
    let out = wifi_out("30s", "\"250ms\"");
    let m = mp(&out);
    assert_eq!(m["path"], "lte", "{m}");
    assert_eq!(m["racing_fired"], true);
    // Exactly the Connection Attempt Delay after the first SYN.
    assert_eq!(secs(&m, "second_attempt_s"), 0.25, "{m}");
    // Then one LTE round trip: 2 x (30 + 10) ms, plus serialization.
    let c = secs(&m, "connected_s");
    assert!((0.330..0.332).contains(&c), "{m}");
    // The first attempt is dropped; the Wi-Fi carried its one SYN (60 B).
    assert_eq!(m["attempts_abandoned"], 1);
    assert_eq!(m["paths"]["wifi"]["bytes"], 60, "{m}");
    assert_eq!(m["paths"]["wifi"]["packets_up"], 1, "{m}");
    // About delay + handshake + the transfer over 10 Mbit/s LTE (slow
    // start over an 80 ms RTT: request, then IW 10 and two more rounds).
    let done = secs(&m, "time_to_completion_s");
    assert!((0.5..0.7).contains(&done), "{m}");
    let lte_down = m["paths"]["lte"]["bytes_down"].as_u64().unwrap();
    assert!(lte_down > 100_000, "{m}");
}

#[test]
fn a_set_delay_is_the_time_of_the_second_attempt() {
    let out = wifi_out("30s", "\"100ms\"");
    let m = mp(&out);
    assert_eq!(secs(&m, "second_attempt_s"), 0.1, "{m}");
    let c = secs(&m, "connected_s");
    assert!((0.180..0.182).contains(&c), "{m}");
}

#[test]
fn wifi_out_without_racing_waits_out_the_syn_retries() {
    // The Wi-Fi comes back at 2.5 s: SYNs at 0, 1 s (RTO 1 s) and 3 s
    // (backed off to 2 s, Linux TCP_TIMEOUT_INIT and RFC 6298 §5.5); the third
    // gets through.
    let out = wifi_out("2.5s", "false");
    let m = mp(&out);
    assert_eq!(m["racing"], false);
    assert_eq!(m["racing_fired"], false);
    assert_eq!(m["path"], "wifi", "{m}");
    let c = secs(&m, "connected_s");
    assert!((3.030..3.031).contains(&c), "{m}");
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    assert!(
        m["paths"]["wifi"]["packets_up"].as_u64().unwrap() > 3,
        "{m}"
    );
    // Racing on the same path: about 0.6 s instead of about 3.1 s.
    let raced = mp(&wifi_out("2.5s", "true"));
    assert!(secs(&raced, "time_to_completion_s") < 0.7, "{raced}");
    assert!(secs(&m, "time_to_completion_s") > 3.0, "{m}");
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let a = wifi_out("1s", "\"250ms\"");
    let b = wifi_out("1s", "\"250ms\"");
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.stats, b.stats);
    let quic = [
        "flows[0].transport.protocol=quic",
        "hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"1s\" }]",
    ];
    let (a, b) = (run_toml(PHONE, &quic), run_toml(PHONE, &quic));
    assert_eq!(a.summary, b.summary);
    assert_eq!(mp(&a)["racing_fired"], true);
}

#[test]
fn each_path_is_a_queue_of_its_own() {
    let out = run_toml(PHONE, &[]);
    for q in [
        "access.phone.wifi.down",
        "access.phone.wifi.up",
        "access.phone.lte.down",
        "access.phone.lte.up",
    ] {
        assert!(
            out.summary["queues"][q].is_object(),
            "{q}: {}",
            out.summary["queues"]
        );
    }
    assert_eq!(
        out.summary["queues"]["access.phone.lte.down"]["sent_packets"],
        0
    );
}

#[test]
fn the_cost_estimate_counts_the_paths_queues_and_their_rows() {
    use l4slab_scenario::cost::Cost;
    // A download saturating the bottleneck over a faster Wi-Fi path, traced
    // (the estimate counts packets at the bottleneck's rate).
    let sets = [
        "flows[0].app=bulk",
        "packet_trace=true",
        "duration=4s",
        "hosts.phone.paths[0].access.rate=200Mbit",
    ];
    let scn = common::scenario(PHONE, &sets);
    let cost = Cost::estimate(&scn);
    assert_eq!(cost.access_links_per_packet, 1);
    let out = run_toml(PHONE, &sets);
    let rows = out.series.len() as u64;
    assert!(
        rows <= cost.series_rows && rows * 2 >= cost.series_rows,
        "{rows} vs {}",
        cost.series_rows
    );
    let traced = out.packets.as_ref().expect("traced").rows() as u64;
    let ratio = cost.trace_rows as f64 / traced as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "trace rows: estimate {} vs {traced}",
        cost.trace_rows
    );
}

#[test]
fn a_slow_preferred_path_that_completes_first_still_wins_and_the_race_costs_a_syn() {
    // Wi-Fi RTT 2 x (150 + 10) ms = 320 ms: racing fires at 250 ms, the LTE
    // handshake would complete at 330 ms, the Wi-Fi one does at 320 ms.
    let out = run_toml(PHONE, &["hosts.phone.paths[0].access_delay=150ms"]);
    let m = mp(&out);
    assert_eq!(m["racing_fired"], true, "{m}");
    assert_eq!(m["path"], "wifi", "{m}");
    assert!((0.320..0.321).contains(&secs(&m, "connected_s")), "{m}");
    assert_eq!(m["attempts_abandoned"], 1);
    // The losing attempt: its SYN up, the server's SYN/ACK down (discarded
    // at the phone: the attempt was dropped at 320 ms).
    let lte = &m["paths"]["lte"];
    assert_eq!(
        (lte["packets_up"].as_u64(), lte["packets_down"].as_u64()),
        (Some(1), Some(1)),
        "{m}"
    );
    assert!(lte["bytes"].as_u64().unwrap() <= 2 * 60 + 8, "{m}");
    assert_eq!(flow(&out, "get")["bytes_delivered"], 100_000);
}

#[test]
fn a_quic_flow_races_its_handshake_too() {
    let wifi_out = "hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"1s\" }]";
    let quic = "flows[0].transport.protocol=quic";
    let out = run_toml(PHONE, &[quic, wifi_out]);
    let m = mp(&out);
    assert_eq!(m["racing"], true, "{m}");
    assert_eq!(m["path"], "lte", "{m}");
    assert_eq!(secs(&m, "second_attempt_s"), 0.25, "{m}");
    // The client's handshake completes one LTE round trip later.
    let c = secs(&m, "connected_s");
    assert!((0.330..0.335).contains(&c), "{m}");
    assert_eq!(m["attempts_abandoned"], 1);
    // The first attempt's one Initial (a 1200-byte datagram) on the Wi-Fi:
    // dropped before its probe timeout (1 s before an RTT sample) fired.
    assert_eq!(m["paths"]["wifi"]["packets_up"], 1, "{m}");
    assert_eq!(m["paths"]["wifi"]["bytes"], 1228, "{m}");
    assert_eq!(m["paths"]["wifi"]["packets_down"], 0, "{m}");
    assert!(secs(&m, "time_to_completion_s") < 0.8, "{m}");
    assert_eq!(flow(&out, "get")["bytes_delivered"], 100_000);
    // Without racing it waits out the outage on the Wi-Fi.
    let out = run_toml(PHONE, &[quic, wifi_out, "hosts.phone.racing=false"]);
    let m = mp(&out);
    assert_eq!(m["path"], "wifi", "{m}");
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    assert!(secs(&m, "time_to_completion_s") > 1.0, "{m}");
    assert_eq!(flow(&out, "get")["bytes_delivered"], 100_000);
    // Both paths good: the preferred wins before the delay, LTE carries nothing.
    let m = mp(&run_toml(PHONE, &[quic]));
    assert_eq!(
        (m["path"].as_str(), m["racing_fired"].as_bool()),
        (Some("wifi"), Some(false)),
        "{m}"
    );
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
}

#[test]
fn a_rate_change_slows_the_path_from_its_time_on() {
    // The Wi-Fi falls to 2 Mbit/s at 50 ms, both directions (a weaker
    // signal): 100 KB then take about 0.4 s at that rate; racing does not
    // help (the handshake completed at 30 ms) and the LTE carries nothing.
    let change = "hosts.phone.paths[0].rate_changes=[{ at = \"50ms\", rate = \"2Mbit\" }]";
    let m = mp(&run_toml(PHONE, &[change]));
    assert_eq!(m["path"], "wifi", "{m}");
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    let done = secs(&m, "time_to_completion_s");
    assert!((0.42..0.6).contains(&done), "{m}");
    let out = run_toml(PHONE, &[change]);
    let q = &out.summary["queues"]["access.phone.wifi.down"];
    assert_eq!(
        q["rate_bps"], 50_000_000,
        "the configured rate is reported: {q}"
    );
}

/// Better route (docs/models/racing.md): a flow won on the second path is
/// told so when the preferred path's outage ends; it finishes where it is.
#[test]
fn a_flow_won_on_the_second_path_hears_of_the_better_route_when_the_outage_ends() {
    let m = mp(&wifi_out("2.5s", "\"250ms\""));
    assert_eq!(m["path"], "lte", "{m}");
    // The 100 KB fetch is done (0.6 s) before the Wi-Fi is back at 2.5 s.
    assert!(secs(&m, "time_to_completion_s") < 1.0, "{m}");
    assert!((secs(&m, "better_route_s") - 2.5).abs() < 1e-9, "{m}");
    assert_eq!(m["bytes_after_better_route"], 0, "{m}");
    // The outage ends after the run: no signal.
    let m = mp(&wifi_out("30s", "\"250ms\""));
    assert_eq!(m["path"], "lte", "{m}");
    assert!(m["better_route_s"].is_null(), "{m}");
    assert!(m["bytes_after_better_route"].is_null(), "{m}");
}

#[test]
fn a_long_transfer_finishes_on_the_second_path_and_counts_the_bytes_after_the_signal() {
    let outage = "hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"1s\" }]";
    let out = run_toml(PHONE, &[outage, "flows[0].app.size=5MB"]);
    let m = mp(&out);
    assert_eq!(m["path"], "lte", "{m}");
    assert!((secs(&m, "better_route_s") - 1.0).abs() < 1e-9, "{m}");
    // 5 MB over 10 Mbit/s: about 4 s, mostly after the signal at 1 s, all on LTE.
    assert!(secs(&m, "time_to_completion_s") > 3.0, "{m}");
    let after = m["bytes_after_better_route"].as_u64().expect("a count");
    let lte = m["paths"]["lte"]["bytes"].as_u64().expect("a count");
    assert!(after > lte / 2 && after < lte, "{after} of {lte}: {m}");
    assert_eq!(m["paths"]["wifi"]["bytes"], 60, "one SYN: {m}");
}

#[test]
fn a_flow_won_on_the_second_path_while_the_preferred_is_up_hears_at_once() {
    // The Wi-Fi loses only the first SYN (down until 0.2 s): LTE wins at
    // 0.25 s + one round trip, before the Wi-Fi's SYN retransmission at 1 s;
    // the Wi-Fi is usable then, so the signal comes at the connection.
    let outage = "hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"0.2s\" }]";
    let m = mp(&run_toml(PHONE, &[outage]));
    assert_eq!(m["path"], "lte", "{m}");
    assert_eq!(m["better_route_s"], m["connected_s"], "{m}");
}

#[test]
fn a_flow_on_the_preferred_path_has_no_better_route() {
    let m = mp(&run_toml(PHONE, &[]));
    assert_eq!(m["path"], "wifi", "{m}");
    assert!(m["better_route_s"].is_null(), "{m}");
    assert!(m["bytes_after_better_route"].is_null(), "{m}");
}

#[test]
fn a_quic_flow_won_on_the_second_path_hears_of_the_better_route_too() {
    let outage = "hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"2.5s\" }]";
    let m = mp(&run_toml(
        PHONE,
        &["flows[0].transport.protocol=quic", outage],
    ));
    assert_eq!(m["path"], "lte", "{m}");
    assert!((secs(&m, "better_route_s") - 2.5).abs() < 1e-9, "{m}");
}
