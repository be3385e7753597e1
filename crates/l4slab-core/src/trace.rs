//! Structured trace events: the one channel through which components report
//! what they did (DESIGN.md §3). Recorders, plot feeds and test snapshots all
//! consume these; nothing is test-only.

use crate::packet::{FlowId, Packet, QueueId};
use crate::units::{Dur, Time};

/// Why a packet was discarded. Typed, so that counters are arrays indexed by
/// reason and a typo is a compile error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The queue was full (packet, byte or time limit) at enqueue: tail drop.
    Overlimit,
    /// The queue was full and dropped its *head* to admit the arrival (`drophead`).
    HeadDrop,
    /// The AQM decided to drop a packet (not ECN-capable, or ECN disabled).
    AqmDrop,
    /// An ECN-capable packet dropped because the AQM is in overload.
    Overload,
    /// A non-ECT packet in an L4S queue above the step threshold.
    StepNonEct,
    /// Random loss configured on the link (not a queue decision).
    LinkLoss,
    /// The path drops ECN-capable packets (an ECN black hole, for validation tests).
    EcnBlackhole,
    /// A Wi-Fi MPDU that failed more times than the retry limit allows.
    WifiRetries,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::Overlimit,
        DropReason::HeadDrop,
        DropReason::AqmDrop,
        DropReason::Overload,
        DropReason::StepNonEct,
        DropReason::LinkLoss,
        DropReason::EcnBlackhole,
        DropReason::WifiRetries,
    ];
    /// Stable name used as a key in results.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Overlimit => "overlimit",
            DropReason::HeadDrop => "head_drop",
            DropReason::AqmDrop => "aqm",
            DropReason::Overload => "overload",
            DropReason::StepNonEct => "step_non_ect",
            DropReason::LinkLoss => "link_loss",
            DropReason::EcnBlackhole => "ecn_blackhole",
            DropReason::WifiRetries => "wifi_retries",
        }
    }
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Why a packet was CE-marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MarkReason {
    /// Probabilistic/controlled AQM mark (CoDel, PIE, PI2 classic).
    Aqm,
    /// Coupled L4S mark (DualPI2 `p_CL`).
    Coupled,
    /// Immediate step-threshold mark (L4S queue, DCTCP-style).
    Step,
    /// `ce_threshold` shallow marking (CoDel / FQ-CoDel).
    CeThreshold,
    /// The link's loss model chose the packet and, the link having netem's
    /// `loss ... ecn` option, CE-marked it instead of dropping it (a Not-ECT
    /// packet is still dropped, as [`DropReason::LinkLoss`]).
    LinkMark,
}

impl MarkReason {
    pub const ALL: [MarkReason; 5] = [
        MarkReason::Aqm,
        MarkReason::Coupled,
        MarkReason::Step,
        MarkReason::CeThreshold,
        MarkReason::LinkMark,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            MarkReason::Aqm => "aqm",
            MarkReason::Coupled => "coupled",
            MarkReason::Step => "step",
            MarkReason::CeThreshold => "ce_threshold",
            MarkReason::LinkMark => "link_mark",
        }
    }
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Why the transport sent a segment again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RetransmitReason {
    /// SACK/dupACK-based fast retransmit (RFC 6675) or RACK time threshold (RFC 8985).
    Fast,
    /// Retransmission timeout (RFC 6298).
    Rto,
    /// Tail loss probe (RFC 8985 §7).
    Tlp,
}

/// One thing that happened. All fields are `Copy`, so emitting never allocates.
///
/// The queue events carry the [`Packet`] as the queue saw it (after the
/// event: a marked packet is CE), so a consumer can follow one packet
/// (`pkt.id`) and find its headers through the owner's `pkt.handle`.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    /// A packet was admitted into a queue (not traced for one refused at
    /// enqueue: that one is `Dropped`). `subqueue` as in `Dequeued`.
    Enqueued {
        queue: QueueId,
        subqueue: u8,
        pkt: Packet,
    },
    Dropped {
        queue: QueueId,
        pkt: Packet,
        reason: DropReason,
    },
    Marked {
        queue: QueueId,
        pkt: Packet,
        reason: MarkReason,
    },
    /// A packet left a queue for the wire after `sojourn` in the queue.
    /// `subqueue` is 0 for single queues; DualPI2 uses 0 = C, 1 = L.
    Dequeued {
        queue: QueueId,
        subqueue: u8,
        pkt: Packet,
        sojourn: Dur,
    },
    /// The sender took an RTT sample from an ACK.
    RttSample { flow: FlowId, rtt: Dur },
    /// The sender retransmitted a segment.
    Retransmit {
        flow: FlowId,
        seq: u64,
        bytes: u32,
        reason: RetransmitReason,
    },
    /// The sender declared a segment lost.
    LossDetected { flow: FlowId, seq: u64, bytes: u32 },
    /// A congestion controller changed state.
    CcStateChanged {
        flow: FlowId,
        from: &'static str,
        to: &'static str,
    },
}

/// Sink for trace events. The default discards everything, so a hot path pays
/// one predictable virtual call when tracing is off.
pub trait Tracer {
    fn event(&mut self, now: Time, ev: TraceEvent) {
        let _ = (now, ev);
    }
}

/// Discards all events.
#[derive(Debug, Default)]
pub struct NullTracer;
impl Tracer for NullTracer {}

/// Keeps every event; used by snapshot tests and small recorders.
#[derive(Debug, Default)]
pub struct VecTracer(pub Vec<(Time, TraceEvent)>);
impl Tracer for VecTracer {
    fn event(&mut self, now: Time, ev: TraceEvent) {
        self.0.push((now, ev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_indices_match_all_order() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        for (i, r) in MarkReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
