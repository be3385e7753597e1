"""Flent's named tests as l4slab scenarios, and l4slab results as Flent data files.

Flent (https://flent.org, github tohojo/flent) names its tests (``rrul``, ``tcp_nup``,
``rtt_fair``...) and stores a run as a ``.flent.gz`` file: gzipped JSON with
``metadata``, ``version``, ``x_values`` (seconds from the start), ``results`` (one list
of values per series, aligned with ``x_values``, ``null`` where there is no value) and
``raw_values`` (flent/resultset.py, ``ResultSet.serialise``; Flent 2.3.0 writes format
version 4). Flent plots a measured series from its raw values (``{"t": UNIX time,
"val": v}``; a file without any is "zero-length" to it, and nothing is drawn) and a
computed one (sums, averages) from ``results``. It reads the test's own definition by
``NAME`` (flent/tests/NAME.conf), so the series must carry the names that definition
plots.

:func:`scenario` builds the l4slab scenario of a named test (TOML text, nothing written);
:func:`write` turns a run's results into a ``.flent.gz`` file. docs/flent.md has the
mapping of each test and what differs from Flent.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from l4slab.results import Results

__all__ = [
    "FILE_SUFFIX",
    "FORMAT_VERSION",
    "TESTS",
    "Load",
    "TestSpec",
    "data",
    "encode",
    "scenario",
    "spec",
    "spec_for",
    "write",
]

#: flent/resultset.py ``FILEFORMAT_VERSION`` of Flent 2.x (2.3.0 reads 1 to 4).
FORMAT_VERSION = 4
#: flent/resultset.py ``SUFFIX``.
FILE_SUFFIX = ".flent.gz"

#: The tests ``l4slab test`` runs, with Flent's one-line descriptions (its DESCRIPTION).
TESTS: dict[str, str] = {
    "rrul": "Realtime Response Under Load: 4 TCP up + 4 TCP down (BE, BK, CS5, EF), 4 pings",
    "rrul_be": "RRUL, best effort only: 4 TCP up + 4 TCP down, 4 pings",
    "tcp_nup": "TCP upload, N streams, with a ping",
    "tcp_ndown": "TCP download, N streams, with a ping",
    "rtt_fair": "RTT-fair RRUL: 1 TCP up + 1 TCP down + a ping to each of 4 hosts at "
    "different RTTs",
    "voip": "A one-way VoIP stream (G.711: 172 B every 20 ms), with a ping",
}

#: Flent's DSCP marks as Wi-Fi access categories (WMM maps CS1 to background, CS5 to
#: video, EF to voice, as RFC 8325's DSCP-to-UP mapping does). They act only with a
#: [wifi] cell.
WIFI_AC = {"CS0": "be", "CS1": "bk", "CS5": "vi", "EF": "vo"}

#: rtt_fair's four hosts: name and one-way access delay on top of the bottleneck's.
RTT_FAIR_HOSTS = (("rtt1", "0ms"), ("rtt2", "5ms"), ("rtt3", "20ms"), ("rtt4", "50ms"))
#: Their access links: fast enough never to queue (a 1500 B packet in 1.2 us).
RTT_FAIR_ACCESS_RATE = "10Gbit"

#: voip's stream: G.711 at 50 packets a second, 160 B of voice + 12 B of RTP header
#: (what Flent's D-ITG runner sends: ``-x G.711.1 -h RTP``), as a cbr flow.
VOIP_SIZE_B = 172
VOIP_RATE_BPS = VOIP_SIZE_B * 8 * 50


@dataclass(frozen=True)
class Load:
    """One l4slab flow of a test and the Flent series it becomes."""

    flow: str  # l4slab flow name
    series: str  # Flent series name
    kind: str  # "up" | "down" (TCP bulk), "ping", "voip"
    wifi_ac: str = "be"
    server: str | None = None  # a server-side host of its own (rtt_fair)


@dataclass(frozen=True)
class Aggregate:
    """A series Flent computes from others when it runs (its ``apply_to`` data sets)."""

    series: str
    runner: str  # "sum" | "average" | "fairness"
    kinds: tuple[str, ...]  # the loads it is computed over, by kind


@dataclass(frozen=True)
class TestSpec:
    """A Flent test as l4slab loads, and what its data file records."""

    name: str
    loads: tuple[Load, ...]
    aggregates: tuple[Aggregate, ...]
    params: dict[str, str]  # Flent's TEST_PARAMETERS
    plot: str  # the test's default plot (its DEFAULTS['PLOT'])

    @property
    def hosts(self) -> list[str]:
        return sorted({load.server for load in self.loads if load.server})


_UP_DOWN_AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate("TCP upload avg", "average", ("up",)),
    Aggregate("TCP upload sum", "sum", ("up",)),
    Aggregate("TCP download avg", "average", ("down",)),
    Aggregate("TCP download sum", "sum", ("down",)),
    Aggregate("TCP totals", "sum", ("up", "down")),
    Aggregate("Ping (ms) avg", "average", ("ping",)),
)


def _rrul(marks: Sequence[tuple[str, str]], pings: Sequence[tuple[str, str]]) -> list[Load]:
    loads = []
    for direction, word in (("up", "upload"), ("down", "download")):
        for label, mark in marks:
            loads.append(
                Load(
                    f"tcp-{direction}-{label.lower()}",
                    f"TCP {word} {label}",
                    direction,
                    WIFI_AC[mark],
                )
            )
    for label, mark in pings:
        flow = "ping-" + label.lower().replace(" ", "-")
        loads.append(Load(flow, f"Ping (ms) {label}", "ping", WIFI_AC[mark]))
    return loads


def _streams(direction: str, streams: int) -> list[Load]:
    word = "upload" if direction == "up" else "download"
    loads = [
        Load(f"tcp-{direction}-{i}", f"TCP {word}::{i}", direction) for i in range(1, streams + 1)
    ]
    return [*loads, Load("ping-icmp", "Ping (ms) ICMP", "ping")]


def spec(test: str, *, streams: int = 4) -> TestSpec:
    """The l4slab loads of Flent test ``test``; ``streams`` is tcp_nup's and tcp_ndown's N.

    ``KeyError`` for a test l4slab does not run (:data:`TESTS` names them).
    """
    if test not in TESTS:
        raise KeyError(test)
    if test == "rrul":
        marks = [("BE", "CS0"), ("BK", "CS1"), ("CS5", "CS5"), ("EF", "EF")]
        pings = [("UDP EF", "EF"), ("UDP BK", "CS1"), ("UDP BE", "CS0"), ("ICMP", "CS0")]
        return TestSpec(test, tuple(_rrul(marks, pings)), _UP_DOWN_AGGREGATES, {}, "all_scaled")
    if test == "rrul_be":
        marks = [("BE", "CS0"), ("BE2", "CS0"), ("BE3", "CS0"), ("BE4", "CS0")]
        pings = [("UDP BE1", "CS0"), ("UDP BE2", "CS0"), ("UDP BE3", "CS0"), ("ICMP", "CS0")]
        return TestSpec(test, tuple(_rrul(marks, pings)), _UP_DOWN_AGGREGATES, {}, "all_scaled")
    if test in ("tcp_nup", "tcp_ndown"):
        direction = "up" if test == "tcp_nup" else "down"
        word = "upload" if direction == "up" else "download"
        aggregates: tuple[Aggregate, ...] = (
            Aggregate(f"TCP {word} avg", "average", (direction,)),
            Aggregate(f"TCP {word} sum", "sum", (direction,)),
            Aggregate(f"TCP {word} fairness", "fairness", (direction,)),
        )
        return TestSpec(
            test,
            tuple(_streams(direction, streams)),
            aggregates,
            {f"{word}_streams": str(streams)},
            "totals",
        )
    if test == "rtt_fair":
        loads = []
        for (host, _), label in zip(RTT_FAIR_HOSTS, ("BE1", "BE2", "BK1", "BK2"), strict=True):
            ac = "bk" if label.startswith("BK") else "be"
            loads += [
                Load(f"tcp-up-{host}", f"TCP upload {label} {host}", "up", ac, host),
                Load(f"tcp-down-{host}", f"TCP download {label} {host}", "down", ac, host),
            ]
        for i, (host, _) in enumerate(RTT_FAIR_HOSTS, 1):
            loads.append(Load(f"ping-{host}", f"Ping (ms) ICMP{i} {host}", "ping", "be", host))
        per_direction = [
            Aggregate(f"TCP {word} {what}", runner, (direction,))
            for direction, word in (("up", "upload"), ("down", "download"))
            for what, runner in (("avg", "average"), ("sum", "sum"), ("fairness", "fairness"))
        ]
        aggregates = (*per_direction, Aggregate("Ping (ms) avg", "average", ("ping",)))
        params = {
            "markings": "CS0,CS0,CS1,CS1",
            "labels": "BE1,BE2,BK1,BK2",
            "ping_labels": "ICMP1,ICMP2,ICMP3,ICMP4",
        }
        return TestSpec(test, tuple(loads), aggregates, params, "all_scaled")
    # voip
    loads = [Load("voip", "VoIP", "voip", "vo"), Load("ping-icmp", "Ping (ms) ICMP", "ping")]
    return TestSpec(test, tuple(loads), (), {}, "voip_delay")


# --------------------------------------------------------------------------- scenario


@dataclass(frozen=True)
class Link:
    """The bottleneck and the test's timing, from ``l4slab test``'s options."""

    rate: str = "20Mbit"
    delay: str = "10ms"  # one way
    buffer: str = "100ms"
    qdisc: str = "fifo"
    cc: str = "cubic"
    length_s: float = 60.0  # Flent's -l: how long the loads run
    lead_s: float = 5.0  # Flent's --delay: pings alone before the loads start
    step_s: float = 0.2  # Flent's -s: the sampling step


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string (JSON escapes are TOML escapes)


def _seconds(value: float) -> str:
    return _q(f"{round(value * 1e6)}us")


def scenario(test: TestSpec, link: Link) -> str:
    """The TOML text of ``test`` on ``link``: pings from 0 s, the loads from ``lead_s``
    to the end, ``lead_s + length_s`` (the summary's window starts at ``lead_s``)."""
    lines = [
        f"# Flent's {test.name} test as an l4slab scenario (l4slab test {test.name}; "
        "docs/flent.md).",
        "format = 1",
        f"name = {_q('flent-' + test.name)}",
        f"description = {_q(TESTS[test.name])}",
        f"duration = {_seconds(link.lead_s + link.length_s)}",
        f"sample_interval = {_seconds(link.step_s)}",
    ]
    if link.lead_s > 0:
        lines.append(f"warmup = {_seconds(link.lead_s)}")
    qdisc = link.qdisc if link.qdisc.startswith("{") else _q(link.qdisc)
    lines += [
        "",
        "[bottleneck]",
        f"rate = {_q(link.rate)}",
        f"delay = {_q(link.delay)}",
        f"buffer = {_q(link.buffer)}",
        f"qdisc = {qdisc}",
    ]
    if test.hosts:
        delays = dict(RTT_FAIR_HOSTS)
        lines += ["", "[hosts.client]", 'side = "client"']
        for host in test.hosts:
            # An access link of its own carries the host's delay: in the emulator too,
            # where delays outside access links must be the same for every flow.
            lines += [
                "",
                f"[hosts.{host}]",
                'side = "server"',
                f"access_delay = {_q(delays[host])}",
                f'access = {{ rate = {_q(RTT_FAIR_ACCESS_RATE)}, buffer = "1000pkt" }}',
            ]
    for load in test.loads:
        lines += ["", "[[flows]]", f"name = {_q(load.flow)}"]
        if load.server:
            lines.append(f"server = {_q(load.server)}")
        if load.wifi_ac != "be":
            lines.append(f"wifi_ac = {_q(load.wifi_ac)}")
        if load.kind in ("up", "down"):
            lines += [f"direction = {_q(load.kind)}", f"cc = {_q(link.cc)}"]
            if link.lead_s > 0:
                lines.append(f"start = {_seconds(link.lead_s)}")
            lines.append('app = "bulk"')
        elif load.kind == "ping":
            lines.append(f'app = {{ kind = "ping", interval = {_seconds(link.step_s)} }}')
        else:
            lines.append('direction = "up"')
            if link.lead_s > 0:
                lines.append(f"start = {_seconds(link.lead_s)}")
            lines.append(
                f'app = {{ kind = "cbr", rate = "{VOIP_RATE_BPS}bit", size = "{VOIP_SIZE_B}B" }}'
            )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- data file


def spec_for(results: Results) -> TestSpec:
    """The test a run is: the one ``l4slab test`` built (scenario name ``flent-TEST``),
    else a generic mapping onto Flent's ``rrul_be_nflows`` (every TCP flow a stream, the
    first ping ``ICMP``, the second ``UDP BE``, more as ``Ping (ms) NAME``)."""
    flows = results.scenario.get("flows", [])
    names = [str(f.get("name")) for f in flows]
    test = results.name.removeprefix("flent-") if results.name.startswith("flent-") else ""
    if test in TESTS:
        streams = sum(1 for n in names if n.startswith("tcp-"))
        candidate = spec(test, streams=max(streams, 1))
        if sorted(load.flow for load in candidate.loads) == sorted(names):
            return candidate
    loads: list[Load] = []
    pings = 0
    for flow in flows:
        name, app = str(flow.get("name")), flow.get("app", {})
        kind = app.get("kind") if isinstance(app, dict) else app
        if kind == "ping":
            label = ("ICMP", "UDP BE")[pings] if pings < 2 else name
            loads.append(Load(name, f"Ping (ms) {label}", "ping"))
            pings += 1
        elif kind in ("bulk", "file", "web"):
            up = flow.get("direction") == "up"
            loads.append(
                Load(
                    name, f"TCP {'upload' if up else 'download'} BE::{name}", "up" if up else "down"
                )
            )
    counts = {k: sum(1 for load in loads if load.kind == k) for k in ("up", "down")}
    params = {"upload_streams": str(counts["up"]), "download_streams": str(counts["down"])}
    return TestSpec("rrul_be_nflows", tuple(loads), _UP_DOWN_AGGREGATES, params, "all_scaled")


#: How Flent writes times (flent/util.py, format_date with utc=True).
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

_UNITS = {"up": "Mbits/s", "down": "Mbits/s", "ping": "ms", "voip": "Kbits/s"}


def _values(
    results: Results,
    flow: str,
    key: str,
    scale: float,
    x: Sequence[float],
) -> list[float | None]:
    """The series ``flow/<flow>`` ``key`` at the times ``x`` (None where absent or NaN)."""
    try:
        t, v = results.series(f"flow/{flow}", key)
    except KeyError:
        return [None] * len(x)
    at = {round(float(ti), 6): float(vi) for ti, vi in zip(t, v, strict=True)}
    out: list[float | None] = []
    for xi in x:
        value = at.get(round(xi, 6))
        out.append(None if value is None or math.isnan(value) else value * scale)
    return out


def _combine(runner: str, columns: list[list[float | None]], samples: int) -> list[float | None]:
    """Flent's ``sum``, ``average`` or ``fairness`` of ``columns`` at each sample (None
    where none of them has a value, and everywhere when there are none)."""
    if not columns:
        return [None] * samples

    def one(values: list[float]) -> float | None:
        if not values:
            return None
        if runner == "sum":
            return math.fsum(values)
        if runner == "average":
            return math.fsum(values) / len(values)
        # Jain's fairness index (Jain, Chiu, Hawe 1984), as Flent's "fairness" runner.
        squares = math.fsum(v * v for v in values)
        return math.fsum(values) ** 2 / (len(values) * squares) if squares else None

    return [one([v for v in row if v is not None]) for row in zip(*columns, strict=True)]


def data(results: Results, test: TestSpec | None = None, *, title: str = "") -> dict[str, Any]:
    """The ``.flent.gz`` content of ``results`` as ``test`` (default :func:`spec_for`)."""
    test = test if test is not None else spec_for(results)
    step = float(results.scenario.get("sample_interval", 100_000_000)) / 1e9
    duration = float(results.scenario.get("duration", 0)) / 1e9
    samples = math.floor(duration / step + 1e-9)
    x = [round((i + 1) * step, 6) for i in range(samples)]
    series: dict[str, list[float | None]] = {}
    by_kind: dict[str, list[list[float | None]]] = {}
    units: dict[str, str] = {}
    for load in test.loads:
        if load.kind in ("up", "down"):
            values = _values(results, load.flow, "goodput_bps", 1e-6, x)
        elif load.kind == "ping":
            values = _values(results, load.flow, "ping_rtt_ms", 1.0, x)
        else:
            values = _values(results, load.flow, "cbr_goodput_bps", 1e-3, x)
            series["VoIP::bitrate"] = values
            series["VoIP::delay"] = _values(results, load.flow, "owd_ms", 1.0, x)
            units.update({"VoIP::bitrate": "Kbits/s", "VoIP::delay": "ms"})
        series[load.series] = values
        units[load.series] = _UNITS[load.kind]
        by_kind.setdefault(load.kind, []).append(values)
    for agg in test.aggregates:
        columns = [c for kind in agg.kinds for c in by_kind.get(kind, [])]
        series[agg.series] = _combine(agg.runner, columns, len(x))
        units[agg.series] = (
            "Idx"
            if agg.runner == "fairness"
            else units.get(
                next((load.series for load in test.loads if load.kind in agg.kinds), ""), ""
            )
        )
    lead = float(results.scenario.get("warmup", 0)) / 1e9
    started = _started(results)
    # Flent 2.x plots the raw values of the measured series (each {"t": UNIX time, "val"}),
    # and the aligned `results` of those it computes (the sums and averages).
    t0 = datetime.strptime(started, _TIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    raw = {
        name: [
            {"t": round(t0 + xi, 6), "val": v}
            for xi, v in zip(x, series[name], strict=True)
            if v is not None
        ]
        for name in units
        if name not in {agg.series for agg in test.aggregates}
    }
    hosts = test.hosts or ["server"]
    backend = results.summary.get("backend", "sim")
    metadata: dict[str, Any] = {
        "NAME": test.name,
        "TITLE": title or results.name,
        "NOTE": f"written by l4slab {results.tool_version or '?'}, not Flent: "
        f"{'emulated' if backend == 'emu' else 'simulated'} run of {results.name}, seed "
        f"{results.seed}",
        "TIME": started,
        "T0": started,
        "HOST": hosts[0],
        "HOSTS": hosts,
        "LOCAL_HOST": "client",
        "LENGTH": round(duration - lead, 6),
        "TOTAL_LENGTH": round(duration, 6),
        "STEP_SIZE": step,
        "DELAY": lead,
        "TEST_PARAMETERS": dict(test.params),
        "FLENT_VERSION": "2.3.0",
        "IP_VERSION": 4,
        "DATA_FILENAME": f"{test.name}{FILE_SUFFIX}",
        "SERIES_META": {name: {"UNITS": unit} for name, unit in units.items()},
        "L4SLAB_SCENARIO": results.name,
    }
    return {
        "metadata": metadata,
        "version": FORMAT_VERSION,
        "x_values": x,
        "results": series,
        "raw_values": raw,
    }


def _started(results: Results) -> str:
    """When the run started (run.json's finish time less its wall time), as Flent writes
    times; 1970-01-01 when the bundle does not say."""
    info = results.run_info or {}
    start = datetime.fromtimestamp(0, timezone.utc)
    finished = info.get("finished_at")
    if isinstance(finished, str):
        try:
            wall = float((info.get("stats") or {}).get("wall_s") or 0.0)
            start = datetime.fromisoformat(finished) - timedelta(seconds=wall)
        except ValueError:
            pass
    return start.astimezone(timezone.utc).strftime(_TIME_FORMAT)


def encode(results: Results, test: TestSpec | None = None, *, title: str = "") -> bytes:
    """:func:`data` as the bytes of a ``.flent.gz`` file (gzipped JSON, as Flent writes
    it: indented, keys sorted). The gzip header carries no time or name."""
    text = json.dumps(data(results, test, title=title), indent=2, sort_keys=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as out:
        out.write(text.encode())
    return buffer.getvalue()


def write(
    results: Results, path: str | Path, test: TestSpec | None = None, *, title: str = ""
) -> Path:
    """Write ``results`` as a Flent data file at ``path``; returns the path."""
    target = Path(path)
    target.write_bytes(encode(results, test, title=title))
    return target
