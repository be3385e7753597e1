//! What to send next: RFC 6675 §4 `NextSeg` rule 1 (the lowest lost segment)
//! before rule 2 (new data), each only while `cwnd - pipe >= 1 SMSS`
//! (RFC 6675 §5 (C)), new data only inside the peer's window (RFC 9293
//! §3.8.6.2.1), and only when the pacer releases it.
//!
//! Deviations: the cwnd test counts segments as Linux does (`tcp_cwnd_test`:
//! `packets_in_flight < cwnd`, with `cwnd = floor(cwnd_bytes / MSS)`, at
//! least 1): identical to the byte rule for full-sized segments, and a small
//! segment (a small write without Nagle) occupies a whole slot, as in Linux,
//! instead of letting a window's worth of tiny segments out. Rules 3 and 4
//! of `NextSeg` (the rescue retransmission) are not implemented (Linux has
//! neither). The cwnd test uses `pipe` in every state, as Linux does
//! (RFC 5681 outside recovery uses FlightSize). With
//! nothing outstanding, one segment may exceed the peer's window: it stands
//! in for the zero-window probe (RFC 9293 §3.8.6.1), which the model never
//! needs because its receiver's window only closes over out-of-order data,
//! but it guarantees progress.

use l4slab_core::trace::RetransmitReason;
use l4slab_core::{Ecn, Time, TraceEvent};

use super::{Endpoint, EndpointCtx};
use crate::ecn::Kind;
use crate::scoreboard::SentSeg;
use crate::segment::{Flags, Segment, Transmit};
use crate::state::{ConnState, Recovery};

/// Why the send loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Nothing left to send.
    NoData,
    /// Congestion window or receive window.
    Limited,
    /// The pacer: data is waiting for its release time.
    Paced,
}

impl Endpoint {
    /// Send everything the windows and the pacer allow now.
    pub(super) fn try_send(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        self.pacing_deadline = None;
        if !self.state.may_send_data() && !self.fastopen_may_send() {
            return;
        }
        let mut sent = false;
        let mut sent_new = false;
        // F-RTO step 2b (`undo.rs`): this time new data, no retransmissions.
        let frto_new = std::mem::take(&mut self.frto_send_new);
        let stop = loop {
            // Linux tcp_cwnd_test: packets_in_flight < cwnd (in segments, >= 1).
            let cwnd_ok = self.sb.in_flight_segs() < self.cwnd_segs();
            let forced = self.force_retransmit;
            // RFC 6675 §4 NextSeg rule 1: the lowest un-SACKed lost segment.
            let rtx = if frto_new && !forced {
                None
            } else {
                self.sb.next_retransmit()
            };
            if let Some(idx) = rtx {
                let s = *self.sb.get(idx);
                if !forced {
                    // Linux tcp_retransmit_skb: not beyond the receive window,
                    // unless it is the first unacknowledged segment.
                    let in_rwnd = s.seq < self.snd_una + self.snd_wnd || s.seq == self.snd_una;
                    if !in_rwnd || !cwnd_ok {
                        break Stop::Limited;
                    }
                    if !self.pacer_allows(now) {
                        break Stop::Paced;
                    }
                }
                self.force_retransmit = false;
                self.retransmit(now, idx, ctx);
                sent = true;
                continue;
            }
            self.force_retransmit = false;
            // RFC 6675 §4 NextSeg rule 2: new data.
            let Some((len, fin)) = self.next_new_segment() else {
                break Stop::NoData;
            };
            // RFC 9293 §3.8.6.2.1: never beyond SND.UNA + SND.WND, the FIN
            // included (Linux tcp_snd_wnd_test uses end_seq); see the module
            // documentation for the one-segment exception.
            let end = self.snd_nxt + len + u64::from(fin);
            let in_rwnd = end <= self.snd_una + self.snd_wnd || self.sb.is_empty();
            if !in_rwnd || !cwnd_ok {
                break Stop::Limited;
            }
            if !self.pacer_allows(now) {
                break Stop::Paced;
            }
            self.send_new(now, len as u32, fin, ctx);
            sent = true;
            sent_new = true;
        };
        if frto_new && !sent_new {
            // Linux tcp_xmit_recovery: no new data went out, so F-RTO ends
            // and the lost segments are retransmitted after all.
            self.frto = false;
            self.try_send(now, ctx);
            return;
        }
        if sent_new {
            // Linux tcp_write_xmit: "Send one loss probe per tail loss episode."
            self.schedule_loss_probe(now, false);
        }
        if stop == Stop::NoData {
            self.check_app_limited();
        }
        // Linux tcp_write_xmit: is_cwnd_limited |= (packets_in_flight >= cwnd);
        // if (sent_pkts || is_cwnd_limited) tcp_cwnd_validate(sk, is_cwnd_limited).
        // Deviation: data held back by the pacer also counts. The pacing rate
        // is the controller's window spread over an RTT, and below two
        // segments (Prague's fractional window, docs/models/prague.md) it is
        // the only limit: without this a thin paced flow never counts as
        // window-limited and its window never grows back.
        let cwnd_limited = stop == Stop::Paced || self.sb.in_flight_segs() >= self.cwnd_segs();
        if sent || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
    }

    /// Linux `tcp_cwnd_validate`: remember, per window, whether the window
    /// was ever the limit, else the most segments outstanding.
    fn cwnd_validate(&mut self, cwnd_limited: bool) {
        let out = self.sb.in_flight_segs();
        if self.snd_una >= self.cwnd_usage_seq
            || cwnd_limited
            || (!self.is_cwnd_limited && out > self.max_packets_out)
        {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_is_cwnd_limited`: the window was the limit in the current
    /// window; or, in slow start, it is less than twice what was outstanding
    /// ("ensure cwnd grows to twice what was ACKed").
    pub(super) fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        let cwnd = self.cc.cwnd();
        let slow_start = self.cc.ssthresh().is_none_or(|s| cwnd < s);
        slow_start && self.cwnd_segs() < 2 * self.max_packets_out
    }

    /// The next new segment: `(payload, carries FIN)`, if any.
    pub(super) fn next_new_segment(&self) -> Option<(u64, bool)> {
        // A Fast Open server sending in SYN-RECEIVED keeps its FIN for
        // ESTABLISHED (a deviation: Linux may send it from SYN-RECV).
        let fin_ok = self.state != ConnState::SynReceived;
        if self.snd_nxt < self.write_end {
            let len = (self.write_end - self.snd_nxt).min(u64::from(self.cfg.mss));
            // The FIN rides on the last data segment when it is already queued
            // (Linux tcp_send_fin sets it on the tail skb).
            let fin = fin_ok && self.fin_seq == Some(self.snd_nxt + len);
            Some((len, fin))
        } else if fin_ok && self.fin_seq == Some(self.snd_nxt) {
            Some((0, true))
        } else {
            None
        }
    }

    /// May a data segment leave now? If not, arm the pacing timer.
    fn pacer_allows(&mut self, now: Time) -> bool {
        if self.pacing_rate().is_none() {
            return true;
        }
        let at = self.pacer.release_time(now, u64::from(self.cfg.mss));
        if now >= at {
            return true;
        }
        self.pacing_deadline = Some(at);
        false
    }

    pub(super) fn send_new(&mut self, now: Time, len: u32, fin: bool, ctx: &mut EndpointCtx<'_>) {
        let seq = self.snd_nxt;
        let seg_len = u64::from(len) + u64::from(fin);
        let was_empty = self.sb.is_empty();
        let tx = self
            .rate
            .on_send(now, was_empty, self.sb.in_flight() + seg_len);
        self.tx_order += 1;
        let idx = self
            .sb
            .push(SentSeg::new(seq, len, fin, now, self.tx_order, tx));
        self.rack.on_transmit(idx, self.tx_order);
        self.snd_nxt = seq + seg_len;
        // Data a Fast Open SYN carried that the SYN/ACK did not acknowledge
        // is sent again as new data (handshake.rs): a retransmission on the
        // wire and in the counters, a first transmission to the scoreboard.
        let again = self.fastopen_resent_bytes(seq, len);
        if again > 0 {
            self.stats.retransmits += 1;
            self.stats.bytes_retransmitted += again;
        }
        self.emit_data(now, idx, seq, len, fin, again > 0, ctx);
    }

    fn retransmit(&mut self, now: Time, idx: u64, ctx: &mut EndpointCtx<'_>) {
        let reason = if self.sb.get(idx).rto_lost {
            RetransmitReason::Rto
        } else {
            RetransmitReason::Fast
        };
        self.undo_on_retransmit(now);
        self.resend(now, idx, reason, ctx);
        if self.linux_timers() && idx == self.sb.front_idx() {
            // Linux tcp_xmit_retransmit_queue: retransmitting the head
            // restarts the timer (tcp_reset_xmit_timer with icsk_rto).
            self.tlp_deadline = None;
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Send segment `idx` again: a retransmission of a lost segment, or a
    /// tail loss probe (`RetransmitReason::Tlp`: not marked lost, not counted
    /// in `pipe` twice, `tlp.rs`).
    pub(super) fn resend(
        &mut self,
        now: Time,
        idx: u64,
        reason: RetransmitReason,
        ctx: &mut EndpointCtx<'_>,
    ) {
        let s = *self.sb.get(idx);
        let tx = self
            .rate
            .on_send(now, false, self.sb.in_flight() + s.seq_len());
        self.tx_order += 1;
        if reason == RetransmitReason::Tlp {
            self.sb.on_probe(idx, now, self.tx_order, tx);
        } else {
            self.sb.on_retransmit(idx, now, self.tx_order, tx);
        }
        self.rack.on_transmit(idx, self.tx_order);
        self.stats.retransmits += 1;
        self.stats.bytes_retransmitted += u64::from(s.len);
        ctx.tracer.event(
            now,
            TraceEvent::Retransmit {
                flow: self.flow,
                seq: s.seq,
                bytes: s.len,
                reason,
            },
        );
        self.emit_data(now, idx, s.seq, s.len, s.fin, true, ctx);
    }

    /// Put a data (or FIN) segment (scoreboard index `idx`) on the wire and
    /// run the per-send hooks.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_data(
        &mut self,
        now: Time,
        idx: u64,
        seq: u64,
        len: u32,
        fin: bool,
        rtx: bool,
        ctx: &mut EndpointCtx<'_>,
    ) {
        let rate = self.pacing_rate();
        let mut flags = Flags::ACK;
        if fin {
            flags |= Flags::FIN;
        }
        let seg = self.header(now, flags, seq, len, rtx);
        self.stats.data_segments_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        // IP-ECN field from the controller's codepoint (crate::ecn::EcnState::ip_field).
        let kind = if rtx {
            Kind::Retransmit
        } else if len > 0 {
            Kind::NewData
        } else {
            Kind::Control // a bare FIN is not data (Linux tcp_ecn_send)
        };
        let ip = self.ecn.ip_field(kind, self.cc.ecn_codepoint());
        self.sb.set_ecn(idx, ip);
        self.ecn.on_data_sent(ip, len, &mut self.stats);
        self.push_out(seg, ip, ctx);
        let in_flight = self.sb.in_flight();
        let mut c = Self::cc_ctx(self.flow, self.cfg.mss, ctx);
        self.cc
            .on_packet_sent(now, u64::from(len), in_flight, &mut c);
        // Linux tcp_update_skb_after_send: the gap at the rate in force when it left.
        self.pacer.set_rate(now, rate);
        self.pacer.on_sent(now, u64::from(len));
        if let Recovery::Fast { prr: Some(p), .. } = &mut self.recovery {
            p.on_send();
        }
        // RFC 6298 §5.1: "Every time a packet containing data is sent
        // (including a retransmission), if the timer is not running, start it"
        // (a scheduled loss probe stands in for it, `tlp.rs`).
        if self.rto_deadline.is_none() && self.tlp_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// draft-cheng-iccrg-delivery-rate-estimation §3.4 / Linux
    /// `tcp_rate_check_app_limited`, when the send loop ran out of data:
    /// less than a segment unsent, not cwnd-limited, every lost segment retransmitted.
    fn check_app_limited(&mut self) {
        if self.unsent_bytes() < u64::from(self.cfg.mss)
            && self.sb.in_flight_segs() < self.cwnd_segs()
            && self.sb.lost_pending() == 0
        {
            self.rate.mark_app_limited(self.sb.in_flight());
        }
    }

    /// A pure ACK with the current receive state (RFC 9293 §3.10.7.4: SEQ = SND.NXT).
    pub(super) fn send_ack(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        let seg = self.header(now, Flags::ACK, self.snd_nxt, 0, false);
        self.stats.acks_sent += 1;
        let ip = self.ecn.ip_field(Kind::Control, self.cc.ecn_codepoint());
        self.push_out(seg, ip, ctx);
    }

    /// A segment with our current ACK, window, SACK blocks, timestamps and
    /// ECN feedback (ECE/CWR or the ACE field, and the AccECN option on pure
    /// ACKs, which may take the place of SACK blocks); marks the ACK as sent.
    pub(super) fn header(
        &mut self,
        now: Time,
        flags: Flags,
        seq: u64,
        len: u32,
        rtx: bool,
    ) -> Segment {
        let (sack, sack_count) = self.rcv.sack_blocks();
        let pure_ack = len == 0 && !flags.contains(Flags::FIN);
        let flags = self.ecn.header_flags(flags, len > 0 && !rtx, pure_ack);
        // The timestamps option's share of `header_bytes` (IP 20 + TCP 20 + options).
        let ts_bytes = self.cfg.header_bytes.saturating_sub(40);
        let (accecn, sack_count) = self.ecn.option(pure_ack, sack_count, ts_bytes);
        let seg = Segment {
            flags,
            seq,
            len,
            ack: self.rcv.rcv_nxt(),
            wnd: self.rcv.window(),
            sack,
            sack_count,
            ts_val: now,
            ts_ecr: self.rcv.ts_recent(),
            accecn,
            fastopen: None,
            retransmission: rtx,
        };
        self.rcv.on_ack_sent();
        seg
    }

    pub(super) fn push_out(&mut self, seg: Segment, ecn: Ecn, ctx: &mut EndpointCtx<'_>) {
        let wire_len = seg.wire_len(self.cfg.header_bytes);
        self.stats.segments_sent += 1;
        self.stats.wire_bytes_sent += u64::from(wire_len);
        ctx.out.push(Transmit { seg, ecn, wire_len });
    }
}
