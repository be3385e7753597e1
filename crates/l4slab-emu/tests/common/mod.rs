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
