"""A passive L4S check: judge the flows of real devices from what passed the bottleneck.

``l4slab gateway --check DEVICE`` captures the bottleneck (as ``check-l4s`` does)
while a device on the LAN runs whatever it runs, and when the gateway stops judges
each of the device's flows that carried data by the requirements of RFC 9331 §4
that one path, as it is, can show. Unlike ``check-l4s`` nothing is set up for the
test (no marking phases, no bleaching path), so several requirements cannot be
observed and are said to be so, each with why.

A *flow* is one transport 5-tuple with the device at one end; it is judged when
more than :data:`MIN_DATA_PACKETS` data packets went one way and it lasted more
than :data:`MIN_SECONDS` (its first second, slow start and ECN validation, is left
out as in every ``check-l4s`` phase). The flow's packets go through the same
measurement (:func:`l4slab.check.measure.measure`) and, where the requirement is
the same, the same verdicts (:mod:`l4slab.check.judge`) as ``check-l4s``. The
round-trip time, which the gateway does not set (the path goes on beyond the
WAN), is read from the flow's first exchange: the time from the device's first
packet at the bottleneck to the first answer arriving at it, plus the
bottleneck's delay towards the device.

The one check of its own is the response to CE marks from a single marking
level (:func:`check_response`): where ``check-l4s`` fits the window against three
marking levels, a passive observer has the one the gateway's AQM gave, and asks
which law the pair (window, marking fraction) sits closer to: the scalable
``W = 2/p`` or the classic ``W = 1.22/sqrt(p)`` (RFC 9331 §4.3, the laws
:mod:`l4slab.check.judge` states).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from l4slab.check.judge import (
    FAIL,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_OBSERVABLE,
    PASS,
    Check,
    _l4s_sender,
    check_ect1,
    check_feedback,
    check_pacing,
)
from l4slab.check.measure import DATA_PAYLOAD, SETTLE_S, PhaseMetrics, measure
from l4slab.check.pcap import Packets, PcapError, read_direction
from l4slab.check.phases import Phase
from l4slab.check.runner import PhaseRun

__all__ = [
    "MAX_RECORDS",
    "MIN_DATA_PACKETS",
    "MIN_MARKS",
    "MIN_SECONDS",
    "FlowVerdict",
    "Link",
    "PcapError",
    "check_response",
    "judge_capture",
]

#: The packets read of each capture file: about 0.4 GB of memory while reading, 10
#: minutes of a 20 Mbit/s flow. A longer capture is judged from its beginning.
MAX_RECORDS = 1_000_000
#: A flow with fewer data packets is a handshake, a DNS query or a ping: not judged.
MIN_DATA_PACKETS = 200
#: A flow must outlast its first (left-out) second by this much to be judged.
MIN_SECONDS = SETTLE_S + 2.0
#: CE marks below which the response to marks cannot be read (the fraction of a
#: few marks is noise: 50 marks give it to about ±14 %).
MIN_MARKS = 50
#: The two laws (RFC 9331 §4.3): W·p = 2 (scalable), W·sqrt(p) = 1.22 (classic).
SCALABLE_K, CLASSIC_K = 2.0, 1.22


@dataclass(frozen=True)
class Link:
    """The gateway's bottleneck in one direction: its rate and one-way delay."""

    rate_mbit: float
    delay_ms: float


@dataclass
class FlowVerdict:
    """One device flow: what it was, its measurements, the checks, the verdict."""

    device: str
    flow: str
    data_dir: str
    verdict: str
    reason: str
    rtt_ms: float
    checks: list[Check]
    metrics: PhaseMetrics

    def to_json(self) -> dict[str, Any]:
        m = self.metrics
        return {
            "device": self.device,
            "flow": self.flow,
            "data_direction": self.data_dir,
            "verdict": self.verdict,
            "reason": self.reason,
            "rtt_ms": round(self.rtt_ms, 2),
            "seconds": round(m.seconds, 2),
            "goodput_mbit": round(m.goodput_mbit, 3),
            "ce_fraction": round(m.ce_fraction, 5),
            "window_packets": round(m.window_packets, 1),
            "codepoints": {k: round(v, 4) for k, v in m.codepoints.items()},
            "checks": [c.to_json() for c in self.checks],
        }

    def line(self) -> str:
        return f"{self.device} {self.flow} ({self.data_dir}): {self.verdict} — {self.reason}"


def check_response(m: PhaseMetrics) -> Check:
    """RFC 9331 §4.3 from one marking level: which law (window, CE fraction) fits."""
    title = "Scalable response to CE (one marking level, passive)"
    meaning = (
        "A scalable controller keeps about two marks per round trip at any rate "
        "(W = 2/p); a classic one halves per mark and sits at W = 1.22/sqrt(p). With "
        "one marking level the two are told apart by which law the flow is nearer."
    )
    p, w = m.ce_fraction, m.window_packets
    marks = p * m.delivered_packets
    nums: dict[str, Any] = {"ce_fraction": p, "window_packets": w, "marks": marks}
    if not _l4s_sender(m):
        verdict = NOT_APPLICABLE
        ev = "the flow does not send ECT(1): the L queue never marks it"
    elif marks < MIN_MARKS or w <= 0:
        verdict = NOT_OBSERVABLE
        ev = (
            f"{marks:.0f} CE marks (at least {MIN_MARKS} needed): the queue did not build "
            "for this flow; run it longer, or at a rate the device's flow fills"
        )
    else:
        # Distance to each law in log space: the ratio of the flow's constant to the
        # law's (1 on the law).
        scalable = abs(math.log(w * p / SCALABLE_K))
        classic = abs(math.log(w * math.sqrt(p) / CLASSIC_K))
        nums |= {"w_times_p": w * p, "w_times_sqrt_p": w * math.sqrt(p)}
        verdict = PASS if scalable < classic else FAIL
        law = "scalable W = 2/p" if verdict == PASS else "classic W = 1.22/sqrt(p)"
        ev = (
            f"window {w:.1f} packets at CE fraction {p:.4f}: W·p = {w * p:.2f} (scalable: 2), "
            f"W·sqrt(p) = {w * math.sqrt(p):.2f} (classic: 1.22); nearer the {law}"
        )
    return Check("scalable", title, "RFC 9331 §4.3", "MUST", verdict, ev, meaning,
                 (m.name,), nums)  # fmt: skip


def _not_observable(cid: str, title: str, rfc: str, level: str, why: str) -> Check:
    return Check(cid, title, rfc, level, NOT_OBSERVABLE, why, "", ("gateway",), {})


#: What one path as it is cannot show (check-l4s builds a path for each).
_UNOBSERVABLE = (
    ("validation", "ECN validation (bleaching, re-marking)", "RFC 9000 §13.4.2", "MUST",
     "needs a path that clears or re-marks ECN; check-l4s has the bleach and remark phases"),
    ("blackhole", "ECN black hole fallback", "RFC 9331 §4.3", "MUST",
     "needs a path that drops ECN-capable packets; check-l4s has the blackhole phase"),
    ("classic-ecn", "Coexistence at a classic-ECN AQM", "RFC 9331 §4.3", "SHOULD",
     "needs a single-queue classic-ECN AQM shared with a classic flow; check-l4s has it"),
    ("rtt-independence", "Reduced RTT dependence", "RFC 9331 §4.3", "SHOULD",
     "needs flows of different RTTs sharing the queue for many round trips"),
)  # fmt: skip


def _verdict(checks: list[Check]) -> tuple[str, str]:
    by = {c.id: c for c in checks}
    ect1, resp = by["ect1"], by["scalable"]
    if ect1.verdict == FAIL:
        return "NOT L4S", ect1.evidence.split(";")[0]
    if resp.verdict == FAIL:
        return "NOT L4S", "responds to CE marks as a classic sender: " + resp.evidence
    if resp.verdict == NOT_OBSERVABLE:
        return INCONCLUSIVE, "sends ECT(1), but " + resp.evidence
    return "L4S", "sends ECT(1) and responds to CE marks as a scalable sender"


def _flow_name(up: Packets) -> str:
    """``tcp DEVICE:PORT -> REMOTE:PORT`` from the flow's first packet from the device."""
    proto = int(up.proto[0])
    name = {6: "tcp", 17: "udp"}.get(proto, f"proto {proto}")
    return f"{name} {up.src[0]}:{up.sport[0]} -> {up.dst[0]}:{up.dport[0]}"


def _judge_flow(
    pcap_root: Path,
    report: dict[str, Any],
    links: dict[str, Link],
    device: str,
    up: Packets,
    down: Packets,
) -> FlowVerdict | None:
    """``up``/``down``: one flow's packets (the device sends up)."""
    big_up = int(up.payload[up.payload > DATA_PAYLOAD].sum())
    big_down = int(down.payload[down.payload > DATA_PAYLOAD].sum())
    data_dir = "up" if big_up >= big_down else "down"
    fwd, back = (up, down) if data_dir == "up" else (down, up)
    data = fwd.payload > DATA_PAYLOAD
    if int(data.sum()) < MIN_DATA_PACKETS or len(up) == 0 or len(down) == 0:
        return None
    start, end = float(up.t_in.min()), float(fwd.t_in[data].max())
    if end - start < MIN_SECONDS:
        return None
    # The first exchange: the device's first packet, the first answer after it, and
    # the bottleneck's delay towards the device (the answer has not crossed it yet).
    answers = down.t_in[down.t_in > start]
    first_answer = float(answers.min()) if len(answers) else start
    rtt_ms = (first_answer - start) * 1e3 + links["down"].delay_ms
    link = links[data_dir]
    phase = Phase(
        "gateway",
        "the gateway's bottleneck, as it is",
        (),
        rtt_ms=rtt_ms,
        rate_mbit=link.rate_mbit,
        delay_ms=link.delay_ms,
    )
    run = PhaseRun(phase, pcap_root, end - start, 0, report)
    m = measure(run, data_dir, (fwd, back))
    checks = [
        check_ect1(m),
        check_feedback(m),
        check_response(m),
        check_pacing(m),
        *(_not_observable(*row) for row in _UNOBSERVABLE),
    ]
    verdict, reason = _verdict(checks)
    return FlowVerdict(device, _flow_name(up), data_dir, verdict, reason, rtt_ms, checks, m)


def _codes(values: Any, table: dict[str, int]) -> Any:
    """One small integer per address string (``table`` grows as new ones appear)."""
    return np.fromiter((table.setdefault(v, len(table)) for v in values), np.int64, len(values))


def judge_capture(
    pcap_root: Path, links: dict[str, Link], devices: set[str] | None, report: dict[str, Any]
) -> tuple[list[FlowVerdict], bool]:
    """Judge every data flow of ``devices`` (``None``: every LAN address that sent)
    in the capture under ``pcap_root/pcap/``; ``links`` by direction (``up``: from
    the devices), ``report`` the emulator's (its timing error). Reads at most
    :data:`MAX_RECORDS` packets of each capture file; the second value says whether a
    file held more (then only its beginning was judged)."""
    pcap = pcap_root / "pcap"
    up_all = read_direction(pcap, "up", MAX_RECORDS)
    down_all = read_direction(pcap, "down", MAX_RECORDS)
    truncated = len(up_all) >= MAX_RECORDS or len(down_all) >= MAX_RECORDS
    up_all = up_all.select((up_all.proto == 6) | (up_all.proto == 17))
    down_all = down_all.select((down_all.proto == 6) | (down_all.proto == 17))
    # A flow: (device, its port, remote, remote port, protocol), whichever way it goes:
    # one row of integers per packet (addresses as codes), numbered by np.unique.
    table: dict[str, int] = {}

    def rows(device: Any, dport: Any, remote: Any, rport: Any, proto: Any) -> Any:
        return np.column_stack(
            [_codes(device, table), dport, _codes(remote, table), rport, proto]
        ).astype(np.int64)

    both = np.concatenate(
        [
            rows(up_all.src, up_all.sport, up_all.dst, up_all.dport, up_all.proto),
            rows(down_all.dst, down_all.dport, down_all.src, down_all.sport, down_all.proto),
        ]
    )
    _, flow = np.unique(both, axis=0, return_inverse=True) if len(both) else (None, both[:, 0])
    flow = np.asarray(flow).reshape(-1)
    up_key, down_key = flow[: len(up_all)], flow[len(up_all) :]
    out: list[FlowVerdict] = []
    for k in np.unique(up_key):
        mine = up_key == k
        device = str(up_all.src[np.argmax(mine)])
        if devices is not None and device not in devices:
            continue
        v = _judge_flow(
            pcap_root, report, links, device, up_all.select(mine), down_all.select(down_key == k)
        )
        if v is not None:
            out.append(v)
    return out, truncated
