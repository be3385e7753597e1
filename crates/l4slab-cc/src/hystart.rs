//! HyStart++ (RFC 9406): leave the initial slow start on a rise in the
//! round-trip time instead of on the first loss, through a few rounds of
//! Conservative Slow Start (CSS) that undo the exit if the rise was jitter.
//!
//! This module holds the algorithm's bookkeeping — rounds, per-round minimum
//! RTT, the exit and re-entry tests and the constants of RFC 9406 §4.3 — and
//! no window: the controller that uses it (see [`crate::cubic`]) owns `cwnd`,
//! its states and their transitions, and asks this module the two questions of
//! RFC 9406 §4.2 on every ACK:
//!
//! * in slow start, [`HyStartPp::delay_increase`]: has this round's minimum
//!   RTT risen by `RttThresh` over the last round's? (→ enter CSS);
//! * in CSS, [`HyStartPp::rtt_fell_below`]: has it fallen back below the
//!   baseline taken on entry? (→ the exit was spurious, resume slow start).
//!
//! **Rounds.** RFC 9406 §4.2 counts rounds in sequence space: `windowEnd` is
//! set to `SND.NXT` and the round ends "when windowEnd is ACKed". A controller
//! sees no sequence numbers, so the same point is kept in *delivered-byte*
//! space: `windowEnd = delivered + bytes in flight` (every byte sent so far is
//! delivered once `delivered` passes it — retransmissions and losses make this
//! an approximation, irrelevant during an initial slow start without loss).
//! The round ends on the first ACK that delivers data *beyond* that point,
//! i.e. data sent in the new round — Linux's HyStart does the same with
//! `after(snd_una, end_seq)` (`tcp_cubic.c`, `bictcp_acked`). The ACK that
//! starts a round contributes the first RTT sample of that round.
//!
//! **Not implemented.** Using HyStart++ after an RTO or for the restart window
//! after idle (RFC 9406 §4.2 says SHOULD only for the initial slow start and
//! MAY for restarts; we do the former only); the pacing-dependent choice of
//! `L` is the controller's (its configuration carries `L`).

use l4slab_core::Dur;

/// RFC 9406 §4.3: lower bound of `RttThresh`.
pub const MIN_RTT_THRESH: Dur = Dur::from_millis(4);
/// RFC 9406 §4.3: upper bound of `RttThresh`.
pub const MAX_RTT_THRESH: Dur = Dur::from_millis(16);
/// RFC 9406 §4.3: `RttThresh = lastRoundMinRTT / MIN_RTT_DIVISOR`, clamped.
pub const MIN_RTT_DIVISOR: u64 = 8;
/// RFC 9406 §4.3: RTT samples a round needs before the delay tests run.
pub const N_RTT_SAMPLE: u32 = 8;
/// RFC 9406 §4.3: CSS grows cwnd this many times slower than slow start.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 §4.3: rounds of CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;
/// RFC 9406 §4.3: `L`, the per-ACK growth limit in segments, for a sender
/// that does not pace ("L = infinity if paced, L = 8 if non-paced").
pub const NON_PACED_L: u64 = 8;

/// RFC 9406 §4.2: `RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT /
/// MIN_RTT_DIVISOR, MAX_RTT_THRESH))`.
pub fn rtt_thresh(last_round_min_rtt: Dur) -> Dur {
    let eighth = Dur::from_nanos(last_round_min_rtt.as_nanos() / MIN_RTT_DIVISOR);
    eighth.min(MAX_RTT_THRESH).max(MIN_RTT_THRESH)
}

/// Rounds in delivered-byte space (see the module documentation): RFC 9406
/// §4.2's `windowEnd`, and Linux HyStart's `end_seq` (`tcp_cubic.c`,
/// `bictcp_hystart_reset`: `end_seq = snd_nxt`; a round ends when
/// `after(snd_una, end_seq)`). Shared by [`HyStartPp`] and
/// [`crate::hystart_linux::HyStart`]. O(1) per call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rounds {
    /// `windowEnd` / `end_seq` in delivered-byte space.
    window_end: u64,
    /// Highest `delivered + in_flight` seen: our `SND.NXT`.
    sent_end: u64,
    /// `delivered` at the last ACK, to place sends made between ACKs.
    last_delivered: u64,
    /// Rounds started so far.
    started: u64,
}

impl Rounds {
    /// A data segment left; `in_flight` includes it. Moves our `SND.NXT`.
    pub fn on_packet_sent(&mut self, in_flight: u64) {
        self.sent_end = self
            .sent_end
            .max(self.last_delivered.saturating_add(in_flight));
    }

    /// An ACK left `delivered` bytes delivered and `in_flight` outstanding.
    /// Returns `true` if it ends the round (it delivers data beyond the
    /// round's end, Linux `after()`); the next round then ends at `SND.NXT`.
    pub fn on_ack(&mut self, delivered: u64, in_flight: u64) -> bool {
        self.observe(delivered, in_flight);
        self.end_round_if_passed()
    }

    /// The bookkeeping half of [`Rounds::on_ack`]: where `SND.UNA` and
    /// `SND.NXT` are, without ending a round (Linux HyStart tests for the
    /// round's end only on the ACKs it examines).
    pub fn observe(&mut self, delivered: u64, in_flight: u64) {
        self.last_delivered = delivered;
        self.sent_end = self.sent_end.max(delivered.saturating_add(in_flight));
    }

    /// The test half of [`Rounds::on_ack`], for the last ACK observed.
    pub fn end_round_if_passed(&mut self) -> bool {
        let new_round = self.last_delivered > self.window_end;
        if new_round {
            self.window_end = self.sent_end;
            self.started += 1;
        }
        new_round
    }

    /// Rounds started so far.
    pub fn started(&self) -> u64 {
        self.started
    }
}

/// Round and RTT bookkeeping of RFC 9406 §4.2 (the variables
/// `windowEnd`, `lastRoundMinRTT`, `currentRoundMinRTT`, `rttSampleCount`).
/// `None` stands for the RFC's "infinity". No allocation; O(1) per call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HyStartPp {
    /// `windowEnd` (see [`Rounds`]).
    rounds: Rounds,
    last_round_min_rtt: Option<Dur>,
    current_round_min_rtt: Option<Dur>,
    rtt_sample_count: u32,
}

impl HyStartPp {
    /// RFC 9406 §4.2 initialisation: both minima "infinity", no samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// A data segment left; `in_flight` includes it. Moves our `SND.NXT`.
    pub fn on_packet_sent(&mut self, in_flight: u64) {
        self.rounds.on_packet_sent(in_flight);
    }

    /// Bookkeeping for one ACK: `delivered` is the connection's delivered-byte
    /// count after it, `in_flight` the bytes still outstanding, `rtt` its RTT
    /// sample. Returns `true` if this ACK started a new round.
    pub fn on_ack(&mut self, delivered: u64, in_flight: u64, rtt: Option<Dur>) -> bool {
        // RFC 9406 §4.2: "When windowEnd is ACKed, the current round ends and
        // windowEnd is set to SND.NXT" (strictly beyond, as Linux `after()`).
        let new_round = self.rounds.on_ack(delivered, in_flight);
        if new_round {
            // RFC 9406 §4.2, at the start of each round: lastRoundMinRTT =
            // currentRoundMinRTT; currentRoundMinRTT = infinity; rttSampleCount = 0.
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
        }
        if let Some(r) = rtt {
            // RFC 9406 §4.2: currentRoundMinRTT = min(currentRoundMinRTT,
            // currRTT); rttSampleCount += 1.
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(r, |m| m.min(r)));
            self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        }
        new_round
    }

    /// The slow-start exit test of RFC 9406 §4.2: with at least
    /// `N_RTT_SAMPLE` samples this round and both minima valid, returns
    /// `Some(cssBaselineMinRtt = currentRoundMinRTT)` if `currentRoundMinRTT
    /// >= lastRoundMinRTT + RttThresh`.
    pub fn delay_increase(&self) -> Option<Dur> {
        if self.rtt_sample_count < N_RTT_SAMPLE {
            return None;
        }
        let (Some(cur), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) else {
            return None;
        };
        (cur >= last + rtt_thresh(last)).then_some(cur)
    }

    /// The CSS test of RFC 9406 §4.2: with at least `N_RTT_SAMPLE` samples
    /// this round, `currentRoundMinRTT < cssBaselineMinRtt` means the RTT
    /// rise was spurious and slow start resumes.
    pub fn rtt_fell_below(&self, baseline: Dur) -> bool {
        self.rtt_sample_count >= N_RTT_SAMPLE
            && self.current_round_min_rtt.is_some_and(|cur| cur < baseline)
    }

    /// Rounds started so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.started()
    }

    /// `currentRoundMinRTT` (`None` = infinity).
    pub fn current_round_min_rtt(&self) -> Option<Dur> {
        self.current_round_min_rtt
    }

    /// `lastRoundMinRTT` (`None` = infinity).
    pub fn last_round_min_rtt(&self) -> Option<Dur> {
        self.last_round_min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    /// One round of `n` segments, all acked with RTT `rtt`; returns how many
    /// of those ACKs started a round.
    fn round(h: &mut HyStartPp, delivered: &mut u64, n: u64, rtt: Dur) -> u32 {
        for i in 1..=n {
            h.on_packet_sent(i * MSS);
        }
        let mut starts = 0;
        for i in 1..=n {
            *delivered += MSS;
            starts += u32::from(h.on_ack(*delivered, (n - i) * MSS, Some(rtt)));
        }
        starts
    }

    #[test]
    fn rtt_thresh_is_an_eighth_clamped_to_4_and_16_ms() {
        // 20 ms / 8 = 2.5 ms -> 4 ms; 80 ms / 8 = 10 ms; 200 ms / 8 = 25 ms -> 16 ms.
        assert_eq!(rtt_thresh(ms(20)), ms(4));
        assert_eq!(rtt_thresh(ms(80)), ms(10));
        assert_eq!(rtt_thresh(ms(200)), ms(16));
    }

    #[test]
    fn one_round_per_window_sent() {
        let mut h = HyStartPp::new();
        let mut d = 0;
        // Each window starts exactly one round, on its first ACK.
        for n in [10, 20, 40] {
            assert_eq!(round(&mut h, &mut d, n, ms(50)), 1);
        }
        assert_eq!(h.rounds(), 3);
        assert_eq!(h.last_round_min_rtt(), Some(ms(50)));
    }

    #[test]
    fn exit_needs_n_samples_and_the_threshold() {
        let mut h = HyStartPp::new();
        let mut d = 0;
        round(&mut h, &mut d, 10, ms(50));
        assert_eq!(h.delay_increase(), None); // no previous round yet
                                              // 50 ms + max(4, min(6.25, 16)) = 56.25 ms: 56 ms is below it.
        round(&mut h, &mut d, 20, ms(56));
        assert_eq!(h.delay_increase(), None);
        // Next round at 63 ms over last 56 ms (+7 ms threshold): exit, but
        // only from the eighth sample on.
        h.on_packet_sent(40 * MSS);
        for i in 1..=8u64 {
            d += MSS;
            h.on_ack(d, (40 - i) * MSS, Some(ms(63)));
            let want = (i >= 8).then_some(ms(63));
            assert_eq!(h.delay_increase(), want, "after {i} samples");
        }
        // In CSS, a lower RTT (with 8 samples) is the spurious-exit test.
        assert!(!h.rtt_fell_below(ms(63)));
        assert!(h.rtt_fell_below(ms(64)));
    }
}
