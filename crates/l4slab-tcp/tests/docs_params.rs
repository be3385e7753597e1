//! The table of `[flows.transport]` in docs/scenarios.md is rendered from
//! the declarations (`l4slab_tcp::config::PARAMS`), so the docs cannot drift
//! from the code.

use l4slab_core::param::{check_docs_table, markdown_table};
use l4slab_tcp::config::PARAMS;

#[test]
fn the_scenario_page_holds_the_transport_keys_table() {
    check_docs_table(
        "scenarios.md",
        "TCP transport keys",
        &markdown_table(PARAMS),
    )
    .unwrap();
}

#[test]
fn the_rendered_table_shows_range_default_and_source() {
    let t = markdown_table(PARAMS);
    assert!(
        t.contains("| `initial_window` | integer 1..=4294967295 | `10` | RFC 6928 §2"),
        "{t}"
    );
    assert!(
        t.contains("| `send_buffer` | bytes ≥ 1 B (a size: `\"10KB\"`) | `\"4MiB\"` |"),
        "{t}"
    );
    assert!(
        t.contains(
            "| `notsent_lowat` | bytes ≥ 1 B (a size: `\"10KB\"`) | unset (e.g. `\"128KiB\"`) |"
        ),
        "{t}"
    );
}
