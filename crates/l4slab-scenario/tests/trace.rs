//! `rate = { trace = ... }`: mahimahi traces as a link's rate model.

mod common;

use common::{parse_set, BASE};
use l4slab_core::{Dur, Rate};
use l4slab_scenario::{BufferLimit, QdiscSpec};

/// A trace file in a fresh temporary directory; returns its path.
fn trace_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("l4slab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_trace_rate_reads_the_file_and_uses_its_mean_rate() {
    // 2 opportunities per ms: 2 * 1504 B * 8 / 1 ms = 24.064 Mbit/s.
    let path = trace_file("two-per-ms", "1\n1\n");
    let s = parse_set(
        BASE,
        &[
            &format!("bottleneck.down.rate={{ trace = \"{path}\" }}"),
            "bottleneck.buffer=10ms",
        ],
    )
    .unwrap();
    let down = &s.bottleneck.down;
    assert_eq!(down.rate, Rate::from_bps(24_064_000));
    let t = down.rate_trace.as_ref().expect("trace");
    assert_eq!(t.name, path);
    assert_eq!(t.trace.opportunities(), 2);
    // The time buffer converts at the mean rate: 24.064 Mbit/s x 10 ms = 30,080 B.
    assert_eq!(
        down.qdisc,
        QdiscSpec::Fifo {
            limit: BufferLimit::Time {
                time: Dur::from_millis(10),
                bytes: 30_080
            },
            head_drop: false
        }
    );
    // The other direction keeps its constant rate; the trace is named in the JSON.
    assert!(s.bottleneck.up.rate_trace.is_none());
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["bottleneck"]["down"]["rate_trace"]["name"],
        path.as_str()
    );
    assert!(json["bottleneck"]["up"].get("rate_trace").is_none());
}

#[test]
fn bad_trace_values_name_the_key_path() {
    let err = |set: &str| parse_set(BASE, &[set]).unwrap_err().to_string();
    let e = err("bottleneck.rate={ trace = \"no-such-trace.down\" }");
    assert!(
        e.starts_with("bottleneck.rate.trace: no trace file 'no-such-trace.down' in "),
        "{e}"
    );
    let bad = trace_file("bad", "1\n0\n");
    let e = err(&format!("bottleneck.rate={{ trace = \"{bad}\" }}"));
    assert!(
        e.contains("is not a mahimahi trace: line 2: timestamp 0"),
        "{e}"
    );
    let e = err("bottleneck.rate={ file = \"x\" }");
    assert!(e.contains("bottleneck.rate"), "{e}");
    assert!(e.contains("unknown"), "{e}");
}

#[test]
fn the_shared_traces_are_found_by_name() {
    let dir = std::path::Path::new(l4slab_scenario::BUILTIN_TRACE_DIR);
    if !dir.join("TMobile-LTE-short.down").is_file() {
        eprintln!("skipping: {} has no TMobile-LTE-short.down", dir.display());
        return;
    }
    let s = parse_set(
        BASE,
        &["bottleneck.down.rate={ trace = \"TMobile-LTE-short.down\" }"],
    )
    .unwrap();
    // 194,846 opportunities over 140 s (REFERENCES.md §5): about 16.7 Mbit/s.
    let mbps = s.bottleneck.down.rate.as_mbps_f64();
    assert!((16.0..17.5).contains(&mbps), "{mbps}");
}
