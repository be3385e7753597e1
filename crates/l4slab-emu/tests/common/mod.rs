//! Helpers shared by the emulator's root tests (each test file is a binary of its own).
#![allow(dead_code)]

use serde_json::Value;

/// Whether the tests can run (root: network namespaces, TUN devices); if not, says why
/// on stderr, so the test passes as skipped.
pub fn root_or_skip(test: &str) -> bool {
    let root = l4slab_sys::process::is_root();
    if !root {
        eprintln!("skipping {test}: needs root to create network namespaces and TUN devices");
    }
    root
}

pub fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

use std::path::Path;

use l4slab_core::Dur;
use l4slab_emu::forwarder::MalformedPolicy;
use l4slab_emu::plan::{Plan, RunPlan};
use l4slab_emu::shell::{RunTuning, ShellOptions};

/// The emulator as a program of its own, which takes one plan (`l4slab-emu PLAN`).
pub const EMU: &str = env!("CARGO_BIN_EXE_l4slab-emu");

/// The forwarder tuning the tests run with: the plan's defaults
/// (python/l4slab/emu_plan.py, `Tuning`), written out as plans always are.
pub fn tuning() -> RunTuning {
    RunTuning {
        mtu: 1500,
        spin: Dur::ZERO,
        pin: true,
        realtime: true,
        malformed: MalformedPolicy::Pass,
        coalesce: true,
        min_sleep: Dur::from_micros(25),
        reaper: None,
    }
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A quiet shell plan running `command` on the shell's base link, cubic.
pub fn shell_plan(command: &[&str]) -> ShellOptions {
    ShellOptions {
        command: strings(command),
        sets: vec![],
        server_command: None,
        report: None,
        cc: "cubic".into(),
        pcap_dir: None,
        pcap_limit: None,
        quiet: true,
        live: None,
        tuning: tuning(),
    }
}

/// A run plan of the scenario file `scenario`, its results into `out`.
pub fn run_plan(scenario: &Path, out: &Path, sets: &[&str]) -> RunPlan {
    RunPlan {
        scenario: scenario.into(),
        sets: strings(sets),
        seed: None,
        out: out.into(),
        pcap_dir: None,
        tuning: tuning(),
    }
}

/// `[EMU, PLAN]`: the command line that runs the emulator with `plan`.
pub fn emu_command(plan: &Plan) -> Vec<String> {
    vec![EMU.to_string(), plan.to_json()]
}

/// The same as shell text (a plan's JSON holds no `'` here).
pub fn emu_sh(plan: &Plan) -> String {
    let json = plan.to_json();
    assert!(!json.contains('\''), "{json}");
    format!("{EMU} '{json}'")
}

/// A command (`std::process::Command`) running the emulator with `plan`.
pub fn emu(plan: &Plan) -> std::process::Command {
    let mut c = std::process::Command::new(EMU);
    c.arg(plan.to_json());
    c
}
