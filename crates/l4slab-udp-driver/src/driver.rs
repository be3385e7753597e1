//! The real-time event loop that runs a sans-IO [`DatagramEndpoint`] over a
//! [`UdpSocket`] on `CLOCK_MONOTONIC`.
//!
//! **Protocol.** [`Driver::run`] repeats, until the endpoint
//! [`is_done`](DatagramEndpoint::is_done) or the deadline passes:
//!
//! 1. if the endpoint's timeout is due, `handle_timeout(now)` (a timeout
//!    already in the past when asked for is due at once), preceded by
//!    `handle_late_timeout(now)` if it is past and was not said in step 4
//!    (a pacer then forfeits the time lost beyond a quantum instead of
//!    sending a catch-up burst);
//! 2. send what `poll_transmit` gives, until it says `None` (pacing: not
//!    now), the socket pushes back (`EAGAIN` / `ENOBUFS`: the datagram is
//!    kept and sent again later, counted), or [`DriverConfig::max_burst`]
//!    datagrams went in this round;
//! 3. wait for the socket to become readable (or writable, after `EAGAIN`)
//!    or for the wake-up, the earliest of the endpoint's timeout, the
//!    deadline and an `ENOBUFS` retry: l4slab-sys's real-time
//!    [`Waiter`] sleeps in `ppoll` until [`DriverConfig::spin`] before the
//!    wake-up, with the thread's timer slack at 1 ns for the run
//!    ([`DriverConfig::timer_slack`]), and spends the rest polling the
//!    socket without sleeping — at real-time priority only: a normal
//!    thread sleeps to the wake-up (spinning there costs it the CPU time
//!    the scheduler would give it when it is due; `l4slab_sys::realtime`);
//! 4. if the socket is readable: first `handle_late_timeout(now)` if the
//!    endpoint's timeout passed while the thread waited for a CPU (the
//!    acknowledgements that queued meanwhile would otherwise refill a pacer
//!    as if it had been on time: a 1.5-datagram bucket then loses the late
//!    wake-up's 1 ms quantum too), then read the waiting datagrams (at most
//!    [`DriverConfig::max_recv_batch`]) into `handle_datagram`, each with
//!    the clock read at its turn; step 1 then handles the timeout without
//!    saying it again.
//!
//! **Wakers** ([`DriverConfig::wakers`]): with more than one, the run's
//! other threads run the same loop beside the caller's, each waiting for
//! the same wake-ups; steps 4, 1 and 2 are taken under one lock, so the
//! endpoint sees one caller at a time, and the first waker to get a CPU
//! serves it (the others find nothing due). Beside CPU-bound processes a
//! woken normal-priority thread sometimes waits a whole scheduler tick for
//! its CPU (docs/PERFORMANCE.md, issue 25); another waker usually runs
//! meanwhile. The waker that ends the run closes a pipe the others also
//! wait on, and the run returns once they are joined. A thread at
//! real-time priority runs alone (it is not held so, and its wakers would
//! each spin before the wake-up).
//!
//! **Accounting** ([`DriverStats`]): datagrams and bytes each way, the
//! socket's push-backs, datagrams given up, and how late each timed wake-up
//! fired (wake-ups cut short by the socket are not counted: they were not
//! late; with several wakers, each waker's), and the wakers' time on a CPU
//! and waiting on a run queue during the runs, summed
//! (`/proc/thread-self/schedstat`: what other load cost them). Stats
//! accumulate over the runs of one driver.
//!
//! **Errors.** A datagram the kernel refuses for its own sake (e.g.
//! `EMSGSIZE`, an unreachable network, a firewall's `EPERM`) is dropped and
//! counted in [`DriverStats::send_dropped`], as a lossy path would drop it;
//! a datagram too large for the receive buffer is dropped and counted. A
//! broken socket or `ppoll` ends the run with a [`DriverError`].
//!
//! Not done: GSO/`sendmmsg`/`recvmmsg` batching, kernel receive
//! timestamps (the endpoint sees the time its datagram was read), several
//! sockets per driver, real-time scheduling (the caller's choice; see
//! `l4slab_sys::sched::realtime`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, PoisonError};

use l4slab_core::stats::DurStats;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_sys::errno;
use l4slab_sys::fd::pipe_cloexec;
use l4slab_sys::poll::PollFd;
use l4slab_sys::realtime::{lateness_stats, Lateness, Waiter, WaiterConfig, Wake};
use l4slab_sys::sched::SchedStat;
use l4slab_sys::{Clock, UdpError, UdpSocket};

pub use l4slab_core::datagram::DatagramEndpoint;

/// Driver settings.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Poll without sleeping for this long before each wake-up (trades CPU
    /// for timing accuracy: a `ppoll` timeout fires some µs late, see the
    /// crate docs) when the thread runs at real-time priority; zero:
    /// always sleep.
    pub spin: Dur,
    /// The thread's timer slack during a run (restored after); `None`:
    /// leave it (a normal thread's default is 50 µs, added to each sleep).
    pub timer_slack: Option<Dur>,
    /// A normal thread's fair-scheduler slice during a run (restored
    /// after; `l4slab_sys::sched::FairSlice`): the shortest the kernel
    /// takes, 0.1 ms, lets a wake-up preempt CPU-bound processes; `None`:
    /// leave it.
    pub fair_slice: Option<Dur>,
    /// Size of the send and the receive buffer (one each, allocated once):
    /// the largest datagram either way.
    pub buffer_size: usize,
    /// At most this many datagrams sent between two looks at the socket.
    pub max_burst: usize,
    /// At most this many datagrams read between two looks at the timers.
    pub max_recv_batch: usize,
    /// After `ENOBUFS`, try the datagram again this much later (readiness
    /// does not say when buffer space returns).
    pub enobufs_retry: Dur,
    /// Threads that wait for the same wake-ups (at least one: the caller's);
    /// the first to get a CPU serves the endpoint, under a lock. Beside
    /// CPU-bound processes a woken normal-priority thread sometimes waits a
    /// whole scheduler tick for its CPU, and a second waker, woken too,
    /// usually runs meanwhile (docs/PERFORMANCE.md, issue 25). A thread at
    /// real-time priority is not held so: it runs alone.
    pub wakers: usize,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            spin: Dur::from_micros(50),
            timer_slack: Some(Dur::from_nanos(1)),
            fair_slice: Some(Dur::from_micros(100)),
            buffer_size: 65_535,
            max_burst: 64,
            max_recv_batch: 64,
            enobufs_retry: Dur::from_micros(100),
            wakers: 1,
        }
    }
}

/// Why [`Driver::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The endpoint said it is done.
    Done,
    /// The deadline passed first.
    Deadline,
}

/// What ends a run early.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("ppoll on the UDP socket failed: {0}")]
    Poll(#[source] io::Error),
    #[error("the UDP socket cannot send any more: {0}")]
    Send(#[source] UdpError),
    #[error("the UDP socket cannot receive any more: {0}")]
    Recv(#[source] UdpError),
}

/// What a driver counted over its runs.
pub struct DriverStats {
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    /// Sends refused with `EAGAIN` (the datagram was sent again later).
    pub send_would_block: u64,
    /// Sends refused with `ENOBUFS` (the datagram was sent again later).
    pub send_no_buffers: u64,
    /// Datagrams given up because the kernel refused them for good.
    pub send_dropped: u64,
    /// Datagrams larger than the receive buffer, dropped.
    pub recv_truncated: u64,
    /// Receive errors that were skipped (queued ICMP errors).
    pub recv_errors: u64,
    /// Calls of `handle_timeout`.
    pub timeouts: u64,
    /// Of those, the ones after the time the endpoint named (preceded by
    /// `handle_late_timeout`).
    pub late_timeouts: u64,
    /// How late each timed wake-up fired.
    pub lateness: DurStats,
    /// Waits that returned (socket ready, deadline, or nothing to wait for),
    /// of all the wakers.
    pub wakeups: u64,
    /// The wakers' CPU time during the runs, ns (schedstat), summed.
    pub cpu_ns: u64,
    /// The wakers' time runnable but not running during the runs, summed,
    /// ns (schedstat's run-queue wait: the CPU other load took from it).
    pub run_queue_wait_ns: u64,
}

impl DriverStats {
    fn new() -> Self {
        DriverStats {
            datagrams_sent: 0,
            bytes_sent: 0,
            datagrams_received: 0,
            bytes_received: 0,
            send_would_block: 0,
            send_no_buffers: 0,
            send_dropped: 0,
            recv_truncated: 0,
            recv_errors: 0,
            timeouts: 0,
            late_timeouts: 0,
            lateness: lateness_stats(),
            wakeups: 0,
            cpu_ns: 0,
            run_queue_wait_ns: 0,
        }
    }

    /// The timer lateness summary; `None` before the first timed wake-up.
    pub fn lateness(&self) -> Option<Lateness> {
        Lateness::of(&self.lateness)
    }
}

impl std::fmt::Debug for DriverStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverStats")
            .field("datagrams_sent", &self.datagrams_sent)
            .field("bytes_sent", &self.bytes_sent)
            .field("datagrams_received", &self.datagrams_received)
            .field("bytes_received", &self.bytes_received)
            .field("send_would_block", &self.send_would_block)
            .field("send_no_buffers", &self.send_no_buffers)
            .field("send_dropped", &self.send_dropped)
            .field("recv_truncated", &self.recv_truncated)
            .field("recv_errors", &self.recv_errors)
            .field("timeouts", &self.timeouts)
            .field("late_timeouts", &self.late_timeouts)
            .field("lateness", &self.lateness())
            .field("wakeups", &self.wakeups)
            .field("cpu_ns", &self.cpu_ns)
            .field("run_queue_wait_ns", &self.run_queue_wait_ns)
            .finish()
    }
}

/// A datagram taken from the endpoint that the socket has not accepted
/// yet (its bytes are the head of the send buffer).
#[derive(Clone, Copy, Debug)]
struct Pending {
    len: usize,
    to: SocketAddr,
    ecn: Ecn,
    /// Set after `ENOBUFS`: not before this time.
    retry_at: Option<Time>,
}

/// Runs one endpoint over one socket; owns the clock, the buffers and the
/// stats.
pub struct Driver {
    cfg: DriverConfig,
    clock: Clock,
    tx: Vec<u8>,
    rx: Vec<u8>,
    pending: Option<Pending>,
    stats: DriverStats,
}

impl Driver {
    /// A driver whose clock starts now.
    pub fn new(cfg: DriverConfig) -> Driver {
        Driver::with_clock(cfg, Clock::start())
    }

    /// A driver on a given clock (to share one epoch between drivers).
    ///
    /// # Panics
    /// If a buffer, burst or batch size or the wakers are zero.
    pub fn with_clock(cfg: DriverConfig, clock: Clock) -> Driver {
        assert!(
            cfg.buffer_size > 0 && cfg.max_burst > 0 && cfg.max_recv_batch > 0 && cfg.wakers > 0,
            "driver sizes must be positive: {cfg:?}"
        );
        Driver {
            tx: vec![0; cfg.buffer_size],
            rx: vec![0; cfg.buffer_size],
            cfg,
            clock,
            pending: None,
            stats: DriverStats::new(),
        }
    }

    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The driver's time now.
    pub fn now(&self) -> Time {
        self.clock.now()
    }

    pub fn stats(&self) -> &DriverStats {
        &self.stats
    }

    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }

    /// Run `endpoint` over `socket` until it is done or the driver's clock
    /// reaches `deadline` ([`Time::MAX`]: no deadline). A datagram the
    /// socket pushed back stays with the driver for its next run. With
    /// [`DriverConfig::wakers`] above one, that many threads (this one and
    /// the others, started for the run and joined before it returns) wait
    /// for the same wake-ups and take turns with the endpoint, unless this
    /// thread runs at real-time priority.
    ///
    /// # Errors
    /// [`DriverError`] if the socket or `ppoll` fails in a way no datagram
    /// explains.
    pub fn run<E: DatagramEndpoint + Send + ?Sized>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
        deadline: Time,
    ) -> Result<RunOutcome, DriverError> {
        self.run_held(socket, endpoint, deadline, &|_, _| {})
    }

    /// [`Driver::run`], with `held(waker, wait)` called by each waker (0:
    /// the caller's thread) after its `wait`-th wait, outside the lock: a
    /// test holds a waker there as a busy machine's scheduler holds a woken
    /// thread.
    fn run_held<E: DatagramEndpoint + Send + ?Sized, H: Fn(usize, u64) + Sync>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
        deadline: Time,
        held: &H,
    ) -> Result<RunOutcome, DriverError> {
        let Driver {
            cfg,
            clock,
            tx,
            rx,
            pending,
            stats,
        } = self;
        let (cfg, clock) = (&*cfg, *clock);
        // A real-time thread is not held by CPU-bound processes: one waker.
        let extra = if l4slab_sys::sched::is_realtime() {
            0
        } else {
            cfg.wakers.saturating_sub(1)
        };
        // Ends the others' waits when one waker ends the run.
        let stop = if extra > 0 {
            Some(pipe_cloexec().map_err(DriverError::Poll)?)
        } else {
            None
        };
        let (stop_rx, stop_tx) = match stop {
            Some((r, w)) => (Some(r), Some(w)),
            None => (None, None),
        };
        let stop_rx_fd = stop_rx.as_ref().map(AsRawFd::as_raw_fd);
        let core = Mutex::new(Core {
            endpoint,
            tx,
            rx,
            pending,
            stats,
            said_late: None,
            outcome: None,
            stop_tx,
        });
        let mine = std::thread::scope(|s| {
            let (core, run) = (&core, (socket, stop_rx_fd, deadline, held));
            let others: Vec<_> = (1..=extra)
                .map(|i| s.spawn(move || waker(i, cfg, clock, core, run)))
                .collect();
            let mut mine = waker(0, cfg, clock, core, run);
            for h in others {
                match h.join() {
                    Ok(w) => mine.add(&w),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            mine
        });
        let core = core.into_inner().unwrap_or_else(PoisonError::into_inner);
        core.stats.wakeups += mine.wakeups;
        core.stats.lateness.merge(&mine.lateness);
        core.stats.cpu_ns += mine.sched.cpu_ns;
        core.stats.run_queue_wait_ns += mine.sched.wait_ns;
        core.outcome.unwrap_or(Ok(RunOutcome::Deadline))
    }
}

/// What one waker counted in a run (the rest goes to the shared stats).
struct WakerStats {
    wakeups: u64,
    lateness: DurStats,
    sched: SchedStat,
}

impl WakerStats {
    fn add(&mut self, other: &WakerStats) {
        self.wakeups += other.wakeups;
        self.lateness.merge(&other.lateness);
        self.sched.cpu_ns += other.sched.cpu_ns;
        self.sched.wait_ns += other.sched.wait_ns;
    }
}

/// What the wakers of a run share, under the driver's lock.
struct Core<'a, E: ?Sized> {
    endpoint: &'a mut E,
    tx: &'a mut Vec<u8>,
    rx: &'a mut Vec<u8>,
    pending: &'a mut Option<Pending>,
    stats: &'a mut DriverStats,
    /// The timeout already said to be late (step 4), so not again in step 1.
    said_late: Option<Time>,
    /// Set by the waker that ends the run; the others then stop.
    outcome: Option<Result<RunOutcome, DriverError>>,
    /// The stop pipe's write end, closed when the run ends (the others'
    /// waits see it hang up).
    stop_tx: Option<OwnedFd>,
}

/// The protocol's loop on one thread (see the module docs): the wait (step
/// 3) without the lock, then step 4 (if the socket is readable) and steps 1
/// and 2 under it.
fn waker<E: DatagramEndpoint + ?Sized, H: Fn(usize, u64)>(
    index: usize,
    cfg: &DriverConfig,
    clock: Clock,
    core: &Mutex<Core<'_, E>>,
    (socket, stop_rx, deadline, held): (&UdpSocket, Option<RawFd>, Time, &H),
) -> WakerStats {
    let sched0 = SchedStat::now();
    let mut waiter = Waiter::new(
        clock,
        WaiterConfig {
            spin: cfg.spin,
            timer_slack: cfg.timer_slack,
            fair_slice: cfg.fair_slice,
            ..WaiterConfig::default()
        },
    );
    let mut mine = WakerStats {
        wakeups: 0,
        lateness: lateness_stats(),
        sched: SchedStat {
            cpu_ns: 0,
            wait_ns: 0,
        },
    };
    let lock = || core.lock().unwrap_or_else(PoisonError::into_inner);
    let mut readable = false;
    loop {
        let (wake, want_write) = {
            let mut c = lock();
            if c.outcome.is_some() {
                break;
            }
            // Step 4 after a wait that found the socket readable, then steps
            // 1 and 2, in one turn.
            let step = match c.read_if(readable, cfg, clock, socket) {
                Ok(true) => Ok(Step::End(RunOutcome::Done)),
                Ok(false) => c.step(cfg, clock, socket, deadline),
                Err(e) => Err(e),
            };
            match step {
                Ok(Step::Wait(wake, want_write)) => (wake, want_write),
                Ok(Step::End(o)) => {
                    c.end(Ok(o));
                    break;
                }
                Err(e) => {
                    c.end(Err(e));
                    break;
                }
            }
        };
        readable = match wait(&mut waiter, &mut mine, socket, stop_rx, wake, want_write) {
            Ok(r) => r,
            Err(e) => {
                lock().end(Err(e));
                break;
            }
        };
        held(index, mine.wakeups);
    }
    mine.sched = SchedStat::now().since(sched0);
    mine
}

/// After steps 1 and 2: wait until then (and for the socket to become
/// writable if set), or the run ends.
enum Step {
    Wait(Time, bool),
    End(RunOutcome),
}

impl<E: DatagramEndpoint + ?Sized> Core<'_, E> {
    /// The run ends (the first waker to say so decides how).
    fn end(&mut self, outcome: Result<RunOutcome, DriverError>) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
        }
        self.stop_tx = None;
    }

    /// Steps 1 and 2; what to wait for.
    fn step(
        &mut self,
        cfg: &DriverConfig,
        clock: Clock,
        socket: &UdpSocket,
        deadline: Time,
    ) -> Result<Step, DriverError> {
        if self.endpoint.is_done() {
            return Ok(Step::End(RunOutcome::Done));
        }
        let now = clock.now();
        if now >= deadline {
            return Ok(Step::End(RunOutcome::Deadline));
        }
        if let Some(t) = self.endpoint.poll_timeout().filter(|&t| t <= now) {
            if t < now && self.said_late != Some(t) {
                self.stats.late_timeouts += 1;
                self.endpoint.handle_late_timeout(now);
            }
            self.stats.timeouts += 1;
            self.endpoint.handle_timeout(now);
            if self.endpoint.is_done() {
                return Ok(Step::End(RunOutcome::Done));
            }
        }
        let more = self.transmit(cfg, clock, socket)?;
        if self.endpoint.is_done() {
            return Ok(Step::End(RunOutcome::Done));
        }
        let wake = if more {
            // A full burst went: look at the socket, then go on sending.
            Time::ZERO
        } else {
            let retry = self.pending.and_then(|p| p.retry_at);
            [self.endpoint.poll_timeout(), retry, Some(deadline)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(Time::MAX)
        };
        let want_write = self.pending.is_some_and(|p| p.retry_at.is_none());
        Ok(Step::Wait(wake, want_write))
    }

    /// Step 4 if the socket was found readable. `true` if the endpoint
    /// became done.
    fn read_if(
        &mut self,
        readable: bool,
        cfg: &DriverConfig,
        clock: Clock,
        socket: &UdpSocket,
    ) -> Result<bool, DriverError> {
        if !readable {
            return Ok(false);
        }
        // A timeout that passed while the thread was not running is said
        // to be late before the datagrams that queued meanwhile are read
        // (they refill a pacer as if it had been on time).
        let now = clock.now();
        self.said_late = self.endpoint.poll_timeout().filter(|&t| t < now);
        if self.said_late.is_some() {
            self.stats.late_timeouts += 1;
            self.endpoint.handle_late_timeout(now);
        }
        self.receive(cfg, clock, socket)
    }

    /// Step 2: send the pending datagram, then what the endpoint gives.
    /// `true` if the burst limit stopped it (more may be ready).
    fn transmit(
        &mut self,
        cfg: &DriverConfig,
        clock: Clock,
        socket: &UdpSocket,
    ) -> Result<bool, DriverError> {
        for _ in 0..cfg.max_burst {
            let now = clock.now();
            let p = match self.pending.take() {
                Some(p) if p.retry_at.is_some_and(|t| now < t) => {
                    *self.pending = Some(p);
                    return Ok(false);
                }
                Some(p) => p,
                None => match self.endpoint.poll_transmit(now, self.tx) {
                    Some((len, to, ecn)) => {
                        assert!(
                            len <= self.tx.len(),
                            "poll_transmit wrote {len} bytes into a {}-byte buffer",
                            self.tx.len()
                        );
                        Pending {
                            len,
                            to,
                            ecn,
                            retry_at: None,
                        }
                    }
                    None => return Ok(false),
                },
            };
            match socket.send_to(&self.tx[..p.len], p.to, p.ecn) {
                Ok(n) => {
                    self.stats.datagrams_sent += 1;
                    self.stats.bytes_sent += n as u64;
                }
                Err(UdpError::WouldBlock { .. }) => {
                    self.stats.send_would_block += 1;
                    *self.pending = Some(Pending {
                        retry_at: None,
                        ..p
                    });
                    return Ok(false);
                }
                Err(UdpError::NoBuffers { .. }) => {
                    self.stats.send_no_buffers += 1;
                    *self.pending = Some(Pending {
                        retry_at: Some(now.saturating_add(cfg.enobufs_retry)),
                        ..p
                    });
                    return Ok(false);
                }
                Err(e) if is_fatal(&e) => return Err(DriverError::Send(e)),
                Err(_) => self.stats.send_dropped += 1,
            }
        }
        Ok(true)
    }

    /// Read up to a batch of datagrams into the endpoint. `true` if the
    /// endpoint became done.
    fn receive(
        &mut self,
        cfg: &DriverConfig,
        clock: Clock,
        socket: &UdpSocket,
    ) -> Result<bool, DriverError> {
        for _ in 0..cfg.max_recv_batch {
            match socket.recv_from(self.rx) {
                Ok(Some((len, from, ecn))) => {
                    self.stats.datagrams_received += 1;
                    self.stats.bytes_received += len as u64;
                    self.endpoint
                        .handle_datagram(clock.now(), from, &self.rx[..len], ecn);
                    if self.endpoint.is_done() {
                        return Ok(true);
                    }
                }
                Ok(None) => break,
                Err(UdpError::Truncated { .. }) => self.stats.recv_truncated += 1,
                Err(UdpError::Recv(e)) if is_queued_icmp(&e) => self.stats.recv_errors += 1,
                Err(e) => return Err(DriverError::Recv(e)),
            }
        }
        Ok(false)
    }
}

/// Step 3: wait until the socket is ready, the clock reaches `wake` (the
/// [`Waiter`] sleeps in `ppoll` until `spin` before `wake`, polls after),
/// or the stop pipe hangs up; `true` if the socket is readable. A wait
/// that reaches `wake` records how late it noticed.
fn wait(
    waiter: &mut Waiter,
    mine: &mut WakerStats,
    socket: &UdpSocket,
    stop_rx: Option<RawFd>,
    wake: Time,
    want_write: bool,
) -> Result<bool, DriverError> {
    let mut pfd = [
        PollFd::new(socket.as_raw_fd(), true, want_write),
        PollFd::readable(stop_rx.unwrap_or(-1)),
    ];
    let n = if stop_rx.is_some() { 2 } else { 1 };
    let deadline = (wake != Time::MAX).then_some(wake);
    mine.wakeups += 1;
    match waiter
        .wait(deadline, &mut pfd[..n])
        .map_err(DriverError::Poll)?
    {
        // Writable: the caller retries its datagram anyway. POLLERR (a
        // queued ICMP error) is read, and skipped, by recvmsg.
        Wake::Ready => Ok(pfd[0].can_read()),
        Wake::Due(late) => {
            mine.lateness.record(late);
            Ok(false)
        }
        Wake::Passed | Wake::Slept => Ok(false),
    }
}

/// Send errors that say the socket, not the datagram, is broken.
fn is_fatal(e: &UdpError) -> bool {
    match e {
        UdpError::Send { source, .. } => matches!(
            source.raw_os_error(),
            Some(errno::EBADF | errno::ENOTSOCK | errno::EFAULT | errno::EOPNOTSUPP)
        ),
        UdpError::FamilyMismatch { .. } => false,
        // Setting the TOS failed: the socket is unusable for ECN.
        UdpError::SockOpt { .. } => true,
        _ => false,
    }
}

/// Errors an unconnected UDP socket reports from earlier ICMP messages.
fn is_queued_icmp(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(errno::ECONNREFUSED | errno::EHOSTUNREACH | errno::ENETUNREACH | errno::EMSGSIZE)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timeout every `period` from `start`, `count` of them; when each was
    /// handled.
    struct Ticker {
        start: Time,
        period: Dur,
        count: u64,
        handled: Vec<Time>,
    }

    impl DatagramEndpoint for Ticker {
        fn handle_datagram(&mut self, _: Time, _: SocketAddr, _: &[u8], _: Ecn) {}
        fn poll_transmit(&mut self, _: Time, _: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
            None
        }
        fn poll_timeout(&self) -> Option<Time> {
            let n = self.handled.len() as u64;
            (n < self.count).then(|| self.start + self.period * (n + 1))
        }
        fn handle_timeout(&mut self, now: Time) {
            self.handled.push(now);
        }
        fn handle_late_timeout(&mut self, _: Time) {}
        fn is_done(&self) -> bool {
            self.handled.len() as u64 == self.count
        }
    }

    /// Runs a ticker (100 timeouts 1 ms apart) with `wakers`, the caller's
    /// waker held for `hold` after its 20th wait; the longest gap between
    /// two handled timeouts.
    fn longest_gap(wakers: usize, hold: Dur) -> Dur {
        let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut d = Driver::new(DriverConfig {
            wakers,
            ..DriverConfig::default()
        });
        let mut e = Ticker {
            start: d.now(),
            period: Dur::from_millis(1),
            count: 100,
            handled: Vec::new(),
        };
        let held = |waker: usize, wait: u64| {
            if waker == 0 && wait == 20 {
                std::thread::sleep(std::time::Duration::from_nanos(hold.as_nanos()));
            }
        };
        let out = d.run_held(&s, &mut e, d.now() + Dur::from_secs(10), &held);
        assert_eq!(out.unwrap(), RunOutcome::Done);
        assert_eq!(d.stats().timeouts, 100);
        // Each waker sleeps to each timeout (a few more for a late one),
        // none spins.
        let wakeups = d.stats().wakeups;
        assert!(wakeups <= 3 * 100 * wakers as u64, "{wakeups} wake-ups");
        e.handled.windows(2).map(|w| w[1] - w[0]).max().unwrap()
    }

    #[test]
    fn a_second_waker_serves_the_timeouts_while_the_first_is_held() {
        // Issue 25: beside CPU-bound processes a woken normal-priority thread
        // sometimes waits a scheduler tick (4 ms at HZ=250) or more for its
        // CPU; here the caller's waker is held 100 ms. Alone, no timeout is
        // handled meanwhile; with a second waker the 1 ms schedule goes on
        // (the bound leaves the second waker a machine's own noise: gaps of
        // 10-20 ms were seen at a load of 18 on 2 cores).
        let hold = Dur::from_millis(100);
        let alone = longest_gap(1, hold);
        assert!(alone >= hold, "one waker: longest gap {alone:?}");
        let two = longest_gap(2, hold);
        assert!(
            two * 2 < hold,
            "two wakers: longest gap {two:?} (one waker: {alone:?})"
        );
    }

    #[test]
    fn two_wakers_end_the_run_when_the_endpoint_is_done() {
        // The second waker, asleep with nothing to wait for, is woken by the
        // stop pipe and joined: the run returns at once, not at its deadline.
        let s = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut d = Driver::new(DriverConfig {
            wakers: 2,
            ..DriverConfig::default()
        });
        let mut e = Ticker {
            start: d.now(),
            period: Dur::from_millis(5),
            count: 3,
            handled: Vec::new(),
        };
        let t0 = d.now();
        let out = d.run(&s, &mut e, t0 + Dur::from_secs(10)).unwrap();
        assert_eq!(out, RunOutcome::Done);
        assert_eq!(e.handled.len(), 3);
        assert!(d.now() - t0 < Dur::from_secs(1), "{:?}", d.now() - t0);
        // Both wakers' waits are counted, and their CPU time.
        assert!(d.stats().wakeups >= 3, "{:?}", d.stats());
        assert!(d.stats().cpu_ns > 0);
    }
}
