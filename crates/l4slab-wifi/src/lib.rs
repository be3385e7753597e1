pub mod bianchi;
pub mod cell;
pub mod config;
pub mod edca;
pub mod phy;
pub mod stats;
pub mod window;
