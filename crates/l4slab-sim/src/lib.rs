//! l4slab-sim: the packet-level discrete-event simulator.
//!
//! `run(scenario)` builds a dumbbell (client hosts — access delays — a
//! bottleneck link per direction — access delays — server hosts), starts the
//! flows' transports and applications, and advances the event calendar to the
//! scenario's duration. It returns the deterministic summary, the time series
//! and (on request) a per-packet trace: the results contract of DESIGN.md §5.

mod delay_line;
mod engine;
mod event;
mod recorder;
mod segstore;
mod series;
mod setup;
mod summary;

use l4slab_core::Time;
use l4slab_scenario::Scenario;

pub use event::EventQueue;
/// Per-packet trace columns (`packets.parquet`), shared with the emulator.
pub use l4slab_core::pkttrace::PacketTrace;
pub use recorder::DurStats;
pub use series::SeriesStore;

/// Version written into every summary (`tool_version`).
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Results format version (`format_version` in summary.json).
pub const RESULTS_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("run cancelled at t = {0}")]
    Cancelled(Time),
}

/// Counters the benchmark reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Events processed.
    pub events: u64,
    /// Packets created (data and ACKs).
    pub packets: u64,
    /// Simulated time reached.
    pub sim_time: Time,
}

pub struct RunOutput {
    /// summary.json content (keys sorted: serde_json's map is a BTreeMap).
    pub summary: serde_json::Value,
    pub series: SeriesStore,
    pub packets: Option<PacketTrace>,
    pub stats: RunStats,
}

/// Run `scenario` to completion. `progress(now)` is called every few
/// thousand events; returning `false` cancels the run.
pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Time) -> bool,
) -> Result<RunOutput, SimError> {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut sim = setup::build(scenario, seed)?;
    sim.run(progress)?;
    Ok(sim.finish())
}

/// Names of the congestion controls the simulator accepts.
pub fn cc_names() -> &'static [&'static str] {
    l4slab_cc::CC_NAMES
}

/// Names of the queue disciplines the simulator accepts.
pub const QDISC_NAMES: &[&str] = l4slab_scenario::qdisc::QDISCS;
