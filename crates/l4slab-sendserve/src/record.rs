//! What a real endpoint measures about one connection: its snapshot at each
//! reporting interval, fed to the flow recorder every backend shares
//! (`l4slab_bottleneck::flow`), which writes the series and the flow's
//! entry in `summary.json` with the simulator's keys and rules
//! (docs/results.md, docs/send.md); and the live line.

use std::fmt::Write as _;

use serde_json::{json, Value};

use l4slab_app::quic::{flow_metrics, stats_json};
use l4slab_bottleneck::flow::{
    CcSample, FlowInfo, FlowRecorder, FlowReport, FlowSample, TransportCounts,
};
use l4slab_core::stats::round6;
use l4slab_core::{Dur, SeriesStore, Time};
use l4slab_quic::{Connection, ConnectionStats, EcnState};

/// Which end this record is about: the data sender (`send`) measures
/// acknowledged bytes, RTT and the CE fraction its peer reports; the
/// receiver (`serve`) measures bytes delivered and the CE marks it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// One reporting interval, for the live line: what the recorder wrote.
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

/// The measurements of one connection (see the module documentation).
/// Times are the driver's clock; the recorder sees them from the record's
/// start (`t_s`, `start_s` = 0).
pub struct FlowRecord {
    pub name: String,
    side: Side,
    start: Time,
    rec: FlowRecorder,
    store: SeriesStore,
    rtt_samples_seen: u64,
    last_t: Time,
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

/// ECN-capable packets and the CE-marked ones among them so far: those
/// the peer reported (sender), those received (receiver).
fn ecn_packets(side: Side, st: &ConnectionStats) -> (u64, u64) {
    match side {
        Side::Sender => (st.ecn_reported, st.ce_reported),
        Side::Receiver => (
            st.ect0_received + st.ect1_received + st.ce_received,
            st.ce_received,
        ),
    }
}

impl FlowRecord {
    pub fn new(name: String, side: Side, start: Time) -> Self {
        let mut store = SeriesStore::default();
        let rec = FlowRecorder::new(&name, Time::ZERO, Time::ZERO, &mut store);
        FlowRecord {
            name,
            side,
            start,
            rec,
            store,
            rtt_samples_seen: 0,
            last_t: start,
            intervals: 0,
        }
    }

    pub fn start(&self) -> Time {
        self.start
    }

    /// `t` of the driver's clock as the recorder's time (since the start).
    fn rel(&self, t: Time) -> Time {
        Time::ZERO + t.saturating_since(self.start)
    }

    /// After every event of the connection: take its new RTT sample, if any.
    pub fn observe(&mut self, conn: &Connection) {
        let st = conn.stats();
        if st.rtt_samples > self.rtt_samples_seen {
            self.rtt_samples_seen = st.rtt_samples;
            self.rec.record_rtt(st.latest_rtt);
        }
    }

    /// Close the interval ending at `now`; `bytes` is the running total of
    /// stream bytes (acked or delivered in order).
    pub fn sample(&mut self, now: Time, conn: &Connection, bytes: u64) -> Interval {
        let st = conn.stats();
        let iv = now.saturating_since(self.last_t);
        let has_rtt = st.rtt_samples > 0;
        let sender = self.side == Side::Sender;
        let m = conn.cc().metrics();
        let snap = FlowSample {
            delivered: bytes,
            // The controller is the sender's.
            cc: sender.then(|| CcSample::of(&m, conn.cc().states())),
            pacing: conn.pacing_rate().filter(|_| sender),
            inflight: sender.then(|| conn.bytes_in_flight()),
            srtt: has_rtt.then_some(st.srtt),
            min_rtt: has_rtt.then_some(st.min_rtt),
            ecn_packets: Some(ecn_packets(self.side, &st)),
            losses_declared: sender.then_some(st.packets_lost),
            ..FlowSample::default()
        };
        let t = self.rel(now);
        let t_s = round6(t.as_secs_f64());
        let w = self
            .rec
            .sample(&mut self.store, t, t_s, iv, &snap)
            .expect("a record samples from its start on");
        self.last_t = now;
        self.intervals += 1;
        Interval {
            t_s,
            dur_s: iv.as_secs_f64(),
            bytes: w.bytes,
            goodput_bps: w.goodput_bps,
            srtt_ms: snap.srtt.map(|d| d.as_millis_f64()),
            min_rtt_ms: snap.min_rtt.map(|d| d.as_millis_f64()),
            rtt_ms: w.rtt_ms,
            ce_fraction: w.ce_fraction,
            cwnd_bytes: m.cwnd,
            inflight_bytes: conn.bytes_in_flight(),
            pacing_bps: conn.pacing_rate().map(|r| r.as_bps() as f64),
            lost: w.lost.unwrap_or(0),
            ecn: st.ecn_state,
        }
    }

    /// Append this record's series rows (`flow/<name>`) to `out`.
    pub fn series_into(&self, out: &mut SeriesColumns) {
        for (t, series, key, v) in self.store.rows() {
            out.push(t, series, key, v);
        }
    }

    /// The flow's entry in `summary.json` (see [`Outcome`]).
    pub fn summary(&self, conn: &Connection, o: Outcome<'_>) -> Value {
        let Outcome {
            app,
            cc,
            down,
            client,
            server,
            bytes,
            completion,
            end,
            app_metrics,
            extra,
        } = o;
        let st = conn.stats();
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
        // As the simulator's QUIC flows: the connection's counters under
        // app_metrics.client (the sender) or app_metrics.server.
        let key = match self.side {
            Side::Sender => "client",
            Side::Receiver => "server",
        };
        let mut app_metrics = match app_metrics {
            Value::Object(m) => Value::Object(m),
            _ => json!({}),
        };
        app_metrics["transport"] = "quic".into();
        app_metrics[key] = conn_json;
        let report = FlowReport {
            info: FlowInfo {
                cc,
                app,
                transport: "quic",
                // `send` uploads to `serve`; with -R, downloads.
                down,
                client,
                server,
            },
            delivered: bytes,
            completion: completion.map(|t| self.rel(t)),
            end: self.rel(end),
            // A real endpoint does not see the path's drops.
            path: None,
            // This end's connection: its own CE count is the marks it saw.
            transport: this_end(conn),
            app_metrics,
        };
        let mut v = self.rec.summary(&report);
        v.insert(
            "duration_s".into(),
            round6(end.saturating_since(self.start).as_secs_f64()).into(),
        );
        v.insert("intervals".into(), self.intervals.into());
        if let Value::Object(e) = extra {
            v.extend(e);
        }
        Value::Object(v)
    }
}

/// The transport counters of this end's connection, with the QUIC flows'
/// meaning (`l4slab_app::quic::flow_metrics`); `ce_marks_received` is the
/// CE marks this end received.
fn this_end(conn: &Connection) -> TransportCounts {
    flow_metrics(conn, Some(conn))
}

/// How a flow ended, for [`FlowRecord::summary`].
pub struct Outcome<'a> {
    /// The app's kind (`bulk`, `file`, `frames`; `receive` at the server).
    pub app: &'a str,
    /// The sender's congestion control, when this end knows it.
    pub cc: Option<&'a str>,
    /// The server sends (`-R`): the flow's `direction` is `down`.
    pub down: bool,
    /// The two ends' addresses, when known.
    pub client: Option<&'a str>,
    pub server: Option<&'a str>,
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

/// iperf3's `[SUM]` line of `-P`'s streams for an interval from `start_s`
/// to `end_s` (seconds since the run began): their bytes and rate.
pub fn sum_line(start_s: f64, end_s: f64, bytes: u64, bps: f64) -> String {
    format!(
        "[SUM] {:>6.2}-{:<6.2} s  {:>9}  {:>10}",
        start_s.max(0.0),
        end_s,
        human_bytes(bytes),
        human_rate(bps)
    )
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
