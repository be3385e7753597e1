//! ECN negotiation in the handshake: RFC 3168 §6.1.1 (SYN ECE|CWR, SYN/ACK
//! ECE) and RFC 9768 §3.1 (SYN AE|CWR|ECE; the SYN/ACK's ACE reflects the
//! SYN's IP-ECN field, the third ACK the SYN/ACK's), as Linux
//! `tcp_ecn_rcv_syn`, `tcp_ecn_rcv_synack`, `tcp_accecn_reflector_flags` and
//! `tcp_accecn_third_ack` read them. The mode is [`Negotiation`], a checked
//! state machine; what the reflections reveal about the path is judged in
//! `validation.rs`.

use l4slab_cc::EcnCodepoint;
use l4slab_core::Ecn;

use super::validation::EcnValidation;
use super::{Checked, EcnState, Machine};
use crate::config::EcnMode;
use crate::segment::Flags;
use crate::stats::EndpointStats;

/// Where the handshake stands on ECN.
///
/// Edges: `Pending` → `SynFallback` (client retransmits its SYN without ECN,
/// RFC 3168 §6.1.1.1); `Pending` → `Agreed(any)` (server: the SYN; client:
/// the SYN/ACK); `SynFallback` → `Agreed(Off)`; `Agreed(Classic | AccEcn)` →
/// `Agreed(Off)` (server: an ECN-less repeated SYN, or a zero ACE on the
/// segment completing the handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Negotiation {
    /// Nothing decided yet: the client before the SYN/ACK, the server before
    /// the SYN. Runs as `off`.
    Pending,
    /// Client: a SYN went out without ECN (RFC 3168 §6.1.1.1); the connection
    /// will run without ECN.
    SynFallback,
    /// The handshake decided this mode.
    Agreed(EcnMode),
}

impl Negotiation {
    /// The mode in force (`Off` until decided).
    pub fn mode(self) -> EcnMode {
        match self {
            Negotiation::Pending | Negotiation::SynFallback => EcnMode::Off,
            Negotiation::Agreed(m) => m,
        }
    }
}

impl Machine for Negotiation {
    const NAME: &'static str = "negotiation";

    fn name(self) -> &'static str {
        match self {
            Negotiation::Pending => "pending",
            Negotiation::SynFallback => "syn_fallback",
            Negotiation::Agreed(EcnMode::Off) => "off",
            Negotiation::Agreed(EcnMode::Classic) => "classic",
            Negotiation::Agreed(EcnMode::AccEcn) => "accecn",
        }
    }

    fn may_enter(self, next: Negotiation) -> bool {
        use Negotiation::*;
        matches!(
            (self, next),
            (Pending, SynFallback | Agreed(_))
                | (SynFallback, Agreed(EcnMode::Off))
                | (
                    Agreed(EcnMode::Classic | EcnMode::AccEcn),
                    Agreed(EcnMode::Off)
                )
        )
    }
}

/// The handshake half of [`EcnState`].
#[derive(Debug)]
pub(super) struct Handshake {
    /// Requested (client) / accepted (server) mode.
    pub want: EcnMode,
    pub negotiation: Checked<Negotiation>,
    /// IP-ECN field of our latest SYN or SYN/ACK.
    pub syn_ect_sent: Ecn,
    /// IP-ECN field of the peer's SYN (server) or SYN/ACK (client): what our
    /// SYN/ACK or third ACK reflects (RFC 9768 §3.1.2 and §3.2.2.1).
    pub syn_ect_rcvd: Ecn,
    /// Client: the next pure ACK carries the handshake reflection (a one-shot
    /// duty of the AccECN receiver, not a mode).
    pub reflect_pending: bool,
    /// SYN or SYN/ACK transmissions so far.
    pub syn_tx: u32,
    /// Server: the ACK completing the handshake carries no counter (Linux
    /// `FLAG_SYN_ACKED`); skip its ACE once (a one-shot duty, not a mode).
    pub skip_feedback_once: bool,
}

impl Handshake {
    pub fn new(want: EcnMode) -> Self {
        Handshake {
            want,
            negotiation: Checked::new(Negotiation::Pending),
            syn_ect_sent: Ecn::NotEct,
            syn_ect_rcvd: Ecn::NotEct,
            reflect_pending: false,
            syn_tx: 0,
            skip_feedback_once: false,
        }
    }
}

/// Linux `tcp_accecn_reflector_flags`: the ACE value reflecting an IP-ECN
/// field on the SYN/ACK or third ACK (REFERENCES §2.5): Not-ECT 0b010,
/// ECT(1) 0b011, ECT(0) 0b100, CE 0b110.
pub(crate) const fn reflector_ace(e: Ecn) -> u8 {
    let b = e.bits() + 2;
    if b == 5 {
        6
    } else {
        b
    }
}

/// The IP-ECN field a handshake ACE value reflects, if it is one of the
/// four reflector values (the inverse of [`reflector_ace`]).
pub(super) fn reflected(ace: u8) -> Option<Ecn> {
    match ace {
        0b010 => Some(Ecn::NotEct),
        0b011 => Some(Ecn::Ect1),
        0b100 => Some(Ecn::Ect0),
        0b110 => Some(Ecn::Ce),
        _ => None,
    }
}

impl EcnState {
    /// Client: the ECN flags and IP-ECN field of a SYN. RFC 3168 §6.1.1:
    /// ECE|CWR; RFC 9768 §3.1.1: AE|CWR|ECE. A retransmitted SYN carries
    /// neither flags nor ECT (RFC 3168 §6.1.1.1 "MAY resend the SYN ... with
    /// CWR and ECE cleared"; Linux `tcp_ecn_clear_syn` on the first
    /// retransmission with `tcp_ecn_fallback = 1`).
    pub fn syn(&mut self, retransmission: bool, cc: EcnCodepoint) -> (Flags, Ecn) {
        self.hs.syn_tx += 1;
        if retransmission
            && self.fallback
            && self.hs.want != EcnMode::Off
            && self.hs.negotiation.get() == Negotiation::Pending
        {
            self.journal
                .record(self.hs.negotiation.transition(Negotiation::SynFallback));
        }
        let ip = self.ip_field(super::Kind::Syn, cc);
        self.hs.syn_ect_sent = ip;
        let flags = match self.hs.want {
            _ if self.hs.negotiation.get() == Negotiation::SynFallback => Flags::NONE,
            EcnMode::Off => Flags::NONE,
            EcnMode::Classic => Flags::ECE | Flags::CWR,
            EcnMode::AccEcn => Flags::AE | Flags::CWR | Flags::ECE,
        };
        (flags, ip)
    }

    /// Server: a SYN arrived with `flags` and IP-ECN field `ip`; decide the
    /// mode (RFC 9768 §3.1.1 Table 2, Linux `tcp_ecn_create_request` /
    /// `tcp_ecn_rcv_syn`).
    pub fn on_syn(&mut self, flags: Flags, ip: Ecn, cc: EcnCodepoint, stats: &mut EndpointStats) {
        let asked = if flags.contains(Flags::AE | Flags::CWR | Flags::ECE) {
            EcnMode::AccEcn
        } else if flags.contains(Flags::CWR | Flags::ECE) {
            EcnMode::Classic
        } else {
            EcnMode::Off
        };
        // RFC 9768 §3.1.1: a server that does not support AccECN but does
        // RFC 3168 answers an AccECN SYN with classic ECN.
        let mut m = asked.min(self.hs.want);
        if m == EcnMode::Classic && self.l4s(cc) {
            // Linux TCP_CONG_NO_FALLBACK_RFC3168 (Prague): no classic feedback.
            m = EcnMode::Off;
        }
        self.journal
            .record(self.hs.negotiation.transition(Negotiation::Agreed(m)));
        self.hs.syn_ect_rcvd = ip;
        self.rx.prev_field = ip;
        stats.ecn_mode = m;
        if m == EcnMode::Off {
            self.set_validation(EcnValidation::NotNegotiated, stats);
        }
    }

    /// Server in SYN-RECEIVED: the peer sent its SYN again. Without ECN flags
    /// the client has given up ECN (its RFC 3168 §6.1.1.1 fallback): so do we.
    /// (Linux keeps the request's first decision; see docs/models/ecn.md.)
    pub fn on_repeated_syn(&mut self, flags: Flags, stats: &mut EndpointStats) {
        if self.mode() != EcnMode::Off && !flags.contains(Flags::CWR | Flags::ECE) {
            self.agree_off(stats);
            self.settle_not_negotiated(stats);
        }
    }

    /// Server: the ECN it agreed to is off after all (the client gave it up
    /// or zeroed the ACE field).
    fn agree_off(&mut self, stats: &mut EndpointStats) {
        self.journal.record(
            self.hs
                .negotiation
                .transition(Negotiation::Agreed(EcnMode::Off)),
        );
        stats.ecn_mode = EcnMode::Off;
    }

    /// Validation has nothing to validate once ECN is off: `NotNegotiated`,
    /// unless the verdict is already one it cannot leave.
    fn settle_not_negotiated(&mut self, stats: &mut EndpointStats) {
        if self
            .val
            .verdict
            .get()
            .may_enter(EcnValidation::NotNegotiated)
        {
            self.set_validation(EcnValidation::NotNegotiated, stats);
        }
    }

    /// Server: the ECN flags and IP-ECN field of a SYN/ACK (RFC 3168
    /// §6.1.1: ECE; RFC 9768 §3.1.2: ACE reflecting the SYN's IP-ECN field).
    /// After the third transmission (the second retransmission) ECT is given
    /// up: Linux `tcp_accecn_ace_fail_send_set_retrans` (`num_retrans > 1`),
    /// a likely ECT black hole.
    pub fn syn_ack(&mut self, cc: EcnCodepoint, stats: &mut EndpointStats) -> (Flags, Ecn) {
        let ip = self.ip_field(super::Kind::SynAck, cc);
        self.hs.syn_tx += 1;
        self.hs.syn_ect_sent = ip;
        if self.hs.syn_tx > 2 && self.fallback && ip.is_ect() {
            self.stop_ect();
            if self.val.verdict.get().may_enter(EcnValidation::Blackholed) {
                self.set_validation(EcnValidation::Blackholed, stats);
            }
        }
        let flags = match self.mode() {
            EcnMode::Off => Flags::NONE,
            EcnMode::Classic => Flags::ECE,
            EcnMode::AccEcn => Flags::NONE.with_ace(reflector_ace(self.hs.syn_ect_rcvd)),
        };
        (flags, ip)
    }

    /// Client: the SYN/ACK arrived with `flags` and IP-ECN field `ip`
    /// (RFC 9768 §3.1.2 Table 2, Linux `tcp_ecn_rcv_synack`).
    pub fn on_syn_ack(
        &mut self,
        flags: Flags,
        ip: Ecn,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) {
        let ace = flags.ace();
        let syn_fallback = self.hs.negotiation.get() == Negotiation::SynFallback;
        let mut m = if syn_fallback {
            EcnMode::Off
        } else {
            match self.hs.want {
                EcnMode::Off => EcnMode::Off,
                // RFC 3168 §6.1.1: "ECE set and CWR not set" (AE is ignored).
                EcnMode::Classic if flags.contains(Flags::ECE) && !flags.contains(Flags::CWR) => {
                    EcnMode::Classic
                }
                EcnMode::Classic => EcnMode::Off,
                EcnMode::AccEcn => match ace {
                    0b000 => EcnMode::Off,
                    0b001 => EcnMode::Classic,
                    // 0b010, 0b011, 0b100, 0b110 reflect the SYN; 0b101 and
                    // 0b111 are reserved and also mean AccECN (Linux default branch).
                    _ => EcnMode::AccEcn,
                },
            }
        };
        if m == EcnMode::Classic && self.l4s(cc) {
            m = EcnMode::Off; // Linux TCP_CONG_NO_FALLBACK_RFC3168
        }
        self.journal
            .record(self.hs.negotiation.transition(Negotiation::Agreed(m)));
        stats.ecn_mode = m;
        match m {
            EcnMode::Off => {
                let v = if syn_fallback {
                    EcnValidation::Blackholed
                } else {
                    EcnValidation::NotNegotiated
                };
                self.set_validation(v, stats);
            }
            EcnMode::Classic => {}
            EcnMode::AccEcn => {
                self.hs.syn_ect_rcvd = ip;
                self.rx.prev_field = ip;
                self.hs.reflect_pending = true;
                let valid = self.check_reflection(ace, cc, stats);
                if ip == Ecn::Ce && valid {
                    // Linux tcp_ecn_rcv_synack: a CE SYN/ACK counts in r.cep
                    // (the server expects it: tcp_accecn_third_ack).
                    self.rx.r_cep += 1;
                    self.rx.pending_ce += 1;
                    stats.ce_marks_received += 1;
                }
            }
        }
    }

    /// Server: the segment completing the handshake. A pure ACK is the third
    /// ACK, reflecting our SYN/ACK's IP-ECN field (RFC 9768 §3.2.2.1, Linux
    /// `tcp_accecn_third_ack`); a data segment (the third ACK was lost)
    /// carries the client's ACE counter, 5 or 6 at this point.
    pub fn on_handshake_ack(
        &mut self,
        flags: Flags,
        pure_ack: bool,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) {
        self.hs.skip_feedback_once = true;
        if self.mode() != EcnMode::AccEcn {
            return;
        }
        let ace = flags.ace();
        match ace {
            // A zero ACE is invalid either way (Linux: TCP_ACCECN_ACE_FAIL_RECV
            // on the third ACK; "Verify ACE!=0 in the 1st data ACK"): the
            // client is not in AccECN mode — it gave up ECN after a SYN
            // timeout — or the flags were zeroed. Stop ECT, ignore feedback.
            0 => {
                self.agree_off(stats);
                self.stop_ect();
                self.settle_not_negotiated(stats);
            }
            _ if !pure_ack => {}
            0b001 | 0b101 | 0b111 => {}
            _ => {
                let valid = self.check_reflection(ace, cc, stats);
                if valid && reflected(ace) == Some(Ecn::Ce) && self.tx.s_cep == 0 {
                    self.tx.s_cep = 1;
                }
            }
        }
    }
}
