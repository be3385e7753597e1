"""Reducers of a streamed packet trace for :mod:`l4slab.plots._trace`: each takes a
flow's events batch by batch and keeps a bounded summary (a histogram of per-segment
RTTs, the time-sequence graph's elements exact up to a budget, decimated above it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from l4slab.plots._distribution import Distribution
from l4slab.plots._trace_read import _Events

# --------------------------------------------------------------------------- what they give


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


class _MaybeDecimated:
    """What :class:`Ticks` and :class:`AckLine` say of themselves: decimated when binned."""

    bin_s: float | None

    @property
    def decimated(self) -> bool:
        return self.bin_s is not None


@dataclass(frozen=True)
class Ticks(_MaybeDecimated):
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


@dataclass(frozen=True)
class AckLine(_MaybeDecimated):
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
        elements = ((f.name, getattr(self, f.name)) for f in fields(self))
        return [
            name
            for name, element in elements
            if isinstance(element, _MaybeDecimated) and element.decimated
        ]


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


_Parts = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _CapOrBin:
    """Rows of three columns kept exactly up to ``cap``, then reduced per time bin: what
    :class:`_Capped` (ticks) and :class:`_AckCapped` (the ACK line) share."""

    cap: int
    bins: _Bins
    parts: list[_Parts] = field(default_factory=list)
    total: int = 0
    binned: bool = False

    def add(self, t: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        if not len(t):
            return
        self.total += len(t)
        if self.binned:
            self._bin(t, a, b)
            return
        self.parts.append((t, a, b))
        if self.total <= self.cap:
            return
        self.binned = True
        self._start_bins()
        parts, self.parts = self.parts, []
        for part in parts:
            self._bin(*part)

    def _exact(self) -> _Parts:
        """The rows kept, each column concatenated."""
        t, a, b = (
            np.concatenate([part[i] for part in self.parts])
            if self.parts
            else np.array([], dtype=np.float64)
            for i in (0, 1, 2)
        )
        return t, a, b

    def _start_bins(self) -> None:
        raise NotImplementedError

    def _bin(self, t: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        raise NotImplementedError


@dataclass
class _Capped(_CapOrBin):
    """Ticks kept exactly up to ``cap``, then as a per-bin range (see :class:`Ticks`)."""

    lo: np.ndarray = field(default_factory=lambda: np.empty(0))
    hi: np.ndarray = field(default_factory=lambda: np.empty(0))

    def _start_bins(self) -> None:
        self.lo = np.full(self.bins.count, np.inf)
        self.hi = np.full(self.bins.count, -np.inf)

    def _bin(self, t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        index = self.bins.index(t)
        np.minimum.at(self.lo, index, lo.astype(np.float64))
        np.maximum.at(self.hi, index, hi.astype(np.float64))

    def result(self) -> Ticks:
        if not self.binned:
            t, lo, hi = (column.astype(np.float64) for column in self._exact())
            return Ticks(t, lo, hi, self.total)
        used = np.flatnonzero(np.isfinite(self.lo))
        return Ticks(
            self.bins.middle(used), self.lo[used], self.hi[used], self.total, self.bins.width
        )


@dataclass
class _AckCapped(_CapOrBin):
    """The ACK line kept exactly up to ``cap`` ACKs, then as each bin's first and last ACK."""

    # Per bin: time, acked and window of the first and of the last ACK (NaN: none yet).
    first: np.ndarray = field(default_factory=lambda: np.empty((3, 0)))
    last: np.ndarray = field(default_factory=lambda: np.empty((3, 0)))

    def _start_bins(self) -> None:
        self.first = np.full((3, self.bins.count), np.nan)
        self.last = np.full((3, self.bins.count), np.nan)

    def _bin(self, t: np.ndarray, acked: np.ndarray, window: np.ndarray) -> None:
        index = self.bins.index(t)
        values = np.vstack([t, acked.astype(np.float64), window.astype(np.float64)])
        # Times are in order, so each bin's rows are contiguous.
        bins, starts = np.unique(index, return_index=True)
        ends = np.append(starts[1:], len(index)) - 1
        fresh = np.isnan(self.first[0, bins])
        self.first[:, bins[fresh]] = values[:, starts[fresh]]
        self.last[:, bins] = values[:, ends]

    def result(self) -> AckLine:
        if not self.binned:
            return AckLine(*self._exact(), self.total)
        used = np.flatnonzero(~np.isnan(self.first[0]))
        points = np.stack([self.first[:, used], self.last[:, used]], axis=2).reshape(3, -1)
        return AckLine(points[0], points[1], points[2], self.total, self.bins.width)


class _TsgReducer:
    """Collects a time-sequence graph's elements in view, each capped (see tsg_data)."""

    def __init__(self, bins: _Bins, cap: int, t_range: tuple[float, float] | None) -> None:
        self.t_range = t_range
        self.data, self.retx, self.ce, self.drops, self.sacks, self.cwr, self.ece = (
            _Capped(cap, bins) for _ in range(7)
        )
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
