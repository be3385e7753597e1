//! The endpoint: one side of a TCP-like connection, sans-IO.
//!
//! The caller (simulator or real-time driver) owns the clock and the network:
//! it passes `now` into every call, collects [`Transmit`]s from
//! [`EndpointCtx::out`] and application notifications from
//! [`EndpointCtx::events`], and calls [`Endpoint::on_timer`] at
//! [`Endpoint::next_timer`]. Nothing here allocates per packet once the
//! internal queues have grown to the window.
//!
//! Files: this one holds the public API, timers and the send buffer;
//! `handshake.rs` opens and closes the connection (RFC 9293 §3.5-§3.6),
//! with TCP Fast Open (RFC 7413; `crate::fastopen`);
//! `ack.rs` processes ACKs (RTT, SACK, RACK, recovery, congestion-control
//! hooks); `output.rs` decides what to send (retransmissions first, then new
//! data, within cwnd, rwnd and pacing) and builds segments; `tlp.rs` has
//! the tail loss probe and Linux's timer rules, `undo.rs` the undo of
//! spurious reductions and F-RTO.
//!
//! What is not implemented, and deviations from Linux, are listed in
//! `docs/models/transport.md`; the main ones: no RST, no simultaneous open,
//! no TIME-WAIT timer, no Nagle (every write is sent as soon as the windows
//! allow, as with `TCP_NODELAY`). ECN (negotiation, feedback, validation) is `crate::ecn`,
//! called from here, `handshake.rs`, `ack.rs` and `output.rs`.

mod ack;
mod handshake;
mod output;
mod tlp;
mod undo;

use l4slab_cc::pacing::{linux as pacing, Pacer, Rule};
use l4slab_cc::rate::{RateEstimator, RateSample};
use l4slab_cc::{CcCtx, CcMetrics, CongestionControl};
use l4slab_core::{Dur, Ecn, FlowId, Rate, SimRng, Time, TraceEvent, Tracer};

use crate::config::{EcnMode, TransportConfig};
use crate::ecn::{EcnState, EcnValidation};
use crate::fastopen::{FastOpen, FastOpenCache};
use crate::rack::Rack;
use crate::receiver::Receiver;
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::segment::{Flags, Segment, Transmit};
use crate::state::{ConnState, Recovery};
use crate::stats::EndpointStats;

/// Which side opens the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sends the SYN on [`Endpoint::connect`].
    Client,
    /// Listens from construction and answers the first SYN.
    Server,
}

/// What the endpoint tells its application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// The handshake completed (both sides).
    Connected,
    /// The socket became writable again (send-buffer space, and below the
    /// not-sent low-water mark if one is set). Emitted on transitions only.
    Writable,
    /// `bytes` more were delivered in order to this side.
    Delivered { bytes: u64 },
    /// The peer's FIN arrived after all its data: nothing more will come.
    PeerFinished,
}

/// Everything an endpoint call may touch besides the endpoint. `out` and
/// `events` are appended to, never cleared: the caller drains and reuses them.
pub struct EndpointCtx<'a> {
    pub rng: &'a mut SimRng,
    pub tracer: &'a mut dyn Tracer,
    pub out: &'a mut Vec<Transmit>,
    pub events: &'a mut Vec<AppEvent>,
    /// TCP Fast Open state shared by the connections between this
    /// connection's two hosts (`crate::fastopen`): the client's cookie cache
    /// and the cookie the server issues. Host state that outlives the
    /// connection, so the driver owns it and lends it per call, as it does
    /// the RNG. `None`: no cache — a client cannot remember a cookie (it
    /// asks again each time) and a server neither issues nor accepts one.
    /// Only read with [`TransportConfig::fastopen`] on.
    pub fastopen: Option<&'a mut FastOpenCache>,
}

/// Our initial sequence number. Fixed (RFC 9293 §3.4.1's clock-driven ISN
/// protects against old duplicates, which a simulated run does not have).
const ISS: u64 = 0;

/// One TCP-like endpoint (see the module documentation).
#[derive(Debug)]
pub struct Endpoint {
    flow: FlowId,
    role: Role,
    cfg: TransportConfig,
    cc: Box<dyn CongestionControl>,
    state: ConnState,
    // Send sequence space (RFC 9293 §3.3.1), absolute.
    /// `SND.UNA`: oldest unacknowledged sequence number.
    snd_una: u64,
    /// `SND.NXT`: next new sequence number to send.
    snd_nxt: u64,
    /// One past the last byte the application wrote.
    write_end: u64,
    /// Sequence number of our FIN, once [`Endpoint::close`] was called.
    fin_seq: Option<u64>,
    /// `SND.WND`, `SND.WL1`, `SND.WL2` (RFC 9293 §3.10.7.4).
    snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    sb: Scoreboard,
    /// Data transmissions so far (each one's send order).
    tx_order: u64,
    rack: Rack,
    rate: RateEstimator,
    last_rate_sample: Option<RateSample>,
    recovery: Recovery,
    /// Send one retransmission regardless of cwnd and pacing: RFC 6675 §5
    /// step (4.3) on entering recovery, RFC 6298 §5.4 after a timeout.
    force_retransmit: bool,
    rtt: RttEstimator,
    pacer: Pacer,
    rcv: Receiver,
    rto_deadline: Option<Time>,
    /// Tail loss probe timer (`tlp.rs`); while set, `rto_deadline` is not.
    tlp_deadline: Option<Time>,
    /// RFC 8985 §7 / Linux `tlp_high_seq`: SND.NXT when the outstanding
    /// probe was sent, and whether it was a retransmission (`tlp_retrans`).
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// Undo bookkeeping of the current episode (`undo.rs`).
    undo: undo::UndoState,
    /// F-RTO running after a timeout (Linux `tp->frto`), and this ACK's
    /// step 2b: send new data instead of retransmissions.
    frto: bool,
    frto_send_new: bool,
    pacing_deadline: Option<Time>,
    /// Linux `tp->is_cwnd_limited`, `tp->max_packets_out` and
    /// `tp->cwnd_usage_seq` (`tcp_cwnd_validate`): whether the window was
    /// the limit at some send of the current window, else the most segments
    /// outstanding in it; reset a window after `cwnd_usage_seq`.
    is_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    rack_deadline: Option<Time>,
    /// Writability as last reported to the application.
    writable_reported: bool,
    /// `AppEvent::Connected` was emitted (with Fast Open, before the
    /// handshake completes: `handshake.rs`).
    connected_reported: bool,
    /// TCP Fast Open (`crate::fastopen`, `handshake.rs`).
    tfo: FastOpen,
    ecn: EcnState,
    stats: EndpointStats,
}

impl Endpoint {
    /// # Panics
    /// If `cfg` is invalid ([`TransportConfig::validate`]): scenario input is
    /// validated before it gets here, so this is a bug.
    pub fn new(
        flow: FlowId,
        role: Role,
        cfg: TransportConfig,
        cc: Box<dyn CongestionControl>,
    ) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid TransportConfig: {e}");
        }
        let rcv = Receiver::new(
            cfg.receive_buffer,
            u64::from(cfg.mss),
            cfg.delayed_ack,
            cfg.delayed_ack_timeout,
            cfg.dsack,
        );
        Endpoint {
            flow,
            role,
            state: match role {
                Role::Client => ConnState::Closed,
                Role::Server => ConnState::Listen,
            },
            snd_una: ISS,
            snd_nxt: ISS,
            write_end: ISS + 1,
            fin_seq: None,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            sb: Scoreboard::default(),
            tx_order: 0,
            rack: Rack::default(),
            rate: RateEstimator::default(),
            last_rate_sample: None,
            recovery: Recovery::Open,
            force_retransmit: false,
            rtt: RttEstimator::new(cfg.min_rto, cfg.rto_formula),
            pacer: Pacer::new(Rule::Linux, Time::ZERO),
            rcv,
            rto_deadline: None,
            tlp_deadline: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            undo: undo::UndoState::default(),
            frto: false,
            frto_send_new: false,
            pacing_deadline: None,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            rack_deadline: None,
            writable_reported: true,
            connected_reported: false,
            tfo: FastOpen::Off,
            ecn: EcnState::new(&cfg),
            stats: EndpointStats {
                ecn_validation: if cfg.ecn == EcnMode::Off {
                    EcnValidation::NotNegotiated
                } else {
                    EcnValidation::Unknown
                },
                ..EndpointStats::default()
            },
            cc,
            cfg,
        }
    }

    // ----- public API -------------------------------------------------------

    /// Client: send the SYN (RFC 9293 §3.5). With [`TransportConfig::fastopen`]
    /// and a cached cookie the SYN waits for the first write, at the latest
    /// until the end of this instant, and the app is told `Connected` at
    /// once (Linux `TCP_FASTOPEN_CONNECT`; `handshake.rs`).
    pub fn connect(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        assert_eq!(self.role, Role::Client, "only a client connects");
        self.transition_to(ConnState::SynSent);
        self.snd_una = ISS;
        self.snd_nxt = ISS + 1;
        if self.fastopen_defer_connect(now, ctx) {
            return;
        }
        self.send_syn(now, false, ctx);
    }

    /// A segment from the peer arrived with IP ECN field `ecn`.
    pub fn on_segment(&mut self, now: Time, seg: &Segment, ecn: Ecn, ctx: &mut EndpointCtx<'_>) {
        self.stats.segments_received += 1;
        let syn = seg.flags.contains(Flags::SYN);
        let has_ack = seg.flags.contains(Flags::ACK);
        match self.state {
            // Not listening; a RST is not modelled.
            ConnState::Closed => return,
            ConnState::Listen => {
                if syn && !has_ack {
                    self.on_syn(now, seg, ecn, ctx);
                }
            }
            ConnState::SynSent => {
                // RFC 9293 §3.10.7.3: "If SND.UNA < SEG.ACK =< SND.NXT then the
                // ACK is acceptable" (SND.NXT is past a Fast Open SYN's data).
                if syn && has_ack && seg.ack > ISS && seg.ack <= self.snd_nxt {
                    self.on_syn_ack(now, seg, ecn, ctx);
                }
            }
            ConnState::SynReceived => {
                if syn && !has_ack {
                    // The peer did not get our SYN/ACK: answer its retransmitted
                    // SYN at once (Linux tcp_check_req -> inet_rtx_syn_ack).
                    self.ecn.on_repeated_syn(seg.flags, &mut self.stats);
                    self.rcv.update_ts_recent(seg.seq, seg.ts_val);
                    self.send_syn(now, true, ctx);
                } else if has_ack && seg.ack > ISS && seg.ack <= self.snd_nxt {
                    // RFC 9293 §3.10.7.4: "If SND.UNA < SEG.ACK =< SND.NXT, then
                    // enter ESTABLISHED state and continue processing". SND.NXT
                    // is past ISS + 1 only after Fast Open data sent in
                    // SYN-RECEIVED (handshake.rs).
                    let pure =
                        seg.len == 0 && seg.sack_count == 0 && !seg.flags.contains(Flags::FIN);
                    let cp = self.cc.ecn_codepoint();
                    self.ecn
                        .on_handshake_ack(seg.flags, pure, cp, &mut self.stats);
                    self.ecn_receive(seg, ecn);
                    // The SYN/ACK is acknowledged; data beyond it by `on_ack`
                    // below, which then takes the RTT sample.
                    self.snd_una = ISS + 1;
                    if seg.ack == ISS + 1 {
                        self.take_rtt_sample(now, seg.ts_ecr, ctx);
                    }
                    self.rto_deadline = None;
                    // Linux tcp_rcv_synrecv_state_fastopen -> tcp_rearm_rto:
                    // data sent in SYN-RECEIVED keeps a retransmission timer.
                    if !self.sb.is_empty() {
                        self.rto_deadline = Some(now + self.rtt.rto());
                    }
                    self.update_window(seg);
                    self.establish(ctx);
                    self.on_synchronized(now, seg, ctx);
                }
            }
            _ => {
                if !syn {
                    self.ecn_receive(seg, ecn);
                }
                self.on_synchronized(now, seg, ctx)
            }
        }
        self.after_input(now, ctx);
    }

    /// Run every timer whose deadline is `<= now`.
    pub fn on_timer(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        if self.fastopen_deadline().is_some_and(|t| t <= now) {
            // A deferred Fast Open connect nobody wrote to: the SYN leaves now.
            self.send_syn(now, false, ctx);
        }
        if self.rcv.delack_deadline().is_some_and(|t| t <= now) {
            self.rcv.on_delack_timer();
        }
        if self.rack_deadline.is_some_and(|t| t <= now) {
            // RFC 8985 §6.2 step 6: the reorder timer re-runs RACK_detect_loss.
            self.rack_deadline = None;
            let (lost, lost_segs) = self.detect_losses(now, ctx);
            self.on_loss(now, lost, ctx);
            // Linux tcp_rack_reo_timeout: tcp_cwnd_reduction(sk, 1, 0, 0).
            self.prr_update(1, lost_segs, false);
        }
        if self.rto_deadline.is_some_and(|t| t <= now) {
            self.rto_deadline = None;
            self.on_rto(now, ctx);
        }
        if self.tlp_deadline.is_some_and(|t| t <= now) {
            self.on_probe_timer(now, ctx);
        }
        if self.pacing_deadline.is_some_and(|t| t <= now) {
            self.pacing_deadline = None;
        }
        self.after_input(now, ctx);
    }

    /// Earliest pending deadline (RTO or loss probe, delayed ACK, pacing
    /// release, RACK reorder timer, a deferred Fast Open SYN).
    pub fn next_timer(&self) -> Option<Time> {
        // The earliest of the six, folded by hand: the clock asks after every
        // call, and `.into_iter().flatten().min()` cost ~70 instructions a call.
        let earlier = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        let t = earlier(self.rto_deadline, self.tlp_deadline);
        let t = earlier(t, self.rcv.delack_deadline());
        let t = earlier(t, self.pacing_deadline);
        let t = earlier(t, self.rack_deadline);
        earlier(t, self.fastopen_deadline())
    }

    /// Offer `bytes` to the send buffer; returns how many were accepted (at
    /// most the free space and, with a not-sent low-water mark, at most what
    /// brings the unsent bytes up to the mark rounded up to whole segments).
    /// Data written before the handshake completes is sent once it does.
    /// Nothing is accepted after `close`.
    pub fn write(&mut self, now: Time, bytes: u64, ctx: &mut EndpointCtx<'_>) -> u64 {
        let n = bytes.min(self.write_room());
        if n > 0 {
            self.write_end += n;
            self.stats.bytes_written += n;
            if self.fastopen_deadline().is_some() {
                // Linux tcp_sendmsg_fastopen: the first write sends the
                // deferred SYN, with as much of it as fits (handshake.rs).
                self.send_syn(now, false, ctx);
            }
            self.try_send(now, ctx);
        }
        self.sync_writable(ctx);
        n
    }

    /// Close the sending direction: a FIN follows the queued data (RFC 9293 §3.6).
    pub fn close(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        if self.fin_seq.is_some() {
            return;
        }
        self.fin_seq = Some(self.write_end);
        match self.state {
            ConnState::Established => self.transition_to(ConnState::FinWait1),
            ConnState::CloseWait => self.transition_to(ConnState::LastAck),
            ConnState::Listen => self.transition_to(ConnState::Closed),
            // SYN-SENT / SYN-RECEIVED: FIN-WAIT-1 once established.
            _ => {}
        }
        self.try_send(now, ctx);
        self.sync_writable(ctx);
    }

    /// Writable: send-buffer space, below the not-sent low-water mark (if
    /// set), and not closed (Linux `sk_stream_memory_free`).
    pub fn is_writable(&self) -> bool {
        self.write_room() > 0
    }

    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// What TCP Fast Open did on this connection so far.
    pub fn fastopen_outcome(&self) -> crate::FastOpenOutcome {
        self.stats.fastopen
    }

    /// The negotiated ECN mode (`Off` before the handshake completes).
    pub fn ecn_mode(&self) -> EcnMode {
        self.ecn.mode()
    }

    /// The sender's ECN validation verdict (docs/models/ecn.md).
    pub fn ecn_validation(&self) -> EcnValidation {
        self.ecn.validation()
    }

    /// Switch an L4S sender to classic ECN behaviour: ECT(0) on its packets
    /// and classic feedback — at most one `CongestionEvent::EcnEcho` per RTT
    /// and `AckEvent::ce_bytes = 0`. The transport does this itself when it
    /// detects ECT(1) → ECT(0) re-marking; a controller-side detector of a
    /// classic ECN bottleneck (RFC 9331 §4.3) may ask for it too.
    pub fn fall_back_to_classic_ecn(&mut self) {
        self.ecn.fall_back_to_classic();
    }

    pub fn cc_metrics(&self) -> CcMetrics {
        self.cc.metrics()
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.rtt.srtt()
    }

    pub fn min_rtt(&self) -> Option<Dur> {
        self.rtt.min_rtt()
    }

    /// RFC 6298 `RTTVAR`.
    pub fn rttvar(&self) -> Dur {
        self.rtt.rttvar()
    }

    /// The most recent RTT sample.
    pub fn latest_rtt(&self) -> Option<Dur> {
        self.rtt.latest()
    }

    /// Current retransmission timeout, backed off (RFC 6298).
    pub fn rto(&self) -> Dur {
        self.rtt.rto()
    }

    /// Consecutive RTO back-offs (RFC 6298 §5.5) since the last RTT sample.
    pub fn rto_backoff(&self) -> u32 {
        self.rtt.backoff()
    }

    /// The window we advertise: receive buffer minus out-of-order bytes.
    pub fn receive_window(&self) -> u64 {
        self.rcv.window()
    }

    /// Out-of-order bytes held for reassembly.
    pub fn reassembly_bytes(&self) -> u64 {
        self.rcv.ooo_bytes()
    }

    /// The peer's FIN arrived and everything before it was delivered.
    pub fn peer_finished(&self) -> bool {
        self.rcv.fin_done()
    }

    /// RFC 6675 `pipe`, in bytes.
    pub fn bytes_in_flight(&self) -> u64 {
        self.sb.in_flight()
    }

    pub fn state(&self) -> ConnState {
        self.state
    }

    pub fn flow(&self) -> FlowId {
        self.flow
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn config(&self) -> &TransportConfig {
        &self.cfg
    }

    /// The peer's advertised receive window.
    pub fn peer_window(&self) -> u64 {
        self.snd_wnd
    }

    /// Bytes written but not yet sent.
    pub fn unsent_bytes(&self) -> u64 {
        self.write_end.saturating_sub(self.snd_nxt.max(ISS + 1))
    }

    /// The latest delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation).
    pub fn last_rate_sample(&self) -> Option<RateSample> {
        self.last_rate_sample
    }

    /// In loss recovery (fast recovery or after an RTO).
    pub fn in_recovery(&self) -> bool {
        self.recovery != Recovery::Open
    }

    /// Pacing rate in force: the controller's, else (if `pacing`) Linux's
    /// default `tcp_update_pacing_rate`, else none.
    pub fn pacing_rate(&self) -> Option<Rate> {
        self.cc.pacing_rate().or_else(|| {
            if self.cfg.pacing {
                pacing::default_rate(
                    self.cc.cwnd(),
                    self.cc.ssthresh(),
                    self.snd_nxt - self.snd_una,
                    self.rtt.srtt(),
                )
            } else {
                None
            }
        })
    }

    /// Check every internal invariant; O(window). For tests.
    pub fn check_invariants(&self) {
        self.sb.check_invariants();
        self.rcv.check_invariants();
        assert!(self.snd_una <= self.snd_nxt);
        if self.state.synchronized() {
            match self.sb.back() {
                Some(b) => assert_eq!(b.end(), self.snd_nxt, "scoreboard end != SND.NXT"),
                None => assert_eq!(self.snd_una, self.snd_nxt, "nothing outstanding"),
            }
            if !self.sb.is_empty() {
                assert_eq!(self.sb.get(self.sb.front_idx()).seq, self.snd_una);
                assert!(
                    self.rto_deadline.is_some() != self.tlp_deadline.is_some(),
                    "data outstanding needs exactly one of the RTO and probe timers"
                );
            }
        }
        if let Some(f) = self.fin_seq {
            assert!(self.snd_nxt <= f + 1 && self.write_end == f);
        }
    }

    /// After any input: send what the windows allow, then an ACK if one is
    /// still owed, then tell the app if it may write again.
    fn after_input(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        self.try_send(now, ctx);
        if self.rcv.ack_now() && self.rcv.synced() && self.state != ConnState::SynReceived {
            self.send_ack(now, ctx);
        }
        self.sync_writable(ctx);
    }

    // ----- timers -------------------------------------------------------------

    /// RFC 6298 §5.4-§5.7: the retransmission timer expired.
    fn on_rto(&mut self, now: Time, ctx: &mut EndpointCtx<'_>) {
        match self.state {
            ConnState::SynSent | ConnState::SynReceived => {
                self.stats.rto_count += 1;
                self.rtt.on_timeout(); // §5.5: back off
                self.send_syn(now, true, ctx); // §5.4 and §5.6 (re-arms)
            }
            _ if !self.sb.is_empty() => {
                self.stats.rto_count += 1;
                // An RTO before any ECT packet got through: an ECT black hole?
                self.ecn.on_data_rto();
                // RFC 5681 §3.1 FlightSize, before anything changes.
                let flight = self.snd_nxt - self.snd_una;
                // Linux tcp_enter_loss: a new undo point unless this timeout
                // interrupts a fast recovery that has one; F-RTO unless it does
                // so on its first timeout (RFC 5682 §3: "new recovery").
                let fresh = self.recovery == Recovery::Open
                    || matches!(self.recovery, Recovery::Rto { .. }) && self.rtt.backoff() == 0;
                if fresh {
                    self.init_undo();
                }
                self.frto =
                    self.cfg.frto && (self.recovery == Recovery::Open || self.rtt.backoff() > 0);
                self.frto_send_new = false;
                self.tlp_high_seq = None;
                self.tlp_deadline = None;
                self.mark_all_lost(now, ctx);
                self.rack_deadline = None;
                let next = Recovery::Rto {
                    recover: self.snd_nxt,
                };
                self.set_recovery(next);
                // Linux tcp_enter_loss -> tcp_ecn_queue_cwr.
                self.ecn.on_reduction(self.snd_nxt, false, &mut self.stats);
                self.cc_congestion(
                    now,
                    l4slab_cc::CongestionEvent::Rto { in_flight: flight },
                    ctx,
                );
                self.rtt.on_timeout(); // §5.5: RTO <- RTO * 2
                                       // §5.4: "Retransmit the earliest segment that has not been
                                       // acknowledged"; the send re-arms the timer (§5.6).
                self.force_retransmit = true;
            }
            _ => {}
        }
    }

    fn set_recovery(&mut self, next: Recovery) {
        assert!(
            self.recovery.can_become(next),
            "flow {}: illegal recovery transition {:?} -> {:?}",
            self.flow,
            self.recovery,
            next
        );
        self.recovery = next;
    }

    // ----- send buffer ---------------------------------------------------------

    /// Bytes `write` would accept now.
    fn write_room(&self) -> u64 {
        if self.fin_seq.is_some() {
            return 0;
        }
        // Linux counts written-but-unacknowledged data against the send buffer.
        let buffered = self.write_end - self.snd_una.max(ISS + 1);
        let free = self.cfg.send_buffer.saturating_sub(buffered);
        match self.cfg.notsent_lowat {
            // Linux tcp_stream_memory_free: writable while notsent < lowat.
            // Linux checks it before starting each new skb, so a write may
            // overshoot the mark by up to a segment: fill the queue up to the
            // mark rounded up to whole segments (a mark of 1 B still gives
            // full-sized segments, not 1-byte ones).
            Some(lowat) => {
                let unsent = self.unsent_bytes();
                if unsent >= lowat {
                    0
                } else {
                    let mss = u64::from(self.cfg.mss);
                    free.min(lowat.div_ceil(mss) * mss - unsent)
                }
            }
            None => free,
        }
    }

    fn sync_writable(&mut self, ctx: &mut EndpointCtx<'_>) {
        let w = self.is_writable();
        if w && !self.writable_reported {
            ctx.events.push(AppEvent::Writable);
        }
        self.writable_reported = w;
    }

    // ----- shared helpers -------------------------------------------------------

    /// The receiving half's ECN bookkeeping for an arriving non-SYN segment
    /// (`crate::ecn`); may ask for an immediate ACK.
    fn ecn_receive(&mut self, seg: &Segment, ip: Ecn) {
        let duplicate = seg.len > 0 && seg.seq + u64::from(seg.len) <= self.rcv.rcv_nxt();
        if self
            .ecn
            .on_receive(ip, seg.seq, seg.len, seg.flags, duplicate, &mut self.stats)
        {
            self.rcv.request_ack();
        }
    }

    pub(super) fn cc_ctx<'c>(flow: FlowId, mss: u32, ctx: &'c mut EndpointCtx<'_>) -> CcCtx<'c> {
        CcCtx {
            flow,
            mss: u64::from(mss),
            rng: &mut *ctx.rng,
            tracer: &mut *ctx.tracer,
        }
    }

    fn cc_congestion(
        &mut self,
        now: Time,
        ev: l4slab_cc::CongestionEvent,
        ctx: &mut EndpointCtx<'_>,
    ) {
        let mut c = Self::cc_ctx(self.flow, self.cfg.mss, ctx);
        self.cc.on_congestion(now, &ev, &mut c);
    }

    /// One RTT sample from a timestamp echo (RFC 7323 §4.2), fed to RFC 6298.
    fn take_rtt_sample(&mut self, now: Time, ts_ecr: Time, ctx: &mut EndpointCtx<'_>) -> Dur {
        let r = now.saturating_since(ts_ecr);
        self.rtt.sample(r);
        self.stats.rtt_samples += 1;
        ctx.tracer.event(
            now,
            TraceEvent::RttSample {
                flow: self.flow,
                rtt: r,
            },
        );
        r
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn endpoint_can_move_between_threads() {
        fn is_send<T: Send>() {}
        is_send::<super::Endpoint>();
    }
}
