//! The one real-time waiter: wait for a deadline on [`Clock`], or until a
//! descriptor is ready, as accurately as a normal Linux thread can.
//!
//! **How** ([`Waiter::wait`]): sleep in the readiness source's nanosecond
//! timeout (`epoll_pwait2` or `ppoll`) until [`WaiterConfig::spin`] before
//! the deadline, then look at the source without sleeping until the
//! deadline; with the thread's timer slack at [`WaiterConfig::timer_slack`]
//! for the waiter's life (restored after), since a normal thread's timeouts
//! fire up to its slack (default 50 µs) late. Measured on a Linux 6.18 VM
//! with 2 vCPUs, normal scheduling, 1 ms apart: a bare timeout fires 77 µs
//! late at p50 with the default slack, 29 µs with 1 ns slack, and 0.15 µs
//! with a 50 µs spin on top (20-100 µs at p99, a few ms at worst when the
//! vCPU is not running), for about 2 % more CPU at one wake-up per ms
//! (l4slab-udp-driver's `tests/driver.rs`).
//!
//! **Spin only at real-time priority.** The spin is used only when the
//! waiting thread runs `SCHED_FIFO`/`SCHED_RR` when the waiter is created
//! ([`crate::sched::is_realtime`]). A normal thread that spins spends the
//! CPU time the scheduler would otherwise credit to its next wake-up, and is
//! preempted exactly when it should send: on a 2-core VM with six CPU-bound
//! processes, `l4slab send` reached 6.5-8 of 20 Mbit/s with 2.5-2.9-packet
//! bursts while spinning (issue 25; figures in docs/PERFORMANCE.md). There
//! it sleeps to the deadline (1 ns slack) with, if asked
//! ([`WaiterConfig::fair_slice`]), a short fair-scheduler slice so that its
//! wake-ups preempt CPU-bound threads (Linux 6.12+ EEVDF), and the caller's
//! pacer absorbs the lateness left.
//!
//! **Lateness.** A wait that reaches its deadline after sleeping or
//! spinning returns [`Wake::Due`] with how late it noticed it (now −
//! deadline); the caller records it in a [`lateness_stats`] histogram,
//! summarised by [`Lateness`]. A deadline already past when the wait began
//! is not a timed wake-up ([`Wake::Passed`]) and is not late.
//!
//! Users: the emulator's forwarder (`min_sleep` batches releases, SCHED_FIFO
//! already gives it 1 ns slack), the emulator's own endpoints (`max_sleep`
//! to notice the end of the run) and l4slab-udp-driver's `Driver`.

use std::io;

use l4slab_core::stats::DurStats;
use l4slab_core::{Dur, Time};

use crate::clock::{Clock, TimerSlack};
use crate::epoll::Epoll;
use crate::poll::{poll, PollFd};
use crate::sched::FairSlice;

/// Waiter settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaiterConfig {
    /// Look at the source without sleeping for this long before the
    /// deadline (trades CPU for accuracy), if the thread runs at real-time
    /// priority (see the module docs); zero: always sleep.
    pub spin: Dur,
    /// Never sleep for less than this (several deadlines within it are
    /// served by one wake-up, at most this much late); zero: no floor.
    pub min_sleep: Dur,
    /// Never sleep longer than this: a wait that would returns
    /// [`Wake::Slept`] after it, so the caller can look at something else
    /// (a stop flag); `None`: sleep as long as needed.
    pub max_sleep: Option<Dur>,
    /// The thread's timer slack while the waiter lives (at least 1 ns);
    /// `None`: leave it.
    pub timer_slack: Option<Dur>,
    /// A normal thread's fair-scheduler slice while the waiter lives
    /// ([`crate::sched::FairSlice`]: a short one lets its wake-ups preempt
    /// CPU-bound threads); `None`: leave it.
    pub fair_slice: Option<Dur>,
}

/// Why [`Waiter::wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The source reported a ready descriptor.
    Ready,
    /// The deadline came while waiting; how late the waiter noticed it.
    Due(Dur),
    /// The deadline had passed before the wait: the source was looked at once.
    Passed,
    /// [`WaiterConfig::max_sleep`] passed; the deadline is still ahead.
    Slept,
}

/// What a [`Waiter`] waits on besides the clock: ready descriptors.
pub trait Readiness {
    /// Wait at most `timeout` (`None`: no limit; zero: only look); `true`
    /// if something is ready. A signal is `Ok(false)`.
    fn wait_ready(&mut self, timeout: Option<Dur>) -> io::Result<bool>;
}

impl Readiness for Epoll {
    fn wait_ready(&mut self, timeout: Option<Dur>) -> io::Result<bool> {
        Ok(self.wait(timeout)? > 0)
    }
}

impl Readiness for [PollFd] {
    fn wait_ready(&mut self, timeout: Option<Dur>) -> io::Result<bool> {
        match poll(self, timeout) {
            Ok(n) => Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Waits for deadlines on one clock (see the module docs). Holds the
/// thread's timer slack while it lives: create it on the thread that waits.
pub struct Waiter {
    cfg: WaiterConfig,
    clock: Clock,
    _slack: Option<TimerSlack>,
    _slice: Option<FairSlice>,
}

impl Waiter {
    /// A waiter for the calling thread: [`WaiterConfig::spin`] is kept only
    /// if the thread runs at real-time priority now (see the module docs).
    pub fn new(clock: Clock, cfg: WaiterConfig) -> Waiter {
        Waiter::with_policy(clock, cfg, crate::sched::is_realtime())
    }

    /// A waiter that spins as configured only if `realtime`.
    fn with_policy(clock: Clock, mut cfg: WaiterConfig, realtime: bool) -> Waiter {
        if !realtime {
            cfg.spin = Dur::ZERO;
        }
        Waiter {
            _slack: cfg.timer_slack.map(TimerSlack::set),
            _slice: cfg
                .fair_slice
                .filter(|_| !realtime)
                .map(|d| FairSlice::set(d.as_nanos())),
            cfg,
            clock,
        }
    }

    pub fn config(&self) -> &WaiterConfig {
        &self.cfg
    }

    /// Wait until `src` has something ready or the clock reaches
    /// `deadline` (`None`: no deadline): sleep until [`WaiterConfig::spin`]
    /// before it (at least [`WaiterConfig::min_sleep`], at most
    /// [`WaiterConfig::max_sleep`]), then look at `src` without sleeping.
    ///
    /// # Errors
    /// The source's, other than a signal.
    pub fn wait<R: Readiness + ?Sized>(
        &mut self,
        deadline: Option<Time>,
        src: &mut R,
    ) -> io::Result<Wake> {
        let mut waited = false;
        loop {
            let now = self.clock.now();
            let timeout = match deadline {
                None => None,
                Some(d) if now < d => {
                    let left = d - now;
                    Some(if left <= self.cfg.spin {
                        Dur::ZERO
                    } else {
                        (left - self.cfg.spin).max(self.cfg.min_sleep)
                    })
                }
                Some(d) if waited => return Ok(Wake::Due(now - d)),
                // Due already: only look.
                Some(_) => Some(Dur::ZERO),
            };
            let capped = self
                .cfg
                .max_sleep
                .filter(|&m| timeout.is_none_or(|t| t > m));
            if src.wait_ready(capped.or(timeout))? {
                return Ok(Wake::Ready);
            }
            if capped.is_some() {
                return Ok(Wake::Slept);
            }
            if deadline.is_some_and(|d| now >= d) {
                return Ok(Wake::Passed);
            }
            waited = true;
        }
    }
}

/// A histogram of wake-up lateness: 10 ns units up to 10 s.
pub fn lateness_stats() -> DurStats {
    DurStats::new(10, 1_000_000_000)
}

/// How late timed wake-ups fired: exact count, min, mean and max,
/// percentiles from the histogram (10 ns resolution, 3 significant digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lateness {
    pub wakeups: u64,
    pub min: Dur,
    pub mean: Dur,
    pub p50: Dur,
    pub p99: Dur,
    pub max: Dur,
}

impl Lateness {
    /// The summary of `stats`; `None` before the first timed wake-up.
    pub fn of(stats: &DurStats) -> Option<Lateness> {
        let v = stats.summary_scaled(1.0);
        let ns = |k: &str| Dur::from_nanos(v[k].as_f64().unwrap_or(0.0).round() as u64);
        (stats.count() > 0).then(|| Lateness {
            wakeups: stats.count(),
            min: ns("min"),
            mean: ns("mean"),
            p50: ns("p50"),
            p99: ns("p99"),
            max: ns("max"),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::fd::{pipe_cloexec, write_all_nb};

    fn waiter(cfg: WaiterConfig) -> (Waiter, Clock) {
        let clock = Clock::start();
        (Waiter::new(clock, cfg), clock)
    }

    #[test]
    fn a_deadline_is_reached_never_early() {
        let (r, _w) = pipe_cloexec().unwrap();
        let mut fds = [PollFd::readable(r.as_raw_fd())];
        let spin = Dur::from_micros(50);
        let (mut w, clock) = waiter(WaiterConfig {
            spin,
            ..WaiterConfig::default()
        });
        for ms in [1, 2, 3] {
            let d = clock.now() + Dur::from_millis(ms);
            // (Passed if this thread lost the CPU past `d` before waiting.)
            match w.wait(Some(d), &mut fds[..]).unwrap() {
                Wake::Due(late) => assert!(clock.now() >= d && late <= clock.now() - d),
                Wake::Passed => assert!(clock.now() >= d),
                other => panic!("{other:?} before {d:?}"),
            }
        }
        // A deadline already past: one look, not a timed wake-up.
        assert_eq!(
            w.wait(Some(Time::ZERO), &mut fds[..]).unwrap(),
            Wake::Passed
        );
    }

    #[test]
    fn only_a_realtime_thread_spins() {
        let cfg = WaiterConfig {
            spin: Dur::from_micros(50),
            ..WaiterConfig::default()
        };
        let clock = Clock::start();
        assert_eq!(
            Waiter::with_policy(clock, cfg, true).config().spin,
            Dur::from_micros(50)
        );
        assert_eq!(
            Waiter::with_policy(clock, cfg, false).config().spin,
            Dur::ZERO
        );
        let here = Waiter::new(clock, cfg).config().spin;
        assert_eq!(here.is_zero(), !crate::sched::is_realtime());
    }

    #[test]
    fn readiness_ends_the_wait_and_max_sleep_caps_it() {
        let (r, wr) = pipe_cloexec().unwrap();
        let mut ep = Epoll::new(1).unwrap();
        ep.add(r.as_raw_fd(), 0).unwrap();
        let (mut w, clock) = waiter(WaiterConfig {
            max_sleep: Some(Dur::from_millis(1)),
            timer_slack: Some(Dur::from_nanos(1)),
            ..WaiterConfig::default()
        });
        let far = Time::from_secs(60);
        assert_eq!(w.wait(Some(far), &mut ep).unwrap(), Wake::Slept);
        assert!(clock.now() >= Time::from_millis(1) && clock.now() < far);
        write_all_nb(wr.as_raw_fd(), b"x").unwrap();
        assert_eq!(w.wait(Some(far), &mut ep).unwrap(), Wake::Ready);
        assert_eq!(w.wait(None, &mut ep).unwrap(), Wake::Ready);
    }

    #[test]
    fn the_timer_slack_is_held_while_the_waiter_lives() {
        let before = crate::clock::timer_slack();
        {
            let _w = Waiter::new(
                Clock::start(),
                WaiterConfig {
                    timer_slack: Some(Dur::from_nanos(1)),
                    ..WaiterConfig::default()
                },
            );
            assert_eq!(crate::clock::timer_slack(), Dur::from_nanos(1));
        }
        assert_eq!(crate::clock::timer_slack(), before);
    }

    #[test]
    fn lateness_is_summarised_in_nanoseconds() {
        let mut s = lateness_stats();
        assert_eq!(Lateness::of(&s), None);
        for us in [1, 2, 3] {
            s.record(Dur::from_micros(us));
        }
        let l = Lateness::of(&s).unwrap();
        assert_eq!(
            (l.wakeups, l.min, l.mean, l.max),
            (
                3,
                Dur::from_micros(1),
                Dur::from_micros(2),
                Dur::from_micros(3)
            )
        );
    }
}
