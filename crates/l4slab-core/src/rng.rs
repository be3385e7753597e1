//! Deterministic randomness (DESIGN.md §4.2).
//!
//! A run has exactly one root seed. Every component that needs randomness gets
//! its own stream derived from the root seed and a *stable label* such as
//! `"link/bottleneck.down/loss"`, so adding a flow never perturbs the random
//! choices of the others and results never depend on construction order.
//!
//! Each stream counts the numbers drawn from it ([`SimRng::draws`]). Until a
//! run's first draw, nothing it does depends on the seed; so a run that drew
//! nothing from any stream gives the same results with every seed, and says
//! so (`random_draws` in summary.json).

/// FNV-1a 64: fixed by its definition (unlike `std`'s `DefaultHasher`).
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, statistically adequate
/// for loss, jitter and AQM coin flips, and identical on every platform.
#[derive(Clone, Debug)]
pub struct SimRng {
    state: u64,
    /// Numbers drawn since [`SimRng::derive`].
    draws: u64,
}

impl SimRng {
    /// Derive the stream for `label` from the run's root `seed`.
    pub fn derive(seed: u64, label: &str) -> Self {
        // Mix the seed through one SplitMix step so seeds 0, 1, 2... are far apart.
        let mut r = SimRng {
            state: seed ^ fnv1a64(label.as_bytes()),
            draws: 0,
        };
        r.next_u64();
        r.draws = 0;
        r
    }

    /// How many numbers were drawn from this stream (every method below draws
    /// one, except [`SimRng::chance`] with `p <= 0`, which draws none).
    pub fn draws(&self) -> u64 {
        self.draws
    }

    pub fn next_u64(&mut self) -> u64 {
        self.draws += 1;
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p` (clamped to `[0, 1]`).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p.min(1.0)
    }

    /// Uniform integer in `[0, n)`; `n` must be non-zero.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        // Lemire's multiply-shift; the tiny bias (< n / 2^64) is irrelevant here.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn streams_are_stable_and_independent() {
        let mut a1 = SimRng::derive(42, "flow/a");
        let mut a2 = SimRng::derive(42, "flow/a");
        let mut b = SimRng::derive(42, "flow/b");
        let mut c = SimRng::derive(43, "flow/a");
        let xs: Vec<u64> = (0..4).map(|_| a1.next_u64()).collect();
        assert_eq!(xs, (0..4).map(|_| a2.next_u64()).collect::<Vec<_>>());
        assert_ne!(xs[0], b.next_u64());
        assert_ne!(xs[0], c.next_u64());
    }

    #[test]
    fn chance_has_the_right_mean() {
        let mut r = SimRng::derive(7, "t");
        let hits = (0..100_000).filter(|_| r.chance(0.1)).count();
        // Binomial(1e5, 0.1): sd = 95; 5 sd = 475.
        assert!((hits as i64 - 10_000).abs() < 475, "{hits}");
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }

    #[test]
    fn draws_are_counted_and_a_zero_chance_draws_nothing() {
        let mut r = SimRng::derive(7, "t");
        assert_eq!(r.draws(), 0, "deriving draws nothing");
        assert!(!r.chance(0.0));
        assert_eq!(r.draws(), 0);
        r.uniform();
        r.below(10);
        r.chance(0.5);
        r.next_u64();
        assert_eq!(r.draws(), 4);
    }
}
