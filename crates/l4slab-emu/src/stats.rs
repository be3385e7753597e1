//! What the forwarder measures besides the queues (whose recorder is the
//! bottleneck runtime's, `l4slab_bottleneck::QueueRecorder`, shared
//! with the simulator): its own timing accuracy, actual minus intended
//! release time of every packet. The distributions are [`DurStats`]
//! (l4slab-core): HdrHistogram percentiles with exact count, min, mean and
//! max, and a per-interval mean/max for the series.

pub use l4slab_core::stats::{round6, DurStats};

/// Timing error: 100 ns units up to 10 s.
pub fn lateness_stats() -> DurStats {
    DurStats::new(100, 100_000_000)
}

/// A distribution summary in microseconds (the timing report's unit).
pub fn summary_us(s: &DurStats) -> serde_json::Value {
    s.summary_scaled(1e-3)
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
