//! l4slab-sys: the OS boundary. Every system call l4slab makes goes through
//! this crate, behind safe, typed functions; it is the only crate allowed
//! `unsafe` (the workspace denies `unsafe_code` everywhere else, DESIGN.md
//! §1) and every `unsafe` block here says why it is sound (`// SAFETY:`,
//! enforced by clippy's `undocumented_unsafe_blocks`).
//!
//! * [`clock`]: `CLOCK_MONOTONIC` as l4slab [`Time`](l4slab_core::Time)
//!   ([`Clock`]) and the thread's timer slack (`prctl`). The only clock
//!   reads of the project (DESIGN.md §4.4).
//! * [`realtime`]: the one real-time waiter ([`Waiter`]): sleep towards a
//!   deadline with 1 ns timer slack, spin the last stretch (at real-time
//!   priority only), report how late it noticed the deadline. Used by the
//!   emulator's forwarder, its own endpoints and the UDP driver.
//! * [`epoll`]: an epoll set with `epoll_pwait2` (nanosecond timeouts);
//!   [`poll`]: `ppoll` on a few descriptors.
//! * [`udp`]: a UDP socket whose datagrams each carry their own IP ECN field
//!   (`IP_TOS` / `IPV6_TCLASS` control messages on `sendmsg` / `recvmsg`).
//! * [`tcp`]: non-blocking kernel TCP sockets, their options, `TCP_INFO`,
//!   `TCP_CONGESTION`; [`icmp`]: a raw ICMP socket (ping).
//! * [`netns`]: network namespaces (`setns`); [`tun`]: TUN devices
//!   (`TUNSETIFF`, virtio-net header, offloads).
//! * [`fd`]: pipes, non-blocking reads and writes, socket pairs, `flock`.
//! * [`process`]: identity (`geteuid`, `getppid`), children (`pre_exec`
//!   set-up, `waitpid`, `kill`), process groups and the terminal.
//! * [`signal`]: signal numbers, masks and a `signalfd`.
//! * [`sched`]: CPU affinity, `SCHED_FIFO`, thread CPU time and scheduler
//!   statistics.
//!
//! Errors are `std::io::Error` (errno), except the UDP socket's typed
//! [`udp::UdpError`]. Linux only.

pub mod clock;
pub mod epoll;
pub mod fd;
pub mod icmp;
pub mod netns;
pub mod poll;
pub mod process;
pub mod realtime;
pub mod sched;
pub mod signal;
pub mod sockopt;
pub mod tcp;
pub mod tun;
pub mod udp;

pub use clock::{monotonic_ns, Clock, TimerSlack};
pub use epoll::Epoll;
pub use realtime::{Lateness, Waiter, WaiterConfig, Wake};
pub use udp::{EcnSendMode, Family, UdpError, UdpSocket};

use std::io;

/// A libc return value as a `Result` (negative: `errno`).
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `errno` values callers compare `io::Error::raw_os_error()` with.
pub mod errno {
    pub use libc::{
        EADDRNOTAVAIL, EBADF, ECONNREFUSED, EFAULT, EHOSTUNREACH, EINPROGRESS, EMSGSIZE,
        ENETUNREACH, ENOTCONN, ENOTSOCK, EOPNOTSUPP, EPERM, ESRCH,
    };
}
