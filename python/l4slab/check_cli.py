"""``l4slab check-l4s [--server CMD] -- CLIENT CMD``: an L4S conformance report
for any program (needs root). The work is :func:`l4slab.check.check_l4s`; this
module only maps options, and the verdict to its exit code (errors go through
:func:`l4slab._cli_base.errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_VERDICT_FAILED,
    _fail,
    errors,
)
from l4slab.check import PHASE_NAMES, check_l4s, client_shell, default_server, validate_options
from l4slab.output import check_output_dir

if TYPE_CHECKING:
    from l4slab.check.measure import PhaseMetrics
    from l4slab.check.phases import Phase

__all__ = ["register"]

CHECK_HELP = "\n\n".join(
    [
        "Run CLIENT CMD (in the emulator's client namespace) and the server command (in the "
        "server namespace) through a series of short emulated paths, one emulator run each: "
        "ECN passed through DualPI2; CE marks on a known fraction of packets (2, 6, 18 %); "
        "a path that bleaches ECN; one that re-marks ECT(1) to ECT(0); an ECN black hole; a "
        "single-queue classic-ECN AQM shared with kernel Cubic; DualPI2 at a 4x longer RTT. "
        "Then read the application's own packets at the bottleneck (both directions) and "
        "judge each requirement of RFC 9331 §4 (and RFC 9000 §13.4.2) they show: PASS, FAIL "
        "(a MUST), WARN (a SHOULD or advice), NOT OBSERVABLE, NOT APPLICABLE.",
        "CLIENT CMD of several words runs as written, each word one argument (nothing "
        "split, globbed or substituted) except l4slab's variables, which are expanded: "
        "$L4SLAB_SERVER, $L4SLAB_SERVER_ECN (kernel TCP negotiates classic ECN to it), "
        "$L4SLAB_CHECK_SECONDS (how long to send) and the other variables of l4slab emu; "
        "quote them from your own shell ('$L4SLAB_SERVER'). A CLIENT CMD of one word is a "
        "shell command run by sh -c (pipes, redirections). Each phase is measured from its first "
        "packet (it may take up to 3 s to start); it is stopped 3 + 2 s after its phase "
        "ends.",
        "Example: [bold]sudo l4slab check-l4s -- l4slab send '$L4SLAB_SERVER' --cc prague -t "
        "'$L4SLAB_CHECK_SECONDS'[/bold] (the default server is l4slab serve).",
        "Writes OUT (default results/check-l4s/): summary.json, report.html (a figure "
        "per phase) and each phase's capture in phases/PHASE/pcap/, all at once when the "
        "check ends (an OUT that l4slab wrote before is replaced). A check that reads a "
        "phase that was disturbed (the emulator late, the endpoints waiting for a CPU) or "
        "where the client failed or delivered nothing is INCONCLUSIVE (never PASS). Exit code "
        "0 when no requirement FAILs and every MUST was judged, 3 when one FAILs, 1 when a "
        "MUST is INCONCLUSIVE (or the check could not run), 2 for bad input.",
    ]
)


def _progress(phase: Phase, m: PhaseMetrics, wall: float) -> None:
    from l4slab.check.judge import phase_problems

    cp = m.codepoints
    print(
        f"[{phase.name:<11}] {wall:4.1f} s  {m.goodput_mbit:6.2f} Mbit/s  "
        f"ECT(1) {cp['ect1'] + cp['ce']:.0%}  ECT(0) {cp['ect0']:.0%}  "
        f"CE {m.ce_fraction:.1%}  {phase.title}",
        flush=True,
    )
    problems = phase_problems(m)
    if problems is not None:
        print(f"{'':<14}{problems[0]}: {'; '.join(problems[1])}", flush=True)


def check(
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="CLIENT CMD...", help="The client command (after --)."),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="Shell command for the server namespace (default: l4slab serve). "
            "Example: --server 'iperf3 -s'.",
            metavar="CMD",
        ),
    ] = None,
    no_server: Annotated[bool, typer.Option("--no-server", help="Run no server command.")] = False,
    out: Annotated[
        Path,
        typer.Option(
            "-o",
            "--out",
            help="Write the report here (replaced when l4slab wrote it before).",
            metavar="DIR",
        ),
    ] = DEFAULT_RESULTS_ROOT / "check-l4s",
    seconds: Annotated[
        float,
        typer.Option(
            "--seconds",
            help="Length of each phase in seconds (2 to 60; 9 phases).",
        ),
    ] = 4.0,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help=f"Run only this phase (and l4s, which always runs); repeatable. "
            f"Phases: {', '.join(PHASE_NAMES)}.",
            metavar="PHASE",
        ),
    ] = None,
) -> None:
    if not command:
        raise _fail(
            "no CLIENT CMD; write e.g. l4slab check-l4s -- l4slab send '$L4SLAB_SERVER' "
            "--cc prague -t '$L4SLAB_CHECK_SECONDS'",
            EXIT_BAD_INPUT,
        )
    with errors():
        validate_options(seconds, only or ())
    with errors(about="--out"):
        check_output_dir(out)
    from l4slab import emu

    if not emu.is_root():
        raise _fail(
            "l4slab check-l4s needs root: it runs the emulator (network namespaces, TUN). "
            "Run it as root (e.g. with sudo).",
            EXIT_BAD_INPUT,
        )
    srv = None if no_server else (server if server is not None else default_server())
    with errors():
        result = check_l4s(
            client_shell(command),
            server=srv,
            out=out,
            seconds=seconds,
            only=only or (),
            on_phase=_progress,
        )
    print(result.text())
    print(f"report: {result.out / 'report.html'}")
    if result.failed:
        raise typer.Exit(EXIT_VERDICT_FAILED)
    raise typer.Exit(EXIT_FAILED if result.inconclusive else EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add ``check-l4s`` to the ``l4slab`` command line."""
    app.command(
        "check-l4s",
        help=CHECK_HELP,
        short_help="Does this application do L4S? A conformance report (needs root).",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(check)
