//! ECN for one endpoint: negotiation, feedback in both directions, and the
//! sender's validation of the path (`docs/models/ecn.md` has the full model,
//! the sources and the tests that pin each rule).
//!
//! * **Negotiation** — RFC 3168 §6.1.1 (SYN ECE|CWR, SYN/ACK ECE) and RFC 9768
//!   §3.1 (SYN AE|CWR|ECE; the SYN/ACK's ACE reflects the SYN's IP-ECN field,
//!   the third ACK the SYN/ACK's), with Linux's tables
//!   (`tcp_ecn_rcv_synack`, `tcp_accecn_reflector_flags`,
//!   `tcp_accecn_third_ack`) and its fallbacks: AccECN falls back to classic
//!   ECN with a classic peer, except for an L4S (ECT(1)) controller, which
//!   falls back to no ECN (`TCP_CONG_NO_FALLBACK_RFC3168`); a retransmitted
//!   SYN carries no ECN (RFC 3168 §6.1.1.1, `tcp_ecn_clear_syn`).
//! * **Receiver** — classic: ECE on every segment from a CE arrival until a
//!   CWR arrives (RFC 3168 §6.1.3, `tcp_ecn_accept_cwr`,
//!   `tcp_data_ecn_check`); AccECN: `r.cep` (CE packets, initial 5) in the ACE
//!   field of every segment, byte counters `r.e1b/r.ceb/r.e0b` (initial
//!   1/0/1) in the AccECN option on pure ACKs (and on data segments when they
//!   changed), an immediate ACK when the IP-ECN
//!   field changes or before the CE delta could wrap (6,
//!   `TCP_ACCECN_ACE_MAX_DELTA`).
//! * **Sender** — classic: ECE means every acknowledged byte was CE
//!   (`tcp_count_delivered`), CWR on the next new data after a reduction;
//!   AccECN: newly CE-marked packets from the mod-8 ACE delta with RFC 9768
//!   §3.2.2.5's safety against wrapping (`__tcp_accecn_process`, including
//!   Linux's use of the option's `ceb` to tell), CE bytes from the option
//!   (else packets × MSS, reconciled when an option arrives).
//! * **Validation** ([`EcnValidation`]) — bleaching and re-marking from the
//!   handshake reflection and from the option's byte counters (RFC 9768
//!   §3.2.2.3 / RFC 9000 §13.4.2.1 rules applied to bytes), an ECT black hole
//!   from an RTO before any ECT packet got through, the SYN fallback, and
//!   SYN/ACK retransmissions (`TCP_ACCECN_ACE_FAIL_SEND`).
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

use core::fmt;

use l4slab_cc::EcnCodepoint;
use l4slab_core::{Ecn, Time};

use crate::config::{EcnMode, TransportConfig};
use crate::segment::{AccEcnOption, Flags, Segment, MAX_SACK_BLOCKS};
use crate::stats::EndpointStats;

/// RFC 9768 §3.2.2.1: `r.cep` starts at 5 (Linux `TCP_ACCECN_CEP_INIT_OFFSET`).
pub(crate) const CEP_INIT: u64 = 5;
/// Linux `TCP_ACCECN_ACE_MAX_DELTA`: ACK at once when this many CE packets
/// have not been fed back, so the 3-bit ACE field cannot wrap unseen.
pub(crate) const ACE_MAX_DELTA: u8 = 6;
/// RFC 9768 §3.2.1 / Linux `TCP_ACCECN_E1B_INIT_OFFSET`, `..._E0B_...`, `..._CEB_...`.
const E1B_INIT: u64 = 1;
const CEB_INIT: u64 = 0;
const E0B_INIT: u64 = 1;
/// Linux `TCP_ACCECN_SAFETY_SHIFT` (RFC 9768 Appendix A.2.1 SAFETY_FACTOR = 2).
const SAFETY_SHIFT: u32 = 1;
/// RFC 9000 §13.4.2: ECN is tested on the first 10 packets; once this many
/// ECT packets were delivered without a failure the path is `Capable`.
const TESTING_PACKETS: u64 = 10;
/// 24-bit counters of the AccECN option (RFC 9768 §3.2.3).
const MASK24: u64 = (1 << 24) - 1;
/// TCP option space (RFC 9293 §3.1: data offset of 15 words).
const TCP_OPTION_SPACE: u32 = 40;

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

    /// Legal verdict changes: a verdict can only get worse, and the
    /// failures are final (a re-marked path can still turn out bleached).
    fn can_become(self, next: EcnValidation) -> bool {
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

/// What an outgoing segment is, which decides its IP-ECN field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The client's SYN.
    Syn,
    /// The server's SYN/ACK.
    SynAck,
    /// A data segment sent for the first time.
    NewData,
    /// A retransmitted data segment (or FIN).
    Retransmit,
    /// A pure ACK or a bare FIN.
    Control,
}

/// What one ACK delivered (newly cumulatively or selectively acknowledged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Delivered {
    pub pkts: u64,
    pub bytes: u64,
    /// Of those, sent with ECT (ECT(0) or ECT(1)) on their latest transmission.
    pub ect_pkts: u64,
    pub ect_bytes: u64,
}

/// ECN feedback an ACK carried, for the controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Feedback {
    /// `AckEvent::ce_bytes`.
    pub ce_bytes: u64,
    /// The ACK signalled new congestion (ECE, or new CE marks).
    pub congestion: bool,
}

/// ECN state of one endpoint (both halves). See the module documentation.
#[derive(Debug)]
pub(crate) struct EcnState {
    /// Requested (client) / accepted (server) mode.
    want: EcnMode,
    /// Negotiated mode (`Off` until decided).
    mode: EcnMode,
    fallback: bool,
    send_option: bool,
    override_cp: Option<EcnCodepoint>,

    // ----- handshake
    /// IP-ECN field of our latest SYN or SYN/ACK.
    syn_ect_sent: Ecn,
    /// IP-ECN field of the peer's SYN (server) or SYN/ACK (client): what our
    /// SYN/ACK or third ACK reflects (RFC 9768 §3.1.2 and §3.2.2.1).
    syn_ect_rcvd: Ecn,
    /// Client: the next pure ACK carries the handshake reflection.
    reflect_pending: bool,
    /// SYN or SYN/ACK transmissions so far.
    syn_tx: u32,
    /// Client: a SYN went out without ECN (RFC 3168 §6.1.1.1).
    syn_fallback: bool,
    /// Server: the ACK completing the handshake carries no counter (Linux
    /// `FLAG_SYN_ACKED`); skip its ACE once.
    skip_feedback_once: bool,

    // ----- receiving half
    /// Classic: echo ECE until a CWR arrives (RFC 3168 §6.1.3).
    demand_cwr: bool,
    /// AccECN `r.cep` without the initial offset.
    r_cep: u64,
    /// CE packets not yet fed back (Linux `received_ce_pending`, saturates at 15).
    pending_ce: u8,
    /// Received payload bytes marked ECT(1), CE, ECT(0) (option order 1),
    /// without the initial offsets.
    r_bytes: [u64; 3],
    /// Fields the next option needs: the highest order-1 field changed since
    /// the last option (Linux `accecn_minlen`).
    minlen: u8,
    /// IP-ECN field of the previous segment (Linux `prev_ecnfield`).
    prev_field: Ecn,
    /// Our ECT pure ACKs seem to be dropped: send them Not-ECT.
    ack_ect_off: bool,
    /// End of the highest duplicate data received so far (0: none).
    dup_high: u64,

    // ----- sending half
    /// Send Not-ECT and ignore CE feedback (bleached, black hole, failure).
    ect_off: bool,
    /// Black-hole probe after an RTO: Not-ECT until an ACK tells whether ECT
    /// ever got through.
    probing: bool,
    /// Re-marking detected (or asked for): ECT(0) and classic response.
    remark_fallback: bool,
    validation: EcnValidation,
    /// Classic: set CWR on the next new data segment (Linux `TCP_ECN_QUEUE_CWR`).
    cwr_queued: bool,
    /// No new classic reduction until SND.UNA reaches this (Linux `high_seq`
    /// of the CWR state; RFC 3168 §6.1.2 "once per window").
    cwr_high: u64,
    /// AccECN `s.cep` without the offset: CE packets fed back so far.
    s_cep: u64,
    /// Last option values seen, as on the wire (e1b, ceb, e0b).
    s_opt: [u64; 3],
    /// TSval of the last ACK whose feedback was processed.
    last_ts: Time,
    /// CE bytes passed to the controller from ACE estimates, not yet
    /// confirmed by an option.
    est_pending: u64,
    /// CE bytes fed back but not yet given to the controller (kept at most
    /// `acked_bytes` per ACK).
    ce_carry: u64,
    ect_delivered_pkts: u64,
    ect_delivered_bytes: u64,
    ect_sent_pkts: u64,
    /// Sum of the option byte-counter increases (e1b + ceb + e0b).
    fb_total: u64,
}

/// RFC 9768 §3.2.3 / Linux `tcp_ecnfield_to_accecn_optfield`: the order-1
/// field carrying a codepoint's byte counter (ECT(1) → 1, CE → 2, ECT(0) → 3).
fn option_field(e: Ecn) -> Option<usize> {
    match e {
        Ecn::Ect1 => Some(1),
        Ecn::Ce => Some(2),
        Ecn::Ect0 => Some(3),
        Ecn::NotEct => None,
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
fn reflected(ace: u8) -> Option<Ecn> {
    match ace {
        0b010 => Some(Ecn::NotEct),
        0b011 => Some(Ecn::Ect1),
        0b100 => Some(Ecn::Ect0),
        0b110 => Some(Ecn::Ce),
        _ => None,
    }
}

fn to_ecn(c: EcnCodepoint) -> Ecn {
    match c {
        EcnCodepoint::NotEct => Ecn::NotEct,
        EcnCodepoint::Ect0 => Ecn::Ect0,
        EcnCodepoint::Ect1 => Ecn::Ect1,
    }
}

impl EcnState {
    pub fn new(cfg: &TransportConfig) -> Self {
        EcnState {
            want: cfg.ecn,
            mode: EcnMode::Off,
            fallback: cfg.ecn_fallback,
            send_option: cfg.accecn_option,
            override_cp: cfg.ecn_codepoint,
            syn_ect_sent: Ecn::NotEct,
            syn_ect_rcvd: Ecn::NotEct,
            reflect_pending: false,
            syn_tx: 0,
            syn_fallback: false,
            skip_feedback_once: false,
            demand_cwr: false,
            r_cep: 0,
            pending_ce: 0,
            r_bytes: [0; 3],
            minlen: 0,
            prev_field: Ecn::NotEct,
            ack_ect_off: false,
            dup_high: 0,
            ect_off: false,
            probing: false,
            remark_fallback: false,
            validation: if cfg.ecn == EcnMode::Off {
                EcnValidation::NotNegotiated
            } else {
                EcnValidation::Unknown
            },
            cwr_queued: false,
            cwr_high: 0,
            s_cep: 0,
            s_opt: [E1B_INIT, CEB_INIT, E0B_INIT],
            last_ts: Time::ZERO,
            est_pending: 0,
            ce_carry: 0,
            ect_delivered_pkts: 0,
            ect_delivered_bytes: 0,
            ect_sent_pkts: 0,
            fb_total: 0,
        }
    }

    pub fn mode(&self) -> EcnMode {
        self.mode
    }

    pub fn validation(&self) -> EcnValidation {
        self.validation
    }

    /// The codepoint the sender asks for: the configured override, else the
    /// controller's (Linux `TCP_CONG_ECT_1_NEGOTIATION` / `WANTS_ECT_1`).
    fn wanted(&self, cc: EcnCodepoint) -> EcnCodepoint {
        self.override_cp.unwrap_or(cc)
    }

    /// Linux `tcp_ca_needs_ecn`: the controller (or the override) asks for
    /// ECT, so SYN, SYN/ACK, retransmissions and pure ACKs carry it too.
    fn needs_ecn(&self, cc: EcnCodepoint) -> bool {
        self.wanted(cc) != EcnCodepoint::NotEct
    }

    /// An L4S sender (ECT(1)) that has not fallen back to classic.
    fn l4s(&self, cc: EcnCodepoint) -> bool {
        !self.remark_fallback && self.wanted(cc) == EcnCodepoint::Ect1
    }

    /// The ECT codepoint of this sender, ignoring whether ECN is on: the
    /// override, else ECT(1) for an L4S controller and ECT(0) otherwise
    /// (Linux `INET_ECN_xmit`: negotiated ECN means ECT(0)).
    fn ect(&self, cc: EcnCodepoint) -> Ecn {
        if self.remark_fallback {
            return Ecn::Ect0;
        }
        match self.override_cp {
            Some(c) => to_ecn(c),
            None if cc == EcnCodepoint::Ect1 => Ecn::Ect1,
            None => Ecn::Ect0,
        }
    }

    /// The IP-ECN field of an outgoing segment (SYN and SYN/ACK: see
    /// [`Self::syn`], [`Self::syn_ack`]).
    ///
    /// RFC 3168 §6.1.4-§6.1.5 and Linux `tcp_ecn_send`: classic ECN sets ECT
    /// on new data only, unless the controller needs ECN (then on everything);
    /// AccECN sets it on every segment, pure ACKs and retransmissions
    /// included (Linux `INET_ECN_xmit` for the whole socket; RFC 9768
    /// §3.2.2.2 / RFC 8311 §4.3 allow it). SYN: only for a controller that
    /// needs ECN (Linux `tcp_ecn_send_syn`), never on a retransmission.
    pub fn ip_field(&self, kind: Kind, cc: EcnCodepoint) -> Ecn {
        match kind {
            Kind::Syn => {
                if self.want != EcnMode::Off && !self.syn_fallback && self.needs_ecn(cc) {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
            Kind::SynAck => {
                if self.mode != EcnMode::Off && !self.ect_off && self.needs_ecn(cc) {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
            _ if self.mode == EcnMode::Off || self.ect_off || self.probing => Ecn::NotEct,
            Kind::NewData => self.ect(cc),
            Kind::Retransmit | Kind::Control => {
                let ack_off = kind == Kind::Control && self.ack_ect_off;
                let all = self.mode == EcnMode::AccEcn || self.needs_ecn(cc);
                if all && !ack_off {
                    self.ect(cc)
                } else {
                    Ecn::NotEct
                }
            }
        }
    }

    // ----- handshake ----------------------------------------------------------

    /// Client: the ECN flags and IP-ECN field of a SYN. RFC 3168 §6.1.1:
    /// ECE|CWR; RFC 9768 §3.1.1: AE|CWR|ECE. A retransmitted SYN carries
    /// neither flags nor ECT (RFC 3168 §6.1.1.1 "MAY resend the SYN ... with
    /// CWR and ECE cleared"; Linux `tcp_ecn_clear_syn` on the first
    /// retransmission with `tcp_ecn_fallback = 1`).
    pub fn syn(&mut self, retransmission: bool, cc: EcnCodepoint) -> (Flags, Ecn) {
        self.syn_tx += 1;
        if retransmission && self.fallback && self.want != EcnMode::Off {
            self.syn_fallback = true;
        }
        let ip = self.ip_field(Kind::Syn, cc);
        self.syn_ect_sent = ip;
        let flags = match self.want {
            _ if self.syn_fallback => Flags::NONE,
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
        let mut m = asked.min(self.want);
        if m == EcnMode::Classic && self.l4s(cc) {
            // Linux TCP_CONG_NO_FALLBACK_RFC3168 (Prague): no classic feedback.
            m = EcnMode::Off;
        }
        self.mode = m;
        self.syn_ect_rcvd = ip;
        self.prev_field = ip;
        stats.ecn_mode = m;
        if m == EcnMode::Off {
            self.set_validation(EcnValidation::NotNegotiated, stats);
        }
    }

    /// Server in SYN-RECEIVED: the peer sent its SYN again. Without ECN flags
    /// the client has given up ECN (its RFC 3168 §6.1.1.1 fallback): so do we.
    /// (Linux keeps the request's first decision; see docs/models/ecn.md.)
    pub fn on_repeated_syn(&mut self, flags: Flags, stats: &mut EndpointStats) {
        if self.mode != EcnMode::Off && !flags.contains(Flags::CWR | Flags::ECE) {
            self.mode = EcnMode::Off;
            stats.ecn_mode = EcnMode::Off;
            if self.validation.can_become(EcnValidation::NotNegotiated) {
                self.set_validation(EcnValidation::NotNegotiated, stats);
            }
        }
    }

    /// Server: the ECN flags and IP-ECN field of a SYN/ACK (RFC 3168
    /// §6.1.1: ECE; RFC 9768 §3.1.2: ACE reflecting the SYN's IP-ECN field).
    /// After the third transmission (the second retransmission) ECT is given
    /// up: Linux `tcp_accecn_ace_fail_send_set_retrans` (`num_retrans > 1`),
    /// a likely ECT black hole.
    pub fn syn_ack(&mut self, cc: EcnCodepoint, stats: &mut EndpointStats) -> (Flags, Ecn) {
        let ip = self.ip_field(Kind::SynAck, cc);
        self.syn_tx += 1;
        self.syn_ect_sent = ip;
        if self.syn_tx > 2 && self.fallback && ip.is_ect() {
            self.ect_off = true;
            if self.validation.can_become(EcnValidation::Blackholed) {
                self.set_validation(EcnValidation::Blackholed, stats);
            }
        }
        let flags = match self.mode {
            EcnMode::Off => Flags::NONE,
            EcnMode::Classic => Flags::ECE,
            EcnMode::AccEcn => Flags::NONE.with_ace(reflector_ace(self.syn_ect_rcvd)),
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
        let mut m = if self.syn_fallback {
            EcnMode::Off
        } else {
            match self.want {
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
        self.mode = m;
        stats.ecn_mode = m;
        match m {
            EcnMode::Off => {
                let v = if self.syn_fallback {
                    EcnValidation::Blackholed
                } else {
                    EcnValidation::NotNegotiated
                };
                self.set_validation(v, stats);
            }
            EcnMode::Classic => {}
            EcnMode::AccEcn => {
                self.syn_ect_rcvd = ip;
                self.prev_field = ip;
                self.reflect_pending = true;
                let valid = self.check_reflection(ace, cc, stats);
                if ip == Ecn::Ce && valid {
                    // Linux tcp_ecn_rcv_synack: a CE SYN/ACK counts in r.cep
                    // (the server expects it: tcp_accecn_third_ack).
                    self.r_cep += 1;
                    self.pending_ce += 1;
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
        self.skip_feedback_once = true;
        if self.mode != EcnMode::AccEcn {
            return;
        }
        let ace = flags.ace();
        match ace {
            // A zero ACE is invalid either way (Linux: TCP_ACCECN_ACE_FAIL_RECV
            // on the third ACK; "Verify ACE!=0 in the 1st data ACK"): the
            // client is not in AccECN mode — it gave up ECN after a SYN
            // timeout — or the flags were zeroed. Stop ECT, ignore feedback.
            0 => {
                self.mode = EcnMode::Off;
                stats.ecn_mode = EcnMode::Off;
                self.ect_off = true;
                if self.validation.can_become(EcnValidation::NotNegotiated) {
                    self.set_validation(EcnValidation::NotNegotiated, stats);
                }
            }
            _ if !pure_ack => {}
            0b001 | 0b101 | 0b111 => {}
            _ => {
                let valid = self.check_reflection(ace, cc, stats);
                if valid && reflected(ace) == Some(Ecn::Ce) && self.s_cep == 0 {
                    self.s_cep = 1;
                }
            }
        }
    }

    /// RFC 9768 §3.1.5 / Linux `tcp_accecn_validate_syn_feedback`: compare
    /// the reflected IP-ECN field of our SYN (or SYN/ACK) with what we sent.
    /// ECT arriving as Not-ECT is bleaching; ECT(1) arriving as ECT(0) is
    /// re-marking (Linux accepts that as valid; we flag it, RFC 9000
    /// §13.4.2.1). Returns whether the reflection is a valid transition.
    fn check_reflection(&mut self, ace: u8, cc: EcnCodepoint, stats: &mut EndpointStats) -> bool {
        let (Some(got), sent) = (reflected(ace), self.syn_ect_sent) else {
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

    // ----- receiving half ----------------------------------------------------

    /// A segment arrived in a synchronized state (or completing the
    /// handshake) with IP-ECN field `ip`, `len` payload bytes at `seq` and
    /// `flags`; `duplicate`: all of its payload was received before. Returns
    /// whether an ACK should go out at once.
    pub fn on_receive(
        &mut self,
        ip: Ecn,
        seq: u64,
        len: u32,
        flags: Flags,
        duplicate: bool,
        stats: &mut EndpointStats,
    ) -> bool {
        let bytes = u64::from(len);
        match ip {
            Ecn::NotEct => stats.not_ect_bytes_received += bytes,
            Ecn::Ect0 => stats.ect0_bytes_received += bytes,
            Ecn::Ect1 => stats.ect1_bytes_received += bytes,
            Ecn::Ce => stats.ce_bytes_received += bytes,
        }
        if ip == Ecn::Ce {
            stats.ce_marks_received += 1;
        }
        let mut ack_now = false;
        match self.mode {
            EcnMode::Off => {}
            EcnMode::Classic => {
                if len > 0 {
                    // Linux tcp_ecn_accept_cwr: CWR ends the echo, and the
                    // sender's window may be tiny: ACK at once.
                    if flags.contains(Flags::CWR) {
                        self.demand_cwr = false;
                        ack_now = true;
                    }
                    // RFC 3168 §6.1.3 / Linux tcp_data_ecn_check: CE starts the
                    // echo; "better not delay acks" (quick-ACK mode).
                    if ip == Ecn::Ce {
                        if !self.demand_cwr {
                            ack_now = true;
                        }
                        self.demand_cwr = true;
                    }
                }
            }
            EcnMode::AccEcn => {
                // Linux tcp_ecn_received_counters: the ACE counter tracks all
                // segments, pure ACKs included; byte counters payload only.
                if ip == Ecn::Ce {
                    self.r_cep += 1;
                    self.pending_ce = (self.pending_ce + 1).min(15);
                }
                if let Some(f) = option_field(ip) {
                    if len > 0 {
                        self.r_bytes[f - 1] += bytes;
                        self.minlen = self.minlen.max(f as u8);
                    }
                }
                // RFC 9768 §3.2.2.5.1 change-triggered ACKs; Linux ACKs at
                // once on any change of the IP-ECN field (ecn_edge).
                if ip != self.prev_field {
                    self.prev_field = ip;
                    ack_now = true;
                }
                // Linux __tcp_accecn_process: received_ce_pending >=
                // TCP_ACCECN_ACE_MAX_DELTA forces an ACK before ACE wraps.
                if self.pending_ce >= ACE_MAX_DELTA {
                    ack_now = true;
                }
                // Linux only ever ACKs segments with data (a pure ACK is
                // never answered: tcp_rcv_established's pure-ACK path).
                ack_now &= len > 0;
                // The ACK-path black hole (not in Linux; docs/models/ecn.md):
                // old data arriving a *third* time (retransmitted again after
                // an earlier duplicate) means our ECT pure ACKs are not getting
                // through; send them Not-ECT (cf. Linux's "after the second
                // retransmission" rule for ACKs with the AccECN option lost
                // in the path, RFC 9768 §3.2.3.2.2). One retransmission
                // round (an RTO after ordinary ACK loss) does not trigger it.
                if duplicate && len > 0 && self.fallback {
                    if seq < self.dup_high {
                        self.ack_ect_off = true;
                    }
                    self.dup_high = self.dup_high.max(seq + bytes);
                }
            }
        }
        ack_now
    }

    /// The ECN header flags of an outgoing non-SYN segment, added to `flags`.
    /// Classic: ECE while echoing, CWR on the first new data after a
    /// reduction (RFC 3168 §6.1.2-§6.1.3, Linux `tcp_ecn_send`). AccECN: the
    /// ACE field = `r.cep + 5 mod 8` (RFC 9768 §3.2.2, Linux
    /// `tcp_accecn_set_ace`), or the handshake reflection on the client's
    /// first pure ACK.
    pub fn header_flags(&mut self, flags: Flags, new_data: bool, pure_ack: bool) -> Flags {
        match self.mode {
            EcnMode::Off => flags,
            EcnMode::Classic => {
                let mut f = flags;
                if self.demand_cwr {
                    f |= Flags::ECE;
                }
                if new_data && self.cwr_queued {
                    self.cwr_queued = false;
                    f |= Flags::CWR;
                }
                f
            }
            EcnMode::AccEcn => {
                if pure_ack && self.reflect_pending {
                    self.reflect_pending = false;
                    return flags.with_ace(reflector_ace(self.syn_ect_rcvd));
                }
                self.reflect_pending = false;
                self.pending_ce = 0;
                flags.with_ace(((self.r_cep + CEP_INIT) & 7) as u8)
            }
        }
    }

    /// The AccECN option for an outgoing segment with `sack` SACK blocks, and
    /// the SACK blocks left room for. Every pure ACK carries it, a data
    /// segment only when the counters changed (see the module
    /// documentation); `ts_bytes` is the space the timestamps option takes.
    ///
    /// Linux `tcp_options_fit_accecn`: as many counters as fit, at least the
    /// ones changed since the last option (`accecn_minlen`); to fit those,
    /// drop SACK blocks but never below two; if they still do not fit, no
    /// option.
    pub fn option(
        &mut self,
        pure_ack: bool,
        sack: u8,
        ts_bytes: u32,
    ) -> (Option<AccEcnOption>, u8) {
        // Data segments carry it only when our byte counters changed since
        // the last option (Linux "minimum" option mode, `accecn_minlen`): a
        // one-way sender, which receives no data, never adds it; in two-way
        // traffic it gives the peer the byte counters it needs to tell CE on
        // its data from CE on its ECT pure ACKs, which the ACE field also counts.
        if self.mode != EcnMode::AccEcn || !self.send_option || (!pure_ack && self.minlen == 0) {
            return (None, sack);
        }
        let required = self.minlen;
        let room = |n: u8| {
            TCP_OPTION_SPACE
                .saturating_sub(ts_bytes)
                .saturating_sub(crate::segment::sack_option_bytes(n))
        };
        let mut n = sack.min(MAX_SACK_BLOCKS as u8);
        loop {
            let fits = (required..=3)
                .rev()
                .find(|&f| crate::segment::accecn_option_bytes(f) <= room(n));
            if let Some(fields) = fits {
                self.minlen = 0;
                let w = |v: u64, init: u64| ((v + init) & MASK24) as u32;
                let opt = AccEcnOption {
                    fields,
                    e1b: w(self.r_bytes[0], E1B_INIT),
                    ceb: w(self.r_bytes[1], CEB_INIT),
                    e0b: w(self.r_bytes[2], E0B_INIT),
                };
                return (Some(opt), n);
            }
            if n > 2 && required > 0 {
                n -= 1;
                continue;
            }
            return (None, sack);
        }
    }

    // ----- sending half --------------------------------------------------------

    /// A data segment left with IP-ECN field `ip`.
    pub fn on_data_sent(&mut self, ip: Ecn, len: u32, stats: &mut EndpointStats) {
        match ip {
            Ecn::Ect0 => stats.ect0_bytes_sent += u64::from(len),
            Ecn::Ect1 => stats.ect1_bytes_sent += u64::from(len),
            _ => {}
        }
        if ip.is_ect() {
            self.ect_sent_pkts += 1;
        }
    }

    /// Process the ECN feedback of an ACK `seg` that delivered `d` (after
    /// SACK and cumulative processing).
    pub fn on_ack(
        &mut self,
        seg: &Segment,
        d: &Delivered,
        mss: u64,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) -> Feedback {
        let (flags, ts_val, opt) = (seg.flags, seg.ts_val, seg.accecn);
        if self.mode == EcnMode::Off {
            return Feedback::default();
        }
        if self.skip_feedback_once {
            // Linux __tcp_accecn_process: "ACE field is not available during
            // handshake" (FLAG_SYN_ACKED).
            self.skip_feedback_once = false;
            self.last_ts = self.last_ts.max(ts_val);
            return Feedback::default();
        }
        // Linux: "Reordered ACK or uncertain due to lack of data to send and
        // ts" — only ACKs that deliver something or carry a newer TSval.
        if d.pkts == 0 && ts_val <= self.last_ts {
            return Feedback::default();
        }
        self.last_ts = self.last_ts.max(ts_val);
        self.ect_delivered_pkts += d.ect_pkts;
        self.ect_delivered_bytes += d.ect_bytes;

        let (ce_raw, congestion) = match self.mode {
            EcnMode::Off => (0, false),
            EcnMode::Classic => {
                if flags.contains(Flags::ECE) {
                    // Linux tcp_count_delivered: an ECE ACK marks everything it
                    // newly delivers as CE (counted here; the controller gets
                    // the classic signal, EcnEcho, not CE bytes).
                    stats.ce_packets_fed_back += d.pkts;
                    (0, true)
                } else {
                    (0, false)
                }
            }
            EcnMode::AccEcn => {
                let b = self.accecn_feedback(flags.ace(), opt, d, mss, cc, stats);
                (b, b > 0)
            }
        };
        if self.probing && d.pkts > 0 {
            // The black-hole probe's answer: with the option, the peer's byte
            // counters say whether any ECT byte ever arrived (a lost first
            // flight of ACKs is not a black hole); without it, Not-ECT packets
            // getting through while no ECT packet ever did is all we know.
            self.probing = false;
            let ect_arrived = if self.mode == EcnMode::AccEcn && opt.is_some() {
                self.fb_total > 0
            } else {
                self.ect_delivered_pkts > 0
            };
            if !ect_arrived {
                self.fail(EcnValidation::Blackholed, cc, stats);
            }
        }
        if self.validation == EcnValidation::Unknown && self.ect_delivered_pkts >= TESTING_PACKETS {
            self.set_validation(EcnValidation::Capable, stats);
        }
        if self.ect_off {
            // Bleached / black hole / failed: "MUST NOT respond to AccECN
            // feedback" (RFC 9768 §3.2.2.1); the counters above still run.
            self.ce_carry = 0;
            return Feedback::default();
        }
        // A classic response gets the classic signal only (EcnEcho, decided by
        // the endpoint), no CE bytes. Otherwise keep ce_bytes <= acked bytes
        // per ACK (controllers compute fractions); the rest is carried to the
        // next ACKs, so the total is exact.
        if !self.classic_response(cc) {
            self.ce_carry += ce_raw;
        }
        let ce_bytes = self.ce_carry.min(d.bytes);
        self.ce_carry -= ce_bytes;
        stats.ce_bytes_fed_back += ce_bytes;
        Feedback {
            ce_bytes,
            congestion,
        }
    }

    /// RFC 9768 §3.2.2.5 and Appendix A.2, as Linux `__tcp_accecn_process`:
    /// newly CE-marked packets from the ACE delta and CE bytes from the
    /// option; also the validation checks on the option's counters.
    fn accecn_feedback(
        &mut self,
        ace: u8,
        opt: Option<AccEcnOption>,
        d: &Delivered,
        mss: u64,
        cc: EcnCodepoint,
        stats: &mut EndpointStats,
    ) -> u64 {
        // Option deltas (mod 2^24). An absent field did not change: the
        // receiver always sends the fields that changed or no option (Linux
        // accecn_minlen), so a shorter option still gives exact deltas.
        let opt_d = opt.map(|o| {
            let vals = [u64::from(o.e1b), u64::from(o.ceb), u64::from(o.e0b)];
            let mut deltas = [0u64; 3];
            for (i, (&v, last)) in vals.iter().zip(self.s_opt.iter_mut()).enumerate() {
                if usize::from(o.fields) > i {
                    deltas[i] = (v.wrapping_sub(*last)) & MASK24;
                    *last = v;
                }
            }
            deltas
        });

        // ACE delta: corrected_ace = ACE - 5; delta = (corrected_ace - s.cep) mod 8.
        let corrected = (u64::from(ace) + 8 - CEP_INIT) & 7;
        let delta = (corrected + 8 - (self.s_cep & 7)) & 7;
        let n = d.pkts;
        let d_cep = if n <= 7 {
            delta
        } else {
            // RFC 9768 Appendix A.2.1: with more than 7 newly delivered
            // packets the ACE may have wrapped: assume the most CE packets
            // that is consistent with the delta (safe_delta), unless the
            // option's CE bytes say otherwise (Linux, with
            // TCP_ACCECN_SAFETY_SHIFT).
            let safe = n - ((n - delta) & 7);
            match opt_d {
                Some(od) if od[1] == 0 => delta,
                Some(od) => {
                    let d_ceb = od[1];
                    if n >= 16 {
                        if d.bytes <= d_ceb {
                            safe
                        } else {
                            let est = (d_ceb * n).div_ceil(d.bytes);
                            safe.min(delta + (est & !7))
                        }
                    } else if d_ceb > delta * mss {
                        safe
                    } else if d_ceb < (safe * mss) >> SAFETY_SHIFT {
                        delta
                    } else {
                        safe
                    }
                }
                None => safe,
            }
        };
        self.s_cep += d_cep;
        stats.ce_packets_fed_back += d_cep;

        match opt_d {
            Some(od) => {
                let [d_e1b, d_ceb, d_e0b] = od;
                stats.fb_ect1_bytes += d_e1b;
                stats.fb_ce_bytes += d_ceb;
                stats.fb_ect0_bytes += d_e0b;
                self.fb_total += d_e1b + d_ceb + d_e0b;
                // Validation (RFC 9000 §13.4.2.1 applied to byte counters):
                // more ECT(0) bytes received than we ever sent as ECT(0) is
                // re-marking; fewer ECT/CE bytes received than the ECT bytes
                // acknowledged is bleaching.
                if stats.fb_ect0_bytes > stats.ect0_bytes_sent {
                    self.fail(EcnValidation::Remarked, cc, stats);
                }
                if self.fb_total < self.ect_delivered_bytes {
                    self.fail(EcnValidation::Bleached, cc, stats);
                }
                // Estimates passed on earlier are part of this delta.
                let b = d_ceb.saturating_sub(self.est_pending);
                self.est_pending = self.est_pending.saturating_sub(d_ceb);
                b
            }
            None => {
                // RFC 9768 §3.2.2.5: without the option, CE bytes ≈ packets × SMSS.
                let b = d_cep * mss;
                self.est_pending += b;
                b
            }
        }
    }

    /// Whether the controller gets classic feedback — at most one
    /// `CongestionEvent::EcnEcho` per RTT and no `ce_bytes` — rather than
    /// the CE bytes: in classic mode; under AccECN for a controller that asks
    /// for no codepoint (Reno, Cubic, BBR: Linux CCs without
    /// `TCP_CONG_NEEDS_ECN`, which AccECN feedback puts into CWR like an
    /// ECE); and for an L4S sender after the re-marking fallback. DCTCP
    /// (ECT(0)) and Prague (ECT(1)) read the CE bytes.
    pub fn classic_response(&self, cc: EcnCodepoint) -> bool {
        !self.ect_off
            && match self.mode {
                EcnMode::Off => false,
                EcnMode::Classic => true,
                EcnMode::AccEcn => self.remark_fallback || cc == EcnCodepoint::NotEct,
            }
    }

    /// RFC 3168 §6.1.2: not more than one reduction per window of data: the
    /// previous one's window (SND.NXT when it happened) must be acknowledged
    /// *and passed*. An ACK for exactly that SND.NXT acknowledges only data
    /// sent before the reduction, so its ECE was set before the CWR segment
    /// (the first new data, at that SND.NXT) arrived — Linux leaves CWR only
    /// when `snd_una != high_seq` ("CWR is to be held something *above*
    /// high_seq is ACKed for CWR bit to reach receiver", `tcp_fastretrans_alert`).
    pub fn may_echo(&self, snd_una: u64) -> bool {
        snd_una > self.cwr_high
    }

    /// A window reduction happened (an ECN echo, or a loss episode) with
    /// `snd_nxt`: classic mode sets CWR on the next new data (Linux
    /// `tcp_init_cwnd_reduction` → `tcp_ecn_queue_cwr`).
    pub fn on_reduction(&mut self, snd_nxt: u64, echo: bool, stats: &mut EndpointStats) {
        self.cwr_high = snd_nxt;
        if self.mode == EcnMode::Classic {
            self.cwr_queued = true;
        }
        if echo {
            stats.ecn_echo_events += 1;
        }
    }

    /// A data retransmission timeout: if ECT packets were sent and not one
    /// got through while still testing, suspect a black hole (RFC 9000
    /// §13.4.2.2: "all packets that were sent with an ECT codepoint are
    /// eventually deemed lost"): retransmit Not-ECT and let the next ACK
    /// decide (`on_ack`). Linux has no data-path equivalent (only the SYN
    /// and SYN/ACK fallbacks).
    pub fn on_data_rto(&mut self) {
        if self.mode != EcnMode::Off
            && self.fallback
            && self.validation == EcnValidation::Unknown
            && self.ect_sent_pkts > 0
            && self.ect_delivered_pkts == 0
        {
            self.probing = true;
        }
    }

    /// Switch an L4S sender to classic ECN behaviour: ECT(0) and classic
    /// (once per RTT) reaction to CE feedback, no `ce_bytes`.
    pub fn fall_back_to_classic(&mut self) {
        self.remark_fallback = true;
    }

    /// Record a failure and take its fallback (if `ecn_fallback`).
    fn fail(&mut self, v: EcnValidation, cc: EcnCodepoint, stats: &mut EndpointStats) {
        if self.validation == v || !self.validation.can_become(v) {
            return;
        }
        self.set_validation(v, stats);
        if !self.fallback {
            return;
        }
        match v {
            EcnValidation::Bleached | EcnValidation::Blackholed => self.ect_off = true,
            EcnValidation::Remarked if self.l4s(cc) => self.remark_fallback = true,
            _ => {}
        }
    }

    fn set_validation(&mut self, v: EcnValidation, stats: &mut EndpointStats) {
        if self.validation == v {
            return;
        }
        assert!(
            self.validation.can_become(v),
            "illegal ECN validation transition {} -> {}",
            self.validation,
            v
        );
        self.validation = v;
        stats.ecn_validation = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflector_table_matches_linux() {
        // REFERENCES §2.5: Not-ECT 0b010, ECT(1) 0b011, ECT(0) 0b100, CE 0b110.
        assert_eq!(reflector_ace(Ecn::NotEct), 0b010);
        assert_eq!(reflector_ace(Ecn::Ect1), 0b011);
        assert_eq!(reflector_ace(Ecn::Ect0), 0b100);
        assert_eq!(reflector_ace(Ecn::Ce), 0b110);
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(reflected(reflector_ace(e)), Some(e));
        }
        for ace in [0, 1, 5, 7] {
            assert_eq!(reflected(ace), None);
        }
    }

    #[test]
    fn validation_edges_only_get_worse() {
        use EcnValidation::*;
        assert!(Unknown.can_become(Capable));
        assert!(Capable.can_become(Remarked));
        assert!(Remarked.can_become(Bleached));
        assert!(!Bleached.can_become(Capable));
        assert!(!Capable.can_become(Unknown));
        assert!(!Blackholed.can_become(Bleached));
        assert!(!NotNegotiated.can_become(Capable));
    }
}
