//! Scripted two-ended sockets for app unit tests: each side's socket records
//! what the app wrote and the wake-up it asked for, and reports the
//! [`SocketInfo`] the test sets — so a test reads as a timeline of events.
//! [`Script::run`] runs an app that talks in datagrams over a scripted
//! network, [`l4slab_core::testing::TestPath`].

use l4slab_core::testing::{End, TestPath, WireSize};
use l4slab_core::{Dur, Time};
use l4slab_tcp::{AppIo, SocketInfo};

use crate::{Datagram, FlowApp, FlowIo, Role};

/// One side's socket.
#[derive(Debug)]
pub struct FakeSock {
    pub written: u64,
    /// Send-buffer room left.
    pub room: u64,
    pub info: SocketInfo,
    pub wake: Option<Time>,
    pub finished: bool,
    pub datagrams: Vec<Datagram>,
    /// Byte datagrams sent ([`FlowIo::send_bytes`]).
    pub bytes: Vec<(Vec<u8>, l4slab_core::Ecn)>,
}

impl FakeSock {
    fn new() -> Self {
        FakeSock {
            written: 0,
            room: u64::MAX,
            info: SocketInfo {
                writable: true,
                ..SocketInfo::default()
            },
            wake: None,
            finished: false,
            datagrams: Vec::new(),
            bytes: Vec::new(),
        }
    }
}

impl AppIo for FakeSock {
    fn write(&mut self, bytes: u64) -> u64 {
        if self.finished {
            return 0;
        }
        let n = bytes.min(self.room);
        self.room -= n;
        self.written += n;
        n
    }
    fn wake_at(&mut self, at: Time) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
    fn finish(&mut self) {
        self.finished = true;
    }
    fn info(&self) -> SocketInfo {
        SocketInfo {
            writable: self.room > 0 && !self.finished,
            ..self.info
        }
    }
}

impl FlowIo for FakeSock {
    fn send_datagram(&mut self, dg: Datagram) {
        self.datagrams.push(dg);
    }
    fn send_bytes(&mut self, data: &[u8], ecn: l4slab_core::Ecn) {
        self.bytes.push((data.to_vec(), ecn));
    }
}

/// Both sides' sockets; the methods deliver one event to the app.
#[derive(Debug)]
pub struct Script {
    socks: [FakeSock; 2],
}

fn ix(side: Role) -> usize {
    match side {
        Role::Client => 0,
        Role::Server => 1,
    }
}

fn end(side: Role) -> End {
    match side {
        Role::Client => End::Client,
        Role::Server => End::Server,
    }
}

fn role(end: End) -> Role {
    match end {
        End::Client => Role::Client,
        End::Server => Role::Server,
    }
}

/// A datagram an app sent, as a [`TestPath`] carries it.
#[derive(Debug)]
pub enum Sent {
    /// [`FlowIo::send_datagram`].
    Record(Datagram),
    /// [`FlowIo::send_bytes`].
    Bytes(Vec<u8>),
}

impl Sent {
    pub fn record(&self) -> Option<&Datagram> {
        match self {
            Sent::Record(dg) => Some(dg),
            Sent::Bytes(_) => None,
        }
    }
}

impl WireSize for Sent {
    /// The payload plus IPv4 and UDP headers, as the simulator counts it.
    fn wire_size(&self) -> u64 {
        let payload = match self {
            Sent::Record(dg) => u64::from(dg.payload),
            Sent::Bytes(data) => data.len() as u64,
        };
        payload + u64::from(Datagram::HEADER_BYTES)
    }
}

impl Script {
    pub fn new() -> Self {
        Script {
            socks: [FakeSock::new(), FakeSock::new()],
        }
    }

    pub fn sock(&mut self, side: Role) -> &mut FakeSock {
        &mut self.socks[ix(side)]
    }

    pub fn connected(&mut self, app: &mut dyn FlowApp, now: Time, side: Role) {
        app.on_connected(now, side, self.sock(side));
    }

    /// The wake-up `side` asked for fires at `now`.
    pub fn timer(&mut self, app: &mut dyn FlowApp, now: Time, side: Role) {
        self.sock(side).wake = None;
        app.on_timer(now, side, self.sock(side));
    }

    /// `bytes` more arrive in order at `side`.
    pub fn deliver(&mut self, app: &mut dyn FlowApp, now: Time, side: Role, bytes: u64) {
        app.on_receive(now, side, bytes, self.sock(side));
    }

    /// `side`'s send buffer gets `room` bytes of space and reports writable.
    pub fn writable(&mut self, app: &mut dyn FlowApp, now: Time, side: Role, room: u64) {
        self.sock(side).room = room;
        app.on_writable(now, side, self.sock(side));
    }

    pub fn written(&self, side: Role) -> u64 {
        self.socks[ix(side)].written
    }

    pub fn wake(&self, side: Role) -> Option<Time> {
        self.socks[ix(side)].wake
    }

    pub fn set_unsent(&mut self, side: Role, bytes: u64) {
        self.sock(side).info.unsent_bytes = bytes;
    }

    pub fn set_srtt(&mut self, side: Role, srtt: Dur) {
        self.sock(side).info.srtt = Some(srtt);
    }

    /// Both ends of `app`, connected at time 0, exchanging datagrams over
    /// `path` until `until` (exclusive). After each event the datagrams
    /// each side sent (client first) go onto the path; the next event is
    /// the earliest arrival or wake-up, an arrival first on a tie, one at a
    /// time. The app writes no stream.
    pub fn run(&mut self, app: &mut dyn FlowApp, path: &mut TestPath<Sent>, until: Time) {
        let sides = [Role::Client, Role::Server];
        let mut now = Time::ZERO;
        for side in sides {
            self.connected(app, now, side);
        }
        loop {
            for side in sides {
                let sock = self.sock(side);
                for dg in sock.datagrams.drain(..) {
                    path.send(now, end(side), Sent::Record(dg), dg.ecn);
                }
                for (data, ecn) in sock.bytes.drain(..) {
                    path.send(now, end(side), Sent::Bytes(data), ecn);
                }
                assert_eq!(sock.written, 0, "an app over a TestPath writes no stream");
            }
            let next = [
                path.next_arrival(),
                self.wake(Role::Client),
                self.wake(Role::Server),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next.filter(|t| *t < until) else {
                return;
            };
            now = t;
            if path.next_arrival() == Some(t) {
                let a = path.pop_next().expect("an arrival");
                let side = role(a.to);
                match a.payload {
                    Sent::Record(dg) => {
                        let dg = Datagram { ecn: a.ecn, ..dg };
                        app.on_datagram(t, side, dg, self.sock(side));
                    }
                    Sent::Bytes(data) => app.on_bytes(t, side, &data, a.ecn, self.sock(side)),
                }
                continue;
            }
            for side in sides {
                if self.wake(side) == Some(t) {
                    self.timer(app, t, side);
                }
            }
        }
    }
}
