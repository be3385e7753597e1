//! `download` flows and `[[households]]`: expansion into flows (names,
//! parts of size/K, start times), the presets' documented flows, and the
//! key-path errors.

mod common;

use common::parse;
use l4slab_app::download::DownloadPart;
use l4slab_core::{Dur, Time};
use l4slab_scenario::{AppSpec, Direction, Scenario};

const HEAD: &str = r#"
format = 1
duration = "60s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"
"#;

fn with(rest: &str) -> Result<Scenario, l4slab_scenario::ScenarioError> {
    parse(&format!("{HEAD}{rest}"))
}

fn part(s: &Scenario, i: usize) -> (String, Time, DownloadPart) {
    let f = &s.flows[i];
    let AppSpec::Download(d) = &f.app else {
        panic!("{}: {:?}", f.name, f.app)
    };
    (f.name.clone(), f.start, d.part.clone().expect("a part"))
}

#[test]
fn a_download_becomes_k_flows_of_size_over_k() {
    let s = with(
        r#"[[flows]]
name = "game"
start = "2s"
app = { kind = "download", size = "1000003B", connections = 4 }
"#,
    )
    .unwrap();
    assert_eq!(s.flows.len(), 4);
    // 1000003 = 4 × 250000 + 3: the first three parts carry one byte more.
    for (j, bytes) in [250_001, 250_001, 250_001, 250_000].into_iter().enumerate() {
        let (name, start, p) = part(&s, j);
        assert_eq!(name, format!("game.{j}"));
        assert_eq!(start, Time::from_secs(2));
        assert_eq!(
            p,
            DownloadPart {
                download: "game".into(),
                index: j as u32,
                bytes
            }
        );
    }
    // The resolved scenario shows the parts.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["flows"][1]["app"]["part"]["bytes"], 250_001);
    assert_eq!(json["flows"][1]["app"]["kind"], "download");
}

#[test]
fn every_repeats_the_download_on_new_connections() {
    let s = with(
        r#"[[flows]]
name = "backup"
direction = "up"
start = "5s"
app = { kind = "download", size = "10MB", connections = 2, every = "20s", stop = "10s" }
"#,
    )
    .unwrap();
    // Starts at 5, 25, 45 s (65 s is past the run), two connections each.
    let got: Vec<(String, Time, String)> = (0..s.flows.len())
        .map(|i| {
            let (n, t, p) = part(&s, i);
            (n, t, p.download)
        })
        .collect();
    let want: Vec<(String, Time, String)> = [(0, 5), (1, 25), (2, 45)]
        .into_iter()
        .flat_map(|(r, t)| {
            (0..2).map(move |j| {
                (
                    format!("backup.{r}.{j}"),
                    Time::from_secs(t),
                    format!("backup.{r}"),
                )
            })
        })
        .collect();
    assert_eq!(got, want);
    assert!(s.flows.iter().all(|f| f.direction == Direction::Up));
    let AppSpec::Download(d) = &s.flows[0].app else {
        panic!()
    };
    assert_eq!(d.stop, Dur::from_secs(10));
}

#[test]
fn the_evening_preset_brings_its_documented_flows() {
    let s = with(
        r#"[[households]]
preset = "evening"
name = "home"
start = "1s"
"#,
    )
    .unwrap();
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    let mut want = vec!["home.video".to_string(), "home.browse".into()];
    want.extend((0..8).map(|j| format!("home.game.{j}")));
    want.push("home.photos".into());
    assert_eq!(names, want);
    assert!(s.flows.iter().all(|f| f.start == Time::from_secs(1)));
    assert_eq!(s.flows[0].app.kind(), "video_stream");
    assert_eq!(s.flows[1].app.kind(), "web_browse");
    let (_, _, game) = part(&s, 2);
    // 20 GB over 8 connections
    assert_eq!(game.bytes, 2_500_000_000);
    let photos = s.flows.last().unwrap();
    assert_eq!(photos.direction, Direction::Up);
    let (_, _, p) = part(&s, 10);
    assert_eq!((p.download.as_str(), p.bytes), ("home.photos", 500_000_000));
}

#[test]
fn work_from_home_brings_a_call_browsing_and_an_upload() {
    let s = with("[[households]]\npreset = \"work_from_home\"\n").unwrap();
    let got: Vec<(&str, &str, Direction)> = s
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.app.kind(), f.direction))
        .collect();
    assert_eq!(
        got,
        [
            ("household0.call", "video_call", Direction::Down),
            ("household0.browse", "web_browse", Direction::Down),
            ("household0.upload", "download", Direction::Up),
        ]
    );
}

fn err(rest: &str) -> String {
    with(rest).unwrap_err().to_string()
}

#[test]
fn bad_downloads_and_households_name_their_key_path() {
    let flow = |app: &str| format!("[[flows]]\napp = {app}\n");
    let e = err(&flow(
        r#"{ kind = "download", size = "1MB", connections = 0 }"#,
    ));
    assert!(e.starts_with("flows[0].app.connections:"), "{e}");
    let e = err(&flow(r#"{ kind = "download" }"#));
    assert!(e.starts_with("flows[0].app.size: missing"), "{e}");
    let e = err(&flow(
        r#"{ kind = "download", size = "4B", connections = 8 }"#,
    ));
    assert!(e.starts_with("flows[0].app.connections:"), "{e}");
    let e = err(&flow(
        r#"{ kind = "download", size = "1MB", every = "10s", stop = "20s" }"#,
    ));
    assert!(
        e.starts_with("flows[0].app.stop:") && e.contains("every"),
        "{e}"
    );
    // The second start (70 s) would be after the run (60 s).
    let e = err(&flow(
        r#"{ kind = "download", size = "1MB", every = "70s" }"#,
    ));
    assert!(
        e.starts_with("flows[0].app.every:") && e.contains("70s"),
        "{e}"
    );
    let e = err(&flow(
        r#"{ kind = "download", size = "1MB", stop = "60s" }"#,
    ));
    assert!(e.starts_with("flows[0].app.stop:"), "{e}");
    let e = err("[[households]]\npreset = \"party\"\n");
    assert!(
        e.starts_with("households[0].preset:")
            && e.contains("evening")
            && e.contains("work_from_home"),
        "{e}"
    );
    let e = err("[[households]]\nname = \"x\"\n");
    assert!(e.starts_with("households[0].preset: missing"), "{e}");
    let e = err("[[households]]\npreset = \"evening\"\nstart = \"90s\"\n");
    assert!(e.starts_with("households[0].start:"), "{e}");
    let e = err("[[households]]\npreset = \"evening\"\nclient = \"tv\"\n");
    assert!(e.starts_with("households[0].client:"), "{e}");
    let e = err("[[households]]\npreset = \"evening\"\nname = \"a\"\n[[households]]\npreset = \"evening\"\nname = \"a\"\n");
    assert!(
        e.starts_with("households[1].name:") && e.contains("households[0]"),
        "{e}"
    );
    let e = err("[[households]]\npreset = \"evening\"\ncolour = \"red\"\n");
    assert!(e.starts_with("households[0].colour:"), "{e}");
}

#[test]
fn count_drops_copies_of_the_mix_with_their_own_names() {
    let s = with(
        r#"[[households]]
preset = "work_from_home"
name = "flat"
count = 3
start = "2s"
cc = "cubic"
"#,
    )
    .unwrap();
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    let mut want = Vec::new();
    for k in 0..3 {
        for role in ["call", "browse", "upload"] {
            want.push(format!("flat.{k}.{role}"));
        }
    }
    assert_eq!(names, want);
    assert!(s.flows.iter().all(|f| f.start == Time::from_secs(2)));
    // `cc` reaches every flow of every copy.
    assert!(
        s.flows.iter().all(|f| f.cc.kind == "cubic"),
        "{:?}",
        s.flows
    );
    // Each copy's download is its own (named after its copy).
    let (_, _, p) = part(&s, 5);
    assert_eq!(p.download, "flat.1.upload");
    // Every flow keeps the household as its entry (the cost limits name it).
    assert!(s.flows.iter().all(|f| f.entry
        == l4slab_scenario::Entry::Household {
            index: 0,
            copies: 3
        }));
    // count = 1 is one household, named as without count.
    let one = with("[[households]]\npreset = \"work_from_home\"\ncount = 1\n").unwrap();
    assert_eq!(one.flows[0].name, "household0.call");
    // Without `cc` the flows keep the default (reno).
    assert!(one.flows.iter().all(|f| f.cc.kind == "reno"));
}

#[test]
fn a_bad_household_count_or_cc_names_its_key_path() {
    let h = |extra: &str| err(&format!("[[households]]\npreset = \"evening\"\n{extra}\n"));
    for bad in ["count = 0", "count = -2", "count = 10001"] {
        let e = h(bad);
        assert!(
            e.starts_with("households[0].count:") && e.contains("between 1 and 10000"),
            "{bad}: {e}"
        );
    }
    let e = h("count = \"5\"");
    assert!(e.starts_with("households[0].count:"), "{e}");
    let e = h("cc = \"vegas\"");
    assert!(e.starts_with("households[0].cc:"), "{e}");
    // Two households whose copies would share names.
    let e = err("[[households]]\npreset = \"evening\"\nname = \"a.0\"\n[[households]]\npreset = \"evening\"\nname = \"a\"\ncount = 2\n");
    assert!(
        e.starts_with("households[1].name:") && e.contains("'a.0.video'"),
        "{e}"
    );
}
