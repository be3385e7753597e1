//! The handshake without TLS: a state machine over CRYPTO-stream stand-ins
//! of realistic size, transport parameters, 0-RTT tickets and key discard.
//!
//! Flow (RFC 9000 §7, RFC 9001 §4; sizes are typical TLS 1.3 ones):
//! * client → Initial: ClientHello ([`CLIENT_HELLO_LEN`] bytes, +
//!   [`PSK_EXTENSION_LEN`] with a ticket), padded to 1200 bytes (§14.1); with
//!   a ticket, 0-RTT STREAM data in the same flight.
//! * server → Initial: ServerHello ([`SERVER_HELLO_LEN`]); Handshake:
//!   EncryptedExtensions (with the transport parameters and the 0-RTT
//!   verdict), Certificate (`certificate_len`, none on resumption),
//!   CertificateVerify, Finished; all within 3× the bytes received until
//!   the client's address is validated (§8.1).
//! * client → Handshake: Finished: handshake complete, 1-RTT data may flow
//!   after one round trip.
//! * server: Finished received → complete and confirmed; HANDSHAKE_DONE and
//!   NEW_TOKEN (carrying the resumption ticket) in 1-RTT.
//! * client: HANDSHAKE_DONE → confirmed.
//!
//! Keys are discarded as RFC 9001 §4.9 says: Initial by the client when it
//! first sends a Handshake packet and by the server when it first processes
//! one; Handshake keys when the handshake is confirmed.
//!
//! Deviations: no TLS, so nothing is encrypted or authenticated (the
//! 16-byte tag is zeros); a message is complete when its declared length
//! has arrived in order. 0-RTT replay is not modelled (any copy of a valid
//! ticket is accepted). The server sends no 0.5-RTT data (application data
//! only once the handshake is confirmed); the ticket rides in NEW_TOKEN
//! rather than a TLS NewSessionTicket. No version negotiation.
//!
//! **Retry** (RFC 9000 §8.1.2, §17.2.5): a server may answer a client's
//! Initial with a Retry instead (statelessly: the connection is made by
//! whoever checks the token, e.g. `l4slab-sendserve`'s server, with
//! [`Connection::server_after_retry`], which counts the address as
//! validated). The client follows at most one Retry: its Initial (and any
//! 0-RTT) goes again to the Retry's Source Connection ID, carrying the
//! token, with recovery reset (RFC 9002 §6.3). Not done: the §7.3
//! transport parameters original_destination_connection_id and
//! retry_source_connection_id (they authenticate the exchange through
//! TLS), and the RTT estimate a client may take from a Retry.

use super::{Connection, Event, Role, ZeroRtt};
use crate::wire::PnSpace;
use l4slab_core::state::Machine;
use l4slab_core::Time;

/// A typical ClientHello (X25519 key share, usual extensions).
pub const CLIENT_HELLO_LEN: usize = 280;
/// The pre_shared_key and early_data extensions of a resuming ClientHello.
pub const PSK_EXTENSION_LEN: usize = 120;
pub const SERVER_HELLO_LEN: usize = 90;
/// EncryptedExtensions with QUIC transport parameters.
pub const ENCRYPTED_EXTENSIONS_LEN: usize = 80;
pub const CERTIFICATE_VERIFY_LEN: usize = 80;
pub const FINISHED_LEN: usize = 36;
/// Bytes of a message's header the receiver reads (type, length, fields).
const HEAD_LEN: usize = 40;
/// The largest message accepted (longer declared lengths are ignored).
const MAX_MESSAGE: usize = 16 * 1024;

const MSG_CLIENT_HELLO: u8 = 1;
const MSG_SERVER_HELLO: u8 = 2;
const MSG_SERVER_FLIGHT: u8 = 8;
const MSG_CLIENT_FINISHED: u8 = 20;
const FLAG_TICKET: u8 = 1;
const FLAG_EARLY_DATA_ACCEPTED: u8 = 2;
/// ClientHello: an application request follows the parameters.
const FLAG_APP_REQUEST: u8 = 4;
/// Server flight: the server took the client's application request.
const FLAG_APP_REQUEST_ACCEPTED: u8 = 8;
/// Bytes of an application request in a ClientHello: bytes
/// `HEAD_LEN..HEAD_LEN + APP_REQUEST_LEN` of the message (the end of the
/// 64-byte head the receiver keeps), where an application's TLS extension
/// or transport parameter would go (RFC 9000 §18.1 allows private ones).
pub const APP_REQUEST_LEN: usize = 24;

/// The handshake and connection lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandshakeState {
    /// Server: waiting for a ClientHello.
    AwaitingClientHello,
    /// Client: ClientHello (and maybe 0-RTT) sent.
    ClientHelloSent,
    /// Server: ServerHello and its Handshake flight sent.
    ServerFlightSent,
    /// Client: server flight processed, Finished sent (RFC 9001 §4.1.1
    /// "complete"); 1-RTT data flows.
    Complete,
    /// RFC 9001 §4.1.2 "confirmed".
    Confirmed,
    /// §10.2.1: we sent CONNECTION_CLOSE.
    Closing,
    /// §10.2.2: the peer closed.
    Draining,
    Closed,
}

impl Machine for HandshakeState {
    const NAME: &'static str = "handshake";

    fn name(self) -> &'static str {
        HandshakeState::name(self)
    }

    /// RFC 9001 §4.1 and RFC 9000 §10.2: the handshake moves forward;
    /// closing, draining and closed are reachable from any open state and
    /// lead only towards closed.
    fn may_enter(self, next: HandshakeState) -> bool {
        use HandshakeState::*;
        match (self, next) {
            (AwaitingClientHello, ServerFlightSent) => true,
            (ClientHelloSent, Complete) => true,
            (Complete, Confirmed) | (ServerFlightSent, Confirmed) => true,
            (Closing | Draining, Closed) => true,
            (Closing, Draining) => true,
            (Closed, _) | (Draining, _) | (Closing, _) => false,
            (_, Closing | Draining | Closed) => true,
            _ => false,
        }
    }
}

impl HandshakeState {
    pub fn name(self) -> &'static str {
        match self {
            HandshakeState::AwaitingClientHello => "awaiting_client_hello",
            HandshakeState::ClientHelloSent => "client_hello_sent",
            HandshakeState::ServerFlightSent => "server_flight_sent",
            HandshakeState::Complete => "complete",
            HandshakeState::Confirmed => "confirmed",
            HandshakeState::Closing => "closing",
            HandshakeState::Draining => "draining",
            HandshakeState::Closed => "closed",
        }
    }
}

/// The transport parameters l4slab exchanges (RFC 9000 §18.2 subset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportParams {
    pub max_data: u64,
    pub max_stream_data: u64,
    pub max_streams_bidi: u64,
}

/// What a client keeps to resume with 0-RTT: the ticket and the server's
/// transport parameters (RFC 9000 §7.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResumptionTicket {
    pub ticket: u64,
    pub params: TransportParams,
}

/// Bytes of a NEW_TOKEN token carrying a [`ResumptionTicket`].
pub const TICKET_LEN: usize = 32;

impl ResumptionTicket {
    pub fn encode(&self) -> [u8; TICKET_LEN] {
        let mut b = [0u8; TICKET_LEN];
        b[..8].copy_from_slice(&self.ticket.to_be_bytes());
        b[8..16].copy_from_slice(&self.params.max_data.to_be_bytes());
        b[16..24].copy_from_slice(&self.params.max_stream_data.to_be_bytes());
        b[24..32].copy_from_slice(&self.params.max_streams_bidi.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != TICKET_LEN {
            return None;
        }
        let u = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap());
        Some(ResumptionTicket {
            ticket: u(0),
            params: TransportParams {
                max_data: u(8),
                max_stream_data: u(16),
                max_streams_bidi: u(24),
            },
        })
    }
}

/// A message header as carried at the start of a CRYPTO stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Message {
    ty: u8,
    len: usize,
    flags: u8,
    ticket: u64,
    params: TransportParams,
    /// With [`FLAG_APP_REQUEST`]: the application's request.
    request: [u8; APP_REQUEST_LEN],
}

impl Message {
    fn new(ty: u8, len: usize, flags: u8, ticket: u64, params: TransportParams) -> Self {
        Message {
            ty,
            len,
            flags,
            ticket,
            params,
            request: [0; APP_REQUEST_LEN],
        }
    }

    /// The application request, if the message carries one.
    fn app_request(&self) -> Option<[u8; APP_REQUEST_LEN]> {
        (self.flags & FLAG_APP_REQUEST != 0).then_some(self.request)
    }

    fn encode(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len.max(HEAD_LEN)];
        v[0] = self.ty;
        v[1..3].copy_from_slice(&(self.len as u16).to_be_bytes());
        v[3] = self.flags;
        v[4..12].copy_from_slice(&self.ticket.to_be_bytes());
        v[12..20].copy_from_slice(&self.params.max_data.to_be_bytes());
        v[20..28].copy_from_slice(&self.params.max_stream_data.to_be_bytes());
        v[28..36].copy_from_slice(&self.params.max_streams_bidi.to_be_bytes());
        if self.flags & FLAG_APP_REQUEST != 0 && v.len() >= HEAD_LEN + APP_REQUEST_LEN {
            v[HEAD_LEN..HEAD_LEN + APP_REQUEST_LEN].copy_from_slice(&self.request);
        }
        v
    }

    /// The message, once all `len` bytes arrived in order.
    fn decode(head: &[u8; 64], delivered: u64) -> Option<Self> {
        if delivered < HEAD_LEN as u64 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([head[1], head[2]]));
        if !(HEAD_LEN..=MAX_MESSAGE).contains(&len) || delivered < len as u64 {
            return None;
        }
        let u = |i: usize| u64::from_be_bytes(head[i..i + 8].try_into().unwrap());
        let mut flags = head[3];
        let mut request = [0; APP_REQUEST_LEN];
        if len >= HEAD_LEN + APP_REQUEST_LEN {
            request.copy_from_slice(&head[HEAD_LEN..HEAD_LEN + APP_REQUEST_LEN]);
        } else {
            flags &= !FLAG_APP_REQUEST; // too short to carry one
        }
        Some(Message {
            ty: head[0],
            len,
            flags,
            request,
            ticket: u(4),
            params: TransportParams {
                max_data: u(12),
                max_stream_data: u(20),
                max_streams_bidi: u(28),
            },
        })
    }
}

impl Connection {
    /// The one checked transition of the lifecycle ([`HandshakeState`]'s
    /// `may_enter`; `l4slab_core::state`).
    pub(super) fn transition_to(&mut self, next: HandshakeState) {
        self.state.transition(next);
    }

    fn local_params(&self) -> TransportParams {
        TransportParams {
            max_data: self.cfg.max_data,
            max_stream_data: self.cfg.max_stream_data,
            max_streams_bidi: self.cfg.max_streams_bidi,
        }
    }

    pub(super) fn apply_peer_params(&mut self, p: TransportParams) {
        self.peer_params = Some(p);
        self.conn_credit.raise(p.max_data);
        self.peer_max_streams = self.peer_max_streams.max(p.max_streams_bidi);
        for s in self.streams.values_mut() {
            s.credit.raise(p.max_stream_data);
        }
    }

    pub(super) fn start_client_handshake(&mut self) {
        let (flags, ticket, len) = match self.ticket {
            Some(t) => (FLAG_TICKET, t.ticket, CLIENT_HELLO_LEN + PSK_EXTENSION_LEN),
            None => (0, 0, CLIENT_HELLO_LEN),
        };
        let mut msg = Message::new(MSG_CLIENT_HELLO, len, flags, ticket, self.local_params());
        if let Some(r) = self.cfg.app_request {
            msg.flags |= FLAG_APP_REQUEST;
            msg.request = r;
        }
        self.queue_crypto(PnSpace::Initial, msg.encode());
    }

    fn queue_crypto(&mut self, space: PnSpace, bytes: Vec<u8>) {
        let s = &mut self.spaces[space_idx(space)];
        s.crypto_send.written = bytes.len() as u64;
        s.crypto_out = bytes;
    }

    /// CRYPTO data arrived in `space`: keep the message head.
    pub(super) fn on_crypto(&mut self, space: PnSpace, offset: u64, data: &[u8]) -> bool {
        let s = &mut self.spaces[space_idx(space)];
        let end = offset.saturating_add(data.len() as u64);
        if end > MAX_MESSAGE as u64 {
            return false;
        }
        if offset < s.crypto_head.len() as u64 {
            let o = offset as usize;
            let n = (s.crypto_head.len() - o).min(data.len());
            s.crypto_head[o..o + n].copy_from_slice(&data[..n]);
        }
        s.crypto_recv
            .on_data(offset, data.len() as u64, false)
            .is_ok()
    }

    fn message(&self, space: PnSpace) -> Option<Message> {
        let s = &self.spaces[space_idx(space)];
        Message::decode(&s.crypto_head, s.crypto_recv.delivered)
    }

    /// Advance the handshake after a packet's frames were processed.
    pub(super) fn drive_handshake(&mut self, now: Time) {
        match (self.role, self.state.get()) {
            (Role::Server, HandshakeState::AwaitingClientHello) => {
                let Some(ch) = self
                    .message(PnSpace::Initial)
                    .filter(|m| m.ty == MSG_CLIENT_HELLO)
                else {
                    return;
                };
                self.apply_peer_params(ch.params);
                let resumed = ch.flags & FLAG_TICKET != 0 && ch.ticket == self.cfg.ticket_key;
                let accept = resumed && self.cfg.accept_zero_rtt;
                self.zero_rtt = if accept {
                    ZeroRtt::Accepted
                } else if ch.flags & FLAG_TICKET != 0 {
                    ZeroRtt::Rejected
                } else {
                    ZeroRtt::None
                };
                self.peer_app_request = ch.app_request();
                let sh = Message::new(
                    MSG_SERVER_HELLO,
                    SERVER_HELLO_LEN.max(HEAD_LEN),
                    0,
                    0,
                    self.local_params(),
                );
                self.queue_crypto(PnSpace::Initial, sh.encode());
                // Resumption (RFC 8446 §2.2): no Certificate/CertificateVerify.
                let cert = if resumed {
                    0
                } else {
                    self.cfg.certificate_len + CERTIFICATE_VERIFY_LEN
                };
                let mut flags = if accept { FLAG_EARLY_DATA_ACCEPTED } else { 0 };
                if self.cfg.accept_app_request && self.peer_app_request.is_some() {
                    flags |= FLAG_APP_REQUEST_ACCEPTED;
                }
                let flight = Message::new(
                    MSG_SERVER_FLIGHT,
                    ENCRYPTED_EXTENSIONS_LEN + cert + FINISHED_LEN,
                    flags,
                    0,
                    self.local_params(),
                );
                self.queue_crypto(PnSpace::Handshake, flight.encode());
                self.handshake_keys = true;
                self.transition_to(HandshakeState::ServerFlightSent);
            }
            (Role::Client, HandshakeState::ClientHelloSent) => {
                if self
                    .message(PnSpace::Initial)
                    .is_some_and(|m| m.ty == MSG_SERVER_HELLO)
                {
                    self.handshake_keys = true;
                }
                let Some(flight) = self
                    .message(PnSpace::Handshake)
                    .filter(|m| m.ty == MSG_SERVER_FLIGHT)
                else {
                    return;
                };
                if !self.handshake_keys {
                    return;
                }
                self.apply_peer_params(flight.params);
                self.app_request_accepted =
                    self.cfg.app_request.is_some() && flight.flags & FLAG_APP_REQUEST_ACCEPTED != 0;
                let fin = Message::new(
                    MSG_CLIENT_FINISHED,
                    FINISHED_LEN.max(HEAD_LEN),
                    0,
                    0,
                    self.local_params(),
                );
                self.queue_crypto(PnSpace::Handshake, fin.encode());
                self.transition_to(HandshakeState::Complete);
                self.stats.handshake_time = Some(now.saturating_since(self.start));
                if self.zero_rtt == ZeroRtt::Sending {
                    if flight.flags & FLAG_EARLY_DATA_ACCEPTED != 0 {
                        self.zero_rtt = ZeroRtt::Accepted;
                        self.events.push_back(Event::ZeroRttAccepted);
                    } else {
                        self.zero_rtt = ZeroRtt::Rejected;
                        self.on_zero_rtt_rejected();
                        self.events.push_back(Event::ZeroRttRejected);
                    }
                }
                self.events.push_back(Event::Connected);
            }
            (Role::Server, HandshakeState::ServerFlightSent)
                if self
                    .message(PnSpace::Handshake)
                    .is_some_and(|m| m.ty == MSG_CLIENT_FINISHED) =>
            {
                self.transition_to(HandshakeState::Confirmed);
                self.stats.handshake_time = Some(now.saturating_since(self.start));
                // RFC 9001 §4.9.2: "the server MUST send a HANDSHAKE_DONE
                // frame as soon as the handshake is complete".
                self.handshake_done_pending = true;
                self.new_token_pending = true;
                self.discard_space(PnSpace::Handshake);
                self.events.push_back(Event::Connected);
            }
            _ => {}
        }
    }

    /// Client: HANDSHAKE_DONE arrived (RFC 9001 §4.1.2).
    pub(super) fn on_handshake_done(&mut self) {
        if self.role == Role::Client && self.state.get() == HandshakeState::Complete {
            self.transition_to(HandshakeState::Confirmed);
            self.discard_space(PnSpace::Handshake);
        }
    }

    /// The server's ticket for later resumption.
    pub(super) fn issued_ticket(&self) -> ResumptionTicket {
        ResumptionTicket {
            ticket: self.cfg.ticket_key,
            params: self.local_params(),
        }
    }

    /// RFC 9000 §8.1: "Prior to validating the client address, servers MUST
    /// NOT send more than three times as many bytes as the number of bytes
    /// they have received." Bytes the server may still send.
    pub(super) fn amplification_budget(&self) -> usize {
        if self.address_validated {
            return usize::MAX;
        }
        (3 * self.amp_received).saturating_sub(self.amp_sent) as usize
    }

    /// Keys to send in `space`.
    pub(super) fn can_send_in(&self, space: usize) -> bool {
        if self.spaces[space].discarded {
            return false;
        }
        match space {
            0 => {
                self.role == Role::Client || self.state.get() != HandshakeState::AwaitingClientHello
            }
            1 => self.handshake_keys,
            _ => match self.role {
                Role::Client => self.is_established() || self.zero_rtt == ZeroRtt::Sending,
                Role::Server => self.state.get() != HandshakeState::AwaitingClientHello,
            },
        }
    }

    /// Application STREAM data may be sent now (0-RTT or 1-RTT).
    pub(super) fn can_send_app_data(&self) -> bool {
        match self.role {
            Role::Client => self.is_established() || self.zero_rtt == ZeroRtt::Sending,
            Role::Server => self.state.get() == HandshakeState::Confirmed,
        }
    }

    /// Packets of this type can be processed now.
    pub(super) fn can_receive(&self, ty: crate::wire::PacketType) -> bool {
        use crate::wire::PacketType as T;
        match ty {
            T::Initial => !self.spaces[0].discarded,
            T::Handshake => self.handshake_keys && !self.spaces[1].discarded,
            T::ZeroRtt => self.role == Role::Server && self.zero_rtt == ZeroRtt::Accepted,
            T::OneRtt => match self.role {
                Role::Client => self.is_established(),
                Role::Server => self.state.get() != HandshakeState::AwaitingClientHello,
            },
        }
    }
}

pub(super) fn space_idx(s: PnSpace) -> usize {
    super::ecn::space_index(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_and_ticket_round_trip() {
        let p = TransportParams {
            max_data: 1,
            max_stream_data: 2,
            max_streams_bidi: 3,
        };
        let m = Message::new(MSG_CLIENT_HELLO, 300, FLAG_TICKET, 9, p);
        let bytes = m.encode();
        assert_eq!(bytes.len(), 300);
        let mut head = [0u8; 64];
        head.copy_from_slice(&bytes[..64]);
        assert_eq!(Message::decode(&head, 299), None);
        assert_eq!(Message::decode(&head, 300), Some(m));
        let t = ResumptionTicket {
            ticket: 7,
            params: p,
        };
        assert_eq!(ResumptionTicket::decode(&t.encode()), Some(t));
    }

    #[test]
    fn an_app_request_rides_in_the_client_hello_head_and_only_when_flagged() {
        let p = TransportParams {
            max_data: 1,
            max_stream_data: 2,
            max_streams_bidi: 3,
        };
        let plain = Message::new(MSG_CLIENT_HELLO, CLIENT_HELLO_LEN, 0, 0, p);
        let mut with = plain;
        with.flags |= FLAG_APP_REQUEST;
        with.request = core::array::from_fn(|i| i as u8 + 1);
        let head = |m: &Message| -> [u8; 64] { m.encode()[..64].try_into().unwrap() };
        // Without a request the bytes are what they always were (zeros).
        assert!(plain.encode()[HEAD_LEN..].iter().all(|&b| b == 0));
        let n = CLIENT_HELLO_LEN as u64;
        assert_eq!(
            Message::decode(&head(&plain), n).unwrap().app_request(),
            None
        );
        let got = Message::decode(&head(&with), n).unwrap();
        assert_eq!(got.app_request(), Some(with.request));
        // A message too short to hold one carries none, whatever its flag.
        let mut short = Message::new(MSG_SERVER_HELLO, HEAD_LEN, FLAG_APP_REQUEST, 0, p);
        short.request = [9; APP_REQUEST_LEN];
        let got = Message::decode(&head(&Message { len: 64, ..short }), HEAD_LEN as u64);
        assert_eq!(got, None, "64 bytes not all delivered");
        let b = short.encode();
        let mut h = [0u8; 64];
        h[..b.len()].copy_from_slice(&b);
        assert_eq!(
            Message::decode(&h, HEAD_LEN as u64).unwrap().app_request(),
            None
        );
    }
}
