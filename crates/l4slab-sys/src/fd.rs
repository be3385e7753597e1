//! File descriptors: pipes, socket pairs, non-blocking reads and writes of
//! whole packets, `flock(2)`, and whether stdin is a terminal.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::cvt;

/// A pipe, both ends close-on-exec: (read end, write end).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A non-blocking, close-on-exec `AF_UNIX` / `SOCK_SEQPACKET` pair: each
/// write is one message, read whole at the other end (a stand-in for a TUN
/// device in tests).
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `read(2)`; `Ok(None)` when it would block.
pub fn read_nb(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
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
    // SAFETY: `buf` is readable for `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Is fd 0 a terminal?
pub fn stdin_is_tty() -> bool {
    // SAFETY: plain call with an integer argument.
    unsafe { libc::isatty(0) == 1 }
}

/// Open a file by path as a read-only fd for `setns` (e.g. `/run/netns/NAME`).
pub fn open_ro(path: &Path) -> io::Result<File> {
    File::open(path)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seqpacket_pair_keeps_message_boundaries() {
        let (a, b) = seqpacket_pair().unwrap();
        write_all_nb(a.as_raw_fd(), b"one").unwrap();
        write_all_nb(a.as_raw_fd(), b"three").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(read_nb(b.as_raw_fd(), &mut buf).unwrap(), Some(3));
        assert_eq!(read_nb(b.as_raw_fd(), &mut buf).unwrap(), Some(5));
        assert_eq!(read_nb(b.as_raw_fd(), &mut buf).unwrap(), None);
    }
}
