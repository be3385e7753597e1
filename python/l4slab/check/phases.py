"""The emulated paths ``l4slab check-l4s`` runs an application through.

Each phase is one ``l4slab emu`` run of the application (and the server
command) with the bottleneck's packets captured (``--pcap-dir``). The link
options are scenario keys (docs/scenarios.md), built by the same code as every
emulated and simulated bottleneck. Values here are chosen from principle, not
tuned to a result; docs/check-l4s.md gives the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "BASE_RTT_MS",
    "COMPETITOR_PORT",
    "L4S_RATE_MBIT",
    "LONG_RTT_MS",
    "MARK_LEVELS",
    "MARK_RATE_MBIT",
    "PHASE_NAMES",
    "STEP_THRESH_MS",
    "Phase",
    "phases",
]

#: Base round-trip time of every phase but ``rtt`` (10 ms each way).
BASE_RTT_MS = 20.0
#: The ``rtt`` phase's base RTT: four times longer.
LONG_RTT_MS = 80.0
#: The DualPI2 phases' rate: low enough for any sender on this machine.
L4S_RATE_MBIT = 20.0
#: DualPI2's L-queue step threshold (Linux default, REFERENCES §1 DualPI2).
STEP_THRESH_MS = 1.0
#: CE-marking fractions of the scalable-response phases (factor 3 apart). At
#: 20 ms a scalable sender's window 2/p is 100, 33 and 11 packets: 48, 16 and
#: 5 Mbit/s with 1200-byte packets, below the phases' rate limit.
MARK_LEVELS = (0.02, 0.06, 0.18)
#: Rate of the marking phases: well above what a sender reaches at MARK_LEVELS,
#: so the marks, not the queue, set its window.
MARK_RATE_MBIT = 200.0
#: The server port of the kernel Cubic competitor of the ``classic-ecn`` phase.
COMPETITOR_PORT = 5299


@dataclass(frozen=True)
class Phase:
    """One emulated path: ``name``, what it is for, and its link options."""

    name: str
    title: str
    sets: tuple[str, ...]
    rtt_ms: float = BASE_RTT_MS
    rate_mbit: float = L4S_RATE_MBIT
    ecn_path: str | None = None
    #: The CE-marking fraction of a marking phase.
    mark_p: float | None = None
    #: Run a kernel Cubic (classic ECN) flow beside the application.
    competitor: bool = False
    #: The one-way delay through the bottleneck in the data's direction (ms);
    #: ``None``: half of ``rtt_ms`` (every phase's path is symmetric).
    delay_ms: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _link(rate_mbit: float, rtt_ms: float, qdisc: str) -> tuple[str, ...]:
    half = rtt_ms / 2
    return (
        f"bottleneck.rate={rate_mbit:g}Mbit",
        f"bottleneck.delay={half:g}ms",
        f"bottleneck.qdisc.kind={qdisc}",
    )


def phases(data_dir: str) -> list[Phase]:
    """Every phase, in the order they run; ``data_dir`` (``up`` or ``down``) is
    where the application's data goes (seen in the first phase): the marker of
    the scalable-response phases acts on that direction only, so the
    acknowledgements (often Not-ECT, which the marker would drop) pass untouched.
    """
    dualpi2 = (*_link(L4S_RATE_MBIT, BASE_RTT_MS, "dualpi2"), "bottleneck.buffer=50ms")
    out = [
        Phase(
            "l4s",
            "ECN passed through DualPI2 (L queue: 1 ms step)",
            dualpi2,
        )
    ]
    for p in MARK_LEVELS:
        # netem's `loss random P ecn`: each ECN-capable packet is CE-marked with
        # probability p whatever the queue (docs/scenarios.md `loss`).
        loss = (
            f'bottleneck.{data_dir}.loss={{ kind = "bernoulli", p = "{p * 100:g}%", ecn = true }}'
        )
        out.append(
            Phase(
                f"mark-{p * 100:g}%",
                f"CE on {p * 100:g} % of ECN-capable data, independent of the queue",
                (*_link(MARK_RATE_MBIT, BASE_RTT_MS, "fifo"), "bottleneck.buffer=1000pkt", loss),
                rate_mbit=MARK_RATE_MBIT,
                mark_p=p,
            )
        )
    out += [
        Phase("bleach", "A path that clears the ECN field (bleaching)", dualpi2, ecn_path="bleach"),
        Phase("remark", "A path that re-marks ECT(1) to ECT(0)", dualpi2, ecn_path="remark"),
        Phase("blackhole", "An ECN black hole (ECT packets dropped)", dualpi2, ecn_path="drop_ect"),
        Phase(
            "classic-ecn",
            "A single-queue classic-ECN AQM (PIE, ecn) shared with kernel Cubic + ECN",
            (
                *_link(L4S_RATE_MBIT, BASE_RTT_MS, "pie"),
                "bottleneck.qdisc.ecn=true",
                "bottleneck.buffer=100ms",
            ),
            competitor=True,
        ),
        Phase(
            "rtt",
            f"DualPI2 at a {LONG_RTT_MS:g} ms base RTT (four times longer)",
            (*_link(L4S_RATE_MBIT, LONG_RTT_MS, "dualpi2"), "bottleneck.buffer=200ms"),
            rtt_ms=LONG_RTT_MS,
        ),
    ]
    return out


#: The phases in the order they run (``--only`` takes these names).
PHASE_NAMES = tuple(p.name for p in phases("up"))
