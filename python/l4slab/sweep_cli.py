"""``l4slab sweep`` and ``l4slab plot-sweep``: thin commands over :mod:`l4slab.sweep`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    AllowLargeOpt,
    ScenarioArg,
    SetOpt,
    _Bar,
    _dir_name,
    _fail,
    _help,
    _native,
    _notes,
    _open,
    _stderr,
    _stdout,
    arg,
    errors,
    opt,
    out_opt,
    terminated,
)
from l4slab.output import output_path, write_files

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]

SWEEP_SHORT = "Run a scenario over a grid of parameters and seeds, in parallel, resumably."
SWEEP_HELP = _help(
    "Run SCENARIO once per combination of the grid's values and per seed (a cell), on every "
    "local core by default, behind a progress bar with an ETA. The grid comes from --grid "
    "options (KEY is a key path, as --set takes it; the values are separated by commas) "
    "and from the scenario file's \\[sweep] table. Every cell is checked before anything runs: "
    "a bad key or value exits with code 2 and names it.",
    "Example: [bold]l4slab sweep sweep-aqm[/bold] (its \\[sweep] "
    "table: DualPI2, FQ-CoDel, PIE, FIFO x Prague, Cubic x 10, 50 Mbit/s x 10, 50 ms RTT); "
    "[bold]l4slab sweep reno-20mbit --grid "
    "bottleneck.qdisc=fifo,fq_codel,dualpi2 --grid bottleneck.rate=10Mbit,50Mbit --seeds 3 "
    "--set duration=10s[/bold]",
    "Writes OUT (default results/sweeps/<scenario name>/): cells.parquet (one row per cell, "
    "in grid order: the grid's values as columns, e.g. bottleneck.rate and bottleneck.rate_bps, "
    "beside per-flow and per-queue metrics of the steady-state window), sweep.json, and each "
    "cell's results bundle in cells/<key>/, its key the SHA-256 of the resolved scenario, "
    "seed and l4slab version. See docs/sweeps.md.",
    "Resumable: run the same command again after Ctrl-C, a crash or a killed worker and only "
    "the cells without a complete bundle run; a cell is written into a hidden directory and "
    "renamed into place when complete. A cell that fails is recorded in "
    "cells/<key>.error.json (with its traceback) and the sweep goes on; the next run retries "
    "it. --dask tcp://HOST:8786 runs the cells on a Dask cluster (pip install "
    "'l4slab\\[dask]' there and here); the results are the same, byte for byte.",
    "Exit codes: 0 every cell ran, 1 a cell failed, 2 bad input or output directory, 130 "
    "Ctrl-C and 143 SIGTERM (finished cells stay; run again to resume).",
)

DEFAULT_SWEEPS_OUT = DEFAULT_RESULTS_ROOT / "sweeps"


def sweep_command(
    ctx: typer.Context,
    scenario: ScenarioArg,
    grid: Annotated[
        list[str] | None,
        opt(
            "--grid",
            metavar="KEY=V1,V2,...",
            help="A grid key and its values, repeatable: every combination runs. E.g. "
            "--grid bottleneck.qdisc=dualpi2,fq_codel --grid flows[0].cc=prague,cubic. "
            "Replaces the values the scenario's \\[sweep] table gives that key.",
        ),
    ] = None,
    seeds: Annotated[
        str | None,
        opt(
            "--seeds",
            metavar="N|S1,S2,...",
            help="Seeds per grid point: a number (--seeds 3: seeds 1, 2, 3) or a list "
            "(--seeds 1,7,42). Default: the \\[sweep] table's seeds, else the scenario's seed.",
        ),
    ] = None,
    overrides: SetOpt = None,
    out: Annotated[
        Path | None,
        out_opt("DIR", "The sweep's directory. Default: results/sweeps/<scenario name>."),
    ] = None,
    jobs: Annotated[
        int | None,
        opt(
            "--jobs", "-j", min=1, help="Local worker processes (or threads). Default: every core."
        ),
    ] = None,
    threads: Annotated[
        bool,
        typer.Option(
            "--threads",
            help="Run cells in threads of this process rather than in worker processes "
            "(the simulator releases the GIL while it runs).",
        ),
    ] = False,
    dask: Annotated[
        str | None,
        opt(
            "--dask",
            metavar="ADDRESS",
            help="Run the cells on a Dask cluster: its scheduler's address, e.g. "
            "tcp://10.0.0.5:8786. The workers need l4slab (this version) and send each "
            "bundle back: no shared file system needed.",
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report", help="Also write OUT/report.html and OUT/figures/ (see l4slab plot-sweep)."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress bar; only the closing lines."),
    ] = False,
    allow_large: AllowLargeOpt = False,
) -> None:
    _native()
    from l4slab import sweep as sweep_mod

    if threads and dask is not None:
        raise _fail("--threads and --dask: choose one", EXIT_BAD_INPUT)
    with errors():
        plan = sweep_mod.plan(
            scenario,
            grid=list(grid or []),
            seeds=seeds,
            sets=list(overrides or []),
            allow_large=allow_large,
        )
    target = output_path(out if out is not None else DEFAULT_SWEEPS_OUT / _dir_name(plan.name))
    with errors():
        sweep_mod.check_sweep_dir(target)
    err = _stderr()
    workers = jobs or sweep_mod.default_jobs()
    plural = "" if workers == 1 else "s" if threads else "es"
    where = (
        f"Dask cluster {dask}"
        if dask
        else f"{workers} {'thread' if threads else 'process'}{plural}"
    )
    grid_text = " x ".join(f"{len(k.values)} {k.key}" for k in plan.grid) or "no grid"
    err.print(
        f"sweep {plan.name}: {len(plan.cells)} cells ({grid_text}; {len(plan.seeds)} "
        f"seed{'s' if len(plan.seeds) != 1 else ''}) on {where}",
        markup=False,
        soft_wrap=True,
    )
    command = (ctx.obj or {}).get("command") or ["l4slab", "sweep"]
    bar = _SweepProgress(err, enabled=not quiet and err.is_terminal)

    def stopped(exc: KeyboardInterrupt) -> str | None:
        if not isinstance(exc, sweep_mod.SweepInterrupted):
            return None  # before any cell ran: typer's own exit code 130
        return (
            f"{'terminated' if terminated(exc) else 'interrupted'}: {exc.complete} of "
            f"{exc.total} cells complete ({exc.ran} in this run"
            + (f", {exc.failed} failed" if exc.failed else "")
            + f"); run the same command again to resume. Results so far: {target}/cells/"
        )

    with errors(writing=f"the sweep to {target}", interrupted=stopped), _notes(err), bar:
        outcome = sweep_mod.run_sweep(
            plan,
            target,
            jobs=jobs,
            threads=threads,
            dask=dask,
            progress=bar,
            command=command,
        )
    console = _stdout()
    total = len(plan.unique_keys)
    console.print(
        f"{total} cells: {outcome.ran} ran, "
        + (
            f"{outcome.shared} the same as their first seed (it drew no random number), "
            if outcome.shared
            else ""
        )
        + f"{outcome.reused} were complete already, {outcome.failed} failed; "
        f"{outcome.wall_s:.1f} s",
        markup=False,
        soft_wrap=True,
    )
    console.print(
        f"results: {target}/ (cells.parquet, sweep.json, cells/)", markup=False, soft_wrap=True
    )
    if report:
        from l4slab.sweep.report import write_sweep_report

        page = write_sweep_report(sweep_mod.load(target))
        console.print(f"report: {page}", markup=False, soft_wrap=True)
    if outcome.failed:
        shown = list(outcome.errors.items())[:5]
        for key, error in shown:
            err.print(f"failed {key[:12]}: {error}", markup=False, soft_wrap=True)
        raise _fail(
            f"{outcome.failed} cell{'s' if outcome.failed != 1 else ''} failed; the errors, "
            f"with tracebacks, are in {target}/cells/<key>.error.json; run the same command "
            "again to retry them",
            EXIT_FAILED,
        )


class _SweepProgress(_Bar):
    """The sweep's bar: cells done of cells to run, elapsed time and an ETA."""

    def __init__(self, console: Console, *, enabled: bool):
        self._console = console
        self._enabled = enabled

    def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
        shared = total - reused - todo
        if reused or retrying:
            self._console.print(
                f"resuming: {reused} of {total} cells complete already"
                + (f" ({shared} more the same as their first seed)" if shared else "")
                + f"; running {todo}"
                + (f" ({retrying} failed before: retrying them)" if retrying else ""),
                markup=False,
                soft_wrap=True,
            )
        if self._enabled and todo > 0:
            self._start_bar(self._console, todo, self._of("cells"))

    def done(self, cell: Any, outcome: Any) -> None:
        self._advance(f"{'done' if outcome.ok else 'FAILED'} {cell.label()}")


# --------------------------------------------------------------------------- plot-sweep

PLOT_SWEEP_SHORT = "Plot a sweep: a metric against a grid key, heatmaps, the HTML report."
PLOT_SWEEP_HELP = _help(
    "Without METRIC: write DIR/report.html and DIR/figures/ for the sweep in DIR: each "
    "headline metric (goodput, RTT p99, queue delay p99, utilization) against the first "
    "numeric grid key, one line per combination of the other keys (e.g. AQM and congestion "
    "control) with the spread over seeds, heatmaps over two numeric keys, and a table of "
    "every grid point.",
    "With METRIC (a cells.parquet column, e.g. flow/download/rtt_ms_p99; --list shows "
    "them) and --x KEY: one figure of METRIC against the grid key KEY, one line per "
    "combination of the other varying keys (or of --by KEY...). With --y KEY too: a "
    "heatmap over KEY x KEY, every other varying key fixed with --where KEY=VALUE.",
    "Examples: [bold]l4slab plot-sweep results/sweeps/sweep-aqm --open[/bold]; "
    "[bold]l4slab plot-sweep results/sweeps/sweep-aqm flow/bulk/rtt_ms_p99 --x "
    "bottleneck.rate --where bottleneck.delay=5ms[/bold]; [bold]l4slab plot-sweep "
    "results/sweeps/sweep-aqm queue/bottleneck.down/sojourn_ms_p99 --x bottleneck.rate --y "
    "bottleneck.delay --where bottleneck.qdisc=dualpi2 --where flows[0].cc=prague -o "
    "delay.svg[/bold]",
    "A single figure goes to -o FILE (.png or .svg), by default DIR/figures/<name>.png and "
    ".svg (added to the directory's manifest; figures of yours are never overwritten).",
)


def plot_sweep_command(
    directory: Annotated[
        Path,
        arg(metavar="DIR", help="A sweep's directory, e.g. results/sweeps/sweep-aqm."),
    ],
    metric: Annotated[
        str | None,
        arg(
            metavar="[METRIC]",
            help="A metric column of cells.parquet, e.g. flow/download/goodput_bps.",
        ),
    ] = None,
    x: Annotated[
        str | None,
        opt("--x", metavar="KEY", help="Grid key on the x axis."),
    ] = None,
    y: Annotated[
        str | None,
        opt("--y", metavar="KEY", help="Grid key on the y axis: a heatmap."),
    ] = None,
    by: Annotated[
        list[str] | None,
        opt(
            "--by",
            metavar="KEY",
            help="One line per value of these grid keys (repeatable). Default: every other "
            "varying key.",
        ),
    ] = None,
    where: Annotated[
        list[str] | None,
        opt(
            "--where",
            metavar="KEY=VALUE",
            help="Only the cells with this value of a grid key, as written in the grid "
            "(repeatable), e.g. --where bottleneck.qdisc=dualpi2.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        out_opt(
            "FILE", "Where the figure goes (.png or .svg). Default: DIR/figures/<name>.png|svg."
        ),
    ] = None,
    list_columns: Annotated[
        bool, typer.Option("--list", help="List the grid keys and metric columns and exit.")
    ] = False,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the report (or the figure) when written.")
    ] = False,
) -> None:
    from l4slab import sweep as sweep_mod

    with errors(reading=True):
        data = sweep_mod.load(directory)
    console = _stdout()
    if list_columns:
        for param in data.params:
            console.print(
                f"grid key {param.key}: {', '.join(param.labels)}", markup=False, soft_wrap=True
            )
        for column in data.metrics:
            console.print(f"metric {column}", markup=False, soft_wrap=True)
        return
    if metric is None:
        if x or y or by or where or out:
            raise _fail(
                "--x, --y, --by, --where and -o draw one METRIC; give it, e.g. "
                f"l4slab plot-sweep {directory} {(data.metrics or ('METRIC',))[0]} --x KEY",
                EXIT_BAD_INPUT,
            )
        from l4slab.sweep.report import write_sweep_report

        with errors():
            page = write_sweep_report(data)
        console.print(f"report: {page}", markup=False, soft_wrap=True)
        if open_page:
            _open(page)
        return
    if x is None:
        keys = ", ".join(p.key for p in data.params) or "none"
        raise _fail(f"give the grid key on the x axis with --x; grid keys: {keys}", EXIT_BAD_INPUT)
    fixed: dict[str, str] = {}
    for item in where or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _fail(
                f"--where {item}: expected KEY=VALUE, e.g. --where bottleneck.qdisc=dualpi2",
                EXIT_BAD_INPUT,
            )
        fixed[key.strip()] = value.strip()
    page = _plot_one(data, directory, metric, x, y, by, fixed, out)
    console.print(f"figure: {page}", markup=False, soft_wrap=True)
    if open_page:
        _open(page)


def _plot_one(
    data: Any,
    directory: Path,
    metric: str,
    x: str,
    y: str | None,
    by: list[str] | None,
    fixed: dict[str, str],
    out: Path | None,
) -> Path:
    """Draw one sweep figure and write it; exit 2 naming a bad key."""
    from matplotlib.figure import Figure

    from l4slab.plots.sweep import heatmap, metric_vs_param
    from l4slab.sweep.report import figure_file

    figure = Figure(figsize=(7.5, 4.4), layout="constrained")
    ax = figure.add_subplot()
    with errors(reading=True):
        if y is None:
            metric_vs_param(ax, data, metric, x, by=by, where=fixed)
        else:
            heatmap(ax, data, metric, x, y, where=fixed)
    if out is not None:
        if out.suffix not in (".png", ".svg"):
            raise _fail(f"-o {out}: write a .png or .svg file", EXIT_BAD_INPUT)
        if out.exists() and not out.is_file():
            raise _fail(f"-o {out}: not a file", EXIT_BAD_INPUT)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(figure_file(figure, out))
        return out
    words = [metric, "vs", x, *([y] if y else []), *(f"{k} {v}" for k, v in fixed.items())]
    stem = "-".join(p for p in re.split(r"[^a-z0-9]+", " ".join(words).lower()) if p)
    files = {
        f"figures/{stem}.png": figure_file(figure, Path("x.png")),
        f"figures/{stem}.svg": figure_file(figure, Path("x.svg")),
    }
    with errors():
        write_files(directory, "plot-sweep", files, remove_stale=False)
    return directory / f"figures/{stem}.png"


def register(app: typer.Typer) -> None:
    """Add ``sweep`` and ``plot-sweep`` to the ``l4slab`` command line."""
    app.command("sweep", help=SWEEP_HELP, short_help=SWEEP_SHORT)(sweep_command)
    app.command("plot-sweep", help=PLOT_SWEEP_HELP, short_help=PLOT_SWEEP_SHORT)(plot_sweep_command)
