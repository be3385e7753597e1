//! The tables of docs/apps.md are rendered from the declarations
//! (`l4slab_app::registry`): the index of app kinds, each kind's keys, and
//! the keys of the RTP transport, so the docs cannot drift from the code.

use std::path::PathBuf;

use l4slab_app::framed::TRANSPORT_PARAMS;
use l4slab_app::registry::{markdown_index, markdown_table, APP_NAMES};
use l4slab_core::param;

fn apps_md() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/apps.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// `text` holds `table` whole: every row, then a blank line (no extra row).
fn assert_holds(text: &str, table: &str, what: &str) {
    let table = table.trim_end();
    assert!(
        text.contains(&format!("\n{table}\n\n")),
        "docs/apps.md lacks the table of {what}; it should read:\n\n{table}"
    );
}

#[test]
fn the_app_page_holds_the_index_and_each_kinds_keys() {
    let text = apps_md();
    assert_holds(&text, &markdown_index(), "the app kinds");
    for &name in APP_NAMES {
        if let Some(t) = markdown_table(name) {
            assert_holds(&text, &t, name);
            assert!(
                text.contains(&format!("\n## `{name}`\n")),
                "{name}: no section"
            );
        }
    }
    assert_holds(
        &text,
        &param::markdown_table(&TRANSPORT_PARAMS),
        "the RTP transport",
    );
}

#[test]
fn the_rendered_tables_show_range_default_and_source() {
    let cbr = markdown_table("cbr").unwrap();
    assert!(
        cbr.contains("| `size` | bytes 1 B..=65507 B (a size: `\"1200B\"`) | `\"1200B\"` |"),
        "{cbr}"
    );
    assert!(
        cbr.contains("| `rate` | rate > 0 | `\"1Mbit\"` | `iperf -u`'s default"),
        "{cbr}"
    );
    let file = markdown_table("file").unwrap();
    assert!(file.contains("| `size` | bytes ≥ 1 B"), "{file}");
    assert!(
        file.contains("| unset (e.g. `\"10MB\"`) | required |"),
        "{file}"
    );
    assert!(markdown_table("bulk").is_none());
    assert!(!markdown_table("video_call").unwrap().contains("media_cc"));
}

/// `L4SLAB_PRINT_PARAM_TABLES=dir cargo test -p l4slab-app --test docs_params`
/// writes the rendered tables to `dir/apps.<name>.md` (to paste into the docs).
#[test]
fn print_tables_on_request() {
    let Some(dir) = std::env::var_os("L4SLAB_PRINT_PARAM_TABLES") else {
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::write(dir.join("apps.index.md"), markdown_index()).unwrap();
    std::fs::write(
        dir.join("apps.rtp.md"),
        param::markdown_table(&TRANSPORT_PARAMS),
    )
    .unwrap();
    for &name in APP_NAMES {
        if let Some(t) = markdown_table(name) {
            std::fs::write(dir.join(format!("apps.{name}.md")), t).unwrap();
        }
    }
}
