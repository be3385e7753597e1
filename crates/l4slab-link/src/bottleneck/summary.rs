//! The queue summary (`queues` in `summary.json`), in both backends: one
//! code, one layout (docs/results.md).

use serde_json::{json, Map, Value};

use l4slab_core::stats::round6;
use l4slab_core::{DropReason, Dur, MarkReason};

use super::{Bottleneck, Direction, QUEUE_NAMES};

impl Bottleneck {
    /// Per queue, by name: what happened over a run of length `end`.
    /// `flows` names the flow ids the per-flow sojourn is reported for.
    pub fn queues_json(&self, end: Dur, flows: &[&str]) -> Value {
        let mut queues = Map::new();
        for (dir, d) in self.dirs.iter().enumerate() {
            queues.insert(QUEUE_NAMES[dir].to_owned(), d.summary(end, flows));
        }
        Value::Object(queues)
    }

    /// The accounting identities of both queues; panics naming the first
    /// that fails (a bug in a qdisc, the link or a backend).
    pub fn check_accounting(&self) {
        for (dir, d) in self.dirs.iter().enumerate() {
            d.check_accounting(QUEUE_NAMES[dir]);
        }
    }
}

/// `{reason: count, ..., "total": sum}`.
fn by_reason(counts: &[u64], names: impl Iterator<Item = &'static str>) -> Value {
    let mut m: Map<String, Value> = names
        .zip(counts)
        .map(|(n, c)| (n.to_owned(), json!(c)))
        .collect();
    m.insert("total".to_owned(), json!(counts.iter().sum::<u64>()));
    Value::Object(m)
}

impl Direction {
    fn summary(&self, end: Dur, flows: &[&str]) -> Value {
        let link = &self.link;
        let qdisc = link.qdisc();
        let s = qdisc.stats();
        let ls = link.stats();
        let rec = &self.rec;
        let mut q = json!({
            "kind": qdisc.kind(),
            "rate_bps": link.rate_model().nominal_rate().map(|r| r.as_bps()),
            "sojourn_ms": rec.sojourn.summary_ms(),
            "drops": by_reason(&rec.drops, DropReason::ALL.iter().map(|r| r.name())),
            "marks": by_reason(&rec.marks, MarkReason::ALL.iter().map(|r| r.name())),
            "utilization": round6(ls.busy_time.as_secs_f64() / end.as_secs_f64().max(1e-9)),
            "offered_packets": s.offered,
            "sent_packets": s.sent,
            "sent_bytes": s.sent_bytes,
            "ecn_rewrite": {
                "kind": link.ecn_rewrite().name(),
                "rewritten_packets": ls.ecn_rewritten_packets,
                "dropped_packets": ls.ecn_dropped_packets,
            },
            "xstats_final": qdisc
                .xstats()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), json!(round6(v))))
                .collect::<Map<_, _>>(),
        });
        let subs: Map<String, Value> = qdisc
            .subqueue_names()
            .iter()
            .zip(&rec.sub)
            .map(|(n, st)| ((*n).to_owned(), json!({ "sojourn_ms": st.summary_ms() })))
            .collect();
        if !subs.is_empty() {
            q["subqueues"] = Value::Object(subs);
        }
        // Per flow sojourn in this queue: who waited how long.
        let by_flow: Map<String, Value> = rec
            .per_flow
            .iter()
            .zip(flows)
            .filter_map(|(f, name)| {
                f.sojourn
                    .as_ref()
                    .map(|st| ((*name).to_owned(), st.summary_ms()))
            })
            .collect();
        q["sojourn_ms_by_flow"] = Value::Object(by_flow);
        q
    }

    /// DESIGN §3: `offered = enqueued + dropped_at_enqueue`, `enqueued =
    /// dequeued + backlog`, `dequeued = sent + dropped_after_dequeue`; and the
    /// drops counted at the context are exactly those the identities and the
    /// link's counters account for, and so are the link's CE marks.
    fn check_accounting(&self, name: &str) {
        let q = self.link.qdisc();
        let s = q.stats();
        let ls = self.link.stats();
        assert_eq!(
            s.offered,
            s.enqueued + s.dropped_at_enqueue,
            "{name}: {s:?}"
        );
        assert_eq!(
            s.dequeued,
            s.sent + s.dropped_after_dequeue,
            "{name}: {s:?}"
        );
        assert_eq!(
            s.enqueued,
            s.dequeued + u64::from(q.backlog().packets),
            "{name}: {s:?}"
        );
        // Drops are counted where they pass the context: the qdisc's share is
        // what its identities say it dropped; the link's are its wire losses
        // and the ECN path's drops.
        let rec = &self.rec;
        let at = |r: DropReason| rec.drops[r.index()];
        let link_drops = at(DropReason::LinkLoss) + at(DropReason::EcnBlackhole);
        assert_eq!(
            rec.total_drops() - link_drops,
            s.dropped_at_enqueue + s.dropped_after_dequeue,
            "{name}: qdisc drops through the context vs its identities: {s:?}"
        );
        assert_eq!(
            at(DropReason::LinkLoss),
            ls.lost_packets,
            "{name}: wire losses"
        );
        assert_eq!(
            at(DropReason::EcnBlackhole),
            ls.ecn_dropped_packets,
            "{name}: ECN path drops"
        );
        assert_eq!(
            rec.marks[MarkReason::LinkMark.index()],
            ls.loss_marked_packets,
            "{name}: marks by the link's loss model (loss ... ecn)"
        );
        assert_eq!(
            ls.offered_packets,
            s.offered + ls.ecn_dropped_packets,
            "{name}: offered to the link"
        );
    }
}
