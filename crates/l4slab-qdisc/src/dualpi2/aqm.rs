//! DualPI2's per-packet AQM decisions as pure functions of the state they
//! read: the PI2-coupled drop/mark (Linux `must_drop()` with
//! `dualpi2_classic_marking()` / `dualpi2_scalable_marking()`), the native
//! L4S step (Linux `do_step_aqm()`) and RFC 9332's ramp (`laqm()`).
//! Randomness comes only from the `SimRng` passed in.

use l4slab_core::{DropReason, Dur, Ecn, MarkReason, SimRng};

use super::config::StepThresh;

/// Linux `dualpi2_classification_results`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// C queue: squared (`p'^2`) drop/mark.
    Classic,
    /// L queue: coupled (`k * p'`) marking and the native L AQM.
    L4s,
    /// L queue, never AQM-dropped or -marked (tc classid `:2`).
    Llll,
}

/// What the AQM does with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Mark(MarkReason),
    Drop(DropReason),
}

/// The coupled probabilities at the current base probability `p'`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coupling {
    /// `p'`, the PI2 output.
    pub prob: f64,
    /// `k`.
    pub k: f64,
    pub drop_on_overload: bool,
}

impl Coupling {
    /// RFC 9332 §2.4: classic probability `p_C = p'^2`.
    pub fn p_c(&self) -> f64 {
        self.prob * self.prob
    }

    /// RFC 9332 §2.4: coupled L4S probability `p_CL = min(k * p', 1)`.
    pub fn p_cl(&self) -> f64 {
        (self.k * self.prob).min(1.0)
    }

    /// Linux `must_drop`: `overload = local_l_prob > MAX_PROB`, i.e. `k * p' > 1`
    /// (RFC 9332 App. A second pass: `p_C >= p_Cmax`).
    pub fn overload(&self) -> bool {
        self.k * self.prob > 1.0
    }

    /// Linux `must_drop()` after its "fewer than 2 MTU queued" check, for a
    /// packet of `class` carrying `ecn`. `coupled_in_l = false` leaves the
    /// (non-overload) coupled L marking to the ramp stage, which combines it
    /// with the native probability ([`ramp_verdict`]).
    pub fn verdict(&self, class: Class, ecn: Ecn, coupled_in_l: bool, rng: &mut SimRng) -> Verdict {
        let p = self.prob;
        let not_ect = ecn == Ecn::NotEct;
        match class {
            // dualpi2_classic_marking: "dualpi2_roll(prob) && dualpi2_roll(prob)" = p'^2.
            Class::Classic => {
                if !(rng.chance(p) && rng.chance(p)) {
                    Verdict::Pass
                } else if not_ect {
                    Verdict::Drop(DropReason::AqmDrop)
                } else if self.overload() {
                    // RFC 9332 App. A line 12b: "Overload disables ECN".
                    Verdict::Drop(DropReason::Overload)
                } else {
                    Verdict::Mark(MarkReason::Aqm)
                }
            }
            Class::L4s if self.overload() => {
                // dualpi2_scalable_marking: "Apply classic drop" if drop_overload,
                // otherwise (and for the packets that survive) mark: p_CL = 1.
                if self.drop_on_overload && rng.chance(p) && rng.chance(p) {
                    Verdict::Drop(if not_ect {
                        DropReason::AqmDrop
                    } else {
                        DropReason::Overload
                    })
                } else {
                    Verdict::Mark(MarkReason::Coupled)
                }
            }
            Class::L4s if coupled_in_l && rng.chance(self.k * p) => {
                // "Non-ECT packets could have classified as L4S by filters."
                if not_ect {
                    Verdict::Drop(DropReason::AqmDrop)
                } else {
                    Verdict::Mark(MarkReason::Coupled)
                }
            }
            Class::L4s | Class::Llll => Verdict::Pass,
        }
    }
}

/// Linux `do_step_aqm`: "qdelay > q->step_thresh", where qdelay is the
/// packet's sojourn time, or the L queue length left after dequeuing it.
pub fn step_exceeded(thresh: StepThresh, sojourn: Dur, l_qlen_after: u32) -> bool {
    match thresh {
        StepThresh::Time(t) => sojourn > t,
        StepThresh::Packets(n) => l_qlen_after > n,
    }
}

/// RFC 9332 App. A `laqm(qdelay)`: 1 at or above `maxTh = min_th + range`,
/// `(qdelay - minTh) / range` between, 0 at or below `min_th`.
pub fn ramp(qdelay: Dur, min_th: Dur, range: Dur) -> f64 {
    if qdelay >= min_th + range {
        1.0
    } else if qdelay > min_th {
        (qdelay - min_th).as_secs_f64() / range.as_secs_f64()
    } else {
        0.0
    }
}

/// RFC 9332 App. A dequeue, lines 5-8: `p_L = max(p'_L, p_CL)`, one roll.
/// Attributed to the step/ramp (`Step`, `StepNonEct`) when the native
/// probability is the larger, to the coupling otherwise.
pub fn ramp_verdict(native: f64, p_cl: f64, ecn: Ecn, rng: &mut SimRng) -> Verdict {
    if !rng.chance(native.max(p_cl)) {
        return Verdict::Pass;
    }
    let native_drove = native >= p_cl;
    match (ecn == Ecn::NotEct, native_drove) {
        (true, true) => Verdict::Drop(DropReason::StepNonEct),
        (true, false) => Verdict::Drop(DropReason::AqmDrop),
        (false, true) => Verdict::Mark(MarkReason::Step),
        (false, false) => Verdict::Mark(MarkReason::Coupled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coupling(prob: f64) -> Coupling {
        Coupling {
            prob,
            k: 2.0,
            drop_on_overload: true,
        }
    }

    #[test]
    fn coupled_probabilities() {
        let c = coupling(0.3);
        assert!((c.p_c() - 0.09).abs() < 1e-15); // p_C = p'^2
        assert!((c.p_cl() - 0.6).abs() < 1e-15); // p_CL = k p'
        assert!(!c.overload());
        let c = coupling(0.6);
        assert!((c.p_c() - 0.36).abs() < 1e-15);
        assert_eq!(c.p_cl(), 1.0); // min(k p', 1)
        assert!(c.overload());
        assert!(
            !coupling(0.5).overload(),
            "k p' = 1 exactly is not overload (Linux: >)"
        );
    }

    /// Frequencies of each verdict over `n` packets.
    fn tally(n: u32, mut f: impl FnMut(&mut SimRng) -> Verdict) -> (f64, f64, f64) {
        let mut rng = SimRng::derive(3, "aqm-test");
        let (mut pass, mut mark, mut drop) = (0, 0, 0);
        for _ in 0..n {
            match f(&mut rng) {
                Verdict::Pass => pass += 1,
                Verdict::Mark(_) => mark += 1,
                Verdict::Drop(_) => drop += 1,
            }
        }
        let n = f64::from(n);
        (pass as f64 / n, mark as f64 / n, drop as f64 / n)
    }

    #[test]
    fn classic_is_squared_and_l4s_is_linear() {
        let c = coupling(0.3);
        // Classic ECT(0): marked with p'^2 = 0.09; Not-ECT dropped with 0.09.
        let (_, mark, drop) = tally(100_000, |r| c.verdict(Class::Classic, Ecn::Ect0, true, r));
        assert!((mark - 0.09).abs() < 0.005 && drop == 0.0, "{mark}");
        let (_, mark, drop) = tally(100_000, |r| c.verdict(Class::Classic, Ecn::NotEct, true, r));
        assert!((drop - 0.09).abs() < 0.005 && mark == 0.0, "{drop}");
        // L4S ECT(1): marked with k p' = 0.6.
        let (_, mark, _) = tally(100_000, |r| c.verdict(Class::L4s, Ecn::Ect1, true, r));
        assert!((mark - 0.6).abs() < 0.005, "{mark}");
        // Left to the ramp stage: no coupled roll here.
        let (pass, _, _) = tally(1000, |r| c.verdict(Class::L4s, Ecn::Ect1, false, r));
        assert_eq!(pass, 1.0);
        // LLLL: never.
        let (pass, _, _) = tally(1000, |r| {
            coupling(1.0).verdict(Class::Llll, Ecn::NotEct, true, r)
        });
        assert_eq!(pass, 1.0);
    }

    #[test]
    fn overload_drops_ecn_capable_packets() {
        let c = coupling(0.6); // k p' = 1.2: overload
        let mut rng = SimRng::derive(3, "x");
        let classic = (0..1000)
            .map(|_| c.verdict(Class::Classic, Ecn::Ect0, true, &mut rng))
            .collect::<Vec<_>>();
        assert!(classic.iter().all(|v| *v != Verdict::Mark(MarkReason::Aqm)));
        assert!(classic.contains(&Verdict::Drop(DropReason::Overload)));
        // L4S: dropped with p'^2 = 0.36, every other packet marked.
        let (pass, mark, drop) = tally(100_000, |r| c.verdict(Class::L4s, Ecn::Ect1, true, r));
        assert_eq!(pass, 0.0);
        assert!((drop - 0.36).abs() < 0.005 && (mark - 0.64).abs() < 0.005);
        // Without drop_on_overload: all marked, none dropped.
        let c = Coupling {
            drop_on_overload: false,
            ..c
        };
        let (_, mark, _) = tally(1000, |r| c.verdict(Class::L4s, Ecn::Ect1, true, r));
        assert_eq!(mark, 1.0);
    }

    #[test]
    fn step_threshold_is_strict() {
        let t = StepThresh::Time(Dur::from_millis(1));
        assert!(!step_exceeded(t, Dur::from_micros(1000), 0));
        assert!(step_exceeded(t, Dur::from_micros(1001), 0));
        let n = StepThresh::Packets(5);
        assert!(!step_exceeded(n, Dur::from_secs(1), 5));
        assert!(step_exceeded(n, Dur::ZERO, 6));
    }

    #[test]
    fn ramp_from_min_th_to_max_th() {
        let (min, range) = (Dur::from_micros(800), Dur::from_micros(400));
        assert_eq!(ramp(Dur::from_micros(800), min, range), 0.0);
        assert!((ramp(Dur::from_micros(1000), min, range) - 0.5).abs() < 1e-12);
        assert_eq!(ramp(Dur::from_micros(1200), min, range), 1.0);
        assert_eq!(ramp(Dur::from_micros(5000), min, range), 1.0);
        // A zero range is a step at min_th.
        assert_eq!(ramp(min, min, Dur::ZERO), 1.0);
        // p_L = max(p'_L, p_CL).
        let (_, mark, _) = tally(100_000, |r| ramp_verdict(0.5, 0.2, Ecn::Ect1, r));
        assert!((mark - 0.5).abs() < 0.005);
        let (_, mark, _) = tally(100_000, |r| ramp_verdict(0.1, 0.3, Ecn::Ect1, r));
        assert!((mark - 0.3).abs() < 0.005);
        let mut rng = SimRng::derive(1, "y");
        assert_eq!(
            ramp_verdict(1.0, 0.0, Ecn::NotEct, &mut rng),
            Verdict::Drop(DropReason::StepNonEct)
        );
        assert_eq!(
            ramp_verdict(0.0, 1.0, Ecn::Ect1, &mut rng),
            Verdict::Mark(MarkReason::Coupled)
        );
    }
}
