//! Behaviour: a Reno flow under random loss follows the standard TCP
//! throughput models (Mathis et al. 1997; Padhye et al. 1998).
//! The numbers this prints are recorded in docs/models/reno.md.

mod common;

const SCN: &str = r#"
format = 1
duration = "120s"
[bottleneck]
rate = "100Mbit"        # far above what Reno reaches at these loss rates
delay = "25ms"          # RTT 50 ms
buffer = "1000pkt"
[[flows]]
name = "reno"
cc = "reno"
app = "bulk"
"#;

/// Padhye et al. (SIGCOMM 1998) eq. (31), in bytes/s: b = packets acked per
/// ACK, t0 = retransmission timeout.
fn padhye(mss: f64, rtt: f64, p: f64, b: f64, t0: f64) -> f64 {
    let denom = rtt * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    mss / denom
}

/// Mathis et al.: BW = (MSS/RTT) * sqrt(3/2) / sqrt(p).
fn mathis(mss: f64, rtt: f64, p: f64) -> f64 {
    mss / rtt * (1.5f64).sqrt() / p.sqrt()
}

#[test]
fn reno_throughput_follows_the_loss_models() {
    let mut last = f64::INFINITY;
    for p in [0.005, 0.01, 0.02] {
        let out = common::run_toml(SCN, &[&format!("bottleneck.down.loss={}", p)]);
        let f = common::flow(&out, "reno");
        let goodput = common::f64_of(&f["goodput_bps"]) / 8.0;
        let rtt = common::f64_of(&f["rtt_ms"]["mean"]) / 1e3;
        let m = mathis(1448.0, rtt, p);
        // Byte-counting Reno grows 1 MSS per RTT even with delayed ACKs, so b = 1.
        let pad = padhye(1448.0, rtt, p, 1.0, 0.2 + 4.0 * 0.005);
        println!(
            "p={p}: goodput {:.3} Mbit/s, mean RTT {:.1} ms, Mathis {:.3}, Padhye {:.3} (ratio to Padhye {:.2})",
            goodput * 8e-6,
            rtt * 1e3,
            m * 8e-6,
            pad * 8e-6,
            goodput / pad
        );
        assert!(goodput < last, "goodput must fall as loss rises");
        last = goodput;
        assert!(
            (0.75..=1.3).contains(&(goodput / pad)),
            "p={p}: goodput {goodput:.0} B/s vs Padhye {pad:.0} B/s"
        );
        assert!(goodput < m * 1.3, "above the Mathis upper bound");
    }
}
