//! The frame table: one slot per frame from the oldest undecided to the
//! newest seen, which frames are complete, may still complete or never
//! will, the reference chain that makes a complete frame decodable, and
//! removing the head frame when it renders or is dropped.

use l4slab_core::Time;

use super::{FrameDrop, MediaPacket, Playout, MAX_FRAMES};

/// The reference chain as the decoder sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Chain {
    /// Nothing decoded or dropped yet: the first frame must be a keyframe.
    Start,
    /// Frame `last` was the last decided and it was decoded.
    Intact { last: u64 },
    /// A frame was dropped: delta frames are undecodable until a keyframe.
    Broken,
}

impl Chain {
    /// Whether delta frame `frame` may be decoded.
    pub(super) fn continues_to(self, frame: u64) -> bool {
        matches!(self, Chain::Intact { last } if last + 1 == frame)
    }

    /// Frame `frame` was decoded. Legal from any state for a keyframe, and
    /// for a delta frame only right after its predecessor.
    pub(super) fn decoded(&mut self, frame: u64, keyframe: bool) {
        assert!(
            keyframe || self.continues_to(frame),
            "delta frame {frame} decoded after {self:?}"
        );
        *self = Chain::Intact { last: frame };
    }

    /// A frame was dropped; true if that broke the chain (it was not broken).
    pub(super) fn dropped(&mut self) -> bool {
        let broke = *self != Chain::Broken;
        *self = Chain::Broken;
        broke
    }
}

/// One frame from its first packet to its render or drop.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slot {
    /// Distinct packets received; 0: none yet.
    pub(super) packets: u32,
    pub(super) keyframe: bool,
    pub(super) capture: Time,
    pub(super) first_seq: Option<u64>,
    pub(super) last_seq: Option<u64>,
    pub(super) min_seq: u64,
    pub(super) max_seq: u64,
    pub(super) complete: bool,
}

/// Whether a frame may still complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Complete,
    /// A packet that may be its own may still arrive.
    Pending,
    /// It can never complete.
    Lost,
}

impl Playout {
    /// Adds packet `p` (not a duplicate, of a frame not yet rendered or
    /// dropped) to its frame's slot, dropping the oldest frames first when
    /// its frame lies [`MAX_FRAMES`] or more ahead.
    pub(super) fn add_to_frame(&mut self, now: Time, p: MediaPacket) {
        if p.frame - self.next_frame >= MAX_FRAMES as u64 {
            self.make_room(p.frame + 1 - MAX_FRAMES as u64);
        }
        let idx = (p.frame - self.next_frame) as usize;
        while self.frames.len() <= idx {
            self.frames.push_back(Slot::default());
        }
        let s = &mut self.frames[idx];
        if s.packets == 0 {
            *s = Slot {
                keyframe: p.keyframe,
                capture: p.capture,
                min_seq: p.seq,
                max_seq: p.seq,
                ..Slot::default()
            };
            self.frames_received += 1;
            if p.keyframe {
                self.key_slots += 1;
            }
        } else {
            assert!(
                s.keyframe == p.keyframe && s.capture == p.capture,
                "packet {} of frame {} disagrees with the frame's keyframe flag or capture time",
                p.seq,
                p.frame
            );
        }
        s.packets += 1;
        s.min_seq = s.min_seq.min(p.seq);
        s.max_seq = s.max_seq.max(p.seq);
        if p.first {
            s.first_seq = Some(p.seq);
        }
        if p.last {
            s.last_seq = Some(p.seq);
        }
        if let (Some(a), Some(b)) = (s.first_seq, s.last_seq) {
            assert!(
                a <= s.min_seq && s.max_seq <= b,
                "frame {}: packets {}..={} outside its first..=last {a}..={b}",
                p.frame,
                s.min_seq,
                s.max_seq
            );
            // Complete: every number from `first` to `last` arrived.
            if u64::from(s.packets) == b - a + 1 {
                s.complete = true;
                let keyframe = s.keyframe;
                self.on_complete(now, p.capture, keyframe);
            }
        }
    }

    /// Drop the oldest frames until `first` is the oldest (a full buffer).
    fn make_room(&mut self, first: u64) {
        while self.next_frame < first {
            if self.frames.is_empty() {
                let n = first - self.next_frame;
                self.note_drop(FrameDrop::Overflow, n);
                self.next_frame = first;
                return;
            }
            self.drop_head(FrameDrop::Overflow);
        }
    }

    /// Whether frame `idx` (in `frames`) is complete, may still be, or never will.
    pub(super) fn status(&self, idx: usize) -> Status {
        let s = &self.frames[idx];
        if s.complete {
            return Status::Complete;
        }
        // The numbers that may be its packets: first..=last where known, else
        // bounded by the packets of the frames around it.
        let lo = match s.first_seq {
            Some(a) => a,
            None => self.max_seq_before(idx).map_or(0, |m| m + 1),
        };
        let hi = match s.last_seq {
            Some(b) => b,
            None => match self.min_seq_after(idx) {
                // Its last packet may simply not have been sent yet.
                None => return Status::Pending,
                Some(0) => return Status::Lost,
                Some(m) => m - 1,
            },
        };
        // Numbers below the first packet received were never found missing
        // (nor NACKed): they may still come, reordered, for `reorder_wait`.
        if lo < self.seqs.oldest && self.start_grace.is_some_and(|g| self.now < g) {
            return Status::Pending;
        }
        if lo <= hi && self.missing.pending_in(lo, hi) {
            Status::Pending
        } else {
            Status::Lost
        }
    }

    fn max_seq_before(&self, idx: usize) -> Option<u64> {
        self.frames
            .range(..idx)
            .rev()
            .find(|s| s.packets > 0)
            .map(|s| s.max_seq)
            .or(self.decided_max_seq)
    }

    fn min_seq_after(&self, idx: usize) -> Option<u64> {
        self.frames
            .range(idx + 1..)
            .find(|s| s.packets > 0)
            .map(|s| s.min_seq)
    }

    /// The oldest complete keyframe after the head, as an index in `frames`.
    pub(super) fn first_complete_keyframe(&self) -> Option<usize> {
        if self.complete_keys == 0 {
            return None;
        }
        self.frames
            .iter()
            .skip(1)
            .position(|s| s.complete && s.keyframe)
            .map(|i| i + 1)
    }

    /// The chain is broken and no keyframe that may still complete is in
    /// the buffer.
    pub(super) fn keyframe_wanted(&self) -> bool {
        if self.chain != Chain::Broken {
            return false;
        }
        let on_its_way = self.key_slots > 0
            && (0..self.frames.len()).any(|i| {
                let s = &self.frames[i];
                s.packets > 0 && s.keyframe && self.status(i) != Status::Lost
            });
        !on_its_way
    }

    /// Remove the head slot, keeping the per-slot counts right.
    pub(super) fn pop_head(&mut self) -> Slot {
        let s = self.frames.pop_front().expect("a head frame");
        self.next_frame += 1;
        if s.packets > 0 {
            // The numbers this decision settles: from the last decided one
            // (or this frame's first) through this frame's last.
            let top = s.last_seq.unwrap_or(s.max_seq);
            let from = self
                .settled_through
                .map_or(s.first_seq.unwrap_or(s.min_seq), |m| m + 1);
            let settled = (top + 1).saturating_sub(from);
            self.settled_through = Some(self.settled_through.map_or(top, |m| m.max(top)));
            self.packets_decided += settled;
            self.int_decided += settled;
            self.packets_in_time += u64::from(s.packets);
            self.int_in_time += u64::from(s.packets);
            if s.keyframe {
                self.key_slots -= 1;
                if s.complete {
                    self.complete_keys -= 1;
                }
            }
            self.decided_max_seq =
                Some(self.decided_max_seq.map_or(s.max_seq, |m| m.max(s.max_seq)));
            // nack_requester.cc ClearUpTo: its numbers need no more NACKs.
            self.missing.clear_through(s.last_seq.unwrap_or(s.max_seq));
        }
        s
    }

    pub(super) fn drop_head(&mut self, why: FrameDrop) {
        self.pop_head();
        self.note_drop(why, 1);
    }

    fn note_drop(&mut self, why: FrameDrop, n: u64) {
        self.dropped[why as usize] += n;
        self.int_dropped += n;
        if self.chain.dropped() {
            self.chain_breaks += 1;
        }
    }
}
