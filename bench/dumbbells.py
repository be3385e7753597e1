#!/usr/bin/env python3
"""The six dumbbells of issue 32: events per packet, wall time, instructions per packet.

    python3 bench/dumbbells.py                           # all six, 30 s each
    python3 bench/dumbbells.py --duration 5s --repeat 3  # shorter, best of 3
    python3 bench/dumbbells.py --callgrind               # + instructions (5 s runs)
    python3 bench/dumbbells.py bench/dumbbells/cubic1-fifo-100m.toml --callgrind
    python3 bench/dumbbells.py --callgrind --native /tmp/before.so  # another build

The scenarios are bench/dumbbells/*.toml: one Cubic flow over a FIFO, ten over
FQ-CoDel, Cubic + Prague over DualPI2, each at 100 Mbit/s and 1 Gbit/s (20 ms
RTT, 30 s). For each one prints the events the calendar ran, the packets the
endpoints created (data and ACKs), events per packet, the wall and CPU time of
the simulation (`_native.run`, best of --repeat) and events per CPU second.

With ``--callgrind`` each scenario also runs (for --callgrind-duration of
simulated time) in a fresh interpreter under ``valgrind --tool=callgrind``, and
once more in one that does everything but the call to ``_native.run``
(imports, reading the file); the difference of the two instruction counts is
the simulation's (parsing, setting up, the event loop, the summary), printed
per packet. Instruction counts do not depend on the machine's load, so they
compare builds on a busy machine; wall time does not. ``--native`` runs a copy
of another build's ``python/l4slab/_native.abi3.so`` instead of the installed
module (as bench/ab.py does). Record the figures in docs/PERFORMANCE.md with
the command.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
DEFAULT = sorted((HERE / "dumbbells").glob("*.toml"))


def load_native(so: Path | None) -> ModuleType:
    """The installed native module, or the build at `so` (bench/ab.py's loader)."""
    if so is None:
        from l4slab import _native

        return _native
    import ab  # bench/ is the script's folder, first on sys.path

    return ab.load(so, so.name)


def run_once(_native: ModuleType, path: Path, duration: str | None) -> dict[str, float]:
    """Run `path` once in this process: wall and CPU seconds, events, packets."""
    overrides = [f"duration={duration}"] if duration else []
    text = path.read_text()
    t0, c0 = time.perf_counter(), time.process_time()
    out = _native.run(text, str(path), overrides, None, None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    st = out["stats"]
    return {"wall": wall, "cpu": cpu, "events": st["events"], "packets": st["packets"]}


def collected(cmd: list[str]) -> int:
    """Instructions callgrind counted for the whole of `cmd`."""
    with tempfile.TemporaryDirectory() as tmp:
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out"]
        res = subprocess.run(vg + cmd, capture_output=True, text=True, check=False)
    m = re.search(r"Collected : (\d+)", res.stderr)
    if res.returncode != 0 or m is None:
        sys.exit(f"callgrind failed ({res.returncode}) on {cmd}:\n{res.stderr[-2000:]}")
    return int(m.group(1))


def instructions(path: Path, duration: str, so: Path | None) -> tuple[int, int]:
    """(instructions of `_native.run` on `path` for `duration`, its packets)."""
    me = [sys.executable, str(Path(__file__).resolve()), str(path), "--duration", duration]
    me += ["--native", str(so)] if so else []
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as f:
        full = collected([*me, "--_child", f.name])
        packets = int(f.read())
    base = collected([*me, "--_child", "-"])
    return full - base, packets


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("scenarios", nargs="*", type=Path, help="default: bench/dumbbells/*.toml")
    ap.add_argument("--duration", help="override each scenario's duration (e.g. 5s)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scenario; the fastest counts")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions per packet")
    ap.add_argument("--callgrind-duration", default="5s", help="simulated time under callgrind")
    ap.add_argument("--native", type=Path, help="a copy of another build's _native.abi3.so")
    # Internal: one run for `collected`, writing its packets to the file ("-": import only).
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    paths = args.scenarios or DEFAULT
    native = load_native(args.native)
    if args._child is not None:
        if args._child != "-":
            r = run_once(native, paths[0], args.duration)
            Path(args._child).write_text(str(r["packets"]))
        else:
            paths[0].read_text()  # the same imports and reading, no run
        return
    if args.repeat < 1:
        sys.exit("--repeat: at least 1")
    cols = f"{'scenario':28} {'events':>11} {'packets':>10} {'ev/pkt':>7} {'wall s':>7}"
    cols += f" {'cpu s':>7} {'Mev/cpu s':>10}"
    if args.callgrind:
        cols += f" {'instr/pkt':>10}"
    print(cols)
    for p in paths:
        runs = [run_once(native, p, args.duration) for _ in range(args.repeat)]
        r = min(runs, key=lambda x: x["wall"])
        line = f"{p.stem:28} {r['events']:>11,} {r['packets']:>10,}"
        line += f" {r['events'] / r['packets']:>7.3f} {r['wall']:>7.3f} {r['cpu']:>7.3f}"
        line += f" {r['events'] / r['cpu'] / 1e6:>10.2f}"
        if args.callgrind:
            ir, pkts = instructions(p, args.callgrind_duration, args.native)
            line += f" {ir / pkts:>10,.0f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
