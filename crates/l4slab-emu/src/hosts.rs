//! Per-device counters for a live view (`l4slab gateway`'s web page): for
//! each address on the client side of the bottleneck (the source of what
//! goes up, the destination of what comes down), per direction, the packets
//! and IP bytes that reached the queue and that left it, the ECN codepoints
//! the senders set, and the CE marks the packets left with.
//!
//! A device is found by its address once, when its first packet passes
//! (one map insert; afterwards one lookup per packet); at most
//! [`MAX_HOSTS`] addresses are told apart, the rest count together as
//! `other`, so a LAN full of devices (or a scan of spoofed sources) cannot
//! grow the table without bound.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use l4slab_core::Ecn;
use serde_json::{json, Value};

use crate::forwarder::{DOWN, UP};

/// Addresses told apart; later ones count as `other`.
pub const MAX_HOSTS: usize = 256;

/// One device's counts in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostDir {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    /// Packets that reached the queue, by the codepoint the sender set
    /// (Not-ECT, ECT(1), ECT(0), CE: RFC 3168 §5's values).
    pub ecn_in: [u64; 4],
    /// Packets that left with CE they did not arrive with (the queue's marks).
    pub marked_out: u64,
}

/// The counters of every device seen.
#[derive(Debug, Default)]
pub struct Hosts {
    index: HashMap<IpAddr, usize>,
    /// Per device (in the order first seen), per direction (`UP`, `DOWN`).
    rows: Vec<(IpAddr, [HostDir; 2])>,
    other: [HostDir; 2],
}

/// The client-side address of IP packet `ip` going direction `d` (`None`:
/// not IPv4 or IPv6, or too short).
fn device(ip: &[u8], d: usize) -> Option<IpAddr> {
    let version = ip.first()? >> 4;
    // RFC 791 §3.1 (source at 12, destination at 16), RFC 8200 §3 (8, 24).
    let (src, dst, len) = match version {
        4 => (12, 16, 4),
        6 => (8, 24, 16),
        _ => return None,
    };
    let at = if d == UP { src } else { dst };
    let bytes = ip.get(at..at + len)?;
    let addr = match len {
        4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        _ => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?)),
    };
    // A group or a link's own address is no device: router solicitations,
    // MLD reports, neighbour discovery count as `other`.
    let local = match addr {
        IpAddr::V4(a) => a.is_multicast() || a.is_link_local() || a.is_broadcast(),
        IpAddr::V6(a) => a.is_multicast() || a.is_unicast_link_local(),
    };
    (!local).then_some(addr)
}

impl Hosts {
    fn row(&mut self, ip: &[u8], d: usize) -> &mut HostDir {
        let Some(addr) = device(ip, d) else {
            return &mut self.other[d];
        };
        let i = match self.index.get(&addr) {
            Some(&i) => i,
            None if self.rows.len() < MAX_HOSTS => {
                self.rows.push((addr, [HostDir::default(); 2]));
                self.index.insert(addr, self.rows.len() - 1);
                self.rows.len() - 1
            }
            None => return &mut self.other[d],
        };
        &mut self.rows[i].1[d]
    }

    /// A packet (`ip`, `len` bytes, codepoint `ecn`) reached queue `d`.
    pub fn arrived(&mut self, d: usize, ip: &[u8], len: u32, ecn: Ecn) {
        let r = self.row(ip, d);
        r.packets_in += 1;
        r.bytes_in += u64::from(len);
        r.ecn_in[ecn as usize & 3] += 1;
    }

    /// A packet left queue `d`; `marked`: with a CE mark it did not arrive with.
    pub fn left(&mut self, d: usize, ip: &[u8], len: u32, marked: bool) {
        let r = self.row(ip, d);
        r.packets_out += 1;
        r.bytes_out += u64::from(len);
        r.marked_out += u64::from(marked);
    }

    /// Every device's counts since the start: `[{address, up: {...}, down:
    /// {...}}]`, then `other` if anything counted there.
    pub fn json(&self) -> Value {
        let dir = |h: &HostDir| {
            json!({
                "packets_in": h.packets_in, "bytes_in": h.bytes_in,
                "packets_out": h.packets_out, "bytes_out": h.bytes_out,
                "ecn_in": {"not_ect": h.ecn_in[0], "ect1": h.ecn_in[1],
                           "ect0": h.ecn_in[2], "ce": h.ecn_in[3]},
                "marked_out": h.marked_out,
            })
        };
        let mut out: Vec<Value> = self
            .rows
            .iter()
            .map(|(a, h)| json!({"address": a.to_string(), "up": dir(&h[UP]), "down": dir(&h[DOWN])}))
            .collect();
        if self.other != [HostDir::default(); 2] {
            out.push(json!({"address": "other", "up": dir(&self.other[UP]), "down": dir(&self.other[DOWN])}));
        }
        Value::Array(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 20];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn a_device_is_the_source_going_up_and_the_destination_coming_down() {
        let mut h = Hosts::default();
        let dev = [192, 168, 77, 100];
        let srv = [10, 99, 77, 2];
        h.arrived(UP, &v4(dev, srv), 1500, Ecn::Ect1);
        h.left(UP, &v4(dev, srv), 1500, true);
        h.arrived(DOWN, &v4(srv, dev), 52, Ecn::NotEct);
        let j = h.json();
        assert_eq!(j.as_array().unwrap().len(), 1, "{j}");
        let d = &j[0];
        assert_eq!(d["address"], "192.168.77.100");
        assert_eq!(d["up"]["bytes_in"], 1500);
        assert_eq!(d["up"]["ecn_in"]["ect1"], 1);
        assert_eq!(d["up"]["marked_out"], 1);
        assert_eq!(d["down"]["packets_in"], 1);
        assert_eq!(d["down"]["ecn_in"]["not_ect"], 1);
    }

    #[test]
    fn addresses_beyond_the_limit_and_non_ip_count_as_other() {
        let mut h = Hosts::default();
        for i in 0..(MAX_HOSTS + 10) {
            let a = [10, 0, (i >> 8) as u8, i as u8];
            h.arrived(UP, &v4(a, [1, 1, 1, 1]), 100, Ecn::NotEct);
        }
        h.arrived(UP, &[0x00, 1, 2], 3, Ecn::NotEct);
        // Link-local and multicast: no device.
        h.arrived(UP, &v4([169, 254, 1, 1], [1, 1, 1, 1]), 100, Ecn::NotEct);
        h.arrived(DOWN, &v4([1, 1, 1, 1], [224, 0, 0, 251]), 100, Ecn::NotEct);
        let j = h.json();
        let rows = j.as_array().unwrap();
        assert_eq!(rows.len(), MAX_HOSTS + 1);
        assert_eq!(rows[MAX_HOSTS]["address"], "other");
        assert_eq!(rows[MAX_HOSTS]["up"]["packets_in"], 12);
        assert_eq!(rows[MAX_HOSTS]["down"]["packets_in"], 1);
    }
}
