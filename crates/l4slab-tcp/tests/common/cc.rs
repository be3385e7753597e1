//! Test-only congestion controllers that record every call they receive.

use std::sync::{Arc, Mutex};

use l4slab_cc::{AckEvent, CcCtx, CongestionControl, CongestionEvent, EcnCodepoint, LostPacket};
use l4slab_core::{Rate, Time};

/// A call the transport made into a controller.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Sent { t: Time, bytes: u64, in_flight: u64 },
    Ack { t: Time, ev: AckEvent },
    Congestion { t: Time, ev: CongestionEvent },
    Lost { t: Time, lost: LostPacket },
}

/// Shared log (controllers must be `Send`, and move into the endpoint).
#[derive(Clone, Debug, Default)]
pub struct Log(pub Arc<Mutex<Vec<Call>>>);

impl Log {
    fn push(&self, c: Call) {
        self.0.lock().unwrap().push(c);
    }

    pub fn congestion(&self) -> Vec<(Time, CongestionEvent)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|c| match c {
                Call::Congestion { t, ev } => Some((*t, *ev)),
                _ => None,
            })
            .collect()
    }

    pub fn lost(&self) -> Vec<(Time, LostPacket)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|c| match c {
                Call::Lost { t, lost } => Some((*t, *lost)),
                _ => None,
            })
            .collect()
    }

    /// Every call, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }

    pub fn acks(&self) -> Vec<(Time, AckEvent)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|c| match c {
                Call::Ack { t, ev } => Some((*t, *ev)),
                _ => None,
            })
            .collect()
    }
}

/// A constant window (and optionally a constant pacing rate).
#[derive(Debug)]
pub struct Fixed {
    pub cwnd: u64,
    pub pacing: Option<Rate>,
    /// What `ecn_codepoint()` answers (Not-ECT unless set).
    pub ecn: EcnCodepoint,
    pub log: Log,
}

impl Fixed {
    pub fn segments(n: u64, mss: u32) -> Self {
        Fixed {
            cwnd: n * u64::from(mss),
            pacing: None,
            ecn: EcnCodepoint::NotEct,
            log: Log::default(),
        }
    }

    /// The same with an ECN codepoint (e.g. ECT(1) for an L4S controller).
    pub fn with_ecn(mut self, ecn: EcnCodepoint) -> Self {
        self.ecn = ecn;
        self
    }
}

impl CongestionControl for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn ecn_codepoint(&self) -> EcnCodepoint {
        self.ecn
    }
    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Sent {
            t: now,
            bytes,
            in_flight,
        });
    }
    fn on_ack(&mut self, now: Time, ack: &AckEvent, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Ack { t: now, ev: *ack });
    }
    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Congestion { t: now, ev: *ev });
    }
    fn on_packet_lost(&mut self, now: Time, lost: &LostPacket, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Lost {
            t: now,
            lost: *lost,
        });
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn pacing_rate(&self) -> Option<Rate> {
        self.pacing
    }
}

/// Minimal NewReno: slow start counting every acked byte (as Linux does),
/// +1 MSS per window in congestion avoidance, halve on the first loss of an
/// episode, 1 MSS after an RTO, no growth during fast recovery.
#[derive(Debug)]
pub struct MiniReno {
    pub cwnd: u64,
    pub ssthresh: u64,
    mss: u64,
    recovering: bool,
    ca_acked: u64,
    pub log: Log,
}

impl MiniReno {
    pub fn new(iw_segments: u64, mss: u32) -> Self {
        MiniReno {
            cwnd: iw_segments * u64::from(mss),
            ssthresh: u64::MAX,
            mss: u64::from(mss),
            recovering: false,
            ca_acked: 0,
            log: Log::default(),
        }
    }
}

impl CongestionControl for MiniReno {
    fn name(&self) -> &'static str {
        "mini_reno"
    }
    fn on_packet_sent(&mut self, now: Time, bytes: u64, in_flight: u64, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Sent {
            t: now,
            bytes,
            in_flight,
        });
    }
    fn on_ack(&mut self, now: Time, ack: &AckEvent, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Ack { t: now, ev: *ack });
        if self.recovering {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + ack.acked_bytes).min(self.ssthresh.max(self.cwnd));
        } else {
            self.ca_acked += ack.acked_bytes;
            while self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }
    fn on_congestion(&mut self, now: Time, ev: &CongestionEvent, _ctx: &mut CcCtx<'_>) {
        self.log.push(Call::Congestion { t: now, ev: *ev });
        match *ev {
            CongestionEvent::Loss {
                in_flight,
                first_in_episode: true,
                ..
            } => {
                self.ssthresh = (in_flight / 2).max(2 * self.mss);
                self.cwnd = self.ssthresh;
                self.recovering = true;
            }
            CongestionEvent::Rto { in_flight } => {
                self.ssthresh = (in_flight / 2).max(2 * self.mss);
                self.cwnd = self.mss;
                self.recovering = false;
            }
            CongestionEvent::RecoveryEnd | CongestionEvent::Undo => self.recovering = false,
            _ => {}
        }
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then_some(self.ssthresh)
    }
}
