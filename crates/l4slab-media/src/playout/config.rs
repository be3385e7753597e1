//! How the buffer plays out: [`PlayoutConfig`] and the freeze rule it
//! carries.

use l4slab_core::Dur;

/// libwebrtc's freeze rule (`video_quality_observer2.cc`, REFERENCES C6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreezeRule {
    /// Render intervals in the moving average (`kAvgInterframeDelaysWindowSizeFrames`).
    pub window: usize,
    /// Intervals needed before a freeze can be declared (`kMinFrameSamplesToDetectFreeze`).
    pub min_samples: usize,
    /// A freeze is at least this many times the average ...
    pub factor: u64,
    /// ... and at least this much above it (`kMinIncreaseForFreezeMs`).
    pub min_increase: Dur,
}

impl FreezeRule {
    pub const WEBRTC: FreezeRule = FreezeRule {
        window: 30,
        min_samples: 5,
        factor: 3,
        min_increase: Dur::from_millis(150),
    };
}

impl Default for FreezeRule {
    fn default() -> Self {
        FreezeRule::WEBRTC
    }
}

/// How the buffer plays out (see the module documentation for each rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayoutConfig {
    /// Extra delay above the smallest transit. 0: render as soon as
    /// decodable (cloud gaming, WebRTC's low-latency mode).
    pub min_delay: Dur,
    /// Add the 95th-percentile transit excess over the last
    /// [`JITTER_WINDOW`](super::JITTER_WINDOW) frames to the delay. Off: low latency.
    pub jitter_allowance: bool,
    /// Ask for retransmissions of missing packets.
    pub nack: bool,
    /// NACKs per missing packet (`kMaxNackRetries`).
    pub nack_max_retries: u32,
    /// The RTT assumed before [`Playout::set_rtt`](super::Playout::set_rtt) (`kDefaultRtt`).
    pub initial_rtt: Dur,
    /// Without NACK: how long a missing packet may still arrive (reordered)
    /// before it is given up. 20 ms is this model's guess: libwebrtc without
    /// NACK does not give up on a packet, it waits for a keyframe.
    pub reorder_wait: Dur,
    /// Least time between keyframe requests, floored at the RTT
    /// (`kMaxWaitForKeyFrame`).
    pub keyframe_retry: Dur,
    /// A render gap longer than this is a stall (as `FrameStream`).
    pub stall_threshold: Dur,
    /// A frame rendered more than this after capture is late.
    pub late_threshold: Option<Dur>,
    /// Playout deadline: a frame still incomplete this long after its due
    /// time is given up (dropped as incomplete, its missing packets no
    /// longer awaited) — a jitter buffer whose packets count as lost when
    /// they miss their frame's playout time. `None`: wait for every repair
    /// (libwebrtc's frame buffer).
    pub deadline: Option<Dur>,
    pub freeze: FreezeRule,
}

impl Default for PlayoutConfig {
    fn default() -> Self {
        PlayoutConfig {
            min_delay: Dur::ZERO,
            jitter_allowance: false,
            nack: true,
            nack_max_retries: 10,
            initial_rtt: Dur::from_millis(100),
            reorder_wait: Dur::from_millis(20),
            keyframe_retry: Dur::from_millis(200),
            stall_threshold: Dur::from_millis(200),
            late_threshold: None,
            deadline: None,
            freeze: FreezeRule::WEBRTC,
        }
    }
}
