//! The table of the `[flows.transport]` keys a QUIC flow applies, in
//! docs/models/quic.md, is rendered from the declarations
//! (`l4slab_quic::params::PARAMS`), so the docs cannot drift from the code.

use l4slab_core::param::{check_docs_table, markdown_table};
use l4slab_quic::params::PARAMS;

#[test]
fn the_quic_page_holds_the_applied_keys_table() {
    check_docs_table("models/quic.md", "transport keys", &markdown_table(PARAMS)).unwrap();
}

#[test]
fn the_rendered_table_shows_quics_ranges_and_sources() {
    let t = markdown_table(PARAMS);
    assert!(
        t.contains("| `mss` | integer 1200..=9000 | `1200` | RFC 9000 §14"),
        "{t}"
    );
    assert!(
        t.contains(
            "| `initial_window` | integer 2..=4294967295 | unset (e.g. `10`) | RFC 9002 §7.2"
        ),
        "{t}"
    );
}
