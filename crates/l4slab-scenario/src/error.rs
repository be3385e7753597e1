//! [`ScenarioError`]: every way a scenario file can be wrong, each naming
//! where (a key path such as `bottleneck.down.rate`, a `--set` argument, or a
//! line and column for TOML syntax) and, where one helps, a valid example.
//!
//! Display forms (DESIGN.md §7):
//!
//! ```text
//! bottleneck.down.rate: "fast" is not a rate; write e.g. "20Mbit"
//! duration: missing; write e.g. duration = "30s"
//! bottleneck.rtt: unknown key; valid keys here: rate, delay, buffer, qdisc, loss, ecn_rewrite, down, up
//! --set bottleneck.rate: expected key.path=value; write e.g. --set bottleneck.rate=50Mbit
//! reno.toml:3:9: TOML syntax error: invalid string
//! ```

use thiserror::Error;

/// What kind of mistake an [`ScenarioError::Invalid`] reports, for callers
/// that react to the kind rather than print the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A key that the schema does not have at this place.
    UnknownKey,
    /// A required key is absent.
    Missing,
    /// A value of the wrong TOML type (a table where a string belongs, ...).
    WrongType,
    /// A value of the right type that does not parse or is out of range.
    BadValue,
    /// A name (qdisc, loss model, app, congestion control, host) that is not known.
    UnknownName,
    /// A known name whose implementation does not exist yet.
    NotImplemented,
    /// A file format version this build cannot read.
    Unsupported,
    /// Values that are fine alone but not together (duplicate names, a start
    /// after the end, a host on the wrong side, an ambiguous default).
    Conflict,
    /// A valid scenario whose run would cost more than the limits allow
    /// (too many flows, samples or trace rows; [`crate::cost`]).
    TooLarge,
}

/// A scenario that cannot be read, parsed, or validated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{source_name}: cannot read: {message}")]
    Io {
        source_name: String,
        message: String,
    },
    /// The text is not valid TOML. `line` and `column` are 1-based.
    #[error("{source_name}:{line}:{column}: TOML syntax error: {message}")]
    Syntax {
        source_name: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A `--set key.path=value` argument that cannot be applied.
    #[error("--set {text}: {message}")]
    Override { text: String, message: String },
    /// A key or value that violates the schema or a semantic rule.
    #[error("{path}: {message}{}", example_suffix(.example))]
    Invalid {
        /// Key path as written in the file: `flows[1].app.size`, `hosts.laptop.side`.
        path: String,
        problem: Problem,
        message: String,
        /// A valid value or line to copy, without the `write e.g.` prefix.
        example: Option<String>,
    },
}

fn example_suffix(example: &Option<String>) -> String {
    match example {
        Some(e) => format!("; write e.g. {e}"),
        None => String::new(),
    }
}

impl ScenarioError {
    /// The key path of an [`ScenarioError::Invalid`] error.
    pub fn path(&self) -> Option<&str> {
        match self {
            ScenarioError::Invalid { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The kind of an [`ScenarioError::Invalid`] error.
    pub fn problem(&self) -> Option<Problem> {
        match self {
            ScenarioError::Invalid { problem, .. } => Some(*problem),
            _ => None,
        }
    }

    pub(crate) fn invalid(
        path: &str,
        problem: Problem,
        message: impl Into<String>,
        example: Option<String>,
    ) -> Self {
        ScenarioError::Invalid {
            path: if path.is_empty() {
                "(top level)".into()
            } else {
                path.into()
            },
            problem,
            message: message.into(),
            example,
        }
    }

    /// This error with `example` as its example (a key whose valid values
    /// depend on more than its path, e.g. an app's `size`).
    pub(crate) fn with_example(self, example: &str) -> Self {
        self.example_if(example, |_, had| had)
    }

    /// This error with `example` as its example where `when(problem, it
    /// had one)` holds; other errors unchanged.
    pub(crate) fn example_if(self, example: &str, when: impl Fn(Problem, bool) -> bool) -> Self {
        match self {
            ScenarioError::Invalid {
                path,
                problem,
                message,
                example: old,
            } if when(problem, old.is_some()) => ScenarioError::Invalid {
                path,
                problem,
                message,
                example: Some(example.to_string()),
            },
            other => other,
        }
    }

    /// A bad value at `path`, with the example value for that key.
    pub(crate) fn bad_value(path: &str, message: impl Into<String>) -> Self {
        Self::invalid(path, Problem::BadValue, message, example_value(path))
    }

    /// A conflict at `path`, with the example value for that key.
    pub(crate) fn conflict(path: &str, message: impl Into<String>) -> Self {
        Self::invalid(path, Problem::Conflict, message, example_value(path))
    }

    /// A wrong TOML type at `path`; `expected` is a phrase ("a table").
    pub(crate) fn wrong_type(path: &str, expected: &str, found: &str) -> Self {
        Self::invalid(
            path,
            Problem::WrongType,
            format!("expected {expected}, found {found}"),
            example_value(path),
        )
    }

    /// A required key that is absent: `duration: missing; write e.g. duration = "30s"`.
    pub(crate) fn missing(path: &str) -> Self {
        Self::invalid(path, Problem::Missing, "missing", example_line(path))
    }

    /// A required key that is absent, with a hand-written example.
    pub(crate) fn missing_with(path: &str, example: impl Into<String>) -> Self {
        Self::invalid(path, Problem::Missing, "missing", Some(example.into()))
    }

    /// `kind: unknown qdisc 'x'; choose one of: fifo`.
    pub(crate) fn unknown_name(path: &str, what: &str, name: &str, choices: &[&str]) -> Self {
        Self::invalid(
            path,
            Problem::UnknownName,
            format!(
                "unknown {what} '{name}'; choose one of: {}",
                choices.join(", ")
            ),
            None,
        )
    }

    /// Map a serde error message, raised at `path`, to a [`ScenarioError`].
    ///
    /// The raw structs make every field optional and take unit values as
    /// `toml::Value`, so serde itself only reports unknown keys and wrong
    /// TOML types; anything else is passed through with the path.
    pub(crate) fn from_serde(path: &str, msg: &str) -> Self {
        if let Some(rest) = msg.strip_prefix("unknown field `") {
            let after = rest.split_once('`').map(|(_, a)| a).unwrap_or("");
            let valid = backticked(after);
            let message = if valid.is_empty() {
                "unknown key; no keys are valid here".to_string()
            } else {
                format!("unknown key; valid keys here: {}", valid.join(", "))
            };
            return Self::invalid(path, Problem::UnknownKey, message, None);
        }
        if let Some(rest) = msg.strip_prefix("invalid type: ") {
            if let Some((found, expected)) = rest.rsplit_once(", expected ") {
                return Self::wrong_type(
                    path,
                    &friendly_expected(expected),
                    &friendly_found(found),
                );
            }
        }
        Self::invalid(
            path,
            Problem::BadValue,
            msg.replace('\n', "; "),
            example_value(path),
        )
    }
}

/// The names between backticks in `text`: "expected `a`, `b` or `c`" -> [a, b, c].
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// serde's "expected" phrases in words a scenario author uses.
fn friendly_expected(expected: &str) -> String {
    match expected {
        "i64" | "u64" | "u32" | "i32" => "an integer".into(),
        "a sequence" => "an array".into(),
        "a map" => "a table".into(),
        "a boolean" => "true or false".into(),
        other => other.into(),
    }
}

/// serde's "unexpected" phrases in the form [`crate::values`] uses:
/// "integer `5`" -> "an integer (5)", "map" -> "a table".
fn friendly_found(found: &str) -> String {
    let value = |rest: &str| rest.trim_matches('`').to_string();
    if let Some(rest) = found.strip_prefix("integer ") {
        format!("an integer ({})", value(rest))
    } else if let Some(rest) = found.strip_prefix("floating point ") {
        format!("a float ({})", value(rest))
    } else if let Some(rest) = found.strip_prefix("boolean ") {
        format!("a boolean ({})", value(rest))
    } else if let Some(rest) = found.strip_prefix("string ") {
        format!("a string ({rest})")
    } else {
        match found {
            "map" => "a table".into(),
            "sequence" => "an array".into(),
            other => other.replace('`', ""),
        }
    }
}

/// The last key of a path and its parent key, skipping array indices:
/// `flows[0].app.kind` -> (`app`, `kind`).
fn last_keys(path: &str) -> (&str, &str) {
    let mut keys = path.rsplit('.').map(|k| k.split('[').next().unwrap_or(k));
    let key = keys.next().unwrap_or("");
    let parent = keys.next().unwrap_or("");
    (parent, key)
}

/// A valid value for the key at `path`, as TOML: `"20Mbit"` for a rate.
pub(crate) fn example_value(path: &str) -> Option<String> {
    let (parent, key) = last_keys(path);
    // `links` is the cell's (tables) at `wifi.links`, a station's (indices) elsewhere.
    if path == "wifi.links" {
        return Some(
            r#"[{ standard = "be", band = "5GHz" }, { standard = "be", band = "6GHz", width = "160MHz" }]"#
                .into(),
        );
    }
    // One web object (`objects[0]`), not the array `objects`.
    if path.ends_with(']') && key == "objects" {
        return Some(r#"{ size = "20KB", at = "5s" }"#.into());
    }
    if path.starts_with("wifi.links[") && key == "links" {
        return Some(r#"{ standard = "be", band = "6GHz", width = "160MHz" }"#.into());
    }
    // A link's keys (`[bottleneck]`, its `down`/`up`, a host's `access`) take
    // theirs from their declarations (`l4slab_link::config::PARAMS`).
    if matches!(parent, "bottleneck" | "down" | "up" | "access") {
        if let Some(p) = l4slab_link::config::PARAMS.iter().find(|p| p.name == key) {
            return Some(p.example());
        }
    }
    // An app's keys take their examples from their declarations
    // (`l4slab_app`'s `PARAMS`, read by `crate::param`), as do the Wi-Fi
    // model's (`l4slab_wifi`'s `phy::PARAMS`, `config::STATION_PARAMS`,
    // `config::SCAN_PARAMS`) and the loss models' (`l4slab_link::loss::MODELS`);
    // a web object's are here.
    let v = match (parent, key) {
        ("", "wifi") => r#"[wifi] with standard = "ax", band = "5GHz""#,
        (_, "wifi") => "[hosts.laptop.wifi] with snr_db = 25",
        ("wifi", "ap") => r#"[wifi.ap] with qdisc = "fifo", buffer = "1000pkt""#,
        ("wifi", "stations") => "[wifi.stations] with snr_db = 40",
        (_, "edca") => "{ be = { cw_min = 15, cw_max = 1023 } }",
        ("edca", "vo" | "vi" | "be" | "bk") => {
            r#"{ aifsn = 3, cw_min = 15, cw_max = 1023, txop = "0ms" }"#
        }
        (_, "links") if path.ends_with(']') => "0",
        (_, "links") => "[0, 1]",
        (_, "scan") => r#"{ every = "30s", duration = "100ms" }"#,
        (_, "wifi_ac") => r#""vi""#,
        ("ap" | "stations", "buffer") => r#""1000pkt""#,
        ("qdisc", "kind") => r#""fifo""#,
        ("loss", "kind") => r#""bernoulli""#,
        ("app", "kind") => r#""file""#,
        ("app", "objects") => r#"[{ size = "20KB", at = "5s" }]"#,
        ("objects", "connection") => r#""new""#,
        ("objects", "size") => r#""20KB""#,
        ("objects", "at") => r#""5s""#,
        ("cc", "kind") => r#""prague""#,
        (_, "format") => "1",
        ("paths", "name") => r#""lte""#,
        (_, "name") => r#""download""#,
        (_, "description") => r#""one Reno download""#,
        (_, "duration") => r#""30s""#,
        (_, "warmup") => r#""5s""#,
        (_, "seed") => "1",
        (_, "sample_interval") => r#""100ms""#,
        (_, "packet_trace") => "true",
        (_, "pcap") => "true",
        (_, "rate") => r#""20Mbit""#,
        (_, "qdisc") => r#""fifo""#,
        (_, "head_drop") => "true",
        (_, "side") => r#""client""#,
        (_, "access_delay") => r#""2ms""#,
        (_, "racing") => r#""250ms""#,
        (_, "end") => r#""5s""#,
        (_, "client") => r#""client""#,
        (_, "server") => r#""server""#,
        (_, "direction") => r#""down""#,
        (_, "cc") => r#""reno""#,
        (_, "start") => r#""0s""#,
        (_, "stagger") => r#""100ms""#,
        (_, "count") => "4",
        (_, "app") => r#""bulk""#,
        (_, "size") => r#""10MB""#,
        (_, "mss") => "1448",
        (_, "initial_window") => "10",
        (_, "delayed_ack") => "true",
        (_, "delayed_ack_timeout") => r#""40ms""#,
        (_, "min_rto") => r#""200ms""#,
        (_, "rto_formula") => r#""rfc6298""#,
        (_, "pacing") => "true",
        (_, "tlp" | "frto" | "undo" | "dsack") => "false",
        (_, "fastopen") => "true",
        (_, "protocol") => r#""quic""#,
        (_, "send_buffer") => r#""4MiB""#,
        (_, "notsent_lowat") => r#""128KiB""#,
        (_, "receive_buffer") => r#""6MiB""#,
        ("", "bottleneck") => {
            r#"[bottleneck] with rate = "20Mbit", delay = "10ms", buffer = "100pkt""#
        }
        ("bottleneck", "down" | "up") => r#"[bottleneck.down] with rate = "50Mbit""#,
        ("access", "down" | "up") => r#"[hosts.laptop.access.up] with rate = "10Mbit""#,
        (_, "access") => r#"[hosts.laptop.access] with rate = "50Mbit", buffer = "100pkt""#,
        ("", "hosts") => r#"[hosts.laptop] with side = "client""#,
        ("hosts", _) => r#"[hosts.laptop] with side = "client", access_delay = "2ms""#,
        ("", "flows") => r#"[[flows]] with cc = "reno""#,
        (_, "transport") => "[flows.transport] with mss = 1448",
        _ => return None,
    };
    Some(v.to_string())
}

/// A valid line for the key at `path`: `duration = "30s"`.
pub(crate) fn example_line(path: &str) -> Option<String> {
    let (_, key) = last_keys(path);
    let value = example_value(path)?;
    if value.starts_with('[') {
        Some(value)
    } else {
        Some(format!("{key} = {value}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_the_design() {
        let e = ScenarioError::bad_value("bottleneck.down.rate", r#""fast" is not a rate"#);
        assert_eq!(
            e.to_string(),
            r#"bottleneck.down.rate: "fast" is not a rate; write e.g. "20Mbit""#
        );
        assert_eq!(
            ScenarioError::missing("duration").to_string(),
            r#"duration: missing; write e.g. duration = "30s""#
        );
    }

    #[test]
    fn serde_unknown_field_lists_valid_keys() {
        let e = ScenarioError::from_serde(
            "bottleneck.rtt",
            "unknown field `rtt`, expected one of `rate`, `delay`, `down`",
        );
        assert_eq!(
            e.to_string(),
            "bottleneck.rtt: unknown key; valid keys here: rate, delay, down"
        );
        let e = ScenarioError::from_serde("a.b", "unknown field `b`, expected `x` or `y`");
        assert_eq!(e.to_string(), "a.b: unknown key; valid keys here: x, y");
        let e = ScenarioError::from_serde("a.b", "unknown field `b`, there are no fields");
        assert_eq!(e.to_string(), "a.b: unknown key; no keys are valid here");
    }

    #[test]
    fn serde_invalid_type_is_reworded() {
        let e = ScenarioError::from_serde("seed", "invalid type: string \"a\", expected i64");
        assert_eq!(
            e.to_string(),
            "seed: expected an integer, found a string (\"a\"); write e.g. 1"
        );
        let e =
            ScenarioError::from_serde("bottleneck", "invalid type: integer `3`, expected a table");
        assert_eq!(
            e.to_string(),
            r#"bottleneck: expected a table, found an integer (3); write e.g. [bottleneck] with rate = "20Mbit", delay = "10ms", buffer = "100pkt""#
        );
    }

    #[test]
    fn examples_depend_on_the_parent_key() {
        assert_eq!(example_value("bottleneck.qdisc.kind").unwrap(), r#""fifo""#);
        assert_eq!(example_value("flows[2].app.kind").unwrap(), r#""file""#);
        assert_eq!(
            example_line("flows[0].app.size").unwrap(),
            r#"size = "10MB""#
        );
    }
}
