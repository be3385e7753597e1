//! The endpoints of `l4slab run --backend emu`: the kernel TCP sockets of
//! the scenario's flows and the one applications thread that drives them
//! (connect, accept, `bulk`/`file` writes, reads, `TCP_INFO` samples), while
//! the forwarder runs on its own CPU ([`crate::run`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use l4slab_bottleneck::flow::{
    CcSample, FlowInfo, FlowRecorder, FlowReport, FlowSample, PathCounts, TransportCounts,
};
use l4slab_core::{Dur, Rate, SeriesStore, Time};
use l4slab_scenario::{AppSpec, Direction, Scenario};

use crate::forwarder::SeriesRow;
use crate::netns;
use crate::probe::{self, TcpInfo};
use crate::run::{FlowPlan, Plan};
use crate::stats::round6;
use crate::sys::{self, sockopt, tcp, Clock, SockOpt};

/// How often `TCP_INFO` is read for RTT statistics.
pub const RTT_SAMPLE: Dur = Dur::from_millis(10);
/// Linux `TCP_INFINITE_SSTHRESH`.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// SCHED_FIFO priority of the applications thread: real-time, below the
/// forwarder's ([`shell::FORWARDER_PRIORITY`]); see [`Apps`].
pub const APPS_PRIORITY: i32 = 40;

// ------------------------------------------------------------------ sockets

/// Socket options shared by both ends of flow `f`.
pub(crate) fn socket_options(
    fd: RawFd,
    f: &l4slab_scenario::Flow,
    plan: &FlowPlan,
) -> io::Result<()> {
    let t = &f.transport;
    let d = l4slab_scenario::TransportSpec::default();
    // MSS: payload per segment; the kernel subtracts the timestamp option itself.
    let sock = ManuallyFd(fd);
    if t.mss != d.mss {
        sockopt::set(&sock, SockOpt::TcpMaxSeg, (t.mss + 12) as i32)?;
    }
    if t.send_buffer != d.send_buffer {
        let v = t.send_buffer.min(i32::MAX as u64) as i32;
        sockopt::set(&sock, SockOpt::SendBuffer, v)?;
    }
    if t.receive_buffer != d.receive_buffer {
        let v = t.receive_buffer.min(i32::MAX as u64) as i32;
        sockopt::set(&sock, SockOpt::RecvBuffer, v)?;
    }
    if let Some(l) = t.notsent_lowat {
        let v = l.min(i32::MAX as u64) as i32;
        sockopt::set(&sock, SockOpt::TcpNotsentLowat, v)?;
    }
    probe::set_congestion(&sock, &plan.cc)
}

/// TCP Fast Open on a listener (RFC 7413; Linux `TCP_FASTOPEN` takes the
/// queue length of pending Fast Open requests).
pub(crate) fn listener_fastopen(fd: RawFd, plan: &FlowPlan) -> io::Result<()> {
    if plan.fastopen {
        sockopt::set(&ManuallyFd(fd), SockOpt::TcpFastopen, 16)?;
    }
    Ok(())
}

/// A borrowed raw fd for the helpers that take `AsRawFd`.
struct ManuallyFd(RawFd);
impl AsRawFd for ManuallyFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

pub(crate) fn listen_on(port: u16) -> io::Result<OwnedFd> {
    let s = tcp::socket()?;
    sockopt::set(&s, SockOpt::ReuseAddr, 1)?;
    tcp::bind(&s, SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, port))?;
    tcp::listen(&s, 16)?;
    Ok(s)
}

fn transient(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || e.kind() == io::ErrorKind::Interrupted
        || e.raw_os_error() == Some(sys::errno::ENOTCONN)
        // A Fast Open connect in progress (TCP_FASTOPEN_CONNECT, non-blocking).
        || e.raw_os_error() == Some(sys::errno::EINPROGRESS)
}

// ------------------------------------------------------------------ applications

/// One flow's two sockets and what its applications did.
pub(crate) struct FlowRt {
    /// The flow's index in the scenario.
    pub(crate) index: usize,
    pub(crate) start: Time,
    pub(crate) down: bool,
    pub(crate) size: Option<u64>,
    pub(crate) listener: Option<OwnedFd>,
    pub(crate) client: Option<TcpStream>,
    pub(crate) server: Option<TcpStream>,
    pub(crate) started: bool,
    pub(crate) written: u64,
    pub(crate) write_done: bool,
    pub(crate) received: u64,
    pub(crate) eof: bool,
    /// When the last byte of a file was read (run time).
    pub(crate) completion: Option<Time>,
    /// The flow's recorder (series, window, summary entry) and its series.
    rec: FlowRecorder,
    series: SeriesStore,
    pub(crate) info: Option<TcpInfo>,
    /// The sender's congestion control as the kernel reports it.
    pub(crate) cc_in_use: Option<String>,
    pub(crate) error: Option<String>,
}

impl FlowRt {
    /// Flow `f` before it starts, with its listener in the server namespace.
    pub(crate) fn new(
        index: usize,
        f: &l4slab_scenario::Flow,
        warmup: Dur,
        listener: OwnedFd,
    ) -> FlowRt {
        let mut series = SeriesStore::default();
        let rec = FlowRecorder::new(&f.name, f.start, Time::ZERO + warmup, &mut series);
        FlowRt {
            index,
            start: f.start,
            down: f.direction == Direction::Down,
            size: match f.app {
                AppSpec::File(file) => Some(file.size),
                _ => None,
            },
            listener: Some(listener),
            client: None,
            server: None,
            started: false,
            written: 0,
            write_done: false,
            received: 0,
            eof: false,
            completion: None,
            rec,
            series,
            info: None,
            cc_in_use: None,
            error: None,
        }
    }

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
pub(crate) struct AppsOut {
    pub(crate) flows: Vec<FlowRt>,
    pub(crate) series: Vec<SeriesRow>,
    /// The thread's CPU time and run-queue wait over the run.
    pub(crate) sched: sys::SchedStat,
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
pub(crate) struct Apps<'a> {
    pub(crate) scn: &'a Scenario,
    pub(crate) plan: &'a Plan,
    pub(crate) client_ns: std::fs::File,
    pub(crate) clock: Clock,
    pub(crate) origin: Time,
    pub(crate) stop: Arc<AtomicBool>,
}

impl Apps<'_> {
    pub(crate) fn run(self, mut flows: Vec<FlowRt>) -> AppsOut {
        let sched0 = sys::SchedStat::now();
        let iv = self.scn.sample_interval;
        let mut next_sample = self.origin + iv;
        let mut next_rtt = self.origin + RTT_SAMPLE;
        let chunk = vec![0x5au8; 128 * 1024];
        let mut rbuf = vec![0u8; 256 * 1024];
        let mut pfds: Vec<sys::PollFd> = Vec::new();
        // The summary's window: bytes read and RTT samples from then on.
        let mut window_due = (!self.scn.warmup.is_zero()).then(|| self.origin + self.scn.warmup);
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if window_due.is_some_and(|w| now >= w) {
                window_due = None;
                for f in flows.iter_mut() {
                    f.rec.start_window(f.received);
                }
            }
            for f in flows.iter_mut() {
                if !f.started && now >= self.origin + (f.start - Time::ZERO) {
                    f.started = true;
                    if let Err(e) = self.connect(f) {
                        f.error = Some(format!("connect: {e}"));
                    }
                }
                if f.server.is_none() {
                    if let Some(l) = &f.listener {
                        match tcp::accept_nb(l) {
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
                    let want_cc = f.cc_in_use.is_none();
                    let Some(s) = f.sender() else { continue };
                    let info = probe::tcp_info(s);
                    let cc = want_cc.then(|| probe::congestion(s).ok()).flatten();
                    if let Ok(info) = info {
                        if info.rtt_us > 0 {
                            f.rec.record_rtt(Dur::from_micros(u64::from(info.rtt_us)));
                        }
                        f.info = Some(info);
                    }
                    if cc.is_some() {
                        f.cc_in_use = cc;
                    }
                }
                next_rtt += RTT_SAMPLE;
            }
            if now >= next_sample {
                let t = Time::ZERO + (next_sample - self.origin);
                let ts = round6(t.as_secs_f64());
                for f in flows.iter_mut() {
                    sample_flow(f, t, ts, iv);
                }
                next_sample += iv;
            }
            pfds.clear();
            for f in &flows {
                if f.server.is_none() {
                    if let Some(l) = &f.listener {
                        pfds.push(sys::PollFd::readable(l.as_raw_fd()));
                    }
                }
                let (snd, rcv) = if f.down {
                    (&f.server, &f.client)
                } else {
                    (&f.client, &f.server)
                };
                if let (Some(s), false) = (snd, f.write_done) {
                    pfds.push(sys::PollFd::writable(s.as_raw_fd()));
                }
                if let (Some(r), false) = (rcv, f.eof) {
                    pfds.push(sys::PollFd::readable(r.as_raw_fd()));
                }
            }
            let _ = sys::poll(&mut pfds, Some(Dur::from_millis(1)));
        }
        let series = flows.iter().flat_map(|f| series_rows(&f.series)).collect();
        AppsOut {
            flows,
            series,
            sched: sys::SchedStat::now().since(sched0),
        }
    }

    fn connect(&self, f: &mut FlowRt) -> io::Result<()> {
        let spec = &self.scn.flows[f.index];
        let plan = &self.plan.flows[f.index];
        let ip = if plan.ecn {
            netns::SERVER_ECN_ADDR
        } else {
            netns::SERVER_ADDR
        };
        let s = sys::in_netns(&self.client_ns, tcp::socket)?;
        socket_options(s.as_raw_fd(), spec, plan)?;
        if plan.fastopen && !f.down {
            // The connect is deferred to the first write, which rides in the
            // SYN with a cached cookie (else the SYN asks for one).
            sockopt::set(&s, SockOpt::TcpFastopenConnect, 1)?;
        }
        tcp::connect_nb(&s, SocketAddrV4::new(ip, plan.port))?;
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
                    f.completion = Some(Time::ZERO + now.saturating_since(origin));
                }
            }
        }
    }
}

/// The sender's `TCP_INFO` as the flow recorder's snapshot, `delivered`
/// the bytes the receiver read.
fn kernel_sample(i: &TcpInfo, delivered: u64) -> FlowSample<'static> {
    let mss = u64::from(i.snd_mss.max(1));
    FlowSample {
        delivered,
        cc: Some(CcSample::window(
            u64::from(i.snd_cwnd) * mss,
            (i.snd_ssthresh < INFINITE_SSTHRESH).then(|| u64::from(i.snd_ssthresh) * mss),
        )),
        // Bytes/s; ~0 when the socket has no pacing rate.
        pacing: (i.pacing_rate != u64::MAX)
            .then(|| Rate::from_bps(i.pacing_rate.saturating_mul(8))),
        inflight: Some(u64::from(i.unacked) * mss),
        srtt: Some(Dur::from_micros(u64::from(i.rtt_us))),
        ..FlowSample::default()
    }
}

fn sample_flow(f: &mut FlowRt, t: Time, ts: f64, iv: Dur) {
    let snap = match &f.info {
        Some(i) => kernel_sample(i, f.received),
        None => FlowSample {
            delivered: f.received,
            ..FlowSample::default()
        },
    };
    f.rec.sample(&mut f.series, t, ts, iv, &snap);
}

/// A flow's series rows, for the run's (sorted there).
pub(crate) fn series_rows(s: &SeriesStore) -> impl Iterator<Item = SeriesRow> + '_ {
    s.rows()
        .map(|(t, series, key, v)| (t, series.to_owned(), key.to_owned(), v))
}

impl FlowRt {
    /// The flow's entry of `summary.flows`, with `path` from the forwarder
    /// and `marks`, the CE marks on its data direction.
    pub(crate) fn summary_json(&self, scn: &Scenario, path: PathCounts, marks: u64) -> Value {
        let f = &scn.flows[self.index];
        let transport = match &self.info {
            Some(i) => TransportCounts {
                retransmits: Some(u64::from(i.total_retrans)),
                retransmitted_bytes: Some(i.bytes_retrans),
                ce_marks_received: Some(marks),
                ecn: Some(if i.ecn_negotiated() { "classic" } else { "off" }),
                segments_sent: Some(u64::from(i.segs_out)),
                cwnd_final_bytes: Some(u64::from(i.snd_cwnd) * u64::from(i.snd_mss)),
                ..TransportCounts::default()
            },
            // Never connected: nothing to read.
            None => TransportCounts::default(),
        };
        let report = FlowReport {
            info: FlowInfo {
                cc: Some(&f.cc.kind),
                app: f.app.kind(),
                transport: "tcp",
                down: self.down,
                client: Some(&scn.hosts[f.client].name),
                server: Some(&scn.hosts[f.server].name),
            },
            delivered: self.received,
            completion: self.completion,
            end: scn.duration,
            path: Some(path),
            transport,
            app_metrics: Value::Null,
        };
        let mut v = self.rec.summary(&report);
        let extra = json!({
            // What the sender's socket reported (`TCP_CONGESTION`): the
            // listener's choice reaches accepted sockets through the kernel.
            "kernel_cc": self.cc_in_use,
            "rtt_source": "tcp_info srtt every 10 ms",
            "delivered_ce": self.info.map(|i| i.delivered_ce),
            "error": self.error,
        });
        if let Value::Object(e) = extra {
            v.extend(e);
        }
        Value::Object(v)
    }
}
