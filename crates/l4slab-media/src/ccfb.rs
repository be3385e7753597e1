//! RFC 8888 congestion control feedback (CCFB): the receiver's report
//! generator and the sender's side of it.
//!
//! * [`Generator`] (receiver): records each packet's transport-wide
//!   sequence number, arrival time and ECN field, and says when a report is
//!   due ([`CcfbConfig`]: WebRTC's cadence or SCReAM's). A report covers
//!   every sequence number from the one after the previous report's last to
//!   the highest received (RFC 8888 §3.1 `begin_seq`, `num_reports`): each
//!   packet is reported once, as libwebrtc's generator does; one not
//!   received by then is reported not received (R = 0).
//! * Arrival times travel as offsets before the Report Timestamp in units of
//!   1/1024 s (ATO, RFC 8888 §3.1); [`quantize`] applies that resolution.
//! * [`History`] (sender): the packets sent, by sequence number, so a report
//!   becomes [`PacketReport`]s (send time, size, arrival or lost, ECN).
//!   Packets a lost report covered get no verdict: they leave the history
//!   when a later report passes them ([`History::take_unreported`] counts
//!   them), as a real sender would treat them.
//!
//! Reports are bounded by RFC 8888's 16-bit `num_reports`; the generator
//! reports at most [`MAX_PER_REPORT`] packets at once (in practice a
//! report is due long before). Nothing here allocates per packet: both
//! sides use rings preallocated for the session's capacity.

use std::collections::VecDeque;

use l4slab_core::{Dur, Ecn, Time};

use crate::PacketReport;

/// Most packets the sender's history keeps without a verdict (RFC 8888's
/// 16-bit sequence space).
pub const HISTORY_CAP: usize = 1 << 16;

/// Most packets one report lists (RFC 8888: `num_reports` is 16 bits; kept
/// well below so a report fits a datagram: 2 B each).
pub const MAX_PER_REPORT: usize = 8192;

/// When the receiver sends a report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcfbConfig {
    /// Never sooner than this after the previous report.
    pub min_interval: Dur,
    /// At most this long after the first packet not yet reported.
    pub max_wait: Dur,
    /// Early, when a packet with the RTP marker bit (a frame's last) arrives.
    pub on_marker: bool,
    /// Early, once this many packets wait to be reported (0: never).
    pub max_packets: u32,
}

impl CcfbConfig {
    /// libwebrtc `congestion_control_feedback_generator.cc`: at least 25 ms
    /// between reports, early on a marker bit, otherwise at most 25 ms after
    /// the first arrival (REFERENCES §6 C1).
    pub fn webrtc() -> Self {
        CcfbConfig {
            min_interval: Dur::from_millis(25),
            max_wait: Dur::from_millis(25),
            on_marker: true,
            max_packets: 0,
        }
    }

    /// SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2, receiver): a report
    /// after 16 packets, at the end of a frame (marker), or after 40 ms.
    pub fn scream() -> Self {
        CcfbConfig {
            min_interval: Dur::ZERO,
            max_wait: Dur::from_millis(40),
            on_marker: true,
            max_packets: 16,
        }
    }
}

/// One reported packet as the format carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `R = 1` with the arrival time (quantized), or `R = 0`.
    pub arrival: Option<Time>,
    pub ecn: Ecn,
}

/// A report: packets `begin ..= begin + entries - 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Report Timestamp (receiver clock).
    pub report_time: Time,
    pub begin: u64,
    pub entries: Vec<Entry>,
}

impl Report {
    /// Bytes on the wire: IPv4 + UDP (28), RTCP header (4) and sender SSRC
    /// (4), one media-SSRC block (SSRC 4, begin_seq and num_reports 4, 2 B
    /// per packet padded to 4 B), Report Timestamp (4) — RFC 8888 §3.1.
    pub fn wire_bytes(&self) -> u32 {
        let n = self.entries.len() as u32;
        28 + 4 + 4 + 4 + 4 + (2 * n).div_ceil(4) * 4 + 4
    }
}

/// The arrival time as a report carries it: `report_time − ATO/1024 s`,
/// ATO the offset rounded to the nearest 1/1024 s (RFC 8888 §3.1; an offset
/// beyond 0x1FFE units is sent as 0x1FFE, "at least that long ago").
pub fn quantize(arrival: Time, report_time: Time) -> Time {
    const UNIT_NS: u128 = 1_000_000_000;
    let off = report_time.saturating_since(arrival).as_nanos() as u128;
    let ato = ((off * 1024 + UNIT_NS / 2) / UNIT_NS).min(0x1FFE);
    let back = (ato * UNIT_NS / 1024) as u64;
    Time::from_nanos(report_time.as_nanos().saturating_sub(back))
}

/// The receiver's side (see the module documentation).
#[derive(Debug)]
pub struct Generator {
    cfg: CcfbConfig,
    /// Next sequence number to report.
    next: Option<u64>,
    /// Arrivals at `next + i` (`None`: not received yet).
    pending: VecDeque<Option<(Time, Ecn)>>,
    /// Highest sequence number received + 1 (relative end of `pending`).
    first_pending_arrival: Option<Time>,
    marker_seen: bool,
    waiting: u32,
    last_report: Option<Time>,
    /// Packets that arrived after their sequence number had been reported.
    pub late: u64,
    pub duplicates: u64,
    pub reports: u64,
}

impl Generator {
    pub fn new(cfg: CcfbConfig) -> Self {
        Generator {
            cfg,
            next: None,
            pending: VecDeque::with_capacity(1024),
            first_pending_arrival: None,
            marker_seen: false,
            waiting: 0,
            last_report: None,
            late: 0,
            duplicates: 0,
            reports: 0,
        }
    }

    /// A packet arrived.
    pub fn on_packet(&mut self, now: Time, seq: u64, ecn: Ecn, marker: bool) {
        let next = *self.next.get_or_insert(seq);
        if seq < next {
            self.late += 1;
            return;
        }
        let i = (seq - next) as usize;
        if i >= MAX_PER_REPORT * 4 {
            // A jump far ahead (a long outage): report what is pending as
            // not received only up to the cap; restart the window here.
            self.next = Some(seq);
            self.pending.clear();
            return self.on_packet(now, seq, ecn, marker);
        }
        if i >= self.pending.len() {
            self.pending.resize(i + 1, None);
        }
        if self.pending[i].is_some() {
            self.duplicates += 1;
            return;
        }
        self.pending[i] = Some((now, ecn));
        self.first_pending_arrival.get_or_insert(now);
        self.waiting += 1;
        self.marker_seen |= marker && self.cfg.on_marker;
    }

    /// When the next report is due, if any packet waits.
    pub fn due(&self) -> Option<Time> {
        let first = self.first_pending_arrival?;
        let early = self.marker_seen
            || (self.cfg.max_packets > 0 && self.waiting >= self.cfg.max_packets)
            || self.pending.len() >= MAX_PER_REPORT;
        let want = if early {
            first
        } else {
            first + self.cfg.max_wait
        };
        Some(match self.last_report {
            Some(last) => want.max(last + self.cfg.min_interval),
            None => want,
        })
    }

    /// The report due at `now` (the caller checked [`Generator::due`]).
    /// `out` is reused: its entries are replaced.
    pub fn report(&mut self, now: Time, out: &mut Report) {
        let begin = self.next.expect("a report needs a packet");
        let n = self.pending.len().min(MAX_PER_REPORT);
        out.report_time = now;
        out.begin = begin;
        out.entries.clear();
        out.entries.extend(self.pending.drain(..n).map(|a| match a {
            Some((t, ecn)) => Entry {
                arrival: Some(quantize(t, now)),
                ecn,
            },
            None => Entry {
                arrival: None,
                ecn: Ecn::NotEct,
            },
        }));
        self.next = Some(begin + n as u64);
        self.first_pending_arrival = self.pending.iter().flatten().map(|a| a.0).min();
        self.waiting = self.pending.iter().flatten().count() as u32;
        self.marker_seen = false;
        self.last_report = Some(now);
        self.reports += 1;
    }
}

/// One packet the sender sent and has no verdict for yet.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    size: u32,
    sent: Time,
}

/// The sender's side (see the module documentation).
#[derive(Debug, Default)]
pub struct History {
    sent: VecDeque<Sent>,
    in_flight: u64,
    unreported: u64,
    /// Packets reported received / lost, in total.
    pub acked: u64,
    pub lost: u64,
}

impl History {
    pub fn new() -> Self {
        History {
            sent: VecDeque::with_capacity(4096),
            ..Default::default()
        }
    }

    /// A packet left; sequence numbers increase by one. The history keeps at
    /// most [`HISTORY_CAP`] packets: when feedback stops (a dead return
    /// path), the oldest leave without a verdict, as a lost report's do.
    pub fn on_sent(&mut self, now: Time, seq: u64, size: u32) {
        if let Some(last) = self.sent.back() {
            assert_eq!(
                seq,
                last.seq + 1,
                "transport-wide sequence numbers are consecutive"
            );
        }
        if self.sent.len() >= HISTORY_CAP {
            let old = self.sent.pop_front().expect("non-empty");
            self.in_flight -= u64::from(old.size);
            self.unreported += 1;
        }
        self.sent.push_back(Sent {
            seq,
            size,
            sent: now,
        });
        self.in_flight += u64::from(size);
    }

    /// Bytes sent and not yet passed by a report.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Send time of packet `seq`, if it has no verdict yet.
    pub fn sent_at(&self, seq: u64) -> Option<Time> {
        let first = self.sent.front()?.seq;
        self.sent
            .get(seq.checked_sub(first)? as usize)
            .map(|s| s.sent)
    }

    /// Decode `report` into `out` (cleared first): one [`PacketReport`]
    /// per packet it covers that has no verdict yet. Packets before
    /// `report.begin` that are still here were covered by a report that was
    /// lost: they leave without a verdict.
    pub fn on_report(&mut self, report: &Report, out: &mut Vec<PacketReport>) {
        out.clear();
        while let Some(s) = self.sent.front() {
            if s.seq >= report.begin {
                break;
            }
            self.in_flight -= u64::from(s.size);
            self.unreported += 1;
            self.sent.pop_front();
        }
        let end = report.begin + report.entries.len() as u64;
        while let Some(s) = self.sent.front().copied() {
            if s.seq >= end {
                break;
            }
            let e = report.entries[(s.seq - report.begin) as usize];
            self.sent.pop_front();
            self.in_flight -= u64::from(s.size);
            if e.arrival.is_some() {
                self.acked += 1;
            } else {
                self.lost += 1;
            }
            out.push(PacketReport {
                seq: s.seq,
                size: s.size,
                sent: s.sent,
                arrival: e.arrival,
                ecn: e.ecn,
            });
        }
    }

    /// Packets that left without a verdict (their report was lost).
    pub fn take_unreported(&self) -> u64 {
        self.unreported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    #[test]
    fn ato_resolution_is_1_1024_s() {
        let rt = ms(1000);
        let a = Time::from_nanos(990_000_000 - 300_000);
        let q = quantize(a, rt);
        assert!(q.as_nanos().abs_diff(a.as_nanos()) <= 1_000_000_000 / 2048 + 1);
        // Beyond 0x1FFE units the offset saturates.
        assert_eq!(
            quantize(Time::ZERO, Time::from_secs(20)),
            Time::from_nanos(20_000_000_000 - 0x1FFE * 1_000_000_000 / 1024)
        );
    }

    #[test]
    fn webrtc_cadence_marker_early_and_25ms_floor() {
        let mut g = Generator::new(CcfbConfig::webrtc());
        assert_eq!(g.due(), None);
        g.on_packet(ms(0), 0, Ecn::Ect1, false);
        assert_eq!(g.due(), Some(ms(25)));
        g.on_packet(ms(3), 1, Ecn::Ce, true);
        assert_eq!(g.due(), Some(ms(0)));
        let mut r = Report {
            report_time: Time::ZERO,
            begin: 0,
            entries: vec![],
        };
        g.report(ms(3), &mut r);
        assert_eq!((r.begin, r.entries.len()), (0, 2));
        assert_eq!(r.entries[1].ecn, Ecn::Ce);
        g.on_packet(ms(4), 2, Ecn::Ect1, true);
        // A marker, but not sooner than 25 ms after the last report.
        assert_eq!(g.due(), Some(ms(28)));
    }

    #[test]
    fn missing_packets_are_reported_lost_once_and_late_ones_counted() {
        let mut g = Generator::new(CcfbConfig::scream());
        let mut h = History::new();
        for s in 0..5 {
            h.on_sent(ms(s), s, 1000);
        }
        assert_eq!(h.in_flight(), 5000);
        for s in [0, 1, 3, 4] {
            g.on_packet(ms(10 + s), s, Ecn::Ect1, false);
        }
        let mut r = Report {
            report_time: Time::ZERO,
            begin: 0,
            entries: vec![],
        };
        g.report(ms(20), &mut r);
        assert_eq!(r.wire_bytes(), 28 + 16 + 12 + 4);
        let mut out = Vec::new();
        h.on_report(&r, &mut out);
        assert_eq!(out.len(), 5);
        assert!(out[2].lost() && !out[3].lost());
        assert_eq!((h.acked, h.lost, h.in_flight()), (4, 1, 0));
        g.on_packet(ms(30), 2, Ecn::Ect1, false);
        assert_eq!((g.late, g.due()), (1, None));
    }

    #[test]
    fn a_lost_report_leaves_its_packets_without_a_verdict() {
        let mut g = Generator::new(CcfbConfig::webrtc());
        let mut h = History::new();
        let mut r = Report {
            report_time: Time::ZERO,
            begin: 0,
            entries: vec![],
        };
        let mut out = Vec::new();
        for s in 0..4 {
            h.on_sent(ms(s), s, 100);
            g.on_packet(ms(s + 5), s, Ecn::NotEct, false);
            if s == 1 {
                g.report(ms(7), &mut r); // lost on the way
            }
        }
        g.report(ms(40), &mut r);
        h.on_report(&r, &mut out);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!((h.take_unreported(), h.in_flight()), (2, 0));
    }

    #[test]
    fn without_feedback_the_history_stays_bounded() {
        let mut h = History::new();
        for s in 0..(HISTORY_CAP as u64 + 10) {
            h.on_sent(ms(s), s, 100);
        }
        assert_eq!(h.take_unreported(), 10);
        assert_eq!(h.in_flight(), HISTORY_CAP as u64 * 100);
        assert_eq!(h.sent_at(9), None);
        assert_eq!(h.sent_at(10), Some(ms(10)));
    }
}
