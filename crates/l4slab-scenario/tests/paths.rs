//! `[[hosts.NAME.paths]]` and `racing`: a multi-homed client host, its paths
//! in preference order, their outages, and the racing delay; bad input is a
//! key-path error.

mod common;

use common::parse;
use l4slab_core::{Dur, Rate, Time};
use l4slab_scenario::paths::DEFAULT_RACING_DELAY;
use l4slab_scenario::Outage;

const BASE: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"

[[flows]]
cc = "cubic"
"#;

const PHONE: &str = r#"
[hosts.phone]
side = "client"

[[hosts.phone.paths]]
name = "wifi"
access_delay = "5ms"
access = { rate = "50Mbit", buffer = "100pkt" }
outages = [{ start = "3s", end = "4s" }, { start = "1s", end = "2s" }]

[[hosts.phone.paths]]
name = "lte"
access_delay = "30ms"
access = { rate = "10Mbit", buffer = "100pkt", up = { rate = "5Mbit" } }
"#;

fn with(extra: &str) -> Result<l4slab_scenario::Scenario, l4slab_scenario::ScenarioError> {
    parse(&format!("{BASE}{extra}"))
}

#[test]
fn two_paths_in_the_order_written_with_sorted_outages_and_the_rfc_8305_delay() {
    let s = with(PHONE).unwrap();
    let phone = &s.hosts[0];
    assert_eq!(phone.name, "phone");
    let names: Vec<_> = phone.paths.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["wifi", "lte"]);
    assert_eq!(phone.racing, Some(Dur::from_millis(250)));
    assert_eq!(DEFAULT_RACING_DELAY, Dur::from_millis(250));
    let (wifi, lte) = (&phone.paths[0], &phone.paths[1]);
    assert_eq!(
        wifi.access.down.as_ref().unwrap().delay,
        Dur::from_millis(5)
    );
    let t = |s| Time::ZERO + Dur::from_secs(s);
    assert_eq!(
        wifi.outages,
        [
            Outage {
                start: t(1),
                end: t(2)
            },
            Outage {
                start: t(3),
                end: t(4)
            }
        ]
    );
    assert_eq!(lte.access.up.as_ref().unwrap().rate, Rate::from_mbps(5));
    assert_eq!(lte.access.down.as_ref().unwrap().rate, Rate::from_mbps(10));
    // In the resolved scenario (summary.json) with the key names.
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["hosts"][0]["paths"][1]["name"], "lte");
    assert_eq!(v["hosts"][0]["racing"], 250_000_000);
    // A host without paths resolves as before: no `paths`, no `racing`.
    assert!(v["hosts"][1].get("paths").is_none() && v["hosts"][1].get("racing").is_none());
}

#[test]
fn racing_is_a_delay_true_or_false() {
    let set = |r: &str| with(&phone_with(&format!("racing = {r}")));
    assert_eq!(
        set("\"100ms\"").unwrap().hosts[0].racing,
        Some(Dur::from_millis(100))
    );
    assert_eq!(
        set("true").unwrap().hosts[0].racing,
        Some(Dur::from_millis(250))
    );
    assert_eq!(set("false").unwrap().hosts[0].racing, None);
}

fn err(extra: &str) -> (String, String) {
    let e = with(extra).expect_err("expected an error");
    (e.path().unwrap_or("").to_string(), e.to_string())
}

fn phone_with(line: &str) -> String {
    PHONE.replace("side = \"client\"", &format!("side = \"client\"\n{line}"))
}

#[test]
fn bad_input_names_its_key_path() {
    let cases: Vec<(String, &str, &str)> = vec![
        (phone_with("racing = \"0ms\""), "hosts.phone.racing", ""),
        (phone_with("racing = \"-5ms\""), "hosts.phone.racing", ""),
        (phone_with("racing = 250"), "hosts.phone.racing", "no unit"),
        (
            phone_with("access_delay = \"5ms\""),
            "hosts.phone.access_delay",
            "its paths",
        ),
        (
            PHONE.replace("name = \"lte\"", "name = \"wifi\""),
            "hosts.phone.paths[1].name",
            "two paths must differ",
        ),
        (
            PHONE.replace("side = \"client\"", "side = \"server\""),
            "hosts.phone.paths",
            "client-side",
        ),
        (
            PHONE.replace(
                "access = { rate = \"50Mbit\", buffer = \"100pkt\" }",
                "access = { up = { rate = \"50Mbit\", buffer = \"100pkt\" } }",
            ),
            "hosts.phone.paths[0].access.down.rate",
            "both directions",
        ),
        (
            PHONE.replace("access = { rate = \"50Mbit\", buffer = \"100pkt\" }\n", ""),
            "hosts.phone.paths[0].access",
            "missing",
        ),
        (
            PHONE.replace(
                "{ start = \"1s\", end = \"2s\" }",
                "{ start = \"1s\", end = \"1s\" }",
            ),
            "hosts.phone.paths[0].outages[1].end",
            "not after",
        ),
        (
            PHONE.replace(
                "{ start = \"1s\", end = \"2s\" }",
                "{ start = \"1s\", end = \"3.5s\" }",
            ),
            "hosts.phone.paths[0].outages[0]",
            "overlaps",
        ),
        (
            PHONE
                .split("[[hosts.phone.paths]]\nname = \"lte\"")
                .next()
                .unwrap()
                .to_string(),
            "hosts.phone.paths",
            "exactly two",
        ),
        (
            "[hosts.laptop]\nside = \"client\"\nracing = \"250ms\"\n".to_string(),
            "hosts.laptop.racing",
            "two ways out",
        ),
        (
            PHONE.replace("name = \"lte\"", "name = \"lte\"\nrate = \"1Mbit\""),
            "hosts.phone.paths[1].rate",
            "unknown",
        ),
    ];
    for (text, path, contains) in cases {
        let (p, msg) = err(&text);
        assert_eq!(p, path, "{msg}\n{text}");
        assert!(msg.contains(contains), "{msg}");
    }
}

/// The section of docs/scenarios.md on paths.
fn docs_section() -> String {
    let docs = l4slab_core::param::docs_page("scenarios.md").unwrap();
    let start = docs
        .find("### `paths`: a multi-homed host")
        .expect("the section");
    let end = start
        + docs[start..]
            .find("## Wi-Fi cell")
            .expect("the next section");
    docs[start..end].to_string()
}

#[test]
fn the_docs_example_resolves_and_its_errors_are_the_ones_printed() {
    let section = docs_section();
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let text = format!("{BASE}{block}");
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let phone = &s.hosts[0];
    assert_eq!(phone.racing, Some(Dur::from_millis(250)));
    assert_eq!(phone.paths[0].outages.len(), 1);
    assert!(phone.paths[1]
        .access
        .down
        .as_ref()
        .unwrap()
        .rate_trace
        .is_some());
    let printed: Vec<&str> = section
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap()
        .lines()
        .collect();
    let got = [
        err(&phone_with("racing = \"0ms\"")).1,
        err(&PHONE.replace("name = \"lte\"", "name = \"wifi\"")).1,
        err(&PHONE.replace(
            "access = { rate = \"50Mbit\", buffer = \"100pkt\" }",
            "access = { up = { rate = \"50Mbit\", buffer = \"100pkt\" } }",
        ))
        .1,
        err("[hosts.laptop]\nside = \"client\"\nracing = \"250ms\"\n").1,
    ];
    assert_eq!(printed, got);
}

#[test]
fn rate_changes_are_sorted_and_two_at_one_time_are_refused() {
    use l4slab_scenario::RateChange;
    let s = with(&PHONE.replace(
        "name = \"lte\"",
        "name = \"lte\"\nrate_changes = [{ at = \"5s\", rate = \"1Mbit\" }, { at = \"2s\", rate = \"3Mbit\" }]",
    ))
    .unwrap();
    let t = |s| Time::ZERO + Dur::from_secs(s);
    assert_eq!(
        s.hosts[0].paths[1].rate_changes,
        [
            RateChange {
                at: t(2),
                rate: Rate::from_mbps(3)
            },
            RateChange {
                at: t(5),
                rate: Rate::from_mbps(1)
            }
        ]
    );
    for (changes, path, contains) in [
        (
            "[{ at = \"2s\", rate = \"1Mbit\" }, { at = \"2s\", rate = \"3Mbit\" }]",
            "hosts.phone.paths[1].rate_changes[1].at",
            "same time",
        ),
        (
            "[{ at = \"2s\", rate = \"0Mbit\" }]",
            "hosts.phone.paths[1].rate_changes[0].rate",
            "",
        ),
        (
            "[{ at = \"2s\" }]",
            "hosts.phone.paths[1].rate_changes[0].rate",
            "missing",
        ),
        (
            "[{ at = \"2s\", rate = \"1Mbit\", x = 1 }]",
            "hosts.phone.paths[1].rate_changes[0].x",
            "unknown",
        ),
    ] {
        let (p, msg) = err(&PHONE.replace(
            "name = \"lte\"",
            &format!("name = \"lte\"\nrate_changes = {changes}"),
        ));
        assert_eq!(p, path, "{msg}");
        assert!(msg.contains(contains), "{msg}");
    }
}

/// The phone's Wi-Fi path through the scenario's cell (`wifi = true`).
const CELL_PHONE: &str = r#"
client = "phone"

[wifi]
standard = "ax"

[hosts.laptop]
side = "client"

[hosts.phone]
side = "client"

[hosts.phone.wifi]
snr_db = 20

[[hosts.phone.paths]]
name = "wifi"
wifi = true
access_delay = "1ms"
outages = [{ start = "3s", end = "8s" }]

[[hosts.phone.paths]]
name = "lte"
access_delay = "30ms"
access = { rate = "10Mbit", buffer = "100pkt" }
"#;

#[test]
fn a_path_through_the_cell_is_the_hosts_station() {
    let s = with(CELL_PHONE).unwrap();
    let phone = s.hosts.iter().position(|h| h.name == "phone").unwrap();
    let p = &s.hosts[phone].paths;
    assert!(p[0].wifi && !p[1].wifi);
    assert!(p[0].access.is_empty());
    assert_eq!(p[0].access_delay, Dur::from_millis(1));
    assert_eq!(p[0].outages.len(), 1);
    // Both client hosts are stations; the phone's settings are its own.
    let wifi = s.wifi.as_ref().unwrap();
    assert_eq!(wifi.stations.len(), 2);
    let st = wifi.stations.iter().find(|st| st.host == phone).unwrap();
    assert_eq!(st.links[0].snr_db, 20.0);
    // Its queues: the cell's for it, the LTE path's link; no others.
    let access = l4slab_scenario::build::AccessQueues::of(&s);
    assert_eq!(access.paths[phone][0], None);
    assert!(access.paths[phone][1].is_some());
    let flow = &s.flows[0];
    let mut f = flow.clone();
    f.client = phone;
    let cell = access.cell_queue(phone, 1, l4slab_wifi::edca::Ac::Be);
    assert_eq!(access.path_via(&f, 1, 0)[0], cell);
    assert_eq!(
        access.path_via(&f, 1, 1)[0],
        Some(access.paths[phone][1].unwrap()[1])
    );
    // A multi-homed host with no path through the cell is no station.
    let s = with(
        &CELL_PHONE
            .replace(
                "wifi = true\n",
                "access = { rate = \"50Mbit\", buffer = \"100pkt\" }\n",
            )
            .replace("[hosts.phone.wifi]\nsnr_db = 20\n", ""),
    )
    .unwrap();
    assert_eq!(s.wifi.unwrap().stations.len(), 1);
}

#[test]
fn a_path_through_the_cell_refuses_what_it_cannot_be() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            PHONE.replace(
                "access = { rate = \"50Mbit\", buffer = \"100pkt\" }",
                "wifi = true",
            ),
            "hosts.phone.paths[0].wifi",
            "no Wi-Fi cell",
        ),
        (
            CELL_PHONE.replace(
                "access = { rate = \"10Mbit\", buffer = \"100pkt\" }",
                "wifi = true",
            ),
            "hosts.phone.paths[1].wifi",
            "already host 'phone''s station",
        ),
        (
            CELL_PHONE.replace(
                "wifi = true",
                "wifi = true\naccess = { rate = \"50Mbit\", buffer = \"100pkt\" }",
            ),
            "hosts.phone.paths[0].access",
            "station settings go in [hosts.phone.wifi]",
        ),
        (
            CELL_PHONE.replace(
                "wifi = true",
                "wifi = true\nrate_changes = [{ at = \"2s\", rate = \"1Mbit\" }]",
            ),
            "hosts.phone.paths[0].rate_changes",
            "MCS",
        ),
        (
            CELL_PHONE.replace("wifi = true", "wifi = \"yes\""),
            "hosts.phone.paths[0].wifi",
            "a boolean",
        ),
        (
            CELL_PHONE.replace(
                "wifi = true\n",
                "access = { rate = \"50Mbit\", buffer = \"100pkt\" }\n",
            ),
            "hosts.phone.wifi",
            "none of its paths is its station",
        ),
    ];
    for (text, path, contains) in cases {
        let (p, msg) = err(&text);
        assert_eq!(p, path, "{msg}\n{text}");
        assert!(msg.contains(contains), "{msg}");
    }
}
