//! Inter-arrival grouping: packets are bundled into send-time groups and
//! the controller sees one (send delta, arrival delta) pair per group.
//!
//! libwebrtc `modules/congestion_controller/goog_cc/inter_arrival_delta.cc`
//! (`InterArrivalDelta::ComputeDeltas`, `NewTimestampGroup`,
//! `BelongsToBurst`); draft-ietf-rmcat-gcc-02 §5.2 ("burst_time 5 ms").
//! Times are the report's per-packet send time (sender clock) and arrival
//! time (receiver clock); only differences within one clock are used.

use l4slab_core::{Dur, Time};

/// libwebrtc `kBurstDeltaThreshold`: a packet arriving at most this long
/// after the group's last one, earlier than its send spacing predicts, is
/// part of the same burst (draft-02 §5.2: "burst_time").
pub const BURST_DELTA_THRESHOLD: Dur = Dur::from_millis(5);
/// libwebrtc `kMaxBurstDuration`: a burst never spans more than this.
pub const MAX_BURST_DURATION: Dur = Dur::from_millis(100);
/// libwebrtc `DelayBasedBwe` `kSendTimeGroupLength`: packets sent within
/// this span of a group's first packet belong to it.
pub const SEND_TIME_GROUP_LENGTH: Dur = Dur::from_millis(5);
/// libwebrtc `InterArrivalDelta::kArrivalTimeOffsetThreshold`.
pub const ARRIVAL_TIME_OFFSET_THRESHOLD: Dur = Dur::from_secs(3);
/// libwebrtc `kReorderedResetThreshold`.
pub const REORDERED_RESET_THRESHOLD: u32 = 3;

/// `b - a` in milliseconds, signed.
pub(crate) fn ms_between(a: Time, b: Time) -> f64 {
    (i128::from(b.as_nanos()) - i128::from(a.as_nanos())) as f64 * 1e-6
}

/// `b - a` in nanoseconds, signed.
fn ns_between(a: Time, b: Time) -> i128 {
    i128::from(b.as_nanos()) - i128::from(a.as_nanos())
}

#[derive(Clone, Copy, Debug)]
struct SendTimeGroup {
    /// Bytes in the group.
    size: u64,
    /// Send time of the group's first packet.
    first_send: Time,
    /// Latest send time in the group (libwebrtc `send_time`).
    send: Time,
    first_arrival: Time,
    /// Arrival of the group's last packet (libwebrtc `complete_time`).
    complete: Time,
    /// The sender's clock when the last packet was reported.
    last_system: Time,
}

impl SendTimeGroup {
    /// A new, empty group opened by a packet sent at `send` that arrived at
    /// `arrival` (its size is added by the caller).
    fn start(send: Time, arrival: Time, system: Time) -> Self {
        SendTimeGroup {
            size: 0,
            first_send: send,
            send,
            first_arrival: arrival,
            complete: arrival,
            last_system: system,
        }
    }
}

/// The deltas between two consecutive complete groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupDeltas {
    /// Latest send time of this group minus that of the previous one (ms).
    pub send_delta_ms: f64,
    /// Last arrival of this group minus that of the previous one (ms).
    pub arrival_delta_ms: f64,
    /// Bytes of this group minus bytes of the previous one.
    pub size_delta: i64,
}

/// libwebrtc `InterArrivalDelta`.
#[derive(Clone, Debug)]
pub struct InterArrival {
    group_length: Dur,
    current: Option<SendTimeGroup>,
    prev: Option<SendTimeGroup>,
    reordered: u32,
    groups: u64,
}

impl Default for InterArrival {
    fn default() -> Self {
        Self::new(SEND_TIME_GROUP_LENGTH)
    }
}

impl InterArrival {
    pub fn new(group_length: Dur) -> Self {
        Self {
            group_length,
            current: None,
            prev: None,
            reordered: 0,
            groups: 0,
        }
    }

    /// Groups started so far (the current one included).
    pub fn groups_started(&self) -> u64 {
        self.groups
    }

    /// Feeds one received packet (in arrival order). Returns the deltas
    /// between the two previous groups when this packet starts a new one
    /// (libwebrtc `ComputeDeltas` returning true).
    pub fn compute_deltas(
        &mut self,
        send: Time,
        arrival: Time,
        system: Time,
        size: u32,
    ) -> Option<GroupDeltas> {
        let mut out = None;
        match self.current {
            None => {
                // "We don't have enough data to update the filter, so we store
                // it until we have two frames of data to process."
                self.groups += 1;
                self.current = Some(SendTimeGroup::start(send, arrival, system));
            }
            Some(cur) if cur.first_send > send => {
                // inter_arrival_delta.cc: reordered packet, ignored.
                return None;
            }
            Some(cur) if self.new_group(&cur, arrival, send) => {
                // "First packet of a later send burst, the previous packets
                // sample is ready."
                if let Some(prev) = self.prev {
                    let send_delta_ms = ms_between(prev.send, cur.send);
                    let arrival_delta_ms = ms_between(prev.complete, cur.complete);
                    let system_delta_ms = ms_between(prev.last_system, cur.last_system);
                    // kArrivalTimeOffsetThreshold: the receiver clock jumped.
                    if arrival_delta_ms - system_delta_ms
                        >= ARRIVAL_TIME_OFFSET_THRESHOLD.as_millis_f64()
                    {
                        self.reset();
                        return None;
                    }
                    if arrival_delta_ms < 0.0 {
                        // "The group of packets has been reordered since
                        // receiving its local arrival timestamp."
                        self.reordered += 1;
                        if self.reordered >= REORDERED_RESET_THRESHOLD {
                            self.reset();
                        }
                        return None;
                    }
                    self.reordered = 0;
                    out = Some(GroupDeltas {
                        send_delta_ms,
                        arrival_delta_ms,
                        size_delta: cur.size as i64 - prev.size as i64,
                    });
                }
                self.prev = Some(cur);
                self.groups += 1;
                self.current = Some(SendTimeGroup::start(send, arrival, system));
            }
            Some(ref mut cur) => {
                cur.send = cur.send.max(send);
                self.current = Some(*cur);
            }
        }
        let cur = self.current.as_mut().expect("a current group exists");
        // "Accumulate the frame size."
        cur.size += u64::from(size);
        cur.complete = arrival;
        cur.last_system = system;
        out
    }

    /// libwebrtc `NewTimestampGroup`: not part of a burst, and sent more
    /// than `group_length` after the group's first packet.
    fn new_group(&self, cur: &SendTimeGroup, arrival: Time, send: Time) -> bool {
        if Self::belongs_to_burst(cur, arrival, send) {
            return false;
        }
        ns_between(cur.first_send, send) > i128::from(self.group_length.as_nanos())
    }

    /// libwebrtc `BelongsToBurst`: arrived within 5 ms of the group's last
    /// packet and earlier than the send spacing predicts (a queue
    /// draining), and the burst is shorter than 100 ms.
    fn belongs_to_burst(cur: &SendTimeGroup, arrival: Time, send: Time) -> bool {
        let arrival_delta = ns_between(cur.complete, arrival);
        let send_delta = ns_between(cur.send, send);
        if send_delta == 0 {
            return true;
        }
        let propagation_delta = arrival_delta - send_delta;
        propagation_delta < 0
            && arrival_delta <= i128::from(BURST_DELTA_THRESHOLD.as_nanos())
            && ns_between(cur.first_arrival, arrival) < i128::from(MAX_BURST_DURATION.as_nanos())
    }

    /// libwebrtc `InterArrivalDelta::Reset`.
    pub fn reset(&mut self) {
        self.reordered = 0;
        self.current = None;
        self.prev = None;
    }
}
