//! Kernel TCP sockets: non-blocking IPv4 sockets (socket, bind, listen,
//! connect, accept4), the `TCP_INFO` a connection reports and its
//! congestion control (`TCP_CONGESTION`), tcp(7).
//!
//! `TCP_INFO` is read as the raw `struct tcp_info` of
//! `include/uapi/linux/tcp.h` (offsets in [`TcpInfo::parse`]); fields a
//! shorter (older-kernel) struct lacks read as zero.

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde::Serialize;

use crate::cvt;
use crate::udp::to_sockaddr;

/// A non-blocking, close-on-exec IPv4 TCP socket.
pub fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain call with integer arguments.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `bind(2)` to `addr`.
pub fn bind(s: &impl AsRawFd, addr: SocketAddrV4) -> io::Result<()> {
    let (sa, len) = to_sockaddr(SocketAddr::V4(addr));
    // SAFETY: `sa` holds a sockaddr_in of `len` bytes.
    cvt(unsafe {
        libc::bind(
            s.as_raw_fd(),
            (&sa as *const libc::sockaddr_storage).cast(),
            len,
        )
    })
    .map(|_| ())
}

/// `listen(2)` with a backlog of `backlog` connections.
pub fn listen(s: &impl AsRawFd, backlog: i32) -> io::Result<()> {
    // SAFETY: plain call with integer arguments.
    cvt(unsafe { libc::listen(s.as_raw_fd(), backlog) }).map(|_| ())
}

/// Start connecting a non-blocking socket to `to`: `Ok` once started
/// (`EINPROGRESS`) or done.
pub fn connect_nb(s: &impl AsRawFd, to: SocketAddrV4) -> io::Result<()> {
    let (sa, len) = to_sockaddr(SocketAddr::V4(to));
    // SAFETY: `sa` holds a sockaddr_in of `len` bytes.
    let r = unsafe {
        libc::connect(
            s.as_raw_fd(),
            (&sa as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(())
    } else {
        Err(e)
    }
}

/// Accept one connection, non-blocking and close-on-exec; `Ok(None)` when
/// none is waiting.
pub fn accept_nb(l: &impl AsRawFd) -> io::Result<Option<OwnedFd>> {
    // SAFETY: no address is requested (both pointers null).
    let fd = unsafe {
        libc::accept4(
            l.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd >= 0 {
        // SAFETY: `fd` was just created and is owned by nobody else.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }));
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(None)
    } else {
        Err(e)
    }
}

/// The `TCP_INFO` fields l4slab uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    /// `TCPI_OPT_*` bits: 8 = ECN negotiated, 16 = ECE seen.
    pub options: u8,
    pub rto_us: u32,
    pub snd_mss: u32,
    pub unacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub notsent_bytes: u32,
    pub min_rtt_us: u32,
    pub delivery_rate: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
}

/// `TCPI_OPT_ECN`: ECN was negotiated on the connection.
pub const TCPI_OPT_ECN: u8 = 8;
/// `TCPI_OPT_ECN_SEEN`: at least one ECT packet was received.
pub const TCPI_OPT_ECN_SEEN: u8 = 16;

impl TcpInfo {
    /// Decode a raw `struct tcp_info` of `b.len()` bytes.
    pub fn parse(b: &[u8]) -> TcpInfo {
        let u8_at = |o: usize| b.get(o).copied().unwrap_or(0);
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
        };
        let u64_at = |o: usize| {
            b.get(o..o + 8).map_or(0, |s| {
                u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
            })
        };
        TcpInfo {
            state: u8_at(0),
            ca_state: u8_at(1),
            options: u8_at(5),
            rto_us: u32_at(8),
            snd_mss: u32_at(16),
            unacked: u32_at(24),
            lost: u32_at(32),
            retrans: u32_at(36),
            rtt_us: u32_at(68),
            rttvar_us: u32_at(72),
            snd_ssthresh: u32_at(76),
            snd_cwnd: u32_at(80),
            total_retrans: u32_at(100),
            pacing_rate: u64_at(104),
            bytes_acked: u64_at(120),
            bytes_received: u64_at(128),
            segs_out: u32_at(136),
            notsent_bytes: u32_at(144),
            min_rtt_us: u32_at(148),
            delivery_rate: u64_at(160),
            delivered: u32_at(192),
            delivered_ce: u32_at(196),
            bytes_sent: u64_at(200),
            bytes_retrans: u64_at(208),
        }
    }

    pub fn ecn_negotiated(&self) -> bool {
        self.options & TCPI_OPT_ECN != 0
    }
}

/// `getsockopt(TCP_INFO)`.
pub fn tcp_info(fd: &impl AsRawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; 512];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes, and the kernel writes at
    // most `len` and stores the length it wrote in `len`.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TcpInfo::parse(&buf[..len as usize]))
}

/// `setsockopt(TCP_CONGESTION, name)`.
pub fn set_congestion(fd: &impl AsRawFd, name: &str) -> io::Result<()> {
    // SAFETY: `name` is readable for the length we pass (the kernel copies
    // at most that many bytes; no NUL needed).
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getsockopt(TCP_CONGESTION)`: the congestion control a socket really uses.
pub fn congestion(fd: &impl AsRawFd) -> io::Result<String> {
    let mut buf = [0u8; 16]; // TCP_CA_NAME_MAX
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes; the kernel writes at most
    // that many.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let name = &buf[..(len as usize).min(buf.len())];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}
