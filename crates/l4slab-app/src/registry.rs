//! The app kinds, written once: each kind's config (declared in its file,
//! with its [`Param`]s) implements [`AppKind`], and one line of
//! [`app_kinds!`] below makes it a variant of [`AppSpec`] — the app of a
//! resolved scenario flow — with its `kind` name. Everything else derives
//! from that:
//!
//! * which keys `app = { kind = ..., ... }` accepts, how each is read and
//!   checked, and the example in its errors (the scenario's generic reader,
//!   `l4slab-scenario`'s `app.rs`, driven by [`AppSpec::params`]);
//! * setting a value read by its declaration ([`AppSpec::set`]);
//! * a flow's app ([`AppSpec::build`]);
//! * the tables of `docs/apps.md` ([`markdown_index`], [`markdown_table`],
//!   checked by `tests/docs_params.rs`).
//!
//! A parameter whose default is [`ParamValue::Unset`] is required (`file`'s
//! `size`, `web`'s `objects`); [`Kind::Custom`](l4slab_core::param::Kind)
//! parameters are read by the scenario's own code (`web`'s `objects`, a
//! frame app's `media_cc`). Adding an app kind = its file (config, params,
//! `AppKind`) + one line here + its section in docs/apps.md.

use serde::Serialize;

use l4slab_core::param::{self, Configure, Param, ParamValue};
use l4slab_core::Time;

use crate::cloud_gaming::CloudGamingConfig;
use crate::download::DownloadConfig;
use crate::framed::Framed;
use crate::oneway::{BulkConfig, FileConfig};
use crate::ping::PingConfig;
use crate::screen_share::ScreenShareConfig;
use crate::video_call::VideoCallConfig;
use crate::video_stream::VideoStreamConfig;
use crate::web::{WebConfig, WebSpec};
use crate::web_browse::WebBrowseConfig;
use crate::{cbr::CbrConfig, FlowApp, Role};

/// What building a flow's app needs besides its config.
#[derive(Clone, Copy, Debug)]
pub struct BuildContext<'a> {
    /// The side the flow's main data goes from (the server for `down`).
    pub sender: Role,
    /// The flow's name.
    pub flow: &'a str,
    /// When the flow starts.
    pub start: Time,
    /// The run's seed, for an app that draws (`web_browse`: its stream is
    /// derived from it and the flow's name).
    pub seed: u64,
}

impl BuildContext<'_> {
    /// The side that receives the flow's main data.
    pub fn receiver(&self) -> Role {
        match self.sender {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }

    /// A web app's config on this flow.
    pub fn web_config(&self, w: &WebSpec) -> WebConfig {
        w.config(self.flow, self.start)
    }
}

/// An app kind: its scenario name, parameters and builder.
pub trait AppKind: Configure + Default {
    /// The scenario's `kind`.
    const NAME: &'static str;
    /// What it does, in a few words (docs/apps.md's index).
    const WHAT: &'static str;
    /// A scenario line using it.
    const EXAMPLE: &'static str;
    /// The keys of its `app` table besides `kind`, in the docs' order.
    const PARAMS: &'static [Param];
    /// Both ends of the flow's app.
    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp>;
}

/// One line per app kind: `Variant(Config)`, in the docs' order.
macro_rules! app_kinds {
    ($($(#[$doc:meta])* $variant:ident($cfg:ty)),* $(,)?) => {
        /// A flow's application as a scenario resolves it: the kind
        /// (serialized as `kind`, the [`AppKind::NAME`]) and its config.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum AppSpec {
            $($(#[$doc])* $variant($cfg),)*
        }

        /// The app kinds, by scenario name, in the docs' order.
        pub const APP_NAMES: &[&str] = &[$(<$cfg as AppKind>::NAME),*];

        impl AppSpec {
            /// `name` with its defaults; `None` for an unknown name.
            pub fn defaults(name: &str) -> Option<Self> {
                $(
                    if name == <$cfg as AppKind>::NAME {
                        return Some(AppSpec::$variant(<$cfg>::default()));
                    }
                )*
                None
            }

            /// The scenario-file `kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(AppSpec::$variant(_) => <$cfg as AppKind>::NAME,)*
                }
            }

            /// A scenario line using this kind ([`AppKind::EXAMPLE`]).
            pub fn example(&self) -> &'static str {
                match self {
                    $(AppSpec::$variant(_) => <$cfg as AppKind>::EXAMPLE,)*
                }
            }

            /// The keys of its `app` table besides `kind`.
            pub fn params(&self) -> &'static [Param] {
                match self {
                    $(AppSpec::$variant(_) => <$cfg as AppKind>::PARAMS,)*
                }
            }

            /// Set the parameter `name` to `v` (of its declared kind); false
            /// if the config has no field for it (custom parameters).
            pub fn set(&mut self, name: &str, v: ParamValue) -> bool {
                match self {
                    $(AppSpec::$variant(c) => c.set(name, v),)*
                }
            }

            /// Both ends of the flow's app.
            pub fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
                match self {
                    $(AppSpec::$variant(c) => c.build(cx),)*
                }
            }
        }

        /// The kinds' index table of docs/apps.md.
        pub fn markdown_index() -> String {
            let mut s = String::from("| kind | what | scenario |\n|---|---|---|\n");
            $(
                let name = <$cfg as AppKind>::NAME;
                s.push_str(&format!(
                    "| [`{name}`](#{name}) | {} | `{}` |\n",
                    <$cfg as AppKind>::WHAT,
                    <$cfg as AppKind>::EXAMPLE,
                ));
            )*
            s
        }
    };
}

app_kinds! {
    /// Send forever.
    Bulk(BulkConfig),
    /// Send `size` bytes, then close; completion time is recorded.
    File(FileConfig),
    /// Periodic UDP echo probes from the client.
    Ping(PingConfig),
    /// Unresponsive constant-bit-rate UDP datagrams from the sender.
    Cbr(CbrConfig),
    /// Frames captured whenever the socket is writable.
    ScreenShare(Framed<ScreenShareConfig>),
    /// Objects fetched by request and response.
    Web(WebSpec),
    /// A person browsing: pages and think times.
    WebBrowse(WebBrowseConfig),
    /// Rate-adapted frames from the server to the player.
    CloudGaming(Framed<CloudGamingConfig>),
    /// Rate-adapted frames in both directions.
    VideoCall(Framed<VideoCallConfig>),
    /// An adaptive-bitrate video player fetching segments.
    VideoStream(VideoStreamConfig),
    /// A file split over parallel connections (or an upload).
    Download(DownloadConfig),
}

impl AppSpec {
    /// A frame app whose frames travel as RTP over UDP.
    pub fn is_rtp(&self) -> bool {
        self.media_cc().is_some()
    }

    /// The frame app's transport, `None` for other apps.
    pub fn frame_transport(&self) -> Option<crate::framed::FrameTransport> {
        match self {
            AppSpec::ScreenShare(f) => Some(f.transport),
            AppSpec::CloudGaming(f) => Some(f.transport),
            AppSpec::VideoCall(f) => Some(f.transport),
            _ => None,
        }
    }

    /// The frame app's transport to set, `None` for other apps.
    pub fn frame_transport_mut(&mut self) -> Option<&mut crate::framed::FrameTransport> {
        match self {
            AppSpec::ScreenShare(f) => Some(&mut f.transport),
            AppSpec::CloudGaming(f) => Some(&mut f.transport),
            AppSpec::VideoCall(f) => Some(&mut f.transport),
            _ => None,
        }
    }

    /// The media congestion controller of an RTP frame app, as the scenario
    /// names it (`"gcc"`, `"scream"`).
    pub fn media_cc(&self) -> Option<&'static str> {
        use crate::framed::FrameTransport;
        use crate::rtp::MediaCcKind;
        match self.frame_transport()? {
            FrameTransport::Tcp => None,
            FrameTransport::Rtp { media_cc, .. } => Some(match media_cc {
                MediaCcKind::Gcc => "gcc",
                MediaCcKind::Scream { .. } => "scream",
                MediaCcKind::Fixed { .. } => "fixed",
            }),
        }
    }
}

/// The parameters of the app kind `name`; `None` for an unknown name.
pub fn params(name: &str) -> Option<&'static [Param]> {
    AppSpec::defaults(name).map(|a| a.params())
}

/// The parameter table of the app kind `name` in docs/apps.md: its own
/// keys (a frame app's transport keys have their table in the RTP section,
/// [`crate::framed::TRANSPORT_PARAMS`]); `None` for a kind without keys.
///
/// # Panics
/// On a name not in [`APP_NAMES`].
pub fn markdown_table(name: &str) -> Option<String> {
    let own: Vec<Param> = params(name)
        .unwrap_or_else(|| panic!("no app {name}"))
        .iter()
        .filter(|p| !crate::framed::TRANSPORT_PARAMS.contains(p))
        .copied()
        .collect();
    (!own.is_empty()).then(|| param::markdown_table(&own))
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::param::Kind;

    #[test]
    fn every_kind_serializes_under_its_name_and_sets_its_declared_fields() {
        for &name in APP_NAMES {
            let mut app = AppSpec::defaults(name).expect(name);
            assert_eq!(app.kind(), name);
            let json = serde_json::to_value(&app).expect("serializes");
            assert_eq!(json["kind"], name, "serde's variant name is the kind");
            let before = app.clone();
            for (i, p) in app.params().iter().enumerate() {
                assert_eq!(p.check(p.default), Ok(()), "{name}.{}", p.name);
                assert!(!p.doc.is_empty() && !p.source.is_empty());
                assert!(app.params()[..i].iter().all(|o| o.name != p.name));
                // Read by the scenario: a page's objects may become flows,
                // a frame app's transport keys go together.
                let custom = matches!(p.kind, Kind::Custom(_));
                let transport = crate::framed::TRANSPORT_PARAMS.contains(p);
                let own = !custom && !transport && (name, p.name) != ("web", "connection");
                // Setting the default changes nothing; every own key has a field.
                if own && !matches!(p.default, ParamValue::Unset { .. }) {
                    assert!(app.set(p.name, p.default), "{name}.{}", p.name);
                }
                if !own {
                    assert!(!app.set(p.name, ParamValue::Int(0)), "{name}.{}", p.name);
                }
            }
            assert_eq!(app, before, "{name}: the defaults are the declarations'");
        }
        assert!(AppSpec::defaults("quake").is_none());
    }

    #[test]
    fn a_set_value_reaches_the_config() {
        let mut app = AppSpec::defaults("cbr").unwrap();
        assert!(app.set("rate", ParamValue::Rate(l4slab_core::Rate::from_mbps(5))));
        let AppSpec::Cbr(c) = app else { panic!() };
        assert_eq!(c.rate, l4slab_core::Rate::from_mbps(5));
        assert!(!AppSpec::defaults("ping")
            .unwrap()
            .set("rate", ParamValue::Int(1)));
    }
}
