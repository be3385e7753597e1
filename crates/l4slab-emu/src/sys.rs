//! The OS calls the emulator makes, all of them l4slab-sys's (the OS
//! boundary, the only crate allowed `unsafe`): this module gathers the ones
//! the emulator uses under one name (`sys::in_netns`, `sys::tun_create`,
//! ...). Errors are `std::io::Error` (errno), wrapped by callers into
//! [`crate::EmuError`] with what was being done.

pub use l4slab_sys::clock::{monotonic_ns, Clock};
pub use l4slab_sys::epoll::Epoll;
pub use l4slab_sys::errno;
pub use l4slab_sys::fd::{
    open_ro, pipe_cloexec, read_nb, seqpacket_pair, stdin_is_tty, write_all_nb, Flock,
};
pub use l4slab_sys::netns::{current_netns, in_netns, setns_net};
pub use l4slab_sys::poll::{poll, PollFd};
pub use l4slab_sys::process::{
    exit_code, getpgrp, getppid, is_root, set_foreground, set_parent_death_signal, setpgid,
    thread_count, try_wait, ChildSetup,
};
pub use l4slab_sys::realtime::{lateness_stats, Waiter, WaiterConfig, Wake};
pub use l4slab_sys::sched::{allowed_cpus, cpu_times, realtime, set_affinity, CpuSet, SchedStat};
pub use l4slab_sys::signal::{
    kill, read_signals, signalfd, Signal, HANDLED_SIGNALS, SIGCHLD, SIGHUP, SIGINT, SIGKILL,
    SIGTERM,
};
pub use l4slab_sys::sockopt::{self, SockOpt};
pub use l4slab_sys::tun::{tun_create, TUN_OFFLOADS};
pub use l4slab_sys::{icmp, tcp, udp};
