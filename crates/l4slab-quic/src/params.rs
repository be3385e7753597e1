//! The scenario keys the QUIC-style transport applies (`[flows.transport]`
//! of a `protocol = "quic"` flow), declared once as [`Param`]s
//! (l4slab_core::param) under the scenario's key names, with QUIC's meaning,
//! range, default and the RFC it comes from. [`ConnectionConfig::default`]
//! takes their defaults; the scenario (`l4slab-scenario`'s `quic.rs`) takes
//! its QUIC defaults and range checks from them; the table of
//! `docs/models/quic.md#scenario-transport-keys` is rendered from them
//! (`tests/docs_params.rs`). The keys QUIC has no setting for (TCP's
//! `min_rto`, `tlp`, ...) are the scenario's to refuse.
//!
//! [`ConnectionConfig::default`]: crate::ConnectionConfig

use l4slab_core::param::{Kind, Param, ParamValue, ECN_CODEPOINTS};
use l4slab_core::Dur;

/// `mss`: the maximum datagram size.
pub const MAX_DATAGRAM_SIZE: Param = Param {
    name: "mss",
    aliases: &[],
    linux: "max_datagram_size",
    kind: Kind::Int {
        min: 1200,
        max: 9000,
    },
    default: ParamValue::Int(1200),
    source: "RFC 9000 §14: the smallest allowed maximum datagram size",
    doc: "`max_datagram_size`: the UDP payload of a datagram, QUIC headers included, and the controller's unit (a 1500-byte MTU carries 1472; 9000: a jumbo frame)",
};

/// `initial_window`, in datagrams.
pub const INITIAL_WINDOW: Param = Param {
    name: "initial_window",
    aliases: &[],
    linux: "kInitialWindow",
    kind: Kind::Int {
        min: 2,
        max: u32::MAX as i64,
    },
    default: ParamValue::Unset { example: "10" },
    source:
        "RFC 9002 §7.2 for the datagram size: `min(10, max(14720 / mss, 2))`, 10 up to `mss = 1472`",
    doc: "initial congestion window in datagrams, at least kMinimumWindow (RFC 9002 §7.2)",
};

/// `delayed_ack`: ACK after 2 ack-eliciting packets, or every one.
pub const DELAYED_ACK: Param = Param {
    name: "delayed_ack",
    aliases: &[],
    linux: "ack_eliciting_threshold",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "RFC 9000 §13.2.2: after 2 ack-eliciting packets or `max_ack_delay`",
    doc: "`false`: `ack_eliciting_threshold = 1`, every ack-eliciting packet acknowledged at once",
};

/// `delayed_ack_timeout`: max_ack_delay.
pub const MAX_ACK_DELAY: Param = Param {
    name: "delayed_ack_timeout",
    aliases: &[],
    linux: "max_ack_delay",
    kind: Kind::Duration { zero_ok: false },
    default: ParamValue::Dur(Dur::from_millis(25)),
    source: "RFC 9000 §18.2",
    doc:
        "`max_ack_delay` of both ends (also in the PTO, RFC 9002 §6.2.1), below 2^14 ms = 16.384 s",
};

/// `pacing`: RFC 9002 §7.7 pacing.
pub const PACING: Param = Param {
    name: "pacing",
    aliases: &[],
    linux: "pacing",
    kind: Kind::Flag,
    default: ParamValue::Flag(true),
    source: "RFC 9002 §7.7: senders SHOULD pace",
    doc: "pace at `1.25·cwnd/srtt` when the controller has no rate; `false`: only `bbr` and `bbr3` pace (their own rate)",
};

/// `send_buffer`: each stream's.
pub const SEND_BUFFER: Param = Param {
    name: "send_buffer",
    aliases: &[],
    linux: "send_buffer",
    kind: Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    default: ParamValue::Int(4 << 20),
    source: "as TCP's `tcp_wmem[2]`",
    doc: "each stream's send buffer, its written and unacknowledged bytes (a bulk or file flow has one stream, a web page one per object); at least one datagram",
};

/// `ecn_codepoint`: the IP-ECN field of every packet.
pub const ECN_CODEPOINT: Param = Param {
    name: "ecn_codepoint",
    aliases: &[],
    linux: "ecn_codepoint",
    kind: Kind::Choice(ECN_CODEPOINTS),
    default: ParamValue::Unset {
        example: "\"ect1\"",
    },
    source: "the controller's: ECT(1) for `prague` and `dctcp`, ECT(0) otherwise",
    doc: "`\"ect0\"` / `\"ect1\"` on every packet instead of the controller's (its CE response stays its own), validated as RFC 9000 §13.4.2 says; `\"not_ect\"`: no ECT (as `ecn = \"off\"`)",
};

/// The `[flows.transport]` keys a QUIC flow applies, in the scenario's order.
pub const PARAMS: &[Param] = &[
    MAX_DATAGRAM_SIZE,
    INITIAL_WINDOW,
    DELAYED_ACK,
    MAX_ACK_DELAY,
    PACING,
    SEND_BUFFER,
    ECN_CODEPOINT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_in_range_and_the_connections() {
        for p in PARAMS {
            p.check(p.default).unwrap();
        }
        let c = crate::ConnectionConfig::default();
        assert_eq!(c.max_datagram_size as i64, MAX_DATAGRAM_SIZE.default.int());
        assert_eq!(c.max_ack_delay, MAX_ACK_DELAY.default.dur());
        assert!(c.max_ack_delay < crate::MAX_ACK_DELAY_LIMIT);
        assert_eq!(c.initial_window, None);
        assert_eq!(c.ecn_codepoint, None);
    }
}
