//! Benchmark of the real endpoints (docs/PERFORMANCE.md): `l4slab serve`
//! and `l4slab send` over loopback, one run per controller, printing the
//! throughput ceiling and the timer lateness of the sender's driver (how
//! late its pacing and loss-detection wake-ups fired).
//!
//!     cargo run --release -p l4slab-sendserve --example endpoint_bench [-- SECONDS [CC...]]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use l4slab_sendserve::{run_send, run_serve, Observer, SendOptions, ServeOptions};

struct Quiet<'a>(&'a AtomicBool, bool);

impl Observer for Quiet<'_> {
    fn line(&mut self, line: &str) {
        if self.1 {
            println!("{line}");
        }
    }
    fn keep_going(&mut self) -> bool {
        !self.0.load(Ordering::Relaxed)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs = args.first().cloned().unwrap_or_else(|| "5".into());
    let ccs: Vec<String> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec!["cubic".into(), "prague".into()]
    };
    for (i, cc) in ccs.iter().enumerate() {
        let port = 47_000 + i as u16;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let server = std::thread::spawn(move || {
            let opts = ServeOptions {
                bind: Some("127.0.0.1".into()),
                port,
                once: true,
                time_limit: Some("120".into()),
                ..ServeOptions::default()
            };
            run_serve(&opts, &mut Quiet(&stop2, false), &mut |_| {}).expect("serve")
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let opts = SendOptions {
            target: format!("127.0.0.1:{port}"),
            cc: cc.clone(),
            duration: secs.clone(),
            ..SendOptions::default()
        };
        let never = AtomicBool::new(false);
        let r = run_send(&opts, &mut Quiet(&never, true)).expect("send");
        stop.store(true, Ordering::Relaxed);
        let srv = server.join().expect("server thread");
        let summary: serde_json::Value =
            serde_json::from_str(r["summary_json"].as_str().unwrap()).unwrap();
        let flow = &summary["flows"]["send"];
        let lat = &summary["driver"]["timer_lateness_us"];
        println!(
            "RESULT cc={cc} goodput={:.1} Mbit/s rtt_p50={} ms rtt_p99={} ms losses={} | sender timer lateness us: wakeups={} p50={} p99={} max={} | server datagrams={}",
            flow["goodput_bps"].as_f64().unwrap_or(0.0) / 1e6,
            flow["rtt_ms"]["p50"],
            flow["rtt_ms"]["p99"],
            flow["losses_detected"],
            lat["samples"],
            lat["p50"],
            lat["p99"],
            lat["max"],
            srv["server"]["datagrams"],
        );
    }
}
