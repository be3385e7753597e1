//! `web_browse`: a person browsing — page after page, each read for a while
//! before the next is asked for — and the page load times they wait.
//!
//! A page ([`crate::web_browse_model`]: the 3GPP2 HTTP traffic model) is a
//! main object (the HTML) and `Nd` embedded objects. The timeline of page
//! `i`, on one persistent connection:
//!
//! 1. at the page's start the requesting side asks for the HTML;
//! 2. when the HTML's last byte has arrived, the browser parses it for the
//!    parsing time `Tp`, then asks for all `Nd` embedded objects at once;
//! 3. when the last of them has arrived the page is loaded; the user reads
//!    it for the reading time `Dpc` — think time starts when the page
//!    completes — and then starts page `i + 1`.
//!
//! Transport (the default, `connections = "multiplexed"`): HTTP/2-style,
//! one multiplexed TCP connection (RFC 9113 §9.1:
//! "Clients SHOULD NOT open more than one HTTP/2 connection to a given host
//! and port pair"), opened at the flow's start and kept: page 1 starts when
//! it is established. Every request of a step goes out at once; the server
//! answers in request order, each response whole before the next — what
//! RFC 9218 §10 asks of a server for non-incremental responses of the same
//! urgency (the default: urgency 3, `incremental = ?0`, §4): "serve them one
//! by one ... in the order of their stream ID". On one TCP byte stream that
//! is exactly `web`'s request/response model ([`crate::web::Web`]), which
//! each step reuses: the HTML step and the objects step are each a `Web` of
//! their objects. The page's figures do not depend on the order rule: its
//! load time is its last byte's arrival on the shared byte stream either way.
//!
//! Per page: `ttfb_s` (from the page's start to the HTML's first byte),
//! `load_s` (from the start to the last object's last byte, parsing time
//! included, as a browser's load event includes it), `bytes`; the summary
//! has `pages_started`, `pages_loaded`, `page_load_ms` (p50, p95, max,
//! mean; nearest-rank percentiles over the loaded pages,
//! `l4slab_core::stats::nearest_rank`), `first_byte_ms` (the same over the
//! pages whose first byte came) and the list of pages (the series of page
//! load times); `series.parquet` gets
//! `page_load_ms`, the mean of the pages loaded in each interval.
//!
//! Draws come from the flow's own stream (`web_browse/<flow>` of the run's
//! seed), one page at a time in a fixed order ([`PageModel::draw`]): page
//! `i` of a seed is the same page whatever the network did, so runs that
//! differ only in the queue compare the same pages.
//!
//! With `connections = K` the same person browses over up to `K` parallel
//! HTTP/1.1 connections instead, one request at a time each
//! ([`crate::web_browse_h1`]); the pages ([`Pages`]) and the step
//! ([`Step`]) are this file's. Over the QUIC-style transport the multiplexed
//! mode runs with its byte stream on one QUIC stream each way
//! ([`crate::quic_stream_app`]: HTTP/2-style framing over QUIC, not HTTP/3's
//! stream per object); `connections = K` does not run there.
//! Also not modelled: DNS, TLS, HTTP headers beyond the fixed request size,
//! server think time, caching, several servers.

use serde::Serialize;
use serde_json::{json, Value};

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::stats::{nearest_rank_percentile, round6};
use l4slab_core::{Dur, SimRng, Time};

use crate::registry::{AppKind, BuildContext};
use crate::web::{Web, WebConfig, WebObject};
use crate::web_browse_model::{Page, PageModel, TruncLognormal, TruncPareto};
use crate::{FlowApp, FlowIo, Role, SampleSink};

/// Where the model's defaults come from ([`crate::web_browse_model`]).
const MODEL: &str = "3GPP2 C.R1002 HTTP traffic model (IEEE 802.16m EMD §10.1)";

/// The largest object size the model allows: 2 MB.
const MODEL_MAX: u64 = 2_000_000;

const fn ln_param(name: &'static str, v: f64, doc: &'static str) -> Param {
    Param::new(
        name,
        Kind::Number { above: 0.0 },
        ParamValue::Num(v),
        MODEL,
        doc,
    )
}

const fn size_param(name: &'static str, v: u64, doc: &'static str) -> Param {
    Param::new(
        name,
        Kind::Size {
            min: 1,
            max: u64::MAX,
        },
        ParamValue::Int(v as i64),
        MODEL,
        doc,
    )
}

pub const HTML_SIZE_MU: Param = ln_param(
    "html_size_mu",
    8.37,
    "μ of the main object's (HTML's) lognormal size, in ln(bytes) (median e^μ = 4.3 kB)",
);
pub const HTML_SIZE_SIGMA: Param = ln_param(
    "html_size_sigma",
    1.37,
    "σ of the main object's lognormal size, in ln(bytes)",
);
pub const HTML_SIZE_MIN: Param = size_param(
    "html_size_min",
    100,
    "the main object's size is truncated to at least this",
);
pub const HTML_SIZE_MAX: Param = size_param(
    "html_size_max",
    MODEL_MAX,
    "... and at most this (at least `html_size_min`)",
);
pub const OBJECT_SIZE_MU: Param = ln_param(
    "object_size_mu",
    6.17,
    "μ of an embedded object's lognormal size, in ln(bytes) (median 478 B)",
);
pub const OBJECT_SIZE_SIGMA: Param = ln_param(
    "object_size_sigma",
    2.36,
    "σ of an embedded object's lognormal size, in ln(bytes)",
);
pub const OBJECT_SIZE_MIN: Param = size_param(
    "object_size_min",
    50,
    "an embedded object's size is truncated to at least this",
);
pub const OBJECT_SIZE_MAX: Param = size_param(
    "object_size_max",
    MODEL_MAX,
    "... and at most this (at least `object_size_min`)",
);
pub const OBJECTS_SHAPE: Param = Param::new(
    "objects_shape",
    Kind::Number { above: 0.0 },
    ParamValue::Num(1.1),
    MODEL,
    "α of the truncated Pareto `X` whose `round(X) − objects_scale` is the page's embedded object count",
);
pub const OBJECTS_SCALE: Param = Param::new(
    "objects_scale",
    Kind::Int { min: 1, max: 1_000 },
    ParamValue::Int(2),
    MODEL,
    "k, the least `X` (subtracted from it: a page may have no embedded object)",
);
pub const OBJECTS_CAP: Param = Param::new(
    "objects_cap",
    Kind::Int { min: 1, max: 1_000 },
    ParamValue::Int(55),
    MODEL,
    "m, where `X` is cut (at least `objects_scale`): at most `m − k` embedded objects",
);
pub const PARSING_TIME: Param = Param::new(
    "parsing_time",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_millis(130)),
    MODEL,
    "mean of the exponential time from the HTML's last byte to asking for the embedded objects",
);
pub const READING_TIME: Param = Param::new(
    "reading_time",
    Kind::Duration { zero_ok: true },
    ParamValue::Dur(Dur::from_secs(30)),
    MODEL,
    "mean of the exponential think time from a page's last byte to the next page",
);
pub const REQUEST_SIZE: Param = Param::new(
    "request_size",
    Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    ParamValue::Int(350),
    "ns-3 `ThreeGppHttpVariables` (3GPP HTTP model): 350 B",
    "bytes of each request",
);

/// Most HTTP/1.1 connections one browsing person may open: Firefox clamps
/// `network.http.max-persistent-connections-per-server` to 1..=255
/// (`nsHttpHandler::PrefsChanged`); Chromium and Firefox default to 6.
pub const MAX_CONNECTIONS: u32 = 255;

/// `connections`: read by the scenario (a name or a count; an HTTP/1.1
/// session becomes one flow per connection).
pub const CONNECTIONS: Param = Param::new(
    "connections",
    Kind::Custom("`\"multiplexed\"` or an integer 1..=255"),
    ParamValue::Choice("multiplexed"),
    "RFC 9113 §9.1: one HTTP/2 connection per host; HTTP/1.1 browsers: 6 (Chromium `g_max_sockets_per_group`, Firefox `network.http.max-persistent-connections-per-server`)",
    "`\"multiplexed\"`: one HTTP/2-style connection, a step's requests at once; `K`: up to K persistent HTTP/1.1 connections, each one request at a time (flows `<name>.0` .. `<name>.<K-1>`)",
);

/// `app = { kind = "web_browse", ... }` (docs/apps.md#web_browse).
pub const PARAMS: &[Param] = &[
    HTML_SIZE_MU,
    HTML_SIZE_SIGMA,
    HTML_SIZE_MIN,
    HTML_SIZE_MAX,
    OBJECT_SIZE_MU,
    OBJECT_SIZE_SIGMA,
    OBJECT_SIZE_MIN,
    OBJECT_SIZE_MAX,
    OBJECTS_SHAPE,
    OBJECTS_SCALE,
    OBJECTS_CAP,
    PARSING_TIME,
    READING_TIME,
    REQUEST_SIZE,
    CONNECTIONS,
];

/// How the browser fetches a page's objects ([`CONNECTIONS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connections {
    /// One HTTP/2-style connection carrying every request of a step at once.
    Multiplexed,
    /// Up to this many persistent HTTP/1.1 connections, each one request at
    /// a time ([`crate::web_browse_h1`]).
    Http1(u32),
}

impl Connections {
    pub fn is_multiplexed(&self) -> bool {
        *self == Connections::Multiplexed
    }
}

/// As written in a scenario: `"multiplexed"` or the count.
impl Serialize for Connections {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Connections::Multiplexed => s.serialize_str("multiplexed"),
            Connections::Http1(k) => s.serialize_u32(*k),
        }
    }
}

/// Which connection of an HTTP/1.1 browsing session a flow is (set on
/// each flow the scenario made of one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionConnection {
    /// The session's name: the scenario flow's (its flows are `<session>.<j>`).
    pub session: String,
    /// This connection's index, `0 .. connections`.
    pub index: u32,
}

/// Browsing parameters (scenario `app = { kind = "web_browse", ... }`;
/// [`PARAMS`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WebBrowseConfig {
    pub html_size_mu: f64,
    pub html_size_sigma: f64,
    pub html_size_min: u64,
    pub html_size_max: u64,
    pub object_size_mu: f64,
    pub object_size_sigma: f64,
    pub object_size_min: u64,
    pub object_size_max: u64,
    pub objects_shape: f64,
    pub objects_scale: u32,
    pub objects_cap: u32,
    pub parsing_time: Dur,
    pub reading_time: Dur,
    pub request_size: u64,
    /// [`CONNECTIONS`] (left out of the resolved scenario when multiplexed,
    /// the default, as before the key existed).
    #[serde(skip_serializing_if = "Connections::is_multiplexed")]
    pub connections: Connections,
    /// Set on each flow the scenario made of an HTTP/1.1 session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<SessionConnection>,
}

l4slab_core::param_config!(WebBrowseConfig {
    html_size_mu = HTML_SIZE_MU,
    html_size_sigma = HTML_SIZE_SIGMA,
    html_size_min = HTML_SIZE_MIN,
    html_size_max = HTML_SIZE_MAX,
    object_size_mu = OBJECT_SIZE_MU,
    object_size_sigma = OBJECT_SIZE_SIGMA,
    object_size_min = OBJECT_SIZE_MIN,
    object_size_max = OBJECT_SIZE_MAX,
    objects_shape = OBJECTS_SHAPE,
    objects_scale = OBJECTS_SCALE,
    objects_cap = OBJECTS_CAP,
    parsing_time = PARSING_TIME,
    reading_time = READING_TIME,
    request_size = REQUEST_SIZE,
} + {
    connections: Connections::Multiplexed,
    connection: None,
});

impl WebBrowseConfig {
    /// Values each within its range but not together: a truncation range
    /// whose minimum is above its maximum, a Pareto cut below its scale.
    /// The two parameters (the lower bound first) and why; `None` when the
    /// model can be sampled.
    pub fn conflict(&self) -> Option<(Param, Param, String)> {
        if self.html_size_min > self.html_size_max {
            return Some((
                HTML_SIZE_MIN,
                HTML_SIZE_MAX,
                format!(
                    "html_size_max ({} B) is below html_size_min ({} B)",
                    self.html_size_max, self.html_size_min
                ),
            ));
        }
        if self.object_size_min > self.object_size_max {
            return Some((
                OBJECT_SIZE_MIN,
                OBJECT_SIZE_MAX,
                format!(
                    "object_size_max ({} B) is below object_size_min ({} B)",
                    self.object_size_max, self.object_size_min
                ),
            ));
        }
        if self.objects_cap < self.objects_scale {
            return Some((
                OBJECTS_SCALE,
                OBJECTS_CAP,
                format!(
                    "objects_cap ({}) is below objects_scale ({}): the Pareto is cut below its least value",
                    self.objects_cap, self.objects_scale
                ),
            ));
        }
        None
    }

    /// The page model these parameters describe.
    pub fn model(&self) -> PageModel {
        PageModel {
            html: TruncLognormal {
                mu: self.html_size_mu,
                sigma: self.html_size_sigma,
                min: self.html_size_min,
                max: self.html_size_max,
            },
            object: TruncLognormal {
                mu: self.object_size_mu,
                sigma: self.object_size_sigma,
                min: self.object_size_min,
                max: self.object_size_max,
            },
            count: TruncPareto {
                shape: self.objects_shape,
                scale: self.objects_scale,
                cap: self.objects_cap,
            },
            parsing_mean: self.parsing_time,
            reading_mean: self.reading_time,
        }
    }

    /// The browsing person of the flow (or session) `flow`: its pages come
    /// from the stream `web_browse/<flow>` of the run's `seed`.
    pub(crate) fn pages(&self, seed: u64, flow: &str) -> Pages {
        Pages::new(
            self.clone(),
            SimRng::derive(seed, &format!("web_browse/{flow}")),
            flow,
        )
    }
}

impl AppKind for WebBrowseConfig {
    const NAME: &'static str = "web_browse";
    const WHAT: &'static str = "a person browsing: pages (HTML, then its objects) and think times";
    const EXAMPLE: &'static str = r#"app = { kind = "web_browse", reading_time = "10s" }"#;
    const PARAMS: &'static [Param] = PARAMS;

    /// The multiplexed browser. An HTTP/1.1 session's connections share one
    /// browser, so they are built together
    /// ([`crate::web_browse_h1::Session::connections`]).
    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        assert!(
            self.connections.is_multiplexed(),
            "web_browse over HTTP/1.1 connections is built by web_browse_h1::Session"
        );
        Box::new(WebBrowse {
            pages: self.pages(cx.seed, cx.flow),
            requester: cx.receiver(),
            step: Step::Connecting,
        })
    }
}

/// Where the browsing person is; `X` is what a transport keeps while a
/// step's responses arrive. Changed only by [`Step::advance`].
#[derive(Debug)]
pub(crate) enum Step<X> {
    /// Before the (first) connection is established.
    Connecting,
    /// The HTML's request is out; its response is arriving.
    Html(X),
    /// The HTML arrived; the objects are asked for at `until`.
    Parsing { until: Time },
    /// The embedded objects' requests are out.
    Objects(X),
    /// The page is loaded; the next starts at `until`.
    Reading { until: Time },
}

impl<X: core::fmt::Debug> Step<X> {
    /// The one place the step changes: legal edges only.
    pub(crate) fn advance(&mut self, next: Step<X>) {
        let legal = matches!(
            (&*self, &next),
            (Step::Connecting | Step::Reading { .. }, Step::Html(_))
                | (Step::Html(_), Step::Parsing { .. } | Step::Reading { .. })
                | (Step::Parsing { .. }, Step::Objects(_))
                | (Step::Objects(_), Step::Reading { .. })
        );
        assert!(legal, "web_browse: {self:?} -> {next:?}");
        *self = next;
    }
}

/// One page as it went.
#[derive(Clone, Debug)]
struct PageLog {
    start: Time,
    page: Page,
    first_byte: Option<Time>,
    loaded: Option<Time>,
}

/// The browsing person: the pages they asked for, when each started, its
/// first byte and its load, and the report — what every transport shares.
#[derive(Debug)]
pub(crate) struct Pages {
    cfg: WebBrowseConfig,
    model: PageModel,
    rng: SimRng,
    flow: String,
    log: Vec<PageLog>,
    /// Pages loaded since the last sample: the sum of their load times, and how many.
    interval: (Dur, u32),
}

impl Pages {
    /// `rng`: the stream the pages are drawn from.
    pub(crate) fn new(cfg: WebBrowseConfig, rng: SimRng, flow: &str) -> Self {
        assert!(cfg.conflict().is_none(), "{cfg:?}");
        Pages {
            model: cfg.model(),
            cfg,
            rng,
            flow: flow.to_string(),
            log: Vec::new(),
            interval: (Dur::ZERO, 0),
        }
    }

    /// Draw the next page, started at `now`.
    pub(crate) fn start(&mut self, now: Time) -> &Page {
        let page = self.model.draw(&mut self.rng);
        self.log.push(PageLog {
            start: now,
            page,
            first_byte: None,
            loaded: None,
        });
        self.current()
    }

    /// The page under way.
    pub(crate) fn current(&self) -> &Page {
        &self.log.last().expect("a page is under way").page
    }

    /// A byte of the current page's HTML arrived (the first call counts).
    pub(crate) fn first_byte(&mut self, now: Time) {
        let p = self.log.last_mut().expect("a page is under way");
        p.first_byte.get_or_insert(now);
    }

    /// The current page's last byte arrived: when the user's reading ends
    /// (think time starts when the page completes).
    pub(crate) fn loaded(&mut self, now: Time) -> Time {
        let p = self.log.last_mut().expect("a page is under way");
        p.loaded = Some(now);
        let load = now.saturating_since(p.start);
        self.interval.0 += load;
        self.interval.1 += 1;
        now + p.page.reading
    }

    pub(crate) fn loaded_count(&self) -> usize {
        self.log.iter().filter(|p| p.loaded.is_some()).count()
    }

    pub(crate) fn draws(&self) -> u64 {
        self.rng.draws()
    }

    /// `{p50, p95, max, mean}` of the pages' times from their start to
    /// `at(page)`, in ms, over the pages that have one; `null` for none.
    fn page_ms(&self, at: impl Fn(&PageLog) -> Option<Time>) -> Value {
        let mut ms: Vec<f64> = self
            .log
            .iter()
            .filter_map(|p| at(p).map(|t| t.saturating_since(p.start).as_millis_f64()))
            .collect();
        if ms.is_empty() {
            return Value::Null;
        }
        ms.sort_by(f64::total_cmp);
        json!({
            "p50": round6(nearest_rank_percentile(&ms, 50)),
            "p95": round6(nearest_rank_percentile(&ms, 95)),
            "max": round6(ms[ms.len() - 1]),
            "mean": round6(ms.iter().sum::<f64>() / ms.len() as f64),
        })
    }

    /// The app's `app_metrics` (docs/apps.md#web_browse).
    pub(crate) fn report(&self) -> Value {
        let secs = |d: Dur| round6(d.as_secs_f64());
        let pages: Vec<Value> = self
            .log
            .iter()
            .map(|p| {
                json!({
                    "start_s": secs(p.start.saturating_since(Time::ZERO)),
                    "html_bytes": p.page.html,
                    "objects": p.page.objects.len(),
                    "bytes": p.page.bytes(),
                    "ttfb_s": p.first_byte.map(|t| secs(t.saturating_since(p.start))),
                    "load_s": p.loaded.map(|t| secs(t.saturating_since(p.start))),
                })
            })
            .collect();
        let loaded: Vec<&PageLog> = self.log.iter().filter(|p| p.loaded.is_some()).collect();
        json!({
            "pages_started": self.log.len(),
            "pages_loaded": loaded.len(),
            "page_load_ms": self.page_ms(|p| p.loaded),
            "first_byte_ms": self.page_ms(|p| p.first_byte),
            "bytes_loaded": loaded.iter().map(|p| p.page.bytes()).sum::<u64>(),
            "request_size_bytes": self.cfg.request_size,
            "pages": pages,
        })
    }

    /// The interval's `page_load_ms`: the mean of the pages loaded in it.
    pub(crate) fn sample(&mut self, out: &mut SampleSink<'_>) {
        let (sum, n) = core::mem::replace(&mut self.interval, (Dur::ZERO, 0));
        if n > 0 {
            out("page_load_ms", sum.as_millis_f64() / f64::from(n));
        }
    }

    /// `sizes` as a `web` exchange on the flow `flow`, all asked for at `now`.
    pub(crate) fn exchange(&self, sizes: &[u64], now: Time, flow: &str, requester: Role) -> Web {
        let objects = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| WebObject {
                index: i as u32,
                size,
                at: Dur::ZERO,
                new_connection: false,
            })
            .collect();
        let cfg = WebConfig {
            request_size: self.cfg.request_size,
            page_start: now,
            objects,
            flow: flow.to_string(),
        };
        Web::new(cfg, requester)
    }
}

/// Both ends of a browsing session over one multiplexed connection (see
/// the module documentation).
#[derive(Debug)]
pub struct WebBrowse {
    pages: Pages,
    requester: Role,
    step: Step<Web>,
}

impl WebBrowse {
    /// `requester` is the side that receives the responses; `rng` the
    /// flow's stream the pages are drawn from.
    pub fn new(cfg: WebBrowseConfig, requester: Role, rng: SimRng, flow: &str) -> Self {
        WebBrowse {
            pages: Pages::new(cfg, rng, flow),
            requester,
            step: Step::Connecting,
        }
    }

    /// Pages loaded so far.
    pub fn pages_loaded(&self) -> usize {
        self.pages.loaded_count()
    }

    /// The numbers drawn from the flow's stream so far.
    pub fn draws(&self) -> u64 {
        self.pages.draws()
    }

    /// A step's objects as a `web` exchange asked for at `now`, all at once.
    fn exchange(&self, sizes: &[u64], now: Time) -> Web {
        let flow = self.pages.flow.as_str();
        self.pages.exchange(sizes, now, flow, self.requester)
    }

    /// Draw the next page and ask for its HTML.
    fn start_page(&mut self, now: Time, io: &mut dyn FlowIo) {
        let html = self.pages.start(now).html;
        let mut web = self.exchange(&[html], now);
        // Due at `now`: the request is written at once.
        web.on_timer(now, self.requester, io);
        self.step.advance(Step::Html(web));
    }

    /// The page's last byte arrived: the user reads it.
    fn page_loaded(&mut self, now: Time, io: &mut dyn FlowIo) {
        let until = self.pages.loaded(now);
        io.wake_at(until);
        self.step.advance(Step::Reading { until });
    }

    /// Response bytes arrived at the requester.
    fn on_response(&mut self, now: Time, bytes: u64, io: &mut dyn FlowIo) {
        let side = self.requester;
        match &mut self.step {
            Step::Html(web) => {
                web.on_receive(now, side, bytes, io);
                let done = web.completed() == 1;
                if bytes > 0 {
                    self.pages.first_byte(now);
                }
                if !done {
                    return;
                }
                let p = self.pages.current();
                if p.objects.is_empty() {
                    self.page_loaded(now, io);
                } else {
                    // 3GPP2 HTTP model: the embedded objects are asked for
                    // after the parsing time that follows the main object.
                    let until = now + p.parsing;
                    io.wake_at(until);
                    self.step.advance(Step::Parsing { until });
                }
            }
            Step::Objects(web) => {
                web.on_receive(now, side, bytes, io);
                if web.completed() == self.pages.current().objects.len() {
                    self.page_loaded(now, io);
                }
            }
            // Every response byte belongs to a step's exchange.
            step => panic!("web_browse: {bytes} response bytes while {step:?}"),
        }
    }

    /// A wake-up at the requester: the end of parsing or reading (an early
    /// call, for another wake-up, waits on).
    fn on_requester_timer(&mut self, now: Time, io: &mut dyn FlowIo) {
        match self.step {
            Step::Parsing { until } if now >= until => {
                let sizes = self.pages.current().objects.clone();
                let mut web = self.exchange(&sizes, now);
                web.on_timer(now, self.requester, io);
                self.step.advance(Step::Objects(web));
            }
            Step::Reading { until } if now >= until => self.start_page(now, io),
            Step::Parsing { until } | Step::Reading { until } => io.wake_at(until),
            _ => {}
        }
    }

    fn web(&mut self) -> Option<&mut Web> {
        match &mut self.step {
            Step::Html(w) | Step::Objects(w) => Some(w),
            _ => None,
        }
    }
}

impl FlowApp for WebBrowse {
    fn kind(&self) -> &'static str {
        "web_browse"
    }
    fn on_connected(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.start_page(now, io);
        }
    }
    fn on_timer(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.on_requester_timer(now, io);
        }
    }
    fn on_writable(&mut self, now: Time, side: Role, io: &mut dyn FlowIo) {
        if let Some(web) = self.web() {
            web.on_writable(now, side, io);
        }
    }
    fn on_receive(&mut self, now: Time, side: Role, bytes: u64, io: &mut dyn FlowIo) {
        if side == self.requester {
            self.on_response(now, bytes, io);
        } else if let Some(web) = self.web() {
            // A step's requests all arrive before its responses complete,
            // so the responder's bytes belong to the step under way.
            web.on_receive(now, side, bytes, io);
        }
    }
    fn report(&self, _end: Time) -> Value {
        self.pages.report()
    }
    fn sample(&mut self, _now: Time, _interval: Dur, out: &mut SampleSink<'_>) {
        self.pages.sample(out);
    }
    fn random_draws(&self) -> u64 {
        self.pages.draws()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Script;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    /// A browser whose first pages are known: drawn from the same stream.
    fn browse(cfg: WebBrowseConfig) -> (WebBrowse, Vec<Page>) {
        let rng = SimRng::derive(1, "web_browse/test");
        let mut copy = rng.clone();
        let pages = (0..3).map(|_| cfg.model().draw(&mut copy)).collect();
        (WebBrowse::new(cfg, Role::Client, rng, "browse"), pages)
    }

    #[test]
    fn a_page_loads_html_then_its_objects_then_the_user_reads() {
        // A shape near 0 puts X at the cap m = 5 almost surely: 5 - 2 = 3 objects.
        let cfg = WebBrowseConfig {
            objects_shape: 0.001,
            objects_scale: 2,
            objects_cap: 5,
            ..WebBrowseConfig::default()
        };
        let (mut b, pages) = browse(cfg);
        let p0 = &pages[0];
        let n = p0.objects.len();
        assert_eq!(n, 3);
        let mut s = Script::new();
        let req = 350;
        // Connected at 10 ms: page 0 starts, the HTML's request goes out.
        s.connected(&mut b, ms(10), Role::Client);
        s.connected(&mut b, ms(20), Role::Server);
        assert_eq!(s.written(Role::Client), req);
        s.deliver(&mut b, ms(20), Role::Server, req);
        assert_eq!(s.written(Role::Server), p0.html);
        // The HTML arrives in two pieces: first byte at 40 ms, last at 60 ms.
        s.deliver(&mut b, ms(40), Role::Client, 1);
        assert_eq!(s.wake(Role::Client), None, "still loading the HTML");
        s.deliver(&mut b, ms(60), Role::Client, p0.html - 1);
        let r = b.report(ms(60));
        assert_eq!(r["pages"][0]["ttfb_s"], 0.03);
        // The first byte is summarized as soon as it came; the load not yet.
        assert_eq!(r["first_byte_ms"]["p95"], 30.0);
        assert!(r["page_load_ms"].is_null());
        // Parsing: no request until 60 ms + Tp.
        let parsed = ms(60) + p0.parsing;
        assert_eq!(s.wake(Role::Client), Some(parsed));
        assert_eq!(s.written(Role::Client), req);
        // An early wake-up (for something else) asks for nothing.
        assert!(p0.parsing > Dur::from_nanos(1), "{:?}", p0.parsing);
        s.timer(&mut b, parsed - Dur::from_nanos(1), Role::Client);
        assert_eq!(s.written(Role::Client), req);
        s.timer(&mut b, parsed, Role::Client);
        // Every object's request at once.
        assert_eq!(s.written(Role::Client), req * (1 + n as u64));
        s.deliver(
            &mut b,
            parsed + Dur::from_millis(10),
            Role::Server,
            req * n as u64,
        );
        let body: u64 = p0.objects.iter().sum();
        assert_eq!(s.written(Role::Server), p0.html + body);
        // All but the last byte: not loaded; then the last byte.
        let t1 = parsed + Dur::from_millis(30);
        s.deliver(&mut b, t1, Role::Client, body - 1);
        assert_eq!(b.pages_loaded(), 0);
        let t2 = parsed + Dur::from_millis(40);
        s.deliver(&mut b, t2, Role::Client, 1);
        assert_eq!(b.pages_loaded(), 1);
        let r = b.report(t2);
        let load = t2.saturating_since(ms(10)).as_secs_f64();
        assert_eq!(r["pages"][0]["load_s"], round6(load));
        assert_eq!(r["pages"][0]["bytes"], p0.html + body);
        assert_eq!(r["pages"][0]["objects"], n);
        assert_eq!(r["page_load_ms"]["max"], round6(load * 1e3));
        // Reading: the next page starts when the think time after the load ends.
        let next = t2 + p0.reading;
        assert_eq!(s.wake(Role::Client), Some(next));
        s.timer(&mut b, next, Role::Client);
        assert_eq!(s.written(Role::Client), req * (2 + n as u64));
        let r = b.report(next);
        assert_eq!(r["pages_started"], 2);
        assert_eq!(r["pages"][1]["start_s"], round6(next.as_secs_f64()));
        assert_eq!(r["pages"][1]["html_bytes"], pages[1].html);
        assert!(r["pages"][1]["load_s"].is_null());
        // Page 1 asked, not answered: still one first byte, one load.
        assert_eq!(r["first_byte_ms"]["max"], 30.0);
        assert_eq!(r["page_load_ms"]["p50"], round6(load * 1e3));
        // The interval's series: the one page loaded, in ms.
        let mut seen = Vec::new();
        b.sample(next, Dur::from_secs(1), &mut |k, v| seen.push((k, v)));
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, "page_load_ms");
        assert!((seen[0].1 - load * 1e3).abs() < 1e-9, "{seen:?}");
        let mut again = Vec::new();
        b.sample(next, Dur::from_secs(1), &mut |k, v| again.push((k, v)));
        assert!(again.is_empty());
    }

    #[test]
    fn a_page_without_embedded_objects_is_loaded_with_its_html() {
        // A huge shape keeps X at k: no embedded object.
        let cfg = WebBrowseConfig {
            objects_shape: 1e6,
            ..WebBrowseConfig::default()
        };
        let (mut b, pages) = browse(cfg);
        assert!(pages[0].objects.is_empty());
        let mut s = Script::new();
        s.connected(&mut b, ms(0), Role::Client);
        s.deliver(&mut b, ms(10), Role::Server, 350);
        s.deliver(&mut b, ms(30), Role::Client, pages[0].html);
        assert_eq!(b.pages_loaded(), 1);
        assert_eq!(b.report(ms(30))["pages"][0]["load_s"], 0.03);
        assert_eq!(s.wake(Role::Client), Some(ms(30) + pages[0].reading));
    }

    #[test]
    fn the_same_seed_gives_the_same_pages_and_draws_are_counted() {
        let (a, pa) = browse(WebBrowseConfig::default());
        let (_, pb) = browse(WebBrowseConfig::default());
        assert_eq!(pa, pb);
        assert_eq!(a.random_draws(), 0, "nothing drawn before the first page");
        let mut b = a;
        let mut s = Script::new();
        s.connected(&mut b, ms(0), Role::Client);
        // HTML, count, each object, parsing, reading.
        assert_eq!(b.random_draws(), 4 + pa[0].objects.len() as u64);
    }

    #[test]
    fn conflicting_ranges_are_named() {
        let c = WebBrowseConfig {
            html_size_min: 5_000,
            html_size_max: 1_000,
            ..WebBrowseConfig::default()
        };
        assert_eq!(c.conflict().unwrap().1.name, "html_size_max");
        let c = WebBrowseConfig {
            objects_cap: 1,
            ..WebBrowseConfig::default()
        };
        assert_eq!(c.conflict().unwrap().1.name, "objects_cap");
        assert!(WebBrowseConfig::default().conflict().is_none());
    }
}
