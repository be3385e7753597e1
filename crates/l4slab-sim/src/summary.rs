//! The end of a run: packet conservation check and `summary.json`.

use serde_json::{json, Map};

use l4slab_core::stats::window_goodput_bps;
use l4slab_core::Time;
use l4slab_scenario::{AppSpec, Direction};

use crate::engine::{Sim, CLIENT, SERVER};
use crate::recorder::round6;
use crate::{RunOutput, RunStats, RESULTS_FORMAT_VERSION, TOOL_VERSION};

impl Sim<'_> {
    /// Packets still in the network: queued, being serialized or propagating.
    fn in_network(&self) -> u64 {
        self.segs.live() as u64
    }

    /// Every packet created was delivered, dropped with a reason, or is still
    /// in the network at the end (DESIGN "nothing lost").
    fn check_conservation(&self) {
        let dropped: u64 = self.counts.dropped.iter().sum();
        assert_eq!(
            self.counts.created,
            self.counts.delivered + dropped + self.in_network(),
            "packet conservation violated: {:?}, in network {}",
            self.counts,
            self.in_network()
        );
        self.bn.check_accounting();
    }

    /// Numbers drawn from every seeded stream of the run: each link's loss and
    /// qdisc streams and each flow's.
    fn random_draws(&self) -> u64 {
        let flows: u64 = self.flows.iter().map(|fl| fl.rng.draws()).sum();
        self.bn.random_draws() + flows
    }

    pub fn finish(mut self) -> RunOutput {
        self.check_conservation();
        for fl in &mut self.flows {
            fl.sync_app_delivery();
        }
        let end = self.scn.duration;
        // The measurement window (docs/results.md): `[warmup, end]`.
        let warmup = Time::ZERO + self.scn.warmup;
        let mut flows = Map::new();
        for (f, (fl, spec)) in self.flows.iter().zip(&self.scn.flows).enumerate() {
            let sender = &fl.eps[fl.sender].ep;
            let st = sender.stats();
            // The receiving endpoint counts the CE marks that reached it.
            let receiver = fl.eps[1 - fl.sender].ep.stats();
            // Bytes delivered in the window over the flow's time in it.
            let until = fl.completion.unwrap_or(end);
            let goodput = window_goodput_bps(
                fl.delivered - fl.delivered_at_warmup,
                fl.start,
                warmup,
                until,
            );
            let rec = &self.rec.flows[f];
            let mut entry = json!({
                    // An RTP app's congestion control is its media controller.
                    "cc": spec.app.media_cc().unwrap_or(&spec.cc.kind),
                    "app": spec.app.kind(),
                    // Datagram apps (ping) use no connection and no congestion control.
                    "transport": if spec.app.is_rtp() {
                        "rtp"
                    } else if spec.transport.protocol == l4slab_scenario::Protocol::Quic {
                        "quic"
                    } else if fl.app.uses_connection() {
                        "tcp"
                    } else {
                        "udp"
                    },
                    "direction": match spec.direction { Direction::Down => "down", Direction::Up => "up" },
                    "client": self.scn.hosts[spec.client].name,
                    "server": self.scn.hosts[spec.server].name,
                    "start_s": round6(fl.start.as_secs_f64()),
                    "goodput_bps": goodput.round(),
                    "bytes_delivered": fl.delivered,
                    "completion_s": fl.completion.map(|t| round6(t.saturating_since(fl.start).as_secs_f64())),
                    "rtt_ms": rec.rtt.summary_ms(),
                    "retransmits": st.retransmits,
                    "retransmitted_bytes": st.bytes_retransmitted,
                    "lost_packets": fl.lost_pkts[fl.sender],
                    "ack_packets_lost": fl.lost_pkts[1 - fl.sender],
                    // Per direction, data and ACKs alike: down = sent by the server.
                    "packets_sent": { "down": fl.sent_pkts[SERVER], "up": fl.sent_pkts[CLIENT] },
                    "packet_loss_pct": {
                        "down": loss_pct(fl.lost_pkts[SERVER], fl.sent_pkts[SERVER]),
                        "up": loss_pct(fl.lost_pkts[CLIENT], fl.sent_pkts[CLIENT]),
                    },
                    "losses_detected": st.lost_segments,
                    "rto_count": st.rto_count,
                    "ce_marks_received": receiver.ce_marks_received,
                    // What the feedback told the sender: marks (AccECN counts them all) and ECN reductions.
                    "ce_packets_fed_back": st.ce_packets_fed_back,
                    "ce_bytes_fed_back": st.ce_bytes_fed_back,
                    "ecn_echo_events": st.ecn_echo_events,
                    "ecn": st.ecn_mode.name(),
                    "ecn_validation": st.ecn_validation.name(),
                    "segments_sent": st.segments_sent,
                    "data_segments_sent": st.data_segments_sent,
                    "recovery_episodes": st.fast_recovery_episodes,
                    "spurious_retransmits": st.spurious_retransmits,
                    // Linux loss recovery (docs/models/transport.md).
                    "tlp_probes": st.tlp_probes,
                    "tlp_recoveries": st.tlp_recoveries,
                    "dsacks_received": st.dsacks_received,
                    "undos": st.undos,
                    "spurious_rtos": st.spurious_rtos,
                    "cwnd_final_bytes": sender.cc_metrics().cwnd,
                    // What the series' `cc_state` codes mean.
                    "cc_states": sender.cc().states(),
            });
            // An app with its own transport (QUIC) reports its sender's.
            if let Some(own) = fl.app.own_transport_summary() {
                for (k, v) in own {
                    entry[k.as_str()] = v;
                }
            }
            if spec.cc.has_options() {
                entry["cc_options"] = json!(spec.cc.options);
            }
            // What the application measured (frame latency, stalls, probe RTT, ...).
            let app = fl.app.report(end);
            if !app.is_null() {
                entry["app_metrics"] = app;
            }
            flows.insert(spec.name.clone(), entry);
        }
        // A web object fetched on a new connection is also listed with its page.
        for spec in &self.scn.flows {
            if let AppSpec::Web(w) = &spec.app {
                if let Some(page) = &w.page {
                    let part = flows[&spec.name]["app_metrics"].clone();
                    let into = &mut flows
                        .get_mut(&page.flow)
                        .expect("a split-off web flow's page is a flow")["app_metrics"];
                    l4slab_app::web::merge_into_page(into, &part);
                }
            }
        }
        let flow_names: Vec<&str> = self.scn.flows.iter().map(|f| f.name.as_str()).collect();
        let queues = self
            .bn
            .queues_json(end.saturating_since(warmup), &flow_names);
        let dropped: u64 = self.counts.dropped.iter().sum();
        let summary = json!({
            "format_version": RESULTS_FORMAT_VERSION,
            "tool_version": TOOL_VERSION,
            "backend": "sim",
            "seed": self.seed,
            // Until a run's first random draw nothing depends on the seed, so
            // 0 means every seed gives these results (l4slab_core::rng).
            "random_draws": self.random_draws(),
            "duration_s": round6(end.as_secs_f64()),
            // What the windowed metrics cover (docs/results.md).
            "window_s": [round6(warmup.as_secs_f64()), round6(end.as_secs_f64())],
            "scenario": serde_json::to_value(self.scn).expect("scenario serializes"),
            "flows": flows,
            "queues": queues,
            "packets": {
                "created": self.counts.created,
                "delivered": self.counts.delivered,
                "dropped": dropped,
                "in_network_at_end": self.in_network(),
            },
            "events": self.events,
        });
        let mut summary = summary;
        if let Some(w) = self.bn.wifi_json(end.saturating_since(warmup)) {
            summary["wifi"] = w;
        }
        let stats = RunStats {
            events: self.events,
            packets: self.counts.created,
            sim_time: Time::ZERO + end.saturating_since(Time::ZERO),
        };
        RunOutput {
            summary,
            series: self.series,
            // Handed to the sink during the run (`crate::run_streaming`).
            packets: None,
            // Closed by `crate::run_streaming`.
            pcap_files: Vec::new(),
            stats,
        }
    }
}

/// `lost` of `sent` packets in percent (0 when nothing was sent).
fn loss_pct(lost: u64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        round6(100.0 * lost as f64 / sent as f64)
    }
}
