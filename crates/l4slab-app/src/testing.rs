//! Scripted two-ended sockets for app unit tests: each side's socket records
//! what the app wrote and the wake-up it asked for, and reports the
//! [`SocketInfo`] the test sets — so a test reads as a timeline of events.

use l4slab_core::{Dur, Time};
use l4slab_transport::{AppIo, SocketInfo};

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
}
