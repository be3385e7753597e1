//! The parameter tables of the docs are rendered from the declarations
//! (`l4slab_cc::param`): each `docs/models/<name>.md` holds exactly its
//! controller's table, `docs/scenarios.md` the table of every controller's
//! options, so the docs cannot drift from the code.

use std::path::PathBuf;

use l4slab_cc::param::{markdown_options_table, markdown_table, params};

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
    for &name in l4slab_cc::CC_NAMES {
        let (path, text) = docs(&format!("models/{name}.md"));
        let ps = params(name).unwrap();
        let table = markdown_table(ps);
        if ps.is_empty() {
            let header = table.lines().next().unwrap();
            assert!(
                !text.contains(header),
                "{path:?} has a table but {name} declares no parameters"
            );
        } else {
            assert_holds(&text, &table, &format!("{path:?}"));
        }
    }
}

#[test]
fn the_scenario_reference_holds_every_controllers_options() {
    let (path, text) = docs("scenarios.md");
    assert_holds(&text, &markdown_options_table(), &format!("{path:?}"));
}

#[test]
fn the_rendered_table_has_one_row_per_parameter_with_its_range_and_default() {
    let t = markdown_table(params("dctcp").unwrap());
    let rows: Vec<&str> = t.lines().collect();
    assert_eq!(rows.len(), 2 + 3);
    assert!(
        rows[2].starts_with(
            "| `shift_g` | integer 1..=16 | `4` | Linux `tcp_dctcp` `dctcp_shift_g = 4`"
        ),
        "{}",
        rows[2]
    );
}

/// `L4SLAB_PRINT_PARAM_TABLES=dir cargo test -p l4slab-cc --test docs_params`
/// writes the rendered tables to `dir/<name>.md` (to paste into the docs).
#[test]
fn print_tables_on_request() {
    let Some(dir) = std::env::var_os("L4SLAB_PRINT_PARAM_TABLES") else {
        return;
    };
    let dir = PathBuf::from(dir);
    for &name in l4slab_cc::CC_NAMES {
        let t = markdown_table(params(name).unwrap());
        std::fs::write(dir.join(format!("{name}.md")), t).unwrap();
    }
    std::fs::write(dir.join("scenarios.md"), markdown_options_table()).unwrap();
}
