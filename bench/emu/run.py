#!/usr/bin/env python3
"""Benchmark the emulator's forwarder (needs root; the emulator of the installed
native module, or $L4SLAB_EMU_BIN, e.g. a `cargo build --release -p l4slab-emu`).

    sudo python3 bench/emu/run.py                  # ceiling + 10/100/500 Mbit/s
    sudo python3 bench/emu/run.py --seconds 10 --repeat 3

Each case runs one kernel TCP flow (cubic, client -> server, the emulator's
`tcp_send` probe to its `tcp_sink`) through the emulator's shell and reads the
forwarder's JSON report:

* **ceiling**: a 10 Gbit/s, no-delay link (nothing limits but the forwarder):
  goodput and the forwarder's CPU use;
* **10 / 100 / 500 Mbit/s**, 10 ms one-way delay, a 1-BDP FIFO: goodput as a
  share of the link's payload rate (`rate x 1448 / 1500`, MSS 1448 with
  timestamps in 1500-byte packets) and the timing error (actual minus
  intended release time of every packet), p50 / p99 / p99.9 / max.

Goodput is the sender's `bytes_acked` rate between 1 s and the end (slow
start excluded). Record the figures in docs/PERFORMANCE.md with this command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shlex
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from l4slab import emu
from l4slab.emu_plan import SERVER_ADDR, Shell, TcpSend, TcpSink, Tuning, to_json

CASES: list[dict[str, Any]] = [
    {"name": "ceiling", "rate_mbit": 10_000, "delay": "0ms", "buffer": "1000pkt"},
    {"name": "10 Mbit/s", "rate_mbit": 10, "delay": "10ms", "buffer": "20pkt"},
    {"name": "100 Mbit/s", "rate_mbit": 100, "delay": "10ms", "buffer": "170pkt"},
    {"name": "500 Mbit/s", "rate_mbit": 500, "delay": "10ms", "buffer": "840pkt"},
]


def acked_rate(send: dict[str, Any], from_s: float) -> float:
    samples = [s for s in send["samples"] if s["t_s"] >= from_s]
    a, b = samples[0], samples[-1]
    dt = b["t_s"] - a["t_s"]
    return (b["info"]["bytes_acked"] - a["info"]["bytes_acked"]) * 8 / dt if dt > 0 else 0.0


def run_case(
    emulator: list[str],
    case: dict[str, Any],
    seconds: float,
    spin_us: int | None,
    min_sleep_us: int | None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        sets = emu.link_sets(
            rate=f"{case['rate_mbit']}Mbit", delay=case["delay"], buffer=case["buffer"]
        )
        send = TcpSend(addr=f"{SERVER_ADDR}:5001", cc="cubic", seconds=seconds, sample_ms=100)
        sink = TcpSink(port=5001)
        tuning = Tuning()
        if spin_us is not None:
            tuning = dataclasses.replace(tuning, spin_us=spin_us)
        if min_sleep_us is not None:
            tuning = dataclasses.replace(tuning, min_sleep_us=min_sleep_us)
        plan = Shell(
            command=(*emulator, to_json(send)),
            sets=tuple(sets),
            server_command=f"{shlex.join([*emulator, to_json(sink)])} > /dev/null",
            report=report,
            quiet=True,
            tuning=tuning,
        )
        proc = emu.run_emulator(plan, capture=True)
        if proc.returncode != 0:
            raise SystemExit(f"{case['name']}: l4slab-emu failed: {proc.stderr}")
        send = json.loads(proc.stdout)
        rep = json.loads(report.read_text())
    fwd = rep["forwarder"]
    up = fwd["directions"]["bottleneck.up"]
    goodput = acked_rate(send, 1.0)
    payload_rate = case["rate_mbit"] * 1e6 * 1448 / 1500
    return {
        "case": case["name"],
        "goodput_mbit": goodput / 1e6,
        "of_rate_pct": 100 * goodput / payload_rate if case["name"] != "ceiling" else None,
        "retrans": send["last"]["total_retrans"],
        "cpu_pct": 100 * fwd["cpu_share"],
        "timing": up["timing_error_us"],
        "gso_frames": up["gso_frames"],
        "packets": up["packets_out"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=6.0, help="flow length per case")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the median is shown)")
    ap.add_argument("--spin-us", type=int, default=None, help="forwarder busy-wait window")
    ap.add_argument(
        "--min-sleep-us", type=int, default=None, help="forwarder shortest sleep (default 25)"
    )
    ap.add_argument("--json", action="store_true", help="print the raw rows as JSON")
    args = ap.parse_args()
    emulator = emu.emulator_command()
    rows = []
    for case in CASES:
        runs = [
            run_case(emulator, case, args.seconds, args.spin_us, args.min_sleep_us)
            for _ in range(args.repeat)
        ]
        runs.sort(key=lambda r: r["goodput_mbit"])
        rows.append(runs[len(runs) // 2])
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"l4slab-emu forwarder ({shlex.join(emulator)}, {platform.node()})")
    for col in (
        "case",
        "goodput Mbit/s",
        "% of rate",
        "retrans",
        "fwd CPU %",
        "err p50 µs",
        "err p99 µs",
        "err p99.9 µs",
        "err max µs",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        t = r["timing"] or {}
        table.add_row(
            r["case"],
            f"{r['goodput_mbit']:.1f}",
            "—" if r["of_rate_pct"] is None else f"{r['of_rate_pct']:.1f}",
            str(r["retrans"]),
            f"{r['cpu_pct']:.0f}",
            f"{t.get('p50', 0):.0f}",
            f"{t.get('p99', 0):.0f}",
            f"{t.get('p999', 0):.0f}",
            f"{t.get('max', 0):.0f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
