"""What every ``l4slab`` command module shares: exit codes and the one table that maps
errors to them (:data:`EXIT_CODES`, applied by :func:`errors`), consoles, ``error:``
lines, reading a scenario file, the progress bar, options several commands take.
``cli`` and the command modules it registers (``run_cli``, ``report_cli``,
``reproduce_cli``, ``sweep_cli``, ...) import it; it imports none of them.

Importing it costs Typer alone: rich is imported by the functions that print
(``l4slab --help`` and the command tree need neither it nor numpy, pyarrow or the
simulator; tests/test_cli_lazy.py).
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer

from l4slab import _interrupt
from l4slab._interrupt import Terminated as Terminated

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

EXIT_OK = 0
#: The run failed (simulation, emulation, a study's run), or results could not be written.
EXIT_FAILED = 1
#: Bad input: a scenario key or value, an option, a missing file, an output directory
#: l4slab may not use. Checked before anything runs.
EXIT_BAD_INPUT = 2
#: A verdict, not an error: ``check-l4s`` found a requirement FAILed, ``emu ecn-check``
#: found the path unfit for L4S.
EXIT_VERDICT_FAILED = 3
#: ``emu``: the emulator process itself died (killed by a signal), so there is no
#: COMMAND exit code to pass on; 125 as ``timeout``, ``env`` and ``docker run`` use it.
EXIT_EMULATOR_DIED = 125
EXIT_INTERRUPTED = 130
#: 128 + SIGTERM, what a shell reports for a process SIGTERM ended.
EXIT_TERMINATED = 143

DEFAULT_RESULTS_ROOT = Path("results")

UNITS_HELP = (
    "Units in scenario files and --set values: rates '20Mbit' (bit with a prefix k, M, G; "
    "'Bps' for bytes), times '25ms' (ns, us, ms, s, min, h), fractions '1%' (or a number "
    "such as 0.01), sizes '10MB' (B, kB, MB, GB; KiB, MiB, GiB are powers of two), buffers "
    "'100pkt' or a size or a time such as '50ms' (bytes at the link rate)."
)

RESULTS_HELP = (
    "Results go to results/<scenario name>/ unless -o DIR is given: summary.json, "
    "series.parquet, run.json, and packets.parquet when the scenario traces packets "
    "(see docs/results.md)."
)


def _help(*paragraphs: str) -> str:
    """Help text from paragraphs (each one line; the help formatter wraps them)."""
    return "\n\n".join(paragraphs)


# Both consoles print user text (file names, key paths, flow names, values) as written:
# emoji=False, or rich turns ``a:b:c`` into "a🅱c"; errors and notes print with
# markup=False, so ``[red]`` in a name is shown, not applied.


def _stdout() -> Console:
    from rich.console import Console

    # Wide enough for the tables when output goes to a file or a pipe.
    return Console(width=None if sys.stdout.isatty() else 120, highlight=False, emoji=False)


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


#: Whether a command printed an ``error:`` line in this ``main`` call.
_failed = False


def failed() -> bool:
    """Whether an ``error:`` line was printed since :func:`reset_failed`."""
    return _failed


def reset_failed() -> None:
    """A new ``main`` call: no ``error:`` line, no SIGTERM yet."""
    global _failed
    _failed = False
    _interrupt.reset_sigterm()


#: Remember that SIGTERM arrived (the handler calls it before raising :class:`Terminated`).
note_sigterm = _interrupt.note_sigterm


def interrupted_exit_code() -> int:
    """The exit code of a run a command stopped and reported itself (``send``, ``serve``):
    143 after SIGTERM, 130 after Ctrl-C."""
    return EXIT_TERMINATED if _interrupt.sigterm_seen() else EXIT_INTERRUPTED


def _fail(message: str, code: int) -> typer.Exit:
    """Print ``error: message`` on stderr and return the Exit to raise."""
    global _failed
    _failed = True
    _stderr().print(f"error: {message}", style="red", markup=False)
    return typer.Exit(code)


def terminated(exc: BaseException) -> bool:
    """Whether ``exc`` came from SIGTERM: it is :class:`Terminated`, or was raised while
    handling one (click wraps the interrupt in ``Abort``, a sweep in ``SweepInterrupted``)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Terminated):
            return True
        seen = seen.__context__ or seen.__cause__
    return False


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class ErrorCode:
    """An error class commands report, named by its module and name, with its exit code
    and the words put before its message (``simulation failed: ...``)."""

    module: str
    name: str
    code: int
    #: Before the error's text: "simulation failed" gives "simulation failed: TEXT".
    prefix: str = ""
    #: Reported only by a block that says what it writes (``errors(writing=WHAT)``):
    #: ``could not write WHAT: TEXT``. Elsewhere such an error is a bug and propagates.
    writes: bool = False
    #: Reported only by a block that reads results (``errors(reading=True)``), whose
    #: library calls raise it for bad input; elsewhere it is a bug and propagates.
    reads: bool = False
    #: The prefix in a block that runs a scenario through the emulator
    #: (``errors(emulation=True)``).
    emulating: str = ""

    def matches(self, exc: BaseException) -> bool:
        # Named rather than imported: if the module is not imported, nothing raised one
        # of its errors (and `l4slab --help` imports none of them).
        module = sys.modules.get(self.module)
        cls = getattr(module, self.name, None) if module is not None else None
        return isinstance(cls, type) and isinstance(exc, cls)


#: The exit code of every error an ``l4slab`` command reports as an ``error:`` line: the
#: first row the error is an instance of decides, so a subclass stands before its base.
#: Every command reports its errors through :func:`errors`, which reads this table alone.
EXIT_CODES: tuple[ErrorCode, ...] = (
    ErrorCode("l4slab._native", "ScenarioError", EXIT_BAD_INPUT),
    ErrorCode("l4slab._native", "SimulationError", EXIT_FAILED, "simulation failed"),
    ErrorCode("l4slab.studies.runner", "JobError", EXIT_FAILED, "simulation failed"),
    ErrorCode("l4slab._read", "ScenarioFileError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.emu", "NotRootError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.emu", "EmuInputError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.emu", "EmulatorDied", EXIT_EMULATOR_DIED),
    ErrorCode("l4slab.emu", "EmuError", EXIT_FAILED, emulating="emulation failed"),
    ErrorCode("l4slab.endpoints", "EndpointInputError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.endpoints", "EndpointError", EXIT_FAILED),
    ErrorCode("l4slab.check", "CheckInputError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.check", "CheckError", EXIT_FAILED),
    ErrorCode("l4slab.studies.spec", "StudyError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.sweep.spec", "SweepError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.sweep.pool", "ClusterError", EXIT_BAD_INPUT),
    ErrorCode("l4slab.shipped", "UnknownScenarioError", EXIT_BAD_INPUT),
    # The studies l4slab ships are missing: a broken install, not the user's input.
    ErrorCode("l4slab.shipped", "ShippedDataError", EXIT_FAILED),
    ErrorCode("l4slab.output", "OutputDirError", EXIT_BAD_INPUT),
    ErrorCode("builtins", "FileExistsError", EXIT_BAD_INPUT),
    # Reading results: no such bundle, not a bundle, a flow or a metric the data lacks.
    ErrorCode("builtins", "FileNotFoundError", EXIT_BAD_INPUT, reads=True),
    ErrorCode("builtins", "KeyError", EXIT_BAD_INPUT, reads=True),
    ErrorCode("builtins", "ValueError", EXIT_BAD_INPUT, reads=True),
    # The native module is not built (l4slab.api says how to build it).
    ErrorCode("builtins", "ImportError", EXIT_FAILED),
    ErrorCode("builtins", "OSError", EXIT_FAILED, writes=True),
)


def error_row(exc: BaseException) -> ErrorCode | None:
    """The row of :data:`EXIT_CODES` that ``exc`` is reported by, or None (a bug)."""
    return next((row for row in EXIT_CODES if row.matches(exc)), None)


@contextmanager
def errors(
    *,
    writing: str | None = None,
    reading: bool = False,
    about: str | None = None,
    interrupted: Callable[[KeyboardInterrupt], str | None] | None = None,
    input_only: bool = False,
    emulation: bool = False,
) -> Iterator[None]:
    """Report an error of the block as ``error: ...`` and exit with its code (:data:`EXIT_CODES`).

    What the block adds to the table:

    * ``writing``: what it writes; an ``OSError`` is then ``could not write WRITING: ...``
      (elsewhere an ``OSError`` is not expected and propagates);
    * ``reading``: the block reads results or looks names up in them (:mod:`l4slab.results`,
      the plots), which raise a plain ``ValueError``, ``KeyError`` or
      ``FileNotFoundError`` for bad input; elsewhere those are bugs and propagate;
    * ``about``: the option its errors are about (``--out: ...``);
    * ``interrupted``: the message for Ctrl-C (exit 130) or SIGTERM (143); without one,
      or when it gives None, the interrupt propagates;
    * ``input_only``: the block only checks options, so any error is bad input (exit 2);
    * ``emulation``: the block runs a scenario through the emulator (``emulation failed:``).

    An error the table does not know propagates unchanged: it is a bug, with a traceback.
    """
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt as exc:
        message = interrupted(exc) if interrupted is not None else None
        if message is None:
            raise
        raise _fail(message, EXIT_TERMINATED if terminated(exc) else EXIT_INTERRUPTED) from None
    except Exception as exc:
        row = error_row(exc)
        if row is None or (row.writes and writing is None) or (row.reads and not reading):
            raise
        text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        prefix = row.prefix
        if row.writes:
            prefix = f"could not write {writing}"
        elif emulation and row.emulating:
            prefix = row.emulating
        if prefix:
            text = f"{prefix}: {text}"
        if about is not None:
            text = f"{about}: {text}"
        raise _fail(text, EXIT_BAD_INPUT if input_only else row.code) from None


def _output_warning() -> type[Warning]:
    from l4slab.results import OutputWarning

    return OutputWarning


def _native() -> ModuleType:
    """The compiled simulator, or exit 1 explaining how to build it."""
    with errors():
        import l4slab.api  # noqa: F401  (turns a missing build into a clear ImportError)
        from l4slab import _native
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


def _scenario(scenario: Path) -> Path:
    """The scenario file a command's SCENARIO names: the file, else the shipped scenario
    of that name (``reno-20mbit``), or exit 2 listing the shipped names."""
    from l4slab.shipped import find_scenario

    with errors():
        return find_scenario(scenario)


def _read(scenario: Path) -> tuple[str, str]:
    """Read a scenario file (after :func:`_scenario`) for a command (bounded), or exit 2
    naming the problem."""
    from l4slab._read import read_scenario_file

    with errors():
        text = read_scenario_file(scenario)
    return text, str(scenario)


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

    def _start_bar(
        self,
        console: Console,
        total: float,
        count: str,
        *,
        label: str = "{task.description}",
        eta: str = "ETA",
    ) -> None:
        """Draw the bar: ``label`` (the task's description by default), the bar, ``count``
        (a format of the task, e.g. ``{task.completed} of {task.total} runs``), the time
        elapsed, ``eta`` (no column when empty) and the time remaining."""
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn(label, markup=False),
            BarColumn(),
            TextColumn(count),
            TimeElapsedColumn(),
            *([TextColumn(eta)] if eta else []),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("running", total=total)

    @staticmethod
    def _of(unit: str) -> str:
        """The count column of ``total`` whole items of ``unit``."""
        return f"{{task.completed}} of {{task.total}} {unit}"

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


def opt(*names: str, **kwargs: Any) -> Any:
    """A ``typer.Option`` whose help shows no default (its text says what happens without it)."""
    return typer.Option(*names, show_default=False, **kwargs)


def out_opt(metavar: str, help: str) -> Any:
    """``-o/--out METAVAR``: where a command writes."""
    return opt("-o", "--out", metavar=metavar, help=help)


def arg(**kwargs: Any) -> Any:
    """A ``typer.Argument`` whose help shows no default."""
    return typer.Argument(show_default=False, **kwargs)


ScenarioArg = Annotated[
    Path,
    arg(
        metavar="SCENARIO",
        help="Scenario TOML file, or the name of a shipped one (l4slab examples lists them), "
        "e.g. reno-20mbit.",
    ),
]
AllowLargeOpt = Annotated[
    bool,
    typer.Option(
        "--allow-large",
        help="Run even when the estimated cost is past the limits (more than 5,000 flows, "
        "1,000 Wi-Fi stations, 1,500 MB of RTP calls, 10 million ping probes, 20 million series "
        "rows, 250 million packet-trace rows; a sweep of more than 10,000 cells; see "
        "docs/scenarios.md, Limits). Without it such a scenario exits with code 2 before "
        "anything runs.",
    ),
]
ResultsDirArg = Annotated[
    Path,
    arg(metavar="DIR", help="A results directory written by l4slab run, e.g. results/reno-20mbit."),
]
SetOpt = Annotated[
    list[str] | None,
    opt(
        "--set",
        metavar="KEY=VALUE",
        help="Override one scenario value by key path; repeatable. "
        "E.g. --set bottleneck.rate=50Mbit --set duration=10s.",
    ),
]
