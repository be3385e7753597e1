//! `red` in scenario files: the `tc-red(8)` names, the direction's buffer as
//! the byte `limit`, every declared key accepted with its example, and the
//! combinations tc refuses reported at the key to blame.

mod common;

use common::{base_with, parse_set, BASE};
use l4slab_qdisc::red::{RedConfig, PARAMS};
use l4slab_scenario::{Problem, QdiscSpec, Scenario};

fn red_of(s: &Scenario) -> RedConfig {
    match &s.bottleneck.down.qdisc {
        QdiscSpec::Red(c) => c.clone(),
        other => panic!("not red: {other:?}"),
    }
}

#[test]
fn defaults_are_tc_with_the_buffer_as_the_byte_limit() {
    // BASE: buffer = "100pkt" = 150000 B.
    assert_eq!(
        red_of(&base_with(&["bottleneck.qdisc=red"])),
        RedConfig {
            limit: 150_000,
            ..RedConfig::default()
        }
    );
    let c = red_of(&base_with(&[
        "bottleneck.qdisc.kind=red",
        "bottleneck.qdisc.min=30KB",
        "bottleneck.qdisc.ecn=true",
        "bottleneck.qdisc.adaptative=true",
        "bottleneck.qdisc.probability=5%",
    ]));
    assert_eq!(
        (c.min, c.max, c.ecn, c.adaptive, c.probability),
        (Some(30_000), None, true, true, 0.05)
    );
}

#[test]
fn every_declared_key_takes_its_example() {
    for p in PARAMS {
        let set = format!(
            "bottleneck.qdisc.{}={}",
            p.name,
            p.example().trim_matches('"')
        );
        parse_set(BASE, &["bottleneck.qdisc.kind=red", &set])
            .unwrap_or_else(|e| panic!("{set}: {e}"));
    }
}

#[test]
fn what_tc_refuses_names_the_key() {
    let e = parse_set(
        BASE,
        &[
            "bottleneck.qdisc.kind=red",
            "bottleneck.qdisc.min=90KB",
            "bottleneck.qdisc.max=30KB",
        ],
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("bottleneck.qdisc.max"));
    assert_eq!(e.problem(), Some(Problem::BadValue));
    assert!(e.to_string().contains("must be above min"), "{e}");
    // A 4-packet buffer derives burst 0, as tc would: blamed on burst, at the qdisc.
    let e = parse_set(BASE, &["bottleneck.qdisc=red", "bottleneck.buffer=4pkt"]).unwrap_err();
    assert_eq!(e.path(), Some("bottleneck.qdisc"));
    assert!(e.to_string().contains("burst 0 is too small"), "{e}");
    assert!(e.to_string().contains("burst = 20"), "{e}");
}
