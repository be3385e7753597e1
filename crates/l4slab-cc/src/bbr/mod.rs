//! BBR ("Bottleneck Bandwidth and Round-trip propagation time") congestion
//! control, in two versions:
//!
//! * [`Bbr`] (`cc = "bbr"`) — BBR v1 as Linux `net/ipv4/tcp_bbr.c` implements
//!   it (REFERENCES §3.6); see `v1.rs`.
//! * [`Bbr3`] (`cc = "bbr3"`) — BBRv3 as draft-ietf-ccwg-bbr-06 specifies it
//!   (REFERENCES §3.7); see `v3/`: `mod.rs` (the controller and its checked
//!   state transition), one file per state (`startup.rs`, `drain.rs`,
//!   `probe_bw.rs`, `probe_rtt.rs`), the shared model (`model.rs`), control
//!   parameters (`control.rs`), the loss-driven bounds `inflight_longterm`,
//!   `inflight_shortterm`, `bw_shortterm` (`bounds.rs`) and `config.rs`.
//!
//! This file holds what both share: the per-ACK rate sample as the transport
//! reports it, Linux's congestion-avoidance state (`icsk_ca_state`) as the
//! congestion events imply it, the emulation of "mark the connection
//! application-limited" that both versions perform in ProbeRTT, and
//! ProbeRTT's dwell ([`ProbeRttDwell`], Linux `bbr_update_min_rtt` and
//! `bbr_check_probe_rtt_done`, the draft's `HandleProbeRTT` and
//! `CheckProbeRTTDone`: the same rule). `filters.rs`
//! has the windowed max/min filters.
//!
//! **Inputs.** Everything comes from [`AckEvent`]: besides the usual fields,
//! BBR needs the rate sample of the newest packet the ACK delivered
//! (`rs_prior_delivered` for round counting, `rs_delivered`,
//! `rs_tx_in_flight`, `rs_prior_lost`) and the connection's lost-bytes
//! counter `total_lost` (draft §2.2 `C.lost`). Bytes newly marked lost are
//! the increase of `total_lost` since the previous ACK, so losses found by the
//! RACK reorder timer or an RTO are seen on the next ACK. BBRv3 also takes
//! each lost packet as it is marked ([`crate::LostPacket`], Linux
//! `skb_marked_lost`).

pub mod filters;
pub mod v1;
pub mod v3;

pub use v1::{Bbr, BbrConfig, BbrConfigError, BbrStats, BBR_UNIT};
pub use v3::{Bbr3, Bbr3Config, Bbr3ConfigError, Bbr3Stats, ProbeBwPhase, StartupExit};

use l4slab_core::{Dur, Rate, Time};

use crate::AckEvent;

/// The per-ACK rate sample (draft-ietf-ccwg-bbr-06 §2.3, "RS"), read from an
/// [`AckEvent`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RateSample {
    /// `RS.newly_acked`: bytes (S)ACKed by this ACK.
    pub newly_acked: u64,
    /// `RS.newly_lost`: bytes marked lost since the previous ACK.
    pub newly_lost: u64,
    /// `RS.delivered`: bytes delivered over the sample's interval.
    pub delivered: u64,
    /// `RS.prior_delivered`: `C.delivered` when the newest acked packet was sent.
    pub prior_delivered: u64,
    /// `RS.delivery_rate`; `None` when the transport found no reliable sample
    /// (interval shorter than min RTT, draft §4.1.2 `GenerateRateSample`).
    pub delivery_rate: Option<Rate>,
    /// `RS.is_app_limited`, including the controller's own ProbeRTT marking
    /// (see [`AppLimitedMark`]).
    pub is_app_limited: bool,
    /// `RS.tx_in_flight`: bytes in flight when the newest acked packet was sent.
    pub tx_in_flight: u64,
    /// `RS.lost = C.lost - P.lost`: bytes marked lost while that packet was in flight.
    pub lost: u64,
    /// `RS.rtt`.
    pub rtt: Option<Dur>,
}

impl RateSample {
    /// The sample carried by `ack`; `losses` turns the cumulative lost counter
    /// into newly lost bytes, `mark` adds the emulated app-limited marking.
    pub fn from_ack(ack: &AckEvent, losses: &mut LossCounter, mark: &AppLimitedMark) -> Self {
        RateSample {
            newly_acked: ack.acked_bytes,
            newly_lost: losses.advance(ack.total_lost),
            delivered: ack.rs_delivered,
            prior_delivered: ack.rs_prior_delivered,
            delivery_rate: ack.delivery_rate.filter(|r| r.as_bps() > 0),
            is_app_limited: ack.app_limited || mark.covers(ack.rs_prior_delivered),
            tx_in_flight: ack.rs_tx_in_flight,
            lost: ack.total_lost.saturating_sub(ack.rs_prior_lost),
            rtt: ack.rtt_sample,
        }
    }

    /// The ACK delivered data, so it carries a sample (draft §4.1.2:
    /// `RS.prior_time != 0`).
    pub fn has_data(&self) -> bool {
        self.newly_acked > 0
    }
}

/// Turns the transport's cumulative `C.lost` into per-ACK newly lost bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossCounter {
    last_total: u64,
}

impl LossCounter {
    /// Bytes lost since the previous call.
    pub fn advance(&mut self, total_lost: u64) -> u64 {
        let n = total_lost.saturating_sub(self.last_total);
        self.last_total = self.last_total.max(total_lost);
        n
    }
}

/// Emulation of draft §4.1.2 `MarkConnectionAppLimited()` (Linux: BBR sets
/// `tp->app_limited` itself in ProbeRTT, "Ignore low rate samples during this
/// mode"). The controller cannot write the transport's app-limited state, so
/// it remembers the mark and treats a sample as app-limited when its packet
/// was sent while the mark was in force: `P.delivered` between the delivered
/// count at the first marking and the mark (`C.delivered + C.inflight`). The
/// transport clears its own mark when `C.delivered` passes it; a packet sent
/// after that has `P.delivered` above the mark, so the same test covers it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AppLimitedMark {
    from: u64,
    /// `C.app_limited`; 0 = never marked.
    until: u64,
}

impl AppLimitedMark {
    /// `C.app_limited = max(C.delivered + C.inflight, 1)`.
    pub fn mark(&mut self, delivered: u64, in_flight: u64) {
        if self.until == 0 || delivered > self.until {
            self.from = delivered;
        }
        self.until = self.until.max((delivered + in_flight).max(1));
    }

    /// A packet sent with `P.delivered = prior_delivered` carried the mark.
    pub fn covers(&self, prior_delivered: u64) -> bool {
        self.until != 0 && (self.from..=self.until).contains(&prior_delivered)
    }
}

/// The subset of Linux `icsk_ca_state` BBR looks at, as the transport's
/// congestion events imply it; ordered like Linux (`TCP_CA_Open <
/// TCP_CA_Recovery < TCP_CA_Loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    /// No loss recovery (`TCP_CA_Open`; the transport has no Disorder/CWR).
    #[default]
    Open,
    /// Fast recovery, from the first loss of an episode to `RecoveryEnd`.
    Recovery,
    /// After an RTO until `RecoveryEnd` (`TCP_CA_Loss`).
    Loss,
}

/// ProbeRTT's dwell, the data of both versions' ProbeRTT state: once
/// in-flight is down to the ProbeRTT window, hold it for a duration and at
/// least one round (Linux `bbr_update_min_rtt`, "Maintain min packets in
/// flight for max(200 ms, 1 round)"; draft-ietf-ccwg-bbr-06 §5.3.4.3
/// `HandleProbeRTT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProbeRttDwell {
    /// Linux `probe_rtt_done_stamp`, draft `BBR.probe_rtt_done_stamp`: unset
    /// until in-flight has fallen to the ProbeRTT window.
    pub done_at: Option<Time>,
    /// Linux `probe_rtt_round_done`, draft `BBR.probe_rtt_round_done`: a
    /// packet-timed round has passed since then.
    pub round_done: bool,
}

/// What one ACK in ProbeRTT did to the dwell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DwellStep {
    /// In-flight reached the window: the dwell began, and the caller starts
    /// a round (Linux `next_rtt_delivered = tp->delivered`, draft
    /// `StartRound()`).
    Began,
    /// A round has passed since it began: the caller checks whether the dwell
    /// is over ([`ProbeRttDwell::is_over`], Linux `bbr_check_probe_rtt_done`).
    RoundDone,
    /// Nothing to do yet.
    Waiting,
}

impl ProbeRttDwell {
    /// Entering ProbeRTT (Linux `probe_rtt_done_stamp = 0`, draft
    /// `BBR.probe_rtt_done_stamp = 0`).
    pub const ENTER: ProbeRttDwell = ProbeRttDwell {
        done_at: None,
        round_done: false,
    };

    /// One ACK in ProbeRTT, `in_flight` bytes in flight, `window` the
    /// ProbeRTT window, `duration` the dwell, `round_start` whether this ACK
    /// began a round.
    pub fn on_ack(
        &mut self,
        now: Time,
        in_flight: u64,
        window: u64,
        duration: Dur,
        round_start: bool,
    ) -> DwellStep {
        // Linux: if (!bbr->probe_rtt_done_stamp && tcp_packets_in_flight(tp) <= bbr_cwnd_min_target)
        // draft: if (BBR.probe_rtt_done_stamp == 0 and C.inflight <= BBRProbeRTTCwnd())
        if self.done_at.is_none() && in_flight <= window {
            *self = ProbeRttDwell {
                done_at: Some(now + duration),
                round_done: false,
            };
            return DwellStep::Began;
        }
        if self.done_at.is_none() {
            return DwellStep::Waiting;
        }
        // "if (bbr->round_start) bbr->probe_rtt_round_done = 1;
        //  if (bbr->probe_rtt_round_done) bbr_check_probe_rtt_done(sk);"
        self.round_done |= round_start;
        if self.round_done {
            DwellStep::RoundDone
        } else {
            DwellStep::Waiting
        }
    }

    /// Linux `bbr_check_probe_rtt_done`, draft `CheckProbeRTTDone()`: the
    /// dwell began and `now` is past its end (`after(tcp_jiffies32,
    /// probe_rtt_done_stamp)`, `Now() > BBR.probe_rtt_done_stamp`).
    pub fn is_over(self, now: Time) -> bool {
        self.done_at.is_some_and(|done| now > done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_rtt_dwell_waits_for_the_window_then_the_duration_and_a_round() {
        let ms = Time::from_millis;
        let (window, duration) = (4_000, Dur::from_millis(200));
        let mut d = ProbeRttDwell::ENTER;
        // In-flight above the window: nothing starts.
        assert_eq!(
            d.on_ack(ms(0), 5_000, window, duration, true),
            DwellStep::Waiting
        );
        assert!(!d.is_over(ms(1_000)));
        // Down to the window at 10 ms: the dwell runs to 210 ms.
        assert_eq!(
            d.on_ack(ms(10), 4_000, window, duration, true),
            DwellStep::Began
        );
        assert_eq!(d.done_at, Some(ms(210)));
        assert_eq!(
            d.on_ack(ms(20), 0, window, duration, false),
            DwellStep::Waiting
        );
        // A round passes; the dwell is over only strictly after 210 ms.
        assert_eq!(
            d.on_ack(ms(50), 0, window, duration, true),
            DwellStep::RoundDone
        );
        assert!(d.round_done && !d.is_over(ms(210)) && d.is_over(ms(211)));
        assert_eq!(
            d.on_ack(ms(60), 0, window, duration, false),
            DwellStep::RoundDone
        );
    }

    #[test]
    fn loss_counter_reports_increments() {
        let mut c = LossCounter::default();
        assert_eq!(c.advance(0), 0);
        assert_eq!(c.advance(3000), 3000);
        assert_eq!(c.advance(3000), 0);
        assert_eq!(c.advance(4500), 1500);
    }

    #[test]
    fn app_limited_mark_covers_packets_sent_while_marked() {
        let mut m = AppLimitedMark::default();
        assert!(!m.covers(0));
        // Marked at delivered = 10 000 with 5 000 in flight.
        m.mark(10_000, 5_000);
        assert!(!m.covers(9_999)); // sent before the mark
        assert!(m.covers(10_000) && m.covers(15_000));
        assert!(!m.covers(15_001)); // sent after the bubble left
                                    // Re-marked while still in force: the range grows.
        m.mark(12_000, 4_000);
        assert!(m.covers(10_000) && m.covers(16_000));
        // Marked again after it cleared: a fresh range.
        m.mark(20_000, 1_000);
        assert!(!m.covers(16_000) && m.covers(20_500));
    }

    #[test]
    fn rate_sample_reads_the_ack() {
        let ack = AckEvent {
            acked_bytes: 1448,
            rs_delivered: 14_480,
            rs_prior_delivered: 100_000,
            rs_tx_in_flight: 20_000,
            rs_prior_lost: 1_000,
            total_lost: 3_896,
            delivery_rate: Some(Rate::ZERO),
            ..AckEvent::default()
        };
        let mut losses = LossCounter::default();
        let rs = RateSample::from_ack(&ack, &mut losses, &AppLimitedMark::default());
        assert_eq!(rs.lost, 2_896);
        assert_eq!(rs.newly_lost, 3_896);
        assert_eq!(rs.delivery_rate, None, "a zero rate is no sample");
        assert!(rs.has_data() && !rs.is_app_limited);
    }
}
