//! The parameter tables of the docs are rendered from the declarations
//! (`l4slab_qdisc::param`): each `docs/models/<qdisc>.md` holds exactly its
//! discipline's table, `docs/scenarios.md` the table of every discipline's
//! keys, so the docs cannot drift from the code.

use std::path::PathBuf;

use l4slab_core::param::markdown_table;
use l4slab_qdisc::param::{markdown_options_table, params, QDISC_NAMES};

fn docs(rel: &str) -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    (path, text)
}

/// `text` holds `table` whole, once (`l4slab_core::param::docs_table_problem`).
fn assert_holds(text: &str, table: &str, what: &str) {
    if let Some(problem) = l4slab_core::param::docs_table_problem(text, table) {
        panic!("{what} {problem}");
    }
}

#[test]
fn each_model_page_holds_its_declared_parameter_table() {
    for &name in QDISC_NAMES {
        let (path, text) = docs(&format!("models/{name}.md"));
        assert_holds(
            &text,
            &markdown_table(params(name).unwrap()),
            &format!("{path:?}"),
        );
    }
}

#[test]
fn the_scenario_reference_holds_every_qdiscs_keys() {
    let (path, text) = docs("scenarios.md");
    assert_holds(&text, &markdown_options_table(), &format!("{path:?}"));
}

#[test]
fn the_rendered_tables_have_one_row_per_parameter_with_range_default_and_source() {
    let t = markdown_table(params("fq_codel").unwrap());
    let rows: Vec<&str> = t.lines().collect();
    assert_eq!(rows.len(), 2 + 11);
    assert!(
        rows[3].starts_with("| `flows` | integer 1..=65536 | `1024` | Linux `fq_codel_init`"),
        "{}",
        rows[3]
    );
    let all = markdown_options_table();
    assert!(all.contains("| `max_burst` (alias `burst`) | duration ≥ 0 | `\"150ms\"` |"));
    assert!(all.contains("| `ce_threshold` | duration ≥ 0 | unset (e.g. `\"1ms\"`) |"));
    assert_eq!(
        all.lines().count(),
        2 + QDISC_NAMES
            .iter()
            .map(|q| params(q).unwrap().len())
            .sum::<usize>()
    );
}

/// `L4SLAB_PRINT_PARAM_TABLES=dir cargo test -p l4slab-qdisc --test docs_params`
/// writes the rendered tables to `dir/<name>.md` (to paste into the docs).
#[test]
fn print_tables_on_request() {
    let Some(dir) = std::env::var_os("L4SLAB_PRINT_PARAM_TABLES") else {
        return;
    };
    let dir = PathBuf::from(dir);
    for &name in QDISC_NAMES {
        let t = markdown_table(params(name).unwrap());
        std::fs::write(dir.join(format!("{name}.md")), t).unwrap();
    }
    std::fs::write(dir.join("scenarios.md"), markdown_options_table()).unwrap();
}
