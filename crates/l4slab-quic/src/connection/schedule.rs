//! Which stream sends next, without visiting the streams that have nothing
//! to send: the cost of choosing does not grow with the number of streams.
//!
//! * STREAM frames go round-robin in stream-ID order (RFC 9000 §2.3 leaves
//!   prioritization to the application; l4slab has none): a cursor sweeps
//!   the IDs upward and wraps, the next stream is the lowest ID at or above
//!   the cursor that may send (else the lowest that may), and the cursor
//!   moves past it. [`RoundRobin`] holds the candidates in two min-heaps,
//!   this sweep's (at or above the cursor) and the next sweep's (below it):
//!   O(log candidates) a choice, no allocation once the heaps have grown.
//!   A FIFO queue would be O(1) but serves a stream that becomes ready
//!   mid-sweep in a different place than the ID order does, so the frames
//!   (and the results of every multi-stream run) would change.
//! * Candidates are filed when something may have made them ready (data
//!   written or lost, FIN, more stream credit: `Connection::sched_touch`)
//!   and checked when they come up: one with nothing it may send leaves the
//!   heaps; one held back by connection credit alone is parked until
//!   MAX_DATA (`Connection::sched_unpark`).
//! * MAX_STREAM_DATA and STREAM_DATA_BLOCKED owed by a stream: a min-heap of
//!   the streams that may owe one, visited in ID order for each packet.
//!
//! Invariant: every stream that may send a STREAM frame now is in the
//! round-robin; every stream that owes a control frame is in the control
//! heap. Entries of streams that no longer need them are dropped lazily.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::streams::Stream;
use super::Connection;

/// A stream's place in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RrState {
    /// Nothing it may send (an event re-files it).
    #[default]
    Idle,
    /// In the round-robin.
    Queued,
    /// New data held back by connection flow control only (§4.1).
    Parked,
}

/// Scheduling marks kept in each [`Stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamSched {
    pub rr: RrState,
    /// Listed in [`Connection`]'s parked list (maybe stale: `rr` says).
    pub listed_parked: bool,
    /// In the control-frame heap.
    pub ctrl_queued: bool,
    /// Counted in `unsent_streams` (written data never sent).
    pub unsent: bool,
}

/// Round-robin in ID order over candidate streams (see the module header).
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    /// The sweep resumes at this ID.
    cursor: u64,
    /// Candidates at or above the cursor.
    this_sweep: BinaryHeap<Reverse<u64>>,
    /// Candidates below it.
    next_sweep: BinaryHeap<Reverse<u64>>,
}

impl RoundRobin {
    /// Add `id` (not already in).
    pub fn push(&mut self, id: u64) {
        if id >= self.cursor {
            self.this_sweep.push(Reverse(id));
        } else {
            self.next_sweep.push(Reverse(id));
        }
    }

    /// The next candidate in sweep order.
    pub fn peek(&self) -> Option<u64> {
        self.this_sweep
            .peek()
            .or_else(|| self.next_sweep.peek())
            .map(|r| r.0)
    }

    /// Remove the candidate [`peek`](Self::peek) gave; the cursor stays.
    pub fn drop_next(&mut self) {
        if self.this_sweep.pop().is_none() {
            self.next_sweep.pop();
        }
    }

    /// Serve the candidate [`peek`](Self::peek) gave: the cursor moves past it.
    pub fn take_next(&mut self) -> Option<u64> {
        let id = match self.this_sweep.pop() {
            Some(Reverse(id)) => id,
            None => {
                // Wrap: the rest of the next sweep lies above `id`.
                let Reverse(id) = self.next_sweep.pop()?;
                std::mem::swap(&mut self.this_sweep, &mut self.next_sweep);
                id
            }
        };
        self.cursor = id + 1;
        Some(id)
    }
}

/// Owes MAX_STREAM_DATA (§19.10) or STREAM_DATA_BLOCKED (§19.13).
pub fn owes_control(s: &Stream) -> bool {
    s.window.update_pending || s.credit.needs_blocked() && s.send.next < s.send.written
}

impl Connection {
    /// Stream `id`'s state changed: file it where it now belongs.
    pub(super) fn sched_touch(&mut self, id: u64) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let send = &s.send;
        if s.sched.rr != RrState::Queued
            && (!send.retx.is_empty() || send.next < send.written || send.fin_pending)
        {
            s.sched.rr = RrState::Queued;
            self.rr.push(id);
        }
        if !s.sched.ctrl_queued && owes_control(s) {
            s.sched.ctrl_queued = true;
            self.ctrl_queue.push(Reverse(id));
        }
        let unsent = s.send.next < s.send.written;
        if unsent != s.sched.unsent {
            s.sched.unsent = unsent;
            if unsent {
                self.unsent_streams += 1;
            } else {
                self.unsent_streams -= 1;
            }
        }
    }

    /// Every stream, after the peer's transport parameters raised all
    /// credits at once (RFC 9000 §7.4; `apply_peer_params`).
    pub(super) fn sched_touch_all(&mut self) {
        let mut ids = std::mem::take(&mut self.sched_scratch);
        ids.extend(self.streams.keys().copied());
        for &id in &ids {
            self.sched_touch(id);
        }
        ids.clear();
        self.sched_scratch = ids;
        self.sched_unpark();
    }

    /// The connection's credit may have grown (MAX_DATA): parked streams
    /// go back in the round-robin.
    pub(super) fn sched_unpark(&mut self) {
        let mut parked = std::mem::take(&mut self.parked);
        for &id in &parked {
            if let Some(s) = self.streams.get_mut(&id) {
                s.sched.listed_parked = false;
                if s.sched.rr == RrState::Parked {
                    s.sched.rr = RrState::Queued;
                    self.rr.push(id);
                }
            }
        }
        parked.clear();
        self.parked = parked;
    }

    /// The stream that sends the next STREAM frame (it stays the next
    /// candidate until [`RoundRobin::take_next`]): the first candidate in
    /// sweep order with something it may send now.
    pub(super) fn sched_next(&mut self) -> Option<u64> {
        let credit = self.conn_credit.available();
        loop {
            let id = self.rr.peek()?;
            let Some(s) = self.streams.get_mut(&id) else {
                self.rr.drop_next(); // closed and reaped
                continue;
            };
            if s.send.has_data(credit.min(s.credit.available())) {
                return Some(id);
            }
            self.rr.drop_next();
            if credit == 0 && s.send.has_data(s.credit.available()) {
                s.sched.rr = RrState::Parked;
                if !s.sched.listed_parked {
                    s.sched.listed_parked = true;
                    self.parked.push(id);
                }
            } else {
                s.sched.rr = RrState::Idle;
            }
        }
    }

    /// Some stream owes a control frame.
    pub(super) fn sched_owes_control(&mut self) -> bool {
        while let Some(&Reverse(id)) = self.ctrl_queue.peek() {
            match self.streams.get_mut(&id) {
                Some(s) if owes_control(s) => return true,
                Some(s) => s.sched.ctrl_queued = false,
                None => {}
            }
            self.ctrl_queue.pop();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order of a cursor over sorted IDs: next at or above it, wrapping.
    #[test]
    fn round_robin_follows_id_order_from_the_cursor() {
        let mut rr = RoundRobin::default();
        for id in [8, 0, 4] {
            rr.push(id);
        }
        assert_eq!(rr.take_next(), Some(0));
        rr.push(0); // still has data: after 4 and 8
        assert_eq!(rr.take_next(), Some(4));
        rr.push(1); // ready mid-sweep below the cursor (5): next sweep
        rr.push(6); // above it: this sweep, before 8
        assert_eq!(rr.take_next(), Some(6));
        assert_eq!(rr.take_next(), Some(8));
        assert_eq!(rr.take_next(), Some(0));
        assert_eq!(rr.take_next(), Some(1));
        assert_eq!(rr.take_next(), None);
    }
}
