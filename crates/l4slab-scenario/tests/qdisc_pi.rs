//! `pie` and `dualpi2` in scenario files: tc knob names, Linux defaults, the
//! direction's buffer as the default `limit`, the iproute2 auto-configuration,
//! flow names in the classifier rule, and one error per way a knob can be
//! wrong, each naming its key path and giving an example.

mod common;

use common::{base_with, parse, parse_set, BASE};
use l4slab_core::Dur;
use l4slab_qdisc::dualpi2::{EcnMask, LAqm, PiInput, Scheduler, StepThresh};
use l4slab_qdisc::{DualPi2Config, PieConfig};
use l4slab_scenario::{Problem, QdiscSpec, Scenario};

fn pie_of(s: &Scenario) -> PieConfig {
    match &s.bottleneck.down.qdisc {
        QdiscSpec::Pie(c) => c.clone(),
        other => panic!("not pie: {other:?}"),
    }
}

fn pie(sets: &[&str]) -> PieConfig {
    pie_of(&base_with(sets))
}

fn dualpi2_of(q: &QdiscSpec) -> DualPi2Config {
    match q {
        QdiscSpec::Dualpi2(c) => c.clone(),
        other => panic!("not dualpi2: {other:?}"),
    }
}

fn dualpi2(sets: &[&str]) -> DualPi2Config {
    dualpi2_of(&base_with(sets).bottleneck.down.qdisc)
}

fn ms(n: u64) -> Dur {
    Dur::from_millis(n)
}

#[test]
fn pie_defaults_are_linux_with_the_buffer_as_limit() {
    // BASE: buffer = "100pkt".
    assert_eq!(
        pie(&["bottleneck.qdisc=pie"]),
        PieConfig {
            limit: 100,
            ..PieConfig::default()
        }
    );
    let d = PieConfig::default();
    assert_eq!(
        (d.target, d.tupdate, d.max_burst),
        (ms(15), ms(15), ms(150))
    );
    assert_eq!((d.alpha, d.beta), (0.125, 1.25));
    assert!(!d.ecn && !d.bytemode && !d.dq_rate_estimator);
    assert_eq!(d.limit, 1000);
    // Byte and time buffers become packets at 1500 B each.
    assert_eq!(
        pie(&["bottleneck.qdisc=pie", "bottleneck.buffer=150KB"]).limit,
        100
    );
    // 50 ms at 20 Mbit/s = 125 000 B = 83 packets.
    assert_eq!(
        pie(&["bottleneck.qdisc=pie", "bottleneck.buffer=50ms"]).limit,
        83
    );
    assert_eq!(
        pie(&["bottleneck.qdisc=pie", "bottleneck.buffer=1500B"]).limit,
        1
    );
}

#[test]
fn pie_takes_every_tc_knob() {
    let c = pie(&[
        r#"bottleneck.qdisc={ kind = "pie", limit = 300, target = "20ms", tupdate = "30ms", alpha = 0.25, beta = 2.5, ecn = true, bytemode = true, dq_rate_estimator = true, max_burst = "100ms" }"#,
    ]);
    assert_eq!(
        c,
        PieConfig {
            limit: 300,
            target: ms(20),
            tupdate: ms(30),
            alpha: 0.25,
            beta: 2.5,
            ecn: true,
            bytemode: true,
            dq_rate_estimator: true,
            max_burst: ms(100),
            ..PieConfig::default()
        }
    );
    // `burst` is an alias; `limit` may be a buffer string.
    let c = pie(&[r#"bottleneck.qdisc={ kind = "pie", burst = "0ms", limit = "30KB" }"#]);
    assert_eq!((c.max_burst, c.limit), (Dur::ZERO, 20));
}

#[test]
fn dualpi2_defaults_are_linux_with_the_buffer_as_limit() {
    let c = dualpi2(&["bottleneck.qdisc=dualpi2"]);
    assert_eq!(
        c,
        DualPi2Config {
            limit: 100,
            memory_limit: 100 * 2 * 1500,
            ..DualPi2Config::default()
        }
    );
    let d = DualPi2Config::default();
    assert_eq!((d.limit, d.target, d.tupdate), (10_000, ms(15), ms(16)));
    assert_eq!((d.alpha, d.beta), (41.0 / 256.0, 819.0 / 256.0));
    assert_eq!(d.coupling_factor, 2.0);
    assert!(d.drop_on_overload && !d.drop_enqueue && d.split_gso);
    assert_eq!(d.ecn_mask, EcnMask::L4sEct);
    assert_eq!(
        d.l_aqm,
        LAqm::Step {
            thresh: StepThresh::Time(ms(1)),
            min_qlen_step: 0
        }
    );
    assert_eq!(d.scheduler, Scheduler::Wrr { c_protection: 10 });
    assert_eq!(d.pi_input, PiInput::Max);
}

#[test]
fn dualpi2_takes_every_tc_knob() {
    let c = dualpi2(&[
        r#"bottleneck.qdisc={ kind = "dualpi2", limit = 500, memlimit = "1MB", target = "10ms", tupdate = "12ms", alpha = 0.2, beta = 4, step_thresh = "5pkt", min_qlen_step = 2, coupling_factor = 1.5, drop_on_overload = false, drop_enqueue = true, classic_protection = "5%", ecn_mask = "any_ect", split_gso = false, pi_input = "c" }"#,
    ]);
    assert_eq!(
        c,
        DualPi2Config {
            limit: 500,
            memory_limit: 1_000_000,
            target: ms(10),
            tupdate: ms(12),
            alpha: 0.2,
            beta: 4.0,
            l_aqm: LAqm::Step {
                thresh: StepThresh::Packets(5),
                min_qlen_step: 2,
            },
            coupling_factor: 1.5,
            drop_on_overload: false,
            drop_enqueue: true,
            scheduler: Scheduler::Wrr { c_protection: 5 },
            ecn_mask: EcnMask::AnyEct,
            split_gso: false,
            pi_input: PiInput::C,
            ..DualPi2Config::default()
        }
    );
    // A limit recomputes the memory limit, as in Linux; aliases for the
    // names the issue uses.
    let c = dualpi2(&[r#"bottleneck.qdisc={ kind = "dualpi2", limit = 7 }"#]);
    assert_eq!(c.memory_limit, 7 * 2 * 1500);
    let c = dualpi2(&[
        r#"bottleneck.qdisc={ kind = "dualpi2", memory_limit = 5000, c_protection = 0.3, step_thresh = "500us" }"#,
    ]);
    assert_eq!(c.memory_limit, 5000);
    assert_eq!(c.scheduler, Scheduler::Wrr { c_protection: 30 });
    assert!(matches!(
        c.l_aqm,
        LAqm::Step {
            thresh: StepThresh::Time(t),
            ..
        } if t == Dur::from_micros(500)
    ));
}

#[test]
fn dualpi2_rfc_options() {
    let c = dualpi2(&[
        r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "ramp", scheduler = "ts_fifo" }"#,
    ]);
    assert_eq!(c.l_aqm, LAqm::RFC_RAMP);
    assert_eq!(c.scheduler, Scheduler::TsFifo { tshift: ms(50) });
    let c = dualpi2(&[
        r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "ramp", min_th = "500us", range = "1ms", th_len = 2, scheduler = "ts_fifo", tshift = "30ms" }"#,
    ]);
    assert_eq!(
        c.l_aqm,
        LAqm::Ramp {
            min_th: Dur::from_micros(500),
            range: ms(1),
            th_len: 2
        }
    );
    assert_eq!(c.scheduler, Scheduler::TsFifo { tshift: ms(30) });
}

#[test]
fn dualpi2_max_rtt_auto_configuration() {
    // RFC 9332 App. A / iproute2: 100 ms and 15 ms -> 15 ms, 15 ms, 0.15 Hz, 3 Hz.
    let c = dualpi2(&[
        r#"bottleneck.qdisc={ kind = "dualpi2", max_rtt = "100ms", typical_rtt = "15ms" }"#,
    ]);
    assert_eq!((c.target, c.tupdate), (ms(15), ms(15)));
    assert!((c.alpha - 0.15).abs() < 1e-12 && (c.beta - 3.0).abs() < 1e-12);
    let c = dualpi2(&[r#"bottleneck.qdisc={ kind = "dualpi2", typical_rtt = "15ms" }"#]);
    assert_eq!(c.target, ms(15));
    assert!((c.beta - 0.3 / 0.09).abs() < 1e-9);
}

const FLOWS: &str = r#"
format = 1
duration = "10s"

[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"
qdisc = { kind = "dualpi2", l_flows = ["dns"], llll_flows = ["voip"] }
up.qdisc = { kind = "dualpi2", l_flows = ["bulk"] }

[[flows]]
name = "bulk"

[[flows]]
name = "dns"
count = 3

[[flows]]
name = "voip"
"#;

#[test]
fn dualpi2_flow_names_become_flow_ids() {
    let s = parse(FLOWS).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bulk", "dns.0", "dns.1", "dns.2", "voip"]);
    let down = dualpi2_of(&s.bottleneck.down.qdisc);
    assert_eq!(
        down.l_flows,
        [1, 2, 3],
        "`dns` names all its expanded flows"
    );
    assert_eq!(down.llll_flows, [4]);
    // The direction's own table wins over the shared one.
    let up = dualpi2_of(&s.bottleneck.up.qdisc);
    assert_eq!(up.l_flows, [0]);
    assert!(up.llll_flows.is_empty());
    // One expanded flow by its full name.
    let s = parse_set(
        FLOWS,
        &[r#"bottleneck.qdisc={ kind = "dualpi2", l_flows = ["dns.1", "dns.1"] }"#],
    )
    .unwrap();
    assert_eq!(dualpi2_of(&s.bottleneck.down.qdisc).l_flows, [2]);
}

/// An error case: `--set` overrides on a base text, expected key path, kind
/// and a fragment of the message.
struct Case {
    text: &'static str,
    sets: &'static [&'static str],
    path: &'static str,
    problem: Problem,
    fragment: &'static str,
}

const fn set(
    sets: &'static [&'static str],
    path: &'static str,
    problem: Problem,
    fragment: &'static str,
) -> Case {
    Case {
        text: BASE,
        sets,
        path,
        problem,
        fragment,
    }
}

use Problem::*;

const Q: &str = "bottleneck.qdisc";

#[rustfmt::skip]
const CASES: &[Case] = &[
    // pie
    set(&[r#"bottleneck.qdisc={ kind = "pie", limt = 5 }"#], "bottleneck.qdisc.limt", UnknownKey, "valid keys here: kind, limit, target"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", limit = 0 }"#], "bottleneck.qdisc.limit", BadValue, "must be between 1 and"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", limit = "0pkt" }"#], "bottleneck.qdisc.limit", BadValue, "must hold at least 1 packet; write e.g. 1000"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", target = 15 }"#], "bottleneck.qdisc.target", BadValue, "15 has no unit (a bare number is ambiguous); write e.g. \"15ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "pie", tupdate = "0ms" }"#], "bottleneck.qdisc.tupdate", BadValue, "must be greater than zero; write e.g. \"15ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "pie", alpha = 2 }"#], "bottleneck.qdisc.alpha", BadValue, "tc 2 = 0.125 Hz"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", alpha = -0.1 }"#], "bottleneck.qdisc.alpha", BadValue, "must be at least 0; write e.g. 0.125"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", beta = "fast" }"#], "bottleneck.qdisc.beta", WrongType, "expected a number, found a string (\"fast\"); write e.g. 1.25"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", ecn = "yes" }"#], "bottleneck.qdisc.ecn", WrongType, "expected true or false, found a string (\"yes\"); write e.g. true"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", bytemode = 1 }"#], "bottleneck.qdisc.bytemode", WrongType, "write e.g. true"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", dq_rate_estimator = 0 }"#], "bottleneck.qdisc.dq_rate_estimator", WrongType, "expected true or false"),
    set(&[r#"bottleneck.qdisc={ kind = "pie", max_burst = "soon" }"#], "bottleneck.qdisc.max_burst", BadValue, "write e.g. \"150ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "pie", step_thresh = "1ms" }"#], "bottleneck.qdisc.step_thresh", UnknownKey, "valid keys here"),
    // dualpi2
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", head_drop = true }"#], "bottleneck.qdisc.head_drop", UnknownKey, "valid keys here: kind, limit"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", limit = -1 }"#], "bottleneck.qdisc.limit", BadValue, "write e.g. 10000"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", memlimit = "lots" }"#], "bottleneck.qdisc.memlimit", BadValue, "write e.g. \"30MB\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", target = "x" }"#], "bottleneck.qdisc.target", BadValue, "write e.g. \"15ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", tupdate = "0s" }"#], "bottleneck.qdisc.tupdate", BadValue, "write e.g. \"16ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", alpha = 0 }"#], "bottleneck.qdisc.alpha", BadValue, "must be above 0; write e.g. 0.16"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", alpha = "0.16" }"#], "bottleneck.qdisc.alpha", WrongType, "write e.g. 0.16"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", beta = -3 }"#], "bottleneck.qdisc.beta", BadValue, "must be above 0; write e.g. 3.199"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", step_thresh = "10KB" }"#], "bottleneck.qdisc.step_thresh", BadValue, "a time or a number of packets, not bytes"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", step_thresh = 1 }"#], "bottleneck.qdisc.step_thresh", BadValue, "write e.g. \"1ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", min_qlen_step = "2pkt" }"#], "bottleneck.qdisc.min_qlen_step", WrongType, "write e.g. 0"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", coupling_factor = 0 }"#], "bottleneck.qdisc.coupling_factor", BadValue, "must be above 0; write e.g. 2"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", drop_on_overload = "overflow" }"#], "bottleneck.qdisc.drop_on_overload", WrongType, "write e.g. true"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", drop_enqueue = 1 }"#], "bottleneck.qdisc.drop_enqueue", WrongType, "expected true or false"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", classic_protection = 10 }"#], "bottleneck.qdisc.classic_protection", BadValue, "ambiguous"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", classic_protection = "110%" }"#], "bottleneck.qdisc.classic_protection", BadValue, "is more than 100%; write e.g. 0.1"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", ecn_mask = "ect1" }"#], "bottleneck.qdisc.ecn_mask", UnknownName, "choose one of: l4s_ect, any_ect"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", ecn_mask = 1 }"#], "bottleneck.qdisc.ecn_mask", WrongType, "write e.g. \"l4s_ect\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", split_gso = "no" }"#], "bottleneck.qdisc.split_gso", WrongType, "expected true or false"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", max_rtt = "0ms" }"#], "bottleneck.qdisc.max_rtt", BadValue, "write e.g. \"100ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", max_rtt = "10ms", typical_rtt = "20ms" }"#], "bottleneck.qdisc.typical_rtt", BadValue, "typical_rtt must be <= max_rtt"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", max_rtt = "100ms", alpha = 0.2 }"#], "bottleneck.qdisc.alpha", Conflict, "max_rtt computes target, tupdate, alpha and beta"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", typical_rtt = "5ms", target = "5ms" }"#], "bottleneck.qdisc.target", Conflict, "write e.g. typical_rtt = \"15ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "red" }"#], "bottleneck.qdisc.l_aqm", UnknownName, "choose one of: step, ramp"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "ramp", step_thresh = "1ms" }"#], "bottleneck.qdisc.step_thresh", Conflict, "applies only with l_aqm = \"step\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", min_th = "1ms" }"#], "bottleneck.qdisc.min_th", Conflict, "write e.g. l_aqm = \"ramp\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "ramp", range = 4 }"#], "bottleneck.qdisc.range", BadValue, "write e.g. \"400us\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_aqm = "ramp", th_len = -1 }"#], "bottleneck.qdisc.th_len", BadValue, "write e.g. 1"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", scheduler = "drr" }"#], "bottleneck.qdisc.scheduler", UnknownName, "choose one of: wrr, ts_fifo"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", tshift = "50ms" }"#], "bottleneck.qdisc.tshift", Conflict, "applies only with scheduler = \"ts_fifo\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", scheduler = "ts_fifo", classic_protection = "10%" }"#], "bottleneck.qdisc.classic_protection", Conflict, "write e.g. scheduler = \"wrr\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", scheduler = "ts_fifo", tshift = "later" }"#], "bottleneck.qdisc.tshift", BadValue, "write e.g. \"50ms\""),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", pi_input = "l" }"#], "bottleneck.qdisc.pi_input", UnknownName, "choose one of: max, c"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_flows = "dns" }"#], "bottleneck.qdisc.l_flows", WrongType, "expected an array of flow names"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_flows = [1] }"#], "bottleneck.qdisc.l_flows[0]", WrongType, "expected a flow name, found an integer (1)"),
    set(&[r#"bottleneck.qdisc={ kind = "dualpi2", l_flows = ["dns"] }"#], "bottleneck.qdisc.l_flows[0]", UnknownName, "unknown flow 'dns'; choose one of: flow0"),
    set(&[r#"bottleneck.down.qdisc={ kind = "dualpi2", llll_flows = ["flow0", "x"] }"#], "bottleneck.down.qdisc.llll_flows[1]", UnknownName, "unknown flow 'x'; choose one of: flow0"),
];

/// Some guidance must follow the problem: an example or the valid choices.
fn has_guidance(msg: &str) -> bool {
    ["write e.g. ", "choose one of: ", "valid keys here: "]
        .iter()
        .any(|g| msg.contains(g))
}

#[test]
fn every_error_names_its_path_and_an_example() {
    let mut failures = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        let e = match parse_set(c.text, c.sets) {
            Ok(_) => {
                failures.push(format!(
                    "case {i} {:?}: parsed, expected an error at {}",
                    c.sets, c.path
                ));
                continue;
            }
            Err(e) => e,
        };
        let msg = e.to_string();
        let ok = e.path() == Some(c.path)
            && e.problem() == Some(c.problem)
            && msg.starts_with(&format!("{}: ", c.path))
            && msg.contains(c.fragment)
            && has_guidance(&msg);
        if !ok {
            failures.push(format!(
                "case {i} {:?}: want {} {:?} containing {:?}\n      got {:?} {msg}",
                c.sets,
                c.path,
                c.problem,
                c.fragment,
                e.problem()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn the_design_error_form_for_a_gain() {
    let e = parse_set(
        BASE,
        &[r#"bottleneck.qdisc={ kind = "dualpi2", alpha = "fast" }"#],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{Q}.alpha: expected a number, found a string (\"fast\"); write e.g. 0.16")
    );
}
