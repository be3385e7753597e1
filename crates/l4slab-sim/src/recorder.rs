//! The recorder: the simulator's [`Tracer`]. It turns the typed event stream
//! into histograms (RTT per flow, sojourn per queue) and per-interval
//! accumulators that the engine samples into series.
//!
//! Percentiles come from HdrHistogram via [`DurStats`] (3 significant
//! digits); mean, min and max are exact.

pub use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Time, TraceEvent, Tracer};

pub struct FlowRec {
    pub rtt: DurStats,
    pub retransmits: u64,
    pub losses_detected: u64,
}

pub struct QueueRec {
    /// Sojourn of every packet sent by the queue.
    pub sojourn: DurStats,
    /// Per sub-queue sojourn, indexed like `Qdisc::subqueue_names()`; empty
    /// for single queues.
    pub sub: Vec<DurStats>,
    /// Per flow sojourn (indexed by FlowId), created on a flow's first packet.
    pub per_flow: Vec<Option<DurStats>>,
}

/// Sojourn histograms: 100 ns units up to 1000 s (L4S queues sit near 100 µs).
fn sojourn_stats(sigfig: u8) -> DurStats {
    DurStats::with_precision(100, 10_000_000_000, sigfig)
}

pub struct Recorder {
    pub flows: Vec<FlowRec>,
    pub queues: Vec<QueueRec>,
}

impl Recorder {
    /// `subqueues[q]` is the number of sub-queues queue `q` reports.
    pub fn new(n_flows: usize, subqueues: &[usize]) -> Self {
        Recorder {
            // RTT in µs up to 1000 s.
            flows: (0..n_flows)
                .map(|_| FlowRec {
                    rtt: DurStats::new(1_000, 1_000_000_000),
                    retransmits: 0,
                    losses_detected: 0,
                })
                .collect(),
            queues: subqueues
                .iter()
                .map(|&n| QueueRec {
                    sojourn: sojourn_stats(3),
                    sub: (0..n).map(|_| sojourn_stats(3)).collect(),
                    per_flow: (0..n_flows).map(|_| None).collect(),
                })
                .collect(),
        }
    }
}

impl Tracer for Recorder {
    fn event(&mut self, _now: Time, ev: TraceEvent) {
        match ev {
            TraceEvent::Dequeued {
                queue,
                subqueue,
                flow,
                sojourn,
                ..
            } => {
                let q = &mut self.queues[usize::from(queue)];
                q.sojourn.record(sojourn);
                if let Some(s) = q.sub.get_mut(usize::from(subqueue)) {
                    s.record(sojourn);
                }
                q.per_flow[flow as usize]
                    .get_or_insert_with(|| sojourn_stats(2))
                    .record(sojourn);
            }
            TraceEvent::RttSample { flow, rtt } => self.flows[flow as usize].rtt.record(rtt),
            TraceEvent::Retransmit { flow, .. } => self.flows[flow as usize].retransmits += 1,
            TraceEvent::LossDetected { flow, .. } => {
                self.flows[flow as usize].losses_detected += 1;
            }
            // Drops and marks are counted by the qdiscs (QdiscStats) and the engine.
            TraceEvent::Dropped { .. } | TraceEvent::Marked { .. } => {}
            TraceEvent::CcStateChanged { .. } => {}
        }
    }
}
