//! Scenario files: schema, unit parsing, validation with key paths, defaults.
//!
//! ```text
//! text --toml--> value tree --overrides--> raw structs --resolve--> model::Scenario
//! ```
//!
//! * [`parse_with`] / [`parse_file`]: the entry points ([`parse`]).
//! * [`model`]: the resolved scenario the backends consume (the contract).
//! * [`units`]: pure parsers for `"20Mbit"`, `"25ms"`, `"10MB"`, `"100pkt"`, `"1%"`.
//! * [`build`]: resolved parts -> the qdisc, loss model and link both backends run.
//! * [`cost`]: what a run will cost (flows, series rows, trace rows), and the limits.
//! * [`cc`]: `cc = "prague"` or `cc = { kind = "prague", ... }` -> [`CcSpec`].
//! * [`quic`]: `[flows.transport]` of a `protocol = "quic"` flow: which keys
//!   QUIC applies, its defaults, refusals, the connection's config.
//! * [`wifi`]: `[wifi]` -> the Wi-Fi cell the client hosts reach the bottleneck through.
//! * [`household`]: `[[households]]`, preset mixes expanded into flows.
//! * [`sweep`]: `[sweep]`, the grid `l4slab sweep` runs; checked, not resolved.
//! * [`ScenarioError`]: every error names its key path and, where it helps,
//!   a valid example.
//!
//! The file format is documented in `docs/scenarios.md`.
mod access;
mod app;
pub mod build;
pub mod cc;
pub mod cost;
pub mod downloads;
pub mod ecn;
pub mod error;
pub mod flow_app;
mod flows;
pub mod household;
mod link;
pub mod model;
mod overrides;
mod param;
pub mod parse;
pub mod paths;
pub mod qdisc;
pub mod quic;
mod raw;
mod resolve;
pub mod sweep;
mod trace;
pub mod units;
mod values;
pub mod wifi;

pub use error::{Problem, ScenarioError};
pub use l4slab_app::APP_NAMES as APPS;
pub use model::*;
pub use parse::{parse_file, parse_with, ParseOptions};
pub use trace::{MAX_TRACE_BYTES, SOURCE_TRACE_DIR};
