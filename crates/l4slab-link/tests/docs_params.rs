//! The loss models' key tables in docs/models/loss.md and the trace table's
//! in docs/models/trace.md are rendered from their declarations
//! (`l4slab_link::loss::MODELS`, `l4slab_link::trace::PARAMS`), so the docs
//! cannot drift from the code.

use std::path::PathBuf;

use l4slab_core::param::markdown_table;
use l4slab_link::{loss, trace};

fn page(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/models")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// `text` holds `table` whole: every row, then a blank line (no extra row).
fn assert_holds(text: &str, table: &str, what: &str) {
    let table = table.trim_end();
    assert!(
        text.contains(&format!("\n{table}\n\n")),
        "{what} lacks its table; it should read:\n\n{table}"
    );
}

#[test]
fn the_loss_page_holds_each_models_keys() {
    let text = page("loss.md");
    for &(kind, params) in loss::MODELS {
        if !params.is_empty() {
            assert_holds(&text, &markdown_table(params), &format!("loss.md ({kind})"));
        }
    }
}

#[test]
fn the_trace_page_holds_the_rate_tables_keys() {
    assert_holds(
        &page("trace.md"),
        &markdown_table(trace::PARAMS),
        "trace.md",
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
