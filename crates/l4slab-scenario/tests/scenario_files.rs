//! Every scenario file under `scenarios/` parses (examples, golden, studies;
//! a study's `study.toml` is not a scenario: the Python tests check those).

mod common;

use std::path::{Path, PathBuf};

use l4slab_scenario::parse_file;

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml")
            && p.file_name().is_some_and(|n| n != "study.toml")
        {
            out.push(p);
        }
    }
}

/// Shipped scenarios may use every controller the simulator has (the
/// scenario crate does not know them; l4slab-sim's `cc_names()` does).
fn all_cc() -> l4slab_scenario::ParseOptions<'static> {
    l4slab_scenario::ParseOptions {
        known_cc: vec!["reno", "cubic", "dctcp", "prague", "bbr", "bbr3"],
        trace_dirs: vec![],
    }
}

#[test]
fn all_scenario_files_parse() {
    let mut files = Vec::new();
    toml_files(&common::scenarios_dir(), &mut files);
    assert!(
        files.len() >= 5,
        "expected the examples and golden files, found {files:?}"
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            parse_file(f, &[], &all_cc())
                .err()
                .map(|e| format!("{}: {e}", f.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn main_example_is_the_documented_scenario() {
    let s = parse_file(
        &common::scenarios_dir().join("examples/reno-20mbit.toml"),
        &[],
        &common::opts(),
    )
    .unwrap();
    assert_eq!(s.name, "reno-20mbit");
    assert_eq!(s.flows.len(), 1);
    assert_eq!(s.flows[0].cc.kind, "reno");
    assert_eq!(s.bottleneck.down.rate.as_bps(), 20_000_000);
    // 20 ms base RTT: 10 ms each way, no access delay.
    let one_way = s.bottleneck.down.delay + s.hosts[0].access_delay + s.hosts[1].access_delay;
    assert_eq!(one_way.as_nanos(), 10_000_000);
    assert_eq!(s.duration.as_nanos(), 30_000_000_000);
}
