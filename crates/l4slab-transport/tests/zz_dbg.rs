mod common;
use common::{dms, Dir, Net};
use l4slab_cc::{Reno, RenoConfig};
use l4slab_core::{Dur, Rate, Time, TraceEvent};
use l4slab_transport::{File, TransportConfig, AppEvent};

#[test]
fn dbg() {
    let cfg = TransportConfig { delayed_ack: true, notsent_lowat: Some(1), ..TransportConfig::default() };
    let mut n = Net::new(cfg.clone(), Box::new(Reno::new(RenoConfig::default())), Box::new(File::new(60778)), cfg, Box::new(Reno::new(RenoConfig::default())), dms(30)).with_seed(3684922727472146386);
    n.rate = [Some(Rate::from_mbps(1)), Some(Rate::from_mbps(1))];
    let loss = [0.26411818582759683, 0.010286601629272356];
    n.set_drop(move |dir, _, rng| rng.chance(loss[if dir == Dir::C2S { 0 } else { 1 }]));
    n.set_jitter(move |_, _, rng| Dur::from_nanos(rng.below(19 * 1_000_000)));
    n.connect();
    n.run_until(Time::from_secs(200));
    let ep = &n.client.ep;
    eprintln!("state {:?} unsent {} inflight {} writable {} next_timer {:?} stats {:?}", ep.state(), ep.unsent_bytes(), ep.bytes_in_flight(), ep.is_writable(), ep.next_timer(), ep.stats());
    eprintln!("server delivered {} srv state {:?}", n.server.delivered(), n.server.ep.state());
    let last: Vec<_> = n.log.iter().rev().take(20).collect();
    for s in last.iter().rev() { eprintln!("{} {:?} {:?} seq {} len {} ack {} drop {} rtx {}", s.t, s.dir, s.seg.flags, s.seg.seq, s.seg.len, s.seg.ack, s.dropped, s.seg.retransmission); }
    for (t, e) in n.client.tracer.0.iter().rev().take(10) { eprintln!("{t} {e:?}"); }
    eprintln!("client events tail {:?}", &n.client.events[n.client.events.len().saturating_sub(5)..]);
    let _ = AppEvent::Writable; let _ = TraceEvent::RttSample{flow:0, rtt: Dur::ZERO};
}
