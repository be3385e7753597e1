//! l4slab-udp-driver: runs l4slab's sans-IO transports (a QUIC-style connection,
//! RTP media) over real UDP sockets in real time — what `l4slab send` and
//! `l4slab serve` (`l4slab-sendserve`) run on, between real machines, with
//! congestion controls the kernel does not offer (TCP Prague over UDP,
//! ECT(1) media).
//!
//! * [`driver`]: the [`DatagramEndpoint`] trait and the [`Driver`] event
//!   loop on `CLOCK_MONOTONIC` ([`Clock`]), with its [`DriverStats`].
//! * Its socket, [`UdpSocket`] (non-blocking, IPv4/IPv6, with the IP ECN
//!   field set per datagram on send and read per datagram on receive), its
//!   clock and its timer waits ([`l4slab_sys::Waiter`]) are l4slab-sys's,
//!   the OS boundary, re-exported here; this crate makes no system call
//!   of its own.
//!
//! **Timing** (Linux 6.18 VM, 2 vCPUs, normal scheduling; 5000 wake-ups
//! 1 ms apart): a bare `ppoll` timeout fires 77 µs late at p50 with a
//! normal thread's default 50 µs timer slack and 29 µs late with 1 ns
//! slack; the driver therefore sets 1 ns slack for the run and, at
//! real-time priority only, sleeps until [`DriverConfig::spin`] (50 µs)
//! before each wake-up and polls the socket the rest of the way: 0.15 µs
//! late at p50, 20-100 µs at p99 and a few ms at worst (the VM's vCPU not
//! running), for about 2 % more CPU at one wake-up per ms. A normal thread
//! does not spin (on a busy machine the spin costs it the CPU time it needs
//! when it is due: `l4slab_sys::realtime`); a timeout it notices late is
//! reported to the endpoint (`handle_late_timeout`) so that its pacer
//! forfeits the time lost rather than sending a burst. See
//! `tests/driver.rs` for the test's tolerance.
//!
//! **Clock.** Like `l4slab-emu`, and unlike the sans-IO crates (DESIGN.md
//! §4.4), this crate runs on the wall clock: `CLOCK_MONOTONIC` read by
//! l4slab-sys's [`Clock`], never `Instant::now`.
//!
//! Linux only: `IP_RECVTOS` on IPv6 sockets, the `IP_TOS` send control
//! message, `MSG_TRUNC` lengths, `PR_SET_TIMERSLACK`, `ppoll`.
pub mod driver;

pub use driver::{DatagramEndpoint, Driver, DriverConfig, DriverError, DriverStats, RunOutcome};
pub use l4slab_sys::{Clock, EcnSendMode, Family, Lateness, UdpError, UdpSocket};
