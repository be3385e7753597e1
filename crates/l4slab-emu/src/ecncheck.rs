//! ECN path validation, the way an application developer checks a path
//! before trusting ECN or L4S on it (RFC 9000 §13.4.2 / App. A.4 style:
//! send each codepoint, see what arrives), plus kernel TCP's classic ECN.
//!
//! **Protocol.** A reflector runs at the far end (the `ecn_reflect` plan, UDP
//! `port`, TCP `port + 1`); the checker (the `ecn_check` plan):
//!
//! 1. **waits for the reflector**: Not-ECT hello probes every 100 ms until
//!    one is answered (at most [`READY_TIMEOUT`]), so a reflector that
//!    starts after the checker loses no measured probe; none answered is an
//!    error (no reflector, or a path that carries no Not-ECT UDP);
//! 2. **UDP, forward**: probes carrying each codepoint (Not-ECT, ECT(0),
//!    ECT(1), CE); the reflector reports, in a Not-ECT reply, the codepoint
//!    that arrived; **reverse**: Not-ECT probes asking for a reply carrying
//!    each codepoint; the checker reads the reply's (`IP_RECVTOS`);
//! 3. **kernel TCP** to the ECN-enabled server address, one connection per
//!    direction: the client sends [`TCP_BYTES`] and the reflector reports
//!    whether ECT arrived on them (its `TCPI_OPT_ECN_SEEN`); then the
//!    reflector sends [`TCP_BYTES`] and reports its sender counters
//!    (`tcpi_delivered`, `tcpi_delivered_ce`, `tcpi_total_retrans`) once
//!    they are all acknowledged.
//!
//! **Outcomes** per direction and codepoint ([`Outcome`]): `pass` (arrives
//! as sent), `ce` (arrives CE), `bleached` (arrives Not-ECT), `remarked`
//! (another ECT codepoint), `dropped` (never arrives while Not-ECT does),
//! `lost` (nothing arrives). For TCP data ([`classify_tcp`]): `pass` (ECT
//! arrives, CE on fewer than half the segments), `ce` (most segments were
//! reported CE), `bleached` (delivered, no ECT arrived, nothing was
//! retransmitted), `dropped` (no ECT arrived and segments were
//! retransmitted, or the data did not get through in time: only the
//! Not-ECT retransmissions pass, RFC 3168 §6.1.5).
//!
//! **What the verdicts mean.** Negotiation alone is not ECN working: the
//! SYN's ECE/CWR and the SYN-ACK's ECE echo (RFC 3168 §6.1.1) are TCP flags,
//! untouched by a path that bleaches or drops by the IP-ECN field.
//! * `tcp_ecn_works`: negotiated, and the data's ECT(0) arrives and is not
//!   CE-marked wholesale, both ways.
//! * `classic_ecn_ok`: ECT(0) and CE pass both ways, and `tcp_ecn_works`.
//! * `l4s_ok`: ECT(1) and CE pass both ways. ECT(1) is the L4S identifier
//!   (RFC 9331 §2): bleached or re-marked to ECT(0) it is classic traffic
//!   (a DualQ puts it in the classic queue), dropped it is a black hole. A
//!   CE mark must survive, or the congestion signals of a queue upstream are
//!   erased. And ECT arriving CE on most probes of an *idle* path (the
//!   probes are sent one at a time) is not a congestion signal but a path
//!   that marks everything: RFC 9000 App. A.4 lets an endpoint fail
//!   validation when "they are all ECN-CE marked", and a scalable sender
//!   would take every mark as congestion (DCTCP, RFC 8257 §3.3: alpha -> 1,
//!   the window halves every round trip) and sit at its minimum window.
//!   The check should therefore run on an otherwise idle path.
//!
//! Not done: AccECN (this kernel cannot negotiate it), IPv6.

use std::io;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::Ecn;

use crate::probe;
use crate::sys::{monotonic_ns, sockopt, udp, SockOpt};

/// Send `buf` to `to` with IP TOS `tos`.
fn send_tos(s: &UdpSocket, buf: &[u8], to: SocketAddrV4, tos: u8) -> io::Result<()> {
    sockopt::set(s, SockOpt::IpTos, i32::from(tos))?;
    s.send_to(buf, to).map(|_| ())
}

/// Receive one datagram with its TOS byte; `Ok(None)` on timeout.
fn recv_tos(s: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddrV4, u8)>> {
    udp::recv_with_tos(s, buf)
}

const MAGIC: &[u8; 4] = b"L4EC";
const TCP_MAGIC: &[u8; 4] = b"L4ET";
const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
/// Sequence numbers of hello probes (never those of measured probes).
const HELLO: u32 = 0x8000_0000;
/// How long the checker waits for the reflector to answer at all.
pub const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one measured probe waits for its reply.
const PROBE_WAIT: Duration = Duration::from_millis(300);
/// Bytes sent each way over TCP: about 23 full segments, so most are first
/// transmissions (ECT) even when a path drops them.
pub const TCP_BYTES: u32 = 32 * 1024;
/// Time allowed for each TCP direction (connect, transfer, report).
const TCP_DEADLINE: Duration = Duration::from_secs(5);
/// The most a reflector sends or accepts on one connection.
const TCP_MAX_BYTES: u32 = 1 << 20;
/// TCP modes of the reflector: the client sends, or the reflector sends.
const TCP_CLIENT_SENDS: u8 = 0;
const TCP_SERVER_SENDS: u8 = 1;

/// The reflector: answer each probe with a reply that carries the
/// codepoint the probe asks for and reports the codepoint the probe arrived
/// with. Serves the TCP half of the check on `port + 1` ([`serve_tcp`]).
/// Runs until killed.
///
/// # Errors
/// Socket errors.
pub fn reflect(port: u16) -> io::Result<()> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port))?;
    sockopt::set(&s, SockOpt::IpRecvTos, 1)?;
    // Bound before the first UDP answer, so a checker that has heard back
    // over UDP finds the TCP port open.
    let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port + 1))?;
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            // One thread per connection: a stalled one (a path that drops
            // ECT) never holds up the next.
            std::thread::spawn(move || {
                let _ = serve_tcp(c);
            });
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

/// The reflector's side of one TCP connection. The client sends a header
/// (`L4ET`, mode, byte count `n`, big-endian u32), then:
///
/// * mode [`TCP_CLIENT_SENDS`]: `n` bytes; the reflector answers `L4ET` and
///   one byte, 1 if ECT or CE arrived on them (`TCPI_OPT_ECN_SEEN`: the
///   client's data are the only ECN-capable packets it received);
/// * mode [`TCP_SERVER_SENDS`]: the reflector sends `n` bytes; the client
///   answers one byte once it has read them all, which also acknowledges
///   them all; the reflector then answers `L4ET` and its `tcpi_delivered`,
///   `tcpi_delivered_ce` and `tcpi_total_retrans` (big-endian u32s).
fn serve_tcp(mut c: TcpStream) -> io::Result<()> {
    c.set_read_timeout(Some(2 * TCP_DEADLINE))?;
    c.set_write_timeout(Some(2 * TCP_DEADLINE))?;
    let mut head = [0u8; 9];
    c.read_exact(&mut head)?;
    let n = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
    if &head[..4] != TCP_MAGIC || n > TCP_MAX_BYTES {
        return Ok(());
    }
    match head[4] {
        TCP_CLIENT_SENDS => {
            io::copy(&mut (&mut c).take(u64::from(n)), &mut io::sink())?;
            let seen = probe::tcp_info(&c)?.options & probe::TCPI_OPT_ECN_SEEN != 0;
            let mut out = TCP_MAGIC.to_vec();
            out.push(u8::from(seen));
            c.write_all(&out)
        }
        TCP_SERVER_SENDS => {
            c.write_all(&vec![0x5a; n as usize])?;
            let mut done = [0u8; 1];
            c.read_exact(&mut done)?;
            let info = probe::tcp_info(&c)?;
            let mut out = TCP_MAGIC.to_vec();
            for v in [info.delivered, info.delivered_ce, info.total_retrans] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            c.write_all(&out)
        }
        _ => Ok(()),
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

/// One direction of kernel TCP data over an ECN-negotiated connection.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TcpTransfer {
    /// Every byte and the receiver's answer arrived within the deadline.
    pub complete: bool,
    /// ECT (or CE) arrived on the data (the receiver's `TCPI_OPT_ECN_SEEN`).
    pub ect_seen: bool,
    /// The sender's `tcpi_delivered` / `tcpi_delivered_ce` (segments; CE as
    /// echoed by ECE, RFC 3168 §6.1.3) and `tcpi_total_retrans`.
    pub delivered: u32,
    pub delivered_ce: u32,
    pub retransmits: u32,
}

/// What happened to ECT(0) on kernel TCP data in one direction (module docs).
pub fn classify_tcp(t: &TcpTransfer) -> Outcome {
    if !t.complete || (!t.ect_seen && t.retransmits > 0) {
        // RFC 3168 §6.1.5: retransmissions are sent Not-ECT, so on a path
        // that drops ECT only they get through.
        Outcome::Dropped
    } else if !t.ect_seen {
        Outcome::Bleached
    } else if 2 * u64::from(t.delivered_ce) > u64::from(t.delivered) {
        Outcome::Ce
    } else {
        Outcome::Pass
    }
}

/// Send Not-ECT hello probes until the reflector answers one.
fn wait_for_reflector(s: &UdpSocket, to: SocketAddrV4, timeout: Duration) -> io::Result<()> {
    let deadline = monotonic_ns() + timeout.as_nanos() as u64;
    let mut buf = [0u8; 64];
    for k in 0u32.. {
        let seq = HELLO | k;
        let mut p = [0u8; 16];
        p[..4].copy_from_slice(MAGIC);
        p[4..8].copy_from_slice(&seq.to_be_bytes());
        p[8] = Ecn::NotEct.bits();
        send_tos(s, &p, to, Ecn::NotEct.bits())?;
        let until = (monotonic_ns() + 100_000_000).min(deadline);
        while monotonic_ns() < until {
            if let Some((n, _, _)) = recv_tos(s, &mut buf)? {
                // Any hello answered: the reflector is up and the path carries Not-ECT.
                if n >= 10 && &buf[..4] == MAGIC && buf[4] & 0x80 != 0 {
                    return Ok(());
                }
            }
        }
        if monotonic_ns() >= deadline {
            break;
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "no answer from the ECN reflector at {to} within {} s: is the `ecn_reflect` plan \
             running there, and does the path carry Not-ECT UDP?",
            timeout.as_secs()
        ),
    ))
}

/// Run the check against a reflector at `server` (UDP `port`, TCP `port + 1`
/// on `tcp_server`), `count` probes per codepoint and direction.
///
/// # Errors
/// Socket errors, and no answer from the reflector within [`READY_TIMEOUT`].
pub fn check(server: Ipv4Addr, tcp_server: Ipv4Addr, port: u16, count: u32) -> io::Result<Value> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    sockopt::set(&s, SockOpt::IpRecvTos, 1)?;
    s.set_read_timeout(Some(Duration::from_millis(50)))?;
    let to = SocketAddrV4::new(server, port);
    wait_for_reflector(&s, to, READY_TIMEOUT)?;
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
                let deadline = monotonic_ns() + PROBE_WAIT.as_nanos() as u64;
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
    let tcp_to = SocketAddrV4::new(tcp_server, port + 1);
    let tcp = tcp_forward(tcp_to).and_then(|f| Ok((f, tcp_reverse(tcp_to)?)));
    Ok(report(&fwd, &rev, tcp))
}

/// The JSON report and verdicts (module docs) from the UDP arrivals and
/// the TCP transfers: `((negotiated, forward), (negotiated, reverse))`.
fn report(
    fwd: &[Arrivals],
    rev: &[Arrivals],
    tcp: io::Result<((bool, TcpTransfer), (bool, TcpTransfer))>,
) -> Value {
    let outcomes = |arr: &[Arrivals]| -> Vec<Outcome> {
        let base_ok = arr[0].arrived() > 0;
        CODEPOINTS
            .iter()
            .enumerate()
            .map(|(i, &cp)| classify(cp, &arr[i], base_ok))
            .collect()
    };
    let (of, or) = (outcomes(fwd), outcomes(rev));
    let udp_json = |arr: &[Arrivals], o: &[Outcome]| -> Value {
        let m: serde_json::Map<String, Value> = CODEPOINTS
            .iter()
            .enumerate()
            .map(|(i, cp)| {
                (
                    cp.name().to_string(),
                    json!({ "outcome": o[i], "arrived": arr[i] }),
                )
            })
            .collect();
        Value::Object(m)
    };
    let passes = |o: &[Outcome], cp: Ecn| {
        let i = CODEPOINTS.iter().position(|&c| c == cp).expect("codepoint");
        o[i] == Outcome::Pass
    };
    let both = |cp: Ecn| passes(&of, cp) && passes(&or, cp);
    let (tcp_json, negotiated, tcp_works, tcp_error) = match &tcp {
        Ok(((neg_f, f), (neg_r, r))) => {
            let negotiated = *neg_f && *neg_r;
            // Without negotiation the data is Not-ECT: nothing to classify.
            let outcome = |t: &TcpTransfer| negotiated.then(|| classify_tcp(t));
            let (o_f, o_r) = (outcome(f), outcome(r));
            let works = o_f == Some(Outcome::Pass) && o_r == Some(Outcome::Pass);
            let dir = |t: &TcpTransfer, o: Option<Outcome>| {
                let mut v = serde_json::to_value(t).expect("serializes");
                v["outcome"] = json!(o);
                v
            };
            (
                json!({ "forward": dir(f, o_f), "reverse": dir(r, o_r) }),
                Some(negotiated),
                works,
                None,
            )
        }
        Err(e) => (Value::Null, None, false, Some(e.to_string())),
    };
    json!({
        "forward": udp_json(fwd, &of),
        "reverse": udp_json(rev, &or),
        "tcp": tcp_json,
        "tcp_ecn_negotiated": negotiated,
        "tcp_ecn_works": tcp_works,
        "tcp_error": tcp_error,
        "l4s_ok": both(Ecn::Ect1) && both(Ecn::Ce),
        "classic_ecn_ok": both(Ecn::Ect0) && both(Ecn::Ce) && tcp_works,
    })
}

/// Time left until `deadline` (a `monotonic_ns` reading), at least 1 ms.
fn left(deadline: u64) -> Duration {
    Duration::from_nanos(deadline.saturating_sub(monotonic_ns()).max(1_000_000))
}

/// A TCP connection to the reflector asking for `mode` with `n` bytes;
/// returns it, whether ECN was negotiated, and the deadline.
fn tcp_open(to: SocketAddrV4, mode: u8) -> io::Result<(TcpStream, bool, u64)> {
    let deadline = monotonic_ns() + TCP_DEADLINE.as_nanos() as u64;
    let mut c = probe::connect_retry(to.into(), left(deadline))?;
    // RFC 3168 §6.1.1: an ECN-setup SYN (ECE, CWR) answered by an
    // ECN-setup SYN-ACK (ECE without CWR) negotiates ECN (TCPI_OPT_ECN).
    let negotiated = probe::tcp_info(&c)?.ecn_negotiated();
    let mut head = TCP_MAGIC.to_vec();
    head.push(mode);
    head.extend_from_slice(&TCP_BYTES.to_be_bytes());
    c.set_write_timeout(Some(left(deadline)))?;
    c.write_all(&head)?;
    Ok((c, negotiated, deadline))
}

/// `Ok(false)` when `r` failed by running out of time.
fn in_time(r: io::Result<()>) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Client -> reflector: send [`TCP_BYTES`], read whether ECT arrived.
fn tcp_forward(to: SocketAddrV4) -> io::Result<(bool, TcpTransfer)> {
    let (mut c, negotiated, deadline) = tcp_open(to, TCP_CLIENT_SENDS)?;
    let mut answer = [0u8; 5];
    let complete = in_time(
        c.write_all(&vec![0x5a; TCP_BYTES as usize])
            .and_then(|()| c.set_read_timeout(Some(left(deadline))))
            .and_then(|()| c.read_exact(&mut answer)),
    )? && &answer[..4] == TCP_MAGIC;
    let info = probe::tcp_info(&c)?;
    Ok((
        negotiated,
        TcpTransfer {
            complete,
            ect_seen: complete && answer[4] == 1,
            delivered: info.delivered,
            delivered_ce: info.delivered_ce,
            retransmits: info.total_retrans,
        },
    ))
}

/// Reflector -> client: read [`TCP_BYTES`], then the reflector's counters.
fn tcp_reverse(to: SocketAddrV4) -> io::Result<(bool, TcpTransfer)> {
    let (mut c, negotiated, deadline) = tcp_open(to, TCP_SERVER_SENDS)?;
    let mut data = vec![0u8; TCP_BYTES as usize];
    c.set_read_timeout(Some(left(deadline)))?;
    let got_data = in_time(c.read_exact(&mut data))?;
    // Only the reflector's data can have carried ECT to us.
    let ect_seen = probe::tcp_info(&c)?.options & probe::TCPI_OPT_ECN_SEEN != 0;
    let mut answer = [0u8; 16];
    let complete = got_data
        && in_time(
            c.write_all(&[1])
                .and_then(|()| c.set_read_timeout(Some(left(deadline))))
                .and_then(|()| c.read_exact(&mut answer)),
        )?
        && &answer[..4] == TCP_MAGIC;
    let be =
        |i: usize| u32::from_be_bytes([answer[i], answer[i + 1], answer[i + 2], answer[i + 3]]);
    Ok((
        negotiated,
        TcpTransfer {
            complete,
            ect_seen,
            delivered: if complete { be(4) } else { 0 },
            delivered_ce: if complete { be(8) } else { 0 },
            retransmits: if complete { be(12) } else { 0 },
        },
    ))
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

    fn transfer(complete: bool, ect_seen: bool, ce: u32, retransmits: u32) -> TcpTransfer {
        TcpTransfer {
            complete,
            ect_seen,
            delivered: 24,
            delivered_ce: ce,
            retransmits,
        }
    }

    #[test]
    fn tcp_outcomes_need_ect_to_arrive_not_just_negotiation() {
        // A clean path; a few CE marks from a queue are still a pass.
        assert_eq!(classify_tcp(&transfer(true, true, 0, 0)), Outcome::Pass);
        assert_eq!(classify_tcp(&transfer(true, true, 3, 1)), Outcome::Pass);
        // Marked wholesale: 23 of 24 segments echoed as CE.
        assert_eq!(classify_tcp(&transfer(true, true, 23, 0)), Outcome::Ce);
        // Delivered without loss, but no ECT arrived: bleached.
        assert_eq!(
            classify_tcp(&transfer(true, false, 0, 0)),
            Outcome::Bleached
        );
        // No ECT arrived and segments were retransmitted (Not-ECT), or the
        // data never made it: ECT is dropped.
        assert_eq!(
            classify_tcp(&transfer(true, false, 0, 12)),
            Outcome::Dropped
        );
        assert_eq!(
            classify_tcp(&transfer(false, false, 0, 0)),
            Outcome::Dropped
        );
    }

    fn arrivals(counts: [[u32; 4]; 4]) -> Vec<Arrivals> {
        counts.iter().map(|c| arr(3, *c)).collect()
    }

    fn verdicts(udp: [[u32; 4]; 4], tcp: TcpTransfer) -> (bool, bool, bool) {
        let a = arrivals(udp);
        let r = report(&a, &a, Ok(((true, tcp.clone()), (true, tcp))));
        let b = |k: &str| r[k].as_bool().unwrap();
        (b("l4s_ok"), b("classic_ecn_ok"), b("tcp_ecn_works"))
    }

    #[test]
    fn verdicts_follow_the_paths() {
        // Rows: Not-ECT, ECT(0), ECT(1), CE sent; columns: what arrived.
        let clean = [[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0], [0, 0, 0, 3]];
        let ok = transfer(true, true, 0, 0);
        assert_eq!(verdicts(clean, ok.clone()), (true, true, true));
        let bleach = [[3, 0, 0, 0], [3, 0, 0, 0], [3, 0, 0, 0], [3, 0, 0, 0]];
        let bleached = transfer(true, false, 0, 0);
        assert_eq!(verdicts(bleach, bleached), (false, false, false));
        let remark = [[3, 0, 0, 0], [0, 3, 0, 0], [0, 3, 0, 0], [0, 0, 0, 3]];
        assert_eq!(verdicts(remark, ok.clone()), (false, true, true));
        let drop = [[3, 0, 0, 0], [0; 4], [0; 4], [0; 4]];
        assert_eq!(
            verdicts(drop, transfer(true, false, 0, 12)),
            (false, false, false)
        );
        // Everything ECN-capable arrives CE: no usable signal (RFC 9000 App. A.4).
        let ce_all = [[3, 0, 0, 0], [0, 0, 0, 3], [0, 0, 0, 3], [0, 0, 0, 3]];
        assert_eq!(
            verdicts(ce_all, transfer(true, true, 23, 0)),
            (false, false, false)
        );
        // CE bleached on its own: upstream congestion marks are erased.
        let ce_cleared = [[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0], [0, 3, 0, 0]];
        assert_eq!(verdicts(ce_cleared, ok), (false, false, true));
    }

    #[test]
    fn without_negotiation_tcp_ecn_does_not_work() {
        let a = arrivals([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0], [0, 0, 0, 3]]);
        let t = transfer(true, false, 0, 0);
        let r = report(&a, &a, Ok(((false, t.clone()), (false, t))));
        assert_eq!(r["tcp_ecn_negotiated"], false);
        assert_eq!(r["tcp_ecn_works"], false);
        assert_eq!(r["tcp"]["forward"]["outcome"], Value::Null);
        // UDP alone can still carry L4S.
        assert_eq!(r["l4s_ok"], true);
        assert_eq!(r["classic_ecn_ok"], false);
    }
}
