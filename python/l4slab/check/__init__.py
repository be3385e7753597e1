"""``l4slab check-l4s``: does this application really do L4S?

Runs a client command (and a server command) through a series of emulated
paths (:mod:`l4slab.check.phases`), reads the application's own packets from
the bottleneck's capture, both directions (:mod:`l4slab.check.measure`), and
judges each requirement of RFC 9331 §4 and RFC 9000 §13.4.2 it can see
(:mod:`l4slab.check.judge`). A check that reads a phase that was disturbed
(the emulator late, the endpoints starved of CPU) or where the client failed
is INCONCLUSIVE or not PASS (:func:`l4slab.check.judge.phase_problems`).
Needs root (the emulator). docs/check-l4s.md.

Importing the package (``l4slab check-l4s --help`` does) loads neither numpy nor the
emulator: the measuring and judging modules are imported by the functions that run
a check.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from l4slab.check.phases import PHASE_NAMES, phases
from l4slab.output import check_output_dir, output_path, staging_dir, write_manifest

if TYPE_CHECKING:
    from l4slab.check.judge import Check
    from l4slab.check.measure import PhaseMetrics
    from l4slab.check.phases import Phase

__all__ = [
    "PHASE_NAMES",
    "CheckDisturbedError",
    "CheckError",
    "CheckInputError",
    "CheckResult",
    "check_l4s",
    "client_shell",
    "default_server",
    "head_and_tail",
    "validate_options",
]


class CheckError(Exception):
    """The check could not run (e.g. the application sent nothing)."""


class CheckInputError(CheckError):
    """A bad option; the message names it and shows a valid value."""


class CheckDisturbedError(CheckError):
    """Nothing could be judged: the first phase had no data and was disturbed."""


@dataclass
class CheckResult:
    checks: list[Check]
    metrics: dict[str, PhaseMetrics]
    verdict: str
    out: Path

    @property
    def failed(self) -> bool:
        from l4slab.check.judge import FAIL

        return any(c.verdict == FAIL for c in self.checks)

    @property
    def inconclusive(self) -> bool:
        """A MUST could not be judged (and none FAILed): the exit code is not 0."""
        from l4slab.check.judge import inconclusive_musts

        return not self.failed and bool(inconclusive_musts(self.checks))

    def text(self) -> str:
        from l4slab.check.report import format_text

        return format_text(self.checks, self.verdict)


def default_server() -> str:
    """``l4slab serve`` (the same l4slab), for clients that run ``l4slab send``."""
    return shlex.join([sys.executable, "-m", "l4slab", "serve"])


def validate_options(seconds: float, only: Sequence[str]) -> None:
    """Raise :class:`CheckInputError` naming a bad option and a valid value."""
    if seconds < 2 or seconds > 60:
        raise CheckInputError(f"--seconds: {seconds:g} is out of range; use 2 to 60, e.g. 4")
    unknown = [n for n in only if n not in PHASE_NAMES]
    if unknown:
        raise CheckInputError(
            f"--only: unknown phase {unknown[0]!r}; choose from: {', '.join(PHASE_NAMES)}"
        )


#: ``$L4SLAB_NAME`` or ``${L4SLAB_NAME}`` in a word of CLIENT CMD.
_VARIABLE = re.compile(r"\$(?:\{(L4SLAB_[A-Z0-9_]+)\}|(L4SLAB_[A-Z0-9_]+))")


def client_shell(words: Sequence[str]) -> str:
    """The shell text that runs CLIENT CMD ``words`` in the client namespace.

    One word is a shell command, run as written (``-- 'iperf3 -c
    $L4SLAB_SERVER | tee x'``). Several words are an argument vector, as
    ``ssh`` or ``env`` would run it, each word one argument: nothing in them
    is split, globbed or substituted except l4slab's own variables,
    ``$L4SLAB_NAME`` or ``${L4SLAB_NAME}``, which the namespace's shell
    expands (``-- l4slab send '$L4SLAB_SERVER' --cc prague``).
    """
    if len(words) == 1:
        return words[0]
    return " ".join(_quote_keeping_variables(w) for w in words)


def _quote_keeping_variables(word: str) -> str:
    parts: list[str] = []
    at = 0
    for m in _VARIABLE.finditer(word):
        if m.start() > at:
            parts.append(shlex.quote(word[at : m.start()]))
        parts.append(f'"${{{m.group(1) or m.group(2)}}}"')
        at = m.end()
    if at < len(word) or not parts:
        parts.append(shlex.quote(word[at:]))
    return "".join(parts)


def head_and_tail(text: str, lines: int = 12) -> str:
    """The first and last ``lines`` lines of ``text`` (a client's output: its
    usage or first error is at the top, how it ended at the bottom), with how
    many were left out between them."""
    rows = text.splitlines()
    if len(rows) <= 2 * lines:
        return "\n".join(rows)
    left = len(rows) - 2 * lines
    return "\n".join([*rows[:lines], f"[... {left} lines ...]", *rows[-lines:]])


def check_l4s(
    client: str,
    *,
    server: str | None,
    out: Path,
    seconds: float = 4.0,
    only: Sequence[str] = (),
    on_phase: Callable[[Phase, PhaseMetrics, float], None] | None = None,
) -> CheckResult:
    """Run ``client`` (shell text) through every phase and judge it.

    ``only``: phase names to run (``l4s`` always runs: it finds the data
    direction and whether the sender uses ECN at all). When the first phase
    shows no ECN-capable data, the phases that need ECN are skipped: each of
    their checks is NOT APPLICABLE. Raises :class:`CheckError` for bad input
    and :class:`l4slab.emu.EmuError` when the emulator cannot run.

    ``out`` is written as every l4slab output folder is: into a hidden folder beside
    it, renamed into place when complete; an existing ``out`` that l4slab did not
    write is refused (``FileExistsError``), one it wrote is replaced.
    """
    validate_options(seconds, only)
    target = output_path(out)
    check_output_dir(target)  # nothing written over a folder l4slab did not write
    with staging_dir(target) as tmp:  # all or nothing: Ctrl-C or a failure leaves no half
        result = _check(client, server, tmp, seconds, only, on_phase)
        write_manifest(tmp, "check-l4s")
    result.out = target
    return result


def _check(
    client: str,
    server: str | None,
    out: Path,
    seconds: float,
    only: Sequence[str],
    on_phase: Callable[[Phase, PhaseMetrics, float], None] | None,
) -> CheckResult:
    from l4slab.check.judge import disturbances, overall, phase_problems
    from l4slab.check.judge import judge as _judge
    from l4slab.check.measure import data_direction, measure
    from l4slab.check.report import write_report
    from l4slab.check.runner import run_phase

    work = out / "phases"
    work.mkdir(parents=True, exist_ok=True)
    metrics: dict[str, PhaseMetrics] = {}
    first = phases("up")[0]
    started = time.monotonic()
    t = time.monotonic()
    run = run_phase(first, client=client, server=server, seconds=seconds, data_dir="up",
                    workdir=work)  # fmt: skip
    data_dir = data_direction(run)
    metrics[first.name] = measure(run, data_dir)
    if on_phase:
        on_phase(first, metrics[first.name], time.monotonic() - t)
    if metrics[first.name].data_packets == 0:
        log = head_and_tail((run.dir / "client.log").read_text(errors="replace"))
        why = disturbances(metrics[first.name])
        if why:
            raise CheckDisturbedError(
                f"the application sent no data in the first phase (client exit code "
                f"{run.exit_code}), and the phase was disturbed: {'; '.join(why)}; nothing "
                "can be judged: run the check on a quieter machine; its output:\n" + log
            )
        raise CheckError(
            f"the application sent no data in the first phase (client exit code "
            f"{run.exit_code}); its output:\n{log}"
        )
    uses_ecn = metrics[first.name].codepoints["not_ect"] < 0.5
    # A first phase that cannot be judged (disturbed, the client failed or
    # delivered nothing) says nothing the others could build on.
    usable = phase_problems(metrics[first.name]) is None
    all_phases = phases(data_dir)
    for phase in all_phases[1:]:
        if only and phase.name not in only:
            continue
        if not uses_ecn or not usable:
            continue
        t = time.monotonic()
        run = run_phase(phase, client=client, server=server, seconds=seconds,
                        data_dir=data_dir, workdir=work)  # fmt: skip
        metrics[phase.name] = measure(run, data_dir)
        if on_phase:
            on_phase(phase, metrics[phase.name], time.monotonic() - t)
    checks = _judge(metrics)
    verdict = overall(checks, metrics)
    from l4slab import __version__

    meta = {
        "client": client,
        "server": server,
        "phase_seconds": seconds,
        "data_dir": data_dir,
        "version": __version__,
        "wall_s": round(time.monotonic() - started, 1),
        "phase_titles": {p.name: p.title for p in all_phases},
        "phase_sets": {
            p.name: list(p.sets) + ([f"ecn_path={p.ecn_path}"] if p.ecn_path else [])
            for p in all_phases
        },
        "skipped": [] if uses_ecn and usable else [p.name for p in all_phases[1:]],
    }
    write_report(out, checks=checks, metrics=metrics, verdict=verdict, meta=meta)
    return CheckResult(checks=checks, metrics=metrics, verdict=verdict, out=out)
