//! Golden scenarios (DESIGN.md §6): every `scenarios/golden/<name>.toml` runs
//! and its quantized summary must equal `scenarios/golden/<name>.snap.json`.
//! Quantizing (3 significant digits) keeps snapshots readable and stable
//! against harmless float formatting, while any change in behaviour shows up.
//!
//! After an intended change: `UPDATE_GOLDEN=1 cargo test -p l4slab-sim --test golden`
//! rewrites the snapshots; review the diff like code.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/golden")
}

/// Round to 3 significant digits.
fn q(v: &Value) -> Value {
    match v.as_f64() {
        Some(0.0) => json!(0.0),
        Some(x) => {
            let mag = 10f64.powi(2 - x.abs().log10().floor() as i32);
            json!((x * mag).round() / mag)
        }
        None => Value::Null,
    }
}

fn quantize(summary: &Value) -> Value {
    let mut flows = Map::new();
    for (name, f) in summary["flows"].as_object().expect("flows") {
        let mut m = Map::new();
        m.insert("goodput_bps".into(), q(&f["goodput_bps"]));
        m.insert("completion_s".into(), q(&f["completion_s"]));
        for k in ["p50", "p99", "max"] {
            m.insert(format!("rtt_ms_{k}"), q(&f["rtt_ms"][k]));
        }
        for k in [
            "retransmits",
            "lost_packets",
            "ce_marks_received",
            "rto_count",
        ] {
            m.insert(k.into(), f[k].clone());
        }
        flows.insert(name.clone(), Value::Object(m));
    }
    let mut queues = Map::new();
    for (name, qd) in summary["queues"].as_object().expect("queues") {
        let mut m = Map::new();
        for k in ["p50", "p99"] {
            m.insert(format!("sojourn_ms_{k}"), q(&qd["sojourn_ms"][k]));
        }
        if let Some(subs) = qd.get("subqueues").and_then(Value::as_object) {
            for (sub, v) in subs {
                for k in ["p50", "p99"] {
                    m.insert(format!("sojourn_ms_{sub}_{k}"), q(&v["sojourn_ms"][k]));
                }
            }
        }
        m.insert("drops".into(), qd["drops"]["total"].clone());
        m.insert("marks".into(), qd["marks"]["total"].clone());
        m.insert("utilization".into(), q(&qd["utilization"]));
        queues.insert(name.clone(), Value::Object(m));
    }
    json!({ "flows": flows, "queues": queues })
}

#[test]
fn golden_summaries_match_their_snapshots() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("scenarios/golden exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden scenarios found");
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read scenario");
        let got = quantize(&common::run_toml(&text, &[]).summary);
        let snap = path.with_extension("snap.json");
        let pretty = serde_json::to_string_pretty(&got).expect("json") + "\n";
        if update {
            std::fs::write(&snap, &pretty).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&snap) {
            Ok(want) if want == pretty => {}
            Ok(want) => failures.push(format!(
                "{}: summary changed\n--- snapshot\n{want}\n+++ now\n{pretty}",
                path.display()
            )),
            Err(_) => failures.push(format!(
                "{}: no snapshot; run with UPDATE_GOLDEN=1 to create it",
                snap.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
