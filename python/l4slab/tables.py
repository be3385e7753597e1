"""Human-readable summary tables of a result (rich renderables; nothing is printed here)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from l4slab.results import Results

__all__ = ["flows_table", "queues_table", "run_line", "summary_view"]

_MISSING = "—"


def summary_view(results: Results) -> RenderableType:
    """Flow table, queue table and a one-line account of the run, stacked."""
    parts: list[RenderableType] = [flows_table(results.summary)]
    if results.queues():
        parts.append(queues_table(results.summary))
    line = run_line(results.stats)
    if line:
        parts.append(Text(line, style="dim"))
    return Group(*parts)


def flows_table(summary: Mapping[str, Any]) -> Table:
    """One row per flow: cc, goodput, bytes delivered, completion, RTT, retransmits, losses."""
    scenario = summary.get("scenario") or {}
    title = f"flows — {scenario.get('name', '?')} (seed {summary.get('seed', '?')})"
    table = _table(title)
    table.add_column("flow", no_wrap=True)
    table.add_column("cc", no_wrap=True)
    table.add_column("goodput\nMbit/s", justify="right")
    table.add_column("delivered", justify="right")
    table.add_column("completion\ns", justify="right")
    table.add_column("RTT ms\nmin", justify="right")
    table.add_column("RTT ms\np50", justify="right")
    table.add_column("RTT ms\np99", justify="right")
    table.add_column("retrans-\nmits", justify="right")
    table.add_column("lost\npkts", justify="right")
    flows: Mapping[str, Mapping[str, Any]] = summary.get("flows") or {}
    for name, flow in flows.items():
        rtt = flow.get("rtt_ms") or {}
        table.add_row(
            name,
            _text(flow.get("cc")),
            _number(flow.get("goodput_bps"), scale=1e-6, digits=2),
            _bytes(flow.get("bytes_delivered")),
            _number(flow.get("completion_s"), digits=3),
            _number(rtt.get("min"), digits=1),
            _number(rtt.get("p50"), digits=1),
            _number(rtt.get("p99"), digits=1),
            _count(flow.get("retransmits")),
            _count(flow.get("lost_packets")),
        )
    return table


def queues_table(summary: Mapping[str, Any]) -> Table:
    """One row per queue: sojourn p50/p99, drops and marks by reason, utilization."""
    table = _table("queues")
    table.add_column("queue", no_wrap=True)
    table.add_column("sojourn ms\np50", justify="right")
    table.add_column("sojourn ms\np99", justify="right")
    table.add_column("drops")
    table.add_column("marks")
    table.add_column("utilization\n%", justify="right")
    queues: Mapping[str, Mapping[str, Any]] = summary.get("queues") or {}
    for name, queue in queues.items():
        sojourn = queue.get("sojourn_ms") or {}
        table.add_row(
            name,
            _percentile(sojourn, "p50"),
            _percentile(sojourn, "p99"),
            _reasons(queue.get("drops")),
            _reasons(queue.get("marks")),
            _number(queue.get("utilization"), scale=100.0, digits=1),
        )
        # Composite queues (DualPI2's L and C) get one indented row per sub-queue.
        subqueues: Mapping[str, Mapping[str, Any]] = queue.get("subqueues") or {}
        for sub_name, sub in subqueues.items():
            sub_sojourn = sub.get("sojourn_ms") or {}
            table.add_row(
                f"  {sub_name} queue",
                _percentile(sub_sojourn, "p50"),
                _percentile(sub_sojourn, "p99"),
                "",
                "",
                "",
            )
    return table


def run_line(stats: Mapping[str, Any]) -> str:
    """E.g. ``simulated 30.0 s in 1.20 s (25x real time), 1,234,567 events``."""
    if not stats:
        return ""
    sim_s, wall_s = stats.get("sim_s"), stats.get("wall_s")
    if sim_s is None or wall_s is None:
        return ""
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
        title=title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=0,
        pad_edge=False,
    )


# --------------------------------------------------------------------------- cells


def _text(value: Any) -> str:
    return _MISSING if value is None else str(value)


def _number(value: Any, *, scale: float = 1.0, digits: int = 1) -> str:
    if value is None or isinstance(value, bool):
        return _MISSING
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return _MISSING
    if not math.isfinite(number):
        return _MISSING
    return f"{number:,.{digits}f}"


def _count(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return _MISSING
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return _MISSING


def _bytes(value: Any) -> str:
    """Decimal units, as in scenario files: 1 MB = 10^6 bytes."""
    if value is None or isinstance(value, bool):
        return _MISSING
    try:
        n = float(value)
    except (TypeError, ValueError):
        return _MISSING
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _percentile(sojourn: Mapping[str, Any], which: str) -> str:
    """A percentile; for a queue with sub-queues (DualPI2 ``l``/``c``), one per sub-queue."""
    if which in sojourn:
        return _number(sojourn.get(which), digits=2)
    subs = [(name, sub) for name, sub in sojourn.items() if isinstance(sub, Mapping)]
    if not subs:
        return _MISSING
    return " / ".join(f"{name} {_number(sub.get(which), digits=2)}" for name, sub in subs)


def _reasons(counts: Any) -> str:
    """``{"overlimit": 12, "link_loss": 3, "total": 15}`` -> ``overlimit 12, link_loss 3``.

    Zero counts and the ``total`` entry are left out.
    """
    if not isinstance(counts, Mapping):
        return _MISSING
    parts = [
        f"{reason} {int(n):,}"
        for reason, n in counts.items()
        if reason != "total" and isinstance(n, int | float) and n
    ]
    return ", ".join(parts) if parts else _MISSING
