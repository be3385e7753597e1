//! l4slab's QUIC-style transport, shared by the simulator and (later) real
//! UDP endpoints.
//!
//! "QUIC-style" means RFC 9000's packet and frame layouts and codes without
//! TLS: nothing is encrypted, but every packet ends in a 16-byte trailer the
//! size of an AEAD tag, so packet sizes on the wire are QUIC's.
//!
//! **In progress.** The wire format ([`wire`]: variable-length integers,
//! long and short headers, packet-number truncation, the RFC 9000 frames, a
//! packet view and builder) is in; the connection (handshake, streams, flow
//! control, loss recovery, congestion control glue) is not yet.

pub mod wire;
