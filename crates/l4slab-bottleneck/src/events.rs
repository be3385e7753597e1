//! The runtime's per-packet events of each queue, in the order they
//! happened, each with the [`Packet`] as the queue saw it (so a backend finds
//! its headers through `pkt.handle` and follows it by `pkt.id`):
//!
//! * for the packet trace ([`crate::Bottleneck::record_packet_events`]):
//!   every admission, dequeue (with its sojourn), CE mark and drop;
//! * for the pcap capture ([`crate::Bottleneck::record_captures`]): the two
//!   capture points of every queue, the packet reaching it ([`Arrive`]) and
//!   leaving its link at the far end of the propagation delay ([`Leave`]).
//!
//! The runtime decides which queue saw which packet when, for the
//! bottleneck's directions and every added queue (a host's access link)
//! alike; a backend only turns an event into a trace row or a capture
//! record. Off unless a backend asks: a run without either pays one branch
//! per event. When on, the log is a vector whose capacity is reused: the
//! backend drains it after every runtime call, as it drains the drops.
//!
//! [`Arrive`]: QueueEventKind::Arrive
//! [`Leave`]: QueueEventKind::Leave

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
    /// Capture point `in`: the packet reaches the queue (before the ECN
    /// path and the qdisc; dropped packets too).
    Arrive,
    /// Capture point `out`: the packet leaves the link, after its
    /// serialization and propagation delay, with the ECN field the queue and
    /// the path left it; `t` is its exit time.
    Leave,
}

/// One event of one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEvent {
    pub t: Time,
    pub pkt: Packet,
    pub kind: QueueEventKind,
}

impl QueueEvent {
    /// The packet trace's `event` and queue columns of this event of queue
    /// `dir` (`names`: [`crate::Bottleneck::queue_names`]): both backends
    /// write queue rows through this. `None` for a capture point (no row).
    pub fn trace_columns(&self, names: &QueueNames, dir: usize) -> Option<(PktEvent, AtQueue)> {
        let q = dir as u16;
        let at = |subqueue: Option<u8>, sojourn_us: f64| AtQueue {
            queue: names.queue_code(q),
            subqueue: subqueue.map_or(0, |s| names.subqueue_code(q, s)),
            sojourn_us,
        };
        Some(match self.kind {
            QueueEventKind::Enqueue { subqueue } => {
                (PktEvent::Enqueue, at(Some(subqueue), f64::NAN))
            }
            QueueEventKind::Dequeue { subqueue, sojourn } => (
                PktEvent::Dequeue,
                at(Some(subqueue), sojourn.as_nanos() as f64 / 1e3),
            ),
            QueueEventKind::Mark(r) => (PktEvent::Mark(r), at(None, f64::NAN)),
            QueueEventKind::Drop(r) => (PktEvent::Drop(r), at(None, f64::NAN)),
            QueueEventKind::Arrive | QueueEventKind::Leave => return None,
        })
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
/// the event log when queue events are kept.
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
