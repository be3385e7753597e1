"""Plots of a sweep: a metric against a parameter, and a heatmap over two parameters.

Plain functions taking an ``Axes`` (a new figure's when ``ax`` is None) and a
:class:`~l4slab.sweep.data.SweepData` (``l4slab.sweep.load(DIR)``); nothing global.

* :func:`metric_vs_param`: one line per combination of the other varying parameters
  (e.g. per AQM and congestion control), through the mean over seeds, with the range
  over seeds as a band.
* :func:`heatmap`: the mean over seeds in each cell of a two-parameter grid, the other
  parameters fixed with ``where``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from l4slab.plots._style import COLORS, LINESTYLES, new_axes, note, styles
from l4slab.sweep.data import Param, SweepData, metric_info

__all__ = ["heatmap", "metric_vs_param"]


def _positions(data: SweepData, param: Param) -> tuple[list[float], list[str], bool]:
    """Where each of the parameter's values goes on an axis, its tick labels, and
    whether the axis is numeric (else the values are categories, in grid order)."""
    if param.numbers is not None:
        return [param.shown(n) for n in param.numbers], list(param.labels), True
    return [float(i) for i in range(len(param.labels))], list(param.labels), False


def _value_index(data: SweepData, param: Param, rows: Iterable[int]) -> np.ndarray:
    """For each row, the index of its value of ``param`` in the grid's list."""
    labels = list(param.labels)
    return np.array([labels.index(data.label_of(param, int(row))) for row in rows], dtype=int)


def metric_vs_param(
    ax: Axes | None,
    data: SweepData,
    metric: str,
    x: str,
    *,
    by: Sequence[str] | None = None,
    where: Mapping[str, Any] | None = None,
    logx: bool = False,
    spread: bool = True,
    legend: str | None = "best",
) -> Axes:
    """``metric`` against the grid key ``x``, one line per combination of ``by``.

    ``by`` defaults to every other grid key with several values that ``where`` does not
    fix. Each point is the mean over the seeds (and over any grid key neither ``x``,
    ``by`` nor ``where`` names); with ``spread`` the band spans their minimum to maximum.
    Failed cells are left out. ``KeyError`` names an unknown key or metric.
    """
    ax = new_axes(ax)
    data.check_metric(metric)
    xp = data.param(x)
    fixed = dict(where or {})
    if by is None:
        groups = [p for p in data.varying() if p.key != x and p.key not in fixed]
    else:
        groups = [data.param(key) for key in by]
    rows = data.rows(fixed)
    info = metric_info(metric)
    positions, ticks, numeric = _positions(data, xp)
    values = data.values(metric, rows) * info.scale
    x_index = _value_index(data, xp, rows)
    group_index = [_value_index(data, g, rows) for g in groups]
    combos = list(itertools.product(*(range(len(g.labels)) for g in groups)))
    drawn = 0
    for combo, (color, style) in zip(combos, _line_styles(combos, len(groups)), strict=True):
        mask = np.ones(len(rows), dtype=bool)
        for g, wanted in zip(group_index, combo, strict=True):
            mask &= g == wanted
        xs, means, lows, highs = [], [], [], []
        for i, position in enumerate(positions):
            chosen = values[mask & (x_index == i)]
            chosen = chosen[~np.isnan(chosen)]
            if chosen.size == 0:
                continue
            xs.append(position)
            means.append(float(np.mean(chosen)))
            lows.append(float(np.min(chosen)))
            highs.append(float(np.max(chosen)))
        if not xs:
            continue
        label = " · ".join(g.labels[i] for g, i in zip(groups, combo, strict=True)) or None
        ax.plot(xs, means, color=color, linestyle=style, marker="o", markersize=4, label=label)
        if spread and any(h > lo for lo, h in zip(lows, highs, strict=True)):
            ax.fill_between(xs, lows, highs, color=color, alpha=0.15, linewidth=0)
        drawn += 1
    if drawn == 0:
        note(ax, f"no cell of this sweep has a value of {metric}")
    if numeric:
        if logx:
            ax.set_xscale("log")
        ax.set_xticks(positions, ticks)
        ax.minorticks_off()
    else:
        ax.set_xticks(positions, ticks)
    ax.set_xlabel(xp.axis_label)
    ax.set_ylabel(info.label)
    ax.grid(True, alpha=0.3)
    if legend is not None and (drawn > 1 or (drawn == 1 and groups)):
        outside = (
            {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)} if legend == "outside" else {}
        )
        ax.legend(
            fontsize="small",
            title=" · ".join(g.key for g in groups) or None,
            title_fontsize="small",
            **({"loc": legend} if legend != "outside" else outside),
        )
    if fixed:
        ax.set_title(_where_text(fixed), fontsize="small")
    return ax


def _line_styles(combos: Sequence[tuple[int, ...]], groups: int) -> list[tuple[str, str]]:
    """A colour and a dash pattern per line: by the first group's value and the second's
    when there are two groups, else in turn."""
    if groups == 2:
        return [
            (COLORS[combo[0] % len(COLORS)], LINESTYLES[combo[1] % len(LINESTYLES)])
            for combo in combos
        ]
    return [style for style, _ in zip(styles(), combos, strict=False)]


def heatmap(
    ax: Axes | None,
    data: SweepData,
    metric: str,
    x: str,
    y: str,
    *,
    where: Mapping[str, Any] | None = None,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
) -> Axes:
    """The mean of ``metric`` over seeds for each pair of values of the grid keys ``x``
    and ``y``, written in each square. Every other grid key with several values must
    be fixed by ``where`` (``ValueError`` says which is not). ``vmin``/``vmax`` fix the
    colour scale (in the unit shown), e.g. to compare several panels."""
    ax = new_axes(ax)
    data.check_metric(metric)
    xp, yp = data.param(x), data.param(y)
    fixed = dict(where or {})
    loose = [p.key for p in data.varying() if p.key not in (x, y) and p.key not in fixed]
    if loose:
        raise ValueError(
            f"heatmap of {x} x {y}: {', '.join(loose)} {'varies' if len(loose) == 1 else 'vary'}"
            f" too; fix {'it' if len(loose) == 1 else 'them'} with where, e.g. "
            f"{{{loose[0]!r}: {data.param(loose[0]).labels[0]!r}}}"
        )
    rows = data.rows(fixed)
    info = metric_info(metric)
    values = data.values(metric, rows) * info.scale
    xi = _value_index(data, xp, rows)
    yi = _value_index(data, yp, rows)
    grid = np.full((len(yp.labels), len(xp.labels)), np.nan)
    for j in range(len(yp.labels)):
        for i in range(len(xp.labels)):
            chosen = values[(xi == i) & (yi == j)]
            chosen = chosen[~np.isnan(chosen)]
            if chosen.size:
                grid[j, i] = float(np.mean(chosen))
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(xp.labels)), xp.labels)
    ax.set_yticks(range(len(yp.labels)), yp.labels)
    ax.set_xlabel(xp.key)
    ax.set_ylabel(yp.key)
    finite = grid[np.isfinite(grid)]
    low = vmin if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    high = vmax if vmax is not None else (float(finite.max()) if finite.size else 0.0)
    middle = (low + high) / 2
    for j in range(grid.shape[0]):
        for i in range(grid.shape[1]):
            value = grid[j, i]
            text = "—" if math.isnan(value) else _number(value)
            dark = not math.isnan(value) and value < middle
            color = "white" if dark else "black"
            ax.text(i, j, text, ha="center", va="center", fontsize="small", color=color)
    colorbar = ax.figure.colorbar(image, ax=ax)
    colorbar.set_label(info.label)
    if fixed:
        ax.set_title(_where_text(fixed), fontsize="small")
    return ax


def _number(value: float) -> str:
    if value == 0 or 0.01 <= abs(value) < 10_000:
        return f"{value:.3g}"
    return f"{value:.2e}"


def _where_text(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{key} = {value}" for key, value in where.items())
