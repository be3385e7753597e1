//! DualPI2 parameters: the `tc qdisc ... dualpi2` knobs with the defaults of
//! Linux `dualpi2_reset_default()`, the options that select RFC 9332's
//! variants instead (ramp L AQM, time-shifted FIFO, C-only PI input), and the
//! iproute2 `max_rtt`/`typical_rtt` auto-configuration as a pure function.

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::{Dur, Ecn, FlowId};

/// Which ECN codepoints the classifier sends to the L queue (tc `l4s_ect` | `any_ect`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// ECT(1) and CE (RFC 9331 §5.1, Linux `TC_DUALPI2_ECN_MASK_L4S_ECT`). Default.
    #[default]
    L4sEct,
    /// ECT(0), ECT(1) and CE, for DCTCP in data centres (`TC_DUALPI2_ECN_MASK_ANY_ECT`).
    AnyEct,
}

impl EcnMask {
    /// Linux `dualpi2_skb_classify`: `cb->ect & q->ecn_mask`.
    pub const fn matches(self, ecn: Ecn) -> bool {
        let mask = match self {
            EcnMask::L4sEct => 0b01,
            EcnMask::AnyEct => 0b11,
        };
        ecn.bits() & mask != 0
    }
}

/// The step threshold of the native L4S AQM (tc `step_thresh TIME|PACKETS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepThresh {
    /// Mark when the packet's sojourn time exceeds this (Linux default 1 ms).
    Time(Dur),
    /// Mark when more than this many packets remain in the L queue.
    Packets(u32),
}

/// The native L4S AQM of the L queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LAqm {
    /// Linux: CE-mark every packet above the step threshold (Not-ECT ones
    /// are dropped). `min_qlen_step`: the step applies only to packets that
    /// found at least this many packets in the L queue on arrival.
    Step {
        thresh: StepThresh,
        min_qlen_step: u32,
    },
    /// RFC 9332 App. A `laqm()`: marking probability ramps from 0 at `min_th`
    /// to 1 at `min_th + range`, combined with the coupled probability as
    /// `p_L = max(p'_L, p_CL)`; not applied while the L queue holds no more
    /// than `th_len` packets.
    Ramp {
        min_th: Dur,
        range: Dur,
        th_len: u32,
    },
}

impl Default for LAqm {
    fn default() -> Self {
        // dualpi2_reset_default: step_thresh = 1 ms, step_in_packets = false, min_qlen_step = 0.
        LAqm::Step {
            thresh: StepThresh::Time(Dur::from_millis(1)),
            min_qlen_step: 0,
        }
    }
}

impl LAqm {
    /// RFC 9332 App. A `dualpi2_params_init`: minTh 800 us, range 400 us, Th_len 1 packet.
    pub const RFC_RAMP: LAqm = LAqm::Ramp {
        min_th: Dur::from_micros(800),
        range: Dur::from_micros(400),
        th_len: 1,
    };
}

/// How the scheduler keeps L's priority from starving C ("conditional priority").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scheduler {
    /// Linux's WRR credit scheduler (tc `classic_protection`): while both
    /// queues are backlogged C gets `c_protection` percent of the bytes.
    Wrr { c_protection: u8 },
    /// RFC 9332 §A.1: time-shifted FIFO; serve L if
    /// `lq.time() + tshift >= cq.time()`.
    TsFifo { tshift: Dur },
}

impl Default for Scheduler {
    fn default() -> Self {
        // dualpi2_reset_default: dualpi2_calculate_c_protection(q->sch, q, 10).
        Scheduler::Wrr { c_protection: 10 }
    }
}

impl Scheduler {
    /// Default time shift of the TS-FIFO option. RFC 9332 leaves it open; the
    /// ns-3 DualQ model (draft-10) uses 50 ms.
    pub const DEFAULT_TSHIFT: Dur = Dur::from_millis(50);
}

/// Which queue delay drives the PI2 controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiInput {
    /// Linux `calculate_probability`: `max(qdelay_L, qdelay_C)`. Default.
    #[default]
    Max,
    /// RFC 9332 App. A `dualpi2_update`: the C queue's head delay only.
    C,
}

/// `tc qdisc ... dualpi2` parameters. `Default` = Linux `dualpi2_reset_default()`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DualPi2Config {
    /// Packets in both queues together (tc `limit`). Default 10000.
    pub limit: u32,
    /// Bytes in both queues together (tc `memlimit`). Default `limit * 2 * mtu`
    /// (Linux `get_memory_limit`); we count packet lengths, Linux counts `truesize`.
    pub memory_limit: u64,
    /// PI2 target delay (tc `target`). Default 15 ms.
    pub target: Dur,
    /// PI2 update interval (tc `tupdate`). Default 16 ms.
    pub tupdate: Dur,
    /// Integral gain in Hz (tc `alpha`). Default 41/256 = 0.16015625.
    pub alpha: f64,
    /// Proportional gain in Hz (tc `beta`). Default 819/256 = 3.19921875.
    pub beta: f64,
    /// `k`: `p_CL = k * p'` (tc `coupling_factor`). Default 2.
    pub coupling_factor: f64,
    /// On overload (`k * p' > 1`) drop ECN-capable packets (tc
    /// `drop_on_overload`); `false` (tc `overflow`) caps `p'` at `1/k` and lets
    /// the queue overflow instead. Default `true`.
    pub drop_on_overload: bool,
    /// Apply the PI2 drop/mark at enqueue (tc `drop_enqueue`) instead of
    /// dequeue (`drop_dequeue`, the default). The L AQM always acts at dequeue.
    pub drop_enqueue: bool,
    /// Classifier (tc `l4s_ect` | `any_ect`). Default `l4s_ect`.
    pub ecn_mask: EcnMask,
    /// tc `split_gso`. Accepted for fidelity; a no-op (no GSO in l4slab). Default `true`.
    pub split_gso: bool,
    /// The native L4S AQM. Default: Linux's 1 ms step.
    pub l_aqm: LAqm,
    /// Default: Linux's WRR with 10 % C protection.
    pub scheduler: Scheduler,
    /// Default: `max(L, C)` like Linux.
    pub pi_input: PiInput,
    /// Flows classified into the L queue whatever their ECN field, and
    /// subject to its AQM (Not-ECT ones are dropped where ECT ones would be
    /// marked): the equivalent of a tc filter setting classid `:1`.
    pub l_flows: Vec<FlowId>,
    /// Flows put in the L queue and never AQM-dropped or -marked: Linux's
    /// "LLLL" class, classid `:2`.
    pub llll_flows: Vec<FlowId>,
    /// IP MTU: the 2-MTU no-AQM rule and the WRR initial credit. Default 1500
    /// (Linux's `psched_mtu()` is 1514, with the Ethernet header).
    pub mtu: u32,
}

/// Linux `get_memory_limit`: "doubling the packet length" per packet of `limit`.
pub fn memory_limit_for(limit: u32, mtu: u32) -> u64 {
    u64::from(limit) * 2 * u64::from(mtu)
}

impl Default for DualPi2Config {
    fn default() -> Self {
        let limit = 10_000; // "Max 125ms at 1Gbps"
        let mtu = 1500;
        DualPi2Config {
            limit,
            memory_limit: memory_limit_for(limit, mtu),
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(16),
            alpha: 41.0 / 256.0,  // "~0.16 Hz * 256"
            beta: 819.0 / 256.0,  // "~3.20 Hz * 256"
            coupling_factor: 2.0, // "window fairness for equal RTTs"
            drop_on_overload: true,
            drop_enqueue: false,
            ecn_mask: EcnMask::L4sEct,
            split_gso: true,
            l_aqm: LAqm::default(),
            scheduler: Scheduler::default(),
            pi_input: PiInput::Max,
            l_flows: Vec::new(),
            llll_flows: Vec::new(),
            mtu,
        }
    }
}

/// The PI2 parameters the auto-configuration derives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PiParams {
    pub target: Dur,
    pub tupdate: Dur,
    pub alpha: f64,
    pub beta: f64,
}

/// Why [`auto_config`] cannot derive parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoConfigError {
    /// Neither RTT was given.
    NoRtt,
    /// An RTT below one microsecond (iproute2 works in whole microseconds).
    BelowOneMicrosecond,
    /// iproute2: "typical_rtt must be <= max_rtt!".
    TypicalAboveMax,
}

impl fmt::Display for AutoConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AutoConfigError::NoRtt => "needs max_rtt, typical_rtt, or both",
            AutoConfigError::BelowOneMicrosecond => "an RTT must be at least 1us",
            AutoConfigError::TypicalAboveMax => "typical_rtt must be <= max_rtt",
        })
    }
}

/// iproute2 `tc/q_dualpi2.c` (`dualpi2_parse_opt`), after RFC 9332 App. A.1:
/// a missing RTT is derived with `max_rtt = 6 * typical_rtt`; then
/// `target = typical_rtt`, `tupdate = min(typical_rtt, max_rtt / 3)`,
/// `alpha = 0.1 * tupdate / max_rtt^2`, `beta = 0.3 / max_rtt`.
///
/// Like iproute2 it works in whole microseconds (`max_rtt / 6` and
/// `max_rtt / 3` round down), but it keeps alpha and beta as exact floats
/// instead of rounding them to tc's 1/256 Hz wire units.
pub fn auto_config(
    max_rtt: Option<Dur>,
    typical_rtt: Option<Dur>,
) -> Result<PiParams, AutoConfigError> {
    let us = |d: Dur| d.as_nanos() / 1000;
    let (max_us, typ_us) = match (max_rtt.map(us), typical_rtt.map(us)) {
        (None, None) => return Err(AutoConfigError::NoRtt),
        (Some(0), _) | (_, Some(0)) => return Err(AutoConfigError::BelowOneMicrosecond),
        // "rtt_typ = max(rtt_max / RTT_TYP_TO_MAX, 1U)"
        (Some(m), None) => (m, (m / 6).max(1)),
        // "rtt_max = rtt_typ * RTT_TYP_TO_MAX"
        (None, Some(t)) => (t * 6, t),
        (Some(m), Some(t)) if t > m => return Err(AutoConfigError::TypicalAboveMax),
        (Some(m), Some(t)) => (m, t),
    };
    let third = max_us as f64 / 3.0;
    let tupdate_us = if (typ_us as f64) < third {
        typ_us
    } else {
        third as u64 // C: assigned to a u32, truncated
    }
    .max(1);
    let (max_s, tupdate_s) = (max_us as f64 * 1e-6, tupdate_us as f64 * 1e-6);
    Ok(PiParams {
        target: Dur::from_micros(typ_us),
        tupdate: Dur::from_micros(tupdate_us),
        // RFC 9332 App. A: "alpha = 0.1 * Tupdate / RTT_max^2", "beta = 0.3 / RTT_max".
        alpha: 0.1 * tupdate_s / (max_s * max_s),
        beta: 0.3 / max_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs()
    }

    #[test]
    fn classifier_masks() {
        for (ecn, l4s, any) in [
            (Ecn::NotEct, false, false),
            (Ecn::Ect0, false, true),
            (Ecn::Ect1, true, true),
            (Ecn::Ce, true, true),
        ] {
            assert_eq!(EcnMask::L4sEct.matches(ecn), l4s, "{ecn:?}");
            assert_eq!(EcnMask::AnyEct.matches(ecn), any, "{ecn:?}");
        }
    }

    #[test]
    fn linux_defaults() {
        let c = DualPi2Config::default();
        assert_eq!(c.memory_limit, 30_000_000);
        assert!(close(c.alpha, 0.16015625) && close(c.beta, 3.19921875));
        assert_eq!(c.tupdate, Dur::from_millis(16));
    }

    #[test]
    fn auto_config_matches_iproute2() {
        // RFC 9332 App. A example: max 100 ms, typical 15 ms.
        let p = auto_config(Some(Dur::from_millis(100)), Some(Dur::from_millis(15))).unwrap();
        assert_eq!(p.target, Dur::from_millis(15));
        assert_eq!(p.tupdate, Dur::from_millis(15));
        assert!(close(p.alpha, 0.15), "{}", p.alpha);
        assert!(close(p.beta, 3.0), "{}", p.beta);
        // Only max_rtt: typical = 100 ms / 6 = 16666 us (rounded down).
        let p = auto_config(Some(Dur::from_millis(100)), None).unwrap();
        assert_eq!(p.target, Dur::from_micros(16_666));
        assert_eq!(p.tupdate, Dur::from_micros(16_666));
        assert!(close(p.alpha, 0.1 * 0.016666 / 0.01));
        // Only typical_rtt: max = 6 * 15 ms = 90 ms, tupdate = min(15, 30) ms.
        let p = auto_config(None, Some(Dur::from_millis(15))).unwrap();
        assert_eq!(p.tupdate, Dur::from_millis(15));
        assert!(close(p.beta, 0.3 / 0.09));
        // A data-centre setting: tupdate = max_rtt / 3 when typical is close to max.
        let p = auto_config(Some(Dur::from_micros(300)), Some(Dur::from_micros(200))).unwrap();
        assert_eq!(p.tupdate, Dur::from_micros(100));
        assert_eq!(p.target, Dur::from_micros(200));
        assert_eq!(
            auto_config(Some(Dur::from_millis(10)), Some(Dur::from_millis(20))),
            Err(AutoConfigError::TypicalAboveMax)
        );
        assert_eq!(auto_config(None, None), Err(AutoConfigError::NoRtt));
    }
}
