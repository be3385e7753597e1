//! ECN end to end (docs/models/ecn.md): the default ECN mode per controller,
//! AccECN feedback through an L4S AQM, and one small download per path
//! rewrite (`ecn_rewrite` on the data direction) — bleaching, re-marking,
//! an ECT black hole, and a classic bottleneck CE-marking everything — each
//! detected by the sender and answered by its fallback (REFERENCES §2.6
//! test matrix). The numbers printed here are recorded in the model page.

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// A 2 MB download at 20 Mbit/s, 20 ms base RTT, with the packet trace.
const DOWNLOAD: &str = r#"
format = 1
duration = "10s"
packet_trace = true
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"
[[flows]]
name = "dl"
app = { kind = "file", size = "2MB" }
"#;

fn run(sets: &[&str]) -> RunOutput {
    run_toml(DOWNLOAD, sets)
}

fn s<'a>(out: &'a RunOutput, key: &str) -> &'a str {
    flow(out, "dl")[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}"))
}

/// IP-ECN fields of the data packets the sender sent (first transmissions;
/// classic ECN sends retransmissions Not-ECT), in order.
fn data_ecn(out: &RunOutput) -> Vec<&'static str> {
    let tr = out.packets.as_ref().expect("packet trace");
    (0..tr.rows())
        .filter(|&i| {
            tr.event_name(i) == "send"
                && tr.side_name(i) == "data"
                && tr.len[i] > 0
                && !tr.retransmission[i]
        })
        .map(|i| tr.ecn_name(i))
        .collect()
}

fn completed(out: &RunOutput) -> f64 {
    let c = flow(out, "dl")["completion_s"].as_f64();
    c.unwrap_or_else(|| panic!("download incomplete: {}", flow(out, "dl")))
}

#[test]
fn default_mode_follows_the_controller() {
    // Linux-like: controllers that need ECN negotiate AccECN, the others none.
    let names = l4slab_sim::cc_names();
    for (cc, mode, ecn) in [
        ("reno", "off", "not_ect"),
        ("cubic", "off", "not_ect"),
        ("dctcp", "accecn", "ect0"),
        ("prague", "accecn", "ect1"),
    ] {
        if !names.contains(&cc) {
            continue;
        }
        let out = run(&[&format!("flows[0].cc={cc}")]);
        assert_eq!(s(&out, "ecn"), mode, "{cc}");
        assert_eq!(data_ecn(&out)[0], ecn, "{cc}");
        let v = if mode == "off" {
            "not_negotiated"
        } else {
            "capable"
        };
        assert_eq!(s(&out, "ecn_validation"), v, "{cc}");
        completed(&out);
    }
    // Written explicitly, the mode wins.
    let out = run(&["flows[0].cc=reno", "flows[0].ecn=classic"]);
    assert_eq!(s(&out, "ecn"), "classic");
    assert!(data_ecn(&out).iter().all(|e| *e == "ect0"));
}

#[test]
fn accecn_feedback_through_dualpi2_counts_every_mark() {
    // Through DualPI2, every CE mark the AQM makes reaches the receiver and
    // is fed back: Reno (ECT(0), the C queue, one EcnEcho per RTT) and, if
    // present, Prague (ECT(1), the L queue, exact CE bytes).
    let mut ccs = vec!["reno"];
    if l4slab_sim::cc_names().contains(&"prague") {
        ccs.push("prague");
    }
    for cc in ccs {
        let out = run(&[
            &format!("flows[0].cc={cc}"),
            "flows[0].ecn=accecn",
            "bottleneck.qdisc=dualpi2",
            "duration=20s",
            "flows[0].app={ kind = \"file\", size = \"20MB\" }",
        ]);
        let f = flow(&out, "dl");
        let marks = f["ce_marks_received"].as_u64().unwrap();
        let q = &out.summary["queues"]["bottleneck.down"];
        println!(
            "{cc}+accecn over dualpi2: {marks} CE marks received (queue: {} marks, {} drops), goodput {:.2} Mbit/s, p99 RTT {:.1} ms",
            q["marks"]["total"],
            q["drops"]["total"],
            f64_of(&f["goodput_bps"]) / 1e6,
            f64_of(&f["rtt_ms"]["p99"])
        );
        assert!(marks > 0, "{cc}");
        assert_eq!(
            q["marks"]["total"].as_u64().unwrap(),
            marks,
            "{cc}: every mark reached the receiver"
        );
        assert_eq!(s(&out, "ecn_validation"), "capable", "{cc}");
        completed(&out);
    }
}

#[test]
fn bleaching_is_detected_and_the_flow_goes_loss_based() {
    // Reno (Not-ECT SYN/ACK): seen in the AccECN option's byte counters.
    let out = run(&[
        "flows[0].cc=reno",
        "flows[0].ecn=accecn",
        "bottleneck.down.ecn_rewrite=bleach",
    ]);
    assert_eq!(s(&out, "ecn"), "accecn");
    assert_eq!(s(&out, "ecn_validation"), "bleached");
    let e = data_ecn(&out);
    let first_not_ect = e.iter().position(|x| *x == "not_ect").unwrap();
    println!("bleach/reno: ECT(0) on the first {first_not_ect} data packets, Not-ECT after");
    assert!(first_not_ect > 0 && first_not_ect <= 12, "{first_not_ect}");
    assert!(e[first_not_ect..].iter().all(|x| *x == "not_ect"));
    completed(&out);
    if l4slab_sim::cc_names().contains(&"prague") {
        // Prague's SYN/ACK is ECT(1): the third ACK reflects Not-ECT.
        let out = run(&["flows[0].cc=prague", "bottleneck.down.ecn_rewrite=bleach"]);
        assert_eq!(s(&out, "ecn_validation"), "bleached");
        assert!(data_ecn(&out).iter().all(|x| *x == "not_ect"));
        completed(&out);
    }
}

#[test]
fn remarking_makes_an_l4s_sender_classic() {
    // An ECT(1) sender (Reno with the codepoint override, which also puts
    // ECT(1) on its SYN/ACK): the third ACK reflects ECT(0) (RFC 9768
    // §3.2.2.1), so the sender knows before any data and sends ECT(0) with a
    // classic response. (Re-marking of data only is caught by the option's
    // e0b: transport test remarking_ect1_to_ect0_makes_an_l4s_sender_classic.)
    let mut cases = vec![vec![
        "flows[0].cc=reno",
        "flows[0].ecn=accecn",
        "flows[0].transport.ecn_codepoint=ect1",
    ]];
    if l4slab_sim::cc_names().contains(&"prague") {
        cases.push(vec!["flows[0].cc=prague"]);
    }
    for mut sets in cases {
        let without = run(&sets);
        assert!(data_ecn(&without).iter().all(|x| *x == "ect1"), "{sets:?}");
        sets.push("bottleneck.down.ecn_rewrite=remark");
        let out = run(&sets);
        assert_eq!(s(&out, "ecn_validation"), "remarked", "{sets:?}");
        assert!(data_ecn(&out).iter().all(|x| *x == "ect0"), "{sets:?}");
        println!(
            "remark/{}: completion {:.3} s (clean path {:.3} s)",
            sets[0],
            completed(&out),
            completed(&without)
        );
    }
}

#[test]
fn an_ect_black_hole_is_left_after_one_rto() {
    let out = run(&[
        "flows[0].cc=reno",
        "flows[0].ecn=accecn",
        "bottleneck.down.ecn_rewrite=drop_ect",
    ]);
    assert_eq!(s(&out, "ecn_validation"), "blackholed");
    let f = flow(&out, "dl");
    assert_eq!(f["rto_count"].as_u64(), Some(1));
    let q = &out.summary["queues"]["bottleneck.down"];
    let dropped = q["drops"]["ecn_blackhole"].as_u64().unwrap();
    assert_eq!(q["ecn_rewrite"]["kind"], "drop_ect");
    assert_eq!(q["ecn_rewrite"]["dropped_packets"].as_u64(), Some(dropped));
    println!(
        "drop_ect/reno: {dropped} ECT packets dropped, completion {:.3} s",
        completed(&out)
    );
    // The initial window, and the tail loss probe that resends its last
    // segment (still ECT) before the timeout.
    assert_eq!(dropped, 11, "the initial window and the probe");
    assert_eq!(f["tlp_probes"].as_u64(), Some(1));
    if l4slab_sim::cc_names().contains(&"prague") {
        // Prague's ECT(1) SYN/ACK is dropped: the client retries its SYN
        // without ECN (RFC 3168 §6.1.1.1) and the server gives ECN up too.
        let out = run(&["flows[0].cc=prague", "bottleneck.down.ecn_rewrite=drop_ect"]);
        assert_eq!(s(&out, "ecn"), "off");
        assert_eq!(s(&out, "ecn_validation"), "not_negotiated");
        assert!(data_ecn(&out).iter().all(|x| *x == "not_ect"));
        println!("drop_ect/prague: completion {:.3} s", completed(&out));
    }
}

#[test]
fn a_classic_bottleneck_marking_everything_is_fed_back_exactly() {
    // `ce_all`: every ECT packet arrives CE (RFC 9331 §4.3's classic-ECN
    // bottleneck; detecting it is the controller's job). The transport's part:
    // every mark counted and fed back, the path still "capable".
    let cc = if l4slab_sim::cc_names().contains(&"prague") {
        "prague"
    } else {
        "reno"
    };
    let out = run(&[
        &format!("flows[0].cc={cc}"),
        "flows[0].ecn=accecn",
        "bottleneck.down.ecn_rewrite=ce_all",
    ]);
    let f = flow(&out, "dl");
    let data = data_ecn(&out).len() as u64;
    let marks = f["ce_marks_received"].as_u64().unwrap();
    let rewritten = out.summary["queues"]["bottleneck.down"]["ecn_rewrite"]["rewritten_packets"]
        .as_u64()
        .unwrap();
    println!(
        "ce_all/{cc}: {data} data packets, {marks} CE received, goodput {:.2} Mbit/s",
        f64_of(&f["goodput_bps"]) / 1e6
    );
    // Every ECT packet of the data direction (data and a SYN/ACK for an
    // ECT(1) sender) was CE-marked and counted once it arrived.
    assert_eq!(marks, rewritten);
    assert!(marks >= data - f["lost_packets"].as_u64().unwrap());
    assert_eq!(s(&out, "ecn_validation"), "capable");
}
