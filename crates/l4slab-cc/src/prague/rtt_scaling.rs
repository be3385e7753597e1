//! Prague's RTT-independence heuristics (draft-briscoe-iccrg-prague-congestion-control-04
//! §2.4.4 "Reduced RTT-Dependence"; Linux `tcp_prague.c` v0.6
//! `rtt_scaling_heuristics[]`).
//!
//! Below a target RTT (default 25 ms) a Prague flow scales its additive
//! increase so that it gains rate as fast as a flow at the target RTT would,
//! and (in [`super::Prague`]) updates `alpha` and reduces at most once per
//! target RTT. The scaling is expressed as the increase per RTT in MSS that
//! replaces Reno's 1 MSS (Linux `ai_ack_increase`, in 2^-20 segments).
//!
//! Linux quantizes RTTs to 128 µs units (`RTT_UNIT = 7`) and keeps the
//! increase in 20-bit fixed point; here the formulas use exact nanoseconds
//! and `f64`. For the default 25 ms target and a 5 ms RTT both give exactly
//! `(5/25)^2 = 0.04` (Linux: 39/195).

use serde::{Deserialize, Serialize};

use l4slab_core::Dur;

/// Linux `prague_rtt_scaling` (module parameter) — which RTT-independence
/// heuristic runs once a flow has left slow start for
/// `rtt_transition_rounds` rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RttScaling {
    /// `RTT_CONTROL_NONE`: no RTT independence; +1 MSS per RTT, alpha and
    /// reductions once per RTT (DCTCP-like).
    None,
    /// `RTT_CONTROL_RATE` (Linux default): flows with RTT below the target
    /// grow their *rate* as fast as a flow at the target RTT: `(RTT/target)^2`
    /// MSS per RTT.
    #[default]
    Rate,
    /// `RTT_CONTROL_SCALABLE`: trades some rate fairness at very low RTTs for
    /// a floor on the marks per RTT (R0 ≈ 16 ms, R1 ≈ 1.5 ms).
    Scalable,
    /// `RTT_CONTROL_ADDITIVE`: behave as a flow whose RTT is the real RTT plus
    /// the target (`target = rtt_target + srtt`).
    Additive,
}

/// Linux `prague_scalable_ai_ack_increase`: `R0 = US2RTT(1 << 14)` = 16.384 ms.
pub(crate) const SCALABLE_R0: Dur = Dur::from_micros(16_384);
/// Linux `prague_scalable_ai_ack_increase`: `R1 = US2RTT((1 << 10) + (1 << 9))` = 1.536 ms.
pub(crate) const SCALABLE_R1: Dur = Dur::from_micros(1_536);
/// Linux `MAX_SCALED_RTT`: above 100 ms the increase is never scaled.
pub(crate) const MAX_SCALED_RTT: Dur = Dur::from_millis(100);

impl RttScaling {
    /// Every heuristic in Linux's order (`prague_rtt_scaling` 0..=3).
    pub const ALL: [RttScaling; 4] = [
        RttScaling::None,
        RttScaling::Rate,
        RttScaling::Scalable,
        RttScaling::Additive,
    ];
    /// Their names (as serialized), in the same order.
    pub const NAMES: &'static [&'static str] = &["none", "rate", "scalable", "additive"];

    /// The heuristic named `name` (one of [`RttScaling::NAMES`]).
    pub fn from_name(name: &str) -> Option<Self> {
        let i = Self::NAMES.iter().position(|&n| n == name)?;
        Some(Self::ALL[i])
    }

    /// The target RTT in force (Linux `prague_target_rtt`): ADDITIVE uses
    /// `prague_dynamic_rtt_target = rtt_target + srtt`, the others the
    /// configured target.
    pub(crate) fn target(self, rtt_target: Dur, srtt: Dur) -> Dur {
        match self {
            RttScaling::Additive => rtt_target + srtt,
            _ => rtt_target,
        }
    }

    /// Additive increase per RTT, in MSS, once the heuristic applies (Linux
    /// `rtt_scaling_ops.ai_ack_increase` divided by `ONE_CWND`). `srtt` must
    /// be non-zero and at most [`MAX_SCALED_RTT`] (checked by the caller, as
    /// Linux `prague_ai_ack_increase` does).
    pub(crate) fn scaled_ai_per_rtt(self, srtt: Dur, rtt_target: Dur) -> f64 {
        let rtt = srtt.as_secs_f64();
        match self {
            RttScaling::None => 1.0,
            RttScaling::Rate | RttScaling::Additive => {
                // Linux prague_rate_scaled_ai_ack_increase: "Grow by 1MSS/target
                // RTT" in rate terms: increase = rtt^2 / target^2 (unscaled when
                // rtt >= target).
                let target = self.target(rtt_target, srtt).as_secs_f64();
                if rtt >= target {
                    1.0
                } else {
                    (rtt * rtt) / (target * target)
                }
            }
            RttScaling::Scalable => {
                // Linux prague_scalable_ai_ack_increase:
                // increase = (R0/8 + clamp(rtt - R1, 0, R0)) * rtt / R0^2
                // ("a growth of at least 1/8th"). Note: no cap at the target,
                // so above R0 + R1 ≈ 17.9 ms this exceeds 1 MSS per RTT (Linux
                // behaves the same way).
                let r0 = SCALABLE_R0.as_secs_f64();
                let r1 = SCALABLE_R1.as_secs_f64();
                (r0 / 8.0 + (rtt - r1).clamp(0.0, r0)) * rtt / (r0 * r0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Dur = Dur::from_millis(25);

    #[test]
    fn rate_scaling_is_rtt_over_target_squared() {
        let ai = RttScaling::Rate.scaled_ai_per_rtt(Dur::from_millis(5), T);
        assert!((ai - 0.04).abs() < 1e-15, "{ai}");
        // At or above the target: unscaled.
        assert_eq!(RttScaling::Rate.scaled_ai_per_rtt(T, T), 1.0);
        assert_eq!(
            RttScaling::Rate.scaled_ai_per_rtt(Dur::from_millis(80), T),
            1.0
        );
        // Rate growth matches a 25 ms flow: ai / rtt^2 = 1 / target^2.
        let rtt = Dur::from_millis(10);
        let ai = RttScaling::Rate.scaled_ai_per_rtt(rtt, T);
        let per_s2 = ai / rtt.as_secs_f64().powi(2);
        assert!((per_s2 - 1.0 / 0.025f64.powi(2)).abs() < 1e-6);
    }

    #[test]
    fn additive_scaling_adds_the_target_to_the_rtt() {
        // target = 25 + 25 = 50 ms: (25/50)^2 = 1/4.
        let ai = RttScaling::Additive.scaled_ai_per_rtt(T, T);
        assert!((ai - 0.25).abs() < 1e-15);
        assert_eq!(RttScaling::Additive.target(T, T), Dur::from_millis(50));
    }

    #[test]
    fn scalable_scaling_matches_the_linux_formula() {
        // rtt = R1: R0/8 * R1 / R0^2 = R1 / (8 R0) = 1.536 / 131.072.
        let ai = RttScaling::Scalable.scaled_ai_per_rtt(SCALABLE_R1, T);
        assert!((ai - 1.536 / 131.072).abs() < 1e-12, "{ai}");
        // rtt = R0 + R1: (R0/8 + R0) * (R0 + R1) / R0^2 = 1.125 * 17.92 / 16.384.
        let ai = RttScaling::Scalable.scaled_ai_per_rtt(SCALABLE_R0 + SCALABLE_R1, T);
        assert!((ai - 1.125 * 17.92 / 16.384).abs() < 1e-12, "{ai}");
        assert_eq!(RttScaling::None.scaled_ai_per_rtt(SCALABLE_R1, T), 1.0);
    }
}
