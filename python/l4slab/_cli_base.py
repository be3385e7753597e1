"""What every ``l4slab`` command module shares: exit codes, consoles, ``error:`` lines,
reading a scenario file, the progress bar. ``cli`` and the command modules it registers
(``sweep_cli``, ...) import it; it imports none of them.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Annotated, Any, Self

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
#: 128 + SIGTERM, what a shell reports for a process SIGTERM ended.
EXIT_TERMINATED = 143

DEFAULT_RESULTS_ROOT = Path("results")


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C (nothing half-written), exit code 143."""


def _help(*paragraphs: str) -> str:
    """Help text from paragraphs (each one line; the help formatter wraps them)."""
    return "\n\n".join(paragraphs)


def _stdout() -> Console:
    # Wide enough for the tables when output goes to a file or a pipe.
    return Console(width=None if sys.stdout.isatty() else 120, highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


#: Whether a command printed an ``error:`` line in this ``main`` call.
_failed = False


def failed() -> bool:
    """Whether an ``error:`` line was printed since :func:`reset_failed`."""
    return _failed


def reset_failed() -> None:
    global _failed
    _failed = False


def _fail(message: str, code: int) -> typer.Exit:
    """Print ``error: message`` on stderr and return the Exit to raise."""
    global _failed
    _failed = True
    _stderr().print(f"error: {message}", style="red", markup=False)
    return typer.Exit(code)


def _output_warning() -> type[Warning]:
    from l4slab.results import OutputWarning

    return OutputWarning


def _native() -> ModuleType:
    """The compiled simulator, or exit 1 explaining how to build it."""
    try:
        import l4slab.api  # noqa: F401  (turns a missing build into a clear ImportError)
        from l4slab import _native
    except ImportError as exc:
        raise _fail(str(exc), EXIT_FAILED) from None
    return _native


@contextmanager
def _notes(console: Console) -> Iterator[None]:
    """Print the library's :class:`~l4slab.results.OutputWarning`s as ``note:`` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", _output_warning())
        try:
            yield
        finally:
            for warning in caught:
                if issubclass(warning.category, _output_warning()):
                    console.print(f"note: {warning.message}", markup=False)
                else:
                    warnings.showwarning(
                        warning.message,
                        warning.category,
                        warning.filename,
                        warning.lineno,
                    )


def _read(scenario: Path) -> tuple[str, str]:
    """Read a scenario file for a command (bounded), or exit 2 naming the problem."""
    from l4slab._read import ScenarioFileError, read_scenario_file

    try:
        return read_scenario_file(scenario), str(scenario)
    except ScenarioFileError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None


def _dir_name(name: Any) -> str:
    """A scenario name made safe to use as one directory name."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name or "")).strip(".-")
    return safe or "scenario"


def _open(page: Path) -> None:
    import webbrowser

    if not webbrowser.open(page.resolve().as_uri()):
        _stderr().print(f"could not open a browser; open {page} yourself", markup=False)


class _Bar:
    """A transient progress bar over ``total`` items of ``unit`` (elapsed time, ETA), or
    nothing when not started; a context manager that stops it."""

    _progress: Progress | None = None
    _task: TaskID | None = None

    def _start_bar(self, console: Console, total: int, unit: str) -> None:
        self._progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TextColumn(f"{{task.completed}} of {{task.total}} {unit}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("running", total=total)

    def _advance(self, description: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, description=description)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


# --------------------------------------------------------------------------- options

ScenarioArg = Annotated[
    Path,
    typer.Argument(
        metavar="SCENARIO",
        help="Scenario TOML file, e.g. scenarios/examples/reno-20mbit.toml.",
        show_default=False,
    ),
]
AllowLargeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-large",
        help="Run even when the estimated cost is past the limits (more than 5,000 flows, "
        "20 million series rows, 250 million packet-trace rows; see docs/scenarios.md, "
        "Limits). Without it such a scenario exits with code 2 before anything runs.",
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override one scenario value by key path; repeatable. "
        "E.g. --set bottleneck.rate=50Mbit --set duration=10s.",
        show_default=False,
    ),
]
