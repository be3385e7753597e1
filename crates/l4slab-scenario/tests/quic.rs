//! `[flows.transport]` of a `protocol = "quic"` flow (docs/models/quic.md,
//! docs/scenarios.md): the keys QUIC applies reach the connection with
//! QUIC's meaning and defaults; the keys it has no use for are refused with
//! their key path and an example when set to anything but QUIC's default.

mod common;

use common::{base_with, parse_set, BASE};
use l4slab_cc::param::ParamValue;
use l4slab_cc::CcOptions;
use l4slab_core::Dur;
use l4slab_scenario::quic::{connection_config, QuicUse, KEYS};
use l4slab_scenario::{Problem, Protocol, TransportSpec};

const QUIC: &str = r#"flows[0].transport.protocol=quic"#;

/// BASE over QUIC with `sets` (applied after the protocol).
fn quic_with(sets: &[&str]) -> l4slab_scenario::Scenario {
    let mut all = vec![QUIC];
    all.extend_from_slice(sets);
    base_with(&all)
}

fn quic_err(sets: &[&str]) -> l4slab_scenario::ScenarioError {
    let mut all = vec![QUIC];
    all.extend_from_slice(sets);
    parse_set(BASE, &all).expect_err("must not parse")
}

#[test]
fn every_key_quic_has_no_use_for_is_refused_with_its_path_and_an_example() {
    // (key, a value QUIC does not do, QUIC's value)
    let cases = [
        ("min_rto", r#""1s""#, r#""200ms""#),
        ("rto_formula", r#""rfc6298""#, r#""linux""#),
        ("tlp", "false", "true"),
        ("frto", "false", "true"),
        ("undo", "true", "false"),
        ("dsack", "true", "false"),
        ("notsent_lowat", r#""128KiB""#, ""),
        ("receive_buffer", r#""1MiB""#, r#""32MiB""#),
        ("fastopen", "true", "false"),
    ];
    let refused: Vec<&str> = KEYS
        .iter()
        .filter(|k| matches!(k.quic, QuicUse::Refused(_)))
        .map(|k| k.key)
        .collect();
    assert_eq!(refused, cases.map(|c| c.0));
    for (key, bad, quics) in cases {
        let e = quic_err(&[&format!("flows[0].transport.{key}={bad}")]);
        let msg = e.to_string();
        let path = format!("flows[0].transport.{key}");
        assert_eq!(e.path(), Some(path.as_str()), "{msg}");
        assert_eq!(e.problem(), Some(Problem::Conflict), "{msg}");
        assert!(
            msg.starts_with(&format!("{path}: not used by protocol = \"quic\": ")),
            "{msg}"
        );
        // The example is a valid line: the same setting over TCP.
        let example = msg.split("; write e.g. ").nth(1).expect(&msg);
        assert!(
            example.starts_with(&format!("transport = {{ protocol = \"tcp\", {key} = ")),
            "{msg}"
        );
        let tcp = example.strip_prefix("transport = ").unwrap();
        base_with(&[&format!("flows[0].transport={tcp}")]);
        // The same key over TCP is fine, and over QUIC with QUIC's value.
        base_with(&[&format!("flows[0].transport.{key}={bad}")]);
        if !quics.is_empty() {
            quic_with(&[&format!("flows[0].transport.{key}={quics}")]);
        }
    }
    // The protocol may come after the key in the file.
    let e = parse_set(
        BASE,
        &[
            "flows[0].transport.tlp=false",
            "flows[0].transport.protocol=quic",
        ],
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("flows[0].transport.tlp"));
    assert!(e.to_string().contains("RFC 9002 §6.2"), "{e}");
}

#[test]
fn a_quic_flow_resolves_to_quics_defaults() {
    let t = &quic_with(&[]).flows[0].transport;
    assert_eq!(*t, TransportSpec::defaults_for(Protocol::Quic));
    assert_eq!(t.mss, 1200); // RFC 9000 §14
    assert_eq!(t.initial_window, 10); // RFC 9002 §7.2
    assert_eq!(t.delayed_ack_timeout, Dur::from_millis(25)); // RFC 9000 §18.2
    assert!(t.pacing); // RFC 9002 §7.7
    assert!(!t.undo && !t.dsack);
    // A TCP flow keeps TCP's.
    assert_eq!(base_with(&[]).flows[0].transport, TransportSpec::default());
}

#[test]
fn the_keys_quic_applies_reach_the_connection() {
    let s = quic_with(&[
        r#"flows[0].cc={ kind = "cubic", beta = 0.5, hystart = false }"#,
        "flows[0].transport.mss=1472",
        "flows[0].transport.initial_window=32",
        "flows[0].transport.delayed_ack=false",
        r#"flows[0].transport.delayed_ack_timeout="10ms""#,
        "flows[0].transport.pacing=false",
        r#"flows[0].transport.send_buffer="1MiB""#,
    ]);
    let f = &s.flows[0];
    let c = connection_config(&f.cc, &f.transport, true, 1);
    assert_eq!(c.cc, "cubic");
    assert_eq!(
        c.cc_options,
        Some(
            CcOptions::defaults("cubic")
                .unwrap()
                .with("beta", ParamValue::Num(0.5))
                .with("hystart", ParamValue::Flag(false))
        )
    );
    assert_eq!(c.max_datagram_size, 1472);
    assert_eq!(c.initial_window, Some(32));
    assert_eq!(c.ack_eliciting_threshold, 1);
    assert_eq!(c.max_ack_delay, Dur::from_millis(10));
    assert!(!c.pacing);
    assert_eq!(c.send_buffer, 1 << 20);
    // The connection accepts it.
    l4slab_quic::Connection::server(c, l4slab_core::Time::ZERO).unwrap();
}

#[test]
fn the_default_initial_window_follows_the_datagram_size() {
    // RFC 9002 §7.2: min(10 * mds, max(14720, 2 * mds)), in whole datagrams.
    for (mss, iw) in [(1200, 10), (1472, 10), (1500, 9), (9000, 2)] {
        let t = &quic_with(&[&format!("flows[0].transport.mss={mss}")]).flows[0].transport;
        assert_eq!((t.mss, t.initial_window), (mss, iw));
    }
    // Written, it is taken as is (not capped at 14720 bytes).
    let t = &quic_with(&[
        "flows[0].transport.mss=9000",
        "flows[0].transport.initial_window=10",
    ])
    .flows[0]
        .transport;
    assert_eq!(t.initial_window, 10);
}

#[test]
fn out_of_range_values_name_quics_limits() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "flows[0].transport.mss=1000",
            "flows[0].transport.mss",
            "1000 is out of range for protocol = \"quic\", where mss is the maximum datagram size (the UDP payload): between 1200 (RFC 9000 §14) and 9000; write e.g. 1472",
        ),
        (
            "flows[0].transport.mss=9001",
            "flows[0].transport.mss",
            "between 1200 (RFC 9000 §14) and 9000",
        ),
        (
            "flows[0].transport.initial_window=1",
            "flows[0].transport.initial_window",
            "1 datagram is below QUIC's minimum window of 2 datagrams (RFC 9002 §7.2 kMinimumWindow); write e.g. 10",
        ),
        (
            r#"flows[0].transport.delayed_ack_timeout="20s""#,
            "flows[0].transport.delayed_ack_timeout",
            "must be below 2^14 ms = 16.384 s (RFC 9000 §18.2); write e.g. \"25ms\"",
        ),
    ];
    for (set, path, fragment) in cases {
        let e = quic_err(&[set]);
        let msg = e.to_string();
        assert_eq!(e.path(), Some(*path), "{msg}");
        assert_eq!(e.problem(), Some(Problem::BadValue), "{msg}");
        assert!(msg.contains(fragment), "{msg}");
    }
    // The same values are fine over TCP (mss 1000 B, one-segment IW, 20 s).
    base_with(&[
        "flows[0].transport.mss=1000",
        "flows[0].transport.initial_window=1",
    ]);
    base_with(&[r#"flows[0].transport.delayed_ack_timeout="20s""#]);
}

#[test]
fn tcps_ecn_modes_are_refused_on_a_quic_flow_with_what_quic_has_instead() {
    for mode in ["classic", "accecn"] {
        let set = format!("flows[0].ecn={mode}");
        let e = quic_err(&[&set]);
        assert_eq!(e.path(), Some("flows[0].ecn"), "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("\"{mode}\" with transport.protocol = \"quic\"")),
            "{text}"
        );
        assert!(text.contains("transport.ecn_codepoint"), "{text}");
        assert!(
            text.ends_with(
                r#"write e.g. transport = { protocol = "quic", ecn_codepoint = "ect0" }"#
            ),
            "{text}"
        );
    }
    // What it says to write is accepted, and "off" stays QUIC's.
    let s = quic_with(&["flows[0].transport.ecn_codepoint=ect0"]);
    assert_eq!(
        s.flows[0].transport.ecn_codepoint,
        Some(l4slab_core::Ecn::Ect0)
    );
    assert!(quic_with(&["flows[0].ecn=off"]).flows[0].ecn.is_some());
    // Over TCP both modes stay.
    assert!(parse_set(BASE, &["flows[0].ecn=classic"]).is_ok());
}
