//! `codel` and `fq_codel` in scenario files: tc knob names, Linux defaults,
//! the direction's buffer as the default `limit`, and one error per way a
//! knob can be wrong, each naming its key path.

mod common;

use common::{base_with, parse_set, BASE};
use l4slab_core::Dur;
use l4slab_qdisc::{CeSelector, CodelConfig, FqCodelConfig};
use l4slab_scenario::{Problem, QdiscSpec};

fn codel(sets: &[&str]) -> CodelConfig {
    match base_with(sets).bottleneck.down.qdisc {
        QdiscSpec::Codel(c) => c,
        other => panic!("not codel: {other:?}"),
    }
}

fn fq_codel(sets: &[&str]) -> FqCodelConfig {
    match base_with(sets).bottleneck.down.qdisc {
        QdiscSpec::FqCodel(c) => c,
        other => panic!("not fq_codel: {other:?}"),
    }
}

#[test]
fn codel_defaults_are_linux_with_the_buffer_as_limit() {
    // BASE: buffer = "100pkt".
    assert_eq!(
        codel(&["bottleneck.qdisc=codel"]),
        CodelConfig {
            limit: 100,
            ..CodelConfig::default()
        }
    );
    let d = CodelConfig::default();
    assert_eq!(d.target, Dur::from_millis(5));
    assert_eq!(d.interval, Dur::from_millis(100));
    assert!(!d.ecn);
    assert_eq!(d.ce_threshold, None);
    assert_eq!(d.limit, 1000);
}

#[test]
fn codel_takes_every_tc_knob() {
    let c = codel(&[
        r#"bottleneck.qdisc={ kind = "codel", limit = 300, target = "2ms", interval = "50ms", ecn = true, ce_threshold = "1ms" }"#,
    ]);
    assert_eq!(
        c,
        CodelConfig {
            limit: 300,
            target: Dur::from_millis(2),
            interval: Dur::from_millis(50),
            ecn: true,
            ce_threshold: Some(Dur::from_millis(1)),
            ..CodelConfig::default()
        }
    );
}

#[test]
fn byte_and_time_buffers_become_packet_limits() {
    // 150 KB / 1500 B = 100 packets.
    let c = codel(&["bottleneck.buffer=150KB", "bottleneck.qdisc=codel"]);
    assert_eq!(c.limit, 100);
    // 20 Mbit/s x 60 ms = 150,000 B = 100 packets.
    let c = codel(&["bottleneck.buffer=60ms", "bottleneck.qdisc=codel"]);
    assert_eq!(c.limit, 100);
    // A `limit` key overrides the buffer, in any buffer unit.
    let c = codel(&[r#"bottleneck.qdisc={ kind = "codel", limit = "30ms" }"#]);
    assert_eq!(c.limit, 50);
    let c = codel(&[r#"bottleneck.qdisc={ kind = "codel", limit = "7pkt" }"#]);
    assert_eq!(c.limit, 7);
}

#[test]
fn fq_codel_defaults_are_linux_with_the_buffer_as_limit() {
    assert_eq!(
        fq_codel(&["bottleneck.qdisc=fq_codel"]),
        FqCodelConfig {
            limit: 100,
            ..FqCodelConfig::default()
        }
    );
    let d = FqCodelConfig::default();
    assert_eq!(
        (
            d.limit,
            d.flows,
            d.quantum,
            d.ecn,
            d.memory_limit,
            d.drop_batch
        ),
        (10240, 1024, 1514, true, 32 << 20, 64)
    );
}

#[test]
fn fq_codel_takes_every_tc_knob() {
    let c = fq_codel(&[
        r#"bottleneck.qdisc={ kind = "fq_codel", limit = 2000, flows = 64, target = "3ms", interval = "30ms", quantum = 300, ecn = false, ce_threshold = "1ms", ce_threshold_selector = "ect1", memory_limit = "4MiB", drop_batch = 8, hash_seed = 9 }"#,
    ]);
    assert_eq!(
        c,
        FqCodelConfig {
            limit: 2000,
            flows: 64,
            target: Dur::from_millis(3),
            interval: Dur::from_millis(30),
            quantum: 300,
            ecn: false,
            ce_threshold: Some(Dur::from_millis(1)),
            ce_threshold_selector: Some(CeSelector::ECT1),
            memory_limit: 4 << 20,
            drop_batch: 8,
            hash_seed: 9,
            ..FqCodelConfig::default()
        }
    );
    let c = fq_codel(&[
        r#"bottleneck.qdisc={ kind = "fq_codel", ce_threshold = "500us", ce_threshold_selector = "0x50/0xfc", quantum = "1KB", memory_limit = 100000 }"#,
    ]);
    assert_eq!(
        c.ce_threshold_selector,
        Some(CeSelector {
            value: 0x50,
            mask: 0xfc
        })
    );
    assert_eq!((c.quantum, c.memory_limit), (1000, 100_000));
}

#[test]
fn per_direction_qdiscs() {
    let s = base_with(&[
        "bottleneck.down.qdisc=fq_codel",
        r#"bottleneck.up.qdisc={ kind = "codel", ecn = true }"#,
    ]);
    assert!(matches!(s.bottleneck.down.qdisc, QdiscSpec::FqCodel(_)));
    assert!(matches!(
        s.bottleneck.up.qdisc,
        QdiscSpec::Codel(CodelConfig { ecn: true, .. })
    ));
}

/// The resolved scenario (recorded in summary.json) names the kind.
#[test]
fn resolved_qdisc_serializes_with_its_kind() {
    let s = base_with(&["bottleneck.qdisc=fq_codel"]);
    let v = serde_json::to_value(&s.bottleneck.down.qdisc).unwrap();
    assert_eq!(v["kind"], "fq_codel");
    assert_eq!(v["flows"], 1024);
    let s = base_with(&["bottleneck.qdisc=codel"]);
    let v = serde_json::to_value(&s.bottleneck.down.qdisc).unwrap();
    assert_eq!(v["kind"], "codel");
    assert_eq!(v["target"], 5_000_000);
}

/// (`--set` argument, key path, problem, exact message).
const ERRORS: &[(&str, &str, Problem, &str)] = &[
    (
        r#"bottleneck.qdisc={ kind = "codel", target = "fast" }"#,
        "bottleneck.qdisc.target",
        Problem::BadValue,
        r#"bottleneck.qdisc.target: "fast" is not a duration; write e.g. "5ms""#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", target = "0ms" }"#,
        "bottleneck.qdisc.target",
        Problem::BadValue,
        r#"bottleneck.qdisc.target: must be greater than zero; write e.g. "5ms""#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", interval = 100 }"#,
        "bottleneck.qdisc.interval",
        Problem::BadValue,
        r#"bottleneck.qdisc.interval: 100 has no unit (a bare number is ambiguous); write e.g. "100ms""#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", ecn = "yes" }"#,
        "bottleneck.qdisc.ecn",
        Problem::WrongType,
        r#"bottleneck.qdisc.ecn: expected true or false, found a string ("yes"); write e.g. true"#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", ce_threshold = "soon" }"#,
        "bottleneck.qdisc.ce_threshold",
        Problem::BadValue,
        r#"bottleneck.qdisc.ce_threshold: "soon" is not a duration; write e.g. "1ms""#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", limit = 0 }"#,
        "bottleneck.qdisc.limit",
        Problem::BadValue,
        "bottleneck.qdisc.limit: 0 is out of range; must be between 1 and 4294967295; write e.g. 1000",
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", limit = "many" }"#,
        "bottleneck.qdisc.limit",
        Problem::BadValue,
        "bottleneck.qdisc.limit:",
    ),
    (
        r#"bottleneck.qdisc={ kind = "codel", flows = 16 }"#,
        "bottleneck.qdisc.flows",
        Problem::UnknownKey,
        "bottleneck.qdisc.flows: unknown key; valid keys here: kind, limit, target, interval, ecn, ce_threshold",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", flows = 0 }"#,
        "bottleneck.qdisc.flows",
        Problem::BadValue,
        "bottleneck.qdisc.flows: 0 is out of range; must be between 1 and 65536; write e.g. 1024",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", flows = 65537 }"#,
        "bottleneck.qdisc.flows",
        Problem::BadValue,
        "must be between 1 and 65536",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", flows = "many" }"#,
        "bottleneck.qdisc.flows",
        Problem::WrongType,
        r#"bottleneck.qdisc.flows: expected an integer, found a string ("many"); write e.g. 1024"#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", quantum = 100 }"#,
        "bottleneck.qdisc.quantum",
        Problem::BadValue,
        "bottleneck.qdisc.quantum: 100 B is out of range; must be between 256 B and 1MiB; write e.g. 1514",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", quantum = "big" }"#,
        "bottleneck.qdisc.quantum",
        Problem::BadValue,
        r#"bottleneck.qdisc.quantum: "big" is not a size; write e.g. 1514"#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", ce_threshold_selector = "ect1" }"#,
        "bottleneck.qdisc.ce_threshold_selector",
        Problem::Conflict,
        "has no effect without ce_threshold",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", ce_threshold = "1ms", ce_threshold_selector = "l4s" }"#,
        "bottleneck.qdisc.ce_threshold_selector",
        Problem::BadValue,
        r#"bottleneck.qdisc.ce_threshold_selector: "l4s" is not a selector; use "ect1" or tc's VALUE/MASK such as "0x1/0x3"; write e.g. "ect1""#,
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", ce_threshold = "1ms", ce_threshold_selector = "0x3/0x1" }"#,
        "bottleneck.qdisc.ce_threshold_selector",
        Problem::BadValue,
        "VALUE has bits outside MASK",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", ce_threshold = "1ms", ce_threshold_selector = 1 }"#,
        "bottleneck.qdisc.ce_threshold_selector",
        Problem::WrongType,
        "expected a string, found an integer (1)",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", memory_limit = "4GiB" }"#,
        "bottleneck.qdisc.memory_limit",
        Problem::BadValue,
        "bottleneck.qdisc.memory_limit: 4294967296 B is out of range; must be between 1 B and 2GiB; write e.g. \"32MiB\"",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", memory_limit = 0 }"#,
        "bottleneck.qdisc.memory_limit",
        Problem::BadValue,
        "out of range",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", drop_batch = 0 }"#,
        "bottleneck.qdisc.drop_batch",
        Problem::BadValue,
        "bottleneck.qdisc.drop_batch: 0 is out of range; must be between 1 and 4294967295; write e.g. 64",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", interval = "0s" }"#,
        "bottleneck.qdisc.interval",
        Problem::BadValue,
        "must be greater than zero",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", hash_seed = -1 }"#,
        "bottleneck.qdisc.hash_seed",
        Problem::BadValue,
        "must be between 0 and 4294967295",
    ),
    (
        r#"bottleneck.qdisc={ kind = "fq_codel", head_drop = true }"#,
        "bottleneck.qdisc.head_drop",
        Problem::UnknownKey,
        "bottleneck.qdisc.head_drop: unknown key; valid keys here: kind, limit, flows, target, interval, quantum, ecn, ce_threshold, ce_threshold_selector, memory_limit, drop_batch, hash_seed",
    ),
    (
        r#"bottleneck.down.qdisc={ kind = "fq_codel", target = "x" }"#,
        "bottleneck.down.qdisc.target",
        Problem::BadValue,
        r#"bottleneck.down.qdisc.target: "x" is not a duration; write e.g. "5ms""#,
    ),
];

#[test]
fn invalid_knobs_are_rejected_with_their_key_path() {
    for &(set, path, problem, message) in ERRORS {
        let e = parse_set(BASE, &[set]).expect_err(set);
        assert_eq!(e.path(), Some(path), "{set}: {e}");
        assert_eq!(e.problem(), Some(problem), "{set}: {e}");
        let text = e.to_string();
        assert!(
            text == message || (message.len() < 60 && text.contains(message)),
            "{set}:\n  got:  {text}\n  want: {message}"
        );
    }
}
