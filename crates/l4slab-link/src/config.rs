//! The keys of a link table in a scenario — `[bottleneck]` (and its
//! `[bottleneck.down]` / `[bottleneck.up]` overrides) and a host's access
//! link `[hosts.NAME.access]` — declared once ([`Param`]): each key's kind,
//! default, where the default comes from and its doc line. The scenario
//! layer (`l4slab-scenario`'s `link.rs`) accepts exactly these keys and
//! reads each by its declaration (`rate`, `buffer`, `qdisc` and `loss` by
//! their own readers: a rate or a trace table, a buffer in packets, bytes or
//! time, a qdisc's or loss model's table); the table of
//! docs/scenarios.md is rendered from [`PARAMS`] (checked by
//! `tests/docs_params.rs`).

use l4slab_core::param::{Kind, Param, ParamValue};

use crate::EcnRewrite;

/// `rate`: how fast the link serializes (required per direction).
pub const RATE: Param = Param::new(
    "rate",
    Kind::Custom(
        "a rate > 0 (`\"20Mbit\"`), or a cellular trace `{ trace = \"TMobile-LTE-short.down\" }` \
         ([models/trace.md](models/trace.md))",
    ),
    ParamValue::Unset {
        example: "\"20Mbit\"",
    },
    "required (per direction, after merging)",
    "the link rate (netem/tbf `rate`, mahimahi `mm-link`)",
);

/// `delay`: the one-way propagation delay (required per direction; an
/// access link has none: its delay is the host's `access_delay`).
pub const DELAY: Param = Param::new(
    "delay",
    Kind::Duration { zero_ok: true },
    ParamValue::Unset {
        example: "\"10ms\"",
    },
    "required (per direction, after merging); an access link's is the host's `access_delay`",
    "one-way propagation delay (netem `delay`)",
);

/// `buffer`: the queue limit (required per direction).
pub const BUFFER: Param = Param::new(
    "buffer",
    Kind::Custom(
        "packets `\"100pkt\"`, bytes `\"150KB\"` (≥ 1500 B) or time `\"50ms\"` \
         at that direction's rate ([below](#buffer))",
    ),
    ParamValue::Unset {
        example: "\"100pkt\"",
    },
    "required (per direction, after merging)",
    "the queue limit: the qdisc starts from it as its `limit`",
);

/// `qdisc`: the queue discipline.
pub const QDISC: Param = Param::new(
    "qdisc",
    Kind::Custom("a name or a table with `kind` ([below](#qdisc))"),
    ParamValue::Choice("fifo"),
    "a plain FIFO of `buffer` (tc `pfifo`/`bfifo`)",
    "the queue discipline",
);

/// `loss`: random loss on the wire.
pub const LOSS: Param = Param::new(
    "loss",
    Kind::Custom("a percentage, a fraction or a table with `kind` ([below](#loss))"),
    ParamValue::Unset { example: "\"1%\"" },
    "none: no random loss",
    "random loss of the packets that leave the queue (netem `loss`)",
);

/// `ecn_rewrite`: what the path does to the IP-ECN field ([`EcnRewrite`]).
pub const ECN_REWRITE: Param = Param::new(
    "ecn_rewrite",
    Kind::Choice(&EcnRewrite::NAMES),
    ParamValue::Choice("none"),
    "the field passes unchanged",
    "what the path does to ECN-capable packets, before the queue ([below](#ecn_rewrite))",
);

/// The keys of `[bottleneck]` and of its `down` / `up` tables.
pub const PARAMS: &[Param] = &[RATE, DELAY, BUFFER, QDISC, LOSS, ECN_REWRITE];

/// The keys of a host's access link and of its `down` / `up` tables: the
/// bottleneck's but `delay`.
pub const ACCESS_PARAMS: &[Param] = &[RATE, BUFFER, QDISC, LOSS, ECN_REWRITE];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_no_rewrite_and_a_fifo() {
        assert_eq!(
            EcnRewrite::from_name(ECN_REWRITE.default.choice()),
            Some(EcnRewrite::None)
        );
        assert_eq!(
            EcnRewrite::NAMES,
            ["none", "bleach", "remark", "drop_ect", "ce_all"]
        );
        assert_eq!(QDISC.example(), "\"fifo\"");
        for p in PARAMS {
            assert_eq!(p.check(p.default), Ok(()), "{}", p.name);
        }
        assert!(ACCESS_PARAMS.iter().all(|p| PARAMS.contains(p)));
        assert!(!ACCESS_PARAMS.contains(&DELAY));
    }
}
