//! The Block Ack window of one queue: the MPDUs taken from the queue's qdisc
//! and not yet resolved, in sequence-number order (IEEE 802.11-2020
//! §10.25.6, the originator's transmit window, and §10.25.6.6, the
//! recipient's reordering buffer, which together deliver MSDUs in order).
//!
//! An MPDU is *pending* (waiting for a PPDU, first time or after a failed
//! attempt), *in the air*, *delivered* (received, but held by the
//! recipient's reordering buffer until every earlier one is resolved) or
//! *dropped* (retry limit). The window never spans more than the Block Ack
//! window size (`WinSizeO`): a new MPDU enters only while
//! `newest - oldest + 1 < size`. Resolved MPDUs leave from the front in
//! order: delivered ones are then handed up, so a retransmitted MPDU holds
//! back the ones after it, as mac80211's reorder buffer does
//! (`ieee80211_sta_manage_reorder_buf`; no reorder timeout here: the
//! originator resolves every MPDU by the retry limit).
//!
//! Storage is a ring sized once (the window size), so the hot path does not
//! allocate.

use std::collections::VecDeque;

use l4slab_core::Packet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    Pending,
    InAir,
    Delivered,
    Dropped,
}

#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub pkt: Packet,
    /// Failed attempts so far.
    pub retries: u32,
    pub state: SlotState,
}

#[derive(Debug)]
pub struct BaWindow {
    slots: VecDeque<Slot>,
    /// Sequence number of `slots[0]`.
    front: u64,
    size: usize,
    pending: usize,
}

impl BaWindow {
    pub fn new(size: u16) -> Self {
        let size = usize::from(size.max(1));
        BaWindow {
            slots: VecDeque::with_capacity(size),
            front: 0,
            size,
            pending: 0,
        }
    }

    /// Whether a new MPDU may enter.
    pub fn has_room(&self) -> bool {
        self.slots.len() < self.size
    }

    /// MPDUs waiting for a PPDU.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// MPDUs taken from the qdisc and not yet handed up or dropped.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Admit `pkt` as pending; returns its sequence number.
    pub fn push(&mut self, pkt: Packet) -> u64 {
        assert!(self.has_room(), "Block Ack window overrun");
        self.slots.push_back(Slot {
            pkt,
            retries: 0,
            state: SlotState::Pending,
        });
        self.pending += 1;
        self.front + self.slots.len() as u64 - 1
    }

    pub fn get(&self, seq: u64) -> &Slot {
        &self.slots[(seq - self.front) as usize]
    }

    /// The pending MPDUs' sequence numbers, oldest first, from `from` on.
    pub fn next_pending(&self, from: u64) -> Option<u64> {
        if self.pending == 0 {
            return None;
        }
        let start = from.saturating_sub(self.front) as usize;
        (start..self.slots.len())
            .find(|&i| self.slots[i].state == SlotState::Pending)
            .map(|i| self.front + i as u64)
    }

    /// The sequence number the next pushed MPDU will get.
    pub fn next_seq(&self) -> u64 {
        self.front + self.slots.len() as u64
    }

    fn set(&mut self, seq: u64, to: SlotState) -> &mut Slot {
        let i = (seq - self.front) as usize;
        let s = &mut self.slots[i];
        let legal = matches!(
            (s.state, to),
            (SlotState::Pending, SlotState::InAir)
                | (
                    SlotState::InAir,
                    SlotState::Delivered | SlotState::Pending | SlotState::Dropped
                )
        );
        assert!(legal, "MPDU {seq}: {:?} -> {to:?}", s.state);
        if s.state == SlotState::Pending {
            self.pending -= 1;
        }
        if to == SlotState::Pending {
            self.pending += 1;
        }
        s.state = to;
        s
    }

    /// A pending MPDU goes into a PPDU.
    pub fn send(&mut self, seq: u64) -> &Slot {
        self.set(seq, SlotState::InAir)
    }

    /// The recipient got it.
    pub fn delivered(&mut self, seq: u64) {
        self.set(seq, SlotState::Delivered);
    }

    /// It was lost; returns its failures so far. It becomes pending again,
    /// or dropped when `failures > retry_limit` (the caller reports the drop).
    pub fn failed(&mut self, seq: u64, retry_limit: u32) -> (u32, Packet, bool) {
        let i = (seq - self.front) as usize;
        let retries = self.slots[i].retries + 1;
        let drop = retries > retry_limit;
        let s = self.set(
            seq,
            if drop {
                SlotState::Dropped
            } else {
                SlotState::Pending
            },
        );
        s.retries = retries;
        (retries, s.pkt, drop)
    }

    /// Hand up, in order, every resolved MPDU at the front: `deliver` gets
    /// the delivered ones (dropped ones were reported when they failed).
    pub fn release(&mut self, mut deliver: impl FnMut(Packet)) {
        while let Some(s) = self.slots.front() {
            match s.state {
                SlotState::Delivered => deliver(s.pkt),
                SlotState::Dropped => {}
                SlotState::Pending | SlotState::InAir => break,
            }
            self.slots.pop_front();
            self.front += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Ecn;

    fn pkt(id: u64) -> Packet {
        Packet::new(id, 0, 1500, Ecn::NotEct)
    }

    #[test]
    fn a_retransmission_holds_back_later_mpdus_and_order_is_kept() {
        let mut w = BaWindow::new(4);
        let seqs: Vec<u64> = (0..4).map(|i| w.push(pkt(i))).collect();
        assert_eq!(seqs, [0, 1, 2, 3]);
        assert!(!w.has_room());
        for &s in &seqs {
            w.send(s);
        }
        w.delivered(0);
        let (retries, p, dropped) = w.failed(1, 7);
        assert_eq!((retries, p.id, dropped), (1, 1, false));
        w.delivered(2);
        w.delivered(3);
        let mut out = Vec::new();
        w.release(|p| out.push(p.id));
        assert_eq!(out, [0], "MPDU 1 holds 2 and 3 back");
        assert_eq!((w.pending(), w.next_pending(0)), (1, Some(1)));
        assert!(w.has_room());
        w.send(1);
        w.delivered(1);
        w.release(|p| out.push(p.id));
        assert_eq!(out, [0, 1, 2, 3]);
        assert!(w.is_empty());
        assert_eq!(w.next_seq(), 4);
    }

    #[test]
    fn past_the_retry_limit_an_mpdu_is_dropped_and_stops_holding_back() {
        let mut w = BaWindow::new(8);
        let a = w.push(pkt(7));
        let b = w.push(pkt(8));
        w.send(a);
        w.send(b);
        w.delivered(b);
        assert!(!w.failed(a, 1).2);
        w.send(a);
        let (retries, p, dropped) = w.failed(a, 1);
        assert_eq!((retries, p.id, dropped), (2, 7, true));
        let mut out = Vec::new();
        w.release(|p| out.push(p.id));
        assert_eq!(out, [8]);
        assert!(w.is_empty());
    }

    #[test]
    #[should_panic(expected = "Delivered -> InAir")]
    fn an_mpdu_cannot_be_sent_twice() {
        let mut w = BaWindow::new(2);
        let a = w.push(pkt(1));
        w.send(a);
        w.delivered(a);
        w.send(a);
    }
}
