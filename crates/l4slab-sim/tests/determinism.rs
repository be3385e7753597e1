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

/// Every application, datagrams included, through an AQM with randomness.
const APPS: &str = r#"
format = 1
duration = "4s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "50pkt"
qdisc = "pie"
loss = "0.5%"
[[flows]]
name = "bulk"
cc = "cubic"
app = "bulk"
[[flows]]
name = "file"
direction = "up"
app = { kind = "file", size = "300KB" }
[[flows]]
name = "ping"
app = { kind = "ping", interval = "20ms" }
[[flows]]
name = "share"
direction = "up"
app = { kind = "screen_share", frame_size = "15KB" }
[[flows]]
name = "call"
cc = "prague"
app = { kind = "video_call" }
[[flows]]
name = "game"
cc = "bbr"
app = { kind = "cloud_gaming", max_bitrate = "5Mbit" }
[[flows]]
name = "quic_file"
cc = "prague"
transport = { protocol = "quic" }
app = { kind = "file", size = "200KB" }
[[flows]]
name = "rtp_call"
app = { kind = "video_call", transport = "rtp", media_cc = "scream" }
[[flows]]
name = "rtp_game"
app = { kind = "cloud_gaming", transport = "rtp", media_cc = "gcc", max_bitrate = "5Mbit" }
[[flows]]
name = "page"
[flows.app]
kind = "web"
objects = [{ size = "40KB", at = "0.5s" }, { size = "8KB", at = "1s", connection = "new" }]
"#;

#[test]
fn runs_with_every_app_are_reproducible() {
    let a = common::run_toml(APPS, &[]);
    let b = common::run_toml(APPS, &[]);
    assert_eq!(digest(&a), digest(&b));
    let c = common::run_toml(APPS, &["seed=2"]);
    assert_ne!(digest(&a).0, digest(&c).0);
}

/// The summary without the seed (at the top and in the scenario), as text.
fn without_seed(out: &l4slab_sim::RunOutput) -> (String, Vec<u64>) {
    let mut s = out.summary.clone();
    s.as_object_mut().unwrap().remove("seed");
    s["scenario"].as_object_mut().unwrap().remove("seed");
    let series: Vec<u64> = out.series.value.iter().map(|v| v.to_bits()).collect();
    (serde_json::to_string(&s).unwrap(), series)
}

const QUIC: &str = "flows[0].transport={protocol=\"quic\"}";

/// `random_draws = 0` means the seed changed nothing: such runs are identical
/// whatever the seed, and the random elements (a lossy link, PIE's and
/// DualPI2's coin flips, BBR's randomized cycle phase) do draw.
#[test]
fn a_run_that_draws_nothing_is_the_same_for_every_seed() {
    let cases: [(&str, &[&str], bool); 12] = [
        ("fifo reno", &[], false),
        (
            "codel cubic",
            &["bottleneck.qdisc=codel", "flows[0].cc=cubic"],
            false,
        ),
        ("fq_codel", &["bottleneck.qdisc=fq_codel"], false),
        (
            "file",
            &["flows[0].app={kind=\"file\", size=\"2MB\"}"],
            false,
        ),
        ("lossy", &["bottleneck.loss=1%"], true),
        ("pie", &["bottleneck.qdisc=pie"], true),
        ("fq_pie", &["bottleneck.qdisc=fq_pie"], true),
        ("dualpi2 classic", &["bottleneck.qdisc=dualpi2"], true),
        ("bbr", &["flows[0].cc=bbr"], true),
        // A QUIC connection's controller draws from the connection's own
        // stream: counted (BBR), and a QUIC run that draws nothing (Cubic:
        // its connection IDs come from the seed but change nothing) is the
        // same for every seed.
        ("quic cubic", &[QUIC, "flows[0].cc=cubic"], false),
        ("quic bbr", &[QUIC, "flows[0].cc=bbr"], true),
        ("quic bbr3", &[QUIC, "flows[0].cc=bbr3"], true),
    ];
    for (name, sets, random) in cases {
        let mut sets: Vec<&str> = sets.to_vec();
        sets.push("duration=5s");
        let one = common::run_toml(GOLDEN, &sets);
        let draws = one.summary["random_draws"].as_u64().expect("random_draws");
        assert_eq!(draws > 0, random, "{name}: {draws} random draws");
        for seed in ["seed=2", "seed=12345"] {
            let mut other = sets.clone();
            other.push(seed);
            let out = common::run_toml(GOLDEN, &other);
            if draws == 0 {
                assert_eq!(
                    without_seed(&one),
                    without_seed(&out),
                    "{name}: no random draw, yet {seed} changed the results"
                );
            } else {
                assert_ne!(without_seed(&one).0, without_seed(&out).0, "{name}, {seed}");
            }
        }
    }
}

const WIFI: &str = include_str!("../../../scenarios/examples/wifi-home.toml");

/// A Wi-Fi cell draws from its own stream (backoffs, MPDU losses): the
/// seed matters, `random_draws` says so, and the same seed repeats the run.
#[test]
fn a_wifi_cell_is_reproducible_and_its_seed_matters() {
    let a = common::run_toml(WIFI, &["duration=3s"]);
    let b = common::run_toml(WIFI, &["duration=3s"]);
    assert_eq!(digest(&a), digest(&b));
    let draws = a.summary["random_draws"].as_u64().unwrap();
    assert!(draws > 1000, "the cell's draws are counted: {draws}");
    let c = common::run_toml(WIFI, &["duration=3s", "seed=2"]);
    assert_ne!(without_seed(&a), without_seed(&c));
}
