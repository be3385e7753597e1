//! RACK time-based loss detection, RFC 8985 §6.2 (steps 2-6).
//!
//! A segment is lost when a segment *sent after it* has been delivered and
//! more than `RACK.rtt + reo_wnd` has passed since it was sent.
//!
//! To keep the cost per ACK independent of the window, transmissions are kept
//! in a queue in send order (Linux `tsorted_sent_queue`); the walk pops stale
//! entries (delivered, or superseded by a later retransmission) and stops at
//! the first live one that has not expired yet: everything after it was sent
//! later, so it expires later too.
//!
//! Deviations: `RACK_sent_after` breaks ties between equal send times by the
//! actual transmission order (a per-transmission counter) instead of
//! `end_seq`. The RFC uses `end_seq` because real clocks cannot order a burst;
//! in a simulation many segments leave at the same nanosecond, and a
//! retransmission sent just after new data (higher `end_seq`) would otherwise
//! count as sent *before* it and be declared lost again on the new data's ACK.
//! The reorder timer is armed for the *earliest* pending deadline
//! (RFC 8985 §6.2 step 5 arms it for the latest, `timeout = max(remaining,
//! timeout)`); so each segment is declared lost exactly when its own deadline
//! passes rather than together with the last one. `RACK.rtt` is taken from the
//! segment that advances the RACK point (the RFC processes segments in send
//! order, which ends at the same one). Not implemented: D-SACK-driven
//! `reo_wnd` adaptation (§6.2 step 4 `reo_wnd_mult`; it stays 1), Tail Loss
//! Probe (§7).

use std::collections::VecDeque;

use l4slab_core::{Dur, Time};

use crate::scoreboard::{Scoreboard, SentSeg, DUP_THRESH};

/// RFC 8985 §6.2 `RACK_sent_after(t1, seq1, t2, seq2)`, with the send order
/// `o` in place of `seq` as the tie-breaker (see the module documentation).
fn sent_after(t1: Time, o1: u64, t2: Time, o2: u64) -> bool {
    t1 > t2 || (t1 == t2 && o1 > o2)
}

#[derive(Debug, Default)]
pub(crate) struct Rack {
    /// `RACK.xmit_ts` and the send order of the most recently sent delivered
    /// segment (RFC: `RACK.end_seq`); `None` before the first delivery.
    point: Option<(Time, u64)>,
    /// `RACK.rtt`.
    rtt: Dur,
    /// `RACK.fack`: highest end sequence delivered.
    fack: u64,
    /// `RACK.reord`: reordering has been observed.
    reord: bool,
    /// `(index, tx_order)` of every transmission, in send order.
    sent: VecDeque<(u64, u64)>,
}

impl Rack {
    pub fn reordering_seen(&self) -> bool {
        self.reord
    }

    pub fn on_transmit(&mut self, idx: u64, tx_order: u64) {
        debug_assert!(self.sent.back().is_none_or(|b| b.1 < tx_order));
        self.sent.push_back((idx, tx_order));
    }

    /// RFC 8985 §6.2 steps 2 and 3 for one newly delivered segment; call in
    /// ascending sequence order.
    pub fn on_delivered(&mut self, seg: &SentSeg, now: Time, min_rtt: Option<Dur>) {
        let rtt = now.saturating_since(seg.xmit_time);
        // Step 2: "If Segment.retransmitted is TRUE: ... If rtt < RACK.min_RTT:
        // Return" (the ACK may be for the original transmission). As Linux
        // tcp_rack_advance: only the min_RTT test (not the RFC's timestamp
        // test, which a SACK of a retransmission always fails: the receiver
        // echoes TS.Recent, not the out-of-order segment's TSval), and none
        // for a loss probe (Linux marks it TCPCB_EVER_RETRANS, not RETRANS).
        let ambiguous = seg.tx_count > 1 && !seg.probe && min_rtt.is_some_and(|m| rtt < m);
        if !ambiguous {
            let newer = self
                .point
                .is_none_or(|(t, o)| sent_after(seg.xmit_time, seg.tx_order, t, o));
            if newer {
                // Step 2: RACK.rtt = rtt; RACK.xmit_ts = Segment.xmit_ts; RACK.end_seq = Segment.end_seq
                self.rtt = rtt;
                self.point = Some((seg.xmit_time, seg.tx_order));
            }
        }
        // Step 3: "If Segment.end_seq > RACK.fack: RACK.fack = Segment.end_seq
        // Else if Segment.end_seq < RACK.fack AND Segment.retransmitted is FALSE:
        // RACK.reord = TRUE"
        if seg.end() > self.fack {
            self.fack = seg.end();
        } else if seg.end() < self.fack && seg.tx_count == 1 {
            self.reord = true;
        }
    }

    /// RFC 8985 §6.2 step 4 `RACK_update_reo_wnd` (with `reo_wnd_mult` = 1).
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        segs_sacked: u64,
        min_rtt: Option<Dur>,
        srtt: Option<Dur>,
    ) -> Dur {
        // "If RACK.reord is FALSE: If in Fast or RTO recovery: Return 0;
        //  Else if RACK.segs_sacked >= DupThresh: Return 0"
        if !self.reord && (in_recovery || segs_sacked >= DUP_THRESH as u64) {
            return Dur::ZERO;
        }
        // "Return min(RACK.reo_wnd_mult * RACK.min_RTT / 4, SRTT)"
        let quarter = min_rtt.map_or(Dur::ZERO, |m| Dur::from_nanos(m.as_nanos() / 4));
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// RFC 8985 §6.2 step 5 `RACK_detect_loss`. `lost(idx, seg)` is called for
    /// each segment newly marked lost. Returns the reorder-timer deadline
    /// (step 6), if a segment sent before the RACK point has not expired yet.
    pub fn detect_loss(
        &mut self,
        now: Time,
        sb: &mut Scoreboard,
        reo_wnd: Dur,
        mut lost: impl FnMut(u64, &SentSeg),
    ) -> Option<Time> {
        while let Some(&(idx, order)) = self.sent.front() {
            let live = sb.contains(idx) && {
                let s = sb.get(idx);
                // Stale: delivered, superseded by a later transmission, or
                // already lost and waiting for retransmission.
                !s.sacked && s.tx_order == order && (!s.lost || s.retrans)
            };
            if !live {
                self.sent.pop_front();
                continue;
            }
            let (rack_ts, rack_order) = self.point?;
            let s = *sb.get(idx);
            // "If RACK_sent_after(RACK.xmit_ts, RACK.end_seq, Segment.xmit_ts, Segment.end_seq)"
            if !sent_after(rack_ts, rack_order, s.xmit_time, s.tx_order) {
                return None; // this and everything after it was sent after the RACK point
            }
            // "remaining = Segment.xmit_ts + RACK.rtt + RACK.reo_wnd - Now()"
            let deadline = s.xmit_time + self.rtt + reo_wnd;
            if deadline > now {
                return Some(deadline);
            }
            // "If remaining <= 0: Segment.lost = TRUE"
            self.sent.pop_front();
            if sb.mark_lost(idx, false).is_some() {
                lost(idx, sb.get(idx));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_cc::rate::TxSnapshot;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn a_later_delivery_expires_the_earlier_segment_after_rtt_plus_reo_wnd() {
        let mut sb = Scoreboard::default();
        let mut rack = Rack::default();
        // Segment 0 sent at 0 ms, segment 1 at 1 ms; RTT 20 ms.
        for i in 0..2u64 {
            let idx = sb.push(SentSeg::new(
                1 + 100 * i,
                100,
                false,
                ms(i),
                i,
                TxSnapshot::default(),
            ));
            rack.on_transmit(idx, i);
        }
        // Segment 1 is SACKed at 21 ms.
        let mut delivered = Vec::new();
        sb.sack(101, 201, |i, s, _| delivered.push((i, *s)));
        for (_, s) in &delivered {
            rack.on_delivered(s, ms(21), Some(Dur::from_millis(20)));
        }
        let reo = rack.reo_wnd(
            false,
            1,
            Some(Dur::from_millis(20)),
            Some(Dur::from_millis(20)),
        );
        assert_eq!(reo, Dur::from_millis(5)); // min_rtt / 4
        let mut lost = Vec::new();
        // Segment 0 expires at 0 + 20 + 5 = 25 ms.
        assert_eq!(
            rack.detect_loss(ms(21), &mut sb, reo, |i, _| lost.push(i)),
            Some(ms(25))
        );
        assert!(lost.is_empty());
        assert_eq!(
            rack.detect_loss(ms(25), &mut sb, reo, |i, _| lost.push(i)),
            None
        );
        assert_eq!(lost, [0]);
        // Once DupThresh segments are SACKed (and no reordering was seen), reo_wnd is 0.
        assert_eq!(
            rack.reo_wnd(false, 3, Some(Dur::from_millis(20)), None),
            Dur::ZERO
        );
        assert_eq!(
            rack.reo_wnd(true, 0, Some(Dur::from_millis(20)), None),
            Dur::ZERO
        );
    }

    #[test]
    fn late_original_is_reordering() {
        let mut rack = Rack::default();
        let a = SentSeg::new(1, 100, false, ms(0), 0, TxSnapshot::default());
        let b = SentSeg::new(101, 100, false, ms(0), 1, TxSnapshot::default());
        rack.on_delivered(&b, ms(20), None);
        assert!(!rack.reordering_seen());
        rack.on_delivered(&a, ms(22), None);
        assert!(rack.reordering_seen());
    }

    #[test]
    fn a_retransmission_sent_at_the_same_instant_after_new_data_is_not_lost() {
        let mut sb = Scoreboard::default();
        let mut rack = Rack::default();
        // Segment 0 sent at 0; segment 1 (new data) and then the retransmission
        // of segment 0 both at 20 ms, in that order.
        for i in 0..2u64 {
            let idx = sb.push(SentSeg::new(
                1 + 100 * i,
                100,
                false,
                ms(20 * i),
                i,
                TxSnapshot::default(),
            ));
            rack.on_transmit(idx, i);
        }
        sb.mark_lost(0, false);
        assert_eq!(sb.next_retransmit(), Some(0));
        sb.on_retransmit(0, ms(20), 2, TxSnapshot::default());
        rack.on_transmit(0, 2);
        // Segment 1 is SACKed at 40 ms: the retransmission was sent after it.
        let mut d = Vec::new();
        sb.sack(101, 201, |_, s, _| d.push(*s));
        rack.on_delivered(&d[0], ms(40), Some(Dur::from_millis(20)));
        let mut lost = 0;
        assert_eq!(
            rack.detect_loss(ms(40), &mut sb, Dur::ZERO, |_, _| lost += 1),
            None
        );
        assert_eq!(lost, 0);
    }
}
