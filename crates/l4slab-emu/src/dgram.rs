//! The emulator's flows that kernel TCP does not carry: l4slab's own
//! endpoints on real UDP sockets in the two namespaces.
//!
//! * **Which flows.** Flows over the QUIC-style transport
//!   (`transport.protocol = "quic"`), datagram apps (`ping`, `cbr`) and the
//!   RTP media apps, and TCP `bulk`/`file`/`web` flows the kernel cannot
//!   carry (a congestion control it lacks such as Prague, DCTCP or BBRv3,
//!   controller options, AccECN, ECT(1)): those run over the QUIC-style
//!   transport with the same controller, and `summary.emulator.notes` says
//!   so ([`crate::run::plan`]).
//! * **Same code as the simulator.** Each flow's application is built by
//!   [`l4slab_scenario::flow_app`], the simulator's own builder: the same
//!   `FlowApp` object, with the same connection, controller, pacing and ECN
//!   validation code, sees both ends of its flow. This module only clocks it
//!   and carries its datagrams: it is the simulator's engine with sockets in
//!   place of queues.
//! * **Sockets.** Flow `i`'s server end is a UDP socket bound to port
//!   `BASE_PORT + i` in the server namespace (the forwarder classifies the
//!   flow by that port, as for TCP), its client end a socket on the client
//!   address; each datagram carries its IP-ECN field per packet
//!   (`IP_TOS` cmsg) and the receiver reads the field the path left
//!   (`IP_RECVTOS`). A QUIC flow's datagrams are its packets' bytes; a
//!   datagram app's [`Datagram`] (size, ECN and a tag the app recognises it
//!   by) travels as `payload` bytes whose first 8 are the tag.
//! * **Network input.** The sockets are unconnected, so anything can reach
//!   them: a datagram from another address than the flow's other end
//!   (foreign) or too short to hold a tag (truncated) is dropped here; the
//!   app ignores what it did not send (an unknown tag, a duplicate). Both
//!   are counted in the flow's `datagrams_ignored`; nothing panics.
//! * **Timing.** One thread runs every such flow: l4slab-sys's real-time
//!   [`sys::Waiter`] sleeps in `epoll_pwait2` until the earliest wake-up
//!   any flow asked for (a binary heap; with epoll, neither finding it nor
//!   the ready sockets costs more with more flows), with 1 ns timer slack,
//!   and polls the sockets without sleeping for the last [`SPIN`] before
//!   it (the waiter spins only at real-time priority); it runs real-time
//!   like the kernel flows' thread
//!   ([`crate::apps::Apps`]). How late each wake-up fired is in
//!   `summary.emulator.datagram_endpoints.wakeup_late_us`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use l4slab_app::{AppIo, Datagram, DatagramsIgnored, FlowApp, FlowIo, Role, SocketInfo};
use l4slab_bottleneck::flow::{
    CcSample, FlowInfo, FlowRecorder, FlowReport, FlowSample, PathCounts, TransportCounts, UpDown,
};
use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Ecn, SeriesStore, Time};
use l4slab_scenario::{Direction, Scenario};
use l4slab_sys::{UdpError, UdpSocket};

use crate::apps::series_rows;
use crate::forwarder::SeriesRow;
use crate::netns;
use crate::sys::{self, Clock};

/// Poll the sockets without sleeping for this long before a wake-up
/// (a `ppoll` timeout fires tens of µs late on this VM: docs/PERFORMANCE.md).
pub const SPIN: Dur = Dur::from_micros(50);
/// Sleep at most this long, to notice the end of the run (and then sleep
/// again: the [`SPIN`] is spent only before a real wake-up).
const MAX_SLEEP: Dur = Dur::from_millis(5);
/// Datagrams read from one socket before looking at the timers again.
const RECV_BATCH: usize = 64;
/// The largest datagram either way (a UDP payload over IPv4).
const MAX_DATAGRAM: usize = 65_507;
/// Bytes of a [`Datagram`]'s tag at the start of its payload.
const TAG_BYTES: usize = 8;
/// Socket buffers: room for a window of datagrams at the rates a scenario
/// runs (the sender never blocks; a refused datagram is counted as lost).
const SOCKET_BUFFER: usize = 4 << 20;

const CLIENT: usize = 0;
const SERVER: usize = 1;

fn role(side: usize) -> Role {
    if side == CLIENT {
        Role::Client
    } else {
        Role::Server
    }
}

/// What one side of a flow sent and what its socket refused.
#[derive(Clone, Copy, Debug, Default)]
struct SideCounts {
    datagrams_sent: u64,
    bytes_sent: u64,
    datagrams_received: u64,
    /// Datagrams the socket refused (full buffer, or a kernel error): lost
    /// before the path, like a host queue overflowing.
    send_refused: u64,
}

/// One flow carried by l4slab's own endpoints.
pub(crate) struct DgramFlow {
    pub(crate) index: usize,
    pub(crate) name: String,
    /// Offset of the flow's start from the run's origin.
    pub(crate) start: Time,
    /// The app sends [`FlowIo::send_bytes`] datagrams (QUIC); else
    /// [`Datagram`]s.
    bytes: bool,
    pub(crate) app: Box<dyn FlowApp>,
    socks: [UdpSocket; 2],
    /// Where each side sends to.
    peer: [SocketAddr; 2],
    /// The wake-up each side asked for (app time), the armed heap entry.
    wake: [Option<Time>; 2],
    started: bool,
    counts: [SideCounts; 2],
    /// Datagrams dropped before the app (foreign, truncated).
    ignored: DatagramsIgnored,
    /// The flow's recorder (series, window, summary entry) and its series.
    rec: FlowRecorder,
    series: SeriesStore,
    pub(crate) error: Option<String>,
}

impl DgramFlow {
    /// Flow `index` of `scn` running `app`, its server socket bound in
    /// `server_ns` to `port`, its client socket in `client_ns`.
    pub(crate) fn new(
        scn: &Scenario,
        index: usize,
        app: Box<dyn FlowApp>,
        bytes: bool,
        port: u16,
        client_ns: &std::fs::File,
        server_ns: &std::fs::File,
    ) -> std::io::Result<DgramFlow> {
        let f = &scn.flows[index];
        let server_addr = SocketAddr::new(IpAddr::V4(netns::SERVER_ADDR), port);
        let bind = |ns: &std::fs::File, at: SocketAddr| {
            sys::in_netns(ns, || {
                let s = UdpSocket::bind(at).map_err(std::io::Error::other)?;
                s.set_buffer_sizes(SOCKET_BUFFER, SOCKET_BUFFER)
                    .map_err(std::io::Error::other)?;
                Ok(s)
            })
        };
        let server = bind(server_ns, server_addr)?;
        let client = bind(
            client_ns,
            SocketAddr::new(IpAddr::V4(netns::CLIENT_ADDR), 0),
        )?;
        let client_addr = client.local_addr().map_err(std::io::Error::other)?;
        let mut series = SeriesStore::default();
        let window = Time::ZERO + scn.warmup;
        let rec = FlowRecorder::new(&f.name, f.start, window, &mut series);
        Ok(DgramFlow {
            index,
            name: f.name.clone(),
            start: f.start,
            bytes,
            app,
            socks: [client, server],
            peer: [server_addr, client_addr],
            wake: [None; 2],
            started: false,
            counts: [SideCounts::default(); 2],
            ignored: DatagramsIgnored::default(),
            rec,
            series,
            error: None,
        })
    }

    fn delivered(&self) -> u64 {
        self.app.delivered_bytes().unwrap_or(0)
    }
}

/// The [`FlowIo`] a flow's app gets on one side: that side's socket.
struct EmuIo<'a> {
    sock: &'a UdpSocket,
    to: SocketAddr,
    wake: &'a mut Option<Time>,
    counts: &'a mut SideCounts,
    error: &'a mut Option<String>,
    scratch: &'a mut [u8],
}

impl EmuIo<'_> {
    /// Send `data`, or else the first `len` bytes of the scratch buffer.
    fn send(&mut self, len: usize, ecn: Ecn, data: Option<&[u8]>) {
        let buf = data.unwrap_or(&self.scratch[..len]);
        match self.sock.send_to(buf, self.to, ecn) {
            Ok(_) => {
                self.counts.datagrams_sent += 1;
                self.counts.bytes_sent += len as u64;
            }
            Err(e) if e.is_transient() => self.counts.send_refused += 1,
            // Refused for its own sake (EMSGSIZE, ...): dropped as a lossy
            // host would, and said once.
            Err(e) => {
                self.counts.send_refused += 1;
                self.error.get_or_insert_with(|| format!("send: {e}"));
            }
        }
    }
}

impl AppIo for EmuIo<'_> {
    fn write(&mut self, _bytes: u64) -> u64 {
        // The plan gives this thread datagram apps only.
        debug_assert!(false, "a datagram flow has no TCP stream");
        0
    }
    fn wake_at(&mut self, at: Time) {
        if self.wake.is_none_or(|w| at < w) {
            *self.wake = Some(at);
        }
    }
    fn finish(&mut self) {}
    fn info(&self) -> SocketInfo {
        SocketInfo::default()
    }
}

impl FlowIo for EmuIo<'_> {
    fn send_datagram(&mut self, dg: Datagram) {
        let len = (dg.payload as usize).clamp(TAG_BYTES, MAX_DATAGRAM);
        self.scratch[..TAG_BYTES].copy_from_slice(&dg.tag.to_le_bytes());
        self.send(len, dg.ecn, None);
    }
    fn send_bytes(&mut self, data: &[u8], ecn: Ecn) {
        self.send(data.len(), ecn, Some(data));
    }
}

/// What the datagram thread hands back.
pub(crate) struct DgramOut {
    pub(crate) flows: Vec<DgramFlow>,
    pub(crate) series: Vec<SeriesRow>,
    pub(crate) sched: sys::SchedStat,
    /// How late timed wake-ups fired.
    pub(crate) late: DurStats,
}

/// The thread that runs every [`DgramFlow`].
pub(crate) struct Dgrams<'a> {
    pub(crate) scn: &'a Scenario,
    pub(crate) clock: Clock,
    pub(crate) origin: Time,
    pub(crate) stop: Arc<AtomicBool>,
}

/// A heap entry: a side's wake-up (app time), or a flow's start.
type Due = Reverse<(Time, usize, usize)>;
/// `side` value of a flow-start entry.
const START: usize = 2;

impl Dgrams<'_> {
    /// App time (since the run's origin) at clock time `t`.
    fn app_time(&self, t: Time) -> Time {
        Time::ZERO + t.saturating_since(self.origin)
    }

    pub(crate) fn run(self, mut flows: Vec<DgramFlow>) -> DgramOut {
        let sched0 = sys::SchedStat::now();
        let mut waiter = sys::Waiter::new(
            self.clock,
            sys::WaiterConfig {
                spin: SPIN,
                min_sleep: Dur::ZERO,
                max_sleep: Some(MAX_SLEEP),
                timer_slack: Some(Dur::from_nanos(1)),
                fair_slice: None,
            },
        );
        let iv = self.scn.sample_interval;
        let mut next_sample = Time::ZERO + iv;
        let mut window_due = (!self.scn.warmup.is_zero()).then_some(Time::ZERO + self.scn.warmup);
        let mut scratch = vec![0u8; MAX_DATAGRAM];
        let mut rbuf = vec![0u8; MAX_DATAGRAM];
        let mut late = sys::lateness_stats();
        let mut heap: BinaryHeap<Due> = flows
            .iter()
            .enumerate()
            .map(|(i, f)| Reverse((f.start, i, START)))
            .collect();
        let mut poller = match poller(
            flows
                .iter()
                .flat_map(|f| f.socks.iter())
                .map(AsRawFd::as_raw_fd),
        ) {
            Ok(p) => p,
            Err(e) => {
                for f in flows.iter_mut() {
                    f.error = Some(format!("epoll: {e}"));
                }
                return DgramOut {
                    flows,
                    series: Vec::new(),
                    sched: sys::SchedStat::now().since(sched0),
                    late,
                };
            }
        };
        while !self.stop.load(Ordering::Relaxed) {
            let mut now = self.app_time(self.clock.now());
            // Timers and starts that are due, in time order.
            while let Some(&Reverse((at, i, side))) = heap.peek() {
                if at > now {
                    break;
                }
                heap.pop();
                let f = &mut flows[i];
                if side == START {
                    f.started = true;
                    late.record(now.saturating_since(at));
                    // Datagram apps: both ends are ready at once (as in the simulator).
                    for s in [CLIENT, SERVER] {
                        call(f, s, &mut scratch, &mut heap, i, |app, r, io| {
                            app.on_connected(now, r, io)
                        });
                    }
                } else if f.wake[side] == Some(at) {
                    f.wake[side] = None;
                    late.record(now.saturating_since(at));
                    call(f, side, &mut scratch, &mut heap, i, |app, r, io| {
                        app.on_timer(now, r, io)
                    });
                }
                now = self.app_time(self.clock.now());
            }
            if window_due.is_some_and(|w| now >= w) {
                window_due = None;
                for f in flows.iter_mut() {
                    let delivered = f.delivered();
                    f.rec.start_window(delivered);
                }
            }
            if now >= next_sample {
                let ts = round6(next_sample.as_secs_f64());
                for f in flows.iter_mut() {
                    sample_flow(f, next_sample, ts, iv);
                }
                next_sample += iv;
            }
            // Sleep until the next wake-up (or a datagram), polling for the
            // last SPIN; at most MAX_SLEEP at a time.
            let next = heap.peek().map_or(next_sample, |r| r.0 .0).min(next_sample);
            let due = self.origin + (next - Time::ZERO);
            if let Err(e) = waiter.wait(Some(due), &mut poller) {
                for f in flows.iter_mut() {
                    f.error.get_or_insert_with(|| format!("epoll_pwait2: {e}"));
                }
                break;
            }
            for k in poller.ready().map(|k| k as usize) {
                let (i, side) = (k / 2, k % 2);
                let f = &mut flows[i];
                for _ in 0..RECV_BATCH {
                    let got = f.socks[side].recv_from(&mut rbuf);
                    let (len, ecn) = match got {
                        // Only the flow's other end: the sockets are unconnected.
                        Ok(Some((_, from, _))) if from != f.peer[side] => {
                            f.ignored.foreign += 1;
                            continue;
                        }
                        Ok(Some((len, _, ecn))) => (len, ecn),
                        Ok(None) => break,
                        Err(UdpError::Truncated { .. }) => {
                            f.ignored.truncated += 1;
                            continue;
                        }
                        Err(e) => {
                            f.error.get_or_insert_with(|| format!("receive: {e}"));
                            break;
                        }
                    };
                    f.counts[side].datagrams_received += 1;
                    if !f.started {
                        continue; // not possible: the peer starts with it
                    }
                    if !f.bytes && len < TAG_BYTES {
                        // Every datagram the app sends carries its whole tag.
                        f.ignored.truncated += 1;
                        continue;
                    }
                    let at = self.app_time(self.clock.now());
                    let data = &rbuf[..len];
                    if f.bytes {
                        call(f, side, &mut scratch, &mut heap, i, |app, r, io| {
                            app.on_bytes(at, r, data, ecn, io)
                        });
                        let rec = &mut f.rec;
                        f.app.take_rtt_samples(&mut |d| rec.record_rtt(d));
                    } else {
                        let mut tag = [0u8; TAG_BYTES];
                        tag.copy_from_slice(&data[..TAG_BYTES]);
                        let dg = Datagram {
                            payload: len as u32,
                            ecn,
                            tag: u64::from_le_bytes(tag),
                        };
                        call(f, side, &mut scratch, &mut heap, i, |app, r, io| {
                            app.on_datagram(at, r, dg, io)
                        });
                    }
                }
            }
        }
        let series = flows.iter().flat_map(|f| series_rows(&f.series)).collect();
        DgramOut {
            flows,
            series,
            sched: sys::SchedStat::now().since(sched0),
            late,
        }
    }
}

/// Readiness of the flows' sockets (level-triggered: a socket with
/// datagrams left after a batch is ready again): the cost of a wake-up grows
/// with the sockets that are ready, not with all of them. Socket `k` is side
/// `k % 2` of flow `k / 2`.
fn poller(fds: impl Iterator<Item = std::os::fd::RawFd>) -> std::io::Result<sys::Epoll> {
    let fds: Vec<_> = fds.collect();
    let ep = sys::Epoll::new(fds.len())?;
    for (k, fd) in fds.into_iter().enumerate() {
        ep.add(fd, k as u64)?;
    }
    Ok(ep)
}

/// Call `f`'s app on `side` with that side's socket, and arm the wake-up it asked for.
fn call(
    f: &mut DgramFlow,
    side: usize,
    scratch: &mut [u8],
    heap: &mut BinaryHeap<Due>,
    i: usize,
    cb: impl FnOnce(&mut dyn FlowApp, Role, &mut dyn FlowIo),
) {
    let before = f.wake[side];
    let mut io = EmuIo {
        sock: &f.socks[side],
        to: f.peer[side],
        wake: &mut f.wake[side],
        counts: &mut f.counts[side],
        error: &mut f.error,
        scratch,
    };
    cb(f.app.as_mut(), role(side), &mut io);
    if let Some(w) = f.wake[side] {
        if before != Some(w) {
            heap.push(Reverse((w, i, side)));
        }
    }
}

/// The flow's series for the interval ending at `now` (the flow recorder's,
/// as in the simulator: its own transport's sender, then the app's).
fn sample_flow(f: &mut DgramFlow, now: Time, ts: f64, iv: Dur) {
    let delivered = f.delivered();
    let own = f.app.own_transport();
    let m = own.as_ref().map(|o| o.cc.metrics());
    let snap = FlowSample {
        delivered,
        cc: own
            .as_ref()
            .zip(m.as_ref())
            .map(|(o, m)| CcSample::of(m, o.cc.states())),
        pacing: own.as_ref().and_then(|o| o.pacing_rate),
        inflight: own.as_ref().map(|o| o.bytes_in_flight),
        srtt: own.as_ref().and_then(|o| o.srtt),
        ..FlowSample::default()
    };
    let (rec, series) = (&mut f.rec, &mut f.series);
    if rec.sample(series, now, ts, iv, &snap).is_some() {
        f.app
            .sample(now, iv, &mut |name, v| rec.push_app(series, ts, name, v));
    }
}

/// Flow `f`'s entry of `summary.flows` (the flow recorder's, as the
/// simulator's), with `path` and `marks` (on the data direction) from the
/// forwarder.
pub(crate) fn flow_json(
    scn: &Scenario,
    f: &DgramFlow,
    transport: &str,
    path: PathCounts,
    marks: u64,
) -> Value {
    let spec = &scn.flows[f.index];
    let end = Time::ZERO + (scn.duration - Time::ZERO);
    let down = spec.direction == Direction::Down;
    let sender = if down { SERVER } else { CLIENT };
    let count = |side: usize| f.counts[side];
    let report = FlowReport {
        info: FlowInfo {
            cc: Some(spec.app.media_cc().unwrap_or(&spec.cc.kind)),
            app: spec.app.kind(),
            transport,
            down,
            client: Some(&scn.hosts[spec.client].name),
            server: Some(&scn.hosts[spec.server].name),
        },
        delivered: f.delivered(),
        completion: f.app.completed_at(),
        end,
        path: Some(PathCounts {
            // Datagrams each side's socket took.
            sent: Some(UpDown {
                down: count(SERVER).datagrams_sent,
                up: count(CLIENT).datagrams_sent,
            }),
            ..path
        }),
        // An app with its own transport (QUIC) reports its sender's; a
        // datagram app has none.
        transport: f.app.own_transport_summary().unwrap_or(TransportCounts {
            ce_marks_received: Some(marks),
            ..TransportCounts::default()
        }),
        app_metrics: f.app.report(end),
    };
    let mut entry = f.rec.summary(&report);
    let extra = json!({
        "datagrams_refused_by_socket": {
            "down": count(SERVER).send_refused,
            "up": count(CLIENT).send_refused,
        },
        "sender_bytes_sent": count(sender).bytes_sent,
        // What either end dropped or its app ignored as unexpected (a
        // stray, a truncated datagram, a duplicate).
        "datagrams_ignored": f.app.datagrams_ignored() + f.ignored,
        "error": f.error,
    });
    if let Value::Object(e) = extra {
        entry.extend(e);
    }
    Value::Object(entry)
}

/// `summary.emulator.datagram_endpoints`: the thread's timing.
pub(crate) fn report_json(out: &DgramOut) -> Value {
    let mut m = Map::new();
    m.insert("flows".into(), json!(out.flows.len()));
    m.insert("wakeup_late_us".into(), out.late.summary_scaled(1e-3));
    Value::Object(m)
}
