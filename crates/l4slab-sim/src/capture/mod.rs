//! The simulator's pcap capture (`pcap = true`): each packet at the
//! ingress and egress of every queue it passes (the bottleneck's direction,
//! the hosts' access links), at the instants the runtime's capture points
//! give (`l4slab_bottleneck::QueueEventKind::{Arrive, Leave}`), in the
//! files of [`l4slab_pcap`], with real headers built from its segment or
//! datagram ([`headers`]).
//!
//! The model has no addresses or ports, so they are assigned: host `h`
//! (its index in the scenario's hosts, client-side hosts first) is
//! `10.1.x.y` on the client side and `10.2.x.y` on the server side, with
//! `x.y` = `h + 1` as 16 bits; flow `i` connects client port `32768 + i`
//! (Linux's first ephemeral port) to server port `5000 + i` (the emulator's
//! ports); ports wrap past 65535. Datagrams of a flow (ping, cbr, media
//! apps) are UDP between the same addresses and ports. Initial sequence
//! numbers are drawn per flow and side from the run's seed. IPv4 only: the
//! simulated hosts have no IPv6 notion.

pub mod headers;

use std::path::{Path, PathBuf};

use l4slab_core::pkttrace::QueueNames;
use l4slab_core::{Packet, SimRng, Time};
use l4slab_pcap::{CaptureError, Captures, Point};
use l4slab_scenario::{Scenario, Side};

use crate::engine::{CLIENT, DOWN, SERVER};
use crate::segstore::{BytePool, Carried};
use headers::Ends;

/// The wire identity of one flow's two ends, indexed by `CLIENT`/`SERVER`.
struct FlowWire {
    addr: [[u8; 4]; 2],
    port: [u16; 2],
    isn: [u32; 2],
    mss: u16,
    wscale: u8,
}

/// The open capture of a run.
pub struct Capture {
    files: Captures,
    flows: Vec<FlowWire>,
    /// Scratch for one packet's headers (reused: nothing allocates per packet).
    buf: Vec<u8>,
}

/// Host `h`'s address (module documentation).
fn address(scn: &Scenario, h: usize) -> [u8; 4] {
    let side = match scn.hosts[h].side {
        Side::Client => 1,
        Side::Server => 2,
    };
    let [x, y] = (h as u16 + 1).to_be_bytes();
    [10, side, x, y]
}

/// The smallest window scale that fits `max_wnd` in the 16-bit field
/// (RFC 7323 §2.3: at most 14).
fn wscale_for(max_wnd: u64) -> u8 {
    (0..14).find(|&s| max_wnd >> s <= 0xffff).unwrap_or(14)
}

impl Capture {
    /// Open the capture files under `results` for `scn` run with `seed`,
    /// two per queue of `names` (`Bottleneck::queue_names`).
    ///
    /// # Errors
    /// [`CaptureError`] if a file cannot be created.
    pub fn create(
        scn: &Scenario,
        seed: u64,
        names: &QueueNames,
        results: &Path,
    ) -> Result<Capture, CaptureError> {
        let files = Captures::create(results, &names.queues)?;
        let mut rng = SimRng::derive(seed, "pcap/isn");
        let flows = scn
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowWire {
                addr: [address(scn, f.client), address(scn, f.server)],
                port: [
                    32768u16.wrapping_add(i as u16),
                    5000u16.wrapping_add(i as u16),
                ],
                isn: [rng.next_u64() as u32, rng.next_u64() as u32],
                mss: u16::try_from(f.transport.mss).unwrap_or(u16::MAX),
                wscale: wscale_for(f.transport.receive_buffer),
            })
            .collect();
        Ok(Capture {
            files,
            flows,
            buf: Vec::with_capacity(128),
        })
    }

    /// Capture `pkt` (carrying `carried`) going in direction `dir` at
    /// `point` of queue `queue`, at `now`.
    pub fn packet(
        &mut self,
        now: Time,
        queue: usize,
        dir: usize,
        point: Point,
        pkt: &Packet,
        (carried, bytes): (&Carried, &BytePool),
    ) {
        let w = &self.flows[pkt.flow as usize];
        // Packets going down were sent by the server side.
        let (from, to) = if dir == DOWN {
            (SERVER, CLIENT)
        } else {
            (CLIENT, SERVER)
        };
        let e = Ends {
            src: w.addr[from],
            dst: w.addr[to],
            sport: w.port[from],
            dport: w.port[to],
            isn: w.isn[from],
            peer_isn: w.isn[to],
            mss: w.mss,
            wscale: w.wscale,
        };
        // Linux numbers a socket's packets; the packet's id does as well.
        let id = pkt.id as u16;
        match carried {
            Carried::Seg(seg) => headers::tcp(&mut self.buf, &e, id, pkt.ecn, seg, pkt.len),
            Carried::Dgram(dg) => headers::udp(&mut self.buf, &e, id, pkt.ecn, dg.payload),
            Carried::Bytes { buf, .. } => {
                headers::udp_payload(&mut self.buf, &e, id, pkt.ecn, bytes.get(*buf))
            }
        }
        let t = now.saturating_since(Time::ZERO);
        self.files.write(queue, point, t, pkt.len, &self.buf);
    }

    /// Close the files; their paths.
    ///
    /// # Errors
    /// The first write error of the run.
    pub fn finish(self) -> Result<Vec<PathBuf>, CaptureError> {
        self.files.finish()
    }
}
