//! `[[households]]`: named mixes of everyday traffic a scenario drops in,
//! each expanded into ordinary `[[flows]]` entries (resolved with them in
//! [`crate::flows`], so the resolved scenario lists every flow a household
//! brought, and every check applies to them).
//!
//! ```toml
//! [[households]]
//! preset = "evening"      # or "work_from_home"
//! name = "home"           # flow names home.video, home.browse, ... (default household<i>)
//! client = "laptop"       # hosts, as a flow's (optional when there is one per side)
//! start = "2s"            # every flow of the mix starts this much later
//! cc = "cubic"            # every flow's congestion control (default: the flows' default)
//! count = 50              # 50 copies: home.0.video .. home.49.photos
//! ```
//!
//! Copies differ only in their flows' names, and every random stream of a
//! flow (a browser's pages, a QUIC connection's IDs) is derived from the
//! run's seed and the flow's name, so each copy draws its own, the same in
//! every run.
//!
//! A preset is a list of flow tables written as a scenario would write
//! them ([`PRESETS`]); what each holds and where every number comes from
//! is in docs/households.md.

use serde::Deserialize;
use toml::Value;

use l4slab_core::Dur;

use crate::error::ScenarioError;
use crate::model::Entry;
use crate::raw::RawFlow;
use crate::resolve::check_name;
use crate::values::{self, deserialize_at, join};

/// One `[[households]]` entry as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawHousehold {
    pub preset: Option<String>,
    pub name: Option<String>,
    pub client: Option<String>,
    pub server: Option<String>,
    pub start: Option<Value>,
    pub cc: Option<Value>,
    pub count: Option<i64>,
}

/// Upper bound on a household's `count`, to catch typos before they
/// allocate (the cost limits, [`crate::cost`], refuse far fewer flows).
pub const MAX_COUNT: i64 = 10_000;

/// A household preset: its name and its flows, each `(role, flow table)`;
/// the flow is named `<household>.<role>`.
pub struct Preset {
    pub name: &'static str,
    pub flows: &'static [(&'static str, &'static str)],
}

/// The presets (docs/households.md gives each number's source).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "evening",
        flows: &[
            // Apple HLS ladder up to 1080p 7.8 Mbit/s, 6 s segments (video_stream's defaults).
            ("video", r#"app = { kind = "video_stream" }"#),
            // The 3GPP2 HTTP traffic model's pages and reading times (web_browse's defaults).
            ("browse", r#"app = { kind = "web_browse" }"#),
            // A game download over 8 connections (DepotDownloader's default);
            // 20 GB: more than a run moves (1 Gbit/s for 160 s).
            (
                "game",
                r#"app = { kind = "download", size = "20GB", connections = 8 }"#,
            ),
            // A photo backup going up: a chosen 500 MB (100 photos of 5 MB), one connection.
            (
                "photos",
                r#"direction = "up"
app = { kind = "download", size = "500MB", connections = 1 }"#,
            ),
        ],
    },
    Preset {
        name: "work_from_home",
        flows: &[
            // A two-way video call (video_call's defaults).
            ("call", r#"app = { kind = "video_call" }"#),
            ("browse", r#"app = { kind = "web_browse" }"#),
            // A work file to a cloud drive: a chosen 100 MB, one connection.
            (
                "upload",
                r#"direction = "up"
app = { kind = "download", size = "100MB", connections = 1 }"#,
            ),
        ],
    },
];

/// The preset names.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Each household's flows as `[[flows]]` entries, with the entry their
/// errors name (`households[<i>]`).
pub(crate) fn expand(raw: Option<&[RawHousehold]>) -> Result<Vec<(Entry, RawFlow)>, ScenarioError> {
    let mut out = Vec::new();
    for (i, h) in raw.unwrap_or_default().iter().enumerate() {
        let count = match h.count {
            Some(c) => values::int_in(c, &format!("households[{i}].count"), 1, MAX_COUNT)?,
            None => 1,
        };
        let entry = Entry::Household {
            index: i,
            copies: count,
        };
        let path = entry.to_string();
        let preset = match &h.preset {
            None => {
                return Err(ScenarioError::missing_with(
                    &join(&path, "preset"),
                    r#"preset = "evening""#,
                ))
            }
            Some(p) => PRESETS.iter().find(|x| x.name == p).ok_or_else(|| {
                ScenarioError::unknown_name(
                    &join(&path, "preset"),
                    "household preset",
                    p,
                    &preset_names(),
                )
            })?,
        };
        let name = match &h.name {
            Some(n) => {
                check_name(n, &join(&path, "name"))?;
                n.clone()
            }
            None => format!("household{i}"),
        };
        let offset = match &h.start {
            Some(v) => values::duration(v, &join(&path, "start"))?,
            None => Dur::ZERO,
        };
        for copy in 0..count {
            // As a flow's `count`: one copy keeps the names <name>.<role>,
            // several are <name>.<k>.<role>.
            let prefix = if count > 1 {
                format!("{name}.{copy}")
            } else {
                name.clone()
            };
            for (role, text) in preset.flows {
                let table: toml::Table = toml::from_str(text).expect("a preset's flow is TOML");
                let mut f: RawFlow =
                    deserialize_at(Value::Table(table), &path).expect("a preset's flow reads");
                f.name = Some(format!("{prefix}.{role}"));
                f.client.clone_from(&h.client);
                f.server.clone_from(&h.server);
                if h.cc.is_some() {
                    f.cc.clone_from(&h.cc);
                }
                let own = match &f.start {
                    Some(v) => values::duration(v, &path).expect("a preset's start is a duration"),
                    None => Dur::ZERO,
                };
                if h.start.is_some() || f.start.is_some() {
                    f.start = Some(Value::String(values::show_dur(own + offset)));
                }
                out.push((entry, f));
            }
        }
    }
    Ok(out)
}
