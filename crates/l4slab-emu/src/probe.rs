//! Small measurement tools that run inside the namespaces (the `ping`,
//! `tcp_send`, `tcp_sink` plans, [`crate::plan`]), so tests and `l4slab
//! check-l4s` need no ping or iperf binaries: an ICMP echo
//! client, and a bulk TCP sender that samples `TCP_INFO` plus its sink.
//!
//! `TCP_INFO` is read as the raw `struct tcp_info` of
//! `include/uapi/linux/tcp.h` (offsets in [`TcpInfo::parse`]); fields a
//! shorter (older-kernel) struct lacks read as zero.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use serde::Serialize;

use crate::sys::monotonic_ns;

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
    // SAFETY: `buf` is valid for `len` bytes.
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
    // SAFETY: `name` is valid for its length.
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
    // SAFETY: `buf` is valid for `len` bytes.
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

/// The result of [`ping`].
#[derive(Clone, Debug, Serialize)]
pub struct PingReport {
    pub sent: u32,
    pub received: u32,
    /// Round-trip times of the replies, in ms, in send order.
    pub rtt_ms: Vec<f64>,
}

fn icmp_checksum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from(c[0]) << 8
        };
        s += u32::from(w);
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// ICMP echo `count` times to `dst`, every `interval`, `payload` bytes each
/// (raw socket: root only). Replies later than `timeout` count as lost.
///
/// # Errors
/// Socket errors.
pub fn ping(
    dst: Ipv4Addr,
    count: u32,
    interval: Duration,
    payload: usize,
    timeout: Duration,
) -> io::Result<PingReport> {
    // SAFETY: plain socket call.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_ICMP,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(dst.octets()),
        },
        sin_zero: [0; 8],
    };
    let ident = (std::process::id() & 0xffff) as u16;
    let mut sent_at = Vec::with_capacity(count as usize);
    let mut rtt = vec![None; count as usize];
    let mut buf = [0u8; 2048];
    let start = monotonic_ns();
    let step = interval.as_nanos() as u64;
    let end_wait = |i: u32| start + step * u64::from(i) + timeout.as_nanos() as u64;
    for seq in 0..count {
        let due = start + step * u64::from(seq);
        // Receive until it is time to send the next request.
        recv_replies(&sock, ident, &sent_at, &mut rtt, &mut buf, due)?;
        let mut pkt = vec![0u8; 8 + payload];
        pkt[0] = 8; // echo request
        pkt[4..6].copy_from_slice(&ident.to_be_bytes());
        pkt[6..8].copy_from_slice(&(seq as u16).to_be_bytes());
        let c = icmp_checksum(&pkt);
        pkt[2..4].copy_from_slice(&c.to_be_bytes());
        sent_at.push(monotonic_ns());
        // SAFETY: valid buffer and address.
        let r = unsafe {
            libc::sendto(
                sock.as_raw_fd(),
                pkt.as_ptr().cast(),
                pkt.len(),
                0,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    recv_replies(
        &sock,
        ident,
        &sent_at,
        &mut rtt,
        &mut buf,
        end_wait(count.saturating_sub(1)),
    )?;
    let rtt_ms: Vec<f64> = rtt.iter().flatten().copied().collect();
    Ok(PingReport {
        sent: count,
        received: rtt_ms.len() as u32,
        rtt_ms,
    })
}

fn recv_replies(
    sock: &impl AsRawFd,
    ident: u16,
    sent_at: &[u64],
    rtt: &mut [Option<f64>],
    buf: &mut [u8],
    until_ns: u64,
) -> io::Result<()> {
    loop {
        let now = monotonic_ns();
        if now >= until_ns || (sent_at.len() == rtt.len() && rtt.iter().all(Option::is_some)) {
            return Ok(());
        }
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = ((until_ns - now).div_ceil(1_000_000)).min(1000) as i32;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r <= 0 {
            continue;
        }
        // SAFETY: `buf` is valid for its length.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        let got = monotonic_ns();
        if n < 28 {
            continue;
        }
        let p = &buf[..n as usize];
        let ihl = usize::from(p[0] & 0x0f) * 4;
        if p.len() < ihl + 8 || p[ihl] != 0 {
            continue; // not an echo reply
        }
        let id = u16::from_be_bytes([p[ihl + 4], p[ihl + 5]]);
        let seq = usize::from(u16::from_be_bytes([p[ihl + 6], p[ihl + 7]]));
        if id == ident && seq < sent_at.len() && rtt[seq].is_none() {
            rtt[seq] = Some((got - sent_at[seq]) as f64 / 1e6);
        }
    }
}

/// One `TCP_INFO` sample of a sender.
#[derive(Clone, Debug, Serialize)]
pub struct TcpSample {
    pub t_s: f64,
    pub info: TcpInfo,
}

/// The result of [`tcp_send`].
#[derive(Clone, Debug, Serialize)]
pub struct TcpSendReport {
    pub cc: String,
    pub seconds: f64,
    pub bytes_written: u64,
    pub ecn: bool,
    pub samples: Vec<TcpSample>,
    pub last: TcpInfo,
}

/// Connect to `dst` (retrying for up to 3 s while the sink starts), set the
/// congestion control, write for `seconds`, sampling `TCP_INFO` every
/// `sample`.
///
/// # Errors
/// Connection or socket errors.
pub fn tcp_send(
    dst: SocketAddr,
    cc: &str,
    seconds: f64,
    sample: Duration,
) -> io::Result<TcpSendReport> {
    let mut stream = connect_retry(dst, Duration::from_secs(3))?;
    set_congestion(&stream, cc)?;
    stream.set_write_timeout(Some(Duration::from_millis(2).max(sample / 4)))?;
    let chunk = vec![0x5au8; 64 * 1024];
    let start = monotonic_ns();
    let end = start + (seconds * 1e9) as u64;
    let step = sample.as_nanos() as u64;
    let mut next = start + step;
    let mut samples = Vec::new();
    let mut written = 0u64;
    loop {
        let now = monotonic_ns();
        if now >= next {
            samples.push(TcpSample {
                t_s: (now - start) as f64 / 1e9,
                info: tcp_info(&stream)?,
            });
            next += step;
        }
        if now >= end {
            break;
        }
        match stream.write(&chunk) {
            Ok(n) => written += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    let last = tcp_info(&stream)?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(TcpSendReport {
        cc: cc.to_string(),
        seconds,
        bytes_written: written,
        ecn: last.ecn_negotiated(),
        samples,
        last,
    })
}

/// Connect to `dst`, retrying while it refuses (a server still starting)
/// for up to `for_`.
pub(crate) fn connect_retry(dst: SocketAddr, for_: Duration) -> io::Result<TcpStream> {
    let until = monotonic_ns() + for_.as_nanos() as u64;
    loop {
        match TcpStream::connect_timeout(&dst, Duration::from_secs(1)) {
            Ok(s) => return Ok(s),
            Err(e) if monotonic_ns() < until => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The result of [`tcp_sink`].
#[derive(Clone, Debug, Serialize)]
pub struct TcpSinkReport {
    pub bytes: u64,
    /// From the first byte to EOF.
    pub seconds: f64,
    pub goodput_bps: f64,
}

/// Accept one connection on `port` and read it to EOF.
///
/// # Errors
/// Socket errors.
pub fn tcp_sink(port: u16) -> io::Result<TcpSinkReport> {
    let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))?;
    let (mut s, _) = l.accept()?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut first = None;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(monotonic_ns);
        bytes += n as u64;
    }
    let secs = first.map_or(0.0, |f| (monotonic_ns() - f) as f64 / 1e9);
    Ok(TcpSinkReport {
        bytes,
        seconds: secs,
        goodput_bps: if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
    })
}
