//! Small measurement tools that run inside the namespaces (the `ping`,
//! `tcp_send`, `tcp_sink` plans, [`crate::plan`]), so tests and `l4slab
//! check-l4s` need no ping or iperf binaries: an ICMP echo
//! client, and a bulk TCP sender that samples `TCP_INFO` plus its sink.
//!
//! `TCP_INFO` and `TCP_CONGESTION` are l4slab-sys's ([`l4slab_sys::tcp`],
//! re-exported here), as is the raw ICMP socket.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use l4slab_core::Dur;
use serde::Serialize;

use crate::sys::{self, icmp, monotonic_ns};

pub use l4slab_sys::tcp::{
    congestion, set_congestion, tcp_info, TcpInfo, TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN,
};

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
    let sock = icmp::socket()?;
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
        icmp::send_to(&sock, &pkt, dst)?;
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
        let mut pfd = [sys::PollFd::readable(sock.as_raw_fd())];
        let ms = ((until_ns - now).div_ceil(1_000_000)).min(1000);
        if !matches!(sys::poll(&mut pfd, Some(Dur::from_millis(ms))), Ok(1..)) {
            continue;
        }
        let n = sys::read_nb(sock.as_raw_fd(), buf);
        let got = monotonic_ns();
        let Ok(Some(n @ 28..)) = n else {
            continue;
        };
        let p = &buf[..n];
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
