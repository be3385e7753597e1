"""Cumulative distribution plots: RTT per flow and queue sojourn per queue.

Two different RTTs, named apart everywhere:

* **per-ACK RTT**: the sender's own RTT samples, one per ACK that acknowledges new
  data, from the timestamp it echoes (RFC 7323; what feeds SRTT and the RTO).
  summary.json's ``rtt_ms`` percentiles (the flow table) and the ``rtt_ms`` series
  (a mean per sample interval) are these. The emulator reads the kernel's smoothed
  RTT instead (``rtt_source`` in its summary), and the plots name that.
* **per-segment RTT**: from the packet trace, each data segment sent once, from its
  send to the first ACK that covers it, cumulatively or by SACK
  (:func:`~l4slab.plots.segment_rtts`). Segments acknowledged by SACK during loss
  recovery count here, when the queue is often at its longest; the sender takes no
  per-ACK sample from an ACK that only SACKs. So the per-segment tail can lie well
  above the per-ACK one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np
from matplotlib.axes import Axes

from l4slab.plots._distribution import Distribution
from l4slab.plots._style import COLORS, new_axes, recorded_keys, styles
from l4slab.plots._trace import has_packet_trace, segment_rtt_distributions, segment_rtts
from l4slab.results import Results
from l4slab.tables import flow_order, rtt_name

__all__ = [
    "RttSource",
    "cdf_line",
    "percentile_markers",
    "queue_delay_cdf",
    "queue_delay_samples",
    "rtt_cdf",
    "rtt_samples",
]

#: Where RTT samples come from: ``"trace"`` per segment from packets.parquet, ``"series"``
#: the per-interval means of the per-ACK samples (series.parquet), ``"auto"`` the trace
#: when there is one, ``"both"`` one line each.
RttSource: TypeAlias = Literal["auto", "trace", "series", "both"]

_PERCENTILES = ("p50", "p90", "p99", "p999")


def rtt_cdf(
    results: Results,
    ax: Axes | None = None,
    flows: Sequence[str] | None = None,
    source: RttSource = "auto",
    *,
    percentiles: bool = True,
) -> Axes:
    """CDF of each flow's RTT, one line per flow (labelled with the flow name).

    With a packet trace (``source="auto"`` or ``"trace"``) the line is the
    per-segment RTT (see the module header), read as a stream into a histogram of
    0.1 % resolution, so a trace of any length fits in memory. Without one (or with
    ``source="series"``) it is the per-interval means of the per-ACK samples, which
    hide the tail; ``source="both"`` draws those dashed beside the per-segment line,
    labelled ``"<flow> (per-ACK, <interval> means)"``. With ``percentiles`` the
    per-ACK percentiles of summary.json (p50, p90, p99, p99.9: the flow table's
    numbers) are dots on the flow's colour. Title and axis say what each shows.
    """
    ax = new_axes(ax)
    names = list(flows) if flows is not None else flow_order(results.summary)
    sources = _rtt_sources(results, source)
    per_ack = rtt_name(results.summary)
    interval = _interval(results)
    traced = segment_rtt_distributions(results, names) if "trace" in sources else {}
    for name, (color, _) in zip(names, styles(), strict=False):
        for which in sources:
            if which == "trace":
                cdf_line(ax, traced[name], name, color=color)
            else:
                label = name if len(sources) == 1 else f"{name} ({per_ack}, {interval} means)"
                values = rtt_samples(results, name, "series")
                cdf_line(ax, values, label, color=color, linestyle="--")
        if percentiles:
            stats = (results.flows().get(name) or {}).get("rtt_ms")
            percentile_markers(
                ax, _percentiles(stats), color=color, label=f"_{per_ack} percentiles of {name}"
            )
    if percentiles and ax.get_lines():
        # One legend entry for the dots of every flow.
        ax.plot(
            [],
            [],
            linestyle="none",
            marker="o",
            markersize=4,
            color="#555555",
            label=f"dots: {per_ack} p50, p90, p99, p99.9",
        )
    if sources == ["trace"]:
        ax.set_xlabel("per-segment RTT: send → first ACK or SACK covering it (ms)")
        ax.set_ylabel("fraction of segments")
    elif sources == ["series"]:
        ax.set_xlabel(f"{per_ack} RTT, mean per {interval} (ms)")
        ax.set_ylabel("fraction of intervals")
    else:
        ax.set_xlabel("RTT (ms)")
        ax.set_ylabel("fraction of samples")
    ax.set_title(f"RTT CDF — {_rtt_source_text(results, sources)}", fontsize="medium")
    _finish(ax)
    return ax


def rtt_samples(results: Results, flow: str, source: Literal["trace", "series"]) -> np.ndarray:
    """A flow's RTT samples in ms: per segment from the trace, or the per-interval means
    of the per-ACK samples. The per-segment array grows with the flow's length; for a
    bounded histogram use :func:`~l4slab.plots.segment_rtt_distributions`."""
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
    """CDF of each queue's sojourn (DualPI2: L and C apart), from the per-interval means.

    The per-packet percentiles from the summary (p50, p90, p99, p99.9: the queue
    table's numbers) are drawn as markers on the same colour, so the tail the means
    hide is still seen.
    """
    ax = new_axes(ax)
    names = list(queues) if queues is not None else list(results.queues())
    pairs = styles()
    for name in names:
        for sub, values, percentiles in queue_delay_samples(results, name):
            color, linestyle = next(pairs)
            label = name if sub is None else f"{name} {sub.upper()}"
            cdf_line(ax, values, label, color=color, linestyle=linestyle)
            percentile_markers(ax, percentiles, color=color, label=f"_percentiles of {label}")
    interval = _interval(results)
    ax.set_xlabel(f"queue sojourn, mean per {interval} (ms)")
    ax.set_ylabel("fraction of intervals")
    ax.set_title(
        f"Queue sojourn CDF of {interval} means; dots: per-packet p50, p90, p99, p99.9",
        fontsize="medium",
    )
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
    keys = recorded_keys(results, series)
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
    values: np.ndarray | Distribution,
    label: str,
    *,
    color: str = COLORS[0],
    linestyle: str = "-",
) -> None:
    """Draw an empirical CDF as a step line: x the sorted values, y = i/n.

    ``values`` may be a :class:`~l4slab.plots.Distribution` (a histogram): then x
    steps at each non-empty bin's upper edge, within 0.1 % of the exact values.
    With no values, an empty line still carries ``label`` (marked "no samples").
    """
    if isinstance(values, Distribution):
        data, fraction = values.cdf()
    else:
        data = np.sort(np.asarray(values, dtype=np.float64))
        data = data[np.isfinite(data)]
        fraction = np.arange(1, len(data) + 1) / len(data) if len(data) else data
    if not len(data):
        ax.plot([], [], color=color, linestyle=linestyle, label=f"{label} (no samples)")
        return
    ax.plot(
        data,
        fraction,
        drawstyle="steps-post",
        color=color,
        linestyle=linestyle,
        linewidth=1.6,
        label=label,
    )


def percentile_markers(
    ax: Axes, percentiles: dict[str, float], *, color: str, label: str = "_percentiles"
) -> None:
    """Markers at ``(value, fraction)`` for percentiles such as ``{"p99": 31.5}``.

    ``label`` names the markers' line (by default hidden from the legend: it starts
    with ``_``).
    """
    xs, ys = [], []
    for key, value in percentiles.items():
        fraction = float(key[1:]) / (10 ** (len(key) - 1))
        xs.append(value)
        ys.append(fraction)
    if xs:
        ax.plot(
            xs,
            ys,
            linestyle="none",
            marker="o",
            markersize=4,
            color=color,
            alpha=0.8,
            label=label,
        )


def _percentiles(stats: object) -> dict[str, float]:
    if not isinstance(stats, dict):
        return {}
    return {
        key: float(stats[key])
        for key in _PERCENTILES
        if isinstance(stats.get(key), int | float) and np.isfinite(stats[key])
    }


def _rtt_sources(results: Results, source: RttSource) -> list[Literal["trace", "series"]]:
    traced = has_packet_trace(results)
    if source == "auto":
        return ["trace"] if traced else ["series"]
    if source == "both":
        return ["trace", "series"] if traced else ["series"]
    return [source]


def _interval(results: Results) -> str:
    interval_ns = results.scenario.get("sample_interval")
    return f"{interval_ns / 1e6:g} ms" if isinstance(interval_ns, int | float) else "interval"


def _rtt_source_text(results: Results, sources: Sequence[str]) -> str:
    interval, per_ack = _interval(results), rtt_name(results.summary)
    if list(sources) == ["trace"]:
        return "per segment (packet trace)"
    if list(sources) == ["series"]:
        traced = "" if has_packet_trace(results) else ", no packet trace"
        return f"{per_ack} samples, means per {interval}{traced}"
    return f"per segment (solid) and {per_ack} (dashed, dots)"


def _finish(ax: Axes) -> None:
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")
