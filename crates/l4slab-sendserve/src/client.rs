//! The client (`l4slab send`): one [`Connection`] to the server running one
//! of the simulator's stream apps ([`Transfer`]: bulk, file, frames) as the
//! data sender — or with `-R` as its receiver, the server sending
//! ([`crate::request`]) — as one [`DatagramEndpoint`] the real-time driver
//! runs (`-P`: several, [`crate::parallel::Clients`]).
//!
//! It sends until the app is done (a file acknowledged) or `duration` has
//! passed, then closes the connection (CONNECTION_CLOSE, RFC 9000 §10.2)
//! and is done once the closing period ends. A handshake that has not
//! completed within `connect_timeout` (or by the end of `duration`, if
//! that comes first) ends the run, and so does a run in which the server
//! acknowledged no data: [`Client::failure`].

use std::net::SocketAddr;

use l4slab_app::quic::{QuicApp, QuicStreams, Transfer};
use l4slab_app::{AppIo, Datagram, FlowIo, Role};
use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Dur, Ecn, Time};
use l4slab_quic::{ConfigError, Connection, ConnectionConfig, Event};

use crate::record::{interval_line, FlowRecord, Interval, Side};

/// `-R`: how long a client that received a whole file waits before it
/// closes: twice the default max_ack_delay (25 ms, RFC 9000 §18.2).
const LINGER: Dur = Dur::from_millis(50);

/// Why a client run ended without a complete transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No handshake within `waited` (the connect timeout, or the duration
    /// if shorter): no server, or it refused (full, or the token did not
    /// validate).
    NoAnswer { waited: Dur },
    /// The handshake completed but the run ended without a byte of data
    /// acknowledged.
    NothingDelivered,
    /// The server closed the connection.
    ClosedByPeer { error_code: u64 },
    /// The connection timed out idle (§10.1) after the handshake.
    IdleTimeout,
    /// `-R`: the server completed the handshake without saying it took the
    /// request (an `l4slab serve` that does not know `-R`).
    RequestNotTaken,
}

/// The app side: the wake-up the app asked for (the sender's frames).
#[derive(Default)]
pub(crate) struct WakeIo {
    pub(crate) wake: Option<Time>,
}

impl AppIo for WakeIo {
    fn write(&mut self, _: u64) -> u64 {
        0
    }
    fn wake_at(&mut self, at: Time) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
    fn finish(&mut self) {}
}

impl FlowIo for WakeIo {
    fn send_datagram(&mut self, _: Datagram) {}
}

/// The sending endpoint (see the module documentation).
pub struct Client {
    pub conn: Connection,
    pub app: Transfer,
    pub record: FlowRecord,
    io: WakeIo,
    start: Time,
    /// Stop sending and close at this time.
    stop_at: Time,
    connect_by: Time,
    connected: Option<Time>,
    closing: bool,
    /// Given up (no handshake in time): done without closing.
    abandoned: bool,
    failure: Option<Failure>,
    kind: QuicApp,
    /// `-R`: the server sends, this end receives.
    reverse: bool,
    /// Stream bytes acknowledged in order so far (sending).
    acked: u64,
    completed: Option<Time>,
}

impl Client {
    /// A client to `server`, starting at `now`: `app` for `duration`, its
    /// flow named `send`.
    ///
    /// # Errors
    /// If the connection configuration is refused.
    pub fn new(
        cfg: ConnectionConfig,
        now: Time,
        server: SocketAddr,
        app: QuicApp,
        duration: Dur,
        connect_timeout: Dur,
    ) -> Result<Self, ConfigError> {
        let flow = ("send".to_string(), app, false);
        Self::with_flow(cfg, now, server, flow, duration, connect_timeout)
    }

    /// [`Client::new`] with the flow named `name`; `reverse` (`-R`, `cfg`
    /// carrying the request): the server sends `app`, this end receives.
    ///
    /// # Errors
    /// If the connection configuration is refused.
    pub fn with_flow(
        cfg: ConnectionConfig,
        now: Time,
        server: SocketAddr,
        (name, app, reverse): (String, QuicApp, bool),
        duration: Dur,
        connect_timeout: Dur,
    ) -> Result<Self, ConfigError> {
        let conn = Connection::client(cfg, now, server, None)?;
        let (sender, side) = if reverse {
            (Role::Server, Side::Receiver)
        } else {
            (Role::Client, Side::Sender)
        };
        Ok(Client {
            conn,
            app: Transfer::new(app, sender),
            record: FlowRecord::new(name, side, now),
            io: WakeIo::default(),
            start: now,
            stop_at: now + duration,
            connect_by: now + connect_timeout,
            connected: None,
            closing: false,
            abandoned: false,
            failure: None,
            kind: app,
            reverse,
            acked: 0,
            completed: None,
        })
    }

    /// Why the run failed, once it is over: what ended it early, or no
    /// handshake, or no data acknowledged (`None` after Ctrl-C before the
    /// handshake: nothing was tried to the end).
    pub fn failure(&self) -> Option<Failure> {
        if self.failure.is_some() {
            return self.failure;
        }
        match self.connected {
            Some(_) if self.acked() == 0 => Some(Failure::NothingDelivered),
            _ => None,
        }
    }

    pub fn connected_at(&self) -> Option<Time> {
        self.connected
    }

    /// Stream bytes the server acknowledged in order; with `-R`, those
    /// that arrived in order from it.
    pub fn acked(&self) -> u64 {
        if self.reverse {
            self.app.delivered()
        } else {
            self.acked
        }
    }

    /// `-R`: the server sends.
    pub fn reverse(&self) -> bool {
        self.reverse
    }

    /// Stop now (Ctrl-C): close the connection.
    pub fn stop(&mut self, now: Time) {
        if !self.closing {
            self.closing = true;
            self.conn.close(now, 0);
        }
    }

    /// Close the interval ending at `now`.
    pub fn sample(&mut self, now: Time) -> (Interval, String) {
        self.update_acked();
        let iv = self.record.sample(now, &self.conn, self.acked());
        let side = if self.reverse {
            Side::Receiver
        } else {
            Side::Sender
        };
        let line = interval_line(&self.record.name, side, &iv);
        (iv, line)
    }

    fn update_acked(&mut self) {
        // Client stream 0: the app's one stream.
        let id = l4slab_quic::StreamId::bidi(true, 0);
        if let Some(a) = self.conn.acked_in_order(id) {
            self.acked = self.acked.max(a);
        }
    }

    fn pump(&mut self, now: Time) {
        while let Some(ev) = self.conn.poll_event() {
            match ev {
                Event::Connected => {
                    self.connected.get_or_insert(now);
                    if self.reverse && !self.conn.app_request_accepted() {
                        // An older server: it would never send; say so now.
                        self.failure.get_or_insert(Failure::RequestNotTaken);
                        self.stop(now);
                    }
                }
                Event::Closed(reason) if !self.closing => {
                    self.failure = Some(match reason {
                        l4slab_quic::CloseReason::Peer { error_code, .. } => {
                            Failure::ClosedByPeer { error_code }
                        }
                        l4slab_quic::CloseReason::IdleTimeout if self.connected.is_none() => {
                            Failure::NoAnswer {
                                waited: now.saturating_since(self.start),
                            }
                        }
                        _ => Failure::IdleTimeout,
                    });
                }
                _ => {}
            }
            self.app.on_event(now, Role::Client, ev);
        }
        if !self.closing {
            self.io.wake = None;
            self.app
                .drive(now, Role::Client, &mut self.conn, &mut self.io);
        }
        self.record.observe(&self.conn);
        self.update_acked();
        if let QuicApp::File { size } = self.kind {
            // A file is done once all of it is acknowledged (with -R: all
            // of it, and its FIN, arrived).
            let done = if self.reverse {
                self.app.completion().is_some()
            } else {
                self.acked >= size
            };
            if done && self.completed.is_none() {
                self.completed = Some(now);
                if self.reverse {
                    // Close once the ACK of the last packets has left (within
                    // max_ack_delay, RFC 9000 §13.2.1), so the sending server
                    // counts the whole file acknowledged.
                    self.stop_at = self.stop_at.min(now + LINGER);
                } else {
                    self.stop(now);
                }
            }
        }
    }

    /// When a file was all acknowledged.
    pub fn completed_at(&self) -> Option<Time> {
        self.completed
    }

    /// When the run began.
    pub fn start(&self) -> Time {
        self.start
    }
}

impl DatagramEndpoint for Client {
    fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        self.conn.handle_datagram(now, from, data, ecn);
        self.pump(now);
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        let out = self.conn.poll_transmit(now, buf);
        if out.is_some() {
            self.record.observe(&self.conn);
        }
        out
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.abandoned {
            return None;
        }
        let mut t = self.conn.poll_timeout();
        let mut min = |x: Time| t = Some(t.map_or(x, |t| t.min(x)));
        if !self.closing {
            min(self.stop_at);
            if let Some(w) = self.io.wake {
                min(w);
            }
        }
        if self.connected.is_none() {
            min(self.connect_by.min(self.stop_at));
        }
        t
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.connected.is_none() && now >= self.connect_by.min(self.stop_at) {
            // Nobody answered in time (or by the end of the run): give up
            // at once (nothing to close).
            self.failure.get_or_insert(Failure::NoAnswer {
                waited: now.saturating_since(self.start),
            });
            self.abandoned = true;
            return;
        }
        if !self.closing && now >= self.stop_at {
            self.stop(now);
        }
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        self.pump(now);
    }

    fn handle_late_timeout(&mut self, now: Time) {
        self.conn.handle_late_timeout(now);
    }

    fn is_done(&self) -> bool {
        self.abandoned || self.conn.is_done()
    }
}
