//! Behaviour of `fq_pie` (Linux `sch_fq_pie`: RFC 8290 flow queueing with an
//! RFC 8033 PIE per flow): a fat Cubic download and a ping share a
//! 20 Mbit/s bottleneck. The ping's probes arrive to an empty bucket and
//! leave next, so its RTT stays at the base RTT, while the download's own PIE
//! holds that flow's queue near the 15 ms target. One `pie` queue makes the
//! ping wait behind the download's standing queue; a FIFO behind its buffer.
//! The numbers this prints are recorded in docs/models/fq_pie.md.

mod common;

use common::{f64_of, flow, run_toml};

/// 20 Mbit/s, 20 ms base RTT, a 1000-packet buffer (600 ms), 30 s.
const FAT_AND_PING: &str = r#"
format = 1
duration = "30s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "1000pkt"
[[flows]]
name = "bulk"
cc = "cubic"
[[flows]]
name = "ping"
start = "5s"
app = { kind = "ping", interval = "20ms" }
"#;

/// Base RTT of a 64-byte probe: 2 x 10 ms plus 92 B serialized each way.
const BASE_MS: f64 = 20.0 + 2.0 * 92.0 * 8.0 / 20e6 * 1e3;

struct Run {
    ping_p50: f64,
    ping_p99: f64,
    ping_lost: u64,
    bulk_sojourn_p50: f64,
    bulk_goodput_mbps: f64,
    drops: u64,
    marks: u64,
    by_reason: String,
}

fn run(qdisc: &str, extra: &[&str]) -> Run {
    let q = format!("bottleneck.qdisc={qdisc}");
    let mut sets = vec![q.as_str()];
    sets.extend_from_slice(extra);
    let out = run_toml(FAT_AND_PING, &sets);
    let ping = &flow(&out, "ping")["app_metrics"];
    let down = &out.summary["queues"]["bottleneck.down"];
    let r = Run {
        ping_p50: f64_of(&ping["rtt_ms"]["p50"]),
        ping_p99: f64_of(&ping["rtt_ms"]["p99"]),
        ping_lost: ping["lost"].as_u64().expect("lost"),
        bulk_sojourn_p50: f64_of(&down["sojourn_ms_by_flow"]["bulk"]["p50"]),
        bulk_goodput_mbps: f64_of(&flow(&out, "bulk")["goodput_bps"]) / 1e6,
        drops: down["drops"]["total"].as_u64().expect("drops"),
        marks: down["marks"]["total"].as_u64().expect("marks"),
        by_reason: down["drops"].to_string(),
    };
    println!(
        "{qdisc:>6} {extra:?}: ping rtt p50 {:.2} ms p99 {:.2} ms lost {}; bulk sojourn p50 {:.2} ms, \
         goodput {:.2} Mbit/s; drops {} marks {} {}",
        r.ping_p50,
        r.ping_p99,
        r.ping_lost,
        r.bulk_sojourn_p50,
        r.bulk_goodput_mbps,
        r.drops,
        r.marks,
        r.by_reason
    );
    r
}

#[test]
fn fq_pie_keeps_a_ping_at_the_base_rtt_beside_a_fat_cubic_flow() {
    let fq = run("fq_pie", &[]);
    let pie = run("pie", &[]);
    let fifo = run("fifo", &[]);
    // The ping waits at most about one full-size packet time (0.6 ms) in
    // the median, a few at worst.
    assert!(
        fq.ping_p50 < BASE_MS + 1.0,
        "fq_pie ping p50 {}",
        fq.ping_p50
    );
    assert!(
        fq.ping_p99 < BASE_MS + 3.0,
        "fq_pie ping p99 {}",
        fq.ping_p99
    );
    assert_eq!(fq.ping_lost, 0);
    // The download's own PIE holds its queue near the 15 ms target and the
    // link stays busy.
    assert!(
        (5.0..=25.0).contains(&fq.bulk_sojourn_p50),
        "fq_pie bulk sojourn p50 {}",
        fq.bulk_sojourn_p50
    );
    assert!(fq.bulk_goodput_mbps > 17.0, "{}", fq.bulk_goodput_mbps);
    assert!(fq.drops > 0 && fq.marks == 0, "Not-ECT Cubic: drops only");
    // One PIE queue: the ping sees the download's standing queue.
    assert!(
        pie.ping_p50 > fq.ping_p50 + 5.0,
        "pie ping p50 {} vs fq_pie {}",
        pie.ping_p50,
        fq.ping_p50
    );
    assert!(fifo.ping_p50 > pie.ping_p50);
}

/// With `ecn` and a Cubic that negotiates classic ECN, the download's PIE
/// marks instead of dropping while its probability stays at or below
/// `ecn_prob` (10 %), which is where it settles: after the slow-start
/// overshoot (above 10 % PIE drops ECN packets too), no drops at all.
#[test]
fn fq_pie_with_ecn_marks_the_fat_flow_instead_of_dropping() {
    // Steady state: from 5 s (the ping's start) on.
    let plain = run("fq_pie", &["warmup=5s"]);
    let ecn = run(
        r#"{ kind = "fq_pie", ecn = true }"#,
        &["flows[0].ecn=classic", "warmup=5s"],
    );
    assert!(ecn.marks > 0, "no marks");
    assert!(
        ecn.drops == 0 && plain.drops > 0,
        "steady-state drops {} with ecn vs {} without",
        ecn.drops,
        plain.drops
    );
    assert!(ecn.ping_p50 < BASE_MS + 1.0, "ping p50 {}", ecn.ping_p50);
    assert!(
        (5.0..=25.0).contains(&ecn.bulk_sojourn_p50),
        "bulk sojourn p50 {}",
        ecn.bulk_sojourn_p50
    );
}
