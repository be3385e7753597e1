//! `[[flows]] cc` in scenario files: the name or a table with `kind` and the
//! controller's options (Linux module parameter names), what the resolved
//! scenario records, `--set` on options, and one error per way an option can
//! be wrong, each naming its key path.

mod common;

use common::BASE;
use l4slab_cc::param::ParamValue::{self, Choice, Dur as D, Flag, Int, Num};
use l4slab_cc::CcOptions;
use l4slab_core::Dur;
use l4slab_scenario::{parse_with, CcSpec, ParseOptions, Problem, Scenario, ScenarioError};

/// Every controller l4slab-cc has, as the simulator offers them.
fn all() -> ParseOptions<'static> {
    ParseOptions {
        known_cc: l4slab_cc::CC_NAMES.to_vec(),
        trace_dirs: vec![],
    }
}

fn parse(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_with(text, "test.toml", &sets, &all())
}

/// The resolved `cc` of BASE's flow with `cc` set to `value` (TOML).
fn cc(value: &str) -> CcSpec {
    let set = format!("flows[0].cc={value}");
    parse(BASE, &[&set])
        .unwrap_or_else(|e| panic!("{value}: {e}"))
        .flows
        .remove(0)
        .cc
}

/// The controller `kind` with `set` over its defaults.
fn opts(kind: &str, set: &[(&str, ParamValue)]) -> CcOptions {
    let o = CcOptions::defaults(kind).unwrap();
    set.iter().fold(o, |o, &(name, v)| o.with(name, v))
}

/// BASE with its flow written as `cc = { kind = "prague" }` in the file.
const PRAGUE_TABLE: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"

[[flows]]
cc = { kind = "prague" }
"#;

#[test]
fn a_name_and_a_table_with_only_kind_are_the_defaults() {
    for &name in l4slab_cc::CC_NAMES {
        let by_name = cc(name);
        let by_table = cc(&format!(r#"{{ kind = "{name}" }}"#));
        assert_eq!(by_name, by_table, "{name}");
        assert_eq!(by_name, CcSpec::named(name).unwrap());
        assert_eq!(by_name.kind, name);
        assert!(!by_name.has_options(), "{name}");
    }
    // Absent: reno.
    let s = parse(BASE, &[]).unwrap();
    assert_eq!(s.flows[0].cc, CcSpec::named("reno").unwrap());
}

#[test]
fn every_option_of_every_kind_is_read() {
    assert_eq!(
        cc(r#"{ kind = "cubic", beta = 0.5, c = 0.8, fast_convergence = false, tcp_friendliness = false, hystart = false }"#).options,
        opts(
            "cubic",
            &[
                ("beta", Num(0.5)),
                ("c", Num(0.8)),
                ("fast_convergence", Flag(false)),
                ("tcp_friendliness", Flag(false)),
                ("hystart", Flag(false)),
            ]
        )
    );
    // Fractions also as percentages; c may be an integer.
    assert_eq!(
        cc(r#"{ kind = "cubic", beta = "80%", c = 1 }"#).options,
        opts("cubic", &[("beta", Num(0.8)), ("c", Num(1.0))])
    );
    assert_eq!(
        cc(r#"{ kind = "dctcp", shift_g = 5, alpha_on_init = 0.5, ect1 = true }"#).options,
        opts(
            "dctcp",
            &[
                ("shift_g", Int(5)),
                ("alpha_on_init", Num(0.5)),
                ("ect1", Flag(true))
            ]
        )
    );
    assert_eq!(
        cc(r#"{ kind = "dctcp", alpha_on_init = 0 }"#).options,
        opts("dctcp", &[("alpha_on_init", Num(0.0))])
    );
    assert_eq!(
        cc(r#"{ kind = "prague", rtt_scaling = "scalable", rtt_target = "15ms", rtt_transition = 4, ecn_fallback = "detect_and_fallback", burst_shift = 10, max_tso_segs = 8 }"#).options,
        opts(
            "prague",
            &[
                ("rtt_scaling", Choice("scalable")),
                ("rtt_target", D(Dur::from_millis(15))),
                ("rtt_transition", Int(4)),
                ("ecn_fallback", Choice("detect_and_fallback")),
                ("burst_shift", Int(10)),
                ("max_tso_segs", Int(8)),
            ]
        )
    );
    for name in ["none", "rate", "additive"] {
        let o = cc(&format!(r#"{{ kind = "prague", rtt_scaling = "{name}" }}"#)).options;
        assert_eq!(o.get("rtt_scaling"), Some(Choice(name)));
    }
    // A zero target is allowed: it turns RTT independence off (Linux).
    let p = cc(r#"{ kind = "prague", rtt_target = "0s", ecn_fallback = "detect_only" }"#).options;
    assert_eq!(p.get("rtt_target"), Some(D(Dur::ZERO)));
    assert_eq!(p.get("ecn_fallback"), Some(Choice("detect_only")));
    assert_eq!(
        cc(r#"{ kind = "bbr", high_gain = 2.5, cwnd_gain = 3, extra_acked_gain = 0, min_rtt_win = "5s", probe_rtt_mode = "100ms" }"#).options,
        opts(
            "bbr",
            &[
                ("high_gain", Num(2.5)),
                ("cwnd_gain", Num(3.0)),
                ("extra_acked_gain", Num(0.0)),
                ("min_rtt_win", D(Dur::from_secs(5))),
                ("probe_rtt_mode", D(Dur::from_millis(100))),
            ]
        )
    );
    assert_eq!(
        cc(r#"{ kind = "bbr3", loss_thresh = "5%", beta = 0.5, headroom = 0, probe_rtt_interval = "10s" }"#).options,
        opts(
            "bbr3",
            &[
                ("loss_thresh", Num(0.05)),
                ("beta", Num(0.5)),
                ("headroom", Num(0.0)),
                ("probe_rtt_interval", D(Dur::from_secs(10))),
            ]
        )
    );
}

#[test]
fn the_resolved_scenario_records_the_name_and_only_the_options_set() {
    let json = |s: &Scenario| serde_json::to_value(s).unwrap()["flows"][0].clone();
    // No options: the flow reads as it always did, `"cc": "prague"`.
    let f = json(&parse(PRAGUE_TABLE, &[]).unwrap());
    assert_eq!(f["cc"], "prague");
    assert!(f.get("cc_options").is_none(), "{f}");
    // Options: the name stays a string; what was set, in resolved units.
    let f = json(
        &parse(
            BASE,
            &[r#"flows[0].cc={ kind = "prague", rtt_scaling = "none", rtt_target = "10ms" }"#],
        )
        .unwrap(),
    );
    assert_eq!(f["cc"], "prague");
    assert_eq!(
        f["cc_options"],
        serde_json::json!({ "rtt_scaling": "none", "rtt_target": 10_000_000 })
    );
    // Written explicitly at its default, an option is still recorded.
    let f = json(&parse(BASE, &[r#"flows[0].cc={ kind = "cubic", hystart = true }"#]).unwrap());
    assert_eq!(f["cc_options"], serde_json::json!({ "hystart": true }));
}

#[test]
fn options_can_be_set_from_the_command_line() {
    // Into a table written in the file...
    let s = parse(PRAGUE_TABLE, &["flows[0].cc.rtt_scaling=none"]).unwrap();
    assert_eq!(
        s.flows[0].cc.options.get("rtt_scaling"),
        Some(Choice("none"))
    );
    // ... or as a whole table over a name.
    let s = parse(
        BASE,
        &[
            "flows[0].cc=prague",
            r#"flows[0].cc={ kind = "prague", rtt_target = "5ms" }"#,
        ],
    )
    .unwrap();
    assert_eq!(s.flows[0].cc.kind, "prague");
    assert!(s.flows[0].cc.has_options());
    // A name has no keys: the override says to set the table itself.
    let e = parse(
        BASE,
        &["flows[0].cc=prague", "flows[0].cc.rtt_scaling=none"],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set flows[0].cc.rtt_scaling=none: flows[0].cc is a string (\"prague\"), not a \
         table, so it has no key 'rtt_scaling'; set flows[0].cc itself (a table is written \
         { key = value, ... })"
    );
    // And an option of another kind is an unknown key there too.
    let e = parse(PRAGUE_TABLE, &["flows[0].cc.hystart=false"]).unwrap_err();
    assert_eq!(e.path(), Some("flows[0].cc.hystart"));
}

#[test]
fn the_backend_decides_which_names_exist() {
    // The emulator's kernel has no Prague: the name is refused whatever the form.
    let opts = ParseOptions {
        known_cc: vec!["reno", "cubic", "bbr"],
        trace_dirs: vec![],
    };
    for value in ["prague", r#"{ kind = "prague", rtt_scaling = "none" }"#] {
        let set = vec![format!("flows[0].cc={value}")];
        let e = parse_with(BASE, "t.toml", &set, &opts).unwrap_err();
        assert_eq!(e.problem(), Some(Problem::UnknownName), "{e}");
        assert!(
            e.to_string()
                .ends_with("unknown congestion control 'prague'; choose one of: reno, cubic, bbr"),
            "{e}"
        );
    }
}

/// (`--set` value, key path, kind of problem, the message or a fragment of it).
const ERRORS: &[(&str, &str, Problem, &str)] = &[
    (
        "flows[0].cc=vegas",
        "flows[0].cc",
        Problem::UnknownName,
        "flows[0].cc: unknown congestion control 'vegas'; choose one of: reno, cubic, dctcp, prague, bbr, bbr3",
    ),
    (
        r#"flows[0].cc={ kind = "vegas" }"#,
        "flows[0].cc.kind",
        Problem::UnknownName,
        "flows[0].cc.kind: unknown congestion control 'vegas'; choose one of",
    ),
    (
        "flows[0].cc={ hystart = false }",
        "flows[0].cc.kind",
        Problem::Missing,
        r#"flows[0].cc.kind: missing; write e.g. kind = "prague""#,
    ),
    (
        "flows[0].cc=3",
        "flows[0].cc",
        Problem::WrongType,
        r#"flows[0].cc: expected a name or a table with `kind`, found an integer (3); write e.g. "reno""#,
    ),
    (
        r#"flows[0].cc={ kind = "reno", beta = 0.5 }"#,
        "flows[0].cc.beta",
        Problem::UnknownKey,
        "flows[0].cc.beta: unknown key; valid keys here: kind",
    ),
    // cubic
    (
        r#"flows[0].cc={ kind = "cubic", rtt_scaling = "none" }"#,
        "flows[0].cc.rtt_scaling",
        Problem::UnknownKey,
        "flows[0].cc.rtt_scaling: unknown key; valid keys here: kind, beta, c, fast_convergence, tcp_friendliness, hystart, hystart_kind, alpha, grow_in_recovery",
    ),
    (
        r#"flows[0].cc={ kind = "cubic", beta = 717 }"#,
        "flows[0].cc.beta",
        Problem::BadValue,
        "flows[0].cc.beta: 717 is ambiguous: Linux's beta is in 1/1024 units (717 = 0.7); give a fraction; write e.g. 0.7",
    ),
    (
        r#"flows[0].cc={ kind = "cubic", beta = 1.0 }"#,
        "flows[0].cc.beta",
        Problem::BadValue,
        "flows[0].cc.beta: 1 is out of range; must be between 0 and 1 (exclusive); write e.g. 0.7",
    ),
    (
        r#"flows[0].cc={ kind = "cubic", beta = "fast" }"#,
        "flows[0].cc.beta",
        Problem::BadValue,
        "write e.g. 0.7",
    ),
    (
        r#"flows[0].cc={ kind = "cubic", c = 0 }"#,
        "flows[0].cc.c",
        Problem::BadValue,
        "flows[0].cc.c: 0 is out of range; must be above 0; write e.g. 0.4",
    ),
    (
        r#"flows[0].cc={ kind = "cubic", hystart = "off" }"#,
        "flows[0].cc.hystart",
        Problem::WrongType,
        r#"flows[0].cc.hystart: expected true or false, found a string ("off"); write e.g. true"#,
    ),
    (
        r#"flows[0].cc={ kind = "cubic", hystart_kind = "rfc" }"#,
        "flows[0].cc.hystart_kind",
        Problem::UnknownName,
        "flows[0].cc.hystart_kind: unknown hystart_kind 'rfc'; choose one of: linux, hystart++",
    ),
    // dctcp
    (
        r#"flows[0].cc={ kind = "dctcp", shift_g = 0 }"#,
        "flows[0].cc.shift_g",
        Problem::BadValue,
        "flows[0].cc.shift_g: 0 is out of range; must be between 1 and 16; write e.g. 4",
    ),
    (
        r#"flows[0].cc={ kind = "dctcp", shift_g = "4" }"#,
        "flows[0].cc.shift_g",
        Problem::WrongType,
        r#"flows[0].cc.shift_g: expected an integer, found a string ("4"); write e.g. 4"#,
    ),
    (
        r#"flows[0].cc={ kind = "dctcp", alpha_on_init = 1024 }"#,
        "flows[0].cc.alpha_on_init",
        Problem::BadValue,
        "flows[0].cc.alpha_on_init: 1024 is ambiguous: Linux's dctcp_alpha_on_init is in 1/1024 units (1024 = 1.0); give a fraction; write e.g. 1.0",
    ),
    (
        r#"flows[0].cc={ kind = "dctcp", alpha_on_init = 1.5 }"#,
        "flows[0].cc.alpha_on_init",
        Problem::BadValue,
        "write e.g. 1.0",
    ),
    // prague
    (
        r#"flows[0].cc={ kind = "prague", rtt_scaling = "fast" }"#,
        "flows[0].cc.rtt_scaling",
        Problem::UnknownName,
        "flows[0].cc.rtt_scaling: unknown rtt_scaling 'fast'; choose one of: none, rate, scalable, additive",
    ),
    (
        r#"flows[0].cc={ kind = "prague", rtt_target = 25 }"#,
        "flows[0].cc.rtt_target",
        Problem::BadValue,
        r#"flows[0].cc.rtt_target: 25 has no unit (a bare number is ambiguous); write e.g. "25ms""#,
    ),
    (
        r#"flows[0].cc={ kind = "prague", rtt_transition = -1 }"#,
        "flows[0].cc.rtt_transition",
        Problem::BadValue,
        "flows[0].cc.rtt_transition: -1 is out of range; must be between 0 and 4294967295; write e.g. 500",
    ),
    (
        r#"flows[0].cc={ kind = "prague", ecn_fallback = true }"#,
        "flows[0].cc.ecn_fallback",
        Problem::WrongType,
        r#"flows[0].cc.ecn_fallback: expected a string, found a boolean (true); write e.g. "off""#,
    ),
    (
        r#"flows[0].cc={ kind = "prague", ecn_fallback = "on" }"#,
        "flows[0].cc.ecn_fallback",
        Problem::UnknownName,
        "choose one of: off, detect_and_fallback, detect_only",
    ),
    (
        r#"flows[0].cc={ kind = "prague", burst_shift = 41 }"#,
        "flows[0].cc.burst_shift",
        Problem::BadValue,
        "must be between 0 and 40; write e.g. 12",
    ),
    (
        r#"flows[0].cc={ kind = "prague", hystart = false }"#,
        "flows[0].cc.hystart",
        Problem::UnknownKey,
        "flows[0].cc.hystart: unknown key; valid keys here: kind, rtt_scaling, rtt_target, rtt_transition, ecn_fallback, burst_shift, max_tso_segs",
    ),
    // bbr
    (
        r#"flows[0].cc={ kind = "bbr", cwnd_gain = 0 }"#,
        "flows[0].cc.cwnd_gain",
        Problem::BadValue,
        "flows[0].cc.cwnd_gain: 0 is out of range; must be between 1/256 and 100 (a factor); write e.g. 2.0",
    ),
    (
        r#"flows[0].cc={ kind = "bbr", extra_acked_gain = -1 }"#,
        "flows[0].cc.extra_acked_gain",
        Problem::BadValue,
        "must be 0 or between 1/256 and 100",
    ),
    (
        r#"flows[0].cc={ kind = "bbr", min_rtt_win = "0s" }"#,
        "flows[0].cc.min_rtt_win",
        Problem::BadValue,
        r#"flows[0].cc.min_rtt_win: must be greater than zero; write e.g. "10s""#,
    ),
    (
        r#"flows[0].cc={ kind = "bbr", loss_thresh = "2%" }"#,
        "flows[0].cc.loss_thresh",
        Problem::UnknownKey,
        "flows[0].cc.loss_thresh: unknown key; valid keys here: kind, high_gain, cwnd_gain, extra_acked_gain, min_rtt_win, probe_rtt_mode",
    ),
    // bbr3
    (
        r#"flows[0].cc={ kind = "bbr3", loss_thresh = "100%" }"#,
        "flows[0].cc.loss_thresh",
        Problem::BadValue,
        "flows[0].cc.loss_thresh: 1 is out of range; must be below 1; write e.g. 0.02",
    ),
    (
        r#"flows[0].cc={ kind = "bbr3", beta = 7 }"#,
        "flows[0].cc.beta",
        Problem::BadValue,
        "ambiguous",
    ),
    (
        r#"flows[0].cc={ kind = "bbr3", probe_rtt_interval = "fast" }"#,
        "flows[0].cc.probe_rtt_interval",
        Problem::BadValue,
        r#"flows[0].cc.probe_rtt_interval: "fast" is not a duration; write e.g. "5s""#,
    ),
];

#[test]
fn invalid_options_are_rejected_with_their_key_path() {
    for &(set, path, problem, message) in ERRORS {
        let e = parse(BASE, &[set]).expect_err(set);
        assert_eq!(e.path(), Some(path), "{set}: {e}");
        assert_eq!(e.problem(), Some(problem), "{set}: {e}");
        let text = e.to_string();
        assert!(
            text == message || (message.len() < 70 && text.contains(message)),
            "{set}:\n  got:  {text}\n  want: {message}"
        );
    }
}

#[test]
fn every_declared_option_reads_its_example_and_refuses_a_wrong_type_with_it() {
    for &kind in l4slab_cc::CC_NAMES {
        let params = l4slab_cc::param::params(kind).unwrap();
        for p in params {
            // The example (the default, shown to 3 decimals) is valid, is
            // recorded, and builds the same controller as the default — but
            // an option unset by default (Cubic's `alpha`) changes it.
            let spec = cc(&format!(
                r#"{{ kind = "{kind}", {} = {} }}"#,
                p.name,
                p.example()
            ));
            assert!(spec.has_options(), "{kind}.{}", p.name);
            let built = format!("{:?}", spec.options.build(1448, 10));
            let default = format!("{:?}", l4slab_cc::build(kind, 1448, 10).unwrap());
            let unset = matches!(p.default, l4slab_core::param::ParamValue::Unset { .. });
            assert_eq!(built == default, !unset, "{kind}.{}", p.name);
            // A table is never a valid value; the error shows the example.
            let set = format!(
                r#"flows[0].cc={{ kind = "{kind}", {} = {{ x = 1 }} }}"#,
                p.name
            );
            let e = parse(BASE, &[&set]).expect_err(&set);
            assert_eq!(e.path(), Some(format!("flows[0].cc.{}", p.name).as_str()));
            assert!(
                e.to_string()
                    .ends_with(&format!("; write e.g. {}", p.example()))
                    || matches!(
                        p.kind,
                        l4slab_cc::param::Kind::Flag | l4slab_cc::param::Kind::Choice(_)
                    ),
                "{kind}.{}: {e}",
                p.name
            );
        }
    }
}
