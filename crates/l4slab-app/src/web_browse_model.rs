//! The page model of `web_browse` ([`crate::web_browse`]): what a browsing
//! person asks for, drawn from the 3GPP/3GPP2 HTTP traffic model.
//!
//! Source: 3GPP2 C.R1002-0 v1.0 (2004), "cdma2000 Evaluation Methodology",
//! its HTTP traffic model, the same table as IEEE 802.16m-08/004r5
//! (Evaluation Methodology Document) §10.1 "Web browsing (HTTP) traffic
//! model" and NGMN's Radio Access Performance Evaluation Methodology (2008);
//! ns-3's `ThreeGppHttpVariables` implements it with these defaults. A page
//! is a main object (the HTML) and `Nd` embedded objects, which the browser
//! asks for after parsing the main object; the user reads the page, then
//! asks for the next:
//!
//! | quantity | distribution | parameters |
//! |---|---|---|
//! | main object size `SM` | truncated lognormal | μ = 8.37, σ = 1.37 (ln bytes); min 100 B, max 2 MB |
//! | embedded object size `SE` | truncated lognormal | μ = 6.17, σ = 2.36; min 50 B, max 2 MB |
//! | embedded objects per page `Nd` | truncated Pareto | α = 1.1, k = 2, m = 55; `Nd = X − k` |
//! | reading time `Dpc` | exponential | mean 30 s |
//! | parsing time `Tp` | exponential | mean 0.13 s |
//!
//! How each is drawn (one uniform number per draw, so a page takes the
//! same draws whatever the network does):
//!
//! * a *truncated* lognormal is the lognormal conditioned on `[min, max]`,
//!   drawn by inverting its CDF on that range (no rejection loop, so a
//!   range deep in a tail cannot stall a run);
//! * the truncated Pareto is the 3GPP2 one: density `α k^α / x^(α+1)` on
//!   `[k, m)` and the rest of the mass at `m` (`P(X = m) = (k/m)^α`), which
//!   gives the table's mean `E[Nd] = 5.64`; `X` is rounded to the nearest
//!   integer before `k` is subtracted (the published `Nd` is a count; rounding
//!   keeps its mean: 5.60 here);
//! * exponentials by inversion, `−mean · ln(U)`.
//!
//! Not modelled: the request sizes (fixed, [`crate::web_browse`]), the
//! 3GPP2 model's MTU choice (536 or 1500 B: the flow's transport has its own
//! MSS), several servers.

use l4slab_core::{Dur, SimRng};

/// A lognormal of `μ`, `σ` (of the log of bytes) conditioned on
/// `[min, max]` bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TruncLognormal {
    pub mu: f64,
    pub sigma: f64,
    pub min: u64,
    pub max: u64,
}

impl TruncLognormal {
    /// `u` uniform in `[0, 1)` -> a size in `[min, max]`: the inverse of the
    /// truncated CDF, `exp(μ + σ Φ⁻¹(Φ(a) + u (Φ(b) − Φ(a))))` with
    /// `a = (ln min − μ)/σ`, `b = (ln max − μ)/σ`.
    pub fn quantile(&self, u: f64) -> u64 {
        assert!(
            self.sigma > 0.0 && self.min >= 1 && self.min <= self.max,
            "{self:?}"
        );
        let z = |x: u64| ((x as f64).ln() - self.mu) / self.sigma;
        let (lo, hi) = (normal_cdf(z(self.min)), normal_cdf(z(self.max)));
        let p = lo + u * (hi - lo);
        let x = (self.mu + self.sigma * normal_quantile(p)).exp();
        // Rounding, and a range so deep in a tail that Φ saturates, stay inside.
        (x.round() as u64).clamp(self.min, self.max)
    }

    pub fn draw(&self, rng: &mut SimRng) -> u64 {
        self.quantile(rng.uniform())
    }

    /// The mean of the truncated distribution:
    /// `e^(μ+σ²/2) (Φ(b − σ) − Φ(a − σ)) / (Φ(b) − Φ(a))`.
    pub fn mean(&self) -> f64 {
        let z = |x: u64| ((x as f64).ln() - self.mu) / self.sigma;
        let (a, b, s) = (z(self.min), z(self.max), self.sigma);
        (self.mu + s * s / 2.0).exp() * (normal_cdf(b - s) - normal_cdf(a - s))
            / (normal_cdf(b) - normal_cdf(a))
    }
}

/// 3GPP2's truncated Pareto for the number of embedded objects: `X` with
/// density `α k^α / x^(α+1)` on `[k, m)` and `P(X = m) = (k/m)^α`;
/// the count is `round(X) − k`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TruncPareto {
    /// `α`, the shape.
    pub shape: f64,
    /// `k`, the scale (the least `X`).
    pub scale: u32,
    /// `m`, where the tail is cut.
    pub cap: u32,
}

impl TruncPareto {
    /// `u` uniform in `[0, 1)` -> a count in `0..=m − k`.
    pub fn quantile(&self, u: f64) -> u32 {
        assert!(
            self.shape > 0.0 && self.scale >= 1 && self.scale <= self.cap,
            "{self:?}"
        );
        let (k, m) = (f64::from(self.scale), f64::from(self.cap));
        // Inversion of P(X > x) = (k/x)^α: x = k (1 − u)^(−1/α); 1 − u is in (0, 1].
        let x = (k * (1.0 - u).powf(-1.0 / self.shape)).min(m);
        // 3GPP2 C.R1002 HTTP model: "subtract k from the generated random value to obtain Nd".
        (x.round() as u32).saturating_sub(self.scale)
    }

    pub fn draw(&self, rng: &mut SimRng) -> u32 {
        self.quantile(rng.uniform())
    }

    /// The mean count this rounding gives: `Σ_{j=k+1..=m} P(X ≥ j − ½)`.
    pub fn mean(&self) -> f64 {
        let (k, a) = (f64::from(self.scale), self.shape);
        (self.scale + 1..=self.cap)
            .map(|j| (k / (f64::from(j) - 0.5)).powf(a).min(1.0))
            .sum()
    }
}

/// An exponential duration of mean `mean`, by inversion: `−mean · ln(1 − U)`.
pub fn exponential(mean: Dur, rng: &mut SimRng) -> Dur {
    let u = rng.uniform();
    Dur::from_secs_f64(-mean.as_secs_f64() * (1.0 - u).ln())
}

/// The standard normal CDF `Φ(x) = erfc(−x/√2) / 2`, with the Chebyshev
/// fit of `erfc` in Numerical Recipes (2nd ed., §6.2, `erfcc`): fractional
/// error below 1.2e-7 everywhere, so tails keep their relative accuracy.
pub fn normal_cdf(x: f64) -> f64 {
    let z = -x / core::f64::consts::SQRT_2;
    let az = z.abs();
    let t = 1.0 / (1.0 + 0.5 * az);
    let poly = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc_az = t * (-az * az + poly).exp();
    let erfc = if z >= 0.0 { erfc_az } else { 2.0 - erfc_az };
    erfc / 2.0
}

/// The standard normal quantile `Φ⁻¹(p)`, P. J. Acklam's rational
/// approximation (2003; relative error below 1.15e-9); `±∞` at 0 and 1.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    }
}

/// One page as drawn: what the user asks for and how long they read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The main object's (HTML's) bytes.
    pub html: u64,
    /// Each embedded object's bytes, in request order.
    pub objects: Vec<u64>,
    /// From the HTML's last byte to asking for the embedded objects.
    pub parsing: Dur,
    /// From the page's last byte to asking for the next page.
    pub reading: Dur,
}

impl Page {
    /// All the page's response bytes.
    pub fn bytes(&self) -> u64 {
        self.html + self.objects.iter().sum::<u64>()
    }
}

/// The distributions of a page ([`crate::web_browse::WebBrowseConfig`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageModel {
    pub html: TruncLognormal,
    pub object: TruncLognormal,
    pub count: TruncPareto,
    pub parsing_mean: Dur,
    pub reading_mean: Dur,
}

impl PageModel {
    /// The next page, with draws in a fixed order (HTML size, count, each
    /// object's size, parsing time, reading time), so page `i` of a seed is
    /// the same page whatever the network did before it.
    pub fn draw(&self, rng: &mut SimRng) -> Page {
        let html = self.html.draw(rng);
        let n = self.count.draw(rng);
        let objects = (0..n).map(|_| self.object.draw(rng)).collect();
        Page {
            html,
            objects,
            parsing: exponential(self.parsing_mean, rng),
            reading: exponential(self.reading_mean, rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTML: TruncLognormal = TruncLognormal {
        mu: 8.37,
        sigma: 1.37,
        min: 100,
        max: 2_000_000,
    };
    const OBJECT: TruncLognormal = TruncLognormal {
        mu: 6.17,
        sigma: 2.36,
        min: 50,
        max: 2_000_000,
    };
    const COUNT: TruncPareto = TruncPareto {
        shape: 1.1,
        scale: 2,
        cap: 55,
    };

    #[test]
    fn the_normal_functions_match_tabulated_values_and_invert_each_other() {
        // Standard normal table values.
        for (x, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_7),
            (1.96, 0.975_002_1),
            (-3.0, 0.001_349_9),
        ] {
            assert!(
                (normal_cdf(x) - p).abs() < 2e-7,
                "Φ({x}) = {}",
                normal_cdf(x)
            );
        }
        for p in [1e-9, 1e-4, 0.01, 0.024, 0.3, 0.5, 0.9, 0.99, 1.0 - 1e-6] {
            let x = normal_quantile(p);
            assert!((normal_cdf(x) / p - 1.0).abs() < 1e-6, "p = {p}: x = {x}");
        }
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
    }

    #[test]
    fn the_models_means_are_the_published_ones() {
        // 3GPP2's table gives the lognormals' means before truncation
        // (10,710 B and 7,758 B) and E[Nd] = 5.64 for the continuous X.
        let raw = |d: TruncLognormal| (d.mu + d.sigma * d.sigma / 2.0).exp();
        assert!((raw(HTML) / 10_710.0 - 1.0).abs() < 0.04, "{}", raw(HTML));
        assert!(
            (raw(OBJECT) / 7_758.0 - 1.0).abs() < 0.01,
            "{}",
            raw(OBJECT)
        );
        // The truncated laws' means (Python's statistics.NormalDist, same
        // formula): the cut below (100 B, 50 B) weighs more than the one at 2 MB.
        assert!((HTML.mean() - 11_053.5).abs() < 1.0, "{}", HTML.mean());
        assert!((OBJECT.mean() - 8_199.7).abs() < 1.0, "{}", OBJECT.mean());
        // Rounding X keeps E[Nd]: 5.620 against 5.64.
        assert!((COUNT.mean() - 5.620).abs() < 0.001, "{}", COUNT.mean());
    }

    /// `n` draws of `f`: their mean and the largest and smallest.
    fn sample(n: usize, seed: u64, mut f: impl FnMut(&mut SimRng) -> f64) -> (f64, f64, f64) {
        let mut rng = SimRng::derive(seed, "web_browse/test");
        let (mut sum, mut lo, mut hi) = (0.0, f64::INFINITY, f64::NEG_INFINITY);
        for _ in 0..n {
            let x = f(&mut rng);
            sum += x;
            lo = lo.min(x);
            hi = hi.max(x);
        }
        (sum / n as f64, lo, hi)
    }

    #[test]
    fn sizes_follow_the_truncated_lognormals_and_stay_in_range() {
        // Main object: sd of the truncated law < 30 kB; 200k draws: se < 70 B.
        let (mean, lo, hi) = sample(200_000, 1, |r| HTML.draw(r) as f64);
        assert!(
            (mean - HTML.mean()).abs() < 400.0,
            "{mean} vs {}",
            HTML.mean()
        );
        assert!(lo >= 100.0 && hi <= 2e6, "{lo}..{hi}");
        // Embedded: heavier tail (sd ~ 60 kB after truncation): se ~ 140 B.
        let (mean, lo, hi) = sample(200_000, 2, |r| OBJECT.draw(r) as f64);
        assert!(
            (mean - OBJECT.mean()).abs() < 700.0,
            "{mean} vs {}",
            OBJECT.mean()
        );
        assert!(lo >= 50.0 && hi <= 2e6, "{lo}..{hi}");
        // The median is e^μ (truncation moves it by < 1 %).
        let mut rng = SimRng::derive(3, "median");
        let mut xs: Vec<u64> = (0..20_001).map(|_| HTML.draw(&mut rng)).collect();
        xs.sort_unstable();
        let median = xs[10_000] as f64;
        assert!((median / 8.37f64.exp() - 1.0).abs() < 0.03, "{median}");
        // A narrow range deep in the tail is respected, not looped on.
        let far = TruncLognormal {
            min: 1_000_000_000,
            max: 1_000_000_100,
            ..HTML
        };
        let x = far.draw(&mut rng);
        assert!((1_000_000_000..=1_000_000_100).contains(&x));
    }

    #[test]
    fn object_counts_follow_the_truncated_pareto() {
        let (mean, lo, hi) = sample(200_000, 4, |r| f64::from(COUNT.draw(r)));
        // sd of Nd ~ 9: se ~ 0.02.
        assert!(
            (mean - COUNT.mean()).abs() < 0.1,
            "{mean} vs {}",
            COUNT.mean()
        );
        assert_eq!((lo, hi), (0.0, 53.0), "Nd in 0..=m-k, the cap reached");
        // P(Nd = m - k) = (k/(m - ½))^α, about 2.8 %.
        assert_eq!(COUNT.quantile(0.0), 0);
        assert_eq!(COUNT.quantile(0.999_999), 53);
    }

    #[test]
    fn exponential_times_have_their_mean() {
        let mean = Dur::from_secs(30);
        let (m, lo, _) = sample(200_000, 5, |r| exponential(mean, r).as_secs_f64());
        // sd = 30 s: se = 0.067 s.
        assert!((m - 30.0).abs() < 0.35, "{m}");
        assert!(lo >= 0.0);
    }

    #[test]
    fn pages_are_the_same_for_a_seed_and_differ_between_seeds() {
        let model = PageModel {
            html: HTML,
            object: OBJECT,
            count: COUNT,
            parsing_mean: Dur::from_millis(130),
            reading_mean: Dur::from_secs(30),
        };
        let pages = |seed| {
            let mut rng = SimRng::derive(seed, "web_browse/page");
            (0..20).map(|_| model.draw(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(pages(7), pages(7));
        assert_ne!(pages(7), pages(8));
        let p = &pages(7)[0];
        assert_eq!(p.bytes(), p.html + p.objects.iter().sum::<u64>());
    }
}
