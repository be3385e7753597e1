//! `app = ...` of a flow -> [`AppSpec`]: the one dispatch on the app's
//! `kind` ([`AppSpec::defaults`], `l4slab_app::registry`), then the generic
//! reader of its table (`crate::param`), driven by the kind's declarations
//! ([`AppSpec::params`], declared next to each app's config in l4slab-app):
//! which keys it accepts, how each is read and checked, the example in its
//! errors. What is left here is what no declaration says (docs/apps.md):
//!
//! * required keys (a declaration with an unset default): `file`'s `size`,
//!   `web`'s `objects`;
//! * `web`'s objects, each a table that may become a flow of its own
//!   (`crate::flows`), and their default `connection`;
//! * a frame app's `transport`, `media_cc` and `playout_delay`, which go
//!   together ([`l4slab_app::framed`]);
//! * `min_bitrate <= start_bitrate <= max_bitrate`, and a default start
//!   clamped to the limits written;
//! * `web_browse`'s truncation ranges (`*_min <= *_max`, `objects_scale <=
//!   objects_cap`) and its `connections` (a name or a count);
//! * `video_stream`'s `ladder` (a name or an array of rates), a buffer
//!   target of at least one segment and a startup within the target;
//! * `download`: at least a byte per connection, `stop <= every` (its
//!   schedule against the run is checked where the flow is expanded,
//!   `crate::flows`).

use serde::Deserialize;
use toml::Value;

use l4slab_app::adaptive::AdaptiveConfig;
use l4slab_app::framed::{
    FrameTransport, FEEDBACK_ECN, MEDIA_CC, MEDIA_CCS, PACING, PLAYOUT_DEADLINE, PLAYOUT_DELAY,
    TRANSPORT,
};
use l4slab_app::registry::APP_NAMES;
use l4slab_app::rtp::MediaCcKind;
use l4slab_app::video_stream::{self as video, VideoStreamConfig};
use l4slab_app::web::{self, WebConnection, WebObjectSpec};
use l4slab_app::web_browse::{self as browse, Connections};
use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::Dur;

use crate::error::{Problem, ScenarioError};
use crate::model::AppSpec;
use crate::param::{read_table, Values};
use crate::values::{self, describe, deserialize_at, join, kind_of};

/// One entry of a web app's `objects`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct WebObjectTable {
    size: Option<Value>,
    at: Option<Value>,
    connection: Option<Value>,
}

/// `media_cc = { kind = "scream", l4s = false }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct MediaCcTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    l4s: Option<bool>,
}

/// `app = "bulk"`, `{ kind = "bulk" }`, `{ kind = "file", size = "10MB" }`, ...
pub(crate) fn resolve_app(value: Option<&Value>, path: &str) -> Result<AppSpec, ScenarioError> {
    let Some(value) = value else {
        return Ok(AppSpec::defaults("bulk").expect("bulk"));
    };
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(mut app) = AppSpec::defaults(kind) else {
        return Err(ScenarioError::unknown_name(
            &kind_path, "app", kind, APP_NAMES,
        ));
    };
    let params = app.params();
    // A bare name selects the kind with its defaults; a table may set parameters.
    let Value::Table(table) = value else {
        if let Some(p) = params.iter().find(|p| is_required(p.default)) {
            return Err(ScenarioError::missing_with(
                &join(path, p.name),
                app.example(),
            ));
        }
        return Ok(app);
    };
    let values = read_table(table, path, params, None)?;
    for p in params {
        if is_required(p.default) && !values.has(p) {
            return Err(ScenarioError::missing_with(
                &join(path, p.name),
                format!("{} = {}", p.name, p.example()),
            ));
        }
        if matches!(p.kind, Kind::Custom(_)) {
            continue;
        }
        if let Some(v) = values.get(p) {
            // False for the keys read below.
            app.set(p.name, v);
        }
    }
    match &mut app {
        AppSpec::Web(w) => w.objects = web_objects(&values)?,
        // A model that cannot be sampled: a truncation range upside down.
        AppSpec::WebBrowse(b) => {
            if let Some((low, high, why)) = b.conflict() {
                // Name the key written (the upper one if both were).
                let at = if values.has(&high) || !values.has(&low) {
                    high
                } else {
                    low
                };
                return Err(conflict(&values.path_of(&at), why, &at));
            }
            b.connections = browse_connections(&values)?;
        }
        AppSpec::CloudGaming(f) => bitrates(&values, &mut f.app)?,
        AppSpec::VideoCall(f) => bitrates(&values, &mut f.app)?,
        AppSpec::VideoStream(v) => video_stream(v, &values)?,
        AppSpec::Download(d) => download(d, &values)?,
        _ => {}
    }
    if let Some(t) = app.frame_transport_mut() {
        *t = frame_transport(&values)?;
    }
    Ok(app)
}

/// Values fine alone but not together, at `path`, with `p`'s example.
fn conflict(path: &str, message: String, p: &Param) -> ScenarioError {
    ScenarioError::invalid(path, Problem::Conflict, message, Some(p.example()))
}

/// A declaration with no default: the key must be written.
fn is_required(default: ParamValue) -> bool {
    matches!(default, ParamValue::Unset { .. })
}

/// `min_bitrate <= max_bitrate`, and a `start_bitrate` between them (the
/// default start clamped to them), by the kind's declarations.
fn bitrates<const K: usize>(
    values: &Values<'_>,
    a: &mut AdaptiveConfig<K>,
) -> Result<(), ScenarioError> {
    let (min, start, max) = (a.min_bitrate, a.start_bitrate, a.max_bitrate);
    let params = AdaptiveConfig::<K>::PARAMS;
    let p = |name: &str| *params.iter().find(|p| p.name == name).expect(name);
    let (min_p, start_p, max_p) = (p("min_bitrate"), p("start_bitrate"), p("max_bitrate"));
    if min > max {
        let at = if values.has(&min_p) { min_p } else { max_p };
        return Err(conflict(
            &values.path_of(&at),
            format!("min_bitrate ({min}) is above max_bitrate ({max})"),
            &at,
        ));
    }
    if !values.has(&start_p) {
        a.start_bitrate = start.clamp(min, max);
        return Ok(());
    }
    if start < min || start > max {
        return Err(conflict(
            &values.path_of(&start_p),
            format!("{start} is outside min_bitrate..max_bitrate ({min}..{max})"),
            &start_p,
        ));
    }
    Ok(())
}

/// `objects = [{ size = "20KB", at = "5s", connection = "new" }, ...]`,
/// each object's `connection` defaulting to the app's.
fn web_objects(values: &Values<'_>) -> Result<Vec<WebObjectSpec>, ScenarioError> {
    let default_connection = match values.get(&web::CONNECTION) {
        Some(v) => WebConnection::from_name(v.choice()).expect("declared"),
        None => WebConnection::Existing,
    };
    let objects_path = values.path_of(&web::OBJECTS);
    let items = match values.raw(&web::OBJECTS) {
        Some((_, Value::Array(items))) => items,
        Some((_, other)) => {
            return Err(ScenarioError::wrong_type(
                &objects_path,
                "an array of tables",
                &describe(other),
            ))
        }
        None => unreachable!("required: checked by the caller"),
    };
    if items.is_empty() {
        return Err(ScenarioError::bad_value(
            &objects_path,
            "lists no objects; a page has at least one",
        ));
    }
    let mut objects = Vec::with_capacity(items.len());
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
        objects.push(WebObjectSpec {
            index: u32::try_from(i).expect("a TOML array this long does not parse"),
            size,
            at: when,
            connection,
        });
    }
    Ok(objects)
}

fn positive_size(v: &Value, path: &str) -> Result<u64, ScenarioError> {
    let size = values::size(v, path)?;
    if size == 0 {
        return Err(ScenarioError::bad_value(path, "must be greater than zero"));
    }
    Ok(size)
}

/// An object's `connection`.
fn web_connection(v: &Value, path: &str) -> Result<WebConnection, ScenarioError> {
    let names = match web::CONNECTION.kind {
        Kind::Choice(names) => names,
        _ => unreachable!("a choice"),
    };
    match v {
        Value::String(s) => WebConnection::from_name(s)
            .ok_or_else(|| ScenarioError::unknown_name(path, "connection", s, names)),
        other => Err(ScenarioError::wrong_type(
            path,
            "a string",
            &describe(other),
        )),
    }
}

/// `transport`, `media_cc` and `playout_delay` of a frame app: the last two
/// only with `transport = "rtp"`.
fn frame_transport(values: &Values<'_>) -> Result<FrameTransport, ScenarioError> {
    let rtp = values.get(&TRANSPORT).is_some_and(|t| t.choice() == "rtp");
    if !rtp {
        for p in [
            MEDIA_CC,
            PLAYOUT_DELAY,
            PACING,
            PLAYOUT_DEADLINE,
            FEEDBACK_ECN,
        ] {
            if values.has(&p) {
                let k = p.name;
                // The example is the key to add: `p`'s own example alone is
                // refused for this same reason.
                return Err(ScenarioError::invalid(
                    &values.path_of(&p),
                    Problem::Conflict,
                    format!("{k} applies to RTP media; add transport = \"rtp\""),
                    Some(format!("transport = \"rtp\", {k} = {}", p.example())),
                ));
            }
        }
        return Ok(FrameTransport::Tcp);
    }
    let media_cc = match values.raw(&MEDIA_CC) {
        None => MediaCcKind::Gcc,
        Some((_, v)) => media_cc(v, &values.path_of(&MEDIA_CC))?,
    };
    let playout_delay = values.get(&PLAYOUT_DELAY).map_or(Dur::ZERO, |d| d.dur());
    let pacing = values.get(&PACING).is_none_or(|v| v.flag());
    // 0 (the default): no deadline.
    let playout_deadline = values
        .get(&PLAYOUT_DEADLINE)
        .map(|d| d.dur())
        .filter(|d| !d.is_zero());
    let feedback_ecn_media = values
        .get(&FEEDBACK_ECN)
        .is_some_and(|v| v.choice() == "media");
    Ok(FrameTransport::Rtp {
        media_cc,
        playout_delay,
        pacing,
        playout_deadline,
        feedback_ecn_media,
    })
}

/// `media_cc = "gcc"`, `"scream"`, `{ kind = "scream", l4s = false }` or
/// `"fixed"` (`{ kind = "fixed", l4s = true }`: ECT(1)).
fn media_cc(v: &Value, path: &str) -> Result<MediaCcKind, ScenarioError> {
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
                    "GCC is a classic controller (Not-ECT); l4s applies to scream and fixed",
                ));
            }
            Ok(MediaCcKind::Gcc)
        }
        "scream" => Ok(MediaCcKind::Scream {
            l4s: l4s.unwrap_or(true),
        }),
        "fixed" => Ok(MediaCcKind::Fixed {
            l4s: l4s.unwrap_or(false),
        }),
        k => Err(ScenarioError::unknown_name(
            &kind_path, "media_cc", k, MEDIA_CCS,
        )),
    }
}

/// `video_stream`'s `ladder` (`"apple_hls"` or rates lowest first), and
/// `segment <= buffer_target`, `startup <= buffer_target`.
fn video_stream(v: &mut VideoStreamConfig, values: &Values<'_>) -> Result<(), ScenarioError> {
    if let Some((_, raw)) = values.raw(&video::LADDER) {
        let path = values.path_of(&video::LADDER);
        v.ladder = match raw {
            Value::String(name) if name == "apple_hls" => video::APPLE_HLS_LADDER.to_vec(),
            Value::String(name) => {
                return Err(ScenarioError::unknown_name(
                    &path,
                    "ladder",
                    name,
                    video::LADDERS,
                ))
            }
            Value::Array(items) => {
                if items.is_empty() {
                    return Err(ScenarioError::bad_value(
                        &path,
                        "lists no bitrates; a ladder has at least one rung (e.g. [\"1Mbit\", \"3Mbit\"])",
                    ));
                }
                let mut ladder = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{path}[{i}]");
                    let bps = values::rate(item, &at)?.as_bps();
                    if ladder.last().is_some_and(|&prev| prev >= bps) {
                        return Err(ScenarioError::bad_value(
                            &at,
                            "is not above the rung before it; list the ladder lowest first, each rate once",
                        ));
                    }
                    ladder.push(bps);
                }
                ladder
            }
            other => {
                return Err(ScenarioError::wrong_type(
                    &path,
                    "\"apple_hls\" or an array of rates",
                    &describe(other),
                ))
            }
        };
    }
    let at = |p: &Param| {
        if values.has(p) {
            *p
        } else {
            video::BUFFER_TARGET
        }
    };
    if v.buffer_target < v.segment {
        let p = at(&video::BUFFER_TARGET);
        return Err(conflict(
            &values.path_of(&p),
            format!(
                "buffer_target ({}) is below one segment ({}); the player holds at least one",
                v.buffer_target, v.segment
            ),
            &p,
        ));
    }
    if v.startup > v.buffer_target {
        let p = at(&video::STARTUP);
        return Err(conflict(
            &values.path_of(&p),
            format!(
                "startup ({}) is above buffer_target ({}); playback could never start",
                v.startup, v.buffer_target
            ),
            &p,
        ));
    }
    Ok(())
}

/// `web_browse`'s `connections`: `"multiplexed"` (the default) or a count
/// of HTTP/1.1 connections in `1..=MAX_CONNECTIONS`.
fn browse_connections(values: &Values<'_>) -> Result<Connections, ScenarioError> {
    let Some((_, raw)) = values.raw(&browse::CONNECTIONS) else {
        return Ok(Connections::Multiplexed);
    };
    let path = values.path_of(&browse::CONNECTIONS);
    let max = browse::MAX_CONNECTIONS;
    // Browsers' HTTP/1.1 limit per host: the likely intent of a wrong value.
    let error = |problem, message: String| {
        ScenarioError::invalid(&path, problem, message, Some("6".into()))
    };
    match raw {
        Value::String(s) if s == "multiplexed" => Ok(Connections::Multiplexed),
        Value::String(s) => Err(error(
            Problem::BadValue,
            format!(
                "{s:?} is neither \"multiplexed\" (one HTTP/2-style connection) nor a count of HTTP/1.1 connections (1 to {max})"
            ),
        )),
        Value::Integer(k) => match u32::try_from(*k) {
            Ok(k) if (1..=max).contains(&k) => Ok(Connections::Http1(k)),
            _ => Err(error(
                Problem::BadValue,
                format!("{k} is out of range; must be between 1 and {max}"),
            )),
        },
        other => Err(error(
            Problem::WrongType,
            format!(
                "expected \"multiplexed\" or a count of HTTP/1.1 connections, found {}",
                describe(other)
            ),
        )),
    }
}

/// `download`: a byte or more per connection; with `every` and `stop`, each
/// download stops before the next starts (on/off).
fn download(
    d: &l4slab_app::download::DownloadConfig,
    values: &Values<'_>,
) -> Result<(), ScenarioError> {
    use l4slab_app::download::{CONNECTIONS, SIZE, STOP};
    if d.size < u64::from(d.connections) {
        let p = if values.has(&CONNECTIONS) {
            CONNECTIONS
        } else {
            SIZE
        };
        return Err(conflict(
            &values.path_of(&p),
            format!(
                "{} B over {} connections leaves a connection nothing to carry; give size at least one byte per connection",
                d.size, d.connections
            ),
            &p,
        ));
    }
    if !d.every.is_zero() && d.stop > d.every {
        return Err(conflict(
            &values.path_of(&STOP),
            format!(
                "stop ({}) is longer than every ({}): the next download would start before this one stops; give stop <= every (on for stop, off until the next start)",
                values::show_dur(d.stop),
                values::show_dur(d.every)
            ),
            &STOP,
        ));
    }
    Ok(())
}
