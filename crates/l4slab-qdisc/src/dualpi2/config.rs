//! DualPI2 parameters: the `tc qdisc ... dualpi2` knobs with the defaults of
//! Linux `dualpi2_reset_default()`, the options that select RFC 9332's
//! variants instead (ramp L AQM, time-shifted FIFO, C-only PI input), and the
//! iproute2 `max_rtt`/`typical_rtt` auto-configuration as a pure function.

use core::fmt;

use serde::{Deserialize, Serialize};

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{Dur, Ecn, FlowId};

use l4slab_core::param::{Configure, FromParam};

use crate::registry::QdiscKind;
use crate::Qdisc;

// The tc knobs (`tc-dualpi2(8)`), then l4slab's options for RFC 9332's
// variants. `step_thresh` and the flow lists are read by the scenario's own
// code (`Kind::Custom`): a time or packets, and flow names resolved later.

/// tc `limit`.
pub const LIMIT: Param = Param::new(
    "limit",
    Kind::Limit,
    ParamValue::Int(10_000),
    "Linux `dualpi2_reset_default`: 10000 (\"Max 125ms at 1Gbps\"); a scenario's default is the direction's `buffer`",
    "packets in both queues together (bytes and times at 1500 B per packet, at least 1)",
);

/// tc `memlimit`.
pub const MEMLIMIT: Param = Param::new(
    "memlimit",
    Kind::Bytes {
        min: 1,
        max: i64::MAX as u64,
    },
    ParamValue::Int(30_000_000),
    "Linux `get_memory_limit`: `limit` × 2 × MTU, here × 1500 B; a scenario's default follows its `limit`",
    "bytes in both queues together (l4slab counts packet lengths, Linux `truesize`)",
)
.aka(&["memory_limit"]);

/// tc `target`.
pub const TARGET: Param = Param::new(
    "target",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_millis(15)),
    "Linux `dualpi2_reset_default` `pi2_target`; RFC 9332 App. A: 15 ms",
    "PI2 target queue delay",
);

/// tc `tupdate`.
pub const TUPDATE: Param = Param::new(
    "tupdate",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(16)),
    "Linux `dualpi2_reset_default` `pi2_tupdate`",
    "PI2 update interval",
);

/// tc `alpha`, in Hz.
pub const ALPHA: Param = Param::new(
    "alpha",
    Kind::Hz {
        zero_ok: false,
        tc_scale: None,
    },
    ParamValue::Num(41.0 / 256.0),
    "Linux `dualpi2_scale_alpha_beta(41)`: 41/256 Hz",
    "PI2 integral gain",
);

/// tc `beta`, in Hz.
pub const BETA: Param = Param::new(
    "beta",
    Kind::Hz {
        zero_ok: false,
        tc_scale: None,
    },
    ParamValue::Num(819.0 / 256.0),
    "Linux `dualpi2_scale_alpha_beta(819)`: 819/256 Hz",
    "PI2 proportional gain",
);

/// tc `step_thresh` (custom: a time or packets).
pub const STEP_THRESH: Param = Param::new(
    "step_thresh",
    Kind::Custom("a duration (`\"1ms\"`) or packets (`\"5pkt\"`); with `l_aqm = \"step\"`"),
    ParamValue::Dur(Dur::from_millis(1)),
    "Linux `dualpi2_reset_default`: 1 ms, `step_in_packets = false`",
    "the L queue's step AQM marks packets whose sojourn (or queue) is above this",
);

/// tc `min_qlen_step`.
pub const MIN_QLEN_STEP: Param = Param::new(
    "min_qlen_step",
    Kind::up_to_u32(0),
    ParamValue::Int(0),
    "Linux `dualpi2_reset_default`",
    "the step applies only to packets that found at least this many in the L queue (with `l_aqm = \"step\"`)",
);

/// tc `coupling_factor`.
pub const COUPLING_FACTOR: Param = Param::new(
    "coupling_factor",
    Kind::Number { above: 0.0 },
    ParamValue::Num(2.0),
    "Linux `dualpi2_reset_default`; RFC 9332 k = 2",
    "k: the L queue's coupled probability is k × p'",
);

/// tc `drop_on_overload` / `overflow`.
pub const DROP_ON_OVERLOAD: Param = Param::new(
    "drop_on_overload",
    Kind::Flag,
    ParamValue::Flag(true),
    "Linux `TC_DUALPI2_DROP_OVERLOAD_DROP`",
    "on overload drop ECN-capable packets; `false` (tc `overflow`) lets the queue overflow instead",
);

/// tc `drop_enqueue` / `drop_dequeue`.
pub const DROP_ENQUEUE: Param = Param::new(
    "drop_enqueue",
    Kind::Flag,
    ParamValue::Flag(false),
    "Linux `TC_DUALPI2_DROP_EARLY_DROP_DEQUEUE`",
    "apply PI2's drop/mark at enqueue instead of dequeue (tc `drop_dequeue`)",
);

/// tc `classic_protection`, a fraction (tc's percent).
pub const CLASSIC_PROTECTION: Param = Param::new(
    "classic_protection",
    Kind::Fraction {
        min: 0.0,
        max: 1.0,
        min_open: false,
        max_open: false,
        linux_scale: None,
    },
    ParamValue::Num(0.1),
    "Linux `dualpi2_calculate_c_protection(.., 10)`; rounded to a whole percent as iproute2",
    "WRR share of bytes the C queue gets while both are backlogged (with `scheduler = \"wrr\"`)",
)
.aka(&["c_protection"]);

/// tc `l4s_ect` / `any_ect`.
pub const ECN_MASK: Param = Param::new(
    "ecn_mask",
    Kind::Choice(&["l4s_ect", "any_ect"]),
    ParamValue::Choice("l4s_ect"),
    "Linux `TC_DUALPI2_ECN_MASK_L4S_ECT`; RFC 9331 §5.1",
    "ECN codepoints classified as L4S: ECT(1) and CE, or any ECT",
);

/// tc `split_gso` / `no_split_gso`.
pub const SPLIT_GSO: Param = Param::new(
    "split_gso",
    Kind::Flag,
    ParamValue::Flag(true),
    "Linux `TC_DUALPI2_SPLIT_GSO_SPLIT_GSO`",
    "accepted for fidelity; a no-op (nothing is aggregated in l4slab)",
);

/// iproute2 `max_rtt`.
pub const MAX_RTT: Param = Param::new(
    "max_rtt",
    Kind::Duration { zero_ok: false },
    ParamValue::Unset {
        example: r#""100ms""#,
    },
    "iproute2 auto-configuration; RFC 9332 App. A.1",
    "computes `target`, `tupdate`, `alpha` and `beta` (so conflicts with them)",
);

/// iproute2 `typical_rtt`.
pub const TYPICAL_RTT: Param = Param::new(
    "typical_rtt",
    Kind::Duration { zero_ok: false },
    ParamValue::Unset {
        example: r#""15ms""#,
    },
    "iproute2 auto-configuration; RFC 9332 App. A.1",
    "as `max_rtt`; `max_rtt` = 6 × `typical_rtt` when only this is given",
);

/// l4slab: the L queue's AQM.
pub const L_AQM: Param = Param::new(
    "l_aqm",
    Kind::Choice(&["step", "ramp"]),
    ParamValue::Choice("step"),
    "Linux's step",
    "the native L4S AQM: Linux's step, or RFC 9332's ramp (`min_th`, `range`, `th_len`)",
);

/// RFC 9332 App. A `minTh` of the ramp.
pub const MIN_TH: Param = Param::new(
    "min_th",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_micros(800)),
    "RFC 9332 App. A `dualpi2_params_init`",
    "sojourn where the ramp starts (with `l_aqm = \"ramp\"`)",
)
.linux_name("minTh");

/// RFC 9332 App. A `range` of the ramp.
pub const RANGE: Param = Param::new(
    "range",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_micros(400)),
    "RFC 9332 App. A `dualpi2_params_init`",
    "width of the ramp: marking reaches 1 at `min_th + range` (with `l_aqm = \"ramp\"`)",
);

/// RFC 9332 App. A `Th_len` of the ramp.
pub const TH_LEN: Param = Param::new(
    "th_len",
    Kind::up_to_u32(0),
    ParamValue::Int(1),
    "RFC 9332 App. A `dualpi2_params_init`",
    "no ramp marking while the L queue holds at most this many packets (with `l_aqm = \"ramp\"`)",
)
.linux_name("Th_len");

/// l4slab: where the L queue's sojourn starts (`service.rs`).
pub const L_SOJOURN: Param = Param::new(
    "l_sojourn",
    Kind::Choice(&["enqueue", "service"]),
    ParamValue::Choice("enqueue"),
    "Linux `do_step_aqm`: the packet's sojourn from enqueue",
    "the sojourn the native L AQM (step or ramp) compares: from enqueue, or from the first dequeue burst (an AP's A-MPDU build) that could carry the packet (docs/models/dualpi2.md, Wi-Fi)",
);

/// l4slab: the scheduler between the queues.
pub const SCHEDULER: Param = Param::new(
    "scheduler",
    Kind::Choice(&["wrr", "ts_fifo"]),
    ParamValue::Choice("wrr"),
    "Linux's WRR",
    "Linux's WRR (`classic_protection`) or RFC 9332's time-shifted FIFO (`tshift`)",
);

/// The time shift of the TS-FIFO scheduler.
pub const TSHIFT: Param = Param::new(
    "tshift",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_millis(50)),
    "RFC 9332 leaves it open; the ns-3 DualQ model (draft-10): 50 ms",
    "serve L if its head is no more than this younger than C's (with `scheduler = \"ts_fifo\"`)",
);

/// l4slab: the PI2 controller's input.
pub const PI_INPUT: Param = Param::new(
    "pi_input",
    Kind::Choice(&["max", "c"]),
    ParamValue::Choice("max"),
    "Linux `calculate_probability`: `max(qdelay_l, qdelay_c)`",
    "queue delay driving PI2: the larger of both, or the C queue's (RFC 9332 App. A)",
);

/// Flows put in the L queue with its AQM (custom: names resolved later).
pub const L_FLOWS: Param = Param::new(
    "l_flows",
    Kind::Custom("flow names (`[\"dns\"]`); a name also matches the flows `count` expands from it"),
    ParamValue::Unset {
        example: r#"["dns"]"#,
    },
    "a tc filter setting classid `:1`; default none",
    "these flows' packets go to the L queue whatever their ECN field; AQM applies (Not-ECT ones dropped)",
)
.linux_name("classid :1");

/// Flows put in the L queue without AQM (custom: names resolved later).
pub const LLLL_FLOWS: Param = Param::new(
    "llll_flows",
    Kind::Custom("flow names (`[\"dns\"]`); a name also matches the flows `count` expands from it"),
    ParamValue::Unset {
        example: r#"["dns"]"#,
    },
    "a tc filter setting classid `:2`; default none",
    "these flows' packets go to the L queue and are never AQM-dropped or -marked",
)
.linux_name("classid :2");

/// The parameters a scenario can set (`qdisc = { kind = "dualpi2", ... }`).
pub const PARAMS: &[Param] = &[
    LIMIT,
    MEMLIMIT,
    TARGET,
    TUPDATE,
    ALPHA,
    BETA,
    STEP_THRESH,
    MIN_QLEN_STEP,
    COUPLING_FACTOR,
    DROP_ON_OVERLOAD,
    DROP_ENQUEUE,
    CLASSIC_PROTECTION,
    ECN_MASK,
    SPLIT_GSO,
    MAX_RTT,
    TYPICAL_RTT,
    L_AQM,
    MIN_TH,
    RANGE,
    TH_LEN,
    L_SOJOURN,
    SCHEDULER,
    TSHIFT,
    PI_INPUT,
    L_FLOWS,
    LLLL_FLOWS,
];

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
            thresh: StepThresh::Time(STEP_THRESH.default.dur()),
            min_qlen_step: MIN_QLEN_STEP.default.int() as u32,
        }
    }
}

impl LAqm {
    /// RFC 9332 App. A `dualpi2_params_init`: minTh 800 us, range 400 us,
    /// Th_len 1 packet ([`MIN_TH`], [`RANGE`], [`TH_LEN`]; a test checks
    /// they agree).
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
        Scheduler::Wrr {
            c_protection: (CLASSIC_PROTECTION.default.num() * 100.0).round() as u8,
        }
    }
}

impl Scheduler {
    /// Default time shift of the TS-FIFO option ([`TSHIFT`]; a test checks
    /// they agree). RFC 9332 leaves it open; the ns-3 DualQ model (draft-10)
    /// uses 50 ms.
    pub const DEFAULT_TSHIFT: Dur = Dur::from_millis(50);
}

/// Where the sojourn the native L AQM compares starts ([`L_SOJOURN`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LSojourn {
    /// Linux `do_step_aqm`: at enqueue. Default.
    #[default]
    Enqueue,
    /// At the first dequeue burst that could carry the packet
    /// ([`super::service`]): what an A-MPDU left behind, not the wait for the air.
    Service,
}

impl LSojourn {
    /// Linux's (the default).
    pub fn is_enqueue(&self) -> bool {
        *self == LSojourn::Enqueue
    }
}

/// [`L_SOJOURN`]'s choices.
impl FromParam for LSojourn {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "service" => LSojourn::Service,
            _ => LSojourn::Enqueue,
        }
    }
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

/// [`ECN_MASK`]'s choices.
impl FromParam for EcnMask {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "any_ect" => EcnMask::AnyEct,
            _ => EcnMask::L4sEct,
        }
    }
}

/// [`PI_INPUT`]'s choices.
impl FromParam for PiInput {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "c" => PiInput::C,
            _ => PiInput::Max,
        }
    }
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
    /// Default: from enqueue, like Linux. Not written out when it is the
    /// default, so that summaries of scenarios that do not select it stay
    /// byte-identical to those from before the option existed.
    #[serde(default, skip_serializing_if = "LSojourn::is_enqueue")]
    pub l_sojourn: LSojourn,
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

l4slab_core::param_config!(DualPi2Config {
    limit = LIMIT,
    memory_limit = MEMLIMIT, // = memory_limit_for(limit, mtu), checked by `linux_defaults`
    target = TARGET,
    tupdate = TUPDATE,
    alpha = ALPHA,
    beta = BETA,
    coupling_factor = COUPLING_FACTOR,
    drop_on_overload = DROP_ON_OVERLOAD,
    drop_enqueue = DROP_ENQUEUE,
    ecn_mask = ECN_MASK,
    split_gso = SPLIT_GSO,
    pi_input = PI_INPUT,
    l_sojourn = L_SOJOURN,
} + {
    l_aqm: LAqm::default(),
    scheduler: Scheduler::default(),
    l_flows: Vec::new(),
    llll_flows: Vec::new(),
    mtu: 1500,
});

impl QdiscKind for DualPi2Config {
    const PARAMS: &'static [Param] = PARAMS;

    fn set(&mut self, name: &str, v: ParamValue) -> bool {
        let set = Configure::set(self, name, v);
        if name == LIMIT.name {
            // dualpi2_change: a new limit recomputes the memory limit
            // (`get_memory_limit`); a `memlimit` set after it overrides.
            self.memory_limit = memory_limit_for(self.limit, self.mtu);
        }
        set
    }

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(super::DualPi2::new(self.clone()))
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
        assert_eq!(c.memory_limit, memory_limit_for(c.limit, c.mtu));
        assert_eq!((c.limit, c.target), (10_000, Dur::from_millis(15)));
        assert_eq!(c.scheduler, Scheduler::Wrr { c_protection: 10 });
        assert_eq!((c.ecn_mask, c.pi_input), (EcnMask::L4sEct, PiInput::Max));
        assert_eq!(c.l_sojourn, LSojourn::Enqueue);
        assert!(c.drop_on_overload && !c.drop_enqueue && c.split_gso);
        assert_eq!(c.coupling_factor, 2.0);
        assert_eq!(
            c.l_aqm,
            LAqm::Step {
                thresh: StepThresh::Time(Dur::from_millis(1)),
                min_qlen_step: 0
            }
        );
        // The consts that are not built from the declarations agree with them.
        assert_eq!(
            LAqm::RFC_RAMP,
            LAqm::Ramp {
                min_th: MIN_TH.default.dur(),
                range: RANGE.default.dur(),
                th_len: TH_LEN.default.int() as u32,
            }
        );
        assert_eq!(Scheduler::DEFAULT_TSHIFT, TSHIFT.default.dur());
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
