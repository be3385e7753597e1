//! Network input cannot crash the emulator's own endpoints: while a
//! scenario runs ping, cbr, an RTP video call and a QUIC-style file on
//! l4slab's own endpoints (crates/l4slab-emu/src/dgram.rs), every one of
//! their sockets is sent stray datagrams: from a port no flow uses
//! (foreign), and spoofed from the flow's other end (raw IPv4: empty and
//! 3-byte datagrams, too short for a tag; tags never sent; a tag already
//! sent, a duplicate; random bytes). The run ends normally, every flow
//! reports, and each counts what it ignored in `datagrams_ignored`. Needs
//! root (network namespaces, TUN devices, a raw socket); as any other user
//! it prints why it is skipped and passes. (Wall-clock reads are fine in
//! the emulator's tests.)
#![allow(clippy::disallowed_methods)]

mod common;

use common::{emu, root_or_skip, run_plan};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use l4slab_emu::netns::{CLIENT_ADDR, NS_PREFIX, SERVER_ADDR};
use l4slab_emu::plan::Plan;
use l4slab_emu::run::BASE_PORT;

const SCENARIO: &str = r#"format = 1
duration = "4s"
[bottleneck]
rate = "20Mbit"
delay = "5ms"
buffer = "50ms"
[[flows]]
name = "ping"
app = { kind = "ping", interval = "10ms" }
[[flows]]
name = "cbr"
app = { kind = "cbr", rate = "1Mbit", size = "200B" }
[[flows]]
name = "call"
app = { kind = "video_call", transport = "rtp" }
[[flows]]
name = "quic"
app = { kind = "file", size = "2MB" }
transport = { protocol = "quic" }
"#;

/// Sends the strays from inside a namespace: `ME PEER TARGETS SPOOF`,
/// the namespace's address, the other's, the other's flow ports, and this
/// side's flow ports (the sources the other side's sockets expect).
const STRAYS: &str = r#"
import os, socket, struct, sys
me, peer = sys.argv[1], sys.argv[2]
targets = [int(p) for p in sys.argv[3].split(",")]
spoof = [int(p) for p in sys.argv[4].split(",")]
plain = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port in targets:
    for p in [b"", b"abc", os.urandom(8), os.urandom(300)]:
        plain.sendto(p, (peer, port))
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
def packet(sport, dport, data):
    # UDP checksum 0: none (RFC 768); the kernel fills in the IPv4 checksum.
    udp = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(me), socket.inet_aton(peer))
    return ip + udp
for sport in spoof:
    for dport in targets:
        for p in [b"", b"abc", b"\xff" * 8 + b"x" * 50, struct.pack("<Q", 3) + b"y" * 56,
                  struct.pack("<Q", 1 << 62 | 7) + b"z" * 40, os.urandom(64)]:
            raw.sendto(packet(sport, dport, p), (peer, 0))
"#;

/// The UDP ports bound on `addr` in namespace `ns` (from its /proc/net/udp).
fn udp_ports(ns: &str, addr: std::net::Ipv4Addr) -> Vec<u16> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/udp"])
        .output()
        .unwrap();
    let hex = format!("{:08X}", u32::from_le_bytes(addr.octets()));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|local| local.split_once(':'))
        .filter(|(a, _)| *a == hex)
        .filter_map(|(_, p)| u16::from_str_radix(p, 16).ok())
        .collect()
}

fn send_strays(
    ns: &str,
    me: std::net::Ipv4Addr,
    peer: std::net::Ipv4Addr,
    targets: &[u16],
    spoof: &[u16],
) {
    let list = |v: &[u16]| v.iter().map(u16::to_string).collect::<Vec<_>>().join(",");
    let st = Command::new("ip")
        .args(["netns", "exec", ns, "python3", "-c", STRAYS])
        .args([me.to_string(), peer.to_string(), list(targets), list(spoof)])
        .status()
        .unwrap();
    assert!(st.success(), "the stray sender in {ns} failed");
}

#[test]
fn stray_foreign_and_truncated_datagrams_are_counted_and_every_flow_runs_on() {
    if !root_or_skip("stray_foreign_and_truncated_datagrams_are_counted_and_every_flow_runs_on") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("l4slab-emu-stray-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("result.json");
    let mut child = emu(&Plan::Run(run_plan(&scenario, &out, &[])))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let (cns, sns) = (
        format!("{NS_PREFIX}{}-c", child.id()),
        format!("{NS_PREFIX}{}-s", child.id()),
    );
    // The four flows' client sockets, once bound.
    let server_ports: Vec<u16> = (0..4).map(|i| BASE_PORT + i).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let client_ports = loop {
        let p = udp_ports(&cns, CLIENT_ADDR);
        if p.len() >= 4 {
            break p;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the emulator ended before its flows started: {st}");
        }
        assert!(Instant::now() < deadline, "no client sockets in {cns}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Into the run, while every flow sends.
    std::thread::sleep(Duration::from_millis(1500));
    send_strays(&sns, SERVER_ADDR, CLIENT_ADDR, &client_ports, &server_ports);
    send_strays(&cns, CLIENT_ADDR, SERVER_ADDR, &server_ports, &client_ports);
    let st = child.wait().unwrap();
    assert!(st.success(), "the emulator failed: {st}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let summary: Value = serde_json::from_str(r["summary_json"].as_str().unwrap()).unwrap();
    for name in ["ping", "cbr", "call", "quic"] {
        let f = &summary["flows"][name];
        assert!(f["error"].is_null(), "{name}: {f}");
        let ig = &f["datagrams_ignored"];
        let n = |k: &str| ig[k].as_u64().unwrap_or_else(|| panic!("{name}: {ig}"));
        // Four from the plain socket at each end.
        assert!(n("foreign") >= 8, "{name}: {ig}");
        if name != "quic" {
            // An empty and a 3-byte datagram from the other end, at each end.
            assert!(n("truncated") >= 4, "{name}: {ig}");
            // Tags never sent (all ones, a kind bit with an id never used).
            assert!(n("unknown") + n("duplicate") >= 2, "{name}: {ig}");
        }
    }
    let ping = &summary["flows"]["ping"]["app_metrics"];
    assert!(ping["replies"].as_u64().unwrap() > 100, "{ping}");
    let file = &summary["flows"]["quic"];
    assert!(file["completion_s"].as_f64().is_some(), "{file}");
}
