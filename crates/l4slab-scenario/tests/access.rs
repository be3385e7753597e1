//! `[hosts.NAME.access]`: a host's own access link, read as `[bottleneck]`
//! is (shared keys, per-direction overrides), its delay the host's
//! `access_delay`, in the resolved scenario only when written.

mod common;

use common::parse;
use l4slab_core::{Dur, Rate};
use l4slab_link::EcnRewrite;
use l4slab_qdisc::FifoConfig;
use l4slab_scenario::{BufferLimit, LinkSpec, LossSpec, QdiscSpec};

const TWO_HOSTS: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"

[hosts.laptop]
side = "client"
access_delay = "5ms"

[hosts.laptop.access]
rate = "50Mbit"
buffer = "20ms"

[hosts.laptop.access.up]
rate = "10Mbit"
qdisc = { kind = "dualpi2", l_flows = ["up"] }

[hosts.phone]
side = "client"

[hosts.nic]
side = "server"
access = { down = { rate = "1Gbit", buffer = "1000pkt", loss = "1%" } }

[[flows]]
name = "down"
client = "laptop"

[[flows]]
name = "up"
client = "laptop"
direction = "up"

[[flows]]
name = "phone"
client = "phone"
"#;

#[test]
fn shared_keys_apply_to_both_directions_and_a_direction_table_overrides_them() {
    let s = parse(TWO_HOSTS).unwrap();
    let laptop = &s.hosts[0];
    assert_eq!(laptop.name, "laptop");
    // Down: the shared keys; 50 Mbit/s x 20 ms = 125,000 B.
    assert_eq!(
        laptop.access.down,
        Some(LinkSpec {
            rate: Rate::from_mbps(50),
            delay: Dur::from_millis(5),
            qdisc: QdiscSpec::Fifo(FifoConfig {
                limit: BufferLimit::Time {
                    time: Dur::from_millis(20),
                    bytes: 125_000
                },
                head_drop: false,
            }),
            loss: LossSpec::None,
            ecn_rewrite: EcnRewrite::None,
            rate_trace: None,
        })
    );
    // Up: its own rate (the time buffer converts at it) and qdisc; the
    // dualpi2's flow names resolve to flow ids as the bottleneck's do.
    let up = laptop.access.up.as_ref().unwrap();
    assert_eq!(up.rate, Rate::from_mbps(10));
    assert_eq!(up.delay, Dur::from_millis(5), "the host's access_delay");
    let QdiscSpec::Dualpi2(cfg) = &up.qdisc else {
        panic!("{:?}", up.qdisc)
    };
    assert_eq!(cfg.l_flows, [1]);
    // 10 Mbit/s x 20 ms = 25,000 B = 16 packets of 1500 B.
    assert_eq!(cfg.limit, 16);
}

#[test]
fn a_direction_without_a_rate_has_no_access_link() {
    let s = parse(TWO_HOSTS).unwrap();
    let names: Vec<&str> = s.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["laptop", "phone", "nic"]);
    assert!(s.hosts[1].access.is_empty(), "phone has none");
    let nic = &s.hosts[2].access;
    assert!(nic.up.is_none(), "{nic:?}");
    let down = nic.down.as_ref().unwrap();
    assert_eq!(down.rate, Rate::from_mbps(1000));
    assert_eq!(down.delay, Dur::ZERO);
    assert_eq!(
        down.loss,
        LossSpec::Bernoulli {
            p: 0.01,
            ecn: false
        }
    );
    assert_eq!(nic.dir(0), Some(down));
    assert_eq!(nic.dir(1), None);
}

#[test]
fn the_resolved_scenario_lists_an_access_link_only_where_there_is_one() {
    let v = serde_json::to_value(parse(TWO_HOSTS).unwrap()).unwrap();
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["access"]["down"]["rate"], 50_000_000, "{v}");
    assert_eq!(hosts[0]["access"]["up"]["qdisc"]["kind"], "dualpi2");
    assert!(hosts[1].get("access").is_none(), "{}", hosts[1]);
    assert!(hosts[2]["access"].get("up").is_none(), "{}", hosts[2]);
    assert_eq!(hosts[2]["access"]["down"]["delay"], 0);
}

#[test]
fn access_keys_can_be_set_from_the_command_line() {
    let s = common::parse_set(
        TWO_HOSTS,
        &[
            "hosts.phone.access.rate=2Mbit",
            "hosts.phone.access.buffer=10pkt",
            "hosts.phone.access.down.qdisc=fq_codel",
        ],
    )
    .unwrap();
    let phone = &s.hosts[1].access;
    assert_eq!(phone.up.as_ref().unwrap().rate, Rate::from_mbps(2));
    assert!(matches!(
        phone.down.as_ref().unwrap().qdisc,
        QdiscSpec::FqCodel(_)
    ));
}
