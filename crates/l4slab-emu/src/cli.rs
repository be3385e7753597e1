//! The emulator process's entry: `l4slab-emu PLAN` (the cargo-built
//! program) and `python -m l4slab._emu PLAN` (the native module's
//! `emu_main`) both end up in [`main`], which runs one [`Plan`].
//!
//! **Why a process of its own.** The emulator must own the process it runs
//! in: it blocks signals and reads them from a signalfd (so it must be the
//! only thread, [`EmuError::NotAlone`]), runs its forwarder SCHED_FIFO,
//! forks COMMAND and the server command, and is started again as the crash
//! reaper that outlives it ([`crate::netns`]) and as the ECN check's and the
//! kernel TCP probes' ends inside the namespaces (the `ping`, `tcp_send`,
//! `tcp_sink`, `ecn_reflect`, `ecn_check` plans, run by the shell's COMMAND).
//! So `l4slab` never runs it in-process: it starts this entry with a plan.
//!
//! **No options here.** The options are declared once, by the Python
//! commands users run (`l4slab emu`, `l4slab run --backend emu`, `l4slab
//! check-l4s`), which build the plan ([`crate::plan`]). `PLAN` is the JSON
//! text itself (it starts with `{`) or a file holding it. `--help`, `-h` and
//! `help` print [`USAGE`]. Exit codes: COMMAND's for `shell`; the ECN
//! check's verdict for `ecn_check`; 2 for a bad plan or bad input; 1 for
//! other errors.
//!
//! **The caller's protocol.** `self_cmd` is the argument vector that runs
//! this same emulator again (`[path of l4slab-emu]`, or `[python, -m,
//! l4slab._emu]` inside the Python package): the crash reaper is started
//! with it.
//!
//! **Tied to its parent.** When the environment names the process that
//! started the emulator ([`PARENT_PID_ENV`], set by `l4slab`'s Python side),
//! the emulator asks the kernel for SIGTERM when that parent dies
//! (`PR_SET_PDEATHSIG`), so a SIGKILLed `l4slab` does not leave the
//! emulator, COMMAND, the server command and the namespaces running: SIGTERM
//! is the emulator's ordinary clean teardown.

use std::time::Duration;

use crate::plan::{self, Plan};
use crate::{ecncheck, netns, probe, run, shell, EmuError};

/// What `l4slab-emu --help` prints.
pub const USAGE: &str = "\
l4slab-emu: the process of l4slab's real-time emulator (network namespaces joined
through TUN devices and the simulator's bottleneck, run against the wall clock;
needs root).

It is not run by hand: run `l4slab emu --help` (a command behind an emulated
bottleneck, the ECN check), `l4slab run SCENARIO --backend emu` or `l4slab
check-l4s`. They build a plan and start this program (or `python -m l4slab._emu`)
with it:

    l4slab-emu PLAN    PLAN: the plan as JSON, e.g. '{\"cleanup\":{}}', or a file holding it

To make `l4slab` run a cargo-built emulator: L4SLAB_EMU_BIN=/path/to/l4slab-emu.
";

/// Names the pid of the process that started the emulator: the emulator
/// then exits (cleanly, through SIGTERM) when that process dies. Removed
/// from the environment at start, so nothing the emulator runs inherits it.
pub const PARENT_PID_ENV: &str = "L4SLAB_EMU_PARENT_PID";

/// Names a file the emulator writes a panic's message to (set by `l4slab`'s
/// Python side, read after the emulator exits): a panic's exit code (101,
/// or 1 through Python) cannot be told from COMMAND's own, so without it a
/// crashed emulator would pass for COMMAND's result. Removed from the
/// environment at start, so nothing the emulator runs inherits it.
pub const PANIC_FILE_ENV: &str = "L4SLAB_EMU_PANIC_FILE";

/// Report panics, of any thread, in the file [`PANIC_FILE_ENV`] names (when
/// it does), then as Rust does by default (the message on stderr).
pub fn report_panics() {
    let Some(path) = std::env::var_os(PANIC_FILE_ENV) else {
        return;
    };
    std::env::remove_var(PANIC_FILE_ENV);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        use std::io::Write;
        let thread = std::thread::current();
        let line = format!("thread '{}' {info}\n", thread.name().unwrap_or("unnamed"));
        // Best effort: the message also goes to stderr below.
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&path) {
            let _ = f.write_all(line.as_bytes());
        }
        default(info);
    }));
}

/// Run the emulator with the command line `args` (without the program name):
/// one plan. Returns the process exit code. `self_cmd` re-executes this
/// emulator (module docs).
pub fn main(args: &[String], self_cmd: &[String]) -> i32 {
    let plan_arg = match args {
        [one] if matches!(one.as_str(), "--help" | "-h" | "help") => {
            print!("{USAGE}");
            return 0;
        }
        [one] => one,
        _ => {
            eprint!("error: expected one argument, a plan\n\n{USAGE}");
            return 2;
        }
    };
    report_panics();
    let result = sole_thread()
        .and_then(|()| read_plan(plan_arg))
        .and_then(|plan| {
            tie_to_parent(matches!(plan, Plan::Reap(_)))?;
            dispatch(plan, self_cmd)
        });
    match result {
        Ok(code) => code.clamp(0, 255),
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                EmuError::Usage(_)
                | EmuError::Plan(_)
                | EmuError::Scenario(_)
                | EmuError::Unsupported(_) => 2,
                EmuError::Interrupted(s) => 128 + s,
                _ => 1,
            }
        }
    }
}

/// The plan: `arg` itself when it is JSON text, else the file it names.
fn read_plan(arg: &str) -> Result<Plan, EmuError> {
    if arg.trim_start().starts_with('{') {
        return Plan::from_json(arg);
    }
    let text = std::fs::read_to_string(arg)
        .map_err(|e| EmuError::Plan(format!("cannot read the plan file {arg}: {e}")))?;
    Plan::from_json(&text)
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
/// reaper must outlive its parent by design and never asks.
fn tie_to_parent(reaper: bool) -> Result<(), EmuError> {
    let Some(value) = std::env::var_os(PARENT_PID_ENV) else {
        return Ok(());
    };
    // Our children (COMMAND may run this emulator again) must not see it.
    std::env::remove_var(PARENT_PID_ENV);
    if reaper {
        return Ok(());
    }
    let parent: i32 = value.to_str().and_then(|v| v.parse().ok()).ok_or_else(|| {
        EmuError::Usage(format!("{PARENT_PID_ENV}={value:?} is not a process id"))
    })?;
    crate::sys::set_parent_death_signal(crate::sys::SIGTERM)
        .map_err(|e| EmuError::io("prctl(PR_SET_PDEATHSIG)", e))?;
    // prctl(2): the parent may have died before the call; then we have been
    // re-parented and no signal will come. Check after setting it.
    if crate::sys::getppid() != parent {
        return Err(EmuError::Interrupted(crate::sys::SIGTERM));
    }
    Ok(())
}

/// The reaper's command prefix (`None` without one: no reaper).
fn reaper_cmd(self_cmd: &[String]) -> Option<Vec<String>> {
    (!self_cmd.is_empty()).then(|| self_cmd.to_vec())
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<i32, EmuError> {
    println!("{}", serde_json::to_string(v).expect("json"));
    Ok(0)
}

fn dispatch(plan: Plan, self_cmd: &[String]) -> Result<i32, EmuError> {
    match plan {
        Plan::Shell(mut o) => {
            o.tuning.reaper = reaper_cmd(self_cmd);
            shell::run(&o)
        }
        Plan::Run(mut p) => {
            p.tuning.reaper = reaper_cmd(self_cmd);
            let scn = run::parse(&p.scenario, &p.sets)?;
            let seed = p.seed.unwrap_or(scn.seed);
            let result = run::run(&scn, seed, &p.tuning, p.pcap_dir.as_deref())?;
            shell::write_json(&p.out, &result)?;
            Ok(0)
        }
        Plan::Validate(p) => {
            // Resolve a scenario and check it against the kernel; no root needed.
            let scn = run::parse(&p.scenario, &p.sets)?;
            let emu_plan = run::plan(&scn)?;
            let mut v = serde_json::to_value(&scn).expect("scenario serializes");
            v["emulator_notes"] = serde_json::json!(emu_plan.notes);
            print_json(&v)
        }
        Plan::Cleanup(plan::CleanupPlan {}) => {
            if !crate::sys::is_root() {
                return Err(EmuError::NotRoot);
            }
            let removed = netns::cleanup_stale();
            print_json(&serde_json::json!({ "removed": removed }))
        }
        Plan::Reap(p) => {
            netns::reap(&p.state_file);
            Ok(0)
        }
        Plan::Ping(p) => {
            let r = probe::ping(
                p.addr,
                p.count,
                Duration::from_millis(p.interval_ms),
                p.size.min(1400),
                Duration::from_secs(2),
            )
            .map_err(|e| EmuError::io("ping", e))?;
            print_json(&r)
        }
        Plan::TcpSend(p) => {
            let sample = Duration::from_millis(p.sample_ms.max(1));
            let r = probe::tcp_send(p.addr, &p.cc, p.seconds, sample)
                .map_err(|e| EmuError::io("tcp-send", e))?;
            print_json(&r)
        }
        Plan::TcpSink(p) => {
            let r = probe::tcp_sink(p.port).map_err(|e| EmuError::io("tcp-sink", e))?;
            print_json(&r)
        }
        Plan::EcnReflect(p) => {
            ecncheck::reflect(p.port).map_err(|e| EmuError::io("ecn-reflect", e))?;
            Ok(0)
        }
        Plan::EcnCheck(p) => {
            let r = ecncheck::check(p.addr, p.tcp_addr, p.port, p.count)
                .map_err(|e| EmuError::io("ecn-check", e))?;
            print_json(&r)?;
            Ok(if r["l4s_ok"] == true { 0 } else { 3 })
        }
    }
}
