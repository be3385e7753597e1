//! Parsing datagrams: coalesced packets (RFC 9000 §12.2), key availability,
//! duplicates, then frames. Malformed input is counted and ignored, never a
//! panic: a packet whose frames do not all decode is dropped whole (QUIC
//! would close the connection with FRAME_ENCODING_ERROR or
//! PROTOCOL_VIOLATION), and a frame that breaks a rule (flow control,
//! final size, stream ID) is ignored and counted in
//! `ConnectionStats::protocol_violations` (QUIC would close with
//! FLOW_CONTROL_ERROR etc.; l4slab keeps going so fuzzing reaches deeper).

use std::net::SocketAddr;

use l4slab_core::{Ecn, Time};

use super::handshake::{space_idx, HandshakeState};
use super::spaces::SentState;
use super::streams::{Stream, StreamId};
use super::{
    CloseReason, Connection, Event, ResumptionTicket, Role, ZeroRtt, CID_LEN, MAX_RECV_RANGES,
    MAX_RETRY_TOKEN,
};
use crate::wire::{
    decode_packet_number, is_retry, Frame, Header, Packet, PacketType, PnSpace, RetryPacket,
    StreamDir, StreamFrame, MIN_INITIAL_DATAGRAM,
};

impl Connection {
    pub(super) fn on_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        if self.done
            || matches!(
                self.state.get(),
                HandshakeState::Draining | HandshakeState::Closed
            )
        {
            return;
        }
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += data.len() as u64;
        // §17.2.5: a Retry fills its datagram and has a layout of its own.
        if is_retry(data) {
            self.on_retry(data);
            return;
        }
        let mut rest = data;
        let mut any = false;
        while !rest.is_empty() {
            match Packet::decode(rest, CID_LEN) {
                Err(_) => {
                    self.stats.malformed += 1;
                    break;
                }
                Ok((p, r)) => {
                    rest = r;
                    any |= self.on_packet(now, from, &p, data.len(), ecn);
                }
            }
        }
        if any && self.state.get() == HandshakeState::Closing {
            // §10.2.1: "An endpoint in the closing state sends a packet
            // containing a CONNECTION_CLOSE frame in response to any incoming
            // packet that it attributes to the connection" (one per datagram).
            self.close_pending = true;
        }
        if any && !self.address_validated {
            // §8.1: bytes received from the unvalidated address count for
            // the amplification budget (a datagram with a packet we accepted).
            self.amp_received += data.len() as u64;
            self.stats.unvalidated_received += data.len() as u64;
        }
    }

    /// One packet; returns whether it was accepted.
    fn on_packet(
        &mut self,
        now: Time,
        from: SocketAddr,
        p: &Packet<'_>,
        datagram_len: usize,
        ecn: Ecn,
    ) -> bool {
        let ty = p.packet_type();
        if !self.can_receive(ty) {
            self.stats.dropped_packets += 1;
            return false;
        }
        let dcid = p.header().dcid();
        let ours = dcid == self.local_cid;
        let first_flight = self.role == Role::Server
            && matches!(ty, PacketType::Initial | PacketType::ZeroRtt)
            && (self.state.get() == HandshakeState::AwaitingClientHello
                || dcid == self.original_dcid);
        if !ours && !first_flight {
            self.stats.dropped_packets += 1;
            return false;
        }
        if self.role == Role::Server
            && self.state.get() == HandshakeState::AwaitingClientHello
            && (ty != PacketType::Initial || datagram_len < MIN_INITIAL_DATAGRAM)
        {
            // §14.1: "A server MUST discard an Initial packet that is carried
            // in a UDP datagram with a payload that is smaller than 1200".
            self.stats.dropped_packets += 1;
            return false;
        }
        // Validate every frame before acting on any.
        let mut eliciting = false;
        for f in p.frames() {
            match f {
                Ok(f) => {
                    eliciting |= f.is_ack_eliciting();
                    if let Frame::Stream(sf) = f {
                        if self.reassembly_would_overflow(&sf) {
                            // Refused before it is acknowledged, so the
                            // peer sends it again once the gaps have filled.
                            self.stats.reassembly_refused += 1;
                            self.stats.dropped_packets += 1;
                            return false;
                        }
                    }
                }
                Err(_) => {
                    self.stats.malformed += 1;
                    return false;
                }
            }
        }
        let sp = space_idx(ty.space());
        let pn = decode_packet_number(self.spaces[sp].rx.largest(), p.header().pn());
        let policy = self.ack_policy();
        if !self.spaces[sp]
            .rx
            .on_packet(now, ty.space(), pn, eliciting, ecn, policy)
        {
            self.stats.dropped_packets += 1;
            return false;
        }
        self.stats.packets_received += 1;
        match ecn {
            Ecn::Ect0 => self.stats.ect0_received += 1,
            Ecn::Ect1 => self.stats.ect1_received += 1,
            Ecn::Ce => self.stats.ce_received += 1,
            Ecn::NotEct => {}
        }
        // First packet from the peer.
        if self.role == Role::Server && self.peer_addr.is_none() {
            self.peer_addr = Some(from);
            // (After a Retry the token gave the original DCID.)
            if !self.retried && dcid.len() == CID_LEN {
                self.original_dcid.copy_from_slice(dcid);
            }
        }
        if let Header::Long(h) = p.header() {
            if h.scid.len() == CID_LEN && (self.role == Role::Server || ty != PacketType::ZeroRtt) {
                // §7.2: the client switches to the server's chosen CID.
                self.peer_cid.copy_from_slice(h.scid);
            }
        }
        // §10.1: "restart its idle timer when a packet from its peer is received
        // and processed successfully".
        self.idle_deadline = now + self.idle_timeout();
        self.idle_restart_on_send = true;
        if ty == PacketType::Handshake && self.role == Role::Server {
            // §8.1: "receipt of a packet protected with Handshake keys confirms
            // that the peer successfully processed an Initial packet"; RFC 9001
            // §4.9.1: the server discards Initial keys on its first Handshake packet.
            self.address_validated = true;
            self.discard_space(PnSpace::Initial);
        }
        for f in p.frames().flatten() {
            self.on_frame(now, sp, ty, f);
            if self.close.is_some() && self.state.get() == HandshakeState::Draining {
                return true;
            }
        }
        self.drive_handshake(now);
        true
    }

    fn on_frame(&mut self, now: Time, sp: usize, ty: PacketType, f: Frame<'_>) {
        match f {
            Frame::Padding { .. } | Frame::Ping => {}
            Frame::Ack(a) => self.on_ack_frame(now, sp, &a),
            Frame::Crypto { offset, data } => {
                if !self.on_crypto(ty.space(), offset, data) {
                    self.stats.protocol_violations += 1;
                }
            }
            Frame::NewToken { token } => match (self.role, ResumptionTicket::decode(token)) {
                (Role::Client, Some(t)) => self.ticket = Some(t),
                _ => self.stats.protocol_violations += 1,
            },
            Frame::Stream(s) => self.on_stream_frame(ty, s),
            Frame::MaxData(m) => {
                self.conn_credit.raise(m);
                self.sched_unpark();
            }
            Frame::MaxStreamData { stream_id, maximum } => {
                if let Some(s) = self.streams.get_mut(&stream_id) {
                    s.credit.raise(maximum);
                    self.sched_touch(stream_id);
                }
            }
            Frame::MaxStreams {
                dir: StreamDir::Bidi,
                maximum,
            } => {
                self.peer_max_streams = self.peer_max_streams.max(maximum);
            }
            Frame::MaxStreams { .. }
            | Frame::DataBlocked(_)
            | Frame::StreamDataBlocked { .. }
            | Frame::StreamsBlocked { .. }
            | Frame::ResetStream { .. }
            | Frame::StopSending { .. } => {}
            Frame::ConnectionClose(c) => {
                let application = matches!(c.kind, crate::wire::CloseKind::Application);
                self.enter_draining(
                    now,
                    CloseReason::Peer {
                        error_code: c.error_code,
                        application,
                    },
                );
            }
            Frame::HandshakeDone => {
                if self.role == Role::Client {
                    self.on_handshake_done();
                } else {
                    // §19.20: a server receiving HANDSHAKE_DONE: PROTOCOL_VIOLATION.
                    self.stats.protocol_violations += 1;
                }
            }
        }
    }

    fn on_stream_frame(&mut self, ty: PacketType, f: StreamFrame<'_>) {
        let id = StreamId(f.stream_id);
        let len = f.data.len() as u64;
        let local = id.is_client_initiated() == (self.role == Role::Client);
        if !id.is_bidi() {
            self.stats.protocol_violations += 1; // unidirectional streams not implemented
            return;
        }
        if !self.streams.contains_key(&id.0) {
            if local {
                // Ours and gone (closed and reaped), or never opened.
                if id.index() >= self.next_local_stream {
                    self.stats.protocol_violations += 1;
                }
                return;
            }
            if id.index() < self.peer_streams_opened {
                return; // closed and reaped: a late retransmission
            }
            // §4.6: "An endpoint that receives a frame with a stream ID exceeding
            // the limit it has sent MUST treat this as a connection error".
            if id.index() >= self.local_max_streams {
                self.stats.protocol_violations += 1;
                return;
            }
            // §3.2: "Before a stream is created, all streams of the same type
            // with lower-numbered stream IDs MUST be created."
            let peer_limit = self.peer_params.map_or(0, |p| p.max_stream_data);
            for index in self.peer_streams_opened..=id.index() {
                let sid = StreamId::bidi(self.role == Role::Server, index);
                self.streams.insert(
                    sid.0,
                    Stream::new(sid, peer_limit, self.cfg.max_stream_data),
                );
                self.push_event(Event::StreamOpened(sid));
            }
            self.peer_streams_opened = id.index() + 1;
        }
        let s = self.streams.get_mut(&id.0).expect("present");
        let Some(end) = f.offset.checked_add(len) else {
            self.stats.protocol_violations += 1;
            return;
        };
        // §4.1 flow control, stream then connection (sum of highest offsets).
        if s.window.on_received(end).is_err() {
            self.stats.protocol_violations += 1;
            return;
        }
        let grow = end.saturating_sub(s.recv.highest);
        if self
            .conn_window
            .on_received(self.conn_window.received + grow)
            .is_err()
        {
            self.stats.protocol_violations += 1;
            return;
        }
        let new = match s.recv.on_data(f.offset, len, f.fin) {
            Ok(n) => n,
            Err(_) => {
                self.stats.protocol_violations += 1;
                return;
            }
        };
        if ty == PacketType::ZeroRtt {
            self.stats.zero_rtt_bytes_accepted += len;
        }
        let delivered = s.recv.delivered;
        s.window.on_consumed(delivered);
        let finished = s.recv.take_finished();
        self.sched_touch(id.0); // a MAX_STREAM_DATA may be due
        if new > 0 {
            self.conn_window
                .on_consumed(self.conn_window.consumed + new);
            self.stats.stream_bytes_delivered += new;
            self.push_event(Event::StreamData {
                id,
                new_in_order_bytes: new,
            });
        }
        if finished {
            self.push_event(Event::StreamFinished(id));
        }
        self.maybe_reap_stream(id.0);
        let _ = ZeroRtt::None;
    }

    /// Whether `f` would open one reassembly gap more on a stream that has
    /// [`MAX_RECV_RANGES`] already (the per-stream memory bound).
    fn reassembly_would_overflow(&self, f: &StreamFrame<'_>) -> bool {
        let Some(s) = self.streams.get(&f.stream_id) else {
            return false;
        };
        let end = f.offset.saturating_add(f.data.len() as u64);
        let start = f.offset.max(s.recv.delivered);
        s.recv.ranges.len() >= MAX_RECV_RANGES && end > start && !s.recv.ranges.touches(start, end)
    }

    /// Client: a Retry arrived (RFC 9000 §17.2.5.2, RFC 9002 §6.3).
    fn on_retry(&mut self, data: &[u8]) {
        // §17.2.5.2: "A client MUST accept and process at most one Retry
        // packet for each connection attempt. After the client has received
        // and processed an Initial or Retry packet from the server, it MUST
        // discard any subsequent Retry packets that it receives."
        let may = self.role == Role::Client
            && self.state.get() == HandshakeState::ClientHelloSent
            && !self.retried
            && self.spaces[0].rx.largest().is_none();
        let retry = may
            .then(|| RetryPacket::decode(data, &self.original_dcid).ok())
            .flatten()
            .filter(|r| {
                // §17.2.5.2: "A client MUST discard a Retry packet that
                // contains a Source Connection ID field that is identical to
                // the Destination Connection ID field of its Initial packet."
                r.scid != self.original_dcid
                    && r.scid.len() == CID_LEN
                    && r.dcid == self.local_cid
                    && r.token.len() <= MAX_RETRY_TOKEN
            });
        let Some(r) = retry else {
            self.stats.retries_discarded += 1;
            return;
        };
        // §17.2.5.2: "The client MUST use the value from the Source Connection
        // ID field of the Retry packet in the Destination Connection ID field
        // of subsequent packets that it sends" and "MUST include the token".
        self.retry_token = r.token.to_vec();
        self.peer_cid.copy_from_slice(r.scid);
        self.retried = true;
        self.stats.retries += 1;
        // RFC 9002 §6.3: "Clients that receive a Retry packet reset congestion
        // control and loss recovery state, including resetting any pending
        // timers. Other connection state, in particular cryptographic
        // handshake messages, is retained". The Initial (and any 0-RTT) sent
        // so far goes again, in new packets (§17.2.5.3: "The client MUST NOT
        // reset the packet number for any packet number space").
        for sp in [0, 2] {
            let n = self.spaces[sp].sent.len();
            for i in 0..n {
                let p = self.spaces[sp].sent[i];
                if p.state == SentState::Outstanding {
                    self.requeue(sp, &p);
                }
            }
            // Also the oldest-outstanding pointer and the lost list, which
            // loss detection walks from.
            self.spaces[sp].reset_recovery();
        }
        self.pto_count = 0;
    }

    /// Drop a stream whose both halves are done; a peer's stream frees a slot
    /// (§4.6 MAX_STREAMS).
    pub(super) fn maybe_reap_stream(&mut self, id: u64) {
        if self.streams.get(&id).is_some_and(|s| s.is_closed()) {
            let s = self.streams.remove(&id).expect("present");
            if s.sched.unsent {
                self.unsent_streams -= 1; // not reached: closed means all sent
            }
            let sid = StreamId(id);
            if sid.is_client_initiated() != (self.role == Role::Client) {
                self.local_max_streams += 1;
                self.max_streams_pending = true;
            }
        }
    }
}
