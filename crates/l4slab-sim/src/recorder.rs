//! The recorder: the simulator's [`Tracer`] for the endpoints. It hands each
//! flow's RTT samples to the flow's recorder (the flow recorder every
//! backend shares, `l4slab_bottleneck::flow::FlowRecorder`), which the
//! engine samples into series and the summary reads. (The queues' recorder
//! is the bottleneck runtime's, `l4slab_bottleneck::QueueRecorder`, shared
//! with the emulator too.)

use l4slab_bottleneck::flow::FlowRecorder;
pub use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Time, TraceEvent, Tracer};

pub struct Recorder {
    pub flows: Vec<FlowRecorder>,
}

impl Tracer for Recorder {
    fn event(&mut self, _now: Time, ev: TraceEvent) {
        match ev {
            TraceEvent::RttSample { flow, rtt } => self.flows[flow as usize].record_rtt(rtt),
            // The endpoints' own counters (`EndpointStats`) count
            // retransmissions and losses; queue events go to the
            // bottleneck runtime's recorder.
            TraceEvent::Retransmit { .. }
            | TraceEvent::LossDetected { .. }
            | TraceEvent::Enqueued { .. }
            | TraceEvent::Dequeued { .. }
            | TraceEvent::Dropped { .. }
            | TraceEvent::Marked { .. }
            | TraceEvent::CcStateChanged { .. } => {}
        }
    }
}
