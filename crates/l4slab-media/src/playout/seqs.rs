//! Which sequence numbers arrived: a bitmap of the last [`SEQ_WINDOW`]
//! numbers that tells a new packet from a duplicate and reports the gaps
//! an arrival opens.

use super::SEQ_WINDOW;

/// Where an arriving sequence number stands.
pub(super) enum Arrival {
    /// The first packet of the session.
    First,
    /// Newer than any before; `from..seq` were skipped.
    Newer {
        from: u64,
    },
    /// Older than the newest, not seen before.
    Older,
    /// Older than any seen before; `seq + 1..to` were skipped.
    Oldest {
        to: u64,
    },
    Duplicate,
    /// Older than the duplicate-detection window.
    TooOld,
}

/// The last [`SEQ_WINDOW`] sequence numbers: which arrived.
#[derive(Debug)]
pub(super) struct SeqWindow {
    bits: Vec<u64>,
    newest: Option<u64>,
    pub(super) oldest: u64,
}

impl SeqWindow {
    pub(super) fn new() -> Self {
        SeqWindow {
            bits: vec![0; (SEQ_WINDOW / 64) as usize],
            newest: None,
            oldest: 0,
        }
    }

    fn word(seq: u64) -> (usize, u64) {
        let i = seq % SEQ_WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    fn set(&mut self, seq: u64) {
        let (w, b) = Self::word(seq);
        self.bits[w] |= b;
    }

    pub(super) fn insert(&mut self, seq: u64) -> Arrival {
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            self.oldest = seq;
            self.set(seq);
            return Arrival::First;
        };
        if seq > newest {
            if seq - newest >= SEQ_WINDOW {
                self.bits.fill(0);
            } else {
                for s in newest + 1..seq {
                    let (w, b) = Self::word(s);
                    self.bits[w] &= !b;
                }
            }
            self.newest = Some(seq);
            self.set(seq);
            return Arrival::Newer { from: newest + 1 };
        }
        if newest - seq >= SEQ_WINDOW {
            return Arrival::TooOld;
        }
        let (w, b) = Self::word(seq);
        if self.bits[w] & b != 0 {
            return Arrival::Duplicate;
        }
        self.bits[w] |= b;
        if seq < self.oldest {
            let to = std::mem::replace(&mut self.oldest, seq);
            return Arrival::Oldest { to };
        }
        Arrival::Older
    }
}
