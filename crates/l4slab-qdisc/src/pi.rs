//! Proportional-integral control of a drop/mark probability from queue delay,
//! shared by PIE (RFC 8033 §4.2) and DualPI2's PI2 core (RFC 9332 App. A).
//!
//! Both compute, every `tupdate`,
//! `delta = alpha * (qdelay - target) + beta * (qdelay - qdelay_old)`
//! with alpha and beta in Hz (the update interval is folded into them, as in
//! the RFCs). PIE then scales `delta` by its auto-tuning table; PI2 adds it to
//! `p'` directly. Pure functions: no clock, no RNG.

use l4slab_core::Dur;

/// PI gains and set point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PiGains {
    /// Integral gain, Hz.
    pub alpha: f64,
    /// Proportional gain, Hz.
    pub beta: f64,
    /// Target queue delay.
    pub target: Dur,
}

/// RFC 8033 §4.2 / RFC 9332 App. A:
/// `alpha * (qdelay - target) + beta * (qdelay - qdelay_old)` (in probability units).
pub fn pi_delta(g: &PiGains, qdelay: Dur, qdelay_old: Dur) -> f64 {
    let err = qdelay.as_secs_f64() - g.target.as_secs_f64();
    let trend = qdelay.as_secs_f64() - qdelay_old.as_secs_f64();
    g.alpha * err + g.beta * trend
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_is_integral_plus_proportional() {
        let g = PiGains {
            alpha: 0.16,
            beta: 3.2,
            target: Dur::from_millis(15),
        };
        // 10 ms above target, steady: 0.16 Hz * 0.010 s = 1.6e-3.
        let d = pi_delta(&g, Dur::from_millis(25), Dur::from_millis(25));
        assert!((d - 1.6e-3).abs() < 1e-15);
        // At target but rising 1 ms per update: 3.2 Hz * 0.001 s = 3.2e-3.
        let d = pi_delta(&g, Dur::from_millis(15), Dur::from_millis(14));
        assert!((d - 3.2e-3).abs() < 1e-15);
        // Empty queue: pulls p down by alpha * target.
        let d = pi_delta(&g, Dur::ZERO, Dur::ZERO);
        assert!((d + 0.16 * 0.015).abs() < 1e-15);
    }
}
