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

/// `struct sched_attr` up to `sched_period` (`SCHED_ATTR_SIZE_VER0`, 48
/// bytes; include/uapi/linux/sched/types.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

fn get_attr() -> Option<SchedAttr> {
    let mut a = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: `a` is a writable sched_attr of `size` bytes; pid 0 is the
    // calling thread; flags 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut a, size, 0) };
    (r == 0).then_some(a)
}

/// The calling thread's fair-scheduler slice (`sched_attr.sched_runtime`
/// of a `SCHED_OTHER` thread, Linux 6.12+; the default is the system's base
/// slice, 0.75-3 ms); `None` if unavailable or the thread is not fair.
pub fn fair_slice() -> Option<u64> {
    get_attr()
        .filter(|a| a.sched_policy == libc::SCHED_OTHER as u32)
        .map(|a| a.sched_runtime)
}

/// Sets the calling thread's fair-scheduler slice (Linux 6.12+, EEVDF:
/// `sched_setattr(2)` with `sched_runtime` on a `SCHED_OTHER` thread, no
/// privilege needed; the kernel clamps it to 0.1-100 ms) and puts the
/// previous one back when dropped. A short slice is a short virtual
/// deadline: on a busy machine the thread preempts a CPU-bound one when it
/// wakes instead of waiting its turn (kernel/sched/fair.c `PREEMPT_SHORT`),
/// as a real-time thread would, without real-time priority. Best effort: on
/// an older kernel, a real-time thread or a refusal nothing changes.
pub struct FairSlice {
    previous: Option<SchedAttr>,
}

impl FairSlice {
    pub fn set(slice_ns: u64) -> FairSlice {
        let Some(prev) = get_attr().filter(|a| a.sched_policy == libc::SCHED_OTHER as u32) else {
            return FairSlice { previous: None };
        };
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_runtime: slice_ns,
            ..prev
        };
        FairSlice {
            previous: set_attr(&attr).then_some(SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                ..prev
            }),
        }
    }
}

fn set_attr(a: &SchedAttr) -> bool {
    // SAFETY: `a` is a live sched_attr whose `size` field is its size; pid 0
    // is the calling thread; flags 0. Same policy and nice: only the slice.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, a as *const SchedAttr, 0) == 0 }
}

impl Drop for FairSlice {
    fn drop(&mut self) {
        if let Some(prev) = self.previous {
            set_attr(&prev);
        }
    }
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
    fn a_fair_slice_is_set_and_put_back() {
        let Some(before) = fair_slice() else {
            return; // not a fair thread, or a kernel without sched_getattr
        };
        {
            let g = FairSlice::set(100_000);
            if g.previous.is_some() {
                assert_eq!(fair_slice(), Some(100_000));
            }
        }
        assert_eq!(fair_slice(), Some(before));
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
