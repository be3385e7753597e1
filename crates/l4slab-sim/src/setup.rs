//! Building a [`Sim`] from a resolved scenario: where scenario names
//! (`cc = "reno"` with its options, `app = "file"`) become objects. The bottleneck links
//! (qdisc, rate, loss) and the hosts' access links come from
//! [`l4slab_scenario::build`], which the emulator shares.

use l4slab_bottleneck::flow::FlowRecorder;
use l4slab_cc::{CongestionControl, EcnCodepoint};
use l4slab_core::{Ecn, SimRng, Time};
use l4slab_link::DelayLine;
use l4slab_scenario::{AppSpec, Direction, EcnSpec, Protocol, Scenario, Side};

use crate::race::Race;
use l4slab_tcp::{EcnMode, Endpoint, FastOpenCache, FastOpenCookie, Role, TransportConfig};

use crate::engine::{
    BnArmed, EpState, Ev, FlowState, Line, LineExit, PacketCounts, QueueExit, QueueRoute, Sim,
    CLIENT, DOWN, SERVER, UP,
};
use crate::event::EventQueue;
use crate::recorder::Recorder;
use crate::segstore::SegStore;
use crate::SimError;
use l4slab_core::SeriesStore;
use l4slab_scenario::build::AccessQueues;

/// A flow's ECN mode: as written, else Linux-like by controller
/// (docs/models/ecn.md): AccECN for a controller that needs ECN (it asks for
/// an ECT codepoint: DCTCP, Prague — Linux `TCP_CONG_NEEDS_ECN` /
/// `NEEDS_ACCECN`), off for the others (Reno, Cubic, BBR: Linux's default
/// `tcp_ecn = 2` never asks).
fn ecn_mode(spec: Option<EcnSpec>, cc: &dyn CongestionControl) -> EcnMode {
    match spec {
        Some(EcnSpec::Off) => EcnMode::Off,
        Some(EcnSpec::Classic) => EcnMode::Classic,
        Some(EcnSpec::AccEcn) => EcnMode::AccEcn,
        None if cc.ecn_codepoint() != EcnCodepoint::NotEct => EcnMode::AccEcn,
        None => EcnMode::Off,
    }
}

fn ecn_codepoint(e: Ecn) -> EcnCodepoint {
    match e {
        Ecn::Ect0 => EcnCodepoint::Ect0,
        // The scenario accepts ect0, ect1 and not_ect only.
        Ecn::Ect1 | Ecn::Ce => EcnCodepoint::Ect1,
        Ecn::NotEct => EcnCodepoint::NotEct,
    }
}

/// One TCP Fast Open cache per (client host, server host) pair of the
/// scenario's flows, in order of first use, and each flow's index into them.
/// The server's cookie for a client is derived from the two host indices
/// ([`FastOpenCookie::derive`]): deterministic, no random draw, the same in
/// every run of the scenario; every run starts with empty client caches.
fn fastopen_caches(scn: &Scenario) -> (Vec<FastOpenCache>, Vec<usize>) {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let of = scn
        .flows
        .iter()
        .map(|f| {
            let pair = (f.client, f.server);
            pairs.iter().position(|&p| p == pair).unwrap_or_else(|| {
                pairs.push(pair);
                pairs.len() - 1
            })
        })
        .collect();
    let caches = pairs
        .iter()
        .map(|&(c, s)| FastOpenCache::new(FastOpenCookie::derive(s as u64, c as u64)))
        .collect();
    (caches, of)
}

/// Ingress lines (host -> bottleneck), then egress lines (bottleneck -> host):
/// the hosts' access delays. The link's propagation delay is the bottleneck
/// runtime's.
fn build_lines(scn: &Scenario) -> Vec<Line> {
    let line = |delay, exit| Line {
        line: DelayLine::new(delay),
        exit,
        armed: false,
    };
    let ingress = scn.hosts.iter().map(|h| {
        let dir = match h.side {
            Side::Client => UP,
            Side::Server => DOWN,
        };
        line(h.access_delay, LineExit::Bottleneck { dir })
    });
    let egress = scn.hosts.iter().map(|h| {
        let side = match h.side {
            Side::Client => CLIENT,
            Side::Server => SERVER,
        };
        line(h.access_delay, LineExit::Endpoint { side })
    });
    ingress.chain(egress).collect()
}

/// Per queue of the runtime: the bottleneck's two go to the far side; a
/// host's access link in the direction it sends feeds the bottleneck, in the
/// direction it receives its endpoint.
fn queue_routes(scn: &Scenario, access: &AccessQueues) -> Vec<QueueRoute> {
    let mut routes = vec![
        QueueRoute {
            dir: DOWN,
            exit: QueueExit::FarSide,
        },
        QueueRoute {
            dir: UP,
            exit: QueueExit::FarSide,
        },
    ];
    for ((h, queues), ways) in scn.hosts.iter().zip(&access.hosts).zip(&access.paths) {
        let (side, sends) = match h.side {
            Side::Client => (CLIENT, UP),
            Side::Server => (SERVER, DOWN),
        };
        // The host's own access links, then its paths' (a multi-homed
        // host's, down then up each).
        let own = queues
            .iter()
            .enumerate()
            .filter_map(|(d, q)| q.map(|q| (d, q)));
        let paths = ways
            .iter()
            .flatten()
            .flat_map(|p| [(DOWN, p[DOWN]), (UP, p[UP])]);
        for (dir, q) in own.chain(paths) {
            assert_eq!(q, routes.len(), "access queues in AccessQueues order");
            let exit = if dir == sends {
                QueueExit::Bottleneck
            } else {
                QueueExit::Endpoint { side }
            };
            routes.push(QueueRoute { dir, exit });
        }
    }
    // A Wi-Fi cell's queues, in the cell's order (station by station, AC by
    // AC, down then up): the AP's to the station's endpoint, the station's
    // into the bottleneck.
    if scn.wifi.is_some() {
        for h in 0..scn.hosts.len() {
            for ac in l4slab_wifi::edca::Ac::ALL {
                for dir in [DOWN, UP] {
                    if let Some(q) = access.cell_queue(h, dir, ac) {
                        assert_eq!(q, routes.len(), "cell queues in AccessQueues order");
                        let exit = if dir == UP {
                            QueueExit::Bottleneck
                        } else {
                            QueueExit::Endpoint { side: CLIENT }
                        };
                        routes.push(QueueRoute { dir, exit });
                    }
                }
            }
        }
    }
    routes
}

/// Flow `f`'s endpoints (client, server): its transport config, ECN mode
/// and two congestion controllers. A racing flow's second attempt gets a
/// fresh pair too (`crate::race`).
pub fn endpoints(scn: &Scenario, f: usize) -> [Endpoint; 2] {
    let fl = &scn.flows[f];
    let t = &fl.transport;
    let cfg = TransportConfig {
        mss: t.mss,
        initial_window: t.initial_window,
        delayed_ack: t.delayed_ack,
        delayed_ack_timeout: t.delayed_ack_timeout,
        min_rto: t.min_rto,
        rto_formula: t.rto_formula,
        tlp: t.tlp,
        frto: t.frto,
        undo: t.undo,
        dsack: t.dsack,
        pacing: t.pacing,
        send_buffer: t.send_buffer,
        notsent_lowat: t.notsent_lowat,
        receive_buffer: t.receive_buffer,
        ecn_codepoint: t.ecn_codepoint.map(ecn_codepoint),
        fastopen: t.fastopen,
        ..TransportConfig::default()
    };
    // The scenario resolved the name and the options (crate::cc there).
    let cc = || {
        fl.cc
            .options
            .build(u64::from(t.mss), u64::from(t.initial_window))
    };
    let id = f as u32;
    let (client_cc, server_cc) = (cc(), cc());
    let cfg = TransportConfig {
        ecn: ecn_mode(fl.ecn, client_cc.as_ref()),
        ..cfg
    };
    let client = Endpoint::new(id, Role::Client, cfg.clone(), client_cc);
    let server = Endpoint::new(id, Role::Server, cfg, server_cc);
    [client, server]
}

pub fn build(scn: &Scenario, seed: u64) -> Result<Sim<'_>, SimError> {
    let mut series = SeriesStore::default();
    let (mut bn, access) = l4slab_scenario::build::network(scn, seed);
    let routes = queue_routes(scn, &access);
    let trace = scn.packet_trace.then(|| crate::pkttrace::start(&mut bn));
    let mut q = EventQueue::default();
    // The measurement window starts before anything else due at `warmup`.
    if !scn.warmup.is_zero() {
        q.schedule(Time::ZERO + scn.warmup, Ev::Warmup);
    }
    let mut flows = Vec::with_capacity(scn.flows.len());
    let mut recs = Vec::with_capacity(scn.flows.len());
    let apps = l4slab_scenario::flow_app::flow_apps(&scn.flows, seed);
    for ((i, f), app) in scn.flows.iter().enumerate().zip(apps) {
        let id = i as u32;
        let [client, server] = endpoints(scn, i);
        let sender = match f.direction {
            Direction::Down => SERVER,
            Direction::Up => CLIENT,
        };
        flows.push(FlowState {
            eps: [
                EpState {
                    ep: client,
                    timer_armed: None,
                },
                EpState {
                    ep: server,
                    timer_armed: None,
                },
            ],
            sender,
            app,
            app_timer: [None; 2],
            rng: SimRng::derive(seed, &format!("flow/{}", f.name)),
            file_size: match f.app {
                AppSpec::File(file) => Some(file.size),
                _ => None,
            },
            delivered: 0,
            completion: None,
            sent_pkts: [0; 2],
            lost_pkts: [0; 2],
            race: None,
        });
        let quic = f.transport.protocol == Protocol::Quic;
        let tcp = flows[i].app.uses_connection() && !quic;
        flows[i].race = Race::of(scn, i, &access, tcp, quic);
        // A flow another flow of its app opens (an HTTP/1.1 browser's
        // further connections) starts on that flow's request.
        if !flows[i].app.opens_on_request() {
            q.schedule_flow(f.start, Ev::FlowStart { flow: id });
        }
        // The measurement window starts at `warmup` (docs/results.md).
        let window = Time::ZERO + scn.warmup;
        recs.push(FlowRecorder::new(&f.name, f.start, window, &mut series));
    }
    if scn.sample_interval.as_nanos() > 0 {
        q.schedule(Time::ZERO + scn.sample_interval, Ev::Sample);
    }
    let (fastopen, fastopen_of) = fastopen_caches(scn);
    Ok(Sim {
        scn,
        seed,
        q,
        bn_armed: vec![BnArmed::default(); bn.queues()],
        cell_armed: vec![None; bn.cells()],
        bn,
        routes,
        paths: scn
            .flows
            .iter()
            .map(|f| [DOWN, UP].map(|dir| access.path(f, dir)))
            .collect(),
        touched: Vec::new(),
        hosts_of: scn.flows.iter().map(|f| [f.client, f.server]).collect(),
        fastopen,
        fastopen_of,
        lines: build_lines(scn),
        rec: Recorder { flows: recs },
        flows,
        segs: SegStore::default(),
        bytes: Default::default(),
        byte_out: Vec::with_capacity(64),
        series,
        trace,
        pcap: None,
        counts: PacketCounts::default(),
        events: 0,
        out: Vec::with_capacity(64),
        dgrams: Vec::with_capacity(8),
        app_events: Vec::with_capacity(8),
        flow_requests: Vec::with_capacity(8),
        way_tags: Vec::new(),
        other_sending: false,
        race_events: Vec::with_capacity(4),
    })
}
