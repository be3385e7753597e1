//! The receiving half of ECN: counting what arrives and feeding it back.
//!
//! Classic (RFC 3168 §6.1.3, Linux `tcp_data_ecn_check`,
//! `tcp_ecn_accept_cwr`): the [`Echo`] latch — ECE on every segment from a CE
//! arrival until a CWR arrives. AccECN (RFC 9768 §3.2, Linux
//! `tcp_ecn_received_counters`): `r.cep` in the ACE field of every segment,
//! the byte counters in the AccECN option (RFC 9768 §3.2.3, Linux
//! `tcp_options_fit_accecn`), change-triggered ACKs and an ACK before the ACE
//! field could wrap.

use l4slab_core::Ecn;

use super::negotiation::reflector_ace;
use super::{Checked, EcnState, Journal, Machine, CEB_INIT, CEP_INIT, E0B_INIT, E1B_INIT, MASK24};
use crate::config::EcnMode;
use crate::segment::{AccEcnOption, Flags, MAX_SACK_BLOCKS};
use crate::stats::EndpointStats;

/// Linux `TCP_ACCECN_ACE_MAX_DELTA`: ACK at once when this many CE packets
/// have not been fed back, so the 3-bit ACE field cannot wrap unseen.
pub(crate) const ACE_MAX_DELTA: u8 = 6;
/// TCP option space (RFC 9293 §3.1: data offset of 15 words).
const TCP_OPTION_SPACE: u32 = 40;

/// The classic receiver's ECE latch (RFC 3168 §6.1.3). Edges: `Idle` →
/// `Echoing` (a data segment arrived CE), `Echoing` → `Idle` (a data segment
/// with CWR arrived).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Echo {
    #[default]
    Idle,
    /// Set ECE on every segment we send until a CWR arrives.
    Echoing,
}

impl Machine for Echo {
    const NAME: &'static str = "ece";

    fn name(self) -> &'static str {
        match self {
            Echo::Idle => "idle",
            Echo::Echoing => "echoing",
        }
    }

    fn may_enter(self, next: Echo) -> bool {
        self != next
    }
}

/// The receiving half of [`EcnState`].
#[derive(Debug, Default)]
pub(super) struct Receiver {
    /// Classic: the ECE latch.
    pub echo: Checked<Echo>,
    /// AccECN `r.cep` without the initial offset.
    pub r_cep: u64,
    /// CE packets not yet fed back (Linux `received_ce_pending`, saturates at 15).
    pub pending_ce: u8,
    /// Received payload bytes marked ECT(1), CE, ECT(0) (option order 1),
    /// without the initial offsets.
    pub r_bytes: [u64; 3],
    /// Fields the next option needs: the highest order-1 field changed since
    /// the last option (Linux `accecn_minlen`).
    pub minlen: u8,
    /// IP-ECN field of the previous segment (Linux `prev_ecnfield`).
    pub prev_field: Ecn,
}

impl Receiver {
    fn set_echo(&mut self, next: Echo, journal: &mut Journal) {
        if self.echo.get() != next {
            journal.record(self.echo.transition(next));
        }
    }
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

impl EcnState {
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
        match self.mode() {
            EcnMode::Off => {}
            EcnMode::Classic => {
                if len > 0 {
                    // Linux tcp_ecn_accept_cwr: CWR ends the echo, and the
                    // sender's window may be tiny: ACK at once.
                    if flags.contains(Flags::CWR) {
                        self.rx.set_echo(Echo::Idle, &mut self.journal);
                        ack_now = true;
                    }
                    // RFC 3168 §6.1.3 / Linux tcp_data_ecn_check: CE starts the
                    // echo; "better not delay acks" (quick-ACK mode).
                    if ip == Ecn::Ce {
                        if self.rx.echo.get() == Echo::Idle {
                            ack_now = true;
                        }
                        self.rx.set_echo(Echo::Echoing, &mut self.journal);
                    }
                }
            }
            EcnMode::AccEcn => {
                // Linux tcp_ecn_received_counters: the ACE counter tracks all
                // segments, pure ACKs included; byte counters payload only.
                if ip == Ecn::Ce {
                    self.rx.r_cep += 1;
                    self.rx.pending_ce = (self.rx.pending_ce + 1).min(15);
                }
                if let Some(f) = option_field(ip) {
                    if len > 0 {
                        self.rx.r_bytes[f - 1] += bytes;
                        self.rx.minlen = self.rx.minlen.max(f as u8);
                    }
                }
                // RFC 9768 §3.2.2.5.1 change-triggered ACKs; Linux ACKs at
                // once on any change of the IP-ECN field (ecn_edge).
                if ip != self.rx.prev_field {
                    self.rx.prev_field = ip;
                    ack_now = true;
                }
                // Linux __tcp_accecn_process: received_ce_pending >=
                // TCP_ACCECN_ACE_MAX_DELTA forces an ACK before ACE wraps.
                if self.rx.pending_ce >= ACE_MAX_DELTA {
                    ack_now = true;
                }
                // Linux only ever ACKs segments with data (a pure ACK is
                // never answered: tcp_rcv_established's pure-ACK path).
                ack_now &= len > 0;
                // The ACK-path black hole (validation.rs; not in Linux).
                if duplicate && len > 0 && self.fallback {
                    self.note_duplicate(seq, bytes);
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
        match self.mode() {
            EcnMode::Off => flags,
            EcnMode::Classic => {
                let mut f = flags;
                if self.rx.echo.get() == Echo::Echoing {
                    f |= Flags::ECE;
                }
                // The sender's CWR (sender.rs, `on_reduction`).
                if new_data && self.tx.cwr_queued {
                    self.tx.cwr_queued = false;
                    f |= Flags::CWR;
                }
                f
            }
            EcnMode::AccEcn => {
                if pure_ack && self.hs.reflect_pending {
                    self.hs.reflect_pending = false;
                    return flags.with_ace(reflector_ace(self.hs.syn_ect_rcvd));
                }
                self.hs.reflect_pending = false;
                self.rx.pending_ce = 0;
                flags.with_ace(((self.rx.r_cep + CEP_INIT) & 7) as u8)
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
        if self.mode() != EcnMode::AccEcn || !self.send_option || (!pure_ack && self.rx.minlen == 0)
        {
            return (None, sack);
        }
        let required = self.rx.minlen;
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
                self.rx.minlen = 0;
                let w = |v: u64, init: u64| ((v + init) & MASK24) as u32;
                let opt = AccEcnOption {
                    fields,
                    e1b: w(self.rx.r_bytes[0], E1B_INIT),
                    ceb: w(self.rx.r_bytes[1], CEB_INIT),
                    e0b: w(self.rx.r_bytes[2], E0B_INIT),
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
}
