//! When frames render: the smallest transit and the jitter allowance that
//! set each frame's due time, and the walk from the head of the frame
//! table that renders what is decodable and due and drops what never will
//! be.

use l4slab_core::stats::nearest_rank;
use l4slab_core::{Dur, Time};

use super::frames::{Slot, Status};
use super::{FrameDrop, Playout, PlayoutEvent, JITTER_WINDOW};

impl Playout {
    /// Frame completed at `now`: its transit updates the smallest transit
    /// and the jitter allowance.
    pub(super) fn on_complete(&mut self, now: Time, capture: Time, keyframe: bool) {
        if keyframe {
            self.complete_keys += 1;
        }
        let transit = now.as_nanos() as i64 - capture.as_nanos() as i64;
        let min = self.min_transit.map_or(transit, |m| m.min(transit));
        self.min_transit = Some(min);
        self.transits[self.transit_pos] = transit;
        self.transit_pos = (self.transit_pos + 1) % JITTER_WINDOW;
        self.transit_n = (self.transit_n + 1).min(JITTER_WINDOW);
        if self.cfg.jitter_allowance {
            // 95th percentile, nearest rank (selected, not sorted).
            let n = self.transit_n;
            let mut buf = self.transits;
            let (_, p95, _) = buf[..n].select_nth_unstable(nearest_rank(n, 95) - 1);
            self.jitter_ns = *p95 - min;
        }
    }

    pub(super) fn play(&mut self, now: Time, out: &mut dyn FnMut(PlayoutEvent)) {
        while let Some(head) = self.frames.front().copied() {
            if head.packets > 0 && !head.keyframe && !self.chain.continues_to(self.next_frame) {
                // A delta frame whose reference was not decoded: never decodable.
                self.drop_head(FrameDrop::Undecodable);
                continue;
            }
            match self.status(0) {
                Status::Complete => {
                    // Decodable: render at max(now, capture + delay).
                    if self.due(&head) > now {
                        break;
                    }
                    self.render_head(now, out);
                }
                Status::Lost => self.drop_head(FrameDrop::Incomplete),
                Status::Pending if self.past_deadline(&head, now) => {
                    // Late = lost: the frame missed its playout time by more
                    // than the deadline; its missing packets are given up.
                    self.late_drops += 1;
                    self.drop_head(FrameDrop::Incomplete);
                }
                Status::Pending => {
                    // A newer keyframe that is decodable and due supersedes
                    // the frames waiting before it.
                    let Some(k) = self.first_complete_keyframe() else {
                        break;
                    };
                    if self.due(&self.frames[k]) > now {
                        break;
                    }
                    for _ in 0..k {
                        let why = if self.frames[0].complete {
                            FrameDrop::Undecodable
                        } else {
                            FrameDrop::Incomplete
                        };
                        self.drop_head(why);
                    }
                }
            }
        }
    }

    /// When frame `s` is due: capture + smallest transit + min_delay + jitter.
    pub(super) fn due(&self, s: &Slot) -> Time {
        let transit = self.min_transit.expect("a frame completed");
        let t = i128::from(s.capture.as_nanos())
            + i128::from(transit)
            + i128::from(self.extra_delay().as_nanos());
        Time::from_nanos(t.clamp(0, i128::from(u64::MAX)) as u64)
    }

    /// When an incomplete frame `s` is given up: its due time plus the
    /// playout deadline (`None`: never, without a deadline).
    pub(super) fn deadline_of(&self, s: &Slot) -> Option<Time> {
        let d = self.cfg.deadline?;
        self.min_transit?;
        Some(self.due(s).saturating_add(d))
    }

    fn past_deadline(&self, s: &Slot, now: Time) -> bool {
        s.packets > 0 && self.deadline_of(s).is_some_and(|t| now >= t)
    }

    /// The delay above the smallest transit: `min_delay` + jitter allowance.
    pub(super) fn extra_delay(&self) -> Dur {
        self.cfg.min_delay + Dur::from_nanos(self.jitter_ns.max(0) as u64)
    }

    fn render_head(&mut self, now: Time, out: &mut dyn FnMut(PlayoutEvent)) {
        let frame = self.next_frame;
        let s = self.pop_head();
        self.chain.decoded(frame, s.keyframe);
        let start = self.viewer.started().expect("started by the first packet");
        self.viewer.on_display(now, s.capture);
        self.freezes.on_render(now);
        self.worst.on_render(start, now);
        out(PlayoutEvent::Rendered {
            frame,
            capture: s.capture,
            at: now,
        });
    }
}
