//! The receive side of acknowledgement, RFC 9000 §13.2: which packet
//! numbers arrived in a space, the cumulative ECN counts (§13.4.1), and when
//! an ACK is due ([`AckPolicy`]).
//!
//! §13.2.1: Initial and Handshake packets are acknowledged immediately;
//! Application Data after two ack-eliciting packets (the policy's
//! threshold; 1 acknowledges every one at once) or max_ack_delay, and at
//! once on a gap, on reordering and on a CE mark (§13.2.1: "SHOULD
//! immediately acknowledge all ... packets ... marked with the ECN CE
//! codepoint"). An ACK-only packet answers only ack-eliciting packets
//! (§13.2.1: "MUST NOT send a non-ack-eliciting packet in response to a
//! non-ack-eliciting packet"). Ranges are bounded: the oldest are forgotten
//! past [`MAX_TRACKED_RANGES`] (§13.2.3 allows limiting ACK ranges).

use l4slab_core::{Dur, Ecn, Time};

use super::ranges::RangeSet;
use crate::wire::{AckFrame, EcnCounts, PnSpace};

/// Ranges remembered per space (also the most an ACK frame carries).
pub const MAX_TRACKED_RANGES: usize = AckFrame::MAX_RANGES;
/// §18.2: "ack_delay_exponent ... a default value of 3".
pub const ACK_DELAY_EXPONENT: u32 = 3;
/// §13.2.2: "A receiver SHOULD send an ACK frame after receiving at least two
/// ack-eliciting packets."
pub const ACK_ELICITING_THRESHOLD: u32 = 2;

/// When Application Data packets are acknowledged (RFC 9000 §13.2.1-§13.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckPolicy {
    /// §13.2.1: "within its advertised max_ack_delay".
    pub max_ack_delay: Dur,
    /// An ACK goes at once after this many ack-eliciting packets:
    /// [`ACK_ELICITING_THRESHOLD`] by default, 1 to acknowledge every one
    /// without delay (the ack-eliciting threshold of
    /// draft-ietf-quic-ack-frequency §4, fixed here rather than negotiated).
    pub threshold: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckState {
    received: RangeSet,
    largest: Option<u64>,
    largest_time: Option<Time>,
    /// Ack-eliciting packets since the last ACK sent.
    unacked_eliciting: u32,
    deadline: Option<Time>,
    immediate: bool,
    /// Something arrived since the last ACK (it may ride on other frames).
    pending: bool,
    pub ecn: EcnCounts,
    ecn_seen: bool,
}

impl AckState {
    /// With room for the ranges it keeps (one more while inserting).
    pub fn new() -> Self {
        AckState {
            received: RangeSet::with_capacity(MAX_TRACKED_RANGES + 1),
            ..AckState::default()
        }
    }

    /// Whether `pn` was already received (or is too old to tell: treated as
    /// a duplicate).
    pub fn is_duplicate(&self, pn: u64) -> bool {
        if self.received.contains(pn) {
            return true;
        }
        self.received.len() >= MAX_TRACKED_RANGES
            && self.received.first().is_some_and(|(s, _)| pn < s)
    }

    pub fn largest(&self) -> Option<u64> {
        self.largest
    }

    /// Record packet `pn`; returns false for a duplicate (to be dropped).
    pub fn on_packet(
        &mut self,
        now: Time,
        space: PnSpace,
        pn: u64,
        ack_eliciting: bool,
        ecn: Ecn,
        policy: AckPolicy,
    ) -> bool {
        if self.is_duplicate(pn) {
            return false;
        }
        // §13.4.1: "increment the corresponding ECT(0), ECT(1), or ECN-CE count".
        self.ecn.record(ecn);
        self.ecn_seen |= ecn != Ecn::NotEct;
        let gap_or_reorder = match self.largest {
            // §13.2.1: "the received packet has a packet number less than
            // another ack-eliciting packet that has been received" or "greater
            // than the largest-numbered packet that has been received" with
            // "missing packets between that packet and this packet".
            Some(l) => pn < l || pn > l + 1,
            None => pn > 0,
        };
        if self.largest.is_none_or(|l| pn > l) {
            self.largest = Some(pn);
            self.largest_time = Some(now);
        }
        self.received.insert(pn, pn + 1);
        self.received.keep_newest(MAX_TRACKED_RANGES);
        self.pending = true;
        if ack_eliciting {
            self.unacked_eliciting += 1;
            if space != PnSpace::ApplicationData
                || gap_or_reorder
                || ecn == Ecn::Ce
                || self.unacked_eliciting >= policy.threshold
            {
                self.immediate = true;
            } else if self.deadline.is_none() {
                // §13.2.1: "within its advertised max_ack_delay".
                self.deadline = Some(now + policy.max_ack_delay);
            }
        }
        true
    }

    /// An ACK-only packet is due now.
    pub fn ack_due(&self, now: Time) -> bool {
        self.immediate || self.deadline.is_some_and(|d| d <= now)
    }

    /// An ACK may ride along on a packet sent for another reason.
    pub fn has_pending(&self) -> bool {
        self.pending
    }

    pub fn deadline(&self) -> Option<Time> {
        if self.immediate {
            None
        } else {
            self.deadline
        }
    }

    /// The ACK (or ACK_ECN once any ECN-marked packet arrived) to send now.
    pub fn frame(&self, now: Time, use_ack_delay: bool) -> Option<AckFrame> {
        let delay_us = match (use_ack_delay, self.largest_time) {
            (true, Some(t)) => now.saturating_since(t).as_nanos() / 1000,
            _ => 0,
        };
        // §19.3: "ACK Delay ... multiplying the value in the field by 2 to the
        // power of the ack_delay_exponent".
        let ack = AckFrame::from_ranges(
            self.received.iter().rev().map(|(s, e)| s..=e - 1),
            delay_us >> ACK_DELAY_EXPONENT,
        )?;
        Some(if self.ecn_seen {
            ack.with_ecn(self.ecn)
        } else {
            ack
        })
    }

    pub fn on_ack_sent(&mut self) {
        self.pending = false;
        self.immediate = false;
        self.deadline = None;
        self.unacked_eliciting = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAD: Dur = Dur::from_millis(25);
    const POLICY: AckPolicy = AckPolicy {
        max_ack_delay: MAD,
        threshold: ACK_ELICITING_THRESHOLD,
    };

    #[test]
    fn app_data_acks_every_second_packet_or_on_gap() {
        let mut a = AckState::default();
        let t = Time::ZERO;
        let app = PnSpace::ApplicationData;
        assert!(a.on_packet(t, app, 0, true, Ecn::NotEct, POLICY));
        assert!(!a.ack_due(t));
        assert_eq!(a.deadline(), Some(t + MAD));
        assert!(a.on_packet(t, app, 1, true, Ecn::NotEct, POLICY));
        assert!(a.ack_due(t));
        a.on_ack_sent();
        assert!(!a.on_packet(t, app, 1, true, Ecn::NotEct, POLICY));
        assert!(a.on_packet(t, app, 3, true, Ecn::NotEct, POLICY));
        assert!(a.ack_due(t), "gap");
        let f = a.frame(t, true).unwrap();
        assert_eq!(f.ranges().collect::<Vec<_>>(), vec![3..=3, 0..=1]);
        assert!(f.ecn.is_none());
        a.on_ack_sent();
        assert!(a.on_packet(t, app, 4, true, Ecn::Ce, POLICY));
        assert!(a.ack_due(t), "CE");
        assert_eq!(a.frame(t, true).unwrap().ecn.unwrap().ce, 1);
        a.on_ack_sent();
        assert!(a.on_packet(t, app, 5, false, Ecn::NotEct, POLICY));
        assert!(!a.ack_due(t + MAD) && a.has_pending());
    }

    #[test]
    fn a_threshold_of_one_acks_every_packet_at_once() {
        let mut a = AckState::default();
        let t = Time::ZERO;
        let every = AckPolicy {
            threshold: 1,
            ..POLICY
        };
        let app = PnSpace::ApplicationData;
        assert!(a.on_packet(t, app, 0, true, Ecn::NotEct, every));
        assert!(a.ack_due(t));
        assert_eq!(a.deadline(), None);
        a.on_ack_sent();
        // A non-ack-eliciting packet still waits for something to ride on.
        assert!(a.on_packet(t, app, 1, false, Ecn::NotEct, every));
        assert!(!a.ack_due(t + MAD) && a.has_pending());
    }
}
