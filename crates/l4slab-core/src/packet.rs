//! The packet as queues and links see it.
//!
//! Payload and transport headers are not part of [`Packet`]: the owner (the
//! simulator's segment store, or the emulator's buffer pool) keeps them and
//! puts an opaque [`Packet::handle`] here. That keeps `Packet` small and `Copy`,
//! so queues move 40 bytes per packet and nothing allocates per packet.

use serde::{Deserialize, Serialize};

use crate::units::Time;

/// Identifies a transport flow (one connection) across the whole run.
pub type FlowId = u32;

/// Identifies a queue/link (for traces and drop accounting).
pub type QueueId = u16;

/// The two-bit ECN field of the IP header (RFC 3168 §5, RFC 9331 §4).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Ecn {
    /// `00`: not ECN-capable.
    #[default]
    NotEct,
    /// `01`: ECT(1), the L4S identifier (RFC 9331).
    Ect1,
    /// `10`: ECT(0), classic ECN-capable transport (RFC 3168).
    Ect0,
    /// `11`: Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The codepoint as the two IP header bits.
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// Decode the two low bits of `b` (e.g. the IPv4 TOS byte).
    pub const fn from_bits(b: u8) -> Ecn {
        match b & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// ECN-capable (ECT(0), ECT(1) or already CE): may be marked instead of dropped.
    pub const fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// RFC 9331 §5.1 classifier: ECT(1) or CE (the low bit set) identifies L4S.
    pub const fn is_l4s(self) -> bool {
        self.bits() & 1 == 1
    }

    /// Name as used in scenarios and results.
    pub const fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not_ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

/// What a qdisc or link sees of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Unique per run, assigned by the packet's creator.
    pub id: u64,
    pub flow: FlowId,
    /// Length on the wire (IP packet, headers included), in bytes.
    pub len: u32,
    pub ecn: Ecn,
    /// Set by the qdisc at enqueue; used for sojourn time.
    pub enqueued_at: Time,
    /// Opaque to queues and links: the owner's index of headers/payload.
    pub handle: u32,
}

impl Packet {
    pub fn new(id: u64, flow: FlowId, len: u32, ecn: Ecn) -> Self {
        Packet {
            id,
            flow,
            len,
            ecn,
            enqueued_at: Time::ZERO,
            handle: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_bits_round_trip_and_classify() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(e.bits()), e);
        }
        // RFC 9331: ECT(1) and CE go to L; ECT(0) and Not-ECT are classic.
        assert!(Ecn::Ect1.is_l4s() && Ecn::Ce.is_l4s());
        assert!(!Ecn::Ect0.is_l4s() && !Ecn::NotEct.is_l4s());
        assert!(Ecn::Ect0.is_ect() && !Ecn::NotEct.is_ect());
        // TOS 0xb9 has ECN bits 01.
        assert_eq!(Ecn::from_bits(0xb9), Ecn::Ect1);
    }

    #[test]
    fn packet_stays_small() {
        assert!(std::mem::size_of::<Packet>() <= 40);
    }
}
