//! Distributions of durations: exact min/mean/max and HdrHistogram
//! percentiles, summarised in milliseconds for `summary.json`. Shared by the
//! simulator's recorder (RTT, sojourn) and the applications (frame latency).

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::{Dur, Time};

/// A flow's `goodput_bps` in summary.json (docs/results.md, "The measurement
/// window"): the bytes delivered in the window over the flow's time in it,
/// from the later of its start and the warmup to its completion (or the end
/// of the run); 0 for a flow with no time in the window. One formula for
/// both backends and every kind of flow.
pub fn window_goodput_bps(delivered_in_window: u64, start: Time, warmup: Time, until: Time) -> f64 {
    let active = until.saturating_since(start.max(warmup)).as_secs_f64();
    if active > 0.0 {
        delivered_in_window as f64 * 8.0 / active
    } else {
        0.0
    }
}

/// Samples held back before they go into the histogram together (see [`DurStats::record`]).
const BATCH: usize = 32;

/// The histogram's first size, in units: it grows (by whole power-of-two
/// buckets) as larger values arrive, up to `max_units`.
const FIRST_HIGH: u64 = 1 << 12;

/// Record `units` into `hist`, each run of equal values with one call (an
/// idle queue's sojourns are all zero): the counts are those of one call per
/// value.
fn record_runs(hist: &mut Histogram<u64>, units: &[u64]) {
    let mut rest = units;
    while let Some(&v) = rest.first() {
        let run = rest.iter().take_while(|&&u| u == v).count();
        hist.record_n(v, run as u64)
            .expect("the histogram grows up to max_units");
        rest = &rest[run..];
    }
}

/// Exact min/mean/max plus HdrHistogram percentiles of a duration.
///
/// Cheap to keep by the thousand (one per flow): the histogram starts small
/// and grows only as far as the largest value recorded (a 20 ms RTT in µs
/// takes ~50 KB at 3 digits, where one sized for the whole range up front
/// takes ~170 KB, all of it written), and samples reach it in batches of
/// [`BATCH`], so that with many flows a sample does not cost a cache miss in
/// its flow's histogram: one flow's samples lie close together, and a batch
/// touches the same few counters. Percentiles are exact functions of the
/// counts, so batching changes no result.
pub struct DurStats {
    hist: Histogram<u64>,
    /// Histogram unit in ns (1_000 = µs resolution).
    unit_ns: u64,
    /// Larger values are recorded as this many units.
    max_units: u64,
    pending: [u64; BATCH],
    n_pending: usize,
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
    /// per-flow histograms small: an eighth of the counters of 3).
    pub fn with_precision(unit_ns: u64, max_units: u64, sigfig: u8) -> Self {
        let mut hist = Histogram::new_with_bounds(1, max_units.min(FIRST_HIGH), sigfig)
            .expect("valid histogram bounds");
        hist.auto(true);
        DurStats {
            hist,
            unit_ns,
            max_units,
            pending: [0; BATCH],
            n_pending: 0,
            sum_ns: 0,
            n: 0,
            min: Dur::MAX,
            max: Dur::ZERO,
            int_sum_ns: 0,
            int_n: 0,
            int_max: Dur::ZERO,
        }
    }

    /// Inlined: two samples a packet go through here (a queue's sojourn and
    /// its flow's); the batch's trip into the histogram stays out of line.
    #[inline]
    pub fn record(&mut self, d: Dur) {
        let ns = d.as_nanos();
        self.pending[self.n_pending] = (ns / self.unit_ns).min(self.max_units);
        self.n_pending += 1;
        if self.n_pending == BATCH {
            self.settle();
        }
        self.sum_ns += u128::from(ns);
        self.n += 1;
        self.min = self.min.min(d);
        self.max = self.max.max(d);
        self.int_sum_ns += u128::from(ns);
        self.int_n += 1;
        self.int_max = self.int_max.max(d);
    }

    /// Move the held-back samples into the histogram.
    #[inline(never)]
    fn settle(&mut self) {
        record_runs(&mut self.hist, &self.pending[..self.n_pending]);
        self.n_pending = 0;
    }

    /// The histogram of every sample so far, held-back ones included.
    fn histogram(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        if self.n_pending == 0 {
            return std::borrow::Cow::Borrowed(&self.hist);
        }
        let mut h = self.hist.clone();
        record_runs(&mut h, &self.pending[..self.n_pending]);
        std::borrow::Cow::Owned(h)
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Add `other`'s samples (same resolution and bounds) to this
    /// distribution; the per-interval accumulators are left alone.
    pub fn merge(&mut self, other: &DurStats) {
        assert_eq!(self.unit_ns, other.unit_ns, "merging different resolutions");
        self.settle();
        self.hist
            .add(&*other.histogram())
            .expect("the histogram grows");
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
        self.n_pending = 0;
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

    /// The `q` quantile (0..=1) in ms, as [`DurStats::summary_ms`] reports
    /// its percentiles (for one more, e.g. p95); `None` without samples.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (self.n > 0).then(|| round6(self.at_quantile(&self.histogram(), q) * 1e-6))
    }

    /// The histogram's value at `q`, in ns.
    fn at_quantile(&self, hist: &Histogram<u64>, q: f64) -> f64 {
        hist.value_at_quantile(q) as f64 * self.unit_ns as f64
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
        let hist = self.histogram();
        let q = |p: f64| round6(self.at_quantile(&hist, p) * per_ns);
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

/// Short: the sample count and the exact min/max, not the histogram's buckets
/// (tens of thousands of counters).
impl core::fmt::Debug for DurStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DurStats")
            .field("samples", &self.n)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// The rank of the nearest-rank `pct`th percentile of `n` values (1-based):
/// the ⌈pct/100 · n⌉-th smallest, and at least the first (so the 0th
/// percentile is the smallest). `pct` in whole percent (`0..=100`), computed
/// in integers so the rank is exact. The exact, sample-based percentile the
/// apps report (page loads, a playout's jitter allowance), where
/// [`DurStats`] reads its own from a histogram.
///
/// # Panics
/// If `n` is 0 (no percentile of nothing) or `pct` is above 100.
pub fn nearest_rank(n: usize, pct: u32) -> usize {
    assert!(n > 0 && pct <= 100, "nearest_rank({n}, {pct})");
    (pct as usize * n).div_ceil(100).max(1)
}

/// The nearest-rank `pct`th percentile of `sorted` (ascending, not empty):
/// its [`nearest_rank`]-th smallest value.
pub fn nearest_rank_percentile<T: Copy>(sorted: &[T], pct: u32) -> T {
    sorted[nearest_rank(sorted.len(), pct) - 1]
}

/// Round to 6 decimal places so summaries read well and snapshot stably.
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_are_sample_values() {
        // The NIST/Wikipedia example: 15, 20, 35, 40, 50.
        let xs = [15, 20, 35, 40, 50];
        let p = |pct| nearest_rank_percentile(&xs, pct);
        assert_eq!(
            (p(0), p(5), p(30), p(40), p(50), p(100)),
            (15, 15, 20, 20, 35, 50)
        );
        // ⌈0.95 · 20⌉ = 19 exactly (a float 0.95 · n must not round up to 20).
        assert_eq!(nearest_rank(20, 95), 19);
        assert_eq!((nearest_rank(3, 95), nearest_rank(1, 50)), (3, 1));
    }

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
        // One more percentile, from the same histogram as the summary's.
        assert_eq!(s.quantile_ms(0.99), Some(p99));
        let p95 = s.quantile_ms(0.95).unwrap();
        assert!((p95 - 95.0).abs() <= 0.1, "{p95}");
        assert_eq!(DurStats::new(1_000, 1_000).quantile_ms(0.95), None);
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

    /// The reference: every sample straight into a histogram sized for the
    /// whole range up front, as `DurStats` did before it batched and grew.
    fn reference_quantiles(units: &[u64], max_units: u64, sigfig: u8) -> Vec<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, max_units, sigfig).unwrap();
        for &u in units {
            h.record(u.min(max_units)).unwrap();
        }
        [0.5, 0.9, 0.99, 0.999]
            .iter()
            .map(|&q| h.value_at_quantile(q))
            .collect()
    }

    fn quantiles(s: &DurStats) -> Vec<u64> {
        let h = s.histogram();
        [0.5, 0.9, 0.99, 0.999]
            .iter()
            .map(|&q| h.value_at_quantile(q))
            .collect()
    }

    proptest::proptest! {
        /// Batching and growing change no percentile: whatever the values
        /// (small, past the first size, past `max_units`) and however many
        /// are still held back when asked.
        #[test]
        fn batched_growing_histogram_matches_the_full_size_one(
            us in proptest::collection::vec(0u64..3_000_000, 1..200),
            sigfig in 2u8..=3,
        ) {
            let max_units = 1_000_000;
            let mut s = DurStats::with_precision(1_000, max_units, sigfig);
            for (i, &u) in us.iter().enumerate() {
                s.record(Dur::from_micros(u));
                if i % 37 == 0 {
                    let seen: Vec<u64> = us[..=i].to_vec();
                    proptest::prop_assert_eq!(
                        quantiles(&s),
                        reference_quantiles(&seen, max_units, sigfig)
                    );
                }
            }
            proptest::prop_assert_eq!(quantiles(&s), reference_quantiles(&us, max_units, sigfig));
            proptest::prop_assert_eq!(s.count(), us.len() as u64);
        }

        /// Runs of equal values (an idle queue's zeros), recorded one call
        /// per run: the same counts, extremes and total as one call per value.
        #[test]
        fn runs_of_equal_values_count_as_single_values(
            us in proptest::collection::vec(0u64..4, 1..300),
        ) {
            let mut s = DurStats::with_precision(1_000, 1_000_000, 2);
            let mut h = Histogram::<u64>::new_with_bounds(1, FIRST_HIGH, 2).unwrap();
            h.auto(true);
            for &u in &us {
                s.record(Dur::from_micros(u));
                h.record(u).unwrap();
            }
            let got = s.histogram();
            proptest::prop_assert_eq!(got.len(), h.len());
            proptest::prop_assert_eq!((got.min(), got.max()), (h.min(), h.max()));
            proptest::prop_assert_eq!(got.min_nz(), h.min_nz());
            for v in 0..4 {
                proptest::prop_assert_eq!(got.count_at(v), h.count_at(v));
            }
        }

        /// Merging two batched histograms (each with samples held back) is
        /// the histogram of all their samples.
        #[test]
        fn merging_batched_histograms_keeps_every_sample(
            a in proptest::collection::vec(1u64..500_000, 0..100),
            b in proptest::collection::vec(1u64..5_000_000, 1..100),
        ) {
            let max_units = 1_000_000;
            let (mut sa, mut sb) = (DurStats::new(1_000, max_units), DurStats::new(1_000, max_units));
            a.iter().for_each(|&u| sa.record(Dur::from_micros(u)));
            b.iter().for_each(|&u| sb.record(Dur::from_micros(u)));
            sa.merge(&sb);
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(quantiles(&sa), reference_quantiles(&all, max_units, 3));
        }
    }

    #[test]
    fn clearing_drops_the_samples_still_held_back() {
        let mut s = DurStats::new(1_000, 1_000_000);
        for ms in 1..=(BATCH as u64 + 5) {
            s.record(Dur::from_millis(ms * 100));
        }
        assert!(s.n_pending > 0, "some samples are held back");
        s.clear_totals();
        s.record(Dur::from_millis(2));
        assert_eq!(quantiles(&s), vec![2_000, 2_000, 2_000, 2_000]);
    }

    #[test]
    fn the_histogram_grows_only_as_far_as_the_values() {
        let mut s = DurStats::new(1_000, 1_000_000_000);
        let small = s.hist.distinct_values();
        for _ in 0..BATCH {
            s.record(Dur::from_millis(20));
        }
        let at_20ms = s.hist.distinct_values();
        let full = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3)
            .unwrap()
            .distinct_values();
        assert!(
            small < at_20ms && at_20ms * 3 < full,
            "{small} {at_20ms} {full}"
        );
    }
}
