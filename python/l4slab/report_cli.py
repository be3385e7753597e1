"""``l4slab report`` and ``l4slab compare``: thin commands over :mod:`l4slab.report` and
:mod:`l4slab.compare` (the HTML page of one run; several runs side by side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    ResultsDirArg,
    _fail,
    _help,
    _open,
    _stdout,
    arg,
    errors,
    opt,
    out_opt,
)

__all__ = ["register"]

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


def report_command(
    directory: ResultsDirArg,
    flow: Annotated[
        str | None,
        opt(
            "--flow",
            metavar="NAME",
            help="Flow of the time-sequence graph. Default: the first flow.",
        ),
    ] = None,
    tsg_window: Annotated[
        str | None,
        opt(
            "--tsg-window",
            metavar="T0:T1",
            help="Time range in seconds of the zoomed time-sequence graph, e.g. 12.5:13.0 "
            "(every packet in it is drawn). Default: around the flow's first loss, "
            "retransmission or CE mark.",
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
    from l4slab import results as results_mod
    from l4slab.report import write_report

    with errors(reading=True):
        results = results_mod.load(directory)
    with errors(writing=f"the report in {directory}", reading=True):
        page = write_report(results, flow=flow, tsg_window=tsg_window)
    return page


# --------------------------------------------------------------------------- compare


DEFAULT_COMPARE_DIR = DEFAULT_RESULTS_ROOT / "compare"


def compare_command(
    directories: Annotated[
        list[Path],
        arg(
            metavar="DIR",
            help="Two or more results directories, e.g. results/fifo-reno results/codel-reno.",
        ),
    ],
    out: Annotated[
        Path | None,
        out_opt("OUT", "Where compare.html and figures/ go. Default: results/compare."),
    ] = None,
    labels: Annotated[
        list[str] | None,
        opt(
            "--label",
            metavar="LABEL",
            help="Name of a run, once per DIR in order. Default: scenario or directory names.",
        ),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the comparison in the web browser.")
    ] = False,
) -> None:
    from l4slab import results as results_mod
    from l4slab.compare import check_compare_dir, compare, comparison_tables, run_labels
    from l4slab.tables import rich_table

    if len(directories) < 2:
        raise _fail("give at least two results directories to compare", EXIT_BAD_INPUT)
    target = out if out is not None else DEFAULT_COMPARE_DIR
    with errors(reading=True):
        runs = [results_mod.load(d) for d in directories]
        check_compare_dir(target)
    names = list(labels) if labels else run_labels(runs)
    with errors(writing=f"the comparison to {target}", reading=True):
        page = compare(runs, target, labels=names)
    console = _stdout()
    for table in comparison_tables(runs, names):
        console.print(rich_table(table))
    console.print(f"comparison: {page}", markup=False, soft_wrap=True)
    if open_page:
        _open(page)


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``compare`` to the ``l4slab`` command line."""
    app.command("report", help=REPORT_HELP, short_help=REPORT_SHORT)(report_command)
    app.command("compare", help=COMPARE_HELP, short_help=COMPARE_SHORT)(compare_command)
