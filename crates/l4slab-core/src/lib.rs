//! l4slab core: the vocabulary every other crate shares.
//!
//! * [`units`]: integer-nanosecond [`Time`]/[`Dur`], bits-per-second [`Rate`], [`Bytes`].
//! * [`packet`]: the [`Packet`] a qdisc or link sees, with its IP [`Ecn`] field.
//! * [`rng`]: [`SimRng`] streams derived from one root seed by a fixed hash.
//! * [`stats`]: [`stats::DurStats`], duration distributions for summaries.
//! * [`pkttrace`]: [`pkttrace::PacketTrace`], the per-packet trace columns of both backends.
//! * [`datagram`]: [`datagram::DatagramEndpoint`], the sans-IO shape of a datagram
//!   protocol that the UDP driver and the simulator both drive.
//! * [`trace`]: the one typed event channel ([`TraceEvent`], [`Tracer`]) and the
//!   typed [`DropReason`] / [`MarkReason`].
//! * [`state`]: [`state::Checked`] state machines, the one checked-transition helper
//!   of the congestion controls, TCP, QUIC and GCC.
//! * [`testing`]: for tests only — [`testing::TestPath`], a scripted two-ended
//!   network (delay, rate, loss, ECN) that every crate's tests share.
//!
//! No I/O — but [`param::docs_page`], the docs tests' reader of `docs/` — and no
//! clock: `now` is always passed in by the caller.
pub mod datagram;
pub mod packet;
pub mod param;
pub mod pkttrace;
pub mod rng;
pub mod series;
pub mod state;
pub mod stats;
pub mod testing;
pub mod trace;
pub mod units;

pub use packet::{Ecn, FlowId, Packet, QueueId};
pub use rng::SimRng;
pub use series::{Name, SeriesStore};
pub use trace::{DropReason, MarkReason, NullTracer, TraceEvent, Tracer, VecTracer};
pub use units::{Bytes, Dur, Rate, Time};
