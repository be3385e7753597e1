//! `l4slab send` and `l4slab serve` as functions (`send`'s loop is
//! [`crate::send`]): parse and check the options ([`InputError`] names the
//! option and shows a valid value), bind the UDP socket, run the endpoint on
//! the real-time driver in slices up to each reporting interval, and return
//! what the results bundle needs
//! (`summary_json`, `series`, `stats`: what `l4slab.Results.from_native`
//! takes, docs/results.md).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use serde_json::{json, Value};

use l4slab_app::quic::QuicApp;
use l4slab_bottleneck::flow::FlowKey;
use l4slab_core::stats::round6;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_scenario::units::{parse_duration, parse_rate, parse_size};
use l4slab_udp_driver::{Driver, DriverConfig, DriverError, RunOutcome, UdpError, UdpSocket};

use crate::notice::RefusalNotice;
use crate::parallel::MAX_PARALLEL;
use crate::record::{human_bytes, human_rate};
use crate::server::{FinishedSession, Server, ServerConfig};
use crate::token::{TokenKey, DEFAULT_LIFETIME};

/// The port `serve` listens on and `send` sends to by default.
pub const DEFAULT_PORT: u16 = 4433;
/// `serve --max-sessions` by default: two clients at `-P 128`.
pub const DEFAULT_MAX_SESSIONS: usize = 2 * MAX_PARALLEL;
/// `serve --max-per-address` by default: one client's `-P 128` (iperf3's
/// most), each connection a session.
pub const DEFAULT_MAX_PER_ADDRESS: usize = MAX_PARALLEL;
/// Layout of `summary.json` (docs/results.md).
pub(crate) const FORMAT_VERSION: u64 = 1;
/// How often a run looks at its observer (Ctrl-C) besides the intervals.
pub(crate) const POLL: Dur = Dur::from_millis(100);

/// An option's value is not valid: names the option, shows a valid value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
pub struct InputError {
    pub option: &'static str,
    pub message: String,
}

pub(crate) fn bad(option: &'static str, message: impl Into<String>) -> InputError {
    InputError {
        option,
        message: message.into(),
    }
}

/// What ends a run with an error (after its options were accepted).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("cannot use the UDP socket: {0}")]
    Socket(#[from] UdpError),
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error("no random numbers from the operating system: {0}")]
    Random(String),
}

/// What a run tells the person watching, and asks them.
pub trait Observer {
    /// A line for the terminal (a header, an interval, the summary).
    fn line(&mut self, line: &str);
    /// Whether to go on (false: Ctrl-C; the run stops and reports).
    fn keep_going(&mut self) -> bool {
        true
    }
}

/// Prints to stdout and never stops early (the cargo example's).
pub struct Stdout;

impl Observer for Stdout {
    fn line(&mut self, line: &str) {
        println!("{line}");
    }
}

/// `l4slab send` options, as given (strings are parsed here, once).
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address.
    pub target: String,
    pub port: Option<u16>,
    pub cc: String,
    /// `off`, `ect0`, `ect1`; `None`: the controller's (prague, dctcp: ECT(1)).
    pub ecn: Option<String>,
    /// RFC 9000 §13.4.2 ECN validation (default true). `false` is
    /// `--no-ecn-validation`: keep marking whatever the path does (a
    /// non-conforming sender, to demonstrate the failure).
    pub ecn_validation: bool,
    /// `bulk`, `file:SIZE`, `frames:RATE@FPS`.
    pub app: String,
    /// Seconds (`10`) or a duration (`10s`, `500ms`).
    pub duration: String,
    pub interval: String,
    pub connect_timeout: String,
    /// Local address to send from (default: any, of the server's family).
    pub bind: Option<String>,
    /// `-R`: the server sends, this end receives (iperf3's reverse mode).
    pub reverse: bool,
    /// `-P`: connections at once, 1 to [`MAX_PARALLEL`].
    pub parallel: usize,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            target: "127.0.0.1".into(),
            port: None,
            cc: l4slab_cc::LINUX_DEFAULT_CC.into(),
            ecn: None,
            ecn_validation: true,
            app: "bulk".into(),
            duration: "10".into(),
            interval: "1".into(),
            connect_timeout: "5".into(),
            bind: None,
            reverse: false,
            parallel: 1,
        }
    }
}

/// `l4slab serve` options.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on; default `::` (IPv6 and IPv4), or `0.0.0.0`
    /// where IPv6 is unavailable.
    pub bind: Option<String>,
    pub port: u16,
    pub max_sessions: usize,
    /// Sessions at once from one source (an IPv4 address, an IPv6 /64).
    pub max_per_address: usize,
    /// Drop a session whose handshake has not completed after this long.
    pub handshake_timeout: String,
    /// Stop after the first session ends.
    pub once: bool,
    pub interval: String,
    pub idle_timeout: String,
    /// Stop after this long in any case (tests); `None`: until Ctrl-C.
    pub time_limit: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: None,
            port: DEFAULT_PORT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            handshake_timeout: "5".into(),
            once: false,
            interval: "1".into(),
            idle_timeout: "10".into(),
            time_limit: None,
        }
    }
}

/// Seconds as a plain number, or a duration with a unit.
pub(crate) fn seconds(option: &'static str, text: &str, example: &str) -> Result<Dur, InputError> {
    let t = text.trim();
    let d = match t.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Dur::from_secs_f64(s),
        Ok(_) => {
            return Err(bad(
                option,
                format!("{text:?} is not above 0 and at most 86400 seconds; write e.g. {example}"),
            ))
        }
        Err(_) => parse_duration(t).map_err(|e| {
            bad(
                option,
                format!("{text:?} is not a duration ({e}); write e.g. {example}"),
            )
        })?,
    };
    if d.is_zero() || d > Dur::from_secs(86_400) {
        return Err(bad(
            option,
            format!("{text:?} must be above 0 and at most a day; write e.g. {example}"),
        ));
    }
    Ok(d)
}

/// `bulk`, `file:SIZE` or `frames:RATE@FPS`.
pub fn parse_app(text: &str) -> Result<QuicApp, InputError> {
    const EX: &str = "bulk, file:10MB or frames:8Mbit@60";
    let t = text.trim();
    if t == "bulk" {
        return Ok(QuicApp::Bulk);
    }
    if let Some(size) = t.strip_prefix("file:") {
        let size = parse_size(size)
            .map_err(|e| bad("--app", format!("{text:?}: {e}; write e.g. file:10MB")))?;
        if size == 0 {
            return Err(bad("--app", "a file of 0 bytes; write e.g. file:10MB"));
        }
        return Ok(QuicApp::File { size });
    }
    if let Some(spec) = t.strip_prefix("frames:") {
        let Some((rate, fps)) = spec.split_once('@') else {
            return Err(bad(
                "--app",
                format!("{text:?} needs RATE@FPS; write e.g. frames:8Mbit@60"),
            ));
        };
        let rate = parse_rate(rate).map_err(|e| {
            bad(
                "--app",
                format!("{text:?}: {e}; write e.g. frames:8Mbit@60"),
            )
        })?;
        let fps: f64 = fps.parse().ok().filter(|f: &f64| (0.1..=1000.0).contains(f)).ok_or_else(|| {
            bad(
                "--app",
                format!("{text:?}: {fps:?} frames per second is not a number from 0.1 to 1000; write e.g. frames:8Mbit@60"),
            )
        })?;
        let frame_bytes = ((rate.as_bps() as f64 / 8.0 / fps).round() as u64).max(1);
        if rate.as_bps() == 0 {
            return Err(bad("--app", "a rate of 0; write e.g. frames:8Mbit@60"));
        }
        return Ok(QuicApp::Frames {
            frame_bytes,
            interval: Dur::from_secs_f64(1.0 / fps),
        });
    }
    Err(bad("--app", format!("{text:?} is not an app; write {EX}")))
}

/// The controller name, checked.
pub(crate) fn parse_cc(text: &str) -> Result<String, InputError> {
    if l4slab_cc::CC_NAMES.contains(&text) {
        Ok(text.to_string())
    } else {
        Err(bad(
            "--cc",
            format!(
                "{text:?} is not a congestion control; use one of {}",
                l4slab_cc::CC_NAMES.join(", ")
            ),
        ))
    }
}

/// `off`, `ect0`, `ect1`: (send ECT, the codepoint override).
pub(crate) fn parse_ecn(text: Option<&str>) -> Result<(bool, Option<Ecn>), InputError> {
    match text {
        None => Ok((true, None)),
        Some("off") => Ok((false, None)),
        Some("ect0") => Ok((true, Some(Ecn::Ect0))),
        Some("ect1") => Ok((true, Some(Ecn::Ect1))),
        Some(t) => Err(bad(
            "--ecn",
            format!("{t:?} is not an ECN choice; use off, ect0 or ect1"),
        )),
    }
}

/// The server's address from `HOST`, `HOST:PORT`, `[V6]:PORT` or `V6`.
pub fn resolve(target: &str, port: Option<u16>) -> Result<SocketAddr, InputError> {
    let t = target.trim();
    let port = port.unwrap_or(DEFAULT_PORT);
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(SocketAddr::new(ip, port));
    }
    let (host, port) = match t.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            let p = p.parse::<u16>().map_err(|_| {
                bad(
                    "HOST",
                    format!("{t:?}: {p:?} is not a port; write e.g. 192.0.2.1:{DEFAULT_PORT}"),
                )
            })?;
            (h, p)
        }
        _ => (t, port),
    };
    if host.is_empty() {
        return Err(bad("HOST", "empty; write e.g. 127.0.0.1 or [::1]:4433"));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| bad("HOST", format!("{host:?} does not resolve: {e}")))?
        .next()
        .ok_or_else(|| bad("HOST", format!("{host:?} has no address")))
}

pub(crate) fn unspecified(like: &SocketAddr) -> SocketAddr {
    match like {
        SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    }
}

pub(crate) fn random_seed() -> Result<u64, RunError> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| RunError::Random(e.to_string()))?;
    Ok(u64::from_be_bytes(b))
}

pub(crate) fn driver_json(d: &Driver) -> Value {
    let s = d.stats();
    json!({
        "datagrams_sent": s.datagrams_sent,
        "datagrams_received": s.datagrams_received,
        "bytes_sent": s.bytes_sent,
        "bytes_received": s.bytes_received,
        "send_would_block": s.send_would_block,
        "send_no_buffers": s.send_no_buffers,
        "send_dropped": s.send_dropped,
        "recv_truncated": s.recv_truncated,
        "timeouts": s.timeouts,
        "late_timeouts": s.late_timeouts,
        // How late timed wake-ups fired (pacing, timers), µs.
        "timer_lateness_us": s.lateness.summary_scaled(1e-3),
        "wakeups": s.wakeups,
        // The driving thread's schedstat over the run, ms: on a CPU, and
        // runnable but waiting for one (what other load cost it).
        "cpu_ms": round6(s.cpu_ns as f64 * 1e-6),
        "run_queue_wait_ms": round6(s.run_queue_wait_ns as f64 * 1e-6),
    })
}

/// The pacing bucket of a sender on a real clock: 1.5 datagrams, so that
/// two packets never leave closer than half a gap at the pacing rate and a
/// wake-up up to half a gap late loses nothing (Linux
/// `tcp_update_skb_after_send`; [`ConnectionConfig::pacing_burst`]).
pub fn real_clock_pacing_burst(max_datagram_size: usize) -> u64 {
    max_datagram_size as u64 * 3 / 2
}

/// The wake-up granularity of a sender on a real clock
/// ([`ConnectionConfig::pacing_granularity`]): above the rate at which packets
/// are closer than this (about 38 Mbit/s for 1200-byte datagrams) a packet due
/// within it goes with the one before, so the thread wakes once per two or
/// more packets. A wake-up costs `send` 30-60 µs of CPU on a virtual machine
/// (docs/PERFORMANCE.md), a quarter of a core at 60 Mbit/s with one packet
/// each — more than its fair share beside busy processes, which then delay
/// it by whole time slices. 250 µs is about TCP Prague's burst time
/// (`prague_burst_shift` 12: 244 µs; user-space QUIC stacks use 1 ms), so
/// the bursts stay a quarter of a millisecond at the pacing rate plus one
/// packet.
pub const REAL_CLOCK_PACING_GRANULARITY: Dur = Dur::from_micros(250);

/// The threads `send`'s driver wakes for each wake-up
/// ([`DriverConfig::wakers`]): the first to get a CPU sends. Beside
/// CPU-bound processes a woken normal-priority thread waits a whole
/// scheduler tick for its CPU at a few per cent of its wake-ups, and the
/// link idles meanwhile; a second waker, on the other CPU or later in the
/// same queue, usually runs first. Measured with six busy loops on 2 cores
/// (docs/PERFORMANCE.md, issue 25; `bench/wakers_probe.c`, deadlines 250 µs
/// apart, 30 µs of work): deadlines served more than 1 ms late 29 % with one
/// thread, 7-8 % with two, 1.5-4 % with four. Each waker's wake-up costs
/// CPU (`send` with two: about 18 % more than with one). `send` uses one:
/// the measured runs showed no gain in rate or verdict from two, and CI saw
/// a two-waker client send two Initials before the server's Retry
/// (`tests/test_send.py`: `retries_sent` 2), which suggests a waker serving a
/// timeout the other had already served; until that is understood, one.
pub const REAL_CLOCK_WAKERS: usize = 1;

pub(crate) fn app_name(app: &QuicApp) -> String {
    match *app {
        QuicApp::Bulk => "bulk".into(),
        QuicApp::File { size } => format!("file:{size}"),
        QuicApp::Frames {
            frame_bytes,
            interval,
        } => format!(
            "frames:{}bit@{}",
            (frame_bytes as f64 * 8.0 / interval.as_secs_f64()).round(),
            round6(1.0 / interval.as_secs_f64())
        ),
    }
}

/// The summary a run prints at its end.
pub(crate) fn final_lines(name: &str, flow: &Value, wall: Dur) -> Vec<String> {
    let f = |k: &str| flow[k].as_f64().unwrap_or(0.0);
    let rtt = &flow[FlowKey::RttMs.name()];
    let r = |k: &str| {
        rtt[k]
            .as_f64()
            .map_or_else(|| "-".into(), |v| format!("{v:.2}"))
    };
    let m = &flow["app_metrics"];
    let sender = m.get("client").is_some();
    let conn = if sender { &m["client"] } else { &m["server"] };
    vec![
        format!(
            "[{name}] {:>6.2} s total  {:>9}  {:>10}  {}",
            wall.as_secs_f64(),
            human_bytes(flow["bytes_delivered"].as_u64().unwrap_or(0)),
            human_rate(f(FlowKey::GoodputBps.name())),
            if sender { "acknowledged" } else { "received" },
        ),
        format!(
            "[{name}] rtt ms: min {} p50 {} p99 {} max {} ({} samples); losses {}; CE fed back {}, received {}; ECN {} ({})",
            r("min"),
            r("p50"),
            r("p99"),
            r("max"),
            rtt["samples"].as_u64().unwrap_or(0),
            flow["losses_detected"],
            flow["ce_packets_fed_back"],
            flow["ce_marks_received"],
            flow["ecn_validation"].as_str().unwrap_or("-"),
            conn["ecn"]["validation"].as_str().unwrap_or("-"),
        ),
    ]
}

/// Run `l4slab serve` until Ctrl-C (the observer says stop), the time
/// limit, or with `once` the first session's end. Returns `{sessions:
/// [{summary_json, series, stats}], server, driver}`; `on_session` sees
/// each session's report as it ends.
///
/// # Errors
/// [`RunError::Input`] for a bad option, others when the socket fails.
pub fn run_serve(
    opts: &ServeOptions,
    obs: &mut dyn Observer,
    on_session: &mut dyn FnMut(&Value),
) -> Result<Value, RunError> {
    let interval = seconds("--interval", &opts.interval, "1 or 250ms")?;
    if interval < Dur::from_millis(10) {
        return Err(bad("--interval", "at least 10ms; write e.g. 1 or 250ms").into());
    }
    let idle = seconds("--idle-timeout", &opts.idle_timeout, "10")?;
    let limit = opts
        .time_limit
        .as_deref()
        .map(|t| seconds("--time-limit", t, "30"))
        .transpose()?;
    if opts.max_sessions == 0 || opts.max_sessions > 4096 {
        return Err(bad("--max-sessions", "must be from 1 to 4096; write e.g. 256").into());
    }
    if opts.max_per_address == 0 || opts.max_per_address > 4096 {
        return Err(bad(
            "--max-per-address",
            "must be from 1 to 4096; write e.g. 128",
        )
        .into());
    }
    let handshake_timeout = seconds("--handshake-timeout", &opts.handshake_timeout, "5")?;
    let socket = match &opts.bind {
        Some(b) => UdpSocket::bind(resolve(b, Some(opts.port))?)?,
        None => {
            let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), opts.port);
            match UdpSocket::bind(v6) {
                Ok(s) => s,
                Err(UdpError::AddrInUse { addr }) => {
                    return Err(UdpError::AddrInUse { addr }.into())
                }
                // No IPv6 on this host: IPv4 only.
                Err(_) => UdpSocket::bind(SocketAddr::new(
                    IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    opts.port,
                ))?,
            }
        }
    };
    let local = socket.local_addr()?;
    let keys = TokenKey::random(DEFAULT_LIFETIME).map_err(|e| RunError::Random(e.to_string()))?;
    let cfg = ServerConfig {
        max_sessions: opts.max_sessions,
        max_sessions_per_address: opts.max_per_address,
        handshake_timeout,
        idle_timeout: idle,
        stop_after: opts.once.then_some(1),
        ..ServerConfig::default()
    };
    let mut server = Server::new(cfg, keys);
    let mut driver = Driver::new(DriverConfig::default());
    let start = driver.now();
    obs.line(&format!(
        "l4slab serve: listening on {local} (UDP), at most {} sessions, {} per address{}; clients must answer a Retry (address validation) and complete the handshake within {} s",
        opts.max_sessions,
        opts.max_per_address.min(opts.max_sessions),
        if opts.once { ", stopping after one" } else { "" },
        round6(handshake_timeout.as_secs_f64()),
    ));
    let deadline = limit.map_or(Time::MAX, |l| start + l);
    let mut next = start + interval;
    let mut sessions = Vec::new();
    let mut report = |f: FinishedSession, obs: &mut dyn Observer, driver: &Driver| {
        let wall = f.end.saturating_since(f.start);
        let name = format!("session-{}", f.number);
        for l in final_lines(&name, &f.summary, wall) {
            obs.line(&l);
        }
        let summary = json!({
            "format_version": FORMAT_VERSION,
            "tool_version": env!("CARGO_PKG_VERSION"),
            "backend": "serve",
            "seed": Value::Null,
            "duration_s": round6(wall.as_secs_f64()),
            "window_s": [0.0, round6(wall.as_secs_f64())],
            "scenario": { "name": name, "listen": local.to_string(), "client": f.peer.to_string() },
            "flows": { name.clone(): f.summary },
            "queues": {},
            "driver": driver_json(driver),
        });
        let v = json!({
            "session": f.number,
            "summary_json": serde_json::to_string(&summary).expect("serializes"),
            "series": f.series.to_json(),
            "stats": {
                "backend": "serve",
                "wall_s": wall.as_secs_f64(),
                "sim_s": wall.as_secs_f64(),
                "packets": 0,
            },
        });
        on_session(&v);
        sessions.push(v);
    };
    let mut notice = RefusalNotice::default();
    let limits = (opts.max_sessions, opts.max_per_address, handshake_timeout);
    loop {
        let now = driver.now();
        let until = next.min(now + POLL).min(deadline);
        let outcome = driver.run(&socket, &mut server, until)?;
        let now = driver.now();
        for (number, peer) in server.take_connected() {
            // iperf3 -R: say which end sends.
            let sends = server
                .live()
                .find(|s| s.number == number)
                .and_then(|s| s.sending.as_ref())
                .map_or_else(String::new, |r| {
                    format!(" (reverse: sending, cc {}, app {})", r.cc, app_name(&r.app))
                });
            obs.line(&format!("[session-{number}] connected from {peer}{sends}"));
        }
        if let Some(l) = notice.poll(now, server.stats(), limits, server.last_refused()) {
            obs.line(&l);
        }
        if now >= next {
            for iv in server.sample(now) {
                obs.line(&iv.line);
            }
            next += interval;
        }
        for f in server.take_finished() {
            report(f, obs, &driver);
        }
        if outcome == RunOutcome::Done || now >= deadline || !obs.keep_going() {
            break;
        }
    }
    server.end_all(driver.now());
    for f in server.take_finished() {
        report(f, obs, &driver);
    }
    let st = server.stats().clone();
    obs.line(&format!(
        "l4slab serve: {} sessions; {} Retries sent; refused: {} invalid and {} expired tokens, {} over the session limit, {} over the per-address limit; dropped without a handshake: {} timed out, {} abandoned; ignored: {} malformed, {} for no session, {} short Initials",
        st.sessions_connected,
        st.retries_sent,
        st.invalid_tokens,
        st.expired_tokens,
        st.sessions_refused,
        st.sessions_refused_per_address,
        st.handshake_timeouts,
        st.handshakes_abandoned,
        st.malformed,
        st.unknown_connection,
        st.initial_too_small
    ));
    Ok(json!({
        "sessions": sessions,
        "server": st.to_json(),
        "driver": driver_json(&driver),
        "listen": local.to_string(),
    }))
}
