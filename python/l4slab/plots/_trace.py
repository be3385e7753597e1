"""The per-packet trace (packets.parquet) of one flow, decoded into numpy arrays.

Sequence numbers are made relative: 0 is the first payload byte (the SYN's
sequence number + 1), as in tcptrace. Nothing here draws.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from l4slab.results import Results
from l4slab.tables import flow_order

__all__ = ["FlowTrace", "NoPacketTraceError", "flow_trace", "segment_rtts"]


class NoPacketTraceError(ValueError):
    """The results have no per-packet trace (the scenario did not set ``packet_trace``)."""


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


@dataclass(frozen=True)
class _Columns:
    """The whole trace, decoded once per Results."""

    t: np.ndarray
    flow: np.ndarray
    send: np.ndarray
    deliver: np.ndarray
    drop: np.ndarray
    reason: np.ndarray  # object array: the drop reason, "" otherwise
    data: np.ndarray
    seq: np.ndarray
    length: np.ndarray
    ack: np.ndarray
    wnd: np.ndarray
    ce: np.ndarray
    retx: np.ndarray
    sack: np.ndarray  # object array of "l-r;l-r" strings
    syn: np.ndarray
    fin: np.ndarray
    cwr: np.ndarray
    ece: np.ndarray
    has_flags: bool


_CACHE: weakref.WeakKeyDictionary[Results, _Columns] = weakref.WeakKeyDictionary()


def flow_trace(results: Results, flow: str | int) -> FlowTrace:
    """Decode the packets of one flow (by name or by its index in the scenario)."""
    names = flow_order(results.summary)
    if isinstance(flow, int):
        if not 0 <= flow < len(names):
            raise KeyError(f"no flow number {flow}; there are {len(names)} flows")
        index, name = flow, names[flow]
    else:
        if flow not in names:
            there = ", ".join(repr(n) for n in names) or "none"
            raise KeyError(f"no flow {flow!r}; there are: {there}")
        index, name = names.index(flow), flow
    cols = _columns(results)
    mine = cols.flow == index
    data, acks = mine & cols.data, mine & ~cols.data

    sent = data & cols.send
    syn = sent & cols.syn
    if syn.any():
        base = int(cols.seq[syn][0]) + 1
    elif sent.any():
        first = int(np.flatnonzero(sent)[0])
        # Without flags, a zero-length first packet is the SYN (or SYN-ACK).
        base = int(cols.seq[first]) + (1 if cols.length[first] == 0 else 0)
    else:
        base = 0
    fin_rows = sent & cols.fin
    # The FIN takes the sequence number after the segment's payload.
    fin_at = np.flatnonzero(fin_rows)
    fin = int(cols.seq[fin_at[0]] + cols.length[fin_at[0]]) - base if len(fin_at) else None

    payload = sent & (cols.length > 0)
    arrived_ce = data & cols.deliver & cols.ce & (cols.length > 0)
    ce_t = _send_times(cols.t[payload], cols.seq[payload], cols.t[arrived_ce], cols.seq[arrived_ce])
    dropped = data & cols.drop & (cols.length > 0)
    ack_rows = acks & cols.deliver
    sack_t, sack_lo, sack_hi = _sack_blocks(cols.t[ack_rows], cols.sack[ack_rows])
    return FlowTrace(
        name=name,
        base=base,
        data_t=cols.t[payload],
        data_seq=cols.seq[payload] - base,
        data_len=cols.length[payload],
        data_retx=cols.retx[payload],
        data_cwr=cols.cwr[payload],
        ce_t=ce_t,
        ce_seq=cols.seq[arrived_ce] - base,
        ce_len=cols.length[arrived_ce],
        drop_t=cols.t[dropped],
        drop_seq=cols.seq[dropped] - base,
        drop_len=cols.length[dropped],
        drop_reason=[str(r) for r in cols.reason[dropped]],
        ack_t=cols.t[ack_rows],
        ack=cols.ack[ack_rows] - base,
        ack_wnd=cols.wnd[ack_rows],
        ack_ece=cols.ece[ack_rows],
        sack_t=sack_t,
        sack_lo=sack_lo - base,
        sack_hi=sack_hi - base,
        has_flags=cols.has_flags,
        fin=fin,
    )


def segment_rtts(results: Results, flow: str | int) -> tuple[np.ndarray, np.ndarray]:
    """Per-segment RTT samples of a flow from the packet trace: ``(send_t_s, rtt_ms)``.

    For each data segment sent once (Karn: segments with a retransmitted copy are
    skipped), the time from its send to the arrival at the sender of the first ACK
    that covers it, cumulatively or by a SACK block. This is what the sender
    measures, delayed ACKs included. Segments never acknowledged have no sample.
    """
    trace = flow_trace(results, flow)
    t, seq, end = trace.data_t, trace.data_seq, trace.data_seq + trace.data_len
    retransmitted = np.isin(seq, seq[trace.data_retx])
    once = ~retransmitted
    t, seq, end = t[once], seq[once], end[once]
    covered = np.full(len(t), np.inf)
    if len(trace.ack) and len(t):
        line = np.maximum.accumulate(trace.ack)
        first = np.searchsorted(line, end, side="left")
        hit = first < len(line)
        covered[hit] = trace.ack_t[first[hit]]
    if len(trace.sack_t) and len(t):
        order = np.argsort(seq, kind="stable")
        sorted_seq, sorted_end = seq[order], end[order]
        for at, lo, hi in zip(
            trace.sack_t.tolist(), trace.sack_lo.tolist(), trace.sack_hi.tolist(), strict=True
        ):
            start = int(np.searchsorted(sorted_seq, lo, side="left"))
            stop = int(np.searchsorted(sorted_seq, hi, side="left"))
            if stop <= start:
                continue
            rows = order[start:stop][sorted_end[start:stop] <= hi]
            covered[rows] = np.minimum(covered[rows], at)
    ok = np.isfinite(covered) & (covered >= t)
    return t[ok], (covered[ok] - t[ok]) * 1e3


# --------------------------------------------------------------------------- decoding


def _columns(results: Results) -> _Columns:
    cached = _CACHE.get(results)
    if cached is not None:
        return cached
    table = results.packets
    if table is None:
        location = f" in {results.path}" if results.path is not None else ""
        raise NoPacketTraceError(
            f"no packet trace{location}: this plot needs packets.parquet; run the scenario "
            "again with packet_trace = true in the file or --set packet_trace=true"
        )
    table = table.combine_chunks()
    names = set(table.column_names)

    def strings(name: str) -> tuple[np.ndarray, list[str]]:
        if name not in names:
            return np.zeros(table.num_rows, dtype=np.int64), [""]
        array = table.column(name)
        chunk = array.chunk(0) if array.num_chunks else pa.array([], type=pa.string())
        if not pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_encode()
        codes = chunk.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        return codes, [str(v) if v is not None else "" for v in chunk.dictionary.to_pylist()]

    def where(name: str, test: Callable[[str], bool]) -> np.ndarray:
        codes, values = strings(name)
        hits = np.fromiter((test(v) for v in values), dtype=np.bool_, count=len(values))
        return hits[codes] if len(values) else np.zeros(len(codes), dtype=np.bool_)

    def ints(name: str) -> np.ndarray:
        if name not in names:
            return np.zeros(table.num_rows, dtype=np.int64)
        return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.int64)

    event_codes, events = strings("event")
    reasons = np.array([e.removeprefix("drop:") if e.startswith("drop:") else "" for e in events])
    sack_codes, sacks = strings("sack")
    has_flags = "flags" in names
    retx = (
        np.asarray(table.column("retransmission").to_numpy(zero_copy_only=False), dtype=bool)
        if "retransmission" in names
        else np.zeros(table.num_rows, dtype=bool)
    )
    cols = _Columns(
        t=np.asarray(table.column("t_s").to_numpy(zero_copy_only=False), dtype=np.float64),
        flow=ints("flow"),
        send=where("event", lambda e: e == "send"),
        deliver=where("event", lambda e: e == "deliver"),
        drop=where("event", lambda e: e.startswith("drop:")),
        reason=reasons[event_codes] if len(reasons) else np.array([], dtype=object),
        data=where("side", lambda s: s == "data"),
        seq=ints("seq"),
        length=ints("len"),
        ack=ints("ack"),
        wnd=ints("wnd"),
        ce=where("ecn", lambda e: e == "ce"),
        retx=retx,
        sack=np.array(sacks, dtype=object)[sack_codes],
        syn=where("flags", lambda f: "S" in f),
        fin=where("flags", lambda f: "F" in f),
        cwr=where("flags", lambda f: "W" in f),
        ece=where("flags", lambda f: "E" in f),
        has_flags=has_flags,
    )
    _CACHE[results] = cols
    return cols


def _sack_blocks(t: np.ndarray, sack: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split ``"l-r;l-r"`` SACK strings into one row per block."""
    times: list[float] = []
    los: list[int] = []
    his: list[int] = []
    for row in np.flatnonzero(sack != "").tolist():
        for block in str(sack[row]).split(";"):
            lo, sep, hi = block.partition("-")
            if not sep:
                continue
            times.append(float(t[row]))
            los.append(int(lo))
            his.append(int(hi))
    return (
        np.array(times, dtype=np.float64),
        np.array(los, dtype=np.int64),
        np.array(his, dtype=np.int64),
    )


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
