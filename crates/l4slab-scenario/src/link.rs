//! `[bottleneck]` -> [`Bottleneck`]: merging the shared keys with the
//! per-direction `down`/`up` overrides, then the qdisc, its buffer, the
//! loss model and the ECN rewrite (`crate::ecn`) of each direction. A
//! host's access link (`crate::access`) is resolved by the same code. The
//! keys, their defaults and docs are declared in `l4slab_link::config`.
//!
//! Each key of a direction comes from `bottleneck.<dir>.<key>` if present,
//! else from `bottleneck.<key>`; errors name the key where the value was
//! actually written. A buffer written as time is converted at *that
//! direction's* rate: bytes = rate x time / 8, rounded down, and at least one
//! 1500-byte packet.

use toml::{Table, Value};

use l4slab_core::param::{Param, ParamValue};
use l4slab_core::Dur;
use l4slab_link::config::{self, BUFFER, DELAY, ECN_REWRITE, LOSS, QDISC, RATE};
use l4slab_link::{loss, EcnRewrite};

use crate::error::ScenarioError;
use crate::model::{Bottleneck, BufferLimit, LinkSpec, LossSpec, QdiscSpec};
use crate::param::{check_keys, read, read_table};
use crate::units::Buffer;
use crate::values::{self, describe, join, kind_of};

/// The smallest byte buffer: one full-size (1500-byte MTU) packet.
pub const MIN_BUFFER_BYTES: u64 = 1500;

/// The per-direction tables of a link table, in the order of
/// [`crate::model::AccessLinks::dir`].
pub(crate) const DIRS: [&str; 2] = ["down", "up"];

/// Resolve both directions of `[bottleneck]` (`None` if the table is absent).
pub(crate) fn resolve_bottleneck(
    raw: Option<&Table>,
    trace_dirs: &[std::path::PathBuf],
) -> Result<Bottleneck, ScenarioError> {
    let Some(b) = raw else {
        return Err(ScenarioError::missing("bottleneck"));
    };
    check_link_table(b, "bottleneck", config::PARAMS)?;
    Ok(Bottleneck {
        down: resolve_link(&link_keys(b, "bottleneck", 0), None, trace_dirs)?,
        up: resolve_link(&link_keys(b, "bottleneck", 1), None, trace_dirs)?,
    })
}

/// Check a link table (`[bottleneck]`, a host's `access`) at `path`: its
/// keys are `params` and `down` / `up`, tables whose keys are `params`.
pub(crate) fn check_link_table(
    table: &Table,
    path: &str,
    params: &'static [Param],
) -> Result<(), ScenarioError> {
    check_keys(table, path, params, &DIRS)?;
    for dir in DIRS {
        let dir_path = join(path, dir);
        match table.get(dir) {
            None => {}
            Some(Value::Table(t)) => check_keys(t, &dir_path, params, &[])?,
            Some(other) => {
                return Err(ScenarioError::wrong_type(
                    &dir_path,
                    "a table",
                    &describe(other),
                ))
            }
        }
    }
    Ok(())
}

/// The keys of direction `dir` (an index into [`DIRS`]) of the link table
/// `table` written at `path` (checked by [`check_link_table`]).
pub(crate) fn link_keys<'a>(table: &'a Table, path: &str, dir: usize) -> Merged<'a> {
    Merged {
        shared: table,
        shared_path: path.into(),
        dir: table.get(DIRS[dir]).and_then(Value::as_table),
        dir_path: join(path, DIRS[dir]),
    }
}

/// The keys of one direction of a link: `<dir_path>.<key>` (e.g.
/// `bottleneck.down.rate`) over `<shared_path>.<key>` (`bottleneck.rate`).
pub(crate) struct Merged<'a> {
    pub shared: &'a Table,
    pub shared_path: String,
    pub dir: Option<&'a Table>,
    pub dir_path: String,
}

impl<'a> Merged<'a> {
    /// The value of `key` and the path where it was written.
    pub fn get(&self, key: &str) -> Option<(&'a Value, String)> {
        if let Some(v) = self.dir.and_then(|d| d.get(key)) {
            return Some((v, join(&self.dir_path, key)));
        }
        self.shared
            .get(key)
            .map(|v| (v, join(&self.shared_path, key)))
    }

    /// The value of the required key `p` (its default is unset), or an
    /// error that says where it may go, with its example.
    pub fn require(&self, p: &Param) -> Result<(&'a Value, String), ScenarioError> {
        self.get(p.name).ok_or_else(|| {
            ScenarioError::missing_with(
                &join(&self.dir_path, p.name),
                format!(
                    "{} = {} under [{}] (both directions) or [{}]",
                    p.name,
                    p.example(),
                    self.shared_path,
                    self.dir_path
                ),
            )
        })
    }
}

/// One direction of a link from its keys (`l4slab_link::config`). `delay`:
/// the link's propagation delay when the table has no `delay` key (a host's
/// access link takes the host's `access_delay`); `None` reads the required
/// `delay` key.
pub(crate) fn resolve_link(
    m: &Merged<'_>,
    delay: Option<Dur>,
    trace_dirs: &[std::path::PathBuf],
) -> Result<LinkSpec, ScenarioError> {
    let (v, p) = m.require(&RATE)?;
    let (rate, rate_trace) = match v {
        Value::Table(t) => crate::trace::resolve(t, &p, trace_dirs)?,
        _ => (values::positive_rate(v, &p)?, None),
    };
    let delay = match delay {
        Some(d) => d,
        None => {
            let (v, p) = m.require(&DELAY)?;
            read(&DELAY, v, &p, None)?.dur()
        }
    };
    let (v, p) = m.require(&BUFFER)?;
    let limit = buffer_limit(values::buffer(v, &p)?, rate, &p)?;
    let qdisc = match m.get(QDISC.name) {
        Some((v, p)) => crate::qdisc::resolve(v, &p, limit, rate)?,
        None => QdiscSpec::for_buffer(QDISC.default.choice(), limit).expect("a registered qdisc"),
    };
    let loss = match m.get(LOSS.name) {
        Some((v, p)) => resolve_loss(v, &p)?,
        None => LossSpec::None,
    };
    let ecn_rewrite = match m.get(ECN_REWRITE.name) {
        Some((v, p)) => crate::ecn::rewrite(v, &p)?,
        None => EcnRewrite::from_name(ECN_REWRITE.default.choice()).expect("a rewrite"),
    };
    Ok(LinkSpec {
        rate,
        delay,
        qdisc,
        loss,
        ecn_rewrite,
        rate_trace,
    })
}

/// A parsed buffer at a link rate -> [`BufferLimit`].
pub(crate) fn buffer_limit(
    buf: Buffer,
    rate: l4slab_core::Rate,
    path: &str,
) -> Result<BufferLimit, ScenarioError> {
    match buf {
        Buffer::Packets(0) => Err(ScenarioError::bad_value(
            path,
            "must hold at least 1 packet",
        )),
        Buffer::Packets(n) => u32::try_from(n)
            .map(BufferLimit::Packets)
            .map_err(|_| ScenarioError::bad_value(path, format!("{n} packets is too many"))),
        Buffer::Bytes(b) if b < MIN_BUFFER_BYTES => Err(ScenarioError::bad_value(
            path,
            format!("{b} B holds no full-size packet; must be at least {MIN_BUFFER_BYTES}B"),
        )),
        Buffer::Bytes(b) => Ok(BufferLimit::Bytes(b)),
        Buffer::Time(time) => Ok(BufferLimit::Time {
            time,
            bytes: rate.bytes_in(time).max(MIN_BUFFER_BYTES),
        }),
    }
}

/// `loss = "1%"`, `loss = 0.01`, or a table with `kind` whose keys are read
/// by the model's declarations (`l4slab_link::loss::MODELS`).
pub(crate) fn resolve_loss(value: &Value, path: &str) -> Result<LossSpec, ScenarioError> {
    // p = 0 chooses no packet, so there is nothing to drop or mark.
    let bernoulli = |p: f64, ecn: bool| {
        if p == 0.0 {
            LossSpec::None
        } else {
            LossSpec::Bernoulli { p, ecn }
        }
    };
    let Value::Table(t) = value else {
        return values::fraction(value, path).map(|p| bernoulli(p, false));
    };
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(&(kind, params)) = loss::MODELS.iter().find(|(k, _)| *k == kind) else {
        return Err(ScenarioError::unknown_name(
            &kind_path,
            "loss model",
            kind,
            &loss::MODELS.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ));
    };
    let values = read_table(t, path, params, None)?;
    let num = |p: &Param| -> Result<f64, ScenarioError> {
        match values.get(p) {
            Some(v) => Ok(v.num()),
            None if matches!(p.default, ParamValue::Unset { .. }) => {
                Err(ScenarioError::missing_with(
                    &join(path, p.name),
                    format!("{} = {}", p.name, p.example()),
                ))
            }
            None => Ok(p.default.num()),
        }
    };
    let ecn = || values.get(&loss::ECN).is_some_and(|v| v.flag());
    Ok(match kind {
        "none" => LossSpec::None,
        "bernoulli" => bernoulli(num(&loss::BERNOULLI_P)?, ecn()),
        _ => LossSpec::GilbertElliott {
            p: num(&loss::GE_P)?,
            r: num(&loss::GE_R)?,
            k: num(&loss::GE_K)?,
            h: num(&loss::GE_H)?,
            ecn: ecn(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::{Dur, Rate};

    #[test]
    fn time_buffer_converts_at_the_link_rate() {
        // 20 Mbit/s x 50 ms = 1,000,000 bit = 125,000 B.
        let l = buffer_limit(Buffer::Time(Dur::from_millis(50)), Rate::from_mbps(20), "b").unwrap();
        assert_eq!(
            l,
            BufferLimit::Time {
                time: Dur::from_millis(50),
                bytes: 125_000
            }
        );
        // 1 Mbit/s x 1 ms = 125 B, raised to one 1500 B packet.
        let l = buffer_limit(Buffer::Time(Dur::from_millis(1)), Rate::from_mbps(1), "b").unwrap();
        assert_eq!(
            l,
            BufferLimit::Time {
                time: Dur::from_millis(1),
                bytes: 1500
            }
        );
        // 3 bit/s x 1 s = 0.375 B, rounded down, then raised to 1500.
        let l = buffer_limit(Buffer::Time(Dur::from_secs(1)), Rate::from_bps(3), "b").unwrap();
        assert_eq!(
            l,
            BufferLimit::Time {
                time: Dur::from_secs(1),
                bytes: 1500
            }
        );
        // 10 Mbit/s x 12.3456 ms = 123,456 bit = 15,432 B exactly.
        let l = buffer_limit(
            Buffer::Time(Dur::from_micros(12_345) + Dur::from_nanos(600)),
            Rate::from_mbps(10),
            "b",
        )
        .unwrap();
        assert_eq!(
            l,
            BufferLimit::Time {
                time: Dur::from_nanos(12_345_600),
                bytes: 15_432
            }
        );
    }

    #[test]
    fn loss_shorthands() {
        let s = |t: &str| Value::String(t.into());
        assert_eq!(
            resolve_loss(&s("1%"), "l"),
            Ok(LossSpec::Bernoulli {
                p: 0.01,
                ecn: false
            })
        );
        assert_eq!(resolve_loss(&s("0%"), "l"), Ok(LossSpec::None));
        assert_eq!(
            resolve_loss(&Value::Float(0.02), "l"),
            Ok(LossSpec::Bernoulli {
                p: 0.02,
                ecn: false
            })
        );
    }

    #[test]
    fn loss_ecn_flag() {
        let t = |text: &str| -> Value { toml::from_str(&format!("loss = {text}")).unwrap() };
        let r = |text: &str| resolve_loss(&t(text)["loss"], "bottleneck.down.loss");
        assert_eq!(
            r(r#"{ kind = "bernoulli", p = "1%", ecn = true }"#),
            Ok(LossSpec::Bernoulli { p: 0.01, ecn: true })
        );
        assert_eq!(
            r(r#"{ kind = "bernoulli", p = "1%" }"#).map(|s| s.ecn()),
            Ok(false)
        );
        assert_eq!(
            r(r#"{ kind = "gilbert_elliott", p = "1%", r = "30%", ecn = true }"#),
            Ok(LossSpec::GilbertElliott {
                p: 0.01,
                r: 0.3,
                k: 1.0,
                h: 0.0,
                ecn: true
            })
        );
        let e = r(r#"{ kind = "bernoulli", p = "1%", ecn = "yes" }"#).unwrap_err();
        assert_eq!(e.path(), Some("bottleneck.down.loss.ecn"));
        assert!(e.to_string().contains("expected true or false"), "{e}");
        // Written only when set: scenarios without it resolve as before.
        let json = |s: LossSpec| serde_json::to_string(&s).unwrap();
        assert_eq!(
            json(LossSpec::Bernoulli { p: 0.5, ecn: false }),
            r#"{"kind":"bernoulli","p":0.5}"#
        );
        assert_eq!(
            json(LossSpec::Bernoulli { p: 0.5, ecn: true }),
            r#"{"kind":"bernoulli","p":0.5,"ecn":true}"#
        );
    }
}
