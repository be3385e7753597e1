//! The hosts' access links in the forwarder (`[hosts.NAME.access]`): which
//! queues of the runtime a packet passes besides the bottleneck.
//!
//! Every scenario host maps onto the one client or the one server
//! namespace, so the forwarder tells a host's packets by their flow (the
//! [`crate::forwarder::Classifier::Ports`] flow id): a packet of flow `i`
//! going in direction `d` passes the sending host's access link in `d` (if
//! it has one) before the bottleneck, and the receiving host's after it.
//! Packets of no scenario flow pass the bottleneck only, except in the
//! shell ([`AccessRoutes::every_packet`]), where every packet is COMMAND's
//! and takes the one client host's route (its Wi-Fi station's queues).

use l4slab_scenario::build::AccessQueues;
use l4slab_scenario::Scenario;
use l4slab_wifi::edca::Ac;

use crate::forwarder::{DOWN, UP};

/// The access queues of a run, by flow and by direction.
#[derive(Clone, Debug, Default)]
pub struct AccessRoutes {
    /// Per flow id, per direction: `[before the bottleneck, after it]`.
    flows: Vec<[[Option<usize>; 2]; 2]>,
    /// The same for a packet of no flow in `flows`.
    other: [[Option<usize>; 2]; 2],
    /// Per direction: the access queues before the bottleneck,
    pub(crate) ingress: [Vec<usize>; 2],
    /// and after it.
    pub(crate) egress: [Vec<usize>; 2],
    /// Per queue beyond the bottleneck's two: its direction.
    dirs: Vec<usize>,
}

impl AccessRoutes {
    /// The routes of `scn`'s flows through the queues `access` numbers.
    pub fn new(scn: &Scenario, access: &AccessQueues) -> Self {
        let cell_queues = (0..scn.hosts.len())
            .flat_map(|h| Ac::ALL.map(|ac| [DOWN, UP].map(|dir| access.cell_queue(h, dir, ac))))
            .flatten()
            .flatten();
        let queues = 2 + access.hosts.iter().flatten().flatten().count() + cell_queues.count();
        let mut routes = AccessRoutes {
            dirs: (2..queues).map(|q| access.dir_of(q)).collect(),
            ..AccessRoutes::default()
        };
        for f in &scn.flows {
            routes.flows.push([DOWN, UP].map(|dir| access.path(f, dir)));
        }
        for (h, host) in access.hosts.iter().zip(&scn.hosts) {
            let sends = match host.side {
                l4slab_scenario::Side::Client => UP,
                l4slab_scenario::Side::Server => DOWN,
            };
            for (dir, q) in h.iter().enumerate() {
                if let Some(q) = *q {
                    let list = if dir == sends {
                        &mut routes.ingress[dir]
                    } else {
                        &mut routes.egress[dir]
                    };
                    list.push(q);
                }
            }
        }
        // A Wi-Fi cell's queues: the stations' feed the bottleneck's up
        // direction, the AP's take its down direction's packets. One cell
        // couples them (one medium): the forwarder runs down before up, so
        // the cell never goes back in time.
        for h in 0..scn.hosts.len() {
            for ac in Ac::ALL {
                if let Some(q) = access.cell_queue(h, UP, ac) {
                    routes.ingress[UP].push(q);
                }
                if let Some(q) = access.cell_queue(h, DOWN, ac) {
                    routes.egress[DOWN].push(q);
                }
            }
        }
        routes
    }

    /// The shell's routes (`l4slab emu -- COMMAND`, [`crate::shell`]): every
    /// packet, whatever its flow id (the shell's classifier hashes the
    /// 5-tuple for the qdiscs), takes the route of `scn`'s only flow, the
    /// placeholder of [`crate::shell::BASE_SCENARIO`]: COMMAND runs on its
    /// one client host, so its packets pass that host's Wi-Fi station.
    pub fn every_packet(scn: &Scenario, access: &AccessQueues) -> Self {
        assert_eq!(scn.flows.len(), 1, "the shell's scenario has one flow");
        let mut routes = Self::new(scn, access);
        routes.other = routes.flows.pop().expect("one flow");
        routes
    }

    /// `flow`'s route per direction.
    #[inline]
    fn route(&self, flow: u32) -> &[[Option<usize>; 2]; 2] {
        self.flows.get(flow as usize).unwrap_or(&self.other)
    }

    /// The access queue a packet of `flow` going in `dir` enters before the
    /// bottleneck.
    #[inline]
    pub fn ingress(&self, flow: u32, dir: usize) -> Option<usize> {
        self.route(flow)[dir][0]
    }

    /// The access queue it enters after the bottleneck.
    #[inline]
    pub fn egress(&self, flow: u32, dir: usize) -> Option<usize> {
        self.route(flow)[dir][1]
    }

    /// The direction of queue `q` (`DOWN`, `UP`, or an access queue's).
    #[inline]
    pub fn dir_of(&self, q: usize) -> usize {
        if q < 2 {
            q
        } else {
            self.dirs[q - 2]
        }
    }
}
