//! `qdisc = "dualpi2"` or `{ kind = "dualpi2", ... }`: Linux `dualpi2` with
//! the `tc-dualpi2(8)` parameter names and Linux defaults
//! (`l4slab_qdisc::DualPi2Config::default`), plus l4slab's options for the
//! RFC 9332 variants and the classifier rule.
//!
//! Every key is declared in [`l4slab_qdisc::dualpi2::config::PARAMS`] and
//! read by [`crate::param`]; the generic resolver ([`super::resolve`]) sets
//! those with a field of their own. This file composes the rest: the
//! auto-configuration from the RTTs, the L AQM and scheduler variants (with
//! the conflicts between their keys), `step_thresh` (a time or packets) and
//! the flow lists (names resolved once the flows are).
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

use toml::Value;

use l4slab_core::param::Param;
use l4slab_core::FlowId;
use l4slab_qdisc::dualpi2::config::{
    ALPHA, BETA, CLASSIC_PROTECTION, LLLL_FLOWS, L_AQM, L_FLOWS, MAX_RTT, MIN_QLEN_STEP, MIN_TH,
    RANGE, SCHEDULER, STEP_THRESH, TARGET, TH_LEN, TSHIFT, TUPDATE, TYPICAL_RTT,
};
use l4slab_qdisc::dualpi2::{auto_config, LAqm, Scheduler, StepThresh};
use l4slab_qdisc::DualPi2Config;

use super::params::{bad_value, with_example, wrong_type};
use crate::error::{Problem, ScenarioError};
use crate::link::Merged;
use crate::model::{Flow, LinkSpec, QdiscSpec};
use crate::param::Values;
use crate::units::Buffer;
use crate::values::{self, describe, join};

/// The keys the declarations do not set by themselves (after those that
/// they do): iproute2's auto-configuration from `max_rtt`/`typical_rtt`, the
/// L AQM and scheduler with their conflicting keys, and the flow names.
pub(super) fn resolve_custom(cfg: &mut DualPi2Config, v: &Values) -> Result<(), ScenarioError> {
    // PI2: explicit values, or iproute2's auto-configuration from the RTTs.
    let max_rtt = v.get(&MAX_RTT).and_then(|x| x.opt_dur());
    let typical_rtt = v.get(&TYPICAL_RTT).and_then(|x| x.opt_dur());
    if max_rtt.is_some() || typical_rtt.is_some() {
        let by = if max_rtt.is_some() {
            &MAX_RTT
        } else {
            &TYPICAL_RTT
        };
        for p in [&TARGET, &TUPDATE, &ALPHA, &BETA] {
            if v.has(p) {
                return Err(ScenarioError::invalid(
                    &v.path_of(p),
                    Problem::Conflict,
                    format!(
                        "{} computes target, tupdate, alpha and beta (iproute2 \
                         auto-configuration); give either {} or the RTTs",
                        by.name, p.name
                    ),
                    Some(format!("{} = {}", by.name, by.example())),
                ));
            }
        }
        let at = if typical_rtt.is_some() && max_rtt.is_some() {
            &TYPICAL_RTT
        } else {
            by
        };
        let pi = auto_config(max_rtt, typical_rtt)
            .map_err(|e| bad_value(&v.path_of(at), e.to_string(), &at.example()))?;
        cfg.target = pi.target;
        cfg.tupdate = pi.tupdate;
        cfg.alpha = pi.alpha;
        cfg.beta = pi.beta;
    }
    cfg.l_aqm = l_aqm(v)?;
    cfg.scheduler = scheduler(v)?;
    // Names are checked here and mapped to flow ids by `resolve_flow_classes`.
    for p in [&L_FLOWS, &LLLL_FLOWS] {
        if let Some((_, x)) = v.raw(p) {
            flow_names(x, &v.path_of(p))?;
        }
    }
    Ok(())
}

/// A key that belongs to another value of a selector key (`min_th` without
/// `l_aqm = "ramp"`).
fn belongs_to(v: &Values, p: &Param, selector: &Param, value: &str) -> ScenarioError {
    ScenarioError::invalid(
        &v.path_of(p),
        Problem::Conflict,
        format!(
            "{} applies only with {} = \"{value}\"",
            p.name, selector.name
        ),
        Some(format!("{} = \"{value}\"", selector.name)),
    )
}

/// `l_aqm`, `step_thresh`, `min_qlen_step`, `min_th`, `range`, `th_len`:
/// the keys of one L AQM conflict with the other.
fn l_aqm(v: &Values) -> Result<LAqm, ScenarioError> {
    let ramp = v.get(&L_AQM).unwrap_or(L_AQM.default).choice() == "ramp";
    let (others, other): (&[&Param], &str) = if ramp {
        (&[&STEP_THRESH, &MIN_QLEN_STEP], "step")
    } else {
        (&[&MIN_TH, &RANGE, &TH_LEN], "ramp")
    };
    for p in others {
        if v.has(p) {
            return Err(belongs_to(v, p, &L_AQM, other));
        }
    }
    if ramp {
        let dur = |p: &Param| v.get(p).unwrap_or(p.default).dur();
        return Ok(LAqm::Ramp {
            min_th: dur(&MIN_TH),
            range: dur(&RANGE),
            th_len: v.get(&TH_LEN).unwrap_or(TH_LEN.default).int() as u32,
        });
    }
    let LAqm::Step {
        mut thresh,
        mut min_qlen_step,
    } = LAqm::default()
    else {
        unreachable!("the default L AQM is the step")
    };
    if let Some((_, x)) = v.raw(&STEP_THRESH) {
        thresh = step_thresh(x, &v.path_of(&STEP_THRESH))?;
    }
    if let Some(x) = v.get(&MIN_QLEN_STEP) {
        min_qlen_step = x.int() as u32;
    }
    Ok(LAqm::Step {
        thresh,
        min_qlen_step,
    })
}

/// `step_thresh`: a time (`"1ms"`) or a packet count (`"5pkt"`), as in tc.
/// A custom reader: no generic kind is "a time or packets".
fn step_thresh(v: &Value, path: &str) -> Result<StepThresh, ScenarioError> {
    let example = &STEP_THRESH.example();
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

/// `scheduler`, `classic_protection`, `tshift`.
fn scheduler(v: &Values) -> Result<Scheduler, ScenarioError> {
    let ts_fifo = v.get(&SCHEDULER).unwrap_or(SCHEDULER.default).choice() == "ts_fifo";
    if ts_fifo {
        if v.has(&CLASSIC_PROTECTION) {
            return Err(belongs_to(v, &CLASSIC_PROTECTION, &SCHEDULER, "wrr"));
        }
        let tshift = v.get(&TSHIFT).unwrap_or(TSHIFT.default).dur();
        return Ok(Scheduler::TsFifo { tshift });
    }
    if v.has(&TSHIFT) {
        return Err(belongs_to(v, &TSHIFT, &SCHEDULER, "ts_fifo"));
    }
    // iproute2 try_get_percent: rint(percent), 0..=100.
    let c = v
        .get(&CLASSIC_PROTECTION)
        .unwrap_or(CLASSIC_PROTECTION.default)
        .num();
    Ok(Scheduler::Wrr {
        c_protection: (c * 100.0).round() as u8,
    })
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

/// Map the `l_flows` / `llll_flows` names of a link direction's dualpi2 to
/// flow ids (indices into `flows`), once the flows are resolved. `keys` are
/// the direction's keys (the bottleneck's or a host's access link's), where
/// the qdisc was written.
pub(crate) fn resolve_flow_classes(
    keys: &Merged<'_>,
    spec: &mut LinkSpec,
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    // The same precedence as crate::link: <dir>.qdisc over the shared qdisc.
    let written = keys.get("qdisc");
    resolve_qdisc_flow_classes(written, &mut spec.qdisc, flows)
}

/// Map the `l_flows` / `llll_flows` names of a dualpi2 written as `written`
/// (its value and key path; `None`: not written) to flow ids. Any other
/// qdisc is left as it is.
pub(crate) fn resolve_qdisc_flow_classes(
    written: Option<(&Value, String)>,
    qdisc: &mut QdiscSpec,
    flows: &[Flow],
) -> Result<(), ScenarioError> {
    let QdiscSpec::Dualpi2(cfg) = qdisc else {
        return Ok(());
    };
    let Some((Value::Table(table), path)) = written else {
        return Ok(());
    };
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
