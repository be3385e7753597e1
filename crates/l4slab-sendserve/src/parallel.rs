//! `l4slab send -P N`: N clients, each its own connection and controller,
//! on one UDP socket and one real-time driver, as iperf3's parallel streams
//! (`-P`, at most [`MAX_PARALLEL`] as iperf3's `MAX_STREAMS`).
//!
//! Each connection has its own connection IDs, so the server sees N
//! sessions from one address and port, and a datagram back goes to the
//! client whose connection ID it carries as its Destination CID (a hash
//! map, built once: the IDs a client chose do not change). Sending takes
//! the clients round-robin, so none starves the others of the socket; the
//! wake-up is the earliest of theirs. With one client it is that client.

use std::collections::HashMap;
use std::net::SocketAddr;

use l4slab_core::datagram::DatagramEndpoint;
use l4slab_core::{Ecn, Time};
use l4slab_quic::connection::CID_LEN;

use crate::client::Client;
use crate::server::dcid_of;

/// The most connections `-P` opens (iperf3's limit, `MAX_STREAMS` 128).
pub const MAX_PARALLEL: usize = 128;

/// N clients as one endpoint (see the module documentation).
pub struct Clients {
    pub clients: Vec<Client>,
    by_cid: HashMap<[u8; CID_LEN], usize>,
    /// The client asked first for its next datagram.
    next: usize,
}

impl Clients {
    pub fn new(clients: Vec<Client>) -> Self {
        let by_cid = clients
            .iter()
            .enumerate()
            .map(|(i, c)| (c.conn.local_cid(), i))
            .collect();
        Clients {
            clients,
            by_cid,
            next: 0,
        }
    }

    /// Whether client `i`'s wake-up has come (O(N) a timeout, N <= 128;
    /// handling one client's does not move another's).
    fn due(&self, i: usize, now: Time) -> bool {
        self.clients[i].poll_timeout().is_some_and(|t| t <= now)
    }
}

impl DatagramEndpoint for Clients {
    fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8], ecn: Ecn) {
        // A datagram for none of ours (not an l4slab packet) is dropped.
        if let Some(&i) = dcid_of(data).and_then(|c| self.by_cid.get(&c)) {
            self.clients[i].handle_datagram(now, from, data, ecn);
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<(usize, SocketAddr, Ecn)> {
        let n = self.clients.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if let Some(out) = self.clients[i].poll_transmit(now, buf) {
                self.next = (i + 1) % n;
                return Some(out);
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.clients.iter().filter_map(Client::poll_timeout).min()
    }

    fn handle_timeout(&mut self, now: Time) {
        for i in 0..self.clients.len() {
            if self.due(i, now) {
                self.clients[i].handle_timeout(now);
            }
        }
    }

    fn handle_late_timeout(&mut self, now: Time) {
        for i in 0..self.clients.len() {
            if self.due(i, now) {
                self.clients[i].handle_late_timeout(now);
            }
        }
    }

    fn is_done(&self) -> bool {
        self.clients.iter().all(Client::is_done)
    }
}
