//! "Nothing lost": for random dumbbells (rates, delays, buffers, loss models,
//! flow mixes in both directions, every application including datagram
//! ones), every packet created is delivered, dropped
//! with a typed reason, or still in the network at the end — `Sim::finish`
//! asserts this and the qdisc identities on every run — and the summary's
//! counters agree with each other.

mod common;

use proptest::prelude::*;

fn scenario(
    rate_mbit: u32,
    delay_ms: u32,
    buffer_pkts: u32,
    loss: &str,
    flows: &[(bool, App, u32)],
) -> String {
    let mut s = format!(
        r#"
format = 1
duration = "3s"
sample_interval = "250ms"
[bottleneck]
rate = "{rate_mbit}Mbit"
delay = "{delay_ms}ms"
buffer = "{buffer_pkts}pkt"
loss = {loss}
[hosts.near]
side = "client"
access_delay = "1ms"
[hosts.far]
side = "client"
access_delay = "15ms"
"#
    );
    for (i, (up, app, start_ms)) in flows.iter().enumerate() {
        let app = match app {
            App::File(kb) => format!(r#"{{ kind = "file", size = "{kb}KB" }}"#),
            App::Bulk => r#""bulk""#.to_string(),
            App::Ping(ms) => format!(r#"{{ kind = "ping", interval = "{ms}ms" }}"#),
            App::ScreenShare(kb) => {
                format!(r#"{{ kind = "screen_share", frame_size = "{kb}KB" }}"#)
            }
        };
        s += &format!(
            r#"
[[flows]]
client = "{}"
direction = "{}"
start = "{start_ms}ms"
app = {app}
"#,
            if i % 2 == 0 { "near" } else { "far" },
            if *up { "up" } else { "down" },
        );
    }
    s
}

#[derive(Clone, Copy, Debug)]
enum App {
    Bulk,
    File(u32),
    Ping(u32),
    ScreenShare(u32),
}

fn app() -> impl Strategy<Value = App> {
    prop_oneof![
        Just(App::Bulk),
        (1u32..400).prop_map(App::File),
        (5u32..200).prop_map(App::Ping),
        (1u32..60).prop_map(App::ScreenShare),
    ]
}

fn loss_model() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""0%""#.to_string()),
        (1u32..50).prop_map(|p| format!(r#""{}%""#, f64::from(p) / 10.0)),
        (1u32..20, 10u32..60).prop_map(|(p, r)| format!(
            r#"{{ kind = "gilbert_elliott", p = "{}%", r = "{r}%" }}"#,
            f64::from(p) / 10.0
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_packet_is_accounted_for(
        rate in 1u32..40,
        delay in 1u32..40,
        buffer in 2u32..200,
        loss in loss_model(),
        flows in prop::collection::vec((any::<bool>(), app(), 0u32..1500), 1..4),
    ) {
        let text = scenario(rate, delay, buffer, &loss, &flows);
        let out = common::run_toml(&text, &[]);
        let s = &out.summary;
        let p = &s["packets"];
        let (created, delivered, dropped, in_net) = (
            p["created"].as_u64().unwrap(),
            p["delivered"].as_u64().unwrap(),
            p["dropped"].as_u64().unwrap(),
            p["in_network_at_end"].as_u64().unwrap(),
        );
        prop_assert_eq!(created, delivered + dropped + in_net);
        // Queue drops (all reasons, wire loss included) add up to the packet drops.
        let queue_drops: u64 = s["queues"].as_object().unwrap().values()
            .map(|q| q["drops"]["total"].as_u64().unwrap()).sum();
        prop_assert_eq!(queue_drops, dropped);
        // Per flow: data plus ACK losses are all the drops.
        let flow_drops: u64 = s["flows"].as_object().unwrap().values()
            .map(|f| f["lost_packets"].as_u64().unwrap() + f["ack_packets_lost"].as_u64().unwrap()).sum();
        prop_assert_eq!(flow_drops, dropped);
        for (i, f) in s["flows"].as_object().unwrap().values().enumerate() {
            // Every probe is answered, lost, or still pending at the end.
            if let App::Ping(_) = flows[i].1 {
                let m = &f["app_metrics"];
                let n = |k: &str| m[k].as_u64().unwrap();
                prop_assert_eq!(n("probes_sent"), n("replies") + n("lost") + n("pending_at_end"));
            }
            // A file never delivers more than its size; a finished one delivered all of it.
            if let App::File(kb) = flows[i].1 {
                let size = u64::from(kb) * 1000;
                let got = f["bytes_delivered"].as_u64().unwrap();
                prop_assert!(got <= size, "delivered {} > size {}", got, size);
                if !f["completion_s"].is_null() {
                    prop_assert_eq!(got, size);
                }
            }
        }
    }
}
