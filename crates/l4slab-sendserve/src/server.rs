//! The server: one UDP socket, many sessions, as one [`DatagramEndpoint`]
//! the real-time driver runs (`l4slab serve`).
//!
//! **Demultiplexing.** A datagram goes to the session whose connection ID
//! is its Destination Connection ID (a hash map from the 8-byte ID to a
//! slot). Anything else is an Initial that may start a session, or is
//! counted and ignored ([`ServerStats`]).
//!
//! **Address validation (stateless until it succeeds).** RFC 9000 §8.1.2:
//! an Initial without a token is answered with a Retry whose token is a MAC
//! over the client's address, port, the time and the connection IDs
//! ([`crate::token`]); no state is kept. Only an Initial that carries a
//! valid, unexpired token for the address it comes from — sent to the
//! connection ID the Retry chose — creates a session
//! ([`Connection::server_after_retry`]). Answers are never larger than what
//! they answer: a Retry (under 100 bytes) goes only for an Initial in a
//! datagram of at least 1200 bytes (§14.1: smaller ones are discarded), so
//! the server amplifies nothing before validation (§8.1 allows 3x).
//!
//! **Requests.** A client's ClientHello may carry a request
//! ([`crate::request`]; `l4slab send -R`: the server sends, with the
//! client's controller, ECN and app). The session's connection is then
//! built for the sender and given the same first Initial; the flight says
//! the request was taken. A request this server cannot read is refused
//! (counted: `requests_refused`): once the handshake completes, the
//! connection closes with [`crate::request::REFUSED`] (an application's
//! code can only be said in 1-RTT packets, RFC 9000 §10.2.3); the session is
//! not numbered or reported.
//!
//! **Bounds.** At most [`ServerConfig::max_sessions`] sessions, and at most
//! [`ServerConfig::max_sessions_per_address`] from one source
//! ([`source_key`]: an IPv4 address, or an IPv6 /64); an Initial with a
//! valid token beyond either is refused (counted, and the source kept for
//! the log: [`Server::last_refused`]). A session must complete its
//! handshake within [`ServerConfig::handshake_timeout`] of its first
//! Initial, or it is dropped (counted: `handshake_timeouts`); only
//! sessions that completed it are numbered, sampled and reported
//! ([`Server::take_finished`]), so a client that only ever sends
//! padding-only Initials holds a slot for at most the handshake timeout
//! and leaves no report. Each session's
//! memory is bounded by the connection's own limits (docs/send.md):
//! 1024 reassembly gaps per stream ([`l4slab_quic::connection::MAX_RECV_RANGES`]),
//! [`ServerConfig::max_streams`] streams, 8192 sent-packet records out of
//! flight, the ACK ranges (at most 64), the CRYPTO messages (16 KiB each).
//! A session without a packet for [`ServerConfig::idle_timeout`] ends.
//! Pending stateless answers wait in a ring of [`RESPONSE_SLOTS`] fixed
//! buffers; when it is full, further answers are dropped (counted).
//!
//! **Cost.** Per datagram: a hash lookup, the connection's own work, one
//! timer-heap update (O(log sessions)). Per timeout: the heap's due slots.
//! Transmission takes sessions round-robin from a queue of those that may
//! have something to send. No allocation per packet: the slots, the heap,
//! the queues and the answer ring are allocated once, for the session
//! limit; a session allocates when it is created.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use serde_json::{json, Value};

use l4slab_app::quic::{QuicApp, QuicStreams, Transfer};
use l4slab_app::Role;
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::connection::CID_LEN;
use l4slab_quic::wire::{Header, LongType, Packet, PacketType, RetryPacket, MIN_INITIAL_DATAGRAM};
use l4slab_quic::{Connection, ConnectionConfig, StreamId};

use crate::client::WakeIo;
use crate::heap::TimerHeap;
use crate::record::{interval_line, FlowRecord, Interval, Outcome, SeriesColumns, Side};
use crate::request::{Request, REFUSED};
use crate::token::{TokenError, TokenKey};

/// Stateless answers (Retry) waiting to be sent: room for the Initials of
/// one `send -P 128` arriving together.
pub const RESPONSE_SLOTS: usize = crate::parallel::MAX_PARALLEL;
/// Room for one stateless answer: a Retry is 1 + 4 + 2 × 9 + 33 + 16 = 72 bytes.
const RESPONSE_LEN: usize = 128;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The template of each session's connection (its `seed` is replaced by
    /// a random one per session).
    pub conn: ConnectionConfig,
    /// Sessions at once.
    pub max_sessions: usize,
    /// Sessions at once from one source ([`source_key`]), like a server's
    /// per-IP connection limit.
    pub max_sessions_per_address: usize,
    /// A session whose handshake has not completed this long after its
    /// first Initial is dropped.
    pub handshake_timeout: Dur,
    /// Streams a client may open in a session (§4.6 MAX_STREAMS).
    pub max_streams: u64,
    /// A session ends after this long without a packet (§10.1).
    pub idle_timeout: Dur,
    /// Retry tokens expire after this long.
    pub token_lifetime: Dur,
    /// Stop once this many sessions ended (`--once`: 1); `None`: never.
    pub stop_after: Option<u64>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            conn: ConnectionConfig::default(),
            max_sessions: crate::run::DEFAULT_MAX_SESSIONS,
            max_sessions_per_address: crate::run::DEFAULT_MAX_PER_ADDRESS,
            handshake_timeout: Dur::from_secs(5),
            max_streams: 4,
            idle_timeout: Dur::from_secs(10),
            token_lifetime: crate::token::DEFAULT_LIFETIME,
            stop_after: None,
        }
    }
}

/// What the server counted (datagrams no session took, answers, sessions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub datagrams: u64,
    /// Datagrams that are not l4slab QUIC packets, or whose Initial does not
    /// decode, or whose connection IDs l4slab does not issue (not 8 bytes).
    pub malformed: u64,
    /// Short-header or Handshake/0-RTT packets for no session.
    pub unknown_connection: u64,
    /// Initials in datagrams under 1200 bytes (§14.1), dropped.
    pub initial_too_small: u64,
    pub retries_sent: u64,
    /// Initials whose token did not validate (forged, altered, another
    /// address, port or connection ID) or was malformed.
    pub invalid_tokens: u64,
    pub expired_tokens: u64,
    /// Initials with a valid token whose packet the new connection did
    /// not accept (so no session was kept).
    pub rejected_initials: u64,
    /// Valid Initials that started a session (its handshake).
    pub sessions_accepted: u64,
    /// Of those, sessions whose client asked the server to send (`-R`).
    pub reverse_sessions: u64,
    /// Requests this server cannot read (closed with `REFUSED`).
    pub requests_refused: u64,
    /// Sessions whose handshake completed (numbered, reported).
    pub sessions_connected: u64,
    /// Valid tokens refused because `max_sessions` sessions were running.
    pub sessions_refused: u64,
    /// Valid tokens refused because `max_sessions_per_address` sessions
    /// from the same source were running.
    pub sessions_refused_per_address: u64,
    /// Sessions dropped because their handshake did not complete within
    /// `handshake_timeout` (no report).
    pub handshake_timeouts: u64,
    /// Sessions that ended otherwise before their handshake completed (the
    /// client closed, an error, the server stopped; no report).
    pub handshakes_abandoned: u64,
    /// Sessions that ended after their handshake (each reported once).
    pub sessions_ended: u64,
    /// Stateless answers dropped because the answer ring was full.
    pub responses_dropped: u64,
    /// Bytes of stateless answers sent, and of the datagrams they answered.
    pub stateless_bytes_sent: u64,
    pub stateless_bytes_answered: u64,
}

impl ServerStats {
    pub fn to_json(&self) -> Value {
        json!({
            "datagrams": self.datagrams,
            "malformed": self.malformed,
            "unknown_connection": self.unknown_connection,
            "initial_too_small": self.initial_too_small,
            "retries_sent": self.retries_sent,
            "invalid_tokens": self.invalid_tokens,
            "expired_tokens": self.expired_tokens,
            "rejected_initials": self.rejected_initials,
            "sessions_accepted": self.sessions_accepted,
            "reverse_sessions": self.reverse_sessions,
            "requests_refused": self.requests_refused,
            "sessions_connected": self.sessions_connected,
            "sessions_refused": self.sessions_refused,
            "sessions_refused_per_address": self.sessions_refused_per_address,
            "handshake_timeouts": self.handshake_timeouts,
            "handshakes_abandoned": self.handshakes_abandoned,
            "sessions_ended": self.sessions_ended,
            "responses_dropped": self.responses_dropped,
            "stateless_bytes_sent": self.stateless_bytes_sent,
            "stateless_bytes_answered": self.stateless_bytes_answered,
        })
    }
}

/// One client's session.
pub struct Session {
    /// 1, 2, ... in the order sessions completed their handshake; 0 before.
    pub number: u64,
    pub peer: SocketAddr,
    /// When its first Initial came.
    pub accepted: Time,
    /// When its handshake completed; `None`: still in its handshake.
    pub connected: Option<Time>,
    pub conn: Connection,
    /// The receiving end of the client's upload (the simulator's
    /// `Transfer`), or with `-R` the sending end.
    pub app: Transfer,
    pub record: FlowRecord,
    /// `-R`: what the client asked this end to send.
    pub sending: Option<Request>,
    /// The app's wake-up (a sender's frames).
    io: WakeIo,
    /// Its request cannot be done: closed with `REFUSED` once connected.
    refused: bool,
}

impl Session {
    fn pump(&mut self, now: Time) {
        while let Some(ev) = self.conn.poll_event() {
            self.app.on_event(now, Role::Server, ev);
        }
        self.io.wake = None;
        self.app
            .drive(now, Role::Server, &mut self.conn, &mut self.io);
        self.record.observe(&self.conn);
    }

    fn side(&self) -> Side {
        if self.sending.is_some() {
            Side::Sender
        } else {
            Side::Receiver
        }
    }

    /// Stream bytes received in order; sending (`-R`): acknowledged in
    /// order on the server's stream.
    pub fn bytes(&self) -> u64 {
        if self.sending.is_some() {
            self.conn
                .acked_in_order(StreamId::bidi(false, 0))
                .unwrap_or(0)
        } else {
            self.app.delivered()
        }
    }

    /// The session's entry in `summary.json`.
    pub fn summary(&self, end: Time) -> Value {
        let extra = json!({ "session": self.number, "reverse": self.sending.is_some() });
        let client = self.peer.to_string();
        // The server receives whatever the client's app sends, or sends it.
        let (app, cc) = match &self.sending {
            Some(r) => (self.app.kind(), Some(r.cc.as_str())),
            None => ("receive", None),
        };
        self.record.summary(
            &self.conn,
            Outcome {
                app,
                cc,
                down: self.sending.is_some(),
                client: Some(&client),
                server: None,
                bytes: self.bytes(),
                completion: self.app.completion(),
                end,
                app_metrics: self.app.report(self.record.start(), end),
                extra,
            },
        )
    }
}

/// A session that ended, with its report.
pub struct FinishedSession {
    pub number: u64,
    pub peer: SocketAddr,
    pub start: Time,
    pub end: Time,
    pub summary: Value,
    pub series: SeriesColumns,
}

/// A live interval line of a session.
pub struct SessionInterval {
    pub number: u64,
    pub interval: Interval,
    pub line: String,
}

struct Response {
    buf: [u8; RESPONSE_LEN],
    len: usize,
    to: SocketAddr,
}

/// Why a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The connection is done (closed, idle timeout, error).
    Closed,
    /// `handshake_timeout` passed without a completed handshake.
    HandshakeTimeout,
    /// The server stops ([`Server::end_all`]).
    Stopped,
}

/// The key a per-address limit counts: the IPv4 address (also when it
/// arrives IPv4-mapped on an IPv6 socket), or the IPv6 address's /64 —
/// one host can use any address of its /64 (RFC 4291 §2.5.4: the
/// interface identifier is the low 64 bits), so the prefix is the source.
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// The server demultiplexer (see the module documentation).
pub struct Server {
    cfg: ServerConfig,
    keys: TokenKey,
    slots: Vec<Option<Session>>,
    free: Vec<usize>,
    by_cid: HashMap<[u8; CID_LEN], usize>,
    timers: TimerHeap,
    /// Slots that may have something to send, round-robin.
    ready: VecDeque<usize>,
    in_ready: Vec<bool>,
    /// Reused by `handle_timeout` for the due slots.
    due: Vec<usize>,
    responses: VecDeque<Response>,
    finished: Vec<FinishedSession>,
    /// Sessions that completed their handshake since the last call of
    /// `take_connected`: (number, peer).
    connected: Vec<(u64, SocketAddr)>,
    /// Sessions running per source ([`source_key`]); no entry for none.
    per_source: HashMap<IpAddr, usize>,
    /// Sessions past their handshake, running now.
    connected_now: usize,
    /// The source of the last refused session.
    last_refused: Option<SocketAddr>,
    next_number: u64,
    stats: ServerStats,
}

impl Server {
    /// # Panics
    /// If `max_sessions` or `max_sessions_per_address` is 0.
    pub fn new(cfg: ServerConfig, keys: TokenKey) -> Self {
        let n = cfg.max_sessions;
        assert!(n > 0, "max_sessions must be positive");
        assert!(
            cfg.max_sessions_per_address > 0,
            "max_sessions_per_address must be positive"
        );
        Server {
            slots: (0..n).map(|_| None).collect(),
            free: (0..n).rev().collect(),
            by_cid: HashMap::with_capacity(n),
            timers: TimerHeap::new(n),
            ready: VecDeque::with_capacity(n),
            in_ready: vec![false; n],
            due: Vec::with_capacity(n),
            responses: VecDeque::with_capacity(RESPONSE_SLOTS),
            finished: Vec::new(),
            connected: Vec::new(),
            per_source: HashMap::with_capacity(n),
            connected_now: 0,
            last_refused: None,
            next_number: 1,
            stats: ServerStats::default(),
            keys,
            cfg,
        }
    }

    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Sessions running now (in their handshake or past it).
    pub fn sessions(&self) -> usize {
        self.by_cid.len()
    }

    /// Sessions running now from the source of `addr` ([`source_key`]).
    pub fn sessions_from(&self, addr: SocketAddr) -> usize {
        self.per_source
            .get(&source_key(addr.ip()))
            .copied()
            .unwrap_or(0)
    }

    /// The source of the last session refused (over either limit).
    pub fn last_refused(&self) -> Option<SocketAddr> {
        self.last_refused
    }

    /// Sessions that completed their handshake since the last call:
    /// (number, peer), in that order.
    pub fn take_connected(&mut self) -> Vec<(u64, SocketAddr)> {
        std::mem::take(&mut self.connected)
    }

    /// The running sessions, in slot order.
    pub fn live(&self) -> impl Iterator<Item = &Session> {
        self.slots.iter().flatten()
    }

    /// Sessions that ended since the last call.
    pub fn take_finished(&mut self) -> Vec<FinishedSession> {
        std::mem::take(&mut self.finished)
    }

    /// Close every interval ending at `now`: one line per running session
    /// past its handshake.
    pub fn sample(&mut self, now: Time) -> Vec<SessionInterval> {
        let mut out = Vec::new();
        for s in self.slots.iter_mut().flatten() {
            if s.connected.is_none() {
                continue;
            }
            let bytes = s.bytes();
            let iv = s.record.sample(now, &s.conn, bytes);
            let line = interval_line(&s.record.name, s.side(), &iv);
            out.push(SessionInterval {
                number: s.number,
                interval: iv,
                line,
            });
        }
        out
    }

    /// End every session now (Ctrl-C): the reports of those past their
    /// handshake go to `take_finished`.
    pub fn end_all(&mut self, now: Time) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].is_some() {
                self.end_session(slot, now, End::Stopped);
            }
        }
    }

    fn mark_ready(&mut self, slot: usize) {
        if !self.in_ready[slot] {
            self.in_ready[slot] = true;
            self.ready.push_back(slot);
        }
    }

    /// After the session's connection moved: note a completed handshake,
    /// end a finished session, or set its timer (the connection's, and
    /// before the handshake completes, the handshake deadline).
    fn refresh(&mut self, slot: usize, now: Time) {
        let Some(s) = self.slots[slot].as_mut() else {
            return;
        };
        if s.refused && s.connected.is_none() && s.conn.is_established() {
            // Closing: no longer established, so this happens once.
            s.conn.close(now, REFUSED);
        } else if s.connected.is_none() && s.conn.is_established() {
            s.connected = Some(now);
            s.number = self.next_number;
            self.next_number += 1;
            // Its report starts now that it is a session; the handshake's
            // observations (no data) are left out.
            s.record = FlowRecord::new(format!("session-{}", s.number), s.side(), s.accepted);
            s.record.observe(&s.conn);
            self.stats.sessions_connected += 1;
            self.connected_now += 1;
            self.connected.push((s.number, s.peer));
        }
        if s.conn.is_done() {
            self.end_session(slot, now, End::Closed);
            return;
        }
        let mut t = s.conn.poll_timeout();
        if let Some(w) = s.io.wake {
            t = Some(t.map_or(w, |t| t.min(w)));
        }
        if s.connected.is_none() {
            let by = s.accepted + self.cfg.handshake_timeout;
            t = Some(t.map_or(by, |t| t.min(by)));
        }
        self.timers.set(slot, t);
    }

    fn end_session(&mut self, slot: usize, now: Time, why: End) {
        let Some(s) = self.slots[slot].take() else {
            return;
        };
        self.by_cid.remove(&s.conn.local_cid());
        self.timers.set(slot, None);
        self.free.push(slot);
        let key = source_key(s.peer.ip());
        if let Some(n) = self.per_source.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&key);
            }
        }
        if s.connected.is_none() {
            // Never a session: counted, not reported.
            match why {
                End::HandshakeTimeout => self.stats.handshake_timeouts += 1,
                End::Closed | End::Stopped => self.stats.handshakes_abandoned += 1,
            }
            return;
        }
        self.connected_now -= 1;
        self.stats.sessions_ended += 1;
        let mut series = SeriesColumns::default();
        s.record.series_into(&mut series);
        self.finished.push(FinishedSession {
            number: s.number,
            peer: s.peer,
            start: s.record.start(),
            end: now,
            summary: s.summary(now),
            series,
        });
    }

    fn respond(&mut self, to: SocketAddr, answered: usize, fill: impl FnOnce(&mut [u8]) -> usize) {
        if self.responses.len() >= RESPONSE_SLOTS {
            self.stats.responses_dropped += 1;
            return;
        }
        let mut r = Response {
            buf: [0; RESPONSE_LEN],
            len: 0,
            to,
        };
        r.len = fill(&mut r.buf);
        if r.len == 0 {
            return;
        }
        // Never more than what it answers (it answers >= 1200 bytes).
        debug_assert!(r.len <= answered);
        self.stats.stateless_bytes_sent += r.len as u64;
        self.stats.stateless_bytes_answered += answered as u64;
        self.responses.push_back(r);
    }

    /// A long-header datagram for no session.
    fn on_stateless(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        let (packet, _) = match Packet::decode(data, CID_LEN) {
            Ok(p) => p,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let Header::Long(h) = *packet.header() else {
            self.stats.unknown_connection += 1;
            return;
        };
        let LongType::Initial { token } = h.ty else {
            self.stats.unknown_connection += 1;
            return;
        };
        debug_assert_eq!(packet.packet_type(), PacketType::Initial);
        // §7.2: a client's first DCID is at least 8 bytes; l4slab issues 8.
        if h.dcid.len() != CID_LEN || h.scid.len() != CID_LEN {
            self.stats.malformed += 1;
            return;
        }
        // §14.1: "A server MUST discard an Initial packet that is carried in
        // a UDP datagram with a payload that is smaller than ... 1200 bytes."
        if data.len() < MIN_INITIAL_DATAGRAM {
            self.stats.initial_too_small += 1;
            return;
        }
        let dcid: [u8; CID_LEN] = h.dcid.try_into().expect("checked");
        if token.is_empty() {
            // §8.1.2: "the server can request that the client validate its
            // address ... by sending a Retry packet containing a token".
            let retry_cid = self.keys.connection_id();
            let tok = self.keys.issue(from, now, &dcid, &retry_cid);
            let scid = h.scid;
            let before = self.stats.responses_dropped;
            self.respond(from, data.len(), |buf| {
                RetryPacket {
                    dcid: scid,
                    scid: &retry_cid,
                    token: &tok,
                }
                .encode(&dcid, buf)
                .unwrap_or(0)
            });
            if self.stats.responses_dropped == before {
                self.stats.retries_sent += 1;
            }
            return;
        }
        let odcid = match self.keys.validate(token, from, now, &dcid) {
            Ok(o) => o,
            Err(TokenError::Expired) => {
                self.stats.expired_tokens += 1;
                return;
            }
            Err(_) => {
                self.stats.invalid_tokens += 1;
                return;
            }
        };
        let source = source_key(from.ip());
        if self.per_source.get(&source).copied().unwrap_or(0) >= self.cfg.max_sessions_per_address {
            self.stats.sessions_refused_per_address += 1;
            self.last_refused = Some(from);
            return;
        }
        let Some(slot) = self.free.pop() else {
            self.stats.sessions_refused += 1;
            self.last_refused = Some(from);
            return;
        };
        let cfg = ConnectionConfig {
            seed: self.keys.seed(),
            idle_timeout: self.cfg.idle_timeout,
            max_streams_bidi: self.cfg.max_streams,
            accept_app_request: true,
            ..self.cfg.conn.clone()
        };
        let Ok(mut conn) = Connection::server_after_retry(cfg.clone(), now, dcid, odcid) else {
            self.free.push(slot);
            self.stats.rejected_initials += 1;
            return;
        };
        conn.handle_datagram(now, from, data, ecn);
        if conn.stats().packets_received == 0 {
            // The token was good but the packet was not (its frames, its
            // size): nothing is kept.
            self.free.push(slot);
            self.stats.rejected_initials += 1;
            return;
        }
        let (mut sending, mut refused) = (None, false);
        if let Some(bytes) = conn.peer_app_request() {
            match Request::decode(&bytes) {
                Ok(req) if req.reverse => {
                    // The client's controller sends from here: a connection
                    // built for it, given the same first Initial.
                    let sender = ConnectionConfig {
                        idle_timeout: cfg.idle_timeout,
                        max_streams_bidi: cfg.max_streams_bidi,
                        accept_app_request: true,
                        ..req.sender_config(cfg.seed)
                    };
                    match Connection::server_after_retry(sender, now, dcid, odcid) {
                        Ok(mut c) => {
                            c.handle_datagram(now, from, data, ecn);
                            conn = c;
                            sending = Some(req);
                            self.stats.reverse_sessions += 1;
                        }
                        Err(_) => refused = true,
                    }
                }
                Ok(_) => {}
                Err(_) => refused = true,
            }
        }
        self.stats.requests_refused += u64::from(refused);
        self.stats.sessions_accepted += 1;
        let app = match &sending {
            Some(r) => Transfer::new(r.app, Role::Server),
            None => Transfer::new(QuicApp::Bulk, Role::Client),
        };
        let mut s = Session {
            number: 0,
            peer: from,
            accepted: now,
            connected: None,
            conn,
            app,
            // Replaced, with the session's number, when its handshake completes.
            record: FlowRecord::new(String::new(), Side::Receiver, now),
            sending,
            io: WakeIo::default(),
            refused,
        };
        s.pump(now);
        *self.per_source.entry(source).or_insert(0) += 1;
        self.by_cid.insert(dcid, slot);
        self.slots[slot] = Some(s);
        self.mark_ready(slot);
        self.refresh(slot, now);
    }
}

/// The Destination Connection ID of a datagram's first packet, if it can
/// be one of ours (8 bytes).
pub(crate) fn dcid_of(data: &[u8]) -> Option<[u8; CID_LEN]> {
    let first = *data.first()?;
    let cid = if first & 0x80 != 0 {
        // §17.2: first byte, Version (4), DCID Length (1), DCID.
        let len = usize::from(*data.get(5)?);
        if len != CID_LEN {
            return None;
        }
        data.get(6..6 + CID_LEN)?
    } else {
        // §17.3.1: first byte, DCID (its length is ours).
        data.get(1..1 + CID_LEN)?
    };
    cid.try_into().ok()
}

impl DatagramEndpoint for Server {
    fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        self.stats.datagrams += 1;
        if let Some(&slot) = dcid_of(data).and_then(|c| self.by_cid.get(&c)) {
            let s = self.slots[slot].as_mut().expect("mapped slots are live");
            s.conn.handle_datagram(now, from, data, ecn);
            s.pump(now);
            self.mark_ready(slot);
            self.refresh(slot, now);
            return;
        }
        match data.first() {
            Some(b) if b & 0x80 != 0 => self.on_stateless(now, from, data, ecn),
            Some(b) if b & 0x40 != 0 && data.len() > CID_LEN => self.stats.unknown_connection += 1,
            _ => self.stats.malformed += 1,
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        if let Some(r) = self.responses.pop_front() {
            buf[..r.len].copy_from_slice(&r.buf[..r.len]);
            return Some((r.len, r.to, Ecn::NotEct));
        }
        for _ in 0..self.ready.len() {
            let slot = self.ready.pop_front()?;
            let Some(s) = self.slots[slot].as_mut() else {
                self.in_ready[slot] = false;
                continue;
            };
            if let Some(out) = s.conn.poll_transmit(now, buf) {
                self.ready.push_back(slot);
                self.refresh(slot, now);
                return Some(out);
            }
            self.in_ready[slot] = false;
            self.refresh(slot, now);
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.timers.peek().map(|(t, _)| t)
    }

    fn handle_timeout(&mut self, now: Time) {
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        while let Some((t, slot)) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.set(slot, None);
            due.push(slot);
        }
        for &slot in &due {
            if let Some(s) = self.slots[slot].as_mut() {
                if s.connected.is_none() && now >= s.accepted + self.cfg.handshake_timeout {
                    self.end_session(slot, now, End::HandshakeTimeout);
                    continue;
                }
                if s.conn.poll_timeout().is_some_and(|t| t <= now) {
                    s.conn.handle_timeout(now);
                }
                s.pump(now);
                self.mark_ready(slot);
                self.refresh(slot, now);
            }
        }
        self.due = due;
    }

    fn is_done(&self) -> bool {
        // Sessions still in their handshake do not hold `--once` up.
        self.cfg
            .stop_after
            .is_some_and(|n| self.stats.sessions_ended >= n && self.connected_now == 0)
    }
}
