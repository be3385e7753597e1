"""Summary tables of a result: the numbers once, rendered for the terminal and for HTML.

:func:`flows_data` and :func:`queues_data` compute the cells (strings, units
converted) from a summary; :func:`flows_table` and :func:`queues_table` render
them as rich tables for the CLI, and the HTML report renders the same
:class:`TableData`, so the terminal and the report never disagree. Nothing is
printed here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import PaddingDimensions
from rich.table import Table
from rich.text import Text

from l4slab.results import Results

__all__ = [
    "MISSING",
    "RTT_MEANING",
    "SOJOURN_MEANING",
    "WIFI_ACS",
    "Column",
    "Row",
    "TableData",
    "apps_data",
    "flow_order",
    "flows_data",
    "flows_table",
    "format_bytes",
    "format_count",
    "format_number",
    "phy_text",
    "plain_table",
    "queues_data",
    "queues_table",
    "rich_table",
    "rtt_name",
    "run_line",
    "seed_text",
    "summary_view",
    "wifi_access_delay_data",
    "wifi_links_data",
    "wifi_station_order",
    "wifi_stations_data",
]

#: What a cell shows when the value is missing, null or not finite.
MISSING = "—"


@dataclass(frozen=True)
class Column:
    """A column: its header (name, then the unit on a second line), alignment, and what
    exactly it shows (``tip``: the HTML report's header tooltip)."""

    header: str
    numeric: bool = True
    no_wrap: bool = False
    tip: str = ""


@dataclass(frozen=True)
class Row:
    """A row of cells; ``sub`` marks a sub-row (a DualPI2 sub-queue) under the row above."""

    cells: tuple[str, ...]
    sub: bool = False


@dataclass(frozen=True)
class TableData:
    """A table as text cells, ready to render in a terminal or in HTML."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]


def summary_view(results: Results) -> RenderableType:
    """Flow table, the apps' tables, queue table and a one-line account of the run, stacked."""
    # l4slab.qoe builds its tables from this module's cells: imported here, not above.
    from l4slab.qoe import qoe_tables

    parts: list[RenderableType] = [flows_table(results.summary)]
    apps = apps_data(results.summary)
    if apps is not None:
        parts.append(rich_table(apps))
    parts += [rich_table(table) for table in qoe_tables(results.summary)]
    if results.queues():
        parts.append(queues_table(results.summary))
    for wifi in (
        wifi_stations_data(results.summary),
        wifi_links_data(results.summary),
        wifi_access_delay_data(results.summary),
    ):
        if wifi is not None:
            parts.append(rich_table(wifi))
    line = run_line(results.stats)
    if line:
        parts.append(Text(line, style="dim"))
    return Group(*parts)


def flows_table(summary: Mapping[str, Any]) -> Table:
    """One row per flow: cc, goodput, bytes delivered, completion, RTT, retransmits, losses."""
    return rich_table(flows_data(summary))


def queues_table(summary: Mapping[str, Any]) -> Table:
    """One row per queue: sojourn p50/p99, drops and marks by reason, utilization."""
    return rich_table(queues_data(summary))


def rtt_name(summary: Mapping[str, Any]) -> str:
    """What summary.json's ``rtt_ms`` measures, in a word: ``"per-ACK"`` RTT samples of
    the sender (the simulator), or ``"srtt"`` when every flow says its ``rtt_source`` is
    the kernel's smoothed RTT (the emulator; docs/results.md)."""
    flows: Mapping[str, Mapping[str, Any]] = summary.get("flows") or {}
    sources = [str(flow.get("rtt_source") or "") for flow in flows.values()]
    if sources and all("srtt" in source for source in sources):
        return "srtt"
    return "per-ACK"


#: What each kind of ``rtt_ms`` is, for tooltips and notes (keys: :func:`rtt_name`).
RTT_MEANING = {
    "per-ACK": (
        "per-ACK RTT: the sender's RTT samples, one per ACK that acknowledges new data, "
        "from the timestamp it echoes (what SRTT and the RTO use); summary.json rtt_ms"
    ),
    "srtt": (
        "srtt: the kernel's smoothed RTT (TCP_INFO) read at regular intervals; "
        "summary.json rtt_ms, see rtt_source"
    ),
}

#: What the sojourn columns are.
SOJOURN_MEANING = (
    "queue sojourn: time each packet spent in the queue, over every packet that left it; "
    "summary.json sojourn_ms"
)


def flows_data(summary: Mapping[str, Any]) -> TableData:
    """The cells of the flow table (one row per flow, in scenario order).

    The RTT columns say what they measure (:func:`rtt_name`): per-ACK samples of the
    sender in a simulation, not the per-segment times of the packet trace.
    """
    scenario = summary.get("scenario") or {}
    title = f"flows — {scenario.get('name', '?')} ({seed_text(summary)})"
    rtt_kind = rtt_name(summary)
    rtt_tip = RTT_MEANING[rtt_kind]
    columns = (
        Column("flow", numeric=False, no_wrap=True),
        Column("cc", numeric=False, no_wrap=True),
        Column(
            "goodput\nMbit/s",
            tip="application bytes delivered in order * 8 / time from the flow's start to "
            "its completion (or the end of the run); summary.json goodput_bps",
        ),
        Column("delivered", tip="application bytes delivered in order"),
        Column("completion\ns", tip="time from the flow's start to its last byte delivered"),
        Column(f"{rtt_kind}\nRTT ms\nmin", tip=rtt_tip),
        Column(f"{rtt_kind}\nRTT ms\np50", tip=rtt_tip),
        Column(f"{rtt_kind}\nRTT ms\np99", tip=rtt_tip),
        Column("retrans-\nmits", tip="segments sent again"),
        Column("lost\npkts", tip="data packets of this flow dropped in the network"),
    )
    flows: Mapping[str, Mapping[str, Any]] = summary.get("flows") or {}
    rows = []
    for name in flow_order(summary):
        flow = flows[name]
        rtt = flow.get("rtt_ms") or {}
        rows.append(
            Row(
                (
                    name,
                    "udp" if flow.get("transport") == "udp" else _text(flow.get("cc")),
                    format_number(flow.get("goodput_bps"), scale=1e-6, digits=2),
                    format_bytes(flow.get("bytes_delivered")),
                    format_number(flow.get("completion_s"), digits=3),
                    format_number(rtt.get("min"), digits=1),
                    format_number(rtt.get("p50"), digits=1),
                    format_number(rtt.get("p99"), digits=1),
                    format_count(flow.get("retransmits")),
                    format_count(flow.get("lost_packets")),
                )
            )
        )
    return TableData(title, columns, tuple(rows))


#: Where an app reports its latency distribution, in order of preference.
_APP_LATENCY_KEYS = ("frame_latency_ms", "rtt_ms", "completion_ms")


def apps_data(summary: Mapping[str, Any]) -> TableData | None:
    """What the applications measured (``app_metrics``), one row per flow that has any.

    Latency is the app's own: frame capture → display for frame apps, the probe
    RTT for ``ping``, request → response for ``web``. Per-direction reports (a
    two-way call) get a sub-row each. ``None`` when no flow has app metrics.
    """
    columns = (
        Column("flow", numeric=False, no_wrap=True),
        Column("app", numeric=False, no_wrap=True),
        Column("latency ms\np50"),
        Column("latency ms\np99"),
        Column("frames\nfps"),
        Column("stalls\n%"),
        Column("loss\n%"),
    )
    flows: Mapping[str, Mapping[str, Any]] = summary.get("flows") or {}
    rows = []
    for name in flow_order(summary):
        flow = flows[name]
        metrics = flow.get("app_metrics")
        if not isinstance(metrics, Mapping):
            continue
        cells = _app_cells(metrics, flow)
        subs = [
            Row((part, "", *_app_cells(sub, {})), sub=True)
            for part, sub in metrics.items()
            if isinstance(sub, Mapping) and any(k in sub for k in _APP_LATENCY_KEYS)
        ]
        # A bulk or file flow over QUIC reports its connections, nothing for this table.
        if not subs and all(c == format_number(None) for c in cells):
            continue
        rows.append(Row((name, _text(flow.get("app")), *cells)))
        rows.extend(subs)
    if not rows:
        return None
    return TableData("applications", columns, tuple(rows))


def _app_cells(metrics: Mapping[str, Any], flow: Mapping[str, Any]) -> tuple[str, ...]:
    latency: Mapping[str, Any] = next(
        (metrics[k] for k in _APP_LATENCY_KEYS if isinstance(metrics.get(k), Mapping)), {}
    )
    loss = metrics.get("loss_pct", metrics.get("packet_loss_pct", flow.get("packet_loss_pct")))
    return (
        format_number(latency.get("p50"), digits=1),
        format_number(latency.get("p99"), digits=1),
        format_number(metrics.get("frame_rate_fps"), digits=1),
        format_number(metrics.get("stall_pct"), digits=1),
        format_number(loss, digits=2),
    )


def queues_data(summary: Mapping[str, Any]) -> TableData:
    """The cells of the queue table; DualPI2's L and C sub-queues get a sub-row each."""
    columns = (
        Column("queue", numeric=False, no_wrap=True),
        Column("sojourn ms\np50", tip=SOJOURN_MEANING),
        Column("sojourn ms\np99", tip=SOJOURN_MEANING),
        Column("drops", numeric=False),
        Column("marks", numeric=False),
        Column("utilization\n%"),
    )
    queues: Mapping[str, Mapping[str, Any]] = summary.get("queues") or {}
    rows = []
    for name, queue in queues.items():
        sojourn = queue.get("sojourn_ms") or {}
        rows.append(
            Row(
                (
                    name,
                    _percentile(sojourn, "p50"),
                    _percentile(sojourn, "p99"),
                    _reasons(queue.get("drops")),
                    _reasons(queue.get("marks")),
                    format_number(queue.get("utilization"), scale=100.0, digits=1),
                )
            )
        )
        subqueues: Mapping[str, Mapping[str, Any]] = queue.get("subqueues") or {}
        for sub_name, sub in subqueues.items():
            sub_sojourn = sub.get("sojourn_ms") or {}
            rows.append(
                Row(
                    (
                        f"{sub_name} queue",
                        _percentile(sub_sojourn, "p50"),
                        _percentile(sub_sojourn, "p99"),
                        "",
                        "",
                        "",
                    ),
                    sub=True,
                )
            )
    return TableData("queues", columns, tuple(rows))


def wifi_stations_data(summary: Mapping[str, Any]) -> TableData | None:
    """The cells of the Wi-Fi station table (one row per station, in scenario order):
    airtime, MPDU retries and drops, collisions, scans. ``None`` without a Wi-Fi cell."""
    wifi = summary.get("wifi")
    if not isinstance(wifi, Mapping):
        return None
    stations: Mapping[str, Mapping[str, Any]] = wifi.get("stations") or {}
    columns = (
        Column("station", numeric=False, no_wrap=True),
        Column(
            "airtime\nshare %",
            tip="share of the airtime of all stations: exchanges to and from this station "
            "(PPDU + SIFS + response, or + ACK timeout when it failed); summary.json "
            "wifi.stations.*.airtime_share",
        ),
        Column("airtime\n% of time", tip="its airtime over the measured time"),
        Column("MPDU\nattempts", tip="MPDU transmissions, first attempts and retries"),
        Column(
            "MPDU\nretries %",
            tip="failed MPDU transmissions (lost to noise or a collision) over attempts",
        ),
        Column("MPDU\ndrops", tip="MPDUs dropped at the retry limit"),
        Column("colli-\nsions", tip="collided exchanges it took part in"),
        Column("scans", tip="times it left the channel to scan"),
        Column("longest\nscan ms", tip="the longest gap in its service: a scan"),
    )
    rows = []
    for name in wifi_station_order(summary):
        station = stations[name]
        rows.append(
            Row(
                (
                    name,
                    format_number(station.get("airtime_share"), scale=100.0, digits=1),
                    format_number(station.get("airtime_fraction"), scale=100.0, digits=1),
                    format_count(station.get("mpdu_attempts")),
                    format_number(station.get("mpdu_retry_fraction"), scale=100.0, digits=1),
                    format_count(station.get("mpdu_drops")),
                    format_count(station.get("collisions")),
                    format_count(station.get("scans")),
                    format_number(station.get("longest_scan_ms"), digits=1)
                    if station.get("scans")
                    else MISSING,
                )
            )
        )
    return TableData("Wi-Fi stations", columns, tuple(rows))


def wifi_links_data(summary: Mapping[str, Any]) -> TableData | None:
    """The cells of the Wi-Fi link table (one row per channel): PHY, how busy, TXOPs,
    collisions. ``None`` without a Wi-Fi cell."""
    wifi = summary.get("wifi")
    if not isinstance(wifi, Mapping):
        return None
    columns = (
        Column("link", numeric=False, no_wrap=True),
        Column("PHY", numeric=False, no_wrap=True),
        Column(
            "busy\n%",
            tip="time the medium was busy (PPDUs, responses, collisions, timeouts) over "
            "the measured time",
        ),
        Column("TXOPs", tip="channel accesses won, collided ones included"),
        Column("PPDUs"),
        Column(
            "colli-\nsions", tip="accesses where two or more transmitters started in the same slot"
        ),
        Column("collisions\n% of TXOPs"),
        Column(
            "internal\ncollisions",
            tip="two ACs of one transmitter counted down together; the higher priority sent",
        ),
    )
    rows = []
    for index, link in enumerate(wifi.get("links") or []):
        if not isinstance(link, Mapping):
            continue
        rows.append(
            Row(
                (
                    str(index),
                    phy_text(link.get("phy")),
                    format_number(link.get("busy_fraction"), scale=100.0, digits=1),
                    format_count(link.get("txops")),
                    format_count(link.get("ppdus")),
                    format_count(link.get("collisions")),
                    format_number(link.get("collision_fraction"), scale=100.0, digits=1),
                    format_count(link.get("internal_collisions")),
                )
            )
        )
    return TableData("Wi-Fi links", columns, tuple(rows))


#: Access categories, highest priority first, and their names.
WIFI_ACS = (("vo", "voice"), ("vi", "video"), ("be", "best effort"), ("bk", "background"))


def wifi_access_delay_data(summary: Mapping[str, Any]) -> TableData | None:
    """The cells of the Wi-Fi access-delay table: one row per access category that had
    samples, in priority order. ``None`` without a Wi-Fi cell."""
    wifi = summary.get("wifi")
    if not isinstance(wifi, Mapping):
        return None
    delays: Mapping[str, Any] = wifi.get("access_delay_ms") or {}
    tip = (
        "MAC access delay: from the moment the AC has something to send on a link to the "
        "start of its transmission there; summary.json wifi.access_delay_ms"
    )
    columns = (
        Column("AC", numeric=False, no_wrap=True),
        Column("samples"),
        *(Column(f"{key}\nms", tip=tip) for key in ("mean", "p50", "p99", "p99.9", "max")),
    )
    rows = []
    for ac, name in WIFI_ACS:
        stats = delays.get(ac)
        if not isinstance(stats, Mapping):
            continue
        rows.append(
            Row(
                (
                    f"{ac.upper()} ({name})",
                    format_count(stats.get("samples")),
                    *(
                        format_number(stats.get(key), digits=3)
                        for key in ("mean", "p50", "p99", "p999", "max")
                    ),
                )
            )
        )
    return TableData("Wi-Fi access delay", columns, tuple(rows))


def wifi_station_order(summary: Mapping[str, Any]) -> list[str]:
    """Station names of ``summary["wifi"]`` in scenario order (the resolved
    ``wifi.stations``, by host index), then any other (summary.json sorts its keys)."""
    wifi = summary.get("wifi")
    stations: Mapping[str, Any] = (wifi.get("stations") or {}) if isinstance(wifi, Mapping) else {}
    scenario = summary.get("scenario") or {}
    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]
    cell = scenario.get("wifi")
    declared = (cell.get("stations") or []) if isinstance(cell, Mapping) else []
    ordered: list[str] = []
    for station in declared:
        index = station.get("host") if isinstance(station, Mapping) else None
        if isinstance(index, int) and 0 <= index < len(hosts):
            name = str(hosts[index].get("name"))
            if name in stations and name not in ordered:
                ordered.append(name)
    return ordered + [str(name) for name in stations if name not in ordered]


#: The 802.11 amendment of each resolved ``standard``.
_STANDARDS = {"a": "802.11a", "n": "802.11n", "ac": "802.11ac", "ax": "802.11ax", "be": "802.11be"}


def phy_text(phy: Any) -> str:
    """A Wi-Fi link's PHY, e.g. ``802.11ax, 5GHz, 80 MHz, 2 streams``."""
    if not isinstance(phy, Mapping):
        return MISSING
    standard = str(phy.get("standard", "?"))
    nss = phy.get("nss")
    return ", ".join(
        [
            _STANDARDS.get(standard, standard),
            str(phy.get("band", "?")),
            f"{phy.get('width_mhz', '?')} MHz",
            f"{nss if nss is not None else '?'} stream{'' if nss == 1 else 's'}",
        ]
    )


def flow_order(summary: Mapping[str, Any]) -> list[str]:
    """Flow names in scenario order (summary.json sorts its keys; the scenario does not).

    The ``flow`` column of packets.parquet indexes this list.
    """
    flows: Mapping[str, Any] = summary.get("flows") or {}
    scenario = summary.get("scenario") or {}
    ordered = [
        str(flow.get("name"))
        for flow in scenario.get("flows") or []
        if isinstance(flow, Mapping) and flow.get("name") in flows
    ]
    return ordered + [name for name in flows if name not in ordered]


def rich_table(data: TableData) -> Table:
    """Render table cells as a rich Table (sub-rows indented)."""
    table = plain_table(data.title)
    for column in data.columns:
        table.add_column(
            Text(column.header),
            justify="right" if column.numeric else "left",
            no_wrap=column.no_wrap,
        )
    for row in data.rows:
        first, *rest = row.cells
        # Plain text: a scenario or flow name such as ":x: [red]" is shown as written.
        table.add_row(Text(f"  {first}" if row.sub else first), *(Text(cell) for cell in rest))
    return table


def seed_text(summary: Mapping[str, Any]) -> str:
    """``seed 7``, or ``seed 7, nothing random: every seed gives these results``."""
    if summary.get("seed") is None and summary.get("backend") in ("send", "serve"):
        # A real endpoint's run (l4slab send / serve) has no seed.
        return f"l4slab {summary['backend']}, real network"
    text = f"seed {summary.get('seed', '?')}"
    if summary.get("random_draws") == 0:
        text += ", nothing random: every seed gives these results"
    return text


def run_line(stats: Mapping[str, Any]) -> str:
    """E.g. ``simulated 30.0 s in 1.20 s (25x real time), 1,234,567 events``.

    An emulator run (``backend = "emu"``) ran in real time:
    ``emulated 30.0 s in real time (wall 31.20 s), 45,678 packets forwarded``;
    a real endpoint's (``send``/``serve``): ``ran 5.0 s on the network (wall 5.02 s)``.
    """
    if not stats:
        return ""
    sim_s, wall_s = stats.get("sim_s"), stats.get("wall_s")
    if sim_s is None or wall_s is None:
        return ""
    if stats.get("backend") in ("send", "serve"):
        return f"ran {sim_s:.1f} s on the network (wall {wall_s:.2f} s)"
    if stats.get("backend") == "emu":
        line = f"emulated {sim_s:.1f} s in real time (wall {wall_s:.2f} s)"
        packets = stats.get("packets")
        if packets is not None:
            line += f", {packets:,} packets forwarded"
        return line
    line = f"simulated {sim_s:.1f} s in {wall_s:.2f} s"
    if wall_s > 0:
        line += f" ({sim_s / wall_s:,.0f}x real time)"
    events = stats.get("events")
    if events is not None:
        line += f", {events:,} events"
    return line


def plain_table(title: str, *, padding: PaddingDimensions = 0) -> Table:
    """An empty rich Table in l4slab's style, its title plain text (no rich markup or emoji
    codes from names). Blank column rules and no padding by default: one space between
    columns, so the flow table fits in 80 characters."""
    return Table(
        title=Text(title, style="bold"),
        title_justify="left",
        title_style="bold",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=padding,
        pad_edge=False,
    )


# --------------------------------------------------------------------------- cells


def _text(value: Any) -> str:
    return MISSING if value is None else str(value)


def format_number(value: Any, *, scale: float = 1.0, digits: int = 1) -> str:
    """``value * scale`` with thousands separators and ``digits`` decimals, or a dash."""
    if value is None or isinstance(value, bool):
        return MISSING
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(number):
        return MISSING
    return f"{number:,.{digits}f}"


def format_count(value: Any) -> str:
    """An integer count with thousands separators, or a dash."""
    if value is None or isinstance(value, bool):
        return MISSING
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return MISSING


def format_bytes(value: Any) -> str:
    """Decimal units, as in scenario files: 1 MB = 10^6 bytes."""
    if value is None or isinstance(value, bool):
        return MISSING
    try:
        n = float(value)
    except (TypeError, ValueError):
        return MISSING
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _percentile(sojourn: Mapping[str, Any], which: str) -> str:
    """A percentile; for a queue with sub-queues (DualPI2 ``l``/``c``), one per sub-queue."""
    if which in sojourn:
        return format_number(sojourn.get(which), digits=2)
    subs = [(name, sub) for name, sub in sojourn.items() if isinstance(sub, Mapping)]
    if not subs:
        return MISSING
    return " / ".join(f"{name} {format_number(sub.get(which), digits=2)}" for name, sub in subs)


def _reasons(counts: Any) -> str:
    """``{"overlimit": 12, "link_loss": 3, "total": 15}`` -> ``overlimit 12, link_loss 3``.

    Zero counts and the ``total`` entry are left out.
    """
    if not isinstance(counts, Mapping):
        return MISSING
    parts = [
        f"{reason} {int(n):,}"
        for reason, n in counts.items()
        if reason != "total" and isinstance(n, int | float) and n
    ]
    return ", ".join(parts) if parts else MISSING
