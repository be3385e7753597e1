//! The sending half of ECN: which codepoint each segment carries and how the
//! sender reads the feedback.
//!
//! Codepoint: RFC 3168 §6.1.4-§6.1.5, RFC 9768 §3.2.2.2, RFC 8311 §4.3 and
//! Linux `tcp_ecn_send` / `INET_ECN_xmit`, within the fallbacks of
//! `validation.rs`. Feedback: classic ECE (Linux `tcp_count_delivered`, one
//! reduction per window, RFC 3168 §6.1.2, and CWR after it); AccECN: the ACE
//! delta with RFC 9768 §3.2.2.5 / Appendix A.2's wrap safety and the option's
//! byte counters, as Linux `__tcp_accecn_process`.

use l4slab_cc::EcnCodepoint;
use l4slab_core::{Ecn, Time};

use super::validation::{Response, SendEct};
use super::{EcnState, CEB_INIT, CEP_INIT, E0B_INIT, E1B_INIT, MASK24};
use crate::config::EcnMode;
use crate::segment::{AccEcnOption, Flags, Segment};
use crate::stats::EndpointStats;

/// Linux `TCP_ACCECN_SAFETY_SHIFT` (RFC 9768 Appendix A.2.1 SAFETY_FACTOR = 2).
const SAFETY_SHIFT: u32 = 1;

/// What an outgoing segment is, which decides its IP-ECN field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The client's SYN.
    Syn,
    /// The server's SYN/ACK.
    SynAck,
    /// A data segment sent for the first time.
    NewData,
    /// A retransmitted data segment (or FIN).
    Retransmit,
    /// A pure ACK or a bare FIN.
    Control,
}

/// What one ACK delivered (newly cumulatively or selectively acknowledged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Delivered {
    pub pkts: u64,
    pub bytes: u64,
    /// Of those, sent with ECT (ECT(0) or ECT(1)) on their latest transmission.
    pub ect_pkts: u64,
    pub ect_bytes: u64,
}

/// ECN feedback an ACK carried, for the controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Feedback {
    /// `AckEvent::ce_bytes`.
    pub ce_bytes: u64,
    /// The ACK signalled new congestion (ECE, or new CE marks).
    pub congestion: bool,
}

/// The sending half of [`EcnState`]: feedback bookkeeping.
#[derive(Debug)]
pub(super) struct Sender {
    /// Classic: set CWR on the next new data segment (Linux
    /// `TCP_ECN_QUEUE_CWR`; a one-shot duty, not a mode).
    pub cwr_queued: bool,
    /// No new classic reduction until SND.UNA reaches this (Linux `high_seq`
    /// of the CWR state; RFC 3168 §6.1.2 "once per window").
    pub cwr_high: u64,
    /// AccECN `s.cep` without the offset: CE packets fed back so far.
    pub s_cep: u64,
    /// Last option values seen, as on the wire (e1b, ceb, e0b).
    pub s_opt: [u64; 3],
    /// TSval of the last ACK whose feedback was processed.
    pub last_ts: Time,
    /// CE bytes passed to the controller from ACE estimates, not yet
    /// confirmed by an option.
    pub est_pending: u64,
    /// CE bytes fed back but not yet given to the controller (kept at most
    /// `acked_bytes` per ACK).
    pub ce_carry: u64,
    pub ect_delivered_pkts: u64,
    pub ect_delivered_bytes: u64,
    pub ect_sent_pkts: u64,
    /// Sum of the option byte-counter increases (e1b + ceb + e0b).
    pub fb_total: u64,
}

impl Default for Sender {
    fn default() -> Self {
        Sender {
            cwr_queued: false,
            cwr_high: 0,
            s_cep: 0,
            s_opt: [E1B_INIT, CEB_INIT, E0B_INIT],
            last_ts: Time::ZERO,
            est_pending: 0,
            ce_carry: 0,
            ect_delivered_pkts: 0,
            ect_delivered_bytes: 0,
            ect_sent_pkts: 0,
            fb_total: 0,
        }
    }
}

fn to_ecn(c: EcnCodepoint) -> Ecn {
    match c {
        EcnCodepoint::NotEct => Ecn::NotEct,
        EcnCodepoint::Ect0 => Ecn::Ect0,
        EcnCodepoint::Ect1 => Ecn::Ect1,
    }
}

impl EcnState {
    /// The codepoint the sender asks for: the configured override, else the
    /// controller's (Linux `TCP_CONG_ECT_1_NEGOTIATION` / `WANTS_ECT_1`).
    fn wanted(&self, cc: EcnCodepoint) -> EcnCodepoint {
        self.override_cp.unwrap_or(cc)
    }

    /// Linux `tcp_ca_needs_ecn`: the controller (or the override) asks for
    /// ECT, so SYN, SYN/ACK, retransmissions and pure ACKs carry it too.
    fn needs_ecn(&self, cc: EcnCodepoint) -> bool {
        self.wanted(cc) != EcnCodepoint::NotEct
    }

    /// An L4S sender (ECT(1)) that has not fallen back to classic.
    pub(super) fn l4s(&self, cc: EcnCodepoint) -> bool {
        self.val.response.get() == Response::AsController && self.wanted(cc) == EcnCodepoint::Ect1
    }

    /// The ECT codepoint of this sender, ignoring whether ECN is on: the
    /// override, else ECT(1) for an L4S controller and ECT(0) otherwise
    /// (Linux `INET_ECN_xmit`: negotiated ECN means ECT(0)).
    fn ect(&self, cc: EcnCodepoint) -> Ecn {
        if self.val.response.get() == Response::Classic {
            return Ecn::Ect0;
        }
        match self.override_cp {
            Some(c) => to_ecn(c),
            None if cc == EcnCodepoint::Ect1 => Ecn::Ect1,
            None => Ecn::Ect0,
        }
    }

    /// The IP-ECN field of an outgoing segment (SYN and SYN/ACK: see
    /// [`Self::syn`], [`Self::syn_ack`]).
    ///
    /// RFC 3168 §6.1.4-§6.1.5 and Linux `tcp_ecn_send`: classic ECN sets ECT
    /// on new data only, unless the controller needs ECN (then on everything);
    /// AccECN sets it on every segment, pure ACKs and retransmissions
    /// included (Linux `INET_ECN_xmit` for the whole socket; RFC 9768
    /// §3.2.2.2 / RFC 8311 §4.3 allow it). SYN: only for a controller that
    /// needs ECN (Linux `tcp_ecn_send_syn`), never on a retransmission.
    pub fn ip_field(&self, kind: Kind, cc: EcnCodepoint) -> Ecn {
        let mode = self.mode();
        match kind {
            Kind::Syn => {
                // RFC 3168 §6.1.1.1: no ECT once the SYN fell back.
                let fell_back =
                    self.hs.negotiation.get() == super::negotiation::Negotiation::SynFallback;
                if self.hs.want != EcnMode::Off && !fell_back && self.needs_ecn(cc) {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
            Kind::SynAck => {
                if mode != EcnMode::Off
                    && self.val.send_ect.get() != SendEct::Off
                    && self.needs_ecn(cc)
                {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
            // Off, or a fallback (validation.rs): Not-ECT.
            _ if mode == EcnMode::Off || self.val.send_ect.get() != SendEct::On => Ecn::NotEct,
            Kind::NewData => self.ect(cc),
            Kind::Retransmit | Kind::Control => {
                let ack_off = kind == Kind::Control && !self.val.ack_ect_on();
                let all = mode == EcnMode::AccEcn || self.needs_ecn(cc);
                if all && !ack_off {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
        }
    }

    /// A data segment left with IP-ECN field `ip`.
    pub fn on_data_sent(&mut self, ip: Ecn, len: u32, stats: &mut EndpointStats) {
        match ip {
            Ecn::Ect0 => stats.ect0_bytes_sent += u64::from(len),
            Ecn::Ect1 => stats.ect1_bytes_sent += u64::from(len),
            _ => {}
        }
        if ip.is_ect() {
            self.tx.ect_sent_pkts += 1;
        }
    }

    /// Process the ECN feedback of an ACK `seg` that delivered `d` (after
    /// SACK and cumulative processing).
    pub fn on_ack(
        &mut self,
        seg: &Segment,
        d: &Delivered,
        mss: u64,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) -> Feedback {
        let (flags, ts_val, opt) = (seg.flags, seg.ts_val, seg.accecn);
        let mode = self.mode();
        if mode == EcnMode::Off {
            return Feedback::default();
        }
        if self.hs.skip_feedback_once {
            // Linux __tcp_accecn_process: "ACE field is not available during
            // handshake" (FLAG_SYN_ACKED).
            self.hs.skip_feedback_once = false;
            self.tx.last_ts = self.tx.last_ts.max(ts_val);
            return Feedback::default();
        }
        // Linux: "Reordered ACK or uncertain due to lack of data to send and
        // ts" — only ACKs that deliver something or carry a newer TSval.
        if d.pkts == 0 && ts_val <= self.tx.last_ts {
            return Feedback::default();
        }
        self.tx.last_ts = self.tx.last_ts.max(ts_val);
        self.tx.ect_delivered_pkts += d.ect_pkts;
        self.tx.ect_delivered_bytes += d.ect_bytes;

        let (ce_raw, congestion) = match mode {
            EcnMode::Off => (0, false),
            EcnMode::Classic => {
                if flags.contains(Flags::ECE) {
                    // Linux tcp_count_delivered: an ECE ACK marks everything it
                    // newly delivers as CE (counted here; the controller gets
                    // the classic signal, EcnEcho, not CE bytes).
                    stats.ce_packets_fed_back += d.pkts;
                    (0, true)
                } else {
                    (0, false)
                }
            }
            EcnMode::AccEcn => {
                let b = self.accecn_feedback(flags.ace(), opt, d, mss, cc, stats);
                (b, b > 0)
            }
        };
        // validation.rs: the black-hole probe's answer and the testing period.
        self.answer_probe(d, opt.is_some(), cc, stats);
        self.check_testing_period(stats);
        if self.val.send_ect.get() == SendEct::Off {
            // Bleached / black hole / failed: "MUST NOT respond to AccECN
            // feedback" (RFC 9768 §3.2.2.1); the counters above still run.
            self.tx.ce_carry = 0;
            return Feedback::default();
        }
        // A classic response gets the classic signal only (EcnEcho, decided by
        // the endpoint), no CE bytes. Otherwise keep ce_bytes <= acked bytes
        // per ACK (controllers compute fractions); the rest is carried to the
        // next ACKs, so the total is exact.
        if !self.classic_response(cc) {
            self.tx.ce_carry += ce_raw;
        }
        let ce_bytes = self.tx.ce_carry.min(d.bytes);
        self.tx.ce_carry -= ce_bytes;
        stats.ce_bytes_fed_back += ce_bytes;
        Feedback {
            ce_bytes,
            congestion,
        }
    }

    /// RFC 9768 §3.2.2.5 and Appendix A.2, as Linux `__tcp_accecn_process`:
    /// newly CE-marked packets from the ACE delta and CE bytes from the
    /// option; the option's counters also go to validation (`check_counters`).
    fn accecn_feedback(
        &mut self,
        ace: u8,
        opt: Option<AccEcnOption>,
        d: &Delivered,
        mss: u64,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) -> u64 {
        // Option deltas (mod 2^24). An absent field did not change: the
        // receiver always sends the fields that changed or no option (Linux
        // accecn_minlen), so a shorter option still gives exact deltas.
        let opt_d = opt.map(|o| {
            let vals = [u64::from(o.e1b), u64::from(o.ceb), u64::from(o.e0b)];
            let mut deltas = [0u64; 3];
            for (i, (&v, last)) in vals.iter().zip(self.tx.s_opt.iter_mut()).enumerate() {
                if usize::from(o.fields) > i {
                    deltas[i] = (v.wrapping_sub(*last)) & MASK24;
                    *last = v;
                }
            }
            deltas
        });

        // ACE delta: corrected_ace = ACE - 5; delta = (corrected_ace - s.cep) mod 8.
        let corrected = (u64::from(ace) + 8 - CEP_INIT) & 7;
        let delta = (corrected + 8 - (self.tx.s_cep & 7)) & 7;
        let n = d.pkts;
        let d_cep = if n <= 7 {
            delta
        } else {
            // RFC 9768 Appendix A.2.1: with more than 7 newly delivered
            // packets the ACE may have wrapped: assume the most CE packets
            // that is consistent with the delta (safe_delta), unless the
            // option's CE bytes say otherwise (Linux, with
            // TCP_ACCECN_SAFETY_SHIFT).
            let safe = n - ((n - delta) & 7);
            match opt_d {
                Some(od) if od[1] == 0 => delta,
                Some(od) => {
                    let d_ceb = od[1];
                    if n >= 16 {
                        if d.bytes <= d_ceb {
                            safe
                        } else {
                            let est = (d_ceb * n).div_ceil(d.bytes);
                            safe.min(delta + (est & !7))
                        }
                    } else if d_ceb > delta * mss {
                        safe
                    } else if d_ceb < (safe * mss) >> SAFETY_SHIFT {
                        delta
                    } else {
                        safe
                    }
                }
                None => safe,
            }
        };
        self.tx.s_cep += d_cep;
        stats.ce_packets_fed_back += d_cep;

        match opt_d {
            Some(od) => {
                let [d_e1b, d_ceb, d_e0b] = od;
                stats.fb_ect1_bytes += d_e1b;
                stats.fb_ce_bytes += d_ceb;
                stats.fb_ect0_bytes += d_e0b;
                self.tx.fb_total += d_e1b + d_ceb + d_e0b;
                // RFC 9000 §13.4.2.1 applied to byte counters (validation.rs).
                self.check_counters(cc, stats);
                // Estimates passed on earlier are part of this delta.
                let b = d_ceb.saturating_sub(self.tx.est_pending);
                self.tx.est_pending = self.tx.est_pending.saturating_sub(d_ceb);
                b
            }
            None => {
                // RFC 9768 §3.2.2.5: without the option, CE bytes ≈ packets × SMSS.
                let b = d_cep * mss;
                self.tx.est_pending += b;
                b
            }
        }
    }

    /// Whether the controller gets classic feedback — at most one
    /// `CongestionEvent::EcnEcho` per RTT and no `ce_bytes` — rather than
    /// the CE bytes: in classic mode; under AccECN for a controller that asks
    /// for no codepoint (Reno, Cubic, BBR: Linux CCs without
    /// `TCP_CONG_NEEDS_ECN`, which AccECN feedback puts into CWR like an
    /// ECE); and for an L4S sender after the re-marking fallback. DCTCP
    /// (ECT(0)) and Prague (ECT(1)) read the CE bytes.
    pub fn classic_response(&self, cc: EcnCodepoint) -> bool {
        self.val.send_ect.get() != SendEct::Off
            && match self.mode() {
                EcnMode::Off => false,
                EcnMode::Classic => true,
                EcnMode::AccEcn => {
                    self.val.response.get() == Response::Classic || cc == EcnCodepoint::NotEct
                }
            }
    }

    /// RFC 3168 §6.1.2: not more than one reduction per window of data: the
    /// previous one's window (SND.NXT when it happened) must be acknowledged
    /// *and passed*. An ACK for exactly that SND.NXT acknowledges only data
    /// sent before the reduction, so its ECE was set before the CWR segment
    /// (the first new data, at that SND.NXT) arrived — Linux leaves CWR only
    /// when `snd_una != high_seq` ("CWR is to be held something *above*
    /// high_seq is ACKed for CWR bit to reach receiver", `tcp_fastretrans_alert`).
    pub fn may_echo(&self, snd_una: u64) -> bool {
        snd_una > self.tx.cwr_high
    }

    /// A window reduction happened (an ECN echo, or a loss episode) with
    /// `snd_nxt`: classic mode sets CWR on the next new data (Linux
    /// `tcp_init_cwnd_reduction` → `tcp_ecn_queue_cwr`).
    pub fn on_reduction(&mut self, snd_nxt: u64, echo: bool, stats: &mut EndpointStats) {
        self.tx.cwr_high = snd_nxt;
        if self.mode() == EcnMode::Classic {
            self.tx.cwr_queued = true;
        }
        if echo {
            stats.ecn_echo_events += 1;
        }
    }
}
