//! Run a scenario file and print summary.json: `cargo run --release -p l4slab-sim --example run_scenario -- FILE [--set k=v]... [--pcap-dir DIR]`
//! (`--pcap-dir`: where a scenario with `pcap = true` writes `pcap/*.pcap`.)
//! (Users run `l4slab run`; this is for profiling the engine without Python.)

use std::path::Path;

use l4slab_scenario::{parse_file, ParseOptions};
use l4slab_sim::{run, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: run_scenario FILE [--set key=value]... [--pcap-dir DIR]");
        std::process::exit(2);
    };
    let overrides: Vec<String> = args[1..]
        .chunks(2)
        .filter(|c| c[0] == "--set" && c.len() == 2)
        .map(|c| c[1].clone())
        .collect();
    let pcap_dir = args[1..]
        .chunks(2)
        .find(|c| c[0] == "--pcap-dir" && c.len() == 2)
        .map(|c| c[1].clone().into());
    let opts = ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs: vec![],
    };
    let scn = match parse_file(Path::new(path), &overrides, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let opts = RunOptions {
        pcap_dir,
        ..RunOptions::default()
    };
    let out = run(&scn, &opts, &mut |_| true).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    let mut s = out.summary.clone();
    s.as_object_mut().expect("object").remove("scenario");
    println!("{}", serde_json::to_string_pretty(&s).expect("json"));
    eprintln!("events {} packets {}", out.stats.events, out.stats.packets);
}
