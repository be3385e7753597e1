//! The loss models' key tables in docs/models/loss.md, the trace table's
//! in docs/models/trace.md and the link table's (`[bottleneck]`, a host's
//! `access`) in docs/scenarios.md are rendered from their declarations
//! (`l4slab_link::loss::MODELS`, `l4slab_link::trace::PARAMS`,
//! `l4slab_link::config::PARAMS`), so the docs cannot drift from the code.

use l4slab_core::param::{check_docs_table, markdown_table};
use l4slab_link::{config, loss, trace};

#[test]
fn the_loss_page_holds_each_models_keys() {
    for &(kind, params) in loss::MODELS {
        if !params.is_empty() {
            let what = format!("{kind} keys");
            check_docs_table("models/loss.md", &what, &markdown_table(params)).unwrap();
        }
    }
}

#[test]
fn the_trace_page_holds_the_rate_tables_keys() {
    check_docs_table("models/trace.md", "keys", &markdown_table(trace::PARAMS)).unwrap();
}

#[test]
fn the_scenario_page_holds_the_link_keys() {
    let table = markdown_table(config::PARAMS);
    check_docs_table("scenarios.md", "link keys", &table).unwrap();
    assert!(
        table
            .contains("| `qdisc` | a name or a table with `kind` ([below](#qdisc)) | `\"fifo\"` |"),
        "{table}"
    );
}

#[test]
fn the_declared_defaults_are_valid_and_a_probability_is_checked() {
    for &(_, params) in loss::MODELS {
        for p in params {
            assert_eq!(p.check(p.default), Ok(()), "{}", p.name);
        }
    }
    let e = loss::GE_K
        .check(l4slab_core::param::ParamValue::Num(1.5))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "k: 1.5 is out of range; must be between 0 and 1"
    );
    // The Gilbert-Elliott defaults are netem's (`loss gemodel p r`, 1-h = 100 %, 1-k = 0 %).
    assert_eq!(
        (loss::GE_K.default.num(), loss::GE_H.default.num()),
        (1.0, 0.0)
    );
}
