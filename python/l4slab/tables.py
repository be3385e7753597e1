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
from rich.table import Table
from rich.text import Text

from l4slab.results import Results

__all__ = [
    "MISSING",
    "RTT_MEANING",
    "SOJOURN_MEANING",
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
    "queues_data",
    "queues_table",
    "rich_table",
    "rtt_name",
    "run_line",
    "seed_text",
    "summary_view",
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
    """Flow table, queue table and a one-line account of the run, stacked."""
    parts: list[RenderableType] = [flows_table(results.summary)]
    apps = apps_data(results.summary)
    if apps is not None:
        parts.append(rich_table(apps))
    if results.queues():
        parts.append(queues_table(results.summary))
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
        rows.append(Row((name, _text(flow.get("app")), *_app_cells(metrics, flow))))
        for part, sub in metrics.items():
            if isinstance(sub, Mapping) and any(k in sub for k in _APP_LATENCY_KEYS):
                rows.append(Row((part, "", *_app_cells(sub, {})), sub=True))
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
    table = _table(data.title)
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
    text = f"seed {summary.get('seed', '?')}"
    if summary.get("random_draws") == 0:
        text += ", nothing random: every seed gives these results"
    return text


def run_line(stats: Mapping[str, Any]) -> str:
    """E.g. ``simulated 30.0 s in 1.20 s (25x real time), 1,234,567 events``.

    An emulator run (``backend = "emu"``) ran in real time:
    ``emulated 30.0 s in real time (wall 31.20 s), 45,678 packets forwarded``.
    """
    if not stats:
        return ""
    sim_s, wall_s = stats.get("sim_s"), stats.get("wall_s")
    if sim_s is None or wall_s is None:
        return ""
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


def _table(title: str) -> Table:
    # Blank column rules and no padding: one space between columns, so the flow table fits
    # in 80 characters.
    return Table(
        title=Text(title, style="bold"),  # plain: no rich markup or emoji codes from names
        title_justify="left",
        title_style="bold",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=0,
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
