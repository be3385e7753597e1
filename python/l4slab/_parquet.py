"""Parquet for results bundles: the schemas, the native columns as Arrow tables, and
the packet trace's streaming writer.

Every option that shapes a file's bytes is pinned here (none of them embeds a clock),
so the same data always gives the same file: series.parquet and packets.parquet are
part of a bundle's byte-for-byte reproducibility (see :mod:`l4slab.results`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from l4slab._types import PacketChunk, SeriesBuffers, SeriesColumns

__all__ = [
    "PACKETS_SCHEMA",
    "ROW_GROUP_SIZE",
    "SERIES_SCHEMA",
    "PacketWriter",
    "chunk_table",
    "packets_table",
    "series_table",
    "write_packets",
    "write_parquet",
]

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
        pa.field("pkt_id", pa.int64()),
        pa.field("queue", _DICT_STRING),
        pa.field("subqueue", _DICT_STRING),
        pa.field("sojourn_us", pa.float64()),
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


# --------------------------------------------------------------------------- tables


def series_table(columns: SeriesColumns | SeriesBuffers | Mapping[str, Any]) -> pa.Table:
    """Build the series table (``SERIES_SCHEMA``) from the native long-format columns.

    ``columns`` are the simulator's buffers (:class:`~l4slab._types.SeriesBuffers`) or
    columns of Python values (the emulator's); both give the same table for the same rows.
    """
    if "names" in columns:
        return _series_from_buffers(columns)
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


def _series_from_buffers(columns: SeriesBuffers | Mapping[str, Any]) -> pa.Table:
    rows = int(columns["rows"])
    t_s = np.frombuffer(columns["t_s"], dtype=np.float64)
    value = np.frombuffer(columns["value"], dtype=np.float64)
    series = np.frombuffer(columns["series"], dtype=np.uint32)
    key = np.frombuffer(columns["key"], dtype=np.uint32)
    lengths = {"t_s": len(t_s), "series": len(series), "key": len(key), "value": len(value)}
    if set(lengths.values()) != {rows}:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"series columns have different lengths: rows={rows}, {detail}")
    names: Sequence[str] = columns["names"]
    arrays = [
        _plain(t_s, pa.float64()),
        _dictionary(series, names),
        _dictionary(key, names),
        _plain(value, pa.float64()),
    ]
    return pa.Table.from_arrays(arrays, schema=SERIES_SCHEMA)


def _plain(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """``pa.array(values, type=type_)`` for a contiguous array already of that type: the
    same array, on the same memory. ``pa.array`` asks whether a numpy array is masked,
    which imports numpy.ma: 47 M instructions, 6 % of a 1-second ``l4slab run`` (issue 32)."""
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def _dictionary(codes: np.ndarray, names: Sequence[str]) -> pa.DictionaryArray:
    """Codes into ``names`` as the dictionary array ``dictionary_encode()`` would give.

    Only the names used, in the order of their first appearance, so the column (and the
    file) is the same as when encoded from the strings.
    """
    if len(codes) == 0:
        return pa.DictionaryArray.from_arrays(
            pa.array([], type=pa.int32()), pa.array([], type=pa.string())
        )
    used, first = np.unique(codes, return_index=True)
    used = used[np.argsort(first, kind="stable")]
    position = np.zeros(len(names), dtype=np.int32)
    position[used] = np.arange(len(used), dtype=np.int32)
    indices = position[codes]
    dictionary = pa.array([names[code] for code in used.tolist()], type=pa.string())
    return pa.DictionaryArray.from_arrays(_plain(indices, pa.int32()), dictionary)


def packets_table(columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """Build the per-packet trace table from columns of Python values (the emulator's).

    Columns of ``PACKETS_SCHEMA`` get its types and its order (the simulator's);
    string columns are dictionary-encoded, ``None`` is null.
    """
    _check_equal_lengths(columns, what="packets")
    arrays: dict[str, pa.Array] = {}
    known_first = [n for n in PACKETS_SCHEMA.names if n in columns]
    order = known_first + [n for n in columns if n not in PACKETS_SCHEMA.names]
    for name in order:
        values = columns[name]
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
        pa.array(numbers("pkt_id", np.int64)),
        coded("queue"),
        coded("subqueue"),
        pa.array(numbers("sojourn_us", np.float64), from_pandas=True),  # NaN -> null
    ]
    return pa.Table.from_arrays(arrays, schema=PACKETS_SCHEMA)


def _first_seen_dictionary(codes: np.ndarray, names: Sequence[str | None]) -> pa.DictionaryArray:
    """Codes into ``names`` as a dictionary array of the names that occur, first seen first.

    A code whose name is ``None`` (the ``queue`` and ``subqueue`` columns' code 0) is null.
    """
    null_codes = [code for code, name in enumerate(names) if name is None]
    nulls = np.isin(codes, null_codes) if null_codes else None
    present, first = np.unique(codes if nulls is None else codes[~nulls], return_index=True)
    order = present[np.argsort(first, kind="stable")]
    remap = np.zeros(len(names), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    dictionary = pa.array([names[int(code)] for code in order], type=pa.string())
    indices = pa.array(remap[codes], type=pa.int32(), mask=nulls)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def _check_equal_lengths(columns: Mapping[str, Sequence[Any]], *, what: str) -> None:
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"{what} columns have different lengths: {detail}")


def write_parquet(table: pa.Table, path: Path) -> None:
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


def write_packets(table: pa.Table, path: Path) -> None:
    """Write an in-memory trace as the streaming writer would: one row group per chunk."""
    writer = PacketWriter(path)
    try:
        writer.write(table.slice(0, 0))  # creates the file, even for an empty trace
        for batch in table.to_batches():
            writer.write(pa.Table.from_batches([batch]))
    finally:
        writer.close()
