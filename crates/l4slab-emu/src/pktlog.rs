//! The per-packet trace of an emulated run (`packet_trace = true`): the
//! columns of the simulator's `packets.parquet`, read from the real TCP
//! headers the forwarder carries.
//!
//! Events are seen at the bottleneck: `send` when a packet reaches the queue
//! (the simulator logs it when the host sends it; with no access delay the
//! two coincide), then the bottleneck runtime's queue events as in the
//! simulator (`enqueue`, `dequeue` with its sojourn, `mark:<reason>`,
//! `drop:<reason>` when the queue, the ECN path or the wire drops it), and
//! `deliver` when the forwarder releases it to the receiving namespace.
//! `pkt_id` is the forwarder's number of the packet (after GSO splitting),
//! the same on each of its rows. Sequence and ACK numbers are relative to the sender's initial
//! sequence number, as in the simulator: the SYN is 0, the first data byte 1
//! (the ACK of the SYN is 1). `wnd` is the
//! raw TCP window field (the window scale is not tracked); `retransmission`
//! marks a data segment that does not go beyond the highest sequence number
//! already seen for its flow. Only TCP packets of scenario flows are logged.
//!
//! The columns are the simulator's: [`PacketTrace`] lives in l4slab-core.

use l4slab_core::pkttrace::{AtQueue, PacketTrace, PktEvent, QueueNames, Row, Side};
use l4slab_core::Packet;

/// Builds the [`PacketTrace`] of an emulated run from the packets' headers.
#[derive(Debug, Default)]
pub struct PacketLog {
    pub trace: PacketTrace,
    /// Per flow: does the data go down (server -> client)?
    data_down: Vec<bool>,
    /// Per flow and direction (index `2 * flow + dir`): the ISN, once seen.
    isn: Vec<Option<u32>>,
    /// Per flow and direction: highest relative sequence end sent so far.
    high: Vec<u64>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl PacketLog {
    /// `data_down[i]`: flow `i` is a download; `names`: the bottleneck's
    /// queues (`Bottleneck::queue_names`).
    pub fn new(data_down: Vec<bool>, names: QueueNames) -> Self {
        let n = data_down.len();
        PacketLog {
            trace: PacketTrace::with_names(0, names),
            data_down,
            isn: vec![None; 2 * n],
            high: vec![0; 2 * n],
        }
    }

    pub fn rows(&self) -> usize {
        self.trace.rows()
    }

    /// Log `event` (at queue `at`, or [`AtQueue::NONE`]) of packet `pkt`
    /// (`ip`: its IP bytes) going in direction `dir` (0 = down, 1 = up);
    /// ignored unless it is TCP of a known flow. The row's `ecn` is the
    /// packet's as the bottleneck sees it (`pkt.ecn`: CE once marked).
    pub fn record(
        &mut self,
        t_s: f64,
        event: PktEvent,
        at: AtQueue,
        pkt: &Packet,
        dir: usize,
        ip: &[u8],
    ) {
        let (flow, ecn) = (pkt.flow, pkt.ecn);
        let f = flow as usize;
        if f >= self.data_down.len() {
            return;
        }
        let Ok(info) = crate::packet::parse(ip) else {
            return;
        };
        let Some(l4) = info.l4 else { return };
        if info.proto != 6 || l4 + 20 > ip.len() {
            return;
        }
        let end = if info.version == 4 {
            usize::from(be16(ip, 2))
        } else {
            40 + usize::from(be16(ip, 4))
        };
        let hlen = l4 + usize::from(ip[l4 + 12] >> 4) * 4;
        if hlen > end || end > ip.len() {
            return;
        }
        let tcp_flags = ip[l4 + 13];
        let syn = tcp_flags & 0x02 != 0;
        let me = 2 * f + dir;
        let peer = 2 * f + (1 - dir);
        let raw_seq = be32(ip, l4 + 4);
        if syn && self.isn[me].is_none() {
            self.isn[me] = Some(raw_seq);
        }
        let rel = |isn: Option<u32>, v: u32| -> u64 {
            isn.map_or(u64::from(v), |i| u64::from(v.wrapping_sub(i)))
        };
        let payload = (end - hlen) as u32;
        let seq = if syn { 0 } else { rel(self.isn[me], raw_seq) };
        let ack = if tcp_flags & 0x10 != 0 {
            rel(self.isn[peer], be32(ip, l4 + 8))
        } else {
            0
        };
        let data = self.data_down[f] == (dir == 0);
        let seq_end = seq + u64::from(payload);
        let sending = event == PktEvent::Send;
        let retransmission = sending && payload > 0 && seq_end <= self.high[me];
        if sending {
            self.high[me] = self.high[me].max(seq_end);
        }
        self.trace.push(Row {
            t_s,
            event,
            pkt_id: pkt.id,
            at,
            flow,
            side: if data { Side::Data } else { Side::Ack },
            seq,
            len: payload,
            ack,
            ecn,
            retransmission,
            wnd: u64::from(be16(ip, l4 + 14)),
            // The 9 flag bits: AE is the low bit of byte 12.
            flags: u16::from(ip[l4 + 12] & 0x01) << 8 | u16::from(tcp_flags),
        });
        sack_blocks(&ip[l4 + 20..hlen], self.isn[peer], &mut self.trace);
    }

    /// The columns as JSON (what `packets.parquet` is built from).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.trace).expect("the trace serializes")
    }
}

/// The SACK blocks of a TCP option list, relative to `isn`, added to the
/// trace's last row.
fn sack_blocks(opts: &[u8], isn: Option<u32>, trace: &mut PacketTrace) {
    let rel = |v: u32| isn.map_or(u64::from(v), |i| u64::from(v.wrapping_sub(i)));
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == 5 {
                    for b in opts[i + 2..i + len].chunks_exact(8) {
                        trace.sack_block(rel(be32(b, 0)), rel(be32(b, 4)));
                    }
                }
                i += len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Ecn;

    fn tcp(seq: u32, ack: u32, flags: u8, payload: usize, sack: Option<(u32, u32)>) -> Vec<u8> {
        let opt = if sack.is_some() { 12 } else { 0 };
        let hl = 20 + opt;
        let total = 20 + hl + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&ack.to_be_bytes());
        p[32] = ((hl / 4) as u8) << 4;
        p[33] = flags;
        p[34..36].copy_from_slice(&512u16.to_be_bytes());
        if let Some((l, r)) = sack {
            p[40..44].copy_from_slice(&[1, 1, 5, 10]);
            p[44..48].copy_from_slice(&l.to_be_bytes());
            p[48..52].copy_from_slice(&r.to_be_bytes());
        }
        p
    }

    fn names() -> QueueNames {
        QueueNames::new(&[("bottleneck.down", &[]), ("bottleneck.up", &[])])
    }

    /// `log.record` of a host's event, the packet numbered by its time in ms.
    fn rec(log: &mut PacketLog, t: f64, ev: PktEvent, flow: u32, dir: usize, ip: &[u8], ecn: Ecn) {
        let p = Packet::new((t * 1e3).round() as u64, flow, ip.len() as u32, ecn);
        log.record(t, ev, AtQueue::NONE, &p, dir, ip);
    }

    #[test]
    fn sequence_numbers_are_relative_and_retransmissions_flagged() {
        // Relative numbers as in the simulator's trace: SYN = 0, first data byte = 1.
        // One download: data goes down (dir 0) from the server.
        let mut log = PacketLog::new(vec![true], names());
        rec(
            &mut log,
            0.0,
            PktEvent::Send,
            0,
            1,
            &tcp(1000, 0, 0x02, 0, None),
            Ecn::NotEct,
        ); // client SYN
        rec(
            &mut log,
            0.01,
            PktEvent::Send,
            0,
            0,
            &tcp(5000, 1001, 0x12, 0, None),
            Ecn::NotEct,
        ); // SYN-ACK
        rec(
            &mut log,
            0.02,
            PktEvent::Send,
            0,
            0,
            &tcp(5001, 1001, 0x10, 100, None),
            Ecn::Ect0,
        );
        rec(
            &mut log,
            0.03,
            PktEvent::Send,
            0,
            0,
            &tcp(5101, 1001, 0x10, 100, None),
            Ecn::Ect0,
        );
        rec(
            &mut log,
            0.04,
            PktEvent::Send,
            0,
            0,
            &tcp(5001, 1001, 0x10, 100, None),
            Ecn::Ect0,
        ); // again
        rec(
            &mut log,
            0.05,
            PktEvent::Deliver,
            0,
            1,
            &tcp(1001, 5101, 0x50, 0, Some((5101, 5201))),
            Ecn::NotEct,
        );
        assert_eq!(log.rows(), 6);
        let sides: Vec<&str> = (0..6).map(|i| log.trace.side_name(i)).collect();
        assert_eq!(sides, ["ack", "data", "data", "data", "data", "ack"]);
        assert_eq!(log.trace.seq, [0, 0, 1, 101, 1, 1]);
        assert_eq!(log.trace.len, [0, 0, 100, 100, 100, 0]);
        assert_eq!(log.trace.ack[5], 101);
        assert_eq!(
            log.trace.retransmission,
            [false, false, false, false, true, false]
        );
        assert_eq!(log.trace.sack_text(5), "101-201");
        assert_eq!(log.trace.flags_text(0), "S");
        assert_eq!(log.trace.flags_text(1), "S.");
        assert_eq!(log.trace.flags_text(5), ".E");
        assert_eq!(log.trace.ecn_name(2), "ect0");
        // Not TCP or not a scenario flow: ignored.
        rec(
            &mut log,
            0.06,
            PktEvent::Send,
            7,
            0,
            &tcp(1, 1, 0x10, 0, None),
            Ecn::NotEct,
        );
        rec(
            &mut log,
            0.06,
            PktEvent::Send,
            0,
            0,
            &[0x45, 0, 0],
            Ecn::NotEct,
        );
        assert_eq!(log.rows(), 6);
        // A drop.
        rec(
            &mut log,
            0.07,
            PktEvent::Drop(l4slab_core::DropReason::AqmDrop),
            0,
            0,
            &tcp(5201, 1001, 0x10, 100, None),
            Ecn::Ect0,
        );
        assert_eq!(log.trace.event_name(6), "drop:aqm");
        // The result JSON keeps its shape: one array per column, names spelled out.
        let j = log.to_json();
        assert_eq!(j["event"][5], "deliver");
        assert_eq!(j["event"][6], "drop:aqm");
        assert_eq!(j["side"][0], "ack");
        assert_eq!(j["ecn"][2], "ect0");
        assert_eq!(j["sack"][5], "101-201");
        assert_eq!(j["sack"][4], "");
        assert_eq!(j["flags"][1], "S.");
        assert_eq!(j["seq"][3], 101);
        assert_eq!(j["retransmission"][4], true);
        // Host events are at no queue; every row names its packet.
        assert_eq!(j["queue"][0], serde_json::Value::Null);
        assert_eq!(j["pkt_id"][1], 10);
    }

    #[test]
    fn queue_rows_name_the_queue_and_carry_the_sojourn() {
        let mut log = PacketLog::new(vec![true], names());
        let at = AtQueue {
            queue: log.trace.names.queue_code(0),
            subqueue: 0,
            sojourn_us: 1250.0,
        };
        let p = Packet::new(42, 0, 140, Ecn::Ce);
        let ip = tcp(5001, 1001, 0x10, 100, None);
        log.record(0.5, PktEvent::Dequeue, at, &p, 0, &ip);
        let j = log.to_json();
        assert_eq!(j["event"][0], "dequeue");
        assert_eq!(j["queue"][0], "bottleneck.down");
        assert_eq!(j["subqueue"][0], serde_json::Value::Null);
        assert_eq!(j["sojourn_us"][0], 1250.0);
        assert_eq!(j["pkt_id"][0], 42);
        assert_eq!(j["ecn"][0], "ce", "the ECN field as the queue left it");
    }
}
