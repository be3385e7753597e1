//! The emulated topology: a client and a server network namespace, each with
//! one TUN device, joined only through the forwarder.
//!
//! ```text
//!  [ns l4slab-<pid>-c]                         [ns l4slab-<pid>-s]
//!   tcli 10.77.0.1 ── fd ── forwarder (root ns) ── fd ── tsrv 10.77.0.2 (+ .3)
//! ```
//!
//! **Ownership.** Before it creates anything, a run writes a state file
//! `/run/l4slab-emu/<pid>.json` naming its owner (pid and kernel start time)
//! and the namespaces it is about to create. Only names recorded in such a
//! file, with the `l4slab-` prefix, are ever deleted: the emulator never
//! touches an interface or namespace it did not create. The TUN devices are
//! not persistent: they vanish with the forwarder's file descriptors, even on
//! SIGKILL.
//!
//! **Teardown** (normal exit, Ctrl-C, SIGTERM): processes left in the
//! namespaces get SIGTERM, then SIGKILL, the namespaces are deleted, then
//! the state file. **After a crash or SIGKILL** a reaper process, started
//! with the run in its own session and watching a pipe the owner holds,
//! does the same as soon as the owner is gone; and every start also removes
//! the leftovers of any run whose owner is dead ([`cleanup_stale`]).
//!
//! The addresses are private to the namespaces (10.77.0.0/24,
//! fd4c:5301::/64), so they cannot collide with anything outside.

use std::fs;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::packet::VNET_HDR_LEN;
use crate::sys;
use crate::EmuError;

/// Where runs record what they created.
pub const STATE_DIR: &str = "/run/l4slab-emu";
/// Every namespace the emulator creates starts with this.
pub const NS_PREFIX: &str = "l4slab-";
/// Client address (TUN `tcli` in the client namespace).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Server address (TUN `tsrv` in the server namespace).
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// A second server address whose route in the client namespace has
/// `features ecn`: connections to it negotiate classic ECN whatever the
/// namespace's `tcp_ecn` (per-connection ECN without a BPF program).
pub const SERVER_ECN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 3);
pub const CLIENT_ADDR6: Ipv6Addr = Ipv6Addr::new(0xfd4c, 0x5301, 0, 0, 0, 0, 0, 1);
pub const SERVER_ADDR6: Ipv6Addr = Ipv6Addr::new(0xfd4c, 0x5301, 0, 0, 0, 0, 0, 2);
/// TUN device names inside the namespaces.
pub const CLIENT_TUN: &str = "tcli";
pub const SERVER_TUN: &str = "tsrv";

/// Serializes the runs' brief widening of the host's allowed congestion
/// controls ([`Topology::set_congestion_control`]).
pub const CC_LOCK: &str = "/run/l4slab-emu/congestion-control.lock";
const PER_NS_CC: &str = "/proc/sys/net/ipv4/tcp_congestion_control";
const AVAILABLE_CC: &str = "tcp_available_congestion_control";
const ALLOWED_CC: &str = "tcp_allowed_congestion_control";

fn host_sysctl(key: &str) -> PathBuf {
    Path::new("/proc/sys/net/ipv4").join(key)
}

/// A host-wide `net.ipv4` sysctl, read from this (the initial) namespace.
fn read_host_sysctl(key: &str) -> io::Result<String> {
    fs::read_to_string(host_sysctl(key))
}

fn cc_error(name: &str, step: &str, e: io::Error) -> EmuError {
    EmuError::io(
        &format!(
            "making {name} the namespaces' default congestion control ({step}; a namespace's \
             default must be in net.ipv4.tcp_allowed_congestion_control, which only the \
             initial namespace can change: choose another with --cc)"
        ),
        e,
    )
}

/// The content of a state file.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    owner_pid: i32,
    /// Kernel start time of the owner (`/proc/<pid>/stat` field 22), so a
    /// recycled pid is not mistaken for a live owner.
    owner_start: u64,
    namespaces: Vec<String>,
}

/// One network namespace of the topology.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
    pub fd: fs::File,
    /// This run's `ip netns add` succeeded: only then does the teardown
    /// delete the name.
    created: bool,
}

/// The client and server namespaces with their TUN devices.
#[derive(Debug)]
pub struct Topology {
    pub client: Netns,
    pub server: Netns,
    /// TUN fds (client side, server side); `None` once handed back at teardown.
    pub tuns: Option<(OwnedFd, OwnedFd)>,
    state_file: PathBuf,
    /// Write end of the reaper's pipe; closing it (at exit) releases the reaper.
    _reaper_pipe: Option<OwnedFd>,
    done: bool,
}

/// State letter and start time (clock ticks since boot) of `pid`, if it
/// exists (`proc(5)`, `/proc/<pid>/stat` fields 3 and 22).
fn proc_stat(pid: i32) -> Option<(char, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    // `rest` starts at field 3 (state); starttime is field 22.
    Some((state, fields.nth(18)?.parse().ok()?))
}

/// Start time of `pid`, if it exists.
fn proc_start(pid: i32) -> Option<u64> {
    proc_stat(pid).map(|(_, start)| start)
}

fn ip(args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| EmuError::io("running ip(8) (is iproute2 installed?)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

fn netns_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

/// Pids of the processes in namespace `name` (`ip netns pids`).
fn ns_pids(name: &str) -> Vec<i32> {
    let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .filter(|&p| p != me)
        .collect()
}

/// SIGTERM every process in `name`, then SIGKILL what is left after 1 s.
fn kill_ns_processes(name: &str) {
    for sig in [sys::SIGTERM, sys::SIGKILL] {
        let pids = ns_pids(name);
        if pids.is_empty() {
            return;
        }
        for &p in &pids {
            let _ = sys::kill(p, sig);
        }
        for _ in 0..100 {
            if ns_pids(name).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Delete namespace `name` (ours: it has the prefix) and its processes.
fn remove_ns(name: &str) {
    if !name.starts_with(NS_PREFIX) || name.contains('/') {
        return;
    }
    kill_ns_processes(name);
    if netns_path(name).exists() {
        let _ = ip(&["netns", "del", name]);
    }
}

/// Remove everything recorded in the state file at `path` (whose owner must
/// be gone), then the file.
fn remove_recorded(path: &Path) -> Vec<String> {
    let Ok(text) = fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(state) = serde_json::from_str::<State>(&text) else {
        // Not ours to interpret; leave it (and say nothing is removed).
        return Vec::new();
    };
    for ns in &state.namespaces {
        remove_ns(ns);
    }
    let _ = fs::remove_file(path);
    state.namespaces
}

fn owner_alive(state: &State) -> bool {
    // A zombie owner is gone too: its descriptors are closed and it will
    // never tear down (its reaper has started on the pipe's EOF).
    matches!(proc_stat(state.owner_pid), Some((s, start)) if s != 'Z' && start == state.owner_start)
}

/// Remove what runs whose owner is dead left behind (after SIGKILL or a
/// crash); returns the namespaces removed.
pub fn cleanup_stale() -> Vec<String> {
    let Ok(dir) = fs::read_dir(STATE_DIR) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let Ok(state) = serde_json::from_str::<State>(&text) else {
            continue;
        };
        if !owner_alive(&state) {
            removed.extend(remove_recorded(&path));
        }
    }
    removed
}

/// The reaper (the `reap` plan, stdin = the owner's pipe):
/// wait until the owner is gone, then remove what it recorded.
pub fn reap(state_file: &Path) {
    let mut buf = [0u8; 64];
    // Blocks until EOF: every copy of the write end is closed when the owner exits.
    loop {
        match sys::read_nb(0, &mut buf) {
            Ok(Some(0)) | Err(_) => break,
            Ok(Some(_)) => {}
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    if state_file.exists() {
        remove_recorded(state_file);
    }
}

impl Topology {
    /// Create both namespaces and TUN devices with MTU `mtu`.
    ///
    /// # Errors
    /// [`EmuError`] naming the step that failed; whatever was created before
    /// it is removed again.
    /// `reaper` is the command that runs this emulator (`[l4slab-emu]` or
    /// `[python, -m, l4slab._emu]`), started with the `reap` plan as the
    /// reaper (`None`: no reaper; leftovers are then removed by the next
    /// start only).
    pub fn create(mtu: u32, reaper: Option<&[String]>) -> Result<Topology, EmuError> {
        if !sys::is_root() {
            return Err(EmuError::NotRoot);
        }
        let removed = cleanup_stale();
        if !removed.is_empty() {
            eprintln!(
                "l4slab-emu: removed namespaces left by a killed run: {}",
                removed.join(", ")
            );
        }
        fs::create_dir_all(STATE_DIR).map_err(|e| EmuError::io(STATE_DIR, e))?;
        let pid = std::process::id() as i32;
        let names = [format!("{NS_PREFIX}{pid}-c"), format!("{NS_PREFIX}{pid}-s")];
        // A namespace with our name that no state file accounts for (its
        // owner's file was removed by hand, or someone chose the name) is
        // not ours: refuse rather than adopt it, or delete it at teardown.
        if let Some(n) = names.iter().find(|n| netns_path(n).exists()) {
            return Err(EmuError::NamespaceExists(n.clone()));
        }
        let state_file = Path::new(STATE_DIR).join(format!("{pid}.json"));
        // Without our start time a concurrent start could take this live
        // run for a dead one and remove its namespaces: fail instead.
        let owner_start = proc_start(pid).ok_or_else(|| {
            EmuError::io(
                "reading the start time in /proc/self/stat",
                io::Error::from(io::ErrorKind::InvalidData),
            )
        })?;
        let state = State {
            owner_pid: pid,
            owner_start,
            namespaces: names.to_vec(),
        };
        let text = serde_json::to_string(&state).expect("state serializes");
        fs::write(&state_file, text).map_err(|e| EmuError::io("writing the state file", e))?;
        let reaper = reaper.and_then(|cmd| spawn_reaper(cmd, &state_file));
        let mut topo = Topology {
            client: Netns {
                name: names[0].clone(),
                fd: fs::File::open("/dev/null").map_err(|e| EmuError::io("/dev/null", e))?,
                created: false,
            },
            server: Netns {
                name: names[1].clone(),
                fd: fs::File::open("/dev/null").map_err(|e| EmuError::io("/dev/null", e))?,
                created: false,
            },
            tuns: None,
            state_file,
            _reaper_pipe: reaper,
            done: false,
        };
        // On error, `topo` is dropped and tears down what exists.
        topo.build(mtu)?;
        Ok(topo)
    }

    fn build(&mut self, mtu: u32) -> Result<(), EmuError> {
        for ns in [&mut self.client, &mut self.server] {
            ip(&["netns", "add", &ns.name])?;
            ns.created = true;
            ns.fd = sys::open_ro(&netns_path(&ns.name))
                .map_err(|e| EmuError::io("opening the new namespace", e))?;
        }
        let tc = sys::tun_create(&self.client.fd, CLIENT_TUN, sys::TUN_OFFLOADS, VNET_HDR_LEN)
            .map_err(|e| EmuError::io("creating the client TUN device", e))?;
        let ts = sys::tun_create(&self.server.fd, SERVER_TUN, sys::TUN_OFFLOADS, VNET_HDR_LEN)
            .map_err(|e| EmuError::io("creating the server TUN device", e))?;
        self.tuns = Some((tc, ts));
        let mtu = mtu.to_string();
        let c = self.client.name.clone();
        let s = self.server.name.clone();
        let (ca, sa, sea) = (
            CLIENT_ADDR.to_string(),
            SERVER_ADDR.to_string(),
            SERVER_ECN_ADDR.to_string(),
        );
        let (ca6, sa6) = (CLIENT_ADDR6.to_string(), SERVER_ADDR6.to_string());
        for (ns, dev) in [(&c, CLIENT_TUN), (&s, SERVER_TUN)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&[
                "-n",
                ns,
                "link",
                "set",
                dev,
                "mtu",
                &mtu,
                "txqueuelen",
                "1000",
                "up",
            ])?;
        }
        ip(&[
            "-n",
            &c,
            "addr",
            "add",
            &format!("{ca}/32"),
            "peer",
            &format!("{sa}/32"),
            "dev",
            CLIENT_TUN,
        ])?;
        ip(&[
            "-n",
            &c,
            "route",
            "add",
            &format!("{sea}/32"),
            "dev",
            CLIENT_TUN,
            "features",
            "ecn",
        ])?;
        ip(&[
            "-n",
            &s,
            "addr",
            "add",
            &format!("{sa}/32"),
            "peer",
            &format!("{ca}/32"),
            "dev",
            SERVER_TUN,
        ])?;
        ip(&[
            "-n",
            &s,
            "addr",
            "add",
            &format!("{sea}/32"),
            "dev",
            SERVER_TUN,
        ])?;
        ip(&[
            "-n",
            &c,
            "-6",
            "addr",
            "add",
            &format!("{ca6}/128"),
            "peer",
            &format!("{sa6}/128"),
            "dev",
            CLIENT_TUN,
            "nodad",
        ])?;
        ip(&[
            "-n",
            &s,
            "-6",
            "addr",
            "add",
            &format!("{sa6}/128"),
            "peer",
            &format!("{ca6}/128"),
            "dev",
            SERVER_TUN,
            "nodad",
        ])?;
        Ok(())
    }

    /// Raw fds of the client-side and server-side TUN devices.
    pub fn tun_fds(&self) -> (i32, i32) {
        let (c, s) = self.tuns.as_ref().expect("topology is up");
        (c.as_raw_fd(), s.as_raw_fd())
    }

    /// Write `value` to `/proc/sys/<key>` (dots as slashes) inside `ns`.
    pub fn sysctl(ns: &Netns, key: &str, value: &str) -> Result<(), EmuError> {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        sys::in_netns(&ns.fd, || fs::write(&path, value))
            .map_err(|e| EmuError::io(&format!("setting {key} in {}", ns.name), e))
    }

    /// Make `name` the default TCP congestion control of both namespaces
    /// (`net.ipv4.tcp_congestion_control`, per namespace; a new namespace
    /// inherits the host's, e.g. bbr). Returns what each namespace then
    /// reports: `{"client": .., "server": ..}`.
    ///
    /// Linux `tcp_set_default_congestion_control()` (net/ipv4/tcp_cong.c)
    /// lets a namespace other than the initial one pick only a controller
    /// listed in the host-wide `net.ipv4.tcp_allowed_congestion_control`
    /// (EPERM otherwise; emulator-probe.md §5: `reno bbr` on some hosts, so
    /// not cubic). Then the list is widened by `name` for the two writes and
    /// put back exactly as it was, under a lock shared by all runs
    /// ([`CC_LOCK`]), so concurrent runs never restore each other's widened
    /// list. Nothing else outside the namespaces is touched.
    ///
    /// # Errors
    /// [`EmuError::Unsupported`] if the kernel has no `name`;
    /// [`EmuError::Io`] if the namespaces' default cannot be set.
    pub fn set_congestion_control(
        &self,
        name: &str,
    ) -> Result<std::collections::BTreeMap<&'static str, String>, EmuError> {
        let available = read_host_sysctl(AVAILABLE_CC).unwrap_or_default();
        if !available.split_whitespace().any(|c| c == name) {
            return Err(EmuError::Unsupported(format!(
                "congestion control \"{name}\": this kernel has none by that name \
                 (net.ipv4.tcp_available_congestion_control: {})",
                available.trim()
            )));
        }
        let sides = [("client", &self.client), ("server", &self.server)];
        let set_all = || -> io::Result<()> {
            for (_, ns) in sides {
                sys::in_netns(&ns.fd, || fs::write(PER_NS_CC, name))?;
            }
            Ok(())
        };
        match set_all() {
            Err(e) if e.raw_os_error() == Some(sys::errno::EPERM) => {
                let _lock = sys::Flock::exclusive(Path::new(CC_LOCK))
                    .map_err(|e| EmuError::io(CC_LOCK, e))?;
                let allowed = read_host_sysctl(ALLOWED_CC)
                    .map_err(|e| EmuError::io("reading tcp_allowed_congestion_control", e))?;
                let allowed = allowed.trim().to_string();
                let widened = format!("{allowed} {name}");
                fs::write(host_sysctl(ALLOWED_CC), &widened)
                    .map_err(|e| cc_error(name, "widening tcp_allowed_congestion_control", e))?;
                let r = set_all();
                // Put the host's list back whatever happened.
                let restored = fs::write(host_sysctl(ALLOWED_CC), &allowed);
                r.map_err(|e| cc_error(name, "setting it in the namespaces", e))?;
                restored
                    .map_err(|e| cc_error(name, "restoring tcp_allowed_congestion_control", e))?;
            }
            r => r.map_err(|e| cc_error(name, "setting it in the namespaces", e))?,
        }
        Ok(sides
            .into_iter()
            .map(|(side, ns)| (side, Self::congestion_control(ns)))
            .collect())
    }

    /// The default TCP congestion control of `ns` (empty if unreadable).
    pub fn congestion_control(ns: &Netns) -> String {
        sys::in_netns(&ns.fd, || fs::read_to_string(PER_NS_CC))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    /// The namespace's non-zero `TcpExt` counters (`/proc/net/netstat`,
    /// the `nstat` names: `DelayedACKs`, `TCPBacklogCoalesce`, ...): what
    /// kernel TCP did in there, for the run's report. Empty if unreadable.
    pub fn tcp_counters(ns: &Netns) -> std::collections::BTreeMap<String, u64> {
        // /proc/thread-self/net is the calling thread's network namespace.
        let text = sys::in_netns(&ns.fd, || {
            fs::read_to_string("/proc/thread-self/net/netstat")
        })
        .unwrap_or_default();
        parse_tcpext(&text)
    }

    /// Remove everything this topology created. Idempotent.
    pub fn teardown(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        // Close the TUN devices first: they vanish with their fds.
        self.tuns = None;
        for ns in [&self.client, &self.server] {
            if ns.created {
                remove_ns(&ns.name);
            }
        }
        let _ = fs::remove_file(&self.state_file);
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The non-zero `TcpExt:` counters of a `/proc/net/netstat` text (a line of
/// names, then a line of values).
fn parse_tcpext(text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return std::collections::BTreeMap::new();
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
        .filter_map(|(n, v)| Some((n.to_string(), v.parse::<u64>().ok()?)))
        .filter(|&(_, v)| v > 0)
        .collect()
}

/// Start `CMD... {"reap": {"state_file": STATE_FILE}}` (`cmd` runs this
/// emulator, [`crate::plan::ReapPlan`]) in its own session, reading a pipe
/// whose only write end we keep (close-on-exec, so children never hold it).
fn spawn_reaper(emulator: &[String], state_file: &Path) -> Option<OwnedFd> {
    let (program, args) = emulator.split_first()?;
    let plan = crate::plan::Plan::Reap(crate::plan::ReapPlan {
        state_file: state_file.to_path_buf(),
    });
    let (r, w) = sys::pipe_cloexec().ok()?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg(plan.to_json())
        .stdin(std::process::Stdio::from(r))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    sys::ChildSetup {
        new_session: true,
        ignore: vec![sys::SIGINT, sys::SIGTERM, sys::SIGHUP],
        ..sys::ChildSetup::default()
    }
    .apply_to(&mut cmd);
    // The reaper is never waited for: it outlives us by design and is
    // re-parented to init. Dropping the Child does not kill it.
    cmd.spawn().ok()?;
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcpext_counters_are_read_by_name() {
        let text = "TcpExt: SyncookiesSent DelayedACKs TCPBacklogCoalesce\n\
                    TcpExt: 0 5 312\n\
                    IpExt: InNoRoutes\nIpExt: 1\n";
        let c = parse_tcpext(text);
        assert_eq!(c.len(), 2);
        assert_eq!(c["DelayedACKs"], 5);
        assert_eq!(c["TCPBacklogCoalesce"], 312);
        assert!(parse_tcpext("").is_empty());
    }

    #[test]
    fn an_exited_owner_is_dead_even_before_it_is_reaped() {
        let me = std::process::id() as i32;
        let live = State {
            owner_pid: me,
            owner_start: proc_start(me).unwrap(),
            namespaces: Vec::new(),
        };
        assert!(owner_alive(&live));
        // A recycled pid: same pid, another start time.
        let recycled = State {
            owner_start: live.owner_start + 1,
            ..live
        };
        assert!(!owner_alive(&recycled));
        // A child that has exited but is not waited for: a zombie.
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let start = proc_start(pid).unwrap();
        for _ in 0..2500 {
            if matches!(proc_stat(pid), Some(('Z', _))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let zombie = State {
            owner_pid: pid,
            owner_start: start,
            namespaces: Vec::new(),
        };
        assert!(!owner_alive(&zombie));
        child.wait().unwrap();
    }
}
