"""Type stub for ``l4slab._native``, the PyO3 module built from crates/l4slab-py.

The native module only converts and maps errors; the public API is ``l4slab``.
"""

import sys
from collections.abc import Callable

from l4slab._types import CcParam, NativeResult, PacketChunk, QdiscParam, RunCost

__all__ = [
    "ScenarioError",
    "SimulationError",
    "__version__",
    "cc_names",
    "cc_params",
    "die_with_parent",
    "ecn_rewrite_names",
    "emu_main",
    "emu_plan_check",
    "estimate",
    "qdisc_names",
    "qdisc_params",
    "quantity",
    "run",
    "send_run",
    "serve_run",
    "validate",
]

__version__: str

class ScenarioError(ValueError):
    """A scenario file or override is invalid.

    The message names the key path and shows a valid example, e.g.
    ``links.bottleneck.rate: "fast" is not a rate; write e.g. "20Mbit"``.
    """

class SimulationError(RuntimeError):
    """The simulation could not complete."""

def die_with_parent() -> None:
    """In a worker process: SIGTERM from the kernel when the thread that started it
    exits (``prctl(PR_SET_PDEATHSIG)``; Linux only, absent elsewhere)."""

def validate(
    text: str,
    source: str,
    overrides: list[str],
    trace_dirs: list[str] = ...,
    limits: str | None = None,
) -> str:
    """Parse, validate and resolve a scenario.

    ``text`` is the TOML text, ``source`` names it in error messages (a path or
    ``"<string>"``), ``overrides`` are ``"key.path=value"`` strings applied on
    top; ``trace_dirs`` are where a trace given by name is looked up (after
    ``$L4SLAB_TRACES``; empty: the source tree's). With ``limits`` (``"sim"`` or
    ``"emu"``) a scenario past that backend's limits (docs/scenarios.md, "Limits") is
    an error too. Returns the resolved scenario as JSON text. Raises ``ScenarioError``.
    """

def estimate(
    text: str,
    source: str,
    overrides: list[str],
    trace_dirs: list[str] = ...,
    backend: str = "sim",
) -> RunCost:
    """The estimated cost of running a scenario, and ``backend``'s limits.

    Arguments as for :func:`validate`; nothing is simulated. Raises ``ScenarioError``.
    """

def run(
    text: str,
    source: str,
    overrides: list[str],
    seed: int | None = None,
    progress: Callable[[float, float], None] | None = None,
    packets_sink: Callable[[PacketChunk], object] | None = None,
    trace_dirs: list[str] = ...,
    allow_large: bool = False,
    pcap_dir: str | None = None,
) -> NativeResult:
    """Validate and simulate a scenario.

    ``seed`` replaces the scenario's seed when given. The GIL is released while
    the simulation runs, so other Python threads (e.g. a sweep's other cells) run
    meanwhile; it is taken back for the callbacks. ``progress(sim_time_s,
    duration_s)`` is called every 16,384 events (about every 0.1 s of wall time
    or less) with the GIL held; an exception it raises (e.g. ``KeyboardInterrupt``)
    stops the run and propagates. ``trace_dirs`` as for :func:`validate`. Raises
    ``ScenarioError`` or ``SimulationError``. A scenario past the simulator's limits
    (docs/scenarios.md, "Limits") is a ``ScenarioError`` unless ``allow_large``.

    The time series come as ``SeriesBuffers`` (``_types``), one ``bytes`` per column.

    When the scenario traces packets, the trace is handed over while the run
    goes on, in ``PacketChunk``s of 65,536 rows (the last one shorter, possibly
    empty): to ``packets_sink(chunk)`` if given (an exception it raises stops the
    run and propagates; the result's ``packets`` is then ``None``), else they are
    returned as the result's ``packets`` list. Without a trace ``packets`` is
    ``None`` and the sink is never called.

    A scenario with ``pcap = true`` writes its capture files into
    ``pcap_dir``/pcap/ (docs/results.md) while it runs; without ``pcap_dir``
    nothing is captured. A file that cannot be written is a ``SimulationError``.
    """

def quantity(text: str) -> tuple[str, float] | None:
    """A value with a unit, as scenario files read it: ``(unit, number)`` in the base
    unit, ``"s"`` (``"25ms"``), ``"bps"`` (``"20Mbit"``), ``"bytes"`` (``"10MB"``),
    ``"pkt"`` (``"100pkt"``) or ``"fraction"`` (``"1%"``); ``None`` for anything else."""

def cc_names() -> list[str]:
    """Congestion controls the simulator implements (Linux names)."""

def cc_params(kind: str) -> list[CcParam]:
    """The parameters a scenario can set for the congestion control ``kind``.

    Declared once in ``l4slab-cc`` (``l4slab_cc::param``), in the order the docs
    list them; ``reno`` has none. An unknown ``kind`` raises ``ValueError``.
    """

def qdisc_names() -> list[str]:
    """Queue disciplines the simulator implements (Linux names)."""

def qdisc_params(kind: str) -> list[QdiscParam]:
    """The parameters a scenario can set for the queue discipline ``kind``.

    Declared once in ``l4slab-qdisc`` (``l4slab_qdisc::param``) with their tc
    names, in the order the docs list them. An unknown ``kind`` raises
    ``ValueError``.
    """

def ecn_rewrite_names() -> list[str]:
    """What a path can do to ECN before the queue: the scenario key ``ecn_rewrite``."""

if sys.platform == "linux":
    def emu_main(argv: list[str], self_cmd: list[str]) -> int:
        """Run the emulator process's entry (``l4slab-emu PLAN``: ``argv`` is
        ``[PLAN]``, the JSON of an :mod:`l4slab.emu_plan` plan) in this process.

        Returns the exit code. ``self_cmd`` is the argument vector that runs the
        emulator again (its crash reaper uses it), e.g. ``[sys.executable, "-m",
        "l4slab._emu"]``. It blocks signals, changes scheduling and forks, and the
        GIL is released for the whole run: call it from a process of its own, as
        ``python -m l4slab._emu`` does. Linux only.
        """

    def emu_plan_check(plan: str) -> str:
        """Read an emulator plan (JSON) as the emulator would, without running it;
        returns its sub-command's name (``"shell"``, ...). Raises ``ValueError``
        with the emulator's message (naming the field) for a plan it would refuse.
        Linux only."""

if sys.platform == "linux":
    def send_run(options: dict[str, object], on_line: Callable[[str], object]) -> str:
        """Run ``l4slab send`` (options as strings, missing ones default); returns the
        result as JSON text. Raises ``ValueError`` for a bad option. Linux only."""

    def serve_run(
        options: dict[str, object],
        on_line: Callable[[str], object],
        on_session: Callable[[str], object],
    ) -> str:
        """Run ``l4slab serve``; ``on_session`` gets each session's result (JSON text)
        as it ends; returns the whole run as JSON text. Linux only."""
