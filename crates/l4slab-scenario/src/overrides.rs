//! `--set key.path=value`: edit the parsed TOML tree before it is checked.
//!
//! * The key path is dot-separated bare keys (letters, digits, `_`, `-`),
//!   each optionally followed by array indices: `bottleneck.down.rate`,
//!   `flows[0].app.size`, `hosts.laptop.side`.
//! * The value is read as a TOML value if it is one (`7`, `0.01`, `true`,
//!   `"quoted"`, `{ kind = "fifo", head_drop = true }`, `[1, 2]`), and taken
//!   as a plain string otherwise (`50Mbit`, `2%`, `reno`). TOML date-times
//!   stay strings.
//! * Missing intermediate tables are created. An index may point one past
//!   the end of an array to append a new table (`flows[1].cc=reno` on a
//!   one-flow file adds a second flow with all defaults).
//! * Everything else, including unknown keys, is checked afterwards exactly
//!   as if it had been written in the file.

use toml::{Table, Value};

use crate::error::ScenarioError;
use crate::values::describe;

/// One step of a key path: a table key, then zero or more array indices.
#[derive(Debug, PartialEq, Eq)]
struct Segment {
    key: String,
    indices: Vec<usize>,
}

/// Apply one `key.path=value` override to `root`.
pub fn apply(root: &mut Table, text: &str) -> Result<(), ScenarioError> {
    let err = |message: String| ScenarioError::Override {
        text: text.to_string(),
        message,
    };
    let Some((key, value)) = text.split_once('=') else {
        return Err(err(
            "expected key.path=value; write e.g. --set bottleneck.rate=50Mbit".into(),
        ));
    };
    let segments = parse_path(key.trim()).map_err(err)?;
    let value = parse_value(value.trim());
    set(root, &segments, value).map_err(err)
}

/// Check that `path` is a key path an override can set (`flows[0].cc`);
/// the message says what is wrong with it.
pub(crate) fn check_path(path: &str) -> Result<(), String> {
    parse_path(path).map(drop)
}

/// Parse `flows[0].app.size` into segments.
fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    if path.is_empty() {
        return Err("empty key path; write e.g. --set duration=10s".into());
    }
    path.split('.').map(parse_segment).collect()
}

fn parse_segment(seg: &str) -> Result<Segment, String> {
    let (key, mut rest) = match seg.find('[') {
        Some(i) => (&seg[..i], &seg[i..]),
        None => (seg, ""),
    };
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if key.is_empty() || !key.chars().all(bare) {
        return Err(format!(
            "'{seg}' is not a key; keys are letters, digits, '_' and '-', e.g. flows[0].cc"
        ));
    }
    let mut indices = Vec::new();
    while !rest.is_empty() {
        let close = rest.find(']').filter(|_| rest.starts_with('['));
        let index = close.and_then(|c| rest[1..c].parse::<usize>().ok());
        match (close, index) {
            (Some(c), Some(i)) => {
                indices.push(i);
                rest = &rest[c + 1..];
            }
            _ => {
                return Err(format!(
                    "bad index in '{seg}'; write a number in brackets, e.g. flows[0].cc"
                ))
            }
        }
    }
    Ok(Segment {
        key: key.to_string(),
        indices,
    })
}

/// The override's value: TOML if it parses as a value, else the raw text.
fn parse_value(text: &str) -> Value {
    match toml::from_str::<Table>(&format!("v = {text}")) {
        Ok(mut t) => match t.remove("v") {
            Some(Value::Datetime(_)) | None => Value::String(text.to_string()),
            Some(v) => v,
        },
        Err(_) => Value::String(text.to_string()),
    }
}

/// The path up to and including segment `n`, for messages: `flows[0].app`.
fn shown(segments: &[Segment], n: usize) -> String {
    segments[..=n]
        .iter()
        .map(|s| {
            let idx: String = s.indices.iter().map(|i| format!("[{i}]")).collect();
            format!("{}{idx}", s.key)
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn set(root: &mut Table, segments: &[Segment], value: Value) -> Result<(), String> {
    let last = segments.len() - 1;
    let mut table = root;
    for (n, seg) in segments.iter().enumerate() {
        let is_last = n == last;
        if seg.indices.is_empty() {
            if is_last {
                table.insert(seg.key.clone(), value);
                return Ok(());
            }
            let slot = table
                .entry(seg.key.clone())
                .or_insert_with(|| Value::Table(Table::new()));
            table = as_table(slot, segments, n)?;
            continue;
        }
        let Some(mut slot) = table.get_mut(&seg.key) else {
            return Err(format!(
                "{} does not exist, so it has no element {}",
                seg.key, seg.indices[0]
            ));
        };
        for &i in &seg.indices {
            let Value::Array(arr) = slot else {
                return Err(format!(
                    "{} is {}, not an array",
                    shown(segments, n).split('[').next().unwrap_or(""),
                    describe(slot)
                ));
            };
            let len = arr.len();
            if i > len {
                return Err(format!(
                    "index {i} is out of range: {} has {len} entries (use {len} to append one)",
                    seg.key
                ));
            }
            if i == len {
                arr.push(Value::Table(Table::new()));
            }
            slot = &mut arr[i];
        }
        if is_last {
            *slot = value;
            return Ok(());
        }
        table = as_table(slot, segments, n)?;
    }
    unreachable!("the last segment returns")
}

fn as_table<'v>(
    slot: &'v mut Value,
    segments: &[Segment],
    n: usize,
) -> Result<&'v mut Table, String> {
    match slot {
        Value::Table(t) => Ok(t),
        Value::Array(_) => Err(format!(
            "{} is an array; pick an element, e.g. {}[0]",
            shown(segments, n),
            shown(segments, n)
        )),
        other => Err(format!(
            "{p} is {}, not a table, so it has no key '{}'; set {p} itself \
             (a table is written {{ key = value, ... }})",
            describe(other),
            segments.get(n + 1).map_or("", |s| s.key.as_str()),
            p = shown(segments, n),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn values_are_toml_or_strings() {
        assert_eq!(parse_value("7"), Value::Integer(7));
        assert_eq!(parse_value("0.01"), Value::Float(0.01));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("50Mbit"), Value::String("50Mbit".into()));
        assert_eq!(parse_value("2%"), Value::String("2%".into()));
        assert_eq!(parse_value("\"10s\""), Value::String("10s".into()));
        assert_eq!(
            parse_value("2024-01-01"),
            Value::String("2024-01-01".into())
        );
        let t = parse_value("{ kind = \"fifo\", head_drop = true }");
        assert_eq!(t.get("head_drop"), Some(&Value::Boolean(true)));
    }

    #[test]
    fn paths_parse() {
        assert_eq!(
            parse_path("flows[0].app").unwrap(),
            vec![
                Segment {
                    key: "flows".into(),
                    indices: vec![0]
                },
                Segment {
                    key: "app".into(),
                    indices: vec![]
                },
            ]
        );
        assert!(parse_path("flows[x].cc").is_err());
        assert!(parse_path("flows[0.cc").is_err());
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("").is_err());
    }

    #[test]
    fn sets_nested_values_and_creates_tables() {
        let mut t = table("[bottleneck]\nrate = '20Mbit'\n[[flows]]\ncc = 'reno'\n");
        apply(&mut t, "bottleneck.rate=50Mbit").unwrap();
        apply(&mut t, "bottleneck.down.delay=5ms").unwrap();
        apply(&mut t, "flows[0].app.size=1MB").unwrap();
        apply(&mut t, "seed=7").unwrap();
        apply(&mut t, "flows[1].cc=cubic").unwrap();
        let expect = table(
            "seed = 7\n[bottleneck]\nrate = '50Mbit'\ndown = { delay = '5ms' }\n\
             [[flows]]\ncc = 'reno'\napp = { size = '1MB' }\n[[flows]]\ncc = 'cubic'\n",
        );
        assert_eq!(t, expect);
    }

    #[test]
    fn malformed_overrides_name_the_argument() {
        let mut t = table("bottleneck = { qdisc = 'fifo' }\nflows = [{}]");
        let msg = |t: &mut Table, s: &str| apply(t, s).unwrap_err().to_string();
        assert!(msg(&mut t, "bottleneck.rate")
            .starts_with("--set bottleneck.rate: expected key.path=value"));
        assert!(msg(&mut t, "flows[x].cc=reno").starts_with("--set flows[x].cc=reno: bad index"));
        assert!(msg(&mut t, "flows[5].cc=reno")
            .contains("index 5 is out of range: flows has 1 entries"));
        assert!(msg(&mut t, "hosts[0].side=client").contains("hosts does not exist"));
        assert!(msg(&mut t, "flows.cc=reno")
            .contains("flows is an array; pick an element, e.g. flows[0]"));
        assert!(msg(&mut t, "bottleneck.qdisc.head_drop=true")
            .contains("bottleneck.qdisc is a string (\"fifo\"), not a table"));
        assert!(msg(&mut t, "bottleneck[0].rate=1").contains("bottleneck is a table, not an array"));
    }
}
