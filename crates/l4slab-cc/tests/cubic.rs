//! CUBIC (RFC 9438) and HyStart++ (RFC 9406) timelines through the scripted
//! [`Driver`]: one full window per round, a fixed path RTT (changed between
//! rounds where a test needs it), one ACK per segment.

use l4slab_cc::hystart::{CSS_GROWTH_DIVISOR, CSS_ROUNDS};
use l4slab_cc::testing::Driver;
use l4slab_cc::{
    CongestionControl, Cubic, CubicConfig, CubicConfigError, HyStartKind, WindowConfigError,
};
use l4slab_core::{Dur, Time};

const MSS: u64 = 1448;

fn cubic_with(cfg: CubicConfig) -> Driver<Cubic> {
    Driver::new(Cubic::new(cfg))
}

/// A CUBIC sender whose window starts at `w` segments.
fn at_window(w: u64) -> Driver<Cubic> {
    cubic_with(CubicConfig {
        initial_window_segments: w,
        ..CubicConfig::default()
    })
}

/// RFC 9406 HyStart++ instead of the default Linux HyStart.
fn hystart_pp() -> CubicConfig {
    CubicConfig {
        hystart_kind: HyStartKind::HyStartPp,
        ..CubicConfig::default()
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// `W_cubic(t) = C (t − K)^3 + W_max` (RFC 9438 Figure 1), C = 0.4.
fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
    0.4 * (t - k).powi(3) + w_max
}

/// Loss at a window of `w` segments, recovery, then the first ACK of
/// congestion avoidance (which starts the epoch).
fn loss_then_first_ca_ack(w: u64, rtt_ms: u64) -> Driver<Cubic> {
    let mut d = at_window(w).rtt(Dur::from_millis(rtt_ms));
    d.lose(MSS, true);
    assert_eq!(
        d.cc.cwnd(),
        w * MSS * 7 / 10,
        "cwnd = 0.7 * cwnd before the loss"
    );
    assert_eq!(d.cc.ssthresh(), Some(w * MSS * 7 / 10));
    assert_eq!(d.cc.metrics().state, "Recovery");
    d.recovery_end();
    assert_eq!(
        d.cc.k_seconds(),
        None,
        "the epoch starts with the first CA ACK"
    );
    d.ack(MSS);
    d
}

#[test]
fn k_and_w_max_after_a_loss_at_100_and_1000_segments() {
    // RFC 9438 §4.2: K = cbrt(W_max (1 - β) / C):
    //   W_max = 100:  cbrt(100 * 0.3 / 0.4) = cbrt(75)  = 4.217 s
    //   W_max = 1000: cbrt(1000 * 0.3 / 0.4) = cbrt(750) = 9.086 s
    for (w, k) in [(100u64, 4.2172), (1000, 9.0856)] {
        let d = loss_then_first_ca_ack(w, 50);
        assert_eq!(d.cc.w_max_segments(), Some(w as f64));
        assert_eq!(d.cc.cwnd_prior_segments(), w as f64);
        let got = d.cc.k_seconds().unwrap();
        assert!(close(got, k, 1e-3), "W={w}: K = {got}, want {k}");
        assert_eq!(d.cc.epoch_start(), Some(d.now));
        // W_est starts at cwnd_epoch (§4.3), plus this ACK's α/cwnd.
        let w_est = d.cc.w_est_segments().unwrap();
        let cwnd_epoch = 0.7 * w as f64;
        assert!(
            close(w_est, cwnd_epoch + 0.5294 / cwnd_epoch, 1e-3),
            "{w_est}"
        );
    }
}

#[test]
fn the_curve_is_concave_then_flat_near_w_max_then_convex() {
    // W_max = 1000 at RTT 100 ms: K = 9.09 s = 91 rounds. W_est grows by
    // ~0.53 segments per round and stays far below the curve, so every ACK
    // follows the cubic function (no Reno-friendly ACKs).
    let mut d = loss_then_first_ca_ack(1000, 100);
    let start = d.cc.epoch_start().unwrap();
    let k = d.cc.k_seconds().unwrap();
    let mut samples = Vec::new(); // (t, cwnd) at the end of each round
    for _ in 0..150 {
        d.send_and_ack_rounds(1);
        let t = (d.now - start).as_secs_f64();
        samples.push((t, d.cwnd_segments()));
    }
    // (Only at t = 0, where W_cubic(0) = cwnd_epoch, is W_est ahead.)
    assert!(d.cc.stats().reno_friendly_acks < 5, "{:?}", d.cc.stats());
    assert!(d.cc.stats().cubic_acks > 100_000);

    let incs: Vec<(f64, f64)> = samples
        .windows(2)
        .map(|p| (p[1].0, p[1].1 - p[0].1))
        .collect();
    // Concave before K: each round adds less than the one before.
    let before: Vec<f64> = incs
        .iter()
        .filter(|(t, _)| *t < k - 0.5)
        .map(|p| p.1)
        .collect();
    assert!(before.len() > 80);
    assert!(before.windows(2).all(|p| p[1] <= p[0] + 1e-9), "{before:?}");
    // dW/dt = 3C(t-K)^2: 99 segments/s at t = 0, near 0 at K.
    assert!(
        before[0] > 8.0 && *before.last().unwrap() < 0.5,
        "{before:?}"
    );
    // Convex after K: each round adds more than the one before.
    let after: Vec<f64> = incs
        .iter()
        .filter(|(t, _)| *t > k + 0.5)
        .map(|p| p.1)
        .collect();
    assert!(after.len() > 40);
    assert!(after.windows(2).all(|p| p[1] >= p[0] - 1e-9), "{after:?}");
    // The plateau: within a second of K the window stays within 1 % of W_max.
    for &(t, w) in samples.iter().filter(|(t, _)| (t - k).abs() < 1.0) {
        assert!(close(w, 1000.0, 10.0), "t={t:.2}: cwnd {w}");
    }
    // And it follows the curve: per ACK the window closes 1/cwnd of the gap to
    // W_cubic(t + RTT), i.e. about W_cubic(t) at the end of each round.
    for &(t, w) in &samples {
        let want = w_cubic(t, k, 1000.0);
        assert!(
            close(w, want, 0.01 * want),
            "t={t:.2}: cwnd {w:.1} vs W_cubic {want:.1}"
        );
    }
}

#[test]
fn the_target_is_clamped_to_one_and_a_half_windows() {
    // 20 s into the epoch with data still in flight (no idle, not app-limited),
    // W_cubic(t + RTT) = 0.4 (20.05 - 4.22)^3 + 100 ≈ 1690 segments; RFC 9438
    // §4.2 bounds the target by 1.5 cwnd, so one acked segment adds
    // (1.5 cwnd - cwnd) / cwnd = 0.5 segment, not ~23.
    let mut d = loss_then_first_ca_ack(100, 50);
    d.advance(Dur::from_secs(20));
    let before = d.cc.cwnd();
    d.ack(MSS);
    let grown = (d.cc.cwnd() - before) as f64 / MSS as f64;
    assert!(close(grown, 0.5, 0.01), "{grown}");
}

#[test]
fn fast_convergence_lowers_w_max_when_a_loss_comes_below_it() {
    for fc in [true, false] {
        let mut d = cubic_with(CubicConfig {
            initial_window_segments: 100,
            fast_convergence: fc,
            ..CubicConfig::default()
        });
        d.lose(MSS, true).recovery_end();
        assert_eq!(d.cc.w_max_segments(), Some(100.0));
        // 0.5 s: 70 -> W_cubic(0.55 s) = 0.4 (0.55 - 4.22)^3 + 100 ≈ 80 segments.
        d.send_and_ack_rounds(10);
        let before = d.cwnd_segments();
        assert!(before > 75.0 && before < 85.0, "{before}");
        d.lose(MSS, true);
        // cwnd_prior is the window just before the cut, in whole segments
        // (Linux's packet count).
        let prior = d.cc.cwnd_prior_segments();
        assert_eq!(prior, before.floor(), "{prior} vs {before}");
        let w_max = d.cc.w_max_segments().unwrap();
        if fc {
            // RFC 9438 §4.7: W_max = cwnd (1 + β) / 2, truncated as Linux.
            assert_eq!(w_max, (prior * 0.85).floor(), "{w_max} vs {prior}");
            assert_eq!(d.cc.stats().fast_convergence, 1);
        } else {
            assert_eq!(w_max, prior);
            assert_eq!(d.cc.stats().fast_convergence, 0);
        }
    }
}

#[test]
fn no_fast_convergence_when_the_loss_comes_above_w_max() {
    let mut d = at_window(100);
    d.lose(MSS, true).recovery_end();
    // Past K = 4.22 s (85 rounds of 50 ms) the window is above W_max = 100.
    d.send_and_ack_rounds(100);
    assert!(d.cwnd_segments() > 100.0);
    d.lose(MSS, true);
    assert_eq!(d.cc.w_max_segments(), Some(d.cc.cwnd_prior_segments()));
    assert_eq!(d.cc.stats().fast_convergence, 0);
}

#[test]
fn reno_friendly_region_dominates_at_small_bdp() {
    // 20 segments at 10 ms: K = cbrt(6 / 0.4) = 2.47 s, and W_cubic stays
    // near 14..19 for the first second, while W_est grows α = 0.529 segments
    // per RTT (Linux's α throughout, also past cwnd_prior = 20).
    let run = |reno_friendly: bool| {
        let mut d = cubic_with(CubicConfig {
            initial_window_segments: 20,
            reno_friendly,
            ..CubicConfig::default()
        })
        .rtt(Dur::from_millis(10));
        d.lose(MSS, true).recovery_end();
        d.send_and_ack_rounds(100); // 1 s
        d
    };
    let d = run(true);
    let w = d.cwnd_segments();
    // 14 + 0.529 per round for 100 rounds.
    assert!(close(w, 14.0 + 100.0 * 0.5294, 2.0), "cwnd {w}");
    let s = d.cc.stats();
    assert!(s.reno_friendly_acks > 10 * s.cubic_acks, "{s:?}");
    // Without the Reno-friendly region the cubic curve alone stays near
    // W_cubic(1 s) ≈ 18.7 segments.
    let plain = run(false).cwnd_segments();
    assert!(plain < 22.0, "{plain}");
    assert!(w > 2.5 * plain);
}

#[test]
fn reno_friendly_alpha_stays_linux_past_cwnd_prior() {
    // RFC 9438 §4.3 switches α to 1 once W_est reaches cwnd_prior; Linux's
    // tcp_friendliness keeps α = 3(1-β)/(1+β), and so does the model.
    let mut d = at_window(20).rtt(Dur::from_millis(10));
    d.lose(MSS, true).recovery_end();
    // 14 -> 20 at 0.529 per round takes 11.3 rounds.
    d.send_and_ack_rounds(10);
    let w10 = d.cwnd_segments();
    assert!(close(w10, 14.0 + 10.0 * 0.5294, 0.2), "{w10}");
    d.send_and_ack_rounds(5);
    d.send_and_ack_rounds(10);
    let w25 = d.cwnd_segments();
    d.send_and_ack_rounds(10);
    assert!(w25 > 20.0, "past cwnd_prior: {w25}");
    let per_round = (d.cwnd_segments() - w25) / 10.0;
    assert!(close(per_round, 0.5294, 0.03), "{per_round}");
}

#[test]
fn the_alpha_option_sets_the_reno_friendly_increase_whatever_beta_is() {
    // lsquic_cubic.c cubic_update: cu_tcp_cwnd grows 819/1024 segment per
    // window acknowledged with its β of 0.8, where 3(1-β)/(1+β) gives 0.333.
    let per_round = |alpha: Option<f64>| {
        let mut d = cubic_with(CubicConfig {
            initial_window_segments: 20,
            beta: 0.8,
            alpha,
            ..CubicConfig::default()
        })
        .rtt(Dur::from_millis(10));
        d.lose(MSS, true).recovery_end();
        assert_eq!(d.cc.cwnd(), 16 * MSS);
        d.send_and_ack_rounds(10);
        (d.cwnd_segments() - 16.0) / 10.0
    };
    let derived = per_round(None);
    assert!(close(derived, 1.0 / 3.0, 0.03), "{derived}");
    let lsquic = per_round(Some(0.8));
    assert!(close(lsquic, 0.8, 0.05), "{lsquic}");
    assert_eq!(
        CubicConfig {
            alpha: Some(0.0),
            ..CubicConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string(),
        "alpha: 0 is out of range; must be above 0"
    );
}

#[test]
fn no_growth_during_recovery_and_one_cut_per_episode() {
    let mut d = at_window(100);
    d.lose(MSS, true);
    d.lose(MSS, false);
    d.ecn_echo(); // also not a second signal during loss recovery
    assert_eq!(d.cc.cwnd(), 70 * MSS);
    d.ack(20 * MSS);
    assert_eq!(d.cc.cwnd(), 70 * MSS);
    assert_eq!(d.cc.stats().loss_reductions, 1);
    assert_eq!(d.cc.stats().ecn_reductions, 0);
    d.recovery_end();
    d.ack(MSS);
    assert!(d.cc.cwnd() > 70 * MSS);
}

#[test]
fn grow_in_recovery_grows_from_the_cut_as_lsquic() {
    // lsquic_cubic_ack grows cwnd on every acknowledged packet; a loss only
    // cuts it and restarts the epoch (lsquic_cubic_loss).
    let mut d = cubic_with(CubicConfig {
        initial_window_segments: 100,
        grow_in_recovery: true,
        ..CubicConfig::default()
    });
    d.lose(MSS, true);
    assert_eq!(d.cc.cwnd(), 70 * MSS);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    d.lose(MSS, false); // the same episode: no second cut
    d.ack(20 * MSS);
    assert!(d.cc.cwnd() > 70 * MSS, "{}", d.cc.cwnd());
    assert_eq!(d.cc.stats().loss_reductions, 1);
    let before = d.cc.cwnd();
    d.recovery_end();
    assert_eq!(d.cc.cwnd(), before, "RecoveryEnd changes nothing");
}

#[test]
fn classic_ecn_echo_reduces_like_loss() {
    let mut d = at_window(100);
    d.ecn_echo();
    assert_eq!(d.cc.cwnd(), 70 * MSS);
    assert_eq!(d.cc.ssthresh(), Some(70 * MSS));
    assert_eq!(d.cc.w_max_segments(), Some(100.0));
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert!(!d.cc.hystart_active());
    d.ack(MSS);
    assert!(close(d.cc.k_seconds().unwrap(), 4.2172, 1e-3));
    // The same window sequence as after a loss.
    let mut l = at_window(100);
    l.lose(MSS, true).recovery_end();
    l.ack(MSS);
    d.send_and_ack_rounds(30);
    l.send_and_ack_rounds(30);
    assert_eq!(d.cc.cwnd(), l.cc.cwnd());
    // A second echo (the transport's next once-per-RTT signal) cuts again,
    // with fast convergence.
    d.ecn_echo();
    let prior = d.cc.cwnd_prior_segments();
    assert!(prior < 100.0);
    assert_eq!(d.cc.w_max_segments().unwrap(), (0.85 * prior).floor());
    assert_eq!(d.cc.stats().ecn_reductions, 2);
}

#[test]
fn cwnd_sets_ssthresh_and_the_floor_is_two_segments() {
    // Linux cubictcp_recalc_ssthresh: ⌊0.7 · cwnd⌋ segments, whatever FlightSize is
    // (half the window in use, or a window of SACKed data behind a hole).
    for flight in [50, 160] {
        let mut d = at_window(100);
        d.set_flight(Some(flight * MSS));
        d.lose(MSS, true);
        assert_eq!(d.cc.cwnd(), 70 * MSS, "flight {flight}");
        assert_eq!(d.cc.w_max_segments(), Some(100.0));
    }
    let mut d = at_window(2);
    d.lose(MSS, true);
    assert_eq!(d.cc.ssthresh(), Some(2 * MSS)); // ⌊0.7 · 2⌋ = 1 -> the floor, 2
    assert_eq!(d.cc.cwnd(), 2 * MSS);
}

#[test]
fn rto_collapses_then_the_next_epoch_has_k_zero() {
    // A loss at 143 segments leaves W_max = 143 and cwnd = ⌊100.1⌋ = 100.
    let mut d = at_window(143);
    d.lose(MSS, true).recovery_end();
    assert_eq!(d.cc.w_max_segments(), Some(143.0));
    assert_eq!(d.cc.cwnd(), 100 * MSS);
    d.rto();
    assert_eq!(d.cc.cwnd(), MSS);
    let ssthresh = 70 * MSS; // ⌊0.7 · 100⌋ segments
    assert_eq!(d.cc.ssthresh(), Some(ssthresh));
    assert_eq!(d.cc.metrics().state, "SlowStart");
    // RFC 9438 §4.8 / Linux bictcp_reset: the old W_max is forgotten.
    assert_eq!(d.cc.w_max_segments(), None);
    d.set_flight(None);
    // A backed-off repeat keeps ssthresh (RFC 5681 §3.1 note).
    d.rto();
    assert_eq!(d.cc.ssthresh(), Some(ssthresh));
    // Slow start 1 -> 2 -> 4 -> ... -> 64 -> 70 (capped), then CA.
    d.send_and_ack_rounds(7);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    // RFC 9438 §4.8: K = 0, W_max = W_est = cwnd at the start of the epoch.
    assert_eq!(d.cc.k_seconds(), Some(0.0));
    let w_max = d.cc.w_max_segments().unwrap();
    assert!(close(w_max, ssthresh as f64 / MSS as f64, 1e-9), "{w_max}");
    assert_eq!(d.cc.stats().rtos, 2);
    // First the Reno-friendly region: W_cubic(t) = 70 + 0.4 t^3 is below
    // W_est, which grows α = 0.529 segments per RTT (Linux's α throughout;
    // cwnd_prior = 100, the window before the timeout, is not reached here
    // anyway).
    let mut incs = Vec::new();
    let mut last = d.cwnd_segments();
    for _ in 0..140 {
        d.send_and_ack_rounds(1);
        incs.push(d.cwnd_segments() - last);
        last = d.cwnd_segments();
    }
    assert!(
        incs[1..30].iter().all(|i| close(*i, 0.529, 0.01)),
        "{incs:?}"
    );
    // After ~6 s the cubic curve from K = 0 overtakes and grows convexly.
    let tail = &incs[125..];
    assert!(tail.windows(2).all(|p| p[1] >= p[0] - 1e-9), "{tail:?}");
    assert!(tail[0] > 1.5, "{tail:?}");
}

#[test]
fn app_limited_and_idle_time_do_not_advance_the_epoch() {
    // Reference: 30 rounds of congestion avoidance after a loss at 100.
    let mut a = at_window(100);
    a.lose(MSS, true).recovery_end();
    a.send_and_ack_rounds(30);
    // Same, with 10 app-limited rounds and 10 s of idle in the middle.
    let mut b = at_window(100);
    b.lose(MSS, true).recovery_end();
    b.send_and_ack_rounds(10);
    let w10 = b.cc.cwnd();
    let start = b.cc.epoch_start().unwrap();
    b.app_limited(true).send_and_ack_rounds(10);
    assert_eq!(b.cc.cwnd(), w10, "app-limited ACKs do not grow cwnd");
    assert_eq!(b.cc.epoch_start(), Some(start + Dur::from_millis(500)));
    b.app_limited(false);
    b.advance(Dur::from_secs(10));
    b.send_and_ack_rounds(20);
    assert_eq!(b.cc.cwnd(), a.cc.cwnd());
    assert_eq!(
        b.cc.epoch_start(),
        Some(start + Dur::from_millis(10_500)),
        "epoch moved by 10 app-limited rounds and 10 s idle"
    );
}

/// IW10 slow start at 50 ms for three rounds (10 -> 80 segments), then one
/// round at 60 ms: 50 + max(4, min(50/8, 16)) = 56.25 ms is exceeded.
fn into_css() -> Driver<Cubic> {
    let mut d = cubic_with(hystart_pp());
    d.send_and_ack_rounds(3);
    assert_eq!(d.cc.cwnd(), 80 * MSS);
    d.rtt = Dur::from_millis(60);
    d.send_and_ack_rounds(1);
    d
}

#[test]
fn hystart_enters_css_when_the_rtt_rises() {
    let d = into_css();
    assert_eq!(d.cc.metrics().state, "ConservativeSlowStart");
    assert_eq!(d.cc.stats().css_entries, 1);
    // The 8th ACK of the round (N_RTT_SAMPLE) decides; it still grew in slow
    // start. The other 72 grow by 1/CSS_GROWTH_DIVISOR segment each.
    assert_eq!(CSS_GROWTH_DIVISOR, 4);
    assert_eq!(d.cc.cwnd(), (80 + 8 + 72 / 4) * MSS);
    assert_eq!(d.cc.ssthresh(), None);
    // Below the threshold nothing happens: 56 ms < 56.25 ms.
    let mut e = cubic_with(hystart_pp());
    e.send_and_ack_rounds(3);
    e.rtt = Dur::from_millis(56);
    e.send_and_ack_rounds(1);
    assert_eq!(e.cc.metrics().state, "SlowStart");
    assert_eq!(e.cc.cwnd(), 160 * MSS);
}

#[test]
fn hystart_returns_to_slow_start_when_the_rise_was_spurious() {
    let mut d = into_css();
    let w = d.cc.cwnd() / MSS; // 106
    d.rtt = Dur::from_millis(50); // back below the 60 ms baseline
    d.send_and_ack_rounds(1);
    assert_eq!(d.cc.metrics().state, "SlowStart");
    assert_eq!(d.cc.stats().css_spurious_exits, 1);
    // 8 ACKs in CSS (+2 segments), then slow start for the other 98.
    assert_eq!(d.cc.cwnd(), (w + 2 + (w - 8)) * MSS);
    assert_eq!(
        d.state_changes(),
        [
            ("SlowStart", "ConservativeSlowStart"),
            ("ConservativeSlowStart", "SlowStart"),
        ]
    );
    // HyStart++ is still watching: a new rise enters CSS again.
    d.rtt = Dur::from_millis(70);
    d.send_and_ack_rounds(1);
    assert_eq!(d.cc.metrics().state, "ConservativeSlowStart");
    assert_eq!(d.cc.stats().css_entries, 2);
}

#[test]
fn hystart_enters_congestion_avoidance_after_css_rounds() {
    let mut d = into_css();
    assert_eq!(CSS_ROUNDS, 5);
    // The CSS rounds count from the round after entry; CSS grows ~1.25x per round.
    let mut w = d.cwnd_segments();
    for _ in 1..CSS_ROUNDS {
        d.send_and_ack_rounds(1);
        assert_eq!(d.cc.metrics().state, "ConservativeSlowStart");
        let ratio = d.cwnd_segments() / w;
        assert!(close(ratio, 1.25, 0.01), "{ratio}");
        w = d.cwnd_segments();
    }
    // The first ACK of the fifth round completes CSS_ROUNDS.
    d.ack(MSS);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert_eq!(d.cc.stats().hystart_exits, 1);
    assert!(!d.cc.hystart_active());
    let cwnd = d.cc.cwnd();
    assert_eq!(d.cc.ssthresh(), Some(cwnd));
    // RFC 9438 §4.10: cwnd_prior = W_max = cwnd, K = 0.
    let segs = cwnd as f64 / MSS as f64;
    assert_eq!(d.cc.w_max_segments(), Some(segs));
    assert_eq!(d.cc.cwnd_prior_segments(), segs);
    d.ack(MSS);
    assert_eq!(d.cc.k_seconds(), Some(0.0));
    assert_eq!(
        d.state_changes(),
        [
            ("SlowStart", "ConservativeSlowStart"),
            ("ConservativeSlowStart", "CongestionAvoidance"),
        ]
    );
}

#[test]
fn without_hystart_an_rtt_rise_does_not_end_slow_start() {
    let mut d = cubic_with(CubicConfig {
        hystart: false,
        ..CubicConfig::default()
    });
    d.send_and_ack_rounds(3);
    d.rtt = Dur::from_millis(100);
    d.send_and_ack_rounds(2);
    assert_eq!(d.cc.metrics().state, "SlowStart");
    assert_eq!(d.cc.cwnd(), 320 * MSS);
    assert_eq!(d.cc.stats().css_entries, 0);
}

#[test]
fn hystart_runs_only_in_the_initial_slow_start() {
    let mut d = cubic_with(hystart_pp());
    d.send_and_ack_rounds(2);
    d.rto(); // ssthresh = 0.7 * 40 = 28
    assert!(!d.cc.hystart_active());
    d.send_and_ack_rounds(3); // 1 -> 2 -> 4 -> 8
    d.rtt = Dur::from_millis(100);
    d.send_and_ack_rounds(1);
    assert_eq!(d.cc.metrics().state, "SlowStart");
    assert_eq!(d.cc.cwnd(), 16 * MSS);
}

#[test]
fn slow_start_counts_at_most_l_segments_per_ack() {
    // RFC 9406 §4.2: cwnd += min(N, L*SMSS), L = 8 when not paced.
    let mut d = cubic_with(hystart_pp());
    d.ack(20 * MSS); // a stretch ACK
    assert_eq!(d.cc.cwnd(), 18 * MSS);
    // Linux tcp_slow_start (the default, Linux HyStart) has no limit.
    let mut d = cubic_with(CubicConfig::default());
    d.ack(20 * MSS);
    assert_eq!(d.cc.cwnd(), 30 * MSS);
}

/// A Cubic sender at 20 segments, RTT 20 ms, fed `n` ACKs of one segment
/// `gap` apart at RTT `rtt` (the flight stays the window, so they are one round).
fn scripted_acks(d: &mut Driver<Cubic>, n: u64, gap: Dur, rtt: Dur) {
    d.rtt = rtt;
    for _ in 0..n {
        d.ack(MSS);
        d.advance(gap);
    }
}

#[test]
fn linux_hystart_ack_train_exits_at_half_the_min_rtt() {
    let mut d = at_window(20).rtt(Dur::from_millis(20));
    // Linux hystart_update, not paced: threshold = (delay_min + ack_delay)/2
    // = (20 + 1) / 2 = 10.5 ms. ACKs 1 ms apart: the 12th, 11 ms after the
    // round's first, ends slow start; cwnd had grown by the 11 before it.
    scripted_acks(&mut d, 11, Dur::from_millis(1), Dur::from_millis(20));
    assert_eq!(d.cc.metrics().state, "SlowStart");
    assert_eq!(d.cc.cwnd(), 31 * MSS);
    d.ack(MSS);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert_eq!(d.cc.ssthresh(), Some(31 * MSS));
    let st = d.cc.stats();
    assert_eq!(
        (
            st.hystart_train_exits,
            st.hystart_delay_exits,
            st.hystart_exits
        ),
        (1, 0, 1)
    );
    // Straight to congestion avoidance: W_max = cwnd_prior = cwnd, K = 0.
    assert_eq!(d.cc.w_max_segments(), Some(31.0));
    assert_eq!(d.cc.k_seconds(), Some(0.0));
    assert!(!d.cc.hystart_active());
    assert_eq!(d.state_changes(), [("SlowStart", "CongestionAvoidance")]);
}

#[test]
fn linux_hystart_delay_exits_on_the_ninth_sample_of_a_slower_round() {
    let mut d = at_window(20).rtt(Dur::from_millis(20));
    // ACKs 3 ms apart never form a train (hystart_ack_delta_us = 2 ms).
    scripted_acks(&mut d, 20, Dur::from_millis(3), Dur::from_millis(20));
    assert_eq!(d.cc.cwnd(), 40 * MSS);
    // Next round at 25 ms > 20 + clamp(20/8, 4, 16) = 24 ms: the ninth
    // sample (HYSTART_MIN_SAMPLES = 8 first) ends slow start at 40 + 8.
    scripted_acks(&mut d, 8, Dur::from_millis(3), Dur::from_millis(25));
    assert_eq!(d.cc.metrics().state, "SlowStart");
    d.ack(MSS);
    assert_eq!(d.cc.metrics().state, "CongestionAvoidance");
    assert_eq!(d.cc.ssthresh(), Some(48 * MSS));
    assert_eq!(d.cc.stats().hystart_delay_exits, 1);
    // 24 ms would not have: a fresh sender stays in slow start.
    let mut e = at_window(20).rtt(Dur::from_millis(20));
    scripted_acks(&mut e, 20, Dur::from_millis(3), Dur::from_millis(20));
    scripted_acks(&mut e, 40, Dur::from_millis(3), Dur::from_millis(24));
    assert_eq!(e.cc.metrics().state, "SlowStart");
    // Linux cubictcp_state(TCP_CA_Loss): HyStart watches again after an RTO.
    d.rto();
    assert!(d.cc.hystart_active());
}

#[test]
fn state_changes_are_traced_in_order() {
    let mut d = at_window(100);
    d.send_and_ack_rounds(1);
    d.lose(MSS, true);
    d.recovery_end();
    d.ack(MSS);
    d.rto();
    d.send_and_ack_rounds(8);
    assert_eq!(
        d.state_changes(),
        [
            ("SlowStart", "Recovery"),
            ("Recovery", "CongestionAvoidance"),
            ("CongestionAvoidance", "SlowStart"),
            ("SlowStart", "CongestionAvoidance"),
        ]
    );
    assert_eq!(d.tracer.0[0].0, Time::ZERO + Dur::from_millis(50));
}

#[test]
fn metrics_expose_the_cubic_variables() {
    let d = loss_then_first_ca_ack(100, 50);
    let m = d.cc.metrics();
    let get = |k: &str| m.extra.iter().find(|(n, _)| *n == k).unwrap().1;
    assert_eq!(get("w_max_segments"), 100.0);
    assert!(close(get("k_s"), 4.2172, 1e-3));
    assert_eq!(get("cwnd_prior_segments"), 100.0);
    assert!(get("w_est_segments") > 70.0);
}

#[test]
fn invalid_config_is_a_typed_error() {
    let bad = |cfg: CubicConfig| Cubic::try_new(cfg).unwrap_err();
    let d = CubicConfig::default();
    assert_eq!(
        bad(CubicConfig {
            mss: 0,
            ..d.clone()
        }),
        CubicConfigError::Window(WindowConfigError::ZeroMss)
    );
    assert_eq!(
        bad(CubicConfig {
            beta: 1.0,
            ..d.clone()
        })
        .to_string(),
        "beta: 1 is out of range; must be between 0 and 1 (exclusive)"
    );
    assert_eq!(
        bad(CubicConfig {
            c: f64::NAN,
            ..d.clone()
        })
        .to_string(),
        "c: NaN is out of range; must be above 0"
    );
    assert_eq!(
        bad(CubicConfig {
            ack_limit_segments: 0,
            ..d
        }),
        CubicConfigError::ZeroAckLimit
    );
}

#[test]
fn build_dispatches_cubic() {
    let cc = l4slab_cc::build("cubic", 1448, 10).unwrap();
    assert_eq!(cc.name(), "cubic");
    assert_eq!(cc.cwnd(), 14_480);
    assert_eq!(cc.metrics().state, "SlowStart");
}
