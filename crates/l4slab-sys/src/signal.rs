//! Signals (signal(7)): their numbers, sending one, and receiving the ones
//! a supervisor handles through a `signalfd(2)` instead of handlers.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::cvt;
use crate::fd::read_nb;

/// A signal number.
pub type Signal = libc::c_int;

pub use libc::{SIGCHLD, SIGHUP, SIGINT, SIGKILL, SIGPIPE, SIGTERM, SIGTTOU, SIGXFSZ};

/// The signals the emulator handles through a signalfd.
pub const HANDLED_SIGNALS: [Signal; 4] = [SIGINT, SIGTERM, SIGHUP, SIGCHLD];

/// Signals an embedding runtime may leave ignored (Rust and Python ignore
/// SIGPIPE, Python also SIGXFSZ); an ignored signal stays ignored across
/// exec (signal(7)), so children get them back at their defaults, as
/// Python's `subprocess` does with `restore_signals`.
pub(crate) const RUNTIME_IGNORED: [Signal; 2] = [SIGPIPE, SIGXFSZ];

/// A signal set of `signals`. Async-signal-safe.
pub(crate) fn sigset(signals: &[Signal]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it below.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live sigset_t; invalid signal numbers are refused
    // with EINVAL, not undefined.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Block `signals` in the calling thread (`pthread_sigmask(SIG_BLOCK)`).
pub fn block(signals: &[Signal]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: `set` is a live sigset_t; the old mask is not requested.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `kill(2)`: send `sig` to process `pid`.
pub fn kill(pid: i32, sig: Signal) -> io::Result<()> {
    // SAFETY: plain call with integer arguments.
    cvt(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Block [`HANDLED_SIGNALS`] in this thread and return a signalfd for them.
/// Call before spawning threads so they inherit the mask.
pub fn signalfd() -> io::Result<OwnedFd> {
    block(&HANDLED_SIGNALS)?;
    let set = sigset(&HANDLED_SIGNALS);
    // SAFETY: `set` is a live sigset_t; -1 asks for a new descriptor.
    let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Read pending signals from a signalfd.
pub fn read_signals(fd: RawFd) -> Vec<Signal> {
    let mut out = Vec::new();
    let mut buf = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
    while let Ok(Some(n)) = read_nb(fd, &mut buf) {
        if n < 4 {
            break;
        }
        // `ssi_signo`, the first field of `struct signalfd_siginfo`.
        out.push(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as Signal);
    }
    out
}
