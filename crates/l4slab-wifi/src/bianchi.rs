//! Bianchi's saturated DCF/EDCA model (G. Bianchi, "Performance analysis of
//! the IEEE 802.11 distributed coordination function", IEEE JSAC 18(3), 2000):
//! the analytic throughput of `n` always-backlogged stations, the yardstick
//! for the Wi-Fi cell (REFERENCES.md §4.4).
//!
//! Each station transmits in a generic slot with probability τ; a
//! transmission collides with a constant, independent probability p. With
//! W = CWmin + 1 and m = log₂((CWmax + 1)/(CWmin + 1)) doublings:
//!
//! ```text
//! τ = 2 / (1 + W + p·W·Σ_{i=0}^{m-1} (2p)^i)          (Bianchi eq. 7, summed form)
//! p = 1 − (1 − τ)^(n−1)                                (eq. 9)
//! P_tr = 1 − (1 − τ)^n,  P_s = n·τ·(1 − τ)^(n−1) / P_tr
//! S = P_s·P_tr·E[L] / ((1 − P_tr)·σ + P_tr·P_s·T_s + P_tr·(1 − P_s)·T_c)   (eq. 13)
//! ```
//!
//! Not modelled: a retry limit (the stage stays at m), EDCA's differences
//! between access categories (one class; its AIFS is folded into T_s and
//! T_c, and backoff counts from the end of AIFS as in DCF), frame errors,
//! capture, TXOP bursts and aggregation.
//!
//! **The REFERENCES.md §4.4 table** (columns n, τ, p, S; the header row is
//! missing there) is reproduced by: W = 16 (CWmin 15), m = 6 (CWmax 1023),
//! σ = 9 µs, E\[L\] = 12,000 bit (a 1500 B payload) and **T_s = T_c = 335 µs**.
//! τ and p depend only on W, m and n; every S rounds to the table with T_s =
//! T_c anywhere in 334.9..335.15 µs (with T_s = 335, T_c in 334.5..335.8).
//! 335 µs is 802.11a at 54 Mbit/s (5 GHz) with basic access and AC_BE
//! (AIFSN 3, AIFS 43 µs): a 1530 B MPDU (1500 B + 26 B QoS header + 4 B
//! FCS: 57 symbols, 248 µs) + SIFS 16 + Ack 28 µs at 24 Mbit/s + AIFS 43.
//! (A 1500 B MPDU, 244 µs, with a 32 µs Ack gives the same sum.) The table
//! therefore took T_c = T_s, i.e. SIFS + Ack time where the station waits
//! for the Ack. [`basic_access_times`] uses the AckTimeout instead, T_c =
//! 248 + 45 + 43 = 336 µs, which moves S by at most 0.02 Mbit/s (n = 10:
//! 26.747 against 26.764, printed 26.8).

use l4slab_core::Dur;

use super::phy::Phy;

/// Inputs of the model. Times are per transmission attempt, including the
/// AIFS (or DIFS) that follows it.
#[derive(Clone, Copy, Debug)]
pub struct BianchiParams {
    /// Saturated stations (≥ 1).
    pub n: u32,
    /// CWmin; W = cw_min + 1.
    pub cw_min: u32,
    /// CWmax; (cw_max + 1)/(cw_min + 1) must be a power of two, 2^m.
    pub cw_max: u32,
    /// σ, an empty backoff slot.
    pub slot: Dur,
    /// T_s, the channel time of a successful exchange.
    pub t_success: Dur,
    /// T_c, the channel time of a collision.
    pub t_collision: Dur,
    /// E\[L\], payload bits delivered per success.
    pub payload_bits: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BianchiResult {
    /// Probability that a station transmits in a generic slot.
    pub tau: f64,
    /// Conditional collision probability of a transmission.
    pub p: f64,
    /// Saturation throughput S of the whole cell, payload bits per second.
    pub throughput_bps: f64,
    /// Probability that a slot holds at least one transmission.
    pub p_tr: f64,
    /// Probability that such a transmission succeeds.
    pub p_s: f64,
}

/// Solves the fixed point τ(p), p(τ) by bisection on p ∈ [0, 1) to 1e-12
/// (robust and deterministic: `g(p) = 1 − (1 − τ(p))^(n−1) − p` falls from
/// g(0) ≥ 0 to g(1) < 0 and τ(p) decreases), then evaluates S. For n = 1,
/// p = 0 and τ = 2/(W + 1) exactly. `libm::pow` keeps results identical on
/// every platform.
///
/// # Panics
/// If n = 0, CWmax < CWmin, or (CWmax + 1)/(CWmin + 1) is not a power of two.
pub fn solve(params: &BianchiParams) -> BianchiResult {
    let BianchiParams {
        n,
        cw_min,
        cw_max,
        slot,
        t_success,
        t_collision,
        payload_bits,
    } = *params;
    assert!(n >= 1, "bianchi: no stations");
    let ratio = (cw_max + 1) / (cw_min + 1);
    assert!(
        cw_max >= cw_min && (cw_max + 1) % (cw_min + 1) == 0 && ratio.is_power_of_two(),
        "bianchi: CWmax + 1 = {} is not CWmin + 1 = {} times a power of two",
        cw_max + 1,
        cw_min + 1
    );
    let m = ratio.trailing_zeros();
    let w = f64::from(cw_min + 1);
    // Bianchi eq. 7: τ = 2 / (1 + W + p·W·Σ_{i<m} (2p)^i), finite at p = 1/2.
    let tau_of = |p: f64| {
        let (mut sum, mut term) = (0.0, 1.0);
        for _ in 0..m {
            sum += term;
            term *= 2.0 * p;
        }
        2.0 / (1.0 + w + p * w * sum)
    };
    let (tau, p) = if n == 1 {
        (2.0 / (w + 1.0), 0.0)
    } else {
        let others = f64::from(n - 1);
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        while hi - lo > 1e-12 {
            let mid = 0.5 * (lo + hi);
            // Bianchi eq. 9: p = 1 − (1 − τ)^(n−1).
            if 1.0 - libm::pow(1.0 - tau_of(mid), others) > mid {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let p = 0.5 * (lo + hi);
        (tau_of(p), p)
    };
    let nf = f64::from(n);
    let p_tr = 1.0 - libm::pow(1.0 - tau, nf);
    // One station never collides: P_s = 1 exactly, not τ/(1 − (1 − τ)).
    let p_s = if n == 1 {
        1.0
    } else {
        nf * tau * libm::pow(1.0 - tau, nf - 1.0) / p_tr
    };
    // Bianchi eq. 13, times in seconds.
    let busy =
        p_tr * p_s * t_success.as_secs_f64() + p_tr * (1.0 - p_s) * t_collision.as_secs_f64();
    let mean_slot = (1.0 - p_tr) * slot.as_secs_f64() + busy;
    let throughput_bps = p_s * p_tr * payload_bits as f64 / mean_slot;
    BianchiResult {
        tau,
        p,
        throughput_bps,
        p_tr,
        p_s,
    }
}

/// `(T_s, T_c)` for basic access (DATA–Ack, no RTS/CTS), REFERENCES.md §4.4:
/// `T_s = T_DATA + SIFS + T_Ack + AIFS`, `T_c = T_DATA + AckTimeout + AIFS`,
/// with `AIFS = SIFS + aifsn·slot` (802.11-2020 §10.23.2.4), T_DATA =
/// [`Phy::ppdu_duration`] of one `mpdu_bytes` MPDU at `mcs`, T_Ack =
/// [`Phy::ack_duration`]`(14)` and [`Phy::ack_timeout`].
pub fn basic_access_times(phy: &Phy, mcs: u8, mpdu_bytes: u64, aifsn: u32) -> (Dur, Dur) {
    let t_data = phy.ppdu_duration(mcs, mpdu_bytes);
    let aifs = phy.sifs() + phy.slot() * u64::from(aifsn);
    let t_s = t_data + phy.sifs() + phy.ack_duration(14) + aifs;
    let t_c = t_data + phy.ack_timeout() + aifs;
    (t_s, t_c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::{Band, Standard};

    fn params(n: u32, t_s: Dur, t_c: Dur) -> BianchiParams {
        BianchiParams {
            n,
            cw_min: 15,
            cw_max: 1023,
            slot: Dur::from_micros(9),
            t_success: t_s,
            t_collision: t_c,
            payload_bits: 12_000,
        }
    }

    /// REFERENCES.md §4.4: (n, τ, p, S in Mbit/s).
    const TABLE: [(u32, f64, f64, f64); 6] = [
        (1, 0.1176, 0.0, 29.8),
        (2, 0.1046, 0.105, 30.5),
        (5, 0.0761, 0.272, 28.8),
        (10, 0.0525, 0.384, 26.8),
        (20, 0.0339, 0.481, 24.6),
        (50, 0.0183, 0.595, 21.6),
    ];

    #[test]
    fn one_station_never_collides() {
        let r = solve(&params(1, Dur::from_micros(335), Dur::from_micros(335)));
        assert_eq!((r.tau, r.p, r.p_s), (2.0 / 17.0, 0.0, 1.0));
        // S = L / ((1 − τ)/τ · σ + T_s) = 12000 bit / (7.5 · 9 + 335) µs = 29.8137 Mbit/s.
        assert!((r.throughput_bps - 12_000.0 / 402.5e-6).abs() < 1e-3);
    }

    #[test]
    fn reproduces_the_references_table() {
        let t = Dur::from_micros(335);
        let mut last = f64::INFINITY;
        for (n, tau, p, s) in TABLE {
            let r = solve(&params(n, t, t));
            assert!((r.tau - tau).abs() < 5e-5, "n={n}: τ {}", r.tau);
            assert!((r.p - p).abs() < 5e-4, "n={n}: p {}", r.p);
            // S to the table's 0.1 Mbit/s rounding.
            assert!(
                (r.throughput_bps / 1e6 - s).abs() < 0.05,
                "n={n}: S {}",
                r.throughput_bps
            );
            // The fixed point holds: p = 1 − (1 − τ)^(n−1).
            let p_of_tau = 1.0 - libm::pow(1.0 - r.tau, f64::from(n - 1));
            assert!((r.p - p_of_tau).abs() < 1e-10);
            if n >= 2 {
                assert!(r.throughput_bps < last, "S must fall with n from n = 2");
                last = r.throughput_bps;
            }
        }
    }

    #[test]
    fn basic_access_times_of_11a_at_54_mbits() {
        let phy = Phy::new(Standard::A, Band::G5, 20, 1).unwrap();
        // 1530 B MPDU: 20 + ceil((16 + 12240 + 6)/216) · 4 = 20 + 57 · 4 = 248 µs.
        // T_s = 248 + 16 + 28 + 43 = 335; T_c = 248 + (16 + 9 + 20) + 43 = 336 µs.
        let (t_s, t_c) = basic_access_times(&phy, 7, 1530, 3);
        assert_eq!((t_s, t_c), (Dur::from_micros(335), Dur::from_micros(336)));
        // With the AckTimeout the table is met within 0.06 Mbit/s.
        for (n, _, _, s) in TABLE {
            let r = solve(&params(n, t_s, t_c));
            assert!(
                (r.throughput_bps / 1e6 - s).abs() < 0.06,
                "n={n}: S {}",
                r.throughput_bps
            );
        }
    }

    #[test]
    fn a_fixed_window_ignores_collisions() {
        // CWmin = CWmax (m = 0): τ = 2/(W + 1) whatever p.
        let mut q = params(5, Dur::from_micros(300), Dur::from_micros(300));
        q.cw_max = 15;
        let r = solve(&q);
        assert!((r.tau - 2.0 / 17.0).abs() < 1e-15);
        assert!((r.p - (1.0 - libm::pow(15.0 / 17.0, 4.0))).abs() < 1e-11);
    }

    #[test]
    #[should_panic(expected = "power of two")]
    fn windows_must_double() {
        let mut q = params(5, Dur::from_micros(300), Dur::from_micros(300));
        q.cw_max = 1000;
        solve(&q);
    }
}
