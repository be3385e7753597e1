//! Pacing, RFC 9002 §7.7 (quinn-proto's `connection/pacing.rs`): the token
//! bucket lives in `l4slab_cc::pacing::rfc9002`, beside the TCP pacer.

pub use l4slab_cc::pacing::rfc9002::Pacer;
