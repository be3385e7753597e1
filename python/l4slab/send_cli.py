"""``l4slab send`` and ``l4slab serve``: iperf-like real endpoints over UDP.

Thin commands over :mod:`l4slab.endpoints`; the endpoints themselves (and the
checks of every option's value) are in the native module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from l4slab import endpoints
from l4slab._cli_base import EXIT_FAILED, errors, interrupted_exit_code
from l4slab.endpoints import MAX_PARALLEL

__all__ = ["register"]


SEND_HELP = "\n\n".join(
    [
        "Send data to an [bold]l4slab serve[/bold] over UDP, like iperf's client: the "
        "simulator's own QUIC-style transport and congestion controllers on a real network. "
        "Prints one line per interval (time, goodput acknowledged, RTT smoothed/min, the CE "
        "share of the acknowledged packets, cwnd, losses, ECN validation state), then a summary; "
        "-o DIR writes the results bundle (summary.json, series.parquet; docs/results.md).",
        "HOST is a name or an address, with an optional port: 192.0.2.1, server.lan:4433, "
        "::1, \\[::1]:4433 (default port 4433).",
        "As iperf3: -R (reverse: the server sends, with this command's --cc, --ecn and "
        "--app; the lines and -J say what arrived here), -P N (N connections at once, each "
        "its own controller: a line per connection and a [SUM] line each interval; with -o "
        "each is a flow, send-1 ... send-N), -J, -t, -i, -p.",
        "Examples: [bold]l4slab send 127.0.0.1 --cc prague -t 5[/bold] (L4S: ECT(1)); "
        "[bold]l4slab send ::1 --cc cubic --ecn ect0 --app file:20MB[/bold]; "
        "[bold]l4slab send 192.0.2.1 -R -P 4 --cc prague[/bold] (four downloads); "
        "[bold]l4slab send 192.0.2.1 --app frames:8Mbit@60 -t 30 -o results/call[/bold] "
        "(an 8 Mbit/s call: a frame every 1/60 s).",
        "Exit codes: 0 done, 1 failed: no answer (no handshake within --connect-timeout or "
        "before --duration ends), the connection failed (with -R: also a server that does "
        "not know -R), or nothing was acknowledged (the "
        "bundle is still written; its summary.json says why under 'failure'), 2 bad option, "
        "130 Ctrl-C, 143 SIGTERM (the results so far are still reported and written).",
    ]
)

SERVE_HELP = "\n\n".join(
    [
        "Receive from [bold]l4slab send[/bold] clients over UDP, like iperf's server, and "
        "report each session: one line per interval (bytes received, RTT, the CE share of the "
        "received packets, ECN validation) and a summary when it ends.",
        "Safe on a real network: a client must first answer a Retry with an "
        "address-validation token (a MAC over its address, port and the time, valid 10 s), so "
        "spoofed sources get no session and nothing larger than what they sent; at most "
        "--max-sessions sessions and --max-per-address from one address (an IPv6 /64), each "
        "with bounded memory; a session that has not completed its handshake within "
        "--handshake-timeout is dropped (no report); sessions idle for --idle-timeout end; "
        "refusals are counted and said (at most a line a second), malformed datagrams are "
        "counted and ignored (docs/send.md).",
        "A client's -P connections are each a session (the per-address limit counts "
        "connections; its default admits -P 128, iperf3's most); a client's -R runs its "
        "controller here and sends.",
        "Examples: [bold]l4slab serve[/bold] (all addresses, IPv6 and IPv4, port 4433); "
        "[bold]l4slab serve --bind 127.0.0.1 --port 5000 --once -o results/serve[/bold] "
        "(stop after one session; its bundle goes to results/serve/session-1/, the "
        "server's counters to results/serve/server.json).",
        "Exit codes: 0 done (--once, or the time limit), 1 the socket failed, 2 bad option, "
        "130 Ctrl-C, 143 SIGTERM (either way the sessions so far and the counters are "
        "reported and written).",
    ]
)


def send(
    host: Annotated[str, typer.Argument(metavar="HOST[:PORT]", help="The server.")],
    cc: Annotated[
        str,
        typer.Option(
            "--cc",
            help="Congestion control: cubic, reno, prague, dctcp, bbr, bbr3.",
            metavar="NAME",
        ),
    ] = "cubic",
    ecn: Annotated[
        str | None,
        typer.Option(
            "--ecn",
            help="IP-ECN codepoint to send: off, ect0 (classic ECN) or ect1 (L4S). Default: "
            "the controller's own (prague, dctcp: ect1; the others: ect0).",
            metavar="off|ect0|ect1",
            show_default=False,
        ),
    ] = None,
    no_ecn_validation: Annotated[
        bool,
        typer.Option(
            "--no-ecn-validation",
            help="Do NOT validate ECN (RFC 9000 §13.4.2): keep marking every packet even "
            "when the path bleaches, re-marks or drops ECT. This breaks the RFC's MUST; it "
            "exists only to show what such a sender does (l4slab check-l4s fails it). "
            "Example: [bold]l4slab send HOST --cc prague --no-ecn-validation[/bold]",
        ),
    ] = False,
    app: Annotated[
        str,
        typer.Option(
            "--app",
            help="What to send: bulk (without end), file:SIZE (e.g. file:10MB, then stop), "
            "frames:RATE@FPS (e.g. frames:8Mbit@60: RATE/FPS bytes every 1/FPS s).",
            metavar="APP",
        ),
    ] = "bulk",
    duration: Annotated[
        str,
        typer.Option("-t", "--duration", help="How long to send: seconds or e.g. 500ms."),
    ] = "10",
    interval: Annotated[
        str,
        typer.Option(
            "-i", "--interval", help="Seconds between report lines (0: none, as iperf3's -i 0)."
        ),
    ] = "1",
    port: Annotated[
        int | None,
        typer.Option("-p", "--port", help="Server port, if HOST has none (default 4433)."),
    ] = None,
    bind: Annotated[
        str | None, typer.Option("--bind", help="Local address to send from.", metavar="ADDR")
    ] = None,
    connect_timeout: Annotated[
        str, typer.Option("--connect-timeout", help="Give up without a handshake after this.")
    ] = "5",
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Write the results bundle here.", metavar="DIR"),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "-J",
            "--json",
            help="Print the result as iperf3 -J does (one JSON document on stdout, no report "
            "lines): e.g. end.sum_received.bits_per_second.",
        ),
    ] = False,
    reverse: Annotated[
        bool,
        typer.Option(
            "-R",
            "--reverse",
            help="Reverse mode, as iperf3 -R: the server sends (with this command's --cc, "
            "--ecn, --app) and this end receives. Needs an l4slab serve that knows -R (an "
            "older one is left at once, exit 1).",
        ),
    ] = False,
    parallel: Annotated[
        int,
        typer.Option(
            "-P",
            "--parallel",
            help="Connections at once, each its own controller (1 to 128, as iperf3 -P).",
            min=1,
            max=MAX_PARALLEL,
        ),
    ] = 1,
) -> None:
    with errors():
        results, raw = endpoints.send(
            host,
            cc=cc,
            ecn=ecn,
            ecn_validation=not no_ecn_validation,
            app=app,
            duration=duration,
            interval=interval,
            port=port,
            bind=bind,
            connect_timeout=connect_timeout,
            out=out,
            command=["l4slab", "send", *sys.argv[2:]],
            quiet=json_out,
            reverse=reverse,
            parallel=parallel,
        )
    if json_out:
        from l4slab.iperf3_json import iperf3_report

        print(json.dumps(iperf3_report(results, raw), indent=2))
    if out is not None:
        failed_note = " (a failed run: see 'failure' in summary.json)" if raw.get("failure") else ""
        print(f"results in {out}{failed_note}", file=sys.stderr if json_out else sys.stdout)
    if raw.get("interrupted"):
        raise typer.Exit(interrupted_exit_code())
    if raw.get("failure"):
        raise typer.Exit(EXIT_FAILED)


def serve(
    bind: Annotated[
        str | None,
        typer.Option(
            "--bind",
            help="Address to listen on (default: all, IPv6 and IPv4).",
            metavar="ADDR",
            show_default=False,
        ),
    ] = None,
    port: Annotated[int, typer.Option("-p", "--port", help="UDP port.", min=1, max=65535)] = 4433,
    max_sessions: Annotated[
        int,
        typer.Option(
            "--max-sessions",
            help="Sessions (connections) at once (1 to 4096; the default: two clients at -P 128).",
            min=1,
            max=4096,
        ),
    ] = endpoints.DEFAULT_MAX_SESSIONS,
    max_per_address: Annotated[
        int,
        typer.Option(
            "--max-per-address",
            help="Sessions at once from one client address (an IPv4 address or an IPv6 /64; "
            "1 to 4096): each of a client's -P connections is one; the default admits -P 128. "
            "On a public server, lower it to what your clients need.",
            min=1,
            max=4096,
        ),
    ] = endpoints.DEFAULT_MAX_PER_ADDRESS,
    handshake_timeout: Annotated[
        str,
        typer.Option(
            "--handshake-timeout",
            help="Drop a session that has not completed its handshake after this long.",
        ),
    ] = "5",
    once: Annotated[bool, typer.Option("--once", help="Stop after the first session.")] = False,
    interval: Annotated[
        str, typer.Option("-i", "--interval", help="Seconds between report lines.")
    ] = "1",
    idle_timeout: Annotated[
        str, typer.Option("--idle-timeout", help="End a session silent for this long.")
    ] = "10",
    time_limit: Annotated[
        str | None,
        typer.Option("--time-limit", help="Stop after this long in any case.", hidden=True),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o", "--out", help="Write each session's results to DIR/session-N/.", metavar="DIR"
        ),
    ] = None,
) -> None:
    with errors():
        run = endpoints.serve(
            bind=bind,
            port=port,
            max_sessions=max_sessions,
            max_per_address=max_per_address,
            handshake_timeout=handshake_timeout,
            once=once,
            interval=interval,
            idle_timeout=idle_timeout,
            time_limit=time_limit,
            out=out,
            command=["l4slab", "serve", *sys.argv[2:]],
        )
    if run.get("interrupted"):
        raise typer.Exit(interrupted_exit_code())


def register(app: typer.Typer) -> None:
    """Add ``send`` and ``serve`` to the ``l4slab`` command line."""
    app.command(
        "send",
        help=SEND_HELP,
        short_help="Send to an l4slab serve over UDP (iperf-like, real network).",
    )(send)
    app.command(
        "serve",
        help=SERVE_HELP,
        short_help="Receive l4slab send sessions over UDP (Retry-validated, bounded).",
    )(serve)
