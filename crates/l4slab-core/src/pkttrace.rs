//! The per-packet trace (`packets.parquet`), column by column: one row per
//! packet event. One definition for both backends, so a time-sequence plot
//! or an analysis reads a simulated and an emulated trace alike: the
//! simulator fills it from its transport's segments, the emulator from the
//! real TCP headers it forwards.

use serde::Serialize;

use crate::DropReason;

/// The trace columns; every `Vec` has one entry per row.
#[derive(Debug, Default, Serialize)]
pub struct PacketTrace {
    pub t_s: Vec<f64>,
    /// "send", "deliver" or "drop:<reason>" ([`drop_event`]).
    pub event: Vec<&'static str>,
    pub flow: Vec<u32>,
    /// "data" (from the flow's sender), "ack" (from its receiver) or
    /// "dgram" (an application datagram).
    pub side: Vec<&'static str>,
    pub seq: Vec<u64>,
    pub len: Vec<u32>,
    pub ack: Vec<u64>,
    pub ecn: Vec<&'static str>,
    pub retransmission: Vec<bool>,
    /// Receive window advertised in the segment.
    pub wnd: Vec<u64>,
    /// SACK blocks as "l-r;l-r", empty when none.
    pub sack: Vec<String>,
    /// TCP flags as letters ([`tcp_flag_letters`]).
    pub flags: Vec<String>,
}

impl PacketTrace {
    pub fn rows(&self) -> usize {
        self.t_s.len()
    }
}

/// The `event` column of a packet dropped for `r`.
pub const fn drop_event(r: DropReason) -> &'static str {
    match r {
        DropReason::Overlimit => "drop:overlimit",
        DropReason::HeadDrop => "drop:head_drop",
        DropReason::AqmDrop => "drop:aqm",
        DropReason::Overload => "drop:overload",
        DropReason::StepNonEct => "drop:step_non_ect",
        DropReason::LinkLoss => "drop:link_loss",
        DropReason::EcnBlackhole => "drop:ecn_blackhole",
    }
}

/// tcpdump-style letters for the TCP header's flag bits, laid out as in
/// bytes 12-13 of the header (RFC 9293 §3.1; AE, RFC 9768 §3.2.2, is bit 8):
/// `S` SYN, `F` FIN, `.` ACK, `E` ECE, `W` CWR, `A` AE.
pub fn tcp_flag_letters(bits: u16) -> String {
    [
        (0x002, 'S'),
        (0x001, 'F'),
        (0x010, '.'),
        (0x040, 'E'),
        (0x080, 'W'),
        (0x100, 'A'),
    ]
    .iter()
    .filter(|(bit, _)| bits & bit != 0)
    .map(|(_, c)| *c)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_letters_and_drop_events() {
        assert_eq!(tcp_flag_letters(0x012), "S.");
        assert_eq!(tcp_flag_letters(0x1d1), "F.EWA");
        assert_eq!(tcp_flag_letters(0), "");
        for r in DropReason::ALL {
            assert_eq!(drop_event(r), format!("drop:{}", r.name()));
        }
    }
}
