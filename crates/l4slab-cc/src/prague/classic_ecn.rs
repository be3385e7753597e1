//! Classic-ECN bottleneck detection — RFC 9331 §4.3 (a Prague sender "SHOULD
//! detect" a Classic RFC 3168 ECN AQM and fall back), as Linux `tcp_prague.c`
//! v0.6 does it (`prague_rtt_estimator`, `prague_update_rtt_scaling`,
//! `prague_classic_ecn_detection`, `prague_classic_ecn_fallback`; module
//! parameter `prague_ecn_fallback`, default 0 = off).
//!
//! The heuristic: an L4S AQM keeps the queue shallow and steady, a Classic
//! AQM lets it grow and swing. Prague keeps a second, slow RTT estimator
//! (gain `2^-g`, `g` growing with the window) and once per round adds to a
//! score `classic_ecn` (in alpha units):
//!
//! * `+ ½·log2(mdev / 750 µs)` — RTT variation against a reference queue
//!   V ≈ 750 µs (Linux `V0_LG`, weight `V = 1` → ½);
//! * `+ ½·log2(depth / 2 ms)` when the queueing delay `depth = srtt − min_rtt`
//!   exceeds D ≈ 2 ms (Linux `D0_LG`, weight `D = 1` → ½; queue build-up only
//!   ever pushes towards Classic);
//!
//! clamped to `[0, 17]`. Below 8 (`L_STICKY`) the flow is pure L4S; between 8
//! and 9 (`CLASSIC_ECN`) it transitions; up to 17 (`C_STICKY`) it stays
//! Classic. With fallback on, each ECN reduction uses
//! `max(alpha, 0.625·(min(score, 9) − 8))` — "clamp alpha no lower than c to
//! compete fair with classic AQMs".
//!
//! **Deviations from Linux.** Linux computes the logarithms as integer
//! `ilog2` with a carried mantissa so that the sum over rounds is unbiased;
//! here `libm::log2` is exact per round. Linux keeps the estimator upscaled
//! and rescales it when the gain changes; an `f64` needs no rescaling. The
//! estimator starts from the first RTT sample (Linux: the handshake RTT when
//! the controller is initialised). The "self-limited" term is commented out
//! in Linux and absent here too.

use l4slab_core::Dur;

/// Linux `PRAGUE_MAX_SRTT_BITS`: the slowest estimator gain, `2^-18`.
const MAX_SRTT_SHIFT: u32 = 18;
/// Reference RTT variation V ≈ 750 µs (Linux `V0_LG = 10014683 >> V`, i.e.
/// `2^20 · log2(750)`, halved by the weight `V = 1`).
const V0_US: f64 = 750.0;
/// Reference queue depth D ≈ 2 ms (Linux `D0_LG = 11498458 >> D`, i.e.
/// `2^20 · log2(2000)`, halved by the weight `D = 1`).
const D0_US: f64 = 2_000.0;
/// Weights `1/2^V` and `1/2^D` (Linux `V = D = 1`).
const WEIGHT: f64 = 0.5;
/// Linux `L_STICKY = 16 << (PRAGUE_ALPHA_BITS - V)` = 8.0 in alpha units:
/// up to here the flow is pure L4S.
pub(crate) const L_STICKY: f64 = 8.0;
/// Linux `CLASSIC_ECN = L_STICKY + PRAGUE_MAX_ALPHA` = 9.0.
const CLASSIC_ECN: f64 = L_STICKY + 1.0;
/// Linux `C_STICKY = CLASSIC_ECN + L_STICKY` = 17.0: the score's ceiling.
const C_STICKY: f64 = CLASSIC_ECN + L_STICKY;
/// Linux `prague_classic_ecn_fallback`: `c = (c >> 1) + (c >> 3)` ≈ 0.625·c.
const FALLBACK_FACTOR: f64 = 0.5 + 0.125;
/// Linux `TCP_INFINITE_SSTHRESH` (`0x7fffffff`), for the gain before any
/// reduction.
const INFINITE_SSTHRESH: u64 = 0x7fff_ffff;

/// The slow RTT estimator and the `classic_ecn` score.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClassicEcnDetector {
    /// Linux `srtt_pace_us >> g_srtt_shift`, µs; 0 before the first sample.
    srtt_us: f64,
    /// Linux `mdev_pace_us >> g_mdev_shift`, µs.
    mdev_us: f64,
    /// Linux `g_srtt_shift` (`g_mdev_shift` is one more).
    srtt_shift: u32,
    /// Linux `tp->classic_ecn`, in alpha units (`PRAGUE_MAX_ALPHA` = 1).
    score: f64,
}

impl Default for ClassicEcnDetector {
    fn default() -> Self {
        ClassicEcnDetector {
            srtt_us: 0.0,
            mdev_us: 0.0,
            // Linux prague_init: g_srtt_shift = PRAGUE_MAX_SRTT_BITS.
            srtt_shift: MAX_SRTT_SHIFT,
            score: 0.0,
        }
    }
}

impl ClassicEcnDetector {
    /// Linux `prague_rtt_estimator`, per RTT sample: an RFC 6298-style
    /// estimator with gains `2^-g` (srtt) and `2^-(g+1)` (mdev).
    pub(crate) fn on_rtt_sample(&mut self, rtt: Dur) {
        let m = rtt.as_nanos() as f64 / 1_000.0;
        let gs = 1.0 / (1u64 << self.srtt_shift) as f64;
        let gm = 1.0 / (1u64 << (self.srtt_shift + 1)) as f64;
        if self.srtt_us > 0.0 {
            // "m is now error in rtt est"; "rtt += 1/2^g_srtt_shift new"
            let err = m - self.srtt_us;
            self.srtt_us += err * gs;
            // "mdev += 1/2^g_mdev_shift new"
            self.mdev_us += (err.abs() - self.mdev_us) * gm;
        } else {
            // "no previous measure": take the sample; mdev starts at 1 µs.
            self.srtt_us = m;
            self.mdev_us = 1.0;
        }
        // Linux: srtt_pace_us = max(1, srtt_pace) (upscaled).
        self.srtt_us = self.srtt_us.max(gs);
    }

    /// Linux `prague_update_rtt_scaling`, called with the current `ssthresh`
    /// (segments; `u64::MAX` = unset) whenever a reduction starts (Linux
    /// `prague_ssthresh`): `g = ilog2(s) + ilog2(s)/2 + 1`, at most 18.
    pub(crate) fn on_ssthresh(&mut self, ssthresh_segments: u64) {
        let s = ssthresh_segments.clamp(1, INFINITE_SSTHRESH);
        let lg = s.ilog2();
        self.srtt_shift = (lg + (lg >> 1) + 1).min(MAX_SRTT_SHIFT);
    }

    /// Linux `prague_classic_ecn_detection`, once per round (before alpha is
    /// updated). `min_rtt` is the path's minimum RTT (Linux `tcp_min_rtt`).
    pub(crate) fn on_round(&mut self, min_rtt: Dur) {
        if self.srtt_us <= 0.0 || min_rtt.is_zero() {
            return;
        }
        // V*lg(mdev/V0); Linux's integer log never goes below lg(1 µs) = 0.
        let mdev_lg = libm::log2(self.mdev_us.max(1.0));
        let mut score = self.score + WEIGHT * (mdev_lg - libm::log2(V0_US));
        let min_us = min_rtt.as_nanos() as f64 / 1_000.0;
        if self.srtt_us > min_us {
            // "queue build-up can only bring classic_ecn toward more classic":
            // + D*lg(max(d/D0, 1))
            let depth_lg = libm::log2((self.srtt_us - min_us).max(1.0));
            if depth_lg > libm::log2(D0_US) {
                score += WEIGHT * (depth_lg - libm::log2(D0_US));
            }
        }
        self.score = score.clamp(0.0, C_STICKY);
    }

    /// Linux `prague_classic_ecn_fallback`: the alpha floor once the score
    /// passed `L_STICKY` (`None` while the path looks L4S).
    pub(crate) fn alpha_floor(&self) -> Option<f64> {
        (self.score > L_STICKY).then(|| FALLBACK_FACTOR * (self.score.min(CLASSIC_ECN) - L_STICKY))
    }

    /// The score (Linux `tp->classic_ecn`), in alpha units, `[0, 17]`.
    pub(crate) fn score(&self) -> f64 {
        self.score
    }

    /// The slow estimator's smoothed RTT, µs (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn srtt_us(&self) -> f64 {
        self.srtt_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gain_follows_ssthresh_like_linux() {
        let mut d = ClassicEcnDetector::default();
        d.on_ssthresh(u64::MAX); // ilog2(0x7fffffff) = 30 -> 46 -> capped 18
        assert_eq!(d.srtt_shift, 18);
        d.on_ssthresh(100); // ilog2 = 6 -> 6 + 3 + 1 = 10
        assert_eq!(d.srtt_shift, 10);
        d.on_ssthresh(2); // 1 + 0 + 1
        assert_eq!(d.srtt_shift, 2);
    }

    #[test]
    fn estimator_is_an_ewma_with_gain_two_to_minus_g() {
        let mut d = ClassicEcnDetector::default();
        d.on_ssthresh(2); // g = 2: srtt gain 1/4, mdev gain 1/8
        d.on_rtt_sample(Dur::from_millis(10));
        assert_eq!(d.srtt_us(), 10_000.0);
        d.on_rtt_sample(Dur::from_millis(14));
        // srtt = 10000 + 4000/4; mdev = 1 + (4000 - 1)/8
        assert_eq!(d.srtt_us(), 11_000.0);
        assert_eq!(d.mdev_us, 1.0 + 3_999.0 / 8.0);
    }

    #[test]
    fn score_adds_half_log_ratios_and_saturates() {
        let mut d = ClassicEcnDetector {
            srtt_us: 12_000.0,
            mdev_us: 3_000.0,
            srtt_shift: 2,
            score: 0.0,
        };
        // mdev 3 ms = 4 V0 -> +1; depth 12 - 4 = 8 ms = 4 D0 -> +1.
        d.on_round(Dur::from_millis(4));
        assert!((d.score() - 2.0).abs() < 1e-12, "{}", d.score());
        assert_eq!(d.alpha_floor(), None);
        for _ in 0..20 {
            d.on_round(Dur::from_millis(4));
        }
        assert_eq!(d.score(), C_STICKY);
        assert_eq!(d.alpha_floor(), Some(0.625));
        // A steady, shallow queue: mdev 187.5 µs = V0/4 -> -1 per round.
        d.mdev_us = 187.5;
        d.srtt_us = 4_100.0;
        d.on_round(Dur::from_millis(4));
        assert!((d.score() - 16.0).abs() < 1e-12);
        for _ in 0..20 {
            d.on_round(Dur::from_millis(4));
        }
        assert_eq!(d.score(), 0.0);
    }
}
