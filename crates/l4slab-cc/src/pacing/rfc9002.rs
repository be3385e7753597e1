//! QUIC pacing, the [`super::Rule::TokenBucket`] release rule, RFC 9002
//! §7.7: a token bucket whose rate is the controller's pacing rate when it
//! has one, else `N * cwnd / smoothed_rtt` with N = 1.25 ([`rate_for`]), and
//! whose depth (the largest burst) is the initial window. With the
//! connection's `pacing` off only a controller with a rate of its own (BBR)
//! paces, as the TCP model's `pacing = false` (§7.7 says SHOULD pace, so off
//! is a deviation a scenario asks for).
//!
//! §7.7: "Senders SHOULD limit bursts to the initial congestion window".
//! Only ack-eliciting Application Data packets are paced; ACK-only packets,
//! handshake packets and PTO probes are not (§7.7: "acknowledgments... SHOULD
//! NOT be paced"; probes must not be blocked). No pacing before the first
//! RTT sample (the initial window bounds that burst). Used by `l4slab-quic`
//! (`connection/pacing.rs`) through [`super::Pacer`].
//!
//! **Late wake-ups** (real clocks only; [`super::Pacer::on_late_wakeup`]): a bucket
//! that waited for a packet's tokens and was looked at only later (the
//! thread was not running) keeps at most Linux's burst quantum, 1 ms at the
//! pacing rate and at least two packets (`tcp_tso_autosize`: `rate >>
//! sk_pacing_shift`, `tcp_min_tso_segs` = 2), instead of a catch-up burst of
//! up to the initial window: the rest of the time lost is forfeited, as
//! Linux's EDT pacing forfeits it (`tcp_update_skb_after_send` gives a late
//! packet's successor at most half its time as "OS jitter" credit). A 1 ms
//! burst at a rate below the bottleneck's stays under DualPI2's 1 ms
//! L-queue step. The simulator's timers are never late, so it never calls it.
//! (A sender the pacer holds back uses its window, RFC 9002 §7.8: the
//! connection counts it as window-limited whenever the pacer defers a packet
//! the window allows, so a controller that grows only when window-limited,
//! Prague, is not held at a window the scheduler, not the path, kept it under.)
//!
//! **Depth.** The bucket is the initial window deep unless the connection
//! asks for less (`ConnectionConfig::pacing_burst`): `l4slab send` on a real
//! clock uses 1.5 datagrams, Linux's EDT spacing (a packet sent late lets
//! the next go at most half a gap early, `tcp_update_skb_after_send`), so
//! that an ACK of two packets does not release them back to back. A late
//! wake-up's quantum is not cut to that depth: at a rate whose 1 ms is more
//! than 1.5 datagrams, a thread the scheduler held back for a millisecond
//! sends that millisecond's packets together, as Linux's TSO autosizing would,
//! instead of losing them (tokens above the depth are spent, not clamped).
//!
//! **Granularity** (real clocks only; `ConnectionConfig::pacing_granularity`):
//! at a rate whose gap between packets is shorter than the granularity, a
//! packet whose tokens will be there within the granularity of the time
//! asked goes then, and the bucket owes them (tokens below zero, at most the
//! granularity at the rate), so the rate over time is unchanged and only the
//! spacing coarsens. This is the alarm granularity of user-space QUIC pacers
//! — Chromium's `PacingSender` ("takes into consideration the expected
//! granularity of the underlying alarm ... and err towards sending packets
//! too early instead of too late", `kAlarmGranularity` 1 ms), quic-go's
//! `MinPacingDelay` (1 ms) — which trade a wake-up per packet for small
//! bursts once packets are closer than a wake-up is worth. Zero (the
//! simulator's exact timers) gives the bucket above exactly.

use l4slab_core::{Dur, Rate, Time};

/// §7.7: "N = 1.25" (as a ratio 5/4).
const N_NUM: u64 = 5;
const N_DEN: u64 = 4;

/// The rate §7.7 asks for, given the controller's own rate if any; without
/// one, the §7.7 default rate if `default_rate`, else none.
pub fn rate_for(
    cc_rate: Option<Rate>,
    cwnd: u64,
    srtt: Option<Dur>,
    default_rate: bool,
) -> Option<Rate> {
    cc_rate.filter(|r| r.as_bps() > 0).or_else(|| {
        if !default_rate {
            return None;
        }
        let srtt = srtt?;
        // §7.7: "rate = N * congestion_window / smoothed_rtt".
        Rate::from_bytes_per(cwnd * N_NUM / N_DEN, srtt)
    })
}

/// The token bucket of one QUIC connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bucket {
    /// Bucket depth in bytes (the initial window).
    capacity: u64,
    /// Tokens, in bytes × 1e9 (nanosecond-exact refill); below zero only
    /// after a packet released early by the granularity (module docs), by
    /// at most `granularity` at the rate.
    tokens_nb: i128,
    last: Time,
    /// A packet due within this of the time asked goes then (module docs:
    /// zero on the simulator's exact clock).
    granularity: Dur,
}

impl Bucket {
    /// A full bucket of `capacity` bytes (the initial window) at `now`,
    /// releasing packets due within `granularity`.
    pub(super) fn full(capacity: u64, granularity: Dur, now: Time) -> Self {
        Bucket {
            capacity,
            tokens_nb: i128::from(capacity) * 1_000_000_000,
            last: now,
            granularity,
        }
    }

    /// Tokens earned at `rate` until `now`, up to the depth; unpaced, the
    /// bucket is full.
    pub(super) fn refill(&mut self, now: Time, rate: Option<Rate>) {
        let cap = i128::from(self.capacity) * 1_000_000_000;
        let dt = i128::from(now.saturating_since(self.last).as_nanos());
        self.last = self.last.max(now);
        match rate {
            None => self.tokens_nb = cap,
            Some(r) => {
                // Earned tokens fill up to the depth; a late wake-up's quantum
                // above it (on_late_wakeup) is spent, never clamped away.
                let add = dt.saturating_mul(i128::from(r.as_bps()) / 8);
                let limit = cap.max(self.tokens_nb);
                self.tokens_nb = (self.tokens_nb.saturating_add(add)).min(limit);
            }
        }
    }

    /// When a packet of `bytes` may leave: `now` or later (once the bucket
    /// holds its size, at most the depth).
    pub(super) fn release_time(&mut self, now: Time, bytes: u64, rate: Option<Rate>) -> Time {
        self.refill(now, rate);
        let need = i128::from(bytes.min(self.capacity)) * 1_000_000_000;
        match rate {
            _ if self.tokens_nb >= need => now,
            None => now,
            Some(r) => {
                let bps = (u128::from(r.as_bps()) / 8).max(1);
                let short = u128::try_from(need - self.tokens_nb).unwrap_or(0);
                let ns = short.div_ceil(bps);
                // Chromium's PacingSender: "err towards sending packets too
                // early instead of too late" within the alarm granularity —
                // here only at rates whose gap between packets is shorter
                // than it (a slower sender's timer serves each packet).
                let g = u128::from(self.granularity.as_nanos());
                let gap = u128::try_from(need).unwrap_or(0).div_ceil(bps);
                if ns <= g && gap < g {
                    return now;
                }
                now + Dur::from_nanos(ns.min(u128::from(u64::MAX / 4)) as u64)
            }
        }
    }

    /// A packet of `bytes` was due at a wake-up the caller noticed only at
    /// `now`, later: keep at most Linux's burst quantum of tokens (module
    /// docs).
    pub(super) fn on_late_wakeup(&mut self, now: Time, bytes: u64, rate: Option<Rate>) {
        let Some(rate) = rate else {
            self.refill(now, None);
            return;
        };
        let dt = i128::from(now.saturating_since(self.last).as_nanos());
        let earned = self
            .tokens_nb
            .saturating_add(dt.saturating_mul(i128::from(rate.as_bps()) / 8));
        self.last = self.last.max(now);
        // tcp_tso_autosize: bytes = rate >> sk_pacing_shift (10: ~1 ms),
        // at least tcp_min_tso_segs (2) segments; at most the initial window
        // (§7.7: "limit bursts to the initial congestion window"; §7.2:
        // min(10 * max_datagram_size, max(14720, 2 * max_datagram_size))).
        // Not capped at a shallower depth: a sender that asked for one
        // (pacing_burst) still catches up a late wake-up's millisecond.
        let bytes = i128::from(bytes);
        let initial_window = (10 * bytes).min(14_720.max(2 * bytes));
        let ms = i128::from(rate.as_bps() / 8 / 1000);
        let quantum = ms.max(2 * bytes).min(initial_window);
        self.tokens_nb = earned.min(quantum * 1_000_000_000);
    }

    /// A packet of `bytes` left at `now`: its size leaves the bucket, which
    /// owes what a packet released early took (at most `granularity` at the
    /// rate, so the rate over time is kept); never below that.
    pub(super) fn on_sent(&mut self, now: Time, bytes: u64, rate: Option<Rate>) {
        self.refill(now, rate);
        let owed = match rate {
            Some(r) => i128::from(self.granularity.as_nanos()) * (i128::from(r.as_bps()) / 8),
            None => 0,
        };
        self.tokens_nb = (self.tokens_nb - i128::from(bytes) * 1_000_000_000).max(-owed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Pacer, Rule};
    use super::*;

    #[test]
    fn burst_then_paced() {
        let mut p = Pacer::new(
            Rule::TokenBucket {
                burst: 3000,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        p.set_rate(Time::ZERO, Some(Rate::from_mbps(8))); // 1 byte/µs
        p.on_sent(Time::ZERO, 1500);
        p.on_sent(Time::ZERO, 1500);
        assert_eq!(p.release_time(Time::ZERO, 1500), Time::from_micros(1500));
        assert_eq!(
            p.release_time(Time::from_micros(1500), 1500),
            Time::from_micros(1500)
        );
        // Unpaced: the bucket is full again.
        p.on_sent(Time::from_micros(1500), 1500);
        p.set_rate(Time::from_micros(1500), None);
        assert_eq!(
            p.release_time(Time::from_micros(1500), 1500),
            Time::from_micros(1500)
        );
    }

    #[test]
    fn rate_is_the_controllers_else_five_quarters_of_cwnd_per_srtt() {
        let srtt = Some(Dur::from_millis(10));
        let r = rate_for(None, 10_000, srtt, true).unwrap();
        assert_eq!(r, Rate::from_bps(10_000_000)); // 12500 B / 10 ms
                                                   // Pacing off: only a controller's own rate paces.
        assert_eq!(rate_for(None, 10_000, srtt, false), None);
        let bbr = Some(Rate::from_mbps(3));
        assert_eq!(rate_for(bbr, 10_000, srtt, false), bbr);
    }

    /// Packets of 1500 bytes a late wake-up at `now` releases at once.
    fn burst(p: &mut Pacer, now: Time) -> u32 {
        burst_of(p, now, 1500)
    }

    /// A 15 kB bucket (ten 1500-byte packets) at `mbps`, emptied at 0;
    /// the time its next packet is due.
    fn emptied(mbps: u64) -> (Pacer, Time) {
        let mut p = Pacer::new(
            Rule::TokenBucket {
                burst: 15_000,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        p.set_rate(Time::ZERO, Some(Rate::from_mbps(mbps)));
        p.on_sent(Time::ZERO, 15_000);
        let due = p.release_time(Time::ZERO, 1500);
        (p, due)
    }

    /// A bucket 1.5 packets deep (`l4slab send`'s, Linux's EDT spacing):
    /// after an idle spell the second packet leaves half a gap after the
    /// first, never with it; a packet sent up to half a gap late lets its
    /// successor go that much earlier, so the rate is kept.
    #[test]
    fn a_bucket_of_one_and_a_half_packets_spaces_by_at_least_half_a_gap() {
        let mut p = Pacer::new(
            Rule::TokenBucket {
                burst: 1800,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        p.set_rate(Time::ZERO, Some(Rate::from_mbps(8))); // 1 byte/µs
        let idle = Time::from_millis(50);
        assert_eq!(p.release_time(idle, 1200), idle);
        p.on_sent(idle, 1200);
        let second = idle + Dur::from_micros(600);
        assert_eq!(p.release_time(idle, 1200), second);
        // Sent 500 µs late: the next one is due 1200 - 500 µs after it.
        let late = second + Dur::from_micros(500);
        p.on_sent(late, 1200);
        assert_eq!(p.release_time(late, 1200), late + Dur::from_micros(700));
    }

    /// `l4slab send`'s shallow bucket (1.5 packets) still catches up a late
    /// wake-up's millisecond at a rate whose 1 ms is several packets (the
    /// scheduler held the thread back, not the controller), and no more.
    #[test]
    fn a_shallow_bucket_keeps_the_late_wakeups_quantum() {
        let mut p = Pacer::new(
            Rule::TokenBucket {
                burst: 2250,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        p.set_rate(Time::ZERO, Some(Rate::from_mbps(96))); // 12 bytes/µs
        p.on_sent(Time::ZERO, 2250);
        let due = p.release_time(Time::ZERO, 1500);
        assert_eq!(due, Time::from_micros(125));
        // Woken 3 ms late: 1 ms at 96 Mbit/s is 12 kB, eight packets, then
        // the rate again: the depth did not clamp the quantum away.
        let now = due + Dur::from_millis(3);
        p.on_late_wakeup(now, 1500);
        assert_eq!(burst(&mut p, now), 8);
        assert_eq!(p.release_time(now, 1500), now + Dur::from_micros(125));
        // On time again: at most the depth, one packet at a time.
        let later = now + Dur::from_millis(50);
        assert_eq!(burst(&mut p, later), 1);
        // At 8 Mbit/s the quantum is the two-segment floor.
        let mut q = Pacer::new(
            Rule::TokenBucket {
                burst: 2250,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        q.set_rate(Time::ZERO, Some(Rate::from_mbps(8)));
        q.on_sent(Time::ZERO, 2250);
        let now = q.release_time(Time::ZERO, 1500) + Dur::from_millis(6);
        q.on_late_wakeup(now, 1500);
        assert_eq!(burst(&mut q, now), 2);
    }

    #[test]
    fn a_late_wakeup_releases_linuxs_quantum_not_a_catch_up_burst() {
        // 8 Mbit/s = 1 byte/µs: the next packet is due at 1.5 ms.
        let (mut p, due) = emptied(8);
        assert_eq!(due, Time::from_micros(1500));
        // Woken 6 ms late: without the rule, five packets' worth of tokens.
        let now = due + Dur::from_millis(6);
        assert_eq!(burst(&mut p.clone(), now), 5);
        // 1 ms at 8 Mbit/s is 1000 bytes: the two-segment floor.
        p.on_late_wakeup(now, 1500);
        assert_eq!(burst(&mut p, now), 2);
        // Then at the rate again.
        assert_eq!(p.release_time(now, 1500), now + Dur::from_micros(1500));
        // 96 Mbit/s: 1 ms is 12 kB, eight packets of 1500 (of ten).
        let (mut q, due) = emptied(96);
        let now = due + Dur::from_millis(6);
        q.on_late_wakeup(now, 1500);
        assert_eq!(burst(&mut q, now), 8);
        // A wake-up only a little late keeps what it had: one packet.
        let (mut r, due) = emptied(8);
        let now = due + Dur::from_micros(100);
        r.on_late_wakeup(now, 1500);
        assert_eq!(burst(&mut r, now), 1);
    }

    /// Sends what `p` releases at each of its own wake-ups for `span`: the
    /// bursts (packets per wake-up) and the bytes sent.
    fn wakeups(p: &mut Pacer, span: Dur, bytes: u64) -> (Vec<u32>, u64) {
        let (mut now, mut bursts, mut sent) = (Time::ZERO, Vec::new(), 0);
        while now < Time::ZERO + span {
            let n = burst_of(p, now, bytes);
            sent += u64::from(n) * bytes;
            bursts.push(n);
            now = p.release_time(now, bytes);
        }
        (bursts, sent)
    }

    /// Packets of `bytes` `p` releases at once at `now`.
    fn burst_of(p: &mut Pacer, now: Time, bytes: u64) -> u32 {
        let mut n = 0;
        while p.release_time(now, bytes) == now {
            p.on_sent(now, bytes);
            n += 1;
        }
        n
    }

    /// A granularity of 250 µs: at 60 Mbit/s (a 1200-byte packet every
    /// 160 µs) the next packet is within it, so packets leave in pairs, a
    /// wake-up per pair, at the same rate; at 20 Mbit/s (every 480 µs, a
    /// gap longer than the granularity) nothing changes, even with the
    /// depth's half packet of credit. Zero granularity is the plain bucket.
    #[test]
    fn a_granularity_pairs_close_packets_and_keeps_the_rate() {
        let g = Dur::from_micros(250);
        let span = Dur::from_millis(100);
        for (mbps, per_wakeup) in [(60, 2), (20, 1)] {
            let mut p = Pacer::new(
                Rule::TokenBucket {
                    burst: 1800,
                    granularity: g,
                },
                Time::ZERO,
            );
            p.set_rate(Time::ZERO, Some(Rate::from_mbps(mbps)));
            let (bursts, sent) = wakeups(&mut p, span, 1200);
            // After the first wake-up (the full bucket's), every one the same.
            assert!(
                bursts[1..].iter().all(|&n| n == per_wakeup),
                "{mbps}: {bursts:?}"
            );
            // The rate is kept: 100 ms at the rate, give or take the depth and
            // what a granularity releases early.
            let want = mbps * 1_000_000 / 8 / 10;
            assert!(
                sent.abs_diff(want) <= 1800 + 2 * 1200,
                "{mbps}: {sent} vs {want}"
            );
            let mut exact = Pacer::new(
                Rule::TokenBucket {
                    burst: 1800,
                    granularity: Dur::ZERO,
                },
                Time::ZERO,
            );
            exact.set_rate(Time::ZERO, Some(Rate::from_mbps(mbps)));
            let (bursts, _) = wakeups(&mut exact, span, 1200);
            assert!(
                bursts[1..].iter().all(|&n| n == 1),
                "{mbps} exact: {bursts:?}"
            );
        }
    }
}
