"""``l4slab gateway``: real devices on a LAN interface behind the emulator's bottleneck.

The emulator (:mod:`l4slab.emu`, the ``shell`` plan) makes its two namespaces
joined through TUN devices and its forwarder; the gateway plugs the world into
them::

    device ── LAN iface ─┐ [ns l4slab-<pid>-c]            [ns l4slab-<pid>-s]
      (DHCP from dnsmasq) │  tcli ── forwarder ── tsrv      veth l4gw-<pid>-s ─┐
                          └─ ip_forward, default via tcli   ip_forward          │
                                                                                 │
    [host] veth l4gw-<pid>-h (169.254.77.1/30), route LAN subnet via it,         │
           ip_forward = 1, nftables masquerade of the LAN subnet out of WAN ─────┘

So every packet between a device and the WAN crosses the bottleneck, with the
emulator's options per direction (up = device -> WAN, down = WAN -> device).

**Safety.** Before it changes anything the gateway writes a state file
``/run/l4slab-gateway/<pid>.json`` naming every change and how to undo it (the
LAN interface with its addresses, the veth, the nftables table, each sysctl's
old value, dnsmasq's pid). :func:`undo` undoes what a state file records; it
runs at exit, on SIGTERM/Ctrl-C (the CLI), in the reaper process after SIGKILL
(:func:`reap`: it holds a descriptor of the client namespace, so the LAN
interface can be moved back even after the emulator's own reaper deleted the
namespace's name; a deleted namespace would destroy a veth and only return a
physical device), at every start for gateways whose owner is dead, and in
``l4slab gateway cleanup``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4slab import emu
from l4slab.emu_plan import SERVER_ADDR, Shell

__all__ = [
    "STATE_DIR",
    "Gateway",
    "GatewayError",
    "GatewayInputError",
    "Options",
    "cleanup",
    "reap",
    "undo",
]

STATE_DIR = Path("/run/l4slab-gateway")
#: The host <-> server-namespace transit link (link-local: never a real network's).
TRANSIT_HOST = "169.254.77.1"
TRANSIT_NS = "169.254.77.2"
TRANSIT_PREFIX = 30
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"


class GatewayError(emu.EmuError):
    """The gateway could not start or run (a command failed, a tool is missing)."""


class GatewayInputError(emu.EmuInputError):
    """A refused option: the interface is missing, is the WAN, carries the default
    route, is in use by a running gateway, or the LAN subnet collides (exit 2)."""


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
    #: Seconds between status lines (0: none).
    interval: float = 1.0
    #: Stop after this many seconds (``None``: on Ctrl-C/SIGTERM).
    duration: float | None = None
    report: Path | None = None
    #: The emulator's plan; its ``command`` is the gateway's own.
    shell: Shell = field(default_factory=lambda: Shell(command=()))


# ----------------------------------------------------------------------------- commands


def _run(*args: str, netns: str | None = None) -> str:
    """Run a command (in network namespace ``netns``, a name or a path, when given);
    its stdout. Raises :class:`GatewayError` with its stderr when it fails."""
    argv = [*(["nsenter", f"--net={_ns_path(netns)}"] if netns else []), *args]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise GatewayError(f"{args[0]} is not installed ({exc})") from None
    if out.returncode != 0:
        raise GatewayError(f"`{' '.join(argv)}` failed: {out.stderr.strip()}")
    return out.stdout


def _try(*args: str, netns: str | None = None) -> bool:
    """:func:`_run` for undoing: a failure is reported, not raised."""
    try:
        _run(*args, netns=netns)
    except GatewayError as exc:
        print(f"l4slab gateway: warning: {exc}", file=sys.stderr)
        return False
    return True


def _ns_path(netns: str) -> str:
    return netns if "/" in netns else f"/run/netns/{netns}"


def _ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    out = _run("ip", "-j", *args, netns=netns).strip()
    data: list[dict[str, Any]] = json.loads(out) if out else []
    return data


def _proc_start(pid: int) -> int | None:
    """Kernel start time of ``pid`` (``/proc/PID/stat`` field 22), ``None`` if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2 :].split()
    return None if rest[0] == "Z" else int(rest[19])


def _alive(pid: int, start: int | None) -> bool:
    return start is not None and _proc_start(pid) == start


# ----------------------------------------------------------------------------- state


def _states() -> Iterator[tuple[Path, dict[str, Any]]]:
    if not STATE_DIR.is_dir():
        return
    for path in sorted(STATE_DIR.glob("*.json")):
        with suppress(OSError, ValueError):
            yield path, json.loads(path.read_text())


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(path)


def undo(path: Path, state: dict[str, Any], *, client_ns: str | None = None) -> None:
    """Undo every change ``state`` (read from ``path``) records, newest first, then remove
    the file. ``client_ns`` (a path) reaches the client namespace when its name is gone."""
    if (pid := state.get("dnsmasq_pid")) and _alive(pid, state.get("dnsmasq_start")):
        with suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    ns = client_ns or state.get("client_ns")
    lan = state.get("lan")
    if ns and lan and Path(_ns_path(ns)).exists():
        # Back into this process's namespace (the host's): `ip` runs inside `ns`.
        host = f"/proc/{os.getpid()}/ns/net"
        with suppress(GatewayError):
            _run("ip", "link", "set", "dev", lan, "down", netns=ns)
            _run("ip", "link", "set", "dev", lan, "netns", host, netns=ns)
    if lan and Path(f"/sys/class/net/{lan}").exists() and state.get("lan_moved"):
        for addr in state.get("lan_addrs", []):
            _try("ip", "addr", "add", addr, "dev", lan)
        if state.get("lan_up"):
            _try("ip", "link", "set", "dev", lan, "up")
    if (table := state.get("nft_table")) and _nft_table_exists(table):
        _try("nft", "delete", "table", "ip", table)
    if (veth := state.get("veth")) and Path(f"/sys/class/net/{veth}").exists():
        _try("ip", "link", "del", veth)
    for key, old in state.get("sysctls", {}).items():
        with suppress(OSError):
            Path(key).write_text(old)
    with suppress(OSError):
        Path(state.get("leases", "")).unlink()
    with suppress(OSError):
        path.unlink()


def _nft_table_exists(table: str) -> bool:
    try:
        return table in _run("nft", "list", "tables", "ip")
    except GatewayError:
        return False


def cleanup() -> list[str]:
    """Undo what gateways whose owner is dead left behind; the LAN interfaces restored."""
    done = []
    for path, state in _states():
        if not _alive(state.get("owner_pid", 0), state.get("owner_start")):
            undo(path, state)
            done.append(str(state.get("lan")))
    return done


def reap(state_file: Path) -> None:
    """The reaper (stdin: a pipe the gateway holds). Lines ``ns NAME`` name the client
    namespace, which it opens (so it outlives its name); ``done`` means the gateway undid
    everything itself. At EOF without ``done`` (the gateway was killed), it waits for
    the emulator to finish its own teardown, then undoes what the state file records."""
    ns_fd: int | None = None
    done = False
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word == "ns":
            with suppress(OSError):
                ns_fd = os.open(_ns_path(arg), os.O_RDONLY)
        elif word == "done":
            done = True
    if done or not state_file.exists():
        return
    state = json.loads(state_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(state.get("emulator_pid", 0), state.get("emulator_start")):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # nsenter reaches the namespace through our descriptor (its own are closed).
    held = None if ns_fd is None else f"/proc/{os.getpid()}/fd/{ns_fd}"
    undo(state_file, state, client_ns=held)


# ----------------------------------------------------------------------------- checks


def _links() -> dict[str, dict[str, Any]]:
    return {link["ifname"]: link for link in _ip_json("link", "show")}


def check(opts: Options) -> None:
    """Refuse (:class:`GatewayInputError`) what the gateway must not touch, before
    anything changes."""
    for _, state in _states():
        if _alive(state.get("owner_pid", 0), state.get("owner_start")) and opts.lan in (
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
    for route in _ip_json("route", "show", "default") + _ip_json("-6", "route", "show", "default"):
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
    for route in _ip_json("route", "show"):
        dst = route.get("dst", "")
        if dst in ("default", "") or opts.lan == route.get("dev"):
            continue
        with suppress(ValueError):
            if ipaddress.IPv4Network(dst, strict=False).overlaps(subnet):
                raise GatewayInputError(
                    f"--lan-subnet {opts.subnet} overlaps {dst} (dev {route.get('dev')}) "
                    "of this machine: choose another"
                )
    for tool in ("dnsmasq", "nft", "nsenter"):
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


@dataclass
class Counters:
    """Bytes and packets the forwarder read (``in``) and wrote (``out``) per direction,
    from the TUN devices' kernel counters."""

    up_in: int = 0
    up_out: int = 0
    down_in: int = 0
    down_out: int = 0
    packets: dict[str, int] = field(default_factory=dict)


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
        self.tmp = Path(tempfile.mkdtemp(prefix="l4slab-gateway-"))
        self.dns = False
        self.stopped = False
        #: The emulator's report, once it stopped.
        self.report: dict[str, Any] | None = None

    def _record(self, **changes: Any) -> None:
        self.state.update(changes)
        _save(self.path, self.state)

    def _tell_reaper(self, line: str) -> None:
        assert self.reaper is not None and self.reaper.stdin is not None
        self.reaper.stdin.write(line.encode() + b"\n")
        self.reaper.stdin.flush()

    def start(self) -> None:
        """Check, then set everything up; on a failure, undo what was done and raise."""
        check(self.opts)
        if not emu.is_root():
            raise emu.NotRootError(
                "l4slab gateway needs root: it moves interfaces, runs a DHCP server and NATs."
            )
        for lan in cleanup():
            self.say(f"restored what a killed gateway left (LAN {lan})")
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        lan = self.opts.lan
        addrs = _ip_json("addr", "show", "dev", lan)[0]
        self._record(
            owner_pid=self.pid,
            owner_start=_proc_start(self.pid),
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
            [sys.executable, "-m", "l4slab.gateway", "reap", str(self.path)],
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
        plan = emu.checked(
            Shell(
                command=(
                    "sh",
                    "-c",
                    'echo "$L4SLAB_CLIENT_NETNS $L4SLAB_SERVER_NETNS"; exec sleep infinity',
                ),
                sets=self.opts.shell.sets,
                report=self.tmp / "emulator.json",
                cc=self.opts.shell.cc,
                quiet=self.opts.shell.quiet,
                tuning=self.opts.shell.tuning,
                pcap_dir=self.opts.shell.pcap_dir,
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
            emulator_start=_proc_start(self.emulator.pid),
            client_ns=client,
            server_ns=server,
        )
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
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "wan", "netns", s)
        _run("ip", "addr", "add", f"{TRANSIT_HOST}/{TRANSIT_PREFIX}", "dev", veth)
        _run("ip", "link", "set", "dev", veth, "up")
        _run("ip", "addr", "add", f"{TRANSIT_NS}/{TRANSIT_PREFIX}", "dev", "wan", netns=s)
        _run("ip", "link", "set", "dev", "wan", "up", netns=s)
        _run("ip", "route", "add", "default", "via", TRANSIT_HOST, "dev", "wan", netns=s)
        _run("ip", "route", "add", str(self.subnet), "dev", "tsrv", netns=s)
        _run("ip", "route", "add", str(self.subnet), "via", TRANSIT_NS, "dev", veth)
        for ns in (c, s):
            _run("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=ns)
        self._sysctl(IP_FORWARD, "1")
        table = f"l4slab_gw_{self.pid}"
        self._record(nft_table=table)
        rules = f"""table ip {table} {{
  chain postrouting {{ type nat hook postrouting priority srcnat; policy accept;
    ip saddr {self.subnet} oifname "{wan}" masquerade; }}
  chain forward {{ type filter hook forward priority filter; policy accept;
    iifname "{veth}" oifname "{wan}" accept;
    iifname "{wan}" oifname "{veth}" ct state established,related accept; }}
}}
"""
        rules_file = self.tmp / "nat.nft"
        rules_file.write_text(rules)
        _run("nft", "-f", str(rules_file))
        # The LAN interface into the client namespace, the devices' router.
        self._record(lan_moved=True)
        _run("ip", "link", "set", "dev", lan, "netns", c)
        prefix = f"{self.router}/{self.subnet.prefixlen}"
        _run("ip", "addr", "add", prefix, "dev", lan, netns=c)
        _run("ip", "link", "set", "dev", lan, "up", netns=c)
        # `src`: the namespace's own traffic (dnsmasq's DNS queries) leaves from the LAN
        # address, which the host routes back and NATs, not from tcli's 10.77.0.1.
        _run("ip", "route", "add", "default", "via", SERVER_ADDR, "dev", "tcli",
             "src", self.router, netns=c)  # fmt: skip
        self._start_dnsmasq(c)
        self.say(
            f"LAN {lan}: {self.subnet}, gateway {self.router}, DHCP {self.pool[0]}-{self.pool[1]}"
            f"{', DNS ' + self.router if self.dns else ''}; WAN {wan} (NAT, nftables table "
            f"{table}); namespaces {c} (LAN side), {s} (WAN side)"
        )

    def _start_dnsmasq(self, c: str) -> None:
        servers = list(self.opts.dns) or _nameservers()
        self.dns = bool(servers)
        leases = STATE_DIR / f"{self.pid}.leases"
        self._record(leases=str(leases))
        dns = [f"--server={x}" for x in servers] if servers else ["--port=0"]
        self.dnsmasq = subprocess.Popen(
            [
                "nsenter",
                f"--net={_ns_path(c)}",
                "dnsmasq",
                "--keep-in-foreground",
                "--conf-file=/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                f"--interface={self.opts.lan}",
                "--except-interface=lo",
                f"--dhcp-range={self.pool[0]},{self.pool[1]},{self.subnet.netmask},1h",
                f"--dhcp-option=option:router,{self.router}",
                f"--dhcp-leasefile={leases}",
                "--pid-file=",
                "--user=root",
                "--log-facility=-",
                "--quiet-dhcp",
                *dns,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._record(dnsmasq_pid=self.dnsmasq.pid, dnsmasq_start=_proc_start(self.dnsmasq.pid))
        time.sleep(0.2)
        if self.dnsmasq.poll() is not None:
            raise GatewayError(f"dnsmasq exited at once ({self.dnsmasq.returncode}; see above)")

    # ------------------------------------------------------------------------- running

    def counters(self) -> Counters:
        """The forwarder's reads and writes per direction, from the TUN devices."""
        c, s = self.state["client_ns"], self.state["server_ns"]
        tcli = _ip_json("-s", "link", "show", "dev", "tcli", netns=c)[0]["stats64"]
        tsrv = _ip_json("-s", "link", "show", "dev", "tsrv", netns=s)[0]["stats64"]
        # The kernel's tx on a TUN device is what the forwarder reads from it.
        return Counters(
            up_in=tcli["tx"]["bytes"],
            up_out=tsrv["rx"]["bytes"],
            down_in=tsrv["tx"]["bytes"],
            down_out=tcli["rx"]["bytes"],
            packets={
                "up_in": tcli["tx"]["packets"],
                "up_out": tsrv["rx"]["packets"],
                "down_in": tsrv["tx"]["packets"],
                "down_out": tcli["rx"]["packets"],
            },
        )

    def devices(self) -> list[dict[str, str]]:
        """Devices seen: the DHCP leases, and neighbours on the LAN with an address."""
        seen: dict[str, dict[str, str]] = {}
        with suppress(OSError):
            for line in Path(self.state["leases"]).read_text().splitlines():
                parts = line.split()
                if len(parts) >= 4:
                    seen[parts[1]] = {"mac": parts[1], "ipv4": parts[2], "name": parts[3]}
        with suppress(GatewayError):
            for n in _ip_json("neigh", "show", "dev", self.opts.lan, netns=self.state["client_ns"]):
                mac = n.get("lladdr")
                if mac and mac not in seen:
                    seen[mac] = {"mac": mac, "ipv4": n.get("dst", ""), "name": "*"}
        return list(seen.values())

    def alive(self) -> bool:
        return self.emulator is not None and self.emulator.poll() is None

    def stop(self) -> None:
        """Undo everything, stop the emulator and keep its report (:attr:`report`).
        Idempotent: a failed :meth:`start` calls it, and so does :func:`run` after."""
        if self.stopped:
            return
        self.stopped = True
        if self.state:
            undo(self.path, self.state)
        if self.dnsmasq is not None:
            with suppress(subprocess.TimeoutExpired):
                self.dnsmasq.wait(5)
        if self.emulator is not None:
            if self.emulator.poll() is None:
                self.emulator.send_signal(signal.SIGTERM)
            self.emulator.wait()
            with suppress(OSError, ValueError):
                self.report = emu.read_report(self.tmp / "emulator.json")
        if self.reaper is not None:
            with suppress(OSError):
                self._tell_reaper("done")
            assert self.reaper.stdin is not None
            self.reaper.stdin.close()
            self.reaper.wait()
        with suppress(OSError):
            for f in self.tmp.iterdir():
                f.unlink()
            self.tmp.rmdir()


def _mbit(nbytes: int, seconds: float) -> str:
    return f"{nbytes * 8 / seconds / 1e6:.2f}"


def status_line(prev: Counters, now: Counters, seconds: float, devices: int) -> str:
    """One interval: per direction the rate out of the bottleneck and into it.

    From the TUN devices' kernel counters, which count a GSO super-packet with one
    header: ``in`` (read as such) falls short of the packets' IP bytes by their headers
    (about 3 % for TCP), ``out`` (written as segments, or few coalesced) does not. No
    queue figure: bytes in minus bytes out is off by those headers; the queues' own
    figures are in the report."""
    parts = []
    for d, label in (("up", "up (LAN->WAN)"), ("down", "down (WAN->LAN)")):
        i = getattr(now, f"{d}_in") - getattr(prev, f"{d}_in")
        o = getattr(now, f"{d}_out") - getattr(prev, f"{d}_out")
        parts.append(f"{label} {_mbit(o, seconds)} Mbit/s (in {_mbit(i, seconds)})")
    return f"l4slab gateway: {'; '.join(parts)}; {devices} device(s)"


def run(opts: Options, say: Callable[[str], None], stop: Callable[[], bool]) -> dict[str, Any]:
    """Run a gateway until ``stop()`` (polled each interval), the duration, or the
    emulator's end; the report (also written to ``opts.report``)."""
    gw = Gateway(opts, say)
    try:
        gw.start()
        prev = gw.counters()
        t0 = t_prev = time.monotonic()
        step = opts.interval if opts.interval > 0 else 0.2
        while gw.alive() and not stop():
            if opts.duration is not None and time.monotonic() - t0 >= opts.duration:
                break
            time.sleep(step)
            now, t = gw.counters(), time.monotonic()
            if opts.interval > 0:
                say(status_line(prev, now, t - t_prev, len(gw.devices())))
            prev, t_prev = now, t
        final, devices = gw.counters(), gw.devices()
    finally:
        gw.stop()
    report = {
        "gateway": {
            "lan": opts.lan,
            "wan": opts.wan,
            "subnet": str(gw.subnet),
            "router": gw.router,
            "duration_s": round(time.monotonic() - t0, 3),
            "devices": devices,
            "tun_counters": {
                "bytes": {k: getattr(final, k) for k in ("up_in", "up_out", "down_in", "down_out")},
                "packets": final.packets,
            },
        },
        "emulator": gw.report,
    }
    if opts.report is not None:
        opts.report.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":  # the reaper: python -m l4slab.gateway reap STATE_FILE
    if sys.argv[1:2] == ["reap"] and len(sys.argv) == 3:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        reap(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m l4slab.gateway reap STATE_FILE")
