//! A fixed-rate media sender: no congestion control at all. The encoder
//! runs at one configured bitrate whatever the feedback says — what a
//! sample or test app does before it gets a rate controller (the talk in
//! STUDIES.md §3 demonstrates a sample app, not FaceTime). It still reads
//! the feedback (loss, CE, RTT) for its counters, so a run shows what the
//! network did to a sender that never backed off.
//!
//! * Target: `rate`, constant.
//! * Pacing: `PACE_MULTIPLIER × rate` (libwebrtc's pacer factor,
//!   `kDefaultPaceMultiplier = 2.5`, as [`crate::gcc`] paces); the sender
//!   app may turn pacing off and send each frame as a burst.
//! * ECN: `NotEct`, or `Ect1` with `l4s` — an unresponsive ECT(1) sender,
//!   which RFC 9331 §4.3 does not allow on the Internet; here only to see
//!   what the L queue does with a sender that ignores its marks.

use serde_json::{json, Value};

use l4slab_core::{Ecn, Rate, Time};

use crate::{Feedback, MediaCc};

/// libwebrtc `kDefaultPaceMultiplier` (`pacing_controller.h`), as GCC's.
pub const PACE_MULTIPLIER: f64 = 2.5;

/// A fixed-rate sender (see the module documentation).
#[derive(Clone, Debug)]
pub struct FixedRate {
    rate: Rate,
    l4s: bool,
    packets_acked: u64,
    packets_lost: u64,
    packets_ce: u64,
}

impl FixedRate {
    pub fn new(rate: Rate, l4s: bool) -> Self {
        FixedRate {
            rate,
            l4s,
            packets_acked: 0,
            packets_lost: 0,
            packets_ce: 0,
        }
    }
}

impl MediaCc for FixedRate {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn on_sent(&mut self, _now: Time, _seq: u64, _size: u32) {}

    fn on_feedback(&mut self, _now: Time, fb: &Feedback<'_>) {
        for p in fb.packets {
            if p.lost() {
                self.packets_lost += 1;
            } else {
                self.packets_acked += 1;
                self.packets_ce += u64::from(p.ecn == Ecn::Ce);
            }
        }
    }

    fn target_rate(&self) -> Rate {
        self.rate
    }

    fn pacing_rate(&self) -> Rate {
        self.rate.scale(PACE_MULTIPLIER)
    }

    fn ecn(&self) -> Ecn {
        if self.l4s {
            Ecn::Ect1
        } else {
            Ecn::NotEct
        }
    }

    fn report(&self) -> Value {
        json!({
            "rate_bps": self.rate.as_bps(),
            "packets_acked": self.packets_acked,
            "packets_lost": self.packets_lost,
            "packets_ce": self.packets_ce,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketReport;
    use l4slab_core::Dur;

    #[test]
    fn holds_its_rate_through_loss_and_marks() {
        let mut cc = FixedRate::new(Rate::from_kbps(2_000), true);
        let t = Time::ZERO + Dur::from_millis(100);
        let p = |seq, arrival: Option<Time>, ecn| PacketReport {
            seq,
            size: 1_200,
            sent: Time::ZERO,
            arrival,
            ecn,
        };
        let packets = [
            p(0, None, Ecn::NotEct),
            p(1, Some(t), Ecn::Ce),
            p(2, Some(t), Ecn::Ect1),
        ];
        cc.on_feedback(
            t,
            &Feedback {
                report_time: t,
                packets: &packets,
            },
        );
        assert_eq!(cc.target_rate(), Rate::from_kbps(2_000));
        assert_eq!(cc.pacing_rate(), Rate::from_kbps(5_000));
        assert_eq!(cc.ecn(), Ecn::Ect1);
        let r = cc.report();
        assert_eq!(
            (r["packets_lost"].as_u64(), r["packets_ce"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(FixedRate::new(Rate::from_kbps(1), false).ecn(), Ecn::NotEct);
    }
}
