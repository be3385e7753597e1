//! A raw ICMP socket (raw(7), root only), for the emulator's ping.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::cvt;
use crate::udp::to_sockaddr;

/// A blocking, close-on-exec `SOCK_RAW` / `IPPROTO_ICMP` socket: it sends
/// ICMP messages (the kernel adds the IPv4 header) and receives every
/// ICMP packet for this host, IPv4 header included.
pub fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain call with integer arguments.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_ICMP,
        )
    })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `sendto(2)` of one ICMP message to `dst`.
pub fn send_to(s: &impl AsRawFd, msg: &[u8], dst: Ipv4Addr) -> io::Result<usize> {
    let (sa, len) = to_sockaddr(SocketAddr::V4(SocketAddrV4::new(dst, 0)));
    // SAFETY: `msg` is readable for its length; `sa` holds a sockaddr_in of
    // `len` bytes.
    let n = unsafe {
        libc::sendto(
            s.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&sa as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
