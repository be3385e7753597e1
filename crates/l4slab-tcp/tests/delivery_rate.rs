//! Delivery-rate samples (draft-cheng-iccrg-delivery-rate-estimation) as the
//! controller sees them in `AckEvent`.

mod common;

use common::cc::Fixed;
use common::{dms, ms, Net, Writes};
use l4slab_core::Rate;
use l4slab_tcp::{Bulk, TransportConfig};

const MSS: u32 = 1448;

#[test]
fn a_saturated_bottleneck_is_measured_at_its_payload_rate() {
    // 10 Mbit/s of 1500 B packets carrying 1448 B: 9.653 Mbit/s of payload.
    let cc = Fixed::segments(50, MSS);
    let log = cc.log.clone();
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(cc),
        Box::new(Bulk::new()),
        dms(10),
    );
    n.rate[0] = Some(Rate::from_mbps(10));
    n.connect();
    n.run_until(ms(2000));
    let payload_rate = 10e6 * 1448.0 / 1500.0;
    let late: Vec<_> = log
        .acks()
        .into_iter()
        .filter(|(t, _)| *t > ms(1000))
        .collect();
    assert!(late.len() > 100);
    for (t, a) in &late {
        let r = a.delivery_rate.expect("every ACK delivers data").as_bps() as f64;
        assert!((r / payload_rate - 1.0).abs() < 0.01, "{t}: {r}");
        assert!(!a.app_limited);
        assert!(a.delivered > 0);
    }
}

#[test]
fn an_application_limited_sender_marks_its_samples() {
    // One segment every 100 ms on an idle path: never cwnd-limited.
    let cc = Fixed::segments(10, MSS);
    let log = cc.log.clone();
    let plan: Vec<_> = (0..10)
        .map(|i| (ms(20 + 100 * i), u64::from(MSS)))
        .collect();
    let mut n = Net::simple(
        TransportConfig::default(),
        Box::new(cc),
        Box::new(Writes::new(&plan, false)),
        dms(10),
    );
    n.connect();
    n.run_until(ms(1500));
    let acks = log.acks();
    let with_data: Vec<_> = acks.iter().filter(|(_, a)| a.acked_bytes > 0).collect();
    assert_eq!(with_data.len(), 10);
    assert!(with_data.iter().all(|(_, a)| a.app_limited));
}
