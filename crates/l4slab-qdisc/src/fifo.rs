//! `pfifo`/`bfifo` tail drop and `pfifo_head_drop`, as in Linux
//! `net/sched/sch_fifo.c`.
//!
//! The limit is in packets or bytes. A limit given in *time* in a scenario is
//! converted to bytes at the link's configured rate by `l4slab-scenario` (the
//! same thing a person does when they size a buffer "for 100 ms at 20 Mbit/s").
//! Deviation from Linux: none known; `bfifo` in Linux counts `skb->len`, which
//! is our `Packet::len` (the IP packet).

use serde::{Deserialize, Serialize};

use crate::registry::{BufferLimit, QdiscKind};
use crate::{Backlog, PacketFifo, Qdisc, QdiscCtx, QdiscStats};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{DropReason, Packet, Time};

/// `head_drop`: drop the oldest packet instead of the arrival.
pub const HEAD_DROP: Param = Param::new(
    "head_drop",
    Kind::Flag,
    ParamValue::Flag(false),
    "tail drop, as Linux `pfifo`/`bfifo`",
    "a full queue drops its oldest packet instead of the arrival",
)
.linux_name("pfifo_head_drop");

/// The parameters a scenario can set (`qdisc = { kind = "fifo", ... }`);
/// the limit is the direction's `buffer`.
pub const PARAMS: &[Param] = &[HEAD_DROP];

/// `pfifo`/`bfifo` (tail drop) or `pfifo_head_drop`: the limit is the
/// direction's buffer, in packets (`pfifo`) or bytes (`bfifo`; a buffer
/// written as a time is the bytes it resolved to).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FifoConfig {
    /// Linux default for `pfifo` is the device `txqueuelen`, 1000 packets.
    pub limit: BufferLimit,
    /// `false`: tail drop (`pfifo`/`bfifo`); `true`: `pfifo_head_drop`.
    pub head_drop: bool,
}

l4slab_core::param_config!(FifoConfig {
    head_drop = HEAD_DROP,
} + {
    limit: BufferLimit::Packets(1000), // Linux txqueuelen default
});

impl QdiscKind for FifoConfig {
    const PARAMS: &'static [Param] = PARAMS;

    /// The buffer is the limit as written: packets, or bytes.
    fn for_buffer(buffer: BufferLimit) -> Self {
        FifoConfig {
            limit: buffer,
            ..FifoConfig::default()
        }
    }

    fn build(&self) -> Box<dyn Qdisc> {
        Box::new(Fifo::new(self.clone()))
    }
}

#[derive(Debug)]
pub struct Fifo {
    cfg: FifoConfig,
    queue: PacketFifo,
    stats: QdiscStats,
}

impl Fifo {
    pub fn new(cfg: FifoConfig) -> Self {
        if let BufferLimit::Packets(n) = cfg.limit {
            assert!(n > 0, "fifo limit must be positive");
        }
        Fifo {
            queue: PacketFifo::with_capacity(match cfg.limit {
                BufferLimit::Packets(n) => u64::from(n),
                BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => b / 1500,
            }),
            cfg,
            stats: QdiscStats::default(),
        }
    }

    /// Would admitting `pkt` exceed the limit?
    fn over_limit(&self, pkt: &Packet) -> bool {
        match self.cfg.limit {
            // sch_fifo.c pfifo_enqueue: `if (likely(sch->q.qlen < READ_ONCE(sch->limit)))`
            BufferLimit::Packets(n) => self.queue.len() >= n,
            // sch_fifo.c bfifo_enqueue: `if (likely(sch->qstats.backlog + qdisc_pkt_len(skb) <= limit))`
            BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => {
                self.queue.bytes() + u64::from(pkt.len) > b
            }
        }
    }

    fn pop(&mut self) -> Option<Packet> {
        let p = self.queue.pop()?;
        self.stats.dequeued += 1;
        Some(p)
    }
}

impl Qdisc for Fifo {
    fn kind(&self) -> &'static str {
        if self.cfg.head_drop {
            "pfifo_head_drop"
        } else {
            "fifo"
        }
    }

    fn enqueue(&mut self, now: Time, pkt: Packet, ctx: &mut QdiscCtx<'_>) {
        self.stats.offered += 1;
        if self.over_limit(&pkt) {
            if !self.cfg.head_drop {
                ctx.refused(now, pkt, DropReason::Overlimit, &mut self.stats);
                return;
            }
            // sch_fifo.c pfifo_tail_enqueue: drop the head until the arrival fits.
            while self.over_limit(&pkt) {
                let Some(head) = self.pop() else {
                    // A single packet larger than a byte limit: refuse it.
                    ctx.refused(now, pkt, DropReason::Overlimit, &mut self.stats);
                    return;
                };
                ctx.discarded(now, head, DropReason::HeadDrop, &mut self.stats);
            }
        }
        let pkt = self.queue.push(now, pkt);
        ctx.admitted(now, &pkt, 0, &mut self.stats);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<'_>) -> Option<Packet> {
        let pkt = self.pop()?;
        ctx.sent(now, &pkt, 0, &mut self.stats);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        self.queue.backlog()
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Harness;

    #[test]
    fn tail_drops_exactly_at_the_packet_limit() {
        let mut h = Harness::new(Fifo::new(FifoConfig {
            limit: BufferLimit::Packets(3),
            head_drop: false,
        }));
        for i in 0..5 {
            h.offer(i, 1500);
        }
        // Packets 0..3 admitted; 3 and 4 tail-dropped.
        assert_eq!(
            h.q.backlog(),
            Backlog {
                packets: 3,
                bytes: 4500
            }
        );
        assert_eq!(h.dropped_ids(), [3, 4]);
        assert_eq!(h.drain_ids(), [0, 1, 2]);
        h.check_accounting();
    }

    #[test]
    fn byte_limit_admits_while_it_fits() {
        let mut h = Harness::new(Fifo::new(FifoConfig {
            limit: BufferLimit::Bytes(3000),
            head_drop: false,
        }));
        h.offer(0, 1500);
        h.offer(1, 1000);
        h.offer(2, 600); // 3100 > 3000: dropped
        h.offer(3, 500); // 3000 <= 3000: admitted
        assert_eq!(h.dropped_ids(), [2]);
        assert_eq!(h.drain_ids(), [0, 1, 3]);
        h.check_accounting();
    }

    #[test]
    fn head_drop_discards_the_oldest() {
        let mut h = Harness::new(Fifo::new(FifoConfig {
            limit: BufferLimit::Packets(2),
            head_drop: true,
        }));
        for i in 0..4 {
            h.offer(i, 1500);
        }
        assert_eq!(h.dropped_ids(), [0, 1]);
        assert_eq!(h.drain_ids(), [2, 3]);
        assert_eq!(h.drops(DropReason::HeadDrop), 2);
        h.check_accounting();
    }
}
