//! `l4slab-emu PLAN`: the emulator as a program of its own, for cargo users
//! (`L4SLAB_EMU_BIN`) and the root tests (`crates/l4slab-emu/tests/root.rs`).
//! The Python package runs the same code through its native module (`python
//! -m l4slab._emu PLAN`). It takes one plan and declares no options
//! ([`l4slab_emu::cli`], [`l4slab_emu::plan`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The crash reaper re-executes this program.
    let self_cmd: Vec<String> = std::env::current_exe()
        .ok()
        .and_then(|p| p.into_os_string().into_string().ok())
        .into_iter()
        .collect();
    let code = l4slab_emu::cli::main(&args, &self_cmd);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
