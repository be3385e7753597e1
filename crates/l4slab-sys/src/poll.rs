//! `ppoll(2)` on a few descriptors, with a nanosecond timeout and no
//! signal mask (an epoll set, [`crate::epoll`], is for many).

use std::io;
use std::os::fd::RawFd;

use l4slab_core::Dur;

/// One descriptor to watch and, after [`poll`], what it reported.
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct PollFd(libc::pollfd);

impl PollFd {
    /// Watch `fd` for readability (`POLLIN`) and/or writability (`POLLOUT`).
    /// An fd that is not open reports `POLLNVAL`, which is no error here.
    pub fn new(fd: RawFd, read: bool, write: bool) -> PollFd {
        let events = if read { libc::POLLIN } else { 0 } | if write { libc::POLLOUT } else { 0 };
        PollFd(libc::pollfd {
            fd,
            events,
            revents: 0,
        })
    }

    pub fn readable(fd: RawFd) -> PollFd {
        PollFd::new(fd, true, false)
    }

    pub fn writable(fd: RawFd) -> PollFd {
        PollFd::new(fd, false, true)
    }

    /// After [`poll`]: data to read, or an error queued on the socket
    /// (`POLLIN | POLLERR`: a queued ICMP error is read, and skipped, by
    /// `recvmsg`).
    pub fn can_read(&self) -> bool {
        self.0.revents & (libc::POLLIN | libc::POLLERR) != 0
    }
}

/// Wait until one of `fds` is ready or `timeout` passed (`None`: no
/// timeout; zero: only look): how many reported something. `EINTR` is
/// returned as an error of kind `Interrupted`.
pub fn poll(fds: &mut [PollFd], timeout: Option<Dur>) -> io::Result<usize> {
    let ts = timeout.map(crate::clock::timespec);
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    for f in fds.iter_mut() {
        f.0.revents = 0;
    }
    // SAFETY: `PollFd` is a transparent `pollfd`, so `fds` is a valid array
    // of `fds.len()` pollfds the kernel may write `revents` into; `tp` is
    // null or points at a live timespec; no signal mask is passed.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr().cast::<libc::pollfd>(),
            fds.len() as libc::nfds_t,
            tp,
            std::ptr::null(),
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
