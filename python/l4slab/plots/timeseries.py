"""Time series plots from series.parquet: per-flow and per-queue quantities over time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from matplotlib.axes import Axes

from l4slab.plots._style import key_info, new_axes, note, recorded_keys, styles
from l4slab.results import Results
from l4slab.tables import flow_order

__all__ = [
    "PROBABILITY_KEYS",
    "aqm_probability",
    "drops_marks",
    "queue_delay",
    "timeseries",
]

#: The control variables worth plotting as a probability, by queue discipline.
PROBABILITY_KEYS: dict[str, tuple[str, ...]] = {
    "dualpi2": ("p_c", "p_cl"),
    "pie": ("prob",),
    "fq_pie": ("max_prob",),
    "red": ("prob",),
}


def timeseries(
    results: Results,
    key: str,
    ax: Axes | None = None,
    series: Sequence[str] | None = None,
) -> Axes:
    """One line per series holding ``key`` (or per series in ``series``), against time.

    Keys are shown in readable units: ``goodput_bps`` in Mbit/s, ``*_bytes`` in kB,
    ``*_ms`` in ms, ``utilization`` in %. Lines are labelled with the flow or queue
    name (``flow/download`` -> ``download``).
    """
    ax = new_axes(ax)
    info = key_info(key)
    names = list(series) if series is not None else _series_with(results, key)
    for name, (color, linestyle) in zip(names, styles(), strict=False):
        t, v = _get(results, name, key)
        ax.plot(t, v * info.scale, color=color, linestyle=linestyle, label=_short(name))
    _finish(ax, results, info.label, _capital(info.name))
    return ax


def queue_delay(
    results: Results,
    ax: Axes | None = None,
    queues: Sequence[str] | None = None,
) -> Axes:
    """Queue sojourn (mean per interval) of each queue; DualPI2's L and C apart."""
    ax = new_axes(ax)
    pairs = styles()
    notes = []
    for name, series, keys in _queue_series(results, queues):
        subqueues = results.queue(name).get("subqueues") or {}
        if subqueues:
            for sub in ("l", "c"):
                if f"sojourn_ms.{sub}" in keys:
                    color, linestyle = next(pairs)
                    t, v = results.series(series, f"sojourn_ms.{sub}")
                    ax.plot(t, v, color=color, linestyle=linestyle, label=f"{name} {sub.upper()}")
                else:
                    notes.append(f"{name} {sub.upper()}: no packets")
        elif "sojourn_ms" in keys:
            color, linestyle = next(pairs)
            t, v = results.series(series, "sojourn_ms")
            ax.plot(t, v, color=color, linestyle=linestyle, label=name)
    _finish(
        ax,
        results,
        "queue sojourn, mean per interval (ms)",
        "Queue sojourn" + (" (DualPI2: L and C queues)" if notes or _any_dual(results) else ""),
        note="; ".join(notes),
    )
    return ax


def aqm_probability(
    results: Results,
    ax: Axes | None = None,
    queues: Sequence[str] | None = None,
) -> Axes:
    """The AQM's drop/mark probability over time: DualPI2 ``p_C`` and ``p_CL``, PIE ``prob``.

    Queues whose discipline has no probability (FIFO, CoDel, FQ-CoDel) are left out;
    when none has one, the Axes says so.
    """
    ax = new_axes(ax)
    pairs = styles()
    idle = []
    for name, series, keys in _queue_series(results, queues):
        kind = str(results.queue(name).get("kind", ""))
        for key in PROBABILITY_KEYS.get(kind, ()):
            if key not in keys:
                continue
            t, v = results.series(series, key)
            label = f"{name} {key_info(key).name.split(',')[0]}" if kind == "dualpi2" else name
            if not np.any(v):
                idle.append(label)
                continue
            color, linestyle = next(pairs)
            ax.plot(t, v, color=color, linestyle=linestyle, label=label)
    if not ax.get_lines():
        note(
            ax,
            "always 0: " + ", ".join(idle)
            if idle
            else "no queue here has a drop/mark probability (FIFO, CoDel and FQ-CoDel do not)",
        )
    _finish(
        ax,
        results,
        "probability (0 to 1)",
        "Drop / mark probability",
        note="always 0: " + ", ".join(idle) if idle and ax.get_lines() else "",
    )
    return ax


def drops_marks(
    results: Results,
    ax: Axes | None = None,
    queues: Sequence[str] | None = None,
) -> Axes:
    """Drops (solid) and CE marks (dashed) per second at each queue that had any."""
    ax = new_axes(ax)
    pairs = styles()
    for name, series, keys in _queue_series(results, queues):
        summary = results.queue(name)
        color, _ = next(pairs)
        for key, what, linestyle in (("drops", "drops", "-"), ("marks", "CE marks", "--")):
            total = (summary.get(key) or {}).get("total", 0)
            if key not in keys or not total:
                continue
            t, v = results.series(series, key)
            ax.plot(
                t,
                v / _interval_s(results, t),
                color=color,
                linestyle=linestyle,
                label=f"{name} {what}",
            )
    if not ax.get_lines():
        note(ax, "no drops and no CE marks at any queue")
    _finish(ax, results, "packets per second", "Drops (solid) and CE marks (dashed) per second")
    return ax


# --------------------------------------------------------------------------- helpers


def _queue_series(
    results: Results, queues: Sequence[str] | None
) -> Iterator[tuple[str, str, list[str]]]:
    """Each queue of ``queues`` (all of the run's when ``None``): its name, its series and
    the keys recorded in it."""
    for name in queues if queues is not None else results.queues():
        series = f"queue/{name}"
        yield name, series, recorded_keys(results, series)


def _series_with(results: Results, key: str) -> list[str]:
    names = [name for name in results.series_names() if key in results.series_keys(name)]
    # Flows in scenario order, then queues, so colours match the other flow plots.
    order = {f"flow/{name}": i for i, name in enumerate(flow_order(results.summary))}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


def _get(results: Results, series: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        return results.series(series, key)
    except KeyError:
        return np.array([]), np.array([])


def _short(series: str) -> str:
    return series.split("/", 1)[1] if "/" in series else series


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _interval_s(results: Results, t: np.ndarray) -> float:
    interval = results.scenario.get("sample_interval")
    if isinstance(interval, int | float) and interval > 0:
        return float(interval) / 1e9
    steps = np.diff(t)
    return float(np.median(steps)) if len(steps) else 1.0


def _any_dual(results: Results) -> bool:
    return any(queue.get("subqueues") for queue in results.queues().values())


def _finish(ax: Axes, results: Results, ylabel: str, title: str, note: str = "") -> None:
    """Labels (time on x), the run's time span, y from 0 when nothing is negative, the
    grid, and the legend (``note`` as its title)."""
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    duration = results.summary.get("duration_s")
    if isinstance(duration, int | float) and duration > 0:
        ax.set_xlim(0.0, float(duration))
    ys = [np.asarray(line.get_ydata(), dtype=np.float64) for line in ax.get_lines()]
    lows = [float(y.min()) for y in ys if len(y)]
    if lows and min(lows) >= 0:
        ax.set_ylim(bottom=0.0)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        legend = ax.legend(loc="best", fontsize="small", title=note or None)
        if note:
            legend.get_title().set_fontsize("x-small")
