//! The retransmission timer's Linux rules and the tail loss probe (RFC 8985
//! §7; Linux `tcp_schedule_loss_probe`, `tcp_send_loss_probe`,
//! `tcp_process_tlp_ack`, `tcp_rearm_rto`).
//!
//! Linux has one transmit timer that is either the RTO or the probe timeout
//! (PTO): while a probe is scheduled no RTO runs, and when the probe fires
//! the RTO is armed again. Here the two deadlines are separate fields of
//! which at most one is set while data is outstanding.
//!
//! * Scheduling (`tcp_schedule_loss_probe`): after new data is sent, and on
//!   an ACK that acknowledges new data, only in the Open state, with data
//!   outstanding: `PTO = 2·SRTT + 2 ms` (`TCP_TIMEOUT_MIN`), or
//!   `2·SRTT + min_rto` with one segment outstanding (room for a delayed
//!   ACK), 1 s before any RTT sample; never later than the RTO would fire.
//! * The probe (`tcp_send_loss_probe`): one new segment if the peer's window
//!   allows it, regardless of cwnd, else the last segment sent again. At most
//!   one probe per tail (`tlp_high_seq`). Then the RTO restarts from now.
//! * Its outcome (`tcp_process_tlp_ack`): an ACK beyond `tlp_high_seq`
//!   without a D-SACK of the probe means the probe repaired a loss: the
//!   window is reduced once, as in a one-ACK recovery episode (Linux:
//!   `TCP_CA_CWR` entered and left at once). A D-SACK of the probe, or a pure
//!   duplicate ACK at `tlp_high_seq`, means both copies arrived: no loss.
//!
//! Deviations: the probe ignores the pacer (Linux's `tcp_write_xmit` may
//! defer it by pacing); Linux's RACK reorder timer shares the transmit timer
//! (here it is separate, as before).

use l4slab_cc::CongestionEvent;
use l4slab_core::trace::RetransmitReason;
use l4slab_core::{Dur, Time};

use super::{Endpoint, EndpointCtx};
use crate::config::RtoFormula;
use crate::state::Recovery;

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ=1000), added to 2·SRTT.
const PTO_SLACK: Dur = Dur::from_millis(2);
/// Linux `TCP_TIMEOUT_INIT`: the PTO before any RTT sample.
const PTO_NO_RTT: Dur = Dur::from_secs(1);

/// What an ACK told the TLP logic (Linux `FLAG_*` bits it reads).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TlpAck {
    pub ack: u64,
    /// A D-SACK block reports the probe's segment as received twice.
    pub dsack_of_probe: bool,
    /// `FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DATA_SACKED`.
    pub not_pure_dupack: bool,
}

impl Endpoint {
    /// Linux's timer rules apply (with [`RtoFormula::Linux`]).
    pub(super) fn linux_timers(&self) -> bool {
        self.cfg.rto_formula == RtoFormula::Linux
    }

    /// Linux `tcp_schedule_loss_probe`: arm the probe timer instead of the
    /// RTO if a probe is allowed now. `advancing`: called for an ACK that is
    /// about to restart the RTO (the full RTO is the bound), else the bound
    /// is when the running RTO would fire for the first unacknowledged segment.
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing: bool) -> bool {
        // Not while a Fast Open server sends in SYN-RECEIVED: the RTO there
        // is the SYN/ACK's (Linux tcp_fastopen_synack_timer).
        if !self.cfg.tlp
            || self.sb.is_empty()
            || self.recovery != Recovery::Open
            || !self.state.synchronized()
        {
            return false;
        }
        let one_out = self.sb.end_idx() - self.sb.front_idx() == 1;
        let mut pto = match self.rtt.srtt() {
            // RFC 8985 §7.2: PTO = 2*SRTT, + a delayed-ACK allowance (Linux:
            // tcp_rto_min) when one segment is outstanding.
            Some(srtt) => srtt * 2 + if one_out { self.cfg.min_rto } else { PTO_SLACK },
            None => PTO_NO_RTT,
        };
        // "If the RTO formula yields an earlier time, then use that time."
        let rto_left = if advancing {
            self.rtt.rto()
        } else {
            self.head_rto_deadline().saturating_since(now)
        };
        if !rto_left.is_zero() {
            pto = pto.min(rto_left);
        }
        self.tlp_deadline = Some(now + pto);
        self.rto_deadline = None;
        true
    }

    /// When the RTO of the first unacknowledged segment expires: its latest
    /// transmission plus the RTO (Linux `tcp_rto_delta_us`).
    fn head_rto_deadline(&self) -> Time {
        self.sb.get(self.sb.front_idx()).xmit_time + self.rtt.rto()
    }

    /// Linux `tcp_rearm_rto`: restart the RTO from now, or, if the probe
    /// timer was the one pending, from the first unacknowledged segment's
    /// transmission (at least a tick ahead).
    pub(super) fn rearm_rto(&mut self, now: Time) {
        if self.sb.is_empty() {
            self.rto_deadline = None;
            self.tlp_deadline = None;
            return;
        }
        let at = if self.tlp_deadline.take().is_some() {
            self.head_rto_deadline().max(now + Dur::from_micros(1))
        } else {
            now + self.rtt.rto()
        };
        self.rto_deadline = Some(at);
    }

    /// The probe timer fired (Linux `tcp_send_loss_probe`).
    pub(super) fn on_probe_timer(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        // "At most one outstanding TLP" — and nothing to probe without data.
        if self.tlp_high_seq.is_some() || self.sb.is_empty() {
            self.rearm_rto(now);
            return;
        }
        let new = self.next_new_segment().filter(|&(len, fin)| {
            self.snd_nxt + len + u64::from(fin) <= self.snd_una + self.snd_wnd
        });
        if let Some((len, fin)) = new {
            self.send_new(now, len as u32, fin, ctx);
            self.tlp_retrans = false;
        } else {
            let idx = self.sb.end_idx() - 1;
            if self.sb.get(idx).sacked {
                self.rearm_rto(now);
                return;
            }
            // Linux __tcp_retransmit_skb, without marking it lost.
            self.resend(now, idx, RetransmitReason::Tlp, ctx);
            self.tlp_retrans = true;
        }
        self.tlp_high_seq = Some(self.snd_nxt);
        self.stats.tlp_probes += 1;
        // "Reset s.t. tcp_rearm_rto will restart timer from now."
        self.tlp_deadline = None;
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// Linux `tcp_process_tlp_ack`, once per ACK before the recovery logic.
    pub(super) fn process_tlp_ack(&mut self, now: Time, a: TlpAck, ctx: &mut EndpointCtx<'_>) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if a.ack < high {
            return;
        }
        if !self.tlp_retrans || a.dsack_of_probe {
            // New data was the probe, or both copies arrived: no loss.
            self.tlp_high_seq = None;
        } else if a.ack > high {
            // "ACK advances: there was a loss, so reduce cwnd": enter and
            // leave a reduction at once (tcp_init_cwnd_reduction,
            // TCP_CA_CWR, tcp_end_cwnd_reduction).
            self.tlp_high_seq = None;
            if self.recovery == Recovery::Open {
                self.stats.tlp_recoveries += 1;
                self.ecn.on_reduction(self.snd_nxt, false, &mut self.stats);
                let flight = self.snd_nxt - self.snd_una;
                self.cc_congestion(
                    now,
                    CongestionEvent::Loss {
                        lost_bytes: 0,
                        in_flight: flight,
                        first_in_episode: true,
                    },
                    ctx,
                );
                self.cc_congestion(now, CongestionEvent::RecoveryEnd, ctx);
            }
        } else if !a.not_pure_dupack {
            // "Pure dupack: original and TLP probe arrived; no loss."
            self.tlp_high_seq = None;
        }
    }
}
