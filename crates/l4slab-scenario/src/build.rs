//! Resolved scenario parts -> the objects that run them: the one dispatch
//! point from a [`QdiscSpec`] / [`LossSpec`] / [`LinkSpec`] to a discipline,
//! a loss model and a [`Link`].
//!
//! Both backends build their bottleneck here (the simulator in
//! `l4slab-sim/src/setup.rs`, the emulator in `l4slab-emu`), so a scenario
//! runs the *same* queue, rate and loss objects, seeded from the same
//! streams, whichever backend carries the packets.

use l4slab_core::SimRng;
use l4slab_link::{
    Bernoulli, ConstantRate, GilbertElliott, Link, LossModel, NoLoss, RateModel, TraceRate,
};
use l4slab_qdisc::{
    Codel, DualPi2, Fifo, FifoConfig, FifoLimit, FifoMode, FqCodel, FqPie, Pie, Qdisc,
};

use l4slab_link::bottleneck::{DOWN, QUEUE_NAMES, UP};

use crate::model::{Bottleneck, BufferLimit, LinkSpec, LossSpec, QdiscSpec};

/// The discipline a [`QdiscSpec`] names.
pub fn qdisc(spec: &QdiscSpec) -> Box<dyn Qdisc> {
    match spec {
        QdiscSpec::Fifo { limit, head_drop } => Box::new(Fifo::new(FifoConfig {
            limit: match *limit {
                BufferLimit::Packets(n) => FifoLimit::Packets(n),
                BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => FifoLimit::Bytes(b),
            },
            mode: if *head_drop {
                FifoMode::HeadDrop
            } else {
                FifoMode::TailDrop
            },
        })),
        QdiscSpec::Codel(cfg) => Box::new(Codel::new(cfg.clone())),
        QdiscSpec::FqCodel(cfg) => Box::new(FqCodel::new(cfg.clone())),
        QdiscSpec::Pie(cfg) => Box::new(Pie::new(cfg.clone())),
        QdiscSpec::FqPie(cfg) => Box::new(FqPie::new(cfg.clone())),
        QdiscSpec::Dualpi2(cfg) => Box::new(DualPi2::new(cfg.clone())),
    }
}

/// The loss model a [`LossSpec`] names (probabilities were validated when
/// the scenario was resolved).
pub fn loss(spec: &LossSpec) -> Box<dyn LossModel> {
    match *spec {
        LossSpec::None => Box::new(NoLoss),
        LossSpec::Bernoulli { p, .. } => Box::new(Bernoulli::new(p).expect("validated")),
        LossSpec::GilbertElliott { p, r, k, h, .. } => {
            Box::new(GilbertElliott::new(p, r, k, h).expect("validated"))
        }
    }
}

/// The random stream of queue `name`'s qdisc (`link/<name>/qdisc`).
pub fn qdisc_rng(seed: u64, name: &str) -> SimRng {
    SimRng::derive(seed, &format!("link/{name}/qdisc"))
}

/// The rate model: the trace when `rate = { trace = ... }`, else constant.
pub fn rate(spec: &LinkSpec) -> Box<dyn RateModel> {
    match &spec.rate_trace {
        Some(t) => Box::new(TraceRate::new(t.trace.clone())),
        None => Box::new(ConstantRate(spec.rate)),
    }
}

/// The link of one bottleneck direction named `name` (e.g. `bottleneck.down`),
/// with its own loss stream `link/<name>/loss`, netem's `ecn` flag for that
/// loss, and the path's ECN rewrite.
pub fn link(spec: &LinkSpec, name: &str, seed: u64) -> Link {
    Link::new(
        qdisc(&spec.qdisc),
        rate(spec),
        loss(&spec.loss),
        SimRng::derive(seed, &format!("link/{name}/loss")),
        spec.delay,
    )
    .with_loss_ecn(spec.loss.ecn())
    .with_ecn_rewrite(spec.ecn_rewrite)
}

/// The bottleneck runtime of a scenario: both directions' links (as [`link`])
/// with their qdisc streams (as [`qdisc_rng`]), per-flow statistics for
/// `flows` flow ids. Both backends build theirs here.
pub fn bottleneck(b: &Bottleneck, seed: u64, flows: usize) -> l4slab_link::Bottleneck {
    let mk = |spec: &LinkSpec, dir: usize| {
        let name = QUEUE_NAMES[dir];
        (link(spec, name, seed), qdisc_rng(seed, name))
    };
    l4slab_link::Bottleneck::new([mk(&b.down, DOWN), mk(&b.up, UP)], flows)
}
