"""cells.parquet: one row per cell (a grid point with a seed), in grid order.

Columns, in this order (docs/sweeps.md):

* ``index`` (the cell's position in grid order), ``point`` (its grid point), ``seed``;
* one column per grid key, named by the key path, with the values as written
  (``bottleneck.qdisc``: ``"dualpi2"``; numbers and booleans as such), and for values
  with a unit one more with the number in the base unit, the unit as its suffix:
  ``bottleneck.rate_bps`` (bit/s), ``bottleneck.delay_s`` (s), ``..._bytes``,
  ``..._pkt``, ``..._fraction`` (``"1%"`` is 0.01);
* ``cell`` (its key), ``status`` (``ok`` or ``failed``), ``error`` (the failure, one
  line; null when it ran), ``dir`` (its results bundle, relative to the sweep's
  directory; null when it failed);
* ``window_start_s``, ``window_end_s`` (the measurement window every windowed metric
  describes: the scenario's ``warmup`` to its end; docs/results.md), ``random_draws``;
* the metrics, per flow ``flow/<name>/<metric>`` and per queue
  ``queue/<name>/<metric>`` (a DualPI2 sub-queue: ``queue/<name>/<l|c>/<metric>``), the
  unit the suffix of the metric's name, as in summary.json. Windowed (the steady state
  after ``warmup``): ``goodput_bps``, ``rtt_ms_*``, ``sojourn_ms_*``, ``utilization``,
  ``drops``, ``marks``, ``sent_bytes``; whole run: ``bytes_delivered``,
  ``completion_s``, ``retransmits``, ``lost_packets``, ``ce_marks_received``. A cell
  that does not have a flow or queue (or failed) has nulls there.

The file is a pure function of the sweep and its cells' summary.json files, written
with the fixed settings of every l4slab Parquet file: the same sweep gives the same
bytes, whichever machines ran it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._parquet import _PARQUET_OPTIONS
from l4slab.sweep.spec import Cell, Sweep

__all__ = ["FLOW_METRICS", "QUEUE_METRICS", "CellRecord", "cells_table", "parquet_bytes"]

#: Per flow: (column suffix, path in the flow's summary, type).
FLOW_METRICS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("cc", ("cc",), "string"),
    ("goodput_bps", ("goodput_bps",), "float64"),
    ("bytes_delivered", ("bytes_delivered",), "int64"),
    ("completion_s", ("completion_s",), "float64"),
    ("rtt_ms_min", ("rtt_ms", "min"), "float64"),
    ("rtt_ms_mean", ("rtt_ms", "mean"), "float64"),
    ("rtt_ms_p50", ("rtt_ms", "p50"), "float64"),
    ("rtt_ms_p90", ("rtt_ms", "p90"), "float64"),
    ("rtt_ms_p99", ("rtt_ms", "p99"), "float64"),
    ("rtt_ms_max", ("rtt_ms", "max"), "float64"),
    ("retransmits", ("retransmits",), "int64"),
    ("lost_packets", ("lost_packets",), "int64"),
    ("ce_marks_received", ("ce_marks_received",), "int64"),
    ("ecn", ("ecn",), "string"),
)

_SOJOURN = (
    ("sojourn_ms_mean", ("sojourn_ms", "mean"), "float64"),
    ("sojourn_ms_p50", ("sojourn_ms", "p50"), "float64"),
    ("sojourn_ms_p90", ("sojourn_ms", "p90"), "float64"),
    ("sojourn_ms_p99", ("sojourn_ms", "p99"), "float64"),
    ("sojourn_ms_max", ("sojourn_ms", "max"), "float64"),
)

#: Per queue: (column suffix, path in the queue's summary, type).
QUEUE_METRICS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("kind", ("kind",), "string"),
    *_SOJOURN,
    ("utilization", ("utilization",), "float64"),
    ("drops", ("drops", "total"), "int64"),
    ("marks", ("marks", "total"), "int64"),
    ("sent_bytes", ("sent_bytes",), "int64"),
)

_TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}


class CellRecord:
    """A cell's state for the dataset: its summary (when it ran) or its error.

    ``same_as``: the cell whose run this one's results are (its grid point's first seed,
    which drew no random number, so every seed gives its results); ``None`` for a cell
    that ran itself.
    """

    def __init__(
        self,
        summary: Mapping[str, Any] | None = None,
        error: str | None = None,
        same_as: Cell | None = None,
    ):
        self.summary = summary
        self.error = error
        self.same_as = same_as

    @classmethod
    def from_summary_text(cls, text: str) -> CellRecord:
        return cls(json.loads(text))


def _get(document: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(document, Mapping):
            return None
        document = document.get(part)
    return document


def _metrics(summary: Mapping[str, Any]) -> dict[tuple[Any, ...], tuple[Any, str]]:
    """The metric values of one cell: (group, owner, part, metric index) -> (value, type)."""
    out: dict[tuple[Any, ...], tuple[Any, str]] = {}
    for name, flow in (summary.get("flows") or {}).items():
        for i, (_, path, kind) in enumerate(FLOW_METRICS):
            out[("flow", name, "", i)] = (_get(flow, path), kind)
    for name, queue in (summary.get("queues") or {}).items():
        for i, (_, path, kind) in enumerate(QUEUE_METRICS):
            out[("queue", name, "", i)] = (_get(queue, path), kind)
        for sub, part in (queue.get("subqueues") or {}).items():
            for i, (_, path, kind) in enumerate(_SOJOURN):
                out[("queue", name, sub, i)] = (_get(part, path), kind)
    return out


def _metric_column(slot: tuple[Any, ...]) -> str:
    group, owner, part, i = slot
    if group == "flow":
        return f"flow/{owner}/{FLOW_METRICS[i][0]}"
    if part:
        return f"queue/{owner}/{part}/{_SOJOURN[i][0]}"
    return f"queue/{owner}/{QUEUE_METRICS[i][0]}"


def _param_columns(sweep: Sweep) -> list[tuple[str, str, list[Any]]]:
    """(column, type, value per cell) for the grid keys."""
    columns = []
    for i, grid_key in enumerate(sweep.grid):
        values: list[Any] = []
        numbers: list[Any] = []
        for cell in sweep.cells:
            value = cell.point.params[i][1]
            values.append(value.value if grid_key.kind != "string" else value.label)
            if grid_key.numbers is not None:
                numbers.append(grid_key.numbers[grid_key.values.index(value)])
        columns.append((grid_key.column, grid_key.kind, values))
        number_column = grid_key.number_column
        if number_column is not None and number_column != grid_key.column:
            columns.append((number_column, "float64", numbers))
    return columns


def cells_table(sweep: Sweep, records: Mapping[str, CellRecord]) -> pa.Table:
    """The dataset of a sweep whose every cell has a record (by cell key)."""
    cells: Sequence[Cell] = sweep.cells
    columns: dict[str, tuple[str, list[Any]]] = {
        "index": ("int64", [c.index for c in cells]),
        "point": ("int64", [c.point.index for c in cells]),
        "seed": ("int64", [c.seed for c in cells]),
    }
    for column, kind, values in _param_columns(sweep):
        columns[column] = (kind, values)
    status, errors, dirs, starts, ends, draws, ran_seeds = [], [], [], [], [], [], []
    per_cell: list[dict[tuple[Any, ...], tuple[Any, str]]] = []
    for cell in cells:
        record = records[cell.key]
        summary = record.summary
        ok = summary is not None
        status.append("ok" if ok else "failed")
        errors.append(None if ok else record.error)
        ran_as = record.same_as or cell
        dirs.append(ran_as.dir if ok else None)
        ran_seeds.append(ran_as.seed if ok else None)
        window = _get(summary, ("window_s",)) if ok else None
        starts.append(float(window[0]) if window else None)
        ends.append(float(window[1]) if window else None)
        draws.append(_get(summary, ("random_draws",)) if ok else None)
        per_cell.append(_metrics(summary) if summary is not None else {})
    columns["cell"] = ("string", [c.key for c in cells])
    columns["status"] = ("string", status)
    columns["error"] = ("string", errors)
    columns["dir"] = ("string", dirs)
    columns["ran_seed"] = ("int64", ran_seeds)
    columns["window_start_s"] = ("float64", starts)
    columns["window_end_s"] = ("float64", ends)
    columns["random_draws"] = ("int64", draws)
    # Metric columns: flows, then queues (each followed by its sub-queues), each in the
    # order it first appears cell by cell in grid order; a metric's columns in the
    # order of FLOW_METRICS / QUEUE_METRICS.
    kinds: dict[tuple[Any, ...], str] = {}
    owners: dict[tuple[str, str], int] = {}
    parts: dict[str, int] = {"": 0}
    for metrics in per_cell:
        for slot, (_, kind) in metrics.items():
            kinds.setdefault(slot, kind)
            owners.setdefault((slot[0], slot[1]), len(owners))
            parts.setdefault(slot[2], len(parts))

    def order(slot: tuple[Any, ...]) -> tuple[int, int, int, int]:
        return (slot[0] != "flow", owners[(slot[0], slot[1])], parts[slot[2]], slot[3])

    for slot in sorted(kinds, key=order):
        kind = kinds[slot]
        columns[_metric_column(slot)] = (kind, [m.get(slot, (None, kind))[0] for m in per_cell])
    fields = [pa.field(name, _TYPES[kind]) for name, (kind, _) in columns.items()]
    arrays = [
        pa.array([_cast(v, kind) for v in values], type=_TYPES[kind])
        for kind, values in columns.values()
    ]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _cast(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "float64":
        return float(value)
    if kind == "int64":
        return int(value)
    if kind == "string":
        return str(value)
    return value


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as Parquet, with the fixed settings of every l4slab Parquet file."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **_PARQUET_OPTIONS)
    return buffer.getvalue()
