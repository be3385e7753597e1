//! The endpoints of `l4slab run --backend emu`: the kernel TCP sockets of
//! the scenario's flows and the one applications thread that drives them
//! (connect, accept, `bulk`/`file` writes, reads, `TCP_INFO` samples), while
//! the forwarder runs on its own CPU ([`crate::run`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use l4slab_core::{Dur, Time};
use l4slab_scenario::{AppSpec, Direction, Scenario};

use crate::forwarder::SeriesRow;
use crate::netns;
use crate::probe::{self, TcpInfo};
use crate::run::{FlowPlan, Plan};
use crate::stats::{round6, DurStats};
use crate::sys::{self, cvt, setsockopt_int, Clock};

/// How often `TCP_INFO` is read for RTT statistics.
pub const RTT_SAMPLE: Dur = Dur::from_millis(10);
/// Linux `TCP_INFINITE_SSTHRESH`.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// SCHED_FIFO priority of the applications thread: real-time, below the
/// forwarder's ([`shell::FORWARDER_PRIORITY`]); see [`Apps`].
pub const APPS_PRIORITY: i32 = 40;

// ------------------------------------------------------------------ sockets

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
pub(crate) fn socket_options(
    fd: RawFd,
    f: &l4slab_scenario::Flow,
    plan: &FlowPlan,
) -> io::Result<()> {
    let t = &f.transport;
    let d = l4slab_scenario::TransportSpec::default();
    // MSS: payload per segment; the kernel subtracts the timestamp option itself.
    if t.mss != d.mss {
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, (t.mss + 12) as i32)?;
    }
    if t.send_buffer != d.send_buffer {
        setsockopt_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            t.send_buffer.min(i32::MAX as u64) as i32,
        )?;
    }
    if t.receive_buffer != d.receive_buffer {
        setsockopt_int(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            t.receive_buffer.min(i32::MAX as u64) as i32,
        )?;
    }
    if let Some(l) = t.notsent_lowat {
        setsockopt_int(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            l.min(i32::MAX as u64) as i32,
        )?;
    }
    let sock = ManuallyFd(fd);
    probe::set_congestion(&sock, &plan.cc)
}

/// TCP Fast Open on a listener (RFC 7413; Linux `TCP_FASTOPEN` takes the
/// queue length of pending Fast Open requests).
pub(crate) fn listener_fastopen(fd: RawFd, plan: &FlowPlan) -> io::Result<()> {
    if plan.fastopen {
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_FASTOPEN, 16)?;
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
    let s = tcp_socket()?;
    setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
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
        // A Fast Open connect in progress (TCP_FASTOPEN_CONNECT, non-blocking).
        || e.raw_os_error() == Some(libc::EINPROGRESS)
}

// ------------------------------------------------------------------ applications

/// One flow's two sockets and what its applications did.
pub(crate) struct FlowRt {
    /// The flow's index in the scenario.
    pub(crate) index: usize,
    pub(crate) name: String,
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
    /// `received` when the measurement window started (the scenario's
    /// `warmup`); the window's goodput counts from it.
    pub(crate) received_at_warmup: u64,
    pub(crate) eof: bool,
    pub(crate) completion: Option<Time>,
    pub(crate) rtt: DurStats,
    pub(crate) info: Option<TcpInfo>,
    /// The sender's congestion control as the kernel reports it.
    pub(crate) cc_in_use: Option<String>,
    pub(crate) rx_at_last_sample: u64,
    pub(crate) error: Option<String>,
}

impl FlowRt {
    /// Flow `f` before it starts, with its listener in the server namespace.
    pub(crate) fn new(index: usize, f: &l4slab_scenario::Flow, listener: OwnedFd) -> FlowRt {
        FlowRt {
            index,
            name: f.name.clone(),
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
            received_at_warmup: 0,
            eof: false,
            completion: None,
            // µs resolution up to 1000 s, as the simulator's RTT statistics.
            rtt: DurStats::new(1_000, 1_000_000_000),
            info: None,
            cc_in_use: None,
            rx_at_last_sample: 0,
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
        let mut series = Vec::new();
        let chunk = vec![0x5au8; 128 * 1024];
        let mut rbuf = vec![0u8; 256 * 1024];
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        // The summary's window: bytes read and RTT samples from then on.
        let mut window_due = (!self.scn.warmup.is_zero()).then(|| self.origin + self.scn.warmup);
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            if window_due.is_some_and(|w| now >= w) {
                window_due = None;
                for f in flows.iter_mut() {
                    f.received_at_warmup = f.received;
                    f.rtt.clear_totals();
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
                    let want_cc = f.cc_in_use.is_none();
                    let Some(s) = f.sender() else { continue };
                    let info = probe::tcp_info(s);
                    let cc = want_cc.then(|| probe::congestion(s).ok()).flatten();
                    if let Ok(info) = info {
                        if info.rtt_us > 0 {
                            f.rtt.record(Dur::from_micros(u64::from(info.rtt_us)));
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

    fn connect(&self, f: &mut FlowRt) -> io::Result<()> {
        let spec = &self.scn.flows[f.index];
        let plan = &self.plan.flows[f.index];
        let ip = if plan.ecn {
            netns::SERVER_ECN_ADDR
        } else {
            netns::SERVER_ADDR
        };
        let s = sys::in_netns(&self.client_ns, tcp_socket)?;
        socket_options(s.as_raw_fd(), spec, plan)?;
        if plan.fastopen && !f.down {
            // The connect is deferred to the first write, which rides in the
            // SYN with a cached cookie (else the SYN asks for one).
            setsockopt_int(
                s.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_FASTOPEN_CONNECT,
                1,
            )?;
        }
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
    let mut push = |k: &str, v: f64| out.push((ts, series.clone(), k.to_owned(), v));
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
