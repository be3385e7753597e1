//! `app = ...` of a flow -> [`AppSpec`]: one resolver per application kind,
//! each with its defaults (docs/apps.md).

use serde::Deserialize;
use toml::Value;

use l4slab_app::cbr::CbrConfig;
use l4slab_app::cloud_gaming::CloudGamingConfig;
use l4slab_app::ping::PingConfig;
use l4slab_app::screen_share::ScreenShareConfig;
use l4slab_app::video_call::VideoCallConfig;
use l4slab_core::Dur;

use crate::error::ScenarioError;
use crate::model::{
    AppSpec, CbrSpec, FrameAppSpec, FrameTransport, MediaCcSpec, PingSpec, ScreenShareSpec,
    WebConnection, WebObjectSpec, WebSpec,
};
use crate::raw::KindOnlyTable;
use crate::values::{self, describe, deserialize_at, join, kind_of};

/// Applications this build implements.
pub const APPS: &[&str] = &[
    "bulk",
    "file",
    "ping",
    "cbr",
    "screen_share",
    "web",
    "cloud_gaming",
    "video_call",
];
/// Values of a web object's `connection`.
const WEB_CONNECTIONS: &[&str] = &["existing", "new"];

/// `app = { kind = "file", size = "10MB" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct FileTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    size: Option<Value>,
}

/// `app = { kind = "ping", interval = "100ms", size = "64B", ecn = "not_ect", timeout = "1s" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct PingTable {
    #[allow(dead_code)]
    kind: String,
    interval: Option<Value>,
    size: Option<Value>,
    ecn: Option<Value>,
    timeout: Option<Value>,
}

/// `app = { kind = "cbr", rate = "5Mbit", size = "1200B", ecn = "not_ect" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct CbrTable {
    #[allow(dead_code)]
    kind: String,
    rate: Option<Value>,
    size: Option<Value>,
    ecn: Option<Value>,
}

/// `app = { kind = "screen_share", frame_size = "10KB", max_fps = 30, stall_threshold = "200ms" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct ScreenShareTable {
    #[allow(dead_code)]
    kind: String,
    frame_size: Option<Value>,
    max_fps: Option<i64>,
    stall_threshold: Option<Value>,
    transport: Option<Value>,
    media_cc: Option<Value>,
    playout_delay: Option<Value>,
}

/// `app = { kind = "web", request_size = "500B", connection = "existing",
/// objects = [{ size = "20KB", at = "5s", connection = "new" }, ...] }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct WebTable {
    #[allow(dead_code)]
    kind: String,
    objects: Option<Value>,
    request_size: Option<Value>,
    connection: Option<Value>,
}

/// One entry of a web app's `objects`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct WebObjectTable {
    size: Option<Value>,
    at: Option<Value>,
    connection: Option<Value>,
}

/// `app = { kind = "cloud_gaming" | "video_call", fps = 60, start_bitrate = "10Mbit",
/// min_bitrate = "1Mbit", max_bitrate = "40Mbit", late_threshold = "50ms", stall_threshold = "200ms" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct FrameAppTable {
    #[allow(dead_code)]
    kind: String,
    fps: Option<i64>,
    start_bitrate: Option<Value>,
    min_bitrate: Option<Value>,
    max_bitrate: Option<Value>,
    late_threshold: Option<Value>,
    stall_threshold: Option<Value>,
    transport: Option<Value>,
    media_cc: Option<Value>,
    playout_delay: Option<Value>,
}

/// `media_cc = { kind = "scream", l4s = false }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct MediaCcTable {
    #[allow(dead_code)]
    kind: String,
    l4s: Option<bool>,
}

/// Values of a frame app's `transport`.
const FRAME_TRANSPORTS: &[&str] = &["tcp", "rtp"];
/// Media congestion controllers (`app.media_cc`).
pub const MEDIA_CCS: &[&str] = &["gcc", "scream"];

/// `app = "bulk"`, `{ kind = "bulk" }`, `{ kind = "file", size = "10MB" }`, ...
pub(crate) fn resolve_app(value: Option<&Value>, path: &str) -> Result<AppSpec, ScenarioError> {
    let Some(value) = value else {
        return Ok(AppSpec::Bulk);
    };
    let (kind, kind_path) = kind_of(value, path)?;
    // A bare name selects the kind with its defaults; a table may set parameters.
    let table = matches!(value, Value::Table(_));
    match kind {
        "bulk" => {
            if table {
                deserialize_at::<KindOnlyTable>(value.clone(), path)?;
            }
            Ok(AppSpec::Bulk)
        }
        "file" => file(value, path, table),
        "ping" => {
            let t: Option<PingTable> = table
                .then(|| deserialize_at(value.clone(), path))
                .transpose()?;
            ping(t, path)
        }
        "cbr" => {
            let t: Option<CbrTable> = table
                .then(|| deserialize_at(value.clone(), path))
                .transpose()?;
            cbr(t, path)
        }
        "screen_share" => {
            let t: Option<ScreenShareTable> = table
                .then(|| deserialize_at(value.clone(), path))
                .transpose()?;
            screen_share(t, path)
        }
        "web" => web(value, path, table),
        "cloud_gaming" | "video_call" => {
            let t: Option<FrameAppTable> = table
                .then(|| deserialize_at(value.clone(), path))
                .transpose()?;
            let spec = frame_app(t, path, frame_defaults(kind))?;
            Ok(if kind == "cloud_gaming" {
                AppSpec::CloudGaming(spec)
            } else {
                AppSpec::VideoCall(spec)
            })
        }
        k => Err(ScenarioError::unknown_name(&kind_path, "app", k, APPS)),
    }
}

fn file(value: &Value, path: &str, table: bool) -> Result<AppSpec, ScenarioError> {
    let size_path = join(path, "size");
    if !table {
        return Err(ScenarioError::missing_with(
            &size_path,
            r#"app = { kind = "file", size = "10MB" }"#,
        ));
    }
    let t: FileTable = deserialize_at(value.clone(), path)?;
    let Some(size) = t.size else {
        return Err(ScenarioError::missing(&size_path));
    };
    let size = positive_size(&size, &size_path)?;
    Ok(AppSpec::File { size })
}

fn positive_size(v: &Value, path: &str) -> Result<u64, ScenarioError> {
    let size = values::size(v, path)?;
    if size == 0 {
        return Err(ScenarioError::bad_value(path, "must be greater than zero"));
    }
    Ok(size)
}

/// A size that fits a datagram or frame parameter.
fn size_in(v: &Value, path: &str, lo: u64, hi: u64) -> Result<u64, ScenarioError> {
    let size = values::size(v, path)?;
    if size < lo || size > hi {
        return Err(ScenarioError::bad_value(
            path,
            format!("{size} B is out of range; must be between {lo} B and {hi} B"),
        ));
    }
    Ok(size)
}

fn ping(t: Option<PingTable>, path: &str) -> Result<AppSpec, ScenarioError> {
    let mut s = PingSpec::default();
    let Some(t) = t else {
        return Ok(AppSpec::Ping(s));
    };
    let p = |k: &str| join(path, k);
    if let Some(v) = &t.interval {
        s.interval = values::positive_duration(v, &p("interval"))?;
    }
    if let Some(v) = &t.size {
        // A UDP payload that fits a 1500 B packet with IPv4 and UDP headers.
        s.size = size_in(v, &p("size"), 0, 1472)? as u32;
    }
    if let Some(v) = &t.ecn {
        s.ecn = crate::ecn::codepoint(v, &p("ecn"))?;
    }
    if let Some(v) = &t.timeout {
        s.timeout = values::positive_duration(v, &p("timeout"))?;
    }
    Ok(AppSpec::Ping(s))
}

/// The largest UDP payload over IPv4: 65535 - 20 (IP) - 8 (UDP).
const MAX_UDP_PAYLOAD: u64 = 65_507;

fn cbr(t: Option<CbrTable>, path: &str) -> Result<AppSpec, ScenarioError> {
    let mut s = CbrSpec::default();
    let Some(t) = t else {
        return Ok(AppSpec::Cbr(s));
    };
    let p = |k: &str| join(path, k);
    if let Some(v) = &t.rate {
        s.rate = values::positive_rate(v, &p("rate"))?;
    }
    if let Some(v) = &t.size {
        // (The generic example for a size is a file's "10MB".)
        s.size = size_in(v, &p("size"), 1, MAX_UDP_PAYLOAD)
            .map_err(|e| e.with_example(r#""1200B""#))? as u32;
    }
    if let Some(v) = &t.ecn {
        s.ecn = crate::ecn::codepoint(v, &p("ecn"))?;
    }
    Ok(AppSpec::Cbr(s))
}

fn screen_share(t: Option<ScreenShareTable>, path: &str) -> Result<AppSpec, ScenarioError> {
    let mut s = ScreenShareSpec::default();
    let Some(t) = t else {
        return Ok(AppSpec::ScreenShare(s));
    };
    let p = |k: &str| join(path, k);
    if let Some(v) = &t.frame_size {
        s.frame_size = positive_size(v, &p("frame_size"))?;
    }
    if let Some(fps) = t.max_fps {
        s.max_fps = values::int_in(fps, &p("max_fps"), 1, 1000)? as u32;
    }
    if let Some(v) = &t.stall_threshold {
        s.stall_threshold = values::positive_duration(v, &p("stall_threshold"))?;
    }
    s.transport = frame_transport(&t.transport, &t.media_cc, &t.playout_delay, path)?;
    Ok(AppSpec::ScreenShare(s))
}

fn web(value: &Value, path: &str, table: bool) -> Result<AppSpec, ScenarioError> {
    let objects_path = join(path, "objects");
    if !table {
        return Err(ScenarioError::missing_with(
            &objects_path,
            r#"app = { kind = "web", objects = [{ size = "20KB", at = "0s" }] }"#,
        ));
    }
    let t: WebTable = deserialize_at(value.clone(), path)?;
    let p = |k: &str| join(path, k);
    let mut spec = WebSpec {
        request_size: 500,
        objects: Vec::new(),
        page: None,
    };
    if let Some(v) = &t.request_size {
        spec.request_size = positive_size(v, &p("request_size"))?;
    }
    let default_connection = match &t.connection {
        Some(v) => web_connection(v, &p("connection"))?,
        None => WebConnection::Existing,
    };
    let items = match &t.objects {
        // (The generic example line would drop the key: the value starts with '['.)
        None => {
            return Err(ScenarioError::missing_with(
                &objects_path,
                r#"objects = [{ size = "20KB", at = "5s" }]"#,
            ))
        }
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ScenarioError::wrong_type(
                &objects_path,
                "an array of tables",
                &describe(other),
            ))
        }
    };
    if items.is_empty() {
        return Err(ScenarioError::bad_value(
            &objects_path,
            "lists no objects; a page has at least one",
        ));
    }
    for (i, item) in items.iter().enumerate() {
        let at = format!("{objects_path}[{i}]");
        let o: WebObjectTable = deserialize_at(item.clone(), &at)?;
        let size = match &o.size {
            Some(v) => positive_size(v, &join(&at, "size"))?,
            None => return Err(ScenarioError::missing(&join(&at, "size"))),
        };
        let when = match &o.at {
            Some(v) => values::duration(v, &join(&at, "at"))?,
            None => Dur::ZERO,
        };
        let connection = match &o.connection {
            Some(v) => web_connection(v, &join(&at, "connection"))?,
            None => default_connection,
        };
        spec.objects.push(WebObjectSpec {
            index: u32::try_from(i).expect("a TOML array this long does not parse"),
            size,
            at: when,
            connection,
        });
    }
    Ok(AppSpec::Web(spec))
}

fn web_connection(v: &Value, path: &str) -> Result<WebConnection, ScenarioError> {
    match v {
        Value::String(s) if s == "existing" => Ok(WebConnection::Existing),
        Value::String(s) if s == "new" => Ok(WebConnection::New),
        Value::String(s) => Err(ScenarioError::unknown_name(
            path,
            "connection",
            s,
            WEB_CONNECTIONS,
        )),
        other => Err(ScenarioError::wrong_type(
            path,
            "a string",
            &describe(other),
        )),
    }
}

/// Defaults of the frame apps, by kind: the apps' own (docs/apps.md), so
/// they are written once, in l4slab-app.
fn frame_defaults(kind: &str) -> FrameAppSpec {
    match kind {
        "cloud_gaming" => {
            let c = CloudGamingConfig::default();
            FrameAppSpec {
                fps: c.fps,
                start_bitrate: c.start_bitrate,
                min_bitrate: c.min_bitrate,
                max_bitrate: c.max_bitrate,
                late_threshold: c.late_threshold,
                stall_threshold: c.stall_threshold,
                transport: FrameTransport::Tcp,
            }
        }
        "video_call" => {
            let c = VideoCallConfig::default();
            FrameAppSpec {
                fps: c.fps,
                start_bitrate: c.start_bitrate,
                min_bitrate: c.min_bitrate,
                max_bitrate: c.max_bitrate,
                late_threshold: c.late_threshold,
                stall_threshold: c.stall_threshold,
                transport: FrameTransport::Tcp,
            }
        }
        k => unreachable!("no frame-app defaults for {k}"),
    }
}

fn frame_app(
    t: Option<FrameAppTable>,
    path: &str,
    mut s: FrameAppSpec,
) -> Result<FrameAppSpec, ScenarioError> {
    let Some(t) = t else {
        return Ok(s);
    };
    let p = |k: &str| join(path, k);
    if let Some(fps) = t.fps {
        s.fps = values::int_in(fps, &p("fps"), 1, 1000)? as u32;
    }
    if let Some(v) = &t.min_bitrate {
        s.min_bitrate = values::positive_rate(v, &p("min_bitrate"))?;
    }
    if let Some(v) = &t.max_bitrate {
        s.max_bitrate = values::positive_rate(v, &p("max_bitrate"))?;
    }
    if s.min_bitrate > s.max_bitrate {
        let at = if t.min_bitrate.is_some() {
            "min_bitrate"
        } else {
            "max_bitrate"
        };
        return Err(ScenarioError::conflict(
            &p(at),
            format!(
                "min_bitrate ({}) is above max_bitrate ({})",
                s.min_bitrate, s.max_bitrate
            ),
        ));
    }
    match &t.start_bitrate {
        Some(v) => {
            let sp = p("start_bitrate");
            let start = values::positive_rate(v, &sp)?;
            if start < s.min_bitrate || start > s.max_bitrate {
                return Err(ScenarioError::conflict(
                    &sp,
                    format!(
                        "{start} is outside min_bitrate..max_bitrate ({}..{})",
                        s.min_bitrate, s.max_bitrate
                    ),
                ));
            }
            s.start_bitrate = start;
        }
        // The default start, within the limits written.
        None => s.start_bitrate = s.start_bitrate.clamp(s.min_bitrate, s.max_bitrate),
    }
    if let Some(v) = &t.late_threshold {
        s.late_threshold = values::positive_duration(v, &p("late_threshold"))?;
    }
    if let Some(v) = &t.stall_threshold {
        s.stall_threshold = values::positive_duration(v, &p("stall_threshold"))?;
    }
    s.transport = frame_transport(&t.transport, &t.media_cc, &t.playout_delay, path)?;
    Ok(s)
}

/// `transport`, `media_cc` and `playout_delay` of a frame app.
fn frame_transport(
    transport: &Option<Value>,
    media_cc_v: &Option<Value>,
    playout_delay_v: &Option<Value>,
    path: &str,
) -> Result<FrameTransport, ScenarioError> {
    let p = |k: &str| join(path, k);
    let rtp = match transport {
        None => false,
        Some(Value::String(s)) if s == "tcp" => false,
        Some(Value::String(s)) if s == "rtp" => true,
        Some(Value::String(s)) => {
            return Err(ScenarioError::unknown_name(
                &p("transport"),
                "transport",
                s,
                FRAME_TRANSPORTS,
            ))
        }
        Some(other) => {
            return Err(ScenarioError::wrong_type(
                &p("transport"),
                "a string",
                &describe(other),
            ))
        }
    };
    if !rtp {
        for (k, given) in [
            ("media_cc", media_cc_v.is_some()),
            ("playout_delay", playout_delay_v.is_some()),
        ] {
            if given {
                return Err(ScenarioError::conflict(
                    &p(k),
                    format!("{k} applies to RTP media; add transport = \"rtp\""),
                ));
            }
        }
        return Ok(FrameTransport::Tcp);
    }
    let media_cc = match media_cc_v {
        None => MediaCcSpec::Gcc,
        Some(v) => media_cc(v, &p("media_cc"))?,
    };
    let playout_delay = match playout_delay_v {
        None => Dur::ZERO,
        Some(v) => values::duration(v, &p("playout_delay"))?,
    };
    Ok(FrameTransport::Rtp {
        media_cc,
        playout_delay,
    })
}

/// `media_cc = "gcc"`, `"scream"` or `{ kind = "scream", l4s = false }`.
fn media_cc(v: &Value, path: &str) -> Result<MediaCcSpec, ScenarioError> {
    let (kind, kind_path) = kind_of(v, path)?;
    let l4s = match v {
        Value::Table(_) => deserialize_at::<MediaCcTable>(v.clone(), path)?.l4s,
        _ => None,
    };
    match kind {
        "gcc" => {
            if l4s.is_some() {
                return Err(ScenarioError::conflict(
                    &join(path, "l4s"),
                    "GCC is a classic controller (Not-ECT); l4s applies to scream",
                ));
            }
            Ok(MediaCcSpec::Gcc)
        }
        "scream" => Ok(MediaCcSpec::Scream {
            l4s: l4s.unwrap_or(true),
        }),
        k => Err(ScenarioError::unknown_name(
            &kind_path, "media_cc", k, MEDIA_CCS,
        )),
    }
}

impl Default for PingSpec {
    fn default() -> Self {
        let c = PingConfig::default();
        PingSpec {
            interval: c.interval,
            size: c.size,
            ecn: c.ecn,
            timeout: c.timeout,
        }
    }
}

impl Default for CbrSpec {
    fn default() -> Self {
        let c = CbrConfig::default();
        CbrSpec {
            rate: c.rate,
            size: c.size,
            ecn: c.ecn,
        }
    }
}

impl Default for ScreenShareSpec {
    fn default() -> Self {
        let c = ScreenShareConfig::default();
        ScreenShareSpec {
            frame_size: c.frame_size,
            max_fps: c.max_fps,
            stall_threshold: c.stall_threshold,
            transport: FrameTransport::Tcp,
        }
    }
}
