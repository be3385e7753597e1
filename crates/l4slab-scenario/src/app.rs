//! `app = ...` of a flow -> [`AppSpec`]: one resolver per application kind,
//! each with its defaults (docs/apps.md).

use serde::Deserialize;
use toml::Value;

use l4slab_core::{Dur, Ecn};

use crate::error::ScenarioError;
use crate::model::{AppSpec, PingSpec, ScreenShareSpec};
use crate::raw::KindOnlyTable;
use crate::values::{self, deserialize_at, join, kind_of, not_implemented};

/// Applications this build implements.
pub const APPS: &[&str] = &["bulk", "file", "ping", "screen_share"];
/// Applications the design names that do not exist yet.
const APPS_LATER: &[&str] = &["web", "cloud_gaming", "video_call"];

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

/// `app = { kind = "screen_share", frame_size = "10KB", max_fps = 30, stall_threshold = "200ms" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct ScreenShareTable {
    #[allow(dead_code)]
    kind: String,
    frame_size: Option<Value>,
    max_fps: Option<i64>,
    stall_threshold: Option<Value>,
}

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
        "screen_share" => {
            let t: Option<ScreenShareTable> = table
                .then(|| deserialize_at(value.clone(), path))
                .transpose()?;
            screen_share(t, path)
        }
        k if APPS_LATER.contains(&k) => Err(not_implemented(&kind_path, "app", k, APPS)),
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
    Ok(AppSpec::ScreenShare(s))
}

impl Default for PingSpec {
    fn default() -> Self {
        PingSpec {
            interval: Dur::from_millis(100),
            size: 64,
            ecn: Ecn::NotEct,
            timeout: Dur::from_secs(1),
        }
    }
}

impl Default for ScreenShareSpec {
    fn default() -> Self {
        ScreenShareSpec {
            frame_size: 10_000,
            max_fps: 30,
            stall_threshold: Dur::from_millis(200),
        }
    }
}
