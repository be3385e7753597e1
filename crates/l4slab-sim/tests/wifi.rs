//! A Wi-Fi cell under real TCP (docs/models/wifi.md, "Validation"): one
//! station's Cubic download over 802.11a at 54 Mbit/s gets what the airtime
//! arithmetic of its frames gives.

mod common;

use l4slab_wifi::config::MAC_OVERHEAD;
use l4slab_wifi::phy::{Band, Phy, Standard};

const ONE_STATION: &str = r#"
format = 1
duration = "20s"
warmup = "5s"
[bottleneck]
rate = "1Gbit"
delay = "5ms"
buffer = "1000pkt"
[wifi]
standard = "a"
[[flows]]
name = "down"
cc = "cubic"
app = "bulk"
"#;

/// Without aggregation every frame is one exchange: AIFS, the mean backoff
/// (CWmin/2 slots), the frame, SIFS and the MAC ACK (REFERENCES.md §4.4).
/// Per data segment the air carries one data frame from the AP and `r` TCP
/// ACK frames from the station (`r` = the ACKs the receiver sent per data
/// segment in the run: delayed ACKs, about one per two). Collisions between
/// the two and the overlap of their backoffs are left out; they cost a few
/// per cent (4 % of the accesses collide here), so within 5 %.
#[test]
fn one_stations_tcp_goodput_is_the_airtime_arithmetic() {
    let out = common::run_toml(ONE_STATION, &[]);
    let s = &out.summary;
    let phy = Phy::new(Standard::A, Band::G5, 20, 1).unwrap();
    let mcs = 7; // 54 Mbit/s: the best MCS at the default 40 dB
    assert_eq!(s["scenario"]["wifi"]["stations"][0]["links"][0]["mcs"], mcs);
    let us = |d: l4slab_core::Dur| d.as_secs_f64() * 1e6;
    let exchange = |ip_bytes: u64, aifsn: u64| {
        let aifs = phy.sifs() + phy.slot() * aifsn;
        us(aifs)
            + 7.5 * us(phy.slot())
            + us(phy.ppdu_duration(mcs, ip_bytes + u64::from(MAC_OVERHEAD)))
            + us(phy.sifs())
            + us(phy.ack_duration(14))
    };
    let q = |name: &str| s["queues"][name]["sent_packets"].as_f64().unwrap();
    let r = q("wifi.client.up.be") / q("wifi.client.down.be");
    assert!((0.4..0.7).contains(&r), "TCP ACKs per data segment: {r}");
    // 1448 B of payload in a 1500 B packet; a TCP ACK is 52 B (timestamps).
    let per_segment_us = exchange(1500, 3) + r * exchange(52, 3);
    let expect = 1448.0 * 8.0 / per_segment_us * 1e6;
    let got = s["flows"]["down"]["goodput_bps"].as_f64().unwrap();
    eprintln!(
        "goodput {:.2} Mbit/s, airtime arithmetic {:.2} (r = {r:.3})",
        got / 1e6,
        expect / 1e6
    );
    assert!((got / expect - 1.0).abs() < 0.05, "{got} vs {expect}");
}
