//! Address-validation tokens for Retry (RFC 9000 §8.1.2–§8.1.4).
//!
//! A token is what a server puts in a Retry and gets back in the client's
//! next Initial, so that it can create connection state only for clients
//! that receive packets at the address they claim (§8.1: "the primary
//! defense against amplification attacks is verifying that a peer is able
//! to receive packets at the transport address that it claims").
//!
//! Layout ([`TOKEN_LEN`] = 33 bytes):
//!
//! ```text
//! version (1) = 1 | issued (8, ms on the server's clock) | original DCID (8)
//!   | MAC (16) over (client IP, client port, issued, original DCID, Retry SCID)
//! ```
//!
//! The MAC is SipHash-2-4 with 128-bit output (a keyed PRF designed as a
//! MAC for short inputs) under a key drawn at random when the server
//! starts ([`TokenKey::random`]): nobody without the key can make a token
//! that validates, and a token is worth nothing to another server process.
//! The MAC also covers the connection ID the Retry told the client to use
//! (the Destination CID of the Initial carrying the token), so the server
//! creates sessions only under IDs it chose itself.
//!
//! §8.1.4: "Tokens sent in Retry packets SHOULD include information that
//! allows the server to verify that the source IP address and port in
//! client packets remain constant", and §8.1.3 asks for a short lifetime
//! (default [`DEFAULT_LIFETIME`]). §17.2.5.1: the token carries the original
//! Destination Connection ID, which the server needs once the client has
//! moved to the Retry's. An IPv4 client seen through a dual-stack socket
//! (`::ffff:a.b.c.d`) is the same client as `a.b.c.d`.

use std::hash::Hasher;
use std::net::{IpAddr, SocketAddr};

use siphasher::sip128::{Hasher128, SipHasher24};

use l4slab_core::{Dur, Time};
use l4slab_quic::connection::CID_LEN;

/// Bytes of a token.
pub const TOKEN_LEN: usize = 1 + 8 + CID_LEN + MAC_LEN;
/// A Retry token is good for this long after it was issued.
pub const DEFAULT_LIFETIME: Dur = Dur::from_secs(10);

const MAC_LEN: usize = 16;
const VERSION: u8 = 1;

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a token of this layout (wrong length or version).
    #[error("not an l4slab token")]
    Malformed,
    /// The MAC does not match: made by someone else, for another address or
    /// port, another connection ID, or altered.
    #[error("the token's MAC does not match (another key, address, port or connection ID)")]
    Forged,
    /// Issued more than the lifetime ago (or, impossibly, in the future).
    #[error("the token expired")]
    Expired,
}

/// The server's secret and the rules its tokens follow.
#[derive(Clone)]
pub struct TokenKey {
    key: [u8; 16],
    /// Second key: connection IDs ([`TokenKey::connection_id`]).
    cid_key: [u8; 16],
    cid_counter: u64,
    lifetime: Dur,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKey")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl TokenKey {
    /// Keys drawn from the operating system's random source.
    ///
    /// # Errors
    /// If the random source fails.
    pub fn random(lifetime: Dur) -> Result<Self, getrandom::Error> {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k)?;
        let (a, b) = k.split_at(16);
        Ok(TokenKey::from_keys(
            a.try_into().expect("16"),
            b.try_into().expect("16"),
            lifetime,
        ))
    }

    /// Fixed keys (tests).
    pub fn from_keys(key: [u8; 16], cid_key: [u8; 16], lifetime: Dur) -> Self {
        TokenKey {
            key,
            cid_key,
            cid_counter: 0,
            lifetime,
        }
    }

    pub fn lifetime(&self) -> Dur {
        self.lifetime
    }

    /// A fresh connection ID: SipHash of a counter under the second key, so
    /// IDs are unique in practice and unpredictable without the key (64 bits
    /// of entropy; RFC 9000 §8.1 counts on such IDs).
    pub fn connection_id(&mut self) -> [u8; CID_LEN] {
        self.cid_counter += 1;
        let mut h = SipHasher24::new_with_key(&self.cid_key);
        h.write_u64(self.cid_counter);
        h.finish().to_be_bytes()
    }

    /// A random 64-bit value under the second key (a seed for a session).
    pub fn seed(&mut self) -> u64 {
        u64::from_be_bytes(self.connection_id())
    }

    fn mac(
        &self,
        peer: SocketAddr,
        issued_ms: u64,
        odcid: &[u8; CID_LEN],
        retry_scid: &[u8],
    ) -> [u8; MAC_LEN] {
        let mut h = SipHasher24::new_with_key(&self.key);
        match peer.ip().to_canonical() {
            IpAddr::V4(a) => {
                h.write_u8(4);
                h.write(&a.octets());
            }
            IpAddr::V6(a) => {
                h.write_u8(6);
                h.write(&a.octets());
            }
        }
        h.write_u16(peer.port());
        h.write_u64(issued_ms);
        h.write(odcid);
        h.write_u8(retry_scid.len() as u8);
        h.write(retry_scid);
        h.finish128().as_bytes()
    }

    /// The token for a client at `peer` whose first Initial went to
    /// `odcid`, told by the Retry to use `retry_scid`.
    pub fn issue(
        &self,
        peer: SocketAddr,
        now: Time,
        odcid: &[u8; CID_LEN],
        retry_scid: &[u8],
    ) -> [u8; TOKEN_LEN] {
        let issued = now.as_nanos() / 1_000_000;
        let mut t = [0u8; TOKEN_LEN];
        t[0] = VERSION;
        t[1..9].copy_from_slice(&issued.to_be_bytes());
        t[9..9 + CID_LEN].copy_from_slice(odcid);
        t[9 + CID_LEN..].copy_from_slice(&self.mac(peer, issued, odcid, retry_scid));
        t
    }

    /// Check `token` from a client at `peer` in an Initial sent to `dcid`;
    /// returns the original Destination Connection ID it carries.
    ///
    /// # Errors
    /// [`TokenError`] saying why it is refused.
    pub fn validate(
        &self,
        token: &[u8],
        peer: SocketAddr,
        now: Time,
        dcid: &[u8],
    ) -> Result<[u8; CID_LEN], TokenError> {
        if token.len() != TOKEN_LEN || token[0] != VERSION {
            return Err(TokenError::Malformed);
        }
        let issued = u64::from_be_bytes(token[1..9].try_into().expect("8"));
        let odcid: [u8; CID_LEN] = token[9..9 + CID_LEN].try_into().expect("CID_LEN");
        let mac = self.mac(peer, issued, &odcid, dcid);
        // Compared without an early exit, so the time taken says nothing
        // about how much of a forged MAC was right.
        let diff = mac
            .iter()
            .zip(&token[9 + CID_LEN..])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        if diff != 0 {
            return Err(TokenError::Forged);
        }
        let now_ms = now.as_nanos() / 1_000_000;
        let age = Dur::from_millis(now_ms.saturating_sub(issued));
        if issued > now_ms || age > self.lifetime {
            return Err(TokenError::Expired);
        }
        Ok(odcid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TokenKey {
        TokenKey::from_keys([1; 16], [2; 16], Dur::from_secs(10))
    }

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const ODCID: [u8; 8] = [9; 8];
    const SCID: [u8; 8] = [5; 8];

    #[test]
    fn a_token_validates_for_its_address_port_and_cid_until_it_expires() {
        let k = key();
        let t0 = Time::from_secs(100);
        let tok = k.issue(a("192.0.2.1:4433"), t0, &ODCID, &SCID);
        assert_eq!(tok.len(), TOKEN_LEN);
        assert_eq!(k.validate(&tok, a("192.0.2.1:4433"), t0, &SCID), Ok(ODCID));
        // The same client through a dual-stack socket.
        assert_eq!(
            k.validate(&tok, a("[::ffff:192.0.2.1]:4433"), t0, &SCID),
            Ok(ODCID)
        );
        let later = t0 + Dur::from_secs(10);
        assert_eq!(
            k.validate(&tok, a("192.0.2.1:4433"), later, &SCID),
            Ok(ODCID)
        );
        let too_late = later + Dur::from_millis(1);
        assert_eq!(
            k.validate(&tok, a("192.0.2.1:4433"), too_late, &SCID),
            Err(TokenError::Expired)
        );
        for (peer, cid) in [
            ("192.0.2.2:4433", SCID),
            ("192.0.2.1:4434", SCID),
            ("[2001:db8::1]:4433", SCID),
            ("192.0.2.1:4433", [6; 8]),
        ] {
            assert_eq!(
                k.validate(&tok, a(peer), t0, &cid),
                Err(TokenError::Forged),
                "{peer}"
            );
        }
    }

    #[test]
    fn another_key_or_any_changed_byte_is_refused() {
        let k = key();
        let t0 = Time::from_secs(1);
        let tok = k.issue(a("[::1]:5000"), t0, &ODCID, &SCID);
        let other = TokenKey::from_keys([3; 16], [2; 16], Dur::from_secs(10));
        assert_eq!(
            other.validate(&tok, a("[::1]:5000"), t0, &SCID),
            Err(TokenError::Forged)
        );
        for i in 0..TOKEN_LEN {
            let mut t = tok;
            t[i] ^= 1;
            let r = k.validate(&t, a("[::1]:5000"), t0, &SCID);
            assert!(r.is_err(), "byte {i}: {r:?}");
        }
        assert_eq!(
            k.validate(&tok[..TOKEN_LEN - 1], a("[::1]:5000"), t0, &SCID),
            Err(TokenError::Malformed)
        );
        assert_eq!(
            k.validate(&[], a("[::1]:5000"), t0, &SCID),
            Err(TokenError::Malformed)
        );
    }

    #[test]
    fn connection_ids_differ() {
        let mut k = key();
        let ids: std::collections::BTreeSet<_> = (0..1000).map(|_| k.connection_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
