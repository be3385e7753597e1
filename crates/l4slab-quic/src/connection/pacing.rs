//! Pacing, RFC 9002 §7.7 (quinn-proto's `connection/pacing.rs`): the one
//! pacer of both transports, `l4slab_cc::pacing::Pacer`, with the token
//! bucket rule (`l4slab_cc::pacing::rfc9002`).

pub use l4slab_cc::pacing::rfc9002::rate_for;
pub use l4slab_cc::pacing::{Pacer, Rule};
