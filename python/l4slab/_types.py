"""Shapes of the data that crosses the boundary with the native module.

These describe what ``l4slab._native.run`` returns (see ``_native.pyi``). They
are plain ``TypedDict``s: the native module builds ordinary dicts and lists.
"""

from __future__ import annotations

from typing import Any, TypedDict


class SeriesColumns(TypedDict):
    """Long-format time series: four equal-length columns, one row per sample."""

    t_s: list[float]
    series: list[str]
    key: list[str]
    value: list[float]


class RunStats(TypedDict):
    """How the run went on this machine (not part of the deterministic results)."""

    wall_s: float
    events: int
    packets: int
    sim_s: float


class NativeResult(TypedDict):
    """What ``l4slab._native.run`` returns."""

    summary_json: str
    series: SeriesColumns
    packets: dict[str, list[Any]] | None
    stats: RunStats
