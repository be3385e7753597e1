//! The player of `video_stream`, apart from any transport: the buffer,
//! playback draining it in simulated time, stalls, when to fetch the next
//! segment and at which rung (the ABR rule), and what a viewer would
//! measure. [`super::VideoStream`] (TCP) and [`super::VideoStreams`] (QUIC)
//! carry its requests and tell it when each segment arrived.
//!
//! Rules (docs/apps.md#video_stream):
//! * one segment in flight at a time, fetched when the buffer holds at most
//!   `buffer_target − segment` (so it stays within the target) or while
//!   not playing: the on/off pattern of a player at its target;
//! * playback starts once `startup` is buffered (or the whole video is),
//!   and drains the buffer at 1 s per s; an empty buffer before the last
//!   segment played is a stall (rebuffering) until `startup` is back.

use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Time};
use serde_json::{json, Value};

use crate::abr::{Abr, AbrInput};

/// What the player needs to know of the video and its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerConfig {
    /// Bitrates in bit/s, lowest first.
    pub ladder: Vec<u64>,
    pub segment: Dur,
    pub buffer_target: Dur,
    pub startup: Dur,
    /// Segments in the video.
    pub segments: u64,
}

/// Playback's state (one place changes it: [`Playback::advanced`] and
/// [`Player::segment_done`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting for `startup` to be buffered the first time.
    Startup,
    Playing,
    /// The buffer ran empty at `since`.
    Stalled {
        since: Time,
    },
    /// The last segment played out.
    Ended,
}

/// Playback as of `at`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Playback {
    state: State,
    buffer: Dur,
    at: Time,
    played: Dur,
    stalls: u64,
    stalled: Dur,
}

impl Playback {
    /// Playback at `now` (>= `at`); `all_in`: every segment has arrived, so
    /// an empty buffer is the end, not a stall.
    fn advanced(mut self, now: Time, all_in: bool) -> Self {
        let elapsed = now.saturating_since(self.at);
        self.at = now;
        if self.state != State::Playing {
            return self;
        }
        if elapsed <= self.buffer {
            self.buffer = self.buffer.saturating_sub(elapsed);
            self.played += elapsed;
            return self;
        }
        // The buffer ran out at at + buffer.
        let empty = now - (elapsed.saturating_sub(self.buffer));
        self.played += self.buffer;
        self.buffer = Dur::ZERO;
        self.state = if all_in {
            State::Ended
        } else {
            self.stalls += 1;
            State::Stalled { since: empty }
        };
        self
    }

    /// Stall time so far, counting one still going on at `now`.
    fn stalled_until(&self, now: Time) -> Dur {
        match self.state {
            State::Stalled { since } => self.stalled + now.saturating_since(since),
            _ => self.stalled,
        }
    }
}

/// One fetched (or fetching) segment.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    rung: usize,
    bytes: u64,
    requested: Time,
    buffer_at_request: Dur,
    done: Option<Time>,
}

/// The player (see the module documentation).
#[derive(Debug)]
pub struct Player {
    cfg: PlayerConfig,
    abr: Box<dyn Abr>,
    /// When the viewer pressed play (the flow's start).
    start: Time,
    pb: Playback,
    startup_delay: Option<Dur>,
    segments: Vec<Segment>,
}

impl Player {
    pub fn new(cfg: PlayerConfig, abr: Box<dyn Abr>, start: Time) -> Self {
        assert!(!cfg.ladder.is_empty() && cfg.ladder.windows(2).all(|w| w[0] < w[1]));
        assert!(cfg.segment > Dur::ZERO && cfg.buffer_target >= cfg.segment);
        assert!(cfg.segments > 0);
        Player {
            abr,
            start,
            pb: Playback {
                state: State::Startup,
                buffer: Dur::ZERO,
                at: start,
                played: Dur::ZERO,
                stalls: 0,
                stalled: Dur::ZERO,
            },
            startup_delay: None,
            segments: Vec::with_capacity(cfg.segments.min(4096) as usize),
            cfg,
        }
    }

    fn all_in(&self) -> bool {
        self.segments.len() as u64 == self.cfg.segments && self.fetching().is_none()
    }

    fn fetching(&self) -> Option<&Segment> {
        self.segments.last().filter(|s| s.done.is_none())
    }

    fn advance(&mut self, now: Time) {
        self.pb = self.pb.advanced(now, self.all_in());
    }

    /// The playback state at `now`.
    pub fn state(&self, now: Time) -> State {
        self.pb.advanced(now, self.all_in()).state
    }

    /// Media buffered at `now`.
    pub fn buffer(&self, now: Time) -> Dur {
        self.pb.advanced(now, self.all_in()).buffer
    }

    /// The bitrate of the latest segment asked for.
    pub fn bitrate(&self) -> Option<u64> {
        self.segments.last().map(|s| self.cfg.ladder[s.rung])
    }

    /// The next segment's bytes, if the player asks for one at `now`: none
    /// in flight, segments left, and the buffer at most `target − segment`
    /// or playback not running.
    pub fn next_request(&mut self, now: Time) -> Option<u64> {
        self.advance(now);
        if self.fetching().is_some() || self.segments.len() as u64 >= self.cfg.segments {
            return None;
        }
        let room = self.cfg.buffer_target - self.cfg.segment;
        if self.pb.state == State::Playing && self.pb.buffer > room {
            return None;
        }
        let rung = self.abr.choose(&AbrInput {
            ladder: &self.cfg.ladder,
            buffer: self.pb.buffer,
            last: self.segments.last().map(|s| s.rung),
            segment: self.cfg.segment,
            buffer_target: self.cfg.buffer_target,
        });
        // A constant-bitrate segment: bitrate x duration.
        let bits = u128::from(self.cfg.ladder[rung]) * u128::from(self.cfg.segment.as_nanos());
        let bytes = u64::try_from(bits / 8_000_000_000)
            .expect("a segment fits u64")
            .max(1);
        self.segments.push(Segment {
            rung,
            bytes,
            requested: now,
            buffer_at_request: self.pb.buffer,
            done: None,
        });
        Some(bytes)
    }

    /// When the player wants to be asked again ([`Player::next_request`]):
    /// when the buffer drains to `target − segment`, if it is playing above
    /// that with nothing in flight.
    pub fn wake(&self) -> Option<Time> {
        let room = self.cfg.buffer_target - self.cfg.segment;
        let idle = self.fetching().is_none() && (self.segments.len() as u64) < self.cfg.segments;
        (idle && self.pb.state == State::Playing && self.pb.buffer > room)
            .then(|| self.pb.at + (self.pb.buffer - room))
    }

    /// The segment in flight arrived whole at `now`.
    pub fn segment_done(&mut self, now: Time) {
        self.advance(now);
        let seg = self.segments.last_mut().expect("a segment was requested");
        assert!(seg.done.is_none(), "video: a segment arrived twice");
        seg.done = Some(now);
        let (bytes, took) = (seg.bytes, now.saturating_since(seg.requested));
        self.abr.on_download(bytes, took);
        self.pb.buffer += self.cfg.segment;
        let ready = self.pb.buffer >= self.cfg.startup || self.all_in();
        match self.pb.state {
            State::Startup if ready => {
                self.startup_delay = Some(now.saturating_since(self.start));
                self.pb.state = State::Playing;
            }
            State::Stalled { since } if ready => {
                self.pb.stalled += now.saturating_since(since);
                self.pb.state = State::Playing;
            }
            _ => {}
        }
    }

    /// Segments arrived so far.
    pub fn segments_done(&self) -> usize {
        self.segments.iter().filter(|s| s.done.is_some()).count()
    }

    /// `app_metrics` at `end` (docs/apps.md#video_stream).
    pub fn report(&self, end: Time) -> Value {
        let pb = self.pb.advanced(end, self.all_in());
        let secs = |d: Dur| round6(d.as_secs_f64());
        let stalled = pb.stalled_until(end);
        let watched = pb.played + stalled;
        let done: Vec<&Segment> = self.segments.iter().filter(|s| s.done.is_some()).collect();
        let mut fetch = DurStats::new(1_000, 1_000_000_000);
        for s in &done {
            fetch.record(s.done.expect("done").saturating_since(s.requested));
        }
        let switches = done.windows(2).filter(|w| w[0].rung != w[1].rung).count();
        let (mean, mean_rung) = if done.is_empty() {
            (None, None)
        } else {
            let n = done.len() as f64;
            let sum: u64 = done.iter().map(|s| self.cfg.ladder[s.rung]).sum();
            let rungs: usize = done.iter().map(|s| s.rung).sum();
            (
                Some((sum as f64 / n).round()),
                Some(round6(rungs as f64 / n)),
            )
        };
        let mut fetch_ms = fetch.summary_ms();
        if let Some(p95) = fetch.quantile_ms(0.95) {
            fetch_ms["p95"] = p95.into();
        }
        let per_segment: Vec<Value> = done
            .iter()
            .map(|s| {
                let took = s.done.expect("done").saturating_since(s.requested);
                json!({
                    "rung": s.rung,
                    "bitrate_bps": self.cfg.ladder[s.rung],
                    "bytes": s.bytes,
                    "requested_s": secs(s.requested.saturating_since(self.start)),
                    "fetch_s": secs(took),
                    "buffer_s": secs(s.buffer_at_request),
                })
            })
            .collect();
        json!({
            "startup_delay_s": self.startup_delay.map(secs),
            "rebuffer_events": pb.stalls,
            "rebuffer_s": secs(stalled),
            "rebuffer_ratio": if watched > Dur::ZERO {
                round6(stalled.as_secs_f64() / watched.as_secs_f64())
            } else {
                0.0
            },
            "played_s": secs(pb.played),
            "state": match pb.state {
                State::Startup => "startup",
                State::Playing => "playing",
                State::Stalled { .. } => "stalled",
                State::Ended => "ended",
            },
            "buffer_s": secs(pb.buffer),
            "segments_requested": self.segments.len(),
            "segments_fetched": done.len(),
            "bitrate_switches": switches,
            "mean_bitrate_bps": mean,
            "mean_rung": mean_rung,
            "segment_fetch_ms": fetch_ms,
            "segments": per_segment,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abr::AbrKind;

    fn s(x: u64) -> Time {
        Time::ZERO + Dur::from_secs(x)
    }

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    /// A 1-rung ladder (1 Mbit/s: 750,000 B per 6 s segment), target 18 s,
    /// startup 6 s (one segment), `n` segments.
    fn player(n: u64) -> Player {
        Player::new(
            PlayerConfig {
                ladder: vec![1_000_000],
                segment: Dur::from_secs(6),
                buffer_target: Dur::from_secs(18),
                startup: Dur::from_secs(6),
                segments: n,
            },
            AbrKind::Throughput.build(),
            s(0),
        )
    }

    #[test]
    fn it_fetches_until_the_target_then_one_segment_per_segment_played() {
        let mut p = player(100);
        assert_eq!(p.next_request(s(0)), Some(750_000));
        // One in flight: no second request.
        assert_eq!(p.next_request(s(0)), None);
        p.segment_done(s(1));
        // 6 s buffered = startup: playing from 1 s.
        assert_eq!(p.state(s(1)), State::Playing);
        assert_eq!(p.next_request(s(1)), Some(750_000));
        p.segment_done(s(2)); // 6 - 1 + 6 = 11 s
        assert_eq!(p.next_request(s(2)), Some(750_000));
        p.segment_done(s(3)); // 10 + 6 = 16 s, above 18 - 6 = 12: off
        assert_eq!(p.buffer(s(3)), Dur::from_secs(16));
        assert_eq!(p.next_request(s(3)), None);
        // On again when it has drained to 12 s: at 7 s.
        assert_eq!(p.wake(), Some(s(7)));
        assert_eq!(p.next_request(ms(6_999)), None);
        assert_eq!(p.next_request(s(7)), Some(750_000));
        p.segment_done(s(8)); // 11 + 6 = 17 s
        assert_eq!(p.wake(), Some(s(13)));
        let r = p.report(s(8));
        assert_eq!(r["startup_delay_s"], 1.0);
        assert_eq!(r["rebuffer_events"], 0);
        assert_eq!(r["segments_fetched"], 4);
        assert_eq!(r["played_s"], 7.0);
        assert_eq!(r["segment_fetch_ms"]["max"], 1000.0);
        // Four fetches of 1 s: p95 is p50's histogram bucket.
        assert_eq!(r["segment_fetch_ms"]["p95"], r["segment_fetch_ms"]["p50"]);
        assert_eq!(r["mean_rung"], 0.0);
    }

    #[test]
    fn the_mean_rung_and_bitrate_are_over_the_fetched_segments() {
        // dash.js's throughput rule: 1000 kbit/s before the first download
        // (rung 0 of 500 kbit/s, 2 Mbit/s), then 0.9 x the measured rate.
        let mut p = Player::new(
            PlayerConfig {
                ladder: vec![500_000, 2_000_000],
                segment: Dur::from_secs(6),
                buffer_target: Dur::from_secs(30),
                startup: Dur::from_secs(6),
                segments: 100,
            },
            AbrKind::Throughput.build(),
            s(0),
        );
        assert_eq!(p.next_request(s(0)), Some(375_000));
        p.segment_done(ms(100)); // 30 Mbit/s
        assert_eq!(p.next_request(ms(100)), Some(1_500_000));
        p.segment_done(ms(500));
        assert_eq!(p.next_request(ms(500)), Some(1_500_000));
        let r = p.report(ms(600));
        // Two fetched (rungs 0 and 1), the third still in flight.
        assert_eq!(r["mean_rung"], 0.5);
        assert_eq!(r["mean_bitrate_bps"], 1_250_000.0);
        assert_eq!(r["bitrate_switches"], 1);
        assert_eq!(r["segment_fetch_ms"]["samples"], 2);
        let p95 = r["segment_fetch_ms"]["p95"].as_f64().unwrap();
        assert!((p95 - 400.0).abs() <= 0.5, "{p95}");
    }

    #[test]
    fn an_empty_buffer_stalls_until_startup_is_back_and_is_counted() {
        let mut p = player(100);
        p.next_request(s(0));
        p.segment_done(s(2)); // playing from 2 s with 6 s
        assert_eq!(p.next_request(s(2)), Some(750_000));
        // The next segment takes 10 s: the buffer runs out at 8 s.
        assert_eq!(p.state(s(8)), State::Playing);
        assert_eq!(p.state(ms(8_001)), State::Stalled { since: s(8) });
        let r = p.report(s(10));
        assert_eq!(r["rebuffer_events"], 1);
        assert_eq!(r["rebuffer_s"], 2.0);
        assert_eq!(r["state"], "stalled");
        p.segment_done(s(12));
        assert_eq!(p.state(s(12)), State::Playing);
        let r = p.report(s(12));
        // 6 s played, 4 s stalled (8 s to 12 s): ratio 4 / 10.
        assert_eq!(r["rebuffer_s"], 4.0);
        assert_eq!(r["played_s"], 6.0);
        assert_eq!(r["rebuffer_ratio"], 0.4);
        assert_eq!(r["startup_delay_s"], 2.0);
    }

    #[test]
    fn the_end_of_the_video_is_not_a_stall() {
        let mut p = player(2);
        p.next_request(s(0));
        p.segment_done(s(1));
        assert_eq!(p.next_request(s(1)), Some(750_000));
        p.segment_done(s(2));
        assert_eq!(p.next_request(s(2)), None);
        assert_eq!(p.wake(), None);
        // 11 s left at 2 s: the video ends at 13 s.
        assert_eq!(p.state(s(13)), State::Playing);
        assert_eq!(p.state(s(14)), State::Ended);
        let r = p.report(s(20));
        assert_eq!(r["rebuffer_events"], 0);
        assert_eq!(r["played_s"], 12.0);
        assert_eq!(r["state"], "ended");
    }
}
