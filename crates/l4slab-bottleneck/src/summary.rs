//! The queue summary (`queues` in `summary.json`), in both backends: one
//! code, one layout (docs/results.md).

use serde_json::{json, Map, Value};

use l4slab_core::stats::round6;
use l4slab_core::{DropReason, Dur, MarkReason};
use l4slab_qdisc::QdiscStats;

use l4slab_link::LinkStats;

use super::{Bottleneck, Direction};

impl Bottleneck {
    /// Per queue, by name: what happened in the measurement window, of
    /// length `window` (the whole run without
    /// [`Bottleneck::start_window`]). `flows` names the flow ids the
    /// per-flow sojourn is reported for.
    pub fn queues_json(&self, window: Dur, flows: &[&str]) -> Value {
        let mut queues = Map::new();
        for d in &self.dirs {
            queues.insert(d.name.to_string(), d.summary(window, flows));
        }
        Value::Object(queues)
    }

    /// The accounting identities of every queue, over the changes of the
    /// counters since the window's start (the whole run without one); panics
    /// naming the first that fails (a bug in a qdisc, the link or a
    /// backend).
    pub fn check_accounting(&self) {
        for d in &self.dirs {
            d.check_accounting(&d.name);
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
    /// The queue's counters since the window's start: `(qdisc, link)`.
    fn window_stats(&self) -> (QdiscStats, LinkStats) {
        let (s, w) = (self.link.qdisc().stats(), &self.window.qdisc);
        let qdisc = QdiscStats {
            offered: s.offered - w.offered,
            enqueued: s.enqueued - w.enqueued,
            dropped_at_enqueue: s.dropped_at_enqueue - w.dropped_at_enqueue,
            dequeued: s.dequeued - w.dequeued,
            sent: s.sent - w.sent,
            dropped_after_dequeue: s.dropped_after_dequeue - w.dropped_after_dequeue,
            sent_bytes: s.sent_bytes - w.sent_bytes,
        };
        let (l, w) = (self.link.stats(), &self.window.link);
        let link = LinkStats {
            offered_packets: l.offered_packets - w.offered_packets,
            offered_bytes: l.offered_bytes - w.offered_bytes,
            tx_packets: l.tx_packets - w.tx_packets,
            tx_bytes: l.tx_bytes - w.tx_bytes,
            lost_packets: l.lost_packets - w.lost_packets,
            lost_bytes: l.lost_bytes - w.lost_bytes,
            loss_marked_packets: l.loss_marked_packets - w.loss_marked_packets,
            loss_marked_bytes: l.loss_marked_bytes - w.loss_marked_bytes,
            delivered_packets: l.delivered_packets - w.delivered_packets,
            delivered_bytes: l.delivered_bytes - w.delivered_bytes,
            busy_time: l.busy_time.saturating_sub(self.window.busy),
            ecn_rewritten_packets: l.ecn_rewritten_packets - w.ecn_rewritten_packets,
            ecn_dropped_packets: l.ecn_dropped_packets - w.ecn_dropped_packets,
            ecn_dropped_bytes: l.ecn_dropped_bytes - w.ecn_dropped_bytes,
            retry_dropped_packets: l.retry_dropped_packets - w.retry_dropped_packets,
            retry_dropped_bytes: l.retry_dropped_bytes - w.retry_dropped_bytes,
        };
        (qdisc, link)
    }

    fn summary(&self, window: Dur, flows: &[&str]) -> Value {
        let link = &self.link;
        let qdisc = link.qdisc();
        // Window counts; `ecn_rewrite` and `xstats_final` stay whole-run.
        let (s, lw) = self.window_stats();
        let ls = link.stats();
        let rec = &self.rec;
        let mut q = json!({
            "kind": qdisc.kind(),
            "rate_bps": link.rate_model().nominal_rate().map(|r| r.as_bps()),
            "sojourn_ms": rec.sojourn.summary_ms(),
            "drops": by_reason(&rec.drops, DropReason::ALL.iter().map(|r| r.name())),
            "marks": by_reason(&rec.marks, MarkReason::ALL.iter().map(|r| r.name())),
            "utilization": round6(lw.busy_time.as_secs_f64() / window.as_secs_f64().max(1e-9)),
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
        let by_flow: Map<String, Value> = flows
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                rec.per_flow
                    .get(i)?
                    .sojourn
                    .as_ref()
                    .filter(|st| st.count() > 0)
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
        let (s, ls) = self.window_stats();
        let backlog = u64::from(q.backlog().packets);
        assert_eq!(
            s.offered,
            s.enqueued + s.dropped_at_enqueue,
            "{name}: {s:?} since the window's start"
        );
        assert_eq!(
            s.dequeued,
            s.sent + s.dropped_after_dequeue,
            "{name}: {s:?} since the window's start"
        );
        assert_eq!(
            self.window.backlog + s.enqueued,
            s.dequeued + backlog,
            "{name}: {s:?} since the window's start, backlog {} then, {backlog} now",
            self.window.backlog
        );
        // Drops are counted where they pass the context: the qdisc's share is
        // what its identities say it dropped; the link's are its wire losses
        // and the ECN path's drops.
        let rec = &self.rec;
        let at = |r: DropReason| rec.drops[r.index()];
        let link_drops =
            at(DropReason::LinkLoss) + at(DropReason::EcnBlackhole) + at(DropReason::WifiRetries);
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
            at(DropReason::WifiRetries),
            ls.retry_dropped_packets,
            "{name}: drops at the Wi-Fi retry limit"
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
