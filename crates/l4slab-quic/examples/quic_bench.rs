//! Cost per packet of the QUIC-style connection in a bulk transfer between
//! two `Connection`s over an in-memory path (`tests/support/bulk.rs`):
//! windows of 1,000 and 10,000 packets, 1 and 1,000 streams.
//!
//! `cargo run --release -p l4slab-quic --example quic_bench -- [--secs S] [--warmup S] [--loss PPM] [--max-data B] [--max-stream-data B] [--hash] [BDP:STREAMS]...`
//!
//! Each case runs `--warmup` simulated seconds (2 by default: slow start and
//! its losses), then `--secs` more (5) timed. *ns/pkt* is the wall time of
//! the timed part over the datagrams the client sent in it (each with its
//! share of the server's receive and ACK work and the client's ACK
//! processing; the path's own cost is included). `--hash` prints an FNV-1a
//! hash of every datagram sent (time, direction, ECN, bytes) instead of
//! timing, to check that two builds behave the same. Instructions of the
//! timed part alone, whatever the machine's load:
//! `valgrind --tool=callgrind --toggle-collect='quic_bench::timed' target/release/examples/quic_bench ...`.

// A bench measures wall time; the connections it drives never see it.
#![allow(clippy::disallowed_methods)]

#[path = "../tests/support/bulk.rs"]
mod bulk;

use std::time::Instant;

use bulk::{Bulk, BulkConfig, Fingerprint};
use l4slab_core::Time;

/// The timed part, a function of its own for
/// `valgrind --tool=callgrind --toggle-collect='quic_bench::timed'`.
#[inline(never)]
fn timed(b: &mut Bulk, until: Time) {
    b.run_until(until);
}

fn main() {
    let mut secs = 5.0;
    let mut warmup = 2.0;
    let mut loss_ppm = 0;
    let mut hash = false;
    let (mut max_data, mut max_stream_data) = (1u64 << 40, 1u64 << 40);
    let mut cases = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> f64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--secs" => secs = num("--secs"),
            "--warmup" => warmup = num("--warmup"),
            "--loss" => loss_ppm = num("--loss") as u32,
            "--hash" => hash = true,
            "--max-data" => max_data = num("--max-data") as u64,
            "--max-stream-data" => max_stream_data = num("--max-stream-data") as u64,
            c => {
                let (b, s) = c
                    .split_once(':')
                    .expect("a case is BDP:STREAMS, e.g. 1000:1");
                cases.push((b.parse().expect("BDP"), s.parse().expect("STREAMS")));
            }
        }
    }
    if cases.is_empty() {
        cases = vec![(1000u64, 1usize), (1000, 1000), (10000, 1), (10000, 1000)];
    }
    println!(
        "| BDP pkts | streams | loss ppm | client datagrams | server datagrams | lost (buffer + random) | {} |",
        if hash { "fingerprint" } else { "wall s | ns/pkt" }
    );
    println!(
        "|---|---|---|---|---|---|---|{}",
        if hash { "" } else { "---|" }
    );
    for (bdp, streams) in cases {
        let mut cfg = BulkConfig::with_bdp(bdp, streams);
        cfg.loss_ppm = loss_ppm;
        cfg.max_data = max_data;
        cfg.max_stream_data = max_stream_data;
        let mut b = Bulk::new(&cfg);
        if hash {
            b.fingerprint = Some(Fingerprint(0xcbf2_9ce4_8422_2325));
        }
        b.run_until(Time::from_nanos((warmup * 1e9) as u64));
        let (up0, down0, drops0, rnd0) =
            (b.sent_up, b.sent_down, b.buffer_drops(), b.random_losses);
        let t0 = Instant::now();
        timed(&mut b, Time::from_nanos(((warmup + secs) * 1e9) as u64));
        let wall = t0.elapsed().as_secs_f64();
        let up = b.sent_up - up0;
        let lost = format!("{} + {}", b.buffer_drops() - drops0, b.random_losses - rnd0);
        let tail = match b.fingerprint {
            Some(f) => format!("{:016x}", f.0),
            None => format!("{wall:.3} | {:.0}", wall * 1e9 / up as f64),
        };
        println!(
            "| {bdp} | {streams} | {loss_ppm} | {up} | {} | {lost} | {tail} |",
            b.sent_down - down0
        );
    }
}
