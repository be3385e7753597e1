//! The project's clock and timer setup: `CLOCK_MONOTONIC` as l4slab
//! [`Time`], and the calling thread's timer slack.
//!
//! The emulator and the UDP driver both read this clock, never
//! `Instant::now` (the core crate deliberately has no clock, DESIGN.md §4.4).

use l4slab_core::{Dur, Time};

/// `CLOCK_MONOTONIC` in nanoseconds (vDSO: no syscall).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `d` as a `timespec` (timeouts of `ppoll` and `epoll_pwait2`).
pub(crate) fn timespec(d: Dur) -> libc::timespec {
    libc::timespec {
        tv_sec: (d.as_nanos() / 1_000_000_000) as libc::time_t,
        tv_nsec: (d.as_nanos() % 1_000_000_000) as libc::c_long,
    }
}

/// [`Time`] since an epoch on `CLOCK_MONOTONIC`. `Copy`: drivers on
/// several threads can share one epoch, so their times compare (one-way
/// delays on one host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    epoch_ns: u64,
}

impl Clock {
    /// A clock whose [`Time::ZERO`] is now.
    pub fn start() -> Clock {
        Clock {
            epoch_ns: monotonic_ns(),
        }
    }

    /// A clock whose [`Time::ZERO`] is the `CLOCK_MONOTONIC` reading `epoch_ns`.
    pub fn from_epoch(epoch_ns: u64) -> Clock {
        Clock { epoch_ns }
    }

    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    pub fn now(&self) -> Time {
        Time::from_nanos(monotonic_ns().saturating_sub(self.epoch_ns))
    }

    /// The `CLOCK_MONOTONIC` reading of clock time `t`.
    pub fn to_monotonic(&self, t: Time) -> u64 {
        self.epoch_ns + t.as_nanos()
    }
}

/// Sets the calling thread's timer slack (prctl(2) `PR_SET_TIMERSLACK`)
/// and puts the previous value back when dropped. A normal thread's
/// `ppoll` timeouts may fire up to its slack late (default 50 µs);
/// real-time threads have none.
pub struct TimerSlack {
    previous: Option<libc::c_ulong>,
}

impl TimerSlack {
    /// Set the slack to `slack` (at least 1 ns: 0 would mean "the default").
    /// Best effort: a refusal leaves the slack as it was.
    pub fn set(slack: Dur) -> TimerSlack {
        // SAFETY: plain prctl; PR_GET_TIMERSLACK returns the slack.
        let prev = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        if prev < 0 {
            return TimerSlack { previous: None };
        }
        let ns = slack.as_nanos().max(1) as libc::c_ulong;
        // SAFETY: plain prctl with an integer argument.
        let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
        TimerSlack {
            previous: (r == 0).then_some(prev as libc::c_ulong),
        }
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        if let Some(prev) = self.previous {
            // SAFETY: plain prctl with an integer argument.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, prev, 0, 0, 0) };
        }
    }
}

/// The calling thread's timer slack.
pub fn timer_slack() -> Dur {
    // SAFETY: plain prctl; PR_GET_TIMERSLACK returns the slack.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    Dur::from_nanos(r.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_starts_at_zero_and_moves_forward() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(a < Time::from_millis(100) && a <= b);
        assert_eq!(Clock::from_epoch(c.epoch_ns()), c);
    }

    #[test]
    fn the_timer_slack_is_restored() {
        let before = timer_slack();
        {
            let _g = TimerSlack::set(Dur::from_nanos(1));
            assert_eq!(timer_slack(), Dur::from_nanos(1));
        }
        assert_eq!(timer_slack(), before);
    }
}
