//! The Wi-Fi tables of the docs are rendered from the declarations: the
//! EDCA keys (`l4slab_wifi::edca::PARAMS`), the cell's
//! (`config::CELL_PARAMS`), a link's PHY keys (`phy::PARAMS`), a station's
//! (`config::STATION_PARAMS`) and a scan's (`config::SCAN_PARAMS`) in
//! docs/models/wifi.md, the EDCA defaults per
//! access category (`edca::markdown_defaults`) there and in
//! docs/scenarios.md, so the docs cannot drift from the code.

use std::path::PathBuf;

use l4slab_core::param::markdown_table;
use l4slab_wifi::config::{CELL_PARAMS, SCAN_PARAMS, STATION_PARAMS};
use l4slab_wifi::edca::{self, markdown_defaults};
use l4slab_wifi::phy;

fn docs(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(rel);
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
fn the_wifi_pages_hold_the_declared_tables() {
    let model = docs("models/wifi.md");
    assert_holds(
        &model,
        &markdown_table(edca::PARAMS),
        "models/wifi.md (EDCA keys)",
    );
    assert_holds(
        &model,
        &markdown_table(CELL_PARAMS),
        "models/wifi.md (cell keys)",
    );
    for (params, what) in [
        (phy::PARAMS, "models/wifi.md (PHY keys)"),
        (STATION_PARAMS, "models/wifi.md (station keys)"),
        (SCAN_PARAMS, "models/wifi.md (scan keys)"),
    ] {
        assert_holds(&model, &markdown_table(params), what);
    }
    assert_holds(
        &model,
        &markdown_defaults(),
        "models/wifi.md (EDCA defaults)",
    );
    assert_holds(
        &docs("scenarios.md"),
        &markdown_defaults(),
        "scenarios.md (EDCA defaults)",
    );
}

#[test]
fn the_declared_defaults_are_best_efforts_and_valid() {
    let be = edca::EdcaSet::STATION.get(edca::Ac::Be);
    let d = |i: usize| edca::PARAMS[i].default;
    assert_eq!(
        (d(0).int(), d(1).int(), d(2).int(), d(3).dur()),
        (
            i64::from(be.aifsn),
            i64::from(be.cw_min),
            i64::from(be.cw_max),
            be.txop
        )
    );
    let all = [
        edca::PARAMS,
        CELL_PARAMS,
        phy::PARAMS,
        STATION_PARAMS,
        SCAN_PARAMS,
    ];
    for p in all.into_iter().flatten() {
        assert_eq!(p.check(p.default), Ok(()), "{}", p.name);
    }
    assert!(markdown_defaults()
        .contains("| `vi` (video) | 1 / 7 / 15 / 3.008 ms | 2 / 7 / 15 / 3.008 ms |"));
}

/// `L4SLAB_PRINT_PARAM_TABLES=dir cargo test -p l4slab-wifi --test docs_params`
/// writes the rendered tables to `dir/wifi.*.md` (to paste into the docs).
#[test]
fn print_tables_on_request() {
    let Some(dir) = std::env::var_os("L4SLAB_PRINT_PARAM_TABLES") else {
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::write(dir.join("wifi.edca.md"), markdown_table(edca::PARAMS)).unwrap();
    std::fs::write(dir.join("wifi.cell.md"), markdown_table(CELL_PARAMS)).unwrap();
    std::fs::write(dir.join("wifi.defaults.md"), markdown_defaults()).unwrap();
    std::fs::write(dir.join("wifi.phy.md"), markdown_table(phy::PARAMS)).unwrap();
    std::fs::write(dir.join("wifi.station.md"), markdown_table(STATION_PARAMS)).unwrap();
    std::fs::write(dir.join("wifi.scan.md"), markdown_table(SCAN_PARAMS)).unwrap();
}
