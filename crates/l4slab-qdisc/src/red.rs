//! RED, Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", IEEE/ACM ToN 1993), as Linux
//! `net/sched/sch_red.c` and `include/net/red.h` implement it, with the
//! `tc-red(8)` parameters and iproute2's derivations (`tc/q_red.c`,
//! `tc/tc_red.c`), including Adaptive RED (Floyd, Gummadi & Shenker 2001;
//! tc `adaptive`).
//!
//! At each arrival the average backlog in bytes is updated (`red_calc_qavg`:
//! an EWMA of weight W = 2^-Wlog, or after an idle period a decay by the
//! idle time); below `min` nothing happens, at or above `max` the packet is
//! dropped (or CE-marked with `ecn`, unless `harddrop`), in between it is
//! marked or dropped with probability rising from 0 to `probability` (max_P)
//! and Floyd & Jacobson's count correction (`red_action`). Admitted packets
//! go to a byte FIFO of `limit` bytes (Linux: a `bfifo` child).
//!
//! Split as Linux splits it: [`RedParms`] (`struct red_parms`, fixed point
//! with the point at Wlog), [`RedVars`] (`struct red_vars`), [`RedStats`]
//! (`struct red_stats`).
//!
//! Not implemented: `nodrop` (Linux ≥ 5.9: keep Not-ECT packets that would
//! be marked), the `qevent` blocks, hardware offload, a child qdisc other
//! than the byte FIFO.
//!
//! Deviations (documented in `docs/models/red.md`):
//! * The idle-decay table (`tc_red_eval_idle_damping`) is built per
//!   microsecond of idle time, the unit `red_calc_qavg_from_idle_time`
//!   indexes it by; iproute2 builds it from `tc_calc_xmittime`, which counts
//!   psched ticks (64 ns on current kernels). The transmission time of
//!   `avpkt` is kept as an exact fraction of a microsecond.
//! * `red_random` is an exact integer division (Linux: `reciprocal_divide`).
//! * The derivations that use `pow`/`log` in iproute2 use exact IEEE
//!   arithmetic here (series and repeated squaring), so Wlog and the table
//!   are the same on every platform; they can differ from tc's only where
//!   tc's value sits within rounding of a boundary.
//! * Packet lengths are IP lengths ([`Packet::len`]), as for `fifo`.

use serde::{Deserialize, Serialize};

use crate::registry::{ConfigError, QdiscKind};
use crate::{Backlog, PacketFifo, Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{DropReason, Dur, MarkReason, Packet, Time};

/// tc `limit`.
pub const LIMIT: Param = Param::new(
    "limit",
    Kind::bytes_up_to_u32(1),
    ParamValue::Int(400_000),
    "tc requires it (`tc-red(8)` example: 400000); a scenario's default is the direction's `buffer` (packets at 1500 B)",
    "hard limit of the real queue in bytes (Linux: the `bfifo` child's limit)",
);

/// tc `min`.
pub const MIN: Param = Param::new(
    "min",
    Kind::bytes_up_to_u32(1),
    ParamValue::Unset {
        example: r#""30KB""#,
    },
    "iproute2 `red_parse_opt`: `max / 3` when not given",
    "average queue (bytes) below which nothing is marked or dropped",
);

/// tc `max`.
pub const MAX: Param = Param::new(
    "max",
    Kind::bytes_up_to_u32(1),
    ParamValue::Unset {
        example: r#""90KB""#,
    },
    "iproute2 `red_parse_opt`: `3 × min` when `min` is given, else `limit / 4`",
    "average queue (bytes) at and above which every packet is dropped (or marked)",
);

/// tc `avpkt`.
pub const AVPKT: Param = Param::new(
    "avpkt",
    Kind::bytes_up_to_u32(1),
    ParamValue::Int(1000),
    "tc requires it; `tc-red(8)`: \"Typical value: 1000\"",
    "average packet size: with `burst` it sets the EWMA weight, with `bandwidth` the idle decay",
);

/// tc `burst`.
pub const BURST: Param = Param::new(
    "burst",
    Kind::up_to_u32(1),
    ParamValue::Unset { example: "20" },
    "iproute2 `red_parse_opt`: `(2 × min + max) / (3 × avpkt)` when not given",
    "packets a burst may bring without marking: sets the EWMA weight W = 2^-Wlog (`tc_red_eval_ewma`)",
);

/// tc `probability`.
pub const PROBABILITY: Param = Param::new(
    "probability",
    Kind::Fraction {
        min: 0.0,
        max: 1.0,
        min_open: true,
        max_open: true,
        linux_scale: None,
    },
    ParamValue::Num(0.02),
    "iproute2 `red_parse_opt`: `probability = 0.02`",
    "max_P: the marking probability as the average reaches `max`",
);

/// tc `bandwidth`.
pub const BANDWIDTH: Param = Param::new(
    "bandwidth",
    Kind::Int {
        min: 1,
        max: i64::MAX,
    },
    ParamValue::Int(10_000_000),
    "iproute2 `red_parse_opt`: \"RED: set bandwidth to 10Mbit\" when not given",
    "bits per second (tc's rate, `10Mbit` = 10000000): how fast the average decays while the queue is idle",
);

/// tc `ecn`.
pub const ECN: Param = Param::new(
    "ecn",
    Kind::Flag,
    ParamValue::Flag(false),
    "tc flag `TC_RED_ECN`, off unless given",
    "CE-mark ECN-capable packets instead of dropping them",
);

/// tc `harddrop`.
pub const HARDDROP: Param = Param::new(
    "harddrop",
    Kind::Flag,
    ParamValue::Flag(false),
    "tc flag `TC_RED_HARDDROP`, off unless given",
    "drop, never mark, when the average is at or above `max` (with `ecn`)",
);

/// tc `adaptive`.
pub const ADAPTIVE: Param = Param::new(
    "adaptive",
    Kind::Flag,
    ParamValue::Flag(false),
    "tc flag `TC_RED_ADAPTATIVE`, off unless given",
    "Adaptive RED: every 500 ms move max_P (1 %..50 %) to keep the average between 40 % and 60 % of `min`..`max`",
)
.aka(&["adaptative"]);

/// The parameters a scenario can set (`qdisc = { kind = "red", ... }`).
pub const PARAMS: &[Param] = &[
    LIMIT,
    MIN,
    MAX,
    AVPKT,
    BURST,
    PROBABILITY,
    BANDWIDTH,
    ECN,
    HARDDROP,
    ADAPTIVE,
];

/// `tc qdisc ... red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst
/// PACKETS] [adaptive] [probability PROBABILITY] [bandwidth RATE] [ecn]
/// [harddrop]`. Unset values are derived as iproute2 derives them
/// ([`RedConfig::parms`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedConfig {
    /// Bytes (tc `limit`).
    pub limit: u64,
    /// Bytes (tc `min`); `None`: `max / 3`.
    pub min: Option<u64>,
    /// Bytes (tc `max`); `None`: `3 × min`, or `limit / 4` without `min`.
    pub max: Option<u64>,
    /// Bytes (tc `avpkt`).
    pub avpkt: u64,
    /// Packets (tc `burst`); `None`: `(2 × min + max) / (3 × avpkt)`.
    pub burst: Option<u64>,
    /// max_P (tc `probability`).
    pub probability: f64,
    /// Bits per second (tc `bandwidth`).
    pub bandwidth: u64,
    pub ecn: bool,
    pub harddrop: bool,
    pub adaptive: bool,
}

l4slab_core::param_config!(RedConfig {
    limit = LIMIT,
    min = MIN,
    max = MAX,
    avpkt = AVPKT,
    burst = BURST,
    probability = PROBABILITY,
    bandwidth = BANDWIDTH,
    ecn = ECN,
    harddrop = HARDDROP,
    adaptive = ADAPTIVE,
});

impl QdiscKind for RedConfig {
    const PARAMS: &'static [Param] = PARAMS;

    fn check(&self) -> Result<(), ConfigError> {
        self.parms().map(|_| ())
    }

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(Red::new(self.clone()))
    }
}

/// `RED_STAB_SIZE`.
const STAB_SIZE: usize = 256;
/// `RED_ONE_PERCENT`: `DIV_ROUND_CLOSEST(1 << 32, 100)`, max_P in Q0.32.
const ONE_PERCENT: u32 = 42_949_673;
/// `MAX_P_MIN` and `MAX_P_MAX`: Adaptive RED keeps max_P in 1 %..50 %.
pub const MAX_P_MIN: u32 = ONE_PERCENT;
pub const MAX_P_MAX: u32 = 50 * ONE_PERCENT;
/// `red_adaptative_timer`: `mod_timer(&q->adapt_timer, jiffies + HZ/2)`.
pub const ADAPT_INTERVAL: Dur = Dur::from_millis(500);

/// The RED parameters in Linux's form (`struct red_parms`), computed from a
/// [`RedConfig`] as `tc` and `red_set_parms` compute them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedParms {
    /// Thresholds in bytes, with the point at Wlog (`qth_min << Wlog`).
    pub qth_min: u64,
    pub qth_max: u64,
    /// `max - min` in bytes (at least 1).
    pub qth_delta: u32,
    /// Q0.32 (`probability × 2^32`).
    pub max_p: u32,
    /// `max_P / qth_delta`: `red_random` draws below `2^32 / max_p_delta`.
    pub max_p_delta: u32,
    /// Adaptive RED's target band in bytes: `min + 0.4·Δ`, `min + 0.6·Δ`.
    pub target_min: u32,
    pub target_max: u32,
    pub wlog: u8,
    pub scell_log: u8,
    /// `255 << Scell_log` (µs): the longest idle time the table covers.
    pub scell_max: u64,
    /// The idle-decay table: `qavg >> stab[us_idle >> Scell_log]`.
    pub stab: [u8; STAB_SIZE],
}

/// Linux `fls`: the 1-based index of the highest set bit, 0 for 0.
fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// `-ln(1 - w)` for `0 < w <= 1/2`, by its series `Σ w^k / k` (IEEE basic
/// operations only, so the same on every platform).
fn neg_ln_1m(w: f64) -> f64 {
    let (mut sum, mut term, mut k) = (0.0, w, 1.0);
    while term / k > sum * 1e-18 {
        sum += term / k;
        term *= w;
        k += 1.0;
    }
    sum
}

/// `x^n` by repeated squaring (IEEE multiplications only).
fn pow_n(mut x: f64, mut n: u64) -> f64 {
    let mut r = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            r *= x;
        }
        x *= x;
        n >>= 1;
    }
    r
}

/// iproute2 `tc_red_eval_ewma`: the smallest Wlog with
/// `burst + 1 - qmin/avpkt <= (1 - (1-W)^burst) / W`, W = 2^-Wlog.
pub fn eval_ewma(qmin: u64, burst: u64, avpkt: u64) -> Result<u8, String> {
    // tc_red_eval_ewma: `double a = (double)burst + 1 - (double)qmin/avpkt;`
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt as f64;
    if a < 1.0 {
        return Err(format!(
            "burst {burst} is too small for min {qmin} B and avpkt {avpkt} B; \
             tc suggests burst {}",
            1 + qmin / avpkt
        ));
    }
    let mut w = 0.5;
    for wlog in 1..32u8 {
        if a <= (1.0 - pow_n(1.0 - w, burst)) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(format!("burst {burst} needs an EWMA weight below 2^-31"))
}

/// iproute2 `tc_red_eval_idle_damping` (per microsecond, see the module
/// docs): `Stab[t >> Scell_log] = -ln(1-W) · t / xmit_time`, capped at 31,
/// and Scell_log so that the table spans the idle time that decays the
/// average by 2^-31.
pub fn eval_idle_damping(
    wlog: u8,
    avpkt: u64,
    bandwidth: u64,
) -> Result<(u8, [u8; STAB_SIZE]), String> {
    // tc_calc_xmittime(rate, avpkt): the time to send avpkt at `bandwidth`, here in µs.
    let xmit_us = avpkt as f64 * 8.0 * 1e6 / bandwidth as f64;
    let lw = neg_ln_1m(1.0 / f64::from(1u32 << wlog)) / xmit_us;
    let maxtime = 31.0 / lw;
    let clog = (0..32u8)
        .find(|&c| maxtime / f64::from(1u32 << c) < 512.0)
        .ok_or_else(|| format!("bandwidth {bandwidth} bit/s is too low for the idle decay"))?;
    let mut stab = [0u8; STAB_SIZE];
    for (i, s) in stab.iter_mut().enumerate().take(STAB_SIZE - 1).skip(1) {
        // `sbuf[i] = (i<<clog)*lW; if (sbuf[i] > 31) sbuf[i] = 31;`
        *s = (((i as u64) << clog) as f64 * lw).min(31.0) as u8;
    }
    stab[STAB_SIZE - 1] = 31;
    Ok((clog, stab))
}

impl RedConfig {
    /// tc's derivations (`red_parse_opt`: defaults of min, max and burst;
    /// Wlog, Scell_log and the table) and the kernel's (`red_set_parms`),
    /// checked as `tc` and `red_check_params` check them.
    pub fn parms(&self) -> Result<RedParms, ConfigError> {
        let err = |param: &'static Param, message: String| ConfigError {
            param: param.name,
            message,
        };
        // red_parse_opt: "Compute default min/max thresholds based on Sally
        // Floyd's recommendations".
        let max = self
            .max
            .unwrap_or_else(|| self.min.map_or(self.limit / 4, |m| m * 3));
        let min = self.min.unwrap_or(max / 3);
        // tc_red_eval_P: `if (qmax - qmin <= 0) return -1` ("failed to calculate probability").
        if max <= min {
            let p = if self.max.is_some() { &MAX } else { &MIN };
            return Err(err(p, format!("max ({max} B) must be above min ({min} B)")));
        }
        // red_parse_opt: `if (!burst) burst = (2 * opt.qth_min + opt.qth_max) / (3 * avpkt);`
        let burst = self.burst.unwrap_or((2 * min + max) / (3 * self.avpkt));
        let wlog = eval_ewma(min, burst, self.avpkt).map_err(|m| err(&BURST, m))?;
        // red_check_params: `fls(qth_min) + Wlog >= 32` and the same for qth_max.
        for (p, v) in [(&MIN, min), (&MAX, max)] {
            if fls(v) + u32::from(wlog) >= 32 {
                return Err(err(
                    p,
                    format!(
                        "{v} B with an EWMA weight of 2^-{wlog} overflows Linux's 32-bit \
                         thresholds (red_check_params); lower it or the burst"
                    ),
                ));
            }
        }
        let (scell_log, stab) =
            eval_idle_damping(wlog, self.avpkt, self.bandwidth).map_err(|m| err(&BANDWIDTH, m))?;
        // q_red.c: `max_P = probability * pow(2, 32)`.
        let max_p = (self.probability * 4_294_967_296.0) as u32;
        // red_set_parms: delta = max - min; max_p_delta = max(max_P / delta, 1).
        let delta = (max - min) as u32;
        Ok(RedParms {
            qth_min: min << wlog,
            qth_max: max << wlog,
            qth_delta: delta,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            // red_set_parms: `delta /= 5; target_min = qth_min + 2*delta; target_max = qth_min + 3*delta`.
            target_min: min as u32 + 2 * (delta / 5),
            target_max: min as u32 + 3 * (delta / 5),
            wlog,
            scell_log,
            scell_max: 255 << scell_log,
            stab,
        })
    }
}

/// `red_action`'s verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedAction {
    /// `RED_DONT_MARK`
    DontMark,
    /// `RED_PROB_MARK`: average between the thresholds, chosen.
    ProbMark,
    /// `RED_HARD_MARK`: average at or above `max`.
    HardMark,
}

/// The RED variables (`struct red_vars`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedVars {
    /// Packets since the last mark, -1 below `min` (`qcount`).
    pub qcount: i64,
    /// The cached random number (`qR`), below `2^32 / max_p_delta`.
    pub q_r: u32,
    /// Average backlog in bytes with the point at Wlog (`qavg`).
    pub qavg: u64,
    /// Start of the current idle period (`qidlestart`).
    pub idle_since: Option<Time>,
}

impl RedVars {
    /// `red_set_vars`, then `red_start_of_idle_period` (an empty queue at
    /// `red_change`).
    pub fn new(now: Time) -> Self {
        RedVars {
            qcount: -1,
            q_r: 0,
            qavg: 0,
            idle_since: Some(now),
        }
    }

    /// `red_calc_qavg_from_idle_time`: the average decayed by the idle time.
    pub fn qavg_from_idle_time(&self, p: &RedParms, now: Time) -> u64 {
        let since = self.idle_since.expect("idling");
        // `us_idle = min_t(s64, ktime_us_delta(ktime_get(), v->qidlestart), p->Scell_max)`
        let us_idle = (now.saturating_since(since).as_nanos() / 1000).min(p.scell_max);
        let shift = p.stab[((us_idle >> p.scell_log) as usize) & (STAB_SIZE - 1)];
        if shift != 0 {
            return self.qavg >> shift;
        }
        // "Approximate initial part of exponent with linear function: (1-W)^m ~= 1-mW"
        let dec = ((u128::from(self.qavg) * u128::from(us_idle)) >> p.scell_log) as u64;
        if dec < self.qavg >> 1 {
            self.qavg - dec
        } else {
            self.qavg >> 1
        }
    }

    /// `red_calc_qavg`: the average at an arrival that finds `backlog` bytes.
    pub fn calc_qavg(&self, p: &RedParms, now: Time, backlog: u64) -> u64 {
        if self.idle_since.is_some() {
            return self.qavg_from_idle_time(p, now);
        }
        // red_calc_qavg_no_idle_time: `qavg + (backlog - (qavg >> Wlog))`, i.e.
        // qavg = qavg*(1-W) + backlog*W with the point at Wlog.
        self.qavg - (self.qavg >> p.wlog) + backlog
    }

    /// `red_random`: `reciprocal_divide(prandom_u32(), max_P_reciprocal)`.
    fn random(p: &RedParms, rand32: u32) -> u32 {
        rand32 / p.max_p_delta
    }

    /// `red_action` on the current `qavg`; `rand32` draws a uniform 32-bit
    /// number (`prandom_u32`) when one is needed.
    pub fn action(&mut self, p: &RedParms, mut rand32: impl FnMut() -> u32) -> RedAction {
        // red_cmp_thresh
        if self.qavg < p.qth_min {
            self.qcount = -1;
            return RedAction::DontMark;
        }
        if self.qavg >= p.qth_max {
            self.qcount = -1;
            return RedAction::HardMark;
        }
        self.qcount += 1;
        if self.qcount == 0 {
            // First packet above min: draw the number the count must reach.
            self.q_r = Self::random(p, rand32());
            return RedAction::DontMark;
        }
        // red_mark_probability: `!(((qavg - qth_min) >> Wlog) * qcount < qR)`, the
        // divisionless form of max_P·(avg - min)/(max - min) >= rnd/qcount
        // (Floyd & Jacobson's count correction: marks spaced uniformly in 1..1/p_b).
        let over = (self.qavg - p.qth_min) >> p.wlog;
        if u128::from(over) * self.qcount as u128 >= u128::from(self.q_r) {
            self.qcount = 0;
            self.q_r = Self::random(p, rand32());
            return RedAction::ProbMark;
        }
        RedAction::DontMark
    }

    /// `red_adaptative_algo`, every [`ADAPT_INTERVAL`]: move max_P towards
    /// the target band (`+= min(1 %, max_P/4)` above it, `×0.9` below it).
    pub fn adapt(&self, p: &mut RedParms, now: Time) {
        let mut qavg = self.qavg;
        if self.idle_since.is_some() {
            qavg = self.qavg_from_idle_time(p, now);
        }
        // "v->qavg is fixed point number with point at Wlog"
        let qavg = qavg >> p.wlog;
        if qavg > u64::from(p.target_max) && p.max_p <= MAX_P_MAX {
            // MAX_P_ALPHA(val) = min(MAX_P_MIN, val / 4)
            p.max_p += MAX_P_MIN.min(p.max_p / 4);
        } else if qavg < u64::from(p.target_min) && p.max_p >= MAX_P_MIN {
            p.max_p = (p.max_p / 10) * 9;
        }
        // `max_p_delta = DIV_ROUND_CLOSEST(p->max_P, p->qth_delta)`, at least 1.
        p.max_p_delta = ((p.max_p + p.qth_delta / 2) / p.qth_delta).max(1);
    }
}

/// Linux `struct red_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedStats {
    /// Early probability drops.
    pub prob_drop: u64,
    /// Early probability marks.
    pub prob_mark: u64,
    /// Drops with the average at or above `max`.
    pub forced_drop: u64,
    /// Marks with the average at or above `max`.
    pub forced_mark: u64,
    /// Drops at the byte limit.
    pub pdrop: u64,
}

/// The `red` qdisc: RED in front of a byte FIFO.
#[derive(Debug)]
pub struct Red {
    cfg: RedConfig,
    parms: RedParms,
    vars: RedVars,
    rstats: RedStats,
    /// The `bfifo` child.
    queue: PacketFifo,
    stats: QdiscStats,
    /// Next Adaptive RED update (`adapt_timer`), with `adaptive`.
    next_adapt: Option<Time>,
}

impl Red {
    /// # Panics
    /// On an invalid config ([`RedConfig::parms`]); scenarios are checked
    /// when they are resolved.
    pub fn new(cfg: RedConfig) -> Self {
        let parms = cfg
            .parms()
            .unwrap_or_else(|e| panic!("invalid red config: {e}"));
        Red {
            // red_change: `if (ctl->flags & TC_RED_ADAPTATIVE) mod_timer(..., jiffies + HZ/2)`.
            next_adapt: cfg.adaptive.then_some(Time::ZERO + ADAPT_INTERVAL),
            vars: RedVars::new(Time::ZERO),
            parms,
            cfg,
            rstats: RedStats::default(),
            queue: PacketFifo::default(),
            stats: QdiscStats::default(),
        }
    }

    pub fn parms(&self) -> &RedParms {
        &self.parms
    }

    pub fn vars(&self) -> &RedVars {
        &self.vars
    }

    pub fn red_stats(&self) -> &RedStats {
        &self.rstats
    }
}

impl Qdisc for Red {
    fn kind(&self) -> &'static str {
        "red"
    }

    fn enqueue(&mut self, now: Time, mut pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.stats.offered += 1;
        // red_enqueue: `q->vars.qavg = red_calc_qavg(&q->parms, &q->vars, child->qstats.backlog)`
        self.vars.qavg = self.vars.calc_qavg(&self.parms, now, self.queue.bytes());
        // `if (red_is_idling(&q->vars)) red_end_of_idle_period(&q->vars);`
        self.vars.idle_since = None;
        let rng = &mut *ctx.rng;
        match self
            .vars
            .action(&self.parms, || (rng.next_u64() >> 32) as u32)
        {
            RedAction::DontMark => {}
            RedAction::ProbMark => {
                // `if (!red_use_ecn(q) || !INET_ECN_set_ce(skb)) { prob_drop++; goto congestion_drop; }`
                if self.cfg.ecn && ctx.try_mark(now, &mut pkt, MarkReason::Aqm) {
                    self.rstats.prob_mark += 1;
                } else {
                    self.rstats.prob_drop += 1;
                    return ctx.refused(now, pkt, DropReason::AqmDrop, &mut self.stats);
                }
            }
            RedAction::HardMark => {
                // `if (red_use_harddrop(q) || !red_use_ecn(q) || !INET_ECN_set_ce(skb))`
                if !self.cfg.harddrop
                    && self.cfg.ecn
                    && ctx.try_mark(now, &mut pkt, MarkReason::Aqm)
                {
                    self.rstats.forced_mark += 1;
                } else {
                    self.rstats.forced_drop += 1;
                    return ctx.refused(now, pkt, DropReason::AqmDrop, &mut self.stats);
                }
            }
        }
        // The bfifo child: `if (likely(sch->qstats.backlog + qdisc_pkt_len(skb) <= limit))`.
        if self.queue.bytes() + u64::from(pkt.len) > self.cfg.limit {
            self.rstats.pdrop += 1;
            return ctx.refused(now, pkt, DropReason::Overlimit, &mut self.stats);
        }
        let pkt = self.queue.push(now, pkt);
        ctx.admitted(now, &pkt, 0, &mut self.stats);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        let Some(pkt) = self.queue.pop() else {
            // red_dequeue: `if (!red_is_idling(&q->vars)) red_start_of_idle_period(&q->vars);`
            self.vars.idle_since.get_or_insert(now);
            return None;
        };
        self.stats.dequeued += 1;
        if self.queue.is_empty() {
            // Linux asks again at once and finds the queue empty: the idle period starts now.
            self.vars.idle_since.get_or_insert(now);
        }
        ctx.sent(now, &pkt, 0, &mut self.stats);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        self.queue.backlog()
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn next_timer(&self) -> Option<Time> {
        self.next_adapt
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<'_>) {
        let Some(due) = self.next_adapt else { return };
        if now < due {
            return;
        }
        // red_adaptative_timer: red_adaptative_algo, then `mod_timer(..., jiffies + HZ/2)`.
        self.vars.adapt(&mut self.parms, now);
        self.next_adapt = Some(crate::pie::next_update(due, now, ADAPT_INTERVAL));
    }

    fn xstats(&self) -> Vec<(&'static str, f64)> {
        let p = &self.parms;
        // p_b = max_P·(avg - min)/(max - min) between the thresholds.
        let prob = match self.vars.qavg {
            q if q < p.qth_min => 0.0,
            q if q >= p.qth_max => 1.0,
            q => {
                f64::from(p.max_p) / 4_294_967_296.0 * (q - p.qth_min) as f64
                    / (p.qth_max - p.qth_min) as f64
            }
        };
        vec![
            ("prob", prob),
            ("qavg_bytes", (self.vars.qavg >> self.parms.wlog) as f64),
            ("max_p", f64::from(self.parms.max_p) / 4_294_967_296.0),
            ("prob_mark", self.rstats.prob_mark as f64),
            ("forced_mark", self.rstats.forced_mark as f64),
            ("prob_drop", self.rstats.prob_drop as f64),
            ("forced_drop", self.rstats.forced_drop as f64),
            ("pdrop", self.rstats.pdrop as f64),
        ]
    }
}

#[cfg(test)]
mod tests;
