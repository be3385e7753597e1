//! `ping`: periodic UDP echo probes (like `irtt` or Flent's UDP RTT tests;
//! `ping` itself uses ICMP, which crosses a bottleneck the same way).
//!
//! The client sends a probe of `size` payload bytes every `interval`, with the
//! configured IP-ECN codepoint; the server echoes it back with the same
//! codepoint (an echo server that sets its socket's TOS like the client).
//! Because the app sees both ends it also reports the one-way delays.
//! A probe is lost when its echo has not arrived `timeout` after it was sent;
//! probes still within their timeout at the end are not counted either way.

use serde_json::{json, Value};

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Ecn, Time};

use crate::{Datagram, FlowApp, FlowIo, Role, SampleSink};

/// Ping parameters (scenario `app = { kind = "ping", ... }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingConfig {
    /// Time between probes. Default 100 ms.
    pub interval: Dur,
    /// Payload bytes per probe. Default 64.
    pub size: u32,
    /// IP-ECN codepoint of probes and echoes. Default Not-ECT.
    pub ecn: Ecn,
    /// An echo later than this after its probe counts as lost. Default 1 s.
    pub timeout: Dur,
}

impl Default for PingConfig {
    fn default() -> Self {
        PingConfig {
            interval: Dur::from_millis(100),
            size: 64,
            ecn: Ecn::NotEct,
            timeout: Dur::from_secs(1),
        }
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
        let Some(p) = self.probes.get_mut(dg.tag as usize) else {
            panic!("ping: echo of probe {} that was never sent", dg.tag);
        };
        let ce = dg.ecn == Ecn::Ce;
        match side {
            // The echo server answers with the same codepoint it was configured with.
            Role::Server => {
                self.ce_requests += u64::from(ce);
                self.owd_up.record(now.saturating_since(p.sent));
                p.reflected = Some(now);
                io.send_datagram(Datagram {
                    ecn: self.cfg.ecn,
                    ..dg
                });
            }
            Role::Client => {
                self.ce_replies += u64::from(ce);
                assert!(p.echoed.is_none(), "probe {} echoed twice", dg.tag);
                p.echoed = Some(now);
                let rtt = now.saturating_since(p.sent);
                if rtt > self.cfg.timeout {
                    self.late += 1;
                }
                self.rtt.record(rtt);
                let reflected = p.reflected.expect("an echo was reflected by the server");
                self.owd_down.record(now.saturating_since(reflected));
            }
        }
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
