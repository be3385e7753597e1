//! The end of a run: packet conservation check and `summary.json`.

use serde_json::{json, Map, Value};

use l4slab_bottleneck::flow::{FlowInfo, FlowReport, PathCounts, TransportCounts, UpDown};
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
    /// qdisc streams and each flow's (its endpoints' and its app's own).
    fn random_draws(&self) -> u64 {
        let flows: u64 = self
            .flows
            .iter()
            .map(|fl| fl.rng.draws() + fl.app.random_draws())
            .sum();
        self.bn.random_draws() + flows
    }

    pub fn finish(mut self) -> RunOutput {
        self.check_conservation();
        for fl in &mut self.flows {
            fl.sync_app_delivery();
        }
        let end = self.scn.duration;
        // The measurement window (docs/results.md): `[warmup, end]` (the
        // flows' recorders know it).
        let warmup = Time::ZERO + self.scn.warmup;
        let mut flows = Map::new();
        for ((fl, spec), rec) in self.flows.iter().zip(&self.scn.flows).zip(&self.rec.flows) {
            let sender = &fl.eps[fl.sender].ep;
            let st = sender.stats();
            // The receiving endpoint counts the CE marks that reached it.
            let receiver = fl.eps[1 - fl.sender].ep.stats();
            let tcp = TransportCounts {
                retransmits: Some(st.retransmits),
                retransmitted_bytes: Some(st.bytes_retransmitted),
                losses_detected: Some(st.lost_segments),
                rto_count: Some(st.rto_count),
                ce_marks_received: Some(receiver.ce_marks_received),
                ce_packets_fed_back: Some(st.ce_packets_fed_back),
                ce_bytes_fed_back: Some(st.ce_bytes_fed_back),
                ecn_echo_events: Some(st.ecn_echo_events),
                ecn: Some(st.ecn_mode.name()),
                ecn_validation: Some(st.ecn_validation.name()),
                segments_sent: Some(st.segments_sent),
                data_segments_sent: Some(st.data_segments_sent),
                recovery_episodes: Some(st.fast_recovery_episodes),
                spurious_retransmits: Some(st.spurious_retransmits),
                tlp_probes: Some(st.tlp_probes),
                tlp_recoveries: Some(st.tlp_recoveries),
                dsacks_received: Some(st.dsacks_received),
                undos: Some(st.undos),
                spurious_rtos: Some(st.spurious_rtos),
                cwnd_final_bytes: Some(sender.cc_metrics().cwnd),
                cc_states: Some(sender.cc().states()),
            };
            let (client, server) = (
                &self.scn.hosts[spec.client].name,
                &self.scn.hosts[spec.server].name,
            );
            let report = FlowReport {
                info: FlowInfo {
                    // An RTP app's congestion control is its media controller.
                    cc: Some(spec.app.media_cc().unwrap_or(&spec.cc.kind)),
                    app: spec.app.kind(),
                    // Datagram apps (ping) use no connection and no congestion control.
                    transport: if spec.app.is_rtp() {
                        "rtp"
                    } else if spec.transport.protocol == l4slab_scenario::Protocol::Quic {
                        "quic"
                    } else if fl.app.uses_connection() {
                        "tcp"
                    } else {
                        "udp"
                    },
                    down: spec.direction == Direction::Down,
                    client: Some(client),
                    server: Some(server),
                },
                delivered: fl.delivered,
                completion: fl.completion,
                end,
                path: Some(PathCounts {
                    sent: Some(UpDown {
                        down: fl.sent_pkts[SERVER],
                        up: fl.sent_pkts[CLIENT],
                    }),
                    lost: UpDown {
                        down: fl.lost_pkts[SERVER],
                        up: fl.lost_pkts[CLIENT],
                    },
                }),
                // An app with its own transport (QUIC) reports its sender's.
                transport: fl.app.own_transport_summary().unwrap_or(tcp),
                // What the application measured (frame latency, stalls, probe RTT, ...).
                app_metrics: fl.app.report(end),
            };
            let mut entry = rec.summary(&report);
            if spec.cc.has_options() {
                entry.insert("cc_options".into(), json!(spec.cc.options));
            }
            if let Some(race) = &fl.race {
                let host = &self.scn.hosts[spec.client];
                entry.insert("multipath".into(), race.json(host, fl.completion));
            }
            flows.insert(spec.name.clone(), Value::Object(entry));
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
        // A download's parts (one flow per connection) summed up per download.
        let downloads = l4slab_scenario::downloads::downloads_json(self.scn, &flows);
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
        // Only a run with downloads has the key (docs/results.md).
        if !downloads.is_empty() {
            summary["downloads"] = Value::Object(downloads);
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
