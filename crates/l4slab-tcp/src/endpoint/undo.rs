//! Undoing spurious window reductions and F-RTO, as Linux does them
//! (`tcp_input.c`: `tcp_init_undo`, `tcp_check_dsack`, `tcp_may_undo`,
//! `tcp_packet_delayed`, `tcp_try_undo_recovery`, `tcp_try_undo_dsack`,
//! `tcp_try_undo_loss`, `tcp_process_loss`, `tcp_undo_cwnd_reduction`).
//!
//! * **Undo state** (`undo_marker`, `undo_retrans`, `retrans_stamp`): set when
//!   a recovery episode or a timeout begins; every retransmission counts one
//!   up, every D-SACK (RFC 2883) for data above the marker counts its
//!   segments down. A reduction may be undone (`tcp_may_undo`) when every
//!   retransmission was reported as a duplicate, or when the ACK echoes a
//!   timestamp older than the first retransmission (Eifel, RFC 3522: the
//!   original arrived).
//! * **Fast recovery**: undone when the episode ends and it may be undone
//!   (`tcp_try_undo_recovery`), or earlier once every retransmission has been
//!   D-SACKed (`tcp_try_undo_dsack`).
//! * **After a timeout** (`tcp_process_loss`): an ACK of new data that may be
//!   undone ends the timeout's recovery with the window restored and the loss
//!   marks cleared (`tcp_try_undo_loss`). With F-RTO (RFC 5682 §3, the SACK
//!   variant Linux runs): the first ACK that acknowledges new data, before
//!   anything else was sent, lets the sender send *new* data instead of
//!   retransmitting (step 2b); if data never retransmitted is then
//!   acknowledged or SACKed, the timeout was spurious (step 3b) and is undone;
//!   a duplicate ACK or SACK of anything shows the loss was real (step 3a)
//!   and recovery goes on as without F-RTO.
//! * An ACK with ECN-Echo during the episode forbids restoring the window
//!   (Linux `prior_ssthresh = 0` on `FLAG_ECE`); the recovery still ends.
//!
//! Deviations: no partial undo (`tcp_try_undo_partial`, an undo on a partial
//! ACK when reordering filled the hole); D-SACK does not widen RACK's
//! reordering window (RFC 8985 §6.2 step 4). Undo after a timeout clears the
//! retransmission-in-flight marks with the loss marks (Linux keeps them, so
//! its `pipe` counts both copies until they are acknowledged).

use l4slab_cc::CongestionEvent;
use l4slab_core::Time;

use super::{Endpoint, EndpointCtx};
use crate::state::Recovery;

/// Linux's undo bookkeeping for the current episode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct UndoState {
    /// `undo_marker`: SND.UNA when the episode began; `None` = nothing to undo.
    pub marker: Option<u64>,
    /// `undo_retrans`: retransmissions not yet reported by D-SACK; `None`
    /// before the first one (Linux -1).
    pub retrans: Option<u64>,
    /// `retrans_stamp`: when the episode's first retransmission left.
    pub stamp: Option<Time>,
    /// An ECN-Echo arrived during the episode: the window stays reduced.
    pub ece: bool,
}

/// What one ACK showed, for the undo and F-RTO decisions (Linux `FLAG_*`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AckFacts {
    /// `FLAG_SND_UNA_ADVANCED`.
    pub una_advanced: bool,
    /// `FLAG_ORIG_SACK_ACKED`: a segment never retransmitted was newly
    /// acknowledged or SACKed.
    pub orig_acked: bool,
    /// `FLAG_DATA_SACKED`: new data was SACKed.
    pub data_sacked: bool,
    /// A duplicate ACK (nothing new acknowledged, no data, no SACK).
    pub dupack: bool,
    /// The ACK's timestamp echo.
    pub ts_ecr: Time,
}

impl Endpoint {
    /// Linux `tcp_init_undo`, when an episode or a timeout begins.
    pub(super) fn init_undo(&mut self) {
        self.undo = UndoState {
            marker: Some(self.snd_una),
            retrans: None,
            stamp: None,
            ece: false,
        };
    }

    /// A retransmission left (Linux `tcp_retransmit_skb`).
    pub(super) fn undo_on_retransmit(&mut self, now: Time) {
        self.undo.retrans = Some(self.undo.retrans.unwrap_or(0) + 1);
        self.undo.stamp.get_or_insert(now);
    }

    /// A D-SACK block `[start, end)` arrived (Linux `tcp_check_dsack`,
    /// `tcp_dsack_seen`): its segments were received twice.
    pub(super) fn on_dsack(&mut self, start: u64, end: u64) {
        self.stats.dsacks_received += 1;
        let mss = u64::from(self.cfg.mss);
        let dup_segs = (end - start).div_ceil(mss);
        if let (Some(m), Some(r)) = (self.undo.marker, self.undo.retrans) {
            if end > m && r > 0 {
                self.undo.retrans = Some(r.saturating_sub(dup_segs));
            }
        }
    }

    /// Linux `tcp_may_undo`: every retransmission D-SACKed, or the ACK was
    /// sent for a transmission older than the first retransmission
    /// (`tcp_packet_delayed`; an echo of 0 says nothing, as Linux requires
    /// `rcv_tsecr != 0`).
    fn may_undo(&self, ts_ecr: Time) -> bool {
        let delayed = ts_ecr > Time::ZERO && self.undo.stamp.is_some_and(|t| ts_ecr < t);
        self.cfg.undo && self.undo.marker.is_some() && (self.undo.retrans == Some(0) || delayed)
    }

    /// Linux `tcp_undo_cwnd_reduction`: the controller restores its window
    /// (unless ECN-Echo forbade it); after a timeout the loss marks go too.
    fn undo_reduction(&mut self, now: Time, unmark_loss: bool, ctx: &mut EndpointCtx<'_>) {
        if unmark_loss {
            self.sb.unmark_lost();
        }
        self.stats.undos += 1;
        self.undo.marker = None;
        self.frto = false;
        self.set_recovery(Recovery::Open);
        let ev = if self.undo.ece {
            CongestionEvent::RecoveryEnd
        } else {
            CongestionEvent::Undo
        };
        self.cc_congestion(now, ev, ctx);
    }

    /// The recovery state machine for one ACK, after the (S)ACKed data has
    /// been processed: ends or undoes the current episode (Linux
    /// `tcp_fastretrans_alert` steps D and E for Recovery and Loss).
    pub(super) fn recovery_on_ack(&mut self, now: Time, f: AckFacts, ctx: &mut EndpointCtx<'_>) {
        match self.recovery {
            Recovery::Open => {}
            Recovery::Fast { recover, .. } => {
                if self.snd_una >= recover {
                    // RFC 6582 §3.2 step 3 / RFC 6675 §5 (A), or
                    // tcp_try_undo_recovery's "happy end".
                    if self.may_undo(f.ts_ecr) {
                        self.undo_reduction(now, false, ctx);
                    } else {
                        self.set_recovery(Recovery::Open);
                        self.cc_congestion(now, CongestionEvent::RecoveryEnd, ctx);
                    }
                } else if self.cfg.undo
                    && self.undo.marker.is_some()
                    && self.undo.retrans == Some(0)
                {
                    // tcp_try_undo_dsack.
                    self.undo_reduction(now, false, ctx);
                }
            }
            Recovery::Rto { recover } => self.process_loss(now, recover, f, ctx),
        }
    }

    /// Linux `tcp_process_loss` (with RFC 5682 §3 F-RTO).
    fn process_loss(&mut self, now: Time, recover: u64, f: AckFacts, ctx: &mut EndpointCtx<'_>) {
        let recovered = self.snd_una >= recover;
        if f.una_advanced && self.may_undo(f.ts_ecr) {
            // tcp_try_undo_loss(sk, false): the timeout was spurious.
            self.stats.spurious_rtos += 1;
            self.undo_reduction(now, true, ctx);
            return;
        }
        if self.frto {
            if f.orig_acked && self.cfg.undo && self.undo.marker.is_some() {
                // Step 3b: never-retransmitted data arrived: spurious.
                self.stats.spurious_rtos += 1;
                self.undo_reduction(now, true, ctx);
                return;
            }
            if self.snd_nxt > recover {
                if f.data_sacked || f.dupack {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if f.una_advanced && !recovered {
                // Step 2b: send new data, if there is any and the peer's
                // window allows it; otherwise conventional recovery.
                let room = self.snd_una + self.snd_wnd;
                if self
                    .next_new_segment()
                    .is_some_and(|(len, fin)| self.snd_nxt + len + u64::from(fin) <= room)
                {
                    self.frto_send_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // F-RTO step 2a / 3b first part: tcp_try_undo_recovery.
            if self.may_undo(f.ts_ecr) {
                self.undo_reduction(now, false, ctx);
            } else {
                self.frto = false;
                self.set_recovery(Recovery::Open);
                self.cc_congestion(now, CongestionEvent::RecoveryEnd, ctx);
            }
        }
    }
}
