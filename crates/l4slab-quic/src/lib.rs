//! l4slab's QUIC-style transport, shared by the simulator and real UDP
//! endpoints (`l4slab-udp-driver` drives any `DatagramEndpoint`).
//!
//! "QUIC-style" means RFC 9000's packet and frame layouts and codes without
//! TLS: nothing is encrypted, but every packet ends in a 16-byte trailer the
//! size of an AEAD tag, so packet sizes on the wire are QUIC's.
//!
//! * [`wire`]: variable-length integers, long and short headers,
//!   packet-number truncation, the RFC 9000 frames, a packet view and builder.
//! * [`connection`]: a sans-IO [`Connection`] (client or server) implementing
//!   `l4slab_core::datagram::DatagramEndpoint`: a TLS-less handshake with
//!   realistic sizes, the 3× anti-amplification limit, 0-RTT resumption,
//!   three packet number spaces, the §13.2 ACK policy with ACK_ECN, RFC 9002
//!   loss detection / PTO / persistent congestion, any `l4slab-cc` controller
//!   (classic ECN as a congestion event, L4S CE feedback as the TCP model
//!   gives it), §13.4.2 ECN validation, pacing, bidirectional streams with
//!   flow control and no cross-stream head-of-line blocking.
//!
//! The model, its parameters and its deviations: `docs/models/quic.md`.

pub mod connection;
pub mod params;
pub mod wire;

pub use connection::{
    default_initial_window, CloseReason, ConfigError, Connection, ConnectionConfig,
    ConnectionStats, EcnFailure, EcnState, Event, HandshakeState, ResumptionTicket, StreamError,
    StreamId, TransportParams, APP_REQUEST_LEN, MAX_ACK_DELAY_LIMIT,
};
