//! The request `l4slab send -R` makes of the server, and the sender's
//! connection settings either end uses.
//!
//! iperf3 sends its test's parameters (`-R`, the congestion control, ...)
//! on a control connection before the test (`iperf_api.c`,
//! `send_parameters`). l4slab has one connection per stream and no stream
//! content (only counts), so the client carries its request where its
//! other parameters go: in its ClientHello, after the transport parameters
//! ([`l4slab_quic::ConnectionConfig::app_request`], 24 bytes), and a server
//! that knows requests says in its Handshake flight that it took it
//! ([`l4slab_quic::Connection::app_request_accepted`]). An older server
//! ignores the bytes and says nothing: the client then stops at once with
//! an error ([`crate::client::Failure::RequestNotTaken`]) instead of
//! waiting for data that never comes. A server that knows requests but not
//! this one (a later version, a controller it does not have) closes the
//! connection with [`REFUSED`].
//!
//! Layout (version 1): `[0]` version; `[1]` flags (bit 0: reverse, the
//! server sends; bit 1: ECN off; bit 2: no ECN validation); `[2]` the
//! codepoint (0: the controller's, 1: ECT(0), 2: ECT(1)); `[3]` the app (0:
//! bulk, 1: file, 2: frames); `[4..12]` the controller's name (ASCII,
//! zero-padded); `[12..20]` the file's size, or a frame's bytes and the
//! frame interval in µs (two big-endian u32); `[20..24]` zero.

use l4slab_app::quic::QuicApp;
use l4slab_core::{Dur, Ecn};
use l4slab_quic::{ConnectionConfig, APP_REQUEST_LEN};

use crate::run::{real_clock_pacing_burst, REAL_CLOCK_PACING_GRANULARITY};

/// The request's layout version.
const VERSION: u8 = 1;
const FLAG_REVERSE: u8 = 1;
const FLAG_ECN_OFF: u8 = 2;
const FLAG_NO_ECN_VALIDATION: u8 = 4;
/// Bytes a controller's name may have.
const CC_LEN: usize = 8;

/// The application error code (RFC 9000 §20.2: the application's own) a
/// server closes with when it cannot do what the request asks.
pub const REFUSED: u64 = 0x4c34_0001;

/// What the data's sender runs: the controller, ECN, the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The server sends (`-R`); otherwise the client does (and sends no
    /// request).
    pub reverse: bool,
    pub cc: String,
    /// Send ECT at all (`--ecn off`: false).
    pub ecn: bool,
    /// `--ecn ect0|ect1`; `None`: the controller's.
    pub codepoint: Option<Ecn>,
    pub ecn_validation: bool,
    pub app: QuicApp,
}

/// Why a request cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("request version {0} (this server reads version {VERSION})")]
    Version(u8),
    #[error("unknown flags {0:#x}")]
    Flags(u8),
    #[error("unknown ECN codepoint {0}")]
    Codepoint(u8),
    #[error("unknown app {0}")]
    App(u8),
    #[error("congestion control {0:?} is not one this server has")]
    Cc(String),
    #[error("a file of 0 bytes, or a frame of 0 bytes or interval")]
    Empty,
}

impl Request {
    /// The request's bytes for the ClientHello.
    ///
    /// # Panics
    /// If the controller's name is longer than 8 bytes (none is).
    pub fn encode(&self) -> [u8; APP_REQUEST_LEN] {
        let mut b = [0u8; APP_REQUEST_LEN];
        b[0] = VERSION;
        let flag = |on: bool, f: u8| if on { f } else { 0 };
        b[1] = flag(self.reverse, FLAG_REVERSE)
            | flag(!self.ecn, FLAG_ECN_OFF)
            | flag(!self.ecn_validation, FLAG_NO_ECN_VALIDATION);
        b[2] = match self.codepoint {
            Some(Ecn::Ect0) => 1,
            Some(Ecn::Ect1) => 2,
            _ => 0,
        };
        let name = self.cc.as_bytes();
        assert!(name.len() <= CC_LEN, "controller name {:?}", self.cc);
        b[4..4 + name.len()].copy_from_slice(name);
        match self.app {
            QuicApp::Bulk => b[3] = 0,
            QuicApp::File { size } => {
                b[3] = 1;
                b[12..20].copy_from_slice(&size.to_be_bytes());
            }
            QuicApp::Frames {
                frame_bytes,
                interval,
            } => {
                b[3] = 2;
                let fb = u32::try_from(frame_bytes).unwrap_or(u32::MAX);
                let us = u32::try_from(interval.as_nanos() / 1000).unwrap_or(u32::MAX);
                b[12..16].copy_from_slice(&fb.to_be_bytes());
                b[16..20].copy_from_slice(&us.to_be_bytes());
            }
        }
        b
    }

    /// The request in `b`, checked.
    ///
    /// # Errors
    /// [`RequestError`] for a layout or a value this version does not know.
    pub fn decode(b: &[u8; APP_REQUEST_LEN]) -> Result<Self, RequestError> {
        if b[0] != VERSION {
            return Err(RequestError::Version(b[0]));
        }
        let flags = b[1];
        if flags & !(FLAG_REVERSE | FLAG_ECN_OFF | FLAG_NO_ECN_VALIDATION) != 0 {
            return Err(RequestError::Flags(flags));
        }
        let codepoint = match b[2] {
            0 => None,
            1 => Some(Ecn::Ect0),
            2 => Some(Ecn::Ect1),
            c => return Err(RequestError::Codepoint(c)),
        };
        let name = &b[4..4 + CC_LEN];
        let len = name.iter().position(|&c| c == 0).unwrap_or(CC_LEN);
        let cc = String::from_utf8_lossy(&name[..len]).into_owned();
        if !l4slab_cc::CC_NAMES.contains(&cc.as_str()) {
            return Err(RequestError::Cc(cc));
        }
        let u32_at = |i: usize| u64::from(u32::from_be_bytes(b[i..i + 4].try_into().unwrap()));
        let app = match b[3] {
            0 => QuicApp::Bulk,
            1 => QuicApp::File {
                size: u64::from_be_bytes(b[12..20].try_into().unwrap()),
            },
            2 => QuicApp::Frames {
                frame_bytes: u32_at(12),
                interval: Dur::from_micros(u32_at(16)),
            },
            a => return Err(RequestError::App(a)),
        };
        let empty = match app {
            QuicApp::Bulk => false,
            QuicApp::File { size } => size == 0,
            QuicApp::Frames {
                frame_bytes,
                interval,
            } => frame_bytes == 0 || interval.is_zero(),
        };
        if empty {
            return Err(RequestError::Empty);
        }
        Ok(Request {
            reverse: flags & FLAG_REVERSE != 0,
            cc,
            ecn: flags & FLAG_ECN_OFF == 0,
            codepoint,
            ecn_validation: flags & FLAG_NO_ECN_VALIDATION == 0,
            app,
        })
    }

    /// The data sender's connection settings (the client's, or with `-R`
    /// the server's session): the controller, ECN, and a real clock's pacing.
    pub fn sender_config(&self, seed: u64) -> ConnectionConfig {
        let base = ConnectionConfig::default();
        ConnectionConfig {
            cc: self.cc.clone(),
            ecn: self.ecn,
            ecn_validation: self.ecn_validation,
            ecn_codepoint: self.codepoint,
            seed,
            // A real clock: Linux's EDT spacing, not a burst per delayed ACK
            // (ConnectionConfig::pacing_burst; docs/send.md).
            pacing_burst: Some(real_clock_pacing_burst(base.max_datagram_size)),
            pacing_granularity: REAL_CLOCK_PACING_GRANULARITY,
            ..base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(app: QuicApp) -> Request {
        Request {
            reverse: true,
            cc: "prague".into(),
            ecn: true,
            codepoint: Some(Ecn::Ect0),
            ecn_validation: false,
            app,
        }
    }

    #[test]
    fn requests_round_trip_for_every_app_and_controller() {
        let apps = [
            QuicApp::Bulk,
            QuicApp::File { size: 20_000_000 },
            QuicApp::Frames {
                frame_bytes: 16_667,
                interval: Dur::from_micros(16_667),
            },
        ];
        for app in apps {
            for &cc in l4slab_cc::CC_NAMES {
                let r = Request {
                    cc: cc.into(),
                    ..req(app)
                };
                assert_eq!(Request::decode(&r.encode()), Ok(r));
            }
        }
        let off = Request {
            ecn: false,
            codepoint: None,
            ecn_validation: true,
            reverse: false,
            ..req(QuicApp::Bulk)
        };
        assert_eq!(Request::decode(&off.encode()), Ok(off));
    }

    #[test]
    fn what_this_version_does_not_know_is_refused_by_name() {
        let good = req(QuicApp::Bulk).encode();
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            Request::decode(&b)
        };
        assert_eq!(with(0, 2), Err(RequestError::Version(2)));
        assert_eq!(with(1, 0x80), Err(RequestError::Flags(0x80)));
        assert_eq!(with(2, 3), Err(RequestError::Codepoint(3)));
        assert_eq!(with(3, 9), Err(RequestError::App(9)));
        assert_eq!(with(4, b'x'), Err(RequestError::Cc("xrague".into())));
        assert_eq!(
            Request::decode(&req(QuicApp::File { size: 0 }).encode()),
            Err(RequestError::Empty)
        );
        assert_eq!(
            Request::decode(&[0; APP_REQUEST_LEN]),
            Err(RequestError::Version(0))
        );
    }
}
