//! `rate = { trace = ... }`: mahimahi traces as a link's rate model.

mod common;

use common::{parse_set, BASE};
use l4slab_core::{Dur, Rate};
use l4slab_qdisc::FifoConfig;
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
        QdiscSpec::Fifo(FifoConfig {
            limit: BufferLimit::Time {
                time: Dur::from_millis(10),
                bytes: 30_080
            },
            head_drop: false
        })
    );
    // The other direction keeps its constant rate; the trace is named in the JSON.
    assert!(s.bottleneck.up.rate_trace.is_none());
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["bottleneck"]["down"]["rate_trace"]["name"],
        path.as_str()
    );
    assert!(json["bottleneck"]["up"].get("rate_trace").is_none());
    // Given by its path, the file read is named; given by name, it is not (where
    // l4slab is installed must not change the results).
    assert!(json["bottleneck"]["down"]["rate_trace"]["path"].is_string());
    let named = parse_set(
        BASE,
        &["bottleneck.down.rate={ trace = \"TMobile-LTE-short.down\" }"],
    );
    let named = serde_json::to_value(named.unwrap()).unwrap();
    let t = &named["bottleneck"]["down"]["rate_trace"];
    assert_eq!(t["name"], "TMobile-LTE-short.down");
    assert!(t.get("path").is_none(), "{t}");
}

#[test]
fn bad_trace_values_name_the_key_path() {
    let err = |set: &str| parse_set(BASE, &[set]).unwrap_err().to_string();
    let e = err("bottleneck.rate={ trace = \"no-such-trace.down\" }");
    assert!(
        e.starts_with(
            "bottleneck.rate.trace: no trace named 'no-such-trace.down'; the traces are: "
        ),
        "{e}"
    );
    // The shipped names are listed, so a typo shows its fix.
    assert!(e.contains("TMobile-LTE-short.down"), "{e}");
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
    // The traces are part of the source tree (and of the Python package).
    let dir = std::path::Path::new(l4slab_scenario::SOURCE_TRACE_DIR);
    assert!(
        dir.join("TMobile-LTE-short.down").is_file(),
        "{}",
        dir.display()
    );
    let s = parse_set(
        BASE,
        &["bottleneck.down.rate={ trace = \"TMobile-LTE-short.down\" }"],
    )
    .unwrap();
    // 194,846 opportunities over 140 s (REFERENCES.md §5): about 16.7 Mbit/s.
    let mbps = s.bottleneck.down.rate.as_mbps_f64();
    assert!((16.0..17.5).contains(&mbps), "{mbps}");
}

#[test]
fn a_trace_that_is_not_a_regular_file_is_refused_without_reading_it() {
    // /dev/zero never ends: reading it would exhaust memory.
    let e = parse_set(BASE, &["bottleneck.rate={ trace = \"/dev/zero\" }"])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bottleneck.rate.trace: cannot read /dev/zero: not a regular file"),
        "{e}"
    );
    // A directory given as a path is refused the same way.
    let e = parse_set(BASE, &["bottleneck.rate={ trace = \"/tmp/\" }"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

#[test]
fn a_trace_larger_than_the_limit_is_refused_before_it_is_read() {
    let dir = std::env::temp_dir().join(format!("l4slab-trace-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.down");
    // A sparse file: its size is over the limit, its content never read.
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(l4slab_scenario::MAX_TRACE_BYTES + 1).unwrap();
    let e = parse_set(
        BASE,
        &[&format!(
            "bottleneck.rate={{ trace = \"{}\" }}",
            big.display()
        )],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is more than a trace may be (64 MiB)"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_is_not_a_trace_is_never_quoted() {
    let secret = "hunter2:$6$saltsalt$notatimestamp";
    let path = trace_file("secret", &format!("1\n{secret}\n"));
    let e = parse_set(
        BASE,
        &[&format!("bottleneck.rate={{ trace = \"{path}\" }}")],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 2 is not a millisecond timestamp"), "{e}");
    assert!(!e.contains("hunter2"), "the error quotes the file: {e}");
    // Binary content: refused as not text, nothing quoted.
    let bin = std::env::temp_dir().join(format!("l4slab-trace-bin-{}", std::process::id()));
    std::fs::write(&bin, [0xff_u8, 0xfe, b'x']).unwrap();
    let e = parse_set(
        BASE,
        &[&format!(
            "bottleneck.rate={{ trace = \"{}\" }}",
            bin.display()
        )],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a text file"), "{e}");
    std::fs::remove_file(&bin).unwrap();
}

#[test]
fn a_bare_name_is_only_looked_up_among_the_traces() {
    // Without a '/', a name never reaches outside the trace directories.
    for name in ["..", ".", "Cargo.toml"] {
        let e = parse_set(
            BASE,
            &[&format!("bottleneck.rate={{ trace = \"{name}\" }}")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(&format!("no trace named '{name}'")), "{e}");
    }
}

#[test]
fn the_rate_tables_keys_are_read_by_their_declaration() {
    let err = |set: &str| parse_set(BASE, &[set]).unwrap_err().to_string();
    assert_eq!(
        err("bottleneck.rate={ trace = 3 }"),
        "bottleneck.rate.trace: expected a string, found an integer (3); \
         write e.g. \"TMobile-LTE-short.down\""
    );
    assert_eq!(
        err("bottleneck.rate={ file = \"x.down\" }"),
        "bottleneck.rate.file: unknown key; valid keys here: trace"
    );
    assert_eq!(
        err("bottleneck.rate={}"),
        "bottleneck.rate.trace: missing: a rate table names a mahimahi trace file; \
         write e.g. rate = { trace = \"TMobile-LTE-short.down\" }"
    );
}
