//! The packet trace follows each packet through the bottleneck: every row
//! about one transmission has its `pkt_id`, the queue events (enqueue,
//! dequeue with its sojourn, CE marks, drops) name the queue and, for
//! DualPI2, the sub-queue. Checked on Prague (L4S) and Cubic (classic)
//! sharing a DualPI2 bottleneck, so there are L and C packets, step and
//! coupled marks, and tail drops of the unresponsive start-up.

mod common;

use std::collections::BTreeMap;

use l4slab_sim::PacketTrace;

const DUALQ: &str = r#"
format = 1
duration = "3s"
packet_trace = true
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "40pkt"
qdisc = "dualpi2"
[[flows]]
name = "prague"
cc = "prague"
[[flows]]
name = "cubic"
cc = "cubic"
"#;

fn trace() -> PacketTrace {
    common::run_toml(DUALQ, &[]).packets.expect("traced")
}

#[test]
fn each_packet_is_sent_queued_dequeued_and_delivered_in_order() {
    let t = trace();
    let mut rows: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for i in 0..t.rows() {
        rows.entry(t.pkt_id[i]).or_default().push(i);
    }
    let (mut delivered, mut dropped, mut marked) = (0, 0, 0);
    for (id, rs) in &rows {
        let events: Vec<&str> = rs.iter().map(|&i| t.event_name(i)).collect();
        assert_eq!(events[0], "send", "packet {id}: {events:?}");
        let pos = |e: &str| events.iter().position(|x| *x == e);
        let count = |e: &str| events.iter().filter(|x| **x == e).count();
        assert!(count("send") == 1 && count("enqueue") <= 1 && count("dequeue") <= 1);
        match (pos("enqueue"), pos("dequeue")) {
            (Some(e), Some(d)) => {
                assert!(e < d, "packet {id}: {events:?}");
                let (ie, id_) = (rs[e], rs[d]);
                // The sojourn is read off the dequeue row: exactly its time
                // minus the enqueue row's.
                let waited_us = (t.t_s[id_] - t.t_s[ie]) * 1e6;
                assert!(
                    (t.sojourn_us[id_] - waited_us).abs() < 1e-3,
                    "packet {id}: {} µs vs {waited_us}",
                    t.sojourn_us[id_]
                );
                assert!(t.sojourn_us[ie].is_nan(), "only a dequeue has a sojourn");
                assert_eq!(t.subqueue[ie], t.subqueue[id_], "one sub-queue");
            }
            // Refused at enqueue, or dropped from the queue (AQM at
            // dequeue), or still queued when the run ended.
            (None, None) => {}
            (Some(e), None) => assert!(
                e == events.len() - 1 || events[e + 1..].iter().any(|x| x.starts_with("drop:")),
                "packet {id}: {events:?}"
            ),
            other => panic!("packet {id}: {other:?} in {events:?}"),
        }
        if let Some(d) = pos("deliver") {
            assert_eq!(d, events.len() - 1, "packet {id}: {events:?}");
            assert!(pos("dequeue").is_some_and(|q| q < d));
            delivered += 1;
        }
        let drops = events.iter().filter(|e| e.starts_with("drop:")).count();
        assert!(drops <= 1 && drops + count("deliver") <= 1, "{events:?}");
        dropped += drops;
        marked += events.iter().filter(|e| e.starts_with("mark:")).count();
        // Every row of a packet has the packet's flow and side.
        assert!(rs.iter().all(|&i| t.flow[i] == t.flow[rs[0]]));
        assert!(rs.iter().all(|&i| t.side[i] == t.side[rs[0]]));
    }
    assert!(
        delivered > 3000 && dropped > 0 && marked > 0,
        "{delivered} {dropped} {marked}"
    );
}

#[test]
fn queue_rows_name_the_queue_and_the_dualpi2_sub_queue() {
    let t = trace();
    let mut seen = BTreeMap::new();
    for i in 0..t.rows() {
        let event = t.event_name(i);
        let queue = t.queue_name(i);
        match event {
            "send" | "deliver" => assert_eq!(queue, None, "a host's event"),
            _ => assert!(queue.is_some(), "{event} at a queue"),
        }
        // Both flows are downloads: data queues down, ACKs up.
        if queue.is_some() {
            let want = if t.side_name(i) == "data" {
                "bottleneck.down"
            } else {
                "bottleneck.up"
            };
            assert_eq!(queue, Some(want));
        }
        if event == "dequeue" || event == "enqueue" {
            *seen
                .entry((t.flow[i], t.side_name(i), event, t.subqueue_name(i)))
                .or_insert(0u64) += 1;
        }
        if event.starts_with("mark:") {
            // Only Prague's ECT(1) data is marked, in L: step or coupled.
            assert_eq!((t.flow[i], t.ecn_name(i)), (0, "ce"));
            assert!(event == "mark:step" || event == "mark:coupled", "{event}");
        }
    }
    // Prague's data (ECT(1)) goes to L, Cubic's (Not-ECT) to C.
    assert!(
        seen.contains_key(&(0, "data", "dequeue", Some("l"))),
        "{seen:?}"
    );
    assert!(
        seen.contains_key(&(1, "data", "dequeue", Some("c"))),
        "{seen:?}"
    );
    assert!(!seen
        .keys()
        .any(|k| k.0 == 1 && k.1 == "data" && k.3 == Some("l")));
    assert!(!seen
        .keys()
        .any(|k| k.0 == 0 && k.1 == "data" && k.3 == Some("c")));
}
