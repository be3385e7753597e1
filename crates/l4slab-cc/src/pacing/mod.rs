//! Pacing, for both transports: one [`Pacer`] (one state, one API) that
//! turns the rate in force — the controller's, or the transport's default
//! rate — into the release time of the next packet, which the endpoint makes
//! a timer (never a sleep). Both transports depend on `l4slab-cc`, so the
//! pacer lives here.
//!
//! The transport chooses the release rule once, as a [`Rule`]:
//!
//! * [`Rule::Linux`] — TCP (`l4slab-tcp`), [`linux`]: Linux internal pacing
//!   (`tcp_update_skb_after_send`, `tcp_update_pacing_rate`): an earliest
//!   departure time advanced by each segment's `len / rate` (what `sch_fq`
//!   enforces for a socket's `skb->tstamp`), the first 10 segments unpaced,
//!   half a gap of credit for a late start; default rate 200 % / 120 % of
//!   `cwnd / srtt` ([`linux::default_rate`]).
//! * [`Rule::TokenBucket`] — QUIC (`l4slab-quic`), [`rfc9002`]: RFC 9002
//!   §7.7, a token bucket as deep as the initial window refilled at the
//!   pacing rate; default rate `1.25 · cwnd / smoothed_rtt`
//!   ([`rfc9002::rate_for`]).
//!
//! The rules stay two because each transport follows its own specification
//! and the results depend on them: the same rate gives a different departure
//! sequence (a burst of 10 then strict gaps for TCP, a burst of the bucket's
//! depth then the refill for QUIC). Each rule's arithmetic is in its file;
//! the choice between them is one `match` per call (no allocation, no
//! dynamic dispatch).

pub mod linux;
pub mod rfc9002;

use l4slab_core::{Dur, Rate, Time};

/// Which release rule a [`Pacer`] follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Linux internal pacing (TCP), see [`linux`].
    Linux,
    /// RFC 9002 §7.7 (QUIC): a token bucket `burst` bytes deep (§7.7: "limit
    /// bursts to the initial congestion window") that releases a packet due
    /// within `granularity` of the time asked (zero on an exact clock; a
    /// real clock's wake-up granularity), see [`rfc9002`].
    TokenBucket { burst: u64, granularity: Dur },
}

/// The state of the rule in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    Linux(linux::Departure),
    TokenBucket(rfc9002::Bucket),
}

/// The pacer of one sender: the pacing rate in force and its release rule's
/// state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacer {
    /// `None`: unpaced.
    rate: Option<Rate>,
    release: Release,
}

impl Pacer {
    /// A pacer following `rule` from `now`, unpaced until [`Pacer::set_rate`].
    pub fn new(rule: Rule, now: Time) -> Self {
        let release = match rule {
            Rule::Linux => Release::Linux(linux::Departure::default()),
            Rule::TokenBucket { burst, granularity } => {
                Release::TokenBucket(rfc9002::Bucket::full(burst, granularity, now))
            }
        };
        Pacer {
            rate: None,
            release,
        }
    }

    /// The pacing rate in force (`None` = unpaced).
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// The pacing rate changes at `now` (what was earned until `now` is
    /// earned at the old rate).
    pub fn set_rate(&mut self, now: Time, rate: Option<Rate>) {
        if let Release::TokenBucket(b) = &mut self.release {
            b.refill(now, self.rate);
        }
        self.rate = rate;
    }

    /// When a packet of `bytes` may leave: `now` or later.
    pub fn release_time(&mut self, now: Time, bytes: u64) -> Time {
        match &mut self.release {
            Release::Linux(d) => d.release_time(now),
            Release::TokenBucket(b) => b.release_time(now, bytes, self.rate),
        }
    }

    /// A packet of `bytes` was due at a wake-up noticed only at `now`, later
    /// (real clocks only; the simulator's timers are never late). The token
    /// bucket keeps at most Linux's burst quantum instead of a catch-up burst
    /// ([`rfc9002`]'s module docs); Linux's rule already bounds what a late
    /// packet's successor gains (`tcp_update_skb_after_send`), so it keeps
    /// its state.
    pub fn on_late_wakeup(&mut self, now: Time, bytes: u64) {
        if let Release::TokenBucket(b) = &mut self.release {
            b.on_late_wakeup(now, bytes, self.rate);
        }
    }

    /// A packet of `bytes` (TCP: its payload, Linux `skb->len`; QUIC: its
    /// size) left at `now`.
    pub fn on_sent(&mut self, now: Time, bytes: u64) {
        match &mut self.release {
            Release::Linux(d) => d.on_sent(now, bytes, self.rate),
            Release::TokenBucket(b) => b.on_sent(now, bytes, self.rate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same rate, two departure sequences: Linux sends 10 segments at
    /// once and then one per `len / rate`; the bucket sends its depth at once
    /// and then one per `len / rate`.
    #[test]
    fn one_rate_two_rules() {
        let rate = Some(Rate::from_bps(1000 * 8 * 1000)); // 1000 B per ms
        let mut tcp = Pacer::new(Rule::Linux, Time::ZERO);
        let mut quic = Pacer::new(
            Rule::TokenBucket {
                burst: 3000,
                granularity: Dur::ZERO,
            },
            Time::ZERO,
        );
        for p in [&mut tcp, &mut quic] {
            p.set_rate(Time::ZERO, rate);
            assert_eq!(p.rate(), rate);
        }
        let burst = |p: &mut Pacer| {
            let mut n = 0;
            while p.release_time(Time::ZERO, 1000) == Time::ZERO && n < 20 {
                p.on_sent(Time::ZERO, 1000);
                n += 1;
            }
            n
        };
        assert_eq!(burst(&mut tcp), 10);
        assert_eq!(burst(&mut quic), 3);
        assert_eq!(tcp.release_time(Time::ZERO, 1000), Time::from_millis(1));
        assert_eq!(quic.release_time(Time::ZERO, 1000), Time::from_millis(1));
    }
}
