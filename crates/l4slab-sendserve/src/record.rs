//! What a real endpoint measures about one connection: RTT samples, a row
//! per reporting interval (the live line and the series), and the flow's
//! entry in `summary.json`, in the simulator's keys where they exist
//! (docs/results.md, docs/send.md).

use std::fmt::Write as _;

use serde_json::{json, Value};

use l4slab_app::quic::stats_json;
use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Time};
use l4slab_quic::{Connection, ConnectionStats, EcnState};

/// Which end this record is about: the data sender (`send`) measures
/// acknowledged bytes, RTT and the CE fraction its peer reports; the
/// receiver (`serve`) measures bytes delivered and the CE marks it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// End of the interval, seconds since the record started.
    pub t_s: f64,
    pub dur_s: f64,
    /// Stream bytes: acknowledged in order (sender), delivered in order (receiver).
    pub bytes: u64,
    pub goodput_bps: f64,
    pub srtt_ms: Option<f64>,
    pub min_rtt_ms: Option<f64>,
    /// Mean of the RTT samples taken in the interval.
    pub rtt_ms: Option<f64>,
    /// CE-marked share of the ECN-marked packets: acknowledged ones the peer
    /// reported (sender), received ones (receiver); `None` without any.
    pub ce_fraction: Option<f64>,
    pub cwnd_bytes: u64,
    pub inflight_bytes: u64,
    pub pacing_bps: Option<f64>,
    /// Packets declared lost in the interval.
    pub lost: u64,
    pub ecn: EcnState,
}

#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    bytes: u64,
    ce: u64,
    marked: u64,
    lost: u64,
}

/// The measurements of one connection (see the module documentation).
pub struct FlowRecord {
    pub name: String,
    side: Side,
    start: Time,
    rtt: DurStats,
    rtt_samples_seen: u64,
    last: Marks,
    last_t: Time,
    /// Series rows `(t_s, key, value)`.
    series: Vec<(f64, &'static str, f64)>,
    intervals: u64,
}

impl std::fmt::Debug for FlowRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowRecord")
            .field("name", &self.name)
            .field("side", &self.side)
            .finish_non_exhaustive()
    }
}

fn marks(side: Side, st: &ConnectionStats, bytes: u64) -> Marks {
    match side {
        Side::Sender => Marks {
            bytes,
            ce: st.ce_reported,
            marked: st.ecn_reported,
            lost: st.packets_lost,
        },
        Side::Receiver => Marks {
            bytes,
            ce: st.ce_received,
            marked: st.ect0_received + st.ect1_received + st.ce_received,
            lost: st.packets_lost,
        },
    }
}

impl FlowRecord {
    pub fn new(name: String, side: Side, start: Time) -> Self {
        FlowRecord {
            name,
            side,
            start,
            // 1 µs resolution up to 100 s.
            rtt: DurStats::new(1_000, 100_000_000),
            rtt_samples_seen: 0,
            last: Marks::default(),
            last_t: start,
            series: Vec::new(),
            intervals: 0,
        }
    }

    pub fn start(&self) -> Time {
        self.start
    }

    /// After every event of the connection: take its new RTT sample, if any.
    pub fn observe(&mut self, conn: &Connection) {
        let st = conn.stats();
        if st.rtt_samples > self.rtt_samples_seen {
            self.rtt_samples_seen = st.rtt_samples;
            self.rtt.record(st.latest_rtt);
        }
    }

    /// Close the interval ending at `now`; `bytes` is the running total of
    /// stream bytes (acked or delivered in order).
    pub fn sample(&mut self, now: Time, conn: &Connection, bytes: u64) -> Interval {
        let st = conn.stats();
        let m = marks(self.side, &st, bytes);
        let dur = now.saturating_since(self.last_t).as_secs_f64();
        let d_bytes = m.bytes.saturating_sub(self.last.bytes);
        let d_marked = m.marked.saturating_sub(self.last.marked);
        let has_rtt = st.rtt_samples > 0;
        let iv = Interval {
            t_s: round6(now.saturating_since(self.start).as_secs_f64()),
            dur_s: dur,
            bytes: d_bytes,
            goodput_bps: if dur > 0.0 {
                (d_bytes as f64 * 8.0 / dur).round()
            } else {
                0.0
            },
            srtt_ms: has_rtt.then(|| round6(st.srtt.as_millis_f64())),
            min_rtt_ms: has_rtt.then(|| round6(st.min_rtt.as_millis_f64())),
            rtt_ms: self.rtt.take_interval().map(|(mean, _)| round6(mean)),
            ce_fraction: (d_marked > 0)
                .then(|| round6(m.ce.saturating_sub(self.last.ce) as f64 / d_marked as f64)),
            cwnd_bytes: conn.cwnd(),
            inflight_bytes: conn.bytes_in_flight(),
            pacing_bps: conn.pacing_rate().map(|r| r.as_bps() as f64),
            lost: m.lost.saturating_sub(self.last.lost),
            ecn: st.ecn_state,
        };
        self.last = m;
        self.last_t = now;
        self.intervals += 1;
        let t = iv.t_s;
        let mut put = |k: &'static str, v: Option<f64>| {
            if let Some(v) = v {
                self.series.push((t, k, v));
            }
        };
        put("goodput_bps", Some(iv.goodput_bps));
        put("srtt_ms", iv.srtt_ms);
        put("min_rtt_ms", iv.min_rtt_ms);
        put("rtt_ms", iv.rtt_ms);
        put("ce_fraction", iv.ce_fraction);
        if self.side == Side::Sender {
            put("cwnd_bytes", Some(iv.cwnd_bytes as f64));
            put("inflight_bytes", Some(iv.inflight_bytes as f64));
            put("pacing_bps", iv.pacing_bps);
            put("lost_packets", Some(iv.lost as f64));
        }
        iv
    }

    /// Append this record's series rows as `flow/<name>` to `out`.
    pub fn series_into(&self, out: &mut SeriesColumns) {
        let series = format!("flow/{}", self.name);
        for &(t, k, v) in &self.series {
            out.push(t, &series, k, v);
        }
    }

    /// The flow's entry in `summary.json` (see [`Outcome`]).
    pub fn summary(&self, conn: &Connection, o: Outcome<'_>) -> Value {
        let Outcome {
            app,
            bytes,
            completion,
            end,
            app_metrics,
            extra,
        } = o;
        let st = conn.stats();
        let until = completion.unwrap_or(end);
        let active = until.saturating_since(self.start).as_secs_f64();
        let conn_json = {
            let mut c = stats_json(&st);
            c["retries"] = st.retries.into();
            c["retries_discarded"] = st.retries_discarded.into();
            c["rtt_samples"] = st.rtt_samples.into();
            c["dropped_packets"] = st.dropped_packets.into();
            c["protocol_violations"] = st.protocol_violations.into();
            c["reassembly_refused"] = st.reassembly_refused.into();
            c["ecn"]["ecn_reported"] = st.ecn_reported.into();
            c["ecn"]["ect0_received"] = st.ect0_received.into();
            c["ecn"]["ect1_received"] = st.ect1_received.into();
            c["ecn"]["ce_received"] = st.ce_received.into();
            c
        };
        let mut v = json!({
            "app": app,
            "transport": "quic",
            "start_s": 0.0,
            "duration_s": round6(end.saturating_since(self.start).as_secs_f64()),
            "goodput_bps": if active > 0.0 { (bytes as f64 * 8.0 / active).round() } else { 0.0 },
            "bytes_delivered": bytes,
            "completion_s": completion.map(|t| round6(t.saturating_since(self.start).as_secs_f64())),
            "rtt_ms": self.rtt.summary_ms(),
            "losses_detected": st.packets_lost,
            "retransmitted_bytes": st.retransmitted_bytes,
            "ce_marks_received": st.ce_received,
            "ce_packets_fed_back": st.ce_reported,
            "ecn_validation": st.ecn_state.name(),
            "cwnd_final_bytes": conn.cwnd(),
            "cc_states": conn.cc().states(),
            "intervals": self.intervals,
            "app_metrics": app_metrics,
        });
        // As the simulator's QUIC flows: the connection's counters under
        // app_metrics.client (the sender) or app_metrics.server.
        let key = match self.side {
            Side::Sender => "client",
            Side::Receiver => "server",
        };
        if !v["app_metrics"].is_object() {
            v["app_metrics"] = json!({});
        }
        v["app_metrics"]["transport"] = "quic".into();
        v["app_metrics"][key] = conn_json;
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        v
    }
}

/// How a flow ended, for [`FlowRecord::summary`].
pub struct Outcome<'a> {
    /// The app's kind (`bulk`, `file`, `frames`; `receive` at the server).
    pub app: &'a str,
    /// The app's bytes acknowledged (sender) or delivered (receiver) in order.
    pub bytes: u64,
    /// When a file completed.
    pub completion: Option<Time>,
    pub end: Time,
    pub app_metrics: Value,
    /// More keys for the flow's entry.
    pub extra: Value,
}

/// The live line for one interval (`[flow] t  bytes  rate  rtt  CE  cwnd  ECN`).
pub fn interval_line(name: &str, side: Side, iv: &Interval) -> String {
    let mut s = String::new();
    let start = iv.t_s - iv.dur_s;
    let _ = write!(
        s,
        "[{name}] {:>6.2}-{:<6.2} s  {:>9}  {:>10}",
        start.max(0.0),
        iv.t_s,
        human_bytes(iv.bytes),
        human_rate(iv.goodput_bps)
    );
    let ms = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    let _ = write!(
        s,
        "  rtt {}/{} ms",
        ms(iv.srtt_ms.or(iv.rtt_ms)),
        ms(iv.min_rtt_ms)
    );
    let ce = iv
        .ce_fraction
        .map_or_else(|| "-".to_string(), |f| format!("{:.1}%", f * 100.0));
    let _ = write!(s, "  CE {ce:>6}");
    if side == Side::Sender {
        let _ = write!(s, "  cwnd {}  lost {}", human_bytes(iv.cwnd_bytes), iv.lost);
    }
    let _ = write!(s, "  ECN {}", iv.ecn.name());
    s
}

/// `1.23 MB`-style bytes (decimal units, as iperf's `MBytes` are not).
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// `12.3 Mbit/s`-style rates.
pub fn human_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// Long-format series columns (docs/results.md: `t_s`, `series`, `key`, `value`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SeriesColumns {
    pub t_s: Vec<f64>,
    pub series: Vec<String>,
    pub key: Vec<String>,
    pub value: Vec<f64>,
}

impl SeriesColumns {
    pub fn push(&mut self, t: f64, series: &str, key: &str, value: f64) {
        self.t_s.push(t);
        self.series.push(series.to_string());
        self.key.push(key.to_string());
        self.value.push(value);
    }

    pub fn to_json(&self) -> Value {
        json!({ "t_s": self.t_s, "series": self.series, "key": self.key, "value": self.value })
    }
}

/// A duration in ms for a report.
pub fn ms(d: Dur) -> f64 {
    round6(d.as_millis_f64())
}
