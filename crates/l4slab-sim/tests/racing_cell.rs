//! A multi-homed phone whose Wi-Fi path is its station in the scenario's
//! Wi-Fi cell (`wifi = true` in `[[hosts.NAME.paths]]`;
//! docs/models/racing.md, "A path through the Wi-Fi cell"): a 100 KB
//! fetch over an 802.11ax cell (1 ms behind the AP) or a cellular path
//! (30 ms, 10 Mbit/s), to a server 10 ms beyond a 100 Mbit/s bottleneck;
//! a laptop is the cell's other station.

mod common;

use common::{f64_of, flow, run_toml};

const PHONE: &str = r#"
format = 1
duration = "20s"

[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"

[wifi]
standard = "ax"
band = "5GHz"

[hosts.laptop]
side = "client"

[hosts.phone]
side = "client"

[[hosts.phone.paths]]
name = "wifi"
wifi = true
access_delay = "1ms"

[[hosts.phone.paths]]
name = "lte"
access_delay = "30ms"
access = { rate = "10Mbit", buffer = "100pkt" }

[[flows]]
name = "get"
client = "phone"
cc = "cubic"
app = { kind = "file", size = "100KB" }
"#;

/// The laptop's download beside the phone's fetch.
const LAPTOP: &str = r#"
[[flows]]
name = "laptop"
client = "laptop"
cc = "cubic"
app = "bulk"
"#;

/// The same phone with its Wi-Fi path a wired access link of the same
/// delay (1 Gbit/s: its serialization is a few microseconds).
fn wired() -> String {
    PHONE.replace(
        "wifi = true",
        "access = { rate = \"1Gbit\", buffer = \"100pkt\" }",
    )
}

fn mp(out: &l4slab_sim::RunOutput) -> serde_json::Value {
    flow(out, "get")["multipath"].clone()
}

fn secs(v: &serde_json::Value, key: &str) -> f64 {
    assert!(v[key].is_number(), "{key}: {v}");
    f64_of(&v[key])
}

/// Queue `name`'s summary entry at `keys` (`["drops", "link_loss"]`).
fn queue(out: &l4slab_sim::RunOutput, name: &str, keys: &[&str]) -> u64 {
    let q = &out.summary["queues"][name];
    keys.iter()
        .fold(q, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{name}.{keys:?}: {q}"))
}

#[test]
fn the_station_gone_at_the_start_the_second_attempt_goes_at_the_delay_on_lte() {
    let out = run_toml(
        PHONE,
        &["hosts.phone.paths[0].outages=[{ start = \"0s\", end = \"30s\" }]"],
    );
    let m = mp(&out);
    assert_eq!(m["path"], "lte", "{m}");
    assert_eq!(m["racing_fired"], true);
    // Exactly the Connection Attempt Delay (RFC 8305 §5, 250 ms) after the
    // first SYN, then one LTE round trip: 2 x (30 + 10) ms plus serialization.
    assert_eq!(secs(&m, "second_attempt_s"), 0.25, "{m}");
    let c = secs(&m, "connected_s");
    assert!((0.330..0.332).contains(&c), "{m}");
    assert_eq!(m["attempts_abandoned"], 1);
    // The Wi-Fi path took the first SYN, which its station's queue dropped
    // at once (out of the cell: the carrier is off); nothing went on air.
    assert_eq!(m["paths"]["wifi"]["packets_up"], 1, "{m}");
    assert_eq!(queue(&out, "wifi.phone.up.be", &["sent_packets"]), 0);
    assert_eq!(queue(&out, "wifi.phone.up.be", &["drops", "link_loss"]), 1);
    assert!(m["paths"]["lte"]["bytes_down"].as_u64().unwrap() > 100_000);
    assert!(secs(&m, "time_to_completion_s") < 0.7, "{m}");
}

#[test]
fn a_good_cell_carries_everything_its_first_byte_within_two_cell_rtts_of_the_wired_path() {
    let (cell, wire) = (run_toml(PHONE, &[]), run_toml(&wired(), &[]));
    let (m, w) = (mp(&cell), mp(&wire));
    assert_eq!(m["path"], "wifi", "{m}");
    assert_eq!(m["racing_fired"], false, "{m}");
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    let down = m["paths"]["wifi"]["bytes_down"].as_u64().unwrap();
    assert!((100_000..110_000).contains(&down), "{m}");
    // The cell's round trip: the handshake's extra time over the wired
    // path (the SYN and the SYN/ACK each cross the air once).
    let cell_rtt = secs(&m, "connected_s") - secs(&w, "connected_s");
    assert!((0.0001..0.001).contains(&cell_rtt), "{cell_rtt} {m} {w}");
    // The request and the first data segment cross the air too: measured
    // 1.03 ms later than wired, under two of the flow's cell RTTs (its mean
    // RTT, 23.74 ms, less the wired one, 23.12 ms: 0.62 ms).
    let later = secs(&m, "time_to_first_byte_s") - secs(&w, "time_to_first_byte_s");
    let rtt = |o: &l4slab_sim::RunOutput| f64_of(&flow(o, "get")["rtt_ms"]["mean"]) / 1e3;
    let flow_cell_rtt = rtt(&cell) - rtt(&wire);
    assert!(
        later > cell_rtt && later < 2.0 * flow_cell_rtt,
        "{later} {cell_rtt} {flow_cell_rtt}"
    );
    // The cell's queues carried the phone's packets.
    assert!(queue(&cell, "wifi.phone.down.be", &["sent_packets"]) > 60);
}

#[test]
fn the_phones_wifi_path_contends_for_airtime_with_the_other_station() {
    let alone = mp(&run_toml(PHONE, &["flows[0].start=\"2s\""]));
    // The phone's fetch starts 2 s into the laptop's download.
    let shared = run_toml(
        &format!("{PHONE}{LAPTOP}"),
        &["flows[0].start=\"2s\"", "duration=\"4s\""],
    );
    let m = mp(&shared);
    assert_eq!(m["path"], "wifi", "{m}");
    // The laptop's download fills the AP's queue for it and wins the air
    // about as often as the phone's queue: the fetch takes longer.
    let (t0, t1) = (
        secs(&alone, "time_to_completion_s"),
        secs(&m, "time_to_completion_s"),
    );
    eprintln!("fetch alone {t0} s, beside the laptop's download {t1} s");
    assert!(t1 > 1.2 * t0, "alone {t0} s, beside the laptop {t1} s");
    let laptop = f64_of(&flow(&shared, "laptop")["goodput_bps"]);
    assert!(laptop > 50e6, "{laptop}");
}

/// The fetch from 2 s with the station out of the cell in `[from, 3 s)`.
fn out_from(from: &str) -> l4slab_sim::RunOutput {
    let outage = format!("hosts.phone.paths[0].outages=[{{ start = \"{from}\", end = \"3s\" }}]");
    run_toml(PHONE, &["flows[0].start=\"2s\"", &outage])
}

#[test]
fn the_station_leaving_during_the_handshake_loses_the_syn_ack_and_racing_moves_on() {
    // The SYN crosses the air at once; the station leaves 15 ms later, and
    // the SYN/ACK reaches the AP about 21 ms after the start: the AP drops
    // it (it no longer knows the station).
    let out = out_from("2.015s");
    let m = mp(&out);
    assert_eq!(m["path"], "lte", "{m}");
    assert_eq!(secs(&m, "second_attempt_s"), 0.25, "{m}");
    assert_eq!(m["paths"]["wifi"]["packets_up"], 1, "{m}");
    assert_eq!(m["paths"]["wifi"]["packets_down"], 1, "{m}");
    assert_eq!(
        queue(&out, "wifi.phone.down.be", &["drops", "link_loss"]),
        1
    );
    assert_eq!(queue(&out, "wifi.phone.down.be", &["sent_packets"]), 0);
    // Better route: the station is back at 3 s, 1 s after the start.
    assert_eq!(secs(&m, "better_route_s"), 1.0, "{m}");
    let again = out_from("2.015s");
    assert_eq!(out.summary, again.summary);
}

#[test]
fn the_station_leaving_mid_transfer_stalls_the_flow_on_the_wifi_until_it_is_back() {
    // Connected at 22 ms, the station leaves 30 ms after the start: racing
    // is over (it is in the connection setup only); what crosses the air in
    // the window is lost, TCP's retransmission timer waits it out.
    let out = out_from("2.03s");
    let m = mp(&out);
    assert_eq!(m["path"], "wifi", "{m}");
    assert_eq!(m["racing_fired"], false, "{m}");
    assert_eq!(m["paths"]["lte"]["bytes"], 0, "{m}");
    let lost = queue(&out, "wifi.phone.down.be", &["drops", "link_loss"])
        + queue(&out, "wifi.phone.up.be", &["drops", "link_loss"]);
    assert!(lost > 0, "{}", out.summary["queues"]);
    assert!(f64_of(&flow(&out, "get")["rto_count"]) >= 1.0);
    // Done after the station is back (1 s after the start).
    assert!(secs(&m, "time_to_completion_s") > 1.0, "{m}");
}
