//! What to send next: RFC 6675 §4 `NextSeg` rule 1 (the lowest lost segment)
//! before rule 2 (new data), each only while `pipe + segment <= cwnd`
//! (RFC 6675 §5 (C); Linux `tcp_cwnd_test` counts whole packets the same
//! way), new data only inside the peer's window (RFC 9293 §3.8.6.2.1), and
//! only when the pacer releases it.
//!
//! Deviations: rules 3 and 4 of `NextSeg` (the rescue retransmission) are
//! not implemented (Linux has neither). The cwnd test uses `pipe` in every
//! state, as Linux does (RFC 5681 outside recovery uses FlightSize). With
//! nothing outstanding, one segment may exceed the peer's window: it stands
//! in for the zero-window probe (RFC 9293 §3.8.6.1), which the model never
//! needs because its receiver's window only closes over out-of-order data,
//! but it guarantees progress.

use l4slab_core::{Ecn, RetransmitReason, Time, TraceEvent};

use super::{Endpoint, EndpointCtx};
use crate::scoreboard::SentSeg;
use crate::segment::Flags;

/// Why the send loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Nothing left to send.
    NoData,
    /// Congestion window, receive window or pacing.
    Limited,
}

impl Endpoint {
    /// Send everything the windows and the pacer allow now.
    pub(super) fn try_send(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        self.pacing_deadline = None;
        if !self.state.may_send_data() {
            return;
        }
        let stop = loop {
            let in_flight = self.sb.in_flight();
            let cwnd = self.cc.cwnd();
            let forced = self.force_retransmit;
            // RFC 6675 §4 NextSeg rule 1: the lowest un-SACKed lost segment.
            if let Some(idx) = self.sb.next_retransmit() {
                let s = *self.sb.get(idx);
                if !forced {
                    // Linux tcp_retransmit_skb: not beyond the receive window,
                    // unless it is the first unacknowledged segment.
                    let in_rwnd = s.seq < self.snd_una + self.snd_wnd || s.seq == self.snd_una;
                    let cwnd_ok = in_flight == 0 || in_flight + s.seq_len() <= cwnd;
                    if !in_rwnd || !cwnd_ok || !self.pacer_allows(now) {
                        break Stop::Limited;
                    }
                }
                self.force_retransmit = false;
                self.retransmit(now, idx, ctx);
                continue;
            }
            self.force_retransmit = false;
            // RFC 6675 §4 NextSeg rule 2: new data.
            let Some((len, fin)) = self.next_new_segment() else {
                break Stop::NoData;
            };
            let seq_len = len + u64::from(fin);
            // RFC 9293 §3.8.6.2.1: never beyond SND.UNA + SND.WND (see the
            // module documentation for the one-segment exception).
            let in_rwnd = self.snd_nxt + len <= self.snd_una + self.snd_wnd || self.sb.is_empty();
            // RFC 6675 §5 (C) "cwnd - pipe >= 1 SMSS", for this segment's size;
            // with nothing in flight one segment always goes.
            let cwnd_ok = in_flight == 0 || in_flight + seq_len <= cwnd;
            if !in_rwnd || !cwnd_ok || !self.pacer_allows(now) {
                break Stop::Limited;
            }
            self.send_new(now, len as u32, fin, ctx);
        };
        if stop == Stop::NoData {
            self.check_app_limited();
        }
    }

    /// The next new segment: `(payload, carries FIN)`, if any.
    fn next_new_segment(&self) -> Option<(u64, bool)> {
        if self.snd_nxt < self.write_end {
            let len = (self.write_end - self.snd_nxt).min(u64::from(self.cfg.mss));
            // The FIN rides on the last data segment when it is already queued
            // (Linux tcp_send_fin sets it on the tail skb).
            let fin = self.fin_seq == Some(self.snd_nxt + len);
            Some((len, fin))
        } else if self.fin_seq == Some(self.snd_nxt) {
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
        let at = self.pacer.release_time();
        if now >= at {
            return true;
        }
        self.pacing_deadline = Some(at);
        false
    }

    fn send_new(&mut self, now: Time, len: u32, fin: bool, ctx: &mut EndpointCtx<'_>) {
        let seq = self.snd_nxt;
        let seg_len = u64::from(len) + u64::from(fin);
        let was_empty = self.sb.is_empty();
        let tx = self
            .rate
            .on_send(now, was_empty, self.sb.in_flight() + seg_len);
        let idx = self.sb.push(SentSeg::new(seq, len, fin, now, tx));
        self.rack.on_transmit(idx, now);
        self.snd_nxt = seq + seg_len;
        self.emit_data(now, seq, len, fin, false, ctx);
    }

    fn retransmit(&mut self, now: Time, idx: u64, ctx: &mut EndpointCtx<'_>) {
        let s = *self.sb.get(idx);
        let tx = self
            .rate
            .on_send(now, false, self.sb.in_flight() + s.seq_len());
        self.sb.on_retransmit(idx, now, tx);
        self.rack.on_transmit(idx, now);
        self.stats.retransmits += 1;
        self.stats.bytes_retransmitted += u64::from(s.len);
        let reason = if s.rto_lost {
            RetransmitReason::Rto
        } else {
            RetransmitReason::Fast
        };
        ctx.tracer.event(
            now,
            TraceEvent::Retransmit {
                flow: self.flow,
                seq: s.seq,
                bytes: s.len,
                reason,
            },
        );
        self.emit_data(now, s.seq, s.len, s.fin, true, ctx);
    }

    /// Put a data (or FIN) segment on the wire and run the per-send hooks.
    fn emit_data(
        &mut self,
        now: Time,
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
        // EcnMode::Off: data is Not-ECT.
        self.push_out(seg, Ecn::NotEct, ctx);
        let in_flight = self.sb.in_flight();
        let mut c = Self::cc_ctx(self.flow, self.cfg.mss, ctx);
        self.cc
            .on_packet_sent(now, u64::from(len), in_flight, &mut c);
        self.pacer.on_send(now, len, rate);
        // RFC 6298 §5.1: "Every time a packet containing data is sent
        // (including a retransmission), if the timer is not running, start it".
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// draft-cheng-iccrg-delivery-rate-estimation §3.4 / Linux
    /// `tcp_rate_check_app_limited`, when the send loop ran out of data:
    /// less than a segment unsent, not cwnd-limited, every lost segment retransmitted.
    fn check_app_limited(&mut self) {
        let in_flight = self.sb.in_flight();
        if self.unsent_bytes() < u64::from(self.cfg.mss)
            && in_flight < self.cc.cwnd()
            && self.sb.lost_pending() == 0
        {
            self.rate.mark_app_limited(in_flight);
        }
    }
}
