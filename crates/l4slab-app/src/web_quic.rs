//! `web` over l4slab's QUIC-style transport (`[flows.transport] protocol =
//! "quic"`): each object on the page's connection is one bidirectional
//! stream of the flow's one connection, as in HTTP/3 (RFC 9114 §4.1: "A
//! client sends an HTTP request on a request stream ... the server sends
//! zero or more interim HTTP responses ... followed by a single final HTTP
//! response" on the same stream).
//!
//! The requesting side opens a stream when an object is due and writes
//! `request_size` bytes and FIN; the responding side answers once the
//! request's FIN arrived, on that stream, with the object's bytes and FIN.
//! The connection sends round-robin over the streams with data
//! (`l4slab_quic::connection::streams`), so a small object asked for while
//! a large one is in flight is not blocked behind it: no head-of-line
//! blocking across objects, only what loss on one stream costs that stream.
//!
//! Objects with `connection = "new"` are flows of their own as over TCP
//! (a fresh connection and handshake each). Per-object figures and the page
//! report are the TCP app's ([`crate::web::Objects`]): `requested` is when
//! the object's stream was opened and its request written.
//!
//! Not modelled: QPACK and HTTP/3 frames (the request and response are the
//! bytes counted), priorities (RFC 9218; the connection's round-robin is
//! what LiteSpeed does for equal urgency), server push. The peer's stream
//! limit is fixed at the handshake (no MAX_STREAMS), so the simulator sizes
//! it to the page's object count.

use serde_json::Value;

use l4slab_core::Time;
use l4slab_quic::{Connection, Event, StreamId};

use crate::quic::QuicStreams;
use crate::web::{Objects, WebConfig};
use crate::{FlowIo, Role};

/// Bytes still to write on a stream, then FIN.
#[derive(Clone, Copy, Debug)]
struct Unsent {
    id: StreamId,
    left: u64,
}

/// Write what `conn` takes of each entry; FIN and drop the finished ones.
fn write_unsent(conn: &mut Connection, unsent: &mut Vec<Unsent>) {
    unsent.retain_mut(|u| {
        if u.left > 0 {
            // A closed connection accepts nothing; the entry stays unsent.
            u.left -= conn.write(u.id, u.left).unwrap_or(0);
        }
        if u.left > 0 {
            return true;
        }
        conn.finish(u.id)
            .expect("a stream with unsent bytes is open and not finished");
        false
    });
}

/// Both ends of a page fetched over one QUIC connection (see the module
/// documentation).
#[derive(Debug)]
pub struct WebStreams {
    objects: Objects,
    requester: Role,
    // The requesting side.
    next_request: usize,
    requests: Vec<Unsent>,
    /// Response bytes of object `k` delivered in order.
    received: Vec<u64>,
    delivered: u64,
    completed: usize,
    // The responding side.
    /// Request bytes of object `k` that arrived.
    request_bytes: Vec<u64>,
    responses: Vec<Unsent>,
}

impl WebStreams {
    /// `requester` is the side that receives the responses.
    pub fn new(cfg: WebConfig, requester: Role) -> Self {
        let objects = Objects::new(cfg);
        let n = objects.len();
        WebStreams {
            objects,
            requester,
            next_request: 0,
            requests: Vec::new(),
            received: vec![0; n],
            delivered: 0,
            completed: 0,
            request_bytes: vec![0; n],
            responses: Vec::new(),
        }
    }

    /// Objects completed so far.
    pub fn completed(&self) -> usize {
        self.completed
    }

    pub(crate) fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Ask for one more object of `size` bytes now (see
    /// [`Objects::push`]); its stream opens on the next [`QuicStreams::drive`].
    pub(crate) fn push(&mut self, now: Time, size: u64) {
        self.objects.push(size, now);
        self.received.push(0);
        self.request_bytes.push(0);
    }

    /// The object a request stream carries: the requester opens one stream
    /// per object, in request order, so the stream's index is `k`.
    fn object(&self, id: StreamId) -> usize {
        assert_eq!(
            id.is_client_initiated(),
            self.requester == Role::Client,
            "web: {id} was not opened by the requesting side"
        );
        let k = id.index() as usize;
        assert!(k < self.objects.len(), "web: {id} carries no object");
        k
    }

    /// Open a stream for every object that is due (once the connection
    /// allows it) and write the requests; wait for the next one.
    fn request(&mut self, now: Time, conn: &mut Connection, io: &mut dyn FlowIo) {
        let n = self.objects.len();
        while self.next_request < n && self.objects.due(self.next_request) <= now {
            // Before the handshake (without a ticket) the peer's limits are
            // unknown; the next datagram brings this back.
            let Ok(id) = conn.open_stream() else {
                break;
            };
            let k = self.next_request;
            assert_eq!(id.index() as usize, k, "streams open in request order");
            self.objects.requested(k, now);
            self.requests.push(Unsent {
                id,
                left: self.objects.request_size(),
            });
            self.next_request += 1;
        }
        write_unsent(conn, &mut self.requests);
        // An object already due waits for the connection, not for a timer.
        if self.next_request < n && self.objects.due(self.next_request) > now {
            io.wake_at(self.objects.due(self.next_request));
        }
    }
}

impl QuicStreams for WebStreams {
    fn kind(&self) -> &'static str {
        "web"
    }

    fn drive(&mut self, now: Time, side: Role, conn: &mut Connection, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.request(now, conn, io);
        } else {
            write_unsent(conn, &mut self.responses);
        }
    }

    fn on_event(&mut self, now: Time, side: Role, ev: Event) {
        match (side == self.requester, ev) {
            (
                true,
                Event::StreamData {
                    id,
                    new_in_order_bytes: b,
                },
            ) if b > 0 => {
                let k = self.object(id);
                self.objects.first_byte(k, now);
                self.received[k] += b;
                self.delivered += b;
                assert!(
                    self.received[k] <= self.objects.size(k),
                    "web: {} response bytes on {id}, object of {}",
                    self.received[k],
                    self.objects.size(k)
                );
            }
            (true, Event::StreamFinished(id)) => {
                let k = self.object(id);
                assert_eq!(
                    self.received[k],
                    self.objects.size(k),
                    "web: {id} ended early"
                );
                self.objects.done(k, now);
                self.completed += 1;
            }
            (
                false,
                Event::StreamData {
                    id,
                    new_in_order_bytes: b,
                },
            ) => {
                let k = self.object(id);
                self.request_bytes[k] += b;
                assert!(
                    self.request_bytes[k] <= self.objects.request_size(),
                    "web: more request bytes than a request on {id}"
                );
            }
            // The request is whole: answer on its stream.
            (false, Event::StreamFinished(id)) => {
                let k = self.object(id);
                assert_eq!(self.request_bytes[k], self.objects.request_size());
                self.responses.push(Unsent {
                    id,
                    left: self.objects.size(k),
                });
            }
            _ => {}
        }
    }

    fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Like the TCP web app, a page has no flow completion (its objects do).
    fn completion(&self) -> Option<Time> {
        None
    }

    fn report(&self, _start: Time, _end: Time) -> Value {
        self.objects.report()
    }
}

#[cfg(test)]
mod tests {
    use l4slab_core::Dur;

    use super::*;
    use crate::quic::tests::{cfg, run};
    use crate::quic::QuicFlow;
    use crate::web::WebObject;
    use crate::FlowApp;

    fn page(objects: &[(u64, u64)], requester: Role) -> QuicFlow<WebStreams> {
        let objects = objects
            .iter()
            .enumerate()
            .map(|(i, &(size, at_ms))| WebObject {
                index: i as u32,
                size,
                at: Dur::from_millis(at_ms),
                new_connection: false,
            })
            .collect();
        let web = WebStreams::new(
            WebConfig {
                request_size: 500,
                page_start: Time::ZERO,
                objects,
                flow: "page".into(),
            },
            requester,
        );
        let responder = match requester {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        QuicFlow::with_streams(web, cfg(), responder)
    }

    #[test]
    fn a_small_object_is_not_blocked_behind_a_large_one() {
        // 2 MB at 0 s, 1 KB at 0.2 s; 20 Mbit/s, 20 ms RTT. The 2 MB take
        // 0.8 s of serialization, so the small one finishing near 0.2 s
        // (request half an RTT, response sharing the link round-robin, a
        // queue of at most one cwnd) means it did not wait for them.
        let mut f = page(&[(2_000_000, 0), (1_000, 200)], Role::Client);
        let until = Time::from_secs(10);
        run(&mut f, until, Dur::from_millis(10), 20_000_000, 0);
        assert_eq!(f.streams().completed(), 2);
        assert_eq!(f.delivered(), 2_001_000);
        let r = f.report(until);
        let o = &r["objects"];
        let small = o[1]["completion_s"].as_f64().unwrap();
        let large = o[0]["completion_s"].as_f64().unwrap();
        assert!(large > 0.8, "{r}");
        assert!(small < 0.5 && small < large - 0.2, "{r}");
        assert_eq!(r["objects_completed"], 2);
        assert_eq!(r["transport"], "quic");
        assert!(f.completion().is_none());
    }

    #[test]
    fn an_upload_page_is_requested_by_the_server_and_survives_loss() {
        let mut f = page(&[(300_000, 0), (20_000, 50), (5_000, 50)], Role::Server);
        let until = Time::from_secs(20);
        run(&mut f, until, Dur::from_millis(10), 20_000_000, 29);
        assert_eq!(f.streams().completed(), 3);
        assert_eq!(f.delivered(), 325_000);
        let r = f.report(until);
        assert!(r["client"]["packets_lost"].as_u64().unwrap() > 0, "{r}");
        for o in r["objects"].as_array().unwrap() {
            assert_eq!(o["requested"], true);
            let (ttfb, done) = (
                o["ttfb_s"].as_f64().unwrap(),
                o["completion_s"].as_f64().unwrap(),
            );
            assert!(ttfb <= done, "{o}");
        }
    }
}
