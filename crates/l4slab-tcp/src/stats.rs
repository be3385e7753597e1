//! Public counters of one endpoint (both halves: sending and receiving).

use crate::config::EcnMode;
use crate::ecn::EcnValidation;
use crate::fastopen::FastOpenOutcome;

/// Counters (all monotonic), plus the negotiated ECN mode and the ECN
/// validation verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Segments handed to the network: data, SYN/FIN and pure ACKs.
    pub segments_sent: u64,
    /// Segments carrying payload or a FIN, retransmissions included.
    pub data_segments_sent: u64,
    /// Pure ACKs (no payload, no SYN/FIN).
    pub acks_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Wire bytes of everything sent (headers and options included).
    pub wire_bytes_sent: u64,
    /// Payload bytes sent again.
    pub bytes_retransmitted: u64,
    /// Retransmitted segments (data, FIN, and SYN or SYN/ACK after a timeout).
    pub retransmits: u64,
    /// Segments declared lost (SACK DupThresh, RACK or RTO); a lost
    /// retransmission counts again.
    pub lost_segments: u64,
    /// Retransmissions found unnecessary by the timestamp echo (Eifel,
    /// RFC 3522 §2): the cumulative ACK that covered the retransmitted
    /// segment echoed a time before the retransmission. A lower bound: a
    /// duplicate that arrives after the original is not detected (no D-SACK).
    pub spurious_retransmits: u64,
    /// Payload bytes the application wrote (accepted into the send buffer).
    pub bytes_written: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
    /// Receiving side: payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Segments received (all kinds).
    pub segments_received: u64,
    /// Retransmission timeouts (handshake ones included).
    pub rto_count: u64,
    /// Fast-recovery episodes entered (RFC 6675 §5 / RFC 6582).
    pub fast_recovery_episodes: u64,
    /// Tail loss probes sent (RFC 8985 §7; Linux `TCPLossProbes`).
    pub tlp_probes: u64,
    /// Losses the probe repaired, each answered by one reduction (Linux
    /// `TCPLossProbeRecovery`).
    pub tlp_recoveries: u64,
    /// D-SACK blocks received (RFC 2883; Linux `TCPDSACKRecv`).
    pub dsacks_received: u64,
    /// Window reductions undone as spurious (D-SACK, timestamps, F-RTO;
    /// Linux `TCPFullUndo + TCPDSACKUndo + TCPLossUndo + TCPSpuriousRTOs`).
    pub undos: u64,
    /// Of those, retransmission timeouts found spurious (Linux `TCPSpuriousRTOs`
    /// and `TCPLossUndo`).
    pub spurious_rtos: u64,
    /// RTT samples taken (RFC 7323 §4.2 timestamp echoes).
    pub rtt_samples: u64,
    /// What TCP Fast Open did in the handshake (RFC 7413; `crate::fastopen`).
    pub fastopen: FastOpenOutcome,
    /// Client: payload bytes sent in the SYN (RFC 7413 §4.2.2), whether or
    /// not the server took them (they are counted in `bytes_sent` too).
    pub syn_data_bytes_sent: u64,
    // ----- ECN (docs/models/ecn.md) -----
    /// Negotiated ECN mode (`Off` until the handshake completes).
    pub ecn_mode: EcnMode,
    /// Sender-side ECN validation verdict and the fallback taken.
    pub ecn_validation: EcnValidation,
    /// Receiving side: segments that arrived CE-marked (data and pure ACKs).
    pub ce_marks_received: u64,
    /// Receiving side: payload bytes that arrived CE / ECT(0) / ECT(1) /
    /// Not-ECT (the AccECN byte counters without their offsets).
    pub ce_bytes_received: u64,
    pub ect0_bytes_received: u64,
    pub ect1_bytes_received: u64,
    pub not_ect_bytes_received: u64,
    /// Sending side: payload bytes sent with ECT(0) / ECT(1), retransmissions included.
    pub ect0_bytes_sent: u64,
    pub ect1_bytes_sent: u64,
    /// Sending side: CE-marked packets fed back (AccECN `s.cep`, the ACE
    /// deltas after the RFC 9768 wrap safety; classic: packets acknowledged
    /// by ACKs carrying ECE).
    pub ce_packets_fed_back: u64,
    /// Sending side: CE-marked bytes passed to the controller in
    /// `AckEvent::ce_bytes`.
    pub ce_bytes_fed_back: u64,
    /// Sending side: byte-counter increases seen in AccECN options (RFC 9768
    /// §3.2.3), i.e. what the peer received as ECT(0) / ECT(1) / CE.
    pub fb_ect0_bytes: u64,
    pub fb_ect1_bytes: u64,
    pub fb_ce_bytes: u64,
    /// Sending side: `CongestionEvent::EcnEcho` reductions signalled (at most
    /// one per RTT, RFC 3168 §6.1.2).
    pub ecn_echo_events: u64,
}
