//! The queue recorder: the tracer every qdisc call of the bottleneck goes
//! through, in both backends. It turns the qdisc's typed events into the
//! queue's statistics: sojourn histograms (the queue, each sub-queue, each
//! flow) and drops and marks, counted where they pass through the context
//! (`QdiscCtx::drop_packet`, `QdiscCtx::try_mark`), by reason, per flow and
//! per sampling interval.
//!
//! Percentiles come from HdrHistogram via [`DurStats`] (3 significant digits
//! for the queues, 2 per flow); mean, min and max are exact.

use l4slab_core::stats::DurStats;
use l4slab_core::{DropReason, MarkReason, Packet, Time, TraceEvent, Tracer};

/// Sojourn histograms: 100 ns units up to 1000 s (L4S queues sit near 100 µs).
fn sojourn_stats(sigfig: u8) -> DurStats {
    DurStats::with_precision(100, 10_000_000_000, sigfig)
}

/// One flow's share of a queue.
#[derive(Default)]
pub struct FlowQueueRec {
    /// Sojourn of the flow's packets, created on its first packet.
    pub sojourn: Option<DurStats>,
    pub drops: u64,
    pub marks: u64,
}

/// The flows a queue has seen, each with its [`FlowQueueRec`], made on the
/// flow's first packet there. A queue knows every flow id of the run (a
/// 4-byte slot each) but holds a record only for those that passed through
/// it: a Wi-Fi cell's per-station queues see one or two flows, so the cost
/// is not queues x flows records (issue 32: 1,000 stations held 8,000
/// queues x 1,000 flows of them).
pub struct FlowRecs {
    /// Per flow id: its index in `recs`, or [`FlowRecs::NONE`].
    slot: Vec<u32>,
    recs: Vec<FlowQueueRec>,
}

impl FlowRecs {
    const NONE: u32 = u32::MAX;

    /// Records for flow ids below `flows` (others are not recorded).
    pub fn new(flows: usize) -> Self {
        FlowRecs {
            slot: vec![Self::NONE; flows],
            recs: Vec::new(),
        }
    }

    /// Flow `flow`'s record, if any of its packets passed through the queue.
    pub fn get(&self, flow: usize) -> Option<&FlowQueueRec> {
        match self.slot.get(flow) {
            Some(&i) if i != Self::NONE => Some(&self.recs[i as usize]),
            _ => None,
        }
    }

    /// Flow `flow`'s record, made now if this is its first event here; None
    /// for a flow id the queue does not record.
    #[inline]
    fn get_or_insert(&mut self, flow: usize) -> Option<&mut FlowQueueRec> {
        let slot = self.slot.get_mut(flow)?;
        if *slot == Self::NONE {
            *slot = u32::try_from(self.recs.len()).expect("fewer than 2^32 - 1 flows");
            self.recs.push(FlowQueueRec::default());
        }
        Some(&mut self.recs[*slot as usize])
    }

    /// Drops and marks of flow `flow` in the queue (whole run).
    pub fn drops_marks(&self, flow: usize) -> (u64, u64) {
        self.get(flow).map_or((0, 0), |r| (r.drops, r.marks))
    }
}

pub struct QueueRecorder {
    /// Sojourn of every packet the queue sent.
    pub sojourn: DurStats,
    /// Per sub-queue, indexed like `Qdisc::subqueue_names()`; empty for
    /// single queues.
    pub sub: Vec<DurStats>,
    /// Per flow id below the run's flow count, for the flows seen here.
    pub per_flow: FlowRecs,
    /// Drops through the context, by [`DropReason::index`] (qdisc drops, wire
    /// losses and the ECN path's drops alike).
    pub drops: [u64; DropReason::ALL.len()],
    /// CE marks through the context, by [`MarkReason::index`].
    pub marks: [u64; MarkReason::ALL.len()],
    /// Drops and marks since the last [`QueueRecorder::take_interval_counts`].
    drops_interval: u64,
    marks_interval: u64,
}

impl QueueRecorder {
    /// `subqueues` sojourn histograms besides the queue's, and per-flow
    /// statistics for flow ids below `flows`.
    pub fn new(subqueues: usize, flows: usize) -> Self {
        QueueRecorder {
            sojourn: sojourn_stats(3),
            sub: (0..subqueues).map(|_| sojourn_stats(3)).collect(),
            per_flow: FlowRecs::new(flows),
            drops: [0; DropReason::ALL.len()],
            marks: [0; MarkReason::ALL.len()],
            drops_interval: 0,
            marks_interval: 0,
        }
    }

    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    pub fn total_marks(&self) -> u64 {
        self.marks.iter().sum()
    }

    /// Start the measurement window: the queue's totals (sojourn of the
    /// queue, its sub-queues and each flow; drops and marks by reason)
    /// restart from zero. The per-interval accumulators the series read are
    /// left alone, and so are the per-flow drop and mark counts
    /// ([`FlowQueueRec::drops`], `marks`), which are whole-run counters of
    /// the flows (`lost_packets`, `ce_marks_received`).
    pub fn start_window(&mut self) {
        self.sojourn.clear_totals();
        for s in &mut self.sub {
            s.clear_totals();
        }
        for f in &mut self.per_flow.recs {
            if let Some(s) = &mut f.sojourn {
                s.clear_totals();
            }
        }
        self.drops = [0; DropReason::ALL.len()];
        self.marks = [0; MarkReason::ALL.len()];
    }

    /// Drops and marks since the previous call.
    pub fn take_interval_counts(&mut self) -> (u64, u64) {
        let out = (self.drops_interval, self.marks_interval);
        self.drops_interval = 0;
        self.marks_interval = 0;
        out
    }
}

impl Tracer for QueueRecorder {
    /// Inlined into [`crate::events::DirTracer`]'s, which every qdisc call goes through.
    #[inline]
    fn event(&mut self, _now: Time, ev: TraceEvent) {
        match ev {
            TraceEvent::Dequeued {
                subqueue,
                pkt: Packet { flow, .. },
                sojourn,
                ..
            } => {
                self.sojourn.record(sojourn);
                if let Some(s) = self.sub.get_mut(usize::from(subqueue)) {
                    s.record(sojourn);
                }
                if let Some(f) = self.per_flow.get_or_insert(flow as usize) {
                    f.sojourn
                        .get_or_insert_with(|| sojourn_stats(2))
                        .record(sojourn);
                }
            }
            TraceEvent::Dropped {
                pkt: Packet { flow, .. },
                reason,
                ..
            } => {
                self.drops[reason.index()] += 1;
                self.drops_interval += 1;
                if let Some(f) = self.per_flow.get_or_insert(flow as usize) {
                    f.drops += 1;
                }
            }
            TraceEvent::Marked {
                pkt: Packet { flow, .. },
                reason,
                ..
            } => {
                self.marks[reason.index()] += 1;
                self.marks_interval += 1;
                if let Some(f) = self.per_flow.get_or_insert(flow as usize) {
                    f.marks += 1;
                }
            }
            // Endpoint events never pass through a queue's context; an
            // admission counts in the qdisc's own statistics.
            TraceEvent::Enqueued { .. }
            | TraceEvent::RttSample { .. }
            | TraceEvent::Retransmit { .. }
            | TraceEvent::LossDetected { .. }
            | TraceEvent::CcStateChanged { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_keeps_records_only_for_the_flows_it_saw() {
        let mut f = FlowRecs::new(1000);
        assert!(f.get(7).is_none());
        f.get_or_insert(7).unwrap().drops += 1;
        f.get_or_insert(3).unwrap().marks += 2;
        f.get_or_insert(7).unwrap().drops += 1;
        // Two records for two flows, not one per flow id of the run.
        assert_eq!(f.recs.len(), 2);
        assert_eq!(f.drops_marks(7), (2, 0));
        assert_eq!(f.drops_marks(3), (0, 2));
        assert_eq!(f.drops_marks(999), (0, 0));
        // A flow id beyond the run's is not recorded.
        assert!(f.get_or_insert(1000).is_none());
        assert_eq!(f.recs.len(), 2);
    }
}
