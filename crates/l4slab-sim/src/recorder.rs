//! The recorder: the simulator's [`Tracer`] for the endpoints. It turns their
//! typed event stream into per-flow RTT histograms and counters that the
//! engine samples into series. (The queues' recorder is the bottleneck
//! runtime's, `l4slab_bottleneck::QueueRecorder`, shared with the
//! emulator.)
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

pub struct Recorder {
    pub flows: Vec<FlowRec>,
}

impl Recorder {
    pub fn new(n_flows: usize) -> Self {
        Recorder {
            // RTT in µs up to 1000 s.
            flows: (0..n_flows)
                .map(|_| FlowRec {
                    rtt: DurStats::new(1_000, 1_000_000_000),
                    retransmits: 0,
                    losses_detected: 0,
                })
                .collect(),
        }
    }
}

impl Tracer for Recorder {
    fn event(&mut self, _now: Time, ev: TraceEvent) {
        match ev {
            TraceEvent::RttSample { flow, rtt } => self.flows[flow as usize].rtt.record(rtt),
            TraceEvent::Retransmit { flow, .. } => self.flows[flow as usize].retransmits += 1,
            TraceEvent::LossDetected { flow, .. } => {
                self.flows[flow as usize].losses_detected += 1;
            }
            // Queue events go to the bottleneck runtime's recorder.
            TraceEvent::Enqueued { .. }
            | TraceEvent::Dequeued { .. }
            | TraceEvent::Dropped { .. }
            | TraceEvent::Marked { .. }
            | TraceEvent::CcStateChanged { .. } => {}
        }
    }
}
