#!/usr/bin/env python3
"""Start-up of the ``l4slab`` command: how long a process takes before (and instead of) work.

    python3 bench/startup.py                      # 20 runs of each command
    python3 bench/startup.py --runs 50 --instructions
    python3 bench/startup.py --l4slab '.venv/bin/python -m l4slab'
    python3 bench/startup.py --baseline 'env PYTHONPATH=/tmp/old/python .venv/bin/python -m l4slab'

Runs, round-robin so that a change in the machine's load touches every command alike:

* ``python -c pass`` (the interpreter alone, the floor of any Python command);
* ``l4slab --version`` and ``l4slab --help``;
* ``l4slab run scenarios/examples/reno-20mbit.toml --set duration=1s -q -o DIR`` (a
  1-second scenario, the whole process: start-up, simulation, writing the bundle).

and prints a Markdown table of each command's wall time (median, min, max over the
runs) and CPU time (user + system of the child, median): on a machine shared with other
jobs the wall time includes waiting for a core, the CPU time much less so.
``--instructions`` adds the instructions of one run of each under ``valgrind
--tool=callgrind``, which do not depend on the load at all (slow: about 10 s each).
``--baseline CMD`` times the l4slab commands of another l4slab too, in the same rounds
(e.g. an older checkout's ``python/`` first on ``PYTHONPATH``), so both see the same load.
``python`` is the interpreter that runs this script (``sys.executable``); ``l4slab`` is
the one beside it by default. The commands run as a user's do, with their bytecode
cached (``PYTHONDONTWRITEBYTECODE`` is removed from their environment, and each command
runs once before the timing): without the cache every start compiles l4slab's modules.
Record the figures in docs/PERFORMANCE.md with this command.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parent / "scenarios" / "examples" / "reno-20mbit.toml"
#: The children's environment: bytecode is written and read, as by default.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _default_l4slab() -> str:
    beside = Path(sys.executable).with_name("l4slab")
    return shlex.quote(str(beside)) if beside.exists() else "l4slab"


def commands(l4slab: str, out: Path, tag: str = "") -> dict[str, list[str]]:
    """The l4slab commands timed, by the label the table shows (``tag`` after it)."""
    cli = shlex.split(l4slab)
    run = [*cli, "run", str(SCENARIO), "--set", "duration=1s", "-q", "-o", str(out)]
    return {
        f"`l4slab --version`{tag}": [*cli, "--version"],
        f"`l4slab --help`{tag}": [*cli, "--help"],
        f"`l4slab run` of a 1 s scenario{tag}": run,
    }


def timed(cmd: list[str]) -> tuple[float, float]:
    """One run of ``cmd``: (wall, CPU) in ms; exits if the command fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{shlex.join(cmd)}: exit code {proc.returncode}\n{err.decode(errors='replace')}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3


def instructions(cmd: list[str]) -> int:
    """Instructions of one run of ``cmd`` under callgrind: its own process's ``I refs``
    (followed through ``exec``, e.g. of ``env``; not the processes it starts)."""
    proc = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            "--callgrind-out-file=/dev/null",
            *cmd,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    _, err = proc.communicate()
    found = re.search(rf"^=={proc.pid}== I\s+refs:\s+([\d,]+)", err, re.MULTILINE)
    if proc.returncode != 0 or found is None:
        sys.exit(f"no instruction count from valgrind for {shlex.join(cmd)}:\n{err}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    ap.add_argument("--l4slab", default=_default_l4slab(), help="command that runs l4slab")
    ap.add_argument("--baseline", metavar="CMD", help="another l4slab to time beside it")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count each command's instructions (one run under valgrind callgrind)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="l4slab-startup-") as tmp:
        out = Path(tmp) / "run"
        cmds = {"`python -c pass`": [sys.executable, "-c", "pass"], **commands(args.l4slab, out)}
        if args.baseline:
            cmds.update(commands(args.baseline, out, " (baseline)"))
        walls: dict[str, list[float]] = {label: [] for label in cmds}
        cpus: dict[str, list[float]] = {label: [] for label in cmds}
        for cmd in cmds.values():  # warm the page cache and write the bytecode
            shutil.rmtree(out, ignore_errors=True)
            timed(cmd)
        for _ in range(args.runs):
            for label, cmd in cmds.items():
                shutil.rmtree(out, ignore_errors=True)
                wall, cpu = timed(cmd)
                walls[label].append(wall)
                cpus[label].append(cpu)
        counts: dict[str, int] = {}
        if args.instructions:
            for label, cmd in cmds.items():
                shutil.rmtree(out, ignore_errors=True)
                counts[label] = instructions(cmd)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load}; {args.runs} runs each, round-robin\n"
    )
    head = "| command | wall median | min | max | CPU median |"
    rule = "|---|---|---|---|---|"
    if counts:
        head += " instructions |"
        rule += "---|"
    print(head)
    print(rule)
    for label in cmds:
        w = walls[label]
        row = (
            f"| {label} | {statistics.median(w):.0f} ms | {min(w):.0f} ms | {max(w):.0f} ms "
            f"| {statistics.median(cpus[label]):.0f} ms |"
        )
        if counts:
            row += f" {counts[label] / 1e6:,.0f} M |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
