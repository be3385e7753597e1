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
    /// What it carries now, and whether that request is written yet.
    load: Option<(Load, bool)>,
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
            c.load = Some((load, false));
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
            if !matches!(c.load, Some((_, false))) {
                continue;
            }
            match c.state {
                ConnState::Open if j == me => self.send(j, now, io),
                ConnState::Open => self.requests.push(FlowRequest::Wake {
                    flow: c.flow,
                    side: self.requester,
                    at: now,
                }),
                ConnState::Closed => {
                    c.state = ConnState::Opening;
                    self.requests.push(FlowRequest::Open { flow: c.flow });
                }
                ConnState::Opening => {}
            }
        }
    }

    /// Write connection `j`'s request (`io` is its socket).
    fn send(&mut self, j: usize, now: Time, io: &mut dyn FlowIo) {
        let page = self.pages.current();
        let c = &mut self.conns[j];
        let Some((load, written)) = &mut c.load else {
            return;
        };
        if *written {
            return;
        }
        *written = true;
        let size = match *load {
            Load::Html => page.html,
            Load::Object(k) => page.objects[k],
        };
        c.web.push(now, size, io);
    }

    /// Draw the next page and give its HTML to the first connection.
    fn start_page(&mut self, me: usize, now: Time, io: &mut dyn FlowIo) {
        self.pages.start(now);
        self.step.advance(Step::Html(()));
        self.assign(true);
        self.kick(me, now, io);
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
            self.start_page(me, now, io);
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
                Step::Reading { until } if now >= until => self.start_page(me, now, io),
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
