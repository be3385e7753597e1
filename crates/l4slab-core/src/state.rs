//! Checked state machines: the one helper every protocol state machine of
//! the lab shares (the congestion controls, the TCP connection and its ECN
//! machines, the QUIC handshake and ECN validation, GCC's rate control).
//!
//! A machine is an enum of states (variants may carry data) implementing
//! [`Machine`]: its name, each state's name and its legal edges. The state
//! lives in a [`Checked`] cell, the field private to the machine's module
//! (quinn-proto keeps a connection's `State` the same way): it is read with
//! [`Checked::get`] and changed in one place, [`Checked::transition`], which
//! asserts that the edge is legal (a violation is a bug and panics) and
//! returns the [`Change`] for the caller to trace or to keep in a
//! [`Journal`]. The data a state carries (a byte counter, a deadline) is
//! updated with [`Checked::update`], which asserts that the state stays.
//!
//! What a change emits stays the caller's: the congestion controls turn it
//! into `TraceEvent::CcStateChanged` when the state's name changes, the ECN
//! machines keep it in a [`Journal`] (most of their entry points have no
//! tracer in reach), GCC counts it and times each state.

/// A state machine: an enum of states and its legal edges.
pub trait Machine: Copy {
    /// The machine's name, in journals and panic messages (`"CUBIC"`).
    const NAME: &'static str;

    /// The state's name (stable: traces and series use it).
    fn name(self) -> &'static str;

    /// Whether `self -> next` is a legal edge. A self-loop (the same state,
    /// perhaps with other data) is legal only where this says so.
    fn may_enter(self, next: Self) -> bool;
}

/// One checked state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The state machine ([`Machine::NAME`]).
    pub machine: &'static str,
    pub from: &'static str,
    pub to: &'static str,
}

impl Change {
    /// The state's name changed (not a self-loop or a change of the data a
    /// state carries).
    pub fn renames(&self) -> bool {
        self.from != self.to
    }
}

/// The current state of a [`Machine`], changed only by [`Checked::transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked<S> {
    state: S,
}

impl<S: Machine> Checked<S> {
    /// The machine in its initial state.
    pub const fn new(initial: S) -> Self {
        Checked { state: initial }
    }

    /// The current state.
    pub fn get(&self) -> S {
        self.state
    }

    /// The one place the state changes: asserts that `current -> next` is a
    /// legal edge ([`Machine::may_enter`]) and returns the change.
    ///
    /// # Panics
    /// On an illegal edge (a bug, not bad input).
    #[track_caller]
    pub fn transition(&mut self, next: S) -> Change {
        let from = self.state;
        assert!(
            from.may_enter(next),
            "illegal {} transition {} -> {}",
            S::NAME,
            from.name(),
            next.name()
        );
        self.state = next;
        Change {
            machine: S::NAME,
            from: from.name(),
            to: next.name(),
        }
    }

    /// Update the data the current state carries; `f` must leave the machine
    /// in the same state (by name).
    ///
    /// # Panics
    /// If `f` changed the state (use [`Checked::transition`]).
    #[track_caller]
    pub fn update<R>(&mut self, f: impl FnOnce(&mut S) -> R) -> R {
        let before = self.state.name();
        let r = f(&mut self.state);
        assert_eq!(
            before,
            self.state.name(),
            "{} state changed outside `transition`",
            S::NAME
        );
        r
    }
}

impl<S: Machine + Default> Default for Checked<S> {
    fn default() -> Self {
        Checked::new(S::default())
    }
}

/// How many changes a [`Journal`] keeps.
pub const JOURNAL_LEN: usize = 16;

/// The latest state changes of a group of machines (one endpoint's ECN
/// machines, say), for machines with no tracer in reach: a ring of the last
/// [`JOURNAL_LEN`] changes and the total count. No allocation.
#[derive(Clone, Debug, Default)]
pub struct Journal {
    ring: [Option<Change>; JOURNAL_LEN],
    count: u64,
}

impl Journal {
    /// Keep `c` (dropping the oldest kept change when full).
    pub fn record(&mut self, c: Change) {
        self.ring[(self.count % JOURNAL_LEN as u64) as usize] = Some(c);
        self.count += 1;
    }

    /// Changes recorded so far (also those the ring no longer holds).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The kept changes, oldest first.
    pub fn changes(&self) -> impl Iterator<Item = Change> + '_ {
        let n = self.count.min(JOURNAL_LEN as u64);
        (self.count - n..self.count).filter_map(|i| self.ring[(i % JOURNAL_LEN as u64) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A door: `Open { swings }` counts swings without changing state.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Door {
        Closed,
        Open { swings: u32 },
        Locked,
    }

    impl Machine for Door {
        const NAME: &'static str = "door";
        fn name(self) -> &'static str {
            match self {
                Door::Closed => "Closed",
                Door::Open { .. } => "Open",
                Door::Locked => "Locked",
            }
        }
        fn may_enter(self, next: Self) -> bool {
            use Door::*;
            matches!(
                (self, next),
                (Closed, Open { .. }) | (Open { .. }, Closed) | (Closed, Locked) | (Locked, Closed)
            )
        }
    }

    #[test]
    fn transitions_are_checked_and_reported() {
        let mut d = Checked::new(Door::Closed);
        let c = d.transition(Door::Open { swings: 0 });
        assert_eq!(
            c,
            Change {
                machine: "door",
                from: "Closed",
                to: "Open"
            }
        );
        assert!(c.renames());
        d.update(|s| {
            if let Door::Open { swings } = s {
                *swings += 1;
            }
        });
        assert_eq!(d.get(), Door::Open { swings: 1 });
        assert_eq!(d.transition(Door::Closed).to, "Closed");
    }

    #[test]
    #[should_panic(expected = "illegal door transition Open -> Locked")]
    fn an_illegal_edge_panics() {
        let mut d = Checked::new(Door::Open { swings: 0 });
        d.transition(Door::Locked);
    }

    #[test]
    #[should_panic(expected = "door state changed outside `transition`")]
    fn update_may_not_change_the_state() {
        let mut d = Checked::new(Door::Closed);
        d.update(|s| *s = Door::Locked);
    }

    #[test]
    fn the_journal_keeps_the_latest_changes_in_order() {
        let mut j = Journal::default();
        let mut d = Checked::new(Door::Closed);
        for i in 0..20 {
            let next = if i % 2 == 0 {
                Door::Open { swings: 0 }
            } else {
                Door::Closed
            };
            j.record(d.transition(next));
        }
        assert_eq!(j.count(), 20);
        let kept: Vec<_> = j.changes().map(|c| c.to).collect();
        assert_eq!(kept.len(), JOURNAL_LEN);
        // The 5th change (i = 4) is the oldest kept: Closed -> Open.
        assert_eq!(kept[0], "Open");
        assert_eq!(kept[JOURNAL_LEN - 1], "Closed");
    }
}
