//! The flow recorder: what a flow reports, written once for every backend
//! (the simulator, the emulator's kernel-TCP and own-endpoint flows, `l4slab
//! send`/`serve`), as the queue recorder is for the queues.
//!
//! Each backend reads its flow from its own source (the engine's endpoint, a
//! QUIC connection, `TCP_INFO`, a real endpoint) into a typed snapshot,
//! [`FlowSample`], at each sample point, and hands the RTT samples it sees
//! to [`FlowRecorder::record_rtt`]. The recorder alone owns:
//!
//! * the per-flow series names ([`FlowKey`], and the `cc.` prefix of the
//!   controller's own variables), written into a [`SeriesStore`] under
//!   `flow/<name>`, and what each value is: `goodput_bps` (bytes delivered
//!   in the interval × 8 / the interval), `rtt_ms` (mean of the interval's
//!   RTT samples), `loss_fraction` and `ce_fraction` (of the interval's
//!   packets), the controller's state as the backend read it — none of them
//!   rounded;
//! * the measurement window ([`FlowRecorder::start_window`]: delivered
//!   bytes and the RTT distribution restart at `warmup`);
//! * the flow's entry in `summary.json` ([`summary`]: goodput over the
//!   window, `rtt_ms` percentiles, completion, the path's and the
//!   transport's counters; a counter a backend cannot measure is `null`).
//!
//! What the application measured (`app_metrics`, the app's own series)
//! stays the app's: the recorder only files it under the flow.
//!
//! The parity test (`tests.rs`) feeds one snapshot sequence through the
//! recorder and checks that the rows each backend writes from the store
//! (the simulator's columns, the emulator's rows, `send`'s columns) agree.

mod summary;
#[cfg(test)]
mod tests;

pub use summary::{FlowInfo, FlowReport, PathCounts, TransportCounts, UpDown};

use l4slab_cc::CcMetrics;
use l4slab_core::stats::DurStats;
use l4slab_core::{Dur, Name, Rate, SeriesStore, Time};

/// A per-flow series key (`key` of `series.parquet` under `flow/<name>`;
/// docs/results.md). The controller's own variables are `cc.<variable>`
/// ([`CC_PREFIX`]); an app's series are named by the app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKey {
    /// Bytes delivered in order in the interval × 8 / the interval.
    GoodputBps,
    CwndBytes,
    SsthreshBytes,
    /// Index of the controller's mode in its `states()` (summary `cc_states`).
    CcState,
    PacingBps,
    InflightBytes,
    /// Written by the app, not yet sent.
    UnsentBytes,
    SrttMs,
    MinRttMs,
    /// Mean of the RTT samples taken in the interval.
    RttMs,
    /// Of the data direction's packets in the interval, the share dropped.
    LossFraction,
    /// Of the ECN-capable packets in the interval, the share CE-marked.
    CeFraction,
    /// Packets the sender declared lost in the interval (`send`).
    LostPackets,
}

impl FlowKey {
    pub const ALL: [FlowKey; 13] = [
        FlowKey::GoodputBps,
        FlowKey::CwndBytes,
        FlowKey::SsthreshBytes,
        FlowKey::CcState,
        FlowKey::PacingBps,
        FlowKey::InflightBytes,
        FlowKey::UnsentBytes,
        FlowKey::SrttMs,
        FlowKey::MinRttMs,
        FlowKey::RttMs,
        FlowKey::LossFraction,
        FlowKey::CeFraction,
        FlowKey::LostPackets,
    ];

    /// The key as `series.parquet` names it (and `summary.json`, for the
    /// flow's windowed `goodput_bps` and `rtt_ms` distribution and its
    /// `lost_packets`).
    pub const fn name(self) -> &'static str {
        match self {
            FlowKey::GoodputBps => "goodput_bps",
            FlowKey::CwndBytes => "cwnd_bytes",
            FlowKey::SsthreshBytes => "ssthresh_bytes",
            FlowKey::CcState => "cc_state",
            FlowKey::PacingBps => "pacing_bps",
            FlowKey::InflightBytes => "inflight_bytes",
            FlowKey::UnsentBytes => "unsent_bytes",
            FlowKey::SrttMs => "srtt_ms",
            FlowKey::MinRttMs => "min_rtt_ms",
            FlowKey::RttMs => "rtt_ms",
            FlowKey::LossFraction => "loss_fraction",
            FlowKey::CeFraction => "ce_fraction",
            FlowKey::LostPackets => "lost_packets",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Prefix of the controller's own variables (`cc.alpha`, `cc.pacing_gain`).
pub const CC_PREFIX: &str = "cc.";

/// The series name of flow `name`.
pub fn series_name(name: &str) -> String {
    format!("flow/{name}")
}

/// The sender's congestion controller at a sample point.
#[derive(Clone, Copy, Debug)]
pub struct CcSample<'a> {
    pub cwnd: u64,
    pub ssthresh: Option<u64>,
    /// The mode, as an index into the controller's `states()`.
    pub state: Option<usize>,
    /// The controller's own variables (`CcMetrics::extra`), in a fixed order.
    pub extra: &'a [(&'static str, f64)],
}

impl<'a> CcSample<'a> {
    /// From l4slab's controller: its metrics and its `states()`.
    pub fn of(m: &'a CcMetrics, states: &[&str]) -> Self {
        let state = states.iter().position(|&n| n == m.state);
        debug_assert!(
            state.is_some() || states.is_empty(),
            "{} not in {states:?}",
            m.state
        );
        CcSample {
            cwnd: m.cwnd,
            ssthresh: m.ssthresh,
            state,
            extra: &m.extra,
        }
    }

    /// Only a window (and a slow-start threshold): what `TCP_INFO` says.
    pub fn window(cwnd: u64, ssthresh: Option<u64>) -> Self {
        CcSample {
            cwnd,
            ssthresh,
            state: None,
            extra: &[],
        }
    }
}

/// A flow at a sample point, as its backend reads it: running totals and
/// current state; `None` for what the backend cannot see.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowSample<'a> {
    /// Application bytes delivered in order so far.
    pub delivered: u64,
    pub cc: Option<CcSample<'a>>,
    pub pacing: Option<Rate>,
    pub inflight: Option<u64>,
    pub unsent: Option<u64>,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Data-direction packets sent and dropped in the network so far.
    pub data_packets: Option<(u64, u64)>,
    /// ECN-capable packets and the CE-marked ones among them so far
    /// (those the receiver saw, or those the feedback reported).
    pub ecn_packets: Option<(u64, u64)>,
    /// Packets the sender declared lost so far.
    pub losses_declared: Option<u64>,
}

/// What the recorder wrote for one interval (for a live line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowInterval {
    /// Bytes delivered in the interval.
    pub bytes: u64,
    pub goodput_bps: f64,
    pub rtt_ms: Option<f64>,
    pub ce_fraction: Option<f64>,
    pub lost: Option<u64>,
}

/// One flow's recorder (see the module documentation).
pub struct FlowRecorder {
    series: Name,
    start: Time,
    /// Where the measurement window starts (the scenario's `warmup`).
    window_start: Time,
    /// Every RTT sample (totals: the window's; interval: the series').
    rtt: DurStats,
    delivered_at_window: u64,
    delivered_last_sample: u64,
    last_data: (u64, u64),
    last_ecn: (u64, u64),
    last_losses: u64,
    keys: [Option<Name>; FlowKey::ALL.len()],
    /// `cc.<variable>` keys, by the variable's place in `CcSample::extra`.
    cc_keys: Vec<Name>,
}

impl FlowRecorder {
    /// Flow `name`, starting at `start`, whose measurement window starts at
    /// `window_start` (`Time::ZERO` without a warmup); its series go to
    /// `store`.
    pub fn new(name: &str, start: Time, window_start: Time, store: &mut SeriesStore) -> Self {
        FlowRecorder {
            series: store.intern(&series_name(name)),
            start,
            window_start,
            // µs resolution up to 1000 s.
            rtt: DurStats::new(1_000, 1_000_000_000),
            delivered_at_window: 0,
            delivered_last_sample: 0,
            last_data: (0, 0),
            last_ecn: (0, 0),
            last_losses: 0,
            keys: [None; FlowKey::ALL.len()],
            cc_keys: Vec::new(),
        }
    }

    pub fn start(&self) -> Time {
        self.start
    }

    /// One RTT sample of the flow's sender.
    pub fn record_rtt(&mut self, rtt: Dur) {
        self.rtt.record(rtt);
    }

    /// The RTT distribution (the window's, once it started).
    pub fn rtt(&self) -> &DurStats {
        &self.rtt
    }

    /// The measurement window starts (docs/results.md): `delivered` bytes so
    /// far are left out of the window's goodput, the RTT distribution
    /// restarts. The series go on.
    pub fn start_window(&mut self, delivered: u64) {
        self.delivered_at_window = delivered;
        self.rtt.clear_totals();
    }

    fn push(&mut self, store: &mut SeriesStore, t_s: f64, key: FlowKey, v: f64) {
        let k = *self.keys[key.index()].get_or_insert_with(|| store.intern(key.name()));
        store.push(t_s, self.series, k, v);
    }

    /// An app's own series value (the app names it).
    pub fn push_app(&self, store: &mut SeriesStore, t_s: f64, name: &str, v: f64) {
        let k = store.intern(name);
        store.push(t_s, self.series, k, v);
    }

    /// The sample at `t` (written as `t_s`) of the interval `iv` before it;
    /// nothing before the flow's start. Returns what it wrote for the
    /// interval.
    pub fn sample(
        &mut self,
        store: &mut SeriesStore,
        t: Time,
        t_s: f64,
        iv: Dur,
        s: &FlowSample<'_>,
    ) -> Option<FlowInterval> {
        let delta = s.delivered.saturating_sub(self.delivered_last_sample);
        self.delivered_last_sample = s.delivered;
        if t < self.start {
            return None;
        }
        let secs = iv.as_secs_f64();
        let goodput_bps = if secs > 0.0 {
            delta as f64 * 8.0 / secs
        } else {
            0.0
        };
        self.push(store, t_s, FlowKey::GoodputBps, goodput_bps);
        if let Some(cc) = &s.cc {
            self.push(store, t_s, FlowKey::CwndBytes, cc.cwnd as f64);
            if let Some(st) = cc.ssthresh {
                self.push(store, t_s, FlowKey::SsthreshBytes, st as f64);
            }
            if let Some(i) = cc.state {
                self.push(store, t_s, FlowKey::CcState, i as f64);
            }
            for (i, &(name, v)) in cc.extra.iter().enumerate() {
                if i == self.cc_keys.len() {
                    self.cc_keys
                        .push(store.intern(&format!("{CC_PREFIX}{name}")));
                }
                if v.is_finite() {
                    store.push(t_s, self.series, self.cc_keys[i], v);
                }
            }
        }
        if let Some(p) = s.pacing {
            self.push(store, t_s, FlowKey::PacingBps, p.as_bps() as f64);
        }
        if let Some(b) = s.inflight {
            self.push(store, t_s, FlowKey::InflightBytes, b as f64);
        }
        if let Some(b) = s.unsent {
            self.push(store, t_s, FlowKey::UnsentBytes, b as f64);
        }
        if let Some(d) = s.srtt {
            self.push(store, t_s, FlowKey::SrttMs, d.as_millis_f64());
        }
        if let Some(d) = s.min_rtt {
            self.push(store, t_s, FlowKey::MinRttMs, d.as_millis_f64());
        }
        let rtt_ms = self.rtt.take_interval().map(|(mean, _)| mean);
        if let Some(mean) = rtt_ms {
            self.push(store, t_s, FlowKey::RttMs, mean);
        }
        if let Some((sent, lost)) = s.data_packets {
            let (d_sent, d_lost) = (sent - self.last_data.0, lost - self.last_data.1);
            if d_sent > 0 {
                self.push(
                    store,
                    t_s,
                    FlowKey::LossFraction,
                    d_lost as f64 / d_sent as f64,
                );
            }
            self.last_data = (sent, lost);
        }
        let mut ce_fraction = None;
        if let Some((ect, ce)) = s.ecn_packets {
            let d_ect = ect.saturating_sub(self.last_ecn.0);
            let d_ce = ce.saturating_sub(self.last_ecn.1);
            if d_ect > 0 {
                let f = d_ce as f64 / d_ect as f64;
                self.push(store, t_s, FlowKey::CeFraction, f);
                ce_fraction = Some(f);
            }
            self.last_ecn = (ect, ce);
        }
        let lost = s.losses_declared.map(|n| {
            let d = n.saturating_sub(self.last_losses);
            self.last_losses = n;
            d
        });
        if let Some(d) = lost {
            self.push(store, t_s, FlowKey::LostPackets, d as f64);
        }
        Some(FlowInterval {
            bytes: delta,
            goodput_bps,
            rtt_ms,
            ce_fraction,
            lost,
        })
    }
}
