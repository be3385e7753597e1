#!/usr/bin/env python3
"""Peak memory of ``l4slab report`` on a long packet trace.

    python3 bench/report_memory.py                      # 600 s, 100 Mbit/s Reno, traced
    python3 bench/report_memory.py --duration 120s      # shorter
    python3 bench/report_memory.py --bundle DIR         # an existing traced bundle

Without ``--bundle`` it first writes the bundle with ``l4slab run
bench/scenarios/reno-100mbit.toml --set duration=600s --set packet_trace=true``
into a temporary directory (or ``--keep DIR``). Then it runs ``l4slab report`` on
it in a child process and prints the trace's size, the report's peak resident
memory (``ru_maxrss`` of that child) and its wall time. Each command is measured in
a process of its own, so one does not inherit the other's peak. Record the figures
in docs/PERFORMANCE.md ("Report of a long packet trace") with this command.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenarios" / "reno-100mbit.toml"

# Runs a command and prints its peak RSS (kB) and wall time as JSON: measured in a
# process that has no other child, so RUSAGE_CHILDREN is that command's alone.
_MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "peak_kb": peak, "wall_s": wall}))
"""


def measure(command: list[str]) -> dict[str, float]:
    """Peak RSS (MB) and wall time (s) of ``command``; fails if it fails."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.splitlines()[-1])
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit code {result['rc']}")
    return {"peak_mb": result["peak_kb"] / 1024, "wall_s": result["wall_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--duration", default="600s", help="simulated duration (default: 600s)")
    ap.add_argument("--bundle", type=Path, help="report this traced bundle instead of a new one")
    ap.add_argument("--keep", type=Path, help="write the new bundle here and keep it")
    args = ap.parse_args()
    l4slab = [sys.executable, "-m", "l4slab"]

    tmp = None
    if args.bundle is not None:
        bundle = args.bundle
    else:
        if args.keep is not None:
            bundle = args.keep
        else:
            tmp = Path(tempfile.mkdtemp(prefix="l4slab-report-memory-"))
            bundle = tmp / "bundle"
        run = [
            *l4slab,
            "run",
            str(SCENARIO),
            "-o",
            str(bundle),
            "-q",
            "--set",
            f"duration={args.duration}",
            "--set",
            "packet_trace=true",
        ]
        print("$", " ".join(run[2:]), flush=True)
        made = measure(run)
        print(f"  run:    peak RSS {made['peak_mb']:,.0f} MB, wall {made['wall_s']:.1f} s")
    try:
        trace = bundle / "packets.parquet"
        if not trace.is_file():
            raise SystemExit(f"{bundle} has no packets.parquet (run with packet_trace = true)")
        meta = pq.ParquetFile(trace).metadata
        print(
            f"  trace:  {meta.num_rows:,} rows in {meta.num_row_groups} row groups, "
            f"{trace.stat().st_size / 1e6:,.0f} MB on disk"
        )
        report = [*l4slab, "report", str(bundle)]
        print("$ l4slab report", bundle, flush=True)
        reported = measure(report)
        print(f"  report: peak RSS {reported['peak_mb']:,.0f} MB, wall {reported['wall_s']:.1f} s")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
