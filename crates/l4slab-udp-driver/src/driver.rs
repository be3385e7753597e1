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
//! **Accounting** ([`DriverStats`]): datagrams and bytes each way, the
//! socket's push-backs, datagrams given up, and how late each timed wake-up
//! fired (wake-ups cut short by the socket are not counted: they were not
//! late), and the thread's time on a CPU and waiting on a run queue during
//! the runs (`/proc/thread-self/schedstat`: what other load cost it). Stats
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
use std::os::fd::AsRawFd;

use l4slab_core::stats::DurStats;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_sys::errno;
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
    /// Waits that returned (socket ready, deadline, or nothing to wait for).
    pub wakeups: u64,
    /// The driving thread's CPU time during the runs, ns (schedstat).
    pub cpu_ns: u64,
    /// The driving thread's time runnable but not running during the runs,
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
    /// If a buffer, burst or batch size is zero.
    pub fn with_clock(cfg: DriverConfig, clock: Clock) -> Driver {
        assert!(
            cfg.buffer_size > 0 && cfg.max_burst > 0 && cfg.max_recv_batch > 0,
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
    /// socket pushed back stays with the driver for its next run.
    ///
    /// # Errors
    /// [`DriverError`] if the socket or `ppoll` fails in a way no datagram
    /// explains.
    pub fn run<E: DatagramEndpoint + ?Sized>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
        deadline: Time,
    ) -> Result<RunOutcome, DriverError> {
        let sched0 = SchedStat::now();
        let out = self.run_loop(socket, endpoint, deadline);
        let sched = SchedStat::now().since(sched0);
        self.stats.cpu_ns += sched.cpu_ns;
        self.stats.run_queue_wait_ns += sched.wait_ns;
        out
    }

    fn run_loop<E: DatagramEndpoint + ?Sized>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
        deadline: Time,
    ) -> Result<RunOutcome, DriverError> {
        let mut waiter = Waiter::new(
            self.clock,
            WaiterConfig {
                spin: self.cfg.spin,
                timer_slack: self.cfg.timer_slack,
                fair_slice: self.cfg.fair_slice,
                ..WaiterConfig::default()
            },
        );
        // The timeout already said to be late (step 4), so not again in step 1.
        let mut said_late = None;
        loop {
            if endpoint.is_done() {
                return Ok(RunOutcome::Done);
            }
            let now = self.clock.now();
            if now >= deadline {
                return Ok(RunOutcome::Deadline);
            }
            if let Some(t) = endpoint.poll_timeout().filter(|&t| t <= now) {
                if t < now && said_late != Some(t) {
                    self.stats.late_timeouts += 1;
                    endpoint.handle_late_timeout(now);
                }
                self.stats.timeouts += 1;
                endpoint.handle_timeout(now);
                if endpoint.is_done() {
                    return Ok(RunOutcome::Done);
                }
            }
            let more = self.transmit(socket, endpoint)?;
            if endpoint.is_done() {
                return Ok(RunOutcome::Done);
            }
            let wake = if more {
                // A full burst went: look at the socket, then go on sending.
                Time::ZERO
            } else {
                let retry = self.pending.and_then(|p| p.retry_at);
                [endpoint.poll_timeout(), retry, Some(deadline)]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(Time::MAX)
            };
            let want_write = self.pending.is_some_and(|p| p.retry_at.is_none());
            let readable = self.wait(&mut waiter, socket, wake, want_write)?;
            if readable {
                // A timeout that passed while the thread was not running is
                // said to be late before the datagrams that queued meanwhile
                // are read (they refill a pacer as if it had been on time).
                let now = self.clock.now();
                said_late = endpoint.poll_timeout().filter(|&t| t < now);
                if said_late.is_some() {
                    self.stats.late_timeouts += 1;
                    endpoint.handle_late_timeout(now);
                }
                if self.receive(socket, endpoint)? {
                    return Ok(RunOutcome::Done);
                }
            }
        }
    }

    /// Step 2: send the pending datagram, then what the endpoint gives.
    /// `true` if the burst limit stopped it (more may be ready).
    fn transmit<E: DatagramEndpoint + ?Sized>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
    ) -> Result<bool, DriverError> {
        for _ in 0..self.cfg.max_burst {
            let now = self.clock.now();
            let p = match self.pending.take() {
                Some(p) if p.retry_at.is_some_and(|t| now < t) => {
                    self.pending = Some(p);
                    return Ok(false);
                }
                Some(p) => p,
                None => match endpoint.poll_transmit(now, &mut self.tx) {
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
                    self.pending = Some(Pending {
                        retry_at: None,
                        ..p
                    });
                    return Ok(false);
                }
                Err(UdpError::NoBuffers { .. }) => {
                    self.stats.send_no_buffers += 1;
                    self.pending = Some(Pending {
                        retry_at: Some(now.saturating_add(self.cfg.enobufs_retry)),
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

    /// Step 4: read up to a batch of datagrams into the endpoint. `true`
    /// if the endpoint became done.
    fn receive<E: DatagramEndpoint + ?Sized>(
        &mut self,
        socket: &UdpSocket,
        endpoint: &mut E,
    ) -> Result<bool, DriverError> {
        for _ in 0..self.cfg.max_recv_batch {
            match socket.recv_from(&mut self.rx) {
                Ok(Some((len, from, ecn))) => {
                    self.stats.datagrams_received += 1;
                    self.stats.bytes_received += len as u64;
                    endpoint.handle_datagram(self.clock.now(), from, &self.rx[..len], ecn);
                    if endpoint.is_done() {
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

    /// Step 3: wait until the socket is ready or the clock reaches `wake`
    /// (the [`Waiter`] sleeps in `ppoll` until `spin` before `wake`, polls
    /// after); `true` if the socket is readable. A wait that reaches `wake`
    /// records how late it noticed.
    fn wait(
        &mut self,
        waiter: &mut Waiter,
        socket: &UdpSocket,
        wake: Time,
        want_write: bool,
    ) -> Result<bool, DriverError> {
        let mut pfd = [PollFd::new(socket.as_raw_fd(), true, want_write)];
        let deadline = (wake != Time::MAX).then_some(wake);
        self.stats.wakeups += 1;
        match waiter
            .wait(deadline, &mut pfd[..])
            .map_err(DriverError::Poll)?
        {
            // Writable: the caller retries its datagram anyway. POLLERR (a
            // queued ICMP error) is read, and skipped, by recvmsg.
            Wake::Ready => Ok(pfd[0].can_read()),
            Wake::Due(late) => {
                self.stats.lateness.record(late);
                Ok(false)
            }
            Wake::Passed | Wake::Slept => Ok(false),
        }
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
