"""The ``l4slab`` command line: thin sub-commands over the library, and ``main(argv)``.

The commands live in one module per family, each adding its own with ``register(app)``:
:mod:`~l4slab.run_cli` (run, validate, show), :mod:`~l4slab.examples_cli` (examples),
:mod:`~l4slab.report_cli` (report, compare), :mod:`~l4slab.reproduce_cli` (reproduce),
:mod:`~l4slab.emu_cli` (emu), :mod:`~l4slab.send_cli` (send, serve),
:mod:`~l4slab.sweep_cli` (sweep, plot-sweep), :mod:`~l4slab.check_cli` (check-l4s) and
:mod:`~l4slab.flent_cli` (test, flent). What they share, and the one table from errors to
exit codes, is :mod:`l4slab._cli_base`.

Exit codes: 0 success, 1 the simulation failed, 2 bad input (scenario, option,
output directory), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

A command line that names a command builds only that command's family
(:data:`FAMILIES`): Typer turns every declared command into its options on each run,
which for all of them cost a 1-second ``l4slab run`` a quarter of its process (issue
32). ``l4slab --help``, no command, or a word that is no command builds them all
(:func:`build_app`), so the help and the errors are Typer's as ever.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from l4slab._cli_base import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TERMINATED,
    RESULTS_HELP,
    UNITS_HELP,
    Terminated,
    _fail,
    _help,
    _native,
    failed,
    note_sigterm,
    reset_failed,
    terminated,
)
from l4slab._start import version_line

__all__ = ["FAMILIES", "build_app", "main"]

APP_HELP = _help(
    "l4slab puts a bottleneck between senders and receivers, chooses how it queues and how "
    "the endpoints react (congestion control, ECN / L4S), and measures what users feel: RTT "
    "percentiles, goodput, loss, completion times, frame latency and stalls. Scenarios are "
    "TOML files: a dumbbell with FIFO, CoDel, FQ-CoDel, PIE, FQ-PIE or DualPI2; Reno, CUBIC, "
    "DCTCP, Prague, BBR or BBRv3 with classic ECN or AccECN; bulk, file, web, ping, screen "
    "sharing, cloud gaming and video-call apps. The simulator is the default backend; as root, "
    "[bold]l4slab emu[/bold] runs real programs through the same bottleneck in real time.",
    "Examples: [bold]l4slab run reno-20mbit --set duration=10s[/bold]; "
    "[bold]l4slab reproduce all[/bold] (the published studies, PASS/FAIL per claim); "
    "[bold]l4slab sweep sweep-aqm[/bold] (a grid of AQMs, congestion "
    "controls, rates and RTTs; then [bold]l4slab plot-sweep[/bold]).",
    UNITS_HELP,
    RESULTS_HELP,
)


# --------------------------------------------------------------------------- root


def _print_version(value: bool) -> None:
    if value:
        _native()  # exit 1 saying how to build it when it is missing
        typer.echo(version_line())
        raise typer.Exit(EXIT_OK)


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the l4slab version and exit.",
        ),
    ] = False,
) -> None:
    """Entry point of the command group (options common to all commands)."""


# --------------------------------------------------------------------------- commands

#: The modules of the commands, each with the names its ``register(app)`` adds, in the
#: order `l4slab --help` lists them.
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("l4slab.run_cli", ("run", "validate", "show")),
    ("l4slab.examples_cli", ("examples",)),
    ("l4slab.report_cli", ("report", "compare")),
    ("l4slab.reproduce_cli", ("reproduce",)),
    ("l4slab.emu_cli", ("emu",)),
    ("l4slab.gateway_cli", ("gateway",)),
    ("l4slab.send_cli", ("send", "serve")),
    ("l4slab.sweep_cli", ("sweep", "plot-sweep")),
    ("l4slab.check_cli", ("check-l4s",)),
    ("l4slab.flent_cli", ("test", "flent")),
)


def build_app(args: Sequence[str] = ()) -> typer.Typer:
    """The ``l4slab`` command group for a command line: with only the family of the
    command ``args`` names, or with every command when they name none."""
    named = [m for m, names in FAMILIES if args and args[0] in names]
    app = typer.Typer(
        name="l4slab",
        help=APP_HELP,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode="rich",
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for module, _ in FAMILIES:
        if not named or module in named:
            importlib.import_module(module).register(app)
    return app


# --------------------------------------------------------------------------- main


def _on_sigterm(signum: int, frame: object) -> None:
    note_sigterm()
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    SIGTERM is handled like Ctrl-C: the command stops where it is, removes what it
    was writing, and the exit code is 143 (130 for Ctrl-C).
    """
    reset_failed()
    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(build_app(args))
    previous = _install_sigterm()
    try:
        # Standalone mode formats usage errors and turns every outcome into SystemExit.
        command.main(
            # No command: the help, then exit 2 as for any usage error (click before
            # 8.2 exits 0 here, later versions 2; say the same with every version).
            args=args or ["--help"],
            prog_name="l4slab",
            standalone_mode=True,
            obj={"command": ["l4slab", *args]},
        )
    except SystemExit as exc:
        if not args:
            return EXIT_BAD_INPUT
        code = _exit_code(exc.code)
        if code == EXIT_OK or not terminated(exc):
            return code
    except Terminated:
        pass
    else:
        return EXIT_OK
    finally:
        _restore_sigterm(previous)
    # SIGTERM. A command that handles Ctrl-C has said what it stopped (with exit code 130
    # or 143); for one that does not, typer ends with 130 and says nothing.
    if not failed():
        _fail("terminated (SIGTERM)", EXIT_TERMINATED)
    return EXIT_TERMINATED


def _install_sigterm() -> Any:
    """Make SIGTERM raise :class:`Terminated` in the main thread; return the old handler."""
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. main() called from a worker thread)
        return None


def _restore_sigterm(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _exit_code(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
