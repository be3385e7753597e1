//! Integer socket options by name: [`SockOpt`] says which level and option
//! number (socket(7), ip(7), tcp(7)), [`set`] sets one.

use std::io;
use std::os::fd::AsRawFd;

use crate::cvt;

/// An `int`-valued socket option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockOpt {
    /// `SO_REUSEADDR` (socket(7)).
    ReuseAddr,
    /// `SO_SNDBUF` in bytes (the kernel doubles it, capped at `wmem_max`).
    SendBuffer,
    /// `SO_RCVBUF` in bytes (the kernel doubles it, capped at `rmem_max`).
    RecvBuffer,
    /// `IP_TOS`: the TOS byte of the datagrams sent (ip(7)).
    IpTos,
    /// `IP_RECVTOS`: report each arriving datagram's TOS byte.
    IpRecvTos,
    /// `IPV6_TCLASS`: the traffic class of the datagrams sent (ipv6(7)).
    Ipv6Tclass,
    /// `IPV6_RECVTCLASS`: report each arriving datagram's traffic class.
    Ipv6RecvTclass,
    /// `TCP_MAXSEG`: the MSS (tcp(7)).
    TcpMaxSeg,
    /// `TCP_NOTSENT_LOWAT`: unsent bytes above which the socket is not writable.
    TcpNotsentLowat,
    /// `TCP_FASTOPEN` on a listener: the queue of pending Fast Open requests.
    TcpFastopen,
    /// `TCP_FASTOPEN_CONNECT`: the first write rides in the SYN.
    TcpFastopenConnect,
}

impl SockOpt {
    /// (level, option number).
    fn raw(self) -> (libc::c_int, libc::c_int) {
        match self {
            SockOpt::ReuseAddr => (libc::SOL_SOCKET, libc::SO_REUSEADDR),
            SockOpt::SendBuffer => (libc::SOL_SOCKET, libc::SO_SNDBUF),
            SockOpt::RecvBuffer => (libc::SOL_SOCKET, libc::SO_RCVBUF),
            SockOpt::IpTos => (libc::IPPROTO_IP, libc::IP_TOS),
            SockOpt::IpRecvTos => (libc::IPPROTO_IP, libc::IP_RECVTOS),
            SockOpt::Ipv6Tclass => (libc::IPPROTO_IPV6, libc::IPV6_TCLASS),
            SockOpt::Ipv6RecvTclass => (libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS),
            SockOpt::TcpMaxSeg => (libc::IPPROTO_TCP, libc::TCP_MAXSEG),
            SockOpt::TcpNotsentLowat => (libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT),
            SockOpt::TcpFastopen => (libc::IPPROTO_TCP, libc::TCP_FASTOPEN),
            SockOpt::TcpFastopenConnect => (libc::IPPROTO_TCP, libc::TCP_FASTOPEN_CONNECT),
        }
    }

    /// The option's name, as in the man pages (for error messages).
    pub fn name(self) -> &'static str {
        match self {
            SockOpt::ReuseAddr => "SO_REUSEADDR",
            SockOpt::SendBuffer => "SO_SNDBUF",
            SockOpt::RecvBuffer => "SO_RCVBUF",
            SockOpt::IpTos => "IP_TOS",
            SockOpt::IpRecvTos => "IP_RECVTOS",
            SockOpt::Ipv6Tclass => "IPV6_TCLASS",
            SockOpt::Ipv6RecvTclass => "IPV6_RECVTCLASS",
            SockOpt::TcpMaxSeg => "TCP_MAXSEG",
            SockOpt::TcpNotsentLowat => "TCP_NOTSENT_LOWAT",
            SockOpt::TcpFastopen => "TCP_FASTOPEN",
            SockOpt::TcpFastopenConnect => "TCP_FASTOPEN_CONNECT",
        }
    }
}

/// `setsockopt(fd, level, opt, &v)` for an `int` option.
pub fn set(fd: &impl AsRawFd, opt: SockOpt, v: i32) -> io::Result<()> {
    let (level, name) = opt.raw();
    let v: libc::c_int = v;
    // SAFETY: the option value is a live `int` and we pass its size.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}
