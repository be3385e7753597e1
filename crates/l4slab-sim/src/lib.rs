//! l4slab-sim: the packet-level discrete-event simulator.
//!
//! `run(scenario)` builds a dumbbell (client hosts — access delays or access
//! links — a bottleneck link per direction — access delays or access links —
//! server hosts), starts the flows' transports and applications, and
//! advances the event calendar to the scenario's duration. It returns the deterministic summary, the time series
//! and (on request) a per-packet trace: the results contract of DESIGN.md §5.

mod capture;
mod engine;
mod event;
mod pkttrace;
mod race;
mod recorder;
mod segstore;
mod setup;
mod summary;

use std::path::PathBuf;

use l4slab_core::Time;
use l4slab_pcap::CaptureError;
use l4slab_scenario::Scenario;

pub use event::EventQueue;
/// Per-packet trace columns (`packets.parquet`), shared with the emulator.
pub use l4slab_core::pkttrace::{PacketChunk, PacketTrace, CHUNK_ROWS};
pub use l4slab_core::SeriesStore;
pub use recorder::DurStats;

/// Version written into every summary (`tool_version`).
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Results format version (`format_version` in summary.json).
pub const RESULTS_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// The results folder a scenario with `pcap = true` writes its capture
    /// files into (under `pcap/`, [`l4slab_pcap`]); without one, nothing
    /// is captured.
    pub pcap_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("run cancelled at t = {0}")]
    Cancelled(Time),
    #[error(transparent)]
    Capture(#[from] CaptureError),
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
    /// The whole packet trace from [`run`]; `None` from [`run_streaming`]
    /// (its sink got the rows) or when the scenario does not trace packets.
    pub packets: Option<PacketTrace>,
    /// The pcap files written ([`RunOptions::pcap_dir`]), in queue order.
    pub pcap_files: Vec<PathBuf>,
    pub stats: RunStats,
}

/// Run `scenario` to completion, keeping the whole packet trace (if the
/// scenario asks for one) in [`RunOutput::packets`]. `progress(now)` is
/// called every few thousand events; returning `false` cancels the run.
pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Time) -> bool,
) -> Result<RunOutput, SimError> {
    let mut all = scenario.packet_trace.then(PacketTrace::default);
    let mut out = run_streaming(scenario, opts, progress, &mut |chunk| {
        if let Some(all) = &mut all {
            all.extend_from(chunk);
        }
        true
    })?;
    out.packets = all;
    Ok(out)
}

/// Run `scenario` to completion, handing the packet trace to `packets` as
/// it is recorded: every [`CHUNK_ROWS`] rows, then the rest at the end (a
/// chunk of zero rows when nothing is left; `packets` is called at least
/// once when the scenario traces packets, never when it does not). Memory
/// stays bounded however long the run. `progress` as in [`run`]; either
/// callback returning `false` cancels the run ([`SimError::Cancelled`]).
pub fn run_streaming(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Time) -> bool,
    packets: &mut dyn FnMut(&PacketChunk<'_>) -> bool,
) -> Result<RunOutput, SimError> {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut sim = setup::build(scenario, seed)?;
    if let Some(dir) = opts.pcap_dir.as_deref().filter(|_| scenario.pcap) {
        let names = sim.bn.queue_names();
        sim.pcap = Some(capture::Capture::create(scenario, seed, &names, dir)?);
        sim.bn.record_captures();
    }
    sim.run(progress, packets)?;
    let pcap = sim.pcap.take();
    let mut out = sim.finish();
    if let Some(c) = pcap {
        out.pcap_files = c.finish()?;
    }
    Ok(out)
}

/// Names of the congestion controls the simulator accepts.
pub fn cc_names() -> &'static [&'static str] {
    l4slab_cc::CC_NAMES
}

/// Names of the queue disciplines the simulator accepts.
pub const QDISC_NAMES: &[&str] = l4slab_scenario::qdisc::QDISCS;
