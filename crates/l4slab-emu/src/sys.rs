//! Thin, safe wrappers over the Linux calls the emulator makes: TUN devices,
//! network namespaces, epoll (with `epoll_pwait2`), signalfd, scheduling,
//! pipes, socket options and the clock.
//!
//! Most `unsafe` blocks of the crate live here, each a single libc call on
//! memory this module owns. The others are next to the code they serve,
//! each with its `SAFETY` note: the `pre_exec` hooks that set up children
//! (shell.rs, netns.rs), the kernel-TCP sockets of a scenario run (apps.rs),
//! and the raw sockets, `TCP_INFO` and `recvmsg` control messages of the
//! probes (probe.rs, ecncheck.rs). Errors are `std::io::Error` (errno)
//! wrapped by callers into [`crate::EmuError`] with what was being done.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// A libc return value as a `Result` (negative: `errno`).
pub fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The emulator's clock, the real-time UDP driver's: `CLOCK_MONOTONIC` as
/// [`Time`] since an epoch (`l4slab_udp_driver::clock`).
pub use l4slab_udp_driver::clock::{monotonic_ns, Clock};

pub fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn getppid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getppid() }
}

/// `prctl(PR_SET_PDEATHSIG, sig)`: the kernel sends `sig` to this process
/// when the thread that forked it exits (prctl(2); cleared in children by
/// fork). Async-signal-safe, so usable between fork and exec.
pub fn set_parent_death_signal(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

pub fn kill(pid: i32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall.
    cvt(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Switch the calling thread into the network namespace of `ns`.
pub fn setns_net(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a valid fd.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// An fd of the calling thread's current network namespace.
pub fn current_netns() -> io::Result<File> {
    File::open("/proc/thread-self/ns/net")
}

/// Run `f` with the calling thread inside the network namespace `ns`, then
/// switch back (even if `f` fails).
pub fn in_netns<T>(ns: &impl AsRawFd, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let home = current_netns()?;
    setns_net(ns)?;
    let r = f();
    setns_net(&home).expect("cannot return to the original network namespace");
    r
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const IFF_NAPI: libc::c_short = 0x0010;

/// Extra TUNSETIFF flags: `IFF_NAPI` unless `L4SLAB_TUN_NAPI=0` (experiment switch).
fn tun_extra_flags() -> libc::c_short {
    match std::env::var("L4SLAB_TUN_NAPI").as_deref() {
        Ok("0") => 0,
        _ => IFF_NAPI,
    }
}
/// `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6`.
pub const TUN_OFFLOADS: libc::c_ulong = 0x01 | 0x02 | 0x04;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Create a (non-persistent) TUN device `name` in the network namespace
/// `ns`, with `IFF_VNET_HDR` and the given offloads; returns the
/// non-blocking fd. The device disappears when the fd is closed, so a
/// crashed emulator never leaves a device behind.
pub fn tun_create(ns: &impl AsRawFd, name: &str, offloads: libc::c_ulong) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    // The device is created in the namespace current at open(2).
    let fd = in_netns(ns, || {
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: valid C string.
        let fd = cvt(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR | tun_extra_flags(),
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq` we own.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) })?;
    let sz: libc::c_int = crate::packet::VNET_HDR_LEN as libc::c_int;
    // SAFETY: TUNSETVNETHDRSZ reads an int.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETVNETHDRSZ, &sz) })?;
    // Always set the offloads explicitly (emulator-probe.md §6.1).
    // SAFETY: TUNSETOFFLOAD takes the flags by value.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, offloads) })?;
    Ok(fd)
}

/// `setsockopt(fd, level, opt, &v)` for an `int` option.
pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a valid int and its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// A pipe, both ends close-on-exec: (read end, write end).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two ints.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: fresh fds owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `read(2)`; `Ok(None)` when it would block.
pub fn read_nb(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

/// `write(2)` of one whole packet.
pub fn write_all_nb(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// An epoll set whose events carry a `u64` token.
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fresh fd.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: valid epoll_event.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })
            .map(|_| ())
    }

    /// Wait up to `timeout_ns` (`None` = forever) with `epoll_pwait2`
    /// (nanosecond timeout; no timer slack for real-time threads); returns
    /// the tokens that are ready. One syscall per wake-up, where a timerfd
    /// needs three (arm, wait, read).
    pub fn wait(&self, out: &mut Vec<u64>, timeout_ns: Option<u64>) -> io::Result<()> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 16];
        let ts = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let tp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `evs` is valid for 16 entries, `tp` is null or a valid
        // timespec, and no signal mask is passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.0.as_raw_fd(),
                evs.as_mut_ptr(),
                evs.len() as libc::c_int,
                tp,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        out.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        out.extend(evs[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// The signals the emulator handles through a signalfd.
pub const HANDLED_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD];

fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// The number of threads of this process (the entries of `/proc/self/task`).
pub fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// Block [`HANDLED_SIGNALS`] in this thread and return a signalfd for them.
/// Call before spawning threads so they inherit the mask.
pub fn signalfd() -> io::Result<OwnedFd> {
    let set = sigset(&HANDLED_SIGNALS);
    // SAFETY: valid set; old mask not requested.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    // SAFETY: valid set.
    let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Read pending signals from a signalfd.
pub fn read_signals(fd: RawFd) -> Vec<libc::c_int> {
    let mut out = Vec::new();
    let mut buf = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
    while let Ok(Some(n)) = read_nb(fd, &mut buf) {
        if n < 4 {
            break;
        }
        out.push(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as libc::c_int);
    }
    out
}

/// Signals an embedding runtime may leave ignored (Rust and Python ignore
/// SIGPIPE, Python also SIGXFSZ); an ignored signal stays ignored across
/// exec (signal(7)), so children get them back at their defaults, as
/// Python's `subprocess` does with `restore_signals`.
const RUNTIME_IGNORED: [libc::c_int; 2] = [libc::SIGPIPE, libc::SIGXFSZ];

/// For `pre_exec` in children: empty signal mask, default handlers (the
/// handled and the runtime-ignored signals), normal scheduling, all CPUs,
/// and optionally the network namespace `netns`.
///
/// # Safety
/// Only async-signal-safe calls; meant to run between fork and exec.
pub unsafe fn child_setup(netns: Option<RawFd>, cpus: Option<&libc::cpu_set_t>) -> io::Result<()> {
    let empty = sigset(&[]);
    libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    for &s in HANDLED_SIGNALS.iter().chain(&RUNTIME_IGNORED) {
        libc::signal(s, libc::SIG_DFL);
    }
    let p = libc::sched_param { sched_priority: 0 };
    libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
    if let Some(set) = cpus {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
    }
    if let Some(ns) = netns {
        cvt(libc::setns(ns, libc::CLONE_NEWNET))?;
    }
    Ok(())
}

/// A CPU set of the given CPUs.
pub fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: `set` is valid; CPU_SET bounds-checks against its size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// Pin the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus);
    // SAFETY: valid set.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(|_| ())
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid set.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    // SAFETY: valid set; index within CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Real-time priority for the calling thread and 1 ns timer slack
/// (emulator-probe.md §3: SCHED_FIFO + slack 1 halves the p99 wake-up error).
pub fn realtime(priority: i32) -> io::Result<()> {
    // SAFETY: plain prctl.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) })?;
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: valid sched_param.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) }).map(|_| ())
}

/// CPU time (user, system) of the *calling thread* in seconds
/// (`RUSAGE_THREAD`: in `run` mode the applications thread's socket work
/// must not be counted as the forwarder's).
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
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

/// `waitpid(pid, WNOHANG)`: `Some(wait status)` once the child has exited.
pub fn try_wait(pid: i32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: valid pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r == pid).then_some(status)
}

/// Shell-style exit code of a wait status (128 + signal for a kill).
pub fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Is fd 0 a terminal?
pub fn stdin_is_tty() -> bool {
    // SAFETY: plain call.
    unsafe { libc::isatty(0) == 1 }
}

/// Make process group `pgid` the terminal's foreground group (job control).
pub fn set_foreground(pgid: i32) -> io::Result<()> {
    // A background process calling tcsetpgrp gets SIGTTOU unless it blocks it.
    let set = sigset(&[libc::SIGTTOU]);
    // SAFETY: valid set; old mask not requested.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    // SAFETY: plain call.
    cvt(unsafe { libc::tcsetpgrp(0, pgid) }).map(|_| ())
}

pub fn getpgrp() -> i32 {
    // SAFETY: plain call.
    unsafe { libc::getpgrp() }
}

/// An exclusive `flock(2)` on a lock file (created if missing), released
/// when dropped (or when the process dies).
pub struct Flock(File);

impl Flock {
    pub fn exclusive(path: &Path) -> io::Result<Flock> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        loop {
            // SAFETY: plain call on an fd we own.
            match cvt(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }) {
                Ok(_) => return Ok(Flock(f)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Flock {
    fn drop(&mut self) {
        // SAFETY: plain call on an fd we own.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Open a file by path as a read-only fd for `setns` (e.g. `/run/netns/NAME`).
pub fn open_ro(path: &Path) -> io::Result<File> {
    File::open(path)
}
