//! Distributions of durations: exact min/mean/max and HdrHistogram
//! percentiles, summarised in milliseconds for `summary.json`. Shared by the
//! simulator's recorder (RTT, sojourn) and the applications (frame latency).

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::Dur;

/// Exact min/mean/max plus HdrHistogram percentiles of a duration.
pub struct DurStats {
    hist: Histogram<u64>,
    /// Histogram unit in ns (1_000 = µs resolution).
    unit_ns: u64,
    sum_ns: u128,
    n: u64,
    min: Dur,
    max: Dur,
    // Per sampling interval.
    int_sum_ns: u128,
    int_n: u64,
    int_max: Dur,
}

impl DurStats {
    /// `unit_ns`: histogram resolution; values up to `max_units` units are recorded exactly
    /// to 3 significant digits (larger ones are clamped, and still exact in min/mean/max).
    pub fn new(unit_ns: u64, max_units: u64) -> Self {
        Self::with_precision(unit_ns, max_units, 3)
    }

    /// As [`DurStats::new`] with `sigfig` significant digits (2 keeps many
    /// per-flow histograms small: ~70 KB each instead of ~550 KB).
    pub fn with_precision(unit_ns: u64, max_units: u64, sigfig: u8) -> Self {
        DurStats {
            hist: Histogram::new_with_bounds(1, max_units, sigfig).expect("valid histogram bounds"),
            unit_ns,
            sum_ns: 0,
            n: 0,
            min: Dur::MAX,
            max: Dur::ZERO,
            int_sum_ns: 0,
            int_n: 0,
            int_max: Dur::ZERO,
        }
    }

    pub fn record(&mut self, d: Dur) {
        let ns = d.as_nanos();
        let units = (ns / self.unit_ns).min(self.hist.high());
        self.hist.record(units).expect("clamped into range");
        self.sum_ns += u128::from(ns);
        self.n += 1;
        self.min = self.min.min(d);
        self.max = self.max.max(d);
        self.int_sum_ns += u128::from(ns);
        self.int_n += 1;
        self.int_max = self.int_max.max(d);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Add `other`'s samples (same resolution and bounds) to this
    /// distribution; the per-interval accumulators are left alone.
    pub fn merge(&mut self, other: &DurStats) {
        assert_eq!(self.unit_ns, other.unit_ns, "merging different resolutions");
        self.hist.add(&other.hist).expect("same bounds");
        self.sum_ns += other.sum_ns;
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forget every sample in the totals (histogram, count, min, mean, max),
    /// as at the start of a measurement window; the per-interval
    /// accumulators are left alone, so the interval running across the
    /// window's start still reports all its samples.
    pub fn clear_totals(&mut self) {
        self.hist.reset();
        self.sum_ns = 0;
        self.n = 0;
        self.min = Dur::MAX;
        self.max = Dur::ZERO;
    }

    /// Mean and max over the interval since the last call, in ms; `None` if no samples.
    pub fn take_interval(&mut self) -> Option<(f64, f64)> {
        if self.int_n == 0 {
            return None;
        }
        let mean = self.int_sum_ns as f64 / self.int_n as f64 * 1e-6;
        let max = self.int_max.as_millis_f64();
        self.int_sum_ns = 0;
        self.int_n = 0;
        self.int_max = Dur::ZERO;
        Some((mean, max))
    }

    /// `{min, mean, p50, p90, p99, p999, max}` in milliseconds, or `null` without samples.
    pub fn summary_ms(&self) -> Value {
        self.summary_scaled(1e-6)
    }

    /// As [`DurStats::summary_ms`] with the values in nanoseconds times
    /// `per_ns` (1e-6: milliseconds; 1e-3: microseconds, as the emulator's
    /// timing report).
    pub fn summary_scaled(&self, per_ns: f64) -> Value {
        if self.n == 0 {
            return Value::Null;
        }
        let q =
            |p: f64| round6(self.hist.value_at_quantile(p) as f64 * self.unit_ns as f64 * per_ns);
        json!({
            "min": round6(self.min.as_nanos() as f64 * per_ns),
            "mean": round6(self.sum_ns as f64 / self.n as f64 * per_ns),
            "p50": q(0.50),
            "p90": q(0.90),
            "p99": q(0.99),
            "p999": q(0.999),
            "max": round6(self.max.as_nanos() as f64 * per_ns),
            "samples": self.n,
        })
    }
}

/// Round to 6 decimal places so summaries read well and snapshot stably.
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dur_stats_percentiles_and_exact_mean() {
        let mut s = DurStats::new(1_000, 1_000_000_000);
        for ms in 1..=100 {
            s.record(Dur::from_millis(ms));
        }
        let v = s.summary_ms();
        assert_eq!(v["min"], 1.0);
        assert_eq!(v["max"], 100.0);
        assert_eq!(v["mean"], 50.5);
        // HdrHistogram with 3 significant digits: p50 of 1..=100 ms is 50 ms (±0.1 %).
        let p50 = v["p50"].as_f64().unwrap();
        assert!((p50 - 50.0).abs() <= 0.05, "{p50}");
        let p99 = v["p99"].as_f64().unwrap();
        assert!((p99 - 99.0).abs() <= 0.1, "{p99}");
        assert_eq!(s.take_interval(), Some((50.5, 100.0)));
        assert_eq!(s.take_interval(), None);
    }

    #[test]
    fn clearing_the_totals_keeps_the_interval() {
        let mut s = DurStats::new(1_000, 1_000_000_000);
        s.record(Dur::from_millis(100));
        s.record(Dur::from_millis(1));
        s.clear_totals();
        assert_eq!(s.count(), 0);
        assert_eq!(s.summary_ms(), Value::Null);
        s.record(Dur::from_millis(3));
        s.record(Dur::from_millis(5));
        let v = s.summary_ms();
        assert_eq!(v["samples"], 2);
        assert_eq!(v["min"], 3.0);
        assert_eq!(v["max"], 5.0);
        assert_eq!(v["mean"], 4.0);
        let p99 = v["p99"].as_f64().unwrap();
        assert!((p99 - 5.0).abs() <= 0.01, "{p99}");
        // The interval saw all four samples.
        assert_eq!(s.take_interval(), Some((27.25, 100.0)));
    }

    #[test]
    fn merged_stats_are_the_stats_of_all_samples() {
        // 1..=50 ms and 51..=100 ms merged = 1..=100 ms; in µs units 1000x.
        let (mut a, mut b) = (
            DurStats::new(1_000, 1_000_000_000),
            DurStats::new(1_000, 1_000_000_000),
        );
        for ms in 1..=50 {
            a.record(Dur::from_millis(ms));
            b.record(Dur::from_millis(ms + 50));
        }
        a.merge(&b);
        let v = a.summary_scaled(1e-3);
        assert_eq!(v["samples"], 100);
        assert_eq!(v["min"], 1_000.0);
        assert_eq!(v["max"], 100_000.0);
        assert_eq!(v["mean"], 50_500.0);
        let p99 = v["p99"].as_f64().unwrap();
        assert!((p99 - 99_000.0).abs() <= 100.0, "{p99}");
    }
}
