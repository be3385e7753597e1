//! An epoll set (epoll(7)), level-triggered, whose events carry a `u64`
//! token, waited on with `epoll_pwait2` (Linux ≥ 5.11): a nanosecond
//! timeout, so a real-time thread (no timer slack) wakes when asked, and
//! one system call per wake-up where a timerfd needs three (arm, wait,
//! read). The cost of a wake-up grows with the descriptors that are ready,
//! not with all of them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use l4slab_core::Dur;

use crate::cvt;

/// An epoll set and the events of its last wait.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
    ready: usize,
}

impl Epoll {
    /// An empty set reporting at most `capacity` (at least 1) ready
    /// descriptors per wait.
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: plain call with an integer argument.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: `fd` was just created and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
            ready: 0,
        })
    }

    /// Watch `fd` for readability (`EPOLLIN`, level-triggered: a descriptor
    /// with data left is ready again), reported as `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is a live epoll_event the kernel only reads.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })
            .map(|_| ())
    }

    /// Wait up to `timeout` (`None`: until something is ready; zero: only
    /// look) with `epoll_pwait2`; how many descriptors are ready (their
    /// tokens: [`Epoll::ready`]). A signal ends the wait with none ready.
    pub fn wait(&mut self, timeout: Option<Dur>) -> io::Result<usize> {
        let ts = timeout.map(crate::clock::timespec);
        let tp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        self.ready = 0;
        // SAFETY: `events` is writable for its length, `tp` is null or
        // points at a live timespec, and no signal mask is passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                tp,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        self.ready = n as usize;
        Ok(self.ready)
    }

    /// The tokens of the descriptors the last [`Epoll::wait`] found ready.
    pub fn ready(&self) -> impl Iterator<Item = u64> + '_ {
        self.events[..self.ready].iter().map(|e| e.u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readable_pipe_is_reported_with_its_token() {
        let (r, w) = crate::fd::pipe_cloexec().unwrap();
        let mut ep = Epoll::new(4).unwrap();
        ep.add(r.as_raw_fd(), 7).unwrap();
        assert_eq!(ep.wait(Some(Dur::ZERO)).unwrap(), 0);
        assert_eq!(ep.ready().count(), 0);
        crate::fd::write_all_nb(w.as_raw_fd(), b"x").unwrap();
        assert_eq!(ep.wait(Some(Dur::from_millis(100))).unwrap(), 1);
        assert_eq!(ep.ready().collect::<Vec<_>>(), vec![7]);
    }
}
