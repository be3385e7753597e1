//! `download`: a large transfer split over parallel connections, as game
//! consoles, OS updaters and download managers fetch (the issue's "eight or
//! more"; SteamRE DepotDownloader, an open client of Steam's content
//! servers, fetches `-max-downloads` chunks at once, default 8). With
//! `direction = "up"` it is a bulk upload (a photo backup).
//!
//! The scenario expands one `download` flow into `connections` flows
//! (`<name>.0` .. `<name>.<K-1>`, the names `count` gives), each a part of
//! `size / connections` bytes (the first `size % connections` parts one byte
//! more) on a connection of its own; with `every` the download starts again
//! every `every`, each start expanded the same way (`<name>.<r>.<j>`). Each
//! part is a [`Part`]: it writes its bytes as fast as the socket takes them
//! (as `file` does) and closes, or stops writing and closes at `stop` after
//! its download's start (a cancelled or paused download: what the socket
//! already holds still goes). A part's completion is its last byte
//! delivered; the download is complete when all its parts are, and its
//! summary ([`summarize`]: completion time, goodput, bytes) is written under
//! `downloads` in `summary.json`.
//!
//! Not modelled: chunk requests (a part is one response, as a ranged GET
//! would fetch it), work stealing between connections (a real updater hands
//! a finished connection the next chunk, so its connections end together;
//! here a part that ends early leaves its share unfetched by others), CDN
//! server choice, DNS and TLS.

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::stats::round6;
use l4slab_core::{Dur, Time};

use crate::registry::{AppKind, BuildContext};
use crate::{FlowApp, FlowIo, Role};

/// `size`: the whole download (required).
pub const SIZE: Param = Param::new(
    "size",
    Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    ParamValue::Unset {
        example: r#""2GB""#,
    },
    "required",
    "bytes of the whole download, split evenly over the connections",
);

/// Most connections one download may open.
pub const MAX_CONNECTIONS: i64 = 256;

pub const CONNECTIONS: Param = Param::new(
    "connections",
    Kind::Int {
        min: 1,
        max: MAX_CONNECTIONS,
    },
    ParamValue::Int(8),
    "SteamRE DepotDownloader `-max-downloads` (chunks fetched at once): default 8",
    "parallel connections, each carrying `size / connections` bytes",
);

pub const EVERY: Param = Param::new(
    "every",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::ZERO),
    "a choice: off",
    "start the download again every this long after the flow's start, on new connections, while the run lasts (`\"0s\"`: once)",
);

pub const STOP: Param = Param::new(
    "stop",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::ZERO),
    "a choice: off",
    "stop each download this long after it starts if it has not finished (with `every`: on for `stop`, off until the next start; `\"0s\"`: never)",
);

/// `app = { kind = "download", ... }` (docs/apps.md#download).
pub const PARAMS: &[Param] = &[SIZE, CONNECTIONS, EVERY, STOP];

/// `app = { kind = "download", size = "2GB", connections = 8 }` as a
/// scenario resolves it ([`PARAMS`]); on an expanded flow, `part` says
/// which part of which download it carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DownloadConfig {
    /// [`SIZE`] (0 until the scenario sets it: it is required).
    pub size: u64,
    pub connections: u32,
    pub every: Dur,
    pub stop: Dur,
    /// Set on each flow the scenario made of a download.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<DownloadPart>,
}

impl Default for DownloadConfig {
    /// The declared defaults; `size` 0 (required: the scenario sets it).
    fn default() -> Self {
        use l4slab_core::param::FromParam;
        DownloadConfig {
            size: 0,
            connections: FromParam::from_param(CONNECTIONS.default),
            every: EVERY.default.dur(),
            stop: STOP.default.dur(),
            part: None,
        }
    }
}

l4slab_core::param_fields!(DownloadConfig {
    size = SIZE,
    connections = CONNECTIONS,
    every = EVERY,
    stop = STOP,
});

/// One connection's share of a download.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DownloadPart {
    /// The download's name (the flow's, or `<flow>.<r>` for the `r`th start
    /// of an `every` schedule): its key under `downloads` in `summary.json`.
    pub download: String,
    /// This part's index, `0 .. connections`.
    pub index: u32,
    /// Bytes this connection carries.
    pub bytes: u64,
}

impl DownloadConfig {
    /// The bytes of part `j`: `size / connections`, one more for the first
    /// `size % connections` parts (so the parts add up to `size`).
    pub fn part_bytes(&self, j: u32) -> u64 {
        let k = u64::from(self.connections.max(1));
        self.size / k + u64::from(u64::from(j) < self.size % k)
    }
}

impl AppKind for DownloadConfig {
    const NAME: &'static str = "download";
    const WHAT: &'static str = "a file over parallel connections (or an upload)";
    const EXAMPLE: &'static str = r#"app = { kind = "download", size = "2GB", connections = 8 }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        let (download, bytes) = match &self.part {
            Some(p) => (p.download.clone(), p.bytes),
            // Not expanded by a scenario: the whole download on one connection.
            None => (cx.flow.to_string(), self.size),
        };
        Box::new(Part {
            sender: cx.sender,
            download,
            bytes,
            stop_at: (!self.stop.is_zero()).then(|| cx.start + self.stop),
            written: 0,
            closed: false,
            stopped: false,
            received: 0,
            completed: None,
        })
    }
}

/// One part of a download on its connection: the sending side writes
/// `bytes` and closes (or stops at `stop_at`), the receiving side counts.
#[derive(Debug)]
pub struct Part {
    sender: Role,
    download: String,
    bytes: u64,
    stop_at: Option<Time>,
    written: u64,
    /// The FIN was asked for (all written, or stopped).
    closed: bool,
    stopped: bool,
    received: u64,
    completed: Option<Time>,
}

impl Part {
    /// Write until done or the socket takes nothing more (as `file` does).
    fn fill(&mut self, io: &mut dyn FlowIo) {
        while !self.closed {
            let n = io.write(self.bytes - self.written);
            self.written += n;
            if self.written == self.bytes {
                self.closed = true;
                io.finish();
            } else if n == 0 {
                break;
            }
        }
    }
}

impl FlowApp for Part {
    fn kind(&self) -> &'static str {
        "download"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side != self.sender {
            return;
        }
        match self.stop_at {
            Some(at) if at <= now => self.on_timer(now, side, io),
            Some(at) => {
                io.wake_at(at);
                self.fill(io);
            }
            None => self.fill(io),
        }
    }
    fn on_writable(&mut self, _now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.sender {
            self.fill(io);
        }
    }
    fn on_timer(&mut self, _now: Time, side: Role, io: &mut dyn FlowIo) {
        // The user (or the schedule) stops the download: write no more.
        if side == self.sender && !self.closed {
            self.closed = true;
            self.stopped = true;
            io.finish();
        }
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, _io: &mut dyn FlowIo) {
        if side != self.sender {
            self.received += bytes;
            if self.received >= self.bytes && self.completed.is_none() {
                self.completed = Some(now);
            }
        }
    }
    fn completed_at(&self) -> Option<Time> {
        self.completed
    }
    fn report(&self, _end: Time) -> Value {
        json!({
            "download": self.download,
            "part_bytes": self.bytes,
            "stopped": self.stopped,
        })
    }
}

/// One download's figures from its parts' flow entries in `summary.json`
/// (`bytes_delivered`, `completion_s` from the part's start, which is the
/// download's): complete when every part is, its completion the last
/// part's, its goodput `size × 8 / completion`.
pub fn summarize(size: u64, start: Time, parts: &[(&str, &Value)]) -> Value {
    let delivered: u64 = parts
        .iter()
        .map(|(_, e)| e["bytes_delivered"].as_u64().unwrap_or(0))
        .sum();
    let completions: Vec<Option<f64>> = parts
        .iter()
        .map(|(_, e)| e["completion_s"].as_f64())
        .collect();
    let completion = completions
        .iter()
        .try_fold(0.0f64, |m, c| c.map(|c| m.max(c)));
    let stopped = parts
        .iter()
        .filter(|(_, e)| e["app_metrics"]["stopped"].as_bool() == Some(true))
        .count();
    json!({
        "connections": parts.len(),
        "flows": parts.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "size_bytes": size,
        "start_s": round6(start.saturating_since(Time::ZERO).as_secs_f64()),
        "bytes_delivered": delivered,
        "parts_completed": completions.iter().filter(|c| c.is_some()).count(),
        "parts_stopped": stopped,
        "complete": completion.is_some(),
        "completion_s": completion.map(round6),
        "goodput_bps": completion
            .filter(|c| *c > 0.0)
            .map(|c| round6(size as f64 * 8.0 / c)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    #[test]
    fn parts_add_up_to_the_size() {
        let cfg = DownloadConfig {
            size: 10,
            connections: 4,
            ..DownloadConfig::default()
        };
        // 10 = 3 + 3 + 2 + 2
        let parts: Vec<u64> = (0..4).map(|j| cfg.part_bytes(j)).collect();
        assert_eq!(parts, [3, 3, 2, 2]);
        assert_eq!(DownloadConfig::default().connections, 8);
    }

    fn part(stop_at: Option<Time>) -> Part {
        Part {
            sender: Role::Server,
            download: "game".into(),
            bytes: 1000,
            stop_at,
            written: 0,
            closed: false,
            stopped: false,
            received: 0,
            completed: None,
        }
    }

    #[test]
    fn a_part_writes_its_bytes_closes_and_completes_on_its_last_byte() {
        let (mut p, mut s) = (part(None), Script::new());
        s.sock(Role::Server).room = 600;
        s.connected(&mut p, ms(0), Role::Server);
        assert_eq!((s.written(Role::Server), p.closed), (600, false));
        s.writable(&mut p, ms(1), Role::Server, 10_000);
        assert_eq!(s.written(Role::Server), 1000);
        assert!(p.closed && s.sock(Role::Server).finished);
        s.deliver(&mut p, ms(5), Role::Client, 999);
        assert_eq!(p.completed_at(), None);
        s.deliver(&mut p, ms(7), Role::Client, 1);
        assert_eq!(p.completed_at(), Some(ms(7)));
        assert_eq!(p.report(ms(9))["stopped"], false);
    }

    #[test]
    fn a_stopped_part_writes_no_more_and_never_completes() {
        let (mut p, mut s) = (part(Some(ms(50))), Script::new());
        s.sock(Role::Server).room = 400;
        s.connected(&mut p, ms(0), Role::Server);
        assert_eq!(s.wake(Role::Server), Some(ms(50)));
        s.timer(&mut p, ms(50), Role::Server);
        assert!(s.sock(Role::Server).finished);
        s.writable(&mut p, ms(51), Role::Server, 10_000);
        assert_eq!(s.written(Role::Server), 400);
        s.deliver(&mut p, ms(60), Role::Client, 400);
        assert_eq!(p.completed_at(), None);
        assert_eq!(p.report(ms(90))["stopped"], true);
    }

    #[test]
    fn a_download_completes_with_its_last_part() {
        let e = |done: Option<f64>, bytes: u64| json!({ "bytes_delivered": bytes, "completion_s": done, "app_metrics": { "stopped": false } });
        let (a, b) = (e(Some(2.0), 500), e(Some(4.0), 500));
        let s = summarize(1000, ms(1000), &[("g.0", &a), ("g.1", &b)]);
        assert_eq!(s["complete"], true);
        assert_eq!(s["completion_s"], 4.0);
        // 1000 B × 8 / 4 s
        assert_eq!(s["goodput_bps"], 2000.0);
        assert_eq!(s["start_s"], 1.0);
        let c = e(None, 100);
        let s = summarize(1000, ms(0), &[("g.0", &a), ("g.1", &c)]);
        assert_eq!(
            (s["complete"].clone(), s["bytes_delivered"].clone()),
            (json!(false), json!(600))
        );
        assert_eq!(s["goodput_bps"], Value::Null);
    }
}
