"""Reading packets.parquet as a stream for :mod:`l4slab.plots._trace`: batches of the
needed columns, one flow's rows decoded into events, row by row never the whole file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from l4slab.results import PACKETS_FILE, Results
from l4slab.tables import flow_order

#: Rows read from packets.parquet at a time (all flows). Memory per batch is a few MB.
BATCH_ROWS = 1 << 16
#: Above this many events of one kind in view, the time-sequence graph draws that kind
#: decimated into :data:`TSG_BINS` time bins (see :class:`Ticks`).
TSG_MAX_EVENTS = 50_000
#: Time bins of a decimated time-sequence graph: about one per pixel column of the
#: report's wide figure (13 in at 110 dpi).
TSG_BINS = 1_500
#: Rows of a flow held until its data side sends (to make sequence numbers relative);
#: past this many, the flow's numbers stay absolute (a flow of datagrams sends no SYN).
_HOLD_ROWS = 4_096
#: Sent segments remembered to find when a CE-marked copy was sent (the newest are kept).
_OUTSTANDING_CAP = 1 << 20

#: Columns each reader needs.
_RTT_COLUMNS = ("t_s", "event", "flow", "side", "seq", "len", "ack", "retransmission", "sack")
_ALL_COLUMNS = (*_RTT_COLUMNS, "ecn", "wnd", "flags")


class NoPacketTraceError(ValueError):
    """The results have no per-packet trace (the scenario did not set ``packet_trace``)."""


def packets_path(results: Results) -> Path | None:
    """The bundle's ``packets.parquet``, or ``None`` (no trace, or results never saved)."""
    value: object = getattr(results, "packets_file", None)
    if callable(value):
        value = value()
    if isinstance(value, str | os.PathLike):
        path = Path(value)
        if path.is_file():
            return path
    if results.path is not None:
        path = results.path / PACKETS_FILE
        if path.is_file():
            return path
    return None


# --------------------------------------------------------------------------- reading


def _flow(results: Results, flow: str | int) -> tuple[int, str]:
    names = flow_order(results.summary)
    if isinstance(flow, int):
        if not 0 <= flow < len(names):
            raise KeyError(f"no flow number {flow}; there are {len(names)} flows")
        return flow, names[flow]
    if flow not in names:
        there = ", ".join(repr(n) for n in names) or "none"
        raise KeyError(f"no flow {flow!r}; there are: {there}")
    return names.index(flow), flow


def _no_trace(results: Results) -> NoPacketTraceError:
    location = f" in {results.path}" if results.path is not None else ""
    return NoPacketTraceError(
        f"no packet trace{location}: this plot needs packets.parquet; run the scenario "
        "again with packet_trace = true in the file or --set packet_trace=true"
    )


def _record_batches(results: Results, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The trace's rows, :data:`BATCH_ROWS` at a time, only ``columns`` (those present)."""
    path = packets_path(results)
    if path is not None:
        # pre_buffer=False: read column chunks as they are decoded, not whole row groups
        # ahead (which holds about a hundred MB more of the file in memory).
        with pq.ParquetFile(path, pre_buffer=False) as file:
            present = set(file.schema_arrow.names)
            wanted = [name for name in columns if name in present]
            yield from file.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False)
        return
    table = results.packets
    if table is None:
        raise _no_trace(results)
    wanted = [name for name in columns if name in table.column_names]
    yield from table.select(wanted).to_batches(max_chunksize=BATCH_ROWS)


def _duration(results: Results) -> float:
    """The run's length in seconds (the view of a whole-run time-sequence graph)."""
    duration = results.summary.get("duration_s")
    if isinstance(duration, int | float) and duration > 0:
        return float(duration)
    scenario_ns = results.scenario.get("duration")
    if isinstance(scenario_ns, int | float) and scenario_ns > 0:
        return float(scenario_ns) / 1e9
    last = 0.0
    for batch in _record_batches(results, ["t_s"]):
        if batch.num_rows:
            last = max(last, float(pc.max(batch.column("t_s")).as_py()))
    return last or 1.0


@dataclass(frozen=True)
class _Rows:
    """Rows of the trace, decoded: string columns become booleans (and codes)."""

    flow: np.ndarray
    t: np.ndarray
    data: np.ndarray
    send: np.ndarray
    deliver: np.ndarray
    drop: np.ndarray
    event_code: np.ndarray
    reasons: np.ndarray  # by event code: the drop reason, "" for other events
    seq: np.ndarray
    length: np.ndarray
    ack: np.ndarray
    wnd: np.ndarray
    ce: np.ndarray
    retx: np.ndarray
    sack_code: np.ndarray
    sacks: list[str]  # by sack code
    syn: np.ndarray
    fin: np.ndarray
    cwr: np.ndarray
    ece: np.ndarray

    def take(self, rows: np.ndarray) -> _Rows:
        """These rows only (the code tables stay whole)."""
        return replace(
            self,
            **{name: getattr(self, name)[rows] for name in _ROW_ARRAYS},
        )

    def __len__(self) -> int:
        return len(self.t)


#: The per-row fields of :class:`_Rows` (the others are code tables).
_ROW_ARRAYS = tuple(name for name in _Rows.__dataclass_fields__ if name not in ("reasons", "sacks"))


def _decode(batch: pa.RecordBatch) -> _Rows:
    n = batch.num_rows
    names = set(batch.schema.names)

    def strings(name: str) -> tuple[np.ndarray, list[str]]:
        if name not in names:
            return np.zeros(n, dtype=np.int64), [""]
        column = batch.column(name)
        if not pa.types.is_dictionary(column.type):
            column = column.dictionary_encode()
        values = ["" if v is None else str(v) for v in column.dictionary.to_pylist()]
        codes = column.indices.fill_null(len(values)).to_numpy(zero_copy_only=False)
        return np.asarray(codes, dtype=np.int64), [*values, ""]

    def where(name: str, test: Callable[[str], bool]) -> np.ndarray:
        codes, values = strings(name)
        hits = np.fromiter((test(v) for v in values), dtype=np.bool_, count=len(values))
        return np.asarray(hits[codes], dtype=np.bool_)

    def numbers(name: str, dtype: type) -> np.ndarray:
        if name not in names:
            return np.zeros(n, dtype=dtype)
        column = batch.column(name)
        if column.null_count:
            column = column.fill_null(pa.scalar(0).cast(column.type))
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)

    event_code, events = strings("event")
    sack_code, sacks = strings("sack")
    return _Rows(
        flow=numbers("flow", np.int64),
        t=numbers("t_s", np.float64),
        data=where("side", lambda s: s == "data"),
        send=where("event", lambda e: e == "send"),
        deliver=where("event", lambda e: e == "deliver"),
        drop=where("event", lambda e: e.startswith("drop:")),
        event_code=event_code,
        reasons=np.array([e.split(":", 1)[1] if e.startswith("drop:") else "" for e in events]),
        seq=numbers("seq", np.int64),
        length=numbers("len", np.int64),
        ack=numbers("ack", np.int64),
        wnd=numbers("wnd", np.int64),
        ce=where("ecn", lambda e: e == "ce"),
        retx=numbers("retransmission", np.bool_),
        sack_code=sack_code,
        sacks=sacks,
        syn=where("flags", lambda f: "S" in f),
        fin=where("flags", lambda f: "F" in f),
        cwr=where("flags", lambda f: "W" in f),
        ece=where("flags", lambda f: "E" in f),
    )


def _concat_rows(parts: Sequence[_Rows]) -> _Rows:
    """Join decoded rows of several batches (string codes re-based onto joined tables)."""
    if len(parts) == 1:
        return parts[0]
    event_offsets = np.cumsum([0, *(len(part.reasons) for part in parts)])
    sack_offsets = np.cumsum([0, *(len(part.sacks) for part in parts)])
    joined = {name: np.concatenate([getattr(part, name) for part in parts]) for name in _ROW_ARRAYS}
    joined["event_code"] = np.concatenate(
        [part.event_code + offset for part, offset in zip(parts, event_offsets, strict=False)]
    )
    joined["sack_code"] = np.concatenate(
        [part.sack_code + offset for part, offset in zip(parts, sack_offsets, strict=False)]
    )
    return replace(
        parts[0],
        reasons=np.concatenate([part.reasons for part in parts]),
        sacks=[value for part in parts for value in part.sacks],
        **joined,
    )


@dataclass(frozen=True)
class _Events:
    """One flow's events from one batch, sequence numbers relative (see FlowTrace)."""

    data_t: np.ndarray
    data_seq: np.ndarray
    data_len: np.ndarray
    data_retx: np.ndarray
    data_cwr: np.ndarray
    ce_t: np.ndarray
    ce_seq: np.ndarray
    ce_len: np.ndarray
    drop_t: np.ndarray
    drop_seq: np.ndarray
    drop_len: np.ndarray
    drop_reason: np.ndarray
    ack_t: np.ndarray
    ack: np.ndarray
    #: The highest cumulative ACK so far at each ACK (raw: the FIN counts).
    ack_line: np.ndarray
    #: ``ack_line`` with the FIN not counted and never below 0: bytes acknowledged.
    acked: np.ndarray
    ack_wnd: np.ndarray
    ack_ece: np.ndarray
    sack_t: np.ndarray
    sack_lo: np.ndarray
    sack_hi: np.ndarray


class _FlowScan:
    """One flow's rows, batch after batch in time order, turned into relative events."""

    def __init__(self, *, need_ce: bool, has_flags: bool) -> None:
        self.need_ce = need_ce
        self.has_flags = has_flags
        self.base: int | None = None
        self.fin: int | None = None
        self._held: list[_Rows] = []
        self._line: int | None = None
        # Segments sent and not yet acknowledged: where a CE-marked copy was sent.
        self._out_seq = np.array([], dtype=np.int64)
        self._out_end = np.array([], dtype=np.int64)
        self._out_t = np.array([], dtype=np.float64)

    def add(self, rows: _Rows) -> _Events | None:
        if self.base is None:
            sent = rows.data & rows.send
            if not sent.any():
                # Nothing sent by the data side yet: wait for the SYN to set the base, but
                # not for ever (a flow of datagrams never sends one).
                self._held.append(rows)
                if sum(len(held) for held in self._held) <= _HOLD_ROWS:
                    return None
                return self.close()
            rows = _concat_rows([*self._held, rows])
            self._held = []
            self.base = self._base(rows)
        return self._events(rows)

    def close(self) -> _Events | None:
        if not self._held:
            return None
        rows = _concat_rows(self._held)
        self._held = []
        self.base = 0
        return self._events(rows)

    def _base(self, rows: _Rows) -> int:
        sent = rows.data & rows.send
        syn = sent & rows.syn
        if syn.any():
            return int(rows.seq[syn][0]) + 1
        first = int(np.flatnonzero(sent)[0])
        # Without flags, a zero-length first packet is the SYN (or SYN-ACK).
        return int(rows.seq[first]) + (1 if rows.length[first] == 0 else 0)

    def _events(self, rows: _Rows) -> _Events:
        base = self.base or 0
        seq = rows.seq - base
        sent = rows.data & rows.send
        if self.fin is None:
            fin_rows = np.flatnonzero(sent & rows.fin)
            if len(fin_rows):
                # The FIN takes the sequence number after the segment's payload.
                first = fin_rows[0]
                self.fin = int(seq[first] + rows.length[first])

        payload = sent & (rows.length > 0)
        acks = ~rows.data & rows.deliver
        ack = rows.ack[acks] - base
        start = ack[:1] if self._line is None else np.array([self._line], dtype=np.int64)
        line = np.maximum.accumulate(np.concatenate([start, ack]))[1:] if len(ack) else ack
        if len(line):
            self._line = int(line[-1])
        acked = line if self.fin is None else np.minimum(line, self.fin)

        ce_t = ce_seq = ce_len = np.array([], dtype=np.float64)
        if self.need_ce:
            arrived_ce = rows.data & rows.deliver & rows.ce & (rows.length > 0)
            ce_seq, ce_len = seq[arrived_ce], rows.length[arrived_ce]
            ce_t = self._sent_at(rows.t[payload], seq[payload], rows.t[arrived_ce], ce_seq)
            self._remember(rows.t[payload], seq[payload], seq[payload] + rows.length[payload])

        dropped = rows.data & rows.drop & (rows.length > 0)
        sack_t, sack_lo, sack_hi = _sack_blocks(
            rows.t[acks], rows.sack_code[acks], rows.sacks, base
        )
        return _Events(
            data_t=rows.t[payload],
            data_seq=seq[payload],
            data_len=rows.length[payload],
            data_retx=rows.retx[payload],
            data_cwr=rows.cwr[payload],
            ce_t=np.asarray(ce_t, dtype=np.float64),
            ce_seq=np.asarray(ce_seq, dtype=np.int64),
            ce_len=np.asarray(ce_len, dtype=np.int64),
            drop_t=rows.t[dropped],
            drop_seq=seq[dropped],
            drop_len=rows.length[dropped],
            drop_reason=rows.reasons[rows.event_code[dropped]],
            ack_t=rows.t[acks],
            ack=ack,
            ack_line=line,
            acked=np.maximum(acked, 0),
            ack_wnd=rows.wnd[acks],
            ack_ece=rows.ece[acks],
            sack_t=sack_t,
            sack_lo=sack_lo,
            sack_hi=sack_hi,
        )

    def _sent_at(
        self, send_t: np.ndarray, send_seq: np.ndarray, at_t: np.ndarray, at_seq: np.ndarray
    ) -> np.ndarray:
        """When each arrival's copy was sent: among the segments still outstanding and
        those sent in this batch, the last send of its sequence number at or before it."""
        return _send_times(
            np.concatenate([self._out_t, send_t]),
            np.concatenate([self._out_seq, send_seq]),
            at_t,
            at_seq,
        )

    def _remember(self, t: np.ndarray, seq: np.ndarray, end: np.ndarray) -> None:
        """Add this batch's sends to the outstanding segments; forget the acknowledged."""
        all_seq = np.concatenate([self._out_seq, seq])
        all_end = np.concatenate([self._out_end, end])
        all_t = np.concatenate([self._out_t, t])
        # The last send of each sequence number (rows are in time order).
        order = np.lexsort((np.arange(len(all_seq)), all_seq))
        last = np.ones(len(order), dtype=bool)
        last[:-1] = all_seq[order][1:] != all_seq[order][:-1]
        keep = order[last]
        if self._line is not None:
            keep = keep[all_end[keep] > self._line]
        keep = keep[-_OUTSTANDING_CAP:]
        self._out_seq, self._out_end, self._out_t = all_seq[keep], all_end[keep], all_t[keep]


def _stream(
    results: Results, indices: Iterable[int], columns: Sequence[str], *, need_ce: bool
) -> Iterator[tuple[int, _Events, _FlowScan]]:
    """``(flow index, events, scan)`` for the given flows, batch after batch."""
    wanted = set(indices)
    scans: dict[int, _FlowScan] = {}
    has_flags: bool | None = None
    for batch in _record_batches(results, columns):
        if has_flags is None:
            has_flags = "flags" in batch.schema.names
        if not batch.num_rows:
            continue
        rows = _decode(batch)
        for index in sorted(wanted):
            mine = np.flatnonzero(rows.flow == index)
            if not len(mine):
                continue
            scan = scans.get(index)
            if scan is None:
                scan = scans[index] = _FlowScan(need_ce=need_ce, has_flags=has_flags)
            events = scan.add(rows.take(mine))
            if events is not None:
                yield index, events, scan
    for index, scan in scans.items():
        events = scan.close()
        if events is not None:
            yield index, events, scan


def _sack_blocks(
    t: np.ndarray, codes: np.ndarray, values: Sequence[str], base: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split ``"l-r;l-r"`` SACK strings into one row per block ``(t, lo, hi)``, relative.

    Each distinct string is parsed once; the rows are expanded with numpy.
    """
    used = np.unique(codes)
    counts = np.zeros(len(values), dtype=np.int64)
    los: list[int] = []
    his: list[int] = []
    offsets = np.zeros(len(values), dtype=np.int64)
    for code in used.tolist():
        offsets[code] = len(los)
        for block in values[code].split(";"):
            lo, sep, hi = block.partition("-")
            if sep and lo and hi:
                los.append(int(lo))
                his.append(int(hi))
                counts[code] += 1
    per_row = counts[codes]
    if not per_row.any():
        empty = np.array([], dtype=np.int64)
        return np.array([], dtype=np.float64), empty, empty
    starts = np.repeat(offsets[codes] - (np.cumsum(per_row) - per_row), per_row)
    flat = starts + np.arange(int(per_row.sum()))
    lo_all = np.array(los, dtype=np.int64)
    hi_all = np.array(his, dtype=np.int64)
    return np.repeat(t, per_row), lo_all[flat] - base, hi_all[flat] - base


def _send_times(
    send_t: np.ndarray, send_seq: np.ndarray, at_t: np.ndarray, at_seq: np.ndarray
) -> np.ndarray:
    """For each arrival ``(at_t, at_seq)``: when its copy was sent (the last send of that
    sequence number at or before the arrival); the arrival time if there is none."""
    if not len(at_t) or not len(send_t):
        return np.array(at_t, dtype=np.float64)
    # Rank every time on one scale, then sort sends by (seq, rank) and look arrivals up.
    times = np.concatenate([send_t, at_t])
    ranks = np.empty(len(times), dtype=np.int64)
    ranks[np.argsort(times, kind="stable")] = np.arange(len(times))
    width = len(times) + 1
    send_key = send_seq.astype(np.int64) * width + ranks[: len(send_t)]
    at_key = at_seq.astype(np.int64) * width + ranks[len(send_t) :]
    order = np.argsort(send_key, kind="stable")
    pos = np.searchsorted(send_key[order], at_key, side="right") - 1
    found = order[np.clip(pos, 0, None)]
    ok = (pos >= 0) & (send_seq[found] == at_seq) & (send_t[found] <= at_t)
    return np.where(ok, send_t[found], at_t)
