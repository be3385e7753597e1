//! TCP Fast Open in a run (RFC 7413; `docs/models/transport.md`, "TCP Fast
//! Open"): a web page fetches its first object on the page's connection,
//! which obtains the cookie, then a small object on a new connection, whose
//! SYN carries the request. Against the same run without Fast Open the new
//! connection's object completes one base RTT sooner (REFERENCES §6.E: "a
//! request/response exchange completes in 1 RTT instead of 2 once the client
//! holds a cookie"); the first connection saves nothing.

mod common;

use std::fs;

use common::{f64_of, run_toml};
use l4slab_core::pkttrace::flag_code_letters;
use l4slab_sim::{run, RunOptions, RunOutput};
use pcap_file::pcap::PcapReader;

/// 100 Mbit/s, 10 ms each way: a 20 ms base RTT with little serialization
/// (a 1500 B packet takes 0.12 ms). The page asks for 10 KB at once and for
/// 5 KB on a new connection 500 ms later (the requests, 500 B, fit a SYN).
const PAGE: &str = r#"
format = 1
duration = "2s"
[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"
[[flows]]
name = "page"
app = { kind = "web", objects = [
    { size = "10KB" },
    { size = "5KB", at = "500ms", connection = "new" },
] }
"#;

const BASE_RTT_S: f64 = 0.020;

fn completion(out: &RunOutput, k: usize) -> f64 {
    f64_of(&out.summary["flows"]["page"]["app_metrics"]["objects"][k]["completion_s"])
}

#[test]
fn the_new_connections_object_completes_one_base_rtt_sooner() {
    let plain = run_toml(PAGE, &[]);
    let tfo = run_toml(
        PAGE,
        &[
            // The page's flow and the one made for its new-connection object
            // have the same transport (the object's flow is a copy).
            "flows[0].transport.fastopen=true",
        ],
    );
    assert_eq!(
        tfo.summary["scenario"]["flows"][1]["transport"]["fastopen"],
        true
    );
    let (first_plain, first_tfo) = (completion(&plain, 0), completion(&tfo, 0));
    let (new_plain, new_tfo) = (completion(&plain, 1), completion(&tfo, 1));
    eprintln!("first object: {first_plain} s plain, {first_tfo} s with Fast Open");
    eprintln!("new-connection object: {new_plain} s plain, {new_tfo} s with Fast Open");
    // The first connection only obtains the cookie (RFC 7413 §4.2.1): its
    // SYN and SYN/ACK are 4 and 12 B longer, nothing else changes.
    assert!(
        (first_plain - first_tfo).abs() < 0.001,
        "first object: {first_plain} s vs {first_tfo} s"
    );
    // The new connection: handshake + request/response (2 RTTs + the
    // response's serialization) without; 1 RTT + the same with.
    assert!(
        new_plain > 2.0 * BASE_RTT_S && new_plain < 2.0 * BASE_RTT_S + 0.005,
        "{new_plain}"
    );
    let saved = new_plain - new_tfo;
    assert!(
        (saved - BASE_RTT_S).abs() <= 0.002,
        "saved {saved} s, want {BASE_RTT_S} s ± 2 ms"
    );
    // Nothing else changed: the same bytes, no retransmission.
    for out in [&plain, &tfo] {
        for f in ["page", "page.obj1"] {
            assert_eq!(out.summary["flows"][f]["retransmits"], 0, "{f}");
        }
        assert_eq!(out.summary["flows"]["page"]["bytes_delivered"], 10_000);
        assert_eq!(out.summary["flows"]["page.obj1"]["bytes_delivered"], 5_000);
    }
}

#[test]
fn the_cache_is_per_run_and_the_runs_are_deterministic() {
    let sets = ["flows[0].transport.fastopen=true"];
    let a = run_toml(PAGE, &sets);
    let b = run_toml(PAGE, &sets);
    // A second run starts with an empty cache: the same first connection.
    assert_eq!(a.summary["flows"], b.summary["flows"]);
    assert_eq!(a.summary["packets"], b.summary["packets"]);
}

#[test]
fn the_packet_trace_and_the_pcap_show_the_syns_data_and_option() {
    // `packet_trace` and `pcap` are top-level keys: before the tables.
    let text = PAGE.replacen(
        "duration = \"2s\"\n",
        "duration = \"2s\"\npacket_trace = true\npcap = true\n",
        1,
    );
    let scn = common::scenario(&text, &["flows[0].transport.fastopen=true"]);
    let dir = std::env::temp_dir().join(format!("l4slab-sim-fastopen-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let opts = RunOptions {
        pcap_dir: Some(dir.clone()),
        ..RunOptions::default()
    };
    let out = run(&scn, &opts, &mut |_| true).expect("run");
    let t = out.packets.as_ref().expect("traced");
    // The second flow's SYN (flow 1): a SYN with the 500 B request.
    let syns: Vec<_> = (0..t.rows())
        .filter(|&i| t.event_name(i) == "send" && flag_code_letters(t.flags[i]) == "S")
        .map(|i| (t.flow[i], t.seq[i], t.len[i]))
        .collect();
    assert_eq!(syns, [(0, 0, 0), (1, 0, 500)]);
    // The pcap (the capture checks every record's IP length against the
    // segment's wire length): the client's SYNs go up. The first asks for a
    // cookie (kind 34, length 2), the second carries it (kind 34, length 10)
    // with 60 + 12 + 500 = 572 B on the wire.
    let up = out
        .pcap_files
        .iter()
        .find(|p| p.ends_with("pcap/bottleneck.up.in.pcap"))
        .expect("the up ingress capture");
    let mut r = PcapReader::new(fs::File::open(up).unwrap()).unwrap();
    let mut fastopen_syns = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let b = &p.data;
        let tcp = &b[20..];
        let syn = tcp[13] & 0x02 != 0;
        if syn {
            // Options after the 20 B of SYN options (MSS, SACK-permitted,
            // timestamps, NOP, window scale).
            let opt = &tcp[40..];
            assert_eq!(opt[0], 34, "Fast Open option kind");
            fastopen_syns.push((p.orig_len, opt[1]));
        }
    }
    assert_eq!(fastopen_syns, [(64, 2), (572, 10)]);
    let _ = fs::remove_dir_all(&dir);
}
