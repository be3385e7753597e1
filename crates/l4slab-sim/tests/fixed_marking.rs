//! Behaviour: congestion controls against a fixed congestion-signal
//! probability, the way researchers validate a window law with netem's
//! `loss random p ecn` (docs/models/loss.md): the bottleneck link CE-marks
//! each data packet with probability p (`loss = { kind = "bernoulli", p,
//! ecn = true }`), and nothing else congests the path (a rate far above the
//! windows' rate, a deep FIFO that never fills).
//!
//! The textbook laws:
//!
//! * DCTCP and Prague (`rtt_scaling = "none"`, so Prague's additive increase
//!   is DCTCP's 1 segment per RTT): `W ≈ 2/p` segments (REFERENCES §2.4,
//!   "random marking": a cut of `W·alpha/2` with alpha → p balancing +1 per
//!   RTT, i.e. one cut every RTT).
//! * Reno with classic ECN (RFC 3168: one halving per RTT with a mark):
//!   `W ≈ sqrt(3/(2p))` segments (Mathis et al. 1997).
//!
//! Reno meets its law within 40 %. DCTCP and Prague do **not** meet 2/p
//! within 30 %, and this test does not pretend they do: the 2/p balance
//! assumes a cut in every RTT and growth in every RTT, and neither holds for
//! the Linux mechanics both implement. A cut opens a CWR round (one RTT, until
//! the data sent before the cut is acked) in which further marks are
//! ignored; the next cut waits for the first mark acked after it, a
//! geometric number of packets later. Per cut, with `x = W·p` and alpha = p:
//!
//! * DCTCP (Linux `tcp_cong_control`: no `cong_avoid` while in CWR, and
//!   `tcp_init_cwnd_reduction` clears `snd_cwnd_cnt`) grows only in the wait
//!   and only by whole windows of acked packets: `E[floor(N/W)] = q/(1-q)`
//!   segments with `q = (1-p)^W`, against a cut of `x/2`. The balance
//!   `q/(1-q) = x/2` gives `x ≈ 1.06`, `W ≈ 1.06/p` (0.53 of 2/p).
//! * Prague (additive increase on every ACK of unmarked data, "including
//!   during CWR", REFERENCES §2.3) grows through the CWR round and the wait
//!   (mean `(1-p)/p` unmarked packets): `(1-p)(1 + 1/x)` segments against
//!   `x/2`, so `x = 1 + sqrt(3)` as p → 0, `W ≈ 2.73/p` (1.37 of 2/p).
//!
//! So each scalable controller is checked against its mechanics law within
//! 10 %, and its ratio to 2/p is printed and recorded in docs/models/loss.md
//! (measured: DCTCP 0.51–0.53, Prague 1.26–1.35).

mod common;

use common::{f64_of, flow, run_toml};
use l4slab_sim::RunOutput;

/// 20 ms base RTT, 1 Gbit/s: 2/p = 200 segments at p = 1 % is 116 Mbit/s, a
/// ninth of the rate; the 10,000-packet FIFO never fills.
const SCN: &str = r#"
format = 1
duration = "40s"
sample_interval = "10ms"
[bottleneck]
rate = "1Gbit"
delay = "10ms"
buffer = "10000pkt"
[[flows]]
name = "f"
app = "bulk"
"#;

const MSS: f64 = 1448.0;
/// Skip slow start and the first convergence of alpha (g = 1/16 per RTT:
/// ~50 RTTs = 1 s to forget alpha's initial 1).
const WARM_UP_S: f64 = 10.0;

/// Mean of the flow's `cwnd_bytes` series after the warm-up, in segments.
fn mean_cwnd_segments(out: &RunOutput) -> f64 {
    let s = &out.series;
    let v: Vec<f64> = (0..s.len())
        .filter(|&i| {
            s.name(s.series[i]) == "flow/f"
                && s.name(s.key[i]) == "cwnd_bytes"
                && s.t_s[i] >= WARM_UP_S
        })
        .map(|i| s.value[i] / MSS)
        .collect();
    assert!(v.len() > 1000, "only {} cwnd samples", v.len());
    v.iter().sum::<f64>() / v.len() as f64
}

/// Run `cc` (a TOML value) with `ecn` mode through a link marking with
/// probability `p`; returns the mean window in segments. Checks the link
/// marked at rate p, dropped no ECN-capable packet, and that the path never
/// queued (the window is marking-limited).
fn run(cc: &str, ecn: &str, p: f64) -> f64 {
    let out = run_toml(
        SCN,
        &[
            &format!("flows[0].cc={cc}"),
            &format!("flows[0].ecn={ecn}"),
            &format!("bottleneck.down.loss={{ kind = \"bernoulli\", p = {p}, ecn = true }}"),
        ],
    );
    let f = flow(&out, "f");
    assert_eq!(f["ecn"].as_str(), Some(ecn.trim_matches('"')), "{f}");
    let q = &out.summary["queues"]["bottleneck.down"];
    let marks = f64_of(&q["marks"]["link_mark"]);
    assert_eq!(f64_of(&q["marks"]["total"]), marks, "only the link marks");
    let sent = f64_of(&q["sent_packets"]);
    // Binomial: sd of the marked fraction is sqrt(p(1-p)/n) (< 0.0003 here);
    // the handshake's Not-ECT packets (SYN-ACK) are the only candidates for
    // a drop instead of a mark.
    let frac = marks / sent;
    assert!(
        (frac - p).abs() < 5.0 * (p * (1.0 - p) / sent).sqrt() + 1e-9,
        "marked {frac} of {sent} packets, want {p}"
    );
    assert!(f64_of(&q["drops"]["link_loss"]) <= 2.0, "{q}");
    assert_eq!(
        f64_of(&q["drops"]["total"]),
        f64_of(&q["drops"]["link_loss"])
    );
    assert!(f64_of(&f["ce_marks_received"]) > 0.0);
    // Marking-limited, not rate-limited: the FIFO stays near empty.
    assert!(f64_of(&q["sojourn_ms"]["p99"]) < 2.0, "{q}");
    mean_cwnd_segments(&out)
}

/// The root of the increasing `f` on `[lo, hi]`, by bisection.
fn root(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    assert!(f(lo) < 0.0 && f(hi) > 0.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// DCTCP's window under marking probability p (module header): growth only
/// after the CWR round, by whole windows, `q/(1-q) = x/2`, `q = (1-p)^(x/p)`.
fn dctcp_law(p: f64) -> f64 {
    let x = root(
        |x| {
            let q = (1.0 - p).powf(x / p);
            x / 2.0 - q / (1.0 - q)
        },
        0.1,
        10.0,
    );
    x / p
}

/// Prague's window (module header): `(1-p)(1 + 1/x) = x/2`, i.e.
/// `x² - 2(1-p)x - 2(1-p) = 0`.
fn prague_law(p: f64) -> f64 {
    let a = 1.0 - p;
    (a + (a * a + 2.0 * a).sqrt()) / p
}

#[test]
fn the_laws_as_computed() {
    // p -> 0: DCTCP x solves e^-x/(1-e^-x) = x/2 (x = 1.0601...), Prague
    // x = 1 + sqrt(3) = 2.732.
    assert!(
        (dctcp_law(1e-4) * 1e-4 - 1.0601).abs() < 1e-3,
        "{}",
        dctcp_law(1e-4)
    );
    assert!((prague_law(1e-9) * 1e-9 - (1.0 + 3f64.sqrt())).abs() < 1e-6);
    // p = 10 %: x² - 1.8x - 1.8 = 0, x = (1.8 + sqrt(10.44))/2 = 2.5155.
    assert!((prague_law(0.1) * 0.1 - 2.5155).abs() < 1e-3);
}

#[test]
fn scalable_controllers_follow_their_mechanics_not_two_over_p() {
    type Law = fn(f64) -> f64;
    let mut misses = Vec::new();
    for (name, cc, law) in [
        ("dctcp", r#""dctcp""#, dctcp_law as Law),
        (
            "prague",
            r#"{ kind = "prague", rtt_scaling = "none" }"#,
            prague_law as Law,
        ),
    ] {
        for p in [0.01, 0.04, 0.10] {
            let w = run(cc, r#""accecn""#, p);
            let (two_over_p, mech) = (2.0 / p, law(p));
            println!(
                "{name} p={p}: mean cwnd {w:.1} segments; 2/p = {two_over_p:.1} (ratio {:.3}); \
                 mechanics law {mech:.1} (ratio {:.3})",
                w / two_over_p,
                w / mech
            );
            if !(0.9..=1.1).contains(&(w / mech)) {
                misses.push(format!("{name} p={p}: {w:.1} segments vs {mech:.1}"));
            }
        }
    }
    assert!(misses.is_empty(), "{misses:?}");
}

#[test]
fn classic_ecn_reno_follows_the_mathis_law() {
    let p = 0.01;
    let w = run(r#""reno""#, r#""classic""#, p);
    let law = (1.5 / p).sqrt();
    println!(
        "reno classic ECN p={p}: mean cwnd {w:.1} segments, sqrt(3/(2p)) = {law:.1}, ratio {:.3}",
        w / law
    );
    assert!(
        (0.6..=1.4).contains(&(w / law)),
        "reno p={p}: mean cwnd {w:.1} segments vs sqrt(3/(2p)) = {law:.1}"
    );
}
