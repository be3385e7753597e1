//! TCP Fast Open timelines (RFC 7413 §4.2; `docs/models/transport.md`, "TCP
//! Fast Open"): the cookie request, data in the SYN with a cookie, and the
//! fallbacks (server off, invalid cookie, lost SYN or SYN/ACK), over a 10 ms
//! one-way wire (20 ms RTT). A request of 500 B and a response of 5,000 B
//! (within the initial window), as a web fetch on a new connection.

mod common;

use common::cc::Fixed;
use common::{dms, ms, Dir, Net, Writes};
use l4slab_core::Time;
use l4slab_tcp::app::{App, AppIo};
use l4slab_tcp::{
    AppEvent, ConnState, FastOpenCache, FastOpenCookie, FastOpenOption, FastOpenOutcome, Flags,
    TransportConfig,
};

const REQUEST: u64 = 500;
const RESPONSE: u64 = 5_000;

/// Server app: once the whole request is in, write the response.
#[derive(Debug, Default)]
struct Responder {
    got: u64,
    answered: bool,
}

impl App for Responder {
    fn kind(&self) -> &'static str {
        "responder"
    }
    fn start(&mut self, _now: Time, _io: &mut dyn AppIo) {}
    fn on_receive(&mut self, _now: Time, bytes: u64, io: &mut dyn AppIo) {
        self.got += bytes;
        assert!(self.got <= REQUEST, "request bytes delivered twice");
        if self.got == REQUEST && !self.answered {
            self.answered = true;
            assert_eq!(io.write(RESPONSE), RESPONSE);
        }
    }
}

fn cfg(fastopen: bool) -> TransportConfig {
    TransportConfig {
        fastopen,
        ..TransportConfig::default()
    }
}

/// A client writing the request at connect time, a responding server.
fn net(client_fastopen: bool, server_fastopen: bool, cache: FastOpenCache) -> Net {
    let app = Box::new(Writes::new(&[(ms(0), REQUEST)], false));
    let mut n = Net::new(
        cfg(client_fastopen),
        Box::new(Fixed::segments(10, 1448)),
        app,
        cfg(server_fastopen),
        Box::new(Fixed::segments(10, 1448)),
        dms(10),
    );
    n.set_server_app(Box::new(Responder::default()));
    n.fastopen = cache;
    n
}

/// Client data segments other than the SYN: `(time, seq, retransmission)`.
fn data_after_syn(n: &Net) -> Vec<(Time, u64, bool)> {
    n.sent(Dir::C2S)
        .filter(|s| s.is_data() && !s.seg.flags.contains(Flags::SYN))
        .map(|s| (s.t, s.seg.seq, s.seg.retransmission))
        .collect()
}

/// When the client had the whole response.
fn response_done(n: &Net) -> Option<Time> {
    let mut total = 0;
    n.client.events.iter().find_map(|(t, e)| match e {
        AppEvent::Delivered { bytes } => {
            total += bytes;
            (total == RESPONSE).then_some(*t)
        }
        _ => None,
    })
}

/// Nothing lost, nothing duplicated: each side got exactly the other's
/// bytes, and the sequence accounting closed on both.
fn check_exchange(n: &Net) {
    assert_eq!(n.server.delivered(), REQUEST);
    assert_eq!(n.client.delivered(), RESPONSE);
    assert_eq!(n.client.ep.stats().bytes_acked, REQUEST);
    assert_eq!(n.server.ep.stats().bytes_acked, RESPONSE);
    assert_eq!(n.client.ep.bytes_in_flight(), 0);
    assert_eq!(n.server.ep.bytes_in_flight(), 0);
    assert_eq!(n.client.ep.unsent_bytes(), 0);
    assert_eq!(n.client.ep.state(), ConnState::Established);
    assert_eq!(n.server.ep.state(), ConnState::Established);
    assert_eq!(n.client.count(AppEvent::Connected), 1);
    assert_eq!(n.server.count(AppEvent::Connected), 1);
}

/// The first connection with Fast Open on both sides: a cookie request and
/// its cookie (RFC 7413 §4.2.1); the request goes after the handshake.
fn first_connection() -> Net {
    let mut n = net(true, true, FastOpenCache::default());
    n.connect();
    n.run_until(ms(500));
    n
}

#[test]
fn the_first_syn_asks_for_a_cookie_and_the_syn_ack_brings_it() {
    let n = first_connection();
    let syn = &n.log[0];
    assert_eq!(syn.seg.flags, Flags::SYN);
    assert_eq!(syn.seg.fastopen, Some(FastOpenOption::Request));
    assert_eq!(
        (syn.seg.len, syn.wire_len),
        (0, 64),
        "60 B SYN + 4 B empty option"
    );
    let issued = n.fastopen.issued();
    let syn_ack = &n.log[1];
    assert_eq!(syn_ack.seg.flags, Flags::SYN | Flags::ACK);
    assert_eq!(syn_ack.seg.ack, 1);
    assert_eq!(syn_ack.seg.fastopen, Some(FastOpenOption::Cookie(issued)));
    assert_eq!(
        syn_ack.wire_len, 72,
        "60 B SYN/ACK + 12 B option with an 8-byte cookie"
    );
    // RFC 7413 §4.1.3: the client caches it, for the next connection.
    assert_eq!(n.fastopen.cookie(), Some(issued));
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::CookieReceived
    );
    assert_eq!(
        n.server.ep.fastopen_outcome(),
        FastOpenOutcome::CookieIssued
    );
    // A normal handshake otherwise: the request leaves with the third ACK's
    // timing (20 ms), the response is in at 40 ms — two round trips.
    let data: Vec<_> = data_after_syn(&n);
    assert_eq!(data, [(ms(20), 1, false)]);
    assert_eq!(response_done(&n), Some(ms(40)));
    assert_eq!(n.client.time_of(AppEvent::Connected), Some(ms(20)));
    // The third ACK and the data carry no option.
    assert!(n.log[2..].iter().all(|s| s.seg.fastopen.is_none()));
    check_exchange(&n);
}

#[test]
fn with_a_cookie_the_syn_carries_the_request_and_the_response_comes_one_rtt_sooner() {
    let first = first_connection();
    let mut n = net(true, true, first.fastopen.clone());
    n.connect();
    // connect() returned at once (Linux TCP_FASTOPEN_CONNECT): the app wrote
    // its request, which left in the SYN with the cookie.
    assert_eq!(n.client.time_of(AppEvent::Connected), Some(ms(0)));
    n.run_until(ms(500));
    let syn = &n.log[0];
    let cookie = n.fastopen.issued();
    assert_eq!((syn.t, syn.seg.flags), (ms(0), Flags::SYN));
    assert_eq!(syn.seg.fastopen, Some(FastOpenOption::Cookie(cookie)));
    assert_eq!(syn.seg.len as u64, REQUEST);
    // Sequence space: the SYN is 0, its data 1..=500.
    assert_eq!((syn.seg.seq, syn.seg.seq_len()), (0, 1 + REQUEST));
    assert_eq!(syn.wire_len, 60 + 12 + 500);
    // RFC 7413 §4.2.2: the server delivers the data before the handshake
    // completes (Connected and Delivered at 10 ms; the client's ACK of the
    // SYN/ACK arrives at 30 ms), and the SYN/ACK acknowledges it.
    assert_eq!(n.server.time_of(AppEvent::Connected), Some(ms(10)));
    assert_eq!(
        n.server.time_of(AppEvent::Delivered { bytes: REQUEST }),
        Some(ms(10))
    );
    let syn_ack = &n.log[1];
    assert_eq!((syn_ack.t, syn_ack.seg.ack), (ms(10), 1 + REQUEST));
    assert_eq!(syn_ack.seg.fastopen, None, "a valid cookie is not echoed");
    // The response leaves right behind the SYN/ACK, in SYN-RECEIVED.
    let resp: Vec<_> = n
        .sent(Dir::S2C)
        .filter(|s| s.is_data())
        .map(|s| (s.t, s.seg.seq, s.seg.len))
        .collect();
    assert_eq!(
        resp,
        [
            (ms(10), 1, 1448),
            (ms(10), 1449, 1448),
            (ms(10), 2897, 1448),
            (ms(10), 4345, 656)
        ]
    );
    // One RTT for the whole exchange instead of two.
    assert_eq!(response_done(&n), Some(ms(20)));
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::SynDataAcked
    );
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::Accepted);
    let st = n.client.ep.stats();
    assert_eq!(
        (
            st.syn_data_bytes_sent,
            st.bytes_sent,
            st.bytes_retransmitted
        ),
        (500, 500, 0)
    );
    // No data segment from the client after the SYN: only ACKs.
    assert!(data_after_syn(&n).is_empty());
    assert_eq!(n.server.time_of(AppEvent::Connected), Some(ms(10)));
    check_exchange(&n);
    assert_eq!(n.client.ep.next_timer(), None);
    assert_eq!(n.server.ep.next_timer(), None);
}

/// The fallback (RFC 7413 §4.2.2): the SYN carries cookie and data, the
/// SYN/ACK acknowledges only the SYN, and the client sends the data again
/// with its first segment after the handshake.
fn check_fallback(n: &Net) {
    let syn = &n.log[0];
    assert_eq!(syn.seg.len as u64, REQUEST);
    let syn_ack = &n.log[1];
    assert_eq!((syn_ack.t, syn_ack.seg.ack), (ms(10), 1));
    assert!(n.server.time_of(AppEvent::Connected) >= Some(ms(30)));
    // The data again at 20 ms, marked as a retransmission, carrying the ACK
    // of the SYN/ACK (no separate pure ACK).
    assert_eq!(data_after_syn(n), [(ms(20), 1, true)]);
    let third: Vec<_> = n
        .sent(Dir::C2S)
        .skip(1)
        .take(1)
        .map(|s| (s.seg.len, s.seg.ack))
        .collect();
    assert_eq!(third, [(500, 1)]);
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::SynDataNotAcked
    );
    let st = n.client.ep.stats();
    assert_eq!(
        (
            st.syn_data_bytes_sent,
            st.bytes_sent,
            st.bytes_retransmitted
        ),
        (500, 1000, 500)
    );
    // The same 40 ms as without Fast Open.
    assert_eq!(response_done(n), Some(ms(40)));
    check_exchange(n);
}

#[test]
fn a_server_without_fast_open_falls_back_and_nothing_is_lost_or_duplicated() {
    let mut cache = FastOpenCache::default();
    cache.set_cookie(Some(cache.issued()));
    let mut n = net(true, false, cache);
    n.connect();
    n.run_until(ms(500));
    assert_eq!(n.log[1].seg.fastopen, None);
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::NotUsed);
    check_fallback(&n);
    // The cached cookie stays (Linux tcp_fastopen_cache_set: only a cookie replaces it).
    assert_eq!(n.fastopen.cookie(), Some(n.fastopen.issued()));
}

#[test]
fn an_invalid_cookie_is_answered_with_a_valid_one_and_the_data_goes_after_the_handshake() {
    let mut cache = FastOpenCache::default();
    let stale = FastOpenCookie([0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1]);
    cache.set_cookie(Some(stale));
    let mut n = net(true, true, cache);
    n.connect();
    n.run_until(ms(500));
    assert_eq!(n.log[0].seg.fastopen, Some(FastOpenOption::Cookie(stale)));
    let valid = n.fastopen.issued();
    assert_eq!(n.log[1].seg.fastopen, Some(FastOpenOption::Cookie(valid)));
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::Rejected);
    assert_eq!(n.fastopen.cookie(), Some(valid));
    check_fallback(&n);
}

#[test]
fn without_fast_open_on_the_client_the_syn_is_plain() {
    let mut cache = FastOpenCache::default();
    cache.set_cookie(Some(cache.issued()));
    let mut n = net(false, true, cache);
    n.connect();
    n.run_until(ms(500));
    assert_eq!((n.log[0].seg.fastopen, n.log[0].wire_len), (None, 60));
    assert_eq!(n.log[1].seg.fastopen, None);
    assert_eq!(n.client.ep.fastopen_outcome(), FastOpenOutcome::NotUsed);
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::NotUsed);
    assert_eq!(response_done(&n), Some(ms(40)));
    check_exchange(&n);
}

#[test]
fn a_lost_syn_with_data_is_retried_plain_and_the_data_follows_the_handshake() {
    let mut cache = FastOpenCache::default();
    cache.set_cookie(Some(cache.issued()));
    let mut n = net(true, true, cache);
    let mut first = true;
    n.set_drop(move |dir, seg, _| {
        let drop = dir == Dir::C2S && seg.flags.contains(Flags::SYN) && first;
        first &= !drop;
        drop
    });
    n.connect();
    n.run_until(ms(3000));
    // Linux tcp_send_syn_data: "Exclude Fast Open option for SYN retries".
    let syns: Vec<_> = n
        .sent(Dir::C2S)
        .filter(|s| s.seg.flags.contains(Flags::SYN))
        .map(|s| (s.t, s.seg.len, s.seg.fastopen, s.seg.retransmission))
        .collect();
    let cookie = Some(FastOpenOption::Cookie(n.fastopen.issued()));
    assert_eq!(
        syns,
        [(ms(0), 500, cookie, false), (ms(1000), 0, None, true)]
    );
    assert_eq!(data_after_syn(&n), [(ms(1020), 1, true)]);
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::SynDataNotAcked
    );
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::NotUsed);
    check_exchange(&n);
}

#[test]
fn a_lost_syn_ack_after_accepted_data_still_delivers_everything_once() {
    let mut cache = FastOpenCache::default();
    cache.set_cookie(Some(cache.issued()));
    let mut n = net(true, true, cache);
    let mut first = true;
    // Lose the first SYN/ACK: the client, still in SYN-SENT, drops the
    // response segments sent behind it.
    n.set_drop(move |dir, seg, _| {
        let drop = dir == Dir::S2C && seg.flags.contains(Flags::SYN) && first;
        first &= !drop;
        drop
    });
    n.connect();
    n.run_until(ms(10_000));
    // The server took the data once, at 10 ms; the retransmitted SYN/ACK
    // acknowledges it, and the client accepts that (SEG.ACK =< SND.NXT).
    assert_eq!(
        n.server.time_of(AppEvent::Delivered { bytes: REQUEST }),
        Some(ms(10))
    );
    let syn_acks: Vec<_> = n
        .sent(Dir::S2C)
        .filter(|s| s.seg.flags.contains(Flags::SYN))
        .map(|s| s.seg.ack)
        .collect();
    assert!(
        syn_acks.len() >= 2 && syn_acks.iter().all(|&a| a == 1 + REQUEST),
        "{syn_acks:?}"
    );
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::SynDataAcked
    );
    assert_eq!(n.client.ep.stats().bytes_retransmitted, 0);
    assert!(
        data_after_syn(&n).is_empty(),
        "the request was never sent again"
    );
    check_exchange(&n);
}

#[test]
fn a_deferred_connect_nobody_writes_to_sends_its_syn_in_the_same_instant() {
    let mut cache = FastOpenCache::default();
    cache.set_cookie(Some(cache.issued()));
    let mut n = Net::new(
        cfg(true),
        Box::new(Fixed::segments(10, 1448)),
        Box::new(Writes::new(&[(ms(50), REQUEST)], false)),
        cfg(true),
        Box::new(Fixed::segments(10, 1448)),
        dms(10),
    );
    n.set_server_app(Box::new(Responder::default()));
    n.fastopen = cache;
    n.connect();
    assert!(n.log.is_empty(), "deferred until the app has run");
    n.run_until(ms(500));
    let syn = &n.log[0];
    assert_eq!((syn.t, syn.seg.len), (ms(0), 0));
    assert!(matches!(syn.seg.fastopen, Some(FastOpenOption::Cookie(_))));
    // The server accepted the data-less SYN; the request went at 50 ms.
    assert_eq!(n.server.ep.fastopen_outcome(), FastOpenOutcome::Accepted);
    assert_eq!(
        n.client.ep.fastopen_outcome(),
        FastOpenOutcome::SynDataAcked
    );
    assert_eq!(data_after_syn(&n), [(ms(50), 1, false)]);
    check_exchange(&n);
}
