//! The simulator's rows of the packet trace (`packets.parquet`, columns in
//! [`l4slab_core::pkttrace`]): a host's send and deliver, and the
//! bottleneck's queue events (`l4slab_bottleneck::QueueEvent`), each with the headers of the
//! segment or datagram the packet carries. Nothing here allocates: the
//! trace's vectors are reused chunk after chunk.

use l4slab_bottleneck::Bottleneck;
use l4slab_core::pkttrace::{AtQueue, PktEvent, Row, Side, CHUNK_ROWS};
use l4slab_core::{Packet, Time};

use crate::segstore::Carried;
use crate::PacketTrace;

/// An empty trace naming `bn`'s queues, and `bn` recording its queue events.
pub fn start(bn: &mut Bottleneck) -> PacketTrace {
    bn.record_packet_events();
    // Room for a chunk and the rows one event may add past it.
    PacketTrace::with_names(CHUNK_ROWS + CHUNK_ROWS / 8, bn.queue_names())
}

/// One row about `pkt`, carrying `carried`; `from_sender`: the flow's data
/// sender sent it.
pub fn row(
    tr: &mut PacketTrace,
    now: Time,
    event: PktEvent,
    at: AtQueue,
    pkt: &Packet,
    carried: &Carried,
    from_sender: bool,
) {
    let row = Row {
        t_s: now.as_secs_f64(),
        event,
        pkt_id: pkt.id,
        at,
        flow: pkt.flow,
        side: Side::Data,
        seq: 0,
        len: 0,
        ack: 0,
        ecn: pkt.ecn,
        retransmission: false,
        wnd: 0,
        flags: 0,
    };
    match carried {
        // A datagram: `seq` is the app's tag, `len` its payload.
        Carried::Dgram(dg) => tr.push(Row {
            side: Side::Dgram,
            seq: dg.tag,
            len: dg.payload,
            ..row
        }),
        // A byte datagram (a QUIC packet): the trace shows its length; its
        // bytes are in the pcap.
        Carried::Bytes { len, .. } => tr.push(Row {
            side: Side::Dgram,
            seq: 0,
            len: *len,
            ..row
        }),
        Carried::Seg(seg) => {
            tr.push(Row {
                side: if from_sender { Side::Data } else { Side::Ack },
                seq: seg.seq,
                len: seg.len,
                ack: seg.ack,
                retransmission: seg.retransmission,
                wnd: seg.wnd,
                // `Flags` has the header's bit layout.
                flags: seg.flags.bits(),
                ..row
            });
            for b in &seg.sack[..usize::from(seg.sack_count)] {
                tr.sack_block(b.start, b.end);
            }
        }
    }
}
