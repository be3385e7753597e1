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
        // Several losses in one window are one congestion event (NewReno), so
        // the window halves less often than p: Mathis with the measured
        // congestion-event rate is the sharper check.
        let events = common::f64_of(&f["recovery_episodes"]) + common::f64_of(&f["rto_count"]);
        let p_event = events / common::f64_of(&f["data_segments_sent"]);
        let m_event = mathis(1448.0, rtt, p_event);
        // Byte-counting Reno grows 1 MSS per RTT even with delayed ACKs, so b = 1.
        let pad = padhye(1448.0, rtt, p, 1.0, 0.2 + 4.0 * 0.005);
        println!(
            "p={p}: goodput {:.3} Mbit/s, mean RTT {:.1} ms, Mathis(p) {:.3}, Padhye(p) {:.3} \
             (ratio {:.2}); congestion events/pkt {p_event:.4}, Mathis(p_event) {:.3} (ratio {:.2})",
            goodput * 8e-6,
            rtt * 1e3,
            m * 8e-6,
            pad * 8e-6,
            goodput / pad,
            m_event * 8e-6,
            goodput / m_event,
        );
        assert!(goodput < last, "goodput must fall as loss rises");
        last = goodput;
        assert!(
            (0.85..=1.15).contains(&(goodput / m_event)),
            "p={p}: goodput {goodput:.0} B/s vs Mathis(p_event) {m_event:.0} B/s"
        );
        assert!(
            (0.8..=1.4).contains(&(goodput / pad)),
            "p={p}: goodput {goodput:.0} B/s vs Padhye {pad:.0} B/s"
        );
        assert!(p_event < p, "congestion events cannot outnumber losses");
    }
}
