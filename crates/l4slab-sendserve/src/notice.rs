//! The server's refusals, said on the terminal without flooding it: at most
//! one line per [`NOTICE_EVERY`], with what was refused or dropped since the
//! last line ([`RefusalNotice`]). A host that sends thousands of Initials a
//! second gets one line a second, and the counters keep the totals
//! ([`ServerStats`]).

use std::net::SocketAddr;

use l4slab_core::{Dur, Time};

use crate::server::ServerStats;

/// The shortest time between two refusal lines.
pub const NOTICE_EVERY: Dur = Dur::from_secs(1);

/// The counts a refusal line reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    over_limit: u64,
    over_address_limit: u64,
    handshake_timeouts: u64,
}

impl Counts {
    fn of(st: &ServerStats) -> Self {
        Counts {
            over_limit: st.sessions_refused,
            over_address_limit: st.sessions_refused_per_address,
            handshake_timeouts: st.handshake_timeouts,
        }
    }
}

/// Rate-limited lines about refused and dropped sessions (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct RefusalNotice {
    said: Counts,
    last_line: Option<Time>,
}

impl RefusalNotice {
    /// The line to print at `now`, if anything was refused or dropped since
    /// the last line and that line is at least [`NOTICE_EVERY`] old.
    /// `limits`: (`--max-sessions`, `--max-per-address`, the handshake
    /// timeout); `last`: the source of the last refusal.
    pub fn poll(
        &mut self,
        now: Time,
        st: &ServerStats,
        limits: (usize, usize, Dur),
        last: Option<SocketAddr>,
    ) -> Option<String> {
        let c = Counts::of(st);
        if c == self.said
            || self
                .last_line
                .is_some_and(|t| now.saturating_since(t) < NOTICE_EVERY)
        {
            return None;
        }
        let (max, per_address, handshake) = limits;
        let mut parts = Vec::new();
        let over = c.over_limit - self.said.over_limit;
        if over > 0 {
            parts.push(format!(
                "refused {over} over the limit of {max} sessions (--max-sessions)"
            ));
        }
        let over = c.over_address_limit - self.said.over_address_limit;
        if over > 0 {
            parts.push(format!(
                "refused {over} over the limit of {per_address} per address (--max-per-address)"
            ));
        }
        let dropped = c.handshake_timeouts - self.said.handshake_timeouts;
        if dropped > 0 {
            parts.push(format!(
                "dropped {dropped} without a handshake in {} s (--handshake-timeout)",
                l4slab_core::stats::round6(handshake.as_secs_f64())
            ));
        }
        let from = if c.over_limit + c.over_address_limit
            > self.said.over_limit + self.said.over_address_limit
        {
            last.map(|a| format!("; last refused: {a}"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        self.said = c;
        self.last_line = Some(now);
        Some(format!("l4slab serve: {}{from}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: (usize, usize, Dur) = (16, 4, Dur::from_secs(5));

    #[test]
    fn says_each_refusal_once_and_at_most_once_a_second() {
        let mut n = RefusalNotice::default();
        let mut st = ServerStats::default();
        let from: SocketAddr = "203.0.113.66:4444".parse().unwrap();
        assert_eq!(
            n.poll(Time::ZERO, &st, LIMITS, None),
            None,
            "nothing to say"
        );
        st.sessions_refused_per_address = 3;
        let line = n.poll(Time::ZERO, &st, LIMITS, Some(from)).expect("a line");
        assert!(
            line.contains("refused 3 over the limit of 4 per address")
                && line.ends_with("last refused: 203.0.113.66:4444"),
            "{line}"
        );
        // A flood within the second: no line, then one with the sum.
        for i in 1..=1000 {
            st.sessions_refused_per_address += 1;
            let t = Time::from_micros(i * 900);
            assert_eq!(n.poll(t, &st, LIMITS, Some(from)), None, "at {t:?}");
        }
        st.sessions_refused += 2;
        st.handshake_timeouts += 1;
        let line = n
            .poll(Time::from_secs(1), &st, LIMITS, Some(from))
            .expect("a line after a second");
        assert!(
            line.contains("refused 2 over the limit of 16 sessions"),
            "{line}"
        );
        assert!(
            line.contains("refused 1000 over the limit of 4 per address"),
            "{line}"
        );
        assert!(
            line.contains("dropped 1 without a handshake in 5 s"),
            "{line}"
        );
        // Nothing new: silence, however long.
        assert_eq!(n.poll(Time::from_secs(60), &st, LIMITS, Some(from)), None);
    }
}
