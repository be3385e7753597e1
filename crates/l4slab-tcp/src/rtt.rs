//! RTT estimation and the retransmission timeout, RFC 6298.
//!
//! Samples come from the timestamps option echo (RFC 7323 §4), which is
//! unambiguous for retransmitted segments, so Karn's rule (RFC 6298 §3) is
//! satisfied without discarding samples, as in Linux.
//!
//! Deviations: the clock granularity `G` is 1 ms (Linux timers run on
//! 1 ms jiffies at HZ=1000). By default the RFC arithmetic is used,
//! `RTO = max(min_rto, SRTT + max(G, 4*RTTVAR))`, with Linux's 200 ms floor;
//! Linux itself computes about `SRTT + max(min_rto, 4*RTTVAR)`
//! (`__tcp_set_rto`, `rttvar_us >= tcp_rto_min`), available as
//! [`RtoFormula::Linux`]. The difference matters when the RTT grows quickly
//! (slow start into a deep buffer): the RFC/200 ms combination then fires
//! spuriously where Linux does not. `min_rtt` is the
//! lifetime minimum (Linux windows it over `tcp_min_rtt_wlen` = 300 s, the
//! same for runs shorter than that).

use l4slab_core::Dur;

use crate::config::RtoFormula;

/// RFC 6298 §2.1: "Until a round-trip time (RTT) measurement has been made ...
/// the sender SHOULD set RTO <- 1 second" (Linux TCP_TIMEOUT_INIT).
pub(crate) const INITIAL_RTO: Dur = Dur::from_secs(1);
/// RFC 6298 §2.5: "A maximum value MAY be placed on RTO provided it is at least
/// 60 seconds"; Linux TCP_RTO_MAX = 120 s.
pub(crate) const MAX_RTO: Dur = Dur::from_secs(120);
/// RFC 6298 §2 clock granularity `G` (Linux jiffy at HZ=1000).
pub(crate) const CLOCK_GRANULARITY: Dur = Dur::from_millis(1);

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rtt: Option<Dur>,
    latest: Option<Dur>,
    min_rto: Dur,
    formula: RtoFormula,
    /// Number of consecutive timer back-offs (RFC 6298 §5.5).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(min_rto: Dur, formula: RtoFormula) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rtt: None,
            latest: None,
            min_rto,
            formula,
            backoff: 0,
        }
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }

    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }

    pub fn latest(&self) -> Option<Dur> {
        self.latest
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Feed one RTT measurement `r`.
    pub fn sample(&mut self, r: Dur) {
        match self.srtt {
            None => {
                // RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = Dur::from_nanos(r.as_nanos() / 2);
            }
            Some(srtt) => {
                let diff = if srtt > r { srtt - r } else { r - srtt };
                // RFC 6298 §2.3: RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, beta = 1/4
                self.rttvar = Dur::from_nanos((3 * self.rttvar.as_nanos() + diff.as_nanos()) / 4);
                // RFC 6298 §2.3: SRTT <- (1 - alpha) * SRTT + alpha * R', alpha = 1/8
                self.srtt = Some(Dur::from_nanos((7 * srtt.as_nanos() + r.as_nanos()) / 8));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.latest = Some(r);
        // Linux tcp_ack_update_rtt: "RFC6298: only reset backoff on valid RTT
        // measurement" (the RTO is recomputed from the new SRTT).
        self.backoff = 0;
    }

    /// RTO before back-off.
    pub fn base_rto(&self) -> Dur {
        match self.srtt {
            None => INITIAL_RTO,
            Some(srtt) => match self.formula {
                RtoFormula::Rfc6298 => {
                    // RFC 6298 §2.3: RTO <- SRTT + max (G, K*RTTVAR), K = 4
                    let rto = srtt + CLOCK_GRANULARITY.max(self.rttvar * 4);
                    // RFC 6298 §2.4: a lower bound (RFC: 1 s; Linux TCP_RTO_MIN 200 ms).
                    // RFC 6298 §2.5: the maximum.
                    rto.max(self.min_rto).min(MAX_RTO)
                }
                // Linux __tcp_set_rto: (srtt_us >> 3) + rttvar_us, rttvar_us >= rto_min.
                RtoFormula::Linux => (srtt + self.min_rto.max(self.rttvar * 4)).min(MAX_RTO),
            },
        }
    }

    /// The current RTO, backed off.
    pub fn rto(&self) -> Dur {
        // RFC 6298 §5.5: RTO <- RTO * 2 per expiry, capped by §2.5's maximum.
        let factor = 1u64 << self.backoff.min(20);
        self.base_rto().saturating_mul(factor).min(MAX_RTO)
    }

    /// The retransmission timer expired (RFC 6298 §5.5 "back off the timer").
    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    #[test]
    fn rfc6298_arithmetic() {
        let mut e = RttEstimator::new(ms(1), RtoFormula::Rfc6298);
        assert_eq!(e.rto(), ms(1000)); // §2.1 initial RTO
        e.sample(ms(100));
        // §2.2: SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300.
        assert_eq!(
            (e.srtt(), e.rttvar(), e.rto()),
            (Some(ms(100)), ms(50), ms(300))
        );
        e.sample(ms(60));
        // §2.3: RTTVAR = 3/4*50 + 1/4*|100-60| = 37.5 + 10 = 47.5;
        //       SRTT = 7/8*100 + 1/8*60 = 95; RTO = 95 + 190 = 285.
        assert_eq!(e.rttvar(), Dur::from_micros(47_500));
        assert_eq!(e.srtt(), Some(ms(95)));
        assert_eq!(e.rto(), ms(285));
        assert_eq!(e.min_rtt(), Some(ms(60)));
    }

    #[test]
    fn min_rto_floor_granularity_and_backoff() {
        let mut e = RttEstimator::new(ms(200), RtoFormula::Rfc6298);
        e.sample(ms(20));
        // 20 + 4*10 = 60 < 200: the floor applies.
        assert_eq!(e.rto(), ms(200));
        e.on_timeout();
        assert_eq!(e.rto(), ms(400));
        e.on_timeout();
        assert_eq!(e.rto(), ms(800));
        for _ in 0..20 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), MAX_RTO);
        // A valid sample resets the back-off.
        e.sample(ms(20));
        assert_eq!(e.rto(), ms(200));
        // With a tiny floor and zero variance, G keeps RTO above SRTT.
        let mut z = RttEstimator::new(Dur::from_nanos(1), RtoFormula::Rfc6298);
        for _ in 0..64 {
            z.sample(ms(10));
        }
        assert_eq!(z.rto(), ms(10) + CLOCK_GRANULARITY);
    }

    #[test]
    fn linux_formula_floors_the_variance_term() {
        let mut e = RttEstimator::new(ms(200), RtoFormula::Linux);
        e.sample(ms(20));
        // 20 + max(200, 4*10) = 220 (RFC: max(200, 60) = 200).
        assert_eq!(e.rto(), ms(220));
        e.sample(ms(100)); // RTTVAR = 7.5 + 20 = 27.5, SRTT = 30
        assert_eq!(e.rto(), ms(230));
        e.on_timeout();
        assert_eq!(e.rto(), ms(460));
    }
}
