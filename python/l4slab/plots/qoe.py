"""The home-network apps as their users see them: a video player's buffer and bitrate
over time, and the distribution of a browser's page load times.

A player's lines are its series (series.parquet ``flow/<name>``: ``video_buffer_s``,
``video_bitrate_bps``, ``video_stalled``, one sample per sample interval), its segment
fetches are summary.json's per-segment list (``app_metrics.segments``); a browser's
page loads are its per-page list (``app_metrics.pages``). docs/apps.md says what each is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from l4slab.plots._style import COLORS, new_axes, note, recorded_keys, styles
from l4slab.plots.cdf import cdf_line
from l4slab.qoe import app_flows, scenario_flow
from l4slab.results import Results

__all__ = ["page_load_cdf", "page_load_times", "segment_fetches", "video_player"]

#: The player figure's axes reach this far above their highest value (room for the legend).
_HEADROOM = 1.35
#: Colours of the player figure: buffer, bitrate, stalls, segment fetches.
_BUFFER, _BITRATE, _STALL, _FETCH = COLORS[0], COLORS[1], COLORS[3], COLORS[2]


def segment_fetches(results: Results, flow: str) -> np.ndarray:
    """A player's fetched segments as rows ``(requested, fetch time, bitrate_bps)``, times
    in seconds of the run (the per-segment list counts from the flow's start)."""
    metrics = results.flow(flow).get("app_metrics") or {}
    start = float(scenario_flow(results.summary, flow).get("start") or 0) / 1e9
    rows = [
        (start + float(s["requested_s"]), float(s["fetch_s"]), float(s["bitrate_bps"]))
        for s in metrics.get("segments") or []
        if isinstance(s, Mapping)
    ]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def video_player(results: Results, flow: str, ax: Axes | None = None) -> Axes:
    """One ``video_stream`` player over time: its buffer (s, left axis; the buffer
    target dashed), the bitrate of the segment it last asked for (Mbit/s, right axis),
    its stalls (shaded) and each segment's fetch, request to last byte (bars along the
    bottom: the on/off pattern). Returns the buffer's Axes."""
    ax = new_axes(ax)
    series = f"flow/{flow}"
    keys = recorded_keys(results, series)
    if "video_buffer_s" not in keys:
        note(ax, f"{flow}: no video series (video_buffer_s)")
        return ax
    t, buffer = results.series(series, "video_buffer_s")
    ax.plot(t, buffer, color=_BUFFER, linewidth=1.4, label="buffer")
    app = scenario_flow(results.summary, flow).get("app") or {}
    target = app.get("buffer_target") if isinstance(app, Mapping) else None
    if isinstance(target, int | float):
        ax.axhline(target / 1e9, color=_BUFFER, linestyle="--", linewidth=0.8, label="target")
    if "video_stalled" in keys:
        ts, stalled = results.series(series, "video_stalled")
        if np.any(stalled > 0):
            ax.fill_between(
                ts,
                0,
                1,
                where=stalled > 0,
                step="pre",
                transform=ax.get_xaxis_transform(),
                color=_STALL,
                alpha=0.18,
                linewidth=0,
                label="stalled",
            )
    fetches = segment_fetches(results, flow)
    if len(fetches):
        ax.broken_barh(
            list(zip(fetches[:, 0], fetches[:, 1], strict=True)),
            (0.0, 0.035),
            transform=ax.get_xaxis_transform(),
            color=_FETCH,
            edgecolor="white",
            linewidth=0.6,
            label="segment fetches",
        )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("buffer (s of media)")
    # Headroom above the lines for the legend.
    highest = max(float(np.nanmax(buffer)) if len(buffer) else 0.0, _seconds(target))
    ax.set_ylim(0.0, max(highest, 1.0) * _HEADROOM)
    duration = results.summary.get("duration_s")
    if isinstance(duration, int | float) and duration > 0:
        ax.set_xlim(0.0, float(duration))
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if "video_bitrate_bps" in keys:
        rate = ax.twinx()
        tb, bitrate = results.series(series, "video_bitrate_bps")
        rate.plot(tb, bitrate / 1e6, color=_BITRATE, drawstyle="steps-post", label="bitrate")
        rate.set_ylabel("bitrate of the segment asked for (Mbit/s)")
        ladder = app.get("ladder") if isinstance(app, Mapping) else None
        top = max(ladder) if isinstance(ladder, list) and ladder else np.nanmax(bitrate)
        rate.set_ylim(0.0, float(top) / 1e6 * _HEADROOM)
        more, names = rate.get_legend_handles_labels()
        handles, labels = handles + more, labels + names
    ax.legend(handles, labels, loc="upper center", ncols=3, fontsize="small")
    ax.set_title(f"{flow}: buffer and bitrate ({_abr(app)})")
    return ax


def page_load_times(results: Results, flow: str) -> tuple[np.ndarray, np.ndarray]:
    """A browser's ``(first byte, load)`` times of its pages in ms (summary.json
    ``app_metrics.pages``): the first over the pages that got their first byte, the
    second over the loaded pages."""
    pages = (results.flow(flow).get("app_metrics") or {}).get("pages") or []

    def ms(key: str) -> np.ndarray:
        values = [p.get(key) for p in pages if isinstance(p, Mapping)]
        return np.array([v * 1e3 for v in values if isinstance(v, int | float)], dtype=float)

    return ms("ttfb_s"), ms("load_s")


def page_load_cdf(
    results: Results, ax: Axes | None = None, flows: Sequence[str] | None = None
) -> Axes:
    """CDF of each ``web_browse`` flow's page load times (solid) and times to the first
    byte (dashed), in ms on a log axis; dots mark the load time's p50 and p95 of
    summary.json (``page_load_ms``, the browsing table's numbers)."""
    ax = new_axes(ax)
    names = list(flows) if flows is not None else app_flows(results.summary, "web_browse")
    for name, (color, _) in zip(names, styles(), strict=False):
        first, load = page_load_times(results, name)
        cdf_line(ax, load, f"{name} page load ({len(load)} pages)", color=color)
        cdf_line(ax, first, f"{name} first byte", color=color, linestyle="--")
        stats = (results.flow(name).get("app_metrics") or {}).get("page_load_ms") or {}
        for q, fraction in (("p50", 0.5), ("p95", 0.95)):
            if isinstance(stats.get(q), int | float):
                ax.plot([stats[q]], [fraction], "o", color=color, markersize=5)
    if not any(np.size(line.get_xdata()) for line in ax.get_lines()):
        note(ax, "no page loaded")
    else:
        ax.set_xscale("log")
    ax.set_xlabel("time from the page's start (ms, log scale)")
    ax.set_ylabel("fraction of pages")
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Page load times")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize="small")
    return ax


def _seconds(ns: Any) -> float:
    return float(ns) / 1e9 if isinstance(ns, int | float) else 0.0


def _abr(app: Any) -> str:
    return f"ABR {app.get('abr')}" if isinstance(app, Mapping) and app.get("abr") else "ABR ?"
