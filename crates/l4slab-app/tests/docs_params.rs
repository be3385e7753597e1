//! The tables of docs/apps.md are rendered from the declarations
//! (`l4slab_app::registry`): the index of app kinds, each kind's keys, and
//! the keys of the RTP transport, so the docs cannot drift from the code.

use l4slab_app::framed::TRANSPORT_PARAMS;
use l4slab_app::registry::{markdown_index, markdown_table, APP_NAMES};
use l4slab_core::param::{self, check_docs_table, docs_page};

#[test]
fn the_app_page_holds_the_index_and_each_kinds_keys() {
    check_docs_table("apps.md", "app kinds", &markdown_index()).unwrap();
    let text = docs_page("apps.md").unwrap();
    for &name in APP_NAMES {
        if let Some(t) = markdown_table(name) {
            check_docs_table("apps.md", &format!("{name} keys"), &t).unwrap();
            assert!(
                text.contains(&format!("\n## `{name}`\n")),
                "{name}: no section"
            );
        }
    }
    let rtp = param::markdown_table(&TRANSPORT_PARAMS);
    check_docs_table("apps.md", "RTP transport keys", &rtp).unwrap();
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
