//! l4slab-wifi: the MAC of a Wi-Fi cell, sans-IO.
//!
//! * [`cell`]: one AP and its stations sharing airtime with EDCA, A-MPDU
//!   aggregation with Block Ack, per-MPDU loss from each station's signal,
//!   retries, scanning and multi-link operation (docs/models/wifi.md).
//! * [`phy`]: the 802.11a/n/ac/ax/be rates, PPDU durations and PER by SNR;
//!   [`edca`]: the access categories' parameters and backoff;
//!   [`config`]: the cell's and stations' configuration; [`window`]: the Block
//!   Ack window; [`stats`]: the cell's counters and summary;
//!   [`l4s_aggregate`]: an L4S AP's airtime bound on a station's A-MPDUs.
//! * [`bianchi`]: Bianchi's saturation model, the reference the cell is
//!   validated against.
//!
//! The cell owns no queue and reads no clock: the station queues live in the
//! bottleneck runtime (`l4slab-bottleneck`), which clocks the cell in both
//! backends.

pub mod bianchi;
pub mod cell;
pub mod config;
pub mod edca;
pub mod l4s_aggregate;
pub mod phy;
pub mod stats;
pub mod window;
