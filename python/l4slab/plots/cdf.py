"""Cumulative distribution plots: RTT per flow and queue delay per queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np
from matplotlib.axes import Axes

from l4slab.plots._style import COLORS, new_axes, styles
from l4slab.plots._trace import segment_rtts
from l4slab.results import Results
from l4slab.tables import flow_order

__all__ = [
    "RttSource",
    "cdf_line",
    "queue_delay_cdf",
    "queue_delay_samples",
    "rtt_cdf",
    "rtt_samples",
]

#: Where RTT samples come from: ``"trace"`` per segment from packets.parquet, ``"series"``
#: the per-interval means of series.parquet, ``"auto"`` the trace when there is one,
#: ``"both"`` one line each.
RttSource: TypeAlias = Literal["auto", "trace", "series", "both"]

_PERCENTILES = ("p50", "p90", "p99", "p999")


def rtt_cdf(
    results: Results,
    ax: Axes | None = None,
    flows: Sequence[str] | None = None,
    source: RttSource = "auto",
) -> Axes:
    """CDF of each flow's RTT, one line per flow (labelled with the flow name).

    With a packet trace (``source="auto"`` or ``"trace"``) the samples are per data
    segment: from its send to the first ACK that covers it (see
    :func:`l4slab.plots.segment_rtts`). Without one (or with ``source="series"``)
    they are the per-interval means of the ``rtt_ms`` series, which hide the tail;
    the title says which. ``source="both"`` draws the interval means dashed beside
    the per-segment line, labelled ``"<flow> (interval means)"``.
    """
    ax = new_axes(ax)
    names = list(flows) if flows is not None else flow_order(results.summary)
    sources = _rtt_sources(results, source)
    for name, (color, _) in zip(names, styles(), strict=False):
        for which in sources:
            values = rtt_samples(results, name, which)
            label = name if len(sources) == 1 or which == "trace" else f"{name} (interval means)"
            cdf_line(ax, values, label, color=color, linestyle="--" if which == "series" else "-")
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("fraction of samples")
    ax.set_title(f"RTT CDF — {_rtt_source_text(results, sources)}")
    _finish(ax)
    return ax


def rtt_samples(results: Results, flow: str, source: Literal["trace", "series"]) -> np.ndarray:
    """A flow's RTT samples in ms: per segment from the trace, or the per-interval means."""
    if source == "trace":
        return segment_rtts(results, flow)[1]
    series = f"flow/{flow}"
    if series not in results.series_names() or "rtt_ms" not in results.series_keys(series):
        return np.array([], dtype=np.float64)
    return results.series(series, "rtt_ms")[1]


def queue_delay_cdf(
    results: Results,
    ax: Axes | None = None,
    queues: Sequence[str] | None = None,
) -> Axes:
    """CDF of each queue's delay (DualPI2: L and C apart), from the per-interval means.

    The exact per-packet percentiles from the summary (p50, p90, p99, p99.9) are
    drawn as markers on the same colour, so the tail the means hide is still seen.
    """
    ax = new_axes(ax)
    names = list(queues) if queues is not None else list(results.queues())
    pairs = styles()
    for name in names:
        for sub, values, percentiles in queue_delay_samples(results, name):
            color, linestyle = next(pairs)
            label = name if sub is None else f"{name} {sub.upper()}"
            cdf_line(ax, values, label, color=color, linestyle=linestyle)
            percentile_markers(ax, percentiles, color=color)
    ax.set_xlabel("queue delay, mean per interval (ms)")
    ax.set_ylabel("fraction of intervals")
    ax.set_title("Queue delay CDF (dots: per-packet p50, p90, p99, p99.9)")
    _finish(ax)
    return ax


def queue_delay_samples(
    results: Results, queue: str
) -> list[tuple[str | None, np.ndarray, dict[str, float]]]:
    """``(sub-queue or None, per-interval mean sojourn in ms, summary percentiles)`` rows.

    A DualPI2 queue gives one row per sub-queue (``"l"``, ``"c"``) that saw packets;
    any other queue one row for itself.
    """
    summary = results.queue(queue)
    series = f"queue/{queue}"
    keys = results.series_keys(series) if series in results.series_names() else []
    subqueues = summary.get("subqueues") or {}
    rows: list[tuple[str | None, np.ndarray, dict[str, float]]] = []
    if subqueues:
        for sub in ("l", "c"):
            key = f"sojourn_ms.{sub}"
            if key in keys:
                stats = (subqueues.get(sub) or {}).get("sojourn_ms") or {}
                rows.append((sub, results.series(series, key)[1], _percentiles(stats)))
        if rows:
            return rows
    if "sojourn_ms" in keys:
        stats = summary.get("sojourn_ms") or {}
        rows.append((None, results.series(series, "sojourn_ms")[1], _percentiles(stats)))
    return rows


def cdf_line(
    ax: Axes,
    values: np.ndarray,
    label: str,
    *,
    color: str = COLORS[0],
    linestyle: str = "-",
) -> None:
    """Draw an empirical CDF: x the sorted values, y = i/n, as a step line.

    With no values, an empty line still carries ``label`` (marked "no samples").
    """
    data = np.sort(np.asarray(values, dtype=np.float64))
    data = data[np.isfinite(data)]
    if not len(data):
        ax.plot([], [], color=color, linestyle=linestyle, label=f"{label} (no samples)")
        return
    fraction = np.arange(1, len(data) + 1) / len(data)
    ax.plot(
        data,
        fraction,
        drawstyle="steps-post",
        color=color,
        linestyle=linestyle,
        linewidth=1.6,
        label=label,
    )


def percentile_markers(ax: Axes, percentiles: dict[str, float], *, color: str) -> None:
    """Markers at ``(value, fraction)`` for percentiles such as ``{"p99": 31.5}``."""
    xs, ys = [], []
    for key, value in percentiles.items():
        fraction = float(key[1:]) / (10 ** (len(key) - 1))
        xs.append(value)
        ys.append(fraction)
    if xs:
        ax.plot(xs, ys, linestyle="none", marker="o", markersize=4, color=color, alpha=0.8)


def _percentiles(stats: object) -> dict[str, float]:
    if not isinstance(stats, dict):
        return {}
    return {
        key: float(stats[key])
        for key in _PERCENTILES
        if isinstance(stats.get(key), int | float) and np.isfinite(stats[key])
    }


def _rtt_sources(results: Results, source: RttSource) -> list[Literal["trace", "series"]]:
    traced = results.packets is not None
    if source == "auto":
        return ["trace"] if traced else ["series"]
    if source == "both":
        return ["trace", "series"] if traced else ["series"]
    return [source]


def _rtt_source_text(results: Results, sources: Sequence[str]) -> str:
    interval_ns = results.scenario.get("sample_interval")
    interval = f"{interval_ns / 1e6:g} ms" if isinstance(interval_ns, int | float) else "interval"
    if list(sources) == ["trace"]:
        return "per segment (packet trace)"
    if list(sources) == ["series"]:
        return f"means per {interval} interval (no packet trace)"
    return f"per segment (solid) and {interval} means (dashed)"


def _finish(ax: Axes) -> None:
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")
