//! The receiving half: reassembly, in-order delivery, SACK blocks, delayed
//! ACKs and the timestamps echo.
//!
//! * Reassembly: out-of-order data is a sorted `Vec` of disjoint,
//!   non-adjacent byte ranges above `rcv_nxt`. Holes are few (one per loss
//!   burst in flight), so insertion and merging are cheap; no payload is kept.
//! * Advertised window (Linux `tcp_select_window`, `net/ipv4/tcp_output.c`):
//!   the free buffer — the application reads in-order data immediately, so
//!   `receive_buffer - out-of-order bytes` (Linux `__tcp_select_window`:
//!   `tcp_space`, which the out-of-order queue's memory reduces) — but never
//!   less than what keeps the right edge where the last ACK put it ("Never
//!   shrink the offered window", `tcp_shrink_window = 0`): behind a hole
//!   `rcv_nxt` stands still and the sender keeps the window it was offered.
//! * SACK (RFC 2018 §4): the first block holds the segment that triggered the
//!   ACK, then the most recently reported blocks; at most 3 (timestamps use
//!   the rest of the option space).
//! * ACK policy (RFC 5681 §4.2, Linux `__tcp_ack_snd_check`): ACK at once for
//!   out-of-order data, data that fills (part of) a hole, duplicates, a FIN;
//!   otherwise when more than one full segment is unacknowledged (every second
//!   full-sized segment) or when the delayed-ACK timer expires.
//! * TS.Recent (RFC 7323 §4.3) so that the echo measures the RTT of the
//!   segment that the ACK acknowledges.
//! * D-SACK (RFC 2883 §4, Linux `tcp_dsack_set`, with `dsack` on): a
//!   segment that arrives (in part) a second time — below `rcv_nxt` or
//!   inside a block already held — is reported once, as the first SACK
//!   block of the next ACK (sent at once), before the ordinary blocks.
//!
//! Not implemented: Linux quick-ACK mode (the first ~16
//! segments of a connection ACKed at once), adaptive delayed-ACK timeout
//! (Linux `ato`, 40-200 ms; here fixed), PAWS, receive-buffer autotuning.

use l4slab_core::{Dur, Time};

use crate::segment::{SackBlock, MAX_SACK_BLOCKS};

/// What a data segment did to the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RxOutcome {
    /// Bytes newly delivered in order to the application.
    pub delivered: u64,
    /// The peer's FIN was reached (all data before it delivered) just now.
    pub fin_reached: bool,
}

#[derive(Debug)]
pub(crate) struct Receiver {
    /// Next sequence number expected; valid once `synced`.
    rcv_nxt: u64,
    synced: bool,
    /// Out-of-order ranges `[start, end)`, sorted, disjoint, not touching, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    ooo_bytes: u64,
    /// Blocks in the order they will be reported (RFC 2018 §4), refreshed on change.
    recent: [SackBlock; MAX_SACK_BLOCKS],
    recent_len: usize,
    /// Sequence number of the peer's FIN, once seen.
    fin_seq: Option<u64>,
    fin_done: bool,
    /// RFC 7323 §4.3 `TS.Recent`.
    ts_recent: Time,
    /// RFC 7323 §4.3 `Last.ACK.sent`.
    last_ack_sent: u64,
    /// Payload bytes delivered since the last ACK we sent.
    unacked: u64,
    /// An ACK must go out now.
    ack_now: bool,
    /// Delayed-ACK deadline, if an ACK is being delayed.
    delack: Option<Time>,
    buffer: u64,
    /// The right edge last advertised (Linux `rcv_wup + rcv_wnd`).
    right_edge: u64,
    mss: u64,
    delayed_ack: bool,
    delack_timeout: Dur,
    /// Report duplicates with D-SACK.
    dsack_on: bool,
    /// The duplicate range to report first on the next ACK (RFC 2883 §4).
    dsack: Option<SackBlock>,
}

impl Receiver {
    pub fn new(buffer: u64, mss: u64, delayed_ack: bool, delack_timeout: Dur, dsack: bool) -> Self {
        Receiver {
            rcv_nxt: 0,
            synced: false,
            ooo: Vec::new(),
            ooo_bytes: 0,
            recent: [SackBlock::default(); MAX_SACK_BLOCKS],
            recent_len: 0,
            fin_seq: None,
            fin_done: false,
            ts_recent: Time::ZERO,
            last_ack_sent: 0,
            unacked: 0,
            ack_now: false,
            delack: None,
            buffer,
            right_edge: 0,
            mss,
            delayed_ack,
            delack_timeout,
            dsack_on: dsack,
            dsack: None,
        }
    }

    /// The peer's SYN (initial sequence number `irs`) arrived with `ts_val`.
    pub fn on_syn(&mut self, irs: u64, ts_val: Time) {
        if self.synced {
            // A retransmitted SYN: the handshake reply goes out again.
            self.ack_now = true;
            return;
        }
        self.synced = true;
        // RFC 9293 §3.10.7.3: RCV.NXT <- SEG.SEQ + 1, IRS <- SEG.SEQ
        self.rcv_nxt = irs + 1;
        self.last_ack_sent = self.rcv_nxt;
        self.ts_recent = ts_val; // RFC 7323 §4.3 (1): TS.Recent from the SYN
                                 // RFC 5681 §4.2 / RFC 9293: the handshake is acknowledged at once.
        self.ack_now = true;
    }

    pub fn synced(&self) -> bool {
        self.synced
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn ts_recent(&self) -> Time {
        self.ts_recent
    }

    /// Advertised window: the free receive buffer (the app reads in-order
    /// data at once), or more if that would retract the right edge already
    /// offered (Linux `tcp_select_window`: `if (new_win < cur_win) new_win =
    /// cur_win`, with `cur_win = rcv_wup + rcv_wnd - rcv_nxt`).
    pub fn window(&self) -> u64 {
        let free = self.buffer - self.ooo_bytes;
        free.max(self.right_edge.saturating_sub(self.rcv_nxt))
    }

    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    pub fn ack_now(&self) -> bool {
        self.ack_now
    }

    pub fn delack_deadline(&self) -> Option<Time> {
        self.delack
    }

    pub fn fin_done(&self) -> bool {
        self.fin_done
    }

    /// Force an immediate ACK (e.g. a duplicate SYN/ACK).
    pub fn request_ack(&mut self) {
        self.ack_now = true;
    }

    /// The delayed-ACK timer fired.
    pub fn on_delack_timer(&mut self) {
        self.delack = None;
        self.ack_now = true;
    }

    /// The SACK blocks to put on the next ACK: a pending D-SACK block first
    /// (RFC 2883 §4 (1)), then the ordinary ones, most recent first.
    pub fn sack_blocks(&self) -> ([SackBlock; MAX_SACK_BLOCKS], u8) {
        let Some(d) = self.dsack else {
            return (self.recent, self.recent_len as u8);
        };
        let mut out = [SackBlock::default(); MAX_SACK_BLOCKS];
        out[0] = d;
        let n = self.recent_len.min(MAX_SACK_BLOCKS - 1);
        out[1..=n].copy_from_slice(&self.recent[..n]);
        (out, (n + 1) as u8)
    }

    /// A segment carrying our current ACK state is being sent.
    pub fn on_ack_sent(&mut self) {
        // RFC 2883 §4: a duplicate is reported in one ACK only.
        self.dsack = None;
        // Linux tcp_select_window: rcv_wup = rcv_nxt, rcv_wnd = the window sent.
        self.right_edge = self.rcv_nxt + self.window();
        self.last_ack_sent = self.rcv_nxt;
        self.unacked = 0;
        self.ack_now = false;
        self.delack = None;
    }

    /// RFC 7323 §4.3 (2): "If SEG.TSval >= TS.Recent and SEG.SEQ <= Last.ACK.sent
    /// then SEG.TSval is copied to TS.Recent".
    pub fn update_ts_recent(&mut self, seq: u64, ts_val: Time) {
        if self.synced && ts_val >= self.ts_recent && seq <= self.last_ack_sent {
            self.ts_recent = ts_val;
        }
    }

    /// A segment with `len` payload bytes at `seq` (and a FIN after them if
    /// `fin`) arrived at `now`.
    pub fn on_data(&mut self, now: Time, seq: u64, len: u32, fin: bool) -> RxOutcome {
        assert!(self.synced, "data before the SYN");
        let mut out = RxOutcome::default();
        let end = seq + u64::from(len);
        if end < self.rcv_nxt || (end == self.rcv_nxt && (!fin || self.fin_done)) {
            // RFC 9293 §3.10.7.4: "If an incoming segment is not acceptable, an
            // acknowledgment should be sent in reply" (an old duplicate);
            // Linux tcp_data_queue: tcp_dsack_set(seq, end_seq), immediate ACK.
            self.note_duplicate(seq, end);
            self.ack_now = true;
            return out;
        }
        if seq < self.rcv_nxt {
            // Partly old (Linux tcp_data_queue: tcp_dsack_set(seq, rcv_nxt)).
            self.note_duplicate(seq, self.rcv_nxt);
        } else if let Some((s, e)) = self.range_of(seq) {
            // Inside data already held out of order (Linux tcp_data_queue_ofo).
            self.note_duplicate(seq, end.min(e).max(s));
        }
        // RFC 9293 §3.10.7.4 acceptance: keep only what fits the buffer; data
        // (and a FIN) beyond `rcv_nxt + buffer` is dropped and will be resent.
        let limit = self.rcv_nxt + self.buffer;
        let end = end.min(limit);
        if fin && end == seq + u64::from(len) {
            if let Some(f) = self.fin_seq {
                assert_eq!(f, end, "the peer's FIN moved");
            }
            self.fin_seq = Some(end);
        }
        if seq <= self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            out.delivered = self.advance(end);
            if had_holes {
                // RFC 5681 §4.2: "an immediate ACK SHOULD be generated when a
                // segment arrives that fills in all or part of a gap".
                self.ack_now = true;
            }
            self.refresh_recent(None);
        } else if seq < end {
            self.insert_ooo(seq, end);
            // RFC 5681 §4.2: "an immediate duplicate ACK SHOULD be sent when an
            // out-of-order segment arrives".
            self.ack_now = true;
            self.refresh_recent(Some(seq));
        } else {
            // Nothing acceptable (beyond the window), or a bare FIN beyond a
            // hole (remembered above): ACK at once.
            self.ack_now = true;
        }
        if !self.fin_done && self.fin_seq == Some(self.rcv_nxt) {
            // RFC 9293 §3.10.7.4 eighth step: the FIN consumes one sequence number.
            self.rcv_nxt += 1;
            self.fin_done = true;
            out.fin_reached = true;
            self.ack_now = true;
        }
        if out.delivered > 0 && !self.ack_now {
            self.unacked += out.delivered;
            // RFC 5681 §4.2: "an ACK SHOULD be generated for at least every
            // second full-sized segment"; Linux: more than one rcv_mss unacked.
            if !self.delayed_ack || self.unacked > self.mss {
                self.ack_now = true;
            } else if self.delack.is_none() {
                // RFC 5681 §4.2: an ACK "MUST be generated within 500 ms";
                // Linux delays it at most TCP_DELACK_MIN initially.
                self.delack = Some(now + self.delack_timeout);
            }
        }
        out
    }

    /// RFC 2883 §4: remember `[start, end)` as received twice (payload only).
    fn note_duplicate(&mut self, start: u64, end: u64) {
        if self.dsack_on && start < end {
            self.dsack = Some(SackBlock { start, end });
        }
    }

    /// Deliver in order up to `end`, pulling in any out-of-order ranges it reaches.
    fn advance(&mut self, end: u64) -> u64 {
        let old = self.rcv_nxt;
        let mut nxt = self.rcv_nxt.max(end);
        let mut merged = 0;
        for &(s, e) in &self.ooo {
            if s > nxt {
                break;
            }
            nxt = nxt.max(e);
            self.ooo_bytes -= e - s;
            merged += 1;
        }
        self.ooo.drain(..merged);
        self.rcv_nxt = nxt;
        nxt - old
    }

    /// Insert `[s, e)` (above `rcv_nxt`) into the out-of-order ranges.
    fn insert_ooo(&mut self, s: u64, e: u64) {
        debug_assert!(s > self.rcv_nxt);
        // First range that ends at or after `s` (touching ranges merge).
        let i = self.ooo.partition_point(|&(_, re)| re < s);
        let mut j = i;
        let (mut ns, mut ne) = (s, e);
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            let (rs, re) = self.ooo[j];
            ns = ns.min(rs);
            ne = ne.max(re);
            self.ooo_bytes -= re - rs;
            j += 1;
        }
        self.ooo_bytes += ne - ns;
        if j > i {
            self.ooo[i] = (ns, ne);
            self.ooo.drain(i + 1..j);
        } else {
            self.ooo.insert(i, (ns, ne));
        }
        assert!(
            self.ooo_bytes <= self.buffer,
            "reassembly beyond the buffer"
        );
    }

    /// The current range containing `seq`, if any.
    fn range_of(&self, seq: u64) -> Option<(u64, u64)> {
        let i = self.ooo.partition_point(|&(_, e)| e <= seq);
        self.ooo.get(i).copied().filter(|&(s, _)| s <= seq)
    }

    /// RFC 2018 §4: put the block holding `newest` (if any) first, then the
    /// previously reported blocks that still exist, refreshed to their current
    /// extent, without repeats.
    fn refresh_recent(&mut self, newest: Option<u64>) {
        let mut next = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        let mut push = |b: (u64, u64), next: &mut [SackBlock; MAX_SACK_BLOCKS]| {
            let blk = SackBlock {
                start: b.0,
                end: b.1,
            };
            if n < MAX_SACK_BLOCKS && !next[..n].contains(&blk) {
                next[n] = blk;
                n += 1;
            }
        };
        if let Some(r) = newest.and_then(|s| self.range_of(s)) {
            push(r, &mut next);
        }
        for b in &self.recent[..self.recent_len] {
            if let Some(r) = self.range_of(b.start) {
                push(r, &mut next);
            }
        }
        self.recent = next;
        self.recent_len = n;
    }

    /// O(ranges) consistency check (tests only).
    pub fn check_invariants(&self) {
        let mut bytes = 0;
        let mut prev = self.rcv_nxt;
        for &(s, e) in &self.ooo {
            assert!(
                s > prev && e > s,
                "ranges must be sorted, disjoint and above rcv_nxt"
            );
            bytes += e - s;
            prev = e;
        }
        assert_eq!(bytes, self.ooo_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 100;

    fn rx(delayed: bool) -> Receiver {
        let mut r = Receiver::new(10_000, u64::from(MSS), delayed, Dur::from_millis(40), true);
        r.on_syn(0, Time::ZERO);
        r.on_ack_sent();
        r
    }

    fn blocks(r: &Receiver) -> Vec<(u64, u64)> {
        let (b, n) = r.sack_blocks();
        b[..usize::from(n)]
            .iter()
            .map(|b| (b.start, b.end))
            .collect()
    }

    #[test]
    fn every_second_segment_or_timeout() {
        let mut r = rx(true);
        let t = Time::from_millis(5);
        assert_eq!(r.on_data(t, 1, MSS, false).delivered, 100);
        assert!(!r.ack_now());
        assert_eq!(r.delack_deadline(), Some(t + Dur::from_millis(40)));
        r.on_data(t, 101, MSS, false);
        assert!(r.ack_now()); // 200 B > one MSS unacknowledged
        r.on_ack_sent();
        assert_eq!(r.delack_deadline(), None);
        r.on_data(t, 201, MSS, false);
        assert!(!r.ack_now());
        r.on_delack_timer();
        assert!(r.ack_now());
    }

    #[test]
    fn sack_blocks_most_recent_first_and_hole_fill() {
        let mut r = rx(true);
        let t = Time::ZERO;
        r.on_data(t, 1, MSS, false); // in order
        r.on_data(t, 201, MSS, false); // hole at 101
        assert!(r.ack_now());
        assert_eq!(blocks(&r), [(201, 301)]);
        r.on_data(t, 501, MSS, false); // second hole at 301..501
        assert_eq!(blocks(&r), [(501, 601), (201, 301)]);
        r.on_data(t, 301, MSS, false); // extends the first block
        assert_eq!(blocks(&r), [(201, 401), (501, 601)]);
        // 300 B out of order leave 9700 B free, but the right edge offered
        // at the SYN (1 + 10_000) stands: 10_001 - 101.
        assert_eq!(r.window(), 9_900);
        r.on_ack_sent();
        let out = r.on_data(t, 101, MSS, false); // fills the first hole
        assert_eq!(out.delivered, 300);
        assert!(r.ack_now());
        assert_eq!(blocks(&r), [(501, 601)]);
        assert_eq!(r.rcv_nxt(), 401);
        r.check_invariants();
    }

    #[test]
    fn fin_after_hole_and_duplicates() {
        let mut r = rx(false);
        let t = Time::ZERO;
        let o = r.on_data(t, 101, MSS, true); // data + FIN beyond a hole
        assert!(!o.fin_reached);
        let o = r.on_data(t, 1, MSS, false);
        assert_eq!((o.delivered, o.fin_reached), (200, true));
        assert_eq!(r.rcv_nxt(), 202);
        r.on_ack_sent();
        // A retransmitted FIN is a duplicate: ACKed again, nothing delivered.
        let o = r.on_data(t, 101, MSS, true);
        assert_eq!(o, RxOutcome::default());
        assert!(r.ack_now());
    }

    #[test]
    fn dsack_reports_a_duplicate_once_first_then_the_sack_blocks() {
        let mut r = rx(true);
        let t = Time::ZERO;
        r.on_data(t, 1, MSS, false);
        r.on_data(t, 101, MSS, false);
        r.on_data(t, 301, MSS, false); // hole at 201
        r.on_ack_sent();
        // RFC 2883 §4.1.1: a duplicate below rcv_nxt, reported first.
        r.on_data(t, 101, MSS, false);
        assert!(r.ack_now());
        assert_eq!(blocks(&r), [(101, 201), (301, 401)]);
        r.on_ack_sent();
        assert_eq!(blocks(&r), [(301, 401)]); // one ACK only
                                              // RFC 2883 §4.1.3: a duplicate of out-of-order data, inside its block.
        r.on_data(t, 301, MSS, false);
        assert_eq!(blocks(&r), [(301, 401), (301, 401)]);
        r.on_ack_sent();
        // Partly old: only the part below rcv_nxt is a duplicate.
        r.on_data(t, 151, MSS, false);
        assert_eq!(r.rcv_nxt(), 251);
        assert_eq!(blocks(&r), [(151, 201), (301, 401)]);
        r.check_invariants();
        // Off: duplicates are ACKed but not reported.
        let mut q = Receiver::new(10_000, u64::from(MSS), true, Dur::from_millis(40), false);
        q.on_syn(0, t);
        q.on_data(t, 1, MSS, false);
        q.on_ack_sent();
        q.on_data(t, 1, MSS, false);
        assert!(q.ack_now());
        assert!(blocks(&q).is_empty());
    }

    #[test]
    fn the_right_edge_is_never_retracted_and_reopens_when_the_hole_fills() {
        let mut r = rx(false);
        let t = Time::ZERO;
        r.on_data(t, 1, MSS, false);
        r.on_ack_sent(); // offers [101, 10_101)
        assert_eq!(r.window(), 10_000);
        // A hole at 101; 30 segments arrive behind it, each ACKed at once.
        for i in 0..30u64 {
            r.on_data(t, 201 + i * 100, MSS, false);
            // Free buffer 10_000 - 100 (i + 1), but the edge stays at 10_101.
            assert_eq!(r.window(), 10_000, "after {} out of order", i + 1);
            assert_eq!(r.rcv_nxt() + r.window(), 10_101);
            r.on_ack_sent();
        }
        assert_eq!(r.ooo_bytes(), 3_000);
        // The retransmission fills the hole: all delivered, the whole buffer free.
        assert_eq!(r.on_data(t, 101, MSS, false).delivered, 3_100);
        assert_eq!(r.window(), 10_000);
        r.on_ack_sent();
        assert_eq!(r.rcv_nxt() + r.window(), 3_201 + 10_000);
        r.check_invariants();
    }

    #[test]
    fn ts_recent_follows_last_ack_sent() {
        let mut r = rx(true);
        r.update_ts_recent(1, Time::from_millis(1));
        assert_eq!(r.ts_recent(), Time::from_millis(1));
        r.on_data(Time::ZERO, 1, MSS, false);
        // Second segment of the delayed pair: seq 101 > Last.ACK.sent = 1.
        r.update_ts_recent(101, Time::from_millis(2));
        assert_eq!(r.ts_recent(), Time::from_millis(1));
    }
}
