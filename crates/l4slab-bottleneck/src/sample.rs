//! The queue series (`queue/<name>` in `series.parquet`), sampled every
//! `sample_interval` by either backend: one code, one set of names.
//!
//! Per sample and direction: `backlog_pkts`, `backlog_bytes`, `sojourn_ms`
//! and `sojourn_max_ms` (mean and max over the interval, when a packet left),
//! `sojourn_ms.<sub-queue>` (DualPI2: `.c`, `.l`), `drops` and `marks` (in the
//! interval, every drop and mark through the queue's context: the qdisc's,
//! the wire's, the ECN path's), `utilization` (busy time in the interval /
//! the interval), then the qdisc's own statistics (`xstats`).

use l4slab_core::{Dur, Name, SeriesStore, Time};

use super::{Bottleneck, Direction};
use l4slab_link::Link;

/// Interned names of one queue's series.
#[derive(Debug)]
struct Keys {
    series: Name,
    backlog_pkts: Name,
    backlog_bytes: Name,
    sojourn_ms: Name,
    sojourn_max_ms: Name,
    subs: Vec<Name>,
    drops: Name,
    marks: Name,
    utilization: Name,
    xstats: Vec<Name>,
}

/// What a direction remembers between samples.
#[derive(Debug)]
pub struct QueueSeries {
    keys: Option<Keys>,
    subqueues: &'static [&'static str],
    last_busy: Dur,
}

impl QueueSeries {
    pub(super) fn new(link: &Link) -> Self {
        QueueSeries {
            keys: None,
            subqueues: link.qdisc().subqueue_names(),
            last_busy: Dur::ZERO,
        }
    }

    fn keys(&mut self, name: &str, store: &mut SeriesStore) -> &mut Keys {
        let subqueues = self.subqueues;
        self.keys.get_or_insert_with(|| Keys {
            series: store.intern(&format!("queue/{name}")),
            backlog_pkts: store.intern("backlog_pkts"),
            backlog_bytes: store.intern("backlog_bytes"),
            sojourn_ms: store.intern("sojourn_ms"),
            sojourn_max_ms: store.intern("sojourn_max_ms"),
            subs: subqueues
                .iter()
                .map(|n| store.intern(&format!("sojourn_ms.{n}")))
                .collect(),
            drops: store.intern("drops"),
            marks: store.intern("marks"),
            utilization: store.intern("utilization"),
            xstats: Vec::new(),
        })
    }
}

impl Bottleneck {
    /// Record one sample of every queue at `t` (written as `t_s`) for the
    /// interval `iv` before it. Call it after [`Bottleneck::advance`] to `t`.
    pub fn sample(&mut self, t: Time, t_s: f64, iv: Dur, store: &mut SeriesStore) {
        for d in &mut self.dirs {
            d.sample(t, t_s, iv, store);
        }
    }
}

impl Direction {
    fn sample(&mut self, t: Time, t_s: f64, iv: Dur, store: &mut SeriesStore) {
        let qdisc = self.link.qdisc();
        let b = qdisc.backlog();
        let busy = self.link.busy_time_at(t);
        let util = busy.saturating_sub(self.series.last_busy).as_secs_f64() / iv.as_secs_f64();
        self.series.last_busy = busy;
        let (drops, marks) = self.rec.take_interval_counts();
        let k = self.series.keys(&self.name, store);
        let s = k.series;
        store.push(t_s, s, k.backlog_pkts, f64::from(b.packets));
        store.push(t_s, s, k.backlog_bytes, b.bytes as f64);
        if let Some((mean, max)) = self.rec.sojourn.take_interval() {
            store.push(t_s, s, k.sojourn_ms, mean);
            store.push(t_s, s, k.sojourn_max_ms, max);
        }
        for (st, &key) in self.rec.sub.iter_mut().zip(&k.subs) {
            if let Some((mean, _)) = st.take_interval() {
                store.push(t_s, s, key, mean);
            }
        }
        store.push(t_s, s, k.drops, drops as f64);
        store.push(t_s, s, k.marks, marks as f64);
        store.push(t_s, s, k.utilization, util);
        for (i, (name, v)) in qdisc.xstats().into_iter().enumerate() {
            if i == k.xstats.len() {
                k.xstats.push(store.intern(name));
            }
            store.push(t_s, s, k.xstats[i], v);
        }
    }
}
