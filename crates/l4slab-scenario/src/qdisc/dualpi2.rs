//! `qdisc = "dualpi2"` or `{ kind = "dualpi2", ... }`: Linux `dualpi2` with
//! the `tc-dualpi2(8)` parameter names and Linux defaults
//! ([`l4slab_qdisc::DualPi2Config::default`]), plus l4slab's options for the
//! RFC 9332 variants and the classifier rule.
//!
//! tc knobs: `limit` (packets; default: the direction's `buffer`, as for
//! `pie`), `memlimit` (alias `memory_limit`; bytes; default `limit` x 2 x
//! 1500 B like Linux), `target`, `tupdate`, `alpha`, `beta` (Hz, numbers: tc's
//! x256 units are a wire detail), `step_thresh` (`"1ms"` or `"5pkt"`),
//! `min_qlen_step`, `coupling_factor`, `drop_on_overload` (`false` = tc
//! `overflow`), `drop_enqueue` (`false` = tc `drop_dequeue`),
//! `classic_protection` (alias `c_protection`; `"10%"`), `ecn_mask`
//! (`"l4s_ect"` | `"any_ect"`), `split_gso` (accepted; a no-op, nothing is
//! aggregated in l4slab), and iproute2's `max_rtt` / `typical_rtt`, which
//! compute `target`, `tupdate`, `alpha` and `beta` (so they conflict with
//! those keys, where tc only warns).
//!
//! l4slab options: `l_aqm = "step" | "ramp"` (the RFC ramp, with `min_th`,
//! `range`, `th_len`), `scheduler = "wrr" | "ts_fifo"` (with `tshift`),
//! `pi_input = "max" | "c"`, and `l_flows` / `llll_flows`: flow names whose
//! packets go to the L queue whatever their ECN field, the equivalent of a tc
//! filter setting classid `:1` (AQM applies; Not-ECT packets are dropped where
//! ECT ones would be marked) or `:2` (never AQM-dropped or -marked). Flows are
//! resolved after the bottleneck, so the names are mapped to flow ids by
//! [`resolve_flow_classes`], called once all flows are known. A name matches
//! the flow of that name, or all flows expanded from it by `count`.

use serde::Deserialize;
use toml::Value;

use l4slab_core::{FlowId, Rate};
use l4slab_qdisc::dualpi2::{
    auto_config, memory_limit_for, EcnMask, LAqm, PiInput, Scheduler, StepThresh,
};
use l4slab_qdisc::DualPi2Config;

use super::params::{
    bad_value, choice, flag, gain, limit, number, packets_of, positive_time, time, with_example,
    wrong_type,
};
use crate::error::{Problem, ScenarioError};
use crate::model::{Bottleneck, BufferLimit, Flow, QdiscSpec};
use crate::raw::RawBottleneck;
use crate::units::Buffer;
use crate::values::{self, describe, deserialize_at, join};

/// `qdisc = { kind = "dualpi2", ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct Dualpi2Table {
    #[allow(dead_code)] // already read to choose this struct
    kind: String,
    limit: Option<Value>,
    #[serde(alias = "memory_limit")]
    memlimit: Option<Value>,
    target: Option<Value>,
    tupdate: Option<Value>,
    alpha: Option<Value>,
    beta: Option<Value>,
    step_thresh: Option<Value>,
    min_qlen_step: Option<Value>,
    coupling_factor: Option<Value>,
    drop_on_overload: Option<Value>,
    drop_enqueue: Option<Value>,
    #[serde(alias = "c_protection")]
    classic_protection: Option<Value>,
    ecn_mask: Option<Value>,
    split_gso: Option<Value>,
    max_rtt: Option<Value>,
    typical_rtt: Option<Value>,
    l_aqm: Option<Value>,
    min_th: Option<Value>,
    range: Option<Value>,
    th_len: Option<Value>,
    scheduler: Option<Value>,
    tshift: Option<Value>,
    pi_input: Option<Value>,
    l_flows: Option<Value>,
    llll_flows: Option<Value>,
}

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = DualPi2Config::default();
    cfg.limit = packets_of(buffer);
    cfg.memory_limit = memory_limit_for(cfg.limit, cfg.mtu);
    let Value::Table(_) = value else {
        return Ok(QdiscSpec::Dualpi2(cfg));
    };
    let t: Dualpi2Table = deserialize_at(value.clone(), path)?;
    let p = |key: &str| join(path, key);

    if let Some(v) = &t.limit {
        cfg.limit = limit(v, &p("limit"), rate, "10000")?;
        // dualpi2_change: a new limit recomputes the memory limit.
        cfg.memory_limit = memory_limit_for(cfg.limit, cfg.mtu);
    }
    if let Some(v) = &t.memlimit {
        cfg.memory_limit = memlimit(v, &p("memlimit"))?;
    }

    // PI2: explicit values, or iproute2's auto-configuration from the RTTs.
    let max_rtt = opt(&t.max_rtt, |v| {
        positive_time(v, &p("max_rtt"), r#""100ms""#)
    })?;
    let typical_rtt = opt(&t.typical_rtt, |v| {
        positive_time(v, &p("typical_rtt"), r#""15ms""#)
    })?;
    if max_rtt.is_some() || typical_rtt.is_some() {
        let by = if max_rtt.is_some() {
            "max_rtt"
        } else {
            "typical_rtt"
        };
        for (key, given) in [
            ("target", &t.target),
            ("tupdate", &t.tupdate),
            ("alpha", &t.alpha),
            ("beta", &t.beta),
        ] {
            if given.is_some() {
                return Err(ScenarioError::invalid(
                    &p(key),
                    Problem::Conflict,
                    format!(
                        "{by} computes target, tupdate, alpha and beta (iproute2 \
                         auto-configuration); give either {key} or the RTTs"
                    ),
                    Some(if by == "max_rtt" {
                        r#"max_rtt = "100ms""#.to_string()
                    } else {
                        r#"typical_rtt = "15ms""#.to_string()
                    }),
                ));
            }
        }
        let at = if typical_rtt.is_some() && max_rtt.is_some() {
            p("typical_rtt")
        } else {
            p(by)
        };
        let pi = auto_config(max_rtt, typical_rtt)
            .map_err(|e| bad_value(&at, e.to_string(), r#""15ms""#))?;
        cfg.target = pi.target;
        cfg.tupdate = pi.tupdate;
        cfg.alpha = pi.alpha;
        cfg.beta = pi.beta;
    }
    if let Some(v) = &t.target {
        cfg.target = time(v, &p("target"), r#""15ms""#)?;
    }
    if let Some(v) = &t.tupdate {
        cfg.tupdate = positive_time(v, &p("tupdate"), r#""16ms""#)?;
    }
    if let Some(v) = &t.alpha {
        cfg.alpha = gain(v, &p("alpha"), "0.16", false)?;
    }
    if let Some(v) = &t.beta {
        cfg.beta = gain(v, &p("beta"), "3.2", false)?;
    }
    if let Some(v) = &t.coupling_factor {
        let path = p("coupling_factor");
        let k = number(v, &path, "2")?;
        if k <= 0.0 {
            return Err(bad_value(&path, format!("{k}: must be above 0"), "2"));
        }
        cfg.coupling_factor = k;
    }
    if let Some(v) = &t.drop_on_overload {
        cfg.drop_on_overload = flag(v, &p("drop_on_overload"))?;
    }
    if let Some(v) = &t.drop_enqueue {
        cfg.drop_enqueue = flag(v, &p("drop_enqueue"))?;
    }
    if let Some(v) = &t.ecn_mask {
        cfg.ecn_mask = match choice(v, &p("ecn_mask"), "ecn_mask", &["l4s_ect", "any_ect"])? {
            "any_ect" => EcnMask::AnyEct,
            _ => EcnMask::L4sEct,
        };
    }
    if let Some(v) = &t.split_gso {
        cfg.split_gso = flag(v, &p("split_gso"))?;
    }
    if let Some(v) = &t.pi_input {
        cfg.pi_input = match choice(v, &p("pi_input"), "pi_input", &["max", "c"])? {
            "c" => PiInput::C,
            _ => PiInput::Max,
        };
    }
    cfg.l_aqm = l_aqm(&t, path)?;
    cfg.scheduler = scheduler(&t, path)?;
    // Names are checked here and mapped to flow ids by `resolve_flow_classes`.
    for (key, v) in [("l_flows", &t.l_flows), ("llll_flows", &t.llll_flows)] {
        if let Some(v) = v {
            flow_names(v, &p(key))?;
        }
    }
    Ok(QdiscSpec::Dualpi2(cfg))
}

fn opt<T>(
    v: &Option<Value>,
    f: impl FnOnce(&Value) -> Result<T, ScenarioError>,
) -> Result<Option<T>, ScenarioError> {
    v.as_ref().map(f).transpose()
}

/// `memlimit`: bytes, as an integer or a size string.
fn memlimit(v: &Value, path: &str) -> Result<u64, ScenarioError> {
    let example = r#""30MB""#;
    let bytes = match v {
        Value::Integer(i) => values::int_in(*i, path, 1, i64::MAX)?,
        v => values::size(v, path).map_err(|e| with_example(e, example))?,
    };
    if bytes == 0 {
        return Err(bad_value(path, "must be greater than zero", example));
    }
    Ok(bytes)
}

/// A key that belongs to another value of a selector key (`min_th` without
/// `l_aqm = "ramp"`).
fn belongs_to(path: &str, key: &str, selector: &str, value: &str) -> ScenarioError {
    ScenarioError::invalid(
        &join(path, key),
        Problem::Conflict,
        format!("{key} applies only with {selector} = \"{value}\""),
        Some(format!("{selector} = \"{value}\"")),
    )
}

/// `l_aqm`, `step_thresh`, `min_qlen_step`, `min_th`, `range`, `th_len`.
fn l_aqm(t: &Dualpi2Table, path: &str) -> Result<LAqm, ScenarioError> {
    let p = |key: &str| join(path, key);
    let ramp = match &t.l_aqm {
        Some(v) => choice(v, &p("l_aqm"), "l_aqm", &["step", "ramp"])? == "ramp",
        None => false,
    };
    if ramp {
        for (key, given) in [
            ("step_thresh", &t.step_thresh),
            ("min_qlen_step", &t.min_qlen_step),
        ] {
            if given.is_some() {
                return Err(belongs_to(path, key, "l_aqm", "step"));
            }
        }
        let LAqm::Ramp {
            mut min_th,
            mut range,
            mut th_len,
        } = LAqm::RFC_RAMP
        else {
            unreachable!("RFC_RAMP is a ramp")
        };
        if let Some(v) = &t.min_th {
            min_th = time(v, &p("min_th"), r#""800us""#)?;
        }
        if let Some(v) = &t.range {
            range = time(v, &p("range"), r#""400us""#)?;
        }
        if let Some(v) = &t.th_len {
            th_len = count(v, &p("th_len"), "1")?;
        }
        return Ok(LAqm::Ramp {
            min_th,
            range,
            th_len,
        });
    }
    for (key, given) in [
        ("min_th", &t.min_th),
        ("range", &t.range),
        ("th_len", &t.th_len),
    ] {
        if given.is_some() {
            return Err(belongs_to(path, key, "l_aqm", "ramp"));
        }
    }
    let LAqm::Step {
        mut thresh,
        mut min_qlen_step,
    } = LAqm::default()
    else {
        unreachable!("the default L AQM is the step")
    };
    if let Some(v) = &t.step_thresh {
        thresh = step_thresh(v, &p("step_thresh"))?;
    }
    if let Some(v) = &t.min_qlen_step {
        min_qlen_step = count(v, &p("min_qlen_step"), "0")?;
    }
    Ok(LAqm::Step {
        thresh,
        min_qlen_step,
    })
}

/// `step_thresh`: a time (`"1ms"`) or a packet count (`"5pkt"`), as in tc.
fn step_thresh(v: &Value, path: &str) -> Result<StepThresh, ScenarioError> {
    let example = r#""1ms""#;
    match values::buffer(v, path).map_err(|e| with_example(e, example))? {
        Buffer::Time(d) => Ok(StepThresh::Time(d)),
        Buffer::Packets(n) => u32::try_from(n)
            .map(StepThresh::Packets)
            .map_err(|_| bad_value(path, format!("{n} packets is too many"), example)),
        Buffer::Bytes(b) => Err(bad_value(
            path,
            format!("{b} B: the step threshold is a time or a number of packets, not bytes"),
            example,
        )),
    }
}

/// A non-negative packet count.
fn count(v: &Value, path: &str, example: &str) -> Result<u32, ScenarioError> {
    match v {
        Value::Integer(i) => values::int_in(*i, path, 0, i64::from(u32::MAX)).map(|n| n as u32),
        other => Err(wrong_type(path, "an integer", other, example)),
    }
    .map_err(|e| with_example(e, example))
}

/// `scheduler`, `classic_protection`, `tshift`.
fn scheduler(t: &Dualpi2Table, path: &str) -> Result<Scheduler, ScenarioError> {
    let p = |key: &str| join(path, key);
    let ts_fifo = match &t.scheduler {
        Some(v) => choice(v, &p("scheduler"), "scheduler", &["wrr", "ts_fifo"])? == "ts_fifo",
        None => false,
    };
    if ts_fifo {
        if t.classic_protection.is_some() {
            return Err(belongs_to(path, "classic_protection", "scheduler", "wrr"));
        }
        let tshift = match &t.tshift {
            Some(v) => time(v, &p("tshift"), r#""50ms""#)?,
            None => Scheduler::DEFAULT_TSHIFT,
        };
        return Ok(Scheduler::TsFifo { tshift });
    }
    if t.tshift.is_some() {
        return Err(belongs_to(path, "tshift", "scheduler", "ts_fifo"));
    }
    let c_protection = match &t.classic_protection {
        // iproute2 try_get_percent: rint(percent), 0..=100.
        Some(v) => {
            let f = values::fraction(v, &p("classic_protection"))
                .map_err(|e| with_example(e, r#""10%""#))?;
            (f * 100.0).round() as u8
        }
        None => match Scheduler::default() {
            Scheduler::Wrr { c_protection } => c_protection,
            Scheduler::TsFifo { .. } => unreachable!("the default scheduler is WRR"),
        },
    };
    Ok(Scheduler::Wrr { c_protection })
}

/// `l_flows = ["dns", ...]`: an array of flow names.
fn flow_names<'v>(v: &'v Value, path: &str) -> Result<Vec<&'v str>, ScenarioError> {
    let example = r#"["dns"]"#;
    let Value::Array(items) = v else {
        return Err(wrong_type(path, "an array of flow names", v, example));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.as_str()),
            other => Err(ScenarioError::invalid(
                &format!("{path}[{i}]"),
                Problem::WrongType,
                format!("expected a flow name, found {}", describe(other)),
                Some(r#""dns""#.into()),
            )),
        })
        .collect()
}

/// Map the `l_flows` / `llll_flows` names of each direction's dualpi2 to
/// flow ids (indices into `flows`), once the flows are resolved.
pub(crate) fn resolve_flow_classes(
    raw: Option<&RawBottleneck>,
    bottleneck: &mut Bottleneck,
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    let Some(raw) = raw else { return Ok(()) };
    for (dir, spec, raw_dir) in [
        ("down", &mut bottleneck.down, raw.down.as_ref()),
        ("up", &mut bottleneck.up, raw.up.as_ref()),
    ] {
        let QdiscSpec::Dualpi2(cfg) = &mut spec.qdisc else {
            continue;
        };
        // The same precedence as crate::link: bottleneck.<dir>.qdisc over bottleneck.qdisc.
        let (value, path) = match raw_dir.and_then(|d| d.field("qdisc")) {
            Some(v) => (v, format!("bottleneck.{dir}.qdisc")),
            None => match raw.field("qdisc") {
                Some(v) => (v, "bottleneck.qdisc".to_string()),
                None => continue,
            },
        };
        let Value::Table(table) = value else { continue };
        for (key, ids) in [
            ("l_flows", &mut cfg.l_flows),
            ("llll_flows", &mut cfg.llll_flows),
        ] {
            let Some(v) = table.get(key) else { continue };
            let key_path = join(&path, key);
            for (i, name) in flow_names(v, &key_path)?.into_iter().enumerate() {
                let matched = flow_ids(flows, name);
                if matched.is_empty() {
                    let mut known: Vec<&str> = flows.iter().map(|f| f.name.as_str()).collect();
                    known.truncate(20);
                    return Err(ScenarioError::unknown_name(
                        &format!("{key_path}[{i}]"),
                        "flow",
                        name,
                        &known,
                    ));
                }
                ids.extend(matched);
            }
            ids.sort_unstable();
            ids.dedup();
        }
    }
    Ok(())
}

/// The ids of the flow called `name`, or of the flows `name.0`, `name.1`, ...
/// expanded from it by `count`.
fn flow_ids(flows: &[Flow], name: &str) -> Vec<FlowId> {
    let expanded = |f: &str| {
        f.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    flows
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name == name || expanded(&f.name))
        .map(|(i, _)| i as FlowId)
        .collect()
}
