//! A flow's application as an object, from its scenario entry: where
//! `app = "file"`, `transport = { protocol = "quic" }` or `media_cc = "gcc"`
//! become a [`FlowApp`]. Both backends build their flows' apps here, so the
//! simulator and the emulator run the same app code (docs/apps.md). Over
//! TCP (or RTP) each app kind builds itself ([`AppSpec::build`]); QUIC is
//! composed here.

use std::collections::BTreeMap;

use l4slab_app::quic::{QuicApp, QuicFlow};
use l4slab_app::quic_stream_app::StreamApp;
use l4slab_app::web_browse_h1::Session;
use l4slab_app::web_quic::WebStreams;
use l4slab_app::{BuildContext, FlowApp, Role};
use l4slab_core::SimRng;

use crate::{AppSpec, Direction, EcnSpec, Flow, Protocol};

/// The side flow `f`'s main data goes from: the server for `down`.
pub fn sender(f: &Flow) -> Role {
    match f.direction {
        Direction::Down => Role::Server,
        Direction::Up => Role::Client,
    }
}

/// Flow `f`'s application (both ends), over the transport its
/// `transport.protocol` names; `seed` is the run's (a QUIC connection draws
/// its connection IDs from a stream derived from it and the flow's name).
pub fn flow_app(f: &Flow, seed: u64) -> Box<dyn FlowApp> {
    let cx = BuildContext {
        sender: sender(f),
        flow: &f.name,
        start: f.start,
        seed,
    };
    match f.transport.protocol {
        Protocol::Tcp => f.app.build(&cx),
        Protocol::Quic => quic_app(f, &cx, seed),
    }
}

/// Every flow's application, in scenario order. The flows of one HTTP/1.1
/// browsing session (`web_browse` with `connections = K`: its connections)
/// share one browser ([`Session`]); every other flow's app is
/// [`flow_app`]'s.
pub fn flow_apps(flows: &[Flow], seed: u64) -> Vec<Box<dyn FlowApp>> {
    let mut sessions: BTreeMap<&str, Session> = BTreeMap::new();
    flows
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.app {
            AppSpec::WebBrowse(b) if b.connection.is_some() => {
                let c = b.connection.as_ref().expect("matched");
                let requester = match sender(f) {
                    Role::Server => Role::Client,
                    Role::Client => Role::Server,
                };
                sessions
                    .entry(c.session.as_str())
                    .or_insert_with(|| Session::new(b, seed, &c.session, requester))
                    .connection(c.index, i, &f.name)
            }
            _ => flow_app(f, seed),
        })
        .collect()
}

/// A `bulk`, `file`, `web`, `web_browse`, `video_stream` or `download` flow
/// over the QUIC-style transport (`web_browse` and `download`: their TCP
/// app on one stream each way, [`StreamApp`]): the flow's controller with its options, ECN unless the flow turns it off
/// (RFC 9000 §13.4: QUIC endpoints use and validate ECN), and the transport
/// keys QUIC applies ([`crate::quic::connection_config`]). A web page opens
/// one stream per object and the connection issues no MAX_STREAMS, so the
/// peer allows at least as many streams as objects.
fn quic_app(f: &Flow, cx: &BuildContext<'_>, seed: u64) -> Box<dyn FlowApp> {
    let mut cfg = crate::quic::connection_config(
        &f.cc,
        &f.transport,
        f.ecn != Some(EcnSpec::Off),
        SimRng::derive(seed, &format!("quic/{}", f.name)).next_u64(),
    );
    match &f.app {
        AppSpec::Bulk(_) => Box::new(QuicFlow::new(QuicApp::Bulk, cfg, cx.sender)),
        AppSpec::File(file) => Box::new(QuicFlow::new(
            QuicApp::File { size: file.size },
            cfg,
            cx.sender,
        )),
        AppSpec::Web(w) => {
            let web = cx.web_config(w);
            cfg.max_streams_bidi = cfg.max_streams_bidi.max(web.objects.len() as u64);
            Box::new(QuicFlow::with_streams(
                WebStreams::new(web, cx.receiver()),
                cfg,
                cx.sender,
            ))
        }
        AppSpec::VideoStream(v) => {
            // One stream per segment, and no MAX_STREAMS: allow the video's count.
            cfg.max_streams_bidi = cfg.max_streams_bidi.max(v.segments());
            Box::new(QuicFlow::with_streams(v.quic_streams(cx), cfg, cx.sender))
        }
        // The TCP app itself, its byte stream on one QUIC stream each way.
        AppSpec::WebBrowse(_) | AppSpec::Download(_) => Box::new(QuicFlow::with_streams(
            StreamApp::new(f.app.build(cx), cx.sender),
            cfg,
            cx.sender,
        )),
        _ => unreachable!(
            "the scenario allows bulk, file, web, web_browse, video_stream and download over QUIC only"
        ),
    }
}
