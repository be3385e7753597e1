//! Wire-format tests: round trips for every frame type and header form,
//! ACK ranges against a brute-force set and an independent §19.3.1 reader,
//! packet-number truncation against RFC 9000 App. A, exact sizes, typed
//! errors, and a decoder fuzz (random and mutated datagrams never panic;
//! whatever is accepted re-encodes to an equivalent packet).

use std::cell::Cell;
use std::collections::BTreeSet;

use l4slab_quic::wire::{
    decode_packet_number, encode_packet, encode_packet_number, packet_overhead, varint_len,
    AckFrame, CloseKind, ConnectionClose, EcnCounts, Field, Frame, FrameEncodingReason, FrameKind,
    Header, LongHeader, LongType, Packet, PacketBuilder, PacketType, ShortHeader, StreamDir,
    StreamFrame, TruncatedPn, WireError, L4SLAB_VERSION, MIN_INITIAL_DATAGRAM, TAG_LEN, VARINT_MAX,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

// ---------------------------------------------------------------- helpers

fn pn(value: u32, len: u8) -> TruncatedPn {
    TruncatedPn::new(value, len).unwrap()
}

fn short<'a>(dcid: &'a [u8], pn: TruncatedPn) -> Header<'a> {
    Header::Short(ShortHeader {
        dcid,
        spin: false,
        pn,
    })
}

fn long<'a>(ty: LongType<'a>, dcid: &'a [u8], scid: &'a [u8], pn: TruncatedPn) -> Header<'a> {
    Header::Long(LongHeader { ty, dcid, scid, pn })
}

fn decode_all(datagram: &[u8], dcid_len: usize) -> (Packet<'_>, Vec<Frame<'_>>) {
    let (p, rest) = Packet::decode(datagram, dcid_len).expect("packet decodes");
    assert!(rest.is_empty(), "{} bytes left over", rest.len());
    let frames = p
        .frames()
        .collect::<Result<Vec<_>, _>>()
        .expect("frames decode");
    (p, frames)
}

fn without_padding<'a>(frames: &[Frame<'a>]) -> Vec<Frame<'a>> {
    frames
        .iter()
        .filter(|f| !matches!(f, Frame::Padding { .. }))
        .cloned()
        .collect()
}

/// Encode one frame alone and decode it back from exactly its bytes.
fn frame_round_trip(f: &Frame<'_>) {
    let mut buf = vec![0u8; f.encoded_len() + 8];
    let n = f.encode(&mut buf).expect("frame encodes");
    assert_eq!(n, f.encoded_len());
    assert_eq!(u64::from(buf[0]), f.type_code(), "type byte of {f:?}");
    let (back, m) = Frame::decode(&buf[..n]).expect("frame decodes");
    assert_eq!(m, n);
    assert_eq!(&back, f);
}

// ------------------------------------------------------------- strategies

/// Values across all four varint sizes, including 0 and 2^62-1.
fn varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        64u64..16_384,
        16_384u64..(1 << 30),
        (1u64 << 30)..=VARINT_MAX,
        Just(0u64),
        Just(VARINT_MAX),
    ]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..max)
}

fn stream_dir() -> impl Strategy<Value = StreamDir> {
    prop_oneof![Just(StreamDir::Bidi), Just(StreamDir::Uni)]
}

fn ack_frame() -> impl Strategy<Value = AckFrame> {
    let small_or_big = prop_oneof![4 => 0u64..8, 1 => varint()];
    (
        varint(),
        varint(),
        vec((small_or_big.clone(), small_or_big), 0..40),
        varint(),
        proptest::option::of((varint(), varint(), varint())),
    )
        .prop_map(|(largest, first, pairs, delay, ecn)| {
            // Walk §19.3.1 downwards from `largest` until a range would go negative.
            let mut ranges = vec![];
            let lo = largest - first % (largest + 1);
            ranges.push(lo..=largest);
            let mut smallest = lo;
            for (gap, len) in pairs {
                let Some(hi) = smallest.checked_sub(gap).and_then(|v| v.checked_sub(2)) else {
                    break;
                };
                let Some(lo) = hi.checked_sub(len) else { break };
                ranges.push(lo..=hi);
                smallest = lo;
            }
            let ack = AckFrame::from_ranges(ranges, delay).unwrap();
            match ecn {
                Some((ect0, ect1, ce)) => ack.with_ecn(EcnCounts { ect0, ect1, ce }),
                None => ack,
            }
        })
}

/// A frame with owned bytes; [`Spec::frame`] borrows it as a [`Frame`].
#[derive(Debug, Clone)]
enum Spec {
    Padding(usize),
    Ping,
    Ack(Box<AckFrame>),
    ResetStream(u64, u64, u64),
    StopSending(u64, u64),
    Crypto(u64, Vec<u8>),
    NewToken(Vec<u8>),
    Stream(u64, u64, Vec<u8>, bool, bool),
    MaxData(u64),
    MaxStreamData(u64, u64),
    MaxStreams(StreamDir, u64),
    DataBlocked(u64),
    StreamDataBlocked(u64, u64),
    StreamsBlocked(StreamDir, u64),
    Close(CloseKind, u64, Vec<u8>),
    HandshakeDone,
}

impl Spec {
    fn frame(&self) -> Frame<'_> {
        match self {
            Spec::Padding(len) => Frame::Padding { len: *len },
            Spec::Ping => Frame::Ping,
            Spec::Ack(a) => Frame::Ack(**a),
            Spec::ResetStream(stream_id, error_code, final_size) => Frame::ResetStream {
                stream_id: *stream_id,
                error_code: *error_code,
                final_size: *final_size,
            },
            Spec::StopSending(stream_id, error_code) => Frame::StopSending {
                stream_id: *stream_id,
                error_code: *error_code,
            },
            Spec::Crypto(offset, data) => Frame::Crypto {
                offset: *offset,
                data,
            },
            Spec::NewToken(token) => Frame::NewToken { token },
            Spec::Stream(stream_id, offset, data, fin, has_length) => Frame::Stream(StreamFrame {
                stream_id: *stream_id,
                offset: *offset,
                data,
                fin: *fin,
                has_length: *has_length,
            }),
            Spec::MaxData(m) => Frame::MaxData(*m),
            Spec::MaxStreamData(stream_id, maximum) => Frame::MaxStreamData {
                stream_id: *stream_id,
                maximum: *maximum,
            },
            Spec::MaxStreams(dir, maximum) => Frame::MaxStreams {
                dir: *dir,
                maximum: *maximum,
            },
            Spec::DataBlocked(m) => Frame::DataBlocked(*m),
            Spec::StreamDataBlocked(stream_id, maximum) => Frame::StreamDataBlocked {
                stream_id: *stream_id,
                maximum: *maximum,
            },
            Spec::StreamsBlocked(dir, maximum) => Frame::StreamsBlocked {
                dir: *dir,
                maximum: *maximum,
            },
            Spec::Close(kind, error_code, reason) => Frame::ConnectionClose(ConnectionClose {
                kind: *kind,
                error_code: *error_code,
                reason,
            }),
            Spec::HandshakeDone => Frame::HandshakeDone,
        }
    }

    fn set_has_length(&mut self) {
        if let Spec::Stream(_, _, _, _, has_length) = self {
            *has_length = true;
        }
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    let stream_count = prop_oneof![0u64..1000, Just(1u64 << 60)];
    prop_oneof![
        (1usize..40).prop_map(Spec::Padding),
        Just(Spec::Ping),
        ack_frame().prop_map(|a| Spec::Ack(Box::new(a))),
        (varint(), varint(), varint()).prop_map(|(a, b, c)| Spec::ResetStream(a, b, c)),
        (varint(), varint()).prop_map(|(a, b)| Spec::StopSending(a, b)),
        (varint(), bytes(64))
            .prop_map(|(o, d)| Spec::Crypto(o.min(VARINT_MAX - d.len() as u64), d)),
        vec(any::<u8>(), 1..64).prop_map(Spec::NewToken),
        (
            varint(),
            prop_oneof![Just(0u64), varint()],
            bytes(64),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(id, o, d, fin, len)| {
                Spec::Stream(id, o.min(VARINT_MAX - d.len() as u64), d, fin, len)
            }),
        varint().prop_map(Spec::MaxData),
        (varint(), varint()).prop_map(|(a, b)| Spec::MaxStreamData(a, b)),
        (stream_dir(), stream_count.clone()).prop_map(|(d, m)| Spec::MaxStreams(d, m)),
        varint().prop_map(Spec::DataBlocked),
        (varint(), varint()).prop_map(|(a, b)| Spec::StreamDataBlocked(a, b)),
        (stream_dir(), stream_count).prop_map(|(d, m)| Spec::StreamsBlocked(d, m)),
        (
            prop_oneof![
                varint().prop_map(|frame_type| CloseKind::Transport { frame_type }),
                Just(CloseKind::Application)
            ],
            varint(),
            bytes(40)
        )
            .prop_map(|(k, c, r)| Spec::Close(k, c, r)),
        Just(Spec::HandshakeDone),
    ]
}

/// A header with owned bytes.
#[derive(Debug, Clone)]
struct HeaderSpec {
    ty: PacketType,
    token: Vec<u8>,
    dcid: Vec<u8>,
    scid: Vec<u8>,
    pn: TruncatedPn,
    spin: bool,
}

impl HeaderSpec {
    fn header(&self) -> Header<'_> {
        let long = |ty| long(ty, &self.dcid, &self.scid, self.pn);
        match self.ty {
            PacketType::Initial => long(LongType::Initial { token: &self.token }),
            PacketType::ZeroRtt => long(LongType::ZeroRtt),
            PacketType::Handshake => long(LongType::Handshake),
            PacketType::OneRtt => Header::Short(ShortHeader {
                dcid: &self.dcid,
                spin: self.spin,
                pn: self.pn,
            }),
        }
    }
}

fn truncated_pn() -> impl Strategy<Value = TruncatedPn> {
    (1u8..=4, any::<u32>(), any::<bool>()).prop_map(|(len, v, max)| {
        let mask = (1u64 << (8 * len)) - 1;
        let value = if max { mask } else { u64::from(v) & mask };
        pn(value as u32, len)
    })
}

fn header_spec() -> impl Strategy<Value = HeaderSpec> {
    (
        prop_oneof![
            Just(PacketType::Initial),
            Just(PacketType::ZeroRtt),
            Just(PacketType::Handshake),
            Just(PacketType::OneRtt)
        ],
        bytes(48),
        bytes(21),
        bytes(21),
        truncated_pn(),
        any::<bool>(),
    )
        .prop_map(|(ty, token, dcid, scid, pn, spin)| HeaderSpec {
            ty,
            token,
            dcid,
            scid,
            pn,
            spin,
        })
}

/// A valid packet: header plus frames its type permits, every STREAM frame
/// but the last given a Length.
fn packet_spec() -> impl Strategy<Value = (HeaderSpec, Vec<Spec>)> {
    (header_spec(), vec(spec(), 1..8)).prop_map(|(h, specs)| {
        let ty = h.ty;
        let mut specs: Vec<Spec> = specs
            .into_iter()
            .filter(|s| s.frame().allowed_in(ty))
            .collect();
        if specs.is_empty() {
            specs.push(Spec::Ping);
        }
        let last = specs.len() - 1;
        for s in &mut specs[..last] {
            s.set_has_length();
        }
        (h, specs)
    })
}

fn encode_spec(h: &HeaderSpec, specs: &[Spec]) -> Vec<u8> {
    let frames: Vec<Frame<'_>> = specs.iter().map(Spec::frame).collect();
    let mut buf = vec![0u8; 8192];
    let n = encode_packet(&h.header(), &frames, &mut buf).expect("valid packet encodes");
    buf.truncate(n);
    buf
}

// ------------------------------------------------------------ round trips

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_frame_round_trips(s in spec()) {
        frame_round_trip(&s.frame());
    }

    #[test]
    fn every_header_form_round_trips(h in header_spec()) {
        let header = h.header();
        let mut buf = [0u8; 256];
        let n = encode_packet(&header, &[Frame::Ping], &mut buf).unwrap();
        let (p, frames) = decode_all(&buf[..n], h.dcid.len());
        prop_assert_eq!(p.header(), &header);
        prop_assert_eq!(p.packet_type(), h.ty);
        prop_assert_eq!(without_padding(&frames), vec![Frame::Ping]);
        prop_assert_eq!(p.wire_len(), n);
        // PING is 1 byte; padding brings packet number + frames to 4 (RFC 9001 §5.4.2).
        let frames_len = 1usize.max(4 - header.pn().byte_len());
        prop_assert_eq!(n, packet_overhead(&header) + frames_len);
    }

    #[test]
    fn packets_round_trip((h, specs) in packet_spec()) {
        let bytes = encode_spec(&h, &specs);
        let (p, frames) = decode_all(&bytes, h.dcid.len());
        let header = h.header();
        prop_assert_eq!(p.header(), &header);
        let sent: Vec<Frame<'_>> = specs.iter().map(Spec::frame).collect();
        prop_assert_eq!(without_padding(&frames), without_padding(&sent));
        let frames_len: usize = sent.iter().map(Frame::encoded_len).sum();
        if frames_len + header.pn().byte_len() >= 4 {
            prop_assert_eq!(bytes.len(), packet_overhead(&header) + frames_len);
        }
        // The tag is 16 zero bytes at the end.
        prop_assert!(bytes[bytes.len() - TAG_LEN..].iter().all(|&b| b == 0));
    }
}

#[test]
fn stream_frames_use_all_eight_type_codes() {
    let data = [7u8; 5];
    let mut seen = BTreeSet::new();
    for offset in [0, 1_000] {
        for has_length in [false, true] {
            for fin in [false, true] {
                let f = Frame::Stream(StreamFrame {
                    stream_id: 4,
                    offset,
                    data: &data,
                    fin,
                    has_length,
                });
                frame_round_trip(&f);
                let mut buf = [0u8; 32];
                f.encode(&mut buf).unwrap();
                // §19.8: 0x08 | OFF 0x04 | LEN 0x02 | FIN 0x01.
                let expected = 0x08
                    | if offset != 0 { 0x04 } else { 0 }
                    | if has_length { 0x02 } else { 0 }
                    | u8::from(fin);
                assert_eq!(buf[0], expected);
                seen.insert(buf[0]);
            }
        }
    }
    assert_eq!(seen, (0x08..=0x0f).collect());
    // OFF set with offset 0 is the same frame as OFF clear (§19.8).
    let (f, n) = Frame::decode(&[0x0e, 0x04, 0x00, 0x01, 0xaa]).unwrap();
    assert_eq!(n, 5);
    assert_eq!(
        f,
        Frame::Stream(StreamFrame {
            stream_id: 4,
            offset: 0,
            data: &[0xaa],
            fin: false,
            has_length: true
        })
    );
}

#[test]
fn frame_type_codes_are_rfc9000s() {
    let dir = StreamDir::Uni;
    let ack = AckFrame::from_packet_numbers([3], 0).unwrap();
    let close = |kind| {
        Frame::ConnectionClose(ConnectionClose {
            kind,
            error_code: 0,
            reason: b"",
        })
    };
    let cases: [(Frame<'_>, u8); 20] = [
        (Frame::Padding { len: 1 }, 0x00),
        (Frame::Ping, 0x01),
        (Frame::Ack(ack), 0x02),
        (Frame::Ack(ack.with_ecn(EcnCounts::default())), 0x03),
        (
            Frame::ResetStream {
                stream_id: 0,
                error_code: 0,
                final_size: 0,
            },
            0x04,
        ),
        (
            Frame::StopSending {
                stream_id: 0,
                error_code: 0,
            },
            0x05,
        ),
        (
            Frame::Crypto {
                offset: 0,
                data: b"",
            },
            0x06,
        ),
        (Frame::NewToken { token: b"t" }, 0x07),
        (Frame::MaxData(0), 0x10),
        (
            Frame::MaxStreamData {
                stream_id: 0,
                maximum: 0,
            },
            0x11,
        ),
        (
            Frame::MaxStreams {
                dir: StreamDir::Bidi,
                maximum: 0,
            },
            0x12,
        ),
        (Frame::MaxStreams { dir, maximum: 0 }, 0x13),
        (Frame::DataBlocked(0), 0x14),
        (
            Frame::StreamDataBlocked {
                stream_id: 0,
                maximum: 0,
            },
            0x15,
        ),
        (
            Frame::StreamsBlocked {
                dir: StreamDir::Bidi,
                maximum: 0,
            },
            0x16,
        ),
        (Frame::StreamsBlocked { dir, maximum: 0 }, 0x17),
        (close(CloseKind::Transport { frame_type: 0 }), 0x1c),
        (close(CloseKind::Application), 0x1d),
        (Frame::HandshakeDone, 0x1e),
        (
            Frame::Stream(StreamFrame {
                stream_id: 0,
                offset: 0,
                data: b"",
                fin: false,
                has_length: false,
            }),
            0x08,
        ),
    ];
    for (f, code) in cases {
        let mut buf = [0u8; 16];
        f.encode(&mut buf).unwrap();
        assert_eq!(buf[0], code, "{f:?}");
        frame_round_trip(&f);
    }
}

#[test]
fn max_varints_round_trip_in_every_field() {
    let m = VARINT_MAX;
    let frames = [
        Frame::ResetStream {
            stream_id: m,
            error_code: m,
            final_size: m,
        },
        Frame::MaxData(m),
        Frame::StreamDataBlocked {
            stream_id: m,
            maximum: m,
        },
        Frame::Crypto {
            offset: m,
            data: b"",
        },
        Frame::Ack(
            AckFrame::from_ranges([m..=m, 0..=0], m)
                .unwrap()
                .with_ecn(EcnCounts {
                    ect0: m,
                    ect1: m,
                    ce: m,
                }),
        ),
        Frame::ConnectionClose(ConnectionClose {
            kind: CloseKind::Transport { frame_type: m },
            error_code: m,
            reason: b"bye",
        }),
    ];
    for f in &frames {
        frame_round_trip(f);
    }
    // One above is refused on encode, naming the field.
    let mut buf = [0u8; 32];
    assert_eq!(
        Frame::MaxData(m + 1).encode(&mut buf),
        Err(WireError::VarintRange {
            field: Field::MaximumData,
            value: m + 1
        })
    );
}

// ------------------------------------------------------------------- ACK

/// An independent §19.3.1 reader: the set of packet numbers an ACK frame's
/// bytes acknowledge.
fn reference_acked(bytes: &[u8]) -> BTreeSet<u64> {
    fn varint(b: &[u8], i: &mut usize) -> u64 {
        // §16: two high bits give the length 1/2/4/8; the rest is the value.
        let len = 1 << (b[*i] >> 6);
        let mut v = u64::from(b[*i] & 0x3f);
        for k in 1..len {
            v = (v << 8) | u64::from(b[*i + k]);
        }
        *i += len;
        v
    }
    let mut i = 0;
    let _ty = varint(bytes, &mut i);
    let largest = varint(bytes, &mut i);
    let _delay = varint(bytes, &mut i);
    let count = varint(bytes, &mut i);
    let first = varint(bytes, &mut i);
    let mut set: BTreeSet<u64> = (largest - first..=largest).collect();
    let mut smallest = largest - first;
    for _ in 0..count {
        let gap = varint(bytes, &mut i);
        let len = varint(bytes, &mut i);
        let hi = smallest - gap - 2;
        let lo = hi - len;
        set.extend(lo..=hi);
        smallest = lo;
    }
    set
}

/// The newest `cap` maximal runs of `set`, as a set.
fn newest_runs(set: &BTreeSet<u64>, cap: usize) -> (BTreeSet<u64>, usize) {
    let mut runs = 0;
    let mut kept = BTreeSet::new();
    let mut prev: Option<u64> = None;
    for &pn in set.iter().rev() {
        if prev != Some(pn + 1) {
            runs += 1;
            if runs > cap {
                break;
            }
        }
        kept.insert(pn);
        prev = Some(pn);
    }
    (kept, runs.min(cap))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ack_ranges_match_a_brute_force_set(
        base in prop_oneof![Just(0u64), Just(VARINT_MAX - 400), 0u64..(1 << 40)],
        offsets in vec(prop_oneof![0u64..400, 0u64..40], 1..200),
        delay in varint(),
    ) {
        let set: BTreeSet<u64> = offsets.iter().map(|o| base + o).collect();
        let ack = AckFrame::from_packet_numbers(set.iter().rev().copied(), delay).unwrap();
        let (expected, runs) = newest_runs(&set, AckFrame::MAX_RANGES);
        prop_assert_eq!(ack.range_count(), runs);
        prop_assert_eq!(ack.largest(), *set.last().unwrap());
        prop_assert_eq!(ack.smallest(), *expected.first().unwrap());
        // Membership, the range iterator and the wire bytes all agree.
        for pn in base..base + 400 {
            prop_assert_eq!(ack.contains(pn), expected.contains(&pn), "pn {}", pn);
        }
        let from_iter: BTreeSet<u64> = ack.ranges().flatten().collect();
        prop_assert_eq!(&from_iter, &expected);
        let mut buf = [0u8; 1024];
        let n = Frame::Ack(ack).encode(&mut buf).unwrap();
        prop_assert_eq!(&reference_acked(&buf[..n]), &expected);
        let (back, m) = Frame::decode(&buf[..n]).unwrap();
        prop_assert_eq!(m, n);
        prop_assert_eq!(back, Frame::Ack(ack));
        // Ranges come newest first and never touch.
        let ranges: Vec<_> = ack.ranges().collect();
        for w in ranges.windows(2) {
            prop_assert!(*w[1].end() + 1 < *w[0].start());
        }
    }
}

#[test]
fn ack_bytes_follow_section_19_3_1() {
    // Acked {10,9,8, 5,4, 1}: Largest 10, First ACK Range 10-8 = 2;
    // gap = 8-5-2 = 1, length 5-4 = 1; gap = 4-1-2 = 1, length 0.
    let set = [10u64, 9, 8, 5, 4, 1];
    let ack = AckFrame::from_packet_numbers(set, 3).unwrap();
    let mut buf = [0u8; 32];
    let n = Frame::Ack(ack).encode(&mut buf).unwrap();
    assert_eq!(&buf[..n], &[0x02, 10, 3, 2, 2, 1, 1, 1, 0]);
    assert_eq!(ack.ranges().collect::<Vec<_>>(), vec![8..=10, 4..=5, 1..=1]);
    // §19.3.2: ACK_ECN appends ECT0, ECT1, CE.
    let mut counts = EcnCounts::default();
    for ecn in [
        l4slab_core::Ecn::Ect1,
        l4slab_core::Ecn::Ect1,
        l4slab_core::Ecn::Ce,
        l4slab_core::Ecn::NotEct,
    ] {
        counts.record(ecn);
    }
    let n = Frame::Ack(ack.with_ecn(counts)).encode(&mut buf).unwrap();
    assert_eq!(&buf[..n], &[0x03, 10, 3, 2, 2, 1, 1, 1, 0, 0, 2, 1]);
}

#[test]
fn ack_keeps_the_newest_32_ranges() {
    // 40 isolated packet numbers: 0, 2, ..., 78.
    let set: Vec<u64> = (0..40).map(|i| 2 * i).rev().collect();
    let ack = AckFrame::from_packet_numbers(set.iter().copied(), 0).unwrap();
    assert_eq!(ack.range_count(), 32);
    assert_eq!(ack.largest(), 78);
    assert_eq!(ack.smallest(), 16);
    assert!(!ack.contains(14));
    // The 33rd run is dropped even if it continues: ranges are whole.
    let ack = AckFrame::from_ranges((0..40).rev().map(|i| 10 * i..=10 * i + 5), 0).unwrap();
    assert_eq!(ack.smallest(), 80);

    // A peer's frame with 40 ranges decodes to its newest 32.
    // Largest 78 (2-byte varint 0x40 0x4e), delay 0, 39 ranges, first range 0.
    let mut bytes = vec![0x02, 0x40, 78, 0, 39, 0];
    for _ in 0..39 {
        bytes.extend([0, 0]); // gap 0, length 0: every other packet
    }
    let (f, n) = Frame::decode(&bytes).unwrap();
    assert_eq!(n, bytes.len());
    let Frame::Ack(a) = f else { panic!("{f:?}") };
    assert_eq!(a.range_count(), 32);
    assert_eq!((a.largest(), a.smallest()), (78, 16));
}

#[test]
fn ack_below_zero_is_a_frame_encoding_error() {
    let negative = Err(WireError::FrameEncoding {
        frame: FrameKind::Ack,
        reason: FrameEncodingReason::NegativePacketNumber,
    });
    // First ACK Range 6 > Largest 5.
    assert_eq!(Frame::decode(&[0x02, 5, 0, 0, 6]).map(|f| f.0), negative);
    // Largest 5, first range 3 -> smallest 2; gap 1 -> 2-1-2 < 0.
    assert_eq!(
        Frame::decode(&[0x02, 5, 0, 1, 3, 1, 0]).map(|f| f.0),
        negative
    );
    // Gap 0 -> largest 0, length 1 -> smallest -1.
    assert_eq!(
        Frame::decode(&[0x02, 5, 0, 1, 3, 0, 1]).map(|f| f.0),
        negative
    );
    // Gap 0 -> 0..=0 is fine.
    assert!(Frame::decode(&[0x02, 5, 0, 1, 3, 0, 0]).is_ok());
}

#[test]
#[should_panic(expected = "descending")]
fn ack_from_ascending_numbers_is_a_bug() {
    let _ = AckFrame::from_packet_numbers([1, 2], 0);
}

// ------------------------------------------------------- packet numbers

#[test]
fn packet_numbers_match_rfc9000_appendix_a() {
    // §17.1 / A.2: acked 0xabe8b3; sending 0xac5c02 needs 16 bits, 0xace8fe 24.
    assert_eq!(
        encode_packet_number(0xac5c02, Some(0xabe8b3)),
        Ok(pn(0x5c02, 2))
    );
    assert_eq!(
        encode_packet_number(0xace8fe, Some(0xabe8b3)),
        Ok(pn(0xace8fe, 3))
    );
    // A.3: largest 0xa82f30ea, 16-bit 0x9b32 -> 0xa82f9b32.
    assert_eq!(
        decode_packet_number(Some(0xa82f30ea), pn(0x9b32, 2)),
        0xa82f9b32
    );
    assert_eq!(pn(0x9b32, 2).recover(Some(0xa82f30ea)), 0xa82f9b32);
    // A.2 with no acknowledgment yet: num_unacked = full_pn + 1.
    assert_eq!(encode_packet_number(0, None), Ok(pn(0, 1)));
    assert_eq!(encode_packet_number(127, None), Ok(pn(127, 1)));
    assert_eq!(encode_packet_number(128, None), Ok(pn(128, 2)));
    // log2(n) + 1 <= 8 exactly at n = 128: one byte; 129 needs two.
    assert_eq!(
        encode_packet_number(1128, Some(1000)),
        Ok(pn(1128 & 0xff, 1))
    );
    assert_eq!(
        encode_packet_number(1129, Some(1000)),
        Ok(pn(1129 & 0xffff, 2))
    );
    // Too far ahead, not ahead, or not a packet number.
    for (full_pn, largest_acked) in [
        ((1 << 31) | 1, Some(0)),
        (5, Some(5)),
        (VARINT_MAX + 1, None),
    ] {
        assert_eq!(
            encode_packet_number(full_pn, largest_acked),
            Err(WireError::PacketNumberRange {
                full_pn,
                largest_acked
            })
        );
    }
    assert_eq!(encode_packet_number(1 << 31, Some(0)), Ok(pn(1 << 31, 4)));
    assert_eq!(decode_packet_number(None, pn(0xab, 1)), 0xab);
    // A.3's window edges, 1-byte numbers (hwin 0x80). expected 0x280: the
    // candidate 0x200 equals expected - hwin, so "<=" moves it up to 0x300.
    assert_eq!(decode_packet_number(Some(0x27f), pn(0x00, 1)), 0x300);
    assert_eq!(decode_packet_number(Some(0x27f), pn(0x01, 1)), 0x201);
    // expected 0x200: the candidate 0x280 equals expected + hwin, and only
    // "> expected + hwin" moves it down, so it stays.
    assert_eq!(decode_packet_number(Some(0x1ff), pn(0x80, 1)), 0x280);
    assert_eq!(decode_packet_number(Some(0x1ff), pn(0x81, 1)), 0x181);
    // Near 2^62 nothing is moved past the last packet number.
    assert_eq!(
        decode_packet_number(Some(VARINT_MAX - 1), pn(0x00, 1)),
        VARINT_MAX - 0xff
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// A sender that follows A.2 is always understood by a receiver whose
    /// largest received lies between the sender's largest acked and the
    /// packet being sent.
    #[test]
    fn truncation_is_recovered_by_any_receiver_in_the_window(
        acked in prop_oneof![Just(None), (0u64..VARINT_MAX - (1 << 31)).prop_map(Some)],
        ahead in prop_oneof![1u64..300, 1u64..=(1 << 31)],
        seen in 0.0f64..1.0,
    ) {
        let full = acked.map_or(ahead - 1, |a| a + ahead);
        let t = encode_packet_number(full, acked).unwrap();
        prop_assert_eq!(u64::from(t.value()), full & ((1u64 << (8 * t.byte_len())) - 1));
        // Receiver's largest: anything from the acked packet up to full - 1.
        let lo = acked.unwrap_or(0);
        let receiver = if full == 0 { None } else {
            Some(lo + ((full - 1 - lo) as f64 * seen) as u64)
        };
        let receiver = if acked.is_none() && seen < 0.1 { None } else { receiver };
        prop_assert_eq!(decode_packet_number(receiver, t), full);
    }

    /// A.3 picks the candidate nearest expected = largest + 1:
    /// within (expected - hwin, expected + hwin].
    #[test]
    fn recovery_is_the_nearest_candidate(
        largest in (1u64 << 33)..(VARINT_MAX - (1 << 33)),
        t in truncated_pn(),
    ) {
        let got = decode_packet_number(Some(largest), t);
        let bits = 8 * t.byte_len();
        prop_assert_eq!(got & ((1 << bits) - 1), u64::from(t.value()));
        let expected = largest + 1;
        let hwin = 1u64 << (bits - 1);
        prop_assert!(got > expected - hwin && got <= expected + hwin, "{got} vs {expected}");
    }
}

// ------------------------------------------------------------------ sizes

#[test]
fn one_rtt_packet_with_a_1200_byte_stream_frame() {
    let dcid = [0x11; 8];
    let header = short(&dcid, pn(0x1234, 2));
    let data = [0x5a; 1200];
    let frame = Frame::Stream(StreamFrame {
        stream_id: 4,
        offset: 0,
        data: &data,
        fin: false,
        has_length: true,
    });
    // Header: 1 + DCID 8 + PN 2 = 11; tag 16.
    assert_eq!(packet_overhead(&header), 27);
    // STREAM: type 1 + id 1 + Length 2 (1200 >= 64) + 1200 data = 1204.
    assert_eq!(frame.encoded_len(), 1204);
    let mut buf = [0u8; 1500];
    let n = encode_packet(&header, std::slice::from_ref(&frame), &mut buf).unwrap();
    assert_eq!(n, 1231);
    let (p, frames) = decode_all(&buf[..n], 8);
    assert_eq!(p.wire_len(), 1231);
    assert_eq!(frames, vec![frame]);
    // Without Length, 2 bytes fewer; with an offset of 1_000_000 (4-byte varint), 4 more.
    let open = Frame::Stream(StreamFrame {
        stream_id: 4,
        offset: 1_000_000,
        data: &data,
        fin: true,
        has_length: false,
    });
    assert_eq!(encode_packet(&header, &[open], &mut buf), Ok(1231 - 2 + 4));
}

#[test]
fn long_header_sizes_and_length_field() {
    let (dcid, scid) = ([1u8; 8], [2u8; 8]);
    let header = long(LongType::Initial { token: b"" }, &dcid, &scid, pn(0, 1));
    // 1 + version 4 + 1 + 8 + 1 + 8 + token length 1 + Length 2 + PN 1 = 27; tag 16.
    assert_eq!(packet_overhead(&header), 43);
    let mut buf = [0u8; 1500];
    let mut b = PacketBuilder::new(&mut buf, &header).unwrap();
    b.push(&Frame::Crypto {
        offset: 0,
        data: &[9; 300],
    })
    .unwrap();
    b.pad_to(MIN_INITIAL_DATAGRAM).unwrap();
    let n = b.finish().unwrap();
    assert_eq!(n, MIN_INITIAL_DATAGRAM);
    // Version at 1..5; Length at 24..26 = 1200 - 26 bytes before the
    // packet number, as a 2-byte varint.
    assert_eq!(&buf[1..5], &L4SLAB_VERSION.to_be_bytes());
    assert_eq!(
        &buf[24..26],
        &[0x40 | (1174 >> 8) as u8, (1174 & 0xff) as u8]
    );
    let (p, frames) = decode_all(&buf[..n], 0);
    assert_eq!(frames.len(), 2);
    assert!(matches!(frames[1], Frame::Padding { len } if len == 1200 - 43 - 304));
    assert_eq!(p.header(), &header);
}

#[test]
fn tiny_packets_are_padded_for_the_header_protection_sample() {
    let dcid = [3u8; 4];
    let mut buf = [0u8; 64];
    // PING with a 1-byte packet number: 2 bytes of PADDING make pn + frames 4.
    let n = encode_packet(&short(&dcid, pn(7, 1)), &[Frame::Ping], &mut buf).unwrap();
    assert_eq!(n, 1 + 4 + 1 + 3 + TAG_LEN);
    let (_, frames) = decode_all(&buf[..n], 4);
    assert_eq!(frames, vec![Frame::Ping, Frame::Padding { len: 2 }]);
    // With a STREAM frame without Length, the padding goes before it.
    let open = Frame::Stream(StreamFrame {
        stream_id: 0,
        offset: 0,
        data: b"",
        fin: true,
        has_length: false,
    });
    let n = encode_packet(
        &short(&dcid, pn(7, 1)),
        std::slice::from_ref(&open),
        &mut buf,
    )
    .unwrap();
    let (_, frames) = decode_all(&buf[..n], 4);
    assert_eq!(frames, vec![Frame::Padding { len: 1 }, open.clone()]);
    // pad_to also inserts before it, keeping its data intact.
    let data = Frame::Stream(StreamFrame {
        stream_id: 0,
        offset: 0,
        data: b"abc",
        fin: false,
        has_length: false,
    });
    let mut b = PacketBuilder::new(&mut buf, &short(&dcid, pn(7, 1))).unwrap();
    b.push(&data).unwrap();
    assert_eq!(
        b.push(&Frame::Ping),
        Err(WireError::FrameAfterImplicitLength)
    );
    b.pad_to(50).unwrap();
    let n = b.finish().unwrap();
    assert_eq!(n, 50);
    let (_, frames) = decode_all(&buf[..n], 4);
    assert_eq!(frames[1], data);
}

#[test]
fn coalesced_packets_decode_in_order() {
    let (dcid, scid) = ([1u8; 8], [2u8; 8]);
    let mut datagram = vec![0u8; 600];
    let mut at = 0;
    for (header, frame) in [
        (
            long(LongType::Initial { token: b"tok" }, &dcid, &scid, pn(1, 1)),
            Frame::Crypto {
                offset: 0,
                data: b"hello",
            },
        ),
        (
            long(LongType::Handshake, &dcid, &scid, pn(2, 2)),
            Frame::Crypto {
                offset: 0,
                data: b"finished",
            },
        ),
        (short(&dcid, pn(3, 3)), Frame::HandshakeDone),
    ] {
        at += encode_packet(&header, &[frame], &mut datagram[at..]).unwrap();
    }
    datagram.truncate(at);
    let mut rest = &datagram[..];
    let mut types = vec![];
    while !rest.is_empty() {
        let (p, r) = Packet::decode(rest, 8).unwrap();
        types.push(p.packet_type());
        assert_eq!(p.frames().count(), 1);
        rest = r;
    }
    assert_eq!(
        types,
        [
            PacketType::Initial,
            PacketType::Handshake,
            PacketType::OneRtt
        ]
    );
}

// ----------------------------------------------------------------- errors

#[test]
fn malformed_frames_are_named() {
    let d = |b: &[u8]| Frame::decode(b).map(|(f, _)| f.kind());
    assert_eq!(d(&[]), Err(WireError::Truncated(Field::FrameType)));
    assert_eq!(d(&[0x21]), Err(WireError::UnknownFrameType(0x21)));
    assert_eq!(d(&[0x18]), Err(WireError::UnsupportedFrameType(0x18)));
    assert_eq!(d(&[0x40, 0x01]), Err(WireError::NonMinimalFrameType(1)));
    assert_eq!(
        d(&[0x10, 0x80, 0x00]),
        Err(WireError::BadVarint {
            field: Field::MaximumData,
            needed: 4,
            available: 2
        })
    );
    assert_eq!(
        d(&[0x04, 0x01]),
        Err(WireError::Truncated(Field::ErrorCode))
    );
    assert_eq!(
        d(&[0x06, 0x00, 0x05, 1, 2]),
        Err(WireError::LengthOverflow {
            field: Field::DataLength,
            length: 5,
            available: 2
        })
    );
    assert_eq!(
        d(&[0x1c, 0x00, 0x00, 0x03, b'a']),
        Err(WireError::LengthOverflow {
            field: Field::ReasonPhraseLength,
            length: 3,
            available: 1
        })
    );
    // Offset 2^62-1 plus one byte of data.
    let mut b = vec![0x0e, 0x00];
    b.extend([0xff; 8]);
    b.extend([0x01, 0xaa]);
    assert_eq!(
        d(&b),
        Err(WireError::FrameEncoding {
            frame: FrameKind::Stream,
            reason: FrameEncodingReason::OffsetOverflow
        })
    );
    // MAX_STREAMS 2^60 + 1.
    let mut b = vec![0x12];
    b.extend((((1u64 << 60) + 1) | 0xc000_0000_0000_0000).to_be_bytes());
    assert_eq!(
        d(&b),
        Err(WireError::FrameEncoding {
            frame: FrameKind::MaxStreams,
            reason: FrameEncodingReason::StreamCountTooLarge
        })
    );
    assert_eq!(
        d(&[0x07, 0x00]),
        Err(WireError::FrameEncoding {
            frame: FrameKind::NewToken,
            reason: FrameEncodingReason::EmptyToken
        })
    );
    // The encoder refuses what the decoder would.
    let mut buf = [0u8; 16];
    assert!(Frame::NewToken { token: b"" }.encode(&mut buf).is_err());
    assert!(Frame::MaxStreams {
        dir: StreamDir::Bidi,
        maximum: (1 << 60) + 1
    }
    .encode(&mut buf)
    .is_err());
    assert_eq!(
        Frame::Crypto {
            offset: 0,
            data: &[0; 20]
        }
        .encode(&mut buf),
        Err(WireError::BufferTooSmall {
            needed: 23,
            available: 16
        })
    );
}

#[test]
fn malformed_headers_are_named() {
    let dcid = [9u8; 4];
    let mut good = [0u8; 64];
    let n = encode_packet(&short(&dcid, pn(1, 1)), &[Frame::Ping], &mut good).unwrap();
    let good = &good[..n];
    let with = |i: usize, b: u8| {
        let mut v = good.to_vec();
        v[i] = b;
        v
    };
    let d = |v: &[u8], len| Packet::decode(v, len).map(|p| p.0.packet_type());
    assert_eq!(d(good, 4), Ok(PacketType::OneRtt));
    assert_eq!(d(&[], 4), Err(WireError::Truncated(Field::FirstByte)));
    assert_eq!(
        d(&with(0, good[0] & !0x40), 4),
        Err(WireError::FixedBitZero)
    );
    assert_eq!(
        d(&with(0, good[0] | 0x08), 4),
        Err(WireError::ReservedBits(0b01))
    );
    assert_eq!(d(&with(0, good[0] | 0x04), 4), Err(WireError::KeyPhase));
    assert_eq!(d(&with(n - 1, 1), 4), Err(WireError::BadTag));
    // Header 6 bytes, then only 4 of the 16 tag bytes.
    assert_eq!(d(&good[..10], 4), Err(WireError::Truncated(Field::Tag)));
    assert_eq!(
        d(good, 21),
        Err(WireError::ConnectionIdTooLong {
            field: Field::Dcid,
            length: 21
        })
    );
    // A frame the packet type forbids is reported by the frame iterator.
    let mut buf = [0u8; 128];
    let (scid, tok) = ([1u8; 2], b"");
    let initial = long(LongType::Initial { token: tok }, &dcid, &scid, pn(0, 4));
    let n = encode_packet(&initial, &[Frame::Ping], &mut buf).unwrap();
    let (p, _) = Packet::decode(&buf[..n], 0).unwrap();
    assert!(p.frames().all(|f| f.is_ok()));
    // Rewrite the PING byte as HANDSHAKE_DONE (1-RTT only).
    let ping_at = n - TAG_LEN - 1;
    assert_eq!(buf[ping_at], 0x01);
    buf[ping_at] = 0x1e;
    let (p, _) = Packet::decode(&buf[..n], 0).unwrap();
    assert_eq!(
        p.frames().collect::<Vec<_>>(),
        vec![Err(WireError::FrameNotAllowed {
            frame: FrameKind::HandshakeDone,
            packet: PacketType::Initial
        })]
    );
    // Long-header fields.
    let n = encode_packet(&initial, &[Frame::Ping], &mut buf).unwrap();
    let mut v = buf[..n].to_vec();
    v[1] ^= 0xff;
    assert_eq!(
        d(&v, 0),
        Err(WireError::UnsupportedVersion(L4SLAB_VERSION ^ 0xff00_0000))
    );
    let mut v = buf[..n].to_vec();
    v[0] |= 0x30;
    assert_eq!(d(&v, 0), Err(WireError::Retry));
    let mut v = buf[..n].to_vec();
    v[5] = 21;
    assert_eq!(
        d(&v, 0),
        Err(WireError::ConnectionIdTooLong {
            field: Field::Dcid,
            length: 21
        })
    );
    // Length one more than what is there.
    let mut v = buf[..n].to_vec();
    let len_at = 1 + 4 + 1 + 4 + 1 + 2 + 1;
    v[len_at + 1] += 1;
    assert!(matches!(
        d(&v, 0),
        Err(WireError::LengthOverflow {
            field: Field::Length,
            ..
        })
    ));
    // A packet with no frames, and one too short to sample: `good` is
    // header 6 | PING, PADDING, PADDING | tag 16.
    let mut v = good.to_vec();
    v.drain(6..9);
    assert_eq!(d(&v, 4), Err(WireError::EmptyPayload));
    let mut v = good.to_vec();
    v.remove(8);
    assert_eq!(d(&v, 4), Err(WireError::PayloadTooShort(3)));
}

#[test]
fn builder_refuses_what_does_not_fit_or_belong() {
    let dcid = [0u8; 8];
    let h = short(&dcid, pn(0, 1));
    let mut small = [0u8; 20];
    assert!(matches!(
        PacketBuilder::new(&mut small, &h),
        Err(WireError::BufferTooSmall { .. })
    ));
    let mut buf = [0u8; 40];
    let mut b = PacketBuilder::new(&mut buf, &h).unwrap();
    // 40 - 10 header - 16 tag = 14 bytes for frames.
    assert_eq!(b.remaining(), 14);
    let big = Frame::Crypto {
        offset: 0,
        data: &[0; 12],
    };
    assert!(matches!(
        b.push(&big),
        Err(WireError::BufferTooSmall { .. })
    ));
    assert_eq!(
        b.remaining(),
        14,
        "a failed push leaves the packet unchanged"
    );
    assert!(!b.has_frames());
    let h0 = long(LongType::ZeroRtt, &dcid, &dcid, pn(0, 1));
    let mut buf = [0u8; 100];
    let mut b = PacketBuilder::new(&mut buf, &h0).unwrap();
    let ack = AckFrame::from_packet_numbers([1], 0).unwrap();
    assert_eq!(
        b.push(&Frame::Ack(ack)),
        Err(WireError::FrameNotAllowed {
            frame: FrameKind::Ack,
            packet: PacketType::ZeroRtt
        })
    );
    assert_eq!(b.finish(), Err(WireError::EmptyPayload));
    let hh = long(LongType::Handshake, &dcid, &dcid, pn(0, 1));
    let mut b = PacketBuilder::new(&mut buf, &hh).unwrap();
    let app_close = Frame::ConnectionClose(ConnectionClose {
        kind: CloseKind::Application,
        error_code: 1,
        reason: b"",
    });
    assert!(matches!(
        b.push(&app_close),
        Err(WireError::FrameNotAllowed { .. })
    ));
    let long_cid = [0u8; 21];
    assert_eq!(
        PacketBuilder::new(&mut buf, &short(&long_cid, pn(0, 1))).map(|_| ()),
        Err(WireError::ConnectionIdTooLong {
            field: Field::Dcid,
            length: 21
        })
    );
    assert_eq!(
        TruncatedPn::new(256, 1),
        Err(WireError::PacketNumberLength { value: 256, len: 1 })
    );
    assert!(TruncatedPn::new(0, 5).is_err());
}

// ------------------------------------------------------------------- fuzz

/// Feed `datagram` to the decoder, packet by packet. Never panics; every
/// packet whose header and frames all decode must re-encode to an
/// equivalent packet: same header, same frames apart from PADDING (which
/// the builder may add for the sample minimum when the input used longer
/// varints than needed). Returns how many packets were accepted.
fn check_decoder(datagram: &[u8], dcid_len: usize) -> usize {
    let mut accepted = 0;
    let mut rest = datagram;
    while let Ok((p, next)) = Packet::decode(rest, dcid_len) {
        assert!(next.len() < rest.len(), "decoding must make progress");
        rest = next;
        let Ok(frames) = p.frames().collect::<Result<Vec<_>, _>>() else {
            continue;
        };
        accepted += 1;
        let mut buf = vec![0u8; 2 * p.wire_len() + 64];
        let n = encode_packet(p.header(), &frames, &mut buf)
            .unwrap_or_else(|e| panic!("accepted {p:?} does not re-encode: {e}"));
        let (p2, frames2) = decode_all(&buf[..n], dcid_len);
        assert_eq!(p2.header(), p.header());
        assert_eq!(without_padding(&frames2), without_padding(&frames));
        // Only a 1-byte Length can grow (to l4slab's 2 bytes); everything
        // else re-encodes minimally, and padding only restores the minimum.
        assert!(
            n <= p.wire_len() + 1,
            "re-encoding grew {} -> {n}",
            p.wire_len()
        );
    }
    accepted
}

/// Bytes biased towards frame types, short varints and zeros.
fn fuzz_byte() -> impl Strategy<Value = u8> {
    prop_oneof![3 => any::<u8>(), 2 => 0u8..0x20, 1 => Just(0u8), 1 => 0x40u8..0x44]
}

fn run_fuzz<S: Strategy>(cases: u32, strategy: S, f: impl Fn(S::Value) -> usize) -> (u32, usize)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let (runs, accepted) = (Cell::new(0u32), Cell::new(0usize));
    runner
        .run(&strategy, |v| {
            runs.set(runs.get() + 1);
            accepted.set(accepted.get() + f(v));
            Ok(())
        })
        .unwrap();
    (runs.get(), accepted.get())
}

#[test]
fn fuzz_random_datagrams() {
    let (runs, _) = run_fuzz(
        2500,
        (vec(fuzz_byte(), 0..300), 0usize..=20),
        |(bytes, dcid_len)| check_decoder(&bytes, dcid_len),
    );
    assert!(runs >= 2500);
}

#[test]
fn fuzz_random_frames_in_a_valid_envelope() {
    // A valid header and tag around random frame bytes, so the frame
    // decoders (not just the header checks) see garbage.
    // Mostly RFC 9000 type codes and 1-byte varints, so that whole frame
    // sequences parse often enough to exercise re-encoding.
    let byte = prop_oneof![3 => 0u8..0x1f, 2 => 0u8..0x40, 1 => any::<u8>()];
    let strategy = (header_spec(), vec(byte, 1..48));
    let (runs, accepted) = run_fuzz(2500, strategy, |(h, payload)| {
        let header = h.header();
        let mut buf = vec![0u8; 512];
        encode_packet(&header, &[Frame::Ping], &mut buf).unwrap();
        // Header bytes, then the random payload, a zero tag, and Length patched.
        let header_len = header.encoded_len();
        let mut v = buf[..header_len].to_vec();
        v.extend(&payload);
        v.extend([0u8; TAG_LEN]);
        if let Header::Long(_) = header {
            let pn_at = header_len - h.pn.byte_len();
            let length = (v.len() - pn_at) as u16;
            v[pn_at - 2..pn_at].copy_from_slice(&(0x4000 | length).to_be_bytes());
        }
        check_decoder(&v, h.dcid.len())
    });
    assert!(runs >= 2500);
    // Not vacuous: plenty of random payloads are valid frame sequences.
    assert!(accepted > 100, "only {accepted} accepted");
    eprintln!("envelope fuzz: {accepted} of {runs} accepted");
}

#[test]
fn fuzz_mutated_valid_packets() {
    let strategy = (
        packet_spec(),
        vec((0u8..5, any::<usize>(), any::<u8>()), 1..4),
    );
    let (runs, accepted) = run_fuzz(2500, strategy, |((h, specs), mutations)| {
        let mut v = encode_spec(&h, &specs);
        let accepted_before = check_decoder(&v, h.dcid.len());
        assert_eq!(accepted_before, 1, "the unmutated packet is accepted");
        for (op, at, byte) in mutations {
            let i = at % (v.len() + 1);
            match op {
                0 if i < v.len() => v[i] ^= 1 << (byte % 8),
                1 if i < v.len() => v[i] = byte,
                2 => v.insert(i, byte),
                3 if i < v.len() => {
                    v.remove(i);
                }
                _ => v.truncate(i),
            }
        }
        check_decoder(&v, h.dcid.len())
    });
    assert!(runs >= 2500);
    assert!(accepted > 100, "only {accepted} mutated packets accepted");
    eprintln!("mutation fuzz: {accepted} of {runs} accepted");
}

#[test]
fn fuzz_frame_decoder_alone() {
    let (runs, accepted) = run_fuzz(2500, vec(fuzz_byte(), 0..64), |bytes| {
        let Ok((f, n)) = Frame::decode(&bytes) else {
            return 0;
        };
        assert!(n <= bytes.len() && n > 0);
        let mut buf = vec![0u8; 2 * n + 16];
        let m = f
            .encode(&mut buf)
            .unwrap_or_else(|e| panic!("accepted {f:?} does not re-encode: {e}"));
        assert!(m <= n);
        assert_eq!(Frame::decode(&buf[..m]), Ok((f, m)));
        1
    });
    assert!(runs >= 2500);
    assert!(accepted > 500, "only {accepted} accepted");
    eprintln!("frame fuzz: {accepted} of {runs} accepted");
}

#[test]
fn varint_len_matches_the_encoder() {
    for v in [
        0,
        63,
        64,
        16_383,
        16_384,
        (1 << 30) - 1,
        1 << 30,
        VARINT_MAX,
    ] {
        let mut buf = [0u8; 8];
        let n = l4slab_quic::wire::encode_varint(v, &mut buf).unwrap();
        assert_eq!(n, varint_len(v));
        assert_eq!(l4slab_quic::wire::decode_varint(&buf[..n]), Ok((v, n)));
    }
}
