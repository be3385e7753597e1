"""``l4slab run``, ``validate`` and ``show``: thin commands over :mod:`l4slab.api` and
:mod:`l4slab.results` (simulate or emulate a scenario, check it, print a bundle's tables).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    RESULTS_HELP,
    UNITS_HELP,
    AllowLargeOpt,
    ResultsDirArg,
    ScenarioArg,
    SetOpt,
    _Bar,
    _dir_name,
    _fail,
    _help,
    _native,
    _notes,
    _read,
    _scenario,
    _stderr,
    _stdout,
    errors,
    opt,
    out_opt,
    terminated,
)
from l4slab._types import SEED_MAX
from l4slab.output import (
    BUNDLE_FILES,
    PACKETS_FILE,
    PCAP_DIR,
    check_output_dir,
    check_same_scenario,
    output_path,
)
from l4slab.report_cli import _write_report

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["cost_line", "register"]

#: Show the progress bar only for runs that last longer than this (wall seconds).
PROGRESS_DELAY_S = 1.0

RUN_SHORT = "Simulate a scenario, write its results and print a summary."
RUN_HELP = _help(
    "Simulate SCENARIO, write its results bundle and print a summary table. The scenario is "
    "validated first: a bad key or value stops with exit code 2, names the key path, and "
    "writes nothing. A progress bar appears when the run lasts more than a second.",
    "Example: [bold]l4slab run reno-20mbit -o results/reno --seed 7 "
    "--set bottleneck.rate=50Mbit[/bold]",
    UNITS_HELP,
    RESULTS_HELP + " An existing results directory there is replaced only once the new one is "
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
    "Example: [bold]l4slab validate reno-20mbit --set duration=5s[/bold]",
    UNITS_HELP,
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


class _LazyProgress(_Bar):
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

    def __call__(self, sim_s: float, duration_s: float) -> None:
        if not self._enabled:
            return
        if self._progress is None:
            if time.monotonic() - self._start < self._delay:
                return
            self._start_bar(
                self._console,
                duration_s,
                "{task.completed:.1f} of {task.total:.1f} s",
                label=self._label,
                eta="",
            )
        assert self._progress is not None and self._task is not None
        self._progress.update(self._task, completed=sim_s, total=duration_s)


def _nothing_written(exc: KeyboardInterrupt) -> str:
    return f"{'terminated (SIGTERM)' if terminated(exc) else 'interrupted'}; nothing was written"


def run_command(
    ctx: typer.Context,
    scenario: ScenarioArg,
    out: Annotated[
        Path | None,
        out_opt("DIR", "Results directory. Default: results/<scenario name>."),
    ] = None,
    seed: Annotated[
        int | None,
        opt(
            min=0,
            max=SEED_MAX,
            help="Root seed, an integer from 0 to 2^63-1; replaces the scenario's seed.",
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
    scenario = _scenario(scenario)
    text, source = _read(scenario)
    _native()
    from l4slab import api

    sets = list(overrides or [])
    if backend not in ("sim", "emu"):
        raise _fail(f"--backend {backend!r}: choose sim or emu", EXIT_BAD_INPUT)
    limits = None if allow_large else backend
    with errors():
        if backend == "emu":
            from l4slab import emu

            resolved = emu.validate(text, source, sets)
            if limits is not None:
                api.validate_text(text, source, sets, limits=limits)
        else:
            resolved = api.validate_text(text, source, sets, limits=limits)
    named = out is None
    target = output_path(
        out if out is not None else DEFAULT_RESULTS_ROOT / _dir_name(resolved.get("name"))
    )
    with errors():
        check_output_dir(target)
        if named:
            # Two scenario names can clean up to the same directory name.
            check_same_scenario(target, str(resolved.get("name") or ""), str(scenario.resolve()))

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
    with (
        errors(writing=f"results to {target}", interrupted=_nothing_written, emulation=True),
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

    files = [name for name in BUNDLE_FILES if name != PACKETS_FILE or results.has_packets]
    if (target / PCAP_DIR).is_dir():
        files.append(f"{PCAP_DIR}/")
    console = _stdout()
    if not quiet:
        from l4slab.tables import summary_view

        console.print(summary_view(results))
        if backend == "emu":
            from l4slab import emu

            console.print(emu.timing_line(results.summary), markup=False, soft_wrap=True)
    shown = target if out is None or not Path(out).is_symlink() else f"{out} -> {target}"
    console.print(f"results: {shown}/ ({', '.join(files)})", markup=False, soft_wrap=True)
    if report:
        page = _write_report(target, flow=None)
        console.print(f"report: {page}", markup=False, soft_wrap=True)


# --------------------------------------------------------------------------- validate


def validate_command(
    scenario: ScenarioArg, overrides: SetOpt = None, allow_large: AllowLargeOpt = False
) -> None:
    scenario = _scenario(scenario)
    text, source = _read(scenario)
    native = _native()
    from l4slab import api

    sets = list(overrides or [])
    with errors():
        resolved = api.validate_text(text, source, sets, limits=None if allow_large else "sim")
        cost = native.estimate(text, source, sets, api.trace_dirs())
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
    # The costs only some scenarios have, shown when they do.
    if cost["stations"]:
        parts.append(f"{cost['stations']:,} Wi-Fi stations (limit {limits['stations']:,})")
    if cost["calls"]:
        parts.append(
            f"{cost['calls']:,} RTP calls, about {cost['call_bytes'] // 1_000_000:,} MB "
            f"(limit {limits['call_bytes'] // 1_000_000:,} MB)"
        )
    if cost["probes"]:
        parts.append(f"{cost['probes']:,} ping probes (limit {limits['probes']:,})")
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


def show_command(directory: ResultsDirArg) -> None:
    from l4slab import results as results_mod
    from l4slab.tables import summary_view

    with errors(reading=True):
        results = results_mod.load(directory)
    console = _stdout()
    console.print(summary_view(results))
    console.print(f"results: {directory}/", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``validate`` and ``show`` to the ``l4slab`` command line."""
    app.command("run", help=RUN_HELP, short_help=RUN_SHORT)(run_command)
    app.command("validate", help=VALIDATE_HELP, short_help=VALIDATE_SHORT)(validate_command)
    app.command("show", help=SHOW_HELP, short_help=SHOW_SHORT)(show_command)
