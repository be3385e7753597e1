//! Network input never panics: every app that reads datagrams, fed
//! arbitrary ones (strays with any tag, size and ECN field, arbitrary
//! bytes, duplicates and mutations of its own) between its real ones,
//! keeps running, and counts what it ignored ([`crate::DatagramsIgnored`]).
//! The emulator's root test sends the same over real sockets
//! (crates/l4slab-emu/tests/stray_datagrams.rs).

use std::collections::VecDeque;

use proptest::prelude::*;

use l4slab_core::{Dur, Ecn, Rate, Time};

use crate::cbr::{Cbr, CbrConfig};
use crate::framed::{FrameTransport, Framed};
use crate::ping::{Ping, PingConfig};
use crate::quic::{QuicApp, QuicFlow};
use crate::registry::{AppKind, BuildContext};
use crate::rtp::MediaCcKind;
use crate::testing::Script;
use crate::{Datagram, FlowApp, Role};

/// Every app kind with a datagram receive path, as a scenario builds it.
const APPS: &[&str] = &[
    "ping",
    "cbr",
    "cloud_gaming_rtp",
    "video_call_rtp",
    "screen_share_rtp",
    "quic_file",
];

fn build(name: &str) -> Box<dyn FlowApp> {
    let cx = BuildContext {
        sender: Role::Server,
        flow: "f",
        start: Time::ZERO,
        seed: 1,
    };
    let rtp = FrameTransport::rtp(MediaCcKind::Scream { l4s: true }, Dur::ZERO);
    match name {
        "ping" => Box::new(Ping::new(PingConfig {
            interval: Dur::from_millis(5),
            ..PingConfig::default()
        })),
        "cbr" => Box::new(Cbr::new(
            CbrConfig {
                rate: Rate::from_mbps(1),
                size: 200,
                ecn: Ecn::Ect1,
            },
            Role::Server,
        )),
        "cloud_gaming_rtp" => Framed {
            transport: rtp,
            ..Framed::<crate::cloud_gaming::CloudGamingConfig>::default()
        }
        .build(&cx),
        "video_call_rtp" => Framed {
            transport: FrameTransport::rtp(MediaCcKind::Gcc, Dur::from_millis(20)),
            ..Framed::<crate::video_call::VideoCallConfig>::default()
        }
        .build(&cx),
        "screen_share_rtp" => Framed {
            transport: rtp,
            ..Framed::<crate::screen_share::ScreenShareConfig>::default()
        }
        .build(&cx),
        "quic_file" => Box::new(QuicFlow::new(
            QuicApp::File { size: 200_000 },
            crate::quic::tests::cfg(),
            Role::Server,
        )),
        other => unreachable!("{other}"),
    }
}

/// A datagram in flight to `to`.
#[derive(Clone, Debug)]
enum Wire {
    Record(Datagram),
    Bytes(Vec<u8>, Ecn),
}

#[derive(Clone, Debug)]
enum Step {
    /// Time passes; the timers due fire.
    Tick(u64),
    /// The oldest datagram in flight arrives.
    Deliver,
    /// The last one delivered arrives again.
    Duplicate,
    /// A datagram the flow never sent.
    Stray {
        to_client: bool,
        tag: u64,
        payload: u32,
        ecn: u8,
    },
    /// Bytes the flow never sent.
    StrayBytes { to_client: bool, data: Vec<u8> },
    /// The next byte datagram in flight with one byte changed, or cut short.
    Mutate { at: usize, xor: u8, cut: bool },
}

fn ecn(v: u8) -> Ecn {
    [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce][usize::from(v % 4)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1u64..30).prop_map(Step::Tick),
        4 => Just(Step::Deliver),
        1 => Just(Step::Duplicate),
        2 => (any::<bool>(), prop_oneof![any::<u64>(), 0u64..64, (0u64..4).prop_map(|k| k << 62 | 3)], 0u32..2000, any::<u8>())
            .prop_map(|(to_client, tag, payload, ecn)| Step::Stray { to_client, tag, payload, ecn }),
        1 => (any::<bool>(), proptest::collection::vec(any::<u8>(), 0..1300))
            .prop_map(|(to_client, data)| Step::StrayBytes { to_client, data }),
        1 => (any::<usize>(), 1u8..=255, any::<bool>())
            .prop_map(|(at, xor, cut)| Step::Mutate { at, xor, cut }),
    ]
}

fn other(side: Role) -> Role {
    match side {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

/// Both ends of one app, its datagrams in flight, driven one [`Step`] at a time.
struct Harness {
    app: Box<dyn FlowApp>,
    s: Script,
    now: Time,
    flight: VecDeque<(Role, Wire)>,
    last: Option<(Role, Wire)>,
}

impl Harness {
    fn new(name: &str) -> Self {
        let mut h = Harness {
            app: build(name),
            s: Script::new(),
            now: Time::ZERO,
            flight: VecDeque::new(),
            last: None,
        };
        for side in [Role::Client, Role::Server] {
            h.s.connected(h.app.as_mut(), Time::ZERO, side);
        }
        h.collect();
        h
    }

    /// What each side sent goes in flight to the other.
    fn collect(&mut self) {
        for side in [Role::Client, Role::Server] {
            let sock = self.s.sock(side);
            let dgs: Vec<_> = sock.datagrams.drain(..).collect();
            let bytes: Vec<_> = sock.bytes.drain(..).collect();
            for dg in dgs {
                self.flight.push_back((other(side), Wire::Record(dg)));
            }
            for (b, e) in bytes {
                self.flight.push_back((other(side), Wire::Bytes(b, e)));
            }
        }
        // A window of the most recent (a long run would otherwise pile up).
        while self.flight.len() > 256 {
            self.flight.pop_front();
        }
    }

    fn arrive(&mut self, to: Role, w: &Wire) {
        let io = self.s.sock(to);
        match w {
            Wire::Record(dg) => self.app.on_datagram(self.now, to, *dg, io),
            Wire::Bytes(b, e) => self.app.on_bytes(self.now, to, b, *e, io),
        }
        self.collect();
    }

    fn run(&mut self, step: Step) {
        match step {
            Step::Tick(ms) => {
                self.now += Dur::from_millis(ms);
                for side in [Role::Client, Role::Server] {
                    for _ in 0..10_000 {
                        match self.s.wake(side) {
                            Some(w) if w <= self.now => self.s.timer(self.app.as_mut(), w, side),
                            _ => break,
                        }
                    }
                }
                self.collect();
            }
            Step::Deliver => {
                if let Some((to, w)) = self.flight.pop_front() {
                    self.arrive(to, &w);
                    self.last = Some((to, w));
                }
            }
            Step::Duplicate => {
                if let Some((to, w)) = self.last.clone() {
                    self.arrive(to, &w);
                }
            }
            Step::Stray {
                to_client,
                tag,
                payload,
                ecn: e,
            } => {
                let to = if to_client {
                    Role::Client
                } else {
                    Role::Server
                };
                let dg = Datagram {
                    payload,
                    ecn: ecn(e),
                    tag,
                };
                self.arrive(to, &Wire::Record(dg));
            }
            Step::StrayBytes { to_client, data } => {
                let to = if to_client {
                    Role::Client
                } else {
                    Role::Server
                };
                self.arrive(to, &Wire::Bytes(data, Ecn::NotEct));
            }
            Step::Mutate { at, xor, cut } => {
                let Some(i) = self
                    .flight
                    .iter()
                    .position(|(_, w)| matches!(w, Wire::Bytes(b, _) if !b.is_empty()))
                else {
                    return;
                };
                let (to, w) = self.flight.remove(i).expect("found");
                let Wire::Bytes(mut b, e) = w else {
                    unreachable!("a byte datagram")
                };
                let at = at % b.len();
                if cut {
                    b.truncate(at);
                } else {
                    b[at] ^= xor;
                }
                self.arrive(to, &Wire::Bytes(b, e));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Arbitrary datagrams between an app's own never panic, and its
    /// report and samples are still made.
    #[test]
    fn arbitrary_datagrams_into_every_app_never_panic(
        app in 0..APPS.len(),
        steps in proptest::collection::vec(step(), 1..80),
    ) {
        let mut h = Harness::new(APPS[app]);
        for s in steps {
            h.run(s);
        }
        let end = h.now + Dur::from_secs(1);
        let _ = h.app.report(end);
        h.app.sample(end, Dur::from_millis(100), &mut |_, v| assert!(!v.is_nan()));
    }
}

/// A datagram with a tag no app sends (every kind bit set, id far beyond
/// anything numbered) reaches each side of every datagram app: each is
/// ignored and counted as unknown.
#[test]
fn a_foreign_tag_is_counted_as_unknown_by_every_datagram_app() {
    for name in APPS.iter().filter(|n| !n.starts_with("quic")) {
        let mut h = Harness::new(name);
        h.run(Step::Tick(50));
        let before = h.app.datagrams_ignored();
        for to_client in [true, false] {
            h.run(Step::Stray {
                to_client,
                tag: u64::MAX,
                payload: 100,
                ecn: 0,
            });
        }
        let after = h.app.datagrams_ignored();
        assert_eq!(after.unknown, before.unknown + 2, "{name}: {after:?}");
    }
}
