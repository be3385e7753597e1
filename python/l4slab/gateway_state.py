"""The gateway's undo log: what ``l4slab gateway`` changed on this machine, and undoing it.

Before it changes anything, a gateway (:mod:`l4slab.gateway`) writes a state file
``/run/l4slab-gateway/<pid>.json`` naming every change and how to undo it: the LAN
interface with its addresses (a wireless one's radio, which moves whole), the veth,
the nftables table, each sysctl's old value, dnsmasq's pid. :func:`undo` undoes what a
state file records. It runs when the gateway stops, in the reaper process after
SIGKILL (:func:`reap`: it holds a descriptor of the client namespace, so the LAN
interface can be moved back even after the emulator's own reaper deleted the
namespace's name; a deleted namespace would destroy a veth and give a physical device
back without its addresses), at every start for gateways whose owner is dead, and in
``l4slab gateway cleanup`` (:func:`cleanup`).

The reaper runs as ``python -m l4slab.gateway_state reap STATE_FILE``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from l4slab import emu

__all__ = [
    "STATE_DIR",
    "TMP_PREFIX",
    "GatewayError",
    "GatewayInputError",
    "alive",
    "cleanup",
    "ip_json",
    "ns_path",
    "proc_start",
    "reap",
    "save",
    "sh",
    "states",
    "sys_net",
    "try_sh",
    "undo",
]

STATE_DIR = Path("/run/l4slab-gateway")
#: The kernel's interfaces (sysfs); the tests give a fake one.
SYS_NET = Path("/sys/class/net")


def sys_net() -> Path:
    """:data:`SYS_NET`, read when called (the tests replace it)."""
    return SYS_NET


class GatewayError(emu.EmuError):
    """The gateway could not start or run (a command failed, a tool is missing)."""


class GatewayInputError(emu.EmuInputError):
    """A refused option: the interface is missing, is the WAN, carries the default
    route, is in use by a running gateway, or the LAN subnet collides (exit 2)."""


# ----------------------------------------------------------------------------- commands


def sh(*args: str, netns: str | None = None) -> str:
    """Run a command (in network namespace ``netns``, a name or a path, when given);
    its stdout. Raises :class:`GatewayError` with its stderr when it fails."""
    argv = [*(["nsenter", f"--net={ns_path(netns)}"] if netns else []), *args]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise GatewayError(f"{args[0]} is not installed ({exc})") from None
    if out.returncode != 0:
        raise GatewayError(f"`{' '.join(argv)}` failed: {out.stderr.strip()}")
    return out.stdout


def try_sh(*args: str, netns: str | None = None) -> bool:
    """:func:`sh` for undoing: a failure is reported, not raised."""
    try:
        sh(*args, netns=netns)
    except GatewayError as exc:
        print(f"l4slab gateway: warning: {exc}", file=sys.stderr)
        return False
    return True


def ns_path(netns: str) -> str:
    return netns if "/" in netns else f"/run/netns/{netns}"


def ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    out = sh("ip", "-j", *args, netns=netns).strip()
    data: list[dict[str, Any]] = json.loads(out) if out else []
    return data


def proc_start(pid: int) -> int | None:
    """Kernel start time of ``pid`` (``/proc/PID/stat`` field 22), ``None`` if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2 :].split()
    return None if rest[0] == "Z" else int(rest[19])


def alive(pid: int, start: int | None) -> bool:
    """Whether ``pid`` is the live process that had kernel start time ``start``."""
    return start is not None and proc_start(pid) == start


# ----------------------------------------------------------------------------- state


def states() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every gateway's state file with its content (live and dead owners alike)."""
    if not STATE_DIR.is_dir():
        return
    for path in sorted(STATE_DIR.glob("*.json")):
        with suppress(OSError, ValueError):
            yield path, json.loads(path.read_text())


def save(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically (a reaper may read it at any moment)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(path)


#: The prefix of the gateway's temporary folder (``tempfile.mkdtemp``).
TMP_PREFIX = "l4slab-gateway-"


def undo(
    path: Path, state: dict[str, Any], *, client_ns: str | None = None, keep_tmp: bool = False
) -> None:
    """Undo every change ``state`` (read from ``path``) records, newest first, then remove
    the file and, unless ``keep_tmp`` (the gateway itself, which still reads it), the
    gateway's temporary folder. ``client_ns`` (a path) reaches the client namespace when
    its name is gone."""
    started = [[state.get("dnsmasq_pid"), state.get("dnsmasq_start")], *state.get("processes", [])]
    for pid, start in started:
        if pid and alive(pid, start):
            with suppress(OSError):
                os.kill(pid, signal.SIGTERM)
    if state.get("lan_phy"):
        # hostapd gives the interface back in station mode as it ends, which it can
        # only do while the radio is still in its namespace: up to 5 s for it.
        deadline = time.monotonic() + 5
        while any(p and alive(p, t) for p, t in started) and time.monotonic() < deadline:
            time.sleep(0.05)
    ns = client_ns or state.get("client_ns")
    lan = state.get("lan")
    if ns and lan and Path(ns_path(ns)).exists():
        # Back into this process's namespace (the host's): `ip` (`iw`) runs inside `ns`.
        host = f"/proc/{os.getpid()}/ns/net"
        with suppress(GatewayError):
            sh("ip", "link", "set", "dev", lan, "down", netns=ns)
            if phy := state.get("lan_phy"):
                # A radio moves whole (gateway_wifi); its interface with it.
                sh("iw", "phy", phy, "set", "netns", "name", host, netns=ns)
            else:
                sh("ip", "link", "set", "dev", lan, "netns", host, netns=ns)
    if lan and (sys_net() / lan).exists() and state.get("lan_moved"):
        for addr in state.get("lan_addrs", []):
            try_sh("ip", "addr", "add", addr, "dev", lan)
        if state.get("lan_up"):
            try_sh("ip", "link", "set", "dev", lan, "up")
    family = state.get("nft_family", "ip")
    if (table := state.get("nft_table")) and _nft_table_exists(family, table):
        try_sh("nft", "delete", "table", family, table)
    if (veth := state.get("veth")) and (sys_net() / veth).exists():
        try_sh("ip", "link", "del", veth)
    for key, old in state.get("sysctls", {}).items():
        with suppress(OSError):
            Path(key).write_text(old)
    with suppress(OSError):
        Path(state.get("leases", "")).unlink()
    tmp = state.get("tmp")
    # Only a folder the gateway made (tempfile's name with its prefix), never another.
    if tmp and not keep_tmp and Path(tmp).name.startswith(TMP_PREFIX):
        shutil.rmtree(tmp, ignore_errors=True)
    with suppress(OSError):
        path.unlink()


def _nft_table_exists(family: str, table: str) -> bool:
    try:
        return table in sh("nft", "list", "tables", family)
    except GatewayError:
        return False


def cleanup() -> list[str]:
    """Undo what gateways whose owner is dead left behind; the LAN interfaces restored."""
    done = []
    for path, state in states():
        if not alive(state.get("owner_pid", 0), state.get("owner_start")):
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
                ns_fd = os.open(ns_path(arg), os.O_RDONLY)
        elif word == "done":
            done = True
    if done or not state_file.exists():
        return
    state = json.loads(state_file.read_text())
    deadline = time.monotonic() + 10
    while alive(state.get("emulator_pid", 0), state.get("emulator_start")):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # nsenter reaches the namespace through our descriptor (its own are closed).
    held = None if ns_fd is None else f"/proc/{os.getpid()}/fd/{ns_fd}"
    undo(state_file, state, client_ns=held)


if __name__ == "__main__":  # the reaper: python -m l4slab.gateway_state reap STATE_FILE
    if sys.argv[1:2] == ["reap"] and len(sys.argv) == 3:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        reap(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m l4slab.gateway_state reap STATE_FILE")
