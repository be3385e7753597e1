//! BOLA, Lyapunov-based buffer-driven rate adaptation: Spiteri, Urgaonkar
//! and Sitaraman, "BOLA: Near-Optimal Bitrate Adaptation for Online Videos",
//! INFOCOM 2016 (arXiv:1601.06748), as dash.js's `BolaRule` implements it.
//! Each segment goes at the rung that maximizes
//! `(V (u_m + gamma_p) - Q) / S_m` (the paper's objective with the buffer
//! `Q` in seconds and `S_m` the rung's bitrate), with utility
//! `u_m = ln(S_m / S_1) + 1` (dash.js `utilitiesFromBitrates`, normalized
//! so the lowest rung's is 1).
//!
//! `V` and `gamma_p` (dash.js `calculateBolaParameters`): the lowest rung
//! is preferred up to `MINIMUM_BUFFER_S` = 10 s and the highest at the
//! buffer target: `gp = (u_max - 1) / (B / 10 - 1)`, `Vp = 10 / gp`. Here
//! `B` is the most a decision sees buffered, `buffer_target − segment`
//! (this player fetches only then; the paper's `Q_max − 1` segments, where
//! its `V` bound puts the top rung), at least 10 s + 2 s.
//!
//! dash.js's states: STARTUP picks by throughput (its EWMA estimate times
//! 0.9, [`super::throughput`]) until a segment's worth is buffered; STEADY
//! picks by BOLA, limited by BOLA-O: never *up* past both the last rung and
//! the rung the throughput sustains.
//!
//! Not modelled: dash.js's placeholder buffer (credit for time it paused
//! itself; this player's own buffer target does the pausing), so after
//! startup BOLA follows the real buffer and starts low; abandonment; the
//! `MINIMUM_BUFFER_PER_BITRATE_LEVEL_S` floor on `B` beyond one level
//! (10 s + 2 s x 9 rungs = 28 s would put the top rung out of reach of a
//! 30 s target whose decisions see at most 24 s).

use l4slab_core::Dur;

use super::throughput::EwmaThroughput;
use super::{highest_at_most, Abr, AbrInput};

/// dash.js BolaRule `MINIMUM_BUFFER_S = 10`: below it BOLA picks the lowest rung.
pub const MINIMUM_BUFFER_S: f64 = 10.0;
/// dash.js BolaRule `MINIMUM_BUFFER_PER_BITRATE_LEVEL_S = 2` (once: see the module doc).
pub const MINIMUM_BUFFER_PER_LEVEL_S: f64 = 2.0;

/// dash.js BolaRule's `BOLA_STATE_STARTUP` and `BOLA_STATE_STEADY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Startup,
    Steady,
}

/// BOLA (see the module documentation).
#[derive(Clone, Debug)]
pub struct Bola {
    state: State,
    throughput: EwmaThroughput,
}

impl Default for Bola {
    fn default() -> Self {
        Bola {
            state: State::Startup,
            throughput: EwmaThroughput::default(),
        }
    }
}

/// `(gp, Vp)` for `ladder` and a decision buffer of at most `room`.
pub fn parameters(ladder: &[u64], room: Dur) -> (f64, f64) {
    let u_max = utility(ladder, ladder.len() - 1);
    let b = room
        .as_secs_f64()
        .max(MINIMUM_BUFFER_S + MINIMUM_BUFFER_PER_LEVEL_S);
    // dash.js calculateBolaParameters: Vp (u_0 + gp - 1) = MINIMUM_BUFFER_S and
    // Vp (u_max + gp - 1) = bufferTime, with u_0 = 1.
    let gp = (u_max - 1.0) / (b / MINIMUM_BUFFER_S - 1.0);
    (gp, MINIMUM_BUFFER_S / gp)
}

/// dash.js: `utilities = bitrates.map(b => Math.log(b))`, normalized `u - u_0 + 1`.
fn utility(ladder: &[u64], m: usize) -> f64 {
    libm::log(ladder[m] as f64 / ladder[0] as f64) + 1.0
}

impl Bola {
    pub fn new() -> Self {
        Self::default()
    }

    /// dash.js getQualityFromBufferLevel: the rung maximizing
    /// (Vp (u_m + gp) - Q) / S_m; a tie goes to the higher rung (`s >= score`).
    pub fn by_buffer(ladder: &[u64], room: Dur, buffer: Dur) -> usize {
        let (gp, vp) = parameters(ladder, room);
        let q = buffer.as_secs_f64();
        let mut best = (0, f64::NEG_INFINITY);
        for (m, &s) in ladder.iter().enumerate() {
            let score = (vp * (utility(ladder, m) + gp) - q) / s as f64;
            if score >= best.1 {
                best = (m, score);
            }
        }
        best.0
    }
}

impl Abr for Bola {
    fn on_download(&mut self, bytes: u64, download: Dur) {
        self.throughput.sample(bytes, download);
    }

    fn choose(&mut self, input: &AbrInput<'_>) -> usize {
        let ladder = input.ladder;
        let by_throughput = highest_at_most(ladder, self.throughput.safe());
        // dash.js BOLA_STATE_STARTUP -> STEADY once bufferLevel >= the segment duration.
        if self.state == State::Startup && input.buffer >= input.segment {
            self.state = State::Steady;
        }
        match self.state {
            // BOLA_STATE_STARTUP: quality = getQualityForBitrate(safeThroughput).
            State::Startup => by_throughput,
            State::Steady => {
                let room = input.buffer_target.saturating_sub(input.segment);
                let q = Bola::by_buffer(ladder, room, input.buffer);
                let last = input.last.unwrap_or(0);
                // BOLA-O (dash.js): "only intervene if we are trying to *increase*
                // quality to an *unsustainable* level".
                if q > last && q > by_throughput {
                    by_throughput.max(last)
                } else {
                    q
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video_stream::APPLE_HLS_LADDER;

    fn input(buffer_ms: u64, last: Option<usize>) -> AbrInput<'static> {
        AbrInput {
            ladder: &APPLE_HLS_LADDER,
            buffer: Dur::from_millis(buffer_ms),
            last,
            segment: Dur::from_secs(6),
            buffer_target: Dur::from_secs(30),
        }
    }

    #[test]
    fn v_and_gamma_from_the_buffer_target() {
        // Decisions see at most 30 - 6 = 24 s. u_max = ln(7800/145) + 1 = 4.985145;
        // gp = 3.985145 / (24/10 - 1) = 2.846532; Vp = 10 / gp = 3.513046.
        let (gp, vp) = parameters(&APPLE_HLS_LADDER, Dur::from_secs(24));
        assert!((gp - 2.846532).abs() < 1e-6, "{gp}");
        assert!((vp - 3.513046).abs() < 1e-6, "{vp}");
        // The buffer where rung m starts to beat m - 1,
        // Vp ((u_{m-1} S_m - u_m S_{m-1}) / (S_m - S_{m-1}) + gp):
        // 11.38 14.32 16.35 18.06 19.88 21.31 22.55 23.52 s.
        let at = |ms| Bola::by_buffer(&APPLE_HLS_LADDER, Dur::from_secs(24), Dur::from_millis(ms));
        assert_eq!(at(10_000), 0);
        assert_eq!(at(11_300), 0);
        assert_eq!(at(11_400), 1);
        assert_eq!(at(19_800), 4);
        assert_eq!(at(19_900), 5);
        assert_eq!(at(23_500), 7);
        assert_eq!(at(23_600), 8);
    }

    #[test]
    fn startup_by_throughput_then_bola_with_bola_o() {
        let mut r = Bola::new();
        // STARTUP, no download: dash.js's 1000 kbit/s initial bitrate -> 730 (rung 2).
        assert_eq!(r.choose(&input(0, None)), 2);
        // 547,500 B in 1 s: 4.38 Mbit/s, x 0.9 = 3.942 -> throughput rung 5 (3000).
        r.on_download(547_500, Dur::from_secs(1));
        // 6 s buffered (one segment): STEADY. At Q = 6 s every score favours the
        // lowest rung; BOLA-O only limits increases -> rung 0.
        assert_eq!(r.choose(&input(6_000, Some(2))), 0);
        assert_eq!(r.state, State::Steady);
        // Q = 18 s: scores (x 1e6) -30.94 -3.41 1.63 2.39 2.37 2.05 1.68 1.43 1.22
        // -> 1100 (rung 3): up from 0 but not past the throughput's rung 5.
        assert_eq!(r.choose(&input(18_000, Some(0))), 3);
        // Q = 24 s: BOLA says 7800 (rung 8), above the last (3) and above
        // what the throughput sustains (5): BOLA-O -> max(5, 3) = 5.
        assert_eq!(r.choose(&input(24_000, Some(3))), 5);
        // Q = 20 s: BOLA says 3000 (rung 5): kept.
        assert_eq!(r.choose(&input(20_000, Some(5))), 5);
        // A stall (Q = 0): the lowest rung; BOLA stays in STEADY.
        assert_eq!(r.choose(&input(0, Some(5))), 0);
    }
}
