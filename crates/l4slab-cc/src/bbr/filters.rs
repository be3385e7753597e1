//! Windowed extremum filters for BBR's path model.
//!
//! * [`WindowedFilter`] — Kathleen Nichols' windowed min/max tracker, as
//!   Linux `lib/win_minmax.c` implements it: the best, second-best and
//!   third-best samples, spread over the window, in O(1) time and space per
//!   update. It is exact when the data is monotonic and otherwise errs by at
//!   most the value of a sample a quarter/half window old (the header comment
//!   of `win_minmax.c`). BBR v1 uses it for `BtlBw` (time = round count,
//!   window 10 rounds).
//! * [`CycleMaxFilter`] — BBRv3's `BBR.max_bw` filter: the maximum over the
//!   current and the previous ProbeBW cycle. draft-ietf-ccwg-bbr-06 §5.5.6:
//!   "BBR.cycle_count only needs to be tracked with a single bit, since the
//!   BBR.max_bw filter only needs to track samples from two time slots"
//!   (Linux BBRv3 keeps `bw_hi[2]` the same way).
//! * [`AckAggregation`] — `extra_acked`, the data ACKed beyond what the
//!   bandwidth estimate predicts, as Linux `bbr_update_ack_aggregation`
//!   computes it in BBR v1 and BBRv3 alike: a max over two slots of
//!   `win_rtts` rounds each (5-10 rounds), over one round in BBRv3's Startup.
//!
//! Times are a caller-chosen virtual clock (round or cycle counts) that must
//! never go backwards; values are plain `u64` (bits/s or bytes).

use core::marker::PhantomData;

use l4slab_core::{Rate, Time};

/// One `(time, value)` sample (Linux `struct minmax_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

/// Which extreme a [`WindowedFilter`] keeps.
pub trait Extreme {
    /// `a` is at least as good as `b` (`>=` for a max filter, `<=` for a min filter).
    fn at_least_as_good(a: u64, b: u64) -> bool;
}

/// Keep the maximum ([`MaxFilter`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

/// Keep the minimum ([`MinFilter`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

impl Extreme for Max {
    fn at_least_as_good(a: u64, b: u64) -> bool {
        a >= b
    }
}

impl Extreme for Min {
    fn at_least_as_good(a: u64, b: u64) -> bool {
        a <= b
    }
}

/// Windowed extremum over the last `win` time units (Linux `struct minmax`).
#[derive(Clone, Copy, Debug)]
pub struct WindowedFilter<E> {
    /// Best, 2nd best and 3rd best, with `s[0].t <= s[1].t <= s[2].t`.
    s: [Sample; 3],
    _kind: PhantomData<E>,
}

/// Windowed maximum.
pub type MaxFilter = WindowedFilter<Max>;
/// Windowed minimum.
pub type MinFilter = WindowedFilter<Min>;

impl<E: Extreme> WindowedFilter<E> {
    /// A filter holding the single sample `(t, v)` (Linux `minmax_reset`).
    pub fn new(t: u64, v: u64) -> Self {
        WindowedFilter {
            s: [Sample { t, v }; 3],
            _kind: PhantomData,
        }
    }

    /// Forget everything and hold `(t, v)` (Linux `minmax_reset`).
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// The windowed extremum (Linux `minmax_get`).
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Add a measurement `v` taken at time `t` and return the new extremum
    /// over `(t - win, t]` (Linux `minmax_running_max` / `minmax_running_min`).
    ///
    /// # Panics
    /// If `t` is earlier than the newest sample (the clock went backwards).
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        assert!(
            t >= self.s[2].t,
            "windowed filter time went backwards ({t} < {})",
            self.s[2].t
        );
        let val = Sample { t, v };
        // win_minmax.c: "found new max?" or "nothing left in window?" -> reset.
        if E::at_least_as_good(v, self.s[0].v) || t - self.s[2].t > win {
            return self.reset(t, v);
        }
        if E::at_least_as_good(v, self.s[1].v) {
            self.s[1] = val;
            self.s[2] = val;
        } else if E::at_least_as_good(v, self.s[2].v) {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// Linux `minmax_subwin_update`: age the choices as time advances.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t - self.s[0].t;
        if dt > win {
            // "Passed entire window without a new val so make 2nd choice the
            // new val & 3rd choice the new 2nd choice" — possibly twice.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t - self.s[0].t > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter window without a new choice: take a 2nd choice from
            // the second quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half a window: take a 3rd choice from the last half.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

/// Maximum over two consecutive slots of a cycle counter: the current ProbeBW
/// cycle and the previous one (draft-ietf-ccwg-bbr-06 §5.5.5-§5.5.6,
/// `MaxBwFilterLen = 2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CycleMaxFilter {
    /// `[previous cycle, current cycle]`.
    slots: [u64; 2],
}

impl CycleMaxFilter {
    /// The maximum over the current and the previous cycle.
    pub fn get(&self) -> u64 {
        self.slots[0].max(self.slots[1])
    }

    /// A sample in the current cycle.
    pub fn update(&mut self, v: u64) -> u64 {
        self.slots[1] = self.slots[1].max(v);
        self.get()
    }

    /// draft §5.5.6 `AdvanceMaxBwFilter()`: `cycle_count++` — the current
    /// cycle becomes the previous one, the oldest is forgotten. As Linux
    /// BBRv3 `bbr_advance_max_bw_filter`: "if (!bbr->bw_hi[1]) return; /* no
    /// samples in this window; remember old window */".
    pub fn advance(&mut self) {
        if self.slots[1] == 0 {
            return;
        }
        self.slots[0] = self.slots[1];
        self.slots[1] = 0;
    }
}

/// Linux `bbr_update_ack_aggregation` (tcp_bbr.c, BBR v1 and google/bbr v3):
/// the excess of data (S)ACKed over `bw * epoch` since the start of the
/// current ACK epoch, kept as the maximum over two slots of rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckAggregation {
    /// `extra_acked[2]`, bytes.
    slots: [u64; 2],
    /// `extra_acked_win_rtts`: age of the current slot, in rounds.
    win_rtts: u32,
    /// `extra_acked_win_idx`.
    idx: usize,
    /// `ack_epoch_mstamp`.
    epoch_start: Time,
    /// `ack_epoch_acked`, bytes.
    epoch_acked: u64,
}

impl AckAggregation {
    /// `bbr_extra_acked`: "max extra acked in past k-2k round trips".
    pub fn get(&self) -> u64 {
        self.slots[0].max(self.slots[1])
    }

    /// Starts a new ACK epoch (`bbr_init`; `CA_EVENT_TX_START` after idle).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_start = now;
        self.epoch_acked = 0;
    }

    /// One ACK with a valid rate sample: `acked` bytes newly (S)ACKed,
    /// `win_rtts` the slot length in rounds (`bbr_extra_acked_win_rtts`, or 1
    /// in BBRv3's Startup), `bw` the estimate, `cwnd` the cap, `mss` the size
    /// of Linux's packet counters.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        now: Time,
        round_start: bool,
        win_rtts: u32,
        bw: Rate,
        acked: u64,
        cwnd: u64,
        mss: u64,
    ) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1f);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.idx ^= 1;
                self.slots[self.idx] = 0;
            }
        }
        // "Compute how many packets we expected to be delivered over epoch."
        let mut expected = bw.bytes_in(now.saturating_since(self.epoch_start));
        // "Reset the aggregation epoch if ACK rate is below expected rate or
        // significantly large no. of ack received since epoch"
        // (bbr_ack_epoch_acked_reset_thresh = 2^20 packets).
        let reset_thresh = (1u64 << 20) * mss;
        if self.epoch_acked <= expected || self.epoch_acked + acked >= reset_thresh {
            self.restart_epoch(now);
            expected = 0;
        }
        // "Compute excess data delivered, beyond what was expected."
        self.epoch_acked = (self.epoch_acked + acked).min(reset_thresh - 1);
        let extra = (self.epoch_acked - expected).min(cwnd);
        let slot = &mut self.slots[self.idx];
        *slot = (*slot).max(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_maximum_replaces_everything() {
        let mut f = MaxFilter::new(0, 10);
        assert_eq!(f.update(10, 1, 5), 10);
        assert_eq!(f.update(10, 2, 12), 12);
        assert_eq!(f.s, [Sample { t: 2, v: 12 }; 3]);
    }

    #[test]
    fn a_maximum_expires_once_it_is_more_than_win_old() {
        // win = 10: a sample at t = 0 is still inside at t = 10 (10 - 0 is
        // not > 10) and gone at t = 11. Decreasing samples fill the 2nd and
        // 3rd choices on the way: at t = 3 (dt 3 > 10/4 = 2) the 2nd choice
        // becomes (3, 97); at t = 6 (dt 6 > 10/2 = 5) the 3rd becomes (6, 94).
        let mut f = MaxFilter::new(0, 100);
        for t in 1..=10 {
            assert_eq!(f.update(10, t, 100 - t), 100, "t = {t}");
        }
        assert_eq!(f.s[1], Sample { t: 3, v: 97 });
        assert_eq!(f.s[2], Sample { t: 6, v: 94 });
        // t = 11: dt = 11 > 10 -> the 2nd choice (97) takes over.
        assert_eq!(f.update(10, 11, 89), 97);
        // t = 14: 14 - 3 = 11 > 10 -> the 3rd choice (94) takes over.
        assert_eq!(f.update(10, 14, 86), 94);
    }

    #[test]
    fn nothing_left_in_the_window_resets() {
        let mut f = MaxFilter::new(0, 100);
        // More than a whole window since the newest (3rd) choice: reset.
        assert_eq!(f.update(10, 11, 1), 1);
        assert_eq!(f.s, [Sample { t: 11, v: 1 }; 3]);
    }

    #[test]
    fn bounded_by_the_window_for_a_decreasing_series() {
        // Compare with a brute-force maximum over the samples at most `win`
        // old (Linux keeps a sample while `t - s.t <= win`).
        let win = 8;
        let vals: Vec<u64> = (0..60).map(|i| 1000 - 7 * i).collect();
        let mut f = MaxFilter::new(0, vals[0]);
        for (t, &v) in vals.iter().enumerate().skip(1) {
            let t = t as u64;
            let got = f.update(win, t, v);
            let lo = t.saturating_sub(win) as usize;
            let brute = vals[lo..=t as usize].iter().copied().max().unwrap();
            // Nichols' filter may under-report by its sub-window granularity on
            // decreasing data, but never reports a value older than the window
            // nor less than the newest sample.
            assert!(got >= v && got <= brute, "t={t}: {got} vs {brute}");
        }
    }

    #[test]
    fn min_filter_mirrors_max() {
        let mut f = MinFilter::new(0, 50);
        assert_eq!(f.update(10, 1, 60), 50);
        assert_eq!(f.update(10, 2, 40), 40);
        for t in 3..=12 {
            f.update(10, t, 45);
        }
        // (2, 40) is 10 old at t = 12: still in.
        assert_eq!(f.get(), 40);
        assert_eq!(f.update(10, 13, 45), 45);
    }

    #[test]
    #[should_panic(expected = "time went backwards")]
    fn time_must_not_go_backwards() {
        let mut f = MaxFilter::new(5, 1);
        f.update(10, 4, 1);
    }

    #[test]
    fn cycle_filter_keeps_two_cycles() {
        let mut f = CycleMaxFilter::default();
        f.update(10);
        f.update(7);
        assert_eq!(f.get(), 10);
        f.advance(); // cycle 1: 10 is from the previous cycle
        f.update(4);
        assert_eq!(f.get(), 10);
        f.advance(); // cycle 2: 10 is two cycles old
        assert_eq!(f.get(), 4);
        // A cycle without samples keeps the old window (Linux v3).
        f.advance();
        assert_eq!(f.get(), 4);
        f.advance();
        assert_eq!(f.get(), 4);
    }

    #[test]
    fn ack_aggregation_keeps_the_max_of_two_slots() {
        let mss = 1000;
        let bw = Rate::from_bytes_per(10_000, l4slab_core::Dur::from_millis(10)).unwrap(); // 1 MB/s
        let mut a = AckAggregation::default();
        a.restart_epoch(Time::ZERO);
        // 30 kB acked at once after 10 ms: 10 kB expected, but the epoch
        // restarts (nothing acked yet), so the whole 30 kB is excess.
        a.update(Time::from_millis(10), false, 5, bw, 30_000, 1_000_000, mss);
        assert_eq!(a.get(), 30_000);
        // Capped by cwnd.
        a.update(Time::from_millis(10), false, 5, bw, 30_000, 40_000, mss);
        assert_eq!(a.get(), 40_000);
        // Five round starts later the slot flips; the old max is kept in the
        // other slot, and forgotten five rounds after that.
        for _ in 0..5 {
            a.update(Time::from_millis(1000), true, 5, bw, 1, 1_000_000, mss);
        }
        assert_eq!(a.get(), 40_000);
        for _ in 0..5 {
            a.update(Time::from_millis(2000), true, 5, bw, 1, 1_000_000, mss);
        }
        assert!(a.get() < 40_000, "{}", a.get());
    }
}
