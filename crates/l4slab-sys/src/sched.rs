//! Scheduling (sched(7)): CPU affinity, real-time priority, a thread's
//! CPU time and its scheduler statistics.

use std::io;

use crate::cvt;

/// A set of CPUs (`cpu_set_t`).
#[derive(Clone, Copy)]
pub struct CpuSet(pub(crate) libc::cpu_set_t);

impl CpuSet {
    /// The set of the given CPUs (numbers beyond `CPU_SETSIZE` are ignored).
    pub fn of(cpus: &[usize]) -> CpuSet {
        // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: `set` is a live cpu_set_t; CPU_SET bounds-checks `c`
            // against its size.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        CpuSet(set)
    }
}

/// Pin the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    let set = CpuSet::of(cpus);
    // SAFETY: `set.0` is a live cpu_set_t of the size we pass.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set.0) })
        .map(|_| ())
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable for the size we pass.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is a live cpu_set_t; `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Real-time priority for the calling thread and 1 ns timer slack
/// (emulator-probe.md §3: SCHED_FIFO + slack 1 halves the p99 wake-up error).
pub fn realtime(priority: i32) -> io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) })?;
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a live sched_param the kernel only reads.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) }).map(|_| ())
}

/// Whether the calling thread runs under a real-time policy (`SCHED_FIFO`
/// or `SCHED_RR`, sched_getscheduler(2)); `false` if it cannot be read.
pub fn is_realtime() -> bool {
    // SAFETY: plain syscall on the calling thread (pid 0).
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
}

/// CPU time (user, system) of the *calling thread* in seconds
/// (`RUSAGE_THREAD`: in `run` mode the applications thread's socket work
/// must not be counted as the forwarder's).
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live rusage for the kernel to fill in.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Scheduler statistics of the calling thread (`/proc/thread-self/schedstat`,
/// `Documentation/scheduler/sched-stats.rst`): time on a CPU and time spent
/// runnable but waiting on a run queue, in nanoseconds. The wait is what
/// other load on the machine costs a thread; zeros if unavailable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStat {
    pub cpu_ns: u64,
    pub wait_ns: u64,
}

impl SchedStat {
    pub fn now() -> SchedStat {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let mut f = text
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap_or(0));
        SchedStat {
            cpu_ns: f.next().unwrap_or(0),
            wait_ns: f.next().unwrap_or(0),
        }
    }

    /// What happened since `start` (a reading of the same thread).
    pub fn since(self, start: SchedStat) -> SchedStat {
        SchedStat {
            cpu_ns: self.cpu_ns.saturating_sub(start.cpu_ns),
            wait_ns: self.wait_ns.saturating_sub(start.wait_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_set_holds_exactly_its_cpus() {
        let s = CpuSet::of(&[0, 3]);
        // SAFETY: a live cpu_set_t; indices below CPU_SETSIZE.
        let has = |c| unsafe { libc::CPU_ISSET(c, &s.0) };
        assert!(has(0) && has(3) && !has(1) && !has(2));
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn is_realtime_agrees_with_proc() {
        // /proc/thread-self/sched: "policy : 0" (SCHED_OTHER), 1 FIFO, 2 RR.
        let text = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
        let policy = text
            .lines()
            .find_map(|l| l.strip_prefix("policy"))
            .and_then(|v| v.trim_start_matches([' ', ':']).trim().parse::<i32>().ok());
        if let Some(p) = policy {
            assert_eq!(is_realtime(), p == 1 || p == 2);
        }
    }
}
