//! The emulator's command line: `l4slab-emu ARGS`, `python -m l4slab._emu
//! ARGS` (through the native module's `emu_main`) and the `l4slab emu`
//! Python commands all end up in [`main`].
//!
//! ```text
//! l4slab-emu shell [OPTIONS] -- COMMAND...     run COMMAND behind an emulated bottleneck
//! l4slab-emu cleanup                           remove what killed runs left behind
//! l4slab-emu probe ping ADDR [--count N] [--interval-ms MS] [--size B]
//! l4slab-emu probe tcp-send ADDR:PORT [--cc NAME] [--seconds S] [--sample-ms MS]
//! l4slab-emu probe tcp-sink [--port P]
//! l4slab-emu probe ecn-reflect [--port P]        UDP reflector for the ECN check (+ TCP on P+1)
//! l4slab-emu probe ecn-check ADDR [--tcp-addr A] [--port P] [--count N]
//!                                              JSON report; exit 0 if fit for L4S, 3 if not
//! l4slab-emu run SCENARIO --out FILE [--set K=V]... [--seed N] [--pcap-dir DIR]
//!                                              a scenario with kernel TCP (l4slab run --backend emu)
//! l4slab-emu validate SCENARIO [--set K=V]... resolve and check against the kernel (no root)
//! l4slab-emu reap STATE_FILE                   (internal: the crash reaper)
//! ```
//!
//! Shell options: `--set KEY=VALUE` (scenario overrides on the bottleneck,
//! e.g. `bottleneck.rate=20Mbit`), `--server-command CMD`, `--report FILE`,
//! `--cc NAME` (the namespaces' default TCP congestion control; cubic),
//! `--pcap-dir DIR` (capture the bottleneck's packets, headers only, into
//! `DIR/pcap/bottleneck.{down,up}.{in,out}.pcap`),
//! `--ecn-path NAME` / `--ecn-path-down NAME` / `--ecn-path-up NAME` (the
//! scenario's `ecn_rewrite`),
//! `--mtu N`, `--spin-us N`, `--no-pin`, `--no-realtime`, `--no-coalesce`,
//! `--min-sleep-us N`,
//! `--malformed pass|drop`, `--quiet`. Probes print JSON on stdout.
//! Exit codes: COMMAND's for `shell`; 2 for bad usage; 1 for other errors.
//!
//! **The caller's protocol.** `self_cmd` is the argument vector that runs
//! this same emulator again (`[path of l4slab-emu]`, or `[python, -m,
//! l4slab._emu]` inside the Python package): the crash reaper is started
//! with it. [`main`] expects to own the process it runs in (it blocks
//! signals, changes scheduling, forks), so callers run it in a process of
//! its own, never inside a program that does other work.
//!
//! **Tied to its parent.** When the environment names the process that
//! started the emulator ([`PARENT_PID_ENV`], set by `l4slab`'s Python side),
//! the emulator asks the kernel for SIGTERM when that parent dies
//! (`PR_SET_PDEATHSIG`), so a SIGKILLed `l4slab` does not leave the
//! emulator, COMMAND, the server command and the namespaces running: SIGTERM
//! is the emulator's ordinary clean teardown.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::forwarder::MalformedPolicy;
use crate::shell::{self, ShellOptions};
use crate::{ecncheck, netns, probe, run, EmuError};
use l4slab_core::Dur;

/// The reaper's command prefix (`None` without one: no reaper).
fn reaper_cmd(self_cmd: &[String]) -> Option<Vec<String>> {
    (!self_cmd.is_empty()).then(|| self_cmd.to_vec())
}

fn usage(msg: impl Into<String>) -> EmuError {
    EmuError::Usage(msg.into())
}

/// Pulls option values off an argument list.
struct Args<'a> {
    rest: std::slice::Iter<'a, String>,
}

impl<'a> Args<'a> {
    fn value(&mut self, opt: &str) -> Result<&'a str, EmuError> {
        self.rest
            .next()
            .map(String::as_str)
            .ok_or_else(|| usage(format!("{opt} needs a value")))
    }
    fn parse<T: std::str::FromStr>(&mut self, opt: &str) -> Result<T, EmuError> {
        let v = self.value(opt)?;
        v.parse()
            .map_err(|_| usage(format!("{opt}: '{v}' is not a valid value")))
    }
}

/// Names the pid of the process that started the emulator: the emulator
/// then exits (cleanly, through SIGTERM) when that process dies. Removed
/// from the environment at start, so nothing the emulator runs inherits it.
pub const PARENT_PID_ENV: &str = "L4SLAB_EMU_PARENT_PID";

/// Run the emulator command line `args` (without the program name); returns
/// the process exit code. `self_cmd` re-executes this emulator (module docs).
pub fn main(args: &[String], self_cmd: &[String]) -> i32 {
    let result = sole_thread()
        .and_then(|()| tie_to_parent(args.first().map(String::as_str)))
        .and_then(|()| dispatch(args, self_cmd));
    match result {
        Ok(code) => code.clamp(0, 255),
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                EmuError::Usage(_) | EmuError::Scenario(_) | EmuError::Unsupported(_) => 2,
                EmuError::Interrupted(s) => 128 + s,
                _ => 1,
            }
        }
    }
}

/// The emulator's signal handling (a signalfd, signals blocked in the thread
/// that starts every other) needs a process with no thread of its own yet:
/// see [`EmuError::NotAlone`]. A standalone binary always is; inside Python
/// this holds as long as nothing started threads before (`l4slab._emu` imports
/// only the native module).
fn sole_thread() -> Result<(), EmuError> {
    match crate::sys::thread_count() {
        Ok(1) | Err(_) => Ok(()),
        Ok(n) => Err(EmuError::NotAlone(n)),
    }
}

/// `PR_SET_PDEATHSIG(SIGTERM)` when [`PARENT_PID_ENV`] names our parent.
///
/// prctl(2): the signal is sent when the *thread* that forked us exits; the
/// Python side starts the emulator from the thread that then waits for it,
/// so that thread outlives the emulator unless the whole process dies. The
/// reaper (`reap`) must outlive its parent by design and never asks.
fn tie_to_parent(command: Option<&str>) -> Result<(), EmuError> {
    let Some(value) = std::env::var_os(PARENT_PID_ENV) else {
        return Ok(());
    };
    // Our children (COMMAND may run this emulator again) must not see it.
    std::env::remove_var(PARENT_PID_ENV);
    if command == Some("reap") {
        return Ok(());
    }
    let parent: i32 = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| usage(format!("{PARENT_PID_ENV}={value:?} is not a process id")))?;
    crate::sys::set_parent_death_signal(crate::sys::SIGTERM)
        .map_err(|e| EmuError::io("prctl(PR_SET_PDEATHSIG)", e))?;
    // prctl(2): the parent may have died before the call; then we have been
    // re-parented and no signal will come. Check after setting it.
    if crate::sys::getppid() != parent {
        return Err(EmuError::Interrupted(crate::sys::SIGTERM));
    }
    Ok(())
}

fn dispatch(args: &[String], self_cmd: &[String]) -> Result<i32, EmuError> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err(usage(
            "expected a command: shell, run, validate, cleanup, probe (see the module docs)",
        ));
    };
    match cmd.as_str() {
        "shell" => shell_cmd(rest, self_cmd),
        "cleanup" => {
            if !crate::sys::is_root() {
                return Err(EmuError::NotRoot);
            }
            let removed = netns::cleanup_stale();
            println!("{}", serde_json::json!({ "removed": removed }));
            Ok(0)
        }
        "reap" => {
            let path = rest.first().ok_or_else(|| usage("reap needs STATE_FILE"))?;
            netns::reap(std::path::Path::new(path));
            Ok(0)
        }
        "probe" => probe_cmd(rest),
        "run" => run_cmd(rest, self_cmd),
        "validate" => {
            // Resolve a scenario and check it against the kernel; no root needed.
            let mut a = Args { rest: rest.iter() };
            let scenario = PathBuf::from(a.value("SCENARIO")?);
            let mut sets = Vec::new();
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--set" => sets.push(a.value(opt)?.to_string()),
                    other => return Err(usage(format!("validate: unknown option '{other}'"))),
                }
            }
            let scn = run::parse(&scenario, &sets)?;
            let plan = run::plan(&scn)?;
            let mut v = serde_json::to_value(&scn).expect("scenario serializes");
            v["emulator_notes"] = serde_json::json!(plan.notes);
            print_json(&v)
        }
        other => Err(usage(format!(
            "unknown command '{other}'; expected shell, run, validate, cleanup or probe"
        ))),
    }
}

fn shell_cmd(args: &[String], self_cmd: &[String]) -> Result<i32, EmuError> {
    let split = args.iter().position(|a| a == "--");
    let (opts_part, command) = match split {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut o = ShellOptions {
        command,
        ..ShellOptions::default()
    };
    o.tuning.reaper = reaper_cmd(self_cmd);
    let mut a = Args {
        rest: opts_part.iter(),
    };
    while let Some(opt) = a.rest.next() {
        match opt.as_str() {
            "--set" => o.sets.push(a.value(opt)?.to_string()),
            "--server-command" => o.server_command = Some(a.value(opt)?.to_string()),
            "--report" => o.report = Some(PathBuf::from(a.value(opt)?)),
            "--cc" => o.cc = Some(a.value(opt)?.to_string()),
            // The bottleneck's packets (headers) into DIR/pcap/*.pcap.
            "--pcap-dir" => o.pcap_dir = Some(PathBuf::from(a.value(opt)?)),
            // Shorthands for the scenario key `ecn_rewrite` (validated there).
            "--ecn-path" => o
                .sets
                .push(format!("bottleneck.ecn_rewrite={}", a.value(opt)?)),
            "--ecn-path-down" => {
                o.sets
                    .push(format!("bottleneck.down.ecn_rewrite={}", a.value(opt)?));
            }
            "--ecn-path-up" => o
                .sets
                .push(format!("bottleneck.up.ecn_rewrite={}", a.value(opt)?)),
            "--quiet" | "-q" => o.quiet = true,
            other if tuning_opt(other, &mut a, &mut o.tuning)? => {}
            other => return Err(usage(format!("shell: unknown option '{other}'"))),
        }
    }
    shell::run(&o)
}

/// Tuning options shared by `shell` and `run`; `Ok(false)` if `opt` is not one.
fn tuning_opt(opt: &str, a: &mut Args<'_>, t: &mut shell::RunTuning) -> Result<bool, EmuError> {
    match opt {
        "--mtu" => t.mtu = a.parse(opt)?,
        "--spin-us" => t.spin = Dur::from_micros(a.parse(opt)?),
        "--no-pin" => t.pin = false,
        "--no-realtime" => t.realtime = false,
        "--no-coalesce" => t.coalesce = false,
        "--min-sleep-us" => t.min_sleep = Dur::from_micros(a.parse(opt)?),
        "--malformed" => {
            t.malformed = match a.value(opt)? {
                "pass" => MalformedPolicy::Pass,
                "drop" => MalformedPolicy::Drop,
                v => return Err(usage(format!("--malformed: '{v}'; choose pass or drop"))),
            }
        }
        _ => return Ok(false),
    }
    if !(576..=9000).contains(&t.mtu) {
        return Err(usage("--mtu must be between 576 and 9000"));
    }
    Ok(true)
}

fn run_cmd(args: &[String], self_cmd: &[String]) -> Result<i32, EmuError> {
    let mut a = Args { rest: args.iter() };
    let scenario = PathBuf::from(a.value("SCENARIO")?);
    let (mut sets, mut seed, mut out, mut pcap_dir) = (Vec::new(), None, None, None);
    let mut tuning = shell::RunTuning {
        reaper: reaper_cmd(self_cmd),
        ..shell::RunTuning::default()
    };
    while let Some(opt) = a.rest.next() {
        match opt.as_str() {
            "--set" => sets.push(a.value(opt)?.to_string()),
            "--seed" => seed = Some(a.parse::<u64>(opt)?),
            "--out" => out = Some(PathBuf::from(a.value(opt)?)),
            // A scenario with `pcap = true` writes DIR/pcap/*.pcap.
            "--pcap-dir" => pcap_dir = Some(PathBuf::from(a.value(opt)?)),
            o if tuning_opt(o, &mut a, &mut tuning)? => {}
            other => return Err(usage(format!("run: unknown option '{other}'"))),
        }
    }
    let out = out.ok_or_else(|| usage("run needs --out FILE"))?;
    let scn = run::parse(&scenario, &sets)?;
    let seed = seed.unwrap_or(scn.seed);
    let result = run::run(&scn, seed, &tuning, pcap_dir.as_deref())?;
    shell::write_json(&out, &result)?;
    Ok(0)
}

/// The ECN check uses UDP `port` and TCP `port + 1`.
fn ecn_port_ok(port: u16) -> Result<(), EmuError> {
    if port == u16::MAX {
        return Err(usage(
            "--port: the ECN check also uses port + 1; use at most 65534",
        ));
    }
    Ok(())
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<i32, EmuError> {
    println!("{}", serde_json::to_string(v).expect("json"));
    Ok(0)
}

fn probe_cmd(args: &[String]) -> Result<i32, EmuError> {
    let Some((what, rest)) = args.split_first() else {
        return Err(usage("probe needs one of: ping, tcp-send, tcp-sink"));
    };
    let mut a = Args { rest: rest.iter() };
    match what.as_str() {
        "ping" => {
            let dst: Ipv4Addr = a.parse("ADDR")?;
            let (mut count, mut interval_ms, mut size) = (10u32, 100u64, 56usize);
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--count" | "-c" => count = a.parse(opt)?,
                    "--interval-ms" | "-i" => interval_ms = a.parse(opt)?,
                    "--size" | "-s" => size = a.parse(opt)?,
                    other => return Err(usage(format!("ping: unknown option '{other}'"))),
                }
            }
            if count > u32::from(u16::MAX) + 1 {
                // The echo sequence number is 16 bits.
                return Err(usage("ping: --count is at most 65536"));
            }
            let r = probe::ping(
                dst,
                count,
                Duration::from_millis(interval_ms),
                size.min(1400),
                Duration::from_secs(2),
            )
            .map_err(|e| EmuError::io("ping", e))?;
            print_json(&r)
        }
        "tcp-send" => {
            let dst: SocketAddr = a.parse("ADDR:PORT")?;
            let (mut cc, mut seconds, mut sample_ms) = ("cubic".to_string(), 5.0f64, 10u64);
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--cc" => cc = a.value(opt)?.to_string(),
                    "--seconds" => seconds = a.parse(opt)?,
                    "--sample-ms" => sample_ms = a.parse(opt)?,
                    other => return Err(usage(format!("tcp-send: unknown option '{other}'"))),
                }
            }
            let r = probe::tcp_send(dst, &cc, seconds, Duration::from_millis(sample_ms.max(1)))
                .map_err(|e| EmuError::io("tcp-send", e))?;
            print_json(&r)
        }
        "ecn-reflect" => {
            let mut port = 7000u16;
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--port" => port = a.parse(opt)?,
                    other => return Err(usage(format!("ecn-reflect: unknown option '{other}'"))),
                }
            }
            ecn_port_ok(port)?;
            ecncheck::reflect(port).map_err(|e| EmuError::io("ecn-reflect", e))?;
            Ok(0)
        }
        "ecn-check" => {
            let server: Ipv4Addr = a.parse("ADDR")?;
            let (mut tcp, mut port, mut count) = (server, 7000u16, 20u32);
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--tcp-addr" => tcp = a.parse(opt)?,
                    "--port" => port = a.parse(opt)?,
                    "--count" => count = a.parse(opt)?,
                    other => return Err(usage(format!("ecn-check: unknown option '{other}'"))),
                }
            }
            ecn_port_ok(port)?;
            let r = ecncheck::check(server, tcp, port, count)
                .map_err(|e| EmuError::io("ecn-check", e))?;
            print_json(&r)?;
            Ok(if r["l4s_ok"] == true { 0 } else { 3 })
        }
        "tcp-sink" => {
            let mut port = 5001u16;
            while let Some(opt) = a.rest.next() {
                match opt.as_str() {
                    "--port" => port = a.parse(opt)?,
                    other => return Err(usage(format!("tcp-sink: unknown option '{other}'"))),
                }
            }
            let r = probe::tcp_sink(port).map_err(|e| EmuError::io("tcp-sink", e))?;
            print_json(&r)
        }
        other => Err(usage(format!(
            "unknown probe '{other}'; expected ping, tcp-send or tcp-sink"
        ))),
    }
}
