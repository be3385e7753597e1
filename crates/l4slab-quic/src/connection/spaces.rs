//! Packet number spaces, RFC 9000 §12.3: Initial, Handshake and Application
//! Data (0-RTT and 1-RTT share the last), each with its own packet numbers,
//! sent-packet record, ACK state and CRYPTO stream.
//!
//! The sent-packet record is a ring of consecutive packet numbers (every
//! number sent gets an entry, ACK-only packets included), so a packet is
//! found by index; entries leave from the front once acknowledged or long
//! lost. Packet numbers are never reused (§12.3: "A packet number MUST NOT be
//! reused within a packet number space"): retransmitted data goes into new
//! packets through the per-stream retransmission queues.
//!
//! Two indexes keep the work per ACK proportional to the packets it newly
//! acknowledges or declares lost, not to the window: the oldest outstanding
//! packet number (every older entry is acknowledged or lost, and states
//! never go back to outstanding, so it only moves forward), and the packet
//! numbers of the entries declared lost (kept for RFC 9002 §6.1's spurious
//! loss, which an ACK below the oldest outstanding can only be about).

use std::collections::VecDeque;

use l4slab_cc::rate::{RatePacket, TxSnapshot};
use l4slab_core::{Ecn, Time};

use super::ack::AckState;
use super::streams::{RecvBuf, SendBuf};
use crate::wire::PnSpace;

/// What a sent packet carried that must be repeated if it is lost (§13.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunk {
    #[default]
    None,
    Crypto {
        offset: u64,
        len: u32,
    },
    Stream {
        id: u64,
        offset: u64,
        len: u32,
        fin: bool,
    },
    MaxStreamData {
        id: u64,
    },
    StreamDataBlocked {
        id: u64,
    },
}

/// Chunks a packet records; a packet carries at most this many.
pub const MAX_CHUNKS: usize = 6;

/// Sent-packet records kept besides those in flight (see `push_sent`).
pub const MAX_SENT_RECORDS: usize = 8192;

/// Control frames a packet carried (bit flags).
pub mod ctrl {
    pub const HANDSHAKE_DONE: u8 = 1;
    pub const NEW_TOKEN: u8 = 2;
    pub const MAX_DATA: u8 = 4;
    pub const MAX_STREAMS: u8 = 8;
    pub const DATA_BLOCKED: u8 = 16;
    pub const PING: u8 = 32;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentState {
    Outstanding,
    Acked,
    /// Declared lost at this time; kept a while to notice a spurious loss.
    Lost {
        at: Time,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentPacket {
    pub pn: u64,
    pub time_sent: Time,
    /// Bytes on the wire (the packet, not the datagram).
    pub size: u32,
    pub ack_eliciting: bool,
    /// RFC 9002 §2: "in flight": ack-eliciting or PADDING-carrying, and not
    /// yet acked, lost or discarded. Here: ack-eliciting.
    pub in_flight: bool,
    pub state: SentState,
    pub ecn: Ecn,
    pub zero_rtt: bool,
    pub chunks: [Chunk; MAX_CHUNKS],
    pub ctrl: u8,
    /// Delivery-rate snapshot at its send (`l4slab_cc::rate`).
    pub rate: TxSnapshot,
}

/// The delivery-rate estimator samples per packet (`l4slab_cc::rate`); the
/// packet number orders packets sent at the same time.
impl RatePacket for SentPacket {
    fn sent_time(&self) -> Time {
        self.time_sent
    }
    fn tx_order(&self) -> u64 {
        self.pn
    }
    fn tx_snapshot(&self) -> &TxSnapshot {
        &self.rate
    }
}

impl SentPacket {
    pub fn chunks(&self) -> impl Iterator<Item = Chunk> + '_ {
        self.chunks
            .iter()
            .copied()
            .take_while(|c| *c != Chunk::None)
    }
}

#[derive(Debug)]
pub struct PacketSpace {
    pub id: PnSpace,
    pub next_pn: u64,
    /// Entries for packet numbers `sent[0].pn ..`, consecutive.
    pub sent: VecDeque<SentPacket>,
    /// No entry below this packet number is `Outstanding` (see
    /// [`PacketSpace::first_outstanding`]).
    oldest_outstanding: u64,
    /// Packet numbers of the entries in `Lost` state, ascending (an entry
    /// acknowledged later may linger until the next ACK or trim reaches it).
    pub lost: VecDeque<u64>,
    pub largest_acked: Option<u64>,
    /// RFC 9002 A.2 `loss_time[pn_space]`.
    pub loss_time: Option<Time>,
    /// RFC 9002 A.2 `time_of_last_ack_eliciting_packet[pn_space]`.
    pub time_of_last_ack_eliciting: Option<Time>,
    pub ack_eliciting_in_flight: u64,
    pub bytes_in_flight: u64,
    pub rx: AckState,
    /// Our CRYPTO stream: its bytes (the handshake stand-in) and progress.
    pub crypto_out: Vec<u8>,
    pub crypto_send: SendBuf,
    pub crypto_recv: RecvBuf,
    /// The first bytes of the peer's CRYPTO stream (message header).
    pub crypto_head: [u8; 64],
    /// Keys dropped (RFC 9001 §4.9): nothing is sent or accepted any more.
    pub discarded: bool,
    /// PTO probes still to send (RFC 9002 §6.2.4), not blocked by cwnd.
    pub probes: u8,
}

impl PacketSpace {
    pub fn new(id: PnSpace) -> Self {
        PacketSpace {
            id,
            next_pn: 0,
            sent: VecDeque::new(),
            oldest_outstanding: 0,
            lost: VecDeque::new(),
            largest_acked: None,
            loss_time: None,
            time_of_last_ack_eliciting: None,
            ack_eliciting_in_flight: 0,
            bytes_in_flight: 0,
            rx: AckState::new(),
            crypto_out: Vec::new(),
            crypto_send: SendBuf::default(),
            crypto_recv: RecvBuf::default(),
            crypto_head: [0; 64],
            discarded: false,
            probes: 0,
        }
    }

    pub fn get(&self, pn: u64) -> Option<&SentPacket> {
        let first = self.sent.front()?.pn;
        let i = pn.checked_sub(first)?;
        self.sent.get(usize::try_from(i).ok()?)
    }

    pub fn get_mut(&mut self, pn: u64) -> Option<&mut SentPacket> {
        let first = self.sent.front()?.pn;
        let i = pn.checked_sub(first)?;
        self.sent.get_mut(usize::try_from(i).ok()?)
    }

    pub fn push_sent(&mut self, p: SentPacket) {
        // Consecutive packet numbers at non-decreasing times: loss detection
        // relies on send times growing with packet numbers (recovery.rs).
        debug_assert!(self
            .sent
            .back()
            .is_none_or(|b| b.pn + 1 == p.pn && b.time_sent <= p.time_sent));
        if p.in_flight {
            self.ack_eliciting_in_flight += 1;
            self.bytes_in_flight += u64::from(p.size);
            self.time_of_last_ack_eliciting = Some(p.time_sent);
        }
        self.sent.push_back(p);
        // The memory bound: records out of flight (ACK-only packets the peer
        // never acknowledged, losses kept for a spurious-loss verdict) are
        // forgotten from the oldest past MAX_SENT_RECORDS.
        while self.sent.len() > MAX_SENT_RECORDS && self.sent.front().is_some_and(|f| !f.in_flight)
        {
            self.sent.pop_front();
        }
    }

    /// The packet number of the oldest `Outstanding` entry (or the next one
    /// to be sent), and whether an `Acked` entry was passed to reach it from
    /// where the last call stopped. Amortised O(1): each entry is passed once.
    pub fn first_outstanding(&mut self) -> (u64, bool) {
        let start = self.sent.front().map_or(self.next_pn, |f| f.pn);
        let mut pn = self.oldest_outstanding.max(start);
        let mut passed_acked = false;
        while let Some(p) = self.get(pn) {
            match p.state {
                SentState::Outstanding => break,
                SentState::Acked => passed_acked = true,
                SentState::Lost { .. } => {}
            }
            pn += 1;
        }
        self.oldest_outstanding = pn;
        (pn, passed_acked)
    }

    /// Declare `pn` lost at `at` (the entry must be `Outstanding`).
    pub fn mark_lost(&mut self, pn: u64, at: Time) {
        let p = self.get_mut(pn).expect("a sent packet");
        debug_assert_eq!(p.state, SentState::Outstanding);
        p.state = SentState::Lost { at };
        // Losses are declared oldest first: this inserts at the back.
        let i = self.lost.partition_point(|&x| x < pn);
        self.lost.insert(i, pn);
    }

    /// Forget everything sent (the keys are discarded).
    pub fn clear_sent(&mut self) {
        self.sent.clear();
        self.lost.clear();
        self.oldest_outstanding = self.next_pn;
    }

    /// Forget every packet in flight and the space's loss-recovery state
    /// (RFC 9002 A.11 on a discarded space; §6.3 after a Retry): nothing in
    /// flight, no loss or PTO timer, no probes owed. Packet numbers go on.
    pub fn reset_recovery(&mut self) {
        self.clear_sent();
        self.bytes_in_flight = 0;
        self.ack_eliciting_in_flight = 0;
        self.loss_time = None;
        self.time_of_last_ack_eliciting = None;
        self.probes = 0;
    }

    /// Take a packet out of flight (acked, lost or discarded).
    pub fn leave_flight(&mut self, pn: u64) -> Option<SentPacket> {
        let p = self.get_mut(pn)?;
        if !p.in_flight {
            return None;
        }
        p.in_flight = false;
        let p = *p;
        self.ack_eliciting_in_flight -= 1;
        self.bytes_in_flight -= u64::from(p.size);
        Some(p)
    }

    /// Forget entries that can no longer matter: acked, or lost before
    /// `lost_horizon` (a spurious-loss verdict needs the entry).
    pub fn trim(&mut self, lost_horizon: Time) {
        while let Some(f) = self.sent.front() {
            let done = match f.state {
                SentState::Acked => true,
                SentState::Lost { at } => at < lost_horizon,
                SentState::Outstanding => {
                    !f.in_flight && self.largest_acked.is_some_and(|l| l >= f.pn)
                }
            };
            if !done {
                break;
            }
            self.sent.pop_front();
        }
        let front = self.sent.front().map_or(self.next_pn, |f| f.pn);
        while self.lost.front().is_some_and(|&pn| pn < front) {
            self.lost.pop_front();
        }
    }

    /// Whether an ACK-only packet is due or an ACK can ride along.
    pub fn crypto_pending(&self) -> bool {
        !self.discarded && self.crypto_send.has_data(u64::MAX)
    }
}
