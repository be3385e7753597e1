//! TCP pacing, the [`super::Rule::Linux`] release rule: data segments leave
//! at most every `len / pacing_rate`, expressed as a release time (Linux
//! `tcp_wstamp_ns`, the earliest departure time `sch_fq` honours). Used by
//! `l4slab-tcp` through [`super::Pacer`].
//!
//! Follows Linux TCP internal pacing (`tcp_update_skb_after_send`,
//! `tcp_update_pacing_rate`; REFERENCES §3.8):
//! * the gap after a segment is its **payload** length at the pacing rate
//!   (Linux uses `skb->len`; `sch_fq` would use the wire length);
//! * the first 10 data segments are not paced (`tp->data_segs_out >= 10`), so
//!   the initial window leaves as a burst;
//! * a late start earns back at most half a gap (`len_ns -= min(len_ns / 2, credit)`).
//!
//! Not modelled: TSO autosizing (Linux may release a ~1 ms burst per skb);
//! here every segment is paced individually.

use l4slab_core::{Dur, Rate, Time};

/// Linux `tcp_update_skb_after_send`: pacing starts once `data_segs_out >= 10`.
pub const UNPACED_SEGMENTS: u64 = 10;
/// Linux `tcp_pacing_ss_ratio` default, percent.
pub const PACING_SS_RATIO: u64 = 200;
/// Linux `tcp_pacing_ca_ratio` default, percent.
pub const PACING_CA_RATIO: u64 = 120;

/// The departure time of one TCP sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Departure {
    /// Linux `tcp_wstamp_ns`: earliest departure of the next data segment.
    next_send: Time,
    /// Linux `data_segs_out`.
    data_segs_out: u64,
}

impl Departure {
    /// Linux `tcp_pacing_check`: a segment waits until `tcp_wstamp_ns`.
    pub(super) fn release_time(&self, now: Time) -> Time {
        self.next_send.max(now)
    }

    /// A data segment of `payload` bytes leaves at `now`; `rate` is the
    /// pacing rate in force (`None` = unpaced).
    pub(super) fn on_sent(&mut self, now: Time, payload: u64, rate: Option<Rate>) {
        self.data_segs_out += 1;
        // Linux __tcp_transmit_skb: prior_wstamp = wstamp; wstamp = max(wstamp, now)
        let prior = self.next_send;
        self.next_send = self.next_send.max(now);
        let Some(rate) = rate.filter(|r| r.as_bps() > 0) else {
            return;
        };
        if self.data_segs_out < UNPACED_SEGMENTS {
            return;
        }
        // Linux tcp_update_skb_after_send: len_ns = skb->len * NSEC_PER_SEC / rate
        let len_ns = rate.tx_time(payload);
        // "take into account OS jitter": len_ns -= min(len_ns / 2, credit)
        let credit = self.next_send - prior;
        let gap = len_ns - Dur::from_nanos((len_ns.as_nanos() / 2).min(credit.as_nanos()));
        self.next_send += gap;
    }
}

/// Linux `tcp_update_pacing_rate` for controllers without their own rate:
/// `ratio * max(cwnd, outstanding) / srtt`, with ratio 200 % while
/// `cwnd < ssthresh / 2` ("slow start") and 120 % otherwise. `None` before the
/// first RTT sample (Linux then does not divide, i.e. effectively unpaced).
pub fn default_rate(
    cwnd: u64,
    ssthresh: Option<u64>,
    outstanding: u64,
    srtt: Option<Dur>,
) -> Option<Rate> {
    let srtt = srtt.filter(|s| !s.is_zero())?;
    let ratio = if cwnd < ssthresh.unwrap_or(u64::MAX) / 2 {
        PACING_SS_RATIO
    } else {
        PACING_CA_RATIO
    };
    let bytes = u128::from(cwnd.max(outstanding));
    let bps = bytes * 8 * 1_000_000_000 * u128::from(ratio) / 100 / u128::from(srtt.as_nanos());
    Some(Rate::from_bps(bps.min(u128::from(u64::MAX)) as u64))
}

#[cfg(test)]
mod tests {
    use super::super::{Pacer, Rule};
    use super::*;

    #[test]
    fn gaps_are_payload_over_rate_after_the_first_ten() {
        // 1448 B at 11.584 Mbit/s = exactly 1 ms.
        let rate = Some(Rate::from_bps(1448 * 8 * 1000));
        let mut p = Pacer::new(Rule::Linux, Time::ZERO);
        p.set_rate(Time::ZERO, rate);
        for _ in 0..9 {
            p.on_sent(Time::ZERO, 1448);
            assert_eq!(p.release_time(Time::ZERO, 1448), Time::ZERO);
        }
        p.on_sent(Time::ZERO, 1448); // the 10th sets the first gap
        assert_eq!(p.release_time(Time::ZERO, 1448), Time::from_millis(1));
        p.on_sent(Time::from_millis(1), 1448);
        assert_eq!(p.release_time(Time::ZERO, 1448), Time::from_millis(2));
        // Sent 3 ms late: at most half a gap of credit.
        p.on_sent(Time::from_millis(5), 1448);
        assert_eq!(p.release_time(Time::ZERO, 1448), Time::from_micros(5_500));
        // A release time in the past is now.
        assert_eq!(
            p.release_time(Time::from_millis(9), 1448),
            Time::from_millis(9)
        );
    }

    #[test]
    fn unpaced_segments_still_count_towards_the_ten() {
        let mut p = Pacer::new(Rule::Linux, Time::ZERO);
        for _ in 0..12 {
            p.on_sent(Time::ZERO, 1448);
        }
        p.set_rate(Time::ZERO, Some(Rate::from_bps(1448 * 8 * 1000)));
        p.on_sent(Time::ZERO, 1448);
        assert_eq!(p.release_time(Time::ZERO, 1448), Time::from_millis(1));
    }

    #[test]
    fn default_rate_follows_linux_ratios() {
        let srtt = Some(Dur::from_millis(100));
        // cwnd 100 kB over 100 ms = 8 Mbit/s; slow start doubles it.
        assert_eq!(
            default_rate(100_000, None, 0, srtt),
            Some(Rate::from_mbps(16))
        );
        // cwnd >= ssthresh/2: 120 %.
        assert_eq!(
            default_rate(100_000, Some(150_000), 0, srtt),
            Some(Rate::from_bps(9_600_000))
        );
        // Outstanding data above cwnd (after a reduction) counts.
        assert_eq!(
            default_rate(50_000, Some(50_000), 100_000, srtt),
            Some(Rate::from_bps(9_600_000))
        );
        assert_eq!(default_rate(100_000, None, 0, None), None);
    }
}
