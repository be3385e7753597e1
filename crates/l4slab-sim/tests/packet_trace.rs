//! The packet trace streams: `run_streaming` hands it over in fixed-size
//! chunks during the run (bounded memory), and the chunks put together are
//! exactly the trace `run` keeps whole — deterministically.

mod common;

use l4slab_sim::{run_streaming, PacketTrace, RunOptions, SimError, CHUNK_ROWS};

/// A loss-free Reno download with the trace on: > 2 chunks of rows, SACKs
/// from the tail-drop queue.
const TRACED: &str = r#"
format = 1
duration = "6s"
packet_trace = true
[bottleneck]
rate = "100Mbit"
delay = "5ms"
buffer = "60pkt"
[[flows]]
name = "bulk"
cc = "reno"
app = "bulk"
"#;

/// Run with a sink that copies every chunk; returns the chunks' sizes and
/// their rows put together.
fn streamed(sets: &[&str]) -> (Vec<usize>, PacketTrace) {
    let scn = common::scenario(TRACED, sets);
    let mut sizes = Vec::new();
    let mut all = PacketTrace::default();
    let out = run_streaming(&scn, &RunOptions::default(), &mut |_| true, &mut |c| {
        sizes.push(c.rows());
        all.extend_from(c);
        true
    })
    .expect("run");
    assert!(out.packets.is_none(), "the sink got the rows");
    (sizes, all)
}

fn same_rows(a: &PacketTrace, b: &PacketTrace) -> bool {
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    a.rows() == b.rows()
        && bits(&a.t_s) == bits(&b.t_s)
        && a.pkt_id == b.pkt_id
        && a.queue == b.queue
        && a.subqueue == b.subqueue
        && bits(&a.sojourn_us) == bits(&b.sojourn_us)
        && a.names == b.names
        && a.event == b.event
        && a.flow == b.flow
        && a.side == b.side
        && a.seq == b.seq
        && a.len == b.len
        && a.ack == b.ack
        && a.ecn == b.ecn
        && a.retransmission == b.retransmission
        && a.wnd == b.wnd
        && a.sack_offsets == b.sack_offsets
        && a.sack == b.sack
        && a.flags == b.flags
}

#[test]
fn chunks_have_fixed_size_and_add_up_to_the_whole_trace() {
    let (sizes, chunked) = streamed(&[]);
    let whole = common::run_toml(TRACED, &[]).packets.expect("trace");
    assert!(sizes.len() >= 3, "{sizes:?}");
    let (last, full) = sizes.split_last().unwrap();
    assert!(full.iter().all(|&n| n == CHUNK_ROWS), "{sizes:?}");
    assert!(*last < CHUNK_ROWS);
    assert_eq!(sizes.iter().sum::<usize>(), whole.rows());
    assert!(same_rows(&chunked, &whole));
    // The trace has what a time-sequence graph needs: SACKed ACKs, drops.
    assert!((0..whole.rows()).any(|i| whole.sack_text(i).contains('-')));
    assert!((0..whole.rows()).any(|i| whole.event_name(i) == "drop:overlimit"));
    // Same seed, same rows; the chunking does not depend on anything else.
    let (sizes2, again) = streamed(&[]);
    assert_eq!(sizes, sizes2);
    assert!(same_rows(&chunked, &again));
}

#[test]
fn a_sink_that_refuses_cancels_the_run() {
    let scn = common::scenario(TRACED, &[]);
    let mut calls = 0;
    let r = run_streaming(&scn, &RunOptions::default(), &mut |_| true, &mut |_| {
        calls += 1;
        false
    });
    assert!(matches!(r, Err(SimError::Cancelled(_))));
    assert_eq!(calls, 1, "the run stops at the first refused chunk");
}

#[test]
fn without_a_trace_the_sink_is_never_called() {
    let scn = common::scenario(TRACED, &["packet_trace=false", "duration=1s"]);
    let mut calls = 0;
    run_streaming(&scn, &RunOptions::default(), &mut |_| true, &mut |_| {
        calls += 1;
        true
    })
    .expect("run");
    assert_eq!(calls, 0);
    // A trace that is on but short still arrives, as one last chunk.
    let scn = common::scenario(TRACED, &["duration=100ms"]);
    let mut sizes = Vec::new();
    run_streaming(&scn, &RunOptions::default(), &mut |_| true, &mut |c| {
        sizes.push(c.rows());
        true
    })
    .expect("run");
    assert_eq!(sizes.len(), 1);
    assert!(sizes[0] > 0 && sizes[0] < CHUNK_ROWS);
}
