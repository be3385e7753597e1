"""The ``l4slab`` command line: thin sub-commands over the library.

Exit codes: 0 success, 1 the simulation failed, 2 bad input (scenario, option,
output directory), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

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
from rich.text import Text

from l4slab import results as results_mod
from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    AllowLargeOpt,
    ScenarioArg,
    SetOpt,
    Terminated,
    _Bar,
    _dir_name,
    _fail,
    _help,
    _native,
    _notes,
    _open,
    _read,
    _stderr,
    _stdout,
    failed,
    reset_failed,
)
from l4slab._types import SEED_MAX
from l4slab.output import PCAP_DIR
from l4slab.tables import summary_view

__all__ = ["app", "main"]

#: Show the progress bar only for runs that last longer than this (wall seconds).
PROGRESS_DELAY_S = 1.0

_UNITS = (
    "Units in scenario files and --set values: rates '20Mbit' (bit with a prefix k, M, G; "
    "'Bps' for bytes), times '25ms' (ns, us, ms, s, min, h), fractions '1%' (or a number "
    "such as 0.01), sizes '10MB' (B, kB, MB, GB; KiB, MiB, GiB are powers of two), buffers "
    "'100pkt' or a size or a time such as '50ms' (bytes at the link rate)."
)

_RESULTS = (
    "Results go to results/<scenario name>/ unless -o DIR is given: summary.json, "
    "series.parquet, run.json, and packets.parquet when the scenario traces packets "
    "(see docs/results.md)."
)


APP_HELP = _help(
    "l4slab puts a bottleneck between senders and receivers, chooses how it queues and how "
    "the endpoints react (congestion control, ECN / L4S), and measures what users feel: RTT "
    "percentiles, goodput, loss, completion times, frame latency and stalls. Scenarios are "
    "TOML files: a dumbbell with FIFO, CoDel, FQ-CoDel, PIE, FQ-PIE or DualPI2; Reno, CUBIC, "
    "DCTCP, Prague, BBR or BBRv3 with classic ECN or AccECN; bulk, file, web, ping, screen "
    "sharing, cloud gaming and video-call apps. The simulator is the default backend; as root, "
    "[bold]l4slab emu[/bold] runs real programs through the same bottleneck in real time.",
    "Examples: [bold]l4slab run scenarios/examples/reno-20mbit.toml --set duration=10s[/bold]; "
    "[bold]l4slab reproduce all[/bold] (the published studies, PASS/FAIL per claim); "
    "[bold]l4slab sweep scenarios/examples/sweep-aqm.toml[/bold] (a grid of AQMs, congestion "
    "controls, rates and RTTs; then [bold]l4slab plot-sweep[/bold]).",
    _UNITS,
    _RESULTS,
)

RUN_SHORT = "Simulate a scenario, write its results and print a summary."
RUN_HELP = _help(
    "Simulate SCENARIO, write its results bundle and print a summary table. The scenario is "
    "validated first: a bad key or value stops with exit code 2, names the key path, and "
    "writes nothing. A progress bar appears when the run lasts more than a second.",
    "Example: [bold]l4slab run scenarios/examples/reno-20mbit.toml -o results/reno --seed 7 "
    "--set bottleneck.rate=50Mbit[/bold]",
    _UNITS,
    _RESULTS + " An existing results directory there is replaced only once the new one is "
    "complete, and only if its manifest (.l4slab-manifest.json) lists every file in it: "
    "l4slab never removes a file it did not write. A symlinked -o is followed. Without -o, "
    "another scenario's results in results/<name> are refused (use -o).",
    "Exit codes: 0 done, 1 the simulation failed, 2 bad input or output directory (checked "
    "before simulating), 130 Ctrl-C, 143 SIGTERM; on 130 and 143 nothing is written.",
)

VALIDATE_SHORT = "Check a scenario and print it resolved, as JSON."
VALIDATE_HELP = _help(
    "Check SCENARIO (with any --set overrides) and print the resolved scenario as JSON: every "
    "default filled in and every unit converted (times in nanoseconds, rates in bit/s, sizes "
    "in bytes). Nothing is simulated or written. A bad key or value exits with code 2 and "
    "names the key path.",
    "Example: [bold]l4slab validate scenarios/examples/reno-20mbit.toml --set duration=5s[/bold]",
    _UNITS,
    "Results: none; [bold]l4slab run[/bold] writes them to results/<scenario name>/.",
)

SHOW_SHORT = "Print the summary tables of a results directory."
SHOW_HELP = _help(
    "Print the summary tables of a results directory written by [bold]l4slab run[/bold]: per "
    "flow goodput, bytes delivered, completion time, RTT percentiles, retransmits and "
    "losses; per queue sojourn percentiles, drops and marks by reason, and utilization.",
    "Example: [bold]l4slab show results/reno-20mbit[/bold]",
    "Units in the tables: goodput in Mbit/s, RTT and sojourn in ms, completion in s, sizes in "
    "decimal bytes (1 MB = 10^6 B), utilization in % of the link rate.",
    "Results are read from DIR (l4slab run writes to results/<scenario name>/ by default); "
    "nothing is written.",
)

REPORT_SHORT = "Write the HTML report and figures of a results directory."
REPORT_HELP = _help(
    "Write DIR/report.html, one self-contained page (open it in any browser, or mail it): "
    "the scenario and its topology, the summary tables, figures (RTT CDF per flow; goodput, "
    "congestion window, RTT, queue sojourn per queue and sub-queue, drops and marks, and the "
    "AQM's marking/drop probability over time; a tcptrace-style time-sequence graph when the "
    "run has a packet trace), every metric, and the facts of the run. Each figure is also "
    "written as PNG and SVG in DIR/figures/.",
    "Example: [bold]l4slab report results/dualpi2-reno --open[/bold]",
    "The time-sequence graph needs packets.parquet: run with --set packet_trace=true. "
    "It is drawn for the whole run (decimated into time bins when the flow is long) and "
    "zoomed around the first loss, or on the range --tsg-window gives. "
    "[bold]l4slab run SCENARIO --report[/bold] runs and reports in one go.",
)

COMPARE_SHORT = "Compare results directories side by side (tables and overlaid CDFs)."
COMPARE_HELP = _help(
    "Compare two or more results directories: for each flow name and queue name found in "
    "several runs, a table with one column per run (goodput, RTT p50/p99, retransmits, "
    "queue delay p50/p99, drops, marks), and overlaid RTT and queue-delay CDFs, one line per "
    "run. Prints the tables and writes OUT/compare.html with its figures (PNG and SVG) in "
    "OUT/figures/.",
    "Example: [bold]l4slab compare results/fifo-reno results/codel-reno "
    "results/dualpi2-reno -o results/aqms[/bold]",
    "Runs are labelled with their scenario names, or with their directory names when "
    "scenario names repeat; --label sets them. OUT defaults to results/compare; it may be "
    "missing, empty or an earlier comparison, nothing else.",
)

app = typer.Typer(
    name="l4slab",
    help=APP_HELP,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --------------------------------------------------------------------------- consoles


# --------------------------------------------------------------------------- root


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"l4slab {_native().__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
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


# --------------------------------------------------------------------------- options

# --------------------------------------------------------------------------- run


class _LazyProgress:
    """The ``progress`` callback of a run: draws a bar only once the run is slow.

    Nothing is drawn for the first ``delay`` seconds, so short runs print no bar.
    """

    def __init__(
        self,
        console: Console,
        *,
        enabled: bool,
        delay: float = PROGRESS_DELAY_S,
        label: str = "simulating",
    ):
        self._console = console
        self._enabled = enabled
        self._label = label
        self._delay = delay
        self._start = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, sim_s: float, duration_s: float) -> None:
        if not self._enabled:
            return
        if self._progress is None:
            if time.monotonic() - self._start < self._delay:
                return
            self._progress = Progress(
                TextColumn(self._label, markup=False),
                BarColumn(),
                TextColumn("{task.completed:.1f} of {task.total:.1f} s"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("simulating", total=duration_s)
        assert self._task is not None
        self._progress.update(self._task, completed=sim_s, total=duration_s)

    def __enter__(self) -> _LazyProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


@app.command("run", help=RUN_HELP, short_help=RUN_SHORT)
def run_command(
    ctx: typer.Context,
    scenario: ScenarioArg,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            metavar="DIR",
            help="Results directory. Default: results/<scenario name>.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=SEED_MAX,
            help="Root seed, an integer from 0 to 2^63-1; replaces the scenario's seed.",
            show_default=False,
        ),
    ] = None,
    overrides: SetOpt = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress bar and no tables; print only where results went."
        ),
    ] = False,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="Also write DIR/report.html and DIR/figures/ (see l4slab report).",
        ),
    ] = False,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            metavar="sim|emu",
            help="sim: the simulator. emu: real time through the emulator (needs root; see "
            "docs/emulator.md): kernel TCP flows, and l4slab's own endpoints on UDP for what "
            "the kernel cannot carry (Prague, DCTCP, BBRv3, ECT(1), QUIC, RTP media, ping).",
        ),
    ] = "sim",
    allow_large: AllowLargeOpt = False,
) -> None:
    text, source = _read(scenario)
    native = _native()
    from l4slab import api, emu

    sets = list(overrides or [])
    if backend not in ("sim", "emu"):
        raise _fail(f"--backend {backend!r}: choose sim or emu", EXIT_BAD_INPUT)
    limits = None if allow_large else backend
    try:
        if backend == "emu":
            resolved = emu.validate(text, source, sets)
            if limits is not None:
                api.validate_text(text, source, sets, limits=limits)
        else:
            resolved = api.validate_text(text, source, sets, limits=limits)
    except (native.ScenarioError, emu.EmuInputError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except emu.EmuError as exc:
        raise _fail(str(exc), EXIT_FAILED) from None
    named = out is None
    target = results_mod.output_path(
        out if out is not None else DEFAULT_RESULTS_ROOT / _dir_name(resolved.get("name"))
    )
    try:
        results_mod.check_output_dir(target)
        if named:
            # Two scenario names can clean up to the same directory name.
            results_mod.check_same_scenario(
                target, str(resolved.get("name") or ""), str(scenario.resolve())
            )
    except FileExistsError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None

    err = _stderr()
    if not quiet:
        from l4slab.sweep.spec import sweep_table

        if sweep_table(text) is not None:
            err.print(
                f"note: {scenario} has a [sweep] grid; l4slab run runs its base scenario "
                f"(l4slab sweep {scenario} runs the grid)",
                markup=False,
                soft_wrap=True,
            )
    command = (ctx.obj or {}).get("command")
    traced = bool(resolved.get("packet_trace"))
    label = "simulating, writing packets.parquet" if traced else "simulating"
    try:
        with (
            _notes(err),
            _LazyProgress(err, enabled=not quiet and err.is_terminal, label=label) as progress,
        ):
            results = api.run(
                scenario,
                out=target,
                seed=seed,
                overrides=sets,
                progress=progress,
                command=command,
                backend=backend,
                allow_large=allow_large,
            )
    except Terminated:
        raise _fail("terminated (SIGTERM); nothing was written", EXIT_TERMINATED) from None
    except KeyboardInterrupt:
        raise _fail("interrupted; nothing was written", EXIT_INTERRUPTED) from None
    except (emu.NotRootError, emu.EmuInputError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except emu.EmuError as exc:
        raise _fail(f"emulation failed: {exc}", EXIT_FAILED) from None
    except native.ScenarioError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except native.SimulationError as exc:
        raise _fail(f"simulation failed: {exc}", EXIT_FAILED) from None
    except (results_mod.OutputDirError, FileExistsError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except OSError as exc:
        raise _fail(f"could not write results to {target}: {exc}", EXIT_FAILED) from None

    files = [
        name
        for name in results_mod.BUNDLE_FILES
        if name != results_mod.PACKETS_FILE or results.has_packets
    ]
    if (target / PCAP_DIR).is_dir():
        files.append(f"{PCAP_DIR}/")
    console = _stdout()
    if not quiet:
        console.print(summary_view(results))
        if backend == "emu":
            console.print(emu.timing_line(results.summary), markup=False, soft_wrap=True)
    shown = target if out is None or not Path(out).is_symlink() else f"{out} -> {target}"
    console.print(f"results: {shown}/ ({', '.join(files)})", markup=False, soft_wrap=True)
    if report:
        page = _write_report(target, flow=None)
        console.print(f"report: {page}", markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- validate


@app.command("validate", help=VALIDATE_HELP, short_help=VALIDATE_SHORT)
def validate_command(
    scenario: ScenarioArg, overrides: SetOpt = None, allow_large: AllowLargeOpt = False
) -> None:
    text, source = _read(scenario)
    native = _native()
    from l4slab import api

    sets = list(overrides or [])
    try:
        resolved = api.validate_text(text, source, sets, limits=None if allow_large else "sim")
        cost = native.estimate(text, source, sets, api.trace_dirs())
    except native.ScenarioError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    # Keep the native key order (it follows the schema), just indent it.
    typer.echo(json.dumps(resolved, indent=2))
    _stderr().print(cost_line(cost), markup=False)


def cost_line(cost: Any) -> str:
    """E.g. ``estimated cost: 1 flow; 300 samples x 21 = 6,300 series rows; no packet trace``."""
    flows = cost["flows"]
    parts = [
        f"{flows:,} flow{'' if flows == 1 else 's'}",
        f"{cost['samples']:,} samples x {cost['rows_per_sample']:,} = "
        f"{cost['series_rows']:,} series rows",
        f"about {cost['trace_rows']:,} packet-trace rows"
        if cost["trace_rows"]
        else "no packet trace",
    ]
    limits = cost["limits"]
    pcap_limit = ""
    if cost["pcap_records"]:
        parts.append(f"about {cost['pcap_records']:,} pcap records")
        pcap_limit = f", {limits['pcap_records']:,} pcap records"
    return (
        f"estimated cost: {'; '.join(parts)} (limits: {limits['flows']:,} flows, "
        f"{limits['series_rows']:,} series rows, {limits['trace_rows']:,} trace rows"
        f"{pcap_limit})"
    )


# --------------------------------------------------------------------------- show


@app.command("show", help=SHOW_HELP, short_help=SHOW_SHORT)
def show_command(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="DIR",
            help="A results directory written by l4slab run, e.g. results/reno-20mbit.",
            show_default=False,
        ),
    ],
) -> None:
    try:
        results = results_mod.load(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    console = _stdout()
    console.print(summary_view(results))
    console.print(f"results: {directory}/", markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- report


@app.command("report", help=REPORT_HELP, short_help=REPORT_SHORT)
def report_command(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="DIR",
            help="A results directory written by l4slab run, e.g. results/reno-20mbit.",
            show_default=False,
        ),
    ],
    flow: Annotated[
        str | None,
        typer.Option(
            "--flow",
            metavar="NAME",
            help="Flow of the time-sequence graph. Default: the first flow.",
            show_default=False,
        ),
    ] = None,
    tsg_window: Annotated[
        str | None,
        typer.Option(
            "--tsg-window",
            metavar="T0:T1",
            help="Time range in seconds of the zoomed time-sequence graph, e.g. 12.5:13.0 "
            "(every packet in it is drawn). Default: around the flow's first loss, "
            "retransmission or CE mark.",
            show_default=False,
        ),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the report in the web browser.")
    ] = False,
) -> None:
    window = _time_range(tsg_window, "--tsg-window") if tsg_window is not None else None
    page = _write_report(directory, flow=flow, tsg_window=window)
    _stdout().print(f"report: {page}", markup=False, soft_wrap=True)
    if open_page:
        _open(page)


def _time_range(text: str, option: str) -> tuple[float, float]:
    """``"12.5:13"`` -> ``(12.5, 13.0)``, or exit naming the option."""
    start, sep, stop = text.partition(":")
    try:
        if not sep:
            raise ValueError
        t0, t1 = float(start), float(stop)
    except ValueError:
        raise _fail(
            f"{option}: {text!r} is not a range; write e.g. 12.5:13", EXIT_BAD_INPUT
        ) from None
    if not (0 <= t0 < t1 and t1 < float("inf")):
        raise _fail(
            f"{option}: {text!r} is not a range; write T0:T1 with 0 <= T0 < T1", EXIT_BAD_INPUT
        )
    return t0, t1


def _write_report(
    directory: Path, *, flow: str | None, tsg_window: tuple[float, float] | None = None
) -> Path:
    """Write the report of a bundle, or exit naming the problem."""
    from l4slab.report import write_report

    try:
        results = results_mod.load(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    try:
        return write_report(results, flow=flow, tsg_window=tsg_window)
    except KeyError as exc:
        raise _fail(str(exc.args[0]) if exc.args else str(exc), EXIT_BAD_INPUT) from None
    except (FileExistsError, results_mod.OutputDirError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except OSError as exc:
        raise _fail(f"could not write the report in {directory}: {exc}", EXIT_FAILED) from None


# --------------------------------------------------------------------------- compare


DEFAULT_COMPARE_DIR = DEFAULT_RESULTS_ROOT / "compare"


@app.command("compare", help=COMPARE_HELP, short_help=COMPARE_SHORT)
def compare_command(
    directories: Annotated[
        list[Path],
        typer.Argument(
            metavar="DIR",
            help="Two or more results directories, e.g. results/fifo-reno results/codel-reno.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            metavar="OUT",
            help="Where compare.html and figures/ go. Default: results/compare.",
            show_default=False,
        ),
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            metavar="LABEL",
            help="Name of a run, once per DIR in order. Default: scenario or directory names.",
            show_default=False,
        ),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the comparison in the web browser.")
    ] = False,
) -> None:
    from l4slab.compare import check_compare_dir, compare, comparison_tables, run_labels
    from l4slab.tables import rich_table

    if len(directories) < 2:
        raise _fail("give at least two results directories to compare", EXIT_BAD_INPUT)
    target = out if out is not None else DEFAULT_COMPARE_DIR
    try:
        runs = [results_mod.load(d) for d in directories]
        check_compare_dir(target)
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    names = list(labels) if labels else run_labels(runs)
    try:
        page = compare(runs, target, labels=names)
    except (ValueError, FileExistsError, results_mod.OutputDirError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except OSError as exc:
        raise _fail(f"could not write the comparison to {target}: {exc}", EXIT_FAILED) from None
    console = _stdout()
    for table in comparison_tables(runs, names):
        console.print(rich_table(table))
    console.print(f"comparison: {page}", markup=False, soft_wrap=True)
    if open_page:
        _open(page)


# --------------------------------------------------------------------------- reproduce

REPRODUCE_SHORT = "Reproduce a published study: run it and check its claims."
REPRODUCE_HELP = _help(
    "Run the study STUDY (a directory with a study.toml: runs, "
    "measures, published values and claims), then print the published and measured values "
    "side by side and a PASS or FAIL for every claim. STUDY is a study id, a path to a "
    "study directory, or [bold]all[/bold] for every study (ending with one summary table). "
    "The runs go to a process pool (--jobs).",
    "Example: [bold]l4slab reproduce litespeed-bbr-loss[/bold]; [bold]l4slab reproduce "
    "--list[/bold]; [bold]l4slab reproduce all[/bold]",
    "Writes OUT/<id>/ (default results/studies/<id>/): study.json (measures, claims, "
    "verdicts; the same study gives a byte-identical file), report.html with the study's "
    "figures, table.md, and each run's results bundle in <run>/ (<run>/seed-N/ for several "
    "seeds). Exit code 0 when every claim holds, 1 when a claim fails or a run fails, 2 for "
    "a bad study.toml (the error names the key path). See docs/studies.md.",
    "Resumable: until the study is complete its runs are kept in OUT/.<id>.cells/, one "
    "bundle per cell key (the resolved scenario, the seed and the l4slab version, as a "
    "sweep's); after Ctrl-C, a crash or a failed run, the same command reads back the runs "
    "that finished instead of simulating them again.",
)

DEFAULT_STUDIES_OUT = DEFAULT_RESULTS_ROOT / "studies"


def _studies_root(option: Path | None) -> Path:
    """Where studies live: --studies DIR, else the studies l4slab ships (package data)."""
    from l4slab import shipped

    if option is not None:
        if not option.is_dir():
            raise _fail(f"--studies {option}: no such directory", EXIT_BAD_INPUT)
        return option
    try:
        return shipped.studies_dir()
    except shipped.ShippedDataError as exc:
        raise _fail(str(exc), EXIT_FAILED) from None


@app.command("reproduce", help=REPRODUCE_HELP, short_help=REPRODUCE_SHORT)
def reproduce_command(
    study: Annotated[
        str | None,
        typer.Argument(
            metavar="STUDY",
            help="A study id (e.g. litespeed-bbr-loss), a study directory, or 'all'.",
            show_default=False,
        ),
    ] = None,
    list_studies: Annotated[
        bool, typer.Option("--list", help="List the studies and exit.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            metavar="OUT",
            help="Where study results go (OUT/<id>/). Default: results/studies.",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Worker processes. Default: one per CPU, at most 2.",
            show_default=False,
        ),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            metavar="ADDRESS",
            help="Run the simulations on a Dask cluster: its scheduler's address, e.g. "
            "tcp://10.0.0.5:8786 (pip install 'l4slab\\[dask]' here and on the workers, the "
            "same l4slab version). The workers send each run's bundle back; study.json is "
            "the same, byte for byte.",
            show_default=False,
        ),
    ] = None,
    studies_dir: Annotated[
        Path | None,
        typer.Option(
            "--studies",
            metavar="DIR",
            help="Where to look for study ids. Default: the studies l4slab ships "
            "(in the source tree: scenarios/studies).",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress bar and no tables; only the verdicts."),
    ] = False,
    no_report: Annotated[
        bool,
        typer.Option(
            "--no-report", help="Skip report.html and the figures (study.json is still written)."
        ),
    ] = False,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the study report in the web browser.")
    ] = False,
) -> None:
    from l4slab import studies
    from l4slab.studies import report as study_report
    from l4slab.studies.runner import default_jobs

    root = _studies_root(studies_dir)
    if list_studies:
        _list_studies(root)
        return
    if study is None:
        raise _fail("give a study id, 'all', or --list; e.g. l4slab reproduce --list", 2)
    try:
        if study == "all":
            found = studies.find_studies(root)
            if not found:
                raise _fail(f"no studies in {root} (directories with a study.toml)", 2)
            specs = [studies.load_study(path) for path in found]
        else:
            specs = [studies.load_study(_study_dir(root, study))]
    except studies.StudyError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    _native()  # a clear error (exit 1) when the simulator is not built
    target = out if out is not None else DEFAULT_STUDIES_OUT
    workers = jobs or default_jobs()
    console = _stdout()
    outcomes = []
    with contextlib.ExitStack() as stack:
        client = None
        if dask is not None:
            from l4slab.sweep import pool

            try:
                client = stack.enter_context(pool.dask_client(dask))
                pool.check_cluster(client)
            except pool.ClusterError as exc:
                raise _fail(f"--dask {dask}: {exc}", EXIT_BAD_INPUT) from None
        for spec in specs:
            outcomes.append(
                _reproduce_one(spec, target, workers, client, quiet, no_report, open_page)
            )
    if len(outcomes) > 1:
        console.print(study_report.summary_table(outcomes))
    if not all(outcome.passed for outcome in outcomes):
        raise typer.Exit(EXIT_FAILED)


def _reproduce_one(
    spec: Any,
    target: Path,
    workers: int,
    client: Any,
    quiet: bool,
    no_report: bool,
    open_page: bool,
) -> Any:
    """One study of ``l4slab reproduce``: run it, print its tables and verdict."""
    from l4slab import studies
    from l4slab.studies import report as study_report
    from l4slab.studies.runner import JobError, cell_store
    from l4slab.sweep.pool import ClusterError

    console, err = _stdout(), _stderr()
    if not quiet:
        err.print(
            f"study {spec.id}: {spec.title} — {spec.jobs} simulations (fewer when a "
            f"run has nothing random), {workers} process{'es' if workers > 1 else ''}",
            markup=False,
        )
    try:
        with _StudyProgress(err, spec.jobs, enabled=not quiet and err.is_terminal) as bar:
            outcome = studies.reproduce(
                spec,
                target,
                workers=workers,
                on_done=bar.advance,
                on_skip=bar.skip,
                report=not no_report,
                dask=client,
            )
    except KeyboardInterrupt:
        raise _fail(
            f"interrupted; the runs that finished are kept in {cell_store(target / spec.id)}/: "
            "run the same command again to resume",
            EXIT_INTERRUPTED,
        ) from None
    except ClusterError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except studies.StudyError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except (FileExistsError, results_mod.OutputDirError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except JobError as exc:
        raise _fail(f"simulation failed: {exc}", EXIT_FAILED) from None
    except OSError as exc:
        raise _fail(f"could not write the study results: {exc}", EXIT_FAILED) from None
    if not quiet:
        for table in study_report.measures_tables(outcome):
            console.print(table)
        console.print(study_report.claims_table(outcome))
    holds = study_report.holds_text(outcome, "claims ")
    verdict = outcome.verdict.upper()
    console.print(
        f"{spec.id}: {holds} — {verdict}; results: {outcome.path}/",
        markup=False,
        soft_wrap=True,
    )
    if open_page and outcome.path is not None and not no_report:
        _open(outcome.path / study_report.REPORT_FILE)
    return outcome


def _study_dir(root: Path, study: str) -> Path:
    """A study id under ``root``, or a path to a study directory; exit 2 if neither."""
    from l4slab.studies import find_studies
    from l4slab.studies.spec import STUDY_FILE

    candidate = Path(study)
    if (candidate / STUDY_FILE).is_file():
        return candidate
    if (root / study / STUDY_FILE).is_file():
        return root / study
    known = ", ".join(path.name for path in find_studies(root)) or "none"
    raise _fail(f"no study {study!r} in {root}; studies: {known} (or give 'all')", EXIT_BAD_INPUT)


def _list_studies(root: Path) -> None:
    from rich import box
    from rich.table import Table

    from l4slab import studies

    found = studies.find_studies(root)
    if not found:
        raise _fail(
            f"no studies in {root} (a study is a directory with a study.toml); give --studies DIR",
            EXIT_BAD_INPUT,
        )
    # Every cell is plain Text: a title such as ":x: [red]" is shown as written.
    table = Table(title=Text(f"studies in {root}"), title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("study", "title", "simulations", "claims", "source"):
        table.add_column(header, justify="right" if header in ("simulations", "claims") else "left")
    for path in found:
        try:
            spec = studies.load_study(path)
        except studies.StudyError as exc:
            table.add_row(Text(path.name), Text(f"invalid: {exc}", style="red"), "", "", "")
            continue
        cells = (spec.id, spec.title, str(spec.jobs), str(len(spec.claims)), spec.source)
        table.add_row(*(Text(cell) for cell in cells))
    _stdout().print(table)


class _StudyProgress(_Bar):
    """A bar over a study's simulations (nothing drawn when disabled)."""

    def __init__(self, console: Console, total: int, *, enabled: bool):
        if enabled:
            self._start_bar(console, total, "runs")

    def advance(self, result: Any) -> None:
        self._advance(f"{'reused' if result.reused else 'done'} {result.run}")

    def skip(self, job: Any) -> None:
        """A seed not run: its run's first seed drew no random number."""
        self._advance(f"{job.run}: same for every seed")


# --------------------------------------------------------------------------- emu

from l4slab.emu_cli import app as _emu_app  # noqa: E402  (registered after the core commands)

app.add_typer(_emu_app, name="emu")

# --------------------------------------------------------------------------- send / serve

from l4slab.send_cli import register as _register_send  # noqa: E402

_register_send(app)

# --------------------------------------------------------------------------- sweep

from l4slab.sweep_cli import register as _register_sweep  # noqa: E402

_register_sweep(app)

# --------------------------------------------------------------------------- check-l4s

from l4slab.check_cli import register as _register_check  # noqa: E402

_register_check(app)


# --------------------------------------------------------------------------- main


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    SIGTERM is handled like Ctrl-C: the command stops where it is, removes what it
    was writing, and the exit code is 143 (130 for Ctrl-C).
    """
    reset_failed()
    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(app)
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
        if _terminated(exc) and code != EXIT_OK:
            # A command that handles Ctrl-C has said what it stopped (with exit code 130
            # or 143); for one that does not, typer ends with 130 and says nothing.
            if not failed():
                _stderr().print("error: terminated (SIGTERM)", style="red", markup=False)
            return EXIT_TERMINATED
        return code
    except Terminated:
        _stderr().print("error: terminated (SIGTERM)", style="red", markup=False)
        return EXIT_TERMINATED
    finally:
        _restore_sigterm(previous)
    return EXIT_OK


def _install_sigterm() -> Any:
    """Make SIGTERM raise :class:`Terminated` in the main thread; return the old handler."""
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. main() called from a worker thread)
        return None


def _restore_sigterm(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _terminated(exc: BaseException) -> bool:
    """Whether ``exc`` came from SIGTERM (click wraps the interrupt in ``Abort``)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Terminated):
            return True
        seen = seen.__context__ or seen.__cause__
    return False


def _exit_code(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
