//! Per-connection counters, [`ConnectionStats`]; counted where the event
//! happens, once.

use std::fmt::Write as _;

use l4slab_core::Dur;

use super::ecn::EcnState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionStats {
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Datagrams or packets that did not decode, or whose frames did not.
    pub malformed: u64,
    /// Packets dropped: duplicate, no keys (discarded or not yet), wrong CID.
    pub dropped_packets: u64,
    /// Frames ignored for breaking a rule (flow control, final size, stream ID).
    pub protocol_violations: u64,
    pub packets_lost: u64,
    pub lost_by_packet_threshold: u64,
    pub lost_by_time_threshold: u64,
    /// Lost packets later acknowledged (§6.1's spurious losses).
    pub spurious_losses: u64,
    pub bytes_lost: u64,
    /// Stream and CRYPTO bytes sent again.
    pub retransmitted_bytes: u64,
    pub stream_bytes_sent: u64,
    pub stream_bytes_delivered: u64,
    pub pto_count: u64,
    pub persistent_congestion: u64,
    pub congestion_events_loss: u64,
    pub congestion_events_ce: u64,
    /// RTT samples taken (one per ACK newly acknowledging the largest
    /// packet it names, if ack-eliciting: RFC 9002 §5.1); `latest_rtt` is
    /// the last one.
    pub rtt_samples: u64,
    pub srtt: Dur,
    pub min_rtt: Dur,
    pub latest_rtt: Dur,
    pub cwnd: u64,
    pub ecn_state: EcnState,
    pub ect0_sent: u64,
    pub ect1_sent: u64,
    /// CE marks the peer reported (ACK_ECN).
    pub ce_reported: u64,
    /// Packets the peer reported with any ECN codepoint (ECT(0) + ECT(1) +
    /// CE increases of ACK_ECN): with `ce_reported`, the CE fraction.
    pub ecn_reported: u64,
    /// ECN marks on packets we received.
    pub ect0_received: u64,
    pub ect1_received: u64,
    pub ce_received: u64,
    /// Bytes the server sent and received before the client's address was
    /// validated (RFC 9000 §8.1).
    pub unvalidated_sent: u64,
    pub unvalidated_received: u64,
    /// From construction to the handshake completing (client: server flight
    /// processed; server: client Finished received).
    pub handshake_time: Option<Dur>,
    /// Client: Retry packets followed (0 or 1, RFC 9000 §17.2.5.2);
    /// server: 1 if its connection began with a valid Retry token.
    pub retries: u64,
    /// Client: Retry packets discarded (a second one, a bad integrity tag,
    /// an empty token, its own CID echoed: §17.2.5.2).
    pub retries_discarded: u64,
    /// Packets refused before being acknowledged because a stream's
    /// reassembly would exceed [`crate::connection::MAX_RECV_RANGES`] gaps.
    pub reassembly_refused: u64,
    pub zero_rtt_bytes_sent: u64,
    pub zero_rtt_bytes_accepted: u64,
}

impl Default for ConnectionStats {
    fn default() -> Self {
        ConnectionStats {
            datagrams_sent: 0,
            datagrams_received: 0,
            packets_sent: 0,
            packets_received: 0,
            bytes_sent: 0,
            bytes_received: 0,
            malformed: 0,
            dropped_packets: 0,
            protocol_violations: 0,
            packets_lost: 0,
            lost_by_packet_threshold: 0,
            lost_by_time_threshold: 0,
            spurious_losses: 0,
            bytes_lost: 0,
            retransmitted_bytes: 0,
            stream_bytes_sent: 0,
            stream_bytes_delivered: 0,
            pto_count: 0,
            persistent_congestion: 0,
            congestion_events_loss: 0,
            congestion_events_ce: 0,
            rtt_samples: 0,
            srtt: Dur::ZERO,
            min_rtt: Dur::ZERO,
            latest_rtt: Dur::ZERO,
            cwnd: 0,
            ecn_state: EcnState::Unknown,
            ect0_sent: 0,
            ect1_sent: 0,
            ce_reported: 0,
            ecn_reported: 0,
            ect0_received: 0,
            ect1_received: 0,
            ce_received: 0,
            unvalidated_sent: 0,
            unvalidated_received: 0,
            handshake_time: None,
            retries: 0,
            retries_discarded: 0,
            reassembly_refused: 0,
            zero_rtt_bytes_sent: 0,
            zero_rtt_bytes_accepted: 0,
        }
    }
}

impl ConnectionStats {
    /// A human-readable multi-line summary.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sent: {} datagrams, {} packets, {} bytes ({} stream bytes, {} retransmitted)",
            self.datagrams_sent,
            self.packets_sent,
            self.bytes_sent,
            self.stream_bytes_sent,
            self.retransmitted_bytes
        );
        let _ = writeln!(s, "received: {} datagrams, {} packets, {} bytes ({} stream bytes in order); malformed {}, dropped {}, violations {}",
            self.datagrams_received, self.packets_received, self.bytes_received, self.stream_bytes_delivered,
            self.malformed, self.dropped_packets, self.protocol_violations);
        let _ = writeln!(s, "lost: {} packets ({} by packet threshold, {} by time threshold), {} bytes, {} spurious; PTOs {}, persistent congestion {}",
            self.packets_lost, self.lost_by_packet_threshold, self.lost_by_time_threshold, self.bytes_lost,
            self.spurious_losses, self.pto_count, self.persistent_congestion);
        let _ = writeln!(
            s,
            "rtt: srtt {} min {} latest {}; cwnd {} B; congestion events: {} loss, {} CE",
            self.srtt,
            self.min_rtt,
            self.latest_rtt,
            self.cwnd,
            self.congestion_events_loss,
            self.congestion_events_ce
        );
        let _ = writeln!(
            s,
            "ecn: {} (sent ECT0 {} ECT1 {}, peer reported CE {}; received ECT0 {} ECT1 {} CE {})",
            self.ecn_state.name(),
            self.ect0_sent,
            self.ect1_sent,
            self.ce_reported,
            self.ect0_received,
            self.ect1_received,
            self.ce_received
        );
        let hs = self
            .handshake_time
            .map_or_else(|| "-".to_string(), |d| d.to_string());
        let _ = writeln!(
            s,
            "handshake: {hs}; 0-RTT bytes sent {} accepted {}",
            self.zero_rtt_bytes_sent, self.zero_rtt_bytes_accepted
        );
        s
    }
}
