//! The bottleneck's per-packet queue events, for the packet trace: every
//! admission, dequeue (with its sojourn), CE mark and drop, in the order they
//! happened, each with the [`Packet`] as the queue saw it (so a backend finds
//! its headers through `pkt.handle` and follows it by `pkt.id`).
//!
//! Off unless a backend asks ([`crate::Bottleneck::record_packet_events`]):
//! a run without a packet trace pays one branch per queue event. When on,
//! the log is a vector whose capacity is reused: the backend drains it after
//! every bottleneck call, as it drains the drops.

use l4slab_core::pkttrace::{AtQueue, PktEvent, QueueNames};
use l4slab_core::{DropReason, Dur, MarkReason, Packet, Time, TraceEvent, Tracer};

use super::QueueRecorder;

/// What happened to the packet at the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueEventKind {
    /// Admitted into sub-queue `subqueue` (`Qdisc::subqueue_names`; 0 for
    /// single queues).
    Enqueue { subqueue: u8 },
    /// Handed to the wire from `subqueue` after `sojourn` in the queue.
    Dequeue { subqueue: u8, sojourn: Dur },
    /// CE-marked (by the qdisc, or by the wire with `loss ... ecn`).
    Mark(MarkReason),
    /// Dropped by the ECN path, the qdisc or the wire.
    Drop(DropReason),
}

/// One queue event of one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEvent {
    pub t: Time,
    pub pkt: Packet,
    pub kind: QueueEventKind,
}

impl QueueEvent {
    /// The packet trace's `event` and queue columns of this event of
    /// direction `dir` (`names`: [`crate::Bottleneck::queue_names`]): both
    /// backends write queue rows through this.
    pub fn trace_columns(&self, names: &QueueNames, dir: usize) -> (PktEvent, AtQueue) {
        let q = dir as u16;
        let at = |subqueue: Option<u8>, sojourn_us: f64| AtQueue {
            queue: names.queue_code(q),
            subqueue: subqueue.map_or(0, |s| names.subqueue_code(q, s)),
            sojourn_us,
        };
        match self.kind {
            QueueEventKind::Enqueue { subqueue } => {
                (PktEvent::Enqueue, at(Some(subqueue), f64::NAN))
            }
            QueueEventKind::Dequeue { subqueue, sojourn } => (
                PktEvent::Dequeue,
                at(Some(subqueue), sojourn.as_nanos() as f64 / 1e3),
            ),
            QueueEventKind::Mark(r) => (PktEvent::Mark(r), at(None, f64::NAN)),
            QueueEventKind::Drop(r) => (PktEvent::Drop(r), at(None, f64::NAN)),
        }
    }

    /// The queue event a trace event is, if it is one.
    fn from_trace(t: Time, ev: &TraceEvent) -> Option<QueueEvent> {
        let (pkt, kind) = match *ev {
            TraceEvent::Enqueued { subqueue, pkt, .. } => {
                (pkt, QueueEventKind::Enqueue { subqueue })
            }
            TraceEvent::Dequeued {
                subqueue,
                pkt,
                sojourn,
                ..
            } => (pkt, QueueEventKind::Dequeue { subqueue, sojourn }),
            TraceEvent::Marked { pkt, reason, .. } => (pkt, QueueEventKind::Mark(reason)),
            TraceEvent::Dropped { pkt, reason, .. } => (pkt, QueueEventKind::Drop(reason)),
            TraceEvent::RttSample { .. }
            | TraceEvent::Retransmit { .. }
            | TraceEvent::LossDetected { .. }
            | TraceEvent::CcStateChanged { .. } => return None,
        };
        Some(QueueEvent { t, pkt, kind })
    }
}

/// The tracer a direction's link calls run with: its queue recorder, and
/// the event log when one is kept.
pub(super) struct DirTracer<'a> {
    pub rec: &'a mut QueueRecorder,
    pub log: Option<&'a mut Vec<QueueEvent>>,
}

impl Tracer for DirTracer<'_> {
    #[inline]
    fn event(&mut self, now: Time, ev: TraceEvent) {
        if let Some(log) = &mut self.log {
            if let Some(e) = QueueEvent::from_trace(now, &ev) {
                log.push(e);
            }
        }
        self.rec.event(now, ev);
    }
}
