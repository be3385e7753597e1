"""Figure kinds of a study report: declared in study.toml, drawn from the study's runs.

::

    [[figures]]
    name = "completion-vs-loss"
    kind = "measure_plot"
    title = "Transfer time against random loss"
    args = { measure = "time", x = [0, 0.5, 1, 2, 3], xlabel = "random loss (%)",
             series = { Cubic = ["cubic_0", ...], BBR = ["bbr_0", ...] } }

Built-in kinds:

* ``measure_plot`` — one measure against a number ``x``, one line per series of
  runs; the spread over seeds as error bars; published numbers as hollow markers.
* ``time_sequence`` — the tcptrace-style time-sequence graph of one flow, one
  panel per run, side by side (:func:`l4slab.plots.time_sequence`).
* ``timeseries`` — one key of series.parquet over time, one line per run.
* ``percentile_cdf`` — a distribution summary.json keeps as percentiles (a flow's
  ``rtt_ms``, a queue's ``sojourn_ms``) drawn as a CDF through them, a line per run.
* ``cdf`` — the distribution of one key of series.parquet over the intervals, a line
  per run.
* ``bars`` — measures as grouped bars, a bar per run, the spread over seeds as error
  bars.

Register another with :func:`figure_kind`; the draw function gets an ``Axes``, the
:class:`FigureContext` and the checked arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from matplotlib.axes import Axes

from l4slab import plots
from l4slab.plots._style import key_info, styles
from l4slab.results import Results
from l4slab.studies.metrics import _lookup as summary_node

__all__ = ["FIGURES", "DeclContext", "FigureContext", "FigureKind", "figure_kind"]


@dataclass(frozen=True)
class DeclContext:
    """What a figure's arguments may refer to: run names and measures (with their runs)."""

    runs: Sequence[str]
    measures: Mapping[str, Sequence[str]]


class FigureContext(Protocol):
    """What a figure may draw from (given by the study runner)."""

    def label(self, run: str) -> str:
        """The run's label."""
        ...

    def results(self, run: str) -> Results:
        """The run's results (its first seed's bundle)."""
        ...

    def values(self, measure: str, run: str) -> tuple[float | None, list[float]]:
        """The measure's value for a run and its per-seed values."""
        ...

    def published(self, measure: str, run: str) -> float | str | None:
        """The published value of a measure for a run, if any."""
        ...

    def measure_text(self, measure: str) -> tuple[str, str]:
        """The measure's label and unit."""
        ...


@dataclass(frozen=True)
class FigureKind:
    """A registered figure kind."""

    name: str
    check: Callable[[Mapping[str, Any], DeclContext], dict[str, Any]]
    draw: Callable[[Axes, FigureContext, Mapping[str, Any]], None]
    doc: str
    example: str
    wide: bool = False


#: Every registered figure kind, by name.
FIGURES: dict[str, FigureKind] = {}


def figure_kind(
    name: str,
    *,
    check: Callable[[Mapping[str, Any], DeclContext], dict[str, Any]],
    doc: str,
    example: str,
    wide: bool = False,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a figure kind (a decorator on its draw function)."""

    def register(draw: Callable[..., None]) -> Callable[..., None]:
        if name in FIGURES:
            raise ValueError(f"figure kind {name!r} is registered twice")
        FIGURES[name] = FigureKind(name, check, draw, doc, example, wide)
        return draw

    return register


# --------------------------------------------------------------------------- argument checks


class _Args:
    """Small checks for figure arguments; each raises ValueError naming the argument."""

    def __init__(self, raw: Mapping[str, Any], valid: Sequence[str]):
        for name in raw:
            if name not in valid:
                raise ValueError(f"{name}: unknown argument; valid: {', '.join(valid)}")
        self.raw = raw

    def text(self, name: str, default: str | None = None) -> str:
        value = self.raw.get(name, default)
        if not isinstance(value, str):
            raise ValueError(f"{name}: expected a string, found {value!r}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ValueError(f"{name}: expected true or false, found {value!r}")
        return value

    def numbers(
        self, name: str, *, length: int | None = None, required: bool = True
    ) -> list[float] | None:
        if name not in self.raw:
            if required:
                raise ValueError(f"{name}: missing")
            return None
        value = self.raw[name]
        if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            raise ValueError(f"{name}: expected a list of numbers, found {value!r}")
        if length is not None and len(value) != length:
            raise ValueError(f"{name}: expected {length} numbers, found {len(value)}")
        return [float(v) for v in value]

    def runs(
        self, name: str, context: DeclContext, allowed: Sequence[str] | None = None
    ) -> list[str]:
        value = self.raw.get(name)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{name}: expected a list of run names, found {value!r}")
        pool = list(allowed if allowed is not None else context.runs)
        for run in value:
            if run not in pool:
                raise ValueError(f"{name}: no run {run!r} here; runs: {', '.join(pool)}")
        return list(value)

    def measure(self, name: str, context: DeclContext, *, required: bool = True) -> str | None:
        if name not in self.raw and not required:
            return None
        value = self.raw.get(name)
        if not isinstance(value, str) or value not in context.measures:
            known = ", ".join(context.measures)
            raise ValueError(f"{name}: {value!r} is not a measure; measures: {known}")
        return value


# --------------------------------------------------------------------------- measure_plot


def _check_measure_plot(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(
        raw,
        (
            "measure",
            "x",
            "series",
            "xlabel",
            "ylabel",
            "logx",
            "logy",
            "low",
            "high",
            "published",
            "span",
            "span_label",
        ),
    )
    measure = args.measure("measure", context)
    assert measure is not None
    x = args.numbers("x")
    assert x is not None
    series = raw.get("series")
    if not isinstance(series, dict) or not series:
        raise ValueError("series: expected a table label -> list of runs, e.g. { Cubic = [...] }")
    checked: dict[str, list[str]] = {}
    for label, runs in series.items():
        sub = _Args({"runs": runs}, ("runs",))
        names = sub.runs("runs", context, context.measures[measure])
        if len(names) != len(x):
            raise ValueError(f"series.{label}: {len(names)} runs for {len(x)} x values")
        checked[str(label)] = names
    out: dict[str, Any] = {
        "measure": measure,
        "x": x,
        "series": checked,
        "xlabel": args.text("xlabel", ""),
        "ylabel": args.text("ylabel", ""),
        "logx": args.flag("logx", False),
        "logy": args.flag("logy", False),
        "low": args.measure("low", context, required=False),
        "high": args.measure("high", context, required=False),
        "published": args.flag("published", True),
        "span": args.numbers("span", length=2, required=False),
        "span_label": args.text("span_label", "published range"),
    }
    return out


@figure_kind(
    "measure_plot",
    check=_check_measure_plot,
    doc="One measure against x, a line per series of runs; error bars show the spread over "
    "seeds (or the low/high measures); published numbers are hollow markers.",
    example='args = { measure = "time", x = [0, 1], series = { Cubic = ["cubic_0", "cubic_1"] } }',
)
def measure_plot(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    measure = args["measure"]
    label, unit = ctx.measure_text(measure)
    x = np.asarray(args["x"], dtype=float)
    if args["span"] is not None:
        low, high = args["span"]
        ax.axhspan(low, high, color="#999999", alpha=0.18, label=args["span_label"])
    for (name, runs), (color, _) in zip(args["series"].items(), styles(), strict=False):
        values = [ctx.values(measure, run) for run in runs]
        y = np.array([np.nan if v is None else v for v, _ in values], dtype=float)
        lo, hi = _spread(ctx, args, runs, values, y)
        err = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
        ax.errorbar(
            x,
            y,
            yerr=err,
            color=color,
            marker="o",
            markersize=5,
            capsize=3,
            linewidth=1.6,
            label=f"{name}, measured",
        )
        if args["published"]:
            published = [ctx.published(measure, run) for run in runs]
            px = [xi for xi, p in zip(x, published, strict=True) if isinstance(p, float)]
            py = [p for p in published if isinstance(p, float)]
            if px:
                ax.plot(
                    px,
                    py,
                    linestyle="--",
                    linewidth=1.0,
                    marker="s",
                    markersize=7,
                    markerfacecolor="none",
                    color=color,
                    label=f"{name}, published",
                )
    if args["logx"]:
        ax.set_xscale("log")
        ax.minorticks_off()
    ax.set_xticks(x, [f"{v:g}" for v in x])
    if args["logy"]:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(args["xlabel"] or "x")
    ax.set_ylabel(args["ylabel"] or (f"{label} ({unit})" if unit else label))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")


def _spread(
    ctx: FigureContext,
    args: Mapping[str, Any],
    runs: Sequence[str],
    values: Sequence[tuple[float | None, list[float]]],
    y: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    if args["low"] is not None and args["high"] is not None:
        lo = [ctx.values(args["low"], run)[0] for run in runs]
        hi = [ctx.values(args["high"], run)[0] for run in runs]
        return (
            np.array([np.nan if v is None else v for v in lo], dtype=float),
            np.array([np.nan if v is None else v for v in hi], dtype=float),
        )
    lo_s = np.array([min(seeds) if seeds else np.nan for _, seeds in values], dtype=float)
    hi_s = np.array([max(seeds) if seeds else np.nan for _, seeds in values], dtype=float)
    return np.where(np.isnan(lo_s), y, lo_s), np.where(np.isnan(hi_s), y, hi_s)


# --------------------------------------------------------------------------- time_sequence


def _check_time_sequence(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(raw, ("runs", "flow", "t_range"))
    runs = args.runs("runs", context)
    if len(runs) > 4:
        raise ValueError("runs: at most 4 panels")
    return {
        "runs": runs,
        "flow": args.text("flow"),
        "t_range": args.numbers("t_range", length=2, required=False),
    }


@figure_kind(
    "time_sequence",
    check=_check_time_sequence,
    doc="The time-sequence graph of one flow, a panel per run, side by side.",
    example='args = { runs = ["fifo", "codel"], flow = "video", t_range = [10, 14] }',
    wide=True,
)
def time_sequence(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    runs = args["runs"]
    t_range = tuple(args["t_range"]) if args["t_range"] is not None else None
    for panel, run in zip(_panels(ax, len(runs)), runs, strict=True):
        plots.time_sequence(ctx.results(run), args["flow"], ax=panel, t_range=t_range)
        panel.set_title(f"{ctx.label(run)}: {args['flow']}", fontsize="medium")
        legend = panel.get_legend()
        if legend is not None:
            legend.set(alpha=0.9)
            for text in legend.get_texts():
                text.set_fontsize("x-small")


def _panels(ax: Axes, count: int) -> list[Axes]:
    """Split ``ax`` into ``count`` panels side by side (``ax`` itself for one)."""
    if count == 1:
        return [ax]
    figure = ax.figure
    spec = ax.get_subplotspec()
    assert spec is not None
    grid = spec.subgridspec(1, count, wspace=0.08)
    ax.remove()
    return [figure.add_subplot(grid[0, i]) for i in range(count)]


# --------------------------------------------------------------------------- timeseries


def _check_timeseries(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(raw, ("runs", "series", "key", "t_range", "logy"))
    return {
        "runs": args.runs("runs", context),
        "series": args.text("series"),
        "key": args.text("key"),
        "t_range": args.numbers("t_range", length=2, required=False),
        "logy": args.flag("logy", False),
    }


@figure_kind(
    "timeseries",
    check=_check_timeseries,
    doc="One key of one series over time (series.parquet), a line per run.",
    example='args = { runs = ["fifo", "codel"], series = "queue/bottleneck.down", '
    'key = "backlog_pkts" }',
)
def timeseries(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    info = key_info(args["key"])
    for run, (color, style) in zip(args["runs"], styles(), strict=False):
        t, values = ctx.results(run).series(args["series"], args["key"])
        if args["t_range"] is not None:
            keep = (t >= args["t_range"][0]) & (t <= args["t_range"][1])
            t, values = t[keep], values[keep]
        ax.plot(
            t,
            values * info.scale,
            color=color,
            linestyle=style,
            linewidth=1.2,
            label=ctx.label(run),
        )
    if args["logy"]:
        ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(info.label)
    ax.set_title(f"{args['series']} — {info.name}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")


# --------------------------------------------------------------------------- percentile_cdf

#: The points of a summary.json distribution, as (key, cumulative fraction).
_CDF_POINTS = (
    ("min", 0.0),
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p999", 0.999),
    ("max", 1.0),
)


def _check_percentile_cdf(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(raw, ("runs", "path", "xlabel", "logx"))
    return {
        "runs": args.runs("runs", context),
        "path": args.text("path"),
        "xlabel": args.text("xlabel", args.text("path")),
        "logx": args.flag("logx", False),
    }


def percentile_points(summary: Mapping[str, Any], path: str) -> tuple[list[float], list[float]]:
    """The (value, fraction) points of the distribution at ``path`` in summary.json
    (an object with ``min``, ``p50``, ``p90``, ``p99``, ``p999``, ``max``; those it lacks
    or holds as null are left out). ``ValueError`` names a path that is not there."""
    node = summary_node(summary, path)
    if not isinstance(node, Mapping):
        raise ValueError(f"{path}: not a distribution (min, p50, ... max) but {node!r}")
    xs: list[float] = []
    ys: list[float] = []
    for key, frac in _CDF_POINTS:
        value = node.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            xs.append(float(value))
            ys.append(frac)
    return xs, ys


@figure_kind(
    "percentile_cdf",
    check=_check_percentile_cdf,
    doc="A distribution summary.json keeps as percentiles, as a CDF through min, p50, "
    "p90, p99, p99.9 and max (straight between them), a line per run (first seed).",
    example='args = { runs = ["fifo", "dualq"], path = "flows.game.rtt_ms", '
    'xlabel = "game RTT (ms)" }',
)
def percentile_cdf(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    for run, (color, style) in zip(args["runs"], styles(), strict=False):
        xs, ys = percentile_points(ctx.results(run).summary, args["path"])
        ax.plot(
            xs,
            ys,
            color=color,
            linestyle=style,
            marker="o",
            markersize=3,
            linewidth=1.2,
            label=ctx.label(run),
        )
    if args["logx"]:
        ax.set_xscale("log")
    ax.set_xlabel(args["xlabel"])
    ax.set_ylabel("fraction of samples at or below")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small")


# --------------------------------------------------------------------------- cdf


def _check_cdf(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(raw, ("runs", "series", "key", "after_s", "xlabel"))
    after = raw.get("after_s")
    if after is not None and (not isinstance(after, int | float) or isinstance(after, bool)):
        raise ValueError(f"after_s: expected a number of seconds, found {after!r}")
    return {
        "runs": args.runs("runs", context),
        "series": args.text("series"),
        "key": args.text("key"),
        "after_s": None if after is None else float(after),
        "xlabel": args.text("xlabel", ""),
    }


@figure_kind(
    "cdf",
    check=_check_cdf,
    doc="The distribution (empirical CDF) of one key of one series over the run's "
    "intervals, a line per run; after_s drops the intervals before that time.",
    example='args = { runs = ["legacy", "l4s"], series = "flow/call", key = "rtt_max_ms.down" }',
)
def cdf(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    info = key_info(args["key"])
    for run, (color, style) in zip(args["runs"], styles(), strict=False):
        t, values = ctx.results(run).series(args["series"], args["key"])
        if args["after_s"] is not None:
            values = values[t >= args["after_s"]]
        plots.cdf_line(ax, values * info.scale, ctx.label(run), color=color, linestyle=style)
    ax.set_xlabel(args["xlabel"] or info.label)
    ax.set_ylabel("fraction of intervals")
    ax.set_ylim(0.0, 1.02)
    ax.set_title(f"{args['series']} — {info.name}, CDF over intervals", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")


# --------------------------------------------------------------------------- bars


def _check_bars(raw: Mapping[str, Any], context: DeclContext) -> dict[str, Any]:
    args = _Args(raw, ("measures", "runs", "ylabel", "logy"))
    measures = raw.get("measures")
    if not isinstance(measures, list) or not measures:
        raise ValueError(f"measures: expected a list of measure names, found {measures!r}")
    for i, _ in enumerate(measures):
        _Args({"measure": measures[i]}, ("measure",)).measure("measure", context)
    runs = args.runs("runs", context)
    for m in measures:
        for run in runs:
            if run not in context.measures[m]:
                raise ValueError(f"runs: measure {m!r} is not taken for run {run!r}")
    return {
        "measures": list(measures),
        "runs": runs,
        "ylabel": args.text("ylabel", ""),
        "logy": args.flag("logy", False),
    }


@figure_kind(
    "bars",
    check=_check_bars,
    doc="Measures side by side as bars: a group per measure, a bar per run (the mean "
    "over seeds, the spread as an error bar); published numbers as hollow markers.",
    example='args = { measures = ["loss", "stall"], runs = ["legacy", "l4s"] }',
    wide=True,
)
def bars(ax: Axes, ctx: FigureContext, args: Mapping[str, Any]) -> None:
    measures, runs = args["measures"], args["runs"]
    width = 0.8 / len(runs)
    groups = np.arange(len(measures), dtype=float)
    for i, (run, (color, style)) in enumerate(zip(runs, styles(), strict=False)):
        x = groups - 0.4 + width * (i + 0.5)
        values = [ctx.values(m, run) for m in measures]
        y = np.array([np.nan if v is None else v for v, _ in values], dtype=float)
        lo = np.array([min(s) if s else np.nan for _, s in values], dtype=float)
        hi = np.array([max(s) if s else np.nan for _, s in values], dtype=float)
        err = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
        # Past the palette's colours the bars are hatched (its dashed lines).
        hatch = None if style == "-" else "///"
        ax.bar(
            x, np.nan_to_num(y), width, color=color, label=ctx.label(run), alpha=0.85, hatch=hatch
        )
        ax.errorbar(x, y, yerr=np.nan_to_num(err), fmt="none", ecolor="#333333", capsize=3)
        for xi, m in zip(x, measures, strict=True):
            p = ctx.published(m, run)
            if isinstance(p, float):
                ax.plot([xi], [p], marker="s", markersize=8, markerfacecolor="none", color=color)
    ax.set_xticks(groups, [_bar_label(ctx, m) for m in measures], fontsize="small")
    if args["logy"]:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(args["ylabel"] or "value")
    ax.grid(True, axis="y", alpha=0.3)
    # Below the axes, so no bar is hidden behind it.
    ax.legend(
        fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False
    )


def _bar_label(ctx: FigureContext, measure: str) -> str:
    label, unit = ctx.measure_text(measure)
    text = f"{label} ({unit})" if unit else label
    # Wrap long labels so neighbouring groups do not overlap.
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + len(w) > 28:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines)
