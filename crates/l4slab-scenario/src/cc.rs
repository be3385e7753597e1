//! `[[flows]] cc` -> [`CcSpec`]: the one dispatch on the congestion-control
//! name (a Linux `tcp_congestion_control` name), then one resolver per kind
//! for its options table, with the names of the Linux module parameters
//! (without the module prefix) and the defaults of `l4slab-cc`
//! ([`l4slab_cc::options`]). A key of another kind is an unknown key.
//!
//! ```toml
//! cc = "prague"                                        # defaults
//! cc = { kind = "prague", rtt_scaling = "none" }       # one option set
//! cc = { kind = "cubic", hystart = false, beta = 0.5 }
//! ```
//!
//! Options are overrides: what is not written keeps the controller's
//! default and is not recorded. Values are in scenario units — fractions as
//! `0.7` or `"70%"`, durations as `"25ms"`, gains as factors — never Linux's
//! fixed-point integers; an integer where Linux takes a scaled one (`beta =
//! 717`, `alpha_on_init = 1024`) is refused as ambiguous, like tc-pie's gains.

use serde::Deserialize;
use toml::Value;

use l4slab_cc::options::{
    Bbr3Options, BbrOptions, CcOptions, CubicOptions, DctcpOptions, PragueOptions,
};
use l4slab_cc::{EcnFallback, RttScaling};

use crate::error::ScenarioError;
use crate::model::CcSpec;
use crate::qdisc::params::{bad_value, choice, flag, number, positive_time, time, with_example};
use crate::raw::KindOnlyTable;
use crate::values::{self, deserialize_at, join, kind_of};

/// `cc` at `path` (`flows[0].cc`); absent = `reno`. `known` are the names
/// the backend accepts (`ParseOptions::known_cc`).
pub(crate) fn resolve(
    value: Option<&Value>,
    path: &str,
    known: &[&str],
) -> Result<CcSpec, ScenarioError> {
    let default = Value::String("reno".into());
    let value = value.unwrap_or(&default);
    let (kind, kind_path) = kind_of(value, path)?;
    let Some(defaults) = CcOptions::defaults(kind).filter(|_| known.contains(&kind)) else {
        return Err(ScenarioError::unknown_name(
            &kind_path,
            "congestion control",
            kind,
            known,
        ));
    };
    let Value::Table(_) = value else {
        return Ok(CcSpec::new(defaults));
    };
    let options = match kind {
        "reno" => {
            deserialize_at::<KindOnlyTable>(value.clone(), path)?;
            CcOptions::Reno
        }
        "cubic" => CcOptions::Cubic(cubic(value, path)?),
        "dctcp" => CcOptions::Dctcp(dctcp(value, path)?),
        "prague" => CcOptions::Prague(prague(value, path)?),
        "bbr" => CcOptions::Bbr(bbr(value, path)?),
        "bbr3" => CcOptions::Bbr3(bbr3(value, path)?),
        k => unreachable!("CcOptions::defaults knows '{k}' but no resolver does"),
    };
    Ok(CcSpec::new(options))
}

/// Read the kind's table; unknown keys and wrong TOML types name their path,
/// and the known keys get their example.
fn table<T: serde::de::DeserializeOwned>(value: &Value, path: &str) -> Result<T, ScenarioError> {
    deserialize_at(value.clone(), path).map_err(|e| {
        let key = e.path().and_then(|p| p.rsplit('.').next()).unwrap_or("");
        match example(key) {
            Some(ex) => with_example(e, ex),
            None => e,
        }
    })
}

fn opt<T>(
    v: &Option<Value>,
    path: &str,
    key: &str,
    f: impl FnOnce(&Value, &str) -> Result<T, ScenarioError>,
) -> Result<Option<T>, ScenarioError> {
    v.as_ref().map(|v| f(v, &join(path, key))).transpose()
}

// ---------------------------------------------------------------- cubic

/// `cc = { kind = "cubic", ... }`: Linux `tcp_cubic` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct CubicTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    beta: Option<Value>,
    c: Option<Value>,
    fast_convergence: Option<Value>,
    tcp_friendliness: Option<Value>,
    hystart: Option<Value>,
}

fn cubic(value: &Value, path: &str) -> Result<CubicOptions, ScenarioError> {
    let t: CubicTable = table(value, path)?;
    Ok(CubicOptions {
        beta: opt(&t.beta, path, "beta", |v, p| {
            // Linux's beta is in 1/1024 (717 = 0.7).
            let b = scaled_fraction(v, p, "0.7", "Linux's beta is in 1/1024 units (717 = 0.7)")?;
            open_unit(b, p, "0.7")
        })?,
        c: opt(&t.c, path, "c", |v, p| positive(v, p, "0.4"))?,
        fast_convergence: opt(&t.fast_convergence, path, "fast_convergence", flag)?,
        tcp_friendliness: opt(&t.tcp_friendliness, path, "tcp_friendliness", flag)?,
        hystart: opt(&t.hystart, path, "hystart", flag)?,
    })
}

// ---------------------------------------------------------------- dctcp

/// `cc = { kind = "dctcp", ... }`: Linux `tcp_dctcp` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct DctcpTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    shift_g: Option<Value>,
    alpha_on_init: Option<Value>,
    ect1: Option<Value>,
}

fn dctcp(value: &Value, path: &str) -> Result<DctcpOptions, ScenarioError> {
    let t: DctcpTable = table(value, path)?;
    Ok(DctcpOptions {
        shift_g: opt(&t.shift_g, path, "shift_g", |v, p| {
            integer(v, p, 1, 16, "4").map(|n| n as u32)
        })?,
        alpha_on_init: opt(&t.alpha_on_init, path, "alpha_on_init", |v, p| {
            scaled_fraction(
                v,
                p,
                "1.0",
                "Linux's dctcp_alpha_on_init is in 1/1024 units (1024 = 1.0)",
            )
        })?,
        ect1: opt(&t.ect1, path, "ect1", flag)?,
    })
}

// ---------------------------------------------------------------- prague

/// `cc = { kind = "prague", ... }`: Linux `tcp_prague` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct PragueTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    rtt_scaling: Option<Value>,
    rtt_target: Option<Value>,
    rtt_transition: Option<Value>,
    ecn_fallback: Option<Value>,
    burst_shift: Option<Value>,
    max_tso_segs: Option<Value>,
}

/// `prague_rtt_scaling` values, in Linux's order (0..=3).
pub const RTT_SCALING: &[&str] = &["none", "rate", "scalable", "additive"];
/// `prague_ecn_fallback` values, in Linux's order (0..=2).
pub const ECN_FALLBACK: &[&str] = &["off", "detect_and_fallback", "detect_only"];

fn prague(value: &Value, path: &str) -> Result<PragueOptions, ScenarioError> {
    let t: PragueTable = table(value, path)?;
    Ok(PragueOptions {
        rtt_scaling: opt(&t.rtt_scaling, path, "rtt_scaling", |v, p| {
            Ok(match choice(v, p, "rtt_scaling", RTT_SCALING)? {
                "none" => RttScaling::None,
                "rate" => RttScaling::Rate,
                "scalable" => RttScaling::Scalable,
                _ => RttScaling::Additive,
            })
        })?,
        // Zero is allowed: Linux turns RTT independence off with it.
        rtt_target: opt(&t.rtt_target, path, "rtt_target", |v, p| {
            time(v, p, r#""25ms""#)
        })?,
        rtt_transition: opt(&t.rtt_transition, path, "rtt_transition", |v, p| {
            integer(v, p, 0, i64::from(u32::MAX), "500")
        })?,
        ecn_fallback: opt(&t.ecn_fallback, path, "ecn_fallback", |v, p| {
            Ok(match choice(v, p, "ecn_fallback", ECN_FALLBACK)? {
                "off" => EcnFallback::Off,
                "detect_and_fallback" => EcnFallback::DetectAndFallback,
                _ => EcnFallback::DetectOnly,
            })
        })?,
        burst_shift: opt(&t.burst_shift, path, "burst_shift", |v, p| {
            integer(v, p, 0, 40, "12").map(|n| n as u32)
        })?,
        max_tso_segs: opt(&t.max_tso_segs, path, "max_tso_segs", |v, p| {
            integer(v, p, 0, i64::from(u32::MAX), "0")
        })?,
    })
}

// ---------------------------------------------------------------- bbr

/// `cc = { kind = "bbr", ... }`: `tcp_bbr`'s constants (no module parameters
/// in Linux).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct BbrTable {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    high_gain: Option<Value>,
    cwnd_gain: Option<Value>,
    extra_acked_gain: Option<Value>,
    min_rtt_win: Option<Value>,
    probe_rtt_mode: Option<Value>,
}

/// BBR's gains are kept in 1/256 (`BBR_UNIT`); a smaller positive gain
/// would round to zero.
const BBR_GAIN_MIN: f64 = 1.0 / 256.0;
/// A bound that catches typos (Linux's largest default gain is 2.885).
const BBR_GAIN_MAX: f64 = 100.0;

fn bbr(value: &Value, path: &str) -> Result<BbrOptions, ScenarioError> {
    let t: BbrTable = table(value, path)?;
    let gain = |v: &Value, p: &str, ex: &str, allow_zero: bool| -> Result<f64, ScenarioError> {
        let g = number(v, p, ex)?;
        let ok = (g == 0.0 && allow_zero) || (BBR_GAIN_MIN..=BBR_GAIN_MAX).contains(&g);
        if !ok {
            let lo = if allow_zero { "0 or " } else { "" };
            return Err(bad_value(
                p,
                format!("{g}: must be {lo}between 1/256 and {BBR_GAIN_MAX} (a factor)"),
                ex,
            ));
        }
        Ok(g)
    };
    Ok(BbrOptions {
        high_gain: opt(&t.high_gain, path, "high_gain", |v, p| {
            gain(v, p, "2.885", false)
        })?,
        cwnd_gain: opt(&t.cwnd_gain, path, "cwnd_gain", |v, p| {
            gain(v, p, "2.0", false)
        })?,
        extra_acked_gain: opt(&t.extra_acked_gain, path, "extra_acked_gain", |v, p| {
            gain(v, p, "1.0", true)
        })?,
        min_rtt_win: opt(&t.min_rtt_win, path, "min_rtt_win", |v, p| {
            positive_time(v, p, r#""10s""#)
        })?,
        probe_rtt_mode: opt(&t.probe_rtt_mode, path, "probe_rtt_mode", |v, p| {
            positive_time(v, p, r#""200ms""#)
        })?,
    })
}

// ---------------------------------------------------------------- bbr3

/// `cc = { kind = "bbr3", ... }`: draft-ietf-ccwg-bbr constants.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct Bbr3Table {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    loss_thresh: Option<Value>,
    beta: Option<Value>,
    headroom: Option<Value>,
    probe_rtt_interval: Option<Value>,
}

fn bbr3(value: &Value, path: &str) -> Result<Bbr3Options, ScenarioError> {
    let t: Bbr3Table = table(value, path)?;
    let below_one = |v: &Value, p: &str, ex: &str| -> Result<f64, ScenarioError> {
        let x = values::fraction(v, p).map_err(|e| with_example(e, ex))?;
        if x >= 1.0 {
            return Err(bad_value(p, format!("{x}: must be below 1"), ex));
        }
        Ok(x)
    };
    Ok(Bbr3Options {
        loss_thresh: opt(&t.loss_thresh, path, "loss_thresh", |v, p| {
            below_one(v, p, r#""2%""#)
        })?,
        beta: opt(&t.beta, path, "beta", |v, p| below_one(v, p, "0.7"))?,
        headroom: opt(&t.headroom, path, "headroom", |v, p| {
            below_one(v, p, "0.15")
        })?,
        probe_rtt_interval: opt(&t.probe_rtt_interval, path, "probe_rtt_interval", |v, p| {
            positive_time(v, p, r#""5s""#)
        })?,
    })
}

// ---------------------------------------------------------------- values

/// A valid value for a `cc` option, for error messages. (`beta` is CUBIC's
/// and BBRv3's, both 0.7.)
fn example(key: &str) -> Option<&'static str> {
    Some(match key {
        "kind" => r#""prague""#,
        "beta" => "0.7",
        "c" => "0.4",
        "fast_convergence" | "tcp_friendliness" | "ect1" => "true",
        "hystart" => "false",
        "shift_g" => "4",
        "alpha_on_init" => "1.0",
        "rtt_scaling" => r#""rate""#,
        "rtt_target" => r#""25ms""#,
        "rtt_transition" => "500",
        "ecn_fallback" => r#""detect_and_fallback""#,
        "burst_shift" => "12",
        "max_tso_segs" => "0",
        "high_gain" => "2.885",
        "cwnd_gain" => "2.0",
        "extra_acked_gain" => "1.0",
        "min_rtt_win" => r#""10s""#,
        "probe_rtt_mode" => r#""200ms""#,
        "loss_thresh" => r#""2%""#,
        "headroom" => "0.15",
        "probe_rtt_interval" => r#""5s""#,
        _ => return None,
    })
}

/// An integer in `lo..=hi`.
fn integer(v: &Value, path: &str, lo: i64, hi: i64, example: &str) -> Result<u64, ScenarioError> {
    match v {
        Value::Integer(i) => values::int_in(*i, path, lo, hi).map_err(|e| with_example(e, example)),
        other => Err(crate::qdisc::params::wrong_type(
            path,
            "an integer",
            other,
            example,
        )),
    }
}

/// A finite number above zero.
fn positive(v: &Value, path: &str, example: &str) -> Result<f64, ScenarioError> {
    let x = number(v, path, example)?;
    if x <= 0.0 {
        return Err(bad_value(path, format!("{x}: must be above 0"), example));
    }
    Ok(x)
}

/// A fraction in [0, 1] (`0.7`, `"70%"`) whose Linux parameter is a scaled
/// integer: an integer other than 0 is refused, naming Linux's units.
fn scaled_fraction(
    v: &Value,
    path: &str,
    example: &str,
    linux_units: &str,
) -> Result<f64, ScenarioError> {
    if let Value::Integer(i) = v {
        if *i != 0 {
            return Err(bad_value(
                path,
                format!("{i} is ambiguous: {linux_units}; give a fraction"),
                example,
            ));
        }
    }
    values::fraction(v, path).map_err(|e| with_example(e, example))
}

/// `x` strictly between 0 and 1.
fn open_unit(x: f64, path: &str, example: &str) -> Result<f64, ScenarioError> {
    if x <= 0.0 || x >= 1.0 {
        return Err(bad_value(
            path,
            format!("{x}: must be between 0 and 1 (exclusive)"),
            example,
        ));
    }
    Ok(x)
}
