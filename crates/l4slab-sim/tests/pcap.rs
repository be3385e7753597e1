//! The pcap capture (`pcap = true`): four files (each direction's ingress
//! and egress), two more per access link and direction, one record per
//! packet seen there, headers-only records whose lengths are right,
//! byte-identical for the same seed. The files are read back by tshark in
//! `tests/test_pcap.py`; here they are checked against the packet trace of
//! the same run.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use l4slab_sim::{run, RunOptions, RunOutput};
use pcap_file::pcap::PcapReader;

const DUALQ: &str = r#"
format = 1
duration = "2s"
packet_trace = true
pcap = true
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "40pkt"
qdisc = "dualpi2"
[[flows]]
name = "prague"
cc = "prague"
[[flows]]
name = "cubic"
cc = "cubic"
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("l4slab-sim-pcap-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

/// Prague and Cubic downloads to a laptop behind its own 10 Mbit/s access
/// link (DualPI2, both directions) on a 100 Mbit/s FIFO: the queue, the
/// marks and the drops are the access link's.
const ACCESS: &str = r#"
format = 1
duration = "2s"
packet_trace = true
pcap = true
[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"
[hosts.laptop]
side = "client"
access_delay = "2ms"
access = { rate = "10Mbit", buffer = "30pkt", qdisc = "dualpi2" }
[[flows]]
name = "prague"
cc = "prague"
client = "laptop"
[[flows]]
name = "cubic"
cc = "cubic"
client = "laptop"
"#;

fn run_into(dir: &Path, sets: &[&str]) -> RunOutput {
    run_toml_into(DUALQ, dir, sets)
}

fn run_toml_into(toml: &str, dir: &Path, sets: &[&str]) -> RunOutput {
    let scn = common::scenario(toml, sets);
    let opts = RunOptions {
        pcap_dir: Some(dir.to_owned()),
        ..RunOptions::default()
    };
    run(&scn, &opts, &mut |_| true).expect("run")
}

/// (caplen, origlen, bytes) of each record.
fn records(path: &Path) -> Vec<(usize, u32, Vec<u8>)> {
    let mut r = PcapReader::new(fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        out.push((p.data.len(), p.orig_len, p.data.into_owned()));
    }
    out
}

#[test]
fn four_files_one_record_per_packet_headers_only() {
    let d = scratch("layout");
    let out = run_into(&d, &[]);
    let names: Vec<String> = out
        .pcap_files
        .iter()
        .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "pcap/bottleneck.down.in.pcap",
            "pcap/bottleneck.down.out.pcap",
            "pcap/bottleneck.up.in.pcap",
            "pcap/bottleneck.up.out.pcap"
        ]
    );
    let t = out.packets.expect("traced");
    // Both flows are downloads and hosts have no access delay: data goes
    // down, ACKs up, and a packet reaches the bottleneck when it is sent.
    let count = |event: &str, side: &str| {
        (0..t.rows())
            .filter(|&i| t.event_name(i) == event && t.side_name(i) == side)
            .count()
    };
    let files: Vec<_> = out.pcap_files.iter().map(|p| records(p)).collect();
    assert_eq!(files[0].len(), count("send", "data"));
    assert_eq!(files[1].len(), count("deliver", "data"));
    assert_eq!(files[2].len(), count("send", "ack"));
    assert_eq!(files[3].len(), count("deliver", "ack"));
    assert!(files[1].len() > 3000, "{}", files[1].len());
    for (caplen, origlen, b) in files.iter().flatten() {
        // IPv4, the IP total length is the packet's, only headers kept.
        assert_eq!(b[0], 0x45);
        assert_eq!(u32::from(u16::from_be_bytes([b[2], b[3]])), *origlen);
        let l4 = match b[9] {
            6 => 20 + usize::from(b[32] >> 4) * 4,
            17 => 28,
            p => panic!("protocol {p}"),
        };
        assert_eq!(*caplen, l4);
    }
    // Prague's data leaves the queue CE-marked now and then.
    let ce = files[1].iter().filter(|r| r.2[1] & 0b11 == 0b11).count();
    assert!(ce > 0);
    fs::remove_dir_all(&d).unwrap();
}

/// (timestamp in ns, bytes) of each record.
fn stamped(path: &Path) -> Vec<(u128, Vec<u8>)> {
    let mut r = PcapReader::new(fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        out.push((p.timestamp.as_nanos(), p.data.into_owned()));
    }
    out
}

#[test]
fn an_access_link_has_its_own_queue_rows_and_capture_files() {
    let d = scratch("access");
    let out = run_toml_into(ACCESS, &d, &[]);
    let queues = [
        "bottleneck.down",
        "bottleneck.up",
        "access.laptop.down",
        "access.laptop.up",
    ];
    let names: Vec<String> = out
        .pcap_files
        .iter()
        .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
        .collect();
    let expect: Vec<String> = queues
        .iter()
        .flat_map(|q| ["in", "out"].map(|p| format!("pcap/{q}.{p}.pcap")))
        .collect();
    assert_eq!(names, expect);
    let file = |name: &str| stamped(&d.join("pcap").join(format!("{name}.pcap")));
    let t = out.packets.expect("traced");
    // The trace's queue rows name the access link: the laptop's data is
    // queued and marked at its down direction, its ACKs at its up.
    let rows = |queue: &str, event: &str| {
        (0..t.rows())
            .filter(|&i| t.queue_name(i) == Some(queue) && t.event_name(i).starts_with(event))
            .count()
    };
    for queue in ["access.laptop.down", "access.laptop.up"] {
        for event in ["enqueue", "dequeue"] {
            assert!(
                rows(queue, event) > 500,
                "{queue} {event}: {}",
                rows(queue, event)
            );
        }
    }
    assert!(rows("access.laptop.down", "mark:") > 0);
    assert!(
        rows("access.laptop.down", "drop:") > 0,
        "Cubic fills the 30 packets"
    );
    // Every packet reaching a queue is one `in` record there and has rows
    // there (an enqueue, or a drop on arrival).
    for queue in queues {
        let ids: BTreeSet<u64> = (0..t.rows())
            .filter(|&i| t.queue_name(i) == Some(queue))
            .map(|i| t.pkt_id[i])
            .collect();
        assert_eq!(file(&format!("{queue}.in")).len(), ids.len(), "{queue}");
    }
    // The queues are chained: what leaves one enters the next at that
    // instant, with the same headers.
    assert_eq!(file("bottleneck.down.out"), file("access.laptop.down.in"));
    assert_eq!(file("access.laptop.up.out"), file("bottleneck.up.in"));
    // The laptop sends its ACKs into its access link and receives the data
    // out of it (its delay is the laptop's access_delay: no line follows).
    let count = |event: &str, side: &str| {
        (0..t.rows())
            .filter(|&i| t.event_name(i) == event && t.side_name(i) == side)
            .count()
    };
    assert_eq!(file("access.laptop.up.in").len(), count("send", "ack"));
    assert_eq!(
        file("access.laptop.down.out").len(),
        count("deliver", "data")
    );
    // The marks are the access link's: CE leaves it, none arrives.
    let ce = |name: &str| file(name).iter().filter(|r| r.1[1] & 0b11 == 0b11).count();
    assert_eq!(ce("access.laptop.down.in"), 0);
    assert!(ce("access.laptop.down.out") > 0);
    // Each file is in time order.
    for name in &names {
        let times: Vec<u128> = stamped(&d.join(name)).iter().map(|r| r.0).collect();
        assert!(times.is_sorted(), "{name}");
    }
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_same_seed_gives_byte_identical_files() {
    let (a, b, c) = (scratch("a"), scratch("b"), scratch("c"));
    let fa = run_into(&a, &["duration=500ms"]).pcap_files;
    let fb = run_into(&b, &["duration=500ms"]).pcap_files;
    let fc = run_into(&c, &["duration=500ms", "seed=2"]).pcap_files;
    for i in 0..4 {
        assert_eq!(fs::read(&fa[i]).unwrap(), fs::read(&fb[i]).unwrap());
    }
    assert_ne!(fs::read(&fa[0]).unwrap(), fs::read(&fc[0]).unwrap());
    for d in [a, b, c] {
        fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn without_a_folder_or_the_key_nothing_is_captured() {
    let scn = common::scenario(DUALQ, &["duration=100ms"]);
    let out = run(&scn, &RunOptions::default(), &mut |_| true).unwrap();
    assert!(out.pcap_files.is_empty());
    let d = scratch("off");
    let out = run_into(&d, &["duration=100ms", "pcap=false"]);
    assert!(out.pcap_files.is_empty() && !d.exists());
}
