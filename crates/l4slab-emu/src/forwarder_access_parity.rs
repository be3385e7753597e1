//! Parity of the forwarder's access links with the simulator's clock: the
//! arrival sequence of `forwarder_parity.rs` through a network of queues
//! (senders' access links, the bottleneck, receivers' access links; two of
//! them merging into one bottleneck direction), clocked once as the
//! simulator clocks it (every queue run exactly at each instant something is
//! due, a departure entering the next queue at that instant) and once by
//! the forwarder's own late wake-ups. The fates must be the same: per
//! direction and flow, the same packets released in the same order with
//! the same ECN field; and the same queue summaries and series. (Across
//! flows, packets leaving at the same nanosecond may be written in another
//! order.) No root needed.

use l4slab_bottleneck::Bottleneck;
use l4slab_core::{Dur, Ecn, Packet, SeriesStore, Time};
use l4slab_scenario::build::{self, AccessQueues};
use l4slab_scenario::{ParseOptions, Scenario};

use super::parity::{arrivals, by_forwarder, series_rows, Arrival, Released, FLOWS, SAMPLE};
use super::{DOWN, UP};
use crate::access::AccessRoutes;
use crate::stats::round6;

/// Four flows (a to d, ports 5001 to 5004) between three clients and two
/// servers: `a` passes `sa`'s and `ca`'s access links down and `ca`'s up;
/// `b` `sa`'s and `cb`'s down; `c` `sb`'s and `ca`'s down, `ca`'s and
/// `sb`'s up; `d` `sb`'s down and up. Every kind of link: FIFO, CoDel,
/// DualPI2, wire loss, ECN re-marking; `sa` and `sb` both feed the
/// bottleneck's down direction.
const NETWORK: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "100pkt"
qdisc = { kind = "pie", ecn = true }
loss = "1%"
[bottleneck.up]
rate = "5Mbit"
[hosts.ca]
side = "client"
access_delay = "3ms"
access = { rate = "3Mbit", buffer = "30pkt", up = { rate = "2Mbit", qdisc = { kind = "codel", ecn = true } } }
[hosts.cb]
side = "client"
access = { down = { rate = "6Mbit", buffer = "20ms", qdisc = "dualpi2", loss = "0.5%" } }
[hosts.cc]
side = "client"
[hosts.sa]
side = "server"
access_delay = "1ms"
access = { down = { rate = "4Mbit", buffer = "40pkt", ecn_rewrite = "remark" } }
[hosts.sb]
side = "server"
access = { rate = "8Mbit", buffer = "25pkt", up = { rate = "1Mbit" } }
[[flows]]
name = "a"
client = "ca"
server = "sa"
[[flows]]
name = "b"
client = "cb"
server = "sa"
[[flows]]
name = "c"
client = "ca"
server = "sb"
[[flows]]
name = "d"
client = "cc"
server = "sb"
"#;

/// The same four flows through a Wi-Fi cell (two stations, `ca` and `cb`,
/// both on a slow 802.11n channel so the cell is the bottleneck): every
/// queue of the cell couples both directions through one medium. `ca` is
/// far from the AP (retries, drops at the retry limit) and scans; the AP
/// runs DualPI2 per station and AC; flows `b` and `c` travel in VI.
const WIFI: &str = r#"
format = 1
duration = "20s"
[bottleneck]
rate = "50Mbit"
delay = "4ms"
buffer = "200pkt"
[wifi]
standard = "n"
width = "20MHz"
nss = 1
retry_limit = 3
[wifi.ap]
qdisc = "dualpi2"
buffer = "200pkt"
[wifi.stations]
buffer = "100pkt"
[hosts.ca]
side = "client"
access_delay = "2ms"
wifi = { snr_db = 14, mcs = 2, scan = { every = "1s", duration = "150ms", first = "700ms" } }
[hosts.cb]
side = "client"
wifi = { snr_db = 25 }
[hosts.sa]
side = "server"
[[flows]]
name = "a"
client = "ca"
server = "sa"
[[flows]]
name = "b"
client = "cb"
server = "sa"
wifi_ac = "vi"
[[flows]]
name = "c"
client = "ca"
server = "sa"
wifi_ac = "vi"
[[flows]]
name = "d"
client = "cb"
server = "sa"
"#;

fn scenario() -> Scenario {
    parse(NETWORK)
}

fn parse(text: &str) -> Scenario {
    let opts = ParseOptions {
        known_cc: vec!["reno"],
        trace_dirs: vec![],
    };
    l4slab_scenario::parse_with(text, "access.toml", &[], &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// The queues of `scn` and the routes through them.
fn network(scn: &Scenario) -> (Bottleneck, AccessQueues, AccessRoutes) {
    let (bn, access) = build::network(scn, 5);
    let routes = AccessRoutes::new(scn, &access);
    (bn, access, routes)
}

/// The simulator's way, at one instant `t` (something is due then): every
/// queue of each direction runs to `t` in the packets' order (senders'
/// access links, the bottleneck, receivers' access links); a departure
/// enters the next queue at `t`.
fn run_instant(bn: &mut Bottleneck, r: &AccessRoutes, t: Time, released: &mut Released) {
    let mut dep = Vec::new();
    let mut out = Vec::new();
    for d in [DOWN, UP] {
        for &q in &r.ingress[d] {
            bn.advance(q, t, &mut dep);
            bn.clear_dropped(q);
            for (_, p) in dep.drain(..) {
                bottleneck_to(bn, r, d, t, &mut out, released);
                bn.enqueue(d, t, p);
                bn.clear_dropped(d);
            }
        }
        bottleneck_to(bn, r, d, t, &mut out, released);
        for &q in &r.egress[d] {
            bn.advance(q, t, &mut out);
            bn.clear_dropped(q);
            released[d].extend(out.drain(..).map(|(_, p)| (p.id, p.ecn)));
        }
    }
}

/// Bottleneck direction `d` runs to `t`; what leaves goes to its receiver's
/// access link (at `t`) or out.
fn bottleneck_to(
    bn: &mut Bottleneck,
    r: &AccessRoutes,
    d: usize,
    t: Time,
    out: &mut Vec<(Time, Packet)>,
    released: &mut Released,
) {
    let mut dep = Vec::new();
    bn.advance(d, t, &mut dep);
    bn.clear_dropped(d);
    for (at, p) in dep {
        assert_eq!(at, t, "the calendar runs the bottleneck at its deadlines");
        match r.egress(p.flow, d) {
            Some(q) => {
                bn.advance(q, t, out);
                released[d].extend(out.drain(..).map(|(_, p)| (p.id, p.ecn)));
                bn.enqueue(q, t, p);
                bn.clear_dropped(q);
            }
            None => released[d].push((p.id, p.ecn)),
        }
    }
}

fn by_calendar(
    mut bn: Bottleneck,
    r: &AccessRoutes,
    arrivals: &[Arrival],
    end: Time,
    mut window: Option<Time>,
) -> (Released, serde_json::Value, SeriesStore) {
    let from = window.unwrap_or(Time::ZERO);
    let mut released: Released = Default::default();
    let mut store = SeriesStore::default();
    let mut next = 0;
    let mut sample_at = Time::ZERO + SAMPLE;
    loop {
        let deadline = (0..bn.queues())
            .filter_map(|q| bn.next_deadline(q))
            .chain((0..bn.cells()).filter_map(|c| bn.cell_deadline(c)))
            .min();
        let arrival = arrivals.get(next).map(|a| a.at);
        let t = [deadline, arrival, Some(sample_at), window]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if t > end {
            break;
        }
        run_instant(&mut bn, r, t, &mut released);
        if window == Some(t) {
            bn.start_window(t);
            window = None;
            continue;
        }
        if sample_at == t {
            bn.sample(t, round6(t.as_secs_f64()), SAMPLE, &mut store);
            sample_at += SAMPLE;
            continue;
        }
        while arrivals.get(next).is_some_and(|a| a.at == t) {
            let a = arrivals[next];
            let mut pkt = Packet::new(next as u64, a.flow, u32::from(a.ip_len), a.ecn);
            pkt.handle = 0;
            let q = r.ingress(a.flow, a.dir).unwrap_or(a.dir);
            bn.enqueue(q, t, pkt);
            bn.clear_dropped(q);
            next += 1;
        }
    }
    run_instant(&mut bn, r, end, &mut released);
    bn.check_accounting();
    let summary = bn.queues_json(end.saturating_since(from), &FLOWS);
    (released, summary, store)
}

/// Per direction and flow: the packets released, in order.
fn by_flow(released: &Released, arrivals: &[Arrival]) -> Vec<Vec<(u64, Ecn)>> {
    let mut out = vec![Vec::new(); 2 * FLOWS.len()];
    for d in [DOWN, UP] {
        for &(id, ecn) in &released[d] {
            let f = arrivals[id as usize].flow as usize;
            out[d * FLOWS.len() + f].push((id, ecn));
        }
    }
    out
}

#[test]
fn the_forwarder_passes_access_links_as_the_simulators_clock_does() {
    let scn = scenario();
    let arrivals = arrivals(11);
    let end = arrivals.last().unwrap().at + Dur::from_secs(3);
    let warmup =
        arrivals[arrivals.len() / 3].at.saturating_since(Time::ZERO) + Dur::from_micros(61);
    for warmup in [Dur::ZERO, warmup] {
        let window = (!warmup.is_zero()).then(|| Time::ZERO + warmup);
        let (bn, _, routes) = network(&scn);
        let (a, a_summary, a_series) = by_calendar(bn, &routes, &arrivals, end, window);
        let (bn, _, routes) = network(&scn);
        let (b, b_summary, b_series) = by_forwarder(bn, routes, &arrivals, end, 23, warmup);
        let name = format!("warmup {warmup}");
        let queues = a_summary.as_object().unwrap();
        assert_eq!(queues.len(), 2 + 6, "{name}: {:?}", queues.keys());
        // Every link carried packets; the loaded ones dropped, the AQMs
        // marked (measured: 227 drops at sa.down, 356 at ca.down).
        let n = |q: &str, k: &str| queues[q][k]["total"].as_u64().unwrap();
        for (q, v) in queues {
            assert!(v["sent_packets"].as_u64().unwrap() > 20, "{name} {q}: {v}");
        }
        assert!(n("access.sa.down", "drops") > 100, "{name}");
        assert!(n("access.ca.down", "drops") > 100, "{name}");
        assert!(n("access.cb.down", "marks") > 0, "{name}: dualpi2 marks");
        assert!(n("access.ca.up", "marks") > 0, "{name}: codel marks");
        let (a_flows, b_flows) = (by_flow(&a, &arrivals), by_flow(&b, &arrivals));
        for (i, (x, y)) in a_flows.iter().zip(&b_flows).enumerate() {
            let (d, f) = (i / FLOWS.len(), FLOWS[i % FLOWS.len()]);
            let first = x.iter().zip(y).position(|(x, y)| x != y);
            assert_eq!(
                first, None,
                "{name}, direction {d}, flow {f}: released differently"
            );
            assert_eq!(x.len(), y.len(), "{name}, direction {d}, flow {f}");
        }
        assert!(
            a[DOWN].iter().any(|(_, e)| *e == Ecn::Ce),
            "{name}: the queues marked"
        );
        assert_eq!(a_summary, b_summary, "{name}: queue summaries");
        let (a_rows, b_rows) = (series_rows(&a_series), series_rows(&b_series));
        let first = a_rows.iter().zip(&b_rows).position(|(x, y)| x != y);
        assert_eq!(
            first, None,
            "{name}: queue series differ from row {first:?}"
        );
        assert_eq!(a_rows.len(), b_rows.len(), "{name}: queue series rows");
    }
}

#[test]
fn the_forwarder_runs_a_wifi_cell_as_the_simulators_clock_does() {
    let scn = parse(WIFI);
    let arrivals = arrivals(13);
    let end = arrivals.last().unwrap().at + Dur::from_secs(3);
    let (bn, _, routes) = network(&scn);
    let (a, a_summary, a_series) = by_calendar(bn, &routes, &arrivals, end, None);
    let (bn, _, routes) = network(&scn);
    let (b, b_summary, b_series) = by_forwarder(bn, routes, &arrivals, end, 29, Dur::ZERO);
    let queues = a_summary.as_object().unwrap();
    // The bottleneck's two and, per station, VI and BE both ways.
    assert_eq!(queues.len(), 2 + 8, "{:?}", queues.keys());
    let n = |q: &str, k: &str| queues[q][k]["total"].as_u64().unwrap();
    for (q, v) in queues.iter().filter(|(q, _)| q.starts_with("wifi.")) {
        assert!(v["sent_packets"].as_u64().unwrap() > 20, "{q}: {v}");
    }
    // The weak station retries and drops at the limit; DualPI2 marks.
    let retried: u64 = [
        "wifi.ca.down.be",
        "wifi.ca.down.vi",
        "wifi.ca.up.be",
        "wifi.ca.up.vi",
    ]
    .iter()
    .map(|q| queues[*q]["drops"]["wifi_retries"].as_u64().unwrap())
    .sum();
    assert!(retried > 0, "retry-limit drops at the weak station");
    assert!(n("wifi.cb.down.be", "marks") + n("wifi.ca.down.be", "marks") > 0);
    let (a_flows, b_flows) = (by_flow(&a, &arrivals), by_flow(&b, &arrivals));
    for (i, (x, y)) in a_flows.iter().zip(&b_flows).enumerate() {
        let (d, f) = (i / FLOWS.len(), FLOWS[i % FLOWS.len()]);
        let first = x.iter().zip(y).position(|(x, y)| x != y);
        assert_eq!(first, None, "direction {d}, flow {f}: released differently");
        assert_eq!(x.len(), y.len(), "direction {d}, flow {f}");
    }
    assert_eq!(a_summary, b_summary, "queue summaries");
    let (a_rows, b_rows) = (series_rows(&a_series), series_rows(&b_series));
    assert_eq!(a_rows, b_rows, "queue series");
}
