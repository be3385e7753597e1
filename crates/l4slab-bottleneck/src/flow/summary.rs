//! A flow's entry in `summary.json` (`flows.<name>`; docs/results.md), in
//! every backend: one code, one set of keys. Every measurement key is
//! written by every backend; what a backend cannot measure is `null`.

use serde_json::{json, Map, Value};

use l4slab_core::stats::{round6, window_goodput_bps};
use l4slab_core::Time;

use super::{FlowKey, FlowRecorder};

/// What the flow is, written as given (`cc`, `client` and `server` only
/// when the backend knows them).
#[derive(Clone, Copy, Debug)]
pub struct FlowInfo<'a> {
    pub cc: Option<&'a str>,
    pub app: &'a str,
    /// `tcp`, `quic`, `rtp` or `udp`.
    pub transport: &'a str,
    /// The data goes server → client.
    pub down: bool,
    /// The hosts' names (a real endpoint: their addresses).
    pub client: Option<&'a str>,
    pub server: Option<&'a str>,
}

/// A count per direction of the path (`down` = server → client).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpDown {
    pub down: u64,
    pub up: u64,
}

impl UpDown {
    /// `data` for the data sender's direction, `ack` for the other
    /// (`down`: the data goes server → client).
    pub fn of_data(down: bool, data: u64, ack: u64) -> Self {
        if down {
            UpDown {
                down: data,
                up: ack,
            }
        } else {
            UpDown {
                down: ack,
                up: data,
            }
        }
    }
}

/// What the network did to the flow's packets (the backend that sees the
/// path: the simulator, the emulator's forwarder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathCounts {
    /// Packets each side sent (data and ACKs), when known.
    pub sent: Option<UpDown>,
    /// Packets each side sent that the network dropped.
    pub lost: UpDown,
}

/// The sending transport's whole-run counters (docs/results.md); `None`
/// where the transport has no such counter or the backend cannot read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportCounts {
    pub retransmits: Option<u64>,
    pub retransmitted_bytes: Option<u64>,
    pub losses_detected: Option<u64>,
    pub rto_count: Option<u64>,
    pub ce_marks_received: Option<u64>,
    pub ce_packets_fed_back: Option<u64>,
    pub ce_bytes_fed_back: Option<u64>,
    pub ecn_echo_events: Option<u64>,
    /// The negotiated ECN mode.
    pub ecn: Option<&'static str>,
    pub ecn_validation: Option<&'static str>,
    pub segments_sent: Option<u64>,
    pub data_segments_sent: Option<u64>,
    pub recovery_episodes: Option<u64>,
    pub spurious_retransmits: Option<u64>,
    pub tlp_probes: Option<u64>,
    pub tlp_recoveries: Option<u64>,
    pub dsacks_received: Option<u64>,
    pub undos: Option<u64>,
    pub spurious_rtos: Option<u64>,
    pub cwnd_final_bytes: Option<u64>,
    /// What the series' `cc_state` codes mean.
    pub cc_states: Option<&'static [&'static str]>,
}

/// The flow at the end of the run.
#[derive(Clone, Debug)]
pub struct FlowReport<'a> {
    pub info: FlowInfo<'a>,
    /// Application bytes delivered in order.
    pub delivered: u64,
    /// When the last byte of a finite transfer arrived.
    pub completion: Option<Time>,
    /// The end of the run.
    pub end: Time,
    pub path: Option<PathCounts>,
    pub transport: TransportCounts,
    /// What the application measured (`Null`: nothing).
    pub app_metrics: Value,
}

/// `lost` of `sent` packets in percent (0 when nothing was sent).
fn loss_pct(lost: u64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        round6(100.0 * lost as f64 / sent as f64)
    }
}

impl FlowRecorder {
    /// The flow's entry in `summary.json`; the backend may add keys of its
    /// own (`cc_options`, `rtt_source`, `error`, ...).
    pub fn summary(&self, r: &FlowReport<'_>) -> Map<String, Value> {
        let i = &r.info;
        let start = self.start;
        // Bytes delivered in the window over the flow's time in it.
        let until = r.completion.unwrap_or(r.end);
        let goodput = window_goodput_bps(
            r.delivered - self.delivered_at_window,
            start,
            self.window_start,
            until,
        );
        let t = &r.transport;
        // The data sender's packets, and the other side's (ACKs, requests).
        let lost = r.path.map(|p| {
            if i.down {
                (p.lost.down, p.lost.up)
            } else {
                (p.lost.up, p.lost.down)
            }
        });
        let sent = r.path.and_then(|p| p.sent.map(|s| (s, p.lost)));
        let mut v = json!({
            "app": i.app,
            "transport": i.transport,
            "direction": if i.down { "down" } else { "up" },
            "start_s": round6(start.as_secs_f64()),
            "bytes_delivered": r.delivered,
            "completion_s": r.completion.map(|c| round6(c.saturating_since(start).as_secs_f64())),
            "ack_packets_lost": lost.map(|l| l.1),
            // Per direction, data and ACKs alike: down = sent by the server.
            "packets_sent": sent.map(|(s, _)| json!({ "down": s.down, "up": s.up })),
            "packet_loss_pct": sent.map(|(s, l)| json!({
                "down": loss_pct(l.down, s.down),
                "up": loss_pct(l.up, s.up),
            })),
            "retransmits": t.retransmits,
            "retransmitted_bytes": t.retransmitted_bytes,
            "losses_detected": t.losses_detected,
            "rto_count": t.rto_count,
            // The receiver's count of the CE marks that reached it.
            "ce_marks_received": t.ce_marks_received,
            // What the feedback told the sender: marks (AccECN counts them all) and ECN reductions.
            "ce_packets_fed_back": t.ce_packets_fed_back,
            "ce_bytes_fed_back": t.ce_bytes_fed_back,
            "ecn_echo_events": t.ecn_echo_events,
            "ecn": t.ecn,
            "ecn_validation": t.ecn_validation,
            "segments_sent": t.segments_sent,
            "data_segments_sent": t.data_segments_sent,
            "recovery_episodes": t.recovery_episodes,
            "spurious_retransmits": t.spurious_retransmits,
            // Linux loss recovery (docs/models/transport.md).
            "tlp_probes": t.tlp_probes,
            "tlp_recoveries": t.tlp_recoveries,
            "dsacks_received": t.dsacks_received,
            "undos": t.undos,
            "spurious_rtos": t.spurious_rtos,
            "cwnd_final_bytes": t.cwnd_final_bytes,
            "cc_states": t.cc_states,
        });
        // The series' names where the summary has the same quantity.
        v[FlowKey::GoodputBps.name()] = goodput.round().into();
        v[FlowKey::RttMs.name()] = self.rtt.summary_ms();
        v[FlowKey::LostPackets.name()] = lost.map(|l| l.0).into();
        for (k, x) in [("cc", i.cc), ("client", i.client), ("server", i.server)] {
            if let Some(x) = x {
                v[k] = x.into();
            }
        }
        if !r.app_metrics.is_null() {
            v["app_metrics"] = r.app_metrics.clone();
        }
        match v {
            Value::Object(m) => m,
            _ => unreachable!("a JSON object"),
        }
    }
}
