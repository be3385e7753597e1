//! Resolved scenario parts -> the objects that run them: the one dispatch
//! point from a [`QdiscSpec`] / [`LossSpec`] / [`LinkSpec`] to a discipline,
//! a loss model and a [`Link`].
//!
//! Both backends build their bottleneck (and the hosts' access links and
//! the Wi-Fi cell, [`network`]) here (the simulator in
//! `l4slab-sim/src/setup.rs`, the emulator in `l4slab-emu`), so a scenario
//! runs the *same* queue, rate and loss objects, seeded from the same
//! streams, whichever backend carries the packets.

use l4slab_core::SimRng;
use l4slab_link::{
    Bernoulli, ConstantRate, GilbertElliott, Link, LossModel, NoLoss, RateModel, StepRate,
    TraceRate,
};
use l4slab_qdisc::Qdisc;

use l4slab_bottleneck::{DOWN, QUEUE_NAMES, UP};
use l4slab_wifi::cell::Cell;
use l4slab_wifi::config::{AirDir, CellConfig, QueueSpec, StationConfig};
use l4slab_wifi::edca::Ac;

use crate::model::{Bottleneck, Flow, Host, LinkSpec, LossSpec, QdiscSpec, Scenario};

/// The discipline a [`QdiscSpec`] names ([`QdiscSpec::build`], the
/// registry's one dispatch).
pub fn qdisc(spec: &QdiscSpec) -> Box<dyn Qdisc> {
    spec.build()
}

/// The loss model a [`LossSpec`] names (probabilities were validated when
/// the scenario was resolved).
pub fn loss(spec: &LossSpec) -> Box<dyn LossModel> {
    match *spec {
        LossSpec::None => Box::new(NoLoss),
        LossSpec::Bernoulli { p, .. } => Box::new(Bernoulli::new(p).expect("validated")),
        LossSpec::GilbertElliott { p, r, k, h, .. } => {
            Box::new(GilbertElliott::new(p, r, k, h).expect("validated"))
        }
    }
}

/// The random stream of queue `name`'s qdisc (`link/<name>/qdisc`).
pub fn qdisc_rng(seed: u64, name: &str) -> SimRng {
    SimRng::derive(seed, &format!("link/{name}/qdisc"))
}

/// The rate model: the trace when `rate = { trace = ... }`, else constant.
pub fn rate(spec: &LinkSpec) -> Box<dyn RateModel> {
    match &spec.rate_trace {
        Some(t) => Box::new(TraceRate::new(t.trace.clone())),
        None => Box::new(ConstantRate(spec.rate)),
    }
}

/// The link of one bottleneck direction named `name` (e.g. `bottleneck.down`),
/// with its own loss stream `link/<name>/loss`, netem's `ecn` flag for that
/// loss, and the path's ECN rewrite.
pub fn link(spec: &LinkSpec, name: &str, seed: u64) -> Link {
    link_over(spec, rate(spec), name, seed)
}

/// As [`link`], serializing at `rate` (a path's rate changes wrap the
/// spec's, [`l4slab_link::StepRate`]).
fn link_over(spec: &LinkSpec, rate: Box<dyn RateModel>, name: &str, seed: u64) -> Link {
    Link::new(
        qdisc(&spec.qdisc),
        rate,
        loss(&spec.loss),
        SimRng::derive(seed, &format!("link/{name}/loss")),
        spec.delay,
    )
    .with_loss_ecn(spec.loss.ecn())
    .with_ecn_rewrite(spec.ecn_rewrite)
}

/// The bottleneck runtime of a scenario: both directions' links (as [`link`])
/// with their qdisc streams (as [`qdisc_rng`]), per-flow statistics for
/// `flows` flow ids. Both backends build theirs here.
pub fn bottleneck(b: &Bottleneck, seed: u64, flows: usize) -> l4slab_bottleneck::Bottleneck {
    let mk = |spec: &LinkSpec, dir: usize| {
        let name = QUEUE_NAMES[dir];
        (link(spec, name, seed), qdisc_rng(seed, name))
    };
    l4slab_bottleneck::Bottleneck::new([mk(&b.down, DOWN), mk(&b.up, UP)], flows)
}

/// The queue name of host `host`'s access link in direction `dir`
/// (`access.laptop.up`).
pub fn access_queue_name(host: &str, dir: usize) -> String {
    let d = if dir == DOWN { "down" } else { "up" };
    format!("access.{host}.{d}")
}

/// The queue name of multi-homed host `host`'s path `path` in direction
/// `dir` (`access.phone.wifi.up`).
pub fn path_queue_name(host: &str, path: &str, dir: usize) -> String {
    let d = if dir == DOWN { "down" } else { "up" };
    format!("access.{host}.{path}.{d}")
}

/// The queue name of station `host`'s queue in the Wi-Fi cell for bottleneck
/// direction `dir` and access category `ac`: the AP's queue for it
/// (`DOWN`, `wifi.laptop.down.vi`) or its own (`UP`, `wifi.laptop.up.vi`).
pub fn cell_queue_name(host: &str, dir: usize, ac: Ac) -> String {
    let d = if dir == DOWN { "down" } else { "up" };
    format!("wifi.{host}.{d}.{}", ac.name())
}

/// The bottleneck direction a cell queue carries: the AP's queues the
/// downlink, the stations' the uplink.
fn air_dir(dir: AirDir) -> usize {
    match dir {
        AirDir::ApToStation => DOWN,
        AirDir::StationToAp => UP,
    }
}

/// The Wi-Fi cell of a scenario (`None` without `[wifi]`): its links, the
/// AP's EDCA, one station per client host, and its queues: per station (in
/// host order), per access category at least one of its flows uses (`vo`,
/// `vi`, `be`, `bk`), the AP's queue for it then its own. A station with
/// no flows has no queues.
pub fn cell_config(scn: &Scenario) -> Option<CellConfig> {
    let wifi = scn.wifi.as_ref()?;
    let mut queues = Vec::new();
    for (station, s) in wifi.stations.iter().enumerate() {
        for ac in Ac::ALL {
            if scn
                .flows
                .iter()
                .any(|f| f.client == s.host && f.wifi_ac == ac)
            {
                for dir in [AirDir::ApToStation, AirDir::StationToAp] {
                    queues.push(QueueSpec { station, ac, dir });
                }
            }
        }
    }
    Some(CellConfig {
        links: wifi.links.clone(),
        ap_edca: wifi.ap_edca,
        retry_limit: wifi.retry_limit,
        l4s_ppdu_max: wifi.ap_l4s_ppdu_max,
        stations: wifi
            .stations
            .iter()
            .map(|s| StationConfig {
                name: scn.hosts[s.host].name.clone(),
                edca: s.edca,
                links: s.links.clone(),
                scan: s.scan,
                standard: s.standard,
            })
            .collect(),
        queues,
    })
}

/// Where the hosts' access links and the Wi-Fi cell's queues run among the
/// runtime's queues (the `dir` of [`l4slab_bottleneck::Bottleneck`]'s methods):
/// after the bottleneck's two, the access links host by host in
/// [`Scenario::hosts`] order, down before up; then the cell's queues in
/// [`cell_config`]'s order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessQueues {
    /// Per host, per direction (`[DOWN, UP]`): its access link's queue.
    pub hosts: Vec<[Option<usize>; 2]>,
    /// Per host, per path of a multi-homed host (`Host::paths`), per
    /// direction: the path's link's queue (numbered after the host's own);
    /// `None` for the path through the Wi-Fi cell (its queues are `cell`'s).
    pub paths: Vec<Vec<Option<[usize; 2]>>>,
    /// Per host, per direction, per access category ([`Ac::index`]): its
    /// queue in the Wi-Fi cell (the AP's for it down, its own up).
    cell: Vec<[[Option<usize>; 4]; 2]>,
    /// Per queue: the direction of the bottleneck it carries.
    dirs: Vec<usize>,
}

impl AccessQueues {
    /// The access links of `hosts` (no Wi-Fi cell: [`AccessQueues::of`]).
    pub fn new(hosts: &[Host]) -> Self {
        let mut dirs = vec![DOWN, UP];
        let mut paths = Vec::with_capacity(hosts.len());
        let hosts = hosts
            .iter()
            .map(|h| {
                let own = [DOWN, UP].map(|dir| {
                    h.access.dir(dir).map(|_| {
                        dirs.push(dir);
                        dirs.len() - 1
                    })
                });
                let ways = h.paths.iter().map(|p| {
                    (!p.wifi).then(|| {
                        [DOWN, UP].map(|dir| {
                            dirs.push(dir);
                            dirs.len() - 1
                        })
                    })
                });
                paths.push(ways.collect());
                own
            })
            .collect();
        AccessQueues {
            hosts,
            paths,
            cell: Vec::new(),
            dirs,
        }
    }

    /// Every queue of `scn` after the bottleneck's: the hosts' access links
    /// and the Wi-Fi cell's queues.
    pub fn of(scn: &Scenario) -> Self {
        let mut a = Self::new(&scn.hosts);
        if let (Some(wifi), Some(cfg)) = (&scn.wifi, cell_config(scn)) {
            a.cell = vec![[[None; 4]; 2]; scn.hosts.len()];
            for q in &cfg.queues {
                let dir = air_dir(q.dir);
                a.dirs.push(dir);
                a.cell[wifi.stations[q.station].host][dir][q.ac.index()] = Some(a.dirs.len() - 1);
            }
        }
        a
    }

    /// No host has an access link and there is no Wi-Fi cell queue.
    pub fn is_empty(&self) -> bool {
        self.dirs.len() == 2
    }

    /// The direction of the bottleneck queue `q` carries (`DOWN`, `UP`).
    pub fn dir_of(&self, q: usize) -> usize {
        self.dirs[q]
    }

    /// Station `host`'s queue in the Wi-Fi cell for direction `dir` and
    /// access category `ac`, if it has one (its flows use `ac`).
    pub fn cell_queue(&self, host: usize, dir: usize, ac: Ac) -> Option<usize> {
        self.cell.get(host).and_then(|c| c[dir][ac.index()])
    }

    /// The access queues a packet of `flow` going in direction `dir` passes:
    /// `[before the bottleneck, after it]` (the sending host's, the
    /// receiving host's). A station's is its cell queue for the flow's
    /// access category (`wifi_ac`).
    pub fn path(&self, flow: &Flow, dir: usize) -> [Option<usize>; 2] {
        self.path_via(flow, dir, 0)
    }

    /// As [`AccessQueues::path`], with a multi-homed client's packets on
    /// its path `way` (`Host::paths` order; 0 is the preferred one).
    pub fn path_via(&self, flow: &Flow, dir: usize, way: usize) -> [Option<usize>; 2] {
        let (from, to) = if dir == DOWN {
            (flow.server, flow.client)
        } else {
            (flow.client, flow.server)
        };
        let q = |h: usize| {
            let via = self.paths[h].get(way).copied().flatten().map(|p| p[dir]);
            via.or(self.cell_queue(h, dir, flow.wifi_ac))
                .or(self.hosts[h][dir])
        };
        [q(from), q(to)]
    }
}

/// Every queue of a scenario's network: the bottleneck (as [`bottleneck`]),
/// each host's access links (as [`link`], named by [`access_queue_name`],
/// their random streams by that name), then the Wi-Fi cell ([`cell_config`],
/// its random stream `wifi/cell`) and its queues ([`Link::for_air`] with the
/// AP's or the stations' qdisc and the station host's `access_delay`, named
/// by [`cell_queue_name`], their qdisc streams by that name), numbered as
/// the returned [`AccessQueues`] says. Both backends build theirs here.
pub fn network(scn: &Scenario, seed: u64) -> (l4slab_bottleneck::Bottleneck, AccessQueues) {
    let mut bn = bottleneck(&scn.bottleneck, seed, scn.flows.len());
    let access = AccessQueues::of(scn);
    for ((h, queues), ways) in scn.hosts.iter().zip(&access.hosts).zip(&access.paths) {
        for (dir, q) in queues.iter().enumerate() {
            if let (Some(q), Some(spec)) = (q, h.access.dir(dir)) {
                let name = access_queue_name(&h.name, dir);
                let added = bn.add_queue(&name, link(spec, &name, seed), qdisc_rng(seed, &name));
                assert_eq!(added, *q, "{name}: queues numbered as AccessQueues says");
            }
        }
        for (p, qs) in h.paths.iter().zip(ways) {
            let Some(qs) = qs else {
                continue; // through the cell: its queues are added below
            };
            let outages: Vec<_> = p.outages.iter().map(|o| (o.start, o.end)).collect();
            let steps: Vec<_> = p.rate_changes.iter().map(|c| (c.at, c.rate)).collect();
            for (dir, &q) in qs.iter().enumerate() {
                let spec = p.access.dir(dir).expect("a path has a link both ways");
                let name = path_queue_name(&h.name, &p.name, dir);
                let r = match steps.is_empty() {
                    true => rate(spec),
                    false => Box::new(StepRate::new(rate(spec), steps.clone())),
                };
                let l = link_over(spec, r, &name, seed).with_outages(outages.clone());
                let added = bn.add_queue(&name, l, qdisc_rng(seed, &name));
                assert_eq!(added, q, "{name}: queues numbered as AccessQueues says");
            }
        }
    }
    if let (Some(wifi), Some(cfg)) = (&scn.wifi, cell_config(scn)) {
        let mut expect = Vec::with_capacity(cfg.queues.len());
        let queues = cfg
            .queues
            .iter()
            .map(|q| {
                let host = wifi.stations[q.station].host;
                let h = &scn.hosts[host];
                let dir = air_dir(q.dir);
                let spec = if dir == DOWN {
                    &wifi.ap_qdisc
                } else {
                    &wifi.station_qdisc
                };
                let name = cell_queue_name(&h.name, dir, q.ac);
                expect.push((access.cell_queue(host, dir, q.ac), name.clone()));
                let rng = qdisc_rng(seed, &name);
                // A multi-homed station: its path's delay and outages.
                let link = match h.cell_path() {
                    Some(p) => Link::for_air(qdisc(spec), p.access_delay)
                        .with_outages(p.outages.iter().map(|o| (o.start, o.end)).collect()),
                    None => Link::for_air(qdisc(spec), h.access_delay),
                };
                (name, link, rng)
            })
            .collect();
        let cell = Cell::new(cfg, SimRng::derive(seed, "wifi/cell"));
        let c = bn.add_cell(cell, queues);
        for (&added, (q, name)) in bn.cell_queues(c).iter().zip(&expect) {
            assert_eq!(
                Some(added),
                *q,
                "{name}: queues numbered as AccessQueues says"
            );
        }
    }
    (bn, access)
}
