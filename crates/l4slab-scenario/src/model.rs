//! The *resolved* scenario: every default filled in, every unit converted to
//! l4slab-core types. This is what the simulator (and later the emulator)
//! consumes, and what `summary.json` records under `scenario`.
//!
//! Parsing, validation and defaults live in [`crate::parse`]; this file is the
//! contract between the scenario crate and the backends.

use serde::Serialize;

use l4slab_cc::CcOptions;
use l4slab_core::{Dur, Rate, Time};

/// `skip_serializing_if` for a duration that is zero by default.
fn is_zero(d: &Dur) -> bool {
    d.is_zero()
}

/// Current scenario file format version (`format = 1`).
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    pub format: u32,
    pub name: String,
    pub description: String,
    /// Simulated duration of the run.
    pub duration: Time,
    /// The summary's steady-state window is `[warmup, duration]`: its rates,
    /// delays and queue counts leave out what happened before (zero: the
    /// whole run; not written to `summary.json` then).
    #[serde(skip_serializing_if = "is_zero")]
    pub warmup: Dur,
    /// Root seed (overridden by `--seed`).
    pub seed: u64,
    /// Interval of the time series in `series.parquet`.
    pub sample_interval: Dur,
    /// Record `packets.parquet` (per-packet trace). Off by default.
    pub packet_trace: bool,
    /// Write pcap captures of every queue (`pcap/<queue>.<in|out>.pcap`).
    /// Off by default; written in the resolved scenario only when on, so
    /// scenarios without it resolve exactly as before.
    #[serde(skip_serializing_if = "is_false")]
    pub pcap: bool,
    pub bottleneck: Bottleneck,
    /// A Wi-Fi cell as the client hosts' access network (`[wifi]`): the AP
    /// sits at the bottleneck's client end, every client host is a station.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<WifiSpec>,
    /// Hosts in name order; client-side hosts first, then server-side.
    pub hosts: Vec<Host>,
    /// Flows, expanded (`count = N` gives N entries named `name.0`..`name.N-1`).
    pub flows: Vec<Flow>,
}

/// `[wifi]`: one AP and its stations (the client hosts) on one or more
/// links (docs/models/wifi.md). Downstream a packet leaves the bottleneck
/// into the AP's queue for its station and access category; upstream it
/// waits in the station's queue for its AC; both contend for the same
/// airtime, then the host's `access_delay` applies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WifiSpec {
    /// The cell's channels (two or more: multi-link operation).
    pub links: Vec<l4slab_wifi::phy::Phy>,
    /// Failed attempts of one MPDU before it is dropped.
    pub retry_limit: u32,
    /// The AP's own EDCA parameters per AC.
    pub ap_edca: l4slab_wifi::edca::EdcaSet,
    /// The AP's airtime bound on the A-MPDUs of a station with L4S traffic
    /// (`[wifi.ap] l4s_ppdu_max`; `l4slab_wifi::l4s_aggregate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ap_l4s_ppdu_max: Option<l4slab_core::Dur>,
    /// The qdisc of each AP queue (one per station and AC), and of each
    /// station's queue per AC.
    pub ap_qdisc: QdiscSpec,
    pub station_qdisc: QdiscSpec,
    /// One per client host, in [`Scenario::hosts`] order.
    pub stations: Vec<WifiStation>,
}

/// A client host as a station of the cell (`[wifi.stations]` defaults,
/// `[hosts.NAME.wifi]` for this one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WifiStation {
    /// Index into [`Scenario::hosts`].
    pub host: usize,
    /// The EDCA parameters it uses (the advertised ones unless it ignores them).
    pub edca: l4slab_wifi::edca::EdcaSet,
    /// Its links: SNR and MCS on each.
    pub links: Vec<l4slab_wifi::config::StationLink>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<l4slab_wifi::config::Scan>,
    /// Its generation, if written (else each link's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard: Option<l4slab_wifi::phy::Standard>,
}

/// The bottleneck between the client side and the server side, per direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bottleneck {
    /// server -> client
    pub down: LinkSpec,
    /// client -> server
    pub up: LinkSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSpec {
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Dur,
    pub qdisc: QdiscSpec,
    pub loss: LossSpec,
    /// What the path does to the IP-ECN field of ECT packets, before the
    /// queue (`ecn_rewrite`; docs/models/ecn.md).
    pub ecn_rewrite: l4slab_link::EcnRewrite,
    /// `rate = { trace = "..." }`: the link replays a mahimahi trace
    /// (docs/models/trace.md) and `rate` is the trace's mean rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_trace: Option<RateTrace>,
}

/// A mahimahi delivery trace a link replays.
#[derive(Clone, PartialEq, Serialize)]
pub struct RateTrace {
    /// As written in the scenario (a file name or a path).
    pub name: String,
    /// The file that was read, for a trace given by its path; `None` for one
    /// given by name (a shipped trace or one of `$L4SLAB_TRACES`), whose
    /// location depends on where l4slab is installed: it must not change a
    /// run's results (the same scenario and seed give the same bytes on
    /// every machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The parsed opportunities (not serialized: `summary.json` names the file).
    #[serde(skip)]
    pub trace: std::sync::Arc<l4slab_link::Trace>,
}

impl std::fmt::Debug for RateTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateTrace")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("opportunities", &self.trace.opportunities())
            .finish()
    }
}

/// Queue discipline and its buffer: the config of one kind of the qdisc
/// registry ([`l4slab_qdisc::registry`]), tagged by its `tc` name (`kind`).
/// `limit` is the direction's buffer unless written; DualPI2's `l_flows` are
/// flow indices (`Scenario::flows`).
pub type QdiscSpec = l4slab_qdisc::QdiscConfig;

/// A buffer limit as the user wrote it, and its resolution.
pub use l4slab_qdisc::BufferLimit;

/// `ecn` is netem's `loss ... ecn` (`l4slab_link::Link::with_loss_ecn`): a
/// chosen ECN-capable packet is CE-marked instead of dropped. It is written
/// in the resolved scenario only when set, so scenarios without it resolve
/// exactly as before.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LossSpec {
    None,
    /// Independent loss with probability `p` per packet.
    Bernoulli {
        p: f64,
        #[serde(skip_serializing_if = "is_false")]
        ecn: bool,
    },
    /// Two-state Gilbert–Elliott: `p` good->bad, `r` bad->good (per packet),
    /// loss probability `1 - k` in good and `1 - h` in bad.
    GilbertElliott {
        p: f64,
        r: f64,
        k: f64,
        h: f64,
        #[serde(skip_serializing_if = "is_false")]
        ecn: bool,
    },
}

impl LossSpec {
    /// Whether chosen ECN-capable packets are CE-marked instead of dropped.
    pub fn ecn(&self) -> bool {
        match *self {
            LossSpec::None => false,
            LossSpec::Bernoulli { ecn, .. } | LossSpec::GilbertElliott { ecn, .. } => ecn,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Client,
    Server,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Host {
    pub name: String,
    pub side: Side,
    /// One-way delay between the host and the bottleneck, both directions.
    pub access_delay: Dur,
    /// The host's own access link, per direction (`[hosts.NAME.access]`);
    /// written to the resolved scenario only when the host has one.
    #[serde(skip_serializing_if = "AccessLinks::is_empty")]
    pub access: AccessLinks,
    /// A multi-homed (client) host's ways out, in preference order
    /// (`[[hosts.NAME.paths]]`); empty for a host with one. Written to the
    /// resolved scenario only when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<HostPath>,
    /// Connection racing over `paths` (RFC 8305 §5's Connection Attempt
    /// Delay): a flow starts its handshake on the first path, and a second
    /// attempt on the next after this long without a completed handshake.
    /// `None`: no racing (one path, the transport's own SYN retries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub racing: Option<Dur>,
}

impl Host {
    /// A host with one way out: `access_delay`, and `access` (may be empty).
    pub fn single(name: &str, side: Side, access_delay: Dur, access: AccessLinks) -> Self {
        Host {
            name: name.to_string(),
            side,
            access_delay,
            access,
            paths: Vec::new(),
            racing: None,
        }
    }

    /// The path through the Wi-Fi cell of a multi-homed host, if it has one.
    pub fn cell_path(&self) -> Option<&HostPath> {
        self.paths.iter().find(|p| p.wifi)
    }

    /// Whether the host is a station of the scenario's Wi-Fi cell (when
    /// there is one): a client-side host with one way out, or a multi-homed
    /// one through a path with `wifi = true`.
    pub fn in_cell(&self) -> bool {
        self.side == Side::Client && (self.paths.is_empty() || self.cell_path().is_some())
    }
}

/// One way out of a multi-homed host: an access link in both directions
/// (its own queue, rate or trace, loss), or the host's station in the
/// Wi-Fi cell, and the windows in which it is down.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostPath {
    pub name: String,
    /// The propagation delay of its links (as a host's `access_delay`).
    pub access_delay: Dur,
    /// Both directions have a link; none for a path through the cell.
    #[serde(skip_serializing_if = "AccessLinks::is_empty")]
    pub access: AccessLinks,
    /// The path is the host's station in the `[wifi]` cell (its queues are
    /// the cell's for it: `WifiSpec::stations`), not an access link.
    #[serde(skip_serializing_if = "is_false")]
    pub wifi: bool,
    /// Windows `[start, end)` in which the path loses every packet, sorted
    /// and disjoint (through the cell: the station is out of it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
    /// The path's rate (both directions) from each `at` on, sorted by time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_changes: Vec<RateChange>,
}

/// A path's new rate from `at` on (both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RateChange {
    pub at: Time,
    pub rate: Rate,
}

/// A window in which a path is down: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Outage {
    pub start: Time,
    pub end: Time,
}

/// A host's access link per direction of the bottleneck (`down` = server →
/// client: what a client host receives, what a server host sends). A
/// direction without one is pure delay (`access_delay`); a direction with
/// one queues, serializes at its rate and then propagates for
/// `access_delay` (its `delay`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AccessLinks {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<LinkSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<LinkSpec>,
}

impl AccessLinks {
    /// No access link in either direction.
    pub fn is_empty(&self) -> bool {
        self.down.is_none() && self.up.is_none()
    }

    /// The link of direction `dir` (0 = down, 1 = up, as
    /// `l4slab_bottleneck::{DOWN, UP}`).
    pub fn dir(&self, dir: usize) -> Option<&LinkSpec> {
        [&self.down, &self.up][dir].as_ref()
    }
}

/// Who sends the application's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// server -> client (a download)
    Down,
    /// client -> server (an upload)
    Up,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flow {
    pub name: String,
    /// The `[[flows]]` or `[[households]]` entry this flow comes from
    /// (`count`, a download's connections, a web page's extra connections and
    /// a household's mix make several flows of one entry).
    #[serde(skip)]
    pub entry: Entry,
    /// Index into `Scenario::hosts`.
    pub client: usize,
    pub server: usize,
    pub direction: Direction,
    /// Congestion control: serialized as `cc` (the Linux name) and, when the
    /// scenario set any, `cc_options`.
    #[serde(flatten)]
    pub cc: CcSpec,
    /// When the client opens the connection.
    pub start: Time,
    pub app: AppSpec,
    pub transport: TransportSpec,
    /// ECN mode the flow asks for; `None`: the congestion control's default,
    /// decided by the backend (Linux-like: `accecn` for `dctcp`/`prague`,
    /// `off` otherwise; docs/models/ecn.md).
    pub ecn: Option<EcnSpec>,
    /// The Wi-Fi access category its packets (both ways) travel in, as an
    /// app's DSCP would choose it (`wifi_ac = "vi"`); best effort unless set,
    /// and written to the resolved scenario only when set otherwise.
    #[serde(skip_serializing_if = "is_best_effort")]
    pub wifi_ac: l4slab_wifi::edca::Ac,
}

/// The scenario table a flow was written in, as its errors name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    /// `flows[<index>]`.
    Flow(usize),
    /// `households[<index>]`, a household of `copies` copies of its preset.
    Household { index: usize, copies: u64 },
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Flow(i) => write!(f, "flows[{i}]"),
            Entry::Household { index, .. } => write!(f, "households[{index}]"),
        }
    }
}

fn is_best_effort(ac: &l4slab_wifi::edca::Ac) -> bool {
    *ac == l4slab_wifi::edca::Ac::Be
}

/// A flow's congestion control (`cc = "prague"` or `cc = { kind = "prague",
/// rtt_scaling = "none" }`; docs/scenarios.md): the Linux name and the
/// options set over the controller's defaults ([`CcOptions`]: `None` is the
/// Linux default, which lives in `l4slab-cc`).
///
/// `kind` is always `options.name()`; build one with [`CcSpec::new`] or
/// [`CcSpec::named`]. It serializes as two keys of the flow: `cc` (the name)
/// and `cc_options` (only the options set, omitted when there are none), so
/// a scenario without options reads exactly as before options existed.
#[derive(Clone, Debug, PartialEq)]
pub struct CcSpec {
    /// Linux name: `reno`, `cubic`, `dctcp`, `prague`, `bbr`, `bbr3`.
    pub kind: String,
    /// Overrides of the controller's defaults, by kind.
    pub options: CcOptions,
}

impl CcSpec {
    pub fn new(options: CcOptions) -> Self {
        CcSpec {
            kind: options.name().to_string(),
            options,
        }
    }

    /// `name` with its defaults; `None` for a name `l4slab-cc` does not know.
    pub fn named(name: &str) -> Option<Self> {
        CcOptions::defaults(name).map(Self::new)
    }

    /// Whether the scenario set any option.
    pub fn has_options(&self) -> bool {
        !self.options.is_default()
    }
}

impl Serialize for CcSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("cc", &self.kind)?;
        if self.has_options() {
            m.serialize_entry("cc_options", &self.options)?;
        }
        m.end()
    }
}

/// ECN negotiation and feedback of a flow (Linux `tcp_ecn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EcnSpec {
    /// No ECN.
    #[serde(rename = "off")]
    Off,
    /// RFC 3168 ECN: one congestion signal per RTT.
    #[serde(rename = "classic")]
    Classic,
    /// RFC 9768 Accurate ECN: every CE mark fed back.
    #[serde(rename = "accecn")]
    AccEcn,
}

// A flow's application: the app kinds and their configs are declared once,
// in `l4slab_app` (`registry`, each app's file; docs/apps.md).
pub use l4slab_app::framed::{FrameTransport, Framed};
pub use l4slab_app::rtp::MediaCcKind;
pub use l4slab_app::web::{WebConnection, WebObjectSpec, WebPage, WebSpec};
pub use l4slab_app::AppSpec;

/// The retransmission timeout's formula: the TCP model's own
/// ([`l4slab_tcp::RtoFormula`]: `"linux"` or `"rfc6298"`).
pub use l4slab_tcp::RtoFormula as RtoFormulaSpec;

/// `[flows.transport]` as resolved: the keys declared once with the TCP
/// model's config ([`l4slab_tcp::config::PARAMS`]: kind, range, default
/// and its Linux or RFC source, doc), read by `crate::param` and set by name
/// ([`Configure`](l4slab_core::param::Configure)), plus `protocol`.
/// The defaults are TCP's; a `protocol = "quic"` flow starts from
/// [`TransportSpec::defaults_for`] and reads some keys with QUIC's meaning
/// (`crate::quic::KEYS`: `mss` is the maximum datagram size,
/// `initial_window` counts datagrams, ...).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransportSpec {
    /// Payload bytes per segment. Default 1448 (1500 MTU - 20 IP - 20 TCP - 12 timestamps).
    pub mss: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// Delayed ACKs (RFC 1122 §4.2.3.2 / RFC 5681 §4.2).
    pub delayed_ack: bool,
    /// Maximum ACK delay when delayed ACKs are on (Linux `TCP_DELACK_MIN` = 40 ms).
    pub delayed_ack_timeout: Dur,
    /// Minimum RTO (Linux `TCP_RTO_MIN` = 200 ms; RFC 6298 says 1 s).
    pub min_rto: Dur,
    /// How the RTO follows the RTT: Linux's `__tcp_set_rto` (default) or RFC 6298.
    pub rto_formula: RtoFormulaSpec,
    /// Tail loss probe (RFC 8985 §7; Linux `tcp_early_retrans = 3`).
    pub tlp: bool,
    /// F-RTO after a timeout (RFC 5682; Linux `tcp_frto = 2`).
    pub frto: bool,
    /// Undo of spurious reductions by D-SACK and timestamps (Linux `tcp_try_undo_*`).
    pub undo: bool,
    /// The receiver reports duplicates with D-SACK (RFC 2883; Linux `tcp_dsack = 1`).
    pub dsack: bool,
    /// Pace transmissions (Linux `fq`-style): 200 % of cwnd/srtt in slow start, 120 % after.
    pub pacing: bool,
    /// Send buffer in bytes (`SO_SNDBUF`).
    pub send_buffer: u64,
    /// Not-sent low-water mark (`TCP_NOTSENT_LOWAT`); `None` = unlimited.
    pub notsent_lowat: Option<u64>,
    /// Receive buffer, which bounds the advertised window (`SO_RCVBUF`).
    pub receive_buffer: u64,
    /// IP-ECN codepoint on data once ECN is negotiated, instead of the
    /// congestion control's (`ect0`, `ect1`, `not_ect`); `None` = the controller's.
    pub ecn_codepoint: Option<l4slab_core::Ecn>,
    /// TCP Fast Open (RFC 7413): the client asks for a cookie, then sends its
    /// first write in the SYN; the server accepts it (Linux sysctl
    /// `net.ipv4.tcp_fastopen` = 0x1 client / 0x2 server, used by the app
    /// through `TCP_FASTOPEN_CONNECT` or `sendto(MSG_FASTOPEN)`, and the
    /// `TCP_FASTOPEN` listen option). Default off (Linux `tcp_fastopen` = 1
    /// enables the client side, but only for apps that ask).
    pub fastopen: bool,
    /// `"tcp"` (default) or `"quic"`: l4slab's QUIC-style transport over UDP
    /// (docs/models/quic.md), for `bulk`, `file`, `web`, `web_browse`,
    /// `video_stream` and `download` flows.
    pub protocol: Protocol,
}

impl Default for TransportSpec {
    /// The declared defaults ([`l4slab_tcp::config::PARAMS`]).
    fn default() -> Self {
        use l4slab_core::param::FromParam;
        use l4slab_tcp::config as tcp;
        let d = |p: &l4slab_core::param::Param| p.default;
        TransportSpec {
            mss: FromParam::from_param(d(&tcp::MSS)),
            initial_window: FromParam::from_param(d(&tcp::INITIAL_WINDOW)),
            delayed_ack: d(&tcp::DELAYED_ACK).flag(),
            delayed_ack_timeout: d(&tcp::DELAYED_ACK_TIMEOUT).dur(),
            min_rto: d(&tcp::MIN_RTO).dur(),
            rto_formula: FromParam::from_param(d(&tcp::RTO_FORMULA)),
            tlp: d(&tcp::TLP).flag(),
            frto: d(&tcp::FRTO).flag(),
            undo: d(&tcp::UNDO).flag(),
            dsack: d(&tcp::DSACK).flag(),
            pacing: d(&tcp::PACING).flag(),
            send_buffer: FromParam::from_param(d(&tcp::SEND_BUFFER)),
            notsent_lowat: FromParam::from_param(d(&tcp::NOTSENT_LOWAT)),
            receive_buffer: FromParam::from_param(d(&tcp::RECEIVE_BUFFER)),
            ecn_codepoint: FromParam::from_param(d(&tcp::ECN_CODEPOINT)),
            fastopen: d(&tcp::FASTOPEN).flag(),
            protocol: Protocol::Tcp,
        }
    }
}

l4slab_core::param_fields!(TransportSpec {
    mss = l4slab_tcp::config::MSS,
    initial_window = l4slab_tcp::config::INITIAL_WINDOW,
    delayed_ack = l4slab_tcp::config::DELAYED_ACK,
    delayed_ack_timeout = l4slab_tcp::config::DELAYED_ACK_TIMEOUT,
    min_rto = l4slab_tcp::config::MIN_RTO,
    rto_formula = l4slab_tcp::config::RTO_FORMULA,
    tlp = l4slab_tcp::config::TLP,
    frto = l4slab_tcp::config::FRTO,
    undo = l4slab_tcp::config::UNDO,
    dsack = l4slab_tcp::config::DSACK,
    pacing = l4slab_tcp::config::PACING,
    send_buffer = l4slab_tcp::config::SEND_BUFFER,
    notsent_lowat = l4slab_tcp::config::NOTSENT_LOWAT,
    receive_buffer = l4slab_tcp::config::RECEIVE_BUFFER,
    ecn_codepoint = l4slab_tcp::config::ECN_CODEPOINT,
    fastopen = l4slab_tcp::config::FASTOPEN,
});

impl TransportSpec {
    /// The defaults of a flow over `protocol`: [`TransportSpec::default`]
    /// for TCP; for QUIC, what the QUIC-style transport does
    /// ([`crate::quic::defaults`]: `mss` 1200, paced, 25 ms max_ack_delay).
    pub fn defaults_for(protocol: Protocol) -> Self {
        match protocol {
            Protocol::Tcp => TransportSpec::default(),
            Protocol::Quic => crate::quic::defaults(),
        }
    }
}

/// `[flows.transport] protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The TCP model (RFC 9293 and Linux).
    Tcp,
    /// l4slab's QUIC-style transport (RFC 9000/9002 without TLS).
    Quic,
}
