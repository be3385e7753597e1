//! Opening and closing the connection (RFC 9293 §3.5, §3.6, §3.10.7), with
//! TCP Fast Open (RFC 7413 §4.2; the option, cookie and cache are in
//! `crate::fastopen`).
//!
//! Fast Open, as Linux runs it with `TCP_FASTOPEN_CONNECT` on the client and
//! `TCP_FASTOPEN` on the listener:
//! * **Cookie request** (RFC 7413 §4.2.1): a client without a cached cookie
//!   connects as usual, its SYN carrying an empty option; a server with
//!   Fast Open answers with a cookie in the SYN/ACK, which the client caches
//!   for its next connections to that host (§4.1.3).
//! * **SYN data** (§4.2.2): a client with a cookie returns from `connect`
//!   at once (`Connected` to the app) and sends its SYN with the first
//!   write: the cookie and up to `fastopen::syn_data_space` bytes of that
//!   write (Linux `tcp_fastopen_defer_connect`, `tcp_send_syn_data`). A
//!   server that finds the cookie valid takes the data at once (`Connected`,
//!   then `Delivered`, before the handshake completes), acknowledges it in
//!   the SYN/ACK and may send its answer right behind the SYN/ACK, within
//!   its congestion window (`tcp_try_fastopen`, `tcp_fastopen_create_child`).
//! * **Fallback** (§4.2.2): an invalid cookie (the SYN/ACK carries a valid
//!   one), a server without Fast Open, or a lost SYN (retransmitted SYNs
//!   carry neither option nor data, Linux: "Exclude Fast Open option for SYN
//!   retries") — the SYN/ACK acknowledges only the SYN, and the client sends
//!   the data again after the handshake (`tcp_rcv_fastopen_synack`).
//!
//! Deviations: a deferred SYN leaves at the end of the instant of `connect`
//! if the app has not written by then (Linux waits for the write); the SYN's
//! data, like the SYN, is not in the scoreboard (the controller and the
//! delivery-rate estimator do not see it; Linux acknowledges it through
//! `tcp_ack`), and data sent again after the handshake is new to the
//! scoreboard (Linux marks it lost and retransmits it,
//! `tcp_non_congestion_loss_retransmit`), so the controller sees no loss
//! either way; a Fast Open server's FIN waits for ESTABLISHED.

use l4slab_core::trace::RetransmitReason;
use l4slab_core::{Ecn, Time, TraceEvent};

use super::{AppEvent, Endpoint, EndpointCtx, Role, ISS};
use crate::fastopen::{self, FastOpen, FastOpenOption, FastOpenOutcome};
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
        if matches!(self.tfo, FastOpen::Offer { .. } | FastOpen::Accepted) {
            self.tfo.transition(FastOpen::Done {
                resend_until: ISS + 1,
            });
        }
        self.report_connected(ctx);
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
        self.fastopen_on_syn(now, seg, ctx);
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
        let resend = self.fastopen_on_syn_ack(seg, ctx);
        self.snd_una = seg.ack;
        // RFC 7413 §4.2.2 / Linux tcp_rcv_fastopen_synack: SYN data the
        // SYN/ACK does not acknowledge goes back to the write queue, to be
        // sent again after the handshake; the sequence numbers stay its own.
        self.snd_nxt = seg.ack;
        self.stats.bytes_acked = self.snd_una.min(self.write_end).saturating_sub(ISS + 1);
        self.snd_wnd = seg.wnd;
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = seg.ack;
        // RFC 7323 §4.2: the SYN's timestamp echo is a valid sample even if the
        // SYN was retransmitted (Linux takes it too, tcp_ack_update_rtt).
        self.take_rtt_sample(now, seg.ts_ecr, ctx);
        self.rto_deadline = None; // RFC 6298 §5.2: all data acknowledged
        self.establish(ctx);
        // RFC 9293 §3.10.7.3: "form an ACK segment ... and send it" at once —
        // unless SYN data goes again now: it carries the ACK (Linux returns
        // from tcp_rcv_synsent_state_process before tcp_send_ack).
        if !resend {
            self.send_ack(now, ctx);
        }
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
        let (fastopen, len) = self.syn_fastopen(retransmission);
        if len > 0 {
            // RFC 7413 §4.2.2: the data follows the SYN in sequence space.
            self.snd_nxt = ISS + 1 + u64::from(len);
            self.stats.data_segments_sent += 1;
            self.stats.bytes_sent += u64::from(len);
            self.stats.syn_data_bytes_sent += u64::from(len);
        }
        let seg = Segment {
            flags,
            seq: ISS,
            len,
            ack: if server { self.rcv.rcv_nxt() } else { 0 },
            wnd: self.rcv.window(),
            ts_val: now,
            ts_ecr: if server {
                self.rcv.ts_recent()
            } else {
                Time::ZERO
            },
            fastopen,
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

    // ----- TCP Fast Open (RFC 7413) ---------------------------------------------

    /// Tell the app `Connected` once: at the end of the handshake, or
    /// earlier with Fast Open (a deferred `connect`, an accepted SYN).
    fn report_connected(&mut self, ctx: &mut EndpointCtx<'_>) {
        if !self.connected_reported {
            self.connected_reported = true;
            ctx.events.push(AppEvent::Connected);
        }
    }

    /// Client `connect` with Fast Open on (Linux `tcp_fastopen_defer_connect`
    /// → `tcp_fastopen_cookie_check` → `tcp_fastopen_cache_get`): with a
    /// cached cookie, defer the SYN to the first write and report
    /// `Connected` now (returns true); without one, the SYN will ask for a
    /// cookie (RFC 7413 §4.2.1).
    pub(super) fn fastopen_defer_connect(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) -> bool {
        if !self.cfg.fastopen {
            return false;
        }
        match ctx.fastopen.as_deref().and_then(|c| c.cookie()) {
            Some(cookie) => {
                // Deviation: Linux waits for the write however long it takes;
                // here the SYN leaves at the end of this instant (a timer due
                // now, which the driver runs after the app's callbacks).
                self.tfo
                    .transition(FastOpen::Deferred { cookie, until: now });
                self.report_connected(ctx);
                true
            }
            None => {
                self.tfo.transition(FastOpen::SynSent {
                    option: FastOpenOption::Request,
                    data: 0,
                });
                self.stats.fastopen = FastOpenOutcome::CookieRequested;
                false
            }
        }
    }

    /// When a deferred Fast Open SYN must leave, if one is waiting.
    pub(super) fn fastopen_deadline(&self) -> Option<Time> {
        match self.tfo {
            FastOpen::Deferred { until, .. } => Some(until),
            _ => None,
        }
    }

    /// A Fast Open server whose SYN's cookie was valid may send in
    /// SYN-RECEIVED (RFC 7413 §4.2.2: "may send the response data before the
    /// handshake finishes"; Linux `tcp_try_fastopen`: "Data-less SYN with
    /// valid cookie is allowed to send data in SYN_RECV state").
    pub(super) fn fastopen_may_send(&self) -> bool {
        self.state == ConnState::SynReceived && self.tfo == FastOpen::Accepted
    }

    /// Of a new segment `[seq, seq + len)`, the bytes a Fast Open SYN already
    /// carried without their being acknowledged.
    pub(super) fn fastopen_resent_bytes(&self, seq: u64, len: u32) -> u64 {
        match self.tfo {
            FastOpen::Done { resend_until } => {
                (seq + u64::from(len)).min(resend_until).saturating_sub(seq)
            }
            _ => 0,
        }
    }

    /// The Fast Open option and the payload of the SYN or SYN/ACK about to
    /// leave. Retransmissions carry neither (Linux `tcp_send_syn_data`:
    /// "Exclude Fast Open option for SYN retries"; `tcp_rtx_synack` without
    /// the cookie).
    fn syn_fastopen(&mut self, retransmission: bool) -> (Option<FastOpenOption>, u32) {
        if retransmission {
            return (None, 0);
        }
        match self.tfo {
            FastOpen::Deferred { cookie, .. } => {
                // Linux tcp_send_syn_data: "space = __tcp_mtu_to_mss(sk, pmtu) -
                // MAX_TCP_OPTION_SPACE; space = min_t(size_t, space, fo->size)":
                // at most the room, at most what was written.
                let room = fastopen::syn_data_space(self.cfg.mss, self.cfg.header_bytes);
                let data = (self.write_end - (ISS + 1)).min(room) as u32;
                let option = FastOpenOption::Cookie(cookie);
                self.tfo.transition(FastOpen::SynSent { option, data });
                (Some(option), data)
            }
            FastOpen::SynSent { option, .. } if self.role == Role::Client => (Some(option), 0),
            FastOpen::Offer { cookie } => (Some(FastOpenOption::Cookie(cookie)), 0),
            _ => (None, 0),
        }
    }

    /// Server in LISTEN: the Fast Open option of the SYN `seg` (RFC 7413
    /// §4.1.2, §4.2; Linux `tcp_try_fastopen`). After `rcv.on_syn`, before
    /// the SYN/ACK.
    fn fastopen_on_syn(&mut self, now: Time, seg: &Segment, ctx: &mut EndpointCtx<'_>) {
        // A server without Fast Open ignores the option (Linux: no
        // TFO_SERVER_ENABLE): the SYN/ACK acknowledges the SYN only.
        let Some(option) = seg.fastopen.filter(|_| self.cfg.fastopen) else {
            return;
        };
        let Some(valid) = ctx.fastopen.as_deref().map(|c| c.issued()) else {
            return;
        };
        match option {
            FastOpenOption::Request => {
                // RFC 7413 §4.2.1 step 2 / Linux tcp_fastopen_cookie_gen.
                self.tfo.transition(FastOpen::Offer { cookie: valid });
                self.stats.fastopen = FastOpenOutcome::CookieIssued;
            }
            FastOpenOption::Cookie(c) if c == valid => {
                // RFC 7413 §4.2.2 step 2(a): "the server sends a SYN-ACK
                // acknowledging both the SYN and the data. The server then
                // delivers the data to the application" — Linux
                // tcp_fastopen_create_child: accept() returns the child now,
                // tcp_fastopen_add_skb queues the data.
                self.tfo.transition(FastOpen::Accepted);
                self.stats.fastopen = FastOpenOutcome::Accepted;
                self.report_connected(ctx);
                if seg.len > 0 {
                    let out = self.rcv.on_data(now, seg.seq + 1, seg.len, false);
                    if out.delivered > 0 {
                        self.stats.bytes_delivered += out.delivered;
                        ctx.events.push(AppEvent::Delivered {
                            bytes: out.delivered,
                        });
                    }
                }
            }
            FastOpenOption::Cookie(_) => {
                // RFC 7413 §4.2.2 step 2(b): the data is dropped, the SYN/ACK
                // acknowledges the SYN only and carries a valid cookie (Linux
                // tcp_fastopen_cookie_gen_check fails: TCPFastOpenPassiveFail).
                self.tfo.transition(FastOpen::Offer { cookie: valid });
                self.stats.fastopen = FastOpenOutcome::Rejected;
            }
        }
    }

    /// Client in SYN-SENT: the Fast Open side of the SYN/ACK `seg` (Linux
    /// `tcp_rcv_fastopen_synack`). Caches a cookie it brings (RFC 7413
    /// §4.1.3, `tcp_fastopen_cache_set`: only a cookie replaces the cached
    /// one; one from a server we did not ask is ignored). Returns whether
    /// SYN data was left unacknowledged, to be sent again now.
    fn fastopen_on_syn_ack(&mut self, seg: &Segment, ctx: &mut EndpointCtx<'_>) -> bool {
        let FastOpen::SynSent { option, data } = self.tfo else {
            return false;
        };
        let new_cookie = match seg.fastopen {
            Some(FastOpenOption::Cookie(c)) => Some(c),
            _ => None,
        };
        if let (Some(c), Some(cache)) = (new_cookie, ctx.fastopen.as_deref_mut()) {
            cache.set_cookie(Some(c));
        }
        let sent_until = ISS + 1 + u64::from(data);
        let resend = seg.ack < sent_until;
        self.stats.fastopen = match option {
            FastOpenOption::Request if new_cookie.is_some() => FastOpenOutcome::CookieReceived,
            FastOpenOption::Request => FastOpenOutcome::CookieRequested,
            // A data-less cookie SYN: a fresh cookie back means it was not valid.
            FastOpenOption::Cookie(_) if resend || new_cookie.is_some() => {
                FastOpenOutcome::SynDataNotAcked
            }
            FastOpenOption::Cookie(_) => FastOpenOutcome::SynDataAcked,
        };
        self.tfo.transition(FastOpen::Done {
            resend_until: sent_until,
        });
        resend
    }
}
