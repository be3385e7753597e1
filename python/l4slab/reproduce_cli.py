"""``l4slab reproduce``: run a published study and check its claims; a thin command over
:mod:`l4slab.studies` (runs in a process pool or on a Dask cluster, resumable).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    _Bar,
    _fail,
    _help,
    _native,
    _open,
    _stderr,
    _stdout,
    arg,
    errors,
    opt,
    out_opt,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]

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
    with errors():
        root = shipped.studies_dir()
    return root


def reproduce_command(
    study: Annotated[
        str | None,
        arg(
            metavar="STUDY",
            help="A study id (e.g. litespeed-bbr-loss), a study directory, or 'all'.",
        ),
    ] = None,
    list_studies: Annotated[
        bool, typer.Option("--list", help="List the studies and exit.")
    ] = False,
    out: Annotated[
        Path | None,
        out_opt("OUT", "Where study results go (OUT/<id>/). Default: results/studies."),
    ] = None,
    jobs: Annotated[
        int | None,
        opt("--jobs", "-j", min=1, help="Worker processes. Default: one per CPU, at most 2."),
    ] = None,
    dask: Annotated[
        str | None,
        opt(
            "--dask",
            metavar="ADDRESS",
            help="Run the simulations on a Dask cluster: its scheduler's address, e.g. "
            "tcp://10.0.0.5:8786 (pip install 'l4slab\\[dask]' here and on the workers, the "
            "same l4slab version). The workers send each run's bundle back; study.json is "
            "the same, byte for byte.",
        ),
    ] = None,
    studies_dir: Annotated[
        Path | None,
        opt(
            "--studies",
            metavar="DIR",
            help="Where to look for study ids. Default: the studies l4slab ships "
            "(in the source tree: scenarios/studies).",
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
    robust: Annotated[
        bool,
        typer.Option(
            "--robust",
            help="Then run the study again with two more seeds per run, its rates x0.8 and "
            "x1.2 and its round trip -5 and +5 ms (about five times the simulations; the "
            "count is printed first), and mark FRAGILE every claim whose verdict one of "
            "them flips. See docs/studies.md.",
        ),
    ] = False,
    write_readme: Annotated[
        bool,
        typer.Option(
            "--write-readme",
            help="Then write the results into the study's own directory: the generated "
            "section of its README.md (tables, simulation count, figures), its figures "
            "(NAME.png) and study.json. For the studies' authors; see docs/studies.md.",
        ),
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
        raise _fail(
            "give a study id, 'all', or --list; e.g. l4slab reproduce --list", EXIT_BAD_INPUT
        )
    if write_readme and (robust or no_report):
        raise _fail(
            "--write-readme writes the nominal results with their figures: give it without "
            f"{'--robust' if robust else '--no-report'}",
            EXIT_BAD_INPUT,
        )
    with errors():
        if study == "all":
            found = studies.find_studies(root)
            if not found:
                raise _fail(f"no studies in {root} (directories with a study.toml)", EXIT_BAD_INPUT)
            specs = [studies.load_study(path) for path in found]
        else:
            specs = [studies.load_study(_study_dir(root, study))]
    _native()  # a clear error (exit 1) when the simulator is not built
    target = out if out is not None else DEFAULT_STUDIES_OUT
    workers = jobs or default_jobs()
    console = _stdout()
    outcomes = []
    with contextlib.ExitStack() as stack:
        client = None
        if dask is not None:
            from l4slab.sweep import pool

            with errors(about=f"--dask {dask}"):
                client = stack.enter_context(pool.dask_client(dask))
                pool.check_cluster(client)
        for spec in specs:
            outcome = _reproduce_one(
                spec, target, workers, client, quiet, no_report, open_page, robust=robust
            )
            outcomes.append(outcome)
            if write_readme:
                _write_readme(outcome)
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
    *,
    robust: bool = False,
) -> Any:
    """One study of ``l4slab reproduce``: run it, print its tables and verdict."""
    from l4slab import studies
    from l4slab.studies import report as study_report
    from l4slab.studies import robust as robust_mod
    from l4slab.studies.runner import cell_store

    console, err = _stdout(), _stderr()
    extra = robust_mod.estimate(spec) if robust else 0
    if not quiet:
        more = ""
        if robust:
            names = ", ".join(v.name for v in robust_mod.variants(spec))
            more = f" + {extra} robust ({names})"
        err.print(
            f"study {spec.id}: {spec.title} — {spec.jobs} simulations{more} (fewer when a "
            f"run has nothing random), {workers} process{'es' if workers > 1 else ''}",
            markup=False,
        )
    stopped = (
        f"interrupted; the runs that finished are kept in {cell_store(target / spec.id)}/: "
        "run the same command again to resume"
    )
    with (
        errors(writing="the study results", interrupted=lambda exc: stopped),
        _StudyProgress(err, spec.jobs + extra, enabled=not quiet and err.is_terminal) as bar,
    ):
        outcome = studies.reproduce(
            spec,
            target,
            workers=workers,
            on_done=bar.advance,
            on_skip=bar.skip,
            report=not no_report,
            dask=client,
            robust=robust,
        )
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


def _write_readme(outcome: Any) -> None:
    """``--write-readme``: the study's README section, figures and study.json."""
    from l4slab.studies import readme

    with errors(writing="the study's README"):
        removed = readme.write_readme(outcome, outcome.path)
    study = outcome.study
    names = ", ".join(f"{figure.name}.png" for figure in study.figures)
    _stdout().print(
        f"{study.id}: wrote {study.path / 'README.md'} (its results section), "
        f"{names + ', ' if names else ''}study.json"
        + (f"; removed {', '.join(removed)} (no figure of the study)" if removed else ""),
        markup=False,
        soft_wrap=True,
    )


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
    from rich.text import Text

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
            self._start_bar(console, total, self._of("runs"))

    def advance(self, result: Any) -> None:
        self._advance(f"{'reused' if result.reused else 'done'} {result.run}")

    def skip(self, job: Any) -> None:
        """A seed not run: its run's first seed drew no random number."""
        self._advance(f"{job.run}: same for every seed")


def register(app: typer.Typer) -> None:
    """Add ``reproduce`` to the ``l4slab`` command line."""
    app.command("reproduce", help=REPRODUCE_HELP, short_help=REPRODUCE_SHORT)(reproduce_command)
