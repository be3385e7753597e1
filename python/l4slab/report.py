"""The HTML report of one run: scenario, summary tables, figures, every metric, run facts.

``write_report(DIR)`` reads a results bundle and writes ``DIR/report.html`` (one
self-contained file: CSS inline, figures embedded as base64 PNG) and every figure
as PNG and SVG in ``DIR/figures/``. Tables use the same cells as the CLI
(:mod:`l4slab.tables`). Nothing is printed and no window is opened.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from l4slab import plots
from l4slab.plots.timeseries import PROBABILITY_KEYS
from l4slab.results import Results, load, write_files
from l4slab.tables import (
    MISSING,
    RTT_MEANING,
    TableData,
    apps_data,
    flow_order,
    flows_data,
    format_bytes,
    format_count,
    format_number,
    phy_text,
    queues_data,
    rtt_name,
    run_line,
    seed_text,
    wifi_access_delay_data,
    wifi_links_data,
    wifi_stations_data,
)

__all__ = [
    "FIGURES_DIR",
    "REPORT_FILE",
    "SECTIONS",
    "WIFI_SECTION",
    "FigureSpec",
    "RenderedFigure",
    "figure_files",
    "html_page",
    "html_table",
    "render_figure",
    "report_figures",
    "report_html",
    "topology_text",
    "wifi_text",
    "write_report",
]

REPORT_FILE = "report.html"
FIGURES_DIR = "figures"

#: Size of the report's figures (inches) and their resolution.
FIGSIZE = (6.6, 3.7)
WIDE_FIGSIZE = (13.0, 5.4)
DPI = 110

SECTIONS = ("Scenario", "Summary", "Figures", "All metrics", "Run")
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


# --------------------------------------------------------------------------- entry point


def write_report(
    results_dir: str | os.PathLike[str] | Results,
    out: str | os.PathLike[str] | None = None,
    *,
    flow: str | None = None,
    tsg_window: tuple[float, float] | None = None,
) -> Path:
    """Write ``report.html`` and ``figures/`` for a results bundle; return the HTML's path.

    ``out`` is the directory to write into (default: the results directory itself).
    ``flow`` picks the flow of the time-sequence graph (default: the first flow);
    that graph needs the packet trace, the rest does not. ``tsg_window=(t0, t1)``
    (seconds) is the time range of the zoomed time-sequence graph (default: around
    the flow's first loss, retransmission or CE mark). The packet trace is read as
    a stream, so memory stays bounded however long it is. The report's files
    replace those of an earlier report (per the directory's manifest,
    ``.l4slab-manifest.json``): figures it no longer draws are removed, and
    nothing else in the directory or in ``figures/`` is touched. A file the
    report would overwrite that l4slab did not write raises ``FileExistsError``
    before anything is written.
    """
    results = results_dir if isinstance(results_dir, Results) else load(results_dir)
    if out is None:
        if results.path is None:
            raise ValueError("these results were never saved; give out= a directory")
        target = results.path
    else:
        target = Path(out)
    if flow is not None and flow not in results.flows():
        there = ", ".join(repr(name) for name in flow_order(results.summary)) or "none"
        raise KeyError(f"no flow {flow!r}; there are: {there}")
    specs = report_figures(results, flow=flow, tsg_window=tsg_window)
    rendered = [render_figure(spec) for spec in specs]
    files = figure_files(rendered)
    files[REPORT_FILE] = report_html(results, rendered).encode("utf-8")
    write_files(target, "report", files)
    return target / REPORT_FILE


# --------------------------------------------------------------------------- figures


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


# --------------------------------------------------------------------------- page


def report_html(results: Results, figures: Sequence[RenderedFigure]) -> str:
    """The whole report page as one HTML string."""
    name = results.name or "scenario"
    wifi = plots.has_wifi(results)
    titles = _sections(results)
    parts = [
        f'<h1>{_e(name)} <span class="kind">— l4slab report</span></h1>',
        f'<p class="lead">{_e(results.scenario.get("description") or "")}</p>',
        _nav(titles),
        _glance(results),
        _section("Scenario", _scenario_html(results)),
        _section("Summary", _summary_html(results)),
    ]
    # A figure is shown in its section when the page has it, else among the figures.
    cell = [f for f in figures if wifi and f.spec.section == WIFI_SECTION]
    if wifi:
        parts.append(_section(WIFI_SECTION, _wifi_html(results, cell)))
    parts += [
        _section("Figures", figures_html([f for f in figures if f not in cell])),
        _section("All metrics", _all_metrics_html(results)),
        _section("Run", _run_html(results)),
    ]
    return html_page(f"{name} — l4slab report", "\n".join(parts), _version(results))


def html_page(title: str, body: str, version: str) -> str:
    """Wrap a body in the report page (inline CSS, no external resources)."""
    folder = resources.files("l4slab") / "templates"
    page = Template((folder / "page.html").read_text(encoding="utf-8"))
    css = (folder / "report.css").read_text(encoding="utf-8")
    return page.substitute(title=_e(title), css=css, body=body, version=_e(version))


def html_table(data: TableData, *, caption: bool = True) -> str:
    """A :class:`~l4slab.tables.TableData` as an HTML table (same cells as the CLI)."""
    head = "".join(
        f'<th class="{"num" if column.numeric else "text"}"'
        + (f' title="{_e(column.tip)}"' if column.tip else "")
        + f">{'<br>'.join(_e(part) for part in column.header.split(chr(10)))}</th>"
        for column in data.columns
    )
    rows = []
    for row in data.rows:
        cells = "".join(
            f'<td class="{"num" if column.numeric else "text"}">{_e(cell)}</td>'
            for column, cell in zip(data.columns, row.cells, strict=False)
        )
        rows.append(f"<tr{' class=sub' if row.sub else ''}>{cells}</tr>")
    title = f"<caption>{_e(data.title)}</caption>" if caption and data.title else ""
    return (
        f'<div class="scroll"><table>{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def figures_html(figures: Sequence[RenderedFigure]) -> str:
    """The figures as a grid of ``<figure>``s with embedded PNGs and links to the files."""
    items = []
    for figure in figures:
        spec = figure.spec
        data = base64.b64encode(figure.png).decode("ascii")
        links = " · ".join(
            f'<a href="{_e(path)}">{_e(path.rsplit(".", 1)[-1].upper())}</a>'
            for path in figure.files
        )
        items.append(
            f'<figure id="fig-{_e(spec.slug)}"{" class=wide" if spec.wide else ""}>'
            f'<img src="data:image/png;base64,{data}" alt="{_e(spec.title)}">'
            f"<figcaption><strong>{_e(spec.title)}.</strong> {_e(spec.caption)}"
            f"{' ' + links if links else ''}</figcaption></figure>"
        )
    if not items:
        return '<p class="note">No figures.</p>'
    return f'<div class="figures">{"".join(items)}</div>'


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


# --------------------------------------------------------------------------- sections


def _section(title: str, body: str) -> str:
    return f'<section id="{_anchor(title)}"><h2>{_e(title)}</h2>\n{body}\n</section>'


def _sections(results: Results) -> tuple[str, ...]:
    """The page's sections in order: :data:`SECTIONS`, and the Wi-Fi cell's when it has one."""
    if not plots.has_wifi(results):
        return SECTIONS
    at = SECTIONS.index("Summary") + 1
    return (*SECTIONS[:at], WIFI_SECTION, *SECTIONS[at:])


def _nav(titles: Iterable[str]) -> str:
    links = "".join(f'<a href="#{_anchor(title)}">{_e(title)}</a>' for title in titles)
    return f"<nav>{links}</nav>"


def _glance(results: Results) -> str:
    """One card per flow (goodput, RTT p50/p99) and per queue (sojourn p99, drops, marks)."""
    cards = []
    per_ack = rtt_name(results.summary)
    for name in flow_order(results.summary):
        flow = results.flows()[name]
        rtt = flow.get("rtt_ms") or {}
        cards.append(
            '<div class="card">'
            f'<div class="name">{_e(name)} <span class="small">{_e(flow.get("cc") or "")}</span>'
            "</div>"
            f'<div class="big">{format_number(flow.get("goodput_bps"), scale=1e-6, digits=2)}'
            ' <span class="small">Mbit/s</span></div>'
            f'<div class="small">{_e(per_ack)} RTT p50 {format_number(rtt.get("p50"))} ms · '
            f"p99 {format_number(rtt.get('p99'))} ms</div></div>"
        )
    for name, queue in results.queues().items():
        sojourn = queue.get("sojourn_ms") or {}
        drops = (queue.get("drops") or {}).get("total")
        marks = (queue.get("marks") or {}).get("total")
        cards.append(
            '<div class="card" style="border-top-color:#e69f00">'
            f'<div class="name">{_e(name)} <span class="small">{_e(queue.get("kind") or "")}'
            "</span></div>"
            f'<div class="big">{format_number(sojourn.get("p99"), digits=2)}'
            ' <span class="small">ms sojourn p99</span></div>'
            f'<div class="small">{format_count(drops)} drops · {format_count(marks)} CE marks'
            f" · {format_number(queue.get('utilization'), scale=100)} % busy</div></div>"
        )
    wifi = results.summary.get("wifi")
    links = wifi.get("links") if isinstance(wifi, Mapping) else None
    for index, link in enumerate(links if isinstance(links, list) else []):
        if not isinstance(link, Mapping):
            continue
        cards.append(
            '<div class="card" style="border-top-color:#009e73">'
            f'<div class="name">Wi-Fi link {index} <span class="small">'
            f"{_e(phy_text(link.get('phy')))}</span></div>"
            f'<div class="big">{format_number(link.get("busy_fraction"), scale=100)}'
            ' <span class="small">% busy</span></div>'
            f'<div class="small">{format_count(link.get("txops"))} TXOPs · '
            f"{format_number(link.get('collision_fraction'), scale=100)} % collided</div></div>"
        )
    return f'<div class="cards">{"".join(cards)}</div>' if cards else ""


def _scenario_html(results: Results) -> str:
    scenario = results.scenario
    line = " · ".join(
        [
            f"{_seconds(scenario.get('duration'))} simulated",
            seed_text(results.summary),
            f"a sample every {_ms(scenario.get('sample_interval'))}",
            "packet trace: " + ("yes" if scenario.get("packet_trace") else "no"),
        ]
    )
    parts = [f"<p>{_e(line)}</p>"]
    parts.append("<h3>Topology</h3>")
    parts.append(f'<div class="topology">{_e(topology_text(scenario))}</div>')
    parts.append(_qdisc_html(scenario))
    parts.append("<h3>Flows</h3>")
    parts.append(html_table(_scenario_flows(scenario), caption=False))
    parts.append(
        "<details><summary>Resolved scenario (JSON: times in ns, rates in bit/s, sizes in "
        f'bytes)</summary><pre class="json">{_e(json.dumps(scenario, indent=2))}</pre>'
        "</details>"
    )
    return "\n".join(parts)


def topology_text(scenario: Mapping[str, Any]) -> str:
    """E.g. ``client — 20 Mbit/s, 10 ms — server``; one line per direction if they differ.

    With a Wi-Fi cell the clients reach the bottleneck through its AP
    (``laptop ~ Wi-Fi ~ AP — 100 Mbit/s, ...``), and :func:`wifi_text` follows.
    """
    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]

    def side(which: str) -> str:
        names = [_host_text(h) for h in hosts if h.get("side") == which]
        return ", ".join(names) or which

    bottleneck = scenario.get("bottleneck") or {}
    down, up = bottleneck.get("down") or {}, bottleneck.get("up") or {}
    clients, servers = side("client"), side("server")
    cell = wifi_text(scenario)
    if cell:
        clients += " ~ Wi-Fi ~ AP"
    if _link_text(down) == _link_text(up):
        text = f"{clients} — {_link_text(down)} — {servers}"
    else:
        text = (
            f"{clients} ⇄ bottleneck ⇄ {servers}\n"
            f"  down (server → client): {_link_text(down)}\n"
            f"  up   (client → server): {_link_text(up)}"
        )
    return f"{text}\n{cell}" if cell else text


def wifi_text(scenario: Mapping[str, Any]) -> str:
    """The Wi-Fi cell of a resolved scenario in a few lines: its stations, the PHY of each
    link, the queues, and each station's SNR, MCS and scans; ``""`` without a cell."""
    wifi = scenario.get("wifi")
    if not isinstance(wifi, Mapping):
        return ""
    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]
    stations = [s for s in wifi.get("stations") or [] if isinstance(s, Mapping)]

    def name(station: Mapping[str, Any]) -> str:
        index = station.get("host")
        if isinstance(index, int) and 0 <= index < len(hosts):
            return str(hosts[index].get("name"))
        return f"host {index}"

    links = list(wifi.get("links") or [])
    lines = [
        "Wi-Fi cell: an AP at the bottleneck's client end; stations "
        + (", ".join(name(s) for s in stations) or "none")
    ]
    lines += [f"  link {i}: {phy_text(phy)}" for i, phy in enumerate(links)]
    queues = (
        f"  queues: AP {_qdisc_kind(wifi.get('ap_qdisc'))} (one per station and AC), "
        f"stations {_qdisc_kind(wifi.get('station_qdisc'))} (one per AC)"
    )
    if wifi.get("retry_limit") is not None:
        queues += f"; retry limit {wifi.get('retry_limit')}"
    lines.append(queues)
    for station in stations:
        own = [link for link in station.get("links") or [] if isinstance(link, Mapping)]
        radio = [
            ("" if len(links) < 2 else f"link {link.get('link')} ")
            + f"SNR {_value(link.get('snr_db'))} dB, MCS {_value(link.get('mcs'))}"
            for link in own
        ] or ["no link"]
        scan = station.get("scan")
        if isinstance(scan, Mapping):
            radio.append(
                f"scans for {_ms(scan.get('duration'))} every {_seconds(scan.get('every'))}"
                f" (first at {_seconds(scan.get('first'))})"
            )
        lines.append(f"  {name(station)}: {'; '.join(radio)}")
    return "\n".join(lines)


def _qdisc_kind(qdisc: Any) -> str:
    return str(qdisc.get("kind") or "?") if isinstance(qdisc, Mapping) else "?"


def _host_text(host: Mapping[str, Any]) -> str:
    """E.g. ``laptop (+2 ms; access down 50 Mbit/s, up 10 Mbit/s)``."""
    extras = [f"+{_ms(host.get('access_delay'))}"] if host.get("access_delay") else []
    access = host.get("access")
    links = access if isinstance(access, Mapping) else {}
    rates = [
        (d, _rate(link.get("rate")))
        for d in ("down", "up")
        if isinstance(link := links.get(d), Mapping)
    ]
    if len(rates) == 2 and rates[0][1] == rates[1][1]:
        extras.append(f"access {rates[0][1]}")
    elif rates:
        extras.append("access " + ", ".join(f"{d} {r}" for d, r in rates))
    return f"{host.get('name')}" + (f" ({'; '.join(extras)})" if extras else "")


def _link_text(link: Mapping[str, Any]) -> str:
    parts = [_rate(link.get("rate")), _ms(link.get("delay"))]
    loss = link.get("loss") or {}
    if isinstance(loss, Mapping) and loss.get("kind") not in (None, "none"):
        details = ", ".join(f"{k} {v}" for k, v in loss.items() if k != "kind")
        parts.append(f"{loss.get('kind')} loss ({details})" if details else f"{loss['kind']}")
    qdisc = link.get("qdisc") or {}
    if isinstance(qdisc, Mapping) and qdisc.get("kind"):
        parts.append(str(qdisc["kind"]))
    return ", ".join(parts)


def _qdisc_html(scenario: Mapping[str, Any]) -> str:
    bottleneck = scenario.get("bottleneck") or {}
    directions = [(d, (bottleneck.get(d) or {}).get("qdisc") or {}) for d in ("down", "up")]
    if directions[0][1] == directions[1][1]:
        directions = [("both directions", directions[0][1])]
    wifi = scenario.get("wifi")
    if isinstance(wifi, Mapping):
        directions += [
            ("Wi-Fi AP, a queue per station and AC", wifi.get("ap_qdisc") or {}),
            ("Wi-Fi stations, a queue per AC", wifi.get("station_qdisc") or {}),
        ]
    parts = []
    for where, qdisc in directions:
        if not isinstance(qdisc, Mapping):
            continue
        kinds = _param_kinds(str(qdisc.get("kind") or ""))
        rows = [(key, _param(key, value, kinds)) for key, value in _flatten(qdisc) if key != "kind"]
        items = "".join(
            f'<div><span class="mono">{_e(k)}</span> <strong>{_e(v)}</strong></div>'
            for k, v in rows
        )
        parts.append(
            f"<h3>Queue discipline: {_e(qdisc.get('kind') or '?')} ({_e(where)})</h3>"
            + (
                f'<div class="params">{items}</div>'
                if rows
                else '<p class="note">No parameters.</p>'
            )
        )
    return "\n".join(parts)


def _scenario_flows(scenario: Mapping[str, Any]) -> TableData:
    from l4slab.tables import Column, Row

    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]
    bottleneck = scenario.get("bottleneck") or {}
    one_way = sum(float((bottleneck.get(d) or {}).get("delay") or 0) for d in ("down", "up"))

    def host(index: Any) -> Mapping[str, Any]:
        return hosts[index] if isinstance(index, int) and 0 <= index < len(hosts) else {}

    wifi = isinstance(scenario.get("wifi"), Mapping)

    rows = []
    for flow in scenario.get("flows") or []:
        client, server = host(flow.get("client")), host(flow.get("server"))
        sender, receiver = (server, client) if flow.get("direction") == "down" else (client, server)
        access = float(client.get("access_delay") or 0) + float(server.get("access_delay") or 0)
        app = flow.get("app") or {}
        app_text = str(app.get("kind", "?"))
        if app.get("size") is not None:
            app_text += f" {format_bytes(app.get('size'))}"
        rows.append(
            Row(
                (
                    str(flow.get("name")),
                    f"{sender.get('name', '?')} → {receiver.get('name', '?')}",
                    str(flow.get("cc", "?")),
                    app_text,
                    format_number((flow.get("start") or 0) / 1e9, digits=3),
                    format_number((one_way + 2 * access) / 1e6, digits=1),
                    format_count((flow.get("transport") or {}).get("mss")),
                    *([str(flow.get("wifi_ac") or "be")] if wifi else []),
                )
            )
        )
    columns = (
        Column("flow", numeric=False),
        Column("sender → receiver", numeric=False),
        Column("cc", numeric=False),
        Column("app", numeric=False),
        Column("start\ns"),
        Column("base RTT\nms"),
        Column("MSS\nbytes"),
        *(
            [
                Column(
                    "Wi-Fi\nAC",
                    numeric=False,
                    tip="the access category its packets use in the Wi-Fi cell (wifi_ac): "
                    "vo voice, vi video, be best effort, bk background",
                )
            ]
            if wifi
            else []
        ),
    )
    return TableData("flows", columns, tuple(rows))


def _summary_html(results: Results) -> str:
    parts = [html_table(flows_data(results.summary))]
    apps = apps_data(results.summary)
    if apps is not None:
        parts.append(html_table(apps))
    if results.queues():
        parts.append(html_table(queues_data(results.summary)))
    per_ack = rtt_name(results.summary)
    parts.append(
        '<p class="note">Goodput in Mbit/s (10⁶ bit/s); RTT and sojourn in ms; sizes in '
        "decimal bytes (1 MB = 10⁶ B); utilization in % of the link rate. The same "
        "numbers as <code>l4slab show</code>. "
        f"The RTT columns are the {_e(RTT_MEANING[per_ack])} — not the per-segment RTT "
        "of the packet trace (see the RTT distribution figure). Sojourn: the time each "
        "packet spent in the queue, over every packet; the figures' lines are means per "
        "interval.</p>"
    )
    return "\n".join(parts)


def _wifi_html(results: Results, figures: Sequence[RenderedFigure]) -> str:
    """The Wi-Fi cell: its tables (stations, links, access delay), A-MPDU sizes, figures."""
    summary = results.summary
    wifi = summary.get("wifi") or {}
    parts = [
        '<p class="note">What the cell counted over the measured time (summary.json '
        "<code>wifi</code>): airtime, MPDU retries and drops per station (its downlink "
        "from the AP and its uplink together), how busy each link was and how often "
        "transmissions collided, the MAC access delay per access category, and A-MPDU "
        "sizes. The cell's queues (<code>wifi.&lt;station&gt;.down|up.&lt;ac&gt;</code>) "
        "are in the queue table.</p>"
    ]
    tables = [
        table
        for table in (
            wifi_stations_data(summary),
            wifi_links_data(summary),
            wifi_access_delay_data(summary),
        )
        if table is not None and table.rows
    ]
    parts.append('<div class="tables">' + "".join(html_table(t) for t in tables) + "</div>")
    ampdu = wifi.get("ampdu") if isinstance(wifi, Mapping) else None
    if isinstance(ampdu, Mapping) and ampdu.get("ppdus"):
        parts.append(
            f"<p>A-MPDUs: {_e(format_count(ampdu.get('ppdus')))} PPDUs carried "
            f"{_e(format_number(ampdu.get('mean_mpdus'), digits=1))} MPDUs on average.</p>"
        )
    if figures:
        parts.append(figures_html(figures))
    return "\n".join(parts)


def _all_metrics_html(results: Results) -> str:
    parts = [
        '<p class="note">Every metric of summary.json, by flow and by queue (keys as '
        "documented in docs/results.md; the unit is the key's suffix), and statistics of "
        "every time series in series.parquet.</p>"
    ]
    flows = results.flows()
    names = flow_order(results.summary)
    if names:
        parts.append(
            "<details><summary>Flows: every metric</summary>"
            + _metric_matrix({name: flows[name] for name in names}, "flow")
            + "</details>"
        )
    if results.queues():
        parts.append(
            "<details><summary>Queues: every metric</summary>"
            + _metric_matrix(results.queues(), "queue")
            + "</details>"
        )
    wifi = results.summary.get("wifi")
    if isinstance(wifi, Mapping):
        parts.append(_wifi_metrics_html(wifi))
    parts.append(
        "<details><summary>Time series: samples, min, mean, max</summary>"
        + _series_stats(results)
        + "</details>"
    )
    extra = {
        k: v for k, v in results.summary.items() if k not in ("flows", "queues", "scenario", "wifi")
    }
    if extra:
        rows = "".join(
            f'<tr><td class="key">{_e(k)}</td><td class="num">{_e(_value(v))}</td></tr>'
            for k, v in _flatten(extra)
        )
        parts.append(
            "<details><summary>Run totals</summary>"
            f'<div class="scroll"><table><thead><tr><th>key</th><th class="num">value</th>'
            f"</tr></thead><tbody>{rows}</tbody></table></div></details>"
        )
    return "\n".join(parts)


def _wifi_metrics_html(wifi: Mapping[str, Any]) -> str:
    """Every metric of summary.json's ``wifi``: by station, by link, by AC, A-MPDU sizes."""
    stations = wifi.get("stations") or {}
    links = {
        f"link {i}": link
        for i, link in enumerate(wifi.get("links") or [])
        if isinstance(link, Mapping)
    }
    delays = wifi.get("access_delay_ms") or {}
    parts = []
    for items, what in ((stations, "station"), (links, "link"), (delays, "access_delay_ms")):
        if isinstance(items, Mapping) and items:
            parts.append(_metric_matrix(items, what))
    ampdu = wifi.get("ampdu")
    if isinstance(ampdu, Mapping) and ampdu:
        rows = "".join(
            f'<tr><td class="key">{_e(k)}</td><td class="num">{_e(_value(v))}</td></tr>'
            for k, v in _flatten({"ampdu": ampdu})
        )
        parts.append(
            '<div class="scroll"><table><thead><tr><th>key</th><th class="num">value</th>'
            f"</tr></thead><tbody>{rows}</tbody></table></div>"
        )
    return "<details><summary>Wi-Fi cell: every metric</summary>" + "".join(parts) + "</details>"


def _metric_matrix(items: Mapping[str, Mapping[str, Any]], what: str) -> str:
    flat = {name: dict(_flatten(metrics)) for name, metrics in items.items()}
    keys: list[str] = []
    for metrics in flat.values():
        keys.extend(key for key in metrics if key not in keys)
    head = "".join(f'<th class="num">{_e(name)}</th>' for name in flat)
    rows = "".join(
        f'<tr><td class="key">{_e(key)}</td>'
        + "".join(
            f'<td class="num">{_e(_value(metrics[key]) if key in metrics else "")}</td>'
            for metrics in flat.values()
        )
        + "</tr>"
        for key in sorted(keys)
    )
    return (
        f'<div class="scroll"><table><thead><tr><th>{_e(what)} metric</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _series_stats(results: Results) -> str:
    rows = []
    for series in results.series_names():
        for key in results.series_keys(series):
            _, values = results.series(series, key)
            finite = values[np.isfinite(values)]
            stats = (
                (len(values), finite.min(), finite.mean(), finite.max())
                if len(finite)
                else (len(values), None, None, None)
            )
            rows.append(
                f'<tr><td class="key">{_e(series)}</td><td class="key">{_e(key)}</td>'
                + "".join(f'<td class="num">{_e(_value(v))}</td>' for v in stats)
                + "</tr>"
            )
    return (
        '<div class="scroll"><table><thead><tr><th>series</th><th>key</th>'
        '<th class="num">samples</th><th class="num">min</th><th class="num">mean</th>'
        f'<th class="num">max</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def _run_html(results: Results) -> str:
    info = results.run_info
    stats = results.stats
    host = info.get("host") or {}
    facts = {
        "results directory": str(results.path) if results.path is not None else MISSING,
        "l4slab version": results.tool_version,
        "backend": results.summary.get("backend"),
        "seed": seed_text(results.summary),
        "random draws": format_count(results.random_draws),
        "simulated": _seconds_value(stats.get("sim_s") or results.summary.get("duration_s")),
        "wall time": _seconds_value(stats.get("wall_s")),
        "speed": run_line(stats) or MISSING,
        "events": format_count(stats.get("events")),
        "events per second": format_number(stats.get("events_per_s"), digits=0),
        "packets": format_count(stats.get("packets")),
        "finished at": info.get("finished_at"),
        "command": " ".join(str(a) for a in info.get("command") or []) or MISSING,
        "host": ", ".join(
            f"{k} {v}" for k, v in host.items() if v is not None and not isinstance(v, dict)
        )
        or MISSING,
    }
    return _facts(facts) + (
        '<p class="note">From run.json: the only file of a bundle that depends on the machine '
        "and may differ between identical runs.</p>"
    )


# --------------------------------------------------------------------------- formatting


def _facts(facts: Mapping[str, Any]) -> str:
    items = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(MISSING if v is None else str(v))}</dd>" for k, v in facts.items()
    )
    return f'<dl class="facts">{items}</dl>'


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` -> ``[("a.b", 1), ("c", [1, 2])]``."""
    if isinstance(value, Mapping):
        out: list[tuple[str, Any]] = []
        for key, inner in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(inner, Mapping) and inner:
                out.extend(_flatten(inner, path))
            else:
                out.append((path, inner))
        return out
    return [(prefix, value)]


def _value(value: Any) -> str:
    """A metric value as text: integers with separators, floats to 6 significant digits."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            return MISSING
        if number == int(number) and abs(number) < 1e15:
            return f"{int(number):,}"
        return f"{number:,.6g}" if abs(number) >= 1e-3 or number == 0 else f"{number:.3g}"
    if isinstance(value, Mapping | list):
        return json.dumps(value) if value else MISSING
    return str(value)


#: Keys of a resolved qdisc that are not tc parameters but hold durations in ns
#: (DualPI2's step threshold written as a time resolves to `{"time": ns}`).
_DURATION_LEAVES = frozenset({"time"})


def _param_kinds(qdisc: str) -> dict[str, str]:
    """The declared kind of each of a qdisc's parameters (``duration``, ``bytes``, ...):
    asked of the native module, which declares them once."""
    try:
        from l4slab import _native

        return {
            name: p["kind"]
            for p in _native.qdisc_params(qdisc)
            for name in (p["name"], *p["aliases"])
        }
    except (ImportError, ValueError):
        return {}


def _param(key: str, value: Any, kinds: Mapping[str, str]) -> str:
    leaf = key.rsplit(".", 1)[-1]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    kind = kinds.get(leaf) or kinds.get(key.split(".", 1)[0])
    if number and (kind == "duration" or leaf in _DURATION_LEAVES):
        return _ms(value)
    if number and kind == "bytes":
        return f"{format_bytes(value)}"
    return _value(value)


def _ms(ns: Any) -> str:
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return MISSING
    return f"{ns / 1e6:g} ms"


def _seconds(ns: Any) -> str:
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return MISSING
    return f"{ns / 1e9:g} s"


def _seconds_value(s: Any) -> str:
    if not isinstance(s, int | float) or isinstance(s, bool):
        return MISSING
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def _rate(bps: Any) -> str:
    if not isinstance(bps, int | float) or isinstance(bps, bool):
        return MISSING
    for unit, size in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= size:
            return f"{bps / size:g} {unit}"
    return f"{bps:g} bit/s"


def _interval_text(results: Results) -> str:
    interval = results.scenario.get("sample_interval")
    return _ms(interval) if isinstance(interval, int | float) else "sample-interval"


def _has_key(results: Results, series: str, key: str) -> bool:
    return series in results.series_names() and key in results.series_keys(series)


def _version(results: Results) -> str:
    return results.tool_version or "?"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
