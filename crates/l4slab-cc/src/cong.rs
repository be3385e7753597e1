//! What the controllers share, as Linux's `net/ipv4/tcp_cong.c` holds it for
//! every `tcp_congestion_ops`: slow start ([`slow_start`], Linux
//! `tcp_slow_start`), the additive increase ([`cong_avoid_ai`],
//! `tcp_cong_avoid_ai`), Reno's halving ([`reno_ssthresh`],
//! `tcp_reno_ssthresh`), the undo point ([`UndoPoint`],
//! `tcp_reno_undo_cwnd` with `tcp_undo_cwnd_reduction`), and the one way a
//! controller's state changes ([`enter`]: a checked `l4slab_core::state`
//! transition, traced as `TraceEvent::CcStateChanged`); also the check
//! every controller makes of the window it starts from ([`check_window`])
//! and of the windows slow start, congestion avoidance and recovery need
//! ([`assert_slow_start`], [`assert_congestion_avoidance`],
//! [`assert_recovery`]).
//!
//! Windows are in bytes (Prague's fractional window in `f64` bytes).

use l4slab_core::state::{Checked, Machine};
use l4slab_core::{FlowId, Time, TraceEvent, Tracer};

/// A window in bytes: whole (`u64`) or fractional (`f64`, Prague).
pub(crate) trait Window: Copy + PartialOrd + core::ops::Add<Output = Self> {
    /// `self - other`, 0 when `other >= self`.
    fn minus(self, other: Self) -> Self;
    fn min(self, other: Self) -> Self;
}

impl Window for u64 {
    fn minus(self, other: Self) -> Self {
        self.saturating_sub(other)
    }
    fn min(self, other: Self) -> Self {
        Ord::min(self, other)
    }
}

impl Window for f64 {
    fn minus(self, other: Self) -> Self {
        (self - other).max(0.0)
    }
    fn min(self, other: Self) -> Self {
        f64::min(self, other)
    }
}

/// Slow start for one ACK of `acked` bytes: `cwnd += min(acked, limit)`,
/// capped at `ssthresh`. Returns the new window and the acked bytes left over
/// for congestion avoidance.
///
/// Linux `tcp_slow_start`: `cwnd = min(cwnd + acked, ssthresh); acked -=
/// cwnd - tp->snd_cwnd; return acked`. RFC 5681 §3.1 with RFC 3465 §2.3
/// Appropriate Byte Counting: `cwnd += min(N, L*SMSS)`, which `limit` is
/// (Reno and DCTCP `L = 2`, CUBIC `L` per RFC 9406 §4.2; Prague, as Linux,
/// none).
pub(crate) fn slow_start<W: Window>(cwnd: W, ssthresh: W, acked: W, limit: W) -> (W, W) {
    let used = acked.min(limit).min(ssthresh.minus(cwnd));
    (cwnd + used, acked.minus(used))
}

/// Congestion avoidance, Linux `tcp_cong_avoid_ai` in bytes (RFC 3465 §2.1
/// byte counting, RFC 5681 §3.1 eq. 3's alternative): `bytes_acked += N`;
/// whenever `bytes_acked >= cwnd`, `bytes_acked -= cwnd` and `cwnd += SMSS`
/// (≈ +1 SMSS per RTT).
pub(crate) fn cong_avoid_ai(cwnd: &mut u64, bytes_acked: &mut u64, acked: u64, smss: u64) {
    *bytes_acked = bytes_acked.saturating_add(acked);
    while *bytes_acked >= *cwnd {
        *bytes_acked -= *cwnd;
        *cwnd = cwnd.saturating_add(smss);
    }
}

/// `ssthresh = max(⌊cwnd/SMSS⌋ / 2, 2)` segments: Linux `tcp_reno_ssthresh`
/// (whole segments, truncated: `tcp_snd_cwnd(tp) >> 1U`); RFC 5681 §3.1
/// eq. (4) with cwnd for FlightSize (`docs/models/transport.md`, "Reduction
/// base").
pub(crate) fn reno_ssthresh(cwnd: u64, smss: u64) -> u64 {
    ((cwnd / smss) / 2).max(2) * smss
}

/// Why a controller's window is unusable: every controller starts from
/// `initial_window_segments` segments of `mss` bytes (Linux `TCP_INIT_CWND`
/// of `mss_cache`), and neither may be zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowConfigError {
    /// `mss` is zero.
    #[error("mss: must be at least 1 byte")]
    ZeroMss,
    /// `initial_window_segments` is zero.
    #[error("initial_window_segments: must be at least 1 segment")]
    ZeroInitialWindow,
}

/// The check of every controller's `validate` on the window it starts from.
pub(crate) fn check_window(
    mss: u64,
    initial_window_segments: u64,
) -> Result<(), WindowConfigError> {
    if mss == 0 {
        return Err(WindowConfigError::ZeroMss);
    }
    if initial_window_segments == 0 {
        return Err(WindowConfigError::ZeroInitialWindow);
    }
    Ok(())
}

/// Linux `prior_cwnd` and `prior_ssthresh`, saved when a loss reduces the
/// window (`tcp_init_cwnd_reduction`, `tcp_enter_loss`) and restored by an
/// undo (`tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd`, also CUBIC's
/// and, with its `loss_cwnd`, DCTCP's). Bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UndoPoint {
    cwnd: u64,
    ssthresh: u64,
}

impl UndoPoint {
    /// Linux `tcp_current_ssthresh` outside a reduction:
    /// `prior_ssthresh = max(ssthresh, 3/4 cwnd)`; `prior_cwnd = cwnd`.
    pub fn save(cwnd: u64, ssthresh: u64) -> Self {
        UndoPoint {
            cwnd,
            ssthresh: ssthresh.max(cwnd / 2 + cwnd / 4),
        }
    }

    /// `(cwnd, ssthresh)` after the undo: `cwnd = max(cwnd, prior_cwnd)`
    /// (`tcp_reno_undo_cwnd`), `ssthresh = max(ssthresh, prior_ssthresh)`.
    pub fn restore(self, cwnd: u64, ssthresh: u64) -> (u64, u64) {
        (cwnd.max(self.cwnd), ssthresh.max(self.ssthresh))
    }
}

/// The windows slow start needs (RFC 5681 §3.1: "cwnd < ssthresh"; Linux
/// `tcp_in_slow_start`), checked where a controller enters it.
#[track_caller]
pub(crate) fn assert_slow_start(cwnd: u64, ssthresh: u64) {
    assert!(
        cwnd < ssthresh,
        "SlowStart needs cwnd < ssthresh ({cwnd} >= {ssthresh})"
    );
}

/// The windows congestion avoidance needs (RFC 5681 §3.1: "cwnd >
/// ssthresh", or equal), checked where a controller enters it.
#[track_caller]
pub(crate) fn assert_congestion_avoidance(cwnd: u64, ssthresh: u64) {
    assert!(
        cwnd >= ssthresh,
        "CongestionAvoidance needs cwnd >= ssthresh ({cwnd} < {ssthresh})"
    );
}

/// The windows loss recovery needs: a reduction set `ssthresh` and cwnd is
/// at or below it (RFC 6675 §5 (4.2); RFC 6582), checked where a controller
/// enters it.
#[track_caller]
pub(crate) fn assert_recovery(cwnd: u64, ssthresh: u64) {
    assert!(
        ssthresh != u64::MAX && cwnd <= ssthresh,
        "Recovery needs a reduced window (cwnd {cwnd}, ssthresh {ssthresh})"
    );
}

/// A controller's state changes to `next`: the checked transition of
/// `l4slab_core::state` (panics on an illegal edge), traced as
/// `CcStateChanged` when the state's name changes (the data a state carries
/// is not traced).
#[track_caller]
pub(crate) fn enter<S: Machine>(
    state: &mut Checked<S>,
    now: Time,
    next: S,
    flow: FlowId,
    tracer: &mut dyn Tracer,
) {
    let c = state.transition(next);
    if c.renames() {
        tracer.event(
            now,
            TraceEvent::CcStateChanged {
                flow,
                from: c.from,
                to: c.to,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    #[test]
    fn slow_start_counts_at_most_the_limit_and_stops_at_ssthresh() {
        // ABC L = 2: an ACK of 3 segments adds 2.
        assert_eq!(
            slow_start(10 * MSS, u64::MAX, 3 * MSS, 2 * MSS),
            (12 * MSS, MSS)
        );
        // Reaching ssthresh: the rest goes to congestion avoidance.
        assert_eq!(
            slow_start(10 * MSS, 11 * MSS, 2 * MSS, 2 * MSS),
            (11 * MSS, MSS)
        );
        // Fractional windows (Prague): no limit, same cap.
        assert_eq!(
            slow_start(1000.5, 3000.0, 2500.0, f64::INFINITY),
            (3000.0, 500.5)
        );
        assert_eq!(
            slow_start(3000.0, 2000.0, 10.0, f64::INFINITY),
            (3000.0, 10.0)
        );
    }

    #[test]
    fn additive_increase_is_one_segment_per_window() {
        let (mut cwnd, mut counter) = (10 * MSS, 0);
        cong_avoid_ai(&mut cwnd, &mut counter, 9 * MSS, MSS);
        assert_eq!((cwnd, counter), (10 * MSS, 9 * MSS));
        cong_avoid_ai(&mut cwnd, &mut counter, 2 * MSS, MSS);
        assert_eq!((cwnd, counter), (11 * MSS, MSS));
    }

    #[test]
    fn reno_halves_in_whole_segments_with_a_floor_of_two() {
        assert_eq!(reno_ssthresh(41 * MSS, MSS), 20 * MSS);
        assert_eq!(reno_ssthresh(5 * MSS + 1, MSS), 2 * MSS);
        assert_eq!(reno_ssthresh(MSS, MSS), 2 * MSS);
    }

    #[test]
    fn state_windows_hold_at_their_edges() {
        assert_slow_start(10 * MSS, 10 * MSS + 1);
        assert_congestion_avoidance(10 * MSS, 10 * MSS);
        assert_recovery(10 * MSS, 10 * MSS);
    }

    #[test]
    #[should_panic(
        expected = "Recovery needs a reduced window (cwnd 14480, ssthresh 18446744073709551615)"
    )]
    fn recovery_without_a_reduction_is_a_bug() {
        assert_recovery(10 * MSS, u64::MAX);
    }

    #[test]
    #[should_panic(expected = "SlowStart needs cwnd < ssthresh (14480 >= 14480)")]
    fn slow_start_at_ssthresh_is_a_bug() {
        assert_slow_start(10 * MSS, 10 * MSS);
    }

    #[test]
    fn undo_restores_the_larger_window() {
        let u = UndoPoint::save(40 * MSS, u64::MAX);
        assert_eq!(u.restore(20 * MSS, 20 * MSS), (40 * MSS, u64::MAX));
        let u = UndoPoint::save(40 * MSS, 10 * MSS);
        assert_eq!(u.restore(20 * MSS, 20 * MSS), (40 * MSS, 30 * MSS));
    }
}
