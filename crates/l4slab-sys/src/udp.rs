//! A non-blocking UDP socket whose datagrams each carry their own IP ECN
//! field, in both directions.
//!
//! * Send: the TOS byte (IPv4, `IP_TOS`) or traffic class (IPv6,
//!   `IPV6_TCLASS`) goes as a control message of `sendmsg(2)`, so every
//!   datagram can carry a different codepoint (ip(7), ipv6(7); RFC 3168 §5:
//!   "the ECN field ... the two least significant bits of the TOS octet").
//!   If the kernel refuses the control message (`EINVAL`), the socket falls
//!   back for good to `setsockopt` before each send whose codepoint differs
//!   from the last one ([`EcnSendMode::SockOpt`]): one extra syscall per
//!   change, still exact per datagram because this socket sends from one
//!   thread.
//! * Receive: `IP_RECVTOS` / `IPV6_RECVTCLASS` make `recvmsg(2)` return
//!   the arriving TOS / traffic class as a control message; its two low
//!   bits are the [`Ecn`].
//!
//! Nothing allocates per datagram: the caller owns the payload buffers, the
//! address and control buffers live on the stack.
//!
//! Linux-specific: the `IP_TOS` send control message (Linux ≥ 3.13 for
//! IPv4), reading `IP_TOS` on a dual-stack IPv6 socket for IPv4 peers, and
//! `MSG_TRUNC` returning a datagram's real length. DSCP bits are sent as
//! zero. Not done: GSO/GRO (`UDP_SEGMENT`), `recvmmsg`/`sendmmsg` batches,
//! kernel receive timestamps.
//!
//! [`recv_with_tos`] reads one datagram and its whole TOS byte from any
//! IPv4 UDP socket (the emulator's ECN path check uses a blocking
//! `std::net::UdpSocket` with a read timeout).

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

use l4slab_core::Ecn;

use crate::cvt;
use crate::sockopt::{self, SockOpt};

/// What can go wrong with a [`UdpSocket`]. The send-side variants name the
/// destination; [`UdpError::is_transient`] tells which ones mean "try the
/// same datagram again later".
#[derive(Debug, thiserror::Error)]
pub enum UdpError {
    #[error("cannot create a UDP socket: {0}")]
    Socket(#[source] io::Error),
    #[error("cannot bind a UDP socket to {addr}: the address is already in use")]
    AddrInUse { addr: SocketAddr },
    #[error("cannot bind a UDP socket to {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("setsockopt({option}) failed: {source}")]
    SockOpt {
        option: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("getsockname failed: {0}")]
    LocalAddr(#[source] io::Error),
    #[error("cannot send to {to} from an IPv4 socket; bind an IPv6 address (e.g. \"[::]:0\") to reach IPv6 peers")]
    FamilyMismatch { to: SocketAddr },
    #[error("send to {to}: the socket's send buffer is full (EAGAIN)")]
    WouldBlock { to: SocketAddr },
    #[error("send to {to}: no buffer space in the kernel (ENOBUFS)")]
    NoBuffers { to: SocketAddr },
    #[error("send to {to} failed: {source}")]
    Send {
        to: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("recvmsg failed: {0}")]
    Recv(#[source] io::Error),
    #[error("a {len}-byte datagram from {from} did not fit the {cap}-byte buffer; it was dropped")]
    Truncated {
        from: SocketAddr,
        len: usize,
        cap: usize,
    },
}

impl UdpError {
    /// `EAGAIN` or `ENOBUFS` on send: nothing is wrong with the datagram,
    /// the kernel had no room for it now.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            UdpError::WouldBlock { .. } | UdpError::NoBuffers { .. }
        )
    }
}

/// How [`UdpSocket::send_to`] sets a datagram's ECN field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnSendMode {
    /// An `IP_TOS` / `IPV6_TCLASS` control message on each `sendmsg`.
    Cmsg,
    /// `setsockopt(IP_TOS / IPV6_TCLASS)` whenever the codepoint changes,
    /// then a plain `sendmsg` (kernels that refuse the control message).
    SockOpt,
}

/// The address family a socket was bound with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

/// A non-blocking UDP socket with per-datagram ECN. `Sync`: several
/// threads may send and receive on it (the driver's wakers, one at a time
/// under its lock). In [`EcnSendMode::SockOpt`] mode a send is two system
/// calls (`setsockopt`, `sendmsg`), so concurrent senders must take turns
/// there or a datagram may leave with the other's codepoint.
#[derive(Debug)]
pub struct UdpSocket {
    fd: OwnedFd,
    family: Family,
    /// [`EcnSendMode::SockOpt`] if set, else [`EcnSendMode::Cmsg`].
    sockopt_mode: AtomicBool,
    /// The TOS / traffic class last set by `setsockopt` in
    /// [`EcnSendMode::SockOpt`] mode (IPv4 and IPv6 headers apart: a
    /// dual-stack socket keeps both; [`NO_TOS`]: none set yet).
    sockopt_tos: [AtomicU16; 2],
}

/// [`UdpSocket`]'s `sockopt_tos` before any TOS was set (not a `u8`).
const NO_TOS: u16 = u16::MAX;

/// Control-message space for one `int` TOS or traffic class on send, and
/// for whatever the kernel attaches on receive (one TOS or class expected).
/// `u64` elements align it for `cmsghdr`.
const CMSG_WORDS: usize = 16;

impl UdpSocket {
    /// A non-blocking, close-on-exec UDP socket bound to `addr` (port 0: the
    /// kernel picks one; see [`UdpSocket::local_addr`]), set up to report
    /// each arriving datagram's ECN field. An IPv6 socket keeps the
    /// system's `IPV6_V6ONLY` default (Linux: dual-stack), so bound to
    /// `[::]` it also serves IPv4 peers, as IPv4-mapped addresses.
    ///
    /// # Errors
    /// [`UdpError::AddrInUse`] if another socket holds `addr`;
    /// [`UdpError::Bind`] for other refusals (e.g. an address that is not
    /// local); [`UdpError::Socket`] / [`UdpError::SockOpt`] if the socket
    /// cannot be set up.
    pub fn bind(addr: SocketAddr) -> Result<UdpSocket, UdpError> {
        let (family, domain) = match addr {
            SocketAddr::V4(_) => (Family::V4, libc::AF_INET),
            SocketAddr::V6(_) => (Family::V6, libc::AF_INET6),
        };
        // SAFETY: plain syscall.
        let fd = cvt(unsafe {
            libc::socket(
                domain,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::IPPROTO_UDP,
            )
        })
        .map_err(UdpError::Socket)?;
        // SAFETY: a fresh fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let s = UdpSocket {
            fd,
            family,
            sockopt_mode: AtomicBool::new(false),
            sockopt_tos: [AtomicU16::new(NO_TOS), AtomicU16::new(NO_TOS)],
        };
        // IPv4 datagrams' TOS, also on a dual-stack IPv6 socket (ip(7)
        // options apply to the IPv4 traffic of an AF_INET6 socket).
        let v4 = s.setsockopt(SockOpt::IpRecvTos, 1);
        if family == Family::V6 {
            s.setsockopt(SockOpt::Ipv6RecvTclass, 1)?;
        } else {
            // (An IPv6 socket that refuses it sees no IPv4 datagrams.)
            v4?;
        }
        let (sa, len) = to_sockaddr(addr);
        // SAFETY: `sa` is a valid sockaddr of `len` bytes.
        let r = unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_storage).cast(),
                len,
            )
        };
        if let Err(e) = cvt(r) {
            return Err(if e.raw_os_error() == Some(libc::EADDRINUSE) {
                UdpError::AddrInUse { addr }
            } else {
                UdpError::Bind { addr, source: e }
            });
        }
        Ok(s)
    }

    /// The address the socket is bound to (with the kernel's port for port 0).
    ///
    /// # Errors
    /// [`UdpError::LocalAddr`] if `getsockname` fails.
    pub fn local_addr(&self) -> Result<SocketAddr, UdpError> {
        // SAFETY: sockaddr_storage is plain data.
        let mut sa: libc::sockaddr_storage = unsafe { mem::zeroed() };
        let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `sa` is writable for `len` bytes.
        cvt(unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                (&mut sa as *mut libc::sockaddr_storage).cast(),
                &mut len,
            )
        })
        .map_err(UdpError::LocalAddr)?;
        from_sockaddr(&sa).ok_or_else(|| {
            UdpError::LocalAddr(io::Error::new(
                io::ErrorKind::InvalidData,
                "not an IP socket address",
            ))
        })
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// How ECN is set on send: [`EcnSendMode::Cmsg`] until the kernel
    /// refuses the control message.
    pub fn ecn_send_mode(&self) -> EcnSendMode {
        if self.sockopt_mode.load(Ordering::Relaxed) {
            EcnSendMode::SockOpt
        } else {
            EcnSendMode::Cmsg
        }
    }

    /// Force a send mode (tests of the fallback; kernels known to refuse
    /// the control message).
    pub fn set_ecn_send_mode(&self, mode: EcnSendMode) {
        self.sockopt_mode
            .store(mode == EcnSendMode::SockOpt, Ordering::Relaxed);
    }

    /// `SO_RCVBUF` / `SO_SNDBUF` in bytes (the kernel doubles the value and
    /// caps it at `net.core.rmem_max` / `wmem_max`).
    ///
    /// # Errors
    /// [`UdpError::SockOpt`].
    pub fn set_buffer_sizes(&self, recv: usize, send: usize) -> Result<(), UdpError> {
        let clamp = |v: usize| v.min(i32::MAX as usize) as i32;
        self.setsockopt(SockOpt::RecvBuffer, clamp(recv))?;
        self.setsockopt(SockOpt::SendBuffer, clamp(send))
    }

    /// Send `buf` as one datagram to `to` with the IP ECN field `ecn`.
    /// From an IPv6 socket an IPv4 `to` goes as its IPv4-mapped address.
    ///
    /// # Errors
    /// [`UdpError::WouldBlock`] / [`UdpError::NoBuffers`] (transient: send
    /// it again later); [`UdpError::FamilyMismatch`] for an IPv6 `to` on an
    /// IPv4 socket; [`UdpError::Send`] for any other refusal (e.g.
    /// `EMSGSIZE`, `ENETUNREACH`).
    pub fn send_to(&self, buf: &[u8], to: SocketAddr, ecn: Ecn) -> Result<usize, UdpError> {
        let dst = self.destination(to)?;
        // The header the datagram leaves with: IPv4 for an IPv4 or
        // IPv4-mapped destination (its ECN is set with IP_TOS even on an
        // IPv6 socket), IPv6 otherwise.
        let v4_header = match dst {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
        };
        let tos = ecn.bits();
        match self.ecn_send_mode() {
            EcnSendMode::Cmsg => match self.sendmsg(buf, dst, Some((v4_header, tos))) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // Kernels without the TOS control message refuse it
                    // with EINVAL; try once without it.
                    self.set_tos(v4_header, tos)?;
                    let n = self
                        .sendmsg(buf, dst, None)
                        .map_err(|e| send_error(to, e))?;
                    self.set_ecn_send_mode(EcnSendMode::SockOpt);
                    Ok(n)
                }
                r => r.map_err(|e| send_error(to, e)),
            },
            EcnSendMode::SockOpt => {
                self.set_tos(v4_header, tos)?;
                self.sendmsg(buf, dst, None).map_err(|e| send_error(to, e))
            }
        }
    }

    /// Receive one datagram into `buf`: `Ok(Some((len, from, ecn)))`, or
    /// `Ok(None)` when none is waiting. From an IPv6 socket an IPv4 peer's
    /// address is IPv4-mapped, as the kernel reports it. A datagram without
    /// a TOS / traffic class control message reads as [`Ecn::NotEct`].
    ///
    /// # Errors
    /// [`UdpError::Truncated`] if the datagram was longer than `buf` (it is
    /// consumed); [`UdpError::Recv`] for anything else.
    pub fn recv_from(&self, buf: &mut [u8]) -> Result<Option<(usize, SocketAddr, Ecn)>, UdpError> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut cbuf = [0u64; CMSG_WORDS];
        // SAFETY: sockaddr_storage and msghdr are plain data.
        let mut from: libc::sockaddr_storage = unsafe { mem::zeroed() };
        // SAFETY: as above; every pointer set below is valid for the call.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = mem::size_of_val(&cbuf);
        let n = loop {
            // SAFETY: `msg` describes buffers valid for the call; MSG_TRUNC
            // makes a UDP recvmsg return the datagram's real length.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(None),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(UdpError::Recv(e)),
            }
        };
        let from = from_sockaddr(&from).ok_or_else(|| {
            UdpError::Recv(io::Error::new(
                io::ErrorKind::InvalidData,
                "datagram from a non-IP address",
            ))
        })?;
        if msg.msg_flags & libc::MSG_TRUNC != 0 {
            return Err(UdpError::Truncated {
                from,
                len: n,
                cap: buf.len(),
            });
        }
        Ok(Some((n, from, ecn_of(&msg))))
    }

    /// The address to hand the kernel for `to`.
    fn destination(&self, to: SocketAddr) -> Result<SocketAddr, UdpError> {
        match (self.family, to) {
            (Family::V4, SocketAddr::V4(_)) | (Family::V6, SocketAddr::V6(_)) => Ok(to),
            (Family::V6, SocketAddr::V4(a)) => Ok(SocketAddr::V6(SocketAddrV6::new(
                a.ip().to_ipv6_mapped(),
                a.port(),
                0,
                0,
            ))),
            (Family::V4, SocketAddr::V6(a)) => match a.ip().to_ipv4_mapped() {
                Some(ip) => Ok(SocketAddr::V4(SocketAddrV4::new(ip, a.port()))),
                None => Err(UdpError::FamilyMismatch { to }),
            },
        }
    }

    /// One `sendmsg`, with the TOS / traffic class control message
    /// `(v4_header, tos)` if given; retried on `EINTR`.
    fn sendmsg(&self, buf: &[u8], to: SocketAddr, tos: Option<(bool, u8)>) -> io::Result<usize> {
        let (sa, salen) = to_sockaddr(to);
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut cbuf = [0u64; CMSG_WORDS];
        // SAFETY: msghdr is plain data; every pointer set below is valid.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_name = (&sa as *const libc::sockaddr_storage as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = salen;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some((v4_header, tos)) = tos {
            let (level, ty) = if v4_header {
                (libc::IPPROTO_IP, libc::IP_TOS)
            } else {
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
            };
            let value = libc::c_int::from(tos);
            // SAFETY: CMSG_* are pure size computations.
            let (space, len) = unsafe {
                (
                    libc::CMSG_SPACE(mem::size_of::<libc::c_int>() as u32) as usize,
                    libc::CMSG_LEN(mem::size_of::<libc::c_int>() as u32) as usize,
                )
            };
            assert!(space <= mem::size_of_val(&cbuf), "cmsg buffer too small");
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = space;
            // SAFETY: `cbuf` is aligned for cmsghdr and holds `space` bytes,
            // so the first header and its `int` of data are in bounds.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                assert!(!c.is_null(), "control buffer is set");
                (*c).cmsg_level = level;
                (*c).cmsg_type = ty;
                (*c).cmsg_len = len;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), value);
            }
        }
        loop {
            // SAFETY: `msg` describes buffers valid for the call.
            let n = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &msg, 0) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// [`EcnSendMode::SockOpt`]: set the TOS / traffic class if it differs
    /// from the one last set.
    fn set_tos(&self, v4_header: bool, tos: u8) -> Result<(), UdpError> {
        let slot = &self.sockopt_tos[usize::from(!v4_header)];
        if slot.load(Ordering::Relaxed) == u16::from(tos) {
            return Ok(());
        }
        let v = i32::from(tos);
        if v4_header {
            self.setsockopt(SockOpt::IpTos, v)?;
        } else {
            self.setsockopt(SockOpt::Ipv6Tclass, v)?;
        }
        slot.store(u16::from(tos), Ordering::Relaxed);
        Ok(())
    }

    fn setsockopt(&self, opt: SockOpt, v: i32) -> Result<(), UdpError> {
        sockopt::set(&self.fd, opt, v).map_err(|source| UdpError::SockOpt {
            option: opt.name(),
            source,
        })
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn send_error(to: SocketAddr, e: io::Error) -> UdpError {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => UdpError::WouldBlock { to },
        Some(libc::ENOBUFS) => UdpError::NoBuffers { to },
        _ => UdpError::Send { to, source: e },
    }
}

/// The ECN field from the `IP_TOS` (one byte) or `IPV6_TCLASS` (an `int`)
/// control message of a received datagram; Not-ECT without one.
fn ecn_of(msg: &libc::msghdr) -> Ecn {
    tos_of(msg).map_or(Ecn::NotEct, Ecn::from_bits)
}

/// The TOS byte or traffic class from the `IP_TOS` (one byte) or
/// `IPV6_TCLASS` (an `int`) control message of a received datagram (the
/// last one if several); `None` without one.
fn tos_of(msg: &libc::msghdr) -> Option<u8> {
    let mut tos = None;
    // SAFETY: `msg` is the header a successful recvmsg filled in, so its
    // control buffer holds `msg_controllen` bytes of control messages the
    // kernel wrote; CMSG_FIRSTHDR/CMSG_NXTHDR stay within them (null at the
    // end) and each header's data holds the option's value.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TOS) => tos = Some(*data),
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                    let v = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                    tos = Some(v as u8);
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    tos
}

/// Receive one datagram with its TOS byte on an IPv4 UDP socket that has
/// `IP_RECVTOS` on ([`crate::sockopt::SockOpt::IpRecvTos`]); TOS 0 when no
/// control message came. `Ok(None)` on a timeout (`SO_RCVTIMEO`) or when
/// a non-blocking socket has nothing.
pub fn recv_with_tos(
    s: &impl AsRawFd,
    buf: &mut [u8],
) -> io::Result<Option<(usize, SocketAddrV4, u8)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; CMSG_WORDS];
    // SAFETY: sockaddr_in is plain data (all-zero is a valid value).
    let mut from: libc::sockaddr_in = unsafe { mem::zeroed() };
    // SAFETY: msghdr is plain data; every pointer set below is valid.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = mem::size_of_val(&cbuf);
    // SAFETY: `msg` points at `from`, `iov` (describing `buf`) and `cbuf`,
    // all alive and writable for the lengths it gives.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            Ok(None)
        } else {
            Err(e)
        };
    }
    let addr = SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
        u16::from_be(from.sin_port),
    );
    Ok(Some((n as usize, addr, tos_of(&msg).unwrap_or(0))))
}

/// `addr` as a `sockaddr_in` / `sockaddr_in6` in a `sockaddr_storage`.
pub(crate) fn to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data.
    let mut ss: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// The IP socket address in `ss`; `None` for other families.
fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says `ss` holds a sockaddr_in.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says `ss` holds a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_round_trip_through_sockaddr() {
        for a in [
            "127.0.0.1:4433".parse::<SocketAddr>().unwrap(),
            "[fe80::1%3]:9".parse().unwrap(),
            SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 7, 0x12345, 0)),
        ] {
            let (ss, _) = to_sockaddr(a);
            assert_eq!(from_sockaddr(&ss), Some(a));
        }
    }

    #[test]
    fn only_transient_send_errors_are_retried() {
        let to: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(send_error(to, io::Error::from_raw_os_error(libc::EAGAIN)).is_transient());
        assert!(send_error(to, io::Error::from_raw_os_error(libc::ENOBUFS)).is_transient());
        assert!(!send_error(to, io::Error::from_raw_os_error(libc::EMSGSIZE)).is_transient());
    }
}
