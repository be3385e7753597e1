#!/usr/bin/env python3
"""Benchmark `l4slab gateway`'s forwarding (needs root, dnsmasq, nft, iperf3, busybox).

    sudo python3 bench/gateway.py                      # 100 Mbit/s and 1 Gbit/s
    sudo python3 bench/gateway.py --rate 100Mbit --seconds 10 --repeat 3

A "device" namespace on one veth pair (the LAN cable) and an "internet" namespace
on another (the WAN cable) stand for the phone and the server, as in
tests/test_gateway.py. The gateway runs at normal priority (as a user runs it; its
forwarder keeps its SCHED_FIFO unless --no-realtime), the device takes a DHCP
lease, then `iperf3 -c` from the device to the internet namespace for --seconds,
upload and download (-R). Per case: iperf3's received rate as a share of the
link's TCP payload rate (rate x 1448/1500), the forwarder's CPU, and its timing
error (actual minus intended release of every packet) p50/p99/max, from the
gateway's --report. Whatever else runs on the machine runs: say so with the
figures (docs/PERFORMANCE.md, "The gateway").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

TAG = f"l4gb{os.getpid() % 100000}"
LAN, WAN, DEV, INET = f"{TAG}l", f"{TAG}w", f"{TAG}-dev", f"{TAG}-inet"
SERVER = "10.99.78.2"

_UDHCPC = """#!/bin/sh
case "$1" in bound|renew)
  ip addr flush dev "$interface"; ip addr add "$ip/$mask" dev "$interface"
  ip route replace default via "$router" dev "$interface" ;;
esac
"""


def sh(*args: str, check: bool = True) -> str:
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def world_up() -> None:
    for ns in (DEV, INET):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    for host, ns in ((LAN, DEV), (WAN, INET)):
        sh("ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", host, "up")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
    sh("ip", "addr", "add", "10.99.78.1/24", "dev", WAN)
    sh("ip", "-n", INET, "addr", "add", f"{SERVER}/24", "dev", "eth0")


def world_down() -> None:
    for link in (LAN, WAN):
        sh("ip", "link", "del", link, check=False)
    for ns in (DEV, INET):
        sh("ip", "netns", "del", ns, check=False)


def run_case(rate: str, seconds: float, tmp: Path) -> dict[str, Any]:
    report = tmp / "gateway.json"
    log = (tmp / "gateway.log").open("w")
    gw = subprocess.Popen(
        [sys.executable, "-m", "l4slab", "gateway", "--lan", LAN, "--wan", WAN, "--rate", rate,
         "--delay", "10ms", "--interval", "0", "--report", str(report)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "(NAT, nftables table" not in (tmp / "gateway.log").read_text():
            if gw.poll() is not None or time.monotonic() > deadline:
                raise SystemExit((tmp / "gateway.log").read_text())
            time.sleep(0.1)
        script = tmp / "udhcpc.sh"
        script.write_text(_UDHCPC)
        script.chmod(0o755)
        sh("ip", "netns", "exec", DEV, "busybox", "udhcpc", "-i", "eth0", "-n", "-q", "-f",
           "-t", "10", "-T", "1", "-s", str(script))  # fmt: skip
        server = subprocess.Popen(
            ["ip", "netns", "exec", INET, "iperf3", "-s", "-B", SERVER],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        rates = {}
        try:
            time.sleep(0.5)
            for name, extra in (("up", []), ("down", ["-R"])):
                out = sh("ip", "netns", "exec", DEV, "iperf3", "-c", SERVER, "-t", f"{seconds:g}",
                         "-O", "1", "-J", *extra)  # fmt: skip
                result = json.loads(out)
                if "sum_received" not in result.get("end", {}):
                    raise SystemExit(f"iperf3 {name}: {result.get('error', out[-400:])}")
                rates[name] = result["end"]["sum_received"]["bits_per_second"]
        finally:
            server.terminate()
            server.wait()
    finally:
        gw.send_signal(signal.SIGTERM)
        gw.wait(60)
    emulator = json.loads(report.read_text())["emulator"]
    fwd = emulator["forwarder"]
    return {"rates": rates, "forwarder": fwd}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--rate", action="append", help="link rate (repeatable; default 100Mbit, 1Gbit)"
    )
    ap.add_argument("--seconds", type=float, default=8.0, help="each iperf3 run (default 8)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (namespaces, the gateway)")
    missing = [t for t in ("dnsmasq", "nft", "iperf3", "busybox") if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"needs {', '.join(missing)}")
    table = Table(title=f"l4slab gateway forwarding, load average {os.getloadavg()[0]:.1f}")
    for col in ("rate", "run", "up % of payload rate", "down %", "fwd CPU %", "err p50 µs",
                "err p99 µs", "err max µs"):  # fmt: skip
        table.add_column(col)
    world_up()
    try:
        for rate in args.rate or ["100Mbit", "1Gbit"]:
            bps = float(rate.lower().replace("gbit", "e9").replace("mbit", "e6"))
            payload = bps * 1448 / 1500
            for i in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="l4slab-bench-gw-") as tmp:
                    r = run_case(rate, args.seconds, Path(tmp))
                f = r["forwarder"]
                err = f["timing_error_us"]
                table.add_row(
                    rate, str(i + 1),
                    f"{r['rates']['up'] / payload * 100:.1f}",
                    f"{r['rates']['down'] / payload * 100:.1f}",
                    f"{f['cpu_share'] * 100:.0f}",
                    f"{err['p50']:.0f}", f"{err['p99']:.0f}", f"{err['max']:.0f}",
                )  # fmt: skip
    finally:
        world_down()
    Console().print(table)


if __name__ == "__main__":
    main()
