//! Connection and loss-recovery states, with their legal edges.

use crate::prr::Prr;

/// Connection state (RFC 9293 §3.3.2, Figure 5), without RST and without
/// simultaneous open. TIME-WAIT has no 2*MSL timer (there is no port reuse in
/// a run): the endpoint stays there, still ACKing a retransmitted FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// A client before `connect` (or a connection fully closed).
    Closed,
    /// A server waiting for a SYN.
    Listen,
    SynSent,
    SynReceived,
    Established,
    /// We closed; our FIN is not acknowledged yet.
    FinWait1,
    /// Our FIN is acknowledged; the peer may still send.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; our FIN is not acknowledged yet.
    Closing,
    /// The peer closed first, then we did; our FIN is not acknowledged yet.
    LastAck,
    TimeWait,
}

impl ConnState {
    /// RFC 9293 names.
    pub const fn name(self) -> &'static str {
        match self {
            ConnState::Closed => "CLOSED",
            ConnState::Listen => "LISTEN",
            ConnState::SynSent => "SYN-SENT",
            ConnState::SynReceived => "SYN-RECEIVED",
            ConnState::Established => "ESTABLISHED",
            ConnState::FinWait1 => "FIN-WAIT-1",
            ConnState::FinWait2 => "FIN-WAIT-2",
            ConnState::CloseWait => "CLOSE-WAIT",
            ConnState::Closing => "CLOSING",
            ConnState::LastAck => "LAST-ACK",
            ConnState::TimeWait => "TIME-WAIT",
        }
    }

    /// The RFC 9293 Figure 5 edges this model uses.
    pub(crate) fn can_become(self, next: ConnState) -> bool {
        use ConnState::*;
        matches!(
            (self, next),
            (Closed, SynSent)
                | (Listen, SynReceived)
                | (Listen, Closed)
                | (SynSent, Established)
                | (SynReceived, Established)
                | (Established, FinWait1)
                | (Established, CloseWait)
                | (FinWait1, FinWait2)
                | (FinWait1, Closing)
                | (FinWait2, TimeWait)
                | (CloseWait, LastAck)
                | (Closing, TimeWait)
                | (LastAck, Closed)
        )
    }

    /// Both initial sequence numbers are known (ESTABLISHED and after).
    pub fn synchronized(self) -> bool {
        !matches!(
            self,
            ConnState::Closed | ConnState::Listen | ConnState::SynSent | ConnState::SynReceived
        )
    }

    /// Data (or our FIN) may still be (re)transmitted.
    pub(crate) fn may_send_data(self) -> bool {
        matches!(
            self,
            ConnState::Established
                | ConnState::FinWait1
                | ConnState::CloseWait
                | ConnState::Closing
                | ConnState::LastAck
        )
    }
}

/// Loss-recovery state of the sending half (Linux `TCP_CA_Open`,
/// `TCP_CA_Recovery`, `TCP_CA_Loss`). `recover` is RFC 6582's recovery point
/// (RFC 6675 `RecoveryPoint`), kept as an *exclusive* end: `snd_nxt` when the
/// episode began; the episode ends when `snd_una >= recover`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recovery {
    Open,
    /// SACK/RACK-triggered fast recovery, with its PRR state (`None` if the
    /// controller has no `ssthresh`, e.g. BBR).
    Fast {
        recover: u64,
        prr: Option<Prr>,
    },
    /// After a retransmission timeout.
    Rto {
        recover: u64,
    },
}

impl Recovery {
    pub fn can_become(self, next: Recovery) -> bool {
        use Recovery::*;
        matches!(
            (self, next),
            (Open, Fast { .. })
                | (Open, Rto { .. })
                | (Fast { .. }, Rto { .. })
                | (Rto { .. }, Rto { .. })
                | (Fast { .. }, Open)
                | (Rto { .. }, Open)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges() {
        assert!(ConnState::Established.can_become(ConnState::FinWait1));
        assert!(!ConnState::Established.can_become(ConnState::SynSent));
        assert!(!ConnState::TimeWait.can_become(ConnState::Closed));
        let fast = |recover| Recovery::Fast { recover, prr: None };
        assert!(Recovery::Open.can_become(fast(1)));
        assert!(!fast(1).can_become(fast(2)));
        assert!(Recovery::Rto { recover: 1 }.can_become(Recovery::Rto { recover: 2 }));
    }
}
