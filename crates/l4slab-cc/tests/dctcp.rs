//! DCTCP timelines through the scripted [`Driver`]: the alpha EWMA
//! (RFC 8257 §3.3), the once-per-round `cwnd·(1 − alpha/2)` cut, the
//! Reno-identical growth and loss response (RFC 8257 §3.4–3.5), and the
//! steady state under random marking.

use l4slab_cc::testing::Driver;
use l4slab_cc::{CongestionControl, Dctcp, DctcpConfig, EcnCodepoint, Reno, RenoConfig};
use l4slab_core::Dur;

const MSS: u64 = 1448;

fn dctcp() -> Driver<Dctcp> {
    Driver::new(Dctcp::new(DctcpConfig::default()))
}

fn segs(bytes: u64) -> f64 {
    bytes as f64 / MSS as f64
}

#[test]
fn sends_ect0_like_linux() {
    assert_eq!(dctcp().cc.ecn_codepoint(), EcnCodepoint::Ect0);
}

#[test]
fn alpha_follows_the_ewma_from_one_to_the_marked_fraction() {
    // Each ACK below is a whole observation window: nothing stays in flight.
    let mut d = dctcp();
    d.set_flight(Some(4 * MSS));
    let f = 0.25;
    for n in 1..=100 {
        d.ack_ce(4 * MSS, MSS); // F = 1/4 of the bytes
                                // alpha_n = F + (1 - F)(1 - g)^n with alpha_0 = 1, g = 1/16.
        let expect = f + (1.0 - f) * (15.0f64 / 16.0).powi(n);
        assert!(
            (d.cc.alpha() - expect).abs() < 1e-12,
            "round {n}: alpha {} != {expect}",
            d.cc.alpha()
        );
    }
    // After 100 rounds alpha is within 0.2 % of F: (15/16)^100 * 0.75 = 0.0012.
    assert!((d.cc.alpha() - f).abs() < 0.002);
    assert_eq!(d.cc.stats().alpha_updates, 100);
}

#[test]
fn alpha_windows_are_the_rounds_of_the_timeline() {
    let mut d = dctcp();
    d.mark_ce(0.25);
    d.send_and_ack_rounds(1);
    // Round 1: 10 segments, evenly spaced marks on segments 4 and 8 -> F = 0.2;
    // alpha = 15/16 * 1 + 0.2/16 = 0.95 (one update for the whole round).
    assert_eq!(d.cc.stats().alpha_updates, 1);
    assert!((d.cc.alpha() - 0.95).abs() < 1e-12, "{}", d.cc.alpha());
    d.send_and_ack_rounds(9);
    assert_eq!(d.cc.stats().alpha_updates, 10);
}

#[test]
fn alpha_tracks_the_marking_probability() {
    // Random marking at p = 2 %: the time average of alpha is p (alpha is an
    // unbiased EWMA of the per-round marked fraction).
    let mut d = dctcp();
    d.mark_ce_random(0.02);
    d.send_and_ack_rounds(200);
    let rounds = 2000;
    let mut sum = 0.0;
    for _ in 0..rounds {
        d.send_and_ack_rounds(1);
        sum += d.cc.alpha();
    }
    let mean = sum / rounds as f64;
    assert!((mean / 0.02 - 1.0).abs() < 0.05, "mean alpha {mean}");
}

#[test]
fn one_cut_per_round_however_many_acks_carry_ce() {
    let mut d = dctcp();
    d.send_and_ack_rounds(2); // 10 -> 20 -> 40 segments; alpha = (15/16)^2
    assert_eq!(d.cc.cwnd(), 40 * MSS);
    let alpha = d.cc.alpha();
    assert_eq!(alpha, 0.878_906_25);
    d.mark_ce(1.0); // every one of the 40 ACKs reports CE
    d.send_and_ack_rounds(1);
    // RFC 8257 §3.3 / Linux dctcp_ssthresh: cwnd - floor(cwnd * alpha / 2)
    // = 57920 - floor(25453.125) = 32467 bytes, cut once, no growth after.
    assert_eq!(d.cc.cwnd(), 32_467);
    assert_eq!(d.cc.ssthresh(), Some(32_467));
    assert_eq!(d.cc.stats().ce_reductions, 1);
    assert_eq!(d.cc.metrics().state, "Cwr");
    // alpha of that round: F = 1.
    let alpha = alpha * 15.0 / 16.0 + 1.0 / 16.0;
    assert!((d.cc.alpha() - alpha).abs() < 1e-15);
    // Next round, again all marked: exactly one more cut, with the new alpha.
    d.send_and_ack_rounds(1);
    let expect = 32_467 - (32_467.0 * alpha / 2.0) as u64;
    assert_eq!(d.cc.cwnd(), expect);
    assert_eq!(d.cc.stats().ce_reductions, 2);
    // A single CE mid-round and then more CE ACKs in the same round: one cut.
    d.mark_ce(0.0);
    d.send_and_ack_rounds(1); // leaves CWR, grows by at most one segment
    let before = d.cc.cwnd();
    let a = d.cc.alpha();
    d.set_flight(Some(10 * MSS));
    d.ack_ce(MSS, MSS);
    d.ack_ce(MSS, MSS);
    d.ack_ce(2 * MSS, MSS);
    assert_eq!(d.cc.cwnd(), before - (before as f64 * a / 2.0) as u64);
    assert_eq!(d.cc.stats().ce_reductions, 3);
}

#[test]
fn holds_the_window_in_cwr_and_restarts_the_byte_counter() {
    let mut d = dctcp();
    d.send_and_ack_rounds(2); // 40 segments
    d.set_flight(Some(40 * MSS));
    d.ack_ce(MSS, MSS); // cut: 40 -> 32467 bytes
    let cut = d.cc.cwnd();
    // The rest of the window is acknowledged: no growth while in CWR (Linux
    // tcp_in_cwnd_reduction), although 39 segments > cwnd/2 were acked.
    for left in (0..39).rev() {
        d.set_flight(Some((left + 1) * MSS));
        d.ack(MSS);
    }
    assert_eq!(d.cc.cwnd(), cut);
    assert_eq!(d.cc.metrics().state, "Cwr");
    // The next round leaves CWR at its first ACK; congestion avoidance counts
    // from zero, so one full window of bytes adds exactly one segment.
    d.set_flight(None);
    d.send_and_ack_rounds(1);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert_eq!(d.cc.cwnd(), cut + MSS);
}

#[test]
fn cut_never_goes_below_two_segments() {
    let mut d = dctcp();
    d.set_flight(Some(3 * MSS));
    d.rto(); // cwnd = 1 MSS, slow start
    d.ack_ce(MSS, MSS); // alpha ~ 1: a halving of 1 segment, floored at 2
    assert_eq!(d.cc.cwnd(), 2 * MSS);
    assert_eq!(d.cc.ssthresh(), Some(2 * MSS));
}

#[test]
fn without_ce_it_is_reno() {
    // RFC 8257 §3.4/§3.5: growth and loss response as conventional TCP.
    let mut a = dctcp();
    let mut b = Driver::new(Reno::new(RenoConfig::default()));
    let script = |d: &mut dyn FnMut(u8)| {
        for step in [0, 0, 0, 1, 2, 3, 0, 0, 4, 0, 0, 0, 5, 0, 0, 6, 3, 0] {
            d(step);
        }
    };
    let mut trace_a = Vec::new();
    let mut trace_b = Vec::new();
    script(&mut |step| {
        match step {
            0 => a.send_and_ack_rounds(1),
            1 => a.lose(MSS, true),
            2 => a.lose(MSS, false),
            3 => a.recovery_end(),
            4 => a.rto(),
            // A loss while only half the window is in flight: both halve
            // cwnd (Linux), whatever FlightSize is.
            6 => a
                .set_flight(Some(a.cc.cwnd() / 2))
                .lose(MSS, true)
                .set_flight(None),
            _ => a
                .app_limited(true)
                .send_and_ack_rounds(1)
                .app_limited(false),
        };
        trace_a.push((a.cc.cwnd(), a.cc.ssthresh(), a.cc.metrics().state));
    });
    script(&mut |step| {
        match step {
            0 => b.send_and_ack_rounds(1),
            1 => b.lose(MSS, true),
            2 => b.lose(MSS, false),
            3 => b.recovery_end(),
            4 => b.rto(),
            // A loss while only half the window is in flight: both halve
            // cwnd (Linux), whatever FlightSize is.
            6 => b
                .set_flight(Some(b.cc.cwnd() / 2))
                .lose(MSS, true)
                .set_flight(None),
            _ => b
                .app_limited(true)
                .send_and_ack_rounds(1)
                .app_limited(false),
        };
        trace_b.push((b.cc.cwnd(), b.cc.ssthresh(), b.cc.metrics().state));
    });
    assert_eq!(trace_a, trace_b);
    assert_eq!(a.cc.stats().loss_reductions, 2);
    assert_eq!(a.cc.stats().rtos, 1);
    assert_eq!(a.cc.stats().ce_reductions, 0);
}

#[test]
fn loss_halves_once_per_episode_and_beats_ce() {
    let mut d = dctcp();
    d.send_and_ack_rounds(3); // 80 segments
    d.lose(MSS, true);
    assert_eq!(segs(d.cc.cwnd()), 40.0); // cwnd / 2, in whole segments
    assert_eq!(d.cc.metrics().state, "Recovery");
    // CE during recovery is counted for alpha but does not cut again.
    d.set_flight(Some(40 * MSS));
    d.ack_ce(MSS, MSS);
    d.lose(MSS, false);
    assert_eq!(segs(d.cc.cwnd()), 40.0);
    assert_eq!(d.cc.stats().ce_reductions, 0);
    d.recovery_end();
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
}

#[test]
fn classic_ecn_echo_halves_once_per_round() {
    let mut d = dctcp();
    d.send_and_ack_rounds(3); // 80 segments, alpha = (15/16)^3
    d.set_flight(Some(0)); // the echo arrives with the window acknowledged
    d.ecn_echo();
    // Classic feedback: alpha taken as 1 -> halve; alpha itself untouched.
    assert_eq!(segs(d.cc.cwnd()), 40.0);
    assert_eq!(d.cc.alpha(), (15.0f64 / 16.0).powi(3));
    d.ecn_echo(); // same round: ignored
    assert_eq!(segs(d.cc.cwnd()), 40.0);
    assert_eq!(d.cc.stats().ecn_echo_reductions, 1);
    d.set_flight(None);
    d.send_and_ack_rounds(1); // new data acknowledged: CWR ends, 40 -> 41
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert_eq!(segs(d.cc.cwnd()), 41.0);
    d.set_flight(Some(0));
    d.ecn_echo();
    assert_eq!(d.cc.stats().ecn_echo_reductions, 2);
    assert_eq!(segs(d.cc.cwnd()), 20.5);
}

#[test]
fn state_changes_are_traced() {
    let mut d = dctcp();
    d.send_and_ack_rounds(1);
    d.set_flight(Some(MSS)); // one segment in flight, acked with CE
    d.ack_ce(MSS, MSS);
    d.set_flight(None);
    d.send_and_ack_rounds(1);
    d.lose(MSS, true);
    d.recovery_end();
    d.rto();
    assert_eq!(
        d.state_changes(),
        [
            ("SlowStart", "Cwr"),
            ("Cwr", "CongestionAvoidance"),
            ("CongestionAvoidance", "Recovery"),
            ("Recovery", "CongestionAvoidance"),
            ("CongestionAvoidance", "SlowStart"),
        ]
    );
}

/// Mean window (segments, sampled at round starts) times `p`, and CE marks
/// per round, after a warm-up, under independent per-segment marking.
fn steady_state(p: f64) -> (f64, f64) {
    let mut d = dctcp().rtt(Dur::from_millis(20));
    d.mark_ce_random(p);
    d.send_and_ack_rounds(300);
    let marks0 = d.ce_marked_segments();
    let rounds = 4000;
    let mut sum = 0.0;
    for _ in 0..rounds {
        sum += d.cwnd_segments();
        d.send_and_ack_rounds(1);
    }
    let marks = (d.ce_marked_segments() - marks0) as f64 / rounds as f64;
    (sum / rounds as f64 * p, marks)
}

/// Steady state under random marking (REFERENCES §2.4, RFC 9330 §2 "scalable"):
/// `W·p` is a constant, independent of `p`.
///
/// Which constant follows from DCTCP's per-round response (see
/// docs/models/dctcp.md): a CE cut (`alpha·W/2 ≈ pW/2`) starts a CWR round
/// without growth and restarts Reno's byte counter (Linux
/// `tcp_init_cwnd_reduction`), so the window grows only by whole windows of
/// unmarked bytes between marks: `E[growth] = Σ_j (1-p)^{jW} ≈ 1/(e^x - 1)`
/// with `x = pW`. Balance with the cut: `x (e^x - 1) = 2`, `x = 1.060` —
/// about one mark per round, not the fluid model's `2/p`.
#[test]
fn window_scales_as_one_over_p_with_about_one_mark_per_round() {
    // x (e^x - 1) = 2
    let (mut lo, mut hi) = (0.5f64, 2.0f64);
    for _ in 0..60 {
        let x = (lo + hi) / 2.0;
        if x * (x.exp() - 1.0) < 2.0 {
            lo = x;
        } else {
            hi = x;
        }
    }
    let x = lo;
    assert!((x - 1.060).abs() < 0.001, "{x}");
    let mut seen = Vec::new();
    for p in [0.01, 0.02, 0.05, 0.10] {
        let (wp, marks) = steady_state(p);
        seen.push((p, wp, marks));
        assert!(
            (wp / x - 1.0).abs() < 0.05,
            "p = {p}: W·p = {wp:.3}, model {x:.3}"
        );
        assert!(
            (marks / x - 1.0).abs() < 0.06,
            "p = {p}: {marks:.3} marks/round"
        );
    }
    // Scalable: the same W·p across a 10x range of p (within 4 %).
    let max = seen.iter().map(|s| s.1).fold(f64::MIN, f64::max);
    let min = seen.iter().map(|s| s.1).fold(f64::MAX, f64::min);
    assert!(max / min < 1.04, "{seen:?}");
}
