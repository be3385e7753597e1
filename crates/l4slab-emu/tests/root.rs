//! End-to-end emulator tests. They need root (network namespaces, TUN
//! devices); as any other user each test prints why it is skipped and passes.
//! CI runs as root, so they run there.
//!
//! Every packet stays inside namespaces the tests create (10.77.0.0/24).
//! The tests run one at a time (a lock) so they do not disturb each other's
//! timing. Tolerances are documented in docs/emulator.md with the
//! measurements they come from. (Wall-clock reads are fine here: this is
//! the emulator's test suite, which waits for real processes.)
#![allow(clippy::disallowed_methods)]

mod common;

use common::{emu, emu_command, emu_sh, root_or_skip, run_plan, shell_plan, strings};

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use l4slab_sys::signal;
use serde_json::Value;

use l4slab_emu::plan::{
    CleanupPlan, EcnCheckPlan, EcnReflectPlan, PingPlan, Plan, TcpSendPlan, TcpSinkPlan,
    ValidatePlan,
};
use l4slab_emu::shell::ShellOptions;
static SERIAL: Mutex<()> = Mutex::new(());

/// Measuring programs run under `chrt -f 20`: real-time, below the
/// forwarder (50) and the scenario apps thread (40), as docs/emulator.md
/// advises. At normal priority a probe descheduled for milliseconds by other
/// load on the machine measures the machine, not the emulated link (seen in
/// CI: a sender at 17.2 of 19.3 Mbit/s, a ping median 1.5 ms high).
const RT: [&str; 3] = ["chrt", "-f", "20"];

/// `chrt -f 20 l4slab-emu PLAN` (RT) as a command.
fn rt(plan: Plan) -> Vec<String> {
    let mut c = strings(&RT);
    c.extend(emu_command(&plan));
    c
}

/// A shell plan running `command` (owned strings).
fn shell_of(command: Vec<String>, sets: &[&str]) -> ShellOptions {
    ShellOptions {
        command,
        sets: strings(sets),
        ..shell_plan(&[])
    }
}

/// Run the shell plan `o` (quiet, with a report); returns (exit code, stdout, report).
fn shell(mut o: ShellOptions) -> (i32, String, Value) {
    let dir = tempdir();
    let report = dir.join("report.json");
    o.quiet = true;
    o.report = Some(report.clone());
    let out = emu(&Plan::Shell(o))
        .stdin(Stdio::null())
        .output()
        .expect("run l4slab-emu");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rep = std::fs::read_to_string(&report)
        .map(|t| serde_json::from_str(&t).expect("report is JSON"))
        .unwrap_or_else(|_| panic!("no report; stderr: {stderr}"));
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        rep,
    )
}

fn tempdir() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("l4slab-emu-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn namespaces() -> String {
    String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned()
}

/// Pids of the processes in namespace `name`.
fn ns_pids(name: &str) -> Vec<i32> {
    let out = Command::new("ip")
        .args(["netns", "pids", name])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Does `pid` exist as a process that is not a zombie?
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn ping_rtt_matches_the_configured_delay() {
    if !root_or_skip("ping_rtt_matches_the_configured_delay") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 10 ms each way -> 20 ms RTT. The probe runs real-time below the
    // forwarder (see RT below).
    let ping = Plan::Ping(PingPlan {
        addr: "10.77.0.2".parse().unwrap(),
        count: 40,
        interval_ms: 20,
        size: 56,
    });
    let (code, out, rep) = shell(shell_of(rt(ping), &["bottleneck.delay=10ms"]));
    assert_eq!(code, 0, "{out}");
    let ping: Value = serde_json::from_str(out.trim()).unwrap();
    let mut rtts: Vec<f64> = ping["rtt_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(rtts.len(), 40, "every echo answered: {ping}");
    let min = rtts.iter().copied().fold(f64::INFINITY, f64::min);
    let med = median(&mut rtts);
    // Never faster than configured; median within 1.5 ms (docs/emulator.md:
    // measured +0.1 to +0.4 ms median, release and debug builds).
    assert!(min >= 20.0, "min RTT {min} ms below the configured 20 ms");
    assert!(med <= 21.5, "median RTT {med} ms");
    assert!(
        rep["forwarder"]["timing_error_us"]["samples"]
            .as_u64()
            .unwrap()
            >= 80
    );
}

/// Goodput from the sender's TCP_INFO between two sample times.
fn acked_rate_bps(send: &Value, from_s: f64, to_s: f64) -> f64 {
    let samples = send["samples"].as_array().unwrap();
    let at = |t: f64| {
        samples
            .iter()
            .find(|s| s["t_s"].as_f64().unwrap() >= t)
            .unwrap_or_else(|| samples.last().unwrap())
    };
    let (a, b) = (at(from_s), at(to_s));
    let bytes =
        b["info"]["bytes_acked"].as_f64().unwrap() - a["info"]["bytes_acked"].as_f64().unwrap();
    bytes * 8.0 / (b["t_s"].as_f64().unwrap() - a["t_s"].as_f64().unwrap())
}

#[test]
fn a_kernel_tcp_flow_gets_the_link_rate() {
    if !root_or_skip("a_kernel_tcp_flow_gets_the_link_rate") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The sender and the sink run real-time below the forwarder (RT).
    let sink = format!(
        "{} {} >/dev/null",
        RT.join(" "),
        emu_sh(&Plan::TcpSink(TcpSinkPlan { port: 5001 }))
    );
    let send = Plan::TcpSend(TcpSendPlan {
        addr: "10.77.0.2:5001".parse().unwrap(),
        cc: "cubic".into(),
        seconds: 5.0,
        sample_ms: 100,
    });
    let (code, out, rep) = shell(ShellOptions {
        server_command: Some(sink),
        ..shell_of(
            rt(send),
            &[
                "bottleneck.rate=20Mbit",
                "bottleneck.delay=10ms",
                "bottleneck.buffer=100pkt",
            ],
        )
    });
    assert_eq!(code, 0, "{out}");
    let send: Value = serde_json::from_str(out.trim()).unwrap();
    // Payload rate of a saturated 20 Mbit/s link: 1448 of every 1500 bytes
    // (timestamps on) = 19.31 Mbit/s. Steady state from 1 s to the end.
    let rate = acked_rate_bps(&send, 1.0, 5.0);
    let expected = 20e6 * 1448.0 / 1500.0;
    assert!(
        (rate - expected).abs() / expected < 0.03,
        "goodput {rate:.0} bit/s vs {expected:.0}"
    );
    let up = &rep["queues"]["bottleneck.up"];
    assert!(up["utilization"].as_f64().unwrap() > 0.9, "{up}");
}

#[test]
fn ce_marks_from_the_forwarder_make_a_kernel_ecn_flow_back_off() {
    if !root_or_skip("ce_marks_from_the_forwarder_make_a_kernel_ecn_flow_back_off") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sink = format!(
        "{} {} >/dev/null",
        RT.join(" "),
        emu_sh(&Plan::TcpSink(TcpSinkPlan { port: 5001 }))
    );
    let run = |qdisc: &str| {
        // 10.77.0.3 is the server address whose route negotiates ECN.
        let send = Plan::TcpSend(TcpSendPlan {
            addr: "10.77.0.3:5001".parse().unwrap(),
            cc: "cubic".into(),
            seconds: 4.0,
            sample_ms: 100,
        });
        let (code, out, rep) = shell(ShellOptions {
            server_command: Some(sink.clone()),
            ..shell_of(
                rt(send),
                &[
                    "bottleneck.rate=20Mbit",
                    "bottleneck.delay=10ms",
                    "bottleneck.buffer=200pkt",
                    qdisc,
                ],
            )
        });
        assert_eq!(code, 0, "{out}");
        (serde_json::from_str::<Value>(out.trim()).unwrap(), rep)
    };
    // CoDel with ECN marks instead of dropping.
    let (send, rep) = run("bottleneck.qdisc={ kind = \"codel\", ecn = true }");
    let last = &send["last"];
    assert_eq!(send["ecn"], true, "ECN negotiated: {last}");
    let marks = rep["queues"]["bottleneck.up"]["marks"]["total"]
        .as_u64()
        .unwrap();
    assert!(marks > 0, "the queue marked");
    assert!(
        last["delivered_ce"].as_u64().unwrap() > 0,
        "CE reached the sender: {last}"
    );
    // The sender reduced its window on CE alone: ssthresh set, nothing retransmitted.
    assert!(last["snd_ssthresh"].as_u64().unwrap() < 1_000_000, "{last}");
    assert_eq!(last["total_retrans"], 0, "{last}");
    // And the queue stayed short: RTT near 20 ms + CoDel's 5 ms target,
    // where the same flow fills a 200-packet FIFO (120 ms) without marks.
    let srtt_ms = |s: &Value| s["info"]["rtt_us"].as_f64().unwrap() / 1000.0;
    let steady: Vec<f64> = send["samples"].as_array().unwrap()[15..]
        .iter()
        .map(srtt_ms)
        .collect();
    let mean = steady.iter().sum::<f64>() / steady.len() as f64;
    assert!(mean < 40.0, "mean srtt {mean} ms with CE marking");
    let (fifo, _) = run("bottleneck.qdisc=fifo");
    let fifo_rtt: Vec<f64> = fifo["samples"].as_array().unwrap()[15..]
        .iter()
        .map(srtt_ms)
        .collect();
    let fifo_mean = fifo_rtt.iter().sum::<f64>() / fifo_rtt.len() as f64;
    assert!(
        fifo_mean > 2.0 * mean,
        "fifo {fifo_mean} ms vs codel+ecn {mean} ms"
    );
}

fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn teardown_leaves_nothing_behind_on_exit_signals_and_sigkill() {
    if !root_or_skip("teardown_leaves_nothing_behind_on_exit_signals_and_sigkill") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Normal exit, with the exit code passed through.
    let st = emu(&Plan::Shell(shell_plan(&["sh", "-c", "exit 7"])))
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(7));
    // Ctrl-C, SIGTERM, SIGHUP and SIGKILL while COMMAND (and a process it
    // left in the background) and the server command are running: no
    // namespace, no state file and none of their processes may survive.
    for sig in [
        signal::SIGINT,
        signal::SIGTERM,
        signal::SIGHUP,
        signal::SIGKILL,
    ] {
        let plan = Plan::Shell(ShellOptions {
            server_command: Some("sleep 60".into()),
            ..shell_plan(&["sh", "-c", "sleep 60 & sleep 60"])
        });
        let mut child = emu(&plan).stdin(Stdio::null()).spawn().unwrap();
        let pid = child.id();
        let prefix = format!("l4slab-{pid}-");
        let state = format!("/run/l4slab-emu/{pid}.json");
        let mut procs = Vec::new();
        // The server command never listens: COMMAND starts after the shell's
        // 2 s wait for it (shell.rs SERVER_READY).
        wait_until("the commands", Duration::from_secs(10), || {
            procs = ["c", "s"]
                .iter()
                .flat_map(|side| ns_pids(&format!("{prefix}{side}")))
                .collect();
            // sh + 2 sleeps in the client namespace, sleep in the server's.
            procs.len() >= 3
        });
        let _ = signal::kill(pid as i32, sig);
        let _ = child.wait();
        wait_until("the teardown", Duration::from_secs(10), || {
            !namespaces().contains(&prefix) && !Path::new(&state).exists()
        });
        wait_until("the commands to be gone", Duration::from_secs(10), || {
            procs.iter().all(|p| !alive(*p))
        });
    }
}

#[test]
fn stale_state_is_removed_but_foreign_namespaces_are_not() {
    if !root_or_skip("stale_state_is_removed_but_foreign_namespaces_are_not") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A dead owner: a process that has exited and been reaped.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let ours = format!("l4slab-stale{dead_pid}-c");
    let foreign = format!("notl4slab-{dead_pid}");
    for ns in [&ours, &foreign] {
        assert!(Command::new("ip")
            .args(["netns", "add", ns])
            .status()
            .unwrap()
            .success());
    }
    std::fs::create_dir_all("/run/l4slab-emu").unwrap();
    let state = format!("/run/l4slab-emu/stale-{dead_pid}.json");
    std::fs::write(
        &state,
        format!(
            r#"{{"owner_pid":{dead_pid},"owner_start":1,"namespaces":["{ours}","{foreign}"]}}"#
        ),
    )
    .unwrap();
    let out = emu(&Plan::Cleanup(CleanupPlan {})).output().unwrap();
    assert!(out.status.success());
    let list = namespaces();
    let foreign_kept = list.contains(&foreign);
    let _ = Command::new("ip").args(["netns", "del", &foreign]).status();
    assert!(!list.contains(&ours), "stale namespace removed: {list}");
    assert!(
        foreign_kept,
        "a namespace without the l4slab- prefix is never deleted"
    );
    assert!(!Path::new(&state).exists());
}

#[test]
fn a_namespace_it_did_not_create_is_refused_and_left_alone() {
    if !root_or_skip("a_namespace_it_did_not_create_is_refused_and_left_alone") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // `exec` keeps the shell's pid, so the emulator's namespace name
    // (l4slab-<pid>-c) is known before it starts: create it first.
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "echo $$; ip netns add l4slab-$$-c && exec {}",
                emu_sh(&Plan::Shell(shell_plan(&["true"])))
            ),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let name = format!("l4slab-{pid}-c");
    let still_there = namespaces().contains(&name);
    let _ = Command::new("ip").args(["netns", "del", &name]).status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("already exists"), "{err}");
    assert!(still_there, "the foreign namespace {name} was left alone");
    assert!(!namespaces().contains(&format!("l4slab-{pid}-s")));
    assert!(!Path::new(&format!("/run/l4slab-emu/{pid}.json")).exists());
}

#[test]
fn a_scenario_runs_with_kernel_tcp_and_gives_the_results_contract() {
    if !root_or_skip("a_scenario_runs_with_kernel_tcp_and_gives_the_results_contract") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir();
    let scenario = dir.join("emu-cubic.toml");
    std::fs::write(
        &scenario,
        r#"format = 1
duration = "3s"
sample_interval = "250ms"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "60ms"
qdisc = { kind = "codel", ecn = true }
[[flows]]
name = "dl"
cc = "cubic"
ecn = "classic"
[[flows]]
name = "file"
cc = "reno"
direction = "up"
app = { kind = "file", size = "200kB" }
"#,
    )
    .unwrap();
    let out = dir.join("result.json");
    let mut plan = run_plan(&scenario, &out, &["packet_trace=true", "pcap=true"]);
    plan.pcap_dir = Some(dir.clone());
    let st = emu(&Plan::Run(plan)).stdin(Stdio::null()).status().unwrap();
    assert!(st.success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let s: Value = serde_json::from_str(r["summary_json"].as_str().unwrap()).unwrap();
    assert_eq!(s["backend"], "emu");
    // Flows with different congestion controls: the namespaces' default is
    // Linux's (cubic), not the host's; each sender sets its own per socket.
    let ns_cc = &s["emulator"]["tcp_congestion_control"];
    assert_eq!(ns_cc["client"], "cubic", "{ns_cc}");
    assert_eq!(ns_cc["server"], "cubic", "{ns_cc}");
    let dl = &s["flows"]["dl"];
    assert_eq!(dl["ecn"], "classic", "{dl}");
    // The congestion control reached the sending sockets: the download's
    // sender is the accepted socket, which inherits it from the listener.
    assert_eq!(dl["kernel_cc"], "cubic", "{dl}");
    assert_eq!(s["flows"]["file"]["kernel_cc"], "reno");
    let threads = &s["emulator"]["threads"];
    assert!(
        threads["applications"]["cpu_s"].as_f64().unwrap() > 0.0,
        "{threads}"
    );
    assert!(!s["emulator"]["kernel_tcp_counters"]["server"]
        .as_object()
        .unwrap()
        .is_empty());
    let goodput = dl["goodput_bps"].as_f64().unwrap();
    assert!(goodput > 12e6 && goodput < 19.4e6, "{dl}");
    assert!(dl["rtt_ms"]["min"].as_f64().unwrap() >= 20.0, "{dl}");
    let file = &s["flows"]["file"];
    assert_eq!(file["bytes_delivered"], 200_000, "{file}");
    assert!(file["completion_s"].as_f64().unwrap() > 0.04, "{file}");
    let down = &s["queues"]["bottleneck.down"];
    assert_eq!(down["kind"], "codel");
    assert!(
        down["sojourn_ms_by_flow"]["dl"]["samples"]
            .as_u64()
            .unwrap()
            > 1000
    );
    assert!(
        s["emulator"]["timing_error_us"]["samples"]
            .as_u64()
            .unwrap()
            > 1000
    );
    let keys: Vec<&str> = r["series"]["key"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for k in [
        "goodput_bps",
        "cwnd_bytes",
        "srtt_ms",
        "sojourn_ms",
        "backlog_pkts",
    ] {
        assert!(keys.contains(&k), "series has {k}");
    }
    // The packet trace has the bottleneck runtime's queue events, as the
    // simulator's: the download's data dequeued from the down queue with
    // its sojourn, one id per packet.
    let p = &r["packets"];
    let rows = p["event"].as_array().unwrap().len();
    let dequeued: Vec<usize> = (0..rows)
        .filter(|&i| p["event"][i] == "dequeue" && p["flow"][i] == 0 && p["side"][i] == "data")
        .collect();
    assert!(dequeued.len() > 1000, "{} dequeues", dequeued.len());
    for &i in &dequeued {
        assert_eq!(p["queue"][i], "bottleneck.down");
        assert!(p["sojourn_us"][i].as_f64().unwrap() >= 0.0);
        let id = &p["pkt_id"][i];
        assert!((0..i).any(|j| p["pkt_id"][j] == *id && p["event"][j] == "enqueue"));
    }
    // The pcap capture: the real packets, IP headers on, at the queue's
    // ingress and egress; the download's CE marks are in the egress only.
    let ecn_bits = |name: &str| -> Vec<u8> {
        let f = std::fs::File::open(dir.join("pcap").join(name)).unwrap();
        let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
        let mut out = Vec::new();
        while let Some(pkt) = r.next_packet() {
            let pkt = pkt.unwrap();
            assert!(pkt.data.len() as u32 <= pkt.orig_len);
            match pkt.data[0] >> 4 {
                4 => out.push(pkt.data[1] & 3),
                6 => out.push((pkt.data[1] >> 4) & 3),
                v => panic!("IP version {v}"),
            }
        }
        out
    };
    let ingress = ecn_bits("bottleneck.down.in.pcap");
    let egress = ecn_bits("bottleneck.down.out.pcap");
    assert!(ingress.len() > 1000 && egress.len() > 1000);
    assert!(
        !ingress.contains(&3) && egress.contains(&3),
        "CE after the queue"
    );
    // What the kernel cannot carry runs on l4slab's own endpoints, said in
    // the notes (tests/root_own.rs runs it); a frame app over TCP with such
    // a controller is refused before anything is created.
    let validate = |sets: &[&str]| {
        let plan = Plan::Validate(ValidatePlan {
            scenario: scenario.clone(),
            sets: strings(sets),
        });
        emu(&plan).output().unwrap()
    };
    let out = validate(&["flows[0].cc=prague"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["emulator_notes"].to_string();
    assert!(notes.contains("this kernel has no prague"), "{notes}");
    let out = validate(&[
        "flows[0].cc=prague",
        r#"flows[0].app={ kind = "video_call" }"#,
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(r#".app = "video_call" over TCP"#), "{err}");
}

/// The (series, key) pairs of a series given as columns.
fn series_pairs(series: &Value) -> std::collections::BTreeSet<(String, String)> {
    let names = series["series"].as_array().unwrap();
    let keys = series["key"].as_array().unwrap();
    names
        .iter()
        .zip(keys)
        .map(|(n, k)| {
            (
                n.as_str().unwrap().to_owned(),
                k.as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// One bottleneck runtime: an emulated run writes every queue series and
/// every queue summary key a simulated run of the same scenario writes: for
/// DualPI2 (the per-sub-queue `sojourn_ms.c` / `.l` included) and for
/// fq_pie (added once, in the shared core: both backends have it).
#[test]
fn an_emulated_run_writes_the_queue_series_and_summary_of_a_simulated_one() {
    if !root_or_skip("an_emulated_run_writes_the_queue_series_and_summary_of_a_simulated_one") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (qdisc, subqueues) in [("dualpi2", vec!["c", "l"]), ("fq_pie", vec![])] {
        let dir = tempdir();
        let text = format!(
            r#"format = 1
duration = "2s"
sample_interval = "200ms"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "200pkt"
qdisc = "{qdisc}"
[[flows]]
name = "dl"
cc = "cubic"
"#
        );
        let scenario = dir.join("q.toml");
        std::fs::write(&scenario, &text).unwrap();
        let out = dir.join("result.json");
        let st = emu(&Plan::Run(run_plan(&scenario, &out, &[])))
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "{qdisc}");
        let emu: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let opts = l4slab_scenario::ParseOptions {
            known_cc: l4slab_sim::cc_names().to_vec(),
            trace_dirs: vec![],
        };
        let scn = l4slab_scenario::parse_with(&text, "q.toml", &[], &opts).unwrap();
        let sim = l4slab_sim::run(&scn, &l4slab_sim::RunOptions::default(), &mut |_| true).unwrap();
        let sim_series: std::collections::BTreeSet<(String, String)> = (0..sim.series.len())
            .map(|i| {
                let s = &sim.series;
                (s.name(s.series[i]).to_owned(), s.name(s.key[i]).to_owned())
            })
            .filter(|(n, _)| n.starts_with("queue/"))
            .collect();
        assert!(sim_series.len() > 10, "{qdisc}: {sim_series:?}");
        let emu_series = series_pairs(&emu["series"]);
        for pair in &sim_series {
            assert!(
                emu_series.contains(pair),
                "{qdisc}: the emulated run lacks {pair:?}"
            );
        }
        let emu_summary: Value =
            serde_json::from_str(emu["summary_json"].as_str().unwrap()).unwrap();
        for q in ["bottleneck.down", "bottleneck.up"] {
            let keys = |v: &Value| -> Vec<String> {
                let mut k: Vec<String> = v["queues"][q]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect();
                k.retain(|k| k != "timing_error_us");
                k
            };
            assert_eq!(keys(&emu_summary), keys(&sim.summary), "{qdisc} {q}");
            assert_eq!(emu_summary["queues"][q]["kind"], qdisc);
            let subs: Vec<&String> = emu_summary["queues"][q]["subqueues"]
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            assert_eq!(subs, subqueues, "{qdisc} {q}");
        }
        // The download went through and the queue worked.
        let down = &emu_summary["queues"]["bottleneck.down"];
        assert!(
            down["sent_packets"].as_u64().unwrap() > 1000,
            "{qdisc}: {down}"
        );
    }
}

/// The LiteSpeed transfer (10 MB, 20 Mbit/s, 25 ms, 1 % random loss on the
/// data path; scenarios/studies/litespeed-bbr-loss): kernel CUBIC through
/// the emulator and the simulator's CUBIC lose the same packets (same seed)
/// and must take about as long. Before Linux's arithmetic (α = 0.53, whole-
/// segment cuts) and loss recovery the simulator took 10.8-11.2 s where the
/// kernel took 15.5-17.6 s. Measured now (docs/models/cubic.md): sim 16.08,
/// 15.25, 15.33 s vs kernel 17.74-18.10, 15.31-15.47, 15.60 s (seeds 1-3).
#[test]
fn cubic_under_random_loss_takes_as_long_as_kernel_cubic() {
    if !root_or_skip("cubic_under_random_loss_takes_as_long_as_kernel_cubic") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = r#"format = 1
duration = "25s"                   # the emulator runs to the end; the slowest took 18.1 s
[bottleneck]
rate = "20Mbit"
buffer = "1000pkt"
[bottleneck.down]
delay = "25ms"
loss = "1%"
[bottleneck.up]
delay = "0ms"
[[flows]]
name = "file"
cc = "cubic"
app = { kind = "file", size = "10MB" }
"#;
    let dir = tempdir();
    let scenario = dir.join("loss.toml");
    std::fs::write(&scenario, text).unwrap();
    let opts = l4slab_scenario::ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    let (mut sum_sim, mut sum_emu) = (0.0, 0.0);
    for seed in [1u64, 2, 3] {
        let out = dir.join(format!("result-{seed}.json"));
        let mut plan = run_plan(&scenario, &out, &[]);
        plan.seed = Some(seed);
        let st = emu(&Plan::Run(plan)).stdin(Stdio::null()).status().unwrap();
        assert!(st.success(), "seed {seed}");
        let emu: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let emu: Value = serde_json::from_str(emu["summary_json"].as_str().unwrap()).unwrap();
        let scn = l4slab_scenario::parse_with(text, "loss.toml", &[], &opts).unwrap();
        let ro = l4slab_sim::RunOptions {
            seed: Some(seed),
            ..l4slab_sim::RunOptions::default()
        };
        let sim = l4slab_sim::run(&scn, &ro, &mut |_| true).unwrap();
        let done = |v: &Value| {
            v["flows"]["file"]["completion_s"]
                .as_f64()
                .expect("completed")
        };
        let (s, e) = (done(&sim.summary), done(&emu));
        let (rs, re) = (
            sim.summary["flows"]["file"]["retransmits"]
                .as_u64()
                .unwrap(),
            emu["flows"]["file"]["retransmits"].as_u64().unwrap(),
        );
        eprintln!("seed {seed}: sim {s:.2} s ({rs} retransmits), kernel {e:.2} s ({re})");
        // Per run: the two take different paths through the same losses.
        assert!(
            (s / e - 1.0).abs() <= 0.15,
            "seed {seed}: sim {s} s vs kernel {e} s"
        );
        sum_sim += s;
        sum_emu += e;
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The issue's bar: within 10 % (here of the mean over the seeds).
    let ratio = sum_sim / sum_emu;
    assert!((ratio - 1.0).abs() <= 0.10, "mean sim/kernel {ratio:.3}");
}

/// Kernel Cubic through the simulated Wi-Fi cell in real time agrees with
/// the simulator's Cubic through the same cell (scenarios/emu/cubic-wifi.toml:
/// a download to a distant station and an upload from a near one, the air
/// the bottleneck). Measured over 20 s, seeds 1-3 (docs/models/wifi.md):
/// both flows together within 1.4-4.1 % (the kernel lower), each flow within
/// 11.4 %, median RTT within 3 ms. Here 12 s, two seeds: the cell's total
/// within 8 %, each flow within 20 %, median RTTs within 15 %, the airtime
/// shares within 0.05, and the emulator reports the cell.
#[test]
fn kernel_tcp_through_a_wifi_cell_agrees_with_the_simulator() {
    if !root_or_skip("kernel_tcp_through_a_wifi_cell_agrees_with_the_simulator") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/emu/cubic-wifi.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let opts = l4slab_scenario::ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    let dir = tempdir();
    for seed in [1u64, 2] {
        let out = dir.join(format!("wifi-{seed}.json"));
        let mut plan = run_plan(Path::new(path), &out, &["duration=12s"]);
        plan.seed = Some(seed);
        let st = emu(&Plan::Run(plan)).stdin(Stdio::null()).status().unwrap();
        assert!(st.success(), "seed {seed}");
        let emu: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let emu: Value = serde_json::from_str(emu["summary_json"].as_str().unwrap()).unwrap();
        let scn = l4slab_scenario::parse_with(
            &text,
            "cubic-wifi.toml",
            &["duration=12s".to_string()],
            &opts,
        )
        .unwrap();
        let ro = l4slab_sim::RunOptions {
            seed: Some(seed),
            ..l4slab_sim::RunOptions::default()
        };
        let sim = l4slab_sim::run(&scn, &ro, &mut |_| true).unwrap().summary;
        let goodput = |v: &Value, f: &str| v["flows"][f]["goodput_bps"].as_f64().unwrap();
        let p50 = |v: &Value, f: &str| v["flows"][f]["rtt_ms"]["p50"].as_f64().unwrap();
        let share = |v: &Value, s: &str| {
            v["wifi"]["stations"][s]["airtime_share"]
                .as_f64()
                .expect("the cell's results")
        };
        let total = |v: &Value| goodput(v, "download") + goodput(v, "upload");
        eprintln!(
            "seed {seed}: sim {:.1} + {:.1} Mbit/s, kernel {:.1} + {:.1}; RTT p50 sim {:.1}/{:.1}, kernel {:.1}/{:.1} ms",
            goodput(&sim, "download") / 1e6,
            goodput(&sim, "upload") / 1e6,
            goodput(&emu, "download") / 1e6,
            goodput(&emu, "upload") / 1e6,
            p50(&sim, "download"),
            p50(&sim, "upload"),
            p50(&emu, "download"),
            p50(&emu, "upload"),
        );
        assert!(
            (total(&emu) / total(&sim) - 1.0).abs() <= 0.08,
            "seed {seed}: the cell's total"
        );
        for f in ["download", "upload"] {
            let r = goodput(&emu, f) / goodput(&sim, f);
            assert!(
                (r - 1.0).abs() <= 0.20,
                "seed {seed}, {f}: kernel/sim goodput {r:.3}"
            );
            let r = p50(&emu, f) / p50(&sim, f);
            assert!(
                (r - 1.0).abs() <= 0.15,
                "seed {seed}, {f}: kernel/sim median RTT {r:.3}"
            );
        }
        for s in ["laptop", "phone"] {
            let d = share(&emu, s) - share(&sim, s);
            assert!(
                d.abs() <= 0.05,
                "seed {seed}, {s}: airtime share differs by {d:.3}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real program through the shell's Wi-Fi cell (`l4slab emu --set
/// wifi.standard=a -- iperf3 ...`): it ran with no cell at all (iperf3 got
/// 692 Mbit/s through "an 802.11a cell", issue 25). An 802.11a 20 MHz cell
/// sends at most 54 Mbit/s on the air and, without A-MPDU, pays a preamble,
/// a backoff and an ACK per packet: measured 23.3 Mbit/s received by
/// iperf3 (docs/emulator.md). Uploads pass the station's queue, downloads
/// (`-R`) the AP's; both stay under 30 Mbit/s and well above zero, and the
/// report has the cell's results. iperf3 at the docs' priorities (the
/// server above the client); skipped without iperf3. About 12 s.
#[test]
fn iperf3_through_the_shells_80211a_cell_gets_the_cells_rate() {
    if !root_or_skip("iperf3_through_the_shells_80211a_cell_gets_the_cells_rate") {
        return;
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("skipping: needs iperf3 (apt-get install -y iperf3)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir();
    let (up, down) = (dir.join("up.json"), dir.join("down.json"));
    // The server may not listen yet when the client starts (a busy machine):
    // try again on "connection refused" for up to 6 s (each try overwrites).
    // iperf3 3.12 exits 0 with -J when it could not connect: a try succeeded
    // when its result has a received sum.
    let client = format!(
        "try() {{ i=0; until chrt -f 40 iperf3 -c $L4SLAB_SERVER -t 4 -J $1 > $2 && \
         grep -q sum_received $2; do \
         i=$((i+1)); [ $i -ge 30 ] && return 1; sleep 0.2; done; }}; \
         try '' {} && try -R {}",
        up.display(),
        down.display()
    );
    let (code, out, rep) = shell(ShellOptions {
        server_command: Some("chrt -f 41 iperf3 -s".into()),
        ..shell_of(
            strings(&["sh", "-c", &client]),
            &["wifi.standard=a", "wifi.band=5GHz"],
        )
    });
    assert_eq!(code, 0, "{out}");
    for (what, file) in [("upload", &up), ("download", &down)] {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{what}: {e}"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let bps = v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: {text}"));
        eprintln!("{what}: {:.1} Mbit/s through 802.11a 20 MHz", bps / 1e6);
        assert!(
            (10e6..30e6).contains(&bps),
            "{what}: {bps:.0} bit/s, not what a 54 Mbit/s 802.11a cell carries"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The cell carried it: one station, every MPDU alone (no A-MPDU in
    // 802.11a), its queues the station's and the AP's.
    let wifi = &rep["wifi"];
    assert_eq!(wifi["links"][0]["phy"]["standard"], "a", "{wifi}");
    assert_eq!(wifi["ampdu"]["mean_mpdus"].as_f64(), Some(1.0), "{wifi}");
    let station = &wifi["stations"]["client"];
    assert_eq!(station["airtime_share"].as_f64(), Some(1.0), "{wifi}");
    for q in ["wifi.client.up.be", "wifi.client.down.be"] {
        let util = rep["queues"][q]["utilization"].as_f64().unwrap_or(0.0);
        assert!(util > 0.2, "{q}: {}", rep["queues"][q]);
    }
}

/// The ECN check through a path whose `ecn_rewrite` is `path` against a
/// reflector started by `reflector_cmd`; returns (exit code, JSON report).
fn ecn_check_with(path: &str, reflector_cmd: &str, count: u32) -> (i32, Value) {
    let check = Plan::EcnCheck(EcnCheckPlan {
        addr: "10.77.0.2".parse().unwrap(),
        tcp_addr: "10.77.0.3".parse().unwrap(),
        port: 7000,
        count,
    });
    let (code, out, _) = shell(ShellOptions {
        server_command: Some(reflector_cmd.into()),
        ..shell_of(
            emu_command(&check),
            &[&format!("bottleneck.ecn_rewrite={path}")],
        )
    });
    let report = serde_json::from_str::<Value>(out.trim())
        .unwrap_or_else(|e| panic!("ecn-check on {path}: exit {code}, {e}: {out}"));
    (code, report)
}

fn ecn_check(path: &str) -> (i32, Value) {
    ecn_check_with(path, &emu_sh(&REFLECTOR), 3)
}

/// The ECN check's reflector, on the port the checker uses.
const REFLECTOR: Plan = Plan::EcnReflect(EcnReflectPlan { port: 7000 });

const CODEPOINTS: [&str; 4] = ["not_ect", "ect0", "ect1", "ce"];

/// The UDP outcome of each codepoint in `direction`.
fn udp_outcomes(r: &Value, direction: &str) -> Vec<String> {
    CODEPOINTS
        .iter()
        .map(|cp| r[direction][cp]["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_ecn_check_passes_a_clean_path() {
    if !root_or_skip("the_ecn_check_passes_a_clean_path") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, r) = ecn_check("none");
    assert_eq!(code, 0, "{r}");
    for d in ["forward", "reverse"] {
        assert_eq!(udp_outcomes(&r, d), ["pass"; 4], "{r}");
        assert_eq!(r["tcp"][d]["outcome"], "pass", "{r}");
        assert_eq!(r["tcp"][d]["ect_seen"], true, "{r}");
    }
    assert_eq!(r["tcp_ecn_negotiated"], true, "{r}");
    assert_eq!(r["tcp_ecn_works"], true, "{r}");
    assert_eq!(r["l4s_ok"], true, "{r}");
    assert_eq!(r["classic_ecn_ok"], true, "{r}");
}

#[test]
fn the_ecn_check_waits_for_a_late_reflector() {
    if !root_or_skip("the_ecn_check_waits_for_a_late_reflector") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The reflector starts a second after the checker (a slow start-up, e.g.
    // a Python interpreter): no probe may be lost to it.
    let late = format!("sleep 1; exec {}", emu_sh(&REFLECTOR));
    let (code, r) = ecn_check_with("none", &late, 2);
    assert_eq!(code, 0, "{r}");
    for d in ["forward", "reverse"] {
        for cp in CODEPOINTS {
            let a = &r[d][cp]["arrived"];
            assert_eq!(a["sent"], 2, "{d} {cp}: {r}");
            assert_eq!(a[cp], 2, "{d} {cp}: every probe arrived as sent: {r}");
        }
    }
}

#[test]
fn the_ecn_check_fails_a_bleaching_path_though_tcp_negotiates_ecn() {
    if !root_or_skip("the_ecn_check_fails_a_bleaching_path_though_tcp_negotiates_ecn") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, r) = ecn_check("bleach");
    assert_eq!(code, 3, "{r}");
    for d in ["forward", "reverse"] {
        // Not-ECT passes; every ECN codepoint arrives Not-ECT.
        assert_eq!(
            udp_outcomes(&r, d),
            ["pass", "bleached", "bleached", "bleached"],
            "{r}"
        );
        // The handshake's TCP flags are not in the IP-ECN field, so ECN is
        // negotiated, but the data's ECT(0) never arrives.
        assert_eq!(r["tcp"][d]["outcome"], "bleached", "{r}");
        assert_eq!(r["tcp"][d]["ect_seen"], false, "{r}");
    }
    assert_eq!(r["tcp_ecn_negotiated"], true, "{r}");
    assert_eq!(r["tcp_ecn_works"], false, "{r}");
    assert_eq!(r["l4s_ok"], false, "{r}");
    assert_eq!(r["classic_ecn_ok"], false, "{r}");
}

#[test]
fn the_ecn_check_fails_a_remarking_path_for_l4s_only() {
    if !root_or_skip("the_ecn_check_fails_a_remarking_path_for_l4s_only") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, r) = ecn_check("remark");
    assert_eq!(code, 3, "{r}");
    for d in ["forward", "reverse"] {
        assert_eq!(
            udp_outcomes(&r, d),
            ["pass", "pass", "remarked", "pass"],
            "{r}"
        );
        // Kernel TCP sends ECT(0), which this path leaves alone.
        assert_eq!(r["tcp"][d]["outcome"], "pass", "{r}");
    }
    assert_eq!(r["tcp_ecn_works"], true, "{r}");
    assert_eq!(r["l4s_ok"], false, "{r}");
    assert_eq!(r["classic_ecn_ok"], true, "{r}");
}

#[test]
fn the_ecn_check_fails_a_path_that_drops_ect() {
    if !root_or_skip("the_ecn_check_fails_a_path_that_drops_ect") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, r) = ecn_check("drop_ect");
    assert_eq!(code, 3, "{r}");
    for d in ["forward", "reverse"] {
        assert_eq!(
            udp_outcomes(&r, d),
            ["pass", "dropped", "dropped", "dropped"],
            "{r}"
        );
        // Negotiated over the Not-ECT handshake; the ECT(0) data is lost and
        // only retransmissions (Not-ECT, RFC 3168 §6.1.5) get through.
        assert_eq!(r["tcp"][d]["outcome"], "dropped", "{r}");
        assert_eq!(r["tcp"][d]["ect_seen"], false, "{r}");
    }
    assert_eq!(r["tcp_ecn_negotiated"], true, "{r}");
    assert_eq!(r["tcp_ecn_works"], false, "{r}");
    assert_eq!(r["l4s_ok"], false, "{r}");
    assert_eq!(r["classic_ecn_ok"], false, "{r}");
}

#[test]
fn the_ecn_check_fails_a_path_that_marks_everything_ce() {
    if !root_or_skip("the_ecn_check_fails_a_path_that_marks_everything_ce") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, r) = ecn_check("ce_all");
    assert_eq!(code, 3, "{r}");
    for d in ["forward", "reverse"] {
        assert_eq!(udp_outcomes(&r, d), ["pass", "ce", "ce", "pass"], "{r}");
        // CE reaches the sender (ECE), on (nearly) every segment.
        assert_eq!(r["tcp"][d]["outcome"], "ce", "{r}");
    }
    assert_eq!(r["tcp_ecn_negotiated"], true, "{r}");
    assert_eq!(r["tcp_ecn_works"], false, "{r}");
    assert_eq!(r["l4s_ok"], false, "{r}");
    assert_eq!(r["classic_ecn_ok"], false, "{r}");
}

#[test]
fn an_emulator_whose_parent_is_already_gone_does_not_start() {
    // No root needed: it stops before anything is created. The environment
    // names a parent that is not ours (pid 1), as after the parent died
    // between fork and `PR_SET_PDEATHSIG` (cli.rs, `tie_to_parent`).
    let out = emu(&Plan::Shell(shell_plan(&["true"])))
        .env("L4SLAB_EMU_PARENT_PID", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + signal::SIGTERM));
    let validate = Plan::Validate(ValidatePlan {
        scenario: "x.toml".into(),
        sets: vec![],
    });
    let out = emu(&validate)
        .env("L4SLAB_EMU_PARENT_PID", "me")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("L4SLAB_EMU_PARENT_PID"), "{err}");
}

fn host_sysctl(key: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{key}"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn the_namespaces_run_the_congestion_control_asked_for_not_the_hosts() {
    if !root_or_skip("the_namespaces_run_the_congestion_control_asked_for_not_the_hosts") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let host = [
        host_sysctl("tcp_congestion_control"),
        host_sysctl("tcp_allowed_congestion_control"),
    ];
    let dir = tempdir();
    let server_saw = dir.join("server-cc");
    // The plan's default, Linux's cubic, whatever the host's (bbr on the
    // project VMs, where cubic is not in tcp_allowed_congestion_control).
    for (cc, want) in [("cubic", "cubic"), ("reno", "reno"), ("bbr", "bbr")] {
        let server = format!(
            "cat /proc/sys/net/ipv4/tcp_congestion_control > {}",
            server_saw.display()
        );
        let (code, out, rep) = shell(ShellOptions {
            server_command: Some(server),
            cc: cc.into(),
            ..shell_plan(&["cat", "/proc/sys/net/ipv4/tcp_congestion_control"])
        });
        assert_eq!(code, 0, "{out}");
        assert_eq!(out.trim(), want, "client namespace with cc {cc}");
        let srv = std::fs::read_to_string(&server_saw).unwrap();
        assert_eq!(srv.trim(), want, "server namespace with cc {cc}");
        assert_eq!(rep["tcp_congestion_control"]["client"], want, "{rep}");
        assert_eq!(rep["tcp_congestion_control"]["server"], want, "{rep}");
    }
    // The host is as it was: its default, and its allowed list restored.
    assert_eq!(
        host,
        [
            host_sysctl("tcp_congestion_control"),
            host_sysctl("tcp_allowed_congestion_control"),
        ]
    );
    // A name the kernel lacks is refused (exit 2), and nothing is left behind.
    let plan = Plan::Shell(ShellOptions {
        cc: "nonesuch".into(),
        ..shell_plan(&["true"])
    });
    let child = emu(&plan)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\"nonesuch\": this kernel has none"), "{err}");
    assert!(!namespaces().contains(&format!("l4slab-{pid}-")));
    assert!(!Path::new(&format!("/run/l4slab-emu/{pid}.json")).exists());
    let _ = std::fs::remove_dir_all(&dir);
}
