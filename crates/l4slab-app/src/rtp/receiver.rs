//! The receiving half of one RTP media stream: the RFC 8888 report
//! generator and the playout buffer, and the RTCP messages they send back
//! (CCFB reports, generic NACKs, picture loss indications).

use std::collections::VecDeque;

use serde_json::{json, Value};

use l4slab_core::{Dur, Ecn, Time};
use l4slab_media::ccfb::{CcfbConfig, Generator, Report};
use l4slab_media::playout::{MediaPacket, Playout, PlayoutConfig, PlayoutEvent};

/// RTCP messages kept for the sending side to read when they arrive (a
/// real receiver would serialize them): far more than can be in flight.
const KEPT: usize = 256;

/// An RTCP message the receiver sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rtcp {
    /// A CCFB report (its id).
    Report(u64),
    /// A generic NACK (its id).
    Nack(u64),
    /// A picture loss indication.
    Pli,
}

impl Rtcp {
    /// Bytes on the wire (with IPv4 and UDP).
    fn nack_bytes(seqs: &[u64]) -> u32 {
        // RFC 4585 §6.2.1: 12 B of RTCP header and SSRCs, one 4 B FCI per
        // PID plus up to 16 following packets (BLP).
        let mut fcis = 0u32;
        let mut base: Option<u64> = None;
        for &s in seqs {
            if base.is_none_or(|b| s < b || s > b + 16) {
                fcis += 1;
                base = Some(s);
            }
        }
        28 + 12 + 4 * fcis
    }
}

/// The receiving half (see the module documentation).
#[derive(Debug)]
pub struct Receiver {
    gen: Generator,
    playout: Playout,
    reports: VecDeque<(u64, Report)>,
    spare: Vec<Report>,
    nacks: VecDeque<(u64, Vec<u64>)>,
    next_id: u64,
    scratch: Vec<u64>,
    pli: bool,
    pub report_bytes: u64,
    pub nack_messages: u64,
    pub plis: u64,
}

impl Receiver {
    pub fn new(ccfb: CcfbConfig, playout: PlayoutConfig) -> Self {
        Receiver {
            gen: Generator::new(ccfb),
            playout: Playout::new(playout),
            reports: VecDeque::with_capacity(KEPT),
            spare: Vec::new(),
            nacks: VecDeque::with_capacity(16),
            next_id: 0,
            scratch: Vec::with_capacity(64),
            pli: false,
            report_bytes: 0,
            nack_messages: 0,
            plis: 0,
        }
    }

    pub fn start(&mut self, now: Time) {
        self.playout.start(now);
    }

    pub fn playout(&self) -> &Playout {
        &self.playout
    }

    pub fn playout_mut(&mut self) -> &mut Playout {
        &mut self.playout
    }

    pub fn set_rtt(&mut self, rtt: Dur) {
        self.playout.set_rtt(rtt);
    }

    /// A media packet arrived with IP-ECN field `ecn`.
    pub fn on_packet(&mut self, now: Time, transport_seq: u64, ecn: Ecn, media: MediaPacket) {
        self.gen.on_packet(now, transport_seq, ecn, media.last);
        self.playout.on_packet(now, media);
    }

    /// Run what is due at `now`; each RTCP message to send goes to `send`
    /// with its wire size.
    pub fn poll(&mut self, now: Time, send: &mut dyn FnMut(Rtcp, u32)) {
        let scratch = &mut self.scratch;
        let pli = &mut self.pli;
        scratch.clear();
        self.playout.poll(now, &mut |e| match e {
            PlayoutEvent::Nack { seq } => scratch.push(seq),
            PlayoutEvent::KeyframeRequest => *pli = true,
            PlayoutEvent::Rendered { .. } => {}
        });
        if !self.scratch.is_empty() {
            let id = self.next_id;
            self.next_id += 1;
            let bytes = Rtcp::nack_bytes(&self.scratch);
            self.nacks.push_back((id, self.scratch.clone()));
            if self.nacks.len() > KEPT {
                self.nacks.pop_front();
            }
            self.nack_messages += 1;
            send(Rtcp::Nack(id), bytes);
        }
        if std::mem::take(&mut self.pli) {
            self.plis += 1;
            // RFC 4585 §6.3.1: header and SSRCs, no FCI.
            send(Rtcp::Pli, 28 + 12);
        }
        if self.gen.due().is_some_and(|t| t <= now) {
            let mut r = self.spare.pop().unwrap_or_else(|| Report {
                report_time: now,
                begin: 0,
                entries: Vec::with_capacity(64),
            });
            self.gen.report(now, &mut r);
            let id = self.next_id;
            self.next_id += 1;
            let bytes = r.wire_bytes();
            self.report_bytes += u64::from(bytes);
            self.reports.push_back((id, r));
            if self.reports.len() > KEPT {
                let (_, old) = self.reports.pop_front().expect("non-empty");
                self.spare.push(old);
            }
            send(Rtcp::Report(id), bytes);
        }
    }

    /// Take report `id` for the sending side (reports before it were lost
    /// on the way and are recycled).
    pub fn take_report(&mut self, id: u64) -> Option<Report> {
        while let Some((i, _)) = self.reports.front() {
            if *i >= id {
                break;
            }
            let (_, old) = self.reports.pop_front().expect("non-empty");
            self.spare.push(old);
        }
        match self.reports.front() {
            Some((i, _)) if *i == id => self.reports.pop_front().map(|(_, r)| r),
            _ => None,
        }
    }

    /// Whether RTCP message `id` (a report or a NACK) was sent.
    pub fn sent_rtcp(&self, id: u64) -> bool {
        id < self.next_id
    }

    /// Give a report back once the sender has read it.
    pub fn recycle(&mut self, r: Report) {
        if self.spare.len() < 8 {
            self.spare.push(r);
        }
    }

    /// The NACKed sequence numbers of message `id`.
    pub fn nack_list(&self, id: u64) -> Option<&[u64]> {
        self.nacks
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v.as_slice())
    }

    pub fn next_wake(&self) -> Option<Time> {
        match (self.gen.due(), self.playout.next_wake()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn report(&self, end: Time) -> Value {
        let mut r = self.playout.report(end);
        if let Value::Object(m) = &mut r {
            m.insert(
                "feedback".into(),
                json!({
                    "reports": self.gen.reports,
                    "report_bytes": self.report_bytes,
                    "late_packets": self.gen.late,
                    "duplicate_packets": self.gen.duplicates,
                    "nack_messages": self.nack_messages,
                    "keyframe_requests": self.plis,
                }),
            );
        }
        r
    }
}

/// The receiver's playout configuration for a frame app.
pub fn playout_config(stall: Dur, late: Option<Dur>, min_delay: Dur) -> PlayoutConfig {
    PlayoutConfig {
        stall_threshold: stall,
        late_threshold: late,
        min_delay,
        ..PlayoutConfig::default()
    }
}
