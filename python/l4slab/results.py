"""Results bundles: write them atomically and byte-for-byte reproducibly, read them back.

A bundle is a directory (see docs/results.md)::

    DIR/summary.json            the native summary, verbatim (sorted keys) + a trailing newline
    DIR/series.parquet          long-format time series: t_s, series, key, value
    DIR/packets.parquet         per-packet trace (only when the scenario sets packet_trace = true)
    DIR/pcap/*.pcap             captures of every queue (only when the scenario sets pcap = true)
    DIR/run.json                how this run went on this machine: wall time, events, host, command
    DIR/.l4slab-manifest.json   every file l4slab wrote here, and what wrote it

Everything but ``run.json`` and the manifest is a pure function of (scenario, seed,
l4slab version, pyarrow version): two runs with the same seed give byte-identical files.

Writing and the output guard live in :mod:`l4slab.output`, the Parquet layout in
:mod:`l4slab._parquet`; their public names are re-exported here.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._parquet import (
    PACKETS_SCHEMA,
    ROW_GROUP_SIZE,
    SERIES_SCHEMA,
    PacketWriter,
    chunk_table,
    packets_table,
    series_table,
    write_packets,
    write_parquet,
)
from l4slab._types import NativeResult, RunStats
from l4slab.output import (
    BUNDLE_FILES,
    MANIFEST_FILE,
    PACKETS_FILE,
    REPORT_FILES,
    RUN_FILE,
    RUN_FORMAT_VERSION,
    SERIES_FILE,
    SUMMARY_FILE,
    Manifest,
    OutputDirError,
    OutputWarning,
    RunStaging,
    check_output_dir,
    check_same_scenario,
    clean_stale_staging,
    output_path,
    read_manifest,
    write_files,
    write_manifest,
)

__all__ = [
    "BUNDLE_FILES",
    "MANIFEST_FILE",
    "PACKETS_FILE",
    "PACKETS_SCHEMA",
    "REPORT_FILES",
    "ROW_GROUP_SIZE",
    "RUN_FILE",
    "RUN_FORMAT_VERSION",
    "SERIES_FILE",
    "SERIES_SCHEMA",
    "SUMMARY_FILE",
    "Manifest",
    "OutputDirError",
    "OutputWarning",
    "PacketWriter",
    "Results",
    "RunStaging",
    "check_output_dir",
    "check_same_scenario",
    "chunk_table",
    "clean_stale_staging",
    "load",
    "make_run_info",
    "output_path",
    "packets_table",
    "read_manifest",
    "series_table",
    "write_bundle",
    "write_files",
    "write_manifest",
    "write_packets",
    "write_parquet",
]

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
        packets_file: Path | None = None,
        path: Path | None = None,
        source: str | None = None,
    ) -> None:
        self._summary_text = summary_text.rstrip("\n")
        self._summary: dict[str, Any] = json.loads(self._summary_text)
        if not isinstance(self._summary, dict):
            raise ValueError("summary.json must hold a JSON object")
        self._series = series
        self._run_info: dict[str, Any] = dict(run_info or {})
        self._packets = packets
        self._packets_file = packets_file
        self._path = path
        self._source = source
        self._index: dict[tuple[str, str], np.ndarray] | None = None

    # ---- construction

    @classmethod
    def from_native(
        cls,
        result: NativeResult,
        *,
        command: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Results:
        """Wrap what ``l4slab._native.run`` (or the emulator) returned (nothing is written).

        ``result["packets"]`` may be columns of Python values (the emulator's), the
        simulator's chunks (when it ran without a ``packets_sink``), or ``None``.
        ``source`` names the scenario file (recorded in the manifest when saved).
        """
        summary_text = result["summary_json"]
        summary = json.loads(summary_text)
        packets = result.get("packets")
        table: pa.Table | None
        if packets is None:
            table = None
        elif isinstance(packets, Mapping):
            table = packets_table(packets)
        else:
            tables = [chunk_table(chunk) for chunk in packets]
            table = pa.concat_tables(tables) if tables else PACKETS_SCHEMA.empty_table()
        return cls(
            summary_text,
            series_table(result["series"]),
            run_info=make_run_info(result["stats"], summary, command),
            packets=table,
            source=source,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Results:
        """Read a bundle written by ``l4slab run`` (or :meth:`save`).

        Reads summary.json, series.parquet and run.json; the packet trace stays on
        disk until asked for (:attr:`packets`, :meth:`iter_packets`).
        """
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
        packets_file = root / PACKETS_FILE
        try:
            manifest = read_manifest(root)
        except ValueError:
            manifest = None
        scenario = manifest.scenario if manifest is not None else None
        source = scenario.get("source") if scenario is not None else None
        return cls(
            summary_file.read_text(encoding="utf-8"),
            series,
            run_info=run_info,
            packets_file=packets_file if packets_file.is_file() else None,
            path=root,
            source=str(source) if source is not None else None,
        )

    # ---- writing

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write this result as a bundle at ``out_dir``, atomically; returns the path.

        Replaces an earlier bundle there, but refuses (``FileExistsError``) a directory
        holding anything l4slab did not write (see :func:`check_output_dir`). A
        symlinked ``out_dir`` is followed: the bundle goes where it points.
        """
        target = output_path(out_dir)
        check_output_dir(target)
        with RunStaging(target) as staging:
            if self._packets_file is not None:  # streamed or loaded: copied, never read whole
                shutil.copyfile(self._packets_file, staging.packets_path)
            elif self._packets is not None:
                write_packets(self._packets, staging.packets_path)
            staging.finish(self)
        self._path = target
        return target

    def _saved_at(self, target: Path, *, packets: bool) -> None:
        """Point at the bundle just written at ``target`` (``packets``: it has a trace)."""
        self._path = target
        if packets:
            self._packets_file = target / PACKETS_FILE

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
    def random_draws(self) -> int | None:
        """Random numbers the run drew from its seeded streams (``None``: not recorded,
        e.g. an emulated run). ``0`` means nothing in the run was random: every seed
        gives the same results."""
        draws = self._summary.get("random_draws")
        return int(draws) if draws is not None else None

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
    def has_packets(self) -> bool:
        """Whether the run recorded a packet trace (reads nothing)."""
        return self._packets is not None or self._packets_file is not None

    @property
    def packets_file(self) -> Path | None:
        """The bundle's packets.parquet, or ``None`` (no trace, or never saved)."""
        return self._packets_file

    @property
    def packet_rows(self) -> int | None:
        """Rows of the packet trace (from the file's footer; reads no rows), or ``None``."""
        if self._packets is not None:
            return int(self._packets.num_rows)
        if self._packets_file is not None:
            return int(pq.ParquetFile(self._packets_file).metadata.num_rows)
        return None

    @property
    def packets(self) -> pa.Table | None:
        """The whole per-packet trace, or ``None`` when the scenario did not record one.

        This reads the whole file into memory: fine for short runs. For long ones
        read it in pieces with :meth:`iter_packets`.
        """
        if self._packets is None and self._packets_file is not None:
            self._packets = pq.read_table(self._packets_file)
        return self._packets

    def iter_packets(
        self, columns: Sequence[str] | None = None, *, batch_size: int = ROW_GROUP_SIZE
    ) -> Iterator[pa.RecordBatch]:
        """The packet trace in record batches of at most ``batch_size`` rows, in order.

        ``columns`` picks columns (default: all). Reading a bundle this way holds one
        batch in memory at a time. Yields nothing when there is no trace.
        """
        cols = list(columns) if columns is not None else None
        if self._packets is not None:
            table = self._packets.select(cols) if cols is not None else self._packets
            yield from table.to_batches(max_chunksize=batch_size)
        elif self._packets_file is not None:
            yield from pq.ParquetFile(self._packets_file).iter_batches(
                batch_size=batch_size, columns=cols
            )

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
