//! For tests only: a scripted two-ended network, [`TestPath`], that carries
//! opaque payloads with an IP-ECN field between a client and a server end
//! and hands them back in time order. Public so that every crate's tests
//! (app harnesses, QUIC connection tests) script the same network; the
//! simulator's links and queues are `l4slab-link` and `l4slab-qdisc`, not
//! this.
//!
//! Each direction is a [`TestLink`]: a fixed one-way delay, optionally a
//! serialization rate (a FIFO with no queue limit: a datagram departs when
//! the link is free and its last bit is out, `rate.tx_time(wire size)`
//! later), optionally CE marking of ECT datagrams above a backlog and ECN
//! bleaching. One [`Loss`] rule sees every datagram offered, either way,
//! numbered from 0 in the order offered; a lost datagram does not occupy
//! the link.
//!
//! ```
//! use l4slab_core::testing::{End, Loss, TestLink, TestPath};
//! use l4slab_core::{Dur, Ecn, Rate, Time};
//!
//! // 10 ms each way at 8 Mbit/s (1 µs a byte); every 2nd datagram lost.
//! let link = TestLink::new(Dur::from_millis(10)).rate(Rate::from_mbps(8));
//! let mut path = TestPath::new(link).with_loss(Loss::EveryNth(2));
//! let t0 = Time::ZERO;
//! assert!(path.send(t0, End::Client, vec![0u8; 1000], Ecn::Ect1));
//! assert!(!path.send(t0, End::Server, vec![1u8; 10], Ecn::NotEct));
//! assert!(path.send(t0, End::Client, vec![2u8; 1000], Ecn::Ect1));
//! // The second client datagram waited for the first to serialize.
//! assert_eq!(path.next_arrival(), Some(Time::from_micros(11_000)));
//! let a = path.pop_next().unwrap();
//! assert_eq!((a.to, a.payload[0], a.ecn), (End::Server, 0, Ecn::Ect1));
//! assert_eq!(path.pop_next().unwrap().at, Time::from_micros(12_000));
//! assert_eq!((path.offered(), path.lost()), (3, 1));
//! ```

use std::collections::VecDeque;

use crate::{Dur, Ecn, Rate, Time};

/// One end of a [`TestPath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Client,
    Server,
}

impl End {
    /// The other end.
    pub fn peer(self) -> End {
        match self {
            End::Client => End::Server,
            End::Server => End::Client,
        }
    }

    fn ix(self) -> usize {
        match self {
            End::Client => 0,
            End::Server => 1,
        }
    }
}

/// What a [`TestPath`] needs of a payload: the bytes it occupies on the
/// wire (headers included, if the test counts them).
pub trait WireSize {
    fn wire_size(&self) -> u64;
}

impl WireSize for Vec<u8> {
    fn wire_size(&self) -> u64 {
        self.len() as u64
    }
}

/// One direction of a [`TestPath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestLink {
    /// One-way propagation delay.
    pub delay: Dur,
    /// Serialization rate; `None`: a datagram takes no time to send.
    pub rate: Option<Rate>,
    /// Mark an ECT datagram CE when the backlog it finds (bytes still to
    /// serialize) exceeds this.
    pub ce_above: Option<u64>,
    /// Clear every datagram's ECN field (after any marking).
    pub bleach: bool,
}

impl TestLink {
    /// A link of one-way `delay`, no serialization, no marking.
    pub fn new(delay: Dur) -> Self {
        TestLink {
            delay,
            rate: None,
            ce_above: None,
            bleach: false,
        }
    }

    /// Serialize at `rate`.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Mark ECT datagrams CE above a backlog of `bytes`.
    pub fn mark_ce_above(mut self, bytes: u64) -> Self {
        self.ce_above = Some(bytes);
        self
    }

    /// Bleach the ECN field.
    pub fn bleach(mut self) -> Self {
        self.bleach = true;
        self
    }
}

/// A datagram offered to the path, as a [`Loss`] rule sees it.
#[derive(Debug)]
pub struct Offer<'a, P> {
    /// How many datagrams were offered before it, both ways.
    pub index: u64,
    pub from: End,
    /// When it was sent.
    pub at: Time,
    pub payload: &'a P,
}

/// A [`Loss`] rule's verdict on each offer: true loses it.
pub type LossRule<P> = Box<dyn FnMut(&Offer<'_, P>) -> bool>;

/// Which datagrams a [`TestPath`] loses.
pub enum Loss<P> {
    None,
    /// The n-th, 2n-th, ... datagram offered, counting both ways from 1
    /// (`EveryNth(0)`: none).
    EveryNth(u64),
    /// Those the closure picks.
    When(LossRule<P>),
}

impl<P> Loss<P> {
    pub fn when(rule: impl FnMut(&Offer<'_, P>) -> bool + 'static) -> Self {
        Loss::When(Box::new(rule))
    }

    fn loses(&mut self, offer: &Offer<'_, P>) -> bool {
        match self {
            Loss::None => false,
            Loss::EveryNth(n) => (offer.index + 1).is_multiple_of(*n),
            Loss::When(rule) => rule(offer),
        }
    }
}

/// A datagram handed back by [`TestPath::pop_next`] or [`TestPath::pop_due`].
#[derive(Debug, PartialEq, Eq)]
pub struct Arrival<P> {
    pub at: Time,
    pub to: End,
    pub payload: P,
    /// The ECN field as the path left it.
    pub ecn: Ecn,
}

struct InFlight<P> {
    at: Time,
    /// The offer's index: ties in arrival time go in sending order.
    index: u64,
    payload: P,
    ecn: Ecn,
}

/// Two [`TestLink`]s, client → server and server → client, and a [`Loss`]
/// rule (see the module documentation).
pub struct TestPath<P> {
    /// Indexed by the sending end.
    links: [TestLink; 2],
    free_at: [Time; 2],
    in_flight: [VecDeque<InFlight<P>>; 2],
    loss: Loss<P>,
    offered: u64,
    lost: u64,
}

impl<P: WireSize> TestPath<P> {
    /// The same link both ways, nothing lost.
    pub fn new(link: TestLink) -> Self {
        Self::asymmetric(link, link)
    }

    pub fn asymmetric(client_to_server: TestLink, server_to_client: TestLink) -> Self {
        TestPath {
            links: [client_to_server, server_to_client],
            free_at: [Time::ZERO; 2],
            in_flight: [VecDeque::new(), VecDeque::new()],
            loss: Loss::None,
            offered: 0,
            lost: 0,
        }
    }

    pub fn with_loss(mut self, loss: Loss<P>) -> Self {
        self.loss = loss;
        self
    }

    /// `from` sends `payload` with ECN field `ecn` at `now` (not before an
    /// earlier send); false if the loss rule dropped it.
    pub fn send(&mut self, now: Time, from: End, payload: P, mut ecn: Ecn) -> bool {
        let index = self.offered;
        self.offered += 1;
        let offer = Offer {
            index,
            from,
            at: now,
            payload: &payload,
        };
        if self.loss.loses(&offer) {
            self.lost += 1;
            return false;
        }
        let i = from.ix();
        let link = self.links[i];
        let mut depart = now;
        if let Some(rate) = link.rate {
            let backlog = rate.bytes_in(self.free_at[i].saturating_since(now));
            if link.ce_above.is_some_and(|t| backlog > t) && ecn.is_ect() {
                ecn = Ecn::Ce;
            }
            depart = self.free_at[i].max(now) + rate.tx_time(payload.wire_size());
            self.free_at[i] = depart;
        }
        if link.bleach {
            ecn = Ecn::NotEct;
        }
        let at = depart + link.delay;
        debug_assert!(
            self.in_flight[i].back().is_none_or(|b| b.at <= at),
            "a constant delay behind a FIFO keeps each direction in order"
        );
        self.in_flight[i].push_back(InFlight {
            at,
            index,
            payload,
            ecn,
        });
        true
    }

    /// When the next datagram arrives, either way.
    pub fn next_arrival(&self) -> Option<Time> {
        self.in_flight
            .iter()
            .filter_map(|q| q.front().map(|f| f.at))
            .min()
    }

    /// The next datagram to arrive, either way (on a tie, the one sent first).
    pub fn pop_next(&mut self) -> Option<Arrival<P>> {
        let key = |q: &VecDeque<InFlight<P>>| q.front().map(|f| (f.at, f.index));
        let from = match (key(&self.in_flight[0]), key(&self.in_flight[1])) {
            (None, None) => return None,
            (Some(_), None) => End::Client,
            (None, Some(_)) => End::Server,
            (Some(c), Some(s)) => {
                if c <= s {
                    End::Client
                } else {
                    End::Server
                }
            }
        };
        self.pop(from)
    }

    /// The next datagram for `to`, if it has arrived by `now`.
    pub fn pop_due(&mut self, to: End, now: Time) -> Option<Arrival<P>> {
        let from = to.peer();
        if self.in_flight[from.ix()].front()?.at > now {
            return None;
        }
        self.pop(from)
    }

    fn pop(&mut self, from: End) -> Option<Arrival<P>> {
        let f = self.in_flight[from.ix()].pop_front()?;
        Some(Arrival {
            at: f.at,
            to: from.peer(),
            payload: f.payload,
            ecn: f.ecn,
        })
    }

    /// Datagrams offered so far, lost ones included.
    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// Datagrams the loss rule dropped.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(x: u64) -> Time {
        Time::from_micros(x)
    }

    #[test]
    fn ties_arrive_in_sending_order_and_pop_due_waits() {
        let mut p = TestPath::new(TestLink::new(Dur::from_millis(1)));
        p.send(us(0), End::Server, vec![1], Ecn::NotEct);
        p.send(us(0), End::Client, vec![2], Ecn::NotEct);
        assert_eq!(p.pop_due(End::Client, us(999)), None);
        let order: Vec<_> = std::iter::from_fn(|| p.pop_next())
            .map(|a| (a.at, a.to, a.payload[0]))
            .collect();
        assert_eq!(
            order,
            [(us(1000), End::Client, 1), (us(1000), End::Server, 2)]
        );
    }

    #[test]
    fn ect_is_marked_above_the_backlog_and_bleaching_clears_it() {
        // 8 Mbit/s: 1 µs a byte.
        let link = TestLink::new(Dur::ZERO)
            .rate(Rate::from_mbps(8))
            .mark_ce_above(1500);
        let mut p = TestPath::asymmetric(link, link.bleach());
        for ecn in [Ecn::Ect1, Ecn::Ect1, Ecn::Ect1, Ecn::NotEct] {
            p.send(us(0), End::Client, vec![0; 1000], ecn);
        }
        // Backlogs 0, 1000, 2000 (marked), 3000 (not ECT).
        let ecns: Vec<_> = std::iter::from_fn(|| p.pop_due(End::Server, us(4000)))
            .map(|a| a.ecn)
            .collect();
        assert_eq!(ecns, [Ecn::Ect1, Ecn::Ect1, Ecn::Ce, Ecn::NotEct]);
        p.send(us(0), End::Server, vec![0; 10], Ecn::Ect1);
        assert_eq!(p.pop_next().unwrap().ecn, Ecn::NotEct);
    }

    #[test]
    fn a_loss_rule_sees_every_offer_and_lost_datagrams_take_no_link_time() {
        let link = TestLink::new(Dur::ZERO).rate(Rate::from_mbps(8));
        let mut p = TestPath::new(link).with_loss(Loss::when(|o: &Offer<'_, Vec<u8>>| {
            o.from == End::Client && o.index == 1
        }));
        p.send(us(0), End::Client, vec![0; 100], Ecn::NotEct);
        p.send(us(0), End::Client, vec![0; 100], Ecn::NotEct);
        p.send(us(0), End::Client, vec![0; 100], Ecn::NotEct);
        assert_eq!((p.offered(), p.lost()), (3, 1));
        assert_eq!(p.pop_next().unwrap().at, us(100));
        assert_eq!(p.pop_next().unwrap().at, us(200));
        assert_eq!(p.pop_next(), None);
    }
}
