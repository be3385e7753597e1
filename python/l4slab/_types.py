"""Shapes of the data that crosses the boundary with the native module, and small
shapes several modules share.

The ``TypedDict``s describe what ``l4slab._native.run`` returns (see
``_native.pyi``): the native module builds ordinary dicts and lists.
:class:`KeyInfo` is how a value is labelled on an axis, for the plots of a run and of
a sweep (here, so that a sweep's data needs no plotting library).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict


@dataclass(frozen=True)
class KeyInfo:
    """How a value is shown on an axis: a name, its unit, and the scale to that unit."""

    name: str
    unit: str
    scale: float = 1.0

    @property
    def label(self) -> str:
        """An axis label with the unit, e.g. ``goodput (Mbit/s)``."""
        return f"{self.name} ({self.unit})" if self.unit else self.name


#: The largest seed the native module takes: the scenario file's ``seed`` is a TOML
#: integer (signed 64-bit), and ``--seed`` / ``seed=`` take the same range.
SEED_MAX = 2**63 - 1


class SeriesColumns(TypedDict):
    """Long-format time series: four equal-length columns, one row per sample.

    The emulator's shape (columns of Python values); the simulator gives
    :class:`SeriesBuffers`.
    """

    t_s: list[float]
    series: list[str]
    key: list[str]
    value: list[float]


class SeriesBuffers(TypedDict):
    """The simulator's time series, one ``bytes`` per column, no Python object per row.

    Native byte order: ``t_s`` and ``value`` float64; ``series`` and ``key`` uint32
    codes into ``names``; ``rows`` rows.
    """

    rows: int
    t_s: bytes
    series: bytes
    key: bytes
    value: bytes
    names: list[str]


class RunCost(TypedDict):
    """What ``l4slab._native.estimate`` returns: a run's estimated cost and the limits.

    ``flows`` after ``count`` expansion; ``stations`` of the Wi-Fi cell (0 without
    one); ``calls`` flows over RTP and ``call_bytes`` the memory they hold (an
    estimate); ``probes`` of all ping flows; ``samples`` sample instants of
    ``rows_per_sample`` series rows each (an upper bound), ``series_rows`` their
    product; ``trace_rows`` packet-trace rows (0 without a trace); ``pcap_records``
    records of the pcap files (0 without ``pcap``). ``limits`` holds the backend's
    limits of ``flows``, ``stations``, ``call_bytes``, ``probes``, ``series_rows``,
    ``trace_rows`` and ``pcap_records``.
    """

    flows: int
    stations: int
    calls: int
    call_bytes: int
    probes: int
    samples: int
    rows_per_sample: int
    series_rows: int
    trace_rows: int
    pcap_records: int
    limits: dict[str, int]


class ModelParam(TypedDict):
    """One declared model parameter: what ``l4slab._native.cc_params`` and
    ``l4slab._native.qdisc_params`` return (declared once in Rust,
    ``l4slab_core::param``).

    ``name`` is the scenario key (``cc = { kind = "dctcp", shift_g = 5 }``,
    ``qdisc = { kind = "pie", tupdate = "30ms" }``), ``aliases`` other keys
    accepted for it (``burst`` for ``max_burst``), ``linux`` the Linux module
    parameter, constant or tc keyword (``dctcp_shift_g``, ``tupdate``).
    ``kind`` is one of ``integer``, ``fraction``, ``number``, ``gain``,
    ``Hz``, ``duration``, ``packets`` (a tc limit, also written as a buffer),
    ``bytes``, ``percent``, ``flag``, ``choice``, ``custom`` (read by its
    resolver; ``range`` says what it takes); ``min``/``max`` bound it
    (``None`` where unbounded or not numeric; durations in seconds), each
    excluded when ``min_exclusive``/``max_exclusive``; a gain may also be 0
    when ``zero_allowed``. ``range`` is the same in words for docs
    (``1..=16``). ``choices`` lists a choice's names. ``default`` is in
    scenario units (a duration as ``"25ms"``), ``None`` when unset (off, or
    derived); ``example`` is the TOML text of a valid value; ``source`` says
    where the default comes from, ``doc`` what it does.
    """

    name: str
    aliases: list[str]
    linux: str
    kind: str
    range: str
    min: int | float | None
    max: int | float | None
    min_exclusive: bool
    max_exclusive: bool
    zero_allowed: bool
    choices: list[str] | None
    default: int | float | bool | str | None
    example: str
    source: str
    doc: str


CcParam = ModelParam
"""A congestion control's parameter (``_native.cc_params``)."""

QdiscParam = ModelParam
"""A queue discipline's parameter (``_native.qdisc_params``)."""


class RunStats(TypedDict):
    """How the run went on this machine (not part of the deterministic results)."""

    wall_s: float
    events: int
    packets: int
    sim_s: float


class PacketNames(TypedDict):
    """The names behind a packet chunk's codes, indexed by code."""

    event: list[str]
    side: list[str]
    ecn: list[str]
    flags: list[str]
    queue: list[str | None]
    """The run's queues; code 0 (``None``) is no queue."""
    subqueue: list[str | None]
    """Their sub-queues; code 0 (``None``) is none."""


class PacketChunk(TypedDict):
    """A run of rows of the simulator's packet trace, one ``bytes`` per column.

    Numbers are in native byte order: ``t_s`` and ``sojourn_us`` float64 (``sojourn_us``
    NaN except on dequeue rows); ``flow``, ``seq``, ``len``, ``ack``, ``wnd``, ``pkt_id``
    int64; ``retransmission`` one byte (0 or 1) per row; ``event``, ``side``, ``ecn``,
    ``flags``, ``queue``, ``subqueue`` one ``uint8`` code per row into ``names``; ``sack``
    is UTF-8 text with ``rows + 1`` int32 ``sack_offsets`` (Arrow's string layout).
    """

    rows: int
    t_s: bytes
    event: bytes
    flow: bytes
    side: bytes
    seq: bytes
    len: bytes
    ack: bytes
    ecn: bytes
    retransmission: bytes
    wnd: bytes
    sack_offsets: bytes
    sack: bytes
    flags: bytes
    pkt_id: bytes
    queue: bytes
    subqueue: bytes
    sojourn_us: bytes
    names: PacketNames


class NativeResult(TypedDict):
    """What ``l4slab._native.run`` returns (and the emulator, in the same shape).

    ``packets``: ``None`` without a trace or when a ``packets_sink`` took it; the
    simulator's chunks otherwise; the emulator gives columns of Python values.
    """

    summary_json: str
    series: SeriesColumns | SeriesBuffers
    packets: dict[str, list[Any]] | list[PacketChunk] | None
    stats: RunStats
