//! The ECN keys (docs/scenarios.md, docs/models/ecn.md): `[[flows]] ecn`,
//! `[flows.transport] ecn_codepoint` and `ecn_rewrite` per bottleneck
//! direction — defaults, resolution, the resolved JSON, and every error path.

mod common;

use common::{base_with, parse_set, BASE};
use l4slab_core::Ecn;
use l4slab_link::EcnRewrite;
use l4slab_scenario::{EcnSpec, Problem};

#[test]
fn defaults_leave_ecn_to_the_backend_and_the_path_clean() {
    let s = base_with(&[]);
    assert_eq!(s.flows[0].ecn, None);
    assert_eq!(s.flows[0].transport.ecn_codepoint, None);
    assert_eq!(s.bottleneck.down.ecn_rewrite, EcnRewrite::None);
    assert_eq!(s.bottleneck.up.ecn_rewrite, EcnRewrite::None);
}

#[test]
fn ecn_modes_codepoints_and_rewrites_resolve() {
    for (text, want) in [
        ("off", EcnSpec::Off),
        ("classic", EcnSpec::Classic),
        ("accecn", EcnSpec::AccEcn),
    ] {
        let s = base_with(&[&format!("flows[0].ecn={text}")]);
        assert_eq!(s.flows[0].ecn, Some(want));
    }
    for (text, want) in [
        ("ect0", Ecn::Ect0),
        ("ect1", Ecn::Ect1),
        ("not_ect", Ecn::NotEct),
    ] {
        let s = base_with(&[&format!("flows[0].transport.ecn_codepoint={text}")]);
        assert_eq!(s.flows[0].transport.ecn_codepoint, Some(want));
    }
    for r in EcnRewrite::ALL {
        let s = base_with(&[&format!("bottleneck.ecn_rewrite={}", r.name())]);
        assert_eq!(
            (s.bottleneck.down.ecn_rewrite, s.bottleneck.up.ecn_rewrite),
            (r, r)
        );
    }
    // Per direction: the data path of a download only.
    let s = base_with(&["bottleneck.down.ecn_rewrite=remark"]);
    assert_eq!(s.bottleneck.down.ecn_rewrite, EcnRewrite::RemarkEct1ToEct0);
    assert_eq!(s.bottleneck.up.ecn_rewrite, EcnRewrite::None);
    let s = base_with(&[
        "bottleneck.ecn_rewrite=bleach",
        "bottleneck.up.ecn_rewrite=none",
    ]);
    assert_eq!(s.bottleneck.down.ecn_rewrite, EcnRewrite::Bleach);
    assert_eq!(s.bottleneck.up.ecn_rewrite, EcnRewrite::None);
    // count copies the mode to every flow.
    let s = base_with(&["flows[0].ecn=accecn", "flows[0].count=3"]);
    assert!(s.flows.iter().all(|f| f.ecn == Some(EcnSpec::AccEcn)));
}

#[test]
fn resolved_json_uses_the_scenario_names() {
    let s = base_with(&[
        "flows[0].ecn=accecn",
        "flows[0].transport.ecn_codepoint=ect1",
        "bottleneck.down.ecn_rewrite=ce_all",
    ]);
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["flows"][0]["ecn"], "accecn");
    assert_eq!(j["flows"][0]["transport"]["ecn_codepoint"], "ect1");
    assert_eq!(j["bottleneck"]["down"]["ecn_rewrite"], "ce_all");
    assert_eq!(j["bottleneck"]["up"]["ecn_rewrite"], "none");
    let j = serde_json::to_value(base_with(&[])).unwrap();
    assert!(j["flows"][0]["ecn"].is_null());
}

#[test]
fn ecn_errors_name_their_key_path_and_the_choices() {
    let cases: &[(&[&str], &str, Problem, &str)] = &[
        (
            &["flows[0].ecn=l4s"],
            "flows[0].ecn",
            Problem::UnknownName,
            "flows[0].ecn: unknown ECN mode 'l4s'; choose one of: off, classic, accecn",
        ),
        (
            &["flows[0].ecn=true"],
            "flows[0].ecn",
            Problem::WrongType,
            "flows[0].ecn: expected a string, found a boolean (true); write e.g. \"classic\"",
        ),
        (
            &["flows[1].cc=reno", "flows[1].ecn=ECN"],
            "flows[1].ecn",
            Problem::UnknownName,
            "unknown ECN mode 'ECN'",
        ),
        (
            &["flows[0].transport.ecn_codepoint=ce"],
            "flows[0].transport.ecn_codepoint",
            Problem::UnknownName,
            "flows[0].transport.ecn_codepoint: unknown ecn_codepoint 'ce'; choose one of: not_ect, ect0, ect1",
        ),
        (
            &["flows[0].transport.ecn_codepoint=1"],
            "flows[0].transport.ecn_codepoint",
            Problem::WrongType,
            "expected a string, found an integer (1); write e.g. \"not_ect\"",
        ),
        (
            &["bottleneck.ecn_rewrite=strip"],
            "bottleneck.ecn_rewrite",
            Problem::UnknownName,
            "bottleneck.ecn_rewrite: unknown ECN rewrite 'strip'; choose one of: none, bleach, remark, drop_ect, ce_all",
        ),
        (
            &["bottleneck.down.ecn_rewrite={ kind = \"bleach\" }"],
            "bottleneck.down.ecn_rewrite",
            Problem::WrongType,
            "bottleneck.down.ecn_rewrite: expected a string, found a table; write e.g. \"bleach\"",
        ),
        (
            &["bottleneck.up.ecn_rewrite=remark_ect1_to_ect0"],
            "bottleneck.up.ecn_rewrite",
            Problem::UnknownName,
            "unknown ECN rewrite",
        ),
    ];
    for (sets, path, problem, fragment) in cases {
        let e = parse_set(BASE, sets).expect_err(&format!("{sets:?} parsed"));
        let msg = e.to_string();
        assert_eq!(e.path(), Some(*path), "{msg}");
        assert_eq!(e.problem(), Some(*problem), "{msg}");
        assert!(
            msg.contains(fragment),
            "{sets:?}:\n got {msg}\nwant {fragment}"
        );
    }
    // The new keys are listed among the valid ones.
    let e = parse_set(BASE, &["flows[0].ecm=accecn"]).unwrap_err();
    assert!(e.to_string().contains(", ecn"), "{e}");
    let e = parse_set(BASE, &["flows[0].transport.ecn=accecn"]).unwrap_err();
    assert!(e.to_string().contains("ecn_codepoint"), "{e}");
    let e = parse_set(BASE, &["bottleneck.down.rewrite=bleach"]).unwrap_err();
    assert!(e.to_string().contains("ecn_rewrite"), "{e}");
}
