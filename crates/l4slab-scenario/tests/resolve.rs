//! Resolution: defaults, merging of the two bottleneck directions, host
//! ordering, count expansion, time buffers, overrides, and JSON output.

mod common;

use common::{base_with, parse, parse_set, BASE};
use l4slab_app::cbr::CbrConfig;
use l4slab_app::cloud_gaming::CloudGamingConfig;
use l4slab_app::oneway::{BulkConfig, FileConfig};
use l4slab_app::video_call::VideoCallConfig;
use l4slab_core::{Dur, Ecn, Rate, Time};
use l4slab_link::EcnRewrite;
use l4slab_qdisc::FifoConfig;
use l4slab_scenario::{
    parse_with, AccessLinks, AppSpec, Bottleneck, BufferLimit, CcSpec, Direction, Flow,
    FrameTransport, Framed, Host, LinkSpec, LossSpec, MediaCcKind, Protocol, QdiscSpec, Scenario,
    Side, TransportSpec, WebConnection, WebObjectSpec, WebPage, WebSpec,
};

fn fifo_pkts(n: u32) -> QdiscSpec {
    QdiscSpec::Fifo(FifoConfig {
        limit: BufferLimit::Packets(n),
        head_drop: false,
    })
}

#[test]
fn minimal_file_gets_every_default() {
    let s = parse(BASE).unwrap();
    let link = LinkSpec {
        rate: Rate::from_mbps(20),
        delay: Dur::from_millis(10),
        qdisc: fifo_pkts(100),
        loss: LossSpec::None,
        ecn_rewrite: EcnRewrite::None,
        rate_trace: None,
    };
    let expect = Scenario {
        format: 1,
        name: "test".into(), // stem of "test.toml"
        description: String::new(),
        duration: Time::from_secs(10),
        warmup: Dur::ZERO,
        seed: 1,
        sample_interval: Dur::from_millis(100),
        packet_trace: false,
        pcap: false,
        bottleneck: Bottleneck {
            down: link.clone(),
            up: link,
        },
        wifi: None,
        hosts: vec![
            Host::single("client", Side::Client, Dur::ZERO, AccessLinks::default()),
            Host::single("server", Side::Server, Dur::ZERO, AccessLinks::default()),
        ],
        flows: vec![Flow {
            name: "flow0".into(),
            entry: l4slab_scenario::Entry::Flow(0),
            client: 0,
            server: 1,
            direction: Direction::Down,
            cc: CcSpec::named("reno").unwrap(),
            start: Time::ZERO,
            app: AppSpec::Bulk(BulkConfig),
            transport: TransportSpec::default(),
            ecn: None,
            wifi_ac: l4slab_wifi::edca::Ac::Be,
        }],
    };
    assert_eq!(s, expect);
    // Without a .toml source name, the default name is "scenario".
    let s = parse_with(BASE, "<string>", &[], &common::opts()).unwrap();
    assert_eq!(s.name, "scenario");
}

#[test]
fn every_key_written_out() {
    let text = r#"
format = 1
name = "full"
description = "every key"
duration = "1min"
warmup = "15s"
seed = 42
sample_interval = "10ms"
packet_trace = true

[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "50ms"
qdisc = { kind = "fifo", head_drop = true }
loss = { kind = "gilbert_elliott", p = "1%", r = "30%" }

[bottleneck.up]
rate = "5Mbit"
delay = "15ms"
buffer = "64KiB"
qdisc = "fifo"
loss = 0.001

[hosts.phone]
side = "client"
access_delay = "20ms"

[hosts.laptop]
side = "client"
access_delay = "2ms"

[hosts.cdn]
side = "server"
access_delay = "1ms"

[[flows]]
name = "video"
client = "phone"
server = "cdn"
direction = "down"
cc = "cubic"
start = "1.5s"
app = { kind = "file", size = "10MB" }

[flows.transport]
mss = 1400
initial_window = 4
delayed_ack = false
delayed_ack_timeout = "25ms"
min_rto = "1s"
rto_formula = "rfc6298"
tlp = false
frto = false
undo = false
dsack = false
pacing = true
send_buffer = "1MiB"
notsent_lowat = "128KiB"
receive_buffer = "2MiB"
fastopen = true

[[flows]]
name = "backup"
client = "laptop"
direction = "up"
app = "bulk"
"#;
    let s = parse(text).unwrap();
    assert_eq!(s.name, "full");
    assert_eq!(s.description, "every key");
    assert_eq!(s.duration, Time::from_secs(60));
    assert_eq!(s.warmup, Dur::from_secs(15));
    assert_eq!(s.seed, 42);
    assert_eq!(s.sample_interval, Dur::from_millis(10));
    assert!(s.packet_trace);
    assert_eq!(
        s.bottleneck.down,
        LinkSpec {
            rate: Rate::from_mbps(20),
            delay: Dur::from_millis(10),
            // 20 Mbit/s x 50 ms = 1,000,000 bit = 125,000 B.
            qdisc: QdiscSpec::Fifo(FifoConfig {
                limit: BufferLimit::Time {
                    time: Dur::from_millis(50),
                    bytes: 125_000
                },
                head_drop: true,
            }),
            loss: LossSpec::GilbertElliott {
                p: 0.01,
                r: 0.3,
                k: 1.0,
                h: 0.0,
                ecn: false
            },
            ecn_rewrite: EcnRewrite::None,
            rate_trace: None,
        }
    );
    assert_eq!(
        s.bottleneck.up,
        LinkSpec {
            rate: Rate::from_mbps(5),
            delay: Dur::from_millis(15),
            qdisc: QdiscSpec::Fifo(FifoConfig {
                limit: BufferLimit::Bytes(65_536),
                head_drop: false
            }),
            loss: LossSpec::Bernoulli {
                p: 0.001,
                ecn: false
            },
            ecn_rewrite: EcnRewrite::None,
            rate_trace: None,
        }
    );
    let names: Vec<(&str, Side)> = s.hosts.iter().map(|h| (h.name.as_str(), h.side)).collect();
    assert_eq!(
        names,
        [
            ("laptop", Side::Client),
            ("phone", Side::Client),
            ("cdn", Side::Server)
        ]
    );
    assert_eq!(s.hosts[1].access_delay, Dur::from_millis(20));
    let video = &s.flows[0];
    assert_eq!((video.client, video.server), (1, 2));
    assert_eq!(video.cc.kind, "cubic");
    assert_eq!(video.start, Time::from_millis(1500));
    assert_eq!(video.app, AppSpec::File(FileConfig { size: 10_000_000 }));
    assert_eq!(
        video.transport,
        TransportSpec {
            mss: 1400,
            initial_window: 4,
            delayed_ack: false,
            delayed_ack_timeout: Dur::from_millis(25),
            min_rto: Dur::from_secs(1),
            rto_formula: l4slab_scenario::RtoFormulaSpec::Rfc6298,
            tlp: false,
            frto: false,
            undo: false,
            dsack: false,
            pacing: true,
            send_buffer: 1 << 20,
            notsent_lowat: Some(128 << 10),
            receive_buffer: 2 << 20,
            ecn_codepoint: None,
            fastopen: true,
            protocol: Protocol::Tcp,
        }
    );
    let backup = &s.flows[1];
    // The only server-side host is the default for `server`.
    assert_eq!((backup.client, backup.server), (0, 2));
    assert_eq!(backup.direction, Direction::Up);
    assert_eq!(backup.cc.kind, "reno");
    assert_eq!(backup.app, AppSpec::Bulk(BulkConfig));
}

#[test]
fn direction_tables_override_shared_keys() {
    let s = base_with(&[
        "bottleneck.down.rate=50Mbit",
        "bottleneck.up.rate=5Mbit",
        "bottleneck.up.loss=1%",
    ]);
    assert_eq!(s.bottleneck.down.rate, Rate::from_mbps(50));
    assert_eq!(s.bottleneck.up.rate, Rate::from_mbps(5));
    assert_eq!(s.bottleneck.down.loss, LossSpec::None);
    assert_eq!(
        s.bottleneck.up.loss,
        LossSpec::Bernoulli {
            p: 0.01,
            ecn: false
        }
    );
    assert_eq!(s.bottleneck.up.delay, Dur::from_millis(10));
}

#[test]
fn time_buffers_convert_per_direction() {
    let s = base_with(&[
        "bottleneck.buffer=50ms",
        "bottleneck.up.rate=1Mbit",
        "bottleneck.down.buffer=100ms",
    ]);
    // down: 20 Mbit/s x 100 ms = 250,000 B; up: 1 Mbit/s x 50 ms = 6,250 B.
    let limit = |l: &LinkSpec| match &l.qdisc {
        QdiscSpec::Fifo(FifoConfig { limit, .. }) => *limit,
        other => panic!("the default qdisc is fifo, got {other:?}"),
    };
    assert_eq!(
        limit(&s.bottleneck.down),
        BufferLimit::Time {
            time: Dur::from_millis(100),
            bytes: 250_000
        }
    );
    assert_eq!(
        limit(&s.bottleneck.up),
        BufferLimit::Time {
            time: Dur::from_millis(50),
            bytes: 6_250
        }
    );
    // A tiny time buffer still holds one 1500 B packet.
    let s = base_with(&["bottleneck.buffer=1us"]);
    assert_eq!(
        limit(&s.bottleneck.down),
        BufferLimit::Time {
            time: Dur::from_micros(1),
            bytes: 1500
        }
    );
}

#[test]
fn loss_forms() {
    let loss = |v: &str| {
        base_with(&[&format!("bottleneck.loss={v}")])
            .bottleneck
            .down
            .loss
    };
    assert_eq!(
        loss("1%"),
        LossSpec::Bernoulli {
            p: 0.01,
            ecn: false
        }
    );
    assert_eq!(
        loss("0.02"),
        LossSpec::Bernoulli {
            p: 0.02,
            ecn: false
        }
    );
    assert_eq!(loss("0%"), LossSpec::None);
    assert_eq!(loss("0"), LossSpec::None);
    assert_eq!(loss("{ kind = \"none\" }"), LossSpec::None);
    assert_eq!(
        loss("{ kind = \"bernoulli\", p = \"0.5%\" }"),
        LossSpec::Bernoulli {
            p: 0.005,
            ecn: false
        }
    );
    assert_eq!(loss("{ kind = \"bernoulli\", p = 0 }"), LossSpec::None);
    assert_eq!(
        loss("{ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", k = \"99%\", h = 0.5 }"),
        LossSpec::GilbertElliott {
            p: 0.01,
            r: 0.3,
            k: 0.99,
            h: 0.5,
            ecn: false
        }
    );
    // netem's `loss ... ecn`, per direction.
    let s = base_with(&[
        "bottleneck.down.loss={ kind = \"bernoulli\", p = \"4%\", ecn = true }",
        "bottleneck.up.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", ecn = true }",
    ]);
    assert_eq!(
        s.bottleneck.down.loss,
        LossSpec::Bernoulli { p: 0.04, ecn: true }
    );
    assert!(s.bottleneck.up.loss.ecn());
    assert_eq!(
        loss("{ kind = \"bernoulli\", p = \"1%\", ecn = false }"),
        LossSpec::Bernoulli {
            p: 0.01,
            ecn: false
        }
    );
}

#[test]
fn app_forms() {
    let app = |v: &str| {
        base_with(&[&format!("flows[0].app={v}")]).flows[0]
            .app
            .clone()
    };
    assert_eq!(app("bulk"), AppSpec::Bulk(BulkConfig));
    assert_eq!(app("{ kind = \"bulk\" }"), AppSpec::Bulk(BulkConfig));
    assert_eq!(
        app("{ kind = \"file\", size = \"64KiB\" }"),
        AppSpec::File(FileConfig { size: 65_536 })
    );
}

#[test]
fn cbr_has_its_defaults_and_takes_rate_size_and_ecn() {
    let app = |v: &str| {
        base_with(&[&format!("flows[0].app={v}")]).flows[0]
            .app
            .clone()
    };
    let defaults = CbrConfig {
        rate: Rate::from_mbps(1),
        size: 1200,
        ecn: Ecn::NotEct,
    };
    assert_eq!(app("cbr"), AppSpec::Cbr(defaults));
    assert_eq!(app("{ kind = \"cbr\" }"), AppSpec::Cbr(defaults));
    assert_eq!(
        app("{ kind = \"cbr\", rate = \"5Mbit\", size = \"1200B\", ecn = \"ect1\" }"),
        AppSpec::Cbr(CbrConfig {
            rate: Rate::from_mbps(5),
            size: 1200,
            ecn: Ecn::Ect1,
        })
    );
    // The size range's ends: one byte, and the largest UDP payload over IPv4.
    for (size, bytes) in [("1B", 1), ("65507B", 65_507)] {
        let spec = app(&format!("{{ kind = \"cbr\", size = \"{size}\" }}"));
        assert_eq!(
            spec,
            AppSpec::Cbr(CbrConfig {
                size: bytes,
                ..defaults
            })
        );
    }
}

#[test]
fn frame_apps_have_their_defaults_and_a_start_within_the_limits() {
    let app = |v: &str| {
        base_with(&[&format!("flows[0].app={v}")]).flows[0]
            .app
            .clone()
    };
    let framed = |app| Framed {
        app,
        transport: FrameTransport::Tcp,
    };
    let game = CloudGamingConfig {
        fps: 60,
        start_bitrate: Rate::from_mbps(40),
        min_bitrate: Rate::from_mbps(1),
        max_bitrate: Rate::from_mbps(40),
        late_threshold: Dur::from_millis(50),
        stall_threshold: Dur::from_millis(200),
    };
    assert_eq!(app("cloud_gaming"), AppSpec::CloudGaming(framed(game)));
    let call = VideoCallConfig {
        fps: 30,
        start_bitrate: Rate::from_kbps(1_500),
        min_bitrate: Rate::from_kbps(150),
        max_bitrate: Rate::from_kbps(2_500),
        late_threshold: Dur::from_millis(150),
        stall_threshold: Dur::from_millis(200),
    };
    assert_eq!(
        app("{ kind = \"video_call\" }"),
        AppSpec::VideoCall(Framed {
            app: call,
            transport: FrameTransport::Tcp
        })
    );
    // The default start follows a lower max (and a higher min).
    assert_eq!(
        app("{ kind = \"cloud_gaming\", max_bitrate = \"15Mbit\", fps = 30 }"),
        AppSpec::CloudGaming(framed(CloudGamingConfig {
            fps: 30,
            start_bitrate: Rate::from_mbps(15),
            max_bitrate: Rate::from_mbps(15),
            ..game
        }))
    );
    assert_eq!(
        app("{ kind = \"video_call\", min_bitrate = \"2Mbit\" }"),
        AppSpec::VideoCall(Framed {
            app: VideoCallConfig {
                start_bitrate: Rate::from_mbps(2),
                min_bitrate: Rate::from_mbps(2),
                ..call
            },
            transport: FrameTransport::Tcp
        })
    );
}

#[test]
fn web_objects_on_new_connections_become_flows_of_their_own() {
    let s = base_with(&[
        "flows[0].name=page",
        "flows[0].start=1s",
        r#"flows[0].app={ kind = "web", request_size = "300B", objects = [
            { size = "10MB" },
            { size = "20KB", at = "5s", connection = "new" },
            { size = "5KB", at = "2s" },
        ] }"#,
        "flows[1].name=after",
    ]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["page", "page.obj1", "after"]);
    let obj = |index, size, at, connection| WebObjectSpec {
        index,
        size,
        at: Dur::from_secs(at),
        connection,
    };
    assert_eq!(
        s.flows[0].app,
        AppSpec::Web(WebSpec {
            request_size: 300,
            objects: vec![
                obj(0, 10_000_000, 0, WebConnection::Existing),
                obj(2, 5_000, 2, WebConnection::Existing),
            ],
            page: None,
        })
    );
    let part = &s.flows[1];
    assert_eq!(part.start, Time::from_secs(6), "page start 1 s + at 5 s");
    assert_eq!(
        part.app,
        AppSpec::Web(WebSpec {
            request_size: 300,
            objects: vec![obj(1, 20_000, 5, WebConnection::New)],
            page: Some(WebPage {
                flow: "page".into(),
                start: Time::from_secs(1),
            }),
        })
    );
    // The split-off flow shares everything else with its page.
    assert_eq!(
        (part.cc.kind.as_str(), part.client, part.server),
        ("reno", 0, 1)
    );
    // connection = "new" at the app level applies to every object without one.
    let s = base_with(&[
        r#"flows[0].app={ kind = "web", connection = "new", objects = [{ size = "1KB" }, { size = "2KB", connection = "existing" }] }"#,
    ]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["flow0", "flow0.obj0"]);
    // With count, every copy splits: page.0.obj1, ...
    let s = base_with(&[
        "flows[0].name=p",
        "flows[0].count=2",
        r#"flows[0].app={ kind = "web", objects = [{ size = "1KB" }, { size = "1KB", at = "1s", connection = "new" }] }"#,
    ]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["p.0", "p.0.obj1", "p.1", "p.1.obj1"]);
}

#[test]
fn count_expands_flows() {
    let s = base_with(&[
        "flows[0].name=bulk",
        "flows[0].count=3",
        "flows[1].name=probe",
    ]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bulk.0", "bulk.1", "bulk.2", "probe"]);
    assert_eq!(s.flows[0].app, s.flows[2].app);
    // count = 1 keeps the plain name; default names use the [[flows]] index.
    let s = base_with(&["flows[0].count=1", "flows[1].count=2"]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["flow0", "flow1.0", "flow1.1"]);
}

#[test]
fn host_order_does_not_depend_on_file_order() {
    let a = "[hosts.zed]\nside = \"server\"\n[hosts.bob]\nside = \"client\"\n[hosts.amy]\nside = \"server\"\n[hosts.cat]\nside = \"client\"\n";
    let b = "[hosts.cat]\nside = \"client\"\n[hosts.amy]\nside = \"server\"\n[hosts.bob]\nside = \"client\"\n[hosts.zed]\nside = \"server\"\n";
    let flows = "[[flows]]\nclient = \"cat\"\nserver = \"zed\"\n";
    let head = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n";
    let sa = parse(&format!("{head}{a}{flows}")).unwrap();
    let sb = parse(&format!("{head}{b}{flows}")).unwrap();
    assert_eq!(sa, sb);
    let names: Vec<&str> = sa.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["bob", "cat", "amy", "zed"]);
    assert_eq!((sa.flows[0].client, sa.flows[0].server), (1, 3));
}

#[test]
fn default_hosts_fill_a_missing_side() {
    // Only client hosts written: a "server" host is added.
    let s = base_with(&["hosts.laptop.side=client"]);
    let names: Vec<&str> = s.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["laptop", "server"]);
    assert_eq!((s.flows[0].client, s.flows[0].server), (0, 1));
}

#[test]
fn overrides_apply_before_validation() {
    let s = base_with(&[
        "bottleneck.rate=50Mbit",
        "flows[0].cc=cubic",
        "duration=20s",
        "bottleneck.loss=2%",
        "seed=7",
        "flows[0].app.kind=file",
        "flows[0].app.size=1MB",
        "bottleneck.qdisc={ kind = \"fifo\", head_drop = true }",
        "packet_trace=true",
        "pcap=true",
    ]);
    assert_eq!(s.bottleneck.down.rate, Rate::from_mbps(50));
    assert_eq!(s.bottleneck.up.rate, Rate::from_mbps(50));
    assert_eq!(s.flows[0].cc.kind, "cubic");
    assert_eq!(s.duration, Time::from_secs(20));
    assert_eq!(
        s.bottleneck.down.loss,
        LossSpec::Bernoulli {
            p: 0.02,
            ecn: false
        }
    );
    assert_eq!(s.seed, 7);
    assert_eq!(
        s.flows[0].app,
        AppSpec::File(FileConfig { size: 1_000_000 })
    );
    assert_eq!(
        s.bottleneck.down.qdisc,
        QdiscSpec::Fifo(FifoConfig {
            limit: BufferLimit::Packets(100),
            head_drop: true
        })
    );
    assert!(s.packet_trace);
    assert!(s.pcap);
    // The resolved scenario shows `pcap` only when it is on.
    assert_eq!(serde_json::to_value(&s).unwrap()["pcap"], true);
    let plain = serde_json::to_value(base_with(&[])).unwrap();
    assert!(plain.get("pcap").is_none(), "{plain}");
    // Later overrides win.
    assert_eq!(base_with(&["seed=7", "seed=8"]).seed, 8);
    // An override can fix a file that would not parse on its own.
    let broken = BASE.replace("rate = \"20Mbit\"", "rate = \"fast\"");
    assert!(parse(&broken).is_err());
    assert_eq!(
        parse_set(&broken, &["bottleneck.rate=1Gbit"])
            .unwrap()
            .bottleneck
            .down
            .rate,
        Rate::from_mbps(1000)
    );
}

#[test]
fn json_is_deterministic() {
    let text =
        std::fs::read_to_string(common::scenarios_dir().join("examples/two-hosts.toml")).unwrap();
    let a = serde_json::to_string_pretty(&parse(&text).unwrap()).unwrap();
    let b = serde_json::to_string_pretty(&parse(&text).unwrap()).unwrap();
    assert_eq!(a, b);
    // Shape of the tagged enums, as summary.json will record them.
    let s = base_with(&[
        "bottleneck.buffer=50ms",
        "bottleneck.loss=1%",
        "flows[0].app={ kind = \"file\", size = \"1MB\" }",
    ]);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(
        v["bottleneck"]["down"]["qdisc"],
        serde_json::json!({ "kind": "fifo", "limit": { "time": { "time": 50_000_000, "bytes": 125_000 } }, "head_drop": false })
    );
    assert_eq!(
        v["bottleneck"]["down"]["loss"],
        serde_json::json!({ "kind": "bernoulli", "p": 0.01 })
    );
    assert_eq!(
        v["flows"][0]["app"],
        serde_json::json!({ "kind": "file", "size": 1_000_000 })
    );
    assert_eq!(
        v["hosts"][0],
        serde_json::json!({ "name": "client", "side": "client", "access_delay": 0 })
    );
    assert_eq!(v["flows"][0]["direction"], "down");
    assert_eq!(v["duration"], 10_000_000_000u64);
    // No warmup: the resolved scenario in summary.json is as it always was.
    assert!(v.get("warmup").is_none(), "{v}");
    let v = serde_json::to_value(base_with(&["warmup=\"2s\""])).unwrap();
    assert_eq!(v["warmup"], 2_000_000_000u64);
}

#[test]
fn stagger_spaces_the_starts_of_a_flows_copies() {
    let s = common::base_with(&[
        "flows[0].count=3",
        "flows[0].start=1s",
        "flows[0].stagger=250ms",
    ]);
    let starts: Vec<u64> = s.flows.iter().map(|f| f.start.as_nanos()).collect();
    assert_eq!(starts, [1_000_000_000, 1_250_000_000, 1_500_000_000]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["flow0.0", "flow0.1", "flow0.2"]);
}

#[test]
fn stagger_needs_count_and_its_last_copy_must_start_in_the_run() {
    let err = common::parse_set(common::BASE, &["flows[0].stagger=1s"]).unwrap_err();
    assert_eq!(err.path(), Some("flows[0].stagger"), "{err}");
    assert!(err.to_string().contains("give count too"), "{err}");
    let err =
        common::parse_set(common::BASE, &["flows[0].count=11", "flows[0].stagger=1s"]).unwrap_err();
    assert_eq!(err.path(), Some("flows[0].stagger"), "{err}");
    assert!(err.to_string().contains("would start at 10s"), "{err}");
    let err = common::parse_set(common::BASE, &["flows[0].count=2", "flows[0].stagger=soon"])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"flows[0].stagger: "soon" is not a duration; write e.g. "100ms""#
    );
}

#[test]
fn frame_apps_choose_rtp_with_a_media_controller_and_a_playout_delay() {
    let transport = |v: &str| {
        base_with(&[&format!("flows[0].app={v}")]).flows[0]
            .app
            .frame_transport()
            .expect("a frame app")
    };
    assert_eq!(
        transport(r#"{ kind = "video_call", transport = "tcp" }"#),
        FrameTransport::Tcp
    );
    assert_eq!(
        transport(r#"{ kind = "video_call", transport = "rtp" }"#),
        FrameTransport::rtp(MediaCcKind::Gcc, Dur::ZERO)
    );
    assert_eq!(
        transport(
            r#"{ kind = "cloud_gaming", transport = "rtp", media_cc = "scream", playout_delay = "20ms" }"#
        ),
        FrameTransport::rtp(MediaCcKind::Scream { l4s: true }, Dur::from_millis(20))
    );
    assert_eq!(
        transport(
            r#"{ kind = "video_call", transport = "rtp", media_cc = { kind = "scream", l4s = false } }"#
        ),
        FrameTransport::rtp(MediaCcKind::Scream { l4s: false }, Dur::ZERO)
    );
    assert_eq!(
        transport(r#"{ kind = "screen_share", transport = "rtp", media_cc = "scream" }"#),
        FrameTransport::rtp(MediaCcKind::Scream { l4s: true }, Dur::ZERO)
    );
    assert_eq!(
        transport(r#"{ kind = "screen_share" }"#),
        FrameTransport::Tcp
    );
    // A sample app: no rate control, no pacer, late = lost.
    assert_eq!(
        transport(
            r#"{ kind = "video_call", transport = "rtp", media_cc = { kind = "fixed", l4s = true }, pacing = false, playout_deadline = "50ms" }"#
        ),
        FrameTransport::Rtp {
            media_cc: MediaCcKind::Fixed { l4s: true },
            playout_delay: Dur::ZERO,
            pacing: false,
            playout_deadline: Some(Dur::from_millis(50)),
            feedback_ecn_media: false,
        }
    );
    assert_eq!(
        transport(
            r#"{ kind = "video_call", transport = "rtp", media_cc = "fixed", playout_deadline = "0s" }"#
        ),
        FrameTransport::rtp(MediaCcKind::Fixed { l4s: false }, Dur::ZERO)
    );
    assert_eq!(
        transport(
            r#"{ kind = "video_call", transport = "rtp", media_cc = "scream", feedback_ecn = "media" }"#
        ),
        FrameTransport::Rtp {
            media_cc: MediaCcKind::Scream { l4s: true },
            playout_delay: Dur::ZERO,
            pacing: true,
            playout_deadline: None,
            feedback_ecn_media: true,
        }
    );
    // The new keys are serialized only when they differ from the default.
    let j = serde_json::to_value(base_with(&[
        r#"flows[0].app={ kind = "video_call", transport = "rtp", pacing = false }"#,
    ]))
    .unwrap();
    assert_eq!(j["flows"][0]["app"]["transport"]["pacing"], false);
    assert!(j["flows"][0]["app"]["transport"]
        .get("playout_deadline")
        .is_none());
    let j = serde_json::to_value(base_with(&[
        r#"flows[0].app={ kind = "video_call", transport = "rtp", media_cc = "scream" }"#,
    ]))
    .unwrap();
    assert!(j["flows"][0]["app"]["transport"].get("pacing").is_none());
    assert_eq!(j["flows"][0]["app"]["transport"]["kind"], "rtp");
    assert_eq!(
        j["flows"][0]["app"]["transport"]["media_cc"]["kind"],
        "scream"
    );
}

#[test]
fn rtp_key_errors_name_their_path() {
    use l4slab_scenario::Problem;
    let cases: &[(&[&str], &str, Problem, &str)] = &[
        (
            &[r#"flows[0].app={ kind = "video_call", transport = "quic" }"#],
            "flows[0].app.transport",
            Problem::UnknownName,
            "choose one of: tcp, rtp",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", media_cc = "scream" }"#],
            "flows[0].app.media_cc",
            Problem::Conflict,
            "add transport = \"rtp\"",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", transport = "rtp", media_cc = "bbr" }"#],
            "flows[0].app.media_cc",
            Problem::UnknownName,
            "choose one of: gcc, scream, fixed",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", pacing = false }"#],
            "flows[0].app.pacing",
            Problem::Conflict,
            "add transport = \"rtp\"",
        ),
        (
            &[r#"flows[0].app={ kind = "cloud_gaming", playout_deadline = "50ms" }"#],
            "flows[0].app.playout_deadline",
            Problem::Conflict,
            "add transport = \"rtp\"",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", feedback_ecn = "media" }"#],
            "flows[0].app.feedback_ecn",
            Problem::Conflict,
            "add transport = \"rtp\"",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", transport = "rtp", feedback_ecn = "ect1" }"#],
            "flows[0].app.feedback_ecn",
            Problem::UnknownName,
            "not_ect, media",
        ),
        (
            &[r#"flows[0].app={ kind = "video_call", transport = "rtp", pacing = "off" }"#],
            "flows[0].app.pacing",
            Problem::WrongType,
            "true",
        ),
        (
            &[
                r#"flows[0].app={ kind = "video_call", transport = "rtp", media_cc = { kind = "gcc", l4s = true } }"#,
            ],
            "flows[0].app.media_cc.l4s",
            Problem::Conflict,
            "GCC is a classic controller",
        ),
        (
            &[
                "flows[0].cc=cubic",
                r#"flows[0].app={ kind = "cloud_gaming", transport = "rtp" }"#,
            ],
            "flows[0].cc",
            Problem::Conflict,
            "app.media_cc",
        ),
    ];
    for (sets, path, problem, fragment) in cases {
        let e = parse_set(BASE, sets).expect_err("must not parse");
        let msg = e.to_string();
        assert_eq!(e.path(), Some(*path), "{msg}");
        assert_eq!(e.problem(), Some(*problem), "{msg}");
        assert!(msg.contains(fragment), "{msg}");
    }
}

#[test]
fn quic_is_a_transport_protocol_for_the_apps_it_carries() {
    use l4slab_scenario::Problem;
    let f = &base_with(&[r#"flows[0].transport={ protocol = "quic" }"#]).flows[0];
    assert_eq!(f.transport.protocol, Protocol::Quic);
    assert_eq!(base_with(&[]).flows[0].transport.protocol, Protocol::Tcp);
    let e = parse_set(BASE, &[r#"flows[0].transport={ protocol = "sctp" }"#]).unwrap_err();
    assert_eq!(e.path(), Some("flows[0].transport.protocol"));
    assert_eq!(e.problem(), Some(Problem::UnknownName));
    assert!(e.to_string().contains("choose one of: tcp, quic"), "{e}");
    let e = parse_set(
        BASE,
        &[
            r#"flows[0].transport={ protocol = "quic" }"#,
            r#"flows[0].app={ kind = "ping" }"#,
        ],
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("flows[0].transport.protocol"));
    assert_eq!(e.problem(), Some(Problem::Conflict));
    assert!(
        e.to_string()
            .contains("bulk, file, web, web_browse, video_stream and download"),
        "{e}"
    );
    // A browsing session and a download: accepted (a download's parts are
    // QUIC flows each).
    for app in [
        r#"flows[0].app={ kind = "web_browse" }"#,
        r#"flows[0].app={ kind = "download", size = "1MB", connections = 3 }"#,
    ] {
        let s = base_with(&[r#"flows[0].transport={ protocol = "quic" }"#, app]);
        assert!(
            s.flows
                .iter()
                .all(|f| f.transport.protocol == Protocol::Quic),
            "{app}"
        );
    }
    // A web page over QUIC: its new-connection object is a QUIC flow too.
    let s = base_with(&[
        r#"flows[0].transport={ protocol = "quic" }"#,
        r#"flows[0].app={ kind = "web", objects = [{ size = "10KB" }, { size = "1KB", connection = "new" }] }"#,
    ]);
    assert_eq!(s.flows.len(), 2);
    assert!(s
        .flows
        .iter()
        .all(|f| f.transport.protocol == Protocol::Quic));
}
