//! ECN for one endpoint: negotiation, feedback in both directions, and the
//! sender's validation of the path (`docs/models/ecn.md` has the full model,
//! the sources and the tests that pin each rule). One file per concern:
//!
//! * **Negotiation** (`negotiation.rs`) — RFC 3168 §6.1.1 (SYN ECE|CWR,
//!   SYN/ACK ECE) and RFC 9768 §3.1 (SYN AE|CWR|ECE; the SYN/ACK's ACE
//!   reflects the SYN's IP-ECN field, the third ACK the SYN/ACK's), with
//!   Linux's tables (`tcp_ecn_rcv_synack`, `tcp_accecn_reflector_flags`,
//!   `tcp_accecn_third_ack`) and its fallbacks: AccECN falls back to classic
//!   ECN with a classic peer, except for an L4S (ECT(1)) controller, which
//!   falls back to no ECN (`TCP_CONG_NO_FALLBACK_RFC3168`); a retransmitted
//!   SYN carries no ECN (RFC 3168 §6.1.1.1, `tcp_ecn_clear_syn`).
//! * **Receiver** (`receiver.rs`) — classic: ECE on every segment from a CE
//!   arrival until a CWR arrives (RFC 3168 §6.1.3, `tcp_ecn_accept_cwr`,
//!   `tcp_data_ecn_check`); AccECN: `r.cep` (CE packets, initial 5) in the ACE
//!   field of every segment, byte counters `r.e1b/r.ceb/r.e0b` (initial
//!   1/0/1) in the AccECN option on pure ACKs (and on data segments when they
//!   changed), an immediate ACK when the IP-ECN
//!   field changes or before the CE delta could wrap (6,
//!   `TCP_ACCECN_ACE_MAX_DELTA`).
//! * **Sender** (`sender.rs`) — the IP-ECN field of each segment; classic: ECE
//!   means every acknowledged byte was CE (`tcp_count_delivered`), CWR on the
//!   next new data after a reduction; AccECN: newly CE-marked packets from the
//!   mod-8 ACE delta with RFC 9768 §3.2.2.5's safety against wrapping
//!   (`__tcp_accecn_process`, including Linux's use of the option's `ceb` to
//!   tell), CE bytes from the option (else packets × MSS, reconciled when an
//!   option arrives).
//! * **Validation** (`validation.rs`, [`EcnValidation`]) — bleaching and
//!   re-marking from the handshake reflection and from the option's byte
//!   counters (RFC 9768 §3.2.2.3 / RFC 9000 §13.4.2.1 rules applied to bytes),
//!   an ECT black hole from an RTO before any ECT packet got through, the SYN
//!   fallback, SYN/ACK retransmissions (`TCP_ACCECN_ACE_FAIL_SEND`), the
//!   ACK-path black hole, and the fallbacks each verdict takes.
//!
//! **State machines.** Every mode is an enum implementing [`Machine`]
//! (`l4slab_core::state`, shared with the congestion controls, QUIC and
//! GCC), held in a [`Checked`] cell whose one `transition` asserts that the
//! edge is legal (a violation is a bug and panics); the change is kept in the
//! endpoint's [`Journal`]:
//! [`negotiation::Negotiation`] (pending → SYN fallback → agreed mode),
//! [`receiver::Echo`] (the classic ECE latch), [`validation::SendEct`] (ECT on,
//! black-hole probe, off), [`validation::Response`] (as the controller asks, or
//! the classic re-marking fallback), [`validation::AckEct`] (ECT pure ACKs, or
//! Not-ECT after the ACK-path black hole) and [`EcnValidation`] (the verdict).
//! The journal stands in for the tracer: most ECN entry points run without a
//! `now` or a tracer in reach, and `l4slab_core::TraceEvent` has no ECN
//! variant (adding one would change the recorder); it keeps the last
//! `JOURNAL_LEN` changes and a count, allocation-free.
//!
//! Not implemented: the AccECN option on SYN and SYN/ACK (Linux sends one on
//! the SYN/ACK), option order 0 (kind 172; we send and read order 1, as
//! Linux sends), the option on data segments (Linux in "full" mode shrinks the
//! MSS to carry it on every segment; here it rides on pure ACKs only, so data
//! segments stay at the MTU), ACE-zeroing detection beyond the handshake,
//! option-stripping detection, the 2^22-byte option demand, quick-ACK mode
//! (an immediate ACK stands for Linux's two quick ACKs), DCTCP's precise
//! classic-ECN receiver (RFC 8257 §3.2).
//!
//! Deviations from Linux (why: `docs/models/ecn.md`): the data-path black-hole
//! probe after an RTO and the ACK-path black-hole rule are ours (Linux has
//! only the SYN and SYN/ACK fallbacks); a re-marked handshake reflection is a
//! failure (Linux accepts it); a repeated ECN-less SYN turns the server's ECN
//! off; `ce_bytes` is capped at the ACK's `acked_bytes` (the rest carried);
//! controllers without a codepoint get classic `EcnEcho` instead of CE bytes.

mod negotiation;
mod receiver;
mod sender;
mod validation;

#[cfg(test)]
mod tests;

use l4slab_cc::EcnCodepoint;
#[cfg(test)]
pub(crate) use l4slab_core::state::JOURNAL_LEN;
pub(crate) use l4slab_core::state::{Checked, Journal, Machine};

use crate::config::{EcnMode, TransportConfig};

pub(crate) use sender::{Delivered, Kind};
pub use validation::EcnValidation;

/// RFC 9768 §3.2.2.1: `r.cep` starts at 5 (Linux `TCP_ACCECN_CEP_INIT_OFFSET`).
pub(crate) const CEP_INIT: u64 = 5;
/// RFC 9768 §3.2.1 / Linux `TCP_ACCECN_E1B_INIT_OFFSET`, `..._E0B_...`, `..._CEB_...`.
const E1B_INIT: u64 = 1;
const CEB_INIT: u64 = 0;
const E0B_INIT: u64 = 1;
/// 24-bit counters of the AccECN option (RFC 9768 §3.2.3).
const MASK24: u64 = (1 << 24) - 1;
/// ECN state of one endpoint (both halves), one part per concern. See the
/// module documentation.
#[derive(Debug)]
pub(crate) struct EcnState {
    /// `ecn_fallback`: take the fallbacks (Linux `tcp_ecn_fallback`).
    fallback: bool,
    /// `accecn_option`: send the AccECN option.
    send_option: bool,
    /// `ecn_codepoint`: overrides the controller's codepoint.
    override_cp: Option<EcnCodepoint>,
    hs: negotiation::Handshake,
    rx: receiver::Receiver,
    tx: sender::Sender,
    val: validation::Validation,
    journal: Journal,
}

impl EcnState {
    pub fn new(cfg: &TransportConfig) -> Self {
        EcnState {
            fallback: cfg.ecn_fallback,
            send_option: cfg.accecn_option,
            override_cp: cfg.ecn_codepoint,
            hs: negotiation::Handshake::new(cfg.ecn),
            rx: receiver::Receiver::default(),
            tx: sender::Sender::default(),
            val: validation::Validation::new(cfg.ecn),
            journal: Journal::default(),
        }
    }

    /// The negotiated mode (`Off` until decided).
    pub fn mode(&self) -> EcnMode {
        self.hs.negotiation.get().mode()
    }

    pub fn validation(&self) -> EcnValidation {
        self.val.verdict.get()
    }

    /// The state changes so far (tests; `Debug` output).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn journal(&self) -> &Journal {
        &self.journal
    }
}
