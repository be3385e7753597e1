//! The flow recorder: its series and summary entry, and parity between the
//! ways the backends store what it writes (the simulator: one store for
//! every flow; the emulator: a store per flow, rows sorted by time and
//! series; `send`: a store per flow appended to columns).

use serde_json::{json, Value};

use l4slab_core::{Dur, Rate, SeriesStore, Time};

use super::*;

const EXTRA: [(&str, f64); 2] = [("alpha", 0.5), ("k_s", f64::NAN)];

fn ms(n: u64) -> Dur {
    Dur::from_millis(n)
}

fn at(n: u64) -> Time {
    Time::ZERO + ms(n)
}

/// One flow's life, sample by sample: (sample time, RTT samples taken
/// before it, its snapshot); the window starts at 200 ms.
fn script() -> Vec<(Time, Vec<Dur>, FlowSample<'static>)> {
    let cc = |cwnd, ssthresh| CcSample {
        cwnd,
        ssthresh,
        state: Some(1),
        extra: &EXTRA,
    };
    let snap = |delivered, c, sent, lost| FlowSample {
        delivered,
        cc: Some(c),
        pacing: Some(Rate::from_bps(12_000_000)),
        inflight: Some(30_000),
        unsent: None,
        srtt: Some(Dur::from_micros(20_500)),
        min_rtt: None,
        data_packets: Some((sent, lost)),
        ecn_packets: Some((sent, lost / 2)),
        losses_declared: Some(lost),
    };
    vec![
        // Before the flow's start (100 ms): nothing written.
        (at(100), vec![], FlowSample::default()),
        (
            at(200),
            vec![ms(20), ms(30)],
            snap(25_000, cc(40_000, None), 20, 0),
        ),
        (
            at(300),
            vec![],
            snap(150_000, cc(60_000, Some(50_000)), 120, 10),
        ),
        (
            at(400),
            vec![ms(40)],
            snap(275_000, cc(45_000, Some(45_000)), 220, 14),
        ),
    ]
}

/// Run the script through `rec`, writing into `store`.
fn run(rec: &mut FlowRecorder, store: &mut SeriesStore) -> Vec<Option<FlowInterval>> {
    let iv = ms(100);
    let mut out = Vec::new();
    for (t, rtts, snap) in script() {
        for d in rtts {
            rec.record_rtt(d);
        }
        out.push(rec.sample(store, t, t.as_secs_f64(), iv, &snap));
        rec.push_app(store, t.as_secs_f64(), "app_rate", 1.0);
        if t == at(200) {
            rec.start_window(snap.delivered);
        }
    }
    out
}

fn report() -> FlowReport<'static> {
    FlowReport {
        info: FlowInfo {
            cc: Some("prague"),
            app: "bulk",
            transport: "tcp",
            down: true,
            client: Some("client"),
            server: Some("server"),
        },
        delivered: 275_000,
        completion: None,
        end: at(500),
        path: Some(PathCounts {
            sent: Some(UpDown { down: 220, up: 110 }),
            lost: UpDown::of_data(true, 14, 1),
        }),
        transport: TransportCounts {
            retransmits: Some(14),
            ecn: Some("accecn"),
            cc_states: Some(&["SlowStart", "CongestionAvoidance"]),
            ..TransportCounts::default()
        },
        app_metrics: Value::Null,
    }
}

type Row = (f64, String, String, f64);

fn owned(store: &SeriesStore) -> Vec<Row> {
    store
        .rows()
        .map(|(t, s, k, v)| (t, s.to_owned(), k.to_owned(), v))
        .collect()
}

#[test]
fn every_key_has_one_name() {
    for (i, k) in FlowKey::ALL.iter().enumerate() {
        assert_eq!(k.index(), i, "{k:?} out of place in FlowKey::ALL");
        assert!(
            FlowKey::ALL[..i].iter().all(|o| o.name() != k.name()),
            "{k:?}"
        );
    }
}

#[test]
fn series_follow_the_simulators_rules() {
    let mut store = SeriesStore::default();
    let mut rec = FlowRecorder::new("f", at(100), at(200), &mut store);
    let iv = run(&mut rec, &mut store);
    assert_eq!(iv[0].map(|i| i.bytes), Some(0), "the start's own sample");
    let rows = owned(&store);
    let at_t = |t: u64| -> Vec<(&str, f64)> {
        rows.iter()
            .filter(|r| r.0 == at(t).as_secs_f64())
            .map(|r| (r.2.as_str(), r.3))
            .collect()
    };
    // At 100 ms the flow starts: nothing delivered, no RTT sample yet, no
    // packet sent; the app's own series follows the recorder's.
    assert_eq!(
        at_t(100).iter().map(|r| r.0).collect::<Vec<_>>(),
        ["goodput_bps", "app_rate"]
    );
    // 300 ms: 125,000 bytes in 100 ms = 10 Mbit/s; 10 of 100 packets lost;
    // 5 of 100 CE; the NaN variable left out; no rounding anywhere.
    assert_eq!(
        at_t(300),
        [
            ("goodput_bps", 10_000_000.0),
            ("cwnd_bytes", 60_000.0),
            ("ssthresh_bytes", 50_000.0),
            ("cc_state", 1.0),
            ("cc.alpha", 0.5),
            ("pacing_bps", 12_000_000.0),
            ("inflight_bytes", 30_000.0),
            ("srtt_ms", 20.5),
            ("loss_fraction", 0.1),
            ("ce_fraction", 0.05),
            ("lost_packets", 10.0),
            ("app_rate", 1.0),
        ]
    );
    // The RTT samples of the interval (20 and 30 ms at 200 ms; 40 at 400).
    let rtt: Vec<f64> = rows
        .iter()
        .filter(|r| r.2 == "rtt_ms")
        .map(|r| r.3)
        .collect();
    assert_eq!(rtt, [25.0, 40.0]);
}

#[test]
fn the_summary_covers_the_window_and_nulls_what_is_not_measured() {
    let mut store = SeriesStore::default();
    let mut rec = FlowRecorder::new("f", at(100), at(200), &mut store);
    run(&mut rec, &mut store);
    let s = Value::Object(rec.summary(&report()));
    // 250,000 bytes after the window's start (200 ms) over 300 ms.
    assert_eq!(s["goodput_bps"], 6_666_667.0);
    assert_eq!(s["bytes_delivered"], 275_000);
    // Only the window's RTT sample (40 ms; 20 and 30 were before it).
    assert_eq!(s["rtt_ms"]["samples"], 1);
    assert_eq!(s["rtt_ms"]["max"], 40.0);
    assert_eq!(s["start_s"], 0.1);
    assert_eq!(s["completion_s"], Value::Null);
    assert_eq!(s["lost_packets"], 14);
    assert_eq!(s["ack_packets_lost"], 1);
    assert_eq!(s["packets_sent"], json!({"down": 220, "up": 110}));
    assert_eq!(
        s["packet_loss_pct"],
        json!({"down": 6.363636, "up": 0.909091})
    );
    assert_eq!(s["direction"], "down");
    assert_eq!(s["retransmits"], 14);
    assert_eq!(s["ecn"], "accecn");
    // Not measured: null, but there.
    assert_eq!(s["tlp_probes"], Value::Null);
    assert!(s.get("tlp_probes").is_some());
    assert!(s.get("app_metrics").is_none());
}

#[test]
fn every_backend_writes_the_same_rows_and_entry() {
    // The simulator: one store for every flow, another flow interleaved.
    let mut sim = SeriesStore::default();
    let mut other = FlowRecorder::new("other", Time::ZERO, at(200), &mut sim);
    let mut a = FlowRecorder::new("f", at(100), at(200), &mut sim);
    for (t, _, _) in script() {
        let snap = FlowSample {
            delivered: 1_000,
            ..FlowSample::default()
        };
        other.sample(&mut sim, t, t.as_secs_f64(), ms(100), &snap);
    }
    run(&mut a, &mut sim);
    let sim_rows: Vec<Row> = owned(&sim)
        .into_iter()
        .filter(|r| r.1 == "flow/f")
        .collect();
    // The emulator: a store per flow, rows sorted by time and series
    // (stable: a sample's keys keep their order).
    let mut emu = SeriesStore::default();
    let mut b = FlowRecorder::new("f", at(100), at(200), &mut emu);
    run(&mut b, &mut emu);
    let mut emu_rows = owned(&emu);
    emu_rows.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
    // `send`: a store per flow, appended to columns.
    let mut snd = SeriesStore::default();
    let mut c = FlowRecorder::new("f", at(100), at(200), &mut snd);
    run(&mut c, &mut snd);
    let mut cols: (Vec<f64>, Vec<String>, Vec<String>, Vec<f64>) = Default::default();
    for (t, s, k, v) in snd.rows() {
        cols.0.push(t);
        cols.1.push(s.to_owned());
        cols.2.push(k.to_owned());
        cols.3.push(v);
    }
    let send_rows: Vec<Row> = (0..cols.0.len())
        .map(|i| (cols.0[i], cols.1[i].clone(), cols.2[i].clone(), cols.3[i]))
        .collect();
    assert_eq!(sim_rows.len(), 2 + 12 + 12 + 13, "{sim_rows:?}");
    assert_eq!(sim_rows, emu_rows);
    assert_eq!(sim_rows, send_rows);
    let r = report();
    assert_eq!(a.summary(&r), b.summary(&r));
    assert_eq!(a.summary(&r), c.summary(&r));
}
