//! `l4slab send`'s run ([`run_send`]): its clients (one, or `-P` N on one
//! socket, [`crate::parallel`]) on the real-time driver, sampled each
//! reporting interval (a line per connection, and iperf3's `[SUM]`), then
//! each connection's flow in one bundle. The options are parsed and checked
//! by [`crate::run`]'s parsers, shared with `serve`.

use std::net::SocketAddr;

use serde_json::{json, Value};

use l4slab_app::quic::{QuicApp, QuicStreams};
use l4slab_bottleneck::flow::FlowKey;
use l4slab_core::stats::round6;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::ConnectionConfig;
use l4slab_udp_driver::{Driver, DriverConfig, RunOutcome, UdpSocket};

use crate::client::{Client, Failure};
use crate::parallel::{Clients, MAX_PARALLEL};
use crate::record::{ms, sum_line, Outcome, SeriesColumns};
use crate::request::{Request, REFUSED};
use crate::run::{
    app_name, bad, driver_json, final_lines, parse_app, parse_cc, parse_ecn, random_seed, resolve,
    seconds, unspecified, Observer, RunError, SendOptions, FORMAT_VERSION, POLL, REAL_CLOCK_WAKERS,
};

/// Run `l4slab send`: returns `{summary_json, series, stats, failure}`.
/// With `parallel` N > 1 (`-P`), N connections run at once, flows `send-1`
/// ... `send-N`; with `reverse` (`-R`) the server sends and each flow is
/// what arrived here.
///
/// # Errors
/// [`RunError::Input`] for a bad option (before anything is sent), others
/// when the socket fails.
pub fn run_send(opts: &SendOptions, obs: &mut dyn Observer) -> Result<Value, RunError> {
    let server = resolve(&opts.target, opts.port)?;
    let cc = parse_cc(&opts.cc)?;
    let (ecn, codepoint) = parse_ecn(opts.ecn.as_deref())?;
    let app = parse_app(&opts.app)?;
    let duration = seconds("--duration", &opts.duration, "10 or 500ms")?;
    // iperf3's `-i 0`: no interval lines (the results still sample every second).
    let lines = opts.interval.trim() != "0";
    let interval = if lines {
        seconds("--interval", &opts.interval, "1 or 250ms")?
    } else {
        Dur::from_secs(1)
    };
    if interval < Dur::from_millis(10) {
        return Err(bad(
            "--interval",
            "at least 10ms (0: no interval lines); write e.g. 1 or 250ms",
        )
        .into());
    }
    let connect_timeout = seconds("--connect-timeout", &opts.connect_timeout, "5")?;
    let local = match &opts.bind {
        Some(b) => resolve(b, Some(0))?,
        None => unspecified(&server),
    };
    if !opts.ecn_validation && !ecn {
        return Err(bad(
            "--no-ecn-validation",
            "needs ECN on (not --ecn off); write e.g. --cc prague --no-ecn-validation",
        )
        .into());
    }
    let n = opts.parallel;
    if !(1..=MAX_PARALLEL).contains(&n) {
        return Err(bad(
            "-P/--parallel",
            format!("{n} connections: from 1 to {MAX_PARALLEL} (iperf3's limit); write e.g. -P 4"),
        )
        .into());
    }
    // What the data's sender runs; with -R the server is asked to run it.
    let request = Request {
        reverse: opts.reverse,
        cc: cc.clone(),
        ecn,
        codepoint,
        ecn_validation: opts.ecn_validation,
        app,
    };
    let socket = UdpSocket::bind(local)?;
    let local = socket.local_addr()?;
    let mut driver = Driver::new(DriverConfig {
        wakers: REAL_CLOCK_WAKERS,
        ..DriverConfig::default()
    });
    let start = driver.now();
    let mut clients = Vec::with_capacity(n);
    for i in 1..=n {
        let name = if n == 1 {
            "send".to_string()
        } else {
            format!("send-{i}")
        };
        let seed = random_seed()?;
        let cfg = if opts.reverse {
            // This end only acknowledges; the request carries the rest.
            ConnectionConfig {
                seed,
                app_request: Some(request.encode()),
                ..ConnectionConfig::default()
            }
        } else {
            request.sender_config(seed)
        };
        let c = Client::with_flow(
            cfg,
            start,
            server,
            (name, app, opts.reverse),
            duration,
            connect_timeout,
        )
        .map_err(|e| bad("--cc", e.to_string()))?;
        clients.push(c);
    }
    let mut group = Clients::new(clients);
    let ecn_name = if !ecn {
        "off"
    } else {
        match codepoint.unwrap_or_else(|| client_codepoint(&cc)) {
            Ecn::Ect1 => "ect1",
            _ => "ect0",
        }
    };
    let ecn_banner = if opts.ecn_validation {
        ecn_name.to_string()
    } else {
        format!("{ecn_name} WITHOUT ECN validation")
    };
    let every = if lines {
        format!("one line every {} s", round6(interval.as_secs_f64()))
    } else {
        "no interval lines".to_string()
    };
    let conns = if n > 1 {
        format!(", {n} connections")
    } else {
        String::new()
    };
    obs.line(&format!(
        "l4slab send: {local} -> {server}, cc {cc}, ECN {ecn_banner}, app {}, {} s{conns}, {every}",
        app_name(&app),
        round6(duration.as_secs_f64()),
    ));
    if opts.reverse {
        // iperf3's words for -R.
        obs.line(&format!(
            "Reverse mode, remote host {server} is sending (its cc {cc}, ECN {ecn_banner})"
        ));
    }
    let mut next = start + interval;
    let mut interrupted = false;
    let mut last_sample = start;
    let sample_all = |group: &mut Clients, now: Time, from: Time, obs: &mut dyn Observer| {
        let (mut bytes, mut bps) = (0, 0.0);
        for c in &mut group.clients {
            let (iv, line) = c.sample(now);
            bytes += iv.bytes;
            bps += iv.goodput_bps;
            if lines {
                obs.line(&line);
            }
        }
        if lines && n > 1 {
            let t = |x: Time| x.saturating_since(start).as_secs_f64();
            obs.line(&sum_line(t(from), t(now), bytes, bps));
        }
    };
    loop {
        let now = driver.now();
        let until = next.min(now + POLL);
        let outcome = driver.run(&socket, &mut group, until)?;
        let now = driver.now();
        if outcome == RunOutcome::Done {
            break;
        }
        if now >= next {
            sample_all(&mut group, now, last_sample, obs);
            last_sample = now;
            next += interval;
        }
        if !interrupted && !obs.keep_going() {
            interrupted = true;
            for c in &mut group.clients {
                c.stop(now);
            }
        }
    }
    let end = driver.now();
    // The last, partial interval (unless it is a sliver).
    let connected = group.clients.iter().any(|c| c.connected_at().is_some());
    if end.saturating_since(last_sample) * 10 >= interval && connected {
        sample_all(&mut group, end, last_sample, obs);
    }
    let wall = end.saturating_since(start);
    let (local_s, server_s) = (local.to_string(), server.to_string());
    let mut flows = serde_json::Map::new();
    let mut failures = Vec::new();
    let mut series = SeriesColumns::default();
    let (mut total, mut total_bps) = (0, 0.0);
    for c in &group.clients {
        let name = c.record.name.clone();
        if let Some(f) = c.failure() {
            let why = failure_text(f, &server, connect_timeout, &request);
            failures.push(if n > 1 { format!("{name}: {why}") } else { why });
        }
        let flow = client_summary(c, &request, ecn_name, (&local_s, &server_s), start, end);
        for l in final_lines(&name, &flow, wall) {
            obs.line(&l);
        }
        total += flow["bytes_delivered"].as_u64().unwrap_or(0);
        total_bps += flow[FlowKey::GoodputBps.name()].as_f64().unwrap_or(0.0);
        c.record.series_into(&mut series);
        flows.insert(name, flow);
    }
    if n > 1 {
        obs.line(&format!(
            "{}  {}",
            sum_line(0.0, wall.as_secs_f64(), total, total_bps),
            if opts.reverse {
                "received"
            } else {
                "acknowledged"
            }
        ));
    }
    let failure = (!failures.is_empty()).then(|| failures.join("; "));
    if let Some(f) = &failure {
        obs.line(&format!("error: {f}"));
    }
    let summary = json!({
        "format_version": FORMAT_VERSION,
        "tool_version": env!("CARGO_PKG_VERSION"),
        "backend": "send",
        "seed": Value::Null,
        "duration_s": round6(wall.as_secs_f64()),
        "window_s": [0.0, round6(wall.as_secs_f64())],
        "scenario": {
            "name": "send",
            "server": server.to_string(),
            "cc": cc,
            "ecn": ecn_name,
            "ecn_validation": opts.ecn_validation,
            "app": opts.app,
            "duration_s": round6(duration.as_secs_f64()),
            "interval_s": round6(interval.as_secs_f64()),
            "reverse": opts.reverse,
            "parallel": n,
        },
        "flows": flows,
        "queues": {},
        "driver": driver_json(&driver),
        "interrupted": interrupted,
        "failure": failure,
    });
    Ok(json!({
        "summary_json": serde_json::to_string(&summary).expect("serializes"),
        "series": series.to_json(),
        "stats": {
            "backend": "send",
            "wall_s": wall.as_secs_f64(),
            "sim_s": wall.as_secs_f64(),
            "packets": driver.stats().datagrams_sent + driver.stats().datagrams_received,
        },
        "failure": failure,
        "interrupted": interrupted,
    }))
}

/// Why a client's run failed, in words.
fn failure_text(
    f: Failure,
    server: &SocketAddr,
    connect_timeout: Dur,
    request: &Request,
) -> String {
    match f {
        Failure::NoAnswer { waited } => format!(
            "no answer from {server} within {:.1} s (no `l4slab serve` there, or it refused: full, or the address-validation token failed)",
            waited.as_secs_f64().min(connect_timeout.as_secs_f64())
        ),
        Failure::NothingDelivered if request.reverse => format!(
            "nothing received: the handshake with {server} completed but the server sent no data"
        ),
        Failure::NothingDelivered => format!(
            "nothing delivered: the handshake with {server} completed but the server acknowledged no data"
        ),
        Failure::RequestNotTaken => format!(
            "{server} does not take -R (reverse: the server sends): an l4slab serve older than this send; upgrade it, or send without -R"
        ),
        Failure::ClosedByPeer { error_code } if error_code == REFUSED => format!(
            "the server refused the request (-R with cc {}, app {}): an l4slab serve that cannot do it",
            request.cc,
            app_name(&request.app)
        ),
        Failure::ClosedByPeer { error_code } => {
            format!("the server closed the connection (error code {error_code})")
        }
        Failure::IdleTimeout => "the connection timed out (no packet from the server)".into(),
    }
}

/// A client's flow entry in `summary.json`.
fn client_summary(
    c: &Client,
    request: &Request,
    ecn_name: &str,
    (local, server): (&str, &str),
    start: Time,
    end: Time,
) -> Value {
    let st = c.conn.stats();
    let bytes = c.acked();
    let mut m = if request.reverse {
        json!({ "bytes_received": bytes })
    } else {
        json!({ "bytes_acked": bytes, "stream_bytes_sent": st.stream_bytes_sent })
    };
    if let (QuicApp::Frames { .. }, false) = (request.app, request.reverse) {
        m["frames_captured"] = c.app.report(start, end)["frames_captured"].clone();
    }
    c.record.summary(
        &c.conn,
        Outcome {
            app: client_app_kind(&request.app),
            cc: Some(&request.cc),
            down: request.reverse,
            client: Some(local),
            server: Some(server),
            bytes,
            completion: c.completed_at(),
            end,
            app_metrics: m,
            extra: json!({
                // The codepoint asked for (`--ecn`).
                "ecn": ecn_name,
                "handshake_ms": st.handshake_time.map(ms),
                "reverse": request.reverse,
            }),
        },
    )
}

fn client_app_kind(app: &QuicApp) -> &'static str {
    match app {
        QuicApp::Bulk => "bulk",
        QuicApp::File { .. } => "file",
        QuicApp::Frames { .. } => "frames",
    }
}

/// The codepoint a controller asks for (ECT(1) for prague and dctcp).
fn client_codepoint(cc: &str) -> Ecn {
    if matches!(cc, "prague" | "dctcp") {
        Ecn::Ect1
    } else {
        Ecn::Ect0
    }
}
