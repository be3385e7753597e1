//! Behaviour: a CUBIC bulk flow under random loss follows the RFC 9438
//! response function, beats Reno where the cubic term dominates (high BDP,
//! low loss) and stays close to Reno in the Reno-friendly region (short RTT,
//! higher loss). Each (cc, RTT, p, seed) is a separate run of one flow; the
//! numbers this prints are recorded in docs/models/cubic.md. Run with
//! `cargo test --release -p l4slab-sim --test cubic_loss -- --nocapture`.

mod common;

const MSS: f64 = 1448.0;
const SEEDS: [u64; 2] = [1, 2];

fn scenario(cc: &str, rtt_ms: u64, seed: u64) -> String {
    // The default (Linux) RTO is at least SRTT + 200 ms, so fast recovery,
    // which waits an RTT for the retransmission, does not time out on the
    // 200 ms path either (RFC 6298's max(200 ms, SRTT + 4·RTTVAR) did).
    format!(
        r#"
format = 1
seed = {seed}
[bottleneck]
rate = "100Mbit"        # far above what either controller reaches at these loss rates
delay = "{one_way}ms"
buffer = "1000pkt"
[[flows]]
name = "f"
cc = "{cc}"
app = "bulk"
"#,
        one_way = rtt_ms / 2
    )
}

/// RFC 9438 §5.1 (REFERENCES §3.4): average CUBIC window in segments,
/// `max(1.054 (RTT/p)^0.75, sqrt(3/(2p)))`, the constant being
/// `(C (3 + β) / (4 (1 − β)))^0.25` for C = 0.4, β = 0.7. RTT in seconds.
fn cubic_window(rtt: f64, p: f64) -> f64 {
    let k = (0.4f64 * (3.0 + 0.7) / (4.0 * (1.0 - 0.7))).powf(0.25);
    (k * (rtt / p).powf(0.75)).max(reno_window(p))
}

/// Mathis et al.: the average Reno window, `sqrt(3/(2p))` segments.
fn reno_window(p: f64) -> f64 {
    (1.5 / p).sqrt()
}

/// Means over [`SEEDS`].
#[derive(Default)]
struct Run {
    goodput: f64, // B/s
    rtt: f64,     // s
    /// Congestion events (fast-recovery episodes + RTOs) per data segment.
    p_event: f64,
    rtos: f64,
}

fn run(cc: &str, rtt_ms: u64, p: f64, secs: u64) -> Run {
    let mut m = Run::default();
    let n = SEEDS.len() as f64;
    for seed in SEEDS {
        let out = common::run_toml(
            &scenario(cc, rtt_ms, seed),
            &[
                &format!("duration={secs}s"),
                &format!("bottleneck.down.loss={p}"),
            ],
        );
        let f = common::flow(&out, "f");
        let rtos = common::f64_of(&f["rto_count"]);
        let events = common::f64_of(&f["recovery_episodes"]) + rtos;
        m.goodput += common::f64_of(&f["goodput_bps"]) / 8.0 / n;
        m.rtt += common::f64_of(&f["rtt_ms"]["mean"]) / 1e3 / n;
        m.p_event += events / common::f64_of(&f["data_segments_sent"]) / n;
        m.rtos += rtos / n;
    }
    m
}

#[test]
fn cubic_follows_its_response_function_and_is_reno_friendly_where_it_should_be() {
    println!(
        "| RTT | p | region | CUBIC Mbit/s | Reno Mbit/s | CUBIC/Reno (model) | \
         CUBIC model(p) | CUBIC events/pkt | CUBIC / model(events) | Reno / Mathis(events) | RTOs C/R |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut last = (0, f64::INFINITY);
    for (rtt_ms, p, secs) in [
        (200, 0.0002, 300),
        (200, 0.001, 200),
        (50, 0.001, 120),
        (50, 0.01, 120),
        (10, 0.01, 60),
        (10, 0.02, 60),
    ] {
        let c = run("cubic", rtt_ms, p, secs);
        let r = run("reno", rtt_ms, p, secs);
        let bw = |w: f64, rtt: f64| w * MSS / rtt; // B/s
        let model_p = bw(cubic_window(c.rtt, p), c.rtt);
        let model_ev = bw(cubic_window(c.rtt, c.p_event), c.rtt);
        let mathis_ev = bw(reno_window(r.p_event), r.rtt);
        let cubic_region = cubic_window(c.rtt, p) > reno_window(p);
        // The response functions' ratio at the same p and RTT.
        let model_ratio = cubic_window(c.rtt, p) / reno_window(p);
        let ratio = c.goodput / r.goodput;
        let mbit = |b: f64| b * 8e-6;
        println!(
            "| {rtt_ms} ms | {:.2} % | {} | {:.2} | {:.2} | {:.2} ({:.2}) | {:.2} | {:.5} | {:.2} | {:.2} | {:.1}/{:.1} |",
            p * 100.0,
            if cubic_region { "cubic" } else { "Reno-friendly" },
            mbit(c.goodput),
            mbit(r.goodput),
            ratio,
            model_ratio,
            mbit(model_p),
            c.p_event,
            c.goodput / model_ev,
            r.goodput / mathis_ev,
            c.rtos,
            r.rtos,
        );
        // The RFC 9438 response function, at the measured congestion-event
        // rate. Random (Bernoulli) loss makes the loss intervals irregular,
        // which favours CUBIC's plateau (1.15-1.22x in the cubic region);
        // in the Reno-friendly region Linux's arithmetic (α = 0.53 throughout,
        // windows truncated to whole segments at each cut) stays below the
        // continuous model: 0.80-1.03x measured.
        assert!(
            (0.75..=1.4).contains(&(c.goodput / model_ev)),
            "RTT {rtt_ms} ms p={p}: CUBIC {:.0} B/s vs model {model_ev:.0} B/s",
            c.goodput
        );
        // The Reno reference run itself agrees with Mathis (sanity).
        assert!(
            (0.85..=1.35).contains(&(r.goodput / mathis_ev)),
            "RTT {rtt_ms} ms p={p}: Reno {:.0} B/s vs Mathis {mathis_ev:.0} B/s",
            r.goodput
        );
        if cubic_region {
            // High BDP, low loss: CUBIC beats Reno by about what the response
            // functions predict (2.18x at 0.02 %, 1.46x at 0.1 %, RTT 200 ms).
            assert!(ratio > 1.3, "RTT {rtt_ms} ms p={p}: CUBIC/Reno {ratio:.2}");
            assert!(
                (0.8..=1.3).contains(&(ratio / model_ratio)),
                "RTT {rtt_ms} ms p={p}: CUBIC/Reno {ratio:.2} vs model {model_ratio:.2}"
            );
        } else {
            // Reno-friendly region: CUBIC ≈ Reno, a little below it with
            // Linux's arithmetic (measured 0.83-0.97). Linux itself: kernel
            // CUBIC / kernel Reno = 0.92 at 50 ms, 1 % (the emulator, 100
            // Mbit/s, 40 s, seeds 1-2: 2.46, 2.55 vs 2.75, 2.70 Mbit/s;
            // docs/models/cubic.md).
            assert!(
                (0.8..=1.05).contains(&ratio),
                "RTT {rtt_ms} ms p={p}: CUBIC/Reno {ratio:.2}"
            );
        }
        // More loss, less goodput (per RTT).
        if last.0 == rtt_ms {
            assert!(
                c.goodput < last.1,
                "RTT {rtt_ms} ms: goodput must fall as loss rises"
            );
        }
        last = (rtt_ms, c.goodput);
    }
}
