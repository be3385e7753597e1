//! Building a [`Sim`] from a resolved scenario: the one place where scenario
//! names (`kind = "fifo"`, `cc = "reno"`, `app = "file"`) become objects.

use l4slab_core::{SimRng, Time};
use l4slab_link::{Bernoulli, ConstantRate, GilbertElliott, Link, LossModel, NoLoss};
use l4slab_qdisc::{Codel, DualPi2, Fifo, FifoConfig, FifoLimit, FifoMode, FqCodel, Pie, Qdisc};
use l4slab_scenario::{
    AppSpec, BufferLimit, Direction, LinkSpec, LossSpec, QdiscSpec, Scenario, Side,
};
use l4slab_transport::app::{App, Bulk, File};
use l4slab_transport::{Endpoint, Role, TransportConfig};

use crate::delay_line::{DelayLine, LineExit};
use crate::engine::{
    EpState, Ev, FlowState, Keys, LinkState, PacketCounts, Sim, CLIENT, DOWN, SERVER, UP,
};
use crate::event::EventQueue;
use crate::recorder::Recorder;
use crate::segstore::SegStore;
use crate::series::SeriesStore;
use crate::{PacketTrace, SimError};

/// Queue names, indexed by direction (DOWN = 0, UP = 1).
pub const QUEUE_NAMES: [&str; 2] = ["bottleneck.down", "bottleneck.up"];

/// The one dispatch point from a scenario qdisc to a discipline.
pub fn build_qdisc(spec: &QdiscSpec) -> Box<dyn Qdisc> {
    match spec {
        QdiscSpec::Fifo { limit, head_drop } => Box::new(Fifo::new(FifoConfig {
            limit: match *limit {
                BufferLimit::Packets(n) => FifoLimit::Packets(n),
                BufferLimit::Bytes(b) | BufferLimit::Time { bytes: b, .. } => FifoLimit::Bytes(b),
            },
            mode: if *head_drop {
                FifoMode::HeadDrop
            } else {
                FifoMode::TailDrop
            },
        })),
        QdiscSpec::Codel(cfg) => Box::new(Codel::new(cfg.clone())),
        QdiscSpec::FqCodel(cfg) => Box::new(FqCodel::new(cfg.clone())),
        QdiscSpec::Pie(cfg) => Box::new(Pie::new(cfg.clone())),
        QdiscSpec::Dualpi2(cfg) => Box::new(DualPi2::new(cfg.clone())),
    }
}

fn build_loss(spec: &LossSpec) -> Box<dyn LossModel> {
    // Probabilities were validated by l4slab-scenario.
    match *spec {
        LossSpec::None => Box::new(NoLoss),
        LossSpec::Bernoulli { p } => Box::new(Bernoulli::new(p).expect("validated")),
        LossSpec::GilbertElliott { p, r, k, h } => {
            Box::new(GilbertElliott::new(p, r, k, h).expect("validated"))
        }
    }
}

fn build_link(spec: &LinkSpec, name: &str, seed: u64, series: &mut SeriesStore) -> LinkState {
    let qdisc = build_qdisc(&spec.qdisc);
    let sub_keys = qdisc
        .subqueue_names()
        .iter()
        .map(|n| series.intern(&format!("sojourn_ms.{n}")))
        .collect();
    LinkState {
        name: name.to_owned(),
        sub_keys,
        xstat_keys: Vec::new(),
        link: Link::new(
            qdisc,
            Box::new(ConstantRate(spec.rate)),
            build_loss(&spec.loss),
            SimRng::derive(seed, &format!("link/{name}/loss")),
            spec.delay,
        ),
        rng: SimRng::derive(seed, &format!("link/{name}/qdisc")),
        tx_scheduled: false,
        timer_armed: None,
        series: series.intern(&format!("queue/{name}")),
        last_drops: 0,
        last_marks: 0,
        last_busy: l4slab_core::Dur::ZERO,
    }
}

fn build_app(spec: &AppSpec) -> Box<dyn App> {
    match *spec {
        AppSpec::Bulk => Box::new(Bulk::new()),
        AppSpec::File { size } => Box::new(File::new(size)),
    }
}

/// Ingress lines (host -> bottleneck, the access delay), then egress lines
/// (bottleneck -> host: the link's propagation delay plus the access delay).
fn build_lines(scn: &Scenario) -> Vec<DelayLine> {
    let ingress = scn.hosts.iter().map(|h| {
        let dir = match h.side {
            Side::Client => UP,
            Side::Server => DOWN,
        };
        DelayLine::new(h.access_delay, LineExit::Bottleneck { dir })
    });
    let egress = scn.hosts.iter().map(|h| {
        let (link, side) = match h.side {
            Side::Client => (&scn.bottleneck.down, CLIENT),
            Side::Server => (&scn.bottleneck.up, SERVER),
        };
        DelayLine::new(link.delay + h.access_delay, LineExit::Endpoint { side })
    });
    ingress.chain(egress).collect()
}

pub fn build(scn: &Scenario, seed: u64) -> Result<Sim<'_>, SimError> {
    let mut series = SeriesStore::default();
    let links = [
        build_link(&scn.bottleneck.down, QUEUE_NAMES[0], seed, &mut series),
        build_link(&scn.bottleneck.up, QUEUE_NAMES[1], seed, &mut series),
    ];
    let mut q = EventQueue::default();
    let mut flows = Vec::with_capacity(scn.flows.len());
    for (i, f) in scn.flows.iter().enumerate() {
        let t = &f.transport;
        let cfg = TransportConfig {
            mss: t.mss,
            initial_window: t.initial_window,
            delayed_ack: t.delayed_ack,
            delayed_ack_timeout: t.delayed_ack_timeout,
            min_rto: t.min_rto,
            pacing: t.pacing,
            send_buffer: t.send_buffer,
            notsent_lowat: t.notsent_lowat,
            receive_buffer: t.receive_buffer,
            ..TransportConfig::default()
        };
        let cc = |_: ()| {
            l4slab_cc::build(&f.cc, u64::from(t.mss), u64::from(t.initial_window)).ok_or_else(
                || SimError::UnknownCc {
                    flow: i,
                    name: f.cc.clone(),
                    known: l4slab_cc::CC_NAMES.join(", "),
                },
            )
        };
        let id = i as u32;
        let client = Endpoint::new(id, Role::Client, cfg.clone(), cc(())?);
        let server = Endpoint::new(id, Role::Server, cfg, cc(())?);
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
            sender: match f.direction {
                Direction::Down => SERVER,
                Direction::Up => CLIENT,
            },
            app: build_app(&f.app),
            app_timer: None,
            rng: SimRng::derive(seed, &format!("flow/{}", f.name)),
            start: f.start,
            file_size: match f.app {
                AppSpec::File { size } => Some(size),
                AppSpec::Bulk => None,
            },
            delivered: 0,
            delivered_last_sample: 0,
            completion: None,
            data_drops: 0,
            ack_drops: 0,
            series: series.intern(&format!("flow/{}", f.name)),
        });
        q.schedule(f.start, Ev::FlowStart { flow: id });
    }
    if scn.sample_interval.as_nanos() > 0 {
        q.schedule(Time::ZERO + scn.sample_interval, Ev::Sample);
    }
    let keys = Keys {
        goodput_bps: series.intern("goodput_bps"),
        cwnd_bytes: series.intern("cwnd_bytes"),
        ssthresh_bytes: series.intern("ssthresh_bytes"),
        pacing_bps: series.intern("pacing_bps"),
        inflight_bytes: series.intern("inflight_bytes"),
        srtt_ms: series.intern("srtt_ms"),
        rtt_ms: series.intern("rtt_ms"),
        backlog_pkts: series.intern("backlog_pkts"),
        backlog_bytes: series.intern("backlog_bytes"),
        sojourn_ms: series.intern("sojourn_ms"),
        sojourn_max_ms: series.intern("sojourn_max_ms"),
        drops: series.intern("drops"),
        marks: series.intern("marks"),
        utilization: series.intern("utilization"),
    };
    let subqueues: Vec<usize> = links
        .iter()
        .map(|l| l.link.qdisc().subqueue_names().len())
        .collect();
    Ok(Sim {
        scn,
        seed,
        q,
        links,
        hosts_of: scn.flows.iter().map(|f| [f.client, f.server]).collect(),
        lines: build_lines(scn),
        rec: Recorder::new(flows.len(), &subqueues),
        flows,
        segs: SegStore::default(),
        series,
        keys,
        trace: scn.packet_trace.then(PacketTrace::default),
        counts: PacketCounts::default(),
        events: 0,
        out: Vec::with_capacity(64),
        app_events: Vec::with_capacity(8),
        dropped: Vec::with_capacity(64),
    })
}
