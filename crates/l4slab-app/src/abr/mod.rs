//! Adaptive-bitrate (ABR) rules: which rung of a bitrate ladder a video
//! player fetches its next segment at, from the throughput its past
//! segments were downloaded at and the media it has buffered. One rule per
//! file, each with its source at the lines that implement it:
//!
//! * [`throughput`]: dash.js's `ThroughputRule` over its EWMA
//!   `ThroughputHistory` (hls.js's default estimator is the same shape);
//! * [`bba`]: BBA-0, buffer-based (Huang et al., SIGCOMM 2014);
//! * [`bola`]: BOLA as dash.js's `BolaRule` (Spiteri et al., INFOCOM 2016).
//!
//! The player ([`crate::video_stream`]) asks its rule once per segment,
//! when it is about to request it, and tells it how each download went.

use core::fmt;

use l4slab_core::Dur;

pub mod bba;
pub mod bola;
pub mod throughput;

/// What a rule sees when it chooses the next segment's rung.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AbrInput<'a> {
    /// The ladder's bitrates in bit/s, lowest first (strictly increasing).
    pub ladder: &'a [u64],
    /// Media buffered ahead of the playhead now.
    pub buffer: Dur,
    /// The previous segment's rung (`None` for the first segment).
    pub last: Option<usize>,
    /// Each segment's media duration.
    pub segment: Dur,
    /// The player's buffer target (it stops fetching above it).
    pub buffer_target: Dur,
}

/// An ABR rule (one per file of this module).
pub trait Abr: fmt::Debug + Send {
    /// A segment of `bytes` took `download` from its request to its last
    /// byte.
    fn on_download(&mut self, bytes: u64, download: Dur);
    /// The rung (an index into `input.ladder`) of the next segment.
    fn choose(&mut self, input: &AbrInput<'_>) -> usize;
}

/// The rules by scenario name (`app = { kind = "video_stream", abr = ... }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AbrKind {
    Throughput,
    Bba,
    Bola,
}

impl AbrKind {
    /// The scenario's names, in the docs' order.
    pub const NAMES: &'static [&'static str] = &["throughput", "bba", "bola"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "throughput" => Some(AbrKind::Throughput),
            "bba" => Some(AbrKind::Bba),
            "bola" => Some(AbrKind::Bola),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AbrKind::Throughput => "throughput",
            AbrKind::Bba => "bba",
            AbrKind::Bola => "bola",
        }
    }

    /// A fresh rule of this kind.
    pub fn build(self) -> Box<dyn Abr> {
        match self {
            AbrKind::Throughput => Box::new(throughput::ThroughputRule::new()),
            AbrKind::Bba => Box::new(bba::Bba::new()),
            AbrKind::Bola => Box::new(bola::Bola::new()),
        }
    }
}

/// The highest rung whose bitrate is at most `bps`; the lowest when none is
/// (dash.js `AbrController.getQualityForBitrate`, hls.js `findBestLevel`).
pub fn highest_at_most(ladder: &[u64], bps: f64) -> usize {
    ladder.iter().rposition(|&b| b as f64 <= bps).unwrap_or(0)
}
