//! Wi-Fi cells in the runtime: a [`Cell`]'s queues are queues of the
//! runtime like any other (qdisc, recorder, series, summary, queue events,
//! capture points, accounting), made with [`Link::for_air`]: the cell takes
//! their packets when it wins the medium and hands the survivors to their
//! delay lines (`delay` after the air: the host's access delay).
//!
//! The clocks' protocol grows by one deadline per cell: besides each
//! queue's [`Bottleneck::next_deadline`] (its qdisc timer, its delay line),
//! [`Bottleneck::cell_deadline`] says when the medium next does something;
//! [`Bottleneck::run_cell`] runs it to `now`. [`Bottleneck::advance`] and
//! [`Bottleneck::enqueue`] of a cell's queue run the cell first and tell
//! it of the arrival, so a clock that only knows queues still gets every
//! packet's fate right; after any of these calls, [`Bottleneck::take_touched`]
//! lists the queues whose delay line, drops or events the cell changed
//! (the one called among them, possibly), for the clock to re-arm and drain.

use l4slab_core::{Packet, SimRng, Time};

use super::{Bottleneck, Direction};
use l4slab_link::Link;
use l4slab_wifi::cell::{AirQueues, Cell};

/// A cell and its queues' indices in the runtime, by the cell's queue order.
pub(super) struct CellRt {
    pub(super) cell: Cell,
    pub(super) queues: Vec<usize>,
}

/// The cell's view of its queues.
struct Air<'a> {
    dirs: &'a mut [Direction],
    map: &'a [usize],
    touched: &'a mut Vec<usize>,
}

impl Air<'_> {
    fn touch(&mut self, dir: usize) {
        if !self.dirs[dir].touched {
            self.dirs[dir].touched = true;
            self.touched.push(dir);
        }
    }
}

impl AirQueues for Air<'_> {
    fn backlogged(&self, q: usize) -> bool {
        self.dirs[self.map[q]].link.qdisc().backlog().packets > 0
    }

    fn dequeue(&mut self, q: usize, now: Time) -> Option<Packet> {
        let dir = self.map[q];
        let mut out = None;
        self.dirs[dir].with_ctx(dir, now, |link, ctx| out = link.take_for_air(now, ctx));
        self.touch(dir);
        out
    }

    fn delivered(&mut self, q: usize, at: Time, pkt: Packet) {
        let dir = self.map[q];
        let d = &mut self.dirs[dir];
        if d.link.is_down(at) {
            // Its station is out of the cell (`Link::with_outages`).
            d.with_ctx(dir, at, |link, ctx| link.air_lost(at, pkt, ctx));
        } else {
            let (t, pkt) = d.link.air_delivered(at, pkt);
            d.line.push_until(t, pkt);
        }
        self.touch(dir);
    }

    fn dropped(&mut self, q: usize, at: Time, pkt: Packet) {
        let dir = self.map[q];
        self.dirs[dir].with_ctx(dir, at, |link, ctx| link.air_dropped(at, pkt, ctx));
        self.touch(dir);
    }

    fn airtime(&mut self, q: usize, d: l4slab_core::Dur) {
        self.dirs[self.map[q]].link.add_airtime(d);
    }
}

impl Bottleneck {
    /// Add a Wi-Fi cell fed by `queues` (name, a [`Link::for_air`] with the
    /// queue's qdisc, the qdisc's random stream), in the order of the
    /// cell's [`crate::wifi::config::CellConfig::queues`]. Returns the cell's
    /// index; its queues' runtime indices are [`Bottleneck::cell_queues`].
    pub fn add_cell(&mut self, cell: Cell, queues: Vec<(String, Link, SimRng)>) -> usize {
        assert_eq!(
            cell.config().queues.len(),
            queues.len(),
            "one queue per cell queue"
        );
        let c = self.cells.len();
        let idx: Vec<usize> = queues
            .into_iter()
            .enumerate()
            .map(|(i, (name, link, rng))| {
                assert!(
                    link.is_air(),
                    "{name}: a cell's queue is made with Link::for_air"
                );
                let q = self.add_queue(&name, link, rng);
                self.cell_of.resize(q + 1, None);
                self.cell_of[q] = Some((c, i));
                q
            })
            .collect();
        self.cells.push(CellRt { cell, queues: idx });
        c
    }

    pub fn cells(&self) -> usize {
        self.cells.len()
    }

    pub fn cell(&self, c: usize) -> &Cell {
        &self.cells[c].cell
    }

    /// The runtime indices of cell `c`'s queues.
    pub fn cell_queues(&self, c: usize) -> &[usize] {
        &self.cells[c].queues
    }

    /// The cell a queue feeds, if any.
    pub fn cell_of(&self, dir: usize) -> Option<usize> {
        self.cell_of.get(dir).copied().flatten().map(|(c, _)| c)
    }

    /// When cell `c`'s medium next needs [`Bottleneck::run_cell`].
    pub fn cell_deadline(&self, c: usize) -> Option<Time> {
        self.cells[c].cell.next_event()
    }

    /// Run cell `c` up to `now`: its medium's events and its queues' qdisc
    /// timers (a PI update, say), each at its own time, in time order (a
    /// timer first on a tie), so a dequeue sees every update due before it
    /// whichever queue the clock advanced.
    pub fn run_cell(&mut self, c: usize, now: Time) {
        loop {
            let medium = self.cells[c].cell.next_event().filter(|&t| t <= now);
            let timer = self.cells[c]
                .queues
                .iter()
                .filter_map(|&q| self.dirs[q].timer.map(|t| (t.max(self.dirs[q].clock), q)))
                .filter(|&(t, _)| t <= now)
                .min();
            match (medium, timer) {
                (m, Some((t, q))) if m.is_none_or(|m| t <= m) => {
                    Self::run_timer(&mut self.dirs[q], q, t);
                }
                (Some(m), _) => self.medium_to(c, m),
                (None, _) => break,
            }
        }
        self.medium_to(c, now);
    }

    /// Cell `c`'s medium events due by `t` (no qdisc timer is due before).
    fn medium_to(&mut self, c: usize, t: Time) {
        let rt = &mut self.cells[c];
        let mut air = Air {
            dirs: &mut self.dirs,
            map: &rt.queues,
            touched: &mut self.touched,
        };
        rt.cell.advance(t, &mut air);
    }

    /// A packet entered cell queue `dir` at `now`: the cell may contend.
    pub(super) fn cell_arrival(&mut self, dir: usize, now: Time) {
        let Some((c, q)) = self.cell_of.get(dir).copied().flatten() else {
            return;
        };
        let rt = &mut self.cells[c];
        let air = Air {
            dirs: &mut self.dirs,
            map: &rt.queues,
            touched: &mut self.touched,
        };
        rt.cell.on_arrival(q, now, &air);
    }

    /// `summary.json`'s `wifi` object (the first cell's: a scenario has at
    /// most one), over the measurement window of length `window`.
    pub fn wifi_json(&self, window: l4slab_core::Dur) -> Option<serde_json::Value> {
        let rt = self.cells.first()?;
        let cfg = rt.cell.config();
        let names: Vec<&str> = cfg.stations.iter().map(|s| s.name.as_str()).collect();
        Some(rt.cell.stats().summary(&names, &cfg.links, window))
    }

    /// The queues a cell touched since the last call (delay line, drops,
    /// queue events), each once, appended to `out`.
    pub fn take_touched(&mut self, out: &mut Vec<usize>) {
        for &d in &self.touched {
            self.dirs[d].touched = false;
        }
        out.append(&mut self.touched);
    }
}
