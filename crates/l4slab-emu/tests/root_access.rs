//! A host's access link in the emulator (`[hosts.NAME.access]`), end to end
//! with kernel TCP: the same scenario as the simulator's
//! `tests/access_link.rs`, run by the emulator's `run` plan, queues at the access
//! link as the simulated one does and gets the simulator's goodput; its
//! packet trace and pcap capture cover the access link as the simulator's
//! do (the runtime's queue events and capture points). Needs
//! root (network namespaces, TUN devices); as any other user it prints why
//! it is skipped and passes. (Wall-clock reads are fine in the emulator's
//! tests.)
#![allow(clippy::disallowed_methods)]

mod common;

use common::{emu, f64_of, root_or_skip, run_plan};

use std::process::Stdio;

use serde_json::Value;

use l4slab_emu::plan::Plan;

/// A laptop behind a 10 Mbit/s access link with a 100-packet FIFO, a
/// 100 Mbit/s shared bottleneck, one Cubic download.
const LAPTOP: &str = r#"format = 1
duration = "8s"
warmup = "2s"
sample_interval = "200ms"

[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"

[hosts.laptop]
side = "client"
access_delay = "2ms"
access = { rate = "10Mbit", buffer = "100pkt" }

[[flows]]
name = "dl"
cc = "cubic"
"#;

#[test]
fn an_emulated_access_link_holds_the_queue_and_the_simulators_goodput() {
    if !root_or_skip("an_emulated_access_link_holds_the_queue_and_the_simulators_goodput") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("l4slab-emu-access-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("laptop.toml");
    std::fs::write(&scenario, LAPTOP).unwrap();
    let out = dir.join("result.json");
    let mut plan = run_plan(&scenario, &out, &["packet_trace=true", "pcap=true"]);
    plan.pcap_dir = Some(dir.clone());
    let st = emu(&Plan::Run(plan)).stdin(Stdio::null()).status().unwrap();
    assert!(st.success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let records = |name: &str| -> Vec<(std::time::Duration, Vec<u8>)> {
        let f = std::fs::File::open(dir.join("pcap").join(name)).unwrap();
        let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            out.push((p.timestamp, p.data.into_owned()));
        }
        out
    };
    let files: Vec<String> = ["bottleneck", "access.laptop"]
        .iter()
        .flat_map(|q| ["down", "up"].map(move |d| format!("{q}.{d}")))
        .flat_map(|q| ["in", "out"].map(move |p| format!("{q}.{p}.pcap")))
        .collect();
    let captured: Vec<_> = files.iter().map(|f| records(f)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    let emu: Value = serde_json::from_str(r["summary_json"].as_str().unwrap()).unwrap();
    let opts = l4slab_scenario::ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    let scn = l4slab_scenario::parse_with(LAPTOP, "laptop.toml", &[], &opts).unwrap();
    let sim = l4slab_sim::run(&scn, &l4slab_sim::RunOptions::default(), &mut |_| true)
        .unwrap()
        .summary;

    // The access link carries the laptop's 2 ms: nothing is folded into the
    // bottleneck's delay.
    let added = &emu["emulator"]["access_delay_added_ms"];
    assert_eq!((f64_of(&added["down"]), f64_of(&added["up"])), (0.0, 0.0));
    // Goodput within 3 % of the simulator's (measured 2026-11-27, debug
    // build, twice: 9.653 Mbit/s both, as simulated; the access link's
    // payload rate is 9.653).
    let goodput = |s: &Value| f64_of(&s["flows"]["dl"]["goodput_bps"]);
    let (e, s) = (goodput(&emu), goodput(&sim));
    assert!((e / s - 1.0).abs() < 0.03, "emulated {e} vs simulated {s}");
    // The queue is at the access link, not the bottleneck (measured: mean
    // sojourn 98.4 emulated vs 99.3 ms simulated there, 0.054 vs 0.061 ms
    // at the bottleneck).
    let sojourn = |s: &Value, q: &str| f64_of(&s["queues"][q]["sojourn_ms"]["mean"]);
    for (name, s) in [("emu", &emu), ("sim", &sim)] {
        let (a, b) = (
            sojourn(s, "access.laptop.down"),
            sojourn(s, "bottleneck.down"),
        );
        assert!(
            a > 50.0 && b < 1.0,
            "{name}: access {a} ms, bottleneck {b} ms"
        );
        let util = f64_of(&s["queues"]["access.laptop.down"]["utilization"]);
        assert!(util > 0.98, "{name}: access utilization {util}");
    }
    let (e, s) = (
        sojourn(&emu, "access.laptop.down"),
        sojourn(&sim, "access.laptop.down"),
    );
    assert!(
        (e / s - 1.0).abs() < 0.15,
        "access sojourn: emulated {e} vs simulated {s}"
    );
    // The same queues, with the same summary keys, in both.
    let names =
        |s: &Value| -> Vec<String> { s["queues"].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(names(&emu), names(&sim));
    for q in ["access.laptop.down", "access.laptop.up"] {
        let keys = |s: &Value| -> Vec<String> {
            s["queues"][q]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(keys(&emu), keys(&sim), "{q}");
    }
    // The access link's queue series are recorded.
    let series = r["series"]["series"].as_array().unwrap();
    assert!(series
        .iter()
        .any(|s| s.as_str() == Some("queue/access.laptop.down")));
    // Its drops are the flow's losses, with their reasons.
    let drops = &emu["queues"]["access.laptop.down"]["drops"];
    assert_eq!(drops["total"], drops["overlimit"], "{drops}");

    // The packet trace has the access link's queue events under its name:
    // the download's data queued at access.laptop.down, its ACKs at .up.
    let p = &r["packets"];
    let n = p["event"].as_array().unwrap().len();
    let rows = |queue: &str, event: &str, side: &str| {
        (0..n)
            .filter(|&i| p["queue"][i] == queue && p["event"][i] == event && p["side"][i] == side)
            .count()
    };
    for (queue, side) in [("access.laptop.down", "data"), ("access.laptop.up", "ack")] {
        for event in ["enqueue", "dequeue"] {
            let k = rows(queue, event, side);
            assert!(k > 1000, "{queue} {event} {side}: {k}");
        }
    }
    assert!(rows("access.laptop.down", "drop:overlimit", "data") > 0);
    // Capture files per queue and point, the access link's included; what
    // leaves the bottleneck down enters the laptop's access link at that
    // instant with the same headers (packets of no scenario flow, if any,
    // pass the bottleneck only).
    for (name, recs) in files.iter().zip(&captured) {
        assert!(recs.len() > 1000, "{name}: {} records", recs.len());
        assert!(recs.is_sorted_by_key(|r| r.0), "{name} in time order");
    }
    let (bn_out, access_in) = (&captured[1], &captured[4]);
    let set = |v: &[(std::time::Duration, Vec<u8>)]| -> std::collections::BTreeSet<_> {
        v.iter().cloned().collect()
    };
    assert!(
        set(access_in).is_subset(&set(bn_out)),
        "access.laptop.down.in: {} records, bottleneck.down.out: {}",
        access_in.len(),
        bn_out.len()
    );
    assert!(access_in.len() * 100 >= bn_out.len() * 99);
}
