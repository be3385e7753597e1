//! Proportional Rate Reduction, RFC 6937, as Linux runs it during fast
//! recovery (`tcp_init_cwnd_reduction`, `tcp_cwnd_reduction`; PRR-SSRB).
//!
//! The controller picks the new window (`ssthresh`); PRR spreads the
//! reduction over the recovery round trip instead of stopping all sending
//! until `pipe` falls below it (plain RFC 6675): each ACK releases
//! `ssthresh / prior_cwnd` of what it delivered while `pipe > ssthresh`, then
//! up to one more segment than it delivered until `pipe` reaches `ssthresh`.
//! Counted in segments, as Linux does. Used only with controllers that report
//! an `ssthresh` (Linux skips it for controllers with their own
//! `cong_control`, such as BBR).

/// PRR state of one fast-recovery episode (RFC 6937 §3 variables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prr {
    /// `RecoverFS`; Linux uses the window before the reduction, `prior_cwnd`.
    prior_cwnd: u64,
    /// The controller's new `ssthresh`, in segments.
    ssthresh: u64,
    /// `prr_delivered`: segments delivered since the episode began.
    delivered: u64,
    /// `prr_out`: segments sent since the episode began.
    out: u64,
    /// The window PRR allows until the next update (Linux sets `snd_cwnd`).
    cwnd: u64,
}

impl Prr {
    /// RFC 6937 §3 "On entering recovery": prr_delivered = prr_out = 0.
    pub fn new(prior_cwnd: u64, ssthresh: u64, in_flight: u64) -> Self {
        Prr {
            prior_cwnd: prior_cwnd.max(1),
            ssthresh: ssthresh.max(1),
            delivered: 0,
            out: 0,
            cwnd: in_flight,
        }
    }

    /// The window (segments) in force.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// A segment was (re)transmitted during the episode.
    pub fn on_send(&mut self) {
        // RFC 6937 §3: "On any data transmission or retransmission: prr_out += (data sent)"
        self.out += 1;
    }

    /// One ACK (or the reorder timer) during the episode: `delivered`
    /// segments newly acknowledged or SACKed, `newly_lost` newly marked lost,
    /// `una_advanced` whether SND.UNA moved, `in_flight` = pipe in segments.
    pub fn on_ack(&mut self, delivered: u64, newly_lost: u64, una_advanced: bool, in_flight: u64) {
        if delivered == 0 {
            return; // Linux: "if (newly_acked_sacked <= 0) return"
        }
        // RFC 6937 §3: prr_delivered += DeliveredData
        self.delivered += delivered;
        let sndcnt = if in_flight > self.ssthresh {
            // RFC 6937 §3: sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
            (self.delivered * self.ssthresh)
                .div_ceil(self.prior_cwnd)
                .saturating_sub(self.out)
        } else {
            // RFC 6937 §3 PRR-SSRB: limit = MAX(prr_delivered - prr_out, DeliveredData) + MSS;
            // Linux adds the MSS only if SND.UNA advanced and nothing new was lost.
            let mut limit = self.delivered.saturating_sub(self.out).max(delivered);
            if una_advanced && newly_lost == 0 {
                limit += 1;
            }
            // sndcnt = MIN(ssthresh - pipe, limit)
            (self.ssthresh - in_flight).min(limit)
        };
        // Linux: "Force a fast retransmit upon entering fast recovery".
        let sndcnt = if self.out == 0 { sndcnt.max(1) } else { sndcnt };
        // Linux: tcp_snd_cwnd_set(tp, tcp_packets_in_flight(tp) + sndcnt)
        self.cwnd = in_flight + sndcnt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_sends_one_segment_per_two_delivered() {
        // cwnd 20 -> ssthresh 10, 19 segments in flight after the first loss.
        let mut p = Prr::new(20, 10, 19);
        let mut in_flight = 19;
        let mut sent = Vec::new();
        for _ in 0..8 {
            in_flight -= 1; // one segment delivered per ACK
            p.on_ack(1, 0, false, in_flight);
            let n = p.cwnd() - in_flight;
            for _ in 0..n {
                p.on_send();
            }
            in_flight += n;
            sent.push(n);
        }
        // ceil(k * 10 / 20) - prr_out: 1 (forced), 0, 1, 0, 1, 0, 1, 0.
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0]);
    }

    #[test]
    fn below_ssthresh_it_catches_up_by_at_most_one_extra() {
        let mut p = Prr::new(20, 10, 4);
        p.on_send();
        // pipe 4 < ssthresh 10: delivered 2, limit = max(2 - 1, 2) + 1 = 3.
        p.on_ack(2, 0, true, 4);
        assert_eq!(p.cwnd(), 7);
        // A new loss withholds the extra segment.
        p.on_ack(2, 1, true, 4);
        assert_eq!(p.cwnd(), 7);
    }
}
