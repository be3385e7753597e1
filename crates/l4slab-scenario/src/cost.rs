//! What a run will cost, estimated from the resolved scenario before it
//! starts, and the limits past which l4slab refuses to start it
//! (docs/scenarios.md, "Limits"). A scenario is text anyone can write:
//! `sample_interval = "1ns"`, `count = 100000` or a ten-hour traced run are
//! valid TOML, and without a check they would fill the machine's memory or
//! disk long before the run ends. An explicit option (`--allow-large`,
//! `l4slab.run(..., allow_large=True)`) lifts the limits.
//!
//! The quantities and why each is bounded (the memory figures are peak RSS
//! measured on whole runs, docs/PERFORMANCE.md, "What a run holds in memory"):
//!
//! * **flows** (after `count` expansion): each holds a transport, an app and
//!   its recorders in memory for the whole run (about 0.3 MB measured per
//!   bulk flow, docs/PERFORMANCE.md).
//! * **Wi-Fi stations** (the client hosts of `[wifi]`): each holds its
//!   queues (eight: four access categories, both ways), their recorders and
//!   its flow, about 0.55 MB each at 100 stations and less per station
//!   above (1,000 stations: 0.4 GB measured, 2,000: 0.6 GB). Until
//!   2026-12-07 every queue also kept a record per flow of the run, so the
//!   cell grew with stations² (1,000: 1.3 GB, 2,000: 4.3 GB).
//! * **RTP call memory** (flows whose app runs over RTP): each holds its
//!   media sender, feedback, controller and playout buffer, about 0.9 MB,
//!   and its frame records grow about 85 KB a second of the call (100
//!   calls: 173 MB for 2 s, 223 MB for 8 s), so calls have a limit of their
//!   own, in bytes, well below `flows`.
//! * **ping probes**: a ping flow keeps every probe it sent until the end
//!   (its send and echo times, about 40 bytes, up to twice that while its
//!   list grows), one per `interval` from its start to the end.
//! * **series rows**: `series.parquet` is recorded in memory during the run,
//!   one row per (sample, series, key): `samples × rows per sample`, the
//!   rows per sample counted from the queues the scenario builds (the
//!   bottleneck's, each host's access links and the Wi-Fi cell's queues)
//!   and an upper bound per flow.
//! * **trace rows** (`packet_trace = true`): about four rows per packet
//!   (send, enqueue, dequeue, deliver; a drop ends it sooner, a mark adds
//!   one), two more (enqueue, dequeue) per access link (or Wi-Fi cell
//!   queue) it passes. The
//!   simulator streams them to disk (about 7.5 bytes a row in
//!   `packets.parquet`, docs/results.md); the emulator holds its trace in
//!   memory until the run ends, so its limit is lower.
//! * **pcap records** (`pcap = true`): two per packet and queue it passes
//!   (the queue's ingress and egress captures: the bottleneck's, and each
//!   access link's), about 68 bytes each on disk (a 16-byte record header
//!   and the packet's IP and TCP headers). Both backends stream them to
//!   disk.

use std::collections::BTreeMap;

use l4slab_core::{Dur, Time};

use crate::build;
use crate::error::{Problem, ScenarioError};
use l4slab_wifi::config::AirDir;

use l4slab_app::cbr::CbrConfig;

use crate::model::{AppSpec, Direction, Entry, Flow, Scenario, Side};
use crate::values::join;

/// Series rows a flow adds per sample, at most: goodput, cwnd, ssthresh,
/// pacing, inflight, unsent, srtt, rtt and loss (`l4slab-sim` `sample`), plus
/// up to 7 of its application's (docs/results.md lists them).
pub const FLOW_ROWS_PER_SAMPLE: u64 = 16;
/// Series rows a queue adds per sample besides its qdisc's own statistics:
/// backlog (packets, bytes), sojourn (mean, max), drops, marks, utilization.
pub const QUEUE_BASE_ROWS_PER_SAMPLE: u64 = 7;
/// Wire bytes of the full-sized data packet the trace estimate assumes.
pub const ESTIMATE_PACKET_BYTES: u64 = 1500;
/// Trace rows per packet through the bottleneck: its send, enqueue, dequeue
/// and delivery (a drop ends the rows sooner, a CE mark adds one).
pub const TRACE_ROWS_PER_PACKET: u64 = 4;
/// pcap records per packet: the bottleneck's ingress and egress captures of
/// its direction (`bottleneck.<dir>.in`, `.out`).
pub const PCAP_RECORDS_PER_PACKET: u64 = 2;
/// What a packet adds per access link it passes besides the bottleneck: its
/// enqueue and dequeue rows there, and its two records (`access.<host>.<dir>.in`,
/// `.out`).
pub const TRACE_ROWS_PER_ACCESS_LINK: u64 = 2;
pub const PCAP_RECORDS_PER_ACCESS_LINK: u64 = 2;

/// Which backend will run the scenario: the limits differ where the two
/// hold different things in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sim,
    Emu,
}

/// The limits past which a run is refused (without `--allow-large`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub flows: u64,
    pub stations: u64,
    pub call_bytes: u64,
    pub probes: u64,
    pub series_rows: u64,
    pub trace_rows: u64,
    pub pcap_records: u64,
}

impl Limits {
    /// The documented defaults (docs/scenarios.md, "Limits").
    pub const fn for_backend(backend: Backend) -> Limits {
        Limits {
            // About 1.5 GB of flow state.
            flows: 5_000,
            // 1.3 GB measured (each station with one bulk flow); 2,000 took
            // 4.3 GB (docs/PERFORMANCE.md).
            stations: 1_000,
            // 1.5 GB: 1,600 calls of one second, 500 of 30 s.
            call_bytes: 1_500_000_000,
            // 0.4 to 0.8 GB of probe records.
            probes: 10_000_000,
            // 24 bytes a row in the simulator, about 50 at the peak of
            // writing series.parquet: about 1 GB (docs/PERFORMANCE.md).
            series_rows: 20_000_000,
            trace_rows: match backend {
                // Streamed to disk: about 1.9 GB of packets.parquet.
                Backend::Sim => 250_000_000,
                // Held in memory (as JSON, then Python objects) until the end.
                Backend::Emu => 4_000_000,
            },
            // Streamed to disk by both backends: about 1.7 GB of pcap files.
            pcap_records: 25_000_000,
        }
    }
}

/// The estimated cost of running a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    /// Flows after `count` expansion.
    pub flows: u64,
    /// Stations of the Wi-Fi cell (0 without `[wifi]`).
    pub stations: u64,
    /// Flows whose app runs over RTP.
    pub calls: u64,
    /// The memory those calls hold at the end: [`CALL_BYTES`] each and
    /// [`CALL_BYTES_PER_SECOND`] per second from its start.
    pub call_bytes: u64,
    /// Probes of all ping flows: one per `interval` from each one's start.
    pub probes: u64,
    /// Sample instants: `floor(duration / sample_interval)`.
    pub samples: u64,
    /// Series rows per sample (an upper bound).
    pub rows_per_sample: u64,
    /// `samples × rows_per_sample`.
    pub series_rows: u64,
    /// The most access links a packet passes besides the bottleneck (0 to
    /// 2: its sender's and its receiver's): the trace and pcap estimates
    /// count every packet with that many.
    pub access_links_per_packet: u64,
    /// Packet-trace rows (0 without `packet_trace`).
    pub trace_rows: u64,
    /// pcap records of all capture points (0 without `pcap`).
    pub pcap_records: u64,
}

impl Cost {
    /// Estimate the cost of `scn` (cheap: no event is simulated).
    pub fn estimate(scn: &Scenario) -> Cost {
        let duration = scn.duration.saturating_since(Time::ZERO);
        let samples = duration.as_nanos() / scn.sample_interval.as_nanos().max(1);
        // The bottleneck's two queues, every access link's (a multi-homed
        // host's paths' too) and every queue of the Wi-Fi cell.
        let access = scn.hosts.iter().flat_map(|h| {
            std::iter::once(&h.access)
                .chain(h.paths.iter().map(|p| &p.access))
                .flat_map(|a| [&a.down, &a.up])
        });
        let links = [&scn.bottleneck.down, &scn.bottleneck.up]
            .into_iter()
            .chain(access.flatten())
            .map(|spec| &spec.qdisc);
        let cell = build::cell_config(scn).into_iter().flat_map(|cfg| {
            let wifi = scn.wifi.as_ref().expect("a cell comes from [wifi]");
            cfg.queues.into_iter().map(move |q| match q.dir {
                AirDir::ApToStation => &wifi.ap_qdisc,
                AirDir::StationToAp => &wifi.station_qdisc,
            })
        });
        let queue_rows: u64 = links
            .chain(cell)
            .map(|spec| {
                let q = build::qdisc(spec);
                QUEUE_BASE_ROWS_PER_SAMPLE
                    + q.subqueue_names().len() as u64
                    + q.xstats().len() as u64
            })
            .sum();
        let flows = scn.flows.len() as u64;
        let stations = scn.wifi.as_ref().map_or(0, |w| w.stations.len() as u64);
        let rtp = || scn.flows.iter().filter(|f| f.app.is_rtp());
        let calls = rtp().count() as u64;
        let call_bytes = rtp()
            .map(|f| call_bytes(scn.duration.saturating_since(f.start)))
            .fold(0u64, u64::saturating_add);
        let probes = scn
            .flows
            .iter()
            .map(|f| ping_probes(scn, f))
            .fold(0u64, u64::saturating_add);
        let rows_per_sample = queue_rows.saturating_add(flows.saturating_mul(FLOW_ROWS_PER_SAMPLE));
        let packets = if scn.packet_trace || scn.pcap {
            bottleneck_packets(scn)
        } else {
            0
        };
        let per = |on: bool, n: u64| if on { packets.saturating_mul(n) } else { 0 };
        let access = access_links_per_packet(scn);
        Cost {
            flows,
            stations,
            calls,
            call_bytes,
            probes,
            samples,
            rows_per_sample,
            series_rows: samples.saturating_mul(rows_per_sample),
            access_links_per_packet: access,
            trace_rows: per(scn.packet_trace, Self::trace_rows_per_packet(access)),
            pcap_records: per(scn.pcap, Self::pcap_records_per_packet(access)),
        }
    }

    /// Trace rows per packet through the bottleneck and `access` access links.
    fn trace_rows_per_packet(access: u64) -> u64 {
        TRACE_ROWS_PER_PACKET + TRACE_ROWS_PER_ACCESS_LINK * access
    }

    /// pcap records per packet through the bottleneck and `access` access links.
    fn pcap_records_per_packet(access: u64) -> u64 {
        PCAP_RECORDS_PER_PACKET + PCAP_RECORDS_PER_ACCESS_LINK * access
    }

    /// `Ok` when every quantity is within `limits`; otherwise an error for the
    /// first one past its limit (flows, stations, calls, probes, then series
    /// rows, trace rows and pcap records) naming the key to change, the
    /// estimate and the limit.
    pub fn check(&self, scn: &Scenario, limits: &Limits) -> Result<(), ScenarioError> {
        if self.flows > limits.flows {
            let (entry, n) = biggest_count(scn, |_| true);
            let example = match entry {
                Entry::Flow(_) => 100,
                // The copies that fit beside every other entry's flows.
                Entry::Household { .. } => {
                    count_that_fits(entry, n, limits.flows.saturating_sub(self.flows - n))
                }
            };
            return Err(too_large(
                &join(&entry.to_string(), "count"),
                format!(
                    "{} flows in all is past the limit of {} (each holds a transport and its \
                     recorders in memory for the whole run)",
                    group(self.flows),
                    group(limits.flows)
                ),
                format!("count = {example}"),
            ));
        }
        if self.stations > limits.stations {
            return Err(too_large(
                "hosts",
                format!(
                    "{} Wi-Fi stations (the client hosts of [wifi]) is past the limit of {} \
                     (a cell holds about 0.3-0.5 MB per station with its flow: 1,000 took \
                     0.4 GB)",
                    group(self.stations),
                    group(limits.stations)
                ),
                format!("at most {} client hosts", group(limits.stations)),
            ));
        }
        if self.call_bytes > limits.call_bytes {
            let (entry, n) = biggest_count(scn, |f| f.app.is_rtp());
            // The count at which this entry's calls alone fit.
            let calls = u128::from(n) * u128::from(limits.call_bytes) / u128::from(self.call_bytes);
            let fits = count_that_fits(entry, n, u64::try_from(calls).unwrap_or(u64::MAX));
            return Err(too_large(
                &join(&entry.to_string(), "count"),
                format!(
                    "{} RTP calls hold about {} MB in all (about 0.9 MB each and 85 KB a \
                     second of call, for duration = {}), past the limit of {} MB",
                    group(self.calls),
                    group(self.call_bytes / 1_000_000),
                    crate::values::show_dur(scn.duration.saturating_since(Time::ZERO)),
                    group(limits.call_bytes / 1_000_000)
                ),
                format!("count = {fits}"),
            ));
        }
        if self.probes > limits.probes {
            let (path, interval) = densest_ping(scn, limits);
            return Err(too_large(
                &path,
                format!(
                    "{} ping probes in all is past the limit of {} (a ping keeps every probe \
                     it sent until the run ends)",
                    group(self.probes),
                    group(limits.probes)
                ),
                format!("interval = \"{}\"", crate::values::show_dur(interval)),
            ));
        }
        if self.series_rows > limits.series_rows {
            return Err(too_large(
                "sample_interval",
                format!(
                    "{} samples (duration = {} / sample_interval = {}) × {} series rows each \
                     = {} rows, past the limit of {} rows held in memory",
                    group(self.samples),
                    crate::values::show_dur(scn.duration.saturating_since(Time::ZERO)),
                    crate::values::show_dur(scn.sample_interval),
                    self.rows_per_sample,
                    group(self.series_rows),
                    group(limits.series_rows)
                ),
                format!(
                    "sample_interval = \"{}\"",
                    crate::values::show_dur(fitting_interval(scn, self, limits))
                ),
            ));
        }
        if self.trace_rows > limits.trace_rows {
            return Err(too_large(
                "packet_trace",
                format!(
                    "about {} packet-trace rows (about {} per data packet at the links' rates \
                     for duration = {}), past the limit of {} rows",
                    group(self.trace_rows),
                    // A saturating flow's data packet and half an ACK.
                    Self::trace_rows_per_packet(self.access_links_per_packet) * 3 / 2,
                    crate::values::show_dur(scn.duration.saturating_since(Time::ZERO)),
                    group(limits.trace_rows)
                ),
                "packet_trace = false, or a shorter duration".to_string(),
            ));
        }
        if self.pcap_records > limits.pcap_records {
            return Err(too_large(
                "pcap",
                format!(
                    "about {} pcap records ({} per packet at the links' rates for \
                     duration = {}), past the limit of {} records",
                    group(self.pcap_records),
                    Self::pcap_records_per_packet(self.access_links_per_packet),
                    crate::values::show_dur(scn.duration.saturating_since(Time::ZERO)),
                    group(limits.pcap_records)
                ),
                "pcap = false, or a shorter duration".to_string(),
            ));
        }
        Ok(())
    }
}

/// Estimate, check against the defaults for `backend`, and return the cost.
pub fn check(scn: &Scenario, backend: Backend) -> Result<Cost, ScenarioError> {
    let cost = Cost::estimate(scn);
    cost.check(scn, &Limits::for_backend(backend))?;
    Ok(cost)
}

fn too_large(path: &str, message: String, example: String) -> ScenarioError {
    ScenarioError::invalid(
        path,
        Problem::TooLarge,
        format!(
            "{message}; lift the limits with --allow-large (l4slab.run(..., allow_large=True))"
        ),
        Some(example),
    )
}

/// Data packets a link of `rate` carries in `duration`, full-sized.
fn capacity_packets(rate_bps: u64, duration: Dur) -> u64 {
    let bits = u128::from(rate_bps) * u128::from(duration.as_nanos()) / 1_000_000_000;
    u64::try_from(bits / u128::from(ESTIMATE_PACKET_BYTES * 8)).unwrap_or(u64::MAX)
}

/// Packets through the bottleneck (both directions): per direction, the
/// data packets its flows send, at most what the link carries from the
/// first sender's start to the end (a file flow sends at most its size; an
/// app-limited flow is counted at the link's rate, so its estimate is an
/// upper bound), each with half an ACK; a file's segments each with its
/// ACK; ping probes and their replies; a cbr flow's own datagrams
/// (`rate × active time / size`, sent whatever the link carries).
fn bottleneck_packets(scn: &Scenario) -> u64 {
    let duration = scn.duration.saturating_since(Time::ZERO);
    // Per direction (down, up): the bounded senders' data packets, and the
    // earliest start of a sender only the link bounds.
    let mut demand = [0u64; 2];
    let mut unbounded: [Option<Time>; 2] = [None; 2];
    let mut packets = 0u64;
    for flow in &scn.flows {
        let mut open = |dir: usize| {
            unbounded[dir] = Some(unbounded[dir].map_or(flow.start, |t| t.min(flow.start)));
        };
        let dir = match flow.direction {
            Direction::Down => 0,
            Direction::Up => 1,
        };
        match &flow.app {
            AppSpec::File(file) => {
                // A short transfer is ACKed segment by segment: two packets
                // a segment, counted in data packets (each with half an ACK).
                let mss = u64::from(flow.transport.mss.max(1));
                let segments = file.size.div_ceil(mss);
                demand[dir] = demand[dir].saturating_add(segments.saturating_mul(4) / 3);
            }
            AppSpec::Ping(p) => {
                let probes = duration.as_nanos() / p.interval.as_nanos().max(1);
                packets = packets.saturating_add(probes.saturating_mul(2));
            }
            AppSpec::Cbr(c) => {
                packets = packets
                    .saturating_add(cbr_datagrams(c, scn.duration.saturating_since(flow.start)));
            }
            AppSpec::VideoCall(_) | AppSpec::Web(_) => {
                open(0);
                open(1);
            }
            _ => open(dir),
        }
    }
    let links = [&scn.bottleneck.down, &scn.bottleneck.up];
    for (dir, spec) in links.iter().enumerate() {
        let cap =
            |from: Time| capacity_packets(spec.rate.as_bps(), scn.duration.saturating_since(from));
        let data = match unbounded[dir] {
            Some(start) => cap(start),
            None => demand[dir].min(cap(Time::ZERO)),
        };
        packets = packets.saturating_add(data.saturating_mul(3) / 2);
    }
    packets
}

/// The most access links a packet of a flow passes: in each direction, its
/// sender's (before the bottleneck) and its receiver's (after it), when
/// those hosts have one there.
fn access_links_per_packet(scn: &Scenario) -> u64 {
    // A station (a client host with [wifi]) passes its cell queue both ways.
    let station = |h: usize| scn.wifi.is_some() && scn.hosts[h].side == Side::Client;
    // A multi-homed host's packets pass one of its paths' links.
    let has = |h: usize, dir: usize| {
        let host = &scn.hosts[h];
        u64::from(host.access.dir(dir).is_some() || !host.paths.is_empty() || station(h))
    };
    scn.flows
        .iter()
        .flat_map(|f| [0, 1].map(|dir| has(f.client, dir) + has(f.server, dir)))
        .max()
        .unwrap_or(0)
}

/// Memory an RTP call holds at the end (measured, docs/PERFORMANCE.md).
pub const CALL_BYTES: u64 = 900_000;
/// What an RTP call's records add per second of the call.
pub const CALL_BYTES_PER_SECOND: u64 = 85_000;

/// The memory of an RTP call active for `active`.
fn call_bytes(active: Dur) -> u64 {
    let grown = u128::from(CALL_BYTES_PER_SECOND) * u128::from(active.as_nanos()) / 1_000_000_000;
    CALL_BYTES.saturating_add(u64::try_from(grown).unwrap_or(u64::MAX))
}

/// The probes a ping flow sends: one every `interval` from its start to the
/// end (0 for any other app).
fn ping_probes(scn: &Scenario, flow: &Flow) -> u64 {
    match &flow.app {
        AppSpec::Ping(p) => {
            scn.duration.saturating_since(flow.start).as_nanos() / p.interval.as_nanos().max(1)
        }
        _ => 0,
    }
}

/// The ping flow with the most probes (its `interval` key path) and the
/// shortest interval, a whole number of milliseconds, at which every ping
/// flow sending as often keeps all within `limits`.
fn densest_ping(scn: &Scenario, limits: &Limits) -> (String, Dur) {
    let pings: Vec<_> = scn
        .flows
        .iter()
        .filter(|f| ping_probes(scn, f) > 0)
        .collect();
    let densest = pings
        .iter()
        .max_by_key(|f| ping_probes(scn, f))
        .expect("probes past the limit come from a ping flow");
    let duration = scn.duration.saturating_since(Time::ZERO).as_nanos();
    let share = (limits.probes / pings.len().max(1) as u64).max(1);
    let ns = duration.div_ceil(share);
    (
        join(&densest.entry.to_string(), "app.interval"),
        Dur::from_millis(ns.div_ceil(1_000_000).max(1)),
    )
}

/// Datagrams a cbr flow sends in `active` (from its start to the end): one
/// every `size · 8 / rate`, the first at the start. Unresponsive, so the
/// link's rate does not bound them (what it cannot carry is dropped, and
/// still traced).
fn cbr_datagrams(c: &CbrConfig, active: Dur) -> u64 {
    let bits = u128::from(c.rate.as_bps()) * u128::from(active.as_nanos()) / 1_000_000_000;
    let n = bits / (u128::from(c.size.max(1)) * 8);
    u64::try_from(n).unwrap_or(u64::MAX).saturating_add(1)
}

/// The `[[flows]]` or `[[households]]` entry that makes the most flows
/// `counted` (the first of them) and how many it makes.
fn biggest_count(scn: &Scenario, counted: impl Fn(&Flow) -> bool) -> (Entry, u64) {
    let mut per_entry: BTreeMap<Entry, u64> = BTreeMap::new();
    for flow in scn.flows.iter().filter(|f| counted(f)) {
        *per_entry.entry(flow.entry).or_insert(0) += 1;
    }
    let mut best = (Entry::Flow(0), 0);
    for (&entry, &n) in &per_entry {
        if n > best.1 {
            best = (entry, n);
        }
    }
    best
}

/// The `count` to suggest for `entry`, which makes `n` of the flows
/// counted, when `fits` of them would fit (at least 1): the flows
/// themselves for a `[[flows]]` entry, whole copies of a household.
fn count_that_fits(entry: Entry, n: u64, fits: u64) -> u64 {
    let count = match entry {
        Entry::Flow(_) => fits,
        Entry::Household { copies, .. } => {
            let per_copy = (n / copies.max(1)).max(1);
            fits / per_copy
        }
    };
    count.max(1)
}

/// The shortest sample interval (a whole number of milliseconds, at least
/// the current one) that keeps the series within `limits`.
fn fitting_interval(scn: &Scenario, cost: &Cost, limits: &Limits) -> Dur {
    let duration = scn.duration.saturating_since(Time::ZERO).as_nanos();
    let max_samples = (limits.series_rows / cost.rows_per_sample.max(1)).max(1);
    let ns = duration
        .div_ceil(max_samples)
        .max(scn.sample_interval.as_nanos());
    Dur::from_millis(ns.div_ceil(1_000_000).max(1))
}

/// `1234567` -> `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{count_that_fits, group, Entry};

    #[test]
    fn the_count_that_fits_counts_a_households_copies() {
        // A flow entry: the flows that fit are its count.
        assert_eq!(count_that_fits(Entry::Flow(2), 300, 120), 120);
        // 40 households of 3 counted flows each; 100 flows fit: 33 households.
        let h = Entry::Household {
            index: 0,
            copies: 40,
        };
        assert_eq!(count_that_fits(h, 120, 100), 33);
        // Never below one.
        assert_eq!(count_that_fits(h, 120, 0), 1);
    }

    #[test]
    fn group_puts_commas_every_three_digits() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
