//! The acknowledged edge of the bytes in flight (S2 §"Status Update on
//! Receiving Feedback"): each report moves it to the report's highest
//! sequence number, in O(1) through the ring of cumulative sent bytes.

use crate::Feedback;

use super::{Scream, SENT_RING};

impl Scream {
    /// Bytes-in-flight edge: the report's highest sequence number is
    /// acknowledged together with everything below it (S2 §"Status Update
    /// on Receiving Feedback"; SC `detectLoss` "treated as received even
    /// though they are not ... similar to what SACK does").
    pub(super) fn advance_acked_edge(&mut self, fb: &Feedback<'_>) {
        let Some(hi) = fb.packets.iter().map(|p| p.seq).max() else {
            return;
        };
        if self.highest_acked.is_some_and(|h| hi <= h) {
            return;
        }
        let slot = self.sent[(hi % SENT_RING as u64) as usize];
        let newly = if slot.0 == hi {
            let n = slot.1.saturating_sub(self.bytes_acked_edge);
            self.bytes_acked_edge = slot.1;
            n
        } else {
            // Not in the ring (too old, or never passed to on_sent): count
            // the report's own sizes above the old edge.
            let n: u64 = fb
                .packets
                .iter()
                .filter(|p| self.highest_acked.is_none_or(|h| p.seq > h))
                .map(|p| u64::from(p.size))
                .sum();
            self.bytes_acked_edge = (self.bytes_acked_edge + n).min(self.bytes_sent);
            n
        };
        self.highest_acked = Some(hi);
        self.bytes_newly_acked += newly;
        self.bytes_in_flight = self.bytes_sent.saturating_sub(self.bytes_acked_edge);
    }
}
