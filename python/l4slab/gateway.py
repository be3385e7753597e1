"""``l4slab gateway``: real devices on a LAN interface behind the emulator's bottleneck.

The emulator (:mod:`l4slab.emu`, the ``shell`` plan) makes its two namespaces
joined through TUN devices and its forwarder; the gateway plugs the world into
them::

    device ── LAN iface ─┐ [ns l4slab-<pid>-c]            [ns l4slab-<pid>-s]
      (DHCP from dnsmasq) │  tcli ── forwarder ── tsrv      veth "wan" ────────┐
                          └─ ip_forward, default via tcli   ip_forward          │
                                                                                 │
    [host] veth l4gw-<pid>-h (169.254.77.1/30), route LAN subnet via it,         │
           ip_forward = 1, nftables masquerade of the LAN subnet out of WAN ─────┘

So every packet between a device and the WAN crosses the bottleneck, with the
emulator's options per direction (up = device -> WAN, down = WAN -> device).

**Safety.** Before it changes anything the gateway writes down what it is about to
change; :mod:`l4slab.gateway_state` undoes it when the gateway stops, and its reaper
after SIGKILL.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from l4slab import gateway_nat64, gateway_wifi
from l4slab.emu_plan import SERVER_ADDR, Shell
from l4slab.gateway_options import Options
from l4slab.gateway_state import (
    STATE_DIR,
    TMP_PREFIX,
    GatewayError,
    GatewayInputError,
    alive,
    cleanup,
    ip_json,
    ns_path,
    proc_start,
    save,
    sh,
    states,
    undo,
)

__all__ = [
    "STATE_DIR",
    "Gateway",
    "GatewayError",
    "GatewayInputError",
    "Options",
    "cleanup",
    "undo",
]

#: The host <-> server-namespace transit link (link-local: never a real network's).
TRANSIT_HOST = "169.254.77.1"
TRANSIT_NS = "169.254.77.2"
TRANSIT_PREFIX = 30
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
#: The same link's IPv6 addresses (unique local, inside the gateway's own fd4c:77::/48).
TRANSIT6_HOST = "fd4c:77:ffff::1"
TRANSIT6_NS = "fd4c:77:ffff::2"
#: Per-interface IPv6 forwarding (Linux 6.17+, ip6_forward): the host forwards the
#: LAN's IPv6 between the veth and the WAN without net.ipv6.conf.all.forwarding,
#: which would turn every interface into a router that ignores router advertisements.
FORCE_FORWARDING = "/proc/sys/net/ipv6/conf/{}/force_forwarding"


def wan_ipv6(wan: str) -> str | None:
    """Why the LAN cannot have IPv6 through ``wan`` (``None``: it can): the WAN needs a
    global or unique-local address, and the kernel per-interface forwarding."""
    if not Path(FORCE_FORWARDING.format(wan)).exists():
        return (
            "this kernel has no per-interface IPv6 forwarding (net.ipv6.conf.*."
            "force_forwarding, Linux 6.17)"
        )
    addrs = ip_json("-6", "addr", "show", "dev", wan)
    if not any(a.get("scope") == "global" for x in addrs for a in x.get("addr_info", [])):
        return f"--wan {wan} has no IPv6 address beyond link-local"
    return None


# ----------------------------------------------------------------------------- checks


def _links() -> dict[str, dict[str, Any]]:
    return {link["ifname"]: link for link in ip_json("link", "show")}


def check(opts: Options) -> None:
    """Refuse (:class:`GatewayInputError`) what the gateway must not touch, before
    anything changes."""
    gateway_wifi.check_options(opts)
    for _, state in states():
        if alive(state.get("owner_pid", 0), state.get("owner_start")) and opts.lan in (
            state.get("lan"),
            state.get("wan"),
        ):
            raise GatewayInputError(
                f"--lan {opts.lan} is in use by the gateway of pid {state['owner_pid']}"
            )
    links = _links()
    for role, name in (("--lan", opts.lan), ("--wan", opts.wan)):
        if name not in links:
            raise GatewayInputError(
                f"{role} {name}: no such interface (have: {', '.join(sorted(links))})"
            )
    if opts.lan == opts.wan:
        raise GatewayInputError(
            f"--lan {opts.lan} is also --wan: the LAN must be another interface"
        )
    gateway_wifi.check(opts)
    for route in ip_json("route", "show", "default") + ip_json("-6", "route", "show", "default"):
        if route.get("dev") == opts.lan:
            raise GatewayInputError(
                f"--lan {opts.lan} carries this machine's default route; the gateway would "
                "take it away (use another interface as the LAN)"
            )
    if "lo" in (opts.lan, opts.wan):
        raise GatewayInputError("the loopback interface cannot be the LAN or the WAN")
    try:
        subnet = ipaddress.IPv4Network(opts.subnet)
    except ValueError as exc:
        raise GatewayInputError(f"--lan-subnet {opts.subnet}: {exc}") from None
    for server in opts.dns:
        try:
            ipaddress.IPv4Address(server)
        except ValueError:
            raise GatewayInputError(f"--dns {server}: not an IPv4 address") from None
    if subnet.num_addresses < 8:
        raise GatewayInputError(f"--lan-subnet {opts.subnet}: too small (at least a /29)")
    if opts.out is not None:
        from l4slab.output import check_output_dir, output_path

        pcap = opts.shell.pcap_dir
        if pcap is not None and output_path(opts.out).resolve() == Path(pcap).resolve():
            raise GatewayInputError(
                "-o and --pcap-dir name the same folder: the bundle replaces its folder whole"
            )
        try:
            check_output_dir(opts.out)
        except (FileExistsError, NotADirectoryError, PermissionError) as exc:
            raise GatewayInputError(f"-o {opts.out}: {exc}") from None
    for device in opts.check:
        if device != "all":
            try:
                ipaddress.ip_address(device)
            except ValueError:
                raise GatewayInputError(
                    f"--check {device}: not an address (a device's LAN address, or 'all')"
                ) from None
    for route in ip_json("route", "show"):
        dst = route.get("dst", "")
        if dst in ("default", "") or opts.lan == route.get("dev"):
            continue
        with suppress(ValueError):
            if ipaddress.IPv4Network(dst, strict=False).overlaps(subnet):
                raise GatewayInputError(
                    f"--lan-subnet {opts.subnet} overlaps {dst} (dev {route.get('dev')}) "
                    "of this machine: choose another"
                )
    if opts.nat64:
        pool = ipaddress.IPv4Network(gateway_nat64.POOL4)
        for route in ip_json("route", "show"):
            with suppress(ValueError):
                if ipaddress.IPv4Network(route.get("dst", ""), strict=False).overlaps(pool):
                    raise GatewayInputError(
                        f"--nat64: its IPv4 pool {pool} overlaps {route['dst']} of this machine"
                    )
    for tool in ("dnsmasq", "nft", "nsenter", *(("tayga", "unbound") if opts.nat64 else ())):
        if not any(Path(d, tool).exists() for d in [*os.get_exec_path(), "/usr/sbin", "/sbin"]):
            raise GatewayError(f"{tool} is not installed (Debian: apt-get install -y {tool})")


# ----------------------------------------------------------------------------- the gateway


def _nameservers() -> list[str]:
    """The host's DNS servers that the LAN can reach through the WAN (not loopback)."""
    try:
        text = Path("/etc/resolv.conf").read_text()
    except OSError:
        return []
    found = re.findall(r"^\s*nameserver\s+(\S+)", text, re.M)
    out = []
    for s in found:
        with suppress(ValueError):
            if ipaddress.ip_address(s).version == 4 and not ipaddress.ip_address(s).is_loopback:
                out.append(s)
    return out


class Gateway:
    """A running gateway: :meth:`start`, then :meth:`status` per interval, :meth:`stop`."""

    def __init__(self, opts: Options, say: Callable[[str], None]) -> None:
        self.opts = opts
        self.say = say
        self.pid = os.getpid()
        self.path = STATE_DIR / f"{self.pid}.json"
        subnet = ipaddress.IPv4Network(opts.subnet)
        hosts = list(subnet.hosts())
        self.router = str(hosts[0])
        self.pool = (str(hosts[min(99, len(hosts) // 2)]), str(hosts[-1]))
        self.subnet = subnet
        self.state: dict[str, Any] = {}
        self.emulator: subprocess.Popen[str] | None = None
        self.dnsmasq: subprocess.Popen[bytes] | None = None
        self.reaper: subprocess.Popen[bytes] | None = None
        self.tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
        self.dns = False
        self.stopped = False
        self.client_fd: int | None = None
        #: DNS64 and NAT64 (``--nat64``), hostapd (``--ssid``).
        self.extra: list[subprocess.Popen[bytes]] = []
        #: The emulator's report, once it stopped.
        self.report: dict[str, Any] | None = None
        #: Where the bottleneck is captured (``--pcap-dir``, or for ``--check`` alone a
        #: folder of its own, removed with the rest).
        shell_pcap = opts.shell.pcap_dir
        self.capture: Path | None = (
            Path(shell_pcap) if shell_pcap is not None else
            (self.tmp / "capture" if opts.check else None)
        )  # fmt: skip
        #: Why the LAN has no IPv6 beside IPv4 (``None``: it has; set by :meth:`start`).
        self.no_ipv6: str | None = "not started"
        #: ``--nat64``: the AAAA answers DNS64 synthesised, read when it stops.
        self.dns64: list[dict[str, Any]] | None = None
        #: The passive check's verdicts (``--check``), once it stopped.
        self.verdicts: list[dict[str, Any]] | None = None

    def _record(self, **changes: Any) -> None:
        self.state.update(changes)
        save(self.path, self.state)

    def _tell_reaper(self, line: str) -> None:
        assert self.reaper is not None and self.reaper.stdin is not None
        self.reaper.stdin.write(line.encode() + b"\n")
        self.reaper.stdin.flush()

    def start(self) -> None:
        """Check, then set everything up; on a failure, undo what was done and raise."""
        from l4slab import emu  # loaded when a gateway runs, not with the CLI

        check(self.opts)
        if not emu.is_root():
            raise emu.NotRootError(
                "l4slab gateway needs root: it moves interfaces, runs a DHCP server and NATs."
            )
        for lan in cleanup():
            self.say(f"restored what a killed gateway left (LAN {lan})")
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        lan = self.opts.lan
        addrs = ip_json("addr", "show", "dev", lan)[0]
        self._record(
            owner_pid=self.pid,
            owner_start=proc_start(self.pid),
            tmp=str(self.tmp),
            lan=lan,
            wan=self.opts.wan,
            lan_addrs=[
                f"{a['local']}/{a['prefixlen']}"
                for a in addrs.get("addr_info", [])
                if a.get("scope") != "link"
            ],
            lan_up="UP" in addrs.get("flags", []),
            sysctls={},
        )
        self.reaper = subprocess.Popen(
            [sys.executable, "-m", "l4slab.gateway_state", "reap", str(self.path)],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            self._setup()
        except BaseException:
            self.stop()
            raise

    def _start_emulator(self) -> tuple[str, str]:
        """Start the emulator with a COMMAND that prints the namespace names and sleeps."""
        from l4slab import emu  # loaded when a gateway runs, not with the CLI

        plan = emu.checked(
            Shell(
                command=(
                    "sh",
                    "-c",
                    'echo "$L4SLAB_CLIENT_NETNS $L4SLAB_SERVER_NETNS"; exec sleep infinity',
                ),
                sets=self.opts.shell.sets,
                report=self.tmp / "emulator.json",
                live=self.tmp / "live.json",
                cc=self.opts.shell.cc,
                quiet=self.opts.shell.quiet,
                tuning=self.opts.shell.tuning,
                pcap_dir=self.capture,
                pcap_limit=self.opts.shell.pcap_limit,
            )
        )
        self.emulator = subprocess.Popen(
            emu.command_line(plan),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            env=emu._child_env(),
            # Not in the terminal's process group: a Ctrl-C must not make it delete the
            # namespaces before the gateway has moved the LAN interface back.
            start_new_session=True,
        )
        assert self.emulator.stdout is not None
        ready, _, _ = select.select([self.emulator.stdout], [], [], 30)
        line = self.emulator.stdout.readline() if ready else ""
        if len(line.split()) != 2:
            self.emulator.wait(5)
            if self.emulator.returncode == 2:
                # Bad link options: the emulator resolves them (shell.rs, resolve_links)
                # and says which key, before it creates anything.
                raise GatewayInputError("the emulator refused the link options (above)")
            raise GatewayError(
                f"the emulator did not start (exit {self.emulator.returncode}; its messages "
                "are above)"
            )
        client, server = line.split()
        self._record(
            emulator_pid=self.emulator.pid,
            emulator_start=proc_start(self.emulator.pid),
            client_ns=client,
            server_ns=server,
        )
        # Held, as the reaper holds it: if the emulator ends first and deletes the
        # namespace's name, the LAN interface can still be moved back.
        self.client_fd = os.open(ns_path(client), os.O_RDONLY | os.O_CLOEXEC)
        return client, server

    def _sysctl(self, key: str, value: str) -> None:
        old = Path(key).read_text().strip()
        if old != value:
            self._record(sysctls={**self.state["sysctls"], key: old})
            Path(key).write_text(value)

    def _setup(self) -> None:
        lan, wan = self.opts.lan, self.opts.wan
        c, s = self._start_emulator()
        self._tell_reaper(f"ns {c}")
        # The server namespace <-> the host: a veth pair, NATed out of the WAN.
        veth = f"l4gw-{self.pid}-h"
        self._record(veth=veth)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "wan", "netns", s)
        sh("ip", "addr", "add", f"{TRANSIT_HOST}/{TRANSIT_PREFIX}", "dev", veth)
        sh("ip", "link", "set", "dev", veth, "up")
        sh("ip", "addr", "add", f"{TRANSIT_NS}/{TRANSIT_PREFIX}", "dev", "wan", netns=s)
        sh("ip", "link", "set", "dev", "wan", "up", netns=s)
        sh("ip", "route", "add", "default", "via", TRANSIT_HOST, "dev", "wan", netns=s)
        sh("ip", "route", "add", str(self.subnet), "dev", "tsrv", netns=s)
        sh("ip", "route", "add", str(self.subnet), "via", TRANSIT_NS, "dev", veth)
        nat = [str(self.subnet)]
        if self.opts.nat64:
            sh("ip", "route", "add", gateway_nat64.POOL4, "via", TRANSIT_NS, "dev", veth)
            nat.append(gateway_nat64.POOL4)
        for ns in (c, s):
            sh("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=ns)
        self._sysctl(IP_FORWARD, "1")
        self.no_ipv6 = "--nat64: IPv6 only" if self.opts.nat64 else wan_ipv6(wan)
        nat6 = ""
        if self.no_ipv6 is None:
            # Dual stack: the LAN's IPv6 prefix over the same veth, NATed out of the WAN
            # (NAT66: the WAN's own prefix is not the gateway's to route).
            lan6 = gateway_nat64.LAN_PREFIX6
            sh("ip", "-6", "addr", "add", f"{TRANSIT6_HOST}/64", "dev", veth, "nodad")
            sh("ip", "-6", "addr", "add", f"{TRANSIT6_NS}/64", "dev", "wan", "nodad", netns=s)
            sh("ip", "-6", "route", "add", "default", "via", TRANSIT6_HOST, "dev", "wan",
               netns=s)  # fmt: skip
            sh("ip", "-6", "route", "add", lan6, "via", TRANSIT6_NS, "dev", veth)
            sh("sysctl", "-qw", f"net.ipv6.conf.{veth}.force_forwarding=1")
            self._sysctl(FORCE_FORWARDING.format(wan), "1")
            nat6 = f'\n    ip6 saddr {lan6} oifname "{wan}" masquerade;'
        table = f"l4slab_gw_{self.pid}"
        self._record(nft_table=table, nft_family="inet")
        rules = f"""table inet {table} {{
  chain postrouting {{ type nat hook postrouting priority srcnat; policy accept;
    ip saddr {{ {", ".join(nat)} }} oifname "{wan}" masquerade;{nat6} }}
  chain forward {{ type filter hook forward priority filter; policy accept;
    iifname "{veth}" oifname "{wan}" accept;
    iifname "{wan}" oifname "{veth}" ct state established,related accept; }}
}}
"""
        rules_file = self.tmp / "nat.nft"
        rules_file.write_text(rules)
        sh("nft", "-f", str(rules_file))
        self._lan_into(c)
        # `src`: the namespace's own traffic (dnsmasq's DNS queries) leaves from the LAN
        # address, which the host routes back and NATs, not from tcli's 10.77.0.1.
        sh("ip", "route", "add", "default", "via", SERVER_ADDR, "dev", "tcli",
             "src", self.router, netns=c)  # fmt: skip
        if self.no_ipv6 is None:
            gateway_nat64.lan6(lan, c, s)
        if self.opts.nat64:
            servers = list(self.opts.dns) or _nameservers()
            self.extra += gateway_nat64.start(lan, c, s, servers, self.tmp)
            self._record(processes=[[p.pid, proc_start(p.pid)] for p in self.extra])
        self._start_dnsmasq(c)
        if self.opts.nat64:
            self.say(
                f"LAN {lan}: IPv6 only, {gateway_nat64.LAN_PREFIX6} (router advertisements), "
                f"DNS64 {gateway_nat64.ROUTER6}, NAT64 {gateway_nat64.PREFIX64}; WAN {wan} "
                f"(NAT, nftables table {table}); namespaces {c} (LAN side), {s} (WAN side)"
            )
            return
        v6 = (
            f"IPv6 {gateway_nat64.LAN_PREFIX6} (router advertisements, NAT66)"
            if self.no_ipv6 is None
            else f"no IPv6 ({self.no_ipv6})"
        )
        self.say(
            f"LAN {lan}: {self.subnet}, gateway {self.router}, DHCP {self.pool[0]}-{self.pool[1]}"
            f"{', DNS ' + self.router if self.dns else ''}, {v6}; WAN {wan} (NAT, nftables "
            f"table {table}); namespaces {c} (LAN side), {s} (WAN side)"
        )

    def _lan_into(self, c: str) -> None:
        """The LAN interface into the client namespace ``c``, the devices' router; a
        wireless one's whole radio (:mod:`l4slab.gateway_wifi`), with ``--ssid`` an
        access point on it."""
        lan = self.opts.lan
        phy = gateway_wifi.phy_of(lan)
        self._record(lan_moved=True, lan_phy=phy)
        if phy is None:
            sh("ip", "link", "set", "dev", lan, "netns", c)
        else:
            sh("iw", "phy", phy, "set", "netns", "name", c)
        prefix = f"{self.router}/{self.subnet.prefixlen}"
        sh("ip", "addr", "add", prefix, "dev", lan, netns=c)
        sh("ip", "link", "set", "dev", lan, "up", netns=c)
        if phy is None:
            return
        if self.opts.ssid is None:
            self.say(gateway_wifi.own_ap_hint(lan, phy, c))
            return
        ap = gateway_wifi.start_hostapd(self.opts, c, self.tmp)
        self.extra.append(ap)
        self._record(processes=[[p.pid, proc_start(p.pid)] for p in self.extra])
        time.sleep(0.5)
        if ap.poll() is not None:
            log = (self.tmp / "hostapd.log").read_text(errors="replace").strip()
            raise GatewayError(f"hostapd exited at once ({ap.returncode}): {log[-2000:]}")
        self.say(f"Wi-Fi: access point {self.opts.ssid!r} (WPA2-PSK) on {lan} ({phy})")

    def _start_dnsmasq(self, c: str) -> None:
        servers = list(self.opts.dns) or _nameservers()
        self.dns = bool(servers)
        leases = STATE_DIR / f"{self.pid}.leases"
        self._record(leases=str(leases))
        dns = [f"--server={x}" for x in servers] if servers else ["--port=0"]
        lan_args = [
            f"--dhcp-range={self.pool[0]},{self.pool[1]},{self.subnet.netmask},1h",
            f"--dhcp-option=option:router,{self.router}",
            *dns,
        ]
        if self.no_ipv6 is None:
            lan_args += gateway_nat64.ra_args(dns=self.dns)
        if self.opts.nat64:
            lan_args = gateway_nat64.dnsmasq_args()
        self.dnsmasq = subprocess.Popen(
            [
                "nsenter",
                f"--net={ns_path(c)}",
                "dnsmasq",
                "--keep-in-foreground",
                "--conf-file=/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                f"--interface={self.opts.lan}",
                "--except-interface=lo",
                *lan_args,
                f"--dhcp-leasefile={leases}",
                "--pid-file=",
                "--user=root",
                "--log-facility=-",
                "--quiet-dhcp",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._record(dnsmasq_pid=self.dnsmasq.pid, dnsmasq_start=proc_start(self.dnsmasq.pid))
        time.sleep(0.2)
        if self.dnsmasq.poll() is not None:
            raise GatewayError(f"dnsmasq exited at once ({self.dnsmasq.returncode}; see above)")

    # ------------------------------------------------------------------------- running

    def live(self) -> dict[str, Any] | None:
        """The emulator's latest sample (``Shell.live``), ``None`` before the first."""
        try:
            data: dict[str, Any] = json.loads((self.tmp / "live.json").read_text())
        except (OSError, ValueError):
            return None
        return data

    def devices(self) -> list[dict[str, str]]:
        """Devices seen: the DHCP leases, and neighbours on the LAN with an address."""
        seen: dict[str, dict[str, str]] = {}
        with suppress(OSError):
            for line in Path(self.state["leases"]).read_text().splitlines():
                parts = line.split()
                if len(parts) >= 4:
                    seen[parts[1]] = {"mac": parts[1], "address": parts[2], "name": parts[3]}
        with suppress(GatewayError):
            for n in ip_json("neigh", "show", "dev", self.opts.lan, netns=self.state["client_ns"]):
                mac = n.get("lladdr")
                if mac and mac not in seen:
                    seen[mac] = {"mac": mac, "address": n.get("dst", ""), "name": "*"}
        return list(seen.values())

    def alive(self) -> bool:
        return self.emulator is not None and self.emulator.poll() is None

    def stop(self) -> None:
        """Undo everything, stop the emulator and keep its report (:attr:`report`).
        Idempotent: a failed :meth:`start` calls it, and so does :func:`run` after."""
        from l4slab import emu  # loaded when a gateway runs, not with the CLI

        if self.stopped:
            return
        self.stopped = True
        if self.opts.nat64 and self.extra:
            # Before unbound is stopped: its cache holds what the devices were answered.
            self.dns64 = gateway_nat64.dns64_answers(self.tmp)
        if self.state:
            held = None if self.client_fd is None else f"/proc/{os.getpid()}/fd/{self.client_fd}"
            undo(self.path, self.state, client_ns=held, keep_tmp=True)
        if self.client_fd is not None:
            os.close(self.client_fd)
        for proc in [*self.extra, *([self.dnsmasq] if self.dnsmasq else [])]:
            with suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        if self.emulator is not None:
            if self.emulator.poll() is None:
                self.emulator.send_signal(signal.SIGTERM)
            self.emulator.wait()
            with suppress(OSError, ValueError):
                self.report = emu.read_report(self.tmp / "emulator.json")
            if self.opts.check and self.report is not None and self.capture is not None:
                self._judge(self.report, self.capture)
        if self.reaper is not None:
            with suppress(OSError):
                self._tell_reaper("done")
            assert self.reaper.stdin is not None
            self.reaper.stdin.close()
            self.reaper.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _judge(self, report: dict[str, Any], capture: Path) -> None:
        """The passive check of ``--check``'s devices (:mod:`l4slab.check.passive`)."""
        from l4slab.check import passive  # numpy: loaded only for a check

        links = {d: _link(report, d) for d in ("up", "down")}
        devices = None if "all" in self.opts.check else set(self.opts.check)
        self.say("l4slab gateway: judging the devices' flows (passive L4S check) ...")
        try:
            verdicts, truncated = passive.judge_capture(capture, links, devices, report)
        except (passive.PcapError, OSError, ValueError) as exc:
            # Whatever the capture holds, the gateway still undoes everything.
            self.say(f"l4slab gateway: check: could not read the capture: {exc}")
            self.verdicts = []
            return
        if truncated:
            self.say(
                f"l4slab gateway: check: the capture holds more than {passive.MAX_RECORDS} "
                "packets a direction; judged from its beginning"
            )
        for v in verdicts:
            self.say(f"l4slab gateway: check: {v.line()}")
        if not verdicts:
            self.say(
                "l4slab gateway: check: no flow to judge (a flow needs "
                f"{passive.MIN_DATA_PACKETS} data packets over {passive.MIN_SECONDS:g} s)"
            )
        self.verdicts = [v.to_json() for v in verdicts]


def _link(report: dict[str, Any], direction: str) -> Any:
    """The bottleneck's rate (Mbit/s) and one-way delay (ms) in ``direction``, from the
    scenario the emulator ran (a trace's rate: its mean)."""
    from l4slab.check.passive import Link

    # The scenario as serialized (crates/l4slab-core/src/units.rs): a rate in bit/s
    # (a trace's mean rate), a delay in nanoseconds.
    b = report["scenario"]["bottleneck"][direction]
    return Link(rate_mbit=float(b["rate"]) / 1e6, delay_ms=float(b["delay"]) / 1e6)


def _mbit(nbytes: int, seconds: float) -> str:
    return f"{nbytes * 8 / seconds / 1e6:.2f}"


_DIRECTIONS = (("bottleneck.up", "up (LAN->WAN)"), ("bottleneck.down", "down (WAN->LAN)"))


def status_line(prev: dict[str, Any] | None, now: dict[str, Any], devices: int) -> str:
    """One line from two of the emulator's live samples (``prev`` ``None``: since the
    start): per direction the rate out of the bottleneck and into it (IP bytes, from
    the forwarder's counters), and the queue in the last sample: backlog, mean delay
    (DualPI2's L and C apart), drops and marks."""
    seconds = now["t_s"] - (prev["t_s"] if prev else 0.0)
    parts = []
    for d, label in _DIRECTIONS:
        f = now["forwarder"][d]
        p = prev["forwarder"][d] if prev else {"bytes_in": 0, "bytes_out": 0}
        q = now["queues"].get(d, {})
        delay = f"{q['sojourn_ms']:.1f} ms" if "sojourn_ms" in q else "- ms"
        subs = [
            f"{k.split('.')[1].upper()} {q[k]:.1f}"
            for k in sorted(q)
            if k.startswith("sojourn_ms.")
        ]
        if subs:
            delay += f" ({', '.join(subs)})"
        parts.append(
            f"{label} {_mbit(f['bytes_out'] - p['bytes_out'], seconds)} Mbit/s "
            f"(in {_mbit(f['bytes_in'] - p['bytes_in'], seconds)}), queue "
            f"{q.get('backlog_pkts', 0):.0f} pkt, delay {delay}, {q.get('drops', 0):.0f} drops, "
            f"{q.get('marks', 0):.0f} marks"
        )
    return f"l4slab gateway: {'; '.join(parts)}; {devices} device(s)"


def _live_view(opts: Options, say: Callable[[str], None]) -> Any:
    """Start the live page (``opts.web``); ``None`` without one. The default port in
    use: any free one, said so."""
    if opts.web is None:
        return None
    from l4slab.gateway_web import LiveView

    addr, port = opts.web
    title = f"LAN {opts.lan} ↔ WAN {opts.wan}"
    try:
        view = LiveView(addr, port, title)
    except OSError as exc:
        if (addr, port) != Options.web:
            raise GatewayInputError(f"--web {addr}:{port}: {exc.strerror or exc}") from None
        view = LiveView(addr, 0, title)
        say(f"l4slab gateway: port {port} is in use ({exc.strerror}); the live view took another")
    return view


def run(opts: Options, say: Callable[[str], None], stop: Callable[[], bool]) -> dict[str, Any]:
    """Run a gateway until ``stop()`` (polled each interval), the duration, or the
    emulator's end; the report (also written to ``opts.report``)."""
    gw = Gateway(opts, say)
    view = None
    recorder = None
    if opts.out is not None:
        from l4slab.gateway_bundle import SeriesRecorder

        recorder = SeriesRecorder()
    try:
        # The page first: a port that is taken is refused before anything changes.
        view = _live_view(opts, say)
        gw.start()
        if view is not None:
            say(f"l4slab gateway: live view at {view.url}")
        t0 = time.monotonic()
        prev: dict[str, Any] | None = None
        # The status line's previous sample: a line every --interval seconds of samples.
        shown: dict[str, Any] | None = None
        while gw.alive() and not stop():
            if opts.duration is not None and time.monotonic() - t0 >= opts.duration:
                break
            # The emulator writes a sample a second: polled four times as often, none
            # is missed by the page or the bundle.
            time.sleep(0.25)
            now = gw.live()
            if now is None or (prev is not None and now["t_s"] <= prev["t_s"]):
                continue
            devices = gw.devices()
            if view is not None:
                view.add(now, devices)
            if recorder is not None:
                recorder.add(now)
            since = now["t_s"] - (shown["t_s"] if shown else 0.0)
            if opts.interval > 0 and since >= opts.interval - 1e-6:
                say(status_line(shown, now, len(devices)))
                shown = now
            prev = now
        devices = gw.devices()
        ended = None if gw.alive() else gw.emulator.returncode if gw.emulator else None
    finally:
        if view is not None:
            view.close()
        gw.stop()
    report: dict[str, Any] = {
        "gateway": {
            "lan": opts.lan,
            "wan": opts.wan,
            "subnet": str(gw.subnet),
            "router": gw.router,
            "duration_s": round(time.monotonic() - t0, 3),
            "devices": devices,
        },
        "emulator": gw.report,
    }
    if gw.dns64 is not None:
        report["gateway"]["dns64"] = gw.dns64
    if gw.verdicts is not None:
        report["check"] = gw.verdicts
    if opts.report is not None:
        opts.report.write_text(json.dumps(report, indent=2) + "\n")
    if recorder is not None and opts.out is not None and gw.report is not None:
        from l4slab.gateway_bundle import save

        where = save(opts.out, recorder, gw.report, report["gateway"], gw.verdicts)
        say(f"l4slab gateway: results: {where}/ (l4slab report {where})")
    if ended is not None:
        raise GatewayError(
            f"the emulator process ended by itself (exit status {ended}); the gateway stopped "
            "and undid its changes"
        )
    return report
