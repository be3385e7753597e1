//! The cost estimate (`l4slab_scenario::cost`) against what runs really
//! record, and the limits: a scenario past one is refused with an error
//! naming the key and the estimate; every shipped scenario is within them.

mod common;

use l4slab_scenario::cost::{check, Backend, Cost, Limits};
use l4slab_scenario::Problem;

const BULK: &str = r#"
format = 1
duration = "4s"
packet_trace = true
[bottleneck]
rate = "50Mbit"
delay = "5ms"
buffer = "100pkt"
[[flows]]
name = "bulk"
cc = "reno"
app = "bulk"
"#;

fn trace_rows(out: &l4slab_sim::RunOutput) -> u64 {
    out.packets.as_ref().expect("traced").rows() as u64
}

#[test]
fn series_estimate_bounds_the_rows_a_run_records() {
    for (qdisc, extra) in [
        ("fifo", vec![]),
        ("dualpi2", vec!["flows[0].cc=prague"]),
        ("fq_codel", vec![]),
        ("pie", vec![]),
        ("fq_pie", vec![]),
    ] {
        let mut sets = vec![
            format!("bottleneck.qdisc={qdisc}"),
            "packet_trace=false".to_string(),
        ];
        sets.extend(extra.iter().map(|s| s.to_string()));
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let scn = common::scenario(BULK, &sets);
        let cost = Cost::estimate(&scn);
        let out = common::run_toml(BULK, &sets);
        let rows = out.series.len() as u64;
        assert_eq!(cost.samples, 40, "4 s at the default 100 ms");
        assert!(
            rows <= cost.series_rows,
            "{qdisc}: {rows} rows recorded, estimate {} is not an upper bound",
            cost.series_rows
        );
        assert!(
            rows * 2 >= cost.series_rows,
            "{qdisc}: {rows} rows recorded, estimate {} is more than twice that",
            cost.series_rows
        );
        assert_eq!(cost.trace_rows, 0, "no trace asked");
    }
}

#[test]
fn trace_estimate_is_within_a_quarter_of_a_saturating_flow() {
    let scn = common::scenario(BULK, &[]);
    let cost = Cost::estimate(&scn);
    let actual = trace_rows(&common::run_toml(BULK, &[]));
    let ratio = cost.trace_rows as f64 / actual as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "estimate {} vs {actual} rows",
        cost.trace_rows
    );
}

#[test]
fn pcap_estimate_is_within_a_quarter_of_a_saturating_flow() {
    let dir = std::env::temp_dir().join(format!("l4slab-cost-pcap-{}", std::process::id()));
    let scn = common::scenario(BULK, &["pcap=true", "packet_trace=false"]);
    let cost = Cost::estimate(&scn);
    let opts = l4slab_sim::RunOptions {
        pcap_dir: Some(dir.clone()),
        ..Default::default()
    };
    let out = l4slab_sim::run(&scn, &opts, &mut |_| true).expect("run");
    let mut actual = 0u64;
    for f in &out.pcap_files {
        let mut r = pcap_file::pcap::PcapReader::new(std::fs::File::open(f).unwrap()).unwrap();
        while let Some(p) = r.next_packet() {
            p.unwrap();
            actual += 1;
        }
    }
    let ratio = cost.pcap_records as f64 / actual as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "estimate {} vs {actual} records",
        cost.pcap_records
    );
    // Past the limit, the error names the key.
    let long = common::scenario(BULK, &["pcap=true", "packet_trace=false", "duration=1h"]);
    let err = check(&long, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("pcap"), "{err}");
    assert!(err.to_string().contains("pcap records"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The bulk flow to a laptop behind its own access link, both directions
/// (as fast as the bottleneck: the flow saturates both): every packet
/// passes two queues, a row pair and two records more each.
const ACCESS: &str = r#"
format = 1
duration = "4s"
packet_trace = true
[bottleneck]
rate = "50Mbit"
delay = "5ms"
buffer = "100pkt"
[hosts.laptop]
side = "client"
access_delay = "1ms"
access = { rate = "50Mbit", buffer = "100pkt" }
[[flows]]
name = "bulk"
cc = "reno"
app = "bulk"
client = "laptop"
"#;

#[test]
fn the_estimate_counts_the_access_links_a_packet_passes() {
    let dir = std::env::temp_dir().join(format!("l4slab-cost-access-{}", std::process::id()));
    let scn = common::scenario(ACCESS, &["pcap=true"]);
    let cost = Cost::estimate(&scn);
    assert_eq!(cost.access_links_per_packet, 1);
    let plain = Cost::estimate(&common::scenario(BULK, &["pcap=true"]));
    assert_eq!(plain.access_links_per_packet, 0);
    assert_eq!(
        cost.trace_rows * 4,
        plain.trace_rows * 6,
        "six rows a packet, not four"
    );
    assert_eq!(
        cost.pcap_records,
        plain.pcap_records * 2,
        "four records, not two"
    );
    let opts = l4slab_sim::RunOptions {
        pcap_dir: Some(dir.clone()),
        ..Default::default()
    };
    let out = l4slab_sim::run(&scn, &opts, &mut |_| true).expect("run");
    let mut records = 0u64;
    for f in &out.pcap_files {
        let mut r = pcap_file::pcap::PcapReader::new(std::fs::File::open(f).unwrap()).unwrap();
        while let Some(p) = r.next_packet() {
            p.unwrap();
            records += 1;
        }
    }
    for (what, estimate, actual) in [
        ("trace rows", cost.trace_rows, trace_rows(&out)),
        ("pcap records", cost.pcap_records, records),
    ] {
        let ratio = estimate as f64 / actual as f64;
        assert!(
            (0.75..=1.25).contains(&ratio),
            "{what}: estimate {estimate} vs {actual}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_flow_is_estimated_by_its_size_not_the_link() {
    let sets = ["flows[0].app={kind=\"file\", size=\"1MB\"}"];
    let scn = common::scenario(BULK, &sets);
    let cost = Cost::estimate(&scn);
    let actual = trace_rows(&common::run_toml(BULK, &sets));
    // 1 MB is 691 segments, each ACKed, four rows a packet: about 5,500
    // rows, far below the link's 100,000.
    assert!(cost.trace_rows < 6_000, "estimate {}", cost.trace_rows);
    let ratio = cost.trace_rows as f64 / actual as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "estimate {} vs {actual}",
        cost.trace_rows
    );
}

#[test]
fn a_cbr_flow_is_estimated_by_its_rate_not_the_link() {
    let sets = [
        "flows[0].app={kind=\"cbr\", rate=\"5Mbit\", size=\"1200B\"}",
        "flows[0].start=1s",
    ];
    let scn = common::scenario(BULK, &sets);
    let cost = Cost::estimate(&scn);
    // 5 Mbit/s for the 3 s from its start: 15 Mbit / 9600 bits = 1562.5, so
    // 1563 datagrams from 1 s (the last at 3.99904 s), four rows each — far
    // below the 100,000 rows of the 50 Mbit/s link.
    assert_eq!(cost.trace_rows, 4 * 1563);
    let actual = trace_rows(&common::run_toml(BULK, &sets));
    // Every datagram's send, enqueue and dequeue (the link is never busy
    // when one arrives), and the delivery of all but those still in flight
    // at the end (5 ms of path: 3 of them).
    assert_eq!(actual, 4 * 1563 - 3, "estimate {}", cost.trace_rows);
}

#[test]
fn a_tiny_sample_interval_is_refused_naming_the_key_and_the_estimate() {
    let scn = common::scenario(BULK, &["sample_interval=1us", "duration=600s"]);
    let err = check(&scn, Backend::Sim).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.path(), Some("sample_interval"), "{text}");
    assert_eq!(err.problem(), Some(Problem::TooLarge));
    assert!(text.contains("600,000,000 samples"), "{text}");
    assert!(text.contains("past the limit of 20,000,000 rows"), "{text}");
    assert!(text.contains("--allow-large"), "{text}");
    // The suggested interval fits.
    let example = text.rsplit("write e.g. ").next().unwrap();
    let value = example.trim_start_matches("sample_interval = ");
    let fixed = common::scenario(
        BULK,
        &["duration=600s", &format!("sample_interval={value}")],
    );
    assert!(
        Cost::estimate(&fixed).series_rows <= Limits::for_backend(Backend::Sim).series_rows,
        "{example}"
    );
}

#[test]
fn a_huge_count_is_refused_naming_its_entry() {
    let two = format!(
        "{BULK}\n[[flows]]\nname = \"many\"\ncc = \"cubic\"\napp = \"bulk\"\ncount = 100000\n"
    );
    let scn = common::scenario(&two, &["packet_trace=false"]);
    assert_eq!(Cost::estimate(&scn).flows, 100_001);
    let err = check(&scn, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("flows[1].count"), "{err}");
    assert!(err.to_string().contains("100,001 flows"), "{err}");
}

#[test]
fn households_count_in_the_flow_limit_naming_their_entry() {
    // 500 evening households of 11 flows each (video, browsing, 8 game
    // connections, photos) beside the one bulk flow: 5,501 flows.
    let many = format!("{BULK}\n[[households]]\npreset = \"evening\"\ncount = 500\n");
    let scn = common::scenario(&many, &["packet_trace=false"]);
    assert_eq!(Cost::estimate(&scn).flows, 5_501);
    let err = check(&scn, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("households[0].count"), "{err}");
    let text = err.to_string();
    // The copies that fit beside the bulk flow: (5,000 - 1) / 11.
    assert!(
        text.contains("5,501 flows") && text.contains("count = 454"),
        "{text}"
    );
    let fits = format!("{BULK}\n[[households]]\npreset = \"evening\"\ncount = 454\n");
    check(
        &common::scenario(&fits, &["packet_trace=false"]),
        Backend::Sim,
    )
    .unwrap();
}

#[test]
fn a_long_traced_run_is_refused_and_the_emulator_sooner() {
    // 100 Mbit/s for an hour: about 180 M rows, within the simulator's
    // limit (it streams them to disk), past the emulator's (held in memory).
    let scn = common::scenario(BULK, &["bottleneck.rate=100Mbit", "duration=1h"]);
    let cost = check(&scn, Backend::Sim).expect("within the simulator's limit");
    assert!(
        (170_000_000..190_000_000).contains(&cost.trace_rows),
        "{cost:?}"
    );
    let err = check(&scn, Backend::Emu).unwrap_err();
    assert_eq!(err.path(), Some("packet_trace"), "{err}");
    // Ten hours is past both.
    let long = common::scenario(BULK, &["bottleneck.rate=100Mbit", "duration=10h"]);
    assert_eq!(
        check(&long, Backend::Sim).unwrap_err().path(),
        Some("packet_trace")
    );
}

#[test]
fn the_limits_allow_every_shipped_scenario() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "toml")
                && path.file_name().is_some_and(|n| n != "study.toml")
            {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 10, "{files:?}");
    let opts = l4slab_scenario::ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![root.join("../python/l4slab/data/traces")],
    };
    for file in files {
        let scn = l4slab_scenario::parse_file(&file, &[], &opts).unwrap();
        check(&scn, Backend::Sim).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

/// A cell of `n` stations, each with one Cubic download, for `duration`.
fn wifi_cell(n: usize, duration: &str) -> String {
    let mut text = format!(
        "format = 1\nduration = \"{duration}\"\n[bottleneck]\nrate = \"1Gbit\"\n\
         delay = \"8ms\"\nbuffer = \"5000pkt\"\n[wifi]\nstandard = \"ax\"\n"
    );
    for i in 0..n {
        text += &format!("[hosts.s{i}]\nside = \"client\"\nwifi = {{ snr_db = 30 }}\n");
    }
    for i in 0..n {
        text += &format!("[[flows]]\nclient = \"s{i}\"\ncc = \"cubic\"\napp = \"bulk\"\n");
    }
    text
}

#[test]
fn a_crowded_wifi_cell_is_refused_naming_its_stations() {
    // 4,999 stations used to pass (under 5,000 flows) and take more than 10 GB.
    let limit = Limits::for_backend(Backend::Sim).stations;
    assert_eq!(limit, 1_000);
    let at = common::scenario(&wifi_cell(1_000, "2s"), &[]);
    assert_eq!(
        check(&at, Backend::Sim).expect("at the limit").stations,
        1_000
    );
    let past = common::scenario(&wifi_cell(1_001, "2s"), &[]);
    let err = check(&past, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("hosts"), "{err}");
    assert_eq!(err.problem(), Some(Problem::TooLarge));
    let text = err.to_string();
    assert!(text.contains("1,001 Wi-Fi stations"), "{text}");
    assert!(
        text.ends_with("write e.g. at most 1,000 client hosts"),
        "{text}"
    );
}

#[test]
fn a_dense_ping_is_refused_naming_its_interval_and_one_that_fits() {
    // interval = "10ns" for 60 s: 6 billion probes, shown as "600 series rows" before.
    let ping = "format = 1\nduration = \"60s\"\n[bottleneck]\nrate = \"20Mbit\"\n\
                delay = \"10ms\"\nbuffer = \"100pkt\"\n[[flows]]\ncc = \"reno\"\n\
                [[flows]]\ncc = \"reno\"\napp = { kind = \"ping\", interval = \"10ms\" }\n";
    let scn = common::scenario(ping, &["flows[1].app.interval=10ns"]);
    let cost = Cost::estimate(&scn);
    assert_eq!(cost.probes, 6_000_000_000);
    let err = check(&scn, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("flows[1].app.interval"), "{err}");
    assert!(
        err.to_string().contains("6,000,000,000 ping probes"),
        "{err}"
    );
    let example = err
        .to_string()
        .rsplit("write e.g. ")
        .next()
        .unwrap()
        .to_string();
    let value = example.trim_start_matches("interval = ").trim_matches('"');
    let fixed = common::scenario(ping, &[&format!("flows[1].app.interval={value}")]);
    let cost = check(&fixed, Backend::Sim).unwrap_or_else(|e| panic!("{example}: {e}"));
    assert!(cost.probes > 0 && cost.probes <= 10_000_000, "{cost:?}");
    // A bulk flow alone sends no probes.
    assert_eq!(Cost::estimate(&common::scenario(BULK, &[])).probes, 0);
}

#[test]
fn many_rtp_calls_are_refused_by_their_memory_and_a_count_that_fits() {
    // 4,999 calls and a bulk flow (5,000 flows) used to pass; 5,000 calls aborted at 3 GB.
    let calls = "format = 1\nduration = \"30s\"\n[bottleneck]\nrate = \"1Gbit\"\n\
                 delay = \"10ms\"\nbuffer = \"1000pkt\"\n[[flows]]\ncc = \"reno\"\n\
                 [[flows]]\ncount = 4999\n\
                 app = { kind = \"video_call\", transport = \"rtp\", media_cc = \"scream\" }\n";
    let scn = common::scenario(calls, &[]);
    let cost = Cost::estimate(&scn);
    assert_eq!((cost.flows, cost.calls), (5_000, 4_999));
    // 0.9 MB + 30 s × 85 KB each.
    assert_eq!(cost.call_bytes, 4_999 * (900_000 + 30 * 85_000));
    let err = check(&scn, Backend::Sim).unwrap_err();
    assert_eq!(err.path(), Some("flows[1].count"), "{err}");
    assert!(
        err.to_string()
            .contains("4,999 RTP calls hold about 17,246 MB"),
        "{err}"
    );
    let example = err
        .to_string()
        .rsplit("write e.g. ")
        .next()
        .unwrap()
        .to_string();
    let count = example.trim_start_matches("count = ");
    let fixed = common::scenario(calls, &[&format!("flows[1].count={count}")]);
    let cost = check(&fixed, Backend::Sim).unwrap_or_else(|e| panic!("{example}: {e}"));
    assert!(cost.calls >= 400, "{example}: {cost:?}");
}
