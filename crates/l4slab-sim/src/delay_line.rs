//! Constant-delay lines: the propagation parts of the dumbbell.
//!
//! Every packet entering a line leaves it exactly `delay` later, so a line is
//! a FIFO and only its *head* needs to be on the event calendar. Packets in
//! flight therefore live here, not in the calendar: the calendar holds a few
//! entries per line, endpoint and link whatever the bandwidth-delay product,
//! and the cost of an event does not grow with the window (DESIGN.md §7).

use std::collections::VecDeque;

use l4slab_core::{Dur, Packet, Time};

/// Where a line's packets go when they come out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineExit {
    /// Into the bottleneck queue of direction `dir`.
    Bottleneck { dir: usize },
    /// To the endpoint on `side` of the packet's flow.
    Endpoint { side: usize },
}

#[derive(Debug)]
pub struct DelayLine {
    pub delay: Dur,
    pub exit: LineExit,
    q: VecDeque<(Time, Packet)>,
    /// An event for the head is on the calendar.
    pub armed: bool,
}

impl DelayLine {
    pub fn new(delay: Dur, exit: LineExit) -> Self {
        DelayLine {
            delay,
            exit,
            q: VecDeque::new(),
            armed: false,
        }
    }

    /// Add a packet that entered at `now`; returns its exit time.
    pub fn push(&mut self, now: Time, pkt: Packet) -> Time {
        let at = now + self.delay;
        debug_assert!(
            self.q.back().is_none_or(|(t, _)| *t <= at),
            "delay line out of order"
        );
        self.q.push_back((at, pkt));
        at
    }

    /// The next packet due at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<Packet> {
        if self.q.front().is_some_and(|(t, _)| *t <= now) {
            self.q.pop_front().map(|(_, p)| p)
        } else {
            None
        }
    }

    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|(t, _)| *t)
    }
}
