//! ECN validation, RFC 9000 §13.4.2 and Appendix A.4: which codepoint goes
//! on the next packet, and whether the ACK_ECN counts the peer reports are
//! consistent with what was sent.
//!
//! States (App. A.4): `Testing` (the first [`TESTING_PACKETS`] packets carry
//! ECT) → `Unknown` (stop marking until an ACK validates) → `Capable` (mark
//! everything) or `Failed` (never mark again). A.4 also lets a validating
//! ACK move `Testing` straight to `Capable`. Checked by
//! [`EcnValidator::transition_to`].
//!
//! Not implemented: re-probing after failure, and "all marked packets come
//! back CE" (App. A.4 optional). ECT(1) → ECT(0) re-marking is caught as a
//! count of a codepoint above the number sent with it and fails validation
//! (an L4S fallback to classic ECN is not modelled).

use l4slab_core::state::{Checked, Machine};
use l4slab_core::Ecn;

use crate::wire::{EcnCounts, PnSpace};

/// §13.4.2: "an endpoint could mark only the first ten outgoing packets with
/// an ECT codepoint".
pub const TESTING_PACKETS: u64 = 10;

/// Why validation failed (§13.4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EcnFailure {
    /// The configuration turned ECN off (never tested).
    Disabled,
    /// "If an ACK frame newly acknowledges a packet that the endpoint sent
    /// with either the ECT(0) or ECT(1) codepoint set, ECN validation fails
    /// if the corresponding ECN counts are not present in the ACK frame."
    CountsMissing,
    /// The increase in ECT+CE counts is below the packets newly acked with
    /// that mark (bleaching).
    CountsTooLow,
    /// A count exceeds the packets sent with that codepoint (re-marking).
    CountsTooHigh,
    /// Every packet sent with ECT during testing was lost (§13.4.2: "If all
    /// packets marked with non-zero ECN codepoints are subsequently lost").
    AllMarkedLost,
}

/// App. A.4 states; variants carry their data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EcnState {
    Testing { marked: u64 },
    Unknown,
    Capable,
    Failed(EcnFailure),
}

impl Machine for EcnState {
    const NAME: &'static str = "ECN validation";

    fn name(self) -> &'static str {
        EcnState::name(&self)
    }

    /// RFC 9000 App. A.4: testing (its count may change) → unknown, capable
    /// or failed; unknown → capable or failed; capable → failed.
    fn may_enter(self, next: EcnState) -> bool {
        use EcnState::*;
        matches!(
            (self, next),
            (Testing { .. }, Testing { .. })
                | (Testing { .. }, Unknown)
                | (Testing { .. }, Capable)
                | (Testing { .. }, Failed(_))
                | (Unknown, Capable)
                | (Unknown, Failed(_))
                | (Capable, Failed(_))
        )
    }
}

impl EcnState {
    pub fn name(&self) -> &'static str {
        match self {
            EcnState::Testing { .. } => "testing",
            EcnState::Unknown => "unknown",
            EcnState::Capable => "capable",
            EcnState::Failed(_) => "failed",
        }
    }

    /// The state in the vocabulary of the TCP model's results
    /// (`ecn_validation` in summary.json, docs/results.md): `testing`,
    /// `unknown`, `capable`, or why validation failed — `bleached` (no ECN
    /// counts came back, as when the path clears the field and the receiver
    /// has nothing to count, or counts below what was acked), `remarked` (a
    /// count above what was sent with that mark, as when ECT(1) arrives as
    /// ECT(0)), `blackholed` (every marked packet lost), `not_negotiated`
    /// (ECN off). [`EcnFailure`] keeps the exact reason.
    pub fn result_name(&self) -> &'static str {
        match self {
            EcnState::Failed(EcnFailure::Disabled) => "not_negotiated",
            EcnState::Failed(EcnFailure::CountsMissing | EcnFailure::CountsTooLow) => "bleached",
            EcnState::Failed(EcnFailure::CountsTooHigh) => "remarked",
            EcnState::Failed(EcnFailure::AllMarkedLost) => "blackholed",
            other => other.name(),
        }
    }
}

/// Per-space counters the checks need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SpaceCounts {
    sent_ect0: u64,
    sent_ect1: u64,
    /// The largest counts reported so far.
    reported: EcnCounts,
}

/// What one ACK's ECN section tells the sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EcnFeedback {
    /// Newly reported CE marks (only while not failed).
    pub new_ce: u64,
    /// Newly reported packets with any ECN codepoint (ECT(0), ECT(1), CE).
    pub new_marked: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcnValidator {
    state: Checked<EcnState>,
    codepoint: Ecn,
    spaces: [SpaceCounts; 3],
    /// Marked packets sent and marked packets declared lost (black-hole check).
    marked_sent: u64,
    marked_lost: u64,
    marked_acked: u64,
    /// False only for [`EcnValidator::unvalidated`]: no check can fail.
    validate: bool,
}

pub(crate) fn space_index(s: PnSpace) -> usize {
    match s {
        PnSpace::Initial => 0,
        PnSpace::Handshake => 1,
        PnSpace::ApplicationData => 2,
    }
}

impl EcnValidator {
    /// `codepoint` is ECT(0) or ECT(1); `enabled = false` starts `Failed(Disabled)`.
    pub fn new(enabled: bool, codepoint: Ecn) -> Self {
        assert!(
            codepoint.is_ect() && codepoint != Ecn::Ce,
            "ECN codepoint must be ECT(0) or ECT(1)"
        );
        EcnValidator {
            state: Checked::new(if enabled {
                EcnState::Testing { marked: 0 }
            } else {
                EcnState::Failed(EcnFailure::Disabled)
            }),
            codepoint,
            spaces: Default::default(),
            marked_sent: 0,
            marked_lost: 0,
            marked_acked: 0,
            validate: true,
        }
    }

    /// A sender that does **not** validate ECN: it marks every packet with
    /// `codepoint` from the first and never fails, whatever the ACK_ECN
    /// counts say. This breaks RFC 9000 §13.4.2 ("If validation fails, then
    /// the endpoint MUST disable ECN"); it exists only to show what such a
    /// sender does on a path that bleaches, re-marks or drops ECT
    /// (`l4slab send --no-ecn-validation`, `l4slab check-l4s`). CE counts
    /// are still fed to the controller.
    pub fn unvalidated(codepoint: Ecn) -> Self {
        let mut v = EcnValidator::new(true, codepoint);
        v.validate = false;
        v.transition_to(EcnState::Capable);
        v
    }

    /// False for [`EcnValidator::unvalidated`].
    pub fn validates(&self) -> bool {
        self.validate
    }

    pub fn state(&self) -> EcnState {
        self.state.get()
    }

    pub fn codepoint(&self) -> Ecn {
        self.codepoint
    }

    /// The one checked transition (App. A.4 edges, [`EcnState`]'s
    /// `may_enter`; `l4slab_core::state`).
    pub fn transition_to(&mut self, next: EcnState) {
        self.state.transition(next);
    }

    /// The IP ECN field for the next datagram.
    pub fn next_codepoint(&self) -> Ecn {
        match self.state.get() {
            EcnState::Testing { .. } | EcnState::Capable => self.codepoint,
            EcnState::Unknown | EcnState::Failed(_) => Ecn::NotEct,
        }
    }

    /// A datagram left with `ecn` holding packets of these spaces.
    pub fn on_sent(&mut self, space: PnSpace, ecn: Ecn) {
        let c = &mut self.spaces[space_index(space)];
        match ecn {
            Ecn::Ect0 => c.sent_ect0 += 1,
            Ecn::Ect1 => c.sent_ect1 += 1,
            _ => return,
        }
        self.marked_sent += 1;
    }

    /// Call once per datagram sent with a mark (the testing period counts
    /// datagrams).
    pub fn on_datagram_marked(&mut self) {
        if let EcnState::Testing { marked } = self.state.get() {
            let marked = marked + 1;
            if marked >= TESTING_PACKETS {
                self.transition_to(EcnState::Unknown);
            } else {
                self.transition_to(EcnState::Testing { marked });
            }
        }
    }

    /// A probe timeout fired; `pto_count` is the number in a row without an
    /// acknowledgment (RFC 9002 §6.2). §13.4.2.1 lets the testing period be
    /// "the first ten outgoing packets on a path, or ... a period of three
    /// PTOs": with no marked packet acknowledged yet, the second PTO in a row
    /// comes three PTO periods after the first packet (the first waits one,
    /// the second, backed off, two more), so testing ends there and the
    /// probes go out Not-ECT (`Unknown`). On an ECN black hole (every ECT
    /// packet dropped) a handshake would otherwise repeat ECT packets until
    /// ten had been lost, about a minute with the backoff; so it connects
    /// after ~3 PTOs, and the marked packets later declared lost fail
    /// validation (`AllMarkedLost`).
    pub fn on_probe_timeout(&mut self, pto_count: u32) {
        if self.validate
            && matches!(self.state.get(), EcnState::Testing { .. })
            && self.marked_acked == 0
            && pto_count >= 2
        {
            self.transition_to(EcnState::Unknown);
        }
    }

    /// A packet sent with `ecn` was declared lost.
    pub fn on_lost(&mut self, ecn: Ecn) {
        if !ecn.is_ect() {
            return;
        }
        self.marked_lost += 1;
        if !self.validate {
            return;
        }
        // §13.4.2: "If all packets marked with non-zero ECN codepoints are
        // subsequently lost, ... the endpoint ... [disables] ECN".
        if matches!(self.state.get(), EcnState::Unknown)
            && self.marked_acked == 0
            && self.marked_lost >= self.marked_sent
        {
            self.transition_to(EcnState::Failed(EcnFailure::AllMarkedLost));
        }
    }

    /// An ACK in `space` that raised the largest acknowledged newly acked
    /// `acked_ect0`/`acked_ect1` packets sent with those marks, and carried
    /// `counts` (None: a plain ACK frame). §13.4.2.1: "ECN validation ...
    /// [is only performed on] ACK frames that increase the largest acknowledged".
    pub fn on_ack(
        &mut self,
        space: PnSpace,
        acked_ect0: u64,
        acked_ect1: u64,
        counts: Option<EcnCounts>,
    ) -> EcnFeedback {
        self.marked_acked += acked_ect0 + acked_ect1;
        if matches!(self.state.get(), EcnState::Failed(_)) {
            return EcnFeedback::default();
        }
        let c = self.spaces[space_index(space)];
        let Some(n) = counts else {
            if acked_ect0 + acked_ect1 > 0 && self.validate {
                self.transition_to(EcnState::Failed(EcnFailure::CountsMissing));
            }
            return EcnFeedback::default();
        };
        let prev = c.reported;
        // Counts are cumulative: a decrease is a stale (reordered) ACK.
        let (d0, d1, dce) = (
            n.ect0.saturating_sub(prev.ect0),
            n.ect1.saturating_sub(prev.ect1),
            n.ce.saturating_sub(prev.ce),
        );
        // §13.4.2.1: "ECN validation also fails if the sum of the increase in
        // ECT(0) and ECN-CE counts is less than the number of newly
        // acknowledged packets that were originally sent with an ECT(0)
        // marking. Similarly, ... ECT(1) ...".
        let too_low =
            (acked_ect0 > 0 && d0 + dce < acked_ect0) || (acked_ect1 > 0 && d1 + dce < acked_ect1);
        // §13.4.2.1: "ECN validation can fail if the received total count for
        // either ECT(0) or ECT(1) exceeds the total number of packets sent
        // with each corresponding ECT codepoint."
        let too_high =
            n.ect0 > c.sent_ect0 || n.ect1 > c.sent_ect1 || n.ce > c.sent_ect0 + c.sent_ect1;
        let s = &mut self.spaces[space_index(space)];
        s.reported.ect0 = s.reported.ect0.max(n.ect0);
        s.reported.ect1 = s.reported.ect1.max(n.ect1);
        s.reported.ce = s.reported.ce.max(n.ce);
        if !self.validate {
            // `unvalidated`: take the counts at face value, never fail.
            return EcnFeedback {
                new_ce: dce,
                new_marked: d0 + d1 + dce,
            };
        }
        if too_high {
            self.transition_to(EcnState::Failed(EcnFailure::CountsTooHigh));
            return EcnFeedback::default();
        }
        if too_low {
            self.transition_to(EcnState::Failed(EcnFailure::CountsTooLow));
            return EcnFeedback::default();
        }
        if acked_ect0 + acked_ect1 > 0 && self.state.get() != EcnState::Capable {
            // App. A.4: "successful validation of the ECN counts in an ACK
            // frame ... causes the endpoint to transition to the capable state".
            self.transition_to(EcnState::Capable);
        }
        EcnFeedback {
            new_ce: dce,
            new_marked: d0 + d1 + dce,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(ect0: u64, ect1: u64, ce: u64) -> Option<EcnCounts> {
        Some(EcnCounts { ect0, ect1, ce })
    }

    #[test]
    fn an_unvalidated_sender_marks_from_the_first_packet_and_never_fails() {
        let mut v = EcnValidator::unvalidated(Ecn::Ect1);
        assert!(!v.validates());
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.next_codepoint(), Ecn::Ect1);
        v.on_sent(PnSpace::ApplicationData, Ecn::Ect1);
        // Bleached (no counts), re-marked (ECT(0) above what was sent), lost:
        // a validating sender fails on each; this one keeps marking.
        v.on_ack(PnSpace::ApplicationData, 0, 1, None);
        v.on_ack(PnSpace::ApplicationData, 0, 1, counts(5, 0, 0));
        v.on_lost(Ecn::Ect1);
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(v.next_codepoint(), Ecn::Ect1);
        // CE is still fed back to the controller.
        let fb = v.on_ack(PnSpace::ApplicationData, 0, 2, counts(5, 1, 2));
        assert_eq!(fb.new_ce, 2);
        // The same ACKs fail a validating sender.
        let mut w = EcnValidator::new(true, Ecn::Ect1);
        w.on_sent(PnSpace::ApplicationData, Ecn::Ect1);
        w.on_ack(PnSpace::ApplicationData, 0, 1, None);
        assert_eq!(w.state(), EcnState::Failed(EcnFailure::CountsMissing));
    }

    #[test]
    fn testing_unknown_capable() {
        let mut v = EcnValidator::new(true, Ecn::Ect1);
        for _ in 0..TESTING_PACKETS {
            assert_eq!(v.next_codepoint(), Ecn::Ect1);
            v.on_sent(PnSpace::ApplicationData, Ecn::Ect1);
            v.on_datagram_marked();
        }
        assert_eq!(v.state(), EcnState::Unknown);
        assert_eq!(v.next_codepoint(), Ecn::NotEct);
        let fb = v.on_ack(PnSpace::ApplicationData, 0, 4, counts(0, 3, 1));
        assert_eq!(v.state(), EcnState::Capable);
        assert_eq!(fb.new_ce, 1);
    }

    #[test]
    fn testing_ends_after_three_pto_periods_without_an_acknowledged_mark() {
        // §13.4.2.1: "... or for a period of three PTOs".
        let mut v = EcnValidator::new(true, Ecn::Ect1);
        v.on_sent(PnSpace::Initial, Ecn::Ect1);
        v.on_datagram_marked();
        v.on_probe_timeout(1);
        assert!(matches!(v.state(), EcnState::Testing { .. }));
        v.on_probe_timeout(2);
        assert_eq!(v.state(), EcnState::Unknown);
        assert_eq!(v.next_codepoint(), Ecn::NotEct);
        // The marked packets, declared lost later: a black hole.
        v.on_lost(Ecn::Ect1);
        assert_eq!(v.state(), EcnState::Failed(EcnFailure::AllMarkedLost));
        // A marked packet acknowledged: the path passes ECT; PTOs are loss.
        let mut w = EcnValidator::new(true, Ecn::Ect1);
        w.on_sent(PnSpace::Initial, Ecn::Ect1);
        w.on_ack(PnSpace::Initial, 0, 1, counts(0, 1, 0));
        w.on_probe_timeout(5);
        assert_ne!(w.state(), EcnState::Unknown);
        // A sender that does not validate keeps marking.
        let mut u = EcnValidator::unvalidated(Ecn::Ect1);
        u.on_probe_timeout(5);
        assert_eq!(u.state(), EcnState::Capable);
    }

    #[test]
    fn bleaching_and_remarking_fail() {
        let mut v = EcnValidator::new(true, Ecn::Ect0);
        v.on_sent(PnSpace::Initial, Ecn::Ect0);
        v.on_ack(PnSpace::Initial, 1, 0, counts(0, 0, 0));
        assert_eq!(v.state(), EcnState::Failed(EcnFailure::CountsTooLow));
        let mut v = EcnValidator::new(true, Ecn::Ect1);
        v.on_sent(PnSpace::Initial, Ecn::Ect1);
        v.on_ack(PnSpace::Initial, 0, 1, counts(1, 0, 0));
        assert_eq!(v.state(), EcnState::Failed(EcnFailure::CountsTooHigh));
        let mut v = EcnValidator::new(true, Ecn::Ect1);
        v.on_sent(PnSpace::Initial, Ecn::Ect1);
        v.on_ack(PnSpace::Initial, 0, 1, None);
        assert_eq!(v.state(), EcnState::Failed(EcnFailure::CountsMissing));
    }

    #[test]
    #[should_panic(expected = "illegal ECN validation transition")]
    fn failed_is_final() {
        let mut v = EcnValidator::new(false, Ecn::Ect0);
        v.transition_to(EcnState::Capable);
    }
}
