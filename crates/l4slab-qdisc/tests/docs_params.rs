//! The parameter tables of the docs are rendered from the declarations
//! (`l4slab_qdisc::param`): each `docs/models/<qdisc>.md` holds exactly its
//! discipline's table, `docs/scenarios.md` the table of every discipline's
//! keys, so the docs cannot drift from the code.

use l4slab_core::param::{check_docs_table, markdown_table};
use l4slab_qdisc::param::{markdown_options_table, params, QDISC_NAMES};

#[test]
fn each_model_page_holds_its_declared_parameter_table() {
    for &name in QDISC_NAMES {
        let table = markdown_table(params(name).unwrap());
        check_docs_table(&format!("models/{name}.md"), "parameters", &table).unwrap();
    }
}

#[test]
fn the_scenario_reference_holds_every_qdiscs_keys() {
    check_docs_table("scenarios.md", "qdisc keys", &markdown_options_table()).unwrap();
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
