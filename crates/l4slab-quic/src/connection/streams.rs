//! Streams, RFC 9000 §2–§3: bidirectional streams with §2.1 stream IDs, a
//! send buffer (what is written, sent, acked and to be retransmitted) and a
//! receive buffer (reassembly) per stream. Each stream reassembles on its
//! own, so a loss on one stream never delays another (no cross-stream
//! head-of-line blocking). The same buffers carry the CRYPTO streams.
//!
//! Stream content is not simulated: the application writes byte counts and
//! STREAM frames carry zero bytes of that length. Unidirectional streams,
//! RESET_STREAM/STOP_SENDING and stream priorities are not implemented
//! (round-robin over streams with data).

use super::flow_control::{RecvWindow, SendCredit};
use super::ranges::RangeSet;
use super::schedule::StreamSched;

/// Ranges a stream's buffers have room for when it opens, so that its first
/// losses and holes do not allocate while packets are processed.
const RANGES_AT_OPEN: usize = 8;

/// §2.1 stream ID: "The least significant bit (0x01) of the stream ID
/// identifies the initiator ... (0) client, (1) server"; "The second least
/// significant bit (0x02) distinguishes between bidirectional streams (with
/// the bit set to 0) and unidirectional streams".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The `index`th bidirectional stream opened by the client or the server.
    pub fn bidi(client: bool, index: u64) -> Self {
        StreamId(index << 2 | u64::from(!client))
    }

    pub fn is_client_initiated(self) -> bool {
        self.0 & 1 == 0
    }

    pub fn is_bidi(self) -> bool {
        self.0 & 2 == 0
    }

    /// Its index among the streams of its type.
    pub fn index(self) -> u64 {
        self.0 >> 2
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stream {}", self.0)
    }
}

/// Sending half: offsets only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendBuf {
    /// Bytes the application handed over (the end offset).
    pub written: u64,
    /// First offset never sent.
    pub next: u64,
    /// Lost ranges to send again, minus what was acked meanwhile.
    pub retx: RangeSet,
    pub acked: RangeSet,
    /// The application finished the stream at `written`.
    pub fin: bool,
    /// A FIN must go (first time or again after loss).
    pub fin_pending: bool,
    pub fin_acked: bool,
}

/// One chunk to put in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendChunk {
    pub offset: u64,
    pub len: u64,
    pub fin: bool,
    /// New data (counts against connection flow control).
    pub new: bool,
}

impl SendBuf {
    /// Bytes accepted but not yet acknowledged in order (the buffer's fill).
    pub fn unacked(&self) -> u64 {
        self.written - self.acked.contiguous_end(0)
    }

    /// Whether a frame could go, with `credit` bytes of new data allowed.
    pub fn has_data(&self, credit: u64) -> bool {
        !self.retx.is_empty()
            || (self.next < self.written && credit > 0)
            || (self.fin_pending && self.next == self.written)
    }

    /// The next chunk of at most `max` bytes; `credit` bounds new data.
    pub fn next_chunk(&mut self, max: u64, credit: u64) -> Option<SendChunk> {
        if let Some((s, e)) = self.retx.pop_front(max) {
            let fin = self.fin && e == self.written && !self.fin_acked;
            if fin {
                self.fin_pending = false;
            }
            return Some(SendChunk {
                offset: s,
                len: e - s,
                fin,
                new: false,
            });
        }
        let len = max.min(self.written - self.next).min(credit);
        let fin = self.fin_pending && self.next + len == self.written;
        if len == 0 && !fin {
            return None;
        }
        let c = SendChunk {
            offset: self.next,
            len,
            fin,
            new: true,
        };
        self.next += len;
        if fin {
            self.fin_pending = false;
        }
        Some(c)
    }

    pub fn on_acked(&mut self, offset: u64, len: u64, fin: bool) {
        self.acked.insert(offset, offset + len);
        self.retx.remove(offset, offset + len);
        if fin {
            self.fin_acked = true;
            self.fin_pending = false;
        }
    }

    /// §13.3: lost data is sent again in new frames (minus what got acked).
    pub fn on_lost(&mut self, offset: u64, len: u64, fin: bool) {
        let end = offset + len;
        let mut s = offset;
        while s < end {
            // Skip acked parts.
            let acked_end = self.acked.contiguous_end(s);
            if acked_end > s {
                s = acked_end;
                continue;
            }
            let next_acked = self.acked.next_start_after(s).unwrap_or(end).min(end);
            self.retx.insert(s, next_acked);
            s = next_acked;
        }
        if fin && !self.fin_acked {
            self.fin_pending = true;
        }
    }

    /// Everything, FIN included, is acknowledged.
    pub fn is_done(&self) -> bool {
        self.fin && self.fin_acked && self.acked.contiguous_end(0) >= self.written
    }
}

/// Receiving half: reassembly of offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecvBuf {
    /// Ranges received above `delivered`.
    pub ranges: RangeSet,
    /// In-order bytes handed to the application.
    pub delivered: u64,
    /// Highest offset received.
    pub highest: u64,
    /// §4.5 final size, once known.
    pub final_size: Option<u64>,
    pub finished: bool,
}

/// A receive that violates the rules (RFC 9000 §4.5 FINAL_SIZE_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalSizeError;

impl RecvBuf {
    /// Data `[offset, offset+len)` arrived, ending the stream if `fin`.
    /// Returns the new in-order bytes.
    pub fn on_data(&mut self, offset: u64, len: u64, fin: bool) -> Result<u64, FinalSizeError> {
        let end = offset.checked_add(len).ok_or(FinalSizeError)?;
        // §4.5: "Once a final size for a stream is known, it cannot change"
        // and no data may lie beyond it.
        if let Some(f) = self.final_size {
            if end > f || (fin && end != f) {
                return Err(FinalSizeError);
            }
        }
        if fin {
            if end < self.highest {
                return Err(FinalSizeError);
            }
            self.final_size = Some(end);
        }
        self.highest = self.highest.max(end);
        if end <= self.delivered {
            return Ok(0);
        }
        self.ranges.insert(offset.max(self.delivered), end);
        let before = self.delivered;
        if let Some((s, e)) = self.ranges.first() {
            if s <= self.delivered {
                self.delivered = e;
                self.ranges.remove(s, e);
            }
        }
        Ok(self.delivered - before)
    }

    /// All data up to the final size is delivered (reported once).
    pub fn take_finished(&mut self) -> bool {
        if !self.finished && self.final_size == Some(self.delivered) {
            self.finished = true;
            return true;
        }
        false
    }
}

/// One bidirectional stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    pub id: StreamId,
    pub send: SendBuf,
    /// The peer's MAX_STREAM_DATA.
    pub credit: SendCredit,
    pub recv: RecvBuf,
    pub window: RecvWindow,
    /// Its place in the sender's schedule (`schedule.rs`).
    pub sched: StreamSched,
}

impl Stream {
    pub fn new(id: StreamId, peer_limit: u64, our_window: u64) -> Self {
        Stream {
            id,
            send: SendBuf {
                retx: RangeSet::with_capacity(RANGES_AT_OPEN),
                acked: RangeSet::with_capacity(RANGES_AT_OPEN),
                ..SendBuf::default()
            },
            credit: SendCredit::new(peer_limit),
            recv: RecvBuf {
                ranges: RangeSet::with_capacity(RANGES_AT_OPEN),
                ..RecvBuf::default()
            },
            window: RecvWindow::new(our_window),
            sched: StreamSched::default(),
        }
    }

    /// Both directions finished and acknowledged: the stream can be dropped.
    pub fn is_closed(&self) -> bool {
        self.send.is_done() && self.recv.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_follow_section_2_1() {
        assert_eq!(StreamId::bidi(true, 0).0, 0);
        assert_eq!(StreamId::bidi(false, 0).0, 1);
        assert_eq!(StreamId::bidi(true, 2).0, 8);
        assert!(StreamId(5).is_bidi() && !StreamId(5).is_client_initiated());
    }

    #[test]
    fn retransmit_skips_acked_and_reassembly_is_per_offset() {
        let mut s = SendBuf {
            written: 3000,
            fin: true,
            fin_pending: true,
            ..Default::default()
        };
        let a = s.next_chunk(1000, u64::MAX).unwrap();
        let b = s.next_chunk(1000, u64::MAX).unwrap();
        let c = s.next_chunk(1000, u64::MAX).unwrap();
        assert!(c.fin && !a.fin);
        s.on_acked(b.offset + 200, 100, false);
        s.on_lost(a.offset, 2000, false);
        assert_eq!(
            s.retx.iter().collect::<Vec<_>>(),
            vec![(0, 1200), (1300, 2000)]
        );
        let mut r = RecvBuf::default();
        assert_eq!(r.on_data(1000, 1000, false), Ok(0));
        assert_eq!(r.on_data(2000, 1000, true), Ok(0));
        assert_eq!(r.on_data(0, 1000, false), Ok(3000));
        assert!(r.take_finished());
        assert_eq!(r.on_data(0, 3001, false), Err(FinalSizeError));
    }
}
