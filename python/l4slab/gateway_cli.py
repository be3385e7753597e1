"""``l4slab gateway``: devices on a LAN interface behind the emulator's bottleneck (root).

The link and run options are ``l4slab emu``'s own (:mod:`l4slab.emu_cli`): the group
below takes them from that command's parameters and lets its callback build the
emulator's plan, so they are declared once. The gateway is :mod:`l4slab.gateway`.
"""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from l4slab import emu_cli
from l4slab._cli_base import EXIT_BAD_INPUT, _fail, _stderr, errors
from l4slab.emu_plan import Shell
from l4slab.gateway_options import Options

__all__ = ["app"]

GATEWAY_HELP = "\n\n".join(
    [
        "Make this machine a router for real devices (a phone, a laptop) on --lan, with "
        "every packet between them and --wan passing l4slab's bottleneck: the link options "
        "are l4slab emu's (--rate, --delay, --qdisc dualpi2, --set ...; up is LAN -> WAN). "
        "The devices get IPv4 addresses (and IPv6 router advertisements when --wan has "
        "IPv6) from dnsmasq, which the gateway starts; the WAN is "
        "reached through NAT (nftables masquerade).",
        "Everything it changes (the LAN interface, which moves into the emulator's client "
        "namespace, a veth, an nftables table, net.ipv4.ip_forward) is put back when it "
        "stops: Ctrl-C, SIGTERM, --duration, and after SIGKILL (its reaper; `l4slab "
        "gateway cleanup` too). A wireless --lan moves with its whole radio (iw); "
        "--ssid runs a WPA2 access point on it (hostapd). See docs/gateway.md.",
        "Example: [bold]sudo l4slab gateway --lan eth1 --wan eth0 --rate 10Mbit --delay "
        "10ms --qdisc dualpi2[/bold]",
    ]
)

_EMU_PARAMS = "l4slab.gateway.emu_params"
#: emu options that have no meaning here: the WAN is the server side.
_REFUSED = {"server": "--server: the gateway's server side is the WAN; there is no server command"}


class _GatewayGroup(TyperGroup):
    """The gateway's options plus ``l4slab emu``'s, whose callback builds the plan."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        emu_group = typer.main.get_command(emu_cli.app)
        own = {p.name for p in self.params}
        # get_command() makes emu a program of its own, with shell completion options.
        skip = own | {"install_completion", "show_completion"}
        emu_params = [p for p in emu_group.params if p.name not in skip]
        self.params = self.params + emu_params
        names = {p.name for p in emu_params}
        inner, emu_callback = self.callback, emu_group.callback
        assert inner is not None and emu_callback is not None

        def callback(**kwargs: Any) -> Any:
            emu_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
            for key, text in _REFUSED.items():
                if emu_kwargs.get(key) is not None:
                    raise _fail(text, EXIT_BAD_INPUT)
            emu_callback(**emu_kwargs)  # ctx.meta["l4slab.emu"]: the shell plan
            return inner(**kwargs)

        self.callback = callback


app = typer.Typer(
    cls=_GatewayGroup,
    help=GATEWAY_HELP,
    short_help="Put real devices on a LAN interface behind the bottleneck (needs root).",
    invoke_without_command=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

_GW = "Gateway options"
_WIFI = "Wi-Fi (a wireless --lan)"


@app.callback()
def _gateway(
    ctx: typer.Context,
    lan: Annotated[
        str | None,
        typer.Option(
            "--lan",
            help="The devices' interface (moved off the host while it runs).",
            metavar="IFACE",
            rich_help_panel=_GW,
        ),
    ] = None,
    wan: Annotated[
        str | None,
        typer.Option(
            "--wan",
            help="The interface towards the internet (NAT out of it).",
            metavar="IFACE",
            rich_help_panel=_GW,
        ),
    ] = None,
    lan_subnet: Annotated[
        str,
        typer.Option(
            "--lan-subnet",
            metavar="CIDR",
            help="The devices' IPv4 network; the gateway is its first address.",
            rich_help_panel=_GW,
        ),
    ] = Options.subnet,
    dns: Annotated[
        list[str] | None,
        typer.Option(
            "--dns",
            metavar="IP",
            help="A DNS server for the devices' queries (dnsmasq forwards them); "
            "repeatable. Default: this machine's nameservers that are not loopback.",
            rich_help_panel=_GW,
        ),
    ] = None,
    nat64: Annotated[
        bool,
        typer.Option(
            "--nat64",
            help="An IPv6-only LAN (router advertisements) with DNS64 (unbound) and NAT64 "
            "(tayga) to IPv4 servers under 64:ff9b::/96.",
            rich_help_panel=_GW,
        ),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval", help="Seconds between status lines (0: none).", min=0, rich_help_panel=_GW
        ),
    ] = Options.interval,
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration",
            help="Stop after this many seconds (default: Ctrl-C).",
            min=0,
            rich_help_panel=_GW,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            help="When it stops, write the run's results bundle here (summary.json, "
            "series.parquet: the queues, the forwarder and each device once a second), "
            "as l4slab run does: l4slab report and compare read it.",
            rich_help_panel=_GW,
        ),
    ] = None,
    web: Annotated[
        str,
        typer.Option(
            "--web",
            metavar="ADDR:PORT",
            help="The live web page: per direction the throughput, the queue's delay (L and "
            "C apart), drops and marks; per device its rates, ECN codepoints and marks. "
            "Localhost by default; port 0: any free port; 'off': none.",
            rich_help_panel=_GW,
        ),
    ] = "127.0.0.1:8077",
    check: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            metavar="DEVICE",
            help="When it stops, judge the flows of this device (its LAN address; 'all': "
            "every device) by RFC 9331's L4S requirements that the packets show: a passive "
            "check-l4s. Captures the bottleneck (--pcap-dir to keep it). Repeatable.",
            rich_help_panel=_GW,
        ),
    ] = None,
    ssid: Annotated[
        str | None,
        typer.Option(
            "--ssid",
            metavar="NAME",
            help="A wireless --lan: run a WPA2-PSK access point of this name on it "
            "(hostapd, in the gateway's namespace). Without it, the gateway moves the radio "
            "and prints the command to run your own hostapd there.",
            rich_help_panel=_WIFI,
        ),
    ] = None,
    passphrase: Annotated[
        str | None,
        typer.Option(
            "--passphrase",
            metavar="P",
            help="The access point's WPA2 passphrase (8 to 63 printable ASCII characters).",
            rich_help_panel=_WIFI,
        ),
    ] = None,
    channel: Annotated[
        int | None,
        typer.Option(
            "--channel",
            metavar="N",
            help="The access point's channel: 1-14 (2.4 GHz), 32-177 (5 GHz). Default 6.",
            rich_help_panel=_WIFI,
        ),
    ] = None,
    country: Annotated[
        str | None,
        typer.Option(
            "--country",
            metavar="CC",
            help="The access point's regulatory country (ISO 3166-1, e.g. DE); 5 GHz "
            "channels usually need it.",
            rich_help_panel=_WIFI,
        ),
    ] = None,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if lan is None or wan is None:
        raise _fail("--lan IFACE and --wan IFACE are required", EXIT_BAD_INPUT)
    from l4slab import gateway  # the gateway (and the emulator's module) when it runs
    from l4slab.gateway_web import parse_web

    try:
        web_at = parse_web(web)
    except ValueError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    shell: Shell = ctx.meta["l4slab.emu"]
    opts = Options(
        lan=lan,
        wan=wan,
        subnet=lan_subnet,
        dns=tuple(dns or ()),
        nat64=nat64,
        interval=interval,
        duration=duration,
        check=tuple(check or ()),
        out=out,
        web=web_at,
        ssid=ssid,
        passphrase=passphrase,
        channel=channel,
        country=country,
        report=None if shell.report is None else Path(shell.report),
        shell=dataclasses.replace(shell, report=None),
    )
    console = _stderr()
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {
        s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    try:
        with errors():
            gateway.run(
                opts,
                lambda text: console.print(text, markup=False, highlight=False),
                lambda: bool(stopping),
            )
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    raise typer.Exit(128 + stopping[0] if stopping else 0)


@app.command("cleanup", help="Undo what gateways that were killed left behind.")
def _cleanup() -> None:
    from l4slab import gateway

    with errors():
        for lan in gateway.cleanup():
            print(f"restored LAN {lan}")


def register(parent: typer.Typer) -> None:
    """Add ``gateway`` (this group) to the ``l4slab`` command line."""
    parent.add_typer(app, name="gateway")
