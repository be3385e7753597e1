//! Linux HyStart: the slow-start exit kernel Cubic runs (Ha & Rhee, "Taming
//! the elephants: New TCP slow start", Computer Networks 55(9), 2011), as in
//! `net/ipv4/tcp_cubic.c` (`cubictcp_acked`, `hystart_update`,
//! `bictcp_hystart_reset`, `hystart_ack_delay`; Linux 5.7 and later, with
//! `hystart_detect = 3`: both tests). Not RFC 9406 HyStart++ ([`crate::hystart`]):
//! no Conservative Slow Start — a detection sets `ssthresh = cwnd` and the
//! sender goes straight to congestion avoidance.
//!
//! Like [`crate::hystart::HyStartPp`] this module holds the bookkeeping and no
//! window; the controller asks [`HyStart::on_ack`] on every ACK while it is
//! in slow start and leaves slow start when it answers. Per ACK with an RTT
//! sample (`cubictcp_acked`):
//!
//! * `delay_min` follows the smallest sample;
//! * nothing more below `hystart_low_window` = 16 segments;
//! * a round starts when the ACK passes the last round's `end_seq` (the
//!   `SND.NXT` at its start; kept in delivered-byte space, [`Rounds`]):
//!   `round_start = last_ack = now`, the round's minimum RTT and sample count
//!   reset;
//! * **ACK train**: an ACK at most `hystart_ack_delta_us` = 2 ms after the
//!   previous one of the train extends it; once the train spans more than
//!   `(delay_min + ack_delay) / 2` from the round's start (half, because the
//!   sender does not pace: `sk_pacing_status == SK_PACING_NONE`; the
//!   transport does not tell the controller when it paces), slow start ends;
//! * **delay**: the round's minimum RTT over all its samples; from the ninth
//!   sample on, if it exceeds `delay_min + clamp(delay_min / 8, 4 ms, 16 ms)`,
//!   slow start ends.
//!
//! `ack_delay` (`hystart_ack_delay`) is `min(1 ms, 4 · gso_max_size /
//! pacing_rate)`, a cushion for TSO/GRO batching; Linux's pacing rate in slow
//! start is `2 · cwnd / srtt` (`tcp_update_pacing_rate`, `tcp_pacing_ss_ratio
//! = 200`), and `gso_max_size` is 64 KiB (`GSO_LEGACY_MAX_SIZE`).
//!
//! **Not modelled.** `cubictcp_acked` skips samples within 1 s of the start of
//! a Cubic epoch (after a recovery); the controller asks only in slow start,
//! which after a loss happens only after an RTO, when Linux resets the epoch.

use l4slab_core::{Dur, Time};

use crate::hystart::Rounds;

/// `hystart_low_window`: no detection below this many segments of cwnd.
pub const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us`: the largest gap between two ACKs of one train.
pub const ACK_DELTA: Dur = Dur::from_millis(2);
/// `HYSTART_MIN_SAMPLES`: RTT samples of a round before the delay test runs.
pub const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`: lower bound of the delay threshold.
pub const DELAY_THRESH_MIN: Dur = Dur::from_millis(4);
/// `HYSTART_DELAY_MAX`: upper bound of the delay threshold.
pub const DELAY_THRESH_MAX: Dur = Dur::from_millis(16);
/// `hystart_ack_delay`'s cap (`USEC_PER_MSEC`).
pub const ACK_DELAY_MAX: Dur = Dur::from_millis(1);
/// `sk_gso_max_size` (`GSO_LEGACY_MAX_SIZE`), bytes.
pub const GSO_MAX_SIZE: u64 = 65_536;

/// Which test ended slow start (Linux counts them as `TCPHystartTrainDetect`
/// and `TCPHystartDelayDetect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// The ACK train spanned half the minimum RTT.
    AckTrain,
    /// The round's minimum RTT rose above the threshold.
    Delay,
}

/// `HYSTART_DELAY_THRESH(delay_min >> 3)`: `clamp(delay_min / 8, 4 ms, 16 ms)`.
pub fn delay_thresh(delay_min: Dur) -> Dur {
    Dur::from_nanos(delay_min.as_nanos() / 8).clamp(DELAY_THRESH_MIN, DELAY_THRESH_MAX)
}

/// `hystart_ack_delay`: `min(1 ms, 4 · GSO_MAX_SIZE / rate)` for a pacing
/// rate of `2 · cwnd / srtt` (zero before the first RTT sample, as Linux
/// with no pacing rate yet).
pub fn ack_delay(cwnd_bytes: u64, srtt: Dur) -> Dur {
    if cwnd_bytes == 0 || srtt.is_zero() {
        return Dur::ZERO;
    }
    // 4 · GSO / (2 · cwnd / srtt) = 2 · GSO · srtt / cwnd.
    let nanos = (2 * GSO_MAX_SIZE as u128 * srtt.as_nanos() as u128) / cwnd_bytes as u128;
    Dur::from_nanos(nanos.min(ACK_DELAY_MAX.as_nanos() as u128) as u64)
}

/// Linux HyStart's state (`struct bictcp`'s `round_start`, `last_ack`,
/// `end_seq`, `curr_rtt`, `sample_cnt`, `delay_min`). No allocation; O(1)
/// per call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HyStart {
    rounds: Rounds,
    round_start: Time,
    last_ack: Time,
    /// `curr_rtt`: the round's minimum RTT (`None` = Linux's `~0U`).
    curr_rtt: Option<Dur>,
    sample_cnt: u32,
    /// `delay_min`: the smallest RTT sample since the start (or the last RTO).
    delay_min: Option<Dur>,
}

impl HyStart {
    /// `bictcp_hystart_reset` at `cubictcp_init` (or `TCP_CA_Loss`): the first
    /// ACK of new data starts a round.
    pub fn new(now: Time) -> Self {
        HyStart {
            round_start: now,
            last_ack: now,
            ..Self::default()
        }
    }

    /// A data segment left; `in_flight` includes it.
    pub fn on_packet_sent(&mut self, in_flight: u64) {
        self.rounds.on_packet_sent(in_flight);
    }

    /// One ACK in slow start at `now`: `delivered` and `in_flight` after it,
    /// its RTT sample, and the window (bytes, and in segments as the kernel
    /// counts it) and smoothed RTT before it grows the window. Returns the
    /// test that says slow start should end, if one does.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack(
        &mut self,
        now: Time,
        delivered: u64,
        in_flight: u64,
        rtt: Option<Dur>,
        cwnd_bytes: u64,
        cwnd_segments: u64,
        srtt: Dur,
    ) -> Option<Found> {
        self.rounds.observe(delivered, in_flight);
        // cubictcp_acked: "Some calls are for duplicates without timestamps".
        let delay = rtt?.max(Dur::from_micros(1));
        // cubictcp_acked: "first time call or link delay decreases".
        let delay_min = self.delay_min.map_or(delay, |m| m.min(delay));
        self.delay_min = Some(delay_min);
        // cubictcp_acked: hystart_update only once cwnd >= hystart_low_window.
        if cwnd_segments < LOW_WINDOW {
            return None;
        }
        // hystart_update: after(snd_una, end_seq) -> bictcp_hystart_reset.
        if self.rounds.end_round_if_passed() {
            self.round_start = now;
            self.last_ack = now;
            self.curr_rtt = None;
            self.sample_cnt = 0;
        }
        let mut found = None;
        // HYSTART_ACK_TRAIN: "ack-train detection".
        if now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            // threshold = delay_min + hystart_ack_delay; halved when not paced.
            let threshold =
                Dur::from_nanos((delay_min + ack_delay(cwnd_bytes, srtt)).as_nanos() / 2);
            if now.saturating_since(self.round_start) > threshold {
                found = Some(Found::AckTrain);
            }
        }
        // HYSTART_DELAY: every sample may lower the round's minimum; the
        // test runs from the (MIN_SAMPLES + 1)-th sample on.
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if found.is_none() && curr > delay_min + delay_thresh(delay_min) {
            found = Some(Found::Delay);
        }
        found
    }

    /// `delay_min` so far.
    pub fn delay_min(&self) -> Option<Dur> {
        self.delay_min
    }

    /// Rounds started so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.started()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    #[test]
    fn delay_threshold_is_an_eighth_of_delay_min_clamped() {
        assert_eq!(delay_thresh(ms(20)), ms(4));
        assert_eq!(delay_thresh(ms(80)), ms(10));
        assert_eq!(delay_thresh(ms(200)), ms(16));
    }

    #[test]
    fn ack_delay_is_capped_at_one_millisecond() {
        // 2 · 64 KiB · 20 ms / 2.5 MB = 1.05 ms -> 1 ms.
        assert_eq!(ack_delay(2_500_000, ms(20)), ms(1));
        // 2 · 64 KiB · 10 ms / 13.1072 MB = 100 us.
        assert_eq!(ack_delay(13_107_200, ms(10)), Dur::from_micros(100));
        assert_eq!(ack_delay(100_000, Dur::ZERO), Dur::ZERO);
    }

    /// A round of `n` ACKs of 1000 B, `gap` apart, RTT `rtt` each, starting
    /// at `t`; cwnd 20 segments. Returns the index and result of the first detection.
    fn round(
        h: &mut HyStart,
        t: Time,
        delivered: &mut u64,
        n: u64,
        gap: Dur,
        rtt: Dur,
    ) -> Option<(u64, Found)> {
        h.on_packet_sent(n * 1000);
        for i in 0..n {
            *delivered += 1000;
            let now = t + gap * i;
            if let Some(f) = h.on_ack(
                now,
                *delivered,
                (n - 1 - i) * 1000,
                Some(rtt),
                20_000,
                20,
                rtt,
            ) {
                return Some((i, f));
            }
        }
        None
    }

    #[test]
    fn an_ack_train_longer_than_half_the_min_rtt_ends_slow_start() {
        let mut h = HyStart::new(Time::ZERO);
        let mut d = 0;
        // 20 ms RTT, ACKs 1 ms apart: threshold (20 + 1) / 2 = 10.5 ms, so
        // the ACK 11 ms after the round's first one ends slow start.
        let got = round(&mut h, Time::from_millis(20), &mut d, 40, ms(1), ms(20));
        assert_eq!(got, Some((11, Found::AckTrain)));
        // ACKs 3 ms apart never form a train.
        let mut h = HyStart::new(Time::ZERO);
        let mut d = 0;
        assert_eq!(
            round(&mut h, Time::from_millis(20), &mut d, 40, ms(3), ms(20)),
            None
        );
    }

    #[test]
    fn the_round_minimum_rtt_rising_by_the_threshold_ends_slow_start() {
        let mut h = HyStart::new(Time::ZERO);
        let mut d = 0;
        // Sparse ACKs (no train): first round at 20 ms sets delay_min.
        assert_eq!(
            round(&mut h, Time::from_millis(20), &mut d, 20, ms(3), ms(20)),
            None
        );
        // 24 ms is not above 20 + 4 ms.
        assert_eq!(
            round(&mut h, Time::from_millis(100), &mut d, 20, ms(3), ms(24)),
            None
        );
        // 25 ms is: from the ninth sample of the round on.
        let got = round(&mut h, Time::from_millis(200), &mut d, 20, ms(3), ms(25));
        assert_eq!(got, Some((8, Found::Delay)));
        assert_eq!(h.delay_min(), Some(ms(20)));
        assert_eq!(h.rounds(), 3);
    }

    #[test]
    fn nothing_below_the_low_window() {
        let mut h = HyStart::new(Time::ZERO);
        for i in 1..=100u64 {
            let now = Time::from_millis(20) + Dur::from_micros(100) * i;
            let f = h.on_ack(now, i * 1000, 0, Some(ms(40)), 15_000, 15, ms(20));
            assert_eq!(f, None);
        }
        assert_eq!(h.delay_min(), Some(ms(40)));
        assert_eq!(h.rounds(), 0);
    }
}
