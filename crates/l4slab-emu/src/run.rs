//! `l4slab run SCENARIO --backend emu`: a scenario file carried by real
//! kernel TCP through the emulated bottleneck, with the simulator's results
//! contract (summary, series; DESIGN.md §5).
//!
//! * **Topology.** The scenario's hosts all map onto the one client and the
//!   one server namespace. A host's access link (`[hosts.NAME.access]`) is a
//!   queue of the forwarder that the host's flows pass ([`crate::access`]),
//!   and carries the host's access delay in its direction. The access delays
//!   no access link carries are added to the bottleneck delay of their
//!   direction, which is exact when every flow's path has the same total (the
//!   emulator refuses scenarios where they differ).
//! * **Flows.** Flow `i` is a TCP connection from the client namespace to
//!   port `5000 + i` on the server; the sender (server for `down`, client
//!   for `up`) uses the flow's congestion control (`TCP_CONGESTION`, per
//!   socket). Classic ECN is negotiated by connecting to the server address
//!   whose route has `features ecn` ([`crate::netns::SERVER_ECN_ADDR`]).
//!   `bulk` writes until the end; `file` writes its size, then closes.
//! * **What the kernel cannot carry** runs on l4slab's own endpoints over
//!   UDP ([`crate::dgram`]; [`Carrier`]): congestion controls it lacks
//!   (DCTCP, Prague, BBRv3), congestion-control options (`cc = { kind =
//!   "cubic", hystart = false }`: Linux's module parameters are global to the
//!   host, not per socket), AccECN (this kernel's `tcp_ecn` takes 0-2 only),
//!   ECT(1) on data (kernel TCP strips it) — over the QUIC-style transport,
//!   said in the notes — and QUIC flows, datagram and RTP apps. Frame apps
//!   over TCP with such a controller are refused with the reason.
//! * **Measurements.** Goodput is what the receiver read; cwnd, ssthresh,
//!   pacing rate, in-flight and RTT come from the sender's `TCP_INFO`,
//!   sampled every 10 ms (RTT percentiles are of the kernel's smoothed RTT
//!   at those samples: the kernel does not expose every RTT sample);
//!   queue sojourn, drops and marks come from the forwarder's qdisc, exactly
//!   as in the simulator. Knobs the kernel does not take per socket
//!   (initial window, delayed ACKs, minimum RTO, pacing) are listed in
//!   `summary.emulator.notes` when a scenario changes them.
//! * **Congestion control.** Both namespaces' default is set (the flows'
//!   common one, else cubic) rather than inherited from the host, and
//!   reported in `summary.emulator.tcp_congestion_control`.
//! * **Per-packet trace** (`packet_trace = true`): [`crate::pktlog`].
//! * **pcap capture** (`pcap = true` and a folder, `--pcap-dir`):
//!   [`crate::capture`].
//! * **Timing.** The forwarder's timing report (actual minus intended
//!   release time of every packet) is in `summary.emulator`.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use l4slab_bottleneck::flow::{PathCounts, UpDown};
use l4slab_core::{Dur, Time};
use l4slab_scenario::{AppSpec, Direction, EcnSpec, ParseOptions, Protocol, Scenario};

use crate::access::AccessRoutes;
use crate::apps::{
    listen_on, listener_fastopen, socket_options, Apps, AppsOut, FlowRt, APPS_PRIORITY,
};
use crate::dgram::{self, DgramFlow, DgramOut, Dgrams};
use crate::forwarder::{self, Classifier, Forwarder, Hooks, Step, DOWN, UP};
use crate::netns::Topology;
use crate::shell::{self, RunTuning};
use crate::stats::round6;
use crate::sys::{self, Clock};
use crate::EmuError;

/// First server port; flow `i` uses `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5000;
/// Congestion controls the simulator knows that kernel TCP here does not have.
pub const L4S_ONLY_CC: &[&str] = &["dctcp", "prague", "bbr3"];

/// What a scenario asks of one flow, checked against the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowPlan {
    pub cc: String,
    /// Negotiate classic ECN.
    pub ecn: bool,
    pub port: u16,
    pub carrier: Carrier,
    /// TCP Fast Open (RFC 7413): the listener takes SYN data
    /// (`TCP_FASTOPEN`), and the client sends its first write in the SYN
    /// when it writes first (`TCP_FASTOPEN_CONNECT`, an `up` flow).
    pub fastopen: bool,
}

/// What carries a flow in the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// Kernel TCP sockets ([`crate::apps`]).
    Kernel,
    /// l4slab's own endpoints on UDP sockets ([`crate::dgram`]), reported
    /// with this `transport`: `quic` (the QUIC-style transport; `bytes`),
    /// `rtp` or `udp` (datagram apps).
    Own { transport: &'static str },
}

/// A scenario the kernel can carry.
#[derive(Clone, Debug)]
pub struct Plan {
    pub flows: Vec<FlowPlan>,
    /// Access delays folded into each direction's one-way delay (`[DOWN,
    /// UP]`): those no access link carries.
    pub extra_delay: [Dur; 2],
    /// Scenario settings kernel TCP does not honour per socket.
    pub notes: Vec<String>,
    /// The namespaces' default congestion control: the flows' one when they
    /// all use the same, else Linux's default ([`shell::DEFAULT_CC`]). The
    /// senders set theirs per socket anyway; this covers every other socket.
    pub namespace_cc: String,
}

/// Parse a scenario file with the names the emulator knows (kernel CCs plus
/// the simulator's L4S ones, so those get a clear refusal, not "unknown").
///
/// # Errors
/// [`EmuError::Scenario`].
pub fn parse(path: &std::path::Path, sets: &[String]) -> Result<Scenario, EmuError> {
    let mut known: Vec<&str> = shell::KERNEL_CC.to_vec();
    known.extend_from_slice(L4S_ONLY_CC);
    Ok(l4slab_scenario::parse_file(
        path,
        sets,
        &ParseOptions {
            known_cc: known,
            trace_dirs: vec![],
        },
    )?)
}

/// Check every flow against what kernel TCP here can do.
///
/// # Errors
/// [`EmuError::Unsupported`] naming the flow, the setting and why.
pub fn plan(scn: &Scenario) -> Result<Plan, EmuError> {
    if let Some(h) = scn.hosts.iter().find(|h| !h.paths.is_empty()) {
        // The forwarder has one client TUN and routes by flow only: what a
        // second path needs is in docs/emulator.md, "Multi-homed hosts".
        return Err(EmuError::Unsupported(format!(
            "hosts.{}.paths: a multi-homed host (two paths, connection racing) runs on the \
             simulator only so far (the emulator has one way out of the client namespace; \
             what a second needs: docs/emulator.md, \"Multi-homed hosts: not yet\"); use \
             --backend sim",
            h.name
        )));
    }
    let mut flows = Vec::new();
    let mut notes = Vec::new();
    let mut extra: Option<[Dur; 2]> = None;
    let defaults = l4slab_scenario::TransportSpec::default();
    for (i, f) in scn.flows.iter().enumerate() {
        let at = format!("flows[{i}] ({})", f.name);
        let carrier = carrier(f, &at, &mut notes)?;
        let ecn = carrier == Carrier::Kernel && f.ecn == Some(EcnSpec::Classic);
        let access = uncarried_delay(scn, f);
        match extra {
            None => extra = Some(access),
            Some(e) if e == access => {}
            Some(e) => {
                let show = |d: [Dur; 2]| format!("{} down, {} up", d[DOWN], d[UP]);
                return Err(EmuError::Unsupported(format!(
                    "{at}: its hosts' access delays without an access link add up to {}, \
                     another flow's to {}; the emulator gives every flow the same bottleneck \
                     delay, so all flows need the same total access delay outside access \
                     links (give the hosts [hosts.NAME.access] links, which carry their own \
                     delay, or use --backend sim)",
                    show(access),
                    show(e)
                )));
            }
        }
        let t = &f.transport;
        // A flow on l4slab's own endpoints runs these as in the simulator.
        let kernel = carrier == Carrier::Kernel;
        for (differs, what) in [
            (
                t.initial_window != defaults.initial_window,
                "initial_window (kernel: 10 segments)",
            ),
            (
                t.delayed_ack != defaults.delayed_ack,
                "delayed_ack (kernel: on)",
            ),
            (
                t.delayed_ack_timeout != defaults.delayed_ack_timeout,
                "delayed_ack_timeout (kernel: 40 ms min)",
            ),
            (t.min_rto != defaults.min_rto, "min_rto (kernel: 200 ms)"),
            (
                t.rto_formula != defaults.rto_formula,
                "rto_formula (kernel: linux)",
            ),
            (t.tlp != defaults.tlp, "tlp (kernel: tcp_early_retrans = 3)"),
            (t.frto != defaults.frto, "frto (kernel: tcp_frto = 2)"),
            (t.undo != defaults.undo, "undo (kernel: always)"),
            (t.dsack != defaults.dsack, "dsack (kernel: tcp_dsack = 1)"),
            (
                t.pacing != defaults.pacing,
                "pacing (kernel TCP paces internally for bbr only)",
            ),
        ] {
            if differs && kernel {
                notes.push(format!(
                    "{at}.transport.{what} is not applied by kernel TCP"
                ));
            }
        }
        if carrier == (Carrier::Own { transport: "quic" }) && t.protocol == Protocol::Tcp {
            // A TCP flow carried over the QUIC-style transport runs with
            // QUIC's transport defaults (its keys mean other things there).
            for k in l4slab_scenario::quic::KEYS {
                // The codepoint is carried over (ECT(1) is often why it runs there).
                if k.key != "ecn_codepoint" && k.differs(t, &defaults) {
                    notes.push(format!(
                        "{at}.transport.{} is not applied: the flow runs over l4slab's \
                         QUIC-style transport with QUIC's transport defaults",
                        k.key
                    ));
                }
            }
        }
        flows.push(FlowPlan {
            cc: f.cc.kind.clone(),
            ecn,
            port: BASE_PORT + i as u16,
            carrier,
            fastopen: kernel && t.fastopen,
        });
        if kernel && t.fastopen && f.direction == Direction::Down {
            notes.push(format!(
                "{at}.transport.fastopen: a download's client writes nothing, so its SYN \
                 carries no data (the server accepts Fast Open; nothing is saved)"
            ));
        }
    }
    let mut kernel_ccs = flows
        .iter()
        .filter(|f| f.carrier == Carrier::Kernel)
        .map(|f| &f.cc);
    let namespace_cc = match kernel_ccs.next() {
        Some(first) if kernel_ccs.all(|c| c == first) => first.clone(),
        _ => shell::DEFAULT_CC.to_string(),
    };
    Ok(Plan {
        flows,
        extra_delay: extra.unwrap_or([Dur::ZERO; 2]),
        notes,
        namespace_cc,
    })
}

/// What carries flow `f` (`at` names it in messages): kernel TCP when it
/// can; l4slab's own endpoints over UDP for the QUIC-style transport, the
/// datagram and RTP apps, the apps kernel TCP flows do not run (`web`,
/// `web_browse`, `video_stream`, `download`: over the QUIC-style transport,
/// said in `notes`), and TCP flows the kernel cannot carry (those run over
/// the QUIC-style transport with the same controller, said in `notes`).
///
/// # Errors
/// [`EmuError::Unsupported`] for a frame app over TCP (l4slab has no frame
/// app over its QUIC-style transport: they adapt to TCP's socket figures).
fn carrier(
    f: &l4slab_scenario::Flow,
    at: &str,
    notes: &mut Vec<String>,
) -> Result<Carrier, EmuError> {
    let quic = Carrier::Own { transport: "quic" };
    if f.app.is_rtp() {
        return Ok(Carrier::Own { transport: "rtp" });
    }
    if matches!(f.app, AppSpec::Ping(_) | AppSpec::Cbr(_)) {
        return Ok(Carrier::Own { transport: "udp" });
    }
    if let AppSpec::WebBrowse(b) = &f.app {
        if b.connection.is_some() {
            // Its connections share one browser (l4slab_app::web_browse_h1),
            // which only the simulator's engine wakes across flows.
            return Err(EmuError::Unsupported(format!(
                "{at}.app.connections: web_browse over parallel HTTP/1.1 connections runs \
                 in the simulator only; in the emulator remove connections (one multiplexed \
                 connection) or use --backend sim"
            )));
        }
    }
    if f.transport.protocol == Protocol::Quic {
        return Ok(quic);
    }
    let cc = f.cc.kind.as_str();
    // Why kernel TCP here cannot carry it, if it cannot.
    let why = if !shell::KERNEL_CC.contains(&cc) {
        Some(format!(
            "this kernel has no {cc} (only {})",
            shell::KERNEL_CC.join(", ")
        ))
    } else if f.cc.has_options() {
        Some(format!(
            "tcp_{cc}'s parameters are global to the host (/sys/module/tcp_{cc}/parameters), \
             not per socket"
        ))
    } else if f.ecn == Some(EcnSpec::AccEcn) {
        Some("this kernel cannot negotiate AccECN (net.ipv4.tcp_ecn accepts 0-2 only)".into())
    } else if f.transport.ecn_codepoint == Some(l4slab_core::Ecn::Ect1) {
        Some("kernel TCP cannot send ECT(1) (it clears the ECN bits of IP_TOS)".into())
    } else {
        None
    };
    let kernel_app = matches!(f.app, AppSpec::Bulk(_) | AppSpec::File(_));
    let own = own_quic_app(f);
    match why {
        None if kernel_app => {
            if f.ecn == Some(EcnSpec::Classic)
                && f.transport.ecn_codepoint == Some(l4slab_core::Ecn::NotEct)
            {
                return Err(EmuError::Unsupported(format!(
                    "{at}.transport.ecn_codepoint = \"not_ect\" with ECN on: kernel TCP always \
                     sends ECT(0) once ECN is negotiated"
                )));
            }
            Ok(Carrier::Kernel)
        }
        None if own.is_some() => {
            // A download's parts share one note, on its first.
            if let Some(how) = own.flatten() {
                notes.push(format!(
                    "{at}: the emulator's kernel-TCP flows run bulk and file only; {how} \
                     (compare with transport.protocol = \"quic\" in --backend sim)"
                ));
            }
            Ok(quic)
        }
        Some(why) if kernel_app || own.is_some() => {
            notes.push(format!(
                "{at}: kernel TCP cannot carry it ({why}); it runs over l4slab's QUIC-style \
                 transport on UDP with the same controller and ECN by ACK-frame counts \
                 (RFC 9000 §13.4); compare with transport.protocol = \"quic\" in --backend sim"
            ));
            Ok(quic)
        }
        _ => Err(EmuError::Unsupported(format!(
            "{at}.app = \"{}\" over TCP: the emulator carries a frame app's frames over RTP \
             only (its kernel-TCP flows run bulk and file, and l4slab's QUIC-style transport \
             carries no frame app); run its frames over RTP (app.transport = \"rtp\"), run \
             this scenario with --backend sim, or run your own program through the bottleneck \
             with `l4slab emu -- COMMAND`",
            f.app.kind()
        ))),
    }
}

/// For an app the emulator's kernel-TCP flows do not run but l4slab's
/// QUIC-style transport does: what carries it, for the run's notes (`None`
/// inside: a download part after its download's first, whose note covers
/// it); `None` for other apps.
fn own_quic_app(f: &l4slab_scenario::Flow) -> Option<Option<String>> {
    const OVER: &str = "over l4slab's QUIC-style transport on UDP";
    Some(Some(match &f.app {
        AppSpec::Web(_) => format!("this web page runs {OVER} (one stream per object, as HTTP/3)"),
        AppSpec::VideoStream(_) => format!(
            "this video player runs {OVER} (one stream per segment, as HTTP/3; the same player \
             and ABR rule)"
        ),
        AppSpec::WebBrowse(_) => format!(
            "this browsing session runs {OVER}: the same app as over TCP, its HTTP/2-style byte \
             stream on one QUIC stream each way (responses in request order)"
        ),
        AppSpec::Download(d) => match &d.part {
            Some(p) if p.index > 0 => return Some(None),
            Some(p) if d.connections > 1 => format!(
                "download \"{}\" runs {OVER}: each of its {} connections (this flow and the \
                 next {} of its parts) is a QUIC connection of its own carrying its part on one \
                 stream",
                p.download,
                d.connections,
                d.connections - 1
            ),
            Some(_) | None => format!("this download runs {OVER}, its bytes on one stream"),
        },
        _ => return None,
    }))
}

/// Flow `f`'s access delay per direction (`[DOWN, UP]`) that no access
/// link carries: each host's `access_delay` in the directions it has no
/// access link in.
fn uncarried_delay(scn: &Scenario, f: &l4slab_scenario::Flow) -> [Dur; 2] {
    // A Wi-Fi station's access delay rides on its cell queues.
    let station = |h: usize| {
        scn.wifi
            .as_ref()
            .is_some_and(|w| w.stations.iter().any(|s| s.host == h))
    };
    [DOWN, UP].map(|dir| {
        [f.client, f.server]
            .into_iter()
            .filter(|&h| !station(h))
            .map(|h| &scn.hosts[h])
            .filter(|h| h.access.dir(dir).is_none())
            .map(|h| h.access_delay)
            .fold(Dur::ZERO, |a, b| a + b)
    })
}

// ------------------------------------------------------------------ the run

/// Sets the flag when dropped, so the applications thread stops however the
/// forwarder's loop ends (an error, or a panic: `thread::scope` joins the
/// thread before it unwinds further, so without this a crashed forwarder
/// would wait forever and never remove its namespaces).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A thread's [`sys::SchedStat`] as JSON.
fn sched_json(s: sys::SchedStat) -> Value {
    json!({
        "cpu_s": round6(s.cpu_ns as f64 * 1e-9),
        "runqueue_wait_s": round6(s.wait_ns as f64 * 1e-9),
    })
}

struct RunHooks {
    end: Time,
    stopped_by_signal: Option<i32>,
}

impl Hooks for RunHooks {
    fn on_signals(&mut self, signals: &[i32]) -> Step {
        match signals.iter().find(|&&s| s != sys::SIGCHLD) {
            Some(&s) => {
                self.stopped_by_signal = Some(s);
                Step::Stop
            }
            None => Step::Continue,
        }
    }
    fn on_sample(&mut self, now: Time) -> Step {
        if now >= self.end {
            Step::Stop
        } else {
            Step::Continue
        }
    }
}

/// IPv4 and UDP headers around a QUIC datagram.
const UDP_IP_HEADERS: u32 = 28;

/// Every QUIC flow's datagrams (its `mss`, the maximum datagram size) fit
/// the namespaces' MTU with their IPv4 and UDP headers.
///
/// # Errors
/// [`EmuError::Unsupported`] naming the flow.
fn check_datagram_sizes(scn: &Scenario, mtu: u32) -> Result<(), EmuError> {
    for (i, f) in scn.flows.iter().enumerate() {
        let mss = f.transport.mss;
        if f.transport.protocol == Protocol::Quic && mss + UDP_IP_HEADERS > mtu {
            return Err(EmuError::Unsupported(format!(
                "flows[{i}] ({}).transport.mss = {mss}: a QUIC datagram of that size with its \
                 IPv4 and UDP headers ({UDP_IP_HEADERS} B) is larger than the emulator's MTU \
                 ({mtu} B); use mss = {} or less, or --mtu {}",
                f.name,
                mtu - UDP_IP_HEADERS,
                mss + UDP_IP_HEADERS
            )));
        }
    }
    Ok(())
}

/// Run `scn` with kernel TCP through the emulator; returns what
/// `l4slab._native.run` returns (`summary_json`, `series`, `packets`, `stats`).
///
/// # Errors
/// [`EmuError`]: unsupported flows (before anything is created), no root,
/// setup failures, or an interruption (SIGINT/SIGTERM: nothing is returned).
pub fn run(
    scn: &Scenario,
    seed: u64,
    tuning: &RunTuning,
    pcap_dir: Option<&std::path::Path>,
) -> Result<Value, EmuError> {
    let plan = plan(scn)?;
    check_datagram_sizes(scn, tuning.mtu)?;
    if !sys::is_root() {
        return Err(EmuError::NotRoot);
    }
    let sigfd = sys::signalfd().map_err(|e| EmuError::io("signalfd", e))?;
    let mut topo = Topology::create(tuning.mtu, tuning.reaper.as_deref())?;
    let namespace_cc = topo.set_congestion_control(&plan.namespace_cc)?;
    if plan.flows.iter().any(|f| f.fastopen) {
        // Linux `net.ipv4.tcp_fastopen` (per namespace): 0x1 client, 0x2 server.
        for ns in [&topo.client, &topo.server] {
            Topology::sysctl(ns, "net.ipv4.tcp_fastopen", "3")?;
        }
    }
    // Access delays outside access links ride on the bottleneck delay (same
    // total for every flow).
    let mut links_scn = scn.clone();
    links_scn.bottleneck.down.delay += plan.extra_delay[DOWN];
    links_scn.bottleneck.up.delay += plan.extra_delay[UP];
    let (bn, access) = l4slab_scenario::build::network(&links_scn, seed);
    let clock = Clock::start();
    let cpu0 = sys::cpu_times();
    let ports: Vec<u16> = plan.flows.iter().map(|f| f.port).collect();
    let mut fwd = Forwarder::new(
        bn,
        topo.tun_fds(),
        Some(sigfd.as_raw_fd()),
        clock,
        forwarder::Config {
            classifier: Classifier::Ports(ports),
            sample_interval: Some(scn.sample_interval),
            record_series: true,
            warmup: scn.warmup,
            packet_log: scn.packet_trace.then(|| {
                scn.flows
                    .iter()
                    .map(|f| f.direction == Direction::Down)
                    .collect()
            }),
            access: AccessRoutes::new(scn, &access),
            live: None,
            ..tuning.forwarder_config()
        },
    )?;
    if let Some(dir) = pcap_dir.filter(|_| scn.pcap) {
        fwd.capture(dir, None)?;
    }
    // Listeners in the server namespace, before any flow starts.
    // and l4slab's own endpoints' sockets, bound in theirs.
    let mut flows = Vec::new();
    let mut own = Vec::new();
    for (i, f) in scn.flows.iter().enumerate() {
        let p = &plan.flows[i];
        match p.carrier {
            Carrier::Kernel => {
                let l = sys::in_netns(&topo.server.fd, || listen_on(p.port))
                    .and_then(|l| socket_options(l.as_raw_fd(), f, p).map(|()| l))
                    .and_then(|l| listener_fastopen(l.as_raw_fd(), p).map(|()| l))
                    .map_err(|e| EmuError::io(&format!("listening for flow {}", f.name), e))?;
                flows.push(FlowRt::new(i, f, scn.warmup, l));
            }
            Carrier::Own { transport } => {
                // The simulator's own app for the flow; a TCP flow the kernel
                // cannot carry runs over the QUIC-style transport.
                let mut carried = f.clone();
                if transport == "quic" && f.transport.protocol == Protocol::Tcp {
                    // QUIC's defaults: the TCP keys do not apply (see `plan`'s notes).
                    carried.transport =
                        l4slab_scenario::TransportSpec::defaults_for(Protocol::Quic);
                    carried.transport.ecn_codepoint = f.transport.ecn_codepoint;
                }
                let app = l4slab_scenario::flow_app::flow_app(&carried, seed);
                let d = DgramFlow::new(
                    scn,
                    i,
                    app,
                    transport == "quic",
                    p.port,
                    &topo.client.fd,
                    &topo.server.fd,
                )
                .map_err(|e| EmuError::io(&format!("UDP sockets for flow {}", f.name), e))?;
                own.push(d);
            }
        }
    }
    let (fwd_cpu, app_cpus) = shell::cpu_split(tuning.pin);
    let stop = Arc::new(AtomicBool::new(false));
    let client_ns = topo
        .client
        .fd
        .try_clone()
        .map_err(|e| EmuError::io("client namespace fd", e))?;
    let origin = clock.now();
    fwd.set_origin(origin);
    let end = origin + (scn.duration - Time::ZERO);
    let mut fwd_sched = sys::SchedStat::default();
    let apps_out = std::thread::scope(|scope| -> Result<(AppsOut, Option<DgramOut>), EmuError> {
        let apps = Apps {
            scn,
            plan: &plan,
            client_ns,
            clock,
            origin,
            stop: stop.clone(),
        };
        // `L4SLAB_APPS_REALTIME=0`: experiment switch to reproduce the
        // measurement in the comment on [`Apps`].
        let realtime =
            tuning.realtime && std::env::var("L4SLAB_APPS_REALTIME").as_deref() != Ok("0");
        // Both endpoint threads run on the applications' CPUs, real-time
        // below the forwarder. Best effort, as for the forwarder: without it
        // the run is still correct, only more exposed to the machine's load.
        let prepare = move |cpus: Option<Vec<usize>>| {
            if let Some(c) = cpus {
                let _ = sys::set_affinity(&c);
            }
            if realtime {
                let _ = sys::realtime(APPS_PRIORITY);
            }
        };
        let cpus = app_cpus.clone();
        let handle = scope.spawn(move || {
            prepare(cpus);
            apps.run(flows)
        });
        let own_handle = (!own.is_empty()).then(|| {
            let dgrams = Dgrams {
                scn,
                clock,
                origin,
                stop: stop.clone(),
            };
            let cpus = app_cpus.clone();
            scope.spawn(move || {
                prepare(cpus);
                dgrams.run(own)
            })
        });
        let stop_apps = StopOnDrop(stop.clone());
        shell::become_forwarder(fwd_cpu, tuning.realtime, true);
        let mut hooks = RunHooks {
            end,
            stopped_by_signal: None,
        };
        let sched0 = sys::SchedStat::now();
        let r = fwd.run(Some(sigfd.as_raw_fd()), &mut hooks);
        fwd_sched = sys::SchedStat::now().since(sched0);
        drop(stop_apps);
        let out = handle.join().expect("applications thread panicked");
        let own_out = own_handle.map(|h| h.join().expect("datagram endpoints thread panicked"));
        r?;
        if let Some(s) = hooks.stopped_by_signal {
            return Err(EmuError::Interrupted(s));
        }
        Ok((out, own_out))
    });
    let wall = fwd.elapsed();
    fwd.finish_capture()?;
    let flow_names: Vec<&str> = scn.flows.iter().map(|f| f.name.as_str()).collect();
    let queues = fwd.queues_json(&flow_names);
    let wifi = fwd.wifi_json();
    let forwarder_report = fwd.forwarder_json(cpu0);
    let mut series = fwd.series_rows();
    let per_flow: Vec<(u64, u64, u64)> = (0..scn.flows.len())
        .map(|i| {
            let data_dir = if scn.flows[i].direction == Direction::Down {
                DOWN
            } else {
                UP
            };
            // Over every queue (the bottleneck's and the access links') of
            // each direction; wire losses (DropReason::LinkLoss) pass through
            // the context too.
            let (mut data, mut acks, mut marks) = (0, 0, 0);
            for q in 0..fwd.bn.queues() {
                let (drops, ce) = fwd.bn.dir(q).rec.per_flow.drops_marks(i);
                if access.dir_of(q) == data_dir {
                    data += drops;
                    marks += ce;
                } else {
                    acks += drops;
                }
            }
            (data, acks, marks)
        })
        .collect();
    let packets = fwd.dirs.iter().map(|d| d.counters.packets_in).sum::<u64>();
    let packet_log = fwd.packet_log.take().map(|l| l.to_json());
    drop(fwd);
    let counters = json!({
        "client": Topology::tcp_counters(&topo.client),
        "server": Topology::tcp_counters(&topo.server),
    });
    topo.teardown();
    let (mut apps_out, mut own_out) = apps_out?;
    series.append(&mut apps_out.series);
    if let Some(o) = own_out.as_mut() {
        series.append(&mut o.series);
    }
    let mut flows_json = Map::new();
    // The path's counts from the forwarder: lost by direction, data and ACKs.
    let path = |i: usize| {
        let (lost, ack_lost, _) = per_flow[i];
        let down = scn.flows[i].direction == Direction::Down;
        PathCounts {
            sent: None,
            lost: UpDown::of_data(down, lost, ack_lost),
        }
    };
    for rt in &apps_out.flows {
        let marks = per_flow[rt.index].2;
        let f = &scn.flows[rt.index];
        flows_json.insert(f.name.clone(), rt.summary_json(scn, path(rt.index), marks));
    }
    for d in own_out.iter().flat_map(|o| &o.flows) {
        let Carrier::Own { transport } = plan.flows[d.index].carrier else {
            unreachable!("own endpoints carry Own flows only")
        };
        let marks = per_flow[d.index].2;
        flows_json.insert(
            d.name.clone(),
            dgram::flow_json(scn, d, transport, path(d.index), marks),
        );
    }
    // In the scenario's order, as the simulator lists them.
    let flows_json: Map<String, Value> = scn
        .flows
        .iter()
        .filter_map(|f| flows_json.remove(&f.name).map(|v| (f.name.clone(), v)))
        .collect();
    let mut summary = json!({
        "format_version": 1,
        "tool_version": env!("CARGO_PKG_VERSION"),
        "backend": "emu",
        "seed": seed,
        "duration_s": round6(scn.duration.as_secs_f64()),
        // What the windowed metrics cover (docs/results.md).
        "window_s": [
            round6(scn.warmup.as_secs_f64()),
            round6(scn.duration.as_secs_f64()),
        ],
        "scenario": serde_json::to_value(scn).expect("scenario serializes"),
        "flows": flows_json,
        "queues": queues,
        "emulator": {
            "timing_error_us": forwarder_report["timing_error_us"].clone(),
            "forwarder": forwarder_report,
            "access_delay_added_ms": {
                "down": plan.extra_delay[DOWN].as_millis_f64(),
                "up": plan.extra_delay[UP].as_millis_f64(),
            },
            "notes": plan.notes,
            "datagram_endpoints": own_out.as_ref().map(dgram::report_json),
            "kernel": kernel_release(),
            "threads": {
                "forwarder": sched_json(fwd_sched),
                "applications": sched_json(apps_out.sched),
                "datagram_endpoints": own_out.as_ref().map(|o| sched_json(o.sched)),
            },
            "kernel_tcp_counters": counters,
            // Each namespace's default (read back); every flow's sender
            // sets its own per socket (`kernel_cc` per flow).
            "tcp_congestion_control": namespace_cc,
        },
    });
    if let Some(w) = wifi {
        summary["wifi"] = w;
    }
    // As the simulator: only a run with downloads has the key.
    if let Value::Object(flows) = &summary["flows"] {
        let downloads = l4slab_scenario::downloads::downloads_json(scn, flows);
        if !downloads.is_empty() {
            summary["downloads"] = Value::Object(downloads);
        }
    }
    series.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let (t_s, names, keys, values): (Vec<f64>, Vec<String>, Vec<String>, Vec<f64>) =
        series.into_iter().fold(
            (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
            |mut acc, (t, s, k, v)| {
                acc.0.push(t);
                acc.1.push(s);
                acc.2.push(k);
                acc.3.push(v);
                acc
            },
        );
    Ok(json!({
        "summary_json": serde_json::to_string(&summary).expect("json"),
        "series": { "t_s": t_s, "series": names, "key": keys, "value": values },
        "packets": packet_log,
        "stats": {
            "wall_s": round6(wall.as_secs_f64()),
            "sim_s": round6(scn.duration.as_secs_f64()),
            // Real time: there is no event calendar to count.
            "backend": "emu",
            "packets": packets,
        },
    }))
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(cc: &str) -> Scenario {
        scenario_with(&format!("cc = {cc}"))
    }

    /// One flow with `flow` (TOML lines of its `[[flows]]` entry).
    fn scenario_with(flow: &str) -> Scenario {
        let text = format!(
            "format = 1\nduration = \"5s\"\n[bottleneck]\nrate = \"10Mbit\"\n\
             delay = \"5ms\"\nbuffer = \"100pkt\"\n[[flows]]\n{flow}\n"
        );
        let mut known: Vec<&str> = shell::KERNEL_CC.to_vec();
        known.extend_from_slice(L4S_ONLY_CC);
        l4slab_scenario::parse_with(
            &text,
            "t.toml",
            &[],
            &ParseOptions {
                known_cc: known,
                trace_dirs: vec![],
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn flows_the_kernel_cannot_carry_run_on_l4slabs_own_endpoints() {
        // Defaults, written either way, run with the kernel's module.
        for cc in [
            r#""cubic""#,
            r#"{ kind = "cubic" }"#,
            r#"{ kind = "reno" }"#,
        ] {
            let plan = plan(&scenario(cc)).unwrap_or_else(|e| panic!("{cc}: {e}"));
            assert!(plan.flows[0].cc == "cubic" || plan.flows[0].cc == "reno");
            assert_eq!(plan.flows[0].carrier, Carrier::Kernel);
            assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        }
        // Options (global to the host in Linux), a controller the kernel
        // lacks, AccECN, ECT(1): the QUIC-style transport with the same
        // controller, and a note saying why.
        let quic = Carrier::Own { transport: "quic" };
        for (cc, flow, why) in [
            (
                r#"{ kind = "cubic", hystart = false, beta = 0.5 }"#,
                "",
                "/sys/module/tcp_cubic/parameters",
            ),
            (
                r#"{ kind = "prague", rtt_scaling = "none" }"#,
                "",
                "this kernel has no prague",
            ),
            (r#""dctcp""#, "", "this kernel has no dctcp"),
            (r#""cubic""#, r#"ecn = "accecn""#, "cannot negotiate AccECN"),
            (
                r#""cubic""#,
                "transport.ecn_codepoint = \"ect1\"",
                "cannot send ECT(1)",
            ),
        ] {
            let p = plan(&scenario_with(&format!("cc = {cc}\n{flow}")))
                .unwrap_or_else(|e| panic!("{cc} {flow}: {e}"));
            assert_eq!(p.flows[0].carrier, quic, "{cc} {flow}");
            let note = p.notes.join("\n");
            assert!(
                note.contains("flows[0] (flow0): kernel TCP cannot carry it"),
                "{note}"
            );
            assert!(note.contains(why), "{note}");
            assert!(note.contains("QUIC-style transport"), "{note}");
            // The codepoint is carried over to the QUIC-style transport
            // (ECT(1) is why this one runs there), not noted as dropped.
            assert!(!note.contains("ecn_codepoint is not applied"), "{note}");
        }
        // A TCP key the QUIC-style transport does not apply is said, not dropped.
        let p = plan(&scenario_with(
            "cc = \"prague\"\ntransport.min_rto = \"1s\"",
        ))
        .unwrap();
        let note = p.notes.join("\n");
        assert!(
            note.contains("flows[0] (flow0).transport.min_rto is not applied: the flow runs"),
            "{note}"
        );
        // Already QUIC: no note.
        let p = plan(&scenario_with(r#"transport = { protocol = "quic" }"#)).unwrap();
        assert_eq!(p.flows[0].carrier, quic);
        assert!(p.notes.is_empty(), "{:?}", p.notes);
    }

    #[test]
    fn a_quic_flows_datagrams_must_fit_the_mtu() {
        let quic = |mss: u32| {
            scenario_with(&format!(
                "transport = {{ protocol = \"quic\", mss = {mss} }}"
            ))
        };
        check_datagram_sizes(&quic(1472), 1500).unwrap();
        let e = check_datagram_sizes(&quic(1473), 1500)
            .unwrap_err()
            .to_string();
        assert!(e.contains("flows[0] (flow0).transport.mss = 1473"), "{e}");
        assert!(e.contains("use mss = 1472 or less, or --mtu 1501"), "{e}");
        check_datagram_sizes(&quic(9000), 9028).unwrap();
        // TCP flows' mss is checked by the kernel (TCP_MAXSEG), not here.
        check_datagram_sizes(&scenario_with("transport = { mss = 9000 }"), 1500).unwrap();
    }

    /// Two laptops with different access delays, a phone without an
    /// access link: `extra` written under each host (TOML lines).
    fn hosts(laptop2: &str, phone: &str) -> Scenario {
        let text = format!(
            "format = 1\nduration = \"5s\"\n[bottleneck]\nrate = \"100Mbit\"\n\
             delay = \"5ms\"\nbuffer = \"100pkt\"\n\
             [hosts.l1]\nside = \"client\"\naccess_delay = \"2ms\"\n\
             access = {{ rate = \"10Mbit\", buffer = \"50pkt\" }}\n\
             [hosts.l2]\nside = \"client\"\naccess_delay = \"30ms\"\n{laptop2}\n\
             [hosts.phone]\nside = \"client\"\n{phone}\n\
             [[flows]]\nclient = \"l1\"\n[[flows]]\nclient = \"l2\"\n[[flows]]\nclient = \"phone\"\n"
        );
        let opts = ParseOptions {
            known_cc: shell::KERNEL_CC.to_vec(),
            trace_dirs: vec![],
        };
        l4slab_scenario::parse_with(&text, "t.toml", &[], &opts).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn access_links_carry_their_hosts_delays_and_the_rest_must_agree() {
        // Each laptop's link carries its own access delay (2 and 30 ms):
        // different per-flow delays, nothing folded into the bottleneck.
        let both = r#"access = { rate = "5Mbit", buffer = "50pkt" }"#;
        let p = plan(&hosts(both, "")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.extra_delay, [Dur::ZERO; 2]);
        // With the link in one direction only, the other direction's delay
        // is folded; the phone's (none) then disagrees.
        let up_only = r#"access = { up = { rate = "5Mbit", buffer = "50pkt" } }"#;
        let e = plan(&hosts(up_only, "")).unwrap_err().to_string();
        assert!(e.contains("flows[1] (flow1)"), "{e}");
        assert!(e.contains("30ms down, 0ns up"), "{e}");
        assert!(e.contains("[hosts.NAME.access]"), "{e}");
        // A phone whose delay no link carries: the same total for all or
        // refused, as without access links.
        let e = plan(&hosts(both, r#"access_delay = "1ms""#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("flows[2] (flow2)"), "{e}");
    }

    #[test]
    fn the_shell_refuses_every_key_it_would_drop_naming_it() {
        // `--set wifi.standard=a` used to run with no cell at all (exit 0);
        // the shell builds the cell now (shell.rs tests).
        for (set, fragment) in [
            ("hosts.laptop.access.rate=10Mbit", "no scenario hosts"),
            ("hosts.client.wifi.snr_db=20", "wifi.stations.snr_db=20"),
            ("hosts.client.access_delay=5ms", "no scenario hosts"),
            ("flows[0].cc=bbr", "no scenario flows"),
            ("duration=10s", "until COMMAND exits"),
        ] {
            let e = shell::resolve_links(&[set.to_string()]).unwrap_err();
            assert!(matches!(e, EmuError::Unsupported(_)), "{set}: {e}");
            let key = set.split('=').next().unwrap();
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("--set {key}: `l4slab emu` cannot honour it")),
                "{e}"
            );
            assert!(e.contains(fragment), "{e}");
        }
        // What the shell builds: the bottleneck (a trace, a loss model), the
        // Wi-Fi cell and the seed.
        let ok = [
            "bottleneck.rate=20Mbit",
            "wifi.standard=a",
            "wifi.stations.snr_db=20",
            "bottleneck.down.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\" }",
            "bottleneck.qdisc.kind=dualpi2",
            "seed=7",
        ];
        for set in ok {
            shell::resolve_links(&[set.to_string()]).unwrap_or_else(|e| panic!("{set}: {e}"));
        }
    }

    #[test]
    fn players_browsers_and_downloads_run_over_the_quic_style_transport_with_a_note() {
        let quic = Carrier::Own { transport: "quic" };
        for (app, note) in [
            (
                r#"{ kind = "video_stream" }"#,
                "video player runs over l4slab's QUIC-style transport on UDP (one stream per segment",
            ),
            (
                r#"{ kind = "web_browse" }"#,
                "browsing session runs over l4slab's QUIC-style transport on UDP: the same app as over TCP",
            ),
            (
                r#"{ kind = "download", size = "1MB", connections = 1 }"#,
                "this download runs over l4slab's QUIC-style transport on UDP, its bytes on one stream",
            ),
        ] {
            let p = plan(&scenario_with(&format!("app = {app}")))
                .unwrap_or_else(|e| panic!("{app}: {e}"));
            assert_eq!(p.flows[0].carrier, quic, "{app}");
            let notes = p.notes.join("\n");
            assert!(notes.starts_with("flows[0] (flow0): "), "{notes}");
            assert!(notes.contains(note), "{notes}");
        }
        // K connections are K flows, each its own QUIC connection; one note
        // per download, on its first part (an `every` restart is a download
        // of its own).
        let p = plan(&scenario_with(
            r#"app = { kind = "download", size = "8MB", connections = 4, every = "2s", stop = "1s" }"#,
        ))
        .unwrap();
        // 5 s: starts at 0, 2 and 4 s.
        assert_eq!(p.flows.len(), 12);
        assert!(p.flows.iter().all(|f| f.carrier == quic));
        let ports: std::collections::BTreeSet<u16> = p.flows.iter().map(|f| f.port).collect();
        assert_eq!(ports.len(), 12, "a port, so a connection, per part");
        assert_eq!(p.notes.len(), 3, "{:?}", p.notes);
        assert!(
            p.notes[0].contains("each of its 4 connections (this flow and the next 3"),
            "{:?}",
            p.notes
        );
        // With a controller the kernel lacks: the same carrier, that reason.
        let p = plan(&scenario_with(
            "cc = \"prague\"\napp = { kind = \"web_browse\" }",
        ))
        .unwrap();
        assert_eq!(p.flows[0].carrier, quic);
        assert!(
            p.notes[0].contains("this kernel has no prague"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn datagram_and_media_apps_run_on_own_endpoints_and_tcp_frame_apps_are_refused() {
        let p = plan(&scenario_with(
            r#"app = { kind = "cbr", rate = "5Mbit", size = "1200B" }"#,
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.flows[0].carrier, Carrier::Own { transport: "udp" });
        let p = plan(&scenario_with(
            r#"app = { kind = "video_call", transport = "rtp" }"#,
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.flows[0].carrier, Carrier::Own { transport: "rtp" });
        // Frames over TCP: over RTP only, with or without a kernel controller.
        for cc in ["cubic", "prague"] {
            let e = plan(&scenario_with(&format!(
                "cc = \"{cc}\"\napp = {{ kind = \"video_call\" }}"
            )))
            .unwrap_err()
            .to_string();
            assert!(e.contains(r#"flows[0] (flow0).app = "video_call""#), "{e}");
            assert!(e.contains("--backend sim"), "{e}");
            assert!(e.contains(r#"app.transport = "rtp""#), "{e}");
        }
        // The same flow with a bulk app runs on kernel TCP.
        let p = plan(&scenario_with(r#"app = "bulk""#)).unwrap();
        assert_eq!(p.flows[0].carrier, Carrier::Kernel);
    }

    #[test]
    fn a_multi_homed_host_is_refused_naming_its_paths() {
        let phone = "[hosts.phone]\nside = \"client\"\n\
                     [[hosts.phone.paths]]\nname = \"wifi\"\naccess = { rate = \"50Mbit\", buffer = \"100pkt\" }\n\
                     [[hosts.phone.paths]]\nname = \"lte\"\naccess = { rate = \"10Mbit\", buffer = \"100pkt\" }";
        let e = plan(&scenario_with(&format!(
            "app = \"bulk\"\nclient = \"phone\"\n{phone}"
        )));
        let e = e.unwrap_err();
        assert!(matches!(e, EmuError::Unsupported(_)), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("hosts.phone.paths")
                && e.contains("--backend sim")
                && e.contains("docs/emulator.md, \"Multi-homed hosts: not yet\""),
            "{e}"
        );
        // The section it points to is there.
        let docs = l4slab_core::param::docs_page("emulator.md").unwrap();
        assert!(docs.contains("\n## Multi-homed hosts: not yet\n"));
    }

    #[test]
    fn browsing_over_parallel_http1_connections_is_refused_one_multiplexed_runs() {
        // Its connections share one browser only the simulator wakes across
        // flows; each connection flow alone would browse on its own.
        let e = plan(&scenario_with(
            r#"app = { kind = "web_browse", connections = 6 }"#,
        ))
        .unwrap_err();
        assert!(matches!(e, EmuError::Unsupported(_)), "{e}");
        let e = e.to_string();
        assert!(e.contains(".app.connections"), "{e}");
        assert!(e.contains("--backend sim"), "{e}");
        let p = plan(&scenario_with(r#"app = { kind = "web_browse" }"#)).unwrap();
        assert_eq!(p.flows[0].carrier, Carrier::Own { transport: "quic" });
    }
}
