//! The sans-IO shape of a datagram protocol (a QUIC-style connection, an
//! RTP session): whoever owns the socket — the real-time UDP driver
//! (`l4slab-udp-driver`) or the simulator — hands it datagrams and the time, and
//! asks it what to send and when to call again. The protocol never reads a
//! clock and never touches a socket, so one implementation runs in both.

use std::net::SocketAddr;

use crate::{Ecn, Time};

/// A sans-IO datagram protocol: it sees time only as the `now` it is given
/// and bytes only through these calls.
pub trait DatagramEndpoint {
    /// A datagram of `data` arrived from `from` with IP-ECN field `ecn`.
    fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn);
    /// The next datagram to send, written into `buf`: `(len, to, ecn)`;
    /// `None` when nothing may go now (nothing to send, or the pacer or the
    /// congestion window holds it: [`DatagramEndpoint::poll_timeout`] says
    /// when to ask again).
    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)>;
    /// When [`DatagramEndpoint::handle_timeout`] is next needed (pacing
    /// deadlines included); `None`: only a datagram can wake it.
    fn poll_timeout(&self) -> Option<Time>;
    /// The time [`DatagramEndpoint::poll_timeout`] named has come.
    fn handle_timeout(&mut self, now: Time);
    /// Real clocks only: the time [`DatagramEndpoint::poll_timeout`] named
    /// passed before `now`, when the driver first looks (its thread was not
    /// running, or woke late); called just before
    /// [`DatagramEndpoint::handle_timeout`]. A pacer forfeits the time lost
    /// rather than catching up in a burst. The simulator never calls it.
    fn handle_late_timeout(&mut self, now: Time) {
        let _ = now;
    }
    /// Finished: its driver may stop.
    fn is_done(&self) -> bool;
}
