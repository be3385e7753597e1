//! "Nothing lost": for random dumbbells (rates, delays, buffers, loss models,
//! flow mixes in both directions, every application including datagram
//! ones), every packet created is delivered, dropped
//! with a typed reason, or still in the network at the end — `Sim::finish`
//! asserts this and the qdisc identities on every run — and the summary's
//! counters agree with each other. TCP flows run with or without TCP Fast
//! Open (RFC 7413), whose SYN data must not break any of this.

mod common;

use proptest::prelude::*;

fn scenario(
    rate_mbit: u32,
    delay_ms: u32,
    buffer_pkts: u32,
    loss: &str,
    flows: &[(bool, App, u32)],
    fastopen: bool,
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
        let app_kind = app;
        let app = match app {
            App::File(kb) => format!(r#"{{ kind = "file", size = "{kb}KB" }}"#),
            App::Bulk => r#""bulk""#.to_string(),
            App::Ping(ms) => format!(r#"{{ kind = "ping", interval = "{ms}ms" }}"#),
            App::ScreenShare(kb) => {
                format!(r#"{{ kind = "screen_share", frame_size = "{kb}KB" }}"#)
            }
            App::Web(kb, at_ms, new) => format!(
                r#"{{ kind = "web", objects = [{{ size = "{kb}KB" }}, {{ size = "1KB", at = "{at_ms}ms", connection = "{}" }}] }}"#,
                if *new { "new" } else { "existing" }
            ),
            App::CloudGaming(mbit) => {
                format!(r#"{{ kind = "cloud_gaming", max_bitrate = "{mbit}Mbit" }}"#)
            }
            App::VideoCall => r#""video_call""#.to_string(),
            App::QuicBulk => r#""bulk""#.to_string(),
            App::QuicFile(kb) => format!(r#"{{ kind = "file", size = "{kb}KB" }}"#),
            App::QuicWeb(kb, at_ms, new) => format!(
                r#"{{ kind = "web", objects = [{{ size = "{kb}KB" }}, {{ size = "1KB", at = "{at_ms}ms", connection = "{}" }}] }}"#,
                if *new { "new" } else { "existing" }
            ),
            App::Rtp(kind, cc) => format!(
                r#"{{ kind = "{}", transport = "rtp", media_cc = "{}" }}"#,
                ["cloud_gaming", "video_call", "screen_share"][*kind as usize],
                ["gcc", "scream"][*cc as usize]
            ),
        };
        // An RTP flow has no TCP transport to configure; a QUIC one names it.
        let transport = match app_kind {
            App::QuicBulk | App::QuicFile(_) | App::QuicWeb(..) => {
                "transport = { protocol = \"quic\" }\n"
            }
            App::Rtp(..) => "",
            _ if fastopen => "transport = { fastopen = true }\n",
            _ => "",
        };
        s += &format!(
            r#"
[[flows]]
client = "{}"
direction = "{}"
start = "{start_ms}ms"
app = {app}
{transport}"#,
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
    /// A `kb` KB object, then 1 KB at `at` ms, on a new connection or not.
    Web(u32, u32, bool),
    CloudGaming(u32),
    VideoCall,
    /// Bulk, or a `kb` KB file, over the QUIC-style transport.
    QuicBulk,
    QuicFile(u32),
    /// `Web` over the QUIC-style transport: one stream per object on the
    /// page's connection, a QUIC flow of its own for a new connection.
    QuicWeb(u32, u32, bool),
    /// A cloud game (0), a call (1) or a screen share (2) over RTP, with
    /// GCC (0) or SCReAM (1).
    Rtp(u8, u8),
}

fn app() -> impl Strategy<Value = App> {
    prop_oneof![
        Just(App::Bulk),
        (1u32..400).prop_map(App::File),
        (5u32..200).prop_map(App::Ping),
        (1u32..60).prop_map(App::ScreenShare),
        (1u32..400, 0u32..1400, any::<bool>()).prop_map(|(kb, at, new)| App::Web(kb, at, new)),
        (1u32..50).prop_map(App::CloudGaming),
        Just(App::VideoCall),
        (0u8..3, 0u8..2).prop_map(|(k, cc)| App::Rtp(k, cc)),
        Just(App::QuicBulk),
        (1u32..400).prop_map(App::QuicFile),
        (1u32..400, 0u32..1400, any::<bool>()).prop_map(|(kb, at, new)| App::QuicWeb(kb, at, new)),
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
        fastopen in any::<bool>(),
    ) {
        let text = scenario(rate, delay, buffer, &loss, &flows, fastopen);
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
        // Flows in scenario order (a web page's new-connection object gets a
        // flow of its own right after it: `<page>.obj1`).
        let scn = &s["scenario"]["flows"];
        let by_name = |n: &str| &s["flows"][n];
        let mut pages = Vec::new();
        for f in scn.as_array().unwrap() {
            let name = f["name"].as_str().unwrap();
            if f["app"]["kind"] == "web" && f["app"].get("page").is_none() {
                pages.push(by_name(name));
            }
            // Frames shown never outnumber frames captured, in each direction.
            let m = &by_name(name)["app_metrics"];
            for d in [m, &m["up"], &m["down"]] {
                if let Some(expected) = d["frames_expected"].as_u64() {
                    // Over RTP: every frame the receiver learnt of was shown,
                    // dropped or is still buffered; it never learns of more
                    // than were captured.
                    let n = |k: &str| d[k].as_u64().unwrap();
                    prop_assert_eq!(
                        n("frames_displayed") + n("frames_dropped") + n("frames_buffered_at_end"),
                        expected, "{}", d
                    );
                    prop_assert!(expected <= n("frames_captured"), "{}", d);
                } else if let Some(shown) = d["frames_displayed"].as_u64() {
                    prop_assert!(shown + d["frames_in_flight_at_end"].as_u64().unwrap()
                        == d["frames_captured"].as_u64().unwrap(), "{}", d);
                }
            }
        }
        for p in pages {
            // Every page lists both its objects, wherever they ran; a
            // completed object was requested.
            let m = &p["app_metrics"];
            prop_assert_eq!(m["objects_total"].as_u64(), Some(2));
            prop_assert!(m["objects_completed"].as_u64() <= m["objects_requested"].as_u64());
        }
        let flows_by_index: Vec<&serde_json::Value> = scn.as_array().unwrap().iter()
            .filter(|f| f["app"].get("page").is_none_or(|p| p.is_null()))
            .map(|f| by_name(f["name"].as_str().unwrap()))
            .collect();
        for (i, f) in flows_by_index.into_iter().enumerate() {
            // Every probe is answered, lost, or still pending at the end.
            if let App::Ping(_) = flows[i].1 {
                let m = &f["app_metrics"];
                let n = |k: &str| m[k].as_u64().unwrap();
                prop_assert_eq!(n("probes_sent"), n("replies") + n("lost") + n("pending_at_end"));
            }
            // A page over QUIC delivers at most its objects' bytes on its
            // connection; every completed object's bytes all arrived.
            if let App::QuicWeb(kb, _, new) = flows[i].1 {
                let m = &f["app_metrics"];
                let on_page: u64 = m["objects"].as_array().unwrap().iter()
                    .filter(|o| o["flow"] == f["app_metrics"]["objects"][0]["flow"])
                    .map(|o| o["size_bytes"].as_u64().unwrap()).sum();
                prop_assert_eq!(on_page, u64::from(kb) * 1000 + if new { 0 } else { 1000 });
                let done: u64 = m["objects"].as_array().unwrap().iter()
                    .filter(|o| o["flow"] == m["objects"][0]["flow"] && !o["completion_s"].is_null())
                    .map(|o| o["size_bytes"].as_u64().unwrap()).sum();
                let got = f["bytes_delivered"].as_u64().unwrap();
                prop_assert!(done <= got && got <= on_page, "{} <= {} <= {}", done, got, on_page);
                prop_assert_eq!(&f["transport"], "quic");
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
