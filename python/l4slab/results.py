"""Results bundles: write them atomically and byte-for-byte reproducibly, read them back.

A bundle is a directory (see docs/results.md)::

    DIR/summary.json      the native summary, verbatim (sorted keys) + a trailing newline
    DIR/series.parquet    long-format time series: t_s, series, key, value
    DIR/packets.parquet   per-packet trace (only when the scenario sets packet_trace = true)
    DIR/run.json          how this run went on this machine: wall time, events, host, command

Everything but ``run.json`` is a pure function of (scenario, seed, l4slab version,
pyarrow version): two runs with the same seed give byte-identical files.

A bundle is written into a hidden temporary directory beside the target and
renamed into place only when every file is complete, so an error or Ctrl-C never
leaves a half-written bundle; an existing bundle at the target is replaced only
after the new one is complete.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._types import NativeResult, RunStats, SeriesColumns

__all__ = [
    "BUNDLE_FILES",
    "PACKETS_FILE",
    "REPORT_FILES",
    "ROW_GROUP_SIZE",
    "RUN_FILE",
    "RUN_FORMAT_VERSION",
    "SERIES_FILE",
    "SERIES_SCHEMA",
    "SUMMARY_FILE",
    "Results",
    "check_output_dir",
    "load",
    "make_run_info",
    "packets_table",
    "series_table",
    "write_bundle",
]

SUMMARY_FILE = "summary.json"
SERIES_FILE = "series.parquet"
PACKETS_FILE = "packets.parquet"
RUN_FILE = "run.json"
#: Every file a bundle may hold; a directory holding anything else is not a bundle.
BUNDLE_FILES = (SUMMARY_FILE, SERIES_FILE, PACKETS_FILE, RUN_FILE)
#: What ``l4slab report`` adds to a bundle (see l4slab.report); replaced with the bundle.
REPORT_FILES = ("report.html", "figures")

#: Version of the run.json layout (summary.json carries its own format_version).
RUN_FORMAT_VERSION = 1

_DICT_STRING = pa.dictionary(pa.int32(), pa.string())

#: Schema of series.parquet. series/key repeat a few names many times, hence dictionaries.
SERIES_SCHEMA = pa.schema(
    [
        pa.field("t_s", pa.float64(), nullable=False),
        pa.field("series", _DICT_STRING, nullable=False),
        pa.field("key", _DICT_STRING, nullable=False),
        pa.field("value", pa.float64(), nullable=False),
    ]
)

#: Rows per Parquet row group. Fixed so that the file layout depends only on the data.
ROW_GROUP_SIZE = 1 << 16

# Every option that shapes the bytes is pinned here; none of them embeds a clock.
_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "row_group_size": ROW_GROUP_SIZE,
    "version": "2.6",
    "data_page_version": "1.0",
    "use_dictionary": True,
    "write_statistics": True,
    "store_schema": True,
}


# --------------------------------------------------------------------------- tables


def series_table(columns: SeriesColumns | Mapping[str, Any]) -> pa.Table:
    """Build the series table (``SERIES_SCHEMA``) from the native long-format columns."""
    names = [field.name for field in SERIES_SCHEMA]
    missing = [name for name in names if name not in columns]
    if missing:
        raise ValueError(f"series columns missing: {', '.join(missing)}")
    cols: Mapping[str, Any] = columns
    _check_equal_lengths({name: cols[name] for name in names}, what="series")
    arrays = [
        pa.array(cols["t_s"], type=pa.float64()),
        pa.array(cols["series"], type=pa.string()).dictionary_encode(),
        pa.array(cols["key"], type=pa.string()).dictionary_encode(),
        pa.array(cols["value"], type=pa.float64()),
    ]
    return pa.Table.from_arrays(arrays, schema=SERIES_SCHEMA)


def packets_table(columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """Build the per-packet trace table; string columns are dictionary-encoded."""
    _check_equal_lengths(columns, what="packets")
    arrays: dict[str, pa.Array] = {}
    for name, values in columns.items():
        array = pa.array(values)
        if pa.types.is_string(array.type):
            array = array.dictionary_encode()
        arrays[name] = array
    return pa.table(arrays)


def _check_equal_lengths(columns: Mapping[str, Sequence[Any]], *, what: str) -> None:
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"{what} columns have different lengths: {detail}")


def _write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, **_PARQUET_OPTIONS)


# --------------------------------------------------------------------------- Results


class Results:
    """The results of one run: the summary, the time series and (optionally) packets.

    Get one from :func:`l4slab.run` or :func:`load`. Nothing here needs pandas:
    :meth:`series` returns numpy arrays, :attr:`series_table` is a pyarrow Table.
    """

    def __init__(
        self,
        summary_text: str,
        series: pa.Table,
        *,
        run_info: Mapping[str, Any] | None = None,
        packets: pa.Table | None = None,
        path: Path | None = None,
    ) -> None:
        self._summary_text = summary_text.rstrip("\n")
        self._summary: dict[str, Any] = json.loads(self._summary_text)
        if not isinstance(self._summary, dict):
            raise ValueError("summary.json must hold a JSON object")
        self._series = series
        self._run_info: dict[str, Any] = dict(run_info or {})
        self._packets = packets
        self._packets_file: Path | None = None
        self._path = path
        self._index: dict[tuple[str, str], np.ndarray] | None = None

    # ---- construction

    @classmethod
    def from_native(cls, result: NativeResult, *, command: Sequence[str] | None = None) -> Results:
        """Wrap what ``l4slab._native.run`` returned (nothing is written)."""
        summary_text = result["summary_json"]
        summary = json.loads(summary_text)
        packets = result.get("packets")
        return cls(
            summary_text,
            series_table(result["series"]),
            run_info=make_run_info(result["stats"], summary, command),
            packets=packets_table(packets) if packets is not None else None,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Results:
        """Read a bundle written by ``l4slab run`` (or :meth:`save`)."""
        root = Path(path)
        summary_file = root / SUMMARY_FILE
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such results directory")
        if not summary_file.is_file():
            raise FileNotFoundError(
                f"{root} is not an l4slab results directory (no {SUMMARY_FILE})"
            )
        series = pq.read_table(root / SERIES_FILE)
        run_file = root / RUN_FILE
        run_info = json.loads(run_file.read_text(encoding="utf-8")) if run_file.is_file() else {}
        results = cls(
            summary_file.read_text(encoding="utf-8"), series, run_info=run_info, path=root
        )
        if (root / PACKETS_FILE).is_file():
            results._packets_file = root / PACKETS_FILE
        return results

    # ---- writing

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write this result as a bundle at ``out_dir``, atomically; returns the path.

        Replaces an existing bundle there, but refuses to replace a directory
        that is not a bundle (see :func:`check_output_dir`).
        """
        target = Path(out_dir)
        check_output_dir(target)
        packets = self.packets
        with _staging_dir(target) as tmp:
            (tmp / SUMMARY_FILE).write_bytes((self._summary_text + "\n").encode("utf-8"))
            _write_parquet(self._series, tmp / SERIES_FILE)
            if packets is not None:
                _write_parquet(packets, tmp / PACKETS_FILE)
            run_text = json.dumps(self._run_info, indent=2, sort_keys=True) + "\n"
            (tmp / RUN_FILE).write_bytes(run_text.encode("utf-8"))
        self._path = target
        return target

    # ---- summary

    @property
    def path(self) -> Path | None:
        """Where the bundle lives on disk, or ``None`` if it was never saved."""
        return self._path

    @property
    def summary(self) -> dict[str, Any]:
        """summary.json as a dict (keys as documented in docs/results.md)."""
        return self._summary

    @property
    def summary_text(self) -> str:
        """summary.json exactly as the simulator produced it (no trailing newline)."""
        return self._summary_text

    @property
    def scenario(self) -> dict[str, Any]:
        """The resolved scenario the run used."""
        scenario: dict[str, Any] = self._summary.get("scenario", {})
        return scenario

    @property
    def name(self) -> str:
        """The scenario name."""
        return str(self.scenario.get("name", ""))

    @property
    def seed(self) -> int | None:
        """The root seed of the run."""
        seed = self._summary.get("seed")
        return int(seed) if seed is not None else None

    @property
    def tool_version(self) -> str | None:
        """The l4slab version that produced the results."""
        version = self._summary.get("tool_version")
        return str(version) if version is not None else None

    @property
    def run_info(self) -> dict[str, Any]:
        """run.json as a dict: wall time, events, host and command (machine-dependent)."""
        return self._run_info

    @property
    def stats(self) -> dict[str, Any]:
        """Run statistics: wall_s, sim_s, events, packets, sim_wall_ratio."""
        stats: dict[str, Any] = self._run_info.get("stats", {})
        return stats

    def flows(self) -> dict[str, dict[str, Any]]:
        """Per-flow metrics by flow name (goodput_bps, rtt_ms, retransmits, ...)."""
        flows: dict[str, dict[str, Any]] = self._summary.get("flows", {})
        return flows

    def flow(self, name: str) -> dict[str, Any]:
        """Metrics of one flow; ``KeyError`` names the flows there are."""
        return _lookup(self.flows(), name, "flow")

    def queues(self) -> dict[str, dict[str, Any]]:
        """Per-queue metrics by queue name (sojourn_ms, drops, marks, utilization, ...)."""
        queues: dict[str, dict[str, Any]] = self._summary.get("queues", {})
        return queues

    def queue(self, name: str) -> dict[str, Any]:
        """Metrics of one queue; ``KeyError`` names the queues there are."""
        return _lookup(self.queues(), name, "queue")

    # ---- series

    @property
    def series_table(self) -> pa.Table:
        """series.parquet as a pyarrow Table (columns t_s, series, key, value)."""
        return self._series

    def series_names(self) -> list[str]:
        """The names in the ``series`` column, sorted (e.g. ``flow/download``)."""
        return sorted({series for series, _ in self._series_index()})

    def series_keys(self, series: str) -> list[str]:
        """The keys recorded for one series, sorted (e.g. ``cwnd_bytes``, ``goodput_bps``)."""
        keys = sorted(key for name, key in self._series_index() if name == series)
        if not keys:
            raise KeyError(_unknown(series, "series", self.series_names()))
        return keys

    def series(self, series: str, key: str) -> tuple[np.ndarray, np.ndarray]:
        """One time series as ``(t_s, value)`` float64 numpy arrays, ordered by time."""
        index = self._series_index()
        rows = index.get((series, key))
        if rows is None:
            if any(name == series for name, _ in index):
                raise KeyError(_unknown(key, f"key of series {series!r}", self.series_keys(series)))
            raise KeyError(_unknown(series, "series", self.series_names()))
        t_all = self._series.column("t_s").to_numpy()
        v_all = self._series.column("value").to_numpy()
        t, v = t_all[rows], v_all[rows]
        order = np.argsort(t, kind="stable")
        return t[order], v[order]

    def _series_index(self) -> dict[tuple[str, str], np.ndarray]:
        """Row numbers of each (series, key), computed once from the dictionary codes."""
        if self._index is None:
            names = self._series.select(["series", "key"]).unify_dictionaries().combine_chunks()
            series_codes, series_names = _codes(names.column("series"))
            key_codes, key_names = _codes(names.column("key"))
            combined = series_codes.astype(np.int64) * max(len(key_names), 1) + key_codes
            order = np.argsort(combined, kind="stable")
            uniques, starts = np.unique(combined[order], return_index=True)
            ends = [*starts[1:].tolist(), len(order)] if len(starts) else []
            index: dict[tuple[str, str], np.ndarray] = {}
            for code, start, end in zip(uniques.tolist(), starts.tolist(), ends, strict=True):
                s, k = divmod(code, max(len(key_names), 1))
                index[(series_names[s], key_names[k])] = order[start:end]
            self._index = index
        return self._index

    # ---- packets

    @property
    def packets(self) -> pa.Table | None:
        """The per-packet trace, or ``None`` when the scenario did not record one."""
        if self._packets is None and self._packets_file is not None:
            self._packets = pq.read_table(self._packets_file)
        return self._packets

    def __repr__(self) -> str:
        where = f", path={str(self._path)!r}" if self._path is not None else ""
        return (
            f"Results(name={self.name!r}, seed={self.seed}, "
            f"flows={list(self.flows())}, queues={list(self.queues())}{where})"
        )


def load(path: str | os.PathLike[str]) -> Results:
    """Read a results bundle directory."""
    return Results.load(path)


def write_bundle(
    out_dir: str | os.PathLike[str],
    result: NativeResult,
    *,
    command: Sequence[str] | None = None,
) -> Path:
    """Write what ``l4slab._native.run`` returned as a bundle at ``out_dir``, atomically.

    ``command`` is recorded in run.json (default: ``sys.argv``). Returns the path.
    """
    return Results.from_native(result, command=command).save(out_dir)


def make_run_info(
    stats: RunStats | Mapping[str, Any],
    summary: Mapping[str, Any],
    command: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The content of run.json: everything about a run that depends on the machine."""
    wall_s = float(stats.get("wall_s", 0.0))
    sim_s = float(stats.get("sim_s", 0.0))
    backend = str(stats.get("backend", summary.get("backend", "sim")))
    # The emulator runs in real time: it has no events to count.
    events = int(stats.get("events", 0)) if backend == "sim" else None
    return {
        "format_version": RUN_FORMAT_VERSION,
        "tool_version": summary.get("tool_version"),
        "seed": summary.get("seed"),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv if command is None else command),
        "stats": {
            "backend": backend,
            "wall_s": wall_s,
            "sim_s": sim_s,
            "events": events,
            "packets": int(stats.get("packets", 0)),
            "sim_wall_ratio": sim_s / wall_s if wall_s > 0 else None,
            "events_per_s": events / wall_s if wall_s > 0 and events is not None else None,
        },
        "host": {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "pyarrow": pa.__version__,
        },
    }


# --------------------------------------------------------------------------- atomic output


def check_output_dir(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` may receive a bundle.

    It may if it does not exist, is an empty directory, or holds a previous bundle
    (a ``summary.json`` and nothing but bundle files, and the report of it). Any
    other directory is refused, so a mistyped ``-o`` never deletes someone's files.
    """
    target = Path(path)
    if not target.exists():
        return
    if not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory")
    entries = sorted(entry.name for entry in target.iterdir())
    if not entries:
        return
    strangers = [name for name in entries if name not in BUNDLE_FILES + REPORT_FILES]
    if strangers or SUMMARY_FILE not in entries:
        shown = ", ".join(strangers[:3] or entries[:3])
        raise FileExistsError(
            f"refusing to replace {target}: it is not an l4slab results directory "
            f"(it holds {shown}); choose another output directory or remove it"
        )


@contextmanager
def _staging_dir(target: Path) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``target``; on success rename it to ``target``.

    On any exception, including ``KeyboardInterrupt``, the staging directory is
    removed and ``target`` is left as it was.
    """
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(target, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace_dir(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``, moving an existing ``target`` aside first."""
    if not target.exists():
        new.rename(target)
        return
    old = _sibling(target, "old")
    target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _sibling(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{secrets.token_hex(4)}"


# --------------------------------------------------------------------------- helpers


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer codes and the names they stand for, for a (dictionary) string column.

    ``column`` has one chunk at most (see ``Table.combine_chunks``).
    """
    array = column.chunk(0) if column.num_chunks else pa.array([], type=pa.string())
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    codes = array.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return codes, [str(name) for name in array.dictionary.to_pylist()]


def _lookup(items: Mapping[str, dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    try:
        return items[name]
    except KeyError:
        raise KeyError(_unknown(name, what, sorted(items))) from None


def _unknown(name: str, what: str, known: Sequence[str]) -> str:
    there = ", ".join(repr(k) for k in known) if known else "none"
    return f"no {what} {name!r}; there are: {there}"
