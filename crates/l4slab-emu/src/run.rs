//! `l4slab run SCENARIO --backend emu`: a scenario file carried by real
//! kernel TCP through the emulated bottleneck, with the simulator's results
//! contract (summary, series; DESIGN.md §5).
//!
//! * **Topology.** The scenario's hosts all map onto the one client and the
//!   one server namespace. Their access delays are added to the bottleneck
//!   delay, which is exact when every flow's path has the same total (the
//!   emulator refuses scenarios where they differ).
//! * **Flows.** Flow `i` is a TCP connection from the client namespace to
//!   port `5000 + i` on the server; the sender (server for `down`, client
//!   for `up`) uses the flow's congestion control (`TCP_CONGESTION`, per
//!   socket). Classic ECN is negotiated by connecting to the server address
//!   whose route has `features ecn` ([`crate::netns::SERVER_ECN_ADDR`]).
//!   `bulk` writes until the end; `file` writes its size, then closes.
//! * **What the kernel cannot do is refused**, with the reason: congestion
//!   controls it lacks (DCTCP, Prague: later carried by l4slab's own
//!   transport over UDP), AccECN (this kernel's `tcp_ecn` takes 0-2 only),
//!   ECT(1) on data (kernel TCP strips it).
//! * **Measurements.** Goodput is what the receiver read; cwnd, ssthresh,
//!   pacing rate, in-flight and RTT come from the sender's `TCP_INFO`,
//!   sampled every 10 ms (RTT percentiles are of the kernel's smoothed RTT
//!   at those samples: the kernel does not expose every RTT sample);
//!   queue sojourn, drops and marks come from the forwarder's qdisc, exactly
//!   as in the simulator. Knobs the kernel does not take per socket
//!   (initial window, delayed ACKs, minimum RTO, pacing) are listed in
//!   `summary.emulator.notes` when a scenario changes them.
//! * **Per-packet trace** (`packet_trace = true`): [`crate::pktlog`].
//! * **Timing.** The forwarder's timing report (actual minus intended
//!   release time of every packet) is in `summary.emulator`.

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use l4slab_core::{Dur, Time};
use l4slab_scenario::{AppSpec, Direction, EcnSpec, ParseOptions, Scenario};

use crate::forwarder::{self, Classifier, Forwarder, Hooks, SeriesRow, Step, DOWN, UP};
use crate::netns::{self, Topology};
use crate::probe::{self, TcpInfo};
use crate::shell::{self, RunTuning};
use crate::stats::{round6, DurStats};
use crate::sys::{self, Clock};
use crate::EmuError;

/// First server port; flow `i` uses `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5000;
/// Congestion controls the simulator knows that kernel TCP here does not have.
pub const L4S_ONLY_CC: &[&str] = &["dctcp", "prague", "bbr3"];
/// How often `TCP_INFO` is read for RTT statistics.
pub const RTT_SAMPLE: Dur = Dur::from_millis(10);
/// Linux `TCP_INFINITE_SSTHRESH`.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// SCHED_FIFO priority of the applications thread: real-time, below the
/// forwarder's ([`shell::FORWARDER_PRIORITY`]); see [`Apps`].
pub const APPS_PRIORITY: i32 = 40;

/// What a scenario asks of one flow, checked against the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowPlan {
    pub cc: String,
    /// Negotiate classic ECN.
    pub ecn: bool,
    pub port: u16,
}

/// A scenario the kernel can carry.
#[derive(Clone, Debug)]
pub struct Plan {
    pub flows: Vec<FlowPlan>,
    /// Access delays folded into each direction's one-way delay.
    pub extra_delay: Dur,
    /// Scenario settings kernel TCP does not honour per socket.
    pub notes: Vec<String>,
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
        &ParseOptions { known_cc: known },
    )?)
}

/// Check every flow against what kernel TCP here can do.
///
/// # Errors
/// [`EmuError::Unsupported`] naming the flow, the setting and why.
pub fn plan(scn: &Scenario) -> Result<Plan, EmuError> {
    let mut flows = Vec::new();
    let mut notes = Vec::new();
    let mut extra: Option<Dur> = None;
    let defaults = l4slab_scenario::TransportSpec::default();
    for (i, f) in scn.flows.iter().enumerate() {
        let at = format!("flows[{i}] ({})", f.name);
        if !shell::KERNEL_CC.contains(&f.cc.as_str()) {
            return Err(EmuError::Unsupported(format!(
                "{at}.cc = \"{}\": this kernel has no {} (only {}); such flows will be carried \
                 by l4slab's own transport over UDP in a later version. Run this scenario \
                 with --backend sim for now.",
                f.cc,
                f.cc,
                shell::KERNEL_CC.join(", ")
            )));
        }
        if !matches!(f.app, AppSpec::Bulk | AppSpec::File { .. }) {
            return Err(EmuError::Unsupported(format!(
                "{at}.app = \"{}\": the emulator's kernel-TCP flows run the bulk and file \
                 apps only; run this scenario with --backend sim, or run your own program \
                 through the bottleneck with `l4slab emu -- COMMAND`",
                f.app.kind()
            )));
        }
        let ecn = match f.ecn {
            None | Some(EcnSpec::Off) => false,
            Some(EcnSpec::Classic) => true,
            Some(EcnSpec::AccEcn) => {
                return Err(EmuError::Unsupported(format!(
                    "{at}.ecn = \"accecn\": this kernel cannot negotiate AccECN \
                     (net.ipv4.tcp_ecn accepts 0-2 only); use \"classic\" or --backend sim"
                )))
            }
        };
        match f.transport.ecn_codepoint {
            Some(l4slab_core::Ecn::Ect1) => {
                return Err(EmuError::Unsupported(format!(
                    "{at}.transport.ecn_codepoint = \"ect1\": kernel TCP cannot send ECT(1) \
                     (it clears the ECN bits of IP_TOS); use --backend sim"
                )))
            }
            Some(l4slab_core::Ecn::NotEct) if ecn => {
                return Err(EmuError::Unsupported(format!(
                    "{at}.transport.ecn_codepoint = \"not_ect\" with ECN on: kernel TCP always \
                     sends ECT(0) once ECN is negotiated"
                )))
            }
            _ => {}
        }
        let access = scn.hosts[f.client].access_delay + scn.hosts[f.server].access_delay;
        match extra {
            None => extra = Some(access),
            Some(e) if e == access => {}
            Some(e) => {
                return Err(EmuError::Unsupported(format!(
                    "{at}: its hosts' access delays add up to {access}, another flow's to {e}; \
                     the emulator gives every flow the same path, so all flows need the same \
                     total access delay"
                )))
            }
        }
        let t = &f.transport;
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
                t.pacing != defaults.pacing,
                "pacing (kernel TCP paces internally for bbr only)",
            ),
        ] {
            if differs {
                notes.push(format!(
                    "{at}.transport.{what} is not applied by kernel TCP"
                ));
            }
        }
        flows.push(FlowPlan {
            cc: f.cc.clone(),
            ecn,
            port: BASE_PORT + i as u16,
        });
    }
    Ok(Plan {
        flows,
        extra_delay: extra.unwrap_or(Dur::ZERO),
        notes,
    })
}

// ------------------------------------------------------------------ sockets

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn tcp_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain call.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_int(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: valid int pointer and size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(a.ip().octets()),
        },
        sin_zero: [0; 8],
    }
}

/// Socket options shared by both ends of flow `f`.
fn socket_options(fd: RawFd, f: &l4slab_scenario::Flow, plan: &FlowPlan) -> io::Result<()> {
    let t = &f.transport;
    let d = l4slab_scenario::TransportSpec::default();
    // MSS: payload per segment; the kernel subtracts the timestamp option itself.
    if t.mss != d.mss {
        set_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, (t.mss + 12) as i32)?;
    }
    if t.send_buffer != d.send_buffer {
        set_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            t.send_buffer.min(i32::MAX as u64) as i32,
        )?;
    }
    if t.receive_buffer != d.receive_buffer {
        set_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            t.receive_buffer.min(i32::MAX as u64) as i32,
        )?;
    }
    if let Some(l) = t.notsent_lowat {
        set_int(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            l.min(i32::MAX as u64) as i32,
        )?;
    }
    let sock = ManuallyFd(fd);
    probe::set_congestion(&sock, &plan.cc)
}

/// A borrowed raw fd for the helpers that take `AsRawFd`.
struct ManuallyFd(RawFd);
impl AsRawFd for ManuallyFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

fn listen_on(port: u16) -> io::Result<OwnedFd> {
    let s = tcp_socket()?;
    set_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let a = sockaddr(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, port));
    // SAFETY: valid sockaddr_in.
    cvt(unsafe {
        libc::bind(
            s.as_raw_fd(),
            (&a as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    // SAFETY: plain call.
    cvt(unsafe { libc::listen(s.as_raw_fd(), 16) })?;
    Ok(s)
}

fn connect_nb(s: &OwnedFd, to: SocketAddrV4) -> io::Result<()> {
    let a = sockaddr(to);
    // SAFETY: valid sockaddr_in.
    let r = unsafe {
        libc::connect(
            s.as_raw_fd(),
            (&a as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(())
    } else {
        Err(e)
    }
}

fn accept_nb(l: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    // SAFETY: no address requested.
    let fd = unsafe {
        libc::accept4(
            l.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd >= 0 {
        // SAFETY: fresh fd.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

fn transient(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || e.kind() == io::ErrorKind::Interrupted
        || e.raw_os_error() == Some(libc::ENOTCONN)
}

// ------------------------------------------------------------------ applications

struct FlowRt {
    name: String,
    start: Time,
    down: bool,
    size: Option<u64>,
    listener: Option<OwnedFd>,
    client: Option<TcpStream>,
    server: Option<TcpStream>,
    started: bool,
    written: u64,
    write_done: bool,
    received: u64,
    eof: bool,
    completion: Option<Time>,
    rtt: DurStats,
    info: Option<TcpInfo>,
    rx_at_last_sample: u64,
    error: Option<String>,
}

impl FlowRt {
    fn sender(&mut self) -> Option<&mut TcpStream> {
        if self.down {
            self.server.as_mut()
        } else {
            self.client.as_mut()
        }
    }
    fn receiver(&mut self) -> Option<&mut TcpStream> {
        if self.down {
            self.client.as_mut()
        } else {
            self.server.as_mut()
        }
    }
}

/// What the applications thread hands back.
struct AppsOut {
    flows: Vec<FlowRt>,
    series: Vec<SeriesRow>,
    /// The thread's CPU time and run-queue wait over the run.
    sched: sys::SchedStat,
}

/// The scenario's endpoints: one thread doing every socket call of every
/// flow (connect, accept, write, read, `TCP_INFO`).
///
/// It runs SCHED_FIFO (below the forwarder) when the run is real-time:
/// the endpoints of a real path run on their own hosts, but here they share
/// two CPUs with whatever else the machine runs. Measured on the project VM
/// (docs/emulator.md, "Simulator and emulator side by side"): as a normal
/// thread it waited on a busy run queue for milliseconds at a time, and
/// every such wait while it held a socket (inside `read`/`write`, the
/// socket lock defers incoming segments to the backlog) turned into a
/// stretch ACK of 5-57 segments from the receiver and a burst of as many
/// segments from the sender, which raised CoDel's queue delay with the
/// machine's load (4.0-6.6 ms instead of the simulator's 3.1 ms for
/// `scenarios/emu/cubic-codel.toml`); as a real-time thread its ACK and
/// burst pattern and the queue delay (3.0-3.4 ms) match the simulator's.
struct Apps<'a> {
    scn: &'a Scenario,
    plan: &'a Plan,
    client_ns: std::fs::File,
    clock: Clock,
    origin: Time,
    stop: Arc<AtomicBool>,
}

impl Apps<'_> {
    fn run(self, mut flows: Vec<FlowRt>) -> AppsOut {
        let sched0 = sys::SchedStat::now();
        let iv = self.scn.sample_interval;
        let mut next_sample = self.origin + iv;
        let mut next_rtt = self.origin + RTT_SAMPLE;
        let mut series = Vec::new();
        let chunk = vec![0x5au8; 128 * 1024];
        let mut rbuf = vec![0u8; 256 * 1024];
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            for (i, f) in flows.iter_mut().enumerate() {
                if !f.started && now >= self.origin + (f.start - Time::ZERO) {
                    f.started = true;
                    if let Err(e) = self.connect(i, f) {
                        f.error = Some(format!("connect: {e}"));
                    }
                }
                if f.server.is_none() {
                    if let Some(l) = &f.listener {
                        match accept_nb(l) {
                            Ok(Some(s)) => f.server = Some(TcpStream::from(s)),
                            Ok(None) => {}
                            Err(e) => {
                                // Give up on the flow: a listener left in the
                                // poll set would keep a real-time thread spinning.
                                f.error = Some(format!("accept: {e}"));
                                f.listener = None;
                            }
                        }
                    }
                }
                Self::move_data(f, &chunk, &mut rbuf, self.origin, now);
            }
            if now >= next_rtt {
                for f in flows.iter_mut() {
                    if let Some(s) = f.sender() {
                        if let Ok(info) = probe::tcp_info(s) {
                            if info.rtt_us > 0 {
                                f.rtt.record(Dur::from_micros(u64::from(info.rtt_us)));
                            }
                            f.info = Some(info);
                        }
                    }
                }
                next_rtt += RTT_SAMPLE;
            }
            if now >= next_sample {
                let ts = round6((next_sample - self.origin).as_secs_f64());
                for f in flows.iter_mut() {
                    sample_flow(f, ts, iv, &mut series);
                }
                next_sample += iv;
            }
            pfds.clear();
            for f in &flows {
                if f.server.is_none() {
                    if let Some(l) = &f.listener {
                        pfds.push(pollfd(l.as_raw_fd(), libc::POLLIN));
                    }
                }
                let (snd, rcv) = if f.down {
                    (&f.server, &f.client)
                } else {
                    (&f.client, &f.server)
                };
                if let (Some(s), false) = (snd, f.write_done) {
                    pfds.push(pollfd(s.as_raw_fd(), libc::POLLOUT));
                }
                if let (Some(r), false) = (rcv, f.eof) {
                    pfds.push(pollfd(r.as_raw_fd(), libc::POLLIN));
                }
            }
            // SAFETY: `pfds` is a valid array of its length.
            unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 1) };
        }
        AppsOut {
            flows,
            series,
            sched: sys::SchedStat::now().since(sched0),
        }
    }

    fn connect(&self, i: usize, f: &mut FlowRt) -> io::Result<()> {
        let spec = &self.scn.flows[i];
        let plan = &self.plan.flows[i];
        let ip = if plan.ecn {
            netns::SERVER_ECN_ADDR
        } else {
            netns::SERVER_ADDR
        };
        let s = sys::in_netns(&self.client_ns, tcp_socket)?;
        socket_options(s.as_raw_fd(), spec, plan)?;
        connect_nb(&s, SocketAddrV4::new(ip, plan.port))?;
        f.client = Some(TcpStream::from(s));
        Ok(())
    }

    fn move_data(f: &mut FlowRt, chunk: &[u8], rbuf: &mut [u8], origin: Time, now: Time) {
        let size = f.size;
        if !f.write_done {
            let mut written = f.written;
            let mut done = false;
            let mut err = None;
            if let Some(s) = f.sender() {
                loop {
                    let want = size.map_or(chunk.len() as u64, |n| {
                        (n - written).min(chunk.len() as u64)
                    });
                    if want == 0 {
                        let _ = s.shutdown(std::net::Shutdown::Write);
                        done = true;
                        break;
                    }
                    match s.write(&chunk[..want as usize]) {
                        Ok(0) => break,
                        Ok(n) => written += n as u64,
                        Err(e) if transient(&e) => break,
                        Err(e) => {
                            err = Some(format!("write: {e}"));
                            done = true;
                            break;
                        }
                    }
                }
            }
            f.written = written;
            f.write_done = done;
            if err.is_some() {
                f.error = err;
            }
        }
        if !f.eof {
            let mut got = 0u64;
            let mut eof = false;
            if let Some(r) = f.receiver() {
                loop {
                    match r.read(rbuf) {
                        Ok(0) => {
                            eof = true;
                            break;
                        }
                        Ok(n) => got += n as u64,
                        Err(e) if transient(&e) => break,
                        Err(_) => {
                            eof = true;
                            break;
                        }
                    }
                }
            }
            f.received += got;
            f.eof = eof;
            if let (Some(n), None) = (f.size, f.completion) {
                if f.received >= n {
                    f.completion =
                        Some(Time::ZERO + now.saturating_since(origin + (f.start - Time::ZERO)));
                }
            }
        }
    }
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

fn sample_flow(f: &mut FlowRt, ts: f64, iv: Dur, out: &mut Vec<SeriesRow>) {
    let series = format!("flow/{}", f.name);
    let mut push = |k: &'static str, v: f64| out.push((ts, series.clone(), k, v));
    let rx = f.received - f.rx_at_last_sample;
    f.rx_at_last_sample = f.received;
    if f.started {
        push("goodput_bps", (rx as f64 * 8.0 / iv.as_secs_f64()).round());
    }
    if let Some(i) = f.info {
        let mss = f64::from(i.snd_mss.max(1));
        push("cwnd_bytes", f64::from(i.snd_cwnd) * mss);
        if i.snd_ssthresh < INFINITE_SSTHRESH {
            push("ssthresh_bytes", f64::from(i.snd_ssthresh) * mss);
        }
        push("pacing_bps", (i.pacing_rate as f64 * 8.0).round());
        push("inflight_bytes", f64::from(i.unacked) * mss);
        push("srtt_ms", round6(f64::from(i.rtt_us) / 1000.0));
    }
    if let Some((mean, _)) = f.rtt.take_interval() {
        push("rtt_ms", round6(mean));
    }
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
        match signals.iter().find(|&&s| s != libc::SIGCHLD) {
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

/// Run `scn` with kernel TCP through the emulator; returns what
/// `l4slab._native.run` returns (`summary_json`, `series`, `packets`, `stats`).
///
/// # Errors
/// [`EmuError`]: unsupported flows (before anything is created), no root,
/// setup failures, or an interruption (SIGINT/SIGTERM: nothing is returned).
pub fn run(scn: &Scenario, seed: u64, tuning: &RunTuning) -> Result<Value, EmuError> {
    let plan = plan(scn)?;
    if !sys::is_root() {
        return Err(EmuError::NotRoot);
    }
    let sigfd = sys::signalfd().map_err(|e| EmuError::io("signalfd", e))?;
    let mut topo = Topology::create(tuning.mtu, tuning.reaper.as_deref())?;
    // Access delays ride on the bottleneck delay (same total for every flow).
    let mut links_scn = scn.clone();
    links_scn.bottleneck.down.delay += plan.extra_delay;
    links_scn.bottleneck.up.delay += plan.extra_delay;
    let clock = Clock::start();
    let cpu0 = sys::cpu_times();
    let ports: Vec<u16> = plan.flows.iter().map(|f| f.port).collect();
    let mut fwd = Forwarder::new(
        shell::build_links(&links_scn, seed),
        topo.tun_fds(),
        Some(sigfd.as_raw_fd()),
        clock,
        forwarder::Config {
            mtu: tuning.mtu as usize,
            spin: tuning.spin,
            malformed: tuning.malformed,
            classifier: Classifier::Ports(ports),
            sample_interval: Some(scn.sample_interval),
            record_series: true,
            coalesce: tuning.coalesce,
            min_sleep: tuning.min_sleep,
            packet_log: scn.packet_trace.then(|| {
                scn.flows
                    .iter()
                    .map(|f| f.direction == Direction::Down)
                    .collect()
            }),
        },
    )?;
    // Listeners in the server namespace, before any flow starts.
    let mut flows = Vec::new();
    for (i, f) in scn.flows.iter().enumerate() {
        let p = &plan.flows[i];
        let l = sys::in_netns(&topo.server.fd, || listen_on(p.port))
            .and_then(|l| socket_options(l.as_raw_fd(), f, p).map(|()| l))
            .map_err(|e| EmuError::io(&format!("listening for flow {}", f.name), e))?;
        flows.push(FlowRt {
            name: f.name.clone(),
            start: f.start,
            down: f.direction == Direction::Down,
            size: match f.app {
                AppSpec::File { size } => Some(size),
                _ => None,
            },
            listener: Some(l),
            client: None,
            server: None,
            started: false,
            written: 0,
            write_done: false,
            received: 0,
            eof: false,
            completion: None,
            // µs resolution up to 1000 s, as the simulator's RTT statistics.
            rtt: DurStats::new(1_000, 1_000_000_000),
            info: None,
            rx_at_last_sample: 0,
            error: None,
        });
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
    let apps_out = std::thread::scope(|scope| -> Result<AppsOut, EmuError> {
        let apps = Apps {
            scn,
            plan: &plan,
            client_ns,
            clock,
            origin,
            stop: stop.clone(),
        };
        let cpus = app_cpus.clone();
        // `L4SLAB_APPS_REALTIME=0`: experiment switch to reproduce the
        // measurement in the comment on [`Apps`].
        let realtime =
            tuning.realtime && std::env::var("L4SLAB_APPS_REALTIME").as_deref() != Ok("0");
        let handle = scope.spawn(move || {
            if let Some(c) = cpus {
                let _ = sys::set_affinity(&c);
            }
            if realtime {
                // Best effort, as for the forwarder: without it the run is
                // still correct, only more exposed to the machine's load.
                let _ = sys::realtime(APPS_PRIORITY);
            }
            apps.run(flows)
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
        r?;
        if let Some(s) = hooks.stopped_by_signal {
            return Err(EmuError::Interrupted(s));
        }
        Ok(out)
    });
    let wall = fwd.elapsed();
    let queues = fwd.queues_json();
    let forwarder_report = fwd.forwarder_json(cpu0);
    let mut series = std::mem::take(&mut fwd.series);
    let per_flow: Vec<(u64, u64, u64, Value)> = (0..scn.flows.len())
        .map(|i| {
            let data_dir = if scn.flows[i].direction == Direction::Down {
                DOWN
            } else {
                UP
            };
            let ack_dir = 1 - data_dir;
            let data = &fwd.dirs[data_dir].rec.per_flow[i];
            let acks = &fwd.dirs[ack_dir].rec.per_flow[i];
            // Wire losses (DropReason::LinkLoss) are traced as drops too.
            (
                data.drops,
                acks.drops,
                data.marks,
                data.sojourn
                    .as_ref()
                    .map_or(Value::Null, DurStats::summary_ms),
            )
        })
        .collect();
    let sojourn_by_flow: [Map<String, Value>; 2] = [DOWN, UP].map(|d| {
        fwd.dirs[d]
            .rec
            .per_flow
            .iter()
            .zip(&scn.flows)
            .filter_map(|(r, f)| r.sojourn.as_ref().map(|h| (f.name.clone(), h.summary_ms())))
            .collect()
    });
    let packets = fwd.dirs.iter().map(|d| d.counters.packets_in).sum::<u64>();
    let packet_log = fwd.packet_log.take().map(|l| l.to_json());
    drop(fwd);
    let counters = json!({
        "client": Topology::tcp_counters(&topo.client),
        "server": Topology::tcp_counters(&topo.server),
    });
    topo.teardown();
    let mut apps_out = apps_out?;
    series.append(&mut apps_out.series);
    let mut queues = queues;
    for (d, name) in forwarder::QUEUE_NAMES.iter().enumerate() {
        queues[*name]["sojourn_ms_by_flow"] = Value::Object(sojourn_by_flow[d].clone());
    }
    let mut flows_json = Map::new();
    for (i, (f, rt)) in scn.flows.iter().zip(&apps_out.flows).enumerate() {
        let info = rt.info.unwrap_or_default();
        let until = rt
            .completion
            .map_or(scn.duration.saturating_since(f.start), |c| c - Time::ZERO);
        let goodput = if until.as_secs_f64() > 0.0 {
            rt.received as f64 * 8.0 / until.as_secs_f64()
        } else {
            0.0
        };
        let (lost, ack_lost, marks, _) = &per_flow[i];
        flows_json.insert(
            f.name.clone(),
            json!({
                "cc": f.cc,
                "app": f.app.kind(),
                "direction": if f.direction == Direction::Down { "down" } else { "up" },
                "client": scn.hosts[f.client].name,
                "server": scn.hosts[f.server].name,
                "start_s": round6(f.start.as_secs_f64()),
                "goodput_bps": goodput.round(),
                "bytes_delivered": rt.received,
                "completion_s": rt.completion.map(|c| round6(c.as_secs_f64())),
                "rtt_ms": rt.rtt.summary_ms(),
                "rtt_source": "tcp_info srtt every 10 ms",
                "retransmits": info.total_retrans,
                "retransmitted_bytes": info.bytes_retrans,
                "lost_packets": lost,
                "ack_packets_lost": ack_lost,
                "ce_marks_received": marks,
                "delivered_ce": info.delivered_ce,
                "ecn": if info.ecn_negotiated() { "classic" } else { "off" },
                "segments_sent": info.segs_out,
                "cwnd_final_bytes": u64::from(info.snd_cwnd) * u64::from(info.snd_mss),
                "error": rt.error,
            }),
        );
    }
    let summary = json!({
        "format_version": 1,
        "tool_version": env!("CARGO_PKG_VERSION"),
        "backend": "emu",
        "seed": seed,
        "duration_s": round6(scn.duration.as_secs_f64()),
        "scenario": serde_json::to_value(scn).expect("scenario serializes"),
        "flows": flows_json,
        "queues": queues,
        "emulator": {
            "timing_error_us": forwarder_report["timing_error_us"].clone(),
            "forwarder": forwarder_report,
            "access_delay_added_ms": plan.extra_delay.as_millis_f64(),
            "notes": plan.notes,
            "kernel": kernel_release(),
            "threads": {
                "forwarder": sched_json(fwd_sched),
                "applications": sched_json(apps_out.sched),
            },
            "kernel_tcp_counters": counters,
        },
    });
    series.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let (t_s, names, keys, values): (Vec<f64>, Vec<String>, Vec<&str>, Vec<f64>) =
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
