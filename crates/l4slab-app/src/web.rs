//! `web`: a client fetches objects (a page's HTML, images, a download) by
//! request and response, and the app measures each object's completion time.
//!
//! Model: HTTP/1.1 over a persistent connection (RFC 9112 §9.3) with
//! pipelining (§9.3.2): the requesting side writes a request of
//! `request_size` bytes for each object at its time `at`, in order; the
//! responding side answers each request, once it has fully arrived, with
//! the object's bytes, in request order — so a small response waits behind
//! a large one sent earlier on the same connection (head-of-line blocking).
//! An object fetched on a *new* connection has a flow of its own, which the
//! scenario creates (`<flow>.obj<i>`, starting at the object's time, so its
//! completion includes the TCP handshake and a fresh slow start); the
//! summary lists it with the page's other objects (see [`merge_into_page`]).
//!
//! The requesting side is the one that receives the flow's data (the client
//! for `direction = "down"`). Per object: `completion_s` = from `at` (when
//! the user asked for it) to the last response byte delivered in order;
//! `response_s` = from the request being written to the socket to that byte;
//! `ttfb_s` = from `at` to the first response byte.
//!
//! Not modelled: DNS, TLS (one more round trip per new connection, two
//! before TLS 1.3), HTTP headers beyond the fixed request size, server think
//! time, HTTP/2 multiplexing (over QUIC each object is a stream of its own:
//! [`crate::web_quic`]), a browser's limit of six connections per host,
//! closing idle connections.

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::stats::{round6, DurStats};
use l4slab_core::{Dur, Time};

use crate::registry::{AppKind, BuildContext};
use crate::{FlowApp, FlowIo, Role};

/// `objects`: the page; read by the scenario (each may become a flow).
pub const OBJECTS: Param = Param::new(
    "objects",
    Kind::Custom(
        "an array of tables `{ size, at, connection }`: `size` required (> 0), `at` from the page's start (`\"0s\"`), `connection` (the app's)",
    ),
    ParamValue::Unset {
        example: r#"[{ size = "20KB", at = "5s" }]"#,
    },
    "required",
    "the page's objects, at least one, asked for in list order",
);

pub const REQUEST_SIZE: Param = Param::new(
    "request_size",
    Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    ParamValue::Int(500),
    "a choice: a GET with typical headers",
    "bytes of each request",
);

pub const CONNECTION: Param = Param::new(
    "connection",
    Kind::Choice(&["existing", "new"]),
    ParamValue::Choice("existing"),
    "HTTP/1.1 persistent connections (RFC 9112 §9.3)",
    "the objects' default `connection`: `\"existing\"` (the page's) or `\"new\"` (a flow of its own)",
);

/// `app = { kind = "web", ... }` (docs/apps.md#web).
pub const PARAMS: &[Param] = &[OBJECTS, REQUEST_SIZE, CONNECTION];

/// `app = { kind = "web" }` as a scenario resolves it ([`PARAMS`]): the
/// objects one flow's connection fetches.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WebSpec {
    /// [`REQUEST_SIZE`].
    pub request_size: u64,
    /// The objects this flow's connection fetches. A `connection = "new"`
    /// object is moved to a flow of its own, `<flow>.obj<index>`.
    pub objects: Vec<WebObjectSpec>,
    /// Set on a flow made for one `connection = "new"` object: the page
    /// (flow) it belongs to, whose `app_metrics` list it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<WebPage>,
}

impl Default for WebSpec {
    fn default() -> Self {
        WebSpec {
            request_size: l4slab_core::param::FromParam::from_param(REQUEST_SIZE.default),
            objects: Vec::new(),
            page: None,
        }
    }
}

/// `objects` and `connection` are read by the scenario (a page's objects
/// may become flows of their own).
impl l4slab_core::param::Configure for WebSpec {
    fn set(&mut self, name: &str, v: ParamValue) -> bool {
        if name == REQUEST_SIZE.name {
            self.request_size = l4slab_core::param::FromParam::from_param(v);
            return true;
        }
        false
    }
}

impl WebSpec {
    /// The app's config on the flow `flow` that starts at `start`.
    pub fn config(&self, flow: &str, start: Time) -> WebConfig {
        WebConfig {
            request_size: self.request_size,
            // A split-off object's flow starts at its time; `at` counts from the page's start.
            page_start: self.page.as_ref().map_or(start, |p| p.start),
            objects: self
                .objects
                .iter()
                .map(|o| WebObject {
                    index: o.index,
                    size: o.size,
                    at: o.at,
                    new_connection: o.connection == WebConnection::New,
                })
                .collect(),
            flow: flow.to_string(),
        }
    }
}

impl AppKind for WebSpec {
    const NAME: &'static str = "web";
    const WHAT: &'static str = "objects by request and response";
    const EXAMPLE: &'static str =
        r#"app = { kind = "web", objects = [{ size = "20KB", at = "0s" }] }"#;
    const PARAMS: &'static [Param] = PARAMS;

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(Web::new(self.config(cx.flow, cx.start), cx.receiver()))
    }
}

/// One object of a web page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct WebObjectSpec {
    /// Position in the page's `objects` list, as written.
    pub index: u32,
    /// Response bytes.
    pub size: u64,
    /// When the client asks for it, from the page's start (0 s).
    pub at: Dur,
    pub connection: WebConnection,
}

/// Which connection a web object is fetched on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WebConnection {
    /// The page's connection (persistent, requests answered in order).
    Existing,
    /// A new connection, opened when the object is asked for.
    New,
}

impl WebConnection {
    /// From a [`CONNECTION`] value.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "existing" => Some(WebConnection::Existing),
            "new" => Some(WebConnection::New),
            _ => None,
        }
    }
}

/// The page a split-off web flow belongs to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WebPage {
    /// The page's flow name.
    pub flow: String,
    /// The page's start (its flow's start): the objects' `at` count from here.
    pub start: Time,
}

/// One object this flow's connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebObject {
    /// Position in the page's `objects` list, as written.
    pub index: u32,
    /// Response bytes.
    pub size: u64,
    /// When the client asks for it, counted from the page's start.
    pub at: Dur,
    /// Fetched on a connection of its own (this flow was made for it).
    pub new_connection: bool,
}

/// Web parameters (scenario `app = { kind = "web", ... }`).
#[derive(Clone, Debug, PartialEq)]
pub struct WebConfig {
    /// Bytes of each request. Default 500 B.
    pub request_size: u64,
    /// When the page starts (its flow's start); objects' `at` count from here.
    pub page_start: Time,
    /// The objects this flow fetches.
    pub objects: Vec<WebObject>,
    /// The name of the flow carrying them, for the report.
    pub flow: String,
}

#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    requested: Option<Time>,
    first_byte: Option<Time>,
    done: Option<Time>,
}

/// A page's objects in request order and what happened to each: the
/// bookkeeping and the report that every transport's web app shares (TCP:
/// [`Web`]; QUIC: [`crate::web_quic::WebStreams`]). `k` is an object's
/// position in request order.
#[derive(Debug)]
pub(crate) struct Objects {
    cfg: WebConfig,
    outcomes: Vec<Outcome>,
}

impl Objects {
    pub(crate) fn new(mut cfg: WebConfig) -> Self {
        assert!(cfg.request_size > 0, "a request has at least one byte");
        assert!(cfg.objects.iter().all(|o| o.size > 0), "{cfg:?}");
        // Requests go out in time order; ties in list order.
        cfg.objects.sort_by_key(|o| (o.at, o.index));
        Objects {
            outcomes: vec![Outcome::default(); cfg.objects.len()],
            cfg,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.cfg.objects.len()
    }

    pub(crate) fn request_size(&self) -> u64 {
        self.cfg.request_size
    }

    /// Object `k`'s response bytes.
    pub(crate) fn size(&self, k: usize) -> u64 {
        self.cfg.objects[k].size
    }

    /// When the user asks for object `k`.
    pub(crate) fn due(&self, k: usize) -> Time {
        self.cfg.page_start + self.cfg.objects[k].at
    }

    /// Object `k`'s request was handed to the transport at `now`.
    pub(crate) fn requested(&mut self, k: usize, now: Time) {
        self.outcomes[k].requested = Some(now);
    }

    /// Object `k`'s first response byte arrived (the first call counts).
    pub(crate) fn first_byte(&mut self, k: usize, now: Time) {
        self.outcomes[k].first_byte.get_or_insert(now);
    }

    /// Object `k`'s last response byte arrived.
    pub(crate) fn done(&mut self, k: usize, now: Time) {
        self.outcomes[k].done = Some(now);
    }

    /// Append an object of `size` bytes asked for at `now`, for an app that
    /// decides what to fetch as it goes (`video_stream`); returns its `k`.
    pub(crate) fn push(&mut self, size: u64, now: Time) -> usize {
        assert!(size > 0, "an object has at least one byte");
        let at = now.saturating_since(self.cfg.page_start);
        assert!(
            self.cfg.objects.last().is_none_or(|o| o.at <= at),
            "objects are pushed in time order"
        );
        let k = self.len();
        self.cfg.objects.push(WebObject {
            index: u32::try_from(k).expect("fewer than 2^32 objects"),
            size,
            at,
            new_connection: false,
        });
        self.outcomes.push(Outcome::default());
        k
    }

    fn object_report(&self, k: usize) -> Value {
        let o = &self.cfg.objects[k];
        let r = &self.outcomes[k];
        let asked = self.due(k);
        let secs = |d: Dur| round6(d.as_secs_f64());
        json!({
            "index": o.index,
            "flow": self.cfg.flow,
            "connection": if o.new_connection { "new" } else { "existing" },
            "size_bytes": o.size,
            "at_s": secs(o.at),
            "requested": r.requested.is_some(),
            "ttfb_s": r.first_byte.map(|t| secs(t.saturating_since(asked))),
            "response_s": r.done.zip(r.requested).map(|(d, q)| secs(d.saturating_since(q))),
            "completion_s": r.done.map(|t| secs(t.saturating_since(asked))),
        })
    }

    /// The web app's `app_metrics`: the page figures over every object
    /// (see [`summarize`]) and the request size.
    pub(crate) fn report(&self) -> Value {
        let objects = (0..self.len()).map(|k| self.object_report(k)).collect();
        let mut r = summarize(objects);
        r["request_size_bytes"] = self.cfg.request_size.into();
        r
    }
}

#[derive(Debug)]
pub struct Web {
    objects: Objects,
    requester: Role,
    /// Response stream offset just past object `k` (in request order).
    ends: Vec<u64>,
    // The requesting side.
    next_request: usize,
    request_unwritten: u64,
    response_delivered: u64,
    first_bytes_seen: usize,
    completed: usize,
    // The responding side.
    request_received: u64,
    answered: usize,
    response_unwritten: u64,
}

impl Web {
    /// `requester` is the side that receives the responses.
    pub fn new(cfg: WebConfig, requester: Role) -> Self {
        let objects = Objects::new(cfg);
        let ends = (0..objects.len())
            .scan(0u64, |end, k| {
                *end += objects.size(k);
                Some(*end)
            })
            .collect();
        Web {
            objects,
            requester,
            ends,
            next_request: 0,
            request_unwritten: 0,
            response_delivered: 0,
            first_bytes_seen: 0,
            completed: 0,
            request_received: 0,
            answered: 0,
            response_unwritten: 0,
        }
    }

    /// Objects completed so far.
    pub fn completed(&self) -> usize {
        self.completed
    }

    pub(crate) fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Ask for one more object of `size` bytes now (see [`Objects::push`]).
    pub(crate) fn push(&mut self, now: Time, size: u64, io: &mut dyn FlowIo) {
        self.objects.push(size, now);
        self.ends
            .push(self.ends.last().copied().unwrap_or(0) + size);
        self.request(now, io);
    }

    /// Write every request that is due, then wait for the next one.
    fn request(&mut self, now: Time, io: &mut dyn FlowIo) {
        let n = self.objects.len();
        while self.next_request < n && self.objects.due(self.next_request) <= now {
            self.request_unwritten += self.objects.request_size();
            self.objects.requested(self.next_request, now);
            self.next_request += 1;
        }
        write_all(&mut self.request_unwritten, io);
        if self.next_request < n {
            io.wake_at(self.objects.due(self.next_request));
        }
    }

    /// Response bytes arrived at the requester.
    fn on_response(&mut self, now: Time, bytes: u64) {
        self.response_delivered += bytes;
        let n = self.objects.len();
        assert!(
            n > 0 && self.response_delivered <= self.ends[n - 1],
            "web: {} response bytes delivered, {} expected in all",
            self.response_delivered,
            self.ends.last().copied().unwrap_or(0)
        );
        // Object k's bytes are (ends[k-1], ends[k]] of the response stream.
        while self.first_bytes_seen < n {
            let start = self
                .first_bytes_seen
                .checked_sub(1)
                .map_or(0, |k| self.ends[k]);
            if self.response_delivered <= start {
                break;
            }
            self.objects.first_byte(self.first_bytes_seen, now);
            self.first_bytes_seen += 1;
        }
        while self.completed < n && self.response_delivered >= self.ends[self.completed] {
            self.objects.done(self.completed, now);
            self.completed += 1;
        }
    }

    /// Request bytes arrived at the responder: answer each complete request.
    fn on_request(&mut self, bytes: u64, io: &mut dyn FlowIo) {
        self.request_received += bytes;
        let (n, size) = (self.objects.len() as u64, self.objects.request_size());
        assert!(
            self.request_received <= n * size,
            "web: more request bytes than requests"
        );
        let complete = (self.request_received / size) as usize;
        while self.answered < complete {
            self.response_unwritten += self.objects.size(self.answered);
            self.answered += 1;
        }
        write_all(&mut self.response_unwritten, io);
    }
}

/// Write what the socket takes of `*pending`.
fn write_all(pending: &mut u64, io: &mut dyn FlowIo) {
    while *pending > 0 {
        let n = io.write(*pending);
        if n == 0 {
            break;
        }
        *pending -= n;
    }
}

/// The page-level figures from a list of object entries (as
/// [`Web::report`] writes them): the objects in list order, counts,
/// `completion_ms` percentiles over the completed objects, and
/// `page_complete_s` (from the page's start to its last object's last byte,
/// once every object completed).
fn summarize(mut objects: Vec<Value>) -> Value {
    objects.sort_by_key(|o| o["index"].as_u64());
    let mut stats = DurStats::new(1_000, 1_000_000_000);
    let mut page_end: Option<f64> = Some(0.0);
    let (mut requested, mut completed) = (0u64, 0u64);
    for o in &objects {
        requested += u64::from(o["requested"].as_bool() == Some(true));
        match o["completion_s"].as_f64() {
            Some(c) => {
                completed += 1;
                stats.record(Dur::from_secs_f64(c));
                let end = o["at_s"].as_f64().unwrap_or(0.0) + c;
                page_end = page_end.map(|p| p.max(end));
            }
            None => page_end = None,
        }
    }
    json!({
        "objects_total": objects.len(),
        "objects_requested": requested,
        "objects_completed": completed,
        "completion_ms": stats.summary_ms(),
        "page_complete_s": page_end.map(round6),
        "objects": objects,
    })
}

/// Add the objects a flow split off for `connection = "new"` reported
/// (`part`) to its page's report (`page`), and recompute the page's figures.
pub fn merge_into_page(page: &mut Value, part: &Value) {
    let mut objects = page["objects"].as_array().cloned().unwrap_or_default();
    objects.extend(part["objects"].as_array().into_iter().flatten().cloned());
    if let (Some(p), Value::Object(new)) = (page.as_object_mut(), summarize(objects)) {
        p.extend(new);
    }
}

impl FlowApp for Web {
    fn kind(&self) -> &'static str {
        "web"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.request(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.request(now, io);
        }
    }
    fn on_writable(&mut self, _now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.requester {
            write_all(&mut self.request_unwritten, io);
        } else {
            write_all(&mut self.response_unwritten, io);
        }
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.on_response(now, bytes);
        } else {
            self.on_request(bytes, io);
        }
    }
    fn report(&self, _end: Time) -> Value {
        self.objects.report()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    fn obj(index: u32, size: u64, at_ms: u64) -> WebObject {
        WebObject {
            index,
            size,
            at: Dur::from_millis(at_ms),
            new_connection: false,
        }
    }

    fn web(objects: Vec<WebObject>) -> Web {
        Web::new(
            WebConfig {
                request_size: 500,
                page_start: ms(0),
                objects,
                flow: "page".into(),
            },
            Role::Client,
        )
    }

    #[test]
    fn requests_go_out_at_their_times_and_responses_come_back_in_order() {
        let mut w = web(vec![obj(0, 10_000, 0), obj(1, 1_000, 50)]);
        let mut s = Script::new();
        // Connected at 20 ms: the first request (due at 0) goes out at once.
        s.connected(&mut w, ms(20), Role::Client);
        assert_eq!(s.written(Role::Client), 500);
        assert_eq!(s.wake(Role::Client), Some(ms(50)));
        s.connected(&mut w, ms(30), Role::Server);
        // The request arrives in two pieces; the response is written once all 500 B are in.
        s.deliver(&mut w, ms(30), Role::Server, 499);
        assert_eq!(s.written(Role::Server), 0);
        s.deliver(&mut w, ms(31), Role::Server, 1);
        assert_eq!(s.written(Role::Server), 10_000);
        s.timer(&mut w, ms(50), Role::Client);
        assert_eq!(s.written(Role::Client), 1_000);
        s.deliver(&mut w, ms(70), Role::Server, 500);
        assert_eq!(s.written(Role::Server), 11_000);
        // Responses arrive in order: the small object behind the large one.
        s.deliver(&mut w, ms(80), Role::Client, 9_000);
        assert_eq!(w.completed(), 0);
        s.deliver(&mut w, ms(90), Role::Client, 1_500);
        assert_eq!(w.completed(), 1);
        s.deliver(&mut w, ms(100), Role::Client, 500);
        assert_eq!(w.completed(), 2);
        let r = w.report(ms(200));
        let o = &r["objects"];
        // Object 0: asked at 0, first byte 80 ms, done 90 ms; request written at 20 ms.
        assert_eq!(o[0]["ttfb_s"], 0.08);
        assert_eq!(o[0]["completion_s"], 0.09);
        assert_eq!(o[0]["response_s"], 0.07);
        // Object 1: asked at 50 ms, its first byte came with the 1,500 B at 90 ms, done at 100 ms.
        assert_eq!(o[1]["ttfb_s"], 0.04);
        assert_eq!(o[1]["completion_s"], 0.05);
        assert_eq!(r["objects_completed"], 2);
        assert_eq!(r["page_complete_s"], 0.1);
        assert_eq!(r["completion_ms"]["max"], 90.0);
    }

    #[test]
    fn objects_are_requested_in_time_order_whatever_the_list_order() {
        let mut w = web(vec![obj(0, 100, 30), obj(1, 200, 10)]);
        let mut s = Script::new();
        s.connected(&mut w, ms(0), Role::Client);
        assert_eq!(s.written(Role::Client), 0);
        assert_eq!(s.wake(Role::Client), Some(ms(10)));
        s.timer(&mut w, ms(10), Role::Client);
        s.timer(&mut w, ms(30), Role::Client);
        s.deliver(&mut w, ms(40), Role::Server, 1_000);
        // Object 1 (200 B) is answered first.
        s.deliver(&mut w, ms(50), Role::Client, 200);
        let r = w.report(ms(60));
        assert_eq!(r["objects"][1]["completion_s"], 0.04);
        assert!(r["objects"][0]["completion_s"].is_null());
        assert_eq!(r["objects_completed"], 1);
        assert!(r["page_complete_s"].is_null());
    }

    #[test]
    fn a_full_send_buffer_delays_the_rest_of_a_response() {
        let mut w = web(vec![obj(0, 10_000, 0)]);
        let mut s = Script::new();
        s.sock(Role::Server).room = 4_000;
        s.connected(&mut w, ms(0), Role::Client);
        s.deliver(&mut w, ms(10), Role::Server, 500);
        assert_eq!(s.written(Role::Server), 4_000);
        s.writable(&mut w, ms(20), Role::Server, 100_000);
        assert_eq!(s.written(Role::Server), 10_000);
    }

    #[test]
    fn objects_of_new_connections_merge_into_the_page() {
        let mut page = web(vec![obj(0, 1_000, 0)]).report(ms(10));
        let part = Web::new(
            WebConfig {
                request_size: 500,
                page_start: ms(0),
                objects: vec![WebObject {
                    new_connection: true,
                    ..obj(1, 100, 5)
                }],
                flow: "page.obj1".into(),
            },
            Role::Client,
        );
        merge_into_page(&mut page, &part.report(ms(10)));
        assert_eq!(page["objects_total"], 2);
        assert_eq!(page["objects"][1]["flow"], "page.obj1");
        assert_eq!(page["objects"][1]["connection"], "new");
        assert_eq!(page["request_size_bytes"], 500);
    }

    #[test]
    #[should_panic(expected = "response bytes")]
    fn more_response_bytes_than_objects_is_a_bug() {
        let mut w = web(vec![obj(0, 10, 0)]);
        let mut s = Script::new();
        s.deliver(&mut w, ms(1), Role::Client, 11);
    }
}
