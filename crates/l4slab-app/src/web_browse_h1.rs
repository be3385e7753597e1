//! `web_browse` with `connections = K`: the browsing person of
//! [`crate::web_browse`] behind a browser that speaks HTTP/1.1 — the HTML,
//! then the page's embedded objects over up to `K` parallel persistent
//! connections to the server, each carrying one request at a time.
//!
//! * One request at a time per connection: RFC 9112 §9.3.2 allows
//!   pipelining, but browsers do not use it (Chromium's design page "HTTP
//!   Pipelining": "The option to enable pipelining has been removed from
//!   Chrome"; Firefox shipped it disabled). A connection asks for its next
//!   object when the last byte of the previous response has arrived.
//! * At most `K` connections per host: Chromium's `g_max_sockets_per_group`
//!   (`net/socket/client_socket_pool_manager.cc`) and Firefox's
//!   `network.http.max-persistent-connections-per-server` are both 6.
//! * Connections open when needed, as a browser's socket pool opens them:
//!   connection 0 (the flow `<session>.0`) at the flow's start — page 1
//!   starts when it is established, as the multiplexed connection's does —
//!   and connection `j` the first time an object is given to it, so the
//!   first page that needs it waits for its handshake.
//! * Persistent (RFC 9112 §9.3): a connection stays open for the rest of
//!   the run, idle during reading times (its TCP state, e.g. the congestion
//!   window after idle, is what the transport makes of the idle period).
//!   Servers close idle connections after a keep-alive timeout (nginx's
//!   `keepalive_timeout`: 75 s); not modelled.
//! * Assignment: the HTML goes to connection 0 (every connection is idle at
//!   a page's start); after the parsing time, the objects in request order
//!   each go to the first idle connection in index order (a closed one
//!   counts as idle and is opened: opened connections have the lower
//!   indices, so an idle open one is always preferred); the rest wait, and
//!   each connection that finishes a response takes the next waiting
//!   object. An object stays with the connection it was given (a browser
//!   may hand a request to whichever socket becomes ready first; not
//!   modelled).
//!
//! Each connection is a flow of its own (`<session>.<j>`, the scenario
//! makes them), and each flow's app is a [`Connection`]; they share one
//! browser (the pages, the step, the connections' states), so a
//! connection's event can give another connection work: it asks the
//! backend to open that connection or to call it back now
//! ([`FlowRequest`]). Each connection's byte stream is `web`'s
//! request/response model ([`crate::web::Web`], one object pushed per
//! request). The pages are drawn from the stream `web_browse/<session>`, so
//! the same seed and name give the same pages as the multiplexed browser.
//! The page figures and the per-connection counts are reported by
//! connection 0 (`<session>.0`); the other flows report none.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

use l4slab_core::stats::round6;
use l4slab_core::{Dur, Time};

use crate::web::{Web, WebConfig};
use crate::web_browse::{Pages, Step, WebBrowseConfig};
use crate::{FlowApp, FlowIo, FlowRequest, Role, SampleSink};

/// What a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    Html,
    /// The current page's embedded object `k`.
    Object(usize),
}

/// Where a connection's request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    /// Given, not yet acted on.
    Given,
    /// Its connection was asked to call back (or to open) to write it.
    Called,
    Written,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnState {
    Closed,
    /// Asked to open; not established yet.
    Opening,
    Open,
}

/// One connection of the pool.
#[derive(Debug)]
struct Conn {
    /// Its flow's index in the scenario.
    flow: usize,
    name: String,
    state: ConnState,
    opened: Option<Time>,
    /// Its byte stream: one object pushed per request.
    web: Web,
    /// Responses completed on it.
    done: usize,
    /// What it carries now, and where its request is.
    load: Option<(Load, Request)>,
}

/// The browser all of a session's connections share.
#[derive(Debug)]
struct Browser {
    pages: Pages,
    requester: Role,
    step: Step<()>,
    conns: Vec<Conn>,
    /// The next of the page's objects to give a connection.
    next: usize,
    /// The page's objects not yet complete.
    left: usize,
    /// The connection whose wake-up ends the parsing or reading time.
    timer: usize,
    /// For the backend ([`FlowApp::take_flow_requests`]).
    requests: Vec<FlowRequest>,
}

impl Browser {
    /// Give waiting loads to idle connections, the first idle one first;
    /// whether any was given.
    fn assign(&mut self, html: bool) -> bool {
        let n = self.pages.current().objects.len();
        let mut given = false;
        for c in &mut self.conns {
            if c.load.is_some() {
                continue;
            }
            let load = if html {
                Load::Html
            } else if self.next < n {
                self.next += 1;
                Load::Object(self.next - 1)
            } else {
                break;
            };
            c.load = Some((load, Request::Given));
            given = true;
            if html {
                break;
            }
        }
        given
    }

    /// Start what was given: on connection `me` (whose socket `io` is) at
    /// once; an open one is called back now, a closed one opened.
    fn kick(&mut self, me: usize, now: Time, io: &mut dyn FlowIo) {
        for j in 0..self.conns.len() {
            let c = &mut self.conns[j];
            let Some((_, request)) = &mut c.load else {
                continue;
            };
            if j == me && c.state == ConnState::Open && *request != Request::Written {
                self.send(j, now, io);
                continue;
            }
            if *request != Request::Given {
                continue;
            }
            *request = Request::Called;
            match c.state {
                ConnState::Open => self.requests.push(FlowRequest::Wake {
                    flow: c.flow,
                    side: self.requester,
                    at: now,
                }),
                ConnState::Closed => {
                    c.state = ConnState::Opening;
                    self.requests.push(FlowRequest::Open { flow: c.flow });
                }
                // Asked to open already: it writes when established.
                ConnState::Opening => {}
            }
        }
    }

    /// Write connection `j`'s request (`io` is its socket).
    fn send(&mut self, j: usize, now: Time, io: &mut dyn FlowIo) {
        let page = self.pages.current();
        let c = &mut self.conns[j];
        let Some((load, request)) = &mut c.load else {
            return;
        };
        if *request == Request::Written {
            return;
        }
        *request = Request::Written;
        let size = match *load {
            Load::Html => page.html,
            Load::Object(k) => page.objects[k],
        };
        c.web.push(now, size, io);
    }

    /// Draw the next page and give its HTML to the first connection (the
    /// caller kicks).
    fn start_page(&mut self, now: Time) {
        self.pages.start(now);
        self.step.advance(Step::Html(()));
        self.assign(true);
    }

    /// The page's last byte arrived on `me`: the user reads it.
    fn page_loaded(&mut self, me: usize, now: Time, io: &mut dyn FlowIo) {
        let until = self.pages.loaded(now);
        self.timer = me;
        io.wake_at(until);
        self.step.advance(Step::Reading { until });
    }

    fn on_connected(&mut self, me: usize, now: Time, io: &mut dyn FlowIo) {
        let c = &mut self.conns[me];
        c.state = ConnState::Open;
        c.opened = Some(now);
        if matches!(self.step, Step::Connecting) {
            self.start_page(now);
        }
        self.kick(me, now, io);
    }

    /// A wake-up at `me`'s requester: the end of parsing or reading if `me`
    /// holds the page's timer (an early call waits on), and work given to it.
    fn on_timer(&mut self, me: usize, now: Time, io: &mut dyn FlowIo) {
        if me == self.timer {
            match self.step {
                Step::Parsing { until } if now >= until => {
                    self.step.advance(Step::Objects(()));
                    self.next = 0;
                    self.left = self.pages.current().objects.len();
                    self.assign(false);
                }
                Step::Reading { until } if now >= until => self.start_page(now),
                Step::Parsing { until } | Step::Reading { until } => io.wake_at(until),
                _ => {}
            }
        }
        self.kick(me, now, io);
    }

    /// Response bytes arrived at `me`'s requester.
    fn on_response(&mut self, me: usize, now: Time, bytes: u64, io: &mut dyn FlowIo) {
        let side = self.requester;
        let c = &mut self.conns[me];
        c.web.on_receive(now, side, bytes, io);
        let Some((load, _)) = c.load else {
            panic!(
                "web_browse: {bytes} response bytes on an idle connection {}",
                c.name
            );
        };
        if load == Load::Html && bytes > 0 {
            self.pages.first_byte(now);
        }
        if c.web.completed() == c.done {
            return;
        }
        c.done += 1;
        c.load = None;
        match load {
            Load::Html if self.pages.current().objects.is_empty() => {
                self.page_loaded(me, now, io);
            }
            Load::Html => {
                // 3GPP2 HTTP model: the embedded objects are asked for
                // after the parsing time that follows the main object.
                let until = now + self.pages.current().parsing;
                self.timer = me;
                io.wake_at(until);
                self.step.advance(Step::Parsing { until });
            }
            Load::Object(_) => {
                self.left -= 1;
                if self.left == 0 {
                    self.page_loaded(me, now, io);
                } else if self.assign(false) {
                    self.kick(me, now, io);
                }
            }
        }
    }

    /// The connections' figures for the report.
    fn connections(&self) -> Value {
        let conns: Vec<Value> = self
            .conns
            .iter()
            .map(|c| {
                json!({
                    "flow": c.name,
                    "opened_s": c.opened.map(|t| round6(t.saturating_since(Time::ZERO).as_secs_f64())),
                    "responses": c.done,
                })
            })
            .collect();
        conns.into()
    }
}

/// An HTTP/1.1 browsing session: builds its connections' apps, which share
/// one browser.
#[derive(Debug)]
pub struct Session {
    browser: Arc<Mutex<Browser>>,
}

impl Session {
    /// The session `name` of `cfg` (`connections = K`) on a run of `seed`;
    /// `requester` is the side that receives the responses. Each of its
    /// `K` connections is then built with [`Session::connection`].
    pub fn new(cfg: &WebBrowseConfig, seed: u64, name: &str, requester: Role) -> Self {
        let k = match cfg.connections {
            crate::web_browse::Connections::Http1(k) => k as usize,
            crate::web_browse::Connections::Multiplexed => {
                panic!("web_browse_h1: a multiplexed browser has one connection")
            }
        };
        let conns = (0..k)
            .map(|j| Conn {
                flow: usize::MAX,
                name: format!("{name}.{j}"),
                state: ConnState::Closed,
                opened: None,
                web: Web::new(
                    WebConfig {
                        request_size: cfg.request_size,
                        page_start: Time::ZERO,
                        objects: Vec::new(),
                        flow: String::new(),
                    },
                    requester,
                ),
                done: 0,
                load: None,
            })
            .collect();
        let browser = Browser {
            pages: cfg.pages(seed, name),
            requester,
            step: Step::Connecting,
            conns,
            next: 0,
            left: 0,
            timer: 0,
            requests: Vec::new(),
        };
        Session {
            browser: Arc::new(Mutex::new(browser)),
        }
    }

    /// Connection `index`'s app, on the scenario's flow number `flow`
    /// named `name`.
    pub fn connection(&self, index: u32, flow: usize, name: &str) -> Box<dyn FlowApp> {
        let me = index as usize;
        {
            let mut b = self.browser.lock().expect("one thread");
            let c = &mut b.conns[me];
            c.flow = flow;
            c.name = name.to_string();
        }
        Box::new(Connection {
            me,
            browser: Arc::clone(&self.browser),
        })
    }
}

/// Both ends of one connection of an HTTP/1.1 browsing session.
#[derive(Debug)]
pub struct Connection {
    me: usize,
    browser: Arc<Mutex<Browser>>,
}

impl Connection {
    fn browser(&self) -> MutexGuard<'_, Browser> {
        // The backend calls one app at a time: never contended, never poisoned.
        self.browser.lock().expect("one thread")
    }
}

impl FlowApp for Connection {
    fn kind(&self) -> &'static str {
        "web_browse"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let mut b = self.browser();
        if side == b.requester {
            b.on_connected(self.me, now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        let mut b = self.browser();
        if side == b.requester {
            b.on_timer(self.me, now, io);
        }
    }
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        self.browser().conns[self.me].web.on_writable(now, side, io);
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, io: &mut dyn FlowIo) {
        let mut b = self.browser();
        if side == b.requester {
            b.on_response(self.me, now, bytes, io);
        } else {
            b.conns[self.me].web.on_receive(now, side, bytes, io);
        }
    }
    fn report(&self, _end: Time) -> Value {
        if self.me != 0 {
            return Value::Null;
        }
        let b = self.browser();
        let mut r = b.pages.report();
        r["connections"] = b.connections();
        r
    }
    fn sample(&mut self, _now: Time, _interval: Dur, out: &mut SampleSink<'_>) {
        if self.me == 0 {
            self.browser().pages.sample(out);
        }
    }
    fn random_draws(&self) -> u64 {
        if self.me == 0 {
            self.browser().pages.draws()
        } else {
            0
        }
    }
    fn take_flow_requests(&mut self, out: &mut dyn FnMut(FlowRequest)) {
        for r in self.browser().requests.drain(..) {
            out(r);
        }
    }
    fn opens_on_request(&self) -> bool {
        self.me != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;
    use crate::web_browse::Connections;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    /// Pages of a 1000 B HTML and 12 objects of 1000 B, no parsing time.
    fn cfg(k: u32) -> WebBrowseConfig {
        WebBrowseConfig {
            html_size_min: 1000,
            html_size_max: 1000,
            object_size_min: 1000,
            object_size_max: 1000,
            // A shape near 0 puts X at the cap: 14 - 2 = 12 objects.
            objects_shape: 0.0001,
            objects_scale: 2,
            objects_cap: 14,
            parsing_time: Dur::ZERO,
            connections: Connections::Http1(k),
            ..WebBrowseConfig::default()
        }
    }

    /// A session's `k` connections (flows 10, 11, ...), each on its own sockets.
    fn session(k: u32) -> (Vec<Box<dyn FlowApp>>, Vec<Script>) {
        let s = Session::new(&cfg(k), 1, "b", Role::Client);
        let apps = (0..k)
            .map(|j| s.connection(j, 10 + j as usize, &format!("b.{j}")))
            .collect();
        (apps, (0..k).map(|_| Script::new()).collect())
    }

    fn requests(app: &mut Box<dyn FlowApp>) -> Vec<FlowRequest> {
        let mut v = Vec::new();
        app.take_flow_requests(&mut |r| v.push(r));
        v
    }

    /// Requests written on each connection, in requests of 350 B.
    fn asked(s: &[Script]) -> Vec<u64> {
        s.iter().map(|s| s.written(Role::Client) / 350).collect()
    }

    /// The server answers connection `j`'s latest request and its response
    /// arrives whole at `now`.
    fn answer(apps: &mut [Box<dyn FlowApp>], s: &mut [Script], j: usize, now: Time) {
        let before = s[j].written(Role::Server);
        s[j].deliver(apps[j].as_mut(), now, Role::Server, 350);
        let response = s[j].written(Role::Server) - before;
        assert_eq!(response, 1000, "connection {j}: one request answered");
        s[j].deliver(apps[j].as_mut(), now, Role::Client, response);
    }

    #[test]
    fn objects_go_to_the_first_idle_connection_one_request_at_a_time() {
        let (mut apps, mut s) = session(6);
        assert!(!apps[0].opens_on_request() && apps[1].opens_on_request());
        // Connection 0 up: page 1's HTML on it.
        s[0].connected(apps[0].as_mut(), ms(10), Role::Client);
        assert_eq!(asked(&s), [1, 0, 0, 0, 0, 0]);
        answer(&mut apps, &mut s, 0, ms(30));
        // No parsing time: the objects are due now, at connection 0's wake-up.
        assert_eq!(s[0].wake(Role::Client), Some(ms(30)));
        s[0].timer(apps[0].as_mut(), ms(30), Role::Client);
        // Object 0 on connection 0 (open, idle); objects 1-5 each open a
        // connection; objects 6-11 wait.
        assert_eq!(asked(&s), [2, 0, 0, 0, 0, 0]);
        let want: Vec<FlowRequest> = (11..16).map(|flow| FlowRequest::Open { flow }).collect();
        assert_eq!(requests(&mut apps[0]), want);
        assert!(requests(&mut apps[3]).is_empty(), "drained once");
        for j in 1..6 {
            s[j].connected(apps[j].as_mut(), ms(50), Role::Client);
        }
        assert_eq!(asked(&s), [2, 1, 1, 1, 1, 1]);
        // Connection 0 finishes first: it takes object 6, then object 7.
        answer(&mut apps, &mut s, 0, ms(50));
        answer(&mut apps, &mut s, 0, ms(70));
        assert_eq!(asked(&s), [4, 1, 1, 1, 1, 1]);
        // The others take 8-11 as they finish; the last has nothing left.
        for j in 1..6 {
            answer(&mut apps, &mut s, j, ms(70));
        }
        assert_eq!(asked(&s), [4, 2, 2, 2, 2, 1]);
        for j in 0..5 {
            answer(&mut apps, &mut s, j, ms(90));
        }
        let r = apps[0].report(ms(90));
        assert_eq!(r["pages_loaded"], 1);
        assert_eq!(r["pages"][0]["load_s"], 0.08);
        assert_eq!(r["connections"][5]["responses"], 1);
        assert_eq!(r["connections"][0]["opened_s"], 0.01);
        assert!(apps[1].report(ms(90)).is_null(), "connection 0 reports");
        // Page 2, after the reading time on the connection that loaded page 1:
        // its HTML on connection 0, called back now.
        let read = s[4].wake(Role::Client).expect("reading");
        s[4].timer(apps[4].as_mut(), read, Role::Client);
        let wake = FlowRequest::Wake {
            flow: 10,
            side: Role::Client,
            at: read,
        };
        assert_eq!(requests(&mut apps[4]), [wake]);
        s[0].timer(apps[0].as_mut(), read, Role::Client);
        assert_eq!(asked(&s), [5, 2, 2, 2, 2, 1]);
        let t = read + Dur::from_millis(20);
        answer(&mut apps, &mut s, 0, t);
        s[0].timer(apps[0].as_mut(), t, Role::Client);
        // All six open: two waves of six, the five others called back now.
        let woken: Vec<FlowRequest> = (11..16)
            .map(|flow| FlowRequest::Wake {
                flow,
                side: Role::Client,
                at: t,
            })
            .collect();
        assert_eq!(requests(&mut apps[0]), woken);
        for j in 1..6 {
            s[j].timer(apps[j].as_mut(), t, Role::Client);
        }
        assert_eq!(asked(&s), [6, 3, 3, 3, 3, 2]);
        let t2 = t + Dur::from_millis(20);
        for j in 0..6 {
            answer(&mut apps, &mut s, j, t2);
        }
        assert_eq!(asked(&s), [7, 4, 4, 4, 4, 3]);
        let t3 = t2 + Dur::from_millis(20);
        for j in 0..6 {
            answer(&mut apps, &mut s, j, t3);
        }
        let r = apps[0].report(t3);
        assert_eq!(r["pages_loaded"], 2);
        assert_eq!(r["pages"][1]["load_s"], 0.06);
    }

    #[test]
    fn one_connection_asks_for_one_object_at_a_time() {
        let (mut apps, mut s) = session(1);
        s[0].connected(apps[0].as_mut(), ms(0), Role::Client);
        answer(&mut apps, &mut s, 0, ms(20));
        s[0].timer(apps[0].as_mut(), ms(20), Role::Client);
        for i in 0..12u64 {
            assert_eq!(asked(&s), [2 + i], "object {i} asked alone");
            answer(&mut apps, &mut s, 0, ms(40 + 20 * i));
        }
        assert!(requests(&mut apps[0]).is_empty());
        assert_eq!(apps[0].report(ms(300))["pages"][0]["load_s"], 0.26);
    }
}
