//! `web_browse` over parallel HTTP/1.1 connections (`connections = K`)
//! through the simulator, on a scripted page: an idle 100 Mbit/s link with
//! a 20 ms base RTT, pages of a 1 KB HTML and 12 embedded objects of 1 KB
//! (one segment each, within every initial window), no parsing time, so
//! each request costs one round trip and the page load counts round trips:
//!
//! * one multiplexed connection: the HTML, then all 12 at once: 2 RTTs;
//! * six HTTP/1.1 connections, page 1: the HTML (1 RTT) on connection 0;
//!   then object 0 on it (1 RTT) and objects 1-5 on five new connections,
//!   each a handshake then its request (2 RTTs); the other six follow as
//!   connections free up: 4 RTTs. Later pages find the six open: two waves
//!   of six after the HTML, 3 RTTs;
//! * one HTTP/1.1 connection: the HTML and the 12, one after another: 13 RTTs;
//! * `K` connections in general: `1 + ⌈12 / K⌉` RTTs, one more on page 1
//!   when `K > 1`; with 12, later pages load as fast as multiplexed.

mod common;

use serde_json::Value;

const PAGE: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "browse"
cc = "cubic"
app = { kind = "web_browse", reading_time = "1s", parsing_time = "0s", html_size_min = "1KB", html_size_max = "1KB", object_size_min = "1KB", object_size_max = "1KB", objects_shape = 0.0001, objects_scale = 2, objects_cap = 14 }
"#;

/// The page metrics (reported by connection 0) and the run's summary.
fn run(connections: &str) -> (Value, Value) {
    let set = format!("flows[0].app.connections={connections}");
    let out = common::run_toml(PAGE, &[set.as_str()]);
    let first = match connections {
        "\"multiplexed\"" | "1" => "browse",
        _ => "browse.0",
    };
    let r = common::flow(&out, first)["app_metrics"].clone();
    (r, out.summary)
}

/// Page `i`'s load time in round trips of 20 ms.
fn rtts(r: &Value, i: usize) -> f64 {
    common::f64_of(&r["pages"][i]["load_s"]) / 0.020
}

fn responses(r: &Value) -> Vec<u64> {
    r["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["responses"].as_u64().unwrap())
        .collect()
}

#[test]
fn page_loads_count_round_trips_per_connection_as_the_model_says() {
    // Serialization at 100 Mbit/s and the ACKs add well under a round trip.
    let near = |x: f64, n: u64| x >= n as f64 && x < n as f64 + 0.5;
    let (mux, _) = run("\"multiplexed\"");
    assert!(mux["pages_loaded"].as_u64().unwrap() >= 3, "{mux}");
    for i in 0..3 {
        assert_eq!(mux["pages"][i]["objects"], 12);
        assert!(near(rtts(&mux, i), 2), "multiplexed page {i}: {mux}");
    }
    for k in [1u64, 2, 4, 6, 12] {
        let (r, summary) = run(&k.to_string());
        eprintln!(
            "{k} connections: {} pages, load_s {:?}, responses {:?}",
            r["pages_loaded"],
            (0..3)
                .map(|i| r["pages"][i]["load_s"].clone())
                .collect::<Vec<_>>(),
            responses(&r)
        );
        assert!(r["pages_loaded"].as_u64().unwrap() >= 3, "{k}: {r}");
        // The HTML, then 12 objects in waves of k, one request per
        // connection at a time; page 1 waits for the new connections'
        // handshakes, later pages find them open (persistent).
        let waves = 12u64.div_ceil(k);
        let handshake = u64::from(k > 1);
        assert!(near(rtts(&r, 0), 1 + waves + handshake), "{k}: {r}");
        assert!(near(rtts(&r, 1), 1 + waves), "{k}: {r}");
        assert!(near(rtts(&r, 2), 1 + waves), "{k}: {r}");
        // One flow per connection; connection 0 reports for the session.
        let flows = summary["flows"].as_object().unwrap();
        assert_eq!(responses(&r).len() as u64, k);
        for j in 1..k {
            let name = format!("browse.{j}");
            assert_eq!(flows[&name]["app"], "web_browse");
            assert!(flows[&name].get("app_metrics").is_none(), "only .0 reports");
        }
        // The connections opened for page 1's objects were asked for when
        // the HTML had arrived (1 RTT after the page's start) and are
        // established one round trip later.
        let conns = r["connections"].as_array().unwrap();
        let page0 = common::f64_of(&r["pages"][0]["start_s"]);
        for c in &conns[1..] {
            let opened = common::f64_of(&c["opened_s"]) - page0;
            assert!(opened > 0.040 && opened < 0.045, "{k}: {c}");
        }
        // Every response counted once: 13 per loaded page, and part of the
        // page under way at the end.
        let total: u64 = responses(&r).iter().sum();
        let loaded = r["pages_loaded"].as_u64().unwrap();
        assert!(
            total >= 13 * loaded && total < 13 * (loaded + 1),
            "{k}: {r}"
        );
        // Each connection carries its share of every page's objects (on
        // page 1, connection 0 takes more while the others open).
        assert!(
            responses(&r).iter().all(|&n| n >= (12 / k) * (loaded - 1)),
            "{k}: {r}"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_run_and_the_same_pages_as_multiplexed() {
    let (a, sa) = run("6");
    let (b, sb) = run("6");
    assert_eq!(sa["flows"], sb["flows"], "same seed, same results");
    assert_eq!(a, b);
    // The pages come from the stream of the session's name, whatever the transport.
    let (mux, _) = run("\"multiplexed\"");
    let html = |r: &Value, i: usize| r["pages"][i]["html_bytes"].clone();
    assert_eq!(html(&a, 0), html(&mux, 0));
    assert_eq!(
        a["pages"][0]["objects"], mux["pages"][0]["objects"],
        "same page"
    );
}
