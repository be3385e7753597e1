//! Scenario files: schema, unit parsing, validation with key paths, defaults.
pub mod model;

pub use model::*;
