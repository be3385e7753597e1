//! `[[flows]]` -> [`Flow`]s: host references, congestion control (resolved
//! in [`crate::cc`]), applications, transport overrides, and `count` expansion.
//!
//! A flow with `count = N > 1` becomes N identical flows named
//! `<name>.0` .. `<name>.<N-1>`. A web flow's `connection = "new"` objects
//! each become a flow of their own, `<name>.obj<i>` (after the flow),
//! starting at the object's time. A `download` flow becomes one flow per
//! connection, `<name>.<j>` (per start of its `every` schedule,
//! `<name>.<r>.<j>`), and so does a `web_browse` flow over `K` HTTP/1.1
//! connections. Names must be unique after expansion.

use std::collections::BTreeMap;

use l4slab_core::param::{Configure, Kind};
use l4slab_core::{Dur, Time};
use toml::Value;

use crate::error::ScenarioError;
use l4slab_app::download::DownloadPart;
use l4slab_app::web_browse::{Connections, SessionConnection};

use crate::model::{
    AppSpec, Direction, EcnSpec, Entry, Flow, Host, Protocol, Side, TransportSpec, WebConnection,
    WebPage,
};
use crate::param::read_keys;
use crate::parse::ParseOptions;
use crate::qdisc::params::with_example;
use crate::raw::RawFlow;
use crate::resolve::check_name;
use crate::values::{self, join};

/// Upper bound on `count`, to catch typos before they allocate.
pub const MAX_COUNT: i64 = 100_000;

/// `raw`: each `[[flows]]` entry (and each flow a household brought,
/// `crate::household`) with the key path its errors name.
pub(crate) fn resolve_flows(
    raw: &[(Entry, &RawFlow)],
    hosts: &[Host],
    end: Time,
    opts: &ParseOptions<'_>,
) -> Result<Vec<Flow>, ScenarioError> {
    if raw.is_empty() {
        return Err(ScenarioError::missing("flows"));
    }
    let mut flows = Vec::new();
    // Expanded name -> the key path of the entry that produced it.
    let mut seen: BTreeMap<String, Entry> = BTreeMap::new();
    for (i, (entry, f)) in raw.iter().enumerate() {
        let path = &entry.to_string();
        let flow = resolve_flow(f, i, *entry, hosts, end, opts)?;
        let count = match f.count {
            Some(c) => values::int_in(c, &join(path, "count"), 1, MAX_COUNT)?,
            None => 1,
        };
        let stagger = match &f.stagger {
            Some(v) => values::duration(v, &join(path, "stagger"))?,
            None => Dur::ZERO,
        };
        if count == 1 && !stagger.is_zero() {
            return Err(ScenarioError::conflict(
                &join(path, "stagger"),
                "staggers the starts of a flow's copies: give count too (e.g. count = 10)",
            ));
        }
        // The last copy's start must fall inside the run, as `start`'s does.
        let last = flow.start.saturating_add(stagger.saturating_mul(count - 1));
        if last >= end {
            return Err(ScenarioError::conflict(
                &join(path, "stagger"),
                format!(
                    "the last of {count} copies would start at {}, not before the end of the run \
                     (duration = {})",
                    values::show_dur(last.saturating_since(Time::ZERO)),
                    values::show_dur(end.saturating_since(Time::ZERO))
                ),
            ));
        }
        for copy in copies(&flow, count, stagger) {
            for f in split_web(copy, path, end)?
                .into_iter()
                .map(|f| split_download(f, path, end))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .flatten()
                .flat_map(split_browse)
            {
                if let Some(&other) = seen.get(&f.name) {
                    return Err(ScenarioError::conflict(
                        &join(path, "name"),
                        format!(
                            "flow name '{}' is already used by {other}; names must be unique",
                            f.name
                        ),
                    ));
                }
                seen.insert(f.name.clone(), *entry);
                flows.push(f);
            }
        }
    }
    Ok(flows)
}

/// `count` copies of `flow`: itself when 1, else `<name>.0` ..
/// `<name>.<count-1>`, copy `j` starting `j × stagger` after it. A download's
/// connections and its `every` starts are made the same way
/// ([`split_download`]).
fn copies(flow: &Flow, count: u64, stagger: Dur) -> Vec<Flow> {
    if count == 1 {
        return vec![flow.clone()];
    }
    (0..count)
        .map(|j| Flow {
            name: format!("{}.{j}", flow.name),
            start: flow.start.saturating_add(stagger.saturating_mul(j)),
            ..flow.clone()
        })
        .collect()
}

/// A `download` flow -> its parts (l4slab_app::download): with `every`,
/// one download per start that falls inside the run (`<name>.<r>`, the
/// `count` naming with `every` as the stagger), each split over its
/// `connections` (`<download>.<j>`, all starting with it), part `j`
/// carrying [`DownloadConfig::part_bytes`]. A schedule that starts once
/// only, or stops after the run ends, is an error. Other flows pass through.
///
/// [`DownloadConfig::part_bytes`]: l4slab_app::download::DownloadConfig::part_bytes
fn split_download(flow: Flow, path: &str, end: Time) -> Result<Vec<Flow>, ScenarioError> {
    let AppSpec::Download(d) = &flow.app else {
        return Ok(vec![flow]);
    };
    let d = d.clone();
    let app = join(path, "app");
    let left = end.saturating_since(flow.start);
    if !d.stop.is_zero() && d.stop >= left {
        return Err(ScenarioError::conflict(
            &join(&app, "stop"),
            format!(
                "{} after the start ({}) is not before the end of the run (duration = {}); the download would never be stopped",
                values::show_dur(d.stop),
                values::show_dur(flow.start.saturating_since(Time::ZERO)),
                values::show_dur(end.saturating_since(Time::ZERO))
            ),
        ));
    }
    let starts = if d.every.is_zero() {
        1
    } else {
        let n = left.as_nanos().div_ceil(d.every.as_nanos());
        if n < 2 {
            return Err(ScenarioError::conflict(
                &join(&app, "every"),
                format!(
                    "the second download would start at {}, not before the end of the run (duration = {}); give a shorter every, or none to download once",
                    values::show_dur(
                        flow.start.saturating_add(d.every).saturating_since(Time::ZERO)
                    ),
                    values::show_dur(end.saturating_since(Time::ZERO))
                ),
            ));
        }
        n
    };
    let mut out = Vec::new();
    for run in copies(&flow, starts, d.every) {
        let name = run.name.clone();
        for (j, mut part) in copies(&run, u64::from(d.connections), Dur::ZERO)
            .into_iter()
            .enumerate()
        {
            let j = j as u32;
            if let AppSpec::Download(p) = &mut part.app {
                p.part = Some(DownloadPart {
                    download: name.clone(),
                    index: j,
                    bytes: d.part_bytes(j),
                });
            }
            out.push(part);
        }
    }
    Ok(out)
}

/// A `web_browse` flow with `connections = K` (HTTP/1.1) -> its
/// connections (l4slab_app::web_browse_h1), `<name>.<j>` (the flow itself
/// when `K` is 1), all starting with it: connection 0 opens then, the
/// others when the browser first needs them. Other flows pass through.
fn split_browse(flow: Flow) -> Vec<Flow> {
    let k = match &flow.app {
        AppSpec::WebBrowse(b) => match b.connections {
            Connections::Http1(k) => k,
            Connections::Multiplexed => return vec![flow],
        },
        _ => return vec![flow],
    };
    let session = flow.name.clone();
    let mut conns = copies(&flow, u64::from(k), Dur::ZERO);
    for (j, c) in conns.iter_mut().enumerate() {
        if let AppSpec::WebBrowse(b) = &mut c.app {
            b.connection = Some(SessionConnection {
                session: session.clone(),
                index: u32::try_from(j).expect("at most MAX_CONNECTIONS"),
            });
        }
    }
    conns
}

fn resolve_flow(
    f: &RawFlow,
    i: usize,
    entry: Entry,
    hosts: &[Host],
    end: Time,
    opts: &ParseOptions<'_>,
) -> Result<Flow, ScenarioError> {
    let path = &entry.to_string();
    let name = match &f.name {
        Some(n) => {
            check_name(n, &join(path, "name"))?;
            n.clone()
        }
        None => format!("flow{i}"),
    };
    let client = pick_host(
        hosts,
        f.client.as_deref(),
        Side::Client,
        &join(path, "client"),
    )?;
    let server = pick_host(
        hosts,
        f.server.as_deref(),
        Side::Server,
        &join(path, "server"),
    )?;
    let direction = match f.direction.as_deref() {
        None | Some("down") => Direction::Down,
        Some("up") => Direction::Up,
        Some(other) => {
            return Err(ScenarioError::unknown_name(
                &join(path, "direction"),
                "direction",
                other,
                &["down", "up"],
            ))
        }
    };
    let cc = crate::cc::resolve(f.cc.as_ref(), &join(path, "cc"), &opts.known_cc)?;
    let start = match &f.start {
        Some(v) => {
            let p = join(path, "start");
            let t = Time::ZERO + values::duration(v, &p)?;
            if t >= end {
                return Err(ScenarioError::conflict(
                    &p,
                    format!(
                        "{} is not before the end of the run (duration = {})",
                        values::show_dur(t.saturating_since(Time::ZERO)),
                        values::show_dur(end.saturating_since(Time::ZERO))
                    ),
                ));
            }
            t
        }
        None => Time::ZERO,
    };
    let app = crate::app::resolve_app(f.app.as_ref(), &join(path, "app"))?;
    if app.is_rtp() {
        // An RTP flow's congestion control and ECN are the media controller's.
        for (k, given) in [
            ("cc", f.cc.is_some()),
            ("ecn", f.ecn.is_some()),
            ("transport", f.transport.is_some()),
        ] {
            if given {
                return Err(ScenarioError::conflict(
                    &join(path, k),
                    format!(
                        "the flow's app runs over RTP (app.transport = \"rtp\"); its congestion control and ECN are app.media_cc (e.g. media_cc = \"scream\"), and it has no TCP {k}"
                    ),
                ));
            }
        }
    }
    let transport = resolve_transport(f.transport.as_ref(), &join(path, "transport"))?;
    if transport.protocol == Protocol::Quic
        && !matches!(
            app,
            AppSpec::Bulk(_)
                | AppSpec::File(_)
                | AppSpec::Web(_)
                | AppSpec::WebBrowse(_)
                | AppSpec::VideoStream(_)
                | AppSpec::Download(_)
        )
    {
        return Err(ScenarioError::conflict(
            &join(path, "transport.protocol"),
            format!(
                "\"quic\" carries the bulk, file, web, web_browse, video_stream and download apps for now, not \"{}\"; use app = \"bulk\", {{ kind = \"file\", size = \"10MB\" }} or {{ kind = \"web\", objects = [...] }}",
                app.kind()
            ),
        ));
    }
    if let AppSpec::WebBrowse(b) = &app {
        if transport.protocol == Protocol::Quic && !b.connections.is_multiplexed() {
            // web_browse_h1 drives TCP connections; over QUIC the session runs
            // multiplexed on one connection (quic_stream_app).
            return Err(ScenarioError::conflict(
                &join(path, "app.connections"),
                "parallel HTTP/1.1 connections run over TCP; with transport.protocol = \"quic\" a browsing session is one multiplexed connection; write e.g. \"multiplexed\"".to_string(),
            ));
        }
    }
    let ecn = f
        .ecn
        .as_ref()
        .map(|v| crate::ecn::mode(v, &join(path, "ecn")))
        .transpose()?;
    if transport.protocol == Protocol::Quic {
        quic_ecn(ecn, &join(path, "ecn"))?;
    }
    Ok(Flow {
        name,
        entry,
        client,
        server,
        direction,
        cc,
        start,
        app,
        transport,
        ecn,
        // Without [wifi] it does nothing (so a file keeps working with the cell removed).
        wifi_ac: match &f.wifi_ac {
            Some(v) => crate::wifi::access_category(v, &join(path, "wifi_ac"))?,
            None => l4slab_wifi::edca::Ac::Be,
        },
    })
}

/// A QUIC flow's `ecn`: on (absent) or `"off"`. `"classic"` and `"accecn"`
/// name TCP's ways of negotiating and feeding back ECN (RFC 3168 §6.1.1's
/// ECE/CWR handshake, Accurate ECN's counters), which QUIC does not have:
/// its ACK frames count ECT(0), ECT(1) and CE (RFC 9000 §13.4, §19.3.2) and
/// its codepoint is `transport.ecn_codepoint`.
fn quic_ecn(ecn: Option<EcnSpec>, path: &str) -> Result<(), ScenarioError> {
    let (name, what) = match ecn {
        None | Some(EcnSpec::Off) => return Ok(()),
        Some(EcnSpec::Classic) => (
            "classic",
            "classic ECN is TCP's (RFC 3168 §6.1.1: negotiated with ECE and CWR in the handshake)",
        ),
        Some(EcnSpec::AccEcn) => (
            "accecn",
            "AccECN is TCP's (Accurate ECN feedback in the TCP header)",
        ),
    };
    Err(ScenarioError::invalid(
        path,
        crate::error::Problem::Conflict,
        format!(
            "\"{name}\" with transport.protocol = \"quic\": {what}; a QUIC flow uses ECN unless ecn = \"off\", feeds it back in its ACK frames (RFC 9000 §13.4) and sends the codepoint transport.ecn_codepoint names (\"ect0\", \"ect1\" or \"not_ect\"); remove ecn"
        ),
        Some(r#"transport = { protocol = "quic", ecn_codepoint = "ect0" }"#.into()),
    ))
}

/// A web flow and one flow per `connection = "new"` object (which moves to
/// it): `<name>.obj<index>`, starting at the page's start plus the object's
/// `at`. Every object must be asked for before the end of the run. Other
/// flows pass through.
fn split_web(flow: Flow, path: &str, end: Time) -> Result<Vec<Flow>, ScenarioError> {
    let AppSpec::Web(spec) = &flow.app else {
        return Ok(vec![flow]);
    };
    for o in &spec.objects {
        let at = flow.start + o.at;
        if at >= end {
            return Err(ScenarioError::conflict(
                &format!("{path}.app.objects[{}].at", o.index),
                format!(
                    "the object is asked for at {} (flow start + at), not before the end of the run (duration = {})",
                    values::show_dur(at.saturating_since(Time::ZERO)),
                    values::show_dur(end.saturating_since(Time::ZERO))
                ),
            ));
        }
    }
    let (new, existing): (Vec<_>, Vec<_>) = spec
        .objects
        .iter()
        .partition(|o| o.connection == WebConnection::New);
    let mut page = flow.clone();
    if let AppSpec::Web(s) = &mut page.app {
        s.objects = existing;
    }
    let mut out = vec![page];
    for o in new {
        let mut part = flow.clone();
        part.name = format!("{}.obj{}", flow.name, o.index);
        part.start = flow.start + o.at;
        if let AppSpec::Web(s) = &mut part.app {
            s.objects = vec![o];
            s.page = Some(WebPage {
                flow: flow.name.clone(),
                start: flow.start,
            });
        }
        out.push(part);
    }
    Ok(out)
}

/// The index of the host a flow names for `side`, or the only host on that
/// side when the flow names none.
fn pick_host(
    hosts: &[Host],
    given: Option<&str>,
    side: Side,
    path: &str,
) -> Result<usize, ScenarioError> {
    let side_name = match side {
        Side::Client => "client",
        Side::Server => "server",
    };
    let on_side: Vec<&str> = hosts
        .iter()
        .filter(|h| h.side == side)
        .map(|h| h.name.as_str())
        .collect();
    let Some(name) = given else {
        return match on_side.as_slice() {
            [only] => Ok(hosts.iter().position(|h| h.name == *only).expect("listed")),
            many => Err(ScenarioError::invalid(
                path,
                crate::error::Problem::Conflict,
                format!(
                    "missing, and there are {} {side_name}-side hosts to choose from: {}",
                    many.len(),
                    many.join(", ")
                ),
                Some(format!(
                    "{side_name} = \"{}\"",
                    many.first().copied().unwrap_or(side_name)
                )),
            )),
        };
    };
    match hosts.iter().position(|h| h.name == name) {
        None => {
            let all: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
            Err(ScenarioError::unknown_name(path, "host", name, &all))
        }
        Some(i) if hosts[i].side != side => Err(ScenarioError::invalid(
            path,
            crate::error::Problem::Conflict,
            format!(
                "host '{name}' is not on the {side_name} side; choose one of: {}",
                on_side.join(", ")
            ),
            None,
        )),
        Some(i) => Ok(i),
    }
}

/// `[flows.transport]` over the defaults of its `protocol`
/// ([`TransportSpec::defaults_for`]): the keys declared by
/// [`l4slab_tcp::config::PARAMS`] read by the generic reader
/// ([`crate::param`]) and set by name; what depends on another key here
/// (`mss` by `protocol`, QUIC's default `initial_window` by `mss`, the buffers
/// by `mss`, `notsent_lowat` by `send_buffer`). A QUIC flow's keys are then
/// checked against what QUIC applies ([`crate::quic::check`]).
fn resolve_transport(raw: Option<&Value>, path: &str) -> Result<TransportSpec, ScenarioError> {
    use l4slab_tcp::config::{self as tcp, PARAMS};
    let Some(raw) = raw else {
        return Ok(TransportSpec::default());
    };
    let Value::Table(table) = raw else {
        return Err(ScenarioError::wrong_type(
            path,
            "a table",
            &values::describe(raw),
        ));
    };
    let keys = read_keys(table, path, PARAMS, None, &["protocol"])?;
    let p = |key: &str| join(path, key);
    let protocol = match table.get("protocol") {
        None => Protocol::Tcp,
        Some(v) => {
            let fp = p("protocol");
            let Value::String(name) = v else {
                return Err(ScenarioError::wrong_type(
                    &fp,
                    "a string",
                    &values::describe(v),
                ));
            };
            match name.as_str() {
                "tcp" => Protocol::Tcp,
                "quic" => Protocol::Quic,
                other => {
                    return Err(ScenarioError::unknown_name(
                        &fp,
                        "transport protocol",
                        other,
                        &["tcp", "quic"],
                    ))
                }
            }
        }
    };
    let mut t = TransportSpec::defaults_for(protocol);
    for param in PARAMS {
        if matches!(param.kind, Kind::Custom(_)) {
            continue; // mss, below
        }
        if let Some(v) = keys.get(param) {
            assert!(
                t.set(param.name, v),
                "{} is a TransportSpec field",
                param.name
            );
        }
    }
    if let Some((_, v)) = keys.raw(&tcp::MSS) {
        let mp = keys.path_of(&tcp::MSS);
        let ex = tcp::MSS.example();
        let mss = match v {
            // The MSS is always in bytes, so a bare integer is not ambiguous.
            Value::Integer(i) => *i,
            v => i64::try_from(values::size(v, &mp)?).unwrap_or(i64::MAX),
        };
        t.mss = match protocol {
            Protocol::Tcp => {
                let (min, max) = tcp::MSS_RANGE;
                values::int_in(mss, &mp, min, max).map_err(|e| with_example(e, &ex))? as u32
            }
            // QUIC's maximum datagram size.
            Protocol::Quic => crate::quic::mss(mss, &mp)?,
        };
    }
    if protocol == Protocol::Quic && !keys.has(&tcp::INITIAL_WINDOW) {
        // RFC 9002 §7.2's default for the datagram size.
        t.initial_window = l4slab_quic::default_initial_window(u64::from(t.mss.max(1))) as u32;
    }
    let mss = u64::from(t.mss);
    for (param, bytes) in [
        (&tcp::SEND_BUFFER, t.send_buffer),
        (&tcp::RECEIVE_BUFFER, t.receive_buffer),
    ] {
        if keys.has(param) && bytes < mss {
            return Err(ScenarioError::conflict(
                &keys.path_of(param),
                format!(
                    "{bytes} B is smaller than one {} (mss = {mss} B)",
                    match protocol {
                        Protocol::Tcp => "segment",
                        Protocol::Quic => "datagram",
                    }
                ),
            ));
        }
    }
    if let Some(lowat) = t.notsent_lowat.filter(|l| *l > t.send_buffer) {
        return Err(ScenarioError::conflict(
            &keys.path_of(&tcp::NOTSENT_LOWAT),
            format!("{lowat} B is larger than send_buffer ({} B)", t.send_buffer),
        ));
    }
    if protocol == Protocol::Quic {
        crate::quic::check(&t, path)?;
    }
    Ok(t)
}
