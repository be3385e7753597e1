"""Shared look of the plots: a colour-blind-safe palette, axes creation, units of series keys.

No pyplot here: a new figure is a plain ``matplotlib.figure.Figure``, which
renders with Agg and never opens a window, so nothing global changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import cycle
from typing import TYPE_CHECKING

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from l4slab._types import KeyInfo

if TYPE_CHECKING:
    from l4slab.results import Results

__all__ = [
    "COLORS",
    "LINESTYLES",
    "KeyInfo",
    "key_info",
    "new_axes",
    "recorded_keys",
    "styles",
]

#: Okabe & Ito's colour-blind-safe palette (Color Universal Design), yellow last because it
#: reads poorly on white.
COLORS = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
#: After the colours run out, lines differ by dash pattern too.
LINESTYLES = ("-", "--", ":", "-.")

#: Size of a figure made when no ``ax`` is given, in inches.
FIGSIZE = (8.0, 4.0)


def new_axes(ax: Axes | None, *, figsize: tuple[float, float] = FIGSIZE) -> Axes:
    """``ax`` itself, or the single Axes of a new Agg figure (``ax.figure`` to save it)."""
    if ax is not None:
        return ax
    figure = Figure(figsize=figsize, layout="constrained")
    return figure.add_subplot()


def note(ax: Axes, text: str) -> None:
    """Say on an empty plot why it is empty."""
    ax.text(
        0.5,
        0.5,
        text,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize="small",
        color="#555555",
        wrap=True,
    )


def styles() -> Iterator[tuple[str, str]]:
    """``(colour, linestyle)`` pairs: every colour solid, then every colour dashed, ..."""
    pairs = [(color, style) for style in LINESTYLES for color in COLORS]
    return cycle(pairs)


_KEYS: dict[str, KeyInfo] = {
    "goodput_bps": KeyInfo("goodput", "Mbit/s", 1e-6),
    "pacing_bps": KeyInfo("pacing rate", "Mbit/s", 1e-6),
    "cwnd_bytes": KeyInfo("congestion window", "kB", 1e-3),
    "ssthresh_bytes": KeyInfo("slow-start threshold", "kB", 1e-3),
    "inflight_bytes": KeyInfo("bytes in flight", "kB", 1e-3),
    "unsent_bytes": KeyInfo("unsent bytes in the send buffer", "kB", 1e-3),
    "srtt_ms": KeyInfo("smoothed RTT", "ms"),
    "rtt_ms": KeyInfo("per-ACK RTT, mean per interval", "ms"),
    "sojourn_ms": KeyInfo("queue sojourn, mean per interval", "ms"),
    "sojourn_ms.l": KeyInfo("L queue sojourn, mean per interval", "ms"),
    "sojourn_ms.c": KeyInfo("C queue sojourn, mean per interval", "ms"),
    "sojourn_max_ms": KeyInfo("queue sojourn, max per interval", "ms"),
    "backlog_pkts": KeyInfo("backlog", "packets"),
    "backlog_bytes": KeyInfo("backlog", "kB", 1e-3),
    "drops": KeyInfo("drops per interval", "packets"),
    "marks": KeyInfo("CE marks per interval", "packets"),
    "utilization": KeyInfo("utilization", "%", 100.0),
    "prob": KeyInfo("probability", "0 to 1"),
    "p_c": KeyInfo("p_C, classic drop/mark probability", "0 to 1"),
    "p_cl": KeyInfo("p_CL, coupled L4S marking probability", "0 to 1"),
    "accu_prob": KeyInfo("accumulated probability", "0 to 1"),
    "count": KeyInfo("CoDel count (drops or marks in this dropping state)", "packets"),
    "loss_fraction": KeyInfo("packet loss of the data direction", "%", 100.0),
    "frame_rate_fps": KeyInfo("received frame rate", "frames/s"),
    "frame_latency_ms": KeyInfo("frame latency, mean per interval", "ms"),
    "app_bitrate_bps": KeyInfo("application bitrate", "Mbit/s", 1e-6),
    "ping_rtt_ms": KeyInfo("ping RTT, mean per interval", "ms"),
    "ping_rtt_max_ms": KeyInfo("ping RTT, max per interval", "ms"),
    "rtt_max_ms": KeyInfo("RTT, max per interval", "ms"),
    "playout_loss_fraction": KeyInfo(
        "packets that missed their playout (lost or too late)", "%", 100.0
    ),
}


def recorded_keys(results: Results, series: str) -> list[str]:
    """The keys recorded in ``series`` (e.g. ``queue/bottleneck.down``), sorted; none when
    the run recorded no such series."""
    return results.series_keys(series) if series in results.series_names() else []


def key_info(key: str) -> KeyInfo:
    """Name, unit and scale of a series key; unknown keys get their unit from the suffix."""
    known = _KEYS.get(key)
    if known is not None:
        return known
    # A per-direction or per-part variant, e.g. frame_rate_fps.up: the base key's unit.
    base, dot, part = key.partition(".")
    if dot and part:
        info = key_info(base)
        return KeyInfo(f"{info.name} ({part})", info.unit, info.scale)
    for suffix, unit, scale in (
        ("_ms", "ms", 1.0),
        ("_bps", "Mbit/s", 1e-6),
        ("_bytes", "kB", 1e-3),
        ("_pkts", "packets", 1.0),
    ):
        if key.endswith(suffix):
            return KeyInfo(key.removesuffix(suffix).replace("_", " "), unit, scale)
    return KeyInfo(key.replace("_", " "), "")
