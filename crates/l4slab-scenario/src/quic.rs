//! `[flows.transport]` of a `protocol = "quic"` flow: what each key means
//! to l4slab's QUIC-style transport (`l4slab-quic`, docs/models/quic.md),
//! QUIC's defaults, the refusal of what it does not have, and the
//! [`ConnectionConfig`] a flow's connection is built with.
//!
//! [`KEYS`] declares every key of [`TransportSpec`] but `protocol` once:
//! either QUIC applies it, with the meaning QUIC's own parameter has
//! (`mss` is the maximum datagram size, RFC 9000 §14; `initial_window`
//! counts datagrams, RFC 9002 §7.2; `delayed_ack_timeout` is max_ack_delay,
//! RFC 9000 §18.2; `pacing` switches RFC 9002 §7.7 pacing), or QUIC has no
//! such setting and does what the key's QUIC default says; a value other
//! than that is refused with the key path ([`check`]). A key left out or
//! written with QUIC's default is fine, so a transport table shared with TCP
//! runs that keeps the defaults still resolves.
//!
//! What QUIC applies is declared with the connection's config
//! ([`l4slab_quic::params::PARAMS`]: range, default and its RFC, doc); its
//! ranges and defaults are taken from there.
//!
//! The resolved scenario records what QUIC does: a QUIC flow's transport
//! starts from [`defaults`] (`mss = 1200`, `pacing = true`,
//! `delayed_ack_timeout = "25ms"`, `undo = false`, `dsack = false`), not
//! TCP's; the keys QUIC has no use for keep TCP's defaults there.

use l4slab_core::param::{FromParam, Kind, Param};
use l4slab_core::Ecn;
use l4slab_quic::params as q;
use l4slab_quic::{default_initial_window, ConnectionConfig, MAX_ACK_DELAY_LIMIT};

use crate::error::{Problem, ScenarioError};
use crate::model::{CcSpec, Protocol, TransportSpec};
use crate::values::{join, show_dur};

/// `mss` for QUIC, the maximum datagram size: RFC 9000 §14's smallest
/// allowed (1200) to a 9000-byte jumbo frame's UDP payload
/// ([`q::MAX_DATAGRAM_SIZE`]'s range).
pub const MSS_RANGE: (i64, i64) = int_range(&q::MAX_DATAGRAM_SIZE);

/// The range of an integer parameter.
const fn int_range(p: &Param) -> (i64, i64) {
    match p.kind {
        Kind::Int { min, max } => (min, max),
        _ => panic!("not an integer parameter"),
    }
}

/// How the QUIC-style transport treats a `[flows.transport]` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuicUse {
    /// Applied, with this meaning.
    Applied(&'static str),
    /// QUIC has no such setting; why, for the refusal of a value other than
    /// QUIC's default.
    Refused(&'static str),
}

/// One `[flows.transport]` key as QUIC sees it.
#[derive(Clone, Copy, Debug)]
pub struct QuicKey {
    pub key: &'static str,
    pub quic: QuicUse,
    /// The key's value differs between two specs.
    differs: fn(&TransportSpec, &TransportSpec) -> bool,
}

impl QuicKey {
    /// Whether the key's value differs between `a` and `b`.
    pub fn differs(&self, a: &TransportSpec, b: &TransportSpec) -> bool {
        (self.differs)(a, b)
    }
}

macro_rules! key {
    ($field:ident, $use:expr) => {
        QuicKey {
            key: stringify!($field),
            quic: $use,
            differs: |a, b| a.$field != b.$field,
        }
    };
}

/// Every key of [`TransportSpec`] but `protocol`, in its order.
pub const KEYS: &[QuicKey] = &[
    key!(
        mss,
        QuicUse::Applied(
            "max_datagram_size: the UDP payload of a datagram, QUIC headers \
             included, and the controller's unit (RFC 9000 §14, RFC 9002 §7.2); \
             1200..=9000, default 1200"
        )
    ),
    key!(
        initial_window,
        QuicUse::Applied(
            "the initial congestion window in datagrams (RFC 9002 §7.2); default \
             min(10, max(14720 / mss, 2)): 10 up to mss = 1472; at least 2 \
             (kMinimumWindow)"
        )
    ),
    key!(
        delayed_ack,
        QuicUse::Applied(
            "true: an ACK after 2 ack-eliciting packets or max_ack_delay \
             (RFC 9000 §13.2.2); false: every ack-eliciting packet is \
             acknowledged at once"
        )
    ),
    key!(
        delayed_ack_timeout,
        QuicUse::Applied(
            "max_ack_delay (RFC 9000 §13.2.1, §18.2) of both ends, also in the \
             PTO; default 25 ms, below 16.384 s"
        )
    ),
    key!(
        min_rto,
        QuicUse::Refused(
            "QUIC has no retransmission timeout; its probe timeout (RFC 9002 \
             §6.2) is srtt + max(4·rttvar, 1 ms) + max_ack_delay, with no minimum"
        )
    ),
    key!(
        rto_formula,
        QuicUse::Refused(
            "QUIC has no retransmission timeout; its probe timeout is RFC 9002 \
             §6.2's srtt + max(4·rttvar, 1 ms) + max_ack_delay"
        )
    ),
    key!(
        tlp,
        QuicUse::Refused(
            "QUIC's probe timeout (RFC 9002 §6.2) always probes for a tail loss; \
             it cannot be turned off"
        )
    ),
    key!(
        frto,
        QuicUse::Refused(
            "QUIC has no retransmission timeout to detect as spurious: a probe \
             timeout declares nothing lost (RFC 9002 §6.2)"
        )
    ),
    key!(
        undo,
        QuicUse::Refused(
            "RFC 9002 has no undo: a window reduction stays even when its loss \
             proves spurious (the flow counts those as spurious_retransmits)"
        )
    ),
    key!(
        dsack,
        QuicUse::Refused(
            "QUIC has no D-SACK: a retransmission takes a new packet number, so \
             an acknowledged original shows a spurious loss without one"
        )
    ),
    key!(
        pacing,
        QuicUse::Applied(
            "RFC 9002 §7.7 pacing at 1.25·cwnd/srtt; default true (§7.7: \
             senders SHOULD pace); false: only a controller with its own rate \
             (bbr, bbr3) paces, as over TCP"
        )
    ),
    key!(
        send_buffer,
        QuicUse::Applied(
            "each stream's send buffer: its written, unacknowledged bytes (a \
             bulk or file flow has one stream, a web page one per object)"
        )
    ),
    key!(
        notsent_lowat,
        QuicUse::Refused(
            "the QUIC-style transport has no not-sent low-water mark: a stream's \
             writes are bounded by send_buffer only"
        )
    ),
    key!(
        receive_buffer,
        QuicUse::Refused(
            "QUIC's receive windows are its flow control (RFC 9000 §4): \
             initial_max_data = 16 MiB and initial_max_stream_data = 4 MiB per \
             stream, not set from the scenario"
        )
    ),
    key!(
        ecn_codepoint,
        QuicUse::Applied(
            "the IP-ECN field of every packet, as over TCP: ect0 or ect1 instead of \
             the controller's codepoint (ECT(1) for prague and dctcp, ECT(0) \
             otherwise; its response to CE stays its own), validated as RFC 9000 \
             §13.4.2 says; not_ect sends no ECT (as the flow's ecn = \"off\")"
        )
    ),
    key!(
        fastopen,
        QuicUse::Refused(
            "QUIC's counterpart is 0-RTT (RFC 9000 §7.4.1), which scenario flows \
             do not use"
        )
    ),
];

/// A QUIC flow's transport before its keys are read: TCP's defaults with
/// what QUIC does instead where the key means something to it (the
/// declared QUIC defaults, [`l4slab_quic::params`], which
/// [`ConnectionConfig::default`] takes too).
pub fn defaults() -> TransportSpec {
    let mss = u64::from_param(q::MAX_DATAGRAM_SIZE.default);
    TransportSpec {
        mss: u32::try_from(mss).expect("1200"),
        initial_window: u32::try_from(default_initial_window(mss)).expect("at most 10"),
        delayed_ack: q::DELAYED_ACK.default.flag(),
        delayed_ack_timeout: q::MAX_ACK_DELAY.default.dur(),
        pacing: q::PACING.default.flag(),
        send_buffer: u64::from_param(q::SEND_BUFFER.default),
        undo: false,
        dsack: false,
        protocol: Protocol::Quic,
        ..TransportSpec::default()
    }
}

/// `mss` of a QUIC flow at `path`: its maximum datagram size, in [`MSS_RANGE`].
pub(crate) fn mss(value: i64, path: &str) -> Result<u32, ScenarioError> {
    if value < MSS_RANGE.0 || value > MSS_RANGE.1 {
        return Err(ScenarioError::invalid(
            path,
            Problem::BadValue,
            format!(
                "{value} is out of range for protocol = \"quic\", where mss is the maximum \
                 datagram size (the UDP payload): between {} (RFC 9000 §14) and {}",
                MSS_RANGE.0, MSS_RANGE.1
            ),
            Some("1472".into()),
        ));
    }
    Ok(value as u32)
}

/// Check a QUIC flow's resolved transport `t` at `path` (`flows[0].transport`):
/// the ranges QUIC puts on the keys it applies, and no refused key with a
/// value other than QUIC's default.
pub(crate) fn check(t: &TransportSpec, path: &str) -> Result<(), ScenarioError> {
    let p = |key: &str| join(path, key);
    mss(i64::from(t.mss), &p("mss"))?;
    let min_window = int_range(&q::INITIAL_WINDOW).0;
    if i64::from(t.initial_window) < min_window {
        return Err(ScenarioError::invalid(
            &p("initial_window"),
            Problem::BadValue,
            format!(
                "{} datagram is below QUIC's minimum window of {min_window} datagrams \
                 (RFC 9002 §7.2 kMinimumWindow)",
                t.initial_window
            ),
            Some(q::INITIAL_WINDOW.example()),
        ));
    }
    if t.delayed_ack_timeout >= MAX_ACK_DELAY_LIMIT {
        return Err(ScenarioError::invalid(
            &p("delayed_ack_timeout"),
            Problem::BadValue,
            format!(
                "{} is QUIC's max_ack_delay here and must be below 2^14 ms = 16.384 s \
                 (RFC 9000 §18.2)",
                show_dur(t.delayed_ack_timeout)
            ),
            Some(q::MAX_ACK_DELAY.example()),
        ));
    }
    let quic = defaults();
    for k in KEYS {
        if let QuicUse::Refused(why) = k.quic {
            if k.differs(t, &quic) {
                return Err(ScenarioError::invalid(
                    &p(k.key),
                    Problem::Conflict,
                    format!("not used by protocol = \"quic\": {why}; remove the key, or run the flow over TCP"),
                    Some(format!(
                        "transport = {{ protocol = \"tcp\", {} = {} }}",
                        k.key,
                        tcp_example(k.key)
                    )),
                ));
            }
        }
    }
    Ok(())
}

/// A value of `key` that only TCP takes, for the refusal's example.
fn tcp_example(key: &str) -> String {
    match key {
        "tlp" | "frto" => "false",
        "undo" | "dsack" => "true",
        "min_rto" => r#""1s""#,
        "rto_formula" => r#""rfc6298""#,
        "notsent_lowat" => r#""128KiB""#,
        "receive_buffer" => r#""1MiB""#,
        "fastopen" => "true",
        _ => unreachable!("{key} is applied by QUIC"),
    }
    .into()
}

/// The connection of a QUIC flow whose congestion control is `cc` and
/// transport `t` (checked by [`check`]); `ecn` as the flow asks, `seed` for
/// its connection IDs. Both ends are built from it.
pub fn connection_config(cc: &CcSpec, t: &TransportSpec, ecn: bool, seed: u64) -> ConnectionConfig {
    debug_assert_eq!(t.protocol, Protocol::Quic);
    ConnectionConfig {
        max_datagram_size: t.mss as usize,
        initial_window: Some(u64::from(t.initial_window)),
        // `not_ect` on the packets is ECN off (nothing to validate).
        ecn: ecn && t.ecn_codepoint != Some(Ecn::NotEct),
        ecn_codepoint: t.ecn_codepoint.filter(|e| *e != Ecn::NotEct),
        pacing: t.pacing,
        max_ack_delay: t.delayed_ack_timeout,
        ack_eliciting_threshold: if t.delayed_ack {
            ConnectionConfig::default().ack_eliciting_threshold
        } else {
            1
        },
        send_buffer: t.send_buffer,
        seed,
        // The flow's controller with its options, as the TCP model builds it.
        ..ConnectionConfig::with_cc_options(cc.options.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_key_but_protocol_is_declared_once_in_order() {
        let json = serde_json::to_value(TransportSpec::default()).unwrap();
        let fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "protocol")
            .collect();
        let declared: Vec<&str> = KEYS.iter().map(|k| k.key).collect();
        let mut sorted = fields.clone();
        sorted.sort_unstable();
        let mut declared_sorted = declared.clone();
        declared_sorted.sort_unstable();
        assert_eq!(declared_sorted, sorted);
        for k in KEYS {
            if matches!(k.quic, QuicUse::Refused(_)) {
                assert!(!tcp_example(k.key).is_empty());
            }
        }
    }

    #[test]
    fn quics_defaults_pass_and_are_the_connections() {
        let d = defaults();
        check(&d, "flows[0].transport").unwrap();
        let cfg = connection_config(&CcSpec::named("cubic").unwrap(), &d, true, 7);
        let def = ConnectionConfig::default();
        assert_eq!(cfg.max_datagram_size, def.max_datagram_size);
        assert_eq!(cfg.initial_window, Some(default_initial_window(1200)));
        assert_eq!(cfg.max_ack_delay, def.max_ack_delay);
        assert_eq!(cfg.ack_eliciting_threshold, def.ack_eliciting_threshold);
        assert_eq!((cfg.pacing, cfg.send_buffer), (def.pacing, def.send_buffer));
        assert_eq!(cfg.cc, "cubic");
    }
}
