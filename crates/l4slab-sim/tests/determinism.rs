//! DESIGN.md §4: a run is a pure function of (scenario, seed).

mod common;

const GOLDEN: &str = include_str!("../../../scenarios/golden/fifo-reno.toml");

fn digest(out: &l4slab_sim::RunOutput) -> (String, Vec<u64>) {
    let s = serde_json::to_string(&out.summary).unwrap();
    let series: Vec<u64> = out.series.value.iter().map(|v| v.to_bits()).collect();
    (s, series)
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_differs() {
    let a = common::run_toml(GOLDEN, &["duration=5s", "bottleneck.loss=1%"]);
    let b = common::run_toml(GOLDEN, &["duration=5s", "bottleneck.loss=1%"]);
    assert_eq!(digest(&a), digest(&b));
    let c = common::run_toml(GOLDEN, &["duration=5s", "bottleneck.loss=1%", "seed=2"]);
    assert_ne!(
        digest(&a).0,
        digest(&c).0,
        "a different seed must change the random losses"
    );
}
