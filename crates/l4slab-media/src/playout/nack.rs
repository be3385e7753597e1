//! The receiver's list of missing packets: which to NACK, when to NACK them
//! again, and when to give up.
//!
//! After libwebrtc `modules/video_coding/nack_requester.cc` (the successor
//! of `nack_module2.cc`; read from a stored copy of the source, not listed
//! in REFERENCES C6): a sequence-number gap puts every missing number on the
//! list and NACKs it at once (`kDefaultSendNackDelay` = 0, no reordering
//! histogram since every packet counts as retransmitted there); a number is
//! NACKed again once an RTT has passed since its last NACK
//! (`now - sent_at_time >= rtt_`), at most `kMaxNackRetries` = 10 times;
//! numbers more than `kMaxPacketAge` = 10 000 behind the newest are dropped;
//! a gap that would grow the list past `kMaxNackPackets` = 1000 clears it.
//! `ClearUpTo` forgets numbers whose frame was decoded or dropped.
//!
//! Deviations: libwebrtc re-NACKs from a 20 ms periodic task
//! (`NackPeriodicProcessor::kUpdateInterval`); here the re-NACK is due
//! exactly one RTT after the last one. libwebrtc forgets a number after its
//! 10th NACK; here it stays, as [`Repair::Waiting`], for one more RTT so a
//! retransmission of the last NACK can still arrive — the frame buffer uses
//! the list to tell a frame that may still complete from one that never
//! will. Without NACK a missing number waits `reorder_wait` (a reordered
//! packet may still fill it) and is then given up.

use std::collections::VecDeque;

use l4slab_core::{Dur, Time};

/// `kMaxPacketAge`: missing numbers this far behind the newest are dropped.
pub(crate) const MAX_PACKET_AGE: u64 = 10_000;
/// `kMaxNackPackets`: the most missing numbers the list holds.
pub(crate) const MAX_NACK_PACKETS: usize = 1_000;

/// Where one missing packet stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repair {
    /// NACKed `sent` times, the last at `last`; with `sent == 0`, found
    /// missing at `last` and due for its first NACK.
    Nacking { sent: u32, last: Time },
    /// No more NACKs: it may still arrive until `until`, then it is given up.
    Waiting { until: Time },
}

impl Repair {
    /// When this entry next needs attention.
    fn due(self, rtt: Dur) -> Time {
        match self {
            Repair::Nacking { sent: 0, last } => last,
            Repair::Nacking { last, .. } => last.saturating_add(rtt),
            Repair::Waiting { until } => until,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Missing {
    seq: u64,
    repair: Repair,
}

/// Missing packets in increasing `seq` (gaps are found in that order).
#[derive(Debug)]
pub(crate) struct MissingList {
    list: VecDeque<Missing>,
    nack: bool,
    max_retries: u32,
    reorder_wait: Dur,
    /// The earliest time [`MissingList::poll`] has work; `Time::MAX`: none.
    due: Time,
    pub(crate) nacks_sent: u64,
    /// Missing packets removed without arriving, other than because their
    /// frame was rendered or dropped: retries used up, too old, overflow.
    pub(crate) given_up: u64,
    /// Gaps that would have grown the list past `MAX_NACK_PACKETS`.
    pub(crate) overflows: u64,
}

impl MissingList {
    pub(crate) fn new(nack: bool, max_retries: u32, reorder_wait: Dur) -> Self {
        MissingList {
            list: VecDeque::with_capacity(MAX_NACK_PACKETS),
            nack: nack && max_retries > 0,
            max_retries,
            reorder_wait,
            due: Time::MAX,
            nacks_sent: 0,
            given_up: 0,
            overflows: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Packets `from..to` were found missing at `now` (packet `to` arrived
    /// and `from - 1` was the newest before it).
    pub(crate) fn add_gap(&mut self, now: Time, from: u64, to: u64) {
        debug_assert!(from < to);
        // nack_requester.cc AddPacketsToNack: "Remove old packets."
        let oldest = to.saturating_sub(MAX_PACKET_AGE);
        while self.list.front().is_some_and(|m| m.seq < oldest) {
            self.list.pop_front();
            self.given_up += 1;
        }
        let n = to - from;
        // "if (nack_list_.size() + num_new_nacks > kMaxNackPackets)
        //  { nack_list_.clear(); ... RequestKeyFrame(); }" -- the keyframe
        // request follows from the frames that can no longer complete.
        if self.list.len() as u64 + n > MAX_NACK_PACKETS as u64 {
            self.given_up += self.list.len() as u64 + n;
            self.list.clear();
            self.overflows += 1;
            return;
        }
        let repair = self.new_repair(now);
        for seq in from..to {
            self.list.push_back(Missing { seq, repair });
        }
        self.due = self.due.min(repair.due(Dur::ZERO));
    }

    /// Packets `from..to` were found missing at `now` below every number
    /// seen so far (packet `from - 1` arrived reordered before the first
    /// one received; libwebrtc never NACKs those).
    pub(crate) fn add_gap_below(&mut self, now: Time, from: u64, to: u64) {
        debug_assert!(from < to && self.list.front().is_none_or(|m| m.seq > to));
        let n = to - from;
        if self.list.len() as u64 + n > MAX_NACK_PACKETS as u64 {
            self.given_up += n;
            self.overflows += 1;
            return;
        }
        let repair = self.new_repair(now);
        for seq in (from..to).rev() {
            self.list.push_front(Missing { seq, repair });
        }
        self.due = self.due.min(repair.due(Dur::ZERO));
    }

    fn new_repair(&self, now: Time) -> Repair {
        if self.nack {
            Repair::Nacking { sent: 0, last: now }
        } else {
            Repair::Waiting {
                until: now.saturating_add(self.reorder_wait),
            }
        }
    }

    /// Packet `seq` arrived; true if it was on the list.
    pub(crate) fn arrived(&mut self, seq: u64) -> bool {
        match self.list.binary_search_by_key(&seq, |m| m.seq) {
            Ok(i) => {
                self.list.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// nack_requester.cc `ClearUpTo`: forget every number up to `seq`
    /// (their frame was rendered or dropped).
    pub(crate) fn clear_through(&mut self, seq: u64) {
        while self.list.front().is_some_and(|m| m.seq <= seq) {
            self.list.pop_front();
        }
    }

    /// Whether a packet numbered in `lo..=hi` may still arrive.
    pub(crate) fn pending_in(&self, lo: u64, hi: u64) -> bool {
        let i = self.list.partition_point(|m| m.seq < lo);
        self.list.get(i).is_some_and(|m| m.seq <= hi)
    }

    /// When [`MissingList::poll`] next has work.
    pub(crate) fn next_due(&self) -> Option<Time> {
        (self.due != Time::MAX).then_some(self.due)
    }

    /// The RTT changed: re-derive when the next NACK is due.
    pub(crate) fn rtt_changed(&mut self, rtt: Dur) {
        self.due = self
            .list
            .iter()
            .map(|m| m.repair.due(rtt))
            .min()
            .unwrap_or(Time::MAX);
    }

    /// Send the NACKs due at `now` (one call of `nack` per number) and give
    /// up on packets whose wait is over.
    pub(crate) fn poll(&mut self, now: Time, rtt: Dur, nack: &mut dyn FnMut(u64)) {
        if now < self.due {
            return;
        }
        let max_retries = self.max_retries;
        let (mut sent_now, mut given_up) = (0, 0);
        let mut due = Time::MAX;
        self.list.retain_mut(|m| {
            match m.repair {
                Repair::Nacking { sent, last } if sent == 0 || now >= last.saturating_add(rtt) => {
                    // GetNackBatch: "nack_on_rtt_passed = now - sent_at_time >= rtt_"
                    nack(m.seq);
                    sent_now += 1;
                    let sent = sent + 1;
                    // "if (retries >= kMaxNackRetries) nack_list_.erase(it)":
                    // here it waits one RTT for that last retransmission.
                    m.repair = if sent >= max_retries {
                        Repair::Waiting {
                            until: now.saturating_add(rtt),
                        }
                    } else {
                        Repair::Nacking { sent, last: now }
                    };
                }
                Repair::Waiting { until } if now >= until => {
                    given_up += 1;
                    return false;
                }
                _ => {}
            }
            due = due.min(m.repair.due(rtt));
            true
        });
        self.nacks_sent += sent_now;
        self.given_up += given_up;
        self.due = due;
    }
}
