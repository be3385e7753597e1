//! A sans-IO QUIC-style connection (RFC 9000 / 9002, no TLS) implementing
//! [`DatagramEndpoint`], so the simulator and the real UDP driver
//! (`l4slab-udp-driver`) both drive it.
//!
//! Files, one concern each:
//! * [`handshake`]: the TLS-less handshake state machine, its CRYPTO
//!   stand-in messages, transport parameters, 0-RTT tickets, key discard.
//! * [`spaces`]: the three packet number spaces and the sent-packet record.
//! * [`ack`]: what arrived and when to acknowledge it (§13.2).
//! * [`recovery`]: RFC 9002 loss detection, PTO, persistent congestion and
//!   the congestion-controller glue (l4slab-cc, shared with the TCP model).
//! * [`rtt`]: RFC 9002 §5. [`ecn`]: §13.4.2 validation. [`pacing`]: §7.7.
//! * [`streams`], [`flow_control`]: §2–§4. [`schedule`]: which stream
//!   sends next. [`send`], [`recv`]: building and parsing packets.
//!   [`stats`]: [`ConnectionStats`].
//!
//! Determinism: no clock, no global RNG; the same calls give the same bytes.
//! The only RNG is the controller's [`SimRng`] stream, derived from
//! [`ConnectionConfig::seed`].

pub mod ack;
pub mod ecn;
pub mod flow_control;
pub mod handshake;
pub mod pacing;
pub mod ranges;
mod recovery;
mod recv;
pub mod rtt;
pub mod schedule;
mod send;
pub mod spaces;
pub mod stats;
pub mod streams;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::SocketAddr;

use l4slab_cc::param::ParamValue;
use l4slab_cc::rate::RateEstimator;
use l4slab_cc::{CcOptions, CongestionControl, EcnCodepoint, LINUX_DEFAULT_CC};
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::state::Checked;
use l4slab_core::{Dur, Ecn, NullTracer, SimRng, Time};

pub use ecn::{EcnFailure, EcnState};
pub use handshake::{HandshakeState, ResumptionTicket, TransportParams, APP_REQUEST_LEN};
pub use stats::ConnectionStats;
pub use streams::StreamId;

use crate::params;
use ecn::EcnValidator;
use flow_control::{RecvWindow, SendCredit};
use pacing::{Pacer, Rule};
use rtt::RttEstimator;
use schedule::RoundRobin;
use spaces::PacketSpace;
use streams::Stream;

use crate::wire::PnSpace;

/// Length of the connection IDs l4slab issues.
pub const CID_LEN: usize = 8;

/// The most out-of-order ranges one stream's reassembly keeps: a packet
/// whose STREAM frame would open one more gap is refused unacknowledged
/// (and sent again by the peer). With 16 bytes a range, at most 16 KiB per
/// stream (plus the frames of one datagram). Loss-free reordering needs a
/// few; 1024 gaps is a 1.2 MB window of single-packet holes.
pub const MAX_RECV_RANGES: usize = 1024;

/// The longest Retry token a client accepts (a longer one discards the
/// Retry); l4slab's servers issue tokens of under 64 bytes.
pub const MAX_RETRY_TOKEN: usize = 256;

/// Connection parameters. Defaults follow RFC 9000/9002 (see
/// `docs/models/quic.md` for sources).
///
/// The congestion controller is `cc` (a name) with `cc_options` over its
/// defaults: [`ConnectionConfig::with_cc`] builds a config by name (checked),
/// [`ConnectionConfig::with_cc_options`] from the options the scenario
/// resolved (`cc = { kind = "cubic", beta = 0.8 }`), as the TCP model gets
/// them. Either way the controller is built with [`CcOptions::build`] in
/// QUIC's units: `max_datagram_size` bytes where TCP passes its MSS, and
/// `initial_window` datagrams where TCP passes segments.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionConfig {
    /// Any `l4slab_cc::CC_NAMES` entry: reno, cubic, dctcp, prague, bbr, bbr3.
    pub cc: String,
    /// The controller's options over its defaults (`None`: all defaults).
    /// Must be options of the controller `cc` names
    /// ([`ConfigError::CcMismatch`] otherwise). DCTCP's `ect1` defaults to
    /// true here (L4S DCTCP, Linux `dctcp_ect = 1`); one set in the options wins.
    pub cc_options: Option<CcOptions>,
    /// RFC 9000 §14: the smallest allowed maximum datagram size is 1200.
    pub max_datagram_size: usize,
    /// Initial congestion window in datagrams (at least 2, RFC 9002 §7.2
    /// kMinimumWindow); `None`: [`default_initial_window`], the RFC 9002
    /// §7.2 recommendation `min(10*mds, max(14720, 2*mds))` in whole
    /// datagrams. §7.2 makes that a SHOULD and App. B.1 calls
    /// kInitialWindow a "Default limit", so another value is allowed (as
    /// RFC 6928's 10 segments are for TCP); it is not capped at 14720 bytes.
    pub initial_window: Option<u64>,
    /// Send ECT (the controller's codepoint: ECT(1) for prague and dctcp,
    /// ECT(0) otherwise) and validate it (§13.4.2).
    pub ecn: bool,
    /// RFC 9000 §13.4.2 ECN validation (default true). `false` (only with
    /// `ecn`): mark every packet from the first and never stop, whatever the
    /// peer's ACK_ECN counts show — a non-conforming sender, kept only to
    /// demonstrate the failure (`l4slab send --no-ecn-validation`).
    pub ecn_validation: bool,
    /// RFC 9002 §7.7: pace at `1.25 * cwnd / smoothed_rtt` when the
    /// controller has no pacing rate of its own. Off: only a controller with
    /// its own rate (BBR) paces, as the TCP model's `pacing = false`.
    pub pacing: bool,
    /// Depth of the pacing token bucket in bytes (at least one datagram);
    /// `None`: the initial window, RFC 9002 §7.7 ("Senders SHOULD limit
    /// bursts to the initial congestion window"), as the simulator's flows
    /// use. A sender on a real clock (`l4slab send`) asks for 1.5 datagrams:
    /// Linux's EDT spacing, where a packet sent late lets its successor go
    /// at most half a gap early (`tcp_update_skb_after_send`, "OS jitter"),
    /// so two packets never leave closer than half a gap at the pacing rate
    /// (a 2-packet burst per delayed ACK otherwise, into DualPI2's 1 ms
    /// L-queue step) while a wake-up up to half a gap late loses nothing.
    pub pacing_burst: Option<u64>,
    /// A paced packet due within this of a wake-up goes with it (the bucket
    /// owes its tokens, so the rate is kept; `l4slab_cc::pacing::rfc9002`).
    /// Zero, the simulator's: exact spacing. A sender on a real clock
    /// (`l4slab send`/`serve`) uses a wake-up granularity, as user-space QUIC
    /// pacers do (Chromium's `kAlarmGranularity`, quic-go's
    /// `MinPacingDelay`), so that packets closer than a wake-up is worth
    /// leave in small bursts instead of a wake-up each.
    pub pacing_granularity: Dur,
    /// Send this codepoint (ECT(0) or ECT(1)) instead of the controller's;
    /// the controller's response to CE stays its own. `None`: the
    /// controller's.
    pub ecn_codepoint: Option<Ecn>,
    /// RFC 9000 §18.2: max_ack_delay default 25 ms (below 2^14 ms). Used for
    /// our own delayed ACKs and assumed for the peer.
    pub max_ack_delay: Dur,
    /// Acknowledge Application Data at once after this many ack-eliciting
    /// packets (RFC 9000 §13.2.2: 2); 1 acknowledges every one without delay.
    pub ack_eliciting_threshold: u32,
    /// §18.2 initial_max_data: connection receive window (bytes).
    pub max_data: u64,
    /// §18.2 initial_max_stream_data_bidi_*: per-stream receive window.
    pub max_stream_data: u64,
    /// Per-stream send buffer: `write` accepts at most this much unacked data.
    pub send_buffer: u64,
    /// §18.2 initial_max_streams_bidi: concurrent peer-initiated streams.
    pub max_streams_bidi: u64,
    /// §10.1 max_idle_timeout; the effective value is at least 3 PTOs.
    pub idle_timeout: Dur,
    /// Bytes of the certificate stand-in in the server's Handshake flight.
    pub certificate_len: usize,
    /// Server: the key its tickets carry; a client ticket matching it is
    /// accepted for 0-RTT.
    pub ticket_key: u64,
    /// Server: accept 0-RTT with a valid ticket.
    pub accept_zero_rtt: bool,
    /// Client: an application's request carried in the ClientHello (as an
    /// application's TLS extension or transport parameter would be, RFC 9000
    /// §18.1: `l4slab send -R`'s; [`handshake::APP_REQUEST_LEN`] opaque
    /// bytes). `None`: none, and the ClientHello is unchanged.
    pub app_request: Option<[u8; APP_REQUEST_LEN]>,
    /// Server: it understands application requests; its flight says it
    /// took the client's ([`Connection::app_request_accepted`]). A server
    /// without this (an older one) ignores the request and says nothing,
    /// so the client can tell it was not taken.
    pub accept_app_request: bool,
    /// Seed for the connection IDs and the controller's RNG stream.
    pub seed: u64,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            cc: LINUX_DEFAULT_CC.into(),
            cc_options: None,
            // The scenario keys' declared defaults (crate::params).
            max_datagram_size: params::MAX_DATAGRAM_SIZE.default.int() as usize,
            initial_window: None,
            ecn: true,
            ecn_validation: true,
            pacing: params::PACING.default.flag(),
            pacing_burst: None,
            pacing_granularity: Dur::ZERO,
            ecn_codepoint: None,
            max_ack_delay: params::MAX_ACK_DELAY.default.dur(),
            ack_eliciting_threshold: ack::ACK_ELICITING_THRESHOLD,
            max_data: 16 << 20,
            max_stream_data: 4 << 20,
            send_buffer: params::SEND_BUFFER.default.int() as u64,
            max_streams_bidi: 100,
            idle_timeout: Dur::from_secs(30),
            certificate_len: 1000,
            ticket_key: 0x4c34_534c_4142_0001,
            accept_zero_rtt: true,
            app_request: None,
            accept_app_request: false,
            seed: 1,
        }
    }
}

impl ConnectionConfig {
    /// The defaults with the controller `cc` (by name, with its defaults).
    ///
    /// # Errors
    /// [`ConfigError::UnknownCc`] for a name `l4slab-cc` does not have.
    pub fn with_cc(cc: &str) -> Result<Self, ConfigError> {
        let options = CcOptions::defaults(cc).ok_or_else(|| ConfigError::UnknownCc(cc.into()))?;
        Ok(Self::with_cc_options(options))
    }

    /// The defaults with the controller `options` name, and those options.
    pub fn with_cc_options(options: CcOptions) -> Self {
        ConnectionConfig {
            cc: options.name().into(),
            cc_options: Some(options),
            ..ConnectionConfig::default()
        }
    }

    /// The controller the connection builds: `cc_options`, else `cc`'s
    /// defaults, with QUIC's DCTCP default (ECT(1)) where the options leave it.
    ///
    /// # Errors
    /// [`ConfigError::UnknownCc`], [`ConfigError::CcMismatch`].
    pub fn controller(&self) -> Result<CcOptions, ConfigError> {
        let mut options = match &self.cc_options {
            Some(o) if o.name() != self.cc => {
                return Err(ConfigError::CcMismatch {
                    cc: self.cc.clone(),
                    options: o.name(),
                })
            }
            Some(o) => o.clone(),
            None => CcOptions::defaults(&self.cc)
                .ok_or_else(|| ConfigError::UnknownCc(self.cc.clone()))?,
        };
        if options.name() == "dctcp" && options.get("ect1").is_none() {
            // L4S DCTCP: ECT(1) (Linux dctcp_ect = 1) unless the options say.
            options.set("ect1", ParamValue::Flag(true));
        }
        Ok(options)
    }
}

/// RFC 9002 §7.2: "Endpoints SHOULD use an initial congestion window of ten
/// times the maximum datagram size (max_datagram_size), while limiting the
/// window to the larger of 14,720 bytes or twice the maximum datagram
/// size", in whole datagrams of `max_datagram_size` bytes: 10 up to 1472
/// bytes, fewer above (rounded down, so never above the byte limit), at
/// least 2.
pub fn default_initial_window(max_datagram_size: u64) -> u64 {
    (14_720 / max_datagram_size.max(1)).clamp(2, 10)
}

/// RFC 9000 §18.2: "Values of 2^14 or greater are invalid" (max_ack_delay, ms).
pub const MAX_ACK_DELAY_LIMIT: Dur = Dur::from_millis(1 << 14);

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("cc: {0:?} is not a congestion controller; use one of reno, cubic, dctcp, prague, bbr, bbr3")]
    UnknownCc(String),
    #[error("cc_options: options of {options}, but cc = {cc:?}; give the options of the controller cc names")]
    CcMismatch { cc: String, options: &'static str },
    #[error("max_datagram_size: {0} is outside 1200..=16383 (RFC 9000 §14: at least 1200)")]
    DatagramSize(usize),
    #[error("initial_window: {0} datagrams is below 2 (RFC 9002 §7.2 kMinimumWindow)")]
    InitialWindow(u64),
    #[error("max_ack_delay: {0} is not below 2^14 ms (RFC 9000 §18.2)")]
    MaxAckDelay(Dur),
    #[error("{0}: must be positive")]
    Zero(&'static str),
    #[error("ecn_codepoint: {0:?} is not ECT(0) or ECT(1)")]
    EcnCodepoint(Ecn),
}

/// What the application hears (see [`Connection::poll_event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Client: the server's flight was processed and Finished sent (1-RTT
    /// data may flow). Server: the client's Finished arrived.
    Connected,
    ZeroRttAccepted,
    /// The client's 0-RTT data will be sent again in 1-RTT packets.
    ZeroRttRejected,
    /// The peer opened a stream.
    StreamOpened(StreamId),
    /// Bytes that became readable in order on a stream (content not simulated).
    StreamData {
        id: StreamId,
        new_in_order_bytes: u64,
    },
    /// The peer's FIN and all data before it arrived.
    StreamFinished(StreamId),
    Closed(CloseReason),
}

/// Why the connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// [`Connection::close`] was called.
    Local { error_code: u64 },
    /// The peer sent CONNECTION_CLOSE.
    Peer { error_code: u64, application: bool },
    /// RFC 9000 §10.1.
    IdleTimeout,
}

/// Why a stream operation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("the peer's stream limit ({0} bidirectional streams) is reached")]
    StreamLimit(u64),
    #[error("the peer's limits are not known yet (no ticket and handshake not complete)")]
    LimitsUnknown,
    #[error("{0} does not exist (never opened, or closed)")]
    UnknownStream(StreamId),
    #[error("{0} is already finished")]
    Finished(StreamId),
    #[error("the connection is closing or closed")]
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// 0-RTT from this endpoint's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroRtt {
    None,
    /// Client: sending 0-RTT data, verdict pending.
    Sending,
    Accepted,
    Rejected,
}

/// One QUIC-style connection endpoint.
#[derive(Debug)]
pub struct Connection {
    cfg: ConnectionConfig,
    role: Role,
    state: Checked<HandshakeState>,
    start: Time,
    now: Time,
    local_cid: [u8; CID_LEN],
    peer_cid: [u8; CID_LEN],
    /// The client's first Destination CID (also accepted by the server).
    original_dcid: [u8; CID_LEN],
    /// Client: the token of the Retry it followed, carried in every later
    /// Initial (RFC 9000 §17.2.5.2); empty before (and without) a Retry.
    retry_token: Vec<u8>,
    /// Client: a Retry was processed (at most one, §17.2.5.2). Server: the
    /// connection was created for an Initial with a valid Retry token.
    retried: bool,
    peer_addr: Option<SocketAddr>,
    spaces: [PacketSpace; 3],
    /// Handshake keys installed (client: ServerHello processed).
    handshake_keys: bool,
    rtt: RttEstimator,
    /// When the first RTT sample was taken (§7.6.2).
    first_rtt_sample: Option<Time>,
    cc: Box<dyn CongestionControl>,
    /// Scalable CE response (AckEvent::ce_bytes) rather than a classic one.
    scalable_ecn: bool,
    rng: SimRng,
    tracer: NullTracer,
    pacer: Pacer,
    pacing_wakeup: Option<Time>,
    ecn: EcnValidator,
    rate: RateEstimator,
    pto_count: u32,
    /// RFC 9002 §7.3.2 congestion_recovery_start_time.
    recovery_start: Option<Time>,
    in_recovery: bool,
    ce_carry: u64,
    cwnd_limited: bool,
    /// An ACK was processed since the sender last had a chance to send:
    /// `cwnd_limited` is cleared at that chance (`poll_transmit`), not at the
    /// ACK, so ACKs read in one batch with no send between them (a thread
    /// that was not running while they queued, a driver's read batch) share
    /// the state the sender was in, as one stretch ACK would (Linux keeps
    /// `tp->is_cwnd_limited` for the window it was set in,
    /// `tcp_cwnd_validate`). One ACK per send chance, as in the simulator, is
    /// unchanged.
    cwnd_limited_stale: bool,
    /// Client: a Handshake packet of ours was acked (peer validated us).
    handshake_acked: bool,
    streams: BTreeMap<u64, Stream>,
    /// Streams that may send STREAM frames (`schedule.rs`).
    rr: RoundRobin,
    /// Streams held back by connection flow control only, until MAX_DATA.
    parked: Vec<u64>,
    /// Streams that may owe MAX_STREAM_DATA or STREAM_DATA_BLOCKED.
    ctrl_queue: BinaryHeap<Reverse<u64>>,
    /// Streams with written data never sent (for DATA_BLOCKED).
    unsent_streams: usize,
    /// The peer's parameters the schedule has seen (they raise every credit).
    sched_params: Option<TransportParams>,
    sched_scratch: Vec<u64>,
    next_local_stream: u64,
    /// The peer's MAX_STREAMS for our bidirectional streams.
    peer_max_streams: u64,
    /// Our MAX_STREAMS for the peer's.
    local_max_streams: u64,
    max_streams_pending: bool,
    /// Peer-initiated streams seen (index of the next new one).
    peer_streams_opened: u64,
    conn_credit: SendCredit,
    conn_window: RecvWindow,
    peer_params: Option<TransportParams>,
    /// Server: the request the client's ClientHello carried.
    peer_app_request: Option<[u8; APP_REQUEST_LEN]>,
    /// Client: the server's flight said it took our request.
    app_request_accepted: bool,
    /// Client: the ticket it was built with, then the one the server sent.
    ticket: Option<ResumptionTicket>,
    zero_rtt: ZeroRtt,
    handshake_done_pending: bool,
    new_token_pending: bool,
    address_validated: bool,
    amp_received: u64,
    amp_sent: u64,
    close: Option<CloseReason>,
    close_pending: bool,
    closing_until: Option<Time>,
    idle_deadline: Time,
    /// No ack-eliciting packet sent since the last one received (§10.1).
    idle_restart_on_send: bool,
    events: VecDeque<Event>,
    done: bool,
    stats: ConnectionStats,
}

fn cid(seed: u64, label: &str) -> [u8; CID_LEN] {
    SimRng::derive(seed, label).next_u64().to_be_bytes()
}

impl Connection {
    /// A client talking to `server`. With `ticket` (from an earlier
    /// connection's [`Connection::resumption_ticket`]) it sends 0-RTT data
    /// written before the handshake completes in its first flight.
    pub fn client(
        cfg: ConnectionConfig,
        now: Time,
        server: SocketAddr,
        ticket: Option<ResumptionTicket>,
    ) -> Result<Self, ConfigError> {
        let mut c = Self::new(cfg, now, Role::Client)?;
        c.peer_addr = Some(server);
        c.original_dcid = cid(c.cfg.seed, "quic.client.odcid");
        c.peer_cid = c.original_dcid;
        c.address_validated = true;
        if let Some(t) = ticket {
            // RFC 9000 §7.4.1: 0-RTT uses the remembered transport parameters.
            c.apply_peer_params(t.params);
            c.zero_rtt = ZeroRtt::Sending;
            c.ticket = Some(t);
        }
        c.start_client_handshake();
        Ok(c)
    }

    /// A server; it learns its peer from the first datagram.
    pub fn server(cfg: ConnectionConfig, now: Time) -> Result<Self, ConfigError> {
        Self::new(cfg, now, Role::Server)
    }

    /// A server for a client whose Initial carried a valid Retry token
    /// (checked by the caller, e.g. a server demultiplexer): `local_cid` is
    /// the Source Connection ID of the Retry (the Destination CID of that
    /// Initial) and stays this connection's ID; `original_dcid` is the
    /// client's first Destination CID, which the token recovered.
    ///
    /// RFC 9000 §8.1.2: the token lets the server validate the client's
    /// address before the handshake, so the 3x anti-amplification limit
    /// of §8.1 no longer applies ("Prior to validating the client address,
    /// servers MUST NOT send more than three times as many bytes").
    pub fn server_after_retry(
        cfg: ConnectionConfig,
        now: Time,
        local_cid: [u8; CID_LEN],
        original_dcid: [u8; CID_LEN],
    ) -> Result<Self, ConfigError> {
        let mut c = Self::new(cfg, now, Role::Server)?;
        c.local_cid = local_cid;
        c.original_dcid = original_dcid;
        c.retried = true;
        c.address_validated = true;
        Ok(c)
    }

    /// This endpoint's connection ID (what the peer's packets carry as
    /// their Destination Connection ID once it has switched to it).
    pub fn local_cid(&self) -> [u8; CID_LEN] {
        self.local_cid
    }

    /// Whether a Retry was followed (client) or validated the client's
    /// address (server).
    pub fn retried(&self) -> bool {
        self.retried
    }

    /// The peer's address (a server learns it from the first packet).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer_addr
    }

    /// Stream bytes acknowledged in order on `stream` (written and no longer
    /// unacknowledged): what the peer has surely received.
    pub fn acked_in_order(&self, stream: StreamId) -> Option<u64> {
        self.streams
            .get(&stream.0)
            .map(|s| s.send.written - s.send.unacked())
    }

    fn new(cfg: ConnectionConfig, now: Time, role: Role) -> Result<Self, ConfigError> {
        let mds = cfg.max_datagram_size;
        if !(1200..=16383).contains(&mds) {
            return Err(ConfigError::DatagramSize(mds));
        }
        let mds64 = mds as u64;
        // In datagrams: the controllers count windows in units of `mss`.
        let iw = cfg
            .initial_window
            .unwrap_or_else(|| default_initial_window(mds64));
        // RFC 9002 §7.2: "The RECOMMENDED value is 2 * max_datagram_size" (kMinimumWindow).
        if iw < 2 {
            return Err(ConfigError::InitialWindow(iw));
        }
        if cfg.max_ack_delay >= MAX_ACK_DELAY_LIMIT {
            return Err(ConfigError::MaxAckDelay(cfg.max_ack_delay));
        }
        for (v, name) in [
            (cfg.max_data, "max_data"),
            (cfg.max_stream_data, "max_stream_data"),
            (cfg.send_buffer, "send_buffer"),
            (cfg.max_streams_bidi, "max_streams_bidi"),
            (
                u64::from(cfg.ack_eliciting_threshold),
                "ack_eliciting_threshold",
            ),
        ] {
            if v == 0 {
                return Err(ConfigError::Zero(name));
            }
        }
        // The TCP model's construction (l4slab-sim setup.rs), in QUIC's
        // units: max_datagram_size where TCP passes the MSS, datagrams where
        // it passes segments (RFC 9002 §7.2 counts both windows in
        // max_datagram_size).
        let cc = cfg.controller()?.build(mds64, iw);
        let (codepoint, scalable) = match cc.ecn_codepoint() {
            EcnCodepoint::NotEct => (Ecn::Ect0, false),
            EcnCodepoint::Ect0 => (Ecn::Ect0, true),
            EcnCodepoint::Ect1 => (Ecn::Ect1, true),
        };
        let codepoint = match cfg.ecn_codepoint {
            None => codepoint,
            Some(c @ (Ecn::Ect0 | Ecn::Ect1)) => c,
            Some(c) => return Err(ConfigError::EcnCodepoint(c)),
        };
        let label = match role {
            Role::Client => "quic.client",
            Role::Server => "quic.server",
        };
        let conn = Connection {
            role,
            state: Checked::new(match role {
                Role::Client => HandshakeState::ClientHelloSent,
                Role::Server => HandshakeState::AwaitingClientHello,
            }),
            start: now,
            now,
            local_cid: cid(cfg.seed, label),
            peer_cid: [0; CID_LEN],
            original_dcid: [0; CID_LEN],
            retry_token: Vec::new(),
            retried: false,
            peer_addr: None,
            spaces: [
                PacketSpace::new(PnSpace::Initial),
                PacketSpace::new(PnSpace::Handshake),
                PacketSpace::new(PnSpace::ApplicationData),
            ],
            handshake_keys: false,
            rtt: RttEstimator::default(),
            first_rtt_sample: None,
            cc,
            scalable_ecn: scalable,
            rng: SimRng::derive(cfg.seed, label),
            tracer: NullTracer,
            pacer: Pacer::new(
                Rule::TokenBucket {
                    burst: cfg
                        .pacing_burst
                        .unwrap_or(iw.saturating_mul(mds64))
                        .max(mds64),
                    granularity: cfg.pacing_granularity,
                },
                now,
            ),
            pacing_wakeup: None,
            ecn: if cfg.ecn && !cfg.ecn_validation {
                EcnValidator::unvalidated(codepoint)
            } else {
                EcnValidator::new(cfg.ecn, codepoint)
            },
            rate: RateEstimator::default(),
            pto_count: 0,
            recovery_start: None,
            in_recovery: false,
            ce_carry: 0,
            cwnd_limited: false,
            cwnd_limited_stale: false,
            handshake_acked: false,
            streams: BTreeMap::new(),
            rr: RoundRobin::default(),
            parked: Vec::new(),
            ctrl_queue: BinaryHeap::new(),
            unsent_streams: 0,
            sched_params: None,
            sched_scratch: Vec::new(),
            next_local_stream: 0,
            peer_max_streams: 0,
            local_max_streams: cfg.max_streams_bidi,
            max_streams_pending: false,
            peer_streams_opened: 0,
            conn_credit: SendCredit::new(0),
            conn_window: RecvWindow::new(cfg.max_data),
            peer_params: None,
            peer_app_request: None,
            app_request_accepted: false,
            ticket: None,
            zero_rtt: ZeroRtt::None,
            handshake_done_pending: false,
            new_token_pending: false,
            address_validated: false,
            amp_received: 0,
            amp_sent: 0,
            close: None,
            close_pending: false,
            closing_until: None,
            idle_deadline: now + cfg.idle_timeout,
            idle_restart_on_send: true,
            events: VecDeque::new(),
            done: false,
            stats: ConnectionStats::default(),
            cfg,
        };
        Ok(conn)
    }

    // ------------------------------------------------------------ app API

    /// Open a bidirectional stream (§2.1 IDs: client 0, 4, 8...; server 1, 5...).
    pub fn open_stream(&mut self) -> Result<StreamId, StreamError> {
        if self.close.is_some() {
            return Err(StreamError::Closed);
        }
        let Some(p) = self.peer_params else {
            return Err(StreamError::LimitsUnknown);
        };
        if self.role == Role::Server && !self.is_established() {
            return Err(StreamError::LimitsUnknown);
        }
        // §4.6: "An endpoint MUST NOT open more streams than permitted by
        // the current stream limit set by its peer."
        if self.next_local_stream >= self.peer_max_streams {
            return Err(StreamError::StreamLimit(self.peer_max_streams));
        }
        let id = StreamId::bidi(self.role == Role::Client, self.next_local_stream);
        self.next_local_stream += 1;
        self.streams.insert(
            id.0,
            Stream::new(id, p.max_stream_data, self.cfg.max_stream_data),
        );
        Ok(id)
    }

    /// Queue `bytes` on `stream`; returns how many the send buffer accepted.
    pub fn write(&mut self, stream: StreamId, bytes: u64) -> Result<u64, StreamError> {
        if self.close.is_some() {
            return Err(StreamError::Closed);
        }
        let buf = self.cfg.send_buffer;
        let s = self.sending_stream(stream)?;
        let n = bytes.min(buf.saturating_sub(s.send.unacked()));
        s.send.written += n;
        self.sched_touch(stream.0);
        Ok(n)
    }

    /// No more data on `stream`: send FIN after what is written.
    pub fn finish(&mut self, stream: StreamId) -> Result<(), StreamError> {
        let s = self.sending_stream(stream)?;
        s.send.fin = true;
        s.send.fin_pending = true;
        self.sched_touch(stream.0);
        Ok(())
    }

    /// `stream`, if its sending part may still take data: RFC 9000 §3.1, a
    /// sending part that has sent its FIN ("Data Sent") takes no more.
    fn sending_stream(&mut self, stream: StreamId) -> Result<&mut Stream, StreamError> {
        let s = self
            .streams
            .get_mut(&stream.0)
            .ok_or(StreamError::UnknownStream(stream))?;
        if s.send.fin {
            return Err(StreamError::Finished(stream));
        }
        Ok(s)
    }

    /// Bytes written to `stream` and not yet acknowledged in order.
    pub fn unacked(&self, stream: StreamId) -> Option<u64> {
        self.streams.get(&stream.0).map(|s| s.send.unacked())
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Close gracefully: CONNECTION_CLOSE, then 3 PTOs of closing (§10.2).
    pub fn close(&mut self, now: Time, error_code: u64) {
        if self.close.is_some() {
            return;
        }
        let reason = CloseReason::Local { error_code };
        self.close = Some(reason);
        self.close_pending = true;
        self.closing_until = Some(now + self.rtt.pto_base() * 3);
        self.transition_to(HandshakeState::Closing);
        self.events.push_back(Event::Closed(reason));
    }

    // ------------------------------------------------------------ queries

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn state(&self) -> HandshakeState {
        self.state.get()
    }

    /// Application data may flow (client: handshake complete; server: confirmed).
    pub fn is_established(&self) -> bool {
        matches!(
            self.state.get(),
            HandshakeState::Complete | HandshakeState::Confirmed
        )
    }

    pub fn zero_rtt(&self) -> ZeroRtt {
        self.zero_rtt
    }

    /// Server: the application request the client's ClientHello carried
    /// ([`ConnectionConfig::app_request`]), once it arrived.
    pub fn peer_app_request(&self) -> Option<[u8; APP_REQUEST_LEN]> {
        self.peer_app_request
    }

    /// Client: the server said it took our application request (false
    /// before the handshake completes, and from a server that does not
    /// know requests).
    pub fn app_request_accepted(&self) -> bool {
        self.app_request_accepted
    }

    /// Client: the ticket the server issued (NEW_TOKEN), for a later 0-RTT.
    pub fn resumption_ticket(&self) -> Option<ResumptionTicket> {
        self.ticket.filter(|_| self.role == Role::Client)
    }

    pub fn ecn_state(&self) -> EcnState {
        self.ecn.state()
    }

    /// The sending window in bytes: the controller's, floored at RFC 9002
    /// §7.2 kMinimumWindow = 2 datagrams.
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd().max(2 * self.mds())
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.spaces.iter().map(|s| s.bytes_in_flight).sum()
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.rtt.has_sample().then(|| self.rtt.smoothed())
    }

    /// The latest RTT sample (RFC 9002 §5.1 `latest_rtt`) and how many
    /// samples the connection has taken: a caller that remembers the count
    /// sees each new sample once.
    pub fn latest_rtt(&self) -> (Dur, u64) {
        (self.rtt.latest(), self.stats.rtt_samples)
    }

    /// The rate the connection paces at (RFC 9002 §7.7: the controller's,
    /// else 1.25 · cwnd / srtt); `None` before the first RTT sample.
    pub fn pacing_rate(&self) -> Option<l4slab_core::Rate> {
        self.pacer.rate()
    }

    /// Counters, with the RTT, cwnd and ECN snapshot filled in.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        s.srtt = self.srtt().unwrap_or_default();
        s.min_rtt = self.rtt.min();
        s.latest_rtt = self.rtt.latest();
        s.cwnd = self.cwnd();
        s.ecn_state = self.ecn.state();
        s
    }

    /// Numbers drawn from the connection's seeded stream (its controller's:
    /// BBR's randomized cycle phase and ProbeRTT timing), for the run's
    /// `random_draws`. The connection IDs are derived from the seed too, but
    /// they only name the connection: nothing the connection does depends
    /// on their value, so they are not draws that can change a result.
    pub fn random_draws(&self) -> u64 {
        self.rng.draws()
    }

    /// [`ConnectionStats::report`] of [`Connection::stats`].
    pub fn report(&self) -> String {
        self.stats().report()
    }

    fn mds(&self) -> u64 {
        self.cfg.max_datagram_size as u64
    }

    fn ack_policy(&self) -> ack::AckPolicy {
        ack::AckPolicy {
            max_ack_delay: self.cfg.max_ack_delay,
            threshold: self.cfg.ack_eliciting_threshold,
        }
    }

    /// §10.1: "the effective value ... is ... at least three times the current PTO".
    fn idle_timeout(&self) -> Dur {
        self.cfg.idle_timeout.max(self.rtt.pto_base() * 3)
    }

    fn push_event(&mut self, ev: Event) {
        // Merge consecutive data events for one stream (bounded queue).
        if let (
            Event::StreamData {
                id,
                new_in_order_bytes: n,
            },
            Some(Event::StreamData {
                id: last,
                new_in_order_bytes: m,
            }),
        ) = (ev, self.events.back_mut())
        {
            if *last == id {
                *m += n;
                return;
            }
        }
        self.events.push_back(ev);
    }

    fn enter_draining(&mut self, now: Time, reason: CloseReason) {
        if self.close.is_none() {
            self.close = Some(reason);
            self.events.push_back(Event::Closed(reason));
        }
        if !matches!(
            self.state.get(),
            HandshakeState::Draining | HandshakeState::Closed
        ) {
            self.transition_to(HandshakeState::Draining);
            // §10.2.2: the draining state lasts "at least three times the current PTO".
            self.closing_until = Some(now + self.rtt.pto_base() * 3);
        }
    }

    fn terminate(&mut self) {
        if self.state.get() != HandshakeState::Closed {
            self.transition_to(HandshakeState::Closed);
        }
        self.done = true;
    }
}

impl DatagramEndpoint for Connection {
    fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        self.now = self.now.max(now);
        self.on_datagram(now, from, data, ecn);
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        self.now = self.now.max(now);
        if self.cwnd_limited_stale {
            // A chance to send after ACKs: whether the window limits is
            // found anew (send.rs congestion_allows).
            self.cwnd_limited_stale = false;
            self.cwnd_limited = false;
        }
        self.transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.done {
            return None;
        }
        if let Some(t) = self.closing_until {
            return Some(t);
        }
        let mut t = self.idle_deadline;
        let mut min = |x: Option<Time>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        min(self.loss_detection_timer());
        for s in &self.spaces {
            if !s.discarded {
                min(s.rx.deadline());
            }
        }
        min(self.pacing_wakeup);
        Some(t)
    }

    fn handle_late_timeout(&mut self, now: Time) {
        // A pacing wake-up noticed late: no catch-up burst beyond Linux's
        // quantum (pacing/rfc9002.rs). Real clocks only: the simulator's
        // timers are never late.
        if self.pacing_wakeup.is_some_and(|t| t < now) {
            self.pacer.on_late_wakeup(now, self.mds());
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        if self.done {
            return;
        }
        if let Some(until) = self.closing_until {
            if now >= until {
                self.terminate();
            }
            return;
        }
        if now >= self.idle_deadline {
            // §10.1: "the connection is silently closed and its state is discarded".
            self.close = Some(CloseReason::IdleTimeout);
            self.events
                .push_back(Event::Closed(CloseReason::IdleTimeout));
            self.terminate();
            return;
        }
        if self.pacing_wakeup.is_some_and(|t| t <= now) {
            self.pacing_wakeup = None;
        }
        if self.loss_detection_timer().is_some_and(|t| t <= now) {
            self.on_loss_detection_timeout(now);
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(cfg: ConnectionConfig) -> Result<Connection, ConfigError> {
        Connection::server(cfg, Time::ZERO)
    }

    #[test]
    fn the_default_initial_window_is_rfc_9002s_in_whole_datagrams() {
        // §7.2: min(10 * mds, max(14720, 2 * mds)) bytes.
        for (mds, datagrams) in [(1200, 10), (1472, 10), (1500, 9), (7360, 2), (16383, 2)] {
            assert_eq!(default_initial_window(mds), datagrams, "{mds}");
            let bytes = (10 * mds).min(14720.max(2 * mds));
            assert!(datagrams * mds <= bytes, "{mds}");
            let c = server(ConnectionConfig {
                max_datagram_size: mds as usize,
                ..ConnectionConfig::default()
            })
            .unwrap();
            assert_eq!(c.cwnd(), datagrams * mds, "{mds}");
        }
    }

    #[test]
    fn the_initial_window_is_in_datagrams_of_the_datagram_size() {
        let c = server(ConnectionConfig {
            initial_window: Some(32),
            max_datagram_size: 1472,
            ..ConnectionConfig::default()
        })
        .unwrap();
        assert_eq!(c.cwnd(), 32 * 1472);
        assert_eq!(
            server(ConnectionConfig {
                initial_window: Some(1),
                ..ConnectionConfig::default()
            })
            .unwrap_err(),
            ConfigError::InitialWindow(1)
        );
    }

    #[test]
    fn options_reach_the_controller_built_in_quic_units() {
        let beta = CcOptions::defaults("cubic")
            .unwrap()
            .with("beta", ParamValue::Num(0.5))
            .with("hystart", ParamValue::Flag(false));
        let cfg = ConnectionConfig {
            initial_window: Some(4),
            ..ConnectionConfig::with_cc_options(beta.clone())
        };
        assert_eq!(cfg.cc, "cubic");
        let c = server(cfg).unwrap();
        // Exactly what the TCP model builds, with the datagram size for the MSS.
        assert_eq!(
            format!("{:?}", c.cc()),
            format!("{:?}", beta.build(1200, 4))
        );
        assert_ne!(
            format!("{:?}", c.cc()),
            format!("{:?}", CcOptions::defaults("cubic").unwrap().build(1200, 4))
        );
    }

    #[test]
    fn a_config_by_name_is_checked_and_options_must_match_the_name() {
        assert_eq!(
            ConnectionConfig::with_cc("vegas").unwrap_err(),
            ConfigError::UnknownCc("vegas".into())
        );
        let by_name = ConnectionConfig::with_cc("bbr").unwrap();
        assert_eq!(server(by_name).unwrap().cc().name(), "bbr");
        // A struct literal by name, as before options existed.
        let literal = ConnectionConfig {
            cc: "reno".into(),
            ..ConnectionConfig::default()
        };
        assert_eq!(server(literal).unwrap().cc().name(), "reno");
        let mismatch = ConnectionConfig {
            cc: "reno".into(),
            ..ConnectionConfig::with_cc_options(CcOptions::defaults("cubic").unwrap())
        };
        assert_eq!(
            server(mismatch).unwrap_err(),
            ConfigError::CcMismatch {
                cc: "reno".into(),
                options: "cubic"
            }
        );
    }

    #[test]
    fn dctcp_sends_ect1_unless_its_options_say_otherwise() {
        let dctcp = |ect1| {
            let mut o = CcOptions::defaults("dctcp").unwrap();
            if let Some(on) = ect1 {
                o.set("ect1", ParamValue::Flag(on));
            }
            server(ConnectionConfig::with_cc_options(o))
                .unwrap()
                .cc()
                .ecn_codepoint()
        };
        assert_eq!(dctcp(None), EcnCodepoint::Ect1);
        assert_eq!(dctcp(Some(true)), EcnCodepoint::Ect1);
        assert_eq!(dctcp(Some(false)), EcnCodepoint::Ect0);
    }

    #[test]
    fn max_ack_delay_and_the_ack_threshold_are_checked() {
        let bad = ConnectionConfig {
            max_ack_delay: MAX_ACK_DELAY_LIMIT,
            ..ConnectionConfig::default()
        };
        assert_eq!(
            server(bad).unwrap_err(),
            ConfigError::MaxAckDelay(MAX_ACK_DELAY_LIMIT)
        );
        let zero = ConnectionConfig {
            ack_eliciting_threshold: 0,
            ..ConnectionConfig::default()
        };
        assert_eq!(
            server(zero).unwrap_err(),
            ConfigError::Zero("ack_eliciting_threshold")
        );
    }
}
