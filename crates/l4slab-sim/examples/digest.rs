//! Print everything a run decides, to show a refactor changes no number:
//! `cargo run -p l4slab-sim --example digest -- FILE...`
//! For each scenario file: its summary.json (resolved scenario included) and
//! one line per series name with its row count and an FNV-1a digest of its
//! rows (time, key, value bits). `bench/identity.py` does the same through
//! Python, with the studies.

use std::collections::BTreeMap;
use std::path::Path;

use l4slab_scenario::{parse_file, ParseOptions};
use l4slab_sim::{run, RunOptions};

fn fnv(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

fn main() {
    let traces = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../python/l4slab/data/traces"
    );
    for path in std::env::args().skip(1) {
        let opts = ParseOptions {
            known_cc: l4slab_sim::cc_names().to_vec(),
            trace_dirs: vec![traces.into()],
        };
        println!("== {path}");
        let scn = match parse_file(Path::new(&path), &[], &opts) {
            Ok(s) => s,
            Err(e) => {
                println!("parse error: {e}");
                continue;
            }
        };
        let out = match run(&scn, &RunOptions::default(), &mut |_| true) {
            Ok(o) => o,
            Err(e) => {
                println!("run error: {e}");
                continue;
            }
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&out.summary).expect("json")
        );
        let s = &out.series;
        let mut per: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
        for i in 0..s.len() {
            let e = per
                .entry(s.name(s.series[i]))
                .or_insert((0, 0xcbf2_9ce4_8422_2325));
            e.0 += 1;
            fnv(&mut e.1, &s.t_s[i].to_bits().to_le_bytes());
            fnv(&mut e.1, s.name(s.key[i]).as_bytes());
            fnv(&mut e.1, &s.value[i].to_bits().to_le_bytes());
        }
        for (name, (rows, h)) in per {
            println!("series {name} rows {rows} digest {h:016x}");
        }
    }
}
