"""Plots of a Wi-Fi cell, from summary.json's ``wifi`` object: airtime per station,
MAC access delay per access category, A-MPDU sizes.

The counters are the cell's (``l4slab_wifi::stats``), over the measured
time (after the warmup). A run without a ``[wifi]`` table has no ``wifi`` object:
the plots then say so on the Axes rather than raise, like the other plots whose
data are absent.

Access categories have one colour each, the same in every plot and report:
VO (voice) vermillion, VI (video) orange, BE (best effort) blue, BK
(background) green.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from l4slab.plots._style import COLORS, new_axes, note
from l4slab.results import Results
from l4slab.tables import WIFI_ACS, wifi_station_order

__all__ = [
    "ACCESS_DELAY_POINTS",
    "AC_COLORS",
    "AC_NAMES",
    "airtime_label",
    "ampdu_histogram",
    "has_wifi",
    "wifi_access_delay",
    "wifi_airtime",
    "wifi_ampdu",
    "wifi_stats",
]

#: Access categories, highest priority first, with their names.
AC_NAMES: dict[str, str] = dict(WIFI_ACS)

#: One colour per access category (Okabe & Ito), the most urgent the warmest.
AC_COLORS: dict[str, str] = {
    "vo": COLORS[3],  # vermillion
    "vi": COLORS[1],  # orange
    "be": COLORS[0],  # blue
    "bk": COLORS[2],  # bluish green
}

#: The points of an access-delay curve: (summary key, tick label), left to right.
ACCESS_DELAY_POINTS: tuple[tuple[str, str], ...] = (
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
)


def wifi_stats(results: Results) -> Mapping[str, Any]:
    """summary.json's ``wifi`` object, or ``{}`` for a run without a Wi-Fi cell."""
    stats = results.summary.get("wifi")
    return stats if isinstance(stats, Mapping) else {}


def has_wifi(results: Results) -> bool:
    """Whether the run had a Wi-Fi cell (summary.json has a ``wifi`` object)."""
    return bool(wifi_stats(results))


# --------------------------------------------------------------------------- plots


def wifi_airtime(results: Results, ax: Axes | None = None) -> Axes:
    """Each station's share of the cell's station airtime, as horizontal bars (in %).

    A station's airtime counts its downlink (from the AP) and its uplink: each
    exchange's PPDU, SIFS and response (or ACK timeout when it failed). Each bar
    is labelled with the station's airtime as a share of the measured time and
    the fraction of its MPDU transmissions that failed (``retries``), plus its
    MPDU drops at the retry limit when there were any. First station on top.
    """
    ax = new_axes(ax)
    stations: Mapping[str, Mapping[str, Any]] = wifi_stats(results).get("stations") or {}
    names = wifi_station_order(results.summary)
    ax.set_title("Airtime share per station", fontsize="medium")
    ax.set_xlabel("share of the stations' airtime (%)")
    if not names:
        note(ax, _absent(results, "no station"))
        return ax
    shares = np.nan_to_num([_number(stations[n].get("airtime_share")) * 100 for n in names])
    rows = np.arange(len(names))
    colors = [COLORS[i % len(COLORS)] for i in range(len(names))]
    ax.barh(rows, shares, height=0.6, color=colors, label="_airtime share")
    ax.set_yticks(rows, names)
    ax.set_xlim(0.0, 100.0)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first station on top
    for row, name, share in zip(rows, names, shares, strict=True):
        text = airtime_label(stations[name])
        inside = share >= 55.0
        ax.text(
            share - 1.0 if inside else share + 1.0,
            float(row),
            text,
            ha="right" if inside else "left",
            va="center",
            fontsize="small",
            color="white" if inside else "#333333",
        )
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def airtime_label(station: Mapping[str, Any]) -> str:
    """A bar's label: ``61 % · 53 % of the time · retries 8.9 %`` (``· 3 drops``)."""
    parts = [
        f"{_number(station.get('airtime_share')) * 100:.0f} %",
        f"{_number(station.get('airtime_fraction')) * 100:.0f} % of the time",
        f"retries {_number(station.get('mpdu_retry_fraction')) * 100:.1f} %",
    ]
    drops = station.get("mpdu_drops")
    if isinstance(drops, int | float) and drops:
        parts.append(f"{int(drops):,} drop{'' if drops == 1 else 's'}")
    return " · ".join(parts)


def wifi_access_delay(
    results: Results, ax: Axes | None = None, acs: Sequence[str] | None = None
) -> Axes:
    """MAC access delay per access category: p50, p90, p99, p99.9 and max, one line each.

    The delay runs from the moment an AC has something to send on a link to the
    start of its transmission there (802.11's "MAC access delay"), over every
    transmitter of the cell (AP and stations). The x axis is categorical, evenly
    spaced: p50 → p90 → p99 → p99.9 is one more "nine" per step. The y axis is
    logarithmic when the values span more than a factor of 20. Only ACs that had
    samples are drawn (``acs`` picks some), in priority order, in their colours
    (:data:`AC_COLORS`).
    """
    ax = new_axes(ax)
    delays: Mapping[str, Any] = wifi_stats(results).get("access_delay_ms") or {}
    wanted = list(acs) if acs is not None else list(AC_NAMES)
    order = [ac for ac in wanted if ac in AC_NAMES] + [ac for ac in wanted if ac not in AC_NAMES]
    x = np.arange(len(ACCESS_DELAY_POINTS))
    for ac in order:
        stats = delays.get(ac)
        if not isinstance(stats, Mapping):
            continue
        y = np.array([_number(stats.get(key)) for key, _ in ACCESS_DELAY_POINTS])
        label = f"{ac.upper()} ({AC_NAMES.get(ac, ac)})"
        mean = _number(stats.get("mean"))
        if math.isfinite(mean):
            label += f", mean {mean:.3g} ms"
        ax.plot(
            x,
            y,
            color=AC_COLORS.get(ac, "#555555"),
            marker="o",
            markersize=4,
            linewidth=1.6,
            label=label,
        )
    ax.set_xticks(x, [label for _, label in ACCESS_DELAY_POINTS])
    ax.set_xlim(-0.2, len(ACCESS_DELAY_POINTS) - 0.8)
    ax.set_xlabel("percentile of the access delays")
    ax.set_ylabel("MAC access delay (ms)")
    ax.set_title("Wi-Fi access delay per access category", fontsize="medium")
    lines = [np.asarray(line.get_ydata(), dtype=np.float64) for line in ax.get_lines()]
    if not lines:
        note(ax, _absent(results, "no access delay was measured"))
        return ax
    ys = np.concatenate(lines)
    finite = ys[np.isfinite(ys)]
    if len(finite) and finite.min() > 0 and finite.max() / finite.min() > 20:
        ax.set_yscale("log")
        # Plain numbers (0.1, 1, 10), not powers of ten.
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    else:
        ax.set_ylim(bottom=0.0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def wifi_ampdu(results: Results, ax: Axes | None = None) -> Axes:
    """A-MPDU sizes: the share of PPDUs (in %) that carried each number of MPDUs, as bars.

    A dashed line marks the mean number of MPDUs per PPDU.
    """
    ax = new_axes(ax)
    ampdu: Mapping[str, Any] = wifi_stats(results).get("ampdu") or {}
    sizes, counts = ampdu_histogram(results)
    total = counts.sum()
    ax.set_xlabel("MPDUs per PPDU (A-MPDU size)")
    ax.set_ylabel("share of PPDUs (%)")
    ax.set_title(
        f"A-MPDU sizes of {int(total):,} PPDUs" if total else "A-MPDU sizes", fontsize="medium"
    )
    if not total:
        note(ax, _absent(results, "no PPDU was sent"))
        return ax
    ax.bar(sizes, counts / total * 100.0, width=0.9, color=COLORS[0], label="_PPDUs")
    mean = _number(ampdu.get("mean_mpdus"))
    if math.isfinite(mean):
        ax.axvline(
            mean, color=COLORS[6], linestyle="--", linewidth=1.2, label=f"mean {mean:.1f} MPDUs"
        )
        ax.legend(loc="best", fontsize="small")
    ax.set_xlim(0.0, float(sizes.max()) + 1.0)
    ax.set_ylim(bottom=0.0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def ampdu_histogram(results: Results) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, ppdus)``: each number of MPDUs per PPDU that occurred (ascending) and
    how many PPDUs carried that many; empty without a Wi-Fi cell."""
    histogram = (wifi_stats(results).get("ampdu") or {}).get("mpdus_histogram") or {}
    pairs = sorted(
        (int(size), int(count))
        for size, count in histogram.items()
        if str(size).isdigit() and isinstance(count, int | float) and count > 0
    )
    sizes = np.array([size for size, _ in pairs], dtype=np.int64)
    counts = np.array([count for _, count in pairs], dtype=np.int64)
    return sizes, counts


# --------------------------------------------------------------------------- helpers


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _absent(results: Results, what: str) -> str:
    return what if has_wifi(results) else "no Wi-Fi cell in this run (no [wifi] table)"
