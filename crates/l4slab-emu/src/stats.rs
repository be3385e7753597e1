//! What the forwarder measures: queue sojourn (from the qdisc's trace
//! events, exactly as the simulator's recorder does), drops and marks, and
//! its own timing accuracy (actual minus intended release time of every
//! packet). The distributions are [`DurStats`] (l4slab-core, shared with the
//! simulator): HdrHistogram percentiles with exact count, min, mean and max,
//! and a per-interval mean/max for the series.

use l4slab_core::{Time, TraceEvent, Tracer};

pub use l4slab_core::stats::{round6, DurStats};

/// Sojourn: 100 ns units up to 1000 s, as the simulator's recorder (L4S
/// queues sit near 100 µs).
pub fn sojourn_stats() -> DurStats {
    DurStats::new(100, 10_000_000_000)
}

/// Timing error: 100 ns units up to 10 s.
pub fn lateness_stats() -> DurStats {
    DurStats::new(100, 100_000_000)
}

/// A distribution summary in microseconds (the timing report's unit).
pub fn summary_us(s: &DurStats) -> serde_json::Value {
    s.summary_scaled(1e-3)
}

/// The tracer of one emulated queue.
pub struct QueueRecorder {
    pub sojourn: DurStats,
    /// Per sub-queue (DualPI2: `c`, `l`).
    pub sub: Vec<DurStats>,
    pub marks_interval: u64,
    pub drops_interval: u64,
    /// Per flow id below `per_flow.len()` (scenario runs): sojourn, drops, marks.
    pub per_flow: Vec<FlowQueueRec>,
}

/// One flow's share of a queue.
pub struct FlowQueueRec {
    pub sojourn: Option<DurStats>,
    pub drops: u64,
    pub marks: u64,
}

impl QueueRecorder {
    /// `flows`: how many flow ids get their own statistics (0 in the shell,
    /// where flow ids are hashes).
    pub fn new(subqueues: usize, flows: usize) -> Self {
        QueueRecorder {
            sojourn: sojourn_stats(),
            sub: (0..subqueues).map(|_| sojourn_stats()).collect(),
            marks_interval: 0,
            drops_interval: 0,
            per_flow: (0..flows)
                .map(|_| FlowQueueRec {
                    sojourn: None,
                    drops: 0,
                    marks: 0,
                })
                .collect(),
        }
    }
}

impl Tracer for QueueRecorder {
    fn event(&mut self, _now: Time, ev: TraceEvent) {
        match ev {
            TraceEvent::Dequeued {
                subqueue,
                sojourn,
                flow,
                ..
            } => {
                self.sojourn.record(sojourn);
                if let Some(s) = self.sub.get_mut(usize::from(subqueue)) {
                    s.record(sojourn);
                }
                if let Some(f) = self.per_flow.get_mut(flow as usize) {
                    f.sojourn.get_or_insert_with(sojourn_stats).record(sojourn);
                }
            }
            TraceEvent::Marked { flow, .. } => {
                self.marks_interval += 1;
                if let Some(f) = self.per_flow.get_mut(flow as usize) {
                    f.marks += 1;
                }
            }
            TraceEvent::Dropped { flow, .. } => {
                self.drops_interval += 1;
                if let Some(f) = self.per_flow.get_mut(flow as usize) {
                    f.drops += 1;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Dur;

    #[test]
    fn the_timing_report_is_in_microseconds_with_exact_extremes() {
        let mut h = lateness_stats();
        for us in 1..=100u64 {
            h.record(Dur::from_micros(us));
        }
        let v = summary_us(&h);
        assert_eq!(v["min"], 1.0);
        assert_eq!(v["max"], 100.0);
        assert_eq!(v["mean"], 50.5);
        let p99 = v["p99"].as_f64().unwrap();
        assert!((p99 - 99.0).abs() < 0.1, "{p99}");
        // Per interval: mean and max in ms.
        let (mean, max) = h.take_interval().unwrap();
        assert_eq!((round6(mean), round6(max)), (0.0505, 0.1));
        assert_eq!(h.take_interval(), None);
    }
}
