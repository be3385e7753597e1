//! The real-time forwarder: two TUN devices, one [`Link`] per direction,
//! driven by the wall clock.
//!
//! ```text
//! tsrv --read--> split GSO --> Link "bottleneck.down" (qdisc, rate, loss) --> delay line --write--> tcli
//! tcli --read--> split GSO --> Link "bottleneck.up"   (qdisc, rate, loss) --> delay line --write--> tsrv
//! ```
//!
//! **Access links.** A scenario host's own access link (`[hosts.NAME.access]`)
//! is one more queue of the same runtime, passed before the bottleneck by
//! the packets its host sends and after it by those it receives
//! ([`AccessRoutes`], by flow). Each packet enters the next queue at its
//! *intended* exit time from the previous one: on each wake-up a direction
//! runs its senders' access links, then the bottleneck with their departures
//! merged in time order, then its receivers' access links, so a chain of
//! queues gives the packets the fates the simulator's calendar gives them
//! (`forwarder_access_parity.rs`).
//!
//! **Virtual time.** The link's events run at their *intended* times, not at
//! the moment the loop wakes up: `on_tx_done(t)` is called with
//! `t = tx_done_at()` even when the timer fired late, so serialization times
//! add up exactly (`link_free += size / rate`) and a late wake-up adds jitter
//! but never biases the rate (emulator-probe.md §3). Packets read from a TUN
//! are enqueued at the time of the read, after all link events due by then.
//!
//! **Timing accuracy.** Each packet has an intended release time (the end of
//! its serialization plus the one-way delay); the forwarder writes it at the
//! first wake-up at or after that time and records `actual - intended` in a
//! histogram per direction: the run's timing report. The loop waits for the
//! next deadline with l4slab-sys's real-time [`sys::Waiter`]: it sleeps in
//! `epoll_pwait2` with a nanosecond timeout (SCHED_FIFO threads get no
//! timer slack), optionally waking `spin` early and polling the TUNs.
//!
//! **Per-packet cost.** Packets live in a slab of fixed-size slots (the
//! virtio-net header, then the IP packet); the qdisc and the delay line move
//! 40-byte [`Packet`]s whose `handle` is the slot index. Nothing allocates
//! per packet once the slab has grown to the working set.
//!
//! **Malformed packets** (not IPv4/IPv6, inconsistent lengths) are counted
//! by reason and either passed through the queue as Not-ECT packets
//! (default) or dropped; GSO frames that cannot be split are dropped and
//! counted. No packet is ever modified except its ECN field (and, for IPv4,
//! the header checksum that covers it) and the fields GSO splitting defines.

use std::os::fd::RawFd;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use l4slab_bottleneck::Bottleneck;
use l4slab_bottleneck::QueueEventKind;
use l4slab_core::pkttrace::{AtQueue, PktEvent};
use l4slab_core::{Dur, FlowId, Packet, SeriesStore, Time};
use l4slab_pcap::spool::Spool;
use l4slab_pcap::{Captures, Point};

use crate::access::AccessRoutes;
use crate::coalesce::Coalescer;
use crate::packet::{self, IpInfo, Malformed, VNET_HDR_LEN};
use crate::pktlog::PacketLog;
use crate::stats::{lateness_stats, round6, summary_us, DurStats};
use crate::sys::{self, Clock, Epoll};
use crate::EmuError;

pub use l4slab_bottleneck::{DOWN, QUEUE_NAMES, UP};

/// Largest read from a TUN with GSO on: 64 KB packet + virtio-net header.
const READ_BUF: usize = 65_536 + VNET_HDR_LEN + 64;
/// Reads per TUN per wake-up before the other fds get a turn.
const READ_BUDGET: usize = 64;
/// Most packet slots the slab may hold (a bound, not an allocation).
const MAX_SLOTS: usize = 1 << 18;

/// Ready descriptors reported per wake-up (two TUNs and the signalfd).
const EPOLL_EVENTS: usize = 16;

const TOKEN_TUN: [u64; 2] = [0, 1];
const TOKEN_SIGNAL: u64 = 3;

/// What to do with a packet that is not understood (`"pass"`, `"drop"` in a plan).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MalformedPolicy {
    /// Count it and carry it through the queue unchanged, as Not-ECT.
    #[default]
    Pass,
    /// Count it and drop it.
    Drop,
}

/// How a packet is assigned the flow id the qdisc sees.
#[derive(Clone, Debug, Default)]
pub enum Classifier {
    /// A hash of the 5-tuple (FQ-CoDel buckets by it).
    #[default]
    Hash,
    /// Scenario runs: flow `i` is TCP/UDP traffic to or from `ports[i]`;
    /// anything else is flow `ports.len()`.
    Ports(Vec<u16>),
}

impl Classifier {
    fn flow(&self, info: Option<&IpInfo>) -> FlowId {
        match self {
            Classifier::Hash => info.map_or(0, |i| i.flow_hash),
            Classifier::Ports(ports) => {
                let other = ports.len() as FlowId;
                let Some((s, d)) = info.and_then(|i| i.ports) else {
                    return other;
                };
                ports
                    .iter()
                    .position(|&p| p == s || p == d)
                    .map_or(other, |i| i as FlowId)
            }
        }
    }
}

/// Forwarder settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// TUN MTU (IP bytes); sizes the packet slots.
    pub mtu: usize,
    /// Busy-wait this long before a deadline instead of sleeping through it
    /// (trades CPU for timing accuracy); zero = always sleep.
    pub spin: Dur,
    /// Never sleep for less than this: packets due within it are released
    /// together, one wake-up (and one coalesced write) for several. Adds at
    /// most this much to the timing error; zero = wake for every deadline.
    pub min_sleep: Dur,
    pub malformed: MalformedPolicy,
    pub classifier: Classifier,
    /// Interval of the samples (and of [`Hooks::on_sample`]); `None` = none.
    pub sample_interval: Option<Dur>,
    /// Record the queue series at each sample.
    pub record_series: bool,
    /// Start the queue summary's measurement window this long after the
    /// origin ([`Bottleneck::start_window`]; the scenario's `warmup`); zero:
    /// the summary covers the whole run.
    pub warmup: Dur,
    /// Write consecutive TCP segments released together as one GSO packet
    /// ([`crate::coalesce`]).
    pub coalesce: bool,
    /// Keep a per-packet trace ([`PacketLog`]); the value says, per
    /// scenario flow, whether its data goes down. Needs [`Classifier::Ports`].
    pub packet_log: Option<Vec<bool>>,
    /// The hosts' access links (the runtime's queues beyond the bottleneck's
    /// two), by flow. Needs [`Classifier::Ports`].
    pub access: AccessRoutes,
    /// After each sample, write it with the directions' counters as JSON to
    /// this file (replaced atomically; [`Forwarder::live_json`]): the live
    /// view of `l4slab gateway`. Needs `record_series`.
    pub live: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mtu: 1500,
            spin: Dur::ZERO,
            min_sleep: Dur::ZERO,
            malformed: MalformedPolicy::Pass,
            classifier: Classifier::Hash,
            sample_interval: None,
            record_series: true,
            warmup: Dur::ZERO,
            coalesce: true,
            packet_log: None,
            access: AccessRoutes::default(),
            live: None,
        }
    }
}

/// Counters of one direction.
#[derive(Clone, Debug, Default)]
pub struct DirCounters {
    pub reads: u64,
    pub read_errors: u64,
    pub gso_frames: u64,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub write_errors: u64,
    pub malformed: [u64; Malformed::ALL.len()],
    pub malformed_passed: u64,
    pub malformed_dropped: u64,
    pub slab_full_drops: u64,
    /// Packets whose ECN field the forwarder rewrote (CE marks, bleaching, ...).
    pub ecn_rewritten: u64,
}

/// A fixed-slot packet slab.
struct Slab {
    data: Vec<u8>,
    slot: usize,
    len: Vec<u32>,
    free: Vec<u32>,
}

impl Slab {
    fn new(slot: usize) -> Self {
        Slab {
            data: Vec::new(),
            slot,
            len: Vec::new(),
            free: Vec::new(),
        }
    }

    /// A slot holding a copy of `frame`, or `None` when the slab is full.
    fn store(&mut self, frame: &[u8]) -> Option<u32> {
        debug_assert!(frame.len() <= self.slot);
        let h = match self.free.pop() {
            Some(h) => h,
            None => {
                let n = self.len.len();
                if n >= MAX_SLOTS {
                    return None;
                }
                // Grow by doubling (amortized; stops once the working set fits).
                let grow = n.clamp(256, 16_384);
                self.data.resize((n + grow) * self.slot, 0);
                self.len.resize(n + grow, 0);
                self.free.extend((n as u32 + 1..(n + grow) as u32).rev());
                n as u32
            }
        };
        let at = h as usize * self.slot;
        self.data[at..at + frame.len()].copy_from_slice(frame);
        self.len[h as usize] = frame.len() as u32;
        Some(h)
    }

    fn frame(&self, h: u32) -> &[u8] {
        let at = h as usize * self.slot;
        &self.data[at..at + self.len[h as usize] as usize]
    }

    fn frame_mut(&mut self, h: u32) -> &mut [u8] {
        let at = h as usize * self.slot;
        let n = self.len[h as usize] as usize;
        &mut self.data[at..at + n]
    }

    fn release(&mut self, h: u32) {
        self.free.push(h);
    }

    fn in_use(&self) -> usize {
        self.len.len() - self.free.len()
    }
}

/// One direction's I/O: its TUN descriptors, counters, write coalescing and
/// timing accuracy (the bottleneck itself is the shared runtime's).
pub struct Direction {
    pub lateness: DurStats,
    pub counters: DirCounters,
    coalescer: Coalescer,
    in_fd: RawFd,
    out_fd: RawFd,
}

/// One row of the series (`t_s`, `series`, `key`, `value`).
pub type SeriesRow = (f64, String, String, f64);

/// The forwarding loop and everything it measures.
pub struct Forwarder {
    /// The bottleneck runtime, shared with the simulator: links, queue
    /// recorder, delay lines, queue series and summary.
    pub bn: Bottleneck,
    pub dirs: [Direction; 2],
    /// Scratch for the packets a direction releases,
    departed: Vec<(Time, Packet)>,
    /// the packets its bottleneck releases,
    bn_departed: Vec<(Time, Packet)>,
    /// and those its senders' access links release (exit time, queue).
    staged: Vec<(Time, usize, Packet)>,
    cfg: Config,
    slab: Slab,
    clock: Clock,
    epoll: Epoll,
    next_id: u64,
    rbuf: Vec<u8>,
    scratch: Vec<u8>,
    batch: Vec<u32>,
    /// The queue series (the runtime's), in the simulator's names.
    pub series: SeriesStore,
    /// The per-packet trace, when asked for.
    pub packet_log: Option<PacketLog>,
    /// The pcap capture, when asked for ([`Forwarder::capture`]),
    pcap: Option<Captures>,
    /// Per-device counters, with a live view ([`Config::live`]).
    hosts: Option<crate::hosts::Hosts>,
    /// The thread that writes the live view and the capture files: this
    /// one never waits for the disk (`l4slab_pcap::spool`).
    spool: Option<Spool>,
    /// and scratch for one record.
    pcap_buf: Vec<u8>,
    started: Time,
    /// When the measurement window starts (`started + warmup`), until it has.
    window_due: Option<Time>,
    /// When it started.
    window_start: Option<Time>,
}

/// What the caller decides after a signal or a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Continue,
    Stop,
}

/// The caller's side of the loop: signals (including SIGCHLD) and periodic samples.
pub trait Hooks {
    fn on_signals(&mut self, signals: &[i32]) -> Step;
    /// Called every `sample_interval` (after the forwarder sampled its queues).
    fn on_sample(&mut self, _now: Time) -> Step {
        Step::Continue
    }
}

impl Forwarder {
    /// `bn`: the bottleneck (built like the simulator's,
    /// `l4slab_scenario::build::bottleneck`); `tuns` = (client-side fd,
    /// server-side fd).
    ///
    /// # Errors
    /// [`EmuError`] if the epoll set cannot be created.
    pub fn new(
        mut bn: Bottleneck,
        tuns: (RawFd, RawFd),
        signal_fd: Option<RawFd>,
        clock: Clock,
        cfg: Config,
    ) -> Result<Self, EmuError> {
        let (cli, srv) = tuns;
        let dir = |in_fd, out_fd| Direction {
            lateness: lateness_stats(),
            counters: DirCounters::default(),
            coalescer: Coalescer::default(),
            in_fd,
            out_fd,
        };
        let epoll = Epoll::new(EPOLL_EVENTS).map_err(|e| EmuError::io("epoll_create", e))?;
        epoll
            .add(srv, TOKEN_TUN[DOWN])
            .and_then(|()| epoll.add(cli, TOKEN_TUN[UP]))
            .map_err(|e| EmuError::io("epoll_ctl", e))?;
        if let Some(fd) = signal_fd {
            epoll
                .add(fd, TOKEN_SIGNAL)
                .map_err(|e| EmuError::io("epoll_ctl", e))?;
        }
        let slot = (cfg.mtu + VNET_HDR_LEN + 63) & !63;
        let packet_log = cfg.packet_log.clone().map(|down| {
            bn.record_packet_events();
            PacketLog::new(down, bn.queue_names())
        });
        let started = clock.now();
        let hosts = cfg.live.is_some().then(crate::hosts::Hosts::default);
        // Started here, before the caller's thread becomes real-time, so
        // that the writer is an ordinary thread.
        let spool = match &cfg.live {
            Some(_) => Some(Spool::start().map_err(|e| EmuError::io("spawn the file writer", e))?),
            None => None,
        };
        Ok(Forwarder {
            bn,
            dirs: [dir(srv, cli), dir(cli, srv)],
            departed: Vec::with_capacity(64),
            bn_departed: Vec::with_capacity(64),
            staged: Vec::new(),
            slab: Slab::new(slot),
            scratch: vec![0; slot],
            cfg,
            clock,
            epoll,
            next_id: 0,
            rbuf: vec![0; READ_BUF],
            batch: Vec::with_capacity(64),
            series: SeriesStore::default(),
            packet_log,
            pcap: None,
            hosts,
            spool,
            pcap_buf: Vec::with_capacity(128),
            started,
            window_due: None,
            window_start: None,
        }
        .with_origin(started))
    }

    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Capture the packets of every queue under `results` (two files per
    /// queue of [`Bottleneck::queue_names`]; [`crate::capture`]), at most
    /// `limit` bytes. The files are written by the spool's thread; call
    /// this before the thread becomes real-time (the writer inherits its
    /// scheduling).
    ///
    /// # Errors
    /// The folder or a file could not be made, or the writer not started.
    pub fn capture(
        &mut self,
        results: &std::path::Path,
        limit: Option<u64>,
    ) -> Result<(), EmuError> {
        if self.spool.is_none() {
            self.spool =
                Some(Spool::start().map_err(|e| EmuError::io("spawn the file writer", e))?);
        }
        let spool = self.spool.as_ref().expect("started above").sender();
        let files = Captures::spooled(results, &self.bn.queue_names().queues, &spool)?;
        self.bn.record_captures();
        self.pcap = Some(files.limit(limit));
        Ok(())
    }

    /// Wait until the file writer (if any) has written what it was handed.
    pub fn sync_files(&self) {
        if let Some(s) = &self.spool {
            let _ = s.sync();
        }
    }

    /// What the capture (if any) wrote and left out at its size limit.
    pub fn capture_json(&self) -> Option<Value> {
        self.pcap.as_ref().map(|c| {
            let (bytes, limit) = c.bytes();
            json!({
                "records": c.records(),
                "skipped_at_limit": c.skipped(),
                "bytes": bytes,
                "limit_bytes": limit,
            })
        })
    }

    /// Close the capture files (if any); their paths.
    ///
    /// # Errors
    /// The first error writing them.
    pub fn finish_capture(&mut self) -> Result<Vec<std::path::PathBuf>, l4slab_pcap::CaptureError> {
        self.pcap.take().map_or(Ok(Vec::new()), Captures::finish)
    }

    /// Make `origin` the start of the run (samples fall at `origin + k *
    /// interval`; utilization and elapsed time count from it).
    pub fn set_origin(&mut self, origin: Time) {
        self.started = origin;
        self.window_due = (!self.cfg.warmup.is_zero()).then(|| origin + self.cfg.warmup);
    }

    fn with_origin(mut self, origin: Time) -> Self {
        self.set_origin(origin);
        self
    }

    /// Forward until a hook returns [`Step::Stop`].
    ///
    /// # Errors
    /// [`EmuError`] if waiting on the epoll set fails.
    pub fn run(&mut self, signal_fd: Option<RawFd>, hooks: &mut dyn Hooks) -> Result<(), EmuError> {
        let mut ready = Vec::with_capacity(EPOLL_EVENTS);
        let mut next_sample = self.cfg.sample_interval.map(|d| self.started + d);
        let mut waiter = sys::Waiter::new(
            self.clock,
            sys::WaiterConfig {
                spin: self.cfg.spin,
                min_sleep: self.cfg.min_sleep,
                // The caller's (`sys::realtime`: 1 ns for a SCHED_FIFO forwarder).
                timer_slack: None,
                max_sleep: None,
                fair_slice: None,
            },
        );
        loop {
            if self.wake(self.clock.now(), &mut next_sample, hooks) == Step::Stop {
                return Ok(());
            }
            let deadline = [self.next_event(DOWN), self.next_event(UP), next_sample]
                .into_iter()
                .flatten()
                .min();
            // Sleep until `spin` before the deadline (at least `min_sleep`),
            // then poll without sleeping, until it or a TUN or signal is due.
            waiter
                .wait(deadline, &mut self.epoll)
                .map_err(|e| EmuError::io("epoll_pwait2", e))?;
            ready.clear();
            ready.extend(self.epoll.ready());
            let now = self.clock.now();
            if self.wake(now, &mut next_sample, hooks) == Step::Stop {
                return Ok(());
            }
            for &tok in &ready {
                match tok {
                    TOKEN_SIGNAL => {
                        let sigs = signal_fd.map(sys::read_signals).unwrap_or_default();
                        if !sigs.is_empty() && hooks.on_signals(&sigs) == Step::Stop {
                            return Ok(());
                        }
                    }
                    t if t == TOKEN_TUN[DOWN] => self.read_tun(DOWN, now),
                    t if t == TOKEN_TUN[UP] => self.read_tun(UP, now),
                    _ => {}
                }
            }
        }
    }

    /// What the loop does on every wake-up at `now`, before it reads the
    /// TUNs: the samples due by `now` (each after both directions ran to its
    /// instant, as in the simulator), then both directions run to `now`.
    ///
    /// The first time `now` reaches the measurement window's start (in
    /// order with the samples, before one due at the same instant), both
    /// directions run to it and the window starts there, as the simulator's
    /// calendar event does.
    fn wake(&mut self, now: Time, next_sample: &mut Option<Time>, hooks: &mut dyn Hooks) -> Step {
        while let (Some(t), Some(iv)) = (*next_sample, self.cfg.sample_interval) {
            if now < t {
                break;
            }
            self.start_window_by(t);
            for d in [DOWN, UP] {
                self.advance(d, t);
            }
            self.sample(t, iv);
            *next_sample = Some(t + iv);
            if hooks.on_sample(t) == Step::Stop {
                return Step::Stop;
            }
        }
        self.start_window_by(now);
        for d in [DOWN, UP] {
            self.advance(d, now);
        }
        Step::Continue
    }

    /// Start the measurement window if it is due by `t`: both directions
    /// run to its instant first.
    fn start_window_by(&mut self, t: Time) {
        let Some(w) = self.window_due.filter(|&w| w <= t) else {
            return;
        };
        for d in [DOWN, UP] {
            self.advance(d, w);
        }
        self.bn.start_window(w);
        self.window_due = None;
        self.window_start = Some(w);
    }

    /// The next instant direction `d` needs attention (its bottleneck's or
    /// one of its access links', or a Wi-Fi cell's medium, which both
    /// directions share).
    fn next_event(&self, d: usize) -> Option<Time> {
        let a = &self.cfg.access;
        let access = a.ingress[d].iter().chain(&a.egress[d]);
        access
            .filter_map(|&q| self.bn.next_deadline(q))
            .chain(self.bn.next_deadline(d))
            .chain((0..self.bn.cells()).filter_map(|c| self.bn.cell_deadline(c)))
            .min()
    }

    /// Run direction `d` to `now` (every queue's events at their intended
    /// times): its senders' access links, then the bottleneck, each of their
    /// departures entering it at its exit time, then its receivers' access
    /// links; write the packets whose time has come.
    fn advance(&mut self, d: usize, now: Time) {
        let mut departed = std::mem::take(&mut self.departed);
        if self.cfg.access.ingress[d].is_empty() {
            self.run_bottleneck(d, now, &mut departed);
        } else {
            let mut staged = std::mem::take(&mut self.staged);
            for i in 0..self.cfg.access.ingress[d].len() {
                let q = self.cfg.access.ingress[d][i];
                self.bn.advance(q, now, &mut self.bn_departed);
                self.take_events(q);
                staged.extend(self.bn_departed.drain(..).map(|(t, p)| (t, q, p)));
            }
            // Each link's departures are in time order: merge them, ties by
            // queue (stable).
            staged.sort_by_key(|&(t, q, _)| (t, q));
            for &(at, _, pkt) in &staged {
                self.run_bottleneck(d, at, &mut departed);
                self.bn.enqueue(d, at, pkt);
                self.take_events(d);
            }
            staged.clear();
            self.staged = staged;
            self.run_bottleneck(d, now, &mut departed);
        }
        if !self.cfg.access.egress[d].is_empty() {
            for i in 0..self.cfg.access.egress[d].len() {
                let q = self.cfg.access.egress[d][i];
                self.bn.advance(q, now, &mut departed);
                self.take_events(q);
            }
            // Out of the bottleneck and of several access links: in time order.
            departed.sort_by_key(|&(t, _)| t);
        }
        self.write_out(d, now, &mut departed);
        self.departed = departed;
    }

    /// Run bottleneck direction `d` to `t`: a packet it releases enters its
    /// receiver's access link at its exit time, or goes to `out`.
    fn run_bottleneck(&mut self, d: usize, t: Time, out: &mut Vec<(Time, Packet)>) {
        let mut released = std::mem::take(&mut self.bn_departed);
        self.bn.advance(d, t, &mut released);
        self.take_events(d);
        for &(at, pkt) in &released {
            match self.cfg.access.egress(pkt.flow, d) {
                Some(q) => {
                    self.bn.advance(q, at, out);
                    self.bn.enqueue(q, at, pkt);
                    self.take_events(q);
                }
                None => out.push((at, pkt)),
            }
        }
        released.clear();
        self.bn_departed = released;
    }

    /// Write the packets direction `d` released (each with its intended
    /// exit time) to its outbound TUN.
    fn write_out(&mut self, d: usize, now: Time, departed: &mut Vec<(Time, Packet)>) {
        let dir = &mut self.dirs[d];
        let out_fd = dir.out_fd;
        let errors = &mut dir.counters.write_errors;
        let mut write = |w: &[u8]| {
            if sys::write_all_nb(out_fd, w).is_err() {
                *errors += 1;
            }
        };
        for &(at, pkt) in departed.iter() {
            let frame = self.slab.frame_mut(pkt.handle);
            // The queue (CE marks) or the path (bleach, re-mark) may have
            // changed the codepoint: put it in the real header.
            let rewritten = matches!(
                packet::set_ecn(&mut frame[VNET_HDR_LEN..], pkt.ecn),
                Ok(true)
            );
            dir.counters.ecn_rewritten += u64::from(rewritten);
            if let Some(hosts) = &mut self.hosts {
                let ip = &self.slab.frame(pkt.handle)[VNET_HDR_LEN..];
                hosts.left(d, ip, pkt.len, rewritten && pkt.ecn == l4slab_core::Ecn::Ce);
            }
            let late = self.clock.now().saturating_since(at);
            dir.lateness.record(late);
            if let Some(log) = &mut self.packet_log {
                let ts = now.saturating_since(self.started).as_secs_f64();
                let ip = &self.slab.frame(pkt.handle)[VNET_HDR_LEN..];
                log.record(ts, PktEvent::Deliver, AtQueue::NONE, &pkt, d, ip);
            }
            dir.counters.packets_out += 1;
            dir.counters.bytes_out += u64::from(pkt.len);
            if self.cfg.coalesce {
                dir.coalescer.push(self.slab.frame(pkt.handle), &mut write);
            } else {
                write(self.slab.frame(pkt.handle));
            }
            self.slab.release(pkt.handle);
        }
        dir.coalescer.flush(&mut write);
        departed.clear();
    }

    /// After every runtime call on queue `q`: log its events (queue events
    /// into the packet trace, capture points into the pcap files), then free
    /// the packets it dropped.
    fn take_events(&mut self, q: usize) {
        if !self.bn.packet_events(q).is_empty() {
            let d = self.cfg.access.dir_of(q);
            for e in self.bn.packet_events(q) {
                let ip = &self.slab.frame(e.pkt.handle)[VNET_HDR_LEN..];
                let t = e.t.saturating_since(self.started);
                let point = match e.kind {
                    QueueEventKind::Arrive => Point::In,
                    QueueEventKind::Leave => Point::Out,
                    QueueEventKind::Enqueue { .. }
                    | QueueEventKind::Dequeue { .. }
                    | QueueEventKind::Mark(_)
                    | QueueEventKind::Drop(_) => {
                        if let Some(log) = &mut self.packet_log {
                            let (event, at) =
                                e.trace_columns(&log.trace.names, q).expect("a queue event");
                            log.record(t.as_secs_f64(), event, at, &e.pkt, d, ip);
                        }
                        continue;
                    }
                };
                if let Some(c) = &mut self.pcap {
                    let rec = crate::capture::record(&mut self.pcap_buf, ip, e.pkt.ecn);
                    c.write(q, point, t, e.pkt.len, rec);
                }
            }
            self.bn.clear_packet_events(q);
        }
        for &(_, p, _) in self.bn.dropped(q) {
            self.slab.release(p.handle);
        }
        self.bn.clear_dropped(q);
    }

    /// Drain TUN `d`'s input (up to a budget) into direction `d`'s link.
    fn read_tun(&mut self, d: usize, now: Time) {
        for _ in 0..READ_BUDGET {
            let n = match sys::read_nb(self.dirs[d].in_fd, &mut self.rbuf) {
                Ok(Some(n)) if n > 0 => n,
                Ok(_) => return,
                Err(_) => {
                    self.dirs[d].counters.read_errors += 1;
                    return;
                }
            };
            let c = &mut self.dirs[d].counters;
            c.reads += 1;
            self.batch.clear();
            let slab = &mut self.slab;
            let batch = &mut self.batch;
            let mut full = 0u64;
            let split = packet::split_gso(&self.rbuf[..n], &mut self.scratch, |seg| {
                match slab.store(seg) {
                    Some(h) => batch.push(h),
                    None => full += 1,
                }
            });
            c.slab_full_drops += full;
            match split {
                Ok(k) if k > 1 || self.batch.len() > 1 => c.gso_frames += 1,
                Ok(_) => {}
                Err(m) => {
                    c.malformed[m.index()] += 1;
                    c.malformed_dropped += 1;
                }
            }
            for i in 0..self.batch.len() {
                let h = self.batch[i];
                self.enqueue(d, h, now);
            }
        }
    }

    fn enqueue(&mut self, d: usize, h: u32, now: Time) {
        let frame = self.slab.frame(h);
        let ip = &frame[VNET_HDR_LEN..];
        let len = ip.len() as u32;
        let dir = &mut self.dirs[d];
        let parsed = packet::parse(ip);
        let (info, ecn) = match parsed {
            Ok(i) => (Some(i), i.ecn),
            Err(m) => {
                dir.counters.malformed[m.index()] += 1;
                if self.cfg.malformed == MalformedPolicy::Drop {
                    dir.counters.malformed_dropped += 1;
                    self.slab.release(h);
                    return;
                }
                dir.counters.malformed_passed += 1;
                (None, l4slab_core::Ecn::NotEct)
            }
        };
        dir.counters.packets_in += 1;
        dir.counters.bytes_in += u64::from(len);
        if let Some(hosts) = &mut self.hosts {
            hosts.arrived(d, ip, len, ecn);
        }
        let mut pkt = Packet::new(
            self.next_id,
            self.cfg.classifier.flow(info.as_ref()),
            len,
            ecn,
        );
        pkt.handle = h;
        self.next_id += 1;
        let ts = now.saturating_since(self.started).as_secs_f64();
        if let Some(log) = &mut self.packet_log {
            let ip = &self.slab.frame(h)[VNET_HDR_LEN..];
            log.record(ts, PktEvent::Send, AtQueue::NONE, &pkt, d, ip);
        }
        // Through the sending host's access link, if it has one.
        let q = self.cfg.access.ingress(pkt.flow, d).unwrap_or(d);
        self.bn.enqueue(q, now, pkt);
        self.take_events(q);
    }

    /// Record one sample of each queue at `t` for the interval `iv` before it:
    /// the runtime's queue series, then the forwarder's timing error.
    fn sample(&mut self, t: Time, iv: Dur) {
        if !self.cfg.record_series {
            return;
        }
        let ts = round6(t.saturating_since(self.started).as_secs_f64());
        let first = self.series.len();
        self.bn.sample(t, ts, iv, &mut self.series);
        for (d, dir) in self.dirs.iter_mut().enumerate() {
            if let Some((_, max_ms)) = dir.lateness.take_interval() {
                let series = self.series.intern(&format!("queue/{}", QUEUE_NAMES[d]));
                let key = self.series.intern("timing_error_max_us");
                self.series.push(ts, series, key, round6(max_ms * 1e3));
            }
        }
        if let (Some(path), Some(spool)) = (&self.cfg.live, &self.spool) {
            // Once per sample interval, not per packet, and by the spool's
            // thread: a disk that stalls must not stall the link.
            let text = self.live_json(first, ts).to_string();
            spool.replace_lossy(path.clone(), text.into_bytes());
        }
    }

    /// The sample recorded from series row `first` on (`t_s`; `queues`: each
    /// queue's series values, as `series.parquet` names them) and each
    /// direction's counters since the start (`forwarder`: packets and IP
    /// bytes read and written).
    pub fn live_json(&self, first: usize, t_s: f64) -> Value {
        let s = &self.series;
        let mut queues = Map::new();
        for i in first..s.len() {
            let name = s.name(s.series[i]).trim_start_matches("queue/");
            if let Value::Object(q) = queues.entry(name).or_insert_with(|| json!({})) {
                q.insert(s.name(s.key[i]).to_owned(), json!(s.value[i]));
            }
        }
        let mut dirs = Map::new();
        for (d, dir) in self.dirs.iter().enumerate() {
            let c = &dir.counters;
            dirs.insert(
                QUEUE_NAMES[d].to_owned(),
                json!({"packets_in": c.packets_in, "bytes_in": c.bytes_in,
                       "packets_out": c.packets_out, "bytes_out": c.bytes_out}),
            );
        }
        let mut sample = json!({"t_s": t_s, "queues": queues, "forwarder": dirs});
        if let Some(hosts) = &self.hosts {
            sample["hosts"] = hosts.json();
        }
        sample
    }

    /// The recorded series as rows (`t_s`, `series`, `key`, `value`).
    pub fn series_rows(&self) -> Vec<SeriesRow> {
        let s = &self.series;
        (0..s.len())
            .map(|i| {
                (
                    s.t_s[i],
                    s.name(s.series[i]).to_owned(),
                    s.name(s.key[i]).to_owned(),
                    s.value[i],
                )
            })
            .collect()
    }

    /// Elapsed emulated time.
    pub fn elapsed(&self) -> Dur {
        self.clock.now().saturating_since(self.started)
    }

    /// Packets held in the slab (queued, on the wire, or in a delay line).
    pub fn in_flight(&self) -> usize {
        self.slab.in_use()
    }

    /// Per-queue results in the simulator's `summary.json` layout (the
    /// runtime's), with the forwarder's timing error per queue. `flows`
    /// names the scenario's flows (empty in the shell).
    ///
    /// They cover the measurement window (`Config::warmup`) when it started,
    /// else the whole run.
    pub fn queues_json(&self, flows: &[&str]) -> Value {
        let window = self.window();
        let mut queues = self.bn.queues_json(window, flows);
        for (d, dir) in self.dirs.iter().enumerate() {
            queues[QUEUE_NAMES[d]]["timing_error_us"] = summary_us(&dir.lateness);
        }
        queues
    }

    /// The Wi-Fi cell's results (`summary.json`'s `wifi`), over the same
    /// window as [`Forwarder::queues_json`]; `None` without a cell.
    pub fn wifi_json(&self) -> Option<Value> {
        self.bn.wifi_json(self.window())
    }

    /// What the results cover: the measurement window if it started, else
    /// the whole run.
    fn window(&self) -> Dur {
        match self.window_start {
            Some(w) => self.clock.now().saturating_since(w),
            None => self.elapsed(),
        }
    }

    /// Forwarder counters, CPU use and the timing report.
    pub fn forwarder_json(&self, cpu_at_start: (f64, f64)) -> Value {
        let (u, s) = sys::cpu_times();
        let wall = self.elapsed().as_secs_f64().max(1e-9);
        let mut dirs = Map::new();
        let mut all = lateness_stats();
        for (d, dir) in self.dirs.iter().enumerate() {
            let c = &dir.counters;
            let malformed: Map<String, Value> = Malformed::ALL
                .iter()
                .map(|m| (m.name().to_owned(), json!(c.malformed[m.index()])))
                .collect();
            dirs.insert(
                QUEUE_NAMES[d].to_owned(),
                json!({
                    "reads": c.reads,
                    "read_errors": c.read_errors,
                    "gso_frames": c.gso_frames,
                    "packets_in": c.packets_in,
                    "bytes_in": c.bytes_in,
                    "packets_out": c.packets_out,
                    "bytes_out": c.bytes_out,
                    "write_errors": c.write_errors,
                    "malformed": malformed,
                    "malformed_passed": c.malformed_passed,
                    "malformed_dropped": c.malformed_dropped,
                    "slab_full_drops": c.slab_full_drops,
                    "ecn_rewritten": c.ecn_rewritten,
                    "coalesced_writes": dir.coalescer.merged_writes,
                    "coalesced_segments": dir.coalescer.merged_segments,
                    "timing_error_us": summary_us(&dir.lateness),
                }),
            );
            all.merge(&dir.lateness);
        }
        json!({
            "wall_s": round6(wall),
            "cpu_user_s": round6(u - cpu_at_start.0),
            "cpu_sys_s": round6(s - cpu_at_start.1),
            "cpu_share": round6((u - cpu_at_start.0 + s - cpu_at_start.1) / wall),
            "spin_us": self.cfg.spin.as_nanos() as f64 / 1e3,
            "directions": dirs,
            "timing_error_us": summary_us(&all),
            // The file writer fell behind the disk: capture chunks that
            // waited for room, live samples left out.
            "file_writer": self.spool.as_ref().map(|s| {
                let (waited, left_out) = s.waited_and_left_out();
                json!({"capture_chunks_waited": waited, "live_samples_left_out": left_out})
            }),
            "packets_in_flight_at_end": self.in_flight(),
        })
    }
}

#[cfg(test)]
#[path = "forwarder_parity.rs"]
mod parity;

#[cfg(test)]
#[path = "forwarder_access_parity.rs"]
mod access_parity;
