"""The options of one ``l4slab gateway`` (:class:`Options`), apart from the gateway
itself (:mod:`l4slab.gateway`) so that the command line declares its defaults without
loading the emulator's module."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from l4slab.emu_plan import Shell

__all__ = ["Options"]


@dataclass(frozen=True, kw_only=True)
class Options:
    """One gateway: the interfaces, the LAN, the emulator's shell plan (links, tuning)."""

    lan: str
    wan: str
    #: The devices' IPv4 network; the gateway is its first address.
    subnet: str = "192.168.77.0/24"
    #: The DNS servers dnsmasq forwards the devices' queries to (empty: the host's
    #: non-loopback nameservers in /etc/resolv.conf).
    dns: tuple[str, ...] = ()
    #: An IPv6-only LAN with DNS64 and NAT64 (:mod:`l4slab.gateway_nat64`).
    nat64: bool = False
    #: Seconds between status lines (0: none).
    interval: float = 1.0
    #: Stop after this many seconds (``None``: on Ctrl-C/SIGTERM).
    duration: float | None = None
    report: Path | None = None
    #: Judge these devices' flows passively when it stops (addresses; ``all``: every
    #: device): :mod:`l4slab.check.passive`. Captures the bottleneck.
    check: tuple[str, ...] = ()
    #: Write the run's results bundle here when it stops (``l4slab report`` reads it).
    out: Path | None = None
    #: The live web page's address and port (``None``: no page); port 0: any free one.
    web: tuple[str, int] | None = ("127.0.0.1", 8077)
    #: A wireless --lan's access point (hostapd, WPA2-PSK; ``None``: the user runs
    #: their own): :mod:`l4slab.gateway_wifi`.
    ssid: str | None = None
    passphrase: str | None = None
    #: The access point's channel (``None``: 6) and regulatory country (ISO 3166-1).
    channel: int | None = None
    country: str | None = None
    #: The emulator's plan; its ``command`` is the gateway's own.
    shell: Shell = field(default_factory=lambda: Shell(command=()))
