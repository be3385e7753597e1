//! Parity of the emulator's forwarder with the simulator's clock, through the
//! forwarder's own code: its wake-up step ([`Forwarder::wake`]), its TUN
//! reads (packet parsing, flow classification, slab) and its TUN writes (ECN
//! written into the real header), on fake TUNs (`SOCK_SEQPACKET` socket
//! pairs, one packet per datagram as a TUN gives) and a fake clock that
//! wakes up late (up to 400 µs after each deadline) but at once when a
//! packet arrives, as `epoll` does.
//!
//! The same recorded arrival sequence (IPv4/UDP packets: times, sizes, ECN
//! codepoints, flows by port, both directions) also runs through a
//! [`Bottleneck`] clocked as the simulator's engine clocks it (each direction
//! exactly at its deadlines, `advance` before every arrival and sample).
//! Both must release the same packets, in the same order, with the same ECN
//! field, and write identical queue summaries and queue series. No root
//! needed.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use l4slab_bottleneck::Bottleneck;
use l4slab_core::{Dur, Ecn, Packet, Rate, SeriesStore, SimRng, Time};
use l4slab_link::{Bernoulli, ConstantRate, EcnRewrite, Link};
use l4slab_qdisc::{DualPi2, DualPi2Config, FqPie, FqPieConfig, Pie, PieConfig, Qdisc};

use super::{Classifier, Config, Forwarder, Hooks, Step, DOWN, UP};
use crate::access::AccessRoutes;
use crate::packet::VNET_HDR_LEN;
use crate::stats::round6;
use crate::sys::{self, Clock};

pub(super) const SAMPLE: Dur = Dur::from_millis(50);
pub(super) const PORTS: [u16; 4] = [5001, 5002, 5003, 5004];
pub(super) const FLOWS: [&str; 4] = ["a", "b", "c", "d"];

pub(super) struct NoHooks;

impl Hooks for NoHooks {
    fn on_signals(&mut self, _: &[i32]) -> Step {
        Step::Continue
    }
}

/// A non-blocking `SOCK_SEQPACKET` pair: (the forwarder's end, the test's end).
pub(super) fn fake_tun() -> (OwnedFd, OwnedFd) {
    crate::sys::seqpacket_pair().expect("socketpair")
}

/// One arrival of the recorded sequence.
#[derive(Clone, Copy)]
pub(super) struct Arrival {
    pub(super) at: Time,
    pub(super) dir: usize,
    pub(super) flow: u32,
    pub(super) ip_len: u16,
    pub(super) ecn: Ecn,
}

pub(super) fn arrivals(seed: u64) -> Vec<Arrival> {
    let mut rng = SimRng::derive(seed, "arrivals");
    let mut t = [Time::ZERO; 2];
    let codepoints = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
    let mut out = Vec::new();
    for _ in 0..3_000 {
        let dir = if rng.chance(0.8) { DOWN } else { UP };
        let gap_us = if rng.chance(0.1) {
            2_000 + rng.below(8_000)
        } else {
            rng.below(700)
        };
        t[dir] += Dur::from_micros(gap_us);
        out.push(Arrival {
            at: t[dir],
            dir,
            flow: rng.below(4) as u32,
            ip_len: if rng.chance(0.2) { 60 } else { 1_500 },
            ecn: codepoints[rng.below(4) as usize],
        });
    }
    out.sort_by_key(|a| a.at);
    out
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum = 0u32;
    for w in h.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The frame a TUN would give: a zero virtio-net header, then IPv4/UDP to
/// the flow's port, the packet's number in the payload.
pub(super) fn frame(a: &Arrival, id: u64) -> Vec<u8> {
    let mut f = vec![0u8; VNET_HDR_LEN + usize::from(a.ip_len)];
    let ip = &mut f[VNET_HDR_LEN..];
    ip[0] = 0x45;
    ip[1] = a.ecn as u8;
    ip[2..4].copy_from_slice(&a.ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 77, 0, 2]);
    ip[16..20].copy_from_slice(&[10, 77, 0, 1]);
    let c = ipv4_checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip[20..22].copy_from_slice(&6000u16.to_be_bytes());
    ip[22..24].copy_from_slice(&PORTS[a.flow as usize].to_be_bytes());
    ip[24..26].copy_from_slice(&(a.ip_len - 20).to_be_bytes());
    ip[28..36].copy_from_slice(&id.to_be_bytes());
    f
}

fn bottleneck(qdisc: &dyn Fn() -> Box<dyn Qdisc>) -> Bottleneck {
    let link = |mbps, name: &str| {
        let link = Link::new(
            qdisc(),
            Box::new(ConstantRate::new(Rate::from_mbps(mbps)).unwrap()),
            Box::new(Bernoulli::new(0.01).unwrap()),
            SimRng::derive(5, &format!("link/{name}/loss")),
            Dur::from_millis(10),
        )
        .with_ecn_rewrite(EcnRewrite::RemarkEct1ToEct0);
        (link, SimRng::derive(5, &format!("link/{name}/qdisc")))
    };
    Bottleneck::new([link(10, "down"), link(5, "up")], PORTS.len())
}

/// What a run released, per direction: (packet number, ECN field) in order.
pub(super) type Released = [Vec<(u64, Ecn)>; 2];

pub(super) fn series_rows(s: &SeriesStore) -> Vec<(u64, String, String, u64)> {
    (0..s.len())
        .filter(|&i| s.name(s.key[i]) != "timing_error_max_us")
        .map(|i| {
            (
                s.t_s[i].to_bits(),
                s.name(s.series[i]).to_owned(),
                s.name(s.key[i]).to_owned(),
                s.value[i].to_bits(),
            )
        })
        .collect()
}

/// The simulator's way: each direction run exactly at its deadlines.
/// With `window`, the measurement window starts then (before a sample due
/// at the same instant), as the simulator's calendar event does.
fn by_calendar(
    mut bn: Bottleneck,
    arrivals: &[Arrival],
    end: Time,
    mut window: Option<Time>,
) -> (Released, serde_json::Value, SeriesStore) {
    let from = window.unwrap_or(Time::ZERO);
    let mut released: Released = Default::default();
    let mut store = SeriesStore::default();
    let mut departed = Vec::new();
    let mut collect = |bn: &mut Bottleneck, d: usize, departed: &mut Vec<(Time, Packet)>| {
        bn.clear_dropped(d);
        released[d].extend(departed.drain(..).map(|(_, p)| (p.id, p.ecn)));
    };
    let mut next = 0;
    let mut sample_at = Time::ZERO + SAMPLE;
    loop {
        let deadline = [DOWN, UP].map(|d| bn.next_deadline(d));
        let arrival = arrivals.get(next).map(|a| a.at);
        let t = [deadline[0], deadline[1], arrival, Some(sample_at), window]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if t > end {
            break;
        }
        if window == Some(t) {
            for d in [DOWN, UP] {
                bn.advance(d, t, &mut departed);
                collect(&mut bn, d, &mut departed);
            }
            bn.start_window(t);
            window = None;
            continue;
        }
        if sample_at == t {
            for d in [DOWN, UP] {
                bn.advance(d, t, &mut departed);
                collect(&mut bn, d, &mut departed);
            }
            bn.sample(t, round6(t.as_secs_f64()), SAMPLE, &mut store);
            sample_at += SAMPLE;
            continue;
        }
        for d in [DOWN, UP] {
            if deadline[d] == Some(t) {
                bn.advance(d, t, &mut departed);
                collect(&mut bn, d, &mut departed);
            }
        }
        if arrival == Some(t) {
            let a = arrivals[next];
            let mut pkt = Packet::new(next as u64, a.flow, u32::from(a.ip_len), a.ecn);
            pkt.handle = 0;
            next += 1;
            bn.advance(a.dir, t, &mut departed);
            collect(&mut bn, a.dir, &mut departed);
            bn.enqueue(a.dir, t, pkt);
            collect(&mut bn, a.dir, &mut departed);
        }
    }
    for d in [DOWN, UP] {
        bn.advance(d, end, &mut departed);
        collect(&mut bn, d, &mut departed);
    }
    bn.check_accounting();
    let summary = bn.queues_json(end.saturating_since(from), &FLOWS);
    (released, summary, store)
}

/// Read every frame the forwarder wrote to `peer` (direction `d`).
pub(super) fn drain(peer: RawFd, d: usize, released: &mut Released) {
    let mut buf = vec![0u8; 4096];
    while let Ok(Some(n)) = sys::read_nb(peer, &mut buf) {
        let ip = &buf[VNET_HDR_LEN..n];
        let id = u64::from_be_bytes(ip[28..36].try_into().unwrap());
        let ecn = match ip[1] & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        };
        released[d].push((id, ecn));
    }
}

/// The emulator's way: the forwarder's own wake-up and TUN code, late
/// (with the hosts' access links `access`, when the runtime has them).
pub(super) fn by_forwarder(
    bn: Bottleneck,
    access: AccessRoutes,
    arrivals: &[Arrival],
    end: Time,
    seed: u64,
    warmup: Dur,
) -> (Released, serde_json::Value, SeriesStore) {
    // (forwarder's end, test's end) for the client side and the server side.
    let (cli, cli_peer) = fake_tun();
    let (srv, srv_peer) = fake_tun();
    let cfg = Config {
        classifier: Classifier::Ports(PORTS.to_vec()),
        sample_interval: Some(SAMPLE),
        coalesce: false,
        warmup,
        access,
        ..Config::default()
    };
    let mut fwd = Forwarder::new(
        bn,
        (cli.as_raw_fd(), srv.as_raw_fd()),
        None,
        Clock::start(),
        cfg,
    )
    .unwrap();
    fwd.set_origin(Time::ZERO);
    // Down arrives from the server side and leaves on the client side.
    let inbound = [srv_peer.as_raw_fd(), cli_peer.as_raw_fd()];
    let outbound = [cli_peer.as_raw_fd(), srv_peer.as_raw_fd()];
    let mut released: Released = Default::default();
    let mut jitter = SimRng::derive(seed, "scheduler");
    let mut next_sample = Some(Time::ZERO + SAMPLE);
    let mut next = 0;
    let mut now = Time::ZERO;
    while now <= end {
        assert_eq!(
            fwd.wake(now, &mut next_sample, &mut NoHooks),
            Step::Continue
        );
        while arrivals.get(next).is_some_and(|a| a.at == now) {
            let a = &arrivals[next];
            sys::write_all_nb(inbound[a.dir], &frame(a, next as u64)).unwrap();
            fwd.read_tun(a.dir, now);
            next += 1;
        }
        for d in [DOWN, UP] {
            drain(outbound[d], d, &mut released);
        }
        let deadline = [fwd.next_event(DOWN), fwd.next_event(UP), next_sample]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        let woke = deadline.max(now) + Dur::from_micros(jitter.below(400));
        now = match arrivals.get(next) {
            Some(a) if a.at <= woke => a.at,
            _ => woke,
        };
    }
    fwd.wake(end, &mut next_sample, &mut NoHooks);
    for d in [DOWN, UP] {
        drain(outbound[d], d, &mut released);
        assert_eq!(
            fwd.dirs[d].counters.write_errors, 0,
            "every write went through"
        );
    }
    fwd.bn.check_accounting();
    let summary = fwd
        .bn
        .queues_json(end.saturating_since(Time::ZERO + warmup), &FLOWS);
    let series = std::mem::take(&mut fwd.series);
    (released, summary, series)
}

#[test]
fn the_forwarder_releases_what_the_simulators_clock_releases() {
    type MakeQdisc = Box<dyn Fn() -> Box<dyn Qdisc>>;
    let qdiscs: [(&str, MakeQdisc); 3] = [
        (
            "dualpi2",
            Box::new(|| Box::new(DualPi2::new(DualPi2Config::default()))),
        ),
        (
            "pie",
            Box::new(|| {
                Box::new(Pie::new(PieConfig {
                    ecn: true,
                    ..PieConfig::default()
                }))
            }),
        ),
        (
            "fq_pie",
            Box::new(|| {
                Box::new(FqPie::new(FqPieConfig {
                    ecn: true,
                    ..FqPieConfig::default()
                }))
            }),
        ),
    ];
    let arrivals = arrivals(9);
    let end = arrivals.last().unwrap().at + Dur::from_secs(3);
    // A measurement window from the middle of the overload, between samples.
    let warmup =
        arrivals[arrivals.len() / 2].at.saturating_since(Time::ZERO) + Dur::from_micros(137);
    let mut whole = serde_json::Value::Null;
    for ((name, qdisc), warmup) in qdiscs.iter().flat_map(|q| [(q, Dur::ZERO), (q, warmup)]) {
        let window = (!warmup.is_zero()).then(|| Time::ZERO + warmup);
        let (a, a_summary, a_series) =
            by_calendar(bottleneck(qdisc.as_ref()), &arrivals, end, window);
        let (b, b_summary, b_series) = by_forwarder(
            bottleneck(qdisc.as_ref()),
            AccessRoutes::default(),
            &arrivals,
            end,
            17,
            warmup,
        );
        let name = &format!("{name}, warmup {warmup}");
        if warmup.is_zero() {
            whole = a_summary.clone();
        } else {
            // The window left the first half's drops and packets out.
            for k in ["offered_packets", "sent_packets"] {
                let (w, r) = (
                    &a_summary["bottleneck.down"][k],
                    &whole["bottleneck.down"][k],
                );
                assert!(w.as_u64() < r.as_u64(), "{name}: {k} {w} of {r}");
            }
        }
        let out = a[DOWN].len() + a[UP].len();
        assert!(
            out > 2_000 && out < arrivals.len() - 50,
            "{name}: {out} of {} released: the mix must overload the queue",
            arrivals.len()
        );
        for d in [DOWN, UP] {
            let first = a[d].iter().zip(&b[d]).position(|(x, y)| x != y);
            assert_eq!(first, None, "{name}, direction {d}: released differently");
            assert_eq!(a[d].len(), b[d].len(), "{name}, direction {d}");
        }
        assert!(
            a[DOWN].iter().any(|(_, e)| *e == Ecn::Ce),
            "{name}: the queue marked"
        );
        assert_eq!(a_summary, b_summary, "{name}: queue summaries");
        let (a_rows, b_rows) = (series_rows(&a_series), series_rows(&b_series));
        assert!(a_rows.len() > 100, "{name}");
        let first = a_rows.iter().zip(&b_rows).position(|(x, y)| x != y);
        assert_eq!(
            first, None,
            "{name}: queue series differ from row {first:?}"
        );
        assert_eq!(a_rows.len(), b_rows.len(), "{name}: queue series rows");
    }
}

#[test]
fn a_live_sample_has_the_queues_series_and_the_directions_counters() {
    // `Config::live` (l4slab gateway's status line): each sample replaces the file.
    let path = std::env::temp_dir().join(format!("l4slab-live-{}.json", std::process::id()));
    let (cli, cli_peer) = fake_tun();
    let (srv, _srv_peer) = fake_tun();
    let cfg = Config {
        classifier: Classifier::Ports(PORTS.to_vec()),
        sample_interval: Some(SAMPLE),
        coalesce: false,
        live: Some(path.clone()),
        ..Config::default()
    };
    let dualpi2 = || Box::new(DualPi2::new(DualPi2Config::default())) as Box<dyn Qdisc>;
    let mut fwd = Forwarder::new(
        bottleneck(&dualpi2),
        (cli.as_raw_fd(), srv.as_raw_fd()),
        None,
        Clock::start(),
        cfg,
    )
    .unwrap();
    fwd.set_origin(Time::ZERO);
    let first = *arrivals(9).iter().find(|a| a.dir == UP).unwrap();
    let a = Arrival {
        at: Time::ZERO,
        ..first
    };
    sys::write_all_nb(cli_peer.as_raw_fd(), &frame(&a, 0)).unwrap();
    fwd.read_tun(UP, Time::ZERO);
    let mut next_sample = Some(Time::ZERO + SAMPLE);
    fwd.wake(Time::ZERO + SAMPLE, &mut next_sample, &mut NoHooks);
    // Written by the file writer's thread.
    fwd.sync_files();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["t_s"], 0.05, "{v}");
    let up = &v["forwarder"]["bottleneck.up"];
    assert_eq!(up["packets_in"], 1, "{v}");
    assert_eq!(up["bytes_in"], u64::from(a.ip_len), "{v}");
    assert_eq!(v["forwarder"]["bottleneck.down"]["packets_in"], 0, "{v}");
    // The sample's series, as series.parquet names them: the packet has left.
    let q = &v["queues"]["bottleneck.up"];
    assert_eq!(q["backlog_pkts"], 0.0, "{v}");
    for key in ["backlog_bytes", "drops", "marks", "utilization"] {
        assert!(q[key].is_number(), "{key}: {v}");
    }
    assert!(
        v["queues"]["bottleneck.down"]["backlog_pkts"].is_number(),
        "{v}"
    );
}
