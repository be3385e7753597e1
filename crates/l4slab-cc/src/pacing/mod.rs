//! Pacing, for both transports: the rate the controller asks for (or the
//! transport's default rate) turned into the release time of the next
//! packet, which the endpoint makes a timer.
//!
//! * [`linux`] — TCP (`l4slab-tcp`): Linux internal pacing
//!   (`tcp_update_skb_after_send`, `tcp_update_pacing_rate`): an earliest
//!   departure time advanced by each segment's `len / rate` (what `sch_fq`
//!   enforces for a socket's `skb->tstamp`), the first 10 segments unpaced,
//!   half a gap of credit for a late start; default rate 200 % / 120 % of
//!   `cwnd / srtt`.
//! * [`rfc9002`] — QUIC (`l4slab-quic`): RFC 9002 §7.7, a token bucket as
//!   deep as the initial window refilled at the pacing rate; default rate
//!   `1.25 · cwnd / smoothed_rtt`.
//!
//! Both transports depend on `l4slab-cc`, so the pacers live here together.
//! They stay two release rules because each transport follows its own
//! specification and the results depend on them: the same rate gives a
//! different departure sequence (a burst of 10 then strict gaps for TCP, a
//! burst of the bucket's depth then the refill for QUIC), so making one
//! use the other's rule would change every paced scenario's numbers.

pub mod linux;
pub mod rfc9002;
