//! The parameter tables of the docs are rendered from the declarations
//! (`l4slab_cc::param`): each `docs/models/<name>.md` holds exactly its
//! controller's table, `docs/scenarios.md` the table of every controller's
//! options, so the docs cannot drift from the code.

use l4slab_cc::param::{markdown_options_table, markdown_table, params};
use l4slab_core::param::{check_docs_table, docs_page};

#[test]
fn each_model_page_holds_its_declared_parameter_table() {
    for &name in l4slab_cc::CC_NAMES {
        let page = format!("models/{name}.md");
        let ps = params(name).unwrap();
        let table = markdown_table(ps);
        if ps.is_empty() {
            let header = table.lines().next().unwrap();
            assert!(
                !docs_page(&page).unwrap().contains(header),
                "docs/{page} has a table but {name} declares no parameters"
            );
        } else {
            check_docs_table(&page, "parameters", &table).unwrap();
        }
    }
}

#[test]
fn the_scenario_reference_holds_every_controllers_options() {
    check_docs_table("scenarios.md", "cc options", &markdown_options_table()).unwrap();
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
