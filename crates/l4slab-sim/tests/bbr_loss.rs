//! Behaviour: BBR under random loss — the LiteSpeed BBR post (`litespeed-bbr-loss`):
//! a 10 MB file over 20 Mbit/s, 25 ms one way, random loss 0/0.5/1/2/3 %
//! on the data direction. The published claim: BBR's transfer time stays
//! within a few percent of the lossless time while loss-based control
//! collapses. BBR v1 (`bbr`) ignores loss as a congestion signal; BBRv3
//! (`bbr3`) deliberately backs off when a round loses more than 2 %
//! (draft-ietf-ccwg-bbr `LossThresh`), so its times grow at 2-3 %. The
//! numbers this prints are recorded in docs/models/bbr.md and bbr3.md.

mod common;

fn scenario(cc: &str) -> String {
    format!(
        r#"
format = 1
duration = "120s"
[bottleneck]
rate = "20Mbit"
delay = "25ms"          # one way: base RTT 50 ms
buffer = "1000pkt"      # netem's default queue limit
[[flows]]
name = "file"
cc = "{cc}"
app = {{ kind = "file", size = "10MB" }}
"#
    )
}

const LOSSES: [f64; 5] = [0.0, 0.005, 0.01, 0.02, 0.03];

/// Completion time (s), retransmits, mean RTT (ms) per loss rate.
fn file_times(cc: &str) -> Vec<(f64, f64, f64)> {
    LOSSES
        .iter()
        .map(|&p| {
            let out = common::run_toml(&scenario(cc), &[&format!("bottleneck.down.loss={p}")]);
            let f = common::flow(&out, "file");
            let t = f["completion_s"]
                .as_f64()
                .unwrap_or_else(|| panic!("{cc} at {p}: the file did not finish: {f}"));
            (
                t,
                common::f64_of(&f["retransmits"]),
                common::f64_of(&f["rtt_ms"]["mean"]),
            )
        })
        .collect()
}

fn print(cc: &str, rows: &[(f64, f64, f64)]) {
    for (p, (t, rtx, rtt)) in LOSSES.iter().zip(rows) {
        println!(
            "{cc:>5} loss {:>4.1} %: {t:6.2} s ({:+5.1} % vs lossless), {rtx:5.0} retransmits, mean RTT {rtt:5.1} ms",
            p * 100.0,
            (t / rows[0].0 - 1.0) * 100.0
        );
    }
}

#[test]
fn bbr_v1_keeps_near_full_throughput_under_random_loss() {
    let bbr = file_times("bbr");
    let reno = file_times("reno");
    print("bbr", &bbr);
    print("reno", &reno);
    // 10 MB at 20 Mbit/s is 4.0 s of payload; Startup and the handshake add
    // about half a second (the study: 4.5 s).
    let clean = bbr[0].0;
    assert!((4.0..5.0).contains(&clean), "lossless time {clean}");
    for (p, row) in LOSSES.iter().zip(&bbr) {
        assert!(
            row.0 <= clean * 1.10,
            "bbr at {p}: {:.2} s vs {clean:.2} s lossless",
            row.0
        );
    }
    // Reno under the same 3 % loss takes several times longer.
    assert!(
        reno[4].0 > 3.0 * bbr[4].0,
        "reno {:.2} s vs bbr {:.2} s",
        reno[4].0,
        bbr[4].0
    );
}

#[test]
fn bbr3_tolerates_loss_up_to_its_threshold_then_backs_off() {
    let v3 = file_times("bbr3");
    let v1 = file_times("bbr");
    print("bbr3", &v3);
    let clean = v3[0].0;
    assert!((4.0..5.0).contains(&clean), "lossless time {clean}");
    // Below LossThresh (2 % per round) the transfer stays fast ...
    assert!(v3[1].0 <= clean * 1.25, "0.5 %: {:.2} s", v3[1].0);
    // ... above it BBRv3 reduces its bounds by design: slower than v1, but
    // far from Reno's collapse. (Measured values are in docs/models/bbr3.md.)
    assert!(
        v3[4].0 > v1[4].0,
        "v3 {:.2} s vs v1 {:.2} s at 3 %",
        v3[4].0,
        v1[4].0
    );
    for w in v3.windows(2) {
        assert!(
            w[1].0 >= w[0].0 * 0.95,
            "time should not fall as loss rises: {v3:?}"
        );
    }
}

/// Issue symptom: under heavy random loss at a long RTT, BBR suffered
/// repeated retransmission timeouts that Linux does not. The RFC 6298 timer
/// restarts only on an ACK of new data, so while fast recovery keeps
/// retransmitting the head, the timer started by the head's first send
/// expires. Linux restarts it when it retransmits the head and probes a
/// tail first (RFC 8985). 10 % loss, 200 ms RTT, 30 s of BBR v1:
/// Linux-style recovery (the default) 14.5 Mbit/s, 0 RTOs; the RFC-only
/// sender 7.1 Mbit/s, 42 RTOs (230 spurious retransmissions). Kernel BBR
/// through the emulator, same scenario and seed: 13.24 Mbit/s, 1 RTO
/// (`TCPTimeouts`), 44 SACK recoveries.
#[test]
fn bbr_under_heavy_loss_at_a_long_rtt_has_no_timeout_storm() {
    let base = r#"
format = 1
duration = "30s"
[bottleneck]
rate = "20Mbit"
delay = "100ms"
buffer = "1000pkt"
[bottleneck.down]
loss = "10%"
[[flows]]
name = "bulk"
cc = "bbr"
app = "bulk"
"#;
    let rfc = [
        "flows[0].transport.rto_formula=rfc6298",
        "flows[0].transport.tlp=false",
        "flows[0].transport.frto=false",
        "flows[0].transport.undo=false",
    ];
    let linux = common::run_toml(base, &[]);
    let old = common::run_toml(base, &rfc);
    let f = |out: &l4slab_sim::RunOutput| {
        let f = common::flow(out, "bulk");
        (
            common::f64_of(&f["goodput_bps"]) / 1e6,
            f["rto_count"].as_u64().unwrap(),
        )
    };
    let ((g_linux, rto_linux), (g_rfc, rto_rfc)) = (f(&linux), f(&old));
    println!("BBR, 10 % loss, 200 ms: Linux recovery {g_linux:.2} Mbit/s, {rto_linux} RTOs; RFC-only {g_rfc:.2} Mbit/s, {rto_rfc} RTOs");
    assert!(rto_linux <= 2, "{rto_linux} RTOs");
    assert!(g_linux > 10.0, "{g_linux} Mbit/s");
    // The symptom, still there with the RFC-only sender.
    assert!(rto_rfc >= 20, "{rto_rfc} RTOs");
    assert!(g_rfc < 0.7 * g_linux);
}
