"""``l4slab test`` (Flent's named tests, run by l4slab) and ``l4slab flent`` (a results
bundle as a Flent data file); the mapping lives in :mod:`l4slab.flent`, docs/flent.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from l4slab._cli_base import (
    DEFAULT_RESULTS_ROOT,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    ResultsDirArg,
    SetOpt,
    _fail,
    _help,
    _native,
    _notes,
    _stderr,
    _stdout,
    arg,
    errors,
    opt,
    out_opt,
)
from l4slab._types import SEED_MAX

__all__ = ["register"]

TEST_SHORT = "Run one of Flent's named tests (rrul, tcp_nup...) through the bottleneck."
TEST_HELP = _help(
    "Run Flent's test NAME as an l4slab scenario: rrul (4 TCP up + 4 TCP down, 4 pings), "
    "rrul_be (the same, best effort), tcp_nup and tcp_ndown (--streams N flows and a ping), "
    "rtt_fair (a TCP up, a TCP down and a ping to each of 4 hosts 0, 5, 20 and 50 ms further "
    "away) and voip (a G.711 stream and a ping). The pings run for the whole test; the "
    "loads start after --test-delay and run for -l seconds. Writes the results bundle and "
    "flent-NAME.flent.gz, which flent opens: flent -i DIR/flent-NAME.flent.gz -p totals -o "
    "totals.png. "
    "The mapping, and what differs from Flent, is in docs/flent.md.",
    "Example: [bold]l4slab test rrul --qdisc dualpi2 --cc prague --rate 50Mbit --delay 10ms "
    "-l 30 -o results/rrul-dualpi2[/bold]; [bold]l4slab test tcp_nup --streams 8 --show"
    "[/bold] prints the scenario instead.",
    "Options the scenario takes otherwise: --set KEY=VALUE (e.g. --set "
    "bottleneck.up.rate=5Mbit). Exit codes: 0 done, 1 the run failed, 2 bad input (an "
    "unknown test or a bad option, named).",
)

FLENT_SHORT = "Write a results directory as a Flent data file (.flent.gz)."
FLENT_HELP = _help(
    "Write the results in DIR as a Flent data file that flent opens and plots: per-flow "
    "throughput (Mbit/s) and ping RTT (ms) at each sample. A run of l4slab test keeps its "
    "test's name and series; any other run is written as Flent's rrul_be_nflows (every TCP "
    "flow a stream, the first ping as ICMP, the second as UDP BE), whose totals, ping and "
    "all_scaled plots then show it.",
    "Example: [bold]l4slab flent results/reno-20mbit[/bold], then [bold]flent -i "
    "results/reno-20mbit/reno-20mbit.flent.gz -p totals -o totals.png[/bold]",
    "Written to DIR/<scenario name>.flent.gz (listed in DIR's manifest) or to -o FILE.",
)

#: The scenario keys ``l4slab test``'s options set, to name the option in an error.
_OPTION_KEYS = (
    (r"bottleneck\.rate", "--rate"),
    (r"bottleneck\.delay", "--delay"),
    (r"bottleneck\.buffer", "--buffer"),
    (r"bottleneck\.qdisc", "--qdisc"),
    (r"flows\[\d+\]\.cc", "--cc"),
    (r"duration", "-l/--length"),
    (r"warmup", "--test-delay"),
    (r"sample_interval", "-s/--step-size"),
)


def _option_of(message: str, sets: list[str]) -> str | None:
    """The option an error message's key path comes from (None: not an option's key)."""
    for pattern, option in _OPTION_KEYS:
        if re.match(pattern + r"\b", message) and not any(re.match(pattern + "=", s) for s in sets):
            return option
    return None


def named_test_command(
    name: Annotated[
        str, arg(metavar="NAME", help="rrul, rrul_be, tcp_nup, tcp_ndown, rtt_fair or voip.")
    ],
    qdisc: Annotated[
        str,
        opt(
            "--qdisc",
            help="The bottleneck's qdisc (fifo, codel, fq_codel, "
            "pie, fq_pie, dualpi2...). Default: fifo.",
        ),
    ] = "fifo",
    rate: Annotated[
        str, opt("--rate", help="Bottleneck rate, both ways. Default: 20Mbit.")
    ] = "20Mbit",
    delay: Annotated[
        str,
        opt(
            "--delay",
            help="Bottleneck one-way delay (Flent's own --delay "
            "is --test-delay here). Default: 10ms.",
        ),
    ] = "10ms",
    buffer: Annotated[
        str, opt("--buffer", help="Bottleneck buffer (100pkt, 150KB, 100ms). Default: 100ms.")
    ] = "100ms",
    cc: Annotated[
        str,
        opt(
            "--cc",
            help="Congestion control of the TCP flows (reno, cubic, "
            "prague, bbr...). Default: cubic.",
        ),
    ] = "cubic",
    length: Annotated[
        float,
        opt("-l", "--length", min=0.001, help="Seconds the loads run (Flent's -l). Default: 60."),
    ] = 60.0,
    step_size: Annotated[
        float,
        opt(
            "-s",
            "--step-size",
            min=0.001,
            help="Seconds between samples and between pings (Flent's -s). Default: 0.2.",
        ),
    ] = 0.2,
    test_delay: Annotated[
        float,
        opt(
            "-d",
            "--test-delay",
            min=0.0,
            help="Seconds of pings alone "
            "before the loads start (Flent's --delay); the summary "
            "starts there. Default: 5.",
        ),
    ] = 5.0,
    streams: Annotated[
        int | None,
        opt(
            "--streams",
            min=1,
            max=1000,
            help="tcp_nup and tcp_ndown: "
            "the number of TCP flows (Flent's upload_streams / "
            "download_streams). Default: 4.",
        ),
    ] = None,
    out: Annotated[
        Path | None, out_opt("DIR", "Results directory. Default: results/flent-NAME.")
    ] = None,
    seed: Annotated[int | None, opt(min=0, max=SEED_MAX, help="Root seed.")] = None,
    title: Annotated[
        str,
        opt(
            "-t",
            "--title",
            help="Title in the Flent data file (Flent's -t). Default: the scenario name.",
        ),
    ] = "",
    backend: Annotated[
        str,
        opt(
            "--backend",
            metavar="sim|emu",
            help="sim: the simulator. "
            "emu: real time through the emulator, as root (kernel TCP for the TCP "
            "flows, l4slab's UDP endpoints for the pings and the VoIP stream).",
        ),
    ] = "sim",
    show: Annotated[
        bool,
        typer.Option(
            "--show", help="Print the scenario (TOML) and exit; save it to run it with l4slab run."
        ),
    ] = False,
    overrides: SetOpt = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No tables; print only where results went.")
    ] = False,
    host: Annotated[str | None, opt("-H", "--host", hidden=True)] = None,
) -> None:
    from l4slab import flent

    if host is not None:
        raise _fail(
            f"-H {host}: l4slab test runs no remote host; the test's hosts are the "
            "scenario's, on the other side of the bottleneck (--rate, --delay, --qdisc)",
            EXIT_BAD_INPUT,
        )
    if name not in flent.TESTS:
        raise _fail(
            f"unknown test {name!r}; choose one of: {', '.join(flent.TESTS)}", EXIT_BAD_INPUT
        )
    if streams is not None and name not in ("tcp_nup", "tcp_ndown"):
        raise _fail(f"--streams: only tcp_nup and tcp_ndown take it (not {name})", EXIT_BAD_INPUT)
    if backend not in ("sim", "emu"):
        raise _fail(f"--backend {backend!r}: choose sim or emu", EXIT_BAD_INPUT)
    for option, value in (
        ("--qdisc", qdisc),
        ("--rate", rate),
        ("--delay", delay),
        ("--buffer", buffer),
        ("--cc", cc),
    ):
        table = option == "--qdisc" and value.startswith("{") and value.endswith("}")
        if "\n" in value or ('"' in value and not table):
            raise _fail(
                f"{option} {value!r}: write a plain value, e.g. {option} "
                f"{flent.Link().__getattribute__(option[2:])}",
                EXIT_BAD_INPUT,
            )
    spec = flent.spec(name, streams=streams or 4)
    link = flent.Link(
        rate=rate,
        delay=delay,
        buffer=buffer,
        qdisc=qdisc,
        cc=cc,
        length_s=length,
        lead_s=test_delay,
        step_s=step_size,
    )
    text = flent.scenario(spec, link)
    native = _native()
    from l4slab import api
    from l4slab.output import STRING_SOURCE, check_output_dir, output_path

    sets = list(overrides or [])
    with errors():
        try:
            api.validate_text(text, STRING_SOURCE, sets, limits=backend)
        except native.ScenarioError as exc:
            named = _option_of(str(exc), sets)
            raise _fail(f"{named}: {exc}" if named else str(exc), EXIT_BAD_INPUT) from None
        if backend == "emu":
            from l4slab import emu

            emu.validate(text, STRING_SOURCE, sets)
    if show:
        typer.echo(text, nl=False)
        return
    target = output_path(out if out is not None else DEFAULT_RESULTS_ROOT / f"flent-{name}")
    with errors():
        check_output_dir(target)
    err = _stderr()
    with errors(writing=f"results to {target}", emulation=True), _notes(err):
        results = api.run_text(
            text, STRING_SOURCE, out=target, seed=seed, overrides=sets, backend=backend
        )
    data_file = _write_data(target, results, spec, title)
    console = _stdout()
    if not quiet:
        from l4slab.tables import summary_view

        console.print(summary_view(results))
    console.print(f"results: {target}/", markup=False, soft_wrap=True)
    console.print(
        f"flent data: {data_file} (flent -i {data_file} -p {spec.plot} -o {name}.png)",
        markup=False,
        soft_wrap=True,
    )


def _write_data(directory: Path, results: object, spec: object, title: str) -> Path:
    """Write ``<name>.flent.gz`` into a results directory, listed in its manifest."""
    from l4slab import flent
    from l4slab.output import write_files
    from l4slab.results import Results

    assert isinstance(results, Results)
    assert spec is None or isinstance(spec, flent.TestSpec)
    file_name = re.sub(r"[^A-Za-z0-9._-]+", "-", results.name) + flent.FILE_SUFFIX
    with errors(writing=f"{file_name} in {directory}", reading=True):
        payload = flent.encode(results, spec, title=title)
        write_files(directory, "flent", {file_name: payload}, remove_stale=False)
    return directory / file_name


def flent_command(
    directory: ResultsDirArg,
    out: Annotated[
        Path | None, out_opt("FILE", "Where to write. Default: DIR/<scenario name>.flent.gz.")
    ] = None,
    title: Annotated[
        str,
        opt("-t", "--title", help="Title in the file (Flent's -t). Default: the scenario name."),
    ] = "",
) -> None:
    from l4slab import flent
    from l4slab import results as results_mod

    with errors(reading=True):
        results = results_mod.load(directory)
    if out is None:
        written = _write_data(directory, results, None, title)
    else:
        if not out.name.endswith(flent.FILE_SUFFIX):
            raise _fail(
                f"--out {out}: a Flent data file's name ends with {flent.FILE_SUFFIX}",
                EXIT_BAD_INPUT,
            )
        if not out.parent.is_dir():
            raise _fail(f"--out {out}: no such directory {out.parent}", EXIT_BAD_INPUT)
        try:
            written = flent.write(results, out, title=title)
        except OSError as exc:  # errors() takes FileNotFoundError for a missing bundle
            raise _fail(f"could not write {out}: {exc.strerror or exc}", EXIT_FAILED) from None
    spec = flent.spec_for(results)
    _stdout().print(
        f"flent data: {written} (Flent test {spec.name}; flent -i {written} -p "
        f"{spec.plot} -o plot.png)",
        markup=False,
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    """Add ``test`` and ``flent`` to the ``l4slab`` command line."""
    app.command("test", help=TEST_HELP, short_help=TEST_SHORT)(named_test_command)
    app.command("flent", help=FLENT_HELP, short_help=FLENT_SHORT)(flent_command)
