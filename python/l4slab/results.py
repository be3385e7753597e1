"""Results bundles: write them atomically and byte-for-byte reproducibly, read them back.

A bundle is a directory (see docs/results.md)::

    DIR/summary.json            the native summary, verbatim (sorted keys) + a trailing newline
    DIR/series.parquet          long-format time series: t_s, series, key, value
    DIR/packets.parquet         per-packet trace (only when the scenario sets packet_trace = true)
    DIR/run.json                how this run went on this machine: wall time, events, host, command
    DIR/.l4slab-manifest.json   every file l4slab wrote here, and what wrote it

Everything but ``run.json`` and the manifest is a pure function of (scenario, seed,
l4slab version, pyarrow version): two runs with the same seed give byte-identical files.

A bundle is written into a hidden directory beside the target (``.NAME.tmp-PID-RANDOM``),
created before the simulation starts (the packet trace streams into it, and it proves
the target is writable), and renamed into place only when every file is complete, so an
error, Ctrl-C or SIGTERM never leaves a half-written bundle.

l4slab never destroys what it did not write. The manifest lists the files l4slab wrote
into a directory (a run's, ``l4slab report``'s, ``l4slab compare``'s); an existing
directory is replaced only when the manifest accounts for every file in it
(:func:`check_output_dir`), and only the files it lists are ever removed. Writers that
add to a directory (the report, a comparison) replace only the files they wrote there
before (:func:`write_files`). A directory without a manifest, even one with a
``summary.json`` (an older l4slab's bundle), is never replaced.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shutil
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._types import NativeResult, PacketChunk, RunStats, SeriesColumns

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
]

SUMMARY_FILE = "summary.json"
SERIES_FILE = "series.parquet"
PACKETS_FILE = "packets.parquet"
RUN_FILE = "run.json"
#: The manifest: every file l4slab wrote into a directory, and which command wrote it.
MANIFEST_FILE = ".l4slab-manifest.json"
#: The files ``l4slab run`` writes (besides the manifest).
BUNDLE_FILES = (SUMMARY_FILE, SERIES_FILE, PACKETS_FILE, RUN_FILE)
#: What ``l4slab report`` adds to a bundle (see l4slab.report).
REPORT_FILES = ("report.html", "figures")

#: Version of the run.json layout (summary.json carries its own format_version).
RUN_FORMAT_VERSION = 1
#: Version of the manifest's layout.
MANIFEST_FORMAT_VERSION = 1

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

#: Schema of packets.parquet (docs/results.md). Strings are dictionary-encoded.
PACKETS_SCHEMA = pa.schema(
    [
        pa.field("t_s", pa.float64()),
        pa.field("event", _DICT_STRING),
        pa.field("flow", pa.int64()),
        pa.field("side", _DICT_STRING),
        pa.field("seq", pa.int64()),
        pa.field("len", pa.int64()),
        pa.field("ack", pa.int64()),
        pa.field("ecn", _DICT_STRING),
        pa.field("retransmission", pa.bool_()),
        pa.field("wnd", pa.int64()),
        pa.field("sack", _DICT_STRING),
        pa.field("flags", _DICT_STRING),
    ]
)

#: Rows per Parquet row group. Fixed so that the file layout depends only on the data;
#: the simulator hands the packet trace over in chunks of this many rows (CHUNK_ROWS in
#: crates/l4slab-core/src/pkttrace.rs), each written as one row group.
ROW_GROUP_SIZE = 1 << 16

# Every option that shapes the bytes is pinned here; none of them embeds a clock.
_WRITER_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "version": "2.6",
    "data_page_version": "1.0",
    "use_dictionary": True,
    "write_statistics": True,
    "store_schema": True,
}
_PARQUET_OPTIONS: dict[str, Any] = {**_WRITER_OPTIONS, "row_group_size": ROW_GROUP_SIZE}


class OutputDirError(OSError):
    """The output directory cannot be used (e.g. it is not writable); nothing was run."""


class OutputWarning(UserWarning):
    """Something about an output directory the user should know (a leftover left alone)."""


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
    """Build the per-packet trace table from columns of Python values (the emulator's).

    Columns of ``PACKETS_SCHEMA`` get its types; string columns are dictionary-encoded.
    """
    _check_equal_lengths(columns, what="packets")
    arrays: dict[str, pa.Array] = {}
    for name, values in columns.items():
        known = PACKETS_SCHEMA.field(name).type if name in PACKETS_SCHEMA.names else None
        if known is not None and pa.types.is_dictionary(known):
            array = pa.array(values, type=pa.string()).dictionary_encode()
        else:
            array = pa.array(values, type=known)
            if pa.types.is_string(array.type):
                array = array.dictionary_encode()
        arrays[name] = array
    return pa.table(arrays)


def chunk_table(chunk: PacketChunk) -> pa.Table:
    """One chunk of the simulator's packet trace as a table (``PACKETS_SCHEMA``).

    The columns arrive as buffers (``_native.pyi``: ``PacketChunk``); no Python object
    is made per row. Coded columns become dictionary arrays holding only the names
    that occur, in order of first occurrence (what ``dictionary_encode`` gives).
    """
    rows = int(chunk["rows"])
    names = chunk["names"]

    def numbers(name: str, dtype: type[np.generic]) -> np.ndarray:
        return np.frombuffer(chunk[name], dtype=dtype, count=rows)  # type: ignore[literal-required]

    def coded(name: str) -> pa.Array:
        codes = np.frombuffer(chunk[name], dtype=np.uint8, count=rows)  # type: ignore[literal-required]
        return _first_seen_dictionary(codes, names[name])  # type: ignore[literal-required]

    sack = pa.Array.from_buffers(
        pa.string(),
        rows,
        [None, pa.py_buffer(chunk["sack_offsets"]), pa.py_buffer(chunk["sack"])],
    )
    arrays = [
        pa.array(numbers("t_s", np.float64)),
        coded("event"),
        pa.array(numbers("flow", np.int64)),
        coded("side"),
        pa.array(numbers("seq", np.int64)),
        pa.array(numbers("len", np.int64)),
        pa.array(numbers("ack", np.int64)),
        coded("ecn"),
        pa.array(numbers("retransmission", np.bool_)),
        pa.array(numbers("wnd", np.int64)),
        sack.dictionary_encode(),
        coded("flags"),
    ]
    return pa.Table.from_arrays(arrays, schema=PACKETS_SCHEMA)


def _first_seen_dictionary(codes: np.ndarray, names: Sequence[str]) -> pa.DictionaryArray:
    """Codes into ``names`` as a dictionary array of the names that occur, first seen first."""
    present, first = np.unique(codes, return_index=True)
    order = present[np.argsort(first, kind="stable")]
    remap = np.zeros(len(names), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    dictionary = pa.array([names[int(code)] for code in order], type=pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(remap[codes], type=pa.int32()), dictionary)


def _check_equal_lengths(columns: Mapping[str, Sequence[Any]], *, what: str) -> None:
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"{what} columns have different lengths: {detail}")


def _write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, **_PARQUET_OPTIONS)


class PacketWriter:
    """Streams the packet trace into ``path``, one row group per chunk.

    Call it with each native chunk (it is the ``packets_sink`` of ``_native.run``) or
    give it tables with :meth:`write`; :meth:`close` finishes the file. The file is
    created on the first chunk, even an empty one, so a traced run always has a
    packets.parquet. Memory stays at one chunk whatever the length of the trace.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def __call__(self, chunk: PacketChunk) -> None:
        self.write(chunk_table(chunk))

    def write(self, table: pa.Table) -> None:
        """Append ``table``'s rows (as one row group when it has at most ROW_GROUP_SIZE)."""
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema, **_WRITER_OPTIONS)
        if table.num_rows:
            self._writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
            self.rows += table.num_rows

    @property
    def opened(self) -> bool:
        """Whether a chunk came (the run traces packets)."""
        return self._writer is not None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _write_packets(table: pa.Table, path: Path) -> None:
    """Write an in-memory trace as the streaming writer would: one row group per chunk."""
    writer = PacketWriter(path)
    try:
        writer.write(table.slice(0, 0))  # creates the file, even for an empty trace
        for batch in table.to_batches():
            writer.write(pa.Table.from_batches([batch]))
    finally:
        writer.close()


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
                _write_packets(self._packets, staging.packets_path)
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


# --------------------------------------------------------------------------- manifest


@dataclass
class Manifest:
    """``.l4slab-manifest.json``: the files l4slab wrote into a directory.

    ``files`` maps each file's path (relative, with ``/``) to what wrote it: ``"run"``,
    ``"report"``, ``"compare"`` or ``"reproduce"``. ``scenario`` records the run's
    scenario name and source file, so a run never silently replaces another scenario's
    results. Keys this version does not know are kept.
    """

    files: dict[str, str] = field(default_factory=dict)
    scenario: dict[str, Any] | None = None
    tool_version: str | None = None
    other: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        document = {
            **self.other,
            "format_version": MANIFEST_FORMAT_VERSION,
            "written_by": "l4slab",
            "tool_version": self.tool_version,
            "scenario": self.scenario,
            "files": dict(sorted(self.files.items())),
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse a manifest; ``ValueError`` says what is wrong with it."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(document, dict) or document.get("written_by") != "l4slab":
            raise ValueError("not an l4slab manifest")
        files = document.get("files")
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _is_plain_relative(k)
            for k, v in files.items()
        ):
            raise ValueError('"files" must map relative paths to the command that wrote them')
        scenario = document.get("scenario")
        version = document.get("tool_version")
        other = {
            k: v
            for k, v in document.items()
            if k not in ("format_version", "written_by", "tool_version", "scenario", "files")
        }
        return cls(
            dict(files),
            scenario if isinstance(scenario, dict) else None,
            str(version) if version is not None else None,
            other,
        )


def read_manifest(directory: str | os.PathLike[str]) -> Manifest | None:
    """The manifest of ``directory``, or ``None`` if it has none.

    Raises ``ValueError`` when there is a manifest but it cannot be read.
    """
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return Manifest.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable manifest: {exc}") from None


def _is_plain_relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not PurePosixPath(path).is_absolute() and ".." not in parts


def _put_manifest(directory: Path, manifest: Manifest, staging: Path) -> None:
    """Replace ``directory``'s manifest atomically (written in ``staging``, then renamed)."""
    fresh = staging / MANIFEST_FILE
    fresh.write_text(manifest.to_json(), encoding="utf-8")
    fresh.replace(directory / MANIFEST_FILE)


# --------------------------------------------------------------------------- the output guard


def output_path(out: str | os.PathLike[str]) -> Path:
    """Where a bundle for ``-o out`` goes: ``out`` itself, or, when ``out`` is a symbolic
    link, the directory it points to (the link is followed, never replaced)."""
    target = Path(out)
    if target.name in ("", ".", ".."):
        target = target.resolve()
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    return target


def check_output_dir(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` may receive a bundle.

    It may if it does not exist, is an empty directory, or holds only files that its
    manifest lists as written by l4slab (a previous bundle, with its report). Any other
    directory is refused, naming what l4slab did not write, so a re-run or a mistyped
    ``-o`` never deletes anyone's files. A directory without a manifest is refused even
    if it holds a ``summary.json`` (bundles of earlier l4slab versions have none).
    """
    target = output_path(path)
    if not target.exists():
        return
    if not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory; choose another -o")
    entries = sorted(entry.name for entry in target.iterdir())
    if not entries:
        return
    try:
        manifest = read_manifest(target)
    except ValueError as exc:
        raise FileExistsError(
            f"refusing to replace {target}: {exc}; move the directory away or choose "
            "another output directory (-o)"
        ) from None
    shown = _shown(entries)
    if manifest is None and any(name in entries for name in (SUMMARY_FILE, "study.json")):
        raise FileExistsError(
            f"refusing to replace {target}: it holds {shown} but no {MANIFEST_FILE}, so "
            "nothing proves l4slab wrote all of it (results of earlier l4slab versions have "
            "no manifest). Move or remove it yourself, or choose another output directory (-o)"
        )
    if manifest is None:
        raise FileExistsError(
            f"refusing to replace {target}: it is not an l4slab results directory "
            f"(it holds {shown}); choose another output directory (-o) or remove it"
        )
    strangers = _strangers(target, manifest)
    if strangers:
        one = len(strangers) == 1
        raise FileExistsError(
            f"refusing to replace {target}: {_shown(strangers)} {'is' if one else 'are'} "
            f"not l4slab's (not in its {MANIFEST_FILE}); move {'it' if one else 'them'} out "
            "of the results directory, or choose another output directory (-o)"
        )


def check_same_scenario(path: str | os.PathLike[str], name: str, source: str | None) -> None:
    """Raise ``FileExistsError`` if the bundle at ``path`` holds another scenario's results.

    ``l4slab run`` without ``-o`` writes to ``results/<name made safe>``, and two
    scenario names (``a b``, ``a-b``) or two files with the same name can land in the
    same directory. The manifest records each run's scenario name and source file;
    another one there is refused, suggesting ``-o``.
    """
    target = output_path(path)
    try:
        manifest = read_manifest(target) if target.is_dir() else None
    except ValueError:
        return  # check_output_dir refuses it
    if manifest is None or manifest.scenario is None:
        return
    old_name = manifest.scenario.get("name")
    old_source = manifest.scenario.get("source")
    files = [s for s in (old_source, source) if s is not None and s != STRING_SOURCE]
    if old_name == name and (len(files) < 2 or old_source == source):
        return
    raise FileExistsError(
        f"refusing to replace {target}: it holds the results of scenario {old_name!r} "
        f"({old_source or 'source unknown'}), and this run is scenario {name!r} ({source}); "
        "both go to the same directory. Give this run its own with -o DIR "
        f"(e.g. -o {target}-2), or remove {target} if you no longer need it"
    )


#: The ``source`` of a scenario given as TOML text rather than a file.
STRING_SOURCE = "<string>"


def _strangers(directory: Path, manifest: Manifest) -> list[str]:
    """Everything under ``directory`` its manifest does not account for, as relative paths.

    Listed files and the manifest are accounted for, and directories holding only those
    (or nothing); symbolic links and anything else are not.
    """
    listed = set(manifest.files)
    found: list[str] = []

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_symlink():
                found.append(f"{rel} (a symbolic link)")
            elif entry.is_dir(follow_symlinks=False):
                walk(Path(entry.path), rel + "/")
            elif not entry.is_file(follow_symlinks=False) or (
                rel not in listed and rel != MANIFEST_FILE
            ):
                found.append(rel)

    walk(directory, "")
    return found


def _shown(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# --------------------------------------------------------------------------- staging


_STAGING_NAME = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}")
#: File names l4slab writes (anywhere in a bundle or a study), besides figures.
_OWN_NAMES = frozenset(
    (*BUNDLE_FILES, MANIFEST_FILE, "report.html", "compare.html", "study.json", "table.md")
)


def clean_stale_staging(path: str | os.PathLike[str]) -> list[str]:
    """Deal with the hidden directories killed runs left beside ``path``; return notes.

    A run writes into ``.NAME.tmp-PID-RANDOM`` and moves an old bundle aside to
    ``.NAME.old-PID-RANDOM``; a run killed by SIGKILL or a power cut leaves them. One
    whose process is gone and which holds only files l4slab writes is removed (an old
    bundle whose replacement never arrived is put back instead); one that holds
    anything else, or whose process still runs, is left alone and reported.
    """
    target = output_path(path)
    parent = target.parent
    notes: list[str] = []
    if not parent.is_dir():
        return notes
    for entry in sorted(parent.iterdir()):
        match = _STAGING_NAME.fullmatch(entry.name)
        if match is None or match["name"] != target.name:
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        pid = int(match["pid"])
        if pid == os.getpid():
            continue
        if _alive(pid):
            notes.append(f"left {entry} alone: process {pid}, which is still running, writes it")
            continue
        foreign = _foreign_files(entry)
        if foreign:
            notes.append(
                f"left {entry} alone: a killed run (process {pid}) left it, but it holds "
                f"{_shown(foreign)}, which l4slab does not write; look inside, then remove it"
            )
            continue
        if match["kind"] == "old" and not target.exists() and not target.is_symlink():
            entry.rename(target)
            notes.append(f"put back {target}: a run killed while replacing it left it aside")
            continue
        shutil.rmtree(entry, ignore_errors=True)
        notes.append(f"removed {entry}, left by a killed run (process {pid})")
    return notes


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 probes without signalling)."""
    if sys.platform == "win32":
        return True  # os.kill would end the process there: never judge a leftover dead
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    return True


def _foreign_files(folder: Path) -> list[str]:
    """Files under ``folder`` whose names l4slab never writes (figures are ``*.png|svg``)."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        for name in sorted(dirs):
            if (Path(root) / name).is_symlink():
                found.append(str(rel_root / name))
        for name in sorted(files):
            path = Path(root) / name
            figure = Path(root).name == "figures" and path.suffix in (".png", ".svg")
            if path.is_symlink() or not (name in _OWN_NAMES or figure):
                found.append(str(rel_root / name))
    return found


def _make_staging(target: Path) -> Path:
    """Create a hidden directory beside ``target`` (``OutputDirError`` if impossible)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _sibling(target, "tmp")
        tmp.mkdir()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        raise OutputDirError(
            f"cannot write results to {target}: {reason}{where}; choose a directory you can "
            "write to (-o)"
        ) from None
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        tmp.rmdir()
        raise OutputDirError(
            f"cannot replace {target}: permission denied; choose a directory you can write to (-o)"
        )
    return tmp


class RunStaging:
    """The hidden directory a run's bundle is written into, beside its target.

    Creating it is the first thing a run does, before simulating: an unwritable target
    fails at once (:class:`OutputDirError`). The packet trace streams into it
    (:attr:`packets`, the native run's ``packets_sink``); :meth:`finish` writes the other
    files and the manifest. Used as a context manager it is renamed into place when the
    block ends without an exception (the target checked again, see
    :func:`check_output_dir`) and removed, with everything in it, when one escapes.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.path = _make_staging(target)
        self.packets = PacketWriter(self.path / PACKETS_FILE)
        self._finished = False

    @property
    def packets_path(self) -> Path:
        return self.path / PACKETS_FILE

    def finish(self, results: Results) -> None:
        """Write summary.json, series.parquet, run.json and the manifest."""
        self.packets.close()
        tmp = self.path
        (tmp / SUMMARY_FILE).write_bytes((results.summary_text + "\n").encode("utf-8"))
        _write_parquet(results.series_table, tmp / SERIES_FILE)
        run_text = json.dumps(results.run_info, indent=2, sort_keys=True) + "\n"
        (tmp / RUN_FILE).write_bytes(run_text.encode("utf-8"))
        manifest = Manifest(
            files={name: "run" for name in BUNDLE_FILES if (tmp / name).is_file()},
            scenario={"name": results.name, "source": results._source},
            tool_version=results.tool_version,
        )
        (tmp / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")
        self._finished = True

    def commit(self) -> None:
        """Move the finished bundle into place, replacing an earlier one."""
        if not self._finished:
            raise RuntimeError("RunStaging.commit before finish")
        check_output_dir(self.target)
        _replace_dir(self.path, self.target)

    def abort(self) -> None:
        """Remove the staging directory and everything in it."""
        with suppress(Exception):  # a half-written file is removed anyway
            self.packets.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> RunStaging:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None:
            self.abort()
            return
        try:
            self.commit()
        except BaseException:
            self.abort()
            raise


@contextmanager
def _staging_dir(target: Path) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``target``; on success rename it to ``target``.

    On any exception, including ``KeyboardInterrupt``, the staging directory is
    removed and ``target`` is left as it was. An existing ``target`` is replaced as
    :func:`_replace_dir` does: only the files its manifest lists are removed. A
    symlinked ``target`` is followed (:func:`output_path`).
    """
    target = output_path(target)
    tmp = _make_staging(target)
    try:
        yield tmp
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace_dir(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``; an existing ``target`` is moved aside first and
    then emptied of the files its manifest lists. Anything else in it is kept, in the
    moved-aside directory, with an :class:`OutputWarning` naming it."""
    if target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
        new.replace(target)  # an empty directory is replaced in one step
        return
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
    kept = _remove_own_files(old)
    if kept:
        warnings.warn(
            f"kept {old}: it holds {_shown(kept)}, which appeared in {target} during the "
            "run and l4slab did not write; the new results are in place",
            OutputWarning,
            stacklevel=3,
        )


def _remove_own_files(folder: Path) -> list[str]:
    """Delete the files ``folder``'s manifest lists, then it if empty; return what is left."""
    try:
        manifest = read_manifest(folder)
    except ValueError:
        manifest = None
    if manifest is not None:
        for rel in manifest.files:
            if _own_file(folder, rel):
                (folder / rel).unlink()
        (folder / MANIFEST_FILE).unlink(missing_ok=True)
    _remove_empty_dirs(folder)
    if not folder.exists():
        return []
    return _strangers(folder, Manifest())


def _own_file(folder: Path, rel: str) -> bool:
    """Whether ``folder/rel`` is a regular file reached through real directories only
    (a symlinked ``figures/`` may point at someone else's files)."""
    path = folder / rel
    for parent in list(PurePosixPath(rel).parents)[:-1]:
        if (folder / parent).is_symlink() or not (folder / parent).is_dir():
            return False
    return path.is_file() and not path.is_symlink()


def _remove_empty_dirs(folder: Path) -> None:
    """Remove empty directories under ``folder``, bottom up, and ``folder`` if it ends empty."""
    for root, dirs, _files in os.walk(folder, topdown=False):
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                with suppress(OSError):
                    path.rmdir()
    with suppress(OSError):
        folder.rmdir()


def _sibling(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{secrets.token_hex(4)}"


# --------------------------------------------------------------------------- adding files


def write_manifest(directory: str | os.PathLike[str], writer: str) -> None:
    """Write ``directory``'s manifest listing every file under it as ``writer``'s.

    For a directory l4slab has just filled in a staging directory (a study's results).
    """
    folder = Path(directory)
    files = {
        path.relative_to(folder).as_posix(): writer
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not path.is_symlink()
        and path.relative_to(folder).as_posix() != MANIFEST_FILE
    }
    manifest = Manifest(files=files, tool_version=_tool_version())
    (folder / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")


def _tool_version() -> str | None:
    try:
        from l4slab import _native
    except ImportError:
        return None
    return str(_native.__version__)


def write_files(directory: str | os.PathLike[str], writer: str, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (relative path → content) into ``directory`` as ``writer``.

    What ``l4slab report`` and ``l4slab compare`` use. The files ``writer`` wrote there
    before (per the manifest) and does not write now are removed; every other file is
    left alone. A file to write that exists and is not ``writer``'s (per the manifest)
    is refused with ``FileExistsError`` before anything is written. The manifest claims
    the files before they appear, so a killed write never leaves unlisted files. Returns
    the directory.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    try:
        manifest = read_manifest(target) or Manifest()
    except ValueError as exc:
        raise FileExistsError(
            f"refusing to write into {target}: {exc}; move the directory away or choose another one"
        ) from None
    conflicts = [rel for rel in files if _blocked(target, rel, manifest, writer)]
    if conflicts:
        one = len(conflicts) == 1
        raise FileExistsError(
            f"refusing to overwrite {_shown(conflicts)} in {target}: l4slab {writer} did not "
            f"write {'it' if one else 'them'} (not in {MANIFEST_FILE}); move "
            f"{'it' if one else 'them'} away, or write somewhere else"
        )
    stale = sorted(rel for rel, w in manifest.files.items() if w == writer and rel not in files)
    staging = _make_staging(target)
    try:
        for rel, data in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
        claimed = dict(manifest.files)
        claimed.update(dict.fromkeys(files, writer))
        manifest.files = claimed
        _put_manifest(target, manifest, staging)
        for rel in files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).replace(target / rel)
        for rel in stale:
            if _own_file(target, rel):
                (target / rel).unlink()
                _remove_empty_parents((target / rel).parent, target)
            del claimed[rel]
        _put_manifest(target, manifest, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _blocked(target: Path, rel: str, manifest: Manifest, writer: str) -> bool:
    """Whether writing ``rel`` would overwrite something that is not ``writer``'s."""
    path = target / rel
    for parent in list(PurePosixPath(rel).parents)[:-1]:
        folder = target / parent
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return True
    if not path.exists() and not path.is_symlink():
        return False
    return path.is_symlink() or not path.is_file() or manifest.files.get(rel) != writer


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not folder.is_symlink():
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


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
