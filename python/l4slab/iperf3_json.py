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

The numbers are what ``send`` measured at the sender: bytes *acknowledged*
by the server (so ``sum_sent`` and ``sum_received`` carry the same bytes, as
iperf3's do for a clean TCP run), and retransmissions counted by the
transport.
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
    flow = results.flow("send")
    scenario = results.scenario
    seconds = float(flow.get("duration_s") or results.summary.get("duration_s") or 0.0)
    total = int(flow.get("bytes_delivered") or 0)
    retransmits = _retransmits(flow)
    local_host, local_port = _split(str(flow.get("client") or ""))
    remote_host, remote_port = _split(str(flow.get("server") or scenario.get("server") or ""))
    intervals = []
    times, rates = results.series("flow/send", "goodput_bps")
    start = 0.0
    for t, bps in zip(times.tolist(), rates.tolist(), strict=True):
        span = t - start
        if span <= 0 or not math.isfinite(bps):
            continue
        interval = _sum(start, t, round(bps * span / 8), retransmits=None)
        intervals.append({"streams": [{"socket": 1, **interval}], "sum": interval})
        start = t
    sent = _sum(0.0, seconds, total, retransmits=retransmits)
    received = _sum(0.0, seconds, total, retransmits=None)
    return {
        "start": {
            "connected": [
                {
                    "socket": 1,
                    "local_host": local_host,
                    "local_port": local_port,
                    "remote_host": remote_host,
                    "remote_port": remote_port,
                }
            ],
            "version": f"l4slab {results.tool_version}",
            "timestamp": {"timesecs": int(time.time())},
            "connecting_to": {"host": remote_host, "port": remote_port},
            "test_start": {
                "protocol": "QUIC",
                "num_streams": 1,
                "duration": scenario.get("duration_s"),
                "reverse": 0,
            },
            "congestion_used": scenario.get("cc"),
        },
        "intervals": intervals,
        "end": {
            "streams": [{"sender": {"socket": 1, **sent}, "receiver": {"socket": 1, **received}}],
            "sum_sent": sent,
            "sum_received": received,
            "sender_tcp_congestion": scenario.get("cc"),
            "l4slab": {
                "failure": raw.get("failure"),
                "ecn": flow.get("ecn"),
                "ecn_validation": flow.get("ecn_validation"),
                "ce_packets_fed_back": flow.get("ce_packets_fed_back"),
                "rtt_ms": flow.get("rtt_ms"),
            },
        },
    }


def _sum(start: float, end: float, nbytes: int, *, retransmits: int | None) -> dict[str, Any]:
    seconds = end - start
    out: dict[str, Any] = {
        "start": round(start, 6),
        "end": round(end, 6),
        "seconds": round(seconds, 6),
        "bytes": nbytes,
        "bits_per_second": nbytes * 8 / seconds if seconds > 0 else 0.0,
        "sender": True,
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
