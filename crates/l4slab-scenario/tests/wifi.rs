//! `[wifi]`: a Wi-Fi cell as the client hosts' access network: defaults,
//! multi-link operation, per-station overrides, every error with its key
//! path, `--set`, and the runtime `build::network` makes of it.

mod common;

use common::{parse, parse_set, BASE};
use l4slab_bottleneck::{DOWN, UP};
use l4slab_core::{Dur, FlowId};
use l4slab_qdisc::FifoConfig;
use l4slab_scenario::build::{self, AccessQueues};
use l4slab_scenario::{BufferLimit, Problem, QdiscSpec, Scenario, ScenarioError};
use l4slab_wifi::config::{Scan, StationLink, RETRY_LIMIT};
use l4slab_wifi::edca::{Ac, EdcaParams, EdcaSet};
use l4slab_wifi::phy::{Band, Phy, Standard};

/// Two client hosts and the default server; the laptop downloads in BE,
/// the phone calls in VI. [`home`] adds the cell.
const HOSTS: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "1Gbit"
delay = "8ms"
buffer = "1000pkt"

[hosts.laptop]
side = "client"
access_delay = "1ms"

[hosts.phone]
side = "client"

[[flows]]
name = "bulk"
client = "laptop"

[[flows]]
name = "call"
client = "phone"
wifi_ac = "vi"
app = { kind = "video_call" }
"#;

/// [`HOSTS`] with a `[wifi]` table (unless `extra` writes one) and `extra`.
fn home(extra: &str) -> String {
    if extra.lines().any(|l| l.trim() == "[wifi]") {
        format!("{HOSTS}\n{extra}")
    } else {
        format!("{HOSTS}\n[wifi]\n{extra}")
    }
}

fn err(text: &str) -> ScenarioError {
    parse(text).expect_err("expected an error")
}

fn path_of(e: &ScenarioError) -> &str {
    e.path().unwrap_or_else(|| panic!("no key path: {e}"))
}

fn assert_err(text: &str, path: &str, contains: &str) -> ScenarioError {
    let e = err(text);
    assert_eq!(path_of(&e), path, "{e}");
    assert!(e.to_string().contains(contains), "{e}");
    e
}

fn assert_example(e: &ScenarioError) {
    assert!(e.to_string().contains("; write e.g. "), "no example: {e}");
}

fn ax80() -> Phy {
    Phy::new(Standard::Ax, Band::G5, 80, 2).unwrap()
}

#[test]
fn defaults_make_every_client_host_a_station() {
    let s = parse(&home("")).unwrap();
    let w = s.wifi.as_ref().expect("a cell");
    assert_eq!(w.links, [ax80()]);
    assert_eq!(w.retry_limit, RETRY_LIMIT);
    assert_eq!(w.ap_edca, EdcaSet::AP);
    let fifo = QdiscSpec::Fifo(FifoConfig {
        limit: BufferLimit::Packets(1000),
        head_drop: false,
    });
    assert_eq!(w.ap_qdisc, fifo);
    assert_eq!(w.station_qdisc, fifo);
    // One station per client host, in host order; the server is none.
    let hosts: Vec<&str> = w
        .stations
        .iter()
        .map(|st| s.hosts[st.host].name.as_str())
        .collect();
    assert_eq!(hosts, ["laptop", "phone"]);
    for st in &w.stations {
        assert_eq!(st.edca, EdcaSet::STATION);
        assert_eq!(st.scan, None);
        // Ideal rate control at the default 40 dB.
        assert_eq!(
            st.links,
            [StationLink {
                link: 0,
                snr_db: 40.0,
                mcs: ax80().best_mcs(40.0)
            }]
        );
    }
    assert_eq!(ax80().best_mcs(40.0), 11, "40 dB is HE-MCS 11 at 80 MHz");
    assert_eq!(s.flows[0].wifi_ac, Ac::Be);
    assert_eq!(s.flows[1].wifi_ac, Ac::Vi);
    // The resolved scenario records the cell; a flow's AC only when not BE.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["wifi"]["links"][0]["standard"], "ax");
    assert_eq!(json["wifi"]["links"][0]["band"], "5GHz");
    assert_eq!(json["flows"][1]["wifi_ac"], "vi");
    assert!(json["flows"][0].get("wifi_ac").is_none());
}

#[test]
fn the_default_client_host_is_a_station_too() {
    let s = parse(&format!(
        "{BASE}\n[wifi]\nstandard = \"n\"\nband = \"2.4GHz\""
    ))
    .unwrap();
    let w = s.wifi.unwrap();
    assert_eq!(w.links, [Phy::new(Standard::N, Band::G2_4, 20, 2).unwrap()]);
    assert_eq!(w.stations.len(), 1);
    assert_eq!(s.hosts[w.stations[0].host].name, "client");
    // Without [wifi] nothing changes.
    assert_eq!(parse(BASE).unwrap().wifi, None);
}

#[test]
fn default_widths_and_streams_follow_the_standard() {
    let phy = |keys: &str| {
        parse(&format!("{BASE}\n[wifi]\n{keys}"))
            .unwrap()
            .wifi
            .unwrap()
            .links[0]
    };
    let p = |s, b, w, n| Phy::new(s, b, w, n).unwrap();
    assert_eq!(phy(r#"standard = "a""#), p(Standard::A, Band::G5, 20, 1));
    assert_eq!(phy(r#"standard = "n""#), p(Standard::N, Band::G5, 40, 2));
    assert_eq!(phy(r#"standard = "ac""#), p(Standard::Ac, Band::G5, 80, 2));
    assert_eq!(phy(r#"standard = "ax""#), p(Standard::Ax, Band::G5, 80, 2));
    assert_eq!(phy(r#"standard = "be""#), p(Standard::Be, Band::G5, 80, 2));
    assert_eq!(
        phy(r#"standard = "ax"
band = "2.4GHz""#),
        p(Standard::Ax, Band::G2_4, 20, 2)
    );
    // Width as a string or an integer; nss as written.
    assert_eq!(
        phy(r#"standard = "be"
band = "6GHz"
width = "320MHz"
nss = 4"#),
        p(Standard::Be, Band::G6, 320, 4)
    );
    assert_eq!(phy("width = 160"), p(Standard::Ax, Band::G5, 160, 2));
    assert_eq!(phy(r#"width = "40 MHz""#), p(Standard::Ax, Band::G5, 40, 2));
}

const MLO: &str = r#"
[wifi]
links = [ { standard = "be", band = "5GHz", width = "80MHz", nss = 2 }, { standard = "be", band = "6GHz", width = "160MHz" } ]

[wifi.stations]
links = [0, 1]
snr_db = [40, 30]

[hosts.phone.wifi]
links = [1]
mcs = 9
"#;

#[test]
fn multi_link_operation() {
    // The phone uses link 1 only, with its own SNR and a fixed MCS.
    let s = parse(&home(&MLO.replace("mcs = 9", "mcs = 9\nsnr_db = 35"))).unwrap();
    let w = s.wifi.unwrap();
    let l0 = Phy::new(Standard::Be, Band::G5, 80, 2).unwrap();
    let l1 = Phy::new(Standard::Be, Band::G6, 160, 2).unwrap();
    assert_eq!(w.links, [l0, l1]);
    // The laptop: the defaults, one SNR per link, the best MCS on each.
    assert_eq!(
        w.stations[0].links,
        [
            StationLink {
                link: 0,
                snr_db: 40.0,
                mcs: l0.best_mcs(40.0)
            },
            StationLink {
                link: 1,
                snr_db: 30.0,
                mcs: l1.best_mcs(30.0)
            },
        ]
    );
    assert!(l1.best_mcs(30.0) < l0.best_mcs(40.0));
    assert_eq!(
        w.stations[1].links,
        [StationLink {
            link: 1,
            snr_db: 35.0,
            mcs: 9
        }]
    );
}

#[test]
fn a_station_of_an_older_generation() {
    // The laptop is a Wi-Fi 6 client of the Wi-Fi 7 AP (on one link: MLO is
    // 802.11be's): it speaks HE, so its best MCS at 50 dB is HE-MCS 11
    // (4096-QAM, EHT-MCS 12 and 13, is EHT's).
    let mlo = MLO.replace("mcs = 9", "mcs = 9\nsnr_db = 35");
    let s = parse(&home(&format!(
        "{mlo}\n[hosts.laptop.wifi]\nstandard = \"ax\"\nlinks = [0]\nsnr_db = 50"
    )))
    .unwrap();
    let w = s.wifi.unwrap();
    let laptop = &w.stations[0];
    assert_eq!(laptop.standard, Some(Standard::Ax));
    assert_eq!(laptop.links.iter().map(|l| l.mcs).collect::<Vec<_>>(), [11]);
    assert_eq!(w.links[0].best_mcs(50.0), 13);
    // Unwritten: each link's own generation (and nothing in the model).
    assert_eq!(w.stations[1].standard, None);
    // A Wi-Fi 7 client of a Wi-Fi 6 AP is one of its Wi-Fi 6 clients: the
    // same station, its generation left unset (it changes nothing).
    let w7 = parse(&home("[hosts.laptop.wifi]\nstandard = \"be\"")).unwrap();
    let w6 = parse(&home("")).unwrap();
    assert_eq!(w7.wifi, w6.wifi);
    // Errors name the key.
    assert_err(
        &home("[hosts.laptop.wifi]\nstandard = \"wifi7\""),
        "hosts.laptop.wifi.standard",
        "unknown standard 'wifi7'; choose one of: a, n, ac, ax, be",
    );
    let e = assert_err(
        &home(&MLO.replace("mcs = 9", "mcs = 9\nsnr_db = 35\nstandard = \"n\"")),
        "hosts.phone.wifi.standard",
        "link 1 (802.11be 160 MHz 2 SS at 6GHz): band: 802.11n does not operate at 6GHz",
    );
    assert_example(&e);
    let e = assert_err(
        &home(&MLO.replace("[wifi.stations]", "[wifi.stations]\nstandard = \"ac\"")),
        "wifi.stations.standard",
        "an 802.11ac station cannot use 2 links (wifi.stations.links = [0, 1]): multi-link operation needs 802.11be",
    );
    assert_example(&e);
    let e = assert_err(
        &home(&MLO.replace("mcs = 9", "mcs = 12\nsnr_db = 35\nstandard = \"ax\"")),
        "hosts.phone.wifi.mcs",
        "12 is out of range for 802.11ax",
    );
    assert_example(&e);
}

#[test]
fn a_station_with_fewer_links_than_the_defaults_values_is_an_error() {
    // As written, the phone (links = [1]) takes the two default SNRs.
    let e = err(&home(MLO));
    assert_eq!(path_of(&e), "wifi.stations.snr_db", "{e}");
    assert!(
        e.to_string()
            .contains("2 values for 1 link (hosts.phone.wifi.links = [1])"),
        "{e}"
    );
    assert_eq!(e.problem(), Some(Problem::Conflict));
}

#[test]
fn per_station_overrides() {
    let text = home(
        r#"
[wifi.ap]
qdisc = "fq_codel"
buffer = "500pkt"
edca.vo = { aifsn = 2, txop = "0ms" }

[wifi.stations]
qdisc = { kind = "fifo", head_drop = true }
buffer = "200pkt"
edca.be = { cw_min = 63 }
snr_db = 20
scan = { every = "30s", duration = "100ms" }

[hosts.gamer]
side = "client"

[hosts.gamer.wifi]
edca.be = { cw_min = 15, cw_max = 1023 }   # ignores the advertised parameters
edca.vi = { aifsn = 1 }
scan = false
snr_db = 35.5
mcs = 8
"#,
    );
    let s = parse(&text).unwrap();
    let w = s.wifi.unwrap();
    // The AP's EDCA: its defaults with VO overridden key by key.
    let mut ap = EdcaSet::AP;
    ap.0[Ac::Vo.index()] = EdcaParams {
        aifsn: 2,
        txop: Dur::ZERO,
        ..*EdcaSet::AP.get(Ac::Vo)
    };
    assert_eq!(w.ap_edca, ap);
    assert!(matches!(w.ap_qdisc, QdiscSpec::FqCodel(ref c) if c.limit == 500));
    assert_eq!(
        w.station_qdisc,
        QdiscSpec::Fifo(FifoConfig {
            limit: BufferLimit::Packets(200),
            head_drop: true
        })
    );
    let names: Vec<&str> = w
        .stations
        .iter()
        .map(|st| s.hosts[st.host].name.as_str())
        .collect();
    assert_eq!(names, ["gamer", "laptop", "phone"]);
    let (gamer, laptop) = (&w.stations[0], &w.stations[1]);
    // The advertised set, with BE's cw_min from [wifi.stations].
    let mut advertised = EdcaSet::STATION;
    advertised.get_mut(Ac::Be).cw_min = 63;
    assert_eq!(laptop.edca, advertised);
    let scan = Scan {
        every: Dur::from_secs(30),
        duration: Dur::from_millis(100),
        first: Dur::from_secs(30),
        visits: 1,
        gap: Dur::ZERO,
    };
    assert_eq!(laptop.scan, Some(scan));
    assert_eq!(laptop.links[0].snr_db, 20.0);
    assert_eq!(laptop.links[0].mcs, ax80().best_mcs(20.0));
    // The gamer: its own BE (over the advertised one) and VI AIFSN.
    let mut own = advertised;
    own.get_mut(Ac::Be).cw_min = 15;
    own.get_mut(Ac::Be).cw_max = 1023;
    own.get_mut(Ac::Vi).aifsn = 1;
    assert_eq!(gamer.edca, own);
    assert_eq!(gamer.scan, None);
    assert_eq!(
        gamer.links,
        [StationLink {
            link: 0,
            snr_db: 35.5,
            mcs: 8
        }]
    );
}

#[test]
fn scan_first_and_time_buffers() {
    let s = parse(&home(
        r#"
[wifi.ap]
buffer = "2ms"
[wifi.stations]
scan = { every = "10s", duration = "50ms", first = "1s" }
"#,
    ))
    .unwrap();
    let w = s.wifi.unwrap();
    assert_eq!(w.stations[0].scan.unwrap().first, Dur::from_secs(1));
    // A time buffer at the default station's rate on link 0 (HE80 2 SS
    // MCS 11, 1,200,955,882 bit/s): 2 ms is 300,238.97 B, rounded down.
    assert_eq!(ax80().data_rate(11).as_bps(), 1_200_955_882);
    assert_eq!(
        w.ap_qdisc,
        QdiscSpec::Fifo(FifoConfig {
            limit: BufferLimit::Time {
                time: Dur::from_millis(2),
                bytes: 300_238
            },
            head_drop: false
        })
    );
}

#[test]
fn dualpi2_flow_names_resolve_to_ids() {
    let s = parse(&home(
        r#"
[wifi.ap]
qdisc = { kind = "dualpi2", l_flows = ["call"] }
[wifi.stations]
qdisc = { kind = "dualpi2", l_flows = ["bulk", "call"] }
"#,
    ))
    .unwrap();
    let w = s.wifi.unwrap();
    let QdiscSpec::Dualpi2(ap) = &w.ap_qdisc else {
        panic!("{:?}", w.ap_qdisc)
    };
    assert_eq!(ap.l_flows, [1 as FlowId]);
    assert_eq!(ap.limit, 1000, "the default buffer");
    let QdiscSpec::Dualpi2(sta) = &w.station_qdisc else {
        panic!()
    };
    assert_eq!(sta.l_flows, [0 as FlowId, 1]);
    let e = assert_err(
        &home("[wifi.ap]\nqdisc = { kind = \"dualpi2\", l_flows = [\"game\"] }"),
        "wifi.ap.qdisc.l_flows[0]",
        "unknown flow 'game'",
    );
    assert_eq!(e.problem(), Some(Problem::UnknownName));
}

#[test]
fn wifi_ac_without_a_cell_does_nothing() {
    let s = parse(&format!("{BASE}wifi_ac = \"vo\"\n")).unwrap();
    assert_eq!(s.wifi, None);
    assert_eq!(s.flows[0].wifi_ac, Ac::Vo);
    let e = assert_err(
        &format!("{BASE}wifi_ac = \"video\"\n"),
        "flows[0].wifi_ac",
        "unknown access category 'video'; choose one of: vo, vi, be, bk",
    );
    assert_eq!(e.problem(), Some(Problem::UnknownName));
    let e = assert_err(
        &format!("{BASE}wifi_ac = 2\n"),
        "flows[0].wifi_ac",
        "expected a string",
    );
    assert_example(&e);
}

#[test]
fn phy_errors_name_the_key() {
    // (extra, path, message, whether the error carries an example)
    let cases = [
        ("[wifi]\nstandard = \"ad\"", "wifi.standard", "unknown standard 'ad'; choose one of: a, n, ac, ax, be", false),
        ("[wifi]\nband = \"60GHz\"", "wifi.band", "unknown band '60GHz'; choose one of: 2.4GHz, 5GHz, 6GHz", false),
        ("[wifi]\nstandard = 6", "wifi.standard", "expected a string, found an integer (6)", true),
        ("[wifi]\nstandard = \"ac\"\nband = \"2.4GHz\"", "wifi.band", "802.11ac does not operate at 2.4GHz", true),
        ("[wifi]\nstandard = \"n\"\nwidth = \"80MHz\"", "wifi.width", "80 MHz is not allowed for 802.11n at 5GHz", true),
        ("[wifi]\nwidth = \"wide\"", "wifi.width", "is not a channel width", true),
        ("[wifi]\nnss = 9", "wifi.nss", "9 spatial streams is not allowed for 802.11ax", true),
        ("[wifi]\nnss = 0", "wifi.nss", "out of range", true),
        ("[wifi]\nnss = \"2\"", "wifi.nss", "expected an integer", true),
        ("[wifi]\nretry_limit = 0", "wifi.retry_limit", "out of range", true),
        ("[wifi]\nchannel = 36", "wifi.channel", "unknown key; valid keys here: standard, band", false),
        (
            "[wifi]\nlinks = [{ standard = \"be\" }, { standard = \"be\", band = \"6GHz\", width = \"480MHz\" }]",
            "wifi.links[1].width",
            "480 MHz is not allowed for 802.11be at 6GHz",
            true,
        ),
        ("[wifi]\nlinks = []", "wifi.links", "at least one link", true),
        ("[wifi]\nlinks = [{ mode = 1 }]", "wifi.links[0].mode", "unknown key", false),
        ("[wifi]\nlinks = 2", "wifi.links", "expected an array", true),
    ];
    for (extra, path, msg, example) in cases {
        let e = assert_err(&home(extra), path, msg);
        if example {
            assert_example(&e);
        }
    }
}

#[test]
fn single_link_keys_conflict_with_links() {
    let e = assert_err(
        &home("[wifi]\nstandard = \"be\"\nlinks = [{ standard = \"be\" }]"),
        "wifi.standard",
        "conflicts with wifi.links",
    );
    assert_eq!(e.problem(), Some(Problem::Conflict));
    assert_example(&e);
}

#[test]
fn edca_errors_name_the_key() {
    let cases = [
        (
            "[hosts.gamer]\nside = \"client\"\n[hosts.gamer.wifi]\nedca.be = { cw_min = 16 }",
            "hosts.gamer.wifi.edca.be.cw_min",
            "16 is not 2^k - 1",
        ),
        (
            "[hosts.gamer]\nside = \"client\"\n[hosts.gamer.wifi]\nedca.be = { cw_max = 7 }",
            "hosts.gamer.wifi.edca.be.cw_max",
            "7 is below cw_min 15",
        ),
        (
            "[wifi.stations]\nedca.be = { cw_min = 2047 }",
            "wifi.stations.edca.be.cw_min",
            "2047 is above cw_max 1023",
        ),
        (
            // The host's cw_max is the later layer: it is named.
            "[wifi.stations]\nedca.be = { cw_min = 255 }\n[hosts.laptop.wifi]\nedca.be = { cw_max = 127 }",
            "hosts.laptop.wifi.edca.be.cw_max",
            "127 is below cw_min 255",
        ),
        ("[wifi.ap]\nedca.vo = { txop = \"9ms\" }", "wifi.ap.edca.vo.txop", "above the largest TXOP limit"),
        ("[wifi.ap]\nedca.vo = { aifsn = 0 }", "wifi.ap.edca.vo.aifsn", "0 is out of range; must be between 1 and 15"),
        ("[wifi.ap]\nedca.vo = { aifsn = 16 }", "wifi.ap.edca.vo.aifsn", "out of range"),
        ("[wifi.ap]\nedca.vo = { txop = 1 }", "wifi.ap.edca.vo.txop", "has no unit"),
        ("[wifi.ap]\nedca.video = { aifsn = 2 }", "wifi.ap.edca.video", "unknown key; valid keys here: vo, vi, be, bk"),
        ("[wifi.stations]\nedca.be = { cwmin = 2 }", "wifi.stations.edca.be.cwmin", "unknown key"),
    ];
    for (extra, path, msg) in cases {
        let e = assert_err(&home(extra), path, msg);
        if !msg.contains("unknown key") {
            assert_example(&e);
        }
    }
}

#[test]
fn station_errors_name_the_key() {
    let gamer = |keys: &str| {
        home(&format!(
            "[hosts.gamer]\nside = \"client\"\n[hosts.gamer.wifi]\n{keys}"
        ))
    };
    let stations = |keys: &str| home(&format!("[wifi.stations]\n{keys}"));
    let cases = [
        (stations("mcs = 12"), "wifi.stations.mcs", "on link 0 (802.11ax 80 MHz 2 SS at 5GHz): 12 is out of range for 802.11ax (expected 0..=11)"),
        (gamer("mcs = -1"), "hosts.gamer.wifi.mcs", "out of range"),
        (gamer("mcs = \"7\""), "hosts.gamer.wifi.mcs", "expected an integer, found a string (\"7\"); write e.g. 7"),
        (gamer("snr_db = \"40dB\""), "hosts.gamer.wifi.snr_db", "expected a number, found a string (\"40dB\"); write e.g. 40.0"),
        (gamer("snr_db = [40, 30]"), "hosts.gamer.wifi.snr_db", "2 values for 1 link (wifi.stations.links = [0])"),
        (gamer("links = [1]"), "hosts.gamer.wifi.links[0]", "1 is not a link of the cell: [wifi] has 1 link, numbered 0..=0"),
        (gamer("links = []"), "hosts.gamer.wifi.links", "at least one link"),
        (stations("scan = { every = \"1s\", duration = \"1s\" }"), "wifi.stations.scan.duration", "a scan takes 1s (visits x duration + gaps), which must be shorter than every = 1s (the station returns between scans); write e.g. \"100ms\""),
        (stations("scan = { duration = \"100ms\" }"), "wifi.stations.scan.every", "missing"),
        (stations("scan = { every = \"30s\", duration = \"0s\" }"), "wifi.stations.scan.duration", "greater than zero"),
        (stations("scan = true"), "wifi.stations.scan", "give a table, or false"),
        (stations("scan = { every = \"1s\", duration = \"100ms\", visits = 0 }"), "wifi.stations.scan.visits", "0 is out of range; must be between 1 and 1000"),
        (stations("scan = { every = \"1s\", duration = \"100ms\", visits = 6, gap = \"100ms\" }"), "wifi.stations.scan.duration", "a scan takes 1100ms"),
        (stations("scan = { every = \"30s\", duration = \"1s\", period = \"1s\" }"), "wifi.stations.scan.period", "unknown key; valid keys here: every, duration, first, visits, gap"),
        (gamer("qdisc = \"fq_codel\""), "hosts.gamer.wifi.qdisc", "set it under [wifi.stations]"),
        (gamer("buffer = \"10pkt\""), "hosts.gamer.wifi.buffer", "set it under [wifi.stations]"),
        (gamer("ssid = \"home\""), "hosts.gamer.wifi.ssid", "unknown key; valid keys here: qdisc, buffer, edca, standard, snr_db, mcs, links, scan"),
        (home("[wifi.ap]\nbuffer = \"0pkt\""), "wifi.ap.buffer", "at least 1 packet"),
        (home("[wifi.ap]\nqdisc = \"sfq\""), "wifi.ap.qdisc", "unknown qdisc 'sfq'"),
    ];
    for (text, path, msg) in cases {
        let e = assert_err(&text, path, msg);
        if !msg.contains("unknown") && !msg.contains("missing") {
            assert_example(&e);
        }
    }
    // Two links: a duplicate, an MCS per link.
    let mlo = |keys: &str| {
        home(&format!(
            "[wifi]\nlinks = [{{ standard = \"ac\" }}, {{ standard = \"be\", band = \"6GHz\" }}]\n\
             [hosts.gamer]\nside = \"client\"\n[hosts.gamer.wifi]\n{keys}"
        ))
    };
    assert_err(
        &mlo("links = [1, 1]"),
        "hosts.gamer.wifi.links[1]",
        "link 1 is listed twice",
    );
    assert_err(
        &mlo("links = [1, 0]\nmcs = [13, 10]"),
        "hosts.gamer.wifi.mcs[1]",
        "on link 0 (802.11ac 80 MHz 2 SS at 5GHz): 10 is out of range",
    );
    // VHT-MCS 9 does not exist at 20 MHz with 1 stream (802.11-2020 §21.5).
    let vht20 = home("[wifi]\nstandard = \"ac\"\nwidth = 20\nnss = 1\n[wifi.stations]\nmcs = 9");
    assert_err(
        &vht20,
        "wifi.stations.mcs",
        "VHT-MCS 9 is not defined for 20 MHz",
    );
    let ok = parse(&mlo("links = [1, 0]\nmcs = [13, 9]\nsnr_db = 50")).unwrap();
    let gamer = &ok.wifi.unwrap().stations[0];
    assert_eq!(
        gamer
            .links
            .iter()
            .map(|l| (l.link, l.mcs))
            .collect::<Vec<_>>(),
        [(1, 13), (0, 9)]
    );
}

#[test]
fn hosts_and_the_cell() {
    // [hosts.X.wifi] on a server-side host.
    let e = assert_err(
        &home("[hosts.srv]\nside = \"server\"\nwifi = { snr_db = 30 }"),
        "hosts.srv.wifi",
        "host 'srv' is on the server side",
    );
    assert_eq!(e.problem(), Some(Problem::Conflict));
    // [hosts.X.wifi] without [wifi].
    let e = assert_err(
        &format!("{HOSTS}\n[hosts.laptop.wifi]\nsnr_db = 30"),
        "hosts.laptop.wifi",
        "there is no cell for this station",
    );
    assert_example(&e);
    // A client with its own access link while the cell is its access network.
    let e = assert_err(
        &home("[hosts.phone.access]\nrate = \"50Mbit\"\nbuffer = \"100pkt\""),
        "hosts.phone.access",
        "the cell is every client-side host's access network",
    );
    assert_eq!(e.problem(), Some(Problem::Conflict));
    // A server's access link is fine.
    let s = parse(&home(
        "[hosts.srv]\nside = \"server\"\naccess = { down = { rate = \"1Gbit\", buffer = \"100pkt\" } }",
    ))
    .unwrap();
    assert!(s.hosts[2].access.down.is_some());
}

#[test]
fn overrides_reach_wifi_keys() {
    let gamer = home("[hosts.gamer]\nside = \"client\"");
    let s = parse_set(
        &gamer,
        &[
            "wifi.ap.qdisc=dualpi2",
            "hosts.gamer.wifi.snr_db=15",
            "flows[0].wifi_ac=vi",
            "wifi.stations.edca.be.cw_min=31",
            "wifi.standard=be",
            "wifi.width=160MHz",
            "wifi.stations.scan={ every = \"20s\", duration = \"50ms\" }",
        ],
    )
    .unwrap();
    let w = s.wifi.as_ref().unwrap();
    assert!(matches!(w.ap_qdisc, QdiscSpec::Dualpi2(_)));
    let be160 = Phy::new(Standard::Be, Band::G5, 160, 2).unwrap();
    assert_eq!(w.links, [be160]);
    assert_eq!(s.flows[0].wifi_ac, Ac::Vi);
    assert_eq!(w.stations[0].links[0].snr_db, 15.0);
    assert_eq!(w.stations[0].links[0].mcs, be160.best_mcs(15.0));
    assert!(be160.best_mcs(15.0) < be160.best_mcs(40.0));
    assert_eq!(w.stations[1].links[0].snr_db, 40.0);
    assert_eq!(w.stations[1].edca.get(Ac::Be).cw_min, 31);
    assert_eq!(w.stations[1].scan.unwrap().every, Dur::from_secs(20));
    // A cell from --set alone, and MLO links edited one key at a time.
    let s = parse_set(BASE, &["wifi.standard=ac"]).unwrap();
    assert_eq!(s.wifi.unwrap().links[0].standard, Standard::Ac);
    let s = parse_set(
        &home("[wifi]\nlinks = [{ standard = \"be\" }, { standard = \"be\", band = \"6GHz\" }]"),
        &[
            "wifi.links[1].width=320MHz",
            "wifi.stations.links=[0, 1]",
            "wifi.stations.mcs=[13, 12]",
        ],
    )
    .unwrap();
    let w = s.wifi.unwrap();
    assert_eq!(w.links[1].width_mhz, 320);
    assert_eq!(
        w.stations[0]
            .links
            .iter()
            .map(|l| l.mcs)
            .collect::<Vec<_>>(),
        [13, 12]
    );
    // Errors from --set name the same key paths.
    let e = parse_set(&home(""), &["hosts.phone.wifi.mcs=12"]).unwrap_err();
    assert_eq!(path_of(&e), "hosts.phone.wifi.mcs", "{e}");
    let e = parse_set(&home(""), &["flows[1].wifi_ac=voice"]).unwrap_err();
    assert_eq!(path_of(&e), "flows[1].wifi_ac", "{e}");
}

/// Two stations, a server behind an access link (so the cell's queues are
/// numbered after it), a VI call and a BE download.
fn two_stations() -> Scenario {
    parse(&home(
        "[hosts.srv]\nside = \"server\"\naccess = { down = { rate = \"1Gbit\", buffer = \"100pkt\" } }\n\
         [[flows]]\nname = \"upload\"\nclient = \"laptop\"\ndirection = \"up\"\n\
         [hosts.idle]\nside = \"client\"",
    ))
    .unwrap()
}

#[test]
fn network_builds_the_cell_and_routes_through_it() {
    let s = two_stations();
    let names: Vec<&str> = s.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["idle", "laptop", "phone", "srv"]);
    let (idle, laptop, phone, srv) = (0, 1, 2, 3);
    let (bn, access) = build::network(&s, 1);
    let queue_names: Vec<&str> = (0..bn.queues()).map(|q| bn.dir(q).name()).collect();
    assert_eq!(
        queue_names,
        [
            "bottleneck.down",
            "bottleneck.up",
            "access.srv.down",
            "wifi.laptop.down.be",
            "wifi.laptop.up.be",
            "wifi.phone.down.vi",
            "wifi.phone.up.vi",
        ]
    );
    assert_eq!(bn.cells(), 1);
    assert_eq!(bn.cell_queues(0), [3, 4, 5, 6]);
    for q in 3..7 {
        assert!(bn.dir(q).link().is_air());
        assert_eq!(bn.cell_of(q), Some(0));
    }
    // The cell: three stations (idle has no queues), four queues.
    let cfg = bn.cell(0).config();
    let stations: Vec<&str> = cfg.stations.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(stations, ["idle", "laptop", "phone"]);
    assert_eq!(cfg.queues.len(), 4);
    assert_eq!(cfg.queues[2].ac, Ac::Vi);
    assert_eq!(cfg.queues[2].station, 2);
    // The laptop's queues keep its access delay.
    assert_eq!(bn.dir(3).link().delay(), Dur::from_millis(1));
    assert_eq!(bn.dir(5).link().delay(), Dur::ZERO);

    assert!(!access.is_empty());
    assert_eq!(
        (0..7).map(|q| access.dir_of(q)).collect::<Vec<_>>(),
        [DOWN, UP, DOWN, DOWN, UP, DOWN, UP]
    );
    assert_eq!(access.cell_queue(laptop, DOWN, Ac::Be), Some(3));
    assert_eq!(access.cell_queue(laptop, UP, Ac::Be), Some(4));
    assert_eq!(access.cell_queue(laptop, DOWN, Ac::Vi), None);
    assert_eq!(access.cell_queue(phone, DOWN, Ac::Vi), Some(5));
    assert_eq!(access.cell_queue(phone, UP, Ac::Vi), Some(6));
    assert_eq!(access.cell_queue(idle, DOWN, Ac::Be), None);
    assert_eq!(access.cell_queue(srv, DOWN, Ac::Be), None);
    // Paths: [before the bottleneck, after it].
    let bulk = &s.flows[0];
    let call = &s.flows[1];
    let upload = &s.flows[2];
    assert_eq!(access.path(bulk, DOWN), [Some(2), Some(3)]);
    assert_eq!(access.path(bulk, UP), [Some(4), None]);
    assert_eq!(access.path(call, DOWN), [Some(2), Some(5)]);
    assert_eq!(access.path(call, UP), [Some(6), None]);
    assert_eq!(access.path(upload, UP), [Some(4), None]);
    assert_eq!(access.path(upload, DOWN), [Some(2), Some(3)]);
    // Same numbering as cell_config's queue order.
    let cfg = build::cell_config(&s).unwrap();
    assert_eq!(cfg, bn.cell(0).config().clone());
    // Without [wifi]: no cell, and AccessQueues::of is AccessQueues::new.
    let plain = parse(BASE).unwrap();
    assert_eq!(build::cell_config(&plain), None);
    assert_eq!(AccessQueues::of(&plain), AccessQueues::new(&plain.hosts));
    assert!(AccessQueues::of(&plain).is_empty());
}

#[test]
fn cost_counts_the_cells_queues() {
    use l4slab_scenario::cost::Cost;
    let no_cell = parse(HOSTS).unwrap();
    let cell = parse(&home("")).unwrap();
    let (a, b) = (Cost::estimate(&no_cell), Cost::estimate(&cell));
    // Four FIFO queues of 7 rows each (a FIFO has no sub-queues or xstats
    // beyond those the bottleneck's FIFO has).
    let per_fifo = (a.rows_per_sample - 2 * 16) / 2;
    assert_eq!(b.rows_per_sample, a.rows_per_sample + 4 * per_fifo);
    assert_eq!(a.access_links_per_packet, 0);
    assert_eq!(b.access_links_per_packet, 1);
}

#[test]
fn example_file_resolves() {
    let path = common::scenarios_dir().join("examples/wifi-home.toml");
    let s = l4slab_scenario::parse_file(&path, &[], &common::opts()).unwrap();
    let w = s.wifi.as_ref().unwrap();
    assert_eq!(w.links, [ax80()]);
    assert_eq!(w.stations.len(), 2);
    let (bn, _) = build::network(&s, 1);
    assert_eq!(bn.cells(), 1);
}

#[test]
fn the_docs_example_resolves() {
    let docs = l4slab_core::param::docs_page("scenarios.md").unwrap();
    let section = &docs[docs.find("## Wi-Fi cell").expect("the section")..];
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let text = format!(
        "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Gbit\"\ndelay = \"8ms\"\nbuffer = \"1000pkt\"\n{block}"
    );
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let w = s.wifi.unwrap();
    assert!(matches!(w.ap_qdisc, QdiscSpec::FqCodel(_)));
    assert_eq!(w.ap_edca.get(Ac::Vo).txop, Dur::ZERO);
    let gamer = &w.stations[0];
    assert_eq!(s.hosts[gamer.host].name, "gamer");
    assert_eq!(
        (gamer.edca.get(Ac::Be).cw_min, gamer.edca.get(Ac::Be).cw_max),
        (3, 7)
    );
    assert_eq!(gamer.scan, None);
    assert!(w.stations[1].scan.is_some());
    assert!(gamer.links[0].mcs < w.stations[1].links[0].mcs);
    assert_eq!(s.flows[0].wifi_ac, Ac::Vi);
}

#[test]
fn the_aps_l4s_aggregate_bound_reaches_the_cell() {
    // Unset: no bound, and the resolved scenario does not name it.
    let s = parse(&home("")).unwrap();
    assert_eq!(s.wifi.as_ref().unwrap().ap_l4s_ppdu_max, None);
    assert_eq!(build::cell_config(&s).unwrap().l4s_ppdu_max, None);
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("l4s_ppdu_max"), "{json}");
    // Written, or from --set: the cell gets it.
    let s = parse(&home("[wifi.ap]\nl4s_ppdu_max = \"1ms\"")).unwrap();
    assert_eq!(
        build::cell_config(&s).unwrap().l4s_ppdu_max,
        Some(Dur::from_millis(1))
    );
    let s = parse_set(&home(""), &["wifi.ap.l4s_ppdu_max=1.504ms"]).unwrap();
    assert_eq!(
        s.wifi.unwrap().ap_l4s_ppdu_max,
        Some(Dur::from_micros(1504))
    );
    // Zero or not a duration: an error at the key.
    for bad in ["\"0ms\"", "3"] {
        let e = err(&home(&format!("[wifi.ap]\nl4s_ppdu_max = {bad}")));
        assert_eq!(path_of(&e), "wifi.ap.l4s_ppdu_max", "{e}");
    }
}
