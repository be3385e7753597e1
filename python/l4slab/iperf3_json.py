"""``l4slab send -J``: the run as iperf3's ``-J`` report (one JSON document).

iperf3 (``iperf_api.c``, its ``--json`` output) writes ``start`` (the
connection and the test's parameters), ``intervals`` (per reporting interval,
per stream and summed) and ``end`` (per stream and ``sum_sent`` /
``sum_received``). Scripts read a few well-known paths, e.g.
``end.sum_received.bits_per_second`` or ``intervals[i].sum.bits_per_second``;
those are here with iperf3's names and units (bytes, seconds, bits per
second), from the run's own measures. What iperf3 measures and l4slab does
not (CPU utilization, socket buffer sizes) is left out rather than made up;
what l4slab adds (ECN validation, CE marks, the smoothed and minimum RTT, the
failure) is under ``end.l4slab``.

One stream per connection: ``-P N`` gives N streams (sockets 1 ... N, the
flows ``send-1`` ... ``send-N``), each in ``intervals[i].streams`` and
``end.streams``, and the sums are their sums. The numbers are what ``send``
measured at its end: bytes the server *acknowledged* (so ``sum_sent`` and
``sum_received`` carry the same bytes, as iperf3's do for a clean TCP run),
or with ``-R`` (``start.test_start.reverse`` 1, as iperf3's) bytes that
*arrived* here — the server's own count is in its report, so ``sum_sent``
carries those too and has no ``retransmits``; ``sender`` is false then, as in
iperf3's reverse-mode streams.
"""

from __future__ import annotations

import math
import time
from typing import Any

from l4slab.results import Results

__all__ = ["iperf3_report"]


def iperf3_report(results: Results, raw: dict[str, Any]) -> dict[str, Any]:
    """The iperf3 ``-J`` document of a ``send`` run (``results`` and the raw
    result ``l4slab.endpoints.send`` returned)."""
    scenario = results.scenario
    reverse = bool(scenario.get("reverse"))
    names = _stream_names(results)
    flows = [results.flow(n) for n in names]
    first = flows[0]
    local_host, local_port = _split(str(first.get("client") or ""))
    remote_host, remote_port = _split(str(first.get("server") or scenario.get("server") or ""))
    per_stream = [_intervals(results, n, reverse) for n in names]
    intervals = []
    for k in range(min(len(s) for s in per_stream)):
        streams = [{"socket": i + 1, **s[k]} for i, s in enumerate(per_stream)]
        start, end = streams[0]["start"], streams[0]["end"]
        total = sum(int(s["bytes"]) for s in streams)
        intervals.append({"streams": streams, "sum": _sum(start, end, total, None, reverse)})
    seconds = float(results.summary.get("duration_s") or 0.0)
    ends = []
    sent_total = received_total = 0
    retransmits = 0
    for i, flow in enumerate(flows):
        nbytes = int(flow.get("bytes_delivered") or 0)
        span = float(flow.get("duration_s") or seconds)
        rtx = None if reverse else _retransmits(flow)
        retransmits += rtx or 0
        sent_total += nbytes
        received_total += nbytes
        ends.append(
            {
                "sender": {"socket": i + 1, **_sum(0.0, span, nbytes, rtx, reverse)},
                "receiver": {"socket": i + 1, **_sum(0.0, span, nbytes, None, reverse)},
            }
        )
    sum_sent = _sum(0.0, seconds, sent_total, None if reverse else retransmits, reverse)
    sum_received = _sum(0.0, seconds, received_total, None, reverse)
    return {
        "start": {
            "connected": [
                {
                    "socket": i + 1,
                    "local_host": local_host,
                    "local_port": local_port,
                    "remote_host": remote_host,
                    "remote_port": remote_port,
                }
                for i in range(len(names))
            ],
            "version": f"l4slab {results.tool_version}",
            "timestamp": {"timesecs": int(time.time())},
            "connecting_to": {"host": remote_host, "port": remote_port},
            "test_start": {
                "protocol": "QUIC",
                "num_streams": len(names),
                "duration": scenario.get("duration_s"),
                "reverse": int(reverse),
            },
            "congestion_used": scenario.get("cc"),
        },
        "intervals": intervals,
        "end": {
            "streams": ends,
            "sum_sent": sum_sent,
            "sum_received": sum_received,
            "sender_tcp_congestion": scenario.get("cc"),
            "l4slab": {
                "failure": raw.get("failure"),
                "streams": {
                    name: {
                        "ecn": flow.get("ecn"),
                        "ecn_validation": flow.get("ecn_validation"),
                        "ce_packets_fed_back": flow.get("ce_packets_fed_back"),
                        "rtt_ms": flow.get("rtt_ms"),
                    }
                    for name, flow in zip(names, flows, strict=True)
                },
                # One stream: its figures here too (as before -P).
                **(
                    {
                        "ecn": first.get("ecn"),
                        "ecn_validation": first.get("ecn_validation"),
                        "ce_packets_fed_back": first.get("ce_packets_fed_back"),
                        "rtt_ms": first.get("rtt_ms"),
                    }
                    if len(names) == 1
                    else {}
                ),
            },
        },
    }


def _stream_names(results: Results) -> list[str]:
    """The run's flows in stream order: ``send``, or ``send-1`` ... ``send-N``."""
    names = list(results.flows())
    if names == ["send"]:
        return names
    return sorted(names, key=lambda n: int(n.rpartition("-")[2]))


def _intervals(results: Results, name: str, reverse: bool) -> list[dict[str, Any]]:
    """One stream's intervals from its ``goodput_bps`` series."""
    out = []
    times, rates = results.series(f"flow/{name}", "goodput_bps")
    start = 0.0
    for t, bps in zip(times.tolist(), rates.tolist(), strict=True):
        span = t - start
        if span <= 0 or not math.isfinite(bps):
            continue
        out.append(_sum(start, t, round(bps * span / 8), None, reverse))
        start = t
    return out


def _sum(
    start: float, end: float, nbytes: int, retransmits: int | None, reverse: bool
) -> dict[str, Any]:
    seconds = end - start
    out: dict[str, Any] = {
        "start": round(start, 6),
        "end": round(end, 6),
        "seconds": round(seconds, 6),
        "bytes": nbytes,
        "bits_per_second": nbytes * 8 / seconds if seconds > 0 else 0.0,
        "sender": not reverse,
    }
    if retransmits is not None:
        out["retransmits"] = retransmits
    return out


def _retransmits(flow: dict[str, Any]) -> int:
    """Retransmitted packets, as iperf3's ``retransmits`` counts segments."""
    for key in ("retransmits", "lost_packets", "losses_detected"):
        value = flow.get(key)
        if isinstance(value, int):
            return value
    return 0


def _split(address: str) -> tuple[str, int | None]:
    """``host:port`` or ``[v6]:port`` as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return address, None
    return host.strip("[]"), int(port)
