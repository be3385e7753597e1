//! Building datagrams: which spaces have something to send, coalescing
//! (RFC 9000 §12.2), client Initial padding (§14.1), the anti-amplification
//! limit (§8.1), the congestion window and pacing (RFC 9002 §7), and the
//! frames of one packet. STREAM frames carry zero bytes of the written
//! length (content is not simulated); no allocation per packet.

use std::cmp::Reverse;
use std::net::SocketAddr;

use l4slab_core::{Ecn, Time};

use super::handshake::HandshakeState;
use super::schedule::{owes_control, RrState};
use super::spaces::{ctrl, Chunk, SentPacket, SentState, MAX_CHUNKS};
use super::streams::{SendChunk, Stream};
use super::{Connection, Role, ZeroRtt, CID_LEN};
use crate::wire::{
    encode_packet_number, varint_len, CloseKind, ConnectionClose, Frame, Header, LongHeader,
    LongType, PacketBuilder, PnSpace, ShortHeader, StreamDir, StreamFrame, MIN_INITIAL_DATAGRAM,
};

/// Zero bytes for STREAM and CRYPTO frame payloads (content is not simulated).
static ZEROS: [u8; 16384] = [0; 16384];

/// The smallest room worth starting a packet in.
const MIN_PACKET_ROOM: usize = 64;

/// What one pick of the round-robin gave.
enum Step {
    Sent(SendChunk),
    /// Nothing to send after all; try the next stream.
    Skip,
    /// The packet is full.
    Stop,
}

const SPACES: [PnSpace; 3] = [
    PnSpace::Initial,
    PnSpace::Handshake,
    PnSpace::ApplicationData,
];

impl Connection {
    /// Whether an ack-eliciting packet may go now in space `sp` (window and,
    /// for Application Data, the pacer); probes are exempt (§6.2.4... §7.5).
    fn congestion_allows(&mut self, now: Time, sp: usize) -> bool {
        if self.spaces[sp].probes > 0 {
            return true;
        }
        // RFC 9002 §7: "does not send packets if it would cause bytes_in_flight
        // ... to be larger than the congestion window" (one packet may overshoot).
        if self.bytes_in_flight() >= self.cwnd() {
            self.cwnd_limited = true;
            return false;
        }
        if sp == 2 && self.rtt.has_sample() {
            let t = self.pacer.release_time(now, self.mds());
            if t > now {
                self.pacing_wakeup = Some(t);
                // RFC 9002 §7.8: the window is underutilized "when bytes in
                // flight is smaller than the congestion window and sending is
                // not pacing limited": a packet the window allows but the
                // pacer holds back uses the window, so it may grow — while
                // at least half of it is in flight, Linux's bound on a window
                // that is not filled (tcp_is_cwnd_limited: cwnd < 2 *
                // max_packets_out), so that it cannot inflate far past what
                // the sender puts on the path.
                if self.bytes_in_flight() * 2 >= self.cwnd() {
                    self.cwnd_limited = true;
                }
                return false;
            }
        }
        true
    }

    fn app_has_data(&mut self) -> bool {
        if !self.can_send_app_data() {
            return false;
        }
        // A stream with a STREAM frame it may send, or a control frame it owes.
        self.sched_next().is_some()
            || self.sched_owes_control()
            || self.handshake_done_pending
            || self.new_token_pending && self.role == Role::Server
            || self.conn_window.update_pending
            || self.max_streams_pending
    }

    /// Ack-eliciting content waits in `sp`.
    fn has_ack_eliciting(&mut self, sp: usize) -> bool {
        let s = &self.spaces[sp];
        s.probes > 0 || s.crypto_pending() || (sp == 2 && self.app_has_data())
    }

    /// Space `sp` wants a packet in this datagram.
    fn wants(&mut self, now: Time, sp: usize) -> bool {
        if !self.can_send_in(sp) {
            return false;
        }
        if self.spaces[sp].rx.ack_due(now) {
            return true;
        }
        self.has_ack_eliciting(sp) && self.congestion_allows(now, sp)
    }

    pub(super) fn transmit(
        &mut self,
        now: Time,
        buf: &mut [u8],
    ) -> Option<(usize, SocketAddr, Ecn)> {
        if self.done {
            return None;
        }
        let to = self.peer_addr?;
        let mut limit = buf.len().min(self.cfg.max_datagram_size);
        if self.role == Role::Server {
            limit = limit.min(self.amplification_budget());
        }
        if self.close.is_some() {
            return self.transmit_close(buf, limit, to);
        }
        if self.sched_params != self.peer_params {
            // The peer's transport parameters raised every credit.
            self.sched_params = self.peer_params;
            self.sched_touch_all();
        }
        if limit < MIN_PACKET_ROOM {
            return None;
        }
        let ecn = self.ecn.next_codepoint();
        let wants = [self.wants(now, 0), self.wants(now, 1), self.wants(now, 2)];
        let mut pos = 0;
        let mut spaces_sent = [false; 3];
        let mut ack_eliciting_initial = false;
        for sp in 0..3 {
            if !wants[sp] || limit - pos < MIN_PACKET_ROOM {
                continue;
            }
            let last = !wants[sp + 1..].iter().any(|&w| w);
            // §14.1: datagrams with an ack-eliciting Initial are padded to 1200
            // bytes (the client: all its Initial datagrams). Pad the last packet.
            let pad_to = (self.role == Role::Client && sp == 0 || last)
                .then(|| MIN_INITIAL_DATAGRAM.saturating_sub(pos).min(limit - pos));
            let (n, eliciting) = self.build_packet(
                now,
                sp,
                &mut buf[pos..limit],
                ecn,
                pad_to,
                ack_eliciting_initial,
            );
            if n > 0 {
                spaces_sent[sp] = true;
                ack_eliciting_initial |= sp == 0 && eliciting;
                pos += n;
                if sp == 1 && self.role == Role::Client {
                    // RFC 9001 §4.9.1: "a client MUST discard Initial keys when
                    // it first sends a Handshake packet".
                    self.discard_space(PnSpace::Initial);
                }
            }
            if self.role == Role::Client && sp == 0 && n > 0 {
                break; // the padded Initial fills the datagram
            }
        }
        if pos == 0 {
            if wants[2] || self.can_send_app_data() && !self.app_has_data() {
                self.rate.mark_app_limited(self.bytes_in_flight());
            }
            return None;
        }
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += pos as u64;
        if !self.address_validated {
            self.amp_sent += pos as u64;
            self.stats.unvalidated_sent += pos as u64;
        }
        if ecn != Ecn::NotEct {
            for (sp, sent) in spaces_sent.iter().enumerate() {
                if *sent {
                    self.ecn.on_sent(SPACES[sp], ecn);
                }
            }
            self.ecn.on_datagram_marked();
            match ecn {
                Ecn::Ect0 => self.stats.ect0_sent += 1,
                Ecn::Ect1 => self.stats.ect1_sent += 1,
                _ => {}
            }
        }
        Some((pos, to, ecn))
    }

    fn header<'a>(&'a self, sp: usize, pn: crate::wire::TruncatedPn) -> Header<'a> {
        let dcid: &[u8] = &self.peer_cid;
        let scid: &[u8] = &self.local_cid;
        match sp {
            0 => Header::Long(LongHeader {
                // §17.2.5.2: after a Retry, "the client MUST include the token"
                // in every Initial it sends (empty before and without one).
                ty: LongType::Initial {
                    token: &self.retry_token,
                },
                dcid,
                scid,
                pn,
            }),
            1 => Header::Long(LongHeader {
                ty: LongType::Handshake,
                dcid,
                scid,
                pn,
            }),
            _ if self.role == Role::Client && !self.has_one_rtt_keys() => {
                Header::Long(LongHeader {
                    ty: LongType::ZeroRtt,
                    dcid,
                    scid,
                    pn,
                })
            }
            _ => Header::Short(ShortHeader {
                dcid,
                spin: false,
                pn,
            }),
        }
    }

    /// One packet in space `sp`; returns its size (0: nothing went) and
    /// whether it is ack-eliciting.
    fn build_packet(
        &mut self,
        now: Time,
        sp: usize,
        buf: &mut [u8],
        ecn: Ecn,
        pad_to: Option<usize>,
        pad_anyway: bool,
    ) -> (usize, bool) {
        let pn = self.spaces[sp].next_pn;
        let Ok(tpn) = encode_packet_number(pn, self.spaces[sp].largest_acked) else {
            return (0, false);
        };
        let zero_rtt = sp == 2 && self.role == Role::Client && !self.is_established();
        let header = self.header(sp, tpn);
        let Ok(mut b) = PacketBuilder::new(buf, &header) else {
            return (0, false);
        };
        let mut ack_sent = false;
        if self.spaces[sp].rx.has_pending() && !zero_rtt {
            if let Some(ack) = self.spaces[sp].rx.frame(now, sp == 2) {
                ack_sent = b.push(&Frame::Ack(ack)).is_ok();
            }
        }
        let mut chunks = [Chunk::None; MAX_CHUNKS];
        let mut nch = 0;
        let mut ctrl_bits = 0u8;
        let mut eliciting = false;
        let mut stream_bytes = 0u64;
        let mut retx_bytes = 0u64;
        let may_elicit = self.has_ack_eliciting(sp) && self.congestion_allows(now, sp);
        if may_elicit {
            // CRYPTO (Initial, Handshake).
            while sp < 2 && nch < MAX_CHUNKS && b.remaining() > 16 {
                let room = (b.remaining() - 1 - 8 - 2) as u64;
                let Some(c) = self.spaces[sp].crypto_send.next_chunk(room, u64::MAX) else {
                    break;
                };
                let s = &self.spaces[sp];
                let data = &s.crypto_out[c.offset as usize..(c.offset + c.len) as usize];
                if b.push(&Frame::Crypto {
                    offset: c.offset,
                    data,
                })
                .is_err()
                {
                    self.spaces[sp].crypto_send.on_lost(c.offset, c.len, false);
                    break;
                }
                if !c.new {
                    retx_bytes += c.len;
                }
                chunks[nch] = Chunk::Crypto {
                    offset: c.offset,
                    len: c.len as u32,
                };
                nch += 1;
                eliciting = true;
            }
            if sp == 2 {
                self.push_app_control(&mut b, &mut chunks, &mut nch, &mut ctrl_bits, zero_rtt);
                eliciting |= ctrl_bits != 0 || nch > 0;
                if self.can_send_app_data() {
                    let (sb, rb, e) = self.push_stream_frames(&mut b, &mut chunks, &mut nch);
                    stream_bytes += sb;
                    retx_bytes += rb;
                    eliciting |= e;
                }
            }
            if self.spaces[sp].probes > 0 && !eliciting && b.push(&Frame::Ping).is_ok() {
                ctrl_bits |= ctrl::PING;
                eliciting = true;
            }
        }
        if !eliciting && !ack_sent {
            return (0, false);
        }
        if let Some(target) = pad_to {
            if eliciting && (sp == 0 || pad_anyway) {
                let _ = b.pad_to(target);
            }
        }
        let Ok(size) = b.finish() else {
            return (0, false);
        };
        // Bookkeeping.
        let space = &mut self.spaces[sp];
        space.next_pn += 1;
        if ack_sent {
            space.rx.on_ack_sent();
        }
        if eliciting && space.probes > 0 {
            space.probes -= 1;
        }
        let in_flight_before = self.bytes_in_flight();
        // draft-cheng-iccrg-delivery-rate-estimation §3.2, at every packet sent.
        let rate = self
            .rate
            .on_send(now, in_flight_before == 0, in_flight_before + size as u64);
        let p = SentPacket {
            pn,
            time_sent: now,
            size: size as u32,
            ack_eliciting: eliciting,
            in_flight: eliciting,
            state: SentState::Outstanding,
            ecn,
            zero_rtt,
            chunks,
            ctrl: ctrl_bits,
            rate,
        };
        self.spaces[sp].push_sent(p);
        self.stats.packets_sent += 1;
        self.stats.stream_bytes_sent += stream_bytes;
        self.stats.retransmitted_bytes += retx_bytes;
        if zero_rtt {
            self.stats.zero_rtt_bytes_sent += stream_bytes;
        }
        if eliciting {
            let in_flight = self.bytes_in_flight();
            let mut ctx = l4slab_cc::CcCtx {
                flow: 0,
                mss: self.mds(),
                rng: &mut self.rng,
                tracer: &mut self.tracer,
            };
            self.cc
                .on_packet_sent(now, size as u64, in_flight, &mut ctx);
            if sp == 2 {
                self.pacer.on_sent(now, size as u64);
            }
            // §10.1: "restart its idle timer when sending an ack-eliciting
            // packet if no other ack-eliciting packets have been sent since
            // last receiving and processing a packet".
            if self.idle_restart_on_send {
                self.idle_restart_on_send = false;
                self.idle_deadline = now + self.idle_timeout();
            }
        }
        (size, eliciting)
    }

    fn push_app_control(
        &mut self,
        b: &mut PacketBuilder<'_>,
        chunks: &mut [Chunk; MAX_CHUNKS],
        nch: &mut usize,
        bits: &mut u8,
        zero_rtt: bool,
    ) {
        if !zero_rtt {
            if self.handshake_done_pending
                && self.role == Role::Server
                && b.push(&Frame::HandshakeDone).is_ok()
            {
                self.handshake_done_pending = false;
                *bits |= ctrl::HANDSHAKE_DONE;
            }
            if self.new_token_pending
                && self.role == Role::Server
                && self.state.get() == HandshakeState::Confirmed
            {
                let t = self.issued_ticket().encode();
                if b.push(&Frame::NewToken { token: &t }).is_ok() {
                    self.new_token_pending = false;
                    *bits |= ctrl::NEW_TOKEN;
                }
            }
        }
        if self.conn_window.update_pending && b.push(&Frame::MaxData(self.conn_window.max)).is_ok()
        {
            self.conn_window.update_pending = false;
            *bits |= ctrl::MAX_DATA;
        }
        if self.max_streams_pending
            && b.push(&Frame::MaxStreams {
                dir: StreamDir::Bidi,
                maximum: self.local_max_streams,
            })
            .is_ok()
        {
            self.max_streams_pending = false;
            *bits |= ctrl::MAX_STREAMS;
        }
        if self.can_send_app_data() && self.conn_credit.needs_blocked() && self.unsent_streams > 0 {
            // §4.1 / §19.12 DATA_BLOCKED.
            if b.push(&Frame::DataBlocked(self.conn_credit.max)).is_ok() {
                self.conn_credit.blocked_at = Some(self.conn_credit.max);
                *bits |= ctrl::DATA_BLOCKED;
            }
        }
        // Streams owing MAX_STREAM_DATA or STREAM_DATA_BLOCKED, in ID order.
        let mut again = std::mem::take(&mut self.sched_scratch);
        while *nch < MAX_CHUNKS {
            let Some(Reverse(id)) = self.ctrl_queue.pop() else {
                break;
            };
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            if s.window.update_pending
                && b.push(&Frame::MaxStreamData {
                    stream_id: s.id.0,
                    maximum: s.window.max,
                })
                .is_ok()
            {
                s.window.update_pending = false;
                chunks[*nch] = Chunk::MaxStreamData { id: s.id.0 };
                *nch += 1;
            }
            if *nch < MAX_CHUNKS
                && s.credit.needs_blocked()
                && s.send.next < s.send.written
                && b.push(&Frame::StreamDataBlocked {
                    stream_id: s.id.0,
                    maximum: s.credit.max,
                })
                .is_ok()
            {
                s.credit.blocked_at = Some(s.credit.max);
                chunks[*nch] = Chunk::StreamDataBlocked { id: s.id.0 };
                *nch += 1;
            }
            if owes_control(s) {
                again.push(id); // did not fit: still owed
            } else {
                s.sched.ctrl_queued = false;
            }
        }
        for &id in &again {
            self.ctrl_queue.push(Reverse(id));
        }
        again.clear();
        self.sched_scratch = again;
    }

    /// STREAM frames, retransmissions first within a stream, round-robin
    /// across streams. Returns (new bytes, retransmitted bytes, any frame).
    fn push_stream_frames(
        &mut self,
        b: &mut PacketBuilder<'_>,
        chunks: &mut [Chunk; MAX_CHUNKS],
        nch: &mut usize,
    ) -> (u64, u64, bool) {
        let (mut new_bytes, mut retx, mut any) = (0, 0, false);
        let mut tries = self.streams.len();
        while *nch < MAX_CHUNKS && b.remaining() > 24 && tries > 0 {
            tries -= 1;
            let credit = self.conn_credit.available();
            let Some(next) = self.sched_next() else {
                break;
            };
            // The cursor moves past it whatever happens next.
            let id = self.rr.take_next().expect("a candidate");
            debug_assert_eq!(id, next);
            let s = self.streams.get_mut(&id).expect("a candidate stream");
            s.sched.rr = RrState::Idle;
            let step = push_stream_frame(s, b, credit);
            if let Step::Sent(c) = step {
                if c.new {
                    self.conn_credit.used += c.len;
                }
            }
            // Back in the round-robin (next sweep) if it has more to send;
            // STREAM_DATA_BLOCKED may be owed.
            self.sched_touch(id);
            let c = match step {
                Step::Stop => break,
                Step::Skip => continue,
                Step::Sent(c) => c,
            };
            if c.new {
                new_bytes += c.len;
            } else {
                retx += c.len;
            }
            chunks[*nch] = Chunk::Stream {
                id,
                offset: c.offset,
                len: c.len as u32,
                fin: c.fin,
            };
            *nch += 1;
            any = true;
        }
        (new_bytes, retx, any)
    }

    /// §10.2.1: one CONNECTION_CLOSE in the highest space with keys.
    fn transmit_close(
        &mut self,
        buf: &mut [u8],
        limit: usize,
        to: SocketAddr,
    ) -> Option<(usize, SocketAddr, Ecn)> {
        if !self.close_pending || limit < MIN_PACKET_ROOM {
            return None;
        }
        self.close_pending = false;
        // The highest space with keys. Not `can_send_in`: the state is
        // Closing by now, and 1-RTT keys stay (they came with the handshake).
        let one_rtt = self.has_one_rtt_keys();
        let sp = (0..3).rev().find(|&sp| {
            !self.spaces[sp].discarded
                && match sp {
                    0 => true,
                    1 => self.handshake_keys,
                    _ => one_rtt,
                }
        })?;
        let code = match self.close {
            Some(super::CloseReason::Local { error_code }) => error_code,
            _ => 0,
        };
        let pn = self.spaces[sp].next_pn;
        let tpn = encode_packet_number(pn, self.spaces[sp].largest_acked).ok()?;
        let header = self.header(sp, tpn);
        let mut b = PacketBuilder::new(&mut buf[..limit], &header).ok()?;
        // §10.2.3: an application close in Initial/Handshake becomes a transport one.
        let kind = if sp == 2 {
            CloseKind::Application
        } else {
            CloseKind::Transport { frame_type: 0 }
        };
        let code = if sp == 2 { code } else { 0x0c }; // APPLICATION_ERROR
        b.push(&Frame::ConnectionClose(ConnectionClose {
            kind,
            error_code: code,
            reason: b"",
        }))
        .ok()?;
        let n = b.finish().ok()?;
        self.spaces[sp].next_pn += 1;
        self.stats.datagrams_sent += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += n as u64;
        let _ = (CID_LEN, ZeroRtt::None);
        Some((n, to, Ecn::NotEct))
    }

    /// 1-RTT keys are installed (the handshake completed; they stay while
    /// closing).
    fn has_one_rtt_keys(&self) -> bool {
        self.stats.handshake_time.is_some()
    }

    /// The server rejected 0-RTT: everything sent in 0-RTT is sent again in
    /// 1-RTT (RFC 9001 §4.6.2), without a congestion signal.
    pub(super) fn on_zero_rtt_rejected(&mut self) {
        let (mut pn, _) = self.spaces[2].first_outstanding();
        while let Some(&p) = self.spaces[2].get(pn) {
            if p.zero_rtt && p.state == SentState::Outstanding {
                self.spaces[2].mark_lost(pn, p.time_sent);
                self.spaces[2].leave_flight(p.pn);
                self.requeue(2, &p);
            }
            pn += 1;
        }
    }
}

/// One STREAM frame from `s` into `b` (retransmission first), with `credit`
/// bytes of connection credit for new data.
fn push_stream_frame(s: &mut Stream, b: &mut PacketBuilder<'_>, credit: u64) -> Step {
    let id = s.id.0;
    let room = b.remaining();
    let ovh = 1
        + varint_len(id)
        + varint_len(s.send.next.max(s.send.retx.first().map_or(0, |r| r.0)))
        + varint_len(room as u64);
    if room <= ovh {
        return Step::Stop;
    }
    let max = ((room - ovh) as u64).min(ZEROS.len() as u64);
    let Some(c) = s.send.next_chunk(max, credit.min(s.credit.available())) else {
        return Step::Skip;
    };
    let frame = Frame::Stream(StreamFrame {
        stream_id: id,
        offset: c.offset,
        data: &ZEROS[..c.len as usize],
        fin: c.fin,
        has_length: true,
    });
    if b.push(&frame).is_err() {
        // Undo: put it back as a retransmission.
        s.send.on_lost(c.offset, c.len, c.fin);
        return Step::Stop;
    }
    if c.new {
        s.credit.used = s.credit.used.max(c.offset + c.len);
    }
    Step::Sent(c)
}
