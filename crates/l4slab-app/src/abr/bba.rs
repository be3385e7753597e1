//! BBA-0, buffer-based rate adaptation: Huang, Johari, McKeown, Trunnell and
//! Watson, "A Buffer-Based Approach to Rate Adaptation: Evidence from a
//! Large Video Streaming Service", SIGCOMM 2014, §4 (BBA-0, Algorithm 1).
//! The rung follows the buffer alone through a rate map: the lowest rung
//! while the buffer is in the *reservoir*, the highest above reservoir +
//! *cushion*, and in between a line from R_min to R_max, crossed with
//! hysteresis (the rate only changes once the map passes the next rung).
//!
//! Sizes: the paper's player holds 240 s, with a 90 s reservoir and a
//! 126 s cushion (the remaining 24 s, 10 %, an upper reservoir). This
//! player decides when its buffer is at most `buffer_target − segment` (it
//! fetches only then, [`crate::video_stream`]), so the zones keep the
//! paper's proportions of that: reservoir 90/240 and cushion 126/240 of it.
//!
//! Not modelled: BBA-1's reservoir from chunk sizes (VBR), BBA-2's
//! throughput-driven startup; the first segment is at R_min as in BBA-0.

use l4slab_core::Dur;

use super::{Abr, AbrInput};

/// §4: a 240 s buffer, of which the reservoir is 90 s ...
const PAPER_BUFFER_S: f64 = 240.0;
const PAPER_RESERVOIR_S: f64 = 90.0;
/// ... and the cushion 126 s.
const PAPER_CUSHION_S: f64 = 126.0;

/// BBA-0 (see the module documentation). It keeps no state: the previous
/// rung comes with each decision.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bba;

impl Bba {
    pub fn new() -> Self {
        Bba
    }

    /// Reservoir and cushion, in seconds, for a player that decides with at
    /// most `room` buffered.
    pub fn zones(room: Dur) -> (f64, f64) {
        let scale = room.as_secs_f64() / PAPER_BUFFER_S;
        (PAPER_RESERVOIR_S * scale, PAPER_CUSHION_S * scale)
    }
}

impl Abr for Bba {
    fn on_download(&mut self, _bytes: u64, _download: Dur) {}

    fn choose(&mut self, input: &AbrInput<'_>) -> usize {
        let ladder = input.ladder;
        let top = ladder.len() - 1;
        let rate = |i: usize| ladder[i] as f64;
        let room = input.buffer_target.saturating_sub(input.segment);
        let (r, cu) = Bba::zones(room);
        let buf = input.buffer.as_secs_f64();
        // BBA-0 starts at R_min.
        let prev = input.last.unwrap_or(0);
        // Algorithm 1: Rate+ = R_max if Rate_prev = R_max, else min{R_i : R_i > Rate_prev};
        // Rate- = R_min if Rate_prev = R_min, else max{R_i : R_i < Rate_prev}.
        let plus = rate((prev + 1).min(top));
        let minus = rate(prev.saturating_sub(1));
        if buf <= r {
            // Buf_now <= r: Rate_next = R_min.
            return 0;
        }
        if buf >= r + cu {
            // Buf_now >= r + cu: Rate_next = R_max.
            return top;
        }
        // The rate map f(B): linear from R_min at r to R_max at r + cu.
        let f = rate(0) + (buf - r) / cu * (rate(top) - rate(0));
        if f >= plus {
            // f(Buf_now) >= Rate+: Rate_next = max{R_i : R_i < f(Buf_now)}.
            ladder.iter().rposition(|&b| (b as f64) < f).unwrap_or(0)
        } else if f <= minus {
            // f(Buf_now) <= Rate-: Rate_next = min{R_i : R_i > f(Buf_now)}.
            ladder.iter().position(|&b| (b as f64) > f).unwrap_or(top)
        } else {
            // Otherwise Rate_next = Rate_prev.
            prev
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video_stream::APPLE_HLS_LADDER;

    fn choose(buffer_ms: u64, last: Option<usize>) -> usize {
        Bba::new().choose(&AbrInput {
            ladder: &APPLE_HLS_LADDER,
            buffer: Dur::from_millis(buffer_ms),
            last,
            segment: Dur::from_secs(6),
            buffer_target: Dur::from_secs(30),
        })
    }

    #[test]
    fn the_rate_map_with_its_hysteresis_step_by_step() {
        // Target 30 s, segments 6 s: decisions at <= 24 s buffered, so the
        // reservoir is 24 x 90/240 = 9 s and the cushion 24 x 126/240 = 12.6 s.
        let (r, cu) = Bba::zones(Dur::from_secs(24));
        assert!((r - 9.0).abs() < 1e-12 && (cu - 12.6).abs() < 1e-12);
        // f(B) = 145k + (B - 9)/12.6 x (7800k - 145k) = 145k + (B - 9) x 607,540 bit/s.
        // Ladder (kbit/s): 145 365 730 1100 2000 3000 4500 6000 7800.
        // First segment, empty buffer: R_min.
        assert_eq!(choose(0, None), 0);
        // 6 s: in the reservoir -> R_min.
        assert_eq!(choose(6_000, Some(0)), 0);
        // 12 s, prev 145: f = 1,967,619 >= Rate+ (365k) -> max{R_i < f} = 1100 (rung 3).
        assert_eq!(choose(12_000, Some(0)), 3);
        // 13 s, prev 1100: f = 2,575,159 >= Rate+ (2000k) -> 2000 (rung 4).
        assert_eq!(choose(13_000, Some(3)), 4);
        // 11.5 s, prev 2000: f = 1,663,849, below Rate+ (3000k) and above
        // Rate- (1100k): stay at 2000 (rung 4), where the map alone says 1100.
        assert_eq!(choose(11_500, Some(4)), 4);
        // 10 s, prev 2000: f = 752,540 <= Rate- (1100k) -> min{R_i > f} = 1100 (rung 3).
        assert_eq!(choose(10_000, Some(4)), 3);
        // 22 s >= r + cu = 21.6 s: R_max.
        assert_eq!(choose(22_000, Some(3)), 8);
        // Back to 9 s (= r): R_min at once, from the top.
        assert_eq!(choose(9_000, Some(8)), 0);
    }

    #[test]
    fn a_target_of_one_segment_leaves_no_cushion_and_fetches_the_lowest() {
        let r = Bba::new().choose(&AbrInput {
            ladder: &APPLE_HLS_LADDER,
            buffer: Dur::ZERO,
            last: Some(5),
            segment: Dur::from_secs(6),
            buffer_target: Dur::from_secs(6),
        });
        assert_eq!(r, 0);
    }
}
