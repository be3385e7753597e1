//! `qdisc = "fq_pie"` or `{ kind = "fq_pie", limit = 10240, flows = 1024,
//! target = "15ms", tupdate = "15ms", alpha = 0.125, beta = 1.25, quantum =
//! 1514, memory_limit = "32MiB", ecn_prob = 10, ecn = true, bytemode = false,
//! dq_rate_estimator = false }`: Linux `fq_pie` with the `tc-fq_pie(8)`
//! parameter names and Linux defaults, read by the declarations
//! [`l4slab_qdisc::fq_pie::PARAMS`] ([`crate::param`]).
//!
//! * `limit` works as for `pie` (packets; the direction's `buffer` by default).
//! * `alpha` and `beta` are in Hz, as floats, as for `pie` (tc's integers are
//!   in 1/16 Hz; integers are refused as ambiguous).
//! * `ecn_prob` is tc's integer percentage (0..=100) or a string `"10%"`.
//! * Ranges are Linux's (`fq_pie_change`, `fq_pie_policy`): `flows` 1..=65536,
//!   `quantum` 1..=1048576 bytes, `memory_limit` a u32 of bytes (at least 1).
//! * l4slab extensions, as for `pie` and `fq_codel`: `max_burst` (alias
//!   `burst`; Linux fixes it at 150 ms) and `hash_seed`.

use toml::Value;

use l4slab_core::Rate;
use l4slab_qdisc::fq_pie::{
    ALPHA, BETA, BYTEMODE, DQ_RATE_ESTIMATOR, ECN, ECN_PROB, FLOWS, HASH_SEED, LIMIT, MAX_BURST,
    MEMORY_LIMIT, PARAMS, QUANTUM, TARGET, TUPDATE,
};
use l4slab_qdisc::FqPieConfig;

use super::params::packets_of;
use crate::error::ScenarioError;
use crate::model::{BufferLimit, QdiscSpec};
use crate::param::read_table;

pub(super) fn resolve(
    value: &Value,
    path: &str,
    buffer: BufferLimit,
    rate: Rate,
) -> Result<QdiscSpec, ScenarioError> {
    let mut cfg = FqPieConfig {
        limit: packets_of(buffer),
        ..FqPieConfig::default()
    };
    let Value::Table(table) = value else {
        return Ok(QdiscSpec::FqPie(cfg));
    };
    let v = read_table(table, path, PARAMS, Some(rate))?;
    let int = |p| v.get(p).map(|x| x.int());
    if let Some(n) = int(&LIMIT) {
        cfg.limit = n as u32;
    }
    if let Some(n) = int(&FLOWS) {
        cfg.flows = n as u32;
    }
    if let Some(x) = v.get(&TARGET) {
        cfg.target = x.dur();
    }
    if let Some(x) = v.get(&TUPDATE) {
        cfg.tupdate = x.dur();
    }
    if let Some(x) = v.get(&ALPHA) {
        cfg.alpha = x.num();
    }
    if let Some(x) = v.get(&BETA) {
        cfg.beta = x.num();
    }
    if let Some(n) = int(&QUANTUM) {
        cfg.quantum = n as u32;
    }
    if let Some(n) = int(&MEMORY_LIMIT) {
        cfg.memory_limit = n as u64;
    }
    if let Some(n) = int(&ECN_PROB) {
        cfg.ecn_prob = n as u32;
    }
    if let Some(x) = v.get(&ECN) {
        cfg.ecn = x.flag();
    }
    if let Some(x) = v.get(&BYTEMODE) {
        cfg.bytemode = x.flag();
    }
    if let Some(x) = v.get(&DQ_RATE_ESTIMATOR) {
        cfg.dq_rate_estimator = x.flag();
    }
    if let Some(x) = v.get(&MAX_BURST) {
        cfg.max_burst = x.dur();
    }
    if let Some(n) = int(&HASH_SEED) {
        cfg.hash_seed = n as u32;
    }
    Ok(QdiscSpec::FqPie(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::{Dur, Rate};

    const PATH: &str = "bottleneck.qdisc";

    fn table(text: &str) -> Value {
        let v: toml::Table = toml::from_str(&format!("q = {text}")).expect("toml");
        v["q"].clone()
    }

    fn cfg(text: &str) -> FqPieConfig {
        let v = table(text);
        match resolve(&v, PATH, BufferLimit::Packets(500), Rate::from_mbps(10)).expect("valid") {
            QdiscSpec::FqPie(c) => c,
            other => panic!("not fq_pie: {other:?}"),
        }
    }

    fn err(text: &str) -> String {
        let v = table(text);
        resolve(&v, PATH, BufferLimit::Packets(500), Rate::from_mbps(10))
            .expect_err("invalid")
            .to_string()
    }

    #[test]
    fn defaults_are_linux_with_the_buffer_as_limit() {
        let want = FqPieConfig {
            limit: 500,
            ..FqPieConfig::default()
        };
        assert_eq!(cfg(r#""fq_pie""#), want);
        assert_eq!(cfg(r#"{ kind = "fq_pie" }"#), want);
    }

    #[test]
    fn takes_every_tc_knob() {
        let c = cfg(concat!(
            r#"{ kind = "fq_pie", limit = 2000, flows = 64, target = "5ms", tupdate = "30ms", "#,
            r#"alpha = 0.25, beta = 2.5, quantum = 300, memory_limit = "4MiB", ecn_prob = 25, "#,
            r#"ecn = true, bytemode = true, dq_rate_estimator = true, burst = "0ms", hash_seed = 9 }"#,
        ));
        assert_eq!(
            c,
            FqPieConfig {
                limit: 2000,
                flows: 64,
                target: Dur::from_millis(5),
                tupdate: Dur::from_millis(30),
                alpha: 0.25,
                beta: 2.5,
                quantum: 300,
                memory_limit: 4 << 20,
                ecn_prob: 25,
                ecn: true,
                bytemode: true,
                dq_rate_estimator: true,
                max_burst: Dur::ZERO,
                hash_seed: 9,
                ..FqPieConfig::default()
            }
        );
        let c = cfg(r#"{ kind = "fq_pie", ecn_prob = "40%", quantum = "1KB", limit = "30KB" }"#);
        assert_eq!((c.ecn_prob, c.quantum, c.limit), (40, 1000, 20));
    }

    #[test]
    fn bad_values_name_the_key_and_show_an_example() {
        let cases = [
            (
                r#"{ kind = "fq_pie", flws = 5 }"#,
                "bottleneck.qdisc.flws: unknown key",
            ),
            (
                r#"{ kind = "fq_pie", flows = 0 }"#,
                "bottleneck.qdisc.flows: 0 is out of range",
            ),
            (r#"{ kind = "fq_pie", flows = 65537 }"#, "write e.g. 1024"),
            (
                r#"{ kind = "fq_pie", flows = "many" }"#,
                "bottleneck.qdisc.flows: expected an integer",
            ),
            (
                r#"{ kind = "fq_pie", quantum = 0 }"#,
                "bottleneck.qdisc.quantum: 0 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", quantum = "2MiB" }"#,
                "bottleneck.qdisc.quantum: 2097152 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", memory_limit = "8GiB" }"#,
                "bottleneck.qdisc.memory_limit: 8589934592 B is out of range",
            ),
            (
                r#"{ kind = "fq_pie", ecn_prob = 101 }"#,
                "bottleneck.qdisc.ecn_prob: 101 is out of range",
            ),
            (
                r#"{ kind = "fq_pie", ecn_prob = "12.5%" }"#,
                "not a whole percentage",
            ),
            (
                r#"{ kind = "fq_pie", alpha = 2 }"#,
                "bottleneck.qdisc.alpha: 2 is ambiguous",
            ),
            (
                r#"{ kind = "fq_pie", tupdate = "0ms" }"#,
                "bottleneck.qdisc.tupdate: must be greater than zero",
            ),
            (
                r#"{ kind = "fq_pie", target = 15 }"#,
                "bottleneck.qdisc.target: 15 has no unit",
            ),
            (
                r#"{ kind = "fq_pie", ecn = "yes" }"#,
                "bottleneck.qdisc.ecn: expected true or false",
            ),
            (
                r#"{ kind = "fq_pie", limit = 0 }"#,
                "bottleneck.qdisc.limit: 0 is out of range",
            ),
        ];
        for (text, want) in cases {
            let got = err(text);
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}
