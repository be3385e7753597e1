"""Metric functions: measures that a path into summary.json cannot express.

A metric takes a run's :class:`~l4slab.results.Results` and its checked
arguments and returns a number, or ``None`` when the run has no such value
(e.g. a flow that never finished). study.toml names it::

    [measures.plateau]
    metric = "delivery_plateau_max_ms"
    args = { flow = "video" }

Register a new one in this module with :func:`metric` (the study runner's
worker processes import this module, so that is where the registry is
complete)::

    @metric("my_metric", args={"flow": Arg(str)}, doc="...")
    def my_metric(results, flow):
        ...

Everything here is a pure function of the bundle's files, so the same run
gives the same measures, byte for byte.
"""

from __future__ import annotations

import bisect
import fnmatch
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from l4slab.plots import flow_trace
from l4slab.results import Results
from l4slab.tables import flow_order

__all__ = [
    "METRICS",
    "Arg",
    "Metric",
    "MetricError",
    "delivery_advances",
    "metric",
    "summary_path",
]


class MetricError(ValueError):
    """A metric cannot be computed on this run (a missing flow, series or trace)."""


@dataclass(frozen=True)
class Arg:
    """An argument of a metric: its type, whether it is required, its default and choices."""

    type: type
    default: Any = None
    required: bool = True
    choices: tuple[Any, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Metric:
    """A registered metric function."""

    name: str
    function: Callable[..., float | None]
    args: Mapping[str, Arg]
    doc: str
    example: str = ""
    needs_packets: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def check_args(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments with defaults filled in; ``ValueError`` names a bad one."""
        out: dict[str, Any] = {}
        for name in raw:
            if name not in self.args:
                valid = ", ".join(self.args) or "none"
                raise ValueError(f"{name}: unknown argument of {self.name}; its arguments: {valid}")
        for name, arg in self.args.items():
            if name not in raw:
                if arg.required:
                    raise ValueError(f"{name}: missing argument of {self.name}")
                out[name] = arg.default
                continue
            value = raw[name]
            if arg.type is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, arg.type) or isinstance(value, bool) is not (arg.type is bool):
                raise ValueError(
                    f"{name}: expected {arg.type.__name__}, found {type(value).__name__} {value!r}"
                )
            if arg.choices and value not in arg.choices:
                choices = ", ".join(str(c) for c in arg.choices)
                raise ValueError(f"{name}: {value!r}; choose one of {choices}")
            out[name] = value
        return out

    def __call__(self, results: Results, args: Mapping[str, Any]) -> float | None:
        value = self.function(results, **args)
        return None if value is None else float(value)


#: Every registered metric, by name.
METRICS: dict[str, Metric] = {}


def metric(
    name: str,
    *,
    args: Mapping[str, Arg],
    doc: str,
    example: str = "",
    needs_packets: bool = False,
) -> Callable[[Callable[..., float | None]], Callable[..., float | None]]:
    """Register a metric function under ``name`` (a decorator)."""

    def register(function: Callable[..., float | None]) -> Callable[..., float | None]:
        if name in METRICS:
            raise ValueError(f"metric {name!r} is registered twice")
        METRICS[name] = Metric(name, function, dict(args), doc, example, needs_packets)
        return function

    return register


# --------------------------------------------------------------------------- paths


def summary_path(summary: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """The number at a dotted path in summary.json; ``None`` for a JSON null.

    ``KeyError`` names the part that is missing and the keys there are.
    """
    node: Any = summary
    for depth, part in enumerate(path):
        if not isinstance(node, Mapping) or part not in node:
            where = ".".join(path[:depth]) or "summary.json"
            keys = ", ".join(sorted(node)) if isinstance(node, Mapping) else "none (not a table)"
            raise KeyError(f"{'.'.join(path)}: no {part!r} in {where}; keys there: {keys}")
        node = node[part]
    if node is None:
        return None
    if isinstance(node, bool):
        return float(node)
    if not isinstance(node, int | float):
        raise KeyError(f"{'.'.join(path)}: not a number but {type(node).__name__}")
    return float(node)


# --------------------------------------------------------------------------- flows

_STATS: dict[str, Callable[[list[float]], float]] = {
    "mean": lambda v: math.fsum(v) / len(v),
    "median": statistics.median,
    "min": min,
    "max": max,
    "sum": math.fsum,
    "count": len,
}


@metric(
    "flow_stat",
    args={
        "flows": Arg(str, doc="flow names, a shell pattern: 'tiny*'"),
        "key": Arg(str, doc="a dotted path inside each flow's summary, e.g. completion_s"),
        "stat": Arg(str, "mean", required=False, choices=tuple(_STATS)),
    },
    doc="A statistic of one key over several flows of a run. A flow without a value "
    "(a null completion_s: it never finished) makes the result null, except for count.",
    example='args = { flows = "tiny*", key = "completion_s", stat = "median" }',
)
def flow_stat(results: Results, flows: str, key: str, stat: str) -> float | None:
    names = [name for name in flow_order(results.summary) if fnmatch.fnmatchcase(name, flows)]
    if not names:
        there = ", ".join(flow_order(results.summary))
        raise MetricError(f"no flow matches {flows!r}; flows: {there}")
    if stat == "count":
        return float(len(names))
    values = [summary_path(results.flow(name), tuple(key.split("."))) for name in names]
    if any(value is None for value in values):
        return None
    return float(_STATS[stat]([float(v) for v in values if v is not None]))


@metric(
    "object_stat",
    args={
        "flow": Arg(str, doc="the page's flow (app web)"),
        "key": Arg(str, "completion_s", required=False, doc="a key of each object's entry"),
        "stat": Arg(str, "mean", required=False, choices=tuple(_STATS)),
        "first": Arg(int, 0, required=False, doc="the first object: its position in `objects`"),
        "last": Arg(int, None, required=False, doc="the last object (default: the last one)"),
    },
    doc="A statistic of one key over a web page's objects `first` to `last` (their "
    "positions in the page's `objects` list, both included), from the page's "
    "app_metrics.objects, which also lists the objects fetched on connections of their "
    "own. An object without a value (a null completion_s: it never finished) makes the "
    "result null, except for count.",
    example='args = { flow = "page", first = 1, key = "completion_s", stat = "median" }',
)
def object_stat(
    results: Results, flow: str, key: str, stat: str, first: int, last: int | None
) -> float | None:
    try:
        page = results.flow(flow)
    except KeyError as exc:
        raise MetricError(str(exc.args[0])) from None
    objects = (page.get("app_metrics") or {}).get("objects")
    if not isinstance(objects, list):
        raise MetricError(f"flow {flow!r} has no app_metrics.objects (is it a web page?)")
    chosen = [o for o in objects if o["index"] >= first and (last is None or o["index"] <= last)]
    if not chosen:
        raise MetricError(
            f"flow {flow!r} has no object from {first} to {'the last' if last is None else last}; "
            f"its objects are 0 to {len(objects) - 1}"
        )
    if stat == "count":
        return float(len(chosen))
    values = [summary_path(o, tuple(key.split("."))) for o in chosen]
    if any(value is None for value in values):
        return None
    return float(_STATS[stat]([float(v) for v in values if v is not None]))


@metric(
    "path_equals",
    args={
        "path": Arg(str, doc="a dotted path in summary.json, e.g. flows.prague.ecn_validation"),
        "value": Arg(str, doc="the text it should hold, e.g. capable"),
    },
    doc="1 when the (text) value at a summary.json path equals `value`, else 0: turns a "
    "verdict such as a flow's ecn_validation into a number a claim can check.",
    example='args = { path = "flows.prague.ecn_validation", value = "capable" }',
)
def path_equals(results: Results, path: str, value: str) -> float:
    node = _lookup(results.summary, path)
    return 1.0 if isinstance(node, str) and node == value else 0.0


def _lookup(summary: Mapping[str, Any], path: str) -> Any:
    """The node at a dotted path in summary.json, whose names may hold dots."""
    node: Any = summary
    parts = path.split(".")
    i = 0
    while i < len(parts):
        # Names may hold dots (flow "bulk.0", queue "bottleneck.down"): take
        # the longest run of parts that is a key here.
        for j in range(len(parts), i, -1):
            key = ".".join(parts[i:j])
            if isinstance(node, Mapping) and key in node:
                node, i = node[key], j
                break
        else:
            where = ".".join(parts[:i]) or "summary.json"
            raise MetricError(f"{path}: no {parts[i]!r} in {where}")
    return node


def _number(summary: Mapping[str, Any], path: str) -> float | None:
    node = _lookup(summary, path)
    if node is None:
        return None
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise MetricError(f"{path}: not a number but {type(node).__name__}")
    return float(node)


@metric(
    "path_ratio",
    args={
        "num": Arg(str, doc="a dotted path in summary.json, e.g. flows.a.goodput_bps"),
        "den": Arg(str, doc="a dotted path in summary.json, e.g. flows.b.goodput_bps"),
    },
    doc="The number at `num` divided by the number at `den` (names with dots such as "
    "bottleneck.down are found); null when either is null or `den` is 0.",
    example='args = { num = "queues.bottleneck.down.marks.step", '
    'den = "queues.bottleneck.down.marks.total" }',
)
def path_ratio(results: Results, num: str, den: str) -> float | None:
    top, bottom = _number(results.summary, num), _number(results.summary, den)
    if top is None or bottom is None or bottom == 0:
        return None
    return top / bottom


@metric(
    "path_difference",
    args={
        "a": Arg(str, doc="a dotted path in summary.json, e.g. flows.game.rtt_ms.p99"),
        "b": Arg(str, doc="a dotted path in summary.json, e.g. flows.game.rtt_ms.p50"),
    },
    doc="The number at `a` less the number at `b` (a spread such as p99 - p50); "
    "null when either is null.",
    example='args = { a = "flows.game.rtt_ms.p99", b = "flows.game.rtt_ms.p50" }',
)
def path_difference(results: Results, a: str, b: str) -> float | None:
    first, second = _number(results.summary, a), _number(results.summary, b)
    if first is None or second is None:
        return None
    return first - second


# --------------------------------------------------------------------------- series


@metric(
    "series_stat",
    args={
        "series": Arg(str, doc="e.g. queue/bottleneck.down"),
        "key": Arg(str, doc="e.g. backlog_pkts"),
        "stat": Arg(str, "max", required=False, choices=("max", "min", "mean", "median")),
        "after_s": Arg(float, 0.0, required=False, doc="ignore samples before this time"),
    },
    doc="A statistic of one time series of series.parquet (sampled every sample_interval).",
    example='args = { series = "queue/bottleneck.down", key = "backlog_pkts", stat = "max" }',
)
def series_stat(results: Results, series: str, key: str, stat: str, after_s: float) -> float | None:
    values = _series_values(results, series, key, after_s)
    if not len(values):
        return None
    reduce: dict[str, Callable[[np.ndarray], Any]] = {
        "max": np.max,
        "min": np.min,
        "mean": np.mean,
        "median": np.median,
    }
    return float(reduce[stat](values))


def _series_values(results: Results, series: str, key: str, after_s: float) -> np.ndarray:
    """The finite values of one series key from ``after_s`` on."""
    try:
        t, values = results.series(series, key)
    except KeyError as exc:
        raise MetricError(str(exc.args[0]) if exc.args else str(exc)) from None
    finite: np.ndarray = values[(t >= after_s) & np.isfinite(values)]
    return finite


_COMPARE: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    ">=": lambda v, x: v >= x,
    ">": lambda v, x: v > x,
    "<=": lambda v, x: v <= x,
    "<": lambda v, x: v < x,
}


@metric(
    "series_fraction",
    args={
        "series": Arg(str, doc="e.g. flow/call"),
        "key": Arg(str, doc="e.g. frame_rate_fps.down"),
        "op": Arg(str, ">=", required=False, choices=tuple(_COMPARE)),
        "value": Arg(float, doc="the threshold"),
        "after_s": Arg(float, 0.0, required=False, doc="ignore samples before this time"),
    },
    doc="The fraction (0 to 1) of a series' samples that satisfy `op value`, e.g. the "
    "share of seconds a call received at least 25 fps.",
    example='args = { series = "flow/call", key = "frame_rate_fps.down", op = ">=", value = 25.0 }',
)
def series_fraction(
    results: Results, series: str, key: str, op: str, value: float, after_s: float
) -> float | None:
    values = _series_values(results, series, key, after_s)
    if not len(values):
        return None
    return float(np.count_nonzero(_COMPARE[op](values, value)) / len(values))


@metric(
    "series_mean_ratio",
    args={
        "num": Arg(str, doc="a series, e.g. flow/prague"),
        "den": Arg(str, doc="a series, e.g. flow/cubic"),
        "key": Arg(str, doc="the key of both, e.g. goodput_bps"),
        "after_s": Arg(float, 0.0, required=False, doc="ignore samples before this time"),
    },
    doc="The mean of one series key over the mean of another's from `after_s` on, e.g. "
    "two flows' goodput ratio after a warm-up; null when either has no samples or the "
    "second mean is 0.",
    example='args = { num = "flow/prague", den = "flow/cubic", key = "goodput_bps", '
    "after_s = 30.0 }",
)
def series_mean_ratio(
    results: Results, num: str, den: str, key: str, after_s: float
) -> float | None:
    top = _series_values(results, num, key, after_s)
    bottom = _series_values(results, den, key, after_s)
    if not len(top) or not len(bottom) or float(np.mean(bottom)) == 0.0:
        return None
    return float(np.mean(top) / np.mean(bottom))


# --------------------------------------------------------------------------- packet trace


def delivery_advances(results: Results, flow: str) -> tuple[np.ndarray, np.ndarray]:
    """When the receiver's in-order point advanced, and by how many bytes.

    Data segments arriving at the receiver (``deliver`` events of the data side,
    payload only) are reassembled in arrival order: an arrival that fills the
    next hole advances the in-order point past every segment held behind it;
    one beyond a hole is kept out of order; a duplicate changes nothing.
    Returns ``(t_s, bytes)``, one row per advance.
    """
    table = _packets(results)
    names = flow_order(results.summary)
    if flow not in names:
        raise MetricError(f"no flow {flow!r}; flows: {', '.join(names)}")
    index = names.index(flow)
    mask = pc.and_(
        pc.and_(pc.equal(table["flow"], index), pc.equal(_strings(table, "side"), "data")),
        pc.and_(pc.equal(_strings(table, "event"), "deliver"), pc.greater(table["len"], 0)),
    )
    rows = table.filter(mask)
    t = rows["t_s"].to_numpy()
    seq = rows["seq"].to_numpy().astype(np.int64)
    length = rows["len"].to_numpy().astype(np.int64)
    order = np.argsort(t, kind="stable")
    point = int(flow_trace(results, flow).base)
    holes: list[tuple[int, int]] = []  # out-of-order ranges [start, end), sorted, disjoint
    at: list[float] = []
    amount: list[int] = []
    for i in order.tolist():
        start, end = int(seq[i]), int(seq[i] + length[i])
        if end <= point:
            continue
        if start <= point:
            new = end
            while holes and holes[0][0] <= new:
                new = max(new, holes.pop(0)[1])
            at.append(float(t[i]))
            amount.append(new - point)
            point = new
            continue
        k = bisect.bisect_left(holes, (start, end))
        if k > 0 and holes[k - 1][1] >= start:  # joins the range before it
            k -= 1
            start, end = holes[k][0], max(end, holes[k][1])
            del holes[k]
        while k < len(holes) and holes[k][0] <= end:  # and any it reaches after it
            end = max(end, holes[k][1])
            del holes[k]
        holes.insert(k, (start, end))
    return np.array(at, dtype=np.float64), np.array(amount, dtype=np.int64)


@metric(
    "delivery_plateau_max_ms",
    args={"flow": Arg(str)},
    doc="The longest time the receiver's in-order point did not advance, between its first "
    "and last advance (ms): a plateau of the time-sequence graph at the receiver.",
    example='args = { flow = "video" }',
    needs_packets=True,
)
def delivery_plateau_max_ms(results: Results, flow: str) -> float | None:
    t, _ = delivery_advances(results, flow)
    if len(t) < 2:
        return None
    return float(np.max(np.diff(t)) * 1e3)


@metric(
    "delivery_burst_max_bytes",
    args={"flow": Arg(str)},
    doc="The largest single advance of the receiver's in-order point (bytes): the spike "
    "when a retransmission fills a hole and the data held behind it is released at once.",
    example='args = { flow = "video" }',
    needs_packets=True,
)
def delivery_burst_max_bytes(results: Results, flow: str) -> float | None:
    _, amount = delivery_advances(results, flow)
    return float(np.max(amount)) if len(amount) else None


_EPISODE_STATS = ("max", "median", "min", "count")


@metric(
    "loss_episodes",
    args={
        "flow": Arg(str),
        "stat": Arg(str, "max", required=False, choices=_EPISODE_STATS),
        "gap_rtts": Arg(float, 1.0, required=False, doc="episode gap, in RTTs"),
        "rtt": Arg(str, "p50", required=False, choices=("min", "p50", "mean")),
    },
    doc="Loss episodes of a flow: its data packets dropped in the network, grouped so that "
    "drops less than gap_rtts x the flow's RTT (rtt_ms.p50 by default: the RTT the flow "
    "actually had, queue included) apart are one episode. stat: the largest, median or "
    "smallest number of drops in an episode, or the number of episodes. 0 without drops.",
    example='args = { flow = "video", stat = "median" }',
    needs_packets=True,
)
def loss_episodes(
    results: Results, flow: str, stat: str, gap_rtts: float, rtt: str
) -> float | None:
    trace = flow_trace(results, flow)
    if not len(trace.drop_t):
        return 0.0
    rtt_ms = summary_path(results.flow(flow), ("rtt_ms", rtt))
    if rtt_ms is None:
        raise MetricError(f"flow {flow!r} has no RTT sample")
    times = np.sort(trace.drop_t)
    breaks = np.flatnonzero(np.diff(times) >= gap_rtts * rtt_ms / 1e3)
    sizes = np.diff(np.concatenate([[0], breaks + 1, [len(times)]]))
    if stat == "count":
        return float(len(sizes))
    reduce: dict[str, Callable[[np.ndarray], Any]] = {
        "max": np.max,
        "median": np.median,
        "min": np.min,
    }
    return float(reduce[stat](sizes))


def _packets(results: Results) -> pa.Table:
    table = results.packets
    if table is None:
        raise MetricError(
            "this metric needs the packet trace: set packet_trace = true in the scenario"
        )
    return table


def _strings(table: pa.Table, name: str) -> pa.ChunkedArray:
    column = table[name]
    if pa.types.is_dictionary(column.type):
        return column.cast(pa.string())
    return column
