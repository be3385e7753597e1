//! ECN path validation and its fallbacks (`docs/models/ecn.md`, "Validation
//! and fallbacks").
//!
//! Detection: bleaching and re-marking from the handshake reflection (RFC 9768
//! §3.1.5, Linux `tcp_accecn_validate_syn_feedback`) and from the option's
//! byte counters (RFC 9000 §13.4.2.1 applied to bytes); an ECT black hole
//! from a data RTO before any ECT packet got through (RFC 9000 §13.4.2.2, a
//! probe that the next ACK answers); the ACK-path black hole (ours). The
//! verdict is [`EcnValidation`]. Fallbacks, each a checked state machine:
//! [`SendEct`] (Not-ECT after bleaching or a black hole), [`Response`] (an L4S
//! sender turns classic after re-marking) and [`AckEct`] (Not-ECT pure ACKs).
//! The SYN and SYN/ACK fallbacks are in `negotiation.rs`.

use core::fmt;

use l4slab_cc::EcnCodepoint;
use l4slab_core::Ecn;

use super::negotiation::reflected;
use super::{Checked, Delivered, EcnState, Machine};
use crate::config::EcnMode;
use crate::stats::EndpointStats;

/// RFC 9000 §13.4.2: ECN is tested on the first 10 packets; once this many
/// ECT packets were delivered without a failure the path is `Capable`.
const TESTING_PACKETS: u64 = 10;

/// The sender's verdict on its ECN path, and the fallback it took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EcnValidation {
    /// ECN negotiated; too few ECT packets delivered yet to tell.
    #[default]
    Unknown,
    /// ECT packets get through and the feedback is consistent (10 ECT
    /// packets delivered without a failure, RFC 9000 §13.4.2).
    Capable,
    /// ECT arrives as Not-ECT (handshake reflection or byte counters). ECN is
    /// switched off for sending: Not-ECT packets, loss-based only.
    Bleached,
    /// ECT(1) arrives as ECT(0). An L4S sender falls back to classic
    /// behaviour: ECT(0) and one classic reduction per RTT
    /// ([`crate::Endpoint::fall_back_to_classic_ecn`]).
    Remarked,
    /// ECT packets are dropped (no ECT packet delivered before an RTO, or
    /// the ECN-setup SYN / ECT SYN/ACK timed out): retry without ECN.
    Blackholed,
    /// ECN was not negotiated (or given up during the handshake).
    NotNegotiated,
}

impl EcnValidation {
    /// Name in results: `unknown`, `capable`, `bleached`, `remarked`,
    /// `blackholed`, `not_negotiated`.
    pub const fn name(self) -> &'static str {
        match self {
            EcnValidation::Unknown => "unknown",
            EcnValidation::Capable => "capable",
            EcnValidation::Bleached => "bleached",
            EcnValidation::Remarked => "remarked",
            EcnValidation::Blackholed => "blackholed",
            EcnValidation::NotNegotiated => "not_negotiated",
        }
    }
}

impl Machine for EcnValidation {
    const NAME: &'static str = "validation";

    fn name(self) -> &'static str {
        EcnValidation::name(self)
    }

    /// Legal verdict changes: a verdict can only get worse, and the
    /// failures are final (a re-marked path can still turn out bleached).
    fn may_enter(self, next: EcnValidation) -> bool {
        use EcnValidation::*;
        matches!(
            (self, next),
            (
                Unknown,
                Capable | Bleached | Remarked | Blackholed | NotNegotiated
            ) | (Capable, Bleached | Remarked)
                | (Remarked, Bleached)
        )
    }
}

impl fmt::Display for EcnValidation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the sender sets ECT. Edges: `On` → `Probing` (a data RTO before
/// any ECT packet got through), `Probing` → `On` (the next ACK shows ECT got
/// through), `On | Probing` → `Off` (bleached, black hole, a third SYN/ACK, a
/// zero ACE completing the handshake). `Off` is final.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SendEct {
    /// ECT as negotiated ([`super::Kind`] decides which segments).
    #[default]
    On,
    /// Black-hole probe after an RTO: Not-ECT until an ACK tells whether ECT
    /// ever got through.
    Probing,
    /// Not-ECT, and CE feedback ignored (RFC 9768 §3.2.2.1).
    Off,
}

impl Machine for SendEct {
    const NAME: &'static str = "send_ect";

    fn name(self) -> &'static str {
        match self {
            SendEct::On => "on",
            SendEct::Probing => "probing",
            SendEct::Off => "off",
        }
    }

    fn may_enter(self, next: SendEct) -> bool {
        use SendEct::*;
        matches!(
            (self, next),
            (On, Probing) | (Probing, On) | (On | Probing, Off)
        )
    }
}

/// How the sender answers CE feedback and which ECT it sets. One edge:
/// `AsController` → `Classic` (re-marking detected, or asked for).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Response {
    /// The controller's codepoint and its kind of feedback.
    #[default]
    AsController,
    /// ECT(0) and the classic response: one `EcnEcho` per RTT, no CE bytes.
    Classic,
}

impl Machine for Response {
    const NAME: &'static str = "response";

    fn name(self) -> &'static str {
        match self {
            Response::AsController => "as_controller",
            Response::Classic => "classic",
        }
    }

    fn may_enter(self, next: Response) -> bool {
        (self, next) == (Response::AsController, Response::Classic)
    }
}

/// Whether the receiver's pure ACKs carry ECT. One edge: `On` → `Off` (the
/// ACK-path black hole).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum AckEct {
    #[default]
    On,
    /// Our ECT pure ACKs seem to be dropped: send them Not-ECT.
    Off,
}

impl Machine for AckEct {
    const NAME: &'static str = "ack_ect";

    fn name(self) -> &'static str {
        match self {
            AckEct::On => "on",
            AckEct::Off => "off",
        }
    }

    fn may_enter(self, next: AckEct) -> bool {
        (self, next) == (AckEct::On, AckEct::Off)
    }
}

/// The validation part of [`EcnState`]: the verdict and the fallbacks.
#[derive(Debug)]
pub(super) struct Validation {
    pub verdict: Checked<EcnValidation>,
    pub send_ect: Checked<SendEct>,
    pub response: Checked<Response>,
    pub ack_ect: Checked<AckEct>,
    /// End of the highest duplicate data received so far (0: none).
    pub dup_high: u64,
}

impl Validation {
    pub fn new(want: EcnMode) -> Self {
        Validation {
            verdict: Checked::new(if want == EcnMode::Off {
                EcnValidation::NotNegotiated
            } else {
                EcnValidation::Unknown
            }),
            send_ect: Checked::new(SendEct::On),
            response: Checked::new(Response::AsController),
            ack_ect: Checked::new(AckEct::On),
            dup_high: 0,
        }
    }

    pub fn ack_ect_on(&self) -> bool {
        self.ack_ect.get() == AckEct::On
    }
}

impl EcnState {
    /// RFC 9768 §3.1.5 / Linux `tcp_accecn_validate_syn_feedback`: compare
    /// the reflected IP-ECN field of our SYN (or SYN/ACK) with what we sent.
    /// ECT arriving as Not-ECT is bleaching; ECT(1) arriving as ECT(0) is
    /// re-marking (Linux accepts that as valid; we flag it, RFC 9000
    /// §13.4.2.1). Returns whether the reflection is a valid transition.
    pub(super) fn check_reflection(
        &mut self,
        ace: u8,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) -> bool {
        let (Some(got), sent) = (reflected(ace), self.hs.syn_ect_sent) else {
            return true;
        };
        if !sent.is_ect() {
            // We sent Not-ECT: nothing to learn (ECT or CE appearing is a
            // broken path; Linux fails it, we ignore it).
            return got == Ecn::NotEct;
        }
        if got == Ecn::NotEct {
            self.fail(EcnValidation::Bleached, cc, stats);
            return false;
        }
        if sent == Ecn::Ect1 && got == Ecn::Ect0 {
            self.fail(EcnValidation::Remarked, cc, stats);
        }
        true
    }

    /// Validation (RFC 9000 §13.4.2.1 applied to the option's byte counters,
    /// after `sender.rs` added an option's deltas): more ECT(0) bytes
    /// received than we ever sent as ECT(0) is re-marking; fewer ECT/CE bytes
    /// received than the ECT bytes acknowledged is bleaching.
    pub(super) fn check_counters(&mut self, cc: EcnCodepoint, stats: &mut EndpointStats) {
        if stats.fb_ect0_bytes > stats.ect0_bytes_sent {
            self.fail(EcnValidation::Remarked, cc, stats);
        }
        if self.tx.fb_total < self.tx.ect_delivered_bytes {
            self.fail(EcnValidation::Bleached, cc, stats);
        }
    }

    /// A data retransmission timeout: if ECT packets were sent and not one
    /// got through while still testing, suspect a black hole (RFC 9000
    /// §13.4.2.2: "all packets that were sent with an ECT codepoint are
    /// eventually deemed lost"): retransmit Not-ECT and let the next ACK
    /// decide (`answer_probe`). Linux has no data-path equivalent (only the
    /// SYN and SYN/ACK fallbacks).
    pub fn on_data_rto(&mut self) {
        if self.mode() != EcnMode::Off
            && self.fallback
            && self.val.verdict.get() == EcnValidation::Unknown
            && self.tx.ect_sent_pkts > 0
            && self.tx.ect_delivered_pkts == 0
            && self.val.send_ect.get() == SendEct::On
        {
            self.journal
                .record(self.val.send_ect.transition(SendEct::Probing));
        }
    }

    /// The black-hole probe's answer, on an ACK that delivered `d`: with the
    /// option, the peer's byte counters say whether any ECT byte ever
    /// arrived (a lost first flight of ACKs is not a black hole); without
    /// it, Not-ECT packets getting through while no ECT packet ever did is
    /// all we know (RFC 9000 §13.4.2.2).
    pub(super) fn answer_probe(
        &mut self,
        d: &Delivered,
        has_option: bool,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) {
        if self.val.send_ect.get() != SendEct::Probing || d.pkts == 0 {
            return;
        }
        let ect_arrived = if self.mode() == EcnMode::AccEcn && has_option {
            self.tx.fb_total > 0
        } else {
            self.tx.ect_delivered_pkts > 0
        };
        if !ect_arrived {
            self.fail(EcnValidation::Blackholed, cc, stats);
        }
        if self.val.send_ect.get() == SendEct::Probing {
            self.journal
                .record(self.val.send_ect.transition(SendEct::On));
        }
    }

    /// RFC 9000 §13.4.2: the testing period ends well after
    /// [`TESTING_PACKETS`] ECT packets were delivered without a failure.
    pub(super) fn check_testing_period(&mut self, stats: &mut EndpointStats) {
        if self.val.verdict.get() == EcnValidation::Unknown
            && self.tx.ect_delivered_pkts >= TESTING_PACKETS
        {
            self.set_validation(EcnValidation::Capable, stats);
        }
    }

    /// The ACK-path black hole (not in Linux; docs/models/ecn.md): old data
    /// arriving a *third* time (retransmitted again after an earlier
    /// duplicate) means our ECT pure ACKs are not getting through; send them
    /// Not-ECT (cf. Linux's "after the second retransmission" rule for ACKs
    /// with the AccECN option lost in the path, RFC 9768 §3.2.3.2.2). One
    /// retransmission round (an RTO after ordinary ACK loss) does not
    /// trigger it. `seq`, `bytes`: a duplicate data segment.
    pub(super) fn note_duplicate(&mut self, seq: u64, bytes: u64) {
        if seq < self.val.dup_high && self.val.ack_ect.get() == AckEct::On {
            self.journal
                .record(self.val.ack_ect.transition(AckEct::Off));
        }
        self.val.dup_high = self.val.dup_high.max(seq + bytes);
    }

    /// Switch an L4S sender to classic ECN behaviour: ECT(0) and classic
    /// (once per RTT) reaction to CE feedback, no `ce_bytes`.
    pub fn fall_back_to_classic(&mut self) {
        if self.val.response.get() == Response::AsController {
            self.journal
                .record(self.val.response.transition(Response::Classic));
        }
    }

    /// Stop setting ECT (the fallback of bleaching and black holes).
    pub(super) fn stop_ect(&mut self) {
        if self.val.send_ect.get() != SendEct::Off {
            self.journal
                .record(self.val.send_ect.transition(SendEct::Off));
        }
    }

    /// Record a failure and take its fallback (if `ecn_fallback`).
    pub(super) fn fail(&mut self, v: EcnValidation, cc: EcnCodepoint, stats: &mut EndpointStats) {
        if self.val.verdict.get() == v || !self.val.verdict.get().may_enter(v) {
            return;
        }
        self.set_validation(v, stats);
        if !self.fallback {
            return;
        }
        match v {
            EcnValidation::Bleached | EcnValidation::Blackholed => self.stop_ect(),
            EcnValidation::Remarked if self.l4s(cc) => self.fall_back_to_classic(),
            _ => {}
        }
    }

    /// The verdict changes to `v` (checked; a no-op if it is `v` already).
    pub(super) fn set_validation(&mut self, v: EcnValidation, stats: &mut EndpointStats) {
        if self.val.verdict.get() == v {
            return;
        }
        self.journal.record(self.val.verdict.transition(v));
        stats.ecn_validation = v;
    }
}
