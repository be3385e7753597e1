//! The Wi-Fi tables of the docs are rendered from the declarations: the
//! EDCA keys (`l4slab_wifi::edca::PARAMS`), the cell's
//! (`config::CELL_PARAMS`), the AP's (`config::AP_PARAMS`), a link's PHY keys (`phy::PARAMS`), a station's
//! (`config::STATION_PARAMS`) and a scan's (`config::SCAN_PARAMS`) in
//! docs/models/wifi.md, the EDCA defaults per
//! access category (`edca::markdown_defaults`) there and in
//! docs/scenarios.md, so the docs cannot drift from the code.

use l4slab_core::param::{check_docs_table, markdown_table};
use l4slab_wifi::config::{AP_PARAMS, CELL_PARAMS, SCAN_PARAMS, STATION_PARAMS};
use l4slab_wifi::edca::{self, markdown_defaults};
use l4slab_wifi::phy;

#[test]
fn the_wifi_pages_hold_the_declared_tables() {
    for (params, what) in [
        (edca::PARAMS, "EDCA keys"),
        (CELL_PARAMS, "cell keys"),
        (AP_PARAMS, "AP keys"),
        (phy::PARAMS, "PHY keys"),
        (STATION_PARAMS, "station keys"),
        (SCAN_PARAMS, "scan keys"),
    ] {
        check_docs_table("models/wifi.md", what, &markdown_table(params)).unwrap();
    }
    for page in ["models/wifi.md", "scenarios.md"] {
        check_docs_table(page, "EDCA defaults", &markdown_defaults()).unwrap();
    }
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
        AP_PARAMS,
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
