//! RTP packets as the media apps send them: sizes on the wire and what the
//! receiver reads from each (RFC 3550 §5.1 fixed header; the transport-wide
//! sequence number of draft-holmer-rmcat-transport-wide-cc-extensions-01 in a
//! one-byte header extension, RFC 8285).
//!
//! The simulator does not carry header bytes: a packet's [`RtpHeader`] stays
//! with the sending session, indexed by the packet's transport-wide sequence
//! number, and the receiving session reads it from there when the packet
//! arrives — what a real receiver parses from the header. Sizes on the wire
//! are the real ones.

use l4slab_core::Time;

use crate::playout::MediaPacket;

/// IPv4 (20 B) + UDP (8 B).
pub const IP_UDP_BYTES: u32 = 28;
/// RTP fixed header, RFC 3550 §5.1.
pub const RTP_FIXED_BYTES: u32 = 12;
/// One-byte header extension (RFC 8285 §4.2): 4 B profile header + the
/// transport-wide sequence number element (1 B id/len + 2 B), padded to 4.
pub const RTP_EXTENSION_BYTES: u32 = 8;
/// An RTX retransmission (RFC 4588 §4) carries the original sequence number
/// (OSN) in 2 B at the start of its payload.
pub const RTX_OSN_BYTES: u32 = 2;
/// Everything but the media payload of one packet.
pub const OVERHEAD_BYTES: u32 = IP_UDP_BYTES + RTP_FIXED_BYTES + RTP_EXTENSION_BYTES;
/// Largest packet on the wire: libwebrtc's default maximum packet size
/// (`kDefaultMaxPacketSize` = 1200 B of IP packet... here 1200 B of UDP
/// payload, the value WebRTC and QUIC stacks use to stay below any path MTU).
pub const MAX_PACKET_BYTES: u32 = 1200 + IP_UDP_BYTES;
/// Media payload per full packet.
pub const MAX_PAYLOAD_BYTES: u32 = MAX_PACKET_BYTES - OVERHEAD_BYTES - RTX_OSN_BYTES;

/// What one packet's headers say (RTP header, extension, payload descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    /// Transport-wide sequence number (the header extension): one per packet
    /// sent, retransmissions included.
    pub transport_seq: u64,
    /// The media packet: for a retransmission, the original's (RTX OSN).
    pub media: MediaPacket,
    /// An RTX retransmission (RFC 4588).
    pub retransmission: bool,
}

impl RtpHeader {
    /// Bytes on the wire.
    pub fn wire_bytes(&self) -> u32 {
        OVERHEAD_BYTES
            + self.media.payload
            + if self.retransmission {
                RTX_OSN_BYTES
            } else {
                0
            }
    }
}

/// Packets of a frame of `bytes` payload: how many, and the payload of
/// packet `i` (equal sizes, as libwebrtc's `RtpPacketizer::SplitAboutEqually`).
pub fn split(bytes: u32) -> (u32, impl Fn(u32) -> u32) {
    let n = bytes.div_ceil(MAX_PAYLOAD_BYTES).max(1);
    let base = bytes / n;
    let extra = bytes % n;
    (n, move |i: u32| base + u32::from(i < extra))
}

/// The capture time a receiver reads from the RTP timestamp: 90 kHz video
/// clock (RFC 3551 §5), so capture times are known to 1/90000 s.
pub fn rtp_clock(capture: Time) -> Time {
    let ticks = (capture.as_nanos() as u128 * 90_000 / 1_000_000_000) as u64;
    Time::from_nanos((ticks as u128 * 1_000_000_000 / 90_000) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_about_equally() {
        let (n, size) = split(3000);
        assert_eq!(n, 3);
        assert_eq!((0..n).map(&size).sum::<u32>(), 3000);
        assert!((0..n).all(|i| size(i) <= MAX_PAYLOAD_BYTES));
        let (n, size) = split(MAX_PAYLOAD_BYTES + 1);
        assert_eq!(n, 2);
        assert_eq!(size(0) + size(1), MAX_PAYLOAD_BYTES + 1);
        assert!(size(0).abs_diff(size(1)) <= 1);
        assert_eq!(split(0).0, 1);
    }

    #[test]
    fn the_rtp_clock_has_90_khz_resolution() {
        let t = Time::from_nanos(1_000_005);
        let r = rtp_clock(t);
        assert!(r <= t && t.as_nanos() - r.as_nanos() < 11_112);
    }
}
