//! Opening and closing the connection (RFC 9293 §3.5, §3.6, §3.10.7).

use l4slab_core::trace::RetransmitReason;
use l4slab_core::{Ecn, Time, TraceEvent};

use super::{AppEvent, Endpoint, EndpointCtx, Role, ISS};
use crate::segment::{Flags, Segment};
use crate::state::ConnState;

impl Endpoint {
    pub(super) fn transition_to(&mut self, next: ConnState) {
        assert!(
            self.state.can_become(next),
            "flow {}: illegal transition {} -> {}",
            self.flow,
            self.state.name(),
            next.name()
        );
        self.state = next;
    }

    pub(super) fn establish(&mut self, ctx: &mut EndpointCtx<'_>) {
        self.transition_to(ConnState::Established);
        ctx.events.push(AppEvent::Connected);
        if self.fin_seq.is_some() {
            self.transition_to(ConnState::FinWait1);
        }
    }

    /// Server in LISTEN: a SYN arrived (RFC 9293 §3.10.7.2) with IP-ECN `ip`.
    pub(super) fn on_syn(&mut self, now: Time, seg: &Segment, ip: Ecn, ctx: &mut EndpointCtx<'_>) {
        let cp = self.cc.ecn_codepoint();
        self.ecn.on_syn(seg.flags, ip, cp, &mut self.stats);
        self.rcv.on_syn(seg.seq, seg.ts_val);
        self.snd_wnd = seg.wnd;
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = ISS;
        self.transition_to(ConnState::SynReceived);
        self.snd_una = ISS;
        self.snd_nxt = ISS + 1;
        self.send_syn(now, false, ctx);
    }

    /// Client in SYN-SENT: the SYN/ACK arrived (RFC 9293 §3.10.7.3) with
    /// IP-ECN `ip`.
    pub(super) fn on_syn_ack(
        &mut self,
        now: Time,
        seg: &Segment,
        ip: Ecn,
        ctx: &mut EndpointCtx<'_>,
    ) {
        let cp = self.cc.ecn_codepoint();
        self.ecn.on_syn_ack(seg.flags, ip, cp, &mut self.stats);
        self.rcv.on_syn(seg.seq, seg.ts_val);
        self.snd_una = seg.ack;
        self.snd_wnd = seg.wnd;
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = seg.ack;
        // RFC 7323 §4.2: the SYN's timestamp echo is a valid sample even if the
        // SYN was retransmitted (Linux takes it too, tcp_ack_update_rtt).
        self.take_rtt_sample(now, seg.ts_ecr, ctx);
        self.rto_deadline = None; // RFC 6298 §5.2: all data acknowledged
        self.establish(ctx);
        // RFC 9293 §3.10.7.3: "form an ACK segment ... and send it" at once.
        self.send_ack(now, ctx);
    }

    /// A segment in a synchronized state (RFC 9293 §3.10.7.4).
    pub(super) fn on_synchronized(&mut self, now: Time, seg: &Segment, ctx: &mut EndpointCtx<'_>) {
        self.rcv.update_ts_recent(seg.seq, seg.ts_val);
        if seg.flags.contains(Flags::SYN) {
            // A retransmitted SYN or SYN/ACK: our ACK was lost. RFC 9293
            // §3.10.7.4 / RFC 5961 §4: answer with an ACK.
            self.rcv.request_ack();
            return;
        }
        if seg.flags.contains(Flags::ACK) {
            self.on_ack(now, seg, ctx);
        }
        let fin = seg.flags.contains(Flags::FIN);
        if seg.len > 0 || fin {
            let out = self.rcv.on_data(now, seg.seq, seg.len, fin);
            if out.delivered > 0 {
                self.stats.bytes_delivered += out.delivered;
                ctx.events.push(AppEvent::Delivered {
                    bytes: out.delivered,
                });
            }
            if out.fin_reached {
                ctx.events.push(AppEvent::PeerFinished);
                // RFC 9293 §3.10.7.4 eighth step: the FIN's state changes.
                match self.state {
                    ConnState::Established => self.transition_to(ConnState::CloseWait),
                    ConnState::FinWait1 => self.transition_to(ConnState::Closing),
                    ConnState::FinWait2 => self.transition_to(ConnState::TimeWait),
                    s => unreachable!("FIN reached in {}", s.name()),
                }
            }
        }
    }

    /// Our FIN was acknowledged (RFC 9293 §3.10.7.4 fifth step).
    pub(super) fn on_fin_acked(&mut self) {
        match self.state {
            ConnState::FinWait1 => self.transition_to(ConnState::FinWait2),
            ConnState::Closing => self.transition_to(ConnState::TimeWait),
            ConnState::LastAck => self.transition_to(ConnState::Closed),
            _ => {}
        }
    }

    /// SYN (client) or SYN/ACK (server), first or again.
    pub(super) fn send_syn(&mut self, now: Time, retransmission: bool, ctx: &mut EndpointCtx<'_>) {
        let server = self.role == Role::Server;
        // ECN-setup flags and IP-ECN field: RFC 3168 §6.1.1, RFC 9768 §3.1
        // (crate::ecn, with the SYN fallback of RFC 3168 §6.1.1.1).
        let cp = self.cc.ecn_codepoint();
        let (ecn_flags, ip) = if server {
            self.ecn.syn_ack(cp, &mut self.stats)
        } else {
            self.ecn.syn(retransmission, cp)
        };
        let flags = if server {
            Flags::SYN | Flags::ACK | ecn_flags
        } else {
            Flags::SYN | ecn_flags
        };
        let seg = Segment {
            flags,
            seq: ISS,
            len: 0,
            ack: if server { self.rcv.rcv_nxt() } else { 0 },
            wnd: self.rcv.window(),
            ts_val: now,
            ts_ecr: if server {
                self.rcv.ts_recent()
            } else {
                Time::ZERO
            },
            retransmission,
            ..Segment::default()
        };
        if server {
            self.rcv.on_ack_sent();
        }
        if retransmission {
            self.stats.retransmits += 1;
            ctx.tracer.event(
                now,
                TraceEvent::Retransmit {
                    flow: self.flow,
                    seq: ISS,
                    bytes: 0,
                    reason: RetransmitReason::Rto,
                },
            );
        }
        self.push_out(seg, ip, ctx);
        // RFC 6298 §5.1 (the SYN is retransmitted on the same timer; Linux
        // TCP_TIMEOUT_INIT = 1 s before any sample).
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }
}
