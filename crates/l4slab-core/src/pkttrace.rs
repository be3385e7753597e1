//! The per-packet trace (`packets.parquet`), column by column: one row per
//! packet event. One definition for both backends, so a time-sequence plot
//! or an analysis reads a simulated and an emulated trace alike: the
//! simulator fills it from its transport's segments, the emulator from the
//! real TCP headers it forwards.
//!
//! The layout is flat and allocation-free per row, Arrow-style: fixed-width
//! columns, `u8` codes into fixed name tables for the small sets (`event`,
//! `side`, `ecn`, `flags`), and offsets + bytes for the one free-text column
//! (`sack`). Appending a row only pushes onto vectors whose capacity is
//! reused, so a producer that drains the trace in [`CHUNK_ROWS`]-row chunks
//! ([`PacketTrace::chunk`], [`PacketTrace::drain_front`]) holds a bounded
//! amount of memory however long the run. As JSON ([`Serialize`]) the trace is
//! still one array per column with the names spelled out (`"send"`, `"S."`):
//! the shape the emulator's result has always had.

use std::ops::Range;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::{DropReason, Ecn};

/// Rows per chunk handed to a sink: the Parquet row group size of
/// `packets.parquet` (`ROW_GROUP_SIZE` in `python/l4slab/results.py`), so the
/// file's layout depends only on the data.
pub const CHUNK_ROWS: usize = 1 << 16;

/// What happened to the packet: the `event` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktEvent {
    /// The host sent it (the emulator: it reached the bottleneck).
    Send,
    /// It reached the other end.
    Deliver,
    /// The queue, the link or the path dropped it.
    Drop(DropReason),
}

impl PktEvent {
    /// Number of distinct events (the length of [`PktEvent::NAMES`]).
    pub const COUNT: usize = 2 + DropReason::ALL.len();

    /// Every event name, indexed by [`PktEvent::code`].
    pub const NAMES: [&'static str; PktEvent::COUNT] = {
        let mut names = ["send"; PktEvent::COUNT];
        names[1] = "deliver";
        let mut i = 0;
        while i < DropReason::ALL.len() {
            names[2 + i] = drop_event(DropReason::ALL[i]);
            i += 1;
        }
        names
    };

    /// The `u8` stored in [`PacketTrace::event`].
    pub const fn code(self) -> u8 {
        match self {
            PktEvent::Send => 0,
            PktEvent::Deliver => 1,
            PktEvent::Drop(r) => 2 + r.index() as u8,
        }
    }

    /// The column's text: "send", "deliver" or "drop:<reason>" ([`drop_event`]).
    pub const fn name(self) -> &'static str {
        PktEvent::NAMES[self.code() as usize]
    }

    /// The event named `name` (as [`PktEvent::name`] spells it).
    pub fn from_name(name: &str) -> Option<PktEvent> {
        match name {
            "send" => Some(PktEvent::Send),
            "deliver" => Some(PktEvent::Deliver),
            _ => DropReason::ALL
                .into_iter()
                .find(|&r| drop_event(r) == name)
                .map(PktEvent::Drop),
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
    }
}

/// One row, as a producer hands it to [`PacketTrace::push`]; its SACK blocks
/// follow with [`PacketTrace::sack_block`].
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub t_s: f64,
    pub event: PktEvent,
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
            flags: &self.flags[r],
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
        self.sack.drain(..bytes as usize);
        self.sack_offsets.drain(..n);
        for o in &mut self.sack_offsets {
            *o -= bytes;
        }
    }

    /// Append the rows of `c`.
    pub fn extend_from(&mut self, c: &PacketChunk<'_>) {
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

/// One array per column, names spelled out (the emulator's result JSON).
impl Serialize for PacketTrace {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let flags = flag_names();
        let mut st = s.serialize_struct("PacketTrace", 12)?;
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
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys.len(), 12);
    }
}
