"""A finished sweep read back: cells.parquet with its grid (from sweep.json).

No pandas needed: :attr:`SweepData.table` is a pyarrow Table, columns come out as
Python lists or numpy arrays. ``table.to_pandas()`` or ``polars.read_parquet`` work
too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._types import KeyInfo

__all__ = ["MetricInfo", "Param", "SweepData", "load", "metric_info"]


#: How a metric is shown: a name, its unit, and the scale from the column's unit.
MetricInfo = KeyInfo


#: How a parameter's unit is shown on an axis: (unit, scale from the base unit).
_UNIT_SHOWN = {
    "bps": ("Mbit/s", 1e-6),
    "s": ("ms", 1e3),
    "bytes": ("kB", 1e-3),
    "pkt": ("packets", 1.0),
    "fraction": ("%", 100.0),
    "": ("", 1.0),
}


@dataclass(frozen=True)
class Param:
    """A grid key of the sweep, and how its values are shown."""

    key: str
    column: str
    number_column: str | None
    unit: str | None
    labels: tuple[str, ...]
    numbers: tuple[float, ...] | None

    @property
    def numeric(self) -> bool:
        """Whether its values are numbers (an axis can be scaled by them)."""
        return self.numbers is not None

    @property
    def axis_label(self) -> str:
        """``bottleneck.rate (Mbit/s)``."""
        unit = _UNIT_SHOWN[self.unit or ""][0] if self.unit is not None else ""
        return f"{self.key} ({unit})" if unit else self.key

    def shown(self, number: float) -> float:
        """A number of this parameter in the unit it is shown in."""
        return number * _UNIT_SHOWN[self.unit or ""][1] if self.unit is not None else number


def metric_info(column: str) -> MetricInfo:
    """Name, unit and scale of a metric column: ``flow/download/rtt_ms_p99`` ->
    ``download: RTT p99`` in ms."""
    parts = column.split("/")
    metric = parts[-1]
    if parts[0] == "flow" and len(parts) == 3:
        owner = f"{parts[1]}: "
    elif parts[0] == "queue" and len(parts) == 4:
        owner = f"{parts[1]} {parts[2].upper()} queue: "
    elif parts[0] == "queue" and len(parts) == 3:
        owner = f"{parts[1]}: "
    else:
        owner = ""
    for prefix, name, unit, scale in (
        ("rtt_ms_", "RTT", "ms", 1.0),
        ("sojourn_ms_", "queue delay", "ms", 1.0),
    ):
        if metric.startswith(prefix):
            return MetricInfo(f"{owner}{name} {metric.removeprefix(prefix)}", unit, scale)
    known = {
        "goodput_bps": MetricInfo("goodput", "Mbit/s", 1e-6),
        "bytes_delivered": MetricInfo("bytes delivered", "MB", 1e-6),
        "completion_s": MetricInfo("completion time", "s"),
        "retransmits": MetricInfo("retransmitted segments", ""),
        "lost_packets": MetricInfo("packets lost", ""),
        "ce_marks_received": MetricInfo("CE marks received", "packets"),
        "utilization": MetricInfo("utilization", "%", 100.0),
        "drops": MetricInfo("drops", "packets"),
        "marks": MetricInfo("CE marks", "packets"),
        "sent_bytes": MetricInfo("bytes sent", "MB", 1e-6),
    }
    info = known.get(metric, MetricInfo(metric.replace("_", " "), ""))
    return MetricInfo(owner + info.name, info.unit, info.scale)


class SweepData:
    """cells.parquet and the grid it was made from."""

    def __init__(self, table: pa.Table, info: Mapping[str, Any], path: Path | None = None):
        self.table = table
        self.info = dict(info)
        self.path = path
        self.params = tuple(
            Param(
                key=g["key"],
                column=g["column"],
                number_column=g.get("number_column"),
                unit=g.get("unit"),
                labels=tuple(g["values"]),
                numbers=tuple(g["numbers"]) if g.get("numbers") is not None else None,
            )
            for g in info.get("grid", [])
        )
        self.metrics = tuple(c for c in table.column_names if c.startswith(("flow/", "queue/")))
        self._columns: dict[str, list[Any]] = {}

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SweepData:
        """Read a sweep's directory (``FileNotFoundError`` when it holds no finished sweep)."""
        from l4slab.sweep.runner import CELLS_PARQUET, SWEEP_JSON

        root = Path(path)
        if not (root / CELLS_PARQUET).is_file() or not (root / SWEEP_JSON).is_file():
            raise FileNotFoundError(
                f"{root}: no finished sweep here (no {CELLS_PARQUET} and {SWEEP_JSON}); "
                "l4slab sweep writes them when every cell has run"
            )
        info = json.loads((root / SWEEP_JSON).read_text(encoding="utf-8"))
        return cls(pq.read_table(root / CELLS_PARQUET), info, root)

    # ---- lookups

    def param(self, key: str) -> Param:
        """A grid key by its key path (``KeyError`` listing them)."""
        for param in self.params:
            if param.key == key:
                return param
        known = ", ".join(p.key for p in self.params) or "none"
        raise KeyError(f"{key!r} is not a grid key of this sweep; grid keys: {known}")

    def check_metric(self, metric: str) -> str:
        """``metric`` if it is a metric column, else ``KeyError`` naming some that are."""
        if metric in self.metrics:
            return metric
        tail = metric.rsplit("/", 1)[-1]
        close = [m for m in self.metrics if m.endswith("/" + tail)] or list(self.metrics[:8])
        raise KeyError(
            f"{metric!r} is not a metric column of this sweep; e.g. {', '.join(close[:8])}"
        )

    def column(self, name: str) -> list[Any]:
        """A column as a Python list (cached)."""
        if name not in self._columns:
            self._columns[name] = self.table.column(name).to_pylist()
        return self._columns[name]

    def varying(self) -> list[Param]:
        """The grid keys with more than one value."""
        return [p for p in self.params if len(p.labels) > 1]

    def rows(self, where: Mapping[str, Any] | None = None) -> np.ndarray:
        """Indices of the cells that ran and whose parameters match ``where`` (grid key ->
        a value as written, e.g. ``{"bottleneck.qdisc": "dualpi2", "bottleneck.rate":
        "10Mbit"}``; a number matches the value in its base unit too)."""
        ok = np.array([s == "ok" for s in self.column("status")], dtype=bool)
        for key, wanted in (where or {}).items():
            param = self.param(key)
            labels = self.column(param.column)
            match = np.array([_same(label, wanted) for label in labels], dtype=bool)
            if param.number_column is not None and param.number_column != param.column:
                numbers = self.column(param.number_column)
                match |= np.array([_same(n, wanted) for n in numbers], dtype=bool)
            if not match.any():
                raise KeyError(
                    f"{key} has no value {wanted!r} in this sweep; its values: "
                    + ", ".join(param.labels)
                )
            ok &= match
        return np.flatnonzero(ok)

    def label_of(self, param: Param, row: int) -> str:
        """How row ``row`` shows ``param``'s value."""
        value = self.column(param.column)[row]
        return value if isinstance(value, str) else _shown_value(value)

    def values(self, metric: str, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The metric at ``rows``, as float64 (NaN where it has no value)."""
        column = self.column(self.check_metric(metric))
        return np.array(
            [np.nan if column[i] is None else float(column[i]) for i in rows], dtype=np.float64
        )


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, str) or isinstance(wanted, str):
        return str(value) == str(wanted) or _shown_value(value) == str(wanted)
    try:
        return bool(np.isclose(float(value), float(wanted), rtol=1e-12, atol=0.0))
    except (TypeError, ValueError):
        return False


def _shown_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load(path: str | os.PathLike[str]) -> SweepData:
    """Read a finished sweep's directory (cells.parquet and sweep.json)."""
    return SweepData.load(path)
