//! An L4S AP's aggregates: an airtime bound on the A-MPDUs the AP sends a
//! station with L4S traffic (`[wifi.ap] l4s_ppdu_max`, docs/models/wifi.md,
//! "An L4S AP's aggregates").
//!
//! The AP dequeues a station's qdisc when it builds an A-MPDU for it, so an
//! L4S packet that arrives while the station's previous A-MPDU is on the air
//! waits for that PPDU to end: up to aPPDUMaxTime (5.484 ms) at a low MCS,
//! five times the L queue's 1 ms marking threshold (Linux `sch_dualpi2`
//! `step_thresh`). Shipping drivers shorten aggregates when latency matters:
//! iwlwifi caps the frames of an A-MPDU of a low-latency interface
//! (`mvm/rs.c`, `low_latency_agg_frame_limit`, 6; its patch: "Aggregations
//! hit latency so disable it by default on low latency vifs"),
//! ath9k caps every A-MPDU's duration at 4 ms or the TXOP limit
//! (`ath_update_max_aggr_framelen`), 802.11 bounds a whole TXOP of voice
//! to 1.504 ms (802.11-2020 Table 9-155, AC_VO). Here the bound is in
//! airtime, per station and AC:
//!
//! * an A-MPDU that carries an L4S packet (ECT(1) or CE: RFC 9331 §5.1, the
//!   packets DualPI2 classifies into its L queue), and
//! * the next A-MPDU after one that did (the station "has L4S traffic": a
//!   DualQ serves its L queue first, so an A-MPDU built while the L queue is
//!   momentarily empty would otherwise hold the L packets that arrive
//!   during it for a whole aPPDUMaxTime),
//!
//! last at most the bound on the air; the first MPDU of a TXOP always goes
//! (as without the bound). Uplink queues (the stations') are not the AP's
//! and are never bounded. Without the key nothing changes.

use l4slab_core::{Dur, Ecn};

/// Whether a packet is L4S traffic: ECT(1) or CE (RFC 9331 §5.1: a DualQ
/// classifies both into its L queue).
pub fn is_l4s(ecn: Ecn) -> bool {
    matches!(ecn, Ecn::Ect1 | Ecn::Ce)
}

/// The PPDU time an A-MPDU may reach: `limit` (aPPDUMaxTime, the TXOP
/// limit), or `bound` if the A-MPDU is bounded (`l4s`: it carries an L4S
/// packet or follows one that did).
pub fn ppdu_limit(limit: Dur, bound: Option<Dur>, l4s: bool) -> Dur {
    match bound {
        Some(b) if l4s => limit.min(b),
        _ => limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_l4s_aggregates_are_bounded() {
        assert!(is_l4s(Ecn::Ect1) && is_l4s(Ecn::Ce));
        assert!(!is_l4s(Ecn::Ect0) && !is_l4s(Ecn::NotEct));
        let (max, b) = (Dur::from_micros(5484), Some(Dur::from_millis(1)));
        assert_eq!(ppdu_limit(max, b, true), Dur::from_millis(1));
        assert_eq!(ppdu_limit(max, b, false), max);
        assert_eq!(ppdu_limit(max, None, true), max);
        // A TXOP limit below the bound stays the limit.
        let txop = Dur::from_micros(500);
        assert_eq!(ppdu_limit(txop, b, true), txop);
    }
}
