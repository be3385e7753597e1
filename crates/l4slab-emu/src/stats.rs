//! What the forwarder measures: queue sojourn (from the qdisc's trace
//! events, exactly as the simulator's recorder does), drops and marks, and
//! its own timing accuracy (actual minus intended release time of every
//! packet), all as HdrHistograms with exact min/mean/max.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use l4slab_core::{Dur, Time, TraceEvent, Tracer};

/// Round to 6 decimals (as the simulator's summaries do).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A duration distribution: HdrHistogram percentiles (3 significant digits)
/// plus exact count, min, mean and max, and a per-interval mean/max.
pub struct DurHist {
    hist: Histogram<u64>,
    unit_ns: u64,
    n: u64,
    sum_ns: u128,
    min: u64,
    max: u64,
    int_n: u64,
    int_sum_ns: u128,
    int_max: u64,
}

impl DurHist {
    /// `unit_ns` resolution, values up to `max_units` units kept in the histogram.
    pub fn new(unit_ns: u64, max_units: u64) -> Self {
        DurHist {
            hist: Histogram::new_with_bounds(1, max_units, 3).expect("valid bounds"),
            unit_ns,
            n: 0,
            sum_ns: 0,
            min: u64::MAX,
            max: 0,
            int_n: 0,
            int_sum_ns: 0,
            int_max: 0,
        }
    }

    pub fn record_ns(&mut self, ns: u64) {
        let units = (ns / self.unit_ns).clamp(1, self.hist.high());
        self.hist.record(units).expect("clamped into range");
        self.n += 1;
        self.sum_ns += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.int_n += 1;
        self.int_sum_ns += u128::from(ns);
        self.int_max = self.int_max.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Add `other`'s samples (same resolution) to this distribution.
    pub fn merge(&mut self, other: &DurHist) {
        debug_assert_eq!(self.unit_ns, other.unit_ns);
        self.hist.add(&other.hist).expect("same bounds");
        self.n += other.n;
        self.sum_ns += other.sum_ns;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The value at quantile `q` in nanoseconds (0 without samples).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.hist.value_at_quantile(q) * self.unit_ns
        }
    }

    /// Mean and max (ns) of the samples since the last call, if any.
    pub fn take_interval(&mut self) -> Option<(f64, f64)> {
        if self.int_n == 0 {
            return None;
        }
        let r = (
            self.int_sum_ns as f64 / self.int_n as f64,
            self.int_max as f64,
        );
        self.int_n = 0;
        self.int_sum_ns = 0;
        self.int_max = 0;
        Some(r)
    }

    /// `{min, mean, p50, p90, p99, p999, max, samples}` in units of `scale_ns`
    /// (1e6 for ms, 1e3 for µs), or `null` without samples.
    pub fn summary(&self, scale_ns: f64) -> Value {
        if self.n == 0 {
            return Value::Null;
        }
        let q = |p: f64| round6(self.quantile_ns(p) as f64 / scale_ns);
        json!({
            "min": round6(self.min as f64 / scale_ns),
            "mean": round6(self.sum_ns as f64 / self.n as f64 / scale_ns),
            "p50": q(0.50),
            "p90": q(0.90),
            "p99": q(0.99),
            "p999": q(0.999),
            "max": round6(self.max as f64 / scale_ns),
            "samples": self.n,
        })
    }
}

/// Sojourn histogram: 100 ns units up to 100 s (as the simulator's recorder).
pub fn sojourn_hist() -> DurHist {
    DurHist::new(100, 1_000_000_000)
}

/// Timing-error histogram: 100 ns units up to 10 s.
pub fn lateness_hist() -> DurHist {
    DurHist::new(100, 100_000_000)
}

/// The tracer of one emulated queue.
pub struct QueueRecorder {
    pub sojourn: DurHist,
    /// Per sub-queue (DualPI2: `c`, `l`).
    pub sub: Vec<DurHist>,
    pub marks_interval: u64,
    pub drops_interval: u64,
    /// Per flow id below `per_flow.len()` (scenario runs): sojourn, drops, marks.
    pub per_flow: Vec<FlowQueueRec>,
}

/// One flow's share of a queue.
pub struct FlowQueueRec {
    pub sojourn: Option<DurHist>,
    pub drops: u64,
    pub marks: u64,
}

impl QueueRecorder {
    /// `flows`: how many flow ids get their own statistics (0 in the shell,
    /// where flow ids are hashes).
    pub fn new(subqueues: usize, flows: usize) -> Self {
        QueueRecorder {
            sojourn: sojourn_hist(),
            sub: (0..subqueues).map(|_| sojourn_hist()).collect(),
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
                self.sojourn.record_ns(sojourn.as_nanos());
                if let Some(s) = self.sub.get_mut(usize::from(subqueue)) {
                    s.record_ns(sojourn.as_nanos());
                }
                if let Some(f) = self.per_flow.get_mut(flow as usize) {
                    f.sojourn
                        .get_or_insert_with(sojourn_hist)
                        .record_ns(sojourn.as_nanos());
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

/// Convenience: a [`Dur`] in ms as f64.
pub fn ms(d: Dur) -> f64 {
    d.as_millis_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_has_exact_extremes_and_hdr_quantiles() {
        let mut h = lateness_hist();
        for us in 1..=100u64 {
            h.record_ns(us * 1000);
        }
        let v = h.summary(1e3);
        assert_eq!(v["min"], 1.0);
        assert_eq!(v["max"], 100.0);
        assert_eq!(v["mean"], 50.5);
        let p99 = v["p99"].as_f64().unwrap();
        assert!((p99 - 99.0).abs() < 0.1, "{p99}");
        assert_eq!(h.take_interval(), Some((50_500.0, 100_000.0)));
        assert_eq!(h.take_interval(), None);
    }
}
