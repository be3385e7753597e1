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

from collections.abc import Sequence

import numpy as np

from l4slab.plots._distribution import Distribution
from l4slab.plots._trace_read import (
    _ALL_COLUMNS,
    _RTT_COLUMNS,
    BATCH_ROWS,
    TSG_BINS,
    TSG_MAX_EVENTS,
    NoPacketTraceError,
    _duration,
    _flow,
    _FlowScan,
    _stream,
    packets_path,
)
from l4slab.plots._trace_reduce import (
    AckLine,
    FlowTrace,
    Ticks,
    TsgData,
    _adder,
    _Bins,
    _Exact,
    _SegmentRtt,
    _TsgReducer,
)
from l4slab.results import Results
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

# --------------------------------------------------------------------------- public API


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
