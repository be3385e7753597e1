//! l4slab-tcp: a sans-IO, TCP-like endpoint and the applications that
//! drive it.
//!
//! The model (details and sources in `docs/models/transport.md`):
//! * 3-way handshake and FIN close (RFC 9293), absolute 64-bit sequence
//!   numbers, timestamps on every segment (RFC 7323), SACK (RFC 2018);
//! * receiver: reassembly, SACK blocks most recent first, delayed ACKs
//!   (RFC 5681 §4.2), window = receive buffer minus out-of-order bytes;
//! * sender: RFC 6675 scoreboard and `pipe`, loss by DupThresh (RFC 6675
//!   `IsLost`) and RACK (RFC 8985), NewReno episodes (RFC 6582) with
//!   Proportional Rate Reduction (RFC 6937), RTO
//!   (RFC 6298), delivery-rate samples (draft-cheng-iccrg-delivery-rate-
//!   estimation), pacing (`l4slab_cc::pacing::Pacer` with the Linux internal
//!   pacing rule, `l4slab_cc::pacing::linux`),
//!   send buffer with
//!   `TCP_NOTSENT_LOWAT`;
//! * the congestion controller ([`l4slab_cc::CongestionControl`]) owns cwnd
//!   and the pacing rate; the transport tells it about sends, ACKs, losses,
//!   timeouts and the end of recovery.
//!
//! * ECN (`ecn/`: negotiation, receiver, sender, validation;
//!   `docs/models/ecn.md`): classic RFC 3168 and AccECN
//!   (RFC 9768) negotiation and feedback, the IP-ECN codepoint from the
//!   controller, and the sender's validation of the path ([`EcnValidation`]:
//!   bleaching, re-marking, black holes) with Linux's fallbacks.
//!
//! * TCP Fast Open (`fastopen.rs`, RFC 7413): cookie request, data in the
//!   SYN accepted before the handshake completes, the fallback; the cookie
//!   cache is shared by a host pair's connections through
//!   [`EndpointCtx::fastopen`].
//!
//! Not yet: Nagle.

pub mod app;
pub mod config;
mod ecn;
mod endpoint;
pub mod fastopen;
mod prr;
mod rack;
mod receiver;
mod rtt;
mod scoreboard;
pub mod segment;
mod state;
mod stats;

pub use app::{App, AppIo, Bulk, EndpointIo, File, Sink, SocketInfo};
pub use config::{EcnMode, RtoFormula, TransportConfig, TransportConfigError};
pub use ecn::EcnValidation;
pub use endpoint::{AppEvent, Endpoint, EndpointCtx, Role};
pub use fastopen::{FastOpenCache, FastOpenCookie, FastOpenOption, FastOpenOutcome};
pub use l4slab_cc::rate::RateSample;
pub use segment::{AccEcnOption, Flags, SackBlock, Segment, Transmit};
pub use state::ConnState;
pub use stats::EndpointStats;
