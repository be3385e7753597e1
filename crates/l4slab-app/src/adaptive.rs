//! The config of the rate-adapted frame apps, `cloud_gaming` and
//! `video_call`: the same six keys (`fps`, `start_bitrate`, `min_bitrate`,
//! `max_bitrate`, `late_threshold`, `stall_threshold`), which each kind
//! declares with its own defaults (the first six of `cloud_gaming::PARAMS`
//! and of `video_call::PARAMS`), and what a config builds: one direction's
//! [`AdaptiveFrames`] over TCP, or the [`RtpConfig`] of its RTP streams.
//!
//! [`AdaptiveConfig<K>`] is one type per kind (`K` = [`CLOUD_GAMING`] or
//! [`VIDEO_CALL`]) so that each kind has its own [`AppKind`](crate::AppKind)
//! and defaults, with one definition of the fields and their reading.

use serde::Serialize;

use l4slab_core::param::{Configure, FromParam, Param, ParamValue};
use l4slab_core::{Dur, Rate};

use crate::frames::FrameStream;
use crate::rate_control::{AdaptiveFrames, RateControlConfig};
use crate::rtp::RtpConfig;

/// `K` of `cloud_gaming`'s config.
pub const CLOUD_GAMING: usize = 0;
/// `K` of `video_call`'s config.
pub const VIDEO_CALL: usize = 1;

/// The declarations of each kind, by `K`.
const PARAMS_OF: [&[Param]; 2] = [crate::cloud_gaming::PARAMS, crate::video_call::PARAMS];

/// The keys, in the order each kind declares them first.
const KEYS: [&str; 6] = [
    "fps",
    "start_bitrate",
    "min_bitrate",
    "max_bitrate",
    "late_threshold",
    "stall_threshold",
];

/// A rate-adapted frame app's parameters (scenario `app = { kind =
/// "cloud_gaming" | "video_call", ... }`), the same for both directions of
/// a call; the defaults are the kind's declarations ([`Self::PARAMS`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AdaptiveConfig<const K: usize> {
    /// Frames per second (each way).
    pub fps: u32,
    /// The encoder's target at the start, within `min_bitrate..=max_bitrate`.
    pub start_bitrate: Rate,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    /// A frame displayed later than this after capture is late.
    pub late_threshold: Dur,
    /// A gap between displayed frames longer than this is a stall.
    pub stall_threshold: Dur,
}

impl<const K: usize> AdaptiveConfig<K> {
    /// The kind's declarations: the six keys first, then the transport's.
    pub const PARAMS: &'static [Param] = PARAMS_OF[K];

    /// The declaration of `key` (one of the six).
    fn param(key: &str) -> &'static Param {
        let i = KEYS
            .iter()
            .position(|k| *k == key)
            .expect("one of the six keys");
        let p = &Self::PARAMS[i];
        assert_eq!(p.name, key, "the six keys are declared first, in order");
        p
    }

    /// One direction's frames over TCP: the GCC-style AIMD between the
    /// bitrate bounds, a frame clock at `fps`, the stall and late counts.
    pub fn frames(&self) -> AdaptiveFrames {
        AdaptiveFrames::new(
            RateControlConfig::gcc(self.start_bitrate, self.min_bitrate, self.max_bitrate),
            self.fps,
            FrameStream::new(self.stall_threshold).with_late_threshold(self.late_threshold),
        )
    }

    /// The RTP streams' config (its transport set by the caller).
    pub fn rtp(&self) -> RtpConfig {
        RtpConfig::new(
            self.fps,
            self.start_bitrate,
            self.min_bitrate,
            self.max_bitrate,
            self.stall_threshold,
            Some(self.late_threshold),
        )
    }
}

impl<const K: usize> Default for AdaptiveConfig<K> {
    fn default() -> Self {
        let d = |key: &str| Self::param(key).default;
        AdaptiveConfig {
            fps: FromParam::from_param(d("fps")),
            start_bitrate: d("start_bitrate").rate(),
            min_bitrate: d("min_bitrate").rate(),
            max_bitrate: d("max_bitrate").rate(),
            late_threshold: d("late_threshold").dur(),
            stall_threshold: d("stall_threshold").dur(),
        }
    }
}

impl<const K: usize> Configure for AdaptiveConfig<K> {
    fn set(&mut self, name: &str, v: ParamValue) -> bool {
        match KEYS.iter().position(|k| *k == name) {
            Some(0) => self.fps = FromParam::from_param(v),
            Some(1) => self.start_bitrate = v.rate(),
            Some(2) => self.min_bitrate = v.rate(),
            Some(3) => self.max_bitrate = v.rate(),
            Some(4) => self.late_threshold = v.dur(),
            Some(5) => self.stall_threshold = v.dur(),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_its_own_defaults_and_every_key() {
        let game = AdaptiveConfig::<CLOUD_GAMING>::default();
        let call = AdaptiveConfig::<VIDEO_CALL>::default();
        assert_eq!((game.fps, call.fps), (60, 30));
        assert_eq!(call.late_threshold, Dur::from_millis(150));
        let mut c = call;
        for (i, key) in KEYS.iter().enumerate() {
            let p = AdaptiveConfig::<VIDEO_CALL>::param(key);
            let v = match p.default {
                ParamValue::Int(_) => ParamValue::Int(7),
                ParamValue::Rate(_) => ParamValue::Rate(Rate::from_kbps(100 + i as u64)),
                _ => ParamValue::Dur(Dur::from_millis(i as u64)),
            };
            assert!(c.set(key, v), "{key}");
        }
        assert_eq!(
            (c.fps, c.start_bitrate, c.max_bitrate, c.stall_threshold),
            (
                7,
                Rate::from_kbps(101),
                Rate::from_kbps(103),
                Dur::from_millis(5)
            )
        );
        assert!(!c.set("transport", ParamValue::Choice("tcp")));
    }
}
