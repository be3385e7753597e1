//! `l4slab emu [LINK OPTIONS] -- COMMAND...`: a mahimahi-style shell.
//!
//! Creates the topology ([`crate::netns`]), starts the forwarder with the
//! bottleneck the link options describe, runs an optional server command in
//! the server namespace and COMMAND in the client namespace (with
//! `L4SLAB_SERVER` etc. in its environment), and tears everything down when
//! COMMAND exits, on SIGINT/SIGTERM/SIGHUP, or (through the reaper) when
//! the emulator itself is killed. The exit code is COMMAND's.
//!
//! Link options are scenario `--set` overrides on [`BASE_SCENARIO`], so they
//! are validated, defaulted and built exactly like a scenario file's
//! `[bottleneck]` and `[wifi]` (same errors, same objects: the network is
//! built by `l4slab_scenario::build::network`, as `l4slab run --backend emu`
//! builds a scenario's). With `wifi.*` keys the client namespace is the one
//! station of a Wi-Fi cell (the scenario's default `client` host, its keys
//! `wifi.stations.*`) and the AP sits at the bottleneck's client end: every
//! packet of COMMAND passes the station's queue up and the AP's queue for it
//! down, best effort ([`AccessRoutes::every_packet`]). An override of any
//! other table (`hosts`, `flows`, `duration`, ...) is refused naming its key
//! ([`shell_key`]), never dropped.
//!
//! Both namespaces get one default TCP congestion control (the plan's `cc`,
//! by default Linux's, cubic; [`Topology::set_congestion_control`]) instead
//! of inheriting the host's, and the banner and the report say which.
//!
//! When stdin is a terminal COMMAND gets its own process group in the
//! foreground, so Ctrl-C reaches COMMAND (an interactive shell ignores it)
//! and the emulator tears down when COMMAND ends.

use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use l4slab_core::Dur;
use l4slab_scenario::{ParseOptions, Scenario};

use crate::access::AccessRoutes;
use crate::forwarder::{self, Forwarder, Hooks, Step};
use crate::netns::{self, Topology};
use crate::sys;
use crate::EmuError;

/// The scenario link options apply to: no rate limit to speak of (10 Gbit/s),
/// no delay, a 1000-packet FIFO, no loss. The flow is a placeholder the
/// scenario format requires; the shell's traffic is whatever COMMAND sends
/// (through the flow's route: its client host's Wi-Fi station, best effort,
/// when `wifi.*` makes a cell).
pub const BASE_SCENARIO: &str = r#"format = 1
name = "emu-shell"
duration = "24h"
[bottleneck]
rate = "10Gbit"
delay = "0ms"
buffer = "1000pkt"
[[flows]]
name = "shell"
cc = "cubic"
"#;

/// Congestion controls the kernel offers here (for scenario validation).
pub const KERNEL_CC: &[&str] = &["reno", "cubic", "bbr"];

/// Linux's own default TCP congestion control (net/ipv4/Kconfig,
/// `DEFAULT_TCP_CONG` "cubic"), not whatever the host was set to: what a run
/// whose flows use different ones sets as the namespaces' default
/// ([`crate::run`]; the shell's `cc` is its plan's, whose default is this too).
pub const DEFAULT_CC: &str = l4slab_cc::LINUX_DEFAULT_CC;

/// How the forwarder process runs (part of the `shell` and `run` plans,
/// [`crate::plan`]; the defaults are the plan's, python/l4slab/emu_plan.py).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunTuning {
    /// The TUN devices' MTU (576 to 9000).
    pub mtu: u32,
    /// Busy-wait window before deadlines.
    #[serde(rename = "spin_us", with = "crate::plan::micros")]
    pub spin: Dur,
    /// Pin the forwarder to the last CPU and children to the others.
    pub pin: bool,
    /// SCHED_FIFO for the forwarder.
    pub realtime: bool,
    pub malformed: forwarder::MalformedPolicy,
    /// Write segments released together as one GSO packet.
    pub coalesce: bool,
    /// Shortest sleep of the forwarder ([`forwarder::Config::min_sleep`]).
    #[serde(rename = "min_sleep_us", with = "crate::plan::micros")]
    pub min_sleep: Dur,
    /// The command that runs this emulator again (`[l4slab-emu]` or
    /// `[python, -m, l4slab._emu]`), for the reaper (`None`: no reaper).
    /// Set by the entry point ([`crate::cli`]), never by a plan.
    #[serde(skip)]
    pub reaper: Option<Vec<String>>,
}

impl RunTuning {
    /// The forwarder's configuration as these options set it (MTU, spin,
    /// shortest sleep, malformed packets, coalescing), the rest at its
    /// defaults: the start of both the shell's and a run's.
    pub fn forwarder_config(&self) -> forwarder::Config {
        forwarder::Config {
            mtu: self.mtu as usize,
            spin: self.spin,
            min_sleep: self.min_sleep,
            malformed: self.malformed,
            coalesce: self.coalesce,
            ..forwarder::Config::default()
        }
    }
}

/// `l4slab emu` options: the `shell` plan ([`crate::plan`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShellOptions {
    pub command: Vec<String>,
    /// Overrides on [`BASE_SCENARIO`] (e.g. `bottleneck.rate=20Mbit`).
    pub sets: Vec<String>,
    /// Run with `sh -c` in the server namespace before COMMAND starts.
    pub server_command: Option<String>,
    /// Write the run's report (queues, forwarder, timing) here as JSON.
    pub report: Option<PathBuf>,
    /// The namespaces' default TCP congestion control.
    pub cc: String,
    /// Capture the bottleneck's packets (headers, both directions, at the
    /// queue's ingress and egress) into `DIR/pcap/` ([`crate::capture`]).
    pub pcap_dir: Option<PathBuf>,
    /// The most the capture files may hold in all, in bytes (`None`: no
    /// limit); at the limit they stop growing ([`l4slab_pcap::Captures::limit`]).
    pub pcap_limit: Option<u64>,
    pub quiet: bool,
    /// Sample the queues every second and write each sample to this file
    /// ([`forwarder::Config::live`]; `l4slab gateway`'s status line).
    pub live: Option<PathBuf>,
    pub tuning: RunTuning,
}

/// Resolve link options (the bottleneck's and the Wi-Fi cell's) against
/// [`BASE_SCENARIO`].
///
/// # Errors
/// [`EmuError::Scenario`] naming the option's key path;
/// [`EmuError::Unsupported`] for a host's access link, which the shell
/// cannot tell apart from other traffic (it has no scenario flows).
pub fn resolve_links(sets: &[String]) -> Result<Scenario, EmuError> {
    for set in sets {
        shell_key(set)?;
    }
    let scn = l4slab_scenario::parse_with(
        BASE_SCENARIO,
        "<emu link options>",
        sets,
        &ParseOptions {
            known_cc: KERNEL_CC.to_vec(),
            trace_dirs: vec![],
        },
    )?;
    if let Some(h) = scn.hosts.iter().find(|h| !h.access.is_empty()) {
        return Err(EmuError::Unsupported(format!(
            "hosts.{}.access: the shell runs one client and one server, with no scenario \
             flows to tell a host's packets by, so it has no per-host access links; put \
             the rate on the bottleneck (--rate, --down-rate, --up-rate) or run a scenario \
             file with `l4slab run --backend emu`",
            h.name
        )));
    }
    Ok(scn)
}

/// Checks that the shell honours override `set` (`KEY=VALUE`): the
/// `[bottleneck]` keys (rate, trace, delay, buffer, qdisc, loss models, ECN
/// rewrite), the `[wifi]` keys (the cell, its AP and its one station:
/// `wifi.stations.snr_db`, `mcs`, ...) and `seed` (their random streams).
/// Anything else the shell would build nothing from, so it is refused
/// rather than dropped.
///
/// # Errors
/// [`EmuError::Unsupported`] naming the key.
pub fn shell_key(set: &str) -> Result<(), EmuError> {
    let key = set.split_once('=').map_or(set, |(k, _)| k).trim();
    let top = key.split(['.', '[']).next().unwrap_or(key);
    let why = match top {
        "bottleneck" | "wifi" | "seed" => return Ok(()),
        "hosts" => {
            "the shell runs one client and one server with no scenario hosts; put rates \
             and delays on the bottleneck (--rate, --delay, --down-rate, ...) and the \
             client's Wi-Fi station keys under wifi.stations (wifi.stations.snr_db=20); \
             a cell of several stations needs a scenario file's [hosts] and \
             `l4slab run SCENARIO --backend emu`"
        }
        "flows" => {
            "the shell has no scenario flows: COMMAND is the traffic (the namespaces' \
             default congestion control is --cc)"
        }
        _ => "the shell runs until COMMAND exits and records nothing but the queues",
    };
    Err(EmuError::Unsupported(format!(
        "--set {key}: `l4slab emu` cannot honour it: {why}"
    )))
}

/// Environment for commands in the namespaces.
pub fn command_env(topo: &Topology) -> Vec<(&'static str, String)> {
    vec![
        ("L4SLAB_SERVER", netns::SERVER_ADDR.to_string()),
        ("L4SLAB_SERVER_ECN", netns::SERVER_ECN_ADDR.to_string()),
        ("L4SLAB_SERVER6", netns::SERVER_ADDR6.to_string()),
        ("L4SLAB_CLIENT", netns::CLIENT_ADDR.to_string()),
        ("L4SLAB_CLIENT6", netns::CLIENT_ADDR6.to_string()),
        ("L4SLAB_CLIENT_NETNS", topo.client.name.clone()),
        ("L4SLAB_SERVER_NETNS", topo.server.name.clone()),
    ]
}

/// CPUs for the forwarder and for everything else, when pinning.
pub fn cpu_split(pin: bool) -> (Option<usize>, Option<Vec<usize>>) {
    let cpus = sys::allowed_cpus();
    if !pin || cpus.len() < 2 {
        return (None, None);
    }
    let fwd = *cpus.last().expect("non-empty");
    (Some(fwd), Some(cpus[..cpus.len() - 1].to_vec()))
}

/// Spawn `cmd` inside `netns` with normal scheduling on `cpus`, optionally
/// in its own (foreground) process group. The child is killed if the
/// emulator dies without tearing down (SIGKILL, a crash): `PR_SET_PDEATHSIG`
/// (prctl(2); the parent is this thread, the one that runs the whole shell).
pub fn spawn_in(
    mut cmd: Command,
    netns: RawFd,
    cpus: Option<&[usize]>,
    own_group: bool,
) -> std::io::Result<Child> {
    // prctl(2): if the emulator died before the child asked for the
    // signal, none comes (it was re-parented): it does not start at all.
    sys::ChildSetup {
        parent_death: Some((sys::SIGKILL, std::process::id() as i32)),
        own_process_group: own_group,
        cpus: cpus.map(sys::CpuSet::of),
        netns: Some(netns),
        ..sys::ChildSetup::default()
    }
    .apply_to(&mut cmd);
    cmd.spawn()
}

/// SCHED_FIFO priority of the forwarder thread.
pub const FORWARDER_PRIORITY: i32 = 50;

/// Make this thread the forwarder: pinned and real-time as asked.
pub fn become_forwarder(cpu: Option<usize>, realtime: bool, quiet: bool) {
    if let Some(c) = cpu {
        if let Err(e) = sys::set_affinity(&[c]) {
            if !quiet {
                eprintln!("l4slab-emu: warning: cannot pin the forwarder to CPU {c}: {e}");
            }
        }
    }
    if realtime {
        if let Err(e) = sys::realtime(FORWARDER_PRIORITY) {
            if !quiet {
                eprintln!("l4slab-emu: warning: no SCHED_FIFO ({e}); timing will be less accurate");
            }
        }
    }
}

/// How long the forwarder keeps running after COMMAND exits while the
/// server command is still busy (so it can receive what is in flight).
pub const DRAIN: Dur = Dur::from_secs(1);

struct ShellHooks {
    command: Child,
    server: Option<Child>,
    server_done: bool,
    exit: Option<i32>,
    /// Set when COMMAND has exited: stop at this time at the latest.
    drain_until: Option<l4slab_core::Time>,
    clock: sys::Clock,
}

impl ShellHooks {
    fn stop_now(&self) -> bool {
        self.exit.is_some() && (self.server.is_none() || self.server_done)
    }
}

impl Hooks for ShellHooks {
    fn on_sample(&mut self, now: l4slab_core::Time) -> Step {
        match self.drain_until {
            Some(t) if now >= t => Step::Stop,
            _ => Step::Continue,
        }
    }

    fn on_signals(&mut self, signals: &[i32]) -> Step {
        for &s in signals {
            if s == sys::SIGCHLD {
                if let Some(srv) = &self.server {
                    if !self.server_done && sys::try_wait(srv.id() as i32).is_some() {
                        self.server_done = true;
                    }
                }
                if self.exit.is_none() {
                    if let Some(st) = sys::try_wait(self.command.id() as i32) {
                        self.exit = Some(sys::exit_code(st));
                        self.drain_until = Some(self.clock.now() + DRAIN);
                    }
                }
                if self.stop_now() {
                    return Step::Stop;
                }
            } else {
                // SIGINT / SIGTERM / SIGHUP: stop COMMAND, then tear down.
                if self.exit.is_none() {
                    let _ = sys::kill(self.command.id() as i32, sys::SIGTERM);
                    self.exit = Some(128 + s);
                }
                return Step::Stop;
            }
        }
        Step::Continue
    }
}

/// How long COMMAND waits for the server command to listen.
const SERVER_READY: Duration = Duration::from_secs(2);

/// Sockets waiting for peers in the network namespace of process `pid`:
/// TCP listeners (state `0A`, TCP_LISTEN) and bound UDP sockets, from
/// `/proc/PID/net/{tcp,tcp6,udp,udp6}` (proc(5): these files show the
/// namespace of the process they belong to).
fn listening_sockets(pid: u32) -> usize {
    let mut n = 0;
    for (file, listen_only) in [
        ("tcp", true),
        ("tcp6", true),
        ("udp", false),
        ("udp6", false),
    ] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) else {
            continue;
        };
        n += text
            .lines()
            .skip(1)
            .filter(|l| !listen_only || l.split_whitespace().nth(3) == Some("0A"))
            .count();
    }
    n
}

/// Has process `pid` (our child, not yet reaped) exited? Read from
/// `/proc/PID/stat`'s state (`Z`: a zombie), so that the exit status stays
/// for the SIGCHLD handler to collect.
fn exited(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // "PID (comm) STATE ...": comm may hold spaces and parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_none_or(|state| state == "Z" || state == "X")
}

/// Wait (at most [`SERVER_READY`]) until the server command `pid`, spawned
/// into the fresh server namespace (so past its `setns`: `spawn` returns
/// after the exec), has a socket waiting for peers, so that COMMAND's first
/// connection is not refused because it started first; stop waiting if
/// the server command exits.
fn wait_until_listening(pid: u32, quiet: bool) {
    let poll = Duration::from_millis(5);
    for _ in 0..SERVER_READY.as_millis() / poll.as_millis() {
        if listening_sockets(pid) > 0 || exited(pid) {
            return;
        }
        std::thread::sleep(poll);
    }
    if !quiet {
        eprintln!(
            "l4slab emu: the server command opened no listening socket in {} s; starting COMMAND anyway",
            SERVER_READY.as_secs()
        );
    }
}

/// Run the shell; returns COMMAND's exit code (128 + signal if it was killed
/// or the emulator was interrupted).
///
/// # Errors
/// [`EmuError`] for bad options, no root, or a failed setup step (nothing
/// is left behind in that case).
pub fn run(opts: &ShellOptions) -> Result<i32, EmuError> {
    if opts.command.is_empty() {
        return Err(EmuError::Usage(
            "no COMMAND given; write e.g. l4slab emu --rate 20Mbit -- ping -c 3 '$L4SLAB_SERVER'"
                .into(),
        ));
    }
    let scn = resolve_links(&opts.sets)?;
    if !sys::is_root() {
        return Err(EmuError::NotRoot);
    }
    let t = &opts.tuning;
    let sigfd = sys::signalfd().map_err(|e| EmuError::io("signalfd", e))?;
    let mut topo = Topology::create(t.mtu, t.reaper.as_deref())?;
    let cc = topo.set_congestion_control(&opts.cc)?;
    let clock = sys::Clock::start();
    let cpu0 = sys::cpu_times();
    // The network `l4slab run --backend emu` builds from the same keys.
    let (bn, access) = l4slab_scenario::build::network(&scn, scn.seed);
    let mut fwd = Forwarder::new(
        bn,
        topo.tun_fds(),
        Some(sigfd.as_raw_fd()),
        clock,
        forwarder::Config {
            // Without a live view, only used to check the drain deadline (no
            // series in the shell).
            sample_interval: Some(if opts.live.is_some() {
                Dur::from_secs(1)
            } else {
                Dur::from_millis(50)
            }),
            record_series: opts.live.is_some(),
            live: opts.live.clone(),
            access: AccessRoutes::every_packet(&scn, &access),
            ..t.forwarder_config()
        },
    )?;
    if let Some(dir) = &opts.pcap_dir {
        fwd.capture(dir, opts.pcap_limit)?;
    }
    let env = command_env(&topo);
    let (fwd_cpu, app_cpus) = cpu_split(t.pin);
    if !opts.quiet {
        eprintln!(
            "l4slab emu: client {} (netns {}), server {} (netns {}); down {} / {} one-way, up {} / {} one-way; \
             TCP congestion control {} (both namespaces' default)",
            netns::CLIENT_ADDR,
            topo.client.name,
            netns::SERVER_ADDR,
            topo.server.name,
            scn.bottleneck.down.rate,
            scn.bottleneck.down.delay,
            scn.bottleneck.up.rate,
            scn.bottleneck.up.delay,
            cc["client"],
        );
        if let Some(cell) = cell_line(&scn) {
            eprintln!("{cell}");
        }
    }
    let server = match &opts.server_command {
        Some(s) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(s).envs(env.iter().map(|(k, v)| (k, v)));
            Some(
                spawn_in(c, topo.server.fd.as_raw_fd(), app_cpus.as_deref(), false)
                    .map_err(|e| EmuError::io("starting the server command", e))?,
            )
        }
        None => None,
    };
    if let Some(srv) = &server {
        wait_until_listening(srv.id(), opts.quiet);
    }
    let tty = sys::stdin_is_tty();
    let mut c = Command::new(&opts.command[0]);
    c.args(&opts.command[1..])
        .envs(env.iter().map(|(k, v)| (k, v)));
    let command = spawn_in(c, topo.client.fd.as_raw_fd(), app_cpus.as_deref(), tty)
        .map_err(|e| EmuError::io(&format!("starting {}", opts.command[0]), e))?;
    if tty {
        let pid = command.id() as i32;
        // Also done in the child (whichever runs first).
        let _ = sys::setpgid(pid, pid);
        let _ = sys::set_foreground(pid);
    }
    become_forwarder(fwd_cpu, t.realtime, opts.quiet);
    let mut hooks = ShellHooks {
        command,
        server,
        server_done: false,
        exit: None,
        drain_until: None,
        clock,
    };
    // A child that exited before the loop started raised SIGCHLD, which the
    // signalfd still holds: the loop sees it on its first wait.
    let result = fwd.run(Some(sigfd.as_raw_fd()), &mut hooks);
    if tty {
        let _ = sys::set_foreground(sys::getpgrp());
    }
    let capture = fwd.capture_json();
    let captured = fwd.finish_capture();
    let mut report = json!({
        "queues": fwd.queues_json(&[]),
        "forwarder": fwd.forwarder_json(cpu0),
        "scenario": serde_json::to_value(&scn).expect("scenario serializes"),
        // Each namespace's default, read back after setting it.
        "tcp_congestion_control": cc,
        "kernel_tcp_counters": {
            "client": Topology::tcp_counters(&topo.client),
            "server": Topology::tcp_counters(&topo.server),
        },
    });
    if let Some(w) = fwd.wifi_json() {
        // The cell's results, as `summary.json`'s `wifi` (docs/results.md).
        report["wifi"] = w;
    }
    if let Some(c) = capture {
        report["capture"] = c;
    }
    drop(fwd);
    if let Some(srv) = &hooks.server {
        let _ = sys::kill(srv.id() as i32, sys::SIGTERM);
    }
    topo.teardown();
    // Already reaped if it exited (then this returns ECHILD); killed by the
    // teardown otherwise.
    let _ = hooks.command.wait();
    if let Some(mut srv) = hooks.server.take() {
        let _ = srv.wait();
    }
    result?;
    captured?;
    if !opts.quiet {
        eprintln!("{}", timing_line(&report));
    }
    if let Some(path) = &opts.report {
        write_json(path, &report)?;
    }
    Ok(hooks.exit.unwrap_or(1))
}

/// The banner's line about the Wi-Fi cell (`None` without one): its
/// links, and the client's station on each (SNR, MCS, PHY rate).
pub fn cell_line(scn: &Scenario) -> Option<String> {
    let wifi = scn.wifi.as_ref()?;
    let station = wifi.stations.first()?;
    let links: Vec<String> = station
        .links
        .iter()
        .map(|l| {
            let phy = &wifi.links[l.link];
            format!(
                "{} (SNR {} dB, MCS {}: {:.1} Mbit/s PHY rate)",
                l4slab_scenario::wifi::describe_phy(phy),
                l.snr_db,
                l.mcs,
                phy.data_rate(l.mcs).as_mbps_f64()
            )
        })
        .collect();
    Some(format!(
        "l4slab emu: the client is a Wi-Fi station of one cell, the AP at the bottleneck's \
         client end: {}; its packets are best effort (wifi.*.down.be / up.be)",
        links.join(", ")
    ))
}

/// One line summarizing the timing report.
pub fn timing_line(report: &Value) -> String {
    let t = &report["forwarder"]["timing_error_us"];
    if t.is_null() {
        return "l4slab emu: no packets were forwarded".into();
    }
    format!(
        "l4slab emu: {} packets; timing error (actual - intended release) p50 {} us, p99 {} us, max {} us",
        t["samples"], t["p50"], t["p99"], t["max"]
    )
}

/// Write `v` as pretty JSON to `path` atomically (temp file + rename).
///
/// # Errors
/// [`EmuError::Io`] naming the path.
pub fn write_json(path: &std::path::Path, v: &Value) -> Result<(), EmuError> {
    // `<path>.tmp` in the same directory (so the rename is atomic), never
    // `path` itself whatever its extension.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let text = serde_json::to_string_pretty(v).expect("json") + "\n";
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| EmuError::io(&format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarder::{DOWN, UP};
    use l4slab_wifi::edca::Ac;

    fn sets(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_string()).collect()
    }

    #[test]
    fn the_forwarder_takes_each_tuning_option() {
        let t = RunTuning {
            mtu: 9000,
            spin: Dur::from_micros(7),
            pin: false,
            realtime: false,
            malformed: forwarder::MalformedPolicy::Drop,
            coalesce: false,
            min_sleep: Dur::from_micros(40),
            reaper: None,
        };
        let c = t.forwarder_config();
        assert_eq!(c.mtu, 9000);
        assert_eq!(c.spin, Dur::from_micros(7));
        assert_eq!(c.min_sleep, Dur::from_micros(40));
        assert_eq!(c.malformed, forwarder::MalformedPolicy::Drop);
        assert!(!c.coalesce);
        // The rest is the forwarder's default.
        assert!(c.sample_interval.is_none() && c.live.is_none());
    }

    #[test]
    fn wifi_keys_make_the_client_a_station_every_packet_passes() {
        // `--set wifi.standard=a` ran with no cell at all (issue 25): the
        // client is now the one station of an 802.11a cell, with the
        // station keys of a scenario file.
        let scn = resolve_links(&sets(&["wifi.standard=a", "wifi.stations.mcs=3"]))
            .unwrap_or_else(|e| panic!("{e}"));
        let wifi = scn.wifi.as_ref().expect("a cell");
        assert_eq!(wifi.links.len(), 1);
        assert_eq!(wifi.links[0].standard, l4slab_wifi::phy::Standard::A);
        assert_eq!(wifi.stations.len(), 1);
        assert_eq!(scn.hosts[wifi.stations[0].host].name, "client");
        assert_eq!(wifi.stations[0].links[0].mcs, 3);
        let line = cell_line(&scn).expect("a banner line");
        assert!(line.contains("802.11a 20 MHz 1 SS at 5GHz"), "{line}");
        assert!(line.contains("MCS 3: 18.0 Mbit/s PHY rate"), "{line}");

        // Built as `run --backend emu` builds a scenario's network: the
        // station's and the AP's best-effort queues after the bottleneck's.
        let (bn, access) = l4slab_scenario::build::network(&scn, scn.seed);
        let names: Vec<String> = bn
            .queue_names()
            .queues
            .iter()
            .map(|q| q.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "bottleneck.down",
                "bottleneck.up",
                "wifi.client.down.be",
                "wifi.client.up.be"
            ]
        );
        let ap = access.cell_queue(0, DOWN, Ac::Be).expect("the AP's queue");
        let sta = access
            .cell_queue(0, UP, Ac::Be)
            .expect("the station's queue");
        // Every packet, whatever its (hashed) flow id, takes that route: up
        // through the station's queue before the bottleneck, down through
        // the AP's after it.
        let routes = AccessRoutes::every_packet(&scn, &access);
        for flow in [0, 1, 7, 0x9e37_79b9] {
            assert_eq!(routes.ingress(flow, UP), Some(sta), "flow {flow}");
            assert_eq!(routes.egress(flow, UP), None, "flow {flow}");
            assert_eq!(routes.ingress(flow, DOWN), None, "flow {flow}");
            assert_eq!(routes.egress(flow, DOWN), Some(ap), "flow {flow}");
        }
    }

    #[test]
    fn without_wifi_keys_the_shell_has_the_bottleneck_only() {
        let scn = resolve_links(&sets(&["bottleneck.rate=20Mbit"])).unwrap();
        assert!(scn.wifi.is_none() && cell_line(&scn).is_none());
        let (bn, access) = l4slab_scenario::build::network(&scn, scn.seed);
        assert_eq!(bn.queues(), 2);
        let routes = AccessRoutes::every_packet(&scn, &access);
        for dir in [DOWN, UP] {
            assert_eq!(routes.ingress(3, dir), None);
            assert_eq!(routes.egress(3, dir), None);
        }
    }
}
