"""The figures of the run report: which ones a run has (those that need absent data are
left out), their captions, and drawing each as PNG and SVG.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from l4slab import plots
from l4slab.plots.timeseries import PROBABILITY_KEYS
from l4slab.qoe import app_flows
from l4slab.report._format import _anchor, _ms
from l4slab.results import Results
from l4slab.tables import RTT_MEANING, flow_order, rtt_name

FIGURES_DIR = "figures"

#: Size of the report's figures (inches) and their resolution.
FIGSIZE = (6.6, 3.7)
WIDE_FIGSIZE = (13.0, 5.4)
DPI = 110

#: The section a run with a Wi-Fi cell adds, after the summary (its tables and figures).
WIFI_SECTION = "Wi-Fi cell"


@dataclass(frozen=True)
class FigureSpec:
    """A figure to draw: a file stem, a heading, a caption and how to draw it; ``section``
    is the report section that shows it."""

    slug: str
    title: str
    caption: str
    draw: Callable[[Axes], object]
    wide: bool = False
    section: str = "Figures"


@dataclass(frozen=True)
class RenderedFigure:
    """A drawn figure: its PNG bytes (embedded in the page) and SVG text (written beside)."""

    spec: FigureSpec
    png: bytes
    svg: str
    files: list[str] = field(default_factory=list)


def report_figures(
    results: Results,
    *,
    flow: str | None = None,
    tsg_window: tuple[float, float] | None = None,
) -> list[FigureSpec]:
    """The figures of a report, in order; those that need absent data are left out.

    ``tsg_window`` sets the range of the zoomed time-sequence graph (see write_report).
    """
    if tsg_window is not None and not tsg_window[0] < tsg_window[1]:
        raise ValueError(f"tsg_window: {tsg_window[0]:g} to {tsg_window[1]:g} is not a range")
    traced = plots.has_packet_trace(results)
    interval = _interval_text(results)
    per_ack = rtt_name(results.summary)
    specs = [
        FigureSpec(
            "rtt-cdf",
            "RTT distribution",
            _rtt_cdf_caption(results, traced, interval, per_ack),
            lambda ax: plots.rtt_cdf(results, ax=ax, source="both"),
        ),
        FigureSpec(
            "goodput",
            "Goodput over time",
            f"Application bytes delivered in order per {interval} interval, in Mbit/s. The "
            "flow table's goodput is the average from the flow's start to its completion "
            "(or the end of the run).",
            lambda ax: plots.timeseries(results, "goodput_bps", ax=ax),
        ),
        FigureSpec(
            "cwnd",
            "Congestion window over time",
            "The sender's congestion window at each sample, in kB (1 kB = 1000 bytes).",
            lambda ax: plots.timeseries(results, "cwnd_bytes", ax=ax),
        ),
        FigureSpec(
            "rtt",
            "RTT over time",
            f"Mean of the {per_ack} RTT samples taken in each {interval} interval, in ms "
            "(the samples the flow table's RTT percentiles summarize).",
            lambda ax: plots.timeseries(results, "rtt_ms", ax=ax),
        ),
    ]
    specs += _app_figures(results, interval)
    specs += _qoe_figures(results)
    if results.queues():
        specs += [
            FigureSpec(
                "queue-delay",
                "Queue sojourn over time",
                f"Mean sojourn time of the packets that left each queue per {interval} "
                "interval, in ms; DualPI2's L (L4S) and C (classic) queues apart. The "
                "queue table's percentiles are over every packet, not over these means.",
                lambda ax: plots.queue_delay(results, ax=ax),
            ),
            FigureSpec(
                "queue-delay-cdf",
                "Queue sojourn distribution",
                f"CDF of the {interval} means of each queue's sojourn; dots mark the "
                "per-packet percentiles (p50, p90, p99, p99.9) of summary.json, the queue "
                "table's numbers. Means hide the tail: the dots show it.",
                lambda ax: plots.queue_delay_cdf(results, ax=ax),
            ),
            FigureSpec(
                "drops-marks",
                "Drops and CE marks over time",
                "Packets dropped (solid) and CE-marked (dashed) at each queue, per second.",
                lambda ax: plots.drops_marks(results, ax=ax),
            ),
        ]
    kinds = {str(queue.get("kind", "")) for queue in results.queues().values()}
    if kinds & set(PROBABILITY_KEYS):
        specs.append(
            FigureSpec(
                "probability",
                "Marking / drop probability",
                "The AQM's control variable at each sample: DualPI2's p_C (classic drop or "
                "mark, p'²) and p_CL (coupled L4S marking, k·p'); PIE's drop probability.",
                lambda ax: plots.aqm_probability(results, ax=ax),
            )
        )
    if any(_has_key(results, f"queue/{name}", "count") for name in results.queues()):
        specs.append(
            FigureSpec(
                "codel-count",
                "CoDel control law",
                "CoDel's count: drops (or marks) in the current dropping state; the next "
                "one comes interval/√count later.",
                lambda ax: plots.timeseries(
                    results,
                    "count",
                    ax=ax,
                    series=[
                        f"queue/{name}"
                        for name in results.queues()
                        if _has_key(results, f"queue/{name}", "count")
                    ],
                ),
            )
        )
    specs += _wifi_figures(results)
    names = flow_order(results.summary)
    if traced and names:
        chosen = flow if flow is not None else names[0]
        specs.append(
            FigureSpec(
                "tsg",
                f"Time-sequence graph of {chosen}",
                "tcptrace-style, at the sender: ticks are data segments (retransmissions "
                "and CE-marked copies highlighted), the step line the cumulative ACK, the "
                "dashed line the receive window, bars SACK blocks, X drops. Whole run: an "
                f"element with more than {plots.TSG_MAX_EVENTS:,} events is drawn per time "
                "bin (lowest to highest sequence number of each bin; the legend says "
                "which); the zoomed graph below shows every packet.",
                lambda ax: plots.time_sequence(results, chosen, ax=ax),
                wide=True,
            )
        )
        window = tsg_window if tsg_window is not None else plots.interesting_window(results, chosen)
        if window is not None:
            where = (
                "the range asked for (--tsg-window)"
                if tsg_window is not None
                else "around the first loss, retransmission or CE mark of the flow "
                "(another range: l4slab report --tsg-window T0:T1)"
            )
            specs.append(
                FigureSpec(
                    "tsg-zoom",
                    f"Time-sequence graph of {chosen}, zoomed",
                    f"{window[0]:.3f} s to {window[1]:.3f} s: {where}.",
                    lambda ax: plots.time_sequence(results, chosen, ax=ax, t_range=window),
                    wide=True,
                )
            )
    return specs


def _wifi_figures(results: Results) -> list[FigureSpec]:
    """The Wi-Fi cell's figures (shown in its own section); none without a cell."""
    if not plots.has_wifi(results):
        return []
    return [
        FigureSpec(
            "wifi-airtime",
            "Airtime per station",
            "Each station's share of the airtime the stations used: the exchanges to and "
            "from it, downlink from the AP and uplink (PPDU + SIFS + response, or + ACK "
            "timeout when it failed). Labels: the share, its airtime as a share of the "
            "measured time, and the fraction of its MPDU transmissions that failed "
            "(lost to noise or a collision, then retried or dropped at the retry limit).",
            lambda ax: plots.wifi_airtime(results, ax=ax),
            section=WIFI_SECTION,
        ),
        FigureSpec(
            "wifi-access-delay",
            "Access delay per access category",
            "MAC access delay: from the moment an access category has something to send "
            "on a link to the start of its transmission there, over every transmitter of "
            "the cell; p50, p90, p99, p99.9 and max, one line per AC that sent (VO voice, "
            "VI video, BE best effort, BK background). Each step right is one more nine.",
            lambda ax: plots.wifi_access_delay(results, ax=ax),
            section=WIFI_SECTION,
        ),
        FigureSpec(
            "wifi-ampdu",
            "A-MPDU sizes",
            "How many MPDUs each PPDU carried (A-MPDU aggregation), as a share of PPDUs; "
            "the dashed line is the mean.",
            lambda ax: plots.wifi_ampdu(results, ax=ax),
            section=WIFI_SECTION,
        ),
    ]


def _rtt_cdf_caption(results: Results, traced: bool, interval: str, per_ack: str) -> str:
    """What the RTT CDF shows, and why its line and the flow table's RTT differ."""
    meaning = RTT_MEANING[per_ack]
    if not traced:
        return (
            f"Cumulative distribution of the {interval} means of each flow's {per_ack} "
            f"RTT samples (dashed; {meaning}); dots: their p50, p90, p99 and p99.9 from "
            "summary.json, the flow table's numbers. Means hide the tail, the dots do not. "
            "Set packet_trace = true for the per-segment RTT."
        )
    return (
        "Two different RTTs. Solid: the per-segment RTT from the packet trace — one "
        "sample per data segment sent once, from its send to the arrival at the sender "
        "of the first ACK covering it, cumulatively or by SACK (0.1 % resolution). Dots "
        f"and dashed: the {meaning.split(':', 1)[0]} samples the flow table summarizes — "
        "dots their p50, p90, p99 and p99.9, dashed their "
        f"{interval} means. "
        + (
            "The sender takes an RTT sample only from an ACK that acknowledges new data, "
            "one per ACK (about one per two segments): none while loss recovery "
            "acknowledges segments by SACK alone, which is when the queue is often "
            "longest. So the per-segment tail can lie well above the table's p99."
            if per_ack == "per-ACK"
            else f"The {per_ack} is smoothed and sampled at intervals, so it shows less "
            "of the tail than the per-segment RTT."
        )
    )


#: Application series a report plots when some flow has them: (key, title, caption).
_APP_SERIES = (
    (
        "frame_rate_fps",
        "Received frame rate",
        "Frames displayed (last byte delivered in order) per second, per {interval} "
        "interval; a video call shows each direction.",
    ),
    (
        "frame_latency_ms",
        "Frame latency",
        "Mean capture → display latency of the frames displayed in each {interval} "
        "interval, in ms.",
    ),
    (
        "app_bitrate_bps",
        "Application bitrate",
        "Bits per second the application captured (its adapted encoding rate) per "
        "{interval} interval.",
    ),
    (
        "ping_rtt_ms",
        "Ping RTT",
        "Mean RTT of the ping probes answered in each {interval} interval, in ms.",
    ),
)


def _app_figures(results: Results, interval: str) -> list[FigureSpec]:
    """A figure per application series that some flow recorded."""
    flows = [f"flow/{name}" for name in flow_order(results.summary)]
    specs = []
    for key, title, caption in _APP_SERIES:
        # Per-direction variants (e.g. frame_rate_fps.up) plot alongside.
        keys = sorted(
            {
                k
                for series in flows
                if series in results.series_names()
                for k in results.series_keys(series)
                if k == key or k.startswith(key + ".")
            }
        )
        for k in keys:
            with_key = [s for s in flows if _has_key(results, s, k)]
            specs.append(
                FigureSpec(
                    _anchor(k),
                    title + (f" ({k[len(key) + 1 :]})" if k != key else ""),
                    caption.format(interval=interval),
                    _timeseries_drawer(results, k, with_key),
                )
            )
    return specs


def _qoe_figures(results: Results) -> list[FigureSpec]:
    """A figure per video player (buffer and bitrate over time), and one of the page
    load times of every browsing flow."""
    specs = [
        FigureSpec(
            f"video-{_anchor(name)}",
            f"Video player {name}",
            "Media buffered (blue, s; dashed: the buffer target) and the bitrate of the "
            "segment last asked for (orange, Mbit/s, right axis), one sample per "
            f"{_interval_text(results)} interval (series video_buffer_s, "
            "video_bitrate_bps); shaded: stalled (video_stalled); bars along the bottom: "
            "each segment's fetch, request to last byte (summary.json segments). "
            "The video table's numbers are this player's.",
            _player_drawer(results, name),
        )
        for name in app_flows(results.summary, "video_stream")
    ]
    if app_flows(results.summary, "web_browse"):
        specs.append(
            FigureSpec(
                "page-load-cdf",
                "Page load times",
                "CDF over each browsing flow's pages of the time from the page's start to "
                "its last object's last byte (solid) and to the HTML's first byte "
                "(dashed), in ms (summary.json pages: load_s, ttfb_s); dots: the load "
                "time's p50 and p95, the browsing table's numbers.",
                lambda ax: plots.page_load_cdf(results, ax=ax),
            )
        )
    return specs


def _player_drawer(results: Results, flow: str) -> Callable[[Axes], object]:
    def draw(ax: Axes) -> object:
        return plots.video_player(results, flow, ax=ax)

    return draw


def _timeseries_drawer(results: Results, key: str, series: list[str]) -> Callable[[Axes], object]:
    def draw(ax: Axes) -> object:
        return plots.timeseries(results, key, ax=ax, series=series)

    return draw


def render_figure(spec: FigureSpec) -> RenderedFigure:
    """Draw a figure and render it as PNG bytes and SVG text."""
    figure = Figure(figsize=WIDE_FIGSIZE if spec.wide else FIGSIZE, layout="constrained")
    spec.draw(figure.add_subplot())
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
    # The layout is done: keep it for the SVG rather than computing it again.
    figure.set_layout_engine("none")
    svg = io.StringIO()
    figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return RenderedFigure(spec, png.getvalue(), svg.getvalue())


def figure_files(figures: Sequence[RenderedFigure]) -> dict[str, bytes]:
    """Each figure as ``figures/<slug>.png`` and ``.svg`` (path → content), for
    :func:`~l4slab.results.write_files`; records the paths in ``figure.files``."""
    files: dict[str, bytes] = {}
    for figure in figures:
        png, svg = f"{FIGURES_DIR}/{figure.spec.slug}.png", f"{FIGURES_DIR}/{figure.spec.slug}.svg"
        files[png] = figure.png
        files[svg] = figure.svg.encode("utf-8")
        figure.files.extend([png, svg])
    return files


def _interval_text(results: Results) -> str:
    interval = results.scenario.get("sample_interval")
    return _ms(interval) if isinstance(interval, int | float) else "sample-interval"


def _has_key(results: Results, series: str, key: str) -> bool:
    return series in results.series_names() and key in results.series_keys(series)
