//! ECN path validation, the way an application developer checks a path
//! before trusting L4S on it (RFC 9000 §13.4.2 / App. A.4 style: send each
//! codepoint, see what arrives).
//!
//! A reflector runs at the far end (`probe ecn-reflect`); the checker
//! (`probe ecn-check`) sends UDP probes:
//!
//! * **forward**: probes carrying each codepoint (Not-ECT, ECT(0), ECT(1),
//!   CE); the reflector reports, in a Not-ECT reply, the codepoint that
//!   arrived;
//! * **reverse**: Not-ECT probes asking for a reply carrying each codepoint;
//!   the checker reads the codepoint of the reply (`IP_RECVTOS`).
//!
//! Per direction and codepoint the outcome is [`Outcome`]: `pass` (arrives
//! as sent), `ce` (arrives CE: marked on the way), `bleached` (arrives
//! Not-ECT), `remarked` (arrives as another ECT codepoint), `dropped` (never
//! arrives while Not-ECT probes do), or `lost` (nothing arrives at all).
//! Finally a kernel TCP connection to the ECN-enabled server address checks
//! that classic ECN negotiates end to end. The path is fit for L4S when
//! ECT(1) and ECT(0) pass (or arrive CE) both ways.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::Ecn;

use crate::probe;
use crate::sys::{monotonic_ns, setsockopt_int};

const MAGIC: &[u8; 4] = b"L4EC";
const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];

/// Send `buf` to `to` with IP TOS `tos`.
fn send_tos(s: &UdpSocket, buf: &[u8], to: SocketAddrV4, tos: u8) -> io::Result<()> {
    setsockopt_int(
        s.as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_TOS,
        i32::from(tos),
    )?;
    s.send_to(buf, to).map(|_| ())
}

/// Receive one datagram with its TOS byte; `Ok(None)` on timeout.
fn recv_tos(s: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddrV4, u8)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: sockaddr_in is plain data.
    let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    // SAFETY: msghdr is plain data; every pointer set below is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: `msg` describes valid buffers.
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
    let mut tos = 0u8;
    // SAFETY: walking the control messages the kernel wrote into `cbuf`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                tos = *libc::CMSG_DATA(c);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let addr = SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
        u16::from_be(from.sin_port),
    );
    Ok(Some((n as usize, addr, tos)))
}

/// The reflector: answer each probe with a reply that carries the
/// codepoint the probe asks for and reports the codepoint the probe arrived
/// with. Also accepts (and closes) TCP connections on `port + 1` for the
/// ECN negotiation check. Runs until killed.
///
/// # Errors
/// Socket errors.
pub fn reflect(port: u16) -> io::Result<()> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port))?;
    setsockopt_int(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
    let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port + 1))?;
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            drop(c);
        }
    });
    let mut buf = [0u8; 2048];
    loop {
        let Some((n, from, tos)) = recv_tos(&s, &mut buf)? else {
            continue;
        };
        if n < 10 || &buf[..4] != MAGIC {
            continue;
        }
        buf[9] = tos & 0b11;
        let reply_cp = buf[8] & 0b11;
        send_tos(&s, &buf[..n], from, reply_cp)?;
    }
}

/// What happened to one codepoint in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Ce,
    Bleached,
    Remarked,
    Dropped,
    Lost,
}

/// Counts of the codepoints that arrived for probes sent with one codepoint.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Arrivals {
    pub sent: u32,
    pub not_ect: u32,
    pub ect0: u32,
    pub ect1: u32,
    pub ce: u32,
}

impl Arrivals {
    fn add(&mut self, e: Ecn) {
        match e {
            Ecn::NotEct => self.not_ect += 1,
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
        }
    }
    fn arrived(&self) -> u32 {
        self.not_ect + self.ect0 + self.ect1 + self.ce
    }
    fn of(&self, e: Ecn) -> u32 {
        match e {
            Ecn::NotEct => self.not_ect,
            Ecn::Ect0 => self.ect0,
            Ecn::Ect1 => self.ect1,
            Ecn::Ce => self.ce,
        }
    }
}

/// Classify what arrived for probes sent as `sent`; `baseline_ok` says
/// whether Not-ECT probes get through in this direction.
pub fn classify(sent: Ecn, a: &Arrivals, baseline_ok: bool) -> Outcome {
    if a.arrived() == 0 {
        return if baseline_ok && sent != Ecn::NotEct {
            Outcome::Dropped
        } else {
            Outcome::Lost
        };
    }
    // The most common arrival decides.
    let top = CODEPOINTS
        .into_iter()
        .max_by_key(|&e| (a.of(e), e == sent))
        .expect("four codepoints");
    match top {
        e if e == sent => Outcome::Pass,
        Ecn::Ce => Outcome::Ce,
        Ecn::NotEct => Outcome::Bleached,
        _ => Outcome::Remarked,
    }
}

/// Run the check against a reflector at `server` (UDP `port`, TCP `port + 1`
/// on `tcp_server`), `count` probes per codepoint and direction.
///
/// # Errors
/// Socket errors.
pub fn check(server: Ipv4Addr, tcp_server: Ipv4Addr, port: u16, count: u32) -> io::Result<Value> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    setsockopt_int(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
    s.set_read_timeout(Some(Duration::from_millis(50)))?;
    let to = SocketAddrV4::new(server, port);
    let mut fwd: Vec<Arrivals> = (0..4).map(|_| Arrivals::default()).collect();
    let mut rev: Vec<Arrivals> = (0..4).map(|_| Arrivals::default()).collect();
    let mut buf = [0u8; 64];
    let mut seq = 0u32;
    for (i, &cp) in CODEPOINTS.iter().enumerate() {
        for reverse in [false, true] {
            for _ in 0..count {
                let mut p = [0u8; 16];
                p[..4].copy_from_slice(MAGIC);
                p[4..8].copy_from_slice(&seq.to_be_bytes());
                // Forward: probe carries cp, reply Not-ECT. Reverse: the opposite.
                let (send_cp, reply_cp) = if reverse {
                    (Ecn::NotEct, cp)
                } else {
                    (cp, Ecn::NotEct)
                };
                p[8] = reply_cp.bits();
                if reverse {
                    rev[i].sent += 1;
                } else {
                    fwd[i].sent += 1;
                }
                send_tos(&s, &p, to, send_cp.bits())?;
                let deadline = monotonic_ns() + 300_000_000;
                while monotonic_ns() < deadline {
                    let Some((n, _, tos)) = recv_tos(&s, &mut buf)? else {
                        continue;
                    };
                    if n < 10 || &buf[..4] != MAGIC || buf[4..8] != seq.to_be_bytes() {
                        continue;
                    }
                    if reverse {
                        rev[i].add(Ecn::from_bits(tos));
                    } else {
                        fwd[i].add(Ecn::from_bits(buf[9]));
                    }
                    break;
                }
                seq += 1;
            }
        }
    }
    let tcp = tcp_negotiates_ecn(SocketAddrV4::new(tcp_server, port + 1));
    let verdicts = |arr: &[Arrivals]| -> (Value, bool) {
        let base_ok = arr[0].arrived() > 0;
        let mut m = serde_json::Map::new();
        let mut ok = true;
        for (i, &cp) in CODEPOINTS.iter().enumerate() {
            let o = classify(cp, &arr[i], base_ok);
            if matches!(cp, Ecn::Ect0 | Ecn::Ect1) && !matches!(o, Outcome::Pass | Outcome::Ce) {
                ok = false;
            }
            m.insert(
                cp.name().to_string(),
                json!({ "outcome": o, "arrived": arr[i] }),
            );
        }
        (serde_json::Value::Object(m), ok)
    };
    let (f, f_ok) = verdicts(&fwd);
    let (r, r_ok) = verdicts(&rev);
    let tcp_ok = matches!(tcp, Ok(true));
    Ok(json!({
        "forward": f,
        "reverse": r,
        "tcp_ecn_negotiated": tcp.as_ref().ok(),
        "tcp_error": tcp.as_ref().err().map(ToString::to_string),
        "l4s_ok": f_ok && r_ok,
        "classic_ecn_ok": f_ok && r_ok && tcp_ok,
    }))
}

fn tcp_negotiates_ecn(to: SocketAddrV4) -> io::Result<bool> {
    let s = std::net::TcpStream::connect_timeout(&to.into(), Duration::from_secs(2))?;
    let info = probe::tcp_info(&s)?;
    Ok(info.ecn_negotiated())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(sent: u32, counts: [u32; 4]) -> Arrivals {
        Arrivals {
            sent,
            not_ect: counts[0],
            ect0: counts[1],
            ect1: counts[2],
            ce: counts[3],
        }
    }

    #[test]
    fn outcomes_follow_what_arrived() {
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [0, 0, 10, 0]), true),
            Outcome::Pass
        );
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [10, 0, 0, 0]), true),
            Outcome::Bleached
        );
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [0, 10, 0, 0]), true),
            Outcome::Remarked
        );
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [0, 0, 3, 7]), true),
            Outcome::Ce
        );
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [0, 0, 0, 0]), true),
            Outcome::Dropped
        );
        assert_eq!(
            classify(Ecn::Ect1, &arr(10, [0, 0, 0, 0]), false),
            Outcome::Lost
        );
        // A tie between the sent codepoint and another counts as a pass.
        assert_eq!(
            classify(Ecn::Ect0, &arr(10, [5, 5, 0, 0]), true),
            Outcome::Pass
        );
    }
}
