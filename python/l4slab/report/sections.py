"""The run report's page: its sections in order (a glance at the results, Scenario,
Summary, the Wi-Fi cell when there is one, Figures, All metrics, Run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from l4slab import plots
from l4slab.qoe import qoe_tables
from l4slab.report._format import _flatten, _seconds_value, _value
from l4slab.report.figures import WIFI_SECTION, RenderedFigure
from l4slab.report.page import _e, _facts, _nav, _section, figures_html, html_page, html_table
from l4slab.report.scenario import _scenario_html
from l4slab.results import Results
from l4slab.tables import (
    MISSING,
    RTT_MEANING,
    apps_data,
    flow_order,
    flows_data,
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

SECTIONS = ("Scenario", "Summary", "Figures", "All metrics", "Run")


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


def _sections(results: Results) -> tuple[str, ...]:
    """The page's sections in order: :data:`SECTIONS`, and the Wi-Fi cell's when it has one."""
    if not plots.has_wifi(results):
        return SECTIONS
    at = SECTIONS.index("Summary") + 1
    return (*SECTIONS[:at], WIFI_SECTION, *SECTIONS[at:])


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


def _summary_html(results: Results) -> str:
    parts = [html_table(flows_data(results.summary))]
    apps = apps_data(results.summary)
    if apps is not None:
        parts.append(html_table(apps))
    qoe = qoe_tables(results.summary)
    if qoe:
        parts.append('<div class="tables">' + "".join(html_table(t) for t in qoe) + "</div>")
        parts.append(
            "<p class=\"note\">What the apps' users judge them by: each player's startup, "
            "stalls (rebuffering), bitrate and segment fetch times; each browser's time to "
            "a page's first byte and to its last object; each download's completion. The "
            "numbers of summary.json (the apps' <code>app_metrics</code> and "
            "<code>downloads</code>); each column's tooltip names its key "
            "(docs/apps.md).</p>"
        )
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


def _version(results: Results) -> str:
    return results.tool_version or "?"
