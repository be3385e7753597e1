//! The sender's retransmission scoreboard (RFC 6675 §3-§4), kept per segment
//! the way Linux keeps its retransmission queue (`TCPCB_SACKED_ACKED`,
//! `TCPCB_LOST`, `TCPCB_SACKED_RETRANS`).
//!
//! Segments keep the boundaries they were first sent with (the MSS is fixed,
//! so Linux would not re-segment either). All byte counters are in sequence
//! space (payload, plus one for a FIN).
//!
//! `pipe` (RFC 6675 §4 `SetPipe`) is kept incrementally as Linux's
//! `packets_in_flight = packets_out - (sacked_out + lost_out) + retrans_out`,
//! in bytes. Costs: a cumulative ACK is O(segments acked); a SACK block is
//! O(log n) to find plus O(segments newly SACKed), because runs of already
//! SACKed segments are jumped over with forward "skip" pointers (union-find
//! with path compression); DupThresh marking walks each segment at most once
//! (`loss_scan` only moves forward); the next segment to retransmit is the
//! minimum of a lazy heap. Nothing here is proportional to the window per ACK,
//! except the RTO's "everything is lost", which happens once per timeout.
//!
//! Not implemented: SACK reneging (the receiver never reneges, so SACK marks
//! are kept across an RTO, as Linux does unless it detects reneging), D-SACK.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use l4slab_core::{Ecn, Time};

use l4slab_cc::rate::{RatePacket, TxSnapshot};

/// RFC 6675 §2 / RFC 5681 §3.2: DupThresh = 3.
pub(crate) const DUP_THRESH: usize = 3;

/// One segment in flight or awaiting retransmission.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SentSeg {
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Carries our FIN (one more sequence number after the payload).
    pub fin: bool,
    /// Selectively acknowledged (RFC 6675 "SACKed").
    pub sacked: bool,
    /// Deemed lost (RFC 6675 `IsLost`, RACK, or RTO).
    pub lost: bool,
    /// A retransmission of this lost segment is in flight (counts in pipe).
    pub retrans: bool,
    /// Marked lost by the retransmission timer (for the trace reason).
    pub rto_lost: bool,
    /// The latest transmission was a tail loss probe (RFC 8985 §7.3).
    pub probe: bool,
    /// Transmissions so far (1 = never retransmitted).
    pub tx_count: u16,
    /// Time of the latest transmission.
    pub xmit_time: Time,
    /// Position of the latest transmission in the connection's send order
    /// (strictly increasing; breaks ties between equal `xmit_time`s).
    pub tx_order: u64,
    /// Delivery-rate snapshot of the latest transmission.
    pub tx: TxSnapshot,
    /// IP-ECN field of the latest transmission (for ECN validation).
    pub ecn: Ecn,
    /// When `sacked`: an index such that every segment from here up to it
    /// (exclusive) is SACKed.
    skip: u64,
}

impl SentSeg {
    pub fn new(seq: u64, len: u32, fin: bool, now: Time, tx_order: u64, tx: TxSnapshot) -> Self {
        SentSeg {
            seq,
            len,
            fin,
            sacked: false,
            lost: false,
            retrans: false,
            rto_lost: false,
            probe: false,
            tx_count: 1,
            xmit_time: now,
            tx_order,
            tx,
            ecn: Ecn::NotEct,
            skip: 0,
        }
    }

    /// Sequence space occupied: payload plus one for a FIN.
    pub fn seq_len(&self) -> u64 {
        u64::from(self.len) + u64::from(self.fin)
    }

    pub fn end(&self) -> u64 {
        self.seq + self.seq_len()
    }
}

/// The delivery-rate estimator samples per segment (`l4slab_cc::rate`).
impl RatePacket for SentSeg {
    fn sent_time(&self) -> Time {
        self.xmit_time
    }
    fn tx_order(&self) -> u64 {
        self.tx_order
    }
    fn tx_snapshot(&self) -> &TxSnapshot {
        &self.tx
    }
}

/// An amount of sequence space, in bytes and in segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Amount {
    bytes: u64,
    segs: u64,
}

impl Amount {
    fn add(&mut self, bytes: u64, segs: u64) {
        self.bytes += bytes;
        self.segs += segs;
    }
    fn sub(&mut self, bytes: u64, segs: u64) {
        self.bytes -= bytes;
        self.segs -= segs;
    }
}

/// Counters (Linux keeps them in packets; we keep bytes and segments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counters {
    /// Everything in the scoreboard (Linux `packets_out`).
    out: Amount,
    /// SACKed (`sacked_out`).
    sacked: Amount,
    /// Lost and not SACKed (`lost_out`).
    lost: Amount,
    /// Retransmission in flight, not SACKed (`retrans_out`).
    retrans: Amount,
}

#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<SentSeg>,
    /// Absolute index of `segs[0]`; indices never change meaning.
    base: u64,
    c: Counters,
    /// Absolute indices of the three highest SACKed segments, highest first.
    top_sacked: [u64; DUP_THRESH],
    top_len: usize,
    /// Every un-SACKed segment below this index has been marked lost once.
    loss_scan: u64,
    /// Candidates for retransmission (lost, not retransmitted), lowest first.
    /// Entries are checked when they reach the top (lazy deletion).
    retx: BinaryHeap<Reverse<u64>>,
}

impl Scoreboard {
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    pub fn front_idx(&self) -> u64 {
        self.base
    }

    pub fn end_idx(&self) -> u64 {
        self.base + self.segs.len() as u64
    }

    pub fn contains(&self, idx: u64) -> bool {
        idx >= self.base && idx < self.end_idx()
    }

    pub fn get(&self, idx: u64) -> &SentSeg {
        &self.segs[(idx - self.base) as usize]
    }

    fn get_mut(&mut self, idx: u64) -> &mut SentSeg {
        &mut self.segs[(idx - self.base) as usize]
    }

    pub fn back(&self) -> Option<&SentSeg> {
        self.segs.back()
    }

    /// RFC 6675 §4 `pipe`: bytes the sender believes are in the network.
    pub fn in_flight(&self) -> u64 {
        let c = &self.c;
        c.out.bytes - c.sacked.bytes - c.lost.bytes + c.retrans.bytes
    }

    /// `pipe` in segments (Linux `tcp_packets_in_flight`).
    pub fn in_flight_segs(&self) -> u64 {
        let c = &self.c;
        c.out.segs - c.sacked.segs - c.lost.segs + c.retrans.segs
    }

    /// SACKed segments (RACK's `segs_sacked`).
    pub fn sacked_segs(&self) -> u64 {
        self.c.sacked.segs
    }

    /// Bytes marked lost and not SACKed, retransmitted or not (Linux `lost_out`).
    pub fn lost_bytes(&self) -> u64 {
        self.c.lost.bytes
    }

    /// Lost bytes not yet retransmitted (Linux `lost_out - retrans_out`).
    pub fn lost_pending(&self) -> u64 {
        self.c.lost.bytes - self.c.retrans.bytes
    }

    /// Append a new transmission; returns its index.
    pub fn push(&mut self, seg: SentSeg) -> u64 {
        if let Some(b) = self.segs.back() {
            assert_eq!(b.end(), seg.seq, "scoreboard segments must be contiguous");
            assert!(!b.fin, "nothing follows a FIN");
        }
        self.c.out.add(seg.seq_len(), 1);
        self.segs.push_back(seg);
        self.end_idx() - 1
    }

    /// Remove `bytes` (and `segs`: 1 for a whole segment, 0 for a trimmed
    /// head) of `s` from every counter it is in.
    fn uncount(c: &mut Counters, s: &SentSeg, bytes: u64, segs: u64) {
        c.out.sub(bytes, segs);
        if s.sacked {
            c.sacked.sub(bytes, segs);
        } else {
            if s.lost {
                c.lost.sub(bytes, segs);
            }
            if s.retrans {
                c.retrans.sub(bytes, segs);
            }
        }
    }

    /// Cumulative ACK up to `ack`: drop everything below it. `f(idx, seg,
    /// payload_bytes)` is called for each segment delivered by this ACK (not
    /// previously SACKed), in ascending order.
    pub fn cum_ack(&mut self, ack: u64, mut f: impl FnMut(u64, &SentSeg, u64)) {
        while let Some(front) = self.segs.front() {
            if front.end() <= ack {
                let s = self.segs.pop_front().expect("front exists");
                Self::uncount(&mut self.c, &s, s.seq_len(), 1);
                if !s.sacked {
                    f(self.base, &s, u64::from(s.len));
                }
                self.base += 1;
            } else if front.seq < ack {
                // The receiver acknowledged part of a segment (it trimmed data
                // beyond its window): cut the acknowledged head off.
                let cut = ack - front.seq;
                let idx = self.base;
                let s = *front;
                Self::uncount(&mut self.c, &s, cut, 0);
                let s = self.get_mut(idx);
                s.seq = ack;
                s.len -= cut as u32;
                let s = *s;
                if !s.sacked {
                    f(idx, &s, cut);
                }
                break;
            } else {
                break;
            }
        }
        // The three highest SACKed segments that were acked are gone.
        while self.top_len > 0 && self.top_sacked[self.top_len - 1] < self.base {
            self.top_len -= 1;
        }
    }

    /// First un-SACKed index at or after the SACKed `idx` (with path compression).
    fn skip_sacked(&mut self, idx: u64) -> u64 {
        let end = self.end_idx();
        let mut j = idx;
        while j < end && self.get(j).sacked {
            j = self.get(j).skip;
        }
        let mut k = idx;
        while k < j {
            let s = self.get_mut(k);
            let next = s.skip;
            s.skip = j;
            k = next;
        }
        j
    }

    /// Mark segments fully inside the SACK block `[start, end)` (RFC 2018 §3:
    /// `end` is the byte after the block). `f(idx, seg, payload_bytes)` is
    /// called for each newly SACKed segment, in ascending order.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(u64, &SentSeg, u64)) {
        if self.segs.is_empty() || start >= end {
            return;
        }
        let pos = self.segs.partition_point(|s| s.end() <= start) as u64;
        let mut idx = self.base + pos;
        let stop = self.end_idx();
        while idx < stop {
            let s = *self.get(idx);
            if s.seq >= end {
                break;
            }
            if s.sacked {
                idx = self.skip_sacked(idx);
                continue;
            }
            // Only a segment the block covers completely is SACKed (Linux
            // would split a partially covered one; partial cover only arises
            // when the receiver trimmed data).
            if s.seq >= start && s.end() <= end {
                let bytes = s.seq_len();
                if s.lost {
                    self.c.lost.sub(bytes, 1);
                }
                if s.retrans {
                    self.c.retrans.sub(bytes, 1);
                }
                self.c.sacked.add(bytes, 1);
                let m = self.get_mut(idx);
                m.sacked = true;
                m.lost = false;
                m.retrans = false;
                m.skip = idx + 1;
                let m = *m;
                self.note_sacked(idx);
                f(idx, &m, u64::from(m.len));
            }
            idx += 1;
        }
    }

    /// Keep the three highest SACKed indices (for RFC 6675 `IsLost`).
    fn note_sacked(&mut self, idx: u64) {
        let top = &mut self.top_sacked;
        let mut pos = self.top_len;
        while pos > 0 && top[pos - 1] < idx {
            pos -= 1;
        }
        if pos >= DUP_THRESH {
            return;
        }
        let last = self.top_len.min(DUP_THRESH - 1);
        let mut i = last;
        while i > pos {
            top[i] = top[i - 1];
            i -= 1;
        }
        top[pos] = idx;
        self.top_len = (self.top_len + 1).min(DUP_THRESH);
    }

    /// Mark `idx` lost (again, if its retransmission was lost). Returns the
    /// sequence bytes newly counted as lost, or `None` if nothing changed.
    pub fn mark_lost(&mut self, idx: u64, by_rto: bool) -> Option<u64> {
        let s = self.get_mut(idx);
        if s.sacked {
            return None;
        }
        let bytes = s.seq_len();
        if !s.lost {
            s.lost = true;
            self.c.lost.add(bytes, 1);
        } else if s.retrans {
            s.retrans = false;
            self.c.retrans.sub(bytes, 1);
        } else {
            return None; // already waiting for retransmission
        }
        let s = self.get_mut(idx);
        s.rto_lost = by_rto;
        self.retx.push(Reverse(idx));
        Some(bytes)
    }

    /// RFC 6675 §4 `IsLost(SeqNum)`: "DupThresh discontiguous SACKed sequences
    /// have arrived above 'SeqNum'" — counted in SACKed segments, as Linux
    /// counts `sacked_out` against `tp->reordering`. Every un-SACKed segment
    /// below the third-highest SACKed one is marked lost (once).
    pub fn mark_lost_dupthresh(&mut self, mut f: impl FnMut(u64, &SentSeg)) {
        if self.top_len < DUP_THRESH {
            return;
        }
        let third = self.top_sacked[DUP_THRESH - 1];
        let mut idx = self.loss_scan.max(self.base);
        while idx < third {
            let s = *self.get(idx);
            if s.sacked {
                idx = self.skip_sacked(idx);
                continue;
            }
            if !s.lost && self.mark_lost(idx, false).is_some() {
                f(idx, self.get(idx));
            }
            idx += 1;
        }
        self.loss_scan = self.loss_scan.max(third);
    }

    /// RFC 6298 §5 / RFC 5681 §3.1 after a timeout: everything outstanding
    /// and not SACKed is lost, including retransmissions in flight.
    pub fn mark_all_lost(&mut self, mut f: impl FnMut(u64, &SentSeg)) {
        for idx in self.base..self.end_idx() {
            if self.mark_lost(idx, true).is_some() {
                f(idx, self.get(idx));
            }
        }
        self.loss_scan = self.end_idx();
    }

    /// The lowest segment waiting for retransmission (RFC 6675 §4 `NextSeg`
    /// rule 1: "the lowest ... unSACKed ... IsLost").
    pub fn next_retransmit(&mut self) -> Option<u64> {
        while let Some(&Reverse(idx)) = self.retx.peek() {
            if self.contains(idx) {
                let s = self.get(idx);
                if s.lost && !s.retrans && !s.sacked {
                    return Some(idx);
                }
            }
            self.retx.pop();
        }
        None
    }

    /// The latest transmission of `idx` carried IP-ECN field `ecn`.
    pub fn set_ecn(&mut self, idx: u64, ecn: Ecn) {
        self.get_mut(idx).ecn = ecn;
    }

    /// `idx` (returned by [`Self::next_retransmit`]) is being retransmitted now.
    pub fn on_retransmit(&mut self, idx: u64, now: Time, tx_order: u64, tx: TxSnapshot) {
        assert_eq!(
            self.retx.pop(),
            Some(Reverse(idx)),
            "retransmit out of order"
        );
        let s = self.get_mut(idx);
        assert!(s.lost && !s.retrans && !s.sacked, "retransmitting {s:?}");
        s.retrans = true;
        s.probe = false;
        s.tx_count = s.tx_count.saturating_add(1);
        s.xmit_time = now;
        s.tx_order = tx_order;
        s.tx = tx;
        let bytes = s.seq_len();
        self.c.retrans.add(bytes, 1);
    }

    /// `idx` (the last segment) is sent again as a tail loss probe (RFC 8985
    /// §7.3): a new transmission time for RACK and the timestamp checks,
    /// without marking it lost or counting it in `pipe` again.
    pub fn on_probe(&mut self, idx: u64, now: Time, tx_order: u64, tx: TxSnapshot) {
        let s = self.get_mut(idx);
        assert!(!s.sacked, "probing a SACKed segment {s:?}");
        s.probe = true;
        s.tx_count = s.tx_count.saturating_add(1);
        s.xmit_time = now;
        s.tx_order = tx_order;
        s.tx = tx;
    }

    /// Undo after a spurious timeout (Linux `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`): nothing is lost any more. O(window), once per undo.
    /// A retransmission in flight stops being counted separately.
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            if !s.sacked {
                s.lost = false;
                s.retrans = false;
                s.rto_lost = false;
            }
        }
        self.c.lost = Amount::default();
        self.c.retrans = Amount::default();
        self.retx.clear();
        self.loss_scan = self.base;
    }

    /// O(n) check of every counter against the segments (tests only).
    pub fn check_invariants(&self) {
        let mut c = Counters::default();
        let mut prev_end = None;
        for s in &self.segs {
            if let Some(e) = prev_end {
                assert_eq!(s.seq, e, "gap in scoreboard");
            }
            prev_end = Some(s.end());
            c.out.add(s.seq_len(), 1);
            if s.sacked {
                c.sacked.add(s.seq_len(), 1);
                assert!(!s.lost && !s.retrans);
            } else {
                if s.lost {
                    c.lost.add(s.seq_len(), 1);
                }
                if s.retrans {
                    assert!(s.lost, "a retransmission in flight implies lost");
                    c.retrans.add(s.seq_len(), 1);
                }
            }
        }
        assert_eq!(c, self.c, "scoreboard counters drifted");
        for &i in &self.top_sacked[..self.top_len] {
            assert!(self.get(i).sacked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 segments of 100 B starting at seq 1.
    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(SentSeg::new(
                1 + 100 * i,
                100,
                false,
                Time::ZERO,
                i,
                TxSnapshot::default(),
            ));
        }
        b
    }

    #[test]
    fn sack_then_cum_ack_counts_each_segment_once() {
        let mut b = board(10);
        assert_eq!((b.in_flight(), b.in_flight_segs()), (1000, 10));
        let mut seen = Vec::new();
        b.sack(301, 601, |i, _, n| seen.push((i, n))); // segments 3,4,5
        assert_eq!(seen, [(3, 100), (4, 100), (5, 100)]);
        // Re-reporting the same block (grown by one) only visits the new one.
        seen.clear();
        b.sack(301, 701, |i, _, n| seen.push((i, n)));
        assert_eq!(seen, [(6, 100)]);
        assert_eq!(b.in_flight(), 600);
        // IsLost: segments 0,1,2 are below the third-highest SACKed (4).
        let mut lost = Vec::new();
        b.mark_lost_dupthresh(|i, _| lost.push(i));
        assert_eq!(lost, [0, 1, 2]);
        assert_eq!(b.in_flight(), 300);
        assert_eq!(b.next_retransmit(), Some(0));
        b.on_retransmit(0, Time::from_millis(1), 10, TxSnapshot::default());
        assert_eq!((b.in_flight(), b.in_flight_segs()), (400, 4));
        assert_eq!(b.next_retransmit(), Some(1));
        b.check_invariants();
        // Cumulative ACK of 0..=6: only 0,1,2 are newly delivered.
        seen.clear();
        b.cum_ack(701, |i, _, n| seen.push((i, n)));
        assert_eq!(seen, [(0, 100), (1, 100), (2, 100)]);
        assert_eq!(b.in_flight(), 300);
        assert_eq!(b.next_retransmit(), None);
        b.check_invariants();
    }

    #[test]
    fn partial_blocks_and_partial_acks() {
        let mut b = board(3);
        let mut n = 0;
        b.sack(150, 301, |_, _, _| n += 1); // covers only segment 2 (201..301) fully
        assert_eq!(n, 1);
        b.cum_ack(51, |_, _, bytes| assert_eq!(bytes, 50));
        assert_eq!(b.get(0).seq, 51);
        assert_eq!((b.in_flight(), b.in_flight_segs()), (150, 2));
        b.check_invariants();
    }

    #[test]
    fn rto_marks_everything_including_retransmissions() {
        let mut b = board(4);
        b.sack(301, 401, |_, _, _| {});
        assert!(b.mark_lost(0, false).is_some());
        b.next_retransmit();
        b.on_retransmit(0, Time::ZERO, 4, TxSnapshot::default());
        let mut n = 0;
        b.mark_all_lost(|_, _| n += 1);
        assert_eq!(n, 3); // 0 (its retransmission), 1, 2; 3 is SACKed
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.lost_pending(), 300);
        b.check_invariants();
    }

    #[test]
    fn skip_pointers_merge_runs() {
        let mut b = board(8);
        b.sack(101, 201, |_, _, _| {});
        b.sack(301, 401, |_, _, _| {});
        b.sack(201, 301, |_, _, _| {}); // joins the two runs
        let mut seen = Vec::new();
        b.sack(1, 801, |i, _, _| seen.push(i));
        assert_eq!(seen, [0, 4, 5, 6, 7]);
        assert_eq!(b.sacked_segs(), 8);
        b.check_invariants();
    }
}
