"""``l4slab gateway`` (docs/gateway.md).

The root tests build the world the gateway serves out of veth pairs and namespaces:
a "device" namespace on the far end of the LAN cable (busybox udhcpc for DHCP), and
an "internet" namespace on the far end of the WAN one (iperf3's server). They skip
without root, dnsmasq, nft, busybox or iperf3, and without the emulator.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from l4slab import emu, gateway, gateway_nat64, gateway_state

_SOURCE = str(Path(emu.__file__).resolve().parents[1])

# --------------------------------------------------------------------------- no root


def test_refuses_a_missing_interface_and_lan_equal_to_wan() -> None:
    # Checked before anything changes, root or not (exit 2, naming the option).
    code, err = _cli(["gateway", "--lan", "l4gwt-nosuch", "--wan", "lo"])
    assert code == 2 and "--lan l4gwt-nosuch: no such interface" in err, err
    code, err = _cli(["gateway", "--lan", "lo", "--wan", "lo"])
    assert code == 2 and "--lan lo is also --wan" in err, err


def test_refuses_the_server_option_and_missing_interfaces() -> None:
    code, err = _cli(["gateway", "--lan", "lo", "--wan", "lo", "--server", "iperf3 -s"])
    assert code == 2 and "--server: the gateway's server side is the WAN" in err, err
    code, err = _cli(["gateway", "--rate", "10Mbit"])
    assert code == 2 and "--lan IFACE and --wan IFACE are required" in err, err


def test_status_line_gives_rates_queue_and_delays_per_direction() -> None:
    def sample(t_s: float, up_in: int, up_out: int) -> dict[str, Any]:
        fwd = {"bytes_in": up_in, "bytes_out": up_out}
        return {
            "t_s": t_s,
            "forwarder": {"bottleneck.up": fwd, "bottleneck.down": dict.fromkeys(fwd, 0)},
            "queues": {
                "bottleneck.up": {"backlog_pkts": 12.0, "sojourn_ms": 5.25, "sojourn_ms.c": 6.0,
                                  "sojourn_ms.l": 0.5, "drops": 1.0, "marks": 30.0},
                "bottleneck.down": {"backlog_pkts": 0.0, "drops": 0.0, "marks": 0.0},
            },
        }  # fmt: skip

    line = gateway.status_line(sample(1.0, 0, 0), sample(3.0, 2_500_000, 2_000_000), 2)
    up = "up (LAN->WAN) 8.00 Mbit/s (in 10.00), queue 12 pkt, delay 5.2 ms (C 6.0, L 0.5), "
    assert up + "1 drops, 30 marks" in line, line
    down = "down (WAN->LAN) 0.00 Mbit/s (in 0.00), queue 0 pkt, delay - ms, 0 drops, 0 marks"
    assert down in line and line.endswith("; 2 device(s)"), line
    # The first line counts from the start.
    assert "up (LAN->WAN) 5.33 Mbit/s" in gateway.status_line(None, sample(3.0, 0, 2_000_000), 0)


def test_undo_puts_back_what_a_state_file_records_and_cleanup_spares_live_owners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def fake_run(*args: str, netns: str | None = None) -> str:
        ran.append(f"[{netns}] " * (netns is not None) + " ".join(args))
        return "table ip l4slab_gw_1\n" if args[:3] == ("nft", "list", "tables") else ""

    monkeypatch.setattr(gateway_state, "sh", fake_run)
    monkeypatch.setattr(gateway_state, "STATE_DIR", tmp_path)
    sysctl = tmp_path / "ip_forward"
    sysctl.write_text("1")
    netns = tmp_path / "netns"
    netns.touch()
    state = {
        "owner_pid": 1,
        "owner_start": -1,  # never a live process's start time: a dead owner
        "lan": "lo",  # an interface that exists, so its addresses are put back
        "lan_moved": True,
        "lan_addrs": ["192.0.2.9/24"],
        "lan_up": True,
        "client_ns": str(netns),
        "nft_table": "l4slab_gw_1",
        "veth": "l4gwt-nosuch",  # gone already: not deleted again
        "sysctls": {str(sysctl): "0"},
    }
    (tmp_path / "1.json").write_text(json.dumps(state))
    live = {**state, "owner_pid": os.getpid(), "owner_start": gateway_state.proc_start(os.getpid())}
    (tmp_path / "2.json").write_text(json.dumps(live))
    assert gateway_state.cleanup() == ["lo"]
    host = f"/proc/{os.getpid()}/ns/net"
    assert ran == [
        f"[{netns}] ip link set dev lo down",
        f"[{netns}] ip link set dev lo netns {host}",
        "ip addr add 192.0.2.9/24 dev lo",
        "ip link set dev lo up",
        "nft list tables ip",
        "nft delete table ip l4slab_gw_1",
    ]
    assert sysctl.read_text() == "0"
    # The dead owner's file is gone, the live one's is left alone.
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["2.json"]


def _cli(args: list[str]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "l4slab", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    return proc.returncode, proc.stderr


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_SOURCE, os.environ.get("PYTHONPATH", "")])}
    env["COLUMNS"] = "300"
    return env


# --------------------------------------------------------------------------- root

_TOOLS = ("dnsmasq", "nft", "busybox", "iperf3", "nsenter")


def _root_or_skip() -> None:
    if not emu.is_root():
        pytest.skip("needs root (namespaces, moving interfaces, NAT)")
    missing = [t for t in _TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (Debian: apt-get install -y {' '.join(missing)})")
    try:
        emu.emulator_command()
    except emu.EmuError as exc:
        pytest.skip(str(exc))


def _sh(*args: str, check: bool = True) -> str:
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: {out.stderr}")
    return out.stdout


_UDHCPC_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/$mask" dev "$interface"
    ip route replace default via "$router" dev "$interface"
    echo "lease $ip/$mask router $router dns $dns" ;;
esac
"""


@dataclass
class World:
    """The cables: LAN (host end ``lan``, device end ``eth0`` in ``dev``) and WAN (host
    end ``wan`` 10.99.77.1, internet end ``eth0`` 10.99.77.2 in ``inet``)."""

    lan: str
    wan: str
    dev: str
    inet: str
    tmp: Path

    def in_dev(self, *args: str, check: bool = True) -> str:
        return _sh("ip", "netns", "exec", self.dev, *args, check=check)

    def dhcp(self) -> str:
        script = self.tmp / "udhcpc.sh"
        script.write_text(_UDHCPC_SCRIPT)
        script.chmod(0o755)
        # -n: fail if no lease, -q: quit once bound; 10 tries 1 s apart.
        return self.in_dev(
            "busybox", "udhcpc", "-i", "eth0", "-n", "-q", "-f", "-t", "10", "-T", "1",
            "-s", str(script),
        )  # fmt: skip


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    _root_or_skip()
    tag = str(os.getpid())[-5:]
    w = World(f"l4gwt{tag}l", f"l4gwt{tag}w", f"l4gwt-dev-{tag}", f"l4gwt-inet-{tag}", tmp_path)
    for ns in (w.dev, w.inet):
        _sh("ip", "netns", "add", ns)
        _sh("ip", "-n", ns, "link", "set", "lo", "up")
    # `ip netns exec` gives the device this resolv.conf: the gateway's DNS.
    etc = Path("/etc/netns") / w.dev
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "resolv.conf").write_text("nameserver 192.168.77.1\n")
    try:
        for host, ns in ((w.lan, w.dev), (w.wan, w.inet)):
            _sh("ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _sh("ip", "link", "set", host, "up")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
        _sh("ip", "addr", "add", "10.99.77.1/24", "dev", w.wan)
        _sh("ip", "-n", w.inet, "addr", "add", "10.99.77.2/24", "dev", "eth0")
        # A global address for NAT64's well-known prefix (RFC 6052 §3.1: not RFC 1918).
        _sh("ip", "addr", "add", "100.64.77.1/24", "dev", w.wan)
        _sh("ip", "-n", w.inet, "addr", "add", "100.64.77.2/24", "dev", "eth0")
        yield w
    finally:
        for link in (w.lan, w.wan):
            _sh("ip", "link", "del", link, check=False)
        for ns in (w.dev, w.inet):
            _sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(etc)


def _start(w: World, *args: str) -> subprocess.Popen[str]:
    cli = subprocess.Popen(
        [sys.executable, "-m", "l4slab", "gateway", "--lan", w.lan, "--wan", w.wan, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(w.tmp / "gateway.log").open("w"),
        text=True,
        env=_env(),
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    # The gateway's own line, once everything is up (dnsmasq's say "DHCP" before).
    while "(NAT, nftables table" not in (w.tmp / "gateway.log").read_text():
        assert cli.poll() is None, (w.tmp / "gateway.log").read_text()
        assert time.monotonic() < deadline, "the gateway did not come up in 60 s"
        time.sleep(0.1)
    return cli


def _machine() -> dict[str, Any]:
    """What the gateway may change on the host, to compare before and after."""
    return {
        "links": sorted(
            (link["ifname"], "UP" in link["flags"])
            for link in json.loads(_sh("ip", "-j", "link", "show"))
        ),
        "addrs": sorted(_sh("ip", "-4", "-br", "addr").split("\n")),
        "routes": sorted(_sh("ip", "route").splitlines() + _sh("ip", "-6", "route").splitlines()),
        "addrs6": sorted(_sh("ip", "-6", "-br", "addr").split("\n")),
        "force_forwarding": sorted(
            (p.parent.name, p.read_text())
            for p in Path("/proc/sys/net/ipv6/conf").glob("*/force_forwarding")
        ),
        "namespaces": sorted(n for n in _sh("ip", "netns", "list").split() if "l4slab" in n),
        "nft": _sh("nft", "list", "tables"),
        "ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text(),
        "daemons": _sh("pgrep", "-x", "dnsmasq|tayga|unbound", check=False),
        "tmp": sorted(p.name for p in Path(tempfile.gettempdir()).glob("l4slab-gateway-*")),
        "state": sorted(p.name for p in gateway_state.STATE_DIR.glob("*"))
        if gateway_state.STATE_DIR.is_dir()
        else [],
    }


def _after(before: dict[str, Any]) -> None:
    deadline = time.monotonic() + 15
    while _machine() != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _machine() == before


def test_a_device_gets_an_address_and_the_bottleneck_rate_both_ways(world: World) -> None:
    w = world
    before = _machine()
    report_file = w.tmp / "report.json"
    # The internet's DNS: the server's name (the gateway's dnsmasq forwards to it).
    dns = subprocess.Popen(
        ["ip", "netns", "exec", w.inet, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
         "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=10.99.77.2",
         "--address=/server.l4slab.test/10.99.77.2", "--pid-file=", "--user=root"],
    )  # fmt: skip
    # The set rate within 2 %: 10 Mbit/s of IP packets, of which iperf3 counts the TCP
    # payload, 1448 of every 1500 bytes (20 IP + 32 TCP with timestamps): 9.653 Mbit/s.
    goodput = 10.0 * 1448 / 1500
    link = ["--rate", "10Mbit", "--delay", "5ms", "--qdisc", "dualpi2"]
    cli = _start(w, *link, "--report", str(report_file), "--dns", "10.99.77.2")
    try:
        lease = w.dhcp()
        assert "lease 192.168.77." in lease and "router 192.168.77.1 dns 192.168.77.1" in lease
        # The name resolves through the gateway (and its query crossed the bottleneck).
        assert "10.99.77.2" in w.in_dev("busybox", "nslookup", "-type=a", "server.l4slab.test")
        # The LAN interface left the host while the gateway runs.
        assert not Path(f"/sys/class/net/{w.lan}").exists()
        server = subprocess.Popen(
            ["ip", "netns", "exec", w.inet, "chrt", "-f", "41", "iperf3", "-s", "-B", "10.99.77.2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.5)
            rates = {}
            # One measurement of the pair may be redone: a machine that stops the
            # forwarder for a second (seen once in CI: a packet released 945 ms late,
            # the up run at 8.03 Mbit/s) measures the machine, not the gateway.
            retries = 1
            for name, extra in (("up", []), ("down", ["-R"])):
                while True:
                    out = w.in_dev("chrt", "-f", "40", "iperf3", "-c", "server.l4slab.test",
                                   "-t", "5", "-J", *extra)  # fmt: skip
                    rates[name] = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
                    if retries == 0 or abs(rates[name] - goodput) <= 0.02 * goodput:
                        break
                    retries -= 1
        finally:
            server.terminate()
            server.wait()
    finally:
        cli.send_signal(signal.SIGTERM)
        cli.wait(60)
        dns.terminate()
        dns.wait()
    log = (w.tmp / "gateway.log").read_text()
    assert cli.returncode == 128 + signal.SIGTERM, log
    for name, rate in rates.items():
        assert abs(rate - goodput) <= 0.02 * goodput, (name, rates, log)
    # The status lines saw the 10 Mbit/s leave the bottleneck, up then down, and
    # DualPI2's C queue (kernel Cubic, Not-ECT) hold a delay.
    rows = [line for line in log.splitlines() if line.startswith("l4slab gateway: up")]
    for d in ("up (LAN->WAN) ", "down (WAN->LAN) "):
        seen = [float(r.split(d)[1].split()[0]) for r in rows]
        assert 9.0 < max(seen) <= 10.5, (d, seen)
    assert any(re.search(r"delay \d+\.\d ms \(C \d+\.\d\)", r) for r in rows), rows
    assert "1 device(s)" in log, log
    report = json.loads(report_file.read_text())
    assert next(d["address"] for d in report["gateway"]["devices"]).startswith("192.168.77.")
    dirs = report["emulator"]["forwarder"]["directions"]
    # Both directions carried the iperf3 runs: 5 s at ~830 packets/s each.
    for d in ("bottleneck.up", "bottleneck.down"):
        assert dirs[d]["packets_out"] > 3000, (d, dirs[d])
    # DualPI2's queues, with kernel Cubic's (Not-ECT) packets in C.
    for d in ("bottleneck.up", "bottleneck.down"):
        q = report["emulator"]["queues"][d]
        assert q["kind"] == "dualpi2" and q["rate_bps"] == 10_000_000, q
        assert q["subqueues"]["c"]["sojourn_ms"]["samples"] > 3000, q
    _after(before)


def test_refusals_leave_the_machine_as_it_was(world: World) -> None:
    w = world
    before = _machine()
    # A LAN that carries a default route (a second one, metric 4000, on the test cable).
    _sh("ip", "route", "add", "default", "via", "10.99.77.2", "dev", w.wan, "metric", "4000")
    try:
        code, err = _cli(["gateway", "--lan", w.wan, "--wan", w.lan])
    finally:
        _sh("ip", "route", "del", "default", "via", "10.99.77.2", "dev", w.wan, "metric", "4000")
    assert code == 2 and f"--lan {w.wan} carries this machine's default route" in err, err
    code, err = _cli(["gateway", "--lan", w.lan, "--wan", w.wan, "--lan-subnet", "10.99.77.0/25"])
    assert code == 2 and "--lan-subnet 10.99.77.0/25 overlaps 10.99.77.0/24" in err, err
    code, err = _cli(["gateway", "--lan", w.lan, "--wan", w.wan, "--rate", "fast"])
    assert code == 2 and 'bottleneck.rate: "fast" is not a rate' in err, err
    cli = _start(w)
    try:
        code, err = _cli(["gateway", "--lan", w.lan, "--wan", w.wan])
        # The interface has left the host: it is named as missing or in use.
        assert code == 2 and f"--lan {w.lan} is in use by the gateway of pid" in err, err
    finally:
        # Ctrl-C as a terminal sends it: to the whole process group.
        os.killpg(cli.pid, signal.SIGINT)
        cli.wait(60)
    assert cli.returncode == 128 + signal.SIGINT
    _after(before)


def test_sigkill_of_the_gateway_is_undone_by_its_reaper(world: World) -> None:
    w = world
    before = _machine()
    cli = _start(w, "--rate", "20Mbit")
    assert "lease" in w.dhcp()
    cli.kill()
    cli.wait()
    # The reaper moves the LAN interface back (a veth: deleting the namespace would
    # destroy it), deletes the NAT table and the veth, restores ip_forward.
    _after(before)
    assert Path(f"/sys/class/net/{w.lan}").exists()


def test_an_emulator_that_dies_stops_the_gateway_and_everything_is_undone(world: World) -> None:
    w = world
    before = _machine()
    cli = _start(w)
    (state,) = [json.loads(p.read_text()) for p in gateway_state.STATE_DIR.glob("*.json")]
    # The emulator deletes its namespaces' names as it goes: the gateway holds the
    # client namespace, so the LAN interface (a veth: it would be destroyed) comes back.
    os.kill(state["emulator_pid"], signal.SIGKILL)
    cli.wait(60)
    log = (w.tmp / "gateway.log").read_text()
    assert cli.returncode == 1 and "the emulator process ended by itself" in log, log
    _after(before)
    assert Path(f"/sys/class/net/{w.lan}").exists()


def _inet_dns(w: World, name: str, addr: str) -> subprocess.Popen[bytes]:
    """The internet's DNS server (10.99.77.2), answering ``name`` with ``addr`` (for
    5 minutes: dnsmasq's own records have a TTL of 0 unless told, and a resolver keeps
    nothing with none)."""
    return subprocess.Popen(
        ["ip", "netns", "exec", w.inet, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
         "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=10.99.77.2",
         f"--host-record={name},{addr}", "--local-ttl=300", "--pid-file=", "--user=root"],
    )  # fmt: skip


def test_nat64_an_ipv6_only_device_reaches_an_ipv4_server_by_name_only(world: World) -> None:
    w = world
    missing = [t for t in ("tayga", "unbound", "curl") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (Debian: apt-get install -y {' '.join(missing)})")
    before = _machine()
    (Path("/etc/netns") / w.dev / "resolv.conf").write_text(f"nameserver {gateway_nat64.ROUTER6}\n")
    name = "v4only.l4slab-test.net"
    dns = _inet_dns(w, name, "100.64.77.2")
    http = subprocess.Popen(
        ["ip", "netns", "exec", w.inet, "python3", "-m", "http.server", "--bind", "100.64.77.2",
         "8080"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    report_file = w.tmp / "report.json"
    cli = _start(w, "--nat64", "--dns", "10.99.77.2", "--rate", "20Mbit", "--report",
                 str(report_file))  # fmt: skip
    try:
        # SLAAC from the gateway's router advertisements (a link flap sends a solicitation).
        w.in_dev("sysctl", "-qw", "net.ipv6.conf.eth0.accept_ra=2")
        w.in_dev("ip", "link", "set", "eth0", "down")
        w.in_dev("ip", "link", "set", "eth0", "up")
        deadline = time.monotonic() + 20
        addrs = ""
        while "inet6 fd4c:77:" not in addrs or "tentative" in addrs:
            addrs = w.in_dev("ip", "-6", "addr", "show", "dev", "eth0")
            assert time.monotonic() < deadline, "no SLAAC address from the gateway's RAs"
            time.sleep(0.2)
        assert "inet " not in w.in_dev("ip", "-4", "addr", "show", "dev", "eth0")
        # DNS64: the A record 100.64.77.2 as 64:ff9b::6440:4d02.
        aaaa = w.in_dev("busybox", "nslookup", "-type=aaaa", name)
        assert "64:ff9b::6440:4d02" in aaaa, aaaa
        curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"]
        by_name = w.in_dev(*curl, f"http://{name}:8080/")
        assert by_name == "200", by_name
        # An IPv4 literal fails: the device has no IPv4 (the App Review trap).
        literal = subprocess.run(
            ["ip", "netns", "exec", w.dev, *curl, "http://100.64.77.2:8080/"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert literal.returncode != 0 and literal.stdout == "000", literal
    finally:
        cli.send_signal(signal.SIGTERM)
        cli.wait(60)
        for proc in (dns, http):
            proc.terminate()
            proc.wait()
    log = (w.tmp / "gateway.log").read_text()
    assert cli.returncode == 128 + signal.SIGTERM, log
    assert "IPv6 only" in log and "NAT64 64:ff9b::/96" in log, log
    # The answer DNS64 gave, read from unbound's cache when the gateway stopped.
    dns64 = json.loads(report_file.read_text())["gateway"]["dns64"]
    assert {"name": name, "aaaa": ["64:ff9b::6440:4d02"]} in dns64, dns64
    _after(before)


def test_the_passive_check_judges_l4slab_prague_l4s_and_kernel_cubic_not(world: World) -> None:
    """``--check all``: the device's flows judged from the capture when it stops."""
    w = world
    before = _machine()
    report_file = w.tmp / "report.json"
    link = ["--rate", "10Mbit", "--delay", "5ms", "--qdisc", "dualpi2"]
    cli = _start(w, *link, "--report", str(report_file), "--check", "all", "--interval", "0",
                 "--web", "127.0.0.1:0", "-o", str(w.tmp / "bundle"))  # fmt: skip
    servers = [
        subprocess.Popen(
            ["ip", "netns", "exec", w.inet, *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        for cmd in (
            ["iperf3", "-s", "-B", "10.99.77.2"],
            [sys.executable, "-m", "l4slab", "serve", "--bind", "10.99.77.2", "-p", "5202"],
        )
    ]
    try:
        assert "lease 192.168.77." in w.dhcp()
        time.sleep(0.5)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in _env().items() if k == "PYTHONPATH")
        w.in_dev("sh", "-c", f"{env} {sys.executable} -m l4slab send 10.99.77.2:5202 --cc prague "
                 "-t 6 >/dev/null")  # fmt: skip
        w.in_dev("iperf3", "-c", "10.99.77.2", "-t", "6", "-C", "cubic")
        # The live page's data: the device, its ECT(1) (Prague) and Not-ECT (Cubic)
        # packets up, counted by the forwarder per address.
        url = re.search(r"live view at (http://\S+)", (w.tmp / "gateway.log").read_text())
        assert url, (w.tmp / "gateway.log").read_text()
        with urllib.request.urlopen(url.group(1) + "data.json", timeout=10) as page:
            live = json.loads(page.read())
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        cli.send_signal(signal.SIGTERM)
        cli.wait(120)
    log = (w.tmp / "gateway.log").read_text()
    assert cli.returncode == 128 + signal.SIGTERM, log
    verdicts = json.loads(report_file.read_text())["check"]
    by_port = {v["flow"].rsplit(":", 1)[1]: v for v in verdicts}
    assert set(by_port) == {"5202", "5201"}, verdicts
    prague, cubic = by_port["5202"], by_port["5201"]
    assert prague["verdict"] == "L4S", prague
    checks = {c["id"]: c for c in prague["checks"]}
    assert checks["ect1"]["verdict"] == "PASS" and checks["scalable"]["verdict"] == "PASS"
    # Near two marks per round trip (RFC 9331 §4.3), far from the classic law.
    assert 1.0 < checks["scalable"]["numbers"]["w_times_p"] < 4.0, checks["scalable"]
    assert checks["validation"]["verdict"] == "NOT OBSERVABLE"
    assert cubic["verdict"] == "NOT L4S" and "not L4S" in cubic["reason"], cubic
    host = next(h for h in live["samples"][-1]["hosts"] if h["address"].startswith("192.168.77."))
    assert host["up"]["ecn"]["ect1"] > 3000 and host["up"]["ecn"]["not_ect"] > 3000, host
    assert host["up"]["marked"] > 100, host
    assert "check: 192.168.77." in log and "(up): L4S" in log, log
    # The results bundle: the check, the queues, each device's series.
    from l4slab import Results

    bundle = Results.load(w.tmp / "bundle")
    assert bundle.summary["backend"] == "gateway" and len(bundle.summary["check"]) == 2
    assert bundle.summary["queues"]["bottleneck.up"]["kind"] == "dualpi2"
    device = host["address"]
    _, sent = bundle.series(f"device/{device}", "up.ecn_in.ect1")
    assert sent[-1] > 3000, sent
    _after(before)


def test_dual_stack_a_device_gets_ipv6_by_ra_and_reaches_an_ipv6_server_through_nat66(
    world: World,
) -> None:
    """A WAN with IPv6: the LAN gets router advertisements beside DHCPv4 (RFC 4862
    SLAAC), and the device's IPv6 crosses the bottleneck and NAT66 to the server."""
    w = world
    if not Path(gateway.FORCE_FORWARDING.format("lo")).exists():
        pytest.skip("the kernel lacks net.ipv6.conf.*.force_forwarding (Linux 6.17)")
    _sh("ip", "addr", "add", "fd99:77::1/64", "dev", w.wan, "nodad")
    _sh("ip", "-n", w.inet, "addr", "add", "fd99:77::2/64", "dev", "eth0", "nodad")
    before = _machine()
    dns = subprocess.Popen(
        ["ip", "netns", "exec", w.inet, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
         "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=10.99.77.2",
         "--address=/server.l4slab.test/10.99.77.2", "--address=/server.l4slab.test/fd99:77::2",
         "--pid-file=", "--user=root"],
    )  # fmt: skip
    server = subprocess.Popen(
        ["ip", "netns", "exec", w.inet, "iperf3", "-s"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cli = _start(w, "--rate", "10Mbit", "--delay", "5ms", "--dns", "10.99.77.2")
    try:
        assert "lease 192.168.77." in w.dhcp()
        # SLAAC from the gateway's router advertisement, once duplicate address
        # detection (RFC 4862 §5.4) has ended. The DHCP script flushes eth0's
        # addresses, IPv6 ones too (link-local and an address from an advertisement
        # that came first: the CI run failed on that race), so a link flap after the
        # lease gives the link-local address back and sends a solicitation.
        w.in_dev("ip", "link", "set", "eth0", "down")
        w.in_dev("ip", "link", "set", "eth0", "up")
        deadline = time.monotonic() + 20
        while "fd4c:77::" not in (a6 := w.in_dev("ip", "-6", "addr", "show", "dev", "eth0")) or (
            "tentative" in a6
        ):
            assert time.monotonic() < deadline, a6
            time.sleep(0.2)
        assert "fd99:77::2" in w.in_dev("busybox", "nslookup", "-type=aaaa", "server.l4slab.test")
        out = w.in_dev("iperf3", "-6", "-c", "server.l4slab.test", "-t", "3", "-J")
        rate = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
    finally:
        cli.send_signal(signal.SIGTERM)
        cli.wait(60)
        for proc in (dns, server):
            proc.terminate()
            proc.wait()
    log = (w.tmp / "gateway.log").read_text()
    assert cli.returncode == 128 + signal.SIGTERM, log
    assert "IPv6 fd4c:77::/64 (router advertisements, NAT66)" in log, log
    # Through the 10 Mbit/s bottleneck: IPv6 TCP payload is 1428 of every 1500 bytes.
    assert 8.5 < rate <= 10.0 * 1428 / 1500 * 1.02, (rate, log)
    _after(before)
