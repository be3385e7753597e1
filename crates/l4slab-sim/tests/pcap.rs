//! The pcap capture (`pcap = true`): four files (each direction's ingress
//! and egress), one record per packet seen there, headers-only records whose
//! lengths are right, byte-identical for the same seed. The files are read
//! back by tshark in `tests/test_pcap.py`; here they are checked against the
//! packet trace of the same run.

mod common;

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

fn run_into(dir: &Path, sets: &[&str]) -> RunOutput {
    let scn = common::scenario(DUALQ, sets);
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
