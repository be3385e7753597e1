//! l4slab-emu: the real-time emulator.
//!
//! A client and a server network namespace, each with a TUN device, joined
//! only through a user-space forwarder that runs the *same* bottleneck
//! objects as the simulator ([`l4slab_scenario::build::link`]: qdisc, rate
//! model, loss model, ECN path rewrite, delay) against the wall clock. Real
//! applications and kernel TCP run in the namespaces.
//!
//! * [`packet`]: IPv4/IPv6 parsing, the ECN field, checksums, GSO splitting (pure).
//! * [`coalesce`]: consecutive segments released together are written as one GSO packet.
//! * [`sys`]: the Linux calls it makes (TUN, setns, epoll, signalfd,
//!   scheduling, sockets), all of them l4slab-sys's, gathered under one name.
//! * [`netns`]: creating and always removing the topology (state files, reaper).
//! * [`pktlog`]: the per-packet trace (`packets.parquet`) from real TCP headers.
//! * [`forwarder`]: the real-time loop and its measurements (timing report).
//! * [`access`]: which of the hosts' access links a packet passes (by flow).
//! * [`shell`]: `l4slab emu -- COMMAND`.
//! * [`run`]: `l4slab run SCENARIO --backend emu` (kernel TCP flows, same results).
//! * [`apps`]: the kernel TCP endpoints of a `run` and their thread.
//! * [`probe`]: small measurement tools (ping, TCP sender with TCP_INFO).
//! * [`ecncheck`]: ECN path validation (passes, bleaches, re-marks, drops ECT).
//! * [`plan`]: what one emulator process is asked to do (JSON from the Python commands).
//! * [`cli`]: the process's entry (`l4slab-emu PLAN`, `python -m l4slab._emu PLAN`).
//!
//! The emulator runs on the wall clock and does OS I/O, like
//! l4slab-udp-driver, but makes no system call itself: every one, and every
//! `unsafe` block, is in l4slab-sys (the OS boundary; the workspace denies
//! `unsafe_code` here). Its clock is l4slab-sys's `CLOCK_MONOTONIC`
//! [`sys::Clock`], never `Instant::now` (clippy's `disallowed-methods`).

pub mod access;
pub mod apps;
pub mod capture;
pub mod cli;
pub mod coalesce;
pub mod dgram;
pub mod ecncheck;
pub mod forwarder;
pub mod hosts;
pub mod netns;
pub mod packet;
pub mod pktlog;
pub mod plan;
pub mod probe;
pub mod run;
pub mod shell;
pub mod stats;
pub mod sys;

use std::io;

/// Everything that can stop an emulation.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error(
        "l4slab emu needs root: it creates network namespaces and TUN devices. \
         Run it as root (e.g. with sudo)."
    )]
    NotRoot,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("{0}")]
    Scenario(#[from] l4slab_scenario::ScenarioError),
    #[error("{0}")]
    Usage(String),
    /// A plan this emulator cannot read ([`plan::Plan::from_json`]): the
    /// Python side that wrote it and this emulator disagree (another
    /// version?), or a value is out of range.
    #[error("bad emulator plan: {0}")]
    Plan(String),
    #[error("{0}")]
    Unsupported(String),
    #[error(
        "network namespace {0} already exists but was not created by this run; \
         if it is left over from an old run, remove it with `ip netns del {0}`"
    )]
    NamespaceExists(String),
    #[error("interrupted by signal {0}; nothing was written")]
    Interrupted(i32),
    #[error(transparent)]
    Capture(#[from] l4slab_pcap::CaptureError),
    /// Threads that existed before the emulator blocked its signals would
    /// take SIGCHLD, SIGTERM or SIGINT away from its signalfd (a signal goes
    /// to any thread that does not block it): it would never see COMMAND exit
    /// and could die without tearing down.
    #[error(
        "the emulator must be the only thread of its process, but {0} threads \
         were already running (something imported before it started threads, \
         e.g. pyarrow); run it as `python -m l4slab._emu` or `l4slab-emu`"
    )]
    NotAlone(usize),
}

impl EmuError {
    pub fn io(what: &str, source: io::Error) -> Self {
        EmuError::Io {
            what: what.to_string(),
            source,
        }
    }
}
