"""``l4slab emu``: run programs behind an emulated bottleneck (needs root).

``l4slab emu [LINK OPTIONS] -- COMMAND...`` is a mahimahi-style shell; the
sub-commands (``ecn-check``, ``cleanup``) share the link options. Everything is done by the
emulator process (see :mod:`l4slab.emu`); this module declares the options users type, with
their help, takes their defaults from the plans (:mod:`l4slab.emu_plan`) and builds one.
The commands import :mod:`l4slab.emu` when they run (``l4slab --help`` does without it).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from l4slab._cli_base import EXIT_BAD_INPUT, EXIT_FAILED, _fail, errors
from l4slab.emu_plan import PCAP_LIMIT, Cleanup, EcnCheck, EcnReflect, Plan, Shell, Tuning

__all__ = ["app", "register"]


EMU_SHORT = "Run a command behind an emulated bottleneck (real-time, needs root)."
EMU_HELP = "\n\n".join(
    [
        "Create a client and a server network namespace joined through TUN devices and "
        "l4slab's user-space forwarder, run COMMAND in the client namespace, and remove "
        "everything when COMMAND exits, on Ctrl-C, on SIGTERM, and after a crash. The "
        "server's address is printed and given to COMMAND as $L4SLAB_SERVER "
        "($L4SLAB_SERVER_ECN negotiates ECN for kernel TCP); --server starts a command in "
        "the server namespace first. The exit code is COMMAND's.",
        "The bottleneck runs the simulator's own queue disciplines, rate and loss models: "
        "the link options mean what the scenario file's \\[bottleneck] keys mean (--set "
        "reaches any of them). --set wifi.KEY=VALUE (the scenario file's \\[wifi] keys) puts "
        "the client behind an emulated Wi-Fi cell as its one station, e.g. --set "
        "wifi.standard=ax --set wifi.stations.snr_db=20.",
        "Example: [bold]sudo l4slab emu --rate 20Mbit --delay 10ms --qdisc dualpi2 -- "
        "sh -c 'ping -c 5 $L4SLAB_SERVER'[/bold] (COMMAND is run directly, so use a shell "
        "to expand variables; with no arguments but a shell, it is interactive).",
        "At the end the forwarder prints its timing accuracy (actual minus intended release "
        "time of every packet); --report FILE writes queue statistics and the full timing "
        "report as JSON.",
    ]
)


class _EmuGroup(TyperGroup):
    """A group whose unknown first word is COMMAND for the hidden ``shell``."""

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        # Typed loosely: typer up to 0.25 builds on click, later versions on their own
        # copy of it (typer._click); this works with either.
        if args and args[0] in self.commands and args[0] != "shell":
            return super().resolve_command(ctx, args)
        return "shell", self.commands["shell"], ["--", *args]


app = typer.Typer(
    cls=_EmuGroup,
    help=EMU_HELP,
    short_help=EMU_SHORT,
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _qdisc_param_help() -> str:
    """The ``--qdisc-param`` help, with each qdisc's keys as the native module
    declares them (``_native.qdisc_params``); without a built native module it
    points to the docs.
    """
    base = "A qdisc parameter NAME=VALUE as in the scenario file, e.g. target=5ms; repeatable."
    try:
        from l4slab import _native

        keys = "; ".join(
            f"{q}: {', '.join(p['name'] for p in _native.qdisc_params(q))}"
            for q in _native.qdisc_names()
        )
    except (ImportError, AttributeError):
        return f"{base} Keys: see docs/scenarios.md."
    return f"{base} Keys: {keys}."


_LINK = "Link options (both directions unless a down/up option is given)"
_MAHIMAHI = "mahimahi's mm-link options (the same names and meanings)"
_MM = "As mm-link"
_RUN = "Run options"


def _names(function: str, what: str) -> str:
    """``what``, with the choices the native module lists (``_native.FUNCTION()``).

    Asked of the Rust side rather than copied; without a built native module
    (``l4slab --help`` in a source tree) the help only points to the docs.
    """
    try:
        from l4slab import _native

        names: list[str] = getattr(_native, function)()
    except (ImportError, AttributeError):
        return f"{what} (see docs/scenarios.md)"
    return f"{what}: {', '.join(names)}"


def _opt(
    *names: str,
    help: str,
    panel: str = _LINK,
    metavar: str | None = None,
    show_default: bool = False,
    min: int | None = None,
    max: int | None = None,
) -> Any:
    return typer.Option(
        *names,
        help=help,
        rich_help_panel=panel,
        show_default=show_default,
        metavar=metavar,
        min=min,
        max=max,
    )


@app.callback()
def _emu(
    ctx: typer.Context,
    rate: Annotated[str | None, _opt("--rate", help="Link rate, e.g. 20Mbit.")] = None,
    down_rate: Annotated[str | None, _opt("--down-rate", help="Rate server -> client.")] = None,
    up_rate: Annotated[str | None, _opt("--up-rate", help="Rate client -> server.")] = None,
    delay: Annotated[str | None, _opt("--delay", help="One-way delay, e.g. 10ms.")] = None,
    down_delay: Annotated[str | None, _opt("--down-delay", help="Delay server -> client.")] = None,
    up_delay: Annotated[str | None, _opt("--up-delay", help="Delay client -> server.")] = None,
    buffer: Annotated[
        str | None, _opt("--buffer", help="Buffer: 100pkt, a size (150kB) or a time (50ms).")
    ] = None,
    qdisc: Annotated[
        str | None, _opt("--qdisc", help=_names("qdisc_names", "Queue discipline") + ".")
    ] = None,
    qdisc_param: Annotated[
        list[str] | None,
        _opt(
            "--qdisc-param",
            help=_qdisc_param_help(),
            metavar="NAME=VALUE",
        ),
    ] = None,
    loss: Annotated[
        str | None, _opt("--loss", help="Random loss, e.g. 1%; --set for Gilbert-Elliott.")
    ] = None,
    ecn_path: Annotated[
        str | None,
        _opt(
            "--ecn-path",
            help=_names("ecn_rewrite_names", "What the path does to ECN before the queue") + ".",
        ),
    ] = None,
    ecn_path_down: Annotated[str | None, _opt("--ecn-path-down", help="Same, down only.")] = None,
    ecn_path_up: Annotated[str | None, _opt("--ecn-path-up", help="Same, up only.")] = None,
    uplink_trace: Annotated[
        str | None,
        _opt(
            "--uplink-trace",
            help=f"{_MM}: the client -> server delivery trace file.",
            metavar="FILE",
            panel=_MAHIMAHI,
        ),
    ] = None,
    downlink_trace: Annotated[
        str | None,
        _opt(
            "--downlink-trace",
            help=f"{_MM}: the server -> client delivery trace file.",
            metavar="FILE",
            panel=_MAHIMAHI,
        ),
    ] = None,
    uplink_queue: Annotated[
        str | None,
        _opt(
            "--uplink-queue",
            help=f"{_MM}: droptail, drophead, codel or pie (up).",
            metavar="QUEUE",
            panel=_MAHIMAHI,
        ),
    ] = None,
    downlink_queue: Annotated[
        str | None,
        _opt("--downlink-queue", help=f"{_MM}: the same, down.", metavar="QUEUE", panel=_MAHIMAHI),
    ] = None,
    uplink_queue_args: Annotated[
        str | None,
        _opt(
            "--uplink-queue-args",
            help=f"{_MM}: e.g. 'packets=100, target=5' (bytes, "
            "packets; codel target, interval; pie qdelay_ref, max_burst; times in ms).",
            metavar="ARGS",
            panel=_MAHIMAHI,
        ),
    ] = None,
    downlink_queue_args: Annotated[
        str | None,
        _opt(
            "--downlink-queue-args", help=f"{_MM}: the same, down.", metavar="ARGS", panel=_MAHIMAHI
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        _opt(
            "--set",
            help="A bottleneck or Wi-Fi cell key of the scenario file (or seed), e.g. "
            "bottleneck.down.qdisc.step_thresh=1ms or wifi.standard=a; repeatable.",
            metavar="KEY=VALUE",
        ),
    ] = None,
    server: Annotated[
        str | None,
        _opt(
            "--server",
            help="Shell command to run in the server namespace; COMMAND starts once it "
            "listens (at most 2 s later).",
            panel=_RUN,
        ),
    ] = None,
    report: Annotated[
        Path | None,
        _opt("--report", help="Write the run's JSON report here.", panel=_RUN, metavar="FILE"),
    ] = None,
    cc: Annotated[
        str,
        _opt(
            "--cc",
            help="Default TCP congestion control in both namespaces (Linux's default, "
            "whatever the host uses); programs can still choose per socket.",
            panel=_RUN,
            metavar="NAME",
            show_default=True,
        ),
    ] = Shell.cc,
    spin_us: Annotated[
        int,
        _opt(
            "--spin-us",
            help="Busy-wait this many µs before each deadline (more CPU, less timing error).",
            panel=_RUN,
            show_default=True,
            min=0,
        ),
    ] = Tuning.spin_us,
    min_sleep_us: Annotated[
        int,
        _opt(
            "--min-sleep-us",
            help="Shortest forwarder sleep in µs: packets due within it leave together (less "
            "CPU at high rates, at most this much more timing error).",
            panel=_RUN,
            show_default=True,
            min=0,
        ),
    ] = Tuning.min_sleep_us,
    pcap_dir: Annotated[
        Path | None,
        _opt(
            "--pcap-dir",
            help="Capture the bottleneck's packets (headers only, both directions, at the "
            "queue's ingress and egress) into DIR/pcap/ (Wireshark, tshark, tcpdump read them).",
            panel=_RUN,
            metavar="DIR",
        ),
    ] = None,
    pcap_limit: Annotated[
        str,
        _opt(
            "--pcap-limit",
            help="The most the capture files may hold in all (e.g. 500MB, 2GiB); at the "
            "limit they stop growing and the report counts the packets left out.",
            panel=_RUN,
            metavar="SIZE",
            show_default=True,
        ),
    ] = PCAP_LIMIT,
    no_pin: Annotated[
        bool, _opt("--no-pin", help="Do not pin the forwarder to its own CPU.", panel=_RUN)
    ] = False,
    no_realtime: Annotated[
        bool, _opt("--no-realtime", help="Do not use SCHED_FIFO.", panel=_RUN)
    ] = False,
    mtu: Annotated[
        int,
        _opt(
            "--mtu",
            help="The TUN devices' MTU in bytes.",
            panel=_RUN,
            show_default=True,
            min=576,
            max=9000,
        ),
    ] = Tuning.mtu,
    malformed: Annotated[
        str,
        _opt(
            "--malformed",
            help="Packets that are not IPv4/IPv6 or whose lengths disagree: counted, and "
            "carried through the queue as Not-ECT (pass) or dropped (drop).",
            panel=_RUN,
            metavar="pass|drop",
            show_default=True,
        ),
    ] = Tuning.malformed,
    no_coalesce: Annotated[
        bool,
        _opt(
            "--no-coalesce",
            help="Write each segment on its own, not the segments released together as one "
            "GSO packet.",
            panel=_RUN,
        ),
    ] = False,
    quiet: Annotated[
        bool, _opt("--quiet", "-q", help="No banner or timing line.", panel=_RUN)
    ] = False,
) -> None:
    from l4slab import emu

    with errors(input_only=True):
        link = emu.link_sets(
            rate=rate,
            down_rate=down_rate,
            up_rate=up_rate,
            delay=delay,
            down_delay=down_delay,
            up_delay=up_delay,
            buffer=buffer,
            qdisc=qdisc,
            qdisc_params=qdisc_param or (),
            loss=loss,
            ecn_path=ecn_path,
            ecn_path_down=ecn_path_down,
            ecn_path_up=ecn_path_up,
            mahimahi=(
                emu.MahimahiLink("up", uplink_trace, uplink_queue, uplink_queue_args),
                emu.MahimahiLink("down", downlink_trace, downlink_queue, downlink_queue_args),
            ),
            sets=sets or (),
        )
        limit = emu.pcap_limit(pcap_limit, pcap_dir)
    # The shell plan but its COMMAND, which the sub-command gives.
    ctx.meta["l4slab.emu"] = Shell(
        command=(),
        sets=tuple(link),
        server_command=server,
        report=report,
        cc=cc,
        pcap_dir=pcap_dir,
        pcap_limit=limit,
        quiet=quiet,
        tuning=Tuning(
            mtu=mtu,
            spin_us=spin_us,
            min_sleep_us=min_sleep_us,
            pin=not no_pin,
            realtime=not no_realtime,
            coalesce=not no_coalesce,
            malformed=malformed,
        ),
    )


def _run(plan: Plan) -> int:
    from l4slab import emu

    with errors():
        code = emu.run_emulator(plan).returncode
    return code


@app.command(
    "shell",
    hidden=True,
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def _shell(
    ctx: typer.Context,
    command: Annotated[list[str] | None, typer.Argument(metavar="COMMAND...")] = None,
) -> None:
    if not command:
        raise _fail(
            "no COMMAND; write e.g. l4slab emu --rate 20Mbit -- sh -c 'ping -c 3 $L4SLAB_SERVER'",
            EXIT_BAD_INPUT,
        )
    from l4slab import emu

    with errors(input_only=True):
        plan = emu.checked(dataclasses.replace(ctx.meta["l4slab.emu"], command=tuple(command)))
    raise typer.Exit(_run(plan))


@app.command("cleanup", help="Remove namespaces and state left by emulator runs that were killed.")
def _cleanup() -> None:
    raise typer.Exit(_run(Cleanup()))


_OUTCOME_TEXT = {
    "pass": "passes",
    # For ECT probes of an idle path; a CE probe arriving CE is a "pass".
    "ce": "CE-MARKED (on an idle path: it marks everything)",
    "bleached": "BLEACHED to Not-ECT",
    "remarked": "RE-MARKED",
    "dropped": "DROPPED (Not-ECT gets through)",
    "lost": "lost (nothing gets through)",
}


@app.command(
    "ecn-check",
    help="Validate the emulated path for ECN as an application would before trusting L4S: "
    "send UDP probes with each codepoint both ways and see what arrives (passes, bleached, "
    "re-marked, dropped, CE-marked), and check that kernel TCP's classic ECN works: negotiated, "
    "and its ECT(0) data arriving as sent both ways (negotiation alone is not ECN working). "
    "Exit code 0 when the path is fit for L4S (ECT(1) and CE arrive unchanged both ways), 3 "
    "when it is not. Run it on an otherwise idle path. Example: [bold]sudo l4slab emu "
    "--ecn-path bleach ecn-check[/bold]",
    short_help="Check what the path does to ECN (passes, bleaches, re-marks, drops ECT).",
)
def _ecn_check(
    ctx: typer.Context,
    count: Annotated[
        int, typer.Option(min=1, help="Probes per codepoint and direction.")
    ] = EcnCheck.count,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON report.")] = False,
) -> None:
    from l4slab import emu

    with errors():
        checker = emu.command_line(emu.checked(EcnCheck(count=count)))
        reflector = shlex.join(emu.command_line(EcnReflect()))
    plan = dataclasses.replace(
        ctx.meta["l4slab.emu"], command=tuple(checker), server_command=reflector, quiet=True
    )
    with errors():
        proc = emu.run_emulator(plan, capture=True)
    if proc.returncode not in (0, 3):
        raise _fail(f"the ECN check failed: {(proc.stderr or '').strip()}", EXIT_FAILED)
    report = json.loads(proc.stdout)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(format_ecn_report(report))
    raise typer.Exit(proc.returncode)


def _tcp_line(label: str, t: dict[str, Any]) -> str:
    """One direction of the kernel TCP data check."""
    ce, delivered, retrans = t["delivered_ce"], t["delivered"], t["retransmits"]
    outcome = t["outcome"]
    if outcome == "pass":
        text = f"ECT(0) arrives ({ce}/{delivered} segments echoed CE)"
    elif outcome == "ce":
        text = f"CE-MARKED: {ce}/{delivered} segments echoed CE on an idle path"
    elif outcome == "bleached":
        text = "BLEACHED: delivered, but no ECT arrived"
    elif t["complete"]:
        text = f"ECT DROPPED: only the {retrans} Not-ECT retransmissions got through"
    else:
        text = "ECT DROPPED: the data did not get through in time"
    return f"kernel TCP data {label}: {text}"


def format_ecn_report(report: dict[str, Any]) -> str:
    """The ECN check as a few lines of text."""
    lines = []
    labels = {"forward": "client -> server", "reverse": "server -> client"}
    for direction, label in labels.items():
        for cp in ("not_ect", "ect0", "ect1", "ce"):
            r = report[direction][cp]
            a = r["arrived"]
            got = sum(a[k] for k in ("not_ect", "ect0", "ect1", "ce"))
            text = _OUTCOME_TEXT.get(r["outcome"], r["outcome"])
            if r["outcome"] == "remarked":
                top = max(("not_ect", "ect0", "ect1", "ce"), key=lambda k: a[k])
                text += f" to {top}"
            lines.append(f"{label}  {cp:<8} {text} ({got}/{a['sent']} arrived)")
    negotiated = report.get("tcp_ecn_negotiated")
    if negotiated is None:
        lines.append(f"kernel TCP ECN: check failed ({report.get('tcp_error')})")
    else:
        lines.append(
            "kernel TCP ECN negotiation: "
            + ("yes (the SYN-ACK echoed ECE)" if negotiated else "NO (the SYN-ACK had no ECE)")
        )
        if negotiated:
            lines += [_tcp_line(label, report["tcp"][d]) for d, label in labels.items()]
        lines.append(
            "kernel TCP ECN: "
            + (
                "works (ECT(0) data arrives as sent both ways)"
                if report["tcp_ecn_works"]
                else "NOT WORKING"
            )
        )
    lines.append(
        "classic ECN: "
        + (
            "works (ECT(0) and CE pass both ways, kernel TCP ECN works)"
            if report["classic_ecn_ok"]
            else "NOT working"
        )
    )
    lines.append(
        "verdict: "
        + (
            "fit for L4S (ECT(1) and CE arrive unchanged both ways)"
            if report["l4s_ok"]
            else "NOT fit for L4S: see the lines in capitals"
        )
    )
    return "\n".join(lines)


def register(parent: typer.Typer) -> None:
    """Add ``emu`` (this group) to the ``l4slab`` command line."""
    parent.add_typer(app, name="emu")
