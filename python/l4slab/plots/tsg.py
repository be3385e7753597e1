"""tcptrace-style time-sequence graph of one flow, from packets.parquet (sender's view).

Time on x, relative sequence number on y (0 = the first payload byte):

* each data segment sent: a vertical tick from its first to its last byte, at its
  send time; retransmissions in another colour;
* segments that arrived CE-marked: the tick of the copy that was marked, highlighted;
* drops in the network: an X at the drop time, across the dropped segment;
* the cumulative ACK line (step) as ACKs reach the sender, and the receive-window
  line (ACK + advertised window) above it;
* SACK blocks: short bars from the block's left to its right edge, at the ACK time;
* TCP flags: CWR on data segments, ECE on ACKs.

A long flow is not drawn packet by packet: each element with more than
``max_events`` events in view (default :data:`~l4slab.plots.TSG_MAX_EVENTS`) is
decimated into ``bins`` time bins (one tick per bin from the lowest to the highest
sequence number of the bin; the ACK line through the first and last ACK of each
bin), the legend says which, and a note on the graph says how to zoom
(``t_range``). The trace is read as a stream: memory stays bounded whatever the
flow's length (see :func:`l4slab.plots.tsg_data`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.ticker import EngFormatter

from l4slab.plots._style import new_axes
from l4slab.plots._trace import (
    TSG_BINS,
    TSG_MAX_EVENTS,
    Ticks,
    TsgData,
    first_event_time,
    tsg_data,
)
from l4slab.results import Results
from l4slab.tables import flow_order

__all__ = ["TSG_COLORS", "draw_time_sequence", "interesting_window", "time_sequence"]

#: Colours of the graph's elements (Okabe & Ito palette; grey for the window).
TSG_COLORS = {
    "data": "#0072B2",
    "retransmission": "#D55E00",
    "ce": "#E69F00",
    "ack": "#009E73",
    "window": "#888888",
    "sack": "#CC79A7",
    "drop": "#000000",
    "cwr": "#000000",
    "ece": "#009E73",
}

#: Above this many ticks, tick collections are rasterized inside vector output (SVG).
_RASTERIZE_ABOVE = 20_000


def time_sequence(
    results: Results,
    flow: str | int,
    ax: Axes | None = None,
    t_range: tuple[float, float] | None = None,
    *,
    max_events: int = TSG_MAX_EVENTS,
    bins: int = TSG_BINS,
) -> Axes:
    """Draw the time-sequence graph of ``flow`` (name or scenario index) into ``ax``.

    ``t_range=(t0, t1)`` in seconds zooms in. Needs the packet trace; raises
    :class:`~l4slab.plots.NoPacketTraceError` (a ``ValueError``) telling how to get one.
    The ACK line is labelled ``"cumulative ACK"``; its y data are the bytes
    acknowledged (non-decreasing; the FIN is not counted). Elements with more than
    ``max_events`` events in view are decimated into ``bins`` time bins (see the
    module header); their legend labels say "per … bin".
    """
    return draw_time_sequence(
        tsg_data(results, flow, t_range, max_events=max_events, bins=bins), ax
    )


def draw_time_sequence(data: TsgData, ax: Axes | None = None) -> Axes:
    """Draw what :func:`~l4slab.plots.tsg_data` collected (see :func:`time_sequence`)."""
    ax = new_axes(ax, figsize=(10.0, 5.0))
    _ticks(ax, data.data, color=TSG_COLORS["data"], width=1.0, label="data sent")
    retx = data.retransmissions
    _ticks(
        ax,
        retx,
        color=TSG_COLORS["retransmission"],
        width=2.2,
        label="_retransmission ticks",
        zorder=3.0,
    )
    if len(retx.t):
        # A tick is a few pixels tall once the view spans many windows: mark it too.
        ax.plot(
            retx.t,
            retx.hi,
            linestyle="none",
            marker="D",
            markersize=4,
            color=TSG_COLORS["retransmission"],
            label=_label("retransmission", retx),
            zorder=4.0,
        )
    _ticks(
        ax,
        data.ce,
        color=TSG_COLORS["ce"],
        width=2.2,
        label="CE-marked (tick of the marked copy)",
        zorder=3.0,
    )

    acks = data.acks
    if len(acks.t):
        ax.plot(
            acks.t,
            acks.acked,
            drawstyle="steps-post",
            color=TSG_COLORS["ack"],
            linewidth=1.4,
            label="cumulative ACK"
            + (f" (first and last per {_seconds(acks.bin_s)} bin)" if acks.bin_s else ""),
            zorder=2.5,
        )
    if len(data.sacks.t):
        bars = _bars(
            data.sacks.t,
            data.sacks.lo,
            data.sacks.hi,
            color=TSG_COLORS["sack"],
            width=1.0,
            label=_label("SACK block", data.sacks),
        )
        bars.set_alpha(0.55)
        bars.set_zorder(1.5)
        ax.add_collection(bars)
    drops = data.drops
    if len(drops.t):
        ax.plot(
            drops.t,
            (drops.lo + drops.hi) / 2,
            linestyle="none",
            marker="x",
            markersize=7,
            markeredgewidth=1.6,
            color=TSG_COLORS["drop"],
            label=_label("dropped in the network", drops),
            zorder=4.0,
        )
    if len(data.cwr.t):
        ax.plot(
            data.cwr.t,
            data.cwr.lo,
            linestyle="none",
            marker="^",
            markersize=6,
            color=TSG_COLORS["cwr"],
            label=_label("CWR flag (sender reduced)", data.cwr),
            zorder=4.0,
        )
    if len(data.ece.t):
        ax.plot(
            data.ece.t,
            data.ece.lo,
            linestyle="none",
            marker="v",
            markersize=4,
            markerfacecolor="none",
            color=TSG_COLORS["ece"],
            label=_label("ECE flag on ACK", data.ece),
            zorder=4.0,
        )

    _limits(ax, data)
    if len(acks.t):
        label = "receive window (ACK + wnd)"
        if np.min(acks.window) > ax.get_ylim()[1]:
            label += " — above the view"
        ax.plot(
            acks.t,
            acks.window,
            drawstyle="steps-post",
            color=TSG_COLORS["window"],
            linestyle="--",
            linewidth=1.0,
            label=label,
        )

    ax.set_xlabel("time at the sender (s)")
    ax.set_ylabel("sequence offset (bytes)")
    ax.yaxis.set_major_formatter(EngFormatter(unit="B"))
    zoom = f", {data.t_range[0]:.3f} to {data.t_range[1]:.3f} s" if data.t_range else ""
    ax.set_title(
        f"Time-sequence graph — {data.name}{zoom}" + (" (decimated)" if data.decimated else "")
    )
    ax.grid(True, alpha=0.3)
    notes = []
    if data.decimated:
        notes.append(decimation_note(data))
    if not data.has_flags:
        notes.append("trace without TCP flags: no CWR/ECE marks")
    if notes:
        ax.text(
            0.99,
            0.01,
            "\n".join(notes),
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize="x-small",
            bbox={"facecolor": "white", "edgecolor": "#cccccc", "alpha": 0.9},
        )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    return ax


def decimation_note(data: TsgData) -> str:
    """What a decimated graph leaves out, and how to see every packet."""
    width = next(
        e.bin_s
        for e in (data.data, data.acks, data.sacks, data.retransmissions, data.drops, data.ce)
        if e.bin_s
    )
    return (
        f"decimated: elements with more than {data.max_events:,} events in view are drawn "
        f"per {_seconds(width)} time bin ({data.data.total:,} data segments, "
        f"{data.acks.total:,} ACKs); zoom in (t_range, l4slab report --tsg-window) "
        "to see every packet"
    )


def interesting_window(results: Results, flow: str | int) -> tuple[float, float] | None:
    """A time range worth zooming into: around the flow's first retransmission (or
    drop, or CE mark), about 15 RTTs wide; ``None`` when there is none of those."""
    at = first_event_time(results, flow)
    if at is None:
        return None
    name = flow if isinstance(flow, str) else flow_order(results.summary)[flow]
    rtt_ms = ((results.flows().get(name) or {}).get("rtt_ms") or {}).get("p50")
    rtt = float(rtt_ms) / 1e3 if isinstance(rtt_ms, int | float) and rtt_ms > 0 else 0.1
    start = max(0.0, at - 5 * rtt)
    return (start, start + 15 * rtt)


# --------------------------------------------------------------------------- drawing


def _label(text: str, ticks: Ticks) -> str:
    if ticks.bin_s is None:
        return text
    return f"{text} (range per {_seconds(ticks.bin_s)} bin, {ticks.total:,} in all)"


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def _ticks(
    ax: Axes,
    ticks: Ticks,
    *,
    color: str,
    width: float,
    label: str,
    zorder: float = 2.0,
) -> None:
    if len(ticks.t):
        if not label.startswith("_"):
            label = _label(label, ticks)
        bars = _bars(ticks.t, ticks.lo, ticks.hi, color=color, width=width, label=label)
        bars.set_zorder(zorder)
        ax.add_collection(bars)


def _bars(
    t: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, color: str, width: float, label: str
) -> LineCollection:
    """Vertical bars from ``lo`` to ``hi`` at times ``t``."""
    segments = np.stack([np.column_stack([t, lo]), np.column_stack([t, hi])], axis=1).astype(
        np.float64
    )
    collection = LineCollection(list(segments), colors=color, linewidths=width, label=label)
    collection.set_rasterized(len(t) > _RASTERIZE_ABOVE)
    return collection


def _limits(ax: Axes, data: TsgData) -> None:
    """Fit the view to the data and the ACK line (not to the receive window)."""
    sent = (data.data, data.retransmissions)
    lows = [*(e.lo for e in sent), data.acks.acked]
    highs = [*(e.hi for e in sent), data.acks.acked]
    low = min((float(a.min()) for a in lows if len(a)), default=0.0)
    high = max((float(a.max()) for a in highs if len(a)), default=1.0)
    pad = max((high - low) * 0.04, 1.0)
    ax.set_ylim(low - pad, high + pad)
    if data.t_range is not None:
        ax.set_xlim(*data.t_range)
    else:
        times = [data.data.t, data.retransmissions.t, data.acks.t]
        first = min((float(a.min()) for a in times if len(a)), default=0.0)
        last = max((float(a.max()) for a in times if len(a)), default=1.0)
        margin = max((last - first) * 0.02, 1e-3)
        ax.set_xlim(first - margin, last + margin)
