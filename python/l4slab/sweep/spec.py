"""A sweep's declaration: the grid, the seeds, and the cells they make (docs/sweeps.md).

A grid is key paths, each with a list of values: ``--grid bottleneck.qdisc=dualpi2,fifo``
on the command line, or a scenario file's ``[sweep]`` table::

    [sweep]
    grid = { "bottleneck.qdisc" = ["dualpi2", "fifo"], "flows[0].cc" = ["prague", "cubic"] }
    seeds = 3

Every combination of values is a grid *point* (the first key outermost, as written),
and every point runs once per seed: a *cell*. A cell is the scenario with one
``--set KEY=VALUE`` per grid key, resolved by the simulator's parser, and a seed; its
identity (:attr:`Cell.key`) is the SHA-256 of the canonical JSON of the resolved
scenario, the seed and the l4slab version, so the same cell has the same key however
the grid that made it was written, and a finished cell is never run again.

Everything is checked here, before anything runs: each value alone, then every point.
A mistake is a :class:`SweepError` naming where the value came from (``--grid KEY`` or
``sweep.grid."KEY"[i]``) and the simulator's own message, with its key path and a
valid example.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from l4slab._types import SEED_MAX

__all__ = [
    "COLUMN_UNITS",
    "RESERVED_COLUMNS",
    "Cell",
    "GridKey",
    "GridValue",
    "Point",
    "Sweep",
    "SweepError",
    "cell_key",
    "parse_grid_option",
    "parse_seeds_option",
    "plan",
    "split_values",
    "sweep_table",
    "toml_value",
]

#: The unit of a parameter's number column, by what ``_native.quantity`` reads:
#: ``bottleneck.rate = "10Mbit"`` gives the column ``bottleneck.rate_bps`` = 1e7.
COLUMN_UNITS = {"s": "_s", "bps": "_bps", "bytes": "_bytes", "pkt": "_pkt", "fraction": "_fraction"}

#: Columns of cells.parquet that are not parameters or metrics (docs/sweeps.md).
RESERVED_COLUMNS = (
    "index",
    "point",
    "seed",
    "cell",
    "status",
    "error",
    "dir",
    "window_start_s",
    "window_end_s",
    "random_draws",
)

_GRID_EXAMPLE = "--grid bottleneck.qdisc=dualpi2,fq_codel,pie,fifo"


class SweepError(ValueError):
    """A sweep that cannot run as declared; the message names the key and an example."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class GridValue:
    """One value of a grid key: the override text, the value it stands for, a label."""

    #: What ``--set KEY=`` gets: TOML (``"dualpi2"``, ``7``, ``{ kind = "codel" }``) or
    #: plain text (``50Mbit``), read as ``--set`` reads it.
    text: str
    #: The value as read (str, int, float, bool, dict or list).
    value: Any
    #: How tables, legends and the string column show it: a string as it is, anything
    #: else as TOML.
    label: str


def _read_value(text: str) -> Any:
    """A ``--set`` value: TOML if it is one, else the text itself (as the parser reads it;
    crates/l4slab-scenario/src/overrides.rs)."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    if not isinstance(value, str | int | float | bool | list | dict):
        return text  # a date or time stays text
    return value


def toml_value(value: Any) -> str:
    """``value`` written as a TOML value (a ``--set`` value that reads back as ``value``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(f"not a TOML value: {value!r}")


def _toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key, ensure_ascii=False)


def _label(value: Any) -> str:
    return value if isinstance(value, str) else toml_value(value)


def split_values(text: str) -> list[str]:
    """Split ``v1,v2,...`` at the commas outside quotes, brackets and braces, so a value
    may be a TOML table or array: ``fifo,{ kind = "codel", ecn = true }``."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    escaped = False
    for char in text:
        if quote is not None:
            current.append(char)
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


# --------------------------------------------------------------------------- grid keys


@dataclass(frozen=True)
class GridKey:
    """A grid key path with its values, where it was declared, and its columns."""

    key: str
    values: tuple[GridValue, ...]
    #: Where it came from, for messages: ``--grid bottleneck.rate`` or
    #: ``sweep.grid."bottleneck.rate"``.
    origin: str
    #: When every value is a number with the same unit (``"10Mbit"``, ``"50Mbit"``):
    #: that unit (``"bps"``, ``"s"``, ``"bytes"``, ``"pkt"``, ``"fraction"``), and the
    #: values in it; ``""`` for plain numbers; ``None`` when the values are not numbers.
    unit: str | None = None
    numbers: tuple[float, ...] | None = None

    @property
    def column(self) -> str:
        """cells.parquet's column of the values as written (their labels, or the numbers
        themselves for plain numbers and booleans)."""
        return self.key

    @property
    def number_column(self) -> str | None:
        """The column of the values as numbers in their unit (``bottleneck.rate_bps``), or
        the key itself for plain numbers; ``None`` when the values are not numbers."""
        if self.unit is None:
            return None
        return self.key + COLUMN_UNITS[self.unit] if self.unit else self.key

    @property
    def kind(self) -> str:
        """The type of :attr:`column`: ``string``, ``int64``, ``float64`` or ``bool``."""
        values = [v.value for v in self.values]
        if all(isinstance(v, bool) for v in values):
            return "bool"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return "int64"
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            return "float64"
        return "string"

    def describe(self) -> dict[str, Any]:
        """This key for sweep.json."""
        return {
            "key": self.key,
            "values": [v.label for v in self.values],
            "column": self.column,
            "type": self.kind,
            "number_column": self.number_column,
            "unit": self.unit,
            "numbers": list(self.numbers) if self.numbers is not None else None,
        }


def _with_units(key: str, values: Sequence[GridValue], origin: str) -> GridKey:
    """The key with its unit when all its values are numbers of one unit."""
    from l4slab import _native

    raw = [v.value for v in values]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in raw):
        return GridKey(key, tuple(values), origin, "", tuple(float(v) for v in raw))
    if all(isinstance(v, str) for v in raw):
        read = [_native.quantity(v) for v in raw]
        units = {q[0] for q in read if q is not None}
        if None not in read and len(units) == 1:
            numbers = tuple(q[1] for q in read if q is not None)
            return GridKey(key, tuple(values), origin, units.pop(), numbers)
    return GridKey(key, tuple(values), origin)


def parse_grid_option(option: str) -> tuple[str, list[GridValue]]:
    """``--grid KEY=V1,V2,...`` -> the key and its values (read as ``--set`` reads them)."""
    key, sep, rest = option.partition("=")
    key = key.strip()
    if not sep or not key:
        raise SweepError(f"--grid {option}: expected KEY=V1,V2,...; write e.g. {_GRID_EXAMPLE}")
    texts = split_values(rest)
    if any(not text for text in texts):
        raise SweepError(
            f"--grid {option}: an empty value; separate values with commas, e.g. {_GRID_EXAMPLE}"
        )
    values = [GridValue(text, _read_value(text), _label(_read_value(text))) for text in texts]
    _check_distinct(values, f"--grid {key}")
    return key, values


def _check_distinct(values: Sequence[GridValue], origin: str) -> None:
    seen: set[str] = set()
    for value in values:
        canonical = toml_value(value.value)
        if canonical in seen:
            raise SweepError(f"{origin}: {value.label} is listed twice; list each value once")
        seen.add(canonical)


def sweep_table(text: str) -> dict[str, Any] | None:
    """The scenario's ``[sweep]`` table as written (``None`` without one). Its shape is
    checked by the simulator's parser (crates/l4slab-scenario/src/sweep.rs); the order of
    the grid's keys is the file's."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None  # the parser reports it, with line and column
    table = document.get("sweep")
    return table if isinstance(table, dict) else None


def _file_grid(table: Mapping[str, Any]) -> list[tuple[str, list[GridValue]]]:
    grid = table.get("grid") or {}
    keys = []
    for key, values in grid.items():
        listed = [GridValue(toml_value(v), v, _label(v)) for v in values]
        keys.append((key, listed))
    return keys


def _file_seeds(table: Mapping[str, Any]) -> list[int] | None:
    seeds = table.get("seeds")
    if seeds is None:
        return None
    if isinstance(seeds, int):
        return list(range(1, seeds + 1))
    return [int(s) for s in seeds]


def parse_seeds_option(option: str) -> list[int]:
    """``--seeds 3`` (seeds 1, 2, 3) or ``--seeds 1,7,42`` (those seeds)."""
    example = "write e.g. --seeds 3 (seeds 1, 2, 3) or --seeds 1,7,42"
    parts = [p.strip() for p in option.split(",")]
    try:
        numbers = [int(p) for p in parts if p]
    except ValueError:
        raise SweepError(f"--seeds {option}: not a number of seeds or a list; {example}") from None
    if not numbers:
        raise SweepError(f"--seeds {option}: no seeds; {example}")
    if "," not in option:
        if numbers[0] < 1:
            raise SweepError(f"--seeds {option}: give at least 1 seed; {example}")
        return list(range(1, numbers[0] + 1))
    for seed in numbers:
        if not 0 <= seed <= SEED_MAX:
            raise SweepError(
                f"--seeds {option}: {seed} is out of range; a seed is an integer from 0 to "
                f"2^63-1; {example}"
            )
    if len(set(numbers)) != len(numbers):
        raise SweepError(f"--seeds {option}: a seed is listed twice; {example}")
    return numbers


# --------------------------------------------------------------------------- cells


@dataclass(frozen=True)
class Point:
    """One combination of grid values (every seed of it is a cell)."""

    index: int
    #: ``(key, value)`` per grid key, in grid order.
    params: tuple[tuple[str, GridValue], ...]
    #: The overrides that make it: the sweep's ``--set`` ones, then one per grid key.
    overrides: tuple[str, ...]

    def label(self) -> str:
        """``bottleneck.qdisc=dualpi2 flows[0].cc=prague``."""
        return " ".join(f"{key}={value.label}" for key, value in self.params) or "(base)"


@dataclass(frozen=True)
class Cell:
    """A grid point with a seed: one simulation, named by its key."""

    index: int
    point: Point
    seed: int
    #: SHA-256 (hex) of the canonical JSON of the resolved scenario, seed and version.
    key: str

    @property
    def dir(self) -> str:
        """Its results bundle, relative to the sweep's directory."""
        return f"cells/{self.key}"

    def label(self) -> str:
        return f"{self.point.label()} seed={self.seed}"


def cell_key(resolved: Mapping[str, Any], seed: int, tool_version: str) -> str:
    """A cell's identity: SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8)
    of the resolved scenario with this seed, the seed and the l4slab version."""
    scenario = dict(resolved)
    scenario["seed"] = seed
    document = {"scenario": scenario, "seed": seed, "tool_version": tool_version}
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Sweep:
    """A sweep ready to run: the scenario, the grid, the seeds, the cells in grid order."""

    scenario: Path
    text: str = field(repr=False)
    #: The scenario file's absolute path: names the scenario (its stem is the default
    #: name) wherever a cell runs, and is recorded in each bundle's manifest.
    source: str
    name: str
    sets: tuple[str, ...]
    grid: tuple[GridKey, ...]
    seeds: tuple[int, ...]
    points: tuple[Point, ...] = field(repr=False)
    cells: tuple[Cell, ...] = field(repr=False)
    tool_version: str = ""
    allow_large: bool = False

    @property
    def unique_keys(self) -> list[str]:
        """The distinct cell keys, in grid order (two points may resolve alike)."""
        return list(dict.fromkeys(cell.key for cell in self.cells))

    def describe(self) -> dict[str, Any]:
        """The declaration for sweep.json: no path, time or host."""
        return {
            "scenario": self.name,
            "scenario_file": Path(self.source).name,
            "set": list(self.sets),
            "grid": [key.describe() for key in self.grid],
            "seeds": list(self.seeds),
            "points": len(self.points),
            "cells": len(self.cells),
        }


def plan(
    scenario: str | os.PathLike[str],
    *,
    grid: Iterable[str] = (),
    seeds: str | int | Sequence[int] | None = None,
    sets: Iterable[str] = (),
    allow_large: bool = False,
) -> Sweep:
    """Read a scenario and its grid, check every value and every point, and list the cells.

    ``grid``: ``KEY=V1,V2,...`` texts (``l4slab sweep --grid``); a key given here
    replaces the file's ``[sweep]`` values of that key, other keys are added after the
    file's. ``seeds``: a number of seeds (1..N), a list, or ``--seeds`` text; default the
    file's ``[sweep] seeds``, else the scenario's own seed. ``sets``: overrides applied to
    every cell before the grid's (``--set``). Raises :class:`SweepError` (or
    :class:`l4slab._read.ScenarioFileError` for an unreadable file).
    """
    from l4slab import _native, api
    from l4slab._read import read_scenario_file
    from l4slab.shipped import find_scenario

    path = find_scenario(Path(scenario))
    text = read_scenario_file(path)
    source = str(path.resolve())
    sets = tuple(sets)
    try:
        base = api.validate_text(text, source, list(sets), limits=None if allow_large else "sim")
    except _native.ScenarioError as exc:
        raise SweepError(str(exc)) from None
    table = sweep_table(text) or {}
    declared: dict[str, tuple[list[GridValue], str]] = {}
    for key, values in _file_grid(table):
        declared[key] = (values, f"sweep.grid.{_toml_key(key)}")
    for option in grid:
        key, values = parse_grid_option(option)
        declared[key] = (values, f"--grid {key}")
    keys = [_with_units(key, values, origin) for key, (values, origin) in declared.items()]
    for grid_key in keys:
        _check_key(grid_key)
    if isinstance(seeds, str):
        seed_list = parse_seeds_option(seeds)
    elif isinstance(seeds, int):
        seed_list = parse_seeds_option(str(seeds))
    elif seeds is not None:
        seed_list = parse_seeds_option(",".join(str(s) for s in seeds) + ",")
    else:
        seed_list = _file_seeds(table) or [int(base["seed"])]

    if not allow_large:
        _check_cells(keys, seed_list, "--seeds" if seeds is not None else "sweep.seeds")

    # Each value alone first: its error names the value, not a whole point.
    for grid_key in keys:
        for i, value in enumerate(grid_key.values):
            where = (
                f"{grid_key.origin}[{i}]"
                if grid_key.origin.startswith("sweep.")
                else f"{grid_key.origin}={value.text}"
            )
            _validate(text, source, [*sets, f"{grid_key.key}={value.text}"], where, allow_large)

    version = str(_native.__version__)
    points: list[Point] = []
    cells: list[Cell] = []
    combos = itertools.product(*(key.values for key in keys)) if keys else iter([()])
    for index, combo in enumerate(combos):
        params = tuple((key.key, value) for key, value in zip(keys, combo, strict=True))
        overrides = (*sets, *(f"{key}={value.text}" for key, value in params))
        point = Point(index, params, overrides)
        resolved = _validate(
            text, source, list(overrides), f"grid point {point.label()}", allow_large
        )
        points.append(point)
        for seed in seed_list:
            key = cell_key(resolved, seed, version)
            cells.append(Cell(len(cells), point, seed, key))
    return Sweep(
        scenario=path,
        text=text,
        source=source,
        name=str(base.get("name") or path.stem),
        sets=sets,
        grid=tuple(keys),
        seeds=tuple(seed_list),
        points=tuple(points),
        cells=tuple(cells),
        tool_version=version,
        allow_large=allow_large,
    )


#: The most cells a sweep may have without ``--allow-large`` (docs/sweeps.md, "How big"):
#: each is a run, a bundle on disk and a row of cells.parquet, and every grid point is
#: validated before the first cell runs.
MAX_CELLS = 10_000


def _check_cells(keys: Sequence[GridKey], seed_list: Sequence[int], seeds_origin: str) -> None:
    """Refuse a sweep of more than :data:`MAX_CELLS` cells, naming the grid key (or the
    seeds) with the most values and how many of them fit."""
    sizes = [len(key.values) for key in keys]
    cells = math.prod(sizes) * len(seed_list)
    if cells <= MAX_CELLS:
        return
    shape = " x ".join([*(str(n) for n in sizes), f"{len(seed_list)} seeds"])
    by_size = [(n, key.origin) for n, key in zip(sizes, keys, strict=True)]
    biggest, origin = max([*by_size, (len(seed_list), seeds_origin)], key=lambda t: t[0])
    fits = max(1, MAX_CELLS * biggest // cells)
    raise SweepError(
        f"{origin}: {cells:,} cells ({shape}) is past the limit of {MAX_CELLS:,} cells (each "
        f"is a run and a bundle on disk); lift the limit with --allow-large; write e.g. "
        f"{fits} of its {biggest} values"
    )


def _check_key(grid_key: GridKey) -> None:
    """Names that cannot be grid keys: the seed (``--seeds``), the sweep itself, and
    anything whose column would take a column cells.parquet already has."""
    first = grid_key.key.split(".")[0].split("[")[0]
    if first == "seed":
        raise SweepError(
            f"{grid_key.origin}: the seed is not a grid key; write e.g. --seeds 3, or "
            "seeds = 3 under [sweep]"
        )
    if first == "sweep":
        raise SweepError(f"{grid_key.origin}: a sweep cannot vary its own table")
    for column in (grid_key.column, grid_key.number_column):
        if column in RESERVED_COLUMNS or (column is not None and "/" in column):
            raise SweepError(
                f"{grid_key.origin}: {column!r} is a column cells.parquet has already; "
                f"a grid key is a key path of the scenario, e.g. {_GRID_EXAMPLE}"
            )


def _validate(
    text: str, source: str, overrides: list[str], where: str, allow_large: bool
) -> dict[str, Any]:
    from l4slab import _native, api

    try:
        return api.validate_text(text, source, overrides, limits=None if allow_large else "sim")
    except _native.ScenarioError as exc:
        message = str(exc)
        if message.startswith("--set "):  # the override is the grid value, named already
            message = message.partition(": ")[2]
        raise SweepError(f"{where}: {message}") from None
