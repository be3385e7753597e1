//! The per-packet trace (`packets.parquet`), column by column: one row per
//! packet event. One definition for both backends, so a time-sequence plot
//! or an analysis reads a simulated and an emulated trace alike: the
//! simulator fills it from its transport's segments, the emulator from the
//! real TCP headers it forwards.
//!
//! Every row names the packet it is about (`pkt_id`, unique per run and the
//! same on every row of one transmission) and, for the events at the
//! bottleneck (enqueue, dequeue, mark, drop), the queue (`queue`,
//! `subqueue`); a dequeue row carries the packet's sojourn (`sojourn_us`), so
//! queue delay is read, not inferred.
//!
//! The layout is flat and allocation-free per row, Arrow-style: fixed-width
//! columns, `u8` codes into fixed name tables for the small sets (`event`,
//! `side`, `ecn`, `flags`) and into the run's [`QueueNames`] (`queue`,
//! `subqueue`: code 0 is none), and offsets + bytes for the one free-text
//! column (`sack`). Appending a row only pushes onto vectors whose capacity is
//! reused, so a producer that drains the trace in [`CHUNK_ROWS`]-row chunks
//! ([`PacketTrace::chunk`], [`PacketTrace::drain_front`]) holds a bounded
//! amount of memory however long the run. As JSON ([`Serialize`]) the trace is
//! still one array per column with the names spelled out (`"send"`, `"S."`):
//! the shape the emulator's result has always had.

use std::ops::Range;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::{DropReason, Ecn, MarkReason};

/// Rows per chunk handed to a sink: the Parquet row group size of
/// `packets.parquet` (`ROW_GROUP_SIZE` in `python/l4slab/results.py`), so the
/// file's layout depends only on the data.
pub const CHUNK_ROWS: usize = 1 << 16;

/// What happened to the packet: the `event` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktEvent {
    /// The host sent it (the emulator: it reached the bottleneck).
    Send,
    /// The bottleneck queue admitted it.
    Enqueue,
    /// The bottleneck queue handed it to the wire (`sojourn_us` says after how long).
    Dequeue,
    /// It reached the other end.
    Deliver,
    /// The queue, the link or the path dropped it.
    Drop(DropReason),
    /// The queue (or the wire, with `loss ... ecn`) CE-marked it.
    Mark(MarkReason),
}

impl PktEvent {
    /// Number of distinct events (the length of [`PktEvent::NAMES`]).
    pub const COUNT: usize = 4 + DropReason::ALL.len() + MarkReason::ALL.len();

    /// Every event name, indexed by [`PktEvent::code`].
    pub const NAMES: [&'static str; PktEvent::COUNT] = {
        let mut names = ["send"; PktEvent::COUNT];
        names[1] = "enqueue";
        names[2] = "dequeue";
        names[3] = "deliver";
        let mut i = 0;
        while i < DropReason::ALL.len() {
            names[4 + i] = drop_event(DropReason::ALL[i]);
            i += 1;
        }
        let mut i = 0;
        while i < MarkReason::ALL.len() {
            names[4 + DropReason::ALL.len() + i] = mark_event(MarkReason::ALL[i]);
            i += 1;
        }
        names
    };

    /// The `u8` stored in [`PacketTrace::event`].
    pub const fn code(self) -> u8 {
        match self {
            PktEvent::Send => 0,
            PktEvent::Enqueue => 1,
            PktEvent::Dequeue => 2,
            PktEvent::Deliver => 3,
            PktEvent::Drop(r) => 4 + r.index() as u8,
            PktEvent::Mark(r) => (4 + DropReason::ALL.len() + r.index()) as u8,
        }
    }

    /// The column's text: "send", "enqueue", "dequeue", "deliver",
    /// "drop:<reason>" ([`drop_event`]) or "mark:<reason>" ([`mark_event`]).
    pub const fn name(self) -> &'static str {
        PktEvent::NAMES[self.code() as usize]
    }

    /// The event named `name` (as [`PktEvent::name`] spells it).
    pub fn from_name(name: &str) -> Option<PktEvent> {
        match name {
            "send" => Some(PktEvent::Send),
            "enqueue" => Some(PktEvent::Enqueue),
            "dequeue" => Some(PktEvent::Dequeue),
            "deliver" => Some(PktEvent::Deliver),
            _ => DropReason::ALL
                .into_iter()
                .find(|&r| drop_event(r) == name)
                .map(PktEvent::Drop)
                .or_else(|| {
                    MarkReason::ALL
                        .into_iter()
                        .find(|&r| mark_event(r) == name)
                        .map(PktEvent::Mark)
                }),
        }
    }
}

/// Who sent the packet: the `side` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// From the flow's data sender.
    Data,
    /// From its receiver (ACKs).
    Ack,
    /// An application datagram (`seq` is the app's tag).
    Dgram,
}

impl Side {
    /// Every side name, indexed by [`Side::code`].
    pub const NAMES: [&'static str; 3] = ["data", "ack", "dgram"];

    /// The `u8` stored in [`PacketTrace::side`].
    pub const fn code(self) -> u8 {
        self as u8
    }

    pub const fn name(self) -> &'static str {
        Side::NAMES[self as usize]
    }
}

/// The IP-ECN names, indexed by the two header bits ([`Ecn::bits`], the `u8`
/// stored in [`PacketTrace::ecn`]).
pub const ECN_NAMES: [&str; 4] = [
    Ecn::from_bits(0).name(),
    Ecn::from_bits(1).name(),
    Ecn::from_bits(2).name(),
    Ecn::from_bits(3).name(),
];

/// The TCP flags the trace shows, in the order of their letters, as bits of
/// the header's bytes 12-13 (RFC 9293 §3.1; AE, RFC 9768 §3.2.2, is bit 8):
/// `S` SYN, `F` FIN, `.` ACK, `E` ECE, `W` CWR, `A` AE.
pub const FLAG_LETTERS: [(u16, char); 6] = [
    (0x002, 'S'),
    (0x001, 'F'),
    (0x010, '.'),
    (0x040, 'E'),
    (0x080, 'W'),
    (0x100, 'A'),
];

/// Number of distinct `flags` codes (every subset of [`FLAG_LETTERS`]).
pub const FLAG_CODES: usize = 1 << FLAG_LETTERS.len();

/// The `u8` stored in [`PacketTrace::flags`] for the header's flag bits: bit
/// `i` set when flag `FLAG_LETTERS[i]` is. Other bits (RST, PSH, URG) are not shown.
pub const fn flag_code(bits: u16) -> u8 {
    let mut code = 0u8;
    let mut i = 0;
    while i < FLAG_LETTERS.len() {
        if bits & FLAG_LETTERS[i].0 != 0 {
            code |= 1 << i;
        }
        i += 1;
    }
    code
}

/// The letters of a `flags` code, tcpdump-style (e.g. `"S."` for SYN-ACK).
pub fn flag_code_letters(code: u8) -> String {
    FLAG_LETTERS
        .iter()
        .enumerate()
        .filter(|(i, _)| code & (1 << i) != 0)
        .map(|(_, (_, c))| *c)
        .collect()
}

/// Every `flags` name, indexed by code ([`flag_code`]).
pub fn flag_names() -> Vec<String> {
    (0..FLAG_CODES as u8).map(flag_code_letters).collect()
}

/// tcpdump-style letters for the TCP header's flag bits ([`FLAG_LETTERS`]).
pub fn tcp_flag_letters(bits: u16) -> String {
    flag_code_letters(flag_code(bits))
}

/// The `event` column of a packet dropped for `r`.
pub const fn drop_event(r: DropReason) -> &'static str {
    match r {
        DropReason::Overlimit => "drop:overlimit",
        DropReason::HeadDrop => "drop:head_drop",
        DropReason::AqmDrop => "drop:aqm",
        DropReason::Overload => "drop:overload",
        DropReason::StepNonEct => "drop:step_non_ect",
        DropReason::LinkLoss => "drop:link_loss",
        DropReason::EcnBlackhole => "drop:ecn_blackhole",
        DropReason::WifiRetries => "drop:wifi_retries",
    }
}

/// The `event` column of a packet CE-marked for `r`.
pub const fn mark_event(r: MarkReason) -> &'static str {
    match r {
        MarkReason::Aqm => "mark:aqm",
        MarkReason::Coupled => "mark:coupled",
        MarkReason::Step => "mark:step",
        MarkReason::CeThreshold => "mark:ce_threshold",
        MarkReason::LinkMark => "mark:link_mark",
    }
}

/// The names behind a run's `queue` and `subqueue` codes: code 0 is none
/// (a host's event; a queue without sub-queues), code `i + 1` is `queues[i]`
/// (`subqueues[i]`). The queue names are the run's own (`bottleneck.down`,
/// `access.laptop.up`: built from the scenario's host names); the sub-queue
/// names are those of every queue's qdisc (`Qdisc::subqueue_names`), each
/// once, in order of first appearance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueNames {
    pub queues: Vec<Box<str>>,
    pub subqueues: Vec<&'static str>,
    /// Per queue, the code of each of its sub-queues.
    sub_codes: Vec<Vec<u8>>,
}

impl QueueNames {
    /// `queues[q]` = (the name of the queue with id `q`, its sub-queue names).
    pub fn new(queues: &[(&str, &'static [&'static str])]) -> Self {
        let mut names = QueueNames::default();
        for &(name, subs) in queues {
            names.queues.push(name.into());
            let codes = subs
                .iter()
                .map(|s| {
                    let i = match names.subqueues.iter().position(|n| n == s) {
                        Some(i) => i,
                        None => {
                            names.subqueues.push(s);
                            names.subqueues.len() - 1
                        }
                    };
                    u8::try_from(i + 1).expect("fewer than 255 sub-queue names")
                })
                .collect();
            names.sub_codes.push(codes);
        }
        names
    }

    /// The `queue` code of queue `q` (its id).
    pub fn queue_code(&self, q: u16) -> u8 {
        assert!(usize::from(q) < self.queues.len(), "unknown queue {q}");
        u8::try_from(q + 1).expect("fewer than 255 queues")
    }

    /// The `subqueue` code of sub-queue `sub` of queue `q` (0 when the
    /// queue has no sub-queues).
    pub fn subqueue_code(&self, q: u16, sub: u8) -> u8 {
        self.sub_codes[usize::from(q)]
            .get(usize::from(sub))
            .copied()
            .unwrap_or(0)
    }

    /// The name behind a `queue` code.
    pub fn queue_name(&self, code: u8) -> Option<&str> {
        code.checked_sub(1).map(|i| &*self.queues[usize::from(i)])
    }

    /// The name behind a `subqueue` code.
    pub fn subqueue_name(&self, code: u8) -> Option<&'static str> {
        code.checked_sub(1).map(|i| self.subqueues[usize::from(i)])
    }
}

/// Where a row's event happened: none (a host's send or deliver) or a
/// queue, with the codes of [`QueueNames`] and, for a dequeue, the sojourn.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AtQueue {
    /// [`QueueNames::queue_code`]; 0: not at a queue.
    pub queue: u8,
    /// [`QueueNames::subqueue_code`]; 0: none.
    pub subqueue: u8,
    /// The dequeued packet's time in the queue, in µs; NaN for other events.
    pub sojourn_us: f64,
}

impl AtQueue {
    /// A host's event.
    pub const NONE: AtQueue = AtQueue {
        queue: 0,
        subqueue: 0,
        sojourn_us: f64::NAN,
    };
}

/// One row, as a producer hands it to [`PacketTrace::push`]; its SACK blocks
/// follow with [`PacketTrace::sack_block`].
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub t_s: f64,
    pub event: PktEvent,
    /// The packet's id: unique per run, the same on every row about it.
    pub pkt_id: u64,
    pub at: AtQueue,
    pub flow: u32,
    pub side: Side,
    pub seq: u64,
    pub len: u32,
    pub ack: u64,
    pub ecn: Ecn,
    pub retransmission: bool,
    /// Receive window advertised in the segment.
    pub wnd: u64,
    /// The TCP header's flag bits ([`flag_code`]).
    pub flags: u16,
}

/// The trace columns; every column but `sack` has one entry per row.
#[derive(Clone, Debug)]
pub struct PacketTrace {
    pub t_s: Vec<f64>,
    /// [`PktEvent::code`]; names in [`PktEvent::NAMES`].
    pub event: Vec<u8>,
    pub flow: Vec<u32>,
    /// [`Side::code`]; names in [`Side::NAMES`].
    pub side: Vec<u8>,
    pub seq: Vec<u64>,
    pub len: Vec<u32>,
    pub ack: Vec<u64>,
    /// [`Ecn::bits`]; names in [`ECN_NAMES`].
    pub ecn: Vec<u8>,
    pub retransmission: Vec<bool>,
    /// Receive window advertised in the segment.
    pub wnd: Vec<u64>,
    /// Row `i`'s SACK text is `sack[sack_offsets[i]..sack_offsets[i + 1]]`:
    /// `rows + 1` entries, the first one 0.
    pub sack_offsets: Vec<u32>,
    /// SACK blocks as "l-r;l-r" (ASCII), empty when none; rows back to back.
    pub sack: Vec<u8>,
    /// [`flag_code`]; names from [`flag_code_letters`].
    pub flags: Vec<u8>,
    pub pkt_id: Vec<u64>,
    /// [`QueueNames::queue_code`]; names in [`PacketTrace::names`].
    pub queue: Vec<u8>,
    /// [`QueueNames::subqueue_code`].
    pub subqueue: Vec<u8>,
    /// µs in the queue of a dequeued packet; NaN on other rows.
    pub sojourn_us: Vec<f64>,
    /// The names behind `queue` and `subqueue`.
    pub names: QueueNames,
}

impl Default for PacketTrace {
    fn default() -> Self {
        PacketTrace::with_capacity(0)
    }
}

impl PacketTrace {
    /// An empty trace with room for `rows` rows (and their SACK text) before
    /// any vector grows.
    pub fn with_capacity(rows: usize) -> Self {
        let mut sack_offsets = Vec::with_capacity(rows + 1);
        sack_offsets.push(0);
        PacketTrace {
            t_s: Vec::with_capacity(rows),
            event: Vec::with_capacity(rows),
            flow: Vec::with_capacity(rows),
            side: Vec::with_capacity(rows),
            seq: Vec::with_capacity(rows),
            len: Vec::with_capacity(rows),
            ack: Vec::with_capacity(rows),
            ecn: Vec::with_capacity(rows),
            retransmission: Vec::with_capacity(rows),
            wnd: Vec::with_capacity(rows),
            sack_offsets,
            sack: Vec::with_capacity(rows * 4),
            flags: Vec::with_capacity(rows),
            pkt_id: Vec::with_capacity(rows),
            queue: Vec::with_capacity(rows),
            subqueue: Vec::with_capacity(rows),
            sojourn_us: Vec::with_capacity(rows),
            names: QueueNames::default(),
        }
    }

    /// The same, naming the run's queues.
    pub fn with_names(rows: usize, names: QueueNames) -> Self {
        PacketTrace {
            names,
            ..PacketTrace::with_capacity(rows)
        }
    }

    pub fn rows(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// Append one row (with no SACK blocks yet).
    pub fn push(&mut self, r: Row) {
        self.t_s.push(r.t_s);
        self.event.push(r.event.code());
        self.flow.push(r.flow);
        self.side.push(r.side.code());
        self.seq.push(r.seq);
        self.len.push(r.len);
        self.ack.push(r.ack);
        self.ecn.push(r.ecn.bits());
        self.retransmission.push(r.retransmission);
        self.wnd.push(r.wnd);
        self.flags.push(flag_code(r.flags));
        self.pkt_id.push(r.pkt_id);
        self.queue.push(r.at.queue);
        self.subqueue.push(r.at.subqueue);
        self.sojourn_us.push(r.at.sojourn_us);
        self.sack_offsets.push(self.sack_end());
    }

    /// Add the SACK block `left-right` to the last row pushed.
    pub fn sack_block(&mut self, left: u64, right: u64) {
        let rows = self.rows();
        assert!(rows > 0, "a SACK block needs a row");
        if self.sack.len() > self.sack_offsets[rows - 1] as usize {
            self.sack.push(b';');
        }
        push_decimal(&mut self.sack, left);
        self.sack.push(b'-');
        push_decimal(&mut self.sack, right);
        self.sack_offsets[rows] = self.sack_end();
    }

    fn sack_end(&self) -> u32 {
        u32::try_from(self.sack.len()).expect("a trace holds less than 4 GiB of SACK text")
    }

    /// Rows `range` as a borrowed chunk.
    pub fn chunk(&self, range: Range<usize>) -> PacketChunk<'_> {
        let r = range.clone();
        let (start, end) = (
            self.sack_offsets[r.start] as usize,
            self.sack_offsets[r.end] as usize,
        );
        PacketChunk {
            t_s: &self.t_s[r.clone()],
            event: &self.event[r.clone()],
            flow: &self.flow[r.clone()],
            side: &self.side[r.clone()],
            seq: &self.seq[r.clone()],
            len: &self.len[r.clone()],
            ack: &self.ack[r.clone()],
            ecn: &self.ecn[r.clone()],
            retransmission: &self.retransmission[r.clone()],
            wnd: &self.wnd[r.clone()],
            sack_offsets: &self.sack_offsets[r.start..=r.end],
            sack: &self.sack[start..end],
            flags: &self.flags[r.clone()],
            pkt_id: &self.pkt_id[r.clone()],
            queue: &self.queue[r.clone()],
            subqueue: &self.subqueue[r.clone()],
            sojourn_us: &self.sojourn_us[r],
            names: &self.names,
        }
    }

    /// Remove the first `n` rows, keeping every vector's capacity.
    pub fn drain_front(&mut self, n: usize) {
        let bytes = self.sack_offsets[n];
        self.t_s.drain(..n);
        self.event.drain(..n);
        self.flow.drain(..n);
        self.side.drain(..n);
        self.seq.drain(..n);
        self.len.drain(..n);
        self.ack.drain(..n);
        self.ecn.drain(..n);
        self.retransmission.drain(..n);
        self.wnd.drain(..n);
        self.flags.drain(..n);
        self.pkt_id.drain(..n);
        self.queue.drain(..n);
        self.subqueue.drain(..n);
        self.sojourn_us.drain(..n);
        self.sack.drain(..bytes as usize);
        self.sack_offsets.drain(..n);
        for o in &mut self.sack_offsets {
            *o -= bytes;
        }
    }

    /// Append the rows of `c` (whose queue names must be this trace's, or
    /// this trace's must be empty and without rows: it takes `c`'s).
    pub fn extend_from(&mut self, c: &PacketChunk<'_>) {
        if self.names != *c.names {
            assert!(
                self.is_empty() && self.names == QueueNames::default(),
                "appending rows of other queues"
            );
            self.names = c.names.clone();
        }
        let base = self.sack_end();
        u32::try_from(self.sack.len() + c.sack.len())
            .expect("a trace holds less than 4 GiB of SACK text");
        let first = c.sack_offsets[0];
        self.t_s.extend_from_slice(c.t_s);
        self.event.extend_from_slice(c.event);
        self.flow.extend_from_slice(c.flow);
        self.side.extend_from_slice(c.side);
        self.seq.extend_from_slice(c.seq);
        self.len.extend_from_slice(c.len);
        self.ack.extend_from_slice(c.ack);
        self.ecn.extend_from_slice(c.ecn);
        self.retransmission.extend_from_slice(c.retransmission);
        self.wnd.extend_from_slice(c.wnd);
        self.flags.extend_from_slice(c.flags);
        self.pkt_id.extend_from_slice(c.pkt_id);
        self.queue.extend_from_slice(c.queue);
        self.subqueue.extend_from_slice(c.subqueue);
        self.sojourn_us.extend_from_slice(c.sojourn_us);
        self.sack.extend_from_slice(c.sack);
        self.sack_offsets
            .extend(c.sack_offsets[1..].iter().map(|&o| base + (o - first)));
    }

    /// Row `i`'s event name.
    pub fn event_name(&self, i: usize) -> &'static str {
        PktEvent::NAMES[usize::from(self.event[i])]
    }

    /// Row `i`'s side name.
    pub fn side_name(&self, i: usize) -> &'static str {
        Side::NAMES[usize::from(self.side[i])]
    }

    /// Row `i`'s IP-ECN name.
    pub fn ecn_name(&self, i: usize) -> &'static str {
        ECN_NAMES[usize::from(self.ecn[i])]
    }

    /// Row `i`'s SACK blocks as "l-r;l-r".
    pub fn sack_text(&self, i: usize) -> &str {
        let (a, b) = (self.sack_offsets[i], self.sack_offsets[i + 1]);
        std::str::from_utf8(&self.sack[a as usize..b as usize]).expect("SACK text is ASCII")
    }

    /// Row `i`'s TCP flag letters.
    pub fn flags_text(&self, i: usize) -> String {
        flag_code_letters(self.flags[i])
    }

    /// Row `i`'s queue name, if it happened at a queue.
    pub fn queue_name(&self, i: usize) -> Option<&str> {
        self.names.queue_name(self.queue[i])
    }

    /// Row `i`'s sub-queue name, if known.
    pub fn subqueue_name(&self, i: usize) -> Option<&'static str> {
        self.names.subqueue_name(self.subqueue[i])
    }
}

/// A run of rows of a [`PacketTrace`], borrowed: what a sink receives.
/// `sack_offsets` has one entry more than there are rows and indexes `sack`
/// after subtracting `sack_offsets[0]`.
#[derive(Clone, Copy, Debug)]
pub struct PacketChunk<'a> {
    pub t_s: &'a [f64],
    pub event: &'a [u8],
    pub flow: &'a [u32],
    pub side: &'a [u8],
    pub seq: &'a [u64],
    pub len: &'a [u32],
    pub ack: &'a [u64],
    pub ecn: &'a [u8],
    pub retransmission: &'a [bool],
    pub wnd: &'a [u64],
    pub sack_offsets: &'a [u32],
    pub sack: &'a [u8],
    pub flags: &'a [u8],
    pub pkt_id: &'a [u64],
    pub queue: &'a [u8],
    pub subqueue: &'a [u8],
    pub sojourn_us: &'a [f64],
    pub names: &'a QueueNames,
}

impl PacketChunk<'_> {
    pub fn rows(&self) -> usize {
        self.t_s.len()
    }
}

/// `v` in decimal, without allocating.
fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend(digits[..n].iter().rev());
}

/// A column of codes serialized as its names.
struct Named<'a, N: AsRef<str>>(&'a [u8], &'a [N]);

impl<N: AsRef<str>> Serialize for Named<'_, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|&c| self.1[usize::from(c)].as_ref()))
    }
}

/// The `sack` column serialized as one string per row.
struct SackTexts<'a>(&'a PacketTrace);

impl Serialize for SackTexts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((0..self.0.rows()).map(|i| self.0.sack_text(i)))
    }
}

/// A coded column with code 0 as null: `queue` and `subqueue`.
struct Nullable<'a>(&'a [u8], &'a dyn Fn(u8) -> Option<&'a str>);

impl Serialize for Nullable<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|&c| (self.1)(c)))
    }
}

/// One array per column, names spelled out (the emulator's result JSON); a
/// row not at a queue has `null` queue, subqueue and sojourn.
impl Serialize for PacketTrace {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let flags = flag_names();
        let mut st = s.serialize_struct("PacketTrace", 16)?;
        st.serialize_field("t_s", &self.t_s)?;
        st.serialize_field("event", &Named(&self.event, &PktEvent::NAMES))?;
        st.serialize_field("flow", &self.flow)?;
        st.serialize_field("side", &Named(&self.side, &Side::NAMES))?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("len", &self.len)?;
        st.serialize_field("ack", &self.ack)?;
        st.serialize_field("ecn", &Named(&self.ecn, &ECN_NAMES))?;
        st.serialize_field("retransmission", &self.retransmission)?;
        st.serialize_field("wnd", &self.wnd)?;
        st.serialize_field("sack", &SackTexts(self))?;
        st.serialize_field("flags", &Named(&self.flags, &flags))?;
        st.serialize_field("pkt_id", &self.pkt_id)?;
        let queue = |c| self.names.queue_name(c);
        let subqueue = |c| self.names.subqueue_name(c);
        st.serialize_field("queue", &Nullable(&self.queue, &queue))?;
        st.serialize_field("subqueue", &Nullable(&self.subqueue, &subqueue))?;
        // serde_json writes NaN as null.
        st.serialize_field("sojourn_us", &self.sojourn_us)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_s: f64, event: PktEvent, side: Side, seq: u64, flags: u16) -> Row {
        Row {
            t_s,
            event,
            pkt_id: seq + 100,
            at: AtQueue::NONE,
            flow: 1,
            side,
            seq,
            len: 100,
            ack: 7,
            ecn: Ecn::Ect1,
            retransmission: false,
            wnd: 65535,
            flags,
        }
    }

    #[test]
    fn flag_letters_and_drop_events() {
        assert_eq!(tcp_flag_letters(0x012), "S.");
        assert_eq!(tcp_flag_letters(0x1d1), "F.EWA");
        assert_eq!(tcp_flag_letters(0), "");
        // RST (0x004), PSH (0x008) and URG (0x020) are not shown.
        assert_eq!(tcp_flag_letters(0x02c), "");
        for r in DropReason::ALL {
            assert_eq!(drop_event(r), format!("drop:{}", r.name()));
            assert_eq!(PktEvent::from_name(drop_event(r)), Some(PktEvent::Drop(r)));
        }
        for r in MarkReason::ALL {
            assert_eq!(mark_event(r), format!("mark:{}", r.name()));
            assert_eq!(PktEvent::from_name(mark_event(r)), Some(PktEvent::Mark(r)));
        }
        for (code, name) in PktEvent::NAMES.iter().enumerate() {
            let e = PktEvent::from_name(name).expect(name);
            assert_eq!((usize::from(e.code()), e.name()), (code, *name));
        }
        assert_eq!(PktEvent::from_name("lost"), None);
        assert_eq!(ECN_NAMES, ["not_ect", "ect1", "ect0", "ce"]);
        let names = flag_names();
        assert_eq!(names.len(), 64);
        assert_eq!(names[usize::from(flag_code(0x012))], "S.");
    }

    #[test]
    fn rows_sack_text_and_chunks() {
        let mut t = PacketTrace::with_capacity(2);
        t.push(row(0.5, PktEvent::Send, Side::Data, 0, 0x010));
        t.push(row(
            0.6,
            PktEvent::Drop(DropReason::AqmDrop),
            Side::Ack,
            1,
            0x050,
        ));
        t.sack_block(100, 200);
        t.sack_block(0, 18_446_744_073_709_551_615);
        t.push(row(0.7, PktEvent::Deliver, Side::Dgram, 2, 0));
        t.sack_block(3, 4);
        assert_eq!(t.rows(), 3);
        assert_eq!(t.event_name(1), "drop:aqm");
        assert_eq!(t.side_name(2), "dgram");
        assert_eq!(t.ecn_name(0), "ect1");
        assert_eq!(t.flags_text(1), ".E");
        assert_eq!(t.sack_text(0), "");
        assert_eq!(t.sack_text(1), "100-200;0-18446744073709551615");
        assert_eq!(t.sack_text(2), "3-4");

        // A chunk of the last two rows, appended to another trace, reads the same.
        let mut u = PacketTrace::default();
        u.push(row(0.1, PktEvent::Send, Side::Data, 9, 0));
        u.sack_block(1, 2);
        u.extend_from(&t.chunk(1..3));
        assert_eq!(u.rows(), 3);
        assert_eq!(u.sack_text(0), "1-2");
        assert_eq!(u.sack_text(1), "100-200;0-18446744073709551615");
        assert_eq!(u.sack_text(2), "3-4");
        assert_eq!(u.seq, [9, 1, 2]);

        // Draining the first rows keeps the rest intact.
        t.drain_front(2);
        assert_eq!(t.rows(), 1);
        assert_eq!(t.sack_offsets, [0, 3]);
        assert_eq!(t.sack_text(0), "3-4");
        assert_eq!(t.event_name(0), "deliver");
        t.drain_front(1);
        assert!(t.is_empty());
        assert_eq!((t.sack_offsets.as_slice(), t.sack.len()), (&[0u32][..], 0));
    }

    #[test]
    fn json_spells_out_the_names() {
        let mut t = PacketTrace::default();
        t.push(row(0.5, PktEvent::Send, Side::Data, 0, 0x012));
        t.sack_block(1, 2);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["event"], serde_json::json!(["send"]));
        assert_eq!(v["side"], serde_json::json!(["data"]));
        assert_eq!(v["ecn"], serde_json::json!(["ect1"]));
        assert_eq!(v["sack"], serde_json::json!(["1-2"]));
        assert_eq!(v["flags"], serde_json::json!(["S."]));
        assert_eq!(v["seq"], serde_json::json!([0]));
        assert_eq!(v["pkt_id"], serde_json::json!([100]));
        assert_eq!(v["queue"], serde_json::json!([null]));
        assert_eq!(v["sojourn_us"], serde_json::json!([null]));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys.len(), 16);
    }

    #[test]
    fn queue_rows_name_their_queue_and_sub_queue() {
        static DUAL: [&str; 2] = ["c", "l"];
        let names = QueueNames::new(&[("bottleneck.down", &DUAL), ("bottleneck.up", &[])]);
        assert_eq!(names.subqueues, ["c", "l"]);
        assert_eq!((names.queue_code(0), names.queue_code(1)), (1, 2));
        assert_eq!(names.subqueue_code(0, 1), 2, "L of the down queue");
        assert_eq!(names.subqueue_code(1, 0), 0, "a single queue has none");
        let mut t = PacketTrace::with_names(4, names);
        t.push(row(0.5, PktEvent::Send, Side::Data, 0, 0x010));
        let at = AtQueue {
            queue: t.names.queue_code(0),
            subqueue: t.names.subqueue_code(0, 1),
            sojourn_us: 250.0,
        };
        t.push(Row {
            at,
            ..row(0.6, PktEvent::Dequeue, Side::Data, 0, 0x010)
        });
        t.push(Row {
            at: AtQueue {
                sojourn_us: f64::NAN,
                ..at
            },
            ..row(0.6, PktEvent::Mark(MarkReason::Step), Side::Data, 0, 0x010)
        });
        assert_eq!(t.event_name(2), "mark:step");
        assert_eq!(t.pkt_id, [100, 100, 100], "one packet, one id");
        assert_eq!((t.queue_name(0), t.subqueue_name(0)), (None, None));
        assert_eq!(t.queue_name(1), Some("bottleneck.down"));
        assert_eq!(t.subqueue_name(1), Some("l"));
        // A trace built from chunks takes their names.
        let mut u = PacketTrace::default();
        u.extend_from(&t.chunk(1..3));
        assert_eq!(u.queue_name(0), Some("bottleneck.down"));
        assert_eq!(u.sojourn_us[0], 250.0);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(
            v["queue"],
            serde_json::json!([null, "bottleneck.down", "bottleneck.down"])
        );
        assert_eq!(v["subqueue"], serde_json::json!([null, "l", "l"]));
        assert_eq!(v["sojourn_us"], serde_json::json!([null, 250.0, null]));
    }
}
