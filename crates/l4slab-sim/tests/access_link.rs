//! A host's own access link (`[hosts.NAME.access]`): a queue of the same
//! runtime as the bottleneck, between the host and the bottleneck. When it
//! is slower than the bottleneck the bottleneck moves to it: the flow gets
//! the access rate and the queue builds there, not at the shared link.

mod common;

use common::{f64_of, flow, run_toml};

/// A laptop behind a 10 Mbit/s access link with a 100-packet FIFO, a
/// 100 Mbit/s shared bottleneck.
const LAPTOP: &str = r#"
format = 1
duration = "10s"
warmup = "2s"

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

/// The payload rate of a link of `bps` carrying full-sized segments: 1448
/// payload bytes in 1500 on the wire (20 IP + 20 TCP + 12 timestamps).
fn payload_bps(bps: f64) -> f64 {
    bps * 1448.0 / 1500.0
}

fn queue<'a>(out: &'a l4slab_sim::RunOutput, name: &str) -> &'a serde_json::Value {
    let q = &out.summary["queues"][name];
    assert!(q.is_object(), "no queue {name}: {}", out.summary["queues"]);
    q
}

#[test]
fn a_download_gets_the_access_rate_and_queues_at_the_access_link() {
    let out = run_toml(LAPTOP, &[]);
    let dl = flow(&out, "dl");
    // Measured: 9.652 Mbit/s of 9.653 (the access link's payload rate).
    let goodput = f64_of(&dl["goodput_bps"]);
    let expect = payload_bps(10e6);
    assert!(
        (goodput / expect - 1.0).abs() < 0.01,
        "goodput {goodput} vs {expect}"
    );
    let access = queue(&out, "access.laptop.down");
    let bn = queue(&out, "bottleneck.down");
    assert_eq!(access["rate_bps"], 10_000_000);
    assert_eq!(access["kind"], "fifo");
    // Cubic fills the 100-packet FIFO (120 ms at 10 Mbit/s): measured mean
    // sojourn 100 ms at the access link, 0.06 ms at the bottleneck.
    let (a, b) = (
        f64_of(&access["sojourn_ms"]["mean"]),
        f64_of(&bn["sojourn_ms"]["mean"]),
    );
    assert!(a > 50.0 && b < 1.0, "access {a} ms, bottleneck {b} ms");
    assert!(f64_of(&access["utilization"]) > 0.99, "{access}");
    assert!(f64_of(&bn["utilization"]) < 0.11, "{bn}");
    // Every loss of the flow is the access link's, counted by reason.
    assert_eq!(bn["drops"]["total"], 0, "{bn}");
    assert!(
        access["drops"]["overlimit"].as_u64().unwrap() > 0,
        "{access}"
    );
    // The base RTT: 2 x (10 ms + 2 ms access delay), plus serialization.
    assert!(f64_of(&dl["rtt_ms"]["min"]) >= 24.0, "{dl}");
    // The ACKs cross the laptop's up direction of the same link.
    let up = queue(&out, "access.laptop.up");
    assert!(up["sent_packets"].as_u64().unwrap() > 1000, "{up}");
}

#[test]
fn every_packet_is_delivered_dropped_with_a_reason_or_still_in_the_network() {
    // Loss on the access link too (the whole run: the summary's queue
    // counts are windowed, the packet counts are not).
    let out = run_toml(
        LAPTOP,
        &[
            "hosts.laptop.access.down.loss=1%",
            "packet_trace=true",
            "warmup=0s",
        ],
    );
    let p = &out.summary["packets"];
    let n = |k: &str| p[k].as_u64().unwrap();
    assert_eq!(
        n("created"),
        n("delivered") + n("dropped") + n("in_network_at_end"),
        "{p}"
    );
    let access = queue(&out, "access.laptop.down");
    let (wire, full) = (
        access["drops"]["link_loss"].as_u64().unwrap(),
        access["drops"]["overlimit"].as_u64().unwrap(),
    );
    assert!(wire > 20, "{access}");
    // The queue counts are the run's drops (nothing is lost uncounted).
    let total: u64 = out.summary["queues"]
        .as_object()
        .unwrap()
        .values()
        .map(|q| q["drops"]["total"].as_u64().unwrap())
        .sum();
    assert_eq!(total, n("dropped"), "{}", out.summary["queues"]);
    // The flow's lost packets are its data's drops at the access link.
    assert_eq!(flow(&out, "dl")["lost_packets"], wire + full);
    // The packet trace lists each drop with its reason.
    let trace = out.packets.as_ref().expect("traced");
    let drops = (0..trace.rows())
        .filter(|&i| {
            l4slab_core::pkttrace::PktEvent::NAMES[usize::from(trace.event[i])] == "drop:link_loss"
        })
        .count() as u64;
    assert_eq!(drops, wire);
}

#[test]
fn an_upload_queues_at_the_senders_access_link_before_the_bottleneck() {
    let out = run_toml(LAPTOP, &["flows[0].direction=up"]);
    let goodput = f64_of(&flow(&out, "dl")["goodput_bps"]);
    assert!(
        (goodput / payload_bps(10e6) - 1.0).abs() < 0.01,
        "goodput {goodput}"
    );
    let access = queue(&out, "access.laptop.up");
    let bn = queue(&out, "bottleneck.up");
    assert!(f64_of(&access["sojourn_ms"]["mean"]) > 50.0, "{access}");
    // Packets leave the access link spaced at 10 Mbit/s: no queue at 100.
    assert!(f64_of(&bn["sojourn_ms"]["max"]) < 0.2, "{bn}");
}

/// Two servers share the 100 Mbit/s bottleneck; one's NIC sends at 10
/// Mbit/s. Its flow is held there; the other takes the rest of the link.
const NIC: &str = r#"
format = 1
duration = "10s"
warmup = "3s"

[bottleneck]
rate = "100Mbit"
delay = "5ms"
buffer = "200pkt"

[hosts.slow]
side = "server"
access = { down = { rate = "10Mbit", buffer = "50pkt" } }

[hosts.fast]
side = "server"

[[flows]]
name = "slow"
server = "slow"
cc = "cubic"

[[flows]]
name = "fast"
server = "fast"
cc = "cubic"
"#;

#[test]
fn a_server_whose_nic_is_the_limit_leaves_the_shared_link_to_the_others() {
    let out = run_toml(NIC, &[]);
    let slow = f64_of(&flow(&out, "slow")["goodput_bps"]);
    let fast = f64_of(&flow(&out, "fast")["goodput_bps"]);
    // Measured: 9.64 and 86.9 Mbit/s.
    assert!((slow / payload_bps(10e6) - 1.0).abs() < 0.02, "slow {slow}");
    assert!(fast > 0.8 * payload_bps(90e6), "fast {fast}");
    let nic = queue(&out, "access.slow.down");
    assert!(f64_of(&nic["utilization"]) > 0.99, "{nic}");
    // Only the slow flow waits at the NIC; both at the shared queue.
    let by_flow = nic["sojourn_ms_by_flow"].as_object().unwrap();
    assert_eq!(by_flow.keys().collect::<Vec<_>>(), ["slow"], "{nic}");
    // No up-direction link on that host: its ACKs are not queued there.
    assert!(out.summary["queues"].get("access.slow.up").is_none());
}

#[test]
fn an_access_link_runs_any_qdisc_and_records_its_series() {
    let out = run_toml(
        LAPTOP,
        &[
            "hosts.laptop.access.down.qdisc={ kind = \"codel\", ecn = true }",
            "flows[0].ecn=classic",
        ],
    );
    let access = queue(&out, "access.laptop.down");
    assert_eq!(access["kind"], "codel");
    // CoDel holds the standing queue near its 5 ms target, marking.
    assert!(f64_of(&access["sojourn_ms"]["p50"]) < 15.0, "{access}");
    assert!(access["marks"]["aqm"].as_u64().unwrap() > 0, "{access}");
    assert!(flow(&out, "dl")["ce_marks_received"].as_u64().unwrap() > 0);
    // Its series sit beside the bottleneck's, with the qdisc's own stats.
    let s = &out.series;
    let keys: std::collections::BTreeSet<&str> = (0..s.len())
        .filter(|&i| s.name(s.series[i]) == "queue/access.laptop.down")
        .map(|i| s.name(s.key[i]))
        .collect();
    for k in [
        "backlog_pkts",
        "sojourn_ms",
        "drops",
        "marks",
        "utilization",
    ] {
        assert!(keys.contains(k), "{k} not in {keys:?}");
    }
    // The cost estimate counts the access links' series rows.
    let scn = common::scenario(
        LAPTOP,
        &["hosts.laptop.access.down.qdisc={ kind = \"codel\", ecn = true }"],
    );
    let cost = l4slab_scenario::cost::Cost::estimate(&scn);
    let no_access = LAPTOP.replace("access = { rate = \"10Mbit\", buffer = \"100pkt\" }", "");
    let without = l4slab_scenario::cost::Cost::estimate(&common::scenario(&no_access, &[]));
    assert!(cost.rows_per_sample > without.rows_per_sample);
    assert!(s.len() as u64 <= cost.series_rows, "{} rows", s.len());
}

#[test]
fn the_same_seed_gives_the_same_run_and_the_access_links_draws_count() {
    let sets = [
        "hosts.laptop.access.down.loss=1%",
        "hosts.laptop.access.qdisc=pie",
    ];
    let digest = |out: &l4slab_sim::RunOutput| {
        let v: Vec<u64> = out.series.value.iter().map(|v| v.to_bits()).collect();
        (serde_json::to_string(&out.summary).unwrap(), v)
    };
    let a = run_toml(LAPTOP, &sets);
    assert_eq!(digest(&a), digest(&run_toml(LAPTOP, &sets)));
    let mut seeded = sets.to_vec();
    seeded.push("seed=2");
    assert_ne!(digest(&a).0, digest(&run_toml(LAPTOP, &seeded)).0);
    // The access link's streams are counted with the run's: none drawn
    // without randomness anywhere, some with loss on the access link only.
    let draws = |sets: &[&str]| run_toml(LAPTOP, sets).summary["random_draws"].as_u64();
    assert_eq!(draws(&[]), Some(0));
    assert!(draws(&["hosts.laptop.access.down.loss=1%"]).unwrap() > 1000);
}
