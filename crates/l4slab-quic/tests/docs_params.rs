//! The table of the `[flows.transport]` keys a QUIC flow applies, in
//! docs/models/quic.md, is rendered from the declarations
//! (`l4slab_quic::params::PARAMS`), so the docs cannot drift from the code.

use std::path::PathBuf;

use l4slab_core::param::{docs_table_problem, markdown_table};
use l4slab_quic::params::PARAMS;

#[test]
fn the_quic_page_holds_the_applied_keys_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/models/quic.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    if let Some(problem) = docs_table_problem(&text, &markdown_table(PARAMS)) {
        panic!("docs/models/quic.md: {problem}");
    }
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
