//! A cellular link replayed from a mahimahi packet-delivery trace
//! ([`TraceRate`], a [`RateModel`]).
//!
//! Format (mahimahi `README`, `src/frontend/link_queue.cc`): one integer per
//! line, a millisecond timestamp from the start of the trace; each line is
//! one *delivery opportunity* of [`OPPORTUNITY_BYTES`] = 1504 bytes (mahimahi
//! `PACKET_SIZE`, "default max TUN payload"). Several lines with the same
//! timestamp are several opportunities in that millisecond.
//!
//! Semantics, as mahimahi's `LinkQueue`:
//! * an opportunity is a **byte budget**: a packet may be split across
//!   consecutive opportunities, and several small packets may share one;
//! * an opportunity that comes while the queue is **empty is wasted** (not
//!   banked): a packet that starts at `start` uses only opportunities at or
//!   after `start`, plus what is left of the one the previous packet ended
//!   in if it starts at that very instant (it was waiting in the queue);
//! * at the end of the file the trace **repeats**: the next cycle's
//!   timestamps are offset by the last timestamp (`base_timestamp +=
//!   schedule.back()`), so a final line equal to a first line of `0` are one
//!   instant.
//!
//! A packet's transmission ends at the opportunity that delivers its last
//! byte; the link's [`Link`](crate::Link) then takes the next packet at that
//! same instant. Deviations: mahimahi rejects packets over 1504 bytes; here
//! they simply span opportunities. Timestamps are exact milliseconds, as in
//! the file.

use std::sync::Arc;

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{Rate, Time};

use crate::rate::RateModel;

/// `rate = { trace = "..." }`: the trace a link replays (required).
pub const TRACE: Param = Param {
    name: "trace",
    aliases: &[],
    linux: "mm-link UPLINK-TRACE DOWNLINK-TRACE",
    kind: Kind::Custom("a shipped trace's name, or a path with a `/`"),
    default: ParamValue::Unset {
        example: "\"TMobile-LTE-short.down\"",
    },
    source: "required",
    doc: "the delivery trace the link replays; its mean rate converts a time buffer",
};

/// The keys of a link's `rate = { ... }` table, read by their declarations
/// in the scenario layer.
pub const PARAMS: &[Param] = &[TRACE];

/// Bytes per delivery opportunity (mahimahi `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// Why a trace file was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The line's text is not quoted: the file may be anything a user pointed at.
    #[error("line {line} is not a millisecond timestamp (a non-negative integer)")]
    NotANumber { line: usize },
    #[error("line {line}: timestamp {ms} is before the previous one ({prev}); timestamps must not decrease")]
    Decreasing { line: usize, ms: u64, prev: u64 },
    #[error("the trace has no delivery opportunities")]
    Empty,
    #[error("the last timestamp is 0 ms, so the trace cannot repeat; it must span at least 1 ms")]
    ZeroLength,
}

/// A parsed trace: opportunity timestamps in ms, non-decreasing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    ms: Vec<u64>,
}

impl Trace {
    /// Parse mahimahi trace text (blank lines are ignored).
    ///
    /// # Errors
    /// [`TraceError`] naming the first bad line.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut ms = Vec::new();
        let mut prev = 0;
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            if t.is_empty() {
                continue;
            }
            let v: u64 = t
                .parse()
                .map_err(|_| TraceError::NotANumber { line: i + 1 })?;
            if v < prev {
                return Err(TraceError::Decreasing {
                    line: i + 1,
                    ms: v,
                    prev,
                });
            }
            prev = v;
            ms.push(v);
        }
        match ms.last() {
            None => Err(TraceError::Empty),
            Some(0) => Err(TraceError::ZeroLength),
            Some(_) => Ok(Trace { ms }),
        }
    }

    /// Number of opportunities per cycle.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// Length of one cycle in ms (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        *self.ms.last().expect("non-empty")
    }

    /// Long-run average rate: `opportunities * 1504 B * 8 / period`.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.ms.len() as u128 * u128::from(OPPORTUNITY_BYTES) * 8 * 1000;
        Rate::from_bps((bits / u128::from(self.period_ms())) as u64)
    }
}

/// Replays a [`Trace`] as a [`RateModel`].
#[derive(Clone, Debug)]
pub struct TraceRate {
    trace: Arc<Trace>,
    /// Cycle and index of the next unused opportunity.
    cycle: u64,
    idx: usize,
    /// Bytes left in the last opportunity used, and its time.
    leftover: u32,
    leftover_at: Time,
}

impl TraceRate {
    pub fn new(trace: Arc<Trace>) -> Self {
        TraceRate {
            trace,
            cycle: 0,
            idx: 0,
            leftover: 0,
            leftover_at: Time::ZERO,
        }
    }

    fn time_of(&self, cycle: u64, idx: usize) -> Time {
        Time::from_millis(cycle * self.trace.period_ms() + self.trace.ms[idx])
    }

    /// Move the cursor to the first opportunity at or after `start`
    /// (skipped ones are wasted: the queue was empty).
    fn seek(&mut self, start: Time) {
        if self.time_of(self.cycle, self.idx) >= start {
            return;
        }
        let period_ns = self.trace.period_ms() * 1_000_000;
        let mut cycle = start.as_nanos() / period_ns;
        let within = start.as_nanos() - cycle * period_ns;
        let mut idx = self.trace.ms.partition_point(|&m| m * 1_000_000 < within);
        if idx == self.trace.ms.len() {
            cycle += 1;
            idx = 0;
        }
        // Never move backwards (the cursor may be ahead within this cycle).
        if (cycle, idx) > (self.cycle, self.idx) {
            self.cycle = cycle;
            self.idx = idx;
        }
    }

    fn step(&mut self) {
        self.idx += 1;
        if self.idx == self.trace.ms.len() {
            self.idx = 0;
            self.cycle += 1;
        }
    }
}

impl RateModel for TraceRate {
    fn tx_done(&mut self, start: Time, bytes: u32) -> Time {
        let mut need = bytes;
        // What is left of the opportunity the previous packet ended in, if
        // this packet was already waiting at that instant.
        if self.leftover > 0 && self.leftover_at == start {
            let take = need.min(self.leftover);
            need -= take;
            self.leftover -= take;
            if need == 0 {
                return start;
            }
        }
        self.leftover = 0;
        self.seek(start);
        loop {
            let t = self.time_of(self.cycle, self.idx);
            self.step();
            let take = need.min(OPPORTUNITY_BYTES);
            need -= take;
            if need == 0 {
                self.leftover = OPPORTUNITY_BYTES - take;
                self.leftover_at = t;
                return t;
            }
        }
    }

    fn nominal_rate(&self) -> Option<Rate> {
        Some(self.trace.mean_rate())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> TraceRate {
        TraceRate::new(Arc::new(Trace::parse(text).unwrap()))
    }

    #[test]
    fn one_opportunity_per_ms_is_12_mbit() {
        // mahimahi README: a file containing just "1" is 12 Mbit/s (at 1500 B).
        let t = Trace::parse("1\n").unwrap();
        // 1504 B * 8 / 1 ms = 12.032 Mbit/s.
        assert_eq!(t.mean_rate(), Rate::from_bps(12_032_000));
        let mut m = model("1\n");
        // Back to back 1504 B packets: one per ms, at 1, 2, 3 ms (the trace repeats every ms).
        let mut t0 = Time::ZERO;
        for k in 1..=3 {
            t0 = m.tx_done(t0, 1504);
            assert_eq!(t0, Time::from_millis(k));
        }
    }

    #[test]
    fn opportunities_are_byte_budgets() {
        // Two opportunities at 5 ms, one at 7 ms, period 7 ms.
        let mut m = model("5\n5\n7\n");
        // 1000 B starting at 0: first opportunity, at 5 ms; 504 B left over.
        assert_eq!(m.tx_done(Time::ZERO, 1000), Time::from_millis(5));
        // Next packet waiting (starts at 5 ms): 400 B fit in the leftover.
        assert_eq!(m.tx_done(Time::from_millis(5), 400), Time::from_millis(5));
        // 2000 B: 104 B left + second 5 ms opportunity (1504) + 392 B at 7 ms.
        assert_eq!(m.tx_done(Time::from_millis(5), 2000), Time::from_millis(7));
    }

    #[test]
    fn opportunities_while_idle_are_wasted_and_the_trace_repeats() {
        let mut m = model("2\n4\n6\n");
        assert_eq!(m.tx_done(Time::ZERO, 100), Time::from_millis(2));
        // Idle until 4.5 ms: the leftover of 2 ms and the 4 ms opportunity are lost.
        assert_eq!(
            m.tx_done(Time::from_micros(4_500), 100),
            Time::from_millis(6)
        );
        // After the end (6 ms), the next cycle starts at 6 ms: 8, 10, 12 ms.
        assert_eq!(
            m.tx_done(Time::from_micros(6_100), 1504),
            Time::from_millis(8)
        );
        // Far in the future: cycle 10 starts at 60 ms; first opportunity >= 61 ms is 62 ms.
        assert_eq!(
            m.tx_done(Time::from_millis(61), 1504),
            Time::from_millis(62)
        );
        // Exactly at an opportunity instant: it is usable.
        assert_eq!(
            m.tx_done(Time::from_millis(64), 1504),
            Time::from_millis(64)
        );
    }

    #[test]
    fn bad_traces_are_refused_with_the_line() {
        assert_eq!(Trace::parse(""), Err(TraceError::Empty));
        assert_eq!(Trace::parse("0\n0\n"), Err(TraceError::ZeroLength));
        assert_eq!(
            Trace::parse("1\nx\n"),
            Err(TraceError::NotANumber { line: 2 })
        );
        assert_eq!(
            Trace::parse("5\n3\n"),
            Err(TraceError::Decreasing {
                line: 2,
                ms: 3,
                prev: 5
            })
        );
    }

    #[test]
    fn a_saturated_link_delivers_the_mean_rate() {
        // 3 opportunities in a 10 ms cycle: 3 * 1504 * 8 / 10 ms = 3.6096 Mbit/s.
        let mut m = model("1\n1\n10\n");
        let mut t = Time::ZERO;
        let mut bytes = 0u64;
        while t < Time::from_secs(1) {
            t = m.tx_done(t, 1500);
            bytes += 1500;
        }
        let rate = bytes as f64 * 8.0 / t.as_secs_f64();
        assert!((rate - 3_609_600.0).abs() / 3_609_600.0 < 0.01, "{rate}");
    }
}
