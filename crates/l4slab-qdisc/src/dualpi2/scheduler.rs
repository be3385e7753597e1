//! Choosing between the L and C queue heads: Linux's WRR credit scheduler
//! ("C-protection", `dequeue_packet()` in `sch_dualpi2.c`) or RFC 9332's
//! time-shifted FIFO. Both give L priority without letting it starve C.

use l4slab_core::{Dur, Packet};

use super::config::Scheduler;

/// The two queues, numbered as in `TraceEvent::Dequeued::subqueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sub {
    /// Classic queue (subqueue 0).
    C = 0,
    /// Low-latency L4S queue (subqueue 1).
    L = 1,
}

/// A scheduling decision, committed with [`Sched::commit`] only if the
/// packet is actually sent (Linux applies the credit change after the AQM
/// has decided not to drop it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub sub: Sub,
    credit_change: i64,
}

/// Scheduler state.
#[derive(Clone, Debug, PartialEq)]
pub enum Sched {
    /// Linux WRR: the sign of `credit` says which queue is owed service.
    Wrr {
        credit: i64,
        /// Reset value: `mtu * (wc - wl)`; negative, so L goes first.
        init: i64,
        /// C and L weights in percent (`wc + wl = 100`).
        wc: i64,
        wl: i64,
    },
    /// RFC 9332 time-shifted FIFO.
    TsFifo { tshift: Dur },
}

impl Sched {
    pub fn new(cfg: Scheduler, mtu: u32) -> Self {
        match cfg {
            Scheduler::Wrr { c_protection } => {
                assert!(c_protection <= 100, "c_protection is a percentage");
                let wc = i64::from(c_protection);
                let wl = 100 - wc;
                // dualpi2_calculate_c_protection: init = mtu * (wc - wl).
                let init = i64::from(mtu) * (wc - wl);
                Sched::Wrr {
                    credit: init,
                    init,
                    wc,
                    wl,
                }
            }
            Scheduler::TsFifo { tshift } => Sched::TsFifo { tshift },
        }
    }

    /// The WRR credit (0 for TS-FIFO), for `xstats`.
    pub fn credit(&self) -> i64 {
        match *self {
            Sched::Wrr { credit, .. } => credit,
            Sched::TsFifo { .. } => 0,
        }
    }

    /// Pick the queue to serve next from the two heads; `None` when both are
    /// empty (which also resets the WRR credit, as Linux does).
    pub fn choose(&mut self, l: Option<&Packet>, c: Option<&Packet>) -> Option<Choice> {
        let (l, c) = match (l, c) {
            (None, None) => {
                // dequeue_packet: "dualpi2_reset_c_protection(q); return NULL".
                if let Sched::Wrr { credit, init, .. } = self {
                    *credit = *init;
                }
                return None;
            }
            (Some(_), None) => {
                return Some(Choice {
                    sub: Sub::L,
                    credit_change: 0,
                })
            }
            (None, Some(_)) => {
                return Some(Choice {
                    sub: Sub::C,
                    credit_change: 0,
                })
            }
            (Some(lp), Some(cp)) => (lp, cp),
        };
        // Both queues are backlogged.
        Some(match *self {
            // dequeue_packet: serve L "if (qdisc_qlen(q->l_queue) && (!c_len ||
            // q->c_protection_credit <= 0))" and add wc * len; else serve C and
            // subtract wl * len. Long run: wc * bytes_L = wl * bytes_C.
            Sched::Wrr { credit, wc, .. } if credit <= 0 => Choice {
                sub: Sub::L,
                credit_change: wc * i64::from(l.len),
            },
            Sched::Wrr { wl, .. } => Choice {
                sub: Sub::C,
                credit_change: -wl * i64::from(c.len),
            },
            // RFC 9332 §A.1: serve L if lq.time() + tshift >= cq.time(), i.e.
            // if the L head arrived no later than tshift after the C head.
            Sched::TsFifo { tshift } => Choice {
                sub: if l.enqueued_at <= c.enqueued_at.saturating_add(tshift) {
                    Sub::L
                } else {
                    Sub::C
                },
                credit_change: 0,
            },
        })
    }

    /// Account for a chosen packet that was sent (not dropped).
    pub fn commit(&mut self, choice: Choice) {
        if let Sched::Wrr { credit, .. } = self {
            *credit += choice.credit_change;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::{Ecn, Time};

    fn pkt(len: u32, at_ms: u64) -> Packet {
        let mut p = Packet::new(0, 0, len, Ecn::NotEct);
        p.enqueued_at = Time::from_millis(at_ms);
        p
    }

    #[test]
    fn wrr_starts_with_l_and_moves_the_credit_by_weighted_bytes() {
        let mut s = Sched::new(Scheduler::Wrr { c_protection: 10 }, 1500);
        assert_eq!(s.credit(), -120_000); // 1500 * (10 - 90)
        let (l, c) = (pkt(1000, 0), pkt(1500, 0));
        let ch = s.choose(Some(&l), Some(&c)).unwrap();
        assert_eq!(ch.sub, Sub::L);
        s.commit(ch);
        assert_eq!(s.credit(), -120_000 + 10 * 1000);
        // Force the credit positive: C is served and pays wl per byte.
        if let Sched::Wrr { credit, .. } = &mut s {
            *credit = 1;
        }
        let ch = s.choose(Some(&l), Some(&c)).unwrap();
        assert_eq!(ch.sub, Sub::C);
        s.commit(ch);
        assert_eq!(s.credit(), 1 - 90 * 1500);
        // Only one queue backlogged: served, credit unchanged.
        let ch = s.choose(None, Some(&c)).unwrap();
        assert_eq!(ch.sub, Sub::C);
        s.commit(ch);
        assert_eq!(s.credit(), 1 - 90 * 1500);
        // Both empty: reset.
        assert_eq!(s.choose(None, None), None);
        assert_eq!(s.credit(), -120_000);
    }

    #[test]
    fn wrr_long_run_byte_share_is_90_10() {
        let mut s = Sched::new(Scheduler::Wrr { c_protection: 10 }, 1500);
        let (l, c) = (pkt(1500, 0), pkt(1000, 0)); // unequal sizes on purpose
        let (mut lb, mut cb) = (0u64, 0u64);
        let mut longest_c_gap = 0;
        let mut gap = 0;
        for _ in 0..100_000 {
            let ch = s.choose(Some(&l), Some(&c)).unwrap();
            s.commit(ch);
            match ch.sub {
                Sub::L => {
                    lb += 1500;
                    gap += 1;
                }
                Sub::C => {
                    cb += 1000;
                    longest_c_gap = longest_c_gap.max(gap);
                    gap = 0;
                }
            }
        }
        let share_c = cb as f64 / (lb + cb) as f64;
        assert!((share_c - 0.10).abs() < 0.001, "C share {share_c}");
        // C is never starved: 9 x 1500 B of L per 1000 B of C at most, after
        // the initial credit (80 MTU) is used up.
        assert!(longest_c_gap <= 81, "{longest_c_gap}");
    }

    #[test]
    fn ts_fifo_serves_the_older_head_shifted_by_tshift() {
        let mut s = Sched::new(
            Scheduler::TsFifo {
                tshift: Dur::from_millis(50),
            },
            1500,
        );
        let c = pkt(1500, 0);
        // L head arrived 40 ms after the C head: within tshift, L first.
        assert_eq!(
            s.choose(Some(&pkt(1500, 40)), Some(&c)).unwrap().sub,
            Sub::L
        );
        assert_eq!(
            s.choose(Some(&pkt(1500, 50)), Some(&c)).unwrap().sub,
            Sub::L
        );
        // 51 ms after: the C head has waited longer than tshift more.
        assert_eq!(
            s.choose(Some(&pkt(1500, 51)), Some(&c)).unwrap().sub,
            Sub::C
        );
        assert_eq!(s.choose(None, Some(&c)).unwrap().sub, Sub::C);
        assert_eq!(s.choose(Some(&c), None).unwrap().sub, Sub::L);
        assert_eq!(s.choose(None, None), None);
        assert_eq!(s.credit(), 0);
    }
}
