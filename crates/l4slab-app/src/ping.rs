//! `ping`: periodic UDP echo probes (like `irtt` or Flent's UDP RTT tests;
//! `ping` itself uses ICMP, which crosses a bottleneck the same way).
//!
//! The client sends a probe of `size` payload bytes every `interval`, with the
//! configured IP-ECN codepoint; the server echoes it back with the same
//! codepoint (an echo server that sets its socket's TOS like the client).
//! Because the app sees both ends it also reports the one-way delays.
//! A probe is lost when its echo has not arrived `timeout` after it was sent;
//! probes still within their timeout at the end are not counted either way.

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::param::{FromParam, Kind, Param, ParamValue, ECN_CODEPOINTS};
use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Ecn, Time};

use crate::registry::{AppKind, BuildContext};
use crate::{Datagram, DatagramsIgnored, FlowApp, FlowIo, Role, SampleSink};

pub const INTERVAL: Param = Param::new(
    "interval",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_millis(100)),
    "a choice: ten probes a second",
    "time between probes",
)
.linux_name("irtt -i");

/// The largest payload of one 1500 B IPv4 packet: 1500 - 20 (IP) - 8 (UDP).
const MAX_PAYLOAD: u64 = 1472;

pub const SIZE: Param = Param::new(
    "size",
    Kind::Size {
        min: 0,
        max: MAX_PAYLOAD,
    },
    ParamValue::Int(64),
    "`ping`'s 64 B ICMP echo (56 B of data and its 8 B header)",
    "UDP payload per probe (at most one 1500 B packet with IPv4 + UDP headers)",
)
.linux_name("ping -s");

pub const ECN: Param = Param::new(
    "ecn",
    Kind::Choice(ECN_CODEPOINTS),
    ParamValue::Choice("not_ect"),
    "`ping` and `irtt` send Not-ECT unless told otherwise",
    "codepoint of probes and echoes (e.g. `\"ect1\"` to ride DualPI2's L queue)",
)
.linux_name("ping -Q");

pub const TIMEOUT: Param = Param::new(
    "timeout",
    Kind::Duration { zero_ok: false },
    ParamValue::Dur(Dur::from_secs(1)),
    "a choice",
    "an echo later than this after its probe counts as lost",
)
.linux_name("ping -W");

/// `app = { kind = "ping", ... }` (docs/apps.md#ping).
pub const PARAMS: &[Param] = &[INTERVAL, SIZE, ECN, TIMEOUT];

/// Ping parameters (scenario `app = { kind = "ping", ... }`; [`PARAMS`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PingConfig {
    /// [`INTERVAL`].
    pub interval: Dur,
    /// [`SIZE`]: payload bytes per probe.
    pub size: u32,
    /// [`ECN`].
    pub ecn: Ecn,
    /// [`TIMEOUT`].
    pub timeout: Dur,
}

impl Default for PingConfig {
    fn default() -> Self {
        PingConfig {
            interval: INTERVAL.default.dur(),
            size: FromParam::from_param(SIZE.default),
            ecn: FromParam::from_param(ECN.default),
            timeout: TIMEOUT.default.dur(),
        }
    }
}

l4slab_core::param_fields!(PingConfig {
    interval = INTERVAL,
    size = SIZE,
    ecn = ECN,
    timeout = TIMEOUT,
});

impl AppKind for PingConfig {
    const NAME: &'static str = "ping";
    const WHAT: &'static str = "UDP echo probes";
    const EXAMPLE: &'static str = r#"app = { kind = "ping", interval = "100ms" }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, _: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(Ping::new(*self))
    }
}

fn dur_stats() -> DurStats {
    // µs resolution up to 1000 s.
    DurStats::new(1_000, 1_000_000_000)
}

/// Probe `i`: when it was sent, and whether (and when) it came back.
#[derive(Clone, Copy, Debug)]
struct Probe {
    sent: Time,
    /// When the server echoed it.
    reflected: Option<Time>,
    echoed: Option<Time>,
}

#[derive(Debug)]
pub struct Ping {
    cfg: PingConfig,
    probes: Vec<Probe>,
    rtt: DurStats,
    owd_up: DurStats,
    owd_down: DurStats,
    late: u64,
    ce_requests: u64,
    ce_replies: u64,
    ignored: DatagramsIgnored,
}

impl Ping {
    pub fn new(cfg: PingConfig) -> Self {
        assert!(cfg.interval > Dur::ZERO, "ping interval must be positive");
        Ping {
            cfg,
            probes: Vec::new(),
            rtt: dur_stats(),
            owd_up: dur_stats(),
            owd_down: dur_stats(),
            late: 0,
            ce_requests: 0,
            ce_replies: 0,
            ignored: DatagramsIgnored::default(),
        }
    }

    fn probe(&mut self, now: Time, io: &mut dyn FlowIo) {
        io.send_datagram(Datagram {
            payload: self.cfg.size,
            ecn: self.cfg.ecn,
            tag: self.probes.len() as u64,
        });
        self.probes.push(Probe {
            sent: now,
            reflected: None,
            echoed: None,
        });
        io.wake_at(now + self.cfg.interval);
    }

    /// Probes answered, lost (no echo within the timeout by `end`), and
    /// still pending at `end`.
    fn outcome(&self, end: Time) -> (u64, u64, u64) {
        let (mut ok, mut lost, mut pending) = (0, 0, 0);
        for p in &self.probes {
            match p.echoed {
                Some(at) if at.saturating_since(p.sent) <= self.cfg.timeout => ok += 1,
                Some(_) => lost += 1,
                None if end.saturating_since(p.sent) >= self.cfg.timeout => lost += 1,
                None => pending += 1,
            }
        }
        (ok, lost, pending)
    }
}

impl FlowApp for Ping {
    fn kind(&self) -> &'static str {
        "ping"
    }
    fn uses_connection(&self) -> bool {
        false
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == Role::Client {
            self.probe(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == Role::Client {
            self.probe(now, io);
        }
    }
    fn on_datagram(&mut self, now: Time, side: Role, dg: Datagram, io: &mut dyn FlowIo) {
        // Network input: a probe or echo the flow did not send is counted
        // and ignored (`datagrams_ignored`), never trusted.
        let Some(p) = usize::try_from(dg.tag)
            .ok()
            .and_then(|i| self.probes.get_mut(i))
        else {
            self.ignored.unknown += 1;
            return;
        };
        let ce = dg.ecn == Ecn::Ce;
        match side {
            // The echo server answers with the same codepoint it was
            // configured with, once per probe.
            Role::Server => {
                if p.reflected.is_some() {
                    self.ignored.duplicate += 1;
                    return;
                }
                self.ce_requests += u64::from(ce);
                self.owd_up.record(now.saturating_since(p.sent));
                p.reflected = Some(now);
                io.send_datagram(Datagram {
                    ecn: self.cfg.ecn,
                    ..dg
                });
            }
            Role::Client => {
                // An echo the server never sent is not one.
                let Some(reflected) = p.reflected else {
                    self.ignored.unknown += 1;
                    return;
                };
                if p.echoed.is_some() {
                    self.ignored.duplicate += 1;
                    return;
                }
                self.ce_replies += u64::from(ce);
                p.echoed = Some(now);
                let rtt = now.saturating_since(p.sent);
                if rtt > self.cfg.timeout {
                    self.late += 1;
                }
                self.rtt.record(rtt);
                self.owd_down.record(now.saturating_since(reflected));
            }
        }
    }
    fn datagrams_ignored(&self) -> DatagramsIgnored {
        self.ignored
    }
    fn report(&self, end: Time) -> Value {
        let (ok, lost, pending) = self.outcome(end);
        let counted = ok + lost;
        json!({
            "probes_sent": self.probes.len(),
            "replies": ok,
            "lost": lost,
            "late_replies": self.late,
            "pending_at_end": pending,
            "loss_pct": if counted > 0 { round6(100.0 * lost as f64 / counted as f64) } else { 0.0 },
            "rtt_ms": self.rtt.summary_ms(),
            "owd_up_ms": self.owd_up.summary_ms(),
            "owd_down_ms": self.owd_down.summary_ms(),
            "ce_marked_probes": self.ce_requests,
            "ce_marked_replies": self.ce_replies,
            "interval_ms": round6(self.cfg.interval.as_millis_f64()),
            "size_bytes": self.cfg.size,
        })
    }
    fn sample(&mut self, _now: Time, _interval: Dur, out: &mut SampleSink<'_>) {
        if let Some((mean, max)) = self.rtt.take_interval() {
            out("ping_rtt_ms", mean);
            out("ping_rtt_max_ms", max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn dg(tag: u64) -> Datagram {
        Datagram {
            payload: 64,
            ecn: Ecn::NotEct,
            tag,
        }
    }

    /// Probe 0 sent at 0, reflected at 10 ms, echoed at 20 ms; then what
    /// the network might add: a probe never sent (at either end), the probe
    /// again at the server, the echo again, and an echo of probe 1 that the
    /// server never reflected. Each is counted and ignored: the server
    /// echoes probe 0 once, and the client's RTT is the first echo's.
    #[test]
    fn unexpected_probes_and_echoes_are_counted_and_ignored() {
        let mut app = Ping::new(PingConfig::default());
        let mut s = Script::new();
        let ms = Time::from_millis;
        s.connected(&mut app, ms(0), Role::Client);
        s.timer(&mut app, ms(100), Role::Client); // probe 1
        app.on_datagram(ms(10), Role::Server, dg(0), s.sock(Role::Server));
        app.on_datagram(ms(20), Role::Client, dg(0), s.sock(Role::Client));
        app.on_datagram(ms(21), Role::Server, dg(7), s.sock(Role::Server));
        app.on_datagram(ms(21), Role::Client, dg(u64::MAX), s.sock(Role::Client));
        app.on_datagram(ms(22), Role::Server, dg(0), s.sock(Role::Server));
        app.on_datagram(ms(23), Role::Client, dg(0), s.sock(Role::Client));
        app.on_datagram(ms(24), Role::Client, dg(1), s.sock(Role::Client));
        assert_eq!(s.sock(Role::Server).datagrams, [dg(0)]);
        assert_eq!(
            app.datagrams_ignored(),
            DatagramsIgnored {
                unknown: 3,
                duplicate: 2,
                ..DatagramsIgnored::default()
            }
        );
        let r = app.report(ms(1000));
        assert_eq!(
            (r["probes_sent"].as_u64(), r["replies"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(r["rtt_ms"]["max"], 20.0, "{r}");
    }
}
