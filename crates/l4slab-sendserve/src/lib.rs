//! l4slab-sendserve: real endpoints over UDP, `l4slab send` and `l4slab
//! serve` (docs/send.md). Nothing here is a second implementation: the
//! connection is l4slab-quic's [`l4slab_quic::Connection`], the data comes
//! from l4slab-app's [`l4slab_app::quic::Transfer`] (bulk, file, frames),
//! the real-time loop is l4slab-udp-driver's [`l4slab_udp_driver::Driver`] — the same
//! code the simulator runs, with a real socket and the wall clock.
//!
//! * [`client`]: the client (the sender, or with `-R` the receiver).
//! * [`parallel`]: `-P N`: N clients on one socket.
//! * [`request`]: what `-R` asks of the server, carried in the ClientHello.
//! * [`server`]: the server demultiplexer: many sessions on one socket,
//!   stateless Retry address validation, bounds, counters.
//! * [`token`]: the Retry tokens (a keyed MAC).
//! * [`heap`]: the server's per-session timer heap.
//! * [`notice`]: the server's rate-limited lines about refused sessions.
//! * [`record`]: a connection's snapshots for the flow recorder
//!   (`l4slab_bottleneck::flow`: series, the summary's flow entry), live lines.
//! * [`run`]: option parsing and `serve`'s run loop.
//! * [`send`]: `send`'s run loop.
//!
//! **Clock.** Like l4slab-udp-driver, this crate runs in real time: the driver's
//! `CLOCK_MONOTONIC`; no simulated component is given anything else.

pub mod client;
pub mod heap;
pub mod notice;
pub mod parallel;
pub mod record;
pub mod request;
pub mod run;
pub mod send;
pub mod server;
pub mod token;

pub use run::{
    parse_app, resolve, run_serve, InputError, Observer, RunError, SendOptions, ServeOptions,
    Stdout, DEFAULT_PORT,
};
pub use send::run_send;
