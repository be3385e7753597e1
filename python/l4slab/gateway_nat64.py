"""``l4slab gateway --nat64``: an IPv6-only LAN reaching IPv4 servers (RFC 6146, RFC 6147).

Apple's App Review requirement, tested as WWDC15 showed with Internet Sharing's "Create
NAT64 Network": the devices get only IPv6 (router advertisements from dnsmasq, SLAAC in
``LAN_PREFIX6``), resolve names through DNS64 (unbound's ``dns64`` module, in the client
namespace, synthesising AAAA records under the well-known prefix ``64:ff9b::/96`` from A
records, RFC 6147 §5.1.7), and reach IPv4 servers through NAT64 (tayga, in the server
namespace, after the bottleneck): an IPv6 packet to ``64:ff9b::a.b.c.d`` leaves tayga as
IPv4 from its pool ``POOL4``, which the host NATs out of the WAN like the LAN's IPv4.

tayga follows RFC 6052 §3.1: the well-known prefix never carries a non-global IPv4
address (RFC 1918 networks, the documentation ranges), so such servers are unreachable
through it, as on a real NAT64.
"""

from __future__ import annotations

import ipaddress
import subprocess
from contextlib import suppress
from pathlib import Path
from typing import Any

from l4slab.gateway_state import GatewayError, ns_path, sh

__all__ = [
    "LAN_PREFIX6",
    "POOL4",
    "PREFIX64",
    "ROUTER6",
    "dns64_answers",
    "dnsmasq_args",
    "lan6",
    "ra_args",
    "start",
]

#: The LAN's IPv6 prefix (unique local) and the gateway's address in it.
LAN_PREFIX6 = "fd4c:77::/64"
ROUTER6 = "fd4c:77::1"
#: The well-known NAT64 prefix (RFC 6052 §2.1).
PREFIX64 = "64:ff9b::/96"
#: tayga's IPv4 side: its own address and the pool the devices are mapped to.
POOL4 = "192.168.255.0/24"
TAYGA4 = "192.168.255.1"
TAYGA_POOL = "192.168.255.128/25"
#: tayga's own IPv6 address (its ICMPv6 errors come from it).
TAYGA6 = "fd4c:5301::64"
#: The emulator's server-side address of the TUN pair (crates/l4slab-emu/src/netns.rs).
SERVER_ADDR6 = "fd4c:5301::2"


def ra_args(dns: bool = True) -> list[str]:
    """dnsmasq's router advertisements for ``LAN_PREFIX6`` (SLAAC, RFC 4862), naming
    the gateway's IPv6 address as DNS server (RDNSS, RFC 8106) when it serves DNS."""
    return [
        "--enable-ra",
        f"--dhcp-range={LAN_PREFIX6.split('/')[0]},ra-only,64",
        *([f"--dhcp-option=option6:dns-server,[{ROUTER6}]"] if dns else []),
    ]


def dnsmasq_args() -> list[str]:
    """dnsmasq on an IPv6-only LAN: router advertisements (SLAAC) naming the DNS64
    resolver, no DHCPv4 and no DNS of its own (unbound answers)."""
    return ["--port=0", *ra_args()]


def lan6(lan: str, c: str, s: str) -> None:
    """IPv6 on the LAN (``ROUTER6`` on ``lan`` in namespace ``c``) routed through the
    bottleneck: forwarding in both namespaces, ``c``'s default route into the TUN,
    ``s``'s route back to the LAN prefix."""
    sh("ip", "-6", "addr", "add", f"{ROUTER6}/64", "dev", lan, "nodad", netns=c)
    for ns in (c, s):
        sh("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", netns=ns)
    sh("ip", "-6", "route", "add", "default", "via", SERVER_ADDR6, "dev", "tcli", netns=c)
    sh("ip", "-6", "route", "add", LAN_PREFIX6, "dev", "tsrv", netns=s)


def _unbound_conf(upstream: list[str], directory: Path) -> str:
    forward = "".join(f"  forward-addr: {a}\n" for a in upstream)
    return f"""server:
  interface: {ROUTER6}
  port: 53
  access-control: {LAN_PREFIX6} allow
  access-control: fe80::/10 allow
  module-config: "dns64 iterator"
  dns64-prefix: {PREFIX64}
  username: ""
  chroot: ""
  directory: "{directory}"
  pidfile: ""
  use-syslog: no
  logfile: ""
  do-daemonize: no
remote-control:
  control-enable: yes
  control-interface: "{directory / CONTROL}"
  control-use-cert: no
forward-zone:
  name: "."
{forward}"""


#: unbound's control socket (a Unix socket in the gateway's folder): the cache, read
#: when the gateway stops, holds the answers DNS64 gave.
CONTROL = "unbound.ctl"


def dns64_answers(directory: Path) -> list[dict[str, Any]]:
    """The AAAA records DNS64 synthesised under ``PREFIX64`` that unbound's cache holds
    (``unbound-control dump_cache``), by name: what the devices were answered, as long
    as the answer's TTL has not run out (an answer with a TTL of 0 is never kept).
    Empty when unbound cannot be asked (it ended, or has no control socket)."""
    conf = directory / "unbound.conf"
    try:
        dump = subprocess.run(
            ["unbound-control", "-c", str(conf), "dump_cache"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    prefix = ipaddress.IPv6Network(PREFIX64)
    found: dict[str, list[str]] = {}
    for line in dump.splitlines():
        # A resource record line: NAME TTL CLASS TYPE RDATA (RFC 1035 §5.1's form).
        parts = line.split()
        if len(parts) == 5 and parts[2] == "IN" and parts[3] == "AAAA":
            with suppress(ValueError):
                if ipaddress.IPv6Address(parts[4]) in prefix:
                    found.setdefault(parts[0].rstrip("."), [])
                    if parts[4] not in found[parts[0].rstrip(".")]:
                        found[parts[0].rstrip(".")].append(parts[4])
    return [{"name": name, "aaaa": sorted(addrs)} for name, addrs in sorted(found.items())]


def _tayga_conf(directory: Path) -> str:
    return f"""tun-device nat64
ipv4-addr {TAYGA4}
ipv6-addr {TAYGA6}
prefix {PREFIX64}
dynamic-pool {TAYGA_POOL}
data-dir {directory}
"""


def start(
    lan: str, c: str, s: str, upstream: list[str], directory: Path
) -> list[subprocess.Popen[bytes]]:
    """Give the LAN IPv6, start DNS64 in namespace ``c`` and NAT64 in ``s``; the
    processes started (the caller stops them and records them for the reaper)."""
    if not upstream:
        raise GatewayError("--nat64 needs a DNS server for DNS64: give --dns IP")
    lan6(lan, c, s)
    (directory / "tayga").mkdir()
    conf = directory / "tayga.conf"
    conf.write_text(_tayga_conf(directory / "tayga"))
    sh("tayga", "-c", str(conf), "--mktun", netns=s)
    sh("ip", "link", "set", "dev", "nat64", "up", netns=s)
    sh("ip", "route", "add", POOL4, "dev", "nat64", netns=s)
    sh("ip", "-6", "route", "add", PREFIX64, "dev", "nat64", netns=s)
    (directory / "unbound.conf").write_text(_unbound_conf(upstream, directory))
    procs = []
    for ns, argv in (
        (s, ["tayga", "-c", str(conf), "--nodetach"]),
        (c, ["unbound", "-d", "-c", str(directory / "unbound.conf")]),
    ):
        procs.append(
            subprocess.Popen(
                ["nsenter", f"--net={ns_path(ns)}", *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
    return procs
