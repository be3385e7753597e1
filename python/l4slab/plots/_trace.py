"""The per-packet trace (packets.parquet), read as a stream, one flow at a time.

A trace can hold tens of millions of rows (one 600 s, 100 Mbit/s Reno flow: 15 M),
so nothing here holds it whole. The file is read batch by batch
(``ParquetFile.iter_batches``, :data:`BATCH_ROWS` rows at a time), only the columns
a consumer needs; rows of other flows are dropped at once, and each consumer
reduces as it goes:

* :func:`segment_rtt_distributions`: per-segment RTTs into a bounded histogram
  (:class:`~l4slab.plots.Distribution`, 0.1 % resolution), all flows in one pass;
* :func:`tsg_data`: what the time-sequence graph draws, each element exact up to
  a budget and decimated into time bins above it (:class:`TsgData`);
* :func:`first_event_time`: stops soon after the flow's first loss,
  retransmission or CE mark.

:func:`flow_trace` and :func:`segment_rtts` return arrays of one flow: their
memory grows with that flow's packets, not with the file.

A bundle on disk streams its ``packets.parquet``; results that were never saved
stream their in-memory table. Rows are in time order, as the simulator writes
them. Sequence numbers are made relative: 0 is the first payload byte (the SYN's
sequence number + 1), as in tcptrace. Nothing here draws.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from l4slab.plots._distribution import Distribution
from l4slab.results import PACKETS_FILE, Results
from l4slab.tables import flow_order

__all__ = [
    "BATCH_ROWS",
    "TSG_BINS",
    "TSG_MAX_EVENTS",
    "AckLine",
    "FlowTrace",
    "NoPacketTraceError",
    "Ticks",
    "TsgData",
    "first_event_time",
    "flow_trace",
    "has_packet_trace",
    "packets_path",
    "segment_rtt_distributions",
    "segment_rtts",
    "tsg_data",
]

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


# --------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class FlowTrace:
    """One flow's packets, by kind; every ``*_t`` is in seconds, sequence numbers relative.

    ``data_*``: data-direction packets with payload sent by the sender (``data_retx``
    marks retransmissions, ``data_cwr`` the CWR flag); ``ce_*``: data packets that
    arrived CE-marked, by the time their copy was sent; ``drop_*``: data packets dropped
    in the network, at the drop; ``ack_*``: ACKs as they reached the sender (``ack_ece``
    the ECE flag), with the cumulative ACK, the receive window and SACK blocks
    (``sack_t``, ``sack_lo``, ``sack_hi``, one row per block).
    """

    name: str
    base: int
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
    drop_reason: list[str]
    ack_t: np.ndarray
    ack: np.ndarray
    ack_wnd: np.ndarray
    ack_ece: np.ndarray
    sack_t: np.ndarray
    sack_lo: np.ndarray
    sack_hi: np.ndarray
    has_flags: bool
    fin: int | None

    @property
    def acked(self) -> np.ndarray:
        """The cumulative ACK line: bytes acknowledged, non-decreasing, FIN not counted."""
        if not len(self.ack):
            return self.ack
        line = np.maximum.accumulate(self.ack)
        if self.fin is not None:
            line = np.minimum(line, self.fin)
        return np.maximum(line, 0)


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


def has_packet_trace(results: Results) -> bool:
    """Whether ``results`` have a per-packet trace, on disk or in memory (reads no rows)."""
    return packets_path(results) is not None or results.packets is not None


def flow_trace(results: Results, flow: str | int) -> FlowTrace:
    """Decode the packets of one flow (by name or by its index in the scenario).

    Memory grows with the flow's packets (about 100 bytes per packet event); to draw
    a long flow use :func:`tsg_data`, which bounds it.
    """
    index, name = _flow(results, flow)
    exact = _Exact()
    scan: _FlowScan | None = None
    for _, events, current in _stream(results, [index], _ALL_COLUMNS, need_ce=True):
        exact.add(events)
        scan = current
    if scan is None:
        return exact.trace(name, 0, None, False)
    return exact.trace(name, scan.base or 0, scan.fin, scan.has_flags)


def segment_rtts(results: Results, flow: str | int) -> tuple[np.ndarray, np.ndarray]:
    """Per-segment RTT samples of a flow from the packet trace: ``(send_t_s, rtt_ms)``.

    For each data segment sent once (Karn: segments with a retransmitted copy are
    skipped), the time from its send to the arrival at the sender of the first ACK
    that covers it, cumulatively or by a SACK block. This is what the sender
    measures, delayed ACKs included. Segments never acknowledged have no sample.
    Samples are in the order of their send times. Memory grows with the flow's
    segments; :func:`segment_rtt_distributions` does not.
    """
    index, _ = _flow(results, flow)
    times: list[np.ndarray] = []
    rtts: list[np.ndarray] = []

    def sink(t: np.ndarray, rtt: np.ndarray) -> None:
        times.append(t)
        rtts.append(rtt)

    reducer = _SegmentRtt(sink)
    for _, events, _scan in _stream(results, [index], _RTT_COLUMNS, need_ce=False):
        reducer.add(events)
    reducer.close()
    t = np.concatenate(times) if times else np.array([], dtype=np.float64)
    rtt = np.concatenate(rtts) if rtts else np.array([], dtype=np.float64)
    order = np.argsort(t, kind="stable")
    return t[order], rtt[order]


def segment_rtt_distributions(
    results: Results, flows: Sequence[str] | None = None
) -> dict[str, Distribution]:
    """Per-segment RTT samples (ms, as :func:`segment_rtts`) of each flow, as histograms.

    One pass over the trace for all ``flows`` (default: every flow); memory is bounded
    whatever the trace's length (see :class:`~l4slab.plots.Distribution`).
    """
    names = list(flows) if flows is not None else flow_order(results.summary)
    indices = {_flow(results, name)[0]: name for name in names}
    dists = {name: Distribution() for name in names}
    reducers = {index: _SegmentRtt(_adder(dists[name])) for index, name in indices.items()}
    for index, events, _ in _stream(results, list(indices), _RTT_COLUMNS, need_ce=False):
        reducers[index].add(events)
    for reducer in reducers.values():
        reducer.close()
    return dists


def first_event_time(results: Results, flow: str | int) -> float | None:
    """When the flow first lost a packet, retransmitted, or had a packet CE-marked (the
    send time of the marked copy); ``None`` when none of these happened.

    Reads the trace only until shortly after the first such event.
    """
    index, _ = _flow(results, flow)
    found: float | None = None
    after = 0
    for _, events, _scan in _stream(results, [index], _ALL_COLUMNS, need_ce=True):
        times = [events.data_t[events.data_retx], events.drop_t, events.ce_t]
        first = min((float(t.min()) for t in times if len(t)), default=None)
        if first is not None:
            found = first if found is None else min(found, first)
        if found is not None:
            # A CE mark seen in the next batch may have been sent before: look once more.
            after += 1
            if after > 1:
                break
    return found


@dataclass(frozen=True)
class Ticks:
    """One element of the time-sequence graph: vertical ticks from ``lo`` to ``hi`` at ``t``.

    Exact (``bin_s`` is ``None``): one tick per event. Decimated: one tick per time bin
    of ``bin_s`` seconds that had events, from the lowest ``lo`` to the highest ``hi``
    of the bin's events, at the bin's middle. ``total`` counts the events in view.
    """

    t: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    total: int
    bin_s: float | None = None

    @property
    def decimated(self) -> bool:
        return self.bin_s is not None


@dataclass(frozen=True)
class AckLine:
    """The cumulative ACK line and the receive-window line (ACK + advertised window).

    Exact: a point per ACK reaching the sender. Decimated (``bin_s`` set): the first
    and the last ACK of each time bin, which draw the same step line at the figure's
    resolution (the ACK line never goes down). ``total`` counts the ACKs in view.
    """

    t: np.ndarray
    acked: np.ndarray
    window: np.ndarray
    total: int
    bin_s: float | None = None

    @property
    def decimated(self) -> bool:
        return self.bin_s is not None


@dataclass(frozen=True)
class TsgData:
    """What the time-sequence graph of one flow draws (see :func:`tsg_data`)."""

    name: str
    t_range: tuple[float, float] | None
    has_flags: bool
    data: Ticks
    retransmissions: Ticks
    ce: Ticks
    drops: Ticks
    sacks: Ticks
    cwr: Ticks
    ece: Ticks
    acks: AckLine
    max_events: int
    bins: int

    @property
    def decimated(self) -> list[str]:
        """Names of the elements drawn decimated (empty when all is exact)."""
        elements: dict[str, Ticks | AckLine] = {
            "data": self.data,
            "retransmissions": self.retransmissions,
            "ce": self.ce,
            "drops": self.drops,
            "sacks": self.sacks,
            "cwr": self.cwr,
            "ece": self.ece,
            "acks": self.acks,
        }
        return [name for name, element in elements.items() if element.decimated]


def tsg_data(
    results: Results,
    flow: str | int,
    t_range: tuple[float, float] | None = None,
    *,
    max_events: int = TSG_MAX_EVENTS,
    bins: int = TSG_BINS,
) -> TsgData:
    """The elements of a flow's time-sequence graph, in bounded memory.

    Each element (data segments, retransmissions, CE marks, drops, SACK blocks, CWR,
    ECE, the ACK line) is exact while at most ``max_events`` of it fall in view
    (``t_range``, default the whole run); above that it is decimated into ``bins``
    time bins across the view (see :class:`Ticks` and :class:`AckLine`). So a short
    flow, or a zoom into a long one, is drawn packet by packet, and a 10-minute flow
    as the envelope of what was sent and acknowledged, with its rare events exact.
    """
    index, name = _flow(results, flow)
    span = t_range if t_range is not None else (0.0, _duration(results))
    reducer = _TsgReducer(_Bins(span[0], span[1], bins), max_events, t_range)
    has_flags = False
    for _, events, scan in _stream(results, [index], _ALL_COLUMNS, need_ce=True):
        reducer.add(events)
        has_flags = scan.has_flags
    return reducer.result(name, has_flags, max_events, bins)


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


# --------------------------------------------------------------------------- reducers


def _adder(dist: Distribution) -> Callable[[np.ndarray, np.ndarray], None]:
    def add(_t: np.ndarray, rtt: np.ndarray) -> None:
        dist.add(rtt)

    return add


class _SegmentRtt:
    """Per-segment RTT samples (the rule of :func:`segment_rtts`), as the events stream.

    Keeps the segments sent once and not yet cumulatively acknowledged (about a
    window), sorted by sequence number, with the first SACK that covered each. A
    segment's sample is final when the cumulative ACK passes it (the sender never
    retransmits below it); a retransmission before that removes it (Karn).
    """

    def __init__(self, sink: Callable[[np.ndarray, np.ndarray], None]) -> None:
        self.sink = sink
        self.seq = np.array([], dtype=np.int64)
        self.end = np.array([], dtype=np.int64)
        self.t = np.array([], dtype=np.float64)
        self.sacked = np.array([], dtype=np.float64)
        self.line: int | None = None

    def add(self, ev: _Events) -> None:
        original = ~ev.data_retx
        seq = ev.data_seq[original]
        end = seq + ev.data_len[original]
        t = ev.data_t[original]
        if self.line is not None:
            # Acknowledged before it was sent (not a new segment): no sample.
            new = end > self.line
            seq, end, t = seq[new], end[new], t[new]
        self.seq = np.concatenate([self.seq, seq])
        self.end = np.concatenate([self.end, end])
        self.t = np.concatenate([self.t, t])
        self.sacked = np.concatenate([self.sacked, np.full(len(seq), np.inf)])
        if len(self.seq) > 1 and np.any(np.diff(self.seq) < 0):
            self._keep(np.argsort(self.seq, kind="stable"))
        retransmitted = ev.data_seq[ev.data_retx]
        if len(retransmitted) and len(self.seq):
            self._keep(np.flatnonzero(~np.isin(self.seq, retransmitted)))
        for at, lo, hi in zip(
            ev.sack_t.tolist(), ev.sack_lo.tolist(), ev.sack_hi.tolist(), strict=True
        ):
            start = int(np.searchsorted(self.seq, lo, side="left"))
            stop = int(np.searchsorted(self.seq, hi, side="left"))
            if stop > start:
                inside = start + np.flatnonzero(self.end[start:stop] <= hi)
                self.sacked[inside] = np.minimum(self.sacked[inside], at)
        if len(ev.ack_line):
            self.line = int(ev.ack_line[-1])
            first = np.searchsorted(ev.ack_line, self.end, side="left")
            hit = first < len(ev.ack_line)
            covered = np.minimum(self.sacked[hit], ev.ack_t[first[hit]])
            self._emit(self.t[hit], covered)
            self._keep(np.flatnonzero(~hit))

    def close(self) -> None:
        """Segments covered by a SACK but never by the cumulative ACK still count."""
        sacked = np.isfinite(self.sacked)
        self._emit(self.t[sacked], self.sacked[sacked])
        self._keep(np.array([], dtype=np.int64))

    def _emit(self, sent: np.ndarray, covered: np.ndarray) -> None:
        ok = covered >= sent
        if ok.any():
            self.sink(sent[ok], (covered[ok] - sent[ok]) * 1e3)

    def _keep(self, rows: np.ndarray) -> None:
        self.seq, self.end = self.seq[rows], self.end[rows]
        self.t, self.sacked = self.t[rows], self.sacked[rows]


class _Exact:
    """Every event of a flow, kept (for :func:`flow_trace`)."""

    def __init__(self) -> None:
        self.parts: list[_Events] = []

    def add(self, events: _Events) -> None:
        self.parts.append(events)

    def trace(self, name: str, base: int, fin: int | None, has_flags: bool) -> FlowTrace:
        def cat(attr: str, dtype: type) -> np.ndarray:
            arrays = [getattr(part, attr) for part in self.parts]
            return np.concatenate(arrays).astype(dtype) if arrays else np.array([], dtype=dtype)

        return FlowTrace(
            name=name,
            base=base,
            data_t=cat("data_t", np.float64),
            data_seq=cat("data_seq", np.int64),
            data_len=cat("data_len", np.int64),
            data_retx=cat("data_retx", np.bool_),
            data_cwr=cat("data_cwr", np.bool_),
            ce_t=cat("ce_t", np.float64),
            ce_seq=cat("ce_seq", np.int64),
            ce_len=cat("ce_len", np.int64),
            drop_t=cat("drop_t", np.float64),
            drop_seq=cat("drop_seq", np.int64),
            drop_len=cat("drop_len", np.int64),
            drop_reason=[str(r) for part in self.parts for r in part.drop_reason],
            ack_t=cat("ack_t", np.float64),
            ack=cat("ack", np.int64),
            ack_wnd=cat("ack_wnd", np.int64),
            ack_ece=cat("ack_ece", np.bool_),
            sack_t=cat("sack_t", np.float64),
            sack_lo=cat("sack_lo", np.int64),
            sack_hi=cat("sack_hi", np.int64),
            has_flags=has_flags,
            fin=fin,
        )


@dataclass(frozen=True)
class _Bins:
    """``count`` equal time bins from ``start`` to ``stop`` (times outside: the end bins)."""

    start: float
    stop: float
    count: int

    @property
    def width(self) -> float:
        return max(self.stop - self.start, 1e-9) / self.count

    def index(self, t: np.ndarray) -> np.ndarray:
        where = np.floor((t - self.start) / self.width)
        return np.clip(where, 0, self.count - 1).astype(np.int64)

    def middle(self, index: np.ndarray) -> np.ndarray:
        return self.start + (index + 0.5) * self.width


@dataclass
class _Capped:
    """Ticks kept exactly up to ``cap``, then as a per-bin range (see :class:`Ticks`)."""

    cap: int
    bins: _Bins
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    total: int = 0
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    def add(self, t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        if not len(t):
            return
        self.total += len(t)
        if self.lo is None:
            self.parts.append((t, lo, hi))
            if self.total <= self.cap:
                return
            self.lo = np.full(self.bins.count, np.inf)
            self.hi = np.full(self.bins.count, -np.inf)
            parts, self.parts = self.parts, []
            for part in parts:
                self._bin(*part)
        else:
            self._bin(t, lo, hi)

    def _bin(self, t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        assert self.lo is not None and self.hi is not None
        index = self.bins.index(t)
        np.minimum.at(self.lo, index, lo.astype(np.float64))
        np.maximum.at(self.hi, index, hi.astype(np.float64))

    def result(self) -> Ticks:
        if self.lo is None or self.hi is None:
            t, lo, hi = (
                np.concatenate([part[i] for part in self.parts]).astype(np.float64)
                if self.parts
                else np.array([], dtype=np.float64)
                for i in (0, 1, 2)
            )
            return Ticks(t, lo, hi, self.total)
        used = np.flatnonzero(np.isfinite(self.lo))
        return Ticks(
            self.bins.middle(used), self.lo[used], self.hi[used], self.total, self.bins.width
        )


@dataclass
class _AckCapped:
    """The ACK line kept exactly up to ``cap`` ACKs, then as each bin's first and last ACK."""

    cap: int
    bins: _Bins
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    total: int = 0
    # Per bin: time, acked and window of the first and of the last ACK (NaN: none yet).
    first: np.ndarray | None = None
    last: np.ndarray | None = None

    def add(self, t: np.ndarray, acked: np.ndarray, window: np.ndarray) -> None:
        if not len(t):
            return
        self.total += len(t)
        if self.first is None:
            self.parts.append((t, acked, window))
            if self.total <= self.cap:
                return
            self.first = np.full((3, self.bins.count), np.nan)
            self.last = np.full((3, self.bins.count), np.nan)
            parts, self.parts = self.parts, []
            for part in parts:
                self._bin(*part)
        else:
            self._bin(t, acked, window)

    def _bin(self, t: np.ndarray, acked: np.ndarray, window: np.ndarray) -> None:
        assert self.first is not None and self.last is not None
        index = self.bins.index(t)
        values = np.vstack([t, acked.astype(np.float64), window.astype(np.float64)])
        # Times are in order, so each bin's rows are contiguous.
        bins, starts = np.unique(index, return_index=True)
        ends = np.append(starts[1:], len(index)) - 1
        fresh = np.isnan(self.first[0, bins])
        self.first[:, bins[fresh]] = values[:, starts[fresh]]
        self.last[:, bins] = values[:, ends]

    def result(self) -> AckLine:
        if self.first is None or self.last is None:
            t, acked, window = (
                np.concatenate([part[i] for part in self.parts])
                if self.parts
                else np.array([], dtype=np.float64)
                for i in (0, 1, 2)
            )
            return AckLine(t, acked, window, self.total)
        used = np.flatnonzero(~np.isnan(self.first[0]))
        points = np.stack([self.first[:, used], self.last[:, used]], axis=2).reshape(3, -1)
        return AckLine(points[0], points[1], points[2], self.total, self.bins.width)


class _TsgReducer:
    """Collects a time-sequence graph's elements in view, each capped (see tsg_data)."""

    def __init__(self, bins: _Bins, cap: int, t_range: tuple[float, float] | None) -> None:
        self.t_range = t_range
        self.data = _Capped(cap, bins)
        self.retx = _Capped(cap, bins)
        self.ce = _Capped(cap, bins)
        self.drops = _Capped(cap, bins)
        self.sacks = _Capped(cap, bins)
        self.cwr = _Capped(cap, bins)
        self.ece = _Capped(cap, bins)
        self.acks = _AckCapped(cap, bins)
        # The ACK in force when the view begins: (t, acked, window, ece).
        self.before: tuple[float, float, float, bool] | None = None

    def _view(self, t: np.ndarray) -> np.ndarray:
        if self.t_range is None:
            return np.ones(len(t), dtype=bool)
        return (t >= self.t_range[0]) & (t <= self.t_range[1])

    def add(self, ev: _Events) -> None:
        shown = self._view(ev.data_t)
        end = ev.data_seq + ev.data_len
        original, retx = shown & ~ev.data_retx, shown & ev.data_retx
        self.data.add(ev.data_t[original], ev.data_seq[original], end[original])
        self.retx.add(ev.data_t[retx], ev.data_seq[retx], end[retx])
        cwr = shown & ev.data_cwr
        self.cwr.add(ev.data_t[cwr], ev.data_seq[cwr], ev.data_seq[cwr])
        ce = self._view(ev.ce_t)
        self.ce.add(ev.ce_t[ce], ev.ce_seq[ce], ev.ce_seq[ce] + ev.ce_len[ce])
        drops = self._view(ev.drop_t)
        self.drops.add(
            ev.drop_t[drops], ev.drop_seq[drops], ev.drop_seq[drops] + ev.drop_len[drops]
        )
        sacks = self._view(ev.sack_t)
        self.sacks.add(ev.sack_t[sacks], ev.sack_lo[sacks], ev.sack_hi[sacks])

        window = ev.acked + ev.ack_wnd
        acks = self._view(ev.ack_t)
        if self.t_range is not None:
            earlier = np.flatnonzero(ev.ack_t < self.t_range[0])
            if len(earlier):
                i = earlier[-1]
                self.before = (
                    float(ev.ack_t[i]),
                    float(ev.acked[i]),
                    float(window[i]),
                    bool(ev.ack_ece[i]),
                )
        self.acks.add(ev.ack_t[acks], ev.acked[acks], window[acks])
        ece = acks & ev.ack_ece
        self.ece.add(ev.ack_t[ece], ev.acked[ece], ev.acked[ece])

    def result(self, name: str, has_flags: bool, max_events: int, bins: int) -> TsgData:
        acks, ece = self.acks.result(), self.ece.result()
        if self.before is not None and not acks.decimated:
            # Start the line at the ACK in force when the range begins.
            t, acked, window, flagged = self.before
            acks = AckLine(
                np.insert(acks.t, 0, t),
                np.insert(acks.acked, 0, acked),
                np.insert(acks.window, 0, window),
                acks.total + 1,
            )
            if flagged and not ece.decimated:
                ece = Ticks(
                    np.insert(ece.t, 0, t),
                    np.insert(ece.lo, 0, acked),
                    np.insert(ece.hi, 0, acked),
                    ece.total + 1,
                )
        return TsgData(
            name=name,
            t_range=self.t_range,
            has_flags=has_flags,
            data=self.data.result(),
            retransmissions=self.retx.result(),
            ce=self.ce.result(),
            drops=self.drops.result(),
            sacks=self.sacks.result(),
            cwr=self.cwr.result(),
            ece=ece,
            acks=acks,
            max_events=max_events,
            bins=bins,
        )
