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
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.ticker import EngFormatter

from l4slab.plots._style import new_axes
from l4slab.plots._trace import FlowTrace, flow_trace
from l4slab.results import Results

__all__ = ["TSG_COLORS", "interesting_window", "time_sequence"]

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
) -> Axes:
    """Draw the time-sequence graph of ``flow`` (name or scenario index) into ``ax``.

    ``t_range=(t0, t1)`` in seconds zooms in. Needs the packet trace; raises
    :class:`~l4slab.plots.NoPacketTraceError` (a ``ValueError``) telling how to get one.
    The ACK line is labelled ``"cumulative ACK"``; its y data are the bytes
    acknowledged (non-decreasing; the FIN is not counted).
    """
    trace = flow_trace(results, flow)
    ax = new_axes(ax, figsize=(10.0, 5.0))
    t0, t1 = t_range if t_range is not None else (-np.inf, np.inf)

    def within(t: np.ndarray) -> np.ndarray:
        return (t >= t0) & (t <= t1)

    shown = within(trace.data_t)
    original = shown & ~trace.data_retx
    retx = shown & trace.data_retx
    _ticks(
        ax,
        trace.data_t[original],
        trace.data_seq[original],
        trace.data_len[original],
        color=TSG_COLORS["data"],
        width=1.0,
        label="data sent",
    )
    _ticks(
        ax,
        trace.data_t[retx],
        trace.data_seq[retx],
        trace.data_len[retx],
        color=TSG_COLORS["retransmission"],
        width=2.2,
        label="_retransmission ticks",
        zorder=3.0,
    )
    if retx.any():
        # A tick is a few pixels tall once the view spans many windows: mark it too.
        ax.plot(
            trace.data_t[retx],
            trace.data_seq[retx] + trace.data_len[retx],
            linestyle="none",
            marker="D",
            markersize=4,
            color=TSG_COLORS["retransmission"],
            label="retransmission",
            zorder=3.5,
        )
    ce = within(trace.ce_t)
    _ticks(
        ax,
        trace.ce_t[ce],
        trace.ce_seq[ce],
        trace.ce_len[ce],
        color=TSG_COLORS["ce"],
        width=2.2,
        label="CE-marked (tick of the marked copy)",
        zorder=3.0,
    )

    acked = trace.acked
    ack_rows = within(trace.ack_t)
    if t_range is not None and len(trace.ack_t):
        # Start the line at the ACK in force when the range begins.
        before = np.flatnonzero(trace.ack_t < t0)
        if len(before):
            ack_rows[before[-1]] = True
    ack_t, ack_y = trace.ack_t[ack_rows], acked[ack_rows]
    if len(ack_t):
        ax.plot(
            ack_t,
            ack_y,
            drawstyle="steps-post",
            color=TSG_COLORS["ack"],
            linewidth=1.4,
            label="cumulative ACK",
            zorder=2.5,
        )
    sack = within(trace.sack_t)
    if sack.any():
        bars = _bars(
            trace.sack_t[sack],
            trace.sack_lo[sack],
            trace.sack_hi[sack],
            color=TSG_COLORS["sack"],
            width=1.0,
            label="SACK block",
        )
        bars.set_alpha(0.55)
        bars.set_zorder(1.5)
        ax.add_collection(bars)
    drops = within(trace.drop_t)
    if drops.any():
        middle = trace.drop_seq[drops] + trace.drop_len[drops] / 2
        ax.plot(
            trace.drop_t[drops],
            middle,
            linestyle="none",
            marker="x",
            markersize=7,
            markeredgewidth=1.6,
            color=TSG_COLORS["drop"],
            label="dropped in the network",
            zorder=4.0,
        )
    cwr = shown & trace.data_cwr
    if cwr.any():
        ax.plot(
            trace.data_t[cwr],
            trace.data_seq[cwr],
            linestyle="none",
            marker="^",
            markersize=6,
            color=TSG_COLORS["cwr"],
            label="CWR flag (sender reduced)",
            zorder=4.0,
        )
    ece = ack_rows & trace.ack_ece
    if ece.any():
        ax.plot(
            trace.ack_t[ece],
            acked[ece],
            linestyle="none",
            marker="v",
            markersize=4,
            markerfacecolor="none",
            color=TSG_COLORS["ece"],
            label="ECE flag on ACK",
            zorder=4.0,
        )

    _limits(ax, trace, shown, ack_y, t_range)
    window_t, window_y = ack_t, ack_y + trace.ack_wnd[ack_rows]
    if len(window_t):
        label = "receive window (ACK + wnd)"
        if np.min(window_y) > ax.get_ylim()[1]:
            label += " — above the view"
        ax.plot(
            window_t,
            window_y,
            drawstyle="steps-post",
            color=TSG_COLORS["window"],
            linestyle="--",
            linewidth=1.0,
            label=label,
        )

    ax.set_xlabel("time at the sender (s)")
    ax.set_ylabel("sequence offset (bytes)")
    ax.yaxis.set_major_formatter(EngFormatter(unit="B"))
    zoom = f", {t_range[0]:.3f} to {t_range[1]:.3f} s" if t_range is not None else ""
    ax.set_title(f"Time-sequence graph — {trace.name}{zoom}")
    ax.grid(True, alpha=0.3)
    if not trace.has_flags:
        ax.text(
            0.99,
            0.01,
            "trace without TCP flags: no CWR/ECE marks",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize="x-small",
        )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    return ax


def interesting_window(results: Results, flow: str | int) -> tuple[float, float] | None:
    """A time range worth zooming into: around the flow's first retransmission (or
    drop, or CE mark), about 15 RTTs wide; ``None`` when there is none of those."""
    trace = flow_trace(results, flow)
    events = [
        trace.data_t[trace.data_retx],
        trace.drop_t,
        trace.ce_t,
    ]
    firsts = [float(e.min()) for e in events if len(e)]
    if not firsts:
        return None
    at = min(firsts)
    rtt_ms = ((results.flows().get(trace.name) or {}).get("rtt_ms") or {}).get("p50")
    rtt = float(rtt_ms) / 1e3 if isinstance(rtt_ms, int | float) and rtt_ms > 0 else 0.1
    start = max(0.0, at - 5 * rtt)
    return (start, start + 15 * rtt)


# --------------------------------------------------------------------------- drawing


def _ticks(
    ax: Axes,
    t: np.ndarray,
    seq: np.ndarray,
    length: np.ndarray,
    *,
    color: str,
    width: float,
    label: str,
    zorder: float = 2.0,
) -> None:
    if len(t):
        bars = _bars(t, seq, seq + length, color=color, width=width, label=label)
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


def _limits(
    ax: Axes,
    trace: FlowTrace,
    shown: np.ndarray,
    ack_y: np.ndarray,
    t_range: tuple[float, float] | None,
) -> None:
    """Fit the view to the data and the ACK line (not to the receive window)."""
    lows = [trace.data_seq[shown], ack_y]
    highs = [trace.data_seq[shown] + trace.data_len[shown], ack_y]
    low = min((float(a.min()) for a in lows if len(a)), default=0.0)
    high = max((float(a.max()) for a in highs if len(a)), default=1.0)
    pad = max((high - low) * 0.04, 1.0)
    ax.set_ylim(low - pad, high + pad)
    if t_range is not None:
        ax.set_xlim(*t_range)
    else:
        times = [trace.data_t[shown], trace.ack_t]
        first = min((float(a.min()) for a in times if len(a)), default=0.0)
        last = max((float(a.max()) for a in times if len(a)), default=1.0)
        margin = max((last - first) * 0.02, 1e-3)
        ax.set_xlim(first - margin, last + margin)
